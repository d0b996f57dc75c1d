"""RS+FD's fake data, one class per kind (Arcolezi et al., CIKM 2021;
:mod:`privspec.backends.oracles.multi` says what RS+FD is): a respondent reports every
attribute, the sampled one through its oracle and each other one as a fake report, drawn
here, whose support law, likelihood and privacy terms the protocol
(:class:`~privspec.backends.oracles.multidim.RSFD`) combines with the oracle's.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable

import numpy as np

from privspec.backends.core.algebra import Float
from privspec.backends.core.rowrandom import RowRandom
from privspec.backends.oracles.protocol import Oracle
from privspec.backends.oracles.sampling import uniform_index

__all__ = ["Fake", "UniformFake", "ZeroFake", "RandomFake", "FAKES"]


class Fake(ABC):
    """RS+FD's fake report on an attribute whose oracle is ``o`` (with ``p, q`` its support
    probabilities)."""

    @abstractmethod
    def support(self, o: Oracle, p: float, q: float) -> tuple[float, float]:
        """``(phi, c)``: the probability that the fake support holds a given category, and
        that it holds two given ones."""

    @abstractmethod
    def draw(self, o: Oracle, n: int, rng: RowRandom) -> Any:
        """``n`` fake reports."""

    def likelihood_pair(self, o: Oracle, p: float, q: float, A: int) -> tuple[float, float] | None:
        """The mixture ``(1/A) real + ((A-1)/A) fake``'s likelihood for a category in / not in
        the report's support, up to a common factor; None where it depends on more than that."""
        return None

    @abstractmethod
    def ratios(self, o: Oracle, p: float, q: float, member: np.ndarray) -> np.ndarray:
        """``T(y, x) = Pr_real(y | x) / Pr_fake(y)`` for reports ``y`` given by their support
        ``member`` (bool ``(m, d)``), for every ``x``: ``(m, d)``."""

    @abstractmethod
    def alone(self, o: Oracle, p: float, q: float) -> tuple[float, float]:
        """``T`` of the report whose support is one category alone: for that category, and
        for every other (the report that favours one answer most)."""

    @abstractmethod
    def least_mean(self, o: Oracle, p: float, q: float, w: np.ndarray) -> float:
        """``min_y sum_x w_x T(y, x)``: how little a report can say that it is the real one."""

    @abstractmethod
    def ratio_terms(self, o: Oracle, p: float, q: float) -> tuple[float, Callable[[float], float]]:
        """``Pr(y | x) = prod_i Pr_fake_i(y_i) / A * sum_i T_i`` with ``T_i = Pr_real_i(y_i |
        x_i) / Pr_fake_i(y_i)``: the smallest ``T`` (over y and x) and the function ``S ->
        max (S + T(y, x)) / (S + T(y, x'))`` (over y and two values x, x')."""


class UniformFake(Fake):
    """grr's fake report: a uniform value (in the support ``{y}`` with probability 1/d;
    never two); ``T = d p`` or ``d q``."""

    def support(self, o: Oracle, p: float, q: float) -> tuple[float, float]:
        return 1.0 / o.d, 0.0

    def draw(self, o: Oracle, n: int, rng: RowRandom) -> Any:
        return uniform_index(rng.random(n), o.d)

    def likelihood_pair(self, o: Oracle, p: float, q: float, A: int) -> tuple[float, float] | None:
        return p / A + (A - 1) / (A * o.d), q / A + (A - 1) / (A * o.d)

    def ratios(self, o: Oracle, p: float, q: float, member: np.ndarray) -> np.ndarray:
        return np.where(member, o.d * p, o.d * q)

    def alone(self, o: Oracle, p: float, q: float) -> tuple[float, float]:
        return o.d * p, o.d * q

    def least_mean(self, o: Oracle, p: float, q: float, w: np.ndarray) -> float:
        return float(o.d * (q + (p - q) * np.min(w)))        # the least likely value reported

    def ratio_terms(self, o: Oracle, p: float, q: float) -> tuple[float, Callable[[float], float]]:
        hi, lo = o.d * p, o.d * q
        return lo, lambda S: (S + hi) / (S + lo)


