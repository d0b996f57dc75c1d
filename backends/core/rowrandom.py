"""Random numbers per row: a respondent's randomness is a function of (seed, row index) alone.

A privatized report must not depend on how the file was cut into chunks, on the other
rows, on threads or on the engine, and a file must privatize to the same output whole
or in pieces.  So the uniforms of row ``r`` are not the next numbers of a stream shared
by all rows: they are the output of the counter-based generator Philox4x64-10 (Salmon
et al., SC'11; numpy's :class:`numpy.random.Philox`) keyed by the seed, at a counter
that names the row::

    counter = (r * B + b, draw, attempt, stream)      # 4 x 64 bits

``B = ceil(k / 4)`` blocks of four 64-bit words give a row its ``k`` words for one draw;
a draw of one or two words per row shares a block between four or two consecutive rows
(row ``r`` takes words ``(r mod 4/k) k ...`` of block ``floor(r k / 4)``): a whole block
per row would compute and throw away three words of every four, most of the cost of a
one-uniform sampler such as GRR's;
``draw`` counts the calls made on a :class:`RowRandom` (the 1st, 2nd ... use of
randomness by a sampler: every row makes the same calls, whatever its value);
``attempt`` numbers the redraws of a rejection sampler (:meth:`RowRandom.retry`);
``stream`` separates independent users of one seed (the factors of a product
mechanism).  The key is two words of :class:`numpy.random.SeedSequence` of the seed
(fresh OS entropy when the seed is None).

Contiguous rows are drawn by numpy's Philox in C; any other set of rows by the same
function written with numpy arrays (:func:`philox4x64`), which the tests check word for
word against numpy's.

Keep the seed secret: whoever knows it and a row's index can recompute that row's
randomness and so undo its privatization.

Examples
--------
>>> import numpy as np
>>> whole = RowRandom(7, rows=range(10)).random(10)
>>> piece = RowRandom(7, rows=range(6, 10)).random(4)
>>> bool(np.array_equal(whole[6:], piece))
True
"""
from __future__ import annotations

import zlib
from typing import Any, Sequence

import numpy as np

__all__ = ["RowRandom", "philox4x64", "row_key", "row_uniforms", "row_words", "stream_of"]

_MASK64 = (1 << 64) - 1
_M0, _M1 = np.uint64(0xD2E7470EE14C6C93), np.uint64(0xCA5A826395121157)
_W0, _W1 = 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B
_LO32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def row_key(seed: int | Sequence[int] | np.random.SeedSequence | None) -> np.ndarray:
    """The 128-bit Philox key (two uint64) of a seed; None draws one from OS entropy.

    Examples
    --------
    >>> bool(np.array_equal(row_key(3), row_key(3))), row_key(3).dtype
    (True, dtype('uint64'))
    """
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return seq.generate_state(2, dtype=np.uint64)


def _mulhilo(a: np.ndarray, m: np.uint64) -> tuple[np.ndarray, np.ndarray]:
    """High and low 64-bit halves of the 128-bit products ``a * m`` (uint64 arrays)."""
    a_lo, a_hi = a & _LO32, a >> _S32
    m_lo, m_hi = m & _LO32, m >> _S32
    ll, lh, hl, hh = a_lo * m_lo, a_lo * m_hi, a_hi * m_lo, a_hi * m_hi
    mid = (ll >> _S32) + (lh & _LO32) + (hl & _LO32)  # < 3 * 2^32: no overflow
    return hh + (lh >> _S32) + (hl >> _S32) + (mid >> _S32), a * m  # uint64 products wrap mod 2^64


