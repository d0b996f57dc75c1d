"""What a report says about Y: its coverage and the pieces of the line it allows.

Reports follow :mod:`.mechanisms`' one convention (``(l, r]``, a point ``l == r``, a ring
range ``l > r``, NaN for nothing collected).  :func:`range_coverage` is the individual
coverage L(S_z) of Implication 3, :func:`likelihood_pieces` the set of values a report
allows as pieces ``(l, r]`` (the support cut, the acceptable range taken out), which the
likelihood of every estimator reads.
"""
from __future__ import annotations

import numpy as np

from privspec.backends.interval.laws import nearest_double


def range_coverage(left: np.ndarray, right: np.ndarray, cdf,
                   disclose: tuple | None = None) -> np.ndarray:
    """Individual coverage L(S_z) = P(Y in S_z) of reports (Implication 3).

    S_z is the reported range less the acceptable range A (proof of Theorem 3); a
    disclosed point has coverage 0; NaN (not collected) stays NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> cov = range_coverage(np.array([-np.inf, 0.0, 1.0, 1.0]), np.array([0.0, np.inf, 1.0, -1.0]),
    ...                      stats.norm.cdf)
    >>> [round(float(c), 4) for c in cov]
    [0.5, 0.5, 0.0, 0.3173]
    """
    left, right = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
    fl, fr = cdf(left), cdf(right)
    interval = np.where(left < right, fr - fl, 0.0)
    ring = left > right
    cov = np.where(ring, 1.0 - (fl - fr), interval)
    if disclose is not None:
        a, b = nearest_double(disclose[0]), nearest_double(disclose[1])
        fa, fb = cdf(a), cdf(b)
        # mass of A inside the range: (l, r] meets [a, b]
        inner = np.clip(np.minimum(fr, fb) - np.maximum(fl, fa), 0.0, None)
        ring_inner = np.clip(np.minimum(fr, fb) - fa, 0.0, None) + np.clip(fb - np.maximum(fl, fa), 0.0, None)
        cov = cov - np.where(ring, ring_inner, np.where(left < right, inner, 0.0))
    cov = np.where(np.isnan(left), np.nan, cov)
    return np.clip(cov, 0.0, 1.0)


def likelihood_pieces(left: np.ndarray, right: np.ndarray, support: tuple[float, float],
                      disclose: tuple | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pieces ``(l, r]`` (or points) whose union is the set of values a report allows.

    The reported range is cut to the variable's support and, when the mechanism has
    an acceptable range A, A is taken out (a value in A would have been disclosed:
    proof of Theorem 3).  Returns ``(piece_left, piece_right, owner)`` with ``owner``
    the index of the report each piece belongs to; a report whose set is empty has
    no piece (the caller reports it).

    Examples
    --------
    >>> import numpy as np
    >>> pl, pr, owner = likelihood_pieces(np.array([-np.inf, 30.0, 5.0]), np.array([100.0, np.inf, 5.0]),
    ...                                   (0.0, 150.0), (0, 20))
    >>> pl.tolist(), pr.tolist(), owner.tolist()
    ([20.0, 30.0, 5.0], [100.0, 150.0, 5.0], [0, 1, 2])
    """
    left, right = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
    lo, hi = support
    idx = np.arange(len(left))
    ring = left > right
    point = left == right
    # a ring range is two pieces, (-inf, r] and (l, inf]
    pl = np.concatenate([np.where(ring, -np.inf, left), left[ring]])
    pr = np.concatenate([right, np.full(int(ring.sum()), np.inf)])
    owner = np.concatenate([idx, idx[ring]])
    is_point = np.concatenate([point, np.zeros(int(ring.sum()), dtype=bool)])
    # points are where they are; intervals are cut to the support [lo, hi]
    pl = np.where(is_point, pl, np.maximum(pl, lo))
    pr = np.where(is_point, pr, np.minimum(pr, hi))
    if disclose is not None:
        a, b = nearest_double(disclose[0]), nearest_double(disclose[1])
        # (l, r] \ [a, b] = (l, min(r, a)) U (max(l, b), r]; the open end at a has
        # probability zero for a continuous Y, so it is written (l, a]
        first_l, first_r = pl, np.minimum(pr, a)
        second_l, second_r = np.maximum(pl, b), pr
        keep1 = is_point | (first_l < first_r)
        keep2 = ~is_point & (second_l < second_r) & (pr > b)
        pl = np.concatenate([np.where(is_point, pl, first_l)[keep1], second_l[keep2]])
        pr = np.concatenate([np.where(is_point, pr, first_r)[keep1], second_r[keep2]])
        owner = np.concatenate([owner[keep1], owner[keep2]])
        is_point = np.concatenate([is_point[keep1], np.zeros(int(keep2.sum()), dtype=bool)])
    keep = is_point | (pl < pr)
    order = np.lexsort((pl[keep], owner[keep]))
    return pl[keep][order], pr[keep][order], owner[keep][order]
