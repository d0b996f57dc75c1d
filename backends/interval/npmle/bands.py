"""Pointwise confidence bands for the NPMLE of ``F``: the profile likelihood ratio and
the bootstrap.

* :func:`cdf_confidence_band`: intervals for ``F(x)`` at any finite points, by inverting
  the profile likelihood ratio (``"profile"``, the default; Banerjee-Wellner's law
  with a finite-sample calibration for interval data, chi-square(1) for exact points
  only) or by the percentile bootstrap (``"bootstrap"``);
* :func:`likelihood_ratio`: the statistic the profile band inverts, at given
  ``(x, theta)`` pairs.

The constrained maxima ``max{loglik : F(x) = theta}`` are found by the same solver
(:func:`.solver.cnm` with the masses below and above ``x`` fixed), on innermost
intervals refined at each ``x`` (a zero-weight range ending at ``x``), so that ``F(x)``
is well defined in the constraint.  They run over a set of candidate innermost intervals
kept for the whole band, the rows merged by their runs over it (:class:`_Space`), and the
fit at each bound found is checked over every innermost interval (the set grown where it
falls short): the same bounds, a small fraction of the passes over millions of rows.

Examples
--------
>>> from privspec.backends.interval.npmle.estimator import npmle
>>> l, r = [-np.inf] * 30 + [0.0] * 30, [0.0] * 30 + [np.inf] * 30
>>> lo, hi = cdf_confidence_band(npmle(l, r), l, r, None, [0.0], calibration="chi2")
>>> bool(lo[0] < 0.5 < hi[0])
True
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.progress import progress
from privspec.backends.core.memory import reuse_freed_memory
from privspec.backends.interval.npmle.data import (Design, as_rows, design_from_rows, gradient, merge_rows,
                                                   prefix_sums, row_probs, run_mass)
from privspec.backends.interval.npmle.merged import grow_merge, merge_over
from privspec.backends.interval.npmle.refine import refine_design
from privspec.backends.interval.npmle.search import profile_interval
from privspec.backends.interval.npmle.groups import Groups
from privspec.backends.interval.npmle.qp import one_qp_thread
from privspec.backends.interval.npmle.result import NPMLEResult, make_result
from privspec.backends.interval.npmle.solver import candidates, cnm, initial

__all__ = ["cdf_confidence_band", "likelihood_ratio"]

# Quantiles of Chernoff-type law D of the likelihood-ratio statistic for F(x) from
# current-status (Case I) data: Banerjee and Wellner (2001), Table 2, as tabulated in
# R's csci package (controlCSCI).  Used for levels in [0.25, 0.99], interpolated in
# log(1 - level): D's upper tail is close to exponential (the table's 0.85, 0.9, 0.95
# and 0.99 quantiles lie on one line in log(1 - level) to 0.01), so this is accurate
# between the tabulated levels where interpolating in the level is not.
_BW_LEVELS = (0.25, 0.5, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99)
_BW_QUANTILES = (0.06402, 0.28506, 0.80694, 0.98729, 1.22756, 1.60246, 2.26916, 3.8363)
#: The finite-sample calibration: D's quantile at 1 - 0.8 (1 - level) (2.486 for 95%).
#: D is the limit, reached slowly (the NPMLE's local sample grows as n^(2/3)): in
#: simulation (Case I with uniform anchors, Table II's and U(-9, 9); Case II with
#: logistic(0, 5) anchors; n = 100-1,000) the statistic's 95% quantile at fixed points was
#: 2.37-2.57, so D's own 0.95 quantile covered 91-94%; 2.486 covered 93-96%
#: (bench/interval_coverage.py).
_FINITE_TAIL = 0.8
#: a band's constrained fits run over rows merged by their runs over a set of candidates
#: while the k x k table of runs is at most this many times the rows (as the solver's steps)
_MERGE_PER_ROW = 4
#: a fit over the candidates whose KKT measure within them is above this stopped short of
#: their maximum (the solver found no rising step on the merged rows), not at round-off
_STALLED = 1e-7


def _critical(level: float, calibration: str, all_points: bool) -> float:
    if calibration == "auto":
        # exact data: the regular n^(1/2) case (chi-square); interval data: cube-root
        calibration = "chi2" if all_points else "finite-sample"
    if calibration == "chi2":
        return float(scipy.special.ndtri((1.0 + level) / 2.0) ** 2)   # the chi-square(1) quantile
    if calibration in ("banerjee-wellner", "finite-sample"):
        tail = 1.0 - level
        if calibration == "finite-sample":
            tail *= _FINITE_TAIL
        if not 1e-4 <= tail <= 1.0 - _BW_LEVELS[0]:
            raise ValueError(f"the Banerjee-Wellner quantiles cover levels {_BW_LEVELS[0]} to 0.9999, "
                             f"not {1.0 - tail:g}; use calibration='chi2'")
        # interpolate in log(1 - level): the table's tail is close to exponential, which
        # also carries it past its last level, 0.99
        logs = np.log(1.0 - np.array(_BW_LEVELS))
        q = np.array(_BW_QUANTILES)
        t = np.log(tail)
        if t < logs[-1]:
            return float(q[-1] + (t - logs[-1]) * (q[-1] - q[-2]) / (logs[-1] - logs[-2]))
        return float(np.interp(t, logs[::-1], q[::-1]))
    raise ValueError("calibration must be 'auto', 'finite-sample', 'banerjee-wellner' or 'chi2', "
                     f"not {calibration!r}")


def cdf_confidence_band(result: NPMLEResult, left: Any, right: Any, counts: Any, x: Any, *,
                        level: float = 0.95, method: str = "profile", reps: int = 200,
                        seed: int | None = None, calibration: str = "auto", ring: bool = False,
                        tol: float = 1e-10, design: list | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise confidence intervals for ``F(x)`` at each ``x``.

    Parameters
    ----------
    result : NPMLEResult
        The NPMLE of the same data (its log-likelihood is the reference).
    left, right, counts : array_like
        The data given to :func:`npmle` (``counts`` may be None).
    x : array_like
        Where to bound ``F``.
    level : float
        Confidence level of each interval.
    method : {"profile", "bootstrap"}
        ``"profile"``: the set of ``theta`` whose constrained maximum (``F(x) = theta``,
        by the same Newton method) is within ``c / 2`` of the maximum log-likelihood,
        ``c`` from the likelihood ratio's limit: the law ``D`` of Banerjee and Wellner
        (2001) for interval data, chi-square(1) for exact points only.  ``D`` is reached
        slowly, so by default (``calibration="finite-sample"``) ``c`` is its quantile at
        ``1 - 0.8 (1 - level)`` (2.486 at 95%, not D's 2.269): at points fixed in advance
        D's own quantile covered 91-94% in simulation at n = 100-1,000 (Case I with
        uniform anchors, Case II with logistic anchors), 2.486 covered 93-96%.  ``D`` is
        the limit for Case-I (current-status) data; for Case II and other interval data
        it serves as an approximation (the same simulation).  At points the data choose
        (the fit's quartiles, which ``privspec run`` prints) the band is conservative:
        97-100% in the same simulation.  How each bound is found: :func:`.search.profile_interval`.
        ``"bootstrap"``: percentile intervals of ``F*(x)`` over ``reps`` refits on
        multinomial resamples of the observation counts.  For interval data this is
        only approximate (the NPMLE converges at the cube-root rate, where the plain
        bootstrap is known not to be consistent: coverage 0.84-0.93 in the same
        simulation); prefer the profile.
    reps, seed : int
        Bootstrap resamples and seed.
    calibration : {"auto", "finite-sample", "banerjee-wellner", "chi2"}
        The profile's critical value (``"auto"``: chi-square(1) for exact points only,
        ``"finite-sample"`` otherwise; ``"banerjee-wellner"``: D's own ``level``
        quantile; their table covers levels 0.25 to 0.99, extended along its
        exponential tail).
    ring : bool
        As for :func:`npmle`.
    tol : float
        KKT tolerance of every fit.
    design : list, optional
        A list holding the design ``result`` was fitted on (:func:`.estimator.npmle_design`):
        the profile's is derived from it (:func:`.refine.refine_design`); the list is emptied.

    Returns
    -------
    lower, upper : ndarray
        The bounds at each ``x``.

    Examples
    --------
    >>> from privspec.backends.interval.npmle.estimator import npmle
    >>> l = [-np.inf] * 30 + [0.0] * 30
    >>> r = [0.0] * 30 + [np.inf] * 30
    >>> fit = npmle(l, r)
    >>> lo, hi = cdf_confidence_band(fit, l, r, None, [0.0], calibration="chi2")
    >>> bool(lo[0] < 0.5 < hi[0]), round(float(hi[0] - lo[0]), 2)
    (True, 0.25)
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), not {level}")
    xs = np.atleast_1d(np.asarray(x, dtype=float))
    if not np.all(np.isfinite(xs)):
        raise ValueError("confidence bounds need finite x")
    l, r, c = as_rows(left, right, counts, ring=ring)
    l, r, c = merge_rows(l, r, c)
    if method == "bootstrap":
        if design:
            design.clear()
        with one_qp_thread():
            return _bootstrap_band(l, r, c, xs, level, reps, seed, ring, tol)
    if method != "profile":
        raise ValueError(f"method must be 'profile' or 'bootstrap', not {method!r}")
    return _profile_band(result, l, r, c, xs, _critical(level, calibration, bool(np.all(l == r))), tol,
                         design or None)


@reuse_freed_memory()       # (the fits' arrays reuse the memory of those freed before them)
def _profile_band(result: NPMLEResult, l: np.ndarray, r: np.ndarray, c: np.ndarray, xs: np.ndarray, crit: float,
                  tol: float, design: list | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The profile likelihood band at ``xs`` of the merged rows ``l, r, c``: at each
    distinct point the values of F(x) whose constrained maximum is within ``crit / 2`` of
    the maximum log-likelihood.  ``design``: a list holding their design without cuts
    (emptied here), from which the design with them is derived."""
    cuts = np.unique(xs)
    des = refine_design(design, l, r, c, cuts) if design else None
    # (plain ranges: no rings, no exact points; refine_design derives only those)
    plain = des is not None
    if des is None:
        des = design_from_rows(l, r, c, cuts=cuts)
        plain = not des.has_multi and not bool(np.any(l == r))
    lower = np.empty(cuts.size)
    upper = np.empty(cuts.size)
    with one_qp_thread():
        p_hat, ll_max = _maximum(des, result, cuts, tol, plain)
        space = _Space(des, p_hat, cuts)
        reach: list[tuple[float, float]] = []     # the bounds found so far (search.profile_interval)
        for t, cut in enumerate(cuts):
            prof = _Profile(space, p_hat, cut, tol)
            lower[t], upper[t] = profile_interval(prof, ll_max, crit, reach)
    idx = np.searchsorted(cuts, xs)
    return lower[idx], upper[idx]


