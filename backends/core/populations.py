"""The plug-in truth of a finite mechanism: the exact population vector w over its
categories (joint categories for products), or symbols ``w_<label>`` when no population
is declared.

Declared populations cover disjoint sets of plain variables (one variable, or a joint
``(gender, income)``); separately declared populations are independent.  The joint law
of any list of variables is their product, marginalized to the variables asked for and
arranged in the order asked for (row-major over the labels).

The values of the parameters (``parameter eps > 0 = 2``) are substituted in one place,
:func:`parameter_values` / :func:`bind_parameters`, for every back end.
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Any, Sequence

import sympy

from privspec.model.graph import Law, ModelGraph, Population, Variable


def parameter_values(model: ModelGraph) -> dict:
    """``{symbol: value}`` for the parameters that have a value.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load("parameter eps > 0 = 2\\nparameter t > 0").model
    >>> parameter_values(m)
    {eps: 2}
    """
    return {p.symbol: p.value for p in model.parameters.values() if p.value is not None}


def bind_parameters(model: ModelGraph, expr: Any) -> Any:
    """``expr`` (a sympy expression, or a number) with the parameters that have a value
    replaced by it.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load("parameter eps > 0 = 2").model
    >>> bind_parameters(m, m.parameters["eps"].symbol / 2)
    1
    """
    values = parameter_values(model)
    expr = sympy.sympify(expr)
    return expr.subs(values) if values else expr


def _population_table(model: ModelGraph, pop) -> tuple[list[str], dict[tuple[int, ...], sympy.Expr]]:
    """A declared population as (plain variable names, {label-index tuple: probability})."""
    names = [c for v in pop.variables for c in v.components()]
    sizes = [len(model.variables[c].labels) for c in names]
    table = {combo: p for combo, p in zip(itertools.product(*(range(s) for s in sizes)), pop.law.probs)}
    return names, table


def population_vector(model: ModelGraph, variables: Sequence[Variable]) -> sympy.Matrix | None:
    """The exact joint w over ``variables`` (each possibly combined), row-major; None when
    some part has no population.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load('''variable g: categorical {F, M}
    ... variable i: categorical {L, H}
    ... variable c: categorical {x, y}
    ... population (g, i) ~ counts [[1, 2], [3, 4]]
    ... population c ~ categorical(1/4, 3/4)''').model
    >>> population_vector(m, [m.variables["i"], m.variables["c"]]).T
    Matrix([[1/10, 3/10, 3/20, 9/20]])
    """
    wanted = [c for v in variables for c in v.components()]
    pieces = []
    covered: set[str] = set()
    for pop in model.populations:
        names, table = _population_table(model, pop)
        if set(names) & set(wanted):
            pieces.append((names, table))
            covered |= set(names)
    if not set(wanted) <= covered:
        return None
    # the joint over every variable of the pieces (independent pieces multiply)
    all_names = [n for names, _ in pieces for n in names]
    joint: dict[tuple[int, ...], sympy.Expr] = {(): sympy.Integer(1)}
    for names, table in pieces:
        joint = {a + b: pa * pb for a, pa in joint.items() for b, pb in table.items()}
    # marginalize to the wanted variables, in the wanted order
    pos = [all_names.index(c) for c in wanted]
    out: dict[tuple[int, ...], sympy.Expr] = {}
    for combo, prob in joint.items():
        key = tuple(combo[k] for k in pos)
        out[key] = out.get(key, 0) + prob
    sizes = [len(model.variables[c].labels) for c in wanted]
    return sympy.Matrix([out.get(k, sympy.Integer(0)) for k in itertools.product(*(range(s) for s in sizes))])


def symbolic_vector(labels: Sequence[str]) -> sympy.Matrix:
    """Symbols ``w_<label>`` (positive), one per category."""
    return sympy.Matrix([sympy.Symbol(f"w_{lab}", positive=True) for lab in labels])


def with_population(model: ModelGraph, names: Sequence[str], law: Law) -> ModelGraph:
    """``model`` with ``law`` as the population of the plain variables ``names`` (their
    joint, row-major) in place of the declared one; ValueError where a declared population
    also covers other variables (it cannot be replaced in part).

    Examples
    --------
    >>> import privspec, sympy
    >>> m = privspec.load("variable c: categorical {x, y}\\npopulation c ~ categorical(1/4, 3/4)").model
    >>> half = sympy.Rational(1, 2)
    >>> population_vector(with_population(m, ["c"], Law("categorical", probs=(half, half))), [m.variables["c"]]).T
    Matrix([[1/2, 1/2]])
    """
    kept, latent = [], ()
    for pop in model.populations:
        covered = pop.components
        if not covered & set(names):
            kept.append(pop)
        elif not covered <= set(names):
            raise ValueError(f"the population of {', '.join(sorted(covered & set(names)))} is declared jointly "
                             f"with {', '.join(sorted(covered - set(names)))}")
        else:  # its latent shares (cheaters, honesty) stay: only the law is replaced
            latent = pop.latent
    variables = tuple(model.variables[c] for c in names)
    return dataclasses.replace(model, populations=tuple(kept) + (Population(variables, law, latent=latent),))
