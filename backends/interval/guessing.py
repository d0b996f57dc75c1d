"""The adversary's best guess of a respondent's value from one interval report, within a tolerance.

For a continuous variable a guess is never exactly right, so the compare block declares a
tolerance ``t`` (``tolerance = T``): an adversary who knows the design and the population
sees the report and guesses a point ``x``, and is right when ``|X - x| <= t``.  Its chance
of being right (prediction, the subset-privacy paper's Def. 7 on this scale) is

    R = E_report[ max_x P(|X - x| <= t | report) ].

The anchors are independent of ``X``, so given the anchors the report is the range of
their partition that holds ``X``, and the posterior is the population truncated to it: a
range ``(l, r]`` adds ``M(l, r) = max_c P(X in (l, r], |X - c| <= t)``, its whole mass when
it is no wider than ``2t``, else the best window inside it.  The populations here
(uniform, normal, logistic, exponential) are log-concave, so ``h(c) = F(c + t) - F(c - t)``
is unimodal and the best window in a range is the population's best window ``c*``
clipped to ``[l + t, r - t]`` (:func:`best_window`).

With ``k`` iid anchors of CDF ``G`` (Case I: 1; Case II: 2; ``canonical(m)``: m - 1) the
expectation over the anchors is one- and two-dimensional whatever ``k``: the first range
``(-inf, T(1)]`` has ``T(1)`` of density ``k g (1 - G)^(k-1)``, the last ``k g G^(k-1)``, and
the inner ranges together the pair density ``k (k-1) g(u) g(v) (1 - G(v) + G(u))^(k-2)``,
``u < v``.  The end ranges are integrated by scipy ``quad`` over the anchor's quantile
(cut where the clipping changes), the inner ones by Gauss-Legendre on the anchors'
quantile square (:func:`~privspec.backends.interval.coverage.pair_integral`).

The worst report (``individual``) of a design with two anchors or more is a range no
wider than ``2t``: the guess is then certainly right (1); Case I's is the largest over a
grid of anchor quantiles.

Examples
--------
>>> from scipy import stats
>>> round(prediction_of(stats.norm(), stats.norm(), 1, 0.5).value, 4)      # Case I, Y and U ~ N(0, 1)
0.5699
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.backends.interval.coverage import pair_integral

__all__ = ["Guess", "best_window", "window_mass", "prediction_of"]

#: anchor quantiles where Case I's worst report is looked for
WORST_GRID = 4001


@dataclass(frozen=True)
class Guess:
    """Prediction within the tolerance, the worst report's posterior, and how they were computed."""

    value: float
    individual: float
    evaluation: str


def best_window(population, t: float) -> float:
    """``c*``, the centre of the window ``[c - t, c + t]`` of the largest population mass
    (``population`` a frozen scipy law, log-concave: the mass is unimodal in ``c``)."""
    lo, hi = population.ppf(1e-12) - t, population.ppf(1 - 1e-12) + t
    res = scipy.optimize.minimize_scalar(lambda c: -(population.cdf(c + t) - population.cdf(c - t)), bounds=(lo, hi),
                                   method="bounded", options={"xatol": 1e-10 * max(1.0, hi - lo)})
    return float(res.x)


def window_mass(population, centre: float, t: float, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``M(l, r)``: the largest mass of a window of half-width ``t`` inside each range ``(l, r]``."""
    left, right = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
    F = population.cdf
    c = np.clip(centre, left + t, right - t)
    return np.where(right - left <= 2 * t, F(right) - F(left), F(c + t) - F(c - t))


def prediction_of(population, anchor, k: int, t: float) -> Guess:
    """Prediction of a partition by ``k`` iid anchors of law ``anchor`` (frozen scipy laws)."""
    centre = best_window(population, t)
    kinks = sorted({float(s) for s in anchor.cdf(np.array([centre - t, centre + t])) if 0 < s < 1})

    def ends(s: float) -> float:
        u = float(anchor.ppf(s))
        return (k * (1 - s) ** (k - 1) * float(window_mass(population, centre, t, -np.inf, u))
                + k * s ** (k - 1) * float(window_mass(population, centre, t, u, np.inf)))

    value = scipy.integrate.quad(ends, 0.0, 1.0, points=kinks or None, epsabs=1e-12, epsrel=1e-10, limit=400)[0]
    how = "quadrature over the anchor's quantile (scipy quad)"
    if k >= 2:
        G = anchor.cdf

        def inner(y: np.ndarray, yp: np.ndarray) -> np.ndarray:
            u, v = np.minimum(y, yp), np.maximum(y, yp)
            share = (1 - (G(v) - G(u))) ** (k - 2)
            return k * (k - 1) / 2 * share * window_mass(population, centre, t, u, v)

        value += pair_integral(anchor, inner, breaks=(centre - t, centre + t), nodes=32)
        how += " for the end ranges, Gauss-Legendre on the anchors' quantile square for the inner ones"
        return Guess(float(value), 1.0, how + "; individual: a range no wider than 2 t pins the value down")
    s = np.concatenate([np.geomspace(1e-12, 0.5, WORST_GRID // 2), 1 - np.geomspace(1e-12, 0.5, WORST_GRID // 2)])
    u = anchor.ppf(s)
    F = population.cdf(u)
    with np.errstate(divide="ignore", invalid="ignore"):
        below = window_mass(population, centre, t, np.full_like(u, -np.inf), u) / F
        above = window_mass(population, centre, t, u, np.full_like(u, np.inf)) / (1 - F)
    worst = float(np.nanmax(np.concatenate([below[F > 0], above[F < 1]])))
    return Guess(float(value), min(worst, 1.0),
                 how + f"; individual: the largest over {WORST_GRID - 1} anchor quantiles")
