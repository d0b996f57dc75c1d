"""Planning RRreg's two-group designs (issue 37): the truth declared in the populations
(``categorical(0.3, 0.7, cheaters = 0.1)``, ``honesty = 0.8``), ``avar`` against the
inverse of a numerical Hessian of the two groups' expected binomial log likelihood written
here in each design's own parameters, seeded simulations' coverage, ``sample_size`` and
``power`` against their formulas, ``compare`` beside one-group designs, and the spec errors
of the new declarations."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import privspec
from privspec.errors import SpecError

P1, P2 = 0.3, 0.7
W = (0.4, 0.6)      # the groups' shares: unequal, so a swapped w_g would show


def _spec(extra: str, trait: str = "categorical(0.3, 0.7, cheaters = 0.1, honesty = 0.8)") -> privspec.Spec:
    return privspec.load(f"""variable y: categorical {{yes, no}}
variable g: categorical {{first, second}}
variable u: categorical {{yes, no}}
population y ~ {trait}
population g ~ categorical({W[0]}, {W[1]})
population u ~ categorical(0.25, 0.75)
mechanism c = cdm(y, p1 = {P1}, p2 = {P2}, group = g)
mechanism s = sld(y, p1 = {P1}, p2 = {P2}, group = g)
mechanism q = uqm(y, p1 = {P1}, p2 = {P2}, group = g, unrelated = u)
""" + extra)


# each design's yes rate per group in parameters whose first is the trait's share and whose second
# is the latent share the design reports (cdm: the cheaters gamma, sld: the honesty t, uqm: pi_u),
# written from the papers, not from the back end's affine form
RATES = {
    "c": lambda pi, gamma, p: pi + p * (1 - pi - gamma),
    "s": lambda pi, t, p: pi * t + (1 - pi) * (1 - p),
    "q": lambda pi, pu, p: p * pi + (1 - p) * pu,
}
TRUTH = {"c": (0.3 * 0.9, 0.1), "s": (0.3, 0.8), "q": (0.3, 0.25)}


def _expected_loglik(mech: str, theta: np.ndarray, truth: tuple[float, float]) -> float:
    """E log L per respondent: group g (share w_g) binomial at its rate, counts at their means."""
    total = 0.0
    for w, p in zip(W, (P1, P2)):
        lam0 = RATES[mech](*truth, p)
        lam = RATES[mech](theta[0], theta[1], p)
        total += w * (lam0 * math.log(lam) + (1 - lam0) * math.log(1 - lam))
    return total


def _numerical_avar(mech: str) -> np.ndarray:
    """The inverse of minus the numerical Hessian (central differences) at the truth."""
    t0 = np.array(TRUTH[mech])
    h = 1e-4

    def f(t: np.ndarray) -> float:
        return _expected_loglik(mech, t, TRUTH[mech])

    H = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * h, np.eye(2)[j] * h
            H[i, j] = (f(t0 + ei + ej) - f(t0 + ei - ej) - f(t0 - ei + ej) + f(t0 - ei - ej)) / (4 * h * h)
    return np.linalg.inv(-H)


@pytest.mark.parametrize("mech, latent", [("c", "cheaters"), ("s", "honesty"), ("q", None)])
def test_avar_is_the_inverse_of_the_numerical_hessian(mech: str, latent: str | None) -> None:
    queries = f"query v = avar(distribution(y) from {mech} by mle)\n"
    if latent:
        queries += f"query l = avar({latent}(y) from {mech} by mle)\n"
    res = _spec(queries).analyze()
    V = _numerical_avar(mech)
    v = res["v"]
    assert v.value.data[0][0] == pytest.approx(V[0, 0], rel=1e-5)
    assert v.value.data[0][1] == pytest.approx(-V[0, 0], rel=1e-5)
    params = {p["name"]: p for p in v.parameters}
    assert params["pi"]["truth"] == pytest.approx(TRUTH[mech][0])
    if latent:
        assert res["l"].value.data[0][0] == pytest.approx(V[1, 1], rel=1e-5)
        assert res["l"].value.rows == (latent,)
    else:
        assert params["pi_unrelated"]["avar"] == pytest.approx(V[1, 1], rel=1e-5)


def test_the_cheaters_are_a_share_of_everyone_and_default_to_none() -> None:
    """cdm's honest carriers are p (1 - gamma); without cheaters = ..., pi = p and gamma = 0;
    sld's honesty is 1 unless declared."""
    res = _spec("query v = avar(distribution(y) from c by mle)\nquery w = avar(distribution(y) from s by mle)\n",
                trait="categorical(0.3, 0.7)").analyze()
    assert {p["name"]: p["truth"] for p in res["v"].parameters} == pytest.approx(
        {"pi": 0.3, "beta": 0.7, "gamma": 0.0})
    assert {p["name"]: p["truth"] for p in res["w"].parameters} == pytest.approx({"pi": 0.3, "t": 1.0})


