"""The design comparison report (privspec.results.compare_report, issue 17): HTML and Markdown laid
out from a hand-built comparison document, and the HTML opened in a real browser.

The browser test renders the page with headless Chromium and checks what a reader sees:
no console message (the page's Content-Security-Policy turns any attempted load into
one), every plot an <svg> in the DOM with its designs' names as text, and, in the
screenshot, each plot's region drawn (not blank) in the colours of exactly the designs it
should show.  It is skipped without chromium, jinja2 or matplotlib; .ci/run installs
them for the extras venv, where it runs.
"""
from __future__ import annotations

import copy
import os
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from privspec.results.compare_report import fmt, render_html, write_markdown, write_report
from privspec.errors import BackendError, DataError

LABELS = ["Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White"]
NS = [100, 200, 400, 800, 1600, 3200]
NA_EPS = {"value": None, "na": "subset designs have no finite local-DP epsilon"}
SPEC = '''spec "Adult census: designs for the race distribution"
variable race: categorical {"Amer-Indian-Eskimo", "Asian-Pac-Islander", Black, Other, White}
# a comment with <b>markup</b> & an ampersand, and ``` a fence
compare race_designs for distribution(race) at n = 1000 {
    uniform = subset(race, uniform)
    pairs   = subset(race, sizes {2: 1})
    grr_1   = grr(race, epsilon = 1)
    grr_3   = grr(race, epsilon = 3)
} by avar_trace, max_se, coverage, prediction, epsilon
'''


def _cand(name: str, mechanism: str, values: dict, se: list, rank: dict, power: list, size: int,
          pareto: bool = True, dominated_by: dict | None = None) -> dict:
    return {"name": name, "mechanism": mechanism, "family": mechanism.split("(")[0], "estimator": "mle",
            "values": values, "se": {"labels": LABELS, "values": se}, "rank": rank, "pareto": pareto,
            "dominated_by": dominated_by or {}, "sample_size": {"max_se <= 0.01": size},
            "power": {"n": NS, "power": power}}


