"""Algorithm 1 with survey weights where it is not the EM of a likelihood: the ensemble
regressors (``iterative(random_forest | gradient_boosting)``) and logistic noise
(``iterative(linear, logistic)``).  The linear regressor with normal noise has its own
module, :mod:`.weighted_regression` (there Algorithm 1 is an EM, so its weighted version
is the weighted pseudo-MLE).

The weighted iteration is Algorithm 1 with every step weighted
(:func:`~privspec.backends.interval.regression.iterative_regression`'s ``weights``): on
the distinct (report, covariates) tuples, each with its sum of survey weights, the
marginal start is the weighted fit, eq. (13)'s conditional means are per tuple as
before, eq. (11)'s refit passes the weights as ``sample_weight`` (weighted least squares
for the linear regressor, scikit-learn's weighted trees for the ensembles), and the
noise scale's update and the stopping rule use weighted means.  Its fixed point estimates
the population's regression function as the Hajek estimators estimate a population
mean.  The weights are passed normalized to a mean of 1 per tuple, so that a constant
factor on the weights, and integer weights against duplicated rows, give the same fit.

Standard errors: the ensembles have none, weighted or not (their result is the feature
importances).  The linear regressor with logistic noise gets design-based ones, by the
stratified jackknife over the PSUs
(:func:`~privspec.backends.core.survey_design.design_jackknife`, as the weighted NPMLE:
:mod:`.weighted`), Algorithm 1 refitted on each replicate, or by refitting on each
replicate-weight column.  Null reports are left out as a domain (their tuples have no
fit; every PSU stays a replicate).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from privspec.model.graph import Query
from privspec.results.kinds import Estimate
from privspec.results.values import Vector
from privspec.backends.core.normal import z_quantile
from privspec.backends.core.survey_design import design_jackknife
from privspec.backends.data.survey import SurveyDesign, design_cells, refuse_conditional_se, replicate_sums
from privspec.backends.data.tally import Tally
from privspec.backends.interval.estimate import null_extras, se_kind
from privspec.backends.interval.regression import RegressionFit, iterative_regression
from privspec.backends.interval.resample import JACKKNIFE_GROUPS


def weighted_iterative(q: Query, tally: Tally, left: np.ndarray, right: np.ndarray, X: np.ndarray,
                       covariates: list[str], design: SurveyDesign, support: tuple[float, float], disclose: Any,
                       regressor: str, noise: str, seed: int | None = None) -> Estimate:
    """``estimate regression(Y ~ X) by iterative(regressor, noise)`` with survey weights, for
    the ensembles (any noise) and the linear regressor with logistic noise: the module
    docstring.  ``left, right, X`` per distinct tuple of ``tally``.

    Examples
    --------
    Y = 2 x + e with logistic noise, 100 clusters of 30, equal weights: the slope is near 2,
    with a standard error from the jackknife over the clusters.

    >>> import pandas as pd, privspec
    >>> spec = privspec.load('spec "s"\\nvariable y: continuous\\nvariable x: continuous\\n'
    ...                      'mechanism m = interval(y, case1(uniform(-8, 8)))\\n'
    ...                      'query b = estimate regression(y ~ x) from m by iterative(linear, logistic)\\n')
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=3000); y = 2 * x + rng.logistic(size=3000)
    >>> frame = pd.DataFrame({"y": y, "x": x, "w": 1.0, "c": np.arange(3000) // 30})
    >>> reports = spec.privatize(frame, "m", seed=1, keep=["x", "w", "c"])
    >>> b = spec.run(reports, weights="w", cluster="c")["b"]
    >>> slope, se = b.value.values[1], b.extras["se"].values[1]
    >>> bool(abs(slope - 2) < 4 * se), bool(0 < se < 0.3)
    (True, True)
    """
    refuse_conditional_se(se_kind(q))
    seen = ~np.isnan(left)
    tuples = np.arange(len(left))
    if design.replicates is None:
        cells = design_cells(tally, design, tuples)
        weighted = cells.weighted_counts(len(tuples))
    else:
        sums = replicate_sums(tally, design, tuples, len(tuples))
        weighted = sums[:, 0]
    rows = float(tally.counts[seen].sum())

    def fitter(w: np.ndarray) -> RegressionFit:
        kept = w[seen]
        return iterative_regression(X[seen], left[seen], right[seen], regressor, noise=noise, support=support,
                                    disclose=disclose, seed=seed or 0, init="center",
                                    weights=kept * (len(kept) / kept.sum()))

    fit = fitter(weighted)
    total = float(weighted[seen].sum())
    extras = {"method": f"iterative({regressor}) (Algorithm 1), weighted", "noise": noise,
              "noise_scale": fit.scale, "iterations": fit.iterations, "converged": fit.converged,
              "last_change": fit.history[-1]["change"] if fit.history else None,
              "start": "f_0 = the location of the weighted marginal law of the response fitted to the reports",
              "design": design.describe(), "weighted_n": total, "n": int(rows), **null_extras(left, tally.counts)}
    if regressor != "linear":
        value = Vector(tuple(covariates), tuple(float(v) for v in fit.model.feature_importances_))
        return Estimate(value, **extras,
                        meaning="feature importances of the fitted ensemble (its predictions: the Python API)",
                        note=(f"Algorithm 1 with the {regressor} regressor, each tuple's survey weight passed to "
                              "its fit as sample_weight and the noise scale's update weighted; no standard errors, "
                              "as without weights (an ensemble's importances have none)"))
    labels = ("intercept", *covariates)
    coefficients: Callable[[RegressionFit], np.ndarray] = lambda f: np.asarray(f.coefficients, dtype=float)
    center = coefficients(fit)
    if design.replicates is None:
        jk = design_jackknife(cells, JACKKNIFE_GROUPS, 0 if seed is None else seed)
        reps = np.array([coefficients(fitter(jk.counts(i, len(tuples)))) for i in range(jk.replicates)])
        cov, how, kind = jk.variance(reps, center), jk.method, "design-based (stratified jackknife)"
    else:
        reps = np.array([coefficients(fitter(sums[:, i])) for i in range(1, sums.shape[1])])
        cov = design.replicates.covariance(center, reps)
        how, kind = f"{len(reps)} {design.replicates.type} replicates, Algorithm 1 refitted on each", design.se_kind
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    z = z_quantile(0.95)
    return Estimate(Vector(labels, tuple(map(float, center))), se=Vector(labels, tuple(map(float, se))),
                    ci95={lab: [float(v - z * s), float(v + z * s)] for lab, v, s in zip(labels, center, se)},
                    ci_method="estimate +- 1.96 se (design-based)", se_kind=kind, se_method=how, **extras,
                    note=("with logistic noise Algorithm 1 is not the EM of a likelihood: its weighted version "
                          "(weighted least squares in eq. 11, the scale's update weighted) is computed as the "
                          f"paper iterates; design-based standard errors from the {how}"))
