"""The interface of a frequency oracle: what a protocol declares, once.

A protocol is one subclass of :class:`Oracle` (:mod:`privspec.backends.oracles.protocols`
holds them, :data:`privspec.backends.oracles.pure.PROTOCOLS` names them).  It declares its
report law (``p*``, ``q*`` and the pair probabilities) once, for exact and floating
arithmetic through the core's algebra (:mod:`privspec.backends.core.algebra`), the
likelihood ratio of a report, its sampler, and how its reports are counted and written.
Everything else -- the unbiased estimator, IBU, the covariance, the epsilon read back from
the report law, standard errors, the text form's checks -- is shared
(:mod:`privspec.backends.oracles.pure`).
"""
from __future__ import annotations

import functools
import math
import operator
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
import sympy

from privspec.backends.core.algebra import Exact, Float
from privspec.backends.core.rowrandom import RowRandom

__all__ = ["Oracle", "PairProbs", "check_epsilon", "EPSILON", "D", "G", "K", "F"]

#: the symbols of the closed forms
EPSILON = sympy.Symbol("epsilon", positive=True)
D = sympy.Symbol("d", integer=True, positive=True)
G = sympy.Symbol("g", integer=True, positive=True)
K = sympy.Symbol("k", integer=True, positive=True)
F = sympy.Symbol("f", nonnegative=True)


class PairProbs(NamedTuple):
    """Probabilities that two distinct categories ``v != w`` are both in the support.

    ``one``: given ``X = v`` (or ``X = w``); ``neither``: given ``X = x`` not in ``{v, w}``;
    ``xor``: for Hadamard response only, given the one ``x`` with ``(x+1) = (v+1) XOR
    (w+1)`` (every other kind: equal to ``neither``).

    Examples
    --------
    >>> PairProbs(0.1, 0.05, 0.05).neither
    0.05
    """

    one: Any
    neither: Any
    xor: Any


