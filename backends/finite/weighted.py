"""Estimates of a finite mechanism's distribution from weighted, stratified, clustered
reports (a survey design bound with the data: :mod:`privspec.backends.data.survey`).

The estimate is the Hajek (weighted) version of the query's estimator on the sums of
weights per report: the method of moments puts the weighted report shares through the
inverse channel, the MLE maximizes the weighted pseudo-likelihood ``sum_o W_o log
lambda_o(w)``.  Both are the unweighted estimators applied to the weighted counts (they
depend on the counts only through their shares), so the same fitting code runs.

Standard errors are design-based, by Taylor linearization
(:mod:`privspec.backends.core.survey_design`): the influence values of the estimating
equation (MoM: ``Q^-1 T (e_o - lambda_hat)``; MLE: ``B J^-1 s(o)``, ``J`` the observed
information) totalled per
PSU, the stratified with-replacement variance.  The design effect is the design variance
over the variance of the same estimator under simple random sampling of the same n rows
(the estimator's asymptotic variance at the estimate, over n).  Intervals are Wald
intervals on the design-based standard error, clipped to [0, 1]; replicate weights are
not read.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import Query
from privspec.results.kinds import Estimate
from privspec.results.result import Result
from privspec.results.values import Table
from privspec.backends.core.channel import B_matrix, Channel
from privspec.backends.core.estimators import Fit, estimate
from privspec.backends.core.projections import WALD_CI, wald_interval
from privspec.backends.core.survey_design import DesignCells, linearized_covariance, mle_influence, mom_influence
from privspec.backends.data.survey import SurveyDesign, check_design_columns, design_cells, refuse_conditional_se
from privspec.backends.finite.data import observation_codes, report_columns, tally_of
from privspec.backends.finite.estimates import (MLE_FAMILY, estimand_map, fit_channel, require_answer, se_kind_of,
                                                wald_inference)
from privspec.backends.finite.truth import as_vector

#: the estimators with a weighted version (the one-step estimator's Hessian is not a
#: pseudo-likelihood's)
WEIGHTED_METHODS = ("mom", *MLE_FAMILY)


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
    mech = q.mechanism
    header = engine.columns()
    check_design_columns(design, header, engine.source, report_columns(mech, header))
    tally = tally_of(mech, engine, extra=design.columns)
    ch, reports = observation_codes(mech, tally)
    cells = design_cells(tally, design, reports)
    ch_w = fit_channel(q, ch)
    if ch_w.closed is not None:
        raise BackendError(Diagnostic("B040", "survey weights with a design too large for its matrices "
                                              "(a uniform subset design on many categories)",
                                      hint="run without --weights, or a design with fewer categories"))
    n = tally.n
    total = cells.total_weight
    weighted = cells.weighted_counts(ch.n_obs)
    method = q.method.name
    ch.check_floating()
    M, labels = estimand_map(tuple(ch_w.x_labels), mech, q)
    try:
        fit = estimate(ch_w, weighted / total * n, method)    # Hajek: the shares, at the rows' n
        require_answer(ch_w, weighted, fit, method, M)
        psi = _influence(ch_w, fit, weighted / total, total, method)
    except np.linalg.LinAlgError:
        raise DataError(Diagnostic("D020", "the weighted reports do not determine the estimate's covariance: "
                                           "the information at the estimate is singular",
                                   hint="more respondents, or by mom")) from None
    V = linearized_covariance(psi, cells)
    srs = (ch_w.avar_mom(fit.w) if method == "mom" else ch_w.avar_mle(np.clip(fit.w, 1e-12, None))) / n
    if M is not None:
        V, srs = M @ V @ M.T, M @ srs @ M.T
    w = fit.w if M is None else M @ fit.w
    se = np.sqrt(np.maximum(np.diag(V), 0.0))
    return _result(q, fit, w, V, se, np.diag(V) / np.diag(srs), labels, cells, total, design)


def _influence(ch: Channel, fit: Fit, shares: np.ndarray, total: float, method: str) -> np.ndarray:
    """The influence values per unit of weight (``p x n_obs``) of the query's estimator."""
    if method == "mom":
        return mom_influence(ch.Tn @ ch.Kn, ch.Tn, shares, total)
    w = np.clip(fit.w, 1e-12, None)
    return mle_influence(ch.Kn, ch.probabilities(w), B_matrix(ch.p, exact=False), shares, total)


def _result(q: Query, fit: Fit, w: np.ndarray, V: np.ndarray, se: np.ndarray, deff: np.ndarray,
            labels: tuple[str, ...], cells: DesignCells, total: float, design: SurveyDesign) -> Result:
    """The estimate with its design-based extras."""
    ci = wald_interval(w, se)
    first = np.unique(cells.psu, return_index=True)[1]
    extras: dict = {
        "method": q.method.name, "n": fit.n, "se": as_vector(se, labels),
        "se_kind": "design-based (Taylor linearization)",
        "ci95": {lab: [float(a), float(b)] for lab, (a, b) in zip(labels, ci)},
        "ci_method": f"{WALD_CI} on the design-based standard error",
        "deff": as_vector(deff, labels),
        "design": design.describe(),
        "weighted_n": total, "strata": int(cells.stratum.max()) + 1, "psus": int(cells.repeats[first].sum()),
        "note": "; ".join(x for x in (
            "Hajek (weighted) estimate; design-based standard errors by linearization, the stratified "
            "with-replacement variance over PSUs; deff: design variance over simple random sampling's at the same n",
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
