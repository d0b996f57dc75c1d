"""A randomized response as a predictor (R's rr rrreg.predictor; issue 37): a raw outcome
regressed on raw covariates and a sensitive item seen only through its mechanism's report.
The fit equals an independent per-respondent fit of the same likelihood (written here by
summing over the item's categories in a loop, maximized by scipy's Nelder-Mead then
BFGS with numerical gradients), recovers the model at a large n, and the checker says
what it takes."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.optimize

import privspec
from privspec.errors import SpecError

HEAD = """variable y: categorical {no, yes}
variable z: categorical {no, yes}
variable g: categorical {a, b, c}
variable x: continuous
variable s: categorical {f, m}
mechanism warner = rr(z, matrix [[4/5, 1/5], [1/5, 4/5]])
mechanism three = grr(g, epsilon = 2)
"""


def _frame(n: int, seed: int, item: str, K: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> pd.DataFrame:
    """x ~ normal, s uniform on {f, m}; the item from a logit on (1, x); the outcome from a
    logit on (1, x, item dummies, s); the item's report through K[report, item]."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n).round(1)
    s = rng.random(n) < 0.5
    eta = np.column_stack([np.zeros(n), np.column_stack([np.ones(n), x]) @ gamma])
    pz = np.exp(eta) / np.exp(eta).sum(axis=1, keepdims=True)
    z = (rng.random(n)[:, None] > pz.cumsum(axis=1)).sum(axis=1)
    kz = pz.shape[1]
    W = np.column_stack([np.ones(n), x, (z[:, None] == np.arange(1, kz)).astype(float), s])
    y = (rng.random(n) < 1 / (1 + np.exp(-(W @ beta)))).astype(int)
    r = (rng.random(n)[:, None] > K[:, z].T.cumsum(axis=1)).sum(axis=1)
    labels = ["no", "yes"] if kz == 2 else ["a", "b", "c"]
    return pd.DataFrame({"y": np.array(["no", "yes"])[y], "x": x, item: np.array(labels)[r],
                         "s": np.where(s, "m", "f")})


def _direct(frame: pd.DataFrame, item: str, K: np.ndarray, kz: int) -> tuple[np.ndarray, np.ndarray]:
    """The same likelihood per respondent, maximized by scipy (numerical gradients); the
    item's model on every other covariate, (1, x, s)."""
    labels = ["no", "yes"] if kz == 2 else ["a", "b", "c"]
    r = frame[item].map({lab: i for i, lab in enumerate(labels)}).to_numpy()
    y = (frame["y"] == "yes").to_numpy().astype(float)
    x, s = frame["x"].to_numpy(), (frame["s"] == "m").to_numpy().astype(float)
    n, dg = len(frame), 3 * (kz - 1)

    def nll(theta: np.ndarray) -> float:
        gamma, beta = theta[:dg].reshape(3, kz - 1, order="F"), theta[dg:]
        eta = np.column_stack([np.zeros(n), np.column_stack([np.ones(n), x, s]) @ gamma])
        pz = np.exp(eta) / np.exp(eta).sum(axis=1, keepdims=True)
        total = np.zeros(n)
        for z in range(kz):
            dummies = [np.full(n, float(z == j)) for j in range(1, kz)]
            p1 = 1 / (1 + np.exp(-(np.column_stack([np.ones(n), x, *dummies, s]) @ beta)))
            total += pz[:, z] * K[r, z] * np.where(y == 1, p1, 1 - p1)
        return -float(np.log(total).sum())

    start = np.zeros(dg + 3 + kz - 1)
    first = scipy.optimize.minimize(nll, start, method="Nelder-Mead", options={"maxiter": 4000, "xatol": 1e-6})
    b = scipy.optimize.minimize(nll, first.x, method="BFGS", options={"gtol": 1e-7}).x
    h, m = 1e-4, len(b)
    H = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            ei, ej = np.eye(m)[i] * h, np.eye(m)[j] * h
            H[i, j] = (nll(b + ei + ej) - nll(b + ei - ej) - nll(b - ei + ej) + nll(b - ei - ej)) / (4 * h * h)
    return b[dg:], np.sqrt(np.diag(np.linalg.inv(H)))[dg:]


