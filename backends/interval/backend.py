"""The back end for interval mechanisms (the interval-privacy paper).

Answers, for ``interval``, ``selective`` and ``progressive`` mechanisms:

* ``coverage(M)`` and ``leakage(M, size)`` — tau(M) = E[L(S_Z)] and 1 - tau
  (:mod:`.interval_coverage`, which says whether it is exact, quadrature or
  quasi-Monte Carlo); on ``run`` also the data-based estimate, on ``simulate`` the
  empirical mean of L(S_Z);
* ``epsilon(M)`` — inf: a report excludes the values outside it with certainty;
* ``optimal_anchor(mean(X), M)`` — Theorem 2's density and the information bounds;
* ``avar(...)`` — where an asymptotic variance exists (Example 2's estimator, Case-I
  NPMLE functionals, parametric maximum likelihood);
* ``estimate`` — ``mean`` by ``unbiased`` (Example 2), ``cdf``/``mean``/``moment`` by
  ``npmle`` (the engine of :mod:`.npmle`, for intervals, points and reports that
  are unions of pieces) or ``mle(normal | logistic)``, ``regression`` by
  ``iterative(REGRESSOR[, NOISE])`` (Algorithm 1, :mod:`.interval_regression`), on
  ``run`` (data) and ``simulate`` (replications from the population);
* ``privatize`` — reports drawn per respondent (:mod:`.interval_mechanisms`), seeded,
  rows kept in order.

Interval-censored data as they come (``censored(Y, ...)``, :class:`CensoredBackend`) go
through the same estimators: their ends, closed or open as the spec or each row says,
become half-open intervals of doubles (:meth:`.interval_mechanisms.Censored.encoded`,
exact), and there is no anchor, so coverage, epsilon, privatize and simulate are refused
(B106).

Data enter the estimators as distinct reports with counts (one ``np.unique``).

Nothing here branches on a mechanism's kind: each mechanism's report model
(:func:`.interval_reports.report_model`, the one place that knows the kinds) says which
columns to read and how, where its anchors fall, what a report allows, whether it has
anchors at all (``has_anchors``: censored data do not), which standard errors are honest,
how to cover and how to draw.  The back end branches only on those stated capabilities.
"""
from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import sympy

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.query_kinds import QUERY_KINDS, Answers, analytic
from privspec.model.graph import ModelGraph, Query
from privspec.results.values import Inference, Result, StepFunction, Vector
from privspec.backends import register
from privspec.backends.data.checks import check_no_missing
from privspec.backends.data.tally import Tally
from privspec.backends.interval.estimators import (example2_mean, information_bound, npmle_functional,
                                  optimal_anchor, parametric_mle)
from privspec.backends.interval.mechanisms import (_f, format_ranges, law_distribution, population_law, range_coverage,
                                  support_of, written_intervals)
from privspec.backends.interval.reports import is_interval_family, report_model
from privspec.backends.interval.simulate import simulate_query

#: what the interval back end answers (the registry reads it; :mod:`privspec.model.query_kinds`)
_ANSWERS = (
    Answers(("coverage", "leakage", "epsilon", "optimal_anchor", "avar"), ("interval",)),
    Answers(("estimate",), ("interval",), ("run", "simulate")),
)
#: censored data: every query lands on the censored back end, so that those that do not
#: apply (no anchors: coverage, epsilon, avar, simulate) say why (B106)
_CENSORED_ANSWERS = (
    Answers(tuple(k for k, q in QUERY_KINDS.items() if "censored" in q.families), ("censored",)),
)
#: query kinds answered without data
ANALYTIC = analytic(_ANSWERS)
#: where `run` bounds F: the fit's quartiles (the profile band costs a constrained fit per point)
BAND_QUANTILES = (0.25, 0.5, 0.75)


def _is_interval(mech: Any) -> bool:
    """A privacy mechanism of the interval family: one with anchors (censored data, which
    have none, go to their own back end, below)."""
    return is_interval_family(mech) and report_model(mech).has_anchors


def _is_censored(mech: Any) -> bool:
    """Interval data without anchors (``censored(...)``): what the censored back end reads."""
    return is_interval_family(mech) and not report_model(mech).has_anchors


def _named_args(q: Query) -> list:
    """The method's positional arguments (keyword options are (name, value) pairs)."""
    return [a for a in q.method.args if not isinstance(a, tuple)]


def _value(x: Any) -> Any:
    """Exact sympy numbers stay exact; everything else becomes a float."""
    if isinstance(x, sympy.Basic):
        return x
    return float(x)


