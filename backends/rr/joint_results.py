"""A joint (or marginal) estimate of the randomized-response back end as a result: the
table, its standard errors and intervals, the projection and the estimator's notes
(:func:`joint_result`), shared by the unweighted estimates and the weighted ones
(:mod:`privspec.backends.rr.weighted`)."""
from __future__ import annotations

import functools

import numpy as np

from privspec.results.kinds import Estimate
from privspec.results.result import Result
from privspec.results.values import Inference, Table, Vector
from privspec.backends.core.projections import WALD_CI, wald_interval
from privspec.backends.rr.fit import JointFit
from privspec.backends.rr.problem import JointProblem


def joint_result(problem: JointProblem, fit: JointFit) -> Result:
    """A joint estimate as the JSON contract has it: a table, ``se`` of the same shape,
    ``method``, ``n``, and which projection was applied."""
    single = len(problem.variables) == 1
    extras: dict = {"method": problem.q.method.name, "n": fit.n}
    inference = None
    if fit.var is not None:
        se = np.sqrt(np.maximum(fit.var, 0.0))
        extras["se"] = value_of(problem, se)
        extras["se_kind"] = fit.se_kind or "population"
        if fit.se_target and fit.se_target != "joint":
            extras["se_target"] = fit.se_target
        intervals = fit.intervals or functools.partial(_wald, fit.table, se)
        lo, hi = fit.ci if fit.ci is not None else intervals(0.95)
        if single:
            extras["ci95"] = {lab: [float(a), float(b)] for lab, a, b in
                              zip(problem.labels[0], lo.reshape(-1), hi.reshape(-1))}
        else:
            extras["ci95"] = {"lower": value_of(problem, lo), "upper": value_of(problem, hi)}
        extras["ci_method"] = fit.ci_method or WALD_CI
        inference = Inference(extras["ci_method"], lambda level: tuple(np.ravel(x) for x in intervals(level)),
                              fit.cov, "" if fit.cov is not None else "no covariance of the cells for this estimator")
    extras["projection"] = fit.projection
    extras["negative_cells"] = fit.negative_cells
    if fit.projection != "none" and fit.var is None and fit.negative_cells:
        extras["se_note"] = "no se: the projection moved the estimate off the linear estimator"
    elif fit.var is None and fit.method == "truncated":
        extras["se_note"] = "no se: truncation (a minimum of estimates) is not smooth where it binds"
    extras["sum"] = float(np.sum(fit.table))
    for k, v in fit.info.items():
        if k != "cluster_axes":          # the clusters by name are there already
            extras[k] = v
    if fit.note:
        extras["note"] = fit.note
    if inference is None:
        inference = Inference(None, None, None, extras.get("se_note", "no standard errors for this estimator"))
    return Estimate(value_of(problem, fit.table), **extras, inference=inference)


def _wald(table: np.ndarray, se: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~privspec.backends.core.projections.wald_interval` of every cell (a probability)."""
    ci = wald_interval(np.ravel(table), np.ravel(se), level)
    return ci[:, 0].reshape(np.shape(table)), ci[:, 1].reshape(np.shape(table))


def value_of(problem: JointProblem, data: np.ndarray) -> Vector | Table:
    """An array of the estimand's cells as the result shows it: a Vector for a marginal, a
    Table for a joint."""
    if len(problem.variables) == 1 and problem.q.estimand.kind == "distribution":
        return Vector(problem.labels[0], tuple(np.asarray(data).reshape(-1)))
    return Table(problem.names, problem.labels, np.asarray(data).reshape(problem.shape))
