"""The Newton subproblem of the NPMLE: its matrix from runs, and the quadratic program.

Each Newton step of :mod:`.solver` minimizes ``1/2 x'Gx - h'x`` over masses
``x >= 0`` with fixed sums.  ``G = sum_i w_i e_i e_i'``, ``e_i`` the 0/1 vector of the
candidates report ``i`` holds; a report is one or several runs of candidates, so ``G``
is assembled from histograms of run ends (O(rows + k^2) for ``k`` candidates), never
from a rows-by-candidates matrix:

* :func:`run_gram`: ``sum w e e'`` for single runs (a run's diagonal block);
* :func:`cross_gram`: ``sum w (e_1 e_2' + e_2 e_1')`` for two disjoint runs of one report
  (the off-diagonal blocks of a report in several pieces);
* :func:`qp`: the quadratic program, by a primal active-set method;
* :func:`one_qp_thread`: the context every fit runs its QPs in (one BLAS thread).

Examples
--------
>>> run_gram(np.array([0, 1]), np.array([1, 2]), np.array([1.0, 2.0]), 3)
array([[1., 1., 0.],
       [1., 3., 2.],
       [0., 2., 2.]])
>>> cross_gram(np.array([0]), np.array([0]), np.array([2]), np.array([2]), np.array([1.0]), 3)
array([[0., 0., 1.],
       [0., 0., 0.],
       [1., 0., 0.]])
>>> qp(np.eye(2), np.array([1.0, 3.0]), np.array([0.5, 0.5]), np.zeros(2, dtype=np.intp), np.ones(1))
array([0., 1.])
"""
from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.backends.core.blas import one_blas_thread

__all__ = ["run_gram", "cross_gram", "qp", "one_qp_thread"]

#: the QP adds a point while its multiplier exceeds this (units of the normalized gradient)
QP_TOL = 1e-14
#: from this many candidates :func:`run_gram` cumulates its table a row at a time (below,
#: the Python loop costs more than it saves: at k = 100, 0.13 ms against 0.10; from k = 200
#: on it saves: 0.59 ms against 0.92 at k = 370, 0.69 against 1.33 at k = 450, the same
#: matrix bit for bit)
_ROW_BY_ROW = 200
#: variables dropped from a factored set (at least; or a quarter of the set) whose solves
#: reuse its factor (:class:`_Factor`) before a new one is made
_REUSE_DROPS = 8


