"""Error metrics of a joint estimate (section III-G of the castell paper), and Cramer's V
of a two-way table (section II-B3, what RR-Clusters links attributes by)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

def mae(truth: np.ndarray, estimate: np.ndarray) -> float:
    """Mean absolute error over the cells: ``1/|Omega| sum_x |Pi(x) - Pi_hat(x)|``
    (section III-G writes it for two attributes, ``1/d^2 sum``).

    Examples
    --------
    >>> round(mae(np.array([[0.4, 0.0], [0.2, 0.4]]), np.array([[0.45, -0.15], [0.25, 0.45]])), 12)
    0.075
    """
    return float(np.mean(np.abs(np.asarray(truth, float) - np.asarray(estimate, float))))


def avd(truth: np.ndarray | Sequence[np.ndarray], estimate: np.ndarray | Sequence[np.ndarray]) -> float:
    """Average variation distance as the paper defines it: the largest cell error
    ``sup_c |Pi^c - Pi_hat^c|`` of each w-way table, averaged over the tables (the
    attribute subsets C) given.

    The paper's footnote calls it equivalent to Ren et al.'s average variant distance
    (half the L1 distance); its own definition and the numbers of Appendix B (AVD 0.29,
    0.15, 0.1) are the sup distance, which is what this computes.

    Examples
    --------
    >>> truth = np.array([[0.4, 0.0], [0.2, 0.4]])
    >>> avd(truth, np.array([[0.21, 0.09], [0.49, 0.21]]))
    0.29
    >>> avd([truth, truth], [np.array([[0.45, -0.15], [0.25, 0.45]]), np.array([[0.3, 0.0], [0.25, 0.3]])])
    0.125
    """
    if isinstance(truth, np.ndarray) and isinstance(estimate, np.ndarray):
        truth, estimate = [truth], [estimate]
    errors = [float(np.max(np.abs(np.asarray(t, float) - np.asarray(e, float)))) for t, e in zip(truth, estimate)]
    return round(float(np.mean(errors)), 15)


def mse(truth: np.ndarray, estimate: np.ndarray) -> float:
    """Mean squared error over the cells (Appendix B: 0.041 for RR-Independent, 0.0075
    for castell)."""
    return float(np.mean((np.asarray(truth, float) - np.asarray(estimate, float)) ** 2))


def cramers_v(table: np.ndarray) -> float:
    """Cramer's V of a two-way table of counts or probabilities (section II-B3):
    ``sqrt(chi^2 / n / min(d_i - 1, d_j - 1))``.

    Examples
    --------
    >>> round(cramers_v(np.array([[4, 0], [2, 4]])), 2), cramers_v(np.array([[3, 1], [3, 3]]))
    (0.67, 0.25)
    """
    t = np.asarray(table, dtype=float)
    n = t.sum()
    if n <= 0 or min(t.shape) < 2:
        return 0.0
    p = t / n
    e = np.outer(p.sum(axis=1), p.sum(axis=0))
    ok = e > 0
    chi2_n = float(np.sum((p[ok] - e[ok]) ** 2 / e[ok]))
    return float(np.sqrt(chi2_n / (min(t.shape) - 1)))
