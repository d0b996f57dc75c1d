"""A regression with a randomized-response predictor (rr's rrreg.predictor) with survey
weights, strata and clusters (issue 37): the weighted pseudo-likelihood's coefficients
and their linearized covariance, checked against the survey package's formulas written
here row by row (a general optimizer on the per-row likelihood, numerical derivatives, the
stratified PSU variance), against duplicated rows for integer weights, against JK1
replicate weights, and by a seeded coverage simulation under a cluster sample.  (On main
B040 refused it.)"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.optimize

import privspec
from privspec.backends.finite.regression_predictor import PredictorData, fit_grouped

SPEC = """
spec "weighted predictor"
variable y: categorical {no, yes}
variable z: categorical {no, yes}
variable x: continuous
mechanism warner = rr(z, matrix [[4/5, 1/5], [1/5, 4/5]])
query pred = estimate regression(y ~ x + z) from warner by mle(logistic)
"""
K = np.array([[0.8, 0.2], [0.2, 0.8]])          # K[report, z]
GAMMA, BETA = np.array([-0.3, 0.8]), np.array([-0.5, 0.7, 1.0])


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    s = privspec.load(SPEC)
    assert s.ok, s.render_diagnostics()
    return s


def draw(rng: np.random.Generator, clusters: int, size: int) -> pd.DataFrame:
    """Clusters shift the covariate and both log odds (the item's and the outcome's); the item
    is reported through Warner's design; a weight per cluster; 4 strata."""
    school = np.repeat(np.arange(clusters), size)
    x = (rng.normal(size=school.size) + rng.normal(size=clusters)[school]).round(2)
    z = rng.uniform(size=x.size) < 1 / (1 + np.exp(-(GAMMA[0] + GAMMA[1] * x + rng.normal(0, 1, clusters)[school])))
    eta = BETA[0] + BETA[1] * x + BETA[2] * z + rng.normal(0, 1, clusters)[school]
    y = rng.uniform(size=x.size) < 1 / (1 + np.exp(-eta))
    report = np.where(rng.uniform(size=x.size) < 0.8, z, ~z)
    w = rng.choice([1.0, 2.0, 4.0], clusters)[school]
    return pd.DataFrame({"y": np.where(y, "yes", "no"), "x": x, "z": np.where(report, "yes", "no"), "w": w,
                         "school": school, "region": school % 4})


def row_loglik(frame: pd.DataFrame):
    """Each row's log likelihood ``log sum_z P(z | x) K[r, z] P(y | x, z)`` as a function of
    (gamma_0, gamma_1, beta_0, beta_1, beta_2), written per row with a loop over z."""
    x = frame["x"].to_numpy(float)
    y = (frame["y"] == "yes").to_numpy()
    r = (frame["z"] == "yes").to_numpy().astype(int)

    def logq(t):
        pz1 = 1 / (1 + np.exp(-(t[0] + t[1] * x)))
        total = np.zeros(len(x))
        for z, pz in ((0, 1 - pz1), (1, pz1)):
            py1 = 1 / (1 + np.exp(-(t[2] + t[3] * x + t[4] * z)))
            total += pz * K[r, z] * np.where(y, py1, 1 - py1)
        return np.log(total)

    return logq


