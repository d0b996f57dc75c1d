"""Benchmark: interval-censored data as they come (censored(...)), privspec against its peers.

For each data set of tests/data (see its README) and each endpoint convention it is read
with, the NPMLE's log-likelihood from ``privspec run`` (the spec and the command line,
as a user runs them) beside:

* R's npsurv (when ``Rscript`` and the package are installed): ``npsurv(cbind(L, R))``,
  which reads ``(L, R]``; a closed ``[L, R]`` is given as ``(L - 1e-4, R]`` (every data
  end is a multiple of 0.1); the log-likelihood of its fitted F on the data (npsurv's own
  ``ll`` is printed too: for right-censored data only it takes a Kaplan-Meier shortcut
  whose ``ll`` is not the log-likelihood);
* lifelines' ``lifelines.fitters.npmle.npmle`` (closed intervals ``[l, r]``, its only
  reading: closed rows only) and surpyval's ``Turnbull.fit(turnbull_estimator="Kaplan-Meier")``
  (which reads ``(l, r]``: the other rows), run in
  ``--peer-python`` (lifelines needs pandas < 3: give a venv that has them, e.g.
  ``python3 -m venv /tmp/peers && /tmp/peers/bin/pip install lifelines surpyval``);
  the log-likelihood of their fitted F on the data under the convention of the row.

Also the time of each (one run).  Positive "ours - theirs": ours is higher.

Run:  python bench/interval_censored_peers.py [--peer-python /tmp/peers/bin/python]
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"

#: id, file, variable, mechanism arguments, convention (closed or right_closed)
SETS = [
    ("bcdeter", "bcdeter.csv", "months", "lower = lower, upper = upper", "right_closed"),
    ("bcdeter", "bcdeter.csv", "months", "lower = lower, upper = upper", "closed"),
    ("diabetes", "diabetes.csv", "age", "lower = left, upper = right", "right_closed"),
    ("diabetes", "diabetes.csv", "age", "lower = left, upper = right", "closed"),
    ("c_botulinum", "c_botulinum.csv", "lag", "lower = lower_bound_days, upper = upper_bound_days", "closed"),
    ("leukemia", "leukemia.csv", "weeks", None, None),
    ("tobin", "tobin.csv", "spending", None, None),
]


def ours(file: str, variable: str, columns: str | None, ends: str | None, folder: Path) -> tuple[float, float]:
    from privspec.cli import main

    args = ", ".join(x for x in (variable, f"ends = {ends}" if ends else None, columns) if x)
    spec = folder / "s.privspec"
    spec.write_text(f"variable {variable}: continuous{' [0, inf]' if variable != 'spending' else ''}\n"
                    f"mechanism obs = censored({args})\nquery F = estimate cdf({variable}) from obs by npmle\n")
    out = io.StringIO()
    t = time.perf_counter()
    code = main(["run", str(spec), "--data", str(DATA / file), "--format", "json"], stdout=out, stderr=io.StringIO())
    t = time.perf_counter() - t
    assert code == 0
    return json.loads(out.getvalue())["queries"]["F"]["loglik"], t


def observations(file: str, variable: str, columns: str | None, ends: str | None):
    """(left, right, closed) as privspec reads them: closed = both finite ends closed."""
    import pandas as pd

    from privspec.backends.interval.mechanisms import parse_bounds, parse_censored

    frame = pd.read_csv(DATA / file, dtype=str, keep_default_na=False)
    if columns:
        lo, hi = (part.split("=")[1].strip() for part in columns.split(","))
        c = parse_bounds(frame[lo], frame[hi], (lo, hi), ends)
    else:
        c = parse_censored(frame[variable], variable, ends)
    return c


PEER = textwrap.dedent('''
    import json, sys, time, warnings
    import numpy as np
    d = json.load(sys.stdin)
    L, R = np.array(d["left"], float), np.array(d["right"], float)
    LC, RC = np.array(d["left_closed"], bool), np.array(d["right_closed"], bool)

    def loglik(a, b, p, a_closed, b_closed):
        """sum log P(set_i) for masses p on intervals [a, b] (closedness per end), each
        counted when it lies inside the observed set."""
        # an end at -inf/inf of both is inside (the ray reaches as far)
        inside_l = (L[:, None] < a) | ((L[:, None] == a) & ((LC[:, None] & a_closed) | np.isinf(a)))
        inside_r = (b < R[:, None]) | ((b == R[:, None]) & ((RC[:, None] & b_closed) | np.isinf(b)))
        return float(np.sum(np.log((inside_l & inside_r) @ p)))

    out = {}
    if d["closed"]:
        try:
            from lifelines.fitters.npmle import npmle
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p, iv = npmle(L, R)
            t = time.perf_counter() - t
            p = p / p.sum()
            a = np.array([i.left for i in iv]); b = np.array([i.right for i in iv])
            out["lifelines"] = [loglik(a, b, p, np.isfinite(a), np.isfinite(b)), t]
        except ImportError:
            pass
    try:
        if d["closed"]:
            raise ImportError  # surpyval reads (l, r]: only where the data do
        import surpyval
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = surpyval.Turnbull.fit(xl=L, xr=R, turnbull_estimator="Kaplan-Meier")
        t = time.perf_counter() - t
        x, F = np.asarray(m.x, float), np.asarray(m.F, float)
        # its step function: the jump at x[j] is mass at the point x[j]
        p = np.diff(np.concatenate([[0.0], F]))
        if F[-1] < 1:  # the mass it leaves beyond its last point (right-censored rows): at inf
            x, p = np.append(x, np.inf), np.append(p, 1.0 - F[-1])
        keep = p > 0
        out["surpyval"] = [loglik(x[keep], x[keep], p[keep], np.ones(keep.sum(), bool),
                                  np.ones(keep.sum(), bool)), t]
    except ImportError:
        pass
    print(json.dumps(out))
''')


def peers(c, closed: bool, python: str) -> dict:
    payload = json.dumps({"left": c.left.tolist(), "right": c.right.tolist(), "closed": closed,
                          "left_closed": c.left_closed.tolist(), "right_closed": c.right_closed.tolist()})
    payload = payload.replace("Infinity", "1e999")
    res = subprocess.run([python, "-c", PEER], input=payload, capture_output=True, text=True)
    if res.returncode != 0:
        return {"error": res.stderr.strip().splitlines()[-1] if res.stderr.strip() else "failed"}
    return json.loads(res.stdout)


NPSURV = textwrap.dedent('''
    suppressMessages(library(npsurv))
    d <- read.csv(commandArgs(TRUE)[1])
    L <- ifelse(d$closed_l == 1 & d$l < d$r, d$l - 1e-4, d$l); R <- d$r
    t <- system.time(f <- npsurv(cbind(L, R), maxit = 10000, tol = 1e-12))[["elapsed"]]
    x <- f$f; pt <- x$left == x$right
    P <- sapply(seq_along(L), function(i) sum(x$p[(pt & ((L[i] < x$right & x$right <= R[i]) |
                (L[i] == R[i] & R[i] == x$right))) | (!pt & L[i] <= x$left & x$right <= R[i])]))
    cat(sprintf("%.12f %.12f %.4f", sum(log(P)), f$ll, t), "\\n")
''')


def npsurv(c, folder: Path) -> tuple[float, float, float] | None:
    if shutil.which("Rscript") is None:
        return None
    closed = c.left_closed & (c.left < c.right)
    if np.any(~c.right_closed & np.isfinite(c.right) & (c.left < c.right)):
        return None  # open right ends: not in these data
    data = folder / "d.csv"
    np.savetxt(data, np.column_stack([c.left, c.right, closed]), delimiter=",", fmt="%.17g",
               header="l,r,closed_l", comments="")
    data.write_text(data.read_text().replace("inf", "Inf"))
    script = folder / "n.R"
    script.write_text(NPSURV)
    res = subprocess.run(["Rscript", str(script), str(data)], capture_output=True, text=True)
    if res.returncode != 0:
        return None
    ll, own, t = map(float, res.stdout.split())
    return ll, own, t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer-python", default=sys.executable,
                    help="a Python with lifelines and surpyval (default: this one)")
    args = ap.parse_args()
    print(f"{'data set':<12} {'ends':<13} {'ours':>16} {'npsurv':>16} {'lifelines':>16} {'surpyval':>16}"
          f"   (log-likelihoods; ours - theirs; seconds)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, file, variable, columns, ends in SETS:
            ll, t = ours(file, variable, columns, ends, folder)
            c = observations(file, variable, columns, ends)
            closed = bool(np.all(c.left_closed | ~np.isfinite(c.left) | (c.left == c.right)))
            row = [f"{ll:16.10f}"]
            ref = npsurv(c, folder)
            row.append(f"{ref[0]:16.10f}" if ref else f"{'-':>16}")
            got = peers(c, closed, args.peer_python)
            for peer in ("lifelines", "surpyval"):
                row.append(f"{got[peer][0]:16.10f}" if peer in got else f"{'-':>16}")
            print(f"{name:<12} {ends or 'as written':<13} " + " ".join(row))
            diffs = [f"npsurv {ll - ref[0]:+.1e} ({ref[2]:.3f} s; its own ll {ref[1]:.10f})" if ref else None]
            diffs += [f"{peer} {ll - got[peer][0]:+.1e} ({got[peer][1]:.3f} s)" for peer in ("lifelines", "surpyval")
                      if peer in got]
            if "error" in got:
                diffs.append(f"peers: {got['error']}")
            print(f"{'':<27}ours {t:.3f} s; " + "; ".join(d for d in diffs if d))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
