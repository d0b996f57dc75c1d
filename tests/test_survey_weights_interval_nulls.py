"""Null interval reports (respondents who reported nothing) with survey weights (issue 37).
Without weights the estimators leave the nulls out; with weights they are left out as a
domain of the sample (``survey``'s ``subset``): the fit is the weighted pseudo-likelihood
of the rows that reported, and the jackknife is over every PSU of the design, a PSU whose
rows all reported nothing included (its replicate equals the full sample's estimate, but
it counts in ``n_h``).  Checked against the survey formulas written here row by row, against
duplicated rows for integer weights, and by a seeded coverage simulation under a cluster
sample with nulls.  (On main B040 refused every weighted estimate with a null report.)"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.optimize

import privspec
from privspec.backends.interval.estimators import representative_points

SPEC = """
spec "weighted interval survey with nulls"
variable y: continuous
population y ~ normal(0, 1)
mechanism m = interval(y, case1(uniform(-4, 4)))
mechanism sel = selective(m, tau = 1/10, rho = 1/2)
query mu = estimate mean(y) from sel by npmle
query pmu = estimate mean(y) from sel by mle(normal)
"""


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    s = privspec.load(SPEC)
    assert s.ok, s.render_diagnostics()
    return s


def cluster_sample(spec: privspec.Spec, seed: int, strata: int = 3, clusters: int = 10, size: int = 20,
                   null_share: float = 0.3) -> pd.DataFrame:
    """A stratified cluster sample (cluster effects N(0, 0.7^2), a weight per cluster) of
    Case-I reports, a share of them null at random and every row of cluster 0 of stratum 0
    null (a PSU with no report)."""
    rng = np.random.default_rng(seed)
    h = np.repeat(np.arange(strata), clusters * size)
    c = np.repeat(np.arange(strata * clusters), size)
    y = 0.3 * h + rng.normal(0, 0.7, strata * clusters)[c] + rng.normal(size=h.size)
    w = rng.choice([1.0, 2.0, 3.0], strata * clusters)[c]
    frame = pd.DataFrame({"y": y, "w": w, "region": h, "school": c % clusters})
    out = spec.privatize(frame, "m", seed=seed + 1000, keep=["w", "region", "school"])
    out.loc[(rng.uniform(size=len(out)) < null_share) | ((out["region"] == 0) & (out["school"] == 0)), "y"] = "null"
    return out


def case1_rows(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's anchor, whether it reported ``Y <= U``, and whether it reported at all."""
    seen = (frame["y"] != "null").to_numpy()
    ends = np.full((len(frame), 2), np.nan)
    ends[seen] = frame["y"][seen].str.strip("(]").str.split(",", expand=True).astype(float).to_numpy()
    below = np.isneginf(ends[:, 0])
    return np.where(below, ends[:, 1], ends[:, 0]), below, seen


def row_npmle_mean(anchor: np.ndarray, below: np.ndarray, w: np.ndarray) -> float:
    """The Case-I NPMLE mean from the rows with weight > 0: the weighted isotonic regression
    of the indicators on the anchors, each jump's mass at its interval's representative point."""
    keep = w > 0
    anchor, below, w = anchor[keep], below[keep], w[keep]
    a, where = np.unique(anchor, return_inverse=True)
    tot = np.bincount(where, weights=w)
    F = scipy.optimize.isotonic_regression(np.bincount(where, weights=w * below) / tot, weights=tot).x
    mass = np.diff(np.concatenate([[0.0], F, [1.0]]))
    ends = np.column_stack([np.concatenate([[-np.inf], a]), np.concatenate([a, [np.inf]])])
    on = mass > 0
    return float(np.sum(mass[on] * representative_points(ends[on])))


def row_normal_mle(anchor: np.ndarray, below: np.ndarray, w: np.ndarray) -> float:
    """The location of the weighted normal pseudo-MLE of Case-I rows (BFGS on the rows)."""
    from scipy.special import log_ndtr
    keep = w > 0
    u, b, w = anchor[keep], below[keep], w[keep]

    def nll(t):
        z = (u - t[0]) / np.exp(t[1])
        return -w @ np.where(b, log_ndtr(z), log_ndtr(-z)) / w.sum()

    return float(scipy.optimize.minimize(nll, np.zeros(2), method="BFGS", options={"gtol": 1e-11}).x[0])


def row_jkn_se(estimator, anchor, below, seen, w, h, c) -> tuple[float, float]:
    """The estimate on the rows that reported and its JKn standard error over every PSU
    (``survey``'s jackknife of a domain: a null row has weight 0 in each replicate's fit)."""
    wd = np.where(seen, w, 0.0)
    theta = estimator(anchor, below, wd)
    var = 0.0
    for s in np.unique(h):
        psus = np.unique(c[h == s])
        for j in psus:
            rw = wd.copy()
            rw[(h == s) & (c == j)] = 0.0
            rw[(h == s) & (c != j)] *= len(psus) / (len(psus) - 1)
            var += (len(psus) - 1) / len(psus) * (estimator(anchor, below, rw) - theta) ** 2
    return theta, float(np.sqrt(var))


