"""Survey weights for castell past the Jacobian's limit: the time and peak memory of the
per-cell design variances (:mod:`privspec.backends.rr.weighted_large`) on a 3^w table
(default w = 12: 531,441 cells) from 5,000 weighted rows in 50 PSUs of 2 strata, by
linearization (one Kronecker solve per PSU), deff's denominator, and 50 JK1 replicates
(castell re-run on each).  Peak memory is numpy's traced allocations above the inputs.

    python bench/rr_weighted_large.py          # a few seconds
    python bench/rr_weighted_large.py --w 14
"""
from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np

from privspec.backends.core.kron import kron_apply
from privspec.backends.core.survey_design import DesignCells
from privspec.backends.rr import weighted_large as wl


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--w", type=int, default=12)
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--psus", type=int, default=50)
    a = ap.parse_args()
    w, d, rows, psus = a.w, 3, a.rows, a.psus
    size = d ** w
    rng = np.random.default_rng(0)
    keep = np.exp(2) / (np.exp(2) + 2)
    inv = [np.linalg.inv(np.where(np.eye(3, dtype=bool), keep, (1 - keep) / 2))] * w
    report = rng.integers(0, size, rows)
    psu = rng.integers(0, psus, rows)
    cells = DesignCells(report=report, weight=rng.uniform(1, 3, rows), stratum=(psu >= psus // 2).astype(int),
                        psu=psu, repeats=np.ones(rows, dtype=int))
    total = cells.total_weight
    shares = cells.weighted_counts(size) / total
    print(f"3^{w} = {size:,} cells ({size * 8 / 2**20:.1f} MiB a table), {rows:,} rows, {psus} PSUs; "
          f"load {os.getloadavg()[0]:.1f}")
    tracemalloc.start()

    def timed(label, f):
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        t = time.perf_counter()
        out = f()
        el = time.perf_counter() - t
        print(f"  {label}: {el:.2f} s, peak {(tracemalloc.get_traced_memory()[1] - before) / 2**20:.1f} MiB")
        return out

    timed("linearized per-cell variance", lambda: wl.linearized_variance(inv, cells, shares, total))
    timed("deff's denominator", lambda: wl.srs_variance(inv, shares, rows))
    sums = np.column_stack([cells.weighted_counts(size)] + [
        np.bincount(report, weights=np.where(psu == c, 0.0, cells.weight) * psus / (psus - 1), minlength=size)
        for c in range(psus)])
    theta = kron_apply(inv, shares).reshape(-1)
    timed(f"{psus} JK1 replicates (their sums, {sums.nbytes / 2**20:.0f} MiB, not counted)",
          lambda: wl.replicate_variance(inv, theta, sums, np.full(psus, (psus - 1) / psus)))


if __name__ == "__main__":
    main()
