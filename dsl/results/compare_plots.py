"""The plots of a design comparison's report (:mod:`privspec.results.compare_report`), drawn
from the comparison document alone (matplotlib on Agg, imported when a plot is drawn).

* a frontier per :class:`~privspec.results.comparison.Frontier` of the document (the
  document already leaves out the criteria equal for every candidate, not finite for one,
  or unable to compare mechanisms), and only where the designs it can place differ on both
  axes: a plot with a degenerate axis (every point at 2) says nothing;
* the per-category standard errors, and the power curves (the target power and the
  document's n marked);
* one colour per design in every plot, the recommended design (the verdict's) drawn as a
  star and named so in the legend.

The frontier's labels never overlap: adjustText places them, and where some would still
overlap, or the points are many, a legend names the designs instead.

Examples
--------
>>> from privspec.results.comparison import CandidateRow, CriterionValue, Frontier
>>> doc = ComparisonDocument("d", criteria=["max_se", "epsilon"], candidates=[
...     CandidateRow("a", values={"max_se": CriterionValue(0.02), "epsilon": CriterionValue(2.0)}),
...     CandidateRow("b", values={"max_se": CriterionValue(0.01), "epsilon": CriterionValue(2.0)})],
...     frontiers=[Frontier("epsilon", "max_se", ["b"], {"a": "b is better on max_se"})])
>>> drawable(doc, doc.frontiers[0])   # both designs at epsilon 2: no picture
False
>>> [slug for slug, _ in figures(doc)]
[]
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from privspec.errors import BackendError, Diagnostic
from privspec.results.comparison import CandidateRow, ComparisonDocument, Frontier
from privspec.results.comparison_tables import number
from privspec.results.plots import pyplot

__all__ = ["figures", "drawable", "point", "finite", "with_se", "se_of", "plt_or_b031", "missing_dependency",
           "LEGEND_FROM"]

#: dominated designs are drawn in this grey (hollow) where labels name the points
GREY = "#9a9a9a"
#: from this many points on, a legend names a frontier's designs instead of labels
LEGEND_FROM = 9
#: the recommended design's marker in every plot
STAR = {"marker": "*", "s": 320, "edgecolor": "black", "linewidth": 1.0, "zorder": 5}


def plt_or_b031() -> Any:
    """pyplot on Agg (the plots module's loader), with the report's B031 where matplotlib is missing."""
    try:
        return pyplot()
    except BackendError:
        raise missing_dependency() from None


def missing_dependency() -> BackendError:
    """B031: the report's dependencies are missing from this install."""
    return BackendError(Diagnostic("B031", "the comparison report needs jinja2 and matplotlib, dependencies "
                                   "of privspec that are missing here", hint="pip install jinja2 matplotlib"))


def finite(x: Any) -> float | None:
    """``x`` as a float when it is a finite number (bools are not numbers here)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def point(cand: CandidateRow, criterion: str) -> float | None:
    """A candidate's value of ``criterion`` where it is a finite number."""
    raw = cand.values.get(criterion)
    return None if raw is None else finite(raw.value)


def with_se(cands: list[CandidateRow]) -> tuple[list[CandidateRow], list[str]]:
    """The candidates with standard errors, and every label of theirs (in order of appearance)."""
    have = [c for c in cands if c.se is not None and c.se.labels]
    labels: list[str] = []
    for c in have:
        labels += [str(x) for x in c.se.labels if str(x) not in labels]
    return have, labels


def se_of(cand: CandidateRow) -> dict[str, float]:
    """A candidate's standard errors by category label."""
    return dict(zip(map(str, cand.se.labels), cand.se.values))


def _recommended(doc: ComparisonDocument) -> str | None:
    return None if doc.recommendation is None else doc.recommendation.candidate


def _points(doc: ComparisonDocument, fr: Frontier) -> dict[str, tuple[float, float]]:
    """The designs a frontier's plot can place: a finite number on both its criteria."""
    out = {}
    for c in doc.candidates:
        px, py = point(c, fr.x), point(c, fr.y)
        if px is not None and py is not None:
            out[c.name] = (px, py)
    return out


def drawable(doc: ComparisonDocument, fr: Frontier) -> bool:
    """Whether the frontier's plot says something: two designs or more placed, differing on
    each axis (all at one epsilon, the plot would be a column on a degenerate axis)."""
    pts = list(_points(doc, fr).values())
    return len(pts) > 1 and len({x for x, _ in pts}) > 1 and len({y for _, y in pts}) > 1


def _has_power(doc: ComparisonDocument) -> bool:
    return any(c.power is not None and c.power.n for c in doc.candidates)


def figures(doc: ComparisonDocument) -> list[tuple[str, Callable[[], Any]]]:
    """``(slug, draw)`` per plot the document has, in the order of the report (a frontier is
    ``frontier_I``, I its 1-based place in ``doc.frontiers``; then ``se`` and ``power``); the slug names the plot in the template and the PNG's file name."""
    out: list[tuple[str, Callable[[], Any]]] = [
        (f"frontier_{i + 1}", lambda fr=fr: _frontier_figure(doc, fr))
        for i, fr in enumerate(doc.frontiers) if drawable(doc, fr)]
    if with_se(doc.candidates)[1]:
        out.append(("se", lambda: _se_figure(doc)))
    if _has_power(doc):
        out.append(("power", lambda: _power_figure(doc)))
    return out


# ---- drawing -------------------------------------------------------------------------------------
def _colours(doc: ComparisonDocument) -> dict[str, Any]:
    """One colour per design, the same in every plot (tab10, by order in the document)."""
    plt_or_b031()
    import matplotlib  # start-up: pyplot above has loaded it

    cmap = matplotlib.colormaps["tab10"]
    return {c.name: cmap(i % 10) for i, c in enumerate(doc.candidates)}


def _axis_label(doc: ComparisonDocument, criterion: str) -> str:
    info = doc.criterion_info.get(criterion)
    return f"{criterion} ({info.better} is better)" if info is not None and info.better else criterion


def _frontier_figure(doc: ComparisonDocument, fr: Frontier) -> Any:
    plt, colours, best = plt_or_b031(), _colours(doc), _recommended(doc)
    on, pts = set(fr.frontier), _points(doc, fr)
    legend = len(pts) >= LEGEND_FROM
    fig, ax = plt.subplots(figsize=(8.0, 4.4) if legend else (6.4, 4.4))
    line = sorted(p for n, p in pts.items() if n in on)
    if len(line) > 1:
        # unlabelled: the caption says what the line is, and a legend would take the plot's room
        ax.plot(*zip(*line), color="#333333", lw=1.2, zorder=1)
    for name, (px, py) in pts.items():
        colour = colours.get(name, "C0")
        shown = f"{name} (recommended)" if name == best else name
        if name == best:
            ax.scatter([px], [py], color=colour, label=f"recommended: {name}" if not legend else shown, **STAR)
        elif name in on:
            ax.scatter([px], [py], s=70, color=colour, edgecolor="black", zorder=3, label=shown if legend else None)
        else:  # dominated: hollow (grey where a label names it), so the frontier stands out
            ax.scatter([px], [py], s=60, facecolor="white", edgecolor=colour if legend else GREY, lw=1.5, zorder=2,
                       label=f"{name} (dominated)" if legend else None)
    ax.set_xlabel(_axis_label(doc, fr.x))
    ax.set_ylabel(_axis_label(doc, fr.y))
    ax.set_title(f"{fr.y} against {fr.x}")
    ax.margins(0.15)
    ax.grid(alpha=0.3)
    _outside_legend(ax, beside=legend)
    # the layout is settled before the labels are placed: a later one would move the points
    # under placed labels and could make them overlap again
    fig.tight_layout()
    if not legend and not _label(ax, pts, on, best, colours):
        _outside_legend(ax, beside=True)
    return fig


def _outside_legend(ax: Any, beside: bool) -> None:
    """The legend outside the axes (inside, it would hide points or labels), where it has
    entries: ``beside`` them (a design per entry), or a short one under them."""
    if not ax.get_legend_handles_labels()[0]:
        return
    if beside:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    else:
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)


