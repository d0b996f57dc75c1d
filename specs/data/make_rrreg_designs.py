"""Regenerate specs/data/rrreg_designs.csv: 2,000 simulated respondents (seeded), their
true answers drawn from the logistic model below and privatized by the mechanisms of
specs/rrreg_designs.privspec; the file holds the reports and the raw covariate age.

    python specs/data/make_rrreg_designs.py

True model: log odds of drug = yes: -1 + 0.1 (age - 30).
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
    reports.to_csv(HERE / "rrreg_designs.csv", index=False)
