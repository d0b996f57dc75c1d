"""Readable reports (issue 16): text grids and folded lines, Markdown tables, LaTeX
documents that compile (privspec.results.report)."""
from __future__ import annotations

import io
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
import sympy

import privspec
from privspec.cli import main
from privspec.results.report import from_plain, plain, render, tex
from privspec.results.kinds import Avar, Bounds, Budget, Coverage, Epsilon, Estimate, HypothesisTest, Moments
from privspec.results.result import Result
from privspec.results.values import Matrix, StepFunction, Table, TestResult, Vector

SPECS = sorted((Path(__file__).resolve().parent.parent / "specs").glob("*.privspec"))
PDFLATEX = shutil.which("pdflatex")


@lru_cache(maxsize=None)
def analyzed(path: Path):
    """``privspec analyze`` of a bundled spec through the API (what the CLI prints)."""
    res = privspec.load(path).analyze()
    assert res.results and res.ok, res
    return res


def bundled() -> list:
    """The bundled specs with a query that ``analyze`` answers (one that needs no data)."""
    from privspec.model import query_kinds

    return [pytest.param(p, id=p.stem) for p in SPECS
            if any(not query_kinds.needs_data(q.kind) for q in privspec.load(p).model.queries.values())]


# ---- Markdown: what the user wrote is escaped once (issue 33) -------------------------------------
XSS = """spec "<script>alert('t')</script> | *bold* & more"
variable w: categorical {"<script>alert(1)</script>", "a|b", "*c*", "d_e"}
population w ~ categorical(0.1, 0.2, 0.3, 0.4)
mechanism m = grr(w, epsilon = 1)
query v = avar(distribution(w) from m by mom)
query pw = power(distribution(w) from m, n = 1000, test = proportion("<script>alert(1)</script>", 0.2))
"""


@pytest.mark.slow   # 5 s: a whole comparison report
def test_markdown_escapes_titles_labels_and_test_descriptions(tmp_path: Path) -> None:
    """A title, labels and a test's description holding HTML, pipes and stars: Markdown
    gets them escaped (``&lt;``, ``\\|``, ``\\*``), as HTML and LaTeX do, so no viewer runs
    a script, breaks a table or starts emphasis; the command line's output is the same."""
    import html
    import re

    path = tmp_path / "xss.privspec"
    path.write_text(XSS, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert main(["analyze", str(path), "--format", "markdown"], stdout=out, stderr=err) == 0, err.getvalue()
    md = out.getvalue()
    assert "<" not in md and ">" not in md.replace("&gt;", "")
    assert md.startswith("## &lt;script&gt;alert('t')&lt;/script&gt; \\| \\*bold\\* &amp; more\n")
    assert "| test | one-sample two-sided Wald test of w\\[&lt;script&gt;alert(1)&lt;/script&gt;\\] = 0.2" in md
    matrix_header = next(ln for ln in md.splitlines() if ln.startswith("|   |"))   # v's columns
    header = [c.strip() for c in re.split(r"(?<!\\)\|", matrix_header)[1:-1]]
    assert len(header) == 5                                  # "a|b" did not add a column
    shown = [html.unescape(re.sub(r"\\(.)", r"\1", c)) for c in header[1:]]
    assert shown == ["<script>alert(1)</script>", "a|b", "*c*", "d_e"]   # what a viewer shows
    assert privspec.load(path).analyze().render("markdown") == md.rstrip("\n")


# ---- text ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [p if p.id not in ("planning", "language", "randomized_response")
                                  else pytest.param(*p.values, id=p.id, marks=pytest.mark.slow) for p in bundled()])
def test_text_lines_are_short(path: Path) -> None:
    """No line of the text report of a bundled spec is longer than 200 characters (the
    report folds at 100; only a grid of many columns may be wider)."""
    res = analyzed(path)
    text = res.render("text")
    longest = max(text.split("\n"), key=len)
    assert len(longest) <= 200, (len(longest), longest[:120])


@pytest.mark.slow
def test_cli_text_matches_the_api_and_is_short() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["analyze", str(SPECS[0].parent / "randomized_response.privspec")], stdout=out, stderr=err) == 0
    assert max(len(ln) for ln in out.getvalue().split("\n")) <= 200
    assert "Matrix(" not in out.getvalue() and "**" not in out.getvalue()


