"""Compiled run plans (privspec.run_plans): the second ``privspec run`` of a spec answers
from the plan the first one wrote, with the same output to the last character, in every
format; in a fresh interpreter without sympy, pandas, lark or scipy's submodules; and
anything a plan does not read as the usual path would (a missing value, a report the
mechanism cannot give, a CSV file, an unplanned query, a column two mechanisms would
read) goes the usual way, with its usual message.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec import run_plans
from privspec.cli import main

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("sympy", "pandas", "lark", "pyarrow", "scipy.stats", "scipy.special", "scipy.optimize", "scipy.linalg")

SPECS = {
    "uniform": """variable race: categorical {"Amer-Indian-Eskimo", "Asian-Pac-Islander", Black, Other, White}
population race ~ categorical(0.009551, 0.031909, 0.095943, 0.008323, 0.854274)
mechanism s = subset(race, uniform)
query w = estimate distribution(race) from s by mom
""",
    "methods": """variable x: categorical {a, b, c, d}
population x ~ categorical(0.1, 0.2, 0.3, 0.4)
mechanism s = subset(x, uniform)
query m = estimate distribution(x) from s by mom
query l = estimate distribution(x) from s by mle
query e = estimate distribution(x) from s by em
query c = estimate distribution(x) from s by mom(se = conditional)
""",
    "grr": """variable c: categorical {u, v, w}
population c ~ categorical(0.5, 0.3, 0.2)
mechanism g = grr(c, epsilon = 1)
query m = estimate distribution(c) from g by mom
query l = estimate distribution(c) from g by mle
""",
}


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(argv, stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def _args(argv: list[str]) -> argparse.Namespace:
    from privspec.cli import _parser    # noqa: PLC2701 - the command line's own options
    return _parser().parse_args(argv)


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("PRIVSPEC_CACHE_DIR", str(folder))
    monkeypatch.delenv("PRIVSPEC_NO_PLANS", raising=False)
    return folder


def _case(tmp_path: Path, name: str, n: int = 3000, suffix: str = ".parquet") -> tuple[Path, Path]:
    """The spec ``name`` and a file of its mechanism's reports (privatized by privspec)."""
    text = SPECS[name]
    spec_path = tmp_path / f"{name}.privspec"
    spec_path.write_text(text, encoding="utf-8")
    spec = privspec.load(text)
    mech = next(iter(spec.model.mechanisms))
    var = spec.model.mechanisms[mech].variable
    labels = list(var.labels)
    rng = np.random.default_rng(7)
    weights = np.arange(1, len(labels) + 1, dtype=float)
    raw = pd.DataFrame({var.name: rng.choice(labels, size=n, p=weights / weights.sum())})
    reports = spec.privatize(raw, mech, seed=3)
    data = tmp_path / f"{name}{suffix}"
    frame = pd.DataFrame({var.name: reports[var.name].astype(str)})
    if suffix == ".parquet":
        frame.to_parquet(data)
    else:
        frame.to_csv(data, index=False)
    return spec_path, data


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("fmt", [["--format", "text"], ["--verbose"], ["--format", "json"],
                                 ["--format", "markdown"], ["--format", "latex"]])
def test_the_plan_answers_as_the_usual_path(tmp_path: Path, cache: Path, name: str, fmt: list[str]) -> None:
    spec_path, data = _case(tmp_path, name)
    argv = ["run", str(spec_path), "--data", str(data), *fmt]
    first = _run(argv)                              # the usual path, which writes the plan
    assert first[0] == 0 and list((cache / "privspec" / "plans").glob("*.pickle"))
    planned = io.StringIO()
    assert run_plans.planned_run(_args(argv), planned) == 0     # the plan answers ...
    assert planned.getvalue() == first[1]                     # ... to the last character
    assert _run(argv) == first                                 # and the command takes it


