"""Estimates of finite mechanisms that a user can trust (issue 13): fits that reached their
optimum, marginals of products estimable whenever the joint is, standard errors of the
kind asked (population or conditional on the respondents' values), and intervals that
cover near the boundary of the simplex.  Seeded simulations with stated tolerances."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.backends.core import estimators
from privspec.backends.core.compile import channel_of
from privspec.backends.finite.backend import estimate_on_counts
from privspec.backends.finite.data import observations, privatize_frame
from privspec.backends.finite.profile import boundary_critical
from privspec.backends.finite.estimates import (conditional_covariance, fit_estimate,
                                                mle_determined)
from privspec.backends.finite.simulate import draw_reports, simulate_query
from privspec.errors import BackendError


# ---- marginals of products --------------------------------------------------------------------------
def anes96_multi(eps: int = 3):
    sm = pytest.importorskip("statsmodels.api")
    d = sm.datasets.anes96.load_pandas().data
    spec = privspec.load(f"""
variable pid: categorical {{p0, p1, p2, p3, p4, p5, p6}}
variable educ: categorical {{e1, e2, e3, e4, e5, e6, e7}}
variable vote: categorical {{clinton, dole}}
mechanism multi = product(grr(pid, epsilon = {eps}), grr(educ, epsilon = {eps}), grr(vote, epsilon = {eps}))
query m = estimate distribution(pid) from multi by mle
""")
    raw = pd.DataFrame({"pid": ["p%d" % v for v in d.PID.astype(int)], "educ": ["e%d" % v for v in d.educ.astype(int)],
                        "vote": np.where(d.vote == 1, "dole", "clinton")})
    return spec.model, raw


@pytest.mark.slow
def test_marginal_of_a_product_is_estimable_whenever_the_joint_is() -> None:
    """anes96 (n = 944) through product(grr(pid), grr(educ), grr(vote)), eps = 3 each: the 98
    joint report cells are never all observed, so Assumption 2 fails for the joint channel and
    the marginal MLE was refused (D020) in every run; but the joint MLE is a single point (the
    likelihood's maximizers, an LP, collapse), so pid's distribution is determined."""
    model, raw = anes96_multi()
    mech, q = model.mechanisms["multi"], model.queries["m"]
    for seed in range(3):
        ch, counts = observations(mech, privatize_frame(model, mech, raw, seed))
        assert np.count_nonzero(counts) < ch.p
        r = estimate_on_counts(q, counts, ch)
        w = np.array(r.value.values, dtype=float)
        assert abs(w.sum() - 1) < 1e-9 and np.all(w >= 0) and r.extras["converged"]
        lo = np.array([r.extras["ci95"][lab][0] for lab in r.value.labels])
        hi = np.array([r.extras["ci95"][lab][1] for lab in r.value.labels])
        assert np.all((lo <= w + 1e-9) & (w <= hi + 1e-9))


def test_mle_determined_by_linear_programs() -> None:
    K = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5], [0.0, 0.25, 0.25, 0.0], [0.25, 0.0, 0.25, 0.0]])
    w = np.array([0.1, 0.2, 0.3, 0.4])
    assert mle_determined(K, w)                                    # full column rank (Assumption 2)
    assert not mle_determined(K[:3], w)                            # a line of maximizers through w
    K2 = K[:2]
    assert not mle_determined(K2, w)
    assert mle_determined(K2, w, M=np.array([[1.0, 1.0, 0.0, 0.0]]))
    # on the boundary the maximizers can be a single point although the rank is short: the line
    # through w along (1, -1, 1, -1) leaves the simplex both ways
    assert mle_determined(K[:3], np.array([0.3, 0.0, 0.0, 0.7]))


def test_an_unconverged_fit_is_refused(monkeypatch) -> None:
    model = privspec.load("variable c: categorical {a, b, c, d}\nmechanism u = subset(c, uniform)\n"
                          "query w = estimate distribution(c) from u by newton").model
    ch = channel_of(model.mechanisms["u"])
    counts = np.random.default_rng(1).multinomial(500, ch.Kn @ np.array([0.1, 0.2, 0.3, 0.4])).astype(float)
    real = estimators.ESTIMATORS["newton"]

    def stuck(ch, counts):
        fit = real(ch, counts)
        return estimators.Fit(fit.w, "newton", fit.n, fit.loglik, 2, 6e-4, False, fit.note)

    monkeypatch.setitem(estimators.ESTIMATORS, "newton", stuck)
    with pytest.raises(BackendError) as e:
        fit_estimate(model.queries["w"], ch, counts)
    assert e.value.code == "B020" and "KKT violation 0.0006" in str(e.value)
    assert "by mle (EM)" in e.value.diagnostics[0].hint


def test_an_em_that_stalls_is_not_sent_to_em_again(monkeypatch) -> None:
    """B020 of EM itself (the likelihood flat in doubles): the hint names mom, not EM,
    which is what stalled."""
    from privspec.backends.finite import estimates as estimates_module

    model = privspec.load("variable c: categorical {a, b, c, d}\nmechanism u = subset(c, uniform)\n"
                          "query w = estimate distribution(c) from u by mle").model
    ch = channel_of(model.mechanisms["u"])
    counts = np.random.default_rng(1).multinomial(500, ch.Kn @ np.array([0.1, 0.2, 0.3, 0.4])).astype(float)

    def stuck(ch, C, **_):
        return [estimators.Fit(np.full(4, 0.25), "em", 500, -1.0, 9, 6e-9, False, "EM") for _ in C]

    monkeypatch.setattr(estimates_module, "em_fits", stuck)
    with pytest.raises(BackendError) as e:
        fit_estimate(model.queries["w"], ch, counts)
    assert e.value.code == "B020" and "by mom" in e.value.diagnostics[0].hint
    assert "by mle" not in e.value.diagnostics[0].hint


# ---- standard errors of two kinds ----------------------------------------------------------------------
URN = """variable x: categorical {black, red, green, blue}
population x ~ categorical(0.01, 0.1, 0.2, 0.69)
mechanism m = subset(x, uniform)
mechanism g = grr(x, epsilon = 2)
"""


@pytest.mark.parametrize("mech, method", [("m", "mom"), pytest.param("g", "mom", marks=pytest.mark.slow)])
def test_each_se_kind_matches_its_own_monte_carlo(mech: str, method: str) -> None:
    """population: n Cov(w_hat - w) over fresh samples; conditional: n Cov(w_hat - pi) with pi
    each sample's own table of true values (privacy noise only).  2,000 replications of
    n = 5,000 through ``simulate``: the analytic diagonal within 10% of the empirical one, for
    both kinds, and the two kinds differ by diag(w) - w w^T."""
    model = privspec.load(URN + "".join(
        f"query q_{k} = estimate distribution(x) from {mech} by {method}(se = {k})\n"
        for k in ("population", "conditional"))).model
    diag = {}
    for kind in ("population", "conditional"):
        r = simulate_query(model, model.queries[f"q_{kind}"], n=5000, reps=2000, seed=3)
        emp = np.diag(np.asarray(r.value["n_cov_empirical"].data, dtype=float))
        ana = np.diag(np.asarray(r.value["n_cov_analytic"].data, dtype=float))
        assert np.all(np.abs(emp / ana - 1) < 0.10), (kind, emp, ana)
        diag[kind] = ana
        assert r.extras["se_kind"] == kind
    w = np.array([0.01, 0.1, 0.2, 0.69])
    assert np.allclose(diag["population"] - diag["conditional"], w * (1 - w))


@pytest.mark.slow
def test_mle_conditional_se_matches_its_monte_carlo() -> None:
    """The same for the MLE (EM) of the uniform design at n = 5,000, 1,500 replications, with
    every category several standard errors inside the simplex (near 0 the MLE's atom at 0
    shrinks its variance: that is the intervals' business, below); the standard errors come
    from the estimate's own result (``se_kind`` as asked)."""
    w = np.array([0.1, 0.2, 0.3, 0.4])
    model = privspec.load(URN + "query c = estimate distribution(x) from m by mle(se = conditional)").model
    ch = channel_of(model.mechanisms["m"])
    x, reports = draw_reports(np.random.default_rng(4), ch.Kn, w, 5000, 1500)
    est = np.array([estimators.em(ch, r).w for r in reports])
    emp_cond = np.var(est - x / 5000, axis=0) * 5000
    emp_pop = np.var(est - w, axis=0) * 5000
    V = ch.avar_mle(w)
    assert np.all(np.abs(emp_pop / np.diag(V) - 1) < 0.10), (emp_pop, np.diag(V))
    cond = np.diag(conditional_covariance(V, w))
    assert np.all(np.abs(emp_cond / cond - 1) < 0.10), (emp_cond, cond)
    r = estimate_on_counts(model.queries["c"], reports[0])
    assert r.extras["se_kind"] == "conditional"
    se = np.array(r.extras["se"].values)
    assert np.all(np.abs(se / np.sqrt(cond / 5000) - 1) < 0.1)   # at the estimate, not at w


def test_conditional_covariance_is_the_privacy_part_for_mom() -> None:
    """For MoM, n Cov(w_hat | X) = Q^-1 T (diag(K pi) - K diag(pi) K^T) T^T Q^-1 exactly."""
    ch = channel_of(privspec.load(URN).model.mechanisms["m"])
    w = np.array([0.01, 0.1, 0.2, 0.69])
    K, T = ch.Kn, ch.Tn
    Qi = np.linalg.inv(T @ K)
    direct = Qi @ T @ (np.diag(K @ w) - K @ np.diag(w) @ K.T) @ T.T @ Qi
    assert np.allclose(conditional_covariance(ch.avar_mom(w), w), direct)


def test_the_result_says_which_se_it_gives() -> None:
    model = privspec.load(URN + "query q = estimate distribution(x) from m by mle(se = conditional)\n"
                                "query p = estimate distribution(x) from m by mle").model
    ch = channel_of(model.mechanisms["m"])
    counts = np.random.default_rng(2).multinomial(4000, ch.Kn @ np.array([0.01, 0.1, 0.2, 0.69])).astype(float)
    cond, pop = estimate_on_counts(model.queries["q"], counts), estimate_on_counts(model.queries["p"], counts)
    assert cond.extras["se_kind"] == "conditional" and pop.extras["se_kind"] == "population"
    assert all(c < p for c, p in zip(cond.extras["se"].values, pop.extras["se"].values))


# ---- intervals near the boundary --------------------------------------------------------------------
def test_boundary_critical_values() -> None:
    """Exact coverage in the limit X ~ N(mu, 1), mu >= 0: P(deviance(mu) <= c(mu)) = 0.95."""
    rng = np.random.default_rng(0)
    for mu in (0.0, 0.5, 1.0, 2.0, 4.0):
        x = rng.normal(mu, 1.0, 400_000)
        dev = np.where(x >= 0, (x - mu) ** 2, mu * mu - 2 * x * mu)
        assert abs(np.mean(dev <= boundary_critical(mu)) - 0.95) < 0.002, mu
    assert abs(boundary_critical(0.0) - 2.7055) < 1e-3 and abs(boundary_critical(5.0) - 3.8415) < 1e-3


@pytest.mark.slow
def test_profile_intervals_cover_a_category_next_to_zero() -> None:
    """Randomized response with eps = 1 on two categories, w = (0.01, 0.99), n = 500: the first
    category is a fraction of a standard error from 0, where the MLE sits at 0 about half
    the time.  The Wald interval and a profile interval with the fixed chi2(0.95) cut-off
    cover it 97-98% of the time; the boundary-aware profile interval 93-97% (400
    replications: Monte Carlo se 0.011)."""
    model = privspec.load("variable x: categorical {a, b}\npopulation x ~ categorical(0.01, 0.99)\n"
                          "mechanism g = grr(x, epsilon = 1)\n"
                          "query q = estimate distribution(x) from g by mle").model
    r = simulate_query(model, model.queries["q"], n=500, reps=400, seed=11)
    cov = np.array(r.value["ci95_coverage"].values)
    assert np.all((0.93 <= cov) & (cov <= 0.97)), cov


def test_two_stage_draws_have_the_reports_law() -> None:
    ch = channel_of(privspec.load(URN).model.mechanisms["m"])
    w = np.array([0.01, 0.1, 0.2, 0.69])
    x, reports = draw_reports(np.random.default_rng(5), ch.Kn, w, 1000, 4000)
    assert np.all(x.sum(axis=1) == 1000) and np.all(reports.sum(axis=1) == 1000)
    assert np.allclose(reports.mean(axis=0) / 1000, ch.Kn @ w, atol=2e-3)
