"""The store of a fielded survey (issue 36): append-only, tied to the spec's design, checked
as ``run`` checks a file, durable past kill -9 of its writer, read by ``run`` and
``export`` alike; the same against PostgreSQL where a server is reachable
(PRIVSPEC_TEST_POSTGRES: a URL of a database in which this test may create databases)."""
from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.api import answer, export, privatize
from privspec.backends.collect.store import RejectedSubmission, design_hash, open_store
from privspec.cli import main
from privspec.errors import DataError

SPEC = textwrap.dedent("""\
    spec "A fielded survey"
    variable color: categorical {black, red, green, blue}
    variable race: categorical {a, b, c}
    variable salary: continuous [0, 150]
    population color ~ categorical(black = 0.1, red = 0.2, green = 0.3, blue = 0.4)
    mechanism s = subset(color, uniform)
    mechanism g = grr(race, epsilon = 1)
    mechanism o = oue(race, epsilon = 2)
    mechanism c1 = interval(salary, case1(uniform(0, 150)))
    query w = estimate distribution(color) from s by mle
    query wg = estimate distribution(race) from g by mom
    query mu = estimate mean(salary) from c1 by unbiased
    """)

FIELDED = ["s", "g", "c1"]


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    return privspec.load(SPEC)


def reports_of(spec: privspec.Spec, n: int, seed: int = 1) -> list[dict]:
    """n submissions as a survey would send them, drawn by privatize."""
    rng = np.random.default_rng(seed)
    raw = pd.DataFrame({"color": rng.choice(["black", "red", "green", "blue"], n),
                        "race": rng.choice(["a", "b", "c"], n),
                        "salary": rng.uniform(0, 150, n).round(2).astype(str)})
    cols = {m: privatize(spec, raw, m, seed=seed) for m in FIELDED}
    return [{m: cols[m].iloc[i, 0] for m in FIELDED} for i in range(n)]


def filled(spec: privspec.Spec, url: str, n: int = 200) -> str:
    with open_store(url, spec.model, FIELDED) as store:
        for r in reports_of(spec, n):
            store.submit(r)
    return url


# ---- the design hash ----------------------------------------------------------------------------------
def test_the_design_hash_ignores_the_text_and_the_analysis_but_not_the_design(spec) -> None:
    spaced = SPEC.replace(" = ", "  =  ").replace("\n", "\n\n# a comment\n") + "query wm = estimate distribution(color) from s by mom\n"
    assert design_hash(privspec.load(spaced).model) == design_hash(spec.model)
    assert design_hash(privspec.load(SPEC.replace("epsilon = 1", "epsilon = 2")).model) != design_hash(spec.model)


# ---- append-only and the design ---------------------------------------------------------------------
def test_the_store_is_append_only(spec, tmp_path) -> None:
    url = filled(spec, f"sqlite:///{tmp_path}/r.db", 5)
    with open_store(url, spec.model) as store:
        assert not any(hasattr(store, verb) for verb in ("update", "delete", "remove", "clear"))
        assert store.ids() == [1, 2, 3, 4, 5]
    db = sqlite3.connect(tmp_path / "r.db")
    for sql in ("UPDATE submissions SET reports = '{}'", "DELETE FROM submissions WHERE id = 1"):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute(sql)
    assert db.execute("SELECT count(*) FROM submissions").fetchone()[0] == 5
    db.close()


