"""The result objects render the JSON contract of LANGUAGE.md."""
from __future__ import annotations

import json

import numpy as np
import sympy

from privspec.results.kinds import Coverage, Epsilon, Estimate, HypothesisTest, Identifiable, Moments
from privspec.results.result import render_results
from privspec.results.values import Matrix, StepFunction, Table, TestResult, Vector


def test_scalar_exact_and_symbolic() -> None:
    d = Coverage(sympy.Rational(5131, 7500)).to_dict()
    assert d == {"kind": "coverage", "value": 5131 / 7500, "expr": "5131/7500", "latex": "\\frac{5131}{7500}"}
    eps = sympy.Symbol("eps", positive=True)
    d = Epsilon(2 * eps).to_dict()
    assert d["value"] is None and d["expr"] == "2*eps"
    assert Epsilon(sympy.oo).to_dict()["value"] == "inf"
    assert Epsilon(float("inf")).to_dict()["value"] == "inf"


def test_vector_matrix_table_test_npmle() -> None:
    v = Estimate(Vector(("a", "b"), (0.25, 0.75)), se=Vector(("a", "b"), (0.1, 0.1)), method="mom",
                 n=100).to_dict()
    assert v["value"] == {"a": 0.25, "b": 0.75} and v["se"] == {"a": 0.1, "b": 0.1} and v["n"] == 100
    m = Moments(Matrix(("a", "b"), ("a", "b"), sympy.Matrix([[1, sympy.Rational(1, 2)], [0, 1]])))
    assert m.to_dict()["value"] == {"rows": ["a", "b"], "cols": ["a", "b"], "data": [[1, 0.5], [0, 1]]}
    t = Estimate(Table(("g", "i"), (("F", "M"), ("L", "H")), np.array([[0.1, 0.2], [0.3, 0.4]])))
    assert t.to_dict()["value"]["shape"] == [2, 2] and t.to_dict()["value"]["data"][1][0] == 0.3
    s = HypothesisTest(TestResult("lrt", 3.5, 1, 0.06)).to_dict()["value"]
    assert s == {"method": "lrt", "statistic": 3.5, "df": 1, "p_value": 0.06}
    f = Estimate(StepFunction(((0.0, 1.0), (2.0, float("inf"))), (0.5, 0.5)), loglik=-3.2)
    assert f.to_dict()["value"] == {"intervals": [[0.0, 1.0], [2.0, "inf"]], "mass": [0.5, 0.5]}
    assert f.to_dict()["loglik"] == -3.2


def test_render_json_envelope() -> None:
    class M:
        title = "t"

    out = json.loads(render_results("json", M(), {"q": Identifiable(True, reason="rank 4")}))
    assert out == {"spec": "t", "queries": {"q": {"kind": "identifiable", "value": True, "reason": "rank 4"}}}
    for fmt in ("text", "markdown", "latex"):
        assert "q" in render_results(fmt, M(), {"q": Identifiable(True)})


# ---- what a person reads (issue 33) -----------------------------------------------------------------
def test_values_print_as_a_person_reads_them() -> None:
    v = Vector(("black", "red"), (np.float64(0.0102236), np.float64(0.0998)))
    assert repr(v) == "Vector(black=0.0102236, red=0.0998)"                 # no np.float64(...)
    assert repr(Vector(("0-10", "a b"), (1, sympy.Rational(1, 3)))) == "Vector({'0-10': 1, 'a b': 1/3})"
    assert repr(Vector(tuple(f"c{i}" for i in range(20)), tuple(range(20)))).endswith("c11=11, ... 8 more)")
    assert repr(TestResult("pearson", np.float64(3.2), 1.0, 0.0736)) == \
        "TestResult(pearson: statistic=3.2, df=1, p_value=0.0736)"
    m = repr(Matrix(("a", "b"), ("a", "b"), np.array([[0.5, -0.5], [-0.5, 0.5]])))
    assert m.splitlines()[0] == "Matrix(2 x 2)" and m.splitlines()[2].split() == ["a", "0.5", "-0.5"]
    t = repr(Table(("A", "B"), (("a1", "a2"), ("b1", "b2")), np.array([[0.45, -0.15], [0.25, 0.45]])))
    assert t.splitlines()[0] == "Table(A x B: 2 x 2)" and t.splitlines()[1].split() == ["A", "\\", "B", "b1", "b2"]
    assert repr(StepFunction(((0.0, 1.0), (2.0, float("inf"))), (0.25, 0.75))) == \
        "StepFunction({'(0, 1]': 0.25, '(2, inf]': 0.75})"


def test_summary_prints_as_text_and_renders_html_markdown_latex() -> None:
    from privspec.results.report import Summary, latex_body, markdown_summary, text_summary

    import privspec

    res = privspec.load("specs/urn.privspec").analyze(queries=["cov", "v_mom"])
    r = res["v_mom"]
    s = r.summary()
    assert isinstance(s, Summary) and str(s) == s == s.as_text() == text_summary(r) == str(r)   # today's text
    assert type(str(s)) is str and repr(s) == s.as_text()
    assert s.as_html() == s._repr_html_() == r._repr_html_() and s.as_html().startswith("<div><strong>avar")
    assert s.as_markdown() == s._repr_markdown_() == markdown_summary(r)
    assert s.as_latex() == latex_body(r) == r.as_latex()
    whole = res.summary()
    assert isinstance(whole, Summary) and str(whole) == res.render("text")
    assert whole.as_markdown() == res.render("markdown") and whole.as_latex() == res.render("latex")
    assert whole.as_html() == res._repr_html_() and "<h4>cov</h4>" in whole.as_html()
    assert Summary("x").as_html() == "<pre>x</pre>"                     # plain text where nothing renders
    import copy
    import pickle

    assert copy.copy(s) == s and pickle.loads(pickle.dumps(s)) == s.as_text()
