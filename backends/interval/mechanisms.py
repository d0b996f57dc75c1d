"""Interval reports as written: the one convention, and reading and writing it.

The one convention
------------------
Every report of an interval mechanism is a pair of floats ``(l, r)``:

* ``l < r``: the interval ``(l, r] = {y : l < y <= r}``, with ``l = -inf`` and
  ``r = inf`` allowed.  Case I gives ``(-inf, U]`` or ``(U, inf]``; the finite ends are
  always the anchors that were drawn (nothing is clipped to the variable's support,
  so the anchors stay in the data: Example 2 needs them).
* ``l == r``: the disclosed point ``l`` (an acceptable range, Definition 2).
* ``l > r``: a ring range (Example 3), ``(-inf, r] U (l, inf]``, i.e. the complement
  of ``(r, l]``: read on the circle where ``-inf`` and ``inf`` are joined it is still
  the arc from ``l`` to ``r``.
* ``NaN``: nothing was collected (``null`` of a selective mechanism, Definition 5).

Written in a data table (LANGUAGE.md, "Data") the same reports are ``(l, r]``
(``-inf``/``inf`` allowed; ``)`` is accepted after ``inf``), the number itself for a
point, ``(-inf, r] | (l, inf]`` for a ring range, and ``null`` (or an empty cell)
for nothing collected.  :func:`parse_ranges` and :func:`format_ranges` convert
between the two, vectorized (no Python loop over respondents).

Interval-censored data that privspec did not privatize (``censored(Y, ...)``) are written
with their own brackets, ``(a, b]``, ``[a, b]``, ``[a, b)``, ``(a, b)`` and exact values, or
in two columns of lower and upper ends: :func:`parse_censored` and :func:`parse_bounds` read
them into :class:`Censored` (ends and closedness), whose :meth:`Censored.encoded` is the
same sets in the one convention, exactly.  Every number is read correctly rounded
(:func:`parse_floats`).

The mechanisms draw these reports (:mod:`.sampling`, from the laws of :mod:`.laws`);
what a report says about Y is in :mod:`.ranges`.

Examples
--------
>>> import numpy as np
>>> left, right = parse_ranges(["(-inf, 2.5]", "(1, inf]", "3", "(-inf, -1] | (4, inf)", "null"],
...                            allow_null=True)
>>> left.tolist(), right.tolist()
([-inf, 1.0, 3.0, 4.0, nan], [2.5, inf, 3.0, -1.0, nan])
>>> format_ranges(left, right).tolist()
['(-inf, 2.5]', '(1, inf]', '3', '(-inf, -1] | (4, inf]', 'null']
"""
from __future__ import annotations

import re
from typing import NamedTuple, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from privspec.errors import DataError, Diagnostic
from privspec.backends.core.numbers import parse_numbers
from privspec.backends.data.tally import ROWS, Rows, unusual_text

#: how a null (not collected) report is written
NULL = "null"


# ---- parsing and writing ------------------------------------------------------------------------
_NUM = r"[+-]?(?:inf(?:inity)?|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_INTERVAL = re.compile(rf"^\(\s*({_NUM})\s*,\s*({_NUM})\s*(\]|\))$", re.IGNORECASE)
_POINT = re.compile(rf"^{_NUM}$", re.IGNORECASE)
#: how a missing value may be written (in the two-column layout of censored data: an open end)
_MISSING = ("", "na", "n/a", "nan", "none", NULL)


def _re2(rx: re.Pattern) -> str:
    """The RE2 form of one of this module's patterns (Arrow's regular expressions): the
    same syntax, case folded as the pattern is."""
    return ("(?i)" if rx.flags & re.IGNORECASE else "") + rx.pattern


#: the reports :func:`parse_ranges` reads that SQL (DuckDB, whose regular expressions are
#: RE2 and whose cast to DOUBLE rounds correctly) reads alike: ``(a, b]`` with a < b,
#: ``(a, inf)`` and a finite disclosed value, written with plain numbers and ASCII spaces.
#: Everything else (rings, nulls, other spellings, what is not a report) is left to
#: parse_ranges, so that every engine gives the same values and the same messages.
_SQL_NUM = r"[+-]?(?:inf(?:inity)?|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"


