"""The verdict of a design comparison: which design to use, why, and what would change it.

:func:`recommend` reads the candidates' rows (their criteria at n, the targets they meet
and the fewest respondents meeting each) and writes a
:class:`privspec.results.comparison.Recommendation`:

* **with targets**, the design to use is the most private of those that meet every target
  at n, on the privacy criterion that compares all of them (``prediction`` first: it is on
  one scale for every family; then the others in the block's order); ties go to the better
  utility. What would change the choice: the n below which the chosen design misses a
  target (and who would then be chosen), and a more private design that meets the targets
  with more respondents (the n it needs). Where no design meets the targets, what each
  misses and the cheapest fix (the fewest respondents that make a design meet them all;
  a privacy target no n can fix is said so);
* **without targets**, privacy cannot be traded against utility by a rule the block
  states: the design to use is the most precise of those on a Pareto frontier, and the
  verdict says what the most private one would cost, and how to declare targets.

The values read are each criterion's :attr:`~privspec.results.comparison.CriterionValue.decisive`
one (a simulated value where the asymptotic one is unreliable, said in the notes).

Examples
--------
>>> from privspec.model.graph import Target
>>> from privspec.results.comparison import CandidateRow, CriterionValue
>>> import sympy
>>> rows = [CandidateRow("a", values={"max_se": CriterionValue(0.01), "prediction": CriterionValue(0.9)},
...                      targets={"max_se <= 0.02": True}, sample_size={"max_se <= 0.02": 250}),
...         CandidateRow("b", values={"max_se": CriterionValue(0.03), "prediction": CriterionValue(0.8)},
...                      targets={"max_se <= 0.02": False}, sample_size={"max_se <= 0.02": 2250})]
>>> r = recommend(rows, ["max_se", "prediction"], [Target("max_se", "<=", sympy.Rational(1, 50))], 1000)
>>> r.candidate, r.decided_by
('a', 'prediction')
>>> r.changes[-1]
'b is more private (prediction 0.8 against 0.9) and meets every target from n = 2,250: with that many respondents it would be the choice'
"""
from __future__ import annotations

import math
from typing import Sequence

from privspec.model.graph import Target
from privspec.model.query_kinds import CRITERIA
from privspec.results.comparison import CandidateRow, InverseDesign, Recommendation
from privspec.backends.design.criteria import REGISTRY


def recommend(rows: Sequence[CandidateRow], criteria: Sequence[str], targets: Sequence[Target], n: int,
              inverse: Sequence[InverseDesign] = ()) -> Recommendation | None:
    """The verdict of a comparison (None where no candidate has a value to decide on)."""
    fixed = [r for r in rows if any(v.value is not None for v in r.values.values())]
    if not fixed:
        return None
    if targets:
        rec = _with_targets(fixed, criteria, targets, n, inverse)
    else:
        rec = _without_targets(fixed, criteria)
    if rec is None:
        return None
    chosen = next((r for r in fixed if r.name == rec.candidate), None)
    if chosen is not None:
        rec.notes.extend(chosen.flags)
        rec.notes.extend(f"{c}: the simulated value {_g(v.simulated)} is used (the asymptotic {_g(v.value)} is "
                         "more than 10% off it)" for c, v in chosen.values.items()
                         if v.unreliable and v.simulated is not None and not any(c in f for f in chosen.flags))
    return rec


# ---- reading the rows -------------------------------------------------------------------------------
def _g(x: float | None) -> str:
    if x is None:
        return "n/a"
    if math.isinf(x):
        return "inf"
    return f"{x:.4g}"


def _n(x: int) -> str:
    return f"{x:,}"


def _value(row: CandidateRow, criterion: str) -> float | None:
    """The number a verdict reads (None: n/a or NaN; an infinite epsilon is a value: the worst)."""
    v = row.values.get(criterion)
    x = None if v is None else v.decisive
    return x if x is not None and not math.isnan(x) else None


