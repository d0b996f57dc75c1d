"""The spec object returned by :func:`privspec.load`."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import Diagnostic, SpecError, SpecSyntaxError, errors_of
from .model import ModelGraph
from .parser import parse_declarations
from .resolve import resolve
from .source import Source


@dataclass(frozen=True)
class Spec:
    """A parsed and validated spec.

    Attributes
    ----------
    source : Source
        The text and its name.
    diagnostics : tuple of Diagnostic
        Every error and warning, in source order.

    Examples
    --------
    >>> spec = Spec.from_text("variable x: categorical {a, b}\\nmechanism m = subset(x, uniform)")
    >>> [d.code for d in spec.check()]
    ['E405']
    >>> print(spec.render_diagnostics())  # doctest: +NORMALIZE_WHITESPACE
    <string>:2:22: error[E405]: subset privacy needs at least 3 categories; x has 2
      2 | mechanism m = subset(x, uniform)
        |                      ^
    hint: combine variables (section II-D: variable gi = gender * income) or add dummy categories with min_coverage = 1/5 (Appendices II-III)
    """

    source: Source
    diagnostics: tuple[Diagnostic, ...]
    _model: ModelGraph = field(repr=False)

    @classmethod
    def from_text(cls, text: str, name: str = "<string>") -> "Spec":
        return cls._build(Source(text, name))

    @classmethod
    def load(cls, path_or_text: "str | os.PathLike[str]", *, name: str | None = None) -> "Spec":
        if isinstance(path_or_text, os.PathLike) or _names_a_file(path_or_text):
            try:
                source = Source.from_path(path_or_text)
            except UnicodeDecodeError as e:
                raise SpecError(Diagnostic("E100", f"the file is not UTF-8 text ({e.reason} at byte {e.start})",
                                           hint="save the spec as UTF-8"), Source("", str(path_or_text))) from None
            if name:
                source = Source(source.text, name)
            return cls._build(source)
        return cls.from_text(str(path_or_text), name or "<string>")

    @classmethod
    def _build(cls, source: Source) -> "Spec":
        decls, syntax, failed = parse_declarations(source)
        model, semantic = resolve(decls, source, failed)
        diags = sorted(syntax + semantic, key=lambda d: (d.span.start if d.span else -1))
        return cls(source, tuple(diags), model)

    @property
    def title(self) -> str | None:
        """The ``spec "..."`` title, if any (available even when there are errors)."""
        return self._model.title

    def summary(self) -> dict:
        """How many variables, mechanisms, ... were declared (and resolved)."""
        return self._model.summary()

    def check(self) -> list[Diagnostic]:
        """All diagnostics (errors and warnings); empty when the spec is clean."""
        return list(self.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return errors_of(self.diagnostics)

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed)."""
        return not self.errors

    @property
    def model(self) -> ModelGraph:
        """The model graph; raises :class:`SpecError` (or :class:`SpecSyntaxError`) on errors."""
        errs = self.errors
        if errs:
            kind = SpecSyntaxError if errs[0].code.startswith("E1") else SpecError
            raise kind(errs, self.source)
        return self._model

    def render_diagnostics(self) -> str:
        return "\n".join(d.render(self.source) for d in self.diagnostics)


def _names_a_file(text: object) -> bool:
    """Whether a one-line string is the path of an existing file (long text is not)."""
    if not isinstance(text, str) or "\n" in text:
        return False
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # too long for a path, or a NUL byte
        return False
