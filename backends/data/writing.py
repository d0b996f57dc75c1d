"""Data tables written whole or not at all: CSV or Parquet by the suffix, published
atomically (:func:`privspec.outputs.write_atomic`), a CSV quoted so that every reader
reads back its rows (:func:`csv_quoting`)."""
from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from privspec.outputs import PARQUET, write_atomic


def csv_quoting(frame: pd.DataFrame, scan: Sequence[Any] = ()) -> int:
    """How to quote ``frame`` as CSV: :data:`csv.QUOTE_MINIMAL`, or :data:`csv.QUOTE_ALL`
    when a text holds a carriage return (pandas' writer quotes a cell holding ``\\n`` but
    not a lone ``\\r``, which every reader then takes for the end of a row: one row would
    become two).  The texts looked at: a categorical's categories (a label), and the
    columns in ``scan`` (raw text kept as it was); reports made of numbers need no look."""
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
    """CSV or Parquet (by the suffix), written atomically (:func:`privspec.outputs.write_atomic`)."""
    parquet = Path(path).suffix.lower() in PARQUET

    def write(tmp: str) -> None:
        if parquet:
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False, quoting=csv_quoting(frame, frame.columns))

    write_atomic(path, write, force=force)

