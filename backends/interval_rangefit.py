"""The NPMLE of F when reports are unions of intervals (ring ranges, acceptable ranges).

The interval engine (:mod:`privspec.backends.npmle`) takes reports that are single
intervals or points.  A ring range (Example 3) is ``(-inf, a] U (b, inf]``, and a
reported interval less an acceptable range inside it is two pieces; their likelihood
``log F(R_1) + ...`` (eq. 7) is still concave in the masses, so the maximum is found
here by the constrained Newton method of Wang (2007), on sufficient statistics:

* support candidates: the innermost intervals of the pieces (a cell between two
  consecutive distinct ends whose left end opens a piece and whose right end closes
  one; a cell ending at a disclosed point gives way to the point), and the points;
* every piece covers a contiguous run of candidates, so P(R_i) and the gradient are
  prefix sums and difference arrays: O(pieces + candidates) per iteration; the Newton
  step uses a reports-by-support matrix only (the support is small), never a dense
  reports-by-candidates matrix.

Convergence is judged by the KKT condition of the NPMLE: the directional derivative
towards any candidate, ``g_j - 1`` with ``g_j = N^-1 sum_i c_i 1{j in R_i} / P(R_i)``,
is <= 0 (and = 0 where there is mass).

Examples
--------
>>> import numpy as np
>>> # two ring ranges and two intervals (pieces, owner = report index)
>>> fit = range_npmle(np.array([-np.inf, 3.0, 0.0, -np.inf, 2.0, 1.0]),
...                   np.array([0.0, np.inf, 2.0, 1.0, np.inf, 3.0]),
...                   np.array([0, 0, 1, 2, 2, 3]), np.array([1.0, 2.0, 1.0, 1.0]))
>>> bool(fit.converged and fit.kkt <= 1e-8), round(float(fit.mass.sum()), 12)
(True, 1.0)
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import nnls

from .npmle import NPMLEResult


def candidates(piece_left: np.ndarray, piece_right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Innermost intervals and points of a set of pieces, ordered; returns (lo, hi)."""
    point = piece_left == piece_right
    lefts, rights, points = piece_left[~point], piece_right[~point], piece_left[point]
    values = np.unique(np.concatenate([lefts, rights, points]))
    is_left = np.isin(values, lefts)
    is_right = np.isin(values, rights)
    is_atom = np.isin(values, points)
    keep = is_left[:-1] & is_right[1:] & ~is_atom[1:]
    lo = np.concatenate([values[:-1][keep], values[is_atom]])
    hi = np.concatenate([values[1:][keep], values[is_atom]])
    order = np.argsort(hi, kind="stable")
    return lo[order], hi[order]


