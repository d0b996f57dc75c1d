"""The nonparametric maximum likelihood estimator (NPMLE) of a distribution function
from interval-private data: intervals ``(l, r]``, exact points, and reports made of
several pieces (ring ranges, reports less an acceptable range).

This is the estimator of section III-C of the interval-privacy paper: the right-continuous
``F`` that maximizes the log-likelihood functional ``psi`` of eq. (7),
``psi(F) = (1/n) sum_j log F(R_j)``, where ``R_j`` is the range respondent ``j`` reported.
Pure numerics: the back end of issue 10 (``backends/interval/backend.py``) wraps it in a
:class:`privspec.results.result.Result`.  One engine for every kind of report (issue 15).

API
---
``aggregate_intervals(left, right) -> (left, right, counts)``
    The distinct ``(l, r)`` pairs with their counts (the sufficient statistics), sorted by
    ``l`` then ``r``; vectorized (one sort, no loop over respondents).
``npmle(left, right, counts=None, *, tol=1e-10, max_iter=10_000, ring=False) -> NPMLEResult``
    Observations are intervals ``(l, r]`` with ``l < r`` (``l`` may be ``-inf``, ``r`` may
    be ``inf``) or exact points written ``l == r`` (the point ``x = l``).  ``counts`` are
    the multiplicities of the rows (per-respondent rows when omitted; duplicates are merged
    either way).  With ``ring=True`` a row with ``l > r`` is the ring range
    ``(l, inf) U (-inf, r]`` of Example 3 (the two ends joined); without it such a row is a
    :class:`privspec.errors.DataError`.
``npmle_pieces(piece_left, piece_right, owner, counts=None, *, tol=1e-10, max_iter=10_000)``
    The same for reports that are unions of disjoint pieces: piece ``k`` is ``(l, r]``
    (or a point) of report ``owner[k]``; ``counts[i]`` respondents gave report ``i``.
``NPMLEResult`` (frozen dataclass)
    ``intervals`` ``(m, 2)``: Turnbull's innermost intervals ``(l, r]`` in increasing
    order, an exact point as ``[x, x]``; ``mass`` ``(m,)``: the NPMLE's mass on each (sums
    to 1; exact zeros off its support); ``loglik``: ``sum_i counts_i log P_i``, with
    ``P_i`` the estimated probability of observation ``i`` (natural log, not divided by
    n); ``iterations``: Newton steps taken; ``kkt``: the largest directional derivative
    of ``psi`` (eq. 7) from the estimate toward a point mass on an innermost interval,
    ``max_j (1/n) sum_i counts_i [j in R_i] / P_i - 1``: 0 at the NPMLE (<= ``tol`` when
    ``converged``); since the log-likelihood is concave, ``loglik`` is at most
    ``n * kkt`` below the maximum; ``converged``; ``method`` (``"cnm"``); ``n`` (the total
    count).  Methods: ``cdf(x)``, ``cdf_bounds(x)``, ``quantile(q)``, ``functional(g)``,
    ``moment(k)``, ``mean()``, ``support()``, ``support_only()``, ``to_step_function()``.
``cdf_confidence_band(result, left, right, counts, x, *, level=0.95, method="profile",
reps=200, seed=None, calibration="auto", ring=False, tol=1e-10) -> (lower, upper)``
    Pointwise confidence intervals for ``F(x)`` at any finite points ``x`` (an array, in
    any order, repeats allowed): by inverting the profile likelihood ratio
    (``"profile"``, the default; Banerjee-Wellner's law with a finite-sample
    calibration for interval data, chi-square(1) for exact points only) or by the
    percentile bootstrap (``"bootstrap"``).
``likelihood_ratio(result, left, right, counts, x, theta) -> ndarray``
    The statistic the profile band inverts, at given ``(x, theta)`` pairs.
``plot_cdf(result, band, path)`` in :mod:`privspec.results.plots` draws the estimate
    and its band (matplotlib, the ``plot`` extra).

Modules
-------
* :mod:`.data`: validation, sufficient statistics, the innermost intervals (one
  place, for reports of one piece or several), the design (each report as runs of
  innermost intervals) and the likelihood over it;
* :mod:`.qp`: the Newton matrix from runs and the quadratic program;
* :mod:`.solver`: the constrained Newton method (support reduction, KKT stop,
  hierarchical steps for large supports), over :mod:`.groups` of innermost intervals
  with fixed sums;
* :mod:`.result`: :class:`NPMLEResult` and its functionals;
* :mod:`.bands`: profile-likelihood and bootstrap bands.

Algorithm
---------
1. Sufficient statistics: distinct reports with counts.
2. Turnbull's innermost intervals of all pieces (:func:`.data.innermost`); each
   piece covers a contiguous run of them, so ``P_i`` is a sum of differences of prefix
   sums of the masses and the gradient ``D_j = sum_i c_i [j in R_i] / P_i`` a
   difference array and one cumulative sum: O(pieces + m) per pass, never an
   ``n x m`` matrix.
3. The constrained Newton method with support reduction (Wang 2007, 2008; the
   algorithm of R's ``npsurv``), stopped on the KKT condition (``kkt <= tol``).  Its
   quadratic program's matrix is a sum over reports of ``w_i e_i e_i'``, ``e_i`` the
   0/1 vector of the candidates report ``i`` holds: histograms of run ends, a
   rectangle for every two pieces of one report (O(n + k^2) for k candidates).
4. Beyond 400 candidates each step is hierarchical, as npsurv's ``hcnm``: a Newton step
   within blocks of about 100 candidates, then one on the blocks' masses.

References: B. W. Turnbull, J. R. Stat. Soc. B 38 (1976) 290-295; Y. Wang, J. R. Stat.
Soc. B 69 (2007) 185-198 and Comput. Stat. Data Anal. 52 (2008) 2388-2402; M. Banerjee
and J. A. Wellner, Ann. Stat. 29 (2001) 1699-1731.

Examples
--------
>>> fit = npmle([0, 1, 2, 0.5], [1, 2, 3, 0.5])   # three intervals and the point 0.5
>>> fit.intervals.tolist(), fit.mass.round(4).tolist()
([[0.5, 0.5], [1.0, 2.0], [2.0, 3.0]], [0.5, 0.25, 0.25])
>>> round(fit.loglik, 6), fit.converged
(-4.158883, True)
>>> fit.cdf([0.7, 1.5, 2, 3]).tolist()
[0.5, 0.5, 0.75, 1.0]
"""
from __future__ import annotations

