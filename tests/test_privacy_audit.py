"""Empirical privacy audit of every sampler (issue 13, "privacy accounting that is tight").

For each sampler, two neighbouring inputs are privatized ``N = 10^6`` times each (one
seeded generator, all draws vectorized).  An event ``S`` is fixed *before* the draws
that are counted (analytically, from the exact law: choosing it from the same draws
would bias the bound upward), and

    eps_lower = log( p1_lower / p2_upper )

is a 95% lower confidence bound on the privacy loss: ``p1_lower`` is the one-sided
97.5% Clopper-Pearson lower bound on ``P(S)`` under the first input, ``p2_upper`` the
97.5% upper bound under its neighbour (Bonferroni: both hold with probability >=
95%, and then ``log(P1/P2) >= eps_lower``).

Every audit asserts ``eps_lower <= loss`` (a sampler that leaks more than its loss
fails; a correct one passes with probability >= 95% on a fresh seed, and these seeds
are fixed), where ``loss`` is the exact privacy loss the back end *reports* (the
local-DP epsilon of a channel; a release's ``privacy_loss``).  Where the loss is
reached by an event of non-negligible probability, the audit also asserts
``eps_lower >= 0.95 loss``: the declared loss is really spent, so a sampler that
silently adds twice the noise (as Algorithm 1 did at its paper's calibration, which
this test caught: 0.49 at a declared 1) fails.

Measured here (these seeds; 95% lower bounds; "before": the code before the tight
calibration existed, whose Algorithm 1 had the paper's noise and claimed eps = 1):

=====================================  ===========  ===========  ======
sampler                                loss         lower bound  before
=====================================  ===========  ===========  ======
grr, 4 categories, eps = 1             1            0.993        0.993
rr, custom 3 x 3 matrix                log(18/5)    1.269        1.269
                                       = 1.281
product of three grr's (1 + 1/2 + 1)   5/2          2.474        2.474
geometric release (no exact totals)    1            0.991        0.991
Algorithm 1, n_i = 2, tight            1            0.996        0.495
Algorithm 1, n_i = 2, paper            1/2          0.496        --
Algorithm 1, n_i = 3, tight            1            0.964        0.468
Algorithm 1, n_i = 3, paper            1/2          0.470        --
=====================================  ===========  ===========  ======
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pytest
import sympy
from scipy import stats

import privspec
from privspec.backends.core.compile import channel_of
from privspec.backends.finite.data import factor_mechanisms, privatize_factor
from privspec.backends.releases.budget import release_privacy_loss
from privspec.backends.releases.noise import pmf
from privspec.backends.releases.backend import add_noise, variance_result

#: draws per input
N = 1_000_000
#: the audits' confidence: 1 - ALPHA, split evenly between the two one-sided bounds
ALPHA = 0.05
#: the share of the loss a tight sampler must show
TIGHT_SHARE = 0.95


def epsilon_lower_bound(k1: int, n1: int, k2: int, n2: int, alpha: float = ALPHA) -> float:
    """``log(p1_lower / p2_upper)`` from one-sided Clopper-Pearson bounds at ``alpha/2``
    each (Bonferroni), for ``k1`` of ``n1`` and ``k2`` of ``n2`` draws in the event.

    Examples
    --------
    >>> round(epsilon_lower_bound(731_000, 10**6, 269_000, 10**6), 3)
    0.995
    >>> epsilon_lower_bound(0, 10, 5, 10)
    -inf
    """
    lower = stats.beta.ppf(alpha / 2, k1, n1 - k1 + 1) if k1 > 0 else 0.0
    upper = stats.beta.ppf(1 - alpha / 2, k2 + 1, n2 - k2) if k2 < n2 else 1.0
    return math.log(lower / upper) if lower > 0 else -math.inf


# ---- local randomizers: grr, a custom matrix, a product (RR-Independent) -------------------------
MECHANISMS = """
variable color: categorical {black, red, green, blue}
variable gender: categorical {Female, Male}
variable income: categorical {Low, High}
variable race: categorical {"Amer-Indian-Eskimo", "Asian-Pac-Islander", Black, Other, White}
variable level: categorical {low, mid, high}
mechanism grr1 = grr(color, epsilon = 1)
mechanism custom = rr(level, matrix [[1/2, 1/4, 1/4], [1/6, 2/3, 1/6], [1/5, 1/5, 3/5]])
mechanism multi = product(grr(gender, epsilon = 1), grr(race, epsilon = 1/2), grr(income, epsilon = 1))
"""


@pytest.fixture(scope="module")
def mechanisms() -> privspec.model.graph.ModelGraph:
    return privspec.load(MECHANISMS).model


def worst_pair(K: np.ndarray) -> tuple[int, int, int]:
    """``(o, x1, x2)`` maximizing ``K[o, x1] / K[o, x2]``: the analytic test event
    ``{report = o}`` and the two inputs it separates best (its log is the local-DP
    epsilon of the channel)."""
    ratio = K[:, :, None] / K[:, None, :]
    o, x1, x2 = np.unravel_index(np.argmax(ratio), ratio.shape)
    return int(o), int(x1), int(x2)


@pytest.mark.parametrize("name, seed", [("grr1", 11), ("custom", 12), ("multi", 13)])
def test_local_randomizers_spend_exactly_their_epsilon(mechanisms, name: str, seed: int) -> None:
    mech = mechanisms.mechanisms[name]
    loss = channel_of(mech).epsilon()                    # exact; a product's epsilons add
    rng = np.random.default_rng(seed)
    # neighbours: one respondent's true value x1 or x2 (every factor's value differs
    # in a product); the event: every factor reports its o
    hit1 = np.ones(N, dtype=bool)
    hit2 = np.ones(N, dtype=bool)
    for factor in factor_mechanisms(mech):
        ch = channel_of(factor)
        o, x1, x2 = worst_pair(np.asarray(ch.Kn, dtype=float))
        label = ch.obs_labels[o]
        hit1 &= privatize_factor(factor, np.full(N, x1), rng) == label
        hit2 &= privatize_factor(factor, np.full(N, x2), rng) == label
    lower = epsilon_lower_bound(int(hit1.sum()), N, int(hit2.sum()), N)
    assert lower <= float(loss)
    assert lower >= TIGHT_SHARE * float(loss)


def test_product_loss_is_the_sum_of_its_factors(mechanisms) -> None:
    # RR-Independent: sequential composition (Proposition 3.4 in local form)
    assert channel_of(mechanisms.mechanisms["multi"]).epsilon() == sympy.Rational(5, 2)
    assert channel_of(mechanisms.mechanisms["custom"]).epsilon() == sympy.log(sympy.Rational(18, 5))


# ---- releases: the geometric mechanism and Algorithm 1 under both calibrations -------------------
RELEASES = """
variable degree: categorical {BA, BSc}
variable two: categorical {a, b}
variable three: categorical {a, b, c}
release G = counts(three) with geometric(epsilon = 1)
release T2 = counts(degree, two) with geometric(epsilon = 1) protect {two} exact totals(degree)
release P2 = counts(degree, two) with geometric(epsilon = 1, calibration = paper) protect {two} exact totals(degree)
release T3 = counts(degree, three) with geometric(epsilon = 1) protect {three} exact totals(degree)
release P3 = counts(degree, three) with geometric(epsilon = 1, calibration = paper) protect {three} exact totals(degree)
"""


@pytest.fixture(scope="module")
def releases() -> privspec.model.graph.ModelGraph:
    return privspec.load(RELEASES).model


def audit_release(model, name: str, f: np.ndarray, r: np.ndarray, event: Callable[[np.ndarray], np.ndarray],
                  seed: int) -> tuple[float, float]:
    """The 95% lower bound on the loss between one total cell's counts ``f`` and its
    neighbour ``f + r`` (one record moved), for the event ``event(g - f)`` on the
    released cells ``g``; and the loss the back end reports for the release.  Other
    total cells are unchanged and independent, so they cancel from every ratio."""
    release = model.releases[name]
    rng = np.random.default_rng(seed)
    g1 = add_noise(model, release, np.tile(f, (N, 1)), rng)          # the sampler privatize uses
    g2 = add_noise(model, release, np.tile(f + r, (N, 1)), rng)
    lower = epsilon_lower_bound(int(event(g1 - f).sum()), N, int(event(g2 - f).sum()), N)
    loss = release_privacy_loss(model, release)
    # every result of the release reports the same loss
    assert variance_result(model, release, [v.name for v in release.variables]).extras["privacy_loss"] == loss
    return lower, float(loss)


def test_geometric_release_spends_exactly_epsilon(releases) -> None:
    # no exact totals: a record moves from cell 1 to cell 0; the ratio is a^(-2) = e^eps
    # on {N_0 <= 0, N_1 >= 0} (docs/releases.md), an event of probability 0.39
    f, r = np.array([5, 3, 2]), np.array([1, -1, 0])
    lower, loss = audit_release(releases, "G", f, r, lambda n: (n[:, 0] <= 0) & (n[:, 1] >= 0), seed=21)
    assert loss == 1
    assert TIGHT_SHARE * loss <= lower <= loss


@pytest.mark.parametrize("name, expected, seed", [("T2", 1.0, 22), ("P2", 0.5, 23)])
def test_algorithm1_two_cells_spends_exactly_its_loss(releases, name: str, expected: float, seed: int) -> None:
    # n_i = 2: one draw b, g = f + (b, -b); the ratio is a^(-1) = e^loss exactly on
    # {N_0 <= 0}.  The tight calibration spends the declared 1; the paper's, 1/2: its
    # audit must stay below 1/2 (a sampler with the tight noise would show ~0.99)
    f, r = np.array([5, 3]), np.array([1, -1])
    lower, loss = audit_release(releases, name, f, r, lambda n: n[:, 0] <= 0, seed=seed)
    assert loss == expected
    assert TIGHT_SHARE * loss <= lower <= loss


def likelihood_ratio_event(eps: float, calibration: str, width: int = 60) -> np.ndarray:
    """The test event for n_i = 3, chosen from the exact law (no draws): the set of
    noise vectors ``(x1, x2, -x1 - x2)`` whose likelihood ratio ``q(x) / q(x - r)``
    (``r = e_1 - e_2``) is above the threshold that maximizes the approximate 95% lower
    bound at N draws.  ``q(x1, x2) = sum_t p(t) p(x1 - t) p(x2 + t)`` (the pairs' draws
    b12 = t, b13 = x1 - t, b23 = x2 + t); returned as a boolean grid over
    ``[-width, width]^2``."""
    t = np.arange(-2 * width, 2 * width + 1)
    x = np.arange(-width, width + 1)
    p = lambda z: pmf(z, eps, True, calibration)  # noqa: E731
    q = (p(x[:, None] - t[None, :]) * p(t)[None, :]) @ p(x[:, None] + t[None, :]).T
    shifted = np.zeros_like(q)
    shifted[1:, :-1] = q[:-1, 1:]                    # q(x1 - 1, x2 + 1)
    ratio = np.divide(q, shifted, out=np.zeros_like(q), where=shifted > 0)
    order = np.argsort(-ratio, axis=None)
    p1, p2 = np.cumsum(q.ravel()[order]), np.cumsum(shifted.ravel()[order])
    z = stats.norm.ppf(1 - ALPHA / 2)
    approx = np.log(np.maximum(p1 - z * np.sqrt(p1 / N), 1e-300) / (p2 + z * np.sqrt(p2 / N)))
    chosen = np.zeros(q.size, dtype=bool)
    chosen[order[:int(np.argmax(approx)) + 1]] = True
    return chosen.reshape(q.shape)


@pytest.mark.parametrize("name, calibration, expected, seed", [
    ("T3", "tight", 1.0, 24), ("P3", "paper", 0.5, 25)])
def test_algorithm1_three_cells_stays_within_its_loss(releases, name: str, calibration: str, expected: float,
                                                      seed: int) -> None:
    # n_i >= 3: the loss -log a is the supremum of the likelihood ratio, approached only
    # in the tail along e_2 - e_1 (other pairs can absorb the shift), never reached: so
    # only the upper assertion is a theorem.  The floor below (0.8 of the loss, far from
    # the measured 0.96) only guards against a sampler with the other calibration's
    # noise, which would show about half the loss.
    width = 60
    inside = likelihood_ratio_event(1.0, calibration, width)

    def event(n: np.ndarray) -> np.ndarray:
        i, j = n[:, 0] + width, n[:, 1] + width
        ok = (i >= 0) & (i <= 2 * width) & (j >= 0) & (j <= 2 * width)
        hit = np.zeros(len(n), dtype=bool)
        hit[ok] = inside[i[ok], j[ok]]
        return hit

    f, r = np.array([5, 3, 2]), np.array([1, -1, 0])
    lower, loss = audit_release(releases, name, f, r, event, seed=seed)
    assert loss == expected
    assert lower <= loss
    assert lower >= 0.8 * loss


def test_budget_charges_the_declared_epsilon_whatever_the_calibration(releases) -> None:
    # the declared epsilon is the guarantee: P2 is charged 1 on {two} while its exact
    # loss is 1/2, and budget(per release) says both
    from privspec.backends.releases.budget import budget_on, describe_release

    total, parts = budget_on(releases, {"two"}, releases=["T2", "P2"])
    assert parts == {"T2": 1, "P2": 1} and total == 2
    about = describe_release(releases, releases.releases["P2"])
    assert about["epsilon"] == 1 and about["privacy_loss"] == sympy.Rational(1, 2)
    assert about["calibration"] == "paper"
