"""Survey weights, strata, clusters and replicate weights for RRreg's two-group designs
(issue 37): the Hajek version of the uqm, cdm and sld estimates against the survey
package's formulas written here row by row (each group's weighted yes share, the closed
form, the ratio's influence totalled per PSU), integer weights against duplicated rows,
equal weights against the unweighted fit, and a seeded coverage check under a stratified
cluster sample.  And the prediction risk a compare shows for them, against an enumeration
of the respondents' draws.  (On main the estimates refuse weights with B040 and compare's
prediction is n/a for these designs.)"""
from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

import privspec
from survey_reference import svy_covariance
from privspec.cli import main

P1, P2 = 0.3, 0.7
SPEC = f"""
spec "weighted two-group designs"
variable trait: categorical {{yes, no}}
variable grp: categorical {{g1, g2}}
variable spring: categorical {{yes, no}}
population trait ~ categorical(0.3, 0.7, cheaters = 0.1)
population grp ~ categorical(0.5, 0.5)
mechanism c = cdm(trait, p1 = {P1}, p2 = {P2}, group = grp)
mechanism s = sld(trait, p1 = {P1}, p2 = {P2}, group = grp)
mechanism u = uqm(trait, p1 = {P1}, p2 = {P2}, group = grp, unrelated = spring)
query cdm_share = estimate distribution(trait) from c by mle
query cdm_cheat = estimate cheaters(trait) from c by mle
query sld_share = estimate distribution(trait) from s by mle
query sld_honest = estimate honesty(trait) from s by mle
query uqm_share = estimate distribution(trait) from u by mle
"""
#: each query's design
KIND = {"cdm_share": "cdm", "cdm_cheat": "cdm", "sld_share": "sld", "sld_honest": "sld", "uqm_share": "uqm"}


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    return privspec.load(SPEC)


def answers(kind: str, carrier: np.ndarray, group: np.ndarray, rng: np.random.Generator, cheat: float = 0.1,
            honesty: float = 0.8, unrelated: float = 0.4) -> np.ndarray:
    """Each respondent's yes, drawn as the design's story tells it (group 1 draws with p2):
    cdm: forced yes with p_g, else the truth, cheaters no; sld: honest carriers yes, the
    others yes with 1 - p_g (dishonest carriers no); uqm: the sensitive question with p_g,
    else the unrelated one (its own yes share)."""
    n = len(carrier)
    p = np.where(group == 1, P2, P1)
    draw = rng.random(n) < p
    if kind == "cdm":
        return ~(rng.random(n) < cheat) & (draw | carrier)
    if kind == "sld":
        return np.where(carrier, rng.random(n) < honesty, ~draw)
    return np.where(draw, carrier, rng.random(n) < unrelated)


def clustered_sample(kind: str, seed: int, strata: int = 3, clusters: int = 8, size: int = 25,
                     concentration: float = 6.0) -> pd.DataFrame:
    """A stratified cluster sample: each cluster its own share of carriers (a beta around its
    stratum's), a weight per cluster, each respondent's group drawn half and half."""
    rng = np.random.default_rng(seed)
    parts = []
    for h in range(strata):
        mean = 0.25 + 0.1 * h
        for c in range(clusters):
            rate = rng.beta(concentration * mean, concentration * (1 - mean))
            carrier = rng.random(size) < rate
            group = rng.integers(0, 2, size)
            yes = answers(kind, carrier, group, rng)
            parts.append(pd.DataFrame({"trait": np.where(yes, "yes", "no"), "grp": np.where(group == 1, "g2", "g1"),
                                       "weight": rng.uniform(0.5, 3.0) * (1 + h), "region": f"R{h}",
                                       "school": f"S{c}"}))
    return pd.concat(parts, ignore_index=True)


# ---- the survey formulas, row by row ---------------------------------------------------------------------
def closed_form(kind: str) -> tuple[np.ndarray, np.ndarray]:
    """``lambda = a + A theta`` of each design, written from its story: uqm ``p pi + (1 - p)
    pi_u``; cdm ``pi + p beta``; sld ``pi t + (1 - pi)(1 - p)`` with ``h = pi t``."""
    p = np.array([P1, P2])
    if kind == "uqm":
        return np.zeros(2), np.column_stack([p, 1 - p])
    if kind == "cdm":
        return np.zeros(2), np.column_stack([np.ones(2), p])
    return 1 - p, np.column_stack([-(1 - p), np.ones(2)])


