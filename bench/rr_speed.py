"""Randomized response speed, measured side by side in one run; prints ratios.

1. Joint estimation from a d = 3, w-way report table (w = 2..8, the castell paper's
   Fig. 8): the naive ``(P_1 (x) ... (x) P_w)^-1 lambda`` (dense inverse), the reduced
   ``(P_1^-1 (x) ... (x) P_w^-1) lambda`` (dense Kronecker of the inverses) and castell
   (mode-wise, :func:`privspec.backends.core.kron.kron_solve`).  Target: castell >= 10x the
   reduced method at w = 6.
2. castell on a table of about 10^8 cells (10^8 = 10 categories, w = 8), with its peak
   memory against the table's size: the estimate <= 1.5x the table, with per-cell
   variances <= 2.5x (it returns two tables).  Falls back to 3^16 cells when less than
   6 GB is available.
3. GRR frequency estimation on the same n = 10^6 reports (d = 16) by privspec,
   multi-freq-ldpy and pure-ldp, and simulation (a replication's reports and estimate).
   Target: estimation >= 100x the peers.

    python bench/rr_speed.py            # about two minutes on a 2-core machine
    python bench/rr_speed.py --large 3^19   # item 2 alone at w = 19 (8.7 GiB table; 24 GB machine)
"""
from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pandas as pd

import privspec
from privspec.backends.core.estimators import mom
from privspec.backends.finite.data import count_observations, privatize_frame
from privspec.backends.core.compile import channel_of
from privspec.backends.core.kron import kron_dense, kron_solve
from privspec.backends.rr.castell import castell


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def grr(d: int, eps: float) -> np.ndarray:
    e = np.exp(eps)
    P = np.full((d, d), 1 / (e + d - 1))
    np.fill_diagonal(P, e / (e + d - 1))
    return P


def mem_available_gb() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable"):
                    return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return 8.0


def joint_methods() -> None:
    print("1. joint estimation, d = 3 (p = 0.5, as Fig. 8): seconds and ratios to castell")
    print(f"{'w':>3} {'cells':>6} {'naive':>10} {'reduced':>10} {'castell':>10} {'naive/c':>9} {'reduced/c':>10}")
    rng = np.random.default_rng(0)
    P = np.full((3, 3), 0.25)
    np.fill_diagonal(P, 0.5)
    K = P.T
    for w in range(2, 9):
        lam = rng.dirichlet(np.ones(3 ** w))
        mats = [K] * w
        t_c = best(lambda: kron_solve(mats, lam), 5)
        t_r = best(lambda: kron_dense([np.linalg.inv(K)] * w) @ lam, 2 if w < 8 else 1)
        if w <= 7:
            t_n = best(lambda: np.linalg.inv(kron_dense(mats)) @ lam, 2 if w < 7 else 1)
            naive = f"{t_n:10.4f}"
            ratio = f"{t_n / t_c:9.0f}"
        else:
            naive, ratio = f"{'skipped':>10}", f"{'-':>9}"  # 6561^3 flops, ~minutes
        print(f"{w:>3} {3 ** w:>6} {naive} {t_r:10.4f} {t_c:10.6f} {ratio} {t_r / t_c:10.0f}")
    print("   (naive skipped at w = 8: inverting a 6561 x 6561 matrix; reduced and naive need (3^w)^2 "
          "memory, castell 3^w)")


def large_table(shape: tuple[int, int] | None = None) -> None:
    """Item 2; ``shape`` ``(d, w)`` for a table of d^w cells instead of 10^8 (``--large 3^19``:
    the issue's w = 19, 8.7 GiB of float64, within 24 GB)."""
    d_, w_ = shape or (10, 8)
    cells, dims = d_ ** w_, (d_,) * w_
    if shape is None and mem_available_gb() < 6:
        dims = (3,) * 16
        cells = 3 ** 16
        print(f"2. castell on 3^16 = {cells:,} cells (less than 6 GB available for 10^8)")
    else:
        print(f"2. castell on {d_}^{w_} = {cells:,} cells ({d_} categories, w = {w_}; "
              f"{cells * 8 / 2 ** 30:.2f} GiB of float64)")
    rng = np.random.default_rng(1)
    counts = rng.random(cells)
    # a table of report counts (castell's input, not counted), made in place: at 3^19 a
    # second table would not fit beside the estimate in 24 GB
    counts *= 1e9 / counts.sum()
    np.round(counts, out=counts)
    mats = [grr(d, 1.0).T for d in dims]
    rows = [("estimate (variance=False)", lambda: castell(counts, mats, variance=False), 1.0, 1.5),
            ("estimate and per-cell variance", lambda: castell(counts, mats), 2.0, 2.5)]
    if counts.nbytes / 2 ** 30 * 2.6 > mem_available_gb():   # the table is allocated already
        print(f"   (the per-cell variance, two more tables of {counts.nbytes / 2 ** 30:.1f} GiB and more, would not "
              "fit in the memory available: the estimate alone)")
        rows = rows[:1]
    for name, fn, outputs, target in rows:
        tracemalloc.start()
        t0 = time.perf_counter()
        out = fn()
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        ratio = peak / counts.nbytes
        print(f"   castell {name}: {elapsed:.2f} s; peak allocated {peak / 2 ** 30:.2f} GiB = {ratio:.2f} x the "
              f"table ({outputs:.0f} of them returned); target <= {target:.1f}x: {'PASS' if ratio <= target else 'FAIL'}")
        del out


