"""The aggregation contract: what every estimator reads instead of rows.

Every estimator in privspec needs only counts per distinct report (per distinct tuple of
report columns for products and joint reports; per distinct covariate-and-report tuple
for regression; per distinct raw record for releases).  Counting them is a group-by, the
only step whose cost grows with the number of respondents, and an *engine* does it
(:mod:`privspec.backends.data.engines`: pandas in memory, DuckDB for files, Spark for
clusters).  The engine hands back a :class:`Tally`:

- ``values``: the distinct tuples of the asked columns, as the file holds them (text as
  read, ``None`` for an empty cell; numbers where a Parquet column is numeric), in one
  canonical order (sorted), so that everything computed from a tally is the same, to the
  last digit, whichever engine counted;
- ``counts``: how many rows hold each tuple;
- ``locate(mask)``: the file rows (1-based, as a person reads the file) of the tuples
  where ``mask`` is true.  Only error messages call it, so an engine may answer it by a
  second pass over the data.

Validation (labels outside the domain, malformed subsets and intervals, missing values,
reports the mechanism cannot produce) runs on the distinct tuples, in the same Python
code for every engine, and names rows through ``locate``: the messages are the same too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from privspec.errors import DataError, Diagnostic
from privspec.backends.data.checks import MISSING, describe_values


@dataclass(frozen=True)
class Tally:
    """Distinct tuples of some columns of one table, with their counts.

    Parameters
    ----------
    columns : tuple of str
        The columns, in the order asked.
    values : pandas.DataFrame
        One row per distinct tuple (object columns), in canonical order.
    counts : ndarray of int64
        Rows holding each tuple.
    source : str
        The file (or ``<DataFrame>``) named in messages.
    locator : callable
        ``locator(mask) -> ndarray`` of the 1-based rows whose tuple is one where ``mask``
        (over the distinct tuples) is true, sorted.

    Examples
    --------
    >>> from privspec.backends.data.engines import PandasEngine
    >>> t = PandasEngine(pd.DataFrame({"x": ["b", "a", "b", None]})).tally(["x"])
    >>> t.values["x"].tolist(), t.counts.tolist(), t.n
    (['a', 'b', None], [1, 2, 1], 4)
    >>> t.locate(t.values["x"] == "b")
    (1, 3)
    """

    columns: tuple[str, ...]
    values: pd.DataFrame
    counts: np.ndarray
    source: str
    locator: Callable[[np.ndarray], np.ndarray] = field(repr=False, compare=False)

    @property
    def n(self) -> int:
        """Rows counted."""
        return int(self.counts.sum())

    def locate(self, mask: Any) -> tuple[int, ...]:
        """The 1-based rows whose tuple is selected by ``mask`` (bool over the distinct tuples)."""
        mask = np.asarray(mask, dtype=bool)
        if not mask.any():
            return ()
        return tuple(int(r) for r in self.locator(mask))

    def column(self, name: str) -> np.ndarray:
        """The distinct tuples' values in one column (object array)."""
        return self.values[name].to_numpy(dtype=object)

    def expand(self, values: np.ndarray) -> np.ndarray:
        """A per-tuple array repeated by the counts (for the few fits that need rows,
        such as a regressor; in canonical order, not the file's)."""
        return np.repeat(values, self.counts, axis=0)

    def missing(self, columns: Sequence[str] | None = None) -> np.ndarray:
        """Bool over the tuples: some of ``columns`` (all by default) is empty or a
        missing-value word (:data:`privspec.backends.data.checks.MISSING`)."""
        out = np.zeros(len(self.counts), dtype=bool)
        for c in columns or self.columns:
            out |= missing_mask(self.values[c])
        return out

    def check_no_missing(self, columns: Sequence[str] | None = None) -> None:
        """D004 naming the rows with a missing value in ``columns``."""
        for col in columns or self.columns:
            bad = self.missing([col])
            if bad.any():
                rows = self.locate(bad)
                raise DataError(Diagnostic("D004", f"{len(rows)} missing value{'s' if len(rows) > 1 else ''} in "
                                                   f"{self.source}", rows=rows, columns=(col,),
                                           hint="privspec does not impute: remove or complete these rows"))


