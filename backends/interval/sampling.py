"""Drawing the reports of interval mechanisms for true values (Definitions 2 and 5, Examples 3 and 4).

Each sampler returns reports in :mod:`.mechanisms`' one convention, NaN where nothing is
collected; the anchors are drawn by inversion of uniforms from the generator given (a
:class:`numpy.random.Generator` or a :class:`~privspec.backends.core.rowrandom.RowRandom`).
"""
from __future__ import annotations

import numpy as np

from privspec.model.graph import IntervalMechanism, ProgressiveMechanism, SelectiveMechanism
from privspec.backends.interval.laws import draw, nearest_double, support_of
from privspec.backends.interval.ranges import range_coverage


def _partition(y: np.ndarray, anchors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The canonical interval (U(k), U(k+1)] holding y, anchors sorted per row; and k."""
    anchors = np.sort(anchors, axis=1)
    n, q = anchors.shape
    k = (anchors < y[:, None]).sum(axis=1)  # y in (U(k), U(k+1)]: k anchors strictly below y
    padded = np.empty((n, q + 2))
    padded[:, 0], padded[:, -1], padded[:, 1:-1] = -np.inf, np.inf, anchors
    rows = np.arange(n)
    return padded[rows, k], padded[rows, k + 1], k


def sample_interval(mech: IntervalMechanism, y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Reports of an interval mechanism (Definition 2, Example 3) for true values ``y``.

    ``case1``/``case2``/``canonical(m)`` draw m - 1 iid anchors, sort them and report the
    interval (U(i-1), U(i)] holding y; ``ring(q)`` draws q anchors and reports
    (T(i-1), T(i)] or the ring range (-inf, T(1)] U (T(q), inf] (Example 3); values in
    the acceptable range ``disclose [a, b]`` are reported exactly.

    Examples
    --------
    >>> import numpy as np, sympy
    >>> from privspec.model.graph import Law, Variable
    >>> v = Variable("y", "continuous")
    >>> anchor = Law("uniform", (("a", sympy.Integer(-1)), ("b", sympy.Integer(1))))
    >>> m = IntervalMechanism("m", v, "case2", anchor, 3)
    >>> left, right = sample_interval(m, np.array([0.0, 0.5, -0.2]), np.random.default_rng(1))
    >>> bool(np.all((left < [0.0, 0.5, -0.2]) & ([0.0, 0.5, -0.2] <= right)))
    True
    """
    y = np.asarray(y, dtype=float)
    n = len(y)
    count = mech.m if mech.scheme == "ring" else mech.m - 1
    anchors = draw(mech.anchor, (n, count), rng)
    left, right, k = _partition(y, anchors)
    if mech.scheme == "ring":
        # the two end intervals are one range: (-inf, T(1)] U (T(q), inf], l > r
        ends = (k == 0) | (k == count)
        srt = np.sort(anchors, axis=1)
        left = np.where(ends, srt[:, -1], left)
        right = np.where(ends, srt[:, 0], right)
    if mech.disclose is not None:
        a, b = nearest_double(mech.disclose[0]), nearest_double(mech.disclose[1])
        inside = (y >= a) & (y <= b)
        left = np.where(inside, y, left)
        right = np.where(inside, y, right)
    return left, right


def sample_selective(mech: SelectiveMechanism, y: np.ndarray, rng: np.random.Generator,
                     cdf) -> tuple[np.ndarray, np.ndarray]:
    """Definition 5: the base report is collected if L(S_Z) >= tau and W ~ Bern(rho) is 1.

    ``cdf`` is the population CDF used for the coverage L (Way II of section III-D:
    the system knows, or has estimated, F_Y).  Not collected: NaN.
    """
    left, right = sample_interval(mech.base, y, rng)
    coverage = range_coverage(left, right, cdf, mech.base.disclose)
    w = rng.random(len(y)) < nearest_double(mech.rho)
    keep = w & (coverage >= nearest_double(mech.tau))
    return np.where(keep, left, np.nan), np.where(keep, right, np.nan)


def sample_progressive(mech: ProgressiveMechanism, y: np.ndarray, rng: np.random.Generator,
                       tau: np.ndarray | float | None = None, cdf=None) -> tuple[np.ndarray, np.ndarray]:
    """Example 4: up to ``rounds`` anchors, each uniform on the current range.

    Round h draws U(h) uniform on [lo, hi], the respondent says whether Y <= U(h), and
    the range shrinks to the side holding Y.  With a sensitivity ``tau`` (per respondent)
    and the population ``cdf``, an answer is given only while the new range keeps
    coverage L >= tau; otherwise the previous range is collected (``null`` when the
    first answer is refused).  Without ``tau`` every respondent answers every round.
    Reports are written (lo, hi]; a range still at the lower end of the support keeps
    -inf as its left end, as in Case I.
    """
    y = np.asarray(y, dtype=float)
    n = len(y)
    lo0, hi0 = support_of(mech.variable)
    lo, hi = np.full(n, lo0), np.full(n, hi0)
    answered = np.zeros(n, dtype=bool)
    active = np.ones(n, dtype=bool)
    for _ in range(mech.rounds):
        u = lo + (hi - lo) * rng.random(n)
        below = y <= u
        new_lo, new_hi = np.where(below, lo, u), np.where(below, u, hi)
        if tau is not None:
            cov = cdf(new_hi) - cdf(new_lo)
            active &= cov >= tau
        lo, hi = np.where(active, new_lo, lo), np.where(active, new_hi, hi)
        answered |= active
    left = np.where(lo == lo0, -np.inf, lo)
    right = np.where(hi == hi0, np.inf, hi)
    return np.where(answered, left, np.nan), np.where(answered, right, np.nan)
