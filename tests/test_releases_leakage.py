"""``leakage(D)`` of a released table: the chance that an adversary who knows every
other record guesses one record's cell (backends/releases/guessing.py), checked
against an independent computation and a seeded simulation of the adversary on
privspec's own noise (add_noise)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import privspec
from privspec.errors import SpecError
from privspec.backends.oracles.guessing import unary
from privspec.backends.releases import guessing
from privspec.backends.releases.backend import Layout, add_noise

SPEC = """
variable degree: categorical {BA, BSc}
variable band: categorical {low, mid, high}
population degree ~ categorical(0.6, 0.4)
population band ~ categorical(0.5, 0.3, 0.2)
release D = counts(degree, band) with geometric(epsilon = 1) protect {band} exact totals(degree)
release G = counts(degree, band) with geometric(epsilon = 1)
release P = counts(degree, band) with geometric(epsilon = 1, calibration = paper) protect {band} exact totals(degree)
query pd = leakage(D)
query pg = leakage(G, prediction)
query pp = leakage(P)
"""
W = np.outer([0.6, 0.4], [0.5, 0.3, 0.2])


def _answers():
    return privspec.load(SPEC).analyze()


def _geometric_pmf(a: float, z: np.ndarray) -> np.ndarray:
    return (1 - a) / (1 + a) * a ** np.abs(z)


def _adversary_accuracy(model, release, cells_law, reps: int, seed: int) -> tuple[float, float]:
    """Seeded simulation in the release's ``(m, n)`` layout: the target's cell drawn from
    the population, the release's own noise added (add_noise on the target's one-hot
    table: the other records' counts are known and cancel), the Bayes guess under
    ``cells_law(z, j) = Pr(z | j)`` (z: reps x m*n; up to a factor free of j); its
    accuracy and standard error."""
    rng = np.random.default_rng(seed)
    flat = Layout.of(release).to_groups(W).ravel()
    m = Layout.of(release).to_groups(W).shape[0]
    truth = rng.choice(flat.size, size=reps, p=flat)
    onehot = np.zeros((reps, flat.size), dtype=np.int64)
    onehot[np.arange(reps), truth] = 1
    z = add_noise(model, release, onehot.reshape(reps * m, -1), rng).reshape(reps, -1)
    post = np.stack([flat[j] * cells_law(z, j) for j in range(flat.size)], axis=1)
    right = post.argmax(axis=1) == truth
    return float(right.mean()), float(right.std() / math.sqrt(reps))


def test_geometric_is_unary_encoding_and_matches_the_adversary():
    """The geometric mechanism (no exact totals, a = e^(-eps/2)): exact R equals symmetric
    unary encoding at the same epsilon, and a simulated adversary using the product of the
    cells' geometric likelihoods (not the unary reduction) is right as often."""
    result = _answers()["pg"]
    a = math.exp(-0.5)
    assert result.value["prediction"] == pytest.approx(unary(1 / (1 + a), a / (1 + a), W.ravel()).prediction, abs=1e-12)
    # SUE at epsilon 1: p = e^(1/2) / (e^(1/2) + 1), q = 1 / (e^(1/2) + 1)
    e = math.exp(0.5)
    assert result.value["prediction"] == pytest.approx(unary(e / (e + 1), 1 / (e + 1), W.ravel()).prediction, abs=1e-12)
    model = privspec.load(SPEC).model
    flat_cells = W.size

    def law(z, j):
        shifted = z - np.eye(flat_cells, dtype=np.int64)[j]
        return np.prod(_geometric_pmf(a, shifted), axis=1)

    acc, se = _adversary_accuracy(model, model.releases["G"], law, 60_000, seed=2026)
    assert abs(acc - result.value["prediction"]) < 4 * se, (acc, se, result.value)


def _pair_law_by_sum(a: float, y1: np.ndarray, y2: np.ndarray) -> np.ndarray:
    """Pr(y) of Algorithm 1's noise on three cells by direct summation: y1 = b12 + b13,
    y2 = -b12 + b23, so Pr(y) = sum_t g(t) g(y1 - t) g(y2 + t) (independent of the FFT)."""
    t = np.arange(-110, 111)[:, None]
    return (_geometric_pmf(a, t) * _geometric_pmf(a, y1[None, :] - t) * _geometric_pmf(a, y2[None, :] + t)).sum(axis=0)


