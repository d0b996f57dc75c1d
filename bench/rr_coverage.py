"""Coverage of the 95% intervals of randomized-response estimates, by seeded simulation.

For each estimator, kind of standard error (``population``: fresh respondents from the
truth each replication; ``conditional``: the respondents fixed, their randomization
redrawn) and n: the coverage averaged over the cells, its Monte Carlo standard error,
and the worst cell, each interval against what it claims to cover (the table; for
RR-Independent the product of its marginals, and then also the joint).

1. GRR marginals, d = 5, a population with cells of 0.002 to 0.6, eps = 1 (and eps = 5
   at n = 1,000, where the cell of 0.002 is carried by a few reports): privspec's
   ``mom(se = ...)`` (the randomized-response back end: score interval) and the
   general finite back end's ``mom`` (what ``estimate distribution(x) from g by mom``
   without options runs: Wald).
2. castell, RR-Independent and hybrid on a 3-attribute product (Titanic's Class x Sex x
   Survived proportions, R datasets::Titanic: strong dependence, cells of 0.0014 and
   0.0018), eps = 1 per attribute, at the castell paper's n = 32,561 (Adult) and n =
   1,000 (its synthetic data).
   RR-Joint (one GRR on the 16 combinations, eps = 3) at the same n, the whole table
   and a margin.
3. The boundary: castell with eps = 5 and 8 per attribute at n = 1,000, where cells near
   0 are carried by a few reports; the score interval against Wald's.

    python bench/rr_coverage.py             # about a minute; seeded
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import privspec
from privspec.backends.finite.backend import estimate_on_counts
from privspec.backends.rr.backend import JointProblem
from privspec.backends.rr.castell import castell
from privspec.backends.rr.hybrid import hybrid
from privspec.backends.rr.independent import independent
from privspec.backends.rr.simulate import covers, joint_coverage, privatize_counts

ROOT = Path(__file__).resolve().parent.parent
REPS = 2000
SEED = 2024


def grr(d: int, eps: float) -> np.ndarray:
    e = np.exp(eps)
    P = np.full((d, d), 1 / (e + d - 1))
    np.fill_diagonal(P, e / (e + d - 1))
    return P


def titanic3() -> np.ndarray:
    frame = pd.read_csv(ROOT / "tests" / "data" / "titanic.csv", comment="#")
    axes = {"Class": ["1st", "2nd", "3rd", "Crew"], "Sex": ["Male", "Female"], "Survived": ["No", "Yes"]}
    table = np.zeros([len(v) for v in axes.values()])
    index = tuple(pd.Categorical(frame[a], categories=labs).codes for a, labs in axes.items())
    np.add.at(table, index, frame["Freq"].to_numpy())
    return table / table.sum()


def row(name: str, kind: str, n: int, out: dict, joint: dict | None = None) -> str:
    text = f"| {name} | {kind} | {n:,} | {out['mean']:.3f} | {out['mc_se']:.3f} | {out['min']:.3f} |"
    return text + (f" {joint['mean']:.3f} |" if joint is not None else " |")


def coverage_of_joint(estimate, truth, K, n, reps, seed, kind) -> dict:
    """Coverage of the joint itself (for RR-Independent's and hybrid's intervals)."""
    rng = np.random.default_rng(seed)
    if kind == "conditional":
        respondents = rng.multinomial(n, truth.ravel()).reshape(truth.shape)
        table = respondents / n
    else:
        from privspec.backends.core.kron import kron_apply

        lam = kron_apply(K, truth).ravel()
        table = truth
    hits = []
    for _ in range(reps):
        counts = privatize_counts(respondents, K, rng) if kind == "conditional" else \
            rng.multinomial(n, lam).reshape(truth.shape).astype(float)
        hits.append(covers(estimate(counts), table).mean())
    return {"mean": float(np.mean(hits))}


def marginals(eps: float, ns: tuple[int, ...]) -> list[str]:
    spec = f"""variable x: categorical {{c0, c1, c2, c3, c4}}
