"""Data bound to mechanisms: the ``--data`` arguments of ``privspec run`` (or the data
given to :meth:`privspec.Spec.run`), each table read once and counted by one engine
shared by every query (:class:`DataBindings`), and which queries read data
(:func:`data_role`) from which columns (:func:`observed_columns`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import pandas as pd

from privspec.errors import DataError, Diagnostic
from privspec.model.query_kinds import needs_data
from privspec.backends.data.data_args import columns_fed_twice, parse_data_args
from privspec.backends.data.engines import engine_for
from privspec.backends.data.survey import SurveyDesign


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
    #: the survey design of the tables (their weights, strata and clusters columns), None: none
    design: SurveyDesign | None = None
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
        b.default, b.per_mechanism = parse_data_args(items, mechanisms)
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

    def bind_table(self, mechanism: str, name: str, frame: pd.DataFrame) -> None:
        """Bind a table already read (a survey store's reports of one mechanism,
        :func:`privspec.backends.collect.store.bind_stores`) to ``mechanism``; messages name
        it ``name``."""
        self.per_mechanism[mechanism] = name
        self._cache[name] = frame

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
        for column, names in columns_fed_twice({name: observed_columns(m) for name, m in readers.items()}).items():
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
        if path not in self._engines:
            self._engines[path] = engine_for(self._cache.get(path, path), self.engine, name=path)
        return self._engines[path]

    def columns_for(self, mechanism: str | None) -> list[str]:
        """The columns of the table bound to ``mechanism`` (a file's header only is read)."""
        return self._engine(self.path_for(mechanism)).columns()
