"""Engines at scale: privspec's aggregation against the floor measured in the same run.

Every figure is measured in a fresh subprocess (this script run with ``--one CASE``), so
that its peak memory (VmHWM) is the case's own; the floor of each case runs the
same way, on the same data, in the same run, and every ratio is privspec / floor.

1. Files (DuckDB SQL writes them: Parquet and CSV, column ``race``, p = 5 labels):
   N subset reports of ``subset(race, uniform)`` and N GRR reports of
   ``grr(race, epsilon = 1)``, drawn with the frequencies of privspec's own reports
   (a 10^5-row sample privatized from the adult race distribution).  privspec:
   ``observations(mech, engine_for(path, engine))`` (engine creation included; the
   pandas engine reads the whole file into memory first).  Floor: DuckDB's
   ``SELECT race, count(*) FROM read_parquet/read_csv(...) GROUP BY race``.
   Targets: the DuckDB engine within 1.3x of the floor; 10^8 subset reports from
   Parquet under 30 s with a peak under 2 GB.
2. In memory: N report strings (object dtype) and the same as a ``category`` column:
   ``PandasEngine.tally`` and ``observations`` against ``np.bincount`` of integer codes
   already in memory.  Target: categorical within 3x of bincount.
3. Releases from raw records (specs/university.privspec, ``income_by_degree``):
   ``count_records`` against ``pd.factorize`` per column + ``np.ravel_multi_index`` +
   ``np.bincount``.  Target: within 1.3x.
4. End to end GRR (10^6 records): ``spec.privatize`` + ``spec.run(engine="pandas")``
   (``estimate distribution(race) from m by mom``) against multi-freq-ldpy's
   ``GRR_Client`` per record + ``GRR_Aggregator_MI``.  Target: privspec >= 20x faster,
   judged as in 2 on the categorical column (codes and labels: what the peer's integer
   codes are); a column of strings is printed for information, as the object column in
   2 is: pandas' hash of its 10^6 strings alone is measured in the same run, about 1/25
   of the peer's time, which leaves no room for 20x.
5. Case-II interval reports ``(a, b]`` (``interval(y, case2(normal(0, 1)))``) written to
   Parquet: the reading part (``report_model(M).read_counts``), then the NPMLE at the
   maximum (``fit_npmle(..., band=False)``); up to ``--interval-whole-max`` also the band
   and ``spec.run(path, engine="duckdb")`` of ``estimate cdf(y) from M by npmle`` end to
   end.  Target: 10^7 reports from Parquet to the NPMLE at the maximum under 10 s.

    python bench/engines.py                        # 1e6,1e7: a few minutes on 2 cores
    python bench/engines.py --sizes 1e7,1e8 --formats parquet --kinds subset --cases file
    python bench/engines.py --interval-n 1e7 --cases interval

Files go to --dir (default /tmp/privspec-bench), removed at the end unless --keep.
Timings are never asserted in tests: this prints, a person reads.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from measure import fmt_n, peak_mib, size  # bench/ is sys.path[0] when a script runs

RACE = ("Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White")
W_RACE = (0.009551, 0.031909, 0.095943, 0.008323, 0.854274)

SPEC = """
variable race: categorical {"Amer-Indian-Eskimo", "Asian-Pac-Islander", Black, Other, White}
population race ~ categorical(0.009551, 0.031909, 0.095943, 0.008323, 0.854274)
mechanism s = subset(race, uniform)
mechanism m = grr(race, epsilon = 1)
query w = estimate distribution(race) from m by mom
"""

INTERVAL_SPEC = """
variable y: continuous
population y ~ normal(0, 1)
mechanism M = interval(y, case2(normal(0, 1)))
query F = estimate cdf(y) from M by npmle
"""

UNIVERSITY = Path(__file__).resolve().parent.parent / "specs" / "university.privspec"
MECH = {"subset": "s", "grr": "m"}


# ---- helpers ------------------------------------------------------------------------------------
FIRST: list[float] = []   # the first call's time of each best(): cold caches, lazy imports


def best(fn, repeat: int) -> tuple[float, object]:
    """The best of ``repeat`` calls and the last result (the first call's time kept in FIRST)."""
    out, times = None, []
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    FIRST.append(times[0])
    return min(times), out


def report_weights(kind: str) -> tuple[list[str], np.ndarray]:
    """The distinct reports and their frequencies in 10^5 reports privatized by privspec
    from the adult race distribution: realistic reports for the generators."""
    import privspec

    spec = privspec.load(SPEC)
    rng = np.random.default_rng(7)
    raw = pd.DataFrame({"race": np.asarray(RACE, dtype=object)[rng.choice(5, 100_000, p=W_RACE)]})
    rep = spec.privatize(raw, MECH[kind], seed=1)["race"].astype(str)
    freq = rep.value_counts(normalize=True).sort_index()
    return list(freq.index), freq.to_numpy()


def case_sql(labels: list[str], weights: np.ndarray, u: str) -> str:
    """SQL CASE picking labels[i] with probability weights[i] from u in [0, 1)."""
    cum = np.cumsum(weights / weights.sum())
    parts = [f"WHEN {u} < {float(c)!r} THEN '{lab}'" for lab, c in zip(labels[:-1], cum[:-1])]
    return f"CASE {' '.join(parts)} ELSE '{labels[-1]}' END"


def generate_files(directory: Path, n: int, kinds: list[str], formats: list[str]) -> dict[tuple[str, str], Path]:
    import duckdb

    con = duckdb.connect()
    out = {}
    for kind in kinds:
        labels, weights = report_weights(kind)
        # a hash of the row number as the uniform draw: reproducible on any number of threads
        u = "((hash(i) % 1000000007)::DOUBLE / 1000000007)"
        select = f"SELECT {case_sql(labels, weights, u)} AS race FROM range({n}) t(i)"
        for f in formats:
            path = directory / f"{kind}_{fmt_n(n)}.{f}"
            out[(kind, f)] = path
            if path.exists():
                continue
            t0 = time.perf_counter()
            opts = "FORMAT parquet" if f == "parquet" else "FORMAT csv, HEADER true"
            con.execute(f"COPY ({select}) TO '{path}' ({opts})")
            print(f"   wrote {path.name:<24} {path.stat().st_size / 2 ** 20:9.1f} MiB in "
                  f"{time.perf_counter() - t0:6.1f} s", flush=True)
    return out


def run_one(args: argparse.Namespace, case: str, **params) -> dict:
    """One measurement in a fresh interpreter; its JSON line back."""
    cmd = [sys.executable, os.path.abspath(__file__), "--one", case, "--repeat", str(args.repeat),
           "--params", json.dumps(params)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.case_timeout)
    except subprocess.TimeoutExpired as e:   # the parts it printed before (the interval case)
        text = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        got = [json.loads(ln) for ln in text.splitlines() if ln.startswith("{")]
        return {"seconds": float("nan"), "peak_mib": float("nan"), "base_mib": float("nan"),
                **(got[-1] if got else {}), "error": f"timed out after {args.case_timeout:g} s (--case-timeout)"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.stderr.write(proc.stderr[-3000:])
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1], "seconds": float("nan"),
                "peak_mib": float("nan"), "base_mib": float("nan")}
    return json.loads(lines[-1])