def test_a_store_refuses_a_spec_of_another_design(spec, tmp_path) -> None:
    url = filled(spec, f"sqlite:///{tmp_path}/r.db", 3)
    other = privspec.load(SPEC.replace("subset(color, uniform)", "grr(color, epsilon = 1)"))
    with pytest.raises(DataError) as e:
        open_store(url, other.model)
    assert e.value.code == "D051" and "two designs" in str(e.value)
    with pytest.raises(DataError, match="D051"):          # nor other mechanisms fielded
        open_store(url, spec.model, ["s", "g"])
    # the analysis may change: a new query, the populations
    analysis = privspec.load(SPEC + "query wm = estimate distribution(color) from s by mom\n")
    with open_store(url, analysis.model) as store:
        assert len(store) == 3 and store.mechanisms == tuple(FIELDED)
    # run with the other design refuses too, before anything is estimated
    out, err = io.StringIO(), io.StringIO()
    (tmp_path / "other.privspec").write_text(SPEC.replace("epsilon = 1", "epsilon = 3"))
    assert main(["run", str(tmp_path / "other.privspec"), "--data", url], stdout=out, stderr=err) == 1
    assert "D051" in err.getvalue()


# ---- checked as run checks a file ------------------------------------------------------------------
def run_says(spec: privspec.Spec, mechanism: str, column: str, value: str, tmp_path: Path) -> tuple[str, str]:
    """The D-code and message run gives for a file holding one report (the file named as
    the store names the submission)."""
    path = tmp_path / f"{mechanism}.csv"
    pd.DataFrame({column: [value]}).to_csv(path, index=False)
    query = {"s": "w", "g": "wg", "c1": "mu"}[mechanism]
    res = answer(spec, "run", queries=[query], data={mechanism: str(path)})
    first = res.failures[query].diagnostics[0]
    return first.code, first.message.replace(str(path), "the submission")


@pytest.mark.parametrize("mechanism, column, bad", [
    ("s", "color", "black|purple"),       # not a category: D010
    ("s", "color", "black"),              # a plain category where a subset is reported: D010
    ("g", "race", "d"),                   # D010
    ("c1", "salary", "(1, 2"),            # not a range: D101
    ("c1", "salary", "(10, 20]"),         # a closed range Case I never reports: D102
])
def test_a_report_the_mechanism_cannot_produce_is_refused_with_runs_code(spec, tmp_path, mechanism, column,
                                                                         bad) -> None:
    good = reports_of(spec, 1)[0]
    with open_store(f"sqlite:///{tmp_path}/r.db", spec.model, FIELDED) as store:
        with pytest.raises(RejectedSubmission) as e:
            store.submit({**good, mechanism: bad})
        assert len(store) == 0
        first = e.value.diagnostics[0]
        assert (first.code, first.message) == run_says(spec, mechanism, column, bad, tmp_path)
        assert isinstance(e.value, DataError)
        store.submit(good)
        assert len(store) == 1


def test_an_oracle_report_is_checked_as_run_checks_it(spec, tmp_path) -> None:
    with open_store(f"sqlite:///{tmp_path}/r.db", spec.model, ["o"]) as store:
        store.submit({"o": "05"})
        with pytest.raises(RejectedSubmission) as e:
            store.submit({"o": "zz"})
        assert e.value.code == "D013"


@pytest.mark.parametrize("body, words", [
    (["s"], "an object mechanism -> report"),
    ({"s": "black|red"}, "no report of 'g', 'c1'"),
    ({"s": "black|red", "g": "a", "c1": "(-inf, 3]", "x": "1"}, "no mechanism named 'x'"),
    ({"s": ["black", "red"], "g": "a", "c1": "(-inf, 3]"}, "a cell is a text or a number"),
    ({"s": {"colour": "black|red"}, "g": "a", "c1": "(-inf, 3]"}, "names the columns"),
])
def test_a_submission_of_the_wrong_shape_is_refused(spec, tmp_path, body, words) -> None:
    with open_store(f"sqlite:///{tmp_path}/r.db", spec.model, FIELDED) as store:
        with pytest.raises(RejectedSubmission) as e:
            store.submit(body)
        assert e.value.code == "D050" and words in str(e.value)
        assert len(store) == 0


# ---- kill -9 -------------------------------------------------------------------------------------
WRITER = """
import sys, privspec
from privspec.backends.collect.store import open_store
spec = privspec.load(open(sys.argv[1]).read())
store = open_store(sys.argv[2], spec.model, ["g"])
print("ready", flush=True)
i = 0
while True:
    print(store.submit({"g": "abc"[i % 3]}), flush=True)
    i += 1
"""