def _best(rows: Sequence[CandidateRow], criterion: str, tie: str | None = None) -> list[CandidateRow]:
    """``rows`` with a value on ``criterion``, best first (ties broken on ``tie``, then by order)."""
    scored = [r for r in rows if _value(r, criterion) is not None]
    sign = 1.0 if REGISTRY[criterion].smaller_is_better else -1.0

    def key(r: CandidateRow) -> tuple[float, float]:
        t = _value(r, tie) if tie is not None else None
        tsign = 1.0 if tie is None or REGISTRY[tie].smaller_is_better else -1.0
        return sign * _value(r, criterion), tsign * t if t is not None else math.inf

    return sorted(scored, key=key)


def deciding_privacy(rows: Sequence[CandidateRow], criteria: Sequence[str]) -> str | None:
    """The privacy criterion that decides among ``rows``: the first (``prediction`` before
    the block's order) with a finite value for every one of them; else the one that
    covers the most."""
    privacy = [c for c in criteria if REGISTRY[c].side == "privacy"]
    privacy.sort(key=lambda c: c != "prediction")
    if not privacy:
        return None
    covered = {c: sum(_value(r, c) is not None for r in rows) for c in privacy}
    full = [c for c in privacy if covered[c] == len(rows)]
    if full:
        return full[0]
    best = max(privacy, key=lambda c: covered[c])
    return best if covered[best] else None


def deciding_utility(rows: Sequence[CandidateRow], criteria: Sequence[str]) -> str | None:
    """The first utility criterion that compares mechanisms and has a value for every one of ``rows``."""
    utility = [c for c in criteria if REGISTRY[c].side == "utility"]
    mechanisms_differ = len({r.mechanism for r in rows}) > 1
    usable = [c for c in utility if not (mechanisms_differ and CRITERIA[c].within_mechanism)]
    full = [c for c in usable if all(_value(r, c) is not None for r in rows)]
    return (full or usable or [None])[0]


def _against(a: float, b: float) -> str:
    """How much ``a`` is better than ``b`` in words ("0.854 against 0.899")."""
    return f"{_g(a)} against {_g(b)}"


def _needed_n(row: CandidateRow, targets: Sequence[Target]) -> int | None:
    """The fewest respondents meeting every target (None: a target no n meets, or unknown)."""
    need = 0
    for t in targets:
        key = str(t)
        met = row.targets.get(key)
        size = row.sample_size.get(key)
        if REGISTRY[t.criterion].sample_size is None:     # privacy: n does not change it
            if met is not True:
                return None
            continue
        if not isinstance(size, int):
            return None
        need = max(need, size)
    return need


# ---- with targets ---------------------------------------------------------------------------------
def _met_text(row: CandidateRow, targets: Sequence[Target]) -> str:
    parts = []
    for t in targets:
        v = _value(row, t.criterion)
        parts.append(f"{t.criterion} {_g(v)} {t.op} {float(t.value):g}" if v is not None else str(t))
    return ", ".join(parts)


def _everywhere(row: CandidateRow, targets: Sequence[Target]) -> bool:
    """Whether ``row`` meets every target at every plausible population."""
    return row.targets_everywhere is not None and all(row.targets_everywhere.get(str(t)) is True for t in targets)


def _robustness(best: CandidateRow, robust: Sequence[CandidateRow], targets: Sequence[Target]) -> list[str]:
    """What the verdict says of the plausible populations (nothing without a set)."""
    if best.targets_everywhere is None:
        return []
    if _everywhere(best, targets):
        return [f"{best.name} meets every target at every plausible population, not only at the declared one"]
    out = []
    for t in targets:
        if best.targets_everywhere.get(str(t)) is not True:
            v = best.values.get(t.criterion)
            worst = f" (worst {_g(v.worst)} at {v.worst_at})" if v is not None and v.worst is not None else ""
            out.append(f"the choice does not hold over every plausible population: {best.name} misses {t}{worst}")
    if not robust:
        out.append("no design meets every target at every plausible population; the verdict is taken at the "
                   "declared population")
    return out


