"""Logistic regression on the reports of RRreg's two-group designs (issue 37; RRreg's
``RRlog`` for ``UQTunknown``, ``CDM``, ``SLD``): the fit against an independent fit of the
likelihood written per respondent (scipy's L-BFGS-B with its gradient written out), the
intercept-only fit against the two groups' closed form, seeded coverage of the Wald
intervals of a slope and of the design's parameter, the size of the likelihood-ratio test
of the slopes, and what the reader and the checker refuse."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.optimize
import scipy.stats

import privspec
from privspec.backends.finite.regression import wald
from privspec.backends.rr.two_group_regression import channel_parts, fit_two_group, lr_slopes
from privspec.backends.rr.two_groups import covariance, design_of, fit, loglik, parameter_table
from privspec.errors import DataError

HEAD = """variable y: categorical {yes, no}
variable grp: categorical {g1, g2}
variable u: categorical {yes, no}
variable x: continuous
variable s: categorical {f, m}
mechanism c = cdm(y, p1 = 0.3, p2 = 0.7, group = grp)
mechanism d = sld(y, p1 = 0.3, p2 = 0.7, group = grp)
mechanism q = uqm(y, p1 = 0.3, p2 = 0.7, group = grp, unrelated = u)
"""
MECH = {"cdm": "c", "sld": "d", "uqm": "q"}
P = np.array([0.3, 0.7])
#: each design's extra parameter at the truth of the simulations
PHI = {"cdm": 0.1, "sld": 0.75, "uqm": 0.4}


def _yes_rate(kind: str, s: np.ndarray, p: np.ndarray, phi: float) -> np.ndarray:
    """P(yes | x, g) from the designs' definitions (RRreg's getPW), ``s`` the trait's
    probability: uqm asks the sensitive question with p, else the unrelated one; cdm forces
    a yes with p among the honest (1 - gamma), cheaters say no; sld: a carrier says yes
    with t, a non-carrier says no with p."""
    if kind == "uqm":
        return p * s + (1 - p) * phi
    if kind == "cdm":
        return (1 - phi) * (s + (1 - s) * p)
    return s * phi + (1 - s) * (1 - p)


def _yes_rate_gradient(kind: str, s: np.ndarray, p: np.ndarray, phi: float) -> tuple[np.ndarray, np.ndarray]:
    """d P(yes) / d s and d P(yes) / d phi, by hand from :func:`_yes_rate`."""
    if kind == "uqm":
        return p, 1 - p
    if kind == "cdm":
        return (1 - phi) * (1 - p), -(s + (1 - s) * p)
    return phi - (1 - p), s


def _frame(kind: str, n: int, seed: int, beta: np.ndarray, phi: float) -> pd.DataFrame:
    """n respondents: x normal, s f/m, half in each group; the trait from log odds of no
    ``X beta``; each report drawn with its yes rate."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n).round(2)
    s = rng.choice(["f", "m"], size=n)
    g = rng.integers(0, 2, size=n)
    X = np.column_stack([np.ones(n), x, s == "m"])
    yes = rng.random(n) < _yes_rate(kind, 1 / (1 + np.exp(X @ beta)), P[g], phi)
    return pd.DataFrame({"y": np.where(yes, "yes", "no"), "grp": np.array(["g1", "g2"])[g], "x": x, "s": s})


