"""The NPMLE of a distribution function from intervals and points (backends/interval/npmle/estimator.py).

Hand-checkable examples, the current-status case against isotonic regression, the KKT
condition, independent recomputation of the likelihood, a brute-force EM over the
elementary cells, hypothesis properties, peers (lifelines, surpyval, R's npsurv; each
skipped cleanly when absent), confidence bands and the plot helper.
"""
from __future__ import annotations

import doctest
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import optimize, stats

from privspec.backends.interval.npmle import estimator as npmle_module
from privspec.backends.interval.npmle import solver as npmle_solver
from privspec.backends.interval.npmle.estimator import NPMLEResult, aggregate_intervals, cdf_confidence_band, npmle
from privspec.errors import BackendError, DataError
from privspec.results.result import Result
from privspec.results.values import StepFunction

INF = np.inf


# ---- data -------------------------------------------------------------------------
def case1(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Current-status data: Y ~ N(0, 1), one anchor U ~ uniform(-9, 9)."""
    rng = np.random.default_rng(seed)
    y, u = rng.normal(size=n), rng.uniform(-9, 9, size=n)
    return np.where(y <= u, -INF, u), np.where(y <= u, u, INF)


def case2(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Case-II data: two sorted anchors, three ranges."""
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    u = np.sort(rng.uniform(-9, 9, size=(n, 2)), axis=1)
    left = np.where(y <= u[:, 0], -INF, np.where(y <= u[:, 1], u[:, 0], u[:, 1]))
    right = np.where(y <= u[:, 0], u[:, 0], np.where(y <= u[:, 1], u[:, 1], INF))
    return left, right


def with_points(left: np.ndarray, right: np.ndarray, share: float, seed: int = 0
                ) -> tuple[np.ndarray, np.ndarray]:
    """Replace a share of the rows by exact points (values reported as such)."""
    rng = np.random.default_rng(seed)
    exact = rng.random(left.size) < share
    y = rng.normal(size=left.size)
    return np.where(exact, y, left), np.where(exact, y, right)


def containment(intervals: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Dense [observation contains innermost interval] from the (l, r] conventions alone
    (an independent check of the innermost intervals and the likelihood)."""
    a, b = intervals[:, 0][None, :], intervals[:, 1][None, :]
    l, r = np.asarray(left, float)[:, None], np.asarray(right, float)[:, None]
    point_j = a == b

    def inside(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.where(point_j, (lo < a) & (a <= hi), (lo <= a) & (b <= hi))

    plain = inside(l, r)
    ring = inside(l, np.full_like(r, INF)) | inside(np.full_like(l, -INF), r)
    exact = point_j & (a == l)
    return np.where(l == r, exact, np.where(l < r, plain, ring))


def loglik_of(intervals: np.ndarray, mass: np.ndarray, left, right, counts=None) -> float:
    D = containment(intervals, left, right)
    c = np.ones(len(left)) if counts is None else np.asarray(counts, float)
    with np.errstate(divide="ignore"):
        return float(c @ np.log(D @ mass))


def em_loglik(left, right, counts=None, iterations: int = 3000) -> float:
    """Self-consistency EM over every elementary cell (each end as a point and each gap
    between ends), with no use of innermost intervals: a lower bound for the maximum."""
    left, right = np.asarray(left, float), np.asarray(right, float)
    ends = np.unique(np.r_[left, right])
    ends = ends[np.isfinite(ends)]
    cells = [(-INF, ends[0])]
    for i, x in enumerate(ends):
        cells += [(x, x), (x, ends[i + 1] if i + 1 < ends.size else INF)]
    cells_arr = np.array(cells)
    # open gaps (x, y) behave like (x, y] with the end excluded: shrink them a little
    gap = cells_arr[:, 0] != cells_arr[:, 1]
    width = np.diff(ends).min() / 4 if ends.size > 1 else 1.0
    cells_arr[gap, 1] = np.where(np.isfinite(cells_arr[gap, 1]), cells_arr[gap, 1] - width, INF)
    D = containment(cells_arr, left, right).astype(float)
    c = np.ones(left.size) if counts is None else np.asarray(counts, float)
    p = np.full(D.shape[1], 1.0 / D.shape[1])
    for _ in range(iterations):
        p *= D.T @ (c / (D @ p)) / c.sum()
    return float(c @ np.log(D @ p))


def check_fit(fit: NPMLEResult, left, right, counts=None, tol: float = 1e-10) -> None:
    assert fit.converged and fit.kkt <= tol
    assert np.all(fit.mass >= 0) and abs(fit.mass.sum() - 1) < 1e-12
    assert np.all(np.diff(fit.intervals[:, 1]) > 0)           # disjoint, increasing
    assert np.all(fit.intervals[1:, 0] >= fit.intervals[:-1, 1])
    ll = loglik_of(fit.intervals, fit.mass, left, right, counts)
    assert ll == pytest.approx(fit.loglik, rel=1e-11, abs=1e-9)


# ---- hand-checkable examples ----------------------------------------------------------
def test_points_and_intervals_by_hand():
    # (0, 1], (1, 2], (2, 3] and the point 0.5: 0.5 lies in (0, 1], so the innermost
    # intervals are {0.5}, (1, 2], (2, 3] and the maximum is 2 log p1 + log p2 + log p3
    fit = npmle([0, 1, 2, 0.5], [1, 2, 3, 0.5])
    assert fit.intervals.tolist() == [[0.5, 0.5], [1, 2], [2, 3]]
    np.testing.assert_allclose(fit.mass, [0.5, 0.25, 0.25])
    assert fit.loglik == pytest.approx(2 * np.log(0.5) + 2 * np.log(0.25))


@pytest.mark.parametrize("left, right, intervals, mass", [
    # a point at the right end of (0, 1] lies in it; at the left end it does not
    ([0, 1], [1, 1], [[1, 1]], [1.0]),
    ([0, 0], [1, 0], [[0, 0], [0, 1]], [0.5, 0.5]),
    # (0, 1] and (1, 2] do not meet; (0, 1] and (0.5, 2] do
    ([0, 1], [1, 2], [[0, 1], [1, 2]], [0.5, 0.5]),
    ([0, 0.5], [1, 2], [[0.5, 1]], [1.0]),
    # unbounded ranges
    ([-INF, 0], [0, INF], [[-INF, 0], [0, INF]], [0.5, 0.5]),
    ([-INF, -INF], [INF, 3], [[-INF, 3]], [1.0]),
    # a point and an interval ending at it, and an interval starting at it
    ([2, 1, 2], [2, 2, 3], [[2, 2], [2, 3]], [2 / 3, 1 / 3]),
])
def test_open_closed_conventions(left, right, intervals, mass):
    fit = npmle(left, right)
    assert fit.intervals.tolist() == intervals
    np.testing.assert_allclose(fit.mass, mass, atol=1e-12)
    check_fit(fit, left, right)


def test_exact_points_are_the_empirical_distribution():
    x = np.array([3.0, 1.0, 2.0, 3.0, 3.0, -1.0, 2.0])
    fit = npmle(x, x)
    values, counts = np.unique(x, return_counts=True)
    assert fit.intervals[:, 0].tolist() == values.tolist()
    np.testing.assert_allclose(fit.mass, counts / x.size)
    assert fit.loglik == pytest.approx(float(counts @ np.log(counts / x.size)))
    assert fit.mean() == pytest.approx(x.mean()) and fit.moment(2) == pytest.approx(np.mean(x ** 2))
    # with counts instead of repeated rows
    weighted = npmle(values, values, counts)
    np.testing.assert_allclose(weighted.mass, fit.mass)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_current_status_is_isotonic_regression(seed):
    rng = np.random.default_rng(seed)
    n = 400
    u = np.round(rng.uniform(-3, 3, size=n), 1)            # ties on purpose
    delta = rng.normal(size=n) <= u
    left, right = np.where(delta, -INF, u), np.where(delta, u, INF)
    fit = npmle(left, right)
    check_fit(fit, left, right)
    times, inverse = np.unique(u, return_inverse=True)
    weight = np.bincount(inverse).astype(float)
    share = np.bincount(inverse, weights=delta.astype(float)) / weight
    iso = optimize.isotonic_regression(share, weights=weight).x
    np.testing.assert_allclose(fit.cdf(times), iso, atol=1e-8)


def test_counts_equal_repeated_rows():
    left, right = case2(300, seed=4)
    rows = np.repeat(np.arange(300), np.arange(300) % 3 + 1)
    repeated = npmle(left[rows], right[rows])
    weighted = npmle(left, right, np.arange(300) % 3 + 1)
    assert weighted.loglik == pytest.approx(repeated.loglik, rel=1e-12)
    np.testing.assert_allclose(weighted.mass, repeated.mass, atol=1e-9)
    # zero counts drop the rows
    with_zero = npmle(np.r_[left, 100.0], np.r_[right, 101.0], np.r_[np.ones(300), 0.0])
    assert with_zero.loglik == pytest.approx(npmle(left, right).loglik, rel=1e-12)


def test_aggregate_intervals():
    l, r, c = aggregate_intervals([1, 0, 1, -INF, 0, 1], [2, 1, 2, 0, 1, 1])
    assert l.tolist() == [-INF, 0, 1, 1] and r.tolist() == [0, 1, 1, 2] and c.tolist() == [1, 2, 1, 2]
    assert c.dtype == np.int64
    empty = aggregate_intervals([], [])
    assert all(a.size == 0 for a in empty)


# ---- errors ----------------------------------------------------------------------------
@pytest.mark.parametrize("left, right, counts, code, rows", [
    ([0, 2, 1], [1, 1, 0], None, "D030", (2, 3)),            # l > r
    ([0, np.nan], [1, 2], None, "D030", (2,)),
    ([INF, 0], [INF, 1], None, "D030", (1,)),                # a point at infinity
    ([0, 1], [1, 2], [1, -1], "D031", (2,)),
    ([0, 1], [1, 2], [0, 0], "D031", ()),
    ([0, 1], [1, 2, 3], None, "D030", ()),
    ([0, 1], [1, 2], [1], "D031", ()),
])
def test_bad_data_is_a_data_error(left, right, counts, code, rows):
    with pytest.raises(DataError) as info:
        npmle(left, right, counts)
    assert info.value.code == code
    assert info.value.diagnostics[0].rows == rows


def test_ring_needs_the_flag_and_finite_ends():
    with pytest.raises(DataError, match="left end > right end"):
        npmle([5, 0], [0, 1])
    with pytest.raises(DataError, match="ring range"):
        npmle([INF, 0], [0, 1], ring=True)


# ---- result methods ------------------------------------------------------------------
def test_cdf_bounds_quantile_functionals_and_json():
    fit = npmle([-INF, 0, 1, 2], [0, 1, INF, 2])
    assert fit.intervals.tolist() == [[-INF, 0], [0, 1], [2, 2]]
    np.testing.assert_allclose(fit.mass, [1 / 4, 1 / 4, 1 / 2])
    lower, upper = fit.cdf_bounds([-1, 0, 0.5, 2])
    np.testing.assert_allclose(lower, [0, 0.25, 0.25, 1])
    np.testing.assert_allclose(upper, [0.25, 0.25, 0.5, 1])      # the point 2 counts at x = 2
    assert np.all(fit.cdf(np.linspace(-3, 3, 13)) <= fit.cdf_bounds(np.linspace(-3, 3, 13))[1])
    assert fit.quantile([0.1, 0.3, 0.6]).tolist() == [0.0, 1.0, 2.0]
    assert fit.mean() == pytest.approx(0.25 * 0 + 0.25 * 1 + 0.5 * 2)
    assert fit.mean(at="left") == -INF
    with pytest.raises(ValueError):
        fit.mean(at="middle")
    step = fit.to_step_function()
    assert isinstance(step, StepFunction) and step.intervals[0] == (-INF, 0.0)
    d = Result("cdf", step, {"loglik": fit.loglik, "iterations": fit.iterations, "kkt": fit.kkt,
                             "method": fit.method, "n": fit.n}).to_dict()
    assert d["value"]["intervals"][0] == ["-inf", 0.0] and d["value"]["mass"] == [0.25, 0.25, 0.5]
    assert d["method"] == "cnm" and d["n"] == 4.0
    # zero-mass innermost intervals are left out unless asked for
    fit2 = npmle(*case1(200))
    assert (fit2.mass == 0).any()
    assert len(fit2.to_step_function(all_intervals=True).mass) == fit2.mass.size
    assert len(fit2.to_step_function().mass) == int((fit2.mass > 0).sum())


# ---- the maximum ---------------------------------------------------------------------
@pytest.mark.parametrize("make", [case1, case2])
@pytest.mark.parametrize("n", [50, 2000, 20000])
def test_kkt_at_the_maximum(make, n):
    left, right = make(n, seed=n)
    fit = npmle(left, right)
    assert fit.converged and fit.kkt <= 1e-10
    assert np.all(fit.mass >= 0) and abs(fit.mass.sum() - 1) < 1e-12
    if n <= 2000:
        check_fit(fit, left, right)


@pytest.mark.parametrize("seed", [0, 1])
def test_many_points_take_the_hierarchical_path(seed, monkeypatch):
    # 20% exact points: the support has about 600 points, more than one dense step takes
    left, right = with_points(*case2(3000, seed=seed), 0.2, seed=seed)
    fit = npmle(left, right)
    assert (fit.mass > 0).sum() > npmle_solver._K_FULL
    check_fit(fit, left, right)
    monkeypatch.setattr(npmle_solver, "_K_FULL", 10 ** 6)      # one dense step instead
    dense = npmle(left, right)
    assert fit.loglik == pytest.approx(dense.loglik, abs=1e-8)
    np.testing.assert_allclose(fit.cdf(np.linspace(-3, 3, 61)), dense.cdf(np.linspace(-3, 3, 61)), atol=1e-7)


def test_small_blocks_agree_with_one_dense_step(monkeypatch):
    left, right = case2(2000, seed=3)
    dense = npmle(left, right)
    monkeypatch.setattr(npmle_solver, "_K_FULL", 0)
    monkeypatch.setattr(npmle_solver, "_K_BLOCK", 8)
    blocked = npmle(left, right)
    assert blocked.converged and blocked.loglik == pytest.approx(dense.loglik, abs=1e-8)


@pytest.mark.parametrize("k", [1, 2, 7, 40])
def test_run_gram_row_by_row_is_the_cumsum_bit_for_bit(k, monkeypatch):
    # the Newton matrix of runs: both ways of cumulating its table add the same numbers in
    # the same order, so the matrices are equal to the bit, and equal to the definition
    from privspec.backends.interval.npmle import qp

    rng = np.random.default_rng(k)
    a = rng.integers(0, k, 500)
    b = np.minimum(a + rng.integers(0, k, 500), k - 1)
    w = rng.random(500)
    monkeypatch.setattr(qp, "_ROW_BY_ROW", 10 ** 9)
    by_cumsum = qp.run_gram(a, b, w, k)
    monkeypatch.setattr(qp, "_ROW_BY_ROW", 0)
    by_rows = qp.run_gram(a, b, w, k)
    assert np.array_equal(by_rows, by_cumsum)
    e = (np.arange(k) >= a[:, None]) & (np.arange(k) <= b[:, None])
    np.testing.assert_allclose(by_rows, (e * w[:, None]).T @ e, rtol=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_qp_started_with_free_variables_reaches_the_same_minimum(seed):
    # qp(start=...): the variables at 0 freed before the first solve, as the band's fits
    # ask; those the minimum keeps at 0 leave again (in some seeds every one of them does,
    # in some a mass on the start's support drops too), and the minimum is the same as
    # from the plain start (a strictly convex problem: one minimum), checked against scipy
    from privspec.backends.interval.npmle import qp

    rng = np.random.default_rng(seed)
    k = int(rng.integers(4, 30))
    a = rng.integers(0, k, 200)
    b = np.minimum(a + rng.integers(0, k, 200), k - 1)
    G = qp.run_gram(a, b, rng.random(200), k) + 1e-3 * np.eye(k)
    grp = (np.arange(k) >= k // 2).astype(np.intp)
    sums = np.array([0.4, 0.6])
    x0 = np.where(rng.random(k) < 0.5, rng.random(k), 0.0)
    for g in (0, 1):                       # feasible: each group on its sum, some mass in it
        on = grp == g
        x0[np.flatnonzero(on)[0]] += 0.1
        x0[on] *= sums[g] / x0[on].sum()
    h = G @ rng.random(k) * (0.5 if seed % 3 else -0.5)   # (negative: most want no mass)
    plain = qp.qp(G, h, x0, grp, sums)
    started = qp.qp(G, h, x0, grp, sums, start=np.flatnonzero(x0 == 0))
    np.testing.assert_allclose(started, plain, atol=1e-9)
    cons = [{"type": "eq", "fun": lambda x, g=g: x[grp == g].sum() - sums[g]} for g in (0, 1)]
    best = optimize.minimize(lambda x: 0.5 * x @ G @ x - h @ x, x0, jac=lambda x: G @ x - h,
                             bounds=[(0, None)] * k, constraints=cons, method="SLSQP",
                             options={"ftol": 1e-14, "maxiter": 500})
    value = lambda x: 0.5 * x @ G @ x - h @ x
    assert value(started) <= value(best.x) + 1e-9
    assert np.all(started >= 0) and np.allclose([started[grp == g].sum() for g in (0, 1)], sums)


def test_ring_ranges_against_brute_force():
    # the ring design of Example 3: (-inf, T1] U (T3, inf), (T1, T2], (T2, T3]
    rng = np.random.default_rng(5)
    n = 60
    y = np.round(rng.normal(size=n), 1)
    t = np.sort(np.round(rng.uniform(-2, 2, size=(n, 3)), 1), axis=1)
    k = (y > t[:, 0]).astype(int) + (y > t[:, 1]) + (y > t[:, 2])
    left = np.select([k == 1, k == 2], [t[:, 0], t[:, 1]], t[:, 2])
    right = np.select([k == 1, k == 2], [t[:, 1], t[:, 2]], t[:, 0])   # k = 0 or 3: the ring
    fit = npmle(left, right, ring=True)
    check_fit(fit, left, right)
    assert fit.loglik >= em_loglik(left, right, iterations=4000) - 1e-9


@st.composite
def interval_data(draw):
    n = draw(st.integers(1, 12))
    ring = draw(st.booleans())
    rows = []
    for _ in range(n):
        kind = draw(st.sampled_from(["interval", "point", "left", "right"] + (["ring"] if ring else [])))
        a, b = sorted(draw(st.lists(st.integers(0, 5), min_size=2, max_size=2)))
        if kind == "point" or (kind == "interval" and a == b):
            rows.append((float(a), float(a)))
        elif kind == "interval":
            rows.append((float(a), float(b)))
        elif kind == "left":
            rows.append((-INF, float(b)))
        elif kind == "right":
            rows.append((float(a), INF))
        else:
            rows.append((float(b), float(a)) if a < b else (float(a), float(a)))
    counts = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    left, right = (np.array(v) for v in zip(*rows))
    return left, right, np.array(counts, float), ring, seed


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([-INF, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, INF]),
                          st.sampled_from([-INF, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, INF])), min_size=1, max_size=25),
       st.booleans())
def test_innermost_of_ranges_by_counting_equals_the_ranking(pairs, in_order):
    """Ranges alone (no points, no cuts) take a path of their own (counting the innermost
    ends among the distinct ends, no ranking): the same intervals and runs as the general
    one, in or out of order, with ties, infinities and signed zeros."""
    from privspec.backends.interval.npmle import data as npmle_data, innermost as npmle_innermost
    rows = sorted({(min(a, b), max(a, b)) for a, b in pairs if min(a, b) < max(a, b)}) if in_order else \
        [(min(a, b), max(a, b)) for a, b in pairs if min(a, b) < max(a, b)]
    if not rows:
        return
    left, right = (np.array(v) for v in zip(*rows))
    fast = npmle_innermost._innermost_ranges(left, right)
    general = npmle_innermost._innermost_keys(left, right, None)
    for got, want in zip(fast, general):
        assert np.array_equal(got, want) and got.dtype == want.dtype
    assert npmle_data.innermost(left, right)[2].tolist() == general[2].tolist()


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([-INF, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, INF]),
                          st.sampled_from([-INF, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, INF])), min_size=1, max_size=25),
       st.lists(st.sampled_from([-1.0, -0.0, 0.0, 0.25, 0.5, 1.0, 1.5, 3.0, 4.0]), min_size=1, max_size=4),
       st.booleans())
def test_innermost_of_ranges_with_cuts_by_counting_equals_the_ranking(pairs, cuts, in_order):
    """Ranges with cuts (the band's design): each cut's zero-weight ranges taken as rows of
    the counting path give the same innermost intervals and runs as the general one."""
    from privspec.backends.interval.npmle import data as npmle_data, innermost as npmle_innermost
    rows = sorted({(min(a, b), max(a, b)) for a, b in pairs if min(a, b) < max(a, b)}) if in_order else \
        [(min(a, b), max(a, b)) for a, b in pairs if min(a, b) < max(a, b)]
    if not rows:
        return
    left, right = (np.array(v) for v in zip(*rows))
    got = npmle_data.innermost(left, right, np.array(cuts))
    want = npmle_innermost._innermost_keys(left, right, np.array(cuts))
    for g, w in zip(got, want):
        assert np.array_equal(g, w) and g.dtype == w.dtype


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([-INF, 0.0, 0.5, 1.0, 2.0, 3.0]), st.sampled_from([0.5, 1.0, 2.0, 3.0, INF]),
                          st.integers(1, 3)), min_size=2, max_size=30),
       st.booleans())
def test_design_merges_the_rows_of_one_run(rows, equal_counts):
    """Rows with the same run over the innermost intervals are one row of the design, their
    counts added, whether the counts are all equal (the runs' lengths counted) or not
    (the counts summed): against a dict built row by row."""
    from privspec.backends.interval.npmle.data import design_from_rows, innermost
    rows = [(a, b, 2 if equal_counts else k) for a, b, k in rows if a < b]
    if len(rows) < 2:
        return
    left, right, counts = (np.array(v, dtype=float) for v in zip(*rows))
    _, _, a, b = innermost(left, right)
    want: dict = {}
    for i, j, k in zip(a.tolist(), b.tolist(), counts.tolist()):
        want[(i, j)] = want.get((i, j), 0.0) + k
    des = design_from_rows(left, right, counts)
    assert dict(zip(zip(des.a.tolist(), des.b.tolist()), des.c.tolist())) == want
    assert des.a.size == len(want) and des.a.dtype == des.b.dtype == np.intp
    assert np.array_equal(des.b1, des.b + 1) and des.n == counts.sum()


@pytest.mark.parametrize("sorted_rows", [True, False])
def test_equal_whole_counts_are_carried_without_an_array(sorted_rows):
    """Counts of one per row (an engine's reads of continuous reports) travel as a
    read-only broadcast of one value, and the fit is the one of the same counts as floats,
    to the bit; the design has arrays of its own, merged or not."""
    from privspec.backends.interval.npmle.data import as_rows, design_from_rows
    rng = np.random.default_rng(4)
    x = np.sort(rng.uniform(0, 10, size=(400, 2)), axis=1)
    left, right = x[:, 0], x[:, 1]
    left[::5] = -INF
    if sorted_rows:
        order = np.lexsort((right, left))
        left, right = left[order], right[order]
    for k in (1, 3):
        ints = np.full(left.size, k, dtype=np.int64)
        _, _, c = as_rows(left, right, ints)
        assert c.strides == (0,) and not c.flags.writeable and c.tolist() == [float(k)] * left.size
        assert np.broadcast_to(np.int64(k), left.shape).strides == (0,)
        got, want = npmle(left, right, np.broadcast_to(np.int64(k), left.shape)), npmle(left, right, ints * 1.0)
        assert got.loglik == want.loglik and np.array_equal(got.mass, want.mass)
        assert np.array_equal(got.intervals, want.intervals)
        des = design_from_rows(*as_rows(left, right, ints))
        assert des.c.strides == (8,) and des.c.flags.writeable and des.n == k * left.size
    # rows that are each one run of their own are not merged: the counts are copied
    starts = np.arange(0.0, 20.0, 2.0)
    des = design_from_rows(*as_rows(starts, starts + 1, np.ones(starts.size, dtype=np.int64)))
    assert des.a.tolist() == list(range(starts.size)) and des.c.flags.writeable and des.c.strides == (8,)
    # counts that differ, or a zero among them, keep an array of their own
    mixed = np.ones(left.size, dtype=np.int64)
    mixed[0] = 0
    _, _, c = as_rows(left, right, mixed)
    assert c.size == left.size - 1 and c.strides == (8,)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(interval_data())
def test_property_maximum(data):
    left, right, counts, ring, seed = data
    fit = npmle(left, right, counts, ring=ring)
    check_fit(fit, left, right, counts)
    # no feasible direction improves it: mixtures with random distributions on the
    # innermost intervals, and mass moved from a support interval to another one
    rng = np.random.default_rng(seed)
    slack = 1e-9 * max(1.0, abs(fit.loglik))
    for eps in (1e-4, 1e-2, 0.3):
        q = rng.dirichlet(np.ones(fit.mass.size))
        assert loglik_of(fit.intervals, (1 - eps) * fit.mass + eps * q, left, right, counts) <= fit.loglik + slack
    support = np.flatnonzero(fit.mass > 0)
    i, j = rng.choice(support), rng.integers(fit.mass.size)
    moved = fit.mass.copy()
    shift = moved[i] * 0.1
    moved[i] -= shift
    moved[j] += shift
    assert loglik_of(fit.intervals, moved, left, right, counts) <= fit.loglik + slack
    # and it is at least what EM over the elementary cells reaches
    assert fit.loglik >= em_loglik(left, right, counts, iterations=1500) - slack


# ---- peers (test-only dependencies, skipped when absent) -------------------------------
def _lifelines_loglik(p: np.ndarray, intervals, left, right) -> float:
    """lifelines' closed intervals [l, r] against its Turnbull intervals.

    Its masses are renormalized: its line search (in log-odds) leaves their sum off 1 by
    ~1e-11, which alone would add n * 1e-11 to the log-likelihood.
    """
    p = p / p.sum()
    tl = np.array([i.left for i in intervals])
    tr = np.array([i.right for i in intervals])
    D = (np.asarray(left)[:, None] <= tl[None, :]) & (tr[None, :] <= np.asarray(right)[:, None])
    return float(np.sum(np.log(D @ p)))


def _bundled(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A lifelines data set: its closed intervals, and the same data as (l, r] (the
    left end moved below by half the smallest gap between ends, which are integers)."""
    datasets = pytest.importorskip("lifelines.datasets")
    columns = {"diabetes": ("left", "right"), "mice": ("l", "u"),
               "c_botulinum_lag_phase": ("lower_bound_days", "upper_bound_days")}[name]
    frame = getattr(datasets, f"load_{name}")()
    left = frame[columns[0]].to_numpy(float)
    right = np.nan_to_num(frame[columns[1]].to_numpy(float), nan=INF)
    ends = np.unique(np.r_[left, right])
    gap = np.diff(ends[np.isfinite(ends)]).min()
    return left, right, np.where(left < right, left - gap / 2, left), right


@pytest.mark.parametrize("make", [case1, case2])
def test_at_least_lifelines(make):
    lifelines_npmle = pytest.importorskip("lifelines.fitters.npmle").npmle
    left, right = make(100, seed=7)
    p, intervals = lifelines_npmle(left, right)
    theirs = _lifelines_loglik(p, intervals, left, right)
    ours = npmle(left, right).loglik
    assert ours >= theirs - 1e-9
    assert ours - theirs < 1e-2          # the same problem: close, but lifelines stops short


@pytest.mark.parametrize("name", ["diabetes", "mice", "c_botulinum_lag_phase"])
def test_lifelines_bundled_data(name):
    lifelines_npmle = pytest.importorskip("lifelines.fitters.npmle").npmle
    left, right, half_open_left, half_open_right = _bundled(name)
    fit = npmle(half_open_left, half_open_right)
    check_fit(fit, half_open_left, half_open_right)
    p, intervals = lifelines_npmle(left, right)
    assert fit.loglik >= _lifelines_loglik(p, intervals, left, right) - 1e-9


def _surpyval_loglik(model, left, right) -> float:
    x, F = np.asarray(model.x, float), np.asarray(model.F, float)

    def cdf(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(x, t, side="right") - 1
        return np.where(i >= 0, F[np.maximum(i, 0)], 0.0)

    return float(np.sum(np.log(cdf(right) - cdf(left))))


@pytest.mark.parametrize("make", [case1, case2])
def test_at_least_surpyval(make):
    surpyval = pytest.importorskip("surpyval")
    # surpyval needs finite bounds; +-50 stand in for the infinities (the data lie in [-9, 9])
    left, right = (np.clip(v, -50, 50) for v in make(500, seed=11))
    fit = npmle(left, right)
    for estimator in ("Kaplan-Meier", "Fleming-Harrington"):
        model = surpyval.Turnbull.fit(xl=left, xr=right, turnbull_estimator=estimator)
        assert fit.loglik >= _surpyval_loglik(model, left, right) - 1e-9


@pytest.fixture(scope="module")
def npsurv_results(tmp_path_factory):
    """R's npsurv on several data sets in one Rscript call: {name: (ours, npsurv's ll)}."""
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed")
    probe = subprocess.run(["Rscript", "-e", "library(npsurv)"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("the R package npsurv is not installed")
    folder = tmp_path_factory.mktemp("npsurv")
    sets = {"case1": case1(300, seed=1), "case2": case2(300, seed=2),
            "points": with_points(*case2(300, seed=3), 0.3, seed=3),
            "ties": tuple(np.round(v, 1) for v in case2(300, seed=4))}
    try:
        left, right, hl, hr = _bundled("diabetes")
        sets["diabetes"] = (hl, hr)
    except pytest.skip.Exception:
        pass
    ours = {}
    for name, (left, right) in sets.items():
        # -50 and 50 stand in for -inf and inf (the data lie in [-9, 9]), as for all peers
        left, right = np.clip(left, -50, 50), np.clip(right, -50, 50)
        l, r, c = aggregate_intervals(left, right)
        np.savetxt(folder / f"{name}.csv", np.column_stack([l, r, c]), delimiter=",", fmt="%.17g",
                   header="l,r,c", comments="")
        ours[name] = npmle(left, right).loglik
    script = folder / "run.R"
    script.write_text(
        "suppressMessages(library(npsurv))\n"
        "for (f in commandArgs(TRUE)) {\n"
        "  d <- read.csv(f)\n"
        "  r <- npsurv(cbind(d$l, d$r), w = d$c)\n"
        "  cat(basename(f), sprintf('%.17g', r$ll), '\\n')\n"
        "}\n")
    out = subprocess.run(["Rscript", str(script)] + [str(folder / f"{k}.csv") for k in sets],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    theirs = {line.split()[0][:-4]: float(line.split()[1]) for line in out.stdout.splitlines() if line.strip()}
    return {k: (ours[k], theirs[k]) for k in sets}


@pytest.mark.parametrize("name", ["case1", "case2", "points", "ties", "diabetes"])
def test_equal_to_npsurv(npsurv_results, name):
    if name not in npsurv_results:
        pytest.skip(f"{name} needs lifelines' data")
    ours, theirs = npsurv_results[name]
    assert ours >= theirs - 1e-9
    assert ours == pytest.approx(theirs, abs=1e-6)


# ---- confidence bands ------------------------------------------------------------------
def test_profile_band_for_exact_points_is_the_binomial_likelihood_ratio():
    rng = np.random.default_rng(2)
    x = np.round(rng.normal(size=80), 2)
    fit = npmle(x, x)
    lower, upper = cdf_confidence_band(fit, x, x, None, [0.0], level=0.95)
    n, k = x.size, int((x <= 0).sum())
    crit = stats.chi2.ppf(0.95, 1)

    def lr(theta: float) -> float:
        return 2 * (k * np.log(k / (n * theta)) + (n - k) * np.log((n - k) / (n * (1 - theta)))) - crit

    assert lower[0] == pytest.approx(optimize.brentq(lr, 1e-9, k / n), abs=1e-5)
    assert upper[0] == pytest.approx(optimize.brentq(lr, k / n, 1 - 1e-9), abs=1e-5)


@pytest.mark.slow
def test_profile_band_covers_at_about_the_nominal_level():
    # Case I (current status), where Banerjee and Wellner's law D is the limit
    x = np.array([-0.5, 0.5])
    hits = np.zeros(2)
    reps = 150
    for seed in range(reps):
        left, right = case1(200, seed=1000 + seed)
        fit = npmle(left, right)
        lower, upper = cdf_confidence_band(fit, left, right, None, x)
        assert np.all(lower <= fit.cdf(x) + 1e-12) and np.all(fit.cdf(x) <= upper + 1e-12)
        hits += (lower <= stats.norm.cdf(x)) & (stats.norm.cdf(x) <= upper)
    # nominal 0.95; 150 replications have a standard error of about 0.018
    assert np.all(hits / reps >= 0.88) and np.all(hits / reps <= 0.995)


def test_bootstrap_band():
    left, right = case2(300, seed=8)
    fit = npmle(left, right)
    x = np.linspace(-1.5, 1.5, 7)
    lower, upper = cdf_confidence_band(fit, left, right, None, x, method="bootstrap", reps=40, seed=3)
    again = cdf_confidence_band(fit, left, right, None, x, method="bootstrap", reps=40, seed=3)
    np.testing.assert_array_equal(lower, again[0])
    assert np.all((0 <= lower) & (lower <= upper) & (upper <= 1))
    assert np.all(np.diff(lower) >= 0) and np.all(np.diff(upper) >= 0)
    assert np.mean((lower <= stats.norm.cdf(x)) & (stats.norm.cdf(x) <= upper)) >= 0.7
    with pytest.raises(ValueError):
        cdf_confidence_band(fit, left, right, None, x, method="jackknife")


def test_profile_band_with_ring_and_counts():
    left = np.array([0.0, 1.0, 2.0, 3.0])
    right = np.array([1.0, 2.0, 3.0, 0.0])               # the last is (3, inf) U (-inf, 0]
    counts = np.array([5, 7, 6, 4])
    fit = npmle(left, right, counts, ring=True)
    lower, upper = cdf_confidence_band(fit, left, right, counts, [1.0, 2.0], ring=True)
    assert np.all(lower < upper) and np.all((0 <= lower) & (upper <= 1))


# ---- plots -----------------------------------------------------------------------------
def test_plot_cdf(tmp_path):
    pytest.importorskip("matplotlib")
    from privspec.results.plots import plot_cdf

    left, right = case2(200, seed=1)
    fit = npmle(left, right)
    x = np.linspace(-2, 2, 21)
    band = (x,) + cdf_confidence_band(fit, left, right, None, x)
    for target, result in ((tmp_path / "a.png", fit), (tmp_path / "b.svg", fit.to_step_function()),
                           (tmp_path / "c.pdf", Result("cdf", fit.to_step_function()))):
        assert plot_cdf(result, band, target, truth=stats.norm.cdf, title="F") == str(target)
        assert target.stat().st_size > 0
    assert (tmp_path / "b.svg").read_text().startswith("<?xml")
    with pytest.raises(TypeError):
        plot_cdf(42, None, tmp_path / "d.png")


def test_plot_without_matplotlib(tmp_path, monkeypatch):
    from privspec.results.plots import plot_cdf

    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import fails
    with pytest.raises(BackendError, match="matplotlib") as info:
        plot_cdf(npmle([0], [1]), None, tmp_path / "x.png")
    assert info.value.diagnostics[0].hint == "pip install matplotlib"  # a dependency since issue 35


# ---- the modules' own examples (tests/test_doctests.py walks privspec/ only) ----------
@pytest.mark.parametrize("module", ["privspec.backends.interval.npmle.estimator", "privspec.results.plots"])
def test_module_examples(module):
    if module.endswith("plots"):
        pytest.importorskip("matplotlib")
    mod = __import__(module, fromlist=["_"])
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_environment_is_unchanged_by_the_blas_limit():
    import threadpoolctl
    before = [i["num_threads"] for i in threadpoolctl.threadpool_info()]
    npmle(*case1(100))
    assert [i["num_threads"] for i in threadpoolctl.threadpool_info()] == before


# ---- the band at any points, and its calibration (issue 13) ---------------------------------------
def test_band_at_arbitrary_points():
    """Any finite x, unsorted, repeated, beyond the data: each bound as if asked alone."""
    left, right = case2(150, seed=4)
    fit = npmle(left, right)
    x = np.array([0.3, -12.0, 0.3, 1.1, -0.4, 15.0])
    lower, upper = cdf_confidence_band(fit, left, right, None, x)
    assert np.all((0 <= lower) & (lower <= fit.cdf(x) + 1e-12) & (fit.cdf(x) <= upper + 1e-12) & (upper <= 1))
    assert lower[0] == lower[2] and upper[0] == upper[2]
    assert lower[1] == 0.0 and upper[5] == 1.0               # beyond every anchor
    for k in (3, 4):
        alone = cdf_confidence_band(fit, left, right, None, [x[k]])
        assert alone[0][0] == pytest.approx(lower[k], abs=1e-7) and alone[1][0] == pytest.approx(upper[k], abs=1e-7)


def test_band_critical_values():
    """Interval data: D's quantile at 1 - 0.8 (1 - level), 2.486 at 95% (finite-sample
    calibration); the table's own levels with calibration='banerjee-wellner', interpolated in
    log(1 - level); chi-square(1) for exact points."""
    from privspec.backends.interval.npmle.bands import _BW_LEVELS, _BW_QUANTILES, _critical

    assert _critical(0.95, "auto", False) == pytest.approx(2.4864, abs=1e-3)
    assert _critical(0.95, "auto", True) == pytest.approx(stats.chi2.ppf(0.95, 1))
    for level, q in zip(_BW_LEVELS, _BW_QUANTILES):
        assert _critical(level, "banerjee-wellner", False) == pytest.approx(q)
    # between 0.95 and 0.99 the exponential tail, not a straight line in the level
    assert 2.27 < _critical(0.96, "banerjee-wellner", False) < 2.5
    assert _critical(0.999, "banerjee-wellner", False) > 3.8363
    with pytest.raises(ValueError):
        _critical(0.1, "banerjee-wellner", False)


def test_likelihood_ratio_at_the_band_ends_is_the_critical_value():
    from privspec.backends.interval.npmle.estimator import likelihood_ratio

    left, right = case1(200, seed=2)
    fit = npmle(left, right)
    x = np.array([-0.5, 0.5])
    lower, upper = cdf_confidence_band(fit, left, right, None, x)
    for ends in (lower, upper):
        assert likelihood_ratio(fit, left, right, None, x, ends) == pytest.approx([2.4864] * 2, abs=1e-3)
    assert likelihood_ratio(fit, left, right, None, x, fit.cdf(x)) == pytest.approx([0.0, 0.0], abs=1e-7)


def test_band_reaches_the_end_where_the_profile_is_flat():
    """Where the likelihood does not bound F(x) on one side (below 0 here every range
    straddles x, so F(0) = 0 fits as well as the maximum), the band runs to that end; its
    other ends are the roots of the likelihood-ratio statistic at the critical value."""
    from privspec.backends.interval.npmle.estimator import likelihood_ratio

    left, right = np.array([-1.0] * 10 + [2.0] * 5), np.array([1.0] * 10 + [3.0] * 5)
    fit = npmle(left, right)
    lower, upper = cdf_confidence_band(fit, left, right, None, [0.0, 1.5], calibration="chi2")
    assert lower[0] == 0.0
    # F(1.5) = 10/15 exactly: the binomial likelihood ratio's interval, inside (0, 1)
    assert 2 / 3 < upper[0] < 1 and 0 < lower[1] < 2 / 3 < upper[1] < 1
    lr = likelihood_ratio(fit, left, right, None, [0.0, 1.5, 1.5], [upper[0], lower[1], upper[1]])
    assert lr == pytest.approx([3.8415] * 3, abs=1e-3)


# ---- one engine for reports in several pieces (issue 15) ---------------------------------------------
def interval_reports(scheme: str, m: int, disclose, n: int, seed: int):
    """Reports of an interval mechanism (uniform(-3, 3) anchors, Y ~ N(0, 1)) as the back end
    fits them: distinct reports with counts, then their pieces (the acceptable range taken out)."""
    import sympy

    from privspec.backends.interval.fit import aggregate
    from privspec.backends.interval.ranges import likelihood_pieces
    from privspec.backends.interval.sampling import sample_interval
    from privspec.model.graph import IntervalMechanism, Law, Variable

    anchors = Law("uniform", (("a", sympy.Integer(-3)), ("b", sympy.Integer(3))))
    acceptable = None if disclose is None else tuple(sympy.nsimplify(v) for v in disclose)
    mech = IntervalMechanism("m", Variable("score", "continuous"), scheme, anchors, m, acceptable)
    rng = np.random.default_rng(seed)
    L, R, C = aggregate(*sample_interval(mech, rng.normal(size=n), rng))
    pl, pr, owner = likelihood_pieces(L, R, (-INF, INF), acceptable)
    return L, R, C, pl, pr, owner


def piece_containment(intervals: np.ndarray, pl, pr, owner, reports: int) -> np.ndarray:
    """Dense [report contains innermost interval]: the pieces' containment (the (l, r]
    conventions alone, as :func:`containment`), added up per report (the pieces are disjoint)."""
    D = containment(intervals, pl, pr).astype(float)
    out = np.zeros((reports, intervals.shape[0]))
    np.add.at(out, np.asarray(owner), D)
    return out


def check_kkt(fit: NPMLEResult, A: np.ndarray, counts: np.ndarray, tol: float = 1e-9) -> None:
    """The KKT conditions of the NPMLE, recomputed densely: the gradient
    D_j = sum_i c_i A_ij / P_i is at most n everywhere and equal to n on the support."""
    assert A.max() == 1.0                                    # 0/1, whatever the pieces
    P = A @ fit.mass
    grad = A.T @ (counts / P)
    n = counts.sum()
    assert np.all(grad <= n * (1 + tol))
    on = fit.mass > 0
    np.testing.assert_allclose(grad[on], n, rtol=tol)
    assert float(counts @ np.log(P)) == pytest.approx(fit.loglik, rel=1e-12, abs=1e-9)


#: the log-likelihood the removed scipy-nnls range fit (backends/interval_rangefit.py before
#: issue 15) reached on these data, all converged (KKT 2e-11 to 9e-10)
NNLS_LOGLIK = [
    (("ring", 3, None, 1500, 0), -991.345604948683),
    (("case2", 3, (-0.5, 0.5), 800, 4), -2575.3700931639096),
    (("ring", 3, (-0.5, 0.5), 800, 1), -2588.49781273158),
    (("ring", 4, (0.0, 1.0), 1000, 5), -3290.0749608805445),
]


@pytest.mark.parametrize("setting, nnls", NNLS_LOGLIK, ids=lambda v: str(v[:4]) if isinstance(v, tuple) else "")
def test_pieces_reach_the_range_fit_maximum_and_satisfy_kkt(setting, nnls):
    from privspec.backends.interval.npmle.estimator import npmle_pieces

    L, R, C, pl, pr, owner = interval_reports(*setting)
    assert np.bincount(owner).max() >= 2                       # reports in two or three pieces
    fit = npmle_pieces(pl, pr, owner, C)
    assert fit.converged and fit.kkt <= 1e-10
    # at least the nnls engine's maximum: up to round-off of a sum of ~1,000 logs (its
    # results differ from ours in the 12th digit, either way; the maximum is unique)
    assert fit.loglik >= nnls - 1e-9
    check_kkt(fit, piece_containment(fit.intervals, pl, pr, owner, C.size), C)


def test_ring_rows_and_ring_pieces_are_one_engine():
    """A ring range given as l > r (ring=True) and as its two pieces: the same design,
    the same maximum; innermost intervals computed in one place for both."""
    from privspec.backends.interval.npmle.estimator import npmle_pieces

    L, R, C, pl, pr, owner = interval_reports("ring", 3, None, 2000, 7)
    rows = npmle(L, R, C, ring=True)
    pieces = npmle_pieces(pl, pr, owner, C)
    np.testing.assert_array_equal(rows.intervals, pieces.intervals)
    assert rows.loglik == pytest.approx(pieces.loglik, rel=1e-13)
    np.testing.assert_allclose(rows.mass, pieces.mass, atol=1e-9)
    check_kkt(rows, piece_containment(rows.intervals, pl, pr, owner, C.size), C)


@pytest.mark.parametrize("disclose", [None, (-0.5, 0.5)])
def test_ring_data_at_n_3000_converge(disclose):
    """The nnls range fit stopped after 500 iterations without reaching the maximum on the
    ring design with an acceptable range at n = 3000 (seed 2: KKT 4e-9 after 8 minutes);
    the engine reaches it in a few dozen Newton steps."""
    from privspec.backends.interval.npmle.estimator import npmle_pieces

    L, R, C, pl, pr, owner = interval_reports("ring", 3, disclose, 3000, 2)
    fit = npmle_pieces(pl, pr, owner, C)
    assert fit.converged and fit.kkt <= 1e-10 and fit.iterations < 200
    assert fit.loglik >= (-11451.108485688204 if disclose else -np.inf) - 1e-8   # the nnls engine's, unconverged
    check_kkt(fit, piece_containment(fit.intervals, pl, pr, owner, C.size), C)


def test_pieces_hierarchical_path_agrees_with_one_dense_step(monkeypatch):
    """Rings and two-piece reports with many exact points (a large support): the block steps
    (their off-diagonal blocks for two pieces of one report) reach the dense step's maximum."""
    from privspec.backends.interval.npmle import solver as npmle_solver
    from privspec.backends.interval.npmle.estimator import npmle_pieces

    L, R, C, pl, pr, owner = interval_reports("ring", 3, (-0.5, 0.5), 1500, 3)
    rng = np.random.default_rng(3)
    y = rng.normal(size=300)                                  # exact values, one piece each
    pl, pr = np.r_[pl, y], np.r_[pr, y]
    owner, C = np.r_[owner, C.size + np.arange(y.size)], np.r_[C, np.ones(y.size)]
    dense = npmle_pieces(pl, pr, owner, C)
    monkeypatch.setattr(npmle_solver, "_K_FULL", 50)
    monkeypatch.setattr(npmle_solver, "_K_BLOCK", 16)
    blocked = npmle_pieces(pl, pr, owner, C)
    assert (blocked.mass > 0).sum() > 50                      # the hierarchical path ran
    assert blocked.converged and blocked.loglik == pytest.approx(dense.loglik, abs=1e-8)
    check_kkt(blocked, piece_containment(blocked.intervals, pl, pr, owner, C.size), C)


def test_npmle_pieces_validates_its_input():
    from privspec.backends.interval.npmle.estimator import npmle_pieces

    with pytest.raises(DataError, match="D030"):
        npmle_pieces([0.0, 2.0], [1.0, 3.0], [0, 2], [1.0, 1.0, 1.0])   # report 1 has no piece
    with pytest.raises(DataError, match="D030"):
        npmle_pieces([1.0], [0.0], [0], [1.0])                          # l > r
    with pytest.raises(DataError, match="D031"):
        npmle_pieces([0.0], [1.0], [0], [0.0])                          # nothing observed
    # overlapping or touching pieces of one report are their union
    a = npmle_pieces([0.0, 1.0, 3.0], [1.0, 2.0, 4.0], [0, 0, 1], [2.0, 1.0])
    b = npmle([0.0, 3.0], [2.0, 4.0], [2.0, 1.0])
    assert a.loglik == pytest.approx(b.loglik) and np.allclose(a.cdf([2, 4]), b.cdf([2, 4]))


def test_an_engine_failure_surfaces_instead_of_switching_engines(monkeypatch):
    """No fallback: an error of the engine reaches the caller (the CLI reports an internal
    error), and a fit stopped short of the maximum says so (converged, kkt) and gets no
    standard error."""
    import privspec
    from privspec.backends.interval.estimate import estimate_from_reports
    from privspec.backends.interval.fit import fit_npmle
    from privspec.backends.interval.reports import sample_reports

    model = privspec.load("""variable s: continuous [0, 150]
population s ~ uniform(0, 150)
mechanism mid = interval(s, case2(uniform(0, 150)), disclose [60, 80])
query m = estimate mean(s) from mid by npmle
""").model
    q = model.queries["m"]
    rng = np.random.default_rng(2)
    left, right = sample_reports(model, q.mechanism, rng.uniform(0, 150, 300), rng)
    from privspec.backends.interval.fit import aggregate

    L, R, C = aggregate(left, right)
    ok = fit_npmle(q.mechanism, L, R, C)
    assert ok.result.converged and "on ranges" in ok.engine

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("singular matrix")

    with monkeypatch.context() as mp:
        mp.setattr(npmle_module, "cnm", broken)               # the engine, as npmle_pieces calls it
        with pytest.raises(np.linalg.LinAlgError):
            fit_npmle(q.mechanism, L, R, C)
    with monkeypatch.context() as mp:
        short = npmle_module.npmle_pieces

        mp.setattr(npmle_module, "npmle_pieces", lambda *a, **k: short(*a, **{**k, "max_iter": 1}))
        r = estimate_from_reports(model, q, left, right)
        assert r.extras["converged"] is False and r.extras["kkt"] > 1e-10
        assert np.isnan(r.extras["se"]) and "stopped before its maximum" in r.extras["coverage_note"]


@st.composite
def piece_data(draw):
    """Reports of one to three disjoint pieces on a small grid (points, bounded and
    unbounded intervals), with counts."""
    reports = draw(st.integers(1, 10))
    pl, pr, owner = [], [], []
    for i in range(reports):
        ends = sorted(set(draw(st.lists(st.integers(-1, 7), min_size=1, max_size=6))))
        k = 0
        pieces = 0
        while k < len(ends) and pieces < 3:
            lo = float(ends[k])
            kind = draw(st.sampled_from(["point", "interval"])) if k + 1 < len(ends) else "point"
            if kind == "point":
                pl.append(lo), pr.append(lo)
                k += 1
            else:
                pl.append(-INF if lo == -1 else lo)
                pr.append(INF if ends[k + 1] == 7 else float(ends[k + 1]))
                k += 2
            owner.append(i)
            pieces += 1
            k += draw(st.integers(0, 1))          # sometimes leave a gap
    counts = draw(st.lists(st.integers(1, 3), min_size=reports, max_size=reports))
    return np.array(pl), np.array(pr), np.array(owner), np.array(counts, float)


@settings(derandomize=True, max_examples=80, deadline=None)
@given(piece_data())
def test_property_pieces_at_the_maximum(data):
    """Any reports in pieces: the KKT conditions hold on the dense design, and the fit is
    the one of the union where the pieces of a report touch or overlap."""
    from privspec.backends.interval.npmle.estimator import npmle_pieces

    pl, pr, owner, counts = data
    point = pl == pr
    if np.any(point & ~np.isfinite(pl)):
        return
    fit = npmle_pieces(pl, pr, owner, counts)
    assert fit.converged and fit.kkt <= 1e-10
    assert np.all(fit.mass >= 0) and abs(fit.mass.sum() - 1) < 1e-12
    A = np.minimum(piece_containment(fit.intervals, pl, pr, owner, counts.size), 1.0)
    check_kkt(fit, A, counts)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([-2.0, -1.0, -1e-300, 0.0, 1e-300, 0.5, 1.0, 2.0, -np.inf]), min_size=1, max_size=40),
       st.data())
def test_candidates_are_the_first_largest_positive_excess_of_each_segment(excess, data) -> None:
    """The CNM's new candidates, searched over the positive excesses only, are those of the
    plain definition: in each segment the first index where the excess takes the segment's
    maximum, where that maximum is positive (ties, zeros, -inf and empty answers)."""
    ex = np.array(excess)
    m = ex.size
    starts = np.array(sorted({0} | set(data.draw(st.lists(st.integers(0, m - 1), max_size=m)))))
    want = []
    for s, e in zip(starts, np.append(starts[1:], m)):
        seg = ex[s:e]
        if seg.max() > 0:
            want.append(s + int(np.argmax(seg)))
    assert npmle_solver._segment_maxima(ex, starts).tolist() == want


def test_constrained_fit_takes_groups_as_runs_of_innermost_intervals() -> None:
    """The profile's groups are runs (below and above a cut); groups that interleave are
    refused rather than read wrongly by slices."""
    from privspec.backends.interval.npmle.data import design_from_rows

    des = design_from_rows(np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0]), np.array([2.0, 1.0, 1.0]))
    p0 = np.array([0.4, 0.3, 0.3])               # a start that meets the group sums
    fit = npmle_solver.cnm(des, p0, tol=1e-10, max_iter=100, grp=np.array([0, 1, 1]), sums=np.array([0.4, 0.6]))
    assert fit.p[0] == pytest.approx(0.4) and fit.p[1:].sum() == pytest.approx(0.6)
    with pytest.raises(ValueError, match="run of innermost intervals"):
        npmle_solver.cnm(des, p0, tol=1e-10, max_iter=100, grp=np.array([0, 1, 0]), sums=np.array([0.4, 0.6]))


# ---- the working set (column generation) over many rows --------------------------------------------
def _case2_reports(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct Case-II reports of N(0, 1) values, anchors uniform(-3, 3): (-inf, a], (a, b], (b, inf)."""
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    a, b = np.sort(rng.uniform(-3, 3, size=(2, n)), axis=0)
    left = np.where(y <= a, -np.inf, np.where(y <= b, a, b))
    right = np.where(y <= a, a, np.where(y <= b, b, np.inf))
    return aggregate_intervals(left, right)


@pytest.mark.parametrize("seed", [1, 2])
def test_working_set_reaches_the_same_maximum_as_the_direct_method(seed: int) -> None:
    """Forced onto a few thousand reports, the working set (solve on the candidates, then
    the gradient on every innermost interval) ends at the maximum the direct method
    reaches: the same log-likelihood and report probabilities (unique at the NPMLE),
    and the KKT condition on every innermost interval, not only on the candidates."""
    from privspec.backends.interval.npmle.data import design_from_rows, row_probs

    left, right, counts = _case2_reports(3000, seed)
    des = design_from_rows(left, right, counts.astype(float))
    p0 = npmle_solver.initial(des)
    direct = npmle_solver.cnm(des, p0, tol=1e-10, max_iter=10_000, working_set_rows=10 ** 12)
    ws = npmle_solver.cnm(des, p0, tol=1e-10, max_iter=10_000, working_set_rows=0)
    assert direct.converged and ws.converged and ws.kkt <= 1e-10
    assert ws.loglik == pytest.approx(direct.loglik, rel=1e-12, abs=1e-9)
    P_direct, _ = row_probs(des, direct.p)
    P_ws, _ = row_probs(des, ws.p)
    assert np.abs(P_ws - P_direct).max() < 1e-7
    assert ws.p.min() >= 0 and ws.p.sum() == pytest.approx(1.0, abs=1e-12)
    # more than one round: the first candidates alone do not hold the maximum
    assert direct.rounds == 0 and ws.rounds >= 2 and ws.iterations > direct.iterations


def test_working_set_gives_way_where_the_candidates_do_not_merge_rows() -> None:
    """Exact points among intervals: nearly every report keeps its own run over the
    candidates, so a round would not shrink the rows; the direct method takes over from
    the start and gives its own answer, bit for bit."""
    from privspec.backends.interval.npmle.data import design_from_rows

    rng = np.random.default_rng(5)
    x = np.round(rng.normal(size=60), 3)
    lo = np.round(rng.normal(size=60), 3)
    hi = lo + np.round(rng.uniform(0.2, 1.5, size=60), 3)
    left, right, counts = aggregate_intervals(np.concatenate([x, lo]), np.concatenate([x, hi]))
    des = design_from_rows(left, right, counts.astype(float))
    p0 = npmle_solver.initial(des)
    direct = npmle_solver.cnm(des, p0, tol=1e-10, max_iter=10_000, working_set_rows=10 ** 12)
    ws = npmle_solver.cnm(des, p0, tol=1e-10, max_iter=10_000, working_set_rows=0)
    assert ws.rounds == 0 and ws.converged and direct.iterations > 1
    assert np.array_equal(ws.p, direct.p) and ws.loglik == direct.loglik


def test_working_set_keeps_the_profile_groups() -> None:
    """The profile likelihood's constrained fits (groups below and above a cut, each with its
    sum) through the working set: the band is the direct method's to the fits' round-off."""
    left, right, counts = _case2_reports(2000, 3)
    fit = npmle(left, right, counts)
    xs = [-0.5, 0.0, 0.8]
    want = cdf_confidence_band(fit, left, right, counts, xs, calibration="chi2")
    saved = npmle_solver._WORKING_SET_ROWS
    try:
        npmle_solver._WORKING_SET_ROWS = 0
        fit_ws = npmle(left, right, counts)
        got = cdf_confidence_band(fit_ws, left, right, counts, xs, calibration="chi2")
    finally:
        npmle_solver._WORKING_SET_ROWS = saved
    assert fit_ws.loglik == pytest.approx(fit.loglik, rel=1e-12)
    np.testing.assert_allclose(got[0], want[0], atol=1e-7)
    np.testing.assert_allclose(got[1], want[1], atol=1e-7)
    assert np.all(got[0] < fit.cdf(xs)) and np.all(fit.cdf(xs) < got[1])