from typing import Any

from privspec.backends.core.memory import reuse_freed_memory
from privspec.backends.interval.npmle.bands import cdf_confidence_band, likelihood_ratio
from privspec.backends.interval.npmle.data import (Design, aggregate_intervals, as_pieces, as_rows,
                                                   design_from_pieces, design_from_rows, merge_rows)
from privspec.backends.interval.npmle.qp import one_qp_thread
from privspec.backends.interval.npmle.result import NPMLEResult, make_result
from privspec.backends.interval.npmle.solver import cnm, initial

__all__ = ["NPMLEResult", "aggregate_intervals", "npmle", "npmle_design", "npmle_pieces", "cdf_confidence_band",
           "likelihood_ratio"]

def npmle(left: Any, right: Any, counts: Any = None, *, tol: float = 1e-10,
          max_iter: int = 10_000, ring: bool = False) -> NPMLEResult:
    """The NPMLE of ``F`` from intervals ``(l, r]`` and exact points (``l == r``).

    Parameters
    ----------
    left, right : array_like
        Interval ends, one entry per row; ``-inf``/``inf`` allowed for intervals.
    counts : array_like, optional
        Multiplicity of each row (default 1 each); rows with count 0 are ignored.
    tol : float
        Stop when the largest directional derivative of the average log-likelihood
        (``kkt``) is at most ``tol``.
    max_iter : int
        Most Newton steps.
    ring : bool
        Read ``l > r`` as the ring range ``(l, inf) U (-inf, r]`` (Example 3).

    Returns
    -------
    NPMLEResult

    Raises
    ------
    privspec.errors.DataError
        For NaN ends, ``l > r`` (without ``ring``), points at infinity, bad counts.

    Examples
    --------
    Current-status data (Case I): the NPMLE is the isotonic regression of the indicators.

    >>> import numpy as np
    >>> fit = npmle([-np.inf, 1, -np.inf, 3], [1, np.inf, 2, np.inf])
    >>> fit.cdf([1, 2, 3]).tolist(), fit.kkt <= 1e-10
    ([0.5, 0.5, 0.5], True)
    >>> ring = npmle([0, 5], [1, 0], ring=True)   # (0, 1] and (5, inf) U (-inf, 0]
    >>> ring.intervals.tolist(), ring.mass.tolist()
    ([[-inf, 0.0], [0.0, 1.0], [5.0, inf]], [0.5, 0.5, 0.0])
    """
    return npmle_design(left, right, counts, tol=tol, max_iter=max_iter, ring=ring)[0]


