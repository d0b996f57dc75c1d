"""Normal quantiles for intervals and coverage checks: from :mod:`scipy.stats`, written
once, never typed in.

Examples
--------
>>> round(Z95, 6), round(z_quantile(0.9), 6)
(1.959964, 1.644854)
"""
from __future__ import annotations

from scipy import stats


def z_quantile(level: float = 0.95) -> float:
    """The two-sided normal quantile ``z`` with ``P(|Z| <= z) = level``."""
    return float(stats.norm.ppf(0.5 + level / 2))


#: the two-sided 95% normal quantile (1.959963984540054)
Z95 = z_quantile(0.95)
