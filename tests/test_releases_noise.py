"""Algorithm 1 and the two-sided geometric noise (privacy on a subset of variables, section 5).

Statistical tests use fixed seeds, so they are deterministic; each tolerance is
stated where it is used and is one that a correct sampler passes with probability
above 0.999 on a fresh seed (chi-square p-values > 1e-3, |z| < 4.5 for single
statistics and maxima over at most a few dozen of them).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import sympy
from hypothesis import given, settings, strategies as st
from scipy import stats

from privspec.backends.releases import noise as rn
from privspec.backends.releases.noise import (CALIBRATIONS, algorithm1, cell_covariance, cell_variance,
                                             geometric_mechanism, margin_variance, noise_variance, nonnegative,
                                             pmf, privacy_loss, ratio, sample, unit_loss)

#: Table 2 of the paper (degree programme x income band)
TABLE2 = np.array([[5, 10, 47, 68, 54, 33, 12, 2],
                   [1, 13, 44, 92, 131, 75, 21, 15],
                   [2, 25, 78, 218, 237, 153, 46, 18]])
#: Table 3 of the paper: a noisy release of Table 2 with exact totals by programme
TABLE3 = np.array([[4, 12, 47, 66, 55, 37, 5, 5],
                   [5, 12, 44, 91, 133, 73, 20, 14],
                   [4, 20, 74, 218, 238, 155, 52, 16]])

FUZZ = settings(derandomize=True, deadline=None, max_examples=60, database=None)


def s2(eps: float, exact_totals: bool = False, calibration: str = "tight") -> float:
    """2a/(1 - a)^2, written out here: a = e^(-eps) for the tight Algorithm 1,
    e^(-eps/2) for the paper's Algorithm 1 and for the geometric mechanism."""
    a = math.exp(-eps) if exact_totals and calibration == "tight" else math.exp(-eps / 2)
    return 2 * a / (1 - a) ** 2


def chisquare_against(draws: np.ndarray, law: "Pmf", lo: int, hi: int) -> float:
    """p-value of a chi-square test of integer draws against a pmf: one bin per value
    in [lo, hi] and one for each tail."""
    inside = np.bincount(draws[(draws >= lo) & (draws <= hi)] - lo, minlength=hi - lo + 1)
    observed = np.concatenate([[np.sum(draws < lo)], inside, [np.sum(draws > hi)]])
    expected = np.concatenate([[law.cdf_below(lo)], law(np.arange(lo, hi + 1)), [law.cdf_above(hi)]])
    return stats.chisquare(observed, expected / expected.sum() * draws.size).pvalue


class Pmf:
    """A pmf on the integers given on a wide window (tails from the window)."""

    def __init__(self, support: np.ndarray, probs: np.ndarray):
        self.support, self.probs = support, probs

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return self.probs[np.asarray(z) - self.support[0]]

    def cdf_below(self, lo: int) -> float:
        return float(self.probs[self.support < lo].sum())

    def cdf_above(self, hi: int) -> float:
        return float(self.probs[self.support > hi].sum())


def geometric_pmf(eps: float, width: int = 400, exact_totals: bool = False, calibration: str = "tight") -> Pmf:
    z = np.arange(-width, width + 1)
    return Pmf(z, pmf(z, eps, exact_totals, calibration))


def convolve_pmf(p: Pmf, times: int) -> Pmf:
    """The pmf of the sum of ``times`` independent copies."""
    probs, lo = p.probs, p.support[0]
    out, out_lo = probs, lo
    for _ in range(times - 1):
        out, out_lo = np.convolve(out, probs), out_lo + lo
    return Pmf(np.arange(out_lo, out_lo + out.size), out)


