"""Issue 35: prediction (the Bayes vulnerability: the chance that an adversary who knows the
design and the population guesses a respondent's category from one report) and the worst
report's posterior (``individual``) for the frequency oracles, on the scale of every other
family.

The exact values are checked against brute-force enumeration of every report, and against
an independent Monte Carlo of the adversary: categories drawn from the population,
privatized by privspec's own sampler (``Spec.privatize``), each report read and guessed by
its MAP category computed here from the protocol's definition, the hits counted."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.backends.oracles.guessing import by_channel, subset_selection, unary
from privspec.backends.oracles.pure import oracle

RACE = (0.009551, 0.031909, 0.095943, 0.008323, 0.854274)
LABELS = ("Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White")
HEAD = ('variable race: categorical {"Amer-Indian-Eskimo", "Asian-Pac-Islander", Black, Other, White}\n'
        f"population race ~ categorical({', '.join(map(str, RACE))})\n")
#: a population where the guess is not always the majority category
FLAT = (0.35, 0.25, 0.2, 0.12, 0.08)
FLAT_HEAD = ("variable race: categorical {a, b, c, d, e}\n"
             f"population race ~ categorical({', '.join(map(str, FLAT))})\n")


def compared(head: str, candidates: str, by: str = "prediction, individual") -> dict:
    spec = privspec.load(head + f"compare c for distribution(race) at n = 1000 {{\n{candidates}\n}} by {by}\n")
    assert spec.ok, spec.render_diagnostics()
    doc = spec.compare()["c"].value.to_dict()
    return {c["name"]: {k: v.get("value") for k, v in c["values"].items()} for c in doc["candidates"]}


def test_oue_at_epsilon_4_on_the_race_shares_is_the_issues_number() -> None:
    """The issue's OUE number, through the comparison (the leakage query), exactly."""
    got = compared(HEAD, "oue_4 = oue(race, epsilon = 4)\ngrr_4 = grr(race, epsilon = 4)\n"
                         "uniform = subset(race, uniform)")
    assert got["oue_4"]["prediction"] == pytest.approx(0.901541, abs=5e-7)
    assert got["grr_4"]["prediction"] == pytest.approx(0.944242, abs=5e-7)
    assert got["uniform"]["prediction"] == pytest.approx(0.922368, abs=5e-7)
    # the worst report of OUE supports White alone: e^4 w / (e^4 w + 1 - w)
    e, w = math.exp(4), RACE[4]
    assert got["oue_4"]["individual"] == pytest.approx(e * w / (e * w + 1 - w), rel=1e-12)


