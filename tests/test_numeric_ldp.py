"""Numeric local-DP mechanisms (privspec.backends.numeric): the papers' closed forms, the
samplers checked by seeded simulation, exact epsilon read back, an empirical privacy
audit, and square wave's EMS.

Statistical tolerances (fixed seeds; each stated where it is used):

* a mean of R draws within 4 of its standard errors (sqrt(variance / R)) of the truth;
* a sample variance s^2 within 4 of its standard errors sqrt((m4 - s^4)/R) (m4: the
  sample's fourth central moment) of the closed form;
* the audit: on a grid of bins, for the two ends of the domain, the log-ratio of the
  bins' frequencies at most epsilon + 4 sqrt(1/c1 + 1/c2) (c1, c2 the bins' counts; bins
  with at least 2,000 draws each), and its largest value within 0.05 of epsilon (the bound is
  attained).
"""
from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
import sympy

from privspec.backends.core.rowrandom import RowRandom
from privspec.backends.numeric.ems import ems, transition
from privspec.backends.numeric.mechanisms import (EPS_STAR, MECHANISMS, eps_star_exact, Duchi, Hybrid, Laplace,
                                                  Piecewise, SquareWave, mechanism)

NAMES = tuple(MECHANISMS)
R = 400_000


def _points(m):
    lo, hi = m.domain
    return (lo, lo + 0.3 * (hi - lo), (lo + hi) / 2, hi)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_unbiased_and_variance_by_simulation(name, eps):
    m = mechanism(name, eps)
    # a seed fixed across processes (hash() of a str is salted per process: this test drew
    # new numbers at every run, and once failed CI at 4.02 standard errors)
    rng = np.random.default_rng([zlib.crc32(name.encode()), int(eps * 100)])
    for t in _points(m):
        est = m.unbiased(m.sample(np.full(R, t), rng))
        var = float(m.variance(t))
        assert abs(est.mean() - t) <= 4 * math.sqrt(var / R), (name, eps, t)
        s2 = est.var()
        m4 = float(np.mean((est - est.mean()) ** 4))
        assert abs(s2 - var) <= 4 * math.sqrt((m4 - s2 ** 2) / R), (name, eps, t, s2, var)


@pytest.mark.parametrize("name", NAMES)
def test_reports_stay_in_their_range(name):
    m = mechanism(name, 1.0)
    lo, hi = m.domain
    reports = m.sample(np.linspace(lo, hi, 100_001), np.random.default_rng(3))
    a, b = m.report_range()
    assert np.all(np.isfinite(reports))
    assert reports.min() >= a and reports.max() <= b
    if math.isfinite(a):  # the range is reached: within 1% of its width at both ends
        assert reports.min() <= a + 0.01 * (b - a) and reports.max() >= b - 0.01 * (b - a)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", [sympy.Rational(1, 3), sympy.Integer(1), sympy.Rational(5, 2), sympy.log(3)])
def test_epsilon_read_back_exactly(name, eps):
    assert sympy.simplify(MECHANISMS[name].epsilon_exact(eps) - eps) == 0


# ---- the papers' worst-case variances ----------------------------------------------------------------
def _paper_worst(name: str, eps: float) -> float:
    e, h = math.exp(eps), math.exp(eps / 2)
    duchi = ((e + 1) / (e - 1)) ** 2
    if name == "laplace":
        return 8 / eps ** 2
    if name == "duchi":
        return duchi
    if name == "piecewise":  # Wang et al. 2019: 4 e^(eps/2) / (3 (e^(eps/2) - 1)^2), at |t| = 1
        return 4 * h / (3 * (h - 1) ** 2)
    # hm: Wang et al. 2019, Eq. for eps > eps*; Duchi's below
    return (h + 3) / (3 * h * (h - 1)) + (e + 1) ** 2 / (h * (e - 1) ** 2) if eps > EPS_STAR else duchi


@pytest.mark.parametrize("name", ["laplace", "duchi", "piecewise", "hm"])
@pytest.mark.parametrize("eps", [0.2, 0.5, 0.6, 0.62, 1.0, 2.0, 5.0])
def test_worst_variances_match_the_papers(name, eps):
    assert mechanism(name, eps).worst_variance() == pytest.approx(_paper_worst(name, eps), rel=1e-12)


def test_worst_variance_over_a_fine_grid():
    for name in NAMES:
        m = mechanism(name, 1.3)
        lo, hi = m.domain
        grid = np.linspace(lo, hi, 20_001)
        assert m.worst_variance() == pytest.approx(float(np.max(m.variance(grid))), rel=1e-9)


def test_eps_star_value():
    assert EPS_STAR == pytest.approx(0.6093524930, abs=1e-9)
    assert float(eps_star_exact()) == pytest.approx(EPS_STAR, rel=1e-14)   # the float by math, the exact by sympy


