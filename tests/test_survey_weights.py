"""Survey weights, strata and clusters (issue 37): Hajek estimates from privatized reports
with design-based standard errors by linearization, checked against the survey package's
formulas written here row by row, and by a seeded coverage simulation under a cluster
sample.  (All of it fails on main: ``run`` there takes no weights.)"""
from __future__ import annotations

import io
from pathlib import Path
import time

import numpy as np
import pandas as pd
import pytest
import scipy.optimize

import privspec
from survey_reference import svy_covariance
from privspec.cli import main
from privspec.errors import DataError

SPEC = """
spec "weighted survey"
variable drinks: categorical {none, "1-7", "8-14", "15+"}
variable smokes: categorical {no, yes}
population drinks ~ categorical(0.35, 0.4, 0.15, 0.1)
population smokes ~ categorical(0.7, 0.3)
mechanism drinks_q = subset(drinks, sizes {2: 1})
mechanism smoke_q  = grr(smokes, epsilon = 1)
query drinking = estimate distribution(drinks) from drinks_q by mle
query drinking_mom = estimate distribution(drinks) from drinks_q by mom
query smokers  = estimate distribution(smokes) from smoke_q by mom
query smokers_mle = estimate distribution(smokes) from smoke_q by mle
query step = estimate distribution(drinks) from drinks_q by one_step
"""
DRINKS = ("none", "1-7", "8-14", "15+")
ROOT = Path(__file__).resolve().parent.parent


def vec(vector) -> np.ndarray:
    """A result's Vector as numbers, in its order."""
    return np.asarray(vector.values, dtype=float)


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    return privspec.load(SPEC)


def clustered_sample(spec: privspec.Spec, seed: int, strata: int = 3, clusters: int = 8, size: int = 20,
                     concentration: float = 4.0) -> pd.DataFrame:
    """A stratified cluster sample: each cluster its own drinks/smokes shares (a Dirichlet
    around the population: respondents of a cluster are alike), a weight per cluster,
    privatized with a seed."""
    rng = np.random.default_rng(seed)
    parts = []
    for h in range(strata):
        for c in range(clusters):
            d = rng.dirichlet(concentration * np.array([0.35, 0.4, 0.15, 0.1]))
            s = rng.dirichlet(concentration * np.array([0.7, 0.3]))
            parts.append(pd.DataFrame({
                "drinks": rng.choice(DRINKS, size, p=d), "smokes": rng.choice(["no", "yes"], size, p=s),
                "weight": rng.uniform(0.5, 3.0) * (1 + h), "region": f"R{h}", "school": f"S{c}"}))
    raw = pd.concat(parts, ignore_index=True)
    reports = pd.concat([spec.privatize(raw[["drinks"]], "drinks_q", seed=seed),
                         spec.privatize(raw[["smokes"]], "smoke_q", seed=seed + 1)], axis=1)
    return pd.concat([reports, raw[["weight", "region", "school"]]], axis=1)


# ---- the survey package's formulas, row by row ------------------------------------------------------
def grr_matrix(eps: float, k: int) -> np.ndarray:
    keep = np.exp(eps) / (np.exp(eps) + k - 1)
    return np.where(np.eye(k, dtype=bool), keep, (1 - keep) / (k - 1))


def pairs_matrix(reports: list[frozenset]) -> np.ndarray:
    """``subset(X, sizes {2: 1})``: a uniformly drawn pair holding the answer, 1/3 each."""
    return np.array([[1 / 3 if x in a else 0.0 for x in DRINKS] for a in reports])


