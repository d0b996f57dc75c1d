"""Time privatize on 10^6 rows of a 5-category uniform subset design: the per-row
randomness (Philox keyed by the seed, the row index as the counter) against the literal
baseline it replaced, one shared sequential generator with a rejection loop over all
rows (whose output depended on the chunk size and on the other rows).

Run: python bench/privatize_speed.py [n]
"""
from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

import privspec
from privspec.backends.finite.data import _mask_labels, privatize_frame


def baseline(labels: tuple[str, ...], x: np.ndarray, seed: int) -> np.ndarray:
    """The previous sampler: one ``default_rng(seed)`` stream, redraws for the rejected rows."""
    rng = np.random.default_rng(seed)
    p = len(labels)
    drawn = np.empty(len(x), dtype=np.int64)
    todo = np.arange(len(x))
    while len(todo):
        draw = rng.integers(0, 1 << p, size=len(todo), dtype=np.int64)
        k = np.zeros(len(todo), dtype=np.int64)
        for j in range(p):
            k += (draw >> j) & 1
        ok = (k >= 2) & (k <= p - 2)
        drawn[todo[ok]] = draw[ok]
        todo = todo[~ok]
    reported = np.where((drawn >> x) & 1 == 1, drawn, ((1 << p) - 1) ^ drawn)
    uniq, inv = np.unique(reported, return_inverse=True)
    return np.array([_mask_labels(int(m), labels) for m in uniq], dtype=object)[inv]


def best(f, k: int = 5) -> float:
    times = []
    for _ in range(k):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 10 ** 6
    model = privspec.load("variable c: categorical {a, b, c, d, e}\nmechanism u = subset(c, uniform)\n").model
    mech = model.mechanisms["u"]
    labels = mech.variable.labels
    raw = pd.DataFrame({"c": np.random.default_rng(0).choice(list(labels), n)})

    def old() -> None:  # the same work around the sampler: read the labels, write the column
        x = pd.Index(labels).get_indexer(raw["c"].astype(str).str.strip())
        out = raw.copy()
        out["c"] = baseline(labels, x, 1)

    t_old = best(old)
    t_new = best(lambda: privatize_frame(model, mech, raw, 1))
    print(f"privatize {n:,} rows, uniform design on 5 categories (best of 5)")
    print(f"  shared sequential generator (before): {t_old:.3f} s")
    print(f"  per-row Philox (now):                 {t_new:.3f} s   ratio {t_new / t_old:.2f}")


if __name__ == "__main__":
    main()
