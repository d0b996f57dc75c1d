"""Estimates from interval reports: Example 2's unbiased mean, parametric fits, the NPMLE.

:func:`estimate_from_reports` answers an ``estimate`` query from reports (read from data
by the back end, or drawn by ``simulate``).  Every standard error says which question it
answers (``se_kind``: the estimator option ``se = population | conditional``) and comes
with the 95% interval printed beside it (``ci95``, made as ``ci_method`` says); the
Python API gets the same intervals at any level (:class:`~privspec.results.values.Inference`).
"""
from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import IntervalMechanism, ModelGraph, Query
from privspec.results.kinds import Estimate
from privspec.results.result import Result
from privspec.results.values import Inference, StepFunction
from privspec.backends.core.normal import z_quantile
from privspec.backends.data.survey import SurveyDesign, design_mean, refuse_conditional_se
from privspec.backends.data.tally import Tally
from privspec.backends.interval import resample
from privspec.backends.interval.estimators import (case1_anchor, example2_conditional_se, example2_mean,
                                                   example2_terms, npmle_functional, parametric_mle)
from privspec.backends.interval.fit import DistributionFit, Fit, aggregate, count_nulls, fit_npmle
from privspec.backends.interval.laws import nearest_double, support_of
from privspec.backends.interval.mechanisms import written_intervals
from privspec.backends.interval.reports import ReportModel, report_model


def named_args(q: Query) -> list:
    """The method's positional arguments (keyword options are (name, value) pairs)."""
    return [a for a in q.method.args if not isinstance(a, tuple)]


def estimate_from_reports(model: ModelGraph, q: Query, left: np.ndarray, right: np.ndarray, *,
                          band: bool | Any = False, seed: int | None = None,
                          jackknife_groups: int | None = None, counts: np.ndarray | None = None) -> Result:
    """An estimate query answered from reports (``left``, ``right``; NaN for nulls), each
    standing for ``counts`` rows (a tally's distinct reports; one row each by default).

    ``band``: True for the pointwise band of a cdf at the fit's quartiles, or the points
    to bound F at.  ``seed``: for the grouping of a delete-a-group jackknife (0 when None).
    ``jackknife_groups``: the most refits of an NPMLE functional's jackknife (default
    :data:`.resample.JACKKNIFE_GROUPS`, fewer for the slower range fit).
    Every standard error says which question it answers (``se_kind``: the estimator
    option ``se = population | conditional``) and comes with the 95% interval printed
    beside it (``ci95``, made as ``ci_method`` says).
    """
    method = q.method.name
    kind = se_kind(q)
    nulls = count_nulls(left, counts)
    l, r, c = aggregate(left, right, counts)
    extra_null = {"n_null": nulls} if nulls else {}
    if method == "unbiased":
        return _unbiased(q.mechanism, l, r, c, kind, extra_null)
    if method == "mle":
        return _mle(q, l, r, c, extra_null)
    return _npmle(q, l, r, c, kind, extra_null, band=band, seed=seed, groups=jackknife_groups)


def _order(q: Query) -> int | None:
    """The moment a mean or moment query asks for (None for a cdf)."""
    est = q.estimand
    return (est.order or 1) if est.kind in ("mean", "moment") else None


def _example2_setting(mech: IntervalMechanism) -> tuple[float, float, float, float]:
    """The anchors' range ``a, b`` and the variable's support ``lo, hi`` of Example 2."""
    lo, hi = support_of(mech.variable)
    return nearest_double(mech.anchor.support()[0]), nearest_double(mech.anchor.support()[1]), lo, hi


#: what :func:`example2_mean` and :func:`case1_anchor` refuse (their ValueError)
_NOT_CASE1 = Diagnostic("D108", "reports that are not Case-I reports (-inf, U] or (U, inf]",
                        hint="Example 2 needs one anchor per respondent")


def _unbiased(mech: IntervalMechanism, l: np.ndarray, r: np.ndarray, c: np.ndarray, kind: str,
              extra_null: dict) -> Result:
    """Example 2's unbiased mean (Case-I reports, uniform anchors) and its standard error."""
    a, b, lo, hi = _example2_setting(mech)
    try:
        mu, se, n = example2_mean(l, r, c, a, b, lo, hi)
    except ValueError:
        raise DataError(_NOT_CASE1) from None
    if kind == "conditional":
        se = example2_conditional_se(l, r, c, a, b, lo, hi)
    z = _z95()
    return Estimate(mu, se=se, se_kind=kind, target=_target(kind, 1), ci95=[mu - z * se, mu + z * se],
                    ci_method="estimate +- 1.96 se", method="unbiased (Example 2, eq. 3)", n=n,
                    anchors=[float(a), float(b)], **extra_null, inference=number_wald_inference(mu, se))


