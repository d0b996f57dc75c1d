"""Design comparisons and planning: which mechanism, which epsilon, how many respondents.

A ``compare`` block names candidate mechanisms for one estimand; each is judged on the
criteria of :data:`privspec.model.query_kinds.CRITERIA`, every one computed by the query that
already answers it (one path through the back ends: ``avar`` for the utility criteria,
``coverage``/``leakage``/``epsilon`` for privacy, ``estimate`` under ``simulate`` for the
simulated values). A criterion that does not apply to a candidate is n/a with the
reason the back end gave, never an error.

Beside the table:

* **ranks** per criterion (1 best; ties share a rank);
* **Pareto frontiers** of each utility criterion against each privacy criterion named:
  a candidate is dominated when another is at least as good on both and better on one;
* **planning**: the fewest respondents each candidate needs for each utility target
  (``max_se``, ``ci_width``, ``power``; :mod:`.planning`), the power of the block's
  test at n and its curve over n;
* **inverse design** for candidates with one free parameter (``grr(race, epsilon =
  eps)`` with ``parameter eps > 0 <= 8``): the most private value meeting the utility
  targets at n, and the best utility meeting the privacy targets, found on a grid over
  the parameter's range and refined by bisection where a target's verdict changes.

Examples
--------
>>> import privspec
>>> spec = privspec.load('''
... variable x: categorical {a, b, c}
... population x ~ categorical(1/2, 3/10, 1/5)
... compare d for distribution(x) at n = 500 target max_se <= 0.05 {
...     pairs = subset(x, sizes {2: 1})
...     rr    = grr(x, epsilon = 2)
... } by max_se, prediction, epsilon''')
>>> doc = spec.compare()["d"].value
>>> [c["name"] for c in doc["candidates"]], doc["frontiers"][0]["x"]
(['pairs', 'rr'], 'prediction')
>>> doc["candidates"][1]["sample_size"]["max_se <= 0.05"] <= 500
True
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import functools
import math
from typing import Any, Callable, Sequence

import numpy as np
import sympy
from scipy import stats

from privspec.errors import BackendError, Diagnostic, PrivspecError
from privspec.model.graph import (Compare, Estimand, Method, ModelGraph, Parameter, Plan, Query, SubsetDesign, SubsetMechanism,
                     Target)
from privspec.model.query_kinds import CRITERIA, FINITE, INTERVAL, ORACLE, Answers, family_of
from privspec.results.result import Result
from privspec.results.values import Matrix, Table
from privspec.backends import backend_for, register
from privspec.backends.design import planning
from privspec.backends.core.compile import channel_of
from privspec.backends.finite.truth import Truth, report_table
from privspec.backends.core.populations import population_vector

#: points of the grid an inverse design scans before refining (and of a power curve)
INVERSE_GRID = 17
#: bisection steps refining an inverse design's boundary (the range / 2^steps)
INVERSE_STEPS = 24
UTILITY_FROM_AVAR = ("avar_trace", "avar_max", "max_se", "ci_width", "mse")
PRIVACY_QUERIES = {"coverage": ("coverage", "size"), "size": ("leakage", "size"),
                   "mutual_information": ("leakage", "mutual_information"),
                   "prediction": ("leakage", "prediction")}


class NotApplicable(Exception):
    """A criterion that does not apply to a candidate; the message says why, and
    ``diagnostic`` is the back end's own where one refused (a planning query fails with it)."""

    def __init__(self, reason: str, diagnostic: Diagnostic | None = None):
        super().__init__(reason)
        self.diagnostic = diagnostic


def _not_applicable(e: PrivspecError) -> NotApplicable:
    """A back end's refusal as a criterion that does not apply (its first diagnostic kept)."""
    return NotApplicable(_reason(e), e.diagnostics[0] if e.diagnostics else None)


# ---- one candidate's criteria ------------------------------------------------------------------------
@dataclasses.dataclass
class Candidate:
    """A candidate mechanism with its estimator, and what the back ends say about it."""

    name: str
    mechanism: Any
    method: Method
    estimand: Estimand

    def query(self, kind: str, **kw: Any) -> Query:
        needs_estimand = kind in ("avar", "estimate")
        return Query(f"{self.name}.{kind}", kind, mechanism=self.mechanism,
                     estimand=self.estimand if needs_estimand else None,
                     method=self.method if needs_estimand else None, **kw)


def _answer(model: ModelGraph, q: Query, verb: str = "analyze", **options: Any) -> Result:
    backend = backend_for(q, verb)
    if backend is None:
        raise NotApplicable(f"no back end answers {q.kind} for this mechanism")
    try:
        return backend.answer(model, q, verb, **options)
    except PrivspecError as e:
        raise _not_applicable(e) from None
    except (ValueError, TypeError, np.linalg.LinAlgError, ZeroDivisionError) as e:
        raise NotApplicable(str(e)) from None


def _reason(e: PrivspecError) -> str:
    d = getattr(e, "diagnostics", None) or [getattr(e, "diagnostic", None)]
    d = [x for x in d if x is not None]
    if d:
        return f"{d[0].message} [{d[0].code}]"
    return str(e)


