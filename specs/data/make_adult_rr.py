"""Regenerate specs/data/adult_rr_raw.csv: 5,000 synthetic respondents drawn from the
populations of specs/randomized_response.privspec (seeded).

(gender, income) follow the Adult census' Table III counts and race its race
distribution, independently of them, as the spec declares.  Synthetic: the Adult data
themselves are not bundled.

    python specs/data/make_adult_rr.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

if __name__ == "__main__":
    rng = np.random.default_rng(2027)
    n = 5000
    counts = np.array([[9592, 1179], [15128, 6662]], dtype=float)
    cells = rng.choice(4, size=n, p=(counts / counts.sum()).ravel())
    gender = np.array(["Female", "Male"])[cells // 2]
    income = np.array(["Low", "High"])[cells % 2]
    race_p = np.array([0.009551, 0.031909, 0.095943, 0.008323, 0.854274])
    race = rng.choice(["Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White"], size=n,
                      p=race_p / race_p.sum())
    frame = pd.DataFrame({"respondent": np.arange(1, n + 1), "gender": gender, "race": race, "income": income})
    frame.to_csv(Path(__file__).with_name("adult_rr_raw.csv"), index=False)
