"""Estimators of w from counts per distinct observation, for any channel.

Data reach these functions only as sufficient statistics: ``counts[o]`` = how many
respondents reported observation ``o`` of the channel.  Every iteration therefore costs
O(observations x p), whatever the number of respondents.

* :func:`mom`: the method of moments ``Q w = gamma_hat`` (Eq. 5; Warner's estimator for
  randomized response, where Q = K);
* :func:`em`: the MLE by EM (section III-A) with SQUAREM acceleration;
* :func:`newton`: the MLE by a projected Newton (active-set) method on the simplex;
* :func:`one_step`: one Newton step from the MoM estimate (Eq. 7);
* :func:`kkt`: the optimality check of the MLE on the simplex.

All return a :class:`Fit`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privspec.backends.core.channel import Channel
from privspec.backends.core.projections import project_simplex


@dataclass(frozen=True)
class Fit:
    """An estimate of w with how it was obtained."""

    w: np.ndarray
    method: str
    n: int
    loglik: float
    iterations: int = 0
    kkt: float = float("nan")
    converged: bool = True
    note: str = ""


def _check(ch: Channel, counts: np.ndarray) -> np.ndarray:
    counts = np.asarray(counts, dtype=float)
    if counts.shape != (ch.n_obs,):
        raise ValueError(f"expected {ch.n_obs} counts, got shape {counts.shape}")
    if counts.sum() <= 0:
        raise ValueError("no observations")
    return counts


def _observed(ch: Channel, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The rows of K that were observed, their counts, and n: the likelihood involves
    nothing else."""
    nz = counts > 0
    return ch.Kn[nz], counts[nz], float(counts[nz].sum())


#: the estimators that take an affine channel (K w + b): the others (Newton, one-step)
#: are written for a linear one
AFFINE_METHODS = ("mom", "mle", "em")


