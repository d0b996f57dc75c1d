"""Benchmark: the NPMLE of F from interval data, against surpyval, R's npsurv and lifelines.

The setting of issue 10: Y ~ N(0, 1), anchors uniform on [-9, 9], Case I (one anchor:
(-inf, U] or (U, inf)) and Case II (two sorted anchors: three ranges), intervals (l, r]
with -50/50 standing in for -inf/inf (every peer gets the same finite numbers), seeded.
Per setting it prints each solver's time (best of ``--repeat`` for the fast ones, one
run for the slow ones), the ratio to ours, its log-likelihood and the gap to ours
(ours minus theirs: positive means ours is higher).  All solvers run here, side by side,
in one run; the ratios are the figures.  The issue's target: 10^5 Case-II intervals
solved to the maximum (KKT within 1e-8) in under 0.5 s.

* surpyval: ``Turnbull.fit`` with its NPMLE (``turnbull_estimator="Kaplan-Meier"``) and
  with its default (Fleming-Harrington, which is not the NPMLE); log-likelihood of its
  fitted F on the data.
* npsurv (when ``Rscript`` and the R package are installed): timed inside R
  (``system.time``), its own ``ll``; by default only up to n = 10^4: it builds dense
  n x m matrices, and at 10^5 takes minutes (Case I) or runs out of memory (Case II on
  a 23 GB machine); ``--npsurv-max-n 100000`` to try.
* lifelines: ``lifelines.fitters.npmle.npmle`` at n = 2,000 only (about a minute each).

Last, privspec against itself at scale: the constrained Newton method step by step (one
pass over every row per Newton step) and by its working set (column generation, which
``cnm`` uses from ``_WORKING_SET_ROWS`` plain rows on), on the same design of
``--working-set-n`` Case-II intervals from the same start, in one run: seconds, the
ratio, full passes, and the gap between the two maxima.

Run:  python bench/npmle_speed.py [--sizes 10000 100000] [--repeat 3] [--npsurv-max-n N]
      [--lifelines-n 2000 | --lifelines-n 0] [--working-set-n 10000000 | --working-set-n 0]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
import warnings
from typing import Callable

import numpy as np

BOUND = 50.0


def case1(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y, u = rng.normal(size=n), rng.uniform(-9, 9, size=n)
    return np.where(y <= u, -BOUND, u), np.where(y <= u, u, BOUND)


def case2(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    u = np.sort(rng.uniform(-9, 9, size=(n, 2)), axis=1)
    left = np.where(y <= u[:, 0], -BOUND, np.where(y <= u[:, 1], u[:, 0], u[:, 1]))
    right = np.where(y <= u[:, 0], u[:, 0], np.where(y <= u[:, 1], u[:, 1], BOUND))
    return left, right


def mixture(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Case II with 20% of the values reported exactly (a large support)."""
    left, right = case2(n, seed)
    rng = np.random.default_rng(seed + 1)
    exact = rng.random(n) < 0.2
    y = rng.normal(size=n)
    return np.where(exact, y, left), np.where(exact, y, right)