def _number(x: Any) -> float:
    if isinstance(x, sympy.Basic):
        if x.free_symbols:
            raise NotApplicable(f"symbolic in {', '.join(sorted(map(str, x.free_symbols)))}: give the parameters "
                                "values, or see the inverse design")
        if x is sympy.oo:
            return math.inf
        return float(x)
    return float(x)


def avar_of(model: ModelGraph, cand: Candidate) -> tuple[np.ndarray, tuple[str, ...], float]:
    """The candidate's asymptotic covariance (n Var), its labels, and the squared bias of
    its limit (0 but for estimators that do not converge to the estimand), from ``avar``."""
    r = _answer(model, cand.query("avar"))
    value = r.value
    bias2 = float(r.extras.get("bias_squared", 0.0))
    if isinstance(value, Matrix):
        data = value.data
        if isinstance(data, sympy.MatrixBase):
            if data.free_symbols:
                _number(data[0, 0] + sum(data))  # says which symbols
            data = np.array(data.evalf(17).tolist(), dtype=float)
        return np.asarray(data, dtype=float), tuple(value.rows), bias2
    return np.array([[_number(value)]]), (cand.estimand.kind,), bias2


def population_of(model: ModelGraph, cand: Candidate) -> np.ndarray:
    w = population_vector(model, list(cand.estimand.variables))
    if w is None:
        raise NotApplicable("no population is declared for " + ", ".join(v.name for v in cand.estimand.variables))
    return np.array([_number(x) for x in w], dtype=float)