def sample_doc() -> dict:
    """A comparison document of the shape the back end writes (numbers made up, plausible)."""
    return {
        "kind": "comparison", "name": "race_designs",
        "title": "Adult census: designs for the race distribution",
        "estimand": "distribution(race)", "n": 1000, "alpha": 0.05,
        "criteria": ["avar_trace", "max_se", "coverage", "prediction", "epsilon"],
        "criterion_info": {
            "avar_trace": {"side": "utility", "better": "lower", "meaning": "trace of the asymptotic covariance"},
            "max_se": {"side": "utility", "better": "lower", "meaning": "largest standard error of the estimate at n"},
            "coverage": {"side": "privacy", "better": "higher", "meaning": "expected share of categories in a report"},
            "prediction": {"side": "privacy", "better": "lower", "meaning": "chance the best guess is right"},
            "epsilon": {"side": "privacy", "better": "lower", "meaning": "local differential privacy epsilon"}},
        "candidates": [
            _cand("uniform", "subset(race, uniform)",
                  {"avar_trace": {"value": 1.23456, "exact": "617/500", "simulated": 1.25, "mc_error": 0.03},
                   "max_se": {"value": 0.0201, "simulated": 0.0205, "mc_error": 0.0011},
                   "coverage": {"value": 0.6, "exact": "3/5"}, "prediction": {"value": 0.4123}, "epsilon": NA_EPS},
                  [0.0112, 0.0131, 0.0154, 0.0109, 0.0201],
                  {"avar_trace": 3, "max_se": 3, "coverage": 1, "prediction": 3, "epsilon": None},
                  [0.08, 0.12, 0.21, 0.38, 0.63, 0.88], 4040),
            _cand("pairs", "subset(race, sizes {2: 1})",
                  {"avar_trace": {"value": 2.9871, "simulated": 3.02, "mc_error": 0.07}, "max_se": {"value": 0.0312},
                   "coverage": {"value": 0.4, "exact": "2/5"}, "prediction": {"value": 0.5012}, "epsilon": NA_EPS},
                  [0.0171, 0.0205, 0.0243, 0.0168, 0.0312],
                  {"avar_trace": 4, "max_se": 4, "coverage": 2, "prediction": 4, "epsilon": None},
                  [0.06, 0.08, 0.12, 0.2, 0.35, 0.6], 9735,
                  pareto=False, dominated_by={"max_se vs coverage": ["uniform"]}),
            _cand("grr_1", "grr(race, epsilon = 1)",
                  {"avar_trace": {"value": 0.8764}, "max_se": {"value": 0.0157, "simulated": 0.0155, "mc_error": 0.0008},
                   "coverage": {"value": 0.2, "exact": "1/5"}, "prediction": {"value": 0.4047},
                   "epsilon": {"value": 1.0, "exact": "1"}},
                  [0.0090, 0.0102, 0.0121, 0.0088, 0.0157],
                  {"avar_trace": 2, "max_se": 2, "coverage": 3, "prediction": 2, "epsilon": 1},
                  [0.1, 0.16, 0.29, 0.52, 0.8, 0.97], 2465),
            _cand("grr_3", "grr(race, epsilon = 3)",
                  {"avar_trace": {"value": 0.1893}, "max_se": {"value": 0.00693},
                   "coverage": {"value": 0.2, "exact": "1/5"}, "prediction": {"value": 0.8011},
                   "epsilon": {"value": 3.0, "exact": "3"}},
                  [0.0034, 0.0051, 0.0066, 0.0032, 0.00693],
                  {"avar_trace": 1, "max_se": 1, "coverage": 3, "prediction": 5, "epsilon": 2},
                  [0.3, 0.52, 0.81, 0.97, 1.0, 1.0], 481),
        ],
        "frontiers": [
            {"x": "epsilon", "y": "max_se", "frontier": ["grr_1", "grr_3"], "dominated": {}},
            {"x": "coverage", "y": "max_se", "frontier": ["uniform", "grr_1", "grr_3"],
             "dominated": {"pairs": "uniform is at least as good on both, better on max_se"}}],
        "targets": [{"criterion": "max_se", "op": "<=", "value": 0.01}],
        "planning": {"test": "one-sample test of w[Black] = 0.08 (two-sided, alpha 0.05)", "target_power": 0.8},
        "inverse": [
            {"candidate": "grr_eps", "parameter": "eps", "range": [0.1, 10],
             "most_private": {"value": 1.7, "meets": "max_se <= 0.01", "criteria": {"max_se": 0.0099, "epsilon": 1.7}},
             "best_utility": {"value": 2.0, "at": "epsilon <= 2", "criteria": {"max_se": 0.0089, "epsilon": 2.0}}},
            {"candidate": "grr_tiny", "parameter": "eps", "range": [0.01, 0.1],
             "most_private": {"none": "max_se <= 0.01 is not met in [0.01, 0.1]"}, "best_utility": None}],
        "reps": 200, "seed": 1,
        "spec": SPEC,
    }


def plotless(doc: dict) -> dict:
    """The document without anything to plot: renders with jinja2 alone."""
    doc = copy.deepcopy(doc)
    doc["frontiers"] = []
    for c in doc["candidates"]:
        c["se"] = None
        c["power"] = None
    return doc


