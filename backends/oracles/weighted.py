"""Frequency estimates of the local-DP frequency oracles from weighted, stratified, clustered
reports (a survey design bound with the data: :mod:`privspec.backends.data.survey`).

Every oracle's unbiased estimate (``by mom``) is affine in the share of reports whose support
holds each category: ``f_v = (C_v / n - q*) / (p* - q*)``.  Its weighted (Hajek) version
puts the weighted share ``lambda_v = sum_i w_i s_i(v) / sum_i w_i`` in its place: the same
estimator of the oracle, run on the sums of weights per distinct (report, stratum, PSU)
instead of the counts (one group-by of the engine, then numpy; no loop over respondents).
The multi-attribute protocols (``spl``, ``smp``, ``rsfd``) share this path with their
attribute's effective ``p*, q*``; ``smp``'s attribute is a domain (the rows that sampled it:
the others weigh 0 in the ratio, and still count as PSUs in its variance).

A ratio of weighted totals is linearized as ``survey``'s ``svyratio``: the influence value of
a row is ``(s_i(v) - lambda_v) / ((p* - q*) sum_i w_i)``, totalled per PSU with the row's
weight, and the stratified with-replacement variance is
:func:`privspec.backends.core.survey_design.linearized_covariance`'s, the one every other
weighted estimate uses.  The design effect is that variance over the unweighted estimator's
(its covariance at the estimate brought onto the simplex, over the n rows).

The memory is that of one float per distinct (report, design cell) tuple and category: the
support indicators of local hashing or unary encoding on many categories (nearly every
report distinct) take ``8 d`` bytes per row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from privspec.errors import DataError, Diagnostic
from privspec.model.graph import Query
from privspec.results.kinds import Estimate
from privspec.results.result import Result
from privspec.backends.core.projections import WALD_CI, wald_interval
from privspec.backends.core.projections import project as project_onto
from privspec.backends.core.survey_design import DesignCells, linearized_covariance
from privspec.backends.data.survey import SurveyDesign, design_cells, design_tally, refuse_conditional_se
from privspec.backends.data.tally import Tally
from privspec.backends.finite.estimates import wald_inference
from privspec.backends.finite.truth import as_vector
from privspec.backends.oracles.protocol import OneAttributeOracle
from privspec.backends.oracles.reports import require_column, tally_reports

#: the oracles' estimators with a weighted version
WEIGHTED_METHODS = ("mom",)


def weighted_supports(q: Query) -> str:
    """Why ``q`` has no weighted version ("" for an estimate by ``mom``: every frequency
    oracle's unbiased estimate, projected or not)."""
    if q.kind != "estimate":
        return f"{q.kind} queries of frequency oracles"
    if q.method is None or q.method.name not in WEIGHTED_METHODS:
        return (f"the estimator '{q.method.name if q.method else '?'}' of a frequency oracle "
                f"(weighted: {', '.join(WEIGHTED_METHODS)}, the unbiased estimate)")
    return ""


@dataclass(frozen=True)
class DesignFit:
    """A weighted unbiased frequency estimate (:func:`hajek_frequencies`).

    ``raw``: the estimate before any projection; ``V``: its design-based covariance;
    ``srs``: the unweighted estimator's covariance from the same rows (at ``raw`` brought
    onto the simplex); ``n``: rows; ``reports``: rows that report the attribute (smp: those
    that sampled it); ``total``: their sum of weights (``cells.total_weight``: every row's).
    """

    raw: np.ndarray
    V: np.ndarray
    srs: np.ndarray
    cells: DesignCells
    n: int
    reports: int
    total: float


def hajek_frequencies(members: np.ndarray, tally: Tally, design: SurveyDesign, probs: tuple[float, float],
                      estimate: Callable[[np.ndarray, float], np.ndarray],
                      covariance: Callable[[np.ndarray, int, int], np.ndarray],
                      domain: np.ndarray | None = None) -> DesignFit:
    """The Hajek unbiased estimate from the support indicators ``members`` of the distinct
    tuples of ``tally`` in ``domain`` (bool over the tuples, default all; ``members`` has a
    row per tuple of the domain), with its design-based covariance (the module docstring).

    ``probs``: ``(p*, q*)``; ``estimate(C, n)``: the oracle's unbiased estimate from support
    counts; ``covariance(f, n, reports)``: n times the unweighted estimator's covariance
    from ``n`` rows of which ``reports`` report the attribute.
    """
    cells = design_cells(tally, design, np.arange(len(tally.counts)))
    mine = np.ones(len(tally.counts), dtype=bool) if domain is None else domain
    weight = cells.weighted_counts(len(tally.counts))[mine]       # the sum of weights of each tuple
    total = float(weight.sum())
    if not total > 0:
        raise DataError(Diagnostic("D103", "the reports weigh 0 in all: nothing to estimate from",
                                   columns=(design.weights,), hint="a survey weight is a number >= 0, "
                                                                   "some of the reporting rows' positive"))
    C = weight @ members                                           # the weighted support counts
    raw = estimate(C, total)
    p, q = probs
    psi = np.zeros((members.shape[1], len(tally.counts)))
    psi[:, mine] = (members - C / total).T / ((p - q) * total)
    V = linearized_covariance(psi, cells)
    n = tally.n
    reports = int(tally.counts[mine].sum())
    srs = covariance(project_onto(raw, "clip"), n, reports) / n
    return DesignFit(raw, V, srs, cells, n, reports, total)


def oracle_design_fit(q: Query, o: OneAttributeOracle, engine: Any, design: SurveyDesign) -> DesignFit:
    """The weighted unbiased estimate of ``q`` (one attribute, one round or longitudinal)
    from the table ``engine`` counts, its design columns beside the reports."""
    refuse_conditional_se(str(q.method.options.get("se", "population")))
    mech = q.mechanism
    column = mech.variable.name
    require_column(column, engine)
    tally = design_tally(engine, design, [column])
    members = o.report_oracle().membership(tally_reports(tally, column, mech.protocol, o))
    return hajek_frequencies(members, tally, design, o.support_probs(), o.unbiased,
                             lambda f, n, _: o.covariance(f, 1.0))


def design_result(q: Query, fit: DesignFit, shape: Callable[[np.ndarray], Any], labels: tuple[str, ...],
                  design: SurveyDesign, facts: dict, **more: Any) -> Result:
    """The weighted estimate (``shape`` makes the value of its frequencies) with its
    design-based standard errors, Wald intervals and design effects."""
    project = str(q.method.options.get("project", "none"))
    w = project_onto(fit.raw, project)
    se = np.sqrt(np.maximum(np.diag(fit.V), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.diag(fit.V) / np.diag(fit.srs)
    cells = fit.cells
    first = np.unique(cells.psu, return_index=True)[1]
    notes = ["Hajek (weighted) unbiased estimate; design-based standard errors by linearization, the stratified "
             "with-replacement variance over PSUs; deff: design variance over the unweighted estimator's at the "
             "same n"]
    if project != "none" and np.any(fit.raw < 0):
        notes.append("the projection moved the estimate: its standard errors are the linear estimator's "
                     "(conservative near the boundary)")
    extras: dict = {
        "method": q.method.name, "n": fit.n, **facts, "projection": project, **more,
        "se": as_vector(se, labels), "se_kind": "design-based (Taylor linearization)",
        "ci95": {lab: [float(a), float(b)] for lab, (a, b) in zip(labels, wald_interval(w, se))},
        "ci_method": f"{WALD_CI} on the design-based standard error",
        "deff": as_vector(deff, labels), "design": design.describe(), "weighted_n": cells.total_weight,
        "strata": int(cells.stratum.max()) + 1, "psus": int(cells.repeats[first].sum()),
        "note": "; ".join(notes),
    }
    return Estimate(shape(w), **extras, inference=wald_inference(w, se, lambda: fit.V))


__all__ = ["WEIGHTED_METHODS", "weighted_supports", "DesignFit", "hajek_frequencies",
           "oracle_design_fit", "design_result"]
