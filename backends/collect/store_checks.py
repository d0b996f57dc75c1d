"""What a survey submits for each mechanism, and the check it passes before it is stored.

A submission is ``{"<mechanism>": <report>, ...}``; each report is written exactly as
privspec writes it in a data file (``privatize``): one cell (a text, or a number) for a
mechanism whose reports fill one column, or an object column -> cell for one whose
reports fill several (a product, a multi-attribute oracle).  :func:`report_columns` asks
the mechanism's privatizer which columns it writes, so that the store, the file and
``run`` agree by construction.

:func:`check_reports` reads reports with the reader ``run`` uses for the mechanism's
family (the finite reader, the oracles', the interval report model, the numeric mechanisms'): a report the
mechanism cannot produce gets the D-code and the message that ``run`` gives for it in a
file (D010, D013, D101, D102, D004, D105, D106 ...).
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.backends import privatizer_for
from privspec.backends.data.bindings import observed_columns
from privspec.backends.data.engines import PandasEngine
from privspec.backends.finite.data import observations
from privspec.backends.interval.reports import report_model
from privspec.backends.numeric.backend import ldp_of, read_reports as read_numeric
from privspec.backends.oracles.backend import oracle_of
from privspec.backends.oracles.multi_backend import multi_of, read_attribute
from privspec.backends.oracles.reports import read_reports


def fieldable(model: Any) -> list[str]:
    """The mechanisms of a spec whose reports a survey can collect: those a randomizer
    draws (:func:`report_columns`)."""
    out = []
    for name, mechanism in model.mechanisms.items():
        try:
            report_columns(model, mechanism)
        except DataError:
            continue
        out.append(name)
    return out


def report_columns(model: Any, mechanism: Any) -> list[str]:
    """The columns a mechanism's reports fill, as ``privatize`` writes them (the mechanism's
    privatizer run on no row); D050 for a mechanism no privatizer draws reports of (its
    reports cannot come from a survey's randomizer: ``censored(...)`` data, say)."""
    backend = privatizer_for(mechanism)
    why = "no privatizer draws its reports"
    if backend is not None:
        empty = pd.DataFrame({c: pd.Series([], dtype=object) for c in sorted(observed_columns(mechanism))})
        try:
            return [str(c) for c in backend.privatize(model, mechanism, empty, seed=0).columns]
        except BackendError as e:
            why = e.diagnostics[0].message
    raise DataError(Diagnostic("D050", f"mechanism '{mechanism.name}' has no randomizer: its reports cannot be "
                                       f"collected from respondents ({why})",
                               hint="field the mechanisms that privatize answers (privspec privatize ...)"))


def check_reports(model: Any, mechanism: Any, frame: pd.DataFrame, source: str = "the submission") -> None:
    """Read ``frame`` (one row per submission, the mechanism's report columns as text) with
    the reader of the mechanism's family, as ``run`` reads a file: DataError with the same
    D-code and message for a report the mechanism cannot produce."""
    engine = PandasEngine(frame, source)
    family = mechanism.family
    if family in ("subset", "rr", "product"):
        observations(mechanism, engine, source)
    elif family == "oracle":
        read_reports(mechanism.variable.name, mechanism.protocol, oracle_of(model, mechanism), engine)
    elif family == "multi_oracle":
        mo = multi_of(model, mechanism)
        for j in range(len(mechanism.attributes)):
            read_attribute(mechanism, mo, j, engine)
    elif family == "numeric":
        column = mechanism.variable.name
        read_numeric(ldp_of(model, mechanism), engine.tally([column]), column)
    elif family == "interval":
        reports = report_model(mechanism)
        column = mechanism.variable.name
        reports.read(engine.tally(reports.columns(column)), column)
    else:
        raise DataError(Diagnostic("D050", f"mechanism '{mechanism.name}' ({family}): no reader checks its reports"))


def cells(mechanism: str, report: Any, columns: Sequence[str]) -> dict[str, str | None]:
    """A submitted report as the cells of its columns (text, or None for a null), D050 for
    one of the wrong shape: not a cell where one column is filled, not an object with
    exactly the mechanism's columns where several are, a nested value in a cell."""
    if isinstance(report, dict):
        if set(report) != set(columns):
            raise DataError(Diagnostic("D050", f"the report of '{mechanism}' names the columns "
                                               f"{sorted(map(str, report))}, not {list(columns)}",
                                       hint=f"a report of '{mechanism}' fills the columns {', '.join(columns)}"))
        return {c: _cell(mechanism, c, report[c]) for c in columns}
    if len(columns) != 1:
        raise DataError(Diagnostic("D050", f"the report of '{mechanism}' fills {len(columns)} columns: give an "
                                           f"object column -> value ({', '.join(columns)})"))
    return {columns[0]: _cell(mechanism, columns[0], report)}


def _cell(mechanism: str, column: str, value: Any) -> str | None:
    """One cell as a data file holds it: text (a number written as text), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DataError(Diagnostic("D050", f"the report of '{mechanism}' holds a {type(value).__name__} in "
                                           f"column {column}: a cell is a text or a number",
                                   columns=(column,), hint="write each report as privatize writes it in a file"))
    return value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)
