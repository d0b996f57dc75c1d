"""Rendered reports carry the same numbers as the JSON (issue 15).

``privspec analyze SPEC --format text|markdown|latex|json`` for three bundled specs: the
text and Markdown reports are parsed back (values, matrices with their row and column
labels, vectors and mappings, lists, every extra) and compared with the JSON entry of
each query, numbers to the 6 significant digits the text shows; the LaTeX report shows
each exact form as the JSON's ``latex`` (itself the LaTeX of the JSON's exact ``expr``,
which evaluates to the JSON number) and its numbers in tables.  The layout is issue 16's:
text grids and folded lines, Markdown tables, a LaTeX document.
"""
from __future__ import annotations

import html
import io
import json
import math
import re
from pathlib import Path

import pytest
import sympy

import privspec
from privspec.cli import main
from privspec.results.render import md as md_escape
from privspec.model.query_kinds import describe
from privspec.results.report import from_plain, plain

SPECS = Path(__file__).resolve().parent.parent / "specs"
NAMES = ["urn", "randomized_response", "releases"]
#: NAMES as parameters: randomized_response's analysis takes seconds, so its cases are slow
NAME_PARAMS = [n if n != "randomized_response" else pytest.param(n, marks=pytest.mark.slow) for n in NAMES]
#: the text shows floats with 6 significant digits (``f"{x:.6g}"``)
REL = 5e-6


def analyze(name: str, fmt: str) -> str:
    """The report in ``fmt``; text with ``--verbose`` (every extra, as in the other formats)."""
    out, err = io.StringIO(), io.StringIO()
    verbose = ["--verbose"] if fmt == "text" else []
    status = main(["analyze", str(SPECS / f"{name}.privspec"), "--format", fmt, *verbose], stdout=out, stderr=err)
    assert status == 0, err.getvalue()
    return out.getvalue()


_CACHE: dict = {}


def report(name: str, fmt: str) -> str:
    if (name, fmt) not in _CACHE:
        _CACHE[name, fmt] = analyze(name, fmt)
    return _CACHE[name, fmt]


def queries(name: str) -> dict:
    doc = json.loads(report(name, "json"))
    assert doc["queries"], "no queries answered"
    return doc["queries"]


def noise_free(v):
    """A JSON value as the readable reports show it: in each matrix, joint table, vector
    (mapping of numbers) or list of numbers, entries below 1e-12 of its largest magnitude
    are 0 (rounding noise; the JSON keeps them)."""
    def numbers(x):
        if isinstance(x, list):
            return [y for item in x for y in numbers(item)]
        return [abs(x)] if isinstance(x, float) and math.isfinite(x) else \
            [abs(x)] if isinstance(x, int) and not isinstance(x, bool) else []

    def zero(x, floor):
        if isinstance(x, list):
            return [zero(y, floor) for y in x]
        return 0.0 if isinstance(x, float) and abs(x) < floor else x

    if isinstance(v, dict) and ("data" in v and set(v) in ({"rows", "cols", "data"}, {"variables", "labels", "shape",
                                                                                        "data"})):
        return {**v, "data": zero(v["data"], 1e-12 * max(numbers(v["data"]), default=0))}
    if isinstance(v, dict) and set(v) == {"intervals", "mass"}:
        return {**v, "mass": zero(v["mass"], 1e-12 * max(numbers(v["mass"]), default=0))}
    if isinstance(v, list) and all(isinstance(x, (list, int, float)) and not isinstance(x, bool) for x in v):
        return zero(v, 1e-12 * max(numbers(v), default=0))
    if isinstance(v, list):
        return [noise_free(x) for x in v]
    if isinstance(v, dict) and v and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v.values()):
        return {k: zero(x, 1e-12 * max(numbers(list(v.values())), default=0)) for k, x in v.items()}
    if isinstance(v, dict):
        return {k: noise_free(x) for k, x in v.items()}
    return v


def shown_queries(name: str) -> dict:
    """The JSON entries as the readable reports show them (:func:`noise_free`; exact forms as they are)."""
    return {q: {k: x if k in ("expr", "latex") else noise_free(x) for k, x in entry.items()}
            for q, entry in queries(name).items()}