def _direct_fit(kind: str, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The fit of (b, phi) written per respondent, by L-BFGS-B with the gradient by hand, and
    the standard errors from a central-difference Hessian of that gradient."""
    X = np.column_stack([np.ones(len(frame)), frame["x"], frame["s"] == "m"]).astype(float)
    y = (frame["y"] == "yes").to_numpy()
    p = np.where(frame["grp"] == "g1", P[0], P[1])

    def nll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        b, phi = theta[:-1], theta[-1]
        s = 1 / (1 + np.exp(X @ b))
        lam = _yes_rate(kind, s, p, phi)
        d_s, d_phi = _yes_rate_gradient(kind, s, p, phi)
        d_lam = np.where(y, 1 / lam, -1 / (1 - lam))            # d log-lik / d lambda, per respondent
        grad_b = X.T @ (d_lam * d_s * -s * (1 - s))               # d s / d eta = -s (1 - s)
        return -float(np.sum(np.where(y, np.log(lam), np.log1p(-lam)))), -np.append(grad_b, np.sum(d_lam * d_phi))

    start = np.array([0.0, 0.0, 0.0, 0.5])
    bounds = [(None, None)] * 3 + [(1e-9, 1 - 1e-9)]          # phi a probability
    theta = scipy.optimize.minimize(nll, start, jac=True, method="L-BFGS-B", bounds=bounds,
                                    options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 10_000}).x
    h, m = 1e-5, len(theta)
    H = np.array([(nll(theta + h * e)[1] - nll(theta - h * e)[1]) / (2 * h) for e in np.eye(m)])
    return theta, np.sqrt(np.diag(np.linalg.inv((H + H.T) / 2)))


@pytest.mark.parametrize("kind", ["uqm", "cdm", "sld"])
def test_the_fit_equals_an_independent_fit_of_the_per_respondent_likelihood(kind: str) -> None:
    """2,000 respondents, a continuous and a categorical covariate: coefficients and the
    design's parameter equal the per-respondent L-BFGS-B fit (rtol 1e-6), standard errors its
    finite-difference Hessian's (rtol 1e-4), the Wald p-values the normal's."""
    frame = _frame(kind, 2000, 11, np.array([0.4, 0.8, -0.6]), PHI[kind])
    spec = privspec.load(HEAD + f"query r = estimate regression(y ~ x + s) from {MECH[kind]} by mle(logistic)\n")
    d = spec.run({MECH[kind]: frame})["r"].to_dict()
    assert list(d["value"]) == ["intercept", "x", "s=m"] and d["converged"] and d["n"] == 2000
    theta, se = _direct_fit(kind, frame)
    name = {"uqm": "pi_unrelated", "cdm": "gamma", "sld": "t"}[kind]
    mine = np.array([*d["value"].values(), d["parameters"][name]["estimate"]])
    assert np.allclose(mine, theta, rtol=1e-6, atol=1e-9)
    assert np.allclose([*d["se"].values(), d["parameters"][name]["se"]], se, rtol=1e-4)
    z = np.array(list(d["value"].values())) / se[:-1]
    assert np.allclose([w["p_value"] for w in d["wald"].values()], 2 * scipy.stats.norm.sf(np.abs(z)), rtol=1e-3)


@pytest.mark.parametrize("kind, yes", [("uqm", (200, 260)), ("cdm", (350, 560)), ("sld", (750, 470))])
def test_with_the_intercept_alone_the_fit_is_the_two_groups_closed_form(kind: str, yes: tuple[int, int]) -> None:
    """The intercept alone: the same likelihood as the two-group MLE in other coordinates
    (the trait's log odds of no and phi), so the same maximum, and phi's standard error is
    the closed form's (at an interior maximum the observed information is the expected)."""
    n = np.array([1000.0, 800.0])
    yes = np.array(yes, dtype=float)
    counts = np.array([yes[0], n[0] - yes[0], yes[1], n[1] - yes[1]])
    K0, K1 = channel_parts(kind, P[[0, 0, 1, 1]], np.array([0, 1, 0, 1]))
    f = fit_two_group(np.ones((4, 1)), K0, K1, counts)
    design = design_of(kind, *P)
    theta, boundary = fit(design, yes, n)
    params = parameter_table(design, theta, covariance(design, theta, n))
    share = {"uqm": theta[0], "cdm": theta[0] / (theta[0] + theta[1]), "sld": theta[0]}[kind]
    name = {"uqm": "pi_unrelated", "cdm": "gamma", "sld": "t"}[kind]
    assert not boundary and not f.boundary
    assert f.coef[0, 0] == pytest.approx(np.log((1 - share) / share), abs=1e-9)
    assert f.phi == pytest.approx(params[name]["estimate"], abs=1e-9)
    assert f.se[-1] == pytest.approx(params[name]["se"], rel=1e-6)
    assert f.loglik == pytest.approx(loglik(design, theta, yes, n), abs=1e-9)


def _grouped(kind: str, n: int, rng: np.random.Generator, beta: np.ndarray, phi: float) -> tuple:
    """n reports from a logistic model on a covariate with 5 values, half in each group,
    counted per (group, covariate, report)."""
    x = rng.integers(-2, 3, size=n).astype(float)
    g = rng.integers(0, 2, size=n)
    yes = rng.random(n) < _yes_rate(kind, 1 / (1 + np.exp(beta[0] + beta[1] * x)), P[g], phi)
    keys, counts = np.unique(np.column_stack([g, x, ~yes]), axis=0, return_counts=True)
    K0, K1 = channel_parts(kind, P[keys[:, 0].astype(int)], keys[:, 2].astype(int))
    return np.column_stack([np.ones(len(keys)), keys[:, 1]]), K0, K1, counts.astype(float)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["cdm", "sld", "uqm"])
def test_the_wald_intervals_cover_in_a_seeded_simulation(kind: str) -> None:
    """300 surveys of 1,500: the 95% Wald intervals of the slope and of the design's
    parameter cover the truth within 3 standard errors of 0.95."""
    rng = np.random.default_rng(40)
    beta, phi = np.array([0.3, -0.6]), PHI[kind]
    slope, extra = [], []
    for _ in range(300):
        X, K0, K1, counts = _grouped(kind, 1500, rng, beta, phi)
        f = fit_two_group(X, K0, K1, counts)
        w = wald(f.logit())
        slope.append(w.lower[1, 0] <= beta[1] <= w.upper[1, 0])
        extra.append(abs(f.phi - phi) <= 1.959964 * f.se[-1])
    tolerance = 3 * np.sqrt(0.95 * 0.05 / 300)
    assert abs(np.mean(slope) - 0.95) < tolerance, np.mean(slope)
    assert abs(np.mean(extra) - 0.95) < tolerance, np.mean(extra)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["cdm", "sld"])
