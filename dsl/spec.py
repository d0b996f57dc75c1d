"""The spec object returned by :func:`privspec.load`."""
from __future__ import annotations

import contextlib
import gc
import html
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from privspec.errors import Diagnostic, SpecError, SpecSyntaxError, errors_of
from privspec.model.graph import ModelGraph
from privspec.language.parser import parse_declarations
from privspec.model.resolve import resolve
from privspec.language.source import Source
from privspec.results.render import singular

if TYPE_CHECKING:
    from privspec.api import Results


@dataclass(frozen=True, repr=False)
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
        with _collector_paused():
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

    def raise_for_errors(self) -> None:
        """Raise :class:`SpecError` (or :class:`SpecSyntaxError`) when the spec has errors."""
        self.model  # noqa: B018 - the property raises

    # -- answering queries (privspec.api; the command line is a thin layer over these) ----------------
    def analyze(self, queries: "Sequence[str] | None" = None, *, seed: int | None = None) -> "Results":
        """Answer the queries that need no data: exact or symbolic analysis.

        Examples
        --------
        >>> spec = Spec.from_text("variable x: categorical {a, b, c, d}\\n"
        ...                       "population x ~ categorical(1/2, 1/4, 1/8, 1/8)\\n"
        ...                       "mechanism m = subset(x, uniform)\\nquery tau = coverage(m)")
        >>> spec.analyze()["tau"].value
        9/16
        """
        return _api().answer(self, "analyze", queries=queries, seed=seed)

    def run(self, data: Any, queries: "Sequence[str] | None" = None, *, seed: int | None = 0,
            engine: str | None = None, progress: "bool | None" = None, weights: str | None = None,
            strata: str | None = None, cluster: str | None = None,
            replicate_weights: "str | Sequence[str] | None" = None, replicate_type: str | None = None,
            fay_rho: float | None = None, rscales: "Sequence[float] | None" = None) -> "Results":
        """Answer the queries from data: ``data`` is a path, a :class:`pandas.DataFrame`, or a
        mapping mechanism -> path/DataFrame (key ``None`` for the default table).  ``engine``
        (``"pandas"``, ``"duckdb"``, ``"spark"``) counts the reports; by default pandas for
        a DataFrame and DuckDB for a file (docs/scale.md).  ``progress``: progress bars of
        the long loops (permutation tests, bootstrap bands): None (the default) where
        someone watches -- a notebook, an interactive terminal, never a pipe or a file --,
        True always (on standard error), False never (:func:`privspec.progress.chosen`).
        ``weights``, ``strata``, ``cluster``: the data's survey design columns (Hajek
        estimates, design-based standard errors and design effects: docs/cli.md);
        ``replicate_weights``, ``replicate_type``, ``fay_rho``, ``rscales``: the standard
        errors from the agency's replicate weights instead (docs/cli.md)."""
        return _api().answer(self, "run", queries=queries, data=data, seed=seed, engine=engine, progress=progress,
                             weights=weights, strata=strata, cluster=cluster, replicate_weights=replicate_weights,
                             replicate_type=replicate_type, fay_rho=fay_rho, rscales=rscales)

    def simulate(self, n: int, reps: int, seed: int | None = 0, queries: "Sequence[str] | None" = None, *,
                 progress: "bool | None" = None) -> "Results":
        """Compare each query's analytic answer with ``reps`` simulated data sets of ``n``
        respondents drawn from the declared populations; ``progress`` as in :meth:`run`
        (a bar over the replications)."""
        return _api().answer(self, "simulate", queries=queries, n=n, reps=reps, seed=seed, progress=progress)

    def privatize(self, frame: Any, mechanism: str, seed: int | None = None, *, offset: int | None = None,
                  nonnegative: bool = False, keep: "Sequence[str] | None" = None, csv_guard: bool = False,
                  progress: "bool | None" = None) -> Any:
        """Privatize raw records (a DataFrame) with a mechanism or a release; returns a DataFrame
        of the reports only, with the raw columns named in ``keep`` before them
        (:func:`privspec.api.privatize`).  ``progress`` as in :meth:`run` (a bar over the
        chunks of a large frame)."""
        return _api().privatize(self, frame, mechanism, seed=seed, offset=offset, nonnegative=nonnegative,
                                keep=keep, csv_guard=csv_guard, progress=progress)

    def compare(self, names: "Sequence[str] | None" = None, *, reps: int | None = None, seed: int | None = None,
                report: Any = None, force: bool = False, progress: "bool | None" = None) -> "Results":
        """Evaluate the ``compare`` blocks (all, or ``names``): criteria per candidate, ranks,
        Pareto frontiers, sample sizes and power (:func:`privspec.api.compare`); ``report``:
        write an HTML or Markdown report there (an existing one replaced only with ``force``);
        ``progress`` as in :meth:`run` (bars over the simulated replications with ``reps``)."""
        return _api().compare(self, names, reps=reps, seed=seed, report=report, force=force, progress=progress)

    # -- display --------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        name = self.title or self.source.name
        if not self.ok:
            n = len(self.errors)
            return f"<Spec {name!r}: {n} error{'s' if n != 1 else ''}>"
        parts = ", ".join(f"{v} {k if v != 1 else singular(k)}" for k, v in self.summary().items() if v)
        return f"<Spec {name!r}: {parts}>"

    def _repr_html_(self) -> str:
        """The declarations as a table (notebooks)."""
        rows = []
        if self.ok:
            m = self.model
            for kind, items in (("variable", m.variables), ("mechanism", m.mechanisms), ("release", m.releases),
                                ("query", m.queries)):
                for name, obj in items.items():
                    span = getattr(obj, "span", None)
                    text = " ".join(self.source.snippet(span).split()) if span is not None else ""
                    rows.append(f"<tr><td>{kind}</td><td>{html.escape(name)}</td><td><code>{html.escape(text)}"
                                "</code></td></tr>")
        else:
            for d in self.errors:
                rows.append(f"<tr><td>error</td><td>{d.code}</td><td>{html.escape(d.message)}</td></tr>")
        title = html.escape(self.title or self.source.name)
        return (f"<table><caption>{title}</caption><thead><tr><th>kind</th><th>name</th><th>declaration</th></tr>"
                f"</thead><tbody>{''.join(rows)}</tbody></table>")


def _api() -> Any:
    """:mod:`privspec.api`, loaded when a spec first answers something."""
    # loading and checking a spec never need what the API brings:
    # start-up: the back ends, numpy, scipy and pandas (about 2 s)
    from privspec import api

    return api


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector paused while a spec is parsed and resolved.

    Both build objects that all live until the end (an AST node or two per token, the
    model graph), and make no cycles worth collecting early; the collector's passes over
    that growing heap were 20-25% of ``privspec check`` on a 5,000-line spec
    (bench/check_speed.py).  Pausing is process-wide: it is undone only by the call that
    paused it, so a parse in another thread, or a caller that turned the collector off
    itself, is left as it was.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _names_a_file(text: object) -> bool:
    """Whether a one-line string is the path of an existing file (long text is not)."""
    if not isinstance(text, str) or "\n" in text:
        return False
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # too long for a path, or a NUL byte
        return False
