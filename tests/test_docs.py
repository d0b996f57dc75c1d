"""The docs match what exists: README and LANGUAGE.md examples check clean."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import privspec

ROOT = Path(__file__).resolve().parent.parent
LANGUAGE = ROOT.parent / "shared" / "design" / "LANGUAGE.md"


def test_readme_spec_example_checks() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## A spec in ten lines\n\n```\n(.*?)```", readme, re.S).group(1)
    spec = privspec.load(block)
    assert spec.check() == []
    assert len(block.strip().splitlines()) <= 12


def test_readme_commands_name_real_files() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in re.findall(r"privspec (?:check|analyze) (\S+\.privspec)", readme):
        if path != "bad.privspec":
            assert (ROOT / path).is_file(), path


@pytest.mark.skipif(not LANGUAGE.is_file(), reason="shared/design/LANGUAGE.md is not beside the checkout")
def test_language_example_is_bundled_verbatim_and_checks() -> None:
    block = re.search(r"```\n(.*?)```", LANGUAGE.read_text(encoding="utf-8"), re.S).group(1)
    assert (ROOT / "specs" / "language.privspec").read_text(encoding="utf-8") == block
    spec = privspec.load(block)
    assert spec.ok, spec.render_diagnostics()
    # the only diagnostic: `cond` is a valid conditional design that is not identifiable
    assert [d.code for d in spec.check()] == ["W101"]
    model = spec.model
    assert model.variables["gi"].labels == ("Female.Low", "Female.High", "Male.Low", "Male.High")
    assert set(model.mechanisms) >= {"urn", "cond", "indep", "pairs", "floor", "gi_m", "prod", "rr", "rr_s",
                                     "warner", "multi", "whole", "c1", "s1", "c2", "life2", "cm", "ring",
                                     "open", "sel", "prog"}
    assert len(model.queries) == 24 and list(model.compares) == ["race_designs"]


@pytest.mark.parametrize("page", ["subset-privacy.md", "randomized-response.md", "oracles.md"])
def test_doc_page_commands_work(page: str, tmp_path, monkeypatch) -> None:
    """Every `privspec ...` line in the page's sh blocks runs and exits 0 (from the
    repository root, as the page says; outputs go to a temporary folder)."""
    import io
    import shlex

    from privspec.cli import main

    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    commands = [line for block in re.findall(r"```sh\n(.*?)```", text, re.S)
                for line in block.splitlines() if line.startswith("privspec ")]
    assert commands
    monkeypatch.chdir(tmp_path)
    for line in commands:
        argv = [str(ROOT / a) if a.startswith(("specs/", "docs/")) else a for a in shlex.split(line)[1:]]
        out, err = io.StringIO(), io.StringIO()
        assert main(argv, stdout=out, stderr=err) == 0, (line, err.getvalue())


def test_architecture_names_modules_that_exist() -> None:
    """docs/architecture.md says where each formula lives: every module it names exists."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(?:backends/)?([a-z_]+)\.py`", text)) | set(re.findall(r"\b([a-z_]+)\.py\b", text))
    named |= {m.split(".")[0] for m in re.findall(r"`([a-z_]+)\.[A-Za-z_]+", text)
              if (ROOT / "backends" / f"{m.split('.')[0]}.py").exists()}
    missing = sorted(n for n in named if not (ROOT / "backends" / f"{n}.py").exists()
                     and not (ROOT / "dsl" / f"{n}.py").exists() and n not in ("x", "y"))  # the legend
    assert not missing, missing
    for dotted in set(re.findall(r"`privspec\.(?:backends\.)?([a-z_]+)`", text)) - {"x", "y"}:
        assert (ROOT / "backends" / f"{dotted}.py").exists() or (ROOT / "dsl" / f"{dotted}.py").exists(), dotted


def test_readme_python_api_example_runs(monkeypatch) -> None:
    """The README's Python example runs as written (from the checkout's root)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    exec(compile("\n".join(line[2:] if line.startswith("  ") else line for line in block.splitlines()),
                 "README.md", "exec"), scope)
    assert scope["res"].ok and set(scope["res"]) == {"w", "w_mle"}


def test_tutorial_runs(monkeypatch) -> None:
    """docs/tutorial.md is a notebook: its python blocks run in order, in one namespace."""
    text = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 6
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/tutorial.md block {i + 1}", "exec"), scope)
    assert scope["res"].ok and list(scope["table"]["query"].unique()) == ["tau", "v", "w", "F", "mean"]
    assert scope["table"]["value"].dtype == float
    assert scope["w"].to_frame().shape == (4, 4)


def test_planning_tutorial_runs(monkeypatch) -> None:
    """docs/planning.md follows a survey designer from spec to report; its blocks run in order."""
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    text = (ROOT / "docs" / "planning.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 6
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/planning.md block {i + 1}", "exec"), scope)
    res, inv = scope["res"], scope["inv"]
    assert (res["n_se"].value, res["n_pow"].value) == (7802, 11929)          # the numbers the page states
    assert round(res["pw"].value, 3) == 0.442 and round(inv["most_private"]["value"], 3) == 3.036
    assert "plan.md" in {p.name for p in scope["folder"].iterdir()}


def test_oracle_page_specs_check_clean() -> None:
    """docs/oracles.md: its spec block checks clean (its compare block with that spec's declarations)."""
    import privspec

    text = (ROOT / "docs" / "oracles.md").read_text(encoding="utf-8")
    blocks, fence, lines = [], None, []
    for line in text.splitlines():
        if line.startswith("```"):
            if fence is None:
                fence, lines = line, []
            else:
                if fence == "```":          # spec blocks (sh blocks are run above)
                    blocks.append("\n".join(lines) + "\n")
                fence = None
        elif fence is not None:
            lines.append(line)
    assert len(blocks) == 3
    privspec.load(blocks[0])
    privspec.load(blocks[0] + blocks[1]).compare()
    privspec.load(blocks[0] + blocks[2]).analyze()

