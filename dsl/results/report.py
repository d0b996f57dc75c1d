"""Readable renderings of query results: text, Markdown and LaTeX (issue 16).

The JSON contract (:meth:`privspec.results.values.Result.to_dict`) is the source of every
number shown here; this module only lays it out:

* **text** -- ``NAME (KIND): VALUE`` then one ``    key = value`` line per extra.
  Matrices and joint tables are aligned grids under their row and column labels (a
  slice per extra dimension of a table), mappings too long for one line become one
  line per key, long strings are folded, exact forms are written as a statistician
  writes them (``e``, ``inf``, ``x^2``) and only when short (the full forms are in
  the JSON and LaTeX output).  No line is longer than :data:`MAX_LINE` characters
  except a label or a number that is itself longer.
* **markdown** -- ``## TITLE``, ``### NAME (KIND)`` per query, Markdown tables for
  vectors, matrices and joint tables, the extras as a two-column table.
* **latex** -- a complete ``article`` (amsmath), a section per query, names escaped,
  matrices as ``tabular`` with labels (and ``bmatrix`` for exact forms, scaled to the
  page's width when too wide), extras as a ``description``.  It compiles with ``pdflatex``.

Examples
--------
>>> import sympy
>>> from privspec.results.values import Result
>>> print(text_summary(Result("coverage", sympy.Rational(5131, 7500), {"metric": "size"})))
0.684133 (exactly 5131/7500)
    metric = size
>>> plain("-E/(E + 4) + 1"), plain("oo"), plain("2*exp(-1/2)/(1 - exp(-1/2))**2")
('-e/(e + 4) + 1', 'inf', '2*exp(-1/2)/(1 - exp(-1/2))^2')
"""
from __future__ import annotations

import math
import re
import textwrap
from typing import Any, Mapping

import sympy

#: the longest line the text report writes (longer only for one unbreakable word)
MAX_LINE = 100
#: a grid wider than this is printed in bands of columns
WIDE = 160
#: exact forms longer than this are not repeated after the number in text (``(exactly ...)``)
EXACT_INLINE = 60
#: symbolic exact forms longer than this are folded over several lines in text
FOLD = 80