def test_nulls_are_a_domain_of_the_design_row_by_row(spec):
    frame = cluster_sample(spec, 1)
    got = spec.run(frame, weights="w", strata="region", cluster="school")
    anchor, below, seen = case1_rows(frame)
    w, h, c = (frame[k].to_numpy() for k in ("w", "region", "school"))
    w = w.astype(float)
    theta, se = row_jkn_se(row_npmle_mean, anchor, below, seen, w, h, c)
    mu = got["mu"]
    assert mu.value == pytest.approx(theta, abs=1e-9)
    assert mu.extras["se"] == pytest.approx(se, rel=1e-7)
    assert "30 replicates" in mu.extras["se_method"]             # the PSU of nulls counts
    assert mu.extras["n"] == seen.sum() and mu.extras["n_null"] == (~seen).sum()
    assert mu.extras["weighted_n"] == pytest.approx(w[seen].sum())
    theta, se = row_jkn_se(row_normal_mle, anchor, below, seen, w, h, c)
    assert got["pmu"].value == pytest.approx(theta, abs=1e-6)
    assert got["pmu"].extras["se"] == pytest.approx(se, rel=1e-4)
    assert got["pmu"].extras["n_null"] == (~seen).sum()


def test_the_nulls_do_not_move_the_estimate_only_the_design(spec):
    """Dropping the null rows gives the same estimate; the standard error differs by the PSU of
    nulls alone (a stratum of 10 PSUs against 9)."""
    frame = cluster_sample(spec, 2)
    full = spec.run(frame, ["mu"], weights="w", strata="region", cluster="school")["mu"]
    dropped = spec.run(frame[frame["y"] != "null"], ["mu"], weights="w", strata="region", cluster="school")["mu"]
    assert full.value == pytest.approx(dropped.value, abs=1e-12)
    assert "n_null" not in dropped.extras and "29 replicates" in dropped.extras["se_method"]
    assert full.extras["se"] != pytest.approx(dropped.extras["se"], rel=1e-6)


def test_integer_weights_are_duplicated_rows(spec):
    frame = cluster_sample(spec, 3)
    weighted = spec.run(frame, weights="w")
    copies = frame.loc[frame.index.repeat(frame["w"].astype(int))].reset_index(drop=True)
    plain = spec.run(copies)
    for q in ("mu", "pmu"):
        assert weighted[q].value == pytest.approx(plain[q].value, abs=1e-7), q
    assert weighted["mu"].extras["n_null"] == (frame["y"] == "null").sum()
    assert plain["mu"].extras["n_null"] == (copies["y"] == "null").sum()


def test_replicate_weights_read_the_nulls_the_same_way(spec):
    """JK1 replicate columns, one per deleted cluster (one stratum), the cluster of nulls
    among them: the same standard error as the jackknife privspec makes from the clusters."""
    frame = cluster_sample(spec, 4, strata=1, clusters=12)
    for j in range(12):
        frame[f"rw{j:02d}"] = np.where(frame["school"] == j, 0.0, frame["w"] * 12 / 11)
    a = spec.run(frame, ["mu"], weights="w", cluster="school")["mu"]
    b = spec.run(frame, ["mu"], weights="w", replicate_weights="rw*", replicate_type="jk1")["mu"]
    assert b.value == pytest.approx(a.value, abs=1e-12) and b.extras["se"] == pytest.approx(a.extras["se"], rel=1e-9)
    assert b.extras["n_null"] == a.extras["n_null"] > 0


def test_the_back_end_has_no_refusal_for_nulls_left():
    import privspec.backends.interval.estimate as estimate
    assert not hasattr(estimate, "refuse_null_reports")


@pytest.mark.slow
def test_design_intervals_cover_with_nulls_under_a_cluster_sample(spec):
    """200 seeded stratified cluster samples with 30% null reports at random: the design-based
    interval of the NPMLE mean covers the population mean 0.3 within 3 binomial standard
    errors (0.0154) of 0.95."""
    hits = []
    for seed in range(200):
        frame = cluster_sample(spec, 100 + seed)
        d = spec.run(frame, ["mu"], weights="w", strata="region", cluster="school")["mu"]
        hits.append(d.extras["ci95"][0] <= 0.3 <= d.extras["ci95"][1])
    assert abs(np.mean(hits) - 0.95) <= 3 * np.sqrt(0.95 * 0.05 / 200), np.mean(hits)