# ---- the two-sided geometric distribution -----------------------------------------------
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_pmf_sums_to_one_with_the_stated_variance(eps: float) -> None:
    # the paper's constant (1 - e^(eps/2))/(1 + e^(eps/2)) is negative (a typo); the
    # corrected (1 - a)/(1 + a) makes the weights a^|z| sum to 1
    z = np.arange(-2000, 2001)
    p = pmf(z, eps)
    assert p.sum() == pytest.approx(1, abs=1e-12)
    assert (p * z).sum() == pytest.approx(0, abs=1e-12)
    assert (p * z * z).sum() == pytest.approx(s2(eps), rel=1e-10)
    assert float(noise_variance(sympy.Rational(eps).limit_denominator(1000))) == pytest.approx(s2(eps), rel=1e-12)


def test_paper_constant_is_negative_and_corrected_one_normalizes() -> None:
    eps = sympy.Symbol("epsilon", positive=True)
    printed = (1 - sympy.exp(eps / 2)) / (1 + sympy.exp(eps / 2))
    assert printed.subs(eps, 1) < 0
    # sum over z of a^|z| = 1 + 2a/(1 - a) = (1 + a)/(1 - a), for 0 < a < 1
    a = sympy.Symbol("a", positive=True)
    assert sympy.simplify((1 - a) / (1 + a) * (1 + 2 * a / (1 - a))) == 1
    assert rn.ratio(eps) == sympy.exp(-eps / 2)
    assert rn.ratio(eps, exact_totals=True, calibration="paper") == sympy.exp(-eps / 2)


# ---- the calibrations: the noise ratio and the exact privacy loss -----------------------------
def test_ratio_and_privacy_loss_per_calibration() -> None:
    eps = sympy.Symbol("epsilon", positive=True)
    # Algorithm 1: one unit of one draw is the whole difference between neighbours,
    # so the loss is -log a: the tight a = e^(-eps) spends eps, the paper's e^(-eps/2) eps/2
    assert ratio(eps, True, "tight") == sympy.exp(-eps) and privacy_loss(eps, True, "tight") == eps
    assert ratio(eps, True, "paper") == sympy.exp(-eps / 2) and privacy_loss(eps, True, "paper") == eps / 2
    # the geometric mechanism: two cells move, a = e^(-eps/2) under both calibrations
    for cal in CALIBRATIONS:
        assert ratio(eps, False, cal) == sympy.exp(-eps / 2) and privacy_loss(eps, False, cal) == eps
        assert privacy_loss(eps, True, cal, cells=1) == 0 and privacy_loss(eps, False, cal, cells=1) == 0
        assert sympy.simplify(sympy.exp(-unit_loss(eps, True, cal)) - ratio(eps, True, cal)) == 0
    assert privacy_loss(1.0, True, "paper") == 0.5 and unit_loss(1.0, True) == 1.0
    # exact values stay exact
    assert cell_variance(sympy.Integer(2), 8, True) == 14 * sympy.exp(-2) / (1 - sympy.exp(-2)) ** 2
    assert cell_variance(sympy.Integer(2), 8, True, "paper") == 14 * sympy.exp(-1) / (1 - sympy.exp(-1)) ** 2
    with pytest.raises(ValueError, match="calibration"):
        algorithm1(np.zeros((1, 3), int), 1.0, np.random.default_rng(0), calibration="papr")
    with pytest.raises(ValueError, match="calibration"):
        privacy_loss(1.0, True, "loose")


def test_front_end_and_back_end_know_the_same_calibrations() -> None:
    from privspec.model import resolve

    assert resolve.CALIBRATIONS == CALIBRATIONS and CALIBRATIONS[0] == "tight"   # the default first


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_tight_calibration_is_the_papers_at_twice_epsilon(eps: float) -> None:
    # the tight noise at eps is the paper's at 2 eps: same a, same draws from one seed
    f = np.tile(TABLE2, (50, 1))
    tight = algorithm1(f, eps, np.random.default_rng(3), calibration="tight")
    paper = algorithm1(f, 2 * eps, np.random.default_rng(3), calibration="paper")
    assert (tight == paper).all()
    assert not (tight == algorithm1(f, eps, np.random.default_rng(3), calibration="paper")).all()


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_sampler_matches_the_exact_pmf(eps: float) -> None:
    draws = sample(np.random.default_rng(20240 + int(10 * eps)), eps, 200_000)
    assert draws.dtype == np.int64
    half = int(np.ceil(10 / eps))
    # chi-square over the central window plus both tails: p > 1e-3
    assert chisquare_against(draws, geometric_pmf(eps), -half, half) > 1e-3
    assert abs(draws.mean()) < 4.5 * math.sqrt(s2(eps) / draws.size)


