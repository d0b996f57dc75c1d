"""The cells of a CSV as every engine reads them, and as privspec writes them for a
spreadsheet.

Read (:func:`read_csv`): every cell text, a space after a comma skipped, an empty cell
``""``.  Written with ``--csv-guard`` (:func:`guard_cells`): a cell that a spreadsheet
would run as a formula gets a single quote before it, which every reader drops again
(:func:`unguard_text`, :data:`UNGUARD_SQL` for DuckDB), so that a guarded file reads
back as it was.
"""
from __future__ import annotations

import io
import mmap
import os
import re
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from privspec.backends.core.numbers import PLAIN


def read_csv(source: Any, **options: Any) -> pd.DataFrame:
    """A CSV as text, as every engine reads it: a space after a comma skipped, an empty cell
    ``""``, a cell guarded for spreadsheets (``'=...``, :func:`guard_cells`) without its quote."""
    frame = pd.read_csv(source, dtype=str, keep_default_na=False, na_values=[], skipinitialspace=True,
                        encoding="utf-8", **options)
    if "chunksize" in options:  # read in pieces: each piece unguarded as it comes
        return (_unguard_cells(piece, source) for piece in frame)
    return _unguard_cells(frame, source)


# ---- the spreadsheet guard ------------------------------------------------------------------------------
#: a cell that a spreadsheet would read as a formula starts with one of these (OWASP, "CSV
#: Injection": = + - @, tab, carriage return); ``--csv-guard`` puts a single quote before it
FORMULA_STARTS = "=+-@\t\r"
#: cells the guard quotes: a formula start, after any quotes already there (so that a
#: value that looked guarded already stays distinct: the guard is one-to-one) ...
_TO_GUARD = "^'*[=+\\-@\t\r]"
#: ... and the cells a reader unquotes (one quote off): exactly the guard's output
_GUARDED = "^'+[=+\\-@\t\r]"
#: SQL (DuckDB) of a cell ``x`` read back: one quote off a guarded cell
UNGUARD_SQL = "CASE WHEN starts_with({x}, '''') THEN regexp_replace({x}, '^''(''*[=+\\-@\\t\\r])', '\\1') ELSE {x} END"


def guard_text(text: Any) -> Any:
    """One cell guarded for a spreadsheet: a single quote before a formula start (a plain
    number such as ``-2.5`` is no formula and stays as it is); anything else unchanged.

    Examples
    --------
    >>> [guard_text(t) for t in ["=HYPERLINK(1)", "+cmd|' /C calc'!A0", "@SUM(1)", "\\tx", "-2.5", "a|b", 3]]
    ["'=HYPERLINK(1)", "'+cmd|' /C calc'!A0", "'@SUM(1)", "'\\tx", '-2.5', 'a|b', 3]
    >>> guard_text("'=x"), unguard_text(guard_text("'=x"))
    ("''=x", "'=x")
    """
    if not isinstance(text, str) or not re.match(_TO_GUARD, text) or re.match(PLAIN, text):
        return text
    return "'" + text


def unguard_text(text: Any) -> Any:
    """A cell as written before :func:`guard_text` (one quote off a guarded cell)."""
    return text[1:] if isinstance(text, str) and re.match(_GUARDED, text) else text


def _guard_column(col: pd.Series) -> pd.Series:
    """:func:`guard_text` of every cell of a column: a categorical's categories (each text
    once), text through Arrow's regex kernels, numbers as they are."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = col.cat.categories
        guarded = [guard_text(c) for c in cats]
        return col.cat.rename_categories(guarded) if guarded != list(cats) else col
    if pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
        return col
    try:
        arr = pa.array(col, type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # not all text: cell by cell
        return col.map(guard_text)
    hit = pc.and_(pc.match_substring_regex(arr, _TO_GUARD), pc.invert(pc.match_substring_regex(arr, PLAIN)))
    if not pc.any(hit).as_py():
        return col
    out = pc.if_else(hit, pc.binary_join_element_wise("'", arr, ""), arr)
    return pd.Series(out.to_numpy(zero_copy_only=False), index=col.index, name=col.name, dtype=object)


def guard_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The table guarded for a spreadsheet (``--csv-guard``): every text cell and column name
    that starts like a formula gets a single quote before it (:func:`guard_text`), as
    OWASP's advice on CSV injection says.  privspec reads such a CSV back as it was
    (:func:`read_csv` and every engine drop the quote)."""
    out = frame.copy(deep=False)
    for i, c in enumerate(frame.columns):
        out.isetitem(i, _guard_column(frame.iloc[:, i]))
    out.columns = [guard_text(c) for c in frame.columns]
    return out


#: frames of at most this many rows are unguarded without a look for a quote in the file
_FEW_ROWS = 64


def _unguard_cells(frame: pd.DataFrame, source: Any) -> pd.DataFrame:
    """The cells and column names of a CSV read as text, a guarded cell's quote dropped
    (:func:`unguard_text`).  A file without a single quote (one ``memchr`` pass) is
    returned as it is; else each text column that has a guarded cell is fixed, by Arrow.
    A few rows (a header read as data) are looked at themselves: no pass over the file
    (1e7 Case-II reports: 48 ms)."""
    if any(isinstance(c, str) and c.startswith("'") for c in frame.columns):
        frame.columns = [unguard_text(c) for c in frame.columns]
    if not len(frame) or (len(frame) > _FEW_ROWS and not _may_hold_quote(source)):
        return frame
    for i in range(frame.shape[1]):
        col = frame.iloc[:, i]
        # text is object on pandas 2 and the ``str`` dtype on pandas 3: both are fixed
        if not pd.api.types.is_string_dtype(col.dtype):
            continue
        try:
            arr = pa.array(col, type=pa.string(), from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            continue
        hit = pc.match_substring_regex(arr, _GUARDED)
        if pc.any(hit).as_py():
            fixed = pc.if_else(hit, pc.utf8_slice_codeunits(arr, 1), arr)
            frame.isetitem(i, pd.Series(fixed.to_numpy(zero_copy_only=False), index=col.index, dtype=col.dtype))
    return frame


def _may_hold_quote(source: Any) -> bool:
    """Whether a CSV (a path, or text in memory) holds a single quote anywhere."""
    if isinstance(source, io.StringIO):
        return "'" in source.getvalue()
    try:
        with open(source, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return False
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                return m.find(b"'") >= 0
    except (OSError, ValueError, TypeError):
        return True

