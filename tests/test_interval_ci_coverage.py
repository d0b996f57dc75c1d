"""Coverage of the intervals printed with interval-privacy estimates (issue 13), by seeded
simulation with stated tolerances; bench/interval_coverage.py measures the same with more
replications and the alternatives side by side.

The tolerances are set so that the interval printed before fails them: the NPMLE mean
with the plug-in information bound covered 78% at n = 100 in the Table II setting (and
the bootstrap 89%), Banerjee-Wellner's 2.269 about 93% at fixed points.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import privspec
from privspec.backends.interval.estimate import estimate_from_reports
from privspec.backends.interval.fit import aggregate, fit_npmle
from privspec.backends.interval.reports import sample_reports
from privspec.backends.interval.resample import (case1_fitter, engine_fitter, jackknife, moment_statistic,
                                                 npmle_moment_interval)
from privspec.backends.interval.npmle.estimator import likelihood_ratio, npmle
from privspec.errors import BackendError

pytest.importorskip("scipy.optimize", minversion=None)

T100 = 2 * 100 ** (1 / 3)


def spec(text: str):
    return privspec.load(text).model


def table2_model(n: int, method: str = "npmle", se: str = "population"):
    T = 2 * n ** (1 / 3)
    option = "" if se == "population" else "(se = conditional)"
    return spec(f"""variable y: continuous
