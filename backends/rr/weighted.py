"""Survey weights for the randomized-response back end's joint estimators: castell
(``mom`` on a product), RR-Independent, RR-Clusters, hybrid, truncated castell, RR-Joint
on a combined domain, the MLE (of any subset of a product's factors, or summed on a
combined domain), and projected estimates (``project = ...``).

Each estimator is a function of the report frequencies ``lambda_hat`` alone, so its
weighted (Hajek) version is the same estimator on the weighted report shares
``lambda_hat_o = sum_{i: o_i = o} w_i / N_hat`` (``N_hat = sum_i w_i``), given to it as
counts at the rows' n: the estimate, its projection, hybrid's choice and RR-Clusters'
clusters are the unweighted code's on those counts.

Standard errors are design-based, by Taylor linearization
(:mod:`privspec.backends.core.survey_design`): an estimator ``Pi_hat = f(lambda_hat)``
with Jacobian ``U = df/dlambda`` (cells x reports) has, per unit of weight, the influence
value ``psi(o) = U (e_o - lambda_hat) / N_hat`` of a row reporting ``o``; these are
totalled per PSU and give the stratified with-replacement covariance.  ``U`` is
``(x)_k K_k^-1`` for castell, ``S K^-1`` for RR-Joint summed to the estimand (``S`` the
0/1 sums), and for a product of blocks (RR-Independent's singletons, RR-Clusters' clusters)
``U[x, y] = sum_g c_g(x) A_g[x_g, y_g]``
(:func:`~privspec.backends.rr.independent.block_jacobian`); the MLE's influence is its
score's, ``B J^-1 s(o) / N_hat``
(:func:`~privspec.backends.core.survey_design.mle_influence`).  hybrid linearizes the
estimator it chose (the choice taken as fixed, as its unweighted standard error does).
The design effect is the design variance over the unweighted estimator's variance from
the same n rows, ``U (diag(lambda) - lambda lambda^T) U^T / n`` at the weighted shares.

With replicate weights each replicate re-runs the estimator on its own sums of weights
per report (hybrid and RR-Clusters choose again on each), and the covariance is the
replicates' (:func:`~privspec.backends.core.survey_design.replicate_covariance` through
the design's :class:`~privspec.backends.data.replicates.Replicates`).

Where the unweighted estimate has no standard error, neither has the weighted one, for
the same reason (``se_note``): truncated castell (a minimum of estimates is not smooth
where it binds) and a projection that moved the estimate.  Intervals are Wald intervals
on the design-based standard error, clipped to [0, 1] (castell's score intervals assume
multinomial reports).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from privspec.errors import BackendError, Diagnostic
from privspec.limits import COV_CELL_LIMIT
from privspec.model.graph import Query
from privspec.results.result import Result
from privspec.backends.core.kron import kron_inverses
from privspec.backends.core.projections import WALD_CI
from privspec.backends.core.channel import B_matrix, product_channel
from privspec.backends.core.compile import channel_of
from privspec.backends.core.estimators import em
from privspec.backends.core.survey_design import linearized_covariance, mle_influence
from privspec.backends.data.survey import SurveyDesign, check_design_columns, design_sums, refuse_conditional_se
from privspec.backends.finite.data import observation_codes, report_columns, tally_of
from privspec.backends.finite.weighted import weighted_supports
from privspec.backends.rr.fit import JointFit, check_cells, kron_matrix, linear_covariance
from privspec.backends.rr.independent import block_jacobian
from privspec.backends.rr.joint_results import joint_result, value_of
from privspec.backends.rr.problem import JointProblem, grr_keep, numeric_K, numeric_channel, report_codes
from privspec.backends.rr import weighted_large

#: the back end's estimators of a joint (or a marginal) with a weighted version here: every
#: one a joint takes
RR_WEIGHTED = ("castell", "mom", "independent", "clusters", "hybrid", "truncated", "joint", "mle", "em")
#: a Jacobian (cells x reports) past this many entries is not formed: castell on a product
#: then takes the per-cell path of :mod:`~privspec.backends.rr.weighted_large`, the others
#: are refused (B040)
JACOBIAN_LIMIT = COV_CELL_LIMIT ** 2
#: the estimators of a product with that per-cell path
LARGE_PATH = ("castell", "mom")


def is_rr_weighted(q: Query) -> bool:
    """Whether ``q``'s weighted version is this module's (else the channel core's,
    :mod:`privspec.backends.finite.weighted`): every estimator of a joint the back end
    answers, and ``mom`` projected (the castell inversion of a marginal)."""
    return q.method is not None and q.method.name in RR_WEIGHTED


def rr_weighted_supports(q: Query) -> str:
    """What of ``q`` has no weighted version in the randomized-response back end ("" when
    it has one): its estimators of a joint and projected marginals (this module; B040 only
    where the covariance would be too large), else what the channel core says
    (:func:`~privspec.backends.finite.weighted.weighted_supports`)."""
    if q.kind != "estimate" or q.estimand is None or q.estimand.kind not in ("distribution", "joint") \
            or q.method is None:
        return weighted_supports(q)
    name = q.method.name
    if is_rr_weighted(q):
        if name in ("truncated", "mle", "em"):       # no covariance; the MLE's own limit (B403)
            return ""
        cells = math.prod(len(v.labels) for v in q.estimand.variables)
        reports = cells if hasattr(q.mechanism, "factors") else int(q.mechanism.variable.p)
        if cells * reports > JACOBIAN_LIMIT and not (name in LARGE_PATH and hasattr(q.mechanism, "factors")):
            return (f"a joint of {cells:,} cells from {reports:,} reports by {name} (its design-based covariance "
                    f"is formed up to {COV_CELL_LIMIT:,} cells; past it only castell/mom on a product has "
                    "per-cell design-based standard errors)")
        return ""
    return weighted_supports(q)


def weighted_joint(model: Any, q: Query, engine: Any, design: SurveyDesign) -> Result:
    """The Hajek version of ``q``'s joint estimator on the table ``engine`` counts, with
    design-based standard errors, Wald intervals and design effects (the module
    docstring)."""
    refuse_conditional_se(str(q.method.options.get("se", "population")))
    problem = JointProblem(model, q)
    mech = q.mechanism
    header = engine.columns()
    columns = check_design_columns(design, header, engine.source, report_columns(mech, header))
    tally = tally_of(mech, engine, extra=columns)
    reports, n_obs = _reports(problem, tally)
    n = tally.n
    cells, sums, weighted, layout = design_sums(tally, design, reports, n_obs)
    total = cells.total_weight if cells is not None else float(weighted.sum())
    shares = weighted / total
    fit = problem.fit(_as_counts(problem, shares * n))        # Hajek: the shares, at the rows' n
    info = {"design": design.describe(), "weighted_n": total, **layout}
    variance = ("design-based standard errors by linearization through each report's influence, the stratified "
                "with-replacement variance over PSUs" if design.replicates is None else
                f"design-based standard errors from {layout.get('replicates')} {design.replicates.type} replicate "
                "weights, the estimator re-run on each")
    if fit.var is None:                                         # truncated, or a projection that bound
        note = "; ".join(x for x in ("Hajek (weighted) estimate", fit.note) if x)
        return joint_result(problem, dataclasses.replace(fit, info={**fit.info, **info}, note=note))
    if problem.product and fit.method in LARGE_PATH and fit.table.size * n_obs > JACOBIAN_LIMIT:
        return _large_castell(problem, fit, design, cells, sums, shares, total, n, info, variance)
    if fit.method == "mle":
        psi, srs = _mle_influence(problem, shares, total, n)
    else:
        U = _jacobian(problem, fit, shares)
        psi, srs = (U - (U @ shares)[:, None]) / total, linear_covariance(U, shares, n, "population")
    if design.replicates is None:
        V = linearized_covariance(psi, cells)
    else:
        thetas = np.array([problem.fit(_as_counts(problem, sums[:, r] / sums[:, r].sum() * n), projection="none")
                           .table.reshape(-1) for r in range(1, sums.shape[1])])
        V = design.replicates.covariance(fit.table.reshape(-1), thetas)
    var, base = np.diag(V), np.diag(srs)
    deff = np.divide(var, base, out=np.full(var.shape, np.nan), where=base > 0)
    chosen = ("; hybrid's choice made on the weighted counts by its unweighted rule"
              if fit.method == "hybrid" else "")
    note = "; ".join(x for x in (
        f"Hajek (weighted) estimate; {variance}; deff: design variance over simple random sampling's at the "
        f"same n{chosen}", fit.note) if x)
    designed = dataclasses.replace(
        fit, var=var.reshape(fit.table.shape), se_kind=design.se_kind, ci=None, intervals=None,
        ci_method=f"{WALD_CI} on the design-based standard error", cov=lambda: V, note=note,
        info={**fit.info, **info, "deff": value_of(problem, deff)})
    return joint_result(problem, designed)


def _large_castell(problem: JointProblem, fit: JointFit, design: SurveyDesign, cells: Any, sums: np.ndarray | None,
                   shares: np.ndarray, total: float, n: int, info: dict[str, Any], variance: str) -> Result:
    """castell's weighted result past :data:`JACOBIAN_LIMIT`: per-cell design-based variances
    with ``U`` never formed (:mod:`~privspec.backends.rr.weighted_large`), deff, Wald
    intervals, and no covariance (as the unweighted castell's past the limit).  ``cells``
    and ``sums`` as :func:`~privspec.backends.data.survey.design_sums` gives them."""
    inv = kron_inverses(problem.K())
    theta = fit.table.reshape(-1)
    if design.replicates is None:
        var = weighted_large.linearized_variance(inv, cells, shares, total)
    else:
        scale, rscales = design.replicates.factors(sums.shape[1] - 1)
        var = weighted_large.replicate_variance(inv, theta, sums, scale * rscales)
    base = weighted_large.srs_variance(inv, shares, n)
    deff = np.divide(var, base, out=np.full(var.shape, np.nan), where=base > 0)
    note = "; ".join(x for x in (
        f"Hajek (weighted) estimate; {variance}; per-cell variances only, the Jacobian never formed; deff: design "
        "variance over simple random sampling's at the same n", fit.note) if x)
    designed = dataclasses.replace(
        fit, var=var.reshape(fit.table.shape), se_kind=design.se_kind, ci=None, intervals=None,
        ci_method=f"{WALD_CI} on the design-based standard error", cov=functools.partial(check_cells, theta.size),
        note=note, info={**fit.info, **info, "deff": value_of(problem, deff)})
    return joint_result(problem, designed)


def _reports(problem: JointProblem, tally: Any) -> tuple[np.ndarray, int]:
    """Each distinct tuple's report index (the estimand's factors' joint report, row-major,
    or the combined domain's report) and the number of reports."""
    if problem.product:
        codes = [report_codes(f, tally) for f in problem.factors]
        joint = np.ravel_multi_index(tuple(codes), problem.shape) if len(codes) > 1 else codes[0]
        return np.asarray(joint, dtype=np.int64), problem.cells
    ch, codes = observation_codes(problem.q.mechanism, tally)
    return np.asarray(codes, dtype=np.int64), int(ch.n_obs)


def _as_counts(problem: JointProblem, counts: np.ndarray) -> np.ndarray:
    """The counts as the problem's fit reads them: a tensor for a product, a vector else."""
    return counts.reshape(problem.shape) if problem.product else counts


def _jacobian(problem: JointProblem, fit: JointFit, shares: np.ndarray) -> np.ndarray:
    """``U = dPi_hat/dlambda`` (the estimand's cells x reports, C order) of the fitted
    estimator at the weighted shares: castell's ``(x) K_k^-1``, the block product's
    (RR-Independent, RR-Clusters, hybrid's choice), RR-Joint's ``S K^-1``."""
    if not problem.product:
        mech = problem.q.mechanism
        keep = grr_keep(problem.model, mech)
        if keep is not None:
            p, q = keep
            inv = (np.eye(len(shares)) - q) / (p - q)          # K^-1 = (I - q J)/(p - q)
        else:
            inv = np.linalg.inv(numeric_K(problem.model, mech))
        if fit.table.size == len(shares) and problem.parts == [0]:
            return inv
        return problem.part_sum_matrix().astype(float) @ inv
    inv = kron_inverses(problem.K())
    method = fit.info.get("chosen", fit.method) if fit.method == "hybrid" else fit.method
    lam = shares.reshape(problem.shape)
    if method == "independent":
        return block_jacobian(lam, inv, [[k] for k in range(lam.ndim)])
    if method == "clusters":
        return block_jacobian(lam, inv, fit.info["cluster_axes"])
    if method in ("castell", "mom"):
        return kron_matrix(inv)
    raise BackendError(Diagnostic("B040", f"survey weights are not supported for the joint estimator {method!r}"))


def _mle_influence(problem: JointProblem, shares: np.ndarray, total: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The weighted pseudo-MLE's influence values per unit of weight (the estimand's cells x
    reports: ``B J^-1 s(o) / N_hat``,
    :func:`~privspec.backends.core.survey_design.mle_influence`) and the unweighted MLE's
    covariance ``J^-1 / n`` from the same rows, on the estimand's factors' channel (a
    product) or on the combined domain, summed to the estimand (``S``)."""
    mech = problem.q.mechanism
    factors = problem.factors if problem.product else [mech]
    ch = product_channel([channel_of(f) for f in factors]) if len(factors) > 1 else channel_of(factors[0])
    ch = numeric_channel(problem.model, ch, factors)
    w = np.clip(em(ch, shares * n).w, 1e-12, None)   # the fit's own EM (the combined fit keeps only its sums)
    psi = mle_influence(ch.Kn, ch.probabilities(w), B_matrix(ch.p, exact=False), shares, total)
    srs = ch.avar_mle(w) / n
    if problem.product or (problem.parts == [0] and problem.cells == ch.p):
        return psi, srs
    S = problem.part_sum_matrix().astype(float)
    return S @ psi, S @ srs @ S.T


