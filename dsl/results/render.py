"""Rendering of check reports and diagnostics as text, JSON, Markdown or LaTeX."""
from __future__ import annotations

import json
from typing import Sequence

from privspec.errors import Diagnostic
from privspec.language.source import Source

FORMATS = ("text", "json", "markdown", "latex")


def check_report(fmt: str, source: Source, title: str | None, diagnostics: Sequence[Diagnostic],
                 summary: dict | None) -> str:
    """The report of ``privspec check`` in one of :data:`FORMATS`."""
    errors = sum(d.is_error for d in diagnostics)
    warnings = len(diagnostics) - errors
    if fmt == "json":
        return json.dumps({"spec": title, "file": source.name, "ok": errors == 0,
                           "errors": errors, "warnings": warnings,
                           "diagnostics": [d.to_dict(source) for d in diagnostics],
                           "summary": summary}, indent=2)
    counts = ", ".join(f"{v} {k if v != 1 else singular(k)}" for k, v in (summary or {}).items() if v)
    status = "ok" if errors == 0 else f"{errors} error{'s' if errors != 1 else ''}"
    if warnings:
        status += f", {warnings} warning{'s' if warnings != 1 else ''}"
    if fmt == "text":
        return f"{source.name}: {status}" + (f" ({counts})" if counts and errors == 0 else "")
    rows = [(d.severity, d.code, _where(d, source), d.message, d.hint) for d in diagnostics]
    if fmt == "markdown":
        out = [f"**{md(source.name)}**: {status}" + (f" ({counts})" if counts and errors == 0 else ""), ""]
        if rows:
            out += ["| severity | code | where | message | hint |", "|---|---|---|---|---|"]
            out += ["| " + " | ".join(md(c) for c in r) + " |" for r in rows]
        return "\n".join(out)
    # latex
    out = [f"\\textbf{{{_tex(source.name)}}}: {_tex(status)}" + (f" ({_tex(counts)})" if counts and errors == 0 else "")]
    if rows:
        out += ["\\begin{tabular}{lllll}", "\\hline", "severity & code & where & message & hint \\\\", "\\hline"]
        out += [" & ".join(_tex(c) for c in r) + " \\\\" for r in rows]
        out += ["\\hline", "\\end{tabular}"]
    return "\n".join(out)


def singular(plural: str) -> str:
    """``queries`` -> ``query``, ``variables`` -> ``variable``."""
    return plural[:-3] + "y" if plural.endswith("ies") else plural[:-1]


def _where(d: Diagnostic, source: Source) -> str:
    if d.span is None:
        return source.name
    line, col = source.line_col(d.span.start)
    return f"{line}:{col}"


#: Markdown's specials, escaped so that a label, title or message shows as written in any
#: viewer: HTML's ``<``, ``>`` and ``&`` as entities (no inline HTML: a label
#: ``<script>`` stays text), the table separator ``|``, emphasis ``*``, ``_`` and ``~``,
#: code backticks, links ``[ ]``, math ``$``, and the escape ``\`` itself; line breaks become
#: spaces (a table row is one line)
_MD = {"\\": "\\\\", "|": "\\|", "*": "\\*", "_": "\\_", "~": "\\~", "`": "\\`", "[": "\\[", "]": "\\]",
       "$": "\\$", "<": "&lt;", ">": "&gt;", "&": "&amp;", "\n": " ", "\r": " "}


def md(s: object) -> str:
    """Text (a label, a title, a message) for Markdown, escaped once (:data:`_MD`).

    Examples
    --------
    >>> print(md("w[<script>alert(1)</script>] | *a* & b_c"))
    w\\[&lt;script&gt;alert(1)&lt;/script&gt;\\] \\| \\*a\\* &amp; b\\_c
    """
    return "".join(_MD.get(c, c) for c in str(s))



_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _tex(s: str) -> str:
    return "".join(_TEX.get(c, c) for c in s)