def gradient(ch: Channel, counts: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``g_j = d l / d w_j = sum_o n_o K[o, j] / (K w)_o``."""
    K = ch.Kn
    lam = K @ w
    nz = counts > 0
    return K[nz].T @ (counts[nz] / lam[nz])


def kkt(ch: Channel, counts: np.ndarray, w: np.ndarray) -> float:
    """``max_j (g_j / n - 1)``: at the MLE on the simplex it is 0 (up to rounding) where
    w_j > 0 and <= 0 elsewhere (the Lagrange multiplier of sum w = 1 is n)."""
    n = counts.sum()
    return float(np.max(gradient(ch, counts, w) / n - 1.0))


def mom(ch: Channel, counts: np.ndarray) -> Fit:
    """``w_hat = Q^-1 gamma_hat`` with ``gamma_hat = T counts / n`` (Eq. 5).

    Unbiased and linear in the counts; it may leave the simplex (negative entries) in
    small samples: see :func:`project_simplex`.
    """
    counts = _check(ch, counts)
    n = counts.sum()
    gamma = ch.Tn @ counts / n
    if ch.offset is not None:  # an affine channel: T (K w + b) = gamma
        gamma = gamma - ch.Tn @ ch.bn
    w = ch.mom_solve(gamma)
    lam = ch.probabilities(w)
    ll = float(np.sum(counts[counts > 0] * np.log(lam[counts > 0]))) if np.all(lam[counts > 0] > 0) else float("nan")
    return Fit(w, "mom", int(round(n)), ll)


def _em_step(K: np.ndarray, counts: np.ndarray, n: float, w: np.ndarray) -> np.ndarray:
    lam = K @ w
    return w * (K.T @ (counts / np.where(lam > 0, lam, 1.0))) / n


#: cycles in a row whose log-likelihood gain is within rounding (:data:`FLAT_GAIN` of its size)
#: after which EM stops: the likelihood is flat in doubles (a channel all but singular, grr at
#: epsilon = 1e-9, moved w by 1e-8 a step and ran its 100,000 iterations, 2.7 s, for nothing)
FLAT_CYCLES = 100
FLAT_GAIN = 1e-15


def _squarem(step, ll, violation, w: np.ndarray, tol: float, max_iter: int,
             accelerate: bool) -> tuple[np.ndarray, int, float]:
    """Iterate a monotone fixed-point map (an EM step) to ``violation(w) < tol``.

    With ``accelerate`` each cycle is a SQUAREM step (Varadhan and Roland 2008, scheme S3),
    kept only when it does not lower the likelihood ``ll``.  Stops early, unconverged, when
    :data:`FLAT_CYCLES` cycles in a row gain no more than rounding.  Returns the point, the
    number of map evaluations and the last violation.
    """
    it = 0
    v_now = np.inf
    flat = 0
    ll_now = ll(w)
    while it < max_iter:
        w1 = step(w)
        it += 1
        w_next = w1
        if accelerate:
            w2 = step(w1)
            it += 1
            r = w1 - w
            v = w2 - 2 * w1 + w
            nv = np.linalg.norm(v)
            w_next = w2
            if nv > 0:
                alpha = min(-np.linalg.norm(r) / nv, -1.0)
                cand = w - 2 * alpha * r + alpha ** 2 * v
                if np.all(cand >= 0) and cand.sum() > 0:
                    cand = step(cand / cand.sum())
                    it += 1
                    if ll(cand) >= ll(w2):
                        w_next = cand
        w = w_next
        v_now = violation(w)
        if v_now < tol:
            break
        ll_next = ll(w)
        flat = flat + 1 if ll_next - ll_now <= FLAT_GAIN * abs(ll_now) else 0
        ll_now = ll_next
        if flat >= FLAT_CYCLES:
            break
    return w, it, v_now


class Blocks:
    """The coordinates of w partitioned into blocks of fixed total mass.

    The probability simplex is one block of mass 1; a profile likelihood fixes the mass
    of a group of categories (two blocks, ``c`` and ``1 - c``).  The Lagrange multiplier
    of a block at a point is ``nu_b = sum_{j in b} w_j g_j / mass_b`` (for the simplex
    ``sum_j w_j g_j = n`` for every w, so ``nu = n``), and the KKT conditions of the
    maximum are ``g_j <= nu_b`` with equality where ``w_j > 0``.  A block of mass 0 holds
    zeros and takes no part.

    Examples
    --------
    >>> b = Blocks(3, np.array([0, 1, 1]), np.array([0.25, 0.75]))
    >>> b.rescale(np.array([1.0, 1.0, 2.0])).tolist()
    [0.25, 0.25, 0.5]
    """

    def __init__(self, p: int, parts: np.ndarray | None = None, masses: np.ndarray | None = None):
        self.parts = np.zeros(p, dtype=np.int64) if parts is None else np.asarray(parts, dtype=np.int64)
        self.masses = np.ones(1) if masses is None else np.asarray(masses, dtype=float)
        self.k = len(self.masses)
        self.live = self.masses[self.parts] > 0
        self.size = np.bincount(self.parts, minlength=self.k)

    def rescale(self, v: np.ndarray) -> np.ndarray:
        """Each block scaled to its mass (an empty block with mass: spread evenly)."""
        sums = np.bincount(self.parts, weights=v, minlength=self.k)
        ok = sums > 0
        factor = np.where(ok, self.masses / np.where(ok, sums, 1.0), 0.0)
        out = v * factor[self.parts]
        empty = ~ok & (self.masses > 0)
        if empty.any():
            out = np.where(empty[self.parts], (self.masses / np.maximum(self.size, 1))[self.parts], out)
        return out

    def multipliers(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        num = np.bincount(self.parts, weights=w * g, minlength=self.k)
        live = self.masses > 0
        return np.where(live, num / np.where(live, self.masses, 1.0), np.inf)

    def violation(self, w: np.ndarray, g: np.ndarray) -> float:
        """``max_j (g_j / nu_b(j) - 1)`` over coordinates of blocks with mass."""
        nu = self.multipliers(w, g)[self.parts]
        return float(np.max(np.where(self.live, kkt_ratio(g, nu) - 1.0, -np.inf)))


def kkt_ratio(g: np.ndarray, nu: np.ndarray) -> np.ndarray:
    """``g / nu`` with ``0 / 0 = 0`` and ``g / 0 = inf`` for ``g > 0``.

    A block's multiplier is 0 when all its mass sits where no observed report reaches
    (data that do not determine the estimate, refused later as D020); the ratio must
    still order the coordinates rather than be NaN.

    Examples
    --------
    >>> kkt_ratio(np.array([0.0, 2.0, 3.0]), np.array([0.0, 0.0, 1.5])).tolist()
    [0.0, inf, 2.0]
    """
    out = np.where(g > 0, np.inf, 0.0)
    np.divide(g, nu, out=out, where=nu > 0)
    return out


def _gradient(Kz: np.ndarray, cz: np.ndarray, w: np.ndarray) -> np.ndarray:
    return Kz.T @ (cz / np.maximum(Kz @ w, 1e-300))


def em(ch: Channel, counts: np.ndarray, w0: np.ndarray | None = None, *, tol: float = 1e-10,
       max_iter: int = 100_000, accelerate: bool = True, blocks: Blocks | None = None) -> Fit:
    """The MLE by EM: ``w_j <- w_j sum_o n_o K[o, j] / (K w)_o / n`` (section III-A).

    With ``accelerate`` each cycle is a SQUAREM step (:func:`_squarem`).  Stops when the
    KKT violation is below ``tol``; iterations cost O(observations x p), independent of n.
    With ``blocks`` the masses of blocks of categories are held fixed (the constrained
    M-step rescales each block of the plain update to its mass).
    """
    counts = _check(ch, counts)
    Kz, cz, n = _observed(ch, counts)
    p = ch.p
    affine = ch.offset is not None
    if affine:
        # lambda = K w + b with b known: the M-step of a mixture with known components
        # renormalizes the real categories' shares among themselves (b enters lambda only)
        Kz = np.column_stack([Kz, ch.bn[counts > 0]])
        blocks = Blocks(p + 1, np.r_[np.zeros(p, int), 1], np.array([1.0, 1.0])) if blocks is None else \
            Blocks(p + 1, np.r_[blocks.parts, blocks.k], np.r_[blocks.masses, 1.0])
        p += 1
        w0 = None if w0 is None else np.r_[np.asarray(w0, dtype=float), 1.0]
    b = Blocks(p) if blocks is None else blocks
    if w0 is None:
        w = b.rescale(np.ones(p))
    else:  # off the boundary, where EM cannot move a coordinate
        w = b.rescale(np.maximum(np.asarray(w0, dtype=float), 0.0) / max(float(np.sum(w0)), 1e-300) * 0.999
                      + 0.001 / p * b.live)
    ll = lambda v: float(cz @ np.log(np.maximum(Kz @ v, 1e-300)))  # noqa: E731
    step = (lambda v: _em_step(Kz, cz, n, v)) if blocks is None else (lambda v: b.rescale(_em_step(Kz, cz, n, v)))
    w, it, violation = _squarem(step, ll, lambda v: b.violation(v, _gradient(Kz, cz, v)), w, tol, max_iter,
                                accelerate)
    if affine:  # the offset's coordinate (held at 1) is not a category
        return Fit(w[:-1], "em", int(round(n)), ll(w), it, violation, violation < tol,
                   ("EM with SQUAREM acceleration" if accelerate else "EM")
                   + "; the dummy categories' mass fixed at alpha (Appendix II)")
    return Fit(w, "em", int(round(n)), ll(w), it, violation, violation < tol,
               ("EM with SQUAREM acceleration" if accelerate else "EM")
               + ("" if blocks is None else "; masses of blocks of categories fixed"))


def _newton_direction(Kz: np.ndarray, cz: np.ndarray, w: np.ndarray, g: np.ndarray, blocks: Blocks,
                      tol: float) -> np.ndarray:
    """The Newton direction of the log-likelihood on the face that is free.

    A coordinate is free if it is positive, or zero with a KKT violation (its gradient
    says mass should move there).  The step solves the bordered system of the Hessian on
    the free coordinates with ``sum d = 0`` over each block.  A zero coordinate that the
    step would make negative is fixed at zero and the system solved again (the active set
    of a projected Newton method), so that the step is never blocked at length 0 by a
    bound it should not have left.
    """
    p = len(w)
    lam = np.maximum(Kz @ w, 1e-100)   # lam**2 stays a normal float
    nu = blocks.multipliers(w, g)[blocks.parts]
    free = blocks.live & ((w > 1e-14) | (kkt_ratio(g, nu) - 1.0 > tol))
    while True:
        S = np.nonzero(free)[0]
        if len(S) == 0:
            return np.zeros(p)
        H = -(Kz[:, S].T * (cz / lam ** 2)) @ Kz[:, S]
        used = np.unique(blocks.parts[S])
        m, k = len(S), len(used)
        A = np.zeros((m + k, m + k))
        A[:m, :m] = H
        C = (blocks.parts[S][None, :] == used[:, None]).astype(float)
        A[m:, :m] = C
        A[:m, m:] = C.T
        rhs = np.concatenate([-g[S], np.zeros(k)])
        try:
            sol = np.linalg.solve(A, rhs)
        except np.linalg.LinAlgError:
            sol = np.linalg.lstsq(A, rhs, rcond=None)[0]
        d = np.zeros(p)
        d[S] = sol[:m]
        blocked = (w <= 1e-14) & (d < 0) & free
        if not blocked.any():
            return d
        free &= ~blocked


def newton(ch: Channel, counts: np.ndarray, w0: np.ndarray | None = None, *, tol: float = 1e-10,
           max_iter: int = 500, blocks: Blocks | None = None) -> Fit:
    """The MLE by projected Newton on the simplex (an active-set method).

    Each iteration takes the Newton step of the log-likelihood on the free coordinates
    subject to ``sum w = 1`` (or each block's mass, ``blocks``; :func:`_newton_direction`),
    stops at the boundary and backtracks until the likelihood increases.  Where the Newton
    step makes no progress (a singular or indefinite system far from the optimum) an EM
    step is taken instead: EM never lowers the likelihood, so the iteration always moves
    uphill.  The fit ends at the maximum (KKT violation below ``tol``, polished by EM if
    Newton stalls) or says it did not (``converged = False``); the back end refuses an
    unconverged fit.
    """
    counts = _check(ch, counts)
    Kz, cz, n = _observed(ch, counts)
    b = Blocks(ch.p) if blocks is None else blocks
    if w0 is None:
        w = em(ch, counts, tol=1e-3, max_iter=50, blocks=blocks).w
    else:
        w = b.rescale(np.maximum(np.asarray(w0, dtype=float), 0.0))
    ll = lambda v: float(cz @ np.log(np.maximum(Kz @ v, 1e-300)))  # noqa: E731
    em_step = lambda v: b.rescale(_em_step(Kz, cz, n, v))  # noqa: E731
    it = 0
    em_steps = 0
    for it in range(1, max_iter + 1):
        g = _gradient(Kz, cz, w)
        violation = b.violation(w, g)
        d = _newton_direction(Kz, cz, w, g, b, tol)
        if violation < tol and np.abs(d).max() < 1e-12:
            break
        neg = d < 0
        tmax = float(np.min(-w[neg] / d[neg])) if neg.any() else np.inf
        t = min(1.0, tmax)
        base = ll(w)
        cand = None
        while t > 1e-12:
            trial = b.rescale(np.maximum(w + t * d, 0.0))
            if ll(trial) >= base - 1e-12 * max(1.0, abs(base)):
                cand = trial
                break
            t /= 2
        if cand is None or ll(cand) <= base:
            # no uphill Newton step: one EM step (monotone) keeps the iteration moving
            cand = em_step(w)
            em_steps += 1
            if ll(cand) <= base and violation < tol:
                break
        w = cand
        if violation < tol and t >= 1.0 and np.abs(d).max() < 1e-10:
            break
    violation = b.violation(w, _gradient(Kz, cz, w))
    if violation >= max(tol, 1e-8):  # polish: EM from here reaches the maximum of a concave likelihood
        polished = em(ch, counts, w, tol=max(tol, 1e-10), blocks=blocks)
        if polished.loglik >= ll(w) - 1e-9:
            w, em_steps = polished.w, em_steps + polished.iterations
        violation = b.violation(w, _gradient(Kz, cz, w))
    note = "projected Newton (active set) on the simplex"
    if em_steps:
        note += f"; {em_steps} EM step{'s' if em_steps != 1 else ''} where Newton made no progress"
    return Fit(w, "newton", int(round(n)), ll(w), it, violation, violation < max(tol, 1e-8), note)


def one_step(ch: Channel, counts: np.ndarray) -> Fit:
    """One Newton step from the MoM estimate (Eq. 7), safeguarded.

    The paper writes ``theta_MoM + (Hessian)^-1 gradient``; since the Hessian of the
    log-likelihood is negative definite the Newton step for a maximum is
    ``theta - (Hessian)^-1 gradient`` (the paper's sign is a typo, or reads the Hessian as
    the negative Hessian).

    Safeguards, which leave the estimator's limit unchanged (when w is inside the simplex
    the MoM start is too with probability tending to 1, and then the full step is taken):
    a MoM estimate outside the simplex (or giving an observed report probability 0) is
    projected onto it and mixed with 1e-6 of the uniform distribution; the step stops at
    the boundary of the simplex (coordinates at zero that the step would push negative
    stay at zero, as in :func:`newton`) and is halved until the likelihood does not
    decrease.  Without them the raw step overshoots where the likelihood is flat or w is
    near the boundary: at p = 4, n = 100 its scaled loss n ||w_hat - w||^2 averaged 3x
    the MLE's limit with a maximum over 100x.  The note says which safeguard acted.
    """
    counts = _check(ch, counts)
    start = mom(ch, counts)
    # theta_MoM = w_MoM[:p-1] and w = alpha + B theta (Q^-1 gamma_hat need not sum to 1 exactly)
    w = np.append(start.w[:-1], 1.0 - start.w[:-1].sum())
    note = "one Newton step from the MoM estimate (Eq. 7)"
    Kz, cz, n = _observed(ch, counts)
    if not (np.all(w >= 0) and np.all(Kz @ w > 0)):
        w = 0.999999 * project_simplex(w) + 1e-6 / ch.p
        note += "; MoM projected onto the simplex first"
    ll = lambda v: float(cz @ np.log(np.maximum(Kz @ v, 1e-300)))  # noqa: E731
    g = Kz.T @ (cz / (Kz @ w))
    d = _newton_direction(Kz, cz, w, g, Blocks(ch.p), 0.0)
    neg = d < 0
    tmax = float(np.min(-w[neg] / d[neg])) if neg.any() else np.inf
    t = min(1.0, tmax)
    base = ll(w)
    while t > 1e-12 and ll(w + t * d) < base:
        t /= 2
    if t <= 1e-12:
        t = 0.0
    if t < 1.0:
        note += f"; step shortened to {t:.3g} of the Newton step ({'simplex boundary' if tmax < 1 else 'likelihood'})"
    w1 = np.maximum(w + t * d, 0.0)
    w1 /= w1.sum()
    return Fit(w1, "one_step", int(round(counts.sum())), ll(w1), 1, note=note)


ESTIMATORS = {"mom": mom, "mle": em, "em": em, "newton": newton, "one_step": one_step}


def estimate(ch: Channel, counts: np.ndarray, method: str) -> Fit:
    """Dispatch on the spec's estimator name (``mle`` is EM)."""
    return ESTIMATORS[method](ch, counts)
