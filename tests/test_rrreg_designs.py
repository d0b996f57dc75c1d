"""Kuk's card design (issue 37, RRreg's ``"Kuk"``): ``kuk(Y, p1 = a, p2 = b, k = K)`` goes
through the one channel core. Its epsilon against the closed form ``k max(|log(p1/p2)|,
|log((1-p1)/(1-p2))|)``, the MoM against Kuk's estimator and RRreg's standard error, the
MLE and its standard error against an independent likelihood maximized by scipy, the
intervals' coverage in a seeded simulation, privatize's reports against the binomial
law, and what the checker and the data reader refuse."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.optimize
import scipy.stats

import privspec
from privspec.errors import DataError

HEAD = """variable drug: categorical {yes, no}
variable race: categorical {a, b, c}
population drug ~ categorical(0.3, 0.7)
mechanism kuk3 = kuk(drug, p1 = 0.8, p2 = 0.2, k = 3)
"""
P1, P2, K = 0.8, 0.2, 3


def _reports(n: int, pi: float, seed: int) -> pd.DataFrame:
    """n reports of kuk3: the red cards among k draws from the respondent's deck."""
    rng = np.random.default_rng(seed)
    trait = rng.random(n) < pi
    return pd.DataFrame({"drug": rng.binomial(K, np.where(trait, P1, P2)).astype(str)})


def test_epsilon_is_the_largest_log_ratio_of_the_binomial_rows() -> None:
    res = privspec.load(HEAD + "query e = epsilon(kuk3)\n").analyze()
    closed = K * max(abs(math.log(P1 / P2)), abs(math.log((1 - P1) / (1 - P2))))
    assert float(res["e"].value) == pytest.approx(closed, rel=1e-12)   # log(64)


def test_the_mom_is_kuks_estimator_with_rrregs_standard_error() -> None:
    """RRreg's RRuni.Kuk: pi = (mean/k - p2)/(p1 - p2), its variance phi (1 - phi) /
    (k n (p1 - p2)^2) + (1 - 1/k) pi (1 - pi) / n (RRreg divides by n - 1)."""
    frame = _reports(3000, 0.3, 1)
    res = privspec.load(HEAD + "query m = estimate distribution(drug) from kuk3 by mom\n").run({"kuk3": frame})
    out = res["m"].to_dict()
    n = len(frame)
    lam = frame["drug"].astype(int).mean() / K
    pi = (lam - P2) / (P1 - P2)
    phi = pi * P1 + (1 - pi) * P2
    se = math.sqrt(phi * (1 - phi) / (K * n * (P1 - P2) ** 2) + (1 - 1 / K) * pi * (1 - pi) / n)
    assert out["value"]["yes"] == pytest.approx(pi, abs=1e-12)
    assert out["se"]["yes"] == pytest.approx(se, rel=1e-6)


def test_the_avar_of_the_mom_is_the_variance_of_the_red_share() -> None:
    res = privspec.load(HEAD + "query v = avar(distribution(drug) from kuk3 by mom)\n").analyze()
    pi = 0.3
    var_y = pi * K * P1 * (1 - P1) + (1 - pi) * K * P2 * (1 - P2) + K ** 2 * pi * (1 - pi) * (P1 - P2) ** 2
    assert res["v"].to_dict()["value"]["data"][0][0] == pytest.approx(var_y / (K * (P1 - P2)) ** 2, rel=1e-12)


def test_the_mle_and_its_se_match_an_independent_likelihood() -> None:
    """The binomial-mixture likelihood maximized by scipy on the same reports; the
    standard error from the Fisher information sum_j (f1_j - f2_j)^2 / lambda_j."""
    frame = _reports(2000, 0.3, 2)
    res = privspec.load(HEAD + "query m = estimate distribution(drug) from kuk3 by mle\n").run({"kuk3": frame})
    out = res["m"].to_dict()
    j = frame["drug"].astype(int).to_numpy()
    f1, f2 = scipy.stats.binom.pmf(j, K, P1), scipy.stats.binom.pmf(j, K, P2)
    fit = scipy.optimize.minimize_scalar(lambda p: -np.log(p * f1 + (1 - p) * f2).sum(), bounds=(0, 1),
                                         method="bounded", options={"xatol": 1e-10})
    pi = fit.x
    assert out["value"]["yes"] == pytest.approx(pi, abs=1e-6)
    g1, g2 = scipy.stats.binom.pmf(np.arange(K + 1), K, P1), scipy.stats.binom.pmf(np.arange(K + 1), K, P2)
    info = ((g1 - g2) ** 2 / (pi * g1 + (1 - pi) * g2)).sum()
    assert out["se"]["yes"] == pytest.approx(1 / math.sqrt(len(j) * info), rel=1e-4)


@pytest.mark.parametrize("method", ["mle", "mom"])
def test_the_intervals_cover_in_a_seeded_simulation(method: str) -> None:
    """600 surveys of 1,000: the 95% intervals cover within 3 standard errors of 0.95 and
    the estimates' variance is the analytic one within 15%."""
    spec = privspec.load(HEAD + f"query m = estimate distribution(drug) from kuk3 by {method}\n")
    out = spec.simulate(n=1000, reps=600, seed=5)["m"].to_dict()["value"]
    assert abs(out["ci95_coverage"]["yes"] - 0.95) < 3 * math.sqrt(0.95 * 0.05 / 600)
    ratio = out["n_cov_empirical"]["data"][0][0] / out["n_cov_analytic"]["data"][0][0]
    assert 0.85 < ratio < 1.15


