"""docs/interval-privacy.md: its commands run, and its specs and data scripts are current."""
from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from privspec.cli import main

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "interval-privacy.md"


def test_page_commands_work(tmp_path, monkeypatch):
    """Every `privspec ...` line of the page's sh blocks exits 0, in order, from a scratch
    folder (paths under specs/ and docs/ point into the repository)."""
    pytest.importorskip("privspec.backends.npmle")
    text = PAGE.read_text(encoding="utf-8")
    commands = [line for block in re.findall(r"```sh\n(.*?)```", text, re.S)
                for line in block.splitlines() if line.startswith("privspec ")]
    assert len(commands) >= 6
    monkeypatch.chdir(tmp_path)
    for line in commands:
        argv = [str(ROOT / a) if a.startswith(("specs/", "docs/")) else a for a in shlex.split(line)[1:]]
        if argv[0] == "simulate":
            argv[argv.index("--reps") + 1] = "20"       # the page's 200 replications, cut for the test
        out, err = io.StringIO(), io.StringIO()
        assert main(argv, stdout=out, stderr=err) == 0, (line, err.getvalue())
    # the page quotes the run's output
    out = io.StringIO()
    main(["run", str(ROOT / "specs/interval_privacy.privspec"), "--data", "reports.csv", "--data", "s1=s1.csv",
          "--query", "mu", "--query", "reg"], stdout=out, stderr=io.StringIO())
    for quoted in ("mu (estimate): 75.2737", "reg (estimate): {intercept: 57.0455, gdp: 0.617083}"):
        assert quoted in out.getvalue() and quoted in text


def test_bundled_data_are_what_the_scripts_make(tmp_path, monkeypatch):
    import importlib.util

    for script, files in (("make_interval.py", ["interval_raw.csv"]),
                          ("make_interval_table2.py", [f"interval_table2_{k}pct.csv" for k in (0, 1, 5)])):
        spec = importlib.util.spec_from_file_location("maker", ROOT / "specs" / "data" / script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        monkeypatch.setattr(module, "HERE", tmp_path)
        module.main()
        for f in files:
            assert pd.read_csv(tmp_path / f).equals(pd.read_csv(ROOT / "specs" / "data" / f)), f


def test_figure_is_there():
    assert (ROOT / "docs" / "img" / "interval_cdf.png").stat().st_size > 10_000
    assert "img/interval_cdf.png" in PAGE.read_text(encoding="utf-8")
