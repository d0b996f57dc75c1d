"""Size and power of the independence tests of subset privacy (section IV-B; issue 13).

For each test (pearson, lrt, lrt_mom, bonferroni), design and n, seeded replications of
the report table (``Multinomial(n, (K_A (x) K_B) vec W)``, never individual respondents)
give

* the rejection rate at 5% under independence (size) of the default calibration, the
  permutation p-value (B draws; reject when p <= 0.05), with its Monte Carlo standard error;
* the rejection rate under a stated alternative (power), the paper's Appendix IV-B
  dependence ``W proportional to w_X w_Y^T + rho I`` (I: ones on the diagonal, rectangular
  where p != q);
* the size the chi-square (Bonferroni for bonferroni) p-value would have had, as before
  issue 13, and how often `calibrate asymptotic` now refuses it (B010-B013);
* the time per test (the permutation test with B draws, one core).

Designs: the Adult census' race (Table II) x gender.income (the margins of Table III, made
independent) of specs/adult_race.privspec; a sparse 5 x 5 design (400 report pairs, about
half of them empty at n = 300); and anes96 party identification x education
(statsmodels.datasets.anes96, 7 x 7 categories, 12,544 report pairs) with the data's
margins, plus privatized copies of the anes96 table itself (raw chi-square p = 0.35, the
issue's 14%).  A second part times the default test (B = 999) at n = 5,000.

    python bench/independence_size.py                # about 8 minutes on 2 cores (14 of CPU)
    python bench/independence_size.py --quick        # a smoke run (about a minute)
"""
from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")          # one core per worker
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

import privspec  # noqa: E402
from privspec.backends.core.compile import channel_of  # noqa: E402
from privspec.backends.finite.independence import (_df, _margins, _refuse_asymptotic, independence_test)  # noqa: E402
from privspec.backends.core.populations import population_vector  # noqa: E402
from privspec.errors import BackendError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TESTS = ("pearson", "lrt", "lrt_mom", "bonferroni")
TABLE_III = "population (gender, income) ~ counts [[9592, 1179], [15128, 6662]]"
ADULT = (ROOT / "specs" / "adult_race.privspec").read_text().replace(
    TABLE_III, "population gender ~ categorical(10771/32561, 21790/32561)\n"
               "population income ~ categorical(24720/32561, 7841/32561)")
SPARSE = """variable x: categorical {x1, x2, x3, x4, x5}
variable y: categorical {y1, y2, y3, y4, y5}
population x ~ categorical(0.45, 0.25, 0.15, 0.1, 0.05)
population y ~ categorical(0.4, 0.3, 0.15, 0.1, 0.05)
mechanism prod = product(subset(x, uniform), subset(y, uniform))
"""


def anes_raw() -> np.ndarray:
    from statsmodels.datasets import anes96
    import pandas as pd

    d = anes96.load_pandas().data
    return pd.crosstab(d.PID, d.educ).to_numpy().astype(float)


def anes_spec(raw: np.ndarray) -> str:
    labels = ", ".join(f"c{i}" for i in range(7))
    rows, cols = raw.sum(axis=1), raw.sum(axis=0)
    law = lambda v: ", ".join(f"{int(x)}/{int(v.sum())}" for x in v)  # noqa: E731
    return (f"variable pid: categorical {{{labels}}}\nvariable educ: categorical {{{labels}}}\n"
            f"population pid ~ categorical({law(rows)})\npopulation educ ~ categorical({law(cols)})\n"
            "mechanism prod = product(subset(pid, uniform), subset(educ, uniform))\n")


#: design -> (spec, sizes n, rho of the alternative, replications as a multiple of --reps)
DESIGNS = {"adult race x gi": (ADULT, (1000, 5000, 32561), 0.02, 1.0),
           "sparse 5 x 5": (SPARSE, (300, 1000), 0.05, 1.0),
           "anes96 pid x educ": (None, (944, 5000), 0.05, 0.25)}


def setup(design: str):
    text = DESIGNS[design][0] or anes_spec(anes_raw())
    model = privspec.load(text).model
    mech = model.mechanisms["prod"]
    chA, chB = (channel_of(f) for f in mech.factors)
    W0 = np.array([float(x) for x in population_vector(model, [f.variable for f in mech.factors])])
    return chA, chB, W0.reshape(chA.p, chB.p)


def alternative(W0: np.ndarray, rho: float) -> np.ndarray:
    """The paper's dependence (Appendix IV-B): ``W proportional to w_X w_Y^T + rho I``."""
    W = np.outer(W0.sum(axis=1), W0.sum(axis=0)) + rho * np.eye(*W0.shape)
    return W / W.sum()