def test_the_likelihood_ratio_test_of_the_slopes_holds_its_size(kind: str) -> None:
    """The slope 0: the LR test rejects at 5% in 300 seeded surveys within 3 standard
    errors of 0.05."""
    rng = np.random.default_rng(41)
    rejected = []
    for _ in range(300):
        X, K0, K1, counts = _grouped(kind, 1000, rng, np.array([0.3, 0.0]), PHI[kind])
        test = lr_slopes(fit_two_group(X, K0, K1, counts), X, K0, K1, counts)
        assert test["df"] == 1
        rejected.append(test["p_value"] < 0.05)
    assert abs(np.mean(rejected) - 0.05) < 3 * np.sqrt(0.05 * 0.95 / 300), np.mean(rejected)


def test_the_bundled_data_give_the_cheaters_beside_the_coefficients() -> None:
    """specs/data/rrreg_designs.csv: the cheating-detection answers (10% cheaters, carriers
    independent of age): gamma's interval holds 0.1, the slope's holds 0, and the LR test
    of the slope is its Wald test's square in the limit (both near)."""
    spec = privspec.load("""variable cheated: categorical {yes, no}
variable age: continuous
variable group: categorical {first, second}
mechanism detect = cdm(cheated, p1 = 0.3, p2 = 0.7, group = group)
query r = estimate regression(cheated ~ age) from detect by mle(logistic)
""")
    from pathlib import Path
    d = spec.run(str(Path(__file__).resolve().parent.parent / "specs" / "data" / "rrreg_designs.csv"))["r"].to_dict()
    lo, hi = d["parameters"]["gamma"]["ci95"]
    assert lo < 0.1 < hi and d["ci95"]["age"][0] < 0 < d["ci95"]["age"][1]
    assert d["lr_test"]["statistic"] == pytest.approx(d["wald"]["age"]["z"] ** 2, rel=0.1)
    assert "gamma one constant" in d["note"]


@pytest.mark.parametrize("change, code, words", [
    ("drop grp", "D003", "no column 'grp'"),
    ("drop x", "D003", "no column 'x'"),
    ("grp 3", "D010", "groups of grp are not among its categories"),
    ("y 2", "D010", "reports of y are not among its categories"),
    ("one group", "D020", "no respondent of group g2"),
    ("x 4", "D107", "of the covariate x are not numbers"),
])
def test_data_errors_name_the_column(change: str, code: str, words: str) -> None:
    frame = _frame("sld", 40, 1, np.array([0.0, 0.5, 0.0]), 0.8)
    column, what = change.split(" ", 1)
    if column == "drop":
        frame = frame.drop(columns=[what])
    elif change == "one group":
        frame["grp"] = "g1"
    else:
        frame[column] = frame[column].astype(object)      # a number column takes the text
        frame.loc[int(what) - 1, column] = "other" if column != "x" else "abc"
    spec = privspec.load(HEAD + "query r = estimate regression(y ~ x) from d by mle(logistic)\n")
    failure = spec.run({"d": frame}).failures["r"]
    assert isinstance(failure, DataError)
    diag = failure.diagnostics[0]
    assert diag.code == code and words in diag.message, diag.message


