"""Reading and writing data tables (CSV or Parquet), binding them to mechanisms, and
the helpers every data engine needs: numbers parsed exactly, bad values named by row,
output paths checked before any work, atomic writes.

Rows are numbered as a person reads the file, one way everywhere: row 1 is the first
data row after the header (blank lines are not rows), so row N is the frame's row
``N - 1``.  Every data diagnostic names its file (:meth:`privspec.errors.DataError.with_file`).
"""
from __future__ import annotations

import codecs
import errno
import io
import math
import os
import re
import signal
import stat
import tempfile
import threading
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from privspec.errors import DataError, Diagnostic
from privspec.model.query_kinds import needs_data

#: strings read as missing values
MISSING = ("", "NA", "N/A", "NaN", "nan", "null", "NULL", "None")

#: file suffixes written and read as Parquet (everything else is CSV)
PARQUET = (".parquet", ".pq")

#: the largest count magnitude privspec accepts: integers up to 2^53 are exact as doubles,
#: so every sum, margin and estimate computed from such counts is exact too
MAX_COUNT = 2 ** 53

# undecodable bytes b -> U+F0000 + b (Supplementary Private Use Area-A): a CSV that is not
# UTF-8 still parses, and each cell that held a bad byte is found, with the byte, by a regex
_MARK = 0xF0000
_MARKED = re.compile("[\\U000F0000-\\U000F00FF]")


def _mark_bad_bytes(error: UnicodeError) -> tuple[str, int]:
    bad = error.object[error.start:error.end]  # type: ignore[attr-defined]
    return "".join(chr(_MARK + b) for b in bad), error.end  # type: ignore[attr-defined]


codecs.register_error("privspec-mark", _mark_bad_bytes)


#: characters of a value a message shows; a longer value is cut there, its length given
SHOWN = 60


def show_value(value: Any) -> str:
    """A value as a message quotes it: its text in quotes, cut to :data:`SHOWN` characters
    with its length after (a 40 MB cell is named, not printed).

    Examples
    --------
    >>> show_value("red"), show_value("r" * 100)
    ("'red'", "'rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr...' (100 characters)")
    """
    text = str(value)
    if len(text) <= SHOWN:
        return repr(text)
    return f"{text[:SHOWN] + '...'!r} ({len(text):,} characters)"


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


def parse_numbers(values: Sequence[Any] | pd.Series | np.ndarray,
                  integer: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Numbers read from data, each correctly rounded to the nearest double.

    Every distinct string is converted once with Python's :func:`float` (correctly
    rounded, unlike parsers that round some 17-digit decimals to a neighbouring
    double) and mapped back to the rows with :func:`pandas.factorize`, so the cost is
    one hashing pass over the rows plus one conversion per distinct value.

    Parameters
    ----------
    values : sequence of str (or numbers)
        Text such as ``"0.1"``, ``" -2.5e3 "``, ``"inf"``; numeric input is taken as it is.
    integer : bool
        Also mark as bad every value that is not exactly an integer (``"3"``, ``"3.0"``
        and ``"3e2"`` are; ``"3.5"`` is not, nor a decimal that merely rounds to one).

    Returns
    -------
    numbers : float64 array
        NaN where bad; with ``integer``, +-inf for an integer beyond +-2^53 (:data:`MAX_COUNT`:
        not exact as a double), for the caller to name as out of range.
    bad : bool array
        True for a missing value, NaN, or text that is not a number (digit separators
        such as ``1_000`` or ``1,000`` included).

    Examples
    --------
    >>> x, bad = parse_numbers(["0.1", " 2e3", "inf", "ten", "1_0", ""])
    >>> x[:3].tolist(), bad.tolist()
    ([0.1, 2000.0, inf], [False, False, False, True, True, True])
    >>> parse_numbers(["3", "3.0", "3.5", "1e2", "1e30"], integer=True)[0].tolist()
    [3.0, 3.0, nan, 100.0, inf]
    """
    series = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=object), dtype=object)
    if pd.api.types.is_bool_dtype(series.dtype):
        series = series.astype(object).astype(str)
    if pd.api.types.is_numeric_dtype(series.dtype):  # already numbers (Parquet): nothing to round
        numbers = series.to_numpy(dtype=float, na_value=np.nan)
        if integer:
            with np.errstate(invalid="ignore"):
                numbers[np.isfinite(numbers) & (numbers % 1 != 0) | np.isnan(numbers) | np.isinf(numbers)] = np.nan
            if pd.api.types.is_integer_dtype(series.dtype):  # int64 beyond 2^53: compare as integers
                big = (series.abs() > MAX_COUNT).to_numpy(dtype=bool, na_value=False)
                numbers[big] = np.copysign(np.inf, numbers[big])
            numbers[np.abs(numbers) > MAX_COUNT] = np.copysign(np.inf, numbers[np.abs(numbers) > MAX_COUNT])
        return numbers, np.isnan(numbers)
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    converted = _convert(uniques, integer)
    numbers = np.append(converted, np.nan)[codes]  # code -1 (missing): the NaN at the end
    return numbers, np.isnan(numbers)


#: plain decimals, which Arrow's cast converts correctly rounded (fast_float: checked against
#: Python's float on 17-25 digit and exactly-halfway decimals in tests/test_engines.py)
_PLAIN = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"


def _convert(uniques: Any, integer: bool) -> np.ndarray:
    """Each distinct string -> float: plain decimals by Arrow's cast (one vectorized pass),
    everything else (spaces, inf, separators, integer checks) by :func:`_number`."""
    texts = pd.Index(uniques).astype(str)
    out = np.full(len(texts), np.nan)
    fast = np.zeros(len(texts), dtype=bool)
    if not integer and len(texts) > 64:
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.array(np.asarray(texts, dtype=object), type=pa.string())
        fast = pc.match_substring_regex(arr, _PLAIN).to_numpy(zero_copy_only=False)
        if fast.any():
            out[fast] = pc.cast(pc.filter(arr, pa.array(fast)), pa.float64()).to_numpy(zero_copy_only=False)
    slow = np.flatnonzero(~fast)
    out[slow] = np.fromiter((_number(texts[i], integer) for i in slow), dtype=float, count=len(slow))
    return out


def _number(text: str, integer: bool) -> float:
    """One distinct string -> float (NaN: not a number, or not an integer when asked; in
    integer mode +-inf: an integer beyond +-2^53)."""
    text = text.strip()
    if not text or "_" in text:
        return math.nan
    try:
        value = float(text)  # correctly rounded
    except ValueError:
        return math.nan
    if not integer:
        return value
    if value != value:
        return math.nan
    try:
        exact = int(text)
    except ValueError:
        try:
            d = Decimal(text)
        except InvalidOperation:
            return math.nan
        if not d.is_finite() or d != d.to_integral_value():
            return math.nan  # 3.0000000000000001 rounds to 3.0 but is no integer
        if d.adjusted() > 30:
            return math.copysign(math.inf, d)  # 1e999999999: no need to build the integer
        exact = int(d)
    return float(exact) if abs(exact) <= MAX_COUNT else math.copysign(math.inf, exact)


# ---- reading -------------------------------------------------------------------------------------
def read_table(path: str | os.PathLike[str], columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a CSV (as text, nothing parsed) or Parquet file.

    Raises :class:`DataError` naming the file: D001 (no such file, or a folder), D002
    (unreadable: not UTF-8 text, rows with more fields than the header, not a table;
    the rows named), D003 when it lacks ``columns``, D014 when a column name repeats
    (:func:`file_columns`), D017 when it does not fit in memory (:func:`too_large`).
    """
    p = Path(path)
    name = str(path)
    if p.is_dir():
        raise DataError(Diagnostic("D001", f"{name} is a folder, not a data file", file=name,
                                   hint="give the path of a CSV or Parquet file"))
    if not p.is_file():
        raise DataError(Diagnostic("D001", f"no such data file: {name}", file=name,
                                   hint="check the path given with --data/--input"))
    file_columns(p)
    try:
        if p.suffix.lower() in PARQUET:
            frame = pd.read_parquet(p)
        else:
            frame = _read_csv(p)
            if not isinstance(frame.index, pd.RangeIndex):
                # the first row has more fields than the header, and pandas took the first
                # fields for an index (red,1,x: color 1, y x)
                frame = _past_the_header(p, name, None)
    except ImportError as e:
        raise DataError(Diagnostic("D002", f"cannot read {name}: {e}", file=name,
                                   hint="Parquet needs pyarrow, a dependency of privspec: pip install pyarrow")) from None
    except MemoryError:
        raise too_large(p, name) from None
    except UnicodeDecodeError:
        raise _not_utf8(p, name) from None
    except pd.errors.ParserError as e:
        if "out of memory" in str(e):  # pandas' tokenizer says so instead of raising MemoryError
            raise too_large(p, name) from None
        if "EOF inside string" in str(e):
            raise _bad_shape(p, name, e) from None
        frame = _past_the_header(p, name, e)
    except pd.errors.EmptyDataError:
        raise DataError(Diagnostic("D002", f"{name} is empty: not even a header", file=name,
                                   hint="the first line names the columns, one per variable")) from None
    except (ValueError, OSError) as e:
        raise DataError(Diagnostic("D002", f"cannot read {name}: {e}", file=name)) from None
    if columns:
        require_columns(frame, columns, name)
    return frame