def one_task(design: str, n: int, hypothesis: str, reps: int, draws: int, seed: tuple) -> dict:
    """``reps`` replications of one cell of the table; returns p-values, refusals, times."""
    chA, chB, W0 = setup(design)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    out = {t: {"perm": [], "asym": [], "refused": [], "seconds": []} for t in TESTS}
    if hypothesis == "raw copies":            # privatized copies of the anes96 table itself
        raw = anes_raw()
        tables = [sum(rng.multinomial(int(raw[x, y]), np.kron(chA.Kn[:, x], chB.Kn[:, y]))
                      for x in range(chA.p) for y in range(chB.p) if raw[x, y] > 0)
                  for _ in range(reps)]
    else:
        W = W0 if hypothesis == "H0" else alternative(W0, DESIGNS[design][2])
        lam = np.kron(chA.Kn, chB.Kn) @ W.ravel()
        tables = rng.multinomial(n, lam / lam.sum(), size=reps)
    children = np.random.SeedSequence(seed + (1,)).spawn(reps)
    for N, child in zip(tables, children):
        N = np.asarray(N, dtype=float).reshape(chA.n_obs, chB.n_obs)
        for t in TESTS:
            t0 = time.perf_counter()
            res = independence_test(chA, chB, N, t, draws=draws, seed=child)
            out[t]["seconds"].append(time.perf_counter() - t0)
            out[t]["perm"].append(res.p_value)
            # what the chi-square p-value was before issue 13, and whether it is refused now
            m = _margins(t, chA, chB, N)
            if t == "bonferroni":
                asym = min(1.0, chA.p * chB.p * stats.chi2.sf(res.statistic, 1))
            else:
                asym = stats.chi2.sf(res.statistic, _df(t, m) if t != "lrt_mom" else (chA.p - 1) * (chB.p - 1))
            out[t]["asym"].append(asym)
            try:
                _refuse_asymptotic(m, _df(t, m))
                out[t]["refused"].append(False)
            except BackendError:
                out[t]["refused"].append(True)
    return {"design": design, "n": n, "hypothesis": hypothesis, "out": out}


def rate(p: list[float]) -> tuple[float, float]:
    p = np.asarray(p)
    r = float(np.mean(p <= 0.05))
    return r, float(np.sqrt(max(r * (1 - r), 0.05 * 0.95) / len(p)))


def pct(r: tuple[float, float]) -> str:
    return f"{100 * r[0]:.1f} ± {100 * r[1]:.1f}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=None,
                    help="replications per cell (anes96: a quarter; default 400, --quick: 20)")
    ap.add_argument("--draws", type=int, default=199, help="permutations per test (exact in size for any B)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: n up to 5,000, 20 replications unless --reps says otherwise")
    args = ap.parse_args(argv)
    reps = args.reps if args.reps is not None else 20 if args.quick else 400
    chunk = 25
    tasks = []
    for d_i, (design, (_, sizes, _, share)) in enumerate(DESIGNS.items()):
        hyps = ("H0", "H1") + (("raw copies",) if design.startswith("anes") else ())
        for n in sizes:
            if args.quick and n > 5000:
                continue
            for h_i, h in enumerate(hyps):
                if h == "raw copies" and n != 944:
                    continue
                total = max(1, int(round(reps * share)))
                for c_i, start in enumerate(range(0, total, chunk)):
                    tasks.append((design, n, h, min(chunk, total - start), args.draws,
                                  (args.seed, d_i, n, h_i, c_i)))
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        done = list(pool.map(one_task, *zip(*tasks)))
    wall = time.perf_counter() - t0
    merged: dict = {}
    for r in done:
        cell = merged.setdefault((r["design"], r["n"], r["hypothesis"]), {t: {} for t in TESTS})
        for t in TESTS:
            for k, v in r["out"][t].items():
                cell[t].setdefault(k, []).extend(v)
    print(f"# Independence tests: size and power at alpha = 0.05 (B = {args.draws} permutations; "
          f"seed {args.seed}; {wall:.0f} s on {args.workers} workers)\n")
    print("Rates in %, ± one Monte Carlo standard error.  size: under independence; power: under "
          "W ~ w_X w_Y^T + rho I; chi-square (before): the asymptotic p-value's rejection rate, "
          "with how often `calibrate asymptotic` now refuses it.\n")
    print("| design | n | test | size (permutation) | power (permutation) | chi-square size (before) "
          "| asymptotic refused | s per test |")
    print("|---|---|---|---|---|---|---|---|")
    for design, (_, sizes, rho, _) in DESIGNS.items():
        for n in sizes:
            h0, h1 = merged.get((design, n, "H0")), merged.get((design, n, "H1"))
            if h0 is None:
                continue
            for t in TESTS:
                a, b = h0[t], h1[t]
                refused = 100 * np.mean(a["refused"])
                print(f"| {design} (rho = {rho}) | {n} | {t} | {pct(rate(a['perm']))} (R = {len(a['perm'])}) "
                      f"| {pct(rate(b['perm']))} | {pct(rate(a['asym']))} | {refused:.0f}% "
                      f"| {np.mean(a['seconds'] + b['seconds']):.3f} |")
    raw = merged.get(("anes96 pid x educ", 944, "raw copies"))
    if raw:
        print("\nPrivatized copies of the anes96 table itself (944 respondents; raw chi-square p = 0.35):\n")
        print("| test | rejection (permutation) | rejection (chi-square, before) | asymptotic refused |")
        print("|---|---|---|---|")
        for t in TESTS:
            print(f"| {t} | {pct(rate(raw[t]['perm']))} (R = {len(raw[t]['perm'])}) | {pct(rate(raw[t]['asym']))} "
                  f"| {100 * np.mean(raw[t]['refused']):.0f}% |")
    print("\nThe default test (B = 999 permutations), seconds per test at n = 5,000 (median over tables, one core):\n")
    print("| design | pearson | lrt | lrt_mom | bonferroni |")
    print("|---|---|---|---|---|")
    for design in ("adult race x gi", "anes96 pid x educ"):
        chA, chB, W0 = setup(design)
        lam = np.kron(chA.Kn, chB.Kn) @ W0.ravel()
        tables = np.random.default_rng(args.seed).multinomial(5000, lam / lam.sum(), size=2 if args.quick else 5)
        cells = []
        for t in TESTS:
            secs = []
            for N in tables:
                t0 = time.perf_counter()
                independence_test(chA, chB, N.reshape(chA.n_obs, chB.n_obs).astype(float), t)
                secs.append(time.perf_counter() - t0)
            cells.append(f"{np.median(secs):.2f}")
        print(f"| {design} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