def test_the_intervals_cover_in_a_seeded_simulation() -> None:
    """400 surveys of 2,000 respondents per design: each parameter's 95% Wald interval covers
    its truth within 3.5 standard errors of 0.95 (3.5 * 0.0109 = 0.038), the estimates' bias
    within 3.5 of their standard errors, and n times their variance within 25% of the avar."""
    res = _spec("query ec = estimate distribution(y) from c by mle\n"
                "query es = estimate honesty(y) from s by mle\n"
                "query eu = estimate distribution(y) from q by mle\n").simulate(n=2000, reps=400, seed=11)
    tol = 3.5 * math.sqrt(0.95 * 0.05 / 400)
    for name in ("ec", "es", "eu"):
        table = res[name].value["parameters"]
        assert res[name].skipped == 0
        for param, row in table.items():
            assert abs(row["ci95_coverage"] - 0.95) < tol, (name, param, row)
            assert abs(row["bias"]) < 3.5 * math.sqrt(row["n_var_empirical"] / 2000 / 400), (name, param, row)
            assert row["n_var_empirical"] == pytest.approx(row["analytic"], rel=0.25), (name, param, row)


def test_the_simulation_reports_the_estimands_cells_as_a_finite_mechanisms_does() -> None:
    """The cells of distribution(y) are (pi, 1 - pi), cdm's pi the honest carriers; those of
    cheaters(y) the one share; the scaled loss n ||est - truth||^2 has the avar's trace as
    its limit."""
    res = _spec("query d = estimate distribution(y) from c by mle\nquery e = estimate cheaters(y) from c by mle\n"
                ).simulate(n=1000, reps=200, seed=5)
    d, e = res["d"].value, res["e"].value
    assert d["truth"].values == pytest.approx((0.27, 0.73)) and e["truth"].values == pytest.approx((0.1,))
    assert d["mean"].values[0] == pytest.approx(d["parameters"]["pi"]["mean"])
    assert d["mean"].values[0] + d["mean"].values[1] == pytest.approx(1.0)
    assert e["mean"].values[0] == pytest.approx(e["parameters"]["gamma"]["mean"])
    assert d["scaled_loss_limit"] == pytest.approx(2 * d["parameters"]["pi"]["analytic"])
    assert d["scaled_loss_mean"] == pytest.approx(d["scaled_loss_limit"], abs=4 * d["scaled_loss_se"])
    assert np.asarray(d["n_cov_empirical"].data)[0, 1] == pytest.approx(-d["parameters"]["pi"]["n_var_empirical"])


def test_compare_with_replications_simulates_the_two_group_designs() -> None:
    spec = _spec("""compare sim for cheaters(y) at n = 1000 {
    narrow = cdm(y, p1 = 0.3, p2 = 0.7, group = g)
    wide   = cdm(y, p1 = 0.1, p2 = 0.9, group = g)
} by avar_trace
""")
    rows = {c["name"]: c for c in spec.compare(reps=100, seed=2)["sim"].to_dict()["value"]["candidates"]}
    for row in rows.values():
        got = row["values"]["avar_trace"]
        assert got["simulated"] == pytest.approx(got["value"], abs=4 * got["mc_error"])


def test_the_simulation_is_seeded() -> None:
    spec = _spec("query e = estimate cheaters(y) from c by mle\n")
    a = spec.simulate(n=500, reps=30, seed=4)["e"].value
    b = spec.simulate(n=500, reps=30, seed=4)["e"].value
    assert a == b


@pytest.mark.parametrize("estimand, mech, target", [("distribution", "c", 0.02), ("cheaters", "c", 0.015),
                                                    ("honesty", "s", 0.05), ("distribution", "q", 0.03)])
def test_sample_size_inverts_avar(estimand: str, mech: str, target: float) -> None:
    res = _spec(f"query v = avar({estimand}(y) from {mech} by mle)\n"
                f"query n = sample_size({estimand}(y) from {mech}, max_se = {target})\n").analyze()
    v = res["v"].value.data[0][0]
    n = res["n"].value
    assert math.sqrt(v / n) <= target < math.sqrt(v / (n - 1))
    assert n == math.ceil(v / target ** 2)


