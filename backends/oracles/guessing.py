"""The adversary's best guess of one respondent's category from one oracle report.

An adversary who knows the protocol and the population ``w`` sees one report ``o`` and
guesses the category with the largest posterior.  Its chance of being right is the
Bayes vulnerability, the subset-privacy paper's prediction leakage (Def. 7),

    R = sum_o max_x w_x Pr(o | x),

and the worst case for one respondent (``individual``) is the largest posterior any
report can give, ``max_o max_x w_x Pr(o | x) / Pr(o)``.

Every pure protocol has ``Pr(o | x) = c(o) a`` when ``x`` is in the report's support
``S(o)`` and ``c(o) b`` when it is not (``b / a = e^-eps``).  Given a report, the best
guess is the most likely category inside the support (weight ``a``) or, against it, the
most likely one outside (weight ``b``).  With the categories sorted most likely first
(``w_1 >= w_2 >= ...``), a report whose first supported category is the ``j``-th has
``max_x w_x Pr(o | x) = max(w_j, (b/a) w_1) Pr(o | j)``, so

    R = sum_j max(w_j, (b/a) w_1) Pr(the first supported is j | X = j) + w_1 Pr(S empty | X = 1).

Where the support's law is the same for every order of the categories (unary encoding:
independent bits; subset selection: a uniform k-subset), those probabilities are closed
forms and ``R`` is exact without enumerating the ``2^d`` or ``C(d, k)`` reports
(:func:`unary`, :func:`subset_selection`); reports that are one code of a small range
(GRR, Hadamard response) are enumerated (:func:`by_channel`); local hashing's supports
depend on its hash family, whose joint law over more than three categories has no closed
form here: ``R`` is a Monte Carlo average over seeds drawn as the sampler draws them, with
the sum over the hashed value exact given each seed (:func:`hashed`), and its standard
error stated.

Examples
--------
>>> import numpy as np
>>> w = np.array([0.009551, 0.031909, 0.095943, 0.008323, 0.854274])   # Adult's race shares
>>> p, q = 0.5, 1 / (np.exp(4) + 1)                                    # OUE at epsilon = 4
>>> round(unary(p, q, w).prediction, 6)
0.901541
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

__all__ = ["Guessing", "GUESSES", "by_channel", "unary", "subset_selection", "hashed", "HASH_SEEDS", "HASH_DRAW_SEED"]

#: what a leakage query asks of a best guess: its chance, the worst report's posterior
GUESSES = ("prediction", "individual")
#: hash seeds drawn for local hashing's Monte Carlo, and the seed of their draw (fixed: a
#: comparison gives the same number every run)
HASH_SEEDS = 1 << 15
HASH_DRAW_SEED = 20170816
#: (seeds x categories) hashed at once
_BLOCK = 1 << 21


@dataclass(frozen=True)
class Guessing:
    """The best guess from one report at a population: its chance of being right
    (``prediction``), the largest posterior of any report (``individual``), how they were
    computed (``evaluation``) and the Monte Carlo standard error of ``prediction`` (0: exact)."""

    prediction: float
    individual: float
    evaluation: str
    se: float = 0.0

    def by_metric(self, metrics: Sequence[str] = ()) -> dict[str, float]:
        """The value of a ``leakage`` query: each of ``metrics`` (default :data:`GUESSES`)."""
        return {m: self.prediction if m == "prediction" else self.individual for m in metrics or GUESSES}


def _sorted(w: np.ndarray) -> np.ndarray:
    w = np.asarray(w, dtype=float)
    return np.sort(w / w.sum())[::-1]


def _first_in_support(first: np.ndarray, empty: float, ratio: float, ws: np.ndarray) -> float:
    """``R`` from ``first[j]`` = Pr(the first supported of the sorted categories is the j-th |
    X = the j-th), ``empty`` = Pr(no category supported) and ``ratio = b/a``."""
    return float(np.sum(np.maximum(ws, ratio * ws[0]) * first) + ws[0] * empty)


def _posterior_alone(ratio: float, ws: np.ndarray) -> float:
    """The posterior of the most likely category given a report supporting it alone."""
    return float(ws[0] / (ws[0] + ratio * (1 - ws[0])))


def by_channel(K: np.ndarray, w: np.ndarray, what: str) -> Guessing:
    """Exact, from the channel ``K[o, x] = Pr(o | x)`` of every report (``what``: which)."""
    J = np.asarray(K, dtype=float) * (np.asarray(w, dtype=float) / np.sum(w))[None, :]
    lam = J.sum(axis=1)
    on = lam > 0
    top = J.max(axis=1)
    return Guessing(float(top.sum()), float((top[on] / lam[on]).max()),
                    f"exact: the {K.shape[0]} possible reports ({what}) enumerated")


def unary(p: float, q: float, w: np.ndarray) -> Guessing:
    """Exact, for d bits independent given the truth (its bit 1 with probability ``p``,
    every other ``q``): the first supported category is the j-th with probability
    ``p (1 - q)^(j-1)``."""
    ws = _sorted(w)
    d = len(ws)
    ratio = (1 - p) * q / (p * (1 - q))
    first = p * (1 - q) ** np.arange(d)
    return Guessing(_first_in_support(first, (1 - p) * (1 - q) ** (d - 1), ratio, ws), _posterior_alone(ratio, ws),
                    "exact: the 2^d bit vectors grouped by their first 1 among the categories sorted by w")


def subset_selection(p: float, k: int, w: np.ndarray) -> Guessing:
    """Exact, for a k-subset holding the truth with probability ``p`` and otherwise drawn
    uniformly: the first supported category is the j-th when the k-1 others avoid the j-1
    before it, ``p C(d-j, k-1) / C(d-1, k-1)``; the worst report is the most likely
    category's with the k-1 least likely others."""
    ws = _sorted(w)
    d = len(ws)
    ratio = (1 - p) * k / (p * (d - k))
    first = p * np.array([math.comb(d - 1 - j, k - 1) for j in range(d)], dtype=float) / math.comb(d - 1, k - 1)
    worst = 0.0
    for x in range(d):
        others = np.delete(ws, x)[::-1][:k - 1] if k > 1 else np.zeros(0)   # the k-1 least likely others
        W = ws[x] + others.sum()
        worst = max(worst, ws[x] / (W + ratio * (1 - W)))
    return Guessing(_first_in_support(first, 0.0, ratio, ws), float(worst),
                    "exact: the C(d, k) subsets grouped by their first member among the categories sorted by w")


