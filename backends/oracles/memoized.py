"""The longitudinal (memoized, two-round) protocols, one class per kind: L-GRR, L-SUE,
L-OUE, L-OSUE (Arcolezi et al. 2023; :mod:`privspec.backends.oracles.longitudinal` says
what they share and holds their functions).

A kind declares its two rounds (:attr:`LongitudinalOracle.ROUNDS`: the one-round
protocols of the permanent and the instantaneous response), the second round's
calibration (:meth:`~LongitudinalOracle.round2`), the both-in-support probabilities of
one report, the permanent response's covariance, the instantaneous sampler and the
privacy loss of ``t`` collections: once per report layout (a category, or bits).
:class:`LongitudinalOracle` does the rest, the interface every one-attribute oracle answers
(:class:`~privspec.backends.oracles.protocol.OneAttributeOracle`): both rounds' sampler,
the unbiased estimate and its covariance, the reports' text (the second round's oracle's),
the privacy read back.
"""
from __future__ import annotations

import dataclasses
import math
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import numpy as np

from privspec.backends.core import projections
from privspec.backends.core.frequency import FloatRangeError, pure_covariance
from privspec.backends.core.rowrandom import RowRandom
from privspec.backends.oracles.guessing import Guessing, by_channel, unary
from privspec.backends.oracles.protocol import (OneAttributeOracle, Oracle, PairProbs, check_codes,
                                                check_distribution, check_support_counts)
from privspec.backends.oracles.pure import PROTOCOLS, oracle

__all__ = ["LongitudinalOracle", "LGRR", "LSUE", "LOUE", "LOSUE", "log_ratio", "check_collections", "IRR_CHUNK"]

#: row x category elements per block of the IRR sampler (as the oracles': blocks that stay in cache)
IRR_CHUNK = 1 << 18
#: the stream tags (bits 32.. of the stream word) of the PRR and of collection t's IRR (t + 2)
_PRR_TAG = 1
_MAX_COLLECTION = (1 << 31) - 3

def _expm1_over(x: float, s: float) -> float:
    """``(e^x - 1) / e^s`` for ``0 <= s <= x``, without overflow (x up to 1400) and without
    cancellation where it is small (x near 0)."""
    return math.expm1(x) * math.exp(-s) if x < 700 else math.exp(x - s) - math.exp(-s)


def check_collections(collections: Any) -> float:
    """The number of collections ``t`` as a float; ValueError unless an integer >= 1 or infinity."""
    t = float(collections)
    if not (t >= 1 and (math.isinf(t) or t == int(t))):
        raise ValueError(f"collections is an integer >= 1 (or infinity), not {collections!r}")
    return t


def _collection(collection: Any) -> int:
    if isinstance(collection, bool) or not isinstance(collection, (int, np.integer)):
        raise ValueError(f"collection is an integer >= 0, not {collection!r}")
    if not 0 <= int(collection) <= _MAX_COLLECTION:
        raise ValueError(f"collection is an integer in [0, {_MAX_COLLECTION}], not {collection}")
    return int(collection)


def _stream(rng: RowRandom, tag: int) -> int:
    """The stream of the PRR (tag 1) or of collection t's IRR (tag t + 2): the caller's
    stream with the tag in bits 32-62, so that streams named by
    :func:`privspec.backends.core.rowrandom.stream_of` (32-bit) never meet these."""
    return int(rng.stream) ^ (tag << 32)


def log_ratio(a: float, not_a: float, b: float, not_b: float, log_r: float) -> float:
    """``log[(a r + 1 - a)/(b r + 1 - b)]`` for ``r = exp(log_r)``, any size, with ``not_a =
    1 - a`` and ``not_b = 1 - b`` given (1 - a in doubles is 0 where a is within 1e-16 of
    1: epsilon = 700): divided through by r when r > 1 (the terms of size ``log r`` would
    cancel to their rounding, 1e-9 at t = 10^7)."""
    la, lna, lb, lnb = math.log(a), math.log(not_a), math.log(b), math.log(not_b)
    if log_r >= 0:
        return float(np.logaddexp(la, lna - log_r) - np.logaddexp(lb, lnb - log_r))
    return float(np.logaddexp(la + log_r, lna) - np.logaddexp(lb + log_r, lnb))


