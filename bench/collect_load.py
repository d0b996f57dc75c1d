"""Benchmark: the survey collector under load (``privspec serve``, SQLite, loopback).

Starts the real server (``python -m privspec serve``: uvicorn, a SQLite store in a
temporary folder, or the empty store ``--db URL``) on a free port of 127.0.0.1, and drives ``POST /api/submit`` from
``--clients`` concurrent keep-alive connections (raw asyncio streams: a client as light
as possible, so that the machine's cores go to the server) until ``--n`` submissions are
sent or ``--seconds`` have passed.  The submissions are drawn by ``privatize`` from a
spec of three mechanism families (subset, grr, interval), so every one is checked as
``run`` would check it.  Then the server is stopped (SIGINT: it commits what it holds)
and the store read back.

Prints submissions/s (acknowledged, over the wall time of the load), p50/p99 latency,
and the lost submissions both ways: acknowledged ids missing from the store, and stored
rows nobody acknowledged (a request that timed out or whose answer was lost); PASS when
the rate is >= ``--target`` (2,000/s, the issue's target on a 2-core machine) and
nothing is lost.

The server's CPU time per submission is printed too: on a shared machine it says what
one free core would sustain.  uvicorn parses HTTP with httptools where it is installed,
else with h11 (pure Python, about 160 us more per submission); the last line says which.

Run:  python bench/collect_load.py [--n 20000] [--clients 64] [--seconds 120] [--design finite|mixed]
      [--db postgresql://...]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd

import privspec
from privspec.api import privatize
from privspec.backends.collect.store import open_store

SPEC = textwrap.dedent("""\
    spec "Load test"
    variable color: categorical {black, red, green, blue}
    variable race: categorical {a, b, c}
    variable salary: continuous [0, 150]
    mechanism s = subset(color, uniform)
    mechanism g = grr(race, epsilon = 1)
    mechanism o = oue(race, epsilon = 2)
    mechanism c1 = interval(salary, case1(uniform(0, 150)))
    query w = estimate distribution(color) from s by mle
    query mu = estimate mean(salary) from c1 by unbiased
    """)

#: the mechanisms fielded: ``finite`` reports repeat (a survey of categories), an interval
#: mechanism's are new every time (its random range), so each is read again
DESIGNS = {"finite": ("s", "g", "o"), "mixed": ("s", "g", "c1")}

TOKEN = "bench-token"


def bodies(design: str, count: int, seed: int = 1) -> list[bytes]:
    """``count`` submissions of ``design``'s mechanisms as JSON bodies, drawn by privatize."""
    spec = privspec.load(SPEC)
    rng = np.random.default_rng(seed)
    raw = pd.DataFrame({"color": rng.choice(["black", "red", "green", "blue"], count),
                        "race": rng.choice(["a", "b", "c"], count),
                        "salary": rng.uniform(0, 150, count).round(2).astype(str)})
    frames = {m: privatize(spec, raw, m, seed=seed) for m in DESIGNS[design]}
    # a report fills one cell, or an object column -> cell (as the store takes it)
    cols = {m: f.iloc[:, 0].tolist() if f.shape[1] == 1 else f.to_dict("records") for m, f in frames.items()}
    return [json.dumps({"reports": {m: cols[m][i] for m in cols}}).encode() for i in range(count)]