def test_sampler_keeps_precision_for_tiny_and_huge_epsilon() -> None:
    rng = np.random.default_rng(1)
    assert (sample(rng, 80.0, 1000) == 0).all()  # a = e^-40: the noise is almost surely 0
    tiny = sample(rng, 1e-6, 20_000).astype(float)
    # Var = 2a/(1-a)^2 ~ 8/eps^2 = 8e12: within 5% (sd of the variance estimate ~ 1.7%)
    assert tiny.var() == pytest.approx(s2(1e-6), rel=0.05)
    with pytest.raises(ValueError):
        sample(rng, 0.0, 3)


# ---- Algorithm 1: exact properties --------------------------------------------------------------
@FUZZ
@given(m=st.integers(1, 6), n=st.integers(1, 12), eps=st.sampled_from([0.1, 0.5, 1.0, 2.0, 8.0]),
       seed=st.integers(0, 2**32 - 1), data=st.data())
def test_algorithm1_totals_exact_and_integer(m: int, n: int, eps: float, seed: int, data) -> None:
    f = np.array(data.draw(st.lists(st.integers(0, 500), min_size=m * n, max_size=m * n))).reshape(m, n)
    g = algorithm1(f, eps, np.random.default_rng(seed))
    assert g.dtype == np.int64 and g.shape == f.shape
    assert (g.sum(axis=1) == f.sum(axis=1)).all()           # Proposition 5.1 (2)
    if n == 1:
        assert (g == f).all()  # one cell per total: it is the exact total


@pytest.mark.parametrize("calibration, moved", [("paper", 0.5), ("tight", 0.45)])
def test_algorithm1_adds_noise_to_two_cell_rows(calibration: str, moved: float) -> None:
    # the paper's `if n_i > 2` would publish a 2-cell row exactly (not private on U);
    # M(2) = [[1, -1]] is defined, so rows of two cells get one geometric draw
    f = np.full((2000, 2), 10)
    g = algorithm1(f, 1.0, np.random.default_rng(5), calibration=calibration)
    assert (g.sum(axis=1) == 20).all()
    # P(Z != 0) = 2a/(1 + a): 0.755 (paper, a = e^-0.5), 0.538 (tight, a = e^-1) at
    # eps = 1; the sd of the fraction is at most 0.011
    assert (g[:, 0] != 10).mean() > moved
    assert (g[:, 0] - 10 == -(g[:, 1] - 10)).all()


def test_algorithm1_is_seeded_and_reproducible() -> None:
    a = algorithm1(TABLE2, 1.0, np.random.default_rng(42))
    b = algorithm1(TABLE2, 1.0, np.random.default_rng(42))
    assert (a == b).all()
    assert not (a == algorithm1(TABLE2, 1.0, np.random.default_rng(43))).all()


def test_paper_table3_keeps_table2_totals() -> None:
    # the worked example satisfies Proposition 5.1 (2)
    assert (TABLE3.sum(axis=1) == TABLE2.sum(axis=1)).all()
    assert TABLE2.sum(axis=1).tolist() == [231, 392, 777]