def test_power_of_the_cheaters_share_is_the_wald_formula() -> None:
    res = _spec("query v = avar(cheaters(y) from c by mle)\n"
                "query p = power(cheaters(y) from c, n = 2000, test = proportion(cheaters, 0.05))\n").analyze()
    sigma = math.sqrt(res["v"].value.data[0][0])
    s = math.sqrt(2000) * (0.1 - 0.05) / sigma
    z = norm.ppf(0.975)
    assert res["p"].value == pytest.approx(norm.cdf(s - z) + norm.cdf(-s - z), rel=1e-9)


def test_power_of_the_trait_share_uses_the_honest_carriers() -> None:
    """cdm estimates pi = p (1 - gamma) = 0.27: a test of pi = 0.2 has that difference."""
    res = _spec("query v = avar(distribution(y) from c by mle)\n"
                "query p = power(distribution(y) from c, n = 1000, test = proportion(yes, 0.2))\n").analyze()
    s = math.sqrt(1000) * (0.27 - 0.2) / math.sqrt(res["v"].value.data[0][0])
    z = norm.ppf(0.975)
    assert res["p"].value == pytest.approx(norm.cdf(s - z) + norm.cdf(-s - z), rel=1e-9)


def test_compare_ranks_two_group_designs_beside_one_group_designs() -> None:
    spec = _spec("""compare designs for distribution(y) at n = 1000 {
    cheat  = cdm(y, p1 = 0.3, p2 = 0.7, group = g)
    lie    = sld(y, p1 = 0.3, p2 = 0.7, group = g)
    cards  = kuk(y, p1 = 0.8, p2 = 0.2, k = 3)
    warner = rr(y, matrix [[0.8, 0.2], [0.2, 0.8]])
} by avar_trace, max_se
query v = avar(distribution(y) from c by mle)
""")
    rows = {c["name"]: c for c in spec.compare()["designs"].to_dict()["value"]["candidates"]}
    v = spec.analyze(["v"])["v"].value.data[0][0]
    assert rows["cheat"]["family"] == "two_group"
    assert rows["cheat"]["values"]["avar_trace"]["value"] == pytest.approx(2 * v, rel=1e-6)
    assert rows["cheat"]["values"]["max_se"]["value"] == pytest.approx(math.sqrt(v / 1000), rel=1e-6)
    order = sorted(rows, key=lambda c: rows[c]["values"]["avar_trace"]["value"])
    assert [rows[c]["rank"]["avar_trace"] for c in order] == [1, 2, 3, 4]


def test_an_estimate_of_the_cheaters_is_the_fits_gamma() -> None:
    rows = [("yes", "first")] * 350 + [("no", "first")] * 650 + [("yes", "second")] * 560 + [("no", "second")] * 440
    frame = pd.DataFrame(rows, columns=["y", "g"])
    res = _spec("query d = estimate distribution(y) from c by mle\nquery e = estimate cheaters(y) from c by mle\n"
                ).run({"c": frame})
    gamma = res["d"].to_dict()["parameters"]["gamma"]
    e = res["e"].to_dict()
    assert e["value"] == pytest.approx(gamma["estimate"]) and e["se"] == pytest.approx(gamma["se"])
    assert e["ci95"] == pytest.approx(gamma["ci95"])


@pytest.mark.parametrize("text, code, where, words", [
    ("population y ~ categorical(0.3, 0.7, cheaters = 1.2)", "E301", (4, 49), "outside [0, 1]"),
    ("population y ~ categorical(0.3, 0.7, honesty = -0.1)", "E301", (4, 48), "outside [0, 1]"),
    ("population y ~ categorical(0.3, 0.7, cheaters = 0.1, cheaters = 0.2)", "E311", (4, 54), "twice"),
    ("population t ~ categorical(0.2, 0.3, 0.5, cheaters = 0.1)", "E401", (4, 43), "binary variable"),
    ("population y ~ categorical(0.3, 0.7, cheater = 0.1)", "E205", (4, 38), "no option 'cheater'"),
])
def test_a_wrong_latent_share_is_refused_where_it_is_written(text: str, code: str, where, words: str) -> None:
    src = "variable y: categorical {yes, no}\nvariable t: categorical {a, b, c}\nvariable g: categorical {f, s}\n"
    spec = privspec.load(src + text + "\n")
    errors = [d for d in spec.diagnostics if d.severity == "error"]
    assert [d.code for d in errors] == [code]
    assert words in errors[0].message
    with pytest.raises(SpecError) as info:
        spec.model
    assert f"<string>:{where[0]}:{where[1]}:" in str(info.value)
    assert "hint:" in str(info.value) or code == "E311"