def _with_targets(rows: Sequence[CandidateRow], criteria: Sequence[str], targets: Sequence[Target], n: int,
                  inverse: Sequence[InverseDesign]) -> Recommendation:
    feasible = [r for r in rows if all(r.targets.get(str(t)) is True for t in targets)]
    if not feasible:
        return _none_meets(rows, criteria, targets, n)
    # with plausible populations, the designs that meet the targets at all of them come first
    robust = [r for r in feasible if _everywhere(r, targets)]
    rec = _choose(robust or feasible, rows, criteria, targets, n, inverse)
    best = next(r for r in rows if r.name == rec.candidate)
    rec.notes[:0] = _robustness(best, robust, targets)
    if robust and len(robust) < len(feasible):
        rec.reasons.insert(1, f"{len(robust)} of the {len(feasible)} designs that meet every target at the declared "
                              "population meet them at every plausible population: the choice is among those")
    return rec


def _choose(feasible: Sequence[CandidateRow], rows: Sequence[CandidateRow], criteria: Sequence[str],
            targets: Sequence[Target], n: int, inverse: Sequence[InverseDesign]) -> Recommendation:
    """The most private of ``feasible`` (ties to the more precise; without a privacy
    criterion that compares them all, the most precise), and what changes it."""
    p = deciding_privacy(feasible, criteria)
    u = deciding_utility(feasible, criteria)
    order, tied = _feasible_order(feasible, p, u)
    best, runner = order[0], (order[1] if len(order) > 1 else None)
    decided = u if (tied or p is None) else p
    rec = Recommendation(best.name, decided_by=decided)
    rec.reasons.append(f"it meets every target at n = {_n(n)}: {_met_text(best, targets)}")
    meeting = f"of the {len(feasible)} designs that meet every target at n = {_n(n)}"
    if runner is None:
        if p is not None:
            rec.reasons.append(f"it is the only design that meets them (its {p} is {_g(_value(best, p))})")
        rec.text = f"Use {best.name}: the only design that meets every target at n = {_n(n)}."
    elif decided is None:
        rec.text = f"Use {best.name}: {meeting}, the first (no criterion compares them all)."
    else:
        rec.runner_up = runner.name
        a, b = _value(best, decided), _value(runner, decided)
        vs = f" ({_against(a, b)} for {runner.name})" if b is not None else f" ({_g(a)}; n/a for {runner.name})"
        if tied:
            rec.reasons.append(f"the designs meeting them as private as it on {p} ({_g(_value(best, p))}) are told "
                               f"apart by {u}: {_against(a, b)} for {runner.name}, the runner-up")
            rec.text = (f"Use {best.name}: of the designs that meet every target at n = {_n(n)} and are the most "
                        f"private on {p}, the most precise on {u}{vs}.")
        else:
            best_on = "most private" if decided == p else "most precise"
            rec.reasons.append(f"of the {len(feasible)} designs that meet them, it is the {best_on} on {decided}"
                               + (f": {_against(a, b)} for {runner.name}, the runner-up" if b is not None
                                  else f" ({_g(a)}; {decided} is n/a for {runner.name})"))
            rec.text = f"Use {best.name}: the {best_on} on {decided}{vs} {meeting}."
    rec.changes.extend(_what_changes(best, order[1:], rows, feasible, p, targets, n))
    if not tied:
        rec.changes.extend(_inverse_alternatives(best, p, inverse))
    return rec


def _feasible_order(feasible: Sequence[CandidateRow], p: str | None, u: str | None
                    ) -> tuple[list[CandidateRow], bool]:
    """``feasible`` best first: on privacy ``p`` (the designs tied on it by utility ``u``),
    else on ``u``; and whether the first two tie on ``p`` (the precision then decided)."""
    order = _best(feasible, p, u) if p is not None else (_best(feasible, u) if u is not None else list(feasible))
    order += [r for r in feasible if r not in order]
    tied = p is not None and u is not None and len(order) > 1 and _value(order[1], p) == _value(order[0], p)
    if tied:
        ties = [r for r in order if _value(r, p) == _value(order[0], p)]
        order = _best(ties, u) + [r for r in order if r not in ties]
    return order, tied


