"""The pandas engine: counts a table in memory, a DataFrame given to the API (the default
for one), or a file read whole by :func:`privspec.backends.data.files.read_table`
(where DuckDB is not installed, or asked for: ``--engine pandas``, the reference reading).
"""
from __future__ import annotations

import math
from typing import Any, Callable, ClassVar, Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from privspec.backends.data.checks import check_columns, frame_nested, holds_nested, require_columns, require_flat
from privspec.backends.data.files import FILE, file_columns, read_table
from privspec.backends.data.tally import Tally, canonical


def _arrow_text(col: pd.Series) -> bool:
    """Whether a column holds its texts in Arrow already (``string[pyarrow]``, Arrow dtypes)."""
    return isinstance(col.dtype, pd.ArrowDtype) or getattr(col.dtype, "storage", None) == "pyarrow"


class PandasEngine:
    """Counts in memory: one :func:`pandas.factorize` per column (a categorical column
    uses its codes: no string is hashed), then :func:`numpy.bincount` on the codes."""

    name: ClassVar[str] = "pandas"
    needs: ClassVar[str] = "pandas"
    extra: ClassVar[str | None] = None
    #: the default for a DataFrame, and for a file where no engine of a higher rank is installed
    default_for: ClassVar[tuple[type, ...]] = (pd.DataFrame, *FILE)
    rank: ClassVar[int] = 0

    @classmethod
    def open(cls, source: Any, name: str | None = None) -> "PandasEngine":
        """A DataFrame as it is, or a file read whole (:func:`.files.read_table`)."""
        if isinstance(source, pd.DataFrame):
            return cls(source, name or "<DataFrame>")
        return cls(read_table(source), name or str(source), nested=file_columns(source)[1])

    def __init__(self, frame: pd.DataFrame, source: str = "<DataFrame>", nested: frozenset[str] | None = None):
        """``nested``: the columns of nested values (a file's schema says; by default the
        frame's types and first values, :func:`.checks.frame_nested`).  D014 when a column
        name repeats."""
        check_columns(list(frame.columns))
        self.frame = frame
        self.source = source
        self._nested = frame_nested(frame) if nested is None else nested

    def columns(self) -> list[str]:
        return [str(c) for c in self.frame.columns]

    def has_rows(self) -> bool:
        """Whether the table holds a data row."""
        return len(self.frame) > 0

    def tally(self, columns: Sequence[str]) -> Tally:
        return self._tally(columns)[0]

    def tally_rows(self, columns: Sequence[str]) -> tuple[Tally, Callable[[np.ndarray], np.ndarray]]:
        """The tally, and a map from an array over its tuples to the array over the rows (in
        memory the rows are at hand: a privatizer maps each row's value through its tuple's),
        in one gather from the rows' own codes."""
        tally, ids, tuple_of_id = self._tally(columns)

        def per_row(per_tuple: np.ndarray) -> np.ndarray:
            table = np.asarray(per_tuple)[tuple_of_id]
            if np.array_equal(table, np.arange(len(table))):
                # the rows' own codes already (a categorical column in the domain's order):
                # no gather; a read-only view of the column's codes
                view = ids.view()
                view.flags.writeable = False
                return view
            return table[ids]

        return tally, per_row

    def text_blocks(self, column: str, width: int, rows: int = 1 << 14) -> Iterator[np.ndarray] | None:
        """The column's texts as blocks of at most ``rows`` rows of their UTF-8 bytes (uint8
        matrices ``(m, width)``), when every value is a text of exactly ``width`` bytes; else
        None (a missing value, another length, not text: the caller then tallies).

        For reports with one sufficient statistic per row position (unary encoding's bits)
        and nearly every report distinct: they are counted from the rows' bytes, where a
        tally would hash millions of distinct texts.
        """
        buffers = self.text_buffers(column)
        if buffers is None:
            return None
        mats = []
        for data, offsets in buffers:
            if not np.array_equal(np.diff(offsets), np.full(len(offsets) - 1, width)):
                return None
            mats.append(data[offsets[0]:offsets[-1]].reshape(-1, width))
        return (m[lo:lo + rows] for m in mats for lo in range(0, len(m), rows))

    def text_buffers(self, column: str) -> list[tuple[np.ndarray, np.ndarray]] | None:
        """The column's texts as Arrow holds them, per chunk: their UTF-8 bytes and the rows'
        ``m + 1`` offsets in them (:func:`string_buffers`), when every value is a text; else
        None (a missing value, not text, a categorical: the caller then tallies).  An
        Arrow-backed column is read in place; an object column is converted once."""
        col = self.frame[column]
        if isinstance(col.dtype, pd.CategoricalDtype):
            return None                     # few distinct values: the tally is cheaper
        try:
            arr = pa.chunked_array([pa.array(col, type=None if _arrow_text(col) else pa.string(), from_pandas=True)])
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            return None
        if arr.null_count or not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            return None
        return [string_buffers(chunk) for chunk in arr.chunks if len(chunk)]

    def _tally(self, columns: Sequence[str]) -> tuple[Tally, np.ndarray, np.ndarray]:
        columns = list(columns)
        require_columns(self.frame, columns, self.source)
        require_flat(columns, self._nested)
        try:
            ids, present, values, counts = group_rows([self.frame[c] for c in columns])
        except TypeError:   # unhashable: a nested value further down than the first
            require_flat(columns, [c for c in columns if holds_nested(self.frame[c])])
            raise
        values.columns = columns
        values, counts, order = canonical(values, counts)
        ids_of = present[order]                        # canonical tuple -> its id
        size = int(present[-1]) + 1 if len(present) else 0
        tuple_of_id = np.zeros(size, dtype=np.int64)
        tuple_of_id[ids_of] = np.arange(len(ids_of))

        def locator(mask: np.ndarray) -> np.ndarray:
            chosen = np.zeros(size, dtype=bool)
            chosen[ids_of[mask]] = True
            return np.flatnonzero(chosen[ids]) + 1

        return Tally(tuple(columns), values, counts, self.source, locator), ids, tuple_of_id

    def chunks(self, rows: int) -> Iterator[pd.DataFrame]:
        """The table in pieces of ``rows`` rows, in order (every column)."""
        for start in range(0, len(self.frame), rows):
            yield self.frame.iloc[start:start + rows].reset_index(drop=True)
        if not len(self.frame):
            yield self.frame


