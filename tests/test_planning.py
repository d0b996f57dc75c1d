"""Design planning (backends/design/planning.py): sample sizes are the smallest that meet their
target (brute force), and the power formulas agree with Monte Carlo simulations of the
tests they describe on generalized randomized response (GRR) reports.

Monte Carlo tolerance: an empirical rejection rate over R seeded replications has
standard error sqrt(p (1 - p) / R); we accept 4 of those.  The seeds are fixed, so the
tests are deterministic; the settings (n, effect) were chosen where the asymptotic
formulas' own error is well below one Monte Carlo standard error (checked with 200,000
replications when the tests were written).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privspec.backends.core.grr_channel import grr_channel
from privspec.backends.finite.independence import independence_test
from privspec.backends.design.planning import (
    n_for_ci_width, n_for_max_se, n_for_power, n_grid, power_curve, power_difference,
    power_independence, power_proportion, smallest_n, standard_errors,
)

R = 10_000            # Monte Carlo replications of each power check
ALPHA = 0.05


def mc_tol(p: float, reps: int = R) -> float:
    """4 Monte Carlo standard errors of an empirical rate p."""
    return 4 * math.sqrt(p * (1 - p) / reps)


# ---- GRR helpers (written out here, independently of the package) ---------------------------------
def grr_keep(d: int, eps: float) -> tuple[float, float]:
    e = math.exp(eps)
    return e / (e + d - 1), 1 / (e + d - 1)


def grr_lambda(w: np.ndarray, eps: float) -> np.ndarray:
    p, q = grr_keep(len(w), eps)
    return (p - q) * np.asarray(w) + q


def grr_avar(w: np.ndarray, eps: float) -> np.ndarray:
    """Warner's variance: avar_kk = lambda_k (1 - lambda_k) / (p - q)^2."""
    p, q = grr_keep(len(w), eps)
    lam = grr_lambda(w, eps)
    return lam * (1 - lam) / (p - q) ** 2


def grr_estimates(rng: np.random.Generator, n: int, w: np.ndarray, eps: float, reps: int):
    """reps replications of n respondents: the unbiased estimates (lambda_hat - q)/(p - q)
    and their plug-in standard errors sqrt(lambda_hat (1 - lambda_hat) / (n (p - q)^2))."""
    p, q = grr_keep(len(w), eps)
    lam_hat = rng.multinomial(n, grr_lambda(w, eps), size=reps) / n
    return (lam_hat - q) / (p - q), np.sqrt(lam_hat * (1 - lam_hat) / (n * (p - q) ** 2))


def rejects(z: np.ndarray, alternative: str, alpha: float = ALPHA) -> np.ndarray:
    if alternative == "two-sided":
        return np.abs(z) > stats.norm.ppf(1 - alpha / 2)
    crit = stats.norm.ppf(1 - alpha)
    return z > crit if alternative == "greater" else z < -crit


W3 = np.array([0.5, 0.3, 0.2])
EPS = 1.0


# ---- sample sizes: the smallest n --------------------------------------------------------------------
def brute_max_se(v: np.ndarray, target: float, limit: int) -> int:
    ns = np.arange(1, limit + 1)
    ok = np.sqrt(v[:, None] / ns[None, :]).max(axis=0) <= target
    assert ok[-1], "brute-force range too short"
    return int(ns[np.argmax(ok)])


def brute_ci(v: np.ndarray, width: float, alpha: float, limit: int) -> int:
    z = stats.norm.ppf(1 - alpha / 2)
    ns = np.arange(1, limit + 1)
    ok = 2 * z * np.sqrt(v[:, None] / ns[None, :]).max(axis=0) <= width
    assert ok[-1], "brute-force range too short"
    return int(ns[np.argmax(ok)])


def test_standard_errors():
    np.testing.assert_allclose(standard_errors([1.0, 4.0], 25), [0.2, 0.4])
    # a covariance matrix: its diagonal
    np.testing.assert_allclose(standard_errors(np.array([[4.0, -1.0], [-1.0, 1.0]]), 4), [1.0, 0.5])