# ---- parsing the text rendering back ------------------------------------------------------------
class Num(float):
    """A number as rendered: its value and its text."""

    def __new__(cls, text: str):
        obj = super().__new__(cls, text)
        obj.text = text
        return obj


_NUMBER = re.compile(r"^-?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)$")


def parse_inline(s: str):
    """``{k: v, ...}``, ``[a, b]`` and scalars as the text renders them -> Python values
    (numbers as float, the rest as strings)."""
    value, rest = _parse(s.strip(), 0)
    assert s.strip()[rest:].strip() == "", (s, rest)
    return value


def _parse(s: str, i: int):
    if s.startswith("{", i):
        out, i = {}, i + 1
        while not s.startswith("}", i):
            key, i = _until(s, i, ":")
            val, i = _parse(s, i + 2)                 # ": "
            out[key.strip()] = val
            if s.startswith(", ", i):
                i += 2
        return out, i + 1
    if s.startswith("[", i):
        out, i = [], i + 1
        while not s.startswith("]", i):
            val, i = _parse(s, i)
            out.append(val)
            if s.startswith(", ", i):
                i += 2
        return out, i + 1
    token, j = _until(s, i, ",}]")
    token = token.strip()
    return (Num(token) if _NUMBER.match(token) else token), j


def _until(s: str, i: int, stops: str):
    """The text from i to the first of ``stops`` outside brackets."""
    depth, j = 0, i
    while j < len(s):
        c = s[j]
        if c in "{[":
            depth += 1
        elif c in "}]":
            if depth == 0 and c in stops:
                break
            depth -= 1
        elif depth == 0 and c in stops:
            break
        j += 1
    return s[i:j], j


def parse_matrix(lines: list[str]) -> dict:
    """A matrix block: a header of column labels, then one line per row: label, numbers."""
    lines = [ln for ln in lines if ln.strip()]
    cols = lines[0].split()
    rows, data = [], []
    for ln in lines[1:]:
        parts = ln.split()
        assert len(parts) == len(cols) + 1, (ln, cols)
        rows.append(parts[0])
        data.append([Num(x) if _NUMBER.match(x) else x for x in parts[1:]])
    return {"rows": rows, "cols": cols, "data": data}


_KEY = re.compile(r"^( *)(\S.*?): ?(.*)$")


def parse_value(text: str):
    """A rendered value: inline, or a block starting on the next line: a grid (a matrix,
    or a mapping of mappings), or one ``key: value`` line per key (nested blocks indented
    two more spaces; moments: ``  Q: `` then the matrix)."""
    if not text.startswith("\n"):
        return parse_inline(text)
    return _block([ln for ln in text.split("\n")[1:] if ln.strip()])


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block(lines: list[str]):
    if ":" not in lines[0]:                             # a grid has no key lines
        return parse_matrix(lines)
    level = _indent(lines[0])
    out, i = {}, 0
    while i < len(lines):
        m = _KEY.match(lines[i])
        assert m and _indent(lines[i]) == level, (lines[i], level)
        j = i + 1
        while j < len(lines) and _indent(lines[j]) > level:
            j += 1
        rest = m.group(3).strip()
        out[m.group(2)] = parse_inline(rest) if rest else _block(lines[i + 1:j])
        assert not rest or j == i + 1, lines[i:j]
        i = j
    return out


def unfold(text: str) -> str:
    """A folded line (continuations indented by 8 spaces) back to one line."""
    return re.sub(r"\n {8}", " ", text)


def same_exact(shown: str, expr: str, where: str) -> None:
    """An exact form as the text writes it (e, inf, ^) is the JSON's exact form."""
    assert shown == plain(expr), (where, shown, expr)
    diff = from_plain(shown) - sympy.sympify(expr)
    assert diff == 0 or sympy.simplify(diff) == 0, (where, shown, expr)


