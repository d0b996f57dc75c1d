"""Numeric local-DP mechanisms through the language: the front end's checks, epsilon read
back, avar against independent computations, estimates on privatized files, simulation
(interval coverage), planning and compare.

Statistical tolerances (fixed seeds): an estimate within 4 of its standard errors of the
truth; the 95% intervals' coverage in R replications within 4 binomial standard errors
sqrt(0.95 * 0.05 / R) of 0.95; n times the variance of R estimates within 4 of its standard
errors (about sqrt(2/(R - 1)) relatively, the estimates being close to normal) of the avar.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import sympy

import privspec
from privspec.backends.numeric.mechanisms import MECHANISMS, mechanism

NAMES = tuple(MECHANISMS)
HEAD = """
variable y: continuous [20, 150]
population y ~ uniform(20, 150)
"""


def _spec(body: str, head: str = HEAD) -> privspec.Spec:
    spec = privspec.load(head + body)
    assert spec.ok, spec.render_diagnostics()
    return spec


# ---- the front end ------------------------------------------------------------------------------------
def test_an_unbounded_variable_is_refused():
    spec = privspec.load("variable y: continuous\nmechanism M = duchi(y, epsilon = 1)\n")
    assert [d.code for d in spec.errors] == ["E406"]


def test_a_categorical_variable_is_refused():
    spec = privspec.load("variable c: categorical {a, b}\nmechanism M = piecewise(c, epsilon = 1)\n")
    assert not spec.ok


def test_ems_needs_square_wave():
    spec = privspec.load(HEAD + "mechanism M = duchi(y, epsilon = 1)\nquery f = estimate cdf(y) from M by ems\n")
    assert [d.code for d in spec.errors] == ["E501"]


def test_interval_estimators_do_not_apply():
    spec = privspec.load(HEAD + "mechanism M = hm(y, epsilon = 1)\nquery f = estimate mean(y) from M by npmle\n")
    assert [d.code for d in spec.errors] == ["E501"]


# ---- epsilon ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_epsilon_read_back_equals_the_declared_one_exactly(name):
    spec = _spec(f"mechanism M = {name}(y, epsilon = log(3))\nquery e = epsilon(M)\n")
    r = spec.analyze()["e"]
    assert sympy.simplify(r.value - sympy.log(3)) == 0
    assert sympy.simplify(r.extras["read_back"] - r.extras["declared"]) == 0


# ---- avar ------------------------------------------------------------------------------------------------
def _avar_by_quadrature(name: str, eps: float, lo: float, hi: float) -> float:
    """Var(Y) + E[Var(estimate | Y)] for Y uniform on [lo, hi], by a fine midpoint rule over
    the mechanism's own variance function (independent of the back end's moments)."""
    m = mechanism(name, eps)
    y = lo + (hi - lo) * (np.arange(200_000) + 0.5) / 200_000
    noise = float(np.mean(m.variance(m.to_domain(y, lo, hi)))) * m.value_scale(lo, hi) ** 2
    return (hi - lo) ** 2 / 12 + noise


@pytest.mark.parametrize("name", NAMES)
def test_avar_at_the_population(name):
    spec = _spec(f"mechanism M = {name}(y, epsilon = 1.5)\nquery v = avar(mean(y) from M by unbiased)\n")
    r = spec.analyze()["v"]
    assert float(r.value) == pytest.approx(_avar_by_quadrature(name, 1.5, 20, 150), rel=1e-8)
    m = mechanism(name, 1.5)
    assert r.extras["worst_case_noise_unit"] == pytest.approx(m.worst_variance())


def test_duchi_avar_in_closed_form():
    """Duchi on [0, 10], Y uniform: 25 (C^2 - E[t^2]) + Var(Y), E[t^2] = 1/3, C = (e+1)/(e-1)."""
    spec = _spec("mechanism D = duchi(y, epsilon = 1)\nquery v = avar(mean(y) from D by unbiased)\n",
                 head="variable y: continuous [0, 10]\npopulation y ~ uniform(0, 10)\n")
    C = (math.e + 1) / (math.e - 1)
    assert float(spec.analyze()["v"].value) == pytest.approx(25 * (C * C - 1 / 3) + 100 / 12, rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_avar_without_population_is_the_worst_over_populations(name):
    """Brute force over two-point laws on a grid of [a, b] (the maximizing laws are two-point:
    the criterion is linear in the law given its mean)."""
    spec = _spec(f"mechanism M = {name}(y, epsilon = 0.8)\nquery v = avar(mean(y) from M by unbiased)\n",
                 head="variable y: continuous [0, 4]\n")
    m = mechanism(name, 0.8)
    g = np.linspace(0, 4, 161)
    a, b = np.meshgrid(g, g)
    best = 0.0
    for w in np.linspace(0, 1, 101):
        mean = w * a + (1 - w) * b
        var = w * (a - mean) ** 2 + (1 - w) * (b - mean) ** 2
        noise = (w * m.variance(m.to_domain(a, 0, 4)) + (1 - w) * m.variance(m.to_domain(b, 0, 4))) \
            * m.value_scale(0, 4) ** 2
        best = max(best, float(np.max(var + noise)))
    value = float(spec.analyze()["v"].value)
    assert value >= best * (1 - 1e-12)
    assert value == pytest.approx(best, rel=1e-3)


# ---- data --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_estimate_on_privatized_reports(name):
    spec = _spec(f"mechanism M = {name}(y, epsilon = 2)\nquery m = estimate mean(y) from M by unbiased\n"
                 "query v = avar(mean(y) from M by unbiased)\n")
    y = np.random.default_rng(4).uniform(20, 150, 20_000)
    reports = spec.privatize(pd.DataFrame({"y": y}), "M", seed=9)
    lo, hi = MECHANISMS[name](2.0).report_range()
    x = reports["y"].astype(float)
    assert x.min() >= lo and x.max() <= hi
    r = spec.run({"M": reports})["m"]
    assert abs(r.value - y.mean()) <= 4 * r.se
    # the standard error is honest: close to sqrt(avar / n)
    avar = float(spec.analyze()["v"].value)
    assert r.se == pytest.approx(math.sqrt(avar / len(y)), rel=0.05)
    lo95, hi95 = r.ci95
    assert lo95 < r.value < hi95


@pytest.mark.parametrize("name", ["duchi", "square_wave"])
def test_privatize_in_pieces_equals_whole(name):
    spec = _spec(f"mechanism M = {name}(y, epsilon = 1)\n")
    frame = pd.DataFrame({"y": np.linspace(20, 150, 50)})
    whole = spec.privatize(frame, "M", seed=1)
    piece = spec.privatize(frame.iloc[30:].reset_index(drop=True), "M", seed=1, offset=30)
    assert list(whole["y"].iloc[30:]) == list(piece["y"])


def test_reports_outside_the_range_are_refused():
    spec = _spec("mechanism M = duchi(y, epsilon = 1)\nquery m = estimate mean(y) from M by unbiased\n")
    C = (math.e + 1) / (math.e - 1)
    res = spec.run({"M": pd.DataFrame({"y": [C, -C, 99.0]})})
    assert "D106" in str(res.failures["m"])
    assert spec.run({"M": pd.DataFrame({"y": [C, -C, C]})})["m"].value == pytest.approx(20 + 65 * (1 + C / 3))


def test_reports_a_mechanism_never_gives_are_refused():
    """Duchi's reports are +-C exactly, and so are HM's at or below eps* (Duchi alone there):
    a value strictly inside the range is no report of theirs (D106 naming its row); HM above
    eps* mixes in piecewise, whose reports fill the range."""
    spec = _spec("mechanism M = duchi(y, epsilon = 1)\nquery m = estimate mean(y) from M by unbiased\n")
    C = (math.e + 1) / (math.e - 1)
    d = spec.run({"M": pd.DataFrame({"y": [C, 0.5, -C]})}).failures["m"].diagnostics[0]
    assert d.code == "D106" and d.rows == (2,) and "never gives" in d.message
    low = _spec("mechanism H = hm(y, epsilon = 0.5)\nquery m = estimate mean(y) from H by unbiased\n")
    C = 1 / math.tanh(0.25)
    assert low.run({"H": pd.DataFrame({"y": [C, 0.5]})}).failures["m"].diagnostics[0].code == "D106"
    high = _spec("mechanism H = hm(y, epsilon = 3)\nquery m = estimate mean(y) from H by unbiased\n")
    assert "m" in high.run({"H": pd.DataFrame({"y": [0.5, -0.25, 1.0]})})


def test_ems_on_data_recovers_the_shape():
    """Y ~ Beta(2, 5) scaled to [20, 150], 100,000 square-wave reports at epsilon = 3: the
    EMS histogram's distribution function within 0.05 of the truth at every bucket edge."""
    from scipy import stats
    spec = _spec("mechanism S = square_wave(y, epsilon = 3)\nquery f = estimate cdf(y) from S by ems\n")
    y = 20 + 130 * np.random.default_rng(5).beta(2, 5, 100_000)
    r = spec.run({"S": spec.privatize(pd.DataFrame({"y": y}), "S", seed=2)})["f"]
    probs = np.array(r.value.values)
    assert probs.sum() == pytest.approx(1.0)
    edges = np.linspace(0, 1, len(probs) + 1)[1:]
    assert np.max(np.abs(np.cumsum(probs) - stats.beta(2, 5).cdf(edges))) < 0.05
    assert r.extras["converged"]


