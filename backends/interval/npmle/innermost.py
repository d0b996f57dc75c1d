"""Turnbull's innermost intervals of a set of reports' pieces (:func:`innermost`), for
every kind of report, with the fast path for plain ranges and the cut design the
NPMLE's band refines at its points.  The rest of the NPMLE's data side is
:mod:`privspec.backends.interval.npmle.data`."""
from __future__ import annotations

import numpy as np

from privspec.backends.data.float_sort import float_order
from privspec.backends.data.tally import run_starts

def _in_order(x: np.ndarray) -> bool:
    """Whether ``x`` is sorted already (one pass, no sort)."""
    return x.size < 2 or bool(np.all(x[1:] >= x[:-1]))


def _sorted(x: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """The order that sorts ``x`` (None where :func:`_in_order`) and ``x`` in that order
    (``x`` itself where sorted already).  Floats by :func:`.float_sort.float_order` (1e7
    right ends of Case-II reports: 0.18 s where ``np.argsort`` and the gather took 0.26 s,
    0.63 s for values in no order)."""
    if _in_order(x):
        return None, x
    if x.dtype == np.float64:       # (no NaN: data.as_rows refuses NaN ends, D030)
        return float_order(x)
    order = np.argsort(x)
    return order, x[order]


def _unsort(x: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    """The values of sorted entries (``x[i]`` belongs to entry ``order[i]``) put back in
    place; ``x`` itself where nothing was sorted (``order`` None)."""
    if order is None:
        return x
    out = np.empty_like(x)
    out[order] = x
    return out


def _ranks(*arrays: np.ndarray) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray | None]]:
    """The distinct values of all ``arrays`` (sorted), each entry's index among them
    (``np.unique(concatenate(arrays), return_inverse=True)``, 2-3x faster on millions of
    ends), and the order that sorts each array (None: already sorted).  Each array is
    sorted on its own (one already sorted, such as the left ends of rows in order, is not
    sorted again), the sorted values merged, and the ranks found by binary search of
    sorted keys (cache-friendly; unsorted keys would miss the cache at every step)."""
    orders, sorted_parts = zip(*(_sorted(x) for x in arrays))
    # a stable sort (timsort) merges the sorted runs in linear time: 5x faster than
    # quicksort on 2e7 ends in two runs
    merged = np.sort(np.concatenate(sorted_parts), kind="stable")
    values = merged[run_starts(merged)]
    ranks = [_unsort(np.searchsorted(values, xs).astype(np.intp, copy=False), order)
             for xs, order in zip(sorted_parts, orders)]
    return values, ranks, list(orders)


#: keys :func:`_sorted_search` searches at a time
_SEARCH_BLOCK = 8192


