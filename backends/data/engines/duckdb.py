"""The DuckDB engine, the default for files: CSV and Parquet counted out of core on all
cores, the group-by pushed into SQL (``SELECT cols, count(*) ... GROUP BY ALL``), a
report column partly parsed in SQL (:meth:`DuckDBEngine.tally_parsed`).  A file DuckDB
refuses, or would read otherwise than pandas, is counted by the pandas engine instead:
the results and the diagnostics stay the same.
"""
from __future__ import annotations

import itertools
import os
import weakref
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from privspec.errors import DataError
from privspec.backends.data.csv_cells import UNGUARD_SQL, read_csv
from privspec.backends.data.engines.fallback import PandasFallback
from privspec.backends.data.engines.pandas import PandasEngine
from privspec.backends.data.files import FILE
from privspec.backends.data.float_sort import float_order
from privspec.backends.data.parquet_counts import quote_name, quote_text
from privspec.backends.data.tally import Tally, canonical, run_starts

#: a quick reading of two values from text cells (:meth:`DuckDBEngine.tally_parsed`)
Quick = Callable[[Any], tuple[np.ndarray, np.ndarray, np.ndarray]]

#: bytes of a CSV's last line beyond which DuckDB does not read the file: DuckDB drops a
#: final row longer than its read buffer (16 x its 2 MB line limit) without a word
#: (duckdb/duckdb#25825), and refuses any other row over 2 MB; pandas reads such a file
LONG_LAST_LINE = 1 << 20


def long_last_line(path: str | os.PathLike[str], limit: int | None = None) -> bool:
    """Whether a file's last line (empty lines and line breaks at the end aside) is longer
    than ``limit`` bytes (:data:`LONG_LAST_LINE`): only the file's end is read, and a file
    ending in more than 64 bytes of line breaks counts as long."""
    limit = LONG_LAST_LINE if limit is None else limit
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        if size <= limit:
            return False
        begin = max(0, size - limit - 65)   # the line's last limit + 1 bytes and what follows it
        f.seek(begin)
        tail = f.read().rstrip(b"\r\n")
    window = tail[-limit - 1:]
    if len(window) <= limit:                # blank lines all the way back: cannot tell
        return begin > 0
    return b"\n" not in window and b"\r" not in window


_IDS = itertools.count()
_CONNECTIONS: dict[int, Any] = {}


def _sort_runs(block: np.ndarray) -> None:
    """Rows ``block[:, i]`` of two values, sorted by the first, put in order of both in
    place: the second values sorted within each run of equal firsts (each row counts once,
    so nothing else moves with them; where -0.0 and 0.0 make one run, the rows move
    whole).  A few runs are sorted one by one; many, by a lexsort of all rows."""
    first, second = block
    # the runs longer than one row from the rows that repeat the one before (few, where
    # most rows are different: no array of every run's start, 0.3 s of fresh memory at 1e7)
    repeat = np.flatnonzero(first[1:] == first[:-1]) + 1
    if not repeat.size:
        return
    breaks = np.flatnonzero(np.diff(repeat) != 1)
    starts = repeat[np.append(0, breaks + 1)] - 1
    ends = repeat[np.append(breaks, repeat.size - 1)] + 1
    if starts.size > _RUN_SORTS:
        block[:] = block[:, np.lexsort((second, first))]
        return
    for s, e in zip(starts.tolist(), ends.tolist()):
        if first[s] == 0:
            block[:, s:e] = block[:, s:e][:, np.argsort(second[s:e], kind="stable")]
        else:
            second[s:e].sort()


def _batches(rel: Any) -> Iterator[Any]:
    """A DuckDB relation's result as Arrow record batches, streamed (DuckDB 2's name, and
    1's; else the whole table's batches)."""
    for name in ("to_arrow_reader", "fetch_arrow_reader", "record_batch"):
        if hasattr(rel, name):
            yield from getattr(rel, name)(_BATCH_ROWS)
            return
    yield from _arrow(rel).to_batches()  # pragma: no cover - DuckDB has one of those


