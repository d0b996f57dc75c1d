"""Readable renderings of query results: text, Markdown and LaTeX (issue 16).

The JSON contract (:meth:`privspec.results.result.Result.to_dict`) is the source of every
number shown here; this module only lays it out:

* **text** -- ``NAME (KIND): VALUE`` then one ``    key = value`` line per extra.
  Matrices and joint tables are aligned grids under their row and column labels (a
  slice per extra dimension of a table), mappings too long for one line become one
  line per key, long strings are folded, exact forms are written as a statistician
  writes them (``e``, ``inf``, ``x^2``) and only when short (the full forms are in
  the JSON and LaTeX output).  No line is longer than :data:`privspec.results.layout.MAX_LINE` characters
  except a label or a number that is itself longer.
* **markdown** -- ``## TITLE``, ``### NAME (KIND)`` per query, Markdown tables for
  vectors, matrices and joint tables, the extras as a two-column table.
* **latex** -- a complete ``article`` (amsmath), a section per query, names escaped,
  matrices as ``tabular`` with labels (and ``bmatrix`` for exact forms, scaled to the
  page's width when too wide), extras as a ``description``.  It compiles with ``pdflatex``.

Examples
--------
>>> import sympy
>>> from privspec.results.result import Result
>>> print(text_summary(Result("coverage", sympy.Rational(5131, 7500), {"metric": "size"})))
0.684133 (exactly 5131/7500)
    metric = size
>>> plain("-E/(E + 4) + 1"), plain("oo"), plain("2*exp(-1/2)/(1 - exp(-1/2))**2")
('-e/(e + 4) + 1', 'inf', '2*exp(-1/2)/(1 - exp(-1/2))^2')
"""
from __future__ import annotations

import html
import re
from typing import Any, Mapping

from privspec.model.query_kinds import describe, describe_compare
from privspec.results.comparison_tables import blocks
from privspec.results.layout import (MAX_LINE, WIDE, denoise, fold, grid, grid_like, inline, inline_or_block,
                                     interval, is_matrix, is_step, is_table, num)
from privspec.results.render import md
from privspec.results.values import Matrix, Vector, exact_text, is_exact, sympy_form

#: exact forms longer than this are not repeated after the number in text (``(exactly ...)``)
EXACT_INLINE = 60
#: symbolic exact forms longer than this are folded over several lines in text
FOLD = 80

_META = ("kind", "value", "expr", "latex")
#: extras that restate how a value is derived or what it means in the papers' notation;
#: the text report shows them with ``verbose`` only (the caption says what the query answers)
DETAILS = frozenset({"meaning", "se_kind", "scaled_loss_limit", "eigenvalues", "parameterization", "closed_form",
                     "r_p", "formula", "p_star_formula", "q_star_formula", "variance_formula", "variance_meaning"})


# ---- exact forms as a statistician writes them -------------------------------------------------
def plain(expr: str) -> str:
    """sympy's spelling of an exact form -> the usual one: ``E`` -> ``e``, ``oo`` -> ``inf``,
    ``zoo`` -> ``inf``, ``**`` -> ``^``, ``Matrix([[...]])`` -> ``[[...]]``."""
    s = re.sub(r"\bzoo\b", "inf", expr)
    s = re.sub(r"\boo\b", "inf", s)
    s = re.sub(r"\bE\b", "e", s)
    s = s.replace("**", "^")
    m = re.fullmatch(r"(?:Immutable)?Matrix\((.*)\)", s, re.S)
    return m.group(1) if m else s


def from_plain(text: str) -> Any:
    """The sympy expression of a :func:`plain` form (for tests and tools).

    >>> import sympy
    >>> from_plain("-e/(e + 4) + 1") == -sympy.E / (sympy.E + 4) + 1
    True
    """
    import sympy  # start-up: only tests and tools read exact forms back

    s = re.sub(r"\binf\b", "oo", text.replace("^", "**"))
    return sympy.sympify(s, locals={"e": sympy.E})



def shown_dict(result: Any) -> dict:
    """``result.to_dict()`` as the readable reports show it: rounding noise as 0 in the
    value and in each extra (:func:`denoise`)."""
    return {k: (x if k in _META[2:] else denoise(x)) for k, x in result.to_dict().items()}


# ---- text ----------------------------------------------------------------------------------------

