"""Survey weights for the interval estimators fitted by maximum likelihood: the NPMLE of F
and its moments, and ``mle(normal | logistic)``.

The weighted estimate is the maximum of the weighted (pseudo-) likelihood
``sum_i w_i log P(R_i)``: the same fit as the unweighted one with each distinct report's
count replaced by its sum of weights (scaled to the rows, which moves no maximum).  Its
design-based standard error comes from the stratified jackknife over the primary sampling
units (:func:`privspec.backends.core.survey_design.design_jackknife`): an NPMLE
functional has no closed-form influence function to linearize, and the jackknife is
what the unweighted NPMLE's standard error already is (:mod:`.resample`).  Each replicate
deletes a PSU (or a group of them, Kott's delete-a-group jackknife, beyond as many PSUs
as the unweighted jackknife makes refits) and reweights the rest of its stratum; the
variance is ``sum_r (g_h - 1) / g_h (theta_r - theta)^2``.  The interval is
``estimate +- 1.96 se``, as for every design-based estimate of privspec.

With replicate weights (:mod:`privspec.backends.data.replicates`) each replicate column
is refitted instead and the variance is the replicates' own (the same
:func:`~privspec.backends.core.survey_design.replicate_covariance`).

A weighted NPMLE of F comes without its band: the profile-likelihood band calibrates a
likelihood ratio of independent, equally weighted reports, which a weighted,
clustered sample is not.  ``se = conditional`` is refused (B041), as everywhere with
weights.

Null reports (respondents who reported nothing) are left out of the fit as without
weights, as a domain of the sample (``survey``'s ``subset``): they stay in the design's
cells as one more report that no fit reads, so every PSU, one of nulls alone included,
is a jackknife replicate and counts in its stratum's ``n_h``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import ModelGraph, Query
from privspec.results.kinds import Estimate
from privspec.results.result import Result
from privspec.backends.core.normal import z_quantile
from privspec.backends.core.survey_design import design_jackknife
from privspec.backends.data.survey import SurveyDesign, design_cells, refuse_conditional_se, replicate_sums
from privspec.backends.data.tally import Tally
from privspec.backends.interval import resample
from privspec.backends.interval.estimate import named_args, null_extras, number_wald_inference, se_kind
from privspec.backends.interval.estimators import npmle_functional, parametric_mle
from privspec.backends.interval.fit import fit_npmle
from privspec.backends.interval.laws import support_of
from privspec.backends.interval.reports import report_model

#: the methods with a weighted version here (``unbiased`` has its own: :func:`.estimate.weighted_unbiased`)
METHODS = ("npmle", "mle")


def weighted_fit(model: ModelGraph, q: Query, left: np.ndarray, right: np.ndarray, tally: Tally,
                 design: SurveyDesign, seed: int | None = None) -> Result:
    """``estimate cdf | mean | moment (Y) by npmle | mle(...)`` with survey weights, strata
    and clusters; ``left, right`` per distinct tuple of ``tally`` (reports and design
    columns).

    Examples
    --------
    Reports of Y ~ N(0, 1) where the negative values are sampled at half the rate and
    weighted 2: the weighted mean is near 0, the unweighted one above it.

    >>> import pandas as pd, privspec
    >>> spec = privspec.load('spec "s"\\nvariable y: continuous\\n'
    ...                      'mechanism m = interval(y, case1(uniform(-3, 3)))\\n'
    ...                      'query mu = estimate mean(y) from m by npmle\\n')
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=4000)
    >>> y = y[(y > 0) | (rng.uniform(size=4000) < 0.5)]
    >>> frame = spec.privatize(pd.DataFrame({"y": y, "w": np.where(y > 0, 1.0, 2.0)}), "m", seed=1, keep=["w"])
    >>> weighted = spec.run(frame, weights="w")["mu"]
    >>> bool(abs(weighted.value) < 2 * weighted.extras["se"] < 0.15), bool(spec.run(frame)["mu"].value > 0.2)
    (True, True)
    """
    refuse_conditional_se(se_kind(q))
    seen = ~np.isnan(left)
    pairs, inverse = np.unique(np.column_stack([left[seen], right[seen]]), axis=0, return_inverse=True)
    l, r = pairs[:, 0], pairs[:, 1]
    # the null reports: one more report index, in the design's cells but never fitted
    report = np.full(len(left), len(l), dtype=np.int64)
    report[seen] = np.asarray(inverse).ravel()
    rows = float(tally.counts[seen].sum())
    if design.replicates is None:
        cells = design_cells(tally, design, report)
        weighted = cells.weighted_counts(len(l) + 1)[:-1]
    else:
        sums = replicate_sums(tally, design, report, len(l) + 1)[:-1]
        weighted = sums[:, 0]
    total = float(weighted.sum())
    counts = _scaled(weighted, rows)
    common = dict(se_kind=_se_kind(design), ci_method="estimate +- 1.96 se (design-based)",
                  design=design.describe(), weighted_n=total, n=int(rows), **null_extras(left, tally.counts))
    if q.method.name == "npmle" and q.estimand.kind == "cdf":   # the NPMLE of F: no design-based band
        fit = fit_npmle(q.mechanism, l, r, counts)
        extras = {**fit.extras(), **report_model(q.mechanism).extras(), **common,
                  "method": "npmle (weighted pseudo-likelihood)"}
        extras.pop("ci_method")
        return Estimate(fit.step_function(), **extras,
                        note="no band with survey weights: the profile-likelihood band assumes independent, "
                             "equally weighted reports")
    statistic, fitter, groups, value, extras = _estimator(q, l, r, counts)
    center = np.atleast_1d(statistic(fitter(counts)))
    if design.replicates is None:
        jk = design_jackknife(cells, groups, 0 if seed is None else seed)
        reps = [statistic(fitter(_scaled(jk.counts(i, len(l) + 1)[:-1], rows))) for i in range(jk.replicates)]
        cov, how = jk.variance(np.array(reps), center), jk.method
    else:
        reps = [statistic(fitter(_scaled(sums[:, i], rows))) for i in range(1, sums.shape[1])]
        cov, how = design.replicates.covariance(center, np.array(reps).reshape(len(reps), -1)), \
            f"{len(reps)} {design.replicates.type} replicates, each refitted"
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    z = z_quantile(0.95)
    common.update(extras, se_method=how)
    if isinstance(value, dict):                      # mle's location and scale
        return Estimate(value, se=dict(zip(value, map(float, se))), **common,
                        ci95={k: [value[k] - z * s, value[k] + z * s] for k, s in zip(value, se)})
    s = float(se[0])
    return Estimate(value, se=s, ci95=[value - z * s, value + z * s], **common,
                    inference=number_wald_inference(value, s))


def _se_kind(design: SurveyDesign) -> str:
    """The standard errors' kind: the jackknife of the design's PSUs, or its replicate weights."""
    return design.se_kind if design.replicates is not None else "design-based (stratified jackknife)"


def _scaled(weighted: np.ndarray, rows: float) -> np.ndarray:
    """Weighted counts scaled to sum to the rows (the fits' tolerances are set for counts)."""
    total = float(weighted.sum())
    return weighted * (rows / total) if total > 0 else weighted


def _estimator(q: Query, l: np.ndarray, r: np.ndarray, counts: np.ndarray
               ) -> tuple[Callable, Callable, int, Any, dict]:
    """The statistic of a fit, the fitter of the distinct reports under new counts, the
    jackknife's most replicates, the full sample's estimate and its extras."""
    mech = q.mechanism
    lo, hi = support_of(mech.variable)
    kind = q.estimand.kind
    order = 1 if kind == "mean" else (q.estimand.order or 1)
    if q.method.name == "mle":
        family = named_args(q)[0]
        pl, pr, owner = report_model(mech).likelihood_pieces(l, r)
        fitter = lambda c: parametric_mle(pl, pr, owner, c, family)
        fit = fitter(counts)
        if not fit.converged:
            raise BackendError(Diagnostic("B020", f"the weighted mle({family}) fit did not reach the maximum of "
                                          f"the pseudo-likelihood after {fit.iterations} iterations",
                                          hint="the reports may not identify a location and a scale; try npmle"))
        extras = {"method": f"mle({family}) (weighted pseudo-likelihood)", "iterations": fit.iterations,
                  "converged": fit.converged}
        if kind == "cdf":
            return (lambda f: np.array([f.location, f.scale]), fitter, resample.JACKKNIFE_GROUPS,
                    {"location": fit.location, "scale": fit.scale}, extras)
        return (lambda f: f.moment(order)[0], fitter, resample.JACKKNIFE_GROUPS, fit.moment(order)[0], extras)
    fit = fit_npmle(mech, l, r, counts)
    extras = {**fit.extras(), **report_model(mech).extras(), "method": "npmle (weighted pseudo-likelihood)"}
    fast = resample.case1_fitter(l, r)
    refit = resample.engine_fitter(l, r, lambda L, R, C: fit_npmle(mech, L, R, C).result)
    groups = resample.CASE1_GROUPS if fast is not None else (
        resample.RANGE_FIT_GROUPS if "on ranges" in fit.engine else resample.JACKKNIFE_GROUPS)
    moment = resample.moment_statistic(order, lo, hi)
    value, bounds = npmle_functional(np.asarray(fit.result.intervals, dtype=float),
                                     np.asarray(fit.result.mass, dtype=float), lambda y: y ** order, lo, hi)
    extras["range"] = list(bounds)
    return (lambda f: moment(*f), fast or refit, groups, value, extras)