def string_buffers(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow string column's bytes (uint8, read in place for one chunk) and its rows'
    ``m + 1`` offsets into them (int64); a missing value reads as an empty text."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if not len(arr):
        return np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    _, offs, data = arr.buffers()
    wide = pa.types.is_large_string(arr.type)
    offsets = np.frombuffer(offs, dtype=np.int64 if wide else np.int32)[arr.offset:arr.offset + len(arr) + 1]
    chars = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
    return chars, offsets.astype(np.int64)


def group_rows(series: Sequence[pd.Series]) -> tuple[np.ndarray, np.ndarray, pd.DataFrame, np.ndarray]:
    """Per row an id, the ids that occur (one per distinct tuple), the distinct tuples
    (dtypes kept) and their counts: factorize each column (a categorical column gives its
    codes: no string hashed; missing values get a code of their own), combine the codes
    into one integer per row, count with :func:`numpy.bincount`."""
    codes, uniques, sizes = [], [], []
    for s in series:
        if isinstance(s.dtype, pd.CategoricalDtype):   # the codes are the factorization
            c, u = s.cat.codes.to_numpy(), s.cat.categories
        else:
            c, u = pd.factorize(s, sort=False, use_na_sentinel=True)
        c = np.asarray(c)
        missing = bool(len(c)) and int(c.min()) < 0
        if missing:
            c = np.where(c < 0, len(u), c)    # missing: one more code
        codes.append(c)
        uniques.append(u)
        sizes.append(len(u) + int(missing))
    n = len(series[0]) if series else 0
    if len(codes) == 1:
        ids, total = codes[0], sizes[0]
    elif float(np.prod([float(x) for x in sizes])) < 2.0 ** 62:
        # (factorize codes are int64 already: no copy of each column, 0.8 GB apiece at 1e8)
        ids = np.ravel_multi_index(tuple(c.astype(np.int64, copy=False) for c in codes), tuple(sizes))
        total = int(np.prod(sizes))
    else:  # too many combinations for one integer (many columns: a design's replicate
        # weights): combine column by column, numbering the tuples seen so far afresh (a
        # hash, linear in the rows) before a product would overflow
        ids, total = codes[0].astype(np.int64), sizes[0]
        for c, size in zip(codes[1:], sizes[1:]):
            if float(total) * size >= 2.0 ** 62:
                ids, seen = pd.factorize(ids)
                total = len(seen)
            ids, total = ids * size + c, total * size
    combined = len(codes) > 1 and total != math.prod(sizes)     # exact: no int64 overflow of many columns
    if total > max(4 * n, 1 << 20):       # sparse combinations: compress the ids first
        _, ids = np.unique(ids, return_inverse=True)
        ids = np.asarray(ids, dtype=np.int64).ravel()
        total = int(ids.max()) + 1 if n else 0
        combined = len(codes) > 1
    counts = _count_codes(ids, total)
    present = np.flatnonzero(counts)
    if combined:   # compressed ids: read the codes of each tuple's first row
        first = np.empty(total, dtype=np.int64)
        first[ids[::-1]] = np.arange(n - 1, -1, -1)
        parts = [c[first[present]] for c in codes]
    else:
        parts = [present] if len(codes) == 1 else list(np.unravel_index(present, tuple(sizes)))
    frame = pd.DataFrame({i: _take(u, k) for i, (u, k) in enumerate(zip(uniques, parts))})
    return ids, present, frame, counts[present].astype(np.int64)


def _count_codes(ids: np.ndarray, total: int) -> np.ndarray:
    """How many of ``ids`` equal each of ``0 .. total - 1``."""
    if ids.dtype.itemsize == 1 and total <= 16:
        # one byte per row and a few codes (a categorical column): a pass per code is 4x
        # faster than bincount, which first widens every row to a 64-bit index
        return np.array([np.count_nonzero(ids == j) for j in range(total)], dtype=np.int64)
    return np.bincount(ids, minlength=total) if len(ids) else np.zeros(total, dtype=np.int64)


def _take(uniques: Any, codes: np.ndarray) -> pd.Series:
    """``uniques[codes]`` with the dtype of the column, missing where a code is ``len(uniques)``."""
    missing = codes >= len(uniques)
    if not len(uniques):
        return pd.Series([None] * len(codes), dtype=object)
    values = pd.Series(pd.Index(uniques).take(np.where(missing, 0, codes)))
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype(values.dtype.categories.dtype)
    if missing.any():
        numeric = pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)
        values = values.astype(float).where(~missing, np.nan) if numeric else \
            values.astype(object).where(~missing, None)
    return values