def _symbolic_text(form: Any, expr: str, labels: tuple[list[str], list[str]] | None) -> str:
    """A symbolic exact form in text: a grid of entries under their labels, the form, or a
    fold of it; a matrix whose entries are too long is summarised (its form is in the JSON
    and LaTeX output)."""
    if is_exact(form, "MatrixBase"):
        entries = [[plain(str(form[i, j])) for j in range(form.cols)] for i in range(form.rows)]
        syms = ", ".join(sorted(str(s) for s in form.free_symbols))
        if max(len(x) for r in entries for x in r) > 24:
            return (f"a {form.rows} x {form.cols} matrix in {syms}; its exact form is "
                    f"{len(expr):,} characters long: see --format json or latex")
        rows, cols = labels or ([], [])
        rows = rows if len(rows) == form.rows else [str(i + 1) for i in range(form.rows)]
        cols = cols if len(cols) == form.cols else [str(j + 1) for j in range(form.cols)]
        return "\n" + "\n".join(grid(rows, cols, entries))
    return fold(plain(expr), MAX_LINE, " " * 8)


def _looks_exact(s: str) -> bool:
    """A string that is sympy's spelling of an exact form (a symbolic extra: a trace in eps)."""
    return bool(re.fullmatch(r"[\w\s*+\-/().]+", s)) and ("*" in s or "/" in s) \
        and not re.search(r"\w\s+[\w(]", s)


def _sympify(s: str) -> Any:
    # Markdown and LaTeX write an extra that reads as an exact form (a trace in eps) as math;
    # start-up: sympy (about 0.2 s) only for such a string, not for a result's numbers
    import sympy

    try:
        return sympy.sympify(s)
    except (sympy.SympifyError, SyntaxError, TypeError, ValueError):
        return None


def _rows_cols(result: Any) -> tuple[list[str], list[str]] | None:
    v = result.value
    if isinstance(v, Matrix):
        return [str(r) for r in v.rows], [str(c) for c in v.cols]
    if isinstance(v, Vector):
        return [""], [str(x) for x in v.labels]
    return None


def _text_block(block: Any, indent: str = "  ") -> list[str]:
    """A comparison table as text: left-aligned columns, in bands of columns (the first
    repeated) where it would pass :data:`WIDE`; its notes folded below it (a block without a
    header is its title and notes only)."""
    if not block.header:
        return [indent + block.title] + [fold(f"{indent}  - {note}", MAX_LINE, indent + "    ") for note in block.notes]
    cols = list(zip(block.header, *block.rows)) if block.rows else [(h,) for h in block.header]
    widths = [max(len(str(x)) for x in col) for col in cols]
    bands, start = [], 1
    while start < len(cols) or not bands:
        width, end = len(indent) + widths[0], start
        while end < len(cols) and (end == start or width + 2 + widths[end] <= WIDE):
            width += 2 + widths[end]
            end += 1
        bands.append([0] + list(range(start, end)))
        start = end
        if start >= len(cols):
            break
    lines = [indent + block.title]
    for band in bands:
        for row in [block.header] + block.rows:
            lines.append((indent + "  " + "  ".join(f"{str(row[i]):<{widths[i]}}" for i in band)).rstrip())
        if len(bands) > 1:
            lines.append("")
    for note in block.notes:
        lines.append(fold(f"{indent}  - {note}", MAX_LINE, indent + "    "))
    return lines


def text_summary(result: Any, verbose: bool = True) -> str:
    """A result as text: the value, then ``    key = value`` per extra (without
    ``verbose``, not the extras in :data:`DETAILS`)."""
    d = shown_dict(result)
    value, expr = d["value"], d.get("expr")
    if value is None and expr is not None:
        text = _symbolic_text(sympy_form(result.value), expr, _rows_cols(result))
    else:
        text = inline_or_block(value, "")
        if expr is not None and value is not None and not isinstance(value, (dict, list)):
            exact = plain(expr)
            if exact != text and len(exact) <= EXACT_INLINE:
                text = f"{text} (exactly {exact})"
    lines = [text]
    for k, v in d.items():
        if k in _META or (k in DETAILS and not verbose):
            continue
        raw = result.extras.get(k)
        if isinstance(v, str):
            exact = is_exact(raw) and raw.free_symbols or _looks_exact(v)
            shown = fold(f"    {k} = {plain(v) if exact else v}", MAX_LINE, " " * 8)[len(f"    {k} = "):]
        else:
            shown = inline_or_block(v, "      " if grid_like(v) else "    ")
        lines.append(f"    {k} = {shown}")
    return "\n".join(lines)


