"""The front end's fuzz test at a larger scale (tests/test_fuzz.py runs a few thousand cases).

    python bench/fuzz.py                       # 20,000 mutants (500 analyzed), 5,000 slot cases (1,000 analyzed)
    python bench/fuzz.py --seed 7 --mutants 100000 --slots 20000 --analyzed 5000
    python bench/fuzz.py --costs               # time the cases behind the limits of privspec.limits
    python bench/fuzz.py --parameters          # every numeric parameter x value x query (2,296 cases)

Prints every case that exits with a status other than 0 or 1 or takes more than 5 s,
then a summary: cases, failures, the slowest cases and the time per case.  Exit status
1 when something failed.
"""
from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.test_fuzz import (CASE_SECONDS, Case, _warm, cases, parameter_cases, run_case,  # noqa: E402
                             run_parameter_case)


def fuzz(seed: int, mutants: int, slots: int, analyzed: int, analyzed_mutants: int, seconds: float) -> int:
    failures = 0
    times: list[tuple[float, int]] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.privspec"
        for n, case in enumerate(cases(seed, mutants, slots, analyzed, analyzed_mutants)):
            t = time.perf_counter()
            problems = run_case(case, path, seconds)
            times.append((time.perf_counter() - t, n))
            if problems:
                failures += 1
                print(f"--- case {n}: " + "; ".join(problems))
                print(case.text[:600])
            if n and n % 2000 == 0:
                print(f"... {n} cases, {failures} failures, {time.perf_counter() - start:.0f} s", flush=True)
    total = time.perf_counter() - start
    times.sort(reverse=True)
    print(f"{len(times)} cases in {total:.1f} s ({1000 * total / max(len(times), 1):.1f} ms a case), "
          f"{failures} failures; slowest: " + ", ".join(f"#{n} {t:.2f} s" for t, n in times[:5]))
    return 1 if failures else 0


def parameters(seconds: float) -> int:
    """Every slot of ``PARAMETER_SLOTS`` at every extreme value with every query it has."""
    failures = 0
    times: list[tuple[float, str]] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "parameters.privspec"
        _warm(path)
        for case in parameter_cases(every=True):
            t = time.perf_counter()
            problems = run_parameter_case(case, path, seconds)
            times.append((time.perf_counter() - t, f"{case.slot} = {case.value}, {case.query}"))
            if problems:
                failures += 1
                print(f"--- {times[-1][1]}: " + "; ".join(problems))
                print(case.text[:600])
    total = time.perf_counter() - start
    times.sort(reverse=True)
    print(f"{len(times)} cases in {total:.1f} s, {failures} failures; slowest: "
          + ", ".join(f"{what} {t:.2f} s" for t, what in times[:5]))
    return 1 if failures else 0


# ---- the measurements behind privspec.limits --------------------------------------------------------------------
def _cat(p: int) -> str:
    return "variable x: categorical {" + ", ".join(f"c{i}" for i in range(p)) + "}\n"


def _pop(p: int) -> str:
    return "population x ~ categorical(" + ", ".join([f"1/{p}"] * p) + ")\n"


COST_CASES = [
    # (what, spec)
    ("grr p=300 moments (float channel, 90,000 cells)",
     _cat(300) + _pop(300) + "mechanism m = grr(x, epsilon = 1)\nquery q = moments(m)\n"),
    ("identifiable rational p=18", _cat(18) + "mechanism m = grr(x, epsilon = log(3))\nquery q = identifiable(m)\n"),
    ("identifiable irrational p=6", _cat(6) + "mechanism m = grr(x, epsilon = 1)\nquery q = identifiable(m)\n"),
    ("avar mom irrational p=12",
     _cat(12) + _pop(12) + "mechanism m = grr(x, epsilon = 1)\nquery q = avar(distribution(x) from m by mom)\n"),
    ("avar mle irrational p=10",
     _cat(10) + _pop(10) + "mechanism m = grr(x, epsilon = 1)\nquery q = avar(distribution(x) from m by mle)\n"),
    ("avar mle rational p=100",
     _cat(100) + _pop(100) + "mechanism m = grr(x, epsilon = log(3))\nquery q = avar(distribution(x) from m by mle)\n"),
    ("fisher irrational p=20", _cat(20) + _pop(20) + "mechanism m = grr(x, epsilon = 1)\nquery q = fisher(m)\n"),
    ("fisher without population p=4", _cat(4) + "mechanism m = grr(x, epsilon = log(3))\nquery q = fisher(m)\n"),
    ("coverage exact canonical(21, uniform)", "variable s: continuous [0, 1]\npopulation s ~ uniform(0, 1)\n"
     "mechanism m = interval(s, canonical(21, uniform(0, 1)))\nquery q = coverage(m)\n"),
    ("progressive 100 rounds, quadrature", "variable s: continuous [0, 1]\npopulation s ~ uniform(0, 1/2)\n"
     "mechanism m = progressive(s, rounds = 100)\nquery q = coverage(m)\n"),
    ("selective canonical(1000)", "variable s: continuous\npopulation s ~ normal(0, 1)\n"
     "mechanism c = interval(s, canonical(1000, normal(0, 1)))\nmechanism m = selective(c, tau = 1/10, rho = 1/2)\n"
     "query q = coverage(m)\n"),
]


def costs() -> int:
    from privspec.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cost.privspec"
        main(["analyze", str(path)], stdout=io.StringIO(), stderr=io.StringIO())  # imports
        for what, spec in COST_CASES:
            path.write_text(spec, encoding="utf-8")
            out, err = io.StringIO(), io.StringIO()
            t = time.perf_counter()
            code = main(["analyze", str(path)], stdout=out, stderr=err)
            print(f"{what:55s} exit {code}  {time.perf_counter() - t:6.2f} s", flush=True)
    return 0


def main_(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mutants", type=int, default=20_000)
    ap.add_argument("--slots", type=int, default=5_000)
    ap.add_argument("--analyzed", type=int, default=1_000, help="slot cases also analyzed")
    ap.add_argument("--analyzed-mutants", type=int, default=500, help="mutants of the quick specs also analyzed")
    ap.add_argument("--seconds", type=float, default=CASE_SECONDS)
    ap.add_argument("--costs", action="store_true", help="time the cases behind the limits of privspec.limits")
    ap.add_argument("--parameters", action="store_true",
                    help="every mechanism's numeric parameters at extreme values x every query that reads them")
    args = ap.parse_args(argv)
    if args.costs:
        return costs()
    if args.parameters:
        return parameters(args.seconds)
    return fuzz(args.seed, args.mutants, args.slots, args.analyzed, args.analyzed_mutants, args.seconds)


if __name__ == "__main__":
    sys.exit(main_())
