"""Estimates of probabilities brought back where they belong: projections onto the
probability simplex (an unbiased estimate may have negative cells) and intervals kept
within [0, 1], for every family that estimates a distribution (finite mechanisms,
randomized response, frequency oracles).

* :func:`project` -- ``none``, ``clip`` (:func:`clip_renormalize`) or ``euclidean``
  (:func:`project_simplex`): the ``project`` option of an estimator;
* :func:`score_interval` -- the score (Wilson-type) interval of a linear, unbiased
  estimate (castell, RR-Joint, MoM);
* :func:`wald_interval` -- ``estimate +- z se``, clipped to [0, 1].
"""
from __future__ import annotations

import numpy as np

from privspec.backends.core.normal import z_quantile

#: simplex projections an estimate may be given (``by castell(project = euclidean)``)
PROJECTIONS = ("none", "clip", "euclidean")


# ---- projections onto the simplex --------------------------------------------------------------
def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the probability simplex (sort-based, O(p log p)).

    Examples
    --------
    >>> project_simplex(np.array([0.6, 0.6, -0.2])).round(3).tolist()
    [0.5, 0.5, 0.0]
    """
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, len(v) + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1), 0.0)


def clip_renormalize(v: np.ndarray) -> np.ndarray:
    """Set negative entries to 0 and rescale to sum 1."""
    c = np.maximum(v, 0.0)
    return c / c.sum()


def project(table: np.ndarray, how: str) -> np.ndarray:
    """The table projected onto the probability simplex: ``none``, ``clip`` (negative
    cells set to 0, then rescaled to sum 1: what multi-freq-ldpy's MI does) or
    ``euclidean`` (the nearest distribution in L2)."""
    if how == "none":
        return table
    flat = np.asarray(table, dtype=float).reshape(-1)
    if how == "clip":
        out = clip_renormalize(flat) if np.any(flat > 0) else np.full(flat.size, 1.0 / flat.size)
    elif how == "euclidean":
        out = project_simplex(flat)
    else:
        raise ValueError(f"unknown projection {how!r}: {' | '.join(PROJECTIONS)}")
    return out.reshape(np.shape(table))


# ---- intervals of probabilities ------------------------------------------------------------------
#: the interval of castell-type (linear, unbiased) estimates (:func:`score_interval`)
SCORE_CI = "score (Wilson-type, continuity-corrected, within [0, 1])"


def score_interval(est: np.ndarray, second: np.ndarray, g: np.ndarray, step: np.ndarray, n: int,
                   se: str = "population", level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The 95% score interval of each cell of a linear estimate ``Pi_hat = A lambda_hat``
    (``A K = I``): the cell values t with ``|Pi_hat - t| <= z sqrt(V(t)/n)``, V evaluated
    where the cell is t, widened by half a lattice step and cut to [0, 1].

    The Wald interval ``Pi_hat +- z se`` under-covers cells near 0 (or 1) where few
    reports carry them (large eps, small n: 78% at eps = 8 per attribute, n = 1000, a cell
    of 0.0014; see docs/randomized-response.md): its se is estimated where the cell is
    ``Pi_hat``, too small when ``Pi_hat`` happens to be small.  As Wilson's interval does
    for a proportion, the score interval evaluates the variance at each candidate t.  To
    move the cell to t the truth's other cells give up (or take) mass in proportion,
    ``Pi(t) = Pi_hat + (t - Pi_hat_x)(e_x - Pi_hat_-x/(1 - Pi_hat_x))``, so that with
    ``s = (A o A) lambda_hat`` (``n`` times the second moment) and ``g_x = sum_y A[x, y]^2
    K[y, x]``, ``n V(t) = s + b (t - Pi_hat_x) - t^2`` (population) or ``s + b (t -
    Pi_hat_x) - t`` (conditional), ``b = (g - s)/(1 - Pi_hat_x)``: a quadratic inequality
    in t, solved in closed form.  For GRR on two categories it is Wilson's interval on
    the report scale.  The reports are counts, so the estimate moves on a lattice (a
    report changing cells moves cell x by at most ``2 max_y |A[x, y]| / n``); where the
    privacy noise is a handful of such moves (conditional, large eps) a normal interval
    misses whenever one happens, so each end is moved out by ``step = max_y |A[x, y]| /
    (2 n)`` (a continuity correction, negligible for large n).

    Parameters
    ----------
    est, second, g, step : arrays
        ``Pi_hat``, ``(A o A) lambda_hat``, ``g`` and the half lattice step, per cell.
    n : int
        The number of reports.
    se : {"population", "conditional"}
        Which variance.
    level : float
        The coverage aimed at.

    Returns
    -------
    (lower, upper) : arrays

    Examples
    --------
    GRR on two categories (p = 3/4): Wilson's interval for the report frequency 0.3,
    mapped to the cell, then the continuity correction:

    >>> A = np.array([[1.5, -0.5], [-0.5, 1.5]]); K = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> lam = np.array([0.3, 0.7]); n = 100
    >>> lo, hi = score_interval(A @ lam, (A * A) @ lam, np.diag((A * A) @ K), np.full(2, 1.5 / 200), n)
    >>> z = 1.959963984540054; c = z * z / n
    >>> w = (0.3 + c / 2 - z * np.sqrt(0.3 * 0.7 / n + c / (4 * n))) / (1 + c)    # Wilson, lower end
    >>> bool(np.isclose(lo[0], max((w - 0.25) / 0.5 - 1.5 / 200, 0)))
    True
    """
    z = z_quantile(level)
    c = z * z / n
    b = (g - second) / np.maximum(1 - est, 1.0 / n)
    if se == "population":
        a2, a1 = 1 + c, -(2 * est + c * b)
    else:
        a2, a1 = 1.0, -(2 * est + c * (b - 1))
    a0 = est * est - c * (second - b * est)
    root = np.sqrt(np.maximum(a1 * a1 - 4 * a2 * a0, 0.0))
    lower = np.clip((-a1 - root) / (2 * a2) - step, 0.0, 1.0)
    upper = np.clip((-a1 + root) / (2 * a2) + step, 0.0, 1.0)
    return lower, upper


def wald_interval(w: np.ndarray, se: np.ndarray, level: float = 0.95) -> np.ndarray:
    """``w +- z se`` with ``z`` the normal quantile, clipped to ``[0, 1]`` (a probability).

    Examples
    --------
    >>> wald_interval(np.array([0.01, 0.5]), np.array([0.01, 0.1])).round(4).tolist()
    [[0.0, 0.0296], [0.304, 0.696]]
    """
    z = z_quantile(level)
    return np.clip(np.column_stack([w - z * se, w + z * se]), 0.0, 1.0)


#: how :func:`wald_interval` names its intervals where a back end has no other kind
WALD_CI = "wald (estimate +- z se, clipped to [0, 1])"
