"""The docs match what exists, and every command they give runs (issue 33).

* README and LANGUAGE.md examples check clean; the modules docs/architecture.md names exist.
* **Every page runs** (``test_page_runs``): the ```sh and ```python blocks of README.md and
  of each docs/*.md page run in the order of the page, as a reader with a fresh clone
  would run them from its root: in a temporary copy of the repository's specs/, docs/,
  bench/ and tests/data/ (so outputs never reach the checkout), ``privspec ...`` through
  the command line in this process, ``python bench/...`` in a subprocess, the Python
  blocks in one namespace per page.  Each must succeed: exit status 0, no exception.
  Blocks fenced ```text or plain ``` (output samples, specs) are not run.
* Pages never write the same file (``test_pages_write_distinct_files``): a reader running
  two pages in one checkout is not refused by ``privatize`` (no overwrite without --force).

Markers, an HTML comment on the line before a block's fence (invisible on the page):

``<!-- test: ARGS -->``
    the block's ``privspec`` and ``python bench/`` commands run with ARGS appended (argparse:
    the last value of an option wins), so that a bench-length command runs small here; the
    page says how long the full command takes (checked: a marked block is followed by a
    duration).
``<!-- test: needs NAME ... -->``
    the block runs only where each NAME is importable or a program on PATH (``pyspark
    java``: the spark extra's engine; ``matplotlib``: the report's pictures), as in .ci/run's
    venv with every extra; elsewhere it is skipped, saying which is missing.
``<!-- test: needs NAME ...; ARGS -->``
    both: run where each NAME is there, with ARGS appended.

Lines that are not run, and why (:data:`NOT_RUN`): ``pip install ...`` (the venv running
the tests is installed already) and ``pytest`` (the suite itself).  Python blocks not run
(:data:`SKIP_BLOCKS`): the Spark cluster example of docs/scale.md (it needs a YARN cluster).
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

import privspec

ROOT = Path(__file__).resolve().parent.parent
LANGUAGE = ROOT.parent / "shared" / "design" / "LANGUAGE.md"
PAGES = ["README.md"] + [f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md"))]
#: what a page's commands may read: copied into a fresh folder for each page
COPIED = ("specs", "docs", "bench", "tests/data")
#: commands of the pages' sh blocks that are not run, and why
NOT_RUN = {"pip": "the venv running the tests is installed already (the README's set-up)",
           "pytest": "the test suite itself"}
#: Python blocks not run (page, a line of the block): why
SKIP_BLOCKS = {("docs/scale.md", 'SparkSession.builder.master("yarn")'): "needs a YARN cluster"}
#: a stated duration: "about 5 minutes", "12 s", "an hour"
DURATION = re.compile(r"\b(?:\d[\d.,]*|a|an|one|two|three|four|five|ten)\s*(?:-\s*\d+\s*)?"
                      r"(?:s|seconds?|minutes?|min|hours?)\b")


@dataclass
class Block:
    """A fenced block of a page: its language, text (dedented), first line and marker."""

    lang: str
    text: str
    line: int
    marker: str = ""
    after: str = ""          # the page's text after the block, up to the next block


def blocks(page: str) -> list[Block]:
    """The fenced blocks of a page, in order (fences may be indented, in a list item)."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if not m:
            if out:
                out[-1].after += lines[i] + "\n"
            i += 1
            continue
        indent, lang, start = m.group(1), m.group(2), i
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        prev = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = re.fullmatch(r"<!--\s*test:\s*(.*?)\s*-->", prev)
        out.append(Block(lang, textwrap.dedent("\n".join(body)) + "\n", start + 1,
                         marker.group(1) if marker else ""))
        i += 1
    return out


def shell_commands(text: str) -> list[list[str]]:
    """The commands of an sh block: continuation lines joined, comments dropped, ``&&`` split."""
    joined = re.sub(r"\\\n\s*", " ", text)
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            commands.append(words[:cut])
            words = words[cut + 1:]
    return commands


def missing(marker: str) -> list[str]:
    """What a ``needs`` marker names that is neither importable nor a program on PATH."""
    if not marker.startswith("needs "):
        return []
    names = marker.split(";")[0].split()[1:]
    return [n for n in names if importlib.util.find_spec(n) is None and shutil.which(n) is None]


def extra_args(marker: str) -> list[str]:
    """The arguments a marker appends: all of it, or what follows ``;`` in a ``needs`` marker."""
    if marker.startswith("needs "):
        return shlex.split(marker.split(";", 1)[1]) if ";" in marker else []
    return shlex.split(marker) if marker else []


@dataclass
class Run:
    """What running a page did: its folder, the Python namespace, the lines not run."""

    folder: Path
    scope: dict = field(default_factory=dict)
    not_run: list[str] = field(default_factory=list)