@pytest.mark.parametrize("calibration", CALIBRATIONS)
def test_blocked_path_for_wide_rows(monkeypatch: pytest.MonkeyPatch, calibration: str) -> None:
    # force the bounded-memory path (blocks of pair rows) and check it against the
    # exact moments: totals exact, cell variance (n - 1) s2
    monkeypatch.setattr(rn, "_BLOCK", 64)
    n, reps, eps = 12, 4000, 1.0
    f = np.tile(np.arange(n), (reps, 1))
    g = algorithm1(f, eps, np.random.default_rng(9), calibration=calibration)
    assert (g.sum(axis=1) == f.sum(axis=1)).all()
    noise = (g - f).astype(float)
    v = noise.var(axis=0, ddof=1)
    # the variance of a sample variance is (m4 - s^4)/reps; allow 4.5 of those
    m4 = ((noise - noise.mean(0)) ** 4).mean(axis=0)
    assert (np.abs(v - (n - 1) * s2(eps, True, calibration)) < 4.5 * np.sqrt((m4 - v ** 2) / reps)).all()


# ---- Algorithm 1: moments (Proposition 5.1 (4) and the covariance structure) ------------------
@pytest.fixture(scope="module", params=CALIBRATIONS)
def replicated(request) -> tuple[np.ndarray, np.ndarray, float, float, str]:
    """40,000 releases of Table 2 at eps = 2 (the university example), under each
    calibration; also the variance s2 of one draw."""
    reps, eps, cal = 40_000, 2.0, request.param
    f = np.tile(TABLE2, (reps, 1))
    g = algorithm1(f, eps, np.random.default_rng(2024), calibration=cal).reshape(reps, 3, 8)
    return g, (g - TABLE2).reshape(reps, 24).astype(float), eps, s2(eps, True, cal), cal


def test_algorithm1_is_unbiased(replicated) -> None:
    g, noise, eps, v, cal = replicated
    reps = noise.shape[0]
    z = noise.mean(axis=0) / math.sqrt(7 * v / reps)
    assert np.abs(z).max() < 4.5        # 24 cells, each mean within 4.5 standard errors of f


def test_algorithm1_cell_variance_and_covariance(replicated) -> None:
    g, noise, eps, v, cal = replicated
    reps = noise.shape[0]
    cov = np.cov(noise, rowvar=False)
    expected = np.kron(np.eye(3), 8 * np.eye(8) - np.ones((8, 8))) * v   # s2 blockdiag(n I - J)
    assert float(cell_variance(sympy.Integer(2), 8, True, cal)) == pytest.approx(7 * v, rel=1e-12)
    assert float(cell_covariance(sympy.Integer(2), True, cal)) == pytest.approx(-v, rel=1e-12)
    # each entry's standard error is at most ~ 7 s2 / sqrt(reps) (= 0.064 here with
    # the paper's s2); allow 4.5 of them on every one of the 576 entries... and 3% on
    # the diagonal (a sample variance's relative sd is about sqrt(2/reps) = 0.7%, a
    # little more for these heavier tails)
    assert np.abs(cov - expected).max() < 4.5 * 7 * v / math.sqrt(reps)
    assert np.diag(cov) == pytest.approx(np.diag(expected), rel=0.03)


def test_algorithm1_cell_pmf_is_a_sum_of_n_minus_1_geometrics(replicated) -> None:
    g, noise, eps, v, cal = replicated
    # each cell's noise is the sum of n - 1 = 7 independent two-sided geometric draws
    # (each enters with sign +-1, and the law is symmetric): chi-square, p > 1e-3; the
    # window keeps every inner bin's expected count above 5 (the tails are lumped)
    exact = convolve_pmf(geometric_pmf(eps, 120, True, cal), 7)
    half = 9 if cal == "paper" else 6
    assert chisquare_against(noise[:, 5].astype(np.int64), exact, -half, half) > 1e-3


