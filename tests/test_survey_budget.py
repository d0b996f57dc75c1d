"""A survey's budget (issue 35): ``allocate(...)`` shares a total epsilon among the questions
of one survey (declared mechanisms with a free epsilon), minimizing the weighted utility
loss, with the per-variable accounting of privacy on a subset of variables (each variable's
epsilon: the sum over the randomizers that observe it; a product's factors each on their own
variables).

Checks: the optimum satisfies the KKT conditions (finite differences here), beats the equal
split and every one of 120 seeded random feasible splits and a fine grid, splits equally
between identical questions of equal weight, and the front end refuses what cannot be
allocated with its E-code.
"""
from __future__ import annotations

import numpy as np
import pytest

import privspec
from privspec.backends.design.allocation import Problem

HEAD = '''variable race: categorical {"Amer-Indian-Eskimo", "Asian-Pac-Islander", Black, Other, White}
variable gender: categorical {Female, Male}
variable income: categorical {Low, High}
population race ~ categorical(0.009551, 0.031909, 0.095943, 0.008323, 0.854274)
population (gender, income) ~ counts [[9592, 1179], [15128, 6662]]
parameter e_race > 0
parameter e_gender > 0
parameter e_income > 0
mechanism q_race = grr(race, epsilon = e_race)
mechanism q_gender = grr(gender, epsilon = e_gender)
mechanism q_income = grr(income, epsilon = e_income)
'''


def _spec(query: str, head: str = HEAD) -> privspec.Spec:
    return privspec.load(head + query)


def _problem(spec: privspec.Spec, name: str = "plan") -> Problem:
    return Problem(spec.model, spec.model.queries[name])


THREE = "query plan = allocate(total = 4, n = 2000, criterion = max_se, weights = {q_race: 2, q_gender: 1, q_income: 1})"


@pytest.fixture(scope="module")
def three() -> tuple[privspec.Spec, object, Problem]:
    spec = _spec(THREE)
    return spec, spec.analyze()["plan"], _problem(spec)


def test_the_allocation_spends_the_total_and_reports_each_part(three) -> None:
    _, r, _ = three
    assert r.kind == "allocation" and list(r.value.labels) == ["q_race", "q_gender", "q_income"]
    assert sum(r.value.values) == pytest.approx(4.0, abs=1e-8)
    assert dict(zip(r.parameters.labels, r.parameters.values)) == pytest.approx(
        dict(zip(["e_race", "e_gender", "e_income"], r.value.values)))
    assert r.weighted_loss == pytest.approx(2 * r.utility.values[0] + r.utility.values[1] + r.utility.values[2])
    assert list(r.equal_epsilon.values) == pytest.approx([4 / 3] * 3)
    assert r.weighted_loss < r.equal_loss
    # the per-variable table: each question spends on its own variable; 'all' is the survey's
    table = np.array(r.per_variable.data)
    assert r.per_variable.rows[-1] == "all" and list(r.per_variable.cols) == ["race", "gender", "income"]
    assert np.diag(table[:3]) == pytest.approx(list(r.value.values))
    assert table[-1] == pytest.approx(table[:3].sum(axis=0))
    assert r.multiplier > 0 and "SLSQP" in r.method


def test_the_optimum_satisfies_the_kkt_conditions(three) -> None:
    _, r, prob = three
    theta = np.array(r.parameters.values)
    assert r.kkt_residual < 1e-3
    # independently: the weighted marginal utilities are equal across the interior parameters
    h = 1e-5
    grads = []
    for j in range(len(theta)):
        up, down = theta.copy(), theta.copy()
        up[j] += h
        down[j] -= h
        grads.append((prob.loss(up) - prob.loss(down)) / (2 * h))
    grads = np.array(grads)
    assert np.all(grads < 0)                                    # more epsilon, less loss
    assert grads.max() - grads.min() <= 1e-3 * abs(grads.mean())
    assert -grads.mean() == pytest.approx(r.multiplier, rel=1e-3)


def test_the_optimum_beats_the_equal_split_and_random_feasible_splits(three) -> None:
    _, r, prob = three
    best = r.weighted_loss
    assert best < prob.loss(prob.equal_split())
    rng = np.random.default_rng(35)
    for split in rng.dirichlet(np.ones(3), size=120):
        theta = np.clip(4 * split, 1e-3, None)
        theta *= 4 / theta.sum()
        assert best <= prob.loss(theta) + 1e-12


def test_two_questions_match_a_fine_grid() -> None:
    spec = _spec("query plan = allocate(q_race, q_gender, total = 3, weights = {q_race: 1})")
    r, prob = spec.analyze()["plan"], _problem(spec)
    grid = np.linspace(0.05, 2.95, 146)
    losses = [prob.loss(np.array([x, 3 - x])) for x in grid]
    assert r.weighted_loss <= min(losses) + 1e-12
    assert r.value.values[0] == pytest.approx(grid[int(np.argmin(losses))], abs=0.021)


def test_identical_questions_of_equal_weight_split_equally() -> None:
    head = '''variable a: categorical {x, y, z}
variable b: categorical {x, y, z}
population a ~ categorical(0.2, 0.3, 0.5)
population b ~ categorical(0.2, 0.3, 0.5)
parameter e_a > 0
parameter e_b > 0
mechanism q_a = grr(a, epsilon = e_a)
mechanism q_b = grr(b, epsilon = e_b)
'''
    for criterion in ("max_se", "avar_trace", "max_cv"):
        r = _spec(f"query plan = allocate(q_a, q_b, total = 3, criterion = {criterion})", head).analyze()["plan"]
        assert list(r.value.values) == pytest.approx([1.5, 1.5], abs=1e-6), criterion
        assert r.weighted_loss == pytest.approx(r.equal_loss)