class Evaluation:
    """Every criterion of one candidate at one model (memoized: the avar is computed once)."""

    def __init__(self, model: ModelGraph, cand: Candidate, plan: Plan):
        self.model, self.cand, self.plan = model, cand, plan
        self.alpha = float(plan.alpha)
        self._cache: dict[str, Any] = {}
        #: why nothing can be computed (a free parameter), or None
        self.free: NotApplicable | None = None

    def _memo(self, key: str, fn: Callable[[], Any]) -> Any:
        if self.free is not None:
            raise self.free
        if key not in self._cache:
            try:
                self._cache[key] = fn()
            except NotApplicable as e:
                self._cache[key] = e
            except PrivspecError as e:
                self._cache[key] = _not_applicable(e)
            except (ValueError, np.linalg.LinAlgError, ZeroDivisionError) as e:
                self._cache[key] = NotApplicable(str(e))
        got = self._cache[key]
        if isinstance(got, NotApplicable):
            raise got
        return got

    # -- utility ----------------------------------------------------------------------------------
    def avar(self) -> tuple[np.ndarray, tuple[str, ...]]:
        return self._memo("avar", lambda: avar_of(self.model, self.cand))[:2]

    def bias_squared(self) -> float:
        return self._memo("avar", lambda: avar_of(self.model, self.cand))[2]

    def diag(self) -> np.ndarray:
        d = np.maximum(np.diag(self.avar()[0]), 0.0)
        if not np.all(np.isfinite(d)):
            raise NotApplicable("the asymptotic variance is infinite: the estimator is not root-n consistent "
                                "for this design")
        return d

    def at(self, criterion: str, n: int) -> float:
        """The criterion's value at ``n`` respondents (privacy criteria do not depend on n)."""
        if criterion == "avar_trace":
            return float(self.diag().sum())
        if criterion == "mse":
            return float(self.diag().sum() / n + self.bias_squared())
        if criterion == "avar_max":
            return float(self.diag().max())
        if criterion == "max_se":
            return float(planning.standard_errors(self.diag(), n).max())
        if criterion == "ci_width":
            z = float(stats.norm.ppf(1 - self.alpha / 2))
            return float(2 * z * planning.standard_errors(self.diag(), n).max())
        if criterion == "efficiency":
            return self._memo("efficiency", self._efficiency)
        if criterion == "power":
            try:
                return float(self.power_function()(np.array([n]))[0])
            except ValueError as e:  # e.g. an estimate with no variance
                raise NotApplicable(str(e)) from None
        return self._memo(criterion, lambda: self._privacy(criterion))

    def _efficiency(self) -> float:
        est = self.cand.estimand
        mine = self.diag().sum()
        if est.kind in ("distribution", "joint"):
            best = Method("mle")
        elif self.cand.method.name == "mle":
            raise NotApplicable("a parametric fit: its efficiency is relative to its model (compare max_se)")
        else:
            best = Method("npmle")   # attains the information bound (Theorem 2's proof)
        if best.name == self.cand.method.name and not self.cand.method.args:
            return 1.0
        other = dataclasses.replace(self.cand, method=best)
        try:
            bound = np.diag(avar_of(self.model, other)[0]).sum()
        except NotApplicable as e:
            raise NotApplicable(f"the efficient estimator's variance ({best.name}): {e}") from None
        return float(bound / mine) if mine > 0 else math.nan

    def _privacy(self, criterion: str) -> float:
        mech = self.cand.mechanism
        if criterion == "epsilon":
            return _number(_answer(self.model, self.cand.query("epsilon")).value)
        if criterion == "individual":
            if family_of(mech) not in FINITE:
                raise NotApplicable("the worst case of one respondent is computed for finite mechanisms")
            t = Truth(self.model, mech)
            ch = t.full_channel
            w = t.numeric_w(t.w_full)
            K = ch.at(t.subs).Kn if t.subs else ch.Kn
            return worst_posterior(K, w)
        kind, metric = PRIVACY_QUERIES[criterion]
        if family_of(mech) in ("oracle", "multi_oracle"):
            raise NotApplicable(f"{metric} is computed from a channel's report probabilities; a frequency "
                                f"oracle's reports ({mech.protocol}: bit vectors, hashes, Hadamard indices) have no "
                                "channel here: compare it on epsilon")
        if metric != "size" and family_of(mech) in INTERVAL:
            raise NotApplicable(f"{metric} is computed for finite mechanisms")
        if metric == "size" and not _set_valued(mech):
            raise NotApplicable("reports are single categories: size coverage is for set-valued reports "
                                "(subset and interval mechanisms)")
        r = _answer(self.model, self.cand.query(kind, metrics=(metric,)))
        value = r.value[metric] if isinstance(r.value, dict) else r.value
        return _number(value)

    # -- planning ---------------------------------------------------------------------------------
    def power_function(self) -> Callable[[np.ndarray], np.ndarray]:
        """Power of the plan's test as a function of n (vectorized)."""
        return self._memo("power", self._power_function)

    def _power_function(self) -> Callable[[np.ndarray], np.ndarray]:
        test, alpha = self.plan.test, self.alpha
        if test is None:
            raise NotApplicable("no test to power: add test = ... to the settings")
        if test.kind == "independence":
            joint = self.report_joint(test.variables)
            return lambda n: np.asarray(planning.power_independence(n, joint, alpha), dtype=float)
        V, labels = self.avar()
        if test.label not in labels:
            raise NotApplicable(f"this estimate has no cell {test.label}")
        k = labels.index(test.label)
        var = float(V[k, k])
        if test.kind == "proportion":
            w = population_of(self.model, self.cand)
            delta = float(w[k]) - float(test.value)
            return lambda n: np.asarray(planning.power_proportion(n, delta, var, alpha), dtype=float)
        delta = float(test.value)
        return lambda n: np.asarray(planning.power_difference(n, delta, var, var, alpha), dtype=float)

    def report_joint(self, variables: Sequence[str]) -> np.ndarray:
        """``P(A = a, B = b)``: the table of two factors' reports at the population."""
        mech = self.cand.mechanism
        if family_of(mech) not in ("product", "rr_product"):
            raise NotApplicable("independence is tested on the reports of a product mechanism")
        t = Truth(self.model, mech)
        ch = t.full_channel
        lam = np.maximum((ch.at(t.subs) if t.subs else ch).Kn @ t.numeric_w(t.w_full), 0.0)
        vs = tuple(self.model.variables[v] for v in variables)
        q = Query("power", "test", mechanism=mech, estimand=Estimand("independence", vs))
        try:
            return np.asarray(report_table(q, lam / lam.sum())[2], dtype=float)
        except StopIteration:
            raise NotApplicable(f"no single factor observes each of {', '.join(variables)}") from None

    def sample_size(self, target: Target) -> int | None:
        """The fewest respondents meeting a utility target (None: not within
        :data:`privspec.backends.design.planning.N_MAX`, 10^9)."""
        if target.criterion not in ("max_se", "ci_width", "power"):
            raise NotApplicable(f"{target.criterion} does not depend on n")
        value = float(target.value)
        try:
            if target.criterion == "max_se":
                return planning.n_for_max_se(self.diag(), value, n_max=planning.N_MAX)
            if target.criterion == "ci_width":
                return planning.n_for_ci_width(self.diag(), value, self.alpha, n_max=planning.N_MAX)
            fn = self.power_function()
            return planning.n_for_power(lambda n: float(fn(np.array([n]))[0]), value, n_max=planning.N_MAX)
        except ValueError as e:
            raise NotApplicable(str(e)) from None


def _set_valued(mech: Any) -> bool:
    fam = getattr(mech, "family", None)
    if fam in ("subset", "interval"):
        return True
    return fam == "product" and all(getattr(f, "family", None) == "subset" for f in mech.factors)


def worst_posterior(K: np.ndarray, w: np.ndarray) -> float:
    """``max_o max_x Pr(X = x | O = o)`` over the reports ``o`` that can occur: what the
    most revealing report tells about one respondent (1: some report discloses a value).

    Examples
    --------
    >>> import numpy as np
    >>> p, q = np.e / (np.e + 1), 1 / (np.e + 1)       # Warner's RR, epsilon = 1
    >>> round(worst_posterior(np.array([[p, q], [q, p]]), np.array([0.5, 0.5])), 4)
    0.7311
    """
    J = np.asarray(K, dtype=float) * np.asarray(w, dtype=float)[None, :]
    lam = J.sum(axis=1)
    on = lam > 0
    return float((J[on].max(axis=1) / lam[on]).max())


