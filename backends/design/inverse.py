"""Inverse design: the value of a candidate's one free parameter (``grr(race, epsilon =
eps)`` with ``parameter eps > 0 <= 8``) that is the most private meeting the utility
targets, or has the best utility meeting the privacy targets.

The parameter's range comes from its constraints; a subset size is searched over whole
numbers. :func:`best_feasible` scans a grid over the range and refines by bisection where
a target's verdict changes; :func:`bind` puts a value into a mechanism everywhere it
appears, so that every back end sees plain numbers.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import numpy as np
import sympy

from privspec.model.graph import ModelGraph, Parameter, SubsetDesign, SubsetMechanism
from privspec.backends.design.criteria import REGISTRY, NotApplicable

#: points of the grid an inverse design scans before refining (and of a power curve)
INVERSE_GRID = 17
#: bisection steps refining an inverse design's boundary (the range / 2^steps)
INVERSE_STEPS = 24


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


def finite_at(criteria_at: Callable, x: float, criterion: str) -> bool:
    try:
        return math.isfinite(criteria_at(x, [criterion])[criterion])
    except NotApplicable:
        return False


def best_whole(feasible: Callable[[float], bool], lo: int, hi: int, score: Callable[[float], float]
                ) -> int | None:
    """The best-scoring feasible whole number in ``lo..hi`` (a subset size: few values, each
    is tried); the smallest among equals."""
    ok = [k for k in range(lo, hi + 1) if feasible(k)]
    return min(ok, key=lambda k: (score(k), k)) if ok else None


def score(criteria_at: Callable, x: float, criterion: str) -> float:
    """Smaller is better."""
    try:
        v = criteria_at(x, [criterion])[criterion]
    except NotApplicable:
        return math.inf
    return v if REGISTRY[criterion].smaller_is_better else -v


def best_feasible(feasible: Callable[[float], bool], lo: float, hi: float, score: Callable[[float], float]
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