def test_an_acknowledged_submission_survives_kill_9_of_its_writer(tmp_path) -> None:
    kill_the_writer(f"sqlite:///{tmp_path}/r.db", tmp_path)


def kill_the_writer(url: str, tmp_path: Path) -> None:
    """A writer submits in a loop, printing each id once submit returned; kill -9 it: every
    printed id is in the store."""
    (tmp_path / "s.privspec").write_text(SPEC)
    (tmp_path / "writer.py").write_text(WRITER)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "writer.py"), str(tmp_path / "s.privspec"), url],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    acknowledged: list[int] = []
    deadline = time.monotonic() + 60
    while len(acknowledged) < 200 and time.monotonic() < deadline:
        acknowledged.append(int(proc.stdout.readline()))
    os.kill(proc.pid, signal.SIGKILL)
    acknowledged += [int(line) for line in proc.stdout.read().split()]   # printed before it died
    proc.wait()
    assert len(acknowledged) >= 200
    with open_store(url, privspec.load(SPEC).model) as store:
        kept = set(store.ids())
    assert set(acknowledged) <= kept


# ---- analysis from the store ---------------------------------------------------------------------
def test_run_on_the_store_equals_run_on_its_export(spec, tmp_path) -> None:
    url = filled(spec, f"sqlite:///{tmp_path}/r.db", 300)
    out = tmp_path / "r.csv"
    assert export(spec, url, out) == 300
    on_store = answer(spec, "run", data=url)
    on_file = answer(spec, "run", data=str(out))
    assert on_store.ok and on_file.ok
    assert on_store.to_dict() == on_file.to_dict()
    parquet = tmp_path / "r.parquet"
    export(spec, url, parquet)
    assert answer(spec, "run", data=str(parquet)).to_dict() == on_store.to_dict()


def test_a_store_whose_reports_do_not_determine_the_mle_fails_as_its_export_does(spec, tmp_path) -> None:
    # Three respondents who all sent the same subset: the reports span rank 1 < p = 4, so the
    # MLE is not determined (D020) from the store and from its export alike; the error names
    # the source it read, and nothing else differs.
    url = f"sqlite:///{tmp_path}/r.db"
    first = reports_of(spec, 1)[0]
    with open_store(url, spec.model, FIELDED) as store:
        for _ in range(3):
            store.submit(first)
    out = tmp_path / "r.csv"
    export(spec, url, out)
    on_store, on_file = answer(spec, "run", data=url), answer(spec, "run", data=str(out))
    assert on_store.failures["w"].code == on_file.failures["w"].code == "D020"
    a, b = on_store.to_dict(), on_file.to_dict()
    assert a["queries"]["w"]["error"].pop("file") == f"{url}#s"
    assert b["queries"]["w"]["error"].pop("file") == str(out)
    assert a == b


