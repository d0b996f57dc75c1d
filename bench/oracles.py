"""Local-DP frequency oracles: privatize + estimate of n in-memory records, privspec against the peers.

Every figure is measured in a fresh subprocess (this script run with ``--one CASE``), so
that its peak memory (VmHWM) is the case's own, on the same data: n category codes drawn
from a Zipf(1) distribution over d categories (seed 11), for each d in --d and epsilon in
--eps.

1. privspec through its core module :mod:`privspec.backends.oracles.pure`, per kind (grr, sue,
   oue, blh, olh, ss, hr): ``o = oracle(kind, d, eps)``, ``reports = privatize(o, codes,
   RowRandom(seed, rows=range(n)))``, ``unbiased(o, support_counts(o, reports), n)``.
   Best of --repeat calls; the first call (lazy imports, cold caches) is shown apart.
2. privspec end to end through the spec API (--spec-kinds, default oue, at d = 16 and 256
   where asked): ``spec.privatize(frame, "m", seed=1)`` of a column ``x`` (labels
   ``c0 .. c{d-1}``; --spec-input: as text, ``str``, every label then hashed once as for a
   column read from CSV, and as a pandas ``categorical``, whose codes are used as they
   are, as the peers are given codes) and ``spec.run(reports, ["q"], engine="pandas")`` of
   ``estimate distribution(x) from m by mom``.  Its reports are *text* (oue: the packed
   bits in hex): a categorical column of the distinct reports' texts where a report fits
   in 8 bytes (d <= 64), read back as distinct reports; beyond, Arrow text built from one
   buffer, whose bits the run counts row by row (no grouping of nearly all distinct texts).
3. The peers on the same codes, one record per Python call (client), then their
   aggregator on the list of reports:
   * multi-freq-ldpy (``multi_freq_ldpy.pure_frequency_oracles``): ``GRR_Client`` +
     ``GRR_Aggregator_MI``; ``UE_Client(v, d, eps, optimal)`` + ``UE_Aggregator_MI(reports,
     eps, optimal)`` (sue: optimal=False, oue: True); ``LH_Client(v, d, eps, optimal)`` +
     ``LH_Aggregator_MI(reports, d, eps, optimal)`` (blh: False, olh: True);
     ``SS_Client`` + ``SS_Aggregator_MI``.  GRR_Client, UE_Client and SS_Client are
     numba-jitted (LH_Client calls GRR_Client): their first calls compile, kept out of the
     clock and shown as "compile".
   * pure-ldp (``pure_ldp.core.fo_creator.create_fo_client_instance`` /
     ``create_fo_server_instance``): "DE" (grr), "UE" (``use_oue``), "LH" (``use_olh``;
     g = 2 without), "HR" (Hadamard response: ``Hadamard_Rand_high_priv`` for eps <= 1, the
     same mechanism as privspec's hr, but ``Hadamard_Rand_general_original``, a different
     mechanism with its own variance, for eps > 1; flagged "(general HR)") and
     "HadamardMech" (the Hadamard mechanism, t = ceil(log2(e^eps + 1)) coefficients: not a
     pure protocol of privspec's, shown with the hr row for information, left out of the
     ratio).  pure-ldp has no subset selection, multi-freq-ldpy no Hadamard response.
     ``FastLH`` (a fixed pool of k hash functions: a heuristic, not OLH) is not run.
   Both peers' local hashing calls ``xxhash.xxh32(str(v), seed)``, which xxhash >= 4
   rejects ("Strings must be encoded before hashing"): their modules get a stand-in that
   encodes the str first, and its measured cost per hash (beyond hashing ready bytes) is
   taken off their times, in their favour; the time with it is printed too.
   A peer whose run at n would pass --peer-budget seconds (estimated on a first 500
   records) or whose list of reports would pass --peer-mem MiB (unary encoding keeps a
   float array of d per record) is timed on a subsample of n_peer = min(--peer-n, what
   the budget and memory allow) records and its time scaled linearly to n (client calls
   and aggregation are linear in the records): marked ``*`` with n_peer given.  Its
   peak memory is the subsample's.  Peers run best of --repeat while within the budget.

Target: privspec >= 10x faster than the faster peer (same oracle), per (oracle, d, eps),
for the core module (1): a PASS/FAIL per row.  That is the like-for-like measure: both
sides start from the same integer codes and end with the estimates, their reports held
in memory between the two steps, and it is the cycle ``privspec simulate`` runs for each
simulated survey.  The end-to-end rows (2) do more than the peers do (they write every
report as text, a data column a user can save, and read the text back; a ``str`` input
is hashed label by label first) and are printed with their ratio for information, not
judged against the target.

4. The variance ranking from the closed forms: ``n Var(f_hat_v)`` at f = 0
   (``variance_formula(oracle(kind, d, eps), exact=False)`` at F = 0, Wang et al.'s Eq.
   (1)) for d in 2, 4, 16, 64, 256, 4096 and eps in 0.5, 1, 2, 4, the oracles sorted, and
   checked against the literature (Wang, Blocki, Li, Jha, USENIX Security 2017): among
   their five (grr, sue, oue, blh, olh) GRR is best iff d < 3 e^eps + 2, else OUE and OLH
   are best and equal (within 5%: OLH's g is rounded); SUE is worse than OUE; BLH is the
   worst of the d-independent oracles (sue, oue, blh, olh, hr) at large eps (>= 2; HR ties
   it: at f = 0 both are ((e^eps + 1)/(e^eps - 1))^2); HR is within 10% of OUE/OLH at
   small eps (0.5) and falls behind as eps grows.  Subset selection (Ye & Barg 2018, not
   in Wang et al.) is ranked too; where it is worse than GRR or OUE that is printed (the
   rounded k = rint(d / (e^eps + 1)) is not always the minimizer).

    python bench/oracles.py                       # the full grid: an hour or more on 2 cores
    python bench/oracles.py --quick               # n = 1e5, d = 16, 256: a smoke run
    python bench/oracles.py --kinds grr,oue --d 16 --eps 1 --peers multi-freq-ldpy

Timings are never asserted in tests: this prints, a person reads.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

from measure import fmt_n, peak_mib, size  # bench/ is sys.path[0] when a script runs

KINDS = ("grr", "sue", "oue", "blh", "olh", "ss", "hr")
PEERS = ("multi-freq-ldpy", "pure-ldp")
#: which kinds each peer has ("hm": pure-ldp's Hadamard mechanism, shown with hr, not in the ratio)
PEER_KINDS = {"multi-freq-ldpy": ("grr", "sue", "oue", "blh", "olh", "ss"),
              "pure-ldp": ("grr", "sue", "oue", "blh", "olh", "hr", "hm")}
RANK_D = (2, 4, 16, 64, 256, 4096)
RANK_EPS = (0.5, 1.0, 2.0, 4.0)
TARGET = 10.0
CALIBRATE = 500     # records timed first to size a peer's run


# ---- helpers ------------------------------------------------------------------------------------
def population(d: int) -> np.ndarray:
    """Zipf(1) frequencies over d categories."""
    w = 1.0 / np.arange(1, d + 1)
    return w / w.sum()


def codes_of(d: int, n: int) -> np.ndarray:
    return np.random.default_rng(11).choice(d, size=n, p=population(d)).astype(np.int64)


def max_err(est, x: np.ndarray, d: int) -> float:
    """max |f_hat - f| against the sample's own frequencies."""
    truth = np.bincount(x, minlength=d) / len(x)
    return float(np.max(np.abs(np.asarray(est, dtype=float) - truth)))