class _Tree(HTMLParser):
    """Just enough of the DOM: table cells (text and attributes) by table class, ids, svgs."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[dict]]] = {}
        self.ids: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.svg_texts: list[list[str]] = []
        self._table: str | None = None
        self._cell: dict | None = None
        self._in_svg_text = False
        self.pre = ""
        self._in_pre = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if self._cell is not None:
            self._cell["text"] += " "  # a block or a superscript inside a cell: words apart
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "table":
            self._table = a.get("class", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = {"tag": tag, "text": "", **a}
            self.tables[self._table][-1].append(self._cell)
        elif tag == "svg":
            self.svg_texts.append([])
        elif tag == "text" and self.svg_texts:
            self._in_svg_text = True
        elif tag == "pre":
            self._in_pre = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None:
            self._cell["text"] = " ".join(self._cell["text"].split())
            self._cell = None
        elif tag == "text":
            self._in_svg_text = False
        elif tag == "pre":
            self._in_pre = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"] += data
        if self._in_svg_text:
            self.svg_texts[-1].append(data.strip())
        if self._in_pre:
            self.pre += data


def parse(page: str) -> _Tree:
    tree = _Tree()
    tree.feed(page)
    return tree


def _words(s: str) -> str:
    return " ".join(s.split())


# ---- HTML, no plots: jinja2 only -----------------------------------------------------------------
def test_html_criteria_table_cell_by_cell() -> None:
    doc = plotless(sample_doc())
    tree = parse(render_html(doc))
    header, *rows = tree.tables["criteria"]
    assert [_words(c["text"]) for c in header] == [
        "design", "mechanism", "estimator", "avar_trace utility, lower is better", "max_se utility, lower is better",
        "coverage privacy, higher is better", "prediction privacy, lower is better",
        "epsilon privacy, lower is better", "status"]
    assert header[4]["title"] == "largest standard error of the estimate at n"
    assert [r[0]["text"] for r in rows] == ["uniform", "pairs", "grr_1", "grr_3"]
    uniform, pairs, grr_1, grr_3 = rows
    # analytic value to 4 significant digits, the simulation beside it, the rank under it
    assert _words(uniform[3]["text"]) == "1.235 sim 1.25 ± 0.03 rank 3"
    assert _words(grr_1[4]["text"]) == "0.0157 sim 0.0155 ± 0.0008 rank 2"
    assert _words(grr_3[4]["text"]) == "0.00693 rank 1" and "best" in grr_3[4]["class"]
    assert "best" not in grr_1[4]["class"]
    # n/a: the reason as a tooltip and a footnote the cell links to
    assert uniform[7]["class"] == "na" and uniform[7]["title"] == NA_EPS["na"]
    assert _words(uniform[7]["text"]) == "n/a 1"
    assert _words(grr_3[7]["text"]) == "3 rank 2"
    assert "note-1" in tree.ids
    assert [_words(s) for s in ("on the frontier", "dominated: by uniform on max_se vs coverage")] == \
        [_words(uniform[-1]["text"]), _words(pairs[-1]["text"])]
    row_classes = [a.get("class", "") for t, a in tree.tags if t == "tr" and "candidate" in a.get("class", "")]
    assert ["dominated" in c for c in row_classes] == [False, True, False, False]


def test_html_exact_forms_notes_and_sections() -> None:
    page = render_html(plotless(sample_doc()))
    assert 'title="exactly 617/500">1.235</span>' in page
    # one footnote for the one reason shared by two cells, naming both
    notes = re.findall(r'<li id="note-(\d+)">(.*?)</li>', page)
    assert notes == [("1", "subset designs have no finite local-DP epsilon (uniform / epsilon, pairs / epsilon)")]
    tree = parse(page)
    assert [[_words(c["text"]) for c in r] for r in tree.tables["sample-sizes"]] == [
        ["design", "max_se <= 0.01"], ["uniform", "4040"], ["pairs", "9735"], ["grr_1", "2465"], ["grr_3", "481"]]
    inverse = [[_words(c["text"]) for c in r] for r in tree.tables["inverse"]]
    assert inverse[1] == ["grr_eps", "eps", "[0.1, 10]", "eps = 1.7 meets max_se <= 0.01 (max_se 0.0099, epsilon 1.7)",
                          "eps = 2 at epsilon <= 2 (max_se 0.0089, epsilon 2)"]
    assert inverse[2][3:] == ["none: max_se <= 0.01 is not met in [0.01, 0.1]", "—"]
    assert "Targets: max_se &lt;= 0.01." in page
    assert "200 simulated replications, seed 1." in page
    assert tree.pre == SPEC  # the spec verbatim once unescaped
    assert "<svg" not in page and 'id="frontiers"' not in page  # nothing to plot: no plot sections


def test_html_escapes_what_the_user_wrote() -> None:
    doc = plotless(sample_doc())
    doc["title"] = 'Designs <script>alert("x")</script>'
    doc["candidates"][0]["name"] = "<b>uniform</b>"
    doc["candidates"][0]["values"]["epsilon"] = {"value": None, "na": 'no "epsilon" <here>'}
    page = render_html(doc)
    assert "<script" not in page and "<b>uniform</b>" not in page and "<b>markup</b>" not in page
    assert "&lt;b&gt;uniform&lt;/b&gt;" in page and "&lt;b&gt;markup&lt;/b&gt;" in page
    tree = parse(page)
    assert tree.tables["criteria"][1][7]["title"] == 'no "epsilon" <here>'


@pytest.mark.parametrize("doc", [
    {},
    {"kind": "comparison", "name": "c", "criteria": None, "candidates": None, "frontiers": None, "targets": None,
     "planning": None, "inverse": None, "reps": None, "seed": None, "spec": None, "title": None},
    {"criteria": ["max_se"], "candidates": [{"name": "a"}, {"name": "b", "values": {"max_se": 0.5}, "rank": None,
                                                          "dominated_by": None, "sample_size": None}]},
], ids=["empty", "all-none", "sparse"])
def test_optional_keys_may_be_missing(doc: dict, tmp_path: Path) -> None:
    page = render_html(doc)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    md = Path(write_markdown(doc, tmp_path / "r.md")[0]).read_text(encoding="utf-8")
    assert md.startswith("# ")
    if doc.get("candidates"):
        cells = parse(page).tables["criteria"]
        assert _words(cells[1][3]["text"]) == "—" and _words(cells[2][3]["text"]) == "0.5"
    else:
        assert "No candidate designs." in page and "No candidate designs." in md


@pytest.mark.parametrize("x, text", [(1.23456, "1.235"), (0.000123456, "0.0001235"), (12345.678, "1.235e+04"),
                                     (2.0, "2"), (1000, "1000"), (12345, "12,345"), (None, "—"),
                                     (float("nan"), "nan"), (float("-inf"), "-inf"), ("inf", "inf")])
def test_numbers_have_four_significant_digits(x, text: str) -> None:
    assert fmt(x) == text


# ---- Markdown ------------------------------------------------------------------------------------
def _tables(md: str) -> list[list[list[str]]]:
    """Every Markdown table: its rows split on unescaped pipes (the separator row kept)."""
    tables, current = [], None
    for line in md.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if current is None:
                current = []
                tables.append(current)
            current.append(cells)
        else:
            current = None
    return tables


def test_markdown_tables_are_real_tables(tmp_path: Path) -> None:
    md = Path(write_markdown(plotless(sample_doc()), tmp_path / "report.md")[0]).read_text(encoding="utf-8")
    tables = _tables(md)
    assert len(tables) == 3  # criteria, sample sizes, inverse design (no se: nothing plotted, no table)
    for t in tables:
        assert all(set(c) == set("-") for c in t[1]), t[1]  # the separator row
        assert {len(r) for r in t} == {len(t[0])}, t  # every row as wide as the header
    crit = tables[0]
    assert crit[0] == ["design", "mechanism", "estimator", r"avar\_trace", r"max\_se", "coverage", "prediction",
                       "epsilon", "status"]
    assert crit[3][3] == "2.987 (sim 3.02 ± 0.07), rank 4"
    assert crit[5][4] == "**0.00693**, rank 1"
    assert crit[2][7] == "n/a [1]" and "1. subset designs have no finite local-DP epsilon" in md
    assert crit[3][8] == r"dominated: by uniform on max\_se vs coverage"
    # the spec in a fence longer than the spec's own ``` run
    assert "\n````\n" + SPEC + "````\n" in md


def test_markdown_writes_pngs_beside_it(tmp_path: Path) -> None:
    out = tmp_path / "my report.md"
    paths = write_markdown(sample_doc(), out)
    names = [Path(p).name for p in paths]
    assert names == ["my report.md", "my report_frontier_1.png", "my report_frontier_2.png",
                     "my report_se.png", "my report_power.png"]
    md = out.read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    from urllib.parse import unquote
    assert [unquote(i) for i in images] == names[1:]  # relative, in the order of the sections
    for p in paths[1:]:
        data = Path(p).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    se = [t for t in _tables(md) if t[0][0] == "category"][0]
    assert se[0] == ["category", "uniform", "pairs", r"grr\_1", r"grr\_3"]
    assert [r[0] for r in se[2:]] == LABELS and se[4][1:] == ["0.0154", "0.0243", "0.0121", "0.0066"]
    assert sorted(os.listdir(tmp_path)) == sorted(names)  # no temporary file left behind


# ---- write_report, the extras ----------------------------------------------------------------------
def test_write_report_dispatches_on_the_suffix(tmp_path: Path) -> None:
    doc = plotless(sample_doc())
    (tmp_path / "r.HTM").write_text("old", encoding="utf-8")
    with pytest.raises(DataError, match="exists"):   # not replaced unless asked
        write_report(doc, tmp_path / "r.HTM")
    assert (tmp_path / "r.HTM").read_text(encoding="utf-8") == "old"
    assert write_report(doc, tmp_path / "r.HTM", force=True) == [str(tmp_path / "r.HTM")]
    assert (tmp_path / "r.HTM").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")  # replaced
    assert write_report(doc, str(tmp_path / "r.md")) == [str(tmp_path / "r.md")]
    with pytest.raises(ValueError, match=r"r\.pdf.*FILE\.html.*FILE\.md"):
        write_report(doc, tmp_path / "r.pdf")
    assert sorted(os.listdir(tmp_path)) == ["r.HTM", "r.md"]


def test_missing_jinja2_or_matplotlib_is_B031(monkeypatch, tmp_path: Path) -> None:
    doc = sample_doc()
    monkeypatch.setitem(sys.modules, "jinja2", None)  # import jinja2 -> ImportError
    with pytest.raises(BackendError) as err:
        render_html(plotless(doc))
    # jinja2 and matplotlib are dependencies (issue 35: reports out of the box), not an extra
    assert err.value.code == "B031" and err.value.diagnostics[0].hint == "pip install jinja2 matplotlib"
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(BackendError, match="needs jinja2 and matplotlib") as err:
        write_markdown(doc, tmp_path / "r.md")
    assert err.value.code == "B031"
    assert not (tmp_path / "r.md").exists()
    # nothing to plot: Markdown needs neither
    write_markdown(plotless(doc), tmp_path / "r.md")


# ---- HTML with plots -----------------------------------------------------------------------------
def test_html_is_self_contained_with_inline_svg() -> None:
    page = render_html(sample_doc())
    tree = parse(page)
    assert len(tree.svg_texts) == 4  # two frontiers, the standard errors, the power curves
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page
    # nothing that a browser would fetch: links only within the page, namespaces aside
    for tag, attrs in tree.tags:
        for k in ("src", "href", "xlink:href", "action", "data", "poster"):
            assert not attrs.get(k) or attrs[k].startswith("#"), (tag, k, attrs[k])
    assert not re.search(r"@import|url\((?!#)", page)
    assert set(re.findall(r"https?://[^\s\"'<>]*", page)) <= {"http://www.w3.org/2000/svg",
                                                             "http://www.w3.org/1999/xlink"}
    assert "default-src 'none'" in page
    assert len(tree.ids) == len(set(tree.ids))  # four matplotlib SVGs in one page, no id twice
    referenced = set(re.findall(r'(?:url\(#|href="#)([^)"]+)', page))
    assert referenced <= set(tree.ids)
    # every plotted point labelled with its design; designs without both numbers not plotted
    frontier_1, frontier_2, se, power = tree.svg_texts
    assert {"grr_1", "grr_3"} <= set(frontier_1) and not {"uniform", "pairs"} & set(frontier_1)
    assert {"uniform", "pairs", "grr_1", "grr_3"} <= set(frontier_2)
    assert "Not plotted (no number on both criteria): uniform, pairs." in page
    assert {"uniform", "pairs", "grr_1", "grr_3"} | set(LABELS) <= set(se)
    assert {"uniform", "pairs", "grr_1", "grr_3", "target power 0.8"} <= set(power)
    assert render_html(sample_doc()) == page  # reproducible: no date, fixed ids


# ---- a real browser (the `browser` fixture of conftest.py) ---------------------------------------
def test_report_in_headless_chromium(tmp_path: Path, browser) -> None:
    import matplotlib.image as mimage
    import matplotlib
    import numpy as np

    doc = sample_doc()
    page_path = tmp_path / "report.html"
    assert write_report(doc, page_path) == [str(page_path)]
    page = page_path.read_text(encoding="utf-8")
    url = page_path.as_uri()

    # the DOM as the browser built it: the four plots are svg elements with their labels
    dom = browser.run("--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert browser.console(dom.stderr) == []
    tree = parse(dom.stdout)
    assert len(tree.svg_texts) == 4
    assert {"grr_1", "grr_3"} <= set(tree.svg_texts[0]) and "uniform" in tree.svg_texts[1]
    assert len(tree.tables["criteria"]) == 5 and tree.tables["criteria"][1][7]["title"] == NA_EPS["na"]

    # where the plots are drawn: a copy of the page with a measuring script (the page's own
    # CSP forbids scripts, so the copy allows inline ones; the layout is the same)
    m = browser.measure(page_path)
    height = int(m["height"])
    assert len(m["plots"]) == 4 and all(w > 300 and h > 200 for _, _, w, h in m["plots"])

    # the screenshot of the real page, tall enough for all of it
    shot = tmp_path / "report.png"
    run = browser.run(f"--screenshot={shot}", f"--window-size=1200,{height}", url)
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    assert browser.console(run.stderr) == []  # no script error, no load refused by the CSP
    img = mimage.imread(shot)[..., :3]
    assert img.shape[:2] == (height, 1200)

    tab10 = matplotlib.colormaps["tab10"].colors
    colour = {c["name"]: np.array(tab10[i]) for i, c in enumerate(doc["candidates"])}

    def shows(region: np.ndarray, name: str) -> bool:
        """At least a few pixels of the design's colour (anti-aliasing blends the edges)."""
        return int((np.abs(region - colour[name]).max(axis=-1) < 0.02).sum()) >= 15

    expected = [({"grr_1", "grr_3"}, {"uniform", "pairs"}),                # epsilon: subset designs n/a
                ({"uniform", "grr_1", "grr_3"}, {"pairs"}),               # pairs dominated: hollow grey
                ({"uniform", "pairs", "grr_1", "grr_3"}, set()),          # standard errors
                ({"uniform", "pairs", "grr_1", "grr_3"}, set())]          # power curves
    for (left, top, width, h), (drawn, absent) in zip(m["plots"], expected):
        region = img[int(top):int(top + h), int(left):int(left + width)]
        assert region.shape[0] > 200 and region.shape[1] > 300
        ink = (region < 0.9).any(axis=-1).mean()
        assert ink > 0.03, f"plot at y={top} is blank ({ink:.1%} non-white)"
        distinct = len(np.unique((region * 31).round().reshape(-1, 3), axis=0))
        assert distinct >= 8, distinct
        assert {n for n in colour if shows(region, n)} == drawn, (top, drawn, absent)


