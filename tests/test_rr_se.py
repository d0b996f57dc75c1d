"""Standard errors of the joint-table estimators, each kind against its own Monte Carlo:
``population`` (sampling plus privacy noise) over fresh samples from the truth,
``conditional`` (privacy noise only) with the respondents' table fixed and only their
randomization redrawn; the 95% intervals' coverage (score intervals for castell-type
estimates, Wald's for the products); the ``se`` option and ``se_kind`` through the
runner.  Seeded; about 8 s."""
from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.backends.core.kron import kron_apply
from privspec.backends.rr.castell import castell, rr_joint
from privspec.backends.rr.hybrid import hybrid
from privspec.backends.rr.independent import clusters, independent
from privspec.backends.rr.simulate import joint_coverage, privatize_counts
from privspec.cli import main
from privspec.errors import BackendError


def _grr(d: int, eps: float) -> np.ndarray:
    e = np.exp(eps)
    P = np.full((d, d), 1 / (e + d - 1))
    np.fill_diagonal(P, e / (e + d - 1))
    return P


# Titanic's Class x Sex x Survived proportions (R datasets::Titanic, tests/data): a real
# table with strong dependence and cells of 0.0014 and 0.0018
TITANIC = Path(__file__).resolve().parent / "data" / "titanic.csv"


def titanic3() -> np.ndarray:
    frame = pd.read_csv(TITANIC, comment="#")
    axes = {"Class": ["1st", "2nd", "3rd", "Crew"], "Sex": ["Male", "Female"], "Survived": ["No", "Yes"]}
    table = np.zeros([len(v) for v in axes.values()])
    index = tuple(pd.Categorical(frame[a], categories=labs).codes for a, labs in axes.items())
    np.add.at(table, index, frame["Freq"].to_numpy())
    return table / table.sum()


# ---- the two kinds, exactly ----------------------------------------------------------------------------
def test_conditional_is_population_less_the_multinomial_covariance() -> None:
    """For castell and RR-Joint (``A K = I``): conditional = population - (Pi - Pi^2)/n per cell."""
    rng = np.random.default_rng(1)
    K = [_grr(3, 0.8).T, _grr(2, 1.7).T]
    counts = rng.multinomial(700, rng.dirichlet(np.ones(6))).reshape(3, 2).astype(float)
    pop, cond = castell(counts, K), castell(counts, K, se="conditional")
    assert pop.se_kind == "population" and cond.se_kind == "conditional"
    assert np.allclose(cond.var, pop.var - (pop.table - pop.table ** 2) / 700)
    e = np.exp(2.0)
    keep = (e / (e + 5), 1 / (e + 5))
    a, b = rr_joint(counts.ravel(), keep=keep), rr_joint(counts.ravel(), keep=keep, se="conditional")
    assert np.allclose(b.var, a.var - (a.table - a.table ** 2) / 700)
    # with K: the same as the closed form
    assert np.allclose(rr_joint(counts.ravel(), _grr(6, 2.0).T, se="conditional").var, b.var)


def _mc_variance(estimate, truth, K, n, reps, seed, kind):
    """Per-cell Monte Carlo variance of ``estimate(counts).table`` and the counts at which
    the analytic variance is evaluated (the expected reports)."""
    rng = np.random.default_rng(seed)
    if kind == "population":
        lam = kron_apply(K, truth).ravel()
        draws = [rng.multinomial(n, lam).reshape(truth.shape).astype(float) for _ in range(reps)]
        expected = lam.reshape(truth.shape) * n
    else:
        respondents = rng.multinomial(n, truth.ravel()).reshape(truth.shape)
        draws = [privatize_counts(respondents, K, rng) for _ in range(reps)]
        expected = kron_apply(K, respondents.astype(float))
    return np.var([estimate(c).table for c in draws], axis=0, ddof=1), expected


ESTIMATORS = {
    "castell": lambda K, se: (lambda c: castell(c, K, se=se)),
    "independent": lambda K, se: (lambda c: independent(c, K, se=se)),
    "clusters": lambda K, se: (lambda c: clusters(c, K, ["a", "b", "c"], 0.3, se=se)),
}