population y ~ normal(1/2, 1)
mechanism c1 = interval(y, case1(uniform({-T!r}, {T!r})))
query m = estimate mean(y) from c1 by {method}{option}
""")


def case1(y: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    below = y <= u
    return np.where(below, -np.inf, u), np.where(below, u, np.inf)


def printed_coverage(model, n: int, reps: int, seed: int, truth: float, **options) -> tuple[float, float]:
    """Share of replications whose printed ci95 holds the truth, and the mean se."""
    q = model.queries["m"]
    rng = np.random.default_rng(seed)
    mech = q.mechanism
    hits, ses = [], []
    for _ in range(reps):
        y = rng.normal(0.5, 1, n)
        left, right = sample_reports(model, mech, y, rng)
        r = estimate_from_reports(model, q, left, right, **options)
        lo, hi = r.extras.get("ci95", (r.value - 1.96 * r.extras["se"], r.value + 1.96 * r.extras["se"]))
        hits.append(lo <= truth <= hi)
        ses.append(r.extras["se"])
    return float(np.mean(hits)), float(np.mean(ses))


# ---- the machinery -----------------------------------------------------------------------------------
def test_case1_fast_path_equals_the_engine():
    """The isotonic-regression NPMLE gives the engine's functional, with ties and with
    reports deleted (as the jackknife deletes them)."""
    rng = np.random.default_rng(0)
    for _ in range(60):
        n = int(rng.integers(5, 150))
        y, u = rng.normal(size=n), np.round(rng.uniform(-3, 3, n), 1)     # ties among the anchors
        L, R, C = aggregate(*case1(y, u))
        c = C.copy()
        c[rng.integers(0, c.size, 3)] = 0.0
        if c.sum() == 0:
            continue
        fast, slow = case1_fitter(L, R), engine_fitter(L, R, npmle)
        for k in (1, 2):
            st = moment_statistic(k, -2.5, np.inf)
            assert st(*fast(c)) == pytest.approx(st(*slow(c)), abs=1e-7)
    assert case1_fitter(np.array([0.0]), np.array([1.0])) is None          # not Case-I reports


def test_jackknife_of_a_mean_and_its_groups():
    """For exact values the jackknife is s / sqrt(n) exactly; a delete-a-group jackknife
    estimates it (20 groups: about 16% noise)."""
    rng = np.random.default_rng(1)
    x = np.unique(np.round(rng.normal(size=400), 2))
    c = rng.integers(1, 4, x.size).astype(float)
    fit = lambda counts: (np.column_stack([x, x]), counts / counts.sum())
    mean = lambda iv, m: float(m @ iv[:, 0])
    y = np.repeat(x, c.astype(int))
    exact = y.std(ddof=1) / np.sqrt(y.size)
    one = jackknife(fit, c, mean, groups=10_000)
    assert one.se == pytest.approx(exact, rel=1e-10) and one.replicates == x.size
    grouped = [jackknife(fit, c, mean, groups=20, seed=s).se for s in range(40)]
    assert np.mean(grouped) == pytest.approx(exact, rel=0.08)
    assert jackknife(fit, c, mean, groups=20, seed=3).se == jackknife(fit, c, mean, groups=20, seed=3).se


# ---- coverage of the NPMLE mean -------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("n, reps", [(100, 300), (400, 150)])
def test_npmle_mean_interval_covers_in_the_table2_setting(n, reps):
    """Printed 95% interval of the NPMLE mean, Table II setting: 96-98% at n = 100 and 95-96%
    at n = 400 in bench/interval_coverage.py; the plug-in bound printed before gave 78% and
    90%.  Bounds: 3 Monte Carlo standard errors below 0.95, above 0.99 (too wide)."""
    cover, _ = printed_coverage(table2_model(n), n, reps, seed=n, truth=0.5)
    mc = np.sqrt(0.95 * 0.05 / reps)
    assert 0.95 - 3 * mc <= cover <= 0.99


@pytest.mark.slow
def test_npmle_mean_interval_covers_for_case2():
    """Case II (two logistic(0, 5) anchors, section IV-B's design) at n = 200 through the engine;
    20 groups as simulate uses (bench: 94-96% with the 50 of run)."""
    model = spec("""variable y: continuous
population y ~ normal(1/2, 1)
mechanism c2 = interval(y, case2(logistic(0, 5)))
query m = estimate mean(y) from c2 by npmle
""")
    cover, _ = printed_coverage(model, 200, 90, seed=5, truth=0.5, jackknife_groups=20)
    assert 0.95 - 3 * np.sqrt(0.95 * 0.05 / 90) <= cover <= 1.0


# ---- se = conditional against its own Monte Carlo ---------------------------------------------------------
UNIFORM = """variable s: continuous [0, 150]
population s ~ uniform(0, 150)
mechanism c1 = interval(s, case1(uniform(0, 150)))
query m = estimate mean(s) from c1 by {method}
"""


@pytest.mark.parametrize("method, ratio", [pytest.param("npmle", 0.5, marks=pytest.mark.slow), ("unbiased", 2 / 3)])
def test_conditional_and_population_se_each_match_their_own_monte_carlo(method, ratio):
    """Uniform salary with uniform anchors on [0, 150] (n = 200): the conditional variance is
    half the population one for the NPMLE (bound 3750, Var(Y) 1875) and two thirds for
    Example 2 (5625 - 1875).  se = conditional against the spread with Y held fixed and the
    anchors redrawn, se = population against the spread over both; each within 15% (the
    two differ by 22-41%, so each test fails the other's standard error)."""
    n, reps = 200, 120
    rng = np.random.default_rng(7)
    model_c = spec(UNIFORM.format(method=f"{method}(se = conditional)"))
    model_p = spec(UNIFORM.format(method=method))
    qc, qp = model_c.queries["m"], model_p.queries["m"]
    y_fixed = rng.uniform(0, 150, n)
    cond, se_c, pop, se_p, hits = [], [], [], [], []
    for _ in range(reps):
        left, right = sample_reports(model_c, qc.mechanism, y_fixed, rng)
        r = estimate_from_reports(model_c, qc, left, right)
        cond.append(r.value)
        se_c.append(r.extras["se"])
        hits.append(r.extras["ci95"][0] <= y_fixed.mean() <= r.extras["ci95"][1])
        assert r.extras["se_kind"] == "conditional" and "respondents' own mean" in r.extras["target"]
        y = rng.uniform(0, 150, n)
        left, right = sample_reports(model_p, qp.mechanism, y, rng)
        r = estimate_from_reports(model_p, qp, left, right)
        pop.append(r.value)
        se_p.append(r.extras["se"])
    mc_cond = np.sqrt(np.mean((np.array(cond) - y_fixed.mean()) ** 2))
    mc_pop = np.sqrt(np.mean((np.array(pop) - 75.0) ** 2))
    assert np.mean(se_c) == pytest.approx(mc_cond, rel=0.15)
    assert np.mean(se_p) == pytest.approx(mc_pop, rel=0.15)
    assert np.mean(se_c) / np.mean(se_p) == pytest.approx(np.sqrt(ratio), rel=0.12)
    assert np.mean(hits) >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / reps)


@pytest.mark.parametrize("query, words", [
    ("estimate mean(y) from c2 by mle(normal, se = conditional)", "not centred on their mean"),
    ("estimate cdf(y) from c2 by npmle(se = conditional)", "population's F"),
    ("estimate mean(y) from sel by npmle(se = conditional)", "not coarsened at random"),
])
def test_conditional_se_is_refused_where_it_is_not_honest(query, words):
    model = spec(f"""variable y: continuous [0, 150]
population y ~ uniform(0, 150)
mechanism c2 = interval(y, case2(uniform(0, 150)))
mechanism c1 = interval(y, case1(uniform(0, 150)))
mechanism sel = selective(c1, tau = 3/10, rho = 1/2)
query m = {query}
""")
    q = model.queries["m"]
    rng = np.random.default_rng(0)
    left, right = sample_reports(model, q.mechanism, rng.uniform(0, 150, 50), rng)
    with pytest.raises(BackendError) as info:
        estimate_from_reports(model, q, left, right)
    d = info.value.diagnostics[0]
    assert d.code == "B140" and words in d.message and "se = population" in d.hint


# ---- the parametric fit: profile-likelihood intervals ------------------------------------------------------
@pytest.mark.slow
def test_mle_profile_interval_covers_the_second_moment():
    """E(Y^2) by mle(normal) from Case II (logistic(0, 5)) reports at n = 200: the profile
    interval printed covers (bench: 94%); Wald, printed before, covered 90%."""
    model = spec("""variable y: continuous
population y ~ normal(1/2, 1)
mechanism c2 = interval(y, case2(logistic(0, 5)))
query m = estimate moment(y, 2) from c2 by mle(normal)
""")
    q = model.queries["m"]
    rng = np.random.default_rng(11)
    hits = []
    for _ in range(60):
        left, right = sample_reports(model, q.mechanism, rng.normal(0.5, 1, 200), rng)
        r = estimate_from_reports(model, q, left, right)
        lo, hi = r.extras["ci95"]
        assert lo < r.value < hi and r.extras["ci_method"].startswith("profile likelihood")
        hits.append(lo <= 1.25 <= hi)
    assert np.mean(hits) >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / 60)