@pytest.mark.parametrize("mech, item, K, gamma, beta", [
    ("warner", "z", np.array([[0.8, 0.2], [0.2, 0.8]]), np.array([[-0.3], [0.8]]), np.array([-0.5, 0.4, 1.0, 0.3])),
    ("three", "g", None, np.array([[0.2, -0.3], [0.5, 0.7]]), np.array([-0.5, 0.4, 0.8, -0.6, 0.3])),
])
def test_fit_equals_an_independent_fit_of_the_same_likelihood(mech, item, K, gamma, beta):
    if K is None:    # grr at epsilon 2 on three categories
        e = np.exp(2.0)
        K = (np.ones((3, 3)) + (e - 1) * np.eye(3)) / (e + 2)
    frame = _frame(1500, 3, item, K, gamma, beta)
    spec = privspec.load(HEAD + f"query r = estimate regression(y ~ x + {item} + s) from {mech} by mle(logistic)\n")
    d = spec.run({mech: frame})["r"].to_dict()
    kz = K.shape[0]
    want = ["intercept", "x", *([f"{item}=yes"] if kz == 2 else [f"{item}=b", f"{item}=c"]), "s=m"]
    assert list(d["value"]) == want and d["converged"]
    got, se = np.array(list(d["value"].values())), np.array(list(d["se"].values()))
    want_coef, want_se = _direct(frame, item, K, kz)
    assert np.allclose(got, want_coef, atol=2e-3)
    assert np.allclose(se, want_se, rtol=0.01)
    assert list(d["item_model"]["coefficients"]) == (["intercept", "x", "s=m"] if kz == 2 else
                                                     ["b:intercept", "b:x", "b:s=m", "c:intercept", "c:x", "c:s=m"])


@pytest.mark.slow
def test_recovers_the_model_at_a_large_n():
    K = np.array([[0.8, 0.2], [0.2, 0.8]])
    beta = np.array([-0.5, 0.4, 1.0, 0.3])
    frame = _frame(40000, 5, "z", K, np.array([[-0.3], [0.8]]), beta)
    spec = privspec.load(HEAD + "query r = estimate regression(y ~ x + z + s) from warner by mle(logistic)\n")
    d = spec.run({"warner": frame})["r"].to_dict()
    got, se = np.array(list(d["value"].values())), np.array(list(d["se"].values()))
    assert np.all(np.abs(got - beta) < 3.5 * se), (got, se)
    assert np.allclose(list(d["item_model"]["coefficients"].values()), [-0.3, 0.8, 0.0], atol=0.12)


def test_the_checker_takes_a_categorical_item_among_the_covariates():
    ok = privspec.load(HEAD + "query r = estimate regression(y ~ x + z) from warner by mle\n")
    assert ok.diagnostics == () or not [d for d in ok.diagnostics if d.severity == "error"]
    with pytest.raises(SpecError, match="E503"):
        privspec.load(HEAD + "query r = estimate regression(y ~ x + s) from warner by mle\n").model
    with pytest.raises(SpecError, match="E503"):
        privspec.load(HEAD + "query r = estimate regression(x ~ z) from warner by mle\n").model


def test_planning_an_item_as_a_predictor_is_refused():
    text = "population x ~ normal(0, 1)\npopulation z ~ categorical(0.5, 0.5)\n" \
           "query v = avar(regression(y ~ x + z, coefficients = {x: 1}) from warner by mle)\n"
    res = privspec.load(HEAD + text).analyze()
    d = res.failures["v"].diagnostics[0]
    assert d.code == "B016" and "predictor" in d.message


@pytest.mark.slow
def test_intervals_cover_in_seeded_surveys():
    """The 95% Wald intervals of every outcome coefficient over 200 seeded surveys of 1,500
    (Warner, p = 0.8): coverage within 0.90 and 0.99 (binomial standard error 0.015)."""
    K = np.array([[0.8, 0.2], [0.2, 0.8]])
    beta = np.array([-0.5, 0.4, 1.0, 0.3])
    spec = privspec.load(HEAD + "query r = estimate regression(y ~ x + z + s) from warner by mle(logistic)\n")
    hits = np.zeros(4)
    for seed in range(200):
        d = spec.run({"warner": _frame(1500, 100 + seed, "z", K, np.array([[-0.3], [0.8]]), beta)})["r"].to_dict()
        lo, hi = np.array([d["ci95"][k] for k in d["value"]]).T
        hits += (lo <= beta) & (beta <= hi)
    assert np.all((hits / 200 > 0.90) & (hits / 200 < 0.99)), hits / 200