def survey_reference(frame: pd.DataFrame, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pseudo-MLE and its linearized covariance, row by row: BFGS on the weighted mean
    log likelihood; the per-row scores and the weighted information by central differences;
    influence H^-1 u_i; PSU totals within strata; sum_h n_h / (n_h - 1) sum_c (z_hc - zbar_h)^2."""
    logq = row_loglik(frame)
    t = scipy.optimize.minimize(lambda t: -w @ logq(t) / w.sum(), np.zeros(5), method="BFGS",
                                options={"gtol": 1e-11}).x
    h, E = 1e-5, np.eye(5) * 1e-5
    U = np.column_stack([(logq(t + e) - logq(t - e)) / (2 * h) for e in E])
    H = -np.array([[w @ (logq(t + a + b) - logq(t + a - b) - logq(t - a + b) + logq(t - a - b)) / (4 * h * h)
                    for b in E] for a in E])
    psi = U @ np.linalg.inv(H).T
    stratum, psu = frame["region"].to_numpy(), frame["school"].to_numpy()
    V = np.zeros((5, 5))
    for s in np.unique(stratum):
        zt = np.array([(w[:, None] * psi)[(stratum == s) & (psu == c)].sum(axis=0)
                       for c in np.unique(psu[stratum == s])])
        d = zt - zt.mean(axis=0)
        V += len(zt) / (len(zt) - 1) * d.T @ d
    return t, V


def test_coefficients_and_covariance_are_the_survey_formulas_row_by_row(spec):
    frame = draw(np.random.default_rng(1), 40, 25)
    got = spec.run(frame, weights="w", strata="region", cluster="school")["pred"]
    t, V = survey_reference(frame, frame["w"].to_numpy(float))
    assert np.asarray(got.value.values, float) == pytest.approx(t[2:], abs=1e-6)
    se = np.sqrt(np.diag(V))
    assert np.asarray(got.extras["se"].values, float) == pytest.approx(se[2:], rel=1e-4)
    item = got.extras["item_model"]
    assert list(item["coefficients"].values()) == pytest.approx(t[:2], abs=1e-6)
    assert list(item["se"].values()) == pytest.approx(se[:2], rel=1e-4)
    assert got.extras["se_kind"] == "design-based (Taylor linearization)"
    assert got.extras["psus"] == 40 and got.extras["strata"] == 4
    assert got.extras["weighted_n"] == pytest.approx(frame["w"].sum()) and got.extras["n"] == len(frame)
    assert got.extras["wald_test"]["df"] == 2 and "lr_test" not in got.extras
    assert np.all(np.asarray(got.extras["deff"].values, float) > 1)        # clustered: above SRS
    assert "clusters school" in got.extras["design"]


def test_integer_weights_are_duplicated_rows(spec):
    frame = draw(np.random.default_rng(2), 30, 20)
    weighted = spec.run(frame, weights="w")["pred"]
    copies = frame.loc[frame.index.repeat(frame["w"].astype(int))].reset_index(drop=True)
    plain = spec.run(copies[["y", "x", "z"]])["pred"]
    assert np.asarray(weighted.value.values, float) == pytest.approx(np.asarray(plain.value.values, float), abs=1e-5)
    # each row its own PSU: the linearized variance of the weighted fit is not the duplicated
    # rows' model variance, but the estimates are the same maximum
    assert weighted.extras["weighted_n"] == len(copies)


def test_equal_weights_without_a_design_are_the_sandwich(spec):
    """Weights 1, each row its own PSU, one stratum: the linearized covariance is the robust
    sandwich H^-1 (n / (n - 1) sum (u - ubar)(u - ubar)') H^-1, near the model's H^-1."""
    frame = draw(np.random.default_rng(3), 40, 25)
    frame["one"] = 1.0
    weighted, plain = spec.run(frame, weights="one")["pred"], spec.run(frame[["y", "x", "z"]])["pred"]
    assert np.asarray(weighted.value.values, float) == pytest.approx(np.asarray(plain.value.values, float), abs=1e-6)
    t, V = survey_reference(frame.assign(region=0, school=np.arange(len(frame))), np.ones(len(frame)))
    assert np.asarray(weighted.extras["se"].values, float) == pytest.approx(np.sqrt(np.diag(V))[2:], rel=1e-4)
    assert np.asarray(weighted.extras["se"].values, float) == pytest.approx(
        np.asarray(plain.extras["se"].values, float), rel=0.25)


def test_jk1_replicate_weights_refit_every_coefficient(spec):
    """JK1 replicate columns, one per deleted cluster (one stratum), refitted: their variance
    is the jackknife's, computed here from the same fit on the replicates' weights."""
    frame = draw(np.random.default_rng(4), 12, 30)
    C = 12
    for j in range(C):
        frame[f"rw{j:02d}"] = np.where(frame["school"] == j, 0.0, frame["w"] * C / (C - 1))
    got = spec.run(frame, weights="w", replicate_weights="rw*", replicate_type="jk1")["pred"]
    full = survey_reference(frame, frame["w"].to_numpy(float))[0]
    reps = np.array([survey_reference(frame, frame[f"rw{j:02d}"].to_numpy(float))[0] for j in range(C)])
    se = np.sqrt((C - 1) / C * ((reps - full) ** 2).sum(axis=0))
    assert np.asarray(got.extras["se"].values, float) == pytest.approx(se[2:], rel=1e-4)
    assert got.extras["replicates"] == C and got.extras["se_kind"] == "design-based (replicate weights, jk1)"


def test_the_back_end_has_a_weighted_version(spec):
    from privspec.backends.finite.backend import FiniteBackend
    assert FiniteBackend().weighted(spec.model.queries["pred"]) == ""


def census_values(rng: np.random.Generator) -> np.ndarray:
    """What the pseudo-MLE estimates under the cluster effects: the fit on a census of
    500,000 rows drawn the same way (grouped by distinct tuple)."""
    frame = draw(rng, 20_000, 25)
    frame["x"] = frame["x"].round(1)
    keys = ["y", "x", "z"]
    grouped = frame.groupby(keys).size().reset_index(name="n")
    x = grouped["x"].to_numpy(float)
    Xo = np.column_stack([np.ones(len(x)), x])
    W = np.stack([np.column_stack([Xo, np.full(len(x), float(z))]) for z in (0, 1)])
    data = PredictorData(Xo, W, (grouped["y"] == "yes").to_numpy().astype(int),
                         K[(grouped["z"] == "yes").to_numpy().astype(int)], 2)
    return fit_grouped(data, grouped["n"].to_numpy(float)).theta


@pytest.mark.slow
def test_design_intervals_cover_under_a_cluster_sample(spec):
    """200 seeded stratified cluster samples (60 clusters of 25): the design-based 95%
    intervals of the outcome's slopes (x and the randomized item z) cover the census
    values within 3 binomial standard errors (0.0154) of 0.95."""
    truth = census_values(np.random.default_rng(99))[3:]
    hits = []
    for seed in range(200):
        frame = draw(np.random.default_rng(1000 + seed), 60, 25)
        ci = spec.run(frame, weights="w", strata="region", cluster="school")["pred"].extras["ci95"]
        hits.append([ci[lab][0] <= v <= ci[lab][1] for lab, v in zip(list(ci)[1:], truth)])
    rate = np.mean(hits, axis=0)
    assert np.all(np.abs(rate - 0.95) <= 3 * np.sqrt(0.95 * 0.05 / 200)), rate