def same(parsed, expected, where: str) -> None:
    """Parsed text against the JSON value: numbers to 6 significant digits, labels exactly."""
    if isinstance(expected, bool):
        assert parsed == str(expected), (where, parsed, expected)
    elif isinstance(expected, (int, float)):
        # rounded as the text renders it: 6 significant digits for floats, ints in full
        assert isinstance(parsed, Num), (where, parsed, expected)
        shown = f"{expected:.6g}" if isinstance(expected, float) else str(expected)
        assert parsed.text == shown, (where, parsed.text, shown, expected)
        assert math.isclose(float(parsed), expected, rel_tol=REL, abs_tol=1e-300), (where, parsed, expected)
    elif expected is None:
        assert parsed == "None", (where, parsed)
    elif isinstance(expected, str):
        if isinstance(parsed, Num):          # "inf" and the like
            assert parsed.text == expected, (where, parsed.text, expected)
        else:
            assert parsed == expected, (where, parsed, expected)
    elif isinstance(expected, dict) and set(expected) == {"rows", "cols", "data"}:
        assert parsed["rows"] == [str(r) for r in expected["rows"]], (where, parsed["rows"], expected["rows"])
        assert parsed["cols"] == [str(c) for c in expected["cols"]], (where, parsed["cols"], expected["cols"])
        for i, (prow, erow) in enumerate(zip(parsed["data"], expected["data"], strict=True)):
            for j, (p, e) in enumerate(zip(prow, erow, strict=True)):
                same(p, e, f"{where}[{expected['rows'][i]}, {expected['cols'][j]}]")
    elif isinstance(expected, dict):
        if isinstance(parsed, dict) and set(parsed) == {"rows", "cols", "data"}:   # a mapping of mappings as a grid
            parsed = {r: dict(zip(parsed["cols"], row)) for r, row in zip(parsed["rows"], parsed["data"])}
        assert isinstance(parsed, dict) and list(parsed) == [str(k) for k in expected], (where, parsed, expected)
        for k, v in expected.items():
            same(parsed[str(k)], v, f"{where}.{k}")
    elif isinstance(expected, list):
        assert isinstance(parsed, list) and len(parsed) == len(expected), (where, parsed, expected)
        for i, (p, e) in enumerate(zip(parsed, expected)):
            same(p, e, f"{where}[{i}]")
    else:
        raise AssertionError(f"{where}: unexpected JSON value {expected!r}")


def split_summary(summary: str, entry: dict) -> tuple[str, dict[str, str]]:
    """A query's summary -> (the value's text, {extra: its text}); extras are the lines
    ``    key = ...`` in JSON order (a matrix extra continues on the next lines)."""
    keys = [k for k in entry if k not in ("kind", "value", "expr", "latex")]
    lines = summary.split("\n")
    starts = []
    at = 0
    for k in keys:
        while not lines[at].startswith(f"    {k} = "):
            at += 1
            assert at < len(lines), f"extra {k} is not rendered"
        starts.append(at)
    value_text = "\n".join(lines[:starts[0]] if starts else lines)
    extras = {}
    for n, (k, s) in enumerate(zip(keys, starts)):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        extras[k] = "\n".join([lines[s][len(f"    {k} = "):]] + lines[s + 1:end])
    return value_text, extras


def check_summary(summary: str, name: str, entry: dict) -> None:
    """Everything in one query's rendered summary against its JSON entry."""
    value_text, extras = split_summary(summary, entry)
    value, expr = entry["value"], entry.get("expr")
    if value is None:                                   # symbolic: the exact form is shown, or summarised
        assert expr is not None, name
        if expr.startswith("Matrix("):
            form = sympy.sympify(expr)
            if value_text.startswith("\n"):            # a grid of the entries
                grid = parse_matrix(value_text.split("\n")[1:])
                for i, row in enumerate(grid["data"]):
                    for j, x in enumerate(row):
                        same_exact(x, str(form[i, j]), f"{name}[{i}, {j}]")
            else:                                       # too long: its size, and where to find it
                assert value_text.startswith(f"a {form.rows} x {form.cols} matrix in ") \
                    and "--format json or latex" in value_text, (name, value_text)
        else:
            same_exact(unfold(value_text), expr, name)
    else:
        exact = re.match(r"^(.*) \(exactly (.*)\)$", value_text)
        if exact:                                       # "0.684133 (exactly 5131/7500)"
            same_exact(exact.group(2), expr, name)
            value_text = exact.group(1)
        elif expr is not None and not isinstance(value, (dict, list)) and plain(expr) != value_text \
                and len(plain(expr)) <= 60:
            raise AssertionError(f"{name}: the short exact form {expr} is not shown")
        same(parse_value(value_text), value, name)
    for k, text in extras.items():
        v = entry[k]
        if isinstance(v, str) and not (v in ("inf", "-inf")):
            shown = unfold(text)
            if shown != v:                              # an exact form, as the text writes it
                same_exact(shown, v, f"{name}.{k}")
        else:
            same(parse_value(text), v, f"{name}.{k}")


