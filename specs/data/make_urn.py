"""Regenerate specs/data/urn_raw.csv: 2,000 draws from the urn of Example 2 (seeded).

    python specs/data/make_urn.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

if __name__ == "__main__":
    rng = np.random.default_rng(2026)
    colors = rng.choice(["black", "red", "green", "blue"], size=2000, p=[0.01, 0.1, 0.2, 0.69])
    frame = pd.DataFrame({"respondent": np.arange(1, 2001), "color": colors})
    frame.to_csv(Path(__file__).with_name("urn_raw.csv"), index=False)