def weighted_unbiased(q: Query, left: np.ndarray, right: np.ndarray, tally: Tally, design: SurveyDesign) -> Result:
    """Example 2's mean with survey weights, strata and clusters: the Hajek mean of its
    per-report terms ``D`` (:func:`example2_terms`, unbiased for each respondent's value),
    its design-based standard error by linearization and design effect
    (:func:`privspec.backends.data.survey.design_mean`); ``left, right`` per distinct tuple
    of ``tally``.  No null report reaches it: ``unbiased`` needs a Case-I mechanism (E501
    for a selective one), whose file may not hold a null (D004 when it is read)."""
    refuse_conditional_se(se_kind(q))
    a, b, lo, hi = _example2_setting(q.mechanism)
    try:
        u, delta = case1_anchor(left, right, lo, hi)
    except ValueError:
        raise DataError(_NOT_CASE1) from None
    d = design_mean(example2_terms(u, delta, a, b), tally, design)
    z = _z95()
    return Estimate(d.mean, se=d.se, se_kind=design.se_kind, target=_target("population", 1),
                    ci95=[d.mean - z * d.se, d.mean + z * d.se], ci_method="estimate +- 1.96 se (design-based)",
                    method="unbiased (Example 2, eq. 3), weighted", n=d.n, anchors=[float(a), float(b)],
                    deff=d.deff, design=design.describe(), weighted_n=d.weighted_n,
                    inference=number_wald_inference(d.mean, d.se))


def null_extras(left: np.ndarray, counts: np.ndarray) -> dict:
    """``n_null``, the rows with a null report (respondents who reported nothing), where
    there are any.  A weighted fit leaves them out as the unweighted one does, as a domain
    of the sample: the design's strata and PSUs are the whole table's and a null row's
    weight counts nowhere (``survey``'s ``subset``; :mod:`.weighted`)."""
    nulls = count_nulls(left, counts)
    return {"n_null": nulls} if nulls else {}


def _mle(q: Query, l: np.ndarray, r: np.ndarray, c: np.ndarray, extra_null: dict) -> Result:
    """``mle(normal | logistic)``: the fitted law (a cdf) or its moment, with their intervals."""
    family = named_args(q)[0]
    pl, pr, owner = report_model(q.mechanism).likelihood_pieces(l, r)
    fit = parametric_mle(pl, pr, owner, c, family)
    if not fit.converged:
        raise BackendError(Diagnostic("B020", f"the mle({family}) fit did not reach the maximum of the "
                                      f"likelihood after {fit.iterations} iterations",
                                      hint="the reports may not identify a location and a scale (too few "
                                           "distinct intervals); try npmle"))
    extras = {"method": f"mle({family})", "n": fit.n, "loglik": fit.loglik, "iterations": fit.iterations,
              "converged": fit.converged,
              "parameters": {"location": fit.location, "scale": fit.scale}, **extra_null}
    se_loc, se_scale = np.sqrt(np.maximum(np.diag(fit.cov), 0.0))
    if q.estimand.kind == "cdf":
        extras["se"] = {"location": float(se_loc), "scale": float(se_scale)}
        return Estimate({"location": fit.location, "scale": fit.scale}, **extras,
                        inference=_location_scale_inference(fit.location, fit.scale, se_loc, se_scale, fit.cov))
    order = _order(q)
    value, se = fit.moment(order)
    extras.update(_mle_interval(fit, order, value, se))
    return Estimate(value, **extras, inference=_mle_inference(fit, order, value, se))


def _npmle(q: Query, l: np.ndarray, r: np.ndarray, c: np.ndarray, kind: str, extra_null: dict, *,
           band: bool | Any, seed: int | None, groups: int | None) -> Result:
    """``npmle``: the fitted F (a cdf, with its band) or its moment with the jackknife's interval."""
    mech = q.mechanism
    rm = report_model(mech)
    fit = fit_npmle(mech, l, r, c, band=band)
    extras = fit.extras()
    extras.update(extra_null)
    extras.update(rm.extras())
    if q.estimand.kind == "cdf":
        if fit.band is not None:
            extras["band"] = fit.band
        distribution = DistributionFit(fit.result, l, r, c, rm.disclose is None,
                                       moment=partial(npmle_moment, fit, mech, l, r, c))
        return Estimate(_npmle_steps(fit, rm, extras), **extras, fit=distribution)
    value, moment_extras, ci = _npmle_moment(fit, mech, l, r, c, _order(q), kind=kind, seed=seed, groups=groups)
    extras.update(moment_extras)
    inference = Inference(f"estimate +- t(df = {ci.df}) se, {ci.method}", ci.at,
                          (lambda: np.array([[ci.se ** 2]])) if np.isfinite(ci.se) else None,
                          ci.note or "no standard error")
    return Estimate(value, **extras, inference=inference)


