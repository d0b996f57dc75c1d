"""ROC-AUC of the subset-privacy independence tests (appendix IV-B; Figs. 12-14 of the arXiv
version, 11-13 of the journal one).

The paper's setting: each of k = 200 replications draws margins w_X, w_Y and a product
design (an independent design per variable) at random; the first half samples (X, Y)
independently, the second from ``W proportional to w_X w_Y^T + rho I``; n report pairs
(a multinomial table of the product channel) go to each test, and the AUC says how well
its p-value separates the dependent replications from the independent ones.  w_X, w_Y
and nu are normalised uniform(0, 1) draws, nu over the subsets of size 2..p-2 (the
draws that reproduce the paper's Table IV: bench/subset_l2_table.py).

The tests are privspec's (`privspec.backends.finite.independence.independence_test`):
pearson, lrt (LRT:MLE), lrt_mom (LRT:MoM), bonferroni, each calibrated by permutation
(``--draws`` random tables with the observed margins; the paper used chi-square limits,
which privspec refuses where they do not hold the test's size: docs/subset-privacy.md).
AUC = Pr(p_dependent < p_independent) + Pr(tie) / 2, with its Hanley-McNeil standard error.

The figures print no numbers and the text states only an order, which the last lines
check, each within 2 standard errors: the AUC decreases as p increases, n decreases or
rho decreases; LRT:MLE and LRT:MoM are above Pearson and Bonferroni; LRT:MoM is close
to LRT:MLE.

    python bench/independence_auc.py               # 100 + 100 replications per setting: about 6 minutes on one core
    python bench/independence_auc.py --reps 10 --draws 19   # a smoke run (seconds)
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from privspec.backends.finite.independence import independence_test
from subset_l2_table import random_design, uniform_draw

TESTS = {"pearson": "Pearson", "lrt": "LRT:MLE", "lrt_mom": "LRT:MoM", "bonferroni": "Bon"}
#: the three sweeps: (figure, what varies, settings (p, n, rho)); the paper's captions
#: (its text says n = 1000 for the p sweep, the caption of the figure n = 2000)
SWEEPS = (("Fig. 12", "rho", [(4, 1000, rho) for rho in (0.01, 0.02, 0.05, 0.1)]),
          ("Fig. 13", "n", [(4, n, 0.05) for n in (250, 500, 1000, 2000)]),
          ("Fig. 14", "p", [(p, 2000, 0.05) for p in (4, 5, 6)]))


def p_values(p: int, n: int, rho: float, dependent: bool, draws: int, rng: np.random.Generator) -> dict[str, float]:
    """One replication: a random product design and margins, a table of n report pairs,
    and each test's permutation p-value."""
    chA, chB = random_design(p, rng), random_design(p, rng)
    wX, wY = uniform_draw(p, rng), uniform_draw(p, rng)
    W = np.outer(wX, wY) + (rho * np.eye(p) if dependent else 0.0)
    lam = np.kron(chA.Kn, chB.Kn) @ (W / W.sum()).ravel()
    N = rng.multinomial(n, lam / lam.sum()).astype(float).reshape(chA.n_obs, chB.n_obs)
    seed = int(rng.integers(2**32))
    return {t: independence_test(chA, chB, N, t, draws=draws, seed=seed).p_value for t in TESTS}


def auc(p_dependent: np.ndarray, p_independent: np.ndarray) -> tuple[float, float]:
    """Pr(p_dep < p_ind) + Pr(tie) / 2 (a smaller p-value ranks as more dependent), and
    the Hanley-McNeil (1982) standard error."""
    d, i = p_dependent[:, None], p_independent[None, :]
    a = float(np.mean((d < i) + 0.5 * (d == i)))
    m, k = len(p_dependent), len(p_independent)
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    return a, float(np.sqrt(max(a * (1 - a) + (m - 1) * (q1 - a * a) + (k - 1) * (q2 - a * a), 0.0) / (m * k)))


def setting_auc(p: int, n: int, rho: float, reps: int, draws: int, rng: np.random.Generator) -> dict[str, tuple]:
    """The AUC of each test over ``reps`` independent and ``reps`` dependent replications."""
    runs = {dep: [p_values(p, n, rho, dep, draws, rng) for _ in range(reps)] for dep in (False, True)}
    return {t: auc(np.array([r[t] for r in runs[True]]), np.array([r[t] for r in runs[False]])) for t in TESTS}


def claims(results: dict) -> list[tuple[str, bool]]:
    """The paper's statements, checked with a tolerance of 2 standard errors of each
    difference of AUCs (taken as independent: each setting has its own replications)."""
    def below(a: tuple, b: tuple) -> float:     # how far a lies under b, in standard errors
        return (b[0] - a[0]) / max(np.hypot(a[1], b[1]), 1e-9)

    out = []
    for figure, varied, settings in SWEEPS:
        index = {"p": 0, "n": 1, "rho": 2}[varied]
        ordered = sorted(settings, key=lambda s: s[index], reverse=varied == "p")   # AUC should rise along
        for t, name in TESTS.items():
            worst = max(below(results[hi][t], results[lo][t]) for lo, hi in zip(ordered, ordered[1:]))
            out.append((f"{figure}: {name} {'decreases' if varied == 'p' else 'increases'} with {varied} "
                        f"(largest step against: {max(worst, 0.0):.1f} SE)", worst <= 2))
    cells = list(results.values())
    worst = max(below(c[lrt], c[other]) for c in cells
                for lrt in ("lrt", "lrt_mom") for other in ("pearson", "bonferroni"))
    out.append((f"LRT:MLE and LRT:MoM at least Pearson and Bon (largest shortfall {max(worst, 0.0):.1f} SE)",
                worst <= 2))
    gap = max(abs(below(c["lrt_mom"], c["lrt"])) for c in cells)
    out.append((f"LRT:MoM close to LRT:MLE (largest gap {gap:.1f} SE)", gap <= 2))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=100, help="replications per hypothesis (the paper: 100)")
    ap.add_argument("--draws", type=int, default=199, help="permutations per test")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    settings = list(dict.fromkeys(s for _, _, group in SWEEPS for s in group))
    results = {s: setting_auc(*s, args.reps, args.draws, rng) for s in settings}
    print(f"ROC-AUC of the independence tests, {args.reps} + {args.reps} replications per setting, "
          f"B = {args.draws} permutations ({time.perf_counter() - start:.0f} s); AUC (SE)\n")
    print("| figure | p | n | rho | " + " | ".join(TESTS.values()) + " |")
    print("|---|---|---|---|" + "---|" * len(TESTS))
    for figure, _, group in SWEEPS:
        for s in group:
            print(f"| {figure} | {s[0]} | {s[1]} | {s[2]} | "
                  + " | ".join(f"{a:.3f} ({se:.3f})" for a, se in results[s].values()) + " |")
    print("\nThe paper's statements (its figures print no values):")
    for text, holds in claims(results):
        print(f"  {'holds' if holds else 'DIFFERS'}: {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
