"""The profile likelihood band's constrained fits over a set of candidates (issue 38).

The band's numbers are pinned to those of the implementation before it (every constrained
fit over the whole design), computed on the same seeded data: the same within 1e-6 in F
(they agree to 3e-9).  Its coverage is checked by tests/test_interval_ci_coverage.py and
bench/interval_coverage.py, which run the same code.
"""
from __future__ import annotations

import numpy as np
import pytest

from privspec.backends.interval.npmle import bands
from privspec.backends.interval.npmle.data import as_rows, design_from_rows, merge_rows
from privspec.backends.interval.npmle.estimator import aggregate_intervals, cdf_confidence_band, likelihood_ratio, npmle
from privspec.backends.interval.npmle.solver import cnm

INF = np.inf


def case1(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, None]:
    rng = np.random.default_rng(seed)
    y, u = rng.normal(size=n), rng.uniform(-9, 9, size=n)
    return np.where(y <= u, -INF, u), np.where(y <= u, u, INF), None


def case2(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, None]:
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    u = np.sort(rng.uniform(-9, 9, size=(n, 2)), axis=1)
    left = np.where(y <= u[:, 0], -INF, np.where(y <= u[:, 1], u[:, 0], u[:, 1]))
    right = np.where(y <= u[:, 0], u[:, 0], np.where(y <= u[:, 1], u[:, 1], INF))
    return left, right, None


