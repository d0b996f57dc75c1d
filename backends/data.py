"""Reading and writing data tables (CSV or Parquet), binding them to mechanisms, and
the helpers every data engine needs: missing values named by row, atomic writes.

Rows are numbered as a person reads the file: the first data row (after the header)
is row 1.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from ..errors import DataError, Diagnostic

#: strings read as missing values
MISSING = ("", "NA", "N/A", "NaN", "nan", "null", "NULL", "None")


def read_table(path: str | os.PathLike[str], columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a CSV (as text, nothing parsed) or Parquet file.

    Raises :class:`DataError` when the file cannot be read or lacks ``columns``.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(Diagnostic("D001", f"no such data file: {p}", hint="check the path given with --data/--input"))
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            frame = pd.read_parquet(p)
        else:
            frame = pd.read_csv(p, dtype=str, keep_default_na=False, na_values=[], skipinitialspace=True)
    except ImportError as e:
        raise DataError(Diagnostic("D002", f"cannot read {p}: {e}",
                                   hint="Parquet needs pyarrow: pip install 'privspec[parquet]'")) from None
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as e:
        raise DataError(Diagnostic("D002", f"cannot read {p}: {e}")) from None
    if columns:
        require_columns(frame, columns, p)
    return frame


def require_columns(frame: pd.DataFrame, columns: Sequence[str], path: Any = "data") -> None:
    """DataError D003 naming the columns a table lacks."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(Diagnostic("D003", f"{path} has no column {', '.join(repr(c) for c in missing)}",
                                   columns=tuple(missing),
                                   hint=f"columns are named after variables; found: {', '.join(map(str, frame.columns))}"))


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


def write_table_atomic(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write CSV or Parquet to a temporary file beside ``path``, then rename it into place,
    so that a failure never leaves a partial file."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False)
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text_atomic(text: str, path: str | os.PathLike[str]) -> None:
    """Write text through a temporary file and a rename."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent if str(p.parent) else ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


#: query kinds that read data in ``run`` (the data-based coverage of an interval mechanism
#: reads data when some is bound to it, and is otherwise answered analytically)
REQUIRES_DATA = ("estimate", "test", "table")


def data_role(query: Any) -> str | None:
    """``"required"`` when ``run`` answers the query from data, ``"optional"`` when it uses
    data if some is bound to the query's mechanism, None when it needs none."""
    if query.kind in REQUIRES_DATA:
        return "required"
    if query.kind == "coverage" and getattr(query.mechanism, "family", None) == "interval":
        return "optional"
    return None


def observed_columns(mechanism: Any) -> set[str]:
    """The variables (base parts of combined ones) whose columns a mechanism's reports fill."""
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
    _cache: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

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
            if role == "optional" and not observed_columns(mech) <= set(self.default_frame().columns):
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

    def default_frame(self) -> pd.DataFrame:
        if self.default is None:
            raise DataError(Diagnostic("D005", "no default data file"))
        if self.default not in self._cache:
            self._cache[self.default] = read_table(self.default)
        return self._cache[self.default]

    def path_for(self, mechanism: str | None) -> str:
        path = self.per_mechanism.get(mechanism or "", self.default)
        if path is None:
            raise DataError(Diagnostic("D005", f"no data for mechanism '{mechanism}'",
                                       hint=f"add --data {mechanism}=FILE"))
        return path

    def frame_for(self, mechanism: str | None, columns: Sequence[str] = ()) -> pd.DataFrame:
        """The table bound to ``mechanism`` (read once), checked for ``columns``."""
        path = self.path_for(mechanism)
        if path not in self._cache:
            self._cache[path] = read_table(path)
        frame = self._cache[path]
        if columns:
            require_columns(frame, columns, path)
        return frame
