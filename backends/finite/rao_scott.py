"""The Rao-Scott second-order corrected test of independence in a two-way table estimated
under a complex design: ``svychisq``'s default (``statistic = "F"``; Rao and Scott 1984).

A Pearson-type statistic of the estimated joint ``W`` against its independence fit ``E =
r c'`` (``r``, ``c`` its margins) is a quadratic form in the table's interaction
contrasts; under a design it is a weighted sum of chi-squares, the weights the
*generalized design effects* ``delta``: the eigenvalues of ``Delta = (A S A')^-1 (A V
A')``, ``V`` the design-based covariance of ``W`` and ``S`` its covariance under simple
random sampling, ``A = C' diag(1/E)`` the contrasts (``C``: the interaction columns of the
saturated log-linear model, residualized on the main effects, as svychisq's
``qr.resid(qr(X1), X12)``).  The second-order correction divides the statistic by
``tr(Delta)`` (``k`` times the mean design effect) and refers it to ``F(d0, d0 f)`` with
Satterthwaite's ``d0 = tr(Delta)^2 / tr(Delta^2)`` and ``f`` the design's degrees of
freedom.

The statistic is ``X2 = u' (A S A')^-1 u`` with ``u = A (W - E).ravel()``.  When ``S`` is
the multinomial covariance at the fit, ``(diag(E) - E E') / n``, ``X2`` is Pearson's
``n sum (W - E)^2 / E`` exactly (``E``'s inverse is the metric in which ``A`` is the
orthogonal complement of the main effects), so the test is svychisq's.  With privatized
reports ``S`` is the unweighted estimator's covariance from the same reports, which holds
the privatization's noise: ``X2`` is then the Pearson-type statistic whose law under a
simple random sample *with that noise* is chi-square, and ``delta`` are design effects
over such a sample (near 1 without clustering or weights).  svychisq forms ``Delta``
with ``diag(1/W)`` where this takes ``diag(1/E)``: the same in the limit under
independence, and ``E`` stays positive where a method-of-moments cell of ``W`` may not.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy  # submodules load on first use (start-up)

METHOD = "Rao-Scott second-order corrected Pearson test (svychisq's default statistic = 'F')"


@dataclass(frozen=True)
class RaoScott:
    """The Rao-Scott F test: ``statistic = pearson / tr(Delta)`` against ``F(ndf, ddf)``."""

    statistic: float
    ndf: float
    ddf: float
    p_value: float
    #: the Pearson-type statistic before the correction
    pearson: float
    #: the generalized design effects (eigenvalues of Delta), largest first
    deffs: tuple[float, ...]

    @property
    def mean_deff(self) -> float:
        """The mean generalized design effect, ``tr(Delta) / k``."""
        return float(np.mean(self.deffs))

    def as_dict(self) -> dict:
        """The result's ``rao_scott`` entry."""
        return {"method": METHOD, "statistic": self.statistic, "ndf": self.ndf, "ddf": self.ddf,
                "p_value": self.p_value, "pearson": self.pearson, "mean_deff": self.mean_deff,
                "deffs": list(self.deffs)}


def interaction_contrasts(p: int, q: int) -> np.ndarray:
    """A basis (``pq x k``, ``k = (p - 1)(q - 1)``) of the tables with zero row and column
    sums: the span of svychisq's ``qr.resid(qr(X1), X12[, interactions])`` (the orthogonal
    complement of the main effects; any basis of it gives the same test).

    Examples
    --------
    >>> C = interaction_contrasts(3, 2)
    >>> C.shape, bool(np.allclose(C.reshape(3, 2, 2).sum(axis=0), 0))
    ((6, 2), True)
    """
    def centred(m: int) -> np.ndarray:
        return np.eye(m)[:, 1:] - 1.0 / m

    return np.kron(centred(p), centred(q))


def rao_scott_test(W: np.ndarray, V: np.ndarray, S: np.ndarray, design_df: float) -> RaoScott | None:
    """The Rao-Scott second-order test of independence of the ``p x q`` estimated joint
    ``W`` (the module docstring); ``V`` and ``S`` the design-based and simple-random-sampling
    covariances of ``W.ravel()``, ``design_df`` the design's degrees of freedom.  None where
    the independence fit has a cell that is not positive (a margin estimated at or below
    0: no Pearson statistic), or ``S`` is singular on the contrasts.

    Examples
    --------
    Under simple random sampling (``V = S``) every design effect is 1, so ``ndf`` is
    ``k`` and the statistic is Pearson's over ``k``:

    >>> W = np.array([[0.3, 0.2], [0.1, 0.4]])
    >>> E = np.outer(W.sum(1), W.sum(0)).ravel()
    >>> S = (np.diag(E) - np.outer(E, E)) / 100
    >>> rs = rao_scott_test(W, S, S, 30)
    >>> round(rs.pearson, 6), round(float(100 * ((W.ravel() - E) ** 2 / E).sum()), 6)
    (16.666667, 16.666667)
    >>> round(rs.ndf, 9), round(rs.mean_deff, 9), round(rs.statistic, 6)
    (1.0, 1.0, 16.666667)
    """
    p, q = W.shape
    E = np.outer(W.sum(axis=1), W.sum(axis=0))
    if np.any(E <= 0):
        return None
    A = interaction_contrasts(p, q).T / E.ravel()
    u = A @ (W - E).ravel()
    SA, VA = A @ S @ A.T, A @ V @ A.T
    try:
        pearson = float(u @ np.linalg.solve(SA, u))
        # Delta = SA^-1 VA: its eigenvalues real and positive, from the symmetric-definite problem
        deffs = np.sort(scipy.linalg.eigh(VA, SA, eigvals_only=True))[::-1]
    except np.linalg.LinAlgError:  # S singular on the contrasts: no reference law to compare with
        return None
    trace, trace2 = float(deffs.sum()), float((deffs ** 2).sum())
    ndf = trace ** 2 / trace2
    stat = pearson / trace
    p_value = float(scipy.stats.f.sf(stat, ndf, ndf * design_df))
    return RaoScott(stat, ndf, ndf * design_df, p_value, pearson, tuple(float(x) for x in deffs))