def test_margin_variances_match_simulation(replicated) -> None:
    g, noise, eps, v, cal = replicated
    by_band = g.sum(axis=1).astype(float)          # margin over degree: 3 rows x (K = 1 of n = 8)
    analytic = float(margin_variance(sympy.Integer(2), [3, 8], [True, False], [False, True], True, cal))
    assert analytic == pytest.approx(3 * 7 * v)
    assert by_band.var(axis=0, ddof=1) == pytest.approx(np.full(8, analytic), rel=0.05)
    # pairs of bands (K = 2): 3 * 2 * (8 - 2) s2
    pair = g[:, :, :2].sum(axis=(1, 2)).astype(float)
    assert margin_variance(sympy.Integer(2), [3, 8], [True, False], [False, False], True, cal) == 0
    assert pair.var(ddof=1) == pytest.approx(3 * 2 * 6 * v, rel=0.05)


def test_tight_calibration_has_less_noise_for_the_university_example() -> None:
    # the same guarantee (2-private on {income}) with a fifth of the paper's variance
    tight = cell_variance(sympy.Integer(2), 8, True, "tight")
    paper = cell_variance(sympy.Integer(2), 8, True, "paper")
    assert float(tight) == pytest.approx(2.5342, abs=1e-4) and float(paper) == pytest.approx(12.8894, abs=1e-4)
    # and the tight calibration at eps is the paper's at 2 eps, exactly
    assert sympy.simplify(tight - cell_variance(sympy.Integer(4), 8, True, "paper")) == 0


# ---- the geometric mechanism (no exact totals) ------------------------------------------------------
def test_geometric_mechanism_moments() -> None:
    reps, eps = 50_000, 1.0
    f = np.tile([[3, 0, 7]], (reps, 1))
    noise = (geometric_mechanism(f, eps, np.random.default_rng(8)) - f).astype(float)
    assert np.abs(noise.mean(0)).max() < 4.5 * math.sqrt(s2(eps) / reps)
    cov = np.cov(noise, rowvar=False)
    assert np.diag(cov) == pytest.approx(np.full(3, s2(eps)), rel=0.05)
    assert np.abs(cov - np.diag(np.diag(cov))).max() < 4.5 * s2(eps) / math.sqrt(reps)
    assert margin_variance(sympy.Integer(1), [2, 3], [False, False], [True, False], False) == 3 * noise_variance(1)


# ---- privacy: the exact likelihood ratio of Algorithm 1 on a small table -------------------------------
@pytest.mark.parametrize("calibration", CALIBRATIONS)
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_algorithm1_likelihood_ratio_is_within_e_to_the_eps(eps: float, calibration: str) -> None:
    """n = 3: g = f + (b12 + b13, -b12 + b23, -b13 - b23).  Neighbours (Def. 2.2) that
    move one record between cells 1 and 2 of a row: f' = f + (1, -1, 0).  The exact pmf
    of (N1, N2) is sum_t p(t) p(x - t) p(y + t); the ratio over outputs stays below
    a^(-1) and tends to it far out (Proposition 5.1 (1)): the exact loss is -log a,
    eps/2 for the paper's a = e^(-eps/2) and eps for the tight a = e^(-eps)."""
    loss = float(privacy_loss(sympy.Float(eps), True, calibration))
    assert loss == pytest.approx(eps if calibration == "tight" else eps / 2)
    width = 400       # a^400 < e^-100: the truncated sum is exact to double precision
    t = np.arange(-width, width + 1)
    p = lambda z: pmf(z, eps, True, calibration)  # noqa: E731

    def joint(x: int, y: int) -> float:
        return float(np.sum(p(t) * p(x - t) * p(y + t)))

    ratios = [joint(x, y) / joint(x - 1, y + 1) for x in range(-40, 41, 4) for y in range(-40, 41, 4)]
    worst = max(max(ratios), max(1 / r for r in ratios))
    assert worst <= math.exp(eps) * (1 + 1e-9)          # never above the declared eps (up to rounding)
    assert math.exp(loss) * (1 - 1e-4) < worst <= math.exp(loss) * (1 + 1e-9)


