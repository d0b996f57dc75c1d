"""Engines: who counts the distinct tuples of a table (:mod:`privspec.backends.data.tally`),
looked up by name or by the data in a registry (:data:`ENGINES`).

- :class:`.pandas.PandasEngine` for data already in memory
  (a DataFrame given to the API), and for any file where DuckDB is not installed;
- :class:`~privspec.backends.data.engines.duckdb.DuckDBEngine`, the default for files: CSV
  and Parquet read out of core on all cores, the group-by pushed into SQL;
- :class:`~privspec.backends.data.engines.spark.SparkEngine` for clusters (the ``spark``
  extra).

Each gives the same :class:`~privspec.backends.data.tally.Tally` for the same table: the
same distinct tuples (text as read, with the CSV conventions of
:func:`privspec.backends.data.csv_cells.read_csv`: every cell text, a space after a comma
skipped, an empty cell ``""``), the same counts, in the same canonical order, and the same
rows for an error message.  A file that an engine cannot read is read by
:func:`privspec.backends.data.files.read_table`, so that its diagnostic (not UTF-8,
ragged rows, no header) is the same whichever engine was asked.

An engine is a class that says, as class attributes, its ``name``, the library it
``needs`` and the ``extra`` of privspec that installs it, the kinds of data it is the
default for (``default_for``, with a ``rank`` among the engines that are) and opens a
table with ``open(source, name)``; adding one is its class and a :func:`register` line
below (formulaic's materializer registry is the model).
"""
from __future__ import annotations

import importlib.util
from typing import Any, ClassVar, Protocol, Sequence

from privspec.errors import DataError, Diagnostic
from privspec.errors import did_you_mean
from privspec.backends.data.engines.duckdb import DuckDBEngine
from privspec.backends.data.engines.pandas import PandasEngine
from privspec.backends.data.engines.spark import SparkEngine
from privspec.backends.data.tally import Tally


class Engine(Protocol):
    """What an engine declares (class attributes) and does: name its table's columns, say
    whether it has a data row, and count distinct tuples."""

    name: ClassVar[str]
    #: the library the engine needs, and the extra of privspec that installs it (None: none)
    needs: ClassVar[str]
    extra: ClassVar[str | None]
    #: the kinds of data the engine is the default for; of the engines that are, the
    #: available one of the highest ``rank`` reads them
    default_for: ClassVar[tuple[type, ...]]
    rank: ClassVar[int]
    source: str

    @classmethod
    def open(cls, source: Any, name: str | None = None) -> "Engine": ...

    def columns(self) -> list[str]: ...

    def has_rows(self) -> bool: ...

    def tally(self, columns: Sequence[str]) -> Tally: ...


#: the engines by name
ENGINES: dict[str, type[Engine]] = {}


def register(engine: type[Engine]) -> type[Engine]:
    """Add an engine to :data:`ENGINES` under its ``name``."""
    ENGINES[engine.name] = engine
    return engine


register(PandasEngine)
register(DuckDBEngine)
register(SparkEngine)


def available(engine: str) -> bool:
    """Whether the engine's library is importable."""
    return importlib.util.find_spec(ENGINES[engine].needs) is not None


def default_engine(source: Any) -> str:
    """The engine for ``source`` when none is asked for: pandas for a DataFrame, DuckDB for
    a file (pandas where DuckDB is not installed)."""
    fits = [e for e in ENGINES.values() if isinstance(source, e.default_for) and available(e.name)]
    if not fits:
        raise TypeError(f"no engine reads a {type(source).__name__}: give a path or a pandas DataFrame")
    return max(fits, key=lambda e: e.rank).name


def engine_for(source: Any, engine: str | None = None, name: str | None = None) -> Engine:
    """The engine that reads ``source`` (a path or a DataFrame); ``engine`` by name, else
    :func:`default_engine`.  ``name``: how messages call a DataFrame."""
    engine = engine or default_engine(source)
    if engine not in ENGINES:
        raise DataError(Diagnostic("D008", f"no engine named '{engine}'",
                                   hint=did_you_mean(engine, list(ENGINES)) or f"engines: {', '.join(ENGINES)}"))
    chosen = ENGINES[engine]
    if not available(engine):
        raise DataError(Diagnostic("D008", f"the {engine} engine needs {chosen.needs}, which is not installed",
                                   hint=f"pip install 'privspec[{chosen.extra}]', or choose another engine "
                                        "(--engine pandas)"))
    return chosen.open(source, name)


__all__ = ["ENGINES", "Engine", "DuckDBEngine", "PandasEngine", "SparkEngine", "available", "default_engine",
           "engine_for", "register"]