def run_one(args: argparse.Namespace, case: str, **params) -> dict:
    """One measurement in a fresh interpreter; its JSON line back."""
    cmd = [sys.executable, os.path.abspath(__file__), "--one", case, "--repeat", str(args.repeat),
           "--params", json.dumps(params)]
    nan = float("nan")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.case_timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": nan, "peak_mib": nan, "error": f"timed out after {args.case_timeout:g} s (--case-timeout)"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.stderr.write(proc.stderr[-2000:])
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1], "seconds": nan, "peak_mib": nan}
    return json.loads(lines[-1])


# ---- the peers ----------------------------------------------------------------------------------
class _StrXXHash:
    """Stands in for the ``xxhash`` module inside the peers' local-hashing code: they hash
    ``str(v)``, which xxhash >= 4 rejects ("Strings must be encoded before hashing"; older
    versions hashed its UTF-8 bytes), so ``xxh32`` encodes str first.  Its cost per call
    beyond a direct ``xxh32`` of ready bytes is measured (:func:`shim_overhead`) and taken
    off the peer's time: the correction favours the peer (it takes off the encoding too)."""

    def __init__(self) -> None:
        import xxhash

        self._x = xxhash.xxh32

    def xxh32(self, data, seed=0):
        return self._x(data.encode() if isinstance(data, str) else data, seed=seed)


