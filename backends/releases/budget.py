"""Budget accounting: the epsilon of a set of variables across all releases.

Privacy on a subset of variables (Def. 2.2) assigns an epsilon to every set ``U`` of
dataset variables.  A release ``R`` of a count table over the variables ``T`` with
epsilon ``eps`` and exact totals over ``E`` (a subset of ``T``; empty for a plain
geometric release) is private on ``U`` with

* ``0`` when ``U`` and ``T`` share no variable: the release depends only on the values
  of ``T`` (Example 3.6's assumption), so it is 0-private on ``U`` (Proposition 3.3);
* ``inf`` (no finite epsilon) when ``U`` contains a variable of ``E`` with two or more
  categories: neighbours that differ in that variable (allowed by (1)-(2) of Def. 2.2)
  have different exact totals, so some event has probability 1 under one and 0 under
  the other.  Proposition 3.2 agrees: a release not private on ``{degree}`` is not
  private on any ``U`` containing ``degree``;
* ``eps`` otherwise: neighbours then differ only in variables that the noise covers.
  Without exact totals the table is eps-differentially private, hence eps-private on
  every ``U`` (Propositions 3.1 and 3.5); with exact totals, changing one record's
  values of ``U`` moves one unit between two cells of one total cell, and Algorithm 1
  is eps-private on such changes (Proposition 5.1).  This includes a table variable
  that is neither protected nor an exact total: the noise covers it too.

The budget charges the *declared* epsilon: it is the guarantee the release was
published with.  The exact loss (:func:`release_privacy_loss`, derived in
``docs/releases.md``) equals it, except for Algorithm 1 with ``calibration = paper``,
whose noise spends only ``eps/2``: ``budget(per release)`` reports that loss beside
the charge, so the slack is visible but never silently spent.

Releases use independent randomness, so their epsilons add up (composition,
Proposition 3.4).  Every rule is monotone in ``U`` (0 <= eps <= inf as ``U`` grows), as
Proposition 3.2 demands.  Combined variables count as their parts.  All arithmetic is
exact (sympy), and parameters with a value are replaced by it.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import sympy

from privspec.model.graph import ModelGraph, Release
from privspec.backends.core.populations import bind_parameters
from privspec.backends.releases.noise import privacy_loss


def components(model: ModelGraph, names: Iterable[str]) -> frozenset[str]:
    """The plain variables behind ``names`` (a combined variable counts as its parts)."""
    out: set[str] = set()
    for name in names:
        var = model.variables.get(name)
        out.update(var.components() if var is not None else (name,))
    return frozenset(out)


def plain_variables(model: ModelGraph) -> list[str]:
    """The columns of Table 1, in declared order: every declared categorical variable
    that is not a combination of others, used by a release or not (a release that does
    not use a variable is 0-private on it: Table 1's "{other variable}" column).
    Continuous variables cannot be in a count table, so they are left out here (their
    epsilon is 0; ``budget({salary})`` says so)."""
    return [name for name, v in model.variables.items() if v.is_categorical and not v.is_combined]


def release_epsilon(model: ModelGraph, release: Release, subset: Iterable[str]) -> sympy.Expr:
    """The epsilon with which ``release`` is private on the set ``subset`` of variables
    (0, its epsilon, or ``oo``: see the module docstring for the derivation).

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load('''
    ... variable degree: categorical {BA, BSc}
    ... variable band: categorical {low, high}
    ... variable sex: categorical {F, M}
    ... release D = counts(degree, band) with geometric(epsilon = 1) protect {band} exact totals(degree)
    ... ''').model
    >>> D = m.releases["D"]
    >>> [release_epsilon(m, D, u) for u in ({"band"}, {"sex"}, {"degree"}, {"degree", "band"})]
    [1, 0, oo, oo]
    """
    u = components(model, subset)
    used = components(model, (v.name for v in release.variables))
    if not u & used:
        return sympy.Integer(0)  # Proposition 3.3
    exact = components(model, release.exact_totals)
    if any(model.variables[c].p >= 2 for c in u & exact if c in model.variables):
        return sympy.oo  # exact totals over a variable of U: not private for any epsilon
    return bind_parameters(model, release.epsilon)  # Propositions 3.5 and 5.1


def budget_on(model: ModelGraph, subset: Iterable[str],
              releases: Sequence[str] | None = None) -> tuple[sympy.Expr, dict[str, sympy.Expr]]:
    """The epsilon of ``subset`` across ``releases`` (all by default), and each release's
    contribution (composition, Proposition 3.4).

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load('''
    ... variable age: categorical {young, old}
    ... variable sex: categorical {F, M}
    ... variable region: categorical {north, south}
    ... release A = counts(age, sex) with geometric(epsilon = 1)
    ... release B = counts(region) with geometric(epsilon = 1/2)
    ... release C = counts(region, age) with geometric(epsilon = 1)
    ... ''').model
    >>> budget_on(m, {"age", "sex"})
    (2, {'A': 1, 'B': 0, 'C': 1})
    >>> budget_on(m, {"region"})
    (3/2, {'A': 0, 'B': 1/2, 'C': 1})
    """
    names = list(model.releases) if releases is None else list(releases)
    parts = {r: release_epsilon(model, model.releases[r], subset) for r in names}
    return sympy.Add(*parts.values()) if parts else sympy.Integer(0), parts


def budget_table(model: ModelGraph, releases: Sequence[str] | None = None,
                 variables: Sequence[str] | None = None) -> tuple[list[str], list[str], sympy.Matrix]:
    """Table 1: the epsilon of each single variable (columns) for each release (rows),
    and a last row ``"all"`` with the composition of all of them.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load('''
    ... variable age: categorical {young, old}
    ... variable sex: categorical {F, M}
    ... variable region: categorical {north, south}
    ... release A = counts(age, sex) with geometric(epsilon = 1)
    ... release C = counts(region, age) with geometric(epsilon = 1)
    ... ''').model
    >>> rows, cols, data = budget_table(m)
    >>> rows, cols, data.tolist()
    (['A', 'C', 'all'], ['age', 'sex', 'region'], [[1, 1, 0], [1, 0, 1], [2, 1, 1]])
    """
    names = list(model.releases) if releases is None else list(releases)
    cols = plain_variables(model) if variables is None else list(variables)
    per_variable = [budget_on(model, {v}, names) for v in cols]  # a column each: (the composition, the parts)
    data = [[parts[r] for _, parts in per_variable] for r in names]
    total = [composed for composed, _ in per_variable]
    return names + ["all"], cols, sympy.Matrix(data + [total]) if cols else sympy.zeros(len(names) + 1, 0)


def private_on(model: ModelGraph, release: Release) -> list[str]:
    """The table variables the release's noise covers (all but the exact totals):
    the largest set of its variables on which it is eps-private."""
    return [v.name for v in release.variables if v.name not in release.exact_totals]


def release_privacy_loss(model: ModelGraph, release: Release) -> sympy.Expr:
    """The exact privacy loss of ``release`` on its noised variables (``private_on``):
    the smallest epsilon for which Def. 2.2 holds.  The declared epsilon, except for
    Algorithm 1 with ``calibration = paper`` (half of it); 0 when a record has no
    second cell to move to.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load('''
    ... variable d: categorical {BA, BSc}
    ... variable b: categorical {low, high}
    ... release T = counts(d, b) with geometric(epsilon = 1) protect {b} exact totals(d)
    ... release P = counts(d, b) with geometric(epsilon = 1, calibration = paper) protect {b} exact totals(d)
    ... ''').model
    >>> release_privacy_loss(m, m.releases["T"]), release_privacy_loss(m, m.releases["P"])
    (1, 1/2)
    """
    cells = 1  # n_i: the cells one total cell has (the whole table without exact totals)
    for v in release.variables:
        if v.name not in release.exact_totals:
            cells *= v.p
    return privacy_loss(bind_parameters(model, release.epsilon), bool(release.exact_totals),
                        release.calibration, cells)


def describe_release(model: ModelGraph, release: Release) -> Mapping[str, object]:
    """What ``budget(per release)`` says about one release besides its row of Table 1,
    among it the calibration and the exact ``privacy_loss`` beside the charged
    ``epsilon``."""
    return {"epsilon": bind_parameters(model, release.epsilon),
            "mechanism": "algorithm1" if release.exact_totals else "geometric",
            "calibration": release.calibration, "privacy_loss": release_privacy_loss(model, release),
            "protect": list(release.protect), "private_on": private_on(model, release),
            "exact_totals": list(release.exact_totals)}
