"""Local-DP mechanisms for one bounded numeric value: their samplers, unbiased estimates,
variances and epsilon.

Each mechanism privatizes a value ``t`` of a fixed domain (``[-1, 1]``; the square wave:
``[0, 1]``) that :meth:`NumericLDP.to_domain` maps from the variable's declared range
``[a, b]``; a report's unbiased estimate of ``t`` (:meth:`NumericLDP.unbiased`) is mapped
back by :meth:`NumericLDP.to_value`.  The variance of that estimate given ``t`` is a
quadratic ``c0 + c1 t + c2 t^2`` in every case (:attr:`NumericLDP.coefficients`), so the
worst case over the domain and the mean over a population follow from three numbers.

* :class:`Laplace` -- ``t + Lap(2 / epsilon)`` (sensitivity 2; Dwork et al. 2006).
* :class:`Duchi` -- Duchi, Jordan and Wainwright, "Minimax optimal procedures for locally
  private estimation", JASA 2018: ``+-C``, ``C = (e^eps + 1)/(e^eps - 1)``, with
  ``Pr(+C) = 1/2 + t (e^eps - 1)/(2 (e^eps + 1))``; variance ``C^2 - t^2``.
* :class:`Piecewise` -- Wang et al., "Collecting and analyzing multidimensional data with
  local differential privacy", ICDE 2019, Algorithm 2: ``C = (e^(eps/2) + 1)/(e^(eps/2) - 1)``,
  a uniform draw in ``[l(t), r(t)]`` with probability ``e^(eps/2)/(e^(eps/2) + 1)``, else in
  the rest of ``[-C, C]``; variance ``t^2/(e^(eps/2) - 1) + (e^(eps/2) + 3)/(3 (e^(eps/2) - 1)^2)``
  (their Lemma 1).
* :class:`Hybrid` -- the same paper's hybrid mechanism (HM): piecewise with probability
  ``alpha``, else Duchi, with their optimal ``alpha = 1 - e^(-eps/2)`` above
  ``eps* = ln((-5 + 2 (6353 - 405 sqrt 241)^(1/3) + 2 (6353 + 405 sqrt 241)^(1/3)) / 27)``
  (about 0.61) and ``alpha = 0`` at or below it; there its variance does not depend on ``t``.
* :class:`SquareWave` -- Li et al., "Estimating numerical distributions under local
  differential privacy", SIGMOD 2020: on ``[0, 1]``, a report in ``[-b, 1 + b]`` with
  density ``p`` within ``b`` of ``v`` and ``q = p e^(-eps)`` elsewhere,
  ``b = (eps e^eps - e^eps + 1)/(2 e^eps (e^eps - 1 - eps))``, ``p = e^eps/(2 b e^eps + 1)``.
  Its mean report is ``(1 - c)/2 + c v`` with ``c = 2 b (p - q)``, so
  ``(report - (1 - c)/2)/c`` is unbiased (derived here; the paper estimates the
  distribution, :mod:`privspec.backends.numeric.ems`).

Samplers use only ``rng.random(n)`` (one call per use of randomness, the same calls for
every row), so they run on a :class:`numpy.random.Generator` and on per-row randomness
(:class:`privspec.backends.core.rowrandom.RowRandom`) alike.

Examples
--------
>>> m = Duchi(1.0)
>>> round(m.worst_variance(), 6)                      # ((e + 1)/(e - 1))^2
4.682694
>>> Hybrid(0.5).alpha, round(Hybrid(2.0).alpha, 6)    # below and above eps* ~ 0.61
(0.0, 0.632121)
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import sympy

#: the hybrid mechanism's switch point eps* (Wang et al. 2019): pure Duchi at or below it;
#: the closed form in floating point (exactly: :func:`eps_star_exact`)
EPS_STAR = math.log((-5 + 2 * math.cbrt(6353 - 405 * math.sqrt(241)) + 2 * math.cbrt(6353 + 405 * math.sqrt(241))) / 27)


@functools.cache
def eps_star_exact() -> sympy.Expr:
    """eps* exactly (built on first use: sympy loads sympy.tensor for it, 45 ms of start-up)."""
    return sympy.log((-5 + 2 * sympy.cbrt(6353 - 405 * sympy.sqrt(241))
                      + 2 * sympy.cbrt(6353 + 405 * sympy.sqrt(241))) / 27)


@dataclass(frozen=True)
class NumericLDP:
    """A mechanism at ``epsilon`` (a float); subclasses give the law of a report."""

    epsilon: float
    #: the domain of the privatized value
    domain: ClassVar[tuple[float, float]] = (-1.0, 1.0)
    name: ClassVar[str] = ""
    #: where the formulas come from (a result's facts)
    source: ClassVar[str] = ""

    # -- the value's scale ------------------------------------------------------------------------
    def to_domain(self, y: np.ndarray, lower: float, upper: float) -> np.ndarray:
        """Values of ``[lower, upper]`` mapped linearly onto :attr:`domain`."""
        lo, hi = self.domain
        return lo + (hi - lo) * (np.asarray(y, dtype=float) - lower) / (upper - lower)

    def to_value(self, t: Any, lower: float, upper: float) -> Any:
        """The inverse of :meth:`to_domain` (an estimate of ``t`` to one of the value)."""
        lo, hi = self.domain
        return lower + (upper - lower) * (t - lo) / (hi - lo)

    def value_scale(self, lower: float, upper: float) -> float:
        """d value / d t: variances of ``t`` times its square are the value's."""
        lo, hi = self.domain
        return (upper - lower) / (hi - lo)

    # -- reports ----------------------------------------------------------------------------------
    def sample(self, t: np.ndarray, rng: Any) -> np.ndarray:
        """One report per value of ``t`` (in :attr:`domain`)."""
        raise NotImplementedError

    def unbiased(self, reports: np.ndarray) -> np.ndarray:
        """Each report's unbiased estimate of its ``t`` (the report itself but for the square wave)."""
        return np.asarray(reports, dtype=float)

    def report_range(self) -> tuple[float, float]:
        """The closed range every report lies in."""
        raise NotImplementedError

    def atoms(self) -> tuple[float, ...] | None:
        """The only values a report takes, where it takes finitely many (None: a range)."""
        return None

    # -- variances --------------------------------------------------------------------------------
    @property
    def coefficients(self) -> tuple[float, float, float]:
        """``(c0, c1, c2)``: Var(unbiased(report) | t) = c0 + c1 t + c2 t^2."""
        raise NotImplementedError

    def variance(self, t: Any) -> Any:
        """Var(unbiased(report) | t)."""
        c0, c1, c2 = self.coefficients
        return c0 + c1 * t + c2 * t * t

    def worst_variance(self) -> float:
        """The largest :meth:`variance` over the domain (the papers' worst case)."""
        c0, c1, c2 = self.coefficients
        lo, hi = self.domain
        points = [lo, hi]
        if c2 < 0 and lo < -c1 / (2 * c2) < hi:  # a concave quadratic peaks inside
            points.append(-c1 / (2 * c2))
        return max(float(self.variance(x)) for x in points)

    def mean_variance(self, mean_t: float, second_t: float) -> float:
        """E[Var(unbiased(report) | t)] over a population of ``t`` with E[t], E[t^2] given."""
        c0, c1, c2 = self.coefficients
        return c0 + c1 * mean_t + c2 * second_t

    # -- privacy ----------------------------------------------------------------------------------
    @classmethod
    def epsilon_exact(cls, eps: sympy.Expr) -> sympy.Expr:
        """The log of the largest ratio of a report's densities under two values, from the
        law's own parameters at an exact ``eps`` (it must give back ``eps``)."""
        raise NotImplementedError


