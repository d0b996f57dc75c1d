"""``simulate``'s replications against a plain numpy script computing the same intervals (issue 38).

The row: ``privspec simulate specs/urn.privspec --n 1000 --reps 1000``, its MLE query
``w_mle`` (the MLE of the four colour shares with a profile likelihood interval per colour,
over every replication). In one run, alternating, best of --repeat:

* ``privspec``: ``spec.simulate(n, reps, seed, queries=["w_mle"])`` in this process (after
  one small warm-up simulation, so that imports and cached tables are not counted);
* ``numpy``: a plain script on the same seeded reports (the two-stage draws of
  :func:`privspec.backends.finite.simulate.draw_reports`, the channel ``K`` read from
  privspec once, untimed), vectorised across replications: the MLE by EM with SQUAREM on all
  replications at once, its standard errors from the Fisher information, and each
  colour's profile likelihood interval ``{c : 2 (l_hat - l_c) <= crit(c)}`` with the same
  boundary-aware critical value (Feldman-Cousins table), each end found by regula falsi
  (Illinois) on all replications, colours and ends at once, every ``l_c`` by EM with SQUAREM
  with the colour's mass held at c, warm-started from the end's previous fit.

Printed: both times (CPU seconds of this process), the ratio privspec / numpy, PASS when it
is at most 2 (the target), the largest difference between the two's mean estimates,
coverages and mean widths (the same intervals), and the load average. ``--command`` also
times the whole command (every query of the spec, a fresh process) for the record.

Run: ``python bench/simulate_speed.py [--n 1000] [--reps 1000] [--seed 1] [--repeat 3] [--command]``.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.optimize
import scipy.stats

SPEC = Path(__file__).resolve().parent.parent / "specs" / "urn.privspec"
TARGET = 2.0


# ---- the numpy script ---------------------------------------------------------------------------
def draws(K: np.ndarray, w: np.ndarray, n: int, reps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """True counts and report counts of each replication, as privspec draws them."""
    rng = np.random.default_rng(seed)
    x = rng.multinomial(n, w, size=reps)
    cols = K / K.sum(axis=0, keepdims=True)
    C = np.zeros((reps, K.shape[0]))
    for j in np.nonzero(w > 0)[0]:
        C += rng.multinomial(x[:, j], cols[:, j])
    return x / n, C


def em(K: np.ndarray, C: np.ndarray, W: np.ndarray, group: np.ndarray | None = None,
       mass: np.ndarray | None = None, tol: float = 1e-10) -> np.ndarray:
    """EM with SQUAREM (Varadhan and Roland 2008) on every row at once, until each row's KKT
    violation is below ``tol``; with ``group``/``mass`` (rows x p, rows) the group's mass is
    held at ``mass`` (the EM step rescales the group and the rest to their masses)."""
    n = C.sum(axis=1, keepdims=True)
    gr = np.zeros(W.shape, dtype=bool) if group is None else group
    m = np.zeros(len(W)) if mass is None else mass
    shares = np.where(gr, m[:, None], 1.0 - m[:, None])      # each coordinate's block mass

    def fix(V: np.ndarray, rs: np.ndarray) -> np.ndarray:
        ins = np.sum(V * gr[rs], axis=1, keepdims=True)
        out = np.sum(V * ~gr[rs], axis=1, keepdims=True)
        return V * shares[rs] / np.maximum(np.where(gr[rs], ins, out), 1e-300)

    def step(V: np.ndarray, rs: np.ndarray) -> np.ndarray:
        return fix(V * ((C[rs] / np.maximum(V @ K.T, 1e-300)) @ K) / n[rs], rs)

    def ll(V: np.ndarray, rs: np.ndarray) -> np.ndarray:
        return np.sum(C[rs] * np.log(np.maximum(V @ K.T, 1e-300)), axis=1)

    def violation(V: np.ndarray, rs: np.ndarray) -> np.ndarray:
        g = (C[rs] / np.maximum(V @ K.T, 1e-300)) @ K
        wg = V * g
        nu = np.where(gr[rs], np.sum(wg * gr[rs], axis=1, keepdims=True),
                      np.sum(wg * ~gr[rs], axis=1, keepdims=True)) / np.maximum(shares[rs], 1e-300)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(nu > 0, g / nu, np.where(g > 0, np.inf, 0.0))
        return np.max(np.where(shares[rs] > 0, ratio, -np.inf), axis=1) - 1.0

    W = W.copy()
    live = np.arange(len(W))
    for _ in range(20_000):
        w = W[live]
        w1 = step(w, live)
        w2 = step(w1, live)
        r, v = w1 - w, w2 - 2 * w1 + w
        nv = np.linalg.norm(v, axis=1)
        alpha = np.minimum(-np.linalg.norm(r, axis=1) / np.where(nv > 0, nv, 1.0), -1.0)[:, None]
        cand = w - 2 * alpha * r + alpha ** 2 * v
        ok = (nv > 0) & np.all(cand >= 0, axis=1)
        new = w2
        if ok.any():
            c = step(fix(cand[ok], live[ok]), live[ok])
            better = ll(c, live[ok]) >= ll(w2[ok], live[ok])
            new[np.nonzero(ok)[0][better]] = c[better]
        W[live] = new
        live = live[violation(new, live) >= tol]
        if not live.size:
            break
    return W


def critical_table(level: float = 0.95) -> tuple[np.ndarray, np.ndarray, float]:
    """The boundary-aware critical value of the deviance by distance to 0 in standard errors."""
    grid = np.linspace(0.0, 4.0, 401)
    lo, hi = scipy.stats.chi2.ppf(2 * level - 1, 1), scipy.stats.chi2.ppf(level, 1)

    def accept(c: float, mu: float) -> float:
        r = np.sqrt(c)
        low = mu - r if mu >= r else ((mu * mu - c) / (2 * mu) if mu > 0 else -np.inf)
        return scipy.stats.norm.cdf(r) - scipy.stats.norm.cdf(low - mu) - level

    crit = [scipy.optimize.brentq(accept, lo * (1 - 1e-12), hi * (1 + 1e-12), args=(mu,), xtol=1e-12) for mu in grid]
    return grid, np.array(crit), float(hi)


def numpy_script(K: np.ndarray, C: np.ndarray, table: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The MLE (reps x p) and the profile likelihood intervals (reps x p x 2) of every replication."""
    reps, p = C.shape[0], K.shape[1]
    n = C.sum(axis=1)
    W = em(K, C, np.full((reps, p), 1.0 / p))
    ll = np.sum(C * np.log(np.maximum(W @ K.T, 1e-300)), axis=1)
    lam = np.clip(W, 1e-12, None) @ K.T
    info = np.einsum("oi,ro,oj->rij", K, 1.0 / lam, K)                       # Fisher information in w
    B = np.vstack([np.eye(p - 1), -np.ones((1, p - 1))])
    avar = B @ np.linalg.inv(B.T @ info @ B) @ B.T
    se = np.sqrt(np.maximum(np.diagonal(avar, axis1=1, axis2=2), 0) / n[:, None])
    grid, crit, far = table
    # one problem per (replication, colour, end)
    rep, col, end = (a.ravel() for a in np.meshgrid(np.arange(reps), np.arange(p), np.arange(2), indexing="ij"))
    group = np.eye(p, dtype=bool)[col]
    sign, edge = np.where(end == 0, -1.0, 1.0), end.astype(float)
    c_hat, unit = W[rep, col], se[rep, col]
    warm = W[rep].copy()

    def f(idx: np.ndarray, c: np.ndarray) -> np.ndarray:
        """sign * sqrt(deviance / crit) - 1 at c: negative inside the interval."""
        start = np.where(group[idx], c[:, None], warm[idx] * (1 - c[:, None]) / np.maximum(
            np.sum(warm[idx] * ~group[idx], axis=1, keepdims=True), 1e-300))
        start = np.where(group[idx] | (start > 0), start, 0.0) * 0.999 + 0.001 / p
        fit = em(K, C[rep[idx]], start, group[idx], c)
        warm[idx] = fit
        dev = 2 * (ll[rep[idx]] - np.sum(C[rep[idx]] * np.log(np.maximum(fit @ K.T, 1e-300)), axis=1))
        cr = np.interp(np.minimum(c, 1 - c) / np.where(unit[idx] > 0, unit[idx], 1.0), grid, crit, right=far)
        return np.sqrt(np.maximum(dev, 0) / cr) - 1.0

    ends = edge.copy()
    todo = np.nonzero(np.abs(c_hat - edge) >= 1e-12)[0]
    f_edge = f(todo, edge[todo])
    todo = todo[f_edge > 0]                         # the end is inside (0, 1): regula falsi from c_hat to the edge
    a, b = c_hat[todo].copy(), edge[todo].copy()
    fa, fb = np.full(len(todo), -1.0), f_edge[f_edge > 0]
    x = b.copy()
    live = np.arange(len(todo))
    for _ in range(200):
        i = live
        x[i] = (a[i] * fb[i] - b[i] * fa[i]) / (fb[i] - fa[i])
        fx = f(todo[i], x[i])
        right = fx > 0                              # the root lies between a and x
        same_b = right & (fb[i] > 0)
        fa[i[same_b]] /= 2                          # Illinois: halve the stale end's value
        b[i[right]], fb[i[right]] = x[i[right]], fx[right]
        a[i[~right]], fa[i[~right]] = x[i[~right]], fx[~right]
        fb[i[~right]] /= 2
        live = i[(np.abs(b[i] - a[i]) > 1e-9) & (np.abs(fx) > 1e-12)]
        if not live.size:
            break
    ends[todo] = x
    return W, ends.reshape(reps, p, 2)