# ---- the comparison ------------------------------------------------------------------------------------
def compare_designs(model: ModelGraph, comp: Compare, *, reps: int | None = None, seed: int | None = None
                    ) -> dict:
    """The comparison document of ``comp`` (the JSON of a ``comparison`` result).

    ``reps``: replications of ``simulate`` for the simulated value of each utility criterion
    and its Monte Carlo error.
    """
    plan = comp.plan
    n = comp.n or 1000
    cands = [Candidate(name, mech, comp.estimator(name), comp.estimand) for name, mech in comp.candidates]
    evals = {c.name: Evaluation(model, c, plan) for c in cands}
    criteria = list(comp.criteria)
    rows = []
    for c in cands:
        ev = evals[c.name]
        free = free_parameters(model, c.mechanism)
        if free:
            ev.free = NotApplicable(f"depends on {', '.join(p.name for p in free)}, which has no value: "
                                    "see the inverse design")
        values = {}
        for crit in criteria:
            try:
                values[crit] = {"value": ev.at(crit, n)}
            except NotApplicable as e:
                values[crit] = {"value": None, "na": str(e)}
        if reps:
            _simulated(model, c, ev, n, reps, seed, values)
        row: dict[str, Any] = {"name": c.name, "mechanism": describe_mechanism(model, c.mechanism),
                               "family": family_of(c.mechanism), "estimator": describe_method(c.method),
                               "values": values}
        try:
            labels = ev.avar()[1]
            row["se"] = {"labels": list(labels), "values": planning.standard_errors(ev.diag(), n).tolist()}
        except NotApplicable as e:
            row["se"] = None
            row["se_na"] = str(e)
        row["targets"], row["sample_size"] = _targets(ev, plan.targets, n)
        if plan.test is not None:
            try:
                fn = ev.power_function()
                grid = planning.n_grid(n)
                row["power"] = {"n": [int(x) for x in grid], "power": [float(p) for p in fn(grid)],
                                "at_n": float(fn(np.array([n]))[0])}
            except NotApplicable as e:
                row["power"] = None
                row["power_na"] = str(e)
        rows.append(row)
    _rank(rows, criteria)
    frontiers = _frontiers(rows, criteria)
    doc: dict[str, Any] = {
        "kind": "comparison", "name": comp.name, "title": model.title,
        "estimand": str(comp.estimand), "n": n, "alpha": float(plan.alpha),
        "criteria": criteria,
        "criterion_info": {c: {"side": CRITERIA[c].side, "better": CRITERIA[c].better, "meaning": CRITERIA[c].doc}
                           for c in criteria},
        "candidates": rows, "frontiers": frontiers,
        "targets": [{"criterion": t.criterion, "op": t.op, "value": float(t.value)} for t in plan.targets],
        "planning": _planning_text(plan),
        "inverse": inverse_designs(model, comp, cands, n),
        "reps": reps, "seed": seed,
        "spec": model.source.text if model.source is not None else None,
    }
    best = _recommend(rows, criteria, plan.targets)
    if best:
        doc["recommendation"] = best
    return doc


def describe_mechanism(model: ModelGraph, mech: Any) -> str:
    span = getattr(mech, "span", None)
    src = model.source
    if span is not None and src is not None:
        return " ".join(src.text[span.start:span.end].split())
    return getattr(mech, "name", None) or type(mech).__name__


def describe_method(m: Method) -> str:
    args = [a if isinstance(a, str) else f"{a[0]} = {a[1]}" if isinstance(a, tuple) else str(a) for a in m.args]
    return f"{m.name}({', '.join(args)})" if args else m.name


def _planning_text(plan: Plan) -> dict | None:
    if plan.test is None and not any(t.criterion == "power" for t in plan.targets):
        return None
    t = plan.test
    alpha = float(plan.alpha)
    words = None
    if t is not None and t.kind == "proportion":
        words = f"one-sample two-sided Wald test of w[{t.label}] = {float(t.value):g}"
    elif t is not None and t.kind == "difference":
        words = (f"two samples of n respondents each, two-sided Wald test of equal w[{t.label}] "
                 f"when they differ by {float(t.value):g}")
    elif t is not None:
        words = f"Pearson chi-square test of independence of {' and '.join(t.variables)} on the table of reports"
    power = next((float(x.value) for x in plan.targets if x.criterion == "power"), None)
    return {"test": f"{words} (level {alpha:g})" if words else None, "target_power": power}


def _targets(ev: Evaluation, targets: Sequence[Target], n: int) -> tuple[dict, dict]:
    met, sizes = {}, {}
    for t in targets:
        key = str(t)
        try:
            met[key] = bool(t.met(ev.at(t.criterion, n)))
        except NotApplicable as e:
            met[key] = None
            sizes[key] = None if CRITERIA[t.criterion].side == "privacy" else f"n/a: {e}"
            continue
        if t.criterion in ("max_se", "ci_width", "power"):
            try:
                sizes[key] = ev.sample_size(t)
            except NotApplicable as e:
                sizes[key] = f"n/a: {e}"
    return met, {k: v for k, v in sizes.items() if v is not None}


def _better(criterion: str, a: float, b: float) -> bool:
    """Whether ``a`` is strictly better than ``b`` on ``criterion``."""
    return a < b if CRITERIA[criterion].better == "lower" else a > b