def _sorted_search(hay: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``np.searchsorted(hay, keys, side="right")`` of sorted keys, a block of keys at a
    time over the part of ``hay`` between its first and last key's places: short searches
    in a few pages of memory each, not over all of ``hay`` (1e7 Case-II reports: 6.7e6
    lefts among as many rights, 0.15 s -> 0.11)."""
    if keys.size <= _SEARCH_BLOCK:
        return np.searchsorted(hay, keys, side="right")
    out = np.empty(keys.size, dtype=np.intp)
    for s in range(0, keys.size, _SEARCH_BLOCK):
        block = keys[s:s + _SEARCH_BLOCK]
        lo, hi = np.searchsorted(hay, block[[0, -1]], side="right").tolist()
        np.add(np.searchsorted(hay[lo:hi], block, side="right"), lo, out=out[s:s + block.size])
    return out


def _running_count(mask: np.ndarray) -> np.ndarray:
    """``np.cumsum(mask)`` of a bool array in one int array (``np.cumsum`` would first
    cast the bools into a second one: at 1e7 entries, 76 MiB more at the peak)."""
    out = mask.astype(np.intp)
    np.cumsum(out, out=out)
    return out


def _search(hay: np.ndarray, keys: np.ndarray, order: np.ndarray | None, side: str) -> np.ndarray:
    """``np.searchsorted(hay, keys, side)``, the keys searched in ``order`` (sorting them:
    each search starts near the last one's end) and put back in place."""
    if order is None:
        return np.searchsorted(hay, keys, side=side)
    return _unsort(np.searchsorted(hay, keys[order], side=side), order)


def innermost(left: np.ndarray, right: np.ndarray, cuts: np.ndarray | None = None, rows_out: list | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Turnbull's innermost intervals of a set of pieces, and each piece's run over them.

    Every end is a key on the ordered line in which ``x`` (the point) precedes ``x+``
    (just after ``x``): a piece ``(l, r]`` is the closed key range ``[l+, r]`` and a
    point ``x`` is ``[x, x]``.  Sorting the left and right keys (lefts first among equal
    keys: closed ranges sharing a key intersect), an innermost interval is a left key
    immediately followed by a right key (Turnbull 1976).  So a point at the right end
    of ``(0, 1]`` lies in it and one at its left end does not, and a cell ending at an
    exact point gives way to the point.

    Parameters
    ----------
    left, right : ndarray
        Piece ends, ``left <= right`` (``left == right``: a point).
    cuts : ndarray, optional
        Points ``x`` whose zero-weight ranges ``(-inf, x]`` and ``(x, inf)`` add their
        ends: the innermost intervals then never straddle a cut (the profile likelihood
        for ``F(x)`` needs that).

    Returns
    -------
    inner_left, inner_right : ndarray
        The innermost intervals ``(l, r]`` in increasing order, a point as ``[x, x]``.
    a, b : ndarray of intp
        Piece ``k`` holds exactly the innermost intervals ``a[k]..b[k]`` (never empty).
        With ``rows_out`` (a list), the pieces may come in another order: then that order
        is appended to it (entry ``k`` is piece ``order[k]``).

    Examples
    --------
    >>> lo, hi, a, b = innermost(np.array([0.0, 1.0, 2.0, 0.5]), np.array([1.0, 2.0, 3.0, 0.5]))
    >>> lo.tolist(), hi.tolist(), a.tolist(), b.tolist()
    ([0.5, 1.0, 2.0], [0.5, 2.0, 3.0], [0, 1, 2, 0], [0, 1, 2, 0])
    """
    if left.size and not np.any(left == right):
        if cuts is None or not np.size(cuts):
            return _innermost_ranges(left, right, rows_out)
        if np.all(np.isfinite(cuts)):          # (a cut at an infinity is no range of its own)
            return _innermost_ranges_cut(left, right, np.unique(np.asarray(cuts, dtype=float)))
    return _innermost_keys(left, right, cuts)


def _innermost_ranges_cut(left: np.ndarray, right: np.ndarray, cuts: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`innermost` of ranges with cuts: each cut's zero-weight ranges ``(-inf, x]``
    and ``(x, inf)`` are ranges too, so :func:`_innermost_ranges` takes them as extra
    rows (2.5x faster than ranking the keys, :func:`_innermost_keys`, at 1e6 reports),
    put where the left ends stay in order (no sort where the rows' lefts are sorted),
    and their runs left out of the answer."""
    k = cuts.size
    extra_l = np.concatenate([np.full(k, -np.inf), cuts])
    extra_r = np.concatenate([cuts, np.full(k, np.inf)])
    order = np.argsort(extra_l, kind="stable")
    extra_l, extra_r = extra_l[order], extra_r[order]
    # each extra row before the first row with a larger left end: rows in order stay so
    at = np.searchsorted(left, extra_l, side="left") if _in_order(left) else np.full(2 * k, left.size)
    inner_left, inner_right, a, b = _innermost_ranges(np.insert(left, at, extra_l), np.insert(right, at, extra_r))
    keep = np.ones(a.size, dtype=bool)
    keep[at + np.arange(2 * k)] = False     # where np.insert put them
    return inner_left, inner_right, a[keep], b[keep]


def _innermost_keys(left: np.ndarray, right: np.ndarray, cuts: np.ndarray | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`innermost` in general: the ends ranked, each a key ``x`` or ``x+``."""
    point = left == right
    cut_values = np.zeros(0) if cuts is None else np.asarray(cuts, dtype=float)
    # cuts bring the ends -inf+ and inf (of their ranges): the last two entries of `extra`
    extra = np.concatenate([cut_values, [-np.inf, np.inf]]) if cuts is not None else np.zeros(0)
    values, (rank_l, rank_r, rank_x), (order_l, order_r, _) = _ranks(left, right, extra)
    # key 2*rank is the point x itself, 2*rank + 1 is "just after x": (l, r] = [l+, r]
    lkey = 2 * rank_l + (~point)
    rkey = 2 * rank_r
    nkeys = 2 * values.size
    # events: code 2*key for a left end, 2*key + 1 for a right end, so that lefts sort
    # first among equal keys; duplicates do not change which left is followed by a right
    present = np.zeros(2 * nkeys, dtype=bool)
    present[2 * lkey] = True
    present[2 * rkey + 1] = True
    if cut_values.size:
        lowest = 2 * int(rank_x[-2]) + 1       # -inf+: the left end of (-inf, x]
        highest = 2 * int(rank_x[-1])          # inf: the right end of (x, inf)
        present[2 * lowest] = True
        present[2 * highest + 1] = True
        # the ranges (-inf, x] and (x, inf): a right end at x and a left end at x+
        cut_rank = rank_x[:cut_values.size]
        present[2 * (2 * cut_rank + 1)] = True
        present[2 * (2 * cut_rank) + 1] = True
    events = np.flatnonzero(present)
    is_right = (events & 1).astype(bool)
    sel = np.flatnonzero(~is_right[:-1] & is_right[1:])
    inner_lkey = events[sel] >> 1
    inner_rkey = events[sel + 1] >> 1
    inner_left = values[inner_lkey >> 1]
    inner_right = values[inner_rkey >> 1]
    # innermost j lies in a range [L, R] (keys) iff L <= inner_lkey[j] and inner_rkey[j] <= R
    # (the keys ordered as their ends are: rkey = 2 rank_r, lkey = 2 rank_l + 0 or 1)
    a = _search(inner_lkey, lkey, order_l, "left").astype(np.intp, copy=False)
    b = (_search(inner_rkey, rkey, order_r, "right") - 1).astype(np.intp, copy=False)
    if a.size and not np.all(a <= b):  # pragma: no cover - Turnbull: every range holds one
        raise AssertionError("a piece covers no innermost interval")
    return inner_left, inner_right, a, b


def _innermost_ranges(left: np.ndarray, right: np.ndarray, rows_out: list | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`innermost` of ranges ``(l, r]`` alone (no points, no cuts), from the ends'
    values without ranking them (2.5x faster on 1e7 Case-II reports).

    Every left key is ``L+`` and every right key ``R``; ``R`` comes before ``L+`` iff
    ``R <= L``.  So a left ``L_i`` (in increasing order of the distinct lefts) is followed
    by a right iff the first right beyond it, ``R = min{r > L_i}``, comes before the next
    left's key, ``R <= L_{i+1}``: then ``(L_i, R]`` is an innermost interval.  A range holds
    the innermost intervals whose left is at or after its own and whose right is at or
    before its own.

    ``rows_out``: a list, where the runs may come in another order of the rows: the order
    they come in is appended to it (the rows ``order[k]``), unless it is theirs.
    """
    # Memory is what this costs at 1e7 reports: every fresh array of millions is
    # first-touched memory (about 3 s/GB on the 2-core VM of bench/engines.py, more than
    # the arithmetic in it).  So no array is copied where it need not be (distinct ends
    # are the ends themselves; sorted lefts need no order), the runs are running counts
    # over the ranges (no index arrays), and each array is let go as soon as it is used:
    # at 1e7 Case-II reports the peak is 364 MiB over the ends, where it was 415 MiB
    # (and the design's 411, where it was 564).
    (lorder, ls), (rorder, rs) = _sorted(left), _sorted(right)
    lnew, rnew = run_starts(ls), run_starts(rs)
    lall, rall = bool(lnew.all()), bool(rnew.all())
    lefts = ls if lall else ls[lnew]
    rights = rs if rall else rs[rnew]
    del ls, rs
    # beyond[i] = the number of rights at or below L_i, so the first right beyond L_i is
    # rights[beyond[i]], and it is at or below L_{i+1} iff beyond[i + 1] > beyond[i]; the
    # last left is followed by a right whenever it has one beyond it
    beyond = _sorted_search(rights, lefts)
    inner = beyond < rights.size
    inner[:-1] &= beyond[1:] > beyond[:-1]
    innermost_right_rank = beyond[inner]
    inner_left, inner_right = lefts[inner], rights[innermost_right_rank]
    nrights = rights.size
    del lefts, rights, beyond
    # the runs by counting, not searching (the innermost ends are among the distinct ends),
    # each a running count over the sorted ranges (no index per range into the ends):
    # a = the innermost intervals whose left is below the range's: those left ends that
    # close a run of equal lefts before the range's own run
    closes = np.empty(lnew.size, dtype=bool)
    closes[:-1] = lnew[1:]
    closes[-1] = True
    ended = np.zeros(lnew.size, dtype=bool)
    ended[closes] = inner
    del closes, inner
    a = _running_count(ended)
    a -= ended
    del ended
    a = _unsort(a, lorder)
    # b + 1 = those whose right is at or below the range's: each innermost interval
    # counted at the first range with its right end, then summed over the ranges
    b = np.zeros(rnew.size, dtype=np.intp)
    b[rnew] = np.bincount(innermost_right_rank, minlength=nrights)
    del innermost_right_rank
    np.cumsum(b, out=b)
    b -= 1
    if rows_out is not None and rorder is not None:
        # the rows in the order of their right ends: a gathered into it, where putting b
        # back in place scatters (1e7 Case-II reports: 0.14 s -> 0.04)
        rows_out.append(rorder)
        a = a[rorder]
    else:
        b = _unsort(b, rorder)
    return inner_left, inner_right, a.astype(np.intp, copy=False), b.astype(np.intp, copy=False)


