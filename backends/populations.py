"""The plug-in truth of a finite mechanism: the exact population vector w over its
categories (joint categories for products), or symbols ``w_<label>`` when no population
is declared."""
from __future__ import annotations

import itertools
from typing import Any, Sequence

import sympy

from ..model import ModelGraph, Variable


def _joint_block(model: ModelGraph, parts: Sequence[str]) -> sympy.Matrix | None:
    """w over the row-major joint categories of ``parts`` (plain variable names), from the
    declared populations: a joint population covering them, or independent pieces."""
    parts = list(parts)
    # a single population covering exactly these parts (any order)
    for pop in model.populations:
        flat = [c for v in pop.variables for c in v.components()]
        if sorted(flat) == sorted(parts):
            probs = list(pop.law.probs)
            shape = [len(model.variables[c].labels) for c in flat]
            if flat == parts:
                return sympy.Matrix(probs)
            # reorder axes to the requested order
            index = {}
            for combo in itertools.product(*(range(s) for s in shape)):
                flat_i = 0
                for k, s in zip(combo, shape):
                    flat_i = flat_i * s + k
                index[combo] = probs[flat_i]
            order = [flat.index(c) for c in parts]
            out = []
            for combo in itertools.product(*(range(shape[o]) for o in order)):
                src = [0] * len(shape)
                for pos, o in enumerate(order):
                    src[o] = combo[pos]
                out.append(index[tuple(src)])
            return sympy.Matrix(out)
    if len(parts) == 1:
        return None
    # independent pieces: split parts into populated groups, left to right
    pieces = []
    i = 0
    while i < len(parts):
        for j in range(len(parts), i, -1):
            block = _joint_block(model, parts[i:j]) if j - i < len(parts) else None
            if block is not None:
                pieces.append(block)
                i = j
                break
        else:
            return None
    return _kron(pieces)


def _kron(vectors: Sequence[sympy.Matrix]) -> sympy.Matrix:
    out = vectors[0]
    for v in vectors[1:]:
        out = sympy.Matrix([a * b for a in out for b in v])
    return out


def population_vector(model: ModelGraph, variables: Sequence[Variable]) -> sympy.Matrix | None:
    """The exact joint w over ``variables`` (each possibly combined), row-major, assuming
    independence between separately declared populations; None when some part has no
    population."""
    parts = [c for v in variables for c in v.components()]
    return _joint_block(model, parts)


def symbolic_vector(labels: Sequence[str]) -> sympy.Matrix:
    """Symbols ``w_<label>`` (positive), one per category."""
    return sympy.Matrix([sympy.Symbol(f"w_{lab}", positive=True) for lab in labels])


def describe_truth(w: Any) -> str:
    return "at the declared population" if not getattr(w, "free_symbols", set()) else "symbolic in w"
