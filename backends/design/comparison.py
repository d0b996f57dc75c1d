"""Design comparisons and planning: which mechanism, which epsilon, how many respondents.

A ``compare`` block names candidate mechanisms for one estimand; each is judged on the
criteria it names, each evaluated by its :class:`privspec.backends.design.criteria.Criterion`
(the query that already answers it: ``avar`` for the utility criteria,
``coverage``/``leakage``/``epsilon`` for privacy, ``estimate`` under ``simulate`` for the
simulated values). A criterion that does not apply to a candidate is n/a with the
reason the back end gave, never an error.

Beside the table:

* **finite-sample honesty**: each utility value checked against a quick seeded simulation
  at n; where they differ by more than 10% the simulated value decides (ranks, frontiers,
  targets, the verdict) and the row says so (:mod:`privspec.backends.design.finite_sample`);
* **ranks** per criterion (1 best; ties share a rank);
* **Pareto frontiers** of each utility criterion against each privacy criterion named:
  a candidate is dominated when another is at least as good on both and better on one;
* **planning**: the fewest respondents each candidate needs for each utility target
  (``max_se``, ``ci_width``, ``power``; :mod:`.planning`), the power of the block's
  test at n and its curve over n;
* **inverse design** for candidates with one free parameter (``grr(race, epsilon =
  eps)`` with ``parameter eps > 0 <= 8``): the most private value meeting the utility
  targets at n, and the best utility meeting the privacy targets, found on a grid over
  the parameter's range and refined by bisection where a target's verdict changes
  (:mod:`privspec.backends.design.inverse`).

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
>>> [c.name for c in doc.candidates], doc.frontiers[0].x
(['pairs', 'rr'], 'prediction')
>>> doc.candidates[1].sample_size["max_se <= 0.05"] <= 500
True
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import functools
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import sympy

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import Compare, Method, ModelGraph, Parameter, Plan, Query, Target
from privspec.model.query_kinds import CRITERIA, FINITE, INTERVAL, NUMERIC, ORACLE, TWO_GROUP, Answers, family_of
from privspec.results.comparison import (CandidateRow, ComparisonDocument, CriterionValue, Frontier, InverseChoice,
                                         InverseDesign, Planning, PowerCurve, Recommendation, StandardErrors,
                                         TargetEntry)
from privspec.results.result import Result
from privspec.results.kinds import Comparison, Power, SampleSize
from privspec.backends import register
from privspec.backends.design import finite_sample, planning
from privspec.backends.design.criteria import REGISTRY, Candidate, Evaluation, NotApplicable, cv_cells, cv_flags
from privspec.backends.design.verdict import add_epsilon_fix, add_least_epsilon, recommend
from privspec.backends.design.robust import PopulationSet, population_set, robust_row
from privspec.backends.design.inverse import (best_feasible, best_whole, bind, finite_at, free_parameters,
                                              parameter_range, score, size_parameter_range)


# ---- the comparison ------------------------------------------------------------------------------------
def compare_designs(model: ModelGraph, comp: Compare, *, reps: int | None = None, seed: int | None = None
                    ) -> ComparisonDocument:
    """The comparison document of ``comp`` (the value of a ``comparison`` result).

    ``reps``: replications of ``simulate`` for the simulated value of each utility criterion
    and its Monte Carlo error; None: the quick check of :mod:`.finite_sample`; 0: no check.
    """
    plan = comp.plan
    n = comp.n or 1000
    criteria = list(comp.criteria)
    cands = [Candidate(name, mech, comp.estimator(name), comp.estimand) for name, mech in comp.candidates]
    free = {c.name: free_parameters(model, c.mechanism) for c in cands}
    pset = None if plan.populations is None else population_set(model, plan.populations)
    rows = [_row(model, c, free[c.name], plan, criteria, n, reps, seed, pset) for c in cands]
    # the values a verdict reads: the simulated one where the asymptotic one is unreliable
    points = {r.name: {k: v.decisive for k, v in r.values.items()} for r in rows}
    ranks = rank(points, criteria)
    # a design with a free parameter has no values here (its inverse design has them)
    fixed = {c.name: points[c.name] for c in cands if not free[c.name]}
    usable, left_out = frontier_criteria(fixed, criteria, len({r.mechanism for r in rows if r.name in fixed}) > 1)
    fronts, dominators = frontiers(fixed, usable)
    for r in rows:
        on = [f"{f.y} vs {f.x}" for f in fronts if r.name in f.frontier]
        r.rank, r.dominated_by = ranks[r.name], dominators.get(r.name, {})
        # on the frontier of some pair: the choice of someone who weighs that pair (no
        # frontier, or a free parameter: no verdict on dominance either way)
        r.pareto, r.frontiers_on = (bool(on), on) if fronts and r.name in fixed else (None, None)
    doc = ComparisonDocument(
        name=comp.name, title=model.title, estimand=str(comp.estimand), n=n, alpha=float(plan.alpha),
        criteria=criteria, criterion_info={c: REGISTRY[c].info for c in criteria}, candidates=rows,
        frontiers=fronts, not_on_frontiers=left_out,
        targets=[TargetEntry(t.criterion, t.op, float(t.value)) for t in plan.targets],
        planning=_planning(plan), inverse=inverse_designs(model, comp, cands, n), reps=reps, seed=seed,
        spec=model.source.text if model.source is not None else None,
        recommendation=None,
        populations=None if pset is None else pset.description + (f": not evaluated: {pset.none}" if pset.none else ""))
    doc.recommendation = recommend(rows, criteria, plan.targets, n, doc.inverse)
    _epsilon_advice(model, comp, cands, free, rows, doc.recommendation, n)
    return doc


def _epsilon_advice(model: ModelGraph, comp: Compare, cands: Sequence[Candidate], free: Mapping[str, list],
                    rows: Sequence[CandidateRow], rec: Recommendation | None, n: int) -> None:
    """Add to the verdict how far the recommended design's epsilon can go down at n, or,
    where no design meets the targets, the least epsilon at which each epsilon-design's
    mechanism would (searched once per mechanism: grr_1, grr_2 and grr_3 are one search)."""
    if rec is None:
        return
    if rec.candidate is not None:
        chosen = next(c for c in cands if c.name == rec.candidate)
        tuned = least_epsilon(model, comp, chosen, n)
        if tuned is not None:
            add_least_epsilon(rec, tuned, next(r for r in rows if r.name == chosen.name), n)
        return
    searched: list[Any] = []
    for c in cands:
        if free[c.name] or getattr(c.mechanism, "epsilon", None) is None:
            continue
        same = dataclasses.replace(c.mechanism, epsilon=sympy.Symbol("epsilon"), **(
            {"name": None} if hasattr(c.mechanism, "name") else {}))
        if same in searched:
            continue
        searched.append(same)
        tuned = least_epsilon(model, comp, c, n, EPSILON_SEARCH_MAX)
        if tuned is not None:
            add_epsilon_fix(rec, tuned, comp.plan.targets, n)


def _row(model: ModelGraph, cand: Candidate, free: Sequence[Parameter], plan: Plan, criteria: Sequence[str],
         n: int, reps: int | None, seed: int | None, pset: PopulationSet | None = None) -> CandidateRow:
    """One candidate's criteria at n (and from ``reps`` replications), standard errors,
    targets and power, and their worst cases over the plausible populations ``pset``; its
    ranks and frontiers are the document's to fill in (``free``: its parameters without a
    value, which leave every criterion to the inverse design)."""
    ev = Evaluation(model, cand, plan)
    if free:
        ev.free = NotApplicable(f"depends on {', '.join(p.name for p in free)}, which has no value: "
                                "see the inverse design")
    values = {}
    for crit in criteria:
        try:
            values[crit] = CriterionValue(ev.at(crit, n))
        except NotApplicable as e:
            values[crit] = CriterionValue(None, na=str(e))
    if reps:
        _simulated(model, cand, ev, n, reps, seed, values)
        flags = finite_sample.judge(values, n, ev.free is None and finite_sample.no_closed_form(ev))
    else:  # reps None: the quick check; 0: none asked
        flags = [] if reps == 0 else finite_sample.check(model, cand, ev, n, values, seed)
    row = CandidateRow(cand.name, describe_mechanism(model, cand.mechanism), family_of(cand.mechanism),
                       describe_method(cand.method), values, flags=flags)
    try:
        labels = ev.avar()[1]
        row.se = StandardErrors(list(labels), planning.standard_errors(ev.diag(), n).tolist())
    except NotApplicable as e:
        row.se_na = str(e)
    row.cv, row.flags = cv_cells(ev, n), row.flags + cv_flags(ev, plan.targets, n)
    row.targets, row.sample_size, scaled = _targets(ev, plan.targets, n, values)
    row.flags = row.flags + scaled
    if pset is not None and not free:
        row.targets_everywhere = robust_row(ev, pset, values, plan.targets, n)
    if plan.test is not None:
        try:
            fn = ev.power_function()
            grid = planning.n_grid(n)
            row.power = PowerCurve([int(x) for x in grid], [float(p) for p in fn(grid)],
                                   float(fn(np.array([n]))[0]))
        except NotApplicable as e:
            row.power_na = str(e)
    return row


def describe_mechanism(model: ModelGraph, mech: Any) -> str:
    span = getattr(mech, "span", None)
    src = model.source
    if span is not None and src is not None:
        return " ".join(src.text[span.start:span.end].split())
    return getattr(mech, "name", None) or type(mech).__name__


def describe_method(m: Method) -> str:
    args = [a if isinstance(a, str) else f"{a[0]} = {a[1]}" if isinstance(a, tuple) else str(a) for a in m.args]
    return f"{m.name}({', '.join(args)})" if args else m.name


def _test_words(plan: Plan) -> str | None:
    """The plan's test in words, with its level (None without a test)."""
    t = plan.test
    if t is None:
        return None
    if t.kind == "proportion":
        words = f"one-sample two-sided Wald test of w[{t.label}] = {float(t.value):g}"
    elif t.kind == "coefficient":
        words = f"two-sided Wald test of the coefficient {t.label} = {float(t.value):g}"
    elif t.kind == "difference":
        words = (f"two samples of n respondents each, two-sided Wald test of equal w[{t.label}] "
                 f"when they differ by {float(t.value):g}")
    else:
        words = f"Pearson chi-square test of independence of {' and '.join(t.variables)} on the table of reports"
    return f"{words} (level {float(plan.alpha):g})"


