"""A comparison document as tables: the one layout behind the text, Markdown and LaTeX
output of ``privspec compare``, a comparison result's ``to_frame()`` and HTML repr.

Each table is a :class:`Block`: a title, a header, rows of strings, and notes (the
reasons behind n/a cells, the dominated candidates and why). The renderers in
:mod:`privspec.results.report` only lay blocks out.

Examples
--------
>>> from privspec.results.comparison import CandidateRow, CriterionValue
>>> doc = ComparisonDocument("d", estimand="distribution(x)", n=100, criteria=["max_se"], candidates=[
...     CandidateRow("a", "grr(x, epsilon = 1)", "rr", "mom", {"max_se": CriterionValue(0.05)},
...                  rank={"max_se": 1}, pareto=True)])
>>> b = blocks(doc)[0]
>>> b.header, b.rows
(['candidate', 'mechanism', 'estimator', 'max_se'], [['a', 'grr(x, epsilon = 1)', 'mom', '0.05 [1]']])
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from privspec.results.comparison import (CandidateRow, ComparisonDocument, CriterionValue, InverseChoice, InverseDesign,
                                         Recommendation)


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


def cell(entry: CriterionValue, rank: int | None = None) -> str:
    """``0.8640 [3]``, with ``(sim 0.87 +- 0.02)`` when simulated and ``(worst 0.91)`` where
    it is worse at some plausible population."""
    if entry.value is None:
        return "n/a"
    text = number(entry.value)
    if rank is not None:
        text += f" [{rank}]"
    if entry.simulated is not None:
        text += f" (sim {number(entry.simulated)} +- {number(entry.mc_error)})"
    if entry.worst is not None and entry.worst != entry.value:
        text += f" (worst {number(entry.worst)})"
    return text


def blocks(doc: ComparisonDocument) -> list[Block]:
    """The tables of a comparison document, in reading order: the verdict first."""
    out = ([] if doc.recommendation is None else [verdict(doc.recommendation)]) + [_criteria(doc)]
    left_out = [f"no frontier on {crit}: {why}" for crit, why in doc.not_on_frontiers.items()]
    if not doc.frontiers and left_out:
        out.append(Block("Pareto frontiers: none", [], [], left_out))
    elif doc.frontiers:
        out.append(Block("Pareto frontiers (privacy x against utility y)", ["x", "y", "frontier", "dominated"],
                         [[f.x, f.y, ", ".join(f.frontier) or "-", ", ".join(sorted(f.dominated)) or "-"]
                          for f in doc.frontiers],
                         [f"{name} ({f.y} vs {f.x}): {why}" for f in doc.frontiers
                          for name, why in f.dominated.items()] + left_out))
    if doc.targets:
        out.append(_targets(doc))
    if any(c.power for c in doc.candidates):
        rows = [[c.name, number(c.power.at_n) if c.power else "n/a"] for c in doc.candidates]
        notes = [doc.planning.test] if doc.planning is not None and doc.planning.test else []
        notes += [f"{c.name}: {c.power_na}" for c in doc.candidates if c.power_na]
        out.append(Block(f"Power at n = {number(doc.n)}", ["candidate", "power"], rows, notes))
    if doc.inverse:
        rows = [[e.candidate, e.parameter, "-" if not e.range else f"[{number(e.range[0])}, {number(e.range[1])}]",
                 _choice(e.most_private, e), _choice(e.best_utility, e)] for e in doc.inverse]
        out.append(Block("Inverse design (free parameter)", ["candidate", "parameter", "range",
                                                             "most private meeting the utility targets",
                                                             "best utility meeting the privacy targets"], rows,
                         [f"{e.candidate}: {e.none}" for e in doc.inverse if e.none]))
    ses = [c for c in doc.candidates if c.se]
    if ses:
        labels = ses[0].se.labels
        if len(labels) <= 12 and all(c.se.labels == labels for c in ses):
            cvs = any(c.cv is not None for c in ses)
            out.append(Block(f"Standard errors{' (CV: SE / share)' if cvs else ''} at n = {number(doc.n)}",
                             ["candidate"] + list(labels), [[c.name] + _se_cells(c) for c in ses]))
    return out


def verdict(rec: Recommendation) -> Block:
    """The verdict as a block of lines, no table: its title names the design to use (or
    says that none meets the targets); then the verdict in words, why, the runner-up and
    what would change the choice, what is missing, the fixes, and the notes.

    Examples
    --------
    >>> b = verdict(Recommendation("grr_2", "grr_2: the most private that meets every target",
    ...                            reasons=["meets max_se <= 0.015"], runner_up="grr_3",
    ...                            changes=["grr_3 wins from n = 4,000"]))
    >>> print("\\n".join([b.title] + b.notes))
    Verdict: use grr_2
    grr_2: the most private that meets every target
    why: meets max_se <= 0.015
    runner-up: grr_3
    would change the choice: grr_3 wins from n = 4,000
    """
    title = f"Verdict: use {rec.candidate}" if rec.candidate else "Verdict: no design meets the targets"
    lines = [rec.text] if rec.text else []
    lines += [f"why: {x}" for x in rec.reasons]
    lines += [f"runner-up: {rec.runner_up}"] if rec.runner_up else []
    lines += [f"would change the choice: {x}" for x in rec.changes]
    lines += [f"missing: {x}" for x in rec.missing] + [f"fix: {x}" for x in rec.fixes]
    lines += [f"note: {x}" for x in rec.notes]
    return Block(title, [], [], lines)


def _criteria(doc: ComparisonDocument) -> Block:
    crits = doc.criteria
    pareto = bool(doc.frontiers)   # no frontier: no Pareto column
    header = ["candidate", "mechanism", "estimator"] + crits + (["Pareto"] if pareto else [])
    rows, notes = [], []
    for c in doc.candidates:
        rows.append([c.name, c.mechanism, c.estimator] + [cell(c.values[k], c.rank.get(k)) for k in crits]
                    + ([_pareto(c, len(doc.frontiers))] if pareto else []))
        notes += [f"{c.name} {k}: n/a: {c.values[k].na}" for k in crits if c.values[k].na]
        notes += [f"{c.name} {k}: worst: {c.values[k].worst_at}" for k in crits
                  if c.values[k].worst is None and c.values[k].worst_at]
        notes += [f"{c.name}: {f}" for f in c.flags]
    info = doc.criterion_info
    sides = "; ".join(f"{k}: {info[k].side}, {info[k].better} is better" for k in crits if k in info)
    sim = f"; sim: {doc.reps} replications, +- Monte Carlo error" if doc.reps else ""
    title = f"{doc.name}: {doc.estimand} at n = {number(doc.n)} ([rank], 1 best{sim})"
    over = [f"worst: over {doc.populations}"] if doc.populations else []
    return Block(title, header, rows, ([sides] if sides else []) + over + notes)


def _targets(doc: ComparisonDocument) -> Block:
    """Whether each candidate meets each target at n, and the n that meets it."""
    keys = [f"{t.criterion} {t.op} {number(t.value)}" for t in doc.targets]
    rows, notes = [], []
    for c in doc.candidates:
        row = [c.name]
        for k in keys:
            verdict = {True: "met", False: "not met", None: "n/a"}[c.targets.get(k)]
            size = c.sample_size.get(k)
            everywhere = (c.targets_everywhere or {}).get(k)
            row.append(verdict + (f"; needs n = {number(size)}" if isinstance(size, int) else "")
                       + ("" if everywhere is None else "; everywhere" if everywhere else "; not everywhere"))
            if isinstance(size, str) and not any(n.startswith(f"{c.name}: ") for n in notes):
                notes.append(f"{c.name}: {size}")
        rows.append(row)
    return Block(f"Targets at n = {number(doc.n)} (n: the fewest respondents that meet a utility target)",
                 ["candidate"] + keys, rows, notes)


def _se_cells(cand: CandidateRow) -> list[str]:
    """A candidate's standard errors, each with its coefficient of variation where known:
    ``0.01205 (CV 126%)``."""
    se = cand.se.values if cand.se is not None else []
    cv = cand.cv.values if cand.cv is not None and cand.cv.labels == cand.se.labels else [None] * len(se)
    return [number(s) + (f" (CV {100 * c:.3g}%)" if c is not None else "") for s, c in zip(se, cv)]


def _pareto(cand: CandidateRow, frontiers: int) -> str:
    """``yes`` / ``no``, with on how many of the frontiers when there are several."""
    on = cand.frontiers_on
    if cand.pareto is None:   # no frontier, or a design with a free parameter (see its inverse design)
        return "-"
    if on is None or frontiers <= 1:
        return "no" if cand.pareto is False else "yes"
    return f"yes ({len(on)} of {frontiers})" if on else "no"


def _choice(choice: InverseChoice | None, entry: InverseDesign) -> str:
    if choice is None:
        return "-"
    if choice.none:
        return "none: " + choice.none
    shown = ", ".join(f"{k} = {number(v)}" for k, v in choice.criteria.items())
    return f"{entry.parameter} = {number(choice.value)}" + (f" ({shown})" if shown else "")


def frame(doc: ComparisonDocument) -> Any:
    """The criteria table as a DataFrame: one row per candidate, a column per criterion (its
    analytic value; ``CRITERION_sim`` and ``CRITERION_mc_error`` beside it when simulated,
    ``CRITERION_rank``), then ``pareto`` (None: on no frontier's pair, or no frontier)."""
    import pandas as pd  # start-up: pandas costs about 0.6 s; only the Python API's frames need it

    rows = {}
    for c in doc.candidates:
        row: dict[str, Any] = {"mechanism": c.mechanism, "estimator": c.estimator}
        for k in doc.criteria:
            v = c.values[k]
            row[k] = math.nan if v.value is None else float(v.value)
            if v.simulated is not None:
                row[f"{k}_sim"], row[f"{k}_mc_error"] = v.simulated, v.mc_error
            row[f"{k}_rank"] = c.rank.get(k)
        row["pareto"] = c.pareto
        rows[c.name] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "candidate"
    return out
