"""One class per kind of result (issue 34): fields by name, the JSON contract unchanged."""
from __future__ import annotations

import numpy as np
import pytest

from privspec.results.kinds import Avar, Budget, Estimate, HypothesisTest, Power, Typed
from privspec.results.result import Result
from privspec.results.values import Matrix, TestResult, Vector


def test_fields_are_keywords_kept_in_the_order_given() -> None:
    se = Vector(("a", "b"), (0.1, 0.1))
    r = Estimate(Vector(("a", "b"), (0.25, 0.75)), n=100, method="mom", se=se, ci_method="wald")
    assert r.kind == "estimate" and isinstance(r, Result)
    assert list(r.to_dict()) == ["kind", "value", "n", "method", "se", "ci_method"]    # the site's order
    assert r.extras["n"] == r.n == r.nobs == 100 and r.se is se and r.ci95_method == "wald"
    assert r.ci95 is None and r.loglik is None                                        # declared, not given
    with pytest.raises(TypeError, match="Estimate has no field 'stderr'"):
        Estimate(0.5, stderr=0.1)


def test_every_kind_has_its_own_class_and_fields() -> None:
    kinds = {cls.kind for cls in _classes(Typed)}
    assert {"estimate", "avar", "fisher", "moments", "variance", "test", "simulation", "epsilon", "coverage",
            "leakage", "individual", "identifiable", "optimal_anchor", "power", "sample_size", "budget", "table",
            "bounds", "thresholds", "comparison"} <= kinds
    with pytest.raises(TypeError):
        Budget(Vector(("x",), (1.0,)), se=0.1)                 # a budget has no standard errors


def test_with_fields_adds_after_the_others_and_keeps_the_rest() -> None:
    r = Power(0.5, n=10, test="a test", curve={"n": [1, 10], "power": [0.1, 0.5]}).with_query("q")
    s = r.with_fields(n=20, estimator="mom")
    assert type(s) is Power and list(s.extras) == ["n", "test", "curve", "estimator"] and s.n == 20
    assert s.query == "q" and r.n == 10


def test_an_avar_names_each_cross_covariance_in_the_json() -> None:
    m = Matrix(("a",), ("x", "y"), np.array([[0.1, -0.1]]))
    r = Avar(Matrix(("a",), ("a",), np.array([[1.0]])), method="mom", cross_covariance_income=m)
    assert list(r.to_dict())[-1] == "cross_covariance_income" and r.cross_covariance == {"income": m}
    with pytest.raises(TypeError):
        Avar(m, cross_covariance=m)
    assert Avar.meaning_of("population") == "asymptotic covariance of sqrt(n) (w_hat - w)"


def test_behaviour_of_a_kind_is_its_class_s() -> None:
    t = HypothesisTest(TestResult("pearson", 3.2, 1.0, 0.07), n=50)
    assert t.method == "pearson" and t.to_frame().iloc[0]["pvalue"] == 0.07
    assert Budget(Vector(("x", "y"), (1.0, 2.0))).params.index.name == "variable"
    assert Estimate(Vector(("x", "y"), (0.5, 0.5))).params.index.name == "category"


def _classes(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        if "kind" in vars(sub):
            out.append(sub)
        out += _classes(sub)
    return out
