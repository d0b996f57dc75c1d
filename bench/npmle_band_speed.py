"""Benchmark: ``spec.run`` of a Case-II ``estimate cdf(...) by npmle`` from CSV, with its
pointwise band, against the floor of reading the same file (issue 38).

The reports are ``interval(y, case2(normal(0, 1)))`` of ``--n`` N(0, 1) values,
privatized by privspec (seeded) and written to CSV by DuckDB.  In one run, alternately
(best of ``--repeat``; each figure CPU seconds of this process, ``time.process_time``,
with the wall time and the 1-minute load average beside it):

* privspec: ``spec.run(path, ["F"], engine="duckdb")``: the read, the NPMLE at the
  maximum and its pointwise 95% band at the quartiles (profile likelihood);
* the whole command, ``privspec run`` in a fresh interpreter (``--command``; its CPU
  seconds from the children's resource usage): imports, the read, the fit, the band,
  the output;
* the parts: the read (``report_model(M).read_counts``), the fit alone
  (``fit_npmle(..., band=False)``) and with the band;
* the floor: DuckDB reading the CSV, parsing each ``(a, b]`` into two doubles and
  sorting the intervals (``ORDER BY a, b``), fetched as numpy arrays.

It prints the ratio privspec / floor and PASS or FAIL against the target, 2x.

Run:  python bench/npmle_band_speed.py [--n 1e6 | --n 1e7] [--repeat 2] [--dir /tmp/privspec-bench]
      [--command] [--parts]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from measure import fmt_n, size  # bench/ is sys.path[0] when a script runs

SPEC = """
variable y: continuous
population y ~ normal(0, 1)
mechanism M = interval(y, case2(normal(0, 1)))
query F = estimate cdf(y) from M by npmle
"""
TARGET = 2.0


def write_csv(path: Path, n: int) -> None:
    """``n`` Case-II reports privatized by privspec from N(0, 1) values, as CSV."""
    import duckdb
    import privspec

    spec = privspec.load(SPEC)
    raw = pd.DataFrame({"y": np.random.default_rng(9).standard_normal(n)})
    reports = spec.privatize(raw, "M", seed=1)
    con = duckdb.connect()
    con.register("reports", reports)
    con.execute(f"COPY (SELECT * FROM reports) TO '{path}' (FORMAT csv, HEADER true)")


def floor(path: Path) -> int:
    """DuckDB: the CSV read, each ``(a, b]`` parsed into two doubles, the intervals sorted."""
    import duckdb

    con = duckdb.connect()
    sql = (f"WITH t AS (SELECT y, instr(y, ',') AS c FROM read_csv('{path}', header = true, columns = {{'y': 'VARCHAR'}})) "
           "SELECT CAST(substr(y, 2, c - 2) AS DOUBLE) AS a, CAST(substr(y, c + 2, length(y) - c - 2) AS DOUBLE) AS b "
           "FROM t ORDER BY a, b")
    got = con.execute(sql).fetchnumpy()
    return int(got["a"].size)


def command(path: Path) -> tuple[float, float]:
    """CPU and wall seconds of ``privspec run`` of the spec on ``path``, in a fresh interpreter."""
    spec = path.with_suffix(".privspec")
    spec.write_text(SPEC, encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "privspec", "run", str(spec), "--data", str(path), "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, time.perf_counter() - w0


def clock(fn: Callable[[], object]) -> tuple[float, float, object]:
    """CPU seconds of this process, wall seconds, and the result of one call."""
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - w0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", default="1e6")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--dir", default="/tmp/privspec-bench")
    ap.add_argument("--command", action="store_true", help="also time the whole `privspec run` command")
    ap.add_argument("--parts", action="store_true", help="also time the read, the fit and the band alone")
    args = ap.parse_args()
    n = size(args.n)
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"interval_case2_{fmt_n(n)}.csv"
    if not path.exists():
        write_csv(path, n)

    import privspec

    spec = privspec.load(SPEC)
    spec.run(str(path), ["F"], engine="duckdb") if n <= 10 ** 5 else None   # (imports: warm at small n)
    ours, base = [], []
    for _ in range(max(args.repeat, 1)):      # alternately, so that both see the same load
        cpu, wall, got = clock(lambda: floor(path))
        base.append((cpu, wall, os.getloadavg()[0]))
        assert got == n, got
        cpu, wall, res = clock(lambda: spec.run(str(path), ["F"], engine="duckdb"))
        ours.append((cpu, wall, os.getloadavg()[0]))
    band = res["F"].extras.get("band")
    fc, fw, fl = min(base)
    oc, ow, ol = min(ours)
    print(f"Case-II interval reports from CSV, n = {fmt_n(n)}, estimate cdf(y) from M by npmle (with its band)")
    print(f"  privspec spec.run   {oc:8.2f} s CPU  {ow:8.2f} s wall  (load {ol:.1f})")
    print(f"  floor (DuckDB read, parse, sort) {fc:8.2f} s CPU  {fw:8.2f} s wall  (load {fl:.1f})")
    ratio = oc / fc
    print(f"  ratio (CPU) {ratio:.2f}x, wall {ow / fw:.2f}x: {'PASS' if ratio <= TARGET else 'FAIL'} (target <= {TARGET:g}x)")
    if band is not None:
        print(f"  band at {band['x']}: lower {band['lower']}, upper {band['upper']}")
    if args.command:
        cc, cw = min(command(path) for _ in range(max(args.repeat, 1)))
        print(f"  privspec run (whole command) {cc:8.2f} s CPU  {cw:8.2f} s wall  (load {os.getloadavg()[0]:.1f}): "
              f"{cc / fc:.2f}x the floor, {'PASS' if cc / fc <= TARGET else 'FAIL'}")
    if args.parts:
        from privspec.backends.data.engines import DuckDBEngine
        from privspec.backends.interval.fit import fit_npmle
        from privspec.backends.interval.reports import report_model

        mech = spec.model.mechanisms["M"]
        reads, fits, bands = [], [], []
        for _ in range(max(args.repeat, 1)):      # each part's best of --repeat
            cpu, wall, (left, right, counts) = clock(
                lambda: report_model(mech).read_counts(DuckDBEngine(str(path)), "y"))
            reads.append((cpu, wall))
            fits.append(clock(lambda: fit_npmle(mech, left, right, counts, band=False))[:2])
            cb, wb, fit = clock(lambda: fit_npmle(mech, left, right, counts, band=True))
            bands.append((cb, wb))
        (cpu, wall), (cf, wf), (cb, wb) = min(reads), min(fits), min(bands)
        print(f"  parts (best of {max(args.repeat, 1)}): read {cpu:.2f} s CPU ({wall:.2f} s wall, "
              f"{len(counts):,} distinct); NPMLE {cf:.2f} s CPU ({wf:.2f} s wall); with the band {cb:.2f} s "
              f"CPU (band {cb - cf:.2f} s; load {os.getloadavg()[0]:.1f})")
        # what the band's target leaves the rest: the read and the fit alone against the floor
        print(f"  the read and the NPMLE alone, without the band: {cpu + cf:.2f} s CPU, "
              f"{(cpu + cf) / fc:.2f}x the floor; the band {(cb - cf) / fc:.2f}x more")
        print(f"  band at {fit.band['x']}: lower {fit.band['lower']}, upper {fit.band['upper']}")


if __name__ == "__main__":
    main()