def test_n_for_max_se_is_smallest_random():
    rng = np.random.default_rng(11)
    for _ in range(40):
        v = rng.uniform(0.05, 3.0, size=rng.integers(1, 5))
        target = rng.uniform(0.03, 0.5)
        n = n_for_max_se(v, target)
        assert n == brute_max_se(v, target, int(v.max() / target ** 2) + 10)
        assert standard_errors(v, n).max() <= target
        assert n == 1 or standard_errors(v, n - 1).max() > target


def test_n_for_max_se_exact_integer_ratios():
    # target a power of two and avar = m target^2 exactly: the answer is exactly m
    # (a ceil-free formula such as int(avar / target^2) + 1 would give m + 1)
    for target in (0.5, 0.25, 0.125, 0.0625):
        for m in (1, 2, 3, 7, 100, 1001):
            v = np.array([m * target ** 2, 0.5 * m * target ** 2])
            assert n_for_max_se(v, target) == m
    # targets set from the variances, sqrt(v / m): rounding may land either side of m
    rng = np.random.default_rng(12)
    for _ in range(60):
        v = rng.uniform(0.01, 5.0, size=2)
        m = int(rng.integers(1, 3000))
        target = math.sqrt(v.max() / m)
        assert n_for_max_se(v, target) == brute_max_se(v, target, m + 5)


def test_n_for_max_se_edges():
    assert n_for_max_se([0.0, 0.0], 0.1) == 1
    assert n_for_max_se([0.001], 1.0) == 1
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError):
            n_for_max_se([1.0], bad)
    with pytest.raises(ValueError):
        n_for_max_se([-1.0], 0.1)
    # very large answers stay exact (no floating-point walk)
    n = n_for_max_se([2.0], 1e-7)
    assert standard_errors([2.0], n)[0] <= 1e-7 < standard_errors([2.0], n - 1)[0]


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.01])
def test_n_for_ci_width_is_smallest(alpha):
    rng = np.random.default_rng(13)
    z = stats.norm.ppf(1 - alpha / 2)
    for _ in range(30):
        v = rng.uniform(0.05, 3.0, size=rng.integers(1, 4))
        width = rng.uniform(0.1, 1.0)
        limit = int(v.max() * (2 * z / width) ** 2) + 10
        assert n_for_ci_width(v, width, alpha) == brute_ci(v, width, alpha, limit)
    for _ in range(30):                               # widths on the boundary of an integer n
        v = rng.uniform(0.05, 3.0, size=2)
        m = int(rng.integers(1, 3000))
        width = 2 * z * math.sqrt(v.max() / m)
        assert n_for_ci_width(v, width, alpha) == brute_ci(v, width, alpha, m + 5)


def test_n_for_ci_width_textbook():
    # a plain proportion at 1/2 (avar 1/4), +- 0.05: 1.959964^2 / 0.05^2 / 4 = 384.1 -> 385
    assert n_for_ci_width([0.25], 0.1) == 385
    with pytest.raises(ValueError):
        n_for_ci_width([0.25], 0.1, alpha=1.5)