def _what_changes(best: CandidateRow, runners: Sequence[CandidateRow], rows: Sequence[CandidateRow],
                  feasible: Sequence[CandidateRow], p: str | None, targets: Sequence[Target], n: int) -> list[str]:
    out = []
    need = _needed_n(best, targets)
    if need is not None and need > 1:
        nxt = next((r for r in runners if (_needed_n(r, targets) or math.inf) < need), None)
        then = (f"; {nxt.name} (which meets them from n = {_n(_needed_n(nxt, targets))}) would then be the choice"
                if nxt is not None else "")
        out.append(f"with fewer than {_n(need)} respondents {best.name} misses a target{then}")
    if p is None:
        return out
    a = _value(best, p)
    better = [r for r in rows if r not in feasible and _value(r, p) is not None
              and REGISTRY[p].better_than(_value(r, p), a)]
    for r in _best(better, p)[:2]:
        m = _needed_n(r, targets)
        if m is not None:
            out.append(f"{r.name} is more private ({p} {_against(_value(r, p), a)}) and meets every target "
                       f"from n = {_n(m)}: with that many respondents it would be the choice")
        else:
            missed = [str(t) for t in targets if r.targets.get(str(t)) is not True]
            out.append(f"{r.name} is more private ({p} {_against(_value(r, p), a)}) but misses "
                       f"{', '.join(missed)} at any n")
    return out


def _inverse_alternatives(best: CandidateRow, p: str | None, inverse: Sequence[InverseDesign]) -> list[str]:
    """Free-parameter candidates whose most private value meeting the targets is more private."""
    out = []
    a = _value(best, p) if p is not None else None
    for e in inverse:
        c = e.most_private
        if c is None or c.value is None or p is None or a is None:
            continue
        x = c.criteria.get(p)
        if x is not None and math.isfinite(x) and REGISTRY[p].better_than(x, a):
            out.append(f"{e.candidate} with {e.parameter} = {c.value:.4g} meets {c.targets} and is more private "
                       f"({p} {_against(x, a)}): fix {e.parameter} there to field it")
    return out


def _none_meets(rows: Sequence[CandidateRow], criteria: Sequence[str], targets: Sequence[Target],
                n: int) -> Recommendation:
    rec = Recommendation(None)
    fixable = []
    for r in rows:
        missed = [t for t in targets if r.targets.get(str(t)) is not True]
        values = ", ".join(f"{t.criterion} {_g(_value(r, t.criterion))} (target {t.op} {float(t.value):g})"
                           for t in missed)
        rec.missing.append(f"{r.name} misses {values}")
        m = _needed_n(r, targets)
        if m is not None:
            fixable.append((m, r))
        elif any(REGISTRY[t.criterion].sample_size is None for t in missed):
            rec.fixes.append(f"{r.name}: no n helps with "
                             f"{', '.join(str(t) for t in missed if REGISTRY[t.criterion].sample_size is None)}: "
                             "a design with more privacy (a smaller epsilon, larger subsets) is needed")
    fixable.sort(key=lambda x: x[0])
    rec.fixes[:0] = [f"{r.name} meets every target at n = {_n(m)}" for m, r in fixable[:3]]
    if fixable:
        rec.runner_up = fixable[1][1].name if len(fixable) > 1 else None
        m, r = fixable[0]
        rec.text = (f"No design meets every target at n = {_n(n)}. The cheapest fix: {r.name} with n = {_n(m)} "
                    f"respondents ({m / n:.3g} times n).")
    else:
        rec.text = (f"No design meets every target at n = {_n(n)}, and no number of respondents makes one meet "
                    "them: relax a privacy target or add a design with more privacy.")
    return rec


