"""The back end for interval mechanisms (the interval-privacy paper).

Answers, for ``interval``, ``selective`` and ``progressive`` mechanisms:

* ``coverage(M)`` and ``leakage(M, size)`` — tau(M) = E[L(S_Z)] and 1 - tau
  (:mod:`.coverage`, which says whether it is exact, quadrature or
  quasi-Monte Carlo); on ``run`` also the data-based estimate, on ``simulate`` the
  empirical mean of L(S_Z);
* ``leakage(M, prediction)`` — the chance that the best guess from a report is within the
  compare block's ``tolerance`` of the truth, and the worst report's (:mod:`.guessing`);
* ``epsilon(M)`` — inf: a report excludes the values outside it with certainty;
* ``optimal_anchor(mean(X), M)`` — Theorem 2's density and the information bounds;
* ``avar(...)`` — where an asymptotic variance exists (Example 2's estimator, Case-I
  NPMLE functionals, parametric maximum likelihood);
* ``estimate`` — ``mean`` by ``unbiased`` (Example 2), ``cdf``/``mean``/``moment`` by
  ``npmle`` (the engine of :mod:`.npmle`, for intervals, points and reports that
  are unions of pieces) or ``mle(normal | logistic)``, ``regression`` by
  ``iterative(REGRESSOR[, NOISE])`` (Algorithm 1, :mod:`.regression`), on
  ``run`` (data) and ``simulate`` (replications from the population);
* ``privatize`` — reports drawn per respondent (:mod:`.sampling`), seeded,
  rows kept in order.

Interval-censored data as they come (``censored(Y, ...)``, :class:`CensoredBackend`) go
through the same estimators: their ends, closed or open as the spec or each row says,
become half-open intervals of doubles (:meth:`.mechanisms.Censored.encoded`,
exact), and there is no anchor, so coverage, epsilon, privatize and simulate are refused
(B106).

Data enter the estimators (:mod:`.estimate`, fitting the NPMLE in :mod:`.fit`) as distinct
reports with counts (one ``np.unique``).

Nothing here branches on a mechanism's kind: each mechanism's report model
(:func:`.reports.report_model`, the one place that knows the kinds) says which
columns to read and how, where its anchors fall, what a report allows, whether it has
anchors at all (``has_anchors``: censored data do not), which standard errors are honest,
how to cover and how to draw.  The back end branches only on those stated capabilities.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import sympy

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.query_kinds import QUERY_KINDS, Answers, analytic
from privspec.model.graph import IntervalMechanism, ModelGraph, Query
from privspec.results.kinds import Coverage, Epsilon, Estimate, Leakage, OptimalAnchor
from privspec.results.result import Result
from privspec.results.values import Vector
from privspec.backends import register
from privspec.backends.core.memory import reuse_freed_memory
from privspec.backends.core.rowrandom import RowRandom, stream_of
from privspec.backends.core.numbers import parse_numbers
from privspec.backends.data.checks import check_no_missing, require_columns
from privspec.backends.data.survey import design_tally
from privspec.backends.data.tally import Tally
from privspec.backends.interval.avar import avar
from privspec.backends.interval.coverage import composition_bound, ensemble_coverage
from privspec.backends.interval.estimate import estimate_from_reports, named_args, weighted_unbiased
from privspec.backends.interval.estimators import information_bound, optimal_anchor
from privspec.backends.interval.guessing import Guess, prediction_of
from privspec.backends.interval.fit import aggregate, count_nulls, fit_npmle
from privspec.backends.interval.laws import law_distribution, population_law, support_of
from privspec.backends.interval.mechanisms import format_ranges
from privspec.backends.interval.ranges import range_coverage
from privspec.backends.interval.weighted import METHODS as WEIGHTED_METHODS, weighted_fit
from privspec.backends.interval.weighted_regression import weighted_interval_regression
from privspec.backends.interval.weighted_iterative import weighted_iterative
from privspec.backends.interval.regression import SCALE_VIF_LIMIT, iterative_regression
from privspec.backends.interval.reports import is_interval_family, report_model, values_and_rows
from privspec.backends.interval.simulate import simulate_query

#: what the interval back end answers (the registry reads it; :mod:`privspec.model.query_kinds`)
_ANSWERS = (
    Answers(("coverage", "leakage", "epsilon", "optimal_anchor", "avar", "composition"), ("interval",)),
    Answers(("estimate",), ("interval",), ("run", "simulate")),
)
#: censored data: every query lands on the censored back end, so that those that do not
#: apply (no anchors: coverage, epsilon, avar, simulate) say why (B106)
_CENSORED_ANSWERS = (
    Answers(tuple(k for k, q in QUERY_KINDS.items() if "censored" in q.families), ("censored",)),
)
#: query kinds answered without data
ANALYTIC = analytic(_ANSWERS)


def _is_interval(mech: Any) -> bool:
    """A privacy mechanism of the interval family: one with anchors (censored data, which
    have none, go to their own back end, below)."""
    return is_interval_family(mech) and report_model(mech).has_anchors


def _is_censored(mech: Any) -> bool:
    """Interval data without anchors (``censored(...)``): what the censored back end reads."""
    return is_interval_family(mech) and not report_model(mech).has_anchors


def _value(x: Any) -> Any:
    """Exact sympy numbers stay exact; everything else becomes a float."""
    if isinstance(x, sympy.Basic):
        return x
    return float(x)



# ---- data --------------------------------------------------------------------------------------------
def _guess(model: ModelGraph, q: Query) -> Guess:
    """Prediction within the plan's tolerance (:mod:`.guessing`): partitions by iid anchors
    (Case I, Case II, canonical) without an acceptable range; B135 for the others and
    without a tolerance or a population."""
    mech = q.mechanism
    tolerance = q.plan.tolerance if q.plan is not None else None
    if tolerance is None:
        raise BackendError(Diagnostic("B135", f"prediction of the continuous {mech.variable.name} needs a tolerance: "
                                              "add tolerance = T to the compare block's settings",
                                      hint="a guess within T of the true value counts as right"))
    if not isinstance(mech, IntervalMechanism) or mech.disclose is not None or mech.scheme == "ring":
        raise BackendError(Diagnostic("B135", "prediction is computed for case1, case2 and canonical designs without "
                                              "an acceptable range (not for ring, selective or progressive ones)"))
    pop = population_law(model, mech.variable)
    if pop is None:
        raise BackendError(Diagnostic("B135", f"prediction needs a population for {mech.variable.name}",
                                      hint=f"population {mech.variable.name} ~ normal(0, 1)"))
    return prediction_of(law_distribution(pop), law_distribution(mech.anchor), mech.m - 1,
                         float(_value(tolerance)))


def raw_values(mechanism: Any, data: pd.DataFrame | Tally) -> np.ndarray:
    """The raw values of the mechanism's variable, correctly rounded and checked (D003,
    D004, D105 not a finite number, D106 outside the support): one per row of a frame, or
    per distinct tuple of a tally (the check before a file is privatized in pieces, which
    names the file's rows)."""
    var = mechanism.variable
    column = var.name
    values, where = values_and_rows(data)
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
    return np.column_stack([parse_numbers(frame[col])[0] for col in columns]) if columns \
        else np.empty((len(frame), 0))


def _identification(fit: Any, covariates: list[str]) -> dict:
    """The scale's VIF and, when it is over the limit, a note saying what the reports do identify."""
    if fit.scale_vif is None:
        return {}
    out = {"scale_vif": fit.scale_vif}
    if fit.scale_vif > SCALE_VIF_LIMIT:
        ratio = ", ".join(f"{name} {b / fit.scale:.4g}" for name, b in zip(("intercept", *covariates), fit.coefficients))
        out["note"] = (f"weakly identified: the noise scale's variance inflation factor is {fit.scale_vif:.3g} "
                       f"(over {SCALE_VIF_LIMIT:g}), so the reports fix the coefficients only relative to the noise "
                       f"scale (coefficient / noise_scale: {ratio}), not each alone; anchors spread wider than the "
                       "noise identify both")
    return out


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

    def weighted(self, query: Query) -> str:
        """What of ``query`` has no version with survey weights ("" for Example 2's mean, a
        mean of per-report terms: :func:`.estimate.weighted_unbiased`)."""
        est = query.estimand
        if query.kind == "estimate" and est is not None and query.method is not None:
            if est.kind == "mean" and (est.order or 1) == 1 and query.method.name == "unbiased":
                return ""
            if est.kind in ("cdf", "mean", "moment") and query.method.name in WEIGHTED_METHODS:
                return ""
            if est.kind == "regression":
                return ""       # :mod:`.weighted_regression` (linear, normal), :mod:`.weighted_iterative`
        what = f"{query.kind} queries of a {est.kind}" if est is not None else f"{query.kind} queries"
        return (f"{what} from interval mechanisms (weighted: the mean by unbiased, Example 2; cdf, mean and "
                "moment by npmle or mle; a regression by iterative)")

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        if verb == "simulate":
            return simulate_query(self.analytic, model, query, n=options["n"], reps=options["reps"],
                                  seed=options.get("seed"))
        if query.kind in ANALYTIC:
            result = self.analytic(model, query)
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
        column = mechanism.variable.name
        y = raw_values(mechanism, frame)
        rng = RowRandom(seed, rows=range(offset, offset + len(y)), stream=stream_of(mechanism))
        left, right = report_model(mechanism).draw(model, y, rng)
        return pd.DataFrame({column: format_ranges(left, right)}, index=frame.index)

    # -- analytic queries --------------------------------------------------------------------------------
    def analytic(self, model: ModelGraph, q: Query, kind: str | None = None) -> Result:
        """The answer without data to ``q`` asked as the query kind ``kind`` (``q.kind`` by
        default; ``simulate`` asks a leakage query's coverage): :attr:`ANALYTIC_METHODS` says
        which method gives it."""
        return self.ANALYTIC_METHODS[kind or q.kind](self, model, q)

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
        return Coverage(_value(cov.value) if cov.method != "symbolic" else cov.value, **extras)

    def _leakage(self, model: ModelGraph, q: Query) -> Result:
        metrics = q.metrics or ("size",)
        value: dict = {}
        meaning, evaluation = [], []
        if "size" in metrics:
            cov = self._coverage(model, q)
            value["size"] = 1 - cov.value if isinstance(cov.value, sympy.Basic) else 1.0 - cov.value
            meaning.append("size: 1 - tau (Implication 3)")
            evaluation.append(cov.evaluation)
        guessed = [m for m in metrics if m in ("prediction", "individual")]
        if guessed:
            guess = _guess(model, q)
            value.update({m: guess.value if m == "prediction" else guess.individual for m in guessed})
            meaning.append(f"prediction: E[max_x P(|X - x| <= {_value(q.plan.tolerance)} | report)], the chance "
                           "that the best guess from a report is within the tolerance; individual: that chance "
                           "after the worst report")
            evaluation.append(guess.evaluation)
        return Leakage({m: value[m] for m in metrics}, meaning="; ".join(meaning), evaluation="; ".join(evaluation))

    def _epsilon(self, model: ModelGraph, q: Query) -> Result:
        return Epsilon(sympy.oo, reason="a report excludes the values outside its range with certainty: "
                                        "Pr(Z = z | Y = y2) = 0 < Pr(Z = z | Y = y1) for y1 in S_z, y2 outside it, "
                                        "so no finite epsilon bounds the ratio (interval privacy and local DP meet "
                                        "only in the trivial mechanism: Proposition 3)")

    def _optimal_anchor(self, model: ModelGraph, q: Query) -> Result:
        var = q.estimand.variables[0]
        pop = population_law(model, var)
        order = q.estimand.order or 1
        if pop is None:
            u = sympy.Symbol("u", real=True)
            F = sympy.Function(f"F_{var.name}")(u)
            c = sympy.Symbol("c_phi", positive=True)
            return OptimalAnchor(c * sympy.sqrt(F * (1 - F)),
                                 note=f"no population for {var.name}: Theorem 2's density up to its constant",
                                 variable="u")
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
        return OptimalAnchor(density, **extras)

    def _avar(self, model: ModelGraph, q: Query) -> Result:
        return avar(model, q)

    # -- on data --------------------------------------------------------------------------------------------
    def _coverage_on_data(self, model: ModelGraph, q: Query, analytic: Result, data: Any) -> Result:
        mech = q.mechanism
        column = mech.variable.name
        bound = data is not None and (mech.name in data.per_mechanism or
                                      (data.default is not None and column in data.default_columns()))
        if not bound:  # coverage needs no data: the analytic value, and why no estimate is beside it
            return analytic.with_fields(data=f"no reports of {mech.name} were given (--data {mech.name}=FILE): "
                                             "the analytic value only")
        rm = report_model(mech)
        left, right, counts = rm.read_counts(_engine(mech, q, data), column)
        nulls = count_nulls(left, counts)
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
        return Coverage(est if pop is None else analytic.value, **extras)

    def _estimate(self, model: ModelGraph, q: Query, data: Any, seed: int | None = None) -> Result:
        mech = q.mechanism
        est = q.estimand
        column = est.variables[0].name
        if est.kind == "regression":
            return self._regression(model, q, data, seed)
        design = getattr(data, "design", None)
        if design is not None:   # the mean by unbiased (weighted says so before the query gets here)
            rm = report_model(mech)
            tally = design_tally(_engine(mech, q, data), design, rm.columns(column))
            left, right = rm.read(tally, column)
            if q.method.name == "unbiased":
                return weighted_unbiased(q, left, right, tally, design)
            return weighted_fit(model, q, left, right, tally, design, seed)
        # the read's arrays and then the fit's reuse the memory freed before them: one block
        # over both (1e7 Case-II reports with the band, after another job in the process:
        # 1.7-2.1 s of the kernel's time -> 0.8-1.0, where the read's memory came fresh each
        # time and the fit's again after it)
        with reuse_freed_memory():
            left, right, counts = report_model(mech).read_counts(_engine(mech, q, data), column)
            return estimate_from_reports(model, q, left, right, band=est.kind == "cdf", seed=seed, counts=counts)

    def _regression(self, model: ModelGraph, q: Query, data: Any, seed: int | None) -> Result:
        mech = q.mechanism
        response, covariates = q.estimand.variables[0].name, [v.name for v in q.estimand.variables[1:]]
        columns = list(dict.fromkeys(report_model(mech).columns(response) + covariates))
        design = getattr(data, "design", None)
        if design is not None:
            tally = design_tally(_engine(mech, q, data), design, columns)
        else:
            tally = _load(mech, q, data, columns)[0]
        tally.check_no_missing(covariates)
        left, right = report_model(mech).read(tally, response)
        X = _numeric(tally.values, covariates)
        bad = ~np.isfinite(X)
        if bad.any():
            rows = tally.locate(bad.any(axis=1))
            raise DataError(Diagnostic("D107", f"{len(rows)} covariate value(s) are not numbers",
                                       rows=rows, columns=tuple(sorted({covariates[c] for c in np.nonzero(bad)[1]})),
                                       hint="covariates are plain numeric columns"))
        named = named_args(q)
        regressor = named[0] if named else "linear"
        noise = named[1] if len(named) > 1 else "normal"
        if design is not None and (regressor, noise) == ("linear", "normal"):   # Algorithm 1 is an EM
            return weighted_interval_regression(q, tally, left, right, X, covariates, design,
                                                support_of(mech.variable), report_model(mech).disclose)
        if design is not None:
            return weighted_iterative(q, tally, left, right, X, covariates, design, support_of(mech.variable),
                                      report_model(mech).disclose, regressor, noise, seed)
        # the regressors fit rows: each distinct tuple repeated by its count (canonical order)
        X, left, right = tally.expand(X), tally.expand(left), tally.expand(right)
        keep = ~np.isnan(left)
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
            extras.update(_identification(fit, covariates))
        else:
            value = Vector(tuple(covariates), tuple(float(v) for v in fit.model.feature_importances_))
            extras["meaning"] = "feature importances of the fitted ensemble (its predictions: the Python API)"
        return Estimate(value, **extras)

    def _composition(self, model: ModelGraph, q: Query) -> Result:
        """Theorem 4: ``1 - tau(M1 + ... + Mk) <= sum_j (1 - tau(Mj))``; the ensemble's own
        coverage (anchors pooled, acceptable ranges united) by quadrature beside it."""
        mechs = [model.mechanisms[name] for name in q.scope]
        pop = population_law(model, q.mechanism.variable)
        if pop is None:
            raise BackendError(Diagnostic("B107", f"composition needs a population for {q.mechanism.variable.name}",
                                          hint=f"population {q.mechanism.variable.name} ~ normal(0, 1)"))
        taus = [float(_value(report_model(m).coverage(pop).value)) for m in mechs]
        ensemble = ensemble_coverage(law_distribution(pop), mechs)
        return Coverage(ensemble, metric="size", evaluation="quadrature over pairs of values (scipy)",
                        meaning="tau(M1 + ... + Mk) of the ensemble (Definition 3), at least Theorem 4's bound "
                                "1 - sum_j (1 - tau(Mj))",
                        coverages=dict(zip(q.scope, taus)), bound=composition_bound(taus))

    #: query kind -> the method answering it without data (the kinds of :data:`ANALYTIC`)
    ANALYTIC_METHODS = {"coverage": _coverage, "leakage": _leakage, "epsilon": _epsilon,
                        "optimal_anchor": _optimal_anchor, "avar": _avar, "composition": _composition}


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

    def weighted(self, query: Query) -> str:
        return f"{query.kind} queries of censored data"

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
        if isinstance(result.target, str):  # the coarsening here is censoring, not privacy noise
            result = result.with_fields(target=result.target.replace("privacy noise", "censoring"))
        return result