def _exp(x: float) -> float:
    return math.exp(x)


@dataclass(frozen=True)
class Laplace(NumericLDP):
    """``t + Lap(2/epsilon)`` on ``[-1, 1]`` (sensitivity 2)."""

    name: ClassVar[str] = "laplace"
    source: ClassVar[str] = "the Laplace mechanism (Dwork et al. 2006), sensitivity 2 on [-1, 1]"

    @property
    def scale(self) -> float:
        return 2.0 / self.epsilon

    def sample(self, t: np.ndarray, rng: Any) -> np.ndarray:
        n = len(t)
        e, s = rng.random(n), rng.random(n)
        # an exponential by inversion (u < 1: finite), with a random sign
        return np.asarray(t, dtype=float) + np.where(s < 0.5, -1.0, 1.0) * self.scale * -np.log1p(-e)

    def report_range(self) -> tuple[float, float]:
        return (-math.inf, math.inf)

    @property
    def coefficients(self) -> tuple[float, float, float]:
        return (2.0 * self.scale ** 2, 0.0, 0.0)

    @classmethod
    def epsilon_exact(cls, eps: sympy.Expr) -> sympy.Expr:
        # densities exp(-|z - t|/s)/(2s): the ratio is at most exp(|t1 - t2|/s) = exp(2/s)
        return sympy.simplify(2 / (2 / eps))