def design_columns(df: pd.DataFrame, strata: bool, cluster: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    w = df["weight"].to_numpy(float)
    h = df["region"].to_numpy() if strata else np.zeros(len(df))
    c = df["school"].to_numpy() if cluster else np.arange(len(df))
    return w, h, c


def hajek_mom_grr(df: pd.DataFrame, strata: bool, cluster: bool) -> tuple[np.ndarray, np.ndarray]:
    """The Hajek MoM of grr's shares, ``K^-1 lambda_hat``, and its linearized covariance."""
    w, h, c = design_columns(df, strata, cluster)
    o = (df["smokes"] == "yes").to_numpy().astype(int)
    total = w.sum()
    lam = np.array([w[o == 0].sum(), w[o == 1].sum()]) / total
    Kinv = np.linalg.inv(grr_matrix(1.0, 2))
    est = Kinv @ lam
    z = (Kinv[:, o] - (Kinv @ lam)[:, None]).T / total
    return est, svy_covariance(z, w, h, c)


def hajek_mle_pairs(df: pd.DataFrame, strata: bool, cluster: bool) -> tuple[np.ndarray, np.ndarray]:
    """The weighted pseudo-MLE of the drinks shares (a general optimizer) and its
    linearized covariance from numerical derivatives of the pseudo-log-likelihood."""
    w, h, c = design_columns(df, strata, cluster)
    sets = [frozenset(t.split("|")) for t in df["drinks"]]
    reports = sorted(set(sets), key=sorted)
    o = np.array([reports.index(s) for s in sets])
    K = pairs_matrix(reports)
    total = w.sum()
    W = np.bincount(o, weights=w, minlength=len(reports))

    def shares(theta: np.ndarray) -> np.ndarray:
        return np.append(theta, 1 - theta.sum())

    def loglik(theta: np.ndarray) -> float:
        return float(W @ np.log(K @ shares(theta))) / total

    got = scipy.optimize.minimize(lambda t: -loglik(t), np.full(3, 0.25), method="Nelder-Mead",
                                  options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20000})
    theta = got.x
    step = 1e-5
    eye = np.eye(3) * step
    # per report: the score of log lambda_o in theta (central differences)
    score = np.array([(np.log(K @ shares(theta + e)) - np.log(K @ shares(theta - e))) / (2 * step) for e in eye])
    hess = np.array([[(loglik(theta + a + b) - loglik(theta + a - b) - loglik(theta - a + b) + loglik(theta - a - b))
                      / (4 * step ** 2) for b in eye] for a in eye])
    z_theta = np.linalg.solve(-hess, score[:, o]).T / total
    B = np.vstack([np.eye(3), -np.ones((1, 3))])
    return shares(theta), B @ svy_covariance(z_theta, w, h, c) @ B.T


# ---- the checks ---------------------------------------------------------------------------------------
DESIGNS = [(False, False), (True, False), (False, True), (True, True)]


@pytest.mark.parametrize("strata,cluster", DESIGNS)
def test_mom_and_mle_match_the_survey_formulas(spec, strata, cluster):
    df = clustered_sample(spec, seed=11)
    res = spec.run(df, queries=["smokers", "drinking"], weights="weight", strata="region" if strata else None,
                   cluster="school" if cluster else None, engine="pandas")
    assert res.ok, res.failures
    est, V = hajek_mom_grr(df, strata, cluster)
    got = res["smokers"]
    assert np.allclose(vec(got.value), est, rtol=1e-10)
    assert np.allclose(vec(got.extras["se"]), np.sqrt(np.diag(V)), rtol=1e-8)
    assert np.allclose(np.asarray(res["smokers"].cov_params(), float), V, rtol=1e-8, atol=1e-14)
    est, V = hajek_mle_pairs(df, strata, cluster)
    got = res["drinking"]
    assert np.allclose(vec(got.value), est, atol=1e-6)
    assert np.allclose(vec(got.extras["se"]), np.sqrt(np.diag(V)), rtol=1e-3)


def test_weights_of_one_give_the_unweighted_estimate_and_deff_one_without_design(spec):
    df = clustered_sample(spec, seed=3).assign(weight=1.0)
    plain = spec.run(df, queries=["smokers", "drinking_mom"], engine="pandas")
    weighted = spec.run(df, queries=["smokers", "drinking_mom"], weights="weight", engine="pandas")
    for q in ("smokers", "drinking_mom"):
        assert np.allclose(vec(plain[q].value), vec(weighted[q].value), rtol=1e-12)
        # each row its own PSU, equal weights: the linearized variance is the SRS one times n / (n - 1)
        n = len(df)
        assert np.allclose(vec(weighted[q].extras["deff"]), n / (n - 1), rtol=1e-9)
        assert weighted[q].extras["psus"] == n and weighted[q].extras["weighted_n"] == n


