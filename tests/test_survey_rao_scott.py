"""The Rao-Scott second-order corrected independence test beside the adjusted Wald test of
a weighted, stratified, clustered sample (issue 37; svychisq's default statistic = "F").

Checked against svychisq's formulas written out here line by line (its model matrices in
R's column-major cell order, ``qr.resid``, ``Delta``, ``d0``, ``pf``), against the same
quadratic form in another basis of the interaction contrasts, in the pipeline (the
matrices it is given are the weighted joint's, and its design effects are near 1 without
weights or clusters, which they are not if the simple-random-sampling covariance lacked
the privatization's noise), and by its size in seeded cluster samples."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.linalg
import scipy.stats

import privspec
from privspec.backends.finite import rao_scott, weighted_independence

SPEC = """
spec "weighted independence, Rao-Scott"
variable drinks: categorical {none, "1-7", "8-14", "15+"}
variable smokes: categorical {no, yes}
mechanism drinks_q = subset(drinks, sizes {2: 1})
mechanism smoke_q  = grr(smokes, epsilon = 1)
mechanism both = product(drinks_q, smoke_q)
query ind = test independence(drinks, smokes) from both by pearson
query joint = estimate joint(drinks, smokes) from both by mom
"""
DRINKS = ("none", "1-7", "8-14", "15+")


def cluster_sample(spec: privspec.Spec, seed: int, clusters: int = 40, size: int = 20, dependence: float = 0.0
                   ) -> pd.DataFrame:
    """Clusters (schools) with their own shares of drinks and smokes (alike respondents), 4
    strata (regions), a weight per school; ``dependence`` raises the smokers' share among
    heavier drinkers.  Privatized by the spec's product mechanism."""
    rng = np.random.default_rng(seed)
    parts = []
    for c in range(clusters):
        d = rng.dirichlet(3 * np.array([0.35, 0.4, 0.15, 0.1]))
        s = rng.dirichlet(3 * np.array([0.7, 0.3]))
        drinks = rng.choice(4, size, p=d)
        smokes = rng.uniform(size=size) < np.clip(s[1] + dependence * (drinks >= 2), 0, 1)
        parts.append(pd.DataFrame({"drinks": np.array(DRINKS)[drinks], "smokes": np.where(smokes, "yes", "no"),
                                   "w": rng.choice([1.0, 2.0, 3.0]), "school": c, "region": c % 4}))
    frame = pd.concat(parts, ignore_index=True)
    return spec.privatize(frame, "both", seed=seed + 5, keep=["w", "school", "region"])


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    return privspec.load(SPEC)


def svychisq_f(table: np.ndarray, V: np.ndarray, N: float, design_df: float) -> dict:
    """svychisq(statistic = "F") as survey's R code computes it, the cells in R's order
    (``expand.grid(rows, cols)``: rows vary fastest) and ``V`` the design covariance of the
    cell shares in that order; ``diag(mean2)`` taken at the independence fit (see
    privspec.backends.finite.rao_scott)."""
    nr, nc = table.shape
    rows, cols = np.meshgrid(np.arange(nr), np.arange(nc), indexing="ij")
    rows, cols = rows.ravel(order="F"), cols.ravel(order="F")          # expand.grid order
    R = (rows[:, None] == np.arange(1, nr)).astype(float)              # factor(rows), treatment coding
    K = (cols[:, None] == np.arange(1, nc)).astype(float)
    X1 = np.column_stack([np.ones(nr * nc), R, K])                     # ~ factor(rows) + factor(cols)
    inter = np.column_stack([R[:, i] * K[:, j] for i in range(nr - 1) for j in range(nc - 1)])
    Q, _ = np.linalg.qr(X1)
    Cmat = inter - Q @ (Q.T @ inter)                                   # qr.resid(qr(X1), X12[, -(1:(nr+nc-1))])
    fit = np.outer(table.sum(1), table.sum(0)).ravel(order="F")
    iDmat = np.diag(1 / fit)
    denom = Cmat.T @ (iDmat / N) @ Cmat
    numr = Cmat.T @ iDmat @ V @ iDmat @ Cmat
    Delta = np.linalg.solve(denom, numr)
    d0 = np.trace(Delta) ** 2 / np.trace(Delta @ Delta)
    observed = N * table                                               # svytable(formula, design, Ntotal = N)
    expected = np.outer(observed.sum(1), observed.sum(0)) / N
    pearson = ((observed - expected) ** 2 / expected).sum()           # chisq.test(correct = FALSE)
    stat = pearson / np.trace(Delta)
    return {"statistic": stat, "ndf": d0, "ddf": d0 * design_df, "pearson": pearson,
            "p_value": scipy.stats.f.sf(stat, d0, d0 * design_df),
            "deffs": np.sort(np.linalg.eigvals(Delta).real)[::-1]}