_META = ("kind", "value", "expr", "latex")
#: a number smaller than this fraction of the largest magnitude beside it (in the same
#: matrix, vector or list) is rounding noise: the readable reports show it as 0 (JSON keeps it)
NOISE = 1e-12
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

    >>> from_plain("-e/(e + 4) + 1") == -sympy.E / (sympy.E + 4) + 1
    True
    """
    s = re.sub(r"\binf\b", "oo", text.replace("^", "**"))
    return sympy.sympify(s, locals={"e": sympy.E})


def _num(x: Any) -> str:
    """A JSON scalar as the text shows it: floats to 6 significant digits."""
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def _fold(s: str, width: int, indent: str) -> str:
    """``s`` folded at spaces to lines of at most ``width`` characters (after the first,
    each starts with ``indent``)."""
    if len(s) <= width:
        return s
    lines = textwrap.wrap(s, width=width, subsequent_indent=indent, break_long_words=False,
                          break_on_hyphens=False)
    return "\n".join(lines)


# ---- rounding noise ------------------------------------------------------------------------------
def _floats(v: Any) -> list[float]:
    if isinstance(v, bool):
        return []
    if isinstance(v, (int, float)):
        return [float(v)]
    if isinstance(v, list):
        return [x for item in v for x in _floats(item)]
    return []


def _zeroed(v: Any, floor: float) -> Any:
    if isinstance(v, list):
        return [_zeroed(x, floor) for x in v]
    if isinstance(v, float) and abs(v) < floor:
        return 0.0
    return v


def denoise(v: Any) -> Any:
    """A JSON value with rounding noise shown as 0: in each matrix, joint table, vector
    (a mapping of numbers) or list of numbers, an entry smaller in magnitude than
    :data:`NOISE` times the largest one becomes 0.0 (nested mappings: each container
    on its own scale).  For the readable reports only; the JSON keeps every bit.

    Examples
    --------
    >>> denoise([0.75, 0.4738, -6.59195e-17])
    [0.75, 0.4738, 0.0]
    >>> denoise({"a": 1e-20, "b": 2e-20})      # small, but not small beside each other
    {'a': 1e-20, 'b': 2e-20}
    >>> denoise({"rows": ["a"], "cols": ["x", "y"], "data": [[1.0, 3e-15]]})["data"]
    [[1.0, 0.0]]
    """
    def floor(values: list[float]) -> float:
        finite = [abs(x) for x in values if math.isfinite(x)]
        return NOISE * max(finite, default=0.0)

    if _is_matrix(v) or _is_table(v):
        return {**v, "data": _zeroed(v["data"], floor(_floats(v["data"])))}
    if _is_step(v):
        return {**v, "mass": _zeroed(v["mass"], floor(_floats(v["mass"])))}
    if isinstance(v, list):
        if all(isinstance(x, (list, int, float)) and not isinstance(x, bool) for x in v):
            return _zeroed(v, floor(_floats(v)))
        return [denoise(x) for x in v]
    if isinstance(v, dict):
        scalars = [x for x in v.values() if isinstance(x, (int, float)) and not isinstance(x, bool)]
        if v and len(scalars) == len(v):                      # a vector over labels
            return {k: _zeroed(x, floor(scalars)) for k, x in v.items()}
        return {k: denoise(x) for k, x in v.items()}
    return v


def shown_dict(result: Any) -> dict:
    """``result.to_dict()`` as the readable reports show it: rounding noise as 0 in the
    value and in each extra (:func:`denoise`)."""
    return {k: (x if k in _META[2:] else denoise(x)) for k, x in result.to_dict().items()}


# ---- text ----------------------------------------------------------------------------------------
def _is_matrix(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"rows", "cols", "data"}


def _is_table(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"variables", "labels", "shape", "data"}


def _is_step(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"intervals", "mass"}


def _grid(rows: list[str], cols: list[str], data: list[list[str]], indent: str = "",
          corner: str = "") -> list[str]:
    """An aligned grid: a header of column labels, then a label and cells per row."""
    first = max([len(corner)] + [len(r) for r in rows]) + 2
    width = max([12] + [len(c) + 2 for c in cols] + [len(x) + 2 for r in data for x in r])
    per = max(1, (WIDE - len(indent) - first) // width)  # columns per band: a wide grid in bands
    lines: list[str] = []
    for start in range(0, max(len(cols), 1), per):
        part = slice(start, start + per)
        if per < len(cols):
            lines.append(indent + f"(columns {start + 1}-{min(start + per, len(cols))} of {len(cols)})")
        lines.append(indent + f"{corner:<{first}}" + "".join(f"{c:>{width}}" for c in cols[part]))
        for r, row in zip(rows, data):
            lines.append(indent + f"{r:<{first}}" + "".join(f"{x:>{width}}" for x in row[part]))
    return [ln.rstrip() if ln.strip() else ln for ln in lines]


def _matrix_text(v: dict, indent: str = "") -> str:
    return "\n" + "\n".join(_grid([str(r) for r in v["rows"]], [str(c) for c in v["cols"]],
                                  [[_num(x) for x in row] for row in v["data"]], indent))


def _table_text(v: dict, indent: str = "") -> str:
    """A joint table: a vector for one variable, a grid for two, a grid per slice of the
    leading variables for more."""
    names, labels, data = v["variables"], v["labels"], v["data"]
    if len(names) == 1:
        return _inline_or_block(dict(zip(labels[0], data)), indent)
    lines = []
    corner = f"{names[-2]} \\ {names[-1]}"

    def walk(prefix: list[str], sub: Any, depth: int) -> None:
        if depth == len(names) - 2:
            if prefix:
                lines.append(indent + "[" + ", ".join(prefix) + "]")
            lines.extend(_grid([str(x) for x in labels[-2]], [str(x) for x in labels[-1]],
                               [[_num(x) for x in row] for row in sub], indent, corner))
            return
        for lab, part in zip(labels[depth], sub):
            walk(prefix + [f"{names[depth]} = {lab}"], part, depth + 1)

    walk([], data, 0)
    return "\n" + "\n".join(lines)


def _inline(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_inline(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_inline(x) for x in v) + "]"
    return _num(v)


def _uniform_rows(v: dict) -> bool:
    """A mapping of mappings with the same keys and scalar, space-free values: a grid."""
    if len(v) < 2 or not all(isinstance(x, dict) and x for x in v.values()):
        return False
    keys = [list(x) for x in v.values()]
    if any(k != keys[0] for k in keys):
        return False
    cells = [_num(c) for x in v.values() for c in x.values()]
    return all(not isinstance(c, (dict, list)) for x in v.values() for c in x.values()) \
        and all(" " not in c for c in cells) and all(" " not in str(k) for k in [*v, *keys[0]])


def _interval(a: Any, b: Any) -> str:
    """An innermost interval ``(a, b]``; a point mass ``[a, a]``."""
    return f"[{_num(a)}, {_num(b)}]" if a == b else f"({_num(a)}, {_num(b)}]"


def _inline_or_block(v: Any, indent: str) -> str:
    """A value after ``key: `` or ``key = ``: inline when it fits, else a block below."""
    if _is_matrix(v):
        return _matrix_text(v, indent)
    if _is_table(v):
        return _table_text(v, indent)
    if _is_step(v):
        rows = [_interval(a, b) for a, b in v["intervals"]]
        return "\n" + "\n".join(_grid(rows, ["mass"], [[_num(m)] for m in v["mass"]], indent, "interval"))
    if isinstance(v, dict) and any(_grid_like(x) for x in v.values()):  # moments, intervals: a block each
        return "".join(f"\n{indent}  {k}: " + _inline_or_block(x, indent + "    ") for k, x in v.items())
    text = _inline(v)
    if len(indent) + len(text) <= MAX_LINE or not isinstance(v, (dict, list)) or not v:
        return text
    if isinstance(v, dict) and _uniform_rows(v):
        cols = [str(k) for k in next(iter(v.values()))]
        return "\n" + "\n".join(_grid([str(k) for k in v], cols,
                                      [[_num(c) for c in x.values()] for x in v.values()], indent + "  "))
    if isinstance(v, dict):
        return "".join(f"\n{indent}  {k}: " + (_fold(f"{indent}  {k}: {x}", MAX_LINE, indent + "      ")
                                                [len(f"{indent}  {k}: "):] if isinstance(x, str) else
                                                _inline_or_block(x, indent + ("    " if _grid_like(x) else "  ")))
                       for k, x in v.items())
    if all(not isinstance(x, (dict, list)) for x in v):  # numbers or labels: folded
        return _fold(text, MAX_LINE - len(indent) - 8, indent + "    ")
    return "".join(f"\n{indent}  - " + _inline_or_block(x, indent + ("    " if _grid_like(x) else "  ")) for x in v)


def _grid_like(v: Any) -> bool:
    """A value drawn as a grid below its key (indented under it)."""
    return _is_matrix(v) or _is_table(v) or _is_step(v)


def _symbolic_text(form: Any, expr: str, labels: tuple[list[str], list[str]] | None) -> str:
    """A symbolic exact form in text: a grid of entries under their labels, the form, or a
    fold of it; a matrix whose entries are too long is summarised (its form is in the JSON
    and LaTeX output)."""
    if isinstance(form, sympy.MatrixBase):
        entries = [[plain(str(form[i, j])) for j in range(form.cols)] for i in range(form.rows)]
        syms = ", ".join(sorted(str(s) for s in form.free_symbols))
        if max(len(x) for r in entries for x in r) > 24:
            return (f"a {form.rows} x {form.cols} matrix in {syms}; its exact form is "
                    f"{len(expr):,} characters long: see --format json or latex")
        rows, cols = labels or ([], [])
        rows = rows if len(rows) == form.rows else [str(i + 1) for i in range(form.rows)]
        cols = cols if len(cols) == form.cols else [str(j + 1) for j in range(form.cols)]
        return "\n" + "\n".join(_grid(rows, cols, entries))
    return _fold(plain(expr), MAX_LINE, " " * 8)


def _looks_exact(s: str) -> bool:
    """A string that is sympy's spelling of an exact form (a symbolic extra: a trace in eps)."""
    return bool(re.fullmatch(r"[\w\s*+\-/().]+", s)) and ("*" in s or "/" in s) \
        and not re.search(r"\w\s+[\w(]", s)


