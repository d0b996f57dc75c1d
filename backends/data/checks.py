"""The checks every engine makes alike on a table, and how their diagnostics name bad
values: the columns a table must have (D003), missing values (D004), a repeated column
name (D014), nested values where one value per cell is read (D015).

Rows are numbered as a person reads the file, one way everywhere: row 1 is the first
data row after the header (blank lines are not rows), so row N is the frame's row
``N - 1``.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from privspec.errors import DataError, Diagnostic
from privspec.backends.data.cell_text import MISSING, show_value  # noqa: F401 (re-exported)


def _rows_text(rows: np.ndarray | Sequence[int], limit: int = 5) -> str:
    """``row 3`` / ``rows 2, 5, 9 and 4 more`` (rows already 1-based)."""
    rows = list(rows)
    shown = ", ".join(str(int(r)) for r in rows[:limit])
    more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
    return f"row{'s' if len(rows) > 1 else ''} {shown}{more}"


def describe_values(codes: np.ndarray, uniques: Sequence[Any], bad: Mapping[int, str] | Sequence[int],
                    limit: int = 5, locate: Callable[[np.ndarray], Sequence[int]] | None = None
                    ) -> tuple[str, tuple[int, ...]]:
    """Name every distinct bad value (up to ``limit``, then "and N more") with its rows.

    ``codes`` index ``uniques`` entry by entry (an unsorted :func:`pandas.factorize`);
    ``bad`` lists the codes of bad values, or maps each to why it is bad.  ``locate``
    gives the 1-based file rows of the entries where a mask holds: by default an entry is
    a row (entry i is row i + 1); a tally's entries are its distinct tuples
    (:meth:`privspec.backends.data.tally.Tally.locate`).  Values are listed in the order they
    first appear in the file.  Returns the text and all the bad rows, so that a diagnostic
    shows each distinct problem, not only the first.

    Examples
    --------
    >>> codes, uniques = pd.factorize(pd.Series(["a", "x", "b", "x", "y"]))
    >>> describe_values(codes, uniques, [1, 3])
    ("'x' (rows 2, 4), 'y' (row 5)", (2, 4, 5))
    """
    if locate is None:
        def locate(mask: np.ndarray) -> tuple[int, ...]:
            return tuple(int(r) + 1 for r in np.flatnonzero(mask))
    reasons = dict(bad) if isinstance(bad, Mapping) else {int(k): "" for k in bad}
    rows_of = {k: locate(codes == k) for k in reasons}
    order = sorted(reasons, key=lambda k: (rows_of[k][0] if len(rows_of[k]) else 0, k))
    groups: dict[str, list[str]] = {}  # values that share a reason are listed together
    for k in order[:limit]:
        groups.setdefault(reasons[k], []).append(f"{show_value(uniques[k])} ({_rows_text(rows_of[k])})")
    parts = [", ".join(values) + (f": {why}" if why else "") for why, values in groups.items()]
    if len(order) > limit:
        parts.append(f"and {len(order) - limit} more distinct value{'s' if len(order) - limit > 1 else ''}")
    rows = tuple(int(r) for r in locate(np.isin(codes, np.asarray(order, dtype=np.int64))))
    return ("; " if any(reasons.values()) else ", ").join(parts), rows


def require_columns(frame: pd.DataFrame, columns: Sequence[str], path: Any = "data",
                    hint: str | None = None) -> None:
    """DataError D003 naming the columns a table lacks."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        found = ", ".join(map(str, frame.columns)) or "none"
        raise DataError(Diagnostic("D003", f"{path} has no column {', '.join(repr(c) for c in missing)}",
                                   columns=tuple(missing),
                                   hint=hint or f"columns are named after variables; found: {found}"))


def missing_rows(values: pd.Series) -> list[int]:
    """1-based rows whose value is missing (NaN or one of :data:`MISSING`)."""
    mask = values.isna()
    if not pd.api.types.is_numeric_dtype(values):  # object or (pandas 3) string dtype
        mask |= values.astype(str).str.strip().isin(MISSING)
    return [int(i) + 1 for i in mask.to_numpy().nonzero()[0]]