def _planning(plan: Plan) -> Planning | None:
    """The test and the target power of a plan with either."""
    if plan.test is None and not any(t.criterion == "power" for t in plan.targets):
        return None
    power = next((float(x.value) for x in plan.targets if x.criterion == "power"), None)
    return Planning(_test_words(plan), power)


#: criteria that shrink as 1/sqrt(n): a value simulated at n gives the n that meets a target
ROOT_N = ("max_se", "ci_width", "max_cv")


def _targets(ev: Evaluation, targets: Sequence[Target], n: int, values: Mapping[str, CriterionValue]
             ) -> tuple[dict, dict, list[str]]:
    """Whether each target is met at n (on the value a verdict reads: the simulated one
    where the asymptotic one is unreliable or missing), the sample sizes meeting them, and
    a note for each size scaled from a simulated value (no closed-form variance)."""
    met, sizes, notes = {}, {}, []
    for t in targets:
        key = str(t)
        decisive = values[t.criterion].decisive if t.criterion in values else None
        try:
            met[key] = bool(t.met(ev.at(t.criterion, n) if decisive is None else decisive))
        except NotApplicable as e:
            met[key] = None
            sizes[key] = None if REGISTRY[t.criterion].side == "privacy" else f"n/a: {e}"
            continue
        if REGISTRY[t.criterion].sample_size is not None:
            try:
                sizes[key] = ev.sample_size(t)
            except NotApplicable as e:
                sizes[key] = f"n/a: {e}"
                simulated = values[t.criterion].simulated if t.criterion in values else None
                if t.criterion in ROOT_N and simulated is not None and simulated > 0 and float(t.value) > 0:
                    # n Var is about constant from n on: the simulated SE at n scales as 1/sqrt(n)
                    sizes[key] = math.ceil(n * (simulated / float(t.value)) ** 2)
                    notes.append(f"{key}: n = {sizes[key]:,} scaled from the {t.criterion} simulated at n = {n:,} "
                                 f"({simulated:.4g}) as 1/sqrt(n): the estimator has no closed-form variance ({e})")
    return met, {k: v for k, v in sizes.items() if v is not None}, notes


