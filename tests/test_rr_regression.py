"""Regression on a privatized categorical response (issue 37): logistic and multinomial
logit through the mechanism's channel, checked against an independent fit of the same
likelihood written per respondent (scipy.optimize.minimize), Warner's closed form,
seeded coverage of the Wald intervals and the size of the likelihood-ratio test; the
data errors name the column and the rows; the checker refuses what does not fit."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.optimize
import scipy.stats

import privspec
from privspec.backends.finite.regression import fit_logit, lr_test, wald
from privspec.errors import DataError

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "rr_regression.privspec"
DATA = ROOT / "specs" / "data" / "rr_regression.csv"

HEAD = """variable y: categorical {no, yes}
variable g: categorical {a, b, c}
variable x: continuous
variable s: categorical {f, m}
mechanism warner = rr(y, matrix [[4/5, 1/5], [1/5, 4/5]])
mechanism forced = rr(y, matrix [[5/6, 1/6], [1/3, 2/3]])
mechanism three = grr(g, epsilon = 1)
mechanism sets = subset(g, sizes {2: 1})
mechanism both = product(grr(y, epsilon = 1), grr(g, epsilon = 1))
"""


def _direct_fit(K: np.ndarray, reports: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The maximum-likelihood fit written per respondent, by BFGS from scipy, and its
    standard errors from a finite-difference Hessian of the same function."""
    d, k = X.shape[1], K.shape[1]

    def nll(b: np.ndarray) -> float:
        eta = np.column_stack([np.zeros(len(X)), X @ b.reshape(d, k - 1, order="F")])
        pi = np.exp(eta - eta.max(axis=1, keepdims=True))
        pi /= pi.sum(axis=1, keepdims=True)
        return -float(np.log((K[reports] * pi).sum(axis=1)).sum())

    b = scipy.optimize.minimize(nll, np.zeros(d * (k - 1)), method="BFGS", options={"gtol": 1e-9}).x
    h = 1e-4
    m = len(b)
    H = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            ei, ej = np.eye(m)[i] * h, np.eye(m)[j] * h
            H[i, j] = (nll(b + ei + ej) - nll(b + ei - ej) - nll(b - ei + ej) + nll(b - ei - ej)) / (4 * h * h)
    return b, np.sqrt(np.diag(np.linalg.inv(H)))


