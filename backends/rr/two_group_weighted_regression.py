"""The regression of RRreg's two-group designs (:mod:`.two_group_regression`) with survey
weights, strata and clusters (``run --weights``), as the finite regression's
(:mod:`privspec.backends.finite.weighted_regression`).

``(b, phi)`` maximize the weighted pseudo-likelihood ``sum_i w_i log P(o_i | x_i, g_i; b,
phi)`` (``svyglm``'s pseudo-MLE): the unweighted fit of :func:`.fit_two_group` on the sums
of weights per distinct (group, report, covariates) tuple, scaled to the rows, which moves
no maximum.  Their covariance is design-based, by Taylor linearization: each tuple's score
``u = ((post_2 - pi_2) x, a)`` (``post_2`` the posterior of the second category given the
report, ``a = K1 pi / q`` the score of ``phi``) through the weighted information ``H`` of
``(b, phi)``, the influence value ``H^-1 u`` totalled per PSU
(:func:`~privspec.backends.core.survey_design.linearized_covariance`); with replicate
weights the fit is redone on each replicate's sums.  The slopes' test is a Wald test on
that covariance (the likelihood ratio of a pseudo-likelihood has no chi-square law under a
complex design).

Examples
--------
>>> import pandas as pd, privspec
>>> spec = privspec.load('''variable y: categorical {yes, no}
... variable g: categorical {first, second}
... variable x: continuous
... mechanism m = sld(y, p1 = 0.2, p2 = 0.8, group = g)
... query reg = estimate regression(y ~ x) from m by mle(logistic)''')
>>> rng = np.random.default_rng(1); n = 3000
>>> x = rng.normal(size=n); grp = rng.integers(0, 2, n); p = np.array([0.2, 0.8])[grp]
>>> carrier = rng.random(n) < 1 / (1 + np.exp(0.5 - x))
>>> yes = np.where(carrier, rng.random(n) < 0.8, rng.random(n) >= p)
>>> df = pd.DataFrame({"y": np.where(yes, "yes", "no"), "g": np.array(["first", "second"])[grp], "x": x,
...                    "w": rng.choice([1.0, 3.0], n), "psu": np.arange(n) // 30})
>>> r = spec.run(df, weights="w", cluster="psu")["reg"]
>>> r.extras["psus"], sorted(r.extras["parameters"]), r.extras["wald_test"]["df"]
(100, ['t'], 1)
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.estimands import coefficient_labels
from privspec.model.graph import ModelGraph, Query
from privspec.results.kinds import Estimate
from privspec.results.values import Vector
from privspec.backends.core.normal import z_quantile
from privspec.backends.core.survey_design import linearized_covariance
from privspec.backends.data.survey import SurveyDesign, check_design_columns, design_sums
from privspec.backends.finite.regression import probabilities
from privspec.backends.finite.regression_data import DESIGN_CI_METHOD, logit_estimate, meaning
from privspec.backends.finite.weighted_regression import slopes_test
from privspec.backends.rr.two_group_regression import (EXTRA, TwoGroupFit, fit_two_group, joint_derivatives,
                                                       refuse_unfit, two_group_reports)
from privspec.backends.rr.two_groups import probabilities as group_probabilities, wald


def weighted_regression_result(model: ModelGraph, q: Query, engine: Any, design: SurveyDesign) -> Estimate:
    """The weighted regression of ``q`` on the table ``engine`` counts, its design columns
    beside the reports, groups and covariates (the module docstring)."""
    mech = q.mechanism
    columns = check_design_columns(design, engine.columns(), engine.source, list(mech.columns))
    X, K0, K1, _, terms, tally = two_group_reports(model, q, engine, extra=columns)
    tuples = np.arange(len(X))
    cells, sums, weighted, layout = design_sums(tally, design, tuples, len(tuples))
    n, total = float(tally.counts.sum()), float(weighted.sum())
    fit = fit_two_group(X, K0, K1, weighted * n / total)
    refuse_unfit(fit, X)
    theta = np.append(fit.coef.ravel(), fit.phi)
    if design.replicates is None:
        V = linearized_covariance(_influence(X, K0, K1, weighted, fit), cells)
    else:
        V = design.replicates.covariance(theta, _replicate_fits(X, K0, K1, sums[:, 1:], n))
    V = (V + V.T) / 2
    designed = dataclasses.replace(fit, cov=V)
    response = q.estimand.variables[0]
    labels = coefficient_labels(response, terms)
    name, what = EXTRA[mech.kind]
    srs = np.diag(fit.cov)
    if fit.boundary:
        # the design's variance holds phi at its bound: so does the simple random sample's
        _, _, info = joint_derivatives(X, K0, K1, weighted * n / total, fit.coef, fit.phi)
        srs = np.append(np.diag(np.linalg.inv(-info[:-1, :-1])), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.diag(V) / srs
    se = float(designed.se[-1])
    params = {name: {"estimate": fit.phi, "se": se, "ci95": wald(fit.phi, se, z_quantile(0.95)), "meaning": what,
                     "deff": float(deff[-1])}}
    p1, p2 = group_probabilities(model, mech)
    how = ("by linearization, the stratified with-replacement variance over PSUs" if design.replicates is None
           else f"from {layout['replicates']} replicate weights, the regression refitted on each")
    notes = [f"groups: {mech.group.labels[0]} (p1 = {p1:g}), {mech.group.labels[1]} (p2 = {p2:g}); {name} one "
             "constant for everyone",
             f"Hajek (weighted) pseudo-maximum-likelihood coefficients and {name}; design-based standard errors "
             f"{how}; Wald tests and intervals on them (no likelihood-ratio test under a survey design)"]
    if fit.boundary:
        notes.append(f"{name} is at its bound {fit.phi:g}: the maximum on the boundary, the coefficients' standard "
                     f"errors with {name} held there, and {name} without one")
    d = fit.coef.shape[0]
    return logit_estimate(designed.logit(), labels, meaning(response, fit.logit()),
                          method="mle(logistic), weighted pseudo-likelihood", ci_method=DESIGN_CI_METHOD,
                          pseudo_loglik=fit.loglik,
                          se_kind=design.se_kind, deff=Vector(tuple(labels), tuple(map(float, deff[:d]))),
                          design=design.describe(), weighted_n=total, **layout,
                          wald_test=slopes_test(designed.logit()), parameters=params,
                          se_method=f"design-based, of the coefficients and {name}", note="; ".join(notes))


def _influence(X: np.ndarray, K0: np.ndarray, K1: np.ndarray, weighted: np.ndarray, fit: TwoGroupFit
               ) -> np.ndarray:
    """``H^-1 u`` per distinct tuple (``(coefficients + 1) x tuples``), ``u`` its score in
    ``(b, phi)`` and ``H`` the information of the weighted pseudo-likelihood at the fit.
    D020 where ``H`` is singular."""
    _, _, hess = joint_derivatives(X, K0, K1, weighted, fit.coef, fit.phi)
    K = K0 + fit.phi * K1
    pi = probabilities(X, fit.coef)
    q = np.einsum("gy,gy->g", K, pi)
    U = np.column_stack([X * (pi[:, 1] * K[:, 1] / q - pi[:, 1])[:, None], np.einsum("gy,gy->g", K1, pi) / q])
    if fit.boundary:
        # phi held at its bound: its score is no estimating equation there, so the
        # coefficients are linearized with phi fixed, and phi has no design-based variance
        U, hess = U[:, :-1], hess[:-1, :-1]
    try:
        psi = np.linalg.solve(-hess, U.T)
    except np.linalg.LinAlgError:
        raise DataError(Diagnostic("D020", "the weighted reports do not determine the regression's covariance: "
                                           "its information is singular", hint="fewer covariates")) from None
    return psi if not fit.boundary else np.vstack([psi, np.full((1, len(X)), np.nan)])


def _replicate_fits(X: np.ndarray, K0: np.ndarray, K1: np.ndarray, sums: np.ndarray, n: float) -> np.ndarray:
    """``(coefficients, phi)`` (``R x (coefficients + 1)``) refitted on each replicate's sums
    of weights."""
    out = []
    for r in range(sums.shape[1]):
        fit = fit_two_group(X, K0, K1, sums[:, r] * n / sums[:, r].sum())
        if not fit.converged:
            raise BackendError(Diagnostic("B020", f"the regression on replicate {r + 1} did not converge",
                                          hint="fewer covariates"))
        out.append(np.append(fit.coef.ravel(), fit.phi))
    return np.array(out)
