"""The two-group designs' regression (uqm, cdm, sld) with survey weights, strata and
clusters (issue 37): the weighted pseudo-likelihood's ``(b, phi)`` and their linearized
covariance, checked against svyglm's formulas written here row by row (a general optimizer
on the row-level weighted pseudo-likelihood, numerical derivatives, the stratified PSU
variance), integer weights against duplicated rows, weights of 1 against the unweighted
fit, and by a seeded coverage simulation under a cluster sample."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.optimize

import privspec

P = {"first": 0.2, "second": 0.8}


def spec_of(kind: str) -> privspec.Spec:
    unrelated = ", unrelated = u" if kind == "uqm" else ""
    return privspec.load(f"""
variable y: categorical {{yes, no}}
variable g: categorical {{first, second}}
variable u: categorical {{yes, no}}
variable age: continuous
mechanism m = {kind}(y, p1 = 0.2, p2 = 0.8, group = g{unrelated})
query reg = estimate regression(y ~ age) from m by mle(logistic)
""")


def yes_probability(kind: str, phi: float, p: np.ndarray, s: np.ndarray) -> np.ndarray:
    """P(yes) of a row whose trait's probability is ``s``, group probability ``p``: RRreg's
    channels written out (independently of the back end's channel_parts)."""
    if kind == "uqm":
        return (p + (1 - p) * phi) * s + (1 - p) * phi * (1 - s)
    if kind == "cdm":
        return (1 - phi) * s + (1 - phi) * p * (1 - s)
    return phi * s + (1 - p) * (1 - s)


def cluster_sample(kind: str, seed: int, clusters: int = 40, size: int = 40, phi: float = 0.7) -> pd.DataFrame:
    """4 strata of clustered respondents: the cluster shifts the covariate; the weights are
    constant within a cluster; the trait's log odds -0.5 + age (RR's second category 'no':
    the coefficients' log odds of no are 0.5 - age)."""
    rng = np.random.default_rng(seed)
    school = np.repeat(np.arange(clusters), size)
    age = rng.normal(size=school.size) + rng.normal(size=clusters)[school]
    grp = rng.integers(0, 2, school.size)
    p = np.array([P["first"], P["second"]])[grp]
    s = 1 / (1 + np.exp(0.5 - age))
    yes = rng.random(school.size) < yes_probability(kind, phi, p, s)
    w = rng.choice([1.0, 2.0, 4.0], clusters)[school]
    return pd.DataFrame({"y": np.where(yes, "yes", "no"), "g": np.array(["first", "second"])[grp], "age": age,
                         "w": w, "school": school, "region": school % 4})


def survey_reference(kind: str, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """svyglm's pseudo-MLE and linearized covariance of (b0, b1, phi), row by row."""
    X = np.column_stack([np.ones(len(frame)), frame["age"].to_numpy(float)])
    yes = (frame["y"] == "yes").to_numpy()
    p = frame["g"].map(P).to_numpy(float)
    w = frame["w"].to_numpy(float)

    def logq(t):
        s = 1 / (1 + np.exp(X @ t[:2]))            # the trait (first category): log odds of 'no' are X b
        py = yes_probability(kind, t[2], p, s)
        return np.log(np.where(yes, py, 1 - py))

    t = scipy.optimize.minimize(lambda t: -w @ logq(t) / w.sum(), np.array([0.0, 0.0, 0.5]), method="L-BFGS-B",
                                bounds=[(None, None), (None, None), (1e-6, 1 - 1e-6)],
                                options={"gtol": 1e-13, "ftol": 1e-15, "maxiter": 10000}).x
    # polish by Newton on numerical derivatives (the optimizer stops short of 1e-6 in the coefficients)
    h = 1e-4
    E = np.eye(3) * h

    def grad(t):
        return np.array([w @ (logq(t + e) - logq(t - e)) / (2 * h) for e in E])
    for _ in range(5):
        H = np.array([(grad(t + e) - grad(t - e)) / (2 * h) for e in E])
        t = t - np.linalg.solve(H, grad(t))
    U = np.column_stack([(logq(t + e) - logq(t - e)) / (2 * h) for e in E])
    H = -np.array([(grad(t + e) - grad(t - e)) / (2 * h) for e in E])
    psi = U @ np.linalg.inv((H + H.T) / 2).T
    stratum, psu = frame["region"].to_numpy(), frame["school"].to_numpy()
    V = np.zeros((3, 3))
    for st in np.unique(stratum):
        z = np.array([(w[:, None] * psi)[(stratum == st) & (psu == c)].sum(axis=0)
                      for c in np.unique(psu[stratum == st])])
        d = z - z.mean(axis=0)
        V += len(z) / (len(z) - 1) * d.T @ d
    return t, V


def flat(r) -> tuple[np.ndarray, np.ndarray]:
    """(coefficients, phi) and their standard errors from a result."""
    (name, par), = r.extras["parameters"].items()
    return (np.append(np.asarray(r.value.values, float), par["estimate"]),
            np.append(np.asarray(r.extras["se"].values, float), par["se"]))


@pytest.mark.parametrize("kind", ["uqm", "cdm", "sld"])
def test_coefficients_and_covariance_are_svyglm_s_row_by_row(kind):
    frame = cluster_sample(kind, 1)
    got = spec_of(kind).run(frame, weights="w", strata="region", cluster="school")["reg"]
    est, se = flat(got)
    t, V = survey_reference(kind, frame)
    assert est == pytest.approx(t, rel=1e-6, abs=1e-8)
    assert se == pytest.approx(np.sqrt(np.diag(V)), rel=1e-4)
    assert got.extras["se_kind"] == "design-based (Taylor linearization)"
    assert got.extras["psus"] == 40 and got.extras["strata"] == 4
    assert got.extras["weighted_n"] == pytest.approx(frame["w"].sum())
    assert "lr_test" not in got.extras and got.extras["ci_method"].endswith("design-based")
    assert got.extras["wald_test"]["df"] == 1 and got.extras["wald_test"]["p_value"] < 0.05
    assert len(got.extras["deff"].values) == 2


def test_integer_weights_equal_duplicated_rows():
    spec = spec_of("sld")
    frame = cluster_sample("sld", 2).reset_index(drop=True)
    copies = np.random.default_rng(5).integers(1, 4, len(frame))
    frame["k"] = copies.astype(float)
    long = frame.loc[frame.index.repeat(copies)]
    a, b = spec.run(frame, weights="k")["reg"], spec.run(long)["reg"]
    ea, _ = flat(a)
    eb, _ = flat(b)
    assert ea == pytest.approx(eb, rel=1e-9, abs=1e-12)


def test_weights_of_one_give_the_unweighted_fit():
    spec = spec_of("uqm")
    frame = cluster_sample("uqm", 3).assign(one=1.0)
    ew, sw = flat(spec.run(frame, weights="one")["reg"])
    eu, su = flat(spec.run(frame)["reg"])
    assert ew == pytest.approx(eu, rel=1e-9, abs=1e-12)
    # each row its own PSU: the sandwich, near the observed information's SEs at this n
    assert np.all(np.abs(sw / su - 1) < 0.15), sw / su


def test_jk1_replicates_agree_with_linearization():
    spec = spec_of("cdm")
    frame = cluster_sample("cdm", 4)
    C = 40
    for j in range(C):
        frame[f"rw{j:02d}"] = np.where(frame["school"] == j, 0.0, frame["w"] * C / (C - 1))
    lin = spec.run(frame, weights="w", cluster="school")["reg"]
    rep = spec.run(frame, weights="w", replicate_weights="rw*", replicate_type="jk1")["reg"]
    (el, sl), (er, sr) = flat(lin), flat(rep)
    assert er == pytest.approx(el, abs=1e-10)
    assert np.all(np.abs(sr / sl - 1) < 0.15), sr / sl
    assert rep.extras["replicates"] == C


@pytest.mark.slow
def test_design_intervals_cover_under_a_cluster_sample():
    """300 seeded weighted cluster samples of the stochastic lie detector: the design-based
    intervals of the slope and of t cover the truth within 3 simulation SEs of 95%."""
    spec = spec_of("sld")
    R = 300
    hits = np.zeros((R, 2), dtype=bool)
    for i in range(R):
        frame = cluster_sample("sld", 1000 + i)
        r = spec.run(frame, weights="w", strata="region", cluster="school")["reg"]
        lo, hi = r.extras["ci95"]["age"]
        plo, phi_hi = r.extras["parameters"]["t"]["ci95"]
        hits[i] = [lo <= -1.0 <= hi, plo <= 0.7 <= phi_hi]
    tol = 3 * np.sqrt(0.95 * 0.05 / R)
    assert np.all(np.abs(hits.mean(axis=0) - 0.95) < tol), hits.mean(axis=0)


def test_phi_on_its_bound_has_no_design_based_se():
    """t at 1: the coefficients linearized with t held there (finite SEs), t without an SE."""
    frame = cluster_sample("sld", 1, phi=1.0, clusters=8, size=25)
    r = spec_of("sld").run(frame, weights="w", cluster="school")["reg"]
    par = r.extras["parameters"]["t"]
    assert par["estimate"] == 1.0 and np.isnan(par["se"])
    assert np.all(np.isfinite(np.asarray(r.extras["se"].values, float)))
    assert "held there" in r.extras["note"]