def _sympify(s: str) -> Any:
    try:
        return sympy.sympify(s)
    except (sympy.SympifyError, SyntaxError, TypeError, ValueError):
        return None


def _rows_cols(result: Any) -> tuple[list[str], list[str]] | None:
    from privspec.results.values import Matrix, Vector

    v = result.value
    if isinstance(v, Matrix):
        return [str(r) for r in v.rows], [str(c) for c in v.cols]
    if isinstance(v, Vector):
        return [""], [str(x) for x in v.labels]
    return None


def _text_block(block: Any, indent: str = "  ") -> list[str]:
    """A comparison table as text: left-aligned columns, in bands of columns (the first
    repeated) where it would pass :data:`WIDE`; its notes folded below it."""
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
        lines.append(_fold(f"{indent}  - {note}", MAX_LINE, indent + "    "))
    return lines


def text_summary(result: Any, verbose: bool = True) -> str:
    """A result as text: the value, then ``    key = value`` per extra (without
    ``verbose``, not the extras in :data:`DETAILS`)."""
    from privspec.results.values import _sympy_form

    if result.kind == "comparison":
        from privspec.results.comparison_tables import blocks

        return "\n" + "\n".join(line for b in blocks(result.value) for line in _text_block(b) + [""]).rstrip()
    d = shown_dict(result)
    value, expr = d["value"], d.get("expr")
    if value is None and expr is not None:
        text = _symbolic_text(_sympy_form(result.value), expr, _rows_cols(result))
    else:
        text = _inline_or_block(value, "")
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
            exact = isinstance(raw, sympy.Basic) and raw.free_symbols or _looks_exact(v)
            shown = _fold(f"    {k} = {plain(v) if exact else v}", MAX_LINE, " " * 8)[len(f"    {k} = "):]
        else:
            shown = _inline_or_block(v, "      " if _grid_like(v) else "    ")
        lines.append(f"    {k} = {shown}")
    return "\n".join(lines)


