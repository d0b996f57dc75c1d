"""The subset-privacy paper's scaled-L2-loss table (appendix IV-A1; "Table IV" in the PDF).

For p = 4, 8 and n = 100, 500, 1000, each replication draws a population w and an
independent design nu as normalised uniform(0, 1) draws (w_x = u_x / sum u; nu_a the
same over the subsets a of size 2..p-2, the support of the uniform design), reports
``A`` with ``Pr(A = a | X = x) = (nu_a + nu_(a^c)) 1{x in a}`` (Def. 3), a multinomial
sample of n reports, and records ``n ||w_hat - w||^2`` for privspec's estimators:

* EM: ``em`` (the MLE by EM with SQUAREM);
* MLE: ``newton`` (the MLE by projected Newton; the paper solves it with CVXPY);
* ONE: ``one_step`` (one Newton step from MoM, Eq. 7);
* MoM: ``mom`` (``Q^-1 gamma_hat``, not projected on the simplex);
* MLE:LIM and MoM:LIM: a draw of the limit ``sum_i lambda_i Z_i``, Z_i iid chi2(1), with
  lambda_i the eigenvalues of the channel's ``avar_mle`` (``B I(theta)^-1 B^T``) and
  ``avar_mom`` (``Q^-1 C Q^-1``) at the replication's w and nu, as the paper does.

Each replication of each (p, n) draws its own (w, nu), as the paper's.
Every cell prints ours (standard error over replications) beside the paper's; ``ok`` when
the two differ by at most 2 standard errors of the difference (both are Monte Carlo means).
Dirichlet(1) draws of w and nu, or subsets of every size 1..p-1, do not match the paper
(MoM:LIM 6.97 instead of 6.74 at p = 8 with the latter).

    python bench/subset_l2_table.py                # 1,000 replications per cell: about 12 minutes on one core
    python bench/subset_l2_table.py --reps 50      # a smoke run (seconds)
"""
from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from privspec.backends.core.channel import Channel, subset_channel
from privspec.backends.core.estimators import estimate

SIZES = (100, 500, 1000)
#: row -> p -> the paper's mean (standard error) at n = 100, 500, 1000
PAPER = {
    "EM": {4: ((2.24, .07), (2.51, .09), (2.35, .09)), 8: ((5.04, .09), (5.57, .1), (5.57, .1))},
    "MLE": {4: ((2.24, .07), (2.51, .09), (2.35, .09)), 8: ((5.05, .09), (5.58, .1), (5.59, .1))},
    "ONE": {4: ((2.52, .1), (2.61, .1), (2.38, .09)), 8: ((4.99, .09), (5.63, .1), (5.64, .1))},
    "MLE:LIM": {4: ((2.5, .09), (2.56, .09), (2.5, .09)), 8: ((5.68, .1), (5.67, .1), (5.68, .1))},
    "MoM": {4: ((2.79, .16), (2.88, .13), (2.66, .1)), 8: ((6.81, .12), (6.78, .12), (6.68, .11))},
    "MoM:LIM": {4: ((2.71, .09), (2.78, .1), (2.71, .09)), 8: ((6.74, .11), (6.74, .11), (6.74, .11))},
}
#: row -> privspec's estimator
ESTIMATORS = {"EM": "em", "MLE": "newton", "ONE": "one_step", "MoM": "mom"}


def uniform_draw(size: int, rng: np.random.Generator) -> np.ndarray:
    """Normalised uniform(0, 1) draws: the paper's 'uniformly generated' w and nu."""
    u = rng.uniform(size=size)
    return u / u.sum()


