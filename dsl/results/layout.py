"""How a JSON value is laid out as text: numbers to six significant digits, aligned grids
under their labels, folded lines, rounding noise shown as 0.

The bottom of the results layer: the reprs of :mod:`privspec.results.values` and the
reports of :mod:`privspec.results.report` both lay values out with it.

Examples
--------
>>> print(inline_or_block({"rows": ["a", "b"], "cols": ["x"], "data": [[0.5], [1e-20]]}, ""))
<BLANKLINE>
                x
  a           0.5
  b         1e-20
>>> interval(0.0, 1.0), interval(2.0, 2.0)
('(0, 1]', '[2, 2]')
"""
from __future__ import annotations

import math
import textwrap
from typing import Any

#: the longest line the text report writes (longer only for one unbreakable word)
MAX_LINE = 100
#: a grid wider than this is printed in bands of columns
WIDE = 160

#: a number smaller than this fraction of the largest magnitude beside it (in the same
#: matrix, vector or list) is rounding noise: the readable reports show it as 0 (JSON keeps it)
NOISE = 1e-12


def num(x: Any) -> str:
    """A JSON scalar as the text shows it: floats to 6 significant digits."""
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def fold(s: str, width: int, indent: str) -> str:
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

    if is_matrix(v) or is_table(v):
        return {**v, "data": _zeroed(v["data"], floor(_floats(v["data"])))}
    if is_step(v):
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



def is_matrix(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"rows", "cols", "data"}


def is_table(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"variables", "labels", "shape", "data"}


def is_step(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"intervals", "mass"}


def grid(rows: list[str], cols: list[str], data: list[list[str]], indent: str = "",
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
    return "\n" + "\n".join(grid([str(r) for r in v["rows"]], [str(c) for c in v["cols"]],
                                  [[num(x) for x in row] for row in v["data"]], indent))


def _table_text(v: dict, indent: str = "") -> str:
    """A joint table: a vector for one variable, a grid for two, a grid per slice of the
    leading variables for more."""
    names, labels, data = v["variables"], v["labels"], v["data"]
    if len(names) == 1:
        return inline_or_block(dict(zip(labels[0], data)), indent)
    lines = []
    corner = f"{names[-2]} \\ {names[-1]}"

    def walk(prefix: list[str], sub: Any, depth: int) -> None:
        if depth == len(names) - 2:
            if prefix:
                lines.append(indent + "[" + ", ".join(prefix) + "]")
            lines.extend(grid([str(x) for x in labels[-2]], [str(x) for x in labels[-1]],
                               [[num(x) for x in row] for row in sub], indent, corner))
            return
        for lab, part in zip(labels[depth], sub):
            walk(prefix + [f"{names[depth]} = {lab}"], part, depth + 1)

    walk([], data, 0)
    return "\n" + "\n".join(lines)


def inline(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {inline(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(inline(x) for x in v) + "]"
    return num(v)


def uniform_rows(v: dict) -> bool:
    """A mapping of mappings with the same keys and scalar, space-free values: a grid."""
    if len(v) < 2 or not all(isinstance(x, dict) and x for x in v.values()):
        return False
    keys = [list(x) for x in v.values()]
    if any(k != keys[0] for k in keys):
        return False
    cells = [num(c) for x in v.values() for c in x.values()]
    return all(not isinstance(c, (dict, list)) for x in v.values() for c in x.values()) \
        and all(" " not in c for c in cells) and all(" " not in str(k) for k in [*v, *keys[0]])


def interval(a: Any, b: Any) -> str:
    """An innermost interval ``(a, b]``; a point mass ``[a, a]``."""
    return f"[{num(a)}, {num(b)}]" if a == b else f"({num(a)}, {num(b)}]"


def inline_or_block(v: Any, indent: str) -> str:
    """A value after ``key: `` or ``key = ``: inline when it fits, else a block below."""
    if is_matrix(v):
        return _matrix_text(v, indent)
    if is_table(v):
        return _table_text(v, indent)
    if is_step(v):
        rows = [interval(a, b) for a, b in v["intervals"]]
        return "\n" + "\n".join(grid(rows, ["mass"], [[num(m)] for m in v["mass"]], indent, "interval"))
    if isinstance(v, dict) and any(grid_like(x) for x in v.values()):  # moments, intervals: a block each
        return "".join(f"\n{indent}  {k}: " + inline_or_block(x, indent + "    ") for k, x in v.items())
    text = inline(v)
    if len(indent) + len(text) <= MAX_LINE or not isinstance(v, (dict, list)) or not v:
        return text
    if isinstance(v, dict) and uniform_rows(v):
        cols = [str(k) for k in next(iter(v.values()))]
        return "\n" + "\n".join(grid([str(k) for k in v], cols,
                                      [[num(c) for c in x.values()] for x in v.values()], indent + "  "))
    if isinstance(v, dict):
        return "".join(f"\n{indent}  {k}: " + (fold(f"{indent}  {k}: {x}", MAX_LINE, indent + "      ")
                                                [len(f"{indent}  {k}: "):] if isinstance(x, str) else
                                                inline_or_block(x, indent + ("    " if grid_like(x) else "  ")))
                       for k, x in v.items())
    if all(not isinstance(x, (dict, list)) for x in v):  # numbers or labels: folded
        return fold(text, MAX_LINE - len(indent) - 8, indent + "    ")
    return "".join(f"\n{indent}  - " + inline_or_block(x, indent + ("    " if grid_like(x) else "  ")) for x in v)


def grid_like(v: Any) -> bool:
    """A value drawn as a grid below its key (indented under it)."""
    return is_matrix(v) or is_table(v) or is_step(v)