def _read_csv(source: Any, **options: Any) -> pd.DataFrame:
    """A CSV as text, as every engine reads it: a space after a comma skipped, an empty cell
    ``""``, a cell guarded for spreadsheets (``'=...``, :func:`guard_cells`) without its quote."""
    frame = pd.read_csv(source, dtype=str, keep_default_na=False, na_values=[], skipinitialspace=True,
                        encoding="utf-8", **options)
    if "chunksize" in options:  # read in pieces: each piece unguarded as it comes
        return (_unguard_cells(piece, source) for piece in frame)
    return _unguard_cells(frame, source)


def _not_utf8(p: Path, name: str) -> DataError:
    """D002 naming every row and column that holds a byte that is not UTF-8."""
    hint = (f"save the file as UTF-8 text (from Latin-1, for example: iconv -f latin1 -t utf-8 {name} "
            f"> {p.with_name(p.stem + '.utf8' + p.suffix)})")
    text = p.read_bytes().decode("utf-8", errors="privspec-mark")
    try:
        frame = _read_csv(io.StringIO(text))
    except (ValueError, pd.errors.ParserError):
        return DataError(Diagnostic("D002", f"{name} is not UTF-8 text", file=name, hint=hint))
    head = [str(c) for c in frame.columns if _MARKED.search(str(c))]
    if head:
        return DataError(Diagnostic("D002", f"the header is not UTF-8 text: it holds {_show_bytes(head[0])}",
                                    file=name, hint=hint))
    hits = {c: frame[c].astype(object).str.contains(_MARKED, na=False).to_numpy() for c in frame.columns}
    hits = {c: m for c, m in hits.items() if m.any()}
    bad = np.logical_or.reduce(list(hits.values())) if hits else np.zeros(len(frame), dtype=bool)
    rows = np.flatnonzero(bad)
    if not len(rows):
        return DataError(Diagnostic("D002", f"{name} is not UTF-8 text", file=name, hint=hint))
    column = next(iter(hits))
    first = int(np.flatnonzero(hits[column])[0])
    example = _show_bytes(str(frame[column].iloc[first]))
    return DataError(Diagnostic("D002", f"{len(rows)} row{'s' if len(rows) > 1 else ''} "
                                        f"{'are' if len(rows) > 1 else 'is'} not UTF-8 text (e.g. {example} in row "
                                        f"{first + 1}, column {column})",
                                rows=tuple(int(r) + 1 for r in rows), columns=tuple(map(str, hits)), file=name,
                                hint=hint))