def _rank(rows: list[dict], criteria: Sequence[str]) -> None:
    for r in rows:
        r["rank"] = {}
    for crit in criteria:
        scored = [(r, r["values"][crit]["value"]) for r in rows if r["values"][crit]["value"] is not None
                  and not math.isnan(r["values"][crit]["value"])]
        for r, v in scored:
            r["rank"][crit] = 1 + sum(1 for _, u in scored if _better(crit, u, v))
        for r in rows:
            r["rank"].setdefault(crit, None)


def _frontiers(rows: list[dict], criteria: Sequence[str]) -> list[dict]:
    """Pareto frontiers of each privacy criterion (x) against each utility criterion (y)."""
    utility = [c for c in criteria if CRITERIA[c].side == "utility"]
    privacy = [c for c in criteria if CRITERIA[c].side == "privacy"]
    out = []
    for r in rows:
        r["dominated_by"] = {}
    for x in privacy:
        for y in utility:
            pts = {r["name"]: (r["values"][x]["value"], r["values"][y]["value"]) for r in rows}
            ok = {k: v for k, v in pts.items() if v[0] is not None and v[1] is not None
                  and not any(math.isnan(t) for t in v)}
            dominated: dict[str, str] = {}
            for name, (a, b) in ok.items():
                better = [o for o, (c, d) in ok.items() if o != name
                          and not _better(x, a, c) and not _better(y, b, d) and (_better(x, c, a) or _better(y, d, b))]
                if better:
                    o = better[0]
                    c, d = ok[o]
                    on = [k for k, (u, v) in ((x, (c, a)), (y, (d, b))) if _better(k, u, v)]
                    dominated[name] = f"{o} is at least as good on {x} and {y}, better on {' and '.join(on)}"
                    next(r for r in rows if r["name"] == name)["dominated_by"][f"{y} vs {x}"] = better
            out.append({"x": x, "y": y, "frontier": [k for k in ok if k not in dominated],
                        "dominated": dominated,
                        "not_compared": {k: "n/a on " + (x if pts[k][0] is None else y) for k in pts if k not in ok}})
    for r in rows:
        on = [f for f in out if r["name"] in f["frontier"]]
        # on the frontier of some pair: the choice of someone who weighs that pair
        r["pareto"] = bool(on) or not out
        r["frontiers_on"] = [f"{f['y']} vs {f['x']}" for f in on]
    return out


def _recommend(rows: list[dict], criteria: Sequence[str], targets: Sequence[Target]) -> str | None:
    """One sentence: the most private candidate that meets every target at n, when one does."""
    privacy = [c for c in criteria if CRITERIA[c].side == "privacy"]
    if not targets or not privacy:
        return None
    ok = [r for r in rows if all(v is True for v in r["targets"].values())]
    if not ok:
        return "no candidate meets every target at n; see the sample sizes"
    p = privacy[0]
    scored = [r for r in ok if r["values"][p]["value"] is not None]
    if not scored:
        return f"{', '.join(r['name'] for r in ok)} meet every target at n"
    best = scored[0]
    for r in scored[1:]:
        if _better(p, r["values"][p]["value"], best["values"][p]["value"]):
            best = r
    return f"{best['name']}: the most private on {p} of the candidates that meet every target at n"


# ---- simulation ----------------------------------------------------------------------------------------
def _simulated(model: ModelGraph, cand: Candidate, ev: Evaluation, n: int, reps: int, seed: int | None,
               values: dict) -> None:
    """The utility criteria from ``reps`` replications (``simulate`` of the candidate's
    estimate), with Monte Carlo errors (normal theory for sample variances)."""
    wanted = [c for c in values if c in UTILITY_FROM_AVAR]
    for c in values:
        if c not in wanted:
            values[c].setdefault("simulated_na", "analytic: not a sampling quantity" if c != "efficiency"
                                 else "a ratio of asymptotic variances")
    if not wanted:
        return
    try:
        r = _answer(model, cand.query("estimate"), "simulate", n=n, reps=reps, seed=seed)
        S, full, R = _empirical_covariance(r)
    except NotApplicable as e:
        for c in wanted:
            values[c]["simulated_na"] = str(e)
        return
    mse = _empirical_mse(r, n)
    d = np.maximum(np.diag(S), 0.0)
    k = int(np.argmax(d))
    z = float(stats.norm.ppf(1 - ev.alpha / 2))
    # Var of a sample variance s^2 (normal theory): 2 sigma^4 / (R - 1); of tr S: 2 tr(Sigma^2) / (R - 1)
    tr_err = math.sqrt(2 * (float(np.sum(S * S)) if full else float(np.sum(d * d))) / (R - 1))
    sim = {"avar_trace": (float(d.sum()), tr_err),
           "avar_max": (float(d[k]), float(d[k]) * math.sqrt(2 / (R - 1))),
           "max_se": (math.sqrt(d[k] / n), math.sqrt(d[k] / n) / math.sqrt(2 * (R - 1))),
           "ci_width": (2 * z * math.sqrt(d[k] / n), 2 * z * math.sqrt(d[k] / n) / math.sqrt(2 * (R - 1)))}
    if mse is not None:
        sim["mse"] = mse
    for c in wanted:
        if c not in sim:
            values[c]["simulated_na"] = "the simulation gives no squared errors for this estimator"
            continue
        values[c]["simulated"], values[c]["mc_error"] = sim[c]
        if not full and c == "avar_trace":
            values[c]["mc_note"] = "error from the variances alone (the simulation keeps no covariances)"


