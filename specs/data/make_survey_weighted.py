"""Regenerate specs/data/survey_weighted.csv: a stratified cluster sample (seeded) for
specs/survey.privspec, the reports of drinks_q and smoke_q beside the agency's design
columns: 3 regions (the strata), 12 schools sampled in each (the clusters, the primary
sampling units), 25 pupils per school, and a survey weight per pupil.

    python specs/data/make_survey_weighted.py

Pupils of a school are alike: each school draws its own drinks and smokes shares from a
Dirichlet around the population's (concentration 4), so the reports of a school are
correlated and the design effect is above 1.  The weights are the inverse of unequal
selection probabilities: regions sampled at different rates (weights 40, 25, 60), times a
school factor in [0.8, 1.25].
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import privspec

HERE = Path(__file__).parent

if __name__ == "__main__":
    rng = np.random.default_rng(2037)
    parts = []
    for region, base in (("north", 40.0), ("south", 25.0), ("west", 60.0)):
        for school in range(1, 13):
            d = rng.dirichlet(4 * np.array([0.35, 0.4, 0.15, 0.1]))
            s = rng.dirichlet(4 * np.array([0.8, 0.2]))
            parts.append(pd.DataFrame({
                "drinks": rng.choice(["none", "1-7", "8-14", "15+"], 25, p=d),
                "smokes": rng.choice(["no", "yes"], 25, p=s),
                "region": region, "school": f"{region[0]}{school:02d}",
                "weight": round(base * rng.uniform(0.8, 1.25), 2)}))
    raw = pd.concat(parts, ignore_index=True)
    spec = privspec.load(HERE.parent / "survey.privspec")
    reports = spec.privatize(raw, "drinks_q", seed=1, keep=["region", "school", "weight"])
    reports["smokes"] = spec.privatize(raw, "smoke_q", seed=2)["smokes"]
    reports.to_csv(HERE / "survey_weighted.csv", index=False)
