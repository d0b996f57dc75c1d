"""Regenerate specs/data/survey_replicates.csv: specs/data/survey_weighted.csv's sample with
the replicate weights an agency would publish instead of its strata and clusters: 20
columns rw01 .. rw20 of Fay's balanced repeated replication with rho = 0.5.

    python specs/data/make_survey_replicates.py

The 12 schools of each region are paired in their order (n01 with n02, n03 with n04, ...):
18 pseudo-strata of 2 PSUs each, the usual variance strata of a public-use file.  A
Hadamard matrix of order 20 (Paley's construction from the quadratic residues mod 19)
gives the replicates: replicate r multiplies the weights of the first school of pair h by
1.5 and the second's by 0.5 where row h + 1 of the matrix has +1 in column r, the other
way round where it has -1 (``survey``'s ``brrweights`` with ``fay.rho = 0.5``).  The file
is read with

    privspec run specs/survey.privspec --data specs/data/survey_replicates.csv --weights weight \\
        --replicate-weights 'rw*' --replicate-type fay --fay-rho 0.5
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
RHO = 0.5


def paley_hadamard(q: int) -> np.ndarray:
    """A Hadamard matrix of order ``q + 1`` for a prime ``q = 3 mod 4``, its first row all +1."""
    residues = {(i * i) % q for i in range(1, q)}
    chi = np.array([0] + [1 if d in residues else -1 for d in range(1, q)])
    jacobsthal = chi[(np.arange(q)[None, :] - np.arange(q)[:, None]) % q]
    core = np.block([[np.zeros((1, 1)), np.ones((1, q))], [-np.ones((q, 1)), jacobsthal]])
    return (np.eye(q + 1) + core).astype(int)


if __name__ == "__main__":
    df = pd.read_csv(HERE / "survey_weighted.csv", dtype={"weight": float})
    H = paley_hadamard(19)
    assert (H @ H.T == 20 * np.eye(20)).all()
    schools = df[["region", "school"]].drop_duplicates().sort_values(["region", "school"]).reset_index(drop=True)
    pair = schools.index // 2                 # the pseudo-stratum of each school, 0 .. 17
    first = schools.index % 2 == 0            # the first school of its pair
    of_row = df["school"].map(dict(zip(schools["school"], range(len(schools))))).to_numpy()
    sign = H[1 + pair[of_row]] * np.where(first[of_row], 1, -1)[:, None]     # rows x 20
    factor = np.where(sign > 0, 2 - RHO, RHO)
    replicates = pd.DataFrame(np.round(df["weight"].to_numpy()[:, None] * factor, 3),
                              columns=[f"rw{r + 1:02d}" for r in range(20)])
    out = pd.concat([df.drop(columns=["region", "school"]), replicates], axis=1)
    out.to_csv(HERE / "survey_replicates.csv", index=False)