def case2_counts(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Anchors rounded to 0.1: distinct reports with counts."""
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    a, b = np.sort(np.round(rng.uniform(-3, 3, size=(2, n)), 1), axis=0)
    left = np.where(y <= a, -INF, np.where(y <= b, a, b))
    right = np.where(y <= a, a, np.where(y <= b, b, INF))
    return aggregate_intervals(left, right)


def mixture(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, None]:
    """Case II with a fifth of the values reported exactly."""
    left, right, _ = case2(n, seed)
    rng = np.random.default_rng(seed + 1)
    exact = rng.random(n) < 0.2
    y = np.round(rng.normal(size=n), 3)
    return np.where(exact, y, left), np.where(exact, y, right), None


QUARTILES = None
# (data, x (None: the fit's quartiles), options, the band before: x, lower, upper)
PINNED = {
    "case1_400": (lambda: case1(400, 11), [-1.0, -0.3, 0.0, 0.6, 1.4], {},
                  [-1.0, -0.3, 0.0, 0.6, 1.4],
                  [0.0, 0.2836983594809868, 0.2836983594809868, 0.5288452106415182, 0.8144784845834845],
                  [0.2441297008535031, 0.8602860484739989, 0.8602860484739989, 0.954922244303799, 0.9798031460710427]),
    "case2_3000": (lambda: case2(3000, 12), QUARTILES, {},
                   [-0.7294446247215802, 0.15168404286690773, 0.6547065074887684],
                   [0.1379377840035926, 0.4022328413744037, 0.6389398227799978],
                   [0.35572847618416953, 0.6353313026974882, 0.8293357875545974]),
    "case2_3000_x": (lambda: case2(3000, 12), [-2.5, -0.7, 0.1, 0.1, 1.2, 30.0], {},
                     [-2.5, -0.7, 0.1, 0.1, 1.2, 30.0],
                     [0.0003738278495888765, 0.14841860193312098, 0.4012001416353513, 0.4012001416353513,
                      0.7287349889490259, 0.999347884763951],
                     [0.013630509170278091, 0.3560519239477087, 0.5707571974111234, 0.5707571974111234,
                      0.9306994383247148, 1.0]),
    "case2_counts": (lambda: case2_counts(5000, 13), [-1.05, 0.0, 0.35, 1.0], {},
                     [-1.05, 0.0, 0.35, 1.0],
                     [0.08829067322031597, 0.4719877313873912, 0.5764091496994644, 0.7767860753683286],
                     [0.18865947574881115, 0.5559157966876292, 0.6403302362728149, 0.8502869876812064]),
    "mixture_1500": (lambda: mixture(1500, 14), [-0.5, 0.25, 0.9], {"calibration": "chi2"},
                     [-0.5, 0.25, 0.9],
                     [0.30618237600048187, 0.6059020970067046, 0.8255761001324017],
                     [0.3991578812396773, 0.6997642350473178, 0.8933541614786575]),
    "case2_20000_l90": (lambda: case2(20000, 15), QUARTILES, {"level": 0.9},
                        [-0.7266162104475118, 0.05880728956741876, 0.5723728730194217],
                        [0.17747008287570606, 0.46069274942994526, 0.6720483587648713],
                        [0.28525712049315627, 0.5652209411257857, 0.7829429872656833]),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_band_is_the_one_of_constrained_fits_over_the_whole_design(name: str) -> None:
    """Seeded Case I, Case II (quartiles, any points, counts, another level) and exact points
    mixed in: the band as the whole design's constrained fits gave it, within 1e-6."""
    data, x, options, x_before, lower_before, upper_before = PINNED[name]
    left, right, counts = data()
    fit = npmle(left, right, counts)
    if x is None:
        x = fit.quantile([0.25, 0.5, 0.75])
        np.testing.assert_allclose(x, x_before, rtol=0, atol=1e-12)
    lower, upper = cdf_confidence_band(fit, left, right, counts, x, **options)
    np.testing.assert_allclose(lower, lower_before, rtol=0, atol=1e-6)
    np.testing.assert_allclose(upper, upper_before, rtol=0, atol=1e-6)


def ring_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(21)
    a = np.round(rng.uniform(0, 10, 400), 1)
    w = np.round(rng.uniform(0.5, 4, 400), 1)
    return a, np.round(np.where(a + w > 10, a + w - 10, a + w), 1)      # a ring of circumference 10


def test_ring_band_and_likelihood_ratio_are_as_before() -> None:
    """Reports in two pieces (rings) keep the whole design; the statistic itself, pinned."""
    left, right = ring_data()
    fit = npmle(left, right, None, ring=True)
    lower, upper = cdf_confidence_band(fit, left, right, None, [2.0, 5.0, 7.5], ring=True)
    np.testing.assert_allclose(lower, [0.11547501997582027, 0.47255853272600334, 0.651261002093148], atol=1e-6)
    np.testing.assert_allclose(upper, [0.22751527850528339, 0.5823353236822705, 0.7698023133742596], atol=1e-6)
    l2 = np.concatenate([np.full(40, -INF), np.zeros(40), np.ones(30)])
    r2 = np.concatenate([np.zeros(40), np.ones(40), np.full(30, INF)])
    fit2 = npmle(l2, r2)
    lr = likelihood_ratio(fit2, l2, r2, None, [0.0, 0.0, 0.5, 1.0], [0.3, 0.45, 0.6, 0.8])
    # F(0.5) is not identified: the maximum's mass on (0, 1] may lie on either side of 0.5,
    # so every theta in [4/11, 8/11] (fit.cdf_bounds) is a maximum and its statistic is 0
    # (this entry was pinned at 0.263, which no version of the code gives on this machine)
    lo, hi = fit2.cdf_bounds([0.5])
    assert lo[0] < 0.6 < hi[0]
    np.testing.assert_allclose(lr, [2.0463262391910177, 3.3718055449021733, 0.0, 3.3596669295383776],
                               rtol=0, atol=1e-8)


def _design(left, right, counts, cuts):
    l, r, c = merge_rows(*as_rows(left, right, counts, ring=False))
    return design_from_rows(l, r, c, cuts=np.asarray(cuts, dtype=float))


def test_fits_over_the_candidates_grow_them_to_the_whole_designs_maximum() -> None:
    """The space starts on the maximum's support (and the neighbours of the cut), over far
    fewer rows than the design; a constrained fit there that some other innermost interval
    would raise is found out by the check over the whole design, and the candidates grow
    until the fit is the whole design's constrained maximum."""
    left, right, counts = case2(3000, 12)
    cut = 0.15
    des = _design(left, right, counts, [cut])
    full = cnm(des, bands.initial(des), tol=1e-10, max_iter=10_000)
    space = bands._Space(des, full.p, np.array([cut]))
    assert space.reduced and space.sub.a.size < des.a.size / 2 and space.J.size < des.m / 4
    prof = bands._Profile(space, full.p, cut, 1e-10)
    theta = prof.theta_hat - 0.08
    sizes = [space.J.size]
    ll, slope = prof.exact_loglik(theta)
    sizes.append(space.J.size)
    grp = (des.inner_right > cut).astype(np.intp)
    sums = np.array([theta, 1.0 - theta])
    p0 = full.p * np.where(grp == 0, theta / prof.theta_hat, (1 - theta) / (1 - prof.theta_hat))
    whole = cnm(des, p0, tol=1e-10, max_iter=10_000, grp=grp, sums=sums)
    assert sizes[1] > sizes[0]                           # it had to grow
    assert ll == pytest.approx(whole.loglik, rel=0, abs=1e-7)
    assert slope == pytest.approx(des.n * float(whole.lam[0] - whole.lam[1]), rel=1e-5)
    assert space.verify(prof.p, cut, sums, 1e-10)


def test_the_band_over_the_whole_design_is_the_same(monkeypatch) -> None:
    """With no room to merge rows (the whole design, as before) the band is the same."""
    left, right, counts = case2_counts(5000, 13)
    fit = npmle(left, right, counts)
    x = [-1.05, 0.0, 0.35, 1.0]
    fast = cdf_confidence_band(fit, left, right, counts, x)
    monkeypatch.setattr(bands, "_MERGE_PER_ROW", 0)
    whole = cdf_confidence_band(fit, left, right, counts, x)
    np.testing.assert_allclose(fast, whole, rtol=0, atol=1e-7)


def test_the_start_from_another_fit_falls_back_to_the_solvers() -> None:
    """The maximum's masses are the fit's, moved onto the design refined at the cuts; a fit
    of other data (which leaves some report without mass) gives way to the usual start."""
    left, right, counts = case2(500, 3)
    des = _design(left, right, counts, [0.1, 0.5])
    fit = npmle(left, right, counts)
    p = bands._start_from(des, fit)
    assert p.sum() == pytest.approx(1.0) and np.count_nonzero(p) == np.count_nonzero(fit.mass)
    other = npmle(*case2(500, 4)[:2])
    np.testing.assert_array_equal(bands._start_from(des, other), bands.initial(des))


def test_aggregate_is_the_distinct_pairs_with_their_counts() -> None:
    """The reports' aggregation before the fit (a lexsort, no longer np.unique by rows): the
    sorted distinct pairs and their counts, infinite ends and nulls as before."""
    from privspec.backends.interval.fit import aggregate

    rng = np.random.default_rng(1)
    n = 2000
    left = np.round(rng.normal(size=n), 1)
    right = left + np.round(rng.uniform(0, 1, n), 1)
    left[rng.random(n) < 0.1], right[rng.random(n) < 0.1] = -INF, INF
    left[rng.random(n) < 0.05] = np.nan
    counts = rng.integers(1, 5, n).astype(float)
    keep = ~np.isnan(left)
    pairs, inverse = np.unique(np.column_stack([left[keep], right[keep]]), axis=0, return_inverse=True)
    for c in (None, counts):
        weights = None if c is None else c[keep]
        want = np.bincount(inverse.ravel(), weights=weights, minlength=len(pairs)).astype(float)
        got = aggregate(left, right, c)
        np.testing.assert_array_equal(got[0], pairs[:, 0])
        np.testing.assert_array_equal(got[1], pairs[:, 1])
        np.testing.assert_array_equal(got[2], want)
    assert [a.size for a in aggregate(np.array([np.nan]), np.array([np.nan]))] == [0, 0, 0]
    # pairs already distinct and in order (an engine's tally) come back as they are
    got = aggregate(pairs[:, 0], pairs[:, 1], want)
    assert all(np.array_equal(a, b) for a, b in zip(got, (pairs[:, 0], pairs[:, 1], want)))
    assert aggregate(np.array([0.0, -0.0]), np.array([1.0, 1.0]))[2].tolist() == [2.0]


def _fresh(code: str) -> str:
    """The last line ``code`` prints, run in a fresh interpreter (nothing loaded before)."""
    import subprocess
    import sys
    from pathlib import Path
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_the_fits_factor_on_one_blas_thread_in_a_fresh_interpreter() -> None:
    # scipy.linalg brings its own OpenBLAS when first used: loaded inside the limit (in a
    # process where scipy.stats had not loaded it), it ran every Cholesky factor of the
    # first fit on all cores (9 s of 13 s CPU of `privspec run` at 1e6 Case-II reports,
    # load 8-9)
    code = ("import numpy as np\n"
            "from threadpoolctl import threadpool_info\n"
            "from privspec.backends.interval.npmle import solver\n"
            "from privspec.backends.interval.npmle.estimator import npmle\n"
            "seen, inner = set(), solver.qp\n"
            "def spy(*args, **kwargs):\n"
            "    out = inner(*args, **kwargs)\n"
            "    seen.update(i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas')\n"
            "    return out\n"
            "solver.qp = spy\n"
            "rng = np.random.default_rng(1)\n"
            "y, u = rng.normal(size=300), np.sort(rng.uniform(-3, 3, size=(300, 2)), axis=1)\n"
            "l = np.where(y <= u[:, 0], -np.inf, np.where(y <= u[:, 1], u[:, 0], u[:, 1]))\n"
            "r = np.where(y <= u[:, 0], u[:, 0], np.where(y <= u[:, 1], u[:, 1], np.inf))\n"
            "npmle(l, r)\n"
            "print(sorted(seen))")
    assert _fresh(code) == "[1]"


def test_reading_case2_reports_loads_no_scipy_stats(tmp_path) -> None:
    # the reports' check needs the anchor law's support only (laws.law_support), not a
    # scipy.stats distribution (1 s of the command's CPU)
    left, right, _ = case2(200, 5)
    data = tmp_path / "reports.csv"
    data.write_text("y\n" + "".join(f'"({float(a)!r}, {float(b)!r}]"\n' for a, b in zip(left, right)), encoding="utf-8")
    spec = tmp_path / "case2.privspec"
    spec.write_text("variable y: continuous\nmechanism M = interval(y, case2(uniform(-9, 9)))\n"
                    "query F = estimate cdf(y) from M by npmle\n", encoding="utf-8")
    code = ("import contextlib, io, sys\nfrom privspec.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['run', {str(spec)!r}, '--data', {str(data)!r}, '--quiet']) == 0\n"
            "print('scipy.stats' in sys.modules)")
    assert _fresh(code) == "False"


def test_each_bound_takes_a_few_constrained_fits(monkeypatch) -> None:
    """Each bound's first try lies as far out as the last bound found (the first at the
    cube-root rate) and the check of a bound reuses its fit: the three quartiles' six bounds
    take at most 31 constrained fits besides the maximum (26 here; 38 when the first try lay
    one binomial standard error out and each bound found was fitted again to be checked),
    and the band is the pinned one."""
    calls = []
    real = bands.cnm
    monkeypatch.setattr(bands, "cnm", lambda *a, **k: calls.append(1) or real(*a, **k))
    left, right, _ = case2(20000, 15)
    fit = npmle(left, right)
    lower, upper = cdf_confidence_band(fit, left, right, None, fit.quantile([0.25, 0.5, 0.75]), level=0.9)
    np.testing.assert_allclose(lower, PINNED["case2_20000_l90"][4], rtol=0, atol=1e-6)
    np.testing.assert_allclose(upper, PINNED["case2_20000_l90"][5], rtol=0, atol=1e-6)
    assert len(calls) - 1 <= 31


def test_checking_a_bound_just_found_does_not_fit_it_again(monkeypatch) -> None:
    """:meth:`_Profile.exact_at` right after a fit at the same theta over the same J reuses
    that fit (its masses and log-likelihood), and fits again once J has changed."""
    left, right, counts = case2(3000, 12)
    cut = 0.15
    des = _design(left, right, counts, [cut])
    full = cnm(des, bands.initial(des), tol=1e-10, max_iter=10_000)
    space = bands._Space(des, full.p, np.array([cut]))
    prof = bands._Profile(space, full.p, cut, 1e-10)
    theta = prof.theta_hat - 0.01
    first = prof.loglik(theta)
    calls = []
    real = bands.cnm
    monkeypatch.setattr(bands, "cnm", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert prof.loglik(theta) == first and not calls
    space.restrict(np.arange(des.m))           # a new J: the fit is made again
    again = prof.loglik(theta)
    assert len(calls) == 1 and again[0] >= first[0] - 1e-9


def _same_design(a, b) -> bool:
    fields = ("inner_left", "inner_right", "a", "b", "b1", "c", "pa", "pb", "powner", "pc")
    return a.m == b.m and a.n == b.n and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in fields)


def test_the_design_refined_at_cuts_is_the_one_built_with_them() -> None:
    """refine_design (the fit's design refined at the band's points) is design_from_rows with
    the cuts, array for array: seeded rows on a coarse grid (ties, infinite ends, counts),
    cuts at ends, inside innermost intervals, in gaps, beyond the data, side by side."""
    from privspec.backends.interval.npmle.refine import refine_design

    rng = np.random.default_rng(38)
    points = np.concatenate([np.arange(-2, 14) / 2, np.arange(-2, 14) / 2 + 0.25])
    for _ in range(1500):
        n = int(rng.integers(1, 60))
        ends = rng.integers(0, 12, size=(n, 2)).astype(float) / 2
        left, right = ends.min(axis=1), ends.max(axis=1)
        right[left == right] += 0.5
        if rng.random() < 0.5:
            left[rng.random(n) < 0.2] = -INF
            right[rng.random(n) < 0.2] = INF
        counts = rng.integers(1, 4, n).astype(float) if rng.random() < 0.5 else None
        cuts = rng.choice(points, size=int(rng.integers(1, 5)))
        l, r, c = merge_rows(*as_rows(left, right, counts))
        des = design_from_rows(l, r, c)
        if rng.random() < 0.3:      # innermost intervals' right ends (the band's quartiles are)
            ends = des.inner_right[np.isfinite(des.inner_right)]
            if ends.size:
                cuts = np.concatenate([rng.choice(ends, size=int(rng.integers(1, 4))), cuts[:1]])
        got = refine_design(des, l, r, c, cuts)
        assert got is not None and _same_design(got, design_from_rows(l, r, c, cuts=cuts)), (left, right, cuts)
    # the quartiles of a Case-II fit, and points anywhere
    l, r, c = merge_rows(*as_rows(*case2(20000, 15)[:2]))
    des = design_from_rows(l, r, c)
    for cuts in (npmle(l, r, c).quantile([0.25, 0.5, 0.75]), np.array([-20.0, 0.1, 0.2, 30.0])):
        assert _same_design(refine_design(des, l, r, c, cuts), design_from_rows(l, r, c, cuts=cuts))
    # exact points, rings and infinite cuts: not derived (None: the band builds its own)
    assert refine_design(design_from_rows(*merge_rows(*as_rows([0.0, 1.0], [1.0, 1.0]))),
                         np.array([0.0, 1.0]), np.array([1.0, 1.0]), np.ones(2), np.array([0.5])) is None
    assert refine_design(des, l, r, c, np.array([INF])) is None


def test_the_band_from_the_fits_design_is_the_same() -> None:
    """cdf_confidence_band with the fit's design (npmle_design, as fit_npmle passes it) gives
    the band of the design built anew, to the bit; the list holding it is emptied."""
    from privspec.backends.interval.npmle.estimator import npmle_design

    left, right, _ = case2(20000, 15)
    fit, des = npmle_design(left, right)
    x = fit.quantile([0.25, 0.5, 0.75])
    box = [des]
    del des
    got = cdf_confidence_band(fit, left, right, None, x, level=0.9, design=box)
    assert box == []
    want = cdf_confidence_band(fit, left, right, None, x, level=0.9)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got[0], PINNED["case2_20000_l90"][4], rtol=0, atol=1e-6)


