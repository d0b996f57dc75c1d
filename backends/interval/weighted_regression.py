"""Algorithm 1's linear regression on interval reports (``estimate regression(Y ~ X) from M
by iterative(linear)``, normal noise) with survey weights, strata and clusters.

With a linear regressor, normal noise and the scale estimated, Algorithm 1 is the EM of
the interval-censored linear model ``Y = x b + eps``, ``eps ~ N(0, s^2)``: its fixed point
is the maximum of the likelihood ``prod_i sum_pieces Phi((r - x b) / s) - Phi((l - x b) /
s)`` (:func:`~privspec.backends.interval.regression.report_scores`).  The weighted version
is the maximum of the weighted pseudo-likelihood ``sum_i w_i log P(R_i | x_i)`` (as
``survey``'s ``svyglm`` takes a likelihood): computed on the sums of weights per distinct
(report, covariates) tuple, scaled to the rows, by BFGS on the analytic score from the
weighted marginal law's location and scale (the EM's own start), to the maximum itself
rather than to the EM's stopping rule.

Its covariance is design-based, by Taylor linearization: each tuple's score ``u`` in
``(b, log s)`` through the weighted information ``H`` (a central difference of the
weighted score), the influence ``H^-1 u`` totalled per PSU
(:func:`~privspec.backends.core.survey_design.linearized_covariance`); with replicate
weights each replicate is refitted.  Null reports are left out as without weights, as a
domain (their tuples' influence is 0, the design's PSUs all kept).  The design effect is
over the model's variance at the same n (the inverse information of the fit on the
scaled weights).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy  # its submodules load on first use

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import Query
from privspec.results.kinds import Estimate
from privspec.results.values import Vector
from privspec.backends.core.normal import z_quantile
from privspec.backends.core.survey_design import linearized_covariance
from privspec.backends.data.survey import SurveyDesign, design_sums
from privspec.backends.data.tally import Tally
from privspec.backends.interval.estimate import null_extras, number_wald_inference
from privspec.backends.interval.estimators import parametric_mle
from privspec.backends.interval.ranges import likelihood_pieces
from privspec.backends.interval.regression import report_scores


@dataclass(frozen=True)
class CensoredFit:
    """The pseudo-MLE ``theta = (b, log s)`` and the weighted information in it (per unit of
    the counts it was fitted on)."""

    theta: np.ndarray
    information: np.ndarray
    converged: bool


def fit_censored_linear(X1: np.ndarray, pl: np.ndarray, pr: np.ndarray, owner: np.ndarray, counts: np.ndarray,
                        noise: str = "normal") -> CensoredFit:
    """The maximum of ``sum_g c_g log P(R_g | x_g)`` in ``(b, log s)`` (BFGS, analytic score)
    from the marginal law's location and scale, and the information there.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=3000); y = 1 + 2 * x + rng.normal(size=3000); u = rng.uniform(-6, 8, 3000)
    >>> left, right = np.where(y <= u, -np.inf, u), np.where(y <= u, u, np.inf)
    >>> pl, pr, owner = likelihood_pieces(left, right, (-np.inf, np.inf))
    >>> fit = fit_censored_linear(np.column_stack([np.ones(3000), x]), pl, pr, owner, np.ones(3000))
    >>> se = np.sqrt(np.diag(np.linalg.inv(fit.information)))
    >>> bool(np.all(np.abs(fit.theta - [1, 2, 0]) < 4 * se)), fit.converged
    (True, True)
    """
    counts = np.asarray(counts, dtype=float)
    total = float(counts.sum())

    def negative(theta: np.ndarray) -> tuple[float, np.ndarray]:
        ll, scores = report_scores(X1, pl, pr, owner, theta[:-1], float(np.exp(theta[-1])), noise)
        return -float(counts @ ll) / total, -(counts @ scores) / total

    marginal = parametric_mle(pl, pr, owner, counts, noise)
    start = np.zeros(X1.shape[1] + 1)
    start[0], start[-1] = marginal.location, np.log(marginal.scale)
    opt = scipy.optimize.minimize(negative, start, jac=True, method="BFGS", options={"gtol": 1e-10, "maxiter": 2000})
    theta = opt.x
    h = 1e-5
    H = np.column_stack([(negative(theta + h * e)[1] - negative(theta - h * e)[1]) / (2 * h)
                         for e in np.eye(len(theta))]) * total
    converged = bool(opt.success) or float(np.max(np.abs(opt.jac))) < 1e-7
    return CensoredFit(theta, (H + H.T) / 2, converged)


def weighted_interval_regression(q: Query, tally: Tally, left: np.ndarray, right: np.ndarray, X: np.ndarray,
                                 covariates: list[str], design: SurveyDesign, support: tuple[float, float],
                                 disclose: Any) -> Estimate:
    """The weighted ``iterative(linear)`` regression of ``q`` on the distinct tuples of
    ``tally`` (reports ``left, right`` and covariates ``X`` per tuple; the design's columns
    in the tally too): the module docstring."""
    seen = ~np.isnan(left)
    tuples = np.arange(len(left))
    cells, sums, weighted, layout = design_sums(tally, design, tuples, len(tuples))
    rows = float(tally.counts[seen].sum())
    X1 = np.column_stack([np.ones(int(seen.sum())), X[seen]])
    pl, pr, owner = likelihood_pieces(left[seen], right[seen], support, disclose)
    w = weighted[seen]
    total = float(w.sum())
    fit = fit_censored_linear(X1, pl, pr, owner, w * (rows / total))
    if not fit.converged:
        raise BackendError(Diagnostic("B020", "the weighted regression's maximization did not converge",
                                      hint="fewer covariates, or anchors spread wider than the noise"))
    model = _inverse(fit.information)                        # the model's covariance at the rows' n
    if design.replicates is None:
        _, U = report_scores(X1, pl, pr, owner, fit.theta[:-1], float(np.exp(fit.theta[-1])), "normal")
        psi = np.zeros((len(fit.theta), len(tuples)))
        psi[:, seen] = model @ U.T * (rows / total)          # H^-1 u per unit of weight
        V = linearized_covariance(psi, cells)
        how = "by linearization, the stratified with-replacement variance over PSUs"
    else:
        reps = []
        for r in range(1, sums.shape[1]):
            wr = sums[seen, r]
            refit = fit_censored_linear(X1, pl, pr, owner, wr * (rows / wr.sum()))
            if not refit.converged:
                raise BackendError(Diagnostic("B020", f"the regression on replicate {r} did not converge",
                                              hint="fewer covariates"))
            reps.append(refit.theta)
        V = design.replicates.covariance(fit.theta, np.array(reps))
        how = f"from {layout['replicates']} replicate weights, the regression refitted on each"
    return _result(fit, V, model, covariates, design, layout, how, rows, total, left, tally)


def _inverse(info: np.ndarray) -> np.ndarray:
    """The inverse information; D020 where it is singular or not positive definite."""
    try:
        if np.all(np.linalg.eigvalsh(info) > 0):
            return np.linalg.inv(info)
    except np.linalg.LinAlgError:
        pass
    raise DataError(Diagnostic("D020", "the reports do not determine the regression: its information is singular "
                                       "at the estimate", hint="anchors spread wider than the noise, or fewer "
                                                              "covariates"))


def _result(fit: CensoredFit, V: np.ndarray, model: np.ndarray, covariates: list[str], design: SurveyDesign,
            layout: dict, how: str, rows: float, total: float, left: np.ndarray, tally: Tally) -> Estimate:
    labels = ("intercept", *covariates)
    k = len(labels)
    b, se = fit.theta[:k], np.sqrt(np.maximum(np.diag(V)[:k], 0.0))
    z = z_quantile(0.95)
    scale = float(np.exp(fit.theta[-1]))
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.diag(V)[:k] / np.diag(model)[:k]
    return Estimate(Vector(labels, tuple(map(float, b))), se=Vector(labels, tuple(map(float, se))),
                    ci95={lab: [float(v - z * s), float(v + z * s)] for lab, v, s in zip(labels, b, se)},
                    ci_method="estimate +- 1.96 se (design-based)", se_kind=design.se_kind,
                    method="iterative(linear) (Algorithm 1), weighted pseudo-likelihood", noise="normal",
                    noise_scale=scale, deff=Vector(labels, tuple(map(float, deff))),
                    design=design.describe(), weighted_n=total, n=int(rows), **layout,
                    **null_extras(left, tally.counts),
                    note=("Algorithm 1 with a linear regressor and normal noise is the EM of the interval-censored "
                          "linear model: with weights its fixed point, the weighted pseudo-maximum-likelihood, is "
                          f"computed directly (BFGS); design-based standard errors {how}"))