def _show_bytes(text: str) -> str:
    """A value in quotes, its undecodable bytes written as backslash-x escapes (\\xe9)."""
    shown = _MARKED.sub(lambda m: "\\x%02x" % (ord(m.group()) - _MARK), text)
    return "'" + shown.replace("'", "\\'") + "'"


def _bad_shape(p: Path, name: str, error: Exception) -> DataError:
    """D002 for a CSV that does not tokenize: every row with more fields than the header
    (or the row where a quoted field never ends), as data rows."""
    lines: list[int] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _read_csv(p, on_bad_lines="warn")
        except (ValueError, pd.errors.ParserError, UnicodeDecodeError):
            pass
    for w in caught:
        lines += [int(x) for x in re.findall(r"line (\d+)", str(w.message))]
    found = re.search(r"(line|row) (\d+)", str(error))
    if not lines and found:
        # pandas counts records from 1 at the header ("line") or from 0 ("row")
        lines = [int(found.group(2)) + (found.group(1) == "row")]
    rows = _data_rows(p.read_bytes(), lines)
    detail = re.sub(r"^Error tokenizing data\. C error: ", "", str(error)).strip()
    if "EOF inside string" in detail:
        what = "a quoted value that never ends"
        hint = 'close the quote ("...") that starts in this row'
    else:
        what = "more fields than the header"
        hint = 'quote values that hold the separator ("a, b"), or remove the extra fields'
    if not rows:
        return DataError(Diagnostic("D002", f"cannot read {name}: {detail}", file=name, hint=hint))
    return DataError(Diagnostic("D002", f"{len(rows)} row{'s' if len(rows) > 1 else ''} "
                                        f"{'have' if len(rows) > 1 else 'has'} {what}",
                                rows=tuple(rows), file=name, hint=hint))


def _past_the_header(p: Path, name: str, error: Exception | None) -> pd.DataFrame:
    """A CSV with rows longer than its header, read once more: fields past the header's that
    are all empty (a trailing comma, ``red,1,``) are dropped, as DuckDB drops them, so that
    every engine reads such a file alike; rows whose extra fields hold a value are D002,
    every one named (pandas took the first row's extra fields for an index and shifted its
    columns: ``red,1,x`` read as color 1, y x)."""
    try:
        header = _read_csv(p, nrows=0).columns
        wide = _wide(p)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError):
        wide = None
    if wide is None:
        raise _bad_shape(p, name, error or ValueError("rows longer than the header")) from None
    extra = wide.iloc[1:, len(header):]
    full = np.flatnonzero((extra.fillna("") != "").any(axis=1).to_numpy())
    if full.size:
        rows = tuple(int(r) + 1 for r in full)
        raise DataError(Diagnostic("D002", f"{len(rows)} row{'s' if len(rows) > 1 else ''} "
                                           f"{'have' if len(rows) > 1 else 'has'} more fields than the header",
                                   rows=rows, file=name,
                                   hint='quote values that hold the separator ("a, b"), or remove the extra fields'))
    frame = wide.iloc[1:, :len(header)].reset_index(drop=True)
    frame.columns = header
    return frame


def _wide(p: Path) -> pd.DataFrame | None:
    """Every record of a CSV, the header first, in as many columns as its longest record has
    fields (shorter ones padded with ""); None where pandas cannot read it so."""
    width = None
    for _ in range(16):   # a wider row further down: read again as wide as it
        try:
            return _read_csv(p, header=None, names=None if width is None else range(width))
        except pd.errors.ParserError as e:
            saw = re.search(r"saw (\d+)", str(e))
            if saw is None or (width is not None and int(saw.group(1)) <= width):
                return None
            width = int(saw.group(1))
    return None


def _data_rows(data: bytes, lines: Sequence[int]) -> list[int]:
    """pandas' line numbers (records counted from 1 at the header, blank lines included)
    -> data rows (1 = the first row after the header, blank lines not counted).
    Records end at newlines outside quotes (an even number of quote characters before)."""
    if not lines:
        return []
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    quotes = np.flatnonzero(buf == 34)
    ends = newlines[np.searchsorted(quotes, newlines) % 2 == 0]
    starts = np.concatenate([[0], ends + 1])
    stops = np.concatenate([ends, [len(buf)]])
    length = stops - starts
    cr = np.zeros(len(starts), dtype=bool)
    inside = starts < len(buf)
    cr[inside] = buf[np.minimum(starts[inside], len(buf) - 1)] == 13
    blank = (length == 0) | ((length == 1) & cr)
    seen = np.cumsum(~blank)  # non-blank records up to and including each record
    out = []
    for line in sorted(set(lines)):
        i = min(line, len(seen)) - 1
        out.append(int(seen[i] - seen[0]) if i >= 0 else line - 1)
    return out


# ---- the shape of a table: checked alike for every engine -------------------------------------------
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


def file_columns(path: str | os.PathLike[str]) -> tuple[list[str], frozenset[str]]:
    """The column names of a data file as written (nothing renamed; a byte-order mark
    dropped), and its columns of nested values (Parquet lists, structs, maps: checked by
    :func:`require_flat` when a column is read).  Only the header (or the Parquet schema)
    is read.  D014 when a name repeats (:func:`check_columns`); a file that cannot be read
    gives no names here, and its reader says why."""
    p = Path(path)
    try:
        if p.suffix.lower() in PARQUET:
            import pyarrow as pa
            import pyarrow.parquet as pq

            schema = pq.read_schema(p)
            names = list(schema.names)
            nested = frozenset(f.name for f in schema if pa.types.is_nested(f.type))
        else:
            # the first record as data: pandas would rename a repeated name (color.1)
            head = _read_csv(p, header=None, nrows=1)
            names, nested = ([str(v) for v in head.iloc[0]] if len(head) else []), frozenset()
    except (ValueError, OSError, ImportError, MemoryError):
        return [], frozenset()
    check_columns(names, str(path))
    return names, nested


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
            import pyarrow as pa

            if pa.types.is_nested(col.dtype.pyarrow_dtype):
                out.add(str(name))
        elif col.dtype == object:
            first = col.first_valid_index()
            if first is not None and isinstance(col.loc[first], _NESTED_VALUES):
                out.add(str(name))
    return frozenset(out)


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