def _empirical_mse(r: Result, n: int) -> tuple[float, float] | None:
    """The mean squared error summed over cells (bias included) and its Monte Carlo error."""
    v = r.value
    if "scaled_loss_mean" in v:                       # finite: n ||w_hat - w||^2 per replication
        return float(v["scaled_loss_mean"]) / n, float(v["scaled_loss_se"]) / n
    if "mse_se" in v and isinstance(v.get("truth"), Table):   # joints: the mean over cells
        cells = int(np.asarray(v["truth"].data).size)
        return float(v["mse"]) * cells, float(v["mse_se"]) * cells
    return None


def _empirical_covariance(r: Result) -> tuple[np.ndarray, bool, int]:
    """n Cov of the replications' estimates from a ``simulation`` result: (matrix, whether
    it is the full covariance or only its diagonal, replications)."""
    v, R = r.value, int(r.extras.get("reps", 0))
    if R < 2:
        raise NotApplicable("fewer than two replications succeeded")
    if isinstance(v.get("n_cov_empirical"), Matrix):
        return np.asarray(v["n_cov_empirical"].data, dtype=float), True, R
    emp = v.get("n_var_empirical")
    if isinstance(emp, Table):
        return np.diag(np.asarray(emp.data, dtype=float).ravel()), False, R
    if emp is not None:
        return np.array([[float(emp)]]), True, R
    raise NotApplicable("the simulation gives no empirical variance")


# ---- inverse design ------------------------------------------------------------------------------------
def free_parameters(model: ModelGraph, mech: Any) -> list[Parameter]:
    """The parameters without a value that ``mech`` depends on."""
    symbols = set()
    for f in dataclasses.fields(mech):
        symbols |= _symbols(getattr(mech, f.name))
    return [p for p in model.parameters.values() if p.value is None and p.symbol in symbols]


def _symbols(x: Any, depth: int = 0) -> set:
    if depth > 6:
        return set()
    if isinstance(x, sympy.Basic):
        return set(x.free_symbols)
    if isinstance(x, (tuple, list)):
        return set().union(*(_symbols(y, depth + 1) for y in x)) if x else set()
    if isinstance(x, dict):
        return set().union(*(_symbols(y, depth + 1) for y in list(x.keys()) + list(x.values()))) if x else set()
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return set().union(*(_symbols(getattr(x, f.name), depth + 1) for f in dataclasses.fields(x)))
    return set()


def parameter_range(p: Parameter) -> tuple[float, float]:
    """``(low, high)`` from the parameter's constraints (``parameter eps > 0 <= 8``); an open
    end moves in by 10^-6 of the range."""
    lo, hi = -math.inf, math.inf
    lo_open = hi_open = False
    for op, bound in p.constraints:
        b = float(bound)
        if op in (">", ">="):
            if b >= lo:
                lo, lo_open = b, op == ">"
        elif b <= hi:
            hi, hi_open = b, op == "<"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise NotApplicable(f"give {p.name} a range to search: parameter {p.name} > 0 <= 8")
    eps = (hi - lo) * 1e-6
    return lo + (eps if lo_open else 0.0), hi - (eps if hi_open else 0.0)


def size_parameter_range(mech: Any, p: Parameter, lo: float, hi: float) -> tuple[int, int] | None:
    """Where ``p`` is a subset size (``subset(race, sizes {k: 1})``): the whole numbers of
    ``[lo, hi]`` that are sizes of every variable it sizes (2..p); None where it sizes
    nothing."""
    ps = [m.variable.p for m in _subset_mechanisms(mech)
          if m.design.kind == "sizes" and any(k == p.symbol for k, _ in m.design.weights)]
    if not ps:
        return None
    return max(2, math.ceil(lo - 1e-9)), min(min(ps), math.floor(hi + 1e-9))


def _subset_mechanisms(mech: Any, depth: int = 0) -> list[SubsetMechanism]:
    if isinstance(mech, SubsetMechanism):
        return [mech]
    if depth > 6 or not dataclasses.is_dataclass(mech) or isinstance(mech, type):
        return []
    found = []
    for f in dataclasses.fields(mech):
        v = getattr(mech, f.name)
        for y in (v if isinstance(v, (tuple, list)) else (v,)):
            found += _subset_mechanisms(y, depth + 1)
    return found


def _value(x: float, integer: bool) -> sympy.Expr:
    return sympy.Integer(int(round(x))) if integer else sympy.Float(x, 17)


def _at(model: ModelGraph, p: Parameter, value: float, integer: bool = False) -> ModelGraph:
    params = dict(model.parameters)
    params[p.name] = dataclasses.replace(p, value=_value(value, integer))
    return dataclasses.replace(model, parameters=params)