def _better(criterion: str, a: float, b: float) -> bool:
    """Whether ``a`` is strictly better than ``b`` on ``criterion``."""
    return REGISTRY[criterion].better_than(a, b)


def _numbers(points: Mapping[str, Mapping[str, float | None]], criterion: str) -> dict[str, float]:
    """The candidates' values on ``criterion``, those that are numbers (not n/a, not nan)."""
    return {name: v[criterion] for name, v in points.items() if v[criterion] is not None
            and not math.isnan(v[criterion])}


def rank(points: Mapping[str, Mapping[str, float | None]], criteria: Sequence[str]
         ) -> dict[str, dict[str, int | None]]:
    """Each candidate's rank per criterion, from its values (``points``: by candidate, by
    criterion; None: n/a): 1 best, ties share a rank, None where n/a."""
    ranks: dict[str, dict[str, int | None]] = {name: {} for name in points}
    for crit in criteria:
        scored = _numbers(points, crit)
        for name in points:
            v = scored.get(name)
            ranks[name][crit] = None if v is None else 1 + sum(1 for u in scored.values() if _better(crit, u, v))
    return ranks


def frontier_criteria(points: Mapping[str, Mapping[str, float | None]], criteria: Sequence[str],
                      mechanisms_differ: bool) -> tuple[list[str], dict[str, str]]:
    """The criteria that can draw a Pareto frontier, and why each other one cannot: a
    frontier needs a number for every candidate (an infinite epsilon or an n/a leaves a
    design off the plot, and "on the frontier" unsaid of it), values that differ (a
    criterion equal for all separates nobody), and, between different mechanisms, a
    criterion that compares mechanisms (``efficiency`` measures each estimator against its
    own mechanism's efficient one).

    Examples
    --------
    >>> pts = {"a": {"max_se": 0.1, "epsilon": 1.0, "efficiency": 1.0},
    ...        "b": {"max_se": 0.2, "epsilon": float("inf"), "efficiency": 1.0}}
    >>> usable, why = frontier_criteria(pts, ["max_se", "epsilon", "efficiency"], True)
    >>> usable, why["epsilon"]
    (['max_se'], 'not finite for every candidate: inf for b')
    """
    usable, left_out = [], {}
    for crit in criteria:
        values = {name: v[crit] for name, v in points.items()}
        odd = {name: "n/a" if x is None else f"{x:.4g}" for name, x in values.items()
               if x is None or not math.isfinite(x)}
        within = CRITERIA[crit].within_mechanism
        if within is not None and mechanisms_differ:
            left_out[crit] = f"shown, not used for dominance: {within}"
        elif odd:
            left_out[crit] = "not finite for every candidate: " + "; ".join(
                f"{x} for {', '.join(sorted(n for n in odd if odd[n] == x))}" for x in sorted(set(odd.values())))
        elif len(points) > 1 and len(set(values.values())) == 1:
            left_out[crit] = f"the same for every candidate ({next(iter(values.values())):.4g})"
        else:
            usable.append(crit)
    return usable, left_out


