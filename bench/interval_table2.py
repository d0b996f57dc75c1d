"""Table II of the interval-privacy paper (section IV-A), replicated beside the paper's values.

Mean absolute errors of estimating E(Y) and E(Y^2) from Case-I interval data, Y ~ N(0.5, 1),
anchors U ~ Uniform[-T, T] (for E(Y^2), Uniform[0, 2T] on W = Y^2), T = 2 n^(1/3), with 0%,
1%, 5% outliers at 999 (of Y; of W = Y^2 in the second half, which is what the paper's raw
"Mean" row implies), by Example 2's estimator, the mean of the NPMLE (each innermost
interval's mass at its midpoint; a half-infinite one at its finite end), and the raw
mean and median.  Also the coverage, and the time per replication of each estimator
measured side by side (their ratio).

    python bench/interval_table2.py [--reps 1000] [--seed 1]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from privspec.backends.interval.fit import aggregate
from privspec.backends.interval.coverage import case1_coverage
from privspec.backends.interval.estimators import example2_mean, npmle_functional
from privspec.backends.interval.npmle.estimator import npmle

PAPER = {  # (estimand, n, method) -> MAE at 0%, 1%, 5% outliers
    ("E(Y)", 100, "Example 2"): (0.45, 0.44, 0.58), ("E(Y)", 1000, "Example 2"): (0.29, 0.33, 0.99),
    ("E(Y)", 100, "NPMLE"): (0.32, 0.36, 0.92), ("E(Y)", 1000, "NPMLE"): (0.12, 0.21, 1.13),
    ("E(Y)", 100, "Mean"): (0.08, 9.98, 49.93), ("E(Y)", 1000, "Mean"): (0.03, 9.98, 49.92),
    ("E(Y)", 100, "Median"): (0.11, 0.10, 0.12), ("E(Y)", 1000, "Median"): (0.03, 0.03, 0.07),
    ("E(Y^2)", 100, "Example 2"): (0.79, 0.82, 1.03), ("E(Y^2)", 1000, "Example 2"): (0.57, 0.64, 1.96),
    ("E(Y^2)", 100, "NPMLE"): (13.09, 11.58, 10.64), ("E(Y^2)", 1000, "NPMLE"): (3.68, 4.08, 4.45),
    ("E(Y^2)", 100, "Mean"): (0.14, 9.98, 49.89), ("E(Y^2)", 1000, "Mean"): (0.04, 9.98, 49.88),
    ("E(Y^2)", 100, "Median"): (0.66, 0.65, 0.60), ("E(Y^2)", 1000, "Median"): (0.67, 0.65, 0.60),
}
METHODS = ("Example 2", "NPMLE", "Mean", "Median")


def replicate(estimand: str, n: int, share: float, reps: int, rng: np.random.Generator) -> dict:
    square = estimand == "E(Y^2)"
    T = 2 * n ** (1 / 3)
    a, b = (0.0, 2 * T) if square else (-T, T)
    truth = 1.25 if square else 0.5
    est = {m: [] for m in METHODS}
    clock = {"Example 2": 0.0, "NPMLE": 0.0}
    fallbacks = 0
    for _ in range(reps):
        y = rng.normal(0.5, 1, n)
        w = y ** 2 if square else y
        w[: int(round(share * n))] = 999.0
        u = rng.uniform(a, b, n)
        below = w <= u
        t0 = time.perf_counter()
        L, R, C = aggregate(np.where(below, -np.inf, u), np.where(below, u, np.inf))
        t1 = time.perf_counter()
        est["Example 2"].append(example2_mean(L, R, C, a, b)[0])
        t2 = time.perf_counter()
        with np.errstate(all="ignore"):
            fit = npmle(L, R, C)                    # the engine privspec run uses (no fallback)
        fallbacks += not fit.converged
        est["NPMLE"].append(npmle_functional(fit.intervals, fit.mass, lambda x: x, 0.0 if square else -np.inf)[0])
        t3 = time.perf_counter()
        clock["Example 2"] += (t1 - t0) + (t2 - t1)
        clock["NPMLE"] += (t1 - t0) + (t3 - t2)
        est["Mean"].append(w.mean())
        est["Median"].append(np.median(w))
    out = {}
    for m, v in est.items():
        e = np.abs(np.array(v) - truth)
        out[m] = (e.mean(), e.std(ddof=1) / np.sqrt(reps))
    out["_time"] = {k: v / reps for k, v in clock.items()}
    out["_fallbacks"] = fallbacks
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"Table II, {args.reps} replications (ours: MAE (SE) | paper)")
    for estimand in ("E(Y)", "E(Y^2)"):
        for n in (100, 1000):
            T = 2 * n ** (1 / 3)
            if estimand == "E(Y)":
                tau = case1_coverage(stats.norm(0.5, 1).cdf, stats.uniform(-T, 2 * T))
            else:
                tau = case1_coverage(_w_cdf, stats.uniform(0, 2 * T))
            rows = [replicate(estimand, n, s, args.reps, rng) for s in (0.0, 0.01, 0.05)]
            print(f"\n{estimand}, n = {n}, T = {T:.2f}, coverage tau = {tau:.3f}")
            print(f"  {'':10s}" + "".join(f"{h:>26s}" for h in ("0%", "1%", "5%")))
            for m in METHODS:
                cells = [f"{r[m][0]:8.2f} ({r[m][1]:.2f}) | {p:6.2f}" for r, p in zip(rows, PAPER[(estimand, n, m)])]
                print(f"  {m:10s}" + "".join(f"{c:>26s}" for c in cells))
            t = rows[0]["_time"]
            print(f"  time per replication: Example 2 {1e3 * t['Example 2']:.3f} ms, NPMLE {1e3 * t['NPMLE']:.3f} ms "
                  f"(ratio NPMLE / Example 2 = {t['NPMLE'] / t['Example 2']:.1f})")
            failed = sum(r["_fallbacks"] for r in rows)
            if failed:
                print(f"  ({failed} of {3 * args.reps} NPMLE fits did not converge)")


def _w_cdf(w):
    """CDF of W = Y^2 with Y ~ N(0.5, 1)."""
    w = np.asarray(w, dtype=float)
    r = np.sqrt(np.clip(w, 0, None))
    return np.where(w < 0, 0.0, stats.norm.cdf(r - 0.5) - stats.norm.cdf(-r - 0.5))


if __name__ == "__main__":
    main()