# ---- the run --------------------------------------------------------------------------------------
def cpu() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime + resource.getrusage(resource.RUSAGE_SELF).ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--command", action="store_true", help="also time the whole command (every query)")
    args = ap.parse_args()

    from privspec.backends.finite.truth import Truth
    from privspec.spec import Spec

    spec = Spec.load(SPEC)
    spec.simulate(args.n, 5, seed=args.seed, queries=["w_mle"], progress=False)      # warm-up: imports, tables
    truth = Truth(spec.model, spec.model.queries["w_mle"].mechanism)
    K = np.asarray(truth.full_channel.Kn, dtype=float)
    w = np.maximum(truth.numeric_w(truth.w_full), 0.0)
    w = w / w.sum()
    table = critical_table()
    times = {"privspec": [], "numpy": []}
    for _ in range(args.repeat):
        t = cpu()
        result = spec.simulate(args.n, args.reps, seed=args.seed, queries=["w_mle"], progress=False)["w_mle"]
        times["privspec"].append(cpu() - t)
        t = cpu()
        aims, C = draws(K, w, args.n, args.reps, args.seed)
        W, ci = numpy_script(K, C, table)
        times["numpy"].append(cpu() - t)
    v = result.value
    covered = np.mean((ci[..., 0] <= w) & (w <= ci[..., 1]), axis=0)
    width = np.mean(ci[..., 1] - ci[..., 0], axis=0)
    gaps = {"mean": np.abs(W.mean(axis=0) - np.array(v["mean"].values)).max(),
            "coverage": np.abs(covered - np.array(v["ci95_coverage"].values)).max(),
            "mean width": np.abs(width - np.array(v["ci95_mean_width"].values)).max()}
    ours, floor = min(times["privspec"]), min(times["numpy"])
    ratio = ours / floor
    print(f"simulate urn w_mle, n = {args.n:,}, reps = {args.reps:,}, seed {args.seed} "
          f"(load {os.getloadavg()[0]:.2f}, best of {args.repeat}, CPU seconds)")
    print(f"  privspec spec.simulate  {ours:7.2f} s")
    print(f"  numpy script            {floor:7.2f} s")
    print(f"  ratio privspec / numpy  {ratio:7.2f}x  (target <= {TARGET:g}x): {'PASS' if ratio <= TARGET else 'FAIL'}")
    print("  the same intervals: largest difference in " + ", ".join(f"{k} {g:.1e}" for k, g in gaps.items()))
    if args.command:
        t = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([str(Path(sys.executable).parent / "privspec"), "simulate", str(SPEC), "--n", str(args.n),
                        "--reps", str(args.reps), "--seed", str(args.seed), "--quiet"], check=True,
                       stdout=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(f"  the whole command (every query, fresh process): {after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime:.2f} s CPU, "
              f"{time.perf_counter() - t:.2f} s wall")


if __name__ == "__main__":
    main()
