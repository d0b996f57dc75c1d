"""Survey weights, strata and clusters for the frequency oracles (issue 37): the Hajek
version of every oracle's unbiased estimate, with design-based standard errors by
linearization, checked against the survey package's formulas written here on row-level
support indicators; equal weights give the unweighted estimate; a seeded coverage check
under a cluster sample.  (All of it fails on main: there a frequency oracle refuses weights
with B040.)"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
import scipy.optimize

import privspec
from survey_reference import svy_covariance
from privspec.backends.core.projections import project
from privspec.backends.oracles.protocols import hash_values
from privspec.backends.oracles.pure import oracle

SPEC = """
spec "weighted oracles"
variable x: categorical {a, b, c, d, e}
variable y: categorical {u, v, w}
population x ~ categorical(0.3, 0.25, 0.2, 0.15, 0.1)
population y ~ categorical(0.5, 0.3, 0.2)
mechanism m_oue = oue(x, epsilon = 1)
mechanism m_sue = sue(x, epsilon = 1)
mechanism m_hr  = hr(x, epsilon = 1)
mechanism m_olh = olh(x, epsilon = 1)
mechanism m_ss  = ss(x, epsilon = 1)
mechanism m_lg  = l_oue(x, epsilon = 2, first = 1)
mechanism m_smp = smp(oue(x), grr(y), epsilon = 2)
mechanism m_rs  = rsfd(x, y, epsilon = 2, fake = oue_z)
mechanism m_rsr = rsfd(x, y, epsilon = 2, fake = oue_r)
mechanism m_blh = blh(x, epsilon = 1)
mechanism m_adp = adp(x, epsilon = 1)
mechanism m_lgrr = l_grr(x, epsilon = 2, first = 1)
mechanism m_spl = spl(oue(x), grr(y), epsilon = 2)
mechanism m_xy  = oue(x * y, epsilon = 2)
query blh = estimate distribution(x) from m_blh by mom
query adp = estimate distribution(x) from m_adp by mle
query lgrr = estimate distribution(x) from m_lgrr by mom
query spl = estimate distribution(y) from m_spl by mle
query xy = estimate joint(x, y) from m_xy by mom
query oue = estimate distribution(x) from m_oue by mom
query sue = estimate distribution(x) from m_sue by mom(project = clip)
query hr  = estimate distribution(x) from m_hr by mom
query olh = estimate distribution(x) from m_olh by mom
query ss  = estimate distribution(x) from m_ss by mom
query lg  = estimate distribution(x) from m_lg by mom
query smp = estimate distribution(y) from m_smp by mom
query rs  = estimate distribution(x) from m_rs by mom
query oue_mle = estimate distribution(x) from m_oue by mle
query smp_mle = estimate distribution(x) from m_smp by mle
query rsr = estimate distribution(x) from m_rsr by mom
query rsr_mle = estimate distribution(x) from m_rsr by mle
query oue_cond = estimate distribution(x) from m_oue by mom(se = conditional)
"""
X = tuple("abcde")
Y = ("u", "v", "w")
#: query -> its mechanism
MECH = {"oue": "m_oue", "sue": "m_sue", "hr": "m_hr", "olh": "m_olh", "ss": "m_ss", "lg": "m_lg", "smp": "m_smp",
        "rs": "m_rs", "rsr": "m_rsr"}


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    return privspec.load(SPEC)


def vec(vector) -> np.ndarray:
    return np.asarray(vector.values, dtype=float)


def clustered_sample(spec: privspec.Spec, mech: str, seed: int, strata: int = 3, clusters: int = 8, size: int = 25,
                     concentration: float = 4.0) -> pd.DataFrame:
    """A stratified cluster sample (each cluster its own shares, a Dirichlet around the
    population: respondents of a cluster are alike; a weight per cluster), privatized."""
    rng = np.random.default_rng(seed)
    parts = []
    for h in range(strata):
        for c in range(clusters):
            px = rng.dirichlet(concentration * np.array([0.3, 0.25, 0.2, 0.15, 0.1]))
            py = rng.dirichlet(concentration * np.array([0.5, 0.3, 0.2]))
            parts.append(pd.DataFrame({"x": rng.choice(X, size, p=px), "y": rng.choice(Y, size, p=py),
                                       "weight": rng.uniform(0.5, 3.0) * (1 + h), "region": f"R{h}",
                                       "school": f"S{c}"}))
    raw = pd.concat(parts, ignore_index=True)
    return pd.concat([spec.privatize(raw[["x", "y"]], mech, seed=seed), raw[["weight", "region", "school"]]], axis=1)


# ---- the support indicators, row by row, from the reports' text -------------------------------------------
def hex_bits(texts: pd.Series, d: int) -> np.ndarray:
    """Unary encoding's text: the hex of its bits packed little-endian (bit v in byte v // 8)."""
    return np.array([[(bytes.fromhex(t)[v // 8] >> (v % 8)) & 1 for v in range(d)] for t in texts], dtype=float)


def indicators(query: str, df: pd.DataFrame) -> np.ndarray:
    """``s_i(v)``: does row i's report support category v.  Unary encoding and Hadamard
    response are read here from their definitions; local hashing and subset selection by
    the oracle's own membership of each row's report (their hash and packing are the
    oracle's definition)."""
    column = df["y"] if query == "smp" else df["x"]
    if query in ("oue", "sue", "lg", "rs", "rsr"):
        return hex_bits(column, 5)
    if query == "smp":       # grr on y among the rows that sampled it: the report is the category
        return np.array([[float(t == str(v)) for v in range(3)] if t else [0.0] * 3 for t in column])
    if query == "hr":        # Hadamard: j supports v iff row v+1 of H has +1 at j (even parity of (v+1) & j)
        return np.array([[float(bin((v + 1) & int(t)).count("1") % 2 == 0) for v in range(5)] for t in column])
    o = oracle(query, 5, 1.0)
    if query == "olh":
        fields = column.str.split(":", expand=True).astype(np.int64)
        return (hash_values(o, fields[0].to_numpy()) == fields[1].to_numpy()[:, None]).astype(float)
    reports, bad = o.parse_reports(column.to_numpy(dtype=object))
    assert len(bad) == 0
    return o.membership(reports).astype(float)


def survey_estimate(query: str, df: pd.DataFrame, p: float, q: float, strata: bool, cluster: bool
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``svyratio`` of the support indicators over the reporting rows (smp: a domain, the
    others weigh 0), through ``f = (lambda - q*) / (p* - q*)``, and its covariance."""
    s = indicators(query, df)
    w = df["weight"].to_numpy(float)
    domain = (df["sampled"] == "1").to_numpy() if query == "smp" else np.ones(len(df), dtype=bool)
    wd = np.where(domain, w, 0.0)
    lam = wd @ s / wd.sum()
    z = np.where(domain[:, None], (s - lam) / ((p - q) * wd.sum()), 0.0)
    h = df["region"].to_numpy() if strata else np.zeros(len(df))
    c = df["school"].to_numpy() if cluster else np.arange(len(df))
    return (lam - q) / (p - q), svy_covariance(z, w, h, c)


def survey_mle(df: pd.DataFrame, column: str, p: float, q: float, strata: bool, cluster: bool,
               domain: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Unary encoding's weighted pseudo-MLE by a general optimizer: a report's likelihood is
    ``p* (1 - q*)`` for a category in its support against ``(1 - p*) q*`` out (a factor common
    to the categories aside); the linearized covariance from numerical derivatives of the
    pseudo-log-likelihood (the score of each row over minus its Hessian)."""
    d = 5
    s = hex_bits(df[column].where(df[column] != "", "00"), d)
    w = df["weight"].to_numpy(float)
    mine = np.ones(len(df), dtype=bool) if domain is None else domain
    wd = np.where(mine, w, 0.0)
    L = np.where(s > 0, p * (1 - q), (1 - p) * q)
    total = wd.sum()

    def shares(theta: np.ndarray) -> np.ndarray:
        return np.append(theta, 1 - theta.sum())

    def loglik(theta: np.ndarray) -> float:
        return float(wd @ np.log(L @ shares(theta))) / total

    theta = scipy.optimize.minimize(lambda t: -loglik(t), np.full(d - 1, 1 / d), method="Nelder-Mead",
                                    options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 40000}).x
    step = 1e-5
    eye = np.eye(d - 1) * step
    score = np.array([(np.log(L @ shares(theta + e)) - np.log(L @ shares(theta - e))) / (2 * step) for e in eye])
    hess = np.array([[(loglik(theta + a + b) - loglik(theta + a - b) - loglik(theta - a + b) + loglik(theta - a - b))
                      / (4 * step ** 2) for b in eye] for a in eye])
    z = np.where(mine[:, None], np.linalg.solve(-hess, score).T / total, 0.0)
    h = df["region"].to_numpy() if strata else np.zeros(len(df))
    c = df["school"].to_numpy() if cluster else np.arange(len(df))
    B = np.vstack([np.eye(d - 1), -np.ones((1, d - 1))])
    return shares(theta), B @ svy_covariance(z, w, h, c) @ B.T


# ---- the checks -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("query", list(MECH))
def test_every_oracle_matches_the_survey_formulas_under_strata_and_clusters(spec, query):
    df = clustered_sample(spec, MECH[query], seed=11)
    got = spec.run(df, queries=[query], weights="weight", strata="region", cluster="school", engine="pandas")
    assert got.ok, got.failures
    r = got[query]
    est, V = survey_estimate(query, df, r.extras["p_star"], r.extras["q_star"], True, True)
    value = project(est, "clip") if query == "sue" else est      # sue's query projects (clip, renormalize)
    assert np.allclose(vec(r.value), value, rtol=1e-10, atol=1e-12)
    assert np.allclose(vec(r.extras["se"]), np.sqrt(np.diag(V)), rtol=1e-9)
    assert np.allclose(np.asarray(r.cov_params(), float), V, rtol=1e-9, atol=1e-15)
    assert r.extras["design"] == "weights weight, strata region, clusters school (the PSUs)"
    assert r.extras["psus"] == 24 and r.extras["strata"] == 3
    assert r.extras["weighted_n"] == pytest.approx(df["weight"].sum(), rel=1e-12)


@pytest.mark.parametrize("query", ["oue_mle", "smp_mle"])
def test_the_mle_is_the_weighted_pseudo_mle_with_its_linearized_covariance(spec, query):
    mech = "m_oue" if query == "oue_mle" else "m_smp"
    df = clustered_sample(spec, mech, seed=13)
    r = spec.run(df, queries=[query], weights="weight", strata="region", cluster="school", engine="pandas")[query]
    domain = (df["sampled"] == "0").to_numpy() if query == "smp_mle" else None
    est, V = survey_mle(df, "x", r.extras["p_star"], r.extras["q_star"], True, True, domain)
    assert np.allclose(vec(r.value), est, atol=2e-6)
    assert np.allclose(vec(r.extras["se"]), np.sqrt(np.diag(V)), rtol=1e-3)
    assert "pseudo-maximum-likelihood" in r.extras["note"] and "pseudo_loglik" in r.extras


@pytest.mark.parametrize("strata,cluster", [(False, False), (True, False), (False, True)])
def test_designs_without_strata_or_clusters(spec, strata, cluster):
    for query in ("oue", "smp"):
        df = clustered_sample(spec, MECH[query], seed=5)
        r = spec.run(df, queries=[query], weights="weight", strata="region" if strata else None,
                     cluster="school" if cluster else None, engine="pandas")[query]
        est, V = survey_estimate(query, df, r.extras["p_star"], r.extras["q_star"], strata, cluster)
        assert np.allclose(vec(r.value), est, rtol=1e-10, atol=1e-12)
        assert np.allclose(np.asarray(r.cov_params(), float), V, rtol=1e-9, atol=1e-15)


def test_equal_weights_give_the_unweighted_estimate_and_standard_errors(spec):
    """Each row its own PSU, weights 1: the unweighted estimate; the linearized variance of a
    support share is its Bernoulli variance ``lambda (1 - lambda)`` times ``1 / (n - 1)``,
    ``lambda = q* + (p* - q*) f``: the unweighted standard error's formula, which evaluates it
    at the estimate brought onto the simplex (the same where the estimate sums to 1, within
    a few percent otherwise: unary encoding's supports vary in size)."""
    rng = np.random.default_rng(2)
    n = 3000
    raw = pd.DataFrame({"x": rng.choice(X, n, p=[0.3, 0.25, 0.2, 0.15, 0.1]), "y": rng.choice(Y, n)})
    for query in ("oue", "hr", "olh", "lg", "smp", "rs", "oue_mle", "smp_mle"):
        df = spec.privatize(raw, MECH[query.removesuffix("_mle")], seed=4).assign(weight=1.0)
        plain = spec.run(df, queries=[query], engine="pandas")[query]
        weighted = spec.run(df, queries=[query], weights="weight", engine="pandas")[query]
        f = vec(plain.value)
        assert np.all(f > 0), query
        assert np.allclose(vec(weighted.value), f, rtol=1e-12), query
        se = vec(weighted.extras["se"])
        ratio = se / vec(plain.extras["se"])
        if query.endswith("_mle"):
            # at an MLE inside the simplex the observed information is the scores' mean
            # square: the linearized (sandwich) variance is the inverse information
            assert np.allclose(ratio ** 2, n / (n - 1), rtol=1e-6), query
            continue
        p, q = weighted.extras["p_star"], weighted.extras["q_star"]
        m = weighted.extras.get("reports_of_attribute", n)
        lam = q + (p - q) * f
        # m reporting rows among n (smp: a domain), each its own PSU: the n - m others' totals are 0
        assert np.allclose(se ** 2, n / (n - 1) * lam * (1 - lam) / ((p - q) ** 2 * m), rtol=1e-9), query
        assert np.all(np.abs(ratio - 1) < 0.03), (query, ratio)
        if abs(f.sum() - 1) < 1e-12:
            assert np.allclose(ratio ** 2, n / (n - 1), rtol=1e-9), query
            assert np.allclose(vec(weighted.extras["deff"]), n / (n - 1), rtol=1e-9), query


def test_engines_agree(spec, tmp_path):
    df = clustered_sample(spec, "m_olh", seed=7)
    path = tmp_path / "reports.csv"
    df.to_csv(path, index=False)
    options = dict(queries=["olh"], weights="weight", strata="region", cluster="school")
    frame = spec.run(df, engine="pandas", **options)["olh"]
    duck = spec.run(path, engine="duckdb", **options)["olh"]
    assert frame.value == duck.value and frame.extras["se"] == duck.extras["se"]


def test_the_other_oracles_and_a_joint_weigh_too(spec):
    """Local hashing's binary variant, adp (grr here), longitudinal grr, an attribute of spl
    and the joint of an oracle on a combined variable: equal weights, each row its own PSU,
    give the unweighted estimate and its standard errors (mom: within the clipping's few
    percent; mle: times sqrt(n / (n - 1)))."""
    rng = np.random.default_rng(6)
    n = 2000
    raw = pd.DataFrame({"x": rng.choice(X, n, p=[0.3, 0.25, 0.2, 0.15, 0.1]), "y": rng.choice(Y, n)})
    for query, mech in (("blh", "m_blh"), ("adp", "m_adp"), ("lgrr", "m_lgrr"), ("spl", "m_spl"), ("xy", "m_xy")):
        df = spec.privatize(raw, mech, seed=8).assign(weight=1.0)
        plain = spec.run(df, queries=[query], engine="pandas")[query]
        weighted = spec.run(df, queries=[query], weights="weight", engine="pandas")[query]
        if query == "xy":
            a, b = np.asarray(plain.value.data, float), np.asarray(weighted.value.data, float)
            assert a.shape == (5, 3)
        else:
            a, b = vec(plain.value), vec(weighted.value)
        assert np.allclose(a, b, rtol=1e-9, atol=1e-12), query
        ratio = vec(weighted.extras["se"]) / vec(plain.extras["se"])
        if query in ("adp", "spl"):
            assert np.allclose(ratio ** 2, n / (n - 1), rtol=1e-6), query
        else:
            assert np.all(np.abs(ratio - 1) < 0.05), (query, ratio)


@pytest.mark.slow
def test_design_ci_covers_under_a_cluster_sample_where_the_srs_ci_does_not(spec):
    """Seeded: 200 stratified cluster samples of n = 2 x 15 x 30 = 900 rows (OUE, epsilon 1),
    the truth the population's share of a (0.3).  The design-based 95% intervals of mom and
    mle cover within the binomial tolerance (sd 1.5 points at 200 draws: 0.91 .. 0.99); the
    interval on the unweighted estimator's standard error covers less (the clusters are alike
    within)."""
    truth = 0.3
    reps = 200
    design_hits = {"oue": 0, "oue_mle": 0}
    srs_hits = 0
    start = time.process_time()
    for r in range(reps):
        df = clustered_sample(spec, "m_oue", seed=1000 + r, strata=2, clusters=15, size=30, concentration=1.5)
        res = spec.run(df, queries=list(design_hits), weights="weight", strata="region", cluster="school",
                       engine="pandas")
        for q in design_hits:
            est, se = vec(res[q].value)[0], vec(res[q].extras["se"])[0]
            design_hits[q] += abs(est - truth) <= 1.959964 * se
        est, se, deff = vec(res["oue"].value)[0], vec(res["oue"].extras["se"])[0], vec(res["oue"].extras["deff"])[0]
        srs_hits += abs(est - truth) <= 1.959964 * se / np.sqrt(deff)
    cover = {q: hits / reps for q, hits in design_hits.items()}
    print(f"coverage: design {cover}, srs {srs_hits / reps:.3f}; {time.process_time() - start:.1f} s CPU")
    assert all(0.91 <= c <= 0.99 for c in cover.values())
    assert srs_hits / reps < cover["oue"] - 0.03


# ---- errors ---------------------------------------------------------------------------------------------
def test_data_errors_name_rows_and_columns(spec):
    df = clustered_sample(spec, "m_oue", seed=2).astype({"weight": object})
    df.loc[[4, 9], "weight"] = "-1"
    d = spec.run(df, queries=["oue"], weights="weight", engine="pandas").failures["oue"].diagnostics[0]
    assert d.code == "D070" and "negative" in d.message and d.rows == (5, 10)
    df = clustered_sample(spec, "m_oue", seed=2, strata=2, clusters=3, size=4)
    df.loc[df["region"] == "R1", "school"] = "only"
    d = spec.run(df, queries=["oue"], weights="weight", strata="region", cluster="school",
                 engine="pandas").failures["oue"].diagnostics[0]
    assert d.code == "D071" and "'R1'" in d.message and d.rows == tuple(range(13, 25))
    d = spec.run(df, queries=["oue"], weights="x", engine="pandas").failures["oue"].diagnostics[0]
    assert d.code == "D072"
    smp = clustered_sample(spec, "m_smp", seed=2)
    d = spec.run(smp, queries=["smp"], weights="sampled", engine="pandas").failures["smp"].diagnostics[0]
    assert d.code == "D072"


def test_conditional_standard_errors_and_rsfd_random_fakes_by_mle_are_refused(spec):
    """Every frequency oracle's estimate weighs (no B040); se = conditional has no
    design-based version (B041), and rsfd's random-value fakes have no IBU, weighted or not
    (B415), while their mom weighs."""
    df = clustered_sample(spec, "m_oue", seed=3)
    res = spec.run(df, queries=["oue", "oue_mle", "oue_cond"], weights="weight", engine="pandas")
    assert "oue" in res and "oue_mle" in res
    assert res.failures["oue_cond"].diagnostics[0].code == "B041"
    df = clustered_sample(spec, "m_rsr", seed=3)
    res = spec.run(df, queries=["rsr", "rsr_mle"], weights="weight", engine="pandas")
    assert "rsr" in res and res.failures["rsr_mle"].diagnostics[0].code == "B415"


def test_oracles_take_replicate_weights_too():
    """A frequency oracle with JK1 replicates built from the clusters: the same standard
    errors as linearization over those clusters, within the jackknife's agreement with it."""
    spec = privspec.load('spec "oracle"\nvariable c: categorical {a, b, c, d}\n'
                         "mechanism o = oue(c, epsilon = 1)\n"
                         "query f = estimate distribution(c) from o by mom\n"
                         "query g = estimate distribution(c) from o by mle\n")
    rng = np.random.default_rng(11)
    C, size = 30, 30
    school = np.repeat(np.arange(C), size)
    shares = rng.dirichlet(4 * np.array([0.4, 0.3, 0.2, 0.1]), C)
    values = np.array([rng.choice(list("abcd"), p=shares[j]) for j in school])
    w = rng.choice([1.0, 2.0, 3.0], C)[school]
    frame = spec.privatize(pd.DataFrame({"c": values, "w": w, "school": school}), "o", seed=3, keep=["w", "school"])
    for j in range(C):
        frame[f"rw{j:02d}"] = np.where(frame["school"] == j, 0.0, frame["w"] * C / (C - 1))
    lin = spec.run(frame, weights="w", cluster="school")
    rep = spec.run(frame, weights="w", replicate_weights="rw*", replicate_type="jk1")
    for q in ("f", "g"):
        a, b = lin[q], rep[q]
        assert np.allclose(np.asarray(b.value.values, float), np.asarray(a.value.values, float), atol=1e-12)
        ratio = np.asarray(b.extras["se"].values, float) / np.asarray(a.extras["se"].values, float)
        assert np.all(np.abs(ratio - 1) < 0.1), (q, ratio)
        assert b.extras["replicates"] == C and b.extras["se_kind"] == "design-based (replicate weights, jk1)"
