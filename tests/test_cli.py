"""The runner's verbs, exit codes and formats (privspec.cli.main)."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from privspec.cli import main

SPECS = Path(__file__).resolve().parent.parent / "specs"
URN = str(SPECS / "urn.privspec")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("spec", sorted(SPECS.glob("*.privspec")), ids=lambda p: p.name)
def test_every_bundled_spec_checks(spec: Path) -> None:
    code, out, err = run("check", str(spec))
    assert code == 0, err
    assert out.startswith(f"{spec}: ok")


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "latex"])
def test_check_formats(fmt: str) -> None:
    code, out, _ = run("check", URN, "--format", fmt)
    assert code == 0
    if fmt == "json":
        doc = json.loads(out)
        assert doc["ok"] is True and doc["summary"]["mechanisms"] == 5
        assert [d["code"] for d in doc["diagnostics"]] == ["W101"]  # `cond` is not identifiable
    elif fmt == "markdown":
        assert "| W101 |" in out.replace("| warning | W101", "| W101")
    elif fmt == "latex":
        assert "\\begin{tabular}" in out
    else:
        assert "1 warning" in out


def test_check_invalid_spec_exit_1_with_location(tmp_path: Path) -> None:
    f = tmp_path / "bad.privspec"
    f.write_text("variable color: categorical {black, red}\nmechanism m = subset(colr, uniform)\n")
    code, out, err = run("check", str(f))
    assert code == 1
    assert f"{f}:2:22: error[E201]: unknown variable 'colr'" in err
    assert "did you mean 'color'?" in err
    assert out == ""


@pytest.mark.parametrize("argv", [[], ["frobnicate", URN], ["check"], ["check", URN, "--format", "xml"],
                                  ["analyze", URN, "--query", "nonesuch"], ["run", URN],
                                  ["privatize", URN, "--mechanism", "nope", "--input", "a", "--output", "b"]])
def test_usage_errors_exit_2(argv: list[str]) -> None:
    code, _, err = run(*argv)
    assert code == 2
    assert "Traceback" not in err


def test_unknown_query_suggests_a_name() -> None:
    code, _, err = run("analyze", URN, "--query", "cv")
    assert code == 2 and "did you mean 'cov'?" in err


def test_missing_file_exit_1() -> None:
    code, _, err = run("check", "no/such/file.privspec")
    assert code == 1 and "no such spec file" in err


def test_not_utf8_exit_1(tmp_path: Path) -> None:
    f = tmp_path / "latin1.privspec"
    f.write_bytes("variable x: categorical {caf\xe9, b}\n".encode("latin-1"))
    code, _, err = run("check", str(f))
    assert code == 1 and "E100" in err


@pytest.fixture
def no_back_ends(monkeypatch):
    """The runner as it is before any back end exists: every query unsupported."""
    import privspec.backends as backends

    monkeypatch.setattr(backends, "REGISTRY", {})
    monkeypatch.setattr(backends, "_loaded", True)


@pytest.mark.parametrize("verb", [["analyze"], ["run", "--data", "x.csv"], ["simulate", "--n", "100"],
                                  ["compare"], ["privatize", "--mechanism", "urn", "--input", "raw.csv",
                                                "--output", "OUT.csv"]])
def test_verbs_without_back_end_say_not_supported(verb: list[str], tmp_path: Path, no_back_ends) -> None:
    spec = str(SPECS / ("compare_race.privspec" if verb[0] == "compare" else "urn.privspec"))
    argv = [verb[0], spec, *verb[1:]]
    if verb[0] == "privatize":
        argv[-1] = str(tmp_path / "OUT.csv")
    code, out, err = run(*argv)
    assert code == 1
    assert "not supported yet" in err
    assert "Traceback" not in err and out == ""
    assert not (tmp_path / "OUT.csv").exists()


def test_analyze_names_the_query_kind(no_back_ends) -> None:
    code, _, err = run("analyze", URN, "--query", "cov")
    assert code == 1
    assert "query 'cov' is not supported yet (coverage queries" in err


def test_analyze_refuses_data_queries() -> None:
    code, _, err = run("analyze", URN, "--query", "w")
    assert code == 1 and "needs data" in err


def test_invalid_spec_blocks_other_verbs(tmp_path: Path) -> None:
    f = tmp_path / "bad.privspec"
    f.write_text("variable x: categorical {a, b, c, d}\nquery q = coverage(nope)\n")
    code, _, err = run("analyze", str(f))
    assert code == 1 and "nothing was done" in err and "E201" in err


def test_version_and_module_entry_point() -> None:
    code, _, _ = run("--version")
    assert code == 0
    proc = subprocess.run([sys.executable, "-m", "privspec", "check", URN], capture_output=True, text=True)
    assert proc.returncode == 0 and "ok" in proc.stdout
