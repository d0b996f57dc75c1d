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

Run: ``python bench/startup.py [--runs 5]``.
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for cmd, _, _ in COMMANDS.values():     # bytecode once, as an install has it
        cpu_of(cmd, env)
    floor, times = [], {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, (cmd, _, _) in COMMANDS.items():
            floor.append(cpu_of(FLOOR, env))
            times[name].append(cpu_of(cmd, env))
    base = statistics.median(floor)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; median CPU of {args.runs} runs each")
    print(f"{'import numpy, sympy, pandas, lark (floor)':44s} {base:6.2f} s")
    failed = False
    for name, (_, ratio, cap) in COMMANDS.items():
        t = statistics.median(times[name])
        ok = (ratio is None or t <= ratio * base) and (cap is None or t <= cap)
        failed |= not ok
        target = f"<= {ratio}x" if ratio is not None else f"< {cap} s"
        print(f"{name:44s} {t:6.2f} s  {t / base:5.2f}x the floor  (target {target})  {'PASS' if ok else 'FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
