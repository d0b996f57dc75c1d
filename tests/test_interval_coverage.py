"""Privacy coverage tau(M) = E[L(S_Z)]: exact, quadrature and quasi-Monte Carlo against each
other and against simulation; Theorems 1, 4, 5 and Proposition 2 as tests."""
from __future__ import annotations

import numpy as np
import pytest
import sympy
from hypothesis import given, settings, strategies as st
from scipy import stats

from privspec.model.graph import IntervalMechanism, Law, ProgressiveMechanism, SelectiveMechanism, Variable
from privspec.backends.interval.coverage import (case1_coverage, case2_coverage, composition_bound,
                                                 ensemble_coverage, exact_uniform_coverage, ignorability,
                                                 partition_coverage, progressive_coverage)
from privspec.backends.interval.laws import law_distribution
from privspec.backends.interval.ranges import range_coverage
from privspec.backends.interval.reports import coverage_from_data, mechanism_coverage
from privspec.backends.interval.sampling import sample_interval, sample_progressive, sample_selective

Z = sympy.Integer
SCORE = Variable("score", "continuous")
SALARY = Variable("salary", "continuous", lower=Z(0), upper=Z(150))


def law(family, *params):
    names = {"uniform": ("a", "b"), "normal": ("mean", "sd"), "logistic": ("location", "scale")}[family]
    return Law(family, tuple(zip(names, map(sympy.nsimplify, params))))


def simulated(mech, population, n=200_000, seed=0):
    """Mean individual coverage of simulated reports, and its standard error."""
    rng = np.random.default_rng(seed)
    dist = law_distribution(population)
    y = dist.rvs(n, random_state=rng)
    left, right = sample_interval(mech, y, rng)
    cov = range_coverage(left, right, dist.cdf, mech.disclose)
    return cov.mean(), cov.std() / np.sqrt(n)


# ---- the formulas of Theorem 1's proof, exactly and numerically ----------------------------------
def test_case1_uniform_is_two_thirds_exactly():
    cov = mechanism_coverage(IntervalMechanism("c1", SALARY, "case1", law("uniform", 0, 150), 2),
                             law("uniform", 0, 150))
    assert cov.value == sympy.Rational(2, 3) and cov.method == "exact"


@pytest.mark.parametrize("scheme, count, disclose, expected", [
    ("canonical", 1, None, sympy.Rational(2, 3)),
    ("canonical", 2, None, sympy.Rational(1, 2)),      # E sum of spacings^2 = 2/(k + 2)
    ("canonical", 3, None, sympy.Rational(2, 5)),
    ("ring", 3, None, sympy.Rational(1, 2)),           # E[(1 - D)^3 + D^3] with D ~ |V - V'|
    ("canonical", 1, (Z(0), Z(20)), sympy.Rational(5408, 10125)),
])
def test_exact_uniform_coverage_matches_quadrature(scheme, count, disclose, expected):
    u = law("uniform", 0, 150)
    exact = exact_uniform_coverage(u, u, scheme, count, disclose)
    assert exact == expected
    dist = law_distribution(u)
    assert partition_coverage(dist, dist, scheme, count, disclose) == pytest.approx(float(expected), abs=1e-10)


def test_exact_when_the_anchors_reach_beyond_the_population():
    exact = exact_uniform_coverage(law("uniform", 0, 1), law("uniform", -1, 2), "canonical", 1)
    assert exact == 1 - sympy.Rational(1, 9)         # 1 - E|Y - Y'| / (b - a)
    assert exact_uniform_coverage(law("uniform", 0, 1), law("uniform", 0.5, 2), "canonical", 1) is None


@pytest.mark.parametrize("pop, anchor", [
    (("normal", 0.5, 1), ("uniform", -9, 9)),
    (("normal", 0.5, 1), ("logistic", 0, 5)),
    (("logistic", 0, 1), ("normal", 0, 3)),
])
def test_case_formulas_agree_with_the_pair_representation(pop, anchor):
    P, A = law_distribution(law(*pop)), law_distribution(law(*anchor))
    assert case1_coverage(P.cdf, A) == pytest.approx(partition_coverage(P, A, "canonical", 1), abs=1e-9)
    assert case2_coverage(P.cdf, A) == pytest.approx(partition_coverage(P, A, "canonical", 2), abs=1e-9)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(loc=st.floats(-3, 3), scale=st.floats(0.2, 8))