@pytest.mark.parametrize("kind", ["population", pytest.param("conditional", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_variance_against_its_own_monte_carlo(name: str, kind: str) -> None:
    """2000 replications at n = 5000; the analytic variance at the expected reports within
    15% of the Monte Carlo one per cell (the Monte Carlo sd of a variance is about
    sqrt(2/2000) = 3%)."""
    rng = np.random.default_rng(11)
    K = [_grr(2, 1.5).T, _grr(2, 1.5).T, _grr(3, 1.0).T]
    ab = np.array([[0.42, 0.08], [0.1, 0.4]])                 # a, b dependent, c independent of both
    truth = np.einsum("ab,c->abc", ab, rng.dirichlet(np.full(3, 3.0)))
    est = ESTIMATORS[name](K, kind)
    mc, expected = _mc_variance(est, truth, K, 5000, 2000, 7, kind)
    analytic = est(expected)
    assert analytic.se_kind == kind
    if name == "clusters":
        assert analytic.info["clusters"] == [["a", "b"], ["c"]]
    assert np.allclose(mc / analytic.var, 1, atol=0.15), (mc / analytic.var).round(2)


def test_rr_joint_conditional_against_monte_carlo() -> None:
    """GRR on a combined domain of 6 (closed form): fixed respondents, 3000 redraws."""
    rng = np.random.default_rng(3)
    e = np.exp(1.5)
    keep = (e / (e + 5), 1 / (e + 5))
    truth = rng.dirichlet(np.ones(6))
    mc, expected = _mc_variance(lambda c: rr_joint(c, keep=keep, se="conditional"), truth, [_grr(6, 1.5).T],
                                2000, 3000, 5, "conditional")
    assert np.allclose(mc / rr_joint(expected, keep=keep, se="conditional").var, 1, atol=0.12)


def test_mle_conditional_against_monte_carlo() -> None:
    """The product MLE (EM): conditional = population - (diag Pi - Pi Pi^T)/n too (it is
    asymptotically linear in lambda_hat with J K = I on the simplex's tangent space)."""
    model = privspec.load("""variable a: categorical {a1, a2}
variable b: categorical {b1, b2}
mechanism m = product(grr(a, epsilon = 1.5), grr(b, epsilon = 1.5))
query e = estimate joint(a, b) from m by mle(se = conditional)""").model
    from privspec.backends.rr.backend import JointProblem

    problem = JointProblem(model, model.queries["e"])
    K = problem.K()
    truth = np.array([[0.5, 0.1], [0.15, 0.25]])
    mc, expected = _mc_variance(problem.fit, truth, K, 4000, 400, 2, "conditional")
    fit = problem.fit(expected)
    assert fit.se_kind == "conditional"
    assert np.allclose(mc / fit.var, 1, atol=0.25)


# ---- coverage ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["population", pytest.param("conditional", marks=pytest.mark.slow)])
def test_coverage_at_the_papers_n(kind: str) -> None:
    """n = 32,561 (Adult), eps = 1 per attribute: every estimator's 95% intervals cover what
    they claim at 93-97% on average over the cells and at 91% or more in each (600
    replications; Monte Carlo se about 0.9 points per cell)."""
    truth = titanic3()
    K = [_grr(d, 1.0).T for d in truth.shape]
    for est in (lambda c: castell(c, K, se=kind), lambda c: independent(c, K, se=kind),
                lambda c: hybrid(c, K, se=kind)):
        out = joint_coverage(est, truth, K, 32561, 600, seed=3, se=kind)
        assert 0.93 <= out["mean"] <= 0.97 and out["min"] >= 0.91, out


@pytest.mark.parametrize("kind", ["population", pytest.param("conditional", marks=pytest.mark.slow)])
def test_score_interval_covers_cells_near_zero(kind: str) -> None:
    """eps = 8 per attribute, n = 1000: cells of 0.0014 and 0.0018 are carried by a few
    reports and the Wald interval of castell covers them 78% (population) or all cells 90%
    on average (conditional: the privacy noise is a handful of flipped reports); the score
    interval with its continuity correction covers 93% or more."""
    truth = titanic3()
    K = [_grr(d, 8.0).T for d in truth.shape]
    score = joint_coverage(lambda c: castell(c, K, se=kind), truth, K, 1000, 1000, seed=3, se=kind)
    wald = joint_coverage(lambda c: dataclasses.replace(castell(c, K, se=kind), ci=None), truth, K, 1000, 1000,
                          seed=3, se=kind)
    assert score["min"] >= 0.93 and score["mean"] >= 0.94
    assert wald["min"] < 0.86


# ---- the option through the language ----------------------------------------------------------------------
SPEC = """variable a: categorical {a1, a2}
variable b: categorical {b1, b2, b3}
variable c: categorical {c1, c2}
population (a, b) ~ counts [[30, 10, 5], [5, 20, 30]]
population c ~ categorical(0.3, 0.7)
mechanism m = product(grr(a, epsilon = 1), grr(b, epsilon = 1))
mechanism w = grr(a * b * c, epsilon = 2)
mechanism g = grr(b, epsilon = 1)
query j  = estimate joint(a, b) from m by castell(se = conditional)
query jp = estimate joint(a, b) from m by castell
query i  = estimate joint(a, b) from m by independent(se = conditional)
query h  = estimate joint(a, b) from m by hybrid(se = conditional)
query t  = estimate joint(a, b) from m by truncated(se = conditional)
query r  = estimate joint(a, b) from w by joint(se = conditional)
query d  = estimate distribution(b) from g by mom(se = conditional)
"""


def _run(tmp_path, *argv: str) -> dict:
    path = tmp_path / "se.privspec"
    path.write_text(SPEC, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert main([argv[0], str(path), *argv[1:], "--format", "json"], stdout=out, stderr=err) == 0, err.getvalue()
    return json.loads(out.getvalue())["queries"]


def test_results_say_which_se_and_interval(tmp_path) -> None:
    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame({"a": rng.choice(["a1", "a2"], n), "b": rng.choice(["b1", "b2", "b3"], n),
                          "c": rng.choice(["c1", "c2"], n)})
    frame["a*b*c"] = frame["a"] + "." + frame["b"] + "." + frame["c"]
    data = tmp_path / "reports.csv"
    frame.to_csv(data, index=False)
    q = _run(tmp_path, "run", "--data", f"m={data}", "--data", f"w={data}", "--data", f"g={data}")
    for name in ("j", "i", "h", "r", "d"):
        assert q[name]["se_kind"] == "conditional", name
    assert q["jp"]["se_kind"] == "population"
    assert np.all(np.array(q["j"]["se"]["data"]) < np.array(q["jp"]["se"]["data"]))
    assert q["j"]["ci_method"].startswith("score") and q["i"]["ci_method"].startswith("wald")
    assert q["i"]["se_target"] == "product of marginals" and "se_target" not in q["j"]
    lower, upper = np.array(q["j"]["ci95"]["lower"]["data"]), np.array(q["j"]["ci95"]["upper"]["data"])
    assert np.all((0 <= lower) & (lower <= upper) & (upper <= 1))
    assert "se" not in q["t"] and "not smooth" in q["t"]["se_note"]
    assert set(q["d"]["ci95"]) == {"b1", "b2", "b3"} and q["d"]["ci_method"].startswith("score")
    assert q["r"]["ci_method"].startswith("wald")         # RR-Joint summed over c: Wald


@pytest.mark.slow
def test_simulate_conditional_redraws_the_randomization_only(tmp_path) -> None:
    s = _run(tmp_path, "simulate", "--n", "4000", "--reps", "600", "--seed", "2", "--query", "j", "--query", "jp",
             "--query", "r")
    assert s["j"]["se_kind"] == "conditional" and s["jp"]["se_kind"] == "population"
    for name in ("j", "jp", "r"):
        assert 0.92 < s[name]["value"]["ci95_coverage"] < 0.98, name
        emp, ana = (np.array(s[name]["value"][k]["data"]) for k in ("n_var_empirical", "n_var_analytic"))
        assert np.allclose(emp / ana, 1, atol=0.25), name
    # given the respondents, castell's variance is below the population one
    assert np.all(np.array(s["j"]["value"]["n_var_analytic"]["data"])
                  < np.array(s["jp"]["value"]["n_var_analytic"]["data"]))


def test_unknown_se_kind_is_refused() -> None:
    model = privspec.load(SPEC).model
    from privspec.backends.rr.backend import JointProblem
    from privspec.model.graph import Method

    q = dataclasses.replace(model.queries["j"], method=Method("castell", (("se", "sometimes"),)))
    with pytest.raises(BackendError, match="B406|unknown se"):
        JointProblem(model, q).fit(np.ones((2, 3)))