class Rows:
    """Where the entries of an array came from in the file, for error messages: one entry
    per row (the default, :data:`ROWS`), or one per distinct tuple of a tally.

    Examples
    --------
    >>> ROWS(np.array([False, True, True]))
    (2, 3)
    """

    def __init__(self, tally: Tally | None = None, locator: Callable[[np.ndarray], tuple[int, ...]] | None = None):
        self.tally = tally
        self.locator = locator

    def __call__(self, mask: Any) -> tuple[int, ...]:
        """The 1-based file rows of the entries where ``mask``."""
        if self.locator is not None:
            return self.locator(np.asarray(mask, dtype=bool))
        if self.tally is not None:
            return self.tally.locate(mask)
        return tuple(int(r) + 1 for r in np.flatnonzero(np.asarray(mask, dtype=bool)))


#: one entry per row
ROWS = Rows()


def canonical(values: pd.DataFrame, counts: np.ndarray) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The distinct tuples sorted (text by code point, numbers by value, missing last) with
    their counts, and the permutation applied (``order[i]``: the old index of tuple i).
    Text columns become object columns of ``str`` with ``None`` for a missing cell."""
    values = values.reset_index(drop=True)
    out = {}
    for c in values.columns:
        col = values[c]
        if pd.api.types.is_integer_dtype(col.dtype) and not col.isna().any():
            out[c] = col.astype(np.int64)
        elif pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
            out[c] = col.astype(float)
        else:
            obj = col.to_numpy(dtype=object)
            if all_text(obj):        # text already, none missing: as it is
                out[c] = pd.Series(obj, dtype=object, index=values.index)
                continue
            na = col.isna().to_numpy()
            out[c] = pd.Series([None if m else v if isinstance(v, str) else str(v) for v, m in zip(obj, na)],
                               dtype=object, index=values.index)
    frame = pd.DataFrame(out, index=values.index)
    order = np.arange(len(frame))
    if len(frame) > 1 and not _sorted(frame):
        order = frame.sort_values(list(frame.columns), na_position="last", kind="mergesort").index.to_numpy()
    return frame.iloc[order].reset_index(drop=True), np.asarray(counts, dtype=np.int64)[order], order


def run_starts(*columns: np.ndarray) -> np.ndarray:
    """Bool per row of tuples in sorted order (equal tuples adjacent): where a run of equal
    tuples starts.  Merging such runs (their counts added) is how sorted rows become
    distinct tuples with counts, without a second group-by.  A NaN never equals itself,
    so each NaN row starts a run of its own.

    Examples
    --------
    >>> run_starts(np.array([1.0, 1.0, 2.0, 2.0]), np.array([5.0, 5.0, 5.0, 6.0])).tolist()
    [True, False, True, True]
    """
    head, *rest = columns
    first = np.empty(head.size, dtype=bool)
    first[:1] = True
    np.not_equal(head[1:], head[:-1], out=first[1:])   # in place: no temporary for one column
    for x in rest:
        first[1:] |= x[1:] != x[:-1]
    return first


def _sorted(frame: pd.DataFrame) -> bool:
    """Whether a one-column frame is already in canonical order (an engine that sorts in
    its own query): one vectorized comparison instead of a sort."""
    if frame.shape[1] != 1:
        return False
    col = frame.iloc[:, 0]
    na = col.isna().to_numpy()
    k = int((~na).sum())
    if na[:k].any():                       # a missing value before a present one
        return False
    present = col.to_numpy()[:k]
    if present.dtype == object:
        if not all(isinstance(v, str) for v in present[:1]):
            return False
        return bool(np.all(present[1:] > present[:-1]))
    return bool(np.all(present[1:] > present[:-1]))


def missing_mask(values: pd.Series) -> np.ndarray:
    """Bool per value: empty, NaN or a missing-value word (text stripped)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes, distinct = values.cat.codes.to_numpy(), values.cat.categories
    elif pd.api.types.is_numeric_dtype(values.dtype):
        return values.isna().to_numpy()
    elif len(values) > DISTINCT_FIRST:
        codes, distinct = pd.factorize(values, use_na_sentinel=True)
    else:
        return _missing_each(values)
    # each distinct value checked once, not each value (a tally of a million tuples over
    # a few hundred labels per column); code -1 (missing) reads the appended True
    return np.append(_missing_each(pd.Series(distinct, dtype=object)), True)[codes]