def test_a_category_named_like_a_latent_share_stays_a_category() -> None:
    spec = privspec.load("variable y: categorical {cheaters, honest}\n"
                         "population y ~ categorical(cheaters = 0.2, honest = 0.8)\n")
    assert not [d for d in spec.diagnostics if d.severity == "error"]
    assert spec.model.populations[0].latent == ()


@pytest.mark.parametrize("query, code, words", [
    ("query v = avar(cheaters(y) from s by mle)", "E501", "cdm()"),
    ("query v = avar(honesty(y) from c by mle)", "E501", "sld()"),
    ("query p = power(cheaters(y) from c, n = 100, test = proportion(yes, 0.05))", "E205", "proportion(cheaters"),
])
def test_a_latent_estimand_is_refused_on_another_design(query: str, code: str, words: str) -> None:
    errors = [d for d in _spec(query + "\n").diagnostics if d.severity == "error"]
    assert [d.code for d in errors] == [code]
    assert words in errors[0].message


def test_planning_without_the_groups_population_says_what_to_declare() -> None:
    spec = privspec.load("""variable y: categorical {yes, no}
variable g: categorical {first, second}
population y ~ categorical(0.3, 0.7)
mechanism c = cdm(y, p1 = 0.3, p2 = 0.7, group = g)
query v = avar(distribution(y) from c by mle)
""")
    failure = spec.analyze().failures["v"]
    assert failure.diagnostics[0].code == "B121" and "population g ~" in failure.diagnostics[0].hint


def test_power_of_a_difference_puts_the_second_groups_honest_carriers_delta_higher() -> None:
    """cdm at 10% cheaters: the second group's variance is at pi = 0.27 + 0.05, i.e. a trait
    share of 0.32 / 0.9 (not of 0.35, which would put pi at 0.315)."""
    spec = _spec("query p = power(distribution(y) from c, n = 3000, test = difference(yes, 0.05))\n")
    second = _spec("query v = avar(distribution(y) from c by mle)\n",
                   trait="categorical(32/90, 58/90, cheaters = 0.1)").analyze()["v"]
    first = spec.analyze(["p"])
    v1 = _spec("query v = avar(distribution(y) from c by mle)\n").analyze()["v"].value.data[0][0]
    v2 = second.value.data[0][0]
    s = math.sqrt(3000) * 0.05 / math.sqrt(v1 + v2)
    z = norm.ppf(0.975)
    assert first["p"].value == pytest.approx(norm.cdf(s - z) + norm.cdf(-s - z), rel=1e-6)


def test_a_truth_where_every_answer_is_alike_has_no_avar() -> None:
    """Everyone cheats: both groups say no, the estimates sit on a vertex (B130)."""
    failure = _spec("query v = avar(distribution(y) from c by mle)\n",
                    trait="categorical(0.3, 0.7, cheaters = 1)").analyze().failures["v"]
    assert failure.diagnostics[0].code == "B130" and "yes rate" in failure.diagnostics[0].message


def test_a_latent_share_no_design_reads_is_a_warning():
    """W102 where `cheaters` is declared but no cdm observes the variable (it would be ignored);
    none where a cdm does, in a mechanism or a compare candidate."""
    head = ('spec "x"\nvariable cheated: categorical {yes, no}\nvariable group: categorical {first, second}\n'
            "population cheated ~ categorical(0.3, 0.7, cheaters = 0.1)\n")
    alone = privspec.load(head + "mechanism k = kuk(cheated, p1 = 0.8, p2 = 0.2, k = 3)\n")
    [d] = [d for d in alone.check() if d.code == "W102"]
    assert d.severity == "warning" and "no cdm()" in d.message
    assert head[d.span.start:d.span.end].startswith("population cheated")
    read = privspec.load(head + "mechanism c = cdm(cheated, p1 = 0.3, p2 = 0.7, group = group)\n")
    assert not [d for d in read.check() if d.code == "W102"]
    in_compare = privspec.load(head + "compare c for distribution(cheated) at n = 1000 {\n"
                                      "    a = cdm(cheated, p1 = 0.3, p2 = 0.7, group = group)\n"
                                      "} by avar_trace\n")
    assert not [d for d in in_compare.check() if d.code == "W102"]