def caption_line(model, name: str) -> str:
    """The text report's caption of a query: :func:`privspec.model.query_kinds.describe`,
    capitalized (folded at 100 characters, continuations indented by 2)."""
    import textwrap

    text = describe(model.queries[name])
    return "\n  ".join(textwrap.wrap(text[0].upper() + text[1:], 100, break_long_words=False,
                                    break_on_hyphens=False))


def text_blocks(text: str, entries: dict, header) -> dict[str, str]:
    """Split a report into the queries' summaries; ``header(name, kind)`` is the regex
    prefix of a query's first line.  Every query of the JSON appears, in JSON order."""
    positions = []
    for name, entry in entries.items():
        m = re.search(header(name, entry["kind"]), text, re.M)
        assert m, f"query {name} ({entry['kind']}) is not in the report"
        positions.append((m.start(), m.end(), name))
    assert [p[2] for p in sorted(positions)] == list(entries), "queries out of order"
    out = {}
    for n, (start, end, name) in enumerate(positions):
        stop = positions[n + 1][0] if n + 1 < len(positions) else len(text)
        out[name] = text[end:stop].rstrip("\n")
    return out


# ---- the tests -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAME_PARAMS)
def test_json_exact_forms_evaluate_to_the_json_numbers(name: str) -> None:
    """The JSON's ``expr`` is the exact form of its ``value`` (sympified and evaluated to
    1e-12), and its ``latex`` is that form's LaTeX (or, where sympy orders the terms
    differently, has the same integers)."""
    for q, entry in queries(name).items():
        if "expr" not in entry:
            continue
        form = sympy.sympify(entry["expr"])
        # the same exact form: LaTeX of the expression (sympify may reorder terms: then the
        # same integers, as many times each)
        if sympy.latex(form) != entry["latex"]:
            assert sorted(re.findall(r"\d+", entry["latex"])) == sorted(re.findall(r"\d+", entry["expr"])), \
                (q, entry["latex"][:200], entry["expr"][:200])
        value = entry["value"]
        if value is None:
            assert form.free_symbols, q
            continue
        if isinstance(value, dict) and "data" in value:
            num = [[float(x) for x in row] for row in sympy.Matrix(form).evalf(20).tolist()]
            for r1, r2 in zip(num, value["data"], strict=True):
                for a, b in zip(r1, r2, strict=True):
                    assert b == "inf" and math.isinf(a) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300), (q, a, b)
        elif isinstance(value, dict):       # a vector shown as a 1-row matrix
            num = [float(x) for x in sympy.Matrix(form).evalf(20)]
            for a, b in zip(num, value.values(), strict=True):
                assert b == "inf" and math.isinf(a) or math.isclose(a, b, rel_tol=1e-12), (q, a, b)
        else:
            assert math.isclose(float(form.evalf(20)), value, rel_tol=1e-12), (q, form, value)


@pytest.mark.parametrize("name", NAME_PARAMS)
def test_text_report_has_the_json_numbers(name: str) -> None:
    """Each query's line ``NAME (KIND): VALUE`` and its extras: scalars, exact forms in
    ``(exactly ...)``, matrices under their row and column labels, vectors and mappings
    key by key, lists entry by entry, strings verbatim."""
    entries = shown_queries(name)
    text = report(name, "text")
    title = json.loads(report(name, "json"))["spec"]
    assert text.split("\n")[0] == title
    model = privspec.load(SPECS / f"{name}.privspec").model
    # each query under its caption (what it answers), a blank line before it
    blocks = text_blocks(text, entries, lambda q, k: rf"^\n{re.escape(caption_line(model, q))}\n"
                                                     rf"{re.escape(q)} \({re.escape(k)}\): ")
    for q, entry in entries.items():
        check_summary(blocks[q], q, entry)


def _md_cells(line: str) -> list[str]:
    assert line.startswith("| ") and line.endswith(" |"), line
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
    # math ($...$) is LaTeX with only its pipes escaped; text has Markdown's escapes
    return [c.replace("\\|", "|") if c.startswith("$") and c.endswith("$") else unmd(c) for c in cells]