@pytest.mark.parametrize("ys", [["no"] * 60, ["no"] * 30 + ["yes"] * 30])
def test_data_that_put_the_maximum_at_infinity_are_d020(ys: list[str]) -> None:
    """Every report no, and reports separated by x: the likelihood rises towards infinite
    coefficients, and the query says so instead of printing them."""
    frame = pd.DataFrame({"y": ys, "grp": ["g1", "g2"] * 30, "x": np.arange(60.0)})
    spec = privspec.load(HEAD + "query r = estimate regression(y ~ x) from d by mle(logistic)\n")
    failure = spec.run({"d": frame}).failures["r"]
    assert failure.code == "D020" and "infinite coefficients" in failure.diagnostics[0].message


def test_a_maximum_on_the_boundary_says_so() -> None:
    """cdm with more yes than any cheating share allows (the closed form's gamma below 0):
    gamma at its bound 0, the same maximum as the two groups' boundary fit, and a note."""
    yes, n = np.array([680.0, 736.0]), np.array([1000.0, 800.0])     # pi 0.5, beta 0.6: gamma -0.1
    rows = []
    for g, y, m in zip(("g1", "g2"), yes.astype(int), n.astype(int)):
        rows += [("yes", g, float(i % 2)) for i in range(y)] + [("no", g, float(i % 2)) for i in range(m - y)]
    frame = pd.DataFrame(rows, columns=["y", "grp", "x"])
    spec = privspec.load(HEAD + "query r = estimate regression(y ~ x) from c by mle(logistic)\n")
    d = spec.run({"c": frame})["r"].to_dict()
    assert d["parameters"]["gamma"]["estimate"] == 0.0 and "at its bound 0" in d["note"]
    design = design_of("cdm", *P)
    theta, boundary = fit(design, yes, n)
    assert boundary and d["lr_test"]["loglik_null"] == pytest.approx(loglik(design, theta, yes, n), abs=1e-6)


@pytest.mark.parametrize("query, code, words", [
    ("estimate regression(y ~ x) from c by mle(normal)", "E205", "mle(logistic)"),
    ("estimate regression(y ~ x) from c by mom", "E502", "unknown estimator for regression() 'mom'"),
    ("estimate regression(u ~ x) from c by mle(logistic)", "E503", "observes y, not u"),
])
def test_the_checker_refuses_what_does_not_fit(query: str, code: str, words: str) -> None:
    diagnostics = privspec.load(HEAD + f"query r = {query}\n").diagnostics
    found = [d for d in diagnostics if d.code == code]
    assert found and words in found[0].message, diagnostics


def test_survey_weights_give_the_weighted_version() -> None:
    """A weighted run is the pseudo-likelihood's fit with design-based standard errors
    (tests/test_survey_weights_two_group_regression.py checks its numbers), never the
    unweighted fit printed as if it were weighted."""
    frame = _frame("sld", 200, 3, np.array([0.0, 0.5, 0.0]), 0.8)
    frame["w"] = 1.0 + (frame["x"] > 0)
    spec = privspec.load(HEAD + "query r = estimate regression(y ~ x) from d by mle(logistic)\n")
    r = spec.run(frame, weights="w")["r"]
    assert r.extras["se_kind"] == "design-based (Taylor linearization)" and "lr_test" not in r.extras
    assert r.extras["weighted_n"] == pytest.approx(frame["w"].sum())


def test_collinear_covariates_are_b014() -> None:
    frame = _frame("sld", 300, 2, np.array([0.0, 0.5, 0.0]), 0.8)
    frame["z"] = 2 * frame["x"]
    spec = privspec.load(HEAD + "variable z: continuous\n"
                                "query r = estimate regression(y ~ x + z) from d by mle(logistic)\n")
    failure = spec.run({"d": frame}).failures["r"]
    assert failure.code == "B014" and "collinear" in failure.diagnostics[0].message
