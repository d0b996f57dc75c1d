"""Estimates of a finite mechanism's distribution from weighted, stratified, clustered
reports (a survey design bound with the data: :mod:`privspec.backends.data.survey`).

The estimate is the Hajek (weighted) version of the query's estimator on the sums of
weights per report: the method of moments puts the weighted report shares through the
inverse channel, the MLE maximizes the weighted pseudo-likelihood ``sum_o W_o log
lambda_o(w)`` (``one_step``: one Newton step of it from the weighted MoM, linearized as
the MLE it approximates to first order).  All are the unweighted estimators applied to the
weighted counts (they depend on the counts only through their shares), so the same
fitting code runs.

Standard errors are design-based, by Taylor linearization
(:mod:`privspec.backends.core.survey_design`): the influence values of the estimating
equation (MoM: ``Q^-1 T (e_o - lambda_hat)``; MLE: ``B J^-1 s(o)``, ``J`` the observed
information) totalled per
PSU, the stratified with-replacement variance.  The design effect is the design variance
over the variance of the same estimator under simple random sampling of the same n rows
(the estimator's asymptotic variance at the estimate, over n).  Intervals are Wald
intervals on the design-based standard error, clipped to [0, 1].

With replicate weights (:mod:`privspec.backends.data.replicates`) the covariance is
instead the replicates' own: the same estimator re-fitted on each replicate's sums of
weights per report (EM on all of them at once), their deviations from the full-sample
estimate weighed by the replicate type's scale and rscales.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import Query
from privspec.results.kinds import Estimate
from privspec.results.result import Result
from privspec.results.values import Table
from privspec.backends.core.batched import em_fits
from privspec.backends.core.channel import B_matrix, Channel
from privspec.backends.core.estimators import Fit, estimate
from privspec.backends.core.projections import WALD_CI, wald_interval
from privspec.backends.core.survey_design import linearized_covariance, mle_influence, mom_influence
from privspec.backends.data.survey import SurveyDesign, check_design_columns, design_sums, refuse_conditional_se
from privspec.backends.finite.data import observation_codes, report_columns, tally_of
from privspec.backends.finite.estimates import (MLE_FAMILY, estimand_map, fit_channel, require_answer, se_kind_of,
                                                wald_inference)
from privspec.backends.finite.truth import as_vector

#: the estimators with a weighted version (the one-step estimator's Hessian is not a
#: pseudo-likelihood's)
WEIGHTED_METHODS = ("mom", *MLE_FAMILY, "one_step")


def weighted_supports(q: Query) -> str:
    """Why ``q`` has no weighted version here ("" when it has one)."""
    if q.kind != "estimate" or q.estimand is None or q.estimand.kind not in ("distribution", "joint"):
        return f"{q.kind} queries" + (f" of a {q.estimand.kind}" if q.estimand is not None else "")
    if q.method is None or q.method.name not in WEIGHTED_METHODS:
        return f"the estimator '{q.method.name if q.method else '?'}' (weighted: {', '.join(WEIGHTED_METHODS)})"
    if q.method.options.get("project"):
        return "a projected estimate (project = ...)"
    return ""


def weighted_estimate(q: Query, engine: Any, design: SurveyDesign) -> Result:
    """The Hajek estimate of ``q`` from the table ``engine`` counts, with design-based
    standard errors, intervals and design effects (the module docstring)."""
    refuse_conditional_se(se_kind_of(q))
    d = design_estimate(q, engine, design, q.method.name)
    fit, V, srs = d.fit, d.V, d.srs
    M, labels = estimand_map(tuple(d.channel.x_labels), q.mechanism, q)
    if M is not None:
        V, srs = M @ V @ M.T, M @ srs @ M.T
    w = fit.w if M is None else M @ fit.w
    se = np.sqrt(np.maximum(np.diag(V), 0.0))
    return _result(q, fit, w, V, se, np.diag(V) / np.diag(srs), labels, d.layout, d.total, design)


@dataclass(frozen=True)
class DesignEstimate:
    """The Hajek fit of a finite mechanism's categories (``fit.w``, in the channel's
    ``x_labels``), its design-based covariance ``V``, the unweighted estimator's covariance
    ``srs`` from the same rows, the channel, the design's size (strata and PSUs, or the
    replicates) and the sum of weights."""

    fit: Fit
    V: np.ndarray
    srs: np.ndarray
    channel: Channel
    layout: dict
    total: float


def design_estimate(q: Query, engine: Any, design: SurveyDesign, method: str) -> DesignEstimate:
    """The estimator ``method`` (``mom``, ``mle``, ...) of the categories of ``q``'s mechanism
    on the table ``engine`` counts, weighted, with its design-based covariance."""
    mech = q.mechanism
    header = engine.columns()
    columns = check_design_columns(design, header, engine.source, report_columns(mech, header))
    tally = tally_of(mech, engine, extra=columns)
    ch, reports = observation_codes(mech, tally)
    ch_w = fit_channel(q, ch)
    if ch_w.closed is not None:
        raise BackendError(Diagnostic("B040", "survey weights with a design too large for its matrices "
                                              "(a uniform subset design on many categories)",
                                      hint="run without --weights, or a design with fewer categories"))
    cells, sums, weighted, layout = design_sums(tally, design, reports, ch.n_obs)
    total = cells.total_weight if cells is not None else float(weighted.sum())
    n = tally.n
    ch.check_floating()
    M, _ = estimand_map(tuple(ch_w.x_labels), mech, q)
    try:
        fit = estimate(ch_w, weighted / total * n, method)    # Hajek: the shares, at the rows' n
        require_answer(ch_w, weighted, fit, method, M)
        if design.replicates is None:
            V = linearized_covariance(_influence(ch_w, fit, weighted / total, total, method), cells)
        else:
            V = design.replicates.covariance(fit.w, _replicate_fits(ch_w, sums[:, 1:], n, method))
    except np.linalg.LinAlgError:
        raise DataError(Diagnostic("D020", "the weighted reports do not determine the estimate's covariance: "
                                           "the information at the estimate is singular",
                                   hint="more respondents, or by mom")) from None
    srs = (ch_w.avar_mom(fit.w) if method == "mom" else ch_w.avar_mle(np.clip(fit.w, 1e-12, None))) / n
    return DesignEstimate(fit, V, srs, ch_w, layout, total)


def _replicate_fits(ch: Channel, sums: np.ndarray, n: int, method: str) -> np.ndarray:
    """The estimate (``R x p``, the channel's categories) on each replicate's sums of
    weights per report (``sums``: ``n_obs x R``), as the full sample's: the shares at the
    rows' n; EM on every replicate at once.  B020 for a replicate whose fit did not converge."""
    C = (sums / sums.sum(axis=0) * n).T
    fits = em_fits(ch, C) if method in ("mle", "em") else [estimate(ch, c, method) for c in C]
    for r, fit in enumerate(fits):
        if isinstance(fit, Exception) or not fit.converged:
            raise BackendError(Diagnostic("B020", f"the {method} fit on replicate {r + 1} did not reach the "
                                                  "maximum of its pseudo-likelihood", hint="by mom"))
    return np.array([fit.w for fit in fits])


def _influence(ch: Channel, fit: Fit, shares: np.ndarray, total: float, method: str) -> np.ndarray:
    """The influence values per unit of weight (``p x n_obs``) of the query's estimator."""
    if method == "mom":
        return mom_influence(ch.Tn @ ch.Kn, ch.Tn, shares, total)
    w = np.clip(fit.w, 1e-12, None)
    return mle_influence(ch.Kn, ch.probabilities(w), B_matrix(ch.p, exact=False), shares, total)


def _result(q: Query, fit: Fit, w: np.ndarray, V: np.ndarray, se: np.ndarray, deff: np.ndarray,
            labels: tuple[str, ...], layout: dict, total: float, design: SurveyDesign) -> Result:
    """The estimate with its design-based extras (``layout``: the strata and PSUs, or the
    replicates, counted)."""
    ci = wald_interval(w, se)
    variance = ("design-based standard errors by linearization, the stratified with-replacement variance over "
                "PSUs" if design.replicates is None else
                f"design-based standard errors from {layout['replicates']} {design.replicates.type} replicate "
                "weights, the estimator re-fitted on each")
    extras: dict = {
        "method": q.method.name, "n": fit.n, "se": as_vector(se, labels),
        "se_kind": design.se_kind,
        "ci95": {lab: [float(a), float(b)] for lab, (a, b) in zip(labels, ci)},
        "ci_method": f"{WALD_CI} on the design-based standard error",
        "deff": as_vector(deff, labels),
        "design": design.describe(),
        "weighted_n": total, **layout,
        "note": "; ".join(x for x in (
            f"Hajek (weighted) estimate; {variance}; deff: design variance over simple random sampling's at "
            "the same n",
            fit.note, "the estimate has negative entries (MoM is unbiased but may leave the simplex)"
            if np.any(w < 0) else "") if x),
    }
    if q.method.name in MLE_FAMILY:
        extras["pseudo_loglik"] = fit.loglik
    inference = wald_inference(w, se, lambda: V)
    if q.estimand.kind == "joint":
        variables = q.estimand.variables
        table = Table(tuple(v.name for v in variables), tuple(v.labels for v in variables),
                      w.reshape(tuple(len(v.labels) for v in variables)))
        return Estimate(table, **extras, inference=inference)
    return Estimate(as_vector(w, labels), **extras, inference=inference)