def test_privatize_draws_the_binomial_counts() -> None:
    spec = privspec.load(HEAD)
    raw = pd.DataFrame({"drug": ["yes"] * 20000 + ["no"] * 20000})
    out = spec.privatize(raw, "kuk3", seed=3)["drug"].astype(int).to_numpy()
    for half, p in ((out[:20000], P1), (out[20000:], P2)):
        freq = np.bincount(half, minlength=K + 1) / len(half)
        assert np.allclose(freq, scipy.stats.binom.pmf(np.arange(K + 1), K, p), atol=0.01)


def test_a_count_above_k_is_refused_naming_its_rows() -> None:
    frame = pd.DataFrame({"drug": ["0", "1", "5", "3", "2"]})
    failure = privspec.load(HEAD + "query m = estimate distribution(drug) from kuk3 by mle\n").run(
        {"kuk3": frame}).failures["m"]
    assert isinstance(failure, DataError)
    diag = failure.diagnostics[0]
    assert diag.code == "D010" and "'5' is not a report of this mechanism (0, 1, 2, 3)" in diag.message
    assert diag.rows == (3,)


@pytest.mark.parametrize("text, code, words", [
    ("mechanism m = kuk(race, p1 = 0.8, p2 = 0.2, k = 2)", "E405", "binary variable"),
    ("mechanism m = kuk(drug, p1 = 0.5, p2 = 1/2, k = 2)", "E305", "same red share"),
    ("mechanism m = kuk(drug, p1 = 0.8, p2 = 0.2, k = 0)", "E309", "at least 1"),
    ("mechanism m = kuk(drug, p1 = 1.5, p2 = 0.2, k = 2)", "E301", ""),
    ("mechanism both = product(kuk3, grr(race, epsilon = 1))\n"
     "query j = estimate joint(drug, race) from both by castell", "E501", "randomized-response factors"),
])
def test_the_checker_refuses_what_does_not_fit(text: str, code: str, words: str) -> None:
    diagnostics = privspec.load(HEAD + text + "\n").diagnostics
    assert [d.code for d in diagnostics if d.severity == "error"] == [code]
    assert words in diagnostics[0].message


def test_regression_and_products_read_kuk_through_its_channel() -> None:
    """A regression on one categorical covariate is saturated: its intercept is the log odds
    of the second category from the MLE of the first group's reports alone; a product with
    a Kuk factor is estimated on the joint table (the finite back end: the castell
    estimators need square matrices)."""
    rng = np.random.default_rng(9)
    raw = pd.DataFrame({"drug": np.where(rng.random(3000) < 0.3, "yes", "no"), "race": rng.choice(list("abc"), 3000)})
    spec = privspec.load(HEAD + "mechanism both = product(kuk3, grr(race, epsilon = 1))\n"
                                "query s = estimate distribution(drug) from kuk3 by mle\n"
                                "query r = estimate regression(drug ~ race) from kuk3 by mle(logistic)\n"
                                "query j = estimate joint(drug, race) from both by mle\n"
                                "query e = epsilon(both)\n")
    reports = spec.privatize(raw, "kuk3", seed=2, keep=["race"])
    res = spec.run({"kuk3": reports, "both": spec.privatize(raw, "both", seed=1)})
    j = reports.loc[reports["race"] == "a", "drug"].astype(int).to_numpy()
    f1, f2 = scipy.stats.binom.pmf(j, K, P1), scipy.stats.binom.pmf(j, K, P2)
    pi_a = scipy.optimize.minimize_scalar(lambda p: -np.log(p * f1 + (1 - p) * f2).sum(), bounds=(0, 1),
                                          method="bounded", options={"xatol": 1e-10}).x
    # a saturated model: the intercept is the log odds of "no" among race a
    assert res["r"].to_dict()["value"]["intercept"] == pytest.approx(math.log((1 - pi_a) / pi_a), abs=1e-5)
    assert 0.25 < res["s"].to_dict()["value"]["yes"] < 0.35
    joint = np.array(res["j"].to_dict()["value"]["data"])
    assert joint.sum() == pytest.approx(1) and joint[0].sum() == pytest.approx(0.3, abs=0.05)
    assert float(res["e"].value) == pytest.approx(1 + math.log(64))


def test_planning_sizes_a_survey_from_the_channels_avar() -> None:
    """sample_size of the share at max_se = 0.01 is the fewest n with avar / n <= 0.01^2."""
    res = privspec.load(HEAD + "query v = avar(distribution(drug) from kuk3 by mle)\n"
                               "query n = sample_size(distribution(drug) from kuk3, max_se = 0.01)\n").analyze()
    avar = res["v"].to_dict()["value"]["data"][0][0]
    assert res["n"].value == math.ceil(avar / 0.01 ** 2)


def test_a_huge_card_count_is_refused_at_once():
    """kuk(..., k = 1e308) in a compare block: the pricing counts Kuk's k + 1 reports without
    listing them (the fuzz found a check that listed them for ever); E701 names the call."""
    import time
    spec_text = ('spec "k"\nvariable drug: categorical {yes, no}\npopulation drug ~ categorical(0.3, 0.7)\n'
                 "compare c for distribution(drug) at n = 1000 {\n"
                 "    huge = kuk(drug, p1 = 0.8, p2 = 0.2, k = 1e308)\n"
                 "    one  = kuk(drug, p1 = 0.8, p2 = 0.2, k = 1)\n"
                 "} by avar_trace\n")
    start = time.process_time()
    codes = [d.code for d in privspec.load(spec_text).check()]
    assert "E701" in codes and time.process_time() - start < 2.0
