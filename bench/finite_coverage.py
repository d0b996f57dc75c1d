"""Coverage of the 95% intervals privspec prints for finite mechanisms (subset privacy,
randomized response), by seeded simulation through the same code path as ``privspec run``.

For each design, estimator, standard-error kind and n: ``reps`` replications drawn as
counts (true categories ~ Multinomial(n, w), then the reports of each category), the
query's estimator and intervals (:func:`privspec.backends.finite.estimates.fit_estimate`),
and the share of intervals holding the target: w for ``se = population``, the
replication's own table of true values for ``se = conditional``.  Printed per category,
with the Monte Carlo standard error of a coverage near 0.95 (``sqrt(.95 .05 / reps)``)
and the mean width.  Designs:

* ``urn``: the obfuscated urn (subset-privacy Example 2), uniform design, p = 4,
  w = (0.01, 0.1, 0.2, 0.69): black is within 1-2 standard errors of 0 at n = 10^4;
* ``race``: the Adult race distribution (Table II), uniform design, p = 5;
* ``race_grr``: k-ary randomized response on race, epsilon = 1 and 3.

Run:  python bench/finite_coverage.py [--reps R] [--quick]   (--quick: fewer settings,
200 replications unless --reps says otherwise).  About 23 minutes on one core (44 s of
exact set-up, then 1.3 s per replication of every row; measured 2026-11-27); --quick 65 s.  Prints a Markdown table; docs/subset-privacy.md holds its output.
The interval column names the method of :func:`fit_estimate` (profile likelihood for
the MLE family, score for MoM).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import privspec
from privspec.backends.finite.simulate import simulate_query

URN = "variable x: categorical {black, red, green, blue}\n" \
      "population x ~ categorical(0.01, 0.1, 0.2, 0.69)\nmechanism m = subset(x, uniform)\n"
RACE_W = "0.009551, 0.031909, 0.095943, 0.008323, 0.854274"
RACE = "variable x: categorical {AIE, API, Black, Other, White}\n" \
       f"population x ~ categorical({RACE_W})\nmechanism m = subset(x, uniform)\n"
RACE_GRR = "variable x: categorical {{AIE, API, Black, Other, White}}\n" \
           f"population x ~ categorical({RACE_W})\nmechanism m = grr(x, epsilon = {{eps}})\n"

SETTINGS = [  # (design label, spec, n values, estimators)
    ("urn (uniform, p = 4)", URN, (500, 10_000), ("mom", "mle", "one_step")),
    ("race (uniform, p = 5)", RACE, (500, 2_000, 32_561), ("mom", "mle", "one_step")),
    ("race, grr eps = 1", RACE_GRR.format(eps=1), (1_000, 32_561), ("mom", "mle")),
    ("race, grr eps = 3", RACE_GRR.format(eps=3), (1_000, 32_561), ("mom", "mle")),
]
QUICK = [("urn (uniform, p = 4)", URN, (10_000,), ("mom", "mle")),
         ("race, grr eps = 1", RACE_GRR.format(eps=1), (1_000,), ("mom", "mle"))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=None, help="replications per row (default 1000; --quick: 200)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    reps = args.reps if args.reps is not None else 200 if args.quick else 1000
    settings = QUICK if args.quick else SETTINGS
    mc = np.sqrt(0.95 * 0.05 / reps)
    print(f"Coverage of nominal 95% intervals, {reps} replications per row (Monte Carlo se of a coverage "
          f"near 0.95: {mc:.3f}); seed {args.seed}\n")
    print("| design | estimator | se | n | interval | coverage per category | mean width | time per fit |")
    print("|---|---|---|---|---|---|---|---|")
    worst = (1.0, "")
    for label, spec, ns, methods in settings:
        for method in methods:
            for kind in ("population", "conditional"):
                for n in ns:
                    text = spec + f"query q = estimate distribution(x) from m by {method}(se = {kind})\n"
                    model = privspec.load(text).model
                    t = time.perf_counter()
                    r = simulate_query(model, model.queries["q"], n=n, reps=reps, seed=args.seed)
                    dt = (time.perf_counter() - t) / reps
                    cov = r.value["ci95_coverage"]
                    width = r.value["ci95_mean_width"]
                    how = r.extras.get("ci_method", "").split(" (")[0].split(",")[0]
                    cells = ", ".join(f"{lab} {c:.3f}" for lab, c in zip(cov.labels, cov.values))
                    print(f"| {label} | {method} | {kind} | {n:,} | {how} | {cells} | "
                          f"{np.mean(width.values):.4f} | {dt * 1e3:.1f} ms |", flush=True)
                    low = min(cov.values)
                    if low < worst[0]:
                        worst = (low, f"{label}, {method}, {kind}, n = {n}")
    print(f"\nlowest coverage of any category: {worst[0]:.3f} ({worst[1]})")


if __name__ == "__main__":
    main()
