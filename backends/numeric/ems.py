"""The distribution of a value from square-wave reports: expectation-maximization with
smoothing (EMS; Li et al., "Estimating numerical distributions under local differential
privacy", SIGMOD 2020, Section 5).

The value's domain ``[0, 1]`` is cut into ``d`` equal buckets and the reports' range
``[-b, 1 + b]`` into ``d`` equal buckets; ``M[j, i]`` is the chance that a value drawn
uniformly in input bucket ``i`` gives a report in output bucket ``j`` (the square wave's
density ``p`` within ``b`` of the value and ``q`` elsewhere, integrated exactly over the
output bucket and averaged over the input bucket by a midpoint rule of
:data:`SUBPOINTS` points).  Each EM step ``x_i <- x_i sum_j M[j, i] n_j / (N (M x)_j)`` is
followed by the binomial smoothing ``(x_{i-1} + 2 x_i + x_{i+1})/4`` (ends: the edge bucket
counted twice), and the iteration stops when the log-likelihood per report changes by
less than ``tol`` (or after ``max_iter`` steps).

Examples
--------
>>> import numpy as np
>>> from privspec.backends.numeric.mechanisms import SquareWave
>>> sw = SquareWave(2.0)
>>> reports = sw.sample(np.random.default_rng(0).beta(2, 5, 50_000), np.random.default_rng(1))
>>> fit = ems(sw, reports, buckets=16)
>>> round(float(fit.probabilities.sum()), 12), abs(fit.mean - 2 / 7) < 0.02
(1.0, True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privspec.backends.numeric.mechanisms import SquareWave

#: midpoints per input bucket averaging the transition probabilities
SUBPOINTS = 64


@dataclass(frozen=True)
class EmsFit:
    """The estimated distribution on ``[0, 1]``: bucket ``edges`` (``d + 1``), their
    ``probabilities``, the number of EM steps and whether the tolerance was met."""

    edges: np.ndarray
    probabilities: np.ndarray
    iterations: int
    converged: bool

    @property
    def mean(self) -> float:
        """The mean of the histogram (each bucket's mass at its centre)."""
        return float(np.dot((self.edges[:-1] + self.edges[1:]) / 2, self.probabilities))


def transition(sw: SquareWave, buckets: int) -> np.ndarray:
    """``M[j, i]``: Pr(report in output bucket j | value uniform in input bucket i)."""
    b, p, q = sw.b, sw.p, sw.q
    out = np.linspace(-b, 1 + b, buckets + 1)
    # the values averaged over: SUBPOINTS midpoints of each input bucket
    v = (np.arange(buckets * SUBPOINTS) + 0.5) / (buckets * SUBPOINTS)
    lo, hi = out[:-1, None], out[1:, None]
    overlap = np.clip(np.minimum(hi, v + b) - np.maximum(lo, v - b), 0.0, None)
    probs = q * (hi - lo) + (p - q) * overlap
    return probs.reshape(buckets, buckets, SUBPOINTS).mean(axis=2)


def _smooth(x: np.ndarray) -> np.ndarray:
    padded = np.concatenate(([x[0]], x, [x[-1]]))
    y = (padded[:-2] + 2 * padded[1:-1] + padded[2:]) / 4
    return y / y.sum()


def ems(sw: SquareWave, reports: np.ndarray, buckets: int = 64, counts: np.ndarray | None = None,
        tol: float = 1e-9, max_iter: int = 10_000) -> EmsFit:
    """Li et al.'s EMS estimate of the distribution of the values behind square-wave
    ``reports`` (each with its ``counts``, default 1) on ``buckets`` equal buckets of ``[0, 1]``."""
    reports = np.asarray(reports, dtype=float)
    counts = np.ones(len(reports)) if counts is None else np.asarray(counts, dtype=float)
    M = transition(sw, buckets)
    index = np.clip(((reports + sw.b) / (1 + 2 * sw.b) * buckets).astype(int), 0, buckets - 1)
    n = np.bincount(index, weights=counts, minlength=buckets)
    total = n.sum()
    x = np.full(buckets, 1.0 / buckets)
    last = -np.inf
    for step in range(1, max_iter + 1):
        lam = M @ x
        x = _smooth(x * (M.T @ (n / np.maximum(lam, 1e-300))) / total)
        loglik = float(np.dot(n, np.log(np.maximum(M @ x, 1e-300)))) / total
        if abs(loglik - last) < tol:
            return EmsFit(np.linspace(0.0, 1.0, buckets + 1), x, step, True)
        last = loglik
    return EmsFit(np.linspace(0.0, 1.0, buckets + 1), x, max_iter, False)
