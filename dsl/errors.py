"""Diagnostics and the exception hierarchy.

Every problem privspec reports is a :class:`Diagnostic` with a stable code, a span
(or data rows and columns), a message and a hint.  They render like a compiler's::

    specs/urn.privspec:12:7: error[E402]: conditional design does not sum to 1 for category 'red' (sum = 5/6)
       12 | mechanism m = subset(color, conditional { {black, red}: 1/2 })
          |       ^^^^^^
    hint: every category must lie in subsets whose weights sum to 1 (Definition 2)

Codes are listed in ``docs/errors.md``.  :func:`did_you_mean` is the hint for a misspelt name.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from privspec.language.source import Source, Span

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a spec or in data.

    Parameters
    ----------
    code : str
        Stable code such as ``"E201"`` (errors) or ``"W101"`` (warnings).
    message : str
        What is wrong, in one line.
    span : Span or None
        Where in the spec; None for data problems or whole-file problems.
    hint : str
        What to do instead ("" when nothing useful can be said).
    severity : str
        ``"error"`` or ``"warning"``.
    rows, columns : tuple
        For data errors: the offending rows (1-based data rows: the first row after
        the header is row 1; see ``docs/errors.md``) and columns.
    file : str or None
        For data errors: the data file they come from (rendered in place of a spec's
        name; see :meth:`with_file`).
    """

    code: str
    message: str
    span: Span | None = None
    hint: str = ""
    severity: str = ERROR
    rows: tuple[int, ...] = ()
    columns: tuple[str, ...] = ()
    file: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def render(self, source: Source | None) -> str:
        """Render as ``FILE:LINE:COL: error[CODE]: message``, the line, a caret and a hint."""
        name = source.name if source is not None else "<input>"
        if self.span is None and self.file is not None:  # a data problem: name its file
            name = self.file
        head = f"{self.severity}[{self.code}]: {self.message}"
        out: list[str] = []
        if self.span is not None and source is not None:
            line, col = source.line_col(self.span.start)
            out.append(f"{name}:{line}:{col}: {head}")
            text = source.line_text(line)
            end_line, end_col = source.line_col(max(self.span.start, self.span.end - 1))
            # a span running past its first line is underlined to that line's end
            last = end_col if end_line == line else len(text)
            width = max(1, last - col + 1)
            gutter = " " * len(str(line))
            out.append(f"  {line} | {text}")
            out.append(f"  {gutter} | {' ' * (col - 1)}{'^' * width}")
        else:
            where = name
            if self.rows:
                shown = ", ".join(str(r) for r in self.rows[:10])
                more = f" and {len(self.rows) - 10} more" if len(self.rows) > 10 else ""
                where += f": rows {shown}{more}"
            if self.columns:
                where += f" (column{'s' if len(self.columns) > 1 else ''} {', '.join(self.columns)})"
            out.append(f"{where}: {head}")
        if self.hint:
            out.append(f"hint: {self.hint}")
        return "\n".join(out)

    def with_file(self, file: str | None) -> "Diagnostic":
        """This diagnostic naming ``file`` when it points nowhere yet (no span, no file)."""
        if file is None or self.span is not None or self.file is not None:
            return self
        return replace(self, file=str(file))

    def to_dict(self, source: Source | None = None) -> dict:
        """The JSON form: code, severity, message, hint, and line/column or rows."""
        d: dict = {"code": self.code, "severity": self.severity, "message": self.message,
                   "hint": self.hint}
        if self.span is not None and source is not None:
            line, col = source.line_col(self.span.start)
            end_line, end_col = source.line_col(self.span.end)
            d.update(file=source.name, line=line, column=col, end_line=end_line, end_column=end_col)
        elif self.file is not None:
            d["file"] = self.file
        if self.rows:
            d["rows"] = list(self.rows)
        if self.columns:
            d["columns"] = list(self.columns)
        return d


class PrivspecError(Exception):
    """Root of every error privspec raises on purpose.

    Carries one or more diagnostics and the source they point into.
    """

    def __init__(self, diagnostics: Diagnostic | Sequence[Diagnostic], source: Source | None = None):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        self.source = source
        super().__init__(self.render())

    @property
    def code(self) -> str:
        return self.diagnostics[0].code if self.diagnostics else ""

    def render(self) -> str:
        return "\n".join(d.render(self.source) for d in self.diagnostics)


class SpecSyntaxError(PrivspecError):
    """The spec text does not follow the grammar."""


class SpecError(PrivspecError):
    """The spec parses but does not make sense (names, domains, probabilities, ...)."""


class DataError(PrivspecError):
    """A data file does not fit the spec; diagnostics name the file, rows and columns."""

    def with_file(self, file: str | None) -> "DataError":
        """The same error, its diagnostics naming ``file`` where they name none yet."""
        if file is None or all(d.file is not None or d.span is not None for d in self.diagnostics):
            return self
        err = type(self)([d.with_file(file) for d in self.diagnostics], self.source)
        err.__cause__, err.__traceback__ = self.__cause__, self.__traceback__
        return err


class BackendError(PrivspecError):
    """A back end cannot answer a query (not supported yet, or failed to converge)."""


def errors_of(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Only the errors, warnings left out."""
    return [d for d in diagnostics if d.is_error]


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``"did you mean 'x'?"`` for the closest candidate, or ``""``.

    Examples
    --------
    >>> did_you_mean("subst", ["subset", "grr", "rr"])
    "did you mean 'subset'?"
    """
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in candidates}
        if name.lower() in lowered:
            close = [lowered[name.lower()]]
    return f"did you mean '{close[0]}'?" if close else ""
