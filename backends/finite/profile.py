"""Profile likelihood intervals of a finite mechanism's categories, for many replications
at once.

The interval of ``c = sum_{j in group} w_j`` is ``{c : 2 (l_hat - l_c) <= scale crit(c)}``
with ``l_c`` the likelihood maximized with the group's mass fixed at c and ``crit`` the
boundary-aware critical value (:func:`boundary_critical`). Each end solves ``r(c) = +-1`` for
the signed root deviance ``r(c) = sign(c - c_hat) sqrt(2 (l_hat - l_c) / (scale crit(c)))``,
nearly linear in c: a bracket grown from the Wald guess ``c_hat +- z se`` (an end stays at 0
or 1 where the deviance there is below the critical value), then Brent's method inside it
(as :func:`scipy.optimize.brentq` takes its steps), each constrained fit warm-started from
the end's previous one.

Every end of every group of every replication is a problem of its own; all take their
steps together, so a step costs one batched constrained Newton fit
(:func:`privspec.backends.core.batched.newton_many`) over the problems still open, rather
than one fit each: ``simulate`` fits thousands of replications' intervals in the time of a
few.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.backends.core.normal import z_quantile
from privspec.backends.core.batched import ManyBlocks, newton_many

#: the relative tolerance of Brent's method (scipy's default for brentq) and its iterations at most
RTOL, MAX_ITER = 4 * np.finfo(float).eps, 100


@functools.lru_cache(maxsize=8)
def critical_table(level: float) -> tuple[np.ndarray, np.ndarray, float]:
    """``(distances, critical values, chi2_1(level))``: :func:`boundary_critical` on a grid of
    distances from the boundary (0 to 4 standard errors), and its value beyond.  Made with
    :mod:`scipy.stats` and :func:`scipy.optimize.brentq` (0.4-0.9 s to import at start-up);
    numbers only, so a compiled plan keeps it and its intervals need neither
    (:class:`~privspec.backends.finite.estimates.EstimatePlan`).

    Examples
    --------
    >>> grid, crit, far = critical_table(0.95)
    >>> len(grid), round(float(crit[0]), 3), round(far, 3)
    (401, 2.706, 3.841)
    """
    grid = np.linspace(0.0, 4.0, 401)
    lo, hi = float(scipy.stats.chi2.ppf(2 * level - 1, 1)), float(scipy.stats.chi2.ppf(level, 1))

    def accept(c: float, mu: float) -> float:
        r = math.sqrt(c)
        low = mu - r if mu >= r else ((mu * mu - c) / (2 * mu) if mu > 0 else -np.inf)
        return float(scipy.stats.norm.cdf(r) - scipy.stats.norm.cdf(low - mu)) - level

    crit = [scipy.optimize.brentq(accept, lo * (1 - 1e-12), hi * (1 + 1e-12), args=(mu,), xtol=1e-12) for mu in grid]
    return grid, np.array(crit), hi


def boundary_critical(distance: np.ndarray | float, level: float = 0.95,
                      table: tuple[np.ndarray, np.ndarray, float] | None = None) -> np.ndarray | float:
    """The critical value of the profile deviance for a parameter ``distance`` standard errors
    from a boundary (0 or 1 for a probability), so that the interval covers at ``level``.

    In the limit the estimate is ``X ~ N(mu, 1)`` restricted to ``mu >= 0``; the profile
    deviance at ``mu`` is ``(X - mu)^2`` for ``X >= 0`` and ``mu^2 - 2 X mu`` for ``X < 0``
    (the MLE sits at 0).  Accepting ``mu`` when the deviance is at most ``c(mu)`` with
    ``P_mu(deviance <= c(mu)) = level`` is the likelihood-ratio-ordered Neyman construction
    (Feldman and Cousins 1998): exact coverage for every ``mu``.  ``c`` rises from
    ``chi2_1(2 level - 1)`` (2.71 at 95%: at the boundary half the estimates are at 0 and
    always covered) to ``chi2_1(level)`` (3.84) about 2 standard errors away; a fixed 3.84
    covers 97.5% at the boundary.  ``table``: :func:`critical_table` at ``level``, where the
    caller has it (a compiled plan), else it is made (and kept) here.

    Examples
    --------
    >>> [round(float(boundary_critical(d)), 3) for d in (0.0, 1.0, 3.0)]
    [2.706, 3.31, 3.841]
    """
    grid, crit, far = critical_table(float(level)) if table is None else table
    return np.interp(distance, grid, crit, right=far)


class _Ends:
    """The problems, one per (replication, group, end): what the signed root deviance
    ``r(c)`` of each needs, and the warm start of its next constrained fit."""

    def __init__(self, K: np.ndarray, C: np.ndarray, W_hat: np.ndarray, ll_hat: np.ndarray, groups: np.ndarray,
                 level: float, scale: np.ndarray, se: np.ndarray,
                 critical: tuple[np.ndarray, np.ndarray, float] | None = None):
        R, k = scale.shape
        rep, grp, end = (a.ravel() for a in np.meshgrid(np.arange(R), np.arange(k), np.arange(2), indexing="ij"))
        self.K, self.C, self.level, self.critical = K, C[rep], level, critical
        self.parts = np.where(groups[grp], 0, 1)
        self.sign = np.where(end == 0, -1.0, 1.0)
        self.edge = end.astype(float)
        self.c_hat = np.einsum("rp,rp->r", W_hat[rep], groups[grp].astype(float))
        self.ll_hat, self.scale = ll_hat[rep], scale[rep, grp]
        self.unit = np.where(se[rep, grp] > 0, se[rep, grp], 0.0)
        self.step = np.maximum(self.unit, 1e-4)
        self.z = z_quantile(level)
        self.warm = W_hat[rep].copy()

    def root(self, idx: np.ndarray, c: np.ndarray) -> np.ndarray:
        """``r(c)`` of problems ``idx`` at their masses ``c``: sign(c - c_hat) sqrt(deviance /
        critical value), +-1 at the interval's ends; the fits become the warm starts."""
        blocks = ManyBlocks(self.parts[idx], np.column_stack([c, 1.0 - c]))
        fit = newton_many(self.K, self.C[idx], self.warm[idx], blocks, tol=1e-9)
        finite = np.isfinite(fit.loglik)
        self.warm[idx[finite]] = fit.w[finite]
        dev = 2.0 * (self.ll_hat[idx] - fit.loglik) / self.scale[idx]
        unit = self.unit[idx]
        crit = np.where(unit > 0, boundary_critical(np.minimum(c, 1.0 - c) / np.where(unit > 0, unit, 1.0),
                                                     self.level, self.critical), self.z * self.z)
        r = np.sqrt(np.maximum(np.where(finite, dev, 0.0), 0.0) / crit)
        return np.copysign(np.where(finite, r, 1e6), c - self.c_hat[idx])


