"""The collector of a fielded survey (issue 36): ``POST /api/submit`` answers 201 only
after the commit, 422 with ``run``'s D-code for a report the mechanism cannot produce,
413/400/415 for a body it will not read, never a 500 whatever the body (a hypothesis
fuzz); ``/api/results`` is ``run`` on the store, behind the admin token; ``privspec
serve`` listens on 127.0.0.1, refuses a store of another design, and loses no
acknowledged submission to kill -9 (SQLite; PostgreSQL where PRIVSPEC_TEST_POSTGRES
names a server) nor to Ctrl-C."""
from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

import privspec
from privspec.api import answer
from privspec.backends.collect.page import survey_page
from privspec.backends.collect.server import MAX_BODY, create_app, listening_socket
from privspec.backends.collect.store import open_store
from privspec.cli import main
from tests.test_collect_store import FIELDED, SPEC, reports_of

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    return privspec.load(SPEC)


@pytest.fixture(scope="module")
def submissions(spec) -> list[dict]:
    return reports_of(spec, 120)


@pytest.fixture
def served(spec, tmp_path):
    """A TestClient of the collector on a new SQLite store, the store and its URL."""
    url = f"sqlite:///{tmp_path}/r.db"
    with open_store(url, spec.model, FIELDED) as store:
        app = create_app(spec.model, store, page=survey_page(spec.model, FIELDED), token=TOKEN,
                         results=lambda: answer(spec, "run", data=url), title="A fielded survey")
        with TestClient(app, raise_server_exceptions=False) as client:
            yield client, store, url


def post(client: TestClient, reports) -> httpx.Response:
    return client.post("/api/submit", json={"reports": reports})


# ---- POST /api/submit -----------------------------------------------------------------------------------
def test_a_submission_is_answered_201_with_its_id_once_stored(served, submissions) -> None:
    client, store, _ = served
    ids = [post(client, r).json()["id"] for r in submissions[:5]]
    assert ids == store.ids() == sorted(ids)
    r = post(client, submissions[5])
    assert r.status_code == 201 and r.json() == {"id": ids[-1] + 1}
    assert store.frame().iloc[-1].to_dict() == {"color": submissions[5]["s"], "race": submissions[5]["g"],
                                                "salary": submissions[5]["c1"]}


@pytest.mark.parametrize("mechanism, column, bad", [("s", "color", "{red}"), ("g", "race", "z"),
                                                    ("c1", "salary", "zzz")])
def test_a_report_the_mechanism_cannot_produce_gets_422_with_the_code_and_message_of_run(
        served, spec, submissions, tmp_path, mechanism, column, bad) -> None:
    client, store, _ = served
    r = post(client, submissions[0] | {mechanism: bad})
    assert r.status_code == 422 and len(store) == 0
    pd.DataFrame({column: [bad]}).to_csv(tmp_path / "bad.csv", index=False)
    res = answer(spec, "run", data={mechanism: str(tmp_path / "bad.csv")})
    ran = next(e.diagnostics[0] for e in res.failures.values() if e.code != "D005")
    assert (r.json()["code"], r.json()["error"]) == (ran.code, ran.message)


@pytest.mark.parametrize("body", [
    {"reports": {"s": "{red}"}},                                    # a mechanism missing
    {"reports": {"s": "{red}", "g": "a", "c1": "(0, 1]", "nope": "a"}},   # an unknown one
    {"reports": ["{red}", "a", "(0, 1]"]},                          # not an object
    {"reports": {"s": {"color": {"deep": 1}}, "g": "a", "c1": "(0, 1]"}},  # nested junk
    {"reports": {"s": "{red}", "g": True, "c1": "(0, 1]"}},           # a boolean cell
    {"answers": {}},                                                # not a submission
    [1, 2], "text", 3,
])
def test_a_body_of_the_wrong_shape_gets_422_d050(served, body) -> None:
    client, store, _ = served
    r = client.post("/api/submit", json=body)
    assert r.status_code == 422 and r.json()["code"] == "D050" and len(store) == 0


def test_a_body_past_the_limit_gets_413_announced_or_chunked(spec, served) -> None:
    client, store, _ = served
    big = json.dumps({"reports": {"s": "x" * MAX_BODY}}).encode()
    assert client.post("/api/submit", content=big, headers={"content-type": "application/json"}).status_code == 413
    read = []

    async def chunks():   # no Content-Length: the server counts while reading, and stops
        for _ in range(1000):
            read.append(1)
            yield b" " * 4096

    async def chunked() -> httpx.Response:
        app = client.app
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            return await c.post("/api/submit", content=chunks(), headers={"content-type": "application/json"})
    r = asyncio.run(chunked())
    assert "content-length" not in r.request.headers and r.status_code == 413
    assert len(read) <= MAX_BODY // 4096 + 2 and len(store) == 0