# ---- rows counted without a parse: rows in = rows out ------------------------------------------------
@dataclass(frozen=True)
class RowCount:
    """The data rows of a table, counted apart from any reader's parse.

    Parameters
    ----------
    rows : int
        Data rows: the header and blank lines are not rows (the numbering of every message).
    longest, longest_bytes : int
        The row (1-based) with the most bytes, and their number (its line break left out);
        0 where not known (Parquet, a DataFrame).
    """

    rows: int
    longest: int = 0
    longest_bytes: int = 0


#: bytes read at a time by :func:`count_rows`
COUNT_BLOCK = 1 << 24
_NL, _CR, _QUOTE, _COMMA, _SPACE, _TAB = 10, 13, 34, 44, 32, 9
#: the bytes before a quote that opens a field, or after one that closes it (or doubles it)
_FIELD_EDGE = np.zeros(256, dtype=bool)
_FIELD_EDGE[[_COMMA, _NL, _CR, _QUOTE]] = True


def count_rows(source: Any, longest: bool = False) -> RowCount:
    """The data rows of a CSV or Parquet file (or a DataFrame), for rows in = rows out.

    A CSV is not parsed: its bytes are read in blocks of :data:`COUNT_BLOCK` and a record
    ends at a line break (``\\n``, ``\\r\\n`` or a lone ``\\r``) outside quotes, as pandas reads
    it; a record of spaces and tabs only is a blank line, not a row.  Where a quote
    stands other than at a field's edge (``5" tall``, text after a closing quote), the
    quotes cannot be paired by counting, and pandas counts the rows instead (in pieces).
    A Parquet file's rows are in its metadata.

    The count is pandas' for every file pandas reads but one kind: after a blank line
    ended by a lone ``\\r`` (old Mac line ends), pandas' tokenizer may read that line as a
    row, or drop a comma that follows it.  ``longest``: find the longest row too (a
    slower pass: every line's length).  privatize uses the count only to find an
    engine that lost rows, and then reads the file as pandas does: a wrong count costs
    time, never a row.
    """
    if isinstance(source, pd.DataFrame):
        return RowCount(len(source))
    p = Path(source)
    if p.suffix.lower() in PARQUET:
        import pyarrow.parquet as pq

        return RowCount(pq.ParquetFile(p).metadata.num_rows)
    counted = _count_csv(p, longest)
    return counted if counted is not None else _count_by_pandas(p)


def _count_csv(path: Path, longest_wanted: bool = False) -> RowCount | None:
    """:func:`count_rows` of a CSV by its bytes; None where a quote is not at a field's edge.

    A block without quotes, ``\\r`` or blank lines (most blocks of most files) is counted by
    its line breaks alone; the others record by record."""
    records = 0                   # non-blank records so far, the header included
    longest, longest_bytes = 0, 0
    quotes = 0                    # quotes before the block (inside a quoted field when odd)
    start = 0                     # where the open record starts (absolute offset)
    blank = True                  # the open record holds only spaces and tabs so far
    offset = 0
    before = _NL                  # the byte before the block (the file starts as after a line break)
    with open(path, "rb") as f:
        if f.read(3) == b"\xef\xbb\xbf":          # a byte-order mark: pandas drops it
            offset = start = 3
        else:
            f.seek(0)
        block = f.read(COUNT_BLOCK)
        while block:
            ahead = f.read(COUNT_BLOCK)
            buf = np.frombuffer(block, dtype=np.uint8)
            after = ahead[0] if ahead else -1    # the byte after the block (-1: the end of the file)
            breaks_at = buf == _NL
            if not longest_wanted and not quotes % 2 and _plain(block, buf, breaks_at, blank):
                breaks = int(np.count_nonzero(breaks_at))
                if breaks:
                    records += breaks
                    last = block.rfind(b"\n")
                    start = offset + last + 1
                    blank = _only_blanks(_content(buf[last + 1:]))
                else:
                    blank = blank and _only_blanks(_content(buf))
                before = block[-1]
                offset += len(block)
                block = ahead
                continue
            q = np.flatnonzero(buf == _QUOTE)
            if q.size and not _quotes_pair(buf, q, quotes, before, _NL if after < 0 else after):
                return None
            ends = _record_ends(buf, q, quotes, after)
            if ends.size:
                first = start - offset                       # < 0: the record began in an earlier block
                starts = np.concatenate(([first], ends[:-1] + 1))
                prev = np.where(ends > 0, buf[np.maximum(ends - 1, 0)], before)
                stops = ends - ((buf[ends] == _NL) & (prev == _CR))   # \r\n: the \r is no content
                empty = _blank_records(buf, np.maximum(starts, 0), stops)
                empty[0] &= blank
                full = ~empty
                row = records - 1 + np.cumsum(full)          # the data row of each record (header: 0)
                records += int(np.count_nonzero(full))
                sizes = np.where(full & (row >= 1), stops - starts, -1)
                k = int(np.argmax(sizes))
                if sizes[k] > longest_bytes:
                    longest, longest_bytes = int(row[k]), int(sizes[k])
                start = offset + int(ends[-1]) + 1
                blank = _only_blanks(_content(buf[int(ends[-1]) + 1:]))
            else:
                blank = blank and _only_blanks(_content(buf))
            quotes += int(q.size)
            before = block[-1]
            offset += len(block)
            block = ahead
    if offset > start and not blank:   # a last record without a line break
        records += 1
        if records > 1 and offset - start > longest_bytes:
            longest, longest_bytes = records - 1, offset - start
    return RowCount(max(records - 1, 0), longest, longest_bytes)


