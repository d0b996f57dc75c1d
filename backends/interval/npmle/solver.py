"""The NPMLE solver: the constrained Newton method with support reduction.

Maximizes ``sum_i c_i log P_i`` over masses ``p >= 0`` on the innermost intervals of a
:class:`~.data.Design` (``sum p = 1``, or fixed sums per group of innermost
intervals for the profile likelihood), where ``P_i`` is the mass of the innermost
intervals report ``i`` holds, in one run or in several.

The method (Wang 2007, 2008; the algorithm of R's ``npsurv``): at each step add to the
support the innermost interval of largest gradient between each two support points
(where it is positive), solve the quadratic (Newton) approximation of the log-likelihood
on that set under the constraints exactly (:func:`.qp.qp`, warm-started at the
current masses), then backtrack (Armijo) toward it.  Masses the step sets to zero leave
the support.  It stops on the KKT condition (``kkt <= tol``: no direction toward a point
mass rises), not on a small change of the likelihood, which is how the EM-type
algorithms stop short of the maximum.

Large candidate sets (many exact points each carry their own mass) would make the QP
dense and cubic; beyond :data:`_K_FULL` candidates each step is hierarchical, as
npsurv's ``hcnm``: a Newton step within blocks of about :data:`_K_BLOCK` candidates
(each block's mass fixed), then a Newton step on the blocks' masses (each block's
shape fixed), each followed by its line search.

Over millions of reports each step's passes over every report (the gradient on every
innermost interval, the runs over the candidates) cost more than its Newton solve.
There the method runs over a *working set* (column generation): the candidates of one
full pass, and the reports merged by their runs over them (a few hundred thousand rows
where there were millions), are solved to the maximum on that set, and only then is
the gradient on every innermost interval computed again, to add the next candidates
(1e7 Case-II reports: 6 full passes instead of 15, the NPMLE 5.4 s -> 3.6 s).

Examples
--------
>>> from privspec.backends.interval.npmle.data import design_from_rows
>>> des = design_from_rows(np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0]), np.array([2.0, 1.0, 1.0]))
>>> fit = cnm(des, initial(des), tol=1e-10, max_iter=100)
>>> fit.p.round(6).tolist(), fit.converged
([0.5, 0.25, 0.25], True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from privspec.backends.interval.npmle.data import Design, gradient, loglik, prefix_sums, row_probs, run_mass
from privspec.backends.interval.npmle.groups import Groups
from privspec.backends.interval.npmle.qp import cross_gram, qp, run_gram
from privspec.backends.data.tally import run_starts

__all__ = ["Fit", "candidates", "cnm", "initial"]

#: Armijo constant of the backtracking line search (as npsurv)
_ARMIJO = 1.0 / 3.0
#: candidate sets up to this size get one dense Newton step (the QP solves are ~k^3)
_K_FULL = 400
#: ... and larger ones too, up to :data:`_K_DENSE_MAX`, while k^3 is at most this many times
#: the number of rows: a hierarchical step makes some thirty passes over the rows (its
#: coarse step above all), which on millions of rows cost more than the dense solves
#: (1e7 Case-II reports, about 900 candidates: 4x faster dense)
_DENSE_PER_ROW = 200
_K_DENSE_MAX = 2000
#: beyond, blocks of about this many candidates (npsurv's hierarchical CNM does likewise)
_K_BLOCK = 100
#: plain rows with the same run over the candidates are merged in a step while the k x k
#: table of runs is at most this many times the rows (one bincount over both, then a scan
#: of the table).  Not beyond: the rows of a merged design (the working set's, the band's)
#: are distinct runs already, and the candidates are nearly all of its innermost
#: intervals, so merging them again saved ~2% of the rows for a scan of a table 3-4 times
#: their size (1e6 Case-II reports: band 0.40 s -> 0.35 s, the fit 0.166 s -> 0.152 s)
_MERGE_PER_ROW = 1
#: plain rows from which :func:`cnm` works over a working set of candidates (below, the
#: extra Newton steps on the merged rows cost more than the full passes saved: 1e7
#: Case-II reports, 7.5e6 rows, 5.4 s -> 3.6 s).  Since the QP reuses its factor as it
#: drops variables (:mod:`.qp`), those steps cost less: 1e6 Case-II reports, 7.5e5 rows,
#: 0.15 s against 0.19-0.23 s direct; 4.5e5 rows 0.11 s against 0.13 s; 2.2e5 rows
#: 0.060 s against 0.054 s
_WORKING_SET_ROWS = 400_000


@dataclass
class Fit:
    """The solver's answer: masses, log-likelihood, Newton steps, KKT measure, and the
    Lagrange multipliers of the group sums."""

    p: np.ndarray
    loglik: float
    iterations: int
    kkt: float
    converged: bool
    #: the gradient level of each group (d_j on its support at the maximum): the Lagrange
    #: multipliers, so that d loglik / d sums[g] = n * lam[g]
    lam: np.ndarray = field(default_factory=lambda: np.ones(1))
    #: full passes that chose a working set (0: the direct method, one step per pass)
    rounds: int = 0
    #: with two groups and ``tangent=True``: how the masses move per unit of mass moved from
    #: the second group to the first (the profile's next fit starts along it), else None
    tangent: np.ndarray | None = None


def initial(des: Design) -> np.ndarray:
    """Masses on a small set of innermost intervals meeting every report.

    The innermost intervals that are some row's only one (they carry mass at the
    maximum); the first one where a multi row starts there (every ring range holds it);
    then the greedy stabbing of the runs not met yet (plain rows, and the first run of
    each multi row missed): the first point is the smallest run end, the next the
    smallest run end among the runs starting after it, and so on.  Each point gets mass
    in proportion to the counts of the reports covering it (as npsurv starts).
    """
    m = des.m
    chosen = np.zeros(m, dtype=bool)
    # a row on a single innermost interval (an exact point, say) forces it: all at once
    single = des.a == des.b
    chosen[des.a[single]] = True
    ra, rb = des.a, des.b
    if des.has_multi:
        if np.any(des.pa == 0):
            chosen[0] = True
        count = np.concatenate([[0], np.cumsum(chosen)])
        met = np.bincount(des.powner, count[des.pb + 1] - count[des.pa], minlength=des.pc.size) > 0
        first = np.ones(des.powner.size, dtype=bool)
        first[1:] = des.powner[1:] != des.powner[:-1]
        first &= ~met[des.powner]
        ra, rb = np.concatenate([ra, des.pa[first]]), np.concatenate([rb, des.pb[first]])
    # (chosen ones up to each end in 32 bits, read without a shifted copy of the ends:
    # two gathers over all rows, at 1e7 reports fresh memory is the cost)
    count = np.zeros(m + 1, dtype=np.int32)
    np.cumsum(chosen, out=count[1:])
    rest = count[1:][rb] == count[ra]
    if rest.any():
        # the greedy stabbing of the runs not met yet
        first_end = np.full(m + 1, m, dtype=np.intp)
        np.minimum.at(first_end, ra[rest], rb[rest])
        # smallest run end among the runs starting at or after t
        nxt = np.minimum.accumulate(first_end[::-1])[::-1]
        q = int(nxt[0])
        while q < m:
            chosen[q] = True
            q = int(nxt[q + 1])
    if not chosen.any():
        chosen[0] = True
    picks = np.flatnonzero(chosen)
    # the counts covering each point: the gradient with every P_i = 1
    cover = gradient(des, np.ones(()), np.ones(()))      # (0-d: one for every row)
    p = np.zeros(m)
    p[picks] = np.maximum(cover[picks], 1e-300)
    return p / p.sum()


class _Step:
    """One Newton step's data: the candidate set J and every report's runs over it.

    Plain rows have one run; the pieces of the multi rows are runs too (possibly empty
    over J), and every two pieces of one row add an off-diagonal block to the matrix.

    Plain rows whose runs over J are the same are one row here, their counts added
    (:attr:`key`): the masses live on J, so such rows have the same probability now and
    after the step, and the Newton matrix, the ratios and the line search see them only
    through the sum of their counts.  Millions of reports over a few hundred candidates
    are a few hundred thousand runs (1e7 Case-II reports: 7.5e6 rows, ~900 candidates).
    """

    def __init__(self, des: Design, J: np.ndarray, p: np.ndarray, MP: np.ndarray, n: float):
        self.J = J
        self.k = k = J.size
        # (in 32 bits where the k x k table allows, as the band's merge: half the memory to
        # write and read over millions of rows)
        before = np.zeros(des.m + 1, dtype=np.int32 if k * k < 2 ** 31 and des.m < 2 ** 31 else np.intp)
        before[J + 1] = 1
        np.cumsum(before, out=before)          # before[t] = #J below t
        ra = before[des.a]
        rb = before[des.b1]
        rb -= 1
        #: each plain row's run over J as one number (``ra * k + rb``), when rows are merged
        self.key: np.ndarray | None = None
        self.c = des.c
        if ra.size and k * k <= _MERGE_PER_ROW * ra.size:
            # (ra <= rb: every row holds mass, and the masses are on J)
            # in place (ra is this step's own): two fresh arrays of millions of rows less
            self.key = ra
            ra *= k
            ra += rb
            total = np.bincount(self.key, des.c, minlength=k * k)
            runs = np.flatnonzero(total)
            ra, rb, self.c = runs // k, runs % k, total[runs]
        self.ra, self.rb = ra, rb
        self.P = self.probs(p[J])
        self.wq = self.c / (self.P * self.P) / n
        self.MP = MP
        self.multi = des.has_multi
        if self.multi:
            self.pa, self.pb = before[des.pa], before[des.pb + 1] - 1
            self.powner, self.nmulti = des.powner, des.pc.size
            self.mw = des.pc / (MP * MP) / n
            # the pieces that meet J (runs over J may be empty) and their rows' weights
            on = self.pa <= self.pb
            self.oa, self.ob, self.ow = self.pa[on], self.pb[on], self.mw[des.powner[on]]
            # pairs of pieces of one row, both meeting J
            i, j = des.pair_i, des.pair_j
            both = on[i] & on[j]
            self.xa1, self.xb1 = self.pa[i[both]], self.pb[i[both]]
            self.xa2, self.xb2 = self.pa[j[both]], self.pb[j[both]]
            self.xw = self.mw[des.powner[i[both]]]

    def probs(self, pJ: np.ndarray) -> np.ndarray:
        """The probability of each (merged) plain row under masses ``pJ`` on J."""
        return run_mass(pJ, prefix_sums(pJ), self.ra, self.rb)

    def row_probs(self, P: np.ndarray) -> np.ndarray:
        """Per-run probabilities (:meth:`probs`) given back to the design's plain rows."""
        if self.key is None:
            return P
        at = np.zeros(self.k * self.k)
        at[self.ra * self.k + self.rb] = P
        return at[self.key]

    def gram(self) -> np.ndarray:
        """The Newton matrix on all candidates: plain runs, pieces (their diagonal
        blocks), and every two pieces of one row (the off-diagonal blocks)."""
        G = run_gram(self.ra, self.rb, self.wq, self.k)
        if self.multi:
            if self.ow.size:
                G += run_gram(self.oa, self.ob, self.ow, self.k)
            if self.xw.size:
                G += cross_gram(self.xa1, self.xb1, self.xa2, self.xb2, self.xw, self.k)
        return G

    def block_grams(self, starts: np.ndarray, need: np.ndarray) -> Iterator[tuple[int, int, np.ndarray]]:
        """The Newton matrix of each block of candidates (blocks start at ``starts``) that
        is ``need``-ed: yields ``(s, e, G)``.

        A run takes part in a block only where it begins or ends; the blocks it spans
        wholly add a constant (its weight times a matrix of ones), accumulated for all
        blocks in one difference array.  Two pieces of one report meet in at most one
        block (the first ends before the second begins).  So all blocks cost
        O(n + sum of k_b^2), not O(n) each.
        """
        k, nb = self.k, starts.size
        ends = np.append(starts[1:], k) - 1
        block = np.repeat(np.arange(nb), np.diff(np.append(starts, k)))
        # the runs of the diagonal terms: plain rows, then the pieces that meet J
        da, db, dw = self.ra, self.rb, self.wq
        if self.multi:
            da, db, dw = np.concatenate([da, self.oa]), np.concatenate([db, self.ob]), np.concatenate([dw, self.ow])
        b1, b2 = block[da], block[db]
        spans = b2 > b1
        full = np.cumsum(np.bincount(b1[spans] + 1, dw[spans], minlength=nb + 1)
                         - np.bincount(b2[spans], dw[spans], minlength=nb + 1))[:nb]
        first = np.argsort(b1, kind="stable")
        first_at = np.searchsorted(b1[first], np.arange(nb + 1))
        second = np.flatnonzero(spans)
        second = second[np.argsort(b2[second], kind="stable")]
        second_at = np.searchsorted(b2[second], np.arange(nb + 1))
        cross = None
        if self.multi and self.xw.size:
            t1, t2 = block[self.xb1], block[self.xa2]
            meet = np.flatnonzero(t1 == t2)
            meet = meet[np.argsort(t1[meet], kind="stable")]
            cross = (meet, np.searchsorted(t1[meet], np.arange(nb + 1)))
        for t in np.flatnonzero(need):
            s, e = int(starts[t]), int(ends[t])
            rows = np.concatenate([first[first_at[t]:first_at[t + 1]], second[second_at[t]:second_at[t + 1]]])
            G = run_gram(np.maximum(da[rows], s) - s, np.minimum(db[rows], e) - s, dw[rows], e - s + 1)
            G += full[t]
            if cross is not None:
                pairs = cross[0][cross[1][t]:cross[1][t + 1]]
                if pairs.size:
                    G += cross_gram(np.maximum(self.xa1[pairs], s) - s, self.xb1[pairs] - s,
                                    self.xa2[pairs] - s, np.minimum(self.xb2[pairs], e) - s,
                                    self.xw[pairs], e - s + 1)
            yield s, e, G

    def ratios(self, x: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, float]:
        """Relative changes of P_i along ``delta = x - p`` (masses on J), and the drift of
        the total.

        From ``delta`` itself, so that tiny steps keep their digits; but a row to which
        ``x`` gives no mass at all gets exactly -1, so that the full step is seen to be
        impossible (rounding would leave it a finite, acceptable log-likelihood).
        """
        Sd = np.concatenate([[0.0], np.cumsum(delta)])
        Sx = np.concatenate([[0.0], np.cumsum(x)])
        ratio = (Sd[self.rb + 1] - Sd[self.ra]) / self.P
        ratio[Sx[self.rb + 1] == Sx[self.ra]] = -1.0
        mratio = None
        if self.multi:
            # empty runs (pa > pb) read 0: their prefix sums are clipped to equal ends
            lo, hi = self.pa, np.maximum(self.pb + 1, self.pa)
            change = np.bincount(self.powner, Sd[hi] - Sd[lo], minlength=self.nmulti)
            held = np.bincount(self.powner, Sx[hi] - Sx[lo], minlength=self.nmulti)
            mratio = change / self.MP
            mratio[held == 0.0] = -1.0
        return ratio, mratio, float(Sd[self.k])