@pytest.mark.parametrize("data, adds", [(lambda: case2(20000, 15)[:2], True), (lambda: case2_counts(20000, 4), False),
                                        (lambda: case1(5000, 3)[:2], True)])
def test_the_fits_masses_are_the_maximum_refined_at_its_right_ends(data, adds: bool) -> None:
    """Cuts at right ends of the fit's innermost intervals (its quartiles) add at most one
    innermost interval each, held only by reports that hold the one ending at the cut: the
    fit's masses meet the refined design's KKT conditions as they are, with the fit's
    log-likelihood (bands._maximum takes them without a pass over the rows), and the band
    from them is the band from the solver's maximum."""
    from privspec.backends.interval.npmle.data import gradient, loglik, row_probs

    l, r, c = merge_rows(*as_rows(*data()))
    fit = npmle(l, r, c)
    cum = np.cumsum(fit.mass)
    cuts = np.unique(fit.intervals[np.searchsorted(cum, [0.1, 0.25, 0.5, 0.75, 0.9]), 1])
    des = design_from_rows(l, r, c, cuts=cuts)
    # (continuous ends: the cuts made new innermost intervals; on a grid every end is a left end too)
    assert des.m > fit.intervals.shape[0] if adds else des.m == fit.intervals.shape[0]
    p, ll = bands._maximum(des, fit, cuts, 1e-10, True)
    np.testing.assert_array_equal(p, bands._mapped(des, fit))
    assert ll == fit.loglik
    P, MP = row_probs(des, p)
    assert float((gradient(des, P, MP) / des.n).max()) - 1.0 <= 1e-10      # the KKT conditions
    assert loglik(des, P, MP) == pytest.approx(fit.loglik, rel=1e-13, abs=0)
    solved, ll_solved = bands._maximum(des, fit, cuts, 1e-10, False)           # the solver's maximum
    assert ll_solved == pytest.approx(ll, rel=0, abs=1e-8)
    # and the band: the same as from the solver's maximum (the shortcut switched off)
    got = cdf_confidence_band(fit, l, r, c, cuts)
    real = bands._maximum
    try:
        bands._maximum = lambda des, result, cuts, tol, plain: real(des, result, cuts, tol, False)
        want = cdf_confidence_band(fit, l, r, c, cuts)
    finally:
        bands._maximum = real
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    # a cut inside an innermost interval is no right end: the solver decides
    inside = np.array([0.5 * (fit.intervals[1, 0] + fit.intervals[1, 1])]) if np.isfinite(fit.intervals[1]).all() \
        else None
    if inside is not None and fit.intervals[1, 0] < inside[0] < fit.intervals[1, 1]:
        split = design_from_rows(l, r, c, cuts=inside)
        q, ll_inside = bands._maximum(split, fit, inside, 1e-10, True)
        assert ll_inside >= fit.loglik - 1e-8