def _maximum(des: Design, result: NPMLEResult, cuts: np.ndarray, tol: float, plain: bool
             ) -> tuple[np.ndarray, float]:
    """The maximum of the log-likelihood over the design refined at the cuts (its masses and
    its log-likelihood), from the fit's.

    Where the reports are ranges (``plain``: no exact points, no rings) and every cut is the
    right end ``x = R_j`` of one of the fit's innermost intervals (the
    band's default points, the fit's quartiles, are), refining adds at most one innermost
    interval after each cut, ``(x, R']`` (where the key after ``x`` is a right end), and
    changes no other: no report starts at ``x`` (``x+`` would already be a left key before
    ``R'``), and no left end lies inside ``(L_j, R_j]``, so every report holding ``(x, R']``
    holds ``(L_j, R_j]``.  Its gradient is then at most that of ``(L_j, R_j]``, and the fit's
    masses, each on the innermost interval with the same right end, meet the KKT
    conditions of the refined design as of their own, with the same log-likelihood: no pass
    over the rows (1e7 Case-II reports: four passes of ~0.05 s).  Elsewhere the solver
    finds it, from them (:func:`_start_from`)."""
    ends = result.intervals[:, 1]           # (increasing: the innermost intervals in order)
    at = np.minimum(np.searchsorted(ends, cuts), ends.size - 1)
    if plain and result.kkt <= tol and ends.size and np.all(ends[at] == cuts):
        p = _mapped(des, result)
        if p is not None:
            return p, result.loglik
    full = cnm(des, _start_from(des, result), tol=tol, max_iter=10_000)
    return full.p, max(full.loglik, result.loglik)