def test_theorem1_lower_bounds(loc, scale):
    """Case I coverage is at least 1/2 and Case II at least 1/3 (Cauchy's inequality)."""
    P, A = stats.norm(0, 1), stats.logistic(loc, scale)
    assert case1_coverage(P.cdf, A) >= 0.5 - 1e-12
    assert case2_coverage(P.cdf, A) >= 1 / 3 - 1e-12


@pytest.mark.parametrize("scheme, m, anchor, disclose", [
    ("case2", 3, ("logistic", 0, 5), None),
    ("canonical", 4, ("normal", 0, 2), None),
    ("ring", 3, ("uniform", -2, 2), None),
    ("case1", 2, ("normal", 0, 1), (Z(-1), Z(0))),
    ("ring", 4, ("normal", 0, 2), (Z(0), Z(1))),
])
def test_coverage_matches_simulation(scheme, m, anchor, disclose):
    mech = IntervalMechanism("m", SCORE, scheme, law(*anchor), m, disclose)
    pop = law("normal", 0.5, 1)
    cov = mechanism_coverage(mech, pop)
    emp, se = simulated(mech, pop)
    assert float(cov.value) == pytest.approx(emp, abs=4 * se + 1e-4)


def test_progressive_coverage():
    # uniform population on the support: exactly (2/3)^h; otherwise the grid recursion
    mech = ProgressiveMechanism("p", SALARY, 3)
    cov = mechanism_coverage(mech, law("uniform", 0, 150))
    assert cov.value == sympy.Rational(8, 27) and cov.method == "exact"
    assert progressive_coverage(stats.uniform(0, 150), 0, 150, 3) == pytest.approx(8 / 27, abs=1e-5)
    pop = law("normal", 60, 25)
    grid = mechanism_coverage(mech, pop)
    rng = np.random.default_rng(1)
    dist = law_distribution(pop)
    y = np.clip(dist.rvs(200_000, random_state=rng), 0, 150)
    left, right = sample_progressive(mech, y, rng)
    emp = range_coverage(np.where(np.isinf(left), 0, left), np.where(np.isinf(right), 150, right), dist.cdf)
    assert grid.value == pytest.approx(emp.mean(), abs=4 * emp.std() / np.sqrt(y.size) + 1e-4)


def test_selective_coverage_and_ignorability():
    base = IntervalMechanism("c1", SALARY, "case1", law("uniform", 0, 150), 2)
    sel = SelectiveMechanism("s", base, sympy.Rational(3, 10), sympy.Rational(1, 2))
    pop = law("uniform", 0, 150)
    cov = mechanism_coverage(sel, pop)
    p = cov.extras["p_coverage_at_least_tau"]
    assert p == pytest.approx(1 - 0.3 ** 2, abs=1e-3)     # P(L >= tau) = 1 - tau^2 here
    # E[L 1{L >= tau}] = 2 int_tau^1 t^2 dt = 2(1 - tau^3)/3; null counts 1
    assert float(cov.value) == pytest.approx(0.5 * 2 * (1 - 0.3 ** 3) / 3 + 1 - 0.5 * p, abs=1e-3)
    # Proposition 2: P(W = 0 | null) by simulation against (1 - rho)/(1 - rho p) >= 1/2
    rng = np.random.default_rng(2)
    y = rng.uniform(0, 150, 100_000)
    w_rng = np.random.default_rng(3)
    left, _ = sample_selective(sel, y, w_rng, stats.uniform(0, 150).cdf)
    w_rng2 = np.random.default_rng(3)
    # replay the same draws: anchors first, then W
    w_rng2.random(y.size)
    w = w_rng2.random(y.size) < 0.5
    null = np.isnan(left)
    ig = ignorability(0.5, p)
    assert ig["condition"] and ig["ignorable"]
    assert np.mean(~w[null]) == pytest.approx(ig["p_w0_given_null"], abs=0.01)
    # the paper's condition rho <= p is sufficient, not necessary: the exact one is rho <= 1/(2 - p)
    tight = ignorability(0.95, 0.9)
    assert not tight["condition"] and tight["ignorable"] == (0.95 <= 1 / 1.1)


