"""Randomized response, castell paper: Appendix B's worked example exactly, the
estimators' covariances against Monte Carlo, the closed forms, the bounds and
thresholds, the spec options and the runner."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import sympy

import privspec
from privspec.backends.core.channel import matrix_channel
from privspec.backends.core.kron import kron_apply
from privspec.backends.rr.backend import grr_avar
from privspec.backends.core.projections import project
from privspec.backends.rr.castell import castell, rr_joint
from privspec.backends.rr.hybrid import hybrid
from privspec.backends.rr.independent import clusters, independent, truncated
from privspec.backends.rr.metrics import avd, cramers_v, mae, mse
from privspec.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "specs" / "castell_example.privspec"
REPORTS = ROOT / "specs" / "data" / "castell_example_reports.csv"
P = np.array([[3, 1], [1, 3]]) / 4            # eps = log 3, p = 3/4 (Appendix B)
F_Y = np.array([[3, 1], [3, 3]], dtype=float)  # the reports' frequencies (rows a, columns b)
TRUTH = np.array([[0.4, 0.0], [0.2, 0.4]])


def _run(*argv: str) -> dict:
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--format", "json"], stdout=out, stderr=err) == 0, err.getvalue()
    return json.loads(out.getvalue())["queries"]


# ---- Appendix B, exactly ----------------------------------------------------------------------
def test_appendix_b_estimates_and_errors() -> None:
    c, i, t = castell(F_Y, [P.T, P.T]), independent(F_Y, [P.T, P.T]), truncated(F_Y, [P.T, P.T])
    assert np.allclose(c.table, [[0.45, -0.15], [0.25, 0.45]])
    assert np.allclose(i.table, [[0.21, 0.09], [0.49, 0.21]])
    assert np.allclose(t.table, [[0.3, 0.0], [0.25, 0.3]])
    # the paper's error figures: MSE 0.041 and AVD 0.29 (RR-Independent), 0.0075 and 0.15
    # (castell), AVD 0.1 (truncated; its "MSE = 0.15" is a typo for 0.005625)
    assert round(mse(TRUTH, i.table), 4) == 0.0411 and avd(TRUTH, i.table) == 0.29
    assert round(mse(TRUTH, c.table), 6) == 0.0075 and avd(TRUTH, c.table) == 0.15
    assert avd(TRUTH, t.table) == 0.1 and round(mse(TRUTH, t.table), 6) == 0.005625
    assert round(mae(TRUTH, c.table), 12) == 0.075
    # Cramer's V: 0.66 for X, 0.25 for the reports Y
    assert round(cramers_v(np.array([[4, 0], [2, 4]])), 2) == 0.67 and cramers_v(F_Y) == 0.25
    # the Euclidean projection of the castell estimate recovers the truth here
    assert np.allclose(project(c.table, "euclidean"), TRUTH)
    assert np.allclose(project(c.table, "clip"), np.array([[0.45, 0], [0.25, 0.45]]) / 1.15)


def test_appendix_b_through_the_runner() -> None:
    q = _run("run", str(EXAMPLE), "--data", str(REPORTS))
    assert np.allclose(q["castell"]["value"]["data"], [[0.45, -0.15], [0.25, 0.45]])
    assert q["castell"]["value"]["variables"] == ["A", "B"] and q["castell"]["projection"] == "none"
    assert q["castell"]["negative_cells"] == 1 and q["castell"]["n"] == 10
    assert np.array(q["castell"]["se"]["data"]).shape == (2, 2)
    assert np.allclose(q["rr_ind"]["value"]["data"], [[0.21, 0.09], [0.49, 0.21]])
    assert np.allclose(q["truncated"]["value"]["data"], [[0.3, 0.0], [0.25, 0.3]])
    assert q["projected"]["projection"] == "euclidean" and np.allclose(q["projected"]["value"]["data"], TRUTH)
    assert q["clipped"]["projection"] == "clip" and np.isclose(np.sum(q["clipped"]["value"]["data"]), 1)
    a = _run("analyze", str(EXAMPLE))
    assert a["e_ind"]["expr"] == "log(9)" and a["e_joint"]["expr"] == "log(9)"   # 2 log 3 both


def test_rr_joint_with_the_same_budget_is_the_paper_matrix() -> None:
    m = privspec.load(EXAMPLE).model
    K = privspec.backends.core.compile.channel_of(m.mechanisms["joint"]).K
    assert K == (sympy.ones(4, 4) + 8 * sympy.eye(4)) / 12       # p' = 9/12, q' = 1/12


# ---- covariances ---------------------------------------------------------------------------------
def _grr(d: int, eps: float) -> np.ndarray:
    e = np.exp(eps)
    P = np.full((d, d), 1 / (e + d - 1))
    np.fill_diagonal(P, e / (e + d - 1))
    return P


@pytest.mark.slow
def test_grr_closed_form_covariance_equals_warner_on_the_channel() -> None:
    eps = sympy.Symbol("eps", positive=True)
    w = sympy.Matrix([sympy.Rational(1, 10), sympy.Rational(3, 10), sympy.Rational(6, 10)])
    e = sympy.exp(eps)
    P = [[e / (e + 2) if u == v else 1 / (e + 2) for v in range(3)] for u in range(3)]
    warner = matrix_channel(("a", "b", "c"), P).avar_mom(w)
    closed = grr_avar(3, eps, w)
    assert all(sympy.simplify(closed[i, j] - warner[i, j]) == 0 for i in range(3) for j in range(3))


def test_castell_and_independent_variances_match_simulation() -> None:
    """Per-cell variances (Kronecker covariance; delta method for RR-Independent) against
    2000 replications at n = 5000; tolerance 15% (the Monte Carlo sd of a variance is
    about sqrt(2/2000) = 3%)."""
    rng = np.random.default_rng(11)
    dims = (2, 3, 2)
    K = [_grr(d, 1.5).T for d in dims]
    truth = rng.dirichlet(np.full(12, 2.0)).reshape(dims)
    lam = kron_apply(K, truth).ravel()
    n, reps = 5000, 2000
    draws = rng.multinomial(n, lam, size=reps).astype(float)
    est_c = np.array([castell(c.reshape(dims), K, variance=False).table for c in draws])
    est_i = np.array([independent(c.reshape(dims), K, variance=False).table for c in draws])
    expected = (lam * n).reshape(dims)
    var_c, var_i = castell(expected, K).var, independent(expected, K).var
    assert np.allclose(est_c.mean(axis=0), truth, atol=4 * np.sqrt(var_c.max() / reps))   # unbiased
    assert np.allclose(est_c.var(axis=0, ddof=1) / var_c, 1, atol=0.15)
    assert np.allclose(est_i.var(axis=0, ddof=1) / var_i, 1, atol=0.15)


def test_rr_joint_grr_closed_form_equals_general_inverse() -> None:
    counts = np.array([5, 1, 7, 3, 2, 9.0])
    K = _grr(6, 2.0).T
    e = np.exp(2.0)
    a, b = rr_joint(counts, K), rr_joint(counts, keep=(e / (e + 5), 1 / (e + 5)))
    assert np.allclose(a.table, b.table) and np.allclose(a.var, b.var)


# ---- the other estimators --------------------------------------------------------------------------
def test_truncated_hybrid_and_clusters() -> None:
    rng = np.random.default_rng(5)
    K = [_grr(2, 2.0).T, _grr(2, 2.0).T, _grr(3, 2.0).T]
    ab = np.array([[0.45, 0.05], [0.05, 0.45]])           # A, B dependent; C independent of both
    truth = np.einsum("ab,c->abc", ab, np.array([0.2, 0.3, 0.5]))
    counts = rng.multinomial(20000, kron_apply(K, truth).ravel()).reshape(truth.shape).astype(float)
    t = truncated(counts, K)
    assert t.table.min() >= 0
    assert np.all(t.table <= np.maximum(castell(counts, K).table, 0) + 1e-15)
    cl = clusters(counts, K, ["A", "B", "C"], 0.3)
    assert cl.info["clusters"] == [["A", "B"], ["C"]]
    assert avd(truth, cl.table) < avd(truth, independent(counts, K).table)
    h = hybrid(counts, K, "variance")
    assert h.info["chosen"] == "castell"                    # strong dependence, n large
    ht = hybrid(counts, K, "thresholds")
    assert ht.info["chosen"] == ("castell" if ht.info["castell_bound"] < ht.info["independent_bound"]
                                 else "independent")


# ---- bounds and thresholds ----------------------------------------------------------------------
def test_thresholds_reproduce_w_star_and_solve_the_bounds() -> None:
    """Table III's w* = 1.374 for the Adult data (n = 32,561, d = 16); eps* makes the
    bounds of Eqs. 26 and 27 equal, n* too.  (Table III's n* = 121,000 and eps* = 0.473
    are not reproduced by Appendix C's formulas for any w and eps tried.)"""
    spec = """variable a: categorical {%s}
variable b: categorical {%s}
mechanism m = product(grr(a, epsilon = 1), grr(b, epsilon = 1))
query th = thresholds(m, n = 32561)
query bd = bounds(m, n = 32561)
""" % (", ".join(f"a{i}" for i in range(16)), ", ".join(f"b{i}" for i in range(16)))
    model = privspec.load(spec).model
    from privspec.backends.rr.bounds import bounds_result, thresholds_result

    th = thresholds_result(model, model.queries["th"]).value
    assert round(float(th["w_star"]), 3) == 1.374
    d, n, w = 16, 32561, 2
    n_star = float(th["w=2"]["n_star"])
    p = np.e / (np.e + d - 1)                 # eps = 1 per attribute: eps / w with eps = 2
    assert np.isclose((d / p) ** w / n_star, 1 / d - d ** -w)        # Eq. 27 = Eq. 26 at n*
    eps_star = float(th["w=2"]["eps_star"])
    p_star = np.exp(eps_star / w) / (np.exp(eps_star / w) + d - 1)
    assert np.isclose((d / p_star) ** w / n, 1 / d - d ** -w)
    b = bounds_result(model, model.queries["bd"]).value
    assert np.isclose(float(b["w=2"]["castell"]), (d / p) ** w / n)
    assert np.isclose(float(b["w=2"]["independent"]), 1 / 16 - 1 / 256)


def test_bounds_symbolic_in_n_and_theorem4() -> None:
    q = _run("analyze", str(EXAMPLE), "--query", "b")["b"]
    t4 = q["value"]["theorem4"]["A,B"]
    assert np.isclose(t4["cramers_v"], 2 / 3) and t4["mse_rr_independent"] <= t4["bound"] < (2 / 3) ** 2 / 2
    model = privspec.load("""variable a: categorical {x, y}
variable b: categorical {u, v}
parameter eps > 0
mechanism m = product(grr(a, epsilon = eps), grr(b, epsilon = eps))
query bd = bounds(m)""").model
    from privspec.backends.rr.bounds import bounds_result

    r = bounds_result(model, model.queries["bd"]).to_dict()
    assert r["value"] is None and "n" in r["expr"]["w=2"]["castell"]


# ---- the language -----------------------------------------------------------------------------------
@pytest.mark.parametrize("line, code", [
    ("query j = estimate joint(a, b) from m by castell(projct = clip)", "E502"),
    ("query j = estimate joint(a, b) from m by castell(project = eucl)", "E502"),
    ("query j = estimate joint(a, b) from m by hybrid(switch = sometimes)", "E502"),
    ("query j = estimate joint(a, b) from m by clusters(v = 2)", "E309"),
    ("query j = estimate joint(a, b) from m by castell(project = clip, project = none)", "E205"),
    ("query j = estimate distribution(c) from s by mom(project = clip)", "E501"),
    ("query b = bounds(s, n = 10)", "E501"),
    ("query b = thresholds(m, size = 10)", "E205"),
    ("query b = bounds(m, n = -1)", "E309"),
])
def test_option_errors(line: str, code: str) -> None:
    head = """variable a: categorical {a1, a2}
variable b: categorical {b1, b2}
variable c: categorical {x, y, z, u}
mechanism m = product(grr(a, epsilon = 1), grr(b, epsilon = 1))
mechanism s = subset(c, uniform)
"""
    codes = [d.code for d in privspec.load(head + line).check()]
    assert code in codes, codes


def test_options_reach_the_model() -> None:
    m = privspec.load("""variable a: categorical {a1, a2}
variable b: categorical {b1, b2}
mechanism m = product(grr(a, epsilon = 1), grr(b, epsilon = 1))
query j = estimate joint(a, b) from m by hybrid(switch = variance, project = clip)""").model
    assert m.queries["j"].method.options == {"switch": "variance", "project": "clip"}


# ---- the bundled spec end to end --------------------------------------------------------------------
def test_randomized_response_spec_privatize_run_simulate(tmp_path) -> None:
    spec = str(ROOT / "specs" / "randomized_response.privspec")
    raw = str(ROOT / "specs" / "data" / "adult_rr_raw.csv")
    for mech in ("multi", "whole", "rr"):
        out, err = io.StringIO(), io.StringIO()
        assert main(["privatize", spec, "--mechanism", mech, "--input", raw, "--output",
                     str(tmp_path / f"{mech}.csv"), "--seed", "1"], stdout=out, stderr=err) == 0, err.getvalue()
    data = [f"{m}={tmp_path / f'{m}.csv'}" for m in ("multi", "whole", "rr")]
    q = _run("run", spec, *sum((["--data", d] for d in data), []), "--query", "j", "--query", "j_gi",
             "--query", "j_rr", "--query", "r_clip", "--query", "j_cl", "--query", "j_hy")
    truth_gi = np.array([[9592, 1179], [15128, 6662]]) / 32561
    assert np.abs(np.array(q["j_gi"]["value"]["data"]) - truth_gi).max() < 0.05
    assert np.abs(np.array(q["j_rr"]["value"]["data"]) - truth_gi).max() < 0.05
    assert q["j"]["value"]["shape"] == [2, 5, 2] and q["r_clip"]["projection"] == "clip"
    assert min(q["r_clip"]["value"].values()) >= 0 and np.isclose(sum(q["r_clip"]["value"].values()), 1)
    s = _run("simulate", spec, "--n", "5000", "--reps", "40", "--seed", "3", "--query", "j", "--query", "j_ind")
    assert s["j"]["value"]["mae"] < s["j_ind"]["value"]["mae"] * 5   # both run; scores reported
    for k in ("mae", "avd", "mse", "n_var_empirical", "n_var_analytic", "ci95_coverage"):
        assert k in s["j"]["value"]
    assert 0.85 < s["j"]["value"]["ci95_coverage"] <= 1