def comparison_text(document: Any) -> str:
    """A comparison document as text: its tables (:func:`privspec.results.comparison_tables.blocks`)."""
    return "\n" + "\n".join(line for b in blocks(document) for line in _text_block(b) + [""]).rstrip()


def caption(model: Any, name: str) -> str | None:
    """What the query (or compare block) ``name`` of ``model`` answers, in one plain line
    (:func:`privspec.model.query_kinds.describe`); None where the model does not declare it.

    ``model`` is the spec's model graph, or any object with a ``captions`` mapping (name
    -> that line, as :func:`~privspec.model.query_kinds.describe` wrote it): a compiled
    plan of the spec prints the same captions without the model graph.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> plan = SimpleNamespace(title="urn", captions={"w": "the distribution of color"})
    >>> caption(plan, "w"), caption(plan, "v"), caption(None, "w")
    ('the distribution of color', None, None)
    """
    if model is None:
        return None
    captions = getattr(model, "captions", None)
    if captions is not None:
        return captions.get(name)
    if name in getattr(model, "queries", {}):
        return describe(model.queries[name])
    if name in getattr(model, "compares", {}):
        return describe_compare(model.compares[name])
    return None


def render_text(title: str | None, results: Mapping[str, Any], model: Any = None, verbose: bool = False) -> str:
    """The text report: the title, then per query a caption saying what it answers (when
    ``model`` declares it: :func:`caption`), ``NAME (KIND): VALUE`` and its extras, a blank
    line between queries.  Without ``verbose`` the extras in :data:`DETAILS` are left out."""
    lines = [title] if title else []
    for name, r in results.items():
        text = caption(model, name)
        if text is not None:
            if lines:
                lines.append("")
            lines.append(fold(text[0].upper() + text[1:], MAX_LINE, "  "))
        lines.append(f"{name} ({r.kind}): {r.as_text(verbose)}")
    return "\n".join(lines)


# ---- Markdown ------------------------------------------------------------------------------------
def _md_math(latex: str) -> str:
    """Inline math for a Markdown table cell (its pipes escaped)."""
    return "$" + latex.replace("|", "\\|") + "$"


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of a Markdown table (cells already escaped: :func:`privspec.results.render.md`)."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _md_value(v: Any) -> list[str] | None:
    """Markdown table lines for a structured value, or None for an inline one."""
    if is_matrix(v):
        return md_table([" "] + [md(c) for c in v["cols"]],
                         [[f"**{md(r)}**"] + [md(num(x)) for x in row] for r, row in zip(v["rows"], v["data"])])
    if is_table(v):
        names, labels, data = v["variables"], v["labels"], v["data"]
        if len(names) == 1:
            return md_table([md(x) for x in labels[0]], [[md(num(x)) for x in data]])
        out: list[str] = []

        def walk(prefix: list[str], sub: Any, depth: int) -> None:
            if depth == len(names) - 2:
                if prefix:
                    out.extend(["", "*" + md(", ".join(prefix)) + "*", ""])
                out.extend(md_table([md(f"{names[-2]} \\ {names[-1]}")] + [md(x) for x in labels[-1]],
                                     [[f"**{md(r)}**"] + [md(num(x)) for x in row]
                                      for r, row in zip(labels[-2], sub)]))
                return
            for lab, part in zip(labels[depth], sub):
                walk(prefix + [f"{names[depth]} = {lab}"], part, depth + 1)

        walk([], data, 0)
        return out
    if is_step(v):
        return md_table(["interval", "mass"], [[interval(a, b), md(num(m))]
                                                for (a, b), m in zip(v["intervals"], v["mass"])])
    if isinstance(v, dict) and v and all(not isinstance(x, (dict, list)) for x in v.values()):
        return md_table([md(k) for k in v], [[md(num(x)) for x in v.values()]])
    if isinstance(v, dict) and _uniform_rows_any(v) and not any(grid_like(x) for x in v.values()):
        cols = list(next(iter(v.values())))
        return md_table([" "] + [md(c) for c in cols],
                         [[f"**{md(k)}**"] + [md(inline(x[c])) for c in cols] for k, x in v.items()])
    if isinstance(v, dict) and any(grid_like(x) for x in v.values()):  # moments, intervals: a table each
        out = []
        for k, x in v.items():
            out += ["", f"*{md(k)}*", ""] + (_md_value(x) or [md(inline(x))])
        return out[1:]
    if isinstance(v, dict) and v:
        return md_table(["key", "value"], [[md(k), md(inline(x))] for k, x in v.items()])
    return None


