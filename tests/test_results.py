"""The result objects render the JSON contract of LANGUAGE.md."""
from __future__ import annotations

import json

import numpy as np
import sympy

from privspec.results import Matrix, Result, StepFunction, Table, TestResult, Vector, render_results


def test_scalar_exact_and_symbolic() -> None:
    d = Result("coverage", sympy.Rational(5131, 7500)).to_dict()
    assert d == {"kind": "coverage", "value": 5131 / 7500, "expr": "5131/7500", "latex": "\\frac{5131}{7500}"}
    eps = sympy.Symbol("eps", positive=True)
    d = Result("epsilon", 2 * eps).to_dict()
    assert d["value"] is None and d["expr"] == "2*eps"
    assert Result("epsilon", sympy.oo).to_dict()["value"] == "inf"
    assert Result("epsilon", float("inf")).to_dict()["value"] == "inf"


def test_vector_matrix_table_test_npmle() -> None:
    v = Result("estimate", Vector(("a", "b"), (0.25, 0.75)), {"se": Vector(("a", "b"), (0.1, 0.1)),
                                                               "method": "mom", "n": 100}).to_dict()
    assert v["value"] == {"a": 0.25, "b": 0.75} and v["se"] == {"a": 0.1, "b": 0.1} and v["n"] == 100
    m = Result("moments", Matrix(("a", "b"), ("a", "b"), sympy.Matrix([[1, sympy.Rational(1, 2)], [0, 1]])))
    assert m.to_dict()["value"] == {"rows": ["a", "b"], "cols": ["a", "b"], "data": [[1, 0.5], [0, 1]]}
    t = Result("estimate", Table(("g", "i"), (("F", "M"), ("L", "H")), np.array([[0.1, 0.2], [0.3, 0.4]])))
    assert t.to_dict()["value"]["shape"] == [2, 2] and t.to_dict()["value"]["data"][1][0] == 0.3
    s = Result("test", TestResult("lrt", 3.5, 1, 0.06)).to_dict()["value"]
    assert s == {"method": "lrt", "statistic": 3.5, "df": 1, "p_value": 0.06}
    f = Result("estimate", StepFunction(((0.0, 1.0), (2.0, float("inf"))), (0.5, 0.5)), {"loglik": -3.2})
    assert f.to_dict()["value"] == {"intervals": [[0.0, 1.0], [2.0, "inf"]], "mass": [0.5, 0.5]}
    assert f.to_dict()["loglik"] == -3.2


def test_render_json_envelope() -> None:
    class M:
        title = "t"

    out = json.loads(render_results("json", M(), {"q": Result("identifiable", True, {"reason": "rank 4"})}))
    assert out == {"spec": "t", "queries": {"q": {"kind": "identifiable", "value": True, "reason": "rank 4"}}}
    for fmt in ("text", "markdown", "latex"):
        assert "q" in render_results(fmt, M(), {"q": Result("identifiable", True)})
