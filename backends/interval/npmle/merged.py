"""A design's plain rows merged by their runs over a set of candidate innermost intervals
``J``, and the merge carried over to a larger set without a pass over every row.

Over ``J`` a row's run is ``A..B`` (the first and last members of ``J`` it holds), and
rows with the same run are one row of the smaller design (:func:`merge_over`): masses on
``J`` give them the same probability.  The profile band (:mod:`.bands`) grows ``J`` a few
intervals at a time; the rows whose run changes are then only those with an end next to
a new interval, and :func:`grow_merge` moves those alone, giving the same merged design,
row for row, as merging from scratch (1e7 Case-II reports: ~25 ms where a merge takes
~70).

Examples
--------
>>> from privspec.backends.interval.npmle.data import design_from_rows
>>> l, r = np.array([0.0, 0, 1, 1, 2]), np.array([2.0, 4, 3, 4, 4])
>>> des = design_from_rows(l, r, np.ones(5), cuts=np.array([1.0, 2, 3]))   # (0, 1], ..., (3, 4]
>>> des.a.tolist(), des.b.tolist()
([0, 0, 1, 1, 2], [1, 3, 2, 3, 3])
>>> sub, row = merge_over(des, np.array([1, 2]))      # runs over (1, 2] and (2, 3]
>>> sub.a.tolist(), sub.b.tolist(), sub.c.tolist(), row.tolist()
([0, 0, 1], [0, 1, 1], [1.0, 3.0, 1.0], [0, 1, 1, 1, 2])
>>> sub, row, sizes = grow_merge(des, np.array([1, 2]), sub, row, np.array([1, 2, 3]))
>>> sub.a.tolist(), sub.b.tolist(), sub.c.tolist(), row.tolist()
([0, 0, 0, 1], [0, 1, 2, 2], [1.0, 1.0, 2.0, 1.0], [0, 2, 1, 2, 3])
>>> again, row_again = merge_over(des, np.array([1, 2, 3]))
>>> again.c.tolist(), row_again.tolist()
([1.0, 1.0, 2.0, 1.0], [0, 2, 1, 2, 3])
"""
from __future__ import annotations

import numpy as np

from privspec.backends.interval.npmle.data import Design

__all__ = ["merge_over", "grow_merge"]