def caption(model: Any, name: str) -> str | None:
    """What the query (or compare block) ``name`` of ``model`` answers, in one plain line
    (:func:`privspec.model.query_kinds.describe`); None where the model does not declare it."""
    from privspec.model.query_kinds import describe, describe_compare

    if model is None:
        return None
    if name in getattr(model, "queries", {}):
        return describe(model.queries[name])
    if name in getattr(model, "compares", {}):
        return describe_compare(model.compares[name])
    return None


def render_text(title: str | None, results: Mapping[str, Any], model: Any = None, verbose: bool = False) -> str:
    """The text report: the title, then per query a caption saying what it answers (when
    ``model`` declares it), ``NAME (KIND): VALUE`` and its extras, a blank line between
    queries.  Without ``verbose`` the extras in :data:`DETAILS` are left out."""
    lines = [title] if title else []
    for name, r in results.items():
        text = caption(model, name)
        if text is not None:
            if lines:
                lines.append("")
            lines.append(_fold(text[0].upper() + text[1:], MAX_LINE, "  "))
        lines.append(f"{name} ({r.kind}): {text_summary(r, verbose)}")
    return "\n".join(lines)


# ---- Markdown ------------------------------------------------------------------------------------
def _md(s: Any) -> str:
    """Text for Markdown, escaped once (:func:`privspec.results.render.md`: HTML and Markdown specials)."""
    from privspec.results.render import md

    return md(s)


def _md_math(latex: str) -> str:
    """Inline math for a Markdown table cell (its pipes escaped)."""
    return "$" + latex.replace("|", "\\|") + "$"


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _md_value(v: Any) -> list[str] | None:
    """Markdown table lines for a structured value, or None for an inline one."""
    if _is_matrix(v):
        return _md_table([" "] + [_md(c) for c in v["cols"]],
                         [[f"**{_md(r)}**"] + [_md(_num(x)) for x in row] for r, row in zip(v["rows"], v["data"])])
    if _is_table(v):
        names, labels, data = v["variables"], v["labels"], v["data"]
        if len(names) == 1:
            return _md_table([_md(x) for x in labels[0]], [[_md(_num(x)) for x in data]])
        out: list[str] = []

        def walk(prefix: list[str], sub: Any, depth: int) -> None:
            if depth == len(names) - 2:
                if prefix:
                    out.extend(["", "*" + _md(", ".join(prefix)) + "*", ""])
                out.extend(_md_table([_md(f"{names[-2]} \\ {names[-1]}")] + [_md(x) for x in labels[-1]],
                                     [[f"**{_md(r)}**"] + [_md(_num(x)) for x in row]
                                      for r, row in zip(labels[-2], sub)]))
                return
            for lab, part in zip(labels[depth], sub):
                walk(prefix + [f"{names[depth]} = {lab}"], part, depth + 1)

        walk([], data, 0)
        return out
    if _is_step(v):
        return _md_table(["interval", "mass"], [[_interval(a, b), _md(_num(m))]
                                                for (a, b), m in zip(v["intervals"], v["mass"])])
    if isinstance(v, dict) and v and all(not isinstance(x, (dict, list)) for x in v.values()):
        return _md_table([_md(k) for k in v], [[_md(_num(x)) for x in v.values()]])
    if isinstance(v, dict) and _uniform_rows_any(v) and not any(_grid_like(x) for x in v.values()):
        cols = list(next(iter(v.values())))
        return _md_table([" "] + [_md(c) for c in cols],
                         [[f"**{_md(k)}**"] + [_md(_inline(x[c])) for c in cols] for k, x in v.items()])
    if isinstance(v, dict) and any(_grid_like(x) for x in v.values()):  # moments, intervals: a table each
        out = []
        for k, x in v.items():
            out += ["", f"*{_md(k)}*", ""] + (_md_value(x) or [_md(_inline(x))])
        return out[1:]
    if isinstance(v, dict) and v:
        return _md_table(["key", "value"], [[_md(k), _md(_inline(x))] for k, x in v.items()])
    return None


