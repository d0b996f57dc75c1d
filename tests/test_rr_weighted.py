"""Survey weights for the randomized-response back end's own joint estimators (issue 37):
castell (``mom``), RR-Independent, RR-Clusters, hybrid, truncated, RR-Joint on a combined
domain and projected estimates, each the Hajek version of its estimator with a design-based
covariance.  Checked against the Hajek shares and the survey package's stratified
with-replacement PSU variance written here row by row, integer weights against duplicated
rows, JK1 replicate weights against linearization, and by a seeded coverage simulation
under a cluster sample."""
from __future__ import annotations

import itertools
import time

import numpy as np
import pandas as pd
import pytest

import privspec
from survey_reference import svy_covariance

LABELS = {"a": ("a0", "a1", "a2"), "b": ("b0", "b1"), "c": ("c0", "c1")}
EPS = {"a": 1.5, "b": 1.0, "c": 1.0}
#: the population joint of (a, b, c), row-major: a and b dependent, c independent of both
AB = np.array([[0.30, 0.10], [0.20, 0.15], [0.05, 0.20]])
TRUTH = np.multiply.outer(AB, np.array([0.6, 0.4]))

SPEC = f"""
spec "weighted rr joints"
variable a: categorical {{a0, a1, a2}}
variable b: categorical {{b0, b1}}
variable c: categorical {{c0, c1}}
population (a, b) ~ counts [[30, 10], [20, 15], [5, 20]]
population c ~ categorical(0.6, 0.4)
mechanism m = product(grr(a, epsilon = 1.5), grr(b, epsilon = 1), grr(c, epsilon = 1))
mechanism whole = grr(a * b * c, epsilon = 2)
query cas = estimate joint(a, b) from m by castell
query mom = estimate joint(a, b) from m by mom
query ind = estimate joint(a, b) from m by independent
query clu = estimate joint(a, b, c) from m by clusters(v = 0.15)
query hyb = estimate joint(a, b) from m by hybrid
query hyb_cas = estimate joint(a, b) from m by hybrid(switch = thresholds)
query tru = estimate joint(a, b) from m by truncated
query proj = estimate joint(a, b) from m by castell(project = euclidean)
query marg = estimate distribution(a) from m by mom(project = clip)
query rrj = estimate joint(a, b) from whole by joint
query rrm = estimate distribution(a) from whole by mom(project = clip)
query cond = estimate joint(a, b) from m by castell(se = conditional)
query mle = estimate joint(a, b) from m by mle
query mle_w = estimate joint(a, b) from whole by em
query mle_all = estimate joint(a, b, c) from whole by mle
"""
QUERIES = ["cas", "mom", "ind", "clu", "hyb", "hyb_cas", "tru", "proj", "marg", "rrj", "rrm"]
MLE = ["mle", "mle_w", "mle_all"]


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    return privspec.load(SPEC)


def arr(value) -> np.ndarray:
    """A result's Vector or Table as numbers (a table row-major)."""
    data = getattr(value, "data", None)
    return np.asarray(data if data is not None else value.values, dtype=float).reshape(-1)


def clustered_sample(spec: privspec.Spec, seed: int, strata: int = 2, clusters: int = 10, size: int = 25,
                     concentration: float = 6.0) -> dict[str, pd.DataFrame]:
    """A stratified cluster sample: each cluster its own (a, b, c) shares, a Dirichlet around
    the population (respondents of a cluster are alike), a weight per cluster; the reports
    of the product ``m`` and of the combined ``whole``, each with the design's columns."""
    rng = np.random.default_rng(seed)
    cells = list(itertools.product(*LABELS.values()))
    parts = []
    for h in range(strata):
        for c in range(clusters):
            share = rng.dirichlet(concentration * TRUTH.reshape(-1))
            drawn = [cells[k] for k in rng.choice(len(cells), size, p=share)]
            parts.append(pd.DataFrame(drawn, columns=list(LABELS)).assign(
                weight=rng.uniform(0.5, 3.0) * (1 + h), region=f"R{h}", school=f"S{c}"))
    raw = pd.concat(parts, ignore_index=True)
    design = raw[["weight", "region", "school"]]
    return {"m": pd.concat([spec.privatize(raw[list(LABELS)], "m", seed=seed), design], axis=1),
            "whole": pd.concat([spec.privatize(raw[list(LABELS)], "whole", seed=seed + 1), design], axis=1)}