def parameters(kind: str, theta: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The reported parameters, their values and gradients in theta."""
    if kind == "uqm":
        return ["pi", "pi_unrelated"], theta.copy(), np.eye(2)
    if kind == "cdm":
        return ["pi", "beta", "gamma"], np.array([*theta, 1 - theta.sum()]), np.array([[1, 0], [0, 1], [-1, -1.0]])
    pi, h = theta
    return ["pi", "t"], np.array([pi, h / pi]), np.array([[1, 0], [-h / pi ** 2, 1 / pi]])


def hajek(kind: str, df: pd.DataFrame, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Row by row: theta from each group's weighted yes share, its influence per row, the yes
    shares and the groups' sums of weights."""
    y = (df["trait"] == "yes").to_numpy(float)
    g = (df["grp"] == "g2").to_numpy(int)
    N = np.array([weight[g == k].sum() for k in (0, 1)])
    lam = np.array([weight[(g == k)].dot(y[g == k]) for k in (0, 1)]) / N
    a, A = closed_form(kind)
    theta = np.linalg.solve(A, lam - a)
    e = np.zeros((len(df), 2))
    e[np.arange(len(df)), g] = (y - lam[g]) / N[g]
    z = np.linalg.solve(A, e.T).T
    return theta, z, lam, N


def survey_parameters(kind: str, df: pd.DataFrame, strata: bool, cluster: bool) -> dict[str, tuple[float, float, float]]:
    """Each parameter's Hajek estimate, linearized se and deff (over the expected information
    at the estimate with the groups' weighted shares of n)."""
    w = df["weight"].to_numpy(float)
    theta, z, lam, N = hajek(kind, df, w)
    h = df["region"].to_numpy() if strata else np.zeros(len(df))
    # nest = TRUE: a cluster label is a PSU within its stratum (without strata, within the table)
    c = (df["region"] + df["school"] if strata else df["school"]).to_numpy() if cluster else np.arange(len(df))
    V = svy_covariance(z, w, h, c)
    names, values, G = parameters(kind, theta)
    _, A = closed_form(kind)
    Ainv = np.linalg.inv(A)
    srs = Ainv @ np.diag(lam * (1 - lam) / (len(df) * N / N.sum())) @ Ainv.T
    P, S = G @ V @ G.T, G @ srs @ G.T
    return {k: (values[i], math.sqrt(P[i, i]), P[i, i] / S[i, i]) for i, k in enumerate(names)}


# ---- the checks -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["cdm", "sld", "uqm"])
@pytest.mark.parametrize("strata,cluster", [(True, True), (False, True), (True, False), (False, False)])
def test_the_estimate_and_its_design_based_se_are_the_survey_formulas(spec, kind, strata, cluster):
    df = clustered_sample(kind, seed=11)
    query = f"{kind}_share"
    r = spec.run(df, queries=[query], weights="weight", strata="region" if strata else None,
                 cluster="school" if cluster else None, engine="pandas")[query]
    want = survey_parameters(kind, df, strata, cluster)
    assert "boundary" not in r.extras["note"]
    for name, (value, se, deff) in want.items():
        got = r.extras["parameters"][name]
        assert got["estimate"] == pytest.approx(value, rel=1e-9), name
        assert got["se"] == pytest.approx(se, rel=1e-9), name
        assert got["deff"] == pytest.approx(deff, rel=1e-9), name
    pi, se, deff = want["pi"]
    assert np.allclose(r.value.values, [pi, 1 - pi], rtol=1e-9)
    assert np.allclose(r.extras["se"].values, [se, se], rtol=1e-9)
    assert np.allclose(np.asarray(r.cov_params(), float), [[se ** 2, -se ** 2], [-se ** 2, se ** 2]], rtol=1e-9)
    assert r.extras["deff"].values[0] == pytest.approx(deff, rel=1e-9)
    assert r.extras["weighted_n"] == pytest.approx(df["weight"].sum(), rel=1e-12)
    assert r.extras["psus"] == ((24 if strata else 8) if cluster else len(df)) and r.extras["strata"] == (3 if strata else 1)


@pytest.mark.parametrize("query, name", [("cdm_cheat", "gamma"), ("sld_honest", "t")])
def test_a_latent_share_is_its_parameter_with_the_design_based_se(spec, query, name):
    df = clustered_sample(KIND[query], seed=3)
    r = spec.run(df, queries=[query], weights="weight", strata="region", cluster="school", engine="pandas")[query]
    value, se, deff = survey_parameters(KIND[query], df, True, True)[name]
    assert r.value == pytest.approx(value, rel=1e-9) and r.extras["se"] == pytest.approx(se, rel=1e-9)
    assert r.extras["deff"] == pytest.approx(deff, rel=1e-9)
    assert r.extras["ci95"] == pytest.approx([max(0, value - 1.959963984540054 * se), min(1, value + 1.959963984540054 * se)])


@pytest.mark.parametrize("kind", ["cdm", "sld", "uqm"])
def test_replicate_weights_refit_each_replicate(spec, kind):
    """JK1 weights from the clusters (one deleted at a time, the others scaled up): each
    parameter's variance is ``(R - 1) / R sum_r (theta_r - theta)^2`` over the replicates'
    row-level Hajek estimates."""
    df = clustered_sample(kind, seed=17, strata=1, clusters=12, size=50)
    schools = sorted(df["school"].unique())
    R = len(schools)
    for r, s in enumerate(schools):
        df[f"rw{r}"] = np.where(df["school"] == s, 0.0, df["weight"] * R / (R - 1))
    query = f"{kind}_share"
    got = spec.run(df, queries=[query], weights="weight", replicate_weights="rw*", replicate_type="jk1",
                   engine="pandas")[query]
    w = df["weight"].to_numpy(float)
    names, full, _ = parameters(kind, hajek(kind, df, w)[0])
    reps = np.array([parameters(kind, hajek(kind, df, df[f"rw{r}"].to_numpy(float))[0])[1] for r in range(R)])
    var = (R - 1) / R * ((reps - full) ** 2).sum(axis=0)
    for i, name in enumerate(names):
        assert got.extras["parameters"][name]["estimate"] == pytest.approx(full[i], rel=1e-9)
        assert got.extras["parameters"][name]["se"] == pytest.approx(math.sqrt(var[i]), rel=1e-9), name
    assert got.extras["replicates"] == R and "replicate weights" in got.extras["note"]


def test_integer_weights_are_duplicated_rows(spec):
    rng = np.random.default_rng(5)
    for kind in ("cdm", "sld", "uqm"):
        df = clustered_sample(kind, seed=7)[["trait", "grp"]]
        df["weight"] = rng.integers(1, 4, len(df))
        dup = df.loc[df.index.repeat(df["weight"])].reset_index(drop=True)
        query = f"{kind}_share"
        weighted = spec.run(df, queries=[query], weights="weight", engine="pandas")[query]
        plain = spec.run(dup[["trait", "grp"]], queries=[query], engine="pandas")[query]
        assert "boundary" not in weighted.extras["note"]       # the closed form (the boundary's search is to 1e-12)
        for name, p in plain.extras["parameters"].items():
            assert weighted.extras["parameters"][name]["estimate"] == pytest.approx(p["estimate"], rel=1e-12), name
        assert weighted.extras["weighted_n"] == len(dup) and weighted.extras["n"] == len(df)


def test_weights_of_one_give_the_unweighted_fit_and_its_se_up_to_n_over_n_minus_1(spec):
    """Each row its own PSU, weights 1: the linearized variance of a group's yes share is
    ``lambda (1 - lambda) / n_g`` times ``n / (n - 1)``: the unweighted standard error's, so
    the design effect is ``n / (n - 1)`` (with the groups' own sizes: the simple random
    sample's at the observed split is the one the unweighted se takes)."""
    for kind in ("cdm", "sld", "uqm"):
        df = clustered_sample(kind, seed=7)[["trait", "grp"]].assign(weight=1.0)
        n = len(df)
        query = f"{kind}_share"
        plain = spec.run(df, queries=[query], engine="pandas")[query]
        weighted = spec.run(df, queries=[query], weights="weight", engine="pandas")[query]
        assert "boundary" not in weighted.extras["note"]
        for name, p in plain.extras["parameters"].items():
            got = weighted.extras["parameters"][name]
            assert got["estimate"] == pytest.approx(p["estimate"], rel=1e-12), name
            assert got["se"] ** 2 == pytest.approx(p["se"] ** 2 * n / (n - 1), rel=1e-9), name
            assert got["deff"] == pytest.approx(n / (n - 1), rel=1e-9), name


def test_engines_agree_and_the_cli_shows_the_design_effect(spec, tmp_path):
    df = clustered_sample("cdm", seed=7)
    path = tmp_path / "reports.csv"
    df.to_csv(path, index=False)
    options = dict(queries=["cdm_share", "cdm_cheat"], weights="weight", strata="region", cluster="school")
    frame = spec.run(df, engine="pandas", **options)
    duck = spec.run(path, engine="duckdb", **options)
    for q in options["queries"]:
        assert frame[q].extras["parameters"] == duck[q].extras["parameters"]
    spec_path = tmp_path / "s.privspec"
    spec_path.write_text(SPEC)
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(spec_path), "--data", str(path), "--weights", "weight", "--strata", "region",
                 "--cluster", "school", "--query", "cdm_cheat"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert "deff = " in out.getvalue() and "design = weights weight, strata region, clusters school" in out.getvalue()


def test_a_group_without_weight_and_a_stratum_with_one_psu_are_refused(spec):
    df = clustered_sample("cdm", seed=2)
    df.loc[df["grp"] == "g2", "weight"] = 0.0
    d = spec.run(df, queries=["cdm_share"], weights="weight", engine="pandas").failures["cdm_share"].diagnostics[0]
    assert d.code == "D020" and "g2" in d.message and "weight" in d.message
    df = clustered_sample("cdm", seed=2)
    df.loc[df["region"] == "R1", "school"] = "S0"
    d = spec.run(df, queries=["cdm_share"], weights="weight", strata="region", cluster="school",
                 engine="pandas").failures["cdm_share"].diagnostics[0]
    assert d.code == "D071"


@pytest.mark.slow
def test_the_design_intervals_cover_under_a_cluster_sample(spec):
    """Seeded: 400 stratified cluster samples of the cheating-detection model (strata with
    their own share of carriers and weight, clusters with their own share around it); the
    truth the weighted population's honest carriers and its cheaters.  Each 95% interval's
    coverage within 3 Monte Carlo standard errors of 0.95.  40 PSUs a stratum: with 12 (of
    30 rows) the z interval covered 0.92 (a variance estimated from 36 PSUs of strongly
    alike respondents has too few degrees of freedom for z), though the mean of the
    linearized variances matched the estimates' variance within 1%."""
    rng = np.random.default_rng(2026)
    means, weights, gamma = np.array([0.2, 0.3, 0.45]), np.array([1.0, 2.0, 4.0]), 0.1
    clusters, size, reps = 40, 10, 400
    share = weights / weights.sum()          # equal sample sizes per stratum: the strata's weight shares
    truth = {"pi": float(share @ means) * (1 - gamma), "gamma": gamma}
    hits = {k: 0 for k in truth}
    for _ in range(reps):
        parts = []
        for h in range(3):
            rate = np.repeat(rng.beta(8 * means[h], 8 * (1 - means[h]), clusters), size)
            carrier = rng.random(clusters * size) < rate
            group = rng.integers(0, 2, clusters * size)
            yes = answers("cdm", carrier, group, rng, cheat=gamma)
            parts.append(pd.DataFrame({"trait": np.where(yes, "yes", "no"), "grp": np.where(group == 1, "g2", "g1"),
                                       "weight": weights[h], "region": h,
                                       "school": np.repeat(np.arange(clusters), size)}))
        df = pd.concat(parts, ignore_index=True)
        r = spec.run(df, queries=["cdm_share"], weights="weight", strata="region", cluster="school",
                     engine="pandas")["cdm_share"]
        for k, t in truth.items():
            lo, hi = r.extras["parameters"][k]["ci95"]
            hits[k] += lo <= t <= hi
    for k, h in hits.items():
        cover = h / reps
        assert abs(cover - 0.95) < 3 * math.sqrt(0.95 * 0.05 / reps), (k, cover)


# ---- compare's prediction ---------------------------------------------------------------------------------
def enumerated_prediction(kind: str, p: float, w: tuple[float, float], cheat: float = 0.0, honesty: float = 1.0,
                          unrelated: float = 0.0) -> float:
    """Def. 7's ``R = sum over (group, answer) of max_x Pr(X = x, group, answer)``, the joint
    law enumerated over every respondent type and every draw of the randomizer as
    :func:`answers` tells the story."""
    joint: dict[tuple[int, bool], np.ndarray] = {}
    for g, (wg, pg) in enumerate(zip(w, (P1, P2))):
        for x, px in ((0, p), (1, 1 - p)):
            carrier = x == 0
            # (probability, answer) of each branch of the respondent's story
            if kind == "cdm":
                branches = [(cheat, False), ((1 - cheat) * pg, True), ((1 - cheat) * (1 - pg), carrier)]
            elif kind == "sld":
                branches = ([(honesty, True), (1 - honesty, False)] if carrier else [(pg, False), (1 - pg, True)])
            else:
                branches = [(pg, carrier), ((1 - pg) * unrelated, True), ((1 - pg) * (1 - unrelated), False)]
            for prob, yes in branches:
                joint.setdefault((g, yes), np.zeros(2))[x] += wg * px * prob
    return float(sum(v.max() for v in joint.values()))


@pytest.mark.parametrize("kind, latent, truth", [
    ("cdm", "cheaters = 0.1", dict(cheat=0.1)), ("cdm", "", {}), ("sld", "honesty = 0.8", dict(honesty=0.8)),
    ("sld", "", {}), ("uqm", "", dict(unrelated=0.4))])
def test_prediction_is_the_enumerated_best_guess(kind, latent, truth):
    extra = f", {latent}" if latent else ""
    unrelated = ", unrelated = spring" if kind == "uqm" else ""
    text = f"""variable trait: categorical {{yes, no}}
variable grp: categorical {{g1, g2}}
variable spring: categorical {{yes, no}}
population trait ~ categorical(0.3, 0.7{extra})
population grp ~ categorical(0.4, 0.6)
population spring ~ categorical(0.4, 0.6)
mechanism m = {kind}(trait, p1 = {P1}, p2 = {P2}, group = grp{unrelated})
query leak = leakage(m, prediction)
compare d for distribution(trait) at n = 1000 {{
    two = {kind}(trait, p1 = {P1}, p2 = {P2}, group = grp{unrelated})
    warner = rr(trait, matrix [[0.8, 0.2], [0.2, 0.8]])
}} by prediction, epsilon
"""
    s = privspec.load(text)
    want = enumerated_prediction(kind, 0.3, (0.4, 0.6), **truth)
    r = s.analyze()["leak"]
    assert r.value["prediction"] == pytest.approx(want, rel=1e-12)
    assert 0.7 <= want <= 1.0
    doc = s.compare(reps=0)["d"].value.to_dict()
    two = next(c for c in doc["candidates"] if c["name"] == "two")
    assert two["values"]["prediction"]["value"] == pytest.approx(want, rel=1e-12)


def test_prediction_of_the_cheating_model_counts_the_cheaters_no():
    """10% cheaters at 30% carriers: a no in the first group is a non-carrier's or a cheater's;
    a yes is ``0.3 * 0.9`` carrier against ``0.7 * 0.9 * 0.3`` non-carrier: guess yes -> carrier.
    So R = sum_g w_g (0.3 * 0.9 + max over no of the two)."""
    want = 0.5 * ((0.3 * 0.9 + 0.7 * (0.1 + 0.9 * 0.7)) + (max(0.3 * 0.9, 0.7 * 0.9 * 0.7) + 0.7 * (0.1 + 0.9 * 0.3)))
    assert enumerated_prediction("cdm", 0.3, (0.5, 0.5), cheat=0.1) == pytest.approx(want)
    s = privspec.load(SPEC + "query leak = leakage(c, prediction)\n")
    assert s.analyze()["leak"].value["prediction"] == pytest.approx(want, rel=1e-12)
