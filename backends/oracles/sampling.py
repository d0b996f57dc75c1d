"""The report machinery of the frequency oracles: per-row sampling primitives, hashing,
Hadamard sets, packed bits, all in cache-sized row blocks.

What every protocol (:mod:`privspec.backends.oracles.protocols`) draws and counts with:
GRR from one uniform, unary encoding's independent bits (dense, 8-bit lanes with exact
ties, or sparse), uniform subsets of the other categories (first distinct draws, or keys),
the local-hashing family (:data:`LH_PRIME`), Hadamard response's sets and transform, the
support counts of packed bits and their hex text.  Every loop runs over row blocks of
``_CHUNK`` elements, and row randomness depends on the row index and draw number alone
(:class:`~privspec.backends.core.rowrandom.RowRandom`), so cutting rows changes nothing.
"""
from __future__ import annotations

import functools
import itertools
import math
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.backends.core.rowrandom import RowRandom

#: the prime field of the local-hashing family (a Mersenne prime, 2^19 - 1): see :func:`hash_float`
LH_PRIME = (1 << 19) - 1
#: elements (rows x categories) handled at once by the chunked loops: 256 Ki (2 MB of words: small
#: blocks stay in cache and are reused by the allocator; 32 MB blocks ran 1.5-3 times slower)
_CHUNK = 1 << 18
#: the same for local hashing's evaluation (its float passes run in L2 cache: 256 KB blocks)
_LH_CHUNK = 1 << 15


