"""Rendering query results (the JSON contract of LANGUAGE.md).

Back ends return result objects with ``to_dict()`` (``{"kind": ..., "value": ...}``)
and ``summary()``; this module assembles them into the runner's output.
"""
from __future__ import annotations

import json
from typing import Any, Mapping


def render_results(fmt: str, model: Any, results: Mapping[str, Any]) -> str:
    """``{"spec": TITLE, "queries": {NAME: RESULT}}`` as JSON, or a readable report."""
    if fmt == "json":
        return json.dumps({"spec": model.title, "queries": {k: r.to_dict() for k, r in results.items()}},
                          indent=2, default=str)
    lines = [model.title] if model.title and fmt == "text" else []
    for name, r in results.items():
        if fmt == "latex" and hasattr(r, "as_latex"):
            lines.append(r.as_latex())
        elif fmt == "markdown":
            lines.append(f"### {name}\n\n{r.summary()}")
        else:
            lines.append(f"{name}: {r.summary()}")
    return "\n".join(lines)
