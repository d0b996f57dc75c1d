"""The data side of the NPMLE: validated reports, their sufficient statistics, Turnbull's
innermost intervals and the likelihood over them.

A *report* is a union of disjoint *pieces*: intervals ``(l, r]`` (``l`` may be
``-inf``, ``r`` may be ``inf``) or exact points ``[x, x]`` (written ``l == r``).  A
plain interval is one piece, a ring range ``(l, inf) U (-inf, r]`` two, a report less an
acceptable range inside it two.  Whatever the number of pieces, the likelihood of a
report is the mass of the innermost intervals it contains, so the design matrix is
0/1 "innermost interval ``j`` lies inside report ``i``"; it is never formed: each piece
covers a contiguous *run* of innermost intervals, and probabilities and gradients are
prefix sums and difference arrays over the runs (O(pieces + m) per pass).

The innermost intervals are computed once, for every kind of report
(:func:`~privspec.backends.interval.npmle.innermost.innermost`); this module builds the :class:`Design` the solver works on:

* reports with one run (most of them: intervals, points) are *plain rows* ``a..b``;
* reports with several runs (rings, reports less an acceptable range) are *multi rows*:
  their pieces' runs with the index of the report each belongs to.

Examples
--------
>>> des = design_from_rows(np.array([0.0, 5.0, 0.5]), np.array([1.0, 0.0, 0.5]),
...                        np.array([1.0, 1.0, 2.0]))
>>> des.inner_left.tolist(), des.inner_right.tolist()
([-inf, 0.5, 5.0], [0.0, 0.5, inf])
>>> des.a.tolist(), des.b.tolist(), des.c.tolist()        # (0, 1] and the point 0.5: one run each
([1], [1], [3.0])
>>> des.pa.tolist(), des.pb.tolist(), des.powner.tolist()  # the ring: two runs
([0, 2], [0, 2], [0, 0])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privspec.errors import DataError, Diagnostic
from privspec.backends.data.tally import run_starts
from privspec.backends.interval.npmle.innermost import innermost

__all__ = ["Design", "aggregate_intervals", "as_rows", "as_pieces", "design_from_rows", "design_from_pieces",
           "innermost", "row_probs", "gradient", "loglik", "merge_rows"]


def _rows_of(mask: np.ndarray) -> tuple[int, ...]:
    """1-based row numbers of the True entries (the data layer's row convention)."""
    return tuple(int(i) + 1 for i in np.flatnonzero(mask))


# ---- input -----------------------------------------------------------------------
def _counts(c: Any, size: int) -> np.ndarray:
    """Validated float counts.  Equal whole counts (one per row, as engines count
    continuous reports) come back as a read-only broadcast of the one value: no array of
    all rows to convert and hold (76 MiB at 1e7 reports)."""
    if c is None:
        return np.broadcast_to(1.0, (size,))
    if isinstance(c, np.ndarray) and c.dtype.kind in "iu" and c.size == size and size:
        lo, hi = c.min(), c.max()
        if lo == hi and lo > 0:
            return np.broadcast_to(float(lo), (size,))
    try:
        out = np.asarray(c, dtype=float).ravel()
    except (TypeError, ValueError) as e:
        raise DataError(Diagnostic("D031", f"counts are not numbers: {e}")) from None
    if out.size != size:
        raise DataError(Diagnostic("D031", f"{out.size} counts for {size} observations"))
    bad = ~np.isfinite(out) | (out < 0)
    if bad.any():
        raise DataError(Diagnostic("D031", "counts must be finite and >= 0", rows=_rows_of(bad)))
    if not (out > 0).any():
        raise DataError(Diagnostic("D031", "no observations (all counts are zero)"))
    return out


def _ends(left: Any, right: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        l = np.asarray(left, dtype=float).ravel()
        r = np.asarray(right, dtype=float).ravel()
    except (TypeError, ValueError) as e:
        raise DataError(Diagnostic("D030", f"interval ends are not numbers: {e}",
                                   hint="write an interval (l, r] as two numbers; -inf/inf allowed")) from None
    if l.shape != r.shape:
        raise DataError(Diagnostic("D030", f"{l.size} left ends but {r.size} right ends"))
    bad = np.isnan(l) | np.isnan(r)
    if bad.any():
        raise DataError(Diagnostic("D030", "missing interval end (NaN)", rows=_rows_of(bad),
                                   hint="privspec does not impute: remove or complete these rows"))
    bad = (l == r) & ~np.isfinite(l)
    if bad.any():
        raise DataError(Diagnostic("D030", "an exact point must be a finite number", rows=_rows_of(bad),
                                   hint="(-inf, -inf] and (inf, inf] are empty; write (-inf, r] or (l, inf)"))
    return l, r


def as_rows(left: Any, right: Any, counts: Any = None, *, ring: bool = False
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated float arrays ``(left, right, counts)``, the zero-count rows removed.

    ``l == r`` is the exact point ``l``; with ``ring`` a row with ``l > r`` is the ring
    range ``(l, inf) U (-inf, r]``, otherwise it is a :class:`~privspec.errors.DataError`
    (D030), as are NaN ends and points at infinity; bad counts are D031.

    Examples
    --------
    >>> as_rows([0, 1, 2], [1, 1, 3], [1, 0, 2])
    (array([0., 2.]), array([1., 3.]), array([1., 2.]))
    >>> as_rows([2], [1])
    Traceback (most recent call last):
    ...
    privspec.errors.DataError: ...D030...
    """
    l, r = _ends(left, right)
    c = _counts(counts, l.size)
    if ring:
        # a ring range (l, inf) U (-inf, r] needs finite ends; l == inf or r == -inf is empty
        bad = (l > r) & ~(np.isfinite(l) & np.isfinite(r))
        hint = "a ring range (l, inf) U (-inf, r] needs finite l > r"
    else:
        bad = l > r
        hint = "an interval (l, r] needs l < r (l == r is the exact point l)"
    if bad.any():
        raise DataError(Diagnostic("D030", f"{int(bad.sum())} interval{'s' if bad.sum() > 1 else ''} "
                                   "with left end > right end", rows=_rows_of(bad), hint=hint))
    keep = c > 0
    if not keep.all():
        l, r, c = l[keep], r[keep], c[keep]
    return l, r, c


def as_pieces(piece_left: Any, piece_right: Any, owner: Any, counts: Any
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validated pieces ``(left, right, owner)`` and report counts; reports with count 0
    (and their pieces) removed, owners renumbered ``0..R-1``.

    Every report needs at least one piece (D030: an empty report has no likelihood).

    Examples
    --------
    >>> pl, pr, ow, c = as_pieces([0, 3, 1], [1, 4, 2], [0, 0, 1], [2, 0])
    >>> pl.tolist(), pr.tolist(), ow.tolist(), c.tolist()
    ([0.0, 3.0], [1.0, 4.0], [0, 0], [2.0])
    """
    l, r = _ends(piece_left, piece_right)
    bad = l > r
    if bad.any():
        raise DataError(Diagnostic("D030", f"{int(bad.sum())} piece(s) with left end > right end",
                                   rows=_rows_of(bad), hint="a piece (l, r] needs l <= r"))
    try:
        ow = np.asarray(owner).ravel().astype(np.intp, casting="same_kind")
    except (TypeError, ValueError) as e:
        raise DataError(Diagnostic("D030", f"piece owners are not report indices: {e}")) from None
    if ow.shape != l.shape:
        raise DataError(Diagnostic("D030", f"{ow.size} owners for {l.size} pieces"))
    c = np.asarray(counts, dtype=float).ravel() if counts is not None else None
    c = _counts(c, c.size if c is not None else (int(ow.max()) + 1 if ow.size else 0))
    if ow.size and (ow.min() < 0 or ow.max() >= c.size):
        raise DataError(Diagnostic("D030", f"piece owners must index the {c.size} reports"))
    held = np.bincount(ow, minlength=c.size) > 0
    if not held[c > 0].all():
        raise DataError(Diagnostic("D030", "a report without any piece (an empty set of values)",
                                   rows=_rows_of(~held & (c > 0))))
    keep = c > 0
    if not keep.all():
        new = np.cumsum(keep) - 1
        on = keep[ow]
        l, r, ow = l[on], r[on], new[ow[on]]
        c = c[keep]
    return l, r, ow, c


def aggregate_intervals(left: Any, right: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ``(l, r)`` pairs of per-respondent interval ends, with their counts.

    Parameters
    ----------
    left, right : array_like
        One entry per respondent: the interval ``(l, r]`` (``l == r`` for an exact point).

    Returns
    -------
    left, right : ndarray of float
        The distinct pairs, sorted by ``l`` then ``r``.
    counts : ndarray of int64
        How many respondents reported each pair.

    Examples
    --------
    >>> l, r, c = aggregate_intervals([0, 1, 0, -np.inf], [1, 2, 1, 0])
    >>> l.tolist(), r.tolist(), c.tolist()
    ([-inf, 0.0, 1.0], [0.0, 1.0, 2.0], [1, 2, 1])
    """
    l = np.asarray(left, dtype=float).ravel()
    r = np.asarray(right, dtype=float).ravel()
    if l.shape != r.shape:
        raise DataError(Diagnostic("D030", f"{l.size} left ends but {r.size} right ends"))
    return _aggregate(l, r)


def merge_rows(l: np.ndarray, r: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Duplicate rows merged (their counts added), sorted by ``l`` then ``r``."""
    return _aggregate(l, r, c)


def _aggregate(l: np.ndarray, r: np.ndarray, c: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct pairs (one sort) with their counts: row counts, or the sums of ``c``."""
    if l.size == 0:
        return l, r, np.zeros(0, dtype=np.int64 if c is None else float)
    if c is not None and l.size > 1 and _increasing(l, r):
        return l, r, c          # already distinct and sorted (an engine's tally): one pass, no sort
    order = np.lexsort((r, l))
    ls, rs = l[order], r[order]
    # NaN never equals itself, so every NaN row stays its own row (the validation names it)
    starts = np.flatnonzero(run_starts(ls, rs))
    if c is None:
        counts = np.diff(np.append(starts, ls.size)).astype(np.int64)
    else:
        counts = np.add.reduceat(c[order], starts)
    return ls[starts], rs[starts], counts


# ---- the design -------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Design:
    """Reports as runs over the ``m`` innermost intervals.

    Attributes
    ----------
    m : int
        Number of innermost intervals.
    inner_left, inner_right : ndarray
        The innermost intervals.
    a, b, c : ndarray
        Plain rows (reports of one run): the run ``a..b`` and the count.
    pa, pb, powner : ndarray
        Pieces of the multi rows (reports of several disjoint, non-adjacent runs): the
        run ``pa..pb`` and the multi row it belongs to, sorted by row then run.
    pc : ndarray
        Counts of the multi rows.
    pair_i, pair_j : ndarray
        Every two pieces of one multi row (``pair_i < pair_j``): the off-diagonal blocks
        of that row's term of the Newton matrix.
    n : float
        Total count.
    all_points : bool
        Whether every report is one exact point (the regular, chi-square case).
    """

    m: int
    inner_left: np.ndarray
    inner_right: np.ndarray
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    pa: np.ndarray
    pb: np.ndarray
    powner: np.ndarray
    pc: np.ndarray
    pair_i: np.ndarray
    pair_j: np.ndarray
    n: float
    all_points: bool
    #: ``b + 1``: where each plain run ends (exclusive), kept for the solver's many passes
    b1: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "b1", self.b + 1)

    @property
    def has_multi(self) -> bool:
        """Whether any report has several runs."""
        return bool(self.pc.size)


def design_from_rows(l: np.ndarray, r: np.ndarray, c: np.ndarray, *,
                     cuts: np.ndarray | None = None) -> Design:
    """The design of validated rows (:func:`as_rows`): ``(l, r]``, points ``l == r``, and
    ring ranges ``(l, inf) U (-inf, r]`` written ``l > r`` (two pieces)."""
    wrap = l > r
    if not wrap.any():
        return _build(l, r, None, c, cuts, all_points=bool(np.all(l == r)))
    # a ring range is the pieces (-inf, r] and (l, inf), side by side (report order)
    owner = np.repeat(np.arange(l.size), 1 + wrap)
    second = np.zeros(owner.size, dtype=bool)
    second[np.cumsum(1 + wrap)[wrap] - 1] = True
    pl = np.where(second, l[owner], np.where(wrap[owner], -np.inf, l[owner]))
    pr = np.where(second, np.inf, r[owner])
    return _build(pl, pr, owner, c, cuts, all_points=False)


def design_from_pieces(pl: np.ndarray, pr: np.ndarray, owner: np.ndarray, c: np.ndarray, *,
                       cuts: np.ndarray | None = None) -> Design:
    """The design of validated pieces (``owner[k]``: the report of piece ``k``)."""
    one_each = owner.size == c.size and np.array_equal(np.sort(owner), np.arange(c.size))
    all_points = bool(one_each and np.all(pl == pr))
    if one_each:
        order = np.argsort(owner, kind="stable")
        return _build(pl[order], pr[order], None, c, cuts, all_points=all_points)
    return _build(pl, pr, owner, c, cuts, all_points=all_points)


def _build(pl: np.ndarray, pr: np.ndarray, owner: np.ndarray | None, c: np.ndarray,
           cuts: np.ndarray | None, *, all_points: bool) -> Design:
    """Innermost intervals, then each report's runs: merged where they touch (a report
    whose runs join up is a plain row), plain rows with the same run merged."""
    # (one piece per report: the rows may come back in another order, c then with them)
    order: list = [] if owner is None else None
    inner_left, inner_right, a, b = innermost(pl, pr, cuts, order)
    m = inner_left.size
    empty_i = np.zeros(0, dtype=np.intp)
    if owner is None:
        # one piece per report: all plain rows (the common case: no grouping at all)
        pa = pb = po = pair_i = pair_j = empty_i
        pc = np.zeros(0)
        if order and not (c.size and c[0] == c.min() == c.max()):
            c = np.asarray(c)[order[0]]
    else:
        a, b, c, pa, pb, po, pc = _split(a, b, owner, c, m)
        pair_i, pair_j = _pairs(po)
    # rows with the same run are one row of the likelihood; rows in order of their ends
    # have their runs mostly in order too: none is the same where the runs increase
    # strictly (one pass instead of a sort)
    c = np.asarray(c, dtype=float)
    if a.size > 1 and not _increasing(a, b):
        # each run as one number, computed in a's own memory (a and b are this function's:
        # innermost made them), each array let go once used (see _innermost_ranges)
        code = a if a.dtype == np.int64 else a.astype(np.int64)
        code *= m + 1
        code += b
        del a, b
        if c[0] == c.min() == c.max():
            # equal counts (one report per row, as continuous reports are): the codes
            # sorted in place, the counts from the runs' lengths
            code.sort()
            starts = np.flatnonzero(run_starts(code))
            c = np.diff(starts, append=code.size) * c[0]
        else:
            # a stable sort finds the runs of increasing codes (a increases with the
            # rows): 0.13 s on 1e7 codes, where np.unique(return_inverse) takes 1.3 s
            order = np.argsort(code, kind="stable")
            code = code[order]
            starts = np.flatnonzero(run_starts(code))
            c = np.add.reduceat(c[order], starts)
            del order
        # (by a floor division, which numpy does by multiplication for one divisor:
        # np.divmod divides each code, 10x slower)
        b = code[starts]
        del code
        a = b // (m + 1)
        b -= a * (m + 1)
    return Design(m=m, inner_left=inner_left, inner_right=inner_right,
                  a=a.astype(np.intp, copy=False), b=b.astype(np.intp, copy=False),
                  c=np.ascontiguousarray(c),      # (an array of its own where rows were not merged)
                  pa=pa.astype(np.intp), pb=pb.astype(np.intp), powner=po.astype(np.intp),
                  pc=np.asarray(pc, dtype=float), pair_i=pair_i, pair_j=pair_j,
                  n=float(np.sum(c) + np.sum(pc)), all_points=all_points)


def _increasing(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the pairs ``(a, b)`` increase strictly (by ``a``, then ``b``): rows in
    order and distinct, or runs ``a..b`` with none the same."""
    up = a[1:] > a[:-1]
    up |= (a[1:] == a[:-1]) & (b[1:] > b[:-1])
    return bool(up.all())


def _split(a: np.ndarray, b: np.ndarray, owner: np.ndarray, c: np.ndarray, m: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Runs of each report merged where they overlap or touch (``a' <= b + 1``), then
    reports of one run apart (plain rows) from those of several (multi rows, renumbered
    and with duplicate run sets merged)."""
    # sorted by report, then run (the callers' order already, usually: no sort then)
    key = owner.astype(np.int64) * (m + 1) + a
    if key.size > 1 and not np.all(key[1:] >= key[:-1]):
        order = np.argsort(key, kind="stable")
        a, b, owner = a[order], b[order], owner[order]
    # the running end of each report's runs: a cumulative max that restarts per report
    # (owner * (m + 1) + b increases from one report to the next)
    base = owner.astype(np.int64) * (m + 1)
    reach = np.maximum.accumulate(base + b) - base
    new = np.ones(a.size, dtype=bool)
    new[1:] = (owner[1:] != owner[:-1]) | (a[1:] > reach[:-1] + 1)
    if not new.all():
        starts = np.flatnonzero(new)
        a, owner = a[starts], owner[starts]
        b = np.maximum.reduceat(b, starts)
    runs = np.bincount(owner, minlength=c.size)
    single = runs[owner] == 1
    plain_a, plain_b, plain_c = a[single], b[single], c[owner[single]]
    multi = ~single
    if not multi.any():
        e = np.zeros(0, dtype=np.intp)
        return plain_a, plain_b, plain_c, e, e, e, np.zeros(0)
    pa, pb, po = a[multi], b[multi], owner[multi]
    # one row per multi report: its runs' ends side by side (-1 beyond its last run)
    width = int(runs.max())
    head = np.ones(po.size, dtype=bool)
    head[1:] = po[1:] != po[:-1]
    first = np.flatnonzero(head)
    local = np.cumsum(head) - 1
    rank = np.arange(po.size) - first[local]
    key = np.full((first.size, 2 * width), -1, dtype=np.int64)
    key[local, 2 * rank] = pa
    key[local, 2 * rank + 1] = pb
    # reports with the same runs are one row of the likelihood (a lexsort of the rows:
    # much faster than np.unique(axis=0))
    order = np.lexsort(key.T[::-1])
    sk = key[order]
    distinct = np.ones(order.size, dtype=bool)
    distinct[1:] = np.any(sk[1:] != sk[:-1], axis=1)
    group = np.cumsum(distinct) - 1
    row_group = np.empty(order.size, dtype=np.intp)
    row_group[order] = group
    pc = np.bincount(row_group, weights=c[po[first]], minlength=int(group[-1]) + 1)
    # keep the pieces of one report per group (the first in sorted order), renumbered
    rep = np.zeros(first.size, dtype=bool)
    rep[order[distinct]] = True
    keep = rep[local]
    pa, pb, po = pa[keep], pb[keep], row_group[local[keep]]
    order = np.lexsort((pa, po))
    return plain_a, plain_b, plain_c, pa[order], pb[order], po[order], pc


def _pairs(po: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every two pieces ``i < j`` of one row (``po`` sorted): a loop over the offset,
    which is at most the largest number of pieces of a row."""
    if po.size == 0:
        e = np.zeros(0, dtype=np.intp)
        return e, e
    pi, pj = [], []
    d = 1
    while d < po.size:
        same = np.flatnonzero(po[d:] == po[:-d])
        if same.size == 0:
            break
        pi.append(same)
        pj.append(same + d)
        d += 1
    return (np.concatenate(pi).astype(np.intp), np.concatenate(pj).astype(np.intp)) if pi else \
        (np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp))


# ---- the likelihood over a design ---------------------------------------------------------
def row_probs(des: Design, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``P_i``: the probability of each plain row and of each multi row under masses ``p``.

    Examples
    --------
    >>> des = design_from_rows(np.array([0.0, 5.0]), np.array([1.0, 0.0]), np.ones(2))
    >>> [x.tolist() for x in row_probs(des, np.array([0.5, 0.25, 0.25]))]
    [[0.25], [0.75]]
    """
    S = prefix_sums(p)
    P = run_mass(p, S, des.a, des.b, des.b1)
    if not des.pc.size:
        return P, np.zeros(0)
    # a multi row's probability is the sum over its runs, each summed directly (a ring's
    # two ends, not 1 minus its complement, which loses digits near 1)
    return P, np.bincount(des.powner, run_mass(p, S, des.pa, des.pb), minlength=des.pc.size)


def prefix_sums(p: np.ndarray) -> np.ndarray:
    """``S[t] = p[0] + ... + p[t-1]`` (``S[0] = 0``), for sums over runs."""
    S = np.empty(p.size + 1)
    S[0] = 0.0
    np.cumsum(p, out=S[1:])
    return S


def run_mass(p: np.ndarray, S: np.ndarray, a: np.ndarray, b: np.ndarray, b1: np.ndarray | None = None
             ) -> np.ndarray:
    """``p[a_i] + ... + p[b_i]`` per run, from the prefix sums ``S`` of ``p`` (``b1``:
    ``b + 1`` where the caller keeps it).  A run of one takes its mass itself (an exact
    point, say): the difference of prefix sums near 1 would keep only ~1e-16 / p of it
    (1e-10 at p = 1e-6)."""
    P = S[b + 1 if b1 is None else b1]
    P -= S[a]           # (in place: one fresh array of all rows less)
    one = a == b
    P[one] = p[a[one]]
    return P


def gradient(des: Design, P: np.ndarray, MP: np.ndarray, *, spend: bool = False) -> np.ndarray:
    """``D_j = sum_i c_i [j in R_i] / P_i`` over all innermost intervals (a difference array).
    ``spend``: ``P`` is the caller's to lose (the weights are written over it: one array of
    every row less).

    Examples
    --------
    >>> des = design_from_rows(np.array([0.0, 5.0]), np.array([1.0, 0.0]), np.ones(2))
    >>> gradient(des, *row_probs(des, np.array([0.5, 0.25, 0.25]))).round(4).tolist()
    [1.3333, 4.0, 1.3333]
    """
    m = des.m
    w = np.divide(des.c, P, out=P) if spend and P.shape == des.c.shape else des.c / P
    # (float even without plain rows: bincount of nothing counts in integers.  The rows from
    # the first innermost interval could add their sum there without a count, 0.4 of 4 ms
    # at 1e6 Case-II reports, but a sum in another order moves the fit by round-off, and
    # the quartiles of a fit at 1e7 with it, to the neighbouring innermost interval)
    diff = np.bincount(des.a, w, minlength=m + 1).astype(float, copy=False)
    diff -= np.bincount(des.b1, w, minlength=m + 1)
    if des.pc.size:
        ww = (des.pc / MP)[des.powner]
        diff += np.bincount(des.pa, ww, minlength=m + 1)
        diff -= np.bincount(des.pb + 1, ww, minlength=m + 1)
    out = diff[:m]
    return np.cumsum(out, out=out)


def loglik(des: Design, P: np.ndarray, MP: np.ndarray) -> float:
    """``sum_i c_i log P_i`` (natural log, not divided by n; -inf where some ``P_i = 0``)."""
    with np.errstate(divide="ignore"):
        ll = float(des.c @ np.log(P))
        if des.pc.size:
            ll += float(des.pc @ np.log(MP))
    return ll