@dataclass(frozen=True)
class Duchi(NumericLDP):
    """Duchi et al. 2018: ``+-C`` with ``Pr(+C | t) = 1/2 + t (e^eps - 1)/(2 (e^eps + 1))``."""

    name: ClassVar[str] = "duchi"
    source: ClassVar[str] = "Duchi, Jordan and Wainwright, JASA 2018 (one-dimensional)"

    @property
    def bound(self) -> float:
        """C = (e^eps + 1)/(e^eps - 1)."""
        return 1.0 / math.tanh(self.epsilon / 2)

    def sample(self, t: np.ndarray, rng: Any) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        plus = rng.random(len(t)) < 0.5 + t / (2.0 * self.bound)
        return np.where(plus, self.bound, -self.bound)

    def report_range(self) -> tuple[float, float]:
        return (-self.bound, self.bound)

    def atoms(self) -> tuple[float, ...]:
        return (-self.bound, self.bound)

    @property
    def coefficients(self) -> tuple[float, float, float]:
        return (self.bound ** 2, 0.0, -1.0)

    @classmethod
    def epsilon_exact(cls, eps: sympy.Expr) -> sympy.Expr:
        e = sympy.exp(eps)
        plus = lambda t: sympy.Rational(1, 2) + t * (e - 1) / (2 * (e + 1))  # noqa: E731
        return sympy.simplify(sympy.expand_log(sympy.log(sympy.simplify(plus(1) / plus(-1))), force=True))


@dataclass(frozen=True)
class Piecewise(NumericLDP):
    """Wang et al. 2019's piecewise mechanism (PM)."""

    name: ClassVar[str] = "piecewise"
    source: ClassVar[str] = "Wang et al., ICDE 2019, the piecewise mechanism (Algorithm 2, Lemma 1)"

    @property
    def bound(self) -> float:
        """C = (e^(eps/2) + 1)/(e^(eps/2) - 1)."""
        return 1.0 / math.tanh(self.epsilon / 4)

    def sample(self, t: np.ndarray, rng: Any) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        C, half = self.bound, _exp(self.epsilon / 2)
        left = (C + 1) / 2 * t - (C - 1) / 2
        right = left + C - 1
        inside, u = rng.random(len(t)) < half / (half + 1), rng.random(len(t))
        x = u * (C + 1)  # a point of the two outer pieces, [-C, l) then (r, C], laid end to end
        outer = np.where(x < left + C, x - C, right + (x - (left + C)))
        return np.where(inside, left + u * (C - 1), outer)

    def report_range(self) -> tuple[float, float]:
        return (-self.bound, self.bound)

    @property
    def coefficients(self) -> tuple[float, float, float]:
        h = math.expm1(self.epsilon / 2)
        return ((h + 4) / (3 * h * h), 0.0, 1 / h)

    @classmethod
    def epsilon_exact(cls, eps: sympy.Expr) -> sympy.Expr:
        h = sympy.exp(eps / 2)
        p = (sympy.exp(eps) - h) / (2 * h + 2)  # the density in [l(t), r(t)]
        outer = (1 - p * ((h + 1) / (h - 1) - 1)) / ((h + 1) / (h - 1) + 1)  # the rest of the mass, spread on C + 1
        return sympy.simplify(sympy.log(sympy.simplify(p / outer)))