#: past this many values, :func:`missing_mask` checks the distinct ones (a hash pass) and
#: maps them back, instead of stripping and looking up every text
DISTINCT_FIRST = 1 << 12


def _missing_each(values: pd.Series) -> np.ndarray:
    """:func:`missing_mask` value by value."""
    na = values.isna().to_numpy()
    obj = values.to_numpy(dtype=object)
    if all_text(obj):
        return pd.Series(strip_texts(obj), dtype=object).isin(MISSING).to_numpy()
    text = values.astype(object).where(~na, "").astype(str).str.strip()
    return na | text.isin(MISSING).to_numpy()


def all_text(values: np.ndarray) -> bool:
    """Whether every value of an object array is a ``str`` (none missing): a C loop."""
    return pd.api.types.infer_dtype(values, skipna=False) in ("string", "empty")


def strip_texts(values: np.ndarray) -> np.ndarray:
    """``str.strip`` of every value of an object array of ``str`` (:func:`all_text`), as an
    object array: by Arrow where a value is printable ASCII (only the space is then
    whitespace), by Python for the others (Python's whitespace is Unicode's and more).

    Examples
    --------
    >>> strip_texts(np.array([" a ", "b", "\\u2003c\\x1c"], dtype=object)).tolist()
    ['a', 'b', 'c']
    """
    if not len(values):
        return np.asarray(values, dtype=object)
    arr = pa.array(values, type=pa.string())
    unusual = unusual_text(arr)
    if not unusual.any() and not pc.any(pc.or_(pc.starts_with(arr, " "), pc.ends_with(arr, " "))).as_py():
        # printable ASCII, no space at either end (reports privspec wrote): as they are,
        # without a new string for each
        return np.array(values, dtype=object)
    out = pc.utf8_trim(arr, " ").to_numpy(zero_copy_only=False)
    for i in np.flatnonzero(unusual):
        out[i] = values[i].strip()
    return out


def unusual_text(values: Any) -> np.ndarray:
    """Bool per value: a character outside printable ASCII, or missing.  Where vectorized
    text tools (Arrow's trim, RE2's ASCII ``\\s`` and ``\\d``) and Python's (Unicode; ``\\v``
    and ``\\x1c``-``\\x1f`` are spaces) can disagree: such values go to Python.

    Examples
    --------
    >>> unusual_text(np.array(["a b", "\\x0bc", None], dtype=object)).tolist()
    [False, True, True]
    """
    got = pc.match_substring_regex(pa.array(values, type=pa.string()), r"[^\x20-\x7e]")
    return pc.fill_null(got, True).to_numpy(zero_copy_only=False).astype(bool, copy=False)


def describe_distinct(tally: Tally, codes: np.ndarray, uniques: Sequence[Any],
                      bad: dict[int, str] | Sequence[int], limit: int = 5) -> tuple[str, tuple[int, ...]]:
    """:func:`privspec.backends.data.checks.describe_values` for a tally: ``codes`` index
    ``uniques`` per distinct tuple (one column of the tally, or its parts joined); every
    distinct bad value is named with its file rows, in the order of first appearance."""
    return describe_values(codes, uniques, bad, limit, locate=tally.locate)