# ---- simulation: unbiasedness, the variance and the intervals' coverage ----------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_simulated_coverage_and_variance(name):
    R, n = 600, 500
    spec = _spec(f"mechanism M = {name}(y, epsilon = 1)\nquery v = avar(mean(y) from M by unbiased)\n")
    s = spec.simulate(n=n, reps=R, seed=17)["v"].value
    assert abs(s["ci95_coverage"] - 0.95) <= 4 * math.sqrt(0.95 * 0.05 / R)
    assert abs(s["bias"]) <= 4 * s["sd"] / math.sqrt(R)
    assert s["n_var_empirical"] == pytest.approx(s["analytic"], rel=4 * math.sqrt(2 / (R - 1)))


# ---- planning and compare ------------------------------------------------------------------------------------
def test_sample_size_is_avar_over_the_squared_target():
    spec = _spec("mechanism H = hm(y, epsilon = 1)\nquery v = avar(mean(y) from H by unbiased)\n"
                 "query n = sample_size(mean(y) from H by unbiased, max_se = 1)\n")
    res = spec.analyze()
    assert res["n"].value == math.ceil(float(res["v"].value) / 1.0 - 1e-9)


def test_compare_ranks_the_numeric_mechanisms_beside_an_interval_one():
    spec = _spec("""
compare ldp for mean(y) at n = 1000 target max_se <= 5 {
    lap = laplace(y, epsilon = 1)
    pm = piecewise(y, epsilon = 1)
    hm = hm(y, epsilon = 1)
    c1 = interval(y, case1(uniform(20, 150))) by unbiased
} by max_se, epsilon
""")
    doc = spec.compare()["ldp"].value
    text = str(doc)
    assert "lap" in text and "c1" in text


def test_simulated_ems_error_is_small():
    spec = _spec("mechanism S = square_wave(y, epsilon = 3)\nquery f = estimate cdf(y) from S by ems\n")
    s = spec.simulate(n=20_000, reps=5, seed=3)["f"].value
    assert s["mean_sup_error"] < 0.05


def test_conditional_standard_errors_are_refused():
    spec = _spec("mechanism M = duchi(y, epsilon = 1)\n"
                 "query m = estimate mean(y) from M by unbiased(se = conditional)\n")
    frame = spec.privatize(pd.DataFrame({"y": np.linspace(20, 150, 100)}), "M", seed=1)
    assert "B140" in str(spec.run({"M": frame}).failures["m"])