def test_engines_agree_and_the_cli_shows_the_design_effect(spec, tmp_path):
    df = clustered_sample(spec, seed=5)
    path = tmp_path / "reports.csv"
    df.to_csv(path, index=False)
    options = dict(queries=["smokers", "drinking"], weights="weight", strata="region", cluster="school")
    frame = spec.run(df, engine="pandas", **options)
    duck = spec.run(path, engine="duckdb", **options)
    for q in ("smokers", "drinking"):
        assert frame[q].value == duck[q].value and frame[q].extras["se"] == duck[q].extras["se"]
    spec_path = tmp_path / "s.privspec"
    spec_path.write_text(SPEC)
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(spec_path), "--data", str(path), "--weights", "weight", "--strata", "region",
                 "--cluster", "school", "--query", "smokers"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert "deff = " in out.getvalue() and "design = weights weight, strata region, clusters school" in out.getvalue()


@pytest.mark.slow
def test_design_ci_covers_under_a_cluster_sample_where_the_srs_ci_does_not(spec):
    """Seeded: 200 stratified cluster samples, the truth the population's shares."""
    truth = 0.3
    design_hits = srs_hits = 0
    reps = 200
    start = time.process_time()
    for r in range(reps):
        df = clustered_sample(spec, seed=1000 + r, strata=2, clusters=15, size=30, concentration=3.0)
        got = spec.run(df, queries=["smokers"], weights="weight", strata="region", cluster="school",
                       engine="pandas")["smokers"]
        est, se, deff = vec(got.value)[1], vec(got.extras["se"])[1], vec(got.extras["deff"])[1]
        design_hits += abs(est - truth) <= 1.959964 * se
        srs_hits += abs(est - truth) <= 1.959964 * se / np.sqrt(deff)
    print(f"coverage: design {design_hits / reps:.3f}, srs {srs_hits / reps:.3f}; {time.process_time() - start:.1f} s CPU")
    # binomial sd of a 95% coverage over 200 draws: 1.5 points
    assert 0.91 <= design_hits / reps <= 0.99
    assert srs_hits / reps < 0.85


# ---- errors --------------------------------------------------------------------------------------------
def _error(spec: privspec.Spec, df: pd.DataFrame, **design) -> DataError:
    res = spec.run(df, queries=["smokers"], engine="pandas", **design)
    assert not res.ok
    return res.failures["smokers"]


@pytest.mark.parametrize("value,what", [("", "missing"), ("abc", "not a number"), ("-1", "negative"),
                                        ("inf", "not a number")])
def test_bad_weights_name_their_rows(spec, value, what):
    df = clustered_sample(spec, seed=2).astype({"weight": object})
    df.loc[[4, 9], "weight"] = value
    e = _error(spec, df, weights="weight")
    d = e.diagnostics[0]
    assert d.code == "D070" and what in d.message and d.rows == (5, 10) and d.columns == ("weight",)


def test_a_stratum_with_one_psu_is_refused_with_its_rows(spec):
    df = clustered_sample(spec, seed=2, strata=2, clusters=3, size=4)
    df.loc[df["region"] == "R1", "school"] = "only"
    d = _error(spec, df, weights="weight", strata="region", cluster="school").diagnostics[0]
    assert d.code == "D071" and "'R1'" in d.message and d.rows == tuple(range(13, 25))
    assert "merge" in d.hint


