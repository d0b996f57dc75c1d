"""The k-ary randomized response channel (GRR): a :class:`~privspec.backends.core.channel.Channel`
whose covariance and epsilon have closed forms (Warner's covariance at every d; the kept and
the changed probability ``e^eps / (e^eps + d - 1)`` and ``1 / (e^eps + d - 1)``), evaluated
exactly or, where sympy would take long, in floating point."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from privspec.errors import BackendError, Diagnostic
from privspec.backends.core.algebra import Exact, Float, algebra
from privspec.backends.core.channel import Channel
from privspec.backends.core.frequency import FloatRangeError, grr_gap, grr_probs, pure_covariance

if TYPE_CHECKING:  # start-up: sympy (0.2-0.3 s) is imported where an exact value is computed
    import sympy


@dataclass(frozen=True, eq=False)
class GRRChannel(Channel):
    """Generalized randomized response (k-RR): ``P = (p - q) I + q J`` with
    ``p = e^eps / (e^eps + d - 1)``, ``q = 1 / (e^eps + d - 1)``; its epsilon and its MoM
    covariance have closed forms (the castell paper; Warner for d = 2).

    Examples
    --------
    >>> import sympy
    >>> ch = grr_channel(("a", "b"), sympy.log(3))
    >>> ch.epsilon(), ch.K
    (log(3), Matrix([
    [3/4, 1/4],
    [1/4, 3/4]]))
    >>> ch.covariance_closed_form(sympy.Matrix([sympy.Rational(2, 5), sympy.Rational(3, 5)]))
    Matrix([
    [ 99/100, -99/100],
    [-99/100,  99/100]])
    """

    keeps_truth = True

    def _inverse_form(self) -> tuple[float, float] | None:
        """``(gap, c)`` with ``Q^-1 = (I - c J) / gap`` the exact inverse of the floating-point
        ``Q = K = gap I + q J`` (``c = q / (gap + d q)``), read from ``Kn``'s entries: the
        numbers ``inv(Kn)`` stands for, with no d^3 inverse or product per call (d = 256:
        the MoM covariance took 2-3 ms a call as two 256 x 256 products); None for one
        category (nothing to invert) and for a channel still symbolic in a parameter (the
        general path says what it needs).  Computed once per channel."""
        if "inverse_form" not in self._cache:
            form, K = None, self.exact_K
            # GRR's entries are two expressions, kept and flipped: two tell whether epsilon is a number
            if self.p >= 2 and not (K is not None and any(getattr(K[i, 0], "free_symbols", None) for i in (0, 1))):
                K = self.Kn
                q = float(K[1, 0])
                gap = float(K[0, 0]) - q
                form = gap, q / (gap + self.p * q)
            self._cache["inverse_form"] = form
        return self._cache["inverse_form"]

    def mom_solve(self, gamma: np.ndarray) -> np.ndarray:
        """``Q^-1 gamma = (gamma - c sum(gamma)) / gap`` (see :meth:`_inverse_form`)."""
        form = self._inverse_form()
        if form is None:
            return super().mom_solve(gamma)
        gap, c = form
        gamma = np.asarray(gamma, dtype=float)
        return (gamma - c * gamma.sum(axis=0)) / gap

    def avar_mom(self, w: Any) -> Any:
        """``Q^-1 C Q^-T`` with ``C = diag(lambda) - lambda lambda^T`` (T = I) in floating
        point by ``Q^-1 = (I - c J) / gap``: ``(C - c (r 1^T + 1 r^T) + c^2 (1^T r) J) / gap^2``
        with ``r = C 1`` (0 where ``lambda`` sums to 1), in d^2 operations.  Exact ``w``:
        :meth:`Channel.avar_mom`."""
        form = self._inverse_form()
        if algebra(w) is not Float or form is None:
            return super().avar_mom(w)
        gap, c = form
        lam = self.probabilities(w)
        C = np.multiply.outer(-lam, lam)
        C.flat[::self.p + 1] += lam
        r = C.sum(axis=1)
        C -= c * np.add.outer(r, r)
        C += c * c * r.sum()
        C /= gap * gap
        return C

    def _closed_form_float(self, eps: Any, w: Sequence[float]) -> np.ndarray:
        """The closed form in floating point: a pure oracle's covariance with GRR's report law
        (:func:`privspec.backends.core.frequency.pure_covariance`, ``p - q`` by ``expm1``: accurate
        for small epsilon); B416 where the variance overflows (epsilon below about 1e-150)."""
        import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
        x = float(eps)
        shown = sympy.sstr(sympy.N(eps, 3))
        try:
            if x == 0:  # a positive epsilon below the smallest double
                raise FloatRangeError(0.0, math.inf)
            w = np.asarray(w, dtype=float)
            p, q = grr_probs(Float, x, self.p)
            return pure_covariance(p, q, 0.0, 0.0, w / w.sum(), 1.0, gap=grr_gap(x, self.p))
        except FloatRangeError as e:
            raise BackendError(Diagnostic("B416", e.describe(shown), hint=e.HINT)) from None

    def covariance_closed_form(self, w: Any, simplified: bool = True) -> Any:
        """``(diag(lambda) - lambda lambda^T) / (p - q)^2`` with ``lambda = (p - q) w + q``,
        ``p - q = (e^eps - 1)/(e^eps + d - 1)``.

        ``P = (p - q) I + q J`` and ``p + (d - 1) q = 1`` give ``P^-1 = (I - q J)/(p - q)``;
        ``(I - q J)`` leaves ``diag(lambda) - lambda lambda^T`` unchanged (its rows and
        columns sum to 0), hence the closed form of ``P^-T (diag(lambda) - lambda
        lambda^T) P^-1``.

        ``simplified=False`` leaves the exact entries as the formula writes them, for a
        caller that only evaluates them (a comparison's criteria): simplifying is nearly all
        of the cost (5 s for 5 categories at epsilon = 2) and a reader never sees them; at
        a numeric epsilon and population they come evaluated (``evalf(17)``), once per
        population (a comparison asks again for every planning query).
        """
        if algebra(w) is Float:
            return self.avar_mom(w)
        import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
        from privspec.model import costs  # start-up: the model's cost rules import sympy and the model graph
        eps = sympy.sympify(dict(self.facts)["epsilon"])
        numeric_w = all(getattr(x, "is_number", True) for x in w)
        # exact only where it is cheap: e^eps rational (epsilon = log 3), or epsilon a plain
        # rational with a small denominator on at most 8 categories (what dsl/model/costs.py prices)
        cheap = not eps.is_number or sympy.exp(eps).is_rational or (
            isinstance(eps, sympy.Rational) and eps.q <= 100 and self.p <= 8 and costs.exact_exp(eps))
        floating_w = eps.is_number and any(isinstance(x, sympy.Float) for x in w)  # a population in floats
        if isinstance(eps, sympy.Float) or (numeric_w and (not cheap or floating_w)):
            # an epsilon in floating point (a numeric search over it), or exact algebra in e^eps
            # over many categories (20: 21 s), with e^(1/10^6) as its unit (epsilon = 3.036123:
            # sympy factors polynomials of degree 10^6) or a high power of e (epsilon = 700: a
            # polynomial of degree 1400, over 120 s; limits.EXACT_EXP_POWER): floating point
            return sympy.Matrix(self._closed_form_float(eps, [float(x) for x in w]))
        if simplified:
            return self._warner(w, lambda x: sympy.factor(sympy.simplify(x)))
        if not (numeric_w and eps.is_number):
            return self._warner(w, lambda x: x)
        key = ("warner numbers", tuple(w))
        if key not in self._cache:
            self._cache[key] = self._warner(w, lambda x: x).evalf(17)
        return self._cache[key].copy()

    def _warner(self, w: Any, entry: Any) -> sympy.Matrix:
        """The exact closed form, ``entry`` applied to each entry on and above the diagonal
        once (the matrix is symmetric: ``lam_i lam_j`` is ``lam_j lam_i``)."""
        import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
        d = self.p
        e = sympy.exp(dict(self.facts)["epsilon"])
        gap = (e - 1) / (e + d - 1)
        q = 1 / (e + d - 1)
        lam = [gap * x + q for x in w]
        upper = {(i, j): entry(((lam[i] if i == j else 0) - lam[i] * lam[j]) / gap ** 2)
                 for i in range(d) for j in range(i, d)}
        return sympy.Matrix(d, d, lambda i, j: upper[min(i, j), max(i, j)])

    def keep_probabilities(self) -> tuple[float, float] | None:
        """``(p, q) = (e^eps, 1) / (e^eps + d - 1)`` in floating point (epsilon must have a value:
        use :meth:`Channel.at`)."""
        return grr_probs(Float, float(dict(self.facts)["epsilon"]), self.p)

    def check_floating(self) -> None:
        """B416 where ``p`` and ``q`` are equal in doubles: the matrix is singular in floating
        point, and every estimator divides by ``p - q`` (a ZeroDivisionError, a LinAlgError
        before).  A symbolic epsilon passes (its value is checked where it is put in); a
        snapshot (:meth:`Channel.numeric`) was checked when it was made."""
        if self.snapshot:
            return
        import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
        eps = sympy.sympify(dict(self.facts)["epsilon"])
        if not eps.is_number:
            return
        p, q = self.keep_probabilities()
        if p > q:
            return
        raise BackendError(Diagnostic("B416", f"epsilon = {sympy.sstr(sympy.N(eps, 3))} is too small for floating "
                                      "point: grr's keep probability exceeds the others by less than their "
                                      "rounding, so its randomization matrix is singular in doubles",
                                      hint="use an epsilon above about 1e-15 (the analytic queries, computed "
                                           "exactly, answer at any epsilon); an epsilon this small makes the "
                                           "reports independent of the answers"))

    def epsilon_reason(self) -> str:
        return ("GRR: Pr(Y = x | X = x) / Pr(Y = x | X = x') = p/q = e^eps with p = e^eps/(e^eps + d - 1), "
                "q = 1/(e^eps + d - 1)")


def grr_channel(labels: Sequence[str], epsilon: Any, note: str = "", P: Any = None) -> GRRChannel:
    """The GRR channel on ``labels`` at ``epsilon`` (a number or a symbol); ``P`` the
    randomization matrix when the caller has it (``P[u][v] = Pr(Y = v | X = u)``)."""
    import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
    d = len(labels)
    keep, other = grr_probs(Exact, sympy.sympify(epsilon), d)
    P = sympy.Matrix(d, d, lambda i, j: keep if i == j else other) if P is None else sympy.Matrix(P)
    # Pr(Y = x | x) / Pr(Y = x | x') = e^eps: epsilon is |eps| (a symbol's sign unknown)
    return GRRChannel(tuple(labels), tuple(labels), P.T, sympy.eye(d), None, kind="rr",
                      note=note or "grr randomized response",
                      facts=(("epsilon", sympy.Abs(sympy.sympify(epsilon))),))