# ---- the measurements, one per subprocess ------------------------------------------------------
def one(case: str, p: dict, repeat: int) -> dict:
    out: dict = {}
    if case == "file":  # privspec observations through an engine
        import privspec
        from privspec.backends.data.engines import engine_for
        from privspec.backends.finite.data import observations

        if p["engine"] == "duckdb":
            import duckdb  # noqa: F401  (imported before the clock, as for the floor)
        mech = privspec.load(SPEC).model.mechanisms[MECH[p["kind"]]]
        base = peak_mib()
        t, (ch, counts) = best(lambda: observations(mech, engine_for(p["path"], p["engine"])), repeat)
        out = {"n": int(counts.sum()), "observations": len(counts)}
    elif case == "file_floor":
        import duckdb

        con = duckdb.connect()
        reader = "read_parquet" if p["path"].endswith(".parquet") else "read_csv"
        sql = f"SELECT race, count(*) FROM {reader}('{p['path']}') GROUP BY race"
        base = peak_mib()
        t, rows = best(lambda: con.execute(sql).fetchall(), repeat)
        out = {"n": int(sum(r[1] for r in rows)), "observations": len(rows)}
    elif case in ("mem_tally", "mem_obs", "mem_floor"):
        import privspec
        from privspec.backends.data.engines import PandasEngine
        from privspec.backends.finite.data import observations

        labels, weights = report_weights(p["kind"])
        rng = np.random.default_rng(3)
        codes = rng.choice(len(labels), size=p["n"], p=weights / weights.sum()).astype(np.int8)
        cat = pd.Categorical.from_codes(codes, categories=labels)
        col = pd.Series(cat) if p["dtype"] == "category" else pd.Series(np.asarray(labels, dtype=object)[codes])
        frame = pd.DataFrame({"race": col})
        del cat
        mech = privspec.load(SPEC).model.mechanisms[MECH[p["kind"]]]
        held = frame["race"].cat.codes.to_numpy() if p["dtype"] == "category" else codes
        base = peak_mib()
        if case == "mem_tally":
            t, r = best(lambda: PandasEngine(frame).tally(["race"]), repeat)
            out = {"n": r.n}
        elif case == "mem_obs":
            t, (ch, counts) = best(lambda: observations(mech, frame), repeat)
            out = {"n": int(counts.sum())}
        else:
            t, counts = best(lambda: np.bincount(held, minlength=len(labels)), repeat)
            out = {"n": int(counts.sum())}
    elif case in ("release", "release_floor"):
        import privspec
        from privspec.backends.releases.backend import count_records

        spec = privspec.load(UNIVERSITY.read_text())
        model = spec.model
        rel = model.releases["income_by_degree"]
        var = {v.name: v for v in rel.variables}
        rng = np.random.default_rng(5)
        n = p["n"]
        frame = pd.DataFrame({
            "degree": np.asarray(var["degree"].labels, dtype=object)[rng.integers(0, 3, n)],
            "income": np.asarray(var["income"].labels, dtype=object)[rng.integers(0, 8, n)],
            "sex": np.asarray(["F", "M"], dtype=object)[rng.integers(0, 2, n)]})
        shape = (len(var["degree"].labels), len(var["income"].labels))
        base = peak_mib()
        if case == "release":
            t, table = best(lambda: count_records(model, rel, frame), repeat)
        else:
            def floor():
                cs = [pd.factorize(frame[c])[0] for c in ("degree", "income")]
                flat = np.ravel_multi_index(cs, shape)
                return np.bincount(flat, minlength=shape[0] * shape[1]).reshape(shape)

            t, table = best(floor, repeat)
        out = {"n": int(table.sum())}
    elif case in ("e2e", "e2e_cat", "e2e_peer"):
        n = p["n"]
        rng = np.random.default_rng(11)
        x = rng.choice(5, size=n, p=W_RACE)
        if case in ("e2e", "e2e_cat"):
            import privspec

            spec = privspec.load(SPEC)
            # strings (one Python object per record: privspec hashes them once) or a
            # categorical column (codes and labels: what the peer is given, integer codes)
            frame = pd.DataFrame({"race": np.asarray(RACE, dtype=object)[x] if case == "e2e"
                                  else pd.Categorical.from_codes(x, RACE)})
            base = peak_mib()

            def ours():
                t0 = time.perf_counter()
                reports = spec.privatize(frame, "m", seed=1)
                t1 = time.perf_counter()
                res = spec.run(reports, ["w"], engine="pandas")
                return t1 - t0, time.perf_counter() - t1, res

            first = ours()   # the first call: lazy imports (scipy.stats through dsl.results), compiling
            FIRST.append(first[0] + first[1])
            runs = [ours() for _ in range(max(repeat, 1))]
            tp, te, res = min(runs, key=lambda r: r[0] + r[1])   # the parts of the best run
            t = tp + te
            out = {"privatize": tp, "estimate": te}
        else:
            from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI, GRR_Client

            # GRR_Client is numba-jitted: its first call compiles it (about 1.5 s), kept out
            # of the clock as privspec's first call is (both are shown as "1st call")
            t0 = time.perf_counter()
            GRR_Client(0, 5, 1.0)
            GRR_Aggregator_MI([0, 1], 5, 1.0)
            compile_s = time.perf_counter() - t0
            base = peak_mib()

            def peer():
                t0 = time.perf_counter()
                reports = [GRR_Client(int(v), 5, 1.0) for v in x]
                t1 = time.perf_counter()
                est = GRR_Aggregator_MI(reports, 5, 1.0)
                return t1 - t0, time.perf_counter() - t1, est

            runs = [peer() for _ in range(max(repeat, 1))]
            tp, te, est = min(runs, key=lambda r: r[0] + r[1])
            t = tp + te
            FIRST.append(compile_s + runs[0][0] + runs[0][1])
            out = {"privatize": tp, "estimate": te}
    elif case == "interval":
        import privspec
        from privspec.backends.data.engines import DuckDBEngine
        from privspec.backends.interval.fit import fit_npmle
        from privspec.backends.interval.reports import report_model

        spec = privspec.load(INTERVAL_SPEC)
        mech = spec.model.mechanisms["M"]
        base = peak_mib()
        # the parts, then the whole (spec.run: reading, the NPMLE, its pointwise band at the
        # quartiles by profile likelihood, the result): one call each, the fits are long
        t_read, (left, right, counts) = best(
            lambda: report_model(mech).read_counts(DuckDBEngine(p["path"]), "y"), 1)
        part = {"read": t_read, "distinct": int(len(counts)), "n": int(counts.sum())}
        print(json.dumps(part), flush=True)          # the parts so far, should it time out
        t_fit, _ = best(lambda: fit_npmle(mech, left, right, counts, band=False), 1)
        out = {**part, "fit": t_fit, "to_max": t_read + t_fit}
        print(json.dumps(out), flush=True)
        t = t_read + t_fit
        if p.get("whole"):
            t_band, _ = best(lambda: fit_npmle(mech, left, right, counts, band=True), 1)
            print(json.dumps({**out, "band": t_band - t_fit}), flush=True)
            t, res = best(lambda: spec.run(p["path"], ["F"], engine="duckdb"), 1)
            out["band"] = t_band - t_fit
    else:
        raise SystemExit(f"unknown case {case}")
    out.update(seconds=t, first=FIRST[0] if FIRST else t, peak_mib=peak_mib(), base_mib=base)
    return out