def _uniform_rows_any(v: dict) -> bool:
    if not v or not all(isinstance(x, dict) and x for x in v.values()):
        return False
    keys = [list(x) for x in v.values()]
    return all(k == keys[0] for k in keys)


def markdown_summary(result: Any) -> str:
    """A result in Markdown: the value (a table where it has labels), then the extras."""
    d = shown_dict(result)
    value, expr = d["value"], d.get("expr")
    out: list[str] = []
    form = sympy_form(result.value) if value is None else None
    labels = _rows_cols(result)
    if is_exact(form, "MatrixBase") and labels and (form.rows, form.cols) == (len(labels[0]), len(labels[1])):
        out += md_table([" "] + [md(c) for c in labels[1]],
                         [[f"**{md(r)}**"] + [_md_math(exact_latex(form[i, j])) for j in range(form.cols)]
                          for i, r in enumerate(labels[0])])
    elif value is None and expr is not None:
        out.append(f"$$\n{d['latex']}\n$$" if "latex" in d else f"`{expr}`")
    else:
        table = _md_value(value)
        if table:
            out += table
        else:
            line = md(inline(value))
            if expr is not None and not isinstance(value, (dict, list)) and plain(expr) != line:
                line += f" (exactly ${d['latex']}$)" if len(expr) <= 2000 else ""
            out.append(f"**value**: {line}")
    extras = [(k, v) for k, v in d.items() if k not in _META]
    simple = [(k, v) for k, v in extras if _md_value(v) is None]
    if simple:
        rows = []
        for k, v in simple:
            raw = result.extras.get(k)
            if is_exact(raw) and raw.free_symbols:
                cell = _md_math(exact_latex(raw))
            elif isinstance(v, str) and _looks_exact(v) and _sympify(v) is not None:
                cell = _md_math(exact_latex(_sympify(v)))
            else:
                cell = md(inline(v))
            rows.append([md(k), cell])
        out += [""] + md_table(["extra", "value"], rows)
    for k, v in extras:
        table = _md_value(v)
        if table:
            out += ["", f"**{md(k)}**:", ""] + table
    return "\n".join(out)


def comparison_markdown(document: Any) -> str:
    """A comparison document in Markdown: a table and its notes per block."""
    parts = []
    for b in blocks(document):
        parts += [f"**{md(b.title)}**", ""]
        if b.header:
            parts += md_table([md(h) for h in b.header], [[md(x) for x in r] for r in b.rows])
        parts += [""] + [f"- {md(n)}" for n in b.notes] + ([""] if b.notes else [])
    return "\n".join(parts).rstrip()


def render_markdown(title: str | None, results: Mapping[str, Any]) -> str:
    parts = [f"## {md(title)}"] if title else []
    for name, r in results.items():
        parts.append(f"### {md(name)} ({md(r.kind)})\n\n{r.as_markdown()}")
    return "\n\n".join(parts)


# ---- LaTeX ---------------------------------------------------------------------------------------
_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}


def tex(s: Any) -> str:
    """Text-mode LaTeX for a string: the specials escaped, non-ASCII characters dropped
    to ``?`` (pdflatex knows only some)."""
    return "".join(_TEX.get(c, c if ord(c) < 128 else "?") for c in str(s))


def _tex_num(x: Any) -> str:
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float):
        return tex(f"{x:.6g}")
    return tex(x)


def _tabular(header: list[str], rows: list[list[str]], label_col: bool = True) -> str:
    spec = ("l|" if label_col else "") + "r" * (len(header) - (1 if label_col else 0))
    out = [r"\begin{tabular}{" + spec + "}", " & ".join(header) + r" \\", r"\hline"]
    out += [" & ".join(r) + r" \\" for r in rows]
    out.append(r"\end{tabular}")
    return "\n".join(out)


