"""A comparison document as tables: the one layout behind the text, Markdown and LaTeX
output of ``privspec compare``, a comparison result's ``to_frame()`` and HTML repr.

Each table is a :class:`Block`: a title, a header, rows of strings, and notes (the
reasons behind n/a cells, the dominated candidates and why). The renderers in
:mod:`privspec.results.report` only lay blocks out.

Examples
--------
>>> doc = {"name": "d", "estimand": "distribution(x)", "n": 100, "criteria": ["max_se"],
...        "candidates": [{"name": "a", "mechanism": "grr(x, epsilon = 1)", "estimator": "mom",
...                        "values": {"max_se": {"value": 0.05}}, "rank": {"max_se": 1}, "pareto": True}]}
>>> b = blocks(doc)[0]
>>> b.header, b.rows
(['candidate', 'mechanism', 'estimator', 'max_se', 'Pareto'], [['a', 'grr(x, epsilon = 1)', 'mom', '0.05 [1]', 'yes']])
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Block:
    """One table of a comparison."""

    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


def number(x: Any) -> str:
    """Four significant digits; ``inf``; integers with thousands separators."""
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    x = float(x)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if math.isnan(x):
        return "nan"
    return f"{x:.4g}"


def cell(entry: dict, rank: int | None = None) -> str:
    """``0.8640 [3]``, with ``(sim 0.87 +- 0.02)`` when simulated."""
    if entry.get("value") is None:
        return "n/a"
    text = number(entry["value"])
    if rank is not None:
        text += f" [{rank}]"
    if entry.get("simulated") is not None:
        text += f" (sim {number(entry['simulated'])} +- {number(entry.get('mc_error'))})"
    return text


def blocks(doc: dict) -> list[Block]:
    """The tables of a comparison document, in reading order."""
    cands = doc.get("candidates") or []
    crits = list(doc.get("criteria") or [])
    out = [_criteria(doc, cands, crits)]
    fronts = doc.get("frontiers") or []
    if fronts:
        out.append(Block("Pareto frontiers (privacy x against utility y)", ["x", "y", "frontier", "dominated"],
                         [[f["x"], f["y"], ", ".join(f.get("frontier") or []) or "-",
                           ", ".join(sorted(f.get("dominated") or {})) or "-"] for f in fronts],
                         [f"{name} ({f['y']} vs {f['x']}): {why}" for f in fronts
                          for name, why in (f.get("dominated") or {}).items()]))
    targets = [t for t in doc.get("targets") or []]
    if targets:
        keys = [f"{t['criterion']} {t['op']} {number(t['value'])}" for t in targets]
        rows, notes = [], []
        for c in cands:
            met, sizes = c.get("targets") or {}, c.get("sample_size") or {}
            row = [c["name"]]
            for k in keys:
                verdict = {True: "met", False: "not met", None: "n/a"}[met.get(k)]
                size = sizes.get(k)
                row.append(verdict + (f"; needs n = {number(size)}" if isinstance(size, int) else ""))
                if isinstance(size, str) and not any(n.startswith(f"{c['name']}: ") for n in notes):
                    notes.append(f"{c['name']}: {size}")
            rows.append(row)
        out.append(Block(f"Targets at n = {number(doc.get('n'))} (n: the fewest respondents that meet a "
                         "utility target)", ["candidate"] + keys, rows, notes))
    planning = doc.get("planning") or {}
    if any(c.get("power") for c in cands):
        rows = [[c["name"], number((c.get("power") or {}).get("at_n")) if c.get("power") else "n/a"]
                for c in cands]
        notes = [planning["test"]] if planning.get("test") else []
        notes += [f"{c['name']}: {c['power_na']}" for c in cands if c.get("power_na")]
        out.append(Block(f"Power at n = {number(doc.get('n'))}", ["candidate", "power"], rows, notes))
    inverse = doc.get("inverse") or []
    if inverse:
        rows = []
        for e in inverse:
            rows.append([e["candidate"], e["parameter"],
                         "-" if not e.get("range") else f"[{number(e['range'][0])}, {number(e['range'][1])}]",
                         _choice(e.get("most_private"), e), _choice(e.get("best_utility"), e)])
        out.append(Block("Inverse design (free parameter)", ["candidate", "parameter", "range",
                                                             "most private meeting the utility targets",
                                                             "best utility meeting the privacy targets"], rows,
                         [f"{e['candidate']}: {e['none']}" for e in inverse if e.get("none")]))
    ses = [c for c in cands if c.get("se")]
    if ses:
        labels = ses[0]["se"]["labels"]
        if len(labels) <= 12 and all(c["se"]["labels"] == labels for c in ses):
            out.append(Block(f"Standard errors at n = {number(doc.get('n'))}", ["candidate"] + list(labels),
                             [[c["name"]] + [number(v) for v in c["se"]["values"]] for c in ses]))
    if doc.get("recommendation"):
        out[0].notes.append(doc["recommendation"])
    return out


def _criteria(doc: dict, cands: list[dict], crits: list[str]) -> Block:
    info = doc.get("criterion_info") or {}
    header = ["candidate", "mechanism", "estimator"] + crits + ["Pareto"]
    rows, notes = [], []
    for c in cands:
        ranks = c.get("rank") or {}
        rows.append([c["name"], c.get("mechanism", ""), c.get("estimator", "")]
                    + [cell(c["values"][k], ranks.get(k)) for k in crits]
                    + [_pareto(c, len(doc.get("frontiers") or []))])
        notes += [f"{c['name']} {k}: n/a: {c['values'][k]['na']}" for k in crits if c["values"][k].get("na")]
    sides = "; ".join(f"{k}: {info[k]['side']}, {info[k]['better']} is better" for k in crits if k in info)
    reps = doc.get("reps")
    title = (f"{doc.get('name')}: {doc.get('estimand')} at n = {number(doc.get('n'))} "
             f"([rank], 1 best{'; sim: ' + str(reps) + ' replications, +- Monte Carlo error' if reps else ''})")
    return Block(title, header, rows, ([sides] if sides else []) + notes)


def _pareto(cand: dict, frontiers: int) -> str:
    """``yes`` / ``no``, with on how many of the frontiers when there are several."""
    on = cand.get("frontiers_on")
    if on is None or frontiers <= 1:
        return "yes" if cand.get("pareto", True) else "no"
    return f"yes ({len(on)} of {frontiers})" if on else "no"


def _choice(choice: Any, entry: dict) -> str:
    if not choice:
        return "-"
    if choice.get("none"):
        return "none: " + choice["none"]
    crit = choice.get("criteria") or {}
    shown = ", ".join(f"{k} = {number(v)}" for k, v in crit.items() if not isinstance(v, str))
    return f"{entry['parameter']} = {number(choice['value'])}" + (f" ({shown})" if shown else "")


def frame(doc: dict) -> Any:
    """The criteria table as a DataFrame: one row per candidate, a column per criterion (its
    analytic value; ``CRITERION_sim`` and ``CRITERION_mc_error`` beside it when simulated,
    ``CRITERION_rank``), then ``pareto``."""
    import pandas as pd  # start-up: pandas costs about 0.6 s; only the Python API's frames need it

    rows = {}
    for c in doc.get("candidates") or []:
        row: dict[str, Any] = {"mechanism": c.get("mechanism"), "estimator": c.get("estimator")}
        for k in doc.get("criteria") or []:
            v = c["values"][k]
            row[k] = math.nan if v.get("value") is None else float(v["value"])
            if "simulated" in v:
                row[f"{k}_sim"], row[f"{k}_mc_error"] = v["simulated"], v.get("mc_error")
            row[f"{k}_rank"] = (c.get("rank") or {}).get(k)
        row["pareto"] = c.get("pareto", True)
        rows[c["name"]] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "candidate"
    return out
