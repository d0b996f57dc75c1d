"""A regression on a randomized response with survey weights, strata and clusters (issue 37):
the weighted pseudo-likelihood's coefficients and their linearized covariance, checked
against the survey package's formulas written here row by row (a general optimizer and
numerical derivatives), against JK1 replicate weights, and by a seeded coverage simulation
under a cluster sample.  (All of it fails on main: there B040 refuses a weighted regression.)"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.optimize

import privspec

SPEC = """
spec "weighted regression"
variable y: categorical {no, yes}
variable age: continuous
mechanism m = rr(y, matrix [[0.8, 0.2], [0.2, 0.8]])
query reg = estimate regression(y ~ age) from m by mle(logistic)
"""
P = np.array([[0.8, 0.2], [0.2, 0.8]])


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    return privspec.load(SPEC)


def cluster_sample(spec: privspec.Spec, seed: int, clusters: int = 40, size: int = 25, slope: float = 1.0
                   ) -> pd.DataFrame:
    """4 strata of clustered respondents: a cluster shifts the covariate and the log odds."""
    rng = np.random.default_rng(seed)
    school = np.repeat(np.arange(clusters), size)
    age = rng.normal(size=school.size) + 1.5 * rng.normal(size=clusters)[school]
    eta = -0.5 + slope * age + rng.normal(0, 1.5, clusters)[school]
    y = np.where(rng.uniform(size=school.size) < 1 / (1 + np.exp(-eta)), "yes", "no")
    w = rng.choice([1.0, 2.0, 4.0], clusters)[school]
    frame = pd.DataFrame({"y": y, "age": age, "w": w, "school": school, "region": school % 4})
    return spec.privatize(frame, "m", seed=seed + 7, keep=["age", "w", "school", "region"])


def survey_reference(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """svyglm's pseudo-MLE and linearized covariance, row by row: maximize sum w log q_i(b),
    q_i = sum_y P[y, o_i] pi_y(x_i); influence H^-1 u_i from numerical derivatives; PSU totals
    within strata; sum_h n_h / (n_h - 1) sum_c (z_hc - zbar_h)^2."""
    X = np.column_stack([np.ones(len(frame)), frame["age"].to_numpy(float)])
    o = (frame["y"] == "yes").to_numpy().astype(int)
    w = frame["w"].to_numpy(float)

    def logq(b):
        p1 = 1 / (1 + np.exp(-(X @ b)))
        return np.log(P[0, o] * (1 - p1) + P[1, o] * p1)

    b = scipy.optimize.minimize(lambda b: -w @ logq(b) / w.sum(), np.zeros(2), method="BFGS",
                                options={"gtol": 1e-12}).x
    h = 1e-5
    U = np.column_stack([(logq(b + e) - logq(b - e)) / (2 * h) for e in np.eye(2) * h])
    H = -np.array([[w @ (logq(b + e1 + e2) - logq(b + e1 - e2) - logq(b - e1 + e2) + logq(b - e1 - e2)) / (4 * h * h)
                    for e2 in np.eye(2) * h] for e1 in np.eye(2) * h])
    psi = U @ np.linalg.inv(H).T
    stratum, psu = frame["region"].to_numpy(), frame["school"].to_numpy()
    V = np.zeros((2, 2))
    for s in np.unique(stratum):
        z = np.array([(w[:, None] * psi)[(stratum == s) & (psu == c)].sum(axis=0) for c in np.unique(psu[stratum == s])])
        d = z - z.mean(axis=0)
        V += len(z) / (len(z) - 1) * d.T @ d
    return b, V


def test_coefficients_and_covariance_are_svyglm_s_row_by_row(spec):
    frame = cluster_sample(spec, 1)
    got = spec.run(frame, weights="w", strata="region", cluster="school")["reg"]
    b, V = survey_reference(frame)
    assert np.asarray(got.value.values, float) == pytest.approx(b, abs=1e-6)
    assert np.asarray(got.extras["se"].values, float) == pytest.approx(np.sqrt(np.diag(V)), rel=1e-4)
    assert got.extras["se_kind"] == "design-based (Taylor linearization)"
    assert got.extras["psus"] == 40 and got.extras["strata"] == 4
    assert got.extras["wald_test"]["df"] == 1 and got.extras["wald_test"]["p_value"] < 1e-4
    assert np.all(np.asarray(got.extras["deff"].values, float) > 1)        # clustered: variance above SRS
    lo, hi = got.extras["ci95"]["age"]
    assert lo < got.value.values[1] < hi


def test_equal_weights_give_the_unweighted_coefficients(spec):
    frame = cluster_sample(spec, 2).assign(one=1.0)
    assert np.allclose(np.asarray(spec.run(frame, weights="one")["reg"].value.values, float),
                       np.asarray(spec.run(frame)["reg"].value.values, float), atol=1e-9)


def test_jk1_replicates_agree_with_linearization(spec):
    frame = cluster_sample(spec, 3)
    C = 40
    for j in range(C):
        frame[f"rw{j:02d}"] = np.where(frame["school"] == j, 0.0, frame["w"] * C / (C - 1))
    lin = spec.run(frame, weights="w", cluster="school")["reg"]
    rep = spec.run(frame, weights="w", replicate_weights="rw*", replicate_type="jk1")["reg"]
    assert np.allclose(np.asarray(rep.value.values, float), np.asarray(lin.value.values, float), atol=1e-12)
    ratio = np.asarray(rep.extras["se"].values, float) / np.asarray(lin.extras["se"].values, float)
    assert np.all(np.abs(ratio - 1) < 0.1), ratio
    assert rep.extras["replicates"] == C


def test_a_randomized_response_predictor_has_its_weighted_version_too():
    """(tests/test_survey_weights_predictor.py checks it.)"""
    both = privspec.load(SPEC + "variable z: categorical {a, b}\n"
                                "query pred = estimate regression(z ~ y) from m by mle(logistic)\n")
    frame = cluster_sample(both, 4)
    frame["z"] = np.where(frame["age"] > 0, "a", "b")
    res = both.run(frame, ["pred"], weights="w", cluster="school")
    assert "pred" in res and res["pred"].extras["se_kind"] == "design-based (Taylor linearization)"


def marginal_slope(slope: float = 1.0, clusters: int = 16000, size: int = 25) -> float:
    """What the pseudo-MLE estimates: the slope of the logistic fit of Y on the covariate over
    the whole population (the cluster's shift of the log odds attenuates it from the
    conditional ``slope``), by IRLS on 400,000 rows drawn from the same model (its Monte
    Carlo error is small beside a sample's standard error)."""
    rng = np.random.default_rng(99)
    school = np.repeat(np.arange(clusters), size)
    age = rng.normal(size=school.size) + 1.5 * rng.normal(size=clusters)[school]
    eta = -0.5 + slope * age + rng.normal(0, 1.5, clusters)[school]
    y = (rng.uniform(size=school.size) < 1 / (1 + np.exp(-eta))).astype(float)
    X, b = np.column_stack([np.ones(school.size), age]), np.zeros(2)
    for _ in range(25):
        p = 1 / (1 + np.exp(-(X @ b)))
        b = b + np.linalg.solve((X * (p * (1 - p))[:, None]).T @ X, X.T @ (y - p))
    return float(b[1])


@pytest.mark.slow
def test_design_intervals_cover_under_a_cluster_sample(spec):
    """200 seeded cluster samples: the design-based interval of the slope covers the
    population's (marginal) slope near 95%; the model-based one, blind to the clusters, less
    (measured: 0.92 and 0.845: linearization over 40 PSUs runs a little under 95%, as
    svyglm's Wald intervals do with few PSUs)."""
    truth = marginal_slope()
    design, model = [], []
    for seed in range(200):
        frame = cluster_sample(spec, 100 + seed, slope=1.0)
        frame["one"] = 1.0
        d = spec.run(frame, weights="one", strata="region", cluster="school")["reg"].extras["ci95"]["age"]
        m = spec.run(frame)["reg"].extras["ci95"]["age"]
        design.append(d[0] <= truth <= d[1])
        model.append(m[0] <= truth <= m[1])
    assert 0.90 <= np.mean(design) <= 0.99, np.mean(design)
    assert np.mean(model) < np.mean(design) - 0.05, (np.mean(model), np.mean(design))