def unmd(text: str) -> str:
    """Markdown's escaped text as a viewer shows it: backslash escapes, then HTML's entities."""
    return html.unescape(re.sub(r"\\(.)", r"\1", text))


def md_table(lines: list[str]):
    """A Markdown table back to a JSON-like value: a matrix (blank corner, bold row labels),
    a two-column ``key | value`` mapping, or a one-row mapping (header: the keys)."""
    header = _md_cells(lines[0])
    assert re.fullmatch(r"\|(---\|)+", lines[1]), lines[1]
    rows = [_md_cells(ln) for ln in lines[2:]]
    if header[0] == "":
        assert all(r[0].startswith("**") and r[0].endswith("**") for r in rows), rows
        return {"rows": [r[0][2:-2] for r in rows], "cols": header[1:], "data": [[parse_inline(x) for x in r[1:]]
                                                                                  for r in rows]}
    if header == ["key", "value"]:
        return {r[0]: parse_inline(r[1]) for r in rows}
    assert len(rows) == 1, lines
    return dict(zip(header, (parse_inline(x) for x in rows[0])))


def md_chunks(body: str) -> list[list[str]]:
    return [c.split("\n") for c in body.strip("\n").split("\n\n")]


def check_markdown(body: str, name: str, entry: dict) -> None:
    chunks = md_chunks(body)
    value, expr = entry["value"], entry.get("expr")
    keys = [k for k in entry if k not in ("kind", "value", "expr", "latex")]
    # the value: up to the extras' table or the first structured extra
    n = next((i for i, c in enumerate(chunks) if c[0] == "| extra | value |" or re.fullmatch(r"\*\*.+\*\*:", c[0])),
             len(chunks))
    head, tail = chunks[:n], chunks[n:]
    assert not any(ln.startswith("```") for c in chunks for ln in c), (name, "a code fence")
    if value is None:
        form = sympy.sympify(expr)
        if isinstance(form, sympy.MatrixBase):
            table = [_md_cells(ln) for ln in head[0][2:]]
            for i, row in enumerate(table):
                for j, cell in enumerate(row[1:]):
                    # the entry's LaTeX (sympify may reorder terms: then the same integers, as many times each)
                    assert cell.startswith("$") and cell.endswith("$") and sorted(re.findall(r"\d+", cell)) \
                        == sorted(re.findall(r"\d+", sympy.latex(form[i, j]))), (name, i, j, cell[:100])
        else:
            assert head == [["$$", entry["latex"], "$$"]], (name, head)
    elif head[0][0].startswith("**value**: "):
        text = head[0][0][len("**value**: "):]
        exact = re.match(r"^(.*) \(exactly \$(.*)\$\)$", text)
        if exact:
            assert exact.group(2) == entry["latex"], (name, exact.group(2), entry["latex"])
            text = exact.group(1)
        elif "latex" in entry and plain(expr) != text:
            raise AssertionError(f"{name}: the exact form {expr} is not shown")
        same(parse_inline(unmd(text)), value, name)
    elif len(head) > 1:                                 # several tables under captions (moments)
        parsed, key = {}, None
        for c in head:
            if re.fullmatch(r"\*[^*].*\*", c[0]):
                key = unmd(c[0][1:-1])
            else:
                parsed[key] = md_table(c)
        same(parsed, value, name)
    else:
        same(md_table(head[0]), value, name)
    shown: dict = {}
    for i, c in enumerate(tail):
        if c[0] == "| extra | value |":
            for ln in c[2:]:
                k, cell = _md_cells(ln)
                shown[k] = cell
        elif re.fullmatch(r"\*\*.+\*\*:", c[0]):
            shown[unmd(c[0][2:-3])] = md_table(tail[i + 1])
    assert list(shown) == keys or sorted(shown) == sorted(keys), (name, list(shown), keys)
    for k in keys:
        v, cell = entry[k], shown[k]
        if isinstance(cell, str) and isinstance(v, str) and v not in ("inf", "-inf"):
            if cell != v:                               # an exact form: its LaTeX
                assert cell == f"${sympy.latex(sympy.sympify(v))}$", (name, k, cell, v)
        elif isinstance(cell, str):
            same(parse_inline(cell), v, f"{name}.{k}")
        else:
            same(cell, v, f"{name}.{k}")