def test_markdown_escapes_what_the_user_wrote(tmp_path: Path) -> None:
    """Titles, design names, reasons and the test's description reach Markdown escaped, as
    they reach HTML: no inline HTML a viewer would run, no pipe that breaks a table, no
    star that starts emphasis (issue 33)."""
    doc = sample_doc()
    doc["title"] = 'Designs <script>alert("x")</script> | *all*'
    doc["candidates"][0]["name"] = "<b>uni|form</b>"
    doc["candidates"][0]["values"]["epsilon"] = {"value": None, "na": "no *epsilon* <here> & | there"}
    doc["planning"]["test"] = "test of w[<i>Black</i>] = 0.08 | *two-sided*"
    md = Path(write_markdown(doc, tmp_path / "r.md")[0]).read_text(encoding="utf-8")
    body = md.split("## Spec")[0]                  # the spec itself is in a code fence, verbatim
    assert "<" not in body.replace("&lt;", "") and ">" not in body.replace("&gt;", "")
    assert "# Designs &lt;script&gt;alert(\"x\")&lt;/script&gt; \\| \\*all\\*" in md
    assert "test of w\\[&lt;i&gt;Black&lt;/i&gt;\\] = 0.08 \\| \\*two-sided\\*" in md
    assert "no \\*epsilon\\* &lt;here&gt; &amp; \\| there" in md
    for t in _tables(md):                          # the pipes in names did not add columns
        assert {len(r) for r in t} == {len(t[0])}, t
    assert _tables(md)[0][2][0] == "**&lt;b&gt;uni\\|form&lt;/b&gt;**"