def profile_intervals(K: np.ndarray, C: np.ndarray, W_hat: np.ndarray, ll_hat: np.ndarray, groups: np.ndarray,
                      level: float = 0.95, *, scale: np.ndarray | None = None, se: np.ndarray | None = None,
                      critical: tuple[np.ndarray, np.ndarray, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The profile likelihood intervals of every group's mass in every replication.

    ``C`` (R x observations) the counts of R replications on the channel ``K``, ``W_hat``
    (R x p) and ``ll_hat`` (R) their MLEs and log-likelihoods, ``groups`` (k x p, bool) the
    categories summed into each estimand cell; ``scale`` and ``se`` (R x k, default 1 and 0)
    the deviance's scale (< 1 narrows the interval by a ratio of two variances while keeping
    its shape at the boundary: the conditional interval) and the unit of the distance to the
    boundary; ``critical`` the :func:`critical_table` at ``level`` where the caller has it
    (a compiled plan: then no scipy submodule is needed). Returns the intervals (R x k x 2)
    and which replications failed (Brent's bracket lost its sign change: the fit refuses them).

    Examples
    --------
    >>> from privspec.backends.core.batched import em_many
    >>> K = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> C = np.array([[260.0, 740.0]])
    >>> fit = em_many(K, C)
    >>> ci, failed = profile_intervals(K, C, fit.w, fit.loglik, np.array([[True, False]]))
    >>> float(ci[0, 0, 0]), round(float(ci[0, 0, 1]), 3), failed.tolist()
    (0.0, 0.076, [False])
    """
    R, k = len(C), len(groups)
    p = _Ends(K, np.asarray(C, dtype=float), np.asarray(W_hat, dtype=float), np.asarray(ll_hat, dtype=float),
              np.asarray(groups, dtype=bool), level, np.ones((R, k)) if scale is None else np.asarray(scale, float),
              np.zeros((R, k)) if se is None else np.asarray(se, float), critical)
    ends = np.where(np.abs(p.c_hat - p.edge) < 1e-12, p.edge, np.nan)
    inner, outer = p.c_hat.copy(), p.c_hat + p.sign * p.z * p.step
    searching = np.isnan(ends)
    brent = np.zeros(len(ends), dtype=bool)
    while searching.any():   # grow each bracket until the root deviance passes z or the edge is reached
        idx = np.nonzero(searching)[0]
        beyond = p.sign[idx] * (outer[idx] - p.edge[idx]) >= 0
        outer[idx[beyond]] = p.edge[idx[beyond]]
        inside = p.sign[idx] * p.root(idx, outer[idx]) <= 1.0
        ends[idx[beyond & inside]] = p.edge[idx[beyond & inside]]
        grow = idx[~beyond & inside]
        inner[grow], outer[grow] = outer[grow], outer[grow] + p.sign[grow] * 2 * np.abs(outer[grow] - p.c_hat[grow])
        brent[idx[~inside]] = True
        searching[idx[beyond | ~inside]] = False
    idx = np.nonzero(brent)[0]
    lo, hi = np.minimum(inner[idx], outer[idx]), np.maximum(inner[idx], outer[idx])
    ends[idx] = _brent(lambda i, c: p.root(idx[i], c) - p.sign[idx[i]], lo, hi, np.maximum(1e-10, 1e-5 * p.step[idx]))
    ends = ends.reshape(R, k, 2)
    return ends, np.isnan(ends).any(axis=(1, 2))


def _brent(f, a: np.ndarray, b: np.ndarray, xtol: np.ndarray) -> np.ndarray:
    """A root of each ``f(i, x)`` (the problems ``i`` at points ``x``) bracketed by ``[a, b]``,
    by Brent's method as :func:`scipy.optimize.brentq` takes its steps (the same points, one
    batched evaluation a step over the problems still open); NaN where ``f`` has the same sign
    at both ends or the method did not converge."""
    everyone = np.arange(len(a))
    xpre, xcur = a.astype(float), b.astype(float)
    fpre = f(everyone, xpre)
    fcur = f(everyone, xcur)
    out = np.full(len(a), np.nan)
    out[fcur == 0] = xcur[fcur == 0]
    out[fpre == 0] = xpre[fpre == 0]
    xblk, fblk, spre, scur = (np.zeros(len(a)) for _ in range(4))
    i = np.nonzero(fpre * fcur < 0)[0]
    for _ in range(MAX_ITER):
        if not i.size:
            break
        flip = i[fpre[i] * fcur[i] < 0]   # the bracket's far end: the last point with the other sign
        xblk[flip], fblk[flip] = xpre[flip], fpre[flip]
        spre[flip] = scur[flip] = xcur[flip] - xpre[flip]
        swap = i[np.abs(fblk[i]) < np.abs(fcur[i])]   # the best point is xcur
        xpre[swap], xcur[swap], xblk[swap] = xcur[swap], xblk[swap], xcur[swap]
        fpre[swap], fcur[swap], fblk[swap] = fcur[swap], fblk[swap], fcur[swap]
        delta = (xtol[i] + RTOL * np.abs(xcur[i])) / 2
        sbis = (xblk[i] - xcur[i]) / 2
        done = (fcur[i] == 0) | (np.abs(sbis) < delta)
        out[i[done]] = xcur[i[done]]
        i, delta, sbis = i[~done], delta[~done], sbis[~done]
        with np.errstate(divide="ignore", invalid="ignore"):   # the branch not taken may divide by 0
            secant = -fcur[i] * (xcur[i] - xpre[i]) / (fcur[i] - fpre[i])
            dpre = (fpre[i] - fcur[i]) / (xpre[i] - xcur[i])
            dblk = (fblk[i] - fcur[i]) / (xblk[i] - xcur[i])
            quadratic = -fcur[i] * (fblk[i] * dblk - fpre[i] * dpre) / (dblk * dpre * (fblk[i] - fpre[i]))
        stry = np.where(xpre[i] == xblk[i], secant, quadratic)
        short = (np.abs(spre[i]) > delta) & (np.abs(fcur[i]) < np.abs(fpre[i])) \
            & (2 * np.abs(stry) < np.minimum(np.abs(spre[i]), 3 * np.abs(sbis) - delta))
        spre[i], scur[i] = np.where(short, scur[i], sbis), np.where(short, stry, sbis)   # else bisect
        xpre[i], fpre[i] = xcur[i], fcur[i]
        xcur[i] += np.where(np.abs(scur[i]) > delta, scur[i], np.where(sbis > 0, delta, -delta))
        fcur[i] = f(i, xcur[i])
    return out
