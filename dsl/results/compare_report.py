"""The report of a design comparison (issue 17): one self-contained HTML page, or Markdown
with PNG plots beside it.

``privspec compare SPEC --report FILE.html|FILE.md`` hands the comparison document
(:class:`privspec.results.comparison.ComparisonDocument`, or its JSON form) to
:func:`write_report`.  This module only lays that document out; every number comes from
it.  Both formats carry the same content:

* the verdict first (:class:`privspec.results.comparison.Recommendation`): the design to
  use, or that none meets the targets, why, the runner-up and what would change the
  choice, what is missing and the cheapest fixes, and what the verdict rests on;
* the criteria table: a row per candidate design, a column per criterion with its
  analytic value (4 significant digits; the exact form as a tooltip), the simulated value
  ``± its Monte Carlo error`` when there is one, and the rank; ``n/a`` cells say why in a
  tooltip and in numbered notes under the table; the recommended design is marked so,
  dominated designs are marked, and why;
* the plots of :mod:`privspec.results.compare_plots`: a frontier per pair of criteria the
  designs differ on, the per-category standard errors (with their table), the power
  curves; then the sample sizes that meet the targets, the inverse design (free
  parameters solved for) and the spec itself.

The HTML page fetches nothing: CSS inline, plots inline SVG, and a Content-Security-Policy
that forbids every load, so that a reference slipping in later fails loudly in a browser
instead of quietly reaching the network.  jinja2 renders it (autoescaped: design names and
the spec text are the user's); matplotlib (Agg) draws the plots and is imported only when
the document has something to plot.  Both are dependencies of privspec: where an install
lost them, :class:`privspec.errors.BackendError` B031 says so.

Examples
--------
>>> from privspec.results.comparison import CandidateRow, CriterionValue
>>> doc = ComparisonDocument("designs", estimand="distribution(color)", n=100, criteria=["max_se"], candidates=[
...     CandidateRow("urn", "subset(color, uniform)", values={"max_se": CriterionValue(0.0512345)},
...                  rank={"max_se": 1})])
>>> page = render_html(doc)
>>> page.startswith("<!DOCTYPE html>"), "0.05123" in page, "://" in page  # fetches nothing
(True, True, False)
>>> fmt(0.0512345), fmt(1234.5678), fmt(12345), fmt(None), fmt(float("inf"))
('0.05123', '1235', '12,345', '—', 'inf')
"""
from __future__ import annotations

import io
import math
import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import quote

from privspec import outputs
from privspec.results.compare_plots import drawable, figures, missing_dependency, plt_or_b031, point, se_of, with_se
from privspec.results.comparison import CandidateRow, ComparisonDocument, InverseChoice, Recommendation
from privspec.results.render import md
from privspec.results.report import md_table

__all__ = ["render_html", "write_markdown", "write_report", "fmt"]

#: what a cell shows when the document has no value for it (not computed, not n/a)
MISSING = "—"
#: suffixes :func:`write_report` writes as HTML and as Markdown
HTML_SUFFIXES = (".html", ".htm")
MD_SUFFIXES = (".md",)