def random_design(p: int, rng: np.random.Generator) -> Channel:
    """The channel of an independent design with nu uniform-drawn over the subsets of size
    2..p-2: report A~ if it holds the answer, else its complement, so mu_a = nu_a + nu_(a^c).

    The channel is built from floating-point matrices: the design's draws are floats, and
    the exact (sympy) constructor ``subset_channel`` would hold each as a sympy number
    (6 s a channel at p = 12, 4,070 subsets, for the same float64 matrix)."""
    labels = tuple(f"x{i}" for i in range(p))
    subsets = [c for k in range(2, p - 1) for c in itertools.combinations(range(p), k)]
    full = (1 << p) - 1
    masks = np.array([sum(1 << i for i in c) for c in subsets])
    nu = uniform_draw(len(subsets), rng)
    mu = _complement_sum(masks, nu, full)
    T = (masks[None, :] >> np.arange(p)[:, None]) & 1
    K = (mu[:, None] * T.T).astype(float)
    obs = tuple("|".join(labels[j] for j in range(p) if m >> j & 1) for m in masks)
    return Channel(labels, obs, K, T.astype(float), tuple(int(m) for m in masks), kind="subset")


def _complement_sum(masks: np.ndarray, nu: np.ndarray, full: int) -> np.ndarray:
    """mu_a = nu_a + nu_(a^c): each subset's draw plus its complement's."""
    where = {int(m): i for i, m in enumerate(masks)}
    return nu + nu[[where[full ^ int(m)] for m in masks]]


def limit_draw(V: np.ndarray, rng: np.random.Generator) -> float:
    """One draw of sum_i lambda_i Z_i, the limit of n ||w_hat - w||^2 (lambda: eigenvalues of V)."""
    lam = np.linalg.eigvalsh((V + V.T) / 2)
    return float(lam @ rng.chisquare(1, size=lam.size))


def replicate(p: int, n: int, rng: np.random.Generator) -> dict[str, float]:
    """One replication of one cell: a fresh (w, nu), n reports, the scaled loss of every row."""
    ch = random_design(p, rng)
    w = uniform_draw(p, rng)
    probs = ch.probabilities(w)
    counts = rng.multinomial(n, probs / probs.sum())
    out = {row: n * float(np.sum((estimate(ch, counts, method).w - w) ** 2)) for row, method in ESTIMATORS.items()}
    out["MLE:LIM"] = limit_draw(np.asarray(ch.avar_mle(w), float), rng)
    out["MoM:LIM"] = limit_draw(np.asarray(ch.avar_mom(w), float), rng)
    return out


def table(p: int, reps: int, rng: np.random.Generator) -> tuple[dict, int]:
    """Mean and standard error per (row, n) over ``reps`` replications of each n, and how
    many cells are within 2 standard errors of the difference from the paper's."""
    cells, within = {}, 0
    for i, n in enumerate(SIZES):
        draws = [replicate(p, n, rng) for _ in range(reps)]
        for row in PAPER:
            paper, paper_se = PAPER[row][p][i]
            x = np.array([d[row] for d in draws])
            mean, se = float(x.mean()), float(x.std(ddof=1) / np.sqrt(reps))
            ok = abs(mean - paper) <= 2 * np.hypot(se, paper_se)
            cells[row, n] = (mean, se, paper, paper_se, ok)
            within += ok
    return cells, within


def cell(mean: float, se: float, paper: float, paper_se: float, ok: bool) -> str:
    return f"{mean:.2f} ({se:.2f}) | {paper:.2f} ({paper_se:.2f}) {'ok' if ok else '!!'}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000, help="replications per p (the paper: 1000)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"Scaled L2 loss n ||w_hat - w||^2, {args.reps} replications: ours (SE) | paper (SE), "
          "ok = within 2 SE of the difference")
    total = cells_ok = 0
    for p in (4, 8):
        start = time.perf_counter()
        cells, within = table(p, args.reps, rng)
        total, cells_ok = total + len(cells), cells_ok + within
        print(f"\np = {p}  ({time.perf_counter() - start:.0f} s)")
        print(f"{'':8}" + "".join(f"{'n = ' + str(n):>30}" for n in SIZES))
        for row in PAPER:
            text = "".join(f"{cell(*cells[row, n]):>30}" for n in SIZES)
            print(f"{row:8}{text}")
    print(f"\n{cells_ok} of {total} cells within 2 SE of the paper's")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
