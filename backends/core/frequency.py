"""The covariance of a pure frequency oracle's unbiased estimate, and GRR's report law.

A frequency oracle is *pure* (Wang, Blocki, Li and Jha, USENIX Security 2017) when every
report has a support set of categories and two numbers ``p* > q*`` give the probability
that the true value, and that another given category, is in it.  The covariance of the
unbiased estimate ``(C/n - q*)/(p* - q*)`` needs only those numbers and the probabilities
that two categories are both in a support (:func:`pure_covariance`): the frequency oracles
(:mod:`privspec.backends.oracles`) and the GRR channel (:class:`privspec.backends.core.grr_channel.GRRChannel`)
share it, and GRR's keep probabilities (:func:`grr_probs`), written once for exact and
floating arithmetic (:mod:`privspec.backends.core.algebra`).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["FloatRangeError", "pure_covariance", "grr_probs", "grr_gap"]


class FloatRangeError(ValueError):
    """A covariance beyond floating point: ``1/(p* - q*)^2`` overflows (an epsilon so small
    that no survey of fewer than about 10^300 respondents could inform).  ``log10`` is the
    base-10 logarithm of the variance's size per respondent, ``gap`` the oracle's ``p* - q*``."""

    #: what to do instead
    HINT = ("use a larger epsilon (for a longitudinal oracle, a larger first): the variance grows as "
            "1/epsilon^2 and leaves floating point below about 1e-150; an epsilon this small makes the reports "
            "all but independent of the answers")

    def __init__(self, gap: float, log10: float):
        self.gap, self.log10 = gap, log10
        super().__init__(f"the estimator's variance is about 10^{log10:.0f} per respondent (p* - q* = {gap:.3g}): "
                         "beyond floating point (1.8e308)")

    def describe(self, epsilon: str, name: str = "epsilon") -> str:
        """The message of the refusal, naming the parameter (``epsilon``, or a longitudinal
        oracle's ``first``) and its value as the spec gives it."""
        if not self.gap or not math.isfinite(self.log10):
            return (f"{name} = {epsilon} is too small for floating point: p* - q* is 0 in doubles, so the "
                    "estimator's variance is infinite there")
        return (f"{name} = {epsilon} is too small for floating point: p* - q* = {self.gap:.3g}, so the "
                f"estimator's variance is about 10^{self.log10:.0f} per respondent, beyond the largest double "
                "(1.8e308)")


def grr_probs(A: Any, epsilon: Any, d: Any) -> tuple[Any, Any]:
    """GRR's ``(p, q) = (e^eps, 1) / (e^eps + d - 1)``: the probabilities of reporting the
    true value and a given other one, in the algebra ``A`` (exact or floating).

    Examples
    --------
    >>> from privspec.backends.core.algebra import Exact, Float
    >>> import sympy
    >>> grr_probs(Exact, sympy.log(3), 3), grr_probs(Float, math.log(3), 3)[1]
    ((3/5, 1/5), 0.2)
    """
    e = A.exp(epsilon)
    return e / (e + d - 1), 1 / (e + d - 1)


def grr_gap(epsilon: float, d: int) -> float:
    """GRR's ``p - q = (e^eps - 1)/(e^eps + d - 1)`` in floating point, by ``expm1``:
    accurate at any epsilon (not the difference of two nearly equal floats)."""
    return math.expm1(epsilon) / (math.exp(epsilon) + d - 1)


def pure_covariance(p: Any, q: Any, one: Any, neither: Any, f: np.ndarray, n: Any = 1,
                    conditional: bool = False, xor: tuple[Any, np.ndarray, np.ndarray] | None = None,
                    gap: Any = None) -> np.ndarray:
    """The covariance of ``(C/n - q)/(p - q)`` for any pure protocol, from its constants:
    ``p, q`` (support probabilities) and ``one, neither`` (two categories both in the
    support, given the truth is one of them / neither).  The one computation behind
    every frequency oracle's covariance (single, multidimensional, longitudinal) and GRR's.

    With the supports ``Z`` of ``n`` reports (``E[Z_v Z_w] = one (f_v + f_w) + neither (1 -
    f_v - f_w)`` for ``v != w``, plus ``(xor_value - neither) f_x`` for Hadamard response's
    ``xor = (xor_value, partner, exists)``):

    * population (i.i.d. respondents from ``f``): ``Cov(Z) = E[Z Z^T] - lam lam^T``,
      ``lam = q + (p - q) f``, diagonal ``lam (1 - lam)``;
    * ``conditional`` (given the table ``n f``): ``sum_x f_x Cov(Z | x)``, diagonal ``f p (1 -
      p) + (1 - f) q (1 - q)`` (Wang et al. 2017, Eq. (1)), off-diagonal ``E[Z_v Z_w] - (p q
      (f_v + f_w) + q^2 (1 - f_v - f_w))``;

    divided by ``n (p - q)^2`` (``gap``: ``p - q`` when the caller has it more accurately
    than the difference).  ``f`` may be a float array or an object array of sympy numbers
    (exact covariances).  :class:`FloatRangeError` when a float result overflows.

    Examples
    --------
    >>> V = pure_covariance(0.5, 0.25, 0.1, 0.05, np.array([0.5, 0.5]))
    >>> V.shape, bool(np.allclose(V, V.T))
    ((2, 2), True)
    """
    f = np.asarray(f)
    d = len(f)
    fv = f[:, None] + f[None, :]
    m = one * fv + neither * (1 - fv)                 # E[Z_v Z_w], v != w
    if xor is not None and xor[0] != neither:
        value, partner, exists = xor
        m[exists] = m[exists] + (value - neither) * f[partner[exists]]
    if conditional:
        cov = m - (p * q * fv + q * q * (1 - fv))
        diag = f * p * (1 - p) + (1 - f) * q * (1 - q)
    else:
        lam = q + (p - q) * f
        cov = m - lam[:, None] * lam[None, :]
        diag = lam * (1 - lam)
    cov[np.arange(d), np.arange(d)] = diag
    gap = p - q if gap is None else gap
    if cov.dtype == object:
        return cov / (n * gap ** 2)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out = cov / (n * gap ** 2)
    if not np.all(np.isfinite(out)):
        # the size of the largest variance, from logs (gap ** 2 itself may be 0 in doubles)
        top = float(np.max(np.abs(np.diag(cov)))) / float(n)
        raise FloatRangeError(float(gap), (math.log10(top) if top > 0 else 0.0)
                              - 2 * (math.log10(abs(float(gap))) if gap else -324.0))
    return out
