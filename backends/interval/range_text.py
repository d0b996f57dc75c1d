"""The quick reading of range reports written as privspec writes them, ``(a, b]``.

:func:`plain_ranges` reads Arrow string arrays (what DuckDB hands over) without a
pattern and without SQL: the ends are located by byte positions and cast by Arrow, which
rounds correctly, as Python's ``float`` does.  Every other text (other spellings,
rings, nulls, what is not a report) is left to the whole parse
(:func:`.mechanisms.ranges_sql`, then :func:`.mechanisms.parse_ranges`), so the values
and the messages are the same whichever way a report was read.  At 1e6 Case-II reports
from CSV: 0.17 s of CPU for the read and the parse, where DuckDB's cast of the same
texts took 0.24 s.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["plain_ranges"]

_OPEN, _COMMA, _SPACE, _CLOSE, _ZERO = (ord(c) for c in "(, ]0")
#: a chunk with fewer of its texts in that form is read by the whole parse entire
_MOST = 0.5


def plain_ranges(texts: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which texts are ranges written as privspec writes them, and their ends.

    A text reads here when it is ``(``, a number, ``, `` (comma and one space), a
    number, ``]``, both numbers cast by Arrow, the left below the right (so neither
    NaN).  Arrow reads a number as Python's ``float`` does, to the bit, or refuses it
    (``1_0``, ``+-1``, spaces: ``tests/test_engines.py``); a chunk where a cast fails,
    or where fewer than half the texts have that form, is left to the whole parse
    entire.

    Parameters
    ----------
    texts : pyarrow.ChunkedArray or pyarrow.Array
        Text cells (``string`` or ``large_string``; nulls allowed).

    Returns
    -------
    ok : ndarray of bool
        The texts read here.
    left, right : ndarray
        Their ends (NaN elsewhere).

    Examples
    --------
    >>> ok, l, r = plain_ranges(pa.array(["(1.5, 2]", "(-inf, 0.25]", " (1, 2]", "(2, 1]", None]))
    >>> ok.tolist(), l[ok].tolist(), r[ok].tolist()
    ([True, True, False, False, False], [1.5, -inf], [2.0, 0.25])
    """
    chunks = texts.chunks if isinstance(texts, pa.ChunkedArray) else [texts]
    parts = [_chunk(c) for c in chunks if len(c)]
    if not parts:
        return np.zeros(0, dtype=bool), np.zeros(0), np.zeros(0)
    return tuple(np.concatenate(p) for p in zip(*parts))    # type: ignore[return-value]


def _chunk(texts: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`plain_ranges` of one chunk: its bytes and offsets read as they lie."""
    n = len(texts)
    none = np.zeros(n, dtype=bool), np.full(n, np.nan), np.full(n, np.nan)
    if not pa.types.is_string(texts.type) and not pa.types.is_large_string(texts.type):
        return none
    _, offsets, data = texts.buffers()
    width = np.int64 if pa.types.is_large_string(texts.type) else np.int32
    offs = np.frombuffer(offsets, dtype=width, count=n + 1, offset=texts.offset * np.dtype(width).itemsize)
    offs = offs.astype(np.int64)
    start, end = offs[:-1], offs[1:]
    if data is None or offs[-1] == offs[0]:
        return none
    raw = np.frombuffer(data, dtype=np.uint8)
    cut = _commas(texts, raw, start, end)
    # "(" first, "]" last, ", " once between two numbers of a byte or more
    ok = (cut >= start + 2) & (end - cut >= 4)
    if texts.null_count:
        ok &= texts.is_valid().to_numpy(zero_copy_only=False)
    top = raw.size - 1
    ok &= raw[np.minimum(start, top)] == _OPEN
    ok &= raw[np.clip(end - 1, 0, top)] == _CLOSE
    ok &= raw[np.clip(cut + 1, 0, top)] == _SPACE
    every = bool(ok.all())
    rows = np.arange(n) if every else np.flatnonzero(ok)
    if rows.size < _MOST * n:          # (many texts for the whole parse: it reads them all)
        return none
    s, c, e = (start, cut, end) if every else (start[rows], cut[rows], end[rows])
    # the texts' bytes with each "(", ", " and "]" made "0" or "00" (and every byte of a
    # text between them not read here): the ends and those fillers then make four
    # strings a text, side by side, cast in one go
    base = int(s[0])
    buf = raw[base:int(e[-1])].copy()
    for at in (s, c, c + 1, e - 1):
        buf[at - base] = _ZERO
    if not every:
        skipped = np.flatnonzero(~ok[rows[0]:rows[-1]]) + rows[0]
        lengths = end[skipped] - start[skipped]
        first = np.repeat(start[skipped] - base - np.cumsum(lengths) + lengths, lengths)
        buf[first + np.arange(int(lengths.sum()))] = _ZERO
    cuts = np.empty(4 * rows.size + 2, dtype=np.int64)
    cuts[0], cuts[-1] = 0, buf.size
    for k, at in enumerate((s + 1, c, c + 2, e - 1)):
        np.subtract(at, base, out=cuts[1 + k:-1:4])
    pieces = pa.Array.from_buffers(pa.large_string(), cuts.size - 1, [None, pa.py_buffer(cuts), pa.py_buffer(buf)])
    try:
        values = pc.cast(pieces, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        # a number Arrow does not read ('_', say): the whole parse reads this chunk
        return none
    a, b = values[1::4], values[3::4]
    good = a < b            # (false for NaN)
    if every and good.all():
        return ok, np.ascontiguousarray(a), np.ascontiguousarray(b)
    _, left, right = none
    ok[rows[~good]] = False
    left[rows[good]], right[rows[good]] = a[good], b[good]
    return ok, left, right


def _commas(texts: pa.Array, raw: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Where each text's first comma lies in the bytes (before its start where it has none):
    the commas of all texts found in one scan, where there is one a text (else searched
    text by text, by Arrow)."""
    lo, hi = int(start[0]), int(end[-1])
    at = np.flatnonzero(raw[lo:hi] == _COMMA)
    at += lo
    if at.size == start.size and bool(np.all((at >= start) & (at < end))):
        return at
    comma = pc.find_substring(texts, ",").fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return np.where(comma >= 0, start + comma, start - 1)
