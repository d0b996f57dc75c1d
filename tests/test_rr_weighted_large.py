"""Survey weights for castell on tables past the Jacobian's limit (issue 37): per-cell
design-based variances with ``U = (x) K_k^-1`` never formed.  Checked against the small
path (``U`` formed, the full design covariance) forced through the large one, with strata
and clusters and with JK1 replicates; a table of 3^8 = 6,561 cells (past 4,096 x 4,096)
runs with weights, and integer weights equal duplicated rows there.

Measured (not a timed test; bench/rr_weighted_large.py): 3^12 = 531,441 cells, 50 PSUs in
2 strata, 5,000 rows: 0.6-1.1 s and 38 MiB above the inputs (load 3-4),
see docs/scale.md."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.backends.rr import weighted

from tests.test_rr_weighted import SPEC, arr, clustered_sample


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    return privspec.load(SPEC)


def _both(spec, monkeypatch, data, **options):
    small = spec.run(data, queries=["cas", "mom"], engine="pandas", **options)
    monkeypatch.setattr(weighted, "JACOBIAN_LIMIT", 0)
    large = spec.run(data, queries=["cas", "mom"], engine="pandas", **options)
    monkeypatch.undo()
    assert small.ok and large.ok, (small.failures, large.failures)
    return small, large


def _same(small, large):
    for q in ("cas", "mom"):
        a, b = small[q], large[q]
        assert np.allclose(arr(a.value), arr(b.value), rtol=1e-10, atol=0), q
        assert np.allclose(arr(a.extras["se"]), arr(b.extras["se"]), rtol=1e-10, atol=0), q
        assert np.allclose(arr(a.extras["deff"]), arr(b.extras["deff"]), rtol=1e-10, atol=0), q
        assert "Jacobian never formed" in b.extras["note"] and "Jacobian never formed" not in a.extras["note"]
        assert b.extras["ci_method"] == a.extras["ci_method"]
        for side in ("lower", "upper"):
            assert np.allclose(arr(b.extras["ci95"][side]), arr(a.extras["ci95"][side]), rtol=1e-9, atol=1e-15), q
        assert b.extras["design"] == a.extras["design"] and b.extras["weighted_n"] == a.extras["weighted_n"]
        with pytest.raises(Exception):
            b.cov_params()           # no full covariance on the large path


def test_large_path_equals_the_small_one_with_strata_and_clusters(spec, monkeypatch):
    data = clustered_sample(spec, seed=21)
    small, large = _both(spec, monkeypatch, data, weights="weight", strata="region", cluster="school")
    _same(small, large)
    assert large["cas"].extras["psus"] == small["cas"].extras["psus"] == 20


def test_large_path_equals_the_small_one_without_clusters(spec, monkeypatch):
    data = clustered_sample(spec, seed=22, clusters=4, size=10)
    small, large = _both(spec, monkeypatch, data, weights="weight", strata="region")
    _same(small, large)


def test_large_path_equals_the_small_one_with_jk1_replicates(spec, monkeypatch):
    data = clustered_sample(spec, seed=23, strata=1, clusters=12, size=15)
    n = 12
    psu = data["m"]["school"].str[1:].astype(int).to_numpy()
    reps = np.column_stack([np.where(psu == c, 0.0, data["m"]["weight"] * n / (n - 1)) for c in range(n)])
    frames = {k: pd.concat([v, pd.DataFrame(reps, columns=[f"jk{c:02d}" for c in range(n)])], axis=1)
              for k, v in data.items()}
    small, large = _both(spec, monkeypatch, frames, weights="weight", replicate_weights="jk*", replicate_type="jk1")
    _same(small, large)
    assert large["cas"].extras["replicates"] == n


BIG = 8   # 3^8 = 6,561 cells: a 6,561 x 6,561 Jacobian passes 4,096 x 4,096


def big_spec() -> privspec.Spec:
    return privspec.load(big_spec_text() + "\n")


def big_spec_text() -> str:
    names = [f"x{k}" for k in range(BIG)]
    lines = ['spec "large weighted castell"'] + [f"variable {v}: categorical {{l0, l1, l2}}" for v in names]
    lines += [f"population {v} ~ categorical(0.5, 0.3, 0.2)" for v in names]
    lines += [f"mechanism m = product({', '.join(f'grr({v}, epsilon = 2)' for v in names)})",
              f"query cas = estimate joint({', '.join(names)}) from m by castell"]
    return "\n".join(lines)


def big_sample(seed: int, rows: int = 600, clusters: int = 12) -> pd.DataFrame:
    bind = big_spec()
    rng = np.random.default_rng(seed)
    raw = pd.DataFrame({f"x{k}": rng.choice(["l0", "l1", "l2"], rows, p=[0.5, 0.3, 0.2]) for k in range(BIG)})
    reports = bind.privatize(raw, "m", seed=seed)
    school = rng.integers(0, clusters, rows)
    return reports.assign(school=[f"S{c}" for c in school], region=np.where(school < clusters // 2, "A", "B"),
                          weight=rng.integers(1, 4, rows).astype(float))


def test_a_table_past_the_limit_runs_with_weights_and_integer_weights_are_duplicated_rows():
    bind = big_spec()
    data = big_sample(3)
    options = dict(queries=["cas"], weights="weight", strata="region", cluster="school", engine="pandas")
    a = bind.run({"m": data}, **options)
    assert a.ok, a.failures
    copied = data.loc[np.repeat(data.index, data["weight"].astype(int))].reset_index(drop=True).assign(weight=1.0)
    b = bind.run({"m": copied}, **options)
    assert b.ok, b.failures
    assert arr(a["cas"].value).size == 3 ** BIG
    assert np.allclose(arr(a["cas"].value), arr(b["cas"].value), rtol=1e-10, atol=1e-15)
    assert np.allclose(arr(a["cas"].extras["se"]), arr(b["cas"].extras["se"]), rtol=1e-9)
    deff = arr(a["cas"].extras["deff"])
    assert np.all(np.isfinite(deff)) and np.all(deff > 0)
    # the unweighted estimator on the copies is the weighted one's value
    plain = bind.run({"m": copied}, queries=["cas"], engine="pandas")
    assert np.allclose(arr(a["cas"].value), arr(plain["cas"].value), rtol=1e-10, atol=1e-15)


def test_only_castell_has_the_large_path():
    """Past the limit B040 refuses what has no per-cell path (RR-Independent here) and names
    it; castell and mom run."""
    names = ", ".join(f"x{k}" for k in range(BIG))
    spec = privspec.load("\n".join([big_spec_text(), f"query ind = estimate joint({names}) from m by independent",
                                    f"query mom = estimate joint({names}) from m by mom"]) + "\n")
    res = spec.run({"m": big_sample(4, rows=200)}, queries=["ind", "mom", "cas"], weights="weight", engine="pandas")
    d = res.failures["ind"].diagnostics[0]
    assert d.code == "B040" and "6,561 cells" in d.message and "only castell/mom on a product" in d.message
    assert "mom" in res and "cas" in res
    assert np.allclose(arr(res["mom"].extras["se"]), arr(res["cas"].extras["se"]), rtol=1e-12)


def test_without_clusters_the_closed_form_equals_the_dense_formula():
    """A design without clusters (every PSU one cell: many distinct weights) takes three
    solves per stratum, not one per cell: the same per-cell variances as the dense
    stratified formula (rtol 1e-10) on two factors of 3 and 4 categories."""
    from privspec.backends.core.survey_design import DesignCells, linearized_covariance
    from privspec.backends.rr.weighted_large import linearized_variance

    rng = np.random.default_rng(7)
    inv = [np.linalg.inv(np.full((d, d), 0.1) + np.eye(d) * 0.6) for d in (3, 4)]
    U = np.kron(*inv)
    n = 400
    report = rng.integers(0, 12, n)
    weight = rng.uniform(0.5, 4.0, n)
    cells = DesignCells(report=report, weight=weight, stratum=rng.integers(0, 3, n), psu=np.arange(n),
                        repeats=rng.integers(1, 3, n))
    total = float((weight * cells.repeats).sum())
    shares = np.bincount(report, weights=weight * cells.repeats, minlength=12) / total
    psi = (U - (U @ shares)[:, None]) / total
    dense = np.diag(linearized_covariance(psi, cells))
    np.testing.assert_allclose(linearized_variance(inv, cells, shares, total), dense, rtol=1e-10)