def test_a_fresh_run_from_a_plan_imports_no_heavy_library(tmp_path: Path, cache: Path) -> None:
    spec_path, data = _case(tmp_path, "uniform")
    argv = ["run", str(spec_path), "--data", f"s={data}"]
    assert _run(argv)[0] == 0
    probe = ("import contextlib, io, json, sys\nfrom privspec.cli import main\nout = io.StringIO()\n"
             f"rc = main({argv!r}, stdout=out)\n"
             f"print(json.dumps([rc, out.getvalue(), [m for m in {list(HEAVY)!r} if m in sys.modules]]))")
    got = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "PRIVSPEC_CACHE_DIR": str(cache)})
    rc, text, heavy = json.loads(got.stdout.strip().splitlines()[-1])
    assert (rc, heavy) == (0, [])
    assert text == _run(argv)[1]


def test_every_query_or_the_usual_path(tmp_path: Path, cache: Path) -> None:
    spec_path, data = _case(tmp_path, "methods")
    assert _run(["run", str(spec_path), "--data", str(data)])[0] == 0
    for asked in (["--query", "e"], ["--query", "c", "--query", "m"]):
        argv = ["run", str(spec_path), "--data", str(data), *asked]
        assert run_plans.planned_run(_args(argv), io.StringIO()) == 0
    # a spec with a query no plan answers (an analysis): the plan covers the others only
    extra = tmp_path / "more.privspec"
    extra.write_text(SPECS["methods"] + "query tau = coverage(s)\n", encoding="utf-8")
    argv = ["run", str(extra), "--data", str(data)]
    first = _run(argv)
    assert first[0] == 0 and run_plans.planned_run(_args(argv), io.StringIO()) is None
    assert run_plans.planned_run(_args([*argv, "--query", "m"]), io.StringIO()) == 0
    assert _run(argv) == first


@pytest.mark.parametrize("bad, code", [("", "D004"), ("NA", "D004"), ("a|z", "D010"), ("a", "D010")])
def test_data_a_plan_does_not_read_go_the_usual_way(tmp_path: Path, cache: Path, bad: str, code: str) -> None:
    spec_path, data = _case(tmp_path, "methods")
    argv = ["run", str(spec_path), "--data", str(data), "--query", "m"]
    assert _run(argv)[0] == 0 and run_plans.planned_run(_args(argv), io.StringIO()) == 0
    frame = pd.read_parquet(data)
    frame.loc[5, "x"] = bad
    frame.to_parquet(data)
    assert run_plans.planned_run(_args(argv), io.StringIO()) is None
    rc, out, err = _run(argv)
    assert rc == 1 and code in err and out == ""


def test_csv_and_other_options_go_the_usual_way(tmp_path: Path, cache: Path) -> None:
    spec_path, data = _case(tmp_path, "grr", suffix=".csv")
    argv = ["run", str(spec_path), "--data", str(data)]
    first = _run(argv)
    assert first[0] == 0 and run_plans.planned_run(_args(argv), io.StringIO()) is None
    assert _run(argv) == first
    parquet = _case(tmp_path, "grr")[1]
    argv = ["run", str(spec_path), "--data", str(parquet)]
    assert _run(argv)[0] == 0
    for other in (["--engine", "pandas"], ["--weights", "w"]):
        assert run_plans.planned_run(_args([*argv, *other]), io.StringIO()) is None


def test_a_column_two_mechanisms_would_read_is_refused_as_ever(tmp_path: Path, cache: Path) -> None:
    text = SPECS["methods"] + "mechanism t = subset(x, uniform)\nquery mt = estimate distribution(x) from t by mom\n"
    spec_path = tmp_path / "two.privspec"
    spec_path.write_text(text, encoding="utf-8")
    data = _case(tmp_path, "methods")[1]
    one = ["run", str(spec_path), "--data", str(data), "--query", "m"]
    assert _run(one)[0] == 0 and run_plans.planned_run(_args(one), io.StringIO()) == 0
    both = ["run", str(spec_path), "--data", str(data)]
    assert run_plans.planned_run(_args(both), io.StringIO()) is None
    rc, _, err = _run(both)
    assert rc == 1 and "D006" in err
    bound = ["run", str(spec_path), "--data", f"s={data}", "--data", f"t={data}"]
    first = _run(bound)
    assert first[0] == 0 and run_plans.planned_run(_args(bound), io.StringIO()) == 0
    assert _run(bound) == first


