"""A comparison over plausible populations (issue 35, "robust to the population"): the
setting ``at populations = dirichlet(C)`` or ``= [LAW, ...]``, its checks, the worst case
of every criterion over the set with where it is reached, and whether each target is met
at every plausible population."""
from __future__ import annotations

import math

import numpy as np
import pytest

import privspec
from privspec.backends.design.robust import dirichlet_laws
from privspec.results.comparison import ComparisonDocument
from privspec.results.comparison_tables import blocks

HEAD = ("variable x: categorical {a, b, c}\npopulation x ~ categorical(1/2, 3/10, 1/5)\n"
        "variable s: continuous\npopulation s ~ normal(0, 1)\n")
EPS = 2.0
N = 500


def compare(block: str) -> ComparisonDocument:
    return privspec.load(HEAD + block).compare()["d"].value


@pytest.mark.parametrize("setting, code, words", [
    ("dirichlet(0)", "E309", "concentration positive"),
    ("dirichlet(-5)", "E309", "concentration positive"),
    ("dirichlet(50, draws = 0)", "E309", "draws at least 1"),
    ("dirichlet(50, draws = 20000)", "E309", "at most 10,000 draws"),
    ("dirichlet(50, sead = 1)", "E205", "draws seed"),
    ("[categorical(1/2, 1/2)]", "E310", "2 shares 3 categories"),
    ("[categorical(1/2, 1/2, 1/2)]", "E302", "sum to 1"),
    ("[categorical(3/2, -1/2, 0)]", "E301", "outside [0, 1]"),
    ("[normal(0, 1)]", "E206", "categorical(SHARES...)"),
    ("[]", "E205", "empty"),
    ("uniform", "E206", "plausible populations"),
])
def test_populations_setting_is_checked(setting: str, code: str, words: str) -> None:
    spec = privspec.load(HEAD + f"compare d for distribution(x) at populations = {setting} "
                                "{ g = grr(x, epsilon = 2) } by max_se")
    assert [d.code for d in spec.errors] == [code], spec.render_diagnostics()
    text = spec.render_diagnostics()
    assert all(w in text for w in words.split()), text


def test_a_dirichlet_on_a_continuous_variable_is_refused() -> None:
    spec = privspec.load(HEAD + "compare d for mean(s) at populations = dirichlet(100) "
                                "{ i = interval(s, case1(normal(0, 1))) } by coverage")
    assert [d.code for d in spec.errors] == ["E401"], spec.render_diagnostics()
    assert "continuous" in spec.render_diagnostics()


def test_valid_settings_parse() -> None:
    for setting in ("dirichlet(200)", "dirichlet(1/2, draws = 10, seed = 3)",
                    "[categorical(1/3, 1/3, 1/3), categorical(0.8, 0.1, 0.1)]"):
        spec = privspec.load(HEAD + f"compare d for distribution(x) at n = 10, populations = {setting} "
                                    "{ g = grr(x, epsilon = 2) } by max_se")
        assert spec.ok, spec.render_diagnostics()
    spec = privspec.load(HEAD + "compare d for mean(s) at populations = [normal(1/2, 1), normal(1, 2)] "
                                "{ i = interval(s, case1(normal(0, 1))) } by coverage")
    assert spec.ok, spec.render_diagnostics()


def grr_max_se(w: list[float]) -> float:
    """max_k sqrt(avar_kk / n) of GRR's moment estimator, by hand: lam (1 - lam) / (p - q)^2."""
    e = math.exp(EPS)
    p, q = e / (e + 2), 1 / (e + 2)
    lam = (p - q) * np.array(w) + q
    return float(np.sqrt((lam * (1 - lam)).max() / (p - q) ** 2 / N))


@pytest.mark.slow   # every criterion at each listed population (5 s)
def test_the_worst_case_over_a_list_is_the_hand_computed_one() -> None:
    doc = compare(f"compare d for distribution(x) at n = {N}, populations = [categorical(1/3, 1/3, 1/3), "
                  "categorical(0.58, 0.32, 0.1)] { g = grr(x, epsilon = 2) } by max_se, epsilon")
    v = doc.candidates[0].values["max_se"]
    plug_in, uniform, near_half = grr_max_se([.5, .3, .2]), grr_max_se([1 / 3] * 3), grr_max_se([.58, .32, .1])
    assert v.value == pytest.approx(plug_in, rel=1e-9)
    assert near_half > plug_in > uniform            # the worst is a listed population, not the plug-in
    assert v.worst == pytest.approx(near_half, rel=1e-9) and v.worst_at == "categorical(0.58, 0.32, 0.1)"
    eps = doc.candidates[0].values["epsilon"]
    assert eps.worst == eps.value == EPS and "the same at each" in eps.worst_at
    # the plug-in is in the set: where it is the worst, it is named
    doc = compare(f"compare d for distribution(x) at n = {N}, populations = [categorical(1/3, 1/3, 1/3)] "
                  "{ g = grr(x, epsilon = 2) } by max_se")
    v = doc.candidates[0].values["max_se"]
    assert v.worst == pytest.approx(plug_in, rel=1e-9) and v.worst_at == "the declared population"
    assert "categorical(1/3, 1/3, 1/3)" in doc.populations