def test_theorem4_composition_bound():
    pop = law_distribution(law("normal", 0.5, 1))
    mechs = [IntervalMechanism("a", SCORE, "case1", law("logistic", 0, 3), 2),
             IntervalMechanism("b", SCORE, "case2", law("normal", 1, 2), 3),
             IntervalMechanism("c", SCORE, "ring", law("uniform", -2, 3), 3, (Z(0), Z(1)))]
    taus = [float(mechanism_coverage(m, law("normal", 0.5, 1)).value) for m in mechs]
    for k in (2, 3):
        ens = ensemble_coverage(pop, mechs[:k])
        assert ens >= composition_bound(taus[:k]) - 1e-12
        assert ens <= min(taus[:k]) + 1e-12                 # more anchors never widen the ranges
    # the ensemble of two Case-I mechanisms is Case II (anchors pooled)
    two = [mechs[0], IntervalMechanism("a2", SCORE, "case1", law("logistic", 0, 3), 2)]
    assert ensemble_coverage(pop, two) == pytest.approx(case2_coverage(pop.cdf, law_distribution(law("logistic", 0, 3))),
                                                        abs=1e-9)


def test_theorem5_preprocessing_can_only_add_coverage():
    """Y ~ N(0, 1), g(y) = y^2, A = (-inf, 0]: tau(M_g) > tau(M) (the paper's example)."""
    rng = np.random.default_rng(4)
    y = rng.normal(size=200_000)
    u = rng.uniform(0, 4, y.size)                 # Case-I anchors for g(Y) = Y^2
    chi = stats.chi2(1)
    # M on g(Y) with A_g = g(A) = [0, inf): every value is disclosed, coverage 0
    tau_m = 0.0
    # the pullback M_g discloses only Y in A = (-inf, 0]; otherwise S = g^-1(range) minus A
    g_cov = np.where(y ** 2 <= u, chi.cdf(u), chi.sf(u))          # P(Y in g^-1(range))
    outside_a = np.where(y ** 2 <= u, chi.cdf(u) / 2, chi.sf(u) / 2)  # ... and Y > 0
    tau_mg = np.mean(np.where(y <= 0, 0.0, outside_a))
    assert tau_mg > tau_m
    assert np.mean(g_cov) >= tau_mg                                   # without A it is larger still


def test_data_based_coverage_estimators():
    pop = law("normal", 0.5, 1)
    dist = law_distribution(pop)
    rng = np.random.default_rng(5)
    mech = IntervalMechanism("s1", SCORE, "case1", law("uniform", -9, 9), 2)
    y = dist.rvs(20_000, random_state=rng)
    left, right = sample_interval(mech, y, rng)
    tau = float(mechanism_coverage(mech, pop).value)
    est, how = coverage_from_data(left, right, np.ones_like(left), mech, dist.cdf)
    assert "Theorem 1" in how and est == pytest.approx(tau, abs=0.005)
    mech2 = IntervalMechanism("c2", SCORE, "case2", law("logistic", 0, 5), 3)
    left, right = sample_interval(mech2, y, rng)
    est2, how2 = coverage_from_data(left, right, np.ones_like(left), mech2, dist.cdf)
    assert "individual" in how2 and est2 == pytest.approx(float(mechanism_coverage(mech2, pop).value), abs=0.005)


def test_symbolic_coverage_without_a_population():
    cov = mechanism_coverage(IntervalMechanism("c1", SALARY, "case1", law("uniform", 0, 150), 2), None)
    assert cov.method == "symbolic" and "F_salary" in str(cov.value)