@dataclass(frozen=True)
class LongitudinalOracle(OneAttributeOracle):
    """A longitudinal frequency oracle: domain size ``d``, the PRR's ``eps_perm`` (the
    privacy of any number of collections), one report's ``eps_1``, and the two rounds'
    probabilities ``(p1, q1)`` (PRR: the true value's category / bit kept) and ``(p2,
    q2)`` (IRR, given the memoized value / bit); the class is the kind.  Build it with
    :func:`privspec.backends.oracles.longitudinal.longitudinal`.

    Examples
    --------
    >>> lo = LOUE(6, 2.0, 1.0, 0.5, 0.119203, 0.5, 0.080937)
    >>> lo.kind, lo.ROUNDS
    ('l_oue', ('oue', 'oue'))
    """

    d: int
    eps_perm: float
    eps_1: float
    p1: float
    q1: float
    p2: float
    q2: float
    calibration: str = "tight"

    #: the spec's name of the kind
    kind: ClassVar[str]
    #: the one-round protocols of the PRR and of the IRR
    ROUNDS: ClassVar[tuple[str, str]]

    @property
    def packed_width(self) -> int:
        """Bytes of a packed UE report: ``ceil(d / 8)``."""
        return -(-self.d // 8)

    @classmethod
    def max_eps_1(cls, eps_perm: float) -> float:
        """The largest one-report ``eps_1`` the kind can reach below ``eps_perm``."""
        return float(eps_perm)

    @classmethod
    def check_eps_1(cls, eps_perm: float, eps_1: float) -> None:
        """ValueError where the kind cannot reach ``eps_1 < eps_perm``."""

    @classmethod
    @abstractmethod
    def round2(cls, d: int, eps_perm: float, eps_1: float, calibration: str) -> tuple[float, float]:
        """``(p2, q2)``: the IRR that makes one report ``eps_1``-LDP.

        Written with ``E = e^eps_perm`` divided out of numerator and denominator (``u =
        1/E``) and ``e^x - 1`` by ``expm1``: finite at ``eps_perm = 700`` (``E^2`` and
        ``e^(eps_1 + eps_perm)`` overflow) and accurate at ``eps_1 = 1e-9``."""

    @abstractmethod
    def irr_epsilon(self) -> float:
        """The epsilon of the IRR as a one-round oracle of its protocol (``ROUNDS[1]``)."""

    def irr_complements(self) -> tuple[float, float]:
        """``(1 - p2, 1 - q2)``, each from its own expression."""
        return 1 - self.p2, 1 - self.q2

    def support_probs(self) -> tuple[float, float]:
        """``(p*, q*) = (q2 + p1 (p2 - q2), q2 + q1 (p2 - q2))`` of one collection."""
        g = self.p2 - self.q2
        return self.q2 + self.p1 * g, self.q2 + self.q1 * g

    @abstractmethod
    def pairs(self) -> PairProbs:
        """Both-in-support probabilities of two categories in one report."""

    @abstractmethod
    def likelihood_pair(self) -> tuple[float, float]:
        """One report's likelihood for a category in / not in its support (IBU's pair)."""

    @abstractmethod
    def prr_covariance(self, f: np.ndarray) -> np.ndarray:
        """``sum_x f_x Cov(b | x)``: the covariance of the PRR's support ``b`` given the table
        ``f`` (what two collections of the same respondents share)."""

    @abstractmethod
    def memo_width(self) -> int:
        """Counter rows per memoized value (row ``r d + v``, times this) stay below 2^62."""

    @abstractmethod
    def memo_of(self, memo: np.ndarray, n: int) -> np.ndarray:
        """``n`` memoized PRRs as an array (ValueError for another shape)."""

    @abstractmethod
    def irr_draws(self) -> int:
        """Uniforms per row of the IRR."""

    @abstractmethod
    def irr(self, memo: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The IRR of the memoized PRRs ``memo`` from :meth:`irr_draws` uniforms ``u`` per row."""

    def epsilon_at(self, t: float, not_p1: float, not_q1: float) -> float:
        """The exact loss of ``t`` collections (``inf``: the limit), given ``1 - p1, 1 - q1``:
        the true value's term, and :meth:`other_term` (the other value's bit)."""
        if math.isinf(t):
            return math.log(self.p1) - math.log(self.q1) + self.other_term(t, not_p1, not_q1)
        # q2 = 0: l_oue at max_eps_1
        log_r = t * (math.log(self.p2) - math.log(self.q2)) if self.q2 > 0 else math.inf
        return log_ratio(self.p1, not_p1, self.q1, not_q1, log_r) + self.other_term(t, not_p1, not_q1)

    def other_term(self, t: float, not_p1: float, not_q1: float) -> float:
        """The other value's part of the loss of ``t`` collections (none for a category)."""
        return 0.0

    @abstractmethod
    def epsilon_by_counts(self, t: int) -> float:
        """The loss of ``t`` collections by enumeration of the reports' counts."""

    # -- what a back end asks (OneAttributeOracle), from the two rounds -------------------------
    def rounds(self) -> tuple[Oracle, Oracle]:
        """The PRR's and the IRR's one-round oracles
        (:func:`privspec.backends.oracles.longitudinal.round_oracles`)."""
        k1, k2 = self.ROUNDS
        eps2 = self.irr_epsilon()
        # (an IRR that keeps nothing in doubles, eps2 = 0, or everything, inf: no oracle() accepts it)
        second = oracle(k2, self.d, eps2) if 0 < eps2 < math.inf else PROTOCOLS[k2](self.d, eps2)
        return oracle(k1, self.d, self.eps_perm), second

    def report_oracle(self) -> Oracle:
        return self.rounds()[1]

    def support_gap(self) -> float:
        """``p* - q* = (p1 - q1)(p2 - q2)``, the first factor the PRR oracle's gap."""
        return self.rounds()[0].gap() * (self.p2 - self.q2)

    def unbiased(self, C: Sequence[float], n: float, project: str = "none") -> np.ndarray:
        C = check_support_counts(C, self.d, n)
        gap = self.support_gap()
        if gap == 0:   # first below about 1e-16: the IRR keeps nothing in doubles
            raise FloatRangeError(0.0, math.inf)
        return projections.project((C / n - self.support_probs()[1]) / gap, project)

    def covariance(self, f: Sequence[float], n: float, conditional: bool = False) -> np.ndarray:
        f = check_distribution(f, self.d)
        if not n > 0:
            raise ValueError("n must be positive")
        p, q = self.support_probs()
        one, neither, _ = self.pairs()
        return pure_covariance(p, q, one, neither, f, n, conditional, gap=self.support_gap())

    def cross_collection_covariance(self, f: Sequence[float], n: float, conditional: bool = False) -> np.ndarray:
        """``Cov(f_hat_t, f_hat_s)`` of two collections of the same respondents
        (:func:`privspec.backends.oracles.longitudinal.cross_collection_covariance`)."""
        f = check_distribution(f, self.d)
        if not n > 0:
            raise ValueError("n must be positive")
        delta = self.p1 - self.q1
        V = self.prr_covariance(f) / (n * delta * delta)
        if not conditional:
            V = V + (np.diag(f) - np.outer(f, f)) / n
        return V

    def change_covariance(self, f: Sequence[float], n: float) -> np.ndarray:
        """``Cov(f_hat_t - f_hat_s)`` (:func:`privspec.backends.oracles.longitudinal.change_covariance`)."""
        return 2 * (self.covariance(f, n, conditional=True) - self.cross_collection_covariance(f, n, conditional=True))

    def collection_covariances(self, f: np.ndarray, conditional: bool) -> dict[str, np.ndarray]:
        # two collections of the same respondents share their permanent responses
        return {"cross_collection_covariance": self.cross_collection_covariance(f, 1.0, conditional=conditional),
                "change_covariance": self.change_covariance(f, 1.0)}

    def permanent(self, codes: Any, rng: RowRandom) -> np.ndarray:
        """The memoized PRR of each row's value (:func:`privspec.backends.oracles.longitudinal.permanent`)."""
        x = check_codes(codes, self.d, rng)
        first = self.rounds()[0]
        if len(x) and (int(rng.rows.max()) + 1) * self.d * self.memo_width() >= 1 << 62:
            raise ValueError("row indices too large for per-value memoization (row * d must stay below 2^62)")
        memo_rows = rng.rows * self.d + x
        return first.privatize(x, RowRandom(rng.key, rows=memo_rows, stream=_stream(rng, _PRR_TAG)))

    def instantaneous(self, memo: np.ndarray, rng: RowRandom, collection: int = 0, chunk: int = IRR_CHUNK
                      ) -> np.ndarray:
        """The IRR of memoized PRRs at one collection
        (:func:`privspec.backends.oracles.longitudinal.instantaneous`), in blocks of about
        ``chunk`` uniforms (they change nothing)."""
        stream = _stream(rng, _collection(collection) + 2)
        n, draws = len(rng), self.irr_draws()
        memo = self.memo_of(memo, n)
        out = np.empty_like(memo)
        step = max(1, chunk // draws)
        for lo, hi in ((s, min(n, s + step)) for s in range(0, n, step)):
            # a fresh RowRandom per block at draw 0: a row's uniforms depend on its index only
            u = RowRandom(rng.key, rows=rng.rows[lo:hi], stream=stream).random((hi - lo, draws) if draws > 1
                                                                             else hi - lo)
            out[lo:hi] = self.irr(memo[lo:hi], u)
        return out

    def privatize(self, codes: Any, rng: RowRandom, collection: int = 0) -> np.ndarray:
        return self.instantaneous(self.permanent(codes, rng), rng, collection)

    def format_reports(self, reports: Any) -> np.ndarray:
        return self.report_oracle().format_reports(reports)

    def parse_reports(self, texts: Sequence[Any]) -> tuple[Any, np.ndarray]:
        return self.report_oracle().parse_reports(texts)

    def epsilon_of(self, collections: float = 1) -> float:
        """The exact loss of ``t`` collections of one value
        (:func:`privspec.backends.oracles.longitudinal.epsilon_of`): one report's by default."""
        t = check_collections(collections)
        not_p1, not_q1 = self.rounds()[0].complements()
        return self.epsilon_at(t, not_p1, not_q1)

    def read_back(self, declared: Any, first: Any = None) -> dict:
        limit, one = self.epsilon_of(math.inf), self.epsilon_of(1)
        for got, want, what in ((limit, declared, "epsilon"), (one, first, "first")):
            if abs(got - float(want)) > 1e-9 * max(1.0, float(want)):
                raise ValueError(f"the {what} read back from {self.kind}'s report probabilities ({got}) differs "
                                 f"from the declared one ({want})")
        return {"first": first, "read_back": limit, "read_back_first": one,
                "after_collections": {t: float(self.epsilon_of(t)) for t in range(1, 11)},
                "reason": "the exact loss of t reports of the same value, max over report sequences of "
                          "log(Pr(y_1..y_t | x) / Pr(y_1..y_t | x')): first at t = 1, rising to epsilon (the memoized "
                          "response's) as t grows; t * first is no bound (the reports share the memoized response)"}

    def facts(self) -> dict:
        p, q = self.support_probs()
        return {"protocol": self.kind, "p_star": p, "q_star": q, "permanent": {"p1": self.p1, "q1": self.q1},
                "instantaneous": {"p2": self.p2, "q2": self.q2},
                "composition": "p* = p1 p2 + (1 - p1) q2, q* = q1 p2 + (1 - q1) q2 (a memoized permanent "
                               "response at epsilon, an instantaneous one each collection, one report at first)"}


class LGRR(LongitudinalOracle):
    """L-GRR: GRR at eps_perm, then GRR over [d].

    ``calibration="tight"`` (default): ``p*/q* = a`` (``a = e^eps_1``) with ``q2 =
    (1-p2)/(d-1)`` is linear in ``p2``: ``p2 = (aE - 1 + (d-2)(a-1)) / ((E-1)(a+d-1))``,
    ``q2 = (E - a)/((E-1)(a+d-1))``; then ``p* = a/(a+d-1)``: GRR at eps_1.
    ``calibration="peer"``: multi-freq-ldpy's (and Arcolezi et al.'s) ``p2 = (aE - 1)/((d-1)
    (E-a) + aE - 1)``, which solves ``(p1 p2 + q1 q2)/(p1 q2 + q1 p2) = a``: the binary
    (d = 2) equation, which leaves out the paths through a third value (B neither x nor
    x'), ``(d-2) q1 q2`` in both probabilities.  For ``d > 2`` the real one-report loss
    is then below ``eps_1`` (0.82 at d = 6, eps_perm = 2, eps_1 = 1): still
    ``eps_1``-LDP, with more noise than needed.  Both agree at ``d = 2``."""

    kind = "l_grr"
    ROUNDS = ("grr", "grr")

    @classmethod
    def round2(cls, d: int, eps_perm: float, eps_1: float, calibration: str) -> tuple[float, float]:
        u, a, am1 = math.exp(-eps_perm), math.exp(eps_1), math.expm1(eps_1)
        both = _expm1_over(eps_1 + eps_perm, eps_perm)        # (a E - 1) / E
        if calibration == "peer":
            rest = -math.expm1(eps_1 - eps_perm)              # (E - a) / E
            return both / ((d - 1) * rest + both), rest / ((d - 1) * rest + both)
        # p*/q* = e^eps_1 with every path to a report counted (B != x then kept, etc.)
        den = -math.expm1(-eps_perm) * (a + d - 1)
        return (both + (d - 2) * am1 * u) / den, -math.expm1(eps_1 - eps_perm) / den

    def irr_epsilon(self) -> float:
        return math.log(self.p2 / self.q2)

    def pairs(self) -> PairProbs:
        return PairProbs(0.0, 0.0, 0.0)                       # a report is one category

    def likelihood_pair(self) -> tuple[float, float]:
        return self.support_probs()                           # the report's channel

    def guessing(self, w: np.ndarray) -> Guessing:
        # one collection's report is GRR with (p*, q*)
        p, q = self.support_probs()
        return by_channel(np.where(np.eye(self.d, dtype=bool), p, q), w, "one collection's category")

    def prr_covariance(self, f: np.ndarray) -> np.ndarray:
        # the indicator of B: diag(pi) - pi pi^T summed, pi = q1 + delta e_x
        q1, delta = self.q1, self.p1 - self.q1
        one = np.ones(self.d)
        return (np.diag(q1 + delta * f) - q1 * q1 * np.outer(one, one)
                - q1 * delta * (np.outer(one, f) + np.outer(f, one)) - delta * delta * np.diag(f))

    def memo_width(self) -> int:
        return 1

    def memo_of(self, memo: np.ndarray, n: int) -> np.ndarray:
        b = np.asarray(memo, dtype=np.int64)
        if b.shape != (n,):
            raise ValueError(f"memo has one code per row ({n}), not shape {b.shape}")
        return b

    def irr_draws(self) -> int:
        return 1

    def irr(self, memo: np.ndarray, u: np.ndarray) -> np.ndarray:
        # keep the memoized code with probability p2, else a uniform other code (one uniform:
        # u < p2 keeps, else the other is floor((u-p2)/(1-p2) (d-1)) places on)
        other = np.clip(((u - self.p2) / (1 - self.p2) * (self.d - 1)).astype(np.int64), 0, self.d - 2)
        return np.where(u < self.p2, memo, (memo + 1 + other) % self.d)

    def epsilon_by_counts(self, t: int) -> float:
        """Over the counts ``a`` of reports equal to x, ``b`` equal to x' and ``m = t - a - b``
        to the other ``d - 2`` values (none when d = 2): the ratio falls as ``S_o =
        sum_{others} r^(c_v)`` grows (when it exceeds 1), and for given m the smallest ``S_o``
        spreads m evenly (``r^c`` is convex), so the maximum is over ``(a, b)`` with that spread."""
        lr = math.log(self.p2 / self.q2)
        a, b = np.meshgrid(np.arange(t + 1), np.arange(t + 1), indexing="ij")
        m = t - a - b
        ok = m >= 0
        if self.d == 2:
            ok &= m == 0
            s_other = np.zeros(m.shape)
        else:
            k = self.d - 2
            mm = np.maximum(m, 0)
            hi = mm % k                                   # values with ceil(m/k) reports, the rest floor
            base = mm // k
            s_other = (k - hi) * np.exp(base * lr) + hi * np.exp((base + 1) * lr)
        ra, rb = np.exp(a * lr), np.exp(b * lr)
        S = ra + rb + s_other
        num = (self.p1 - self.q1) * ra + self.q1 * S
        den = (self.p1 - self.q1) * rb + self.q1 * S
        return float(np.log(num[ok] / den[ok]).max())


class LongitudinalUE(LongitudinalOracle):
    """The unary-encoding kinds: d bits, the PRR's independent given x, the IRR's
    independent given the PRR's: the report's bits are independent given x."""

    def pairs(self) -> PairProbs:
        p, q = self.support_probs()
        return PairProbs(p * q, q * q, q * q)

    def likelihood_pair(self) -> tuple[float, float]:
        p, q = self.support_probs()
        return p * (1 - q), (1 - p) * q

    def guessing(self, w: np.ndarray) -> Guessing:
        g = unary(*self.support_probs(), w)
        return dataclasses.replace(g, evaluation=g.evaluation + " (one collection's bits)")

    def prr_covariance(self, f: np.ndarray) -> np.ndarray:
        p1, q1 = self.p1, self.q1                             # B's bits: independent given x
        return np.diag(f * p1 * (1 - p1) + (1 - f) * q1 * (1 - q1))

    def memo_width(self) -> int:
        return -(-self.d // 4)

    def memo_of(self, memo: np.ndarray, n: int) -> np.ndarray:
        memo = np.asarray(memo, dtype=np.uint8)
        if memo.shape != (n, self.packed_width):
            raise ValueError(f"memo has shape (n, {self.packed_width}) of packed bits, not {memo.shape}")
        return memo

    def irr_draws(self) -> int:
        return self.d

    def irr(self, memo: np.ndarray, u: np.ndarray) -> np.ndarray:
        # bit v is 1 with probability p2 if the memoized bit is 1, q2 if it is 0
        bits = np.unpackbits(memo, axis=1, count=self.d, bitorder="little").astype(bool)
        return np.packbits(u < np.where(bits, self.p2, self.q2), axis=1, bitorder="little")

    def other_term(self, t: float, not_p1: float, not_q1: float) -> float:
        # bit x' off in every report: rho^t, rho = (1-p2)/(1-q2)
        if math.isinf(t):
            return math.log(not_q1) - math.log(not_p1)
        not_p2, not_q2 = self.irr_complements()
        return log_ratio(self.q1, not_q1, self.p1, not_p1, t * (math.log(not_p2) - math.log(not_q2)))

    def epsilon_by_counts(self, t: int) -> float:
        """Per bit, its number of ones ``s`` in ``0..t``: ``max_s log(g_p1(s)/g_q1(s)) + max_s
        log(g_q1(s)/g_p1(s))`` with ``g_pi(s) = pi p2^s (1-p2)^(t-s) + (1-pi) q2^s (1-q2)^(t-s)``
        (bits x and x'; the others' laws do not depend on x)."""
        s = np.arange(t + 1, dtype=float)
        log_p1 = s * math.log(self.p2) + (t - s) * math.log1p(-self.p2)
        log_p0 = s * math.log(self.q2) + (t - s) * math.log1p(-self.q2)

        def log_g(pi: float) -> np.ndarray:
            return np.logaddexp(math.log(pi) + log_p1, math.log1p(-pi) + log_p0)

        diff = log_g(self.p1) - log_g(self.q1)
        return float(diff.max() + (-diff).max())


class _SymmetricIRR(LongitudinalUE):
    """An IRR of SUE's form, ``q2 = 1 - p2``."""

    def irr_epsilon(self) -> float:
        return 2 * math.log(self.p2 / self.q2)

    def irr_complements(self) -> tuple[float, float]:
        return self.q2, self.p2


class LSUE(_SymmetricIRR):
    """L-SUE: SUE at eps_perm, then SUE (RAPPOR's IRR, ``p2 + q2 = 1``).  Symmetric rounds
    give ``q* = 1 - p*``, so ``p* = s/(s+1)``, ``s = e^(eps_1/2)`` (SUE at eps_1) and ``p2 =
    (p* - q1)/(p1 - q1) = (s h - 1)/((s + 1)(h - 1))``, ``h = e^(eps_perm/2)``."""

    kind = "l_sue"
    ROUNDS = ("sue", "sue")

    @classmethod
    def round2(cls, d: int, eps_perm: float, eps_1: float, calibration: str) -> tuple[float, float]:
        # q2 = 1 - p2 by its own expression: not 0 where p2 is 1 in doubles
        s = math.exp(eps_1 / 2)
        den = (s + 1) * -math.expm1(-eps_perm / 2)
        return _expm1_over((eps_1 + eps_perm) / 2, eps_perm / 2) / den, -math.expm1((eps_1 - eps_perm) / 2) / den


class LOSUE(_SymmetricIRR):
    """L-OSUE: OUE at eps_perm, then SUE (``q2 = 1 - p2``): ``p* = 1/2``, so ``q* =
    1/(a+1)`` (OUE at eps_1, ``a = e^eps_1``) and ``p2 = (a E - 1)/((a + 1)(E - 1))``."""

    kind = "l_osue"
    ROUNDS = ("oue", "sue")

    @classmethod
    def round2(cls, d: int, eps_perm: float, eps_1: float, calibration: str) -> tuple[float, float]:
        # q1 p2 + (1-q1)(1-p2) = 1/(a+1)
        den = (math.exp(eps_1) + 1) * -math.expm1(-eps_perm)
        return _expm1_over(eps_1 + eps_perm, eps_perm) / den, -math.expm1(eps_1 - eps_perm) / den


class LOUE(LongitudinalUE):
    """L-OUE: OUE at eps_perm, then OUE (``p2 = 1/2``): ``p* = 1/4 + q2/2``, a quadratic in
    ``q2``; its root in ``[0, 1/2)`` is ``q2 = (3Ea - E - a - 1 - sqrt(D)) / (4E(a-1))``,
    ``D = 9E^2a^2 - 14E^2a + 9E^2 + 6Ea^2 - 20Ea + 6E + a^2 + 2a + 1`` (multi-freq-ldpy
    writes ``sqrt(D)/4`` as ``1.11803398874989 sqrt(D/20)``).  It is >= 0 only for
    ``eps_1 <=`` :meth:`max_eps_1`."""

    kind = "l_oue"
    ROUNDS = ("oue", "oue")

    @classmethod
    def max_eps_1(cls, eps_perm: float) -> float:
        """The IRR keeps a memoized 1 with probability 1/2 only: its ``q2 = 0`` gives ``p* =
        1/4, q* = q1/2`` and so ``eps_1 <= log((2 e^eps_perm + 1) / 3)`` (multi-freq-ldpy
        raises "Probabilities are negative" beyond it)."""
        return math.log((2 * math.exp(eps_perm) + 1) / 3)

    @classmethod
    def check_eps_1(cls, eps_perm: float, eps_1: float) -> None:
        top = cls.max_eps_1(eps_perm)
        if eps_1 > top:
            raise ValueError(f"l_oue cannot reach eps_1 = {eps_1} at eps_perm = {eps_perm}: its IRR's q2 would be "
                             f"negative; eps_1 <= log((2 e^eps_perm + 1)/3) = {top:.6g} (or use l_osue)")

    @classmethod
    def round2(cls, d: int, eps_perm: float, eps_1: float, calibration: str) -> tuple[float, float]:
        # the root of 4E(a-1) q2^2 - (6Ea - 2E - 2a - 2) q2 + 2E - 3a + 1 = 0, (B - sqrt(D)) /
        # (4E(a-1)) with B = 3Ea - E - a - 1 and B^2 - D = 4E(a-1)(3a - 1 - 2E): as
        # (2E - 3a + 1) / (B + sqrt(D)), and over E: c / (b + sqrt(b^2 + 4 (a-1) c))
        u, am1 = math.exp(-eps_perm), math.expm1(eps_1)
        both = _expm1_over(eps_1 + eps_perm, eps_perm)        # (a E - 1) / E
        gone = -math.expm1(-eps_perm)                         # (E - 1) / E
        c = (2 * math.expm1(eps_perm) - 3 * am1) * u          # (2E - 3a + 1) / E
        b = 3 * both - gone - am1 * u                         # B / E
        root = b * math.sqrt(max(1 - 4 * (am1 / b) * (c / b), 0.0))   # sqrt(D) / E; b > 0, b^2 may overflow
        return 0.5, c / (b + root)

    def irr_epsilon(self) -> float:
        return math.log((1 - self.q2) / self.q2) if self.q2 > 0 else math.inf
