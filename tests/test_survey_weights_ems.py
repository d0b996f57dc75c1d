"""Square wave's EMS distribution with survey weights (issue 37): the EM on the sums of
weights per report, checked against the same EM written here on the row-level reports (a
weighted bincount of every row's output bucket), integer weights against duplicated rows,
and a biased sample that the weights correct.  The EMS has no standard error without
weights, and it has none with them (no deff): the result says so."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import privspec
from privspec.backends.numeric.ems import transition
from privspec.backends.numeric.mechanisms import SquareWave

SPEC = """
variable y: continuous [0, 1]
mechanism S = square_wave(y, epsilon = 2)
query f = estimate cdf(y) from S by ems
"""
BUCKETS = 64


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    s = privspec.load(SPEC)
    assert s.ok, s.render_diagnostics()
    return s


def biased_sample(spec: privspec.Spec, seed: int, n: int = 6000) -> pd.DataFrame:
    """Y ~ Beta(2, 5); the values above 0.3 kept at a quarter the rate and weighted 4, in
    clusters of 20 rows within 3 strata."""
    rng = np.random.default_rng(seed)
    y = rng.beta(2, 5, n)
    keep = (y <= 0.3) | (rng.uniform(size=n) < 0.25)
    y = y[keep]
    frame = pd.DataFrame({"y": y, "w": np.where(y > 0.3, 4.0, 1.0)})
    frame["school"] = np.arange(len(frame)) // 20
    frame["region"] = frame["school"] % 3
    return spec.privatize(frame, "S", seed=seed + 1, keep=["w", "school", "region"])


def row_level_ems(reports: np.ndarray, w: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """Li et al.'s EMS on the rows: each row's output bucket, the weighted shares of the
    buckets, EM steps x <- x M^T(s / M x) then the (1, 2, 1)/4 smoothing, stopped when the
    mean log likelihood changes by less than tol."""
    sw = SquareWave(2.0)
    M = transition(sw, BUCKETS)
    bucket = np.minimum(np.floor((reports + sw.b) / (1 + 2 * sw.b) * BUCKETS), BUCKETS - 1).astype(int)
    share = np.array([w[bucket == j].sum() for j in range(BUCKETS)]) / w.sum()
    x, last = np.full(BUCKETS, 1 / BUCKETS), -np.inf
    for _ in range(10_000):
        x = x * (M.T @ (share / (M @ x)))
        x = np.convolve(np.r_[x[0], x, x[-1]], [0.25, 0.5, 0.25], mode="valid")
        x /= x.sum()
        ll = share @ np.log(M @ x)
        if abs(ll - last) < tol:
            return x
        last = ll
    raise AssertionError("no convergence")


def test_weighted_ems_is_the_row_level_weighted_em(spec):
    frame = biased_sample(spec, 3)
    got = spec.run(frame, weights="w", strata="region", cluster="school")["f"]
    want = row_level_ems(frame["y"].to_numpy(float), frame["w"].to_numpy(float))
    assert np.asarray(got.value.values, float) == pytest.approx(want, rel=1e-6, abs=1e-9)
    assert got.extras["n"] == len(frame) and got.extras["weighted_n"] == pytest.approx(frame["w"].sum())
    assert got.extras["strata"] == 3 and got.extras["psus"] == frame["school"].nunique()
    assert "clusters school" in got.extras["design"] and "no standard error" in got.extras["note"]
    assert "se" not in got.extras and got.extras["converged"]


def test_integer_weights_are_duplicated_rows(spec):
    frame = biased_sample(spec, 4, n=3000)
    weighted = spec.run(frame, weights="w")["f"]
    copies = frame.loc[frame.index.repeat(frame["w"].astype(int))]
    plain = spec.run(copies[["y"]])["f"]
    assert np.asarray(weighted.value.values, float) == pytest.approx(np.asarray(plain.value.values, float),
                                                                      rel=1e-9, abs=1e-12)
    assert weighted.extras["iterations"] == plain.extras["iterations"]


def test_the_weights_correct_a_biased_sample(spec):
    """The sample over-represents Y <= 0.3 fourfold: the weighted EMS's distribution function
    within 0.06 of Beta(2, 5)'s at every edge, the unweighted one off by more than 0.15."""
    frame = biased_sample(spec, 5, n=40_000)
    edges = np.linspace(0, 1, BUCKETS + 1)[1:]
    truth = stats.beta(2, 5).cdf(edges)
    weighted = np.cumsum(spec.run(frame, weights="w", cluster="school")["f"].value.values)
    plain = np.cumsum(spec.run(frame[["y"]])["f"].value.values)
    assert np.max(np.abs(weighted - truth)) < 0.06
    assert np.max(np.abs(plain - truth)) > 0.15


def test_replicate_weights_give_the_full_sample_fit(spec):
    frame = biased_sample(spec, 6, n=2000)
    frame["r1"], frame["r2"] = frame["w"] * 2, frame["w"] * 0.5
    with_replicates = spec.run(frame, weights="w", replicate_weights=["r1", "r2"], replicate_type="jk1")["f"]
    plain = spec.run(frame, weights="w")["f"]
    assert np.asarray(with_replicates.value.values) == pytest.approx(np.asarray(plain.value.values), rel=1e-12)


def test_the_back_end_has_a_weighted_version():
    from privspec.backends.numeric.backend import NumericBackend
    q = privspec.load(SPEC).model.queries["f"]
    assert NumericBackend().weighted(q) == ""
