"""Figs. 12 and 13 of the interval-privacy paper (supplement S1): Algorithm 1's linear
regression on Case-I reports, against privacy coverage and against a misspecified noise law.

The setting of Subsection IV-B: n = 200, Y = beta X + eps with beta = 1, X and eps iid
N(0, 1), anchors U ~ Logistic(0, s), reports (-inf, U] or (U, inf]; Algorithm 1 with the
linear learner and the noise law postulated N(0, 1) (as the paper's Fig. 13 says it is),
started at f = 0.  (With the noise scale estimated by EM instead, the narrowest anchors
identify only beta / sigma: every U near 0 reports the sign of Y, a probit whose scale is
free, and at s = 0.1 the fit diverges.)  The
prediction error is E(f(X~) - f_hat(X~))^2 over a new X~ ~ N(0, 1): for f_hat = a + b x it is
a^2 + (b - 1)^2 exactly.

- Fig. 12: s = 0.1, 0.3, 0.5, 1, 3, 5, 10, 20, 30 (50 replications): the prediction error
  beside the privacy coverage tau = E[F(U)^2 + (1 - F(U))^2] of each design (eq. 14, F the
  N(0, 2) law of Y, by quadrature).  The paper: "the performance is not sensitive to privacy
  coverage unless the latter is very close to one".
- Fig. 13: s = 5 and eps ~ t(d), d = 1000, 100, 10, 5, 3, 1, the noise still postulated
  normal (200 replications).  The paper: "the performance is not severely affected, and
  less deviation tends to produce less degradation".

The figures print no values; the script prints the curves (mean +- standard error) and
checks the two statements.

    python bench/interval_figs12_13.py [--reps12 50] [--reps13 200] [--seed 1]
"""
from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from privspec.backends.interval.coverage import case1_coverage
from privspec.backends.interval.regression import iterative_regression

SCALES = (0.1, 0.3, 0.5, 1, 3, 5, 10, 20, 30)
DEGREES = (1000, 100, 10, 5, 3, 1)
N = 200


def prediction_error(scale: float, rng: np.random.Generator, noise: "stats.rv_continuous | None" = None) -> float:
    """One replication: a^2 + (b - 1)^2 of Algorithm 1's fit."""
    x = rng.standard_normal(N)
    eps = rng.standard_normal(N) if noise is None else noise.rvs(N, random_state=rng)
    y = x + eps
    u = rng.logistic(0.0, scale, N)
    below = y <= u
    left, right = np.where(below, -np.inf, u), np.where(below, u, np.inf)
    fit = iterative_regression(x, left, right, "linear", noise="normal", scale=1.0, seed=0)
    a, b = (float(c) for c in fit.coefficients)          # intercept, slope
    return a * a + (b - 1) ** 2


def coverage(scale: float) -> float:
    """tau of Case I with Logistic(0, scale) anchors on Y ~ N(0, 2)."""
    return case1_coverage(stats.norm(0, math.sqrt(2)).cdf, stats.logistic(0, scale))


def curve(values: list[float]) -> tuple[float, float]:
    v = np.asarray(values)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps12", type=int, default=50)
    ap.add_argument("--reps13", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)

    print(f"Fig. 12: n = {N}, beta = 1, U ~ Logistic(0, s), {args.reps12} replications (seed {args.seed})\n")
    print("| s | sd of U | coverage tau | prediction error | +- se |")
    print("|---|---|---|---|---|")
    fig12 = []
    for s in SCALES:
        err, se = curve([prediction_error(s, rng) for _ in range(args.reps12)])
        tau = coverage(s)
        fig12.append((tau, err, se))
        print(f"| {s} | {s * math.pi / math.sqrt(3):.2f} | {tau:.4f} | {err:.4f} | {se:.4f} |")
    moderate = [e for t, e, _ in fig12 if t <= 0.9]
    near_one = [e for t, e, _ in fig12 if t > 0.97]
    print(f"\nprediction error at coverage <= 0.9: {min(moderate):.4f}-{max(moderate):.4f}; "
          f"at coverage > 0.97: {min(near_one):.4f}-{max(near_one):.4f}")

    print(f"\nFig. 13: s = 5 (tau {coverage(5):.3f}), eps ~ t(d), normal noise postulated, "
          f"{args.reps13} replications\n")
    print("| d | prediction error | +- se |")
    print("|---|---|---|")
    fig13 = []
    for d in DEGREES:
        err, se = curve([prediction_error(5, rng, stats.t(d)) for _ in range(args.reps13)])
        fig13.append((d, err, se))
        print(f"| {d} | {err:.4f} | {se:.4f} |")
    print(f"\nfrom d = 1000 to d = 3 the error grows {fig13[4][1] / fig13[0][1]:.2f}x; at d = 1 (Cauchy) "
          f"{fig13[5][1] / fig13[0][1]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