def bind(x: Any, values: dict, depth: int = 0) -> Any:
    """``x`` (a mechanism, its laws and designs) with the parameters in ``values`` replaced
    by their values everywhere in it, so that every back end sees plain numbers."""
    if depth > 8:
        return x
    if isinstance(x, SubsetDesign) and x.kind == "sizes" and any(isinstance(k, sympy.Basic) for k, _ in x.weights):
        # a size bound to a whole number becomes an int; one size given twice adds its weights
        merged: dict = {}
        for k, w in x.weights:
            k = k.subs(values) if isinstance(k, sympy.Basic) else k
            if isinstance(k, sympy.Basic):
                if not k.is_integer:
                    raise NotApplicable(f"a subset size must be a whole number, not {k}")
                k = int(k)
            merged[k] = merged.get(k, 0) + bind(w, values, depth + 1)
        return dataclasses.replace(x, weights=tuple(merged.items()))
    if isinstance(x, sympy.Basic):
        return x.subs(values) if x.free_symbols & set(values) else x
    if isinstance(x, tuple):
        return tuple(bind(y, values, depth + 1) for y in x)
    if isinstance(x, list):
        return [bind(y, values, depth + 1) for y in x]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        changes = {}
        for f in dataclasses.fields(x):
            if not f.init:
                continue
            old = getattr(x, f.name)
            new = bind(old, values, depth + 1)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(x, **changes) if changes else x
    return x


def inverse_designs(model: ModelGraph, comp: Compare, cands: Sequence[Candidate], n: int) -> list[dict]:
    """For each candidate with one free parameter: the most private value meeting the
    utility targets at n, and the best utility meeting the privacy targets."""
    out = []
    criteria = list(comp.criteria)
    privacies = [c for c in criteria if CRITERIA[c].side == "privacy"] or ["epsilon"]
    utility = next((c for c in criteria if CRITERIA[c].side == "utility"), "max_se")
    u_targets = [t for t in comp.plan.targets if CRITERIA[t.criterion].side == "utility"]
    p_targets = [t for t in comp.plan.targets if CRITERIA[t.criterion].side == "privacy"]
    for c in cands:
        params = free_parameters(model, c.mechanism)
        if not params:
            continue
        entry: dict[str, Any] = {"candidate": c.name, "parameter": ", ".join(p.name for p in params),
                                 "privacy": privacies[0], "utility": utility}
        if len(params) > 1:
            entry["none"] = "more than one free parameter: give all but one a value"
            out.append(entry)
            continue
        p = params[0]
        try:
            lo, hi = parameter_range(p)
        except NotApplicable as e:
            entry["none"] = str(e)
            out.append(entry)
            continue
        sizes = size_parameter_range(c.mechanism, p, lo, hi)
        integer = sizes is not None
        if integer:
            lo, hi = sizes
            if lo > hi:
                entry["none"] = f"no whole number in the range of {p.name} is a subset size (2..p)"
                out.append(entry)
                continue
        entry["range"] = [lo, hi]

        @functools.lru_cache(maxsize=None)
        def evaluation(x: float) -> Evaluation:
            # one per value: the feasibility test and the score at a value share its avar
            bound = dataclasses.replace(c, mechanism=bind(c.mechanism, {p.symbol: _value(x, integer)}))
            return Evaluation(_at(model, p, x, integer), bound, comp.plan)

        def criteria_at(x: float, names: Sequence[str]) -> dict[str, float]:
            ev = evaluation(x)
            return {k: ev.at(k, n) for k in names}

        def meets(x: float, targets: Sequence[Target]) -> bool:
            try:
                got = criteria_at(x, [t.criterion for t in targets])
            except NotApplicable:
                return False
            return all(t.met(got[t.criterion]) for t in targets)

        # privacy is measured by the first privacy criterion that tells this family's values
        # apart (epsilon is inf for every subset design: its coverage is the measure there)
        privacy = next((k for k in privacies if _finite_at(criteria_at, (lo + hi) / 2, k)), privacies[0])
        entry["privacy"] = privacy
        if integer:
            entry["integer"] = True
        names = sorted({privacy, utility} | {t.criterion for t in comp.plan.targets})
        # the most private value meeting the utility targets at n; the best utility meeting the privacy ones
        for key, targets, objective, word, at_n in (("most_private", u_targets, privacy, "meets", f" at n = {n}"),
                                                    ("best_utility", p_targets, utility, "at", "")):
            if not targets:
                continue
            search = _best_whole if integer else _best_feasible
            x = search(lambda v: meets(v, targets), lo, hi, lambda v: _score(criteria_at, v, objective))
            text = ", ".join(map(str, targets))
            if x is None:
                entry[key] = {"none": f"no value of {p.name} in [{lo:g}, {hi:g}] meets {text}{at_n}"}
                continue
            try:
                vals: dict = criteria_at(x, names)
            except NotApplicable as e:
                vals = {"n/a": str(e)}
            entry[key] = {"value": x, word: text, "criteria": vals}
        out.append(entry)
    return out


def _finite_at(criteria_at: Callable, x: float, criterion: str) -> bool:
    try:
        return math.isfinite(criteria_at(x, [criterion])[criterion])
    except NotApplicable:
        return False