@pytest.mark.parametrize("name", NAME_PARAMS)
def test_markdown_report_has_the_json_numbers(name: str) -> None:
    """``## TITLE``, then per query ``### NAME (KIND)``: the value as a table (vectors,
    matrices, mappings) or ``**value**: ...``, the extras in a ``| extra | value |`` table
    and structured extras as tables of their own; no code fences."""
    entries = shown_queries(name)
    md = report(name, "markdown")
    title = json.loads(report(name, "json"))["spec"]
    assert md.split("\n")[0] == f"## {md_escape(title)}"
    blocks = text_blocks(md, entries, lambda q, k: rf"^### {re.escape(md_escape(q))} \({re.escape(md_escape(k))}\)\n\n")
    for q, entry in entries.items():
        check_markdown(blocks[q], q, entry)


_UNTEX = {r"\textbackslash{}": "\\", r"\&": "&", r"\%": "%", r"\$": "$", r"\#": "#", r"\_": "_", r"\{": "{",
          r"\}": "}", r"\textasciitilde{}": "~", r"\textasciicircum{}": "^", r"\textless{}": "<",
          r"\textgreater{}": ">", r"\textbar{}": "|"}


def untex(s: str) -> str:
    return re.sub("|".join(re.escape(k) for k in _UNTEX), lambda m: _UNTEX[m.group(0)], s)


def tex_items(part: str) -> dict[str, str]:
    """The top-level items of a description: {key: its LaTeX}."""
    part = part.strip("\n")
    assert part.startswith("\\begin{description}"), part[:100]
    body = part[len("\\begin{description}"):part.rindex("\\end{description}")]
    out, depth, key, start = {}, 0, None, 0
    for m in re.finditer(r"\\begin\{description\}|\\end\{description\}|^\\item\[(.*?)\] ", body, re.M):
        if m.group(0).startswith("\\begin"):
            depth += 1
        elif m.group(0).startswith("\\end"):
            depth -= 1
        elif depth == 0:
            if key is not None:
                out[key] = body[start:m.start()].strip("\n")
            key, start = untex(m.group(1)), m.end()
    out[key] = body[start:].strip("\n")
    return out


def tex_value(part: str):
    """A value's LaTeX back: a description of values (moments: one per matrix; nested
    mappings), a tabular, or a scalar or list as text."""
    part = part.strip("\n")
    if part.startswith("\\begin{description}"):
        return {k: tex_value(v) for k, v in tex_items(part).items()}
    if "\\begin{tabular}" in part:
        return tex_tabular(part)
    return parse_inline(untex(part))


def tex_tabular(block: str):
    """The first tabular of a block as a value: a matrix (blank corner) or a one-row mapping."""
    body = block[block.index(r"\begin{tabular}"):block.index(r"\end{tabular}")].split("\n")[1:]
    rows = [[untex(c.strip()) for c in ln.removesuffix(r" \\").split(" & ")] for ln in body if ln not in (r"\hline", "")]
    if rows[0][0] == "":
        return {"rows": [r[0] for r in rows[1:]], "cols": rows[0][1:],
                "data": [[parse_inline(x) for x in r[1:]] for r in rows[1:]]}
    assert len(rows) == 2, rows
    return dict(zip(rows[0], (parse_inline(x) for x in rows[1])))