def _arrow(rel: Any) -> Any:
    """A DuckDB relation's result as an Arrow table (DuckDB 2's name, and 1's)."""
    return rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()


def _parsed_first(got: Any, *, sorted_in_sql: bool) -> tuple[Any, Any]:
    """The rows of an Arrow table whose first end parsed (``e0`` not null), and the rest.
    Sorted in SQL (``NULLS LAST``) they come first; else they are picked out, where
    there are others at all (most files: none)."""
    nulls = got.column("e0").null_count
    k = got.num_rows - nulls
    if sorted_in_sql or not nulls:
        return got.slice(0, k), got.slice(k)
    valid = pc.is_valid(got.column("e0"))
    return got.filter(valid), got.filter(pc.invert(valid))


def _column(table: Any, name: str, out: np.ndarray) -> np.ndarray:
    """The float column ``name`` of an Arrow table written into ``out``, chunk by chunk."""
    at = 0
    for chunk in table.column(name).chunks:
        out[at:at + len(chunk)] = chunk.to_numpy(zero_copy_only=False)
        at += len(chunk)
    return out


def _unregister(con: Any, view: str) -> None:
    try:
        con.unregister(view)
    except Exception:  # the connection is gone: nothing to release
        pass


def _connection() -> Any:
    """One in-memory DuckDB connection per process (opening one costs ~12 ms): engines
    name their views and tables apart.  A forked child opens its own."""
    # start-up: duckdb costs 200 ms, paid only by a run that counts with it
    import duckdb

    pid = os.getpid()
    if pid not in _CONNECTIONS:
        _CONNECTIONS.clear()
        _CONNECTIONS[pid] = duckdb.connect(database=":memory:")
    return _CONNECTIONS[pid]

def _layers(query: str, prepare: Sequence[tuple[str, str]]) -> str:
    """``query`` with each named expression of ``prepare`` added as a column, one nested
    SELECT each (a later expression may use an earlier one's name; each is computed once)."""
    for name, expr in prepare:
        query = f"SELECT *, ({expr}) AS {name} FROM ({query})"
    return query


#: rows of a streamed batch (:func:`_batches`)
_BATCH_ROWS = 1 << 20
#: the read buffer of a CSV's first rows (a sample): DuckDB's longest line, 2 MB
_HEAD_BUFFER = 2 ** 21
#: rows sampled, and the share of different cells, and of cells SQL parses, among them
#: above which :meth:`DuckDBEngine.tally_parsed` parses every row instead of the distinct texts
#: (16,384 rows tell the two apart as well as 65,536 did, in 10 ms of CPU where those took
#: 26: 1e6 Case-II reports, a quarter of what the read costs beyond the floor)
_DISTINCT_SAMPLE = 16384
_DISTINCT_SHARE = 0.5
#: runs of equal first values above which the rows parsed one by one are sorted by numpy's
#: lexsort rather than a sort of each run's second values (:func:`_sort_runs`)
_RUN_SORTS = 4096


class _PandasReads(Exception):
    """DuckDB read a file that only pandas' reading reads right (:meth:`DuckDBEngine._blank_cells`)."""