def _npmle_steps(fit: Fit, rm: ReportModel, extras: dict) -> StepFunction:
    """The fitted F as a step function; for data with written ends (censored data) the
    innermost intervals with their own brackets, also as ``extras["innermost"]`` (closed
    ends are data ends too)."""
    if not rm.written_ends:
        return fit.step_function()
    on = np.asarray(fit.result.mass) > 0
    iv = np.asarray(fit.result.intervals, dtype=float)[on]
    wl, wr, written = written_intervals(iv[:, 0], iv[:, 1], support_of(rm.variable))
    extras["innermost"] = written.tolist()
    return StepFunction(tuple((float(a), float(b)) for a, b in zip(wl, wr)),
                        tuple(float(m) for m in np.asarray(fit.result.mass)[on]))


def npmle_moment(fit: Any, mech: IntervalMechanism, l: np.ndarray, r: np.ndarray, c: np.ndarray, order: int, *,
                 kind: str = "population", seed: int | None = None, groups: int | None = None,
                 level: float = 0.95) -> tuple[float, dict]:
    """``int y^order dF_hat`` of an NPMLE fit of the distinct reports ``l, r, c``, with its
    jackknife standard error and ``level`` interval as extras (``se``, ``ci95``, ``range``
    ...): the one computation behind ``estimate moment(Y, k) by npmle`` and the API's
    ``result.moment(k)`` of a cdf estimate."""
    value, extras, _ = _npmle_moment(fit, mech, l, r, c, order, kind=kind, seed=seed, groups=groups, level=level)
    return value, extras


def _npmle_moment(fit: Any, mech: IntervalMechanism, l: np.ndarray, r: np.ndarray, c: np.ndarray, order: int, *,
                  kind: str = "population", seed: int | None = None, groups: int | None = None,
                  level: float = 0.95) -> tuple[float, dict, Any]:
    """:func:`npmle_moment`, and the :class:`~.resample.FunctionalInterval` behind
    its extras (for the interval at any level)."""
    rm = report_model(mech)
    lo, hi = support_of(mech.variable)
    extras: dict = {}
    intervals, mass = np.asarray(fit.result.intervals, dtype=float), np.asarray(fit.result.mass, dtype=float)
    if rm.written_ends:  # the ends as written ([25, 27], not (24.999999999999996, 27]) for the midpoints
        on = mass > 0
        wl, wr, _ = written_intervals(intervals[on, 0], intervals[on, 1])
        intervals, mass = np.column_stack([wl, wr]), mass[on]
    value, bounds = npmle_functional(intervals, mass, lambda y: y ** order, lo, hi)
    extras["range"] = list(bounds)
    extras["placement"] = ("each innermost interval's mass at its midpoint, the interval cut to the support; "
                           "at its finite end if it is still half-infinite; 'range' spans all placements")
    ranges = "on ranges" in fit.engine
    if ranges:
        groups = min(groups or resample.RANGE_FIT_GROUPS, resample.RANGE_FIT_GROUPS)
    if not fit.result.converged:
        ci = resample.no_interval(kind, "the NPMLE stopped before its maximum (see kkt): no standard error "
                                        "from refits of it")
    elif ranges and len(c) > resample.RANGE_FIT_MAX_REPORTS:
        ci = resample.no_interval(kind, f"{len(c)} distinct reports in two pieces each: the range fit is too "
                                        f"slow to refit for a jackknife beyond {resample.RANGE_FIT_MAX_REPORTS} "
                                        "(no standard error)")
    else:
        ci = resample.npmle_moment_interval(l, r, c, order,
                                            refit=lambda L, R, C: fit_npmle(mech, L, R, C).result,
                                            lower=lo, upper=hi, kind=kind, seed=seed, center=value, groups=groups,
                                            level=level)
    extras.update(ci.extras())
    extras["target"] = _target(kind, order)
    return value, extras, ci


# ---- standard errors: which question, and the interval beside them -----------------------------------
#: below this many effective exact observations the printed intervals of a parametric fit
#: covered under 93% in simulation (docs/interval-privacy.md, "Coverage of the intervals")
MLE_EFFECTIVE_N_NOTE = 20


def _z95() -> float:
    return float(scipy.special.ndtri(0.975))