def run_page(page: str, folder: Path) -> Run:
    """Run a page's sh and python blocks in order in ``folder`` (a copy of the repository's
    files the pages read), the current directory while they run."""
    from privspec.cli import main

    for name in COPIED:
        shutil.copytree(ROOT / name, folder / name)
    run = Run(folder)
    env = dict(os.environ, MPLBACKEND="Agg")
    for block in blocks(page):
        if block.lang not in ("sh", "python"):
            continue
        where = f"{page}:{block.line}"
        absent = missing(block.marker)
        if absent:
            run.not_run.append(f"{where}: needs {', '.join(absent)}")
            continue
        if block.lang == "python":
            skip = [why for (p, line), why in SKIP_BLOCKS.items() if p == page and line in block.text]
            if skip:
                run.not_run.append(f"{where}: {skip[0]}")
                continue
            exec(compile(block.text, where, "exec"), run.scope)
            continue
        for words in shell_commands(block.text):
            if words[0] in NOT_RUN:
                run.not_run.append(f"{where}: {' '.join(words)} ({NOT_RUN[words[0]]})")
                continue
            argv = words[1:] + extra_args(block.marker)
            if words[0] == "privspec":
                out, err = io.StringIO(), io.StringIO()
                code = main(argv, stdout=out, stderr=err)
                assert code == 0, f"{where}: {shlex.join(words)} exited {code}:\n{err.getvalue()[-3000:]}"
            elif words[0] == "python" and words[1].startswith("bench/"):
                proc = subprocess.run([sys.executable, *argv], cwd=folder, env=env, capture_output=True,
                                      text=True, timeout=600, check=False)
                assert proc.returncode == 0, f"{where}: {shlex.join(words)}:\n{proc.stderr[-3000:]}"
            else:
                pytest.fail(f"{where}: {shlex.join(words)}: the page runner knows privspec and python "
                            "bench/ commands; run it here or add it to NOT_RUN with a reason")
    return run


# ---- what some pages promise beyond running ------------------------------------------------------
def _readme(run: Run) -> None:
    res = run.scope["res"]
    assert res.ok and set(res) == {"w", "w_mle"}


def _tutorial(run: Run) -> None:
    table = run.scope["table"]
    assert run.scope["res"].ok and list(table["query"].unique()) == ["tau", "v", "w", "F", "mean"]
    assert table["value"].dtype == float
    assert run.scope["w"].to_frame().shape == (4, 4)


def _planning(run: Run) -> None:
    res, inv = run.scope["res"], run.scope["inv"]
    assert (res["n_se"].value, res["n_pow"].value) == (7802, 11929)          # the numbers the page states
    assert round(res["pw"].value, 3) == 0.442 and round(inv.most_private.value, 3) == 3.036
    if "folder" in run.scope:                                                  # the report (matplotlib)
        assert "plan.md" in {p.name for p in run.scope["folder"].iterdir()}
    plan = run.scope["plan"]                                                   # section 9, a regression
    assert (round(float(plan["v_age"].value.data[0, 0]), 3), plan["n_age"].value) == (1.564, 1228)
    for row in run.scope["sim"].candidates:                                   # its simulation check (issue 37)
        v = row.values["max_se"]
        assert abs(v.simulated - v.value) < 2 * v.mc_error, row.name


def _interval(run: Run) -> None:
    """The page quotes the run's output."""
    from privspec.cli import main

    out = io.StringIO()
    main(["run", "specs/interval_privacy.privspec", "--data", "interval_reports.csv", "--data", "s1=s1.csv",
          "--query", "mu", "--query", "reg"], stdout=out, stderr=io.StringIO())
    text = (ROOT / "docs" / "interval-privacy.md").read_text(encoding="utf-8")
    for quoted in ("mu (estimate): 75.2737", "reg (estimate): {intercept: 57.0455, gdp: 0.617083}"):
        assert quoted in out.getvalue() and quoted in text


def _scale(run: Run) -> None:
    """Every engine gives the same estimate."""
    spec, frame = run.scope["spec"], run.scope["frame"]
    assert spec.run("scale_urn.parquet", queries=["w"])["w"].to_dict() == spec.run(frame, queries=["w"])["w"].to_dict()


CHECKS: dict[str, Callable[[Run], None]] = {"README.md": _readme, "docs/tutorial.md": _tutorial,
                                            "docs/planning.md": _planning, "docs/interval-privacy.md": _interval,
                                            "docs/scale.md": _scale}


@pytest.mark.parametrize("page", [p if p not in ("docs/subset-privacy.md", "docs/planning.md", "docs/interval-privacy.md",
                                                "docs/oracles.md", "docs/randomized-response.md")
                                  else pytest.param(p, marks=pytest.mark.slow) for p in PAGES])
def test_page_runs(page: str, tmp_path: Path, monkeypatch) -> None:
    """The page's sh and python blocks run in order from a fresh copy of the repository's
    files (see the module's docstring); then what the page promises beyond running."""
    folder = tmp_path / "clone"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    with contextlib.redirect_stdout(io.StringIO()):        # the blocks' prints
        run = run_page(page, folder)
        if page in CHECKS:
            CHECKS[page](run)
    untouched = {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()}
    assert not any(str(p).startswith(".") for p in untouched)
    if run.not_run:
        print("\n".join(f"not run: {x}" for x in run.not_run))