def test_n_for_power_is_smallest():
    rng = np.random.default_rng(14)
    for _ in range(6):
        var, delta, target = rng.uniform(0.5, 3.0), rng.uniform(0.05, 0.2), rng.uniform(0.5, 0.95)
        alt = str(rng.choice(["two-sided", "greater"]))
        fn = lambda n: power_proportion(n, delta, var, alternative=alt)  # noqa: E731
        n = n_for_power(fn, target)
        ns = np.arange(1, 3 * n + 10)
        powers = power_proportion(ns, delta, var, alternative=alt)
        assert n == int(ns[np.argmax(powers >= target)])
        assert fn(n) >= target and (n == 1 or fn(n - 1) < target)
    # power of the independence test, of the two-sample test
    P = np.array([[0.3, 0.2], [0.2, 0.3]])
    n = n_for_power(lambda n: power_independence(n, P), 0.9)
    assert power_independence(n, P) >= 0.9 > power_independence(n - 1, P)
    n = n_for_power(lambda n: power_difference(n, 0.1, 1.0, 2.0), 0.8)
    assert power_difference(n, 0.1, 1.0, 2.0) >= 0.8 > power_difference(n - 1, 0.1, 1.0, 2.0)
    # unreachable: no effect has power alpha at every n
    assert n_for_power(lambda n: power_proportion(n, 0.0, 1.0), 0.8, n_max=10 ** 6) is None


# ---- smallest_n ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_max", [1, 2, 3, 17, 1000, 10 ** 9])
def test_smallest_n_step_functions(n_max):
    for k in sorted({1, 2, 3, 5, 16, 17, 100, 999, 1000, 1001, n_max - 1, n_max, n_max + 1}):
        calls = []

        def pred(n, k=k):
            calls.append(n)
            assert 1 <= n <= n_max, "searched outside [1, n_max]"
            return n >= k

        expected = k if 1 <= k <= n_max else (1 if k < 1 else None)
        assert smallest_n(pred, n_max=n_max) == expected
        assert len(calls) <= 2 * math.log2(n_max + 1) + 3        # exponential search + bisection


