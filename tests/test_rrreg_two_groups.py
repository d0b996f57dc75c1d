"""RRreg's two-group designs (issue 37): ``uqm`` (the unrelated question of unknown
prevalence), ``cdm`` (the cheating-detection model), ``sld`` (the stochastic lie
detector). The MLE and its standard errors against RRreg's closed forms (RRuni.UQTunknown,
RRuni.CDM, RRuni.SLD, with n_g where RRreg writes n_g - 1), the boundary maximum against
scipy's constrained optimizer, the intervals' coverage in seeded simulations, privatize
against the designs' yes rates, epsilon, and what the checker and the reader refuse."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.optimize

import privspec
from privspec.backends.rr.two_groups import covariance, design_of, fit, loglik
from privspec.errors import DataError

HEAD = """variable cheat: categorical {yes, no}
variable grp: categorical {g1, g2}
variable spring: categorical {yes, no}
variable three: categorical {a, b, c}
mechanism c = cdm(cheat, p1 = 0.3, p2 = 0.7, group = grp)
mechanism s = sld(cheat, p1 = 0.3, p2 = 0.7, group = grp)
mechanism u = uqm(cheat, p1 = 0.3, p2 = 0.7, group = grp, unrelated = spring)
"""
P1, P2 = 0.3, 0.7


def _reports(yes: tuple[int, int], n: tuple[int, int]) -> pd.DataFrame:
    rows = []
    for g, y, m in zip(("g1", "g2"), yes, n):
        rows += [("yes", g)] * y + [("no", g)] * (m - y)
    return pd.DataFrame(rows, columns=["cheat", "grp"])


def _rrreg(kind: str, l1: float, l2: float, n1: int, n2: int) -> dict[str, tuple[float, float]]:
    """RRreg's closed forms (R/RRuni_models.R), with n_g for n_g - 1."""
    p1, p2 = P1, P2
    v1, v2 = l1 * (1 - l1) / n1, l2 * (1 - l2) / n2
    if kind == "uqm":
        return {"pi": ((l1 * (1 - p2) - l2 * (1 - p1)) / (p1 - p2),
                       math.sqrt((v1 * (1 - p2) ** 2 + v2 * (1 - p1) ** 2) / (p1 - p2) ** 2)),
                "pi_unrelated": ((p2 * l1 - p1 * l2) / (p2 - p1),
                                 math.sqrt((p2 ** 2 * v1 + p1 ** 2 * v2) / (p1 - p2) ** 2))}
    if kind == "cdm":
        return {"pi": ((p2 * l1 - p1 * l2) / (p2 - p1), math.sqrt((p1 ** 2 * v2 + p2 ** 2 * v1) / (p1 - p2) ** 2)),
                "beta": ((l2 - l1) / (p2 - p1), math.sqrt((v2 + v1) / (p1 - p2) ** 2)),
                "gamma": (1 + ((p2 - 1) * l1 + (1 - p1) * l2) / (p1 - p2),
                          math.sqrt(((p2 - 1) ** 2 * v1 + (1 - p1) ** 2 * v2) / (p1 - p2) ** 2))}
    t_se = math.sqrt(v1 * (((p1 - p2) * (p2 + l2 - 1)) / (p1 - p2 + l1 - l2) ** 2) ** 2
                     + v2 * (((p1 - p2) * (p1 + l1 - 1)) / (p1 - p2 + l1 - l2) ** 2) ** 2)
    return {"pi": (((l2 - l1) + (p2 - p1)) / (p2 - p1), math.sqrt(v1 / (p1 - p2) ** 2 + v2 / (p2 - p1) ** 2)),
            "t": ((l2 * (1 - p1) - l1 * (1 - p2)) / ((l2 - l1) + (p2 - p1)), t_se)}


@pytest.mark.parametrize("kind, yes", [("uqm", (200, 260)), ("cdm", (350, 560)), ("sld", (750, 470))])
def test_the_mle_is_rrregs_closed_form_with_its_standard_errors(kind: str, yes: tuple[int, int]) -> None:
    n = (1000, 800)
    mech = {"uqm": "u", "cdm": "c", "sld": "s"}[kind]
    res = privspec.load(HEAD + f"query q = estimate distribution(cheat) from {mech} by mle\n").run(
        {mech: _reports(yes, n)})
    out = res["q"].to_dict()
    closed = _rrreg(kind, yes[0] / n[0], yes[1] / n[1], *n)
    for name, (value, se) in closed.items():
        assert out["parameters"][name]["estimate"] == pytest.approx(value, abs=1e-12)
        assert out["parameters"][name]["se"] == pytest.approx(se, rel=1e-9)
    assert out["value"]["yes"] == pytest.approx(closed["pi"][0], abs=1e-12)
    assert out["se"]["no"] == pytest.approx(closed["pi"][1], rel=1e-9)
    assert out["n"] == 1800


