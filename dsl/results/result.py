"""One query's answer: :class:`Result`, the top of the results layer.

A result is the query's kind, a value (:mod:`privspec.results.values`) and extras; it
serializes to the JSON contract (:meth:`Result.to_dict`), reads as pandas objects
(:class:`privspec.results.views.ResultViews`) and prints as the reports of
:mod:`privspec.results.report`.  The back ends answer with the class of each kind
(:mod:`privspec.results.kinds`: ``Estimate(value, se=..., n=...)``), whose fields are its
extras by name; ``Result(kind, value, extras)`` itself holds a result of a kind without a
class (one built by hand), whose extras the views do not read.
"""
from __future__ import annotations

import json
import copy
from dataclasses import dataclass, field
from typing import Any, Mapping

from privspec.results.report import Summary, latex_body, markdown_summary, render, text_summary
from privspec.results.values import Inference, exact_text, has_symbols, is_exact, sympy_form, to_json
from privspec.results.views import ResultViews


@dataclass(frozen=True)
class Result(ResultViews):
    """One query's answer.

    Examples
    --------
    >>> import sympy
    >>> r = Result("coverage", sympy.Rational(5131, 7500), {"note": "exact"})
    >>> r.to_dict()["value"], r.to_dict()["expr"]
    (0.6841333333333334, '5131/7500')
    >>> Result("epsilon", sympy.Symbol("eps")).to_dict()["value"] is None
    True
    """

    kind: str
    value: Any
    extras: Mapping[str, Any] = field(default_factory=dict)
    #: what the Python API needs beyond the JSON (an NPMLE's fit and data, for ``cdf(x)``,
    #: ``band(x)``...; a planning query's criterion over n, for its plot); never serialized
    fit: Any = field(default=None, compare=False, repr=False)
    #: an estimate's covariance and intervals at any level (:class:`Inference`); never serialized
    inference: Inference | None = field(default=None, compare=False, repr=False)
    #: the query answered (its name, estimand and mechanism label the plots); set by the
    #: runner (:func:`privspec.api.answer`), never serialized
    query: Any = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        """The JSON contract: ``kind``, ``value`` and the extras (``se``, ``method``, ``n`` ...)."""
        symbolic = has_symbols(self.value)
        out: dict[str, Any] = {"kind": self.kind, "value": None if symbolic else to_json(self.value)}
        form = sympy_form(self.value)
        if form is not None and not (is_exact(form) and form.is_Float):
            # start-up: sympy is loaded already where a value has an exact form (values.is_exact)
            import sympy

            out["expr"] = exact_text(form)
            out["latex"] = exact_text(form, sympy.latex)
        for k, v in self.extras.items():
            if is_exact(v) and v.free_symbols:
                out[k] = exact_text(v)  # a symbolic extra (a trace in eps, ...) is more use as an expression
            else:
                out[k] = to_json(v) if not isinstance(v, str) else v
        return out

    def summary(self) -> Any:
        """The result as a :class:`privspec.results.report.Summary`: it prints as the text report
        (:func:`privspec.results.report.text_summary`; ``str()`` of it is that text) and renders
        as HTML in a notebook, with ``as_text()``, ``as_html()``, ``as_markdown()`` and
        ``as_latex()``.

        Examples
        --------
        >>> import sympy
        >>> s = Result("coverage", sympy.Rational(5131, 7500), {"metric": "size"}).summary()
        >>> print(s)
        0.684133 (exactly 5131/7500)
            metric = size
        >>> print(s.as_markdown())
        **value**: 0.684133 (exactly $\\frac{5131}{7500}$)
        <BLANKLINE>
        | extra | value |
        |---|---|
        | metric | size |
        """
        return Summary(self.as_text(), html=self._repr_html_, markdown=self.as_markdown, latex=self.as_latex)

    def __str__(self) -> str:
        return self.as_text()

    def as_text(self, verbose: bool = True) -> str:
        """The result as text (:func:`privspec.results.report.text_summary`; ``verbose``: every extra)."""
        return text_summary(self, verbose)

    def as_markdown(self) -> str:
        """The result in Markdown (:func:`privspec.results.report.markdown_summary`)."""
        return markdown_summary(self)

    def as_latex(self) -> str:
        """The result in LaTeX, without a document around it (:func:`privspec.results.report.latex_body`)."""
        return latex_body(self)

    def with_query(self, query: Any) -> "Result":
        """This result, labelled with the query it answers (the runner's; never serialized)."""
        out = copy.copy(self)
        object.__setattr__(out, "query", query)  # frozen: set once, on the copy
        return out




def render_results(fmt: str, model: Any, results: Mapping[str, Result], verbose: bool = False) -> str:
    """``{"spec": TITLE, "queries": {NAME: RESULT}}`` as JSON, or a readable report (text:
    each query under a caption saying what it answers; ``verbose``: with every extra).

    Parameters
    ----------
    fmt : str
        ``text``, ``json``, ``markdown`` or ``latex``.
    model : object
        The spec's model graph (its ``title``; each query's caption is
        ``describe(model.queries[name])``), or any object with a ``title`` and a
        ``captions`` mapping (query or compare name -> caption, as
        :func:`privspec.model.query_kinds.describe` writes it): a compiled plan of the spec
        prints the same report without the model graph (:func:`privspec.results.report.caption`).
    results : mapping
        Query name -> :class:`Result`, in the order printed.
    verbose : bool
        Text: every extra, also those in :data:`privspec.results.report.DETAILS`.

    Returns
    -------
    str
        The report.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from privspec.results.kinds import Estimate
    >>> from privspec.results.values import Vector
    >>> plan = SimpleNamespace(title="urn", captions={"w": "how common each color is: its distribution"})
    >>> print(render_results("text", plan, {"w": Estimate(Vector(("a", "b"), (0.25, 0.75)), method="mom", n=400)}))
    urn
    <BLANKLINE>
    How common each color is: its distribution
    w (estimate): {a: 0.25, b: 0.75}
        method = mom
        n = 400
    """
    if fmt == "json":
        return json.dumps({"spec": model.title, "queries": {k: r.to_dict() for k, r in results.items()}},
                          indent=2, default=str)
    return render(fmt, model.title, results, model=model, verbose=verbose)
