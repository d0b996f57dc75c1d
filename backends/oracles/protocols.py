"""The pure frequency oracles, one class per protocol (Wang, Blocki, Li and Jha 2017).

=======  =====================================  ======================================
kind     report                                 support set
=======  =====================================  ======================================
grr      a category (k-ary randomized response)  ``{y}``
sue      d bits (basic one-time RAPPOR)          the bits that are 1
oue      d bits (optimized unary encoding)       the bits that are 1
blh      (hash seed s, v in [2])                 ``{u : H_s(u) = v}``
olh      (hash seed s, v in [g]), g = e^eps + 1  ``{u : H_s(u) = v}``
ss       a k-subset (subset selection)           the subset
hr       j in [K] (Hadamard response)            ``{u : H[u+1, j] = +1}``
adp      grr or oue, whichever has the smaller variance (multi-freq-ldpy's ADP)
=======  =====================================  ======================================

Each class declares its report law once (:class:`~privspec.backends.oracles.protocol.Oracle`
says what), in the algebra ``A`` of the core (:mod:`privspec.backends.core.algebra`); the
reports' layouts are shared by kinds of report: category codes (:class:`CodeReports`),
packed bits (:class:`PackedReports`), hashed values (:class:`LocalHashing`).
"""
from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from privspec.backends.core.algebra import Float
from privspec.backends.core.frequency import grr_gap, grr_probs
from privspec.backends.core.rowrandom import RowRandom
from privspec.backends.data.engines.pandas import string_buffers
from privspec.backends.oracles import sampling as S
from privspec.backends.oracles.guessing import Guessing, by_channel, hashed, subset_selection, unary
from privspec.backends.oracles.protocol import Oracle, PairProbs

__all__ = ["GRR", "SUE", "OUE", "BLH", "OLH", "SS", "HR", "ADP", "hash_values", "DEC"]

#: a decimal code in a report's text
DEC = r"(?:0|[1-9][0-9]{0,17})"