@pytest.mark.parametrize("kind, yes", [("cdm", (600, 500)), ("sld", (300, 100)), ("uqm", (990, 10))])
def test_outside_the_parameter_space_the_maximum_is_on_the_boundary(kind: str, yes: tuple[int, int]) -> None:
    """Yes rates the design cannot produce: the fit is scipy's constrained maximum."""
    n = np.array([1000.0, 1000.0])
    y = np.array(yes, dtype=float)
    d = design_of(kind, P1, P2)
    theta, boundary = fit(d, y, n)
    assert boundary
    v = np.array(d.vertices, dtype=float)
    edges = np.roll(v, -1, axis=0) - v
    cons = [{"type": "ineq", "fun": (lambda t, e=e, a=a: e[0] * (t[1] - a[1]) - e[1] * (t[0] - a[0]))}
            for e, a in zip(edges, v)]
    runs = [scipy.optimize.minimize(lambda t: -loglik(d, t, y, n), x0, constraints=cons, method="SLSQP",
                                    options={"ftol": 1e-14, "maxiter": 500})
            for x0 in (v.mean(axis=0), (v.mean(axis=0) + v[0]) / 2)]
    # only points inside the parameter space are references: SLSQP can stop 3e-8 outside
    # it, where the likelihood is higher (by 3.4e-5 at yes = (990, 10) with scipy 1.17)
    feasible = [r for r in runs if min(c["fun"](r.x) for c in cons) >= -1e-10]
    assert feasible
    best = max(feasible, key=lambda r: -r.fun)
    assert loglik(d, theta, y, n) >= -best.fun - 1e-7
    assert np.allclose(theta, best.x, atol=1e-4)


@pytest.mark.parametrize("kind, theta", [("uqm", (0.3, 0.25)), ("cdm", (0.3, 0.5)), ("sld", (0.3, 0.24))])
def test_the_intervals_cover_in_a_seeded_simulation(kind: str, theta: tuple[float, float]) -> None:
    """600 surveys of 2 x 1,000: every parameter's 95% Wald interval covers its truth within
    3 standard errors of 0.95."""
    rng = np.random.default_rng(41)
    d = design_of(kind, P1, P2)
    truth = {name: f(np.array(theta))[0] for name, _, f in d.parameters}
    n = np.array([1000.0, 1000.0])
    hits = {name: [] for name in truth}
    for _ in range(600):
        y = rng.binomial(1000, d.rates(np.array(theta))).astype(float)
        est, _ = fit(d, y, n)
        V = covariance(d, est, n)
        for name, _, f in d.parameters:
            value, grad = f(est)
            se = math.sqrt(grad @ V @ grad)
            hits[name].append(abs(value - truth[name]) <= 1.959964 * se)
    for name, h in hits.items():
        assert abs(np.mean(h) - 0.95) < 3 * math.sqrt(0.95 * 0.05 / 600), name


@pytest.mark.parametrize("mech, rates", [("c", lambda t, s, p: t + (1 - t) * p),
                                         ("s", lambda t, s, p: t + (1 - t) * (1 - p)),
                                         ("u", lambda t, s, p: p * t + (1 - p) * s)])
def test_privatize_gives_each_group_its_yes_rate(mech: str, rates) -> None:
    """Honest respondents: 30% carriers, 25% yes to the unrelated question, half in each group."""
    n = 40000
    rng = np.random.default_rng(6)
    raw = pd.DataFrame({"cheat": np.where(rng.random(n) < 0.3, "yes", "no"),
                        "grp": np.where(np.arange(n) % 2 == 0, "g1", "g2"),
                        "spring": np.where(rng.random(n) < 0.25, "yes", "no")})
    out = privspec.load(HEAD).privatize(raw, mech, seed=2)
    assert list(out.columns) == ["cheat", "grp"] and (out["grp"] == raw["grp"]).all()
    for g, p in (("g1", P1), ("g2", P2)):
        rows = raw["grp"] == g
        t, s = (raw.loc[rows, "cheat"] == "yes").mean(), (raw.loc[rows, "spring"] == "yes").mean()
        assert (out.loc[rows, "cheat"] == "yes").mean() == pytest.approx(rates(t, s, p), abs=0.012)


def test_epsilon_is_infinite_with_the_reason() -> None:
    res = privspec.load(HEAD + "query e = epsilon(c)\nquery f = epsilon(u)\n").analyze()
    assert res["e"].value == math.inf and "never says no" in res["e"].to_dict()["reason"]
    assert res["f"].value == math.inf


def test_a_group_that_is_not_declared_is_refused_naming_its_rows() -> None:
    frame = _reports((10, 20), (30, 40))
    frame.loc[4, "grp"] = "g3"
    failure = privspec.load(HEAD + "query q = estimate distribution(cheat) from c by mle\n").run(
        {"c": frame}).failures["q"]
    assert isinstance(failure, DataError)
    diag = failure.diagnostics[0]
    assert diag.code == "D010" and "'g3'" in diag.message and diag.rows == (5,)


@pytest.mark.parametrize("text, code, words", [
    ("mechanism m = cdm(cheat, p1 = 0.3, p2 = 0.7, group = three)", "E405", "binary group"),
    ("mechanism m = cdm(three, p1 = 0.3, p2 = 0.7, group = grp)", "E405", "binary variable"),
    ("mechanism m = sld(cheat, p1 = 0.5, p2 = 1/2, group = grp)", "E305", "randomized alike"),
    ("mechanism m = cdm(cheat, p1 = 0.3, p2 = 0.7)", "E205", "group"),
    ("mechanism m = cdm(cheat, p1 = 0.3, p2 = 0.7, group = cheat)", "E205", "different variables"),
    ("query q = estimate distribution(cheat) from c by mom", "E501", "mom"),
])
def test_the_checker_refuses_what_does_not_fit(text: str, code: str, words: str) -> None:
    diagnostics = privspec.load(HEAD + text + "\n").diagnostics
    assert [d.code for d in diagnostics if d.severity == "error"] == [code]
    assert words in diagnostics[0].message
