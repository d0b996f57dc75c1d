"""Planning the logistic regression on a two-group design's reports (issue 37): the
expected information of (b, phi) against the observed information of the fit's own
likelihood at the expected counts, the avar against the variance of seeded fits, the
sample size and power read from it, and compare ranking two-group designs for a
regression."""
from __future__ import annotations

import numpy as np
import pytest

import privspec
from privspec.backends.finite.regression_planning import covariate_grid
from privspec.backends.rr.two_group_regression import channel_parts, fit_two_group, joint_derivatives
from privspec.backends.rr.two_group_regression_planning import expected_information

HEAD = """variable y: categorical {yes, no}
variable g: categorical {first, second}
variable u: categorical {yes, no}
variable x: continuous
variable s: categorical {a, b, c}
population x ~ normal(0.5, 1)
population s ~ categorical(0.2, 0.3, 0.5)
population y ~ categorical(0.3, 0.7, cheaters = 0.1, honesty = 0.8)
population g ~ categorical(0.4, 0.6)
population u ~ categorical(0.35, 0.65)
mechanism c = cdm(y, p1 = 0.3, p2 = 0.7, group = g)
mechanism d = sld(y, p1 = 0.3, p2 = 0.7, group = g)
mechanism q = uqm(y, p1 = 0.3, p2 = 0.7, group = g, unrelated = u)
"""
BINARY = "regression(y ~ x + s, coefficients = {intercept: 0.5, x: -0.6, s: {b: 0.3, c: -0.2}})"
PHI = {"cdm": 0.1, "sld": 0.8, "uqm": 0.35}
P, W = np.array([0.3, 0.7]), np.array([0.4, 0.6])


@pytest.mark.parametrize("kind", ["cdm", "sld", "uqm"])
def test_the_expected_information_is_the_fits_observed_information_at_the_expected_counts(kind: str) -> None:
    """At counts equal to their expectation (every covariate point, group and report with
    its probability) the score's second term vanishes, so minus the Hessian of the fit's
    log likelihood (:func:`joint_derivatives`, through the finite regression's) is the
    expected information."""
    spec = privspec.load(HEAD)
    model = spec.model
    X, w, _ = covariate_grid(model, [model.variables["x"], model.variables["s"]])
    coef = np.array([[0.5], [-0.6], [0.3], [-0.2]])
    info = expected_information(kind, P, W, X, w, coef, PHI[kind])
    rows, K0s, K1s, counts = [], [], [], []
    s = 1 / (1 + np.exp(X @ coef[:, 0]))
    for pg, wg in zip(P, W):
        for report in (0, 1):
            K0, K1 = channel_parts(kind, np.full(len(X), pg), np.full(len(X), report))
            K = K0 + PHI[kind] * K1
            rows.append(X), K0s.append(K0), K1s.append(K1)
            counts.append(wg * w * (K[:, 0] * s + K[:, 1] * (1 - s)))
    _, _, H = joint_derivatives(np.vstack(rows), np.vstack(K0s), np.vstack(K1s), np.concatenate(counts), coef,
                                PHI[kind])
    assert np.allclose(-H, info, rtol=1e-10, atol=1e-14)


def test_avar_sample_size_and_power_read_the_same_covariance() -> None:
    res = privspec.load(HEAD + f"query v = avar({BINARY} from c by mle)\n"
                               f"query n = sample_size({BINARY} from c, max_se = 0.1)\n"
                               f"query p = power({BINARY} from c, n = 2000, test = coefficient(x, 0))\n").analyze()
    V = np.array(res["v"].value.data, dtype=float)
    assert list(res["v"].value.rows) == ["intercept", "x", "s=b", "s=c"]
    assert res["n"].value == int(np.ceil(np.max(np.diag(V)) / 0.01))
    z = np.sqrt(2000) * 0.6 / np.sqrt(V[1, 1])
    import scipy.stats
    assert res["p"].value == pytest.approx(scipy.stats.norm.cdf(z - 1.959964) + scipy.stats.norm.cdf(-z - 1.959964))
    assert any("gamma = 0.1" in p for p in res["v"].to_dict()["parameters"])


@pytest.mark.slow
@pytest.mark.parametrize("kind, mech", [("cdm", "c"), ("sld", "d")])
def test_avar_matches_the_variance_of_seeded_fits(kind: str, mech: str) -> None:
    """n Var of the coefficients over 300 seeded fits at n = 3000 (a categorical covariate
    of three values) against avar: the sample variance's relative standard error is
    sqrt(2 / 299) = 8%, so within 30%."""
    est = "regression(y ~ s, coefficients = {intercept: 0.5, s: {b: 0.3, c: -0.7}})"
    V = np.array(privspec.load(HEAD + f"query v = avar({est} from {mech} by mle)\n").analyze()["v"].value.data,
                 dtype=float)
    rng = np.random.default_rng(5)
    beta, n = np.array([0.5, 0.3, -0.7]), 3000
    fits = []
    for _ in range(300):
        code = rng.choice(3, size=n, p=[0.2, 0.3, 0.5])
        g = (rng.random(n) < W[1]).astype(int)
        X = np.column_stack([np.ones(n), code == 1, code == 2]).astype(float)
        K0, K1 = channel_parts(kind, P[g], np.zeros(n, dtype=int))
        K = K0 + PHI[kind] * K1
        sh = 1 / (1 + np.exp(X @ beta))
        no = rng.random(n) >= K[:, 0] * sh + K[:, 1] * (1 - sh)
        keys, counts = np.unique(np.column_stack([g, code, no]), axis=0, return_counts=True)
        Xk = np.column_stack([np.ones(len(keys)), keys[:, 1] == 1, keys[:, 1] == 2]).astype(float)
        K0k, K1k = channel_parts(kind, P[keys[:, 0]], keys[:, 2])
        fits.append(fit_two_group(Xk, K0k, K1k, counts.astype(float)).coef[:, 0])
    ratio = n * np.array(fits).var(axis=0, ddof=1) / np.diag(V)
    assert np.all(np.abs(ratio - 1) < 0.3), ratio


def test_compare_ranks_two_group_designs_for_a_regression() -> None:
    """The groups' probabilities farther apart (0.1, 0.9) tell the cheaters from the
    carriers better than (0.3, 0.7): a smaller max_se; Warner's design (no cheaters
    modelled) beside them, epsilon inf for the two-group designs."""
    spec = privspec.load(HEAD + f"""
compare k for {BINARY} at n = 2000, test = coefficient(x, 0) {{
  near = cdm(y, p1 = 0.3, p2 = 0.7, group = g)
  far = cdm(y, p1 = 0.1, p2 = 0.9, group = g)
}} by max_se, power, epsilon
""")
    table = spec.compare(reps=0)["k"].to_frame()
    assert table.loc["far", "max_se"] < table.loc["near", "max_se"]
    assert table.loc["far", "power"] > table.loc["near", "power"]