def _plain(block: bytes, buf: np.ndarray, breaks: np.ndarray, blank: bool) -> bool:
    """Whether every record that ends in ``block`` is a row and ends at a ``\\n`` (``breaks``):
    no quote, no ``\\r``, no blank line (no line starts with a line break, a space or a
    tab), and the record open before the block is not blank."""
    if blank and block[:1] in (b"\n", b" ", b"\t"):
        return False
    if block.find(b'"') >= 0 or block.find(b"\r") >= 0:    # one byte each: memchr
        return False
    nxt = buf[1:]
    return not np.any(breaks[:-1] & ((nxt == _NL) | (nxt == _SPACE) | (nxt == _TAB)))


def _quotes_pair(buf: np.ndarray, q: np.ndarray, quotes: int, before: int, after: int) -> bool:
    """Whether the quotes at ``q`` pair up by counting: each one that opens a field (an even
    number of quotes before it) follows a comma, a line break or a quote (the second of a
    doubled ``""``), and each one that closes a field is followed by one of them.  Otherwise
    (``5" tall``, ``"a" b``, a space before the quote) only a parse can tell."""
    opening, closing = (q[::2], q[1::2]) if quotes % 2 == 0 else (q[1::2], q[::2])
    if opening.size and not (_FIELD_EDGE[buf[opening[opening > 0] - 1]].all()
                             and (opening[0] > 0 or _FIELD_EDGE[before])):
        return False
    last = len(buf) - 1
    return not closing.size or bool(_FIELD_EDGE[buf[closing[closing < last] + 1]].all()
                                    and (closing[-1] < last or _FIELD_EDGE[after]))


def _record_ends(buf: np.ndarray, q: np.ndarray, quotes: int, after: int) -> np.ndarray:
    """Where records end in ``buf``: at ``\\n`` and at a lone ``\\r``, outside quotes."""
    ends = np.flatnonzero(buf == _NL)
    crs = np.flatnonzero(buf == _CR)
    if crs.size:                  # a lone \r ends a record too (\r\n ends at its \n)
        last = len(buf) - 1
        nxt = np.where(crs < last, buf[np.minimum(crs + 1, last)], after)
        ends = np.union1d(ends, crs[nxt != _NL])
    if ends.size and (q.size or quotes % 2):   # a line break inside quotes ends nothing
        ends = ends[(quotes + np.searchsorted(q, ends)) % 2 == 0]
    return ends


def _content(tail: np.ndarray) -> np.ndarray:
    """The bytes of a record still open at the end of a block: a final ``\\r`` is left out
    (the next block starts with the ``\\n`` of its ``\\r\\n``, or it would have ended the record)."""
    return tail[:-1] if len(tail) and tail[-1] == _CR else tail


def _only_blanks(segment: np.ndarray) -> bool:
    """Whether the bytes are spaces and tabs only (pandas skips such a line)."""
    return not np.any((segment != _SPACE) & (segment != _TAB))