def _best_whole(feasible: Callable[[float], bool], lo: int, hi: int, score: Callable[[float], float]
                ) -> int | None:
    """The best-scoring feasible whole number in ``lo..hi`` (a subset size: few values, each
    is tried); the smallest among equals."""
    ok = [k for k in range(lo, hi + 1) if feasible(k)]
    return min(ok, key=lambda k: (score(k), k)) if ok else None


def _score(criteria_at: Callable, x: float, criterion: str) -> float:
    """Smaller is better."""
    try:
        v = criteria_at(x, [criterion])[criterion]
    except NotApplicable:
        return math.inf
    return v if CRITERIA[criterion].better == "lower" else -v


def _best_feasible(feasible: Callable[[float], bool], lo: float, hi: float, score: Callable[[float], float]
                   ) -> float | None:
    """The best-scoring feasible value: a grid over [lo, hi], then bisection between the best
    feasible grid point and its infeasible neighbour (where the optimum sits on the
    boundary of the feasible set, as it does for monotone privacy-utility trade-offs)."""
    grid = np.linspace(lo, hi, INVERSE_GRID)
    ok = [bool(feasible(float(x))) for x in grid]
    if not any(ok):
        return None
    scores = [score(float(x)) if f else math.inf for x, f in zip(grid, ok)]
    i = int(np.argmin(scores))
    best = float(grid[i])
    for j in (i - 1, i + 1):
        if 0 <= j < len(grid) and not ok[j]:
            a, b = best, float(grid[j])      # a feasible, b not
            for _ in range(INVERSE_STEPS):
                m = (a + b) / 2
                if feasible(m):
                    a = m
                else:
                    b = m
            if score(a) <= score(best):
                best = a
    return best


# ---- planning queries ----------------------------------------------------------------------------------
def plan_query(model: ModelGraph, q: Query) -> Result:
    """``sample_size(...)`` and ``power(...)``."""
    cand = Candidate(q.name, q.mechanism, q.method, q.estimand)
    ev = Evaluation(model, cand, q.plan)
    try:
        if q.kind == "power":
            n = int(q.plan.n)
            fn = ev.power_function()
            grid = planning.n_grid(n)
            extras = {"n": n, "test": _planning_text(q.plan)["test"], "estimator": describe_method(q.method),
                      "curve": {"n": [int(x) for x in grid], "power": [float(p) for p in fn(grid)]}}
            return Result("power", float(fn(np.array([n]))[0]), extras)
        target = q.plan.targets[0]
        size = ev.sample_size(target)
    except NotApplicable as e:
        # a back end's refusal (B416: an epsilon too small for floating point) in its own words
        d = e.diagnostic if e.diagnostic is not None else Diagnostic("B150", str(e))
        raise BackendError(dataclasses.replace(d, span=q.span)) from None
    extras = {"target": str(target), "estimator": describe_method(q.method)}
    if q.plan.test is not None:
        extras["test"] = _planning_text(q.plan)["test"]
    if size is None:
        raise BackendError(Diagnostic("B151", f"{target} is not reached with up to {planning.N_MAX:,} respondents",
                                      span=q.span, hint=_unreached_hint(target)))
    extras["achieved"] = ev.at(target.criterion, size)
    extras["at_n_minus_1"] = ev.at(target.criterion, size - 1) if size > 1 else None
    return Result("sample_size", size, extras, fit=CriterionCurve(target.criterion, float(target.value),
                                                                 functools.partial(ev.at, target.criterion)))


@dataclass(frozen=True)
class CriterionCurve:
    """A planning query's criterion as a function of n (``at(n)``), with its target value:
    what a ``sample_size`` result plots (the Python API; never serialized)."""

    criterion: str
    target: float
    at: Callable[[int], float]

    def over(self, n_center: int) -> tuple[np.ndarray, np.ndarray]:
        """The criterion on :func:`privspec.backends.design.planning.n_grid` around ``n_center``."""
        grid = planning.n_grid(max(int(n_center), 1))
        return grid, np.array([self.at(int(n)) for n in grid], dtype=float)


def _unreached_hint(target: Target) -> str:
    """What to do when no n up to planning.N_MAX meets ``target``."""
    if target.criterion == "power":
        return "ask for a smaller power, or a test of a larger difference"
    return (f"ask for a larger {target.criterion}: it falls as 1/sqrt(n), so at {planning.N_MAX:,} respondents "
            "it is about 1/30,000 of its value at n = 1")


@register
class ComparisonBackend:
    """Compare blocks, and the planning queries ``sample_size`` and ``power``."""

    REGISTER_NAME = "comparison"
    ANSWERS = (Answers(("sample_size", "power"), FINITE + INTERVAL + ORACLE),)

    def supports(self, query: Query, verb: str) -> bool:
        return any(row.matches(query, verb) for row in self.ANSWERS)

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        return plan_query(model, query)

    def compares(self, compare: Compare) -> bool:
        return True

    def compare(self, model: ModelGraph, compare: Compare, *, reps: int | None = None,
                seed: int | None = None, **_: Any) -> Result:
        return Result("comparison", compare_designs(model, compare, reps=reps, seed=seed))