@pytest.mark.parametrize("name", NAME_PARAMS)
def test_latex_report_shows_the_exact_forms(name: str) -> None:
    """A document with ``\\subsection*{NAME (KIND)}`` per query: the exact form as the JSON's
    ``latex`` (a matrix as ``bmatrix``), numbers in ``tabular``s under their labels or
    inline, every extra as a ``description`` item."""
    entries = shown_queries(name)
    tex = report(name, "latex")
    assert tex.startswith("\\documentclass{article}") and tex.rstrip().endswith("\\end{document}")
    blocks = text_blocks(tex, entries, lambda q, k: rf"^\\subsection\*\{{{re.escape(q.replace('_', chr(92) + '_'))} "
                                                    rf"\({re.escape(k.replace('_', chr(92) + '_'))}\)\}}\n")
    exact = 0
    for q, entry in entries.items():
        block = blocks[q].removesuffix("\\end{document}").rstrip("\n")
        value = entry["value"]
        number = f"{value:.6g}" if isinstance(value, float) else str(value)
        if "latex" in entry and entry["latex"] != number:     # (an integer is its own exact form)
            latex = entry["latex"].replace(r"\left[\begin{matrix}", r"\begin{bmatrix}") \
                .replace(r"\end{matrix}\right]", r"\end{bmatrix}")
            if value is not None and not isinstance(value, (dict, list)):
                assert f"${latex}$" in block, (q, block[:300])
            else:                                   # displayed, or scaled to the page when too wide
                assert f"\\[\n{latex}\n\\]" in block or f"{{$\\displaystyle\n{latex}\n$}}" in block, (q, block[:300])
            exact += 1
        if isinstance(value, dict):
            same(tex_value(block.split("\n\n")[0]), value, q)
        elif value is not None:
            first = untex(block.split("\n")[0].split(" (exactly")[0])
            same(parse_inline(first), value, q)
        keys = [k for k in entry if k not in ("kind", "value", "expr", "latex")]
        items = tex_items(block.split("\n\n")[-1]) if keys else {}
        assert list(items) == keys, (q, list(items), keys)
        for k in keys:
            v, body = entry[k], items[k]
            if isinstance(v, str) and v not in ("inf", "-inf"):
                assert untex(body) == v or body == f"${sympy.latex(sympy.sympify(v))}$", (q, k, body)
            else:
                same(tex_value(body), v, f"{q}.{k}")
    assert exact, "no exact form in the LaTeX report"


def _text_mode_parts(tex: str) -> list[str]:
    """The parts of a LaTeX document outside math ($...$, \\[...\\], a scaled display), markup removed: the
    preamble's and environments' commands and arguments, section and item commands, the
    column and row separators of tabulars, escapes spelled as commands (``\\textbar{}``)."""
    tex = re.sub(r"\\\[.*?\\\]|\\noindent\\resizebox\{\\linewidth\}\{!\}\{\$.*?\$\}", " ", tex, flags=re.S)
    tex = re.sub(r"^\\(documentclass|usepackage|setlength).*$", " ", tex, flags=re.M)
    tex = re.sub(r"\\(begin|end)\{\w+\}(\{[^{}]*\})?", " ", tex)
    tex = re.sub(r"\\(sub)?section\*\{|\\item\[|\](?= )", " ", tex)
    tex = re.sub(r" & | \\\\$|\\hline|\\[a-z]+\{\}", " ", tex, flags=re.M)   # ... and \\textbar{} and the like
    return tex.split("$")[0::2]


@pytest.mark.parametrize("name", ["urn", pytest.param("randomized_response", marks=pytest.mark.slow)])
def test_latex_report_escapes_text_mode_specials(name: str) -> None:
    tex = report(name, "latex")
    for part in _text_mode_parts(tex):
        assert not re.search(r"(?<!\\)[_{}^%#&]", re.sub(r"\\(sub)?section\*\{|\}\s|\}$", " ", part)), part[:200]


@pytest.mark.parametrize("name", NAME_PARAMS)
def test_text_report_by_default_is_for_a_person(name: str) -> None:
    """Without --verbose the text keeps each query's caption, value and plain extras and
    leaves out the derivation's notation (meaning, eigenvalues, closed forms ...: the
    extras of privspec.results.report.DETAILS), which --verbose and the other formats keep."""
    from privspec.results.report import DETAILS

    out, err = io.StringIO(), io.StringIO()
    assert main(["analyze", str(SPECS / f"{name}.privspec")], stdout=out, stderr=err) == 0, err.getvalue()
    text, verbose = out.getvalue(), report(name, "text")
    model = privspec.load(SPECS / f"{name}.privspec").model
    hidden = {k for entry in queries(name).values() for k in entry} & DETAILS
    assert hidden or name == "releases", "the urn and randomized_response specs have detail extras"
    for k in hidden:
        assert f"\n    {k} = " in verbose and f"\n    {k} = " not in text, k
    for q, entry in queries(name).items():
        assert f"\n\n{caption_line(model, q)}\n{q} ({entry['kind']}): " in text, q
    assert not re.search(r"\d(\.\d+)?e-1[3-9]\b|e-[2-9]\d\b", text + verbose)    # no rounding noise