def _tex_value(v: Any) -> str:
    """A JSON value in text-mode LaTeX: tables for structured values, escaped text else."""
    if is_matrix(v):
        return _tabular([""] + [tex(c) for c in v["cols"]],
                        [[tex(r)] + [_tex_num(x) for x in row] for r, row in zip(v["rows"], v["data"])])
    if is_table(v):
        names, labels, data = v["variables"], v["labels"], v["data"]
        if len(names) == 1:
            return _tabular([tex(x) for x in labels[0]], [[_tex_num(x) for x in data]], label_col=False)
        out: list[str] = []

        def walk(prefix: list[str], sub: Any, depth: int) -> None:
            if depth == len(names) - 2:
                head = tex(f"{names[-2]} \\ {names[-1]}")
                cap = (tex(", ".join(prefix)) + r"\\" + "\n") if prefix else ""
                out.append(cap + _tabular([head] + [tex(x) for x in labels[-1]],
                                          [[tex(r)] + [_tex_num(x) for x in row] for r, row in zip(labels[-2], sub)]))
                return
            for lab, part in zip(labels[depth], sub):
                walk(prefix + [f"{names[depth]} = {lab}"], part, depth + 1)

        walk([], data, 0)
        return "\n\n".join(out)
    if is_step(v):
        return _tabular(["interval", "mass"], [[tex(interval(a, b)), _tex_num(m)]
                                               for (a, b), m in zip(v["intervals"], v["mass"])])
    if isinstance(v, dict) and v and all(not isinstance(x, (dict, list)) for x in v.values()):
        return _tabular([tex(k) for k in v], [[_tex_num(x) for x in v.values()]], label_col=False)
    if isinstance(v, dict) and _uniform_rows_any(v) and len(v) > 1 and not any(grid_like(x) for x in v.values()):
        cols = list(next(iter(v.values())))
        return _tabular([""] + [tex(c) for c in cols],
                        [[tex(k)] + [tex(inline(x[c])) for c in cols] for k, x in v.items()])
    if isinstance(v, dict) and v:
        return "\\begin{description}\n" + "\n".join(f"\\item[{tex(k)}] " + _tex_value(x) for k, x in v.items()) \
            + "\n\\end{description}"
    if isinstance(v, list):
        return tex(inline(v))
    return _tex_num(v)


def exact_latex(form: Any, **options: Any) -> str:
    """``sympy.latex(form, **options)`` of a sympy object (sympy is loaded where there is one).

    Examples
    --------
    >>> import sympy
    >>> print(exact_latex(sympy.Rational(1, 3)))
    \\frac{1}{3}
    """
    import sympy  # start-up: loaded already, as the form is a sympy object

    return sympy.latex(form, **options)


def _exact_tex(form: Any) -> str:
    if is_exact(form, "MatrixBase"):
        return exact_latex(form, mat_str="bmatrix", mat_delim="")
    return exact_latex(form)


def latex_body(result: Any) -> str:
    """A result in LaTeX (no document around it): value, exact form, extras."""
    d = shown_dict(result)
    value = d["value"]
    out: list[str] = []
    form = sympy_form(result.value) if "latex" in d else None
    labels = _rows_cols(result)
    if value is not None:
        shown = _tex_value(value)
        if isinstance(value, (dict, list)) and "\\begin" in shown:
            out.append(shown)
        elif "latex" in d and not isinstance(value, (dict, list)):
            out.append(f"{shown} (exactly ${d['latex']}$)" if exact_text(form) != num(value) else shown)
        else:
            out.append(shown)
    if form is not None and (value is None or isinstance(value, (dict, list))):
        if is_exact(form, "MatrixBase") and labels:
            out.append("Exact form (rows: " + tex(", ".join(labels[0]) or "1") + "; columns: "
                       + tex(", ".join(labels[1])) + "):")
        latex = exact_text(form, _exact_tex)
        if is_exact(form, "MatrixBase") and len(latex) > 100 * form.cols:  # too wide for the page: scaled
            out.append("\\noindent\\resizebox{\\linewidth}{!}{$\\displaystyle\n" + latex + "\n$}")
        else:
            out.append("\\[\n" + latex + "\n\\]")
    elif value is None:
        out.append(tex(d.get("expr", "None")))
    extras = [(k, v) for k, v in d.items() if k not in _META]
    if extras:
        items = []
        for k, v in extras:
            raw = result.extras.get(k)
            if is_exact(raw) and raw.free_symbols:
                body = f"${exact_latex(raw)}$"
            elif isinstance(v, str) and _looks_exact(v) and _sympify(v) is not None:
                body = f"${exact_latex(_sympify(v))}$"
            else:
                body = _tex_value(v) if not isinstance(v, str) else tex(v)
            items.append(f"\\item[{tex(k)}] {body}")
        out.append("\\begin{description}\n" + "\n".join(items) + "\n\\end{description}")
    return "\n\n".join(out)