def check_no_missing(frame: pd.DataFrame, columns: Sequence[str], path: Any = "data") -> None:
    """DataError D004 naming the rows with missing values in ``columns``."""
    for col in columns:
        rows = missing_rows(frame[col])
        if rows:
            raise DataError(Diagnostic("D004", f"{len(rows)} missing value{'s' if len(rows) > 1 else ''} in {path}",
                                       rows=tuple(rows), columns=(col,),
                                       hint="privspec does not impute: remove or complete these rows"))


def _positions(places: Sequence[int]) -> str:
    """``1 and 3`` / ``1, 3 and 5``."""
    shown = [str(k) for k in places]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" and {shown[-1]}"


def check_columns(names: Sequence[Any], file: str | None = None) -> None:
    """D014 when a column name repeats in a header: a column holds one variable's values,
    and readers would keep one of the two silently (pandas renames the other ``color.1``,
    DuckDB ``color_1``).  Empty names are left alone: readers number them apart.

    Examples
    --------
    >>> check_columns(["color", "gender", "color"])
    Traceback (most recent call last):
    ...
    privspec.errors.DataError: <input> (column color): error[D014]: the column name 'color' appears twice in ...
    """
    places: dict[str, list[int]] = {}
    for i, name in enumerate(names, 1):
        if str(name) != "":
            places.setdefault(str(name), []).append(i)
    repeated = {name: at for name, at in places.items() if len(at) > 1}
    if not repeated:
        return
    shown = [f"'{name}' appears {'twice' if len(at) == 2 else f'{len(at)} times'} in the header "
             f"(columns {_positions(at)})" for name, at in repeated.items()]
    more = f"; {len(shown) - 1} more name{'s' if len(shown) > 2 else ''} repeat{'' if len(shown) > 2 else 's'}" \
        if len(shown) > 1 else ""
    raise DataError(Diagnostic("D014", f"the column name {shown[0]}{more}: a column holds one variable's values, "
                                       "and which of them to read cannot be told", columns=tuple(repeated),
                               file=file, hint="rename the columns so that each name appears once"))


#: what a column of nested values holds, as every engine names it
NESTED = "lists, structs or maps"
_NESTED_VALUES = (list, tuple, dict, set, frozenset, np.ndarray)


def frame_nested(frame: pd.DataFrame) -> frozenset[str]:
    """The columns of a DataFrame that hold nested values: an Arrow list, struct or map
    type, or (object columns) a list, tuple, dict, set or array as the first value; a
    column that mixes them further down is found when it is counted."""
    out = set()
    for name in frame.columns:
        col = frame[name]
        if isinstance(col.dtype, pd.ArrowDtype):
            if pa.types.is_nested(col.dtype.pyarrow_dtype):
                out.add(str(name))
        elif col.dtype == object and isinstance(first_present(col.to_numpy()), _NESTED_VALUES):
            out.add(str(name))
    return frozenset(out)


def first_present(values: np.ndarray) -> Any:
    """The first value of an object array that is not missing (None when there is none),
    looked for in blocks that double: the first row, nearly always, without a pass over
    millions of rows (``Series.first_valid_index`` tests every row first).

    Examples
    --------
    >>> first_present(np.array([None, float("nan"), [1, 2], "a"], dtype=object))
    [1, 2]
    >>> first_present(np.array([None], dtype=object)) is None
    True
    """
    start, size = 0, 16
    while start < len(values):
        block = values[start:start + size]
        present = np.flatnonzero(pd.notna(block))
        if len(present):
            return block[present[0]]
        start, size = start + size, size * 2
    return None


def holds_nested(values: pd.Series) -> bool:
    """Whether any value of an object column is nested (a list, dict, array...): one pass
    over the column, for the message of a count that failed on it."""
    return values.dtype == object and bool(values.map(lambda v: isinstance(v, _NESTED_VALUES)).any())


def require_flat(columns: Sequence[str], nested: Sequence[str] | frozenset[str]) -> None:
    """D015 when one of ``columns`` holds nested values (:data:`NESTED`): a report or raw
    value is one text or number per row, whatever engine reads it."""
    for c in columns:
        if c in nested:
            raise DataError(Diagnostic("D015", f"the column '{c}' holds nested values ({NESTED}): a column holds "
                                               "one report or raw value per row", columns=(c,),
                                       hint="write one value per cell, as text or a number (a subset report is "
                                            "its labels joined by |: black|red)"))

