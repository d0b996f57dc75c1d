"""Every bundled comparison's verdict, checked by seeded simulation.

For each ``compare`` block of the bundled specs (specs/*.privspec), the comparison is run
with ``reps`` replications of each candidate's estimator at the block's n (the same code
path as ``privspec compare SPEC --reps R --seed S``) and the verdict is checked against the
simulated values:

* a recommended design: each utility target it is said to meet holds for its simulated
  value within Monte Carlo error (``simulated - 3 mc <= target`` for ``<=``; privacy
  targets are exact, not sampling quantities, and a power target is the Wald test's
  analytic power, whose size and power tests/test_planning.py checks by simulation: both
  read off as they are, marked "exact");
* no design meets the targets: the cheapest fix is checked the same way at the n it names
  (the block rerun at that n, the named design then recommended and its targets met);
* no targets: the recommended design is the most precise on the deciding criterion by
  simulation too (not worse than the runner-up beyond 3 combined Monte Carlo errors).

Prints one line per block, PASS or FAIL, and exits 1 on any FAIL.

Run:  python bench/verdicts.py [--reps R] [--seed S]   (default 200 replications, seed 2026;
13 minutes on a busy 2-core machine, 2026-11-28: the interval NPMLE block takes half).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import re
import sys
import time
from pathlib import Path

import sympy

import privspec
from privspec.backends.design.comparison import compare_designs

SPECS = Path(__file__).resolve().parents[1] / "specs"
OPS = {"<=": lambda x, v: x <= v, "<": lambda x, v: x < v, ">=": lambda x, v: x >= v, ">": lambda x, v: x > v}


def simulated_meets(doc, name: str) -> tuple[bool, list[str]]:
    """Whether candidate ``name`` meets each target of ``doc`` by its simulated values
    (within 3 Monte Carlo errors), and the checks in words."""
    row = next(r for r in doc.candidates if r.name == name)
    ok, said = True, []
    for t in doc.targets:
        v = row.values.get(t.criterion)
        if v is None or v.simulated is None:
            said.append(f"{t.criterion} {v.value if v else None:.4g} (exact)" if v and v.value is not None
                        else f"{t.criterion}: not simulated")
            continue
        slack = 3 * (v.mc_error or 0.0)
        # within Monte Carlo error: the target is met unless the simulation says otherwise beyond 3 mc
        better = t.op in ("<=", "<")
        met = OPS[t.op](v.simulated - slack if better else v.simulated + slack, t.value)
        ok = ok and met
        said.append(f"{t.criterion} simulated {v.simulated:.4g} +- {v.mc_error:.2g} {t.op} {t.value:g}: "
                    f"{'ok' if met else 'MISSED'}")
    return ok, said


def check_block(model, comp, reps: int, seed: int) -> tuple[bool, str]:
    doc = compare_designs(model, comp, reps=reps, seed=seed)
    rec = doc.recommendation
    if rec is None:
        return True, "no verdict (no values)"
    if rec.candidate is not None and doc.targets:
        ok, said = simulated_meets(doc, rec.candidate)
        return ok, f"{rec.candidate} at n = {doc.n:,}: " + "; ".join(said)
    if rec.candidate is None:
        m = re.search(r"fix: (\w+) with n = ([\d,]+)", rec.text)
        if m is None:
            return True, f"no design meets the targets and no n helps ({rec.text})"
        name, n = m.group(1), int(m.group(2).replace(",", ""))
        plan = dataclasses.replace(comp.plan, n=sympy.Integer(n))
        again = compare_designs(model, dataclasses.replace(comp, plan=plan), reps=reps, seed=seed)
        ok, said = simulated_meets(again, name)
        chosen = again.recommendation.candidate if again.recommendation else None
        return ok and chosen is not None, f"fix {name} at n = {n:,} (then {chosen} is chosen): " + "; ".join(said)
    # no targets: the most precise on the deciding criterion, by simulation too
    u = rec.decided_by
    rows = {r.name: r for r in doc.candidates}
    best, runner = rows[rec.candidate].values[u], rows[rec.runner_up].values[u] if rec.runner_up else None
    if best.simulated is None or runner is None or runner.simulated is None:
        return True, f"{rec.candidate} on {u}: {best.value:.4g} (analytic only: {best.simulated_na})"
    slack = 3 * math.hypot(best.mc_error or 0.0, runner.mc_error or 0.0)
    lower = doc.criterion_info[u].better == "lower"
    ok = best.simulated <= runner.simulated + slack if lower else best.simulated >= runner.simulated - slack
    return ok, (f"{rec.candidate} {u} simulated {best.simulated:.4g} +- {best.mc_error:.2g} against "
                f"{runner.simulated:.4g} +- {runner.mc_error:.2g} for {rec.runner_up}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("specs", nargs="*", metavar="SPEC", help="the bundled specs to check by name (default: all)")
    args = ap.parse_args()
    failed = 0
    print(f"Verdicts of the bundled comparisons by simulation ({args.reps} replications, seed {args.seed})\n")
    for path in sorted(SPECS.glob("*.privspec")):
        spec = privspec.load(path)
        if not spec.ok or not spec.model.compares or (args.specs and path.stem not in args.specs):
            continue
        for comp in spec.model.compares.values():
            t = time.perf_counter()
            ok, said = check_block(spec.model, comp, args.reps, args.seed)
            failed += not ok
            print(f"{'PASS' if ok else 'FAIL'}  {path.stem}/{comp.name} ({time.perf_counter() - t:.0f} s): {said}",
                  flush=True)
    print(f"\n{'every verdict holds' if not failed else f'{failed} verdict(s) FAIL'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