def test_unknown_design_column_and_missing_cluster(spec):
    df = clustered_sample(spec, seed=2)
    d = _error(spec, df, weights="wt").diagnostics[0]
    assert d.code == "D003" and "'wt'" in d.message and "weight" in d.hint
    d = _error(spec, df, weights="smokes").diagnostics[0]
    assert d.code == "D072"
    df.loc[7, "school"] = None
    d = _error(spec, df, weights="weight", cluster="school").diagnostics[0]
    assert d.code == "D004" and d.rows == (8,) and d.columns == ("school",)
    with pytest.raises(ValueError, match="need weights"):
        spec.run(df, strata="region")


def test_a_projected_estimate_is_weighted_and_a_release_still_says_why_not():
    """A projected rr estimate is weighted since the rr back end's joint estimators are
    (backends/rr/weighted.py): inside the simplex the projection leaves the weighted MoM as
    it is, with its design-based SE; what has no weighted version says so (B040; the
    releases' test below)."""
    both = privspec.load(SPEC + "query proj = estimate distribution(smokes) from smoke_q by mom(project = clip)\n")
    df = clustered_sample(both, seed=2)
    res = both.run(df, queries=["proj", "smokers"], weights="weight", engine="pandas")
    assert not res.failures
    np.testing.assert_allclose(vec(res["proj"].value), vec(res["smokers"].value), rtol=1e-12)
    np.testing.assert_allclose(vec(res["proj"].extras["se"]), vec(res["smokers"].extras["se"]), rtol=1e-9)
    assert res["proj"].extras["se_kind"] == res["smokers"].extras["se_kind"]


def test_the_one_step_estimator_is_weighted_as_the_mle_it_approximates(spec):
    """One Newton step of the weighted pseudo-likelihood from the weighted MoM: the MLE's
    influence values at its estimate (asymptotically the same estimator); equal weights give
    the unweighted one-step estimate."""
    df = clustered_sample(spec, seed=2)
    res = spec.run(df, queries=["step", "drinking"], weights="weight", strata="region", cluster="school")
    step, mle = res["step"], res["drinking"]
    assert np.allclose(vec(step.value), vec(mle.value), atol=0.5 * vec(mle.extras["se"]).max())
    assert np.allclose(vec(step.extras["se"]), vec(mle.extras["se"]), rtol=0.15)
    assert step.extras["se_kind"] == "design-based (Taylor linearization)"
    equal = spec.run(df.assign(weight=1.0), queries=["step"], weights="weight")["step"]
    assert np.allclose(vec(equal.value), vec(spec.run(df, queries=["step"])["step"].value), atol=1e-12)


NUMERIC = """
spec "weighted salary"
variable salary: continuous [0, 150]
mechanism lap = laplace(salary, epsilon = 1)
mechanism sw = square_wave(salary, epsilon = 1)
query m = estimate mean(salary) from lap by unbiased
query f = estimate cdf(salary) from sw by ems
"""


def test_numeric_mean_is_the_weighted_mean_with_the_linearized_variance():
    """laplace: a report is the salary mapped to [-1, 1] plus noise, itself unbiased."""
    spec = privspec.load(NUMERIC)
    rng = np.random.default_rng(8)
    n = 400
    raw = pd.DataFrame({"salary": rng.uniform(0, 150, n)})
    df = spec.privatize(raw, "lap", seed=4).assign(weight=rng.choice([1.0, 2.5, 4.0], n),
                                                    region=rng.choice(["a", "b"], n),
                                                    school=rng.integers(0, 12, n))
    got = spec.run(df, queries=["m"], weights="weight", strata="region", cluster="school", engine="pandas")["m"]
    y = (df["salary"].astype(float).to_numpy() + 1) / 2 * 150
    w = df["weight"].to_numpy()
    mean = float(w @ y / w.sum())
    V = svy_covariance(((y - mean) / w.sum())[:, None], w, df["region"].to_numpy(), df["school"].to_numpy())
    assert got.value == pytest.approx(mean, rel=1e-12)
    assert got.extras["se"] == pytest.approx(float(np.sqrt(V[0, 0])), rel=1e-10)
    srs = float(np.sum((y - mean) ** 2) / (n - 1) / n)   # iid rows, about the weighted mean
    assert got.extras["deff"] == pytest.approx(V[0, 0] / srs, rel=1e-10)
    # square wave's EMS has its weighted version too (tests/test_survey_weights_ems.py)
    res = spec.run({"lap": df, "sw": df.assign(salary=0.5)}, queries=["f"], weights="weight", engine="pandas")
    assert res["f"].extras["weighted_n"] == pytest.approx(w.sum()) and "no standard error" in res["f"].extras["note"]