def test_exact_forms_as_a_statistician_writes_them() -> None:
    e = sympy.E
    text = Coverage(-e / (e + 4) + 1).summary()
    assert text.startswith(f"{float(-e / (e + 4) + 1):.6g} (exactly ") and "E" not in text, text
    assert from_plain(text.split("(exactly ")[1][:-1]) == -e / (e + 4) + 1
    assert Epsilon(sympy.oo).summary() == "inf"             # not "inf (exactly oo)"
    assert Epsilon(sympy.log(3)).summary() == "1.09861 (exactly log(3))"
    assert plain("2*exp(-1/2)/(1 - exp(-1/2))**2") == "2*exp(-1/2)/(1 - exp(-1/2))^2"
    assert Result("x", sympy.Integer(3)).summary() == "3"


def test_long_symbolic_forms_are_folded_or_summarised() -> None:
    eps = sympy.Symbol("eps", positive=True)
    long = sum(sympy.Integer(10 ** 9 + k) * sympy.exp(k * eps) for k in range(12)) / (sympy.exp(eps) - 1) ** 2
    text = Avar(long).summary()
    assert len(text) > 100 and all(len(ln) <= 100 for ln in text.split("\n")), text
    unfolded = " ".join(ln.strip() for ln in text.split("\n"))
    assert unfolded == plain(str(long)) and str(from_plain(unfolded)) == str(long)
    big = Avar(Matrix(("a", "b"), ("a", "b"), sympy.Matrix([[long, -long], [-long, long]])))
    first = big.summary().split("\n")[0]
    assert first.startswith("a 2 x 2 matrix in eps") and "--format json or latex" in first, first
    small = Avar(Matrix(("a", "b"), ("a", "b"), sympy.Matrix([[eps, 2 * eps], [0, eps ** 2]])))
    lines = small.summary().split("\n")
    assert lines[1].split() == ["a", "b"] and lines[2].split() == ["a", "eps", "2*eps"] \
        and lines[3].split() == ["b", "0", "eps^2"], lines
    # the JSON keeps the full forms
    assert big.to_dict()["expr"].startswith("Matrix([[") and "latex" in big.to_dict()


def test_joint_tables_as_grids_a_slice_per_extra_dimension() -> None:
    t2 = Table(("g", "i"), (("F", "M"), ("L", "H")), np.array([[0.1, 0.2], [0.3, 0.4]]))
    lines = Estimate(t2).summary().split("\n")
    assert lines[1].split() == ["g", "\\", "i", "L", "H"] and lines[2].split() == ["F", "0.1", "0.2"] \
        and lines[3].split() == ["M", "0.3", "0.4"], lines
    t3 = Table(("a", "g", "i"), (("x", "y"), ("F", "M"), ("L", "H")), np.arange(8.0).reshape(2, 2, 2) / 8)
    text = Estimate(t3).summary()
    assert "[a = x]" in text and "[a = y]" in text and "{" not in text, text
    assert text.split("[a = y]")[1].split("\n")[3].split() == ["M", "0.75", "0.875"]
    md = render("markdown", "t", {"j": Estimate(t3)})
    assert "*a = x*" in md and "| **M** | 0.75 | 0.875 |" in md
    latex = render("latex", "t", {"j": Estimate(t3)})
    assert latex.count("\\begin{tabular}") == 2 and "a = y" in latex


def test_long_mappings_go_one_key_a_line() -> None:
    bounds = {f"w={k}": {"attributes": ["race", "sex"][:k], "independent": 0.2 / k, "castell": 0.00037952 * k,
                         "castell_rounding_exact": 0.0001737, "castell_sd_uniform": 0.0086671} for k in (1, 2)}
    text = Bounds(bounds).summary()
    assert text.split("\n")[1:3] == ["  w=1: ", "    attributes: [race]"], text
    grid = {r: {c: i + j for j, c in enumerate(("age", "sex", "region", "race", "degree", "band", "x", "y"))}
            for i, r in enumerate("ABCD")}
    lines = Budget(grid).summary().split("\n")
    assert lines[1].split() == ["age", "sex", "region", "race", "degree", "band", "x", "y"]
    assert lines[2].split() == ["A", "0", "1", "2", "3", "4", "5", "6", "7"]


def test_step_functions_and_tests() -> None:
    f = Estimate(StepFunction(((0.0, 1.0), (2.0, float("inf"))), (0.5, 0.5)), loglik=-3.2)
    lines = f.summary().split("\n")
    assert lines[1].split() == ["interval", "mass"] and lines[3].split() == ["(2,", "inf]", "0.5"], lines
    t = HypothesisTest(TestResult("lrt", 3.5, 1, 0.06)).summary()
    assert t == "{method: lrt, statistic: 3.5, df: 1, p_value: 0.06}"


# ---- Markdown ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [p if p.id not in ("planning", "language", "randomized_response")
                                  else pytest.param(*p.values, id=p.id, marks=pytest.mark.slow) for p in bundled()])
