"""The registry of comparison criteria (privspec.backends.design.criteria): one object per
criterion the language names, its direction and side the language's."""
from __future__ import annotations

from privspec.backends.design.criteria import REGISTRY
from privspec.model.query_kinds import CRITERIA


def test_every_criterion_of_the_language_is_evaluated_once() -> None:
    assert list(REGISTRY) == list(CRITERIA)


def test_a_criterion_knows_its_direction_side_and_meaning() -> None:
    for name, c in REGISTRY.items():
        assert c.name == name and c.side == CRITERIA[name].side and c.meaning == CRITERIA[name].doc
        assert c.smaller_is_better is (CRITERIA[name].better == "lower")
        assert c.better_than(1.0, 2.0) is c.smaller_is_better and not c.better_than(1.0, 1.0)


def test_sample_sizes_and_simulations_are_for_utility_criteria() -> None:
    """Privacy criteria do not depend on n and are not sampling quantities."""
    for c in REGISTRY.values():
        if c.side == "privacy":
            assert c.sample_size is None and c.simulated is None
    assert {c.name for c in REGISTRY.values() if c.sample_size} == {"max_se", "ci_width", "max_cv", "power"}
    assert {c.name for c in REGISTRY.values() if c.simulated} == {"avar_trace", "avar_max", "max_se", "ci_width", "max_cv",
                                                                 "mse"}
