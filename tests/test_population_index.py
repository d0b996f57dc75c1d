"""The pricing's index of populations by variable (costs.PopulationIndex) finds exactly
what a scan of every population finds, in declaration order, and a spec priced through
it gives the same diagnostics wherever its populations are declared."""
from __future__ import annotations

import random

import sympy

import privspec
from privspec.model import costs
from privspec.model.graph import Law, Population, Variable

HALF = sympy.Rational(1, 2)


def _scan_covering(populations, components):
    """The scan the index replaces: every population meeting ``components``."""
    return [p for p in populations if not p.components.isdisjoint(components)]


def _scan_naming(populations, name):
    return next((p for p in populations if any(v.name == name for v in p.variables)), None)


def test_index_finds_what_a_scan_finds():
    rng = random.Random(38)
    plain = [Variable(f"v{i}", "categorical", ("a", "b")) for i in range(12)]
    law = Law("categorical", probs=(HALF, HALF))
    for _ in range(200):
        pops = []
        for _ in range(rng.randint(0, 10)):
            if rng.random() < 0.3:  # a combined variable: its parts are its components
                a, b = rng.sample(plain, 2)
                var = Variable(f"{a.name}_{b.name}", "categorical", ("a", "b"), parts=(a.name, b.name))
                pops.append(Population((var,), law))
            else:
                pops.append(Population(tuple(rng.sample(plain, rng.randint(1, 3))), law))
        index = costs.PopulationIndex(pops)
        wanted = {v.name for v in rng.sample(plain, rng.randint(1, 4))}
        assert index.covering(wanted) == _scan_covering(pops, wanted)
        names = [v.name for v in plain] + [v.name for p in pops for v in p.variables] + ["nowhere"]
        for name in names:
            assert index.naming(name) is _scan_naming(pops, name)


def test_population_class_same_with_index_or_list():
    x, y = (Variable(n, "categorical", ("a", "b")) for n in "xy")
    pops = [Population((x,), Law("categorical", probs=(HALF, HALF))),
            Population((y,), Law("categorical", probs=(sympy.sqrt(2) / 2, 1 - sympy.sqrt(2) / 2)))]
    for mech_vars, expected in (((x,), "rational"), ((y,), "irrational"), ((x, y), "irrational")):
        mech = type("M", (), {"variables": mech_vars})()
        assert costs.population_class(mech, pops) == expected
        assert costs.population_class(mech, costs.PopulationIndex(pops)) == expected
    z = Variable("z", "categorical", ("a", "b"))
    assert costs.population_class(type("M", (), {"variables": (x, z)})(), pops) is None  # z has no population


def _codes(p: int, where: str) -> list[tuple[str, str]]:
    labels = ", ".join(f"c{i}" for i in range(p))
    lines = [f"variable x: categorical {{{labels}}}", "mechanism m = grr(x, epsilon = 1)",
             "query q = avar(distribution(x) from m by mle)"]
    pop = f"population x ~ categorical({', '.join([f'1/{p}'] * p)})"
    if where == "above":
        lines.insert(1, pop)
    elif where == "below":
        lines.append(pop)
    return [(d.code, d.message) for d in privspec.load("\n".join(lines) + "\n").check()]


def test_spec_priced_the_same_wherever_its_population_is_declared():
    """The population a query is evaluated at decides the exact arithmetic's limit (grr at
    epsilon = 1 by mle: symbolic in w, 8 categories are refused; at a rational population
    8 are allowed and 12 refused), whether it is declared above or below the query."""
    assert [c for c, _ in _codes(8, "none")] == ["E702"]
    assert _codes(8, "above") == _codes(8, "below") == []
    assert [c for c, _ in _codes(12, "above")] == ["E702"]
    assert _codes(12, "above") == _codes(12, "below")