@pytest.mark.parametrize("content, kind, status", [
    (b'{"reports": ', "application/json", 400),
    (b'{"reports": {"s": "\xff"}}', "application/json", 400),
    (b'[' * 100_000, "application/json", 413),
    (b'[' * 20_000 + b']' * 20_000, "application/json", 400),
    (b'{"reports": {}}', "text/plain", 415),
    (b'{"reports": {}}', "", 415),
    (b'{"reports": {}}', "application/x-www-form-urlencoded", 415),
])
def test_a_body_that_is_not_utf8_json_is_400_and_another_type_415(served, content, kind, status) -> None:
    client, store, _ = served
    r = client.post("/api/submit", content=content, headers={"content-type": kind})
    assert r.status_code == status and "error" in r.json() and len(store) == 0


def test_other_methods_and_paths_get_starlettes_answers(served) -> None:
    client, _, _ = served
    assert client.get("/api/submit").status_code == 405
    assert client.post("/").status_code == 405
    assert client.get("/nowhere").status_code == 404


def test_concurrent_submissions_are_committed_in_groups(spec, tmp_path, submissions, monkeypatch) -> None:
    url = f"sqlite:///{tmp_path}/r.db"
    groups: list[int] = []
    with open_store(url, spec.model, FIELDED) as store:
        submit_many = store.submit_many
        monkeypatch.setattr(store, "submit_many", lambda subs: groups.append(len(subs)) or submit_many(subs))
        app = create_app(spec.model, store, page="<!doctype html>", token=TOKEN, results=lambda: None)

        async def many() -> list[httpx.Response]:
            async with app.router.lifespan_context(app):
                async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
                    return await asyncio.gather(*(c.post("/api/submit", json={"reports": r}) for r in submissions))
        answers = asyncio.run(many())
        assert [a.status_code for a in answers] == [201] * len(submissions)
        assert sorted(a.json()["id"] for a in answers) == store.ids()
        assert sum(groups) == len(submissions) and len(groups) < len(submissions) / 4


def test_a_group_that_fails_is_committed_one_by_one(spec, tmp_path, submissions, monkeypatch) -> None:
    """A submission that breaks the group's commit fails alone (422, logged), a failing
    database is a 503; the others of its group are stored."""
    url = f"sqlite:///{tmp_path}/r.db"
    with open_store(url, spec.model, FIELDED) as store:
        submit_many = store.submit_many

        def fragile(subs):
            if any(s.get("g") == "boom" for s in subs):
                raise RuntimeError("a reader stumbled")
            return submit_many(subs)
        monkeypatch.setattr(store, "submit_many", fragile)
        app = create_app(spec.model, store, page="<!doctype html>", token=TOKEN, results=lambda: None)
        commits = app.state.commits
        outcomes = commits._commit([submissions[0], submissions[1] | {"g": "boom"}, submissions[2]])
        assert isinstance(outcomes[0], int) and isinstance(outcomes[2], int)
        assert outcomes[1].code == "D050" and len(store) == 2


def test_a_failing_database_is_a_503_and_acknowledges_nothing(served, submissions, monkeypatch) -> None:
    import sqlite3

    client, store, _ = served

    def broken(subs):
        raise sqlite3.OperationalError("disk I/O error")
    monkeypatch.setattr(store, "submit_many", broken)
    r = post(client, submissions[0])
    assert r.status_code == 503 and r.headers["retry-after"] == "5" and "id" not in r.json()


