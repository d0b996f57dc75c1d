"""Estimation with dummy categories (subset privacy, Appendices II-III).

The collection system adds dummy respondents so that the two dummy categories have
known mass ``alpha`` each; the population on the enlarged domain is
``((1 - 2 alpha) w, alpha, alpha)``.  The enlarged channel alone does not identify that
split (for designs whose subsets all have one size, a shift of mass between real and
dummy categories changes nothing observable), but alpha is known by design, so the
report distribution is affine in the real w:

    lambda = (1 - 2 alpha) K_real w + alpha (K_d1 + K_d2)  =  K_eff w + b.

Everything here works on that affine channel: the method of moments on the real
categories' moment equations, the MLE by EM with the dummy components held fixed, and
their asymptotic covariances (per respondent, dummies included, as the data come).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from .channel import B_matrix, Channel, _Exact, algebra
from .compile import channel_of, enlarge_population
from .estimators import Fit


class DummyDesign:
    """The affine channel of a subset mechanism with ``min_coverage``."""

    def __init__(self, mechanism: Any):
        self.mechanism = mechanism
        self.ch: Channel = channel_of(mechanism)
        self.p = self.ch.p - 2
        self.alpha = mechanism.min_coverage

    def parts(self, exact: bool):
        """``(K_eff, b, T_real)``: observations x p, observations, p x observations."""
        K, T = self.ch.matrices(exact)
        p, a = self.p, self.alpha
        if exact:
            return (1 - 2 * a) * K[:, :p], a * (K[:, p] + K[:, p + 1]), T[:p, :]
        a = float(a)
        return (1 - 2 * a) * K[:, :p], a * (K[:, p] + K[:, p + 1]), T[:p, :]

    def rank(self) -> int:
        return int(self.ch.K[:, :self.p].rank())

    # -- method of moments -----------------------------------------------------------------------
    def mom(self, counts: np.ndarray) -> Fit:
        """Solve the real categories' moment equations ``T_r (K_eff w + b) = gamma_hat_r``."""
        K, b, T = self.parts(False)
        n = counts.sum()
        gamma = T @ counts / n
        w = np.linalg.solve(T @ K, gamma - T @ b)
        return Fit(w, "mom", int(round(n)), _loglik(K, b, w, counts))

    def avar_mom(self, w: Any) -> Any:
        """``M C_rr M^T`` with ``M = (T_r K_eff)^-1`` and C the report covariance (at the enlarged
        population), for sqrt(n)(w_hat - w) with n all respondents, dummies included."""
        A = algebra(w)
        exact = A is _Exact
        K, b, T = self.parts(exact)
        wide = enlarge_population(A.asmatrix(w) if exact else np.asarray(w, float).ravel(), self.alpha)
        C = self.ch.moments(wide)["C"]
        p = self.p
        if exact:
            M = (T * K).inv()
            return (M * C[:p, :p] * M.T).applyfunc(sympy.simplify)
        M = np.linalg.inv(T @ K)
        return M @ C[:p, :p] @ M.T

    # -- maximum likelihood ------------------------------------------------------------------------
    def em(self, counts: np.ndarray, *, tol: float = 1e-10, max_iter: int = 100_000) -> Fit:
        """EM with the dummy components fixed: the real categories' posterior shares are
        renormalized among themselves (the M-step of a mixture with known weights)."""
        K, b, _ = self.parts(False)
        nz = counts > 0
        K, b, c = K[nz], b[nz], counts[nz]
        n = c.sum()
        w = np.full(self.p, 1.0 / self.p)
        it = 0
        violation = np.inf
        for it in range(1, max_iter + 1):
            lam = K @ w + b
            share = w * (K.T @ (c / lam))         # expected real respondents per category
            w = share / share.sum()
            lam = K @ w + b
            g = K.T @ (c / lam)                    # gradient in w
            violation = float(np.max(g / (w @ g) - 1.0))
            if violation < tol:
                break
        return Fit(w, "em", int(round(n)), _loglik(K, b, w, c), it, violation, violation < tol,
                   "EM with the dummy categories' mass fixed at alpha (Appendix II)")

    def avar_mle(self, w: Any) -> Any:
        """``B I(theta)^-1 B^T`` with ``I(theta) = B^T K_eff^T diag(1/lambda) K_eff B``."""
        A = algebra(w)
        exact = A is _Exact
        K, b, _ = self.parts(exact)
        B = B_matrix(self.p, exact)
        if exact:
            w = A.asmatrix(w)
            lam = K * w + b
            rows = [i for i in range(K.rows) if lam[i] != 0]
            Kk = K.extract(rows, list(range(K.cols)))
            I = B.T * Kk.T * sympy.diag(*[1 / lam[i] for i in rows]) * Kk * B
            return (B * I.inv() * B.T).applyfunc(sympy.simplify)
        w = np.asarray(w, float).ravel()
        lam = K @ w + b
        keep = lam > 0
        I = B.T @ (K[keep].T @ (K[keep] / lam[keep, None])) @ B
        return B @ np.linalg.inv(I) @ B.T


def _loglik(K: np.ndarray, b: np.ndarray, w: np.ndarray, counts: np.ndarray) -> float:
    lam = K @ w + b
    nz = counts > 0
    return float(counts[nz] @ np.log(lam[nz])) if np.all(lam[nz] > 0) else float("nan")
