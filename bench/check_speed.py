"""Benchmark: ``privspec check`` on a generated 5,000-line spec.

Prints our time next to the time Lark alone takes to parse the same text, as CPU
seconds (``time.process_time``, best of ``--repeat``; the two alternate, and the load
average is printed beside them).  The ratio is the figure: issue 38's target is the
check in process within 1.3x Lark alone (PASS/FAIL).  The whole command, interpreter
start and imports included, is printed too (CPU of the child process).
Run:  python bench/check_speed.py [--lines 5000] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

#: the check in process within this many times Lark alone (issue 38)
TARGET_RATIO = 1.3


def generate(lines: int) -> str:
    """A realistic spec of about ``lines`` lines: blocks of variables, populations,
    mechanisms (several spanning lines) and queries, all valid."""
    out = ['spec "generated benchmark spec"', "parameter eps > 0"]
    i = 0
    while len(out) < lines:
        c = f"c{i}"
        out += [
            f"# block {i}",
            f"variable {c}: categorical {{a, b, \"c-{i}\", d, e}}",
            f"variable s{i}: continuous [0, 100]",
            f"variable g{i}: categorical {{F, M}}",
            f"variable h{i}: categorical {{low, high}}",
            f"variable gh{i} = g{i} * h{i}",
            f"population {c} ~ categorical(a = 0.1, b = 0.2, \"c-{i}\" = 0.3, d = 1/10, e = 3/10)",
            f"population s{i} ~ uniform(0, 100)",
            f"population (g{i}, h{i}) ~ counts [[9592, 1179], [15128, 6662]]",
            f"mechanism u{i} = subset({c}, uniform)",
            f"mechanism k{i} = subset({c}, independent {{ {{a, b}}: 2/5, {{a, c-{i}}}: 0, {{a, d}}: 3/10,".replace("c-", "\"c-").replace(f"\"c-{i}}}", f"\"c-{i}\"}}"),
            f"                                    {{b, d}}: 3/10 }})",
            f"mechanism r{i} = grr({c}, epsilon = log(3))",
            f"mechanism q{i} = grr({c}, epsilon = eps)",
            f"mechanism w{i} = rr(g{i}, matrix [[3/4, 1/4],",
            f"                               [1/4, 3/4]])",
            f"mechanism p{i} = product(grr(g{i}, epsilon = 1), grr(h{i}, epsilon = 1), grr({c}, epsilon = 1))",
            f"mechanism gm{i} = subset(gh{i}, sizes {{2: 1/2, 3: 1/2}})",
            f"mechanism i{i} = interval(s{i}, case2(uniform(0, 100)), disclose [0, 10])",
            f"query e{i} = estimate distribution({c}) from u{i} by mle",
            f"query v{i} = avar(distribution({c}) from q{i} by mom)",
            f"query j{i} = estimate joint(g{i}, h{i}) from p{i} by castell",
            f"query l{i} = leakage(u{i}, size, mutual_information, prediction)",
            f"query f{i} = estimate cdf(s{i}) from i{i} by npmle",
        ]
        i += 1
    return "\n".join(out) + "\n"


def cpu(fn) -> float:
    """CPU seconds of one call of ``fn`` in this process."""
    t = time.process_time()
    fn()
    return time.process_time() - t


def child_cpu(cmd: list[str]) -> float:
    """CPU seconds (user + system) of one run of ``cmd`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from lark import Lark

    import privspec

    text = generate(args.lines)
    nlines = text.count("\n")
    spec = privspec.load(text)
    errors = [d for d in spec.check() if d.is_error]
    assert not errors, spec.render_diagnostics()[:2000]

    # the same grammar, plain Lark: lexing, LALR parsing and tree building, nothing of ours
    parser = Lark.open_from_package("privspec.grammar", "privspec.lark", ("",), parser="lalr", start="file")
    lark_times, check_times = [], []
    for _ in range(args.repeat):  # alternating, so that a change of load touches both
        lark_times.append(cpu(lambda: parser.parse(text, start="file")))
        check_times.append(cpu(lambda: privspec.load(text).check()))
    lark_time, check_time = min(lark_times), min(check_times)

    # the whole command, as a user runs it (interpreter start and imports included)
    with tempfile.NamedTemporaryFile("w", suffix=".privspec", delete=False) as f:
        f.write(text)
    try:
        cli_time = min(child_cpu([sys.executable, "-m", "privspec", "check", f.name])
                       for _ in range(max(1, args.repeat // 2)))
    finally:
        os.unlink(f.name)

    load = os.getloadavg()
    ratio = check_time / lark_time
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; CPU seconds, best of {args.repeat}")
    print(f"spec: {nlines} lines, {len(spec.model.mechanisms)} mechanisms, {len(spec.model.queries)} queries")
    print(f"lark alone (parse, start=file):        {lark_time:8.3f} s")
    print(f"privspec check (in process):           {check_time:8.3f} s   {ratio:5.2f}x lark  "
          f"(target <= {TARGET_RATIO}x)  {'PASS' if ratio <= TARGET_RATIO else 'FAIL'}")
    print(f"privspec check (command, cold start):  {cli_time:8.3f} s   {cli_time / lark_time:5.2f}x lark")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
