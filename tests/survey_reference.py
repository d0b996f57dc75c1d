"""The survey package's formulas written out row by row: the independent computations the
weighted estimators' tests compare with (not a test module; the tests import it through
pytest's ``pythonpath``)."""
from __future__ import annotations

import numpy as np
import pandas as pd


def svy_covariance(z: np.ndarray, weight: np.ndarray, strata: np.ndarray, psu: np.ndarray) -> np.ndarray:
    """``svyrecvar``: the PSU totals of the weighted influence values ``z`` (rows x
    coordinates; PSUs nested in strata), ``sum_h n_h / (n_h - 1) sum_c (z_hc - zbar_h)(z_hc -
    zbar_h)^T``."""
    frame = pd.DataFrame(z * weight[:, None])
    frame["h"], frame["c"] = strata, psu
    totals = frame.groupby(["h", "c"]).sum()
    V = np.zeros((z.shape[1], z.shape[1]))
    for _, g in totals.groupby(level="h"):
        d = g.to_numpy() - g.to_numpy().mean(axis=0)
        V += len(g) / (len(g) - 1) * d.T @ d
    return V