def ranges_sql() -> tuple[tuple[tuple[str, str], ...], str, tuple[str, str]]:
    """``(prepare, ok, (left, right))``: SQL over a report's text ``x`` -- ``prepare`` names
    values computed once (the match of the patterns), then where ``ok`` holds the report's
    ends as :func:`parse_ranges` reads them (see :data:`_SQL_NUM`)."""
    # the ASCII spaces Python strips, matched by the patterns rather than trimmed first
    # (trim writes a new string per report: a quarter of the parse at 1e7 reports)
    ws = r"[ \t\n\r\x0B\f]*"
    # a whole match without groups runs as RE2's DFA; the ends are then cut at the one
    # '(', ',' and ']' or ')' a matching text has (numbers hold none of them) and cast,
    # the cast skipping the spaces around them as the pattern allows (1e7 reports: 1.4 s
    # where extracting the pattern's groups took 3.9 s)
    interval = rf"(?i){ws}\(\s*{_SQL_NUM}\s*,\s*{_SQL_NUM}\s*[\])]{ws}"
    point = rf"(?i){ws}{_SQL_NUM}{ws}"
    # First the texts written as privspec writes them, ``(a, b]``, without a pattern (a
    # regular expression costs DuckDB some 130 ns a text, whatever the pattern: 0.7 s of
    # 2.4 at 1e7 reports): cut at the first comma and cast.  A cast to DOUBLE that
    # succeeds reads its text as Python's float does, to the bit (both round correctly),
    # except where the text holds '+' ('+-1' is -1 to DuckDB) or '_' ('1_' and '1e1_0'),
    # or reads NaN ('nan(1)'), which is left out (DuckDB 1.1 and 2.0 alike:
    # tests/test_engines.py); a second comma, bracket or anything else a number cannot
    # hold fails the cast.  The rest go through the patterns.
    prepare = (("q", "CASE WHEN x LIKE '(%,%]' AND NOT contains(x, '+') AND NOT contains(x, '_') "
                     "THEN instr(x, ',') END"),
               ("qa", "TRY_CAST(substr(x, 2, q - 2) AS DOUBLE)"),
               ("qb", "TRY_CAST(substr(x, q + 1, length(x) - q - 1) AS DOUBLE)"),
               # (NaN is the largest DOUBLE to DuckDB: a < NaN holds)
               ("fast", "coalesce(qa < qb AND NOT isnan(qb), false)"),
               # (CASE: the pattern is matched on the other texts only)
               ("f", f"CASE WHEN fast THEN false ELSE regexp_full_match(x, '{interval}') END"),
               ("o", "CASE WHEN f THEN instr(x, '(') END"),
               ("c", "CASE WHEN f THEN instr(x, ',') END"),
               # a matching text has one closing bracket: k > 0 for ']', and only ')' is
               # looked for where there is none (the test k > 0 rather than x[e] = ']',
               # which counts characters up to e: 0.35 s of 2.7 at 1e7 reports)
               ("k", "CASE WHEN f THEN instr(x, ']') END"),
               ("e", "CASE WHEN k > 0 THEN k ELSE instr(x, ')') END"),
               # the ends, from the quick cut or from the pattern's match
               ("ma", "CASE WHEN fast THEN qa ELSE TRY_CAST(substr(x, o + 1, c - o - 1) AS DOUBLE) END"),
               ("mb", "CASE WHEN fast THEN qb ELSE TRY_CAST(substr(x, c + 1, e - c - 1) AS DOUBLE) END"),
               ("v", f"CASE WHEN fast OR f THEN NULL WHEN regexp_full_match(x, '{point}') "
                     f"THEN TRY_CAST(trim(x, ' \t\n\r\x0b\x0c') AS DOUBLE) END"),
               ("iv", "(fast OR (f AND ma < mb AND (k > 0 OR mb = 'inf'::DOUBLE)))"))
    return prepare, "(iv OR isfinite(v))", ("CASE WHEN iv THEN ma ELSE v END", "CASE WHEN iv THEN mb ELSE v END")