def merge_over(des: Design, J: np.ndarray) -> tuple[Design, np.ndarray]:
    """The plain rows of ``des`` merged by their runs over ``J`` (sorted, meeting every
    row): the smaller design (its innermost intervals ``J``, its rows in order of their
    runs) and each row's merged row."""
    k = J.size
    # (in 32 bits where the k x k table allows: half the memory to write and read over
    # millions of rows, which is what this costs)
    before = np.zeros(des.m + 1, dtype=np.int32 if k * k < 2 ** 31 else np.intp)
    before[J + 1] = 1
    np.cumsum(before, out=before)          # before[t] = #J below t
    # each row's run over J as one number
    key = before[des.a]
    key *= k
    key += before[des.b1]
    key -= 1
    total = np.bincount(key, des.c, minlength=k * k)
    runs = np.flatnonzero(total)
    # each row's merged row, kept: a check of the band (:meth:`.bands._Space.verify`) reads
    # every row's probability from the merged rows' by it, one gather from those (where the
    # prefix sums over every innermost interval take two; and from a k x k table, 32 MB at
    # k = 2000, the gather of 7.5e6 rows took 62 ms instead of 16, besides zeroing the
    # table each time).  In the machine's width: each check's gather by it then needs no
    # conversion of millions of indices (5 ms a check at 1e7)
    slot = np.cumsum(total > 0, dtype=np.intp)
    slot -= 1
    row = slot[key]
    del key, slot
    return _design_over(des, J, runs // k, runs % k, total[runs]), row


def grow_merge(des: Design, J: np.ndarray, sub: Design, row: np.ndarray, grown: np.ndarray,
               sizes: np.ndarray | None = None) -> tuple[Design, np.ndarray, np.ndarray]:
    """:func:`merge_over` of ``grown`` (a superset of ``J``) from the merge over ``J``
    (``sub``, ``row``): ``(sub, row, sizes)``, ``sizes`` the design's rows in each merged
    row (pass it back on the next growth; None: counted here).  ``row`` is renumbered in
    place (and returned).

    A row's run over ``grown`` differs from its run over ``J`` (renumbered) only where a
    new interval lies between its left end and the first member of ``J`` it holds, or
    between the last one and its right end.  The first are a slice of the rows (sorted
    by their left ends) per new interval; the second are among the rows of the merged
    rows that end just before a new interval.  Those rows are moved; every other merged
    row keeps its rows and its order (the renumbering keeps the runs' order), so the
    result is the merge from scratch, row for row, with counts that add up exactly where
    they are whole numbers."""
    k, nr = J.size, sub.a.size
    if sizes is None:
        sizes = np.bincount(row, minlength=nr)
    new = np.setdiff1d(grown, J, assume_unique=True)
    k2 = grown.size
    at = np.searchsorted(grown, J)               # each member of J in grown
    above = np.searchsorted(J, new)              # the first member of J above each new one
    # rows starting at or below a new interval, above the member of J before it
    prev = np.where(above > 0, J[np.maximum(above - 1, 0)], -1)
    lo = np.searchsorted(des.a, prev, side="right")
    hi = np.searchsorted(des.a, new, side="right")
    starts = [np.arange(s, e) for s, e in zip(lo.tolist(), hi.tolist()) if e > s]
    # rows of the merged rows whose run ends at the member of J just below a new interval
    ends_before = np.zeros(k, dtype=bool)
    ends_before[above[above > 0] - 1] = True
    near_end = np.flatnonzero(ends_before[sub.b][row])
    rows = np.unique(np.concatenate(starts + [near_end])) if starts else near_end
    A = np.searchsorted(grown, des.a[rows])                  # #grown below a
    B = np.searchsorted(grown, des.b1[rows]) - 1             # #grown at or below b, less 1
    g = row[rows]
    moved = (A != at[sub.a[g]]) | (B != at[sub.b[g]])
    rows, g = rows[moved], g[moved]
    key_new = A[moved].astype(np.int64) * k2 + B[moved]
    c_moved = des.c[rows]
    # the merged rows left: their counts less the rows moved (exact for whole counts)
    left = sizes - np.bincount(g, minlength=nr)
    total = sub.c - np.bincount(g, c_moved, minlength=nr)
    keep = left > 0
    # the runs kept, renumbered, are in order still (the renumbering keeps it): the new
    # runs are put in among them (no sort of every run)
    key_old = at[sub.a[keep]].astype(np.int64) * k2 + at[sub.b[keep]]
    new_runs = np.unique(key_new)
    pos = np.searchsorted(key_old, new_runs)
    known = pos < key_old.size
    known[known] = key_old[pos[known]] == new_runs[known]
    add = new_runs[~known]
    keys = np.insert(key_old, pos[~known], add)
    slot = np.arange(key_old.size) + np.searchsorted(add, key_old)     # each kept run's place
    slot_new = np.searchsorted(keys, key_new)
    c = np.zeros(keys.size)
    c[slot] = total[keep]
    np.add.at(c, slot_new, c_moved)
    counts = np.zeros(keys.size, dtype=np.intp)
    counts[slot] = left[keep]
    np.add.at(counts, slot_new, 1)
    remap = np.zeros(nr, dtype=np.intp)
    remap[keep] = slot
    # every row renumbered in place: each index is read before its place is written (a
    # fresh array of millions of rows costs twice the time, in page faults)
    row = np.asarray(row, dtype=np.intp)
    np.take(remap, row, out=row, mode="clip")
    row[rows] = slot_new
    return _design_over(des, grown, keys // k2, keys % k2, c), row, counts


def _design_over(des: Design, J: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> Design:
    """The design of merged runs ``a..b`` over ``J`` with counts ``c``."""
    none = np.zeros(0, dtype=np.intp)
    return Design(m=J.size, inner_left=des.inner_left[J], inner_right=des.inner_right[J],
                  a=a, b=b, c=c, pa=none, pb=none, powner=none, pc=np.zeros(0), pair_i=none,
                  pair_j=none, n=des.n, all_points=des.all_points)