def _frame(n: int, seed: int, response: str, K: np.ndarray, labels: list[str], beta: np.ndarray) -> pd.DataFrame:
    """Reports of ``response`` through K (true categories from the model), with x and s."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n).round(2)
    s = rng.choice(["f", "m"], size=n)
    X = np.column_stack([np.ones(n), x, s == "m"])
    eta = np.column_stack([np.zeros(n), X @ beta])
    pi = np.exp(eta) / np.exp(eta).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > pi.cumsum(axis=1)).sum(axis=1)
    r = (rng.random(n)[:, None] > K[:, y].T.cumsum(axis=1)).sum(axis=1)
    return pd.DataFrame({response: np.array(labels)[r], "x": x, "s": s})


@pytest.mark.parametrize("mech, K", [("warner", np.array([[0.8, 0.2], [0.2, 0.8]])),
                                     ("forced", np.array([[5 / 6, 1 / 3], [1 / 6, 2 / 3]]))])
def test_binary_fit_equals_an_independent_fit_of_the_same_likelihood(mech: str, K: np.ndarray) -> None:
    """Warner's design and an asymmetric forced response: coefficients and standard errors
    equal a per-respondent BFGS fit (with a finite-difference Hessian) of the same reports."""
    frame = _frame(1500, 4, "y", K, ["no", "yes"], np.array([[-0.3], [0.9], [0.5]]))
    spec = privspec.load(HEAD + f"query r = estimate regression(y ~ x + s) from {mech} by mle(logistic)\n")
    res = spec.run({mech: frame})["r"]
    d = res.to_dict()
    assert d["value"].keys() == {"intercept", "x", "s=m"} and d["converged"]
    X = np.column_stack([np.ones(len(frame)), frame["x"], frame["s"] == "m"]).astype(float)
    b, se = _direct_fit(K, (frame["y"] == "yes").to_numpy().astype(int), X)
    assert np.allclose(list(d["value"].values()), b, atol=1e-5)
    assert np.allclose(list(d["se"].values()), se, rtol=1e-3)
    z = np.array(list(d["value"].values())) / se
    assert np.allclose([d["wald"][k]["p_value"] for k in d["value"]], 2 * scipy.stats.norm.sf(np.abs(z)), rtol=1e-3)


@pytest.mark.parametrize("mech", ["three", "sets"])
def test_multinomial_fit_equals_an_independent_fit(mech: str) -> None:
    """Three categories through grr and through a subset design of pairs: the multinomial
    logit (each category against the first) equals the direct fit on the same reports."""
    spec = privspec.load(HEAD + f"query r = estimate regression(g ~ x) from {mech} by mle(logistic)\n")
    rng = np.random.default_rng(9)
    n = 2000
    x = rng.normal(size=n).round(2)
    eta = np.column_stack([np.zeros(n), 0.4 + 0.8 * x, -0.2 - 0.6 * x])
    pi = np.exp(eta) / np.exp(eta).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > pi.cumsum(axis=1)).sum(axis=1)
    labels = np.array(["a", "b", "c"])
    if mech == "three":
        keep = np.exp(1) / (np.exp(1) + 2)
        K = np.full((3, 3), (1 - keep) / 2) + np.eye(3) * (keep - (1 - keep) / 2)
        r = (rng.random(n)[:, None] > K[:, y].T.cumsum(axis=1)).sum(axis=1)
        reports = labels[r]
    else:  # a pair holding the truth, either of the two with probability 1/2
        subsets = ["a|b", "a|c", "b|c"]
        K = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 1]]) / 2.0
        r = (rng.random(n)[:, None] > K[:, y].T.cumsum(axis=1)).sum(axis=1)
        reports = np.array(subsets)[r]
    d = spec.run({mech: pd.DataFrame({"g": reports, "x": x})})["r"].to_dict()
    assert list(d["value"]) == ["b:intercept", "b:x", "c:intercept", "c:x"]
    b, se = _direct_fit(K, r, np.column_stack([np.ones(n), x]))
    assert np.allclose(list(d["value"].values()), b, atol=1e-5)
    assert np.allclose(list(d["se"].values()), se, rtol=1e-3)
    assert d["lr_test"]["df"] == 2


def test_warner_with_one_binary_covariate_is_the_closed_form() -> None:
    """One binary covariate saturates the model: in each group the MLE of the prevalence
    is Warner's (lambda - (1 - p)) / (2p - 1), so the coefficients are logit differences,
    and the observed information gives the delta method's SEs of Warner's variance
    lambda (1 - lambda) / (n (2p - 1)^2)."""
    rows = {("f", "yes"): 240, ("f", "no"): 360, ("m", "yes"): 330, ("m", "no"): 170}
    frame = pd.DataFrame([{"y": y, "s": s} for (s, y), c in rows.items() for _ in range(c)])
    spec = privspec.load(HEAD + "query r = estimate regression(y ~ s) from warner by mle(logistic)\n")
    d = spec.run({"warner": frame})["r"].to_dict()
    p = 0.8
    lam = {"f": 240 / 600, "m": 330 / 500}
    n = {"f": 600, "m": 500}
    pi = {s: (lam[s] - (1 - p)) / (2 * p - 1) for s in lam}
    logit = {s: np.log(pi[s] / (1 - pi[s])) for s in pi}
    var = {s: lam[s] * (1 - lam[s]) / (n[s] * (2 * p - 1) ** 2) / (pi[s] * (1 - pi[s])) ** 2 for s in pi}
    assert d["value"]["intercept"] == pytest.approx(logit["f"], abs=1e-9)
    assert d["value"]["s=m"] == pytest.approx(logit["m"] - logit["f"], abs=1e-9)
    assert d["se"]["intercept"] == pytest.approx(np.sqrt(var["f"]), rel=1e-7)
    assert d["se"]["s=m"] == pytest.approx(np.sqrt(var["f"] + var["m"]), rel=1e-7)


def _grouped(n: int, rng: np.random.Generator, K: np.ndarray, beta: np.ndarray) -> tuple:
    """Reports through K from a logistic model on a covariate with 5 values, grouped by
    (covariate, report)."""
    x = rng.integers(-2, 3, size=n).astype(float)
    p1 = 1 / (1 + np.exp(-(beta[0] + beta[1] * x)))
    y = (rng.random(n) < p1).astype(int)
    r = (rng.random(n) > K[0, y]).astype(int)      # K[r, y]: P(report 0 | y) = K[0, y]
    keys, counts = np.unique(np.column_stack([x, r]), axis=0, return_counts=True)
    X = np.column_stack([np.ones(len(keys)), keys[:, 0]])
    return X, K[keys[:, 1].astype(int)], counts.astype(float)


def test_wald_intervals_cover_in_a_seeded_simulation() -> None:
    """300 surveys of 800 through Warner's design: the 95% Wald interval of the slope
    covers the truth within 3 standard errors of 0.95."""
    rng = np.random.default_rng(37)
    K = np.array([[0.75, 0.25], [0.25, 0.75]])
    beta = np.array([-0.5, 0.7])
    hits = []
    for _ in range(300):
        X, K_rows, counts = _grouped(800, rng, K, beta)
        w = wald(fit_logit(X, K_rows, counts))
        hits.append(w.lower[1, 0] <= beta[1] <= w.upper[1, 0])
    assert abs(np.mean(hits) - 0.95) < 3 * np.sqrt(0.95 * 0.05 / 300)


def test_the_likelihood_ratio_test_holds_its_size() -> None:
    """All slopes 0: the LR test rejects at 5% in 300 seeded surveys within 3 standard
    errors of 0.05."""
    rng = np.random.default_rng(38)
    K = np.array([[0.8, 0.2], [0.2, 0.8]])
    rejected = []
    for _ in range(300):
        X, K_rows, counts = _grouped(800, rng, K, np.array([0.3, 0.0]))
        rejected.append(lr_test(fit_logit(X, K_rows, counts), X, K_rows, counts)["p_value"] < 0.05)
    assert abs(np.mean(rejected) - 0.05) < 3 * np.sqrt(0.05 * 0.95 / 300)


def test_the_bundled_spec_runs_and_intervals_at_other_levels() -> None:
    """specs/rr_regression.privspec on its data: both regressions converge; the Python
    API's conf_int at 90% is the Wald interval at that level, inside the 95% one."""
    res = privspec.load(SPEC).run(str(DATA))
    who, which = res["who"], res["which"]
    assert who.to_dict()["converged"] and which.to_dict()["converged"]
    assert list(which.to_dict()["value"]) == ["middle:intercept", "middle:age", "high:intercept", "high:age"]
    ci90, ci95 = who.conf_int(0.10), who.to_dict()["ci95"]
    se = who.to_dict()["se"]
    for lab, (lo, hi) in ci95.items():
        assert lo < ci90.loc[lab, "lower"] < ci90.loc[lab, "upper"] < hi
        assert ci90.loc[lab, "upper"] - ci90.loc[lab, "lower"] == pytest.approx(2 * 1.6448536 * se[lab], rel=1e-6)
    assert np.allclose(np.sqrt(np.diag(who.cov_params().to_numpy())), list(se.values()))