def row_blocks(m: int, per_row: int) -> Iterator[tuple[int, int]]:
    """``(lo, hi)``: blocks of ``m`` rows holding about ``_CHUNK`` elements each (``per_row``
    elements per row)."""
    step = max(1, _CHUNK // max(per_row, 1))
    for lo in range(0, m, step):
        yield lo, min(m, lo + step)


# ---- local hashing ---------------------------------------------------------------------------------
def coefficients(seed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A seed's ``(a, b, c)``: ``s = a + P b + P^2 c`` (:func:`hash_float`)."""
    s = np.asarray(seed).astype(np.int64)
    P = LH_PRIME
    return s % P, (s // P) % P, s // (P * P)


def hash_float(g: int, seed: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Our local-hashing family in float64 (:func:`privspec.backends.oracles.protocols.hash_values`),, exactly: ``h = a + b u + c (u^2 mod P) < 2^40`` is an
    exact double; ``floor(h / P)`` is exact because a correctly rounded quotient is an
    integer exactly when ``h`` is a multiple of ``P`` and is otherwise ``>= 1/P`` from
    one, far beyond its rounding (``2^21 2^-53``); likewise ``mod g``.  Float division is
    vectorized where int64 remainders are not (4-5 times faster)."""
    a, b, c = (v.astype(float)[:, None] for v in coefficients(np.asarray(seed).ravel()))
    u = np.asarray(u, dtype=np.int64)
    uf, u2 = u.astype(float), ((u * u) % LH_PRIME).astype(float)
    h = b * uf                                   # in place, two buffers: the passes are memory bound
    t = c * u2
    h += t
    h += a
    for mod in (LH_PRIME, g):
        np.divide(h, mod, out=t)
        np.floor(t, out=t)
        t *= mod
        h -= t
    return h


def hadamard_member(j: np.ndarray, d: int) -> np.ndarray:
    """``M[i, u]`` = True when report ``j[i]`` is in ``C_u`` (H[u+1, j] = +1: even parity of
    ``(u+1) & j``)."""
    x = np.asarray(j, dtype=np.int64)[:, None] & (np.arange(d, dtype=np.int64) + 1)[None, :]
    return parity(x) == 0


def parity(x: np.ndarray) -> np.ndarray:
    """Parity of the set bits of non-negative int64 values (xor-fold)."""
    x = x.copy()
    for s in (32, 16, 8, 4, 2, 1):
        x ^= x >> s
    return x & 1


def fwht(a: np.ndarray) -> np.ndarray:
    """Fast Walsh-Hadamard transform in natural (Sylvester) order: ``H a`` with ``H[i, j] =
    (-1)^popcount(i & j)``, ``O(K log K)``."""
    a = np.array(a, dtype=float)
    K_ = len(a)
    h = 1
    while h < K_:
        a = a.reshape(-1, 2, h)
        a = np.concatenate([a[:, :1] + a[:, 1:], a[:, :1] - a[:, 1:]], axis=1).reshape(-1)
        h *= 2
    return a


# ---- sampling --------------------------------------------------------------------------------------
def pieces(rng: RowRandom, per_row: int):
    """``(lo, hi, sub)`` pieces of ``rng``'s rows of at most ``_CHUNK / per_row`` rows, each
    ``sub`` a :class:`RowRandom` at the same draw number (row randomness depends on the
    row index and draw number alone, so cutting rows does not change it); ``rng`` is
    advanced past the calls made once the pieces are consumed."""
    n = len(rng)
    step = max(1, _CHUNK // max(per_row, 1))
    if n <= step:
        yield 0, n, rng
        return
    start, sub = rng._draw, rng
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        sub = RowRandom(rng.key, rng.rows[lo:hi], rng.stream, _draw=start, _attempt=rng._attempt)
        yield lo, hi, sub
    rng._draw, rng._last = sub._draw, sub._last


def grr_from_uniform(x: np.ndarray, u: np.ndarray, m: int, p: float) -> np.ndarray:
    """GRR over ``[m]`` from one uniform per row: keep ``x`` when ``u < p``, else ``(x + 1 +
    floor((u-p)/(1-p) (m-1))) mod m`` (uniform over the other m-1 values)."""
    if p >= 1.0:   # epsilon so large that the kept probability rounds to 1: every u < p
        return np.array(x, copy=True)
    other = np.minimum(((u - p) / (1 - p) * (m - 1)).astype(np.int64), m - 2)
    return np.where(u < p, x, (x + 1 + np.maximum(other, 0)) % m)


#: bits per lane of a random word in unary encoding's sampler (see _ue_bits)
_LANE_BITS = 8


def _coins_for(d: int, bits: int) -> int:
    """Tie coins per row in :func:`_ue_bits`: the ties' number is Binomial(d, 2^-bits);
    its mean plus four standard deviations, plus 1 (a row with more redraws)."""
    mean = d * 2.0 ** -bits
    return int(math.ceil(mean + 4 * math.sqrt(mean))) + 1


def _ue_bits(rng: RowRandom, x: np.ndarray, d: int, p: float, q: float) -> np.ndarray:
    """``(m, d)`` independent bits, bit ``x_i`` of row i 1 with probability p, the others q:
    exactly (to 2^-63), with ``d / 8`` random words per row instead of d.

    Each 64-bit word gives eight 8-bit lanes ``L`` (one per category; read as uint8
    without arithmetic, so the comparison runs at memory speed); with ``q 2^8 = t +
    frac``, a bit is 1 when ``L < t``, 0 when ``L > t`` and, on a tie ``L = t``
    (probability 2^-8), 1 with probability ``frac``: ``Pr(1) = t/2^8 + frac/2^8 = q``.
    The ties' coins (:func:`_coins_for` per row: about ``d/256 + 4 sqrt(d/256) + 1``
    words) and the true value's bit (``word < p 2^63``) come from more words per row; a
    row with more ties than coins (well under one in 10^4) redraws a word per category
    with :meth:`RowRandom.retry`, which depends on the row alone.  So every row makes the
    same calls and its bits are a function of (seed, row, value).  (Philox costs ~4-5 ns
    a word here, most of the sampler: one word per bit made UE's sampler 3-4 times
    slower, 16-bit lanes 1.5 times.)

    The full 64-bit words come from ``RowRandom._next_words``, the draw that ``random``
    and ``integers`` make (``integers`` keeps 63 bits at most)."""
    m = len(x)
    per = 64 // _LANE_BITS
    nw = -(-d // per)
    words = rng._next_words(nw)
    if _LANE_BITS in (8, 16):
        # little-endian order fixed, so that a seed gives the same bits on every platform
        lanes = words.astype("<u8", copy=False).view(f"<u{_LANE_BITS // 8}").reshape(m, per * nw)[:, :d]
    else:            # other widths: tests only (many ties)
        shifts = np.arange(per, dtype=np.uint64) * np.uint64(_LANE_BITS)
        lanes = ((words[:, :, None] >> shifts) & np.uint64((1 << _LANE_BITS) - 1)).reshape(m, per * nw)[:, :d]
    scaled = q * float(1 << _LANE_BITS)
    t = int(scaled)
    coin = np.int64(min(round((scaled - t) * 2.0 ** 63), 2 ** 63 - 1))   # Pr(word < coin) = frac
    coins = _coins_for(d, _LANE_BITS)
    bits = lanes < t
    tie = lanes == t
    extra = rng.integers(0, 1 << 63, size=(m, 1 + coins))
    rows = np.arange(m)
    bits[rows, x] = extra[:, 0] < np.int64(min(round(p * 2.0 ** 63), 2 ** 63 - 1))
    tie[rows, x] = False
    at = np.flatnonzero(tie)                      # row-major: a row's ties in column order
    if len(at):
        tr, tc = np.divmod(at, d)
        rank = np.arange(len(tr)) - np.searchsorted(tr, tr)
        many = np.unique(tr[rank >= coins])
        few = ~np.isin(tr, many) if len(many) else np.ones(len(tr), dtype=bool)
        bits[tr[few], tc[few]] = extra[tr[few], 1 + rank[few]] < coin
        if len(many):
            fresh = rng.retry(many).integers(0, 1 << 63, size=(len(many), d))
            sel = ~few
            bits[tr[sel], tc[sel]] = fresh[np.searchsorted(many, tr[sel]), tc[sel]] < coin
    return bits


#: a row's positions come from a fixed number of uniform draws (:func:`draws_for`); a row
#: whose draws hold too few distinct positions (about one in 10^4 or fewer) redraws by keys
#: (:func:`_subset_by_keys`): fewer spare draws for all rows cost more than the redraws
_SPARE_SD = 4.0


def draws_for(N: int, m: int) -> int:
    """Uniform draws on ``range(N)`` that hold ``m`` distinct values but for a small
    probability: the waiting time's mean plus four standard deviations, plus 4.  The wait
    for the i-th new value is geometric with success probability ``(N - i)/N``.

    Examples
    --------
    >>> draws_for(4095, 74), draws_for(255, 69), draws_for(10, 0)
    (82, 100, 0)
    """
    if m <= 0:
        return 0
    frac = np.arange(m) / N
    mean = float(np.sum(1 / (1 - frac)))
    sd = math.sqrt(float(np.sum(frac / (1 - frac) ** 2)))
    return int(math.ceil(mean + _SPARE_SD * sd)) + 4


def _positions(words: np.ndarray, N: int) -> np.ndarray:
    """Two uniform positions in ``range(N)`` per 64-bit word (its 32-bit halves), exactly:
    Lemire's multiply-shift ``floor(h N / 2^32)``, rejecting a half whose low product falls
    below ``2^32 mod N`` (probability below ``N 2^-32``); a rejected one is ``N``, which
    :func:`_first_distinct` skips.  ``N < 2^21``.

    Examples
    --------
    >>> w = np.array([[(3 << 62) | (1 << 31) | 1, 1 << 31]], dtype=np.uint64)
    >>> _positions(w, 10).tolist()      # halves 2^31 + 1, 3 2^30; 2^31 and 0: low products 0 < 6
    [[5, 7, 10, 10]]
    """
    if not 0 < N < 2 ** 21:
        raise ValueError("positions in range(N), 0 < N < 2^21")
    halves = words.astype("<u8", copy=False).view("<u4").reshape(len(words), -1)
    # h N < 2^53: exact in float64, and so is its scaling by 2^-32 (1.5x faster than uint64)
    out = np.multiply(halves, N * 2.0 ** -32, dtype=np.float64).astype(np.int32)
    bad = halves * np.uint32(N) < np.uint32((1 << 32) % N)      # the low product, mod 2^32
    if bad.any():
        np.putmask(out, bad, N)
    return out


def _first_distinct(v: np.ndarray, N: int, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row, the first ``m`` distinct values of the draws ``v`` (uniform on ``range(N)``,
    ``N`` marking a rejected draw) in draw order: a uniform m-subset of ``range(N)`` (the
    law of i.i.d. uniform draws is the same under any relabelling of ``range(N)``, so is
    the set of the first m distinct).

    Two sorts per row: of ``value * 2^s + j`` (``j`` the draw's index), where equal values
    sit together with their first draw first; then of the first draws' indices, whose
    m-th smallest is the last draw to keep.

    Returns ``(pos, keep, short)``: ``pos`` each row's draws sorted by value, ``keep`` the
    mask of the chosen ones (the kept positions of a row in increasing order), ``short``
    the rows whose draws held fewer than m distinct values (to redraw).

    Examples
    --------
    >>> v = np.array([[0, 5, 0, 10, 9, 3]])       # N = 10: the 10 was rejected
    >>> pos, keep, short = _first_distinct(v, 10, np.array([3]))
    >>> pos[keep].tolist(), short.tolist()
    ([0, 5, 9], [False])
    """
    rows, w = v.shape
    shift = max(w - 1, 1).bit_length()
    dt = np.int32 if ((N + 1) << (shift + 1)) < 2 ** 31 else np.int64
    key = np.left_shift(v.astype(dt, copy=False), shift)
    key |= np.arange(w, dtype=dt)
    key.sort(axis=1)
    order = key & dt((1 << shift) - 1)
    pos = key >> shift
    new = np.empty((rows, w), dtype=bool)
    new[:, :1] = True
    np.not_equal(pos[:, 1:], pos[:, :-1], out=new[:, 1:])
    if w and (pos[:, -1] == N).any():                    # rejected draws (sorted last): never chosen
        new &= pos < N
    late = dt(1 << shift)                                 # after every draw
    first = np.logical_not(new).view(np.uint8).astype(dt)
    first <<= shift                                       # the draw that first gave each value;
    first |= order                                        # at least late for the others
    first.sort(axis=1)
    last = first[np.arange(rows), np.clip(m - 1, 0, max(w - 1, 0))] if w else np.full(rows, late)
    last = np.where(m > 0, last, -1)
    short = (m > w) | (last >= late)
    return pos, new & (order <= last[:, None]), short


def _subset_by_keys(u: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the positions of the ``m`` smallest of ``N`` keys: ``(pos, keep)`` as
    :func:`_first_distinct` gives them (a sort: exactly m per row, ties or not)."""
    rows, N = u.shape
    rank = np.empty((rows, N), dtype=np.int64)
    np.put_along_axis(rank, np.argsort(u, axis=1), np.arange(N), axis=1)
    return np.broadcast_to(np.arange(N), (rows, N)), rank < m[:, None]


def _pack_positions(pos: np.ndarray, keep: np.ndarray, d: int) -> np.ndarray:
    """The packed bits ``(rows, ceil(d/8))`` (:func:`numpy.packbits`'s little bit order) of
    each row's kept positions: set in a bool matrix through their flat indices, then
    packed (measured 1.4-2x faster than a weighted histogram over 32-bit lanes, and than
    an OR-reduction per word)."""
    rows = pos.shape[0]
    bits = np.zeros((rows, d), dtype=bool)
    dt = np.int32 if rows * d < 2 ** 31 else np.int64
    flat = pos.astype(dt, copy=False) + (np.arange(rows, dtype=dt) * d)[:, None]
    bits.reshape(-1)[np.compress(keep.ravel(), flat.ravel())] = True   # compress: 4x a bool index
    return np.packbits(bits, axis=1, bitorder="little")


def other_positions(rng: RowRandom, draws: int, x: np.ndarray, d: int, m: np.ndarray) -> np.ndarray:
    """Packed bits (:func:`_pack_positions`) of a uniform ``m``-subset of the ``d - 1``
    categories other than each row's ``x``, from ``draws`` (at least :func:`draws_for`)
    positions per row, two per word of one call on ``rng``; rows they leave short redraw
    ``d - 1`` keys by ``rng.retry``: every row's subset is a function of (seed, row, m)."""
    N = d - 1
    pos, keep, short = _first_distinct(_positions(rng._next_words(-(-draws // 2)), N), N, m)
    bits = _pack_positions(pos + (pos >= x[:, None]), keep, d)     # the others skip x
    if short.any():
        s = np.flatnonzero(short)
        kpos, kkeep = _subset_by_keys(rng.retry(s).random((len(s), N)), m[s])
        bits[s] = _pack_positions(kpos + (kpos >= x[s, None]), kkeep, d)
    return bits


def flip_bit(bits: np.ndarray, x: np.ndarray, on: np.ndarray) -> None:
    """Flip bit ``x_i`` of row i's packed bits where ``on_i``."""
    bits[np.arange(len(x)), x >> 3] ^= on.astype(np.uint8) << (x & 7).astype(np.uint8)


def all_but_truth(d: int, x: np.ndarray) -> np.ndarray:
    """Packed bits with every category but each row's ``x`` on."""
    bits = np.tile(np.packbits(np.ones(d, dtype=bool), bitorder="little"), (len(x), 1))
    flip_bit(bits, x, np.ones(len(x), dtype=bool))
    return bits


@functools.lru_cache(maxsize=64)
def _ue_sparse_plan(d: int, q: float) -> tuple[np.ndarray, int] | None:
    """Unary encoding's sparse sampler where the other bits are rarely 1: their number is
    ``Binomial(d - 1, q)`` (drawn by the inverse of its CDF) and their positions a uniform
    subset of that size (:func:`other_positions`): the same law as d - 1 independent
    Bernoulli(q) bits.  ``(cdf, draws)`` where its positions number less than half the
    dense sampler's ``d / 8`` words, else None (measured at n = 2e5: oue eps = 4: d = 512
    even, 1024 1.4x and 4096 2x faster; eps = 3, d = 4096, 309 positions against 512
    words: 1.1x slower).  ``draws`` covers counts up to the ``1 - 1e-9`` quantile; a row
    with more redraws by keys."""
    N = d - 1
    cap = int(scipy.stats.binom.ppf(1 - 1e-9, N, q))
    draws = draws_for(N, min(cap, N))
    if 2 * draws >= d / 8:
        return None
    cdf = scipy.stats.binom.cdf(np.arange(N + 1), N, q)
    cdf[-1] = 1.0
    return cdf, draws


#: subset selection draws a subset by its index among all of them when there are at most
#: this many (and d <= 64: one word per subset); else its positions by draws (:func:`other_positions`)
SS_TABLE = 1 << 20


@functools.lru_cache(maxsize=32)
def ss_table(d: int, m: int) -> np.ndarray:
    """Every m-subset of the d - 1 other positions, as uint64 bitmasks (in lexicographic
    order: a uniform index gives a uniform subset)."""
    if m == 0:
        return np.zeros(1, dtype=np.uint64)
    combos = np.array(list(itertools.combinations(range(d - 1), m)), dtype=np.uint64)
    return np.bitwise_or.reduce(np.uint64(1) << combos, axis=1)



def unary_reports(rng: RowRandom, x: np.ndarray, d: int, p: float, q: float) -> np.ndarray:
    """Unary encoding's packed reports (``(n, ceil(d/8))`` uint8): bit ``x_i`` of row i 1
    with probability p, the others q, independently.  Dense: :func:`_ue_bits` (``ceil(d/8)``
    words and ``1 +`` :func:`_coins_for` more per row); where the other bits are rarely 1
    (:func:`_ue_sparse_plan`: oue at a large epsilon), 2 uniforms (the true value's bit; how
    many others are 1, Binomial(d - 1, q)) and that many positions among the others
    (:func:`other_positions`)."""
    n = len(x)
    out = np.empty((n, -(-d // 8)), dtype=np.uint8)
    plan = _ue_sparse_plan(d, q)
    if plan is None:
        for lo, hi, sub in pieces(rng, -(-d // 4)):
            out[lo:hi] = np.packbits(_ue_bits(sub, x[lo:hi], d, p, q), axis=1, bitorder="little")
        return out
    # few ones: the truth's bit, then how many of the others are 1 and which
    cdf, draws = plan
    for lo, hi, sub in pieces(rng, draws // 2 + 2):
        u = sub.random((hi - lo, 2))
        ones = np.minimum(np.searchsorted(cdf, u[:, 1], side="right"), d - 1)
        out[lo:hi] = other_positions(sub, draws, x[lo:hi], d, ones)
        flip_bit(out[lo:hi], x[lo:hi], u[:, 0] < p)           # the truth's bit was 0
    return out


# ---- aggregation -----------------------------------------------------------------------------------
#: bit v of a byte, little bit order: _BITS[b, v]
_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(float)


def packed_counts(reports: np.ndarray, d: int, w: np.ndarray | None) -> np.ndarray:
    """The column sums of packed bit reports (``(m, ceil(d/8))`` uint8, m > 0), weighted by
    ``w`` (None: one each; then an int array): unpacked in blocks, or, weighted, per byte
    column a 256-bin histogram times the bits of each byte value."""
    nb = -(-d // 8)
    m = len(reports)
    if reports.ndim != 2 or reports.shape[1] != nb:
        raise ValueError(f"packed reports have shape (n, {nb})")
    if w is None:
        out = np.zeros(d, dtype=np.int64)
        # unpacked in blocks of 255 rows summed in uint8 (no overflow), then in int64:
        # 2.5x faster than a histogram of the bytes
        step = 255 * max(1, _CHUNK // (255 * 8 * nb))
        for lo in range(0, m, step):
            bits = np.unpackbits(reports[lo:lo + step], axis=1, count=d, bitorder="little")
            full = len(bits) // 255 * 255
            if full:
                out += bits[:full].reshape(-1, 255, d).sum(axis=1, dtype=np.uint8).sum(axis=0, dtype=np.int64)
            out += bits[full:].sum(axis=0, dtype=np.int64)
        return out
    hist = np.zeros(nb * 256)
    offsets = np.arange(nb, dtype=np.int64) * 256
    step = max(1, _CHUNK // nb)
    for lo in range(0, m, step):
        idx = (reports[lo:lo + step].astype(np.int64) + offsets).ravel()
        hist += np.bincount(idx, weights=np.repeat(w[lo:lo + step], nb), minlength=nb * 256)
    return (hist.reshape(nb, 256) @ _BITS).ravel()[:d]


def hashed_counts(seed: np.ndarray, value: np.ndarray, d: int, g: int, w: np.ndarray | None) -> np.ndarray:
    """``C_v = #{reports with H_seed(v) = value}`` (weighted by ``w``; None: one each, then
    an int array), hashing in blocks of ``_LH_CHUNK`` elements."""
    out = np.zeros(d, dtype=float if w is not None else np.int64)
    step = max(1, _LH_CHUNK // d)
    u = np.arange(d)
    for lo in range(0, len(seed), step):
        hit = hash_float(g, seed[lo:lo + step], u) == value[lo:lo + step, None]
        if w is None:
            out += np.count_nonzero(hit, axis=0)
        else:
            out += w[lo:lo + step] @ hit
    return out


# ---- hex text of packed bits -----------------------------------------------------------------------
def hex_chars(packed: np.ndarray) -> np.ndarray:
    """Packed bits as the ASCII codes of their text (sue/oue reports' text): an ``(m, 2 nb)``
    uint8 matrix, two lower-case hex digits per byte, high nibble first.

    Examples
    --------
    >>> hex_chars(np.array([[5, 162]], dtype=np.uint8)).tobytes()
    b'05a2'
    """
    packed = np.asarray(packed, dtype=np.uint8)
    m, nb = packed.shape
    chars = np.empty((m, nb, 2), dtype=np.uint8)
    # in cache-sized blocks, by arithmetic on contiguous nibbles (a table lookup gathers
    # through an index array 8x the size): '0' + v, and 39 more for v > 9 ('a' - '0' - 10)
    step = max(1, _CHUNK // nb)
    for lo in range(0, m, step):
        block = packed[lo:lo + step]
        out = chars[lo:lo + step]
        np.right_shift(block, 4, out=out[:, :, 0])
        np.bitwise_and(block, 15, out=out[:, :, 1])
        letter = out > 9
        out += 48
        out += letter * np.uint8(39)
    return chars.reshape(m, 2 * nb)


def unhex(d: int, chars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The packed bits of ``d`` categories given as ASCII codes of hex text (:func:`hex_chars`'
    inverse): an ``(m, 2 ceil(d/8))`` uint8 matrix in, ``(packed reports of the valid rows,
    which rows are valid)`` out.  A row is valid when every character is a lower-case hex
    digit and the padding bits of the last byte are 0.

    Examples
    --------
    >>> packed, ok = unhex(10, np.frombuffer(b"0502" b"05f2" b"0A02", dtype=np.uint8).reshape(3, 4))
    >>> packed.tolist(), ok.tolist()
    ([[5, 2]], [True, False, False])
    """
    # arithmetic, as hex_chars: v = c - '0' is a digit's value (< 10); past '9', v - 39 is
    # a letter's (10 .. 15); anything else is above 15, or below 10 past '9' (uint8 wraps)
    nib = chars - np.uint8(48)
    past = nib > 9
    nib -= past * np.uint8(39)
    ok = ~((nib > 15) | (past & (nib < 10))).any(axis=1)
    packed = (nib[:, 0::2] << 4) | nib[:, 1::2]
    if d % 8:   # the padding bits of the last byte are 0
        ok &= (packed[:, -1] >> (d % 8)) == 0
    return (packed if ok.all() else packed[ok]), ok


_COLON = 58


#: the four ASCII digits of each number below 10,000 (leading zeros kept), as one uint32 each
_DIGITS4 = np.frombuffer("".join(f"{v:04d}" for v in range(10_000)).encode(), dtype=np.uint32)
#: ":" and the digits of each number below 1,000 (then padding), as one uint32 each
_COLONS = np.frombuffer(b"".join(f":{v}".encode().ljust(4, b" ") for v in range(1000)), dtype=np.uint32)
#: ":000": the colon before a larger value's own groups of digits
_COLON_PAD = np.frombuffer(b":000", dtype=np.uint32)[0]
#: 10, 100, ..., 10^18: a number's digits are 1 + how many of these are at most it
_POWERS10 = 10 ** np.arange(1, 19, dtype=np.int64)


def decimal_pairs(a: np.ndarray, b: np.ndarray, rows: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
    """The texts ``"a:b"`` (decimal, no leading zero: local hashing's reports) of two columns
    of non-negative integers below 2^63, as one buffer of their ASCII codes and the ``m + 1``
    offsets of the rows in it (an Arrow string column's buffers): no Python string per row.

    In blocks of ``rows`` rows, each row written at a fixed width, four digits at a time
    (a 10,000-entry table of their ASCII codes, read as one uint32): ``a``'s groups, then
    ``":"`` with ``b``'s digits where ``b`` is below 1,000 (local hashing's values: a table
    too), else ``":000"`` and ``b``'s groups; then each row's leading zeros and padding
    dropped by one mask per row, from a table of the few masks there are.  1e6 local
    hashing reports, seeds of 17-18 digits: 40-43 ms where a digit at a time took 47-55 ms
    (55-88 ms inside ``spec.privatize``, whose fresh memory it halves: 44-60 ms there).

    Examples
    --------
    >>> data, offsets = decimal_pairs(np.array([0, 1207]), np.array([3, 10]))
    >>> data.tobytes(), offsets.tolist()
    (b'0:31207:10', [0, 3, 10])
    """
    a, b = np.asarray(a).astype(np.int64, copy=False), np.asarray(b).astype(np.int64, copy=False)
    m = len(a)
    ga = (len(str(int(a.max()))) + 3) // 4 if m else 1         # a's groups of 4 digits
    # b's: below 1,000 (local hashing's values, below g), ":" and its digits in one uint32
    # (a 1,000-entry table); else ":000" and b's own groups
    small = not m or int(b.max()) < 1000
    gb = 0 if small else (len(str(int(b.max()))) + 3) // 4
    width = 4 * (ga + 1 + gb)
    lead_b = 4 if small else 4 * gb          # how many values b's leading zeros take
    # the bytes a row keeps, by (a's leading zeros, b's, or b's digits where small)
    masks = np.zeros((4 * ga, lead_b, width), dtype=bool)
    for la in range(4 * ga):
        masks[la, :, la:4 * ga + 1] = True
        for lb in range(lead_b):
            if small:
                masks[la, lb, 4 * ga + 1:4 * ga + 1 + lb] = True     # (lb: b's digits)
            else:
                masks[la, lb, 4 * (ga + 1) + lb:] = True
    masks = masks.reshape(-1, width)
    # each row's mask (by its fields' leading zeros), then the offsets: the buffer's size
    lead = np.empty(m, dtype=np.int16)
    for lo in range(0, m, rows):
        za = 4 * ga - 1 - np.searchsorted(_POWERS10, a[lo:lo + rows], side="right")
        zb = np.searchsorted(_POWERS10, b[lo:lo + rows], side="right")         # b's digits less 1
        lead[lo:lo + rows] = za * lead_b + (zb + 1 if small else 4 * gb - 1 - zb)
    offsets = np.empty(m + 1, dtype=np.int64)
    offsets[0] = 0
    np.cumsum(masks.sum(axis=1)[lead], out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    for lo in range(0, m, rows):
        k = min(rows, m - lo)
        groups = np.empty((k, ga + 1 + gb), dtype=np.uint32)
        for x, first, g in ((a[lo:lo + k], 0, ga), (b[lo:lo + k], ga + 1, gb)):
            rest = x
            for col in range(first + g - 1, first - 1, -1):       # the last four digits first
                q = rest // 10_000
                groups[:, col] = _DIGITS4[rest - q * 10_000]
                rest = q
        groups[:, ga] = _COLONS[b[lo:lo + k]] if small else _COLON_PAD
        out[offsets[lo]:offsets[lo + k]] = groups.view(np.uint8).reshape(k, width)[masks[lead[lo:lo + k]]]
    return out, offsets


def parse_decimal_pairs(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`decimal_pairs`' inverse on the texts of rows ``offsets[i] .. offsets[i+1]`` of
    ``data`` (ASCII codes): ``(a, b, ok)``, ``a`` and ``b`` int64 (0 where not ``ok``),
    ``ok`` where the text is two decimal fields of 1 to 18 digits, no leading zero, joined
    by one ``:`` (``^(0|[1-9][0-9]{0,17}):(0|[1-9][0-9]{0,17})$``), nothing else.  No
    Python string per row: each row's one byte that is not an ASCII digit is found in
    the buffer (a row with none or several is not a report), and the fields are cast to
    integers by Arrow, in place, as a column of ``2 m`` texts.

    Examples
    --------
    >>> text = b"0:3" b"1207:10" b"01:2" b"1:" b"1:2:3" b" 1:2" b""
    >>> a, b, ok = parse_decimal_pairs(np.frombuffer(text, np.uint8), np.array([0, 3, 10, 14, 16, 21, 25, 25]))
    >>> a.tolist(), b.tolist(), ok.tolist()
    ([0, 1207, 0, 0, 0, 0, 0], [3, 10, 0, 0, 0, 0, 0], [True, True, False, False, False, False, False])
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    m = max(len(offsets) - 1, 0)
    if m == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    size = int(offsets[-1] - offsets[0])
    # a copy (its colons become '0' below), with a NUL past the end that an empty last row reads
    text = np.zeros(size + 1, dtype=np.uint8)
    text[:size] = np.asarray(data, dtype=np.uint8)[offsets[0]:offsets[-1]]
    start, end = offsets[:-1] - offsets[0], offsets[1:] - offsets[0]
    # the bytes that are not digits (uint8 wraps below '0') and their rows: when the i-th
    # lies in row i for every i (reports), each row has one, and no search is needed
    other = np.flatnonzero(text[:size] - np.uint8(48) > 9)
    if len(other) == m and np.all((other >= start) & (other < end)):
        row = np.arange(m)
    else:
        row = np.searchsorted(end, other, side="right")
    one = np.bincount(row, minlength=m) == 1
    colon = start.copy()
    alone = one[row]
    colon[row[alone]] = other[alone]
    wa, wb = colon - start, end - colon - 1
    ok = one & (text[colon] == _COLON) & (wa >= 1) & (wa <= 18) & (wb >= 1) & (wb <= 18)
    ok &= ((text[start] != 48) | (wa == 1)) & ((text[np.minimum(colon + 1, size)] != 48) | (wb == 1))
    # the fields as texts: a row's first ends at its colon, its second is '0' (the colon's
    # place) and the value; a row that is not a report gives two missing values
    colon = np.where(ok, colon, start)
    text[colon[ok]] = 48
    bounds = np.empty(2 * m + 1, dtype=np.int64)
    bounds[0:-1:2], bounds[1::2], bounds[-1] = start, colon, end[-1]
    fields = pa.LargeStringArray.from_buffers(2 * m, pa.py_buffer(bounds), pa.py_buffer(text),
                                              pa.py_buffer(np.packbits(np.repeat(ok, 2), bitorder="little")))
    ab = pc.fill_null(pc.cast(fields, pa.int64()), 0).to_numpy()
    return ab[0::2], ab[1::2], ok


def uniform_index(u: np.ndarray, m: int) -> np.ndarray:
    """A uniform index in ``[0, m)`` from uniforms on (0, 1): ``floor(u m)`` (the uniforms
    have 53 bits, so each index's probability is ``1/m`` within ``2^-53``)."""
    return np.minimum((u * m).astype(np.int64), m - 1)


# ---- subset selection's text ----------------------------------------------------------------------
#: set bits of each byte value
_BYTE_BITS = np.array([bin(v).count("1") for v in range(256)], dtype=np.int64)


def popcounts(packed: np.ndarray) -> np.ndarray:
    """The number of set bits in each row of packed bits (uint8 ``(m, nb)``)."""
    return _BYTE_BITS[np.asarray(packed, dtype=np.uint8)].sum(axis=1) if len(packed) else np.zeros(0, np.int64)


def ascii_rows(texts, width: int) -> np.ndarray:
    """Texts of ``width`` ASCII characters each (a Series or sequence of str) as the
    ``(m, width)`` uint8 matrix of their codes."""
    return np.frombuffer("".join(list(texts)).encode("ascii"), dtype=np.uint8).reshape(len(texts), width)


def subset_texts(reports: np.ndarray, d: int, k: int) -> pa.Array:
    """Packed k-subsets of ``d`` categories as their codes in increasing order joined by
    ``|`` (subset selection's text up to 64 categories): cast and joined by Arrow (joining
    numpy strings a column at a time copies each row's text k times: 40 s for 1e5 reports
    at d = 256)."""
    packed = np.asarray(reports, dtype=np.uint8)
    m = len(packed)
    bits = np.unpackbits(packed, axis=1, count=d, bitorder="little").astype(bool)
    if m and not np.all(bits.sum(axis=1) == k):
        raise ValueError(f"a subset-selection report has exactly k = {k} categories")
    codes = pc.cast(pa.array(np.nonzero(bits)[1]), pa.large_string())
    rows = pa.LargeListArray.from_arrays(pa.array(np.arange(m + 1, dtype=np.int64) * k), codes)
    return pc.binary_join(rows, pa.scalar("|", pa.large_string()))


def subset_codes(s, is_str: np.ndarray, d: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The packed k-subsets of the texts ``s`` (an Arrow string Series) written as
    :func:`subset_texts` writes them, for the valid rows, and which rows are valid: exactly
    k decimal codes (DEC: 1 to 18 ASCII digits, no leading zero) separated by ``|``,
    strictly increasing, below ``d``.  Split and cast by Arrow (a regular expression of k
    fields passes RE2's bound on repetitions at d = 256, and pandas' split into columns is
    row by row)."""
    parts = pc.split_pattern(pa.array(s.array, type=pa.large_string()), "|")
    fields = pc.list_flatten(parts)
    size = pc.binary_length(fields).to_numpy()
    good = pc.ascii_is_decimal(fields).to_numpy(zero_copy_only=False) & (size <= 18) & \
        ((size == 1) | ~pc.starts_with(fields, "0").to_numpy(zero_copy_only=False))
    owner = pc.list_parent_indices(parts).to_numpy()
    ok = is_str & (pc.list_value_length(parts).to_numpy() == k) & \
        (np.bincount(owner[~good], minlength=len(is_str)) == 0)
    codes = pc.cast(pc.filter(fields, pa.array(ok[owner])), pa.int64()).to_numpy().reshape(-1, k)
    valid = (codes[:, -1] < d) & np.all(np.diff(codes, axis=1) > 0, axis=1)
    ok[np.flatnonzero(ok)[~valid]] = False
    codes = codes[valid]
    bits = np.zeros((len(codes), d), dtype=bool)
    np.put_along_axis(bits, codes, True, axis=1)
    return np.packbits(bits, axis=1, bitorder="little"), ok