def _mapped(des: Design, result: NPMLEResult) -> np.ndarray | None:
    """The fit's masses on the design's innermost intervals (the fit's, refined at the cuts:
    each mass on the piece with the same right end); None where the design lacks one."""
    on = result.mass > 0
    iv = result.intervals[on]
    j = np.minimum(np.searchsorted(des.inner_right, iv[:, 1]), des.m - 1)
    if des.m and np.all(des.inner_right[j] == iv[:, 1]) and np.all(des.inner_left[j] >= iv[:, 0]):
        p = np.zeros(des.m)
        p[j] = result.mass[on]
        return p / p.sum()
    return None


def _start_from(des: Design, result: NPMLEResult) -> np.ndarray:
    """The fit's masses on the design's innermost intervals (:func:`_mapped`), where they give
    every report a probability; else the solver's usual start.  The maximum itself then
    costs one pass."""
    p = _mapped(des, result)
    if p is not None:
        P, MP = row_probs(des, p)
        if np.all(P > 0) and np.all(MP > 0):
            return p
    return initial(des)


class _Space:
    """The innermost intervals the constrained fits use, ``J``, and the design's rows merged
    by their runs over ``J`` (:attr:`sub`): column generation, as the solver's working set,
    but kept for every constrained fit of a band.

    ``J`` starts as the maximum's support and the innermost intervals on either side of
    each cut.  A fit over ``J`` is the constrained maximum over every innermost interval
    when no other one would raise it (:meth:`verify`: its KKT conditions on the whole
    design, one pass over the rows); where one would, ``J`` grows by the candidates a step
    of the solver would take.  Restricted to ``J``, the constrained maximum can only be
    lower: the likelihood-ratio statistic of a fit over ``J`` is never below the true
    one.  Designs with reports in several runs (rings) and candidate sets too large to
    merge the rows over (their k x k table of runs larger than :data:`_MERGE_PER_ROW`
    times the rows) use the whole design: ``J`` is then every innermost interval.
    """

    def __init__(self, des: Design, p_hat: np.ndarray, cuts: np.ndarray):
        self.des = des
        self.J = np.arange(des.m)
        self.sub = des
        #: each plain row's merged row (an index into :attr:`sub`'s rows) where they are merged
        self.row: np.ndarray | None = None
        #: the design's rows in each merged row, once a growth has counted them
        self._sizes: np.ndarray | None = None
        if not des.has_multi:
            s = np.searchsorted(des.inner_right, cuts, side="right")   # the first above each cut
            near = np.concatenate([s - 1, s])
            near = near[(near >= 0) & (near < des.m)]
            self.restrict(np.union1d(np.flatnonzero(p_hat > 0), near))

    @property
    def rows(self) -> int:
        """The design's rows (plain and pieces), which the merged rows stand for: what
        the solver's choice of a dense step weighs its cost against."""
        return int(self.des.a.size + self.des.pa.size)

    @property
    def reduced(self) -> bool:
        """Whether the fits run over merged rows (not the whole design)."""
        return self.sub is not self.des

    def restrict(self, J: np.ndarray) -> None:
        """The rows merged by their runs over ``J`` (which meets every row); the whole
        design where ``J`` is every innermost interval or their table would be too large.
        A ``J`` that holds the last one grows the merge (:func:`.merged.grow_merge`: only the
        rows next to the new intervals move)."""
        des, k = self.des, J.size
        if k == des.m or k * k > _MERGE_PER_ROW * des.a.size:
            self.J, self.sub, self.row, self._sizes = np.arange(des.m), des, None, None
            return
        if self.row is not None and np.isin(self.J, J, assume_unique=True).all():     # (merged over J)
            self.sub, self.row, self._sizes = grow_merge(des, self.J, self.sub, self.row, J, self._sizes)
        else:
            self.sub, self.row = merge_over(des, J)
            self._sizes = None
        self.J = J

    def lift(self, p: np.ndarray, J_old: np.ndarray) -> np.ndarray:
        """Masses on ``J_old`` as masses on the current ``J`` (which holds it)."""
        if J_old is self.J:
            return p
        out = np.zeros(self.J.size)
        out[np.searchsorted(self.J, J_old)] = p
        return out

    def verify(self, p: np.ndarray, cut: float, sums: np.ndarray, tol: float) -> bool:
        """Whether masses ``p`` on ``J``, a constrained maximum over ``J``, are the one over
        every innermost interval; if not, ``J`` grows (or becomes every one)."""
        if not self.reduced:
            return True
        des, sub = self.des, self.sub
        full = np.zeros(des.m)
        full[self.J] = p
        # every row's probability is its merged row's (the masses are on J): one gather
        d = gradient(des, run_mass(p, prefix_sums(p), sub.a, sub.b)[self.row], np.zeros(0), spend=True)
        d /= des.n
        # the groups are the innermost intervals at or below the cut and those above it:
        # two slices (no group index over every innermost interval)
        split = int(np.searchsorted(des.inner_right, cut, side="right"))
        ranges = ((0, split), (split, des.m))
        lam = np.array([float(full[s:e] @ d[s:e]) for s, e in ranges]) / np.where(sums > 0, sums, 1.0)
        # the largest excess over the group's level, scaled by its sum, in each group with
        # mass to give (max (d - lam) s = (max d - lam) s: rounding keeps the order)
        if not any(sums[g] > 0 and e > s and (float(d[s:e].max()) - lam[g]) * sums[g] > tol
                   for g, (s, e) in enumerate(ranges)):
            return True
        grp = (des.inner_right > cut).astype(np.intp)
        groups = Groups(grp, sums)
        _, excess = groups.kkt(d, full)
        with np.errstate(invalid="ignore"):       # (-inf * 0 in a group with sum 0)
            scaled = excess * sums[grp]
        within = float(scaled[self.J].max())
        excess[self.J] = -np.inf
        rising = np.flatnonzero(excess * sums[grp] > tol)
        if rising.size:      # some innermost interval outside J raises it
            # J grows by a step's candidates and by every interval that would raise the fit
            # (a few dozen): the next bounds tend to want them too (1e6 and 1e7 Case-II
            # reports: 14 checks over every row -> 12, the bounds the same)
            self.restrict(np.union1d(np.union1d(self.J, candidates(full, excess, groups)), rising))
            return False
        if within <= _STALLED:
            return True     # the solver's "no step rises" at round-off, as over the whole design
        # the solver stopped short over the merged rows: the whole design decides
        self.restrict(np.arange(des.m))
        return False