def test_the_worst_case_is_never_better_than_the_plug_in() -> None:
    doc = compare("compare d for distribution(x) at n = 400, test = proportion(a, 0.4), "
                  "populations = dirichlet(30, draws = 12, seed = 5) {\n"
                  "  pairs = subset(x, sizes {2: 1})\n  g1 = grr(x, epsilon = 1)\n  g3 = grr(x, epsilon = 3)\n"
                  "} by avar_trace, max_se, ci_width, mse, power, coverage, mutual_information, prediction, "
                  "individual, epsilon")
    assert "12 draws" in doc.populations and "concentration 30" in doc.populations
    seen = 0
    for row in doc.candidates:
        for crit, v in row.values.items():
            if v.value is None:
                assert v.worst is None
                continue
            better = doc.criterion_info[crit].better
            assert v.worst is not None, (row.name, crit, v.worst_at)
            assert (v.worst >= v.value - 1e-12) if better == "lower" else (v.worst <= v.value + 1e-12), (row.name, crit)
            seen += 1
            if v.worst != v.value:
                assert v.worst_at.startswith("draw ")
    assert seen >= 25


def test_a_target_met_at_the_plug_in_but_not_everywhere() -> None:
    plug_in, worst = grr_max_se([.5, .3, .2]), grr_max_se([.58, .32, .1])
    target = float(f"{(plug_in + worst) / 2:.4g}")    # the table shows a target to 4 digits
    assert plug_in < target < worst
    doc = compare(f"compare d for distribution(x) at n = {N}, populations = [categorical(0.58, 0.32, 0.1)] "
                  f"target max_se <= {target}, epsilon <= 3 {{ g = grr(x, epsilon = 2) }} by max_se")
    row = doc.candidates[0]
    key = f"max_se <= {target:g}"
    assert row.targets[key] is True and row.targets_everywhere[key] is False
    assert row.targets_everywhere["epsilon <= 3"] is True
    out = doc.to_dict()
    assert out["candidates"][0]["targets_everywhere"] == {key: False, "epsilon <= 3": True}
    again = ComparisonDocument.from_dict(out)
    assert again.populations == doc.populations and again.candidates[0].targets_everywhere == row.targets_everywhere
    text = "\n".join(r for b in blocks(doc) for row_ in b.rows for r in row_)
    assert "not everywhere" in text and "(worst " in text


def test_without_a_set_no_new_keys() -> None:
    doc = compare("compare d for distribution(x) at n = 100 target max_se <= 0.1 { g = grr(x, epsilon = 2) } by max_se")
    out = doc.to_dict()
    assert "populations" not in out and "targets_everywhere" not in out["candidates"][0]
    assert "worst" not in out["candidates"][0]["values"]["max_se"]


def test_a_continuous_list() -> None:
    doc = compare("compare d for mean(s) at n = 200, populations = [normal(1/2, 1), normal(0, 2)] "
                  "{ i = interval(s, case1(normal(0, 1))) by mle(normal) } by max_se, coverage")
    v = doc.candidates[0].values
    assert v["max_se"].worst > v["max_se"].value and v["max_se"].worst_at == "normal(0, 2)"
    assert v["coverage"].worst <= v["coverage"].value


def test_dirichlet_draws_are_seeded_and_keep_zero_shares() -> None:
    w = np.array([0.6, 0.4, 0.0])
    a, b = dirichlet_laws(w, 50.0, 30, 7), dirichlet_laws(w, 50.0, 30, 7)
    assert [t for t, _ in a] == [t for t, _ in b]
    shares = np.array([[float(x) for x in law.probs] for _, law in a])
    assert (shares[:, 2] == 0).all() and np.allclose(shares.sum(axis=1), 1)
    assert abs(shares[:, 0].mean() - 0.6) < 0.05
