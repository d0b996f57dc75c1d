"""The order that sorts millions of floats, by numpy's sort of integers.

``np.argsort`` of float64 runs a comparison sort of (value, index) pairs; ``np.sort`` of
64-bit integers runs numpy's vectorized sort (AVX-512 or AVX2 where the CPU has them).
:func:`float_order` puts each float's order-preserving bits and its index in one
integer, sorts those, and repairs the few places where two values agreed in the bits
kept: 1e7 floats in 0.18 s where ``np.argsort`` took 0.54 s and a ``ORDER BY`` in
DuckDB 0.9 s of CPU (bench/npmle_band_speed.py's reports).
"""
from __future__ import annotations

import numpy as np

__all__ = ["float_order"]

#: the low 63 bits of an int64: flipped in a negative float's bits, so that the integers
#: order as the floats do
_MAGNITUDE = np.int64(0x7FFF_FFFF_FFFF_FFFF)
#: below this many values the packing costs more than it saves: ``np.argsort`` itself
_SMALL = 4096


def float_order(x: np.ndarray, out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The stable order that sorts ``x`` (float64, no NaN) and ``x`` in that order.

    Equal values keep their order, as ``np.argsort(x, kind="stable")`` keeps it, except
    that ``-0.0`` comes before ``0.0`` (they are equal, so the values are sorted either
    way).

    How: a float's bits read as an int64, with a negative float's magnitude bits
    flipped, order as the float does.  The top ``64 - k`` of those bits and the index in
    the low ``k`` (``2^k >= len(x)``) make one int64 per value, sorted by numpy's
    vectorized integer sort; the index read back from the low bits is the order.  Two
    values whose kept bits agree (relative difference below ``2^(k - 52)``: 4e-9 at
    1e7 values) are then in the order of their indices, not of their values; the runs
    of equal kept bits where that puts a value after a larger one are sorted again, by
    value then index (thousands of values of 1e7).

    Parameters
    ----------
    x : ndarray
        Float64 values without NaN (``-inf``, ``inf`` and repeats are fine).
    out : ndarray, optional
        Where to write the sorted values (not ``x`` itself).

    Returns
    -------
    order : ndarray of intp
        ``x[order]`` is sorted; equal values in the order of their indices.
    values : ndarray
        ``x[order]`` (``out`` where given).

    Examples
    --------
    >>> order, values = float_order(np.array([2.0, -np.inf, 0.5, 2.0, -1.0]))
    >>> order.tolist(), values.tolist()
    ([1, 4, 2, 0, 3], [-inf, -1.0, 0.5, 2.0, 2.0])
    """
    x = np.ascontiguousarray(x, dtype=float)
    n = x.size
    bits = max((n - 1).bit_length(), 1)
    if n < _SMALL or bits > 40:
        order = np.argsort(x, kind="stable")
        return order, np.take(x, order, out=out)
    key = x.view(np.int64) >> 63          # -1 for a negative float, 0 otherwise
    key &= _MAGNITUDE
    key ^= x.view(np.int64)
    key >>= bits
    key <<= bits
    key |= np.arange(n, dtype=np.int64)
    key.sort()
    order = key & np.int64((1 << bits) - 1)
    values = np.take(x, order, out=out)
    bad = np.flatnonzero(values[1:] < values[:-1])
    if bad.size:
        key >>= bits                       # the kept bits, sorted: each run one search away
        lo = np.searchsorted(key, key[bad], side="left")
        hi = np.searchsorted(key, key[bad], side="right")
        lo, first = np.unique(lo, return_index=True)
        lens = hi[first] - lo
        # every position of those runs, and the run it belongs to
        pos = np.repeat(lo - np.cumsum(lens) + lens, lens) + np.arange(int(lens.sum()))
        run = np.repeat(np.arange(lo.size), lens)
        sub = order[pos]
        sub = sub[np.lexsort((sub, x[sub], run))]
        order[pos] = sub
        values[pos] = x[sub]
    return order.astype(np.intp, copy=False), values
