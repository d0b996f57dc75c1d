"""Start-up: what a command costs beyond importing the libraries it stands on (issue 38).

The import floor is ``import numpy, sympy, pandas, lark`` alone.  Each command runs in a
fresh process, alternating with the floor, ``--runs`` times; the figure is the median CPU
time (user + system) of the child processes, which a busy machine disturbs far less than
wall time.  The load average is printed beside the figures.

Bytecode is written once first (a user's install has it; a checkout run with
``PYTHONDONTWRITEBYTECODE`` would compile every module of privspec on every start).

Targets: ``privspec analyze specs/urn.privspec`` within 1.3x the floor;
``privspec analyze specs/planning.privspec`` under 2 s of CPU; ``import privspec`` and
``privspec --version`` within 0.3x the floor (they import none of the four).

The program pauses the cycle collector while it imports and then freezes what it imported
(``privspec.cli``); the same imports with the collector paused and frozen are printed as a
second floor, for information (the verdicts use the plain one, as the targets were set).

Unless ``--no-run``: ``privspec run`` of a subset design's MoM estimate on 10^7 reports in
a Parquet file, the whole command, within 2x a Python script that imports DuckDB and runs
``SELECT race, count(*) FROM read_parquet(...) GROUP BY race`` on the same file (the file
is written once into ``--dir``, as bench/engines.py writes it).  CPU time here too: DuckDB
counts on every core in both, and the wall time of a shared machine says more about the
other users than about the command.  The spec has been run before (the warm-up run), so the
timed runs answer from its compiled plan (privspec.run_plans, cached in ``--dir``), as a
user's second run of a spec does; the same command with plans turned off
(``PRIVSPEC_NO_PLANS=1``: the spec parsed, its model built) is printed beside it.

Run: ``python bench/startup.py [--runs 5] [--no-run]``.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
PRIVSPEC = [PY, "-m", "privspec"]

FLOOR = [PY, "-c", "import numpy, sympy, pandas, lark"]
#: the same imports as the program makes them (privspec.cli: collector paused, then frozen)
FLOOR_FROZEN = [PY, "-c", "import gc; gc.disable(); import numpy, sympy, pandas, lark; gc.freeze(); gc.enable()"]
SUBSET_SPEC = """variable race: categorical {"Amer-Indian-Eskimo", "Asian-Pac-Islander", Black, Other, White}
population race ~ categorical(0.009551, 0.031909, 0.095943, 0.008323, 0.854274)
mechanism s = subset(race, uniform)
query w = estimate distribution(race) from s by mom
"""
GROUP_BY = ("import duckdb; duckdb.connect().execute(\"SELECT race, count(*) FROM read_parquet('{path}') "
            "GROUP BY race\").fetchall()")
#: name -> (command, ratio to the floor it must stay within, or None; CPU seconds it must stay under, or None)
COMMANDS = {
    "import privspec": ([PY, "-c", "import privspec"], 0.3, None),
    "privspec --version": ([*PRIVSPEC, "--version"], 0.3, None),
    "analyze urn.privspec": ([*PRIVSPEC, "analyze", "specs/urn.privspec"], 1.3, None),
    "analyze planning.privspec": ([*PRIVSPEC, "analyze", "specs/planning.privspec"], None, 2.0),
}


def cpu_of(cmd: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one run of ``cmd`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def subset_run(directory: Path) -> tuple[list[str], list[str]]:
    """The run command on 10^7 subset reports in Parquet, and its DuckDB floor (the file
    written on the first call)."""
    from engines import generate_files  # bench/ is sys.path[0] when a script runs

    directory.mkdir(parents=True, exist_ok=True)
    path = generate_files(directory, 10 ** 7, ["subset"], ["parquet"])[("subset", "parquet")]
    spec = directory / "subset_run.privspec"
    spec.write_text(SUBSET_SPEC, encoding="utf-8")
    return [*PRIVSPEC, "run", str(spec), "--data", f"s={path}"], [PY, "-c", GROUP_BY.format(path=path)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-run", action="store_true", help="leave out the run of 10^7 subset reports")
    ap.add_argument("--dir", default="/tmp/privspec-bench", help="where the Parquet file is written (kept)")
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PRIVSPEC_NO_PLANS")}
    env["PRIVSPEC_CACHE_DIR"] = str(Path(args.dir) / "cache")   # the plans of this bench's specs
    planless = {**env, "PRIVSPEC_NO_PLANS": "1"}
    run_cmd, run_floor = (None, None) if args.no_run else subset_run(Path(args.dir))
    for cmd, _, _ in COMMANDS.values():     # bytecode once, as an install has it
        cpu_of(cmd, env)
    if run_cmd:
        cpu_of(run_cmd, env)
        cpu_of(run_floor, env)
    floor, frozen, times = [], [], {name: [] for name in COMMANDS}
    run_times, duck_times, planless_times = [], [], []
    for _ in range(args.runs):
        for name, (cmd, _, _) in COMMANDS.items():
            floor.append(cpu_of(FLOOR, env))
            times[name].append(cpu_of(cmd, env))
        frozen.append(cpu_of(FLOOR_FROZEN, env))
        if run_cmd:
            duck_times.append(cpu_of(run_floor, env))
            run_times.append(cpu_of(run_cmd, env))
            planless_times.append(cpu_of(run_cmd, planless))
    base = statistics.median(floor)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; median CPU of {args.runs} runs each")
    print(f"{'import numpy, sympy, pandas, lark (floor)':44s} {base:6.2f} s")
    print(f"{'the same, collector paused and frozen (info)':44s} {statistics.median(frozen):6.2f} s")
    failed = False
    for name, (_, ratio, cap) in COMMANDS.items():
        t = statistics.median(times[name])
        ok = (ratio is None or t <= ratio * base) and (cap is None or t <= cap)
        failed |= not ok
        target = f"<= {ratio}x" if ratio is not None else f"< {cap} s"
        print(f"{name:44s} {t:6.2f} s  {t / base:5.2f}x the floor  (target {target})  {'PASS' if ok else 'FAIL'}"
              f"  [{t / statistics.median(frozen):.2f}x the frozen floor]")
    if run_cmd:
        duck, run = statistics.median(duck_times), statistics.median(run_times)
        ok = run <= 2 * duck
        failed |= not ok
        print(f"{'DuckDB GROUP BY script, 1e7 Parquet (floor)':44s} {duck:6.2f} s")
        print(f"{'run subset MoM, 1e7 Parquet, whole command':44s} {run:6.2f} s  {run / duck:5.2f}x the floor  "
              f"(target <= 2x)  {'PASS' if ok else 'FAIL'}")
        other = statistics.median(planless_times)
        print(f"{'  the same without its plan (info)':44s} {other:6.2f} s  {other / duck:5.2f}x the floor")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