def test_the_command_line_runs_on_a_store_and_exports_it(spec, tmp_path) -> None:
    (tmp_path / "s.privspec").write_text(SPEC)
    url = filled(spec, f"sqlite:///{tmp_path}/r.db", 100)
    out_csv = tmp_path / "r.csv"
    err = io.StringIO()
    assert main(["export", str(tmp_path / "s.privspec"), "--db", url, "--out", str(out_csv)], stderr=err) == 0
    assert "wrote 100 rows" in err.getvalue()
    err = io.StringIO()
    assert main(["export", str(tmp_path / "s.privspec"), "--db", url, "--out", str(out_csv)], stderr=err) == 1
    assert "D007" in err.getvalue()
    assert main(["export", str(tmp_path / "s.privspec"), "--db", url, "--out", str(out_csv), "--force",
                 "--mechanism", "g"], stderr=io.StringIO()) == 0
    assert list(pd.read_csv(out_csv).columns) == ["race"]
    a, b = io.StringIO(), io.StringIO()
    assert main(["run", str(tmp_path / "s.privspec"), "--data", url, "--format", "json", "--query", "wg"], stdout=a,
                stderr=io.StringIO()) == 0
    assert main(["run", str(tmp_path / "s.privspec"), "--data", str(out_csv), "--format", "json", "--query", "wg"],
                stdout=b, stderr=io.StringIO()) == 0
    assert json.loads(a.getvalue()) == json.loads(b.getvalue())
    # a store that does not exist is not created by reading it
    err = io.StringIO()
    assert main(["run", str(tmp_path / "s.privspec"), "--data", f"sqlite:///{tmp_path}/none.db"], stdout=io.StringIO(),
                stderr=err) == 1
    assert "D001" in err.getvalue() and not (tmp_path / "none.db").exists()
    # nor is a database that holds no store written into
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE t (x)")
    err = io.StringIO()
    assert main(["export", str(tmp_path / "s.privspec"), "--db", str(tmp_path / "other.db"), "--out",
                 str(tmp_path / "o.csv")], stderr=err) == 1
    assert "holds no survey store" in err.getvalue() and not (tmp_path / "o.csv").exists()
    tables = sqlite3.connect(tmp_path / "other.db").execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == [("t",)]