def _r_order(p: int, q: int) -> np.ndarray:
    """Row-major cell index of each cell in R's column-major order."""
    return np.arange(p * q).reshape(p, q).ravel(order="F")


@pytest.mark.parametrize("shape", [(2, 2), (3, 4), (4, 2)])
def test_svychisq_line_by_line(shape):
    """With the multinomial covariance at the fit as S, the statistic is svychisq's:
    Pearson's X^2 of the table over tr(Delta), F(d0, d0 f)."""
    rng = np.random.default_rng(sum(shape))
    p, q = shape
    W = rng.dirichlet(np.full(p * q, 4.0)).reshape(p, q)
    N, f = 750.0, 35
    B = rng.normal(size=(p * q, p * q))
    V = (B @ B.T / (p * q) + np.eye(p * q)) * 1e-3                   # any design covariance
    E = np.outer(W.sum(1), W.sum(0)).ravel()
    S = (np.diag(E) - np.outer(E, E)) / N
    got = rao_scott.rao_scott_test(W, V, S, f)
    order = _r_order(p, q)
    ref = svychisq_f(W, V[np.ix_(order, order)], N, f)
    for key in ("statistic", "ndf", "ddf", "p_value", "pearson"):
        assert getattr(got, key) == pytest.approx(ref[key], rel=1e-9), key
    np.testing.assert_allclose(got.deffs, ref["deffs"], rtol=1e-9)
    assert got.mean_deff == pytest.approx(np.trace(np.diag(ref["deffs"])) / ((p - 1) * (q - 1)), rel=1e-9)


def test_any_srs_covariance_in_another_basis():
    """With a privatized estimator's S (any covariance), the statistic and the design
    effects are those of the interaction contrasts in any basis: here the null space of
    the main effects in the fit's metric, found by scipy rather than built."""
    rng = np.random.default_rng(7)
    p, q = 3, 3
    W = rng.dirichlet(np.full(9, 3.0)).reshape(p, q)
    B1, B2 = rng.normal(size=(9, 9)), rng.normal(size=(9, 9))
    V, S = B1 @ B1.T * 1e-3 + np.eye(9) * 1e-4, B2 @ B2.T * 1e-3 + np.eye(9) * 1e-4
    got = rao_scott.rao_scott_test(W, V, S, 20)
    E = np.outer(W.sum(1), W.sum(0)).ravel()
    rows, cols = np.divmod(np.arange(9), 3)
    X1 = np.column_stack([rows == i for i in range(3)] + [cols == j for j in range(3)]).astype(float)
    A = scipy.linalg.null_space((E[:, None] * X1).T).T                # a' diag(E) X1 = 0
    u = A @ (W.ravel() - E)
    SA, VA = A @ S @ A.T, A @ V @ A.T
    pearson = u @ np.linalg.solve(SA, u)
    delta = np.linalg.solve(SA, VA)
    tr, tr2 = np.trace(delta), np.trace(delta @ delta)
    assert got.pearson == pytest.approx(pearson, rel=1e-9)
    assert got.statistic == pytest.approx(pearson / tr, rel=1e-9)
    assert got.ndf == pytest.approx(tr ** 2 / tr2, rel=1e-9) and got.ddf == pytest.approx(20 * tr ** 2 / tr2)
    np.testing.assert_allclose(got.deffs, np.sort(np.linalg.eigvals(delta).real)[::-1], rtol=1e-9)


def test_no_test_where_a_margin_is_not_positive_or_s_is_singular():
    W = np.array([[0.5, 0.5], [0.02, -0.02]])
    assert rao_scott.rao_scott_test(W, np.eye(4), np.eye(4), 10) is None
    W = np.array([[0.3, 0.2], [0.1, 0.4]])
    assert rao_scott.rao_scott_test(W, np.eye(4), np.zeros((4, 4)), 10) is None
    assert rao_scott.rao_scott_test(W, np.eye(4), np.eye(4), 10) is not None