def _uniform_rows_any(v: dict) -> bool:
    if not v or not all(isinstance(x, dict) and x for x in v.values()):
        return False
    keys = [list(x) for x in v.values()]
    return all(k == keys[0] for k in keys)


def markdown_summary(result: Any) -> str:
    """A result in Markdown: the value (a table where it has labels), then the extras."""
    from privspec.results.values import _sympy_form

    if result.kind == "comparison":
        from privspec.results.comparison_tables import blocks

        parts = []
        for b in blocks(result.value):
            parts += [f"**{_md(b.title)}**", ""] + _md_table([_md(h) for h in b.header],
                                                            [[_md(x) for x in r] for r in b.rows])
            parts += [""] + [f"- {_md(n)}" for n in b.notes] + ([""] if b.notes else [])
        return "\n".join(parts).rstrip()
    d = shown_dict(result)
    value, expr = d["value"], d.get("expr")
    out: list[str] = []
    form = _sympy_form(result.value) if value is None else None
    labels = _rows_cols(result)
    if isinstance(form, sympy.MatrixBase) and labels and (form.rows, form.cols) == (len(labels[0]), len(labels[1])):
        out += _md_table([" "] + [_md(c) for c in labels[1]],
                         [[f"**{_md(r)}**"] + [_md_math(sympy.latex(form[i, j])) for j in range(form.cols)]
                          for i, r in enumerate(labels[0])])
    elif value is None and expr is not None:
        out.append(f"$$\n{d['latex']}\n$$" if "latex" in d else f"`{expr}`")
    else:
        table = _md_value(value)
        if table:
            out += table
        else:
            line = _md(_inline(value))
            if expr is not None and not isinstance(value, (dict, list)) and plain(expr) != line:
                line += f" (exactly ${d['latex']}$)" if len(expr) <= 2000 else ""
            out.append(f"**value**: {line}")
    extras = [(k, v) for k, v in d.items() if k not in _META]
    simple = [(k, v) for k, v in extras if _md_value(v) is None]
    if simple:
        rows = []
        for k, v in simple:
            raw = result.extras.get(k)
            if isinstance(raw, sympy.Basic) and raw.free_symbols:
                cell = _md_math(sympy.latex(raw))
            elif isinstance(v, str) and _looks_exact(v) and _sympify(v) is not None:
                cell = _md_math(sympy.latex(_sympify(v)))
            else:
                cell = _md(_inline(v))
            rows.append([_md(k), cell])
        out += [""] + _md_table(["extra", "value"], rows)
    for k, v in extras:
        table = _md_value(v)
        if table:
            out += ["", f"**{_md(k)}**:", ""] + table
    return "\n".join(out)