class _Profile:
    """The constrained maximum of the log-likelihood with ``F(cut) = theta`` (the mass of the
    innermost intervals at or below the cut), each solve over the space's ``J``,
    warm-started from the last one moved along its tangent in theta."""

    def __init__(self, space: _Space, p_hat: np.ndarray, cut: float, tol: float):
        self.space, self.cut, self.tol = space, cut, tol
        self.p_hat = p_hat                      # on every innermost interval
        self.theta_hat = float(p_hat[space.des.inner_right <= cut].sum())
        #: the last fit: (theta, J, loglik, slope, masses, tangent), so that checking a bound
        #: just found over ``J`` (:meth:`exact_at`) does not fit it again
        self._last: tuple[float, np.ndarray, float, float, np.ndarray, Any] | None = None
        self.reset()

    def reset(self) -> None:
        """Start the next search from the maximum."""
        self.p, self.pJ = self.p_hat[self.space.J], self.space.J
        #: the last fit's tangent (:attr:`.solver.Fit.tangent`) and its theta
        self.along: tuple[float, np.ndarray] | None = None

    @property
    def spread(self) -> float:
        """``sqrt(theta_hat (1 - theta_hat))``: the scale a bound's distance from the
        maximum is measured in, from one point to the next (:func:`.search.profile_interval`)."""
        return math.sqrt(max(self.theta_hat * (1.0 - self.theta_hat), 1e-12))

    def start(self, theta: float) -> np.ndarray | None:
        """The last solution rescaled to the group sums, covering every observation."""
        des = self.space.sub
        grp = (des.inner_right > self.cut).astype(np.intp)
        sums = np.array([theta, 1.0 - theta])
        p = self.space.lift(self.p, self.pJ).copy()
        if self.along is not None and self.pJ is self.space.J:
            # along the last fit's tangent: first order in the change of theta, where the
            # groups' rescaling below is zeroth (1e6 Case-II reports: 56 Newton steps in the
            # band's fits -> 40; 1e7: 83 -> 68)
            p += (theta - self.along[0]) * self.along[1]
            p[p < 0] = 0.0
        tot = np.bincount(grp, weights=p, minlength=2)
        p *= np.where(tot > 0, sums / np.where(tot > 0, tot, 1.0), 0.0)[grp]
        allowed = sums[grp] > 0
        P, MP = row_probs(des, p)
        # reports left without mass get a little on an allowed interval of theirs: a run
        # meets the allowed prefix or suffix (one group each) at one of its ends
        picks = []
        bad = P <= 0
        if bad.any():
            ends = np.where(allowed[des.b[bad]], des.b[bad], des.a[bad])
            if not allowed[ends].all():
                return None
            picks.append(ends)
        bad = MP <= 0
        if bad.any():
            # a report in several runs: the allowed ends of all its runs
            on = bad[des.powner]
            pa, pb, po = des.pa[on], des.pb[on], des.powner[on]
            pick = np.where(allowed[pb], pb, np.where(allowed[pa], pa, -1))
            ok = pick >= 0
            if not np.all(np.bincount(po[ok], minlength=des.pc.size)[bad] > 0):
                return None
            picks.append(pick[ok])
        if picks:
            j = np.unique(np.concatenate(picks))
            p[j] += 1e-6 * sums[grp[j]]
        tot = np.bincount(grp, weights=p, minlength=2)
        for g in (0, 1):
            on = grp == g
            if sums[g] > 0 and tot[g] <= 0:
                # no mass in the group yet: the innermost interval nearest the cut
                p[np.flatnonzero(on)[-1 if g == 0 else 0]] = sums[g]
        tot = np.bincount(grp, weights=p, minlength=2)
        p *= np.where(tot > 0, sums / np.where(tot > 0, tot, 1.0), 0.0)[grp]
        return p

    def loglik(self, theta: float) -> tuple[float, float]:
        """max{loglik : F(cut) = theta} over ``J`` and its derivative in theta (-inf where
        impossible: an observation lies wholly on the side that theta empties)."""
        last = self._last
        if last is not None and last[0] == theta and last[1] is self.space.J:
            # the fit just made at theta over the same J (the check of a bound just found)
            self.p, self.pJ, self.along = last[4], last[1], last[5]
            return last[2], last[3]
        des = self.space.sub
        sums = np.array([theta, 1.0 - theta])
        p0 = self.start(theta)
        if p0 is None:
            return -math.inf, math.inf if theta < self.theta_hat else -math.inf
        P, MP = row_probs(des, p0)
        if np.any(P <= 0) or np.any(MP <= 0):  # pragma: no cover - start() covers them
            return -math.inf, math.inf if theta < self.theta_hat else -math.inf
        fit = cnm(des, p0, tol=self.tol, max_iter=10_000, grp=(des.inner_right > self.cut).astype(np.intp),
                  sums=sums, dense_rows=self.space.rows, tangent=True, enter=True)
        self.p, self.pJ = fit.p, self.space.J
        self.along = None if fit.tangent is None else (theta, fit.tangent)
        # d ll / d theta = n (lam_0 - lam_1) at the constrained maximum (envelope theorem)
        ll, slope = fit.loglik, des.n * float(fit.lam[0] - fit.lam[1])
        self._last = (theta, self.space.J, ll, slope, fit.p, self.along)
        return ll, slope

    def exact_at(self, theta: float) -> bool:
        """Whether the fit at theta over ``J`` is the one over every innermost interval;
        where it is not, ``J`` grows (:meth:`_Space.verify`), or becomes every innermost
        interval, the search then starting again from the maximum as over the whole design."""
        if not self.space.reduced:
            return True
        ll, _ = self.loglik(theta)
        if not math.isfinite(ll):
            # impossible over J alone may be possible over all: the whole design decides
            self.space.restrict(np.arange(self.space.des.m))
        elif self.space.verify(self.p, self.cut, np.array([theta, 1.0 - theta]), self.tol):
            return True
        if not self.space.reduced:
            self.reset()
        return False

    def exact_loglik(self, theta: float) -> tuple[float, float]:
        """:meth:`loglik` over every innermost interval (:meth:`exact_at`)."""
        while not self.exact_at(theta):
            pass
        return self.loglik(theta)