def test_composition_query_matches_a_simulation_and_theorem4():
    """composition(M1, M2) in the language: the ensemble's coverage (anchors pooled) against
    a seeded simulation of the intersected ranges, Theorem 4's bound below it, each
    mechanism's own coverage above it; two Case-I mechanisms pooled are Case II."""
    import privspec

    spec = privspec.load("""
variable score: continuous
population score ~ normal(1/2, 1)
mechanism a = interval(score, case1(logistic(0, 3)))
mechanism b = interval(score, case2(normal(1, 2)))
mechanism a2 = interval(score, case1(logistic(0, 3)))
query ab = composition(a, b)
query aa = composition(a, a2)
query c2 = coverage(interval(score, case2(logistic(0, 3))))
""")
    res = spec.analyze()
    ab, aa = res["ab"], res["aa"]
    assert ab.bound <= ab.value <= min(ab.coverages.values())
    assert ab.bound == pytest.approx(1 - sum(1 - t for t in ab.coverages.values()))
    assert aa.value == pytest.approx(float(res["c2"].value), abs=1e-7)
    rng = np.random.default_rng(4)
    N = 400_000
    y = rng.normal(0.5, 1, N)
    u = stats.logistic(0, 3).rvs(N, random_state=rng)
    v = np.sort(rng.normal(1, 2, (N, 2)), axis=1)
    lo = np.maximum(np.where(y <= u, -np.inf, u), np.where(y <= v[:, 0], -np.inf, np.where(y <= v[:, 1], v[:, 0], v[:, 1])))
    hi = np.minimum(np.where(y <= u, u, np.inf), np.where(y <= v[:, 0], v[:, 0], np.where(y <= v[:, 1], v[:, 1], np.inf)))
    F = stats.norm(0.5, 1).cdf
    mass = F(hi) - F(lo)
    assert abs(mass.mean() - ab.value) < 4 * mass.std() / np.sqrt(N)
    with pytest.raises(privspec.errors.SpecError, match="E501"):
        privspec.load("variable s: continuous\nvariable t: continuous\nmechanism a = interval(s, case1(normal(0, 1)))\n"
                      "mechanism b = interval(t, case1(normal(0, 1)))\nquery x = composition(a, b)").raise_for_errors()


@pytest.mark.parametrize("sd, want", [(1e-300, 0.5), (1e-100, 0.5), (1e300, 1.0)])
def test_case1_and_case2_coverage_at_extreme_anchor_scales(sd, want):
    """An anchor law far narrower or wider than the population: at sd -> 0 every anchor is 0
    and a report is a half line, so tau = 1/2 (Case II: both anchors at 0, the middle range
    empty); at sd -> inf every anchor is far out, so tau = 1.  The quadrature runs in the
    anchor's quantile: in its own variable a narrow anchor's density was never seen
    (tau = 1 at sd 1e-300, found by the parameters fuzz)."""
    P, A = stats.norm(0, 1), stats.norm(0, sd)
    assert case1_coverage(P.cdf, A) == pytest.approx(want, abs=1e-9)
    assert case2_coverage(P.cdf, A) == pytest.approx(want, abs=1e-9)


def test_case2_coverage_against_a_seeded_simulation():
    """tau of Case II with logistic anchors on a normal population against its definition,
    E[P(Y' in the range holding Y)], drawn: 10^6 pairs of anchors and values (seed 5),
    within 4 Monte Carlo standard errors."""
    rng = np.random.default_rng(5)
    n = 1_000_000
    P, A = stats.norm(0.5, 1), stats.logistic(0, 0.7)
    u, v = np.sort(A.rvs(size=(2, n), random_state=rng), axis=0)
    y = P.rvs(size=n, random_state=rng)
    Fu, Fv = P.cdf(u), P.cdf(v)
    cover = np.where(y <= u, Fu, np.where(y <= v, Fv - Fu, 1 - Fv))
    assert case2_coverage(P.cdf, A) == pytest.approx(cover.mean(), abs=4 * cover.std() / np.sqrt(n))