@pytest.mark.parametrize("calibration", CALIBRATIONS)
def test_algorithm1_two_cells_reaches_its_loss_exactly(calibration: str) -> None:
    """n = 2: g = f + (b, -b), one draw.  The event {g_1 <= f_1} has probability
    1/(1 + a) under f and a/(1 + a) under f' = f + (1, -1): the ratio is a^(-1) =
    e^loss exactly, and no event does better (every pointwise ratio is a^(+-1))."""
    eps = 1.0
    loss = float(privacy_loss(eps, True, calibration))
    z = np.arange(-400, 401)
    p = pmf(z, eps, True, calibration)
    at_or_below = z <= 0
    shifted = pmf(z - 1, eps, True, calibration)       # under f' the draw is one unit lower
    assert p[at_or_below].sum() / shifted[at_or_below].sum() == pytest.approx(math.exp(loss), rel=1e-12)
    assert np.max(np.abs(np.log(p / shifted))) == pytest.approx(loss, rel=1e-12)


def test_geometric_mechanism_reaches_epsilon_exactly() -> None:
    """No exact totals: moving a record from cell k to cell j changes two independent
    cells; the ratio a^(-2) = e^eps is reached on {N_j <= 0, N_k >= 0}."""
    eps = 1.0
    assert float(privacy_loss(eps, False)) == eps
    z = np.arange(-400, 401)
    p = pmf(z, eps)
    below = p[z <= 0].sum() / pmf(z - 1, eps)[z <= 0].sum()     # cell j: one unit more under f'
    above = p[z >= 0].sum() / pmf(z + 1, eps)[z >= 0].sum()     # cell k: one unit less under f'
    assert below * above == pytest.approx(math.exp(eps), rel=1e-12)


# ---- post-processing to non-negative counts ----------------------------------------------------------
def test_nonnegative_keeps_totals_and_integers() -> None:
    rng = np.random.default_rng(11)
    f = np.tile([[0, 1, 2, 40]], (20_000, 1))
    g = algorithm1(f, 1.0, rng)
    h = nonnegative(g, rng)
    assert h.dtype == np.int64 and (h >= 0).all()
    assert (h.sum(axis=1) == 43).all()
    untouched = (g >= 0).all(axis=1)
    assert (h[untouched] == g[untouched]).all()        # rows without negatives are not changed
    assert nonnegative(np.array([[-2, 1, 5]])).tolist() == [[0, 0, 4]]   # the nearest point, rounded


def test_nonnegative_is_the_nearest_nonnegative_table() -> None:
    # least squares onto {x >= 0, sum x = t}: against a brute force over every
    # non-negative integer row with the same total (rows whose projection is integral,
    # or, for the last, a tie that either rounding resolves optimally)
    rng = np.random.default_rng(3)
    for row in ([-3, 4, 10, 2], [-1, -1, 5, 0], [7, -8, 1, 6]):
        h = nonnegative(np.array([row]), rng)[0]
        best = min(np.sum((np.array(c) - row) ** 2) for c in _compositions(sum(row), len(row)))
        assert np.sum((h - row) ** 2) == best


def _compositions(t: int, k: int):
    if k == 1:
        yield (t,)
        return
    for first in range(t + 1):
        for rest in _compositions(t - first, k - 1):
            yield (first,) + rest


@pytest.mark.parametrize("calibration", CALIBRATIONS)
def test_nonnegative_biases_small_cells_up(calibration: str) -> None:
    # unbiased before (Proposition 5.1 (4)); after removing negatives a true zero is
    # pushed up and the large cell down by the same amount, totals still exact
    reps = 20_000
    rng = np.random.default_rng(12)
    f = np.tile([[0, 1, 2, 40]], (reps, 1))
    h = nonnegative(algorithm1(f, 1.0, rng, calibration=calibration), rng).astype(float)
    bias = h.mean(axis=0) - f[0]
    se = math.sqrt(3 * s2(1.0, True, calibration) / reps)
    assert bias[0] > 20 * se and bias[3] < -20 * se
    assert bias.sum() == pytest.approx(0, abs=1e-9)