@pytest.mark.parametrize("column, cells, code, words", [
    ("x", None, "D003", "no column 'x'"),
    ("y", None, "D003", "no column 'y'"),
    ("x", {3: "abc", 5: "n/a?"}, "D107", "of the covariate x are not numbers"),
    ("s", {2: "other"}, "D107", "values 'other' are not among its categories"),
    ("x", {4: ""}, "D004", "missing value"),
])
def test_data_errors_name_the_column_and_the_rows(column: str, cells: dict | None, code: str, words: str) -> None:
    frame = pd.DataFrame({"y": ["yes", "no"] * 5, "x": [str(v) for v in range(10)], "s": ["f", "m"] * 5})
    if cells is None:
        frame = frame.drop(columns=[column])
    else:
        for row, value in cells.items():
            frame.loc[row - 1, column] = value
    spec = privspec.load(HEAD + "query r = estimate regression(y ~ x + s) from warner by mle(logistic)\n")
    failure = spec.run({"warner": frame}).failures["r"]
    assert isinstance(failure, DataError)
    diag = failure.diagnostics[0]
    assert diag.code == code and words in diag.message and diag.columns == (column,)
    if cells:
        assert diag.rows == tuple(sorted(cells))


@pytest.mark.parametrize("query, code, words", [
    ("estimate regression(y ~ x) from warner by mle(normal)", "E205", "mle(logistic)"),
    ("estimate regression(y ~ x) from warner by iterative(linear)", "E501", "'iterative' does not apply"),
    ("estimate regression(y ~ x) from both by mle(logistic)", "E501",
     "'mle' does not apply to regression() from products of randomized responses"),
    ("estimate regression(y ~ x) from warner by mle(logistic, se = conditional)", "E205", "se = population"),
    ("estimate regression(y ~ x) from warner by mom", "E502", "unknown estimator for regression() 'mom'"),
])
def test_the_checker_refuses_what_does_not_fit(query: str, code: str, words: str) -> None:
    diagnostics = privspec.load(HEAD + f"query r = {query}\n").diagnostics
    found = [d for d in diagnostics if d.code == code]
    assert found and words in found[0].message, diagnostics


@pytest.mark.parametrize("ys", [["no"] * 50, ["no"] * 25 + ["yes"] * 25])
def test_data_that_put_the_maximum_at_infinity_are_d020(ys: list[str]) -> None:
    """Every report "no" (the MLE of P(yes) is 0) and reports separated by x: the likelihood
    rises towards infinite coefficients, and the query says so instead of printing them."""
    spec = privspec.load(HEAD + "query r = estimate regression(y ~ x) from warner by mle(logistic)\n")
    failure = spec.run({"warner": pd.DataFrame({"y": ys, "x": np.arange(50)})}).failures["r"]
    assert failure.code == "D020" and "infinite coefficients" in failure.diagnostics[0].message