def _blank_records(buf: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Whether each record ``buf[start:stop]`` is blank: empty, or spaces and tabs only (only
    the records that start with one are looked at)."""
    blank = stops <= starts
    first = buf[np.minimum(starts, len(buf) - 1)]
    for k in np.flatnonzero(~blank & ((first == _SPACE) | (first == _TAB))):
        blank[k] = _only_blanks(buf[starts[k]:stops[k]])
    return blank


def _count_by_pandas(path: Path) -> RowCount | None:
    """The rows pandas reads, counted in pieces (bounded memory); None if it cannot read them."""
    # the first column only, for memory; pandas 3 fails on usecols where a malformed line
    # is shorter than the header (``zip() argument 2 is shorter``) but reads every column
    for options in ({"usecols": [0]}, {}):
        rows = 0
        try:
            for piece in _read_csv(path, chunksize=1 << 20, **options):
                rows += len(piece)
        except (ValueError, OSError, MemoryError):
            continue
        return RowCount(rows)
    return None


def too_large(path: str | os.PathLike[str], name: str | None = None) -> DataError:
    """D017: a file that does not fit in memory, naming its longest row where one row alone
    is too long to be data (:data:`LONG_ROW`), from a count that needs no memory."""
    p = Path(path)
    name = name or str(path)
    counted = count_rows(p, longest=True) if p.suffix.lower() not in PARQUET else None
    if counted is not None and counted.longest_bytes > LONG_ROW:
        return DataError(Diagnostic(
            "D017", f"{name} is too large to read in memory: row {counted.longest} holds "
                    f"{counted.longest_bytes:,} bytes", rows=(counted.longest,), file=name,
            hint="a report or a raw value takes a few bytes: check how the file was written (a quote that "
                 "never closes, or line breaks lost, join rows into one)"))
    size = p.stat().st_size if p.is_file() else 0
    return DataError(Diagnostic("D017", f"{name} ({size:,} bytes) is too large to read in memory", file=name,
                                hint="read it with the duckdb engine (--engine duckdb, the default for files: "
                                     "streamed, out of core), or in pieces"))


#: bytes beyond which one row is named as the reason a file does not fit in memory
LONG_ROW = 1 << 20


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


# ---- writing -------------------------------------------------------------------------------------
class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived while a file was being written (the temporary file is
    removed on the way out); :attr:`signum` gives the exit status ``128 + signum``."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum


@contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM raise :class:`Interrupted` (SIGTERM would
    otherwise end the process at once, leaving the temporary file behind); the
    previous handlers come back afterwards.  Only the main thread can set handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise Interrupted(signum)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, interrupt)
        except (ValueError, OSError):  # not settable here
            pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


#: what :func:`output_kind` calls each kind of file a path can name
_KINDS = ((stat.S_ISREG, "file"), (stat.S_ISLNK, "symbolic link"), (stat.S_ISDIR, "folder"),
          (stat.S_ISFIFO, "named pipe (FIFO)"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
          (stat.S_ISBLK, "block device"))


def output_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` names, the last component not followed if it is a link: None when
    nothing is there, else ``"file"`` (a regular file), ``"symbolic link"``, ``"folder"``,
    ``"named pipe (FIFO)"``, ``"socket"``, ``"character device"``, ``"block device"``.

    Examples
    --------
    >>> output_kind("/dev/null"), output_kind("/")
    ('character device', 'folder')
    """
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    return next((name for test, name in _KINDS if test(mode)), "special file")


def _not_regular(name: str, kind: str) -> DataError:
    """D007 for a target that exists and is neither a regular file nor a link: privspec
    replaces none of these, even with --force (a device or a pipe is not a file's old
    version: replacing ``/dev/full`` as root would put a regular file in its place)."""
    return DataError(Diagnostic(
        "D007", f"cannot write {name}: it is a {kind}, not a regular file; privspec writes regular files only, "
                "and never replaces anything else (not even with --force)", file=name,
        hint="give the path of a new or a regular file"))


def _link_refused(name: str, path: str | os.PathLike[str]) -> DataError:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    dangling = not os.path.exists(path)
    return DataError(Diagnostic(
        "D007", f"{name} is a symbolic link (to {target}{', which does not exist' if dangling else ''}): privspec "
                "does not write through links", file=name,
        hint=f"give another path, or add --force (force=True in Python) to replace the link itself with a "
             f"regular file ({target} is left untouched)"))


def check_output(path: str | os.PathLike[str], force: bool = False) -> None:
    """Refuse, before any work, an output that cannot or should not be written (D007):
    a folder that does not exist or cannot be written, a path that is a folder, a device,
    a named pipe or a socket (even with ``force``), an existing file or a symbolic link
    (unless ``force``: the link itself is then replaced, never what it points to), Parquet
    without pyarrow.  :func:`write_atomic` checks again when it publishes the file."""
    p = Path(path)
    name = str(path)
    folder = p.parent if str(p.parent) else Path(".")
    kind = output_kind(p)
    if kind == "folder":
        raise DataError(Diagnostic("D007", f"cannot write {name}: it is a folder", file=name,
                                   hint=f"give a file name, e.g. --output {p / 'privatized.csv'}"))
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise DataError(Diagnostic("D007", f"cannot write {name}: the folder {folder} {what}", file=name,
                                   hint=f"create it first (mkdir -p {folder}) or write elsewhere"))
    if kind not in (None, "file", "symbolic link"):
        raise _not_regular(name, kind)
    if kind == "symbolic link" and not force:
        raise _link_refused(name, p)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DataError(Diagnostic("D007", f"cannot write {name}: the folder {folder} is not writable", file=name,
                                   hint="write somewhere you may write"))
    if kind == "file" and not force:
        raise _exists(name)
    if p.suffix.lower() in PARQUET:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise DataError(Diagnostic("D007", f"cannot write {name}: Parquet needs pyarrow", file=name,
                                       hint="pip install pyarrow (a dependency of privspec), or write CSV")) from None


def _exists(name: str, appeared: bool = False) -> DataError:
    when = " (it appeared while privspec was writing: another run wrote it first)" if appeared else ""
    return DataError(Diagnostic("D007", f"{name} exists{when}: privspec does not overwrite a file unless asked",
                                file=name, hint="add --force (force=True in Python) to replace it, or choose "
                                                "another output"))


def write_atomic(path: str | os.PathLike[str], write: Callable[[str], None], force: bool = False) -> None:
    """``write(tmp)`` to a temporary file beside ``path``, then publish it there, so that a
    failure never leaves a partial file.

    Without ``force`` the finished file is hard-linked to ``path`` (:func:`_publish`), which
    fails if anything is there by then: of two runs writing one new output, exactly one
    succeeds, the other gets D007 and its file is dropped; the check and the write are one
    step, where a check before a rename would let the later rename win silently.  With
    ``force`` it is renamed over ``path`` (a regular file, or a link: the link itself is
    replaced), after checking once more that ``path`` is no device, pipe, socket or folder.

    SIGINT and SIGTERM during the write remove the temporary file and raise
    :class:`Interrupted`; only ``kill -9`` can leave it behind: ``.NAME.XXXXXXXX.tmp``
    beside ``path`` (docs/cli.md).  The file gets the permissions a plain ``open`` would
    give (``mkstemp``'s are private to the user)."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    with interrupt_on_signals():
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=folder)
        os.close(fd)
        try:
            write(tmp)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            _publish(tmp, p, force)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)


#: errors of :func:`os.link` that mean "no hard links here" (FAT and some network or FUSE
#: file systems: EPERM or EOPNOTSUPP), rather than "the target exists"
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK}


def _publish(tmp: str, path: Path, force: bool) -> None:
    """Put the finished temporary file ``tmp`` at ``path`` (the caller removes ``tmp``)."""
    name = str(path)
    if force:
        kind = output_kind(path)
        if kind not in (None, "file", "symbolic link"):  # became one since check_output
            raise _not_regular(name, kind)
        os.replace(tmp, path)  # a link is replaced itself: rename never follows the last component
        return
    try:
        os.link(tmp, path)  # fails with EEXIST if anything is at path, a dangling link too
    except FileExistsError:
        raise _exists(name, appeared=True) from None
    except OSError as e:
        if e.errno not in _NO_LINKS:
            raise
        _publish_exclusive(tmp, path)


def _publish_exclusive(tmp: str, path: Path) -> None:
    """The fallback where the file system has no hard links: reserve ``path`` by creating
    it empty with ``O_EXCL`` (fails if anything is there, a link included: one writer
    wins), then rename the finished file over that reservation.  Not atomic as the link
    is: until the rename a reader can see the empty reservation, and a run with --force
    could replace it meanwhile (and then lose to this rename); but no run without --force
    ever replaces another's file, and the file is whole once it is there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        raise _exists(str(path), appeared=True) from None
    os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(path)  # our empty reservation
        raise


def csv_quoting(frame: pd.DataFrame, scan: Sequence[Any] = ()) -> int:
    """How to quote ``frame`` as CSV: :data:`csv.QUOTE_MINIMAL`, or :data:`csv.QUOTE_ALL`
    when a text holds a carriage return (pandas' writer quotes a cell holding ``\\n`` but
    not a lone ``\\r``, which every reader then takes for the end of a row: one row would
    become two).  The texts looked at: a categorical's categories (a label), and the
    columns in ``scan`` (raw text kept as it was); reports made of numbers need no look."""
    import csv

    for c in frame.columns:
        col = frame[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            texts = pd.Series(col.cat.categories, dtype=object)
        elif c in scan and not pd.api.types.is_numeric_dtype(col.dtype):
            texts = col.astype(object)
        else:
            continue
        if texts.astype(str).str.contains("\r", regex=False).any():
            return csv.QUOTE_ALL
    return csv.QUOTE_MINIMAL


def write_table_atomic(frame: pd.DataFrame, path: str | os.PathLike[str], force: bool = False) -> None:
    """CSV or Parquet (by the suffix), written atomically (:func:`write_atomic`)."""
    parquet = Path(path).suffix.lower() in PARQUET

    def write(tmp: str) -> None:
        if parquet:
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False, quoting=csv_quoting(frame, frame.columns))

    write_atomic(path, write, force=force)


def write_text_atomic(text: str, path: str | os.PathLike[str], force: bool = False) -> None:
    """Text, written atomically (:func:`write_atomic`)."""
    write_atomic(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"), force=force)


def write_bytes_atomic(data: bytes, path: str | os.PathLike[str], force: bool = False) -> None:
    """Bytes, written atomically (:func:`write_atomic`)."""
    write_atomic(path, lambda tmp: Path(tmp).write_bytes(data), force=force)


# ---- the spreadsheet guard ---------------------------------------------------------------------
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
    if not isinstance(text, str) or not re.match(_TO_GUARD, text) or re.match(_PLAIN, text):
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
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        arr = pa.array(col, type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # not all text: cell by cell
        return col.map(guard_text)
    hit = pc.and_(pc.match_substring_regex(arr, _TO_GUARD), pc.invert(pc.match_substring_regex(arr, _PLAIN)))
    if not pc.any(hit).as_py():
        return col
    out = pc.if_else(hit, pc.binary_join_element_wise("'", arr, ""), arr)
    return pd.Series(out.to_numpy(zero_copy_only=False), index=col.index, name=col.name, dtype=object)


def guard_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The table guarded for a spreadsheet (``--csv-guard``): every text cell and column name
    that starts like a formula gets a single quote before it (:func:`guard_text`), as
    OWASP's advice on CSV injection says.  privspec reads such a CSV back as it was
    (:func:`read_table` and every engine drop the quote)."""
    out = frame.copy(deep=False)
    for i, c in enumerate(frame.columns):
        out.isetitem(i, _guard_column(frame.iloc[:, i]))
    out.columns = [guard_text(c) for c in frame.columns]
    return out


def _unguard_cells(frame: pd.DataFrame, source: Any) -> pd.DataFrame:
    """The cells and column names of a CSV read as text, a guarded cell's quote dropped
    (:func:`unguard_text`).  A file without a single quote (one ``memchr`` pass) is
    returned as it is; else each text column that has a guarded cell is fixed, by Arrow."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if any(isinstance(c, str) and c.startswith("'") for c in frame.columns):
        frame.columns = [unguard_text(c) for c in frame.columns]
    if not len(frame) or not _may_hold_quote(source):
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
            import mmap

            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                return m.find(b"'") >= 0
    except (OSError, ValueError, TypeError):
        return True


def data_role(query: Any) -> str | None:
    """``"required"`` when ``run`` answers the query from data (the query-kind table says
    it needs data), ``"optional"`` when it uses data if some is bound to the query's
    mechanism (the data-based coverage of an interval mechanism, otherwise answered
    analytically), None when it needs none."""
    if needs_data(query.kind):
        return "required"
    if query.kind == "coverage" and getattr(query.mechanism, "family", None) == "interval":
        return "optional"
    return None


def observed_columns(mechanism: Any) -> set[str]:
    """The columns a mechanism's reports fill: the variables (base parts of combined ones),
    or the columns a mechanism names itself (``censored(Y, lower = L, upper = R)``)."""
    named = getattr(mechanism, "columns", None)
    if named:
        return set(named)
    return {c for v in mechanism.variables for c in v.components()}


@dataclass
class DataBindings:
    """The ``--data`` arguments of ``privspec run``: one default file and/or files per
    mechanism (``--data M=FILE``, ``--data M1,M2=FILE``).  Tables are read once and shared
    by every query.

    A column holds the reports of one mechanism: when several mechanisms that this run
    reads data for observe the same variable and only the default file is given for them,
    :meth:`check` refuses the run (D006), naming the candidates and the fix.
    """

    default: str | None = None
    per_mechanism: dict[str, str] = field(default_factory=dict)
    #: who counts (:mod:`privspec.backends.data.engines`): None for the default by input kind
    engine: str | None = None
    _cache: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)  # DataFrames given to the API
    _engines: dict[str, Any] = field(default_factory=dict, repr=False)
    _rows: dict[str, bool] = field(default_factory=dict, repr=False)   # whether each table has a data row

    @classmethod
    def parse(cls, items: Sequence[str], mechanisms: Sequence[str]) -> "DataBindings":
        """From ``["FILE"]`` or ``["M=FILE", "M1,M2=FILE", ...]``; each ``M`` must name a mechanism.

        Examples
        --------
        >>> b = DataBindings.parse(["reports.csv", "c1,c2=other.csv"], ["c1", "c2", "s1"])
        >>> b.default, b.per_mechanism
        ('reports.csv', {'c1': 'other.csv', 'c2': 'other.csv'})
        """
        b = cls()
        for item in items:
            name, sep, path = item.partition("=")
            names = [x.strip() for x in name.split(",")]
            if sep and all(x in mechanisms for x in names):
                for x in names:
                    b.per_mechanism[x] = path
            elif sep and not Path(item).exists() and all(x.isidentifier() for x in names):
                unknown = next(x for x in names if x not in mechanisms)
                raise ValueError(f"--data {item}: no mechanism named '{unknown}'")
            elif b.default is not None:
                raise ValueError("--data: give one default file; bind others with --data MECHANISM=FILE")
            else:
                b.default = item
        return b

    @classmethod
    def of(cls, data: Any, mechanisms: Sequence[str]) -> "DataBindings":
        """From what the Python API takes: a path, a :class:`pandas.DataFrame`, or a mapping
        mechanism name -> path or DataFrame (a key ``None`` or ``"*"``: the default table).

        A DataFrame is named ``<DataFrame>`` (or ``<DataFrame for M>``) in messages, where a
        file would be named by its path.

        Examples
        --------
        >>> import pandas as pd
        >>> b = DataBindings.of({"c1": pd.DataFrame({"salary": ["(0, 5]"]}), "s1": "s1.csv"}, ["c1", "s1"])
        >>> b.path_for("c1"), b.path_for("s1"), b.columns_for("c1")
        ('<DataFrame for c1>', 's1.csv', ['salary'])
        """
        b = cls()

        def source(value: Any, label: str) -> str:
            if isinstance(value, pd.DataFrame):
                b._cache[label] = value
                return label
            if isinstance(value, (str, os.PathLike)):
                return os.fspath(value)
            raise TypeError(f"data must be a path or a pandas DataFrame, not {type(value).__name__}")

        if isinstance(data, (str, os.PathLike, pd.DataFrame)):
            b.default = source(data, "<DataFrame>")
            return b
        if not isinstance(data, Mapping):
            raise TypeError(f"data must be a path, a DataFrame or a mapping mechanism -> path/DataFrame, "
                            f"not {type(data).__name__}")
        for name, value in data.items():
            if name in (None, "*"):
                b.default = source(value, "<DataFrame>")
                continue
            if name not in mechanisms:
                raise ValueError(f"data: no mechanism named '{name}'")
            b.per_mechanism[name] = source(value, f"<DataFrame for {name}>")
        return b

    def has_source(self, mechanism: str | None) -> bool:
        """Whether a file is bound to ``mechanism`` (explicitly, or the default file)."""
        return (mechanism or "") in self.per_mechanism or self.default is not None

    def check(self, queries: Sequence[Any]) -> None:
        """Refuse a default file whose column would feed several mechanisms (D006).

        Mechanisms bound explicitly are not candidates; a mechanism that only uses data if
        there is some (an interval coverage) is a candidate when the default file has its column.
        """
        if self.default is None:
            return
        readers: dict[str, Any] = {}
        for q in queries:
            role = data_role(q)
            mech = getattr(q, "mechanism", None)
            if role is None or mech is None or not getattr(mech, "name", None) or mech.name in self.per_mechanism:
                continue
            if role == "optional" and not observed_columns(mech) <= set(self.default_columns()):
                continue
            readers.setdefault(mech.name, mech)
        owners: dict[str, list[str]] = {}
        for name, mech in readers.items():
            for column in sorted(observed_columns(mech)):
                owners.setdefault(column, []).append(name)
        for column, names in owners.items():
            if len(names) > 1:
                shown = ", ".join(names[:-1]) + f" and {names[-1]}"
                fix = " ".join(f"--data {m}=FILE" for m in names)
                raise DataError(Diagnostic(
                    "D006", f"{self.default}: the column '{column}' would feed {len(names)} mechanisms that observe "
                            f"{column} ({shown}); a column holds the reports of one mechanism, and the binding "
                            "does not say which", columns=(column,),
                    hint=f"bind each mechanism to the file of its reports: {fix} (or answer fewer queries "
                         "with --query)"))

    def default_columns(self) -> list[str]:
        """The columns of the default table (a file's header only is read)."""
        if self.default is None:
            raise DataError(Diagnostic("D005", "no default data file"))
        return self._engine(self.default).columns()

    def path_for(self, mechanism: str | None) -> str:
        path = self.per_mechanism.get(mechanism or "", self.default)
        if path is None:
            raise DataError(Diagnostic("D005", f"no data for mechanism '{mechanism}'",
                                       hint=f"add --data {mechanism}=FILE"))
        return path

    def engine_for(self, mechanism: str | None) -> Any:
        """The engine that counts the table bound to ``mechanism`` (one per table, shared by
        every query): the one asked for, else pandas for a DataFrame and DuckDB for a file.
        D103 when the table has no data row (a header only): no query can be answered from
        it, and every engine, family and query says so alike."""
        path = self.path_for(mechanism)
        engine = self._engine(path)
        if path not in self._rows:
            self._rows[path] = engine.has_rows()
        if not self._rows[path]:
            raise DataError(Diagnostic("D103", "no report was collected: nothing to estimate from",
                                       hint="the table has a header and no data row"))
        return engine

    def _engine(self, path: str) -> Any:
        from privspec.backends.data.engines import engine_for

        if path not in self._engines:
            source = self._cache.get(path) if path.startswith("<DataFrame") else path
            self._engines[path] = engine_for(source if source is not None else path, self.engine, name=path)
        return self._engines[path]

    def columns_for(self, mechanism: str | None) -> list[str]:
        """The columns of the table bound to ``mechanism`` (a file's header only is read)."""
        return self._engine(self.path_for(mechanism)).columns()
