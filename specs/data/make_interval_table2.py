"""Make the data of specs/interval_table2.privspec (interval privacy, Table II, n = 100).

Writes, next to this script, one privatized data set per outlier share (0%, 1%, 5%):
``interval_table2_0pct.csv`` etc., column ``y`` holding Case-I reports
``(-inf, U]`` or ``(U, inf]`` with U ~ Uniform[-T, T], T = 2 * 100^(1/3), of
Y ~ N(0.5, 1) with the first share of the rows replaced by outliers Y = 999 (seeded).

    python specs/data/make_interval_table2.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from privspec.backends.interval.mechanisms import format_ranges

N = 100
T = 2 * N ** (1 / 3)
HERE = Path(__file__).resolve().parent


def main() -> None:
    for share in (0, 1, 5):
        rng = np.random.default_rng(2022 + share)
        y = rng.normal(0.5, 1.0, N)
        y[: N * share // 100] = 999.0
        u = rng.uniform(-T, T, N)
        below = y <= u
        left, right = np.where(below, -np.inf, u), np.where(below, u, np.inf)
        pd.DataFrame({"y": format_ranges(left, right)}).to_csv(HERE / f"interval_table2_{share}pct.csv", index=False)


if __name__ == "__main__":
    main()
