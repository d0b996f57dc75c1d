"""Benchmark: Algorithm 1 (privacy on a subset of variables, section 5.2), vectorized.

Prints, for a few table shapes, the time of ``privspec.backends.releases.noise.algorithm1``
next to a literal transcription of the paper's pseudo-code (a Python loop over the
total cells, building a matrix of M(n_i) and adding ``b M`` for each), both run in
this process on the same counts; the ratio is the figure.  Also times privatizing
raw records (counting a million records into the table, then the noise).

Run:  python bench/release_speed.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd

from privspec.backends.releases.noise import algorithm1, sample


def literal(f: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 1 as printed: for each i, g_i <- f_i + b M with M in M(n_i) (every row
    has the same n here, so M is built once: the baseline is the loop and b M)."""
    m, n = f.shape
    g = f.astype(np.int64).copy()
    if n < 2:
        return g
    M = np.zeros((math.comb(n, 2), n), dtype=np.int64)
    j, k = np.triu_indices(n, 1)
    M[np.arange(j.size), j], M[np.arange(j.size), k] = 1, -1
    for i in range(m):
        b = sample(rng, epsilon, M.shape[0])
        g[i] = g[i] + b @ M
    return g


def best_of(fn, repeat: int, clock=time.perf_counter) -> float:
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    shapes = [(3, 8), (1000, 8), (2000, 20), (50, 200)]
    print(f"{'m x n (total cells x cells each)':>34} {'literal s':>10} {'privspec s':>11} {'ratio':>7}")
    for m, n in shapes:
        f = np.random.default_rng(0).integers(0, 100, size=(m, n))
        t_lit = best_of(lambda: literal(f, 1.0, np.random.default_rng(1)), args.repeat)
        # the paper's calibration, like the literal baseline's draws (a = e^(-eps/2))
        t_vec = best_of(lambda: algorithm1(f, 1.0, np.random.default_rng(1), calibration="paper"), args.repeat)
        print(f"{f'{m} x {n}':>34} {t_lit:>10.4f} {t_vec:>11.4f} {t_lit / t_vec:>6.1f}x")

    # privatize end to end from raw records: the count is one bincount
    import privspec
    from privspec.backends.releases.backend import ReleaseBackend

    model = privspec.load("""
variable area: categorical {""" + ", ".join(f"a{i}" for i in range(500)) + """}
variable band: categorical {b1, b2, b3, b4, b5, b6, b7, b8}
release R = counts(area, band) with geometric(epsilon = 1) protect {band} exact totals(area)
""").model
    rng = np.random.default_rng(2)
    n_rec = 1_000_000
    raw = pd.DataFrame({"area": np.array([f"a{i}" for i in range(500)])[rng.integers(0, 500, n_rec)],
                        "band": np.array([f"b{i}" for i in range(1, 9)])[rng.integers(0, 8, n_rec)]})
    backend = ReleaseBackend()
    t = best_of(lambda: backend.privatize(model, model.releases["R"], raw, seed=3), args.repeat)
    print(f"privatize {n_rec:,} records into a 500 x 8 table: {t:.3f} s "
          f"({n_rec / t / 1e6:.1f} M records/s)")
    large_table(args.repeat)


def large_table(repeat: int, n: int = 10_000_000, k: int = 100) -> None:
    """1e7 records into a table of 1e6 cells (three variables of 100 categories), text and
    categorical columns: ``spec.privatize`` against the floor measured in the same run
    (factorize each column, or read its codes, bincount the cells, draw the two-sided
    geometric noise).  Target: <= 1.5x, CPU time (the figure holds on a busy machine)."""
    import privspec

    labels = [f"v{i}" for i in range(k)]
    spec = privspec.load("\n".join([*(f"variable {c}: categorical {{{', '.join(labels)}}}" for c in "abc"),
                                    "release R = counts(a, b, c) with geometric(epsilon = 1)"]))
    rng = np.random.default_rng(0)
    drawn = {c: rng.integers(0, k, n) for c in "abc"}
    frames = {"text": pd.DataFrame({c: np.asarray(labels, dtype=object)[x] for c, x in drawn.items()}),
              "categorical": pd.DataFrame({c: pd.Categorical.from_codes(x, categories=labels)
                                           for c, x in drawn.items()})}

    def floor(frame: pd.DataFrame) -> np.ndarray:
        codes = [frame[c].cat.codes.to_numpy() if isinstance(frame[c].dtype, pd.CategoricalDtype)
                 else pd.factorize(frame[c])[0] for c in "abc"]
        table = np.bincount((codes[0].astype(np.int64) * k + codes[1]) * k + codes[2], minlength=k ** 3)
        noise = np.random.default_rng(1)
        p = -np.expm1(-0.5)   # the same law as privspec's: a = e^(-epsilon/2) (no exact totals)
        return table + noise.geometric(p, table.size) - noise.geometric(p, table.size)

    print(f"privatize {n:,} records into a {k} x {k} x {k} table (CPU seconds, best of {repeat}; target <= 1.5x):")
    for kind, frame in frames.items():
        t_floor = best_of(lambda: floor(frame), repeat, time.process_time)
        t_ours = best_of(lambda: spec.privatize(frame, "R", seed=1), repeat, time.process_time)
        ratio = t_ours / t_floor
        print(f"   {kind:>12} columns: privspec {t_ours:.2f} s, floor {t_floor:.2f} s, {ratio:.2f}x "
              f"{'PASS' if ratio <= 1.5 else 'FAIL'}")


if __name__ == "__main__":
    main()