class DuckDBEngine(PandasFallback):
    """Counts in DuckDB (embedded): ``SELECT cols, count(*) ... GROUP BY ALL`` over the
    file, out of core, on all cores.  CSV cells are read as text with the conventions of
    :func:`.files.read_table` (a space after a comma skipped, an empty cell ``""``)."""

    name: ClassVar[str] = "duckdb"
    needs: ClassVar[str] = "duckdb"
    extra: ClassVar[str | None] = "duckdb"
    #: the default for a file, where installed
    default_for: ClassVar[tuple[type, ...]] = FILE
    rank: ClassVar[int] = 1

    def __init__(self, source: Any, name: str | None = None):
        # start-up: duckdb costs 200 ms, paid only by a run that counts with it
        import duckdb

        self._duckdb = duckdb
        self.con = _connection()
        self._id = next(_IDS)
        self._start()
        self._frame_view: str | None = None
        if isinstance(source, pd.DataFrame):
            self._open_frame(source, name)
            self._frame_view = f"privspec_frame_{self._id}"
            try:
                self.con.register(self._frame_view, source)
            except duckdb.Error:   # a column DuckDB cannot take (numpy arrays of text): pandas counts
                self._frame_view = None
                self._use_pandas()
                return
            weakref.finalize(self, _unregister, self.con, self._frame_view)  # the frame is not held after
            self._from = self._frame_view
            return
        path = self._open_file(source, name)
        try:
            if self._csv and long_last_line(path):
                # DuckDB drops a final row longer than its read buffer without a word
                # (duckdb/duckdb#25825): pandas reads such a file, or names the row
                self._use_pandas()
                return
            if self._csv:
                self._header, skip = self._csv_header(path)
                cols = ", ".join(f"{quote_text(f'f{i}')}: 'VARCHAR'" for i in range(len(self._header)))
                names = ", ".join(f"{quote_name(f'f{i}')} AS {quote_name(c)}" for i, c in enumerate(self._header))
                froms = []
                # (the first rows alone, for a sample: read in a smaller buffer, 2 MB, DuckDB's
                # longest line, not the whole file's first 32 MB; 1e6 reports: 8 ms -> 3)
                for buffer in ("", f", buffer_size = {_HEAD_BUFFER}"):
                    read = (f"(SELECT {names} FROM read_csv({quote_text(self._path)}, header = true, skip = {skip}, "
                            f"delim = ',', quote = '\"', escape = '\"', auto_detect = false, columns = {{{cols}}}, "
                            f"strict_mode = true, null_padding = false, allow_quoted_nulls = false, "
                            f"encoding = 'utf-8'{buffer}))")
                    if len(self._header) == 1:
                        # a blank line is no row (as pandas reads it); DuckDB reads it as an empty
                        # field, which in a one-column file can only be unquoted: NULL, not ''
                        read = f"(SELECT * FROM {read} WHERE {quote_name(self._header[0])} IS NOT NULL)"
                    froms.append(read)
                self._from, self._head = froms
            else:
                self._from = f"read_parquet({quote_text(self._path)})"
                described = self.con.execute(f"SELECT * FROM {self._from} LIMIT 0").description
                self._header = [d[0] for d in described]
                self._floats = {d[0] for d in described if str(d[1]).upper() in ("DOUBLE", "FLOAT", "REAL")}
        except DataError:
            raise
        except Exception:
            self._use_pandas()

    def _csv_header(self, path: Path) -> tuple[list[str], int]:
        """The column names as pandas reads them (a byte-order mark dropped, duplicate and
        blank names renamed), and how many blank lines come before the header."""
        names = [str(c) for c in read_csv(path, nrows=0).columns]
        skip = 0
        with open(path, encoding="utf-8-sig", newline="") as f:
            for line in f:
                if line.strip("\r\n"):
                    break
                skip += 1
        return names, skip

    def has_rows(self) -> bool:
        """Whether the table holds a data row: DuckDB stops at the first (a CSV's first block).
        A one-column CSV whose every cell is blank is read by pandas (:meth:`_blank_cells`)."""
        if self._fallback is not None:
            return self._fallback.has_rows()
        where = ""
        if self._csv and len(self._header) == 1:
            where = f" WHERE NOT regexp_full_match({quote_name(self._header[0])}, '[ \t]*')"
        try:
            # (fetchall: a result fetched to its end, which DuckDB 2 wants before the next query)
            # (the first rows' buffer: a row is found in its first 2 MB, or the file has a line
            # longer than DuckDB reads and pandas reads it anyway; 1e6 reports: 7 ms -> 2)
            if self.con.execute(f"SELECT 1 FROM {self._head_from}{where} LIMIT 1").fetchall():
                return True
            if where and self.con.execute(f"SELECT 1 FROM {self._head_from} LIMIT 1").fetchall():
                return self._use_pandas().has_rows()
            return False
        except self._duckdb.Error:
            return self._use_pandas().has_rows()

    _floats: set = set()
    #: the table read for a sample of its first rows (a CSV's in a smaller buffer); None: :attr:`_from`
    _head: str | None = None

    @property
    def _head_from(self) -> str:
        return self._head or self._from

    def _cell(self, column: str, name: str | None = None) -> str:
        """The SQL of a cell as the other engines read it: CSV text with a space after the
        comma skipped and an empty cell '' (pandas' skipinitialspace, keep_default_na=False),
        a cell guarded for spreadsheets without its quote (:func:`.csv_cells.guard_cells`); a
        Parquet NaN missing, as pandas counts it."""
        c = quote_name(name or column)
        if self._csv:
            # only a cell that starts with a space or a quote is rewritten (ltrim writes a new
            # string per cell: 8% of the parse of 1e6 Case-II reports); the rest, most cells,
            # are themselves, and a NULL is ''
            slow = UNGUARD_SQL.format(x=f"ltrim({c}, ' ')")
            return (f"CASE WHEN {c} IS NULL THEN '' WHEN starts_with({c}, ' ') OR starts_with({c}, '''') "
                    f"THEN {slow} ELSE {c} END")
        return f"nullif({c}, 'NaN'::DOUBLE)" if column in self._floats else c

    def _count(self, columns: list[str]) -> Tally:
        raw = ", ".join(f"{quote_name(c)} AS {quote_name(f'c{i}')}" for i, c in enumerate(columns))
        cells = ", ".join(f"{self._cell(c, f'c{i}')} AS {quote_name(f'c{i}')}" for i, c in enumerate(columns))
        keys = ", ".join(quote_name(f"c{i}") for i in range(len(columns)))
        # the rows are grouped as they are (the one pass over the data); the cells are
        # normalized on the distinct values, and equal ones merged; sorted in SQL (UTF-8
        # byte order is code-point order, NULLs last): the canonical order, which
        # tally.canonical then only confirms
        if self._csv or any(c in self._floats for c in columns):
            sql = (f"SELECT {cells}, sum(n)::BIGINT AS n FROM (SELECT {raw}, count(*) AS n FROM {self._from} "
                   f"GROUP BY ALL) GROUP BY ALL ORDER BY {keys}")
        else:   # the cells as they are: one GROUP BY
            sql = f"SELECT {raw}, count(*)::BIGINT AS n FROM {self._from} GROUP BY ALL ORDER BY {keys}"
        try:
            got = self.con.execute(sql).df()
        except self._duckdb.Error:
            return self._use_pandas().tally(columns)
        values = got[[f"c{i}" for i in range(len(columns))]]
        values.columns = columns
        if self._blank_cells(values[columns[0]]):
            return self._use_pandas().tally(columns)
        values, counts, _ = canonical(values, got["n"].to_numpy())

        def locator(mask: np.ndarray) -> np.ndarray:
            return self._rows(columns, values[mask])

        return Tally(tuple(columns), values, counts, self.source, locator)

    def _blank_cells(self, cells: pd.Series) -> bool:
        """Whether a one-column CSV holds a cell of spaces and tabs only (or none): an unquoted
        line of them is a blank line for pandas, no row, where DuckDB reads a row, and a
        quoted one (``"  "``) is a row for both; only pandas' reading tells them apart."""
        if not self._csv or len(self._header) != 1:
            return False
        text = cells.dropna().astype(str)
        return bool(text.str.fullmatch(r"[ \t]*").any())

    def chunks(self, rows: int) -> Iterator[pd.DataFrame]:
        """The table in pieces of ``rows`` rows, in file order (every column, CSV cells as
        :func:`.files.read_table` reads them), streamed: never the whole file in memory."""
        if self._fallback is not None:
            yield from self._fallback.chunks(rows)
            return
        cells = ", ".join(f"{self._cell(c)} AS {quote_name(c)}" for c in self._header)
        con = self._duckdb.connect(database=":memory:")
        con.execute("SET preserve_insertion_order = true")
        if self._frame_view is not None:
            con.register(self._frame_view, self._frame)
        done = 0   # rows handed out
        try:
            reader = con.sql(f"SELECT {cells} FROM {self._from}").to_arrow_reader(rows)
            empty = True
            buffer: list[pd.DataFrame] = []
            held = 0
            for batch in reader:
                # record batches come in the reader's own sizes: regroup them into ``rows``
                buffer.append(batch.to_pandas())
                held += batch.num_rows
                while held >= rows:
                    whole = pd.concat(buffer, ignore_index=True)
                    yield whole.iloc[:rows].reset_index(drop=True)
                    done += rows
                    empty = False
                    rest = whole.iloc[rows:].reset_index(drop=True)
                    buffer, held = ([rest] if len(rest) else []), len(rest)
            if held or empty:
                yield (pd.concat(buffer, ignore_index=True) if buffer else
                       pd.DataFrame({c: pd.Series([], dtype=object) for c in self._header}))
        except (self._duckdb.Error, OSError):   # (Arrow's reader passes DuckDB's errors on as OSError)
            # DuckDB stopped part way: pandas reads the file, and the rows not handed out yet
            # follow (never a row twice)
            frame = self._use_pandas().frame
            yield from PandasEngine(frame.iloc[done:].reset_index(drop=True), self.source).chunks(rows)

    def tally_parsed(self, column: str, prepare: Sequence[tuple[str, str]], ok: str, exprs: Sequence[str],
                     quick: Quick | None = None) -> tuple[Tally, np.ndarray, Tally]:
        """Counts of one column with part of the parsing done in SQL: where ``ok`` (SQL over
        the cell, ``x``) holds, the rows are grouped by the values of ``exprs`` (SQL over
        ``x``, numbers: the parse of the values every parser reads alike); elsewhere by the
        cell's text, for the caller's parser.  Returns the parsed groups (a tally of the
        ``exprs`` values, named ``e0, e1, ...``; its rows located by recomputing them), and
        the tally of the rest.  ``quick``: a reading of two values from the cells as DuckDB
        reads them (an Arrow text array: ``(ok, e0, e1)`` per cell, the same values where
        ``ok`` holds), tried first on rows parsed one by one; the texts it leaves go
        through the SQL parse."""
        if self._fallback is not None:
            raise NotImplementedError("a file DuckDB cannot read: no SQL parse")
        self._require([column])
        if not self._is_text(column):
            # a typed column (Parquet numbers, booleans): no text to parse in SQL; its values
            # go to privspec's parser as every engine hands them over
            return self._unparsed(column, len(exprs))
        try:
            return self._tally_parsed(column, prepare, ok, exprs, quick)
        except (self._duckdb.Error, _PandasReads):
            # DuckDB stopped on the file (a row it refuses further down), or read what only
            # pandas reads right: pandas reads it, or says why it cannot, and every report
            # goes to privspec's parser
            self._use_pandas()
            return self._unparsed(column, len(exprs))

    def _unparsed(self, column: str, k: int) -> tuple[Tally, np.ndarray, Tally]:
        """:meth:`tally_parsed` with nothing parsed in SQL: every report in the tally of texts."""
        names = tuple(f"e{i}" for i in range(k))
        none = Tally(names, pd.DataFrame({n: np.empty(0) for n in names}), np.zeros(0, dtype=np.int64),
                     self.source, lambda mask: np.empty(0, dtype=np.int64))
        return none, none.counts, self.tally([column])

    def _tally_parsed(self, column: str, prepare: Sequence[tuple[str, str]], ok: str, exprs: Sequence[str],
                      quick: Quick | None) -> tuple[Tally, np.ndarray, Tally]:
        cell = self._cell(column, "x")
        names = [f"e{i}" for i in range(len(exprs))]
        per_row = self._parse_every_row(column, prepare, ok, quick)
        if per_row and len(names) == 2:
            # rows parsed one by one (every count 1) and two values: sorted by numpy, by the
            # first (:func:`.float_sort.float_order`), then the second within runs of equal
            # firsts (1e7 Case-II reports: the query 3.44 s CPU with ORDER BY, 2.53 s
            # without, the sort 0.18 s; 1e6: 0.33 s, 0.26 s and 0.01 s)
            (first, second), rest_of = self._ends_row_by_row(column, prepare, ok, exprs, quick)
            k = first.size
            block = np.empty((2, k))
            order, _ = float_order(first, out=block[0])
            del first
            np.take(second, order, out=block[1])
            del order, second
            _sort_runs(block)
        else:
            if per_row:           # every row parsed: no grouping of texts that are all different
                inner = f"SELECT {self._cell(column)} AS x FROM {self._from}"
            elif cell == quote_name("x"):   # the cells as they are: one GROUP BY
                inner = f"SELECT {quote_name(column)} AS x, count(*) AS n FROM {self._from} GROUP BY ALL"
            else:                 # normalized on the distinct values, equal ones merged
                inner = (f"SELECT {cell} AS x, sum(n)::BIGINT AS n FROM (SELECT {quote_name(column)} AS x, "
                         f"count(*) AS n FROM {self._from} GROUP BY ALL) GROUP BY ALL")
            # one query: the reports (distinct texts, or every row) with their ends where they
            # parse, sorted by the ends (in parallel, 3x faster than a lexsort in numpy: an
            # estimator that needs them sorted, the NPMLE's rows, finds them so); reports with
            # equal ends (``(1, 2]`` and ``(1.0, 2]``, or one report on many rows) are then
            # next to each other and merged here, which costs one pass where a second GROUP
            # BY over millions of distinct ends took 1.6 s at 1e7 (the rest, not parsed,
            # come last, in no order: canonical sorts them)
            kept, rest_of = _parsed_first(self._parse_rows(inner, prepare, ok, exprs, "" if per_row else ", n",
                                                           in_order=True), sorted_in_sql=True)
            k = kept.num_rows
            # the ends straight into the rows of one array, the block of the frame below (a
            # frame made from separate columns would copy them into one: 0.4 s at 1e7)
            block = np.empty((len(names), k))
            for row, name in zip(block, names):
                _column(kept, name, row)

        def counts_of(part: Any, rows: int) -> np.ndarray:
            if per_row:   # each row once: a read-only broadcast of 1, no memory (76 MiB at 1e7)
                return np.broadcast_to(np.int64(1), (rows,))
            return part.column("n").to_numpy().astype(np.int64, copy=False)

        rest = pd.DataFrame({"x": pd.Series(rest_of.column("x").to_numpy(zero_copy_only=False), dtype=object),
                             "n": counts_of(rest_of, rest_of.num_rows)})
        if per_row and len(rest):   # one row per report: equal texts counted together
            rest = rest.groupby("x", dropna=False, sort=False, as_index=False)["n"].sum()
            rest["x"] = rest["x"].astype(object).where(rest["x"].notna(), None)
        parsed_counts = counts_of(None if per_row else kept, k)
        if parsed_counts.size > 1:
            new = run_starts(*block)     # (ok leaves no NaN, which would never equal itself)
            if not new.all():
                starts = np.flatnonzero(new)
                block = block[:, starts]
                parsed_counts = np.add.reduceat(parsed_counts, starts)
        parsed_values = pd.DataFrame(block.T, columns=names, copy=False)

        def parsed_rows(mask: np.ndarray) -> np.ndarray:
            return self._rows([column], parsed_values[mask].reset_index(drop=True), exprs=exprs, ok=ok,
                              prepare=prepare)

        parsed = Tally(tuple(names), parsed_values, parsed_counts, self.source, parsed_rows)
        if self._blank_cells(rest["x"]):
            raise _PandasReads()
        values, counts, _ = canonical(rest[["x"]].rename(columns={"x": column}), rest["n"].to_numpy())

        def rest_rows(mask: np.ndarray) -> np.ndarray:
            return self._rows([column], values[mask])

        return parsed, parsed_counts, Tally((column,), values, counts, self.source, rest_rows)

    def _ends_row_by_row(self, column: str, prepare: Sequence[tuple[str, str]], ok: str, exprs: Sequence[str],
                         quick: Quick | None) -> tuple[tuple[np.ndarray, np.ndarray], Any]:
        """The two ends of every row that parses (in the file's order) and the Arrow table of
        the others (``x``: their texts).  With ``quick``, the cells as DuckDB reads them go
        to it first (no SQL over them: 1e6 Case-II reports, the read 0.16 s CPU where
        DuckDB's casts took 0.24), and only the texts it leaves through the SQL parse."""
        if quick is None:
            kept, rest_of = _parsed_first(self._parse_rows(f"SELECT {self._cell(column)} AS x FROM {self._from}",
                                                           prepare, ok, exprs, "", in_order=False),
                                          sorted_in_sql=False)
            return (_column(kept, "e0", np.empty(kept.num_rows)), _column(kept, "e1", np.empty(kept.num_rows))), rest_of
        # the cells a batch at a time, each read and let go (1e7 Case-II reports: 0.1 s of the
        # kernel's time where the whole column at once, 340 MB of text, took 0.6)
        firsts, seconds, others = [], [], []
        for batch in _batches(self.con.sql(f"SELECT {quote_name(column)} AS x FROM {self._from}")):
            cells = batch.column(0)
            took, first, second = quick(cells)
            if not took.all():
                first, second = first[took], second[took]
                others.append(cells.filter(pa.array(~took)))
            firsts.append(first)
            seconds.append(second)
        first, second = (np.concatenate(part) if part else np.zeros(0) for part in (firsts, seconds))
        del firsts, seconds
        if not others:
            return (first, second), pa.table({"x": pa.array([], type=pa.string())})
        view = f"privspec_rest_{next(_IDS)}"
        self.con.register(view, pa.table({"x": pa.chunked_array(others)}))
        try:
            more = self._parse_rows(f"SELECT {self._cell(column, 'x')} AS x FROM {view}", prepare, ok, exprs, "",
                                    in_order=False)
        finally:
            _unregister(self.con, view)
        kept, rest_of = _parsed_first(more, sorted_in_sql=False)
        k = kept.num_rows
        return (np.concatenate([first, _column(kept, "e0", np.empty(k))]),
                np.concatenate([second, _column(kept, "e1", np.empty(k))])), rest_of

    def _parse_rows(self, inner: str, prepare: Sequence[tuple[str, str]], ok: str, exprs: Sequence[str], n: str, *,
                    in_order: bool) -> Any:
        """The Arrow table of the reports of ``inner`` (a query of texts ``x``, with their
        counts ``n`` where ``n`` names them): ``x`` null where ``ok`` holds, the values of
        ``exprs`` (``e0, e1, ...``) null where it does not; ``in_order``: sorted by those,
        the texts last."""
        named = ", ".join(f"({e}) AS e{i}" for i, e in enumerate(exprs))
        picked = ", ".join(f"CASE WHEN ok THEN e{i} END AS e{i}" for i in range(len(exprs)))
        sql = (f"SELECT CASE WHEN ok THEN NULL ELSE x END AS x, {picked}{n} FROM "
               f"(SELECT x{n}, coalesce(({ok}), false) AS ok, {named} FROM ({_layers(inner, prepare)}))")
        if in_order:
            sql += f" ORDER BY {', '.join(f'e{i} NULLS LAST' for i in range(len(exprs)))}"
        # fetched as Arrow: the text column is null on the parsed rows (most of them), which
        # Arrow holds as a bitmap and numpy would hold as millions of None objects
        return _arrow(self.con.sql(sql))

    def _is_text(self, column: str) -> bool:
        """Whether the column holds text (every CSV cell does; a Parquet or DataFrame column
        by its type)."""
        if self._csv:
            return True
        described = self.con.execute(f"SELECT {quote_name(column)} FROM {self._from} LIMIT 0").description
        return str(described[0][1]).upper() == "VARCHAR"

    def _parse_every_row(self, column: str, prepare: Sequence[tuple[str, str]], ok: str,
                         quick: Quick | None = None) -> bool:
        """Whether most of the first rows' cells (:data:`_DISTINCT_SAMPLE`) are different and
        parse: then parsing every row costs less than grouping the texts first and parsing
        the groups (1e7 Case-II reports, all different: 3.6 s instead of 5.0 s); texts SQL
        leaves to privspec's parser (rings, other spellings) are better grouped by DuckDB.
        A choice of speed only: both ways give the same counts.  The quick parse
        (:meth:`tally_parsed`) is asked first, SQL's only where it falls short."""
        if quick is not None:
            # (fetched to the end, as Arrow: the next query needs the result done, and 16,384
            # Python strings cost 5 ms, and the garbage collector's passes after them)
            texts = _arrow(self.con.sql(f"SELECT {quote_name(column)} AS x FROM {self._head_from} "
                                        f"LIMIT {_DISTINCT_SAMPLE}")).column(0)
            rows = len(texts)
            if not rows or pc.count_distinct(texts, mode="all").as_py() < _DISTINCT_SHARE * rows:
                return False
            if int(quick(texts)[0].sum()) >= _DISTINCT_SHARE * rows:
                return True
        sample = f"SELECT {self._cell(column)} AS x FROM {self._head_from} LIMIT {_DISTINCT_SAMPLE}"
        (distinct, parsed, rows), = self.con.execute(
            f"SELECT count(DISTINCT x), count(*) FILTER (WHERE coalesce(({ok}), false)), count(*) "
            f"FROM ({_layers(sample, prepare)})").fetchall()
        return bool(rows) and min(distinct, parsed) >= _DISTINCT_SHARE * rows

    def _rows(self, columns: list[str], wanted: pd.DataFrame, exprs: Sequence[str] | None = None,
              ok: str | None = None, prepare: Sequence[tuple[str, str]] = ()) -> np.ndarray:
        """The 1-based rows holding one of the ``wanted`` tuples: a second pass, in file order
        (one thread, insertion order kept; Parquet has its own row numbers).  With ``exprs``
        (one column), the tuples are their values, where ``ok`` holds (:meth:`tally_parsed`)."""
        con = self._duckdb.connect(database=":memory:")
        con.execute("SET threads = 1")
        con.execute("SET preserve_insertion_order = true")
        if self._frame_view is not None:
            con.register(self._frame_view, self._frame)
        want = wanted.copy()
        want.columns = [f"w{i}" for i in range(want.shape[1])]
        con.register("privspec_wanted", want)
        cells = ", ".join(f"{self._cell(c)} AS {quote_name(f'c{i}')}" for i, c in enumerate(columns))
        on = " AND ".join(f"t.{quote_name(f'c{i}')} IS NOT DISTINCT FROM w.{quote_name(f'w{i}')}"
                          for i in range(len(columns)))
        if exprs is not None:  # the cell as x, then the parsed values computed from it
            cells = f"{self._cell(columns[0])} AS x"
            on = " AND ".join(f"t.{quote_name(f'c{i}')} = w.{quote_name(f'w{i}')}"
                              for i in range(len(exprs))) + " AND t.ok"
        if self._csv or self._frame_view is not None:
            numbered = f"SELECT row_number() OVER () AS privspec_row, {cells} FROM {self._from}"
        else:
            numbered = (f"SELECT file_row_number + 1 AS privspec_row, {cells} "
                        f"FROM read_parquet({quote_text(self._path)}, file_row_number = true)")
        if exprs is not None:
            parsed = ", ".join(f"({e}) AS {quote_name(f'c{i}')}" for i, e in enumerate(exprs))
            numbered = (f"SELECT privspec_row, {parsed}, coalesce(({ok}), false) AS ok "
                        f"FROM ({_layers(numbered, prepare)})")
        # (the row number's name is one no expression of ``prepare`` takes)
        sql = (f"SELECT DISTINCT t.privspec_row AS r FROM ({numbered}) t JOIN privspec_wanted w ON {on} "
               f"ORDER BY r")
        return con.execute(sql).fetchnumpy()["r"].astype(np.int64)