# ---- numbers -----------------------------------------------------------------------------------
def fmt(x: Any) -> str:
    """A number as the report shows it: floats to 4 significant digits, integers in full
    (thousands separated from 10,000 on), None as a dash; strings as they are.

    Examples
    --------
    >>> fmt(2.0), fmt(0.000123456), fmt(1e-12), fmt(1000)
    ('2', '0.0001235', '1e-12', '1000')
    """
    if x is None:
        return MISSING
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        x = int(x)  # n = 1000.0 reads as 1000, not 1e+03
    if isinstance(x, int):
        return f"{x:,}" if abs(x) >= 10_000 else str(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return f"{x:.4g}"
    return str(x)


def _document(doc: ComparisonDocument | Mapping[str, Any]) -> ComparisonDocument:
    """The document itself, or read from its JSON form (``to_dict()``)."""
    return doc if isinstance(doc, ComparisonDocument) else ComparisonDocument.from_dict(doc)


# ---- the view: every string both formats show ------------------------------------------------
class _Notes:
    """Numbered notes of the n/a cells: one number per distinct reason, so that a reason
    shared by several cells (every subset design has no epsilon) is printed once."""

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.cells: dict[str, list[str]] = {}

    def number(self, reason: str, where: str) -> int:
        if reason not in self.cells:
            self.reasons.append(reason)
            self.cells[reason] = []
        self.cells[reason].append(where)
        return self.reasons.index(reason) + 1

    def rows(self) -> list[dict]:
        return [{"number": i + 1, "reason": r, "cells": ", ".join(self.cells[r])}
                for i, r in enumerate(self.reasons)]


def _cell(cand: CandidateRow, criterion: str, notes: _Notes) -> dict:
    raw = cand.values.get(criterion)
    rank = cand.rank.get(criterion)
    cell = {"text": MISSING, "exact": None, "sim": None, "rank": rank, "na": None, "note": None,
            "best": rank == 1}
    if raw is None:
        return cell  # not computed: a dash, no note (nothing to explain)
    if raw.value is None:
        reason = str(raw.na or "not available")
        cell.update(text="n/a", na=reason, rank=None, best=False,
                    note=notes.number(reason, f"{cand.name} / {criterion}"))
        return cell
    cell["text"] = fmt(raw.value)
    if raw.exact not in (None, ""):
        cell["exact"] = str(raw.exact)
    if raw.simulated is not None:
        cell["sim"] = fmt(raw.simulated) + (f" ± {fmt(raw.mc_error)}" if raw.mc_error is not None else "")
    return cell


def _status(cand: CandidateRow, recommended: str | None) -> str:
    """The recommended design (the verdict's) first, whatever the frontiers say of it; then
    on a frontier (of which pairs, where it is dominated on others) before dominated: a
    design the best on one pair of criteria is a choice, whatever the other pairs say."""
    if cand.name == recommended:
        return "recommended"
    if cand.pareto is True:
        on = cand.frontiers_on or []
        return "on the frontier" + (f" of {', '.join(on)}" if len(on) > 1 or any(cand.dominated_by.values()) else "")
    by = {k: v for k, v in cand.dominated_by.items() if v}
    if by:
        return "dominated: " + "; ".join(f"by {', '.join(map(str, v))} on {k}" for k, v in by.items())
    if cand.pareto is False:
        return "dominated"
    return ""


def _sample_sizes(cands: list[CandidateRow]) -> dict | None:
    keys: list[str] = []
    for c in cands:
        keys += [k for k in c.sample_size if k not in keys]
    if not keys:
        return None
    return {"header": keys, "rows": [{"name": c.name, "cells": [fmt(c.sample_size.get(k)) for k in keys]}
                                     for c in cands]}


def _se_table(cands: list[CandidateRow]) -> dict | None:
    have, labels = with_se(cands)
    if not labels:
        return None
    columns = [[fmt(se_of(c).get(lab)) for lab in labels] for c in have]
    return {"header": [c.name for c in have],
            "rows": [{"name": lab, "cells": [col[i] for col in columns]} for i, lab in enumerate(labels)]}


def _choice(choice: InverseChoice | None, parameter: str) -> str:
    """One of an inverse design's answers: ``eps = 1.7 meets max_se <= 0.01 (max_se 0.0099, ...)``."""
    if choice is None:
        return MISSING
    if choice.none is not None:
        return f"none: {choice.none}"
    shown = list(choice.criteria.items()) + ([("n/a", choice.criteria_na)] if choice.criteria_na is not None else [])
    crit = ", ".join(f"{k} {fmt(v)}" for k, v in shown)
    text = f"{parameter} = {fmt(choice.value)}" + (f" {choice.verb} {choice.targets}" if choice.targets else "")
    return text + (f" ({crit})" if crit else "")


def _inverse(doc: ComparisonDocument) -> list[dict]:
    return [{"candidate": inv.candidate, "parameter": inv.parameter,
             "range": f"[{', '.join(fmt(x) for x in inv.range)}]" if inv.range else MISSING,
             "most_private": _choice(inv.most_private, inv.parameter),
             "best_utility": _choice(inv.best_utility, inv.parameter)} for inv in doc.inverse]


def _criterion_heads(doc: ComparisonDocument) -> list[dict]:
    heads = []
    for k in doc.criteria:
        i = doc.criterion_info.get(k)
        if i is None:
            heads.append({"name": k, "sub": "", "meaning": ""})
            continue
        sub = ", ".join(x for x in (i.side, f"{i.better} is better" if i.better else None) if x)
        heads.append({"name": k, "sub": sub, "meaning": i.meaning or ""})
    return heads


def _frontiers(doc: ComparisonDocument) -> list[dict]:
    """What each frontier section says besides its plot."""
    out = []
    for i, fr in enumerate(doc.frontiers):
        x, y = fr.x, fr.y
        left_out = [c.name for c in doc.candidates if point(c, x) is None or point(c, y) is None]
        out.append({"number": i + 1, "x": x, "y": y, "title": f"{y} against {x}", "frontier": list(fr.frontier),
                    "dominated": [{"name": k, "why": v} for k, v in fr.dominated.items()], "left_out": left_out,
                    "plot": f"frontier_{i + 1}" if drawable(doc, fr) else None})
    return out


#: the verdict's lists, in the order the report shows them, with their headings
_VERDICT_LISTS = (("reasons", "Why"), ("changes", "What would change the choice"), ("missing", "What is missing"),
                  ("fixes", "Cheapest fixes"), ("notes", "Notes"))
#: what a frontier without a plot says instead (:func:`privspec.results.compare_plots.drawable`)
_UNDRAWN = "Not drawn: fewer than two designs differ on both criteria."


def _verdict(rec: Recommendation | None) -> dict | None:
    """The verdict as the report opens with it: the design to use (or that none meets the
    targets), why, the runner-up and what would change the choice, what is missing and the
    fixes, and what the verdict rests on."""
    if rec is None:
        return None
    return {"candidate": rec.candidate, "text": rec.text, "reasons": list(rec.reasons), "runner_up": rec.runner_up,
            "changes": list(rec.changes), "missing": list(rec.missing), "fixes": list(rec.fixes),
            "notes": list(rec.notes)}


def _view(doc: ComparisonDocument) -> dict:
    """The comparison document as the strings both formats lay out (and the plots to draw)."""
    notes = _Notes()
    rows = []
    recommended = None if doc.recommendation is None else doc.recommendation.candidate
    for c in doc.candidates:
        status = _status(c, recommended)
        rows.append({"name": c.name, "mechanism": c.mechanism, "estimator": c.estimator,
                     "cells": [_cell(c, k, notes) for k in doc.criteria], "status": status,
                     "dominated": status.startswith("dominated"), "recommended": c.name == recommended})
    planning = doc.planning
    sim = None
    if doc.reps:
        sim = f"{fmt(doc.reps)} simulated replications" + (f", seed {doc.seed}" if doc.seed is not None else "")
    return {
        "title": doc.title or doc.name or "Design comparison", "name": doc.name, "estimand": doc.estimand,
        "verdict": _verdict(doc.recommendation),
        "n": fmt(doc.n) if doc.n is not None else None,
        "alpha": fmt(doc.alpha) if doc.alpha is not None else None,
        "simulation": sim, "criteria": _criterion_heads(doc), "rows": rows, "notes": notes.rows(),
        "flags": [{"name": c.name, "flag": f} for c in doc.candidates for f in c.flags],
        "frontiers": _frontiers(doc), "not_on_frontiers": [{"name": k, "why": v} for k, v in doc.not_on_frontiers.items()],
        "se": _se_table(doc.candidates),
        "power": any(slug == "power" for slug, _ in figures(doc)),
        "planning": {"test": planning.test or "",
                     "target": fmt(planning.target_power) if planning.target_power is not None else None}
        if planning is not None else None,
        "targets": [f"{t.criterion} {t.op} {fmt(t.value)}" for t in doc.targets],
        "sample_sizes": _sample_sizes(doc.candidates), "inverse": _inverse(doc), "spec": doc.spec or "",
    }


# ---- plots (drawn by privspec.results.compare_plots) -----------------------------------------------
def _saved(draw: Callable[[], Any], kind: str, salt: str) -> bytes:
    plt = plt_or_b031()
    import matplotlib  # start-up: about 1 s with pyplot, only for a report

    fig = draw()
    buf = io.BytesIO()
    # text stays text in SVG (selectable, searchable, small); a fixed salt per plot gives
    # reproducible ids that differ between the plots of one page; no date in the metadata
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        try:
            fig.savefig(buf, format=kind, dpi=120, bbox_inches="tight",
                        metadata={"Date": None} if kind == "svg" else None)
        finally:
            plt.close(fig)
    return buf.getvalue()


def _inline_svg(data: bytes, prefix: str) -> str:
    """An SVG file as an element to inline: its XML prolog, doctype and metadata dropped, and every
    id prefixed, since matplotlib names each figure's groups ``figure_1``, ``axes_1``, ...
    and ids must be unique in the page (``url(#...)`` and ``href="#..."`` follow)."""
    svg = data.decode("utf-8")
    svg = svg[svg.index("<svg"):]
    # the RDF metadata (matplotlib's version, namespaces) says nothing to a reader of the page
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m.group(1)})", svg)
    svg = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}-{m.group(1)}"', svg)
    return svg