def best(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def loglik_of_cdf(x: np.ndarray, F: np.ndarray, left: np.ndarray, right: np.ndarray) -> float:
    """sum log(F(r) - F(l)) for a right-continuous step function through (x, F); an
    exact point's probability is the jump at it."""
    def at(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(x, t, side="right") - 1
        return np.where(i >= 0, F[np.maximum(i, 0)], 0.0)

    def before(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(x, t, side="left") - 1
        return np.where(i >= 0, F[np.maximum(i, 0)], 0.0)

    prob = np.where(left == right, at(right) - before(right), at(right) - at(left))
    with np.errstate(divide="ignore"):
        return float(np.sum(np.log(prob)))


def run_surpyval(left: np.ndarray, right: np.ndarray, estimator: str | None, repeat: int):
    import surpyval

    kwargs = {} if estimator is None else {"turnbull_estimator": estimator}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, model = best(lambda: surpyval.Turnbull.fit(xl=left, xr=right, **kwargs), repeat)
    return t, loglik_of_cdf(np.asarray(model.x, float), np.asarray(model.F, float), left, right), \
        f"{model.iters} iterations"


def run_npsurv(left: np.ndarray, right: np.ndarray, folder: str):
    from privspec.backends.interval.npmle.estimator import aggregate_intervals

    l, r, c = aggregate_intervals(left, right)
    data = os.path.join(folder, "data.csv")
    np.savetxt(data, np.column_stack([l, r, c]), delimiter=",", fmt="%.17g", header="l,r,c", comments="")
    script = os.path.join(folder, "run.R")
    with open(script, "w") as fh:
        fh.write("suppressMessages(library(npsurv))\n"
                 "d <- read.csv(commandArgs(TRUE)[1])\n"
                 "t <- system.time(r <- npsurv(cbind(d$l, d$r), w = d$c))[['elapsed']]\n"
                 "cat(sprintf('%.17g %.6f %d %.3g', r$ll, t, r$numiter, r$maxgrad), '\\n')\n")
    out = subprocess.run(["Rscript", script, data], capture_output=True, text=True, check=True)
    ll, t, iters, maxgrad = out.stdout.split()
    return float(t), float(ll), f"{iters} iterations, maxgrad {float(maxgrad):.2g}"


def run_lifelines(left: np.ndarray, right: np.ndarray):
    from lifelines.fitters.npmle import npmle as lifelines_npmle

    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p, intervals = lifelines_npmle(left, right)
    t = time.perf_counter() - t
    p = p / p.sum()   # its log-odds line search leaves the sum off 1 by ~1e-11
    tl = np.array([i.left for i in intervals])
    tr = np.array([i.right for i in intervals])
    # closed intervals [l, r] (the same as (l, r] on data without ties), in chunks
    prob = np.concatenate([((left[s:s + 2000, None] <= tl) & (tr <= right[s:s + 2000, None])) @ p
                           for s in range(0, left.size, 2000)])
    return t, float(np.sum(np.log(prob))), ""


def have_npsurv() -> bool:
    if shutil.which("Rscript") is None:
        return False
    return subprocess.run(["Rscript", "-e", "library(npsurv)"], capture_output=True).returncode == 0


def have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--npsurv-max-n", type=int, default=10_000)
    ap.add_argument("--lifelines-n", type=int, default=2000, help="0 to skip lifelines")
    ap.add_argument("--no-mixture", action="store_true", help="skip the 20%% exact-points setting")
    ap.add_argument("--working-set-n", type=int, default=10_000_000,
                    help="Case-II intervals of the direct-against-working-set comparison (0 to skip)")
    args = ap.parse_args()

    from privspec.backends.interval.npmle.estimator import npmle

    npmle(*case2(1000, 0))   # warm up imports (threadpoolctl, scipy)
    peers = {"surpyval": have("surpyval"), "npsurv": have_npsurv(), "lifelines": have("lifelines")}
    print("peers:", ", ".join(f"{k} {'yes' if v else 'not installed'}" for k, v in peers.items()))
    runs = [(name, make, n) for n in args.sizes for name, make in (("Case I", case1), ("Case II", case2))]
    if not args.no_mixture:
        runs += [("Case II + 20% exact points", mixture, n) for n in args.sizes]
    if args.lifelines_n and peers["lifelines"]:
        runs = [(name, make, args.lifelines_n) for name, make in (("Case I", case1), ("Case II", case2))] + runs
    header = f"  {'solver':<34}{'time (s)':>10}{'time/ours':>11}{'loglik':>22}{'ours - theirs':>15}  notes"
    verdicts = []
    with tempfile.TemporaryDirectory() as folder:
        for name, make, n in runs:
            left, right = make(n, args.seed + n)
            t_ours, fit = best(lambda: npmle(left, right), args.repeat)
            print(f"\n{name}, n = {n:,} ({fit.intervals.shape[0]:,} innermost intervals, "
                  f"{int((fit.mass > 0).sum()):,} with mass)")
            print(header)
            print(f"  {'privspec npmle (' + fit.method + ')':<34}{t_ours:>10.3f}{1.0:>11.1f}{fit.loglik:>22.9f}"
                  f"{0.0:>15.2g}  kkt {fit.kkt:.1e}, {fit.iterations} iterations")
            rows = []
            if peers["surpyval"]:
                rows.append(("surpyval Turnbull (Kaplan-Meier)",
                             lambda: run_surpyval(left, right, "Kaplan-Meier", args.repeat)))
                rows.append(("surpyval Turnbull (default)", lambda: run_surpyval(left, right, None, args.repeat)))
            if peers["npsurv"] and n <= args.npsurv_max_n:
                rows.append(("R npsurv", lambda: run_npsurv(left, right, folder)))
            if peers["lifelines"] and n == args.lifelines_n:
                rows.append(("lifelines npmle", lambda: run_lifelines(left, right)))
            for label, fn in rows:
                try:
                    t, ll, note = fn()
                except (subprocess.CalledProcessError, MemoryError, OSError) as e:
                    why = getattr(e, "stderr", None) or str(e)
                    print(f"  {label:<34}  failed: {str(why).strip().splitlines()[-1][:90]}")
                    continue
                print(f"  {label:<34}{t:>10.3f}{t / t_ours:>11.1f}{ll:>22.9f}{fit.loglik - ll:>15.2g}  {note}")
            if name == "Case II" and n >= 100_000:
                ok = t_ours < 0.5 and fit.kkt <= 1e-8
                verdicts.append(f"target (10^5 Case II under 0.5 s, KKT <= 1e-8): "
                                f"{'met' if ok else 'NOT met'} ({t_ours:.3f} s, kkt {fit.kkt:.1e})")
    if args.working_set_n:
        working_set(args.working_set_n, args.seed)
    for v in verdicts:
        print("\n" + v)
    return 0


def working_set(n: int, seed: int) -> None:
    """The direct method and the working set on one design, from one start, in one run."""
    from privspec.backends.interval.npmle.data import as_rows, design_from_rows, row_probs
    from privspec.backends.core.blas import one_blas_thread
    from privspec.backends.interval.npmle.solver import cnm, initial

    des = design_from_rows(*as_rows(*case2(n, seed + n)))
    p0 = initial(des)
    print(f"\nCase II, n = {n:,}: {des.a.size:,} rows, {des.m:,} innermost intervals; "
          "cnm step by step against its working set (one BLAS thread)")
    with one_blas_thread():
        fits = {}
        for label, rows in (("direct", 10 ** 18), ("working set", 0)):
            t0 = time.perf_counter()
            fits[label] = (cnm(des, p0, tol=1e-10, max_iter=10_000, working_set_rows=rows), time.perf_counter() - t0)
    (d, td), (w, tw) = fits["direct"], fits["working set"]
    for label, (f, t) in fits.items():
        passes = f.iterations if f.rounds == 0 else f.rounds + 1
        print(f"  {label:<12}{t:>8.3f} s  {passes:>3} full passes, {f.iterations:>3} Newton steps, "
              f"loglik {f.loglik:.9f}, kkt {f.kkt:.1e}")
    gap = float(np.abs(row_probs(des, d.p)[0] - row_probs(des, w.p)[0]).max())
    print(f"  direct / working set: {td / tw:.2f}x; max |P_i difference| {gap:.1e}, "
          f"loglik difference {d.loglik - w.loglik:.2g}")


if __name__ == "__main__":
    raise SystemExit(main())