# ---- the band of F -----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_band_calibration_at_fixed_points():
    """The likelihood-ratio statistic for F(x) at the true quartiles, Table II setting at
    n = 100: its 95% quantile lies above Banerjee-Wellner's limit 2.269 (so D's quantile
    under-covers); the calibrated 2.486 covers 93-97%."""
    rng = np.random.default_rng(3)
    pop = stats.norm(0.5, 1)
    x = pop.ppf([0.25, 0.5, 0.75])
    lr = []
    for _ in range(300):
        L, R, C = aggregate(*case1(pop.rvs(100, random_state=rng), rng.uniform(-T100, T100, 100)))
        lr.append(likelihood_ratio(npmle(L, R, C), L, R, C, x, pop.cdf(x)))
    lr = np.concatenate(lr)
    assert np.quantile(lr, 0.95) > 2.3
    assert 0.93 <= np.mean(lr <= 2.486) <= 0.975


def test_no_interval_when_no_report_moves_the_estimate():
    """Identical reports: no deletion moves the estimate, so no standard error; the result
    says so instead of printing a zero-width interval."""
    left, right = np.full(5, -np.inf), np.full(5, 4.0)
    ci = npmle_moment_interval(left[:1], right[:1], np.array([5.0]), 1, refit=npmle, lower=0.0, upper=10.0)
    assert np.isnan(ci.se) and (ci.lower, ci.upper) == (-np.inf, np.inf)
    extras = ci.extras()
    assert "no standard error" in extras["coverage_note"] and extras["ci_method"].startswith("none")


def test_range_fit_jackknife_and_its_limit(monkeypatch):
    """Reports less an acceptable range in two pieces go through the range fit: a jackknife of
    20 groups; beyond RANGE_FIT_MAX_REPORTS distinct reports, none, and the result says why."""
    from privspec.backends.interval import resample as interval_resample

    model = spec("""variable s: continuous [0, 150]
population s ~ uniform(0, 150)
mechanism mid = interval(s, case2(uniform(0, 150)), disclose [60, 80])
query m = estimate mean(s) from mid by npmle
""")
    q = model.queries["m"]
    rng = np.random.default_rng(2)
    left, right = sample_reports(model, q.mechanism, rng.uniform(0, 150, 300), rng)
    r = estimate_from_reports(model, q, left, right)
    assert "on ranges" in r.extras["method"] and r.extras["se_method"].startswith("delete-a-group jackknife (20 ")
    assert r.extras["ci95"][0] < 75 < r.extras["ci95"][1]
    monkeypatch.setattr(interval_resample, "RANGE_FIT_MAX_REPORTS", 100)
    r = estimate_from_reports(model, q, left, right)
    assert np.isnan(r.extras["se"]) and "too slow to refit" in r.extras["coverage_note"]