def test_the_pipeline_gives_it_the_weighted_joint(spec, monkeypatch):
    """The weighted test hands the Rao-Scott test the weighted MoM joint and its design
    covariance (the joint query's), and reports what it returns beside the adjusted Wald."""
    seen = {}
    real = weighted_independence.rao_scott_test

    def spy(W, V, S, df):
        seen.update(W=W, V=V, S=S, df=df)
        return real(W, V, S, df)

    monkeypatch.setattr(weighted_independence, "rao_scott_test", spy)
    frame = cluster_sample(spec, 3, dependence=0.2)
    res = spec.run(frame, ["ind", "joint"], weights="w", strata="region", cluster="school")
    joint = res["joint"]
    np.testing.assert_allclose(seen["W"].ravel(), np.asarray(joint.value.data, float).ravel(), rtol=1e-12)
    np.testing.assert_allclose(seen["V"], np.asarray(joint.cov_params(), float), rtol=1e-10, atol=1e-15)
    assert seen["df"] == 40 - 4
    rs = res["ind"].extras["rao_scott"]
    ref = real(seen["W"], seen["V"], seen["S"], 36)
    assert rs["statistic"] == ref.statistic and rs["p_value"] == ref.p_value and rs["ndf"] == ref.ndf
    assert "Rao-Scott" in rs["method"] and "rao_scott" in res["ind"].extras["note"]
    # the headline is still the adjusted Wald test
    assert "adjWald" in res["ind"].value.method


def test_replicate_weights_reach_it(spec):
    """JK1 replicate weights over the 40 schools: the design's degrees of freedom are the
    replicates less one, and the design effects come from the replicates' covariance,
    within 5% of the linearized one's."""
    frame = cluster_sample(spec, 2)
    for j in range(40):
        frame[f"rw{j:02d}"] = np.where(frame["school"] == j, 0.0, frame["w"] * 40 / 39)
    rep = spec.run(frame, ["ind"], weights="w", replicate_weights="rw*", replicate_type="jk1")["ind"]
    lin = spec.run(frame, ["ind"], weights="w", cluster="school")["ind"]
    a, b = rep.extras["rao_scott"], lin.extras["rao_scott"]
    assert a["ddf"] == pytest.approx(39 * a["ndf"], rel=1e-12) and b["ddf"] == pytest.approx(39 * b["ndf"], rel=1e-12)
    assert a["pearson"] == pytest.approx(b["pearson"], rel=1e-12)       # the same joint and S
    assert a["mean_deff"] == pytest.approx(b["mean_deff"], rel=0.05)   # measured 1.003 and 0.991


def test_design_effects_near_one_without_a_design(spec):
    """Equal weights and no clusters: the design-based covariance is the unweighted
    estimator's, privatization noise and all, so every generalized design effect is near 1
    (measured 0.97-1.02 at n = 3,000; against the multinomial covariance, without the
    noise of grr at epsilon = 1 and the subset design, they are 10-29)."""
    frame = cluster_sample(spec, 4, clusters=150, size=20)
    frame["w"] = 1.0
    frame["id"] = np.arange(len(frame))
    rs = spec.run(frame, ["ind"], weights="w", cluster="id")["ind"].extras["rao_scott"]
    assert all(0.8 <= x <= 1.2 for x in rs["deffs"]), rs["deffs"]


@pytest.mark.slow
def test_size_in_cluster_samples(spec):
    """400 seeded cluster samples (40 schools in 4 regions, alike respondents within a
    school, weights 1-3) under independence: the Rao-Scott test rejects at 5% within 3
    standard errors of 0.05 (measured 0.038; the adjusted Wald test 0.043 on the same
    samples, and 0.060 and 0.0825 on tests/test_survey_weights_independence.py's seeds
    100-499).  A sample whose MoM estimate of a margin is not positive has no Pearson
    statistic and no Rao-Scott test (1 of the 400, seed 1146): such samples are left out,
    and they must stay rare."""
    found = [spec.run(cluster_sample(spec, 1000 + s), ["ind"], weights="w", strata="region",
                      cluster="school")["ind"].extras.get("rao_scott") for s in range(400)]
    tests = [r for r in found if r is not None]
    assert len(tests) >= 396, len(tests)
    reject = np.mean([r["p_value"] < 0.05 for r in tests])
    se = np.sqrt(0.05 * 0.95 / len(tests))
    assert abs(reject - 0.05) <= 3 * se, reject