@pytest.mark.parametrize("name, a", [("pd", math.exp(-1.0)), ("pp", math.exp(-0.5))])
def test_algorithm1_matches_direct_summation_and_the_adversary(name, a):
    """Algorithm 1 (exact totals: the degree is revealed; noise on the band cells):
    R from the FFT law equals R from direct summation over the free draw, and a simulated
    adversary on privspec's own Algorithm-1 noise is right as often; the paper's
    calibration (a = e^(-eps/2)) leaks less than the tight one."""
    result = _answers()[name]
    band = np.array([0.5, 0.3, 0.2])
    grid = np.arange(-70, 71)
    y1, y2 = [g.ravel() for g in np.meshgrid(grid, grid, indexing="ij")]
    # sum over z = (z1, z2, 1 - z1 - z2) of max_j w_j Pr(z - e_j)
    cand = np.stack([band[0] * _pair_law_by_sum(a, y1 - 1, y2), band[1] * _pair_law_by_sum(a, y1, y2 - 1),
                     band[2] * _pair_law_by_sum(a, y1, y2)])
    total = float(cand.max(axis=0).sum())
    assert result.value["prediction"] == pytest.approx(total, abs=1e-8)
    worst = float((cand.max(axis=0) / cand.sum(axis=0))[cand.sum(axis=0) > 1e-12].max())
    assert result.value["individual"] == pytest.approx(worst, abs=1e-6)
    # the local-DP bound on one record's posterior: e^eps' likelihood ratio at the most likely band
    assert result.value["individual"] <= 0.5 / (0.5 + a * 0.5) + 1e-9

    model = privspec.load(SPEC).model
    release = model.releases["D" if name == "pd" else "P"]

    def law(z, j):
        zz = z.reshape(len(z), 2, 3)
        d, b = divmod(j, 3)
        shifted = zz[:, d, :] - np.eye(3, dtype=np.int64)[b]
        return _pair_law_by_sum(a, shifted[:, 0], shifted[:, 1]) * (zz[:, d, :].sum(axis=1) == 1)

    acc, se = _adversary_accuracy(model, release, law, 40_000, seed=7)
    assert abs(acc - result.value["prediction"]) < 4 * se, (acc, se, result.value)


def test_the_paper_calibration_leaks_less_and_two_cells_is_binary():
    answers = _answers()
    assert answers["pp"].value["prediction"] < answers["pd"].value["prediction"]
    # two protected cells: one pair's draw b; the guess follows z_1 >= 1, right with 1 / (1 + a)
    a = math.exp(-1.0)
    g = guessing.algorithm1(a, np.array([[0.5, 0.5]]))
    assert g.prediction == pytest.approx(1 / (1 + a), abs=1e-10)
    assert g.individual == pytest.approx(1 / (1 + a), abs=1e-8)


def test_release_leakage_errors():
    with pytest.raises(SpecError, match="E501"):
        privspec.load(SPEC + "query bad = leakage(D, size)\n").raise_for_errors()
    no_pop = SPEC.replace("population band ~ categorical(0.5, 0.3, 0.2)\n", "")
    failed = privspec.load(no_pop).analyze(["pd"]).failures["pd"].diagnostics[0]
    assert failed.code == "B602" and "the leakage of release D" in failed.message
    many = """
variable band: categorical {a, b, c, d, e, f, g, h}
variable degree: categorical {x, y}
population band ~ categorical(1/8, 1/8, 1/8, 1/8, 1/8, 1/8, 1/8, 1/8)
population degree ~ categorical(1/2, 1/2)
release D = counts(degree, band) with geometric(epsilon = 0.5) protect {band} exact totals(degree)
query p = leakage(D)
"""
    failed = privspec.load(many).analyze(["p"]).failures["p"].diagnostics[0]
    assert failed.code == "B604" and "8 protected cells" in failed.message