def _label(ax: Any, pts: Mapping[str, tuple[float, float]], on: set[str], best: str | None,
           colours: Mapping[str, Any]) -> bool:
    """Label every point with its design, placed by adjustText so that no two labels
    overlap; False (the labels removed, the points given legend entries) where some still
    would."""
    from adjustText import adjust_text  # start-up: with matplotlib, only for a report's plot

    texts = [ax.text(px, py, name, fontsize=9, color="black" if name in on else "#555555",
                     fontweight="bold" if name == best else "normal") for name, (px, py) in pts.items()]
    xs, ys = [p[0] for p in pts.values()], [p[1] for p in pts.values()]
    # a number of steps, not a time limit: the same page on every machine
    adjust_text(texts, x=xs, y=ys, ax=ax, expand=(1.2, 1.4), iter_lim=300,
                arrowprops={"arrowstyle": "-", "color": "#777777", "lw": 0.6})
    renderer = ax.figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in texts]
    if not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:]):
        return True
    removed = list(ax.texts)  # the labels (and adjustText's connectors where they are texts)
    for t in removed:
        t.remove()
    for patch in list(ax.patches):  # connectors drawn as arrows from a label: they would draw a removed text
        if getattr(patch, "patchA", None) in removed or getattr(patch, "patchB", None) in removed:
            patch.remove()
    for coll, name in zip(ax.collections, pts):  # one scatter per design, in the order of pts
        if name != best and name not in on:
            coll.set_edgecolor(colours.get(name, "C0"))  # no label says which grey point is which
        if name != best:
            coll.set_label(name if name in on else f"{name} (dominated)")
    return False