def frontiers(points: Mapping[str, Mapping[str, float | None]], criteria: Sequence[str]
              ) -> tuple[list[Frontier], dict[str, dict[str, list[str]]]]:
    """Pareto frontiers of each privacy criterion (x) against each utility criterion (y),
    from the candidates' values (``points``: by candidate, by criterion; None: n/a), and by
    whom each candidate is dominated on each pair (``"y vs x"``)."""
    utility = [c for c in criteria if REGISTRY[c].side == "utility"]
    privacy = [c for c in criteria if REGISTRY[c].side == "privacy"]
    out = []
    dominators: dict[str, dict[str, list[str]]] = {name: {} for name in points}
    for x in privacy:
        for y in utility:
            xs, ys = _numbers(points, x), _numbers(points, y)
            ok = {k: (xs[k], ys[k]) for k in points if k in xs and k in ys}
            dominated: dict[str, str] = {}
            for name, (a, b) in ok.items():
                better = [o for o, (c, d) in ok.items() if o != name
                          and not _better(x, a, c) and not _better(y, b, d) and (_better(x, c, a) or _better(y, d, b))]
                if better:
                    o = better[0]
                    c, d = ok[o]
                    on = [k for k, (u, v) in ((x, (c, a)), (y, (d, b))) if _better(k, u, v)]
                    dominated[name] = f"{o} is at least as good on {x} and {y}, better on {' and '.join(on)}"
                    dominators[name][f"{y} vs {x}"] = better
            out.append(Frontier(x, y, [k for k in ok if k not in dominated], dominated,
                                {k: "n/a on " + (x if points[k][x] is None else y) for k in points if k not in ok}))
    return out, dominators


