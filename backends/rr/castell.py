"""Castell inversion (RR-Ind-Joint, Algorithm 3 of the castell paper) and RR-Joint
(Eq. 1): the joint of randomized attributes by inverting their channel, mode-wise on the
tensor of report counts, with per-cell variances and score intervals."""
from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

from privspec.backends.core.kron import kron_apply, kron_inverses
from privspec.backends.core.projections import SCORE_CI, score_interval
from privspec.backends.rr.fit import JointFit, check_cells, frequencies, kron_matrix, linear_covariance, se_kind

#: beyond this many cells castell gives Wald's interval: the score interval takes about
#: ten temporary tables, and with millions of cells no cell is carried by a few reports
#: unless n is larger still
SCORE_CELL_LIMIT = 1 << 22


def castell(counts: np.ndarray, K: Sequence[np.ndarray], *, variance: bool = True,
            se: str = "population") -> JointFit:
    """RR-Ind-Joint by castell inversion (Algorithm 3).

    ``counts`` is the ``d_1 x ... x d_w`` table of report counts, ``K[k] = P_k^T`` the
    factors' channels.  ``Pi_hat = (K_1^-1 (x) ... (x) K_w^-1) lambda_hat`` is computed
    one mode at a time (O(prod d_i) memory).  With ``A = (x) K_k^-1`` its covariance is
    ``A (diag(lambda) - lambda lambda^T) A^T / n`` (``se = population``: Warner's, for
    the Kronecker matrix) or ``(A diag(lambda) A^T - diag(Pi)) / n`` (``se =
    conditional``: the respondents' values fixed); the diagonal of ``A diag(lambda)
    A^T`` is ``((x) A_k o A_k) lambda``, evaluated at ``lambda_hat`` (and ``Pi`` at
    ``Pi_hat``) without forming a matrix.

    Parameters
    ----------
    counts : array
        The w-way table of report counts.
    K : sequence of arrays
        ``K_k = P_k^T``, one per axis of ``counts``.
    variance : bool
        Whether to compute the per-cell variance.
    se : {"population", "conditional"}
        Which variance.

    Returns
    -------
    JointFit

    Examples
    --------
    >>> P = np.array([[3, 1], [1, 3]]) / 4                    # Appendix B, eps = log 3
    >>> fit = castell(np.array([[3, 1], [3, 3]]), [P.T, P.T])
    >>> fit.table.round(2).tolist()
    [[0.45, -0.15], [0.25, 0.45]]
    >>> cond = castell(np.array([[3, 1], [3, 3]]), [P.T, P.T], se="conditional")
    >>> np.allclose(cond.var, fit.var - (fit.table - fit.table ** 2) / 10)
    True
    """
    se = se_kind(se)
    lam, n = frequencies(counts)
    inv = kron_inverses(K)
    if not variance:   # the estimate takes lam's place: the table and a small scratch
        return JointFit(kron_apply(inv, lam, overwrite=True), "castell", n, None, se_target="joint",
                        note="castell inversion (Algorithm 3): mode-wise, the Kronecker matrix is never formed")
    table = kron_apply(inv, lam)
    squares = [A * A for A in inv]
    # past the score intervals' limit the second moment serves the variance only: it is
    # computed in lam's place and turned into the variance there, so the fit holds two
    # tables (estimate and variance) and nothing more
    wald_only = table.size > SCORE_CELL_LIMIT
    second = kron_apply(squares, lam, overwrite=wald_only)
    var = second if wald_only else second.copy()
    _subtract_in_place(var, table, squared=se == "population")
    var /= n
    if wald_only:
        return JointFit(table, "castell", n, var, se_kind=se, se_target="joint",
                        cov=functools.partial(check_cells, table.size),   # past COV_CELL_LIMIT: refused
                        note="castell inversion (Algorithm 3): mode-wise, the Kronecker matrix is never formed; "
                             f"Wald intervals (more than {SCORE_CELL_LIMIT:,} cells)")

    def cov() -> np.ndarray:  # A (diag(lambda) - lambda lambda^T) A^T / n, A = (x) K_k^-1
        check_cells(table.size)
        return linear_covariance(kron_matrix(inv), lam, n, se)

    # g_x = sum_y A[x, y]^2 K[y, x] and max_y |A[x, y]| factor over the attributes
    g = _outer([np.diag(S @ np.asarray(Kk, float)) for S, Kk in zip(squares, K)]).reshape(table.shape)
    step = _outer([np.abs(A).max(axis=1) for A in inv]).reshape(table.shape) / (2 * n)
    intervals = functools.partial(_score_at, table, second, g, step, n, se)
    return JointFit(table, "castell", n, var, se_kind=se, se_target="joint", ci=intervals(0.95), ci_method=SCORE_CI,
                    intervals=intervals, cov=cov,
                    note="castell inversion (Algorithm 3): mode-wise, the Kronecker matrix is never formed")