def patch_xxhash() -> bool:
    """Put :class:`_StrXXHash` into the peers' local-hashing modules when this xxhash rejects
    str; True when it did."""
    import xxhash

    try:
        xxhash.xxh32("1", seed=1)
        return False
    except TypeError:
        pass
    shim = _StrXXHash()
    import multi_freq_ldpy.pure_frequency_oracles.LH as mf_lh
    from pure_ldp.frequency_oracles.local_hashing import lh_client, lh_server

    for mod in (mf_lh, lh_client, lh_server):
        mod.xxhash = shim
    return True


def shim_overhead(calls: int = 200_000) -> float:
    """Seconds per call that :class:`_StrXXHash` adds to ``xxh32(bytes, seed).intdigest()``
    (best of 5)."""
    import xxhash

    shim, direct = _StrXXHash(), xxhash.xxh32
    strs = [str(i % 4096) for i in range(calls)]
    raw = [s.encode() for s in strs]
    seed = 123456789

    def t(fn, data):
        best_t = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for s in data:
                fn(s, seed=seed).intdigest()
            best_t = min(best_t, time.perf_counter() - t0)
        return best_t

    return max(0.0, (t(shim.xxh32, strs) - t(direct, raw)) / calls)


def make_peer(peer: str, kind: str, d: int, eps: float):
    """``(client, aggregate, bytes_per_report, label)``: ``client(v)`` privatizes one code (a
    Python int), ``aggregate(reports, n)`` returns the estimated frequencies (length d)."""
    if peer == "multi-freq-ldpy":
        if kind == "grr":
            from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI, GRR_Client
            return (lambda v: GRR_Client(v, d, eps), lambda r, n: GRR_Aggregator_MI(r, d, eps), 36,
                    "GRR_Client + GRR_Aggregator_MI")
        if kind in ("sue", "oue"):
            from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_MI, UE_Client
            opt = kind == "oue"
            return (lambda v: UE_Client(v, d, eps, opt), lambda r, n: UE_Aggregator_MI(r, eps, opt), 8 * d + 120,
                    f"UE_Client(optimal={opt}) + UE_Aggregator_MI")
        if kind in ("blh", "olh"):
            from multi_freq_ldpy.pure_frequency_oracles.LH import LH_Aggregator_MI, LH_Client
            opt = kind == "olh"
            return (lambda v: LH_Client(v, d, eps, opt), lambda r, n: LH_Aggregator_MI(r, d, eps, opt), 130,
                    f"LH_Client(optimal={opt}) + LH_Aggregator_MI")
        if kind == "ss":
            from multi_freq_ldpy.pure_frequency_oracles.SS import SS_Aggregator_MI, SS_Client
            k = int(max(1, np.rint(d / (np.exp(eps) + 1))))
            return (lambda v: SS_Client(v, d, eps), lambda r, n: SS_Aggregator_MI(r, d, eps), 8 * k + 120,
                    "SS_Client + SS_Aggregator_MI")
    elif peer == "pure-ldp":
        from pure_ldp.core.fo_creator import create_fo_client_instance, create_fo_server_instance

        ident = lambda v: v  # noqa: E731  (codes are 0 .. d-1 already; the default maps x -> x - 1)
        base = {"epsilon": eps, "d": d, "index_mapper": ident}
        if kind == "grr":
            name, params, nbytes, label = "DE", base, 36, "DE (DEClient/DEServer)"
        elif kind in ("sue", "oue"):
            name, params, nbytes = "UE", {**base, "use_oue": kind == "oue"}, 8 * d + 120
            label = f"UE(use_oue={kind == 'oue'})"
        elif kind in ("blh", "olh"):
            name, params, nbytes = "LH", {**base, "use_olh": kind == "olh"}, 130
            label = f"LH(use_olh={kind == 'olh'})"
        elif kind == "hr":
            name, params, nbytes = "HR", base, 36
            label = "HR (HadamardResponse)" + (" (general HR)" if eps > 1 else "")
        elif kind == "hm":
            t = math.ceil(math.log2(math.e ** eps + 1))
            name, params, nbytes = "HadamardMech", {**base, "t": t, "use_optimal_t": True}, 130 * t + 60
            label = f"HadamardMech (t = {t})"
        else:
            raise ValueError(f"pure-ldp has no {kind}")
        make_server = lambda: create_fo_server_instance(name, params)  # noqa: E731
        server0 = make_server()
        cparams = dict(params)
        if name == "HR":   # the client needs the server's permutation (eps > 1; None otherwise)
            cparams["hash_funcs"] = server0.get_hash_funcs()
        client = create_fo_client_instance(name, cparams)
        first = [server0]

        def aggregate(reports, n):
            server = first.pop() if first else make_server()
            if name == "HR":   # the client's permutation (eps > 1) and its inverse: server0's coder
                server.hr = server0.hr
            for r in reports:
                server.aggregate(r)
            return np.asarray(server.estimate_all(range(d), suppress_warnings=True), dtype=float) / n

        return client.privatise, aggregate, nbytes, label
    raise ValueError(f"{peer} has no {kind}")