def start_server(folder: Path, design: str, db: str) -> tuple[subprocess.Popen, int]:
    """``privspec serve`` on a free port of 127.0.0.1; the process and its port."""
    spec = folder / "load.privspec"
    spec.write_text(SPEC, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "privspec", "serve", str(spec), "--db", db,
                             "--port", "0", "--token", TOKEN, *(f"--mechanism={m}" for m in DESIGNS[design])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()   # "survey:  http://127.0.0.1:PORT/"
    if not line.startswith("survey:"):
        proc.kill()
        raise SystemExit(f"the server did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
    return proc, int(line.rsplit(":", 1)[1].strip("/\n "))


async def client(port: int, work: list[bytes], deadline: float, acked: list[int], latencies: list[float],
                 errors: list[str]) -> None:
    """One keep-alive connection sending the submissions of ``work`` one after another."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for body in work:
            if time.perf_counter() > deadline:
                return
            head = (f"POST /api/submit HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n").encode()
            start = time.perf_counter()
            writer.write(head + body)
            status_line = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            answer = await reader.readexactly(length)
            latencies.append(time.perf_counter() - start)
            if status_line.split()[1] == b"201":
                acked.append(json.loads(answer)["id"])
            else:
                errors.append(f"{status_line.decode().strip()} {answer[:200]!r}")
    finally:
        writer.close()


async def load(port: int, work: list[bytes], clients: int, seconds: float) -> tuple[float, list[int], list[float],
                                                                                    list[str]]:
    acked: list[int] = []
    latencies: list[float] = []
    errors: list[str] = []
    start = time.perf_counter()
    deadline = start + seconds
    await asyncio.gather(*(client(port, work[i::clients], deadline, acked, latencies, errors)
                           for i in range(clients)))
    return time.perf_counter() - start, acked, latencies, errors


def parser() -> str:
    """The HTTP parser uvicorn picks: httptools where installed, else h11 (pure Python)."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        return "h11"
    return "httptools"


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system) a process has used, from /proc (None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000, help="submissions to send (default: 20000)")
    ap.add_argument("--clients", type=int, default=64, help="concurrent connections (default: 64)")
    ap.add_argument("--seconds", type=float, default=120, help="stop sending after this long (default: 120)")
    ap.add_argument("--design", choices=DESIGNS, default="mixed",
                    help="the mechanisms fielded: finite (subset, grr, oue) or mixed (subset, grr, interval; "
                         "the default)")
    ap.add_argument("--db", default=None, metavar="URL",
                    help="an empty store to fill, e.g. postgresql://... (default: SQLite in a temporary folder)")
    ap.add_argument("--target", type=float, default=2_000, help="submissions/s to PASS (default: 2000)")
    args = ap.parse_args()

    pool = bodies(args.design, min(args.n, 5_000))
    work = [pool[i % len(pool)] for i in range(args.n)]
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or f"sqlite:///{tmp}/r.db"
        proc, port = start_server(Path(tmp), args.design, db)
        try:
            before = cpu_seconds(proc.pid)
            wall, acked, latencies, errors = asyncio.run(load(port, work, args.clients, args.seconds))
            after = cpu_seconds(proc.pid)
        finally:
            proc.send_signal(signal.SIGINT)   # a clean stop: what the server holds is committed
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        with open_store(db, privspec.load(SPEC).model, create=False) as store:
            stored = set(store.ids())
    rate = len(acked) / wall
    lat = np.array(latencies) * 1000
    lost = len(set(acked) - stored)
    unacked = len(stored - set(acked))
    print(f"collector load: {len(acked)} submissions acknowledged in {wall:.2f} s from {args.clients} clients "
          f"({len(errors)} refused{': ' + errors[0] if errors else ''})")
    print(f"  submissions/s: {rate:,.0f}")
    print(f"  latency: p50 {np.percentile(lat, 50):.1f} ms, p99 {np.percentile(lat, 99):.1f} ms, "
          f"max {lat.max():.1f} ms")
    if before is not None and after is not None and acked:
        # the machine may be shared: the server's own CPU time per submission says what
        # one free core would sustain, whatever else ran meanwhile
        per = (after - before) / len(acked)
        print(f"  server CPU: {per * 1e6:.0f} us per submission (one free core: about {1 / per:,.0f}/s); "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"  lost: {lost} acknowledged ids not in the store; {unacked} stored rows not acknowledged")
    ok = rate >= args.target and lost == 0 and unacked == 0 and not errors
    print(f"{'PASS' if ok else 'FAIL'}: >= {args.target:,.0f} submissions/s and 0 lost "
          f"(server exit status {proc.returncode}; HTTP parser: {parser()})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
