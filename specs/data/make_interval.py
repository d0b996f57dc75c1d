"""Make the raw data of specs/interval_privacy.privspec (seeded).

Writes ``interval_raw.csv`` next to this script: 500 respondents with a salary in
[0, 150] (thousands; uniform, the declared population), a score ~ N(1/2, 1) (the
declared population), a GDP per head (thousands) and a life expectancy that grows
linearly with it, 58 + 0.55 gdp + N(0, 3^2) (a stand-in for the WHO data of section
IV-D, not those data).

    python specs/data/make_interval.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

N = 500
HERE = Path(__file__).resolve().parent


def main() -> None:
    rng = np.random.default_rng(20220)
    gdp = np.round(rng.gamma(2.0, 7.0, N), 2)
    life = 58 + 0.55 * gdp + rng.normal(0, 3, N)
    pd.DataFrame({
        "respondent": np.arange(1, N + 1),
        "salary": np.round(rng.uniform(0, 150, N), 2),
        "score": np.round(rng.normal(0.5, 1.0, N), 4),
        "life": np.round(life, 1),
        "gdp": gdp,
    }).to_csv(HERE / "interval_raw.csv", index=False)


if __name__ == "__main__":
    main()