# ---- without targets ------------------------------------------------------------------------------
def _without_targets(rows: Sequence[CandidateRow], criteria: Sequence[str]) -> Recommendation | None:
    u = deciding_utility(rows, criteria)
    if u is None:
        return None
    p = deciding_privacy(rows, criteria)
    pool = [r for r in rows if r.pareto is not False] or list(rows)
    order = _best(pool, u, p)
    if not order:
        return None
    best = order[0]
    rec = Recommendation(best.name, decided_by=u)
    rec.reasons.append("no targets are declared, so the most precise design on a Pareto frontier is recommended: "
                       f"{u} {_g(_value(best, u))}" + (f", against {_g(_value(order[1], u))} for {order[1].name}, "
                                                        "the runner-up" if len(order) > 1 else ""))
    if len(order) > 1:
        rec.runner_up = order[1].name
    if p is not None:
        private = _best(rows, p, u)
        if private and private[0] is not best and _value(private[0], p) != _value(best, p):
            q = private[0]
            cost = _value(q, u), _value(best, u)
            ratio = (f" ({cost[0] / cost[1]:.3g} times)" if cost[0] is not None and cost[1]
                     and math.isfinite(cost[0] / cost[1]) else "")
            rec.changes.append(f"{q.name} is the most private on {p} ({_against(_value(q, p), _value(best, p))}) "
                               f"at {u} {_g(cost[0])}{ratio}: where privacy matters more, declare the precision "
                               f"needed (target {u} <= ...) and the most private design meeting it is chosen")
        elif private and len({_value(r, p) for r in private}) == 1:
            rec.reasons.append(f"every design has the same {p} ({_g(_value(best, p))})")
        elif private:
            rec.reasons.append(f"it is also the most private on {p} ({_g(_value(best, p))})")
    vs = f" ({_g(_value(best, u))} against {_g(_value(order[1], u))} for {order[1].name})" if len(order) > 1 else ""
    rec.text = (f"Use {best.name}: the most precise on {u}{vs} of the designs on a Pareto frontier "
                "(no targets are declared to weigh privacy against precision).")
    return rec


def add_least_epsilon(rec: Recommendation, tuned: InverseDesign, row: CandidateRow, n: int) -> None:
    """Say in ``rec`` how far the recommended design's epsilon can go down and still meet
    the utility targets at n (``tuned``: its epsilon searched as an inverse design)."""
    c = tuned.most_private
    own = tuned.range[1] if tuned.range else None      # its own epsilon: the top of the search
    if c is None or c.value is None or own is None or not c.value < 0.99 * own:
        return
    p = tuned.privacy
    mine = _value(row, p)
    there = c.criteria.get(p)
    vs = (f" ({p} {_against(there, mine)})" if p != "epsilon" and there is not None and mine is not None
          else "")
    rec.changes.insert(0, f"{rec.candidate} still meets {c.targets} at n = {_n(n)} down to epsilon = {c.value:.3g}"
                          f"{vs}: field it at that epsilon for more privacy")


def add_epsilon_fix(rec: Recommendation, tuned: InverseDesign, targets: Sequence[Target], n: int) -> None:
    """Where no design meets the targets: the epsilon at which one of the candidates'
    mechanisms would meet the utility targets at n (``tuned``: its epsilon searched), and the
    privacy target that epsilon breaks, once per distinct answer."""
    c = tuned.most_private
    if c is None or c.value is None:
        return
    eps = f"{c.value:.3g}"
    if any(f"epsilon = {eps}" in f for f in rec.fixes):
        return
    broken = [t for t in targets if t.criterion == "epsilon" and not t.met(c.value)]
    but = f", which breaks {', '.join(map(str, broken))}" if broken else ""
    if not any("epsilon = " in f for f in rec.fixes):
        rec.text += f" Or, at n = {_n(n)}: {tuned.candidate} with epsilon = {eps}{but}."
    rec.fixes.append(f"{tuned.candidate} with epsilon = {eps} (the least that does) meets {c.targets} at "
                     f"n = {_n(n)}{but}")
