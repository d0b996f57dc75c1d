"""The distinct values of one text column of a Parquet file and their counts, by DuckDB,
without pandas: what a run from a compiled plan reads (:mod:`privspec.run_plans`).

The count is the DuckDB engine's own (:class:`privspec.backends.data.engines.DuckDBEngine`:
``SELECT col, count(*) ... GROUP BY ALL`` over the file, out of core, on all cores), for
the one case that needs none of its care: a Parquet file whose column is plain text
(``VARCHAR``), every name in the file once.  Anything else (CSV, a column of numbers or of
nested values, a missing or repeated column, a file DuckDB cannot read) gives None, and the engine reads it and says
what is wrong, as it always does.

Examples
--------
>>> import tempfile, os, duckdb
>>> path = os.path.join(tempfile.mkdtemp(), "r.parquet")
>>> duckdb.sql("SELECT * FROM (VALUES ('a|b'), ('b'), ('a|b')) t(s)").write_parquet(path)
>>> values, counts = text_counts(path, "s")
>>> sorted(zip(values, counts.tolist()))
[('a|b', 2), ('b', 1)]
>>> text_counts(path, "t") is None, text_counts(path + ".csv", "s") is None
(True, True)
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from privspec.outputs import PARQUET


def quote_name(name: str) -> str:
    """A name (a column's) as DuckDB's SQL writes it, in double quotes (the DuckDB engine's too)."""
    return '"' + name.replace('"', '""') + '"'


def quote_text(text: str) -> str:
    """A text (a path) as a SQL string literal, in single quotes (the DuckDB engine's too)."""
    return "'" + text.replace("'", "''") + "'"


def text_counts(path: str, column: str) -> tuple[list[Any], np.ndarray] | None:
    """The distinct values of ``column`` (None for a missing value) and how many rows hold
    each, or None where the DuckDB engine's reading is needed (see the module)."""
    if os.path.splitext(path)[1].lower() not in PARQUET or not os.path.isfile(path):
        return None
    # start-up: duckdb costs 0.07 s of CPU, paid only by a run that counts
    import duckdb

    try:
        con = duckdb.connect(database=":memory:")
        # the names as the file holds them (read_parquet renames a repeated one, which the
        # engines refuse, D014), each field's type, and whether it holds others
        schema = con.execute("SELECT name, duckdb_type, num_children FROM parquet_schema(?)", [path]).fetchall()
        # (SQL names ignore case: two names that differ in case alone are one name too)
        names = [name.casefold() for name, _, _ in schema[1:]]   # the first is the schema's root
        if len(set(names)) != len(names) or [(t, k) for n, t, k in schema[1:] if n == column] != [("VARCHAR", None)]:
            return None
        got = con.execute(f"SELECT {quote_name(column)}, count(*)::BIGINT FROM read_parquet({quote_text(path)}) "
                          "GROUP BY ALL").fetchall()
    except duckdb.Error:
        return None
    return [v for v, _ in got], np.array([n for _, n in got], dtype=np.int64)
