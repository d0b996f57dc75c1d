"""Privatizing a file of any size: read in pieces through an engine, written as it goes.

``privspec privatize`` never holds the whole input: the raw answers are first checked on
the distinct values an engine counts (the checks of the in-memory path, naming the
file's rows; the rows it counted are checked against a count of the file's rows that
needs no parse, :func:`.files.count_rows`, and an engine that missed some is replaced
by pandas' reading, the reference), then read in pieces of :data:`CHUNK_ROWS` rows in
file order, each privatized with its offset -- a row's report depends on (seed, mechanism, row index,
value) only (:class:`~privspec.backends.core.rowrandom.RowRandom`), so the output is the same
for any piece size, engine or number of threads -- and appended to a temporary file
beside the output, published at the end (:func:`privspec.outputs.write_atomic`): a killed run
leaves no partial file at the target path, and without ``force`` an output that another
run wrote meanwhile is not replaced.  Rows in = rows out: the rows read and written are
counted, and any difference from the input's rows is an error (D016) that leaves
nothing at the target path.

The output holds the mechanism's reports only: a raw column leaves privspec only when it
is named (``keep``, ``--keep``: :func:`kept_columns`, :func:`with_kept`), never a column
the mechanism privatizes.  ``csv_guard`` quotes cells a spreadsheet would run as formulas
(:func:`.csv_cells.guard_cells`).

A release adds noise per cell of its table: its records are counted through the engine
(a tally) and the small released table is written at once.  Dummy respondents
(``min_coverage``, Appendix II) are inserted at random positions of the whole file, so
such a mechanism is privatized whole.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from privspec.errors import DataError, Diagnostic
from privspec.model.graph import Release, SubsetMechanism
from privspec.outputs import PARQUET, write_atomic
from privspec.backends.data.bindings import observed_columns
from privspec.backends.data.checks import require_columns
from privspec.backends.data.csv_cells import guard_cells, guard_text
from privspec.backends.data.engines import PandasEngine, engine_for
from privspec.backends.data.files import count_rows
from privspec.backends.data.writing import csv_quoting, write_table_atomic
from privspec.backends.finite.data import check_raw, factor_mechanisms

#: rows privatized at a time (the output does not depend on it)
CHUNK_ROWS = 1_000_000


def privatize_file(model: Any, mechanism: Any, backend: Any, source: Any, output: str | os.PathLike[str], *,
                   seed: int | None = None, offset: int | None = None, nonnegative: bool = False,
                   engine: str | None = None, chunk_rows: int = CHUNK_ROWS, keep: Sequence[str] | None = None,
                   csv_guard: bool = False, force: bool = False) -> int:
    """Privatize the raw records in ``source`` (a file or a DataFrame) into ``output``
    (CSV or Parquet, by its suffix); returns the number of rows written.

    ``backend``: the back end that privatizes with ``mechanism``
    (:func:`privspec.backends.privatizer_for`); ``offset``: the index of the input's first
    row in the whole file (privatizing a file in pieces); ``engine``: who reads it;
    ``keep``: raw columns written beside the reports (:func:`kept_columns`; none by
    default); ``csv_guard``: quote cells that start like a spreadsheet formula;
    ``force``: replace an existing ``output`` (:func:`privspec.outputs.write_atomic`).
    """
    reader = engine_for(source, engine, name="the raw data")
    if isinstance(mechanism, Release):
        table = backend.privatize(model, mechanism, reader, seed=seed,
                                  **({"nonnegative": True} if nonnegative else {}))
        write_table_atomic(guard_cells(table) if csv_guard else table, output, force=force)
        return len(table)
    kept = kept_columns(mechanism, reader.columns(), keep)
    # rows in: the rows the checks counted, against a count of the file's rows apart from
    # any parse; an engine that read other rows than the file holds (DuckDB drops a final
    # row longer than its buffer) gives way to pandas' reading, which reads every row or
    # names the one it cannot read (pandas is the reference: its count stands)
    counted = _check(mechanism, reader)
    rows_in = count_rows(source).rows
    if counted is not None and counted != rows_in and not isinstance(reader, PandasEngine):
        reader = engine_for(source, "pandas", name="the raw data")
        counted = _check(mechanism, reader)
    expected = rows_in if counted is None else counted
    whole = adds_rows(mechanism)
    # one key for every piece: the seed, or (none given) fresh entropy drawn once
    key = seed if seed is not None else int(np.random.SeedSequence().entropy)
    base = int(offset or 0)
    parquet = Path(output).suffix.lower() in PARQUET
    written = 0

    def write(tmp: str) -> None:
        nonlocal written
        sink = _ParquetSink(tmp) if parquet else _CsvSink(tmp, scan=[guard_text(c) if csv_guard else c for c in kept])
        try:
            start = 0
            pieces = [_whole(reader)] if whole else reader.chunks(max(1, int(chunk_rows)))
            for piece in pieces:
                out = with_kept(backend.privatize(model, mechanism, piece, seed=key, offset=base + start), piece, kept)
                sink.add(guard_cells(out) if csv_guard else out)
                start += len(piece)
                written += len(out)
        finally:
            sink.close()
        # rows in = rows out (dummy respondents, min_coverage, come on top of the real rows)
        if start != expected or (not whole and written != start):
            raise _rows_lost(expected, start, written)

    write_atomic(output, write, force=force)
    return written


def adds_rows(mechanism: Any) -> bool:
    """Whether privatizing adds rows: dummy respondents (``min_coverage``, Appendix II),
    inserted at random positions (so such a mechanism is privatized whole, and no raw
    column can be kept beside its reports)."""
    return any(isinstance(f, SubsetMechanism) and f.min_coverage is not None
               for f in factor_mechanisms(mechanism) if hasattr(f, "min_coverage"))


def kept_columns(mechanism: Any, header: Sequence[Any], keep: Sequence[Any] | None,
                 source: str = "the raw data") -> list[Any]:
    """The raw columns to write beside the reports, in the input's order: each must be in
    the input (D040) and be none that the mechanism reads or reports (D041: its
    variables, a combined variable's parts, the columns it names), so that no raw answer
    leaves privspec under the name of a privatized one.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load("variable c: categorical {a, b}\\nmechanism k = grr(c, epsilon = 1)").model
    >>> kept_columns(m.mechanisms["k"], ["wave", "c", "id"], ["id", "wave"])
    ['wave', 'id']
    """
    wanted = list(dict.fromkeys(keep or ()))
    if not wanted:
        return []
    unknown = [c for c in wanted if c not in header]
    if unknown:
        shown = ", ".join(repr(c) for c in unknown)
        raise DataError(Diagnostic(
            "D040", f"cannot keep {shown}: {source} has no such column", columns=tuple(map(str, unknown)),
            hint=f"--keep (keep= in Python) names columns of the input; found: {', '.join(map(str, header)) or 'none'}"))
    private = {v.name for v in mechanism.variables} | observed_columns(mechanism)
    clash = [c for c in wanted if c in private]
    if clash:
        raise _clash(mechanism, clash)
    chosen = set(wanted)
    return [c for c in header if c in chosen]


def _clash(mechanism: Any, columns: Sequence[Any]) -> DataError:
    """D041: kept columns that the mechanism privatizes (``mechanism`` given), or that
    share a name with a report column (``mechanism`` None)."""
    shown = ", ".join(repr(c) for c in columns)
    if mechanism is not None:
        it = "it" if len(columns) == 1 else "them"
        why = (f"mechanism {mechanism.name} privatizes {it} (its variable, or a part of a combined one): "
               "a raw copy would publish what the reports hide")
    else:
        why = "the reports have a column of that name"
    return DataError(Diagnostic("D041", f"cannot keep {shown} raw: {why}", columns=tuple(map(str, columns)),
                                hint="keep only columns the mechanism does not read or write (ids, survey waves, ...)"))


def with_kept(reports: pd.DataFrame, raw: pd.DataFrame, kept: Sequence[Any]) -> pd.DataFrame:
    """The kept raw columns (:func:`kept_columns`), then the reports, row by row (the back
    ends give one report per raw row, in order).  A report column of the same name as a
    kept one (``sampled`` of a multi-attribute oracle) is refused (D041)."""
    if not kept:
        return reports
    clash = [c for c in kept if c in reports.columns]
    if clash:
        raise _clash(None, clash)
    if len(reports) != len(raw):  # a back end's bug: never write a kept column beside another row's report
        raise RuntimeError(f"{len(raw)} raw rows gave {len(reports)} reports")
    out = pd.DataFrame({c: raw[c].array for c in kept}, index=reports.index)
    for c in reports.columns:
        out[c] = reports[c].array
    return out


def _rows_lost(rows_in: int, read: int, written: int) -> DataError:
    """D016: the rows read or written are not the input's rows."""
    what = f"{read:,} read" + (f", {written:,} written" if written != read else " and privatized")
    return DataError(Diagnostic("D016", f"the raw data hold {rows_in:,} data rows, {what}: rows in = rows out does "
                                        "not hold, and nothing was written",
                                hint="read the file with --engine pandas (the reference reading: it reads every "
                                     "row or names the one it cannot read)"))


def _check(mechanism: Any, reader: Any) -> int | None:
    """The raw answers' checks on their distinct values (every family that reads raw rows);
    the rows the reader counted (None where nothing was checked)."""
    if getattr(mechanism, "is_finite", False):
        return check_raw(mechanism, reader)
    if getattr(mechanism, "family", None) == "interval" and getattr(mechanism, "variable", None) is not None:
        column = mechanism.variable.name
        require_columns(pd.DataFrame(columns=reader.columns()), [column], "the raw data")
        tally = reader.tally([column])
        # start-up: the interval back end is the largest, and the API imports this module
        from privspec.backends.interval.backend import raw_values
        raw_values(mechanism, tally)
        return tally.n
    return None


def _whole(reader: Any) -> pd.DataFrame:
    pieces = list(reader.chunks(CHUNK_ROWS))
    return pd.concat(pieces, ignore_index=True) if len(pieces) > 1 else pieces[0]


class _CsvSink:
    """Appends pieces to one CSV file: the header once.  ``scan``: the columns of raw text
    (kept ones) whose cells may hold a carriage return (:func:`.writing.csv_quoting`)."""

    def __init__(self, path: str, scan: Sequence[Any] = ()):
        self.path = path
        self.header = True
        self.scan = scan

    def add(self, frame: pd.DataFrame) -> None:
        frame.to_csv(self.path, index=False, header=self.header, mode="w" if self.header else "a",
                     encoding="utf-8", quoting=csv_quoting(frame, self.scan))
        self.header = False

    def close(self) -> None:
        pass


class _ParquetSink:
    """Appends pieces to one Parquet file as row groups; every piece takes the first one's
    schema (a piece whose column is all null keeps the column's type)."""

    def __init__(self, path: str):
        self.path = path
        self.writer = None
        self.schema = None

    def add(self, frame: pd.DataFrame) -> None:
        # start-up: pyarrow.parquet costs 30 ms, paid only where Parquet is written
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False)
        if self.writer is None:
            # a dictionary column (the reports' categorical) is written as its values: each
            # piece has its own dictionary, and Parquet dictionary-encodes text by itself
            self.schema = pa.schema([pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type) else f
                                     for f in table.schema])
            table = table.cast(self.schema)
            self.writer = pq.ParquetWriter(self.path, self.schema)
        else:
            table = table.cast(self.schema)
        self.writer.write_table(table)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        elif self.path:
            pd.DataFrame().to_parquet(self.path)


__all__ = ["privatize_file", "kept_columns", "with_kept", "adds_rows", "CHUNK_ROWS"]