def test_markdown_has_tables_not_code_fences(path: Path) -> None:
    res = analyzed(path)
    md = res.render("markdown")
    assert "```" not in md
    assert md.startswith("## ") and md.count("\n### ") == len(res.results)
    assert "|---|" in md
    for block in md.split("\n### ")[1:]:
        tables = [ln for ln in block.split("\n") if ln.startswith("|")]
        assert all(ln.endswith("|") for ln in tables), block[:200]


def test_markdown_vector_and_matrix_tables() -> None:
    r = Estimate(Vector(("a", "b_c"), (0.25, 0.75)), se=Vector(("a", "b_c"), (0.1, 0.1)), n=100)
    md = render("markdown", "T", {"w_1": r})
    assert md.split("\n\n")[:3] == ["## T", "### w\\_1 (estimate)", "| a | b\\_c |\n|---|---|\n| 0.25 | 0.75 |"], md
    assert "| n | 100 |" in md and "**se**:" in md


# ---- LaTeX ---------------------------------------------------------------------------------------
SPECIALS = "a_b%c&d#e$f{g}h~i^j\\k"


def test_latex_escapes_names_and_is_a_document() -> None:
    r = Estimate(Vector(("x_1", "50%"), (0.25, 0.75)), note="p_k & q^2 ~ 100% #1 {x} $y \\z")
    doc = render("latex", SPECIALS, {SPECIALS: r})
    assert doc.startswith("\\documentclass{article}\n\\usepackage{amsmath}") and doc.endswith("\\end{document}")
    assert "\\section*{" + tex(SPECIALS) + "}" in doc
    assert tex(SPECIALS) == r"a\_b\%c\&d\#e\$f\{g\}h\textasciitilde{}i\textasciicircum{}j\textbackslash{}k"
    assert "x\\_1 & 50\\% \\\\" in doc


def test_latex_exact_matrix_is_a_bmatrix_with_labels() -> None:
    m = Moments(Matrix(("a", "b"), ("a", "b"), sympy.Matrix([[1, sympy.Rational(1, 3)], [0, 1]])))
    body = m.as_latex()
    assert "\\begin{bmatrix}1 & \\frac{1}{3}\\\\0 & 1\\end{bmatrix}" in body
    assert "\\begin{tabular}{l|rr}" in body and "a & 1 & 0.333333 \\\\" in body


def _compile(tex_source: str, tmp_path: Path) -> None:
    (tmp_path / "report.tex").write_text(tex_source, encoding="utf-8")
    done = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "report.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    errors = [ln for ln in done.stdout.split("\n") if ln.startswith("!")]
    assert done.returncode == 0 and (tmp_path / "report.pdf").exists(), (errors, done.stdout[-2000:])


@pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed (Debian: apt-get install texlive-latex-base); "
                                            ".ci/run installs it and compiles every bundled spec's report")
@pytest.mark.parametrize("name", ["urn", pytest.param("randomized_response", marks=pytest.mark.slow)])
def test_latex_report_compiles(name: str, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["analyze", str(SPECS[0].parent / f"{name}.privspec"), "--format", "latex"], stdout=out,
                stderr=err) == 0
    _compile(out.getvalue(), tmp_path)


@pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed (Debian: apt-get install texlive-latex-base)")
def test_latex_of_every_value_kind_compiles(tmp_path: Path) -> None:
    eps = sympy.Symbol("eps", positive=True)
    results = {
        SPECIALS: Estimate(Vector(("x_1", "50%"), (0.25, 0.75)), note=SPECIALS, n=3),
        "t3": Estimate(Table(("a_b", "g", "i"), (("x", "y"), ("F", "M"), ("L", "H")),
                             np.arange(8.0).reshape(2, 2, 2))),
        "m": Result("avar", Matrix(("a", "b"), ("a", "b"), sympy.Matrix([[eps, -eps], [-eps, eps]])),
                    {"trace": 2 * eps, "mapping": {"w=1": {"k_1": 1.5, "l": [1, 2]}, "z": float("inf")}}),
        "f": Estimate(StepFunction(((0.0, 1.0), (2.0, float("inf"))), (0.5, 0.5))),
        "s": HypothesisTest(TestResult("lrt", 3.5, 1, 0.06)),
        "e": Epsilon(sympy.oo, reason="Pr(Z | Y) < 1 <= 2 > 0"),
    }
    _compile(render("latex", "all kinds", results), tmp_path)


