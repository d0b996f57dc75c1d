"""Frequency oracles through the API against privspec's own core, at the same n (issue 38, rows 1-2).

For each oracle and d, on the same n category codes (Zipf(1) over d categories, seed 11):

* core: ``reports = privatize(o, codes, RowRandom(row_key(1), rows=range(n),
  stream=stream_of("m")))`` (the rows' randomness ``spec.privatize(..., seed=1)`` draws) then
  ``unbiased(o, support_counts(o, reports), n)`` (:mod:`privspec.backends.oracles.pure`):
  codes in, estimates out, the reports held in memory in between;
* API: ``spec.privatize(frame, "m", seed=1)`` of a pandas categorical column ``x`` (labels
  ``c0 .. c{d-1}``: its codes are used as they are) then ``spec.run(reports, ["q"])`` of
  ``estimate distribution(x) from m by mom`` with the default engine: the reports written
  as text (the column a user saves) and read back.

The two are timed alternately in one process (best of --repeat each, after a first call
of each that is shown apart), in CPU seconds of this process by default (``--clock wall``:
seconds on the wall clock; either way the 1-minute load average beside each figure: other
processes on a shared machine move wall times far more than CPU times), and the ratio
API / core judged against the target: the API within 2x the core (PASS/FAIL).
The API's estimate is checked equal to the core's (same seed, same rows), except for
grr: a spec's ``grr`` is finite randomized response (its own back end and draws), so
its "same" column reads n/a and only its ratio is judged.

    python bench/oracle_api.py                          # every oracle at d = 16 and 256, n = 1e6
    python bench/oracle_api.py --n 1e5 --repeat 1       # a smoke run
    python bench/oracle_api.py --cases olh:16,oue:256

Timings are never asserted in tests: this prints, a person reads.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from measure import fmt_n, size  # bench/ is sys.path[0] when a script runs

KINDS = ("olh", "blh", "grr", "sue", "oue", "ss", "hr", "adp")
CASES = tuple(f"{kind}:{d}" for d in (16, 256) for kind in KINDS)
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
TARGET = 2.0


def codes_of(d: int, n: int) -> np.ndarray:
    w = 1.0 / np.arange(1, d + 1)
    return np.random.default_rng(11).choice(d, size=n, p=w / w.sum()).astype(np.int64)


def load() -> float:
    return os.getloadavg()[0]


def case(kind: str, d: int, n: int, eps: float, repeat: int, clock=time.process_time) -> dict:
    import privspec
    from privspec.backends.core.rowrandom import RowRandom, row_key, stream_of
    from privspec.backends.oracles.pure import oracle, privatize, support_counts, unbiased

    x = codes_of(d, n)
    o = oracle(kind, d, eps)
    labels = [f"c{i}" for i in range(d)]
    spec = privspec.load("variable x: categorical {" + ", ".join(labels) + "}\n"
                         f"mechanism m = {kind}(x, epsilon = {eps!r})\n"
                         "query q = estimate distribution(x) from m by mom\n")
    frame = pd.DataFrame({"x": pd.Categorical.from_codes(x, categories=labels)})

    def core() -> np.ndarray:
        reports = privatize(o, x, RowRandom(row_key(1), rows=range(n), stream=stream_of("m")))
        return np.asarray(unbiased(o, support_counts(o, reports), n), dtype=float)

    def api() -> np.ndarray:
        reports = spec.privatize(frame, "m", seed=1)
        params = spec.run(reports, ["q"])["q"].params
        return np.asarray(getattr(params, "values", params), dtype=float)

    def timed(fn) -> tuple[float, float, np.ndarray]:
        la = load()
        t0 = clock()
        out = fn()
        return clock() - t0, la, out

    first = {"core": timed(core), "api": timed(api)}
    runs: dict[str, list] = {"core": [], "api": []}
    for _ in range(repeat):
        for name, fn in (("core", core), ("api", api)):
            runs[name].append(timed(fn))
    best = {name: min(r, key=lambda t: t[0]) for name, r in runs.items()}
    same = None if kind == "grr" else bool(np.allclose(best["core"][2], best["api"][2], rtol=0, atol=1e-12))
    return {"first": first, "best": best, "same": same}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=size, default=10 ** 6)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=2, help="timed calls of each after the first (best of)")
    ap.add_argument("--cases", default=",".join(CASES), help="KIND:D,... (default: %(default)s)")
    ap.add_argument("--clock", choices=tuple(CLOCKS), default="cpu", help="CPU seconds of this process, or wall")
    args = ap.parse_args()
    print(f"oracles through the API vs privspec's core: n = {fmt_n(args.n)}, eps = {args.eps:g}, "
          f"best of {args.repeat}, {args.clock} seconds (load = 1-minute load average at the start of the call; "
          f"{os.cpu_count()} CPUs)")
    print(f"{'case':<9} {'core s':>8} {'load':>5} {'API s':>8} {'load':>5} {'API/core':>8} "
          f"{'1st core':>8} {'1st API':>8} {'same':>5}  target API <= {TARGET:g}x core")
    verdicts = []
    for spec_case in args.cases.split(","):
        kind, d = spec_case.split(":")
        r = case(kind, int(d), args.n, args.eps, args.repeat, CLOCKS[args.clock])
        (tc, lc, _), (ta, la, _) = r["best"]["core"], r["best"]["api"]
        ratio = ta / tc
        ok = ratio <= TARGET and r["same"] is not False
        verdicts.append(ok)
        print(f"{spec_case:<9} {tc:8.3f} {lc:5.2f} {ta:8.3f} {la:5.2f} {ratio:8.2f} "
              f"{r['first']['core'][0]:8.3f} {r['first']['api'][0]:8.3f} {'n/a' if r['same'] is None else str(r['same']):>5}  "
              f"{'PASS' if ok else 'FAIL'}", flush=True)
    print(f"\n{sum(verdicts)}/{len(verdicts)} PASS (API within {TARGET:g}x the core, same estimates where comparable)")


if __name__ == "__main__":
    main()