INTERVAL = """
spec "a weighted interval survey"
variable salary: continuous [0, 150]
population salary ~ uniform(0, 150)
mechanism c1 = interval(salary, case1(uniform(-10, 160)))
query m = estimate mean(salary) from c1 by unbiased
query mc = estimate mean(salary) from c1 by unbiased(se = conditional)
query f = estimate cdf(salary) from c1 by npmle
"""


def test_interval_example2_mean_is_the_weighted_mean_of_its_terms_with_the_linearized_variance():
    """Example 2's terms D = Delta (2U - b) + (1 - Delta)(2U - a), written here from the
    reports' text, weighed and linearized by the survey package's formulas; equal weights
    give the unweighted estimate and its standard error."""
    spec = privspec.load(INTERVAL)
    rng = np.random.default_rng(9)
    n = 500
    raw = pd.DataFrame({"salary": rng.uniform(0, 150, n)})
    df = spec.privatize(raw, "c1", seed=5).assign(weight=rng.choice([1.0, 2.0, 5.0], n),
                                                   region=rng.choice(["a", "b", "c"], n),
                                                   school=rng.integers(0, 10, n))
    got = spec.run(df, queries=["m"], weights="weight", strata="region", cluster="school")["m"]
    text = df["salary"].astype(str)
    below = text.str.startswith("(-inf")             # (-inf, U]: Delta = 1
    u = np.where(below, text.str.extract(r", ([^\]]+)\]")[0], text.str.extract(r"\(([^,]+),")[0]).astype(float)
    a, b = -10.0, 160.0
    d = np.where(below, 2 * u - b, 2 * u - a)
    w = df["weight"].to_numpy()
    mean = float(w @ d / w.sum())
    V = svy_covariance(((d - mean) / w.sum())[:, None], w, df["region"].to_numpy(), df["school"].to_numpy())
    assert got.value == pytest.approx(mean, rel=1e-12)
    assert got.extras["se"] == pytest.approx(float(np.sqrt(V[0, 0])), rel=1e-10)
    assert got.extras["deff"] == pytest.approx(V[0, 0] / (np.sum((d - mean) ** 2) / (n - 1) / n), rel=1e-10)
    equal = spec.run(df.assign(weight=1.0), queries=["m"], weights="weight")["m"]
    plain = spec.run(df, queries=["m"])["m"]
    assert equal.value == pytest.approx(plain.value, rel=1e-12)
    assert equal.extras["se"] == pytest.approx(plain.extras["se"], rel=1e-10)
    res = spec.run(df, queries=["mc", "f"], weights="weight")
    assert res.failures["mc"].diagnostics[0].code == "B041"
    # the NPMLE of F has a weighted version (tests/test_survey_weights_interval.py), without a band
    assert "f" not in res.failures and "no band" in res["f"].extras["note"]


PRODUCTS = """
spec "products, matrices, dummies"
variable a: categorical {x, y, z}
variable b: categorical {u, v}
variable c: categorical {p, q, r}
mechanism pr = product(subset(a, sizes {2: 1}), grr(b, epsilon = 1))
mechanism warner = rr(c, matrix [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
mechanism dm = subset(c, uniform, min_coverage = 0.1)
query jt = estimate joint(a, b) from pr by mle
query ma = estimate distribution(a) from pr by mom
query wr = estimate distribution(c) from warner by mle
query d = estimate distribution(c) from dm by mom
query d_mle = estimate distribution(c) from dm by mle
"""