def likelihood_ratio(result: NPMLEResult, left: Any, right: Any, counts: Any, x: Any, theta: Any, *,
                     ring: bool = False, tol: float = 1e-10) -> np.ndarray:
    """The likelihood-ratio statistic ``2 (max loglik - max{loglik : F(x) = theta})`` at each
    ``(x, theta)`` pair: what the profile band compares with its critical value.

    Examples
    --------
    >>> from privspec.backends.interval.npmle.estimator import npmle
    >>> l = [-np.inf] * 30 + [0.0] * 30
    >>> r = [0.0] * 30 + [np.inf] * 30
    >>> fit = npmle(l, r)
    >>> lr = likelihood_ratio(fit, l, r, None, [0.0, 0.0], [0.5, 0.4])
    >>> lr.round(4).tolist()          # binomial: 2 (30 log(0.5/0.4) + 30 log(0.5/0.6))
    [0.0, 2.4493]
    """
    xs = np.atleast_1d(np.asarray(x, dtype=float))
    ts = np.broadcast_to(np.asarray(theta, dtype=float), xs.shape)
    if not np.all(np.isfinite(xs)):
        raise ValueError("the likelihood ratio needs finite x")
    l, r, c = as_rows(left, right, counts, ring=ring)
    l, r, c = merge_rows(l, r, c)
    des = design_from_rows(l, r, c, cuts=np.unique(xs))
    out = np.empty(xs.size)
    with one_qp_thread():
        full = cnm(des, _start_from(des, result), tol=tol, max_iter=10_000)
        ll_max = max(full.loglik, result.loglik)
        space = _Space(des, full.p, np.unique(xs))
        for k, (cut, theta_k) in enumerate(zip(xs, ts)):
            ll, _ = _Profile(space, full.p, cut, tol).exact_loglik(float(theta_k))
            out[k] = max(2.0 * (ll_max - ll), 0.0)
    return out


def _bootstrap_band(l: np.ndarray, r: np.ndarray, c: np.ndarray, xs: np.ndarray, level: float,
                    reps: int, seed: int | None, ring: bool, tol: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(round(c.sum()))
    prob = c / c.sum()
    draws = np.empty((reps, xs.size))
    for k in progress(range(reps), desc="bootstrap band", unit="refit"):
        ck = rng.multinomial(n, prob).astype(float)
        on = ck > 0
        des = design_from_rows(l[on], r[on], ck[on])
        fit = cnm(des, initial(des), tol=tol, max_iter=10_000)
        draws[k] = make_result(des, fit).cdf(xs)
    alpha = (1.0 - level) / 2.0
    return np.quantile(draws, alpha, axis=0), np.quantile(draws, 1.0 - alpha, axis=0)
