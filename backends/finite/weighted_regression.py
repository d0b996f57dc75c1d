"""A regression on a privatized categorical response with survey weights, strata and
clusters (``estimate regression(Y ~ X) from M by mle(logistic)``, ``run --weights``).

The coefficients maximize the weighted pseudo-likelihood ``sum_i w_i log sum_y K[o_i, y]
pi_y(x_i; beta)`` (the ``survey`` package's ``svyglm`` does the same for a logit): the
unweighted fit of :mod:`.regression` on the sums of weights per distinct (report,
covariates) tuple, scaled to the rows, which moves no maximum.  Their covariance is
design-based, by Taylor linearization: each tuple's score ``u = (s - pi) (x) x``
(``s`` the posterior of the categories given the report) through the weighted
information ``H = -sum_i w_i d u_i / d beta``, so the influence value ``H^-1 u``, totalled
per PSU (:func:`~privspec.backends.core.survey_design.linearized_covariance`); with
replicate weights each replicate is refitted instead.  The Wald tests and intervals use
that covariance, and the test of all slopes is a Wald test too (the likelihood ratio of a
pseudo-likelihood has no chi-square law under a complex design).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import Query
from privspec.results.kinds import Estimate
from privspec.results.values import Vector
from privspec.backends.core.survey_design import linearized_covariance
from privspec.backends.data.survey import SurveyDesign, check_design_columns, design_sums
from privspec.backends.finite.data import report_columns
from privspec.backends.finite.regression import LogitFit, fit_logit, loglik_derivatives, probabilities
from privspec.backends.finite.regression_data import (DESIGN_CI_METHOD, coefficient_labels, logit_estimate, meaning,
                                                      refuse_unfit, regression_reports)


def weighted_regression(q: Query, engine: Any, design: SurveyDesign) -> Estimate:
    """The weighted regression of ``q`` on the table ``engine`` counts, its design columns
    beside the reports and covariates (the module docstring)."""
    header = engine.columns()
    columns = check_design_columns(design, header, engine.source, report_columns(q.mechanism, header))
    X, K_rows, counts, terms, tally = regression_reports(q, engine, extra=columns)
    tuples = np.arange(len(counts))
    n = float(counts.sum())
    cells, sums, weighted, layout = design_sums(tally, design, tuples, len(tuples))
    total = float(weighted.sum())
    fit = fit_logit(X, K_rows, weighted * n / total)
    refuse_unfit(fit, X)
    if design.replicates is None:
        V = linearized_covariance(_influence(X, K_rows, weighted, fit.coef), cells)
    else:
        V = design.replicates.covariance(fit.coef.ravel(order="F"), _replicate_fits(X, K_rows, sums[:, 1:], n))
    labels = coefficient_labels(q.estimand.variables[0], terms)
    designed = dataclasses.replace(fit, cov=V)
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.diag(V) / np.diag(fit.cov)
    how = ("by linearization, the stratified with-replacement variance over PSUs" if design.replicates is None
           else f"from {layout['replicates']} replicate weights, the regression refitted on each")
    return logit_estimate(designed, labels, meaning(q.estimand.variables[0], fit),
                          method="mle(logistic), weighted pseudo-likelihood", ci_method=DESIGN_CI_METHOD,
                          pseudo_loglik=fit.loglik,
                          se_kind=design.se_kind, deff=Vector(tuple(labels), tuple(map(float, deff))),
                          design=design.describe(), weighted_n=total, **layout,
                          wald_test=slopes_test(designed),
                          note=f"Hajek (weighted) pseudo-maximum-likelihood coefficients; design-based standard "
                               f"errors {how}; Wald tests and intervals on them (no likelihood-ratio test under "
                               "a survey design)")


def _influence(X: np.ndarray, K_rows: np.ndarray, weighted: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``H^-1 u`` per distinct tuple (``coefficients x tuples``), ``u`` its score and ``H``
    the information of the weighted pseudo-likelihood at ``coef``.  D020 where ``H`` is
    singular."""
    _, _, hess, _ = loglik_derivatives(X, K_rows, weighted, coef)
    pi = probabilities(X, coef)
    post = pi * K_rows / np.einsum("gy,gy->g", K_rows, pi)[:, None]
    d = post[:, 1:] - pi[:, 1:]
    U = (X[:, :, None] * d[:, None, :]).transpose(0, 2, 1).reshape(len(X), -1)   # coef.ravel("F")'s order
    try:
        return np.linalg.solve(-hess, U.T)
    except np.linalg.LinAlgError:
        raise DataError(Diagnostic("D020", "the weighted reports do not determine the regression's covariance: "
                                           "its information is singular", hint="fewer covariates")) from None


def _replicate_fits(X: np.ndarray, K_rows: np.ndarray, sums: np.ndarray, n: float) -> np.ndarray:
    """The coefficients (``R x coefficients``) refitted on each replicate's sums of weights."""
    out = []
    for r in range(sums.shape[1]):
        fit = fit_logit(X, K_rows, sums[:, r] * n / sums[:, r].sum())
        if not fit.converged:
            raise BackendError(Diagnostic("B020", f"the regression on replicate {r + 1} did not converge",
                                          hint="fewer covariates"))
        out.append(fit.coef.ravel(order="F"))
    return np.array(out)


def slopes_test(fit: LogitFit) -> dict[str, float]:
    """The Wald test of every slope = 0 on the design-based covariance: ``b' V^-1 b`` against
    chi-square with the slopes' number of degrees of freedom."""
    terms, cats = fit.coef.shape
    slope = np.zeros((terms, cats), dtype=bool)
    slope[1:] = True
    keep = slope.ravel(order="F")
    df = int(keep.sum())
    if not df:
        return {"statistic": float("nan"), "df": 0, "p_value": float("nan")}
    b = fit.coef.ravel(order="F")[keep]
    stat = float(b @ np.linalg.solve(fit.cov[np.ix_(keep, keep)], b))
    return {"statistic": stat, "df": df, "p_value": float(scipy.stats.chi2.sf(stat, df))}
