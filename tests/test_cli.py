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
    code, out, _ = run("check", str(SPECS / "identifiability.privspec"), "--format", fmt)
    assert code == 0
    if fmt == "json":
        doc = json.loads(out)
        assert doc["ok"] is True and doc["summary"]["mechanisms"] == 2
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
    monkeypatch.setattr(backends, "HOMES", {})
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


# ---- one query that cannot be answered stops nothing else (issue 14) ----------------------------------
TWO = """
variable color: categorical {black, red, green, blue}
mechanism urn = subset(color, uniform)
query ok = identifiable(urn)
query w = estimate distribution(color) from urn by mom
query w_mle = estimate distribution(color) from urn by mle
query w2 = estimate distribution(color) from urn by mle
"""


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    """A spec whose MLE queries are refused on rank grounds (D020: two distinct reports)."""
    spec = tmp_path / "two.privspec"
    spec.write_text(TWO)
    data = tmp_path / "reports.csv"
    data.write_text("color\n" + "black|red\ngreen|blue\n" * 5)
    return spec, data


@pytest.mark.parametrize("fmt", ["text", "markdown", "latex"])
def test_a_failed_query_stops_nothing_else(two, fmt: str) -> None:
    spec, data = two
    code, out, err = run("run", str(spec), "--data", str(data), "--format", fmt)
    assert code == 1
    assert "ok" in out and "w" in out and "w_mle" not in out and "w2" not in out   # the answered ones only
    assert "privspec run: query 'w_mle' (estimate) was not answered:" in err
    assert f"{data}: error[D020]" in err                                           # the file, not <input>
    assert "query 'w2' (estimate) was not answered: the same error as query 'w_mle' (D020)" in err
    assert err.count("error[D020]") == 1


def test_json_lists_failed_queries_with_their_error(two) -> None:
    spec, data = two
    code, out, err = run("run", str(spec), "--data", str(data), "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert list(doc["queries"]) == ["ok", "w", "w_mle", "w2"]                     # query order kept
    assert doc["queries"]["ok"]["value"] is True and doc["queries"]["w"]["kind"] == "estimate"
    failed = doc["queries"]["w_mle"]
    assert failed["kind"] == "estimate" and failed["value"] is None
    assert failed["error"]["code"] == "D020" and failed["error"]["file"] == str(data)
    assert {"code", "message", "hint", "severity"} <= set(failed["error"])
    assert "error" not in doc["queries"]["w"]


def test_every_query_failing_prints_nothing_but_json(two, tmp_path: Path) -> None:
    spec, data = two
    code, out, err = run("run", str(spec), "--data", str(data), "--query", "w_mle")
    assert code == 1 and out == ""
    code, out, err = run("run", str(spec), "--data", str(tmp_path / "none.csv"), "--query", "w", "--format", "json")
    assert code == 1 and json.loads(out)["queries"]["w"]["error"]["code"] == "D001"


def test_unsupported_and_needs_data_are_json_entries_too(no_back_ends) -> None:
    code, out, err = run("analyze", URN, "--query", "cov", "--format", "json")
    assert code == 1 and json.loads(out)["queries"]["cov"]["error"]["code"] == "B000"
    assert "query 'cov' is not supported yet" in err


def test_analyze_answers_the_rest_beside_a_data_query() -> None:
    code, out, err = run("analyze", URN, "--query", "w", "--query", "cov", "--format", "json")
    assert code == 1 and "needs data" in err
    q = json.loads(out)["queries"]
    assert q["w"]["error"]["code"] == "B002" and q["cov"]["value"] is not None


@pytest.mark.parametrize("verb", [["run", "--data", "x.csv"], ["simulate", "--n", "10"],
                                  ["privatize", "--mechanism", "urn", "--input", "a.csv", "--output", "b.csv"]])
def test_negative_seed_is_a_usage_error(verb: list[str]) -> None:
    code, _, err = run(verb[0], URN, *verb[1:], "--seed", "-1")
    assert code == 2 and ">= 0" in err and "internal error" not in err


def test_interrupt_exit_status(monkeypatch) -> None:
    import signal

    from privspec.signals import Interrupted

    def interrupted(*args, **kwargs):
        raise Interrupted(signal.SIGTERM)

    monkeypatch.setattr("privspec.cli._dispatch", interrupted)
    code, _, err = run("check", URN)
    assert code == 143 and "SIGTERM" in err


# ---- simulations too large for memory: refused before any work (issue 33) --------------------------------
SIMULATED = """
variable x: categorical {a, b, c, d, e}
population x ~ categorical(1/10, 2/10, 3/10, 2/10, 2/10)
variable s: continuous [0, 10]
population s ~ uniform(0, 10)
mechanism m = grr(x, epsilon = 1)
mechanism o = oue(x, epsilon = 1)
mechanism c = interval(s, case1(uniform(0, 10)))
query est = estimate distribution(x) from m by mom
query eo = estimate distribution(x) from o by mom
query mu = estimate mean(s) from c by npmle
compare d for distribution(x) at n = 1000 {
  a = grr(x, epsilon = 1)
  b = oue(x, epsilon = 1)
} by max_se
"""


@pytest.fixture
def simulated(tmp_path: Path) -> str:
    path = tmp_path / "simulated.privspec"
    path.write_text(SIMULATED, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("argv,words", [
    (["simulate", "--n", "1000", "--reps", "1000000000"],
     ("simulating query 'est' would hold 35,000,000,000 numbers (1,000,000,000 replications x 35 numbers); "
      "the limit is 100,000,000", "use at most 2,857,142 replications at n = 1,000")),
    (["simulate", "--n", "100000000000", "--reps", "2", "--query", "eo"],
     ("simulating query 'eo' would hold", "+ 100,000,000,000 respondents x 3", "use at most 33,333,323 respondents")),
    (["simulate", "--n", "100000000000", "--reps", "2", "--query", "mu"],
     ("simulating query 'mu' would hold", "respondents x 3", "use at most")),
    (["simulate", "--n", "100000000000000000000", "--reps", "2", "--query", "est"],
     ("with n = ~1.0e+20 respondents; the limit is 2^53 = 9,007,199,254,740,992",)),
    (["compare", "--reps", "1000000000"],
     ("simulating candidate 'a' of compare block 'd' would hold 35,000,000,000 numbers",
      "use at most 2,857,142 replications at n = 1,000")),
])
def test_a_simulation_beyond_memory_is_refused_before_any_work(simulated, argv, words, within) -> None:
    """--reps 1000000000 ended in a MemoryError (37 GiB) after a while: E703 at once, with
    the count, the limit (costs.SIMULATION_NUMBER_LIMIT) and the most replications that
    fit; nothing on stdout."""
    with within(10):
        code, out, err = run(argv[0], simulated, *argv[1:])
    assert code == 1 and out == "", err
    assert "error[E703]" in err
    for w in words:
        assert w in err, err


def test_the_api_refuses_the_same_simulations(simulated) -> None:
    """spec.simulate and spec.compare(reps=...) raise the same E703 (a SpecError) before
    any work; a simulation that fits runs."""
    import privspec
    from privspec.errors import SpecError

    spec = privspec.load(Path(simulated))
    with pytest.raises(SpecError) as e:
        spec.simulate(n=1000, reps=10 ** 9)
    assert e.value.code == "E703"
    with pytest.raises(SpecError) as e:
        spec.compare(reps=10 ** 9)
    assert e.value.code == "E703" and "candidate 'a'" in str(e.value)
    assert spec.simulate(n=50, reps=3, seed=1, queries=["est"]).ok