# ---- simulation ----------------------------------------------------------------------------------------
def _simulated(model: ModelGraph, cand: Candidate, ev: Evaluation, n: int, reps: int, seed: int | None,
               values: Mapping[str, CriterionValue]) -> None:
    """The utility criteria from ``reps`` replications (``simulate`` of the candidate's
    estimate), with Monte Carlo errors (normal theory for sample variances)."""
    wanted = [c for c in values if REGISTRY[c].simulated is not None]
    for c in values:
        if c not in wanted:
            values[c].simulated_na = REGISTRY[c].not_simulated
    if not wanted:
        return
    try:
        got = finite_sample.simulated_replications(model, cand, n, reps, seed, ev.alpha, ev.known_truth())
    except NotApplicable as e:
        for c in wanted:
            values[c].simulated_na = str(e)
        return
    for c in wanted:
        sim = REGISTRY[c].simulated(got, n)
        if sim is None:
            values[c].simulated_na = "the simulation gives no squared errors for this estimator"
            continue
        values[c].simulated, values[c].mc_error = sim
        if not got.full and REGISTRY[c].diagonal_note:
            values[c].mc_note = REGISTRY[c].diagonal_note


# ---- inverse design ------------------------------------------------------------------------------------
def _value(x: float, integer: bool) -> sympy.Expr:
    # a double as it is (53 bits): the exact closed forms at a wider Float are many times slower
    return sympy.Integer(int(round(x))) if integer else sympy.Float(float(x))


def _at(model: ModelGraph, p: Parameter, value: float, integer: bool = False) -> ModelGraph:
    params = dict(model.parameters)
    params[p.name] = dataclasses.replace(p, value=_value(value, integer))
    return dataclasses.replace(model, parameters=params)



def search_criteria(comp: Compare) -> tuple[list[str], str]:
    """The privacy criteria an inverse search measures privacy by (in the block's order;
    epsilon where it names none) and the utility criterion it scores (the first named;
    max_se where none is)."""
    privacies = [c for c in comp.criteria if REGISTRY[c].side == "privacy"] or ["epsilon"]
    return privacies, next((c for c in comp.criteria if REGISTRY[c].side == "utility"), "max_se")


def inverse_designs(model: ModelGraph, comp: Compare, cands: Sequence[Candidate], n: int) -> list[InverseDesign]:
    """For each candidate with free parameters: the most private value meeting the utility
    targets at n, and the best utility meeting the privacy targets."""
    privacies, utility = search_criteria(comp)
    out = []
    for c in cands:
        params = free_parameters(model, c.mechanism)
        if params:
            out.append(_inverse_design(model, comp, c, params, n, privacies, utility))
    return out


#: the largest epsilon searched for the fix of a comparison no design meets (beyond it a
#: k-ary randomized response is as good as no privacy: e^16 ~ 9 million)
EPSILON_SEARCH_MAX = 16


def least_epsilon(model: ModelGraph, comp: Compare, cand: Candidate, n: int, high: float | None = None
                  ) -> InverseDesign | None:
    """The smallest epsilon at which ``cand``'s mechanism (one with a numeric ``epsilon``:
    grr, the frequency oracles) meets the block's utility targets at n: its epsilon made
    free over (0, ``high``] (default: its own value) and searched as an inverse design
    (None: no epsilon to tune, or no utility target)."""
    eps = getattr(cand.mechanism, "epsilon", None)
    if not isinstance(eps, sympy.Number) or not any(REGISTRY[t.criterion].side == "utility"
                                                     for t in comp.plan.targets):
        return None
    symbol = sympy.Symbol(f"epsilon_{cand.name}", positive=True)
    p = Parameter("epsilon", symbol, ((">", sympy.Integer(0)), ("<=", eps if high is None else sympy.Float(high))))
    free = dataclasses.replace(cand, mechanism=dataclasses.replace(cand.mechanism, epsilon=symbol))
    privacies, utility = search_criteria(comp)
    return _inverse_design(model, comp, free, [p], n, privacies, utility)


