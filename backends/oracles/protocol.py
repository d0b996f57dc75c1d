"""The interface of a frequency oracle: what every family answers, and what a protocol
declares, once.

:class:`FrequencyOracle` is what a back end asks of any frequency oracle (its sampler, the
text of its reports, the covariance of its unbiased estimate, the epsilon read back from
its report law, what a result quotes about it), :class:`OneAttributeOracle` what it asks
beyond that of an oracle on one attribute (its report law, support counts, estimators, the
facts of its epsilon and avar results).  Three families implement them: one attribute in
one round (:class:`Oracle`), one attribute collected again and again
(:class:`~privspec.backends.oracles.memoized.LongitudinalOracle`), several attributes
(:class:`~privspec.backends.oracles.multidim.MultiOracle`); the back ends call their
methods and never ask which family an oracle is.

A one-round protocol is one subclass of :class:`Oracle` (:mod:`privspec.backends.oracles.protocols`
holds them, :data:`privspec.backends.oracles.pure.PROTOCOLS` names them).  It declares its
report law (``p*``, ``q*`` and the pair probabilities) once, for exact and floating
arithmetic through the core's algebra (:mod:`privspec.backends.core.algebra`), the
likelihood ratio of a report, its sampler, and how its reports are counted and written.
Everything else -- the unbiased estimator, the covariance, the epsilon read back from the
report law, the text form's checks -- is :class:`Oracle`'s, and IBU and standard errors
are :mod:`privspec.backends.oracles.pure`'s.
"""
from __future__ import annotations

import functools
import math
import operator
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Sequence

import numpy as np
import pandas as pd
import sympy

from privspec.model import costs
from privspec.backends.core.algebra import Exact, Float
from privspec.backends.core.frequency import pure_covariance
from privspec.backends.core import projections
from privspec.backends.core.rowrandom import RowRandom
from privspec.backends.data.tally import all_text
from privspec.backends.oracles.guessing import Guessing

__all__ = ["FrequencyOracle", "OneAttributeOracle", "Oracle", "PairProbs", "check_epsilon", "check_domain",
           "check_codes", "check_support_counts", "check_distribution", "EPSILON", "D", "G", "K", "F"]

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


