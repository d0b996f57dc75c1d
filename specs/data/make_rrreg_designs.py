"""Regenerate specs/data/rrreg_designs.csv: 2,000 simulated respondents (seeded), their
true answers drawn from the logistic model below and privatized by the mechanisms of
specs/rrreg_designs.privspec; the file holds the reports, the raw covariate age and each
respondent's group of the cheating-detection model.

    python specs/data/make_rrreg_designs.py

True model: log odds of drug = yes: -1 + 0.1 (age - 30). Cheating detection: 20% honest
carriers, 70% honest non-carriers, 10% cheaters (who say no), half of them in each group.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import privspec

HERE = Path(__file__).parent

if __name__ == "__main__":
    rng = np.random.default_rng(37)
    n = 2000
    age = rng.integers(18, 60, size=n)
    eta = -1 + 0.1 * (age - 30)
    drug = np.where(rng.random(n) < 1 / (1 + np.exp(-eta)), "yes", "no")
    raw = pd.DataFrame({"age": age, "drug": drug})
    spec = privspec.load(HERE.parent / "rrreg_designs.privspec")
    reports = spec.privatize(raw, "cards", seed=1, keep=["age"])
    kind = rng.choice(["carrier", "honest", "cheater"], size=n, p=[0.2, 0.7, 0.1])
    group = np.where(rng.random(n) < 0.5, "first", "second")
    honest = spec.privatize(pd.DataFrame({"cheated": np.where(kind == "carrier", "yes", "no"), "group": group}),
                            "detect", seed=2)
    reports["cheated"] = np.where(kind == "cheater", "no", honest["cheated"])
    reports["group"] = group
    reports.to_csv(HERE / "rrreg_designs.csv", index=False)