# ---- the Hajek shares and the survey package's variance, row by row --------------------------------------
def grr_inverse(eps: float, k: int) -> np.ndarray:
    keep = np.exp(eps) / (np.exp(eps) + k - 1)
    return np.linalg.inv(np.where(np.eye(k, dtype=bool), keep, (1 - keep) / (k - 1)))


def design_of(df: pd.DataFrame, strata: bool, cluster: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    w = df["weight"].to_numpy(float)
    h = df["region"].to_numpy() if strata else np.zeros(len(df))
    c = df["school"].to_numpy() if cluster else np.arange(len(df))
    return w, h, c


def report_index(df: pd.DataFrame, names: list[str]) -> np.ndarray:
    """Each row's report of the named attributes, as its index per attribute (rows x w)."""
    return np.column_stack([[LABELS[v].index(x) for x in df[v]] for v in names])


def hajek_blocks(df: pd.DataFrame, names: list[str], blocks: list[list[str]], design: tuple
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The product over blocks of the castell estimates of the blocks' weighted report shares
    (one block of all: castell; singletons: RR-Independent) and its linearized covariance:
    a row reporting ``y`` has the influence ``sum_g (A_g[x_g, y_g] - B_g(x_g)) prod_{h != g}
    B_h(x_h) / N_hat`` in cell ``x``, one row at a time."""
    w, h, c = design
    y = report_index(df, names)
    total = w.sum()
    cells = list(itertools.product(*(range(len(LABELS[v])) for v in names)))
    A, B, cols = [], [], []
    for g in blocks:
        j = [names.index(v) for v in g]
        shape = tuple(len(LABELS[v]) for v in g)
        Ag = np.ones((1, 1))
        for v in g:
            Ag = np.kron(Ag, grr_inverse(EPS[v], len(LABELS[v])))
        rows = np.ravel_multi_index(tuple(y[:, i] for i in j), shape)
        lam = np.bincount(rows, weights=w, minlength=Ag.shape[0]) / total
        A.append(Ag)
        B.append(Ag @ lam)
        cols.append((j, shape, rows))
    est = np.array([np.prod([B[g][np.ravel_multi_index(tuple(x[i] for i in j), shape)]
                             for g, (j, shape, _) in enumerate(cols)]) for x in cells])
    z = np.zeros((len(df), len(cells)))
    for k, x in enumerate(cells):
        at = [np.ravel_multi_index(tuple(x[i] for i in j), shape) for j, shape, _ in cols]
        for g, (_, _, rows) in enumerate(cols):
            others = np.prod([B[o][at[o]] for o in range(len(cols)) if o != g])
            z[:, k] += (A[g][at[g], rows] - B[g][at[g]]) * others / total
    return est, svy_covariance(z, w, h, c)


def hajek_rr_joint(df: pd.DataFrame, keep: list[str], design: tuple) -> tuple[np.ndarray, np.ndarray]:
    """RR-Joint on the combined domain of (a, b, c), summed to ``keep``: ``S K^-1 lambda_hat``
    and its linearized covariance, a row reporting ``y`` having ``S (K^-1[:, y] - K^-1
    lambda_hat) / N_hat``."""
    w, h, c = design
    labels = [".".join(t) for t in itertools.product(*LABELS.values())]
    y = np.array([labels.index(r) for r in df["a*b*c"]])
    Kinv = grr_inverse(2.0, len(labels))
    total = w.sum()
    lam = np.bincount(y, weights=w, minlength=len(labels)) / total
    full = list(itertools.product(*(range(len(v)) for v in LABELS.values())))
    kept = list(itertools.product(*(range(len(LABELS[v])) for v in keep)))
    at = [list(LABELS).index(v) for v in keep]
    S = np.array([[float(tuple(f[i] for i in at) == k) for f in full] for k in kept])
    z = (S @ (Kinv[:, y] - (Kinv @ lam)[:, None])).T / total
    return S @ Kinv @ lam, svy_covariance(z, w, h, c)


DESIGNS = [(False, False), (True, False), (False, True), (True, True)]


@pytest.mark.parametrize("strata,cluster", DESIGNS)
def test_every_estimator_matches_the_survey_formulas_row_by_row(spec, strata, cluster):
    data = clustered_sample(spec, seed=28)      # a sample whose projections do not bind, with two clusters
    res = spec.run(data, queries=QUERIES + MLE, weights="weight", strata="region" if strata else None,
                   cluster="school" if cluster else None, engine="pandas")
    assert res.ok, res.failures
    m, design = data["m"], design_of(data["m"], strata, cluster)
    expected = {
        "cas": hajek_blocks(m, ["a", "b"], [["a", "b"]], design),
        "mom": hajek_blocks(m, ["a", "b"], [["a", "b"]], design),
        "proj": hajek_blocks(m, ["a", "b"], [["a", "b"]], design),
        "ind": hajek_blocks(m, ["a", "b"], [["a"], ["b"]], design),
        "clu": hajek_blocks(m, ["a", "b", "c"], res["clu"].extras["clusters"], design),
        "marg": hajek_blocks(m, ["a"], [["a"]], design),
        "rrj": hajek_rr_joint(data["whole"], ["a", "b"], design),
        "rrm": hajek_rr_joint(data["whole"], ["a"], design),
    }
    assert res["proj"].extras["projection"] == "euclidean" and res["marg"].extras["projection"] == "clip"
    for q, (est, V) in expected.items():
        got = res[q]
        if q in ("proj", "marg", "rrm"):
            assert np.all(est >= 0), q          # the projection does not bind: the se is the linear one's
        assert np.allclose(arr(got.value), est, rtol=1e-9, atol=1e-13), q
        assert np.allclose(arr(got.extras["se"]), np.sqrt(np.diag(V)), rtol=1e-9), q
        assert np.allclose(np.asarray(got.cov_params(), float), V, rtol=1e-9, atol=1e-14), q
        assert got.extras["se_kind"] == "design-based (Taylor linearization)"
        assert got.extras["weighted_n"] == pytest.approx(design[0].sum(), rel=1e-12)
        assert np.all(arr(got.extras["deff"]) > 0) and "Hajek" in got.extras["note"]
    # the clusters found are more than one block on this sample (the formula's general case)
    assert len(res["clu"].extras["clusters"]) == 2
    # hybrid: the estimator it chose, with that one's design-based standard error
    for q in ("hyb", "hyb_cas"):
        chosen = {"castell": "cas", "independent": "ind"}[res[q].extras["chosen"]]
        assert arr(res[q].value).tolist() == arr(res[chosen].value).tolist()
        assert arr(res[q].extras["se"]).tolist() == arr(res[chosen].extras["se"]).tolist()
    assert {res["hyb"].extras["chosen"], res["hyb_cas"].extras["chosen"]} == {"castell", "independent"}
    assert res["ind"].extras["se_target"] == "product of marginals"
    # the pseudo-MLE of a square channel is the method of moments where that lies inside the
    # simplex, and so is its linearized covariance (castell's, checked above)
    assert np.allclose(arr(res["mle"].value), arr(res["cas"].value), rtol=1e-8)
    assert np.allclose(np.asarray(res["mle"].cov_params(), float), np.asarray(res["cas"].cov_params(), float),
                       rtol=1e-7, atol=1e-14)
    # RR-Joint's MLE summed to (a, b): the sums of the full joint's cells and of its covariance
    S = np.kron(np.eye(6), np.ones((1, 2)))
    full = np.asarray(res["mle_all"].cov_params(), float)
    assert np.allclose(arr(res["mle_w"].value), S @ arr(res["mle_all"].value), rtol=1e-12, atol=1e-15)
    assert np.allclose(np.asarray(res["mle_w"].cov_params(), float), S @ full @ S.T, rtol=1e-9, atol=1e-15)


def test_the_design_effect_is_the_design_variance_over_the_unweighted_estimators(spec):
    """deff's denominator: the unweighted estimator's covariance from the same rows (the
    run without weights, on counts proportional to the weighted shares); with weights 1
    and no design the linearized variance is that times n / (n - 1)."""
    data = clustered_sample(spec, seed=3)
    ones = {k: v.assign(weight=1.0) for k, v in data.items()}
    plain = spec.run(ones, queries=QUERIES, engine="pandas")
    weighted = spec.run(ones, queries=QUERIES, weights="weight", engine="pandas")
    n = len(data["m"])
    for q in ("cas", "ind", "clu", "proj", "marg", "rrj", "rrm", "hyb"):
        assert np.allclose(arr(weighted[q].value), arr(plain[q].value), rtol=1e-12, atol=1e-15), q
        assert np.allclose(arr(weighted[q].extras["deff"]), n / (n - 1), rtol=1e-9), q
        assert np.allclose(arr(weighted[q].extras["se"]), arr(plain[q].extras["se"]) * np.sqrt(n / (n - 1)),
                           rtol=1e-9), q
        assert weighted[q].extras["psus"] == n


def test_integer_weights_are_duplicated_rows(spec):
    """A row of weight k is k rows of weight 1: every estimate (clusters and hybrid's
    choices, truncation and projections included) is the same, and so is the design-based
    covariance when each row's copies stay in its PSU (clusters)."""
    data = clustered_sample(spec, seed=7)
    rng = np.random.default_rng(0)
    k = rng.integers(1, 4, len(data["m"]))
    counted = {name: df.assign(weight=k.astype(float)) for name, df in data.items()}
    copied = {name: df.loc[np.repeat(df.index, k)].reset_index(drop=True).assign(weight=1.0)
              for name, df in data.items()}
    options = dict(queries=QUERIES, weights="weight", strata="region", cluster="school", engine="pandas")
    a, b = spec.run(counted, **options), spec.run(copied, **options)
    assert a.ok and b.ok
    for q in QUERIES:
        assert np.allclose(arr(a[q].value), arr(b[q].value), rtol=1e-12, atol=1e-15), q
        if "se" in a[q].extras:
            assert np.allclose(arr(a[q].extras["se"]), arr(b[q].extras["se"]), rtol=1e-9), q
        else:
            assert "se" not in b[q].extras and a[q].extras["se_note"] == b[q].extras["se_note"]
    # the unweighted estimator on the copies is the weighted one's value too
    plain = spec.run(copied, queries=QUERIES, engine="pandas")
    for q in QUERIES:
        assert np.allclose(arr(a[q].value), arr(plain[q].value), rtol=1e-12, atol=1e-15), q


def test_without_a_standard_error_where_the_unweighted_has_none(spec):
    """truncated: no se (not smooth); a projection that moves the estimate: no se; the
    estimate is the unweighted estimator on the Hajek counts."""
    from privspec.backends.rr.independent import truncated

    data = clustered_sample(spec, seed=5, clusters=3, size=10)
    bind = privspec.load(SPEC + "query projb = estimate joint(a, b, c) from m by castell(project = euclidean)\n")
    res = bind.run(data, queries=["tru", "projb"], weights="weight", strata="region", cluster="school",
                   engine="pandas")
    tru, projb = res["tru"], res["projb"]
    assert "se" not in tru.extras and "truncation" in tru.extras["se_note"]
    assert tru.extras["design"] == "weights weight, strata region, clusters school (the PSUs)"
    m = data["m"]
    y = report_index(m, ["a", "b"])
    counts = np.zeros((3, 2))
    np.add.at(counts, (y[:, 0], y[:, 1]), m["weight"].to_numpy())
    Kt = [np.linalg.inv(grr_inverse(EPS[v], len(LABELS[v]))).T for v in ("a", "b")]
    expected = truncated(counts / counts.sum() * len(m), Kt).table
    assert np.allclose(arr(tru.value), expected.reshape(-1), rtol=1e-12)
    assert projb.extras["negative_cells"] > 0 and "se" not in projb.extras
    assert "projection moved" in projb.extras["se_note"]


def test_replicate_weights_rerun_each_estimator_row_by_row(spec):
    """JK1 replicates of 20 clusters (the rest times n / (n - 1)): each replicate's castell and
    RR-Independent re-computed here from its own weighted shares, svrVar's ``(R - 1)/R sum
    (theta_r - theta)^2``; hybrid and the clusters re-run too (they choose again)."""
    data = clustered_sample(spec, seed=13, strata=1, clusters=20, size=20)
    n = 20
    psu = data["m"]["school"].str[1:].astype(int).to_numpy()
    reps = np.column_stack([np.where(psu == c, 0.0, data["m"]["weight"] * n / (n - 1)) for c in range(n)])
    frames = {k: pd.concat([v, pd.DataFrame(reps, columns=[f"jk{c:02d}" for c in range(n)])], axis=1)
              for k, v in data.items()}
    res = spec.run(frames, queries=QUERIES + MLE, weights="weight", replicate_weights="jk*", replicate_type="jk1",
                   engine="pandas")
    assert res.ok, res.failures
    m = frames["m"]
    one = (np.zeros(len(m)), np.arange(len(m)))        # (the design here serves the estimate only)
    for q, blocks in (("cas", [["a", "b"]]), ("ind", [["a"], ["b"]])):
        theta = hajek_blocks(m, ["a", "b"], blocks, (m["weight"].to_numpy(), *one))[0]
        thetas = np.array([hajek_blocks(m, ["a", "b"], blocks, (reps[:, r], *one))[0] for r in range(n)])
        d = thetas - theta
        V = (n - 1) / n * d.T @ d
        assert np.allclose(arr(res[q].value), theta, rtol=1e-10)
        assert np.allclose(np.asarray(res[q].cov_params(), float), V, rtol=1e-9, atol=1e-15), q
        assert res[q].extras["replicates"] == n and res[q].extras["se_kind"].startswith("design-based (replicate")
    lin = spec.run(data, queries=QUERIES + MLE, weights="weight", cluster="school", engine="pandas")
    for q in ("cas", "ind", "clu", "proj", "marg", "rrj", "rrm", "mle"):
        # (EM stops within its tolerance: sums of weights added in another order move it by 1e-11)
        assert np.allclose(arr(res[q].value), arr(lin[q].value), rtol=1e-8 if q == "mle" else 1e-12, atol=1e-15), q
        # JK1 and linearization agree to O(1/clusters) for a smooth estimator
        assert np.allclose(arr(res[q].extras["se"]), arr(lin[q].extras["se"]), rtol=0.1), q
    assert "se" not in res["tru"].extras


def test_what_has_no_weighted_version_says_so(spec):
    data = clustered_sample(spec, seed=2, clusters=3, size=10)
    res = spec.run(data, queries=["cond", "cas"], weights="weight", engine="pandas")
    assert "cas" in res and res.failures["cond"].diagnostics[0].code == "B041"
    many = ", ".join(f"x{i}" for i in range(70))
    big = privspec.load(f"""
spec "big"
variable u: categorical {{{many}}}
variable v: categorical {{{many}}}
mechanism m2 = product(grr(u, epsilon = 1), grr(v, epsilon = 1))
query big = estimate joint(u, v) from m2 by independent
query big_tr = estimate joint(u, v) from m2 by truncated
""")
    frame = pd.DataFrame({"u": ["x1", "x2"] * 5, "v": ["x3", "x4"] * 5, "weight": 1.0})
    res = big.run(frame, weights="weight", engine="pandas")
    d = res.failures["big"].diagnostics[0]
    assert d.code == "B040" and "4,900 cells" in d.message and "4,096" in d.message
    assert "big_tr" in res and "se" not in res["big_tr"].extras


@pytest.mark.slow
def test_design_ci_covers_under_a_cluster_sample_where_the_srs_ci_does_not(spec):
    """Seeded: 300 stratified cluster samples (2 strata of 15 clusters of 30 alike
    respondents), the truth the population's joint; castell's and RR-Joint's cell (a0, b0)
    and RR-Independent's (a0, b1), whose target is the product of the marginals."""
    reps = 300
    targets = {"cas": (0, TRUTH.sum(axis=2)[0, 0]), "rrj": (0, TRUTH.sum(axis=2)[0, 0]),
               "ind": (1, AB.sum(axis=1)[0] * AB.sum(axis=0)[1])}
    design = dict.fromkeys(targets, 0)
    srs = dict.fromkeys(targets, 0)
    start = time.process_time()
    for r in range(reps):
        data = clustered_sample(spec, seed=2000 + r, strata=2, clusters=15, size=30, concentration=2.0)
        res = spec.run(data, queries=list(targets), weights="weight", strata="region", cluster="school",
                       engine="pandas")
        for q, (cell, truth) in targets.items():
            est, se = arr(res[q].value)[cell], arr(res[q].extras["se"])[cell]
            deff = arr(res[q].extras["deff"])[cell]
            design[q] += abs(est - truth) <= 1.959964 * se
            srs[q] += abs(est - truth) <= 1.959964 * se / np.sqrt(deff)
    print({q: (design[q] / reps, srs[q] / reps) for q in targets}, f"{time.process_time() - start:.1f} s CPU")
    band = 3 * np.sqrt(0.95 * 0.05 / reps)          # 3 binomial standard errors: 0.038
    for q in targets:
        assert abs(design[q] / reps - 0.95) <= band, (q, design[q] / reps)
        assert srs[q] < design[q] - 0.05 * reps, (q, srs[q] / reps)