def test_joints_marginals_matrices_and_dummy_categories_weigh_too():
    """Equal weights, each row its own PSU: the unweighted estimates, and (as many reports as
    categories) the linearized variance n / (n - 1) times the asymptotic one at the estimate."""
    spec = privspec.load(PRODUCTS)
    rng = np.random.default_rng(0)
    n = 500
    raw = pd.DataFrame({"a": rng.choice(list("xyz"), n), "b": rng.choice(list("uv"), n),
                        "c": rng.choice(list("pqr"), n)})
    reports = spec.privatize(raw, "pr", seed=1).assign(c=spec.privatize(raw, "warner", seed=2)["c"], w=1.0)
    dummies = spec.privatize(raw, "dm", seed=3).assign(w=1.0)
    data = {"pr": reports, "warner": reports, "dm": dummies}
    plain = spec.run(data, engine="pandas")
    weighted = spec.run(data, weights="w", engine="pandas")
    assert plain.ok and weighted.ok, weighted.failures
    for q in ("jt", "ma", "wr", "d", "d_mle"):
        a, b = plain[q].value, weighted[q].value
        values = (a.values, b.values) if q != "jt" else (np.asarray(a.data, float), np.asarray(b.data, float))
        assert np.allclose(*values, atol=1e-7), q
        rows, deff = weighted[q].extras["n"], vec(weighted[q].extras["deff"])
        if q.startswith("d"):
            # more reports than categories: the linearized variance reads the report shares
            # observed, the asymptotic one the shares at the estimate; equal only in the limit
            assert np.all((deff > 0.9) & (deff < 1.1)), q
        else:
            assert np.allclose(deff, rows / (rows - 1), rtol=1e-6), q


def test_cli_strata_need_weights(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(ROOT / "specs" / "survey.privspec"), "--data",
                 str(ROOT / "specs" / "data" / "survey_weighted.csv"), "--strata", "region"], stdout=out, stderr=err)
    assert code == 2 and "--strata and --cluster need --weights" in err.getvalue()


def test_a_product_of_grr_weighs_its_joint_by_mom_mle_and_castell():
    spec = privspec.load(CASTELL)
    rng = np.random.default_rng(6)
    raw = pd.DataFrame({"a": rng.choice(["x", "y"], 300), "b": rng.choice(["u", "v", "t"], 300)})
    reports = spec.privatize(raw, "ind", seed=1).assign(w=1.0)
    plain, weighted = spec.run(reports, engine="pandas"), spec.run(reports, weights="w", engine="pandas")
    for q in ("j", "j_mle"):
        assert np.allclose(np.asarray(plain[q].value.data, float), np.asarray(weighted[q].value.data, float),
                           atol=1e-7)
        assert weighted[q].extras["design"] == "weights w, one stratum, each row its own PSU"
    # castell is the method of moments of the product, computed mode-wise (tests/test_rr_weighted.py)
    assert weighted["j_castell"].value.data.tolist() == weighted["j"].value.data.tolist()
    assert weighted["j_castell"].extras["se"].data.tolist() == weighted["j"].extras["se"].data.tolist()


CASTELL = """
spec "grr product"
variable a: categorical {x, y}
variable b: categorical {u, v, t}
mechanism ind = product(grr(a, epsilon = 1), grr(b, epsilon = 1))
query j = estimate joint(a, b) from ind by mom
query j_mle = estimate joint(a, b) from ind by mle
query j_castell = estimate joint(a, b) from ind by castell
"""


def test_releases_refuse_weights_and_queries_without_data_still_answer():
    spec = privspec.load(ROOT / "specs" / "university.privspec")
    res = spec.run(ROOT / "specs" / "data" / "university_released.csv", weights="w")
    assert res.failures["released"].diagnostics[0].code == "B040"
    assert "table queries of releases" in res.failures["released"].diagnostics[0].message
    assert "cells, not respondents" in res.failures["released"].diagnostics[0].message
    assert "budget" in res and "budget" not in res.failures
