"""A regression with a randomized-response predictor (:mod:`.regression_predictor`, R's rr
``rrreg.predictor``) with survey weights, strata and clusters (``run --weights``).

The coefficients maximize the weighted pseudo-likelihood ``sum_i w_i log sum_z P(z | x_i)
K[r_i, z] P(y_i | x_i, z)``: the unweighted fit on the sums of weights per distinct
(report, outcome, covariates) tuple, scaled to the rows, which moves no maximum.  Their
covariance is design-based, as the weighted response regression's
(:mod:`.weighted_regression`, ``svyglm``'s): by Taylor linearization, each tuple's score
``u`` (the complete-data score averaged over the posterior of the item) through the
weighted information ``H`` (a central difference of the weighted score), the influence
value ``H^-1 u`` totalled per PSU
(:func:`~privspec.backends.core.survey_design.linearized_covariance`); with replicate
weights each replicate is refitted instead.  The linearization runs over all the
coefficients at once, the item model's with the outcome's (both are estimated from the
same equations); the outcome's Wald tests and intervals and the Wald test of all its
slopes use their block, and the item model's standard errors are design-based too.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import Query
from privspec.results.kinds import Estimate
from privspec.results.values import Vector
from privspec.backends.core.survey_design import linearized_covariance
from privspec.backends.data.survey import SurveyDesign, check_design_columns, design_sums
from privspec.backends.finite.data import report_columns
from privspec.backends.finite.regression_data import DESIGN_CI_METHOD, logit_estimate
from privspec.backends.finite.regression_predictor import (PredictorData, fit_grouped, item_model, predictor_meaning,
                                                           predictor_reports, refuse_unfit_predictor)
from privspec.backends.finite.weighted_regression import slopes_test


def weighted_predictor(q: Query, engine: Any, design: SurveyDesign) -> Estimate:
    """The weighted regression of ``q``, whose mechanism privatizes a covariate, on the table
    ``engine`` counts, its design columns beside the reports (the module docstring)."""
    columns = check_design_columns(design, engine.columns(), engine.source, report_columns(q.mechanism,
                                                                                            engine.columns()))
    reports = predictor_reports(q, engine, extra=columns)
    data, tally = reports.data, reports.tally
    tuples = np.arange(len(reports.counts))
    n = float(reports.counts.sum())
    cells, sums, weighted, layout = design_sums(tally, design, tuples, len(tuples))
    total = float(weighted.sum())
    fit = fit_grouped(data, weighted * (n / total))
    refuse_unfit_predictor(fit)
    if design.replicates is None:
        V = linearized_covariance(_influence(data, fit.theta, fit.information * (total / n)), cells)
    else:
        V = design.replicates.covariance(fit.theta, _replicate_fits(data, sums[:, 1:], n))
    m = data.split_at
    outcome = dataclasses.replace(fit.outcome, cov=V[m:, m:])
    item = dataclasses.replace(fit.item, cov=V[:m, :m])
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.diag(V[m:, m:]) / np.diag(fit.outcome.cov)
    how = ("by linearization, the stratified with-replacement variance over PSUs" if design.replicates is None
           else f"from {layout['replicates']} replicate weights, the regression refitted on each")
    return logit_estimate(outcome, reports.labels, predictor_meaning(q),
                          item_model=item_model(dataclasses.replace(fit, item=item), reports.item_labels),
                          method="mle(logistic), weighted pseudo-likelihood", ci_method=DESIGN_CI_METHOD,
                          pseudo_loglik=fit.outcome.loglik,
                          se_kind=design.se_kind, deff=Vector(reports.labels, tuple(map(float, deff))),
                          design=design.describe(), weighted_n=total, **layout, wald_test=slopes_test(outcome),
                          note=f"Hajek (weighted) pseudo-maximum-likelihood coefficients; design-based standard "
                               f"errors {how}; Wald tests and intervals on them (no likelihood-ratio test under "
                               "a survey design)")


def _influence(data: PredictorData, theta: np.ndarray, information: np.ndarray) -> np.ndarray:
    """``H^-1 u`` per distinct tuple (``coefficients x tuples``), ``u`` its score and ``H``
    the information of the weighted pseudo-likelihood (per unit of weight).  D020 where
    ``H`` is singular."""
    _, U = data.scores(theta)
    try:
        return np.linalg.solve(information, U.T)
    except np.linalg.LinAlgError:
        raise DataError(Diagnostic("D020", "the weighted reports do not determine the regression's covariance: "
                                           "its information is singular", hint="fewer covariates")) from None


def _replicate_fits(data: PredictorData, sums: np.ndarray, n: float) -> np.ndarray:
    """All the coefficients (``R x coefficients``) refitted on each replicate's sums of weights."""
    out = []
    for r in range(sums.shape[1]):
        fit = fit_grouped(data, sums[:, r] * (n / sums[:, r].sum()))
        if not fit.converged:
            raise BackendError(Diagnostic("B020", f"the regression on replicate {r + 1} did not converge",
                                          hint="fewer covariates"))
        out.append(fit.theta)
    return np.array(out)