def _brute(K: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    J = K * w[None, :]
    return float(J.max(axis=1).sum()), float((J.max(axis=1) / J.sum(axis=1)).max())


@pytest.mark.parametrize("kind, eps", [("oue", 1.0), ("sue", 2.0), ("oue", 0.3)])
def test_unary_encoding_matches_every_bit_vector(kind: str, eps: float) -> None:
    o = oracle(kind, 5, eps)
    p, q = o.support_probs()
    w = np.array(FLAT)
    reports = np.array(list(itertools.product([0, 1], repeat=5)))
    K = np.array([[np.prod(np.where(np.arange(5) == x, np.where(r == 1, p, 1 - p), np.where(r == 1, q, 1 - q)))
                   for x in range(5)] for r in reports])
    pred, worst = _brute(K, w)
    g = o.guessing(w)
    assert g.prediction == pytest.approx(pred, rel=1e-12) and g.individual == pytest.approx(worst, rel=1e-12)
    assert g.se == 0 and g.evaluation.startswith("exact")


@pytest.mark.parametrize("d, k, eps", [(5, 2, 1.0), (6, 3, 0.5), (4, 1, 2.0)])
def test_subset_selection_matches_every_subset(d: int, k: int, eps: float) -> None:
    o = oracle("ss", d, eps, k=k)
    p = o.support_probs()[0]
    w = np.linspace(1, 2, d)[::-1] ** 3
    w = w / w.sum()
    subsets = list(itertools.combinations(range(d), k))
    K = np.array([[p / math.comb(d - 1, k - 1) if x in S else (1 - p) / math.comb(d - 1, k) for x in range(d)]
                  for S in subsets])
    assert np.allclose(K.sum(axis=0), 1)
    pred, worst = _brute(K, w)
    g = subset_selection(p, k, w)
    assert g.prediction == pytest.approx(pred, rel=1e-12) and g.individual == pytest.approx(worst, rel=1e-12)


def test_hadamard_response_and_grr_enumerate_their_reports() -> None:
    w = np.array(FLAT)
    hr = oracle("hr", 5, 1.5)
    p = hr.support_probs()[0]
    K = np.zeros((hr.K, 5))
    for j in range(hr.K):
        for x in range(5):
            inside = bin((x + 1) & j).count("1") % 2 == 0
            K[j, x] = (p if inside else 1 - p) / (hr.K / 2)
    pred, worst = _brute(K, w)
    g = hr.guessing(w)
    assert g.prediction == pytest.approx(pred, rel=1e-12) and g.individual == pytest.approx(worst, rel=1e-12)
    grr = oracle("grr", 5, 1.5)
    p, q = grr.support_probs()
    assert grr.guessing(w).prediction == pytest.approx(by_channel(np.where(np.eye(5, dtype=bool), p, q), w, "").prediction)


def _privatized(head: str, mechanism: str, w: tuple, n: int, seed: int) -> tuple[np.ndarray, pd.Series]:
    """``n`` categories drawn from ``w`` and their reports by privspec's own sampler."""
    spec = privspec.load(head + f"mechanism m = {mechanism}\n")
    labels = spec.model.variables["race"].labels
    x = np.random.default_rng(seed).choice(len(w), size=n, p=np.array(w) / sum(w))
    out = spec.privatize(pd.DataFrame({"race": [labels[i] for i in x]}), "m", seed=seed)
    return x, out["race"].astype(str)


def _hits(x: np.ndarray, guess: np.ndarray) -> tuple[float, float]:
    hit = (guess == x).astype(float)
    return float(hit.mean()), float(hit.std(ddof=1) / math.sqrt(len(hit)))


def test_oue_prediction_matches_an_adversary_guessing_privatized_reports() -> None:
    eps, n = 1.0, 60_000
    x, reports = _privatized(FLAT_HEAD, f"oue(race, epsilon = {eps})", FLAT, n, seed=7)
    p, q = 0.5, 1 / (math.exp(eps) + 1)
    # the report's bits from its hex text (bit v of byte v // 8), then the posterior of each category
    raw = np.frombuffer(bytes.fromhex("".join(reports)), dtype=np.uint8).reshape(n, -1)
    bits = np.unpackbits(raw, axis=1, bitorder="little")[:, :5].astype(bool)
    like = np.where(bits, p / q, (1 - p) / (1 - q))
    guess = np.argmax(like * np.array(FLAT)[None, :], axis=1)
    mc, se = _hits(x, guess)
    got = compared(FLAT_HEAD, f"o = oue(race, epsilon = {eps})")["o"]["prediction"]
    assert abs(got - mc) <= 4 * se, (got, mc, se)
    assert got == pytest.approx(unary(p, q, np.array(FLAT)).prediction)


@pytest.mark.parametrize("kind, eps", [("olh", 2.0), ("blh", 1.0)])
def test_local_hashing_prediction_matches_an_adversary_guessing_privatized_reports(kind: str, eps: float) -> None:
    n, P = 60_000, (1 << 19) - 1
    x, reports = _privatized(FLAT_HEAD, f"{kind}(race, epsilon = {eps})", FLAT, n, seed=11)
    o = oracle(kind, 5, eps)
    g, pk = o.g, o.support_probs()[0]
    qk = (1 - pk) / (g - 1)
    parts = reports.str.split(":", expand=True)
    seed = parts[0].astype(np.int64).to_numpy()
    value = parts[1].astype(np.int64).to_numpy()
    a, b, c = seed % P, (seed // P) % P, seed // (P * P)
    u = np.arange(5)
    h = ((a[:, None] + b[:, None] * u + c[:, None] * (u * u % P)) % P) % g   # the hash, from its definition
    guess = np.argmax(np.where(h == value[:, None], pk, qk) * np.array(FLAT)[None, :], axis=1)
    mc, se = _hits(x, guess)
    doc = privspec.load(FLAT_HEAD + f"compare c for distribution(race) {{ o = {kind}(race, epsilon = {eps}) }} "
                                    "by prediction").compare()["c"]
    got = doc.value.to_dict()["candidates"][0]["values"]["prediction"]["value"]
    mc_se_of_value = o.guessing(np.array(FLAT)).se
    assert 0 < mc_se_of_value < 2e-3
    assert abs(got - mc) <= 4 * math.hypot(se, mc_se_of_value), (got, mc, se)


def test_longitudinal_prediction_is_one_collections() -> None:
    got = compared(FLAT_HEAD, "l = l_osue(race, epsilon = 3, first = 1)\no = oue(race, epsilon = 1)")
    # L-OSUE's one report is OUE at the first collection's epsilon
    assert got["l"]["prediction"] == pytest.approx(got["o"]["prediction"], rel=1e-9)


@pytest.mark.slow   # whole comparisons (several seconds each); the quick run keeps one of each kind
def test_every_family_compares_on_prediction() -> None:
    """grr, subset, unary encoding, local hashing, Hadamard response and subset selection
    on one scale: prediction finite for every candidate, and ranked."""
    got = compared(HEAD, "\n".join([
        "grr_2 = grr(race, epsilon = 2)", "uniform = subset(race, uniform)", "pairs = subset(race, sizes {2: 1})",
        "oue_2 = oue(race, epsilon = 2)", "sue_2 = sue(race, epsilon = 2)", "olh_2 = olh(race, epsilon = 2)",
        "hr_2 = hr(race, epsilon = 2)", "ss_2 = ss(race, epsilon = 2)"]), by="max_se")
    for name, values in got.items():
        assert math.isfinite(values["prediction"]) and RACE[4] - 1e-9 <= values["prediction"] <= 1, (name, values)


def test_a_comparison_without_a_privacy_criterion_ranks_on_prediction() -> None:
    def criteria(by: str) -> tuple:
        spec = privspec.load(HEAD + f"compare c for distribution(race) {{ g = grr(race, epsilon = 1) }} {by}\n")
        return spec.model.compares["c"].criteria

    assert criteria("") == ("avar_trace", "prediction")
    assert criteria("by max_se, mse") == ("max_se", "mse", "prediction")
    assert criteria("by max_se, epsilon") == ("max_se", "epsilon")
    assert criteria("by individual") == ("individual",)


def test_analyze_answers_an_oracles_prediction_query() -> None:
    spec = privspec.load(HEAD + "mechanism o = oue(race, epsilon = 4)\nquery lo = leakage(o, prediction)\n")
    assert spec.ok, spec.render_diagnostics()
    got = spec.analyze()["lo"]
    assert got.value["prediction"] == pytest.approx(0.901541, abs=5e-7)
    assert got.extras["evaluation"].startswith("exact")