def check_domain(d: Any) -> int:
    """The number of categories ``d`` as an int; ValueError unless an integer >= 2."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
        raise ValueError(f"a frequency oracle needs d >= 2 categories, not {d!r}")
    return int(d)


def check_codes(codes: Any, d: int, rng: RowRandom) -> np.ndarray:
    """The codes as int64, one per row of ``rng``; ValueError unless a 1-D array of integers
    in ``[0, d)``."""
    x = np.asarray(codes)
    if x.ndim != 1:
        raise ValueError("codes is a 1-D array of category codes")
    if x.size and (not np.issubdtype(x.dtype, np.integer) or x.min() < 0 or x.max() >= d):
        raise ValueError(f"codes are integers in [0, {d})")
    if len(rng) != len(x):
        raise ValueError(f"rng has {len(rng)} rows for {len(x)} codes")
    return x.astype(np.int64, copy=False)


def check_support_counts(C: Sequence[float], d: int, n: float | None = None) -> np.ndarray:
    """The support counts ``C`` as floats; ValueError unless they have ``d`` entries and
    ``n`` (where given) is positive."""
    C = np.asarray(C, dtype=float)
    if C.shape != (d,):
        raise ValueError(f"C has {d} entries, not shape {C.shape}")
    if n is not None and not n > 0:
        raise ValueError("n must be positive")
    return C


def check_distribution(f: Sequence[float], d: int) -> np.ndarray:
    """``f`` as floats; ValueError unless a distribution over ``d`` categories."""
    f = np.asarray(f, dtype=float)
    if f.shape != (d,):
        raise ValueError(f"f has {d} entries (one per category), not shape {f.shape}")
    if not abs(f.sum() - 1.0) <= 1e-6:
        raise ValueError(f"f must be a distribution (it sums to {f.sum()})")
    return f


def _weights(counts: Any, m: int) -> np.ndarray | None:
    """One weight per report as floats (None: every report counts once)."""
    if counts is None:
        return None
    w = np.asarray(counts, dtype=float).ravel()
    if w.shape != (m,):
        raise ValueError(f"counts has one entry per report ({m}), not {w.shape}")
    return w


# ---- what every family answers ---------------------------------------------------------------------
class FrequencyOracle(ABC):
    """What a back end asks of any frequency oracle, whatever its family.

    The arguments are the family's own: for one attribute (:class:`OneAttributeOracle`) a
    category code per respondent, its reports, one string per report and a distribution;
    for several (:class:`~privspec.backends.oracles.multidim.MultiOracle`) a row of codes
    per respondent, :class:`~privspec.backends.oracles.multidim.MultiReports`, text columns
    and one distribution per attribute.
    """

    @abstractmethod
    def privatize(self, codes: Any, rng: RowRandom) -> Any:
        """The reports of the respondents' ``codes``, one per row of ``rng`` (a row's report
        a function of the key, its row index and its codes alone); ValueError for codes
        outside the domain."""

    @abstractmethod
    def format_reports(self, reports: Any) -> Any:
        """The reports as text."""

    @abstractmethod
    def parse_reports(self, texts: Any) -> tuple[Any, np.ndarray]:
        """The reports of :meth:`format_reports`'s texts, and the positions of the invalid
        ones (nothing is raised for bad data)."""

    @abstractmethod
    def covariance(self, f: Any, n: float, conditional: bool = False) -> Any:
        """The covariance of the unbiased estimate from ``n`` respondents at the frequencies
        ``f``: drawn from that population (``conditional=False``), or given the collected
        table (privacy noise only)."""

    @abstractmethod
    def epsilon_of(self) -> float:
        """The local-DP epsilon of one report, read back from the report law (not from the
        declared epsilon)."""

    @abstractmethod
    def facts(self) -> dict:
        """What a result quotes about the oracle (its protocol and report law)."""


class OneAttributeOracle(FrequencyOracle):
    """What a back end asks beyond :class:`FrequencyOracle` of an oracle on one attribute:
    ``kind`` (the spec's name) and ``d`` (categories) are its attributes."""

    @abstractmethod
    def report_oracle(self) -> "Oracle":
        """The one-round oracle whose reports these are: their layout, text and support
        sets (not their law: its estimator would be another's)."""

    @abstractmethod
    def support_probs(self) -> tuple[float, float]:
        """``(p*, q*)`` of one report in floating point."""

    @abstractmethod
    def likelihood_pair(self) -> tuple[float, float]:
        """``(a, b)``: a report's likelihood for a category in / not in its support, up to a
        factor common to all categories (the IBU's)."""

    def support_counts(self, reports: Any, counts: Sequence[float] | None = None) -> np.ndarray:
        """``C_v``: the reports (weighted by ``counts``) whose support contains ``v``."""
        return self.report_oracle().support_counts(reports, counts)

    @abstractmethod
    def unbiased(self, C: Sequence[float], n: float, project: str = "none") -> np.ndarray:
        """``f_hat = (C/n - q*) / (p* - q*)`` from the support counts ``C`` of ``n`` reports,
        optionally projected onto the simplex."""

    @abstractmethod
    def read_back(self, declared: Any, first: Any = None) -> dict:
        """An epsilon result's facts beyond :meth:`facts`: the privacy read back from the
        report law against the declared ``epsilon`` (and a longitudinal oracle's ``first``),
        sympy numbers; ValueError saying what differs where they do."""

    @abstractmethod
    def guessing(self, w: np.ndarray) -> Guessing:
        """The adversary's best guess of one respondent's category from one report, at the
        population ``w`` (:mod:`privspec.backends.oracles.guessing`): prediction and the
        worst report's posterior."""

    def exact_covariance(self, epsilon: sympy.Expr, f: Sequence[sympy.Expr], conditional: bool = False
                         ) -> sympy.Matrix | None:
        """:meth:`covariance` times n in exact arithmetic, at an exact ``epsilon`` and
        distribution ``f``; None where there is no closed form here."""
        return None

    def collection_covariances(self, f: np.ndarray, conditional: bool) -> dict[str, np.ndarray]:
        """n times the covariances that repeated collections of the same respondents
        share, by name (none for one round)."""
        return {}


@functools.lru_cache(maxsize=None)
def closed_forms(protocol: type["Oracle"]) -> tuple[str, str, str]:
    """``p*``, ``q*`` and ``n Var(f_hat_v)`` given the table, simplified, in epsilon, d (g, k), f."""
    o = protocol.build(16, 1.0)
    pe, qe = o.probs(Exact)
    var = sympy.factor(sympy.simplify(o.variance_formula(exact=True, conditional=True)))
    return sympy.sstr(sympy.simplify(pe)), sympy.sstr(sympy.simplify(qe)), sympy.sstr(var)


@dataclass(frozen=True)
class Oracle(OneAttributeOracle):
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
    #: its reports' text is two decimal fields ``a:b`` (local hashing): written from one buffer,
    #: read from the rows' bytes (:meth:`text_buffers`, :meth:`parse_buffers`)
    DECIMAL_TEXT: ClassVar[bool] = False

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

    # -- what a back end asks (FrequencyOracle, OneAttributeOracle), from what a protocol declares ----
    def report_oracle(self) -> "Oracle":
        return self

    def support_probs(self) -> tuple[float, float]:
        return self.probs(Float)

    def privatize(self, codes: Any, rng: RowRandom) -> Any:
        return self.sample(check_codes(codes, self.d, rng), rng)

    def support_counts(self, reports: Any, counts: Sequence[float] | None = None) -> np.ndarray:
        reports, m = self.collect(reports)
        w = _weights(counts, m)
        if m == 0:
            return np.zeros(self.d, dtype=float if w is not None else np.int64)
        return self.counts(reports, w)

    def support_sets(self, reports: Any, counts: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The distinct support sets of the reports (bool ``(m, d)``) and their weights."""
        reports, m = self.collect(reports)
        w = _weights(counts, m)
        return self.distinct_supports(reports, np.ones(m) if w is None else w)

    def unbiased(self, C: Sequence[float], n: float, project: str = "none") -> np.ndarray:
        C = check_support_counts(C, self.d, n)
        return projections.project((C / n - self.probs(Float)[1]) / self.gap(), project)

    def covariance(self, f: Sequence[float], n: float, conditional: bool = False) -> np.ndarray:
        p, q = self.probs(Float)
        one, neither, _ = self.pairs(Float, p, q)
        return pure_covariance(p, q, one, neither, check_distribution(f, self.d), n, conditional,
                               xor=self.xor(Float), gap=self.gap())

    def exact_covariance(self, epsilon: sympy.Expr, f: Sequence[sympy.Expr], conditional: bool = False
                         ) -> sympy.Matrix:
        values = {symbol: epsilon if symbol is EPSILON else sympy.Integer(v) for symbol, v in self.symbols().items()}
        p, q = self.probs(Exact)
        one, neither, _ = self.pairs(Exact, p, q)
        p, q, one, neither = (sympy.sympify(c).subs(values) for c in (p, q, one, neither))
        xor = self.xor(Exact)
        if xor is not None:
            xor = (sympy.sympify(xor[0]).subs(values), xor[1], xor[2])
        fa = np.array([sympy.sympify(x) for x in f], dtype=object)
        V = pure_covariance(p, q, one, neither, fa, sympy.Integer(1), conditional, xor=xor)
        return sympy.Matrix(V.tolist())

    def variance_formula(self, exact: bool = True, conditional: bool = True) -> sympy.Expr:
        """``n Var(f_hat_v)`` as a sympy expression in :data:`F`, in the symbols (``exact``)
        or at the oracle's numbers (:func:`privspec.backends.oracles.pure.variance_formula`)."""
        p, q = self.probs(Exact)
        if not exact:
            vals = {s: sympy.Float(v, 17) if isinstance(v, float) else sympy.Integer(v)
                    for s, v in self.symbols().items()}
            p, q = sympy.sympify(p).subs(vals), sympy.sympify(q).subs(vals)
        v = q * (1 - q) / (p - q) ** 2 + F * (1 - p - q) / (p - q)
        return v if conditional else v + F * (1 - F)

    def epsilon_of(self, exact: bool = False) -> Any:
        if exact:
            p, q = self.probs(Exact)
            num, den = self.likelihood_terms(Exact, p, q, 1 - p, 1 - q)
            r = sympy.Mul(*num) / sympy.Mul(*den)
            return sympy.simplify(sympy.expand_log(sympy.log(sympy.simplify(r)), force=True))
        p, q = self.probs(Float)
        num, den = self.likelihood_terms(Float, p, q, *self.complements())
        out = 0.0
        for t in num:
            out += math.log(t)
        for t in den:
            out -= math.log(t)
        return out

    def read_back(self, declared: Any, first: Any = None) -> dict:
        values = {symbol: declared if symbol is EPSILON else sympy.Integer(v) for symbol, v in self.symbols().items()}
        if costs.exact_exp(declared):
            back = sympy.simplify(self.epsilon_of(exact=True).subs(values))
            differs = sympy.simplify(back - declared) != 0
        else:  # e^700 in exact arithmetic would take minutes: read back in floating point
            back = self.epsilon_of()
            differs = abs(back - float(declared)) > 1e-9 * max(1.0, float(declared))
        if differs:
            raise ValueError(f"the epsilon read back from {self.kind}'s report probabilities ({back}) differs "
                             f"from the declared one ({declared})")
        return {"read_back": back, "reason": "max over reports of log(max_x Pr(report | x) / min_x Pr(report | x)), "
                                             "from the oracle's report probabilities"}

    def facts(self) -> dict:
        p, q = self.probs(Float)
        pe, qe, var = closed_forms(type(self))
        facts: dict = {"protocol": self.kind if self.via is None else f"{self.kind} (chosen by adp)", "p_star": p,
                       "q_star": q, "p_star_formula": pe, "q_star_formula": qe, "variance_formula": var,
                       "variance_meaning": "n Var(f_hat_v) given the collected table (Wang et al. 2017, Eq. (1)); "
                                           "at a population add f (1 - f)"}
        facts.update(self.parameter_facts())
        return facts

    def format_reports(self, reports: Any) -> np.ndarray:
        return self.format(reports)

    def arrow_texts(self, reports: Any) -> Any:
        """The texts of :meth:`format` as an Arrow string column built without a Python
        string per report, where the oracle writes them so; None otherwise."""
        return None

    def parse_reports(self, texts: Sequence[Any]) -> tuple[Any, np.ndarray]:
        raw = pd.Series(list(texts) if not isinstance(texts, pd.Series) else texts.tolist(), dtype=object)
        is_str = np.ones(len(raw), dtype=bool) if all_text(raw.to_numpy(dtype=object)) else \
            raw.map(lambda s: isinstance(s, str)).to_numpy(dtype=bool)
        s = raw.where(is_str, "").astype("string[pyarrow]")
        return self.parse(s, is_str)

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

    def parameter_facts(self) -> dict:
        """Its parameters beyond d and epsilon, for a result's facts."""
        return {name: getattr(self, name) for name in self.PARAMS}

    @abstractmethod
    def parse(self, s: Any, is_str: np.ndarray) -> tuple[Any, np.ndarray]:
        """The reports of the texts ``s`` (an arrow string Series, ``""`` where not
        ``is_str``) and the positions of the invalid ones."""