def test_a_design_on_one_frontier_is_not_called_dominated() -> None:
    """Issue 35: the status column said "dominated" of designs on the frontier of another
    pair of criteria (the best on utility); a design on any frontier is a choice, and the
    criteria that draw no frontier are said with why."""
    doc = sample_doc()
    doc["candidates"][0].update(pareto=True, frontiers_on=["max_se vs prediction"],
                                dominated_by={"max_se vs epsilon": ["grr_2"]})
    doc["not_on_frontiers"] = {"coverage": "not finite for every candidate: n/a for grr_2"}
    page = render_html(plotless(doc))
    assert "on the frontier of max_se vs prediction" in page
    assert "No frontier on <strong>coverage</strong>: not finite for every candidate: n/a for grr_2" in page


# ---- the verdict first (issue 35) ------------------------------------------------------------------
VERDICT = {"candidate": "grr_1", "text": "grr_1: the most private on epsilon of the designs that meet every target",
           "reasons": ["meets max_se <= 0.016 at n = 1000", "epsilon 1 against 3 for grr_3"],
           "decided_by": "epsilon", "runner_up": "grr_3",
           "changes": ["grr_3 wins where epsilon <= 3 is allowed and max_se <= 0.01 asked"],
           "notes": ["max_se of grr_1 is simulated: the asymptotic value is more than 10% off"]}
