"""What every joint estimator of randomized response shares: the fit it returns
(:class:`JointFit`), the report frequencies, the kind of standard error, the covariance of
an estimate linear in the report frequencies, and margins of a tensor of reports.

Every estimator with an asymptotic variance gives it in one of two kinds (``se``):
``population`` -- sampling plus privacy noise, the error against the population the
respondents were drawn from -- or ``conditional`` -- privacy noise alone, given the
respondents' true values, the error against the table of the respondents themselves
(multi-freq-ldpy's ``VAR_Pure`` for GRR).  For an estimator that is asymptotically
linear in the report frequencies, ``A lambda_hat`` with ``A K = I`` (castell, RR-Joint,
the MLE's influence function), the reports' conditional covariance ``(diag(K pi) - K
diag(pi) K^T)/n`` gives ``conditional = population - (diag(pi) - pi pi^T)/n``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from privspec.limits import COV_CELL_LIMIT

#: the kinds of standard error (``by castell(se = conditional)``), the default first
SE_KINDS = ("population", "conditional")


@dataclass(frozen=True)
class JointFit:
    """A w-way joint estimate (a tensor in the estimand's axis order) and how it was made.

    ``var`` is the per-cell variance of the estimate (already divided by n) where an
    asymptotic variance exists, else None; ``se_kind`` says which (``population`` or
    ``conditional``, see the module docstring) and ``se_target`` what an interval from
    it covers (``joint``: the table itself; ``product of marginals``: RR-Independent's
    own limit).  ``ci`` is the 95% interval per cell (lower, upper) where it is not the
    Wald interval ``table +- 1.96 se`` (clipped to [0, 1]), and ``ci_method`` names it
    (:func:`~privspec.backends.core.projections.score_interval`); ``intervals`` gives it
    at any level.  ``cov`` computes the full covariance of the cells (C order, divided by
    n, of the kind ``se_kind``) when asked: the Python API's ``cov_params``.
    """

    table: np.ndarray
    method: str
    n: int
    var: np.ndarray | None = None
    projection: str = "none"
    negative_cells: int = 0
    note: str = ""
    info: dict = field(default_factory=dict)
    se_kind: str | None = None
    se_target: str | None = None
    ci: tuple[np.ndarray, np.ndarray] | None = None
    ci_method: str | None = None
    intervals: Callable[[float], tuple[np.ndarray, np.ndarray]] | None = field(default=None, compare=False,
                                                                                repr=False)
    cov: Callable[[], np.ndarray] | None = field(default=None, compare=False, repr=False)


def frequencies(counts: np.ndarray) -> tuple[np.ndarray, int]:
    """The report frequencies ``lambda_hat`` of a table of counts, and the number of reports."""
    counts = np.asarray(counts, dtype=float)
    n = counts.sum()
    if n <= 0:
        raise ValueError("no reports")
    return counts / n, int(round(n))


def se_kind(se: str) -> str:
    """``se`` if it is one of :data:`SE_KINDS`, else a ValueError naming them."""
    if se not in SE_KINDS:
        raise ValueError(f"unknown se {se!r}: {' | '.join(SE_KINDS)}")
    return se


def check_cells(cells: int) -> None:
    """A ValueError where a covariance of this many cells would pass
    :data:`~privspec.limits.COV_CELL_LIMIT`."""
    if cells > COV_CELL_LIMIT:
        raise ValueError(f"the covariance of {cells:,} cells would be a {cells:,} x {cells:,} matrix; it is formed "
                         f"up to {COV_CELL_LIMIT:,} cells (the standard errors are there: bse)")


def linear_covariance(U: np.ndarray, lam: np.ndarray, n: int, se: str, table: np.ndarray | None = None
                      ) -> np.ndarray:
    """The covariance of an estimate asymptotically linear in the report frequencies, with
    Jacobian ``U`` (cells x reports) at ``lambda``: ``U (diag(lambda) - lambda lambda^T) U^T / n``
    (population); conditional: that less ``(diag(Pi) - Pi Pi^T)/n`` (for ``U K = I``: the
    module docstring), ``Pi = table`` (default ``U lambda``).

    Examples
    --------
    >>> A = np.linalg.inv(np.array([[3, 1], [1, 3]]) / 4)
    >>> lam = np.array([0.3, 0.7])
    >>> V = linear_covariance(A, lam, 100, "population")
    >>> bool(np.allclose(np.diag(V), ((A * A) @ lam - (A @ lam) ** 2) / 100)), bool(np.allclose(V.sum(axis=1), 0))
    (True, True)
    """
    lam = np.asarray(lam, dtype=float).reshape(-1)
    t = U @ lam
    V = ((U * lam) @ U.T - np.outer(t, t)) / n
    if se == "conditional":
        pi = t if table is None else np.asarray(table, dtype=float).reshape(-1)
        V = V - (np.diag(pi) - np.outer(pi, pi)) / n
    return V


def kron_matrix(inv: Sequence[np.ndarray]) -> np.ndarray:
    """The Kronecker product of the matrices, formed (for a covariance of few cells)."""
    return functools.reduce(np.kron, [np.asarray(A, dtype=float) for A in inv])


def tensor_margin(lam: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """The margin of ``lam`` over ``axes`` (ascending), in that order."""
    others = tuple(j for j in range(lam.ndim) if j not in axes)
    return lam.sum(axis=others) if others else lam


def expand_axes(t: np.ndarray, axes: Sequence[int], ndim: int) -> np.ndarray:
    """A tensor over ``axes`` (ascending) viewed with singleton axes elsewhere (to broadcast)."""
    shape = [1] * ndim
    for j, size in zip(axes, np.shape(t)):
        shape[j] = size
    return np.asarray(t).reshape(shape)
