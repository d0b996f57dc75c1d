"""The adversary's best guess of one record's cell from a released count table.

The adversary of differential privacy knows every other record, the release's noise
and the population ``w`` of the table's cells; subtracting the other records' counts
from the released table leaves ``Z = e_j + noise``, where ``j`` is the target's cell.
It guesses the cell with the largest posterior; its chance of being right is the
Bayes vulnerability, the subset-privacy paper's prediction leakage (Def. 7) on the
scale every other family is compared on,

    R = sum_z max_j w_j Pr(Z = z | j),

and ``individual`` is the largest posterior any ``z`` gives.

* **The geometric mechanism** (no exact totals) adds independent two-sided geometric
  noise with ratio ``a`` to every cell.  ``Pr(z - e_j) / Pr(z) = a^(|z_j - 1| - |z_j|)``
  is ``1/a`` when ``z_j >= 1`` and ``a`` otherwise, so the posterior depends on ``z``
  only through the bits ``B_c = [z_c >= 1]``: the target's bit is 1 with probability
  ``Pr(noise >= 0) = 1/(1 + a)``, every other with ``Pr(noise >= 1) = a/(1 + a)``,
  independently.  That is unary encoding with ``p = 1/(1 + a)``, ``q = a/(1 + a)``
  (symmetric unary encoding at the same epsilon: ``p/q = 1/a``), whose ``R`` is exact
  (:func:`privspec.backends.oracles.guessing.unary`).
* **Algorithm 1** (exact totals) releases every total cell's count exactly, so the
  adversary learns the target's total cell ``i``; within it the noise is
  ``y = M b`` (one two-sided geometric ``b`` per pair of protected cells, +1 in one and
  -1 in the other), whose law has no product form.  Its probabilities are computed
  exactly up to a stated truncation by the inverse FFT of its characteristic function
  ``prod_{j<k} psi(t_j - t_k)``, ``psi(s) = (1 - a)^2 / (1 - 2a cos s + a^2)``, on the
  torus of ``n - 1`` coordinates (the last is minus their sum); the grid doubles until
  the mass it leaves out is below :data:`TAIL`.  ``R`` is ``sum_i W_i R_i``, ``R_i`` the
  vulnerability of the protected cells at ``w(. | i)``.

Examples
--------
>>> import numpy as np
>>> w = np.array([[0.5, 0.3, 0.2]])
>>> round(geometric(np.exp(-0.5), w).prediction, 6)        # eps = 1: a = e^(-1/2), one row
0.548842
>>> g = algorithm1(np.exp(-1.0), np.array([[0.5, 0.5]]))   # two cells: one pair's draw b
>>> round(g.prediction, 6), round(float(1 / (1 + np.exp(-1.0))), 6)
(0.731059, 0.731059)
"""
from __future__ import annotations

import math

import numpy as np

from privspec.backends.oracles.guessing import Guessing, unary

__all__ = ["geometric", "algorithm1", "TooLarge", "TAIL", "GRID_LIMIT"]

#: the probability mass of Algorithm 1's noise that its FFT grid may leave out
TAIL = 1e-10
#: the least probability of a report whose posterior ``individual`` considers
SEEN = 1e-12
#: the most grid points (over the n - 1 free coordinates of a total cell) computed
GRID_LIMIT = 1 << 25


class TooLarge(ValueError):
    """Algorithm 1's noise law on this many protected cells needs more grid points than
    :data:`GRID_LIMIT`."""


def geometric(a: float, w: np.ndarray) -> Guessing:
    """The geometric mechanism with ratio ``a`` on every cell of a table whose cells have
    population ``w`` (any shape): unary encoding with ``p = 1/(1+a)``, ``q = a/(1+a)``."""
    g = unary(1 / (1 + a), a / (1 + a), np.ravel(w))
    return Guessing(g.prediction, g.individual,
                    "exact: the released counts minus the other records' are independent geometric draws, so the "
                    "posterior depends only on which cells are >= 1 (unary encoding with p = 1/(1+a), q = a/(1+a))")