def test_an_empty_store_has_nothing_to_estimate_from(spec, tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/r.db"
    open_store(url, spec.model, FIELDED).close()
    res = answer(spec, "run", queries=["wg"], data=url)
    assert res.failures["wg"].code == "D103"


# ---- PostgreSQL ------------------------------------------------------------------------------------
# postgres_url: tests/conftest.py (a fresh database on PRIVSPEC_TEST_POSTGRES's server)


def test_postgresql_store_is_append_only_and_refuses_another_design(spec, postgres_url) -> None:
    import psycopg

    filled(spec, postgres_url, 20)
    with psycopg.connect(postgres_url, autocommit=True) as db:
        for sql in ("UPDATE submissions SET reports = '{}'", "DELETE FROM submissions"):
            with pytest.raises(psycopg.Error, match="append-only"):
                db.execute(sql)
    with pytest.raises(DataError, match="D051"):
        open_store(postgres_url, privspec.load(SPEC.replace("epsilon = 1", "epsilon = 2")).model)
    with open_store(postgres_url, spec.model) as store:
        assert len(store) == 20
        with pytest.raises(RejectedSubmission) as e:
            store.submit({**reports_of(spec, 1)[0], "g": "d"})
        assert e.value.code == "D010" and len(store) == 20


def test_run_on_a_postgresql_store_equals_run_on_its_export(spec, postgres_url, tmp_path) -> None:
    filled(spec, postgres_url, 300)
    out = tmp_path / "r.csv"
    export(spec, postgres_url, out)
    on_store = answer(spec, "run", data=postgres_url)
    assert on_store.ok
    assert on_store.to_dict() == answer(spec, "run", data=str(out)).to_dict()
    sqlite = filled(spec, f"sqlite:///{tmp_path}/r.db", 300)     # the same reports in SQLite
    assert answer(spec, "run", data=sqlite).to_dict() == on_store.to_dict()


def test_an_acknowledged_submission_survives_kill_9_of_a_postgresql_writer(postgres_url, tmp_path) -> None:
    kill_the_writer(postgres_url, tmp_path)


def test_submissions_checked_and_committed_together(spec, tmp_path) -> None:
    """A server's group commit: the accepted ones stored in one transaction, each refused
    one with the error it gets alone."""
    good = reports_of(spec, 30)
    body = [*good[:10], {**good[10], "g": "d"}, ["x"], *good[11:20], {**good[20], "c1": "(10, 20]"}]
    with open_store(f"sqlite:///{tmp_path}/r.db", spec.model, FIELDED) as store:
        outcome = store.submit_many(body)
        refused = {i: o.code for i, o in enumerate(outcome) if isinstance(o, RejectedSubmission)}
        assert refused == {10: "D010", 11: "D050", 21: "D102"}
        ids = [o for o in outcome if isinstance(o, int)]
        assert ids == list(range(1, 20)) == store.ids()
        with pytest.raises(RejectedSubmission) as alone:
            store.submit(body[21])
        assert str(alone.value) == str(outcome[21])
        assert store.frame(["g"])["race"].tolist() == [r["g"] for r in good[:10] + good[11:20]]


ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("spec_file, mechanism, raw", [
    ("oracles", "hashed", "adult_rr_raw.csv"),
    ("oracles", "sampled", "adult_rr_raw.csv"),       # several columns, empty cells, 'sampled'
    ("oracles", "split", "adult_rr_raw.csv"),
    ("randomized_response", "multi", "adult_rr_raw.csv"),     # a product: one column per factor
    ("randomized_response", "whole", "adult_rr_raw.csv"),     # RR-Joint on a combined variable
    ("interval_privacy", "sel", "interval_raw.csv"),           # null reports
    ("interval_privacy", "prog", "interval_raw.csv"),
    ("numeric", "pm", "interval_raw.csv"),                     # numbers: the spec's own query m_pm
    ("numeric", "sw", "interval_raw.csv"),                     # f_sw, square wave's EMS
])
def test_every_family_round_trips_through_the_store(spec_file, mechanism, raw, tmp_path) -> None:
    """privatize's reports submitted one per row (an object where they fill several
    columns), then run on the store == run on its export == run on privatize's file."""
    estimand = "cdf(salary)" if spec_file == "interval_privacy" else "distribution(race)"
    method = "npmle" if spec_file == "interval_privacy" else "mom"
    extra = f"query round_trip = estimate {estimand} from {mechanism} by {method}\n" \
        if spec_file in ("oracles", "interval_privacy") else ""
    spec = privspec.load((ROOT / "specs" / f"{spec_file}.privspec").read_text() + "\n" + extra)
    frame = privatize(spec, pd.read_csv(ROOT / "specs" / "data" / raw, dtype=str).head(400), mechanism, seed=3)
    url = f"sqlite:///{tmp_path}/r.db"
    with open_store(url, spec.model, [mechanism]) as store:
        one = frame.shape[1] == 1
        ids = store.submit_many([{mechanism: row[0] if one else dict(zip(frame.columns, row))}
                                 for row in frame.itertuples(index=False)])
        assert ids == list(range(1, len(frame) + 1))
    queries = [q.name for q in spec.model.queries.values()
               if getattr(q.mechanism, "name", None) == mechanism and q.kind == "estimate"]
    assert queries
    frame.to_csv(tmp_path / "privatized.csv", index=False)
    export(spec, url, tmp_path / "exported.csv")
    on_store = answer(spec, "run", queries=queries, data=url, seed=1).to_dict()
    assert on_store == answer(spec, "run", queries=queries, data={mechanism: str(tmp_path / "exported.csv")},
                              seed=1).to_dict()
    assert on_store == answer(spec, "run", queries=queries, data={mechanism: str(tmp_path / "privatized.csv")},
                              seed=1).to_dict()


def test_a_mechanism_without_a_randomizer_is_not_fielded(tmp_path) -> None:
    spec = privspec.load("variable y: continuous [0, 10]\nmechanism c = censored(y)\n"
                         "variable x: categorical {a, b}\nmechanism g = grr(x, epsilon = 1)")
    with pytest.raises(DataError) as e:
        open_store(tmp_path / "r.db", spec.model, ["c"])
    assert e.value.code == "D050" and "no randomizer" in str(e.value)
    assert not (tmp_path / "r.db").exists() or not sqlite3.connect(tmp_path / "r.db").execute(
        "SELECT name FROM sqlite_master").fetchall()
    with open_store(tmp_path / "r.db", spec.model) as store:      # by default: those with one
        assert store.mechanisms == ("g",)
