"""The difference test with each group's own variance (issue 35): ``sample_size(...,
test = difference(LABEL, delta))`` plans for a second group whose share of LABEL is moved
by delta, with its variance at its own population (both groups had the first's before:
specs/planning.privspec's n_diff was 6738, which reaches power 0.78, not 0.8)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import privspec
from privspec.backends.design.planning import power_difference, shifted_shares

W = np.array([0.009551, 0.031909, 0.095943, 0.008323, 0.854274])   # specs/planning.privspec
BLACK, DELTA, EPS = 2, 0.03, 2.0


def test_shifted_shares() -> None:
    w2 = shifted_shares(W, BLACK, DELTA)
    assert w2[BLACK] == pytest.approx(W[BLACK] + DELTA) and w2.sum() == pytest.approx(1.0)
    others = np.delete(np.arange(5), BLACK)
    assert np.allclose(w2[others] / W[others], (1 - w2[BLACK]) / (1 - W[BLACK]))
    with pytest.raises(ValueError, match="outside"):
        shifted_shares(W, BLACK, -0.5)


def grr_var(w: np.ndarray, k: int) -> float:
    """avar_kk of GRR's moment estimator (Warner): lam (1 - lam) / (p - q)^2."""
    e = math.exp(EPS)
    p, q = e / (e + len(w) - 1), 1 / (e + len(w) - 1)
    lam = (p - q) * w[k] + q
    return lam * (1 - lam) / (p - q) ** 2


def simulated_power(n: int, reps: int, seed: int) -> tuple[float, float]:
    """Rejection rate of the two-sample Wald test of equal w[Black] (plug-in standard errors)
    with the second group's share moved by DELTA, and its Monte Carlo error. The moment
    estimate of one share reads only that category's report count, a binomial."""
    e = math.exp(EPS)
    p, q = e / (e + 4), 1 / (e + 4)
    lam1 = (p - q) * W[BLACK] + q
    lam2 = (p - q) * shifted_shares(W, BLACK, DELTA)[BLACK] + q
    rng = np.random.default_rng(seed)
    c1, c2 = rng.binomial(n, lam1, reps) / n, rng.binomial(n, lam2, reps) / n
    z = (c1 - c2) / (p - q) / np.sqrt((c1 * (1 - c1) + c2 * (1 - c2)) / (p - q) ** 2 / n)
    rate = float(np.mean(np.abs(z) > 1.959963984540054))
    return rate, math.sqrt(rate * (1 - rate) / reps)


@pytest.mark.slow   # seeded simulation of the two-sample test (7 s)
def test_the_planned_n_reaches_the_power_in_simulation() -> None:
    res = privspec.load("specs/planning.privspec").analyze()
    n = res["n_diff"].value
    w2 = shifted_shares(W, BLACK, DELTA)
    assert res["n_diff"].achieved == pytest.approx(
        power_difference(n, DELTA, grr_var(W, BLACK), grr_var(w2, BLACK)), rel=1e-9)
    rate, mc = simulated_power(n, 40_000, 35)
    assert abs(rate - 0.8) < 3.5 * mc, (n, rate, mc)     # both groups at the first's variance: 6738, 0.78