def _se_figure(doc: ComparisonDocument) -> Any:
    """Dot plot: a row per category, a marker per design (offset so that ties stay visible)."""
    plt, colours, best = plt_or_b031(), _colours(doc), _recommended(doc)
    cands, labels = with_se(doc.candidates)
    fig, ax = plt.subplots(figsize=(6.4, 1.2 + 0.45 * len(labels)))
    width = 0.6 / max(len(cands), 1)
    for j, c in enumerate(cands):
        se = se_of(c)
        ys = [i - 0.3 + width * (j + 0.5) for i, lab in enumerate(labels) if finite(se.get(lab)) is not None]
        xs = [finite(se[lab]) for lab in labels if finite(se.get(lab)) is not None]
        colour = colours.get(c.name, "C0")
        if c.name == best:
            ax.scatter(xs, ys, color=colour, label=f"{c.name} (recommended)", **{**STAR, "s": 160})
        else:
            ax.scatter(xs, ys, s=40, color=colour, label=c.name, zorder=3)
        ax.hlines(ys, 0, xs, color=colour, lw=1.5, zorder=2)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set_xlabel(f"standard error at n = {number(doc.n)}" if doc.n is not None else "standard error")
    ax.set_title("Standard error of each category's estimate")
    ax.grid(axis="x", alpha=0.3)
    # beside the axes: inside, it would hide the longest bars' dots
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    fig.tight_layout()
    return fig


def _power_figure(doc: ComparisonDocument) -> Any:
    """The planning test's power over n per design, the target power and the document's n marked."""
    plt, colours, best = plt_or_b031(), _colours(doc), _recommended(doc)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for c in doc.candidates:
        if c.power is None:
            continue
        pairs = [(finite(n), finite(p)) for n, p in zip(c.power.n, c.power.power)]
        pairs = [(n, p) for n, p in pairs if n is not None and p is not None]
        if pairs:
            top = c.name == best
            ax.plot(*zip(*pairs), marker="*" if top else "o", ms=11 if top else 4, lw=2.6 if top else 1.5,
                    color=colours.get(c.name, "C0"), label=f"{c.name} (recommended)" if top else c.name,
                    zorder=4 if top else 2)
    planning = doc.planning
    target = None if planning is None else finite(planning.target_power)
    if target is not None:
        ax.axhline(target, color="black", ls="--", lw=1, label=f"target power {number(target)}")
    if finite(doc.n) is not None:
        ax.axvline(float(doc.n), color="0.4", ls=":", lw=1.2, label=f"n = {number(doc.n)}")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("sample size n")
    ax.set_ylabel("power")
    ax.set_title(str((planning.test if planning is not None else None) or "Power"), fontsize=10, wrap=True)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    fig.tight_layout()
    return fig