mechanism g = grr(x, epsilon = {eps})
query plain = estimate distribution(x) from g by mom
query pop   = estimate distribution(x) from g by mom(se = population)
query cond  = estimate distribution(x) from g by mom(se = conditional)
"""
    model = privspec.load(spec).model
    pi = np.array([0.002, 0.018, 0.08, 0.3, 0.6])
    K = [grr(5, eps).T]
    lines = []
    for n in ns:
        for name, kind in (("pop", "population"), ("cond", "conditional")):
            problem = JointProblem(model, model.queries[name])
            out = joint_coverage(problem.fit, pi, K, n, REPS, SEED, kind)
            lines.append(row(f"GRR marginal, eps = {eps:g}, `mom(se = ...)` (score)", kind, n, out))
        # the finite back end's Wald interval (no options): its own ci95
        q = model.queries["plain"]
        rng = np.random.default_rng(SEED)
        lam = K[0] @ pi
        hits = []
        for _ in range(REPS):
            r = estimate_on_counts(q, rng.multinomial(n, lam).astype(float))
            lo, hi = np.array([r.extras["ci95"][f"c{i}"] for i in range(5)]).T
            hits.append((lo <= pi) & (pi <= hi))
        H = np.array(hits, dtype=float)
        per = H.mean(axis=1)
        lines.append(row(f"GRR marginal, eps = {eps:g}, `mom` (finite back end, Wald)", "population", n,
                         {"mean": float(H.mean()), "mc_se": float(per.std(ddof=1) / np.sqrt(REPS)),
                          "min": float(H.mean(axis=0).min())}))
    return lines


def joints() -> list[str]:
    truth = titanic3()
    K = [grr(d, 1.0).T for d in truth.shape]
    lines = []
    for n in (1000, 32561):
        for kind in ("population", "conditional"):
            for name, est in (("castell", lambda c: castell(c, K, se=kind)),
                              ("independent", lambda c: independent(c, K, se=kind)),
                              ("hybrid", lambda c: hybrid(c, K, se=kind))):
                out = joint_coverage(est, truth, K, n, REPS, SEED, kind)
                joint = None if name == "castell" else coverage_of_joint(est, truth, K, n, REPS, SEED, kind)
                lines.append(row(name, kind, n, out, joint))
    return lines


def rr_joint_rows() -> list[str]:
    """RR-Joint: one GRR on the 16 combinations of Class x Sex x Survived (eps = 3, the
    product's total budget), the full table (score interval) and the Class x Survived
    margin (summed over Sex: Wald)."""
    truth = titanic3()
    spec = """variable c: categorical {c1, c2, c3, c4}
variable s: categorical {s1, s2}
variable v: categorical {v1, v2}
mechanism whole = grr(c * s * v, epsilon = 3)
query full = estimate joint(c, s, v) from whole by joint(se = %s)
query part = estimate joint(c, v) from whole by joint(se = %s)
"""
    lines = []
    for n in (1000, 32561):
        for kind in ("population", "conditional"):
            model = privspec.load(spec % (kind, kind)).model
            K = JointProblem(model, model.queries["full"]).K()
            for name in ("full", "part"):
                problem = JointProblem(model, model.queries[name])
                rng = np.random.default_rng(SEED)
                flat = truth.reshape(-1)
                if kind == "conditional":
                    respondents = rng.multinomial(n, flat)
                    table = respondents / n
                else:
                    lam = K[0] @ flat
                    table = flat
                hits = []
                for _ in range(REPS):
                    counts = privatize_counts(respondents, K, rng) if kind == "conditional" else \
                        rng.multinomial(n, lam).astype(float)
                    fit = problem.fit(counts)
                    target = table.reshape(truth.shape)
                    if name == "part":
                        target = target.sum(axis=1)
                    hits.append(covers(fit, target.reshape(fit.table.shape)))
                H = np.array(hits, dtype=float)
                per = H.reshape(REPS, -1).mean(axis=1)
                how = "score" if name == "full" else "Wald"
                lines.append(row(f"RR-Joint, {'whole table' if name == 'full' else 'Class x Survived'} ({how})",
                                 kind, n, {"mean": float(H.mean()), "mc_se": float(per.std(ddof=1) / np.sqrt(REPS)),
                                           "min": float(H.reshape(REPS, -1).mean(axis=0).min())}))
    return lines


def boundary() -> list[str]:
    truth = titanic3()
    lines = []
    for eps in (5.0, 8.0):
        K = [grr(d, eps).T for d in truth.shape]
        for kind in ("population", "conditional"):
            score = joint_coverage(lambda c: castell(c, K, se=kind), truth, K, 1000, REPS, SEED, kind)
            wald = joint_coverage(lambda c: dataclasses.replace(castell(c, K, se=kind), ci=None), truth, K, 1000,
                                  REPS, SEED, kind)
            lines.append(f"| castell, eps = {eps:g} each | {kind} | 1,000 | {score['mean']:.3f} | "
                         f"{score['min']:.3f} | {wald['mean']:.3f} | {wald['min']:.3f} |")
    return lines


def main() -> int:
    t0 = time.perf_counter()
    head = ("| estimator | se | n | coverage | MC se | worst cell | of the joint |\n"
            "|---|---|---|---|---|---|---|")
    print(f"Coverage of 95% intervals, {REPS} replications, seed {SEED}\n")
    print("GRR marginal, d = 5, pi = (0.002, 0.018, 0.08, 0.3, 0.6)\n")
    print(head)
    print("\n".join(marginals(1.0, (1000, 32561)) + marginals(5.0, (1000,))))
    print("\nClass x Sex x Survived (Titanic proportions), eps = 1 per attribute\n")
    print(head)
    print("\n".join(joints() + rr_joint_rows()))
    print("\nCells near 0: castell at n = 1,000 (score interval against Wald)\n")
    print("| estimator | se | n | score: coverage | score: worst cell | Wald: coverage | Wald: worst cell |\n"
          "|---|---|---|---|---|---|---|")
    print("\n".join(boundary()))
    print(f"\n({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
