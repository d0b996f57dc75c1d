"""Output files (issue 33): privspec writes regular files and nothing else, never replaces
what is not one (a device, a named pipe, a folder; a symbolic link only with --force, and
then the link itself), never overwrites without --force, and of two runs writing one new
output exactly one wins: the other exits 1 and the file is the winner's, whole.  The same
for the reports of ``compare`` and their PNGs, all checked before any is written."""
from __future__ import annotations

import errno
import io
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec import outputs as data
from privspec.outputs import check_output, output_kind, write_atomic, write_text_atomic
from privspec.cli import main
from privspec.errors import DataError

ROOT = Path(__file__).resolve().parent.parent

SPEC = """
variable c: categorical {a, b, c, d}
population c ~ categorical(1/2, 1/4, 1/8, 1/8)
mechanism k = grr(c, epsilon = 1)
"""

COMPARE = """
variable x: categorical {a, b, c}
population x ~ categorical(1/2, 1/4, 1/4)
compare c for distribution(x) at n = 100 { g1 = grr(x, epsilon = 1)  g2 = grr(x, epsilon = 2) } by max_se, epsilon
"""


def cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main([str(a) for a in argv], stdout=out, stderr=err), out.getvalue(), err.getvalue()


@pytest.fixture
def files(tmp_path: Path) -> dict:
    spec = tmp_path / "s.privspec"
    spec.write_text(SPEC)
    raw = tmp_path / "raw.csv"
    pd.DataFrame({"c": np.random.default_rng(0).choice(list("abcd"), 500)}).to_csv(raw, index=False)
    return {"dir": tmp_path, "argv": ["privatize", spec, "--mechanism", "k", "--input", raw, "--output"]}


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ---- what is at the target ---------------------------------------------------------------------
def test_a_named_pipe_is_never_replaced(files: dict) -> None:
    """Before: --force renamed a regular file over the FIFO (exit 0)."""
    fifo = files["dir"] / "out.csv"
    os.mkfifo(fifo)
    for extra in ([], ["--force"]):
        code, _, err = cli(*files["argv"], fifo, *extra)
        assert code == 1 and "D007" in err and "named pipe (FIFO)" in err and "internal error" not in err, err
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert names(files["dir"]) == ["out.csv", "raw.csv", "s.privspec"]  # no temporary file left


def test_a_character_device_is_refused_and_left_as_it_is(files: dict) -> None:
    """``--force --output /dev/null`` as root replaced the device with a regular file.  The
    check comes first here, so that a regression stops the test before the command runs."""
    before = os.stat("/dev/null")
    assert stat.S_ISCHR(before.st_mode)
    with pytest.raises(DataError) as e:
        check_output("/dev/null", force=True)
    assert e.value.code == "D007" and "character device" in str(e.value)
    code, _, err = cli(*files["argv"], "/dev/null", "--force")
    assert code == 1 and "character device" in err and "not even with --force" in err, err
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert not any(p.startswith(".null.") for p in os.listdir("/dev"))


@pytest.mark.parametrize("points_to", ["file", "device", "nothing"])
def test_a_symbolic_link_needs_force_and_then_the_link_itself_is_replaced(files: dict, points_to: str) -> None:
    """Without --force a link is refused, a dangling one too (before: a dangling link was
    written through, exit 0); with it the link is replaced by a regular file and what it
    pointed to is not touched."""
    d = files["dir"]
    target = {"file": d / "precious.csv", "device": Path("/dev/full"), "nothing": d / "nowhere.csv"}[points_to]
    if points_to == "file":
        target.write_text("precious\n")
    link = d / "out.csv"
    link.symlink_to(target)
    code, _, err = cli(*files["argv"], link)
    assert code == 1 and "D007" in err and "symbolic link" in err and "--force" in err, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    if points_to == "nothing":
        assert "does not exist" in err and not target.exists()
    code, _, err = cli(*files["argv"], link, "--force")
    assert code == 0, err
    assert not link.is_symlink() and output_kind(link) == "file" and len(pd.read_csv(link)) == 500
    if points_to == "file":
        assert target.read_text() == "precious\n"
    elif points_to == "device":
        assert stat.S_ISCHR(os.stat(target).st_mode)
    else:
        assert not target.exists()