# ---- data --------------------------------------------------------------------------------------------
def aggregate(left: np.ndarray, right: np.ndarray, counts: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct collected reports with counts (nulls left out): one sort, no loop.
    ``counts``: how many rows each entry stands for (a tally's), 1 each by default.

    >>> aggregate(np.array([1.0, 0.0, 1.0, np.nan]), np.array([2.0, 1.0, 2.0, np.nan]))
    (array([0., 1.]), array([1., 2.]), array([1., 2.]))
    """
    keep = ~np.isnan(left)
    pairs, inverse = np.unique(np.column_stack([left[keep], right[keep]]), axis=0, return_inverse=True)
    weights = None if counts is None else np.asarray(counts, dtype=float)[keep]
    c = np.bincount(np.asarray(inverse).ravel(), weights=weights, minlength=len(pairs))
    return pairs[:, 0], pairs[:, 1], c.astype(float)


def _nulls(left: np.ndarray, counts: np.ndarray | None) -> int:
    null = np.isnan(left)
    return int(null.sum() if counts is None else np.asarray(counts)[null].sum())


def raw_values(mechanism: Any, data: pd.DataFrame | Tally) -> np.ndarray:
    """The raw values of the mechanism's variable, correctly rounded and checked (D003,
    D004, D105 not a finite number, D106 outside the support): one per row of a frame, or
    per distinct tuple of a tally (the check before a file is privatized in pieces, which
    names the file's rows)."""
    from privspec.backends.core.numbers import parse_numbers
    from privspec.backends.data.checks import require_columns
    from privspec.backends.interval.reports import _entries

    var = mechanism.variable
    column = var.name
    values, where = _entries(data)
    if column not in values.columns:
        require_columns(values, [column], "the raw data")
    if isinstance(data, Tally):
        data.check_no_missing([column])
    else:
        check_no_missing(data, [column], "the raw data")
    y = parse_numbers(values[column])[0]  # correctly rounded
    bad = ~np.isfinite(y)
    if bad.any():
        rows = where(bad)
        raise DataError(Diagnostic("D105", f"{len(rows)} raw value(s) of {column} are not finite numbers",
                                   rows=rows, columns=(column,), hint="raw data hold the plain values"))
    lo, hi = support_of(var)
    out = (y < lo) | (y > hi)
    if out.any():
        rows = where(out)
        raise DataError(Diagnostic("D106", f"{len(rows)} raw value(s) of {column} outside its support "
                                           f"[{lo:g}, {hi:g}]", rows=rows, columns=(column,)))
    return y


# ---- interval-censored data as they come -------------------------------------------------------------
def _no_anchors(mech: Any, what: str) -> BackendError:
    """B106: a censored(...) mechanism has no anchors: what describes a privacy mechanism does not apply."""
    return BackendError(Diagnostic(
        "B106", f"no anchors: '{mech.name}' reads interval-censored data as they come (censored(...)), not "
                f"reports that privspec drew, so {what} does not apply",
        hint=f"estimate from the data: estimate cdf({mech.variable.name}) from {mech.name} by npmle (or mean, "
             "moment by npmle or mle(normal)); for privacy properties declare the mechanism that made the "
             "reports, interval(...)"))


def _engine(mech: Any, query: Query, data: Any) -> Any:
    """The engine that counts the table bound to the mechanism."""
    if data is None:
        raise BackendError(Diagnostic("B120", f"query '{query.name}' needs data",
                                      hint="privspec run SPEC --data FILE"))
    return data.engine_for(mech.name or query.name)


def _load(mech: Any, query: Query, data: Any, columns: list[str]) -> tuple[Tally, str]:
    """The counts of the distinct tuples of ``columns`` in the table bound to the mechanism."""
    engine = _engine(mech, query, data)
    return engine.tally(columns), data.path_for(mech.name or query.name)


def _numeric(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Numeric columns as correctly rounded floats (:func:`.data.parse_numbers`); NaN where a
    cell is not a number."""
    from privspec.backends.core.numbers import parse_numbers

    return np.column_stack([parse_numbers(frame[col])[0] for col in columns]) if columns \
        else np.empty((len(frame), 0))


# ---- fitting the NPMLE -----------------------------------------------------------------------------
class Fit:
    """An NPMLE and how it was fitted (``engine``: the method and what was done to the reports)."""

    def __init__(self, result: Any, engine: str, n: float, support: tuple[float, float], band=None):
        self.result = result
        self.engine = engine
        self.n = n
        self.support = support
        self.band = band

    def step_function(self) -> StepFunction:
        """Innermost intervals with mass, cut to the variable's support."""
        iv = np.asarray(self.result.intervals, dtype=float)
        mass = np.asarray(self.result.mass, dtype=float)
        on = mass > 0
        lo, hi = self.support
        a, b = np.maximum(iv[on, 0], lo), np.minimum(iv[on, 1], hi)
        return StepFunction(tuple((float(x), float(y)) for x, y in zip(a, b)), tuple(float(m) for m in mass[on]))

    def extras(self) -> dict:
        r = self.result
        out = {"loglik": float(r.loglik), "iterations": int(r.iterations), "kkt": float(r.kkt),
               "converged": bool(r.converged), "method": f"npmle ({self.engine})", "n": int(round(self.n))}
        return out


def fit_npmle(mech: Any, left: np.ndarray, right: np.ndarray, counts: np.ndarray, *,
              band: bool | Any = False) -> Fit:
    """The NPMLE of F from distinct reports with counts (nulls already left out).

    ``band``: True for the pointwise 95% band at the fit's quartiles (:data:`BAND_QUANTILES`),
    or the points (any finite numbers, an array) where to bound F.
    """
    rm = report_model(mech)
    support = support_of(mech.variable)
    disclose = rm.disclose
    n = float(counts.sum())
    if n == 0:
        raise DataError(Diagnostic("D103", "no report was collected: nothing to estimate from"))
    from privspec.backends.interval.npmle.estimator import cdf_confidence_band, npmle, npmle_pieces

    # one engine for every report (intervals, points, rings, pieces): no fallback, so a
    # failure of it surfaces (a DataError for bad reports, an internal error otherwise)
    if disclose is None:
        # the reports themselves: a ring range is one row of the engine (ring=True)
        ring = bool(np.any(left > right))
        with np.errstate(all="ignore"):
            result = npmle(left, right, counts, ring=ring)
        engine = "constrained Newton, cnm"
        fit = Fit(result, engine, n, support)
        want = band is not False and band is not None
        if want and ring:
            fit.band = {"note": "no band for ring designs"}
        elif want:
            x = _band_points(result, support) if band is True else np.unique(np.asarray(band, dtype=float))
            x = x[np.isfinite(x)]
            if len(x):
                try:
                    with np.errstate(all="ignore"):
                        lower, upper = cdf_confidence_band(result, left, right, counts, x, ring=ring)
                    fit.band = {"x": x.tolist(), "lower": np.asarray(lower).tolist(),
                                "upper": np.asarray(upper).tolist(), "level": 0.95,
                                "method": "profile likelihood ratio, critical value 2.486 (Banerjee-Wellner's "
                                          "law D at 0.96: a finite-sample calibration)"}
                    if band is True:
                        fit.band["coverage_note"] = (
                            "x are the fit's quartiles, chosen by the data: there the band covered 97-100% "
                            "in simulation, at points fixed in advance 94-96% (docs/interval-privacy.md)")
                except (ValueError, ArithmeticError) as e:  # a band is a bonus, the estimate stands
                    fit.band = {"note": f"no band: {e}"}
        return fit
    pl, pr, owner = rm.likelihood_pieces(left, right)
    pieces = np.bincount(owner, minlength=len(counts))
    if np.any(pieces == 0):
        raise DataError(Diagnostic("D104", "a report holds only values of the acceptable range, which "
                                           "would have been disclosed", hint="check the data against the mechanism"))
    if np.all(pieces == 1):
        # the acceptable range removed from each report leaves one interval
        with np.errstate(all="ignore"):
            result = npmle(pl, pr, counts[owner])
        return Fit(result, "constrained Newton, cnm; acceptable range taken out of each report", n, support)
    # reports in several pieces: the same engine on the pieces ("on ranges": their jackknife
    # is limited, interval_resample.RANGE_FIT_MAX_REPORTS); the fit on its support, as before
    with np.errstate(all="ignore"):
        result = npmle_pieces(pl, pr, owner, counts).support_only()
    return Fit(result, "constrained Newton on ranges; acceptable range taken out of each report", n, support)


def _band_points(result: Any, support: tuple[float, float]) -> np.ndarray:
    """Where to bound F: the fit's quartiles (right ends of innermost intervals), finite, in the support."""
    iv, mass = np.asarray(result.intervals, dtype=float), np.asarray(result.mass, dtype=float)
    cum = np.cumsum(mass)
    idx = np.searchsorted(cum, np.array(BAND_QUANTILES))
    x = iv[np.clip(idx, 0, len(iv) - 1), 1]
    x = x[np.isfinite(x) & (x >= support[0]) & (x <= support[1])]
    return np.unique(x)


# ---- the back end ---------------------------------------------------------------------------------
@register
class IntervalBackend:
    """Interval privacy: coverage, estimation from interval data, privatize and simulate."""

    REGISTER_NAME = "interval"
    PRIORITY = 10  # privatize: before the censored back end's refusal (disjoint anyway)
    ANSWERS = _ANSWERS

    # -- the runner's hooks ---------------------------------------------------------------------------
    def supports(self, query: Query, verb: str) -> bool:
        """Everything its ``ANSWERS`` cover: no finer condition."""
        return any(row.matches(query, verb) for row in self.ANSWERS)

    def privatizes(self, mechanism: Any) -> bool:
        return _is_interval(mechanism)

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        if verb == "simulate":
            return self._simulate(model, query, options)
        if query.kind in ANALYTIC:
            result = getattr(self, "_" + query.kind)(model, query)
            if verb == "run" and query.kind == "coverage":
                result = self._coverage_on_data(model, query, result, options.get("data"))
            return result
        return self._estimate(model, query, options.get("data"), seed=options.get("seed"))

    def privatize(self, model: ModelGraph, mechanism: Any, frame: pd.DataFrame, seed: int | None = None,
                  offset: int = 0) -> pd.DataFrame:
        """The reports of the variable on the raw table ``frame``: one column named after
        it, the rows and index of ``frame``, none of its columns.  Row ``i`` is the file's
        row ``offset + i``: its report depends on (seed, mechanism, that index, its value)
        only (:class:`~privspec.backends.core.rowrandom.RowRandom`)."""
        from privspec.backends.core.rowrandom import RowRandom, stream_of

        column = mechanism.variable.name
        y = raw_values(mechanism, frame)
        rng = RowRandom(seed, rows=range(offset, offset + len(y)), stream=stream_of(mechanism))
        left, right = report_model(mechanism).draw(model, y, rng)
        return pd.DataFrame({column: format_ranges(left, right)}, index=frame.index)

    # -- analytic queries --------------------------------------------------------------------------------
    def _coverage(self, model: ModelGraph, q: Query) -> Result:
        mech = q.mechanism
        pop = population_law(model, mech.variable)
        cov = report_model(mech).coverage(pop)
        extras = {"metric": "size", "meaning": "tau = E[L(S_Z)] (Definition 1)", "evaluation": cov.method}
        if cov.note:
            extras["note"] = cov.note
        extras.update({k: v for k, v in cov.extras.items() if k != "ignorability"})
        if "ignorability" in cov.extras:
            ig = cov.extras["ignorability"]
            extras["ignorability"] = {"condition_rho_le_p": ig["condition"], "p_w0_given_null": ig["p_w0_given_null"],
                                      "ignorable": ig["ignorable"], "rho_max": ig["rho_max"]}
        return Result("coverage", _value(cov.value) if cov.method != "symbolic" else cov.value, extras)

    def _leakage(self, model: ModelGraph, q: Query) -> Result:
        cov = self._coverage(model, q)
        value = cov.value
        leak = 1 - value if isinstance(value, sympy.Basic) else 1.0 - value
        extras = {"meaning": "size: 1 - tau (Implication 3)", "evaluation": cov.extras["evaluation"]}
        return Result("leakage", {m: leak for m in (q.metrics or ("size",))}, extras)

    def _epsilon(self, model: ModelGraph, q: Query) -> Result:
        return Result("epsilon", sympy.oo, {
            "reason": "a report excludes the values outside its range with certainty: Pr(Z = z | Y = y2) = 0 "
                      "< Pr(Z = z | Y = y1) for y1 in S_z, y2 outside it, so no finite epsilon bounds the ratio "
                      "(interval privacy and local DP meet only in the trivial mechanism: Proposition 3)"})

    def _optimal_anchor(self, model: ModelGraph, q: Query) -> Result:
        var = q.estimand.variables[0]
        pop = population_law(model, var)
        order = q.estimand.order or 1
        if pop is None:
            u = sympy.Symbol("u", real=True)
            F = sympy.Function(f"F_{var.name}")(u)
            c = sympy.Symbol("c_phi", positive=True)
            return Result("optimal_anchor", c * sympy.sqrt(F * (1 - F)),
                          {"note": f"no population for {var.name}: Theorem 2's density up to its constant",
                           "variable": "u"})
        density, u, c, how = optimal_anchor(pop, order)
        best, _ = information_bound(pop, None, order)
        current, outside = information_bound(pop, q.mechanism.anchor, order)
        lo, hi = pop.support()
        extras = {"variable": "u", "support": [lo, hi], "normalizing_constant": c, "evaluation": how,
                  "information_bound": best, "bound_with_mechanism_anchor": current,
                  "efficiency": best / current if current > 0 else float("nan"),
                  "meaning": "g(u) = c {F(u)(1 - F(u))}^(1/2) |phi'(u)| (Theorem 2); the bounds are "
                             "int phi'^2 F (1 - F) / p_U, the asymptotic variance of sqrt(n)(estimate - truth)"}
        if outside > 0:
            extras["unidentified_mass"] = outside
        return Result("optimal_anchor", density, extras)

    def _avar(self, model: ModelGraph, q: Query) -> Result:
        from privspec.backends.interval.avar import avar

        return avar(model, q)

    # -- on data --------------------------------------------------------------------------------------------
    def _coverage_on_data(self, model: ModelGraph, q: Query, analytic: Result, data: Any) -> Result:
        mech = q.mechanism
        column = mech.variable.name
        bound = data is not None and (mech.name in data.per_mechanism or
                                      (data.default is not None and column in data.default_columns()))
        if not bound:  # coverage needs no data: the analytic value, and why no estimate is beside it
            extras = dict(analytic.extras)
            extras["data"] = (f"no reports of {mech.name} were given (--data {mech.name}=FILE): "
                              "the analytic value only")
            return Result("coverage", analytic.value, extras)
        rm = report_model(mech)
        left, right, counts = rm.read_counts(_engine(mech, q, data), column)
        nulls = _nulls(left, counts)
        l, r, c = aggregate(left, right, counts)
        if nulls:  # a null report counts with coverage 1
            l, r, c = np.append(l, np.nan), np.append(r, np.nan), np.append(c, float(nulls))
        pop = population_law(model, mech.variable)
        if pop is not None:
            cdf, source = law_distribution(pop).cdf, "the population"
        else:
            keep = ~np.isnan(l)
            fit = fit_npmle(mech, l[keep], r[keep], c[keep])
            cdf, source = fit.result.cdf, "the NPMLE of F"
        est, how = rm.coverage_from_data(l, r, c, cdf)
        extras = dict(analytic.extras)
        extras.update({"estimate": est, "estimator": f"{how}, F from {source}", "n": int(c.sum())})
        # the individual coverages L(S_z) of the collected reports (Implication 3)
        keep = ~np.isnan(l)
        if keep.any():
            ind = range_coverage(l[keep], r[keep], cdf, rm.disclose)
            order = np.argsort(ind)
            cum = np.cumsum(c[keep][order]) / c[keep].sum()
            pick = lambda q: float(ind[order][min(np.searchsorted(cum, q), len(cum) - 1)])
            extras["individual"] = {"min": float(ind.min()), "quartiles": [pick(0.25), pick(0.5), pick(0.75)],
                                    "max": float(ind.max())}
        if pop is None:
            return Result("coverage", est, extras)
        return Result("coverage", analytic.value, extras)

    def _estimate(self, model: ModelGraph, q: Query, data: Any, seed: int | None = None) -> Result:
        mech = q.mechanism
        est = q.estimand
        column = est.variables[0].name
        if est.kind == "regression":
            return self._regression(model, q, data, seed)
        left, right, counts = report_model(mech).read_counts(_engine(mech, q, data), column)
        return estimate_from_reports(model, q, left, right, band=est.kind == "cdf", seed=seed, counts=counts)

    def _regression(self, model: ModelGraph, q: Query, data: Any, seed: int | None) -> Result:
        from privspec.backends.interval.regression import iterative_regression

        mech = q.mechanism
        response, covariates = q.estimand.variables[0].name, [v.name for v in q.estimand.variables[1:]]
        tally, path = _load(mech, q, data, list(dict.fromkeys(report_model(mech).columns(response) + covariates)))
        tally.check_no_missing(covariates)
        left, right = report_model(mech).read(tally, response)
        X = _numeric(tally.values, covariates)
        bad = ~np.isfinite(X)
        if bad.any():
            rows = tally.locate(bad.any(axis=1))
            raise DataError(Diagnostic("D107", f"{len(rows)} covariate value(s) are not numbers",
                                       rows=rows, columns=tuple(sorted({covariates[c] for c in np.nonzero(bad)[1]})),
                                       hint="covariates are plain numeric columns"))
        # the regressors fit rows: each distinct tuple repeated by its count (canonical order)
        X, left, right = tally.expand(X), tally.expand(left), tally.expand(right)
        keep = ~np.isnan(left)
        named = _named_args(q)
        regressor = named[0] if named else "linear"
        noise = named[1] if len(named) > 1 else "normal"
        fit = iterative_regression(X[keep], left[keep], right[keep], regressor, noise=noise,
                                   support=support_of(mech.variable), disclose=report_model(mech).disclose,
                                   seed=seed or 0,
                                   init="center")
        extras = {"method": f"iterative({regressor}) (Algorithm 1)", "noise": noise, "noise_scale": fit.scale,
                  "start": "f_0 = the location of the marginal law of the response fitted to the reports",
                  "iterations": fit.iterations, "converged": fit.converged, "n": int(keep.sum()),
                  "last_change": fit.history[-1]["change"] if fit.history else None}
        if regressor == "linear":
            value = Vector(("intercept", *covariates), tuple(float(b) for b in fit.coefficients))
        else:
            value = Vector(tuple(covariates), tuple(float(v) for v in fit.model.feature_importances_))
            extras["meaning"] = "feature importances of the fitted ensemble (its predictions: the Python API)"
        return Result("estimate", value, extras)

    # -- simulate -----------------------------------------------------------------------------------------
    def _simulate(self, model: ModelGraph, q: Query, options: dict) -> Result:
        return simulate_query(self, model, q, n=options["n"], reps=options["reps"], seed=options.get("seed"),
                              estimate_from_reports=estimate_from_reports)


@register
class CensoredBackend(IntervalBackend):
    """Interval-censored data as they come (``censored(Y, ...)``): estimation only.

    The estimators of the interval back end (NPMLE of ``F``, its moments with their
    jackknife, ``mle(normal | logistic)``, Algorithm 1's regression) on the observed
    sets; what describes a privacy mechanism (coverage, leakage, epsilon, avar from the
    design, privatize, simulate) is refused with B106: there are no anchors.
    """

    REGISTER_NAME = "interval_censored"
    PRIORITY = 11
    ANSWERS = _CENSORED_ANSWERS

    def supports(self, query: Query, verb: str) -> bool:
        # every query on censored data lands here, so that those that do not apply say why
        return _is_censored(query.mechanism)

    def privatizes(self, mechanism: Any) -> bool:
        return _is_censored(mechanism)

    def privatize(self, model: ModelGraph, mechanism: Any, frame: pd.DataFrame, seed: int | None = None,
                  **options: Any) -> pd.DataFrame:
        raise _no_anchors(mechanism, "privatize (it draws reports with a mechanism's anchors)")

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        if verb == "simulate":
            raise _no_anchors(query.mechanism, "simulate (it draws reports with a mechanism's anchors)")
        if query.kind == "avar":
            raise _no_anchors(query.mechanism, "avar (derived from a design's anchor law; 'run' gives standard errors "
                                     "from the data)")
        if query.kind != "estimate":
            raise _no_anchors(query.mechanism, f"{query.kind}({query.mechanism.name}) (a property of a privacy "
                                     "mechanism's design)")
        if verb != "run":
            raise BackendError(Diagnostic("B120", f"query '{query.name}' needs data",
                                          hint="privspec run SPEC --data FILE"))
        result = self._estimate(model, query, options.get("data"), seed=options.get("seed"))
        target = result.extras.get("target")
        if isinstance(target, str):  # the coarsening here is censoring, not privacy noise
            extras = dict(result.extras)
            extras["target"] = target.replace("privacy noise", "censoring")
            result = dataclasses.replace(result, extras=extras)
        return result


def estimate_from_reports(model: ModelGraph, q: Query, left: np.ndarray, right: np.ndarray, *,
                          band: bool | Any = False, seed: int | None = None,
                          jackknife_groups: int | None = None, counts: np.ndarray | None = None) -> Result:
    """An estimate query answered from reports (``left``, ``right``; NaN for nulls), each
    standing for ``counts`` rows (a tally's distinct reports; one row each by default).

    ``band``: True for the pointwise band of a cdf at the fit's quartiles, or the points
    to bound F at.  ``seed``: for the grouping of a delete-a-group jackknife (0 when None).
    ``jackknife_groups``: the most refits of an NPMLE functional's jackknife (default
    :data:`.interval_resample.JACKKNIFE_GROUPS`, fewer for the slower range fit).
    Every standard error says which question it answers (``se_kind``: the estimator
    option ``se = population | conditional``) and comes with the 95% interval printed
    beside it (``ci95``, made as ``ci_method`` says).
    """
    mech = q.mechanism
    rm = report_model(mech)
    est = q.estimand
    method = q.method.name
    kind = _se_kind(q)
    nulls = _nulls(left, counts)
    l, r, c = aggregate(left, right, counts)
    extra_null = {"n_null": nulls} if nulls else {}
    lo, hi = support_of(mech.variable)
    order = (est.order or 1) if est.kind in ("mean", "moment") else None
    if method == "unbiased":
        from privspec.backends.interval.estimators import example2_conditional_se

        a, b = _f(mech.anchor.support()[0]), _f(mech.anchor.support()[1])
        try:
            mu, se, n = example2_mean(l, r, c, a, b, lo, hi)
        except ValueError:
            raise DataError(Diagnostic("D108", "reports that are not Case-I reports (-inf, U] or (U, inf]",
                                       hint="Example 2 needs one anchor per respondent")) from None
        if kind == "conditional":
            se = example2_conditional_se(l, r, c, a, b, lo, hi)
        z = _z95()
        return Result("estimate", mu, {"se": se, "se_kind": kind, "target": _target(kind, 1),
                                       "ci95": [mu - z * se, mu + z * se], "ci_method": "estimate +- 1.96 se",
                                       "method": "unbiased (Example 2, eq. 3)", "n": n,
                                       "anchors": [float(a), float(b)], **extra_null},
                      inference=_wald_inference(mu, se))
    if method == "mle":
        family = _named_args(q)[0]
        pl, pr, owner = rm.likelihood_pieces(l, r)
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
        if est.kind == "cdf":
            extras["se"] = {"location": float(se_loc), "scale": float(se_scale)}
            return Result("estimate", {"location": fit.location, "scale": fit.scale}, extras,
                          inference=_location_scale_inference(fit.location, fit.scale, se_loc, se_scale, fit.cov))
        value, se = fit.moment(order)
        extras.update(_mle_interval(fit, order, value, se))
        return Result("estimate", value, extras, inference=_mle_inference(fit, order, value, se))
    fit = fit_npmle(mech, l, r, c, band=band)
    extras = fit.extras()
    extras.update(extra_null)
    extras.update(rm.extras())
    if est.kind == "cdf":
        if fit.band is not None:
            extras["band"] = fit.band
        if rm.written_ends:
            # the innermost intervals with their own brackets (closed ends are data ends too)
            on = np.asarray(fit.result.mass) > 0
            iv = np.asarray(fit.result.intervals, dtype=float)[on]
            wl, wr, written = written_intervals(iv[:, 0], iv[:, 1], (lo, hi))
            extras["innermost"] = written.tolist()
            steps = StepFunction(tuple((float(a), float(b)) for a, b in zip(wl, wr)),
                                 tuple(float(m) for m in np.asarray(fit.result.mass)[on]))
            return Result("estimate", steps, extras, fit=DistributionFit(fit.result, l, r, c, rm.disclose is None,
                                           moment=partial(npmle_moment, fit, mech, l, r, c)))
        return Result("estimate", fit.step_function(), extras,
                      fit=DistributionFit(fit.result, l, r, c, rm.disclose is None,
                                           moment=partial(npmle_moment, fit, mech, l, r, c)))
    value, moment_extras, ci = _npmle_moment(fit, mech, l, r, c, order, kind=kind, seed=seed,
                                             groups=jackknife_groups)
    extras.update(moment_extras)
    inference = Inference(f"estimate +- t(df = {ci.df}) se, {ci.method}", ci.at,
                          (lambda: np.array([[ci.se ** 2]])) if np.isfinite(ci.se) else None,
                          ci.note or "no standard error")
    return Result("estimate", value, extras, inference=inference)


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
    """:func:`npmle_moment`, and the :class:`~.interval_resample.FunctionalInterval` behind
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
    from privspec.backends.interval.resample import RANGE_FIT_GROUPS, RANGE_FIT_MAX_REPORTS, no_interval, npmle_moment_interval

    ranges = "on ranges" in fit.engine
    if ranges:
        groups = min(groups or RANGE_FIT_GROUPS, RANGE_FIT_GROUPS)
    if not fit.result.converged:
        ci = no_interval(kind, "the NPMLE stopped before its maximum (see kkt): no standard error from refits of it")
    elif ranges and len(c) > RANGE_FIT_MAX_REPORTS:
        ci = no_interval(kind, f"{len(c)} distinct reports in two pieces each: the range fit is too slow to refit "
                               f"for a jackknife beyond {RANGE_FIT_MAX_REPORTS} (no standard error)")
    else:
        ci = npmle_moment_interval(l, r, c, order,
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
    from scipy.special import ndtri

    return float(ndtri(0.975))


def _target(kind: str, order: int) -> str:
    phi = "Y" if order == 1 else f"Y^{order}"
    if kind == "conditional":
        return f"the respondents' own mean of {phi}, their values held fixed (privacy noise only)"
    return f"the population's E[{phi}] (sampling and privacy noise)"


def _se_kind(q: Query) -> str:
    """The ``se`` option of the estimator (``population`` by default), refused with B140
    where no honest conditional standard error exists."""
    kind = q.method.options.get("se", "population") if q.method is not None else "population"
    if kind != "conditional":
        return "population"
    mech, est, method = q.mechanism, q.estimand, q.method.name
    if method == "mle":
        raise BackendError(Diagnostic(
            "B140", f"se = conditional is not offered for {method}({_named_args(q)[0]}): given the respondents' "
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


def _wald_inference(value: float, se: float, method: str = "estimate +- z se") -> Inference:
    """A number's Wald intervals at any level and its variance ``se^2`` (the Python API)."""
    from scipy.special import ndtri

    def interval(level: float) -> tuple[np.ndarray, np.ndarray]:
        z = float(ndtri(0.5 + level / 2))
        return np.array([value - z * se]), np.array([value + z * se])

    return Inference(method, interval, lambda: np.array([[float(se) ** 2]]))


def _mle_inference(fit: Any, order: int, value: float, se: float) -> Inference:
    """A parametric fit's moment: the profile likelihood interval at any level where
    :func:`_mle_interval` gives it at 95%, else Wald's; the variance ``se^2``."""
    if fit.profile_interval(order) is None:
        return _wald_inference(value, se, "estimate +- z se (Wald, delta method)")

    def interval(level: float) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = fit.profile_interval(order, level)
        return np.array([lo]), np.array([hi])

    return Inference("profile likelihood ratio, chi-square(1)", interval, lambda: np.array([[float(se) ** 2]]))


def _location_scale_inference(location: float, scale: float, se_loc: float, se_scale: float,
                              cov: np.ndarray) -> Inference:
    """A fitted law's (location, scale): the observed-information covariance, and Wald
    intervals, the scale's on the log scale (so that they stay above 0)."""
    from scipy.special import ndtri

    def interval(level: float) -> tuple[np.ndarray, np.ndarray]:
        z = float(ndtri(0.5 + level / 2))
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


class DistributionFit:
    """The NPMLE behind a ``cdf`` estimate, for the Python API (never in the JSON): ``F``,
    its survival function and quantiles at any points, and the pointwise band at any
    points and level (:func:`privspec.backends.interval.npmle.estimator.cdf_confidence_band`).

    ``left``, ``right``, ``counts`` are the distinct reports the fit used; ``rows``: they
    are rows of the engine (an interval, a point or a ring each), so a band can be
    computed from them (not for reports less an acceptable range).
    """

    def __init__(self, result: Any, left: np.ndarray, right: np.ndarray, counts: np.ndarray, rows: bool,
                 moment: Any = None):
        self.result, self.left, self.right, self.counts, self.rows = result, left, right, counts, rows
        self._moment = moment

    def moment(self, order: int, level: float = 0.95, kind: str = "population", seed: int | None = None
               ) -> tuple[float, dict]:
        """``int y^order dF_hat`` and its jackknife extras, as ``estimate moment(Y, order)
        by npmle`` answers it (:func:`npmle_moment`)."""
        if self._moment is None:
            raise ValueError("this fit carries no moments")
        return self._moment(order, kind=kind, seed=seed, level=level)

    def cdf(self, x: Any) -> np.ndarray:
        return np.asarray(self.result.cdf(np.asarray(x, dtype=float)), dtype=float)

    def quantile(self, q: Any) -> np.ndarray:
        return np.asarray(self.result.quantile(np.asarray(q, dtype=float)), dtype=float)

    def band(self, x: Any, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
        if not self.rows:
            raise ValueError("no band for reports less an acceptable range (their pieces): estimate by "
                             "simulation instead")
        from privspec.backends.interval.npmle.estimator import cdf_confidence_band

        x = np.asarray(x, dtype=float)
        with np.errstate(all="ignore"):
            lower, upper = cdf_confidence_band(self.result, self.left, self.right, self.counts, x,
                                               level=1.0 - alpha, ring=bool(np.any(self.left > self.right)))
        return np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
