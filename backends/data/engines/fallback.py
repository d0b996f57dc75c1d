"""What the engines that count outside pandas (DuckDB, Spark) share: the table opened as a
DataFrame or as a file with the checks every engine makes (D001, D014), and the pandas
engine that counts what they refuse or would read otherwise, so that the results and the
diagnostics stay those of every engine.
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Self, Sequence

import pandas as pd

from privspec.outputs import PARQUET
from privspec.backends.data.checks import check_columns, frame_nested, require_columns, require_flat
from privspec.backends.data.engines.pandas import PandasEngine
from privspec.backends.data.files import file_columns, read_table
from privspec.backends.data.tally import Tally


class PandasFallback(ABC):
    """A base for an engine that hands to :class:`.pandas.PandasEngine` what it cannot
    count: it opens its table with :meth:`_open_frame` or :meth:`_open_file`, counts with
    its :meth:`_count`, and in pandas from the moment it calls :meth:`_use_pandas`."""

    source: str
    _header: list[str]

    @classmethod
    def open(cls, source: Any, name: str | None = None) -> Self:
        """The engine on ``source``, a path or a DataFrame (``name``: how messages call a
        DataFrame)."""
        return cls(source, name)  # type: ignore[call-arg]  # the engine's own __init__

    def _start(self) -> None:
        """No table yet, nothing handed to pandas."""
        self._fallback: PandasEngine | None = None
        self._frame: pd.DataFrame | None = None
        self._path: str | None = None
        self._csv = False
        self._nested: frozenset[str] = frozenset()

    def _open_frame(self, frame: pd.DataFrame, name: str | None) -> None:
        """A DataFrame: its columns checked (D014) and named as text, its nested ones noted."""
        self.source = name or "<DataFrame>"
        check_columns(list(frame.columns))
        self._nested = frame_nested(frame)
        self._frame = frame
        self._header = [str(c) for c in frame.columns]

    def _open_file(self, source: Any, name: str | None) -> Path:
        """A file, CSV or Parquet (by its suffix): D001 when it is missing and D014 for its
        columns, as for every engine."""
        self.source = name or str(source)
        path = Path(source)
        if not path.is_file():
            read_table(path)  # D001 as for every engine
        self._csv = path.suffix.lower() not in PARQUET
        self._path = os.fspath(path)
        self._nested = file_columns(path)[1]   # D014 as for every engine
        return path

    def _use_pandas(self) -> PandasEngine:
        """The table as pandas reads it: a file's diagnostic if it cannot be read, else the
        pandas engine that counts it (this engine refused, or would misread, something
        pandas takes: the results stay the same)."""
        if self._fallback is None:
            if self._frame is not None:
                self._fallback = PandasEngine(self._frame, self.source)
            else:
                assert self._path is not None
                self._fallback = PandasEngine(read_table(self._path), self.source, nested=self._nested)
        return self._fallback

    def _require(self, columns: Sequence[str]) -> None:
        """D-errors for columns the table lacks or that hold nested values, as every engine's."""
        require_columns(pd.DataFrame(columns=self._header), columns, self.source)
        require_flat(columns, self._nested)

    def columns(self) -> list[str]:
        if self._fallback is not None:
            return self._fallback.columns()
        return list(self._header)

    def tally(self, columns: Sequence[str]) -> Tally:
        """The distinct tuples of ``columns`` and their counts: pandas' once this engine
        has handed over, else the engine's own :meth:`_count` (the columns checked first)."""
        columns = list(columns)
        if self._fallback is not None:
            return self._fallback.tally(columns)
        self._require(columns)
        return self._count(columns)

    @abstractmethod
    def _count(self, columns: list[str]) -> Tally:
        """The engine's count of ``columns`` (present and flat)."""