def _int_param(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


# ---- layouts of reports ----------------------------------------------------------------------------
class CodeReports(Oracle):
    """Reports that are one integer code in ``[0, key_range)`` (grr, hr)."""

    @property
    @abstractmethod
    def key_range(self) -> int:
        """How many report codes there are."""

    def distinct_supports(self, reports: Any, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        uniq, inv = np.unique(np.asarray(reports, dtype=np.int64), return_inverse=True)
        return self.membership(uniq), np.bincount(inv.ravel(), weights=w, minlength=len(uniq))

    def format(self, reports: Any) -> np.ndarray:
        return np.asarray(reports, dtype=np.int64).astype(str)

    def guessing(self, w: np.ndarray) -> Guessing:
        # few reports: the channel of every code (the likelihood pair normalized per category)
        a, b = self.likelihood_pair()
        L = np.where(self.membership(np.arange(self.key_range)), a, b)
        return by_channel(L / L.sum(axis=0, keepdims=True), w, self.form())

    def parse(self, s: Any, is_str: np.ndarray) -> tuple[Any, np.ndarray]:
        ok = is_str & s.str.fullmatch(DEC).fillna(False).to_numpy(dtype=bool)
        vals = np.full(len(s), -1, dtype=np.int64)
        vals[ok] = pd.to_numeric(s[ok]).to_numpy(dtype=np.int64)
        ok &= (vals >= 0) & (vals < self.key_range)
        return vals[ok], np.flatnonzero(~ok)

    def small_key(self, reports: Any) -> np.ndarray | None:
        """One integer per report (the code)."""
        return np.asarray(reports, dtype=np.int64)

    def keyed_reports(self, keys: np.ndarray) -> np.ndarray:
        """The reports of :meth:`small_key`'s keys."""
        return keys


class PackedReports(Oracle):
    """Reports that are packed bits, one per category (``np.packbits(..., axis=1,
    bitorder="little")``, shape ``(n, ceil(d/8))`` uint8: bit ``v`` of the support in byte
    ``v // 8``, bit ``v % 8``): unary encoding, subset selection."""

    def counts(self, reports: Any, w: np.ndarray | None) -> np.ndarray:
        return S.packed_counts(reports, self.d, w)

    def membership(self, reports: Any) -> np.ndarray:
        return np.unpackbits(np.asarray(reports), axis=1, count=self.d, bitorder="little").astype(bool)

    def distinct_supports(self, reports: Any, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        uniq, inv = np.unique(np.asarray(reports), axis=0, return_inverse=True)
        sets = np.unpackbits(uniq, axis=1, count=self.d, bitorder="little").astype(bool)
        return sets, np.bincount(inv.ravel(), weights=w, minlength=len(uniq))

    @property
    def key_range(self) -> int:
        return 1 << (8 * self.packed_width)

    def small_key(self, reports: Any) -> np.ndarray | None:
        """One integer per report where the bits fit 8 bytes, read big-endian (byte 0
        highest, so that unary encoding's keys are in the order of its texts), else None."""
        if self.packed_width > 8:
            return None
        packed = np.zeros((len(reports), 8), dtype=np.uint8)
        packed[:, 8 - self.packed_width:] = reports
        return packed.view(">u8").ravel().astype(np.uint64)

    def keyed_reports(self, keys: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(keys.astype(">u8")).view(np.uint8).reshape(-1, 8)[:, 8 - self.packed_width:]

    def unhex(self, chars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The packed reports of the valid rows of hex text (ASCII codes, ``(m, 2 ceil(d/8))``)
        and which rows are valid (:func:`~privspec.backends.oracles.sampling.unhex`)."""
        return S.unhex(self.d, chars)


# ---- generalized randomized response ---------------------------------------------------------------
class GRR(CodeReports):
    """k-ary randomized response: the report is a category, the true one with probability
    ``p' = e^eps/(e^eps + d - 1)``.  Reports: int codes; text: the decimal code."""

    kind = "grr"

    def form(self) -> str:
        return "a category code 0 .. d-1"

    @property
    def key_range(self) -> int:
        return self.d

    def probs(self, A: Any) -> tuple[Any, Any]:
        eps, d, _, _ = self.params(A)
        return grr_probs(A, eps, d)

    def gap(self) -> float:
        return grr_gap(self.epsilon, self.d)

    def complements(self) -> tuple[float, float]:
        e, d = math.exp(self.epsilon), self.d
        return (d - 1) / (e + d - 1), (e + d - 2) / (e + d - 1)

    def pairs(self, A: Any, p: Any, q: Any) -> PairProbs:
        zero = A.ratio(0, 1)        # the support is one category
        return PairProbs(zero, zero, zero)

    def likelihood_terms(self, A: Any, p: Any, q: Any, not_p: Any, not_q: Any) -> tuple[list, list]:
        _, d, _, _ = self.params(A)
        return [p], [not_p / (d - 1)]                 # p' vs q' = (1 - p')/(d - 1)

    def likelihood_pair(self) -> tuple[float, float]:
        return self.probs(Float)                      # the channel itself (as multi-freq-ldpy)

    def ibu_system(self, M: np.ndarray, c: np.ndarray, a: float, b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # the d x d channel and the report frequencies over all d codes, built and
        # multiplied as multi-freq-ldpy does (A symmetric: A, not A^T), so that the
        # iterates agree with theirs to the last bits
        obs = np.zeros(self.d)
        np.add.at(obs, np.argmax(M, axis=1), c)       # rows need not be distinct
        obs = obs / obs.sum()
        L = np.eye(self.d)
        L[L == 1] = a
        L[L == 0] = b
        return L, L, obs

    def sample(self, x: np.ndarray, rng: RowRandom) -> np.ndarray:
        p, _ = self.probs(Float)
        out = np.empty(len(x), dtype=np.int64)
        for lo, hi, sub in S.pieces(rng, 1):    # blocks that stay in cache (as for every kind)
            out[lo:hi] = S.grr_from_uniform(x[lo:hi], sub.random(hi - lo), self.d, p)
        return out

    def counts(self, reports: Any, w: np.ndarray | None) -> np.ndarray:
        c = np.bincount(reports.astype(np.int64), weights=w, minlength=self.d)
        return c if w is not None else c.astype(np.int64)

    def membership(self, reports: Any) -> np.ndarray:
        r = np.asarray(reports, dtype=np.int64)
        return r[:, None] == np.arange(self.d)[None, :]


# ---- unary encoding --------------------------------------------------------------------------------
class UnaryEncoding(PackedReports):
    """d bits, independent given the truth: its bit 1 with probability p*, the others q*.
    Text: the packed bits as lower-case hex (``2 ceil(d/8)`` characters, byte 0 first)."""

    HEX_TEXT = True

    def form(self) -> str:
        return f"the {self.d} bits as {2 * self.packed_width} hexadecimal digits (bit v of byte v // 8)"

    def pairs(self, A: Any, p: Any, q: Any) -> PairProbs:
        return PairProbs(p * q, q * q, q * q)         # bits independent given x

    def likelihood_terms(self, A: Any, p: Any, q: Any, not_p: Any, not_q: Any) -> tuple[list, list]:
        return [p, not_q], [not_p, q]                 # the x-th bit: p vs q if 1 (1-p vs 1-q if 0)

    def sample(self, x: np.ndarray, rng: RowRandom) -> np.ndarray:
        p, q = self.probs(Float)
        return S.unary_reports(rng, x, self.d, p, q)

    def guessing(self, w: np.ndarray) -> Guessing:
        return unary(*self.probs(Float), w)

    def format(self, reports: Any) -> np.ndarray:
        packed = np.asarray(reports, dtype=np.uint8)
        return S.hex_chars(packed).view(f"S{2 * packed.shape[1]}").ravel().astype(str)

    def parse(self, s: Any, is_str: np.ndarray) -> tuple[Any, np.ndarray]:
        nb = self.packed_width
        ok = is_str & s.str.fullmatch(f"[0-9a-f]{{{2 * nb}}}").fillna(False).to_numpy(dtype=bool)
        good = s[ok].to_numpy(dtype=object)
        chars = np.frombuffer("".join(good).encode("ascii"), dtype=np.uint8).reshape(len(good), 2 * nb)
        packed, valid = self.unhex(chars)
        ok[np.flatnonzero(ok)[~valid]] = False
        return packed, np.flatnonzero(~ok)


class SUE(UnaryEncoding):
    """Symmetric unary encoding (basic one-time RAPPOR): ``p* = e^{eps/2}/(e^{eps/2} + 1)``,
    ``q* = 1 - p*``."""

    kind = "sue"

    def probs(self, A: Any) -> tuple[Any, Any]:
        # q* = 1/(h + 1), not the peers' 1 - h/(h + 1): the same to rounding where q* is not small,
        # and not 0 where it is (epsilon = 700: h = e^350)
        eps, _, _, _ = self.params(A)
        h = A.exp(eps / 2)
        return h / (h + 1), 1 / (h + 1)

    def gap(self) -> float:                           # (h - 1)/(h + 1), h = e^(eps/2)
        return math.expm1(self.epsilon / 2) / (math.exp(self.epsilon / 2) + 1)

    def complements(self) -> tuple[float, float]:
        p, q = self.probs(Float)
        return q, p


class OUE(UnaryEncoding):
    """Optimized unary encoding: ``p* = 1/2``, ``q* = 1/(e^eps + 1)``."""

    kind = "oue"

    def probs(self, A: Any) -> tuple[Any, Any]:
        eps, _, _, _ = self.params(A)
        return A.ratio(1, 2), 1 / (A.exp(eps) + 1)

    def gap(self) -> float:                           # 1/2 - 1/(e + 1)
        e = math.exp(self.epsilon)
        return math.expm1(self.epsilon) / (2 * (e + 1))

    def complements(self) -> tuple[float, float]:
        e = math.exp(self.epsilon)
        return 0.5, e / (e + 1)


# ---- Hadamard response -----------------------------------------------------------------------------
class HR(CodeReports):
    """Hadamard response (pure-ldp's high-privacy variant): the report is ``j in [K]``,
    in ``C_x = {j : H[x+1, j] = +1}`` with probability ``p* = e^eps/(e^eps + 1)``;
    ``q* = 1/2`` (rows of H orthogonal).  Text: the decimal index."""

    kind = "hr"

    def form(self) -> str:
        return f"an index j in 0 .. {self.K - 1}"

    def parameter_facts(self) -> dict:
        return {"K": self.K}

    @property
    def key_range(self) -> int:
        return self.K

    def probs(self, A: Any) -> tuple[Any, Any]:
        # p*: j in C_x; q*: |C_x & C_v| = K/4 = |C_x^c & C_v| (rows of H orthogonal) -> 1/2
        eps, _, _, _ = self.params(A)
        e = A.exp(eps)
        return e / (e + 1), A.ratio(1, 2)

    def gap(self) -> float:                           # e/(e + 1) - 1/2
        e = math.exp(self.epsilon)
        return math.expm1(self.epsilon) / (2 * (e + 1))

    def complements(self) -> tuple[float, float]:
        return 1 / (math.exp(self.epsilon) + 1), 0.5

    def pairs(self, A: Any, p: Any, q: Any) -> PairProbs:
        half = A.ratio(1, 2)
        return PairProbs(p * half, half * half, p * half)

    def xor(self, A: Any) -> tuple[Any, np.ndarray, np.ndarray]:
        """For each pair ``v != w`` the category ``x`` with ``(x+1) = (v+1) XOR (w+1)`` (the
        third row of H whose product with rows v+1, w+1 is row 0), where it exists:
        ``(both-in-support probability, index matrix, where it exists)``."""
        p, q = self.probs(A)
        idx = np.arange(self.d) + 1
        z = (idx[:, None] ^ idx[None, :]) - 1
        return self.pairs(A, p, q).xor, z, (z >= 0) & (z < self.d)

    def likelihood_terms(self, A: Any, p: Any, q: Any, not_p: Any, not_q: Any) -> tuple[list, list]:
        return [p], [not_p]                           # p/(K/2) vs (1-p)/(K/2)

    def sample(self, x: np.ndarray, rng: RowRandom) -> np.ndarray:
        # pure-ldp's high-privacy HR: out1 uniform on [K]; out2 = out1 with the highest bit
        # of x+1 flipped (exactly one of the two is in C_x); the one in C_x with prob p
        p, _ = self.probs(Float)
        out = np.empty(len(x), dtype=np.int64)
        for lo, hi, sub in S.pieces(rng, 2):
            out1 = sub.integers(0, self.K, size=hi - lo)
            u = sub.random(hi - lo)
            code = x[lo:hi] + 1
            high = np.left_shift(1, np.frexp(code.astype(float))[1] - 1).astype(np.int64)
            out2 = out1 ^ high
            in1 = S.parity(out1 & code) == 0
            out[lo:hi] = np.where(u < p, np.where(in1, out1, out2), np.where(in1, out2, out1))
        return out

    def counts(self, reports: Any, w: np.ndarray | None) -> np.ndarray:
        # a weighted histogram, then a fast Walsh-Hadamard transform: C_u = (N + (H h)[u+1]) / 2
        hist = np.bincount(reports.astype(np.int64), weights=w, minlength=self.K)
        c = (hist.sum() + S.fwht(hist)[1:self.d + 1]) / 2
        return c if w is not None else np.rint(c).astype(np.int64)

    def membership(self, reports: Any) -> np.ndarray:
        return S.hadamard_member(np.asarray(reports), self.d)


# ---- local hashing ---------------------------------------------------------------------------------
def hash_values(o: "LocalHashing", seed: np.ndarray, categories: np.ndarray | None = None) -> np.ndarray:
    """``H_s(u)`` for each seed (rows) and category (columns): our local-hashing family.

    A seed is ``s = a + P b + P^2 c`` with ``a, b, c`` in ``[0, P)``, ``P`` =
    :data:`~privspec.backends.oracles.sampling.LH_PRIME` = 2^19 - 1 (so ``s < 2^57``: one
    uint64), and

        H_s(u) = ((a + b u + c u^2) mod P) mod g.

    The quadratic polynomials over the field Z_P are exactly 3-wise independent: for
    distinct ``u1, u2, u3 < P`` the values ``(a + b u + c u^2) mod P`` are independent and
    uniform on Z_P when ``(a, b, c)`` is (Vandermonde).  Reducing mod g makes each value
    ``t`` of ``[g]`` come with probability ``pi_t = #{h < P : h = t mod g} / P``, within
    ``1/P`` (1.9e-6) of ``1/g``.  That does not move p* (the GRR over [g] keeps the hashed
    value with probability p' whatever its law) nor epsilon (given the seed it is GRR);
    it moves ``q* = q' + (p'-q') sum_t pi_t^2 = 1/g + (p'-q') sum_t (pi_t - 1/g)^2`` by at
    most ``g / P^2`` (about 1.5e-11 for g = 4): the deviation is second order, so the
    closed form ``q* = 1/g`` holds to ~1e-11 (and the pair probabilities likewise).
    The sampler draws ``a, b, c`` uniform on Z_P (to 2^-53).

    Evaluation is in float64, exactly (:func:`~privspec.backends.oracles.sampling.hash_float`)
    on (reports x categories) blocks, no Python loop per respondent.

    Examples
    --------
    >>> o = OLH(5, 1.0, g=4)
    >>> hash_values(o, np.array([1 + 2 * S.LH_PRIME]))     # a = 1, b = 2, c = 0: (1 + 2u) mod 4
    array([[1, 3, 1, 3, 1]])
    """
    u = np.arange(o.d) if categories is None else np.asarray(categories)
    return S.hash_float(o.g, seed, u).astype(np.int64)


def _lh_fields(reports: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(reports["seed"]), np.asarray(reports["value"], dtype=np.int64)


class LocalHashing(Oracle):
    """Local hashing: the report is ``(seed s, v)``, ``v`` a GRR over ``[g]`` of
    ``H_s(x)`` (:func:`hash_values`).  Reports: a structured array with fields ``seed``
    (uint64) and ``value`` (int64); text: ``"seed:value"``."""

    PARAMS = ("g",)
    DECIMAL_TEXT = True

    @classmethod
    @abstractmethod
    def default_g(cls, epsilon: float) -> int:
        """The hash range when the spec gives none."""

    @classmethod
    def build(cls, d: int, epsilon: float, g: Any = None, k: Any = None) -> "LocalHashing":
        if d > S.LH_PRIME:
            raise ValueError(f"local hashing here hashes categories in the field of {S.LH_PRIME}: d <= {S.LH_PRIME}")
        default = g is None
        if default:
            g = cls.default_g(epsilon)
        if not _int_param(g) or g < 2:
            raise ValueError(f"the hash range g must be an integer >= 2, not {g!r}")
        if g > S.LH_PRIME:
            # hashes are reduced mod LH_PRIME first: values of [g] beyond it never occur, and
            # q* = 1/g (the analysis, the estimator) would be false
            why = f" (the default round(e^epsilon) + 1 at epsilon = {epsilon:g})" if default else ""
            shown = f"{int(g):,}" if g < 10 ** 15 else f"about 10^{int(int(g).bit_length() * math.log10(2))}"
            raise ValueError(f"the hash range g = {shown}{why} is beyond the hash field of local hashing: "
                             f"g <= {S.LH_PRIME}; give a smaller g (olh(x, epsilon = e, g = 1000)), or use grr, "
                             "which needs no hash")
        return cls(d, epsilon, g=int(g))

    def form(self) -> str:
        return "SEED:VALUE (the hash seed, then the hashed value in 0 .. g-1)"

    def probs(self, A: Any) -> tuple[Any, Any]:
        # p*: the GRR over [g] keeps the hashed value; q*: another category hashes to the
        # reported value with probability 1/g (see hash_values for the rounding)
        eps, _, g, _ = self.params(A)
        e = A.exp(eps)
        return e / (e + g - 1), 1 / g

    def gap(self) -> float:                           # e/(e + g - 1) - 1/g
        g, e = self.g, math.exp(self.epsilon)
        return (g - 1) / g * math.expm1(self.epsilon) / (e + g - 1)

    def complements(self) -> tuple[float, float]:
        g = self.g
        return (g - 1) / (math.exp(self.epsilon) + g - 1), (g - 1) / g

    def pairs(self, A: Any, p: Any, q: Any) -> PairProbs:
        # 3-wise independent hashes: given x = v, Pr(V = H(v) = H(w)) = p'/g; given another x,
        # H(v), H(w) are independent of H(x) and of the noise
        _, _, g, _ = self.params(A)
        return PairProbs(p / g, 1 / g ** 2, 1 / g ** 2)

    def likelihood_terms(self, A: Any, p: Any, q: Any, not_p: Any, not_q: Any) -> tuple[list, list]:
        _, _, g, _ = self.params(A)
        return [p], [not_p / (g - 1)]                 # GRR over [g] given the seed

    def sample(self, x: np.ndarray, rng: RowRandom) -> np.ndarray:
        p, _ = self.probs(Float)
        P = S.LH_PRIME
        out = np.empty(len(x), dtype=[("seed", np.uint64), ("value", np.int64)])
        for lo, hi, sub in S.pieces(rng, 4):
            u = sub.random((hi - lo, 4))
            abc = np.minimum((u[:, :3] * P).astype(np.int64), P - 1)
            a, b, c = abc[:, 0], abc[:, 1], abc[:, 2]
            xs = x[lo:hi]
            h = ((a + b * xs + c * ((xs * xs) % P)) % P) % self.g
            out["seed"][lo:hi] = a + P * (b + P * c)
            out["value"][lo:hi] = S.grr_from_uniform(h, u[:, 3], self.g, p)
        return out

    def guessing(self, w: np.ndarray) -> Guessing:
        return hashed(lambda seed: hash_values(self, seed), S.LH_PRIME, self.g, self.probs(Float)[0], w)

    def collect(self, reports: Any) -> tuple[Any, int]:
        seed, value = _lh_fields(reports)
        return (seed, value), len(seed)

    def counts(self, reports: Any, w: np.ndarray | None) -> np.ndarray:
        seed, value = reports
        return S.hashed_counts(seed, value, self.d, self.g, w)

    def membership(self, reports: Any) -> np.ndarray:
        seed, value = _lh_fields(reports)
        return hash_values(self, seed) == value[:, None]

    def distinct_supports(self, reports: Any, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        seed, value = reports
        m = len(seed)
        packed = np.concatenate([np.packbits(hash_values(self, seed[lo:hi]) == value[lo:hi, None], axis=1,
                                             bitorder="little")
                                 for lo, hi in S.row_blocks(m, self.d)]) if m else \
            np.zeros((0, self.packed_width), np.uint8)
        uniq, inv = np.unique(packed, axis=0, return_inverse=True)
        sets = np.unpackbits(uniq, axis=1, count=self.d, bitorder="little").astype(bool)
        return sets, np.bincount(inv.ravel(), weights=w, minlength=len(uniq))

    def format(self, reports: Any) -> np.ndarray:
        seed, value = _lh_fields(reports)
        return np.char.add(np.char.add(seed.astype(str), ":"), value.astype(str))

    def text_buffers(self, reports: Any) -> tuple[np.ndarray, np.ndarray]:
        """The texts of :meth:`format` as one buffer of ASCII codes and the rows' offsets in it
        (:func:`.sampling.decimal_pairs`): an Arrow string column's buffers."""
        seed, value = _lh_fields(reports)
        return S.decimal_pairs(seed, value)

    def parse_buffers(self, data: np.ndarray, offsets: np.ndarray) -> tuple[Any, np.ndarray]:
        """The reports of the texts of rows ``offsets[i] .. offsets[i+1]`` of ``data`` (ASCII
        codes, :meth:`text_buffers`' form), of the valid rows only, and which rows are valid
        (``SEED:VALUE``, decimal without leading zeros, ``SEED < LH_PRIME^3``, ``VALUE < g``)."""
        seed, value, ok = S.parse_decimal_pairs(data, offsets)
        ok &= (seed < S.LH_PRIME ** 3) & (value < self.g)
        out = np.empty(int(ok.sum()), dtype=[("seed", np.uint64), ("value", np.int64)])
        out["seed"], out["value"] = seed[ok].astype(np.uint64), value[ok]
        return out, ok

    def parse(self, s: Any, is_str: np.ndarray) -> tuple[Any, np.ndarray]:
        # on the bytes of the Arrow column: no Python string per text
        data, offsets = string_buffers(pa.array(s.array, type=pa.large_string()))
        reports, ok = self.parse_buffers(data, offsets)
        if not is_str.all():
            reports, ok = reports[is_str[ok]], ok & is_str
        return reports, np.flatnonzero(~ok)


class BLH(LocalHashing):
    """Binary local hashing: ``g = 2``."""

    kind = "blh"

    @classmethod
    def default_g(cls, epsilon: float) -> int:
        return 2


class OLH(LocalHashing):
    """Optimized local hashing: ``g = int(round(e^eps)) + 1``, exactly as multi-freq-ldpy
    (``LH_Client``) and pure-ldp (``LHClient(use_olh=True)``) compute it (Python's round:
    halves to even).  Wang et al. give ``g = e^eps + 1`` (rounded)."""

    kind = "olh"

    @classmethod
    def default_g(cls, epsilon: float) -> int:
        return int(round(math.exp(epsilon))) + 1


# ---- subset selection ------------------------------------------------------------------------------
#: subset selection draws a subset by its index among all of them when there are at most
#: this many (and d <= 64: one word per subset); else its positions by draws
SS_TABLE = 1 << 20


def _ss_enumerable(o: "SS") -> bool:
    return o.d <= 64 and max(math.comb(o.d - 1, o.k - 1), math.comb(o.d - 1, o.k)) <= SS_TABLE


class SS(PackedReports):
    """Subset selection (Ye & Barg): the report is a k-subset, holding the truth with
    probability ``pi = k e^eps/(k e^eps + d - k)``, the others drawn uniformly.  Reports:
    its bitmask, packed (fixed width whatever k, smaller than k int16 codes once ``k >
    d/16``); text: the subset's codes in increasing order joined by ``|`` up to 64
    categories, beyond them the bits in hex as unary encoding's (the codes' text is read at
    every d)."""

    kind = "ss"
    PARAMS = ("k",)

    @property
    def HEX_TEXT(self) -> bool:  # type: ignore[override]
        """Reports of more than 64 categories (nearly all distinct) are written as unary
        encoding's hex and read from the rows' bytes: the codes joined by ``|`` (270 bytes at
        d = 256) were written and tallied as distinct texts (9.5x the core at d = 256)."""
        return self.packed_width > 8

    @classmethod
    def build(cls, d: int, epsilon: float, g: Any = None, k: Any = None) -> "SS":
        # multi-freq-ldpy's SS_Client rule (Ye & Barg's optimal size, rounded half to even)
        if k is None:
            k = int(max(1, np.rint(d / (np.exp(epsilon) + 1))))
        if not _int_param(k) or not 1 <= k < d:
            raise ValueError(f"the subset size k must be an integer with 1 <= k < d = {d}, not {k!r}")
        return cls(d, epsilon, k=int(k))

    def form(self) -> str:
        codes = f"{self.k} distinct category codes in increasing order joined by | (0|3|4)"
        return f"the {self.d} bits as {2 * self.packed_width} hexadecimal digits (bit v of byte v // 8), " \
               f"or {codes}" if self.HEX_TEXT else codes

    def probs(self, A: Any) -> tuple[Any, Any]:
        # p*: the true value is put in the subset; q*: v != x is in it either as one of
        # the k-1 others drawn from d-1 (x in it) or as one of k drawn from d-1 (x not in it)
        eps, d, _, k = self.params(A)
        e = A.exp(eps)
        return (k * e / (k * e + d - k),
                ((k - 1) * (k * e) + (d - k) * k) / ((d - 1) * (k * e + d - k)))

    def gap(self) -> float:                           # k (d - k) (e - 1) / ((d - 1)(k e + d - k))
        d, k, e = self.d, self.k, math.exp(self.epsilon)
        return k * (d - k) / (d - 1) * math.expm1(self.epsilon) / (k * e + d - k)

    def complements(self) -> tuple[float, float]:
        d, k = self.d, self.k
        _, q = self.probs(Float)
        return (d - k) / (k * math.exp(self.epsilon) + d - k), 1 - q

    def pairs(self, A: Any, p: Any, q: Any) -> PairProbs:
        # pi = p*: given x = v, w joins v as one of the k-1 others drawn from the d-1; given x
        # not in {v, w}: both among the k-1 others (x in S) or the k (x not in S)
        _, d, _, k = self.params(A)
        one = p * (k - 1) / (d - 1)
        if A is Float and self.d == 2:  # no third category: the case cannot happen
            return PairProbs(one, 0.0, 0.0)
        neither = (p * (k - 1) * (k - 2) + (1 - p) * k * (k - 1)) / ((d - 1) * (d - 2))
        return PairProbs(one, neither, neither)

    def likelihood_terms(self, A: Any, p: Any, q: Any, not_p: Any, not_q: Any) -> tuple[list, list]:
        _, d, _, k = self.params(A)
        return [p, d - k], [not_p, k]                 # pi / C(d-1,k-1) vs (1-pi) / C(d-1,k)

    def guessing(self, w: np.ndarray) -> Guessing:
        return subset_selection(self.probs(Float)[0], self.k, w)

    def sample(self, x: np.ndarray, rng: RowRandom) -> np.ndarray:
        return self._sample_by_table(x, rng) if _ss_enumerable(self) else self._sample_by_draws(x, rng)

    def _sample_by_table(self, x: np.ndarray, rng: RowRandom) -> np.ndarray:
        """Two uniforms per row: the truth in or out, then which subset of the others (an
        index into all of them: one lookup instead of d keys and a partition); an index
        from a 53-bit uniform is uniform to ``C(d-1, k) 2^-53``."""
        p, _ = self.probs(Float)
        n = len(x)
        out = np.zeros((n, 8), dtype=np.uint8)
        u = rng.random((n, 2))
        take = u[:, 0] < p
        masks = np.empty(n, dtype=np.uint64)
        for m, rows in ((self.k - 1, take), (self.k, ~take)):
            table = S.ss_table(self.d, m)
            pick = np.minimum((u[rows, 1] * len(table)).astype(np.int64), len(table) - 1)
            masks[rows] = table[pick]
        xs = x.astype(np.uint64)
        low = (np.uint64(1) << xs) - np.uint64(1)
        full = (masks & low) | ((masks & ~low) << np.uint64(1))   # the others' positions skip x
        full |= take.astype(np.uint64) << xs
        out[:] = full.view(np.uint8).reshape(n, 8)
        return np.ascontiguousarray(out[:, :self.packed_width])

    def _sample_by_draws(self, x: np.ndarray, rng: RowRandom) -> np.ndarray:
        """One uniform per row (the truth in or out), then the first k - 1 or k distinct of
        about ``k + k^2/(2d)`` uniform positions among the others; where ``2k > d - 1`` the
        others left out instead (fewer draws), then every other bit flipped."""
        p, _ = self.probs(Float)
        out = np.empty((len(x), self.packed_width), dtype=np.uint8)
        N = self.d - 1
        flip = 2 * self.k > N
        draws = S.draws_for(N, N - self.k + 1 if flip else self.k)
        for lo, hi, sub in S.pieces(rng, draws // 2 + 1):
            take = sub.random(hi - lo) < p
            m = np.where(take, self.k - 1, self.k)
            xs = x[lo:hi]
            bits = S.other_positions(sub, draws, xs, self.d, N - m if flip else m)
            if flip:                                   # every bit but the truth's (0 until here)
                bits ^= S.all_but_truth(self.d, xs)
            S.flip_bit(bits, xs, take)
            out[lo:hi] = bits
        return out

    def format(self, reports: Any) -> np.ndarray:
        if self.HEX_TEXT:
            return S.hex_chars(np.asarray(reports, dtype=np.uint8)).view(f"S{2 * self.packed_width}").ravel().astype(str)
        return np.asarray(self.arrow_texts(reports).to_numpy(zero_copy_only=False), dtype=str)

    def arrow_texts(self, reports: Any) -> pa.Array:
        return S.subset_texts(reports, self.d, self.k)

    def unhex(self, chars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unary encoding's reader, and a report holds exactly k categories."""
        packed, ok = S.unhex(self.d, chars)
        sized = S.popcounts(packed) == self.k
        ok[np.flatnonzero(ok)[~sized]] = False
        return packed[sized], ok

    def parse(self, s: Any, is_str: np.ndarray) -> tuple[Any, np.ndarray]:
        # the hex text (d > 64) and the codes joined by "|" (every d: what was written before,
        # and the form for d <= 64), each row by its own form
        hexed = is_str & s.str.fullmatch(f"[0-9a-f]{{{2 * self.packed_width}}}").fillna(False).to_numpy(dtype=bool) \
            if self.HEX_TEXT else np.zeros(len(is_str), dtype=bool)
        packed = np.zeros((len(is_str), self.packed_width), dtype=np.uint8)
        ok = np.zeros(len(is_str), dtype=bool)
        for rows, read in ((hexed, lambda t: self.unhex(S.ascii_rows(t, 2 * self.packed_width))),
                           (~hexed, lambda t: S.subset_codes(t, is_str[~hexed], self.d, self.k))):
            got, valid = read(s[rows])
            ok[rows] = valid
            packed[np.flatnonzero(rows)[valid]] = got
        return packed[ok], np.flatnonzero(~ok)


# ---- the adaptive choice ---------------------------------------------------------------------------
class ADP:
    """multi-freq-ldpy's ADP: GRR or OUE, whichever has the smaller variance (``ADP_Client``:
    ``VAR_Pure(p_grr, q_grr) <= VAR_Pure(p_oue, q_oue)`` at ``n = 1, f = 0``, ties to GRR),
    written with their float expressions so that the choice agrees with theirs at the
    boundary.  In closed form: GRR iff ``d <= 3 e^eps + 2`` (Wang et al.).  Not a protocol
    of its own: :meth:`build` gives the chosen one, with ``via = "adp"``."""

    kind = "adp"
    PARAMS: tuple[str, ...] = ()

    @classmethod
    def build(cls, d: int, epsilon: float, g: Any = None, k: Any = None) -> Oracle:
        e = np.exp(epsilon)
        p_grr = e / (e + d - 1)
        q_grr = (1 - p_grr) / (d - 1)
        p_ue, q_ue = 1 / 2, 1 / (e + 1)
        # At an epsilon below float resolution p = q: both are inf or NaN, the choice is then
        # OUE as theirs is, and the epsilon is refused later (B416); no warning on the way.
        with np.errstate(divide="ignore", invalid="ignore"):
            var_grr = q_grr * (1 - q_grr) / (1 * (p_grr - q_grr) ** 2) + 0 * (1 - p_grr - q_grr) / (1 * (p_grr - q_grr))
            var_ue = q_ue * (1 - q_ue) / (1 * (p_ue - q_ue) ** 2) + 0 * (1 - p_ue - q_ue) / (1 * (p_ue - q_ue))
        return (GRR if var_grr <= var_ue else OUE)(d, epsilon, via="adp")