def _subtract_in_place(second: np.ndarray, table: np.ndarray, squared: bool, block: int = 1 << 16) -> None:
    """``second -= table ** 2`` (or ``-= table``), a block at a time: no temporary table."""
    flat, est = second.reshape(-1), table.reshape(-1)
    block = max(1, min(block, flat.size // 8))
    for i in range(0, flat.size, block):
        part = est[i:i + block]
        flat[i:i + block] -= part * part if squared else part


def _score_at(est: np.ndarray, second: np.ndarray, g: np.ndarray, step: np.ndarray, n: int, se: str,
              level: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~privspec.backends.core.projections.score_interval` with the level last (a
    partial of the rest: the intervals at any level)."""
    return score_interval(est, second, g, step, n, se, level)


def _outer(vectors: Sequence[np.ndarray]) -> np.ndarray:
    out = np.ones(())
    for v in vectors:
        out = np.multiply.outer(out, v)
    return out


def rr_joint(counts: np.ndarray, K: np.ndarray | None = None, keep: tuple[float, float] | None = None, *,
             se: str = "population") -> JointFit:
    """RR-Joint (Eq. 1): ``Pi_hat = K^-1 lambda_hat`` on the combined domain (``counts`` a
    vector over it), with the covariance diagonal ``K^-1 (diag(lambda) - lambda
    lambda^T) K^-T / n`` (``se = population``) or that minus ``(diag(Pi) -
    Pi Pi^T)/n`` (``se = conditional``).

    For GRR give ``keep = (p, q)`` instead of ``K``: ``K^-1 = (I - q J)/(p - q)`` (since
    ``p + (d - 1) q = 1``), so ``Pi_hat = (lambda_hat - q)/(p - q)`` and the variance is
    ``lambda (1 - lambda)/(p - q)^2 / n``; conditional: ``(q (1 - q)/(p - q)^2 + Pi (1 -
    p - q)/(p - q))/n``, Wang et al.'s (multi-freq-ldpy's ``VAR_Pure``).  O(d) for any
    domain size.

    Examples
    --------
    >>> rr_joint(np.array([3, 1, 3, 3]), keep=(0.75, 1 / 12)).table.round(4).tolist()
    [0.325, 0.025, 0.325, 0.325]
    """
    se = se_kind(se)
    if keep is None:
        fit = castell(np.asarray(counts, float).reshape(-1), [K], se=se)
        table, var, n, ci, intervals, cov = fit.table, fit.var, fit.n, fit.ci, fit.intervals, fit.cov
    else:
        lam, n = frequencies(np.asarray(counts, float).reshape(-1))
        p, q = keep
        table = (lam - q) / (p - q)
        var = lam * (1 - lam) / (p - q) ** 2 / n
        if se == "conditional":
            var = var - (table - table * table) / n
        # score_interval's inputs for A = (I - q J)/(p - q), K = P^T
        d = lam.size
        second = ((1 - q) ** 2 * lam + q * q * (1 - lam)) / (p - q) ** 2
        g = np.full(d, ((1 - q) ** 2 * p + (d - 1) * q ** 3) / (p - q) ** 2)
        intervals = functools.partial(_score_at, table, second, g, np.full(d, (1 - q) / (p - q) / (2 * n)), n, se)
        ci = intervals(0.95)

        def cov() -> np.ndarray:  # A = (I - q J)/(p - q) takes J lambda = 1 to 0: (diag - lam lam^T)/(p - q)^2
            check_cells(d)
            V = (np.diag(lam) - np.outer(lam, lam)) / (p - q) ** 2 / n
            return V - (np.diag(table) - np.outer(table, table)) / n if se == "conditional" else V
    return JointFit(table, "joint", n, var, se_kind=se, se_target="joint", ci=ci, ci_method=SCORE_CI,
                    intervals=intervals, cov=cov,
                    note="RR-Joint (Eq. 1): inversion on the combined domain")