@pytest.mark.parametrize("eps", [0.3, 0.55, 0.6, 0.65, 1.0, 2.0, 4.0])
def test_hybrid_alpha_is_the_minimax_mixture(eps):
    """Independently of the paper's formula: the alpha minimizing the worst variance of
    alpha PM + (1 - alpha) Duchi over t in [-1, 1], on a grid of alphas."""
    pm, duchi = Piecewise(eps), Duchi(eps)
    t = np.linspace(-1, 1, 401)
    alphas = np.linspace(0, 1, 20_001)
    worst = np.max(alphas[:, None] * pm.variance(t)[None, :] + (1 - alphas[:, None]) * duchi.variance(t)[None, :],
                   axis=1)
    best = alphas[np.argmin(worst)]
    hm = Hybrid(eps)
    assert hm.alpha == pytest.approx(best, abs=2e-4)
    # no alpha of the grid does better (the grid's best is off by its step times the kink's slope)
    assert hm.worst_variance() <= worst.min() * (1 + 1e-12)
    assert hm.worst_variance() == pytest.approx(worst.min(), rel=1e-4)
    if eps > EPS_STAR:  # above the switch point the variance does not depend on t
        assert hm.coefficients[2] == pytest.approx(0.0, abs=1e-12)


def test_square_wave_parameters():
    """Li et al. 2020: p/q = e^eps, total mass 2 b p + q = 1, and the closed form of b."""
    for eps in (0.5, 1.0, 3.0):
        sw = SquareWave(eps)
        assert sw.p / sw.q == pytest.approx(math.exp(eps))
        assert 2 * sw.b * sw.p + sw.q == pytest.approx(1.0)
        e = math.exp(eps)
        assert sw.b == pytest.approx((eps * e - e + 1) / (2 * e * (e - 1 - eps)))


def test_laplace_variance_is_8_over_eps_squared():
    assert Laplace(2.0).variance(0.7) == pytest.approx(2.0)


# ---- the value's scale ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_range_mapping_round_trips(name):
    m = mechanism(name, 1.0)
    y = np.array([20.0, 35.5, 150.0])
    t = m.to_domain(y, 20.0, 150.0)
    assert t.min() >= m.domain[0] and t.max() <= m.domain[1]
    assert np.allclose(m.to_value(t, 20.0, 150.0), y)
    assert m.value_scale(20.0, 150.0) == pytest.approx(130.0 / (m.domain[1] - m.domain[0]))


# ---- per-row randomness -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_samplers_run_on_per_row_randomness(name):
    m = mechanism(name, 1.0)
    t = np.linspace(*m.domain, 10)
    whole = m.sample(t, RowRandom(5, rows=range(10)))
    piece = m.sample(t[6:], RowRandom(5, rows=range(6, 10)))
    assert np.array_equal(whole[6:], piece)


# ---- an empirical audit of epsilon -------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", [0.5, 1.5])
def test_empirical_epsilon_audit(name, eps):
    m = mechanism(name, eps)
    lo, hi = m.domain
    a, b = m.report_range()
    if not math.isfinite(a):
        a, b = -1 - 6 / eps, 1 + 6 / eps
    # Duchi's two atoms are bins of their own; otherwise 120 bins of the report range
    edges = np.linspace(a, b, 121)
    edges[-1] = np.nextafter(b, np.inf)
    rng = np.random.default_rng(11)
    n = 1_000_000
    c1 = np.histogram(m.sample(np.full(n, lo), rng), edges)[0].astype(float)
    c2 = np.histogram(m.sample(np.full(n, hi), rng), edges)[0].astype(float)
    keep = (c1 >= 2000) & (c2 >= 2000)
    assert keep.sum() >= 2
    ratio = np.abs(np.log(c1[keep] / c2[keep]))
    slack = 4 * np.sqrt(1 / c1[keep] + 1 / c2[keep])
    assert np.all(ratio <= eps + slack), (name, float(np.max(ratio - slack)))
    assert ratio.max() >= eps - 0.05


# ---- square wave's distribution by EMS ----------------------------------------------------------------
def test_transition_columns_are_distributions():
    M = transition(SquareWave(1.0), 20)
    assert np.allclose(M.sum(axis=0), 1.0)
    assert M.max() / M.min() <= math.exp(1.0) * (1 + 1e-12)  # averaging keeps the ratio at most e^eps


@pytest.mark.parametrize("eps", [1.0, 2.0, 4.0])
def test_ems_recovers_a_beta_population(eps):
    """200,000 reports of Beta(2, 5) values: the EMS histogram's CDF at the bucket edges
    within 0.06 of the truth (Kolmogorov distance; Li et al. report comparable accuracy),
    its mean within 0.01 of 2/7."""
    from scipy import stats
    sw = SquareWave(eps)
    y = np.random.default_rng(0).beta(2, 5, 200_000)
    fit = ems(sw, sw.sample(y, np.random.default_rng(1)), buckets=32)
    assert fit.converged
    cdf = np.cumsum(fit.probabilities)
    assert np.max(np.abs(cdf - stats.beta(2, 5).cdf(fit.edges[1:]))) < 0.06
    assert abs(fit.mean - 2 / 7) < 0.01


def test_ems_counts_equal_repeated_reports():
    sw = SquareWave(1.0)
    reports = sw.sample(np.random.default_rng(2).random(5000), np.random.default_rng(3))
    distinct, counts = np.unique(np.round(reports, 2), return_counts=True)
    a = ems(sw, distinct, counts=counts, buckets=16)
    b = ems(sw, np.repeat(distinct, counts), buckets=16)
    assert np.allclose(a.probabilities, b.probabilities)