def hashed(hash_of: Callable[[np.ndarray], np.ndarray], prime: int, g: int, p: float, w: np.ndarray,
           seeds: int = HASH_SEEDS, seed: int = HASH_DRAW_SEED) -> Guessing:
    """Local hashing: the report is ``(s, v)``, ``v`` the hashed value ``H_s(x)`` kept with
    probability ``p`` (else another of ``[g]``).  Given the seed ``s`` the buckets
    ``{u : H_s(u) = v}`` are known and the sum over ``v`` is exact: a bucket whose most
    likely member is the j-th adds ``max(p w_j, q w_1)``, an empty one ``q w_1``
    (``q = (1-p)/(g-1)``); it is averaged over ``seeds`` seeds drawn uniformly
    (``a, b, c`` on ``Z_prime``, as the sampler draws them; ``hash_of`` maps seeds to the
    (seeds x categories) hashed values).  The worst report supports the most likely
    category alone: its posterior is local DP's bound ``e^eps w_1 / (e^eps w_1 + 1 - w_1)``."""
    w = np.asarray(w, dtype=float)
    w = w / w.sum()
    order = np.argsort(-w, kind="stable")
    ws = w[order]
    d = len(ws)
    q = (1 - p) / (g - 1)
    rng = np.random.default_rng(seed)
    values = []
    block = max(1, _BLOCK // d)
    for lo in range(0, seeds, block):
        m = min(block, seeds - lo)
        abc = rng.integers(0, prime, size=(m, 3), dtype=np.int64)
        s = (abc[:, 0] + prime * (abc[:, 1] + prime * abc[:, 2])).astype(np.uint64)
        h = hash_of(s)[:, order]
        idx = np.argsort(h, axis=1, kind="stable")        # sorted categories grouped by bucket, in order
        hv = np.take_along_axis(h, idx, axis=1)
        top = np.ones_like(hv, dtype=bool)
        top[:, 1:] = hv[:, 1:] != hv[:, :-1]                # the first (most likely) member of each bucket
        gain = np.where(top, np.maximum(p * ws[idx], q * ws[0]), 0.0).sum(axis=1)
        values.append(gain + (g - top.sum(axis=1)) * q * ws[0])
    v = np.concatenate(values)
    se = float(v.std(ddof=1) / math.sqrt(len(v)))
    ratio = q / p
    return Guessing(float(v.mean()), _posterior_alone(ratio, ws),
                    f"Monte Carlo over {seeds} hash seeds (seed {seed}), exact over the hashed value given each: "
                    f"standard error {se:.2g}; individual: the report supporting the most likely category alone",
                    se)