def test_plans_off_stale_or_broken(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec_path, data = _case(tmp_path, "grr")
    argv = ["run", str(spec_path), "--data", str(data)]
    monkeypatch.setenv("PRIVSPEC_NO_PLANS", "1")
    first = _run(argv)
    assert first[0] == 0 and not (cache / "privspec" / "plans").exists()
    monkeypatch.delenv("PRIVSPEC_NO_PLANS")
    assert _run(argv) == first
    [plan] = (cache / "privspec" / "plans").glob("*.pickle")
    plan.write_bytes(b"not a plan")                # a broken file: the usual path, which writes it anew
    assert run_plans.planned_run(_args(argv), io.StringIO()) is None
    assert _run(argv) == first and run_plans.planned_run(_args(argv), io.StringIO()) == 0
    plan.chmod(0o666)                              # a plan others may write is never read
    assert run_plans.planned_run(_args(argv), io.StringIO()) is None
    plan.chmod(0o600)
    assert run_plans.planned_run(_args(argv), io.StringIO()) == 0
    # another spec text is another plan
    spec_path.write_text(SPECS["grr"].replace("epsilon = 1", "epsilon = 2"), encoding="utf-8")
    assert run_plans.planned_run(_args(argv), io.StringIO()) is None


def test_a_spec_with_warnings_has_no_plan(tmp_path: Path, cache: Path) -> None:
    text = SPECS["grr"] + "mechanism w = rr(c, matrix [[1/3, 1/3, 1/3], [1/3, 1/3, 1/3], [1/3, 1/3, 1/3]])\n"
    assert [d.code for d in privspec.load(text).diagnostics] == ["W101"]    # not identifiable
    spec_path = tmp_path / "warn.privspec"
    spec_path.write_text(text, encoding="utf-8")
    data = _case(tmp_path, "grr")[1]
    argv = ["run", str(spec_path), "--data", str(data)]
    first = _run(argv)
    assert first[0] == 0 and first[2]            # the warning, on stderr
    assert run_plans.planned_run(_args(argv), io.StringIO()) is None
    assert _run(argv) == first


def test_the_cache_keeps_the_most_recently_used_plans(tmp_path: Path, cache: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_plans, "PLANS_KEPT", 2)
    data = _case(tmp_path, "grr")[1]
    paths = []
    for eps in (1, 2, 3):
        spec_path = tmp_path / f"grr{eps}.privspec"
        spec_path.write_text(SPECS["grr"].replace("epsilon = 1", f"epsilon = {eps}"), encoding="utf-8")
        paths.append(spec_path)
        time.sleep(0.05)     # apart by more than the file system's clock tick (a few ms)
        assert _run(["run", str(spec_path), "--data", str(data)])[0] == 0
        if eps == 2:     # the first one used again: the second is then the oldest
            time.sleep(0.05)
            assert run_plans.planned_run(_args(["run", str(paths[0]), "--data", str(data)]), io.StringIO()) == 0
    assert len(list((cache / "privspec" / "plans").glob("*.pickle"))) == 2
    kept = [run_plans.load_plan(p.read_bytes()) is not None for p in paths]
    assert kept == [True, False, True]


def test_a_name_twice_in_a_parquet_file_goes_the_usual_way(tmp_path: Path, cache: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    spec_path, data = _case(tmp_path, "grr")
    argv = ["run", str(spec_path), "--data", str(data)]
    assert _run(argv)[0] == 0 and run_plans.planned_run(_args(argv), io.StringIO()) == 0
    column = pd.read_parquet(data)["c"].tolist()
    pq.write_table(pa.Table.from_arrays([pa.array(column), pa.array(column)], names=["c", "c"]), data)
    assert run_plans.planned_run(_args(argv), io.StringIO()) is None
    rc, _, err = _run(argv)
    assert rc == 1 and "D014" in err
