"""Regenerate specs/data/rr_regression.csv: 2,000 simulated students (seeded), their true
answers drawn from the logistic models below and privatized by the mechanisms of
specs/rr_regression.privspec; the file holds the reports and the raw covariates.

    python specs/data/make_rr_regression.py

True models: log odds of cheated = yes: -1 - 0.1 (age - 20) + 0.5 [second] + 1 [third];
log odds of grade middle / high against low: 0.5 + 0.2 (age - 20) and -0.5 + 0.4 (age - 20).
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
    age = rng.integers(18, 27, size=n)
    year = rng.choice(["first", "second", "third"], size=n)
    eta = -1 - 0.1 * (age - 20) + 0.5 * (year == "second") + 1.0 * (year == "third")
    cheated = np.where(rng.random(n) < 1 / (1 + np.exp(-eta)), "yes", "no")
    logits = np.column_stack([np.zeros(n), 0.5 + 0.2 * (age - 20), -0.5 + 0.4 * (age - 20)])
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    grade = np.array(["low", "middle", "high"])[(rng.random(n)[:, None] > p.cumsum(axis=1)).sum(axis=1)]
    raw = pd.DataFrame({"age": age, "year": year, "cheated": cheated, "grade": grade})
    spec = privspec.load(HERE.parent / "rr_regression.privspec")
    reports = spec.privatize(raw, "unrelated", seed=1, keep=["age", "year"])
    reports["grade"] = spec.privatize(raw, "grades", seed=2)["grade"]
    reports.to_csv(HERE / "rr_regression.csv", index=False)
