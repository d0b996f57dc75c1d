"""Regenerate specs/data/rrreg_designs_weighted.csv: a stratified cluster sample (seeded)
for the cheating-detection model of specs/rrreg_designs.privspec (mechanism ``detect``):
2 regions (the strata), 15 schools sampled in each (the clusters, the primary sampling
units), 40 pupils per school, and a survey weight per pupil.

    python specs/data/make_rrreg_designs_weighted.py

Pupils of a school are alike: each school draws its own share of carriers from a beta
around its region's (20% in the north, 35% in the south, concentration 8); 10% of every
school cheat (they say no whatever the die says).  Each pupil draws the group half and
half.  The weights are the inverse of unequal selection rates: the north sampled at a
third of the south's (weights 60 and 20), times a school factor in [0.8, 1.25].
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import privspec

HERE = Path(__file__).parent

if __name__ == "__main__":
    rng = np.random.default_rng(3737)
    parts = []
    for region, share, base in (("north", 0.2, 60.0), ("south", 0.35, 20.0)):
        for school in range(1, 16):
            carriers = rng.beta(8 * share, 8 * (1 - share))
            kind = rng.choice(["carrier", "honest", "cheater"], 40, p=[0.9 * carriers, 0.9 * (1 - carriers), 0.1])
            parts.append(pd.DataFrame({
                "kind": kind, "group": np.where(rng.random(40) < 0.5, "first", "second"),
                "region": region, "school": f"{region[0]}{school:02d}",
                "weight": round(base * rng.uniform(0.8, 1.25), 2)}))
    raw = pd.concat(parts, ignore_index=True)
    spec = privspec.load(HERE.parent / "rrreg_designs.privspec")
    honest = spec.privatize(pd.DataFrame({"cheated": np.where(raw["kind"] == "carrier", "yes", "no"),
                                          "group": raw["group"]}), "detect", seed=4)
    out = pd.DataFrame({"cheated": np.where(raw["kind"] == "cheater", "no", honest["cheated"]), "group": raw["group"],
                        "region": raw["region"], "school": raw["school"], "weight": raw["weight"]})
    out.to_csv(HERE / "rrreg_designs_weighted.csv", index=False)