def test_wide_grids_come_in_bands_of_columns() -> None:
    labels = tuple(f"c{i}" for i in range(20))
    text = Avar(Matrix(labels[:3], labels, np.arange(60.0).reshape(3, 20) / 7)).summary()
    lines = text.split("\n")
    assert max(len(ln) for ln in lines) <= 160 and "(columns 1-13 of 20)" in lines and "(columns 14-20 of 20)" in lines
    assert lines[lines.index("(columns 14-20 of 20)") + 2].split() == ["c0", "1.85714", "2", "2.14286", "2.28571",
                                                                      "2.42857", "2.57143", "2.71429"]


# ---- captions: what each query answers, in plain words (issue 33) -----------------------------------
INDIVIDUAL = """variable race: categorical {Asian, Black, White, Other}
population race ~ categorical(0.1, 0.2, 0.6, 0.1)
mechanism m = subset(race, uniform)
query i = individual(m, {Black, White}, White)
query inline = epsilon(grr(race, epsilon = 1))
variable sex: categorical {F, M}
parameter e_race > 0
parameter e_sex > 0
mechanism q_race = grr(race, epsilon = e_race)
mechanism q_sex = grr(sex, epsilon = e_sex)
query plan = allocate(q_race, q_sex, total = 4)
variable y: continuous
mechanism c_a = interval(y, case1(normal(0, 1)))
mechanism c_b = interval(y, case1(logistic(0, 1)))
query both = composition(c_a, c_b)
"""


def test_every_query_kind_has_a_caption_from_its_arguments() -> None:
    """describe() covers every query kind of the table (the bundled specs have all but
    individual, allocate and composition, added here), names what the query's arguments name and never falls back
    to the kind's generic doc."""
    from privspec.model.query_kinds import QUERY_KINDS, describe

    models = [privspec.load(p).model for p in SPECS] + [privspec.load(INDIVIDUAL).model]
    seen: dict[str, list[str]] = {}
    for model in models:
        for q in model.queries.values():
            text = describe(q)
            seen.setdefault(q.kind, []).append(text)
            assert text and "\n" not in text and text != QUERY_KINDS[q.kind].doc, (q.name, text)
            named = [getattr(q.mechanism, "name", None), q.scope if isinstance(q.scope, str)
                     and not q.scope.startswith("per") else None]
            named += list(q.scope) if q.kind == "composition" else []
            for name in filter(None, named):
                assert name in text, (q.name, text)
            for v in (q.estimand.variables if q.estimand is not None else ()):
                assert v.name in text, (q.name, text)
    assert set(seen) == set(QUERY_KINDS)
    from privspec.model.query_kinds import describe_compare

    blocks = [b for model in models for b in model.compares.values()]
    assert blocks
    for b in blocks:
        text = describe_compare(b)
        assert f"of {len(b.candidates)} designs" in text and all(v.name in text for v in b.estimand.variables)
    model = privspec.load(SPECS[0].parent / "urn.privspec").model
    assert describe(model.queries["v_mom"]) == \
        "how precise the method-of-moments estimate of the color shares from urn is: n times its covariance"
    assert describe(models[-1].queries["inline"]).startswith("how private grr(race) is")   # no name: kind(variables)
    rr_regression = privspec.load(SPECS[0].parent / "rr_regression.privspec").model   # a categorical response (issue 37)
    assert describe(rr_regression.queries["which"]) == \
        "the logistic maximum-likelihood estimate of the regression of grade on age from the reports of grades"
    assert describe(models[-1].queries["i"]) == \
        "what reporting {Black, White} to m reveals about a respondent whose answer is White: leakage before and after"


def test_text_shows_rounding_noise_as_zero_json_keeps_it() -> None:
    """An entry below 1e-12 of the largest in its matrix, vector or list prints as 0 in
    text, Markdown, LaTeX and HTML; the JSON keeps its bits; a lone small number is no noise."""
    from privspec.results.report import latex_body, markdown_summary

    r = Result("avar", Matrix(("a", "b"), ("a", "b"), np.array([[0.75, -6.59e-17], [-6.59e-17, 0.5]])),
               {"eigenvalues": [0.75, 0.5, -6.59195e-17], "se": Vector(("a", "b"), (2e-20, 1e-20))})
    for shown in (r.summary(), markdown_summary(r), latex_body(r)):
        assert "e-17" not in shown and "e-20" in shown, shown          # the se pair is not noise beside itself
    assert "e-17" not in r._repr_html_() and "<td>0</td>" in r._repr_html_()
    assert r.to_dict()["eigenvalues"][2] == -6.59195e-17 and r.to_dict()["value"]["data"][0][1] == -6.59e-17
    assert "eigenvalues = [0.75, 0.5, 0]" in r.summary()
    assert Coverage(3e-17).summary() == "3e-17"