def philox4x64(key: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """Philox4x64-10 of ``counters`` (an ``(n, 4)`` uint64 array) under ``key``: ``(n, 4)`` words.

    The same function as numpy's :class:`numpy.random.Philox` (whose first block, from
    ``counter=c``, is that of ``c + 1``), evaluated at any counters at once.

    Examples
    --------
    >>> key = np.array([1, 2], dtype=np.uint64)
    >>> ours = philox4x64(key, np.array([[1, 0, 0, 0]], dtype=np.uint64))
    >>> theirs = np.random.Philox(key=key, counter=[0, 0, 0, 0]).random_raw(4)
    >>> bool(np.array_equal(ours[0], theirs))
    True
    """
    with np.errstate(over="ignore"):
        c = np.array(counters, dtype=np.uint64, copy=True).reshape(-1, 4)
        c0, c1, c2, c3 = c[:, 0], c[:, 1], c[:, 2], c[:, 3]
        k0, k1 = int(key[0]), int(key[1])
        for i in range(10):
            if i:
                k0, k1 = (k0 + _W0) & _MASK64, (k1 + _W1) & _MASK64
            hi0, lo0 = _mulhilo(c0, _M0)
            hi1, lo1 = _mulhilo(c2, _M1)
            c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint64(k0), lo1, hi0 ^ c3 ^ np.uint64(k1), lo0
        return np.stack([c0, c1, c2, c3], axis=1)


def _consecutive(rows: np.ndarray) -> bool:
    """Whether int64 ``rows`` are ``r, r + 1, ..., r + n - 1``."""
    n = len(rows)
    return n <= 1 or (int(rows[-1]) - int(rows[0]) == n - 1 and bool(np.all(np.diff(rows) == 1)))


def row_words(key: np.ndarray, rows: np.ndarray | range, k: int, draw: int = 0, attempt: int = 0,
              stream: int = 0, contiguous: bool | None = None) -> np.ndarray:
    """``(len(rows), k)`` uint64 words; row ``r``'s depend only on (key, r, draw, attempt, stream).

    ``contiguous`` says whether ``rows`` are consecutive integers (None: look; a caller that
    knows saves the pass over the rows).

    Examples
    --------
    >>> key = row_key(1)
    >>> a = row_words(key, range(5), 3)
    >>> b = row_words(key, np.array([4, 1]), 3)
    >>> bool(np.array_equal(a[[4, 1]], b))
    True
    """
    if isinstance(rows, range) and (rows.step == 1 or len(rows) <= 1):
        first, n, contiguous = rows.start, len(rows), True      # no array of the rows needed
    else:
        rows = np.asarray(rows, dtype=np.int64).ravel()
        n = len(rows)
        if contiguous is None:
            contiguous = _consecutive(rows)
        first = int(rows[0]) if n else 0
    if k <= 0 or n == 0:
        return np.zeros((n, max(k, 0)), dtype=np.uint64)
    if (first if contiguous else int(rows.min())) < 0:
        raise ValueError("row indices are >= 0")
    high = (draw << 64) + (attempt << 128) + (stream << 192)
    if k <= 2:   # 4 // k rows share a block: row r's words are those at r*k .. r*k + k - 1
        share = 4 // k
        if contiguous:
            b0, b1 = first // share, (first + n - 1) // share + 1
            start = (b0 + high - 1) % (1 << 256)
            raw = np.random.Philox(key=key, counter=start).random_raw((b1 - b0) * 4)
            skip = (first - b0 * share) * k
            return raw[skip:skip + n * k].reshape(n, k)
        counters = np.empty((n, 4), dtype=np.uint64)
        counters[:, 0] = (rows // share).astype(np.uint64)
        counters[:, 1], counters[:, 2], counters[:, 3] = draw, attempt, stream
        block = philox4x64(key, counters)
        at = ((rows % share) * k)[:, None] + np.arange(k)
        return np.take_along_axis(block, at, axis=1)
    blocks = -(-k // 4)
    if contiguous:
        # contiguous rows: numpy's Philox in C, started one block before the first row's
        # (the counter as one Python int: numpy would pass a list's words through float64)
        start = (first * blocks + high - 1) % (1 << 256)
        raw = np.random.Philox(key=key, counter=start).random_raw(n * blocks * 4)
        return raw.reshape(n, blocks * 4)[:, :k]
    index = (rows[:, None].astype(np.uint64) * np.uint64(blocks) + np.arange(blocks, dtype=np.uint64)).ravel()
    counters = np.empty((len(index), 4), dtype=np.uint64)
    counters[:, 0] = index
    counters[:, 1], counters[:, 2], counters[:, 3] = draw, attempt, stream
    return philox4x64(key, counters).reshape(n, blocks * 4)[:, :k]


def stream_of(mechanism: Any, factor: int = 0) -> int:
    """The stream of a mechanism (or its name) and factor: one seed privatizing two
    mechanisms, or two factors of a product, gives them independent randomness.

    Examples
    --------
    >>> stream_of("m") == stream_of("m"), stream_of("m") == stream_of("m", 1)
    (True, False)
    """
    name = mechanism if isinstance(mechanism, str) else getattr(mechanism, "name", "")
    return zlib.crc32(f"{name}/{factor}".encode())


#: rows per block of a chained elementwise computation: its temporaries stay in the cache
#: (2.5x faster than whole-array steps at 1e6 rows, each step otherwise a pass over memory)
BLOCK = 1 << 14


def _uniforms(words: np.ndarray) -> np.ndarray:
    """Words -> doubles in the open interval (0, 1) (53 bits, centred: never 0 or 1, so that
    inverse CDFs stay finite): ``((w >> 11) + 0.5) * 2^-53``, exactly, in cache-sized blocks."""
    out = np.empty(words.shape, dtype=np.float64)
    flat_w, flat_u = words.reshape(-1), out.reshape(-1)
    for s in range(0, flat_w.size, BLOCK):
        u = flat_u[s:s + BLOCK]
        u[...] = flat_w[s:s + BLOCK] >> np.uint64(11)   # < 2^53: exact in a double
        u += 0.5
        u *= 2.0 ** -53                                   # a power of two: exact
    return out


def row_uniforms(seed: int | np.ndarray, rows: np.ndarray | range, k: int = 1, draw: int = 0,
                 stream: int = 0) -> np.ndarray:
    """``(len(rows), k)`` uniforms on (0, 1); row ``r``'s depend only on (seed, r, draw, stream).

    ``seed`` is an int (or a key from :func:`row_key`, to draw from OS entropy once and
    reuse it).

    Examples
    --------
    >>> u = row_uniforms(5, range(4), 2)
    >>> u.shape, bool(np.array_equal(u[2:], row_uniforms(5, [2, 3], 2)))
    ((4, 2), True)
    """
    key = seed if isinstance(seed, np.ndarray) else row_key(seed)
    return _uniforms(row_words(key, rows, k, draw=draw, stream=stream))


class RowRandom:
    """Per-row randomness with the (small) interface of :class:`numpy.random.Generator`
    that privatizers use: ``random``, ``integers``.  Every call draws, for each row of
    :attr:`rows` (in order), values that depend only on the key, the row's index and the
    number of calls made before (see the module docstring), so a sampler that makes the
    same calls for every row gives each row a report that depends on its own value only.

    Parameters
    ----------
    seed : int, SeedSequence, key array or None
        None draws a key from OS entropy (not reproducible).
    rows : array of int
        The absolute indices of the rows drawn for (0-based; add an offset for a piece
        of a file).
    stream : int
        Separates independent users of one seed (factors of a product mechanism).

    Examples
    --------
    >>> rng = RowRandom(3, rows=range(4))
    >>> a, b = rng.random(4), rng.random((4, 2))      # two draws: independent
    >>> bool(np.array_equal(a, RowRandom(3, rows=range(4)).random(4)))
    True
    """

    def __init__(self, seed: Any = None, rows: np.ndarray | range | None = None, stream: int = 0,
                 _draw: int = 0, _attempt: int = 0):
        self.key = seed if isinstance(seed, np.ndarray) and seed.dtype == np.uint64 else row_key(seed)
        # consecutive rows are kept as a range (their array is made only if asked for) and
        # an array is looked at once, on the first draw, not on every draw
        self._range: range | None = None
        self._rows: np.ndarray | None = None
        self._contiguous: bool | None = None
        if isinstance(rows, range) and (rows.step == 1 or len(rows) <= 1):
            self._range, self._contiguous = rows, True
        elif isinstance(rows, range):  # np.asarray(range) would go through Python ints
            self._rows = np.arange(rows.start, rows.stop, rows.step, dtype=np.int64)
        else:
            self._rows = np.asarray(rows if rows is not None else [], dtype=np.int64).ravel()
        self.stream = int(stream)
        self._draw = _draw
        self._attempt = _attempt
        self._last = _draw

    @property
    def rows(self) -> np.ndarray:
        """The absolute indices of the rows (int64)."""
        if self._rows is None:
            r = self._range
            self._rows = np.arange(r.start, r.stop, dtype=np.int64)
        return self._rows

    def __len__(self) -> int:
        return len(self._range) if self._range is not None else len(self._rows)

    def _shape(self, size: Any) -> tuple[int, tuple[int, ...]]:
        shape = (size,) if np.isscalar(size) else tuple(size)
        if not shape or shape[0] != len(self):
            raise ValueError(f"a per-row draw has one row per respondent ({len(self)}), not shape {shape}")
        return int(np.prod(shape[1:], dtype=np.int64)), shape

    def _next_words(self, k: int) -> np.ndarray:
        self._last = self._draw
        self._draw += 1
        rows = self._range if self._range is not None else self.rows
        if self._contiguous is None:
            self._contiguous = _consecutive(rows)
        return row_words(self.key, rows, k, draw=self._last, attempt=self._attempt, stream=self.stream,
                         contiguous=self._contiguous)

    def random(self, size: Any = None) -> np.ndarray:
        """Uniforms on (0, 1) of shape ``size`` (its first axis: the rows)."""
        k, shape = self._shape(len(self) if size is None else size)
        return _uniforms(self._next_words(k)).reshape(shape)

    def integers(self, low: int, high: int | None = None, size: Any = None, dtype: Any = np.int64) -> np.ndarray:
        """Integers uniform on ``[low, high)`` where ``high - low`` is a power of two (exact:
        the top bits of one word per value)."""
        if high is None:
            low, high = 0, low
        span = int(high) - int(low)
        bits = span.bit_length() - 1
        if span <= 0 or span != 1 << bits or bits > 63:
            raise ValueError("RowRandom.integers draws from ranges of 2^b values (b <= 63)")
        k, shape = self._shape(len(self) if size is None else size)
        words = self._next_words(k)
        top = (words >> np.uint64(64 - bits)).view(np.int64) if bits else np.zeros(words.shape, np.int64)
        if low:
            top = top + int(low)
        return top.astype(dtype, copy=False).reshape(shape)

    def retry(self, index: np.ndarray) -> "RowRandom":
        """The rows ``index`` (positions in :attr:`rows`) for a redraw of a rejection sampler:
        their next call repeats the last call's draw number with the next attempt number,
        so a redraw depends on the row alone, not on which other rows were rejected."""
        return RowRandom(self.key, self.rows[np.asarray(index, dtype=np.int64)], self.stream,
                         _draw=self._last, _attempt=self._attempt + 1)

    def generator(self, tag: int) -> np.random.Generator:
        """A sequential :class:`numpy.random.Generator` under the same key for draws that are
        not per row (dummy respondents), separate from every per-row draw: ``tag`` and the
        first row's index name it."""
        first = (self._range.start if self._range is not None else int(self.rows[0])) if len(self) else 0
        counter = ((1 << 63 | tag) << 64) + (first << 128) + (self.stream << 192)
        return np.random.Generator(np.random.Philox(key=self.key, counter=counter))