NO_DESIGN = {"candidate": None, "text": "no design meets every target at n = 1000", "reasons": [],
             "decided_by": None, "runner_up": None, "changes": [],
             "missing": ["max_se <= 0.005: the best is grr_3 with 0.00693"],
             "fixes": ["grr_3 meets it from n = 1,921", "grr at epsilon 4.2 meets it at n = 1000"]}


def with_verdict(doc: dict, verdict: dict = VERDICT) -> dict:
    """The document with a verdict (the back end's Recommendation, as JSON)."""
    doc = copy.deepcopy(doc)
    doc["recommendation"] = copy.deepcopy(verdict)
    return doc


def _formats(doc: dict, tmp_path: Path) -> dict[str, str]:
    """The document in every format privspec writes it: the CLI's text, Markdown and LaTeX
    (the tables), the report's Markdown and HTML."""
    from privspec.results.comparison import ComparisonDocument
    from privspec.results.report import comparison_latex, comparison_markdown, comparison_text

    typed = ComparisonDocument.from_dict(doc)
    return {"text": comparison_text(typed), "markdown": comparison_markdown(typed), "latex": comparison_latex(typed),
            "report.md": Path(write_markdown(doc, tmp_path / "r.md")[0]).read_text(encoding="utf-8"),
            "report.html": render_html(doc)}