def runs(piece_left: np.ndarray, piece_right: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first and last candidate (by index) inside each piece."""
    point = piece_left == piece_right
    start = np.where(point, np.searchsorted(hi, piece_left, side="left"),
                     np.searchsorted(hi, piece_left, side="right"))
    end = np.searchsorted(hi, piece_right, side="right") - 1
    return start, end


def stabbing(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """A smallest set of indices meeting every run [start, end] (greedy by run end).

    The loop runs once per chosen index (few), each step vectorized over the runs.

    >>> stabbing(np.array([0, 2, 5, 1]), np.array([3, 4, 6, 1])).tolist()
    [1, 4, 6]
    """
    order = np.argsort(end, kind="stable")
    s, e = start[order], end[order]
    # runs sorted by end; after choosing c, the next run not met is the first with start > c
    chosen = []
    k = 0
    while k < len(e):
        c = int(e[k])
        chosen.append(c)
        rest = np.flatnonzero(s[k:] > c)
        if not len(rest):
            break
        k += int(rest[0])
    return np.array(chosen, dtype=int)


def range_npmle(piece_left: np.ndarray, piece_right: np.ndarray, owner: np.ndarray, counts: np.ndarray,
                *, tol: float = 1e-9, max_iter: int = 500) -> NPMLEResult:
    """The NPMLE of F from reports that are unions of pieces.

    ``owner[k]`` is the report (index into ``counts``) that piece k belongs to;
    ``counts`` are the numbers of respondents who gave each distinct report.  The
    constrained Newton method of Wang (2007): add the candidate with the largest
    positive gradient between support points, take the Newton step of the
    log-likelihood restricted to the support (a non-negative least-squares problem),
    halve it until the likelihood rises enough, drop points whose mass is zero.
    Only a patterns-by-support matrix is formed: reports holding the same support
    points share a row (the support is small).
    """
    piece_left = np.asarray(piece_left, dtype=float)
    piece_right = np.asarray(piece_right, dtype=float)
    owner = np.asarray(owner)
    counts = np.asarray(counts, dtype=float)
    lo, hi = candidates(piece_left, piece_right)
    start, end = runs(piece_left, piece_right, hi)
    m, R, N = len(hi), len(counts), counts.sum()

    def probs(p):
        S = np.concatenate([[0.0], np.cumsum(p)])
        return np.bincount(owner, weights=S[end + 1] - S[start], minlength=R)

    def gradient(P):
        # g_j = N^-1 sum_i c_i 1{j in R_i} / P_i, by a difference array over the runs
        w = (counts / P)[owner]
        diff = np.bincount(start, weights=w, minlength=m + 1) - np.bincount(end + 1, weights=w, minlength=m + 1)
        return np.cumsum(diff)[:m] / N

    def loglik(P):
        return float(np.sum(counts * np.log(P))) if np.all(P > 0) else -np.inf

    order = np.argsort(owner, kind="stable")
    rank = np.empty(len(owner), dtype=int)
    first_of = np.searchsorted(owner[order], owner[order], side="left")
    rank[order] = np.arange(len(owner)) - first_of
    width = 2 * (int(rank.max()) + 1 if len(rank) else 1)

    def newton_system(J, P):
        """Rows of S = A[:, J] / P, one per distinct pattern of support points a report
        holds (reports with one pattern have equal rows and equal P), and their counts."""
        a = np.searchsorted(J, start, side="left")
        b = np.searchsorted(J, end, side="right") - 1
        empty = a > b
        a[empty], b[empty] = -1, -1
        key = np.full((R, width), -1)
        key[owner, 2 * rank], key[owner, 2 * rank + 1] = a, b
        _, rep, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
        row = np.full(R, -1)
        row[rep] = np.arange(len(rep))
        sel = row[owner] >= 0
        inside = (a[sel, None] <= np.arange(len(J))[None, :]) & (np.arange(len(J))[None, :] <= b[sel, None])
        A = np.zeros((len(rep), len(J)))
        np.add.at(A, row[owner[sel]], inside.astype(float))
        return A / P[rep][:, None], np.bincount(inv.ravel(), weights=counts, minlength=len(rep))

    # start: uniform mass on a smallest set of candidates meeting every piece (greedy
    # interval stabbing), so every report has P > 0 and the support is small at once
    p = np.zeros(m)
    p[stabbing(start, end)] = 1.0
    p /= p.sum()
    P = probs(p)
    it = 0
    converged = False
    while it < max_iter:
        g = gradient(P)
        if g.max() - 1 <= tol:
            converged = True
            break
        it += 1
        support = np.flatnonzero(p > 0)
        # new points: in each gap between support points, the candidate of largest gradient
        seg = np.searchsorted(support, np.arange(m), side="right")
        gap = ~np.isin(np.arange(m), support)
        new = []
        if gap.any():
            idx = np.flatnonzero(gap)
            order = np.lexsort((-g[idx], seg[idx]))
            first = np.concatenate([[True], seg[idx][order][1:] != seg[idx][order][:-1]])
            best = idx[order][first]
            new = best[g[best] > 1]
        J = np.union1d(support, new).astype(int)
        S, cu = newton_system(J, P)
        sq = np.sqrt(cu)
        # Newton step on the simplex: min_w sum_i c_i (S_i w - 2)^2, w >= 0, sum w = 1
        # (Wang 2007; npsurv's pnnls(..., sum = 1)); the equality is a heavily weighted
        # extra row (the weighting method of Lawson and Hanson for equality constraints)
        big = 1e4 * np.sqrt(N) * max(1.0, float(np.abs(S).max()))
        Aw = np.vstack([S * sq[:, None], np.full((1, len(J)), big)])
        bw = np.concatenate([2 * sq, [big]])
        w, _ = nnls(Aw, bw, maxiter=50 * len(J) + 100)
        if w.sum() <= 0:
            break
        target = np.zeros(m)
        target[J] = w / w.sum()
        step = target - p
        slope = float(np.dot(step, g)) * N
        alpha, base = 1.0, loglik(P)
        while alpha > 1e-10:
            cand = p + alpha * step
            Pc = probs(cand)
            if loglik(Pc) >= base + alpha * slope / 3:
                break
            alpha /= 2
        p = np.where(cand > 1e-15 * cand.max(), cand, 0.0)
        p /= p.sum()
        P = probs(p)
    kkt = float(gradient(P).max() - 1)
    keep = p > 0
    # the engine's result type: one set of functionals (cdf, bounds, moments) for both fits
    return NPMLEResult(np.column_stack([lo, hi])[keep], p[keep], loglik(P), it, kkt, converged and kkt <= tol,
                       "constrained Newton (Wang 2007) on ranges", float(np.sum(counts)))