@dataclass(frozen=True)
class Hybrid(NumericLDP):
    """Wang et al. 2019's hybrid mechanism (HM): piecewise with probability alpha, else Duchi."""

    name: ClassVar[str] = "hm"
    source: ClassVar[str] = "Wang et al., ICDE 2019, the hybrid mechanism (alpha = 1 - e^(-eps/2) above eps*)"

    @property
    def alpha(self) -> float:
        return -math.expm1(-self.epsilon / 2) if self.epsilon > EPS_STAR else 0.0

    def sample(self, t: np.ndarray, rng: Any) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        use_pm = rng.random(len(t)) < self.alpha
        pm, duchi = Piecewise(self.epsilon).sample(t, rng), Duchi(self.epsilon).sample(t, rng)
        return np.where(use_pm, pm, duchi)

    def report_range(self) -> tuple[float, float]:
        C = max(Piecewise(self.epsilon).bound, Duchi(self.epsilon).bound)
        return (-C, C)

    def atoms(self) -> tuple[float, ...] | None:
        """Duchi's two at or below eps* (where HM is Duchi's mechanism alone); else none."""
        return Duchi(self.epsilon).atoms() if self.alpha == 0 else None

    @property
    def coefficients(self) -> tuple[float, float, float]:
        a = self.alpha
        pm, duchi = Piecewise(self.epsilon).coefficients, Duchi(self.epsilon).coefficients
        return tuple(a * x + (1 - a) * y for x, y in zip(pm, duchi))  # type: ignore[return-value]

    @classmethod
    def epsilon_exact(cls, eps: sympy.Expr) -> sympy.Expr:
        # Duchi's atoms and piecewise's density are separate parts of a report's law: each
        # part's ratio is its mechanism's (the mixing weight cancels)
        return sympy.Max(Piecewise.epsilon_exact(eps), Duchi.epsilon_exact(eps))


@dataclass(frozen=True)
class SquareWave(NumericLDP):
    """Li et al. 2020's square wave (SW) on ``[0, 1]``."""

    domain: ClassVar[tuple[float, float]] = (0.0, 1.0)
    name: ClassVar[str] = "square_wave"
    source: ClassVar[str] = "Li et al., SIGMOD 2020, the square wave mechanism (the unbiased mean derived here)"

    @property
    def b(self) -> float:
        e, eps = _exp(self.epsilon), self.epsilon
        return (eps * e - e + 1) / (2 * e * (math.expm1(eps) - eps))

    @property
    def p(self) -> float:
        e = _exp(self.epsilon)
        return e / (2 * self.b * e + 1)

    @property
    def q(self) -> float:
        return 1 / (2 * self.b * _exp(self.epsilon) + 1)

    @property
    def slope(self) -> float:
        """c = 2 b (p - q): E[report | v] = (1 - c)/2 + c v."""
        return 2 * self.b * (self.p - self.q)

    def sample(self, v: np.ndarray, rng: Any) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        b = self.b
        near, u = rng.random(len(v)) < 2 * b * self.p, rng.random(len(v))
        # elsewhere: [-b, v - b) then (v + b, 1 + b], of total length 1, laid end to end
        far = np.where(u < v, u - b, u + b)
        return np.where(near, v - b + 2 * b * u, far)

    def unbiased(self, reports: np.ndarray) -> np.ndarray:
        c = self.slope
        return (np.asarray(reports, dtype=float) - (1 - c) / 2) / c

    def report_range(self) -> tuple[float, float]:
        return (-self.b, 1 + self.b)

    @property
    def coefficients(self) -> tuple[float, float, float]:
        b, p, q, c = self.b, self.p, self.q, self.slope
        # Var(report | v) = E[report^2] - E[report]^2, E[report^2] = q ((1+b)^3 + b^3)/3 + (p - q)(2 b v^2 + 2 b^3/3)
        c0 = q * ((1 + b) ** 3 + b ** 3) / 3 + (p - q) * 2 * b ** 3 / 3 - (1 - c) ** 2 / 4
        return (c0 / c ** 2, -(1 - c) / c, (1 - c) / c)

    @classmethod
    def epsilon_exact(cls, eps: sympy.Expr) -> sympy.Expr:
        e = sympy.exp(eps)
        b = (eps * e - e + 1) / (2 * e * (e - 1 - eps))
        return sympy.simplify(sympy.log(sympy.simplify((e / (2 * b * e + 1)) / (1 / (2 * b * e + 1)))))


#: the mechanisms by their name in the language
MECHANISMS: dict[str, type[NumericLDP]] = {m.name: m for m in (Laplace, Duchi, Piecewise, Hybrid, SquareWave)}


def mechanism(name: str, epsilon: float) -> NumericLDP:
    """The mechanism ``name`` (:data:`MECHANISMS`) at ``epsilon``."""
    return MECHANISMS[name](float(epsilon))