def test_every_format_opens_with_the_verdict(tmp_path: Path) -> None:
    """Issue 35: a comparison opens with its recommendation in every format (before, the
    text appended it as a note of the criteria table, and the report had none)."""
    out = _formats(plotless(with_verdict(sample_doc())), tmp_path)
    text = out["text"].strip("\n").splitlines()
    assert text[:2] == ["  Verdict: use grr_1", f"    - {VERDICT['text']}"]
    assert "    - why: epsilon 1 against 3 for grr_3" in text and "    - runner-up: grr_3" in text
    assert f"    - would change the choice: {VERDICT['changes'][0]}" in text
    assert f"    - note: {VERDICT['notes'][0]}" in text
    assert text.index("    - runner-up: grr_3") < text.index("  race_designs: distribution(race) at n = 1,000 "
                                                              "([rank], 1 best; sim: 200 replications, +- Monte "
                                                              "Carlo error)")
    assert out["markdown"].startswith("**Verdict: use grr\\_1**\n")
    assert out["latex"].startswith("\\paragraph{Verdict: use grr\\_1}\n\n\\begin{itemize}\n\\item grr\\_1: the most")
    md = out["report.md"]
    headings = re.findall(r"^## (.*)$", md, re.M)
    assert headings[0] == "Verdict" and headings[1] == "Criteria"
    verdict = md.split("## Verdict\n")[1].split("\n## ")[0]
    assert verdict.startswith("\n**Use grr\\_1.**\n") and "Runner-up: **grr\\_3**." in verdict
    assert "Why:\n\n- meets max\\_se &lt;= 0.016 at n = 1000\n- epsilon 1 against 3 for grr\\_3" in verdict
    assert "What would change the choice:\n\n- grr\\_3 wins" in verdict and "Notes:\n\n- max\\_se of grr\\_1" in verdict
    tree = parse(out["report.html"])
    sections = [a["id"] for t, a in tree.tags if t == "section"]
    assert sections[0] == "verdict" and sections[1] == "criteria"
    page = out["report.html"]
    assert '<p class="recommended">Use <strong class="candidate">grr_1</strong>.</p>' in page
    assert "Runner-up: <strong>grr_3</strong>." in page and "<h3>What would change the choice</h3>" in page


def test_a_verdict_without_a_design_says_what_is_missing_and_the_fixes(tmp_path: Path) -> None:
    out = _formats(plotless(with_verdict(sample_doc(), NO_DESIGN)), tmp_path)
    text = out["text"].strip("\n").splitlines()
    assert text[0] == "  Verdict: no design meets the targets"
    assert "    - missing: max_se <= 0.005: the best is grr_3 with 0.00693" in text
    assert "    - fix: grr_3 meets it from n = 1,921" in text and "    - fix: grr at epsilon 4.2 meets it at n = 1000" in text
    assert "**No design meets the targets.**" in out["report.md"] and "Cheapest fixes:" in out["report.md"]
    page = out["report.html"]
    assert '<p class="recommended none">No design meets the targets.</p>' in page
    assert "<h3>What is missing</h3>" in page and "<li>grr_3 meets it from n = 1,921</li>" in page
    assert 'class="recommended"' not in page.split('id="criteria"')[1]  # no row is marked recommended