def test_a_target_that_turns_into_a_pipe_before_the_publish_is_refused(tmp_path: Path) -> None:
    """The kind is checked again when the file is published (with force, which renames):
    a FIFO made while the file was written stays, and the temporary file goes."""
    out = tmp_path / "out.csv"

    def write(tmp: str) -> None:
        Path(tmp).write_text("x\n")
        os.mkfifo(out)

    with pytest.raises(DataError, match="named pipe"):
        write_atomic(out, write, force=True)
    assert stat.S_ISFIFO(os.lstat(out).st_mode) and names(tmp_path) == ["out.csv"]


def test_an_existing_file_needs_force(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    write_text_atomic("first", out)
    with pytest.raises(DataError, match="exists"):
        write_text_atomic("second", out)
    assert out.read_text() == "first"
    write_text_atomic("third", out, force=True)
    assert out.read_text() == "third" and names(tmp_path) == ["out.txt"]


# ---- two runs, one new output ------------------------------------------------------------------------
def test_two_runs_racing_for_one_output_exactly_one_wins(files: dict, monkeypatch) -> None:
    """Both runs pass the check before either publishes (a barrier in front of the publish
    step, the rest the real command): before, the later rename won silently and both
    exited 0; now the hard link of the second fails, it exits 1 and removes its file, and
    the output is the winner's, byte for byte."""
    out = files["dir"] / "out.csv"
    barrier = threading.Barrier(2, timeout=60)
    publish = data._publish

    def at_the_same_time(tmp: str, path: Path, force: bool) -> None:
        barrier.wait()
        publish(tmp, path, force)

    monkeypatch.setattr(data, "_publish", at_the_same_time)
    results: dict[str, tuple[int, str, str]] = {}

    def run(seed: str) -> None:
        results[seed] = cli(*files["argv"], out, "--seed", seed, "--engine", "pandas")

    threads = [threading.Thread(target=run, args=(seed,)) for seed in ("1", "2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(code for code, _, _ in results.values()) == [0, 1], results
    winner = next(seed for seed, (code, _, _) in results.items() if code == 0)
    loser = next(seed for seed in results if seed != winner)
    assert "D007" in results[loser][2] and "exists" in results[loser][2] and "another run" in results[loser][2]
    monkeypatch.undo()
    again = files["dir"] / f"seed{winner}.csv"
    assert cli(*files["argv"], again, "--seed", winner)[0] == 0
    assert out.read_bytes() == again.read_bytes()
    assert not [p for p in names(files["dir"]) if p.endswith(".tmp")]


@pytest.mark.slow
def test_two_processes_writing_one_output(files: dict) -> None:
    """The same with two real processes started together: exactly one exits 0."""
    out = files["dir"] / "out.csv"
    argv = [sys.executable, "-m", "privspec", *map(str, files["argv"]), str(out)]
    procs = [subprocess.Popen(argv + ["--seed", s], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for s in ("1", "2")]
    done = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert sorted(code for code, _ in done) == [0, 1], done
    assert "exists" in next(err for code, err in done if code == 1)
    assert len(pd.read_csv(out)) == 500
    assert not [p for p in names(files["dir"]) if p.endswith(".tmp")]


def test_without_hard_links_the_fallback_still_refuses(tmp_path: Path, monkeypatch) -> None:
    """Where the file system has no hard links (EPERM: FAT, some network file systems) the
    name is reserved with O_EXCL, then the file renamed over the reservation."""
    def no_links(src: str, dst: str, **kwargs: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    out = tmp_path / "out.txt"
    write_text_atomic("first", out)
    with pytest.raises(DataError, match="exists"):
        write_text_atomic("second", out)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(DataError, match="exists"):
        write_text_atomic("third", tmp_path / "dangling")
    write_text_atomic("fourth", out, force=True)
    assert out.read_text() == "fourth" and not (tmp_path / "nowhere").exists()
    assert names(tmp_path) == ["dangling", "out.txt"]


# ---- compare reports -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def comparison(tmp_path_factory) -> tuple[Path, object]:
    pytest.importorskip("jinja2")
    spec = tmp_path_factory.mktemp("compare") / "c.privspec"
    spec.write_text(COMPARE)
    return spec, privspec.load(spec).compare()


def test_compare_report_is_not_overwritten_without_force(comparison, tmp_path: Path) -> None:
    """Before: an existing r.html was replaced."""
    spec, _ = comparison
    report = tmp_path / "r.html"
    report.write_text("old")
    code, _, err = cli("compare", spec, "--report", report)
    assert code == 1 and "D007" in err and "exists" in err and report.read_text() == "old", err
    code, _, err = cli("compare", spec, "--report", report, "--force")
    assert code == 0, err
    assert report.read_text().startswith("<!DOCTYPE html>")


def test_markdown_report_checks_every_png_before_writing_any(comparison, tmp_path: Path) -> None:
    """One existing PNG stops the report: nothing else written (before: all replaced)."""
    spec, results = comparison
    report = tmp_path / "r.md"
    from privspec.results.compare_report import report_targets

    targets = report_targets(results["c"].value, report)
    assert [t.name for t in targets] == ["r.md", "r_frontier_1.png", "r_se.png"]
    targets[-1].write_bytes(b"mine")
    code, _, err = cli("compare", spec, "--report", report)
    assert code == 1 and "D007" in err and "r_se.png" in err, err
    assert names(tmp_path) == ["r_se.png"] and targets[-1].read_bytes() == b"mine"
    with pytest.raises(DataError, match="exists"):
        privspec.api.write_reports(results, report)
    assert names(tmp_path) == ["r_se.png"]
    written = privspec.api.write_reports(results, report, force=True)
    assert written == [str(t) for t in targets] and targets[-1].read_bytes()[:4] == b"\x89PNG"
    os.unlink(targets[0])
    os.mkfifo(targets[0])  # never replaced, even with force
    with pytest.raises(DataError, match="named pipe"):
        privspec.api.write_reports(results, report, force=True)
    assert stat.S_ISFIFO(os.lstat(targets[0]).st_mode)


def test_a_report_png_appearing_meanwhile_removes_what_was_written(comparison, tmp_path: Path,
                                                                  monkeypatch) -> None:
    """A PNG made by someone else after the checks: the files this call wrote are removed."""
    _, results = comparison
    report = tmp_path / "r.md"
    write_bytes = data.write_bytes_atomic

    def late(blob: bytes, path: Path, force: bool = False) -> None:
        if Path(path).name == "r_se.png":
            Path(path).write_bytes(b"theirs")
        write_bytes(blob, path, force=force)

    monkeypatch.setattr(data, "write_bytes_atomic", late)
    with pytest.raises(DataError, match="another run"):
        privspec.api.write_reports(results, report)
    assert names(tmp_path) == ["r_se.png"] and (tmp_path / "r_se.png").read_bytes() == b"theirs"


@pytest.mark.slow   # 5 s of plots
def test_plot_pictures_are_never_written_over_a_pipe(tmp_path: Path) -> None:
    """``--plot DIR`` replaces the pictures of a former run, but not a FIFO in their place."""
    pytest.importorskip("matplotlib")
    spec = tmp_path / "s.privspec"
    spec.write_text(SPEC + "query v = avar(distribution(c) from k by mom)\n")
    pictures = tmp_path / "pics"
    code, _, err = cli("analyze", spec, "--plot", pictures)
    assert code == 0 and names(pictures) == ["v.png"], err
    code, _, err = cli("analyze", spec, "--plot", pictures)
    assert code == 0, err
    os.unlink(pictures / "v.png")
    os.mkfifo(pictures / "v.png")
    code, _, err = cli("analyze", spec, "--plot", pictures)
    assert code == 1 and "named pipe" in err, err
    assert stat.S_ISFIFO(os.lstat(pictures / "v.png").st_mode)
