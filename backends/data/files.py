"""Reading a data file (CSV or Parquet): whole, as the reference every engine falls back
on (:func:`read_table`, whose diagnostics name the file and its rows: D001 no such file,
D002 unreadable (not UTF-8, rows longer than the header, a quote that never ends), D003
a missing column, D014 a repeated column name, D017 too large for memory); its header
only (:func:`file_columns`); or its data rows counted apart from any reader's parse, for
rows in = rows out (:func:`count_rows`).

Rows are numbered as a person reads the file, one way everywhere: row 1 is the first
data row after the header (blank lines are not rows), so row N is the frame's row
``N - 1``.  Every data diagnostic names its file (:meth:`privspec.errors.DataError.with_file`).
"""
from __future__ import annotations

import codecs
import io
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from privspec.errors import DataError, Diagnostic
from privspec.outputs import PARQUET
from privspec.backends.data.checks import check_columns, require_columns
from privspec.backends.data.csv_cells import read_csv

#: what names a data file: its path
FILE = (str, os.PathLike)

# undecodable bytes b -> U+F0000 + b (Supplementary Private Use Area-A): a CSV that is not
# UTF-8 still parses, and each cell that held a bad byte is found, with the byte, by a regex
_MARK = 0xF0000
_MARKED = re.compile("[\\U000F0000-\\U000F00FF]")


def _mark_bad_bytes(error: UnicodeError) -> tuple[str, int]:
    bad = error.object[error.start:error.end]  # type: ignore[attr-defined]
    return "".join(chr(_MARK + b) for b in bad), error.end  # type: ignore[attr-defined]


codecs.register_error("privspec-mark", _mark_bad_bytes)


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
            frame = read_csv(p)
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


def _not_utf8(p: Path, name: str) -> DataError:
    """D002 naming every row and column that holds a byte that is not UTF-8."""
    hint = (f"save the file as UTF-8 text (from Latin-1, for example: iconv -f latin1 -t utf-8 {name} "
            f"> {p.with_name(p.stem + '.utf8' + p.suffix)})")
    text = p.read_bytes().decode("utf-8", errors="privspec-mark")
    try:
        frame = read_csv(io.StringIO(text))
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
            read_csv(p, on_bad_lines="warn")
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
        header = read_csv(p, nrows=0).columns
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
            return read_csv(p, header=None, names=None if width is None else range(width))
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


def file_columns(path: str | os.PathLike[str]) -> tuple[list[str], frozenset[str]]:
    """The column names of a data file as written (nothing renamed; a byte-order mark
    dropped), and its columns of nested values (Parquet lists, structs, maps: checked by
    :func:`~privspec.backends.data.checks.require_flat` when a column is read).  Only the
    header (or the Parquet schema) is read.  D014 when a name repeats
    (:func:`~privspec.backends.data.checks.check_columns`); a file that cannot be read
    gives no names here, and its reader says why."""
    p = Path(path)
    try:
        if p.suffix.lower() in PARQUET:
            # start-up: pyarrow.parquet costs 30 ms, paid only where a Parquet file is read
            import pyarrow.parquet as pq

            schema = pq.read_schema(p)
            names = list(schema.names)
            nested = frozenset(f.name for f in schema if pa.types.is_nested(f.type))
        else:
            # the first record as data: pandas would rename a repeated name (color.1)
            head = read_csv(p, header=None, nrows=1)
            names, nested = ([str(v) for v in head.iloc[0]] if len(head) else []), frozenset()
    except (ValueError, OSError, ImportError, MemoryError):
        return [], frozenset()
    check_columns(names, str(path))
    return names, nested


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
        # start-up: pyarrow.parquet costs 30 ms, paid only where a Parquet file is counted
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
            for piece in read_csv(path, chunksize=1 << 20, **options):
                rows += len(piece)
        except (ValueError, OSError, MemoryError):
            continue
        return RowCount(rows)
    return None