# ---- the results ------------------------------------------------------------------------------------------
def test_the_results_need_the_admin_token(served) -> None:
    client, _, _ = served
    for path in ("/api/results", "/results"):
        assert client.get(path).status_code == 401
        assert client.get(path, params={"token": "wrong"}).status_code == 401
        assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get(path, headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
        assert client.get(path, params={"token": TOKEN}).status_code == 200
        assert client.get(path, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_api_results_is_the_json_of_run_on_the_store(served, submissions, tmp_path) -> None:
    client, _, url = served
    for r in submissions:
        assert post(client, r).status_code == 201
    (tmp_path / "s.privspec").write_text(SPEC, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert main(["run", str(tmp_path / "s.privspec"), "--data", url, "--format", "json"], stdout=out, stderr=err) == 0
    got = client.get("/api/results", headers={"Authorization": f"Bearer {TOKEN}"})
    assert got.headers["content-type"] == "application/json"
    assert got.json() == json.loads(out.getvalue())
    assert got.json()["queries"]["w"]["n"] == len(submissions)
    # one more submission: the results follow
    assert post(client, submissions[0]).status_code == 201
    assert client.get("/api/results", params={"token": TOKEN}).json()["queries"]["w"]["n"] == len(submissions) + 1


def test_the_results_page_shows_the_estimates_and_n_and_reloads_itself(served, submissions) -> None:
    client, _, _ = served
    for r in submissions[:50]:
        post(client, r)
    page = client.get("/results", params={"token": TOKEN})
    text = page.text
    assert page.status_code == 200 and "<h1>A fielded survey</h1>" in text and "n = 50" in text
    assert '<meta http-equiv="refresh"' in text and "lower" in text and "upper" in text and "estimate" in text
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "http" not in policy and "'unsafe-inline'" not in policy
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["referrer-policy"] == "no-referrer"


def test_the_survey_page_needs_no_token_and_runs_only_its_own_inline_script(served, spec) -> None:
    client, _, _ = served
    page = client.get("/")
    assert page.status_code == 200 and page.text == survey_page(spec.model, FIELDED)
    script = re.search(r"<script[^>]*>(.*?)</script>", page.text, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = page.headers["content-security-policy"]
    assert f"script-src 'self' 'sha256-{digest}'" in policy and "connect-src 'self'" in policy
    assert "http" not in policy and "'unsafe-inline'" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"


# ---- never a 500 -----------------------------------------------------------------------------------------
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20)
CELL = st.sampled_from(["{red}", "{black, red}", "a", "b", "(0, 1]", "(1, 150]", "[0, 1)", "", "NaN", "-1",
                        "(150, inf]", "{}", "{red, red}"]) | JSON
REPORTS = st.fixed_dictionaries({m: CELL for m in FIELDED},
                                optional={"o": CELL, "zz": JSON}) | st.dictionaries(st.text(max_size=5), CELL)
BODIES = (st.binary(max_size=200)
          | JSON.map(lambda v: json.dumps(v).encode())
          | REPORTS.map(lambda r: json.dumps({"reports": r}, allow_nan=True).encode())
          | st.binary(min_size=1, max_size=8).map(lambda b: b'{"reports": {"s": "' + b + b'"}}')
          | st.integers(0, 3).map(lambda k: b'{"reports": "' + b"x" * (MAX_BODY + k) + b'"}')
          | st.integers(1, 5000).map(lambda k: b"[" * k + b"]" * k))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=BODIES, kind=st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain"]))
def test_no_body_gets_a_500(served, body, kind) -> None:
    client, store, _ = served
    before = len(store)
    r = client.post("/api/submit", content=body, headers={"content-type": kind})
    assert r.status_code in (201, 400, 413, 415, 422), (r.status_code, r.text, body[:200])
    assert len(store) == before + (r.status_code == 201)


# ---- privspec serve ------------------------------------------------------------------------------------
def start(spec_path: Path, db: str, *extra: str) -> tuple[subprocess.Popen, str, str]:
    """``privspec serve`` on a free port of 127.0.0.1: the process, the survey's URL and
    the results' URL."""
    proc = subprocess.Popen([sys.executable, "-m", "privspec", "serve", str(spec_path), "--db", db, "--port", "0",
                             *(f"--mechanism={m}" for m in FIELDED), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    survey, results = proc.stdout.readline().split()[-1], proc.stdout.readline().split()[-1]
    return proc, survey, results


def hammer(survey: str, submissions: list[dict], acked: list[int], stop: threading.Event) -> None:
    """Submit in a loop (until the server goes away), keeping the ids acknowledged."""
    with httpx.Client(base_url=survey, timeout=30) as c:
        i = 0
        while not stop.is_set():
            try:
                r = c.post("api/submit", json={"reports": submissions[i % len(submissions)]})
            except httpx.HTTPError:
                return
            assert r.status_code == 201, r.text
            acked.append(r.json()["id"])
            i += 1


def load_then(proc: subprocess.Popen, survey: str, submissions: list[dict], sig: int) -> list[int]:
    """Eight clients submitting; ``sig`` to the server once 100 are acknowledged."""
    acked: list[int] = []
    stop = threading.Event()
    threads = [threading.Thread(target=hammer, args=(survey, submissions, acked, stop)) for _ in range(8)]
    for t in threads:
        t.start()
    try:
        while len(acked) < 100 and proc.poll() is None:
            threading.Event().wait(0.02)
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    return acked


def serve_and_kill(spec, db: str, tmp_path: Path, submissions: list[dict]) -> None:
    (tmp_path / "s.privspec").write_text(SPEC, encoding="utf-8")
    proc, survey, results = start(tmp_path / "s.privspec", db)
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", survey) and results.startswith(survey + "results?token=")
    acked = load_then(proc, survey, submissions, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL and len(acked) >= 100
    with open_store(db, spec.model, create=False) as store:
        stored = set(store.ids())
    assert set(acked) <= stored, sorted(set(acked) - stored)[:10]


def test_serve_loses_no_acknowledged_submission_to_kill_9(spec, tmp_path, submissions) -> None:
    serve_and_kill(spec, f"sqlite:///{tmp_path}/r.db", tmp_path, submissions)


def test_serve_on_postgresql_loses_no_acknowledged_submission_to_kill_9(spec, tmp_path, submissions,
                                                                         postgres_url) -> None:
    serve_and_kill(spec, postgres_url, tmp_path, submissions)


def test_ctrl_c_commits_every_submission_received_and_answers_them(spec, tmp_path, submissions) -> None:
    (tmp_path / "s.privspec").write_text(SPEC, encoding="utf-8")
    db = f"sqlite:///{tmp_path}/r.db"
    proc, survey, results = start(tmp_path / "s.privspec", db, "--token", TOKEN)
    assert results == survey + f"results?token={TOKEN}"
    assert httpx.get(results).status_code == 200
    acked = load_then(proc, survey, submissions, signal.SIGINT)
    assert proc.returncode == 130 and "stopped (SIGINT)" in proc.stderr.read()
    with open_store(db, spec.model, create=False) as store:
        assert set(acked) == set(store.ids())   # every one stored was answered, and the reverse


def test_serve_refuses_a_store_of_another_design(spec, tmp_path, submissions) -> None:
    db = f"sqlite:///{tmp_path}/r.db"
    with open_store(db, spec.model, FIELDED) as store:
        store.submit(submissions[0])
    changed = tmp_path / "changed.privspec"
    changed.write_text(SPEC.replace("epsilon = 1", "epsilon = 2"), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert main(["serve", str(changed), "--db", db, "--port", "0"], stdout=out, stderr=err) == 1
    assert "D051" in err.getvalue() and out.getvalue() == ""


def test_a_connection_the_server_accepts_sends_without_delay() -> None:
    """asyncio sets TCP_NODELAY on the connections of the socket serve listens on (an
    answer is two writes: with Nagle's algorithm the second waits for the client's
    delayed acknowledgement, 40 ms a request, and 64 clients make 1,500/s at most)."""
    import socket

    async def accepted() -> int:
        found = asyncio.get_running_loop().create_future()

        async def handle(reader, writer):
            found.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()
        server = await asyncio.start_server(handle, sock=listening_socket("127.0.0.1", 0))
        async with server:
            _, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
            value = await found
            writer.close()
            return value
    assert asyncio.run(accepted()) != 0


def test_serve_says_when_the_port_is_taken(tmp_path) -> None:
    import socket

    (tmp_path / "s.privspec").write_text(SPEC, encoding="utf-8")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        out, err = io.StringIO(), io.StringIO()
        port = str(taken.getsockname()[1])
        assert main(["serve", str(tmp_path / "s.privspec"), "--db", str(tmp_path / "r.db"), "--port", port],
                    stdout=out, stderr=err) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in err.getvalue() and not (tmp_path / "r.db").exists()


def test_the_served_page_runs_under_the_servers_policy_and_its_submission_is_stored(spec, tmp_path,
                                                                                    webdriver) -> None:
    """The survey page in headless Chromium, under the headers the server sends: the
    page's script runs (no refusal of the Content-Security-Policy in the console), the
    answers go as reports, the id shown is the store's."""
    (tmp_path / "s.privspec").write_text(SPEC, encoding="utf-8")
    db = f"sqlite:///{tmp_path}/r.db"
    proc = subprocess.Popen([sys.executable, "-m", "privspec", "serve", str(tmp_path / "s.privspec"), "--db", db,
                             "--port", "0", "--mechanism=s", "--mechanism=g"], stdout=subprocess.PIPE, text=True)
    try:
        survey = proc.stdout.readline().split()[-1]
        webdriver.get(survey)
        webdriver.click("#v-color-1")
        webdriver.click("#v-race-0")
        webdriver.wait("return !document.querySelector('#send').disabled")
        webdriver.click("#send")
        shown = webdriver.wait("return document.querySelector('#submission-id').textContent")
        refusals = [e for e in webdriver.console() if "Content Security Policy" in e.get("message", "")]
        assert refusals == []
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    with open_store(db, spec.model, create=False) as store:
        assert store.ids() == [int(shown)] and set(store.frame().columns) == {"color", "race"}


def test_serve_refuses_a_mechanism_the_page_cannot_ask_before_creating_the_store(tmp_path) -> None:
    spec = tmp_path / "p.privspec"
    spec.write_text("parameter e > 0\nvariable c: categorical {a, b}\nmechanism k = grr(c, epsilon = 1)\n"
                    "mechanism s = grr(c, epsilon = e)\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert main(["serve", str(spec), "--db", str(tmp_path / "r.db"), "--port", "0", "--mechanism", "s"],
                stdout=out, stderr=err) == 1
    assert re.search(r"error\[B0\d\d\]", err.getvalue()) and not (tmp_path / "r.db").exists()