class ZeroFake(Fake):
    """``-z``: the unary encoding of the zero vector, every bit 1 with probability q,
    independently (the oracle on value 0, then bit 0 redrawn with probability q); ``T =
    p/q`` or ``(1-p)/(1-q)``."""

    def support(self, o: Oracle, p: float, q: float) -> tuple[float, float]:
        return q, q * q

    def draw(self, o: Oracle, n: int, rng: RowRandom) -> Any:
        fake = o.privatize(np.zeros(n, dtype=np.int64), rng)
        _, q = o.support_probs()
        bit0 = (rng.random(n) < q).astype(np.uint8)
        fake[:, 0] = (fake[:, 0] & np.uint8(0xFE)) | bit0
        return fake

    def likelihood_pair(self, o: Oracle, p: float, q: float, A: int) -> tuple[float, float] | None:
        # the zero vector's bits: k0 = (1-p)/(1-q), r = p(1-q)/(q(1-p))
        k0, r = (1 - p) / (1 - q), p * (1 - q) / (q * (1 - p))
        return k0 * r / A + (A - 1) / A, k0 / A + (A - 1) / A

    def ratios(self, o: Oracle, p: float, q: float, member: np.ndarray) -> np.ndarray:
        return np.where(member, p / q, (1 - p) / (1 - q))

    def alone(self, o: Oracle, p: float, q: float) -> tuple[float, float]:
        return p / q, (1 - p) / (1 - q)

    def least_mean(self, o: Oracle, p: float, q: float, w: np.ndarray) -> float:
        return (1 - p) / (1 - q)                              # no bit on

    def ratio_terms(self, o: Oracle, p: float, q: float) -> tuple[float, Callable[[float], float]]:
        r_hi, r_lo = p / q, (1 - p) / (1 - q)
        return r_lo, lambda S: (S + r_hi) / (S + r_lo)


class RandomFake(Fake):
    """``-r``: the unary encoding of a uniform random value (the oracle applied to it);
    ``T = R(y_x) / mean_u R(y_u)`` (``R``: the ``-z`` ratio), smallest ``d/((d-1) e' + 1)``
    (bit x off, every other on); the largest ratio has bit x on, bit x' off and no other
    on (the ratio falls as the mean grows)."""

    def support(self, o: Oracle, p: float, q: float) -> tuple[float, float]:
        d = o.d
        one, neither, _ = o.pairs(Float, *o.probs(Float))
        return p / d + (1 - 1 / d) * q, (2 / d) * one + (1 - 2 / d) * neither

    def draw(self, o: Oracle, n: int, rng: RowRandom) -> Any:
        return o.privatize(uniform_index(rng.random(n), o.d), rng)

    def ratios(self, o: Oracle, p: float, q: float, member: np.ndarray) -> np.ndarray:
        t = np.where(member, p / q, (1 - p) / (1 - q))
        return t / t.mean(axis=1, keepdims=True)

    def alone(self, o: Oracle, p: float, q: float) -> tuple[float, float]:
        hi, lo = p / q, (1 - p) / (1 - q)
        mean = (hi + (o.d - 1) * lo) / o.d
        return hi / mean, lo / mean

    def least_mean(self, o: Oracle, p: float, q: float, w: np.ndarray) -> float:
        # k bits on: at best on the k least likely categories; then the best k
        hi, lo = p / q, (1 - p) / (1 - q)
        W = np.concatenate([[0.0], np.cumsum(np.sort(np.asarray(w, dtype=float) / np.sum(w)))])
        k = np.arange(o.d + 1)
        return float(np.min((lo + (hi - lo) * W) / (lo + (hi - lo) * k / o.d)))

    def ratio_terms(self, o: Oracle, p: float, q: float) -> tuple[float, Callable[[float], float]]:
        d = o.d
        e = (p / q) / ((1 - p) / (1 - q))
        D = e + d - 1                                   # mean_u R (in units of r_lo) times d, one bit on
        return d / ((d - 1) * e + 1), lambda S: (S * D + d * e) / (S * D + d)


#: the fake data by name
FAKES: dict[str, Fake] = {"uniform": UniformFake(), "zero": ZeroFake(), "random": RandomFake()}
