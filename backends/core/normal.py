"""Normal quantiles for intervals and coverage checks: from :func:`scipy.special.ndtri` (the
function ``scipy.stats.norm.ppf`` calls, bit for bit, without the 0.4-0.9 s that importing
:mod:`scipy.stats` costs at start-up), written once, never typed in.

Examples
--------
>>> round(Z95, 6), round(z_quantile(0.9), 6)
(1.959964, 1.644854)
>>> Z95 == float(scipy.special.ndtri(0.975)) == z_quantile(0.95)
True
"""
from __future__ import annotations

import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)


def z_quantile(level: float = 0.95) -> float:
    """The two-sided normal quantile ``z`` with ``P(|Z| <= z) = level``."""
    if level == 0.95:  # start-up: scipy.special costs 0.2-0.35 s; Z95 is its value to the last bit
        return Z95
    return float(scipy.special.ndtri(0.5 + level / 2))


#: the two-sided 95% normal quantile, ``z_quantile(0.95)`` to the last bit (the example above
#: checks it): written out so that importing this module does not load scipy.special
#: (start-up: 0.2-0.35 s, which an analysis without intervals never needs)
Z95 = 1.959963984540054
