"""Make the data of the university example (privacy on a subset of variables, section 5.1).

Writes, next to this script:

* ``university.csv`` — raw survey records, one row per graduate (1,400 rows): an id,
  the degree programme, the annual income band and sex.  Degree by income band
  reproduces Table 2 of the paper exactly; sex (collected but never released) is
  drawn per programme with a fixed seed, and the rows are shuffled with that seed.
* ``university_released.csv`` — what ``privspec privatize specs/university.privspec
  --mechanism income_by_degree --input university.csv --seed 2024`` writes: the
  table by degree and income band, epsilon-private on {income} with exact totals by
  degree (Algorithm 1), in the tidy layout (one row per cell, a ``count`` column).

Run from anywhere:  python specs/data/make_university.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SPEC = HERE.parent / "university.privspec"
SEED = 2024

DEGREES = ["BA", "BSc", "BEng"]
BANDS = ["<30k", "30k-40k", "40k-50k", "50k-60k", "60k-80k", "80k-100k", "100k-120k", ">=120k"]
#: Table 2 of the paper: graduates by degree programme (rows) and income band (columns)
TABLE2 = [[5, 10, 47, 68, 54, 33, 12, 2],
          [1, 13, 44, 92, 131, 75, 21, 15],
          [2, 25, 78, 218, 237, 153, 46, 18]]
#: share of women per programme (illustrative: the paper does not give one)
WOMEN = {"BA": 0.64, "BSc": 0.52, "BEng": 0.27}


def records(seed: int = SEED) -> pd.DataFrame:
    """The raw records: Table 2 expanded to one row per graduate, then shuffled."""
    rng = np.random.default_rng(seed)
    counts = np.asarray(TABLE2)
    degree = np.repeat(np.repeat(DEGREES, len(BANDS)), counts.ravel())
    band = np.repeat(np.tile(BANDS, len(DEGREES)), counts.ravel())
    women = rng.random(degree.size) < np.vectorize(WOMEN.get)(degree)
    frame = pd.DataFrame({"degree": degree, "income": band, "sex": np.where(women, "F", "M")})
    frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    frame.insert(0, "id", [f"G{i:04d}" for i in range(1, len(frame) + 1)])
    return frame


def main() -> None:
    import privspec
    from privspec.backends import privatizer_for
    from privspec.backends.data.writing import write_table_atomic

    raw = records()
    write_table_atomic(raw, HERE / "university.csv", force=True)  # regenerated in place
    model = privspec.load(SPEC).model
    release = model.releases["income_by_degree"]
    released = privatizer_for(release).privatize(model, release, raw, seed=SEED)
    write_table_atomic(released, HERE / "university_released.csv", force=True)
    print(f"wrote {len(raw)} records and {len(released)} released cells to {HERE}")


if __name__ == "__main__":
    main()