def test_the_recommended_design_is_never_called_dominated() -> None:
    """Issue 35: the status column called the design to use "dominated"; the recommended
    design's status is "recommended", first, whatever the frontiers say."""
    doc = with_verdict(sample_doc(), {**VERDICT, "candidate": "pairs"})   # pairs: dominated on a frontier
    tree = parse(render_html(plotless(doc)))
    rows = {r[0]["text"]: r for r in tree.tables["criteria"][1:]}
    assert _words(rows["pairs"][-1]["text"]) == "recommended"
    assert _words(rows["uniform"][-1]["text"]) == "on the frontier"
    classes = {a.get("class") for t, a in tree.tags if t == "tr" and "candidate" in a.get("class", "")}
    assert "candidate recommended" in classes and "candidate recommended dominated" not in classes
    md_rows = _tables(_markdown_of(doc))[0]
    assert md_rows[3][0] == "**pairs**" and md_rows[3][-1] == "recommended"


def _markdown_of(doc: dict) -> str:
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        return Path(write_markdown(plotless(doc), Path(tmp) / "r.md")[0]).read_text(encoding="utf-8")


@pytest.mark.slow   # the whole bundled compare block (seconds) and three Chromium runs
def test_bundled_report_in_headless_chromium_opens_with_the_verdict(tmp_path: Path, browser) -> None:
    """Out of the box (issue 35): the report of a bundled compare spec with targets, as
    the README's command writes it, opened in headless Chromium: the verdict is the first
    section and names the recommended design, every plot is drawn (a non-zero size in the
    page), and nothing outside the page is requested."""
    import privspec

    spec = privspec.load(Path(__file__).parents[1] / "specs" / "compare_interval.privspec")
    page_path = tmp_path / "anchors.html"
    doc = spec.compare(report=page_path)["anchors"].value
    best = doc.recommendation.candidate
    assert best is not None
    page = page_path.read_text(encoding="utf-8")
    assert set(re.findall(r"https?://[^\s\"'<>]*", page)) <= {"http://www.w3.org/2000/svg",
                                                             "http://www.w3.org/1999/xlink"}
    dom = browser.run("--dump-dom", page_path.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert browser.console(dom.stderr) == []         # the page's CSP refused no load, no script ran
    tree = parse(dom.stdout)
    sections = [a["id"] for t, a in tree.tags if t == "section"]
    assert sections[0] == "verdict", sections
    verdict = dom.stdout.split('<section id="verdict">')[1].split("</section>")[0]
    assert f'Use <strong class="candidate">{best}</strong>.' in verdict
    rows = {r[0]["text"]: r for r in tree.tables["criteria"][1:]}
    assert _words(rows[best][-1]["text"]) == "recommended"
    m = browser.measure(page_path)
    figures = dom.stdout.count('<figure class="plot')
    assert figures >= 1 and len(m["plots"]) == figures
    assert all(w > 100 and h > 50 for _, _, w, h in m["plots"]), m["plots"]


def test_each_designs_flags_are_in_every_format(tmp_path) -> None:
    """A flag on a design (an asymptotic value replaced by a simulated one, a CV over the
    publication rule) is said in the text, Markdown and HTML, not only in the JSON."""
    import privspec
    from privspec.results.compare_report import render_html, write_markdown
    from privspec.results.comparison_tables import blocks
    spec = privspec.load('''
variable race: categorical {"Amer-Indian-Eskimo", "Asian-Pac-Islander", Black, Other, White}
population race ~ categorical(0.009551, 0.031909, 0.095943, 0.008323, 0.854274)
compare d for distribution(race) at n = 1000 target max_cv <= 0.3 {
    uniform = subset(race, uniform)
    grr_3   = grr(race, epsilon = 3)
} by max_cv, prediction''')
    doc = spec.compare()["d"].value
    flag = next(f for c in doc.candidates if c.name == "uniform" for f in c.flags if f.startswith("CV of"))
    text = "\n".join(n for b in blocks(doc) for n in b.notes)
    assert f"uniform: {flag}" in text
    write_markdown(doc, tmp_path / "r.md")
    assert flag.split(",")[0] in (tmp_path / "r.md").read_text()
    assert flag.split(",")[0] in render_html(doc)
