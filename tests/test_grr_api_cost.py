"""GRR through the API (issue 38): after the first call, an estimate on the same channel
does no d^3 work that depends on the channel alone (``Q^-1``, ``Q^-1 T``; no rank for
``mom``), and no d^3 work per call (its MoM covariance and solve in closed form, within
1e-12 of the formulas computed afresh); a categorical column is read from its codes (the
raw values' and the reports' checks on the categories, no tally of the rows), with the
same estimates and the same messages."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.errors import PrivspecError
from privspec.backends.core.compile import channel_of

LABELS = [f"c{i}" for i in range(24)]


def _spec(method: str = "mom") -> privspec.Spec:
    return privspec.load("variable x: categorical {" + ", ".join(LABELS) + "}\n"
                         "mechanism m = grr(x, epsilon = 2)\n"
                         f"query q = estimate distribution(x) from m by {method}\n")


def _reports(spec: privspec.Spec) -> pd.DataFrame:
    x = np.random.default_rng(3).integers(0, len(LABELS), 5000)
    return spec.privatize(pd.DataFrame({"x": pd.Categorical.from_codes(x, categories=LABELS)}), "m", seed=1)


def test_a_second_mom_estimate_inverts_and_factors_nothing(monkeypatch) -> None:
    spec = _spec()
    reports = _reports(spec)
    first = spec.run(reports, ["q"])["q"]
    calls: list[str] = []
    for name in ("inv", "matrix_rank", "svd"):
        original = getattr(np.linalg, name)
        monkeypatch.setattr(np.linalg, name, lambda *a, _f=original, _n=name, **k: calls.append(_n) or _f(*a, **k))
    again = spec.run(reports, ["q"])["q"]
    assert calls == []
    assert again.value.values == first.value.values and again.extras["se"].values == first.extras["se"].values
    assert again.extras["ci95"] == first.extras["ci95"]


@pytest.mark.parametrize("seed", [0, 1])
def test_cached_matrices_give_the_covariance_computed_afresh(seed: int) -> None:
    ch = channel_of(_spec().model.mechanisms["m"])
    w = np.random.default_rng(seed).dirichlet(np.ones(len(LABELS)))
    K, T = ch.Kn, ch.Tn
    lam = K @ w.reshape(-1, 1)
    gamma = T @ lam
    C = T @ np.diag(lam.ravel()) @ T.T - np.outer(gamma, gamma)
    Qi = np.linalg.inv(T @ K)
    for _ in range(2):                                   # computed, then from the cache
        V = Qi @ C @ Qi.T
        assert np.abs(ch.avar_mom(w) - V).max() <= 1e-12 * np.abs(V).max()
        assert np.array_equal(ch.mom_map, np.linalg.solve(T @ K, T))


@pytest.mark.parametrize("scale", [1.0, 1.3, -0.2])
def test_grr_covariance_and_solve_are_the_general_formulas_in_d2(scale: float, monkeypatch) -> None:
    """At any w (summing to 1 or not) and gamma: ``Q^-1 C Q^-T`` and ``Q^-1 gamma`` of the
    floating-point matrix, to 1e-12, with no matrix product, inverse or solve."""
    ch = channel_of(_spec().model.mechanisms["m"])
    w = scale * np.random.default_rng(5).dirichlet(np.ones(len(LABELS)))
    lam = ch.Kn @ w
    Qi = np.linalg.inv(ch.Qn)
    V = Qi @ (np.diag(lam) - np.outer(lam, lam)) @ Qi.T
    gamma = np.random.default_rng(6).random(len(LABELS))
    solved = np.linalg.solve(ch.Qn, gamma)
    for name in ("inv", "solve", "matmul"):
        monkeypatch.setattr(np.linalg, name, lambda *a, _n=name, **k: pytest.fail(f"np.linalg.{_n} called"))
    assert np.abs(ch.avar_mom(w) - V).max() <= 1e-12 * np.abs(V).max()
    assert np.abs(ch.mom_solve(gamma) - solved).max() <= 1e-12 * np.abs(solved).max()


def test_a_categorical_column_is_read_from_its_codes(monkeypatch) -> None:
    """``spec.privatize`` of a categorical column in the domain's order and ``spec.run`` of its
    categorical reports tally no rows, and give what the tally of the same texts gives."""
    spec = _spec()
    x = np.random.default_rng(3).integers(0, len(LABELS), 5000)
    raw = pd.DataFrame({"x": pd.Categorical.from_codes(x, categories=LABELS)})
    texts = spec.privatize(pd.DataFrame({"x": np.asarray(LABELS, dtype=object)[x]}), "m", seed=1)
    expected = spec.run(pd.DataFrame({"x": texts["x"].astype(object)}), ["q"])["q"]
    from privspec.backends.data.engines import PandasEngine
    monkeypatch.setattr(PandasEngine, "_tally", lambda *a, **k: pytest.fail("the rows were tallied"))
    reports = spec.privatize(raw, "m", seed=1)
    assert isinstance(reports["x"].dtype, pd.CategoricalDtype)
    assert list(reports["x"].astype(object)) == list(texts["x"].astype(object))
    got = spec.run(reports, ["q"])["q"]
    assert got.value.values == expected.value.values and got.extras["se"].values == expected.extras["se"].values
    assert got.extras["ci95"] == expected.extras["ci95"]


@pytest.mark.parametrize("case", ["missing", "not a report", "spaces", "order"])
def test_other_categorical_columns_keep_the_tally_and_its_messages(case: str) -> None:
    """A categorical column with a missing value, a category that is no report, labels with
    spaces or in another order is read by the tally, as before: the same messages, the same
    estimates."""
    spec = _spec()
    x = np.random.default_rng(4).integers(0, len(LABELS), 300).astype(object)
    texts = np.asarray(LABELS, dtype=object)[x.astype(int)]
    if case == "missing":
        texts[7] = None
    elif case == "not a report":
        texts[7] = "c1|c2"
    elif case == "spaces":
        texts = np.array([f" {t} " for t in texts], dtype=object)
    categories = sorted(set(t for t in texts if t is not None), reverse=case == "order")
    column = pd.Categorical(texts, categories=categories)

    def run(frame: pd.DataFrame) -> tuple:
        got = spec.run(frame, ["q"])
        if "q" in got.failures:
            return tuple((d.code, d.message, d.rows) for d in got.failures["q"].diagnostics)
        return got["q"].value.values, got["q"].extras["ci95"]

    def privatize(frame: pd.DataFrame) -> tuple:
        try:
            return tuple(spec.privatize(frame, "m", seed=1)["x"].astype(object))
        except PrivspecError as e:
            return tuple((d.code, d.message, d.rows) for d in e.diagnostics)

    for way in (run, privatize):
        assert way(pd.DataFrame({"x": column})) == way(pd.DataFrame({"x": texts}))