def test_the_qp_with_variables_dropped_reuses_the_factor() -> None:
    """The active-set QP's solves after dropping variables (one factor, each drop an equality
    constraint) reach the optimum that solving each passive set afresh reaches: seeded
    problems whose warm start holds mass the optimum has not, checked against the KKT
    conditions and a fresh solve on the optimum's support."""
    from privspec.backends.interval.npmle import qp as qp_module

    rng = np.random.default_rng(7)
    for _ in range(40):
        k = int(rng.integers(5, 60))
        A = rng.random((3 * k, k)) < 0.3
        G = A.T @ (A * rng.uniform(0.5, 2, 3 * k)[:, None]) + 1e-3 * np.eye(k)
        h = rng.normal(size=k) * 3
        grp = (np.arange(k) >= k // 2).astype(np.intp)
        sums = np.array([0.4, 0.6])
        x0 = np.where(grp == 0, 0.4, 0.6) / np.bincount(grp)[grp]
        x = qp_module.qp(G, h, x0, grp, sums)
        assert np.all(x >= 0) and np.allclose(np.bincount(grp, x), sums, atol=1e-12)
        on = np.flatnonzero(x > 0)
        z, mu, _ = qp_module._eq_solve(G[np.ix_(on, on)], h[on], grp[on], sums, 2)
        np.testing.assert_allclose(x[on], z, rtol=1e-8, atol=1e-10)
        w = h - G @ x - mu[grp]           # no variable at zero would raise the objective
        assert np.all(w[x == 0] <= 1e-8 * max(1.0, np.abs(h).max()))


def test_the_qps_direction_is_the_derivative_of_its_minimum() -> None:
    """The tangent the QP reports (its minimum's change per unit of mass moved from the
    second group to the first) is the finite difference of the minima at sums 1e-7 apart,
    on seeded problems whose optimum drops variables of the warm start."""
    from privspec.backends.interval.npmle import qp as qp_module

    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(20):
        k = int(rng.integers(6, 40))
        A = rng.random((3 * k, k)) < 0.3
        G = A.T @ (A * rng.uniform(0.5, 2, 3 * k)[:, None]) + 1e-3 * np.eye(k)
        h = rng.normal(size=k) * 3 + 5
        grp = (np.arange(k) >= k // 2).astype(np.intp)
        x0 = np.where(grp == 0, 0.4, 0.6) / np.bincount(grp)[grp]
        out: list = []
        x = qp_module.qp(G, h, x0, grp, np.array([0.4, 0.6]), direction=(np.array([1.0, -1.0]), out))
        eps = 1e-7
        moved = qp_module.qp(G, h, x, grp, np.array([0.4 + eps, 0.6 - eps]))
        if not np.array_equal(moved > 0, x > 0):
            continue                      # the support changes within eps: no derivative there
        assert out and out[0] is not None
        np.testing.assert_allclose(out[0], (moved - x) / eps, rtol=0, atol=1e-5 * max(1.0, np.abs(out[0]).max()))
        assert np.all(out[0][x == 0] == 0.0) and abs(out[0][grp == 0].sum() - 1.0) < 1e-9
        checked += 1
    assert checked >= 15


def test_the_profiles_fits_start_along_the_last_ones_tangent() -> None:
    """A constrained fit reports its masses' tangent in theta (the derivative of the
    constrained maximum: the finite difference of two fits 1e-6 apart), and the next fit
    of the profile starts along it: a step of 1e-4 in theta then takes at most one Newton
    step, with the maximum the same as from the groups' rescaling alone."""
    left, right, counts = case2(3000, 12)
    cut = 0.15
    des = _design(left, right, counts, [cut])
    full = cnm(des, bands.initial(des), tol=1e-10, max_iter=10_000)
    grp = (des.inner_right > cut).astype(np.intp)
    theta = float(full.p[grp == 0].sum()) - 0.02

    def fit(t: float, p0: np.ndarray):
        return cnm(des, p0, tol=1e-10, max_iter=10_000, grp=grp, sums=np.array([t, 1.0 - t]), tangent=True)

    def rescaled(p: np.ndarray, t: float) -> np.ndarray:
        return p * np.where(grp == 0, t / p[grp == 0].sum(), (1 - t) / p[grp == 1].sum())

    at = fit(theta, rescaled(full.p, theta))
    assert at.tangent is not None and abs(at.tangent[grp == 0].sum() - 1.0) < 1e-9
    near = fit(theta + 1e-6, rescaled(at.p, theta + 1e-6))
    np.testing.assert_allclose(at.tangent, (near.p - at.p) / 1e-6, rtol=0, atol=1e-3)
    start = at.p + 1e-4 * at.tangent
    start[start < 0] = 0.0
    along = fit(theta + 1e-4, rescaled(start, theta + 1e-4))
    plain = fit(theta + 1e-4, rescaled(at.p, theta + 1e-4))
    assert along.iterations <= 1 < plain.iterations or along.iterations < plain.iterations
    assert along.loglik == pytest.approx(plain.loglik, rel=0, abs=1e-8)


def test_a_grown_merge_is_the_merge_from_scratch() -> None:
    """grow_merge (the band's candidates grown a few at a time) gives the merged rows of
    merge_over of the larger set, row for row and count for count, on seeded designs
    (ties, counts, infinite ends), for sets grown at the edges, inside gaps, side by side,
    and several times over (the sizes carried from one growth to the next)."""
    from privspec.backends.interval.npmle.merged import grow_merge, merge_over

    rng = np.random.default_rng(7)
    for trial in range(40):
        n = int(rng.integers(20, 400))
        left, right, counts = case2_counts(n, trial) if trial % 2 else case2(n, trial)
        des = _design(left, right, counts, [])
        m = des.m
        # a set meeting every row: the solver's start, then each row's own interval added
        full = cnm(des, bands.initial(des), tol=1e-10, max_iter=10_000)
        J = np.flatnonzero(full.p > 0)
        sub, row = merge_over(des, J)
        sizes = None
        for _ in range(4):
            extra = rng.choice(m, size=int(rng.integers(1, 6)))
            if trial % 5 == 0:
                extra = np.concatenate([extra, [0, m - 1]])      # at the edges too
            grown = np.union1d(J, extra)
            sub, row, sizes = grow_merge(des, J, sub, row, grown, sizes)
            want, want_row = merge_over(des, grown)
            for f in ("a", "b", "c"):
                np.testing.assert_array_equal(getattr(sub, f), getattr(want, f))
            np.testing.assert_array_equal(row, want_row)
            np.testing.assert_array_equal(sizes, np.bincount(want_row, minlength=want.a.size))
            assert sub.m == grown.size and np.array_equal(sub.inner_right, des.inner_right[grown])
            J = grown