# ---- the measurements, one per subprocess ------------------------------------------------------
def one(case: str, p: dict, repeat: int) -> dict:
    d, eps, n = p["d"], p["eps"], p["n"]
    if case == "core":
        from privspec.backends.oracles.pure import oracle, privatize, support_counts, unbiased
        from privspec.backends.core.rowrandom import RowRandom

        x = codes_of(d, n)
        o = oracle(p["kind"], d, eps)
        base = peak_mib()

        def ours():
            t0 = time.perf_counter()
            reports = privatize(o, x, RowRandom(1, rows=range(n)))
            t1 = time.perf_counter()
            est = unbiased(o, support_counts(o, reports), n)
            nbytes = reports.nbytes
            del reports
            return t1 - t0, time.perf_counter() - t1, est, nbytes

        first = ours()
        runs = [ours() for _ in range(max(repeat, 1))]
        tp, te, est, nbytes = min(runs, key=lambda r: r[0] + r[1])
        return {"privatize": tp, "estimate": te, "seconds": tp + te, "first": first[0] + first[1],
                "report_mib": nbytes / 2 ** 20, "max_err": max_err(est, x, d), "peak_mib": peak_mib(),
                "base_mib": base}
    if case == "spec":
        import pandas as pd

        import privspec

        labels = [f"c{i}" for i in range(d)]
        spec = privspec.load("variable x: categorical {" + ", ".join(labels) + "}\n"
                             f"mechanism m = {p['kind']}(x, epsilon = {eps!r})\n"
                             "query q = estimate distribution(x) from m by mom\n")
        x = codes_of(d, n)
        if p.get("input") == "categorical":      # a pandas categorical: its codes, no string hashed
            frame = pd.DataFrame({"x": pd.Categorical.from_codes(x, categories=labels)})
        else:
            frame = pd.DataFrame({"x": np.asarray(labels, dtype=object)[x]})
        base = peak_mib()

        def ours():
            t0 = time.perf_counter()
            reports = spec.privatize(frame, "m", seed=1)
            t1 = time.perf_counter()
            res = spec.run(reports, ["q"], engine="pandas")
            sample = str(reports["x"].iloc[0])
            del reports
            return t1 - t0, time.perf_counter() - t1, res, sample

        first = ours()
        runs = [ours() for _ in range(max(repeat, 1))]
        tp, te, res, sample = min(runs, key=lambda r: r[0] + r[1])
        try:
            params = res["q"].params
            est = np.asarray(getattr(params, "values", params), dtype=float)
            err = max_err(est, x, d)
        except Exception:   # noqa: BLE001  (the error check is a sanity figure only)
            err = float("nan")
        return {"privatize": tp, "estimate": te, "seconds": tp + te, "first": first[0] + first[1],
                "sample_report": sample, "max_err": err, "peak_mib": peak_mib(), "base_mib": base}
    if case == "peer":
        import random

        kind = p["kind"]
        x = codes_of(d, n)
        xs = [int(v) for v in x]                     # Python ints: one signature for numba
        np.random.seed(5)
        random.seed(5)
        if p["peer"] == "multi-freq-ldpy":     # imports before the clock: "compile" is the first calls
            import multi_freq_ldpy.pure_frequency_oracles  # noqa: F401
        else:
            import pure_ldp.core.fo_creator  # noqa: F401
        shim = 0.0
        if kind in ("blh", "olh") and patch_xxhash():
            shim = shim_overhead()
        t0 = time.perf_counter()
        client, aggregate, nbytes, label = make_peer(p["peer"], kind, d, eps)
        # the first calls: numba compiles the jitted clients (and what they call) here
        aggregate([client(xs[0]), client(xs[-1])], 2)
        compile_s = time.perf_counter() - t0

        def run(m):
            t0 = time.perf_counter()
            reports = [client(v) for v in xs[:m]]
            t1 = time.perf_counter()
            est = aggregate(reports, m)
            t2 = time.perf_counter()
            del reports
            return t1 - t0, t2 - t1, est

        m0 = min(n, CALIBRATE)
        cp, ce, _ = run(m0)
        per = (cp + ce) / m0
        budget, mem = p["budget"], p["mem_mib"] * 2 ** 20
        if per * n <= budget and n * nbytes <= mem:
            m = n
        else:
            m = int(min(p["peer_n"], n, budget / per, mem / nbytes))
            m = max(m, m0)
        base = peak_mib()
        runs, spent = [], 0.0
        while len(runs) < max(repeat, 1):
            r = run(m)
            runs.append(r)
            spent += r[0] + r[1]
            if spent + r[0] + r[1] > budget:
                break
        tp, te, est = min(runs, key=lambda r: r[0] + r[1])
        raw = tp + te
        # the str-encoding shim's cost taken off: one hash per client call, d per aggregated report
        tp, te = max(tp - m * shim, 0.0), max(te - m * d * shim, 0.0)
        scale = n / m
        return {"label": label, "privatize": tp * scale, "estimate": te * scale, "seconds": (tp + te) * scale,
                "raw_seconds": raw * scale, "shim_ns": shim * 1e9, "n_timed": m, "runs": len(runs),
                "extrapolated": m < n, "compile": compile_s, "max_err": max_err(est, x[:m], d),
                "peak_mib": peak_mib(), "base_mib": base}
    raise SystemExit(f"unknown case {case}")