def npmle_design(left: Any, right: Any, counts: Any = None, *, tol: float = 1e-10,
                 max_iter: int = 10_000, ring: bool = False) -> tuple[NPMLEResult, Design]:
    """:func:`npmle` and the design it was fitted on: a band of the same rows
    (:func:`cdf_confidence_band` with ``design``) derives its own from it rather than
    building one again.

    >>> fit, des = npmle_design([0, 1, 2], [1, 2, 3])
    >>> des.m, fit.mass.round(4).tolist()
    (3, [0.3333, 0.3333, 0.3333])
    """
    # (the fit's arrays reuse the memory of those freed before them: core.memory)
    with reuse_freed_memory():
        l, r, c = as_rows(left, right, counts, ring=ring)
        l, r, c = merge_rows(l, r, c)
        des = design_from_rows(l, r, c)
        del l, r, c         # (copies of millions of rows, at times: not kept through the fit)
        with one_qp_thread():
            fit = cnm(des, initial(des), tol=tol, max_iter=max_iter)
        return make_result(des, fit), des


def npmle_pieces(piece_left: Any, piece_right: Any, owner: Any, counts: Any = None, *,
                 tol: float = 1e-10, max_iter: int = 10_000) -> NPMLEResult:
    """The NPMLE of ``F`` from reports that are unions of disjoint pieces.

    The likelihood of a report is the mass of the innermost intervals it holds, in any
    of its pieces; the same solver as :func:`npmle` maximizes it (a ring range given as
    its two pieces reaches the same maximum as ``npmle(..., ring=True)``).

    Parameters
    ----------
    piece_left, piece_right : array_like
        The pieces: ``(l, r]`` with ``l < r``, or the point ``l == r``.
    owner : array_like of int
        ``owner[k]`` is the report (index into ``counts``) piece ``k`` belongs to; every
        report needs a piece.
    counts : array_like, optional
        Respondents per report (default 1 each); reports with count 0 are ignored.
    tol, max_iter
        As for :func:`npmle`.

    Returns
    -------
    NPMLEResult
        On all innermost intervals of the pieces (zeros off the support).

    Examples
    --------
    >>> import numpy as np
    >>> # (-inf, 0] U (3, inf) twice, (0, 2], and (-inf, 1] U (2, inf)
    >>> fit = npmle_pieces([-np.inf, 3, 0, -np.inf, 2], [0, np.inf, 2, 1, np.inf],
    ...                    [0, 0, 1, 2, 2], [2, 1, 1])
    >>> fit.converged, fit.intervals.tolist(), fit.mass.round(4).tolist()
    (True, [[-inf, 0.0], [0.0, 1.0], [3.0, inf]], [0.6667, 0.3333, 0.0])
    """
    with reuse_freed_memory():
        pl, pr, ow, c = as_pieces(piece_left, piece_right, owner, counts)
        des = design_from_pieces(pl, pr, ow, c)
        with one_qp_thread():
            fit = cnm(des, initial(des), tol=tol, max_iter=max_iter)
        return make_result(des, fit)