def test_pages_write_distinct_files() -> None:
    """No two pages write the same file (--output, --report, --plot), so that a reader
    running them in one checkout is never refused an existing output; nor does a page
    write one file twice."""
    writer: dict[str, str] = {}
    for page in PAGES:
        for block in blocks(page):
            if block.lang != "sh":
                continue
            for words in shell_commands(block.text):
                for flag in ("--output", "--report", "--plot"):
                    if flag in words:
                        target = words[words.index(flag) + 1]
                        assert target not in writer, f"{page} writes {target}, as {writer[target]} does"
                        writer[target] = page
    assert len(writer) >= 10


def test_shortened_commands_state_their_full_duration() -> None:
    """A block run here with smaller arguments (a ``<!-- test: ARGS -->`` marker) is a
    long one: the page says how long the full command takes, in the block's comment or
    the paragraph after it."""
    marked = [(page, b) for page in PAGES for b in blocks(page) if extra_args(b.marker)]
    assert marked
    for page, b in marked:
        said = b.text + b.after.split("\n\n")[0] + "\n" + (b.after.split("\n\n") + [""])[1]
        assert DURATION.search(said), f"{page}:{b.line}: how long does the full command take?"


def test_readme_error_example_is_what_check_prints(monkeypatch) -> None:
    """The README's error example names a file that exists, and shows exactly what
    ``privspec check`` prints for it (exit status 1)."""
    from privspec.cli import main

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"```\n\$ privspec (check \S+)\n(.*?)```", readme, re.S)
    assert shown, "the README shows a privspec check of a bad spec"
    argv = shown.group(1).split()
    assert (ROOT / argv[1]).is_file() and not (ROOT / argv[1]).parent.samefile(ROOT / "specs")
    monkeypatch.chdir(ROOT)
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, stdout=out, stderr=err) == 1
    assert out.getvalue() + err.getvalue() == shown.group(2)


def test_readme_first_command_is_clean_and_says_what_it_prints(monkeypatch) -> None:
    """The README's first command (after its pip install) prints no warning, and the
    lines the README quotes from it are there, in order."""
    from privspec.cli import main

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = next(b for b in blocks("README.md") if b.lang == "sh")
    commands = [w for w in shell_commands(first.text) if w[0] not in NOT_RUN]
    assert [w[:2] for w in commands] == [["privspec", "analyze"]]
    monkeypatch.chdir(ROOT)
    out, err = io.StringIO(), io.StringIO()
    assert main(commands[0][1:], stdout=out, stderr=err) == 0
    assert err.getvalue() == "", err.getvalue()
    sample = next(b for b in blocks("README.md") if b.lang == "text")
    printed = [ln.rstrip() for ln in out.getvalue().splitlines()]
    at = 0
    for line in sample.text.splitlines():
        if line != "...":
            at = printed.index(line.rstrip(), at) + 1          # in order
    assert "W101" not in readme.split("## A spec in ten lines")[0]


def test_readme_commands_name_real_files() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paths = re.findall(r"privspec (?:check|analyze) (\S+\.privspec)", readme)
    assert paths
    for path in paths:
        assert (ROOT / path).is_file(), path


def test_readme_spec_example_checks() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## A spec in ten lines\n\n```\n(.*?)```", readme, re.S).group(1)
    spec = privspec.load(block)
    assert spec.check() == []
    assert len(block.strip().splitlines()) <= 12


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


def _product_modules() -> set[str]:
    """Every module of the product, dotted, from the source folders (pyproject's package-dir)."""
    found = set()
    for top, package in (("dsl", "privspec"), ("backends", "privspec.backends")):
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT / top).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.add(".".join((package, *parts)))
    return found


def test_architecture_names_modules_that_exist() -> None:
    """docs/architecture.md says where each formula lives: every module, file and
    ``module.name`` it cites exists, and every module of the product is cited."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = _product_modules()
    for path in set(re.findall(r"\b((?:dsl|backends|grammar)/[\w/]*\.(?:py|lark))\b", text)):
        assert (ROOT / path).is_file(), path
    for dotted in set(re.findall(r"`(privspec(?:\.\w+)+)`", text)):
        module = next((m for m in sorted(modules, key=len, reverse=True)
                       if dotted == m or dotted.startswith(m + ".")), None)
        assert module is not None, dotted
        obj = importlib.import_module(module)
        for name in dotted[len(module) + 1:].split(".") if dotted != module else ():
            assert hasattr(obj, name), dotted
            obj = getattr(obj, name)
    cited = set(re.findall(r"privspec(?:\.\w+)+", text))
    missing = sorted(m for m in modules if not m.endswith("__main__")
                     and not any(c == m or c.startswith(m + ".") for c in cited))
    assert not missing, f"modules docs/architecture.md does not name: {missing}"


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

