"""Survey weights for castell (``mom`` on a product) on tables too large for the Jacobian:
per-cell design variances with ``U = (x)_k K_k^-1`` never formed.

Linearization.  A PSU's total of influence values is ``z_h = U r_h`` with ``r_h = (c_h -
W_h lambda_hat) / N_hat`` (``c_h`` the PSU's weighted report counts, ``W_h`` its total
weight): one Kronecker solve per PSU (:func:`~privspec.backends.core.kron.kron_apply` on
the inverses, as castell inverts).  The stratified with-replacement variance on those
totals, its diagonal only, is
``sum_h n_h / (n_h - 1) sum_c m_c (z_hc - zbar_h)^2`` with ``zbar_h = U rbar_h`` (by
linearity: one more solve per stratum, so the deviations are taken exactly, not as a
difference of sums of squares).  This is the diagonal of
:func:`~privspec.backends.core.survey_design.linearized_covariance`.  Memory: a stratum is
visited PSU by PSU and keeps only its mean and the running sum of squares (three tables
of the estimand's cells besides the PSU's own), never PSUs x cells at once.  Time: one
solve, O(w d cells), per PSU.  Without clusters every distinct (report, stratum, weight)
is a PSU; there the sums of squares have a closed form in the reports' sums of squared
weights, three solves per stratum (:func:`_unclustered_variance`).

The unweighted estimator's per-cell variance (deff's denominator) is
``diag(U (diag lambda - lambda lambda^T) U^T) / n = ((U o U) lambda - (U lambda)^2) / n``
with ``U o U = (x)_k (K_k^-1 o K_k^-1)``
(:func:`~privspec.backends.core.kron.kron_cov_diag`).

Replicate weights re-run castell on each replicate's shares and keep the diagonal of
:meth:`~privspec.backends.data.replicates.Replicates.covariance`'s formula, ``sum_r f_r
(theta_r - theta)^2``, accumulated one replicate at a time.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from privspec.backends.core.kron import kron_apply, kron_cov_diag
from privspec.backends.core.survey_design import DesignCells


def linearized_variance(inv: Sequence[np.ndarray], cells: DesignCells, shares: np.ndarray,
                        total: float) -> np.ndarray:
    """The diagonal of the stratified with-replacement covariance of castell's Hajek
    estimate (the module docstring), ``inv`` the factors' ``K_k^-1``.

    Examples
    --------
    Two strata of two rows, one binary factor (``U = K^-1``): the diagonal of the dense
    formula

    >>> from privspec.backends.core.survey_design import linearized_covariance
    >>> inv = [np.linalg.inv(np.array([[0.75, 0.25], [0.25, 0.75]]))]
    >>> cells = DesignCells(report=np.array([0, 1, 0, 0]), weight=np.array([1.0, 2.0, 1.0, 3.0]),
    ...                     stratum=np.array([0, 0, 1, 1]), psu=np.arange(4), repeats=np.ones(4, dtype=int))
    >>> shares = np.bincount(cells.report, weights=cells.weight, minlength=2) / 7
    >>> psi = (inv[0] - (inv[0] @ shares)[:, None]) / 7
    >>> np.allclose(linearized_variance(inv, cells, shares, 7.0), np.diag(linearized_covariance(psi, cells)))
    True
    """
    size = shares.size
    order = np.argsort(cells.psu, kind="stable")
    psu = cells.psu[order]
    starts = np.flatnonzero(np.r_[True, psu[1:] != psu[:-1]])
    if len(starts) == len(psu):              # no clusters: every PSU is one cell
        return _unclustered_variance(inv, cells, shares, total)
    bounds = np.r_[starts, len(psu)]
    stratum_of = cells.stratum[order][starts]
    repeats_of = cells.repeats[order][starts]
    var = np.zeros(size)
    for h in np.unique(stratum_of):
        members = np.flatnonzero(stratum_of == h)
        n_h = float(repeats_of[members].sum())
        rbar = np.zeros(size)
        for j in members:
            rbar += repeats_of[j] * _residual(cells, order[bounds[j]:bounds[j + 1]], shares, total)
        zbar = kron_apply(inv, rbar / max(n_h, 1.0)).reshape(-1)
        acc = np.zeros(size)
        for j in members:
            r = _residual(cells, order[bounds[j]:bounds[j + 1]], shares, total)
            d = kron_apply(inv, r, overwrite=True).reshape(-1) - zbar
            acc += repeats_of[j] * d * d
        var += n_h / max(n_h - 1.0, 1.0) * acc
    return var


def _unclustered_variance(inv: Sequence[np.ndarray], cells: DesignCells, shares: np.ndarray,
                          total: float) -> np.ndarray:
    """:func:`linearized_variance` where every PSU is one cell (a design without clusters:
    ``m_c`` equal rows reporting ``o_c`` with weight ``w_c``), in three solves per stratum
    instead of one per cell.  A cell's total is ``z_c = w_c (U e_(o_c) - u) / N_hat`` with
    ``u = U lambda_hat``, so over a stratum
    ``sum_c m_c z_c^2 = ((U o U) a - 2 u (U a) + u^2 sum(a)) / N_hat^2`` with ``a`` the
    stratum's ``sum m_c w_c^2`` per report, and the deviations' sum of squares is that less
    ``n_h zbar_h^2`` (``zbar_h = U rbar_h``, as in the clustered path).  The difference of
    sums of squares loses nothing that matters here: the influence values are centred, so
    ``zbar_h`` is small beside them (checked equal to the dense formula, rtol 1e-10)."""
    size = shares.size
    u = kron_apply(inv, shares.astype(float)).reshape(-1)
    squares = [m * m for m in inv]
    var = np.zeros(size)
    for h in np.unique(cells.stratum):
        rows = cells.stratum == h
        m, w, o = cells.repeats[rows].astype(float), cells.weight[rows], cells.report[rows]
        n_h = float(m.sum())
        a = np.bincount(o, weights=m * w * w, minlength=size)
        c = np.bincount(o, weights=m * w, minlength=size)
        sum_sq = (kron_apply(squares, a).reshape(-1) - 2 * u * kron_apply(inv, a).reshape(-1)
                  + u * u * a.sum()) / total ** 2
        zbar = kron_apply(inv, (c - c.sum() * shares) / (total * max(n_h, 1.0))).reshape(-1)
        acc = np.maximum(sum_sq - n_h * zbar * zbar, 0.0)
        var += n_h / max(n_h - 1.0, 1.0) * acc
    return var


def _residual(cells: DesignCells, rows: np.ndarray, shares: np.ndarray, total: float) -> np.ndarray:
    """``r = (c - W lambda_hat) / N_hat`` of one PSU (its cells ``rows``)."""
    c = np.bincount(cells.report[rows], weights=cells.weight[rows], minlength=shares.size)
    return (c - c.sum() * shares) / total


def srs_variance(inv: Sequence[np.ndarray], shares: np.ndarray, n: int) -> np.ndarray:
    """The unweighted castell's per-cell variance from ``n`` rows at the weighted shares:
    ``((U o U) lambda - (U lambda)^2) / n`` (deff's denominator)."""
    return kron_cov_diag(inv, shares).reshape(-1) / n


def replicate_variance(inv: Sequence[np.ndarray], theta: np.ndarray, sums: np.ndarray,
                       factors: np.ndarray) -> np.ndarray:
    """``sum_r f_r (theta_r - theta)^2`` with ``theta_r`` castell on replicate ``r``'s shares
    (``sums[:, r + 1]``, the replicate's sum of weights per report; column 0 the full
    sample's), one replicate at a time."""
    var = np.zeros(theta.size)
    for r, f in enumerate(factors, start=1):
        d = kron_apply(inv, sums[:, r] / sums[:, r].sum()).reshape(-1) - theta.reshape(-1)
        var += f * d * d
    return var
