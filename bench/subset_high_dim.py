"""The subset-privacy paper's high-dimension experiment (appendix D-A2: the L1 loss as p
grows with n, journal Fig. 7 / arXiv Fig. 8; the EM estimate's non-Gaussian limit, journal
Fig. 8 / arXiv Fig. 9).

For p = 4, 6, 8, 10, 12 and n = (p ln p)^2 rounded (31, 116, 277, 530, 889), each
replication draws a population w and an independent design nu as normalised uniform(0, 1)
draws (the scaled-L2 table's data-generating process, ``bench/subset_l2_table.py``: nu
over the subsets of size 2..p-2), a multinomial sample of n reports, and records the L1
loss ``||w_hat - w||_1`` of privspec's estimators: EM (``em``), MLE (``newton``; the paper
uses CVXPY), ONE (``one_step``) and MoM (``mom``, not projected).

The figures print no numbers, so what they state is checked:

* consistency (Fig. 8): every estimator's mean L1 loss falls from p = 4 to p = 12;
* the EM's limit is not Gaussian (Fig. 9): at p = 12 the normalised error
  ``(w_hat_1 - w_1) / sqrt(avar_mle[1, 1] / n)`` (avar at the replication's w and nu),
  pooled over the replications, against N(0, 1): its skewness, excess kurtosis, the share
  of estimates on the boundary (w_hat_1 = 0, where the MLE piles up) and D'Agostino and
  Pearson's normality test.  MoM's normalised error (``avar_mom``) is printed beside it.

    python bench/subset_high_dim.py                # 1,000 replications per p (the paper's k)
    python bench/subset_high_dim.py --reps 20      # a smoke run (seconds)
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
import scipy.stats

from privspec.backends.core.estimators import estimate
from subset_l2_table import ESTIMATORS, random_design, uniform_draw  # bench/ is sys.path[0]

PS = (4, 6, 8, 10, 12)


def sample_size(p: int) -> int:
    """n = (p ln p)^2, rounded (the paper's choice: p grows with n, Theorem 6)."""
    return round((p * math.log(p)) ** 2)


def replicate(p: int, n: int, rng: np.random.Generator) -> tuple[dict[str, float], dict[str, float]]:
    """One replication: the L1 loss of every estimator, and the normalised error of the
    first category's EM and MoM estimates."""
    ch = random_design(p, rng)
    w = uniform_draw(p, rng)
    probs = ch.probabilities(w)
    counts = rng.multinomial(n, probs / probs.sum())
    fits = {row: estimate(ch, counts, method).w for row, method in ESTIMATORS.items()}
    loss = {row: float(np.abs(fit - w).sum()) for row, fit in fits.items()}
    se_mle = math.sqrt(float(ch.avar_mle(w)[0, 0]) / n)
    z = {"EM": (fits["EM"][0] - w[0]) / se_mle,
         "MoM": (fits["MoM"][0] - w[0]) / math.sqrt(float(ch.avar_mom(w)[0, 0]) / n),
         "EM_on_boundary": float(fits["EM"][0] <= 1e-9), "MoM_negative": float(fits["MoM"][0] < 0),
         "near": float(w[0] < 2 * se_mle)}
    return loss, z


def normality(z: np.ndarray) -> str:
    """Skewness, excess kurtosis and D'Agostino-Pearson's p-value of ``z`` against a normal law."""
    k2, pval = scipy.stats.normaltest(z)
    return (f"mean {z.mean():+.3f}, sd {z.std(ddof=1):.3f}, skewness {scipy.stats.skew(z):+.3f}, "
            f"excess kurtosis {scipy.stats.kurtosis(z):+.3f}, normality test p = {pval:.2g}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000, help="replications per p (the paper: 1000)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"L1 loss ||w_hat - w||_1, mean (SE) over {args.reps} replications, n = (p ln p)^2")
    print(f"{'p':>3} {'n':>5} " + "".join(f"{row:>16}" for row in ESTIMATORS) + "   seconds")
    means: dict[str, list[float]] = {row: [] for row in ESTIMATORS}
    last: list[dict[str, float]] = []
    for p in PS:
        n = sample_size(p)
        start = time.perf_counter()
        draws = [replicate(p, n, rng) for _ in range(args.reps)]
        cells = []
        for row in ESTIMATORS:
            x = np.array([d[0][row] for d in draws])
            means[row].append(float(x.mean()))
            cells.append(f"{x.mean():.3f} ({x.std(ddof=1) / math.sqrt(len(x)):.3f})")
        print(f"{p:>3} {n:>5} " + "".join(f"{c:>16}" for c in cells) + f"   {time.perf_counter() - start:7.1f}")
        last = [d[1] for d in draws]
    falls = {row: m[-1] < m[0] for row, m in means.items()}
    print("\nconsistency (Fig. 8): the mean L1 loss falls from p = 4 to p = 12 for "
          + ", ".join(f"{row} {'yes' if ok else 'NO'}" for row, ok in falls.items()))
    em, mom, near = (np.array([d[key] for d in last]) for key in ("EM", "MoM", "near"))
    boundary = float(np.mean([d["EM_on_boundary"] for d in last]))
    negative = float(np.mean([d["MoM_negative"] for d in last]))
    print(f"\nthe first category's normalised error at p = {PS[-1]}, n = {sample_size(PS[-1])} (Fig. 9), "
          "against N(0, 1):")
    print(f"  EM:  {normality(em)}; on the boundary (w_hat_1 = 0) in {boundary:.1%} of replications")
    print(f"  MoM: {normality(mom)}; negative (w_hat_1 < 0) in {negative:.1%}")
    near = near.astype(bool)
    if near.sum() >= 8:
        print(f"  the {near.sum()} replications with w_1 within 2 standard errors of 0, where the boundary binds:")
        print(f"  EM:  {normality(em[near])}")
        print(f"  MoM: {normality(mom[near])}")
    return 0 if all(falls.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
