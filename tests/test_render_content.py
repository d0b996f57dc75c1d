"""Rendered reports carry the same numbers as the JSON (issue 15).

``privspec analyze SPEC --format text|markdown|latex|json`` for three bundled specs: the
text and Markdown reports are parsed back (values, matrices with their row and column
labels, vectors and mappings, lists, every extra) and compared with the JSON entry of
each query, numbers to the 6 significant digits the text shows; the LaTeX report shows
each exact form as the JSON's ``latex`` (itself the LaTeX of the JSON's exact ``expr``,
which evaluates to the JSON number) and otherwise the text rendering.  This tests the
reports as they are today; their layout is to be reworked (a later issue).
"""
from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import pytest
import sympy

from privspec.cli import main

SPECS = Path(__file__).resolve().parent.parent / "specs"
NAMES = ["urn", "randomized_response", "releases"]
#: the text shows floats with 6 significant digits (``f"{x:.6g}"``)
REL = 5e-6


def analyze(name: str, fmt: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    status = main(["analyze", str(SPECS / f"{name}.privspec"), "--format", fmt], stdout=out, stderr=err)
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


def parse_value(text: str):
    """A rendered value: inline, a matrix (starts on the next line), or several matrices
    (``\\n  Q: \\n    <matrix>``, or a vector ``  gamma: {...}``) for moments."""
    if not text.startswith("\n"):
        return parse_inline(text)
    lines = text.split("\n")[1:]
    if lines and re.match(r"^  \w+: ", lines[0]):       # several blocks
        out, key, inline, block = {}, None, "", []
        for ln in lines + ["  END: "]:
            m = re.match(r"^  (\w+): (.*)$", ln)
            if m:
                if key is not None:
                    out[key] = parse_matrix(block) if not inline else parse_inline(inline)
                key, inline, block = m.group(1), m.group(2).strip(), []
            else:
                block.append(ln[4:] if ln.startswith("    ") else ln)
        return out
    return parse_matrix(lines)


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
    if value is None:                                   # symbolic: the exact form is shown
        assert expr is not None and value_text == expr, (name, value_text[:200])
    else:
        exact = re.match(r"^(.*) \(exactly (.*)\)$", value_text)
        if exact:                                       # "0.684133 (exactly 5131/7500)"
            assert exact.group(2) == expr, (name, exact.group(2), expr)
            value_text = exact.group(1)
        elif expr is not None and not isinstance(value, (dict, list)) and expr != str(value) and len(expr) <= 60:
            raise AssertionError(f"{name}: the short exact form {expr} is not shown")
        same(parse_value(value_text), value, name)
    for k, text in extras.items():
        v = entry[k]
        if isinstance(v, str) and not (v in ("inf", "-inf")):
            assert text == v, (name, k, text, v)
        else:
            same(parse_value(text), v, f"{name}.{k}")


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
@pytest.mark.parametrize("name", NAMES)
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


@pytest.mark.parametrize("name", NAMES)
def test_text_report_has_the_json_numbers(name: str) -> None:
    """Each query's line ``NAME (KIND): VALUE`` and its extras: scalars, exact forms in
    ``(exactly ...)``, matrices under their row and column labels, vectors and mappings
    key by key, lists entry by entry, strings verbatim."""
    entries = queries(name)
    text = report(name, "text")
    title = json.loads(report(name, "json"))["spec"]
    assert text.split("\n")[0] == title
    blocks = text_blocks(text, entries, lambda q, k: rf"^{re.escape(q)} \({re.escape(k)}\): ")
    for q, entry in entries.items():
        check_summary(blocks[q], q, entry)


@pytest.mark.parametrize("name", NAMES)
def test_markdown_report_has_the_json_numbers(name: str) -> None:
    """``## TITLE``, then per query ``### NAME (KIND)`` and the summary in a code block,
    with the same content as the text report."""
    entries = queries(name)
    md = report(name, "markdown")
    title = json.loads(report(name, "json"))["spec"]
    assert md.split("\n")[0] == f"## {title}"
    blocks = text_blocks(md, entries, lambda q, k: rf"^### {re.escape(q)} \({re.escape(k)}\)\n\n```\n")
    for q, entry in entries.items():
        body = blocks[q]
        assert body.endswith("```"), (q, body[-40:])
        check_summary(body[:-len("```")].rstrip("\n"), q, entry)


@pytest.mark.parametrize("name", NAMES)
def test_latex_report_shows_the_exact_forms(name: str) -> None:
    """``\\paragraph{NAME}`` per query, followed by ``$LATEX$`` (the JSON's latex, exact)
    where there is an exact form, else the value as the text renders it."""
    entries = queries(name)
    tex = report(name, "latex")
    blocks = text_blocks(tex, entries, lambda q, k: rf"^\\paragraph\{{{re.escape(q)}\}} ")
    exact = 0
    for q, entry in entries.items():
        if "latex" in entry:
            assert blocks[q] == f"${entry['latex']}$", (q, blocks[q][:200])
            exact += 1
        else:
            same(parse_value(blocks[q]), entry["value"], q)
    assert exact, "no exact form in the LaTeX report"


def _text_mode_parts(tex: str) -> list[str]:
    """The parts of a LaTeX document outside $...$ (text mode)."""
    return tex.split("$")[0::2]


@pytest.mark.xfail(strict=True, reason="the LaTeX report writes query names, metric names and mapping keys "
                                       "in text mode without escaping: '\\paragraph{v_mom}', "
                                       "'{size: ..., mutual_information: ...}' do not compile (an underscore "
                                       "outside math mode is 'Missing $ inserted'), and the braces of a "
                                       "mapping are taken as a group and vanish")
@pytest.mark.parametrize("name", ["urn", "randomized_response"])
def test_latex_report_escapes_text_mode_specials(name: str) -> None:
    tex = report(name, "latex")
    for part in _text_mode_parts(tex):
        assert not re.search(r"(?<!\\)[_{}^%#&]", re.sub(r"\\paragraph\{|\}\s", " ", part)), part[:200]