PRODUCT = HEAD + '''parameter e_r2 > 0
mechanism q_pair = product(grr(gender, epsilon = e_gender), grr(income, epsilon = 1))
mechanism q_race2 = grr(race * gender, epsilon = e_r2)
'''


def test_a_product_counts_each_factor_on_its_own_variables_and_fixed_epsilons_count() -> None:
    """The accounting at a given split (no solving: castell's exact avar takes a second)."""
    spec = _spec("query plan = allocate(q_race, q_pair, q_race2, total = 5)", PRODUCT)
    prob = _problem(spec)
    assert [p.name for p in prob.parameters] == ["e_race", "e_gender", "e_r2"]
    assert prob.fixed == 1 and prob.budget == 4                 # the fixed factor spends 1 of 5
    theta = np.array([1.0, 1.5, 0.5])
    assert prob.epsilons(theta) == pytest.approx([1.0, 2.5, 0.5])
    m = prob.per_variable(theta)
    table = {(q, v): x for q, row in zip(m.rows, m.data) for v, x in zip(m.cols, row)}
    assert table["all", "race"] == pytest.approx(1.0 + 0.5)
    assert table["all", "gender"] == pytest.approx(1.5 + 0.5)
    assert table["all", "income"] == pytest.approx(1.0)
    assert table["q_pair", "race"] == 0 and table["q_race2", "gender"] == pytest.approx(0.5)
    # each question's estimand: its variable's distribution, or the joint of what it observes
    kinds = [(q.candidate.estimand.kind, q.candidate.method.name) for q in prob.questions]
    assert kinds == [("distribution", "mom"), ("joint", "castell"), ("joint", "joint")]


@pytest.mark.slow
def test_a_survey_with_a_product_is_allocated_within_its_budget() -> None:
    r = _spec("query plan = allocate(q_race, q_pair, q_race2, total = 5)", PRODUCT).analyze()["plan"]
    eps = dict(zip(r.parameters.labels, r.parameters.values))
    assert sum(eps.values()) == pytest.approx(4.0, abs=1e-8)
    assert dict(zip(r.value.labels, r.value.values))["q_pair"] == pytest.approx(eps["e_gender"] + 1)
    assert r.weighted_loss < r.equal_loss and r.kkt_residual < 1e-3
    assert "fixed epsilons spend 1" in r.note


def test_a_parameter_s_upper_bound_is_respected() -> None:
    head = HEAD.replace("parameter e_race > 0", "parameter e_race > 0 <= 1")
    r = _spec("query plan = allocate(q_race, q_gender, total = 4, weights = {q_race: 10})", head).analyze()["plan"]
    assert r.value.values[0] == pytest.approx(1.0)
    assert r.value.values[1] == pytest.approx(3.0)


def test_the_result_renders_and_frames() -> None:
    r = _spec(THREE).analyze()["plan"]
    text = str(r)
    for word in ("per_variable", "equal_loss", "weighted_loss", "kkt_residual"):
        assert word in text
    frame = r.to_frame()
    assert list(frame.index) == ["q_race", "q_gender", "q_income"]
    assert {"epsilon", "weight", "max_se", "equal_epsilon", "equal_max_se"} <= set(frame.columns)
    d = r.to_dict()
    assert d["kind"] == "allocation" and d["equal_loss"] > d["weighted_loss"]


@pytest.mark.parametrize("query,code,words", [
    ("query plan = allocate(q_race, q_fixed, total = 4)", "E501", "no free epsilon"),
    ("query plan = allocate(q_race, q_subset, total = 4)", "E501", "no epsilon to allocate"),
    ("query plan = allocate(q_race, q_twice, total = 4)", "E501", "one parameter or a number"),
    ("query plan = allocate(q_race, q_gender, total = 0)", "E309", "positive"),
    ("query plan = allocate(q_race, q_gender, total = -1)", "E309", "positive"),
    ("query plan = allocate(total = 4, weights = {q_race: 0, q_gender: 1})", "E309", "weight of q_race"),
    ("query plan = allocate(total = 4, weights = {q_race: -2, q_gender: 1})", "E309", "weight of q_race"),
    ("query plan = allocate(q_race, q_gender, total = 4, criterion = epsilon)", "E502", "utility criterion"),
    ("query plan = allocate(q_race, q_gender)", "E504", "total epsilon"),
    ("query plan = allocate(total = 4)", "E504", "questions"),
    ("query plan = allocate(q_race, total = 4, weights = {q_gender: 1})", "E205", "not among the questions"),
    ("query plan = allocate(q_race, q_race, total = 4)", "E202", "named twice"),
    ("query plan = allocate(q_race, q_gender, total = 4, budget = 2)", "E205", "unknown option"),
    ("query plan = allocate(q_big, q_gender, total = 4)", "E309", "spent before it is shared"),
])
def test_what_cannot_be_allocated_is_refused(query: str, code: str, words: str) -> None:
    head = HEAD + '''parameter e_big >= 5
mechanism q_fixed = grr(income, epsilon = 1)
mechanism q_subset = subset(race, uniform)
mechanism q_twice = grr(income, epsilon = 2 * e_income)
mechanism q_big = grr(race, epsilon = e_big)
'''
    errors = _spec(query, head).errors
    assert [d.code for d in errors] == [code], errors
    assert words in errors[0].message
