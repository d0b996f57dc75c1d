"""The uniform design in closed form, for any number of categories.

The uniform design (Def. 4) is exchangeable: ``mu_a = 2 nu`` for every subset of size
2..p-2, with ``nu = 1/(2^p - 2p - 2)``.  Every moment then depends only on how many
distinct categories are involved:

* ``sum_{a holding i} mu_a = 1``;
* ``c2 = sum_{a holding i, j} mu_a = 2 nu (2^(p-2) - p + 1) = 1/r_p`` (Eq. 6);
* ``c3 = sum_{a holding i, j, k} mu_a = 2 nu (2^(p-3) - p + 2)``.

So ``Q = (1 - c2) I + c2 J``, ``H_ii = gamma_i``, ``H_ij = c2 (w_i + w_j) + c3 (S - w_i - w_j)``
(S = sum w), ``C = H - gamma gamma^T``, the MoM covariance ``Q^-1 C Q^-1`` with
``Q^-1 = (I - c2 J / (1 - c2 + p c2)) / (1 - c2)`` (Sherman-Morrison), and the size
coverage ``tau = w^T Q w`` -- all in O(p^2), without enumerating the 2^p subsets.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from privspec.errors import BackendError, Diagnostic
from privspec.backends.core.algebra import Exact, Float, algebra


def constants(p: int) -> tuple[sympy.Rational, sympy.Rational, sympy.Rational]:
    """``(nu, c2, c3)`` of the uniform design on p >= 4 categories."""
    nu = sympy.Rational(1, 2 ** p - 2 * p - 2)
    c2 = 2 * nu * (2 ** (p - 2) - p + 1)
    c3 = 2 * nu * (2 ** (p - 3) - p + 2)
    return nu, c2, c3


def uniform_r(p: int) -> sympy.Rational:
    """``r_p = (2^(p-1) - p - 1) / (2^(p-2) - p + 1)`` of Eq. 6: q_ij = 1/r_p off the diagonal."""
    return sympy.Rational(2 ** (p - 1) - p - 1, 2 ** (p - 2) - p + 1)


def uniform_facts(p: int) -> tuple:
    """What a moments result quotes for the uniform design on p categories (Eq. 6)."""
    r = uniform_r(p)
    return (("r_p", r),
            ("closed_form", f"q_ii = 1, q_ij = 1/r_p = {1 / r} (Eq. 6); Q^-1 = r_p/(r_p - 1) (I - J/(r_p - 1 + p)); "
                            "Eq. 6's (r_p gamma - 1)/(r_p - 1) is Q^-1 gamma with sum w = 1 imposed"))


def moments(p: int, w: Any) -> dict[str, Any]:
    """``Q``, ``gamma``, ``H``, ``C`` of the uniform design at w (exact or floating).

    Examples
    --------
    >>> m = moments(4, sympy.Matrix([sympy.Rational(1, 4)] * 4))
    >>> m["Q"][0, 1], m["gamma"][0]
    (1/3, 1/2)
    """
    A = algebra(w)
    _, c2, c3 = constants(p)
    if A is Float:
        c2, c3 = float(c2), float(c3)
        w = np.asarray(w, dtype=float).reshape(-1, 1)
        Q = (1 - c2) * np.eye(p) + c2 * np.ones((p, p))
        gamma = Q @ w
        S = float(w.sum())
        wi = w.ravel()
        H = c2 * (wi[:, None] + wi[None, :]) + c3 * (S - wi[:, None] - wi[None, :])
        np.fill_diagonal(H, gamma.ravel())
        C = H - gamma @ gamma.T
        return {"Q": Q, "gamma": gamma, "H": H, "C": C}
    w = Exact.asmatrix(w)
    Q = (1 - c2) * sympy.eye(p) + c2 * sympy.ones(p, p)
    gamma = Q * w
    S = sum(w)
    H = sympy.Matrix(p, p, lambda i, j: gamma[i] if i == j else
                     sympy.expand(c2 * (w[i] + w[j]) + c3 * (S - w[i] - w[j])))
    C = (H - gamma * gamma.T).applyfunc(sympy.expand)
    return {"Q": Q, "gamma": gamma, "H": H, "C": C}


def q_inverse(p: int, exact: bool = True) -> Any:
    """``Q^-1 = (I - c2 J / (1 - c2 + p c2)) / (1 - c2)``."""
    _, c2, _ = constants(p)
    if exact:
        return (sympy.eye(p) - c2 * sympy.ones(p, p) / (1 - c2 + p * c2)) / (1 - c2)
    c2 = float(c2)
    return (np.eye(p) - c2 * np.ones((p, p)) / (1 - c2 + p * c2)) / (1 - c2)


def avar_mom(p: int, w: Any) -> Any:
    """``Q^-1 C Q^-1`` (Theorem 4) for the uniform design."""
    A = algebra(w)
    C = moments(p, w)["C"]
    Qi = q_inverse(p, A is Exact)
    return Qi @ C @ Qi if A is Float else (Qi * C * Qi).applyfunc(sympy.expand)


def size_coverage(p: int, w: Any) -> Any:
    """``tau = sum_a mu_a (1_a^T w)^2 = w^T Q w = (1 - c2) sum w_i^2 + c2 (sum w_i)^2``, in O(p)
    (Q = (1 - c2) I + c2 J: nothing p x p is built, so p = 10,000 costs nothing).

    Examples
    --------
    >>> size_coverage(4, sympy.Matrix([sympy.Rational(1, 4)] * 4))
    1/2
    """
    A = algebra(w)
    _, c2, _ = constants(p)
    if A is Float:
        v = np.asarray(w, dtype=float).ravel()
        c2 = float(c2)
        return float((1 - c2) * (v @ v) + c2 * v.sum() ** 2)
    w = list(Exact.asmatrix(w))
    return sympy.expand((1 - c2) * sum(x ** 2 for x in w) + c2 * sum(w) ** 2)


class UniformChannel:
    """The uniform design on p > :data:`~privspec.limits.UNIFORM_ENUM_LIMIT` categories as a channel kind:
    the closed forms above stand in for the matrices, which are never enumerated.

    It offers what :class:`~privspec.backends.core.channel.Channel` offers for analysis
    (moments, the MoM covariance, size coverage, epsilon, identifiability); what needs
    every subset (the Fisher information, the MLE covariance, mutual information,
    prediction, ``K`` itself) raises B007 naming the closed forms.

    Examples
    --------
    >>> ch = UniformChannel(tuple("abcdefghijklm"))
    >>> ch.p, ch.epsilon(), ch.identifiable()[0]
    (13, oo, True)
    >>> ch.size_coverage(sympy.Matrix([sympy.Rational(1, 13)] * 13))
    14257/26533
    """

    kind = "uniform"
    factors: tuple = ()
    offset = None
    exact_K = None
    is_set_valued = True
    #: results symbolic in w stay cheap here (O(p^2) closed forms): up to 30 categories
    symbolic_limit = 30

    def __init__(self, labels: tuple[str, ...]):
        self.x_labels = tuple(labels)

    @property
    def p(self) -> int:
        return len(self.x_labels)

    @property
    def n_obs(self) -> int:
        return 2 ** self.p - 2 * self.p - 2

    @property
    def facts(self) -> tuple:
        return uniform_facts(self.p)

    def exact_ok(self) -> bool:
        """Exact arithmetic in the closed forms up to 60 categories (their rationals have
        about p bits)."""
        return self.p <= 60

    def evaluation(self, exact: bool, declared: bool) -> str:
        how = "exact" if exact else "floating point"
        return (f"{how}, in closed form for the uniform design (exchangeable: no enumeration of the "
                f"2^{self.p} subsets)" + ("" if declared else ", symbolic in w"))

    def is_symbolic(self) -> bool:
        return False

    # -- closed forms ------------------------------------------------------------------------
    def moments(self, w: Any) -> dict[str, Any]:
        return moments(self.p, w)

    def avar_mom(self, w: Any) -> Any:
        return avar_mom(self.p, w)

    def mom_solve(self, gamma: np.ndarray) -> np.ndarray:
        """``Q^-1 gamma`` by Sherman-Morrison (O(p^2), no solve)."""
        return q_inverse(self.p, exact=False) @ np.asarray(gamma, dtype=float)

    def size_coverage(self, w: Any) -> Any:
        return size_coverage(self.p, w)

    def epsilon(self) -> Any:
        # every subset excludes some category: Pr(A = a | X = x) = 0 for x outside a
        return sympy.oo

    def identifiable(self) -> tuple[bool, str]:
        return True, ("the uniform design's Q = (1 - 1/r_p) I + J/r_p is nonsingular (Assumption 1 holds)")

    # -- what needs every subset ----------------------------------------------------------------
    def _enumerate(self, what: str):
        raise BackendError(Diagnostic("B007", f"{what} of the uniform design on {self.p} categories needs all "
                                      f"its subsets (2^{self.p} of them)",
                                      hint="closed forms cover moments, the MoM covariance (by mom) and size "
                                           "coverage; estimation uses the observed subsets only"))

    @property
    def K(self):
        return self._enumerate("the channel matrix")

    Kn = T = Tn = K

    def fisher_w(self, w: Any):
        return self._enumerate("the Fisher information")

    fisher_theta = fisher_w

    def avar_mle(self, w: Any):
        return self._enumerate("the MLE covariance")

    def mutual_information(self, w: Any):
        return self._enumerate("the mutual information")

    entropy = mutual_information

    def prediction_leakage(self, w: Any):
        return self._enumerate("prediction leakage")