def check_epsilon(epsilon: Any, what: str = "epsilon") -> float:
    """``epsilon`` as a float; ValueError unless it is a positive finite number.

    Examples
    --------
    >>> check_epsilon(1)
    1.0
    """
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a positive finite number, not {epsilon!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{what} must be a positive finite number, not {epsilon!r}")
    return value


@dataclass(frozen=True)
class Oracle(ABC):
    """A frequency oracle: its domain size ``d``, local-DP ``epsilon`` and, for local
    hashing, the hash range ``g``, for subset selection the subset size ``k``; the class is
    the protocol (its :attr:`kind` the spec's name).  Build it with
    :func:`privspec.backends.oracles.pure.oracle` (which validates and fills the defaults).

    ``via`` is ``"adp"`` when the oracle was chosen by multi-freq-ldpy's adaptive rule.

    A protocol declares, in an algebra ``A`` (exact: sympy in :data:`EPSILON`, :data:`D`,
    :data:`G`, :data:`K`; floating: the oracle's numbers): :meth:`probs` (``p*, q*``),
    :meth:`pairs` (both-in-support probabilities), :meth:`likelihood_terms` (a report's
    likelihood for a category in / not in its support); in floating point only, where the
    difference of floats would lose digits: :meth:`gap` (``p* - q*``) and
    :meth:`complements` (``1 - p*, 1 - q*``); and its reports: :meth:`sample`,
    :meth:`collect`, :meth:`counts`, :meth:`membership`, :meth:`distinct_supports`,
    :meth:`format`, :meth:`parse`, :meth:`form`.
    """

    d: int
    epsilon: float
    g: int | None = None
    k: int | None = None
    via: str | None = None

    #: the spec's name of the protocol
    kind: ClassVar[str]
    #: its parameters beyond d and epsilon (``"g"``, ``"k"``)
    PARAMS: ClassVar[tuple[str, ...]] = ()
    #: its reports' text is the hex of its packed bits (unary encoding): sorts as their keys, reads in blocks
    HEX_TEXT: ClassVar[bool] = False

    @classmethod
    def build(cls, d: int, epsilon: float, g: Any = None, k: Any = None) -> "Oracle":
        """The oracle with its parameters validated and defaulted (``d`` and ``epsilon``
        are checked already, and ``g``/``k`` are None unless in :attr:`PARAMS`)."""
        return cls(d, epsilon)

    @property
    def K(self) -> int:
        """Hadamard response's output size: the smallest power of two > d."""
        return 1 << int(self.d).bit_length()

    @property
    def packed_width(self) -> int:
        """Bytes of a packed bit report (UE, SS): ``ceil(d / 8)``."""
        return -(-self.d // 8)

    def params(self, A: Any) -> tuple[Any, Any, Any, Any]:
        """``(epsilon, d, g, k)`` in the algebra ``A``: the symbols, or the numbers."""
        if A is Exact:
            return EPSILON, D, G, K
        return self.epsilon, self.d, self.g, self.k

    def symbols(self) -> dict[sympy.Symbol, Any]:
        """The values of the closed forms' symbols (to ``subs`` them)."""
        out: dict[sympy.Symbol, Any] = {EPSILON: self.epsilon, D: self.d}
        for name, symbol in (("g", G), ("k", K)):
            if name in self.PARAMS:
                out[symbol] = getattr(self, name)
        return out

    # -- the report law ----------------------------------------------------------------------------
    @abstractmethod
    def probs(self, A: Any) -> tuple[Any, Any]:
        """``(p*, q*)``: the probability that the true value is in the report's support,
        and that another given category is."""

    @abstractmethod
    def pairs(self, A: Any, p: Any, q: Any) -> PairProbs:
        """Both-in-support probabilities of two categories, given ``p*, q*``."""

    def xor(self, A: Any) -> tuple[Any, np.ndarray, np.ndarray] | None:
        """Hadamard response's third case of :class:`PairProbs` (``(value, partner,
        exists)``); None for every other protocol."""
        return None

    @abstractmethod
    def likelihood_terms(self, A: Any, p: Any, q: Any, not_p: Any, not_q: Any) -> tuple[list, list]:
        """``(numerator, denominator)`` factors of ``a / b``: a report's likelihood for a
        category in / not in its support, up to a factor common to all categories
        (``not_p, not_q``: ``1 - p*, 1 - q*``).  Their ratio is ``e^eps`` (the local-DP
        epsilon, read back from the report law)."""

    def likelihood_pair(self) -> tuple[float, float]:
        """``(a, b)`` of :meth:`likelihood_terms` in floating point: the likelihood of IBU."""
        p, q = self.probs(Float)
        num, den = self.likelihood_terms(Float, p, q, 1 - p, 1 - q)
        return functools.reduce(operator.mul, num), functools.reduce(operator.mul, den)

    def ibu_system(self, M: np.ndarray, c: np.ndarray, a: float, b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """IBU's ``(L, back, obs)`` for the distinct support sets ``M`` and their counts ``c``:
        ``L[y, u]`` the likelihood (``a`` in the support, ``b`` not), ``back = L^T``, ``obs``
        the sets' frequencies."""
        L = np.where(M, a, b)
        return L, L.T, c / c.sum()

    @abstractmethod
    def gap(self) -> float:
        """``p* - q*`` in floating point, accurate at any epsilon (``e^eps - 1`` by ``expm1``
        times a ratio of positive terms)."""

    @abstractmethod
    def complements(self) -> tuple[float, float]:
        """``(1 - p*, 1 - q*)`` in floating point, each from its own expression (not a
        difference with 1, which loses them where they are small)."""

    # -- reports ----------------------------------------------------------------------------------
    @abstractmethod
    def sample(self, x: np.ndarray, rng: RowRandom) -> Any:
        """The reports of the int64 codes ``x`` (validated), one per row of ``rng``."""

    def collect(self, reports: Any) -> tuple[Any, int]:
        """Reports as arrays, and how many."""
        reports = np.asarray(reports)
        return reports, len(reports)

    @abstractmethod
    def counts(self, reports: Any, w: np.ndarray | None) -> np.ndarray:
        """Support counts of :meth:`collect`'s (at least one) reports, weighted by ``w``."""

    @abstractmethod
    def membership(self, reports: Any) -> np.ndarray:
        """Bool ``(m, d)``: which categories each report's support contains."""

    @abstractmethod
    def distinct_supports(self, reports: Any, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The distinct support sets of :meth:`collect`'s reports (bool ``(m, d)``) and
        their weights."""

    @abstractmethod
    def format(self, reports: Any) -> np.ndarray:
        """One string per report."""

    def small_key(self, reports: Any) -> np.ndarray | None:
        """One integer per report where a report fits in 8 bytes (below ``key_range``), else None."""
        return None

    @abstractmethod
    def form(self) -> str:
        """How its reports are written (:meth:`format`), in words."""

    def facts(self) -> dict:
        """Its parameters beyond d and epsilon, for a result's facts."""
        return {name: getattr(self, name) for name in self.PARAMS}

    @abstractmethod
    def parse(self, s: Any, is_str: np.ndarray) -> tuple[Any, np.ndarray]:
        """The reports of the texts ``s`` (an arrow string Series, ``""`` where not
        ``is_str``) and the positions of the invalid ones."""