def _line_search(c: np.ndarray, mc: np.ndarray, ratio: np.ndarray, mratio: np.ndarray | None,
                 drift: float, n: float) -> float | None:
    """Armijo backtracking on the exact change of the log-likelihood; None when no step
    rises.

    ``log1p`` keeps the change exact however small.  The masses sum to 1 only up to
    round-off, and n times that drift would swamp the gain near the maximum; the
    likelihood of the rescaled masses (``l(t p) = l(p) + n log t``) takes it out.
    """
    slope = float(c @ ratio) - n * drift
    if mratio is not None:
        slope += float(mc @ mratio)
    if not slope > 0:
        return None
    alpha = 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        while alpha > 1e-12:
            gain = float(c @ np.log1p(alpha * ratio)) - n * math.log1p(alpha * drift)
            if mratio is not None:
                gain += float(mc @ np.log1p(alpha * mratio))
            if gain >= _ARMIJO * alpha * slope:
                return alpha
            alpha *= 0.5
    return None


def _blocks(on_support: np.ndarray, grp: np.ndarray, offset: int) -> np.ndarray:
    """Starts of blocks of about ``_K_BLOCK`` candidates, each holding mass and one group.

    A block starts at a support point (so that every block has mass to move) or where
    the group changes; ``offset`` shifts the cuts between iterations.
    """
    sup = np.flatnonzero(on_support)
    cut = sup[1:][np.diff((sup + offset) // _K_BLOCK) > 0]
    starts = np.union1d(np.union1d([0], cut), np.flatnonzero(np.diff(grp)) + 1)
    # merge blocks without mass into a neighbour of the same group
    mass = np.add.reduceat(on_support.astype(np.intp), starts)
    keep = np.ones(starts.size, dtype=bool)
    for t in np.flatnonzero(mass == 0):
        if t > 0 and grp[starts[t]] == grp[starts[t] - 1]:
            keep[t] = False                     # join the previous block
        elif t + 1 < starts.size and grp[starts[t + 1]] == grp[starts[t]]:
            keep[t + 1] = False                 # join the next block
    return starts[keep]


def _block_gram(coef: tuple[np.ndarray, ...], w: np.ndarray, nb: int) -> np.ndarray:
    """The Gram matrix over ``nb`` blocks of runs given as block coefficients (see
    :func:`_coarse_step`), each run weighted by ``w``."""
    b1, b2, al, ar, lo, hi = coef
    G = np.zeros((nb, nb))
    full = lo <= hi
    if full.any():
        G += run_gram(lo[full], hi[full], w[full], nb)
    for t, a in ((b1, al), (b2, ar)):
        # the end blocks against the full run between them
        D = np.bincount(t[full] * (nb + 1) + lo[full], w[full] * a[full], minlength=nb * (nb + 1))
        D -= np.bincount(t[full] * (nb + 1) + hi[full] + 1, w[full] * a[full], minlength=nb * (nb + 1))
        M = np.cumsum(D.reshape(nb, nb + 1), axis=1)[:, :nb]
        G += M + M.T
    for t1, a1 in ((b1, al), (b2, ar)):
        for t2, a2 in ((b1, al), (b2, ar)):
            G += np.bincount(t1 * nb + t2, w * a1 * a2, minlength=nb * nb).reshape(nb, nb)
    return G


def _block_change(coef: tuple[np.ndarray, ...], dq: np.ndarray) -> np.ndarray:
    """How much each run's probability changes when the blocks' masses change by ``dq``."""
    b1, b2, al, ar, lo, hi = coef
    Sq = np.concatenate([[0.0], np.cumsum(dq)])
    run = np.where(lo <= hi, Sq[np.maximum(hi, lo - 1) + 1] - Sq[lo], 0.0)
    return run + al * dq[b1] + ar * dq[b2]


def _coarse_step(des: Design, p: np.ndarray, J: np.ndarray, starts: np.ndarray, grp: np.ndarray,
                 sums: np.ndarray, u: np.ndarray, n: float) -> np.ndarray | None:
    """A Newton step on the blocks' masses, each block's shape kept (the second level of
    the hierarchical method: it moves mass between distant blocks in one step)."""
    k, nb = J.size, starts.size
    pJ = p[J]
    ends = np.append(starts[1:], k) - 1
    q = np.add.reduceat(pJ, starts)
    block = np.repeat(np.arange(nb), np.diff(np.append(starts, k)))
    SJ = np.concatenate([[0.0], np.cumsum(pJ)])
    P, MP = row_probs(des, p)
    before = np.zeros(des.m + 1, dtype=np.intp)
    before[J + 1] = 1
    np.cumsum(before, out=before)

    def coefficients(ra: np.ndarray, rb: np.ndarray) -> tuple[np.ndarray, ...]:
        """A run over J as block coefficients: the share of each end block's mass it
        holds, and the blocks strictly between (wholly held); empty runs give zeros."""
        empty = ra > rb
        ra_, rb_ = np.minimum(ra, k - 1), np.maximum(rb, 0)
        b1, b2 = block[ra_], block[rb_]
        same = b1 == b2
        left_mass = np.where(same, SJ[rb_ + 1] - SJ[ra_], SJ[ends[b1] + 1] - SJ[ra_])
        right_mass = np.where(same, 0.0, SJ[rb_ + 1] - SJ[starts[b2]])
        al = np.where(empty, 0.0, left_mass / q[b1])
        ar = np.where(empty, 0.0, right_mass / q[b2])
        lo, hi = b1 + 1, np.where(same | empty, b1, b2 - 1)   # full blocks lo..hi (empty if lo > hi)
        return b1, b2, al, ar, lo, hi

    plain = coefficients(before[des.a], before[des.b1] - 1)
    G = _block_gram(plain, des.c / (P * P) / n, nb)
    V = None
    if des.has_multi:
        # a multi row as one dense vector of block coefficients (the sum of its pieces'):
        # multi rows x blocks, dense but narrow (a block holds ~_K_BLOCK candidates), and
        # it carries the products of two pieces of one row without a case of their own
        b1, b2, al, ar, lo, hi = coefficients(before[des.pa], before[des.pb + 1] - 1)
        V = np.zeros((des.pc.size, nb))
        np.add.at(V, (des.powner, b1), al)
        np.add.at(V, (des.powner, b2), ar)
        # the blocks held wholly: a difference array along each row
        full = lo <= hi
        marks = np.zeros((des.pc.size, nb + 1))
        np.add.at(marks, (des.powner[full], lo[full]), 1.0)
        np.add.at(marks, (des.powner[full], hi[full] + 1), -1.0)
        V += np.cumsum(marks, axis=1)[:, :nb]
        mw = des.pc / (MP * MP) / n
        G += V.T @ (V * mw[:, None])
    # the gradient in a block's mass: the mass-weighted mean of D_j over the block
    h = 2.0 * (np.add.reduceat(pJ * u[J], starts) / q) / n
    bgrp = grp[J][starts]
    live, gB = np.unique(bgrp, return_inverse=True)
    x = qp(G, h, q, gB.ravel().astype(np.intp), sums[live])
    dq = x - q
    ratio = _block_change(plain, dq) / P
    ratio[_block_change(plain, x) == 0.0] = -1.0      # no mass left to the row: see _Step.ratios
    mratio = None
    if V is not None:
        mratio = (V @ dq) / MP
        mratio[V @ x == 0.0] = -1.0
    alpha = _line_search(des.c, des.pc, ratio, mratio, float(dq.sum()), n)
    if alpha is None:
        return None
    scale = (q + alpha * dq) / q
    out = p.copy()
    out[J] = pJ * scale[block]
    return out


def cnm(des: Design, p0: np.ndarray, *, tol: float, max_iter: int,
        grp: np.ndarray | None = None, sums: np.ndarray | None = None,
        working_set_rows: int | None = None, dense_rows: int | None = None, tangent: bool = False,
        enter: bool = False) -> Fit:
    """Maximize the log-likelihood over masses on the innermost intervals from ``p0``.

    With ``grp``/``sums`` the masses of each group of innermost intervals are fixed
    (``sums[g]``; a group with sum 0 is excluded): the profile likelihood.  Each group is
    a run of innermost intervals (``grp`` non-decreasing), as on either side of a cut.
    ``p0`` must give every report a positive probability.  It ends at the maximum (``kkt <= tol``),
    after ``max_iter`` steps, or when no step rises any more (round-off near the
    maximum): ``converged`` says which.  From ``working_set_rows`` plain rows (default
    :data:`_WORKING_SET_ROWS`) and without multi rows it works over a working set of
    candidates (the module's docstring): the same maximum, fewer passes over the rows.
    ``dense_rows``: the rows the dense step's budget counts (default: the design's own),
    for a design of merged rows that stands for more (the band's constrained fits: warm-
    started next to their maximum, they take 2-3 dense steps where the hierarchical method
    takes ~9; at 1e7 Case-II reports, ~900 candidates over 2.5e5 merged rows standing for
    7.5e6, the band took 11.4 s CPU instead of 16.7).  ``tangent``: with two groups, the
    fit's :attr:`Fit.tangent` from its last dense Newton step (the direct method only).
    ``enter``: each dense step's QP starts with the new candidates free (:func:`.qp.qp`'s
    ``start``): for fits warm-started next to their maximum, as the band's, most of them
    enter, and one Cholesky factor a step does where the QP made a second once they had
    (1e7 Case-II reports: the band's 68 factors of ~880 x 880 -> 51, ~0.1 s); the same
    maximum, by another path, so not for the NPMLE itself, whose quantiles can sit on a
    tie to round-off (the fit at 1e7 then moved its 0.75 quantile to the neighbouring
    innermost interval).
    """
    if grp is None:
        grp = np.zeros(des.m, dtype=np.intp)
        sums = np.ones(1)
    assert sums is not None
    limit = _WORKING_SET_ROWS if working_set_rows is None else working_set_rows
    if not des.has_multi and des.a.size >= limit:
        return _working_set(des, p0, tol=tol, max_iter=max_iter, grp=grp, sums=sums)
    return _cnm(des, p0, tol=tol, max_iter=max_iter, grp=grp, sums=sums, dense_rows=dense_rows, tangent=tangent,
                enter=enter)


def candidates(p: np.ndarray, excess: np.ndarray, groups: Groups) -> np.ndarray:
    """The support and, between each two support points (and beyond the ends), the
    innermost interval of largest positive excess; group boundaries also split the
    segments.  Only the innermost intervals with a positive excess can be one: the search
    runs over them alone (a handful of arrays the size of those, not of all)."""
    support = np.flatnonzero(p > 0)
    starts = np.union1d(np.union1d(support, groups.starts), [0])
    return np.union1d(support, _segment_maxima(excess, starts))


def _working_set(des: Design, p0: np.ndarray, *, tol: float, max_iter: int, grp: np.ndarray,
                 sums: np.ndarray) -> Fit:
    """:func:`cnm` by column generation, for designs of plain rows only.

    Each round computes the gradient on every innermost interval, takes the candidates
    as a step would (:func:`candidates`), merges the reports by their runs over them
    (:class:`_Step`'s merged runs: the rows of a smaller design whose innermost intervals
    are the candidates) and solves that design to its maximum (:func:`_cnm`).  The masses
    live on the candidates, so each merged row's probability is its reports'; a
    maximum on the candidates that no innermost interval outside them improves on
    (``kkt <= tol`` on every one) is the maximum.  ``iterations`` counts the Newton steps
    of all rounds; ``max_iter`` bounds them.  Where the candidates' runs do not shrink the
    rows (many candidates: the k x k table of runs too large to merge them, or merged runs
    still more than a quarter of the rows) a round would cost more than it saves: the
    direct method takes over from the masses at hand."""
    m, n = des.m, des.n
    groups = Groups(grp, sums)
    p = p0.copy()
    none, empty = np.zeros(0), np.zeros(0, dtype=np.intp)
    its = rounds = 0
    # the log-likelihood of each round's masses is its smaller design's (the same sum over
    # merged rows, as a step's line search has it): no log of every row per round
    ll: float | None = None
    before = -math.inf
    P, _ = row_probs(des, p)
    while True:
        u = gradient(des, P, none)
        kkt, excess = groups.kkt(u / n, p)
        # a round that did not rise (round-off near the maximum) ends it, as a step does
        if kkt <= tol or its >= max_iter or (ll is not None and not ll > before):
            if ll is None:          # at the maximum from the start
                ll = loglik(des, P, none)
            break
        # (each array of all rows let go once used: at 1e7 reports fresh memory costs
        # more than the passes over it, see innermost._innermost_ranges)
        del P
        if ll is not None:
            before = ll
        J = candidates(p, excess, groups)
        step = _Step(des, J, p, none, n)
        if step.key is None or 4 * step.c.size > des.a.size:
            del step
            fit = _cnm(des, p, tol=tol, max_iter=max_iter - its, grp=grp, sums=sums)
            fit.iterations += its
            fit.rounds = rounds
            return fit
        rounds += 1
        sub = Design(m=J.size, inner_left=des.inner_left[J], inner_right=des.inner_right[J],
                     a=step.ra, b=step.rb, c=step.c, pa=empty, pb=empty, powner=empty, pc=none,
                     pair_i=empty, pair_j=empty, n=n, all_points=False)
        # (the merged rows stand for all of the design's: the dense step's budget counts those,
        # as for the band's fits; 1e7 Case-II reports, ~900 candidates over 2.5e5 merged rows:
        # the NPMLE 2.4 s -> 2.0 s, 38 Newton steps -> 33, the same maximum)
        fit = _cnm(sub, p[J], tol=tol, max_iter=max_iter - its, grp=grp[J], sums=sums, dense_rows=des.a.size)
        its += fit.iterations
        p = np.zeros(m)
        p[J] = fit.p
        ll = fit.loglik
        # every row's probability is its merged run's: one gather from the k x k table of
        # runs, where the prefix sums over all innermost intervals take two random ones
        P = step.row_probs(step.probs(fit.p))
        del step
    lam = groups.levels(u / n, p)
    return Fit(p=p, loglik=ll, iterations=its, kkt=kkt, converged=kkt <= tol, lam=lam, rounds=rounds)


def _cnm(des: Design, p0: np.ndarray, *, tol: float, max_iter: int, grp: np.ndarray, sums: np.ndarray,
         dense_rows: int | None = None, tangent: bool = False, enter: bool = False) -> Fit:
    """:func:`cnm` itself: a Newton step per pass over the rows."""
    m, n = des.m, des.n
    # a dense step up to _K_DENSE_MAX candidates while k^3 <= _DENSE_PER_ROW x rows
    dense_budget = _DENSE_PER_ROW * (des.a.size + des.pa.size if dense_rows is None else dense_rows)
    groups = Groups(grp, sums)
    p = p0.copy()
    P, MP = row_probs(des, p)
    ll = loglik(des, P, MP)
    u = gradient(des, P, MP)
    it = 0
    converged = False
    kkt = math.inf
    moves: tuple[np.ndarray, np.ndarray] | None = None      # the last dense step's (J, tangent)
    while True:
        d = u / n
        kkt, excess = groups.kkt(d, p)
        if kkt <= tol:
            converged = True
            break
        if it >= max_iter:
            break
        J = candidates(p, excess, groups)
        step = _Step(des, J, p, MP, n)
        h = 2.0 * d[J]
        gJ = grp[J]
        if step.k <= _K_FULL or (step.k <= _K_DENSE_MAX and float(step.k) ** 3 <= dense_budget):
            # only the groups with candidates take part (a group with sum 0 has none)
            live, gl = np.unique(gJ, return_inverse=True)
            # (the tangent: mass moved from the second group to the first, both live)
            ask = (np.array([1.0, -1.0]), []) if tangent and live.size == 2 and sums.size == 2 else None
            x = qp(step.gram(), h, p[J], gl.ravel().astype(np.intp), sums[live], direction=ask,
                   start=np.flatnonzero(p[J] == 0) if enter else None)
            moves = (J, ask[1][-1]) if ask and ask[1] and ask[1][-1] is not None else None
            blocks = None
        else:
            x, blocks = _block_step(step, J, p, d, gJ, it, tol)
            moves = None
        delta = x - p[J]
        ratio, mratio, drift = step.ratios(x, delta)
        alpha = _line_search(step.c, des.pc, ratio, mratio, drift / float(p[J].sum()), n)
        it += 1
        if alpha is None and blocks is None:
            break
        if alpha is not None:
            newp = p[J] + alpha * delta if alpha < 1.0 else x
            newp[newp < 0] = 0.0
            p = np.zeros(m)
            p[J] = newp
        if blocks is not None:
            # then mass between the blocks
            P, MP = row_probs(des, p)
            u = gradient(des, P, MP)
            moved = _coarse_step(des, p, J, _blocks(p[J] > 0, gJ, offset=0), grp, sums, u, n)
            if moved is None and alpha is None:
                break
            if moved is not None:
                p = moved
        # keep each group's sum exact against round-off
        groups.rescale(p)
        if blocks is None and not des.has_multi:
            # the masses are on J: the merged rows give every row's probability
            Pm = step.probs(p[J])
            with np.errstate(divide="ignore"):
                ll = float(step.c @ np.log(Pm))
            P = step.row_probs(Pm)
        else:
            P, MP = row_probs(des, p)
            ll = loglik(des, P, MP)
        u = gradient(des, P, MP)
    if converged:
        p, u, kkt, ll = _drop_round_off(des, groups, grp, p, u, kkt, ll, tol)
    lam = groups.levels(u / n, p)
    along = None
    if tangent and converged and moves is not None:
        along = np.zeros(m)
        along[moves[0]] = moves[1]
    return Fit(p=p, loglik=ll, iterations=it, kkt=kkt, converged=converged, lam=lam, tangent=along)


def _block_step(step: _Step, J: np.ndarray, p: np.ndarray, d: np.ndarray, gJ: np.ndarray, it: int,
                tol: float) -> tuple[np.ndarray, np.ndarray]:
    """The block-diagonal Newton step of :func:`_cnm`, each block of candidates keeping its
    mass: the new masses on ``J`` and the blocks' starts."""
    blocks = _blocks(p[J] > 0, gJ, offset=(_K_BLOCK // 2) * (it % 2))
    x = p[J].copy()
    # a block already at its own optimum (the gradient level on its support and
    # no higher on its candidates) is left as it is
    dJ = d[J]
    spread = np.maximum.reduceat(dJ, blocks) - np.minimum.reduceat(np.where(x > 0, dJ, np.inf), blocks)
    for s, e, Gb in step.block_grams(blocks, spread > 0.1 * tol):
        xb = x[s:e + 1]
        # the Newton model in the block's masses alone: a row's target is 1 plus the
        # share of its probability held in the block (2 when it is all there)
        hb = d[J[s:e + 1]] + Gb @ xb
        x[s:e + 1] = qp(Gb, hb, xb, np.zeros(xb.size, dtype=np.intp), np.array([xb.sum()]))
    return x, blocks


def _drop_round_off(des: Design, groups: Groups, grp: np.ndarray, p: np.ndarray, u: np.ndarray, kkt: float,
                    ll: float, tol: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """A converged fit less the masses round-off left (<= 1e-12 of their group) where the
    gradient is clearly below its group's level: the maximum has none there (on its support
    d_j = lambda), and "exact zeros off the support" is what the result promises.  Returns
    ``(p, u, kkt, loglik)``, unchanged where dropping them would break the KKT conditions."""
    n, sums = des.n, groups.sums
    lam = groups.levels(u / n, p)
    off = (p > 0) & (p <= 1e-12 * sums[grp]) & (u / n - lam[grp] < -1e-8)
    if off.any():
        q = p.copy()
        q[off] = 0.0
        groups.rescale(q)
        P2, MP2 = row_probs(des, q)
        if np.all(P2 > 0) and np.all(MP2 > 0):
            u2 = gradient(des, P2, MP2)
            kkt2, _ = groups.kkt(u2 / n, q)
            if kkt2 <= tol:
                return q, u2, kkt2, loglik(des, P2, MP2)
    return p, u, kkt, ll


def _segment_maxima(excess: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """In each segment (``starts``: where each begins, the first at 0), the first index of
    the segment's largest excess, where that is positive."""
    pos = np.flatnonzero(excess > 0)
    if not pos.size:
        return pos
    ex = excess[pos]
    seg = np.searchsorted(starts, pos, side="right") - 1
    first = np.flatnonzero(run_starts(seg))
    top = np.maximum.reduceat(ex, first)
    at_max = np.flatnonzero(ex == np.repeat(top, np.diff(np.append(first, ex.size))))
    return pos[at_max[run_starts(seg[at_max])]]
