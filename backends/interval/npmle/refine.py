"""The design of the fit refined at the band's points (:func:`refine_design`): derived from
the fit's own, a few passes over its rows, where building it again sorts them twice."""
from __future__ import annotations

import numpy as np

from privspec.backends.data.tally import run_starts
from privspec.backends.interval.npmle.data import Design, design_from_rows  # noqa: F401 (doctest)

__all__ = ["refine_design"]


def _new(sorted_values: np.ndarray, more: np.ndarray) -> np.ndarray:
    """The distinct values of ``more`` not among the sorted ``sorted_values``, sorted."""
    more = np.unique(more)
    return more[~_holds(sorted_values, more)]


def _added(values: np.ndarray, old: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """The entries of ``values`` (sorted, distinct) not in ``old`` (sorted, distinct), where
    those can only be among ``candidates``: searches of the few candidates alone."""
    cand = np.unique(candidates)
    return cand[_holds(values, cand) & ~_holds(old, cand)]


def _holds(sorted_values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Whether each of ``x`` is one of ``sorted_values`` (sorted)."""
    if not sorted_values.size:
        return np.zeros(x.size, dtype=bool)
    return sorted_values[np.minimum(np.searchsorted(sorted_values, x), sorted_values.size - 1)] == x


def refine_design(des: Design | list, l: np.ndarray, r: np.ndarray, c: np.ndarray, cuts: np.ndarray
                  ) -> Design | None:
    """:func:`design_from_rows` of the merged rows ``l, r, c`` (:func:`merge_rows`) with
    ``cuts``, from ``des``, their design without cuts: the same arrays, where the rows are
    plain ranges (no points, no rings) and the cuts finite; None otherwise.  ``des`` may
    be a list holding the design: it is emptied, and the design let go as soon as its
    rows are mapped (at 1e7 reports the peak of a fit with its band 1.75 GB, 1.92 GB
    holding it to the end; 1.77 GB before the design was derived).

    A cut's ranges ``(-inf, x]`` and ``(x, inf)`` change the innermost intervals only next
    to ``x``: one that holds ``x`` inside is split in two, and a left end followed by ``x``
    (or ``x`` followed by a right end) makes a new one.  So the innermost intervals are
    those of a skeleton of ends -- the old innermost intervals' ends, the cuts, and each
    cut's nearest ends on either side -- and each row's run follows from its old run by
    two monotone maps, except the few rows whose ends lie where a new innermost interval
    begins or ends inside an old gap: those are read from ``l, r`` themselves.  At 1e6
    Case-II reports this is a few passes over the rows where building the design again
    sorts them twice (0.05 s).

    Examples
    --------
    >>> l, r = np.array([-np.inf, 0.0, 0.5, 1.0]), np.array([1.0, 2.0, np.inf, 3.0])
    >>> c = np.ones(4)
    >>> new = refine_design(design_from_rows(l, r, c), l, r, c, np.array([0.7, 2.5]))
    >>> old = design_from_rows(l, r, c, cuts=np.array([0.7, 2.5]))
    >>> all(np.array_equal(getattr(new, f), getattr(old, f)) for f in ("inner_left", "inner_right", "a", "b", "c"))
    True
    """
    if isinstance(des, list):
        des = des.pop()
    cuts = np.unique(np.asarray(cuts, dtype=float))
    if (des.has_multi or des.all_points or not cuts.size or not np.all(np.isfinite(cuts)) or not l.size
            or des.m == 0 or bool(np.any(l == r))):
        return None
    L, R, m = des.inner_left, des.inner_right, des.m
    L2, R2, add_l, add_r = _skeleton(L, R, l, r, cuts)
    m2 = L2.size
    # every old innermost interval keeps its ends (a split one gives them to its halves), so
    # the new ends are the old ones and a few more: a row whose old run starts at a (its
    # left end in (L[a-1], L[a]]) now starts at a plus the new left ends below L[a], unless
    # one lies strictly inside (L[a-1], L[a]) (then the row's own end decides); likewise
    # a run ending at b (right end in [R[b], R[b+1])) ends at b plus the new right ends
    # at or below R[b], unless one lies strictly inside (R[b], R[b+1])
    more_l, more_r = _added(L2, L, add_l), _added(R2, R, add_r)
    if L2.size != m + more_l.size or R2.size != m + more_r.size:    # pragma: no cover - an old end lost
        return None
    below_a = np.cumsum(np.bincount(np.searchsorted(L, more_l), minlength=m + 1))[:m]
    special_a = np.diff(below_a, prepend=0) > 0
    amap = np.arange(m) + below_a
    below_b = np.cumsum(np.bincount(np.searchsorted(R, more_r), minlength=m + 1))
    special_b = below_b[1:] > below_b[:-1]
    bmap = np.arange(m) + below_b[:-1]
    # every row's run mapped (the special rows' too: the maps increase, so the rows stay in
    # order of their runs), the special ones then dropped and those read from their ends
    # spliced in: one pass over each array, into its one new array (1e7 Case-II reports,
    # 7.5e6 rows and a few dozen special: 0.05 s where picking the kept rows, mapping them
    # and inserting took 0.2-0.9 s, most of it fresh memory)
    drop = np.flatnonzero(special_a[des.a] | special_b[des.b])
    rows = _rows_by_ends(l, r, L, R, special_a, special_b)
    a, b, kc = _merge_rows_by_ends(des, amap, bmap, drop, rows, l, r, c, L2, R2)
    del des                 # (the old rows: the only reference where a list held them)
    none = np.zeros(0, dtype=np.intp)
    return Design(m=m2, inner_left=L2, inner_right=R2, a=a.astype(np.intp, copy=False),
                  b=b.astype(np.intp, copy=False), c=np.ascontiguousarray(kc, dtype=float), pa=none, pb=none,
                  powner=none, pc=np.zeros(0), pair_i=none, pair_j=none, n=float(np.sum(kc)), all_points=False)


def _skeleton(L: np.ndarray, R: np.ndarray, l: np.ndarray, r: np.ndarray, cuts: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`refine_design`'s innermost intervals (their left and right ends) and the ends
    it added to the old ones: the cuts and each cut's nearest ends."""
    # each cut's nearest ends: the rows are sorted by their left ends; the right ends are not
    below = np.searchsorted(l, cuts, side="left") - 1
    above = np.searchsorted(l, cuts, side="right")
    add_l = [cuts, [-np.inf], l[below[below >= 0]], l[above[above < l.size]]]
    add_r = [cuts, [np.inf]]
    # (a pass over the right ends each; a cut that is an innermost interval's right end, as
    # the band's quartiles are, needs no right end below it: the key before it stays a
    # left, so nothing ending there changes)
    for x, known in zip(cuts.tolist(), _holds(R, cuts).tolist()):
        if not known:
            add_r.append([np.max(r, where=r < x, initial=-np.inf)])
        add_r.append([np.min(r, where=r > x, initial=np.inf)])
    # the innermost intervals of the skeleton, as _innermost_ranges finds them: a left end
    # is one when the first right end beyond it comes before the next left end (the few
    # ends added where the old ones are sorted: no sort of them all)
    add_l, add_r = np.concatenate(add_l), np.concatenate(add_r)
    new_l, new_r = _new(L, add_l), _new(R, add_r)
    at_l = np.searchsorted(L, new_l)
    ls = np.insert(L, at_l, new_l)
    rs = np.insert(R, np.searchsorted(R, new_r), new_r)
    # beyond[j] = the right ends at or below ls[j], counted, not searched: an old left L_i
    # has i old rights at or below it (innermost intervals are disjoint and in order), a
    # new left is searched; each new right counts from the first left at or above it
    # (1e7 Case-II reports: 42 ms for a search of every left)
    beyond = np.insert(np.arange(L.size), at_l, np.searchsorted(R, new_l, side="right"))
    more = np.zeros(ls.size + 1, dtype=np.intp)
    np.add.at(more, np.searchsorted(ls, new_r, side="left"), 1)
    beyond += np.cumsum(more[:-1])
    inner = beyond < rs.size
    inner[:-1] &= beyond[1:] > beyond[:-1]
    return ls[inner], rs[beyond[inner]], add_l, add_r


#: :func:`_rows_by_ends` finds the right ends in up to this many ranges by comparisons
_FEW_RANGES = 8


def _rows_by_ends(l: np.ndarray, r: np.ndarray, L: np.ndarray, R: np.ndarray, special_a: np.ndarray,
                  special_b: np.ndarray) -> np.ndarray:
    """The rows :func:`refine_design` reads from their ends: those with a special old run
    (the rows are sorted by their left ends, so each special start is a slice; the ends
    are one search)."""
    m = L.size
    mine = np.zeros(l.size, dtype=bool)
    for t in np.flatnonzero(special_a).tolist():
        lo = 0 if t == 0 else np.searchsorted(l, L[t - 1], side="right")
        mine[lo:np.searchsorted(l, L[t], side="right")] = True
    tb = np.flatnonzero(special_b)
    if tb.size:
        last = tb[-1] == m - 1              # [R[m-1], inf]: closed at inf
        inner_b = tb[:-1] if last else tb
        if inner_b.size <= _FEW_RANGES:
            # a few ranges [R[t], R[t + 1]): two comparisons each (at 1e7 Case-II reports
            # 0.23 s by a binary search of every right end among their ends)
            for lo, hi in zip(R[inner_b].tolist(), R[inner_b + 1].tolist()):
                mine |= (r >= lo) & (r < hi)
        else:
            edges = np.column_stack([R[inner_b], R[inner_b + 1]]).ravel()
            mine |= (np.searchsorted(edges, r, side="right") & 1).astype(bool)
        if last:
            mine |= r >= R[m - 1]
    return np.flatnonzero(mine)


def _merge_rows_by_ends(des: Design, amap: np.ndarray, bmap: np.ndarray, drop: np.ndarray, rows: np.ndarray,
                        l: np.ndarray, r: np.ndarray, c: np.ndarray, L2: np.ndarray, R2: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The runs ``a, b`` and counts of the design's rows, mapped by ``amap, bmap`` (both
    increase: the rows stay in order of their runs), without the rows ``drop`` and with
    ``rows`` (read from their ends on the new innermost intervals ``L2, R2``) merged in,
    in order of their runs."""
    m2 = L2.size
    counts = np.asarray(c, dtype=float)[rows]
    sa = np.searchsorted(L2, l[rows], side="left")
    sb = np.searchsorted(R2, r[rows], side="right") - 1
    code = sa.astype(np.int64) * (m2 + 1) + sb
    order = np.argsort(code, kind="stable")
    code, counts = code[order], counts[order]
    starts = np.flatnonzero(run_starts(code))
    code, counts = code[starts], np.add.reduceat(counts, starts)
    # where each goes among the rows, by its start then its end among those with that
    # start (the mapped starts searched as the old ones: amap increases); one with the run
    # of a row that stays adds its count there
    sa, sb = code // (m2 + 1), code % (m2 + 1)
    first = np.searchsorted(des.a, np.searchsorted(amap, sa, side="left"), side="left")
    past = np.searchsorted(des.a, np.searchsorted(amap, sa, side="right"), side="left")
    at = np.array([f + int(np.searchsorted(bmap[des.b[f:e]], e2)) for f, e, e2 in
                   zip(first.tolist(), past.tolist(), sb.tolist())], dtype=np.intp)
    same = at < past
    same[same] = (bmap[des.b[at[same]]] == sb[same]) & ~np.isin(at[same], drop)
    new = ~same
    into, more = at[same], counts[same]
    at, sa, sb, counts = at[new], sa[new], sb[new], counts[new]
    kc = _splice(des.c, drop, at, counts)
    # (a row that stays moves back by the dropped rows before it, on by those inserted)
    kc[into - np.searchsorted(drop, into) + np.searchsorted(at, into, side="right")] += more
    return _splice(des.a, drop, at, sa, amap), _splice(des.b, drop, at, sb, bmap), kc


def _splice(x: np.ndarray, drop: np.ndarray, at: np.ndarray, values: np.ndarray, table: np.ndarray | None = None
            ) -> np.ndarray:
    """``x`` (read through ``table`` where given: ``table[x]``) without the entries ``drop``
    (sorted) and with ``values`` inserted before the entries ``at`` (nondecreasing;
    ``x.size``: at the end), in one pass into one new array: a slice copy (or gather)
    between each two of those few places.

    Examples
    --------
    >>> _splice(np.arange(6), np.array([2]), np.array([0, 2, 6]), np.array([-1, -2, -3])).tolist()
    [-1, 0, 1, -2, 3, 4, 5, -3]
    """
    out = np.empty(x.size - drop.size + at.size, dtype=np.result_type(x if table is None else table, values))

    def copy(src: int, end: int, dst: int) -> None:
        if table is None:
            out[dst:dst + end - src] = x[src:end]
        else:
            np.take(table, x[src:end], out=out[dst:dst + end - src], mode="clip")   # (clip: no buffer)

    # the places in order: an insertion before the entry it precedes (which may be dropped)
    places = sorted([(int(t), 0, k) for k, t in enumerate(at.tolist())] + [(int(t), 1, -1) for t in drop.tolist()])
    src = dst = 0
    for t, is_drop, k in places:
        copy(src, t, dst)
        dst += t - src
        src = t
        if is_drop:
            src += 1
        else:
            out[dst] = values[k]
            dst += 1
    copy(src, x.size, dst)
    return out
