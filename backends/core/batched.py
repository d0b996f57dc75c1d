"""The maximum-likelihood fits of :mod:`privspec.backends.core.estimators` on many count
vectors at once: one row per problem, the same channel ``K`` for all.

A simulation's replications, or a profile likelihood's constrained fits over replications,
categories and interval ends, differ only in their counts, their start and the masses
their blocks of categories are held at. Each function here takes the step of its scalar
counterpart on every row still iterating, row by row the same arithmetic (so the same
iterates up to rounding), and drops a row as soon as the scalar fit would have stopped:

* :func:`em_many`: :func:`~privspec.backends.core.estimators.em` (EM with SQUAREM);
* :func:`newton_many`: :func:`~privspec.backends.core.estimators.newton` (projected Newton,
  active set, EM steps where Newton makes no progress, polished by EM).

Counts of 0 enter nowhere (as the scalar fits keep only the observed reports): a row of
``K`` never reported adds 0 to every sum.

Examples
--------
>>> K = np.array([[0.75, 0.25], [0.25, 0.75]])               # Warner's design
>>> C = np.array([[70.0, 30.0], [40.0, 60.0]])               # two samples' report counts
>>> em_many(K, C).w.round(3).tolist()                         # the MLE of each, on the simplex
[[0.9, 0.1], [0.3, 0.7]]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privspec.backends.core.channel import Channel
from privspec.backends.core.estimators import FLAT_CYCLES, FLAT_GAIN, Fit, em, kkt_ratio


class ManyBlocks:
    """:class:`~privspec.backends.core.estimators.Blocks` per row: ``parts`` (rows x p) the
    block of each coordinate, ``masses`` (rows x k) each block's fixed mass.

    Examples
    --------
    >>> b = ManyBlocks(np.array([[0, 1, 1], [0, 0, 1]]), np.array([[0.25, 0.75], [0.5, 0.5]]))
    >>> b.rescale(np.array([[1.0, 1.0, 2.0], [1.0, 3.0, 2.0]])).tolist()
    [[0.25, 0.25, 0.5], [0.125, 0.375, 0.5]]
    """

    def __init__(self, parts: np.ndarray, masses: np.ndarray):
        self.parts = np.asarray(parts, dtype=np.int64)
        self.masses = np.asarray(masses, dtype=float)
        self.member = self.parts[:, :, None] == np.arange(self.masses.shape[1])   # rows x p x k
        self.live = self.per_coordinate(self.masses) > 0
        self.size = self.member.sum(axis=1)

    @classmethod
    def simplex(cls, rows: int, p: int) -> "ManyBlocks":
        """One block of mass 1 per row: the probability simplex."""
        return cls(np.zeros((rows, p), dtype=np.int64), np.ones((rows, 1)))

    def subset(self, rows: np.ndarray) -> "ManyBlocks":
        return ManyBlocks(self.parts[rows], self.masses[rows])

    def per_coordinate(self, a: np.ndarray) -> np.ndarray:
        """A value per block (rows x k) read at each coordinate's block (rows x p)."""
        return np.take_along_axis(a, self.parts, axis=1)

    def sums(self, v: np.ndarray) -> np.ndarray:
        return np.einsum("rp,rpk->rk", v, self.member)

    def rescale(self, v: np.ndarray) -> np.ndarray:
        """Each block scaled to its mass (an empty block with mass: spread evenly)."""
        sums = self.sums(v)
        ok = sums > 0
        factor = np.where(ok, self.masses / np.where(ok, sums, 1.0), 0.0)
        out = v * self.per_coordinate(factor)
        empty = ~ok & (self.masses > 0)
        if empty.any():
            spread = self.masses / np.maximum(self.size, 1)
            out = np.where(self.per_coordinate(empty), self.per_coordinate(spread), out)
        return out

    def multipliers(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Each block's Lagrange multiplier (rows x k; inf for a block of mass 0)."""
        live = self.masses > 0
        return np.where(live, self.sums(w * g) / np.where(live, self.masses, 1.0), np.inf)

    def violation(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        """The KKT violation of each row (:meth:`Blocks.violation`)."""
        nu = self.per_coordinate(self.multipliers(w, g))
        return np.max(np.where(self.live, kkt_ratio(g, nu) - 1.0, -np.inf), axis=1)


@dataclass(frozen=True)
class ManyFits:
    """The fits of every row: ``w`` (rows x p), and per row its log-likelihood, KKT
    violation, iterations (map evaluations for EM, Newton iterations plus EM steps for Newton)."""

    w: np.ndarray
    loglik: np.ndarray
    kkt: np.ndarray
    iterations: np.ndarray


def loglik(K: np.ndarray, C: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``sum_o n_o log (K w)_o`` per row."""
    return np.sum(C * np.log(np.maximum(W @ K.T, 1e-300)), axis=1)


def gradient(K: np.ndarray, C: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``g_j = sum_o n_o K[o, j] / (K w)_o`` per row."""
    return (C / np.maximum(W @ K.T, 1e-300)) @ K


def em_step(K: np.ndarray, C: np.ndarray, n: np.ndarray, W: np.ndarray) -> np.ndarray:
    """One EM update per row (before any block's rescaling)."""
    lam = W @ K.T
    return W * ((C / np.where(lam > 0, lam, 1.0)) @ K) / n[:, None]


def em_many(K: np.ndarray, C: np.ndarray, W0: np.ndarray | None = None, blocks: ManyBlocks | None = None, *,
            tol: float = 1e-10, max_iter: int = 100_000, accelerate: bool = True) -> ManyFits:
    """:func:`~privspec.backends.core.estimators.em` on every row of counts ``C`` (a linear
    channel ``K``; an affine one is a column of ``K`` held at mass 1 by ``blocks``)."""
    rows, p = C.shape[0], K.shape[1]
    n = C.sum(axis=1)
    b = ManyBlocks.simplex(rows, p) if blocks is None else blocks
    if W0 is None:
        W = b.rescale(np.ones((rows, p)))
    else:  # off the boundary, where EM cannot move a coordinate
        W0 = np.asarray(W0, dtype=float)
        W = b.rescale(np.maximum(W0, 0.0) / np.maximum(W0.sum(axis=1, keepdims=True), 1e-300) * 0.999
                      + 0.001 / p * b.live)

    def step(rs: np.ndarray, v: np.ndarray) -> np.ndarray:
        out = em_step(K, C[rs], n[rs], v)
        return out if blocks is None else b.subset(rs).rescale(out)

    it = np.zeros(rows, dtype=np.int64)
    violation = np.full(rows, np.inf)
    flat = np.zeros(rows, dtype=np.int64)
    ll_now = loglik(K, C, W)
    active = np.arange(rows)
    while active.size:
        w = W[active]
        w_next = step(active, w)
        it[active] += 1
        if accelerate:
            w_next = _squarem_cycle(K, C[active], w, w_next, lambda rs, v: step(active[rs], v), it, active)
        W[active] = w_next
        violation[active] = b.subset(active).violation(w_next, gradient(K, C[active], w_next))
        ll_next = loglik(K, C[active], w_next)
        flat[active] = np.where(ll_next - ll_now[active] <= FLAT_GAIN * np.abs(ll_now[active]), flat[active] + 1, 0)
        ll_now[active] = ll_next
        done = (violation[active] < tol) | (flat[active] >= FLAT_CYCLES) | (it[active] >= max_iter)
        active = active[~done]
    return ManyFits(W, loglik(K, C, W), violation, it)


def _squarem_cycle(K: np.ndarray, C: np.ndarray, w: np.ndarray, w1: np.ndarray, step, it: np.ndarray,
                   active: np.ndarray) -> np.ndarray:
    """The rest of a SQUAREM cycle from ``w`` and its EM step ``w1`` on each row (scheme S3,
    the extrapolated point kept only where it does not lower the likelihood); counts the
    map evaluations in ``it``."""
    rows = np.arange(len(w))
    w2 = step(rows, w1)
    it[active] += 1
    r, v = w1 - w, w2 - 2 * w1 + w
    nv = np.linalg.norm(v, axis=1)
    has = nv > 0
    alpha = np.minimum(-np.linalg.norm(r, axis=1) / np.where(has, nv, 1.0), -1.0)
    cand = w - 2 * alpha[:, None] * r + (alpha ** 2)[:, None] * v
    sums = cand.sum(axis=1)
    ok = has & np.all(cand >= 0, axis=1) & (sums > 0)
    out = w2.copy()
    if ok.any():
        rs = rows[ok]
        stepped = step(rs, cand[ok] / sums[ok, None])
        it[active[rs]] += 1
        better = loglik(K, C[rs], stepped) >= loglik(K, C[rs], w2[rs])
        out[rs[better]] = stepped[better]
    return out


def newton_many(K: np.ndarray, C: np.ndarray, W0: np.ndarray, blocks: ManyBlocks, *, tol: float = 1e-10,
                max_iter: int = 500) -> ManyFits:
    """:func:`~privspec.backends.core.estimators.newton` from ``W0`` on every row of counts
    ``C``, each row's coordinates in its own ``blocks`` of fixed mass."""
    n = C.sum(axis=1)
    W = blocks.rescale(np.maximum(np.asarray(W0, dtype=float), 0.0))
    steps = np.zeros(len(W), dtype=np.int64)
    active = np.arange(len(W))
    for _ in range(max_iter):
        if not active.size:
            break
        W[active], done = _newton_iteration(K, C[active], n[active], W[active], blocks.subset(active), tol)
        steps[active] += 1
        active = active[~done]
    violation = blocks.violation(W, gradient(K, C, W))
    rough = np.nonzero(violation >= max(tol, 1e-8))[0]
    if rough.size:  # polish: EM from here reaches the maximum of a concave likelihood
        sub = blocks.subset(rough)
        polished = em_many(K, C[rough], W[rough], sub, tol=max(tol, 1e-10))
        keep = polished.loglik >= loglik(K, C[rough], W[rough]) - 1e-9
        W[rough[keep]] = polished.w[keep]
        steps[rough[keep]] += polished.iterations[keep]
        violation = blocks.violation(W, gradient(K, C, W))
    return ManyFits(W, loglik(K, C, W), violation, steps)


def _newton_iteration(K: np.ndarray, C: np.ndarray, n: np.ndarray, w: np.ndarray, b: ManyBlocks,
                      tol: float) -> tuple[np.ndarray, np.ndarray]:
    """One iteration of :func:`~privspec.backends.core.estimators.newton` on each row: the
    new points and which rows stop."""
    g = gradient(K, C, w)
    violation = b.violation(w, g)
    d = _directions(K, C, w, g, b, tol)
    size = np.abs(d).max(axis=1)
    stop = (violation < tol) & (size < 1e-12)
    neg = d < 0
    with np.errstate(over="ignore"):   # a tiny negative step gives an infinite bound: no bound
        tmax = np.min(np.where(neg, -w / np.where(neg, d, -1.0), np.inf), axis=1)
    t = np.minimum(1.0, tmax)
    base = loglik(K, C, w)
    cand, found = w.copy(), np.zeros(len(w), dtype=bool)
    searching = ~stop & (t > 1e-12)
    while searching.any():   # backtrack until the likelihood does not fall (beyond rounding)
        rs = np.nonzero(searching)[0]
        trial = b.subset(rs).rescale(np.maximum(w[rs] + t[rs, None] * d[rs], 0.0))
        ok = loglik(K, C[rs], trial) >= base[rs] - 1e-12 * np.maximum(1.0, np.abs(base[rs]))
        cand[rs[ok]], found[rs[ok]] = trial[ok], True
        t[rs[~ok]] /= 2
        searching[rs[ok]] = False
        searching &= t > 1e-12
    # no uphill Newton step: one EM step (monotone) keeps the iteration moving
    uphill = ~stop & ~(found & (loglik(K, C, cand) > base))
    halt = np.zeros(len(w), dtype=bool)
    if uphill.any():
        rs = np.nonzero(uphill)[0]
        cand[rs] = b.subset(rs).rescale(em_step(K, C[rs], n[rs], w[rs]))
        halt[rs] = (loglik(K, C[rs], cand[rs]) <= base[rs]) & (violation[rs] < tol)
    move = ~stop & ~halt
    out = np.where(move[:, None], cand, w)
    done = stop | halt | (move & (violation < tol) & (t >= 1.0) & (size < 1e-10))
    return out, done


def _directions(K: np.ndarray, C: np.ndarray, w: np.ndarray, g: np.ndarray, b: ManyBlocks,
                tol: float) -> np.ndarray:
    """The Newton direction of :func:`~privspec.backends.core.estimators.newton` on each row.

    Each row's bordered system is solved at full size with its fixed coordinates (and the
    multipliers of blocks with no free coordinate) as identity rows: the same solution as
    the system on the free coordinates alone."""
    rows, p = w.shape
    k = b.masses.shape[1]
    lam = np.maximum(w @ K.T, 1e-100)   # lam**2 stays a normal float
    H = -(K.T[None, :, :] * (C / lam ** 2)[:, None, :]) @ K
    nu = b.per_coordinate(b.multipliers(w, g))
    free = b.live & ((w > 1e-14) | (kkt_ratio(g, nu) - 1.0 > tol))
    d = np.zeros((rows, p))
    todo = np.arange(rows)
    eye = np.eye(p + k)
    while todo.size:
        f = free[todo]
        link = b.member[todo] & f[:, :, None]                       # rows x p x k
        A = np.zeros((len(todo), p + k, p + k))
        A[:, :p, :p] = np.where(f[:, :, None] & f[:, None, :], H[todo], 0.0)
        A[:, :p, p:] = link
        A[:, p:, :p] = link.transpose(0, 2, 1)
        fixed = np.concatenate([~f, ~link.any(axis=1)], axis=1)
        A += eye * fixed[:, :, None]
        rhs = np.concatenate([np.where(f, -g[todo], 0.0), np.zeros((len(todo), k))], axis=1)
        step = _solve(A, rhs)[:, :p] * f
        blocked = (w[todo] <= 1e-14) & (step < 0) & f
        ok = ~blocked.any(axis=1)
        d[todo[ok]] = step[ok]
        free[todo] &= ~blocked
        todo = todo[~ok]
    return d


def _solve(A: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Each row's system, by least squares where it is singular."""
    try:
        return np.linalg.solve(A, rhs[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        out = np.empty_like(rhs)
        for i, (a, r) in enumerate(zip(A, rhs)):
            try:
                out[i] = np.linalg.solve(a, r)
            except np.linalg.LinAlgError:
                out[i] = np.linalg.lstsq(a, r, rcond=None)[0]
        return out


def em_fits(ch: Channel, C: np.ndarray, *, tol: float = 1e-10) -> list[Fit | ValueError]:
    """:func:`~privspec.backends.core.estimators.em` on every row of counts ``C`` at once (from
    the uniform w): each row's :class:`Fit`, or the error that refuses it (no observations).
    An affine channel (dummy categories) fits its offset as one more category held at mass 1.
    A row that stops unconverged (its likelihood flat in doubles: whether a gain is within
    rounding depends on how the sums round) is fitted again on its own by ``em``."""
    C = np.asarray(C, dtype=float)
    if C.ndim != 2 or C.shape[1] != ch.n_obs:
        raise ValueError(f"expected {ch.n_obs} counts, got shape {C.shape[1:]}")
    n = C.sum(axis=1)
    rows = np.nonzero(n > 0)[0]
    K, blocks, p = ch.Kn, None, ch.p
    if ch.offset is not None:
        K = np.column_stack([K, ch.bn])
        blocks = ManyBlocks(np.tile(np.r_[np.zeros(p, dtype=np.int64), 1], (len(rows), 1)), np.ones((len(rows), 2)))
    fit = em_many(K, C[rows], None, blocks, tol=tol)
    note = "EM with SQUAREM acceleration" + ("" if blocks is None else
                                             "; the dummy categories' mass fixed at alpha (Appendix II)")
    out: list[Fit | ValueError] = [ValueError("no observations")] * len(C)
    for i, r in enumerate(rows):
        if fit.kkt[i] < tol:
            out[r] = Fit(fit.w[i, :p], "em", int(round(n[r])), float(fit.loglik[i]), int(fit.iterations[i]),
                         float(fit.kkt[i]), True, note)
        else:   # stopped where the likelihood is flat in doubles: the row on its own, as em rounds
            out[r] = em(ch, C[r], tol=tol)
    return out