def algorithm1(a: float, w: np.ndarray) -> Guessing:
    """Algorithm 1 with ratio ``a``: ``w`` is the population in the ``(m, n)`` layout
    (rows: total cells, released exactly; columns: protected cells)."""
    w = np.asarray(w, dtype=float)
    w = w / w.sum()
    n = w.shape[1]
    law, half = _pair_noise_law(a, n)
    prediction, individual = 0.0, 0.0
    for row in w:
        if row.sum() <= 0:
            continue
        r, worst = _within_row(law, half, row / row.sum())
        prediction += float(row.sum()) * r
        individual = max(individual, worst)
    shown = "one coordinate" if n == 2 else f"{n - 1} coordinates"
    return Guessing(prediction, individual,
                    f"exact up to {TAIL:g} of noise mass: the law of Algorithm 1's noise on {n} protected cells by the "
                    f"inverse FFT of its characteristic function ({shown}, {law.shape[0]} points each); the exact "
                    "totals reveal the target's total cell")


def _pair_noise_law(a: float, n: int) -> tuple[np.ndarray, int]:
    """``Pr(y)`` for ``y = M b`` on ``n`` cells, indexed by its first ``n - 1`` coordinates
    modulo ``L`` (negative ones wrap), and the half-width ``h`` within which every value
    is exact to :data:`TAIL`: ``L`` is chosen so that the mass of ``|y_c| >= h`` (which
    the FFT folds back onto the grid), bounded by ``n - 1`` times one coordinate's, is
    below :data:`TAIL`."""
    if n == 1:
        return np.ones(()), 0
    h = _half_width(a, n)
    L = 2 * h + 2
    if L ** (n - 1) > GRID_LIMIT:
        raise TooLarge(f"the law of Algorithm 1's noise on {n} protected cells at epsilon = {-math.log(a):.3g} "
                       f"needs {L}^{n - 1} grid points (more than {GRID_LIMIT:,})")
    t = 2 * np.pi * np.fft.fftfreq(L)
    grids = np.meshgrid(*([t] * (n - 1)), indexing="ij", sparse=True)
    coords = list(grids) + [np.zeros((1,) * (n - 1))]       # t_n = 0: y_n is minus the others' sum
    phi = np.ones((L,) * (n - 1))
    for j in range(n):
        for k in range(j + 1, n):
            phi = phi * ((1 - a) ** 2 / (1 - 2 * a * np.cos(coords[j] - coords[k]) + a * a))
    # ifftn gives Pr(-y), which is Pr(y): the noise is symmetric (b and -b have one law)
    return np.clip(np.real(np.fft.ifftn(phi)), 0.0, None), h


def _half_width(a: float, n: int) -> int:
    """The least ``h`` with ``(n - 1) Pr(|y_1| >= h) < TAIL``: ``y_1`` is the sum of ``n - 1``
    independent two-sided geometric draws, whose law a 1-D FFT gives on a wide grid."""
    wide = 64
    while True:
        t = 2 * np.pi * np.fft.fftfreq(wide)
        law = np.real(np.fft.ifft(((1 - a) ** 2 / (1 - 2 * a * np.cos(t) + a * a)) ** (n - 1)))
        y = np.abs(((np.arange(wide) + wide // 2) % wide) - wide // 2)
        tail = np.array([law[y >= h].sum() for h in range(wide // 2)])
        ok = np.nonzero((n - 1) * tail < TAIL)[0]
        if len(ok) and ok[0] < wide // 4:
            return int(ok[0])
        wide *= 2


def _inner(shape: tuple[int, ...], half: int) -> np.ndarray:
    """The grid points whose every coordinate has ``|y_c| < half`` (indices wrap: ``L - 1``
    is -1)."""
    L = shape[0]
    small = np.abs(((np.arange(L) + L // 2) % L) - L // 2) < half
    mask = np.ones(shape, dtype=bool)
    for axis in range(len(shape)):
        mask &= small.reshape([-1 if i == axis else 1 for i in range(len(shape))])
    return mask


def _within_row(law: np.ndarray, half: int, w: np.ndarray) -> tuple[float, float]:
    """``R_i`` and the largest posterior within one total cell: ``Pr(z | j) = law(z - e_j)``,
    with ``e_n`` the zero vector on the free coordinates (z's own sum is 1)."""
    n = len(w)
    if n == 1:
        return 1.0, 1.0
    top = np.zeros(law.shape)
    total = np.zeros(law.shape)
    for j in range(n):
        shifted = np.roll(law, 1, axis=j) if j < n - 1 else law
        top = np.maximum(top, w[j] * shifted)
        total += w[j] * shifted
    # the largest posterior over the reports the truncation keeps exact (one unit inside, for the
    # shift) and whose probability is above the FFT's rounding (posteriors of rarer ones are noise)
    seen = _inner(law.shape, half - 1) & (total > SEEN)
    worst = float(np.max(np.where(seen, top / np.where(seen, total, 1.0), 0.0)))
    return float(top.sum()), worst