# ---- the variance ranking -----------------------------------------------------------------------
def variance_table() -> dict[tuple[int, float], dict[str, float]]:
    """``n Var(f_hat_v)`` at f = 0 per (d, eps) and kind, from the closed forms."""
    from privspec.backends.oracles.protocol import F
    from privspec.backends.oracles.pure import oracle, variance_formula

    return {(d, e): {k: float(variance_formula(oracle(k, d, e), exact=False).subs(F, 0)) for k in KINDS}
            for d in RANK_D for e in RANK_EPS}


def ranking() -> list[tuple[str, str, str, bool | None]]:
    table = variance_table()
    print("\n4. variance ranking: n Var(f_hat_v) at f = 0 (closed forms, Wang et al. Eq. (1)), best first "
          "(= : equal to 1e-9); d* = 3 e^eps + 2")
    checks = {"wang": [], "sue": [], "blh": [], "hr": []}
    ss_notes = []
    for (d, e), v in table.items():
        order = sorted(v, key=lambda k: (v[k], k))
        parts = [f"{order[0]} {v[order[0]]:.4g}"]
        for a, b in zip(order, order[1:]):
            parts.append(("= " if math.isclose(v[a], v[b], rel_tol=1e-9) else "< ") + f"{b} {v[b]:.4g}")
        star = 3 * math.exp(e) + 2
        print(f"   d = {d:>4}  eps = {e:<3}  d* = {star:6.1f}  " + " ".join(parts))
        wang = {k: v[k] for k in ("grr", "sue", "oue", "blh", "olh")}
        best = min(wang, key=wang.get)
        if d < star:
            ok = best == "grr"
        else:
            ok = best in ("oue", "olh") and abs(v["olh"] / v["oue"] - 1) <= 0.05
        checks["wang"].append((ok, f"d={d} eps={e}: best of Wang's five {best}"))
        checks["sue"].append((v["sue"] > v["oue"], f"d={d} eps={e}: sue {v['sue']:.4g} vs oue {v['oue']:.4g}"))
        if e >= 2:
            indep = {k: v[k] for k in ("sue", "oue", "blh", "olh", "hr")}
            worst = max(indep.values())
            checks["blh"].append((math.isclose(v["blh"], worst, rel_tol=1e-9),
                                  f"d={d} eps={e}: blh {v['blh']:.4g}, worst {worst:.4g}"))
        if v["ss"] > min(v["grr"], v["oue"]) * (1 + 1e-9):
            k = int(max(1, np.rint(d / (np.exp(e) + 1))))
            ss_notes.append(f"d={d} eps={e} (k={k}): ss {v['ss']:.4g} > min(grr, oue) {min(v['grr'], v['oue']):.4g}")
    # HR against the better of OUE/OLH (d-independent: read at one d)
    ratios = {e: table[(RANK_D[-1], e)]["hr"] / min(table[(RANK_D[-1], e)]["oue"], table[(RANK_D[-1], e)]["olh"])
              for e in RANK_EPS}
    hr_ok = ratios[min(RANK_EPS)] <= 1.10 and all(ratios[a] < ratios[b] for a, b in zip(RANK_EPS, RANK_EPS[1:]))
    print("   hr / min(oue, olh): " + ", ".join(f"eps {e}: {r:.3f}" for e, r in ratios.items()))
    blh_ratio = {e: table[(RANK_D[-1], e)]["blh"] / table[(RANK_D[-1], e)]["oue"] for e in RANK_EPS}
    print("   blh / oue:          " + ", ".join(f"eps {e}: {r:.3f}" for e, r in blh_ratio.items()))
    print("   (HR and BLH have the same p* = e^eps/(e^eps + 1), q* = 1/2, so the same variance, "
          "((e^eps + 1)/(e^eps - 1))^2 at f = 0; they differ in the covariances)")
    big = [(d, e) for (d, e), v in table.items() if e >= 2 and v["grr"] > v["blh"]]
    if big:
        print("   (GRR, whose variance grows with d, is worse than BLH at " +
              ", ".join(f"d={d} eps={e}" for d, e in big) + ")")
    if ss_notes:
        print("   subset selection worse than GRR or OUE (info, not a verdict): " + "; ".join(ss_notes))
    out = []
    for key, claim in (("wang", "GRR best iff d < 3e^eps+2, else OUE ~ OLH best"),
                       ("sue", "SUE worse than OUE"),
                       ("blh", "BLH worst of sue/oue/blh/olh/hr, eps >= 2")):
        bad = [msg for ok, msg in checks[key] if not ok]
        print(f"   {claim}: {'holds at all ' + str(len(checks[key])) + ' points' if not bad else 'FAILS at ' + '; '.join(bad)}")
        out.append((f"ranking: {claim}", "Wang et al. 2017", f"{len(checks[key]) - len(bad)}/{len(checks[key])}",
                    not bad))
    print(f"   HR within 10% of OUE/OLH at eps = {min(RANK_EPS)}, further behind as eps grows: "
          f"{'holds' if hr_ok else 'FAILS'}")
    out.append(("ranking: HR ~ OUE/OLH at small eps", "<= 1.10x at eps 0.5", f"{ratios[min(RANK_EPS)]:.3f}x", hr_ok))
    return out