def peers() -> None:
    n, d, eps = 10 ** 6, 16, 1.0
    labels = [f"c{i}" for i in range(d)]
    spec = privspec.load("variable x: categorical {" + ", ".join(labels) + "}\n"
                         f"mechanism g = grr(x, epsilon = {eps})\n").model
    mech = spec.mechanisms["g"]
    rng = np.random.default_rng(2)
    x = rng.choice(d, size=n, p=rng.dirichlet(np.ones(d)))
    raw = pd.DataFrame({"x": np.asarray(labels, dtype=object)[x]})
    t_priv = best(lambda: privatize_frame(spec, mech, raw, seed=3), 1)
    reports = privatize_frame(spec, mech, raw, seed=3)
    y = reports["x"].str[1:].astype(int).to_numpy()
    ch = channel_of(mech)
    print(f"3. GRR, d = {d}, eps = {eps}, n = {n:,} (the same reports for everyone)")
    t_ours_str = best(lambda: mom(ch, count_observations(mech, reports)), 3)
    t_ours_int = best(lambda: mom(ch, np.bincount(y, minlength=d).astype(float)), 5)
    ours = mom(ch, np.bincount(y, minlength=d).astype(float)).w
    rows = [("privspec, from the report column (strings)", t_ours_str),
            ("privspec, from integer codes", t_ours_int)]
    peer_times = {}
    try:
        from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI, GRR_Client

        t = best(lambda: GRR_Aggregator_MI(y, d, eps), 1)
        peer_times["multi-freq-ldpy"] = t
        rows.append(("multi-freq-ldpy GRR_Aggregator_MI", t))
        theirs = GRR_Aggregator_MI(y, d, eps)
        assert np.allclose(theirs, np.maximum(ours, 0) / np.maximum(ours, 0).sum())
    except ImportError:
        GRR_Client = None
        print("   multi-freq-ldpy not installed")
    try:
        from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer

        def pure():
            server = DEServer(epsilon=eps, d=d, index_mapper=lambda v: v)
            for v in y:
                server.aggregate(int(v))
            return np.array([server.estimate(i, suppress_warnings=True) for i in range(d)]) / n

        t = best(pure, 1)
        peer_times["pure-ldp"] = t
        rows.append(("pure-ldp DEServer", t))
        assert np.allclose(pure(), ours)
    except ImportError:
        DEClient = None
        print("   pure-ldp not installed")
    for name, t in rows:
        print(f"   estimate  {name:<45} {t:9.4f} s")
    for peer, t in peer_times.items():
        print(f"   ratio {peer} / privspec: {t / t_ours_str:,.0f}x (from strings), {t / t_ours_int:,.0f}x (from codes)")
    # simulation: one replication of n reports and its estimate
    probs = ch.Kn @ np.bincount(x, minlength=d) / n
    t_sim = best(lambda: mom(ch, rng.multinomial(n, probs).astype(float)), 5)
    print(f"   simulate  privspec (multinomial counts + estimate)          {t_sim:9.5f} s")
    print(f"   privatize privspec (per respondent, strings in and out)     {t_priv:9.4f} s")
    if GRR_Client is not None:
        sub = x[:100_000]
        t = best(lambda: [GRR_Client(int(v), d, eps) for v in sub], 1) * n / len(sub)
        print(f"   privatize multi-freq-ldpy GRR_Client (extrapolated from 10^5) {t:9.4f} s "
              f"-> {t / t_priv:,.0f}x privspec's privatize, {t / t_sim:,.0f}x its simulation")
    if DEClient is not None:
        client = DEClient(epsilon=eps, d=d, index_mapper=lambda v: v)
        sub = x[:100_000]
        t = best(lambda: [client.privatise(int(v)) for v in sub], 1) * n / len(sub)
        print(f"   privatize pure-ldp DEClient (extrapolated from 10^5)        {t:9.4f} s "
              f"-> {t / t_priv:,.0f}x privspec's privatize, {t / t_sim:,.0f}x its simulation")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--large", metavar="D^W", help="only item 2, on a table of D^W cells (e.g. 3^19)")
    args = ap.parse_args()
    if args.large:
        d, w = (int(x) for x in args.large.split("^"))
        large_table((d, w))
    else:
        joint_methods()
        large_table()
        peers()