# ---- HTML --------------------------------------------------------------------------------------
def render_html(doc: ComparisonDocument | Mapping[str, Any]) -> str:
    """The comparison report as one self-contained HTML page (CSS inline, plots inline SVG,
    no reference to anything outside the page).

    Parameters
    ----------
    doc : ComparisonDocument or dict
        The comparison document, or its JSON form (:meth:`ComparisonDocument.to_dict
        <privspec.results.comparison.ComparisonDocument.to_dict>`, the ``value`` of a
        comparison in ``privspec compare --format json``), whose optional keys may be
        absent, None or empty.

    Returns
    -------
    str
        The page, starting ``<!DOCTYPE html>``.

    Raises
    ------
    privspec.errors.BackendError
        B031 when jinja2 is missing, or matplotlib and the document has plots.

    Examples
    --------
    >>> doc = {"name": "d", "criteria": ["epsilon"], "candidates": [
    ...     {"name": "<urn>", "values": {"epsilon": {"value": None, "na": "no finite epsilon"}}}]}
    >>> page = render_html(doc)
    >>> '<td class="na" title="no finite epsilon">' in page, "&lt;urn&gt;" in page
    (True, True)
    """
    try:
        import jinja2  # start-up: only a report renders a template
        from markupsafe import Markup  # start-up: with jinja2
    except ImportError:
        raise missing_dependency() from None
    doc = _document(doc)
    view = _view(doc)
    plots = {slug: Markup(_inline_svg(_saved(draw, "svg", f"privspec-{slug}"), f"p-{slug}"))
             for slug, draw in figures(doc)}
    env = jinja2.Environment(loader=jinja2.PackageLoader("privspec", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    return env.get_template("compare.html.j2").render(v=view, plots=plots, verdict_lists=_VERDICT_LISTS,
                                                      undrawn=_UNDRAWN)


# ---- Markdown ----------------------------------------------------------------------------------
def _md_cell(cell: dict) -> str:
    if cell["na"] is not None:
        return f"n/a [{cell['note']}]"
    text = f"**{cell['text']}**" if cell["best"] else cell["text"]
    if cell["sim"]:
        text += f" (sim {cell['sim']})"
    if cell["rank"] is not None:
        text += f", rank {cell['rank']}"
    return text


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _md_verdict(verdict: dict | None) -> list[str]:
    """The verdict section of the Markdown report (nothing without a verdict)."""
    if verdict is None:
        return []
    out = ["## Verdict", ""]
    out += [f"**Use {md(verdict['candidate'])}.**" if verdict["candidate"] else "**No design meets the targets.**", ""]
    if verdict["text"]:
        out += [md(verdict["text"]), ""]
    if verdict["runner_up"]:
        out += [f"Runner-up: **{md(verdict['runner_up'])}**.", ""]
    for key, head in _VERDICT_LISTS:
        if verdict[key]:
            out += [f"{head}:", ""] + [f"- {md(x)}" for x in verdict[key]] + [""]
    return out


def _markdown(view: dict, images: Mapping[str, str]) -> str:
    v = view
    out = [f"# {md(v['title'])}", ""]
    facts = [f"Comparison **{md(v['name'])}**" if v["name"] else "Comparison"]
    if v["estimand"]:
        facts.append(f"of designs for {md(v['estimand'])}")
    if v["n"]:
        facts.append(f"at n = {v['n']}")
    line = " ".join(facts) + (f" (alpha = {v['alpha']})" if v["alpha"] else "") + "."
    out += [line + (f" {md(v['simulation'])}." if v["simulation"] else ""), ""]
    out += _md_verdict(v["verdict"])

    out += ["## Criteria", ""]
    if v["rows"]:
        header = ["design", "mechanism", "estimator"] + [md(h["name"]) for h in v["criteria"]] + ["status"]
        out += md_table(header, [[f"**{md(r['name'])}**", md(r["mechanism"]), md(r["estimator"])]
                                  + [_md_cell(c) for c in r["cells"]]  # numbers: nothing to escape
                                  + [md(r["status"])] for r in v["rows"]])
        out += ["", "Values at n; **bold**: the best (rank 1); sim: simulated value ± Monte Carlo error.", ""]
    else:
        out += ["No candidate designs.", ""]
    out += [f"- **{md(h['name'])}**" + (f" ({md(h['sub'])})" if h["sub"] else "")
            + (f": {md(h['meaning'])}" if h["meaning"] else "") for h in v["criteria"]]
    if v["notes"]:
        out += ["", "Notes:", ""] + [f"{n['number']}. {md(n['reason'])} ({md(n['cells'])})" for n in v["notes"]]
    if v["flags"]:
        out += ["", "What to know about the designs:", ""] + [f"- **{md(f['name'])}**: {md(f['flag'])}"
                                                              for f in v["flags"]]
    out.append("")

    if v["frontiers"] or v["not_on_frontiers"]:
        out += ["## Frontiers", ""]
    if v["not_on_frontiers"]:
        out += [f"- no frontier on {md(d['name'])}: {md(d['why'])}" for d in v["not_on_frontiers"]] + [""]
    for fr in v["frontiers"]:
        out += [f"### {md(fr['title'])}", ""]
        if fr["plot"] in images:
            out += [f"![{md(fr['title'])}]({quote(images[fr['plot']])})", ""]
        elif fr["plot"] is None:
            out += [_UNDRAWN, ""]
        out.append("On the frontier: " + (", ".join(md(n) for n in fr["frontier"]) or "none") + ".")
        out += [f"- {md(d['name'])} is dominated: {md(d['why'])}" for d in fr["dominated"]]
        if fr["left_out"]:
            out += ["", "Not plotted (no number on both criteria): " + ", ".join(md(n) for n in fr["left_out"]) + "."]
        out.append("")

    if v["se"] is not None:
        out += ["## Standard errors by category", ""]
        if "se" in images:
            out += [f"![Standard errors by category]({quote(images['se'])})", ""]
        out += md_table(["category"] + [md(h) for h in v["se"]["header"]],
                         [[md(r["name"])] + r["cells"] for r in v["se"]["rows"]]) + [""]
    if v["power"]:
        out += ["## Power", ""]
        if v["planning"]:
            out += [f"{md(v['planning']['test'])}" + (f"; target power {v['planning']['target']}"
                                                       if v["planning"]["target"] else "") + ".", ""]
        if "power" in images:
            out += [f"![Power curves]({quote(images['power'])})", ""]
    if v["sample_sizes"] is not None or v["targets"]:
        out += ["## Sample sizes", ""]
        if v["targets"]:
            out += ["Targets: " + "; ".join(md(t) for t in v["targets"]) + ".", ""]
        if v["sample_sizes"] is not None:
            out += md_table(["design"] + [md(h) for h in v["sample_sizes"]["header"]],
                             [[md(r["name"])] + [md(c) for c in r["cells"]] for r in v["sample_sizes"]["rows"]])
            out.append("")
    if v["inverse"]:
        out += ["## Inverse design", ""]
        out += md_table(["design", "parameter", "range", "most private", "best utility"],
                         [[md(r[k]) for k in ("candidate", "parameter", "range", "most_private", "best_utility")]
                          for r in v["inverse"]]) + [""]
    if v["spec"]:
        fence = _fence(v["spec"])
        out += ["## Spec", "", fence, v["spec"].rstrip("\n"), fence, ""]
    return "\n".join(out)


def _png(path: Path, slug: str) -> Path:
    """Where the Markdown report at ``path`` puts its picture ``slug``: beside it."""
    folder = path.parent if str(path.parent) else Path(".")
    return folder / f"{path.stem}_{slug}.png"


def report_targets(doc: ComparisonDocument | Mapping[str, Any], path: str | os.PathLike[str]) -> list[Path]:
    """Every file :func:`write_report` writes for ``doc`` (as :func:`render_html` takes it) at
    ``path``: the report, then (for Markdown) its PNGs; ValueError for a suffix that is
    neither HTML nor Markdown."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in HTML_SUFFIXES:
        return [p]
    if suffix in MD_SUFFIXES:
        doc = _document(doc)
        return [p] + [_png(p, slug) for slug, _ in figures(doc)]
    raise ValueError(f"cannot tell the report's format from {os.fspath(path)!r}: "
                     "name it FILE.html (one self-contained page) or FILE.md (Markdown with PNGs beside it)")


def write_markdown(doc: ComparisonDocument | Mapping[str, Any], path: str | os.PathLike[str],
                   force: bool = False) -> list[str]:
    """Write the comparison report of ``doc`` (as :func:`render_html` takes it) as Markdown to
    ``path`` and its plots as PNGs beside it (``STEM_frontier_1.png``, ..., ``STEM_se.png``,
    ``STEM_power.png``), each atomically.

    The PNGs are written first, so that the Markdown never names a missing image; images
    are referenced by their file name (relative to the Markdown file).  Every file is
    checked before any is written: an existing one is replaced only with ``force``
    (:func:`privspec.outputs.check_output`); should one appear meanwhile, the files
    written before it are removed.

    Returns
    -------
    list of str
        The paths written: the Markdown file first, then the PNGs.

    Examples
    --------
    >>> import os, tempfile
    >>> doc = {"name": "d", "estimand": "distribution(color)", "criteria": ["max_se"],
    ...        "candidates": [{"name": "urn", "values": {"max_se": {"value": 0.05, "simulated": 0.0512,
    ...                                                              "mc_error": 0.002}}}]}
    >>> [p] = write_markdown(doc, os.path.join(tempfile.mkdtemp(), "r.md"))
    >>> print(open(p, encoding="utf-8").read())  # doctest: +ELLIPSIS
    # d
    <BLANKLINE>
    Comparison **d** of designs for distribution(color).
    <BLANKLINE>
    ## Criteria
    <BLANKLINE>
    | design | mechanism | estimator | max\\_se | status |
    |---|---|---|---|---|
    | **urn** |  |  | 0.05 (sim 0.0512 ± 0.002) |  |
    ...
    """
    p = Path(path)
    doc = _document(doc)
    for target in report_targets(doc, p):
        outputs.check_output(target, force=force)
    view = _view(doc)
    images, written = {}, []
    try:
        for slug, draw in figures(doc):
            png = _png(p, slug)
            outputs.write_bytes_atomic(_saved(draw, "png", f"privspec-{slug}"), png, force=force)
            images[slug] = png.name
            written.append(os.fspath(png))
        outputs.write_text_atomic(_markdown(view, images), p, force=force)
    except BaseException:
        if not force:  # they were new: no half report stays behind
            for done in written:
                os.unlink(done)
        raise
    return [os.fspath(p)] + written


def write_report(doc: ComparisonDocument | Mapping[str, Any], path: str | os.PathLike[str],
                 force: bool = False) -> list[str]:
    """Write the comparison report of ``doc`` (as :func:`render_html` takes it), HTML or
    Markdown by the suffix of ``path`` (``.html``/``.htm``: :func:`render_html`; ``.md``:
    :func:`write_markdown`).  An existing file is replaced only with ``force``; anything
    there that is not a regular file (a device, a pipe, a folder), never (D007,
    :func:`privspec.outputs.check_output`).

    Returns
    -------
    list of str
        The paths written (the report first).

    Raises
    ------
    ValueError
        Any other suffix.
    privspec.errors.BackendError
        B031 when jinja2 or matplotlib is missing.
    """
    suffix = Path(path).suffix.lower()
    if suffix in HTML_SUFFIXES:
        outputs.check_output(path, force=force)
        outputs.write_text_atomic(render_html(doc), path, force=force)
        return [os.fspath(path)]
    if suffix in MD_SUFFIXES:
        return write_markdown(doc, path, force=force)
    raise ValueError(f"cannot tell the report's format from {os.fspath(path)!r}: "
                     "name it FILE.html (one self-contained page) or FILE.md (Markdown with PNGs beside it)")