def _inverse_design(model: ModelGraph, comp: Compare, c: Candidate, params: Sequence[Parameter], n: int,
                    privacies: Sequence[str], utility: str) -> InverseDesign:
    """One candidate's inverse design (or why there is none)."""
    entry = InverseDesign(c.name, ", ".join(p.name for p in params), privacies[0], utility)
    if len(params) > 1:
        entry.none = "more than one free parameter: give all but one a value"
        return entry
    p = params[0]
    try:
        lo, hi = parameter_range(p)
    except NotApplicable as e:
        entry.none = str(e)
        return entry
    sizes = size_parameter_range(c.mechanism, p, lo, hi)
    integer = sizes is not None
    if integer:
        lo, hi = sizes
        if lo > hi:
            entry.none = f"no whole number in the range of {p.name} is a subset size (2..p)"
            return entry
    entry.range = [lo, hi]

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
    privacy = next((k for k in privacies if finite_at(criteria_at, (lo + hi) / 2, k)), privacies[0])
    entry.privacy, entry.integer = privacy, integer
    names = sorted({privacy, utility} | {t.criterion for t in comp.plan.targets})
    search = best_whole if integer else best_feasible

    def choose(targets: Sequence[Target], objective: str, verb: str, at_n: str) -> InverseChoice | None:
        if not targets:
            return None
        x = search(lambda v: meets(v, targets), lo, hi, lambda v: score(criteria_at, v, objective))
        text = ", ".join(map(str, targets))
        if x is None:
            return InverseChoice(none=f"no value of {p.name} in [{lo:g}, {hi:g}] meets {text}{at_n}")
        try:
            return InverseChoice(x, verb, text, criteria_at(x, names))
        except NotApplicable as e:
            return InverseChoice(x, verb, text, criteria_na=str(e))

    # the most private value meeting the utility targets at n; the best utility meeting the privacy ones
    u_targets = [t for t in comp.plan.targets if REGISTRY[t.criterion].side == "utility"]
    p_targets = [t for t in comp.plan.targets if REGISTRY[t.criterion].side == "privacy"]
    entry.most_private = choose(u_targets, privacy, "meets", f" at n = {n}")
    entry.best_utility = choose(p_targets, utility, "at", "")
    return entry



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
            extras = {"n": n, "test": _test_words(q.plan), "estimator": describe_method(q.method),
                      "curve": {"n": [int(x) for x in grid], "power": [float(p) for p in fn(grid)]}}
            return Power(float(fn(np.array([n]))[0]), **extras)
        target = q.plan.targets[0]
        size = ev.sample_size(target)
    except NotApplicable as e:
        # a back end's refusal (B416: an epsilon too small for floating point) in its own words
        d = e.diagnostic if e.diagnostic is not None else Diagnostic("B150", str(e))
        raise BackendError(dataclasses.replace(d, span=q.span)) from None
    extras = {"target": str(target), "estimator": describe_method(q.method)}
    if q.plan.test is not None:
        extras["test"] = _test_words(q.plan)
    if size is None:
        raise BackendError(Diagnostic("B151", f"{target} is not reached with up to {planning.N_MAX:,} respondents",
                                      span=q.span, hint=_unreached_hint(target)))
    extras["achieved"] = ev.at(target.criterion, size)
    extras["at_n_minus_1"] = ev.at(target.criterion, size - 1) if size > 1 else None
    return SampleSize(size, **extras, fit=CriterionCurve(target.criterion, float(target.value),
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
    ANSWERS = (Answers(("sample_size", "power"), FINITE + INTERVAL + ORACLE + NUMERIC + TWO_GROUP),)

    def supports(self, query: Query, verb: str) -> bool:
        return any(row.matches(query, verb) for row in self.ANSWERS)

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        return plan_query(model, query)

    def compares(self, compare: Compare) -> bool:
        return True

    def compare(self, model: ModelGraph, compare: Compare, *, reps: int | None = None,
                seed: int | None = None, **_: Any) -> Result:
        return Comparison(compare_designs(model, compare, reps=reps, seed=seed))