def _target(kind: str, order: int) -> str:
    phi = "Y" if order == 1 else f"Y^{order}"
    if kind == "conditional":
        return f"the respondents' own mean of {phi}, their values held fixed (privacy noise only)"
    return f"the population's E[{phi}] (sampling and privacy noise)"


def se_kind(q: Query) -> str:
    """The ``se`` option of the estimator (``population`` by default), refused with B140
    where no honest conditional standard error exists."""
    kind = q.method.options.get("se", "population") if q.method is not None else "population"
    if kind != "conditional":
        return "population"
    mech, est, method = q.mechanism, q.estimand, q.method.name
    if method == "mle":
        raise BackendError(Diagnostic(
            "B140", f"se = conditional is not offered for {method}({named_args(q)[0]}): given the respondents' "
                    "values a parametric fit is not centred on their mean (its conditional mean is "
                    "I^-1 E[score | Y], not the sample mean), so an interval with only the privacy noise "
                    "around it would miss that mean",
            hint="for the respondents' own mean use 'by npmle(se = conditional)' (or 'by unbiased(se = "
                 "conditional)' for Case-I uniform anchors); or drop the option (se = population)"))
    if est is not None and est.kind == "cdf":
        raise BackendError(Diagnostic(
            "B140", "se = conditional is not offered for a cdf: the pointwise band bounds the population's F; "
                    "no band for the respondents' own distribution is derived",
            hint="drop the option (se = population), or ask for mean/moment by npmle(se = conditional)"))
    refusal = report_model(mech).conditional_se_refusal()
    if refusal is not None:
        raise BackendError(Diagnostic("B140", refusal, hint="use se = population (the default)"))
    return "conditional"


def number_wald_inference(value: float, se: float, method: str = "estimate +- z se") -> Inference:
    """A number's Wald intervals at any level and its variance ``se^2`` (the Python API);
    the numeric LDP means' too."""
    def interval(level: float) -> tuple[np.ndarray, np.ndarray]:
        z = z_quantile(level)
        return np.array([value - z * se]), np.array([value + z * se])

    return Inference(method, interval, lambda: np.array([[float(se) ** 2]]))


def _mle_inference(fit: Any, order: int, value: float, se: float) -> Inference:
    """A parametric fit's moment: the profile likelihood interval at any level where
    :func:`_mle_interval` gives it at 95%, else Wald's; the variance ``se^2``."""
    if fit.profile_interval(order) is None:
        return number_wald_inference(value, se, "estimate +- z se (Wald, delta method)")

    def interval(level: float) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = fit.profile_interval(order, level)
        return np.array([lo]), np.array([hi])

    return Inference("profile likelihood ratio, chi-square(1)", interval, lambda: np.array([[float(se) ** 2]]))


def _location_scale_inference(location: float, scale: float, se_loc: float, se_scale: float,
                              cov: np.ndarray) -> Inference:
    """A fitted law's (location, scale): the observed-information covariance, and Wald
    intervals, the scale's on the log scale (so that they stay above 0)."""
    def interval(level: float) -> tuple[np.ndarray, np.ndarray]:
        z = z_quantile(level)
        spread = np.exp(z * se_scale / scale) if scale > 0 else np.inf
        return (np.array([location - z * se_loc, scale / spread]),
                np.array([location + z * se_loc, scale * spread]))

    return Inference("estimate +- z se (location); scale */ exp(z se / scale) (the log scale's Wald)", interval,
                     lambda: np.asarray(cov, dtype=float))


def _mle_interval(fit: Any, order: int, value: float, se: float) -> dict:
    """``se`` (observed information, delta method) and the profile-likelihood ``ci95`` of a moment."""
    out = {"se": se, "se_kind": "population", "target": _target("population", order)}
    interval = fit.profile_interval(order)
    if interval is not None:
        out["ci95"] = list(interval)
        out["ci_method"] = "profile likelihood ratio, chi-square(1) (Wald covered less at n = 100-200)"
    else:
        z = _z95()
        out["ci95"] = [value - z * se, value + z * se]
        out["ci_method"] = "estimate +- 1.96 se (Wald, delta method)"
    n_eff = fit.effective_n()
    out["effective_n"] = n_eff
    if not n_eff >= MLE_EFFECTIVE_N_NOTE:
        out["coverage_note"] = (f"the reports carry about as much information on the location as {n_eff:.0f} exact "
                                f"values (fewer than {MLE_EFFECTIVE_N_NOTE}): in simulation such intervals covered "
                                "under 93% (E[Y^2] about 90%; docs/interval-privacy.md)")
    return out