# ---- the driver ---------------------------------------------------------------------------------
def cell(r: dict | None, key: str = "seconds", f: str = "9.3f") -> str:
    w = int(f.split(".")[0])
    if r is None:
        return f"{'-':>{w}}"
    v = r.get(key, float("nan"))
    if v != v:
        return f"{'ERR':>{w}}"
    return f"{v:{f}}"


def peer_cell(r: dict | None, w: int = 10) -> str:
    if r is None:
        return f"{'-':>{w}}"
    v = r.get("seconds", float("nan"))
    if v != v:
        return f"{'ERR':>{w}}"
    return f"{v:{w - 1}.2f}{'*' if r.get('extrapolated') else ' '}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", default=None, help="domain sizes (default 16,256,4096; --quick: 16,256)")
    ap.add_argument("--eps", default="1,4", help="epsilons")
    ap.add_argument("--n", default=None, help="records (default 1e6; --quick: 1e5)")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--peer-n", default="1e5", help="records a peer is timed on when n would pass the budget")
    ap.add_argument("--peer-budget", type=float, default=60.0,
                    help="seconds a peer's run may take before it is timed on a subsample and extrapolated")
    ap.add_argument("--peer-mem", type=float, default=2048.0,
                    help="MiB a peer's list of reports may take before it is subsampled")
    ap.add_argument("--spec-kinds", default="oue",
                    help="mechanisms run end to end through the spec API ('' or none: no such rows)")
    ap.add_argument("--spec-d", default="16,256", help="domain sizes of the end-to-end rows (those also in --d)")
    ap.add_argument("--spec-input", default="str,categorical",
                    help="the raw column of the end-to-end rows: str (text), categorical, or both")
    ap.add_argument("--no-ranking", action="store_true", help="skip the variance ranking")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many calls per subprocess")
    ap.add_argument("--case-timeout", type=float, default=600.0, help="seconds one measurement may take")
    ap.add_argument("--quick", action="store_true", help="smoke run: n = 1e5, d = 16 and 256 (unless --n/--d given)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--params", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, json.loads(args.params), args.repeat)), flush=True)
        return
    if args.n is None:
        args.n = "1e5" if args.quick else "1e6"
    if args.d is None:
        args.d = "16,256" if args.quick else "16,256,4096"
    n = size(args.n)
    ds = [size(v) for v in args.d.split(",")]
    epss = [float(v) for v in args.eps.split(",")]
    kinds = [k for k in args.kinds.split(",") if k]
    peers = [p for p in args.peers.split(",") if p]
    for k in kinds:
        if k not in KINDS:
            raise SystemExit(f"unknown kind {k}: one of {', '.join(KINDS)}")
    for pe in peers:
        if pe not in PEERS:
            raise SystemExit(f"unknown peer {pe}: one of {', '.join(PEERS)}")
    spec_ds = [d for d in (size(v) for v in args.spec_d.split(",") if v) if d in ds]
    spec_kinds = [k for k in args.spec_kinds.split(",") if k and k != "none"]
    spec_inputs = [v for v in args.spec_input.split(",") if v]
    peer_n = size(args.peer_n)

    print(f"privspec frequency-oracle bench: n = {fmt_n(n)} in-memory records (Zipf(1) codes), d in {ds}, "
          f"eps in {epss}; {os.cpu_count()} cores; every figure from a fresh subprocess (peak = VmHWM; "
          f"best of {args.repeat}); peers over --peer-budget {args.peer_budget:g} s or --peer-mem "
          f"{args.peer_mem:g} MiB at n: timed on at most --peer-n {fmt_n(peer_n)} records and scaled to n (*)")
    summary: list[tuple[str, str, str, bool | str | None]] = []
    results: dict[tuple[str, int, float], dict] = {}

    print("\n1 + 3. privatize + estimate, seconds at n (privspec core: privatize(o, codes, RowRandom) + "
          "unbiased(support_counts); peers: one client call per record + their aggregator)")
    hdr = (f"{'kind':<5} {'d':>5} {'eps':>4} {'privspec':>9} {'priv':>7} {'est':>7} {'1st':>7} {'MiB':>6} "
           + "".join(f"{pe + ' s':>16} {'MiB':>6}" for pe in peers) + f" {'faster/ours':>11}  max|err| ours/peers")
    print(hdr)
    for kind in kinds:
        for d in ds:
            for eps in epss:
                ours = run_one(args, "core", kind=kind, d=d, eps=eps, n=n)
                row = {"ours": ours}
                for pe in peers:
                    if kind in PEER_KINDS[pe]:
                        row[pe] = run_one(args, "peer", peer=pe, kind=kind, d=d, eps=eps, n=n, peer_n=peer_n,
                                          budget=args.peer_budget, mem_mib=args.peer_mem)
                if kind == "hr" and "pure-ldp" in peers:
                    row["hm"] = run_one(args, "peer", peer="pure-ldp", kind="hm", d=d, eps=eps, n=n, peer_n=peer_n,
                                        budget=args.peer_budget, mem_mib=args.peer_mem)
                results[(kind, d, eps)] = row
                times = [row[pe]["seconds"] for pe in peers if pe in row and row[pe]["seconds"] == row[pe]["seconds"]]
                faster = min(times) if times else float("nan")
                ratio = faster / ours["seconds"]
                errs = "/".join(f"{row[k]['max_err']:.3g}" if "max_err" in row[k] else "ERR"
                                for k in ["ours", *[pe for pe in peers if pe in row]])
                print(f"{kind:<5} {d:>5} {eps:>4g} {cell(ours)} {cell(ours, 'privatize', '7.3f')} "
                      f"{cell(ours, 'estimate', '7.3f')} {cell(ours, 'first', '7.3f')} {cell(ours, 'peak_mib', '6.0f')} "
                      + "".join(f"{peer_cell(row.get(pe), 16)} {cell(row.get(pe), 'peak_mib', '6.0f')}" for pe in peers)
                      + (f" {ratio:10.1f}x" if ratio == ratio else f" {'n/a':>11}") + f"  {errs}", flush=True)
                for key in ["ours", *peers, "hm"]:
                    r = row.get(key)
                    if r is None:
                        continue
                    if "error" in r:
                        print(f"      {key}: error: {r['error']}")
                    elif key != "ours":
                        what = "pure-ldp HadamardMech (info, not in the ratio)" if key == "hm" else key
                        ext = (f"timed on n_peer = {fmt_n(r['n_timed'])} and scaled x{n / r['n_timed']:.3g} to "
                               f"{fmt_n(n)} (extrapolated)" if r["extrapolated"] else f"timed at n = {fmt_n(n)}")
                        numba = " (numba compiling)" if key == "multi-freq-ldpy" else ""
                        extra = f"; total {r['seconds']:.2f} s, peak {r['peak_mib']:.0f} MiB" if key == "hm" else ""
                        if r.get("shim_ns"):
                            extra += (f"; xxhash str shim ({r['shim_ns']:.0f} ns/hash) taken off: "
                                      f"{r['raw_seconds']:.2f} s with it")
                        print(f"      {what}: {r['label']}: privatize {r['privatize']:.2f} s + estimate "
                              f"{r['estimate']:.2f} s, {ext}, best of {r['runs']}; first calls{numba} "
                              f"{r['compile']:.2f} s (not in the time){extra}")
                name = f"{kind} d={d} eps={eps:g}: faster peer / privspec"
                summary.append((name, f">= {TARGET:g}x", f"{ratio:.1f}x" if ratio == ratio else "n/a",
                                ratio >= TARGET if ratio == ratio else None))

    if spec_kinds and spec_ds:
        print("\n2. privspec end to end through the spec API: spec.privatize(frame, 'm', seed=1) of a string "
              "column + spec.run(reports, ['q'], engine='pandas') (estimate distribution(x) from m by mom); "
              "the reports are text (categorical over the distinct reports when d <= 64), parsed back by the run")
        print("   input: the raw column as text (str: every label hashed once, as for a column read from "
              "CSV) or as a pandas categorical (its codes, as the peers are given)")
        print("   (information, not the target: these rows also write every report as text and read it back, "
              "which the peers' in-memory reports never are; the target is judged on 1 + 3)")
        print(f"{'mechanism':<10} {'input':<11} {'d':>5} {'eps':>4} {'privatize':>9} {'run':>9} {'total':>9} {'1st':>8} "
              f"{'peak MiB':>8} {'faster peer':>11} {'ratio':>7}  report e.g.")
        for kind, d, eps, given in itertools.product(spec_kinds, spec_ds, epss, spec_inputs):
            r = run_one(args, "spec", kind=kind, d=d, eps=eps, n=n, input=given)
            row = results.get((kind, d, eps))
            if row is None:   # the peers of this configuration were not run above: run them now
                row = {pe: run_one(args, "peer", peer=pe, kind=kind, d=d, eps=eps, n=n, peer_n=peer_n,
                                   budget=args.peer_budget, mem_mib=args.peer_mem)
                       for pe in peers if kind in PEER_KINDS[pe]}
                results[(kind, d, eps)] = row
            times = [row[pe]["seconds"] for pe in peers if pe in row and row[pe]["seconds"] == row[pe]["seconds"]]
            faster = min(times) if times else float("nan")
            ratio = faster / r["seconds"]
            print(f"{kind:<10} {given:<11} {d:>5} {eps:>4g} {cell(r, 'privatize')} {cell(r, 'estimate')} {cell(r)} "
                  f"{cell(r, 'first', '8.3f')} {cell(r, 'peak_mib', '8.0f')} {faster:11.2f} "
                  + (f"{ratio:6.1f}x" if ratio == ratio else f"{'n/a':>7}") + "  "
                  + f"{r.get('sample_report', '')!r}", flush=True)
            if "error" in r:
                print(f"      error: {r['error']}")
            for pe in peers:
                if pe in row and "error" in row[pe]:
                    print(f"      {pe}: error: {row[pe]['error']}")
            # information, not the target (see the module's docstring): a verdict of "info"
            summary.append((f"spec e2e {kind} {given} d={d} eps={eps:g}: peer / privspec", "(info: text reports)",
                            f"{ratio:.1f}x" if ratio == ratio else "n/a", "info"))

    if not args.no_ranking:
        summary.extend(ranking())

    print("\nsummary (* in the table: a peer timed on a subsample and scaled linearly to n)")
    print(f"{'check':<56} {'target':<22} {'measured':>9}  verdict")
    for name, target, got, ok in summary:
        verdict = ok if isinstance(ok, str) else "n/a" if ok is None else "PASS" if ok else "FAIL"
        print(f"{name:<56} {target:<22} {got:>9}  {verdict}")


if __name__ == "__main__":
    main()