def render_markdown(title: str | None, results: Mapping[str, Any]) -> str:
    parts = [f"## {_md(title)}"] if title else []
    for name, r in results.items():
        parts.append(f"### {_md(name)} ({_md(r.kind)})\n\n{markdown_summary(r)}")
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
    if _is_matrix(v):
        return _tabular([""] + [tex(c) for c in v["cols"]],
                        [[tex(r)] + [_tex_num(x) for x in row] for r, row in zip(v["rows"], v["data"])])
    if _is_table(v):
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
    if _is_step(v):
        return _tabular(["interval", "mass"], [[tex(_interval(a, b)), _tex_num(m)]
                                               for (a, b), m in zip(v["intervals"], v["mass"])])
    if isinstance(v, dict) and v and all(not isinstance(x, (dict, list)) for x in v.values()):
        return _tabular([tex(k) for k in v], [[_tex_num(x) for x in v.values()]], label_col=False)
    if isinstance(v, dict) and _uniform_rows_any(v) and len(v) > 1 and not any(_grid_like(x) for x in v.values()):
        cols = list(next(iter(v.values())))
        return _tabular([""] + [tex(c) for c in cols],
                        [[tex(k)] + [tex(_inline(x[c])) for c in cols] for k, x in v.items()])
    if isinstance(v, dict) and v:
        return "\\begin{description}\n" + "\n".join(f"\\item[{tex(k)}] " + _tex_value(x) for k, x in v.items()) \
            + "\n\\end{description}"
    if isinstance(v, list):
        return tex(_inline(v))
    return _tex_num(v)


def _exact_tex(form: Any) -> str:
    if isinstance(form, sympy.MatrixBase):
        return sympy.latex(form, mat_str="bmatrix", mat_delim="")
    return sympy.latex(form)


def latex_body(result: Any) -> str:
    """A result in LaTeX (no document around it): value, exact form, extras."""
    from privspec.results.values import _sympy_form, exact_text

    if result.kind == "comparison":
        from privspec.results.comparison_tables import blocks

        parts = []
        for b in blocks(result.value):
            table = _tabular([tex(h) for h in b.header], [[tex(x) for x in r] for r in b.rows])
            parts.append(r"\paragraph{" + tex(b.title) + "}\n\n\\noindent\\resizebox{\\linewidth}{!}{" + table + "}")
            if b.notes:
                parts.append("\\begin{itemize}\n" + "\n".join(r"\item " + tex(n) for n in b.notes)
                             + "\n\\end{itemize}")
        return "\n\n".join(parts)
    d = shown_dict(result)
    value = d["value"]
    out: list[str] = []
    form = _sympy_form(result.value) if "latex" in d else None
    labels = _rows_cols(result)
    if value is not None:
        shown = _tex_value(value)
        if isinstance(value, (dict, list)) and "\\begin" in shown:
            out.append(shown)
        elif "latex" in d and not isinstance(value, (dict, list)):
            out.append(f"{shown} (exactly ${d['latex']}$)" if exact_text(form) != _num(value) else shown)
        else:
            out.append(shown)
    if form is not None and (value is None or isinstance(value, (dict, list))):
        if isinstance(form, sympy.MatrixBase) and labels:
            out.append("Exact form (rows: " + tex(", ".join(labels[0]) or "1") + "; columns: "
                       + tex(", ".join(labels[1])) + "):")
        latex = exact_text(form, _exact_tex)
        if isinstance(form, sympy.MatrixBase) and len(latex) > 100 * form.cols:  # too wide for the page: scaled
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
            if isinstance(raw, sympy.Basic) and raw.free_symbols:
                body = f"${sympy.latex(raw)}$"
            elif isinstance(v, str) and _looks_exact(v) and _sympify(v) is not None:
                body = f"${sympy.latex(_sympify(v))}$"
            else:
                body = _tex_value(v) if not isinstance(v, str) else tex(v)
            items.append(f"\\item[{tex(k)}] {body}")
        out.append("\\begin{description}\n" + "\n".join(items) + "\n\\end{description}")
    return "\n\n".join(out)


def render_latex(title: str | None, results: Mapping[str, Any]) -> str:
    out = [r"\documentclass{article}", r"\usepackage{amsmath}", r"\usepackage{graphicx}",
           r"\usepackage[T1]{fontenc}", r"\usepackage{lmodern}",
           r"\setlength{\emergencystretch}{3em}", r"\begin{document}"]
    if title:
        out += [r"\section*{" + tex(title) + "}"]
    for name, r in results.items():
        out += [r"\subsection*{" + tex(name) + " (" + tex(r.kind) + ")}", latex_body(r), ""]
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
        import html

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
    model graph, for the text's captions; ``verbose``: every extra in the text)."""
    if fmt == "markdown":
        return render_markdown(title, results)
    if fmt == "latex":
        return render_latex(title, results)
    return render_text(title, results, model, verbose)