def _extract(text: pd.Series, rx: re.Pattern) -> pd.DataFrame:
    """``text.str.extract(rx)`` (its groups, NaN where no match), in one vectorized pass
    of Arrow's RE2 over the values; the values RE2 does not match (its \\s and \\d are
    ASCII, Python's Unicode) are matched by Python's ``re``, so the groups are Python's."""
    n = rx.groups
    values = np.asarray(text.to_numpy(dtype=object), dtype=object)
    out = pd.DataFrame({i: pd.Series(np.full(len(values), np.nan, dtype=object), index=text.index)
                        for i in range(n)})
    if not len(values):
        return out
    try:
        got = pc.extract_regex(pa.array(values, type=pa.string()), _named(rx))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError):
        return text.str.extract(rx)
    matched = got.is_valid().to_numpy(zero_copy_only=False)
    for i in range(n):
        col = got.field(i).to_numpy(zero_copy_only=False)
        out.iloc[np.flatnonzero(matched), i] = col[matched]
    rest = np.flatnonzero(~matched & unusual_text(values))
    if len(rest):
        slow = text.iloc[rest].str.extract(rx)
        for i in range(n):
            out.iloc[rest, i] = slow[i].to_numpy(dtype=object)
    return out


def _fullmatch(text: pd.Series, rx: re.Pattern) -> np.ndarray:
    """``text.str.fullmatch(rx)`` as a bool array (the patterns are anchored), by Arrow's RE2,
    the values it does not match checked again by Python's ``re`` (see :func:`_extract`)."""
    values = np.asarray(text.to_numpy(dtype=object), dtype=object)
    if not len(values):
        return np.zeros(0, dtype=bool)
    try:
        hit = pc.match_substring_regex(pa.array(values, type=pa.string()), _re2(rx)).to_numpy(zero_copy_only=False)
        hit = np.asarray(hit, dtype=object)
        hit = np.where(pd.isna(hit), False, hit).astype(bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError):
        return text.str.fullmatch(rx.pattern, flags=rx.flags).to_numpy(dtype=bool, na_value=False)
    rest = np.flatnonzero(~hit & unusual_text(values))
    if len(rest):
        hit[rest] = text.iloc[rest].str.fullmatch(rx.pattern, flags=rx.flags).to_numpy(dtype=bool, na_value=False)
    return hit