def time_factorize(n: int, repeat: int = 5) -> float:
    """Seconds (best of ``repeat``) of ``pandas.factorize`` on ``n`` race strings: the least any
    reader of a string column pays (every string hashed once)."""
    x = np.random.default_rng(11).choice(5, size=n, p=W_RACE)
    column = pd.Series(np.asarray(RACE, dtype=object)[x])
    return best(lambda: pd.factorize(column), repeat)[0]


def write_interval(path: Path, n: int) -> float:
    """Case-II reports privatized by privspec from N(0, 1) values, written to Parquet."""
    import duckdb
    import privspec

    spec = privspec.load(INTERVAL_SPEC)
    t0 = time.perf_counter()
    raw = pd.DataFrame({"y": np.random.default_rng(9).standard_normal(n)})
    reports = spec.privatize(raw, "M", seed=1)
    t_priv = time.perf_counter() - t0
    con = duckdb.connect()
    con.register("reports", reports)
    con.execute(f"COPY (SELECT * FROM reports) TO '{path}' (FORMAT parquet)")
    return t_priv


# ---- the driver ---------------------------------------------------------------------------------
def cell(r: dict, key: str = "seconds", f: str = "9.3f") -> str:
    if key not in r and "error" not in r:
        return f"{'-':>{int(f.split('.')[0])}}"     # not measured
    v = r.get(key, float("nan"))
    return f"{v:{f}}" if v == v else f"{'ERR':>{int(f.split('.')[0])}}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1e6,1e7", help="row counts for the file, memory and release cases")
    ap.add_argument("--cases", default="file,memory,release,e2e,interval")
    ap.add_argument("--formats", default="parquet,csv")
    ap.add_argument("--kinds", default="subset,grr")
    ap.add_argument("--engines", default="duckdb,pandas")
    ap.add_argument("--pandas-max", type=float, default=1e7,
                    help="skip the pandas engine on files above this many rows (it reads the file into memory)")
    ap.add_argument("--e2e-n", default="1e6")
    ap.add_argument("--interval-n", default="1e6")
    ap.add_argument("--interval-whole-max", default="1e6",
                    help="up to this n the interval case also times the band and spec.run end to end")
    ap.add_argument("--repeat", type=int, default=3,
                    help="best of this many calls per subprocess (the peer's loop and the interval fits: once)")
    ap.add_argument("--case-timeout", type=float, default=None, help="seconds one measurement may take")
    ap.add_argument("--dir", default="/tmp/privspec-bench")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--params", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, json.loads(args.params), args.repeat)), flush=True)
        return

    sizes = [size(s) for s in args.sizes.split(",")]
    cases = args.cases.split(",")
    formats, kinds, engines = args.formats.split(","), args.kinds.split(","), args.engines.split(",")
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(directory).free / 2 ** 30
    print(f"privspec engines bench: sizes {', '.join(map(fmt_n, sizes))}; files in {directory} "
          f"({free:.0f} GiB free); {os.cpu_count()} cores; every figure from a fresh subprocess "
          f"(peak = VmHWM, the high-water mark of resident memory; base = after setup, before the timed call)")
    summary: list[tuple[str, str, str, bool | str | None]] = []
    try:
        if "file" in cases:
            print("\n1. reports in files: observations(mech, engine_for(path, engine)) vs DuckDB GROUP BY "
                  "(the floor); pandas reads the whole file into memory first")
            for n in sizes:
                files = generate_files(directory, n, kinds, formats)
                print(f"{'n':>5} {'kind':<7} {'format':<8} {'engine':<8} {'seconds':>9} {'1st call':>9} {'Mrows/s':>8} "
                      f"{'peak MiB':>9} {'floor s':>8} {'floor MiB':>9} {'ratio':>6}")
                for (kind, f), path in files.items():
                    floor = run_one(args, "file_floor", path=str(path))
                    for eng in engines:
                        if eng == "pandas" and n > args.pandas_max:
                            continue
                        r = run_one(args, "file", path=str(path), engine=eng, kind=kind)
                        ratio = r["seconds"] / floor["seconds"]
                        rate = n / r["seconds"] / 1e6
                        print(f"{fmt_n(n):>5} {kind:<7} {f:<8} {eng:<8} {cell(r)} {cell(r, 'first')} {rate:8.1f} "
                              f"{cell(r, 'peak_mib', '9.0f')} {cell(floor, 'seconds', '8.3f')} "
                              f"{cell(floor, 'peak_mib', '9.0f')} {ratio:6.2f}", flush=True)
                        if "error" in r:
                            print(f"      error: {r['error']}")
                        if eng == "duckdb":
                            summary.append((f"duckdb {kind} {f} {fmt_n(n)} / floor", "<= 1.3x",
                                            f"{ratio:.2f}x", ratio <= 1.3))
                            if kind == "subset" and f == "parquet" and n >= 10 ** 8:
                                summary.append((f"duckdb subset parquet {fmt_n(n)} time", "< 30 s",
                                                f"{r['seconds']:.1f} s", r["seconds"] < 30))
                                summary.append((f"duckdb subset parquet {fmt_n(n)} peak", "< 2048 MiB",
                                                f"{r['peak_mib']:.0f} MiB", r["peak_mib"] < 2048))

        if "memory" in cases:
            print("\n2. reports in memory (one column): PandasEngine.tally / observations vs np.bincount "
                  "of the integer codes (the floor)")
            print(f"{'n':>5} {'kind':<7} {'dtype':<9} {'what':<13} {'seconds':>9} {'Mrows/s':>8} "
                  f"{'base MiB':>9} {'peak MiB':>9} {'ratio':>7}")
            for n in sizes:
                for kind in kinds:
                    for dtype in ("object", "category"):
                        floor = run_one(args, "mem_floor", n=n, kind=kind, dtype=dtype)
                        rows = [("bincount", floor)]
                        for what, case in (("tally", "mem_tally"), ("observations", "mem_obs")):
                            rows.append((what, run_one(args, case, n=n, kind=kind, dtype=dtype)))
                        for what, r in rows:
                            ratio = r["seconds"] / floor["seconds"]
                            print(f"{fmt_n(n):>5} {kind:<7} {dtype:<9} {what:<13} {cell(r)} "
                                  f"{n / r['seconds'] / 1e6:8.1f} {cell(r, 'base_mib', '9.0f')} "
                                  f"{cell(r, 'peak_mib', '9.0f')} {ratio:7.2f}", flush=True)
                        if dtype == "category":
                            ratio = rows[2][1]["seconds"] / floor["seconds"]
                            summary.append((f"observations {kind} category {fmt_n(n)} / bincount", "<= 3x",
                                            f"{ratio:.2f}x", ratio <= 3))

        if "release" in cases:
            print("\n3. release counts from raw records (university income_by_degree, 3 object columns): "
                  "count_records vs factorize + ravel_multi_index + bincount (the floor)")
            print(f"{'n':>5} {'what':<14} {'seconds':>9} {'Mrows/s':>8} {'base MiB':>9} {'peak MiB':>9} {'ratio':>6}")
            for n in sizes:
                floor = run_one(args, "release_floor", n=n)
                r = run_one(args, "release", n=n)
                for what, x in (("floor", floor), ("count_records", r)):
                    print(f"{fmt_n(n):>5} {what:<14} {cell(x)} {n / x['seconds'] / 1e6:8.1f} "
                          f"{cell(x, 'base_mib', '9.0f')} {cell(x, 'peak_mib', '9.0f')} "
                          f"{x['seconds'] / floor['seconds']:6.2f}", flush=True)
                ratio = r["seconds"] / floor["seconds"]
                summary.append((f"count_records {fmt_n(n)} / floor", "<= 1.3x", f"{ratio:.2f}x", ratio <= 1.3))

        if "e2e" in cases:
            n = size(args.e2e_n)
            print(f"\n4. GRR end to end, n = {fmt_n(n)} in-memory records (d = 5, epsilon = 1): "
                  "privatize + estimate")
            ours = run_one(args, "e2e", n=n)
            cat = run_one(args, "e2e_cat", n=n)
            peer = run_one(args, "e2e_peer", n=n)
            print(f"{'who':<44} {'privatize s':>11} {'estimate s':>10} {'total s':>9} {'1st call':>9} {'peak MiB':>9}")
            for who, r in (("privspec, string column (privatize + run)", ours),
                           ("privspec, categorical column", cat),
                           ("multi-freq-ldpy (GRR_Client on int codes, _MI)", peer)):
                print(f"{who:<44} {cell(r, 'privatize', '11.3f')} {cell(r, 'estimate', '10.3f')} {cell(r)} {cell(r, 'first')} "
                      f"{cell(r, 'peak_mib', '9.0f')}", flush=True)
            floor = time_factorize(n)
            for label, r in (("strings", ours), ("categorical", cat)):
                ratio = peer["seconds"] / r["seconds"]
                print(f"   multi-freq-ldpy / privspec ({label}): {ratio:.1f}x (best of --repeat, warm)")
                # the target is judged on the categorical column (see the module's docstring)
                summary.append((f"GRR e2e {fmt_n(n)} {label}: multi-freq-ldpy / privspec",
                                ">= 20x" if label == "categorical" else "(info: hashes every string)",
                                f"{ratio:.1f}x", ratio >= 20 if label == "categorical" else "info"))
            print(f"   first call against first call in fresh processes: {peer['first'] / ours['first']:.1f}x "
                  f"(privspec: lazy imports, scipy.stats; multi-freq-ldpy: numba compiling GRR_Client)")
            print(f"   pandas.factorize of the {fmt_n(n)} strings alone: {floor:.3f} s, "
                  f"{peer['seconds'] / floor:.1f}x below the peer: no reader of a string column reaches "
                  f"{peer['seconds'] / 20:.3f} s (20x) when hashing the strings takes {floor:.3f} s")

        if "interval" in cases:
            n = size(args.interval_n)
            path = directory / f"interval_case2_{fmt_n(n)}.parquet"
            print(f"\n5. Case-II interval reports, n = {fmt_n(n)}, Parquet: read, then the NPMLE at the maximum "
                  "(estimate cdf(y) from M by npmle)")
            if not path.exists():
                t_priv = write_interval(path, n)
                print(f"   wrote {path.name} ({path.stat().st_size / 2 ** 20:.1f} MiB; privatize {t_priv:.1f} s)")
            whole = n <= size(args.interval_whole_max)
            r = run_one(args, "interval", path=str(path), whole=whole)
            print(f"{'n':>5} {'distinct':>9} {'read+agg s':>10} {'npmle s':>9} {'band s':>9} {'run total s':>11} "
                  f"{'peak MiB':>9}")
            print(f"{fmt_n(n):>5} {r.get('distinct', 0):>9,} {cell(r, 'read', '10.3f')} {cell(r, 'fit')} "
                  f"{cell(r, 'band')} {cell(r, 'seconds', '11.3f')} {cell(r, 'peak_mib', '9.0f')}", flush=True)
            print("   (band: the pointwise 95% band at the quartiles, profile likelihood, that "
                  "estimate cdf ... by npmle reports; run total = spec.run end to end; both only up to "
                  "--interval-whole-max, else run total = read + npmle)")
            if "error" in r:
                print(f"      error: {r['error']}")
            to_max = r.get("read", float("nan")) + r.get("fit", float("nan"))
            summary.append((f"interval {fmt_n(n)}: Parquet to the NPMLE at the maximum", "< 10 s at 1e7",
                            f"{to_max:.1f} s", to_max < 10 if n >= 10 ** 7 else None))
    finally:
        if not args.keep:
            for f in directory.glob("*"):
                if f.suffix in (".parquet", ".csv"):
                    f.unlink()
            try:
                directory.rmdir()
            except OSError:
                pass

    print("\nsummary")
    print(f"{'check':<52} {'target':<30} {'measured':>12}  verdict")
    for name, target, got, ok in summary:
        verdict = ok if isinstance(ok, str) else "n/a (target at 1e7)" if ok is None else "PASS" if ok else "FAIL"
        print(f"{name:<52} {target:<30} {got:>12}  {verdict}")


if __name__ == "__main__":
    main()