def run_gram(a: np.ndarray, b: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """``sum_i w_i e_i e_i'`` for indicator vectors ``e_i`` of the runs ``a_i..b_i`` of 0..k-1.

    ``G[j, l] = sum of w_i over runs with a_i <= min(j, l) and b_i >= max(j, l)``: a
    k x k histogram of (a, b), cumulated down the first index and up the second.
    """
    # (float even without runs: bincount of nothing counts in integers)
    H = np.bincount(a * k + b, weights=w, minlength=k * k).astype(float, copy=False).reshape(k, k)
    if k >= _ROW_BY_ROW:
        # a row at a time, each addition across a whole row (the same additions in the
        # same order as np.cumsum, whose running sum along one axis waits on each add:
        # at k = 900, 3.4 ms where np.cumsum took 6.1); the second cumulation on the
        # transpose, so that it runs along rows too
        for i in range(1, k):
            H[i] += H[i - 1]
        H = H.T.copy()
        for i in range(k - 2, -1, -1):
            H[i] += H[i + 1]
        H = H.T
    else:
        np.cumsum(H, axis=0, out=H)
        flipped = H[:, ::-1]
        np.cumsum(flipped, axis=1, out=flipped)
    # H[j, l] is now the sum over runs with a <= j and b >= l: G itself for j <= l; for
    # j > l a sum over more runs (those with a <= j, not only a <= l), of weights >= 0, so
    # never smaller, in floating point too (each partial sum adds a term >= 0 to sums that
    # are never smaller).  The smaller of H and its transpose is G, bit for bit as the
    # upper triangle mirrored (3x faster at k = 380: no triangle masks, no copies)
    return np.minimum(H, H.T)


def cross_gram(a1: np.ndarray, b1: np.ndarray, a2: np.ndarray, b2: np.ndarray, w: np.ndarray,
               k: int) -> np.ndarray:
    """``sum_i w_i (e1_i e2_i' + e2_i e1_i')`` for runs ``a1..b1`` before ``a2..b2`` (disjoint).

    Each term is a rectangle of the matrix and its mirror image: a two-dimensional
    difference array, cumulated along both axes.
    """
    K = k + 1
    D = np.bincount(a1 * K + a2, w, minlength=K * K).astype(float, copy=False)
    D -= np.bincount((b1 + 1) * K + a2, w, minlength=K * K)
    D -= np.bincount(a1 * K + b2 + 1, w, minlength=K * K)
    D += np.bincount((b1 + 1) * K + b2 + 1, w, minlength=K * K)
    M = D.reshape(K, K)
    np.cumsum(M, axis=0, out=M)
    np.cumsum(M, axis=1, out=M)
    M = M[:k, :k]
    return M + M.T


def one_qp_thread() -> contextlib.AbstractContextManager:
    """:func:`~privspec.backends.core.blas.one_blas_thread` for the QP's Cholesky factors,
    with :mod:`scipy.linalg` loaded first: it brings its own OpenBLAS, which a limit set
    before it loads does not reach.  Where nothing had loaded scipy.linalg before the
    first fit (scipy.stats does), every factor of that fit ran on all cores (``privspec
    run`` of 1e6 Case-II reports with the band, at load 8-9: 13.0 s CPU, 9 s of it in 406
    Cholesky factors of ~375 x 375; 5.9 s with scipy.linalg loaded before)."""
    scipy.linalg.cho_factor     # (the attribute loads the submodule, once: about 0.2 s)
    return one_blas_thread()


class _Factor:
    """The Cholesky factor of ``G`` on a set of variables ``S`` and the solves made with it,
    kept while the active-set method drops variables from ``S``: each drop pins one more
    variable to zero, an extra equality constraint, so a solve on ``S`` less the dropped
    ones costs one triangular solve per variable dropped (``O(k^2)``) where a new factor
    costs ``O(k^3)`` (1e6 Case-II reports: the fit's QPs dropped ~30 variables one by one
    from ~200, each drop a factor of its own)."""

    def __init__(self, factor: Any, yh: np.ndarray, YE: np.ndarray, E: np.ndarray):
        self.factor, self.yh, self.YE, self.E = factor, yh, YE, E
        #: G^-1 e_d for each position d dropped so far
        self.cols: dict[int, np.ndarray] = {}

    def without(self, drop: np.ndarray, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Minimize 1/2 z'Gz - h'z over ``S`` with the group sums and ``z[drop] = 0``: ``(z, mu)``
        over ``S`` (the multipliers of the group sums), or None where the small system is
        singular (a group left without variables) or the solve not finite."""
        # the KKT conditions G z - h + E' mu + I_D' nu = 0, E z = sums, z_D = 0, with
        # z = G^-1 (h - C' (mu, nu)) and C = (E; I_D): (C G^-1 C') (mu, nu) = C G^-1 h - (sums, 0)
        solved = self._solve(drop, np.concatenate([self.E @ self.yh - sums, self.yh[drop]]))
        if solved is None:
            return None
        YC, mu = solved
        z = self.yh - YC @ mu
        z[drop] = 0.0
        if not (np.all(np.isfinite(z)) and np.all(np.isfinite(mu))):
            return None
        return z, mu[:self.E.shape[0]]

    def _solve(self, drop: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``(Y_C, nu)`` with ``(C Y_C) nu = rhs``, ``C = (E; I_D)`` for ``D = drop`` and
        ``Y_C = G^-1 C'`` (the columns ``G^-1 e_d`` solved once per ``d``, all missing ones in
        one solve); None where ``C Y_C`` is singular (a group left without variables)."""
        missing = [int(d) for d in drop if int(d) not in self.cols]
        if missing:
            unit = np.zeros((self.yh.size, len(missing)))
            unit[missing, np.arange(len(missing))] = 1.0
            Y = scipy.linalg.cho_solve(self.factor, unit, check_finite=False)
            for j, d in enumerate(missing):
                self.cols[d] = Y[:, j]
        YC = np.column_stack([self.YE] + [self.cols[int(d)] for d in drop])
        try:
            return YC, np.linalg.solve(np.vstack([self.E @ YC, YC[drop]]), rhs)
        except np.linalg.LinAlgError:
            return None

    def direction(self, drop: np.ndarray, ds: np.ndarray) -> np.ndarray | None:
        """How the minimum over ``S`` less ``drop`` moves per unit change of the group sums
        along ``ds``: ``dz = Y_C (C Y_C)^-1 (ds, 0)`` from the same conditions as
        :meth:`without` (``C = (E; I_D)``, ``Y_C = G^-1 C'``); None where not finite."""
        solved = self._solve(drop, np.concatenate([ds, np.zeros(drop.size)]))
        if solved is None:
            return None
        v = solved[0] @ solved[1]
        v[drop] = 0.0
        return v if np.all(np.isfinite(v)) else None


def _eq_solve(G: np.ndarray, h: np.ndarray, grp: np.ndarray, sums: np.ndarray, ngroups: int
              ) -> tuple[np.ndarray, np.ndarray, _Factor | None]:
    """Minimize 1/2 z'Gz - h'z subject to the group sums (no sign constraints): ``(z, mu,
    factor)``, the factor kept for solves with variables dropped (None where there is none).

    ``G`` is positive definite but for collinear candidates: by its Cholesky factor, the
    multipliers from the small system ``E G^-1 E' mu = E G^-1 h - sums`` (half the work of
    an LU of the whole KKT system, which is the fallback).
    """
    k = h.size
    E = np.zeros((ngroups, k))
    E[grp, np.arange(k)] = 1.0
    try:
        factor = scipy.linalg.cho_factor(G, check_finite=False)
        Y = scipy.linalg.cho_solve(factor, np.column_stack([h, E.T]), check_finite=False)
        yh, YE = Y[:, 0], Y[:, 1:]
        mu = np.linalg.solve(E @ YE, E @ yh - sums)
        z = yh - YE @ mu
        if np.all(np.isfinite(z)) and np.all(np.isfinite(mu)):
            return z, mu, _Factor(factor, yh, YE, E)
    except np.linalg.LinAlgError:
        pass
    K = np.zeros((k + ngroups, k + ngroups))
    K[:k, :k] = G
    K[k:, :k] = E
    K[:k, k:] = E.T
    rhs = np.concatenate([h, sums])
    try:
        sol = np.linalg.solve(K, rhs)
        if not np.all(np.isfinite(sol)):
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        # collinear candidate points: any solution of the singular system will do
        sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
    return sol[:k], sol[k:], None


def _dropped(base: np.ndarray, idx: np.ndarray, at: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``idx`` (a subset of ``base``, both sorted) lies in ``base``, and the
    positions of ``base`` it leaves out."""
    at = np.searchsorted(base, idx) if at is None else at
    kept = np.zeros(base.size, dtype=bool)
    kept[at] = True
    return at, np.flatnonzero(~kept)


def _direction(factor: _Factor | None, base: np.ndarray, idx: np.ndarray, k: int, ds: np.ndarray
               ) -> np.ndarray | None:
    """:meth:`_Factor.direction` over the variables ``idx`` (``base`` less some dropped), as a
    vector over all ``k`` variables; None without a factor."""
    if factor is None:
        return None
    at, drop = _dropped(base, idx)
    v = factor.direction(drop, ds)
    if v is None:
        return None
    out = np.zeros(k)
    out[idx] = v[at]
    return out


def _reused(factor: _Factor | None, base: np.ndarray, idx: np.ndarray, sums: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray] | None:
    """The solve on ``idx`` (``base`` less a few) by the factor of ``base``, ``(z, mu)``; None
    where there is no such factor, too many were dropped, or its small system is singular."""
    if factor is None or not 0 < base.size - idx.size <= max(_REUSE_DROPS, base.size // 4):
        return None
    at = np.searchsorted(base, idx)
    if not (np.all(at < base.size) and np.array_equal(base[np.minimum(at, base.size - 1)], idx)):
        return None
    solved = factor.without(_dropped(base, idx, at)[1], sums)
    return None if solved is None else (solved[0][at], solved[1])


def _started(G: np.ndarray, h: np.ndarray, x0: np.ndarray, grp: np.ndarray, sums: np.ndarray,
             start: np.ndarray) -> tuple[np.ndarray, np.ndarray, _Factor | None] | None:
    """The first solve of :func:`qp` with ``start`` free too, ``(z, mu, factor)``, where it is
    the minimum over that face: finite, on the group sums, and no higher than ``x0`` (which
    lies on the face).  None where it is not: candidates that no row tells apart make the
    matrix singular, where its factor gives no minimum (the plain start never frees such
    a variable: its multiplier is 0), and :func:`qp` starts as without ``start``."""
    free = x0 > 0
    free[start] = True
    idx = np.flatnonzero(free)
    z, mu, factor = _eq_solve(G[idx][:, idx], h[idx], grp[idx], sums, sums.size)
    if not (np.all(np.isfinite(z)) and np.all(np.isfinite(mu))):
        return None
    on = np.bincount(grp[idx], weights=z, minlength=sums.size)
    if not np.allclose(on, sums, rtol=1e-9, atol=1e-12):
        return None
    x = np.zeros(h.size)
    x[idx] = z
    if 0.5 * x @ G @ x - h @ x > 0.5 * x0 @ G @ x0 - h @ x0 + 1e-12 * max(1.0, abs(float(h @ x0))):
        return None
    return z, mu, factor


def qp(G: np.ndarray, h: np.ndarray, x0: np.ndarray, grp: np.ndarray, sums: np.ndarray,
       direction: tuple[np.ndarray, list] | None = None, start: np.ndarray | None = None) -> np.ndarray:
    """Minimize ``1/2 x'Gx - h'x`` over ``x >= 0`` with ``sum_{grp == g} x = sums[g]``.

    A primal active-set method (Lawson and Hanson's NNLS, the equality constraints kept by
    Lagrange multipliers), warm-started at the feasible ``x0``: variables enter while their
    multiplier is positive; a step that would turn a mass negative stops at the boundary
    and drops it.  It returns a feasible point in every case (``x0`` itself where the
    system is degenerate: the caller's line search then finds no rise).
    ``direction=(ds, out)``: the minimum's change per unit change of the sums along ``ds``
    (:func:`_direction`) is appended to ``out``.  ``start``: variables at 0 in ``x0`` free
    from the first solve (:func:`_started`): where most would enter, one factor, not two.
    """
    k, ngroups = h.size, sums.size
    x = x0.copy()
    passive = x > 0
    last: np.ndarray | None = None
    settled = True      # x minimizes over the free variables less ``last`` (not yet with ``start``)
    # the last factor and its variables: a solve with some of them dropped reuses it (_Factor)
    factor: _Factor | None = None
    base = np.zeros(0, dtype=np.intp)
    solved = _started(G, h, x0, grp, sums, start) if start is not None and start.size else None
    if solved is not None:
        passive[start] = True
        last, settled, factor, base = start, False, solved[2], np.flatnonzero(passive)
    for _ in range(4 * k + 20):
        idx = np.flatnonzero(passive)
        solved = solved or _reused(factor, base, idx, sums)
        if solved is None:
            # (rows, then columns: 5x faster than np.ix_ at k = 370)
            z, mu, factor = _eq_solve(G[idx][:, idx], h[idx], grp[idx], sums, ngroups)
            base = idx
        else:
            z, mu = solved[:2]
            solved = None
        if not np.all(np.isfinite(z)):
            return x  # a degenerate system: keep the feasible point (the line search copes)
        if np.all(z > 0):
            x, settled = np.zeros(k), True
            x[idx] = z
            w = h - G @ x - mu[grp]
            w[passive] = -np.inf
            # every variable with a positive multiplier enters at once: the objective still
            # falls at each full solve, and there are far fewer solves than one at a time
            enter = np.flatnonzero(w > QP_TOL * max(1.0, float(np.abs(h).max())))
            if enter.size == 0:
                if direction is not None:
                    direction[1].append(_direction(factor, base, idx, k, direction[0]))
                return x
            passive[enter] = True
            last = enter
            continue
        xi = x[idx]
        neg = z <= 0
        with np.errstate(divide="ignore", invalid="ignore"):
            # a variable at 0 that the solve keeps at 0 or below blocks at once (0, not
            # 0 / 0: a NaN here would spoil the whole step)
            ratio = np.where(xi[neg] > 0, xi[neg] / (xi[neg] - z[neg]), 0.0)
        alpha = float(ratio.min())
        if alpha <= 0.0 and last is not None:
            blocking = idx[neg][ratio <= 0.0]
            if np.all(np.isin(blocking, last)):
                # only points just added want a negative mass: drop them; if that happens
                # for all of them we are at the optimum up to round-off
                passive[blocking] = False
                x[blocking] = 0.0
                last = np.setdiff1d(last, blocking)
                if last.size == 0:
                    if settled:
                        return x
                    last = None
                continue
        x[idx] = xi + alpha * (z - xi)
        drop = idx[neg][ratio <= alpha]
        x[drop] = 0.0
        passive[drop] = False
        passive &= x > 0
        x[~passive] = 0.0
        last = None
    return x  # pragma: no cover - the active-set method ends long before