def comparison_latex(document: Any) -> str:
    """A comparison document in LaTeX: a table scaled to the page and its notes per block."""
    parts = []
    for b in blocks(document):
        if b.header:
            table = _tabular([tex(h) for h in b.header], [[tex(x) for x in r] for r in b.rows])
            parts.append(r"\paragraph{" + tex(b.title) + "}\n\n\\noindent\\resizebox{\\linewidth}{!}{" + table + "}")
        else:
            parts.append(r"\paragraph{" + tex(b.title) + "}")
        if b.notes:
            parts.append("\\begin{itemize}\n" + "\n".join(r"\item " + tex(n) for n in b.notes)
                         + "\n\\end{itemize}")
    return "\n\n".join(parts)


def render_latex(title: str | None, results: Mapping[str, Any]) -> str:
    out = [r"\documentclass{article}", r"\usepackage{amsmath}", r"\usepackage{graphicx}",
           r"\usepackage[T1]{fontenc}", r"\usepackage{lmodern}",
           r"\setlength{\emergencystretch}{3em}", r"\begin{document}"]
    if title:
        out += [r"\section*{" + tex(title) + "}"]
    for name, r in results.items():
        out += [r"\subsection*{" + tex(name) + " (" + tex(r.kind) + ")}", r.as_latex(), ""]
    out.append(r"\end{document}")
    return "\n".join(out)


# ---- a summary object (statsmodels' Summary) -----------------------------------------------------
class Summary(str):
    """A report that prints as text and renders as HTML, Markdown and LaTeX: what
    ``summary()`` of a result or of :class:`privspec.api.Results` returns (statsmodels'
    ``Summary`` is the model).

    It is the text report itself (a ``str``: ``print``, ``str()``, comparisons and string
    methods see the text, as before), with ``as_text()``, ``as_html()``, ``as_markdown()``
    and ``as_latex()`` rendered by this module's renderers when asked, and
    ``_repr_html_``/``_repr_markdown_`` so that a notebook shows the HTML.

    Examples
    --------
    >>> s = Summary("w: 0.25", markdown=lambda: "**w**: 0.25")
    >>> s == "w: 0.25", s.as_markdown(), s.as_html()
    (True, '**w**: 0.25', '<pre>w: 0.25</pre>')
    >>> s
    w: 0.25
    """

    def __new__(cls, text: str, *, html: Any = None, markdown: Any = None, latex: Any = None) -> "Summary":
        obj = super().__new__(cls, text)
        obj._renderers = {"html": html, "markdown": markdown, "latex": latex}
        return obj

    def __reduce__(self) -> tuple:  # copies and pickles keep the text (the renderers are closures)
        return (Summary, (self.as_text(),))

    def _render(self, fmt: str) -> str | None:
        fn = getattr(self, "_renderers", {}).get(fmt)
        return None if fn is None else fn()

    def as_text(self) -> str:
        """The text report (what ``print`` shows)."""
        return str.__str__(self)

    def as_html(self) -> str:
        """An HTML fragment (the result's table; the text in ``<pre>`` where there is none)."""
        out = self._render("html")
        return out if out is not None else f"<pre>{html.escape(self.as_text())}</pre>"

    def as_markdown(self) -> str:
        """Markdown (what ``--format markdown`` prints)."""
        out = self._render("markdown")
        return out if out is not None else "```\n" + self.as_text() + "\n```"

    def as_latex(self) -> str:
        """LaTeX (what ``--format latex`` prints; for one result, the body without a document)."""
        out = self._render("latex")
        return out if out is not None else r"\begin{verbatim}" + "\n" + self.as_text() + "\n" + r"\end{verbatim}"

    def __str__(self) -> str:
        return self.as_text()

    def __repr__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()

    def _repr_markdown_(self) -> str:
        return self.as_markdown()


def render(fmt: str, title: str | None, results: Mapping[str, Any], model: Any = None, verbose: bool = False) -> str:
    """A report of ``results`` in ``text``, ``markdown`` or ``latex`` (``model``: the spec's
    model graph or an object with ``captions``, for the text's captions (:func:`caption`);
    ``verbose``: every extra in the text)."""
    if fmt == "markdown":
        return render_markdown(title, results)
    if fmt == "latex":
        return render_latex(title, results)
    return render_text(title, results, model, verbose)