def test_smallest_n_with_target():
    f = lambda n: min(1.0, (n // 7) / 100)  # noqa: E731   a nondecreasing staircase
    for target in (0.0, 0.01, 0.37, 0.5, 1.0):
        ns = np.arange(1, 1000)
        expected = int(ns[np.argmax([f(n) >= target for n in ns])])
        assert smallest_n(f, target) == expected
    assert smallest_n(f, 1.01) is None
    assert smallest_n(f, 0.5, n_max=349) is None and smallest_n(f, 0.5, n_max=350) == 350
    with pytest.raises(ValueError):
        smallest_n(f, 0.5, n_max=0)


# ---- power: formulas ----------------------------------------------------------------------------------
def test_power_formulas_closed_form():
    # s = sqrt(n) delta / sigma = 2
    z2, z1 = stats.norm.ppf(0.975), stats.norm.ppf(0.95)
    assert power_proportion(100, 0.2, 1.0) == pytest.approx(stats.norm.cdf(2 - z2) + stats.norm.cdf(-2 - z2))
    assert power_proportion(100, -0.2, 1.0) == pytest.approx(power_proportion(100, 0.2, 1.0))
    assert power_proportion(100, 0.2, 1.0, alternative="greater") == pytest.approx(stats.norm.cdf(2 - z1))
    assert power_proportion(100, 0.2, 1.0, alternative="less") == pytest.approx(stats.norm.cdf(-2 - z1))
    for alt in ("two-sided", "greater", "less"):
        assert power_proportion(50, 0.0, 2.0, alternative=alt) == pytest.approx(ALPHA)
        assert power_proportion(50, 0.0, 2.0, alpha=0.1, alternative=alt) == pytest.approx(0.1)
    # two samples: the variances add
    assert power_difference(100, 0.2, 0.25, 0.75) == pytest.approx(power_proportion(100, 0.2, 1.0))
    # vectorized over n, a float for a scalar n
    ns = np.array([10, 100, 1000])
    np.testing.assert_allclose(power_proportion(ns, 0.1, 1.0), [power_proportion(int(n), 0.1, 1.0) for n in ns])
    assert isinstance(power_proportion(10, 0.1, 1.0), float)
    with pytest.raises(ValueError):
        power_proportion(10, 0.1, 1.0, alternative="two.sided")
    with pytest.raises(ValueError):
        power_proportion(10, 0.1, 0.0)


def test_power_independence_formula():
    P = np.array([[0.3, 0.2], [0.2, 0.3]])          # lam / n = 4 * 0.05^2 / 0.25 = 0.04, df = 1
    crit = stats.chi2.ppf(0.95, 1)
    assert power_independence(100, P) == pytest.approx(stats.ncx2.sf(crit, 1, 4.0))
    # all-zero rows and columns are dropped
    Pz = np.array([[0.3, 0.0, 0.2], [0.0, 0.0, 0.0], [0.2, 0.0, 0.3]])
    assert power_independence(100, Pz) == pytest.approx(power_independence(100, P))
    # independence: power alpha at every n
    P0 = np.outer([0.2, 0.3, 0.5], [0.6, 0.4])
    np.testing.assert_allclose(power_independence([10, 1000, 10 ** 6], P0), ALPHA, atol=1e-9)
    np.testing.assert_allclose(power_independence(10 ** 6, P0, alpha=0.01), 0.01, atol=1e-9)
    with pytest.raises(ValueError):
        power_independence(100, [[0.5, 0.5]])        # one row: no test
    with pytest.raises(ValueError):
        power_independence(100, [[0.5, 0.5], [0.5, 0.5]])   # not a distribution


def test_grr_avar_matches_channel_core():
    ch = grr_channel(("a", "b", "c"), EPS)
    np.testing.assert_allclose(np.diag(ch.avar_mom(W3)), grr_avar(W3, EPS), rtol=1e-12)
    np.testing.assert_allclose(ch.keep_probabilities(), grr_keep(3, EPS), rtol=1e-12)
    # the covariance matrix itself is accepted: its diagonal
    np.testing.assert_allclose(standard_errors(ch.avar_mom(W3), 400), np.sqrt(grr_avar(W3, EPS) / 400))


# ---- power: Monte Carlo ------------------------------------------------------------------------------
@pytest.mark.parametrize("n, k, delta, alternative", [
    (2000, 0, 0.05, "two-sided"),
    (4000, 0, -0.05, "two-sided"),
    (2000, 1, 0.04, "greater"),
    (4000, 0, -0.03, "less"),
])
def test_power_proportion_monte_carlo(n, k, delta, alternative):
    rng = np.random.default_rng(100 + n + k)
    w_hat, se_hat = grr_estimates(rng, n, W3, EPS, R)
    p0 = W3[k] - delta                               # delta = truth - null
    z = (w_hat[:, k] - p0) / se_hat[:, k]
    empirical = rejects(z, alternative).mean()
    theory = power_proportion(n, delta, grr_avar(W3, EPS)[k], alternative=alternative)
    assert 0.3 < theory < 0.9
    assert abs(empirical - theory) < mc_tol(theory), (empirical, theory)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_size_monte_carlo(alternative):
    rng = np.random.default_rng(7)
    n = 1000
    w_hat, se_hat = grr_estimates(rng, n, W3, EPS, R)
    z = (w_hat[:, 0] - W3[0]) / se_hat[:, 0]
    assert power_proportion(n, 0.0, grr_avar(W3, EPS)[0], alternative=alternative) == pytest.approx(ALPHA)
    assert abs(rejects(z, alternative).mean() - ALPHA) < mc_tol(ALPHA)


@pytest.mark.parametrize("n, delta", [(1500, 0.08), (3000, 0.08), (3000, 0.0)])
def test_power_difference_monte_carlo(n, delta):
    # two groups with different mechanisms (eps 1 and 1.5), so var1 != var2
    w1 = W3
    w2 = np.array([W3[0] - delta, W3[1] + delta, W3[2]])
    rng = np.random.default_rng(200 + n)
    e1, s1 = grr_estimates(rng, n, w1, 1.0, R)
    e2, s2 = grr_estimates(rng, n, w2, 1.5, R)
    z = (e1[:, 0] - e2[:, 0]) / np.sqrt(s1[:, 0] ** 2 + s2[:, 0] ** 2)
    empirical = rejects(z, "two-sided").mean()
    theory = power_difference(n, delta, grr_avar(w1, 1.0)[0], grr_avar(w2, 1.5)[0])
    if delta:
        assert 0.3 < theory < 0.9
    assert abs(empirical - theory) < mc_tol(theory), (empirical, theory)


def pearson_statistics(tables: np.ndarray) -> np.ndarray:
    """Pearson's chi-square of independence of each table (expected counts from its margins)."""
    n = tables.sum(axis=(1, 2))[:, None, None]
    e = tables.sum(axis=2)[:, :, None] * tables.sum(axis=1)[:, None, :] / n
    return ((tables - e) ** 2 / e).sum(axis=(1, 2))


def report_joint(W: np.ndarray, eps_a: float, eps_b: float) -> tuple[np.ndarray, object, object]:
    cha = grr_channel([f"x{i}" for i in range(W.shape[0])], eps_a)
    chb = grr_channel([f"y{j}" for j in range(W.shape[1])], eps_b)
    return cha.Kn @ W @ chb.Kn.T, cha, chb          # P(A, B) = K_A W K_B^T


W_DEP = np.array([[0.25, 0.10], [0.10, 0.20], [0.10, 0.25]])    # X (3 values) and Y (2) dependent


@pytest.mark.parametrize("n, independent", [(250, False), (400, False), (400, True)])
def test_power_independence_monte_carlo(n, independent):
    W = np.outer(W_DEP.sum(axis=1), W_DEP.sum(axis=0)) if independent else W_DEP
    P, _, _ = report_joint(W, 1.5, 1.5)
    rng = np.random.default_rng(300 + n + independent)
    tables = rng.multinomial(n, P.ravel(), size=R).reshape(R, *P.shape).astype(float)
    assert np.all(tables.sum(axis=1) > 0) and np.all(tables.sum(axis=2) > 0)    # no empty margin
    df = (P.shape[0] - 1) * (P.shape[1] - 1)
    empirical = np.mean(pearson_statistics(tables) > stats.chi2.ppf(1 - ALPHA, df))
    theory = power_independence(n, P)
    if independent:
        assert theory == pytest.approx(ALPHA)
    else:
        assert 0.3 < theory < 0.9
    assert abs(empirical - theory) < mc_tol(theory), (empirical, theory)


def test_pearson_statistic_is_privspecs():
    # the statistic simulated above is the one privspec's independence test computes
    P, cha, chb = report_joint(W_DEP, 1.5, 1.5)
    table = np.random.default_rng(5).multinomial(600, P.ravel()).reshape(P.shape).astype(float)
    out = independence_test(cha, chb, table, "pearson", calibration="asymptotic")
    assert out.df == 2
    assert out.statistic == pytest.approx(pearson_statistics(table[None])[0], rel=1e-6)


# ---- curves ----------------------------------------------------------------------------------------------
def test_power_curve_and_grid():
    grid = n_grid(500)
    assert grid.dtype.kind == "i" and np.all(np.diff(grid) > 0)
    assert 500 in grid and grid[0] == 50 and grid[-1] == 5000
    assert 20 <= len(grid) <= 26
    ratios = grid[1:] / grid[:-1]                     # log-spaced: a constant ratio (up to rounding)
    np.testing.assert_allclose(ratios, 10 ** (2 / 24), rtol=0.02)
    small = n_grid(3)
    assert small[0] == 1 and np.all(np.diff(small) > 0) and small[-1] == 30
    fn = lambda n: power_proportion(n, 0.1, 1.0)  # noqa: E731
    curve = power_curve(fn, grid)
    np.testing.assert_allclose(curve, power_proportion(grid, 0.1, 1.0))
    assert np.all(np.diff(curve) >= 0)


# ---- extreme targets: an answer or a clear refusal (issue 33) -----------------------------------------
PLAN = """
variable x: categorical {a, b, c, d}
population x ~ categorical(1/10, 2/10, 3/10, 4/10)
mechanism m = grr(x, epsilon = 1)
"""


def _plan(query: str):
    import privspec

    spec = privspec.load(PLAN + f"query q = {query}\n")
    return spec, (spec.analyze() if spec.ok else None)


@pytest.mark.parametrize("target", ["max_se", "ci_width"])
def test_sample_size_for_a_huge_target_is_one(target):
    """max_se = 1e300 overflowed squaring the target (OverflowError): every n meets it,
    so the answer is the smallest, 1."""
    _, res = _plan(f"sample_size(distribution(x) from m, {target} = 1e300)")
    assert res.ok and res["q"].value == 1 and res["q"].extras["at_n_minus_1"] is None


@pytest.mark.parametrize("target", ["max_se", "ci_width"])
def test_sample_size_for_a_tiny_target_is_refused(target):
    """max_se = 1e-300 divided by its square, 0 in doubles (ZeroDivisionError): no n up to
    10^9 reaches it, B151 as for an unreachable power."""
    _, res = _plan(f"sample_size(distribution(x) from m, {target} = 1e-300)")
    d = res.failures["q"].diagnostics[0]
    assert d.code == "B151" and "1,000,000,000" in d.message and target in d.hint


def test_sample_size_just_beyond_the_search_is_refused():
    """The same rule for targets that fit in doubles: an n past 10^9 is B151."""
    from privspec.backends.design.planning import N_MAX

    _, res = _plan("sample_size(distribution(x) from m, max_se = 1e-5)")   # n ~ 2.8e10
    assert res.failures["q"].diagnostics[0].code == "B151"
    assert n_for_max_se([2.8], 1e-5, n_max=N_MAX) is None and n_for_max_se([2.8], 1e-5) > N_MAX


@pytest.mark.parametrize("n", ["1e20", "1e300"])
def test_power_at_an_astronomical_n_is_one(n):
    """power(..., n = 1e300) was a TypeError (numpy's geomspace of a Python integer beyond
    int64): the power is 1, its curve in whole numbers around n."""
    _, res = _plan(f"power(distribution(x) from m, n = {n}, test = proportion(a, 0.08))")
    assert res.ok, res.failures
    r = res["q"]
    want = 10 ** int(n[2:])
    assert r.value == 1.0 and r.extras["n"] == want
    curve = r.extras["curve"]
    assert curve["n"][0] == int(want / 10) and curve["n"][-1] == int(want * 10.0) and int(float(want)) in curve["n"]
    assert all(p == 1.0 for p in curve["power"])


def test_power_beyond_floating_point_is_refused():
    spec, _ = _plan("power(distribution(x) from m, n = 1e400, test = proportion(a, 0.08))")
    d = spec.diagnostics[0]
    assert d.code == "E309" and "at most 1e300" in d.message


def test_power_target_of_one_names_the_power():
    """power = 1 was refused as 'alpha must be in (0, 1)'."""
    spec, _ = _plan("sample_size(distribution(x) from m, power = 1, test = proportion(a, 0.08))")
    d = spec.diagnostics[0]
    assert d.code == "E309" and d.message == "power must be in (0, 1), found 1" and "alpha" not in d.message
    spec, _ = _plan("sample_size(distribution(x) from m, max_se = 0.01, alpha = 1)")
    assert spec.diagnostics[0].message == "alpha must be in (0, 1), found 1"


def test_power_formulas_at_infinite_n():
    """Beyond doubles n is inf: power 1 for a true difference, the size under the null."""
    assert power_proportion(10 ** 400, 0.02, 1.0) == 1.0
    assert power_proportion(10 ** 400, 0.0, 1.0) == pytest.approx(ALPHA)
    assert power_independence(10 ** 300, [[0.3, 0.2], [0.2, 0.3]]) == 1.0
    assert power_independence(10 ** 300, [[0.25, 0.25], [0.25, 0.25]]) == pytest.approx(ALPHA)