def _named(rx: re.Pattern) -> str:
    """RE2 form of ``rx`` with its capturing groups named g0, g1, ... (Arrow requires names)."""
    pattern, k, out, i = _re2(rx), 0, [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "(" and not pattern.startswith("(?", i):
            out.append(f"(?P<g{k}>")
            k += 1
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_floats(text: Sequence[str] | pd.Series | np.ndarray) -> np.ndarray:
    """Correctly rounded doubles of number strings (NaN where an entry is missing).

    The strings must already be numbers (``_NUM``: decimals, exponents, ``inf``); the
    callers match them first and name the rows that are not.  The conversion is the one
    every data file goes through, :func:`privspec.backends.core.numbers.parse_numbers` (Python's
    ``float`` once per distinct string): ``pd.to_numeric``, used before, put 36-39% of
    random 17-digit decimals on a neighbouring double under pandas 2, so
    ``0.69999999999999996`` (the double 0.7) fell below a disclosed range ``[0.7, 10.4]``.

    Examples
    --------
    >>> parse_floats(["0.69999999999999996", "-inf", None, "2.5e-3"]).tolist()
    [0.7, -inf, nan, 0.0025]
    """
    s = pd.Series(text, dtype=object)
    out = np.full(len(s), np.nan)
    have = s.notna().to_numpy()
    if have.any():
        out[have] = parse_numbers(s[have])[0]
    return out


def _bad(rows: Sequence[int], column: str | tuple[str, ...], message: str, hint: str, code: str = "D101") -> DataError:
    """A data error naming ``rows`` (1-based file rows, from a :class:`.tally.Rows`)."""
    columns = (column,) if isinstance(column, str) else tuple(column)
    return DataError(Diagnostic(code, message, rows=tuple(rows), columns=columns, hint=hint))


def _shown(text: pd.Series, mask: np.ndarray) -> str:
    """The first three values where ``mask``, quoted."""
    return ", ".join(repr(v) for v in text[mask].iloc[:3])


_HINT = "write an interval as (a, b] with a < b (-inf and inf allowed), a disclosed value as the number, " \
        "a ring range as (-inf, a] | (b, inf], and null where nothing was collected"


def parse_ranges(values: Sequence[str] | pd.Series, column: str = "value",
                 allow_null: bool = False, where: Rows = ROWS) -> tuple[np.ndarray, np.ndarray]:
    """Parse written reports into ``(left, right)`` arrays (the module's convention).

    Raises :class:`DataError` D101 naming the rows that are not a report, and D004
    for missing values unless ``allow_null`` (then they are NaN: not collected).
    Numbers are correctly rounded (:func:`parse_floats`).  ``where`` names the file rows
    of the values (one value per row by default; a tally's distinct values otherwise).
    """
    s = pd.Series(values, dtype=object).astype(str).str.strip()
    n = len(s)
    left = np.full(n, np.nan)
    right = np.full(n, np.nan)
    null = s.str.lower().isin(_MISSING).to_numpy()
    if null.any() and not allow_null:
        rows = where(null)
        raise _bad(rows, column, f"{len(rows)} missing report(s)",
                   "privspec does not impute: remove these rows, or collect through selective(...) "
                   "where null means 'not collected'", code="D004")
    # points: the number itself
    point = _fullmatch(s, _POINT) & ~null
    if point.any():
        left[point] = right[point] = parse_floats(s[point])
    # ring ranges: (-inf, a] | (b, inf]
    union = s.str.contains("|", regex=False).to_numpy() & ~null
    if union.any():
        parts = s[union].str.split("|", n=1, expand=True)
        a = _extract(parts[0].str.strip(), _INTERVAL)
        b = _extract(parts[1].str.strip(), _INTERVAL) if parts.shape[1] > 1 else a * np.nan
        al, ar = parse_floats(a[0]), parse_floats(a[1])
        bl, br = parse_floats(b[0]), parse_floats(b[1])
        ok = (al == -np.inf) & (br == np.inf) & (ar < bl) & np.isfinite(ar) & np.isfinite(bl)
        idx = np.flatnonzero(union)
        left[idx[ok]] = bl[ok]
        right[idx[ok]] = ar[ok]
    plain = ~(null | point | union)
    if plain.any():
        m = _extract(s[plain], _INTERVAL)
        lo, hi = parse_floats(m[0]), parse_floats(m[1])
        closing = m[2].to_numpy()
        ok = (lo < hi) & ((closing == "]") | (hi == np.inf))
        ok &= ~np.isnan(lo) & ~np.isnan(hi)
        idx = np.flatnonzero(plain)
        left[idx[ok]] = lo[ok]
        right[idx[ok]] = hi[ok]
    bad = ~null & (np.isnan(left) | np.isnan(right) | (np.isinf(left) & (left == right))
                   | (left == np.inf) | (right == -np.inf))
    if bad.any():
        rows = where(bad)
        raise _bad(rows, column, f"{len(rows)} value(s) are not interval reports (e.g. {_shown(s, bad)})", _HINT)
    return left, right


# ---- interval-censored data as they come (censored(Y, ...)) -----------------------------------------
#: endpoint conventions of censored(Y, ends = ...): name -> (left end closed, right end closed)
ENDS: dict[str, tuple[bool, bool]] = {"right_closed": (False, True), "closed": (True, True),
                                      "left_closed": (True, False), "open": (False, False)}
_BRACKETED = re.compile(rf"^([\(\[])\s*({_NUM})\s*,\s*({_NUM})\s*([\]\)])$", re.IGNORECASE)
_CENSORED_HINT = ("write an interval with its brackets, (a, b], [a, b], [a, b) or (a, b) with a < b "
                  "(-inf and inf allowed: (a, inf) is right-censored, (-inf, b] left-censored), and an "
                  "exact value as the number (or [x, x])")


class Censored(NamedTuple):
    """Interval-censored observations as written: ends and whether each end is closed.

    ``left <= right``; ``left == right`` is an exact value (both ends closed); an
    infinite end is always open.  :meth:`encoded` turns them into this module's one
    convention ``(l, r]``.
    """

    left: np.ndarray
    right: np.ndarray
    left_closed: np.ndarray
    right_closed: np.ndarray

    def encoded(self) -> tuple[np.ndarray, np.ndarray]:
        """The same sets as half-open intervals ``(l, r]`` of doubles (points stay ``l == r``).

        A closed left end ``[a`` is ``(a', `` with ``a'`` the double below ``a``, an open
        right end ``b)`` is ``, b']`` with ``b'`` the double below ``b``: no double lies
        between ``a'`` and ``a``, so the two describe the same set of doubles, and every
        data end is a double.  The NPMLE depends on the data only through which
        observation sets meet which (Turnbull's innermost intervals), so it is exactly the
        same fit, and the engine and everything built on it (bands, jackknife, parametric
        fits) take censored data unchanged.  (npsurv moves open left ends by
        ``1e-8 max(R)`` instead, which is exact only when no two ends are that close.)

        Examples
        --------
        >>> c = parse_censored(["[1, 2]", "(1, 2)", "3"])
        >>> l, r = c.encoded()
        >>> (l == np.nextafter(1.0, -np.inf)).tolist(), (r == np.nextafter(2.0, -np.inf)).tolist()
        ([True, False, False], [False, True, False])
        """
        interval = self.left < self.right
        left = np.where(interval & self.left_closed & np.isfinite(self.left),
                        np.nextafter(self.left, -np.inf), self.left)
        # an infinite end is open anyway; only a finite open right end moves
        right = np.where(interval & ~self.right_closed & np.isfinite(self.right),
                         np.nextafter(self.right, -np.inf), self.right)
        return left, right


def parse_censored(values: Sequence[str] | pd.Series, column: str = "value",
                   ends: str | None = None, where: Rows = ROWS) -> Censored:
    """Parse one column of interval-censored observations, each row written with its brackets.

    Forms (mixed freely): ``(a, b]``, ``[a, b]``, ``[a, b)``, ``(a, b)`` with ``a < b``
    (``-inf``/``inf`` allowed, always open whatever the bracket); an exact value as the
    number or ``[x, x]``.  With ``ends`` (a key of :data:`ENDS`) every finite end must be
    written with that convention's bracket (D111): the spec states the convention and the
    data keep to it.

    Raises :class:`DataError` D004 (missing values), D101 (not an interval), D109 (left end
    above the right one, ``l == r`` not written as an exact value, an infinite exact value)
    and D111, each naming its rows (1 = the first data row) and the column.

    Examples
    --------
    >>> c = parse_censored(["(1, 2]", "[1, 2]", "[2, inf)", "(-inf, 0.5)", "3", "[4, 4]"])
    >>> c.left.tolist(), c.right.tolist()
    ([1.0, 1.0, 2.0, -inf, 3.0, 4.0], [2.0, 2.0, inf, 0.5, 3.0, 4.0])
    >>> c.left_closed.tolist(), c.right_closed.tolist()
    ([False, True, True, False, True, True], [True, True, False, False, True, True])
    """
    s = pd.Series(values, dtype=object).astype(str).str.strip()
    n = len(s)
    missing = s.str.lower().isin(_MISSING).to_numpy()
    if missing.any():
        rows = where(missing)
        raise _bad(rows, column, f"{len(rows)} missing value(s)",
                   "privspec does not impute: remove these rows (an unknown end is written -inf or inf: "
                   "(a, inf) is right-censored)", code="D004")
    point = _fullmatch(s, _POINT)
    m = _extract(s, _BRACKETED)
    bracketed = m[1].notna().to_numpy()
    bad = ~(point | bracketed)
    if bad.any():
        rows = where(bad)
        raise _bad(rows, column, f"{len(rows)} value(s) are not intervals or numbers (e.g. {_shown(s, bad)})",
                   _CENSORED_HINT)
    left, right = np.full(n, np.nan), np.full(n, np.nan)
    left_closed, right_closed = np.ones(n, dtype=bool), np.ones(n, dtype=bool)
    left[point] = right[point] = parse_floats(s[point])
    left[bracketed], right[bracketed] = parse_floats(m[1][bracketed]), parse_floats(m[2][bracketed])
    left_closed[bracketed] = (m[0][bracketed] == "[").to_numpy()
    right_closed[bracketed] = (m[3][bracketed] == "]").to_numpy()
    # -inf and inf are no values: an infinite end is open whatever its bracket
    left_closed &= np.isfinite(left)
    right_closed &= np.isfinite(right)
    if ends is not None:
        want_l, want_r = ENDS[ends]
        # finite ends written against the declared convention (an exact value is always [x, x])
        off = bracketed & (left < right) & (
            (np.isfinite(left) & (left_closed != want_l)) | (np.isfinite(right) & (right_closed != want_r)))
        if off.any():
            rows = where(off)
            raise _bad(rows, column, f"{len(rows)} interval(s) written with other brackets than the declared "
                                     f"ends = {ends} {ends_form(ends)} (e.g. {_shown(s, off)})",
                       f"write them {ends_form(ends)}, or leave out ends = ... so that each row's brackets "
                       "say how it is closed", code="D111")
    # a written "[x, x]" is an exact value; "(x, x]" and the like are empty
    empty = bracketed & (left == right) & ~(left_closed & right_closed)
    if empty.any():
        rows = where(empty)
        raise _bad(rows, column, f"{len(rows)} interval(s) with equal ends that are not closed: an empty set",
                   "an exact value is written as the number or [x, x]", code="D109")
    out = Censored(left, right, left_closed, right_closed)
    _check_order(out, column, s, where)
    return out


def parse_bounds(lower: Sequence[str] | pd.Series, upper: Sequence[str] | pd.Series,
                 columns: tuple[str, str] = ("lower", "upper"), ends: str | None = None,
                 where: Rows = ROWS) -> Censored:
    """Parse the two-column layout of interval-censored data: a lower and an upper end per row.

    The layout of R's ``Surv(L, R, type = "interval2")``, npsurv and lifelines
    (``lower_bound``/``upper_bound``): ``L == R`` is an exact value, a missing ``R``
    (empty, ``NA``) or ``inf`` leaves the row right-censored ``(L, inf)``, a missing ``L``
    or ``-inf`` left-censored ``(-inf, R]``.  Finite ends are closed as ``ends`` says
    (a key of :data:`ENDS`; ``right_closed``, ``(L, R]``, when None).

    Raises :class:`DataError` D004 (both ends missing: nothing known), D101 (an end
    that is not a number) and D109 (``L > R``), naming rows and columns.

    Examples
    --------
    >>> c = parse_bounds(["0", "4", "5", "NA"], ["5", "4", "NA", "3"], ends="closed")
    >>> c.left.tolist(), c.right.tolist(), c.left_closed.tolist(), c.right_closed.tolist()
    ([0.0, 4.0, 5.0, -inf], [5.0, 4.0, inf, 3.0], [True, True, True, False], [True, True, False, True])
    """
    lo = pd.Series(lower, dtype=object).astype(str).str.strip()
    hi = pd.Series(upper, dtype=object).astype(str).str.strip()
    lo_missing = (lo.str.lower().isin(_MISSING) | pd.Series(lower, dtype=object).isna()).to_numpy()
    hi_missing = (hi.str.lower().isin(_MISSING) | pd.Series(upper, dtype=object).isna()).to_numpy()
    both = lo_missing & hi_missing
    if both.any():
        rows = where(both)
        raise _bad(rows, columns, f"{len(rows)} row(s) with neither end: nothing is known "
                                                   "about them", "privspec does not impute: remove these rows",
                   code="D004")
    for text, absent, column in ((lo, lo_missing, columns[0]), (hi, hi_missing, columns[1])):
        bad = ~absent & ~_fullmatch(text, _POINT)
        if bad.any():
            rows = where(bad)
            raise _bad(rows, column, f"{len(rows)} end(s) that are not numbers (e.g. {_shown(text, bad)})",
                       "each end is a number; an open end is left empty (or NA, or -inf / inf)")
    left = np.where(lo_missing, -np.inf, parse_floats(lo.where(~lo_missing)))
    right = np.where(hi_missing, np.inf, parse_floats(hi.where(~hi_missing)))
    want_l, want_r = ENDS[ends or "right_closed"]
    exact = left == right
    out = Censored(left, right, exact | (want_l & np.isfinite(left)), exact | (want_r & np.isfinite(right)))
    _check_order(out, columns, None, where)
    return out


def ends_form(ends: str) -> str:
    lc, rc = ENDS[ends]
    return ("[" if lc else "(") + "a, b" + ("]" if rc else ")")


def _check_order(c: Censored, column: str | tuple[str, ...], text: pd.Series | None, where: Rows = ROWS) -> None:
    """D109 for rows that are no interval: l > r, an infinite exact value, no double inside."""
    left, right = c.left, c.right
    with np.errstate(invalid="ignore"):
        reversed_ = left > right
    problems = [(reversed_, "a left end above the right end", "an interval is written lower end first")]
    problems.append(((left == right) & ~np.isfinite(left), "an exact value that is infinite",
                     "a value known only to lie beyond a is written (a, inf)"))
    # an open interval between two neighbouring doubles holds no number
    el, er = c.encoded()
    problems.append(((left < right) & (el >= er), "an open interval with no number inside",
                     "check the ends"))
    for mask, what, hint in problems:
        if mask.any():
            rows = where(mask)
            shown = f" (e.g. {_shown(text, mask)})" if text is not None else ""
            raise _bad(rows, column, f"{len(rows)} row(s) with {what}{shown}", hint, code="D109")


def written_intervals(left: np.ndarray, right: np.ndarray, support: tuple[float, float] = (-np.inf, np.inf)
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Innermost intervals of a fit to :meth:`Censored.encoded` data, written as a person would.

    The engine's ``(a, b]`` over doubles is also ``[a+, b]``, ``(a, b+)`` and ``[a+, b+)``
    (``x+`` the next double): each end is written in whichever form has the shorter number
    (the data's own ends, not their neighbours), a one-double interval as the exact value,
    and ends beyond the support are cut to it (closed there).  Returns the ends and the
    written intervals; every form is the same set of doubles.

    Examples
    --------
    >>> l, r = parse_censored(["[1, 2]", "(1.5, 3)"]).encoded()
    >>> written_intervals(np.array([l[1], np.nextafter(1.0, -np.inf)]), np.array([r[0], 1.0]))[2].tolist()
    ['(1.5, 2]', '[1, 1]']
    """
    a, b = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
    lo, hi = support
    a_up, b_up = np.nextafter(a, np.inf), np.nextafter(b, np.inf)
    point = (a == b) | (a_up == b)

    def shorter(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.array([len(repr(float(u))) < len(repr(float(v))) for u, v in zip(x, y)], dtype=bool)

    # the few innermost intervals of a fit, not respondents: a loop over them is fine
    left_closed = np.isfinite(a) & shorter(a_up, a)
    right_open = np.isfinite(b) & shorter(b_up, b)
    L = np.where(left_closed, a_up, a)
    R = np.where(right_open, b_up, b)
    L = np.where(point, b, L)
    R = np.where(point, b, R)
    left_closed |= point
    right_open &= ~point
    # cut to the support: the bound itself is a possible value
    below, above = L < lo, R > hi
    L, R = np.where(below, lo, L), np.where(above, hi, R)
    left_closed |= below & np.isfinite(lo)
    right_open &= ~(above & np.isfinite(hi))
    L, R = L + 0.0, R + 0.0  # -0.0 (the double above -5e-324) is 0
    right_open |= np.isinf(R)  # inf is no value: (a, inf)
    text = np.array([("[" if lc else "(") + _g(x) + ", " + _g(y) + (")" if ro else "]")
                     for x, y, lc, ro in zip(L, R, left_closed, right_open)], dtype=object)
    return L, R, text


def _g(x: float) -> str:
    """A number as written: the shortest form that reads back as the same double."""
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(float(x) + 0.0).removesuffix(".0")


def _num(x: np.ndarray) -> np.ndarray:
    """The shortest text that reads back as the same double (numpy's ``astype(str)`` is
    Dragon4's unique repr, in C): an anchor written with fewer digits could move an end
    past the respondent's value, and the report would no longer hold it."""
    out = x.astype(str).astype(object)
    whole = np.isfinite(x) & (x == np.round(x)) & (np.abs(x) < 2.0 ** 53)
    out[whole] = x[whole].astype(np.int64).astype(str)      # 3, not 3.0
    out[x == np.inf] = "inf"
    out[x == -np.inf] = "-inf"
    return out


def _num_arrow(x: np.ndarray) -> pa.StringArray:
    """:func:`_num` of every value, as an Arrow string array: Arrow's cast (the shortest
    round-trip digits, in C++, 4x faster than numpy's text and Python objects), and
    :func:`_num`'s own spelling where the two may differ.  Arrow chooses exponent notation
    by the number of digits, numpy by magnitude (below 1e-4 or from 1e16 up), so every
    text with an exponent, and every nonzero value below 1e-4, is written by :func:`_num`;
    the others are the same digits, positional, in both (a whole number without ``.0``)."""
    x = x + 0.0                                   # -0.0 is written 0
    text = pc.cast(pa.array(x), pa.string())
    with np.errstate(invalid="ignore"):
        odd = (np.abs(x) < 1e-4) & (x != 0)
    odd |= np.asarray(pc.match_substring(text, "e"), dtype=bool)
    if odd.any():
        text = pc.replace_with_mask(text, pa.array(odd), pa.array(_num(x[odd]), type=pa.string()))
    return text


def format_ranges(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Write reports as text (the inverse of :func:`parse_ranges`), vectorized (Arrow's
    string kernels: 1e7 reports in about 7 s, where numpy's text and Python string
    concatenation took 29 s)."""
    left, right = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
    if not left.size:
        return np.empty(left.shape, dtype=object)
    ls, rs = _num_arrow(left.ravel()), _num_arrow(right.ravel())
    out = pc.binary_join_element_wise("(", ls, ", ", rs, "]", "")
    point, ring = (left == right).ravel(), (left > right).ravel()
    if point.any():
        out = pc.if_else(pa.array(point), ls, out)
    if ring.any():
        out = pc.if_else(pa.array(ring), pc.binary_join_element_wise("(-inf, ", rs, "] | (", ls, ", inf]", ""), out)
    neither = ~((left < right).ravel() | point | ring)   # a NaN end: nothing collected
    if neither.any():
        out = pc.if_else(pa.array(neither), pa.scalar(NULL), out)
    return out.to_numpy(zero_copy_only=False).reshape(left.shape)
