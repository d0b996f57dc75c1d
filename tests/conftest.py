"""Shared test configuration: the ``--update-golden`` option, a headless Chromium
(``browser``) for the reports' tests, ``within`` (a time limit on a block), and the
closing line of a run that left out the ``slow`` tests (Monte Carlo at full size,
whole-spec and bench-length runs, the full fuzz; pyproject.toml deselects them by
default) saying how many and how to run them."""
from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Iterator

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", default=False,
        help="(re)write tests/golden/* from the current output instead of comparing with it",
    )


def pytest_configure(config: pytest.Config) -> None:
    """The run plans privspec caches between runs (privspec.run_plans) go to a folder of
    this test run, never the user's cache; the command lines the tests start inherit it."""
    if "PRIVSPEC_CACHE_DIR" not in os.environ:
        import tempfile

        os.environ["PRIVSPEC_CACHE_DIR"] = tempfile.mkdtemp(prefix="privspec-test-cache-")
        config.add_cleanup(lambda: shutil.rmtree(os.environ.pop("PRIVSPEC_CACHE_DIR"), ignore_errors=True))


#: pyproject.toml's default selection
DEFAULT_MARKS = "not slow"
#: the command that runs what the default run leaves out, and the one that runs everything
RUN_SLOW = 'pytest -m slow'
RUN_ALL = 'pytest -m "slow or not slow"'
#: how many slow tests this run deselected
SLOW_LEFT_OUT = pytest.StashKey[int]()


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Counts the ``slow`` tests among those deselected by the default ``-m "not slow"``."""
    if items and items[0].config.getoption("markexpr") == DEFAULT_MARKS:
        config = items[0].config
        slow = sum(1 for item in items if item.get_closest_marker("slow"))
        config.stash[SLOW_LEFT_OUT] = config.stash.get(SLOW_LEFT_OUT, 0) + slow


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """After a run that left slow tests out: how many, and the commands that run them."""
    left_out = config.stash.get(SLOW_LEFT_OUT, 0)
    if left_out:
        tests = "slow test was" if left_out == 1 else "slow tests were"
        terminalreporter.write_line(
            f"{left_out} {tests} left out (Monte Carlo at full size, whole-spec and bench-length runs, "
            f"the full fuzz): `{RUN_SLOW}` runs them, `{RUN_ALL}` runs the whole suite (as .ci/run does).")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run was started with ``--update-golden``."""
    return bool(request.config.getoption("--update-golden"))


#: after the page's own content: writes where each plot is drawn into the DOM (CSS pixels)
MEASURE = """<script>
document.body.setAttribute("data-measure", JSON.stringify({
  height: document.documentElement.scrollHeight,
  plots: Array.from(document.querySelectorAll("figure.plot svg")).map(function (s) {
    var r = s.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })}));
</script>"""


class Browser:
    """Debian's chromium, headless, one fresh profile per run."""

    def __init__(self, exe: str, tmp: Path):
        self.exe, self.tmp, self.runs = exe, tmp, 0

    def run(self, *args: str) -> subprocess.CompletedProcess:
        self.runs += 1
        cmd = [self.exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--force-device-scale-factor=1", "--force-color-profile=srgb", "--no-first-run",
               f"--user-data-dir={self.tmp / f'profile{self.runs}'}", "--enable-logging=stderr", "--v=0", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)

    @staticmethod
    def console(stderr: str) -> list[str]:
        """The page's console messages (errors, CSP refusals, uncaught exceptions) in Chromium's log."""
        return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]

    def measure(self, page: Path) -> dict:
        """The page's height and each plot's box, from a copy of the page with a measuring
        script (the report's own CSP forbids scripts; the copy allows inline ones, the
        layout is the same)."""
        probe = self.tmp / f"probe-{page.name}"
        text = page.read_text(encoding="utf-8")
        probe.write_text(text.replace("default-src 'none'", "default-src 'none'; script-src 'unsafe-inline'")
                         .replace("</body>", MEASURE + "</body>"), encoding="utf-8")
        out = self.run("--window-size=1200,3000", "--dump-dom", probe.as_uri())
        found = re.search(r'data-measure="([^"]*)"', out.stdout)
        assert found, out.stdout[:2000] + out.stderr[-2000:]
        return json.loads(found.group(1).replace("&quot;", '"'))


@pytest.fixture
def browser(tmp_path: Path) -> Browser:
    """Headless Chromium (skips where Debian's chromium is not installed, unless
    PRIVSPEC_REQUIRE_BROWSER is set: .ci/run installs it and sets it)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("PRIVSPEC_REQUIRE_BROWSER"):
            pytest.fail("PRIVSPEC_REQUIRE_BROWSER is set but chromium is not installed (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return Browser(exe, tmp_path)


class TooSlow(BaseException):
    """Raised by :func:`deadline`'s alarm; a BaseException so that no ``except Exception``
    on the way (the CLI's catch-all) takes it for a bug of the code under test."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Interrupt the body after ``seconds`` with :class:`TooSlow` (SIGALRM: the main
    thread only); the fuzz test (and bench/fuzz.py through it) times each case with it."""
    def ring(signum, frame):
        raise TooSlow(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def within():
    """``with within(5): ...`` fails the test (TooSlow) when the body runs past 5 seconds
    (SIGALRM: the main thread, Python code; what hung before a fix, a sympy factorization
    of e^700, is interrupted)."""
    return deadline


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh database on the server of PRIVSPEC_TEST_POSTGRES (a URL; a Unix socket may
    be given as ``?host=DIR``), dropped afterwards.  Skipped where psycopg or a server is
    missing, unless PRIVSPEC_REQUIRE_POSTGRES is set (.ci/run starts one): then it fails."""
    required = bool(os.environ.get("PRIVSPEC_REQUIRE_POSTGRES"))
    missing = pytest.fail if required else pytest.skip
    try:
        import psycopg  # extra: collect
    except ImportError:
        missing("psycopg is not installed (pip install '.[collect]')")
    base = os.environ.get("PRIVSPEC_TEST_POSTGRES")
    if not base:
        missing("no PostgreSQL server: set PRIVSPEC_TEST_POSTGRES to a URL (postgresql://user@host/db)")
    try:
        admin = psycopg.connect(base, autocommit=True, connect_timeout=3)
    except psycopg.Error as e:
        missing(f"no PostgreSQL server reachable at PRIVSPEC_TEST_POSTGRES: {e}")
    name = f"privspec_test_{uuid.uuid4().hex[:12]}"
    admin.execute(f"CREATE DATABASE {name}")
    parts = urllib.parse.urlsplit(base)   # the database is the path; a socket may be in the query
    try:
        yield urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
        admin.close()


#: W3C WebDriver's key codes (the keyboard tests press them)
KEYS = {"tab": "\ue004", "enter": "\ue007", "space": "\ue00d", "down": "\ue015", "up": "\ue013"}
#: the W3C key of an element reference in WebDriver's answers
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class WebDriver:
    """Debian's chromium driven through chromedriver's W3C WebDriver API (HTTP on loopback,
    the standard library's urllib: no client package): load a page, find, click, type,
    press keys, run a script, take a screenshot, read the console."""

    def __init__(self, driver: str, exe: str, tmp: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.process = subprocess.Popen([driver, f"--port={port}"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                self._call("GET", "/status")
                break
            except OSError:
                time.sleep(0.05)
        options = {"binary": exe, "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                           "--force-device-scale-factor=1", "--force-color-profile=srgb",
                                           "--no-first-run", f"--user-data-dir={tmp / 'webdriver-profile'}",
                                           "--window-size=900,1200"]}
        caps = {"browserName": "chrome", "goog:chromeOptions": options, "goog:loggingPrefs": {"browser": "ALL"}}
        self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["sessionId"]

    def _call(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                        headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as e:  # WebDriver's errors: {"value": {"error", "message"}}
            raise AssertionError(f"WebDriver {method} {path}: {e.read().decode()[:2000]}") from None

    def do(self, method: str, path: str, body: dict | None = None):
        """One WebDriver command of this session (``path`` after ``/session/{id}``)."""
        return self._call(method, f"/session/{self.session}{path}", body)

    def get(self, url: str) -> None:
        self.do("POST", "/url", {"url": url})

    def find(self, css: str) -> str:
        return self.do("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def find_all(self, css: str) -> list[str]:
        return [e[ELEMENT] for e in self.do("POST", "/elements", {"using": "css selector", "value": css})]

    def click(self, css: str) -> None:
        self.do("POST", f"/element/{self.find(css)}/click", {})

    def type(self, css: str, text: str) -> None:
        self.do("POST", f"/element/{self.find(css)}/value", {"text": text})

    def press(self, *keys: str) -> None:
        """Press and release each key in turn (names of :data:`KEYS`) where the focus is."""
        steps = []
        for key in keys:
            steps += [{"type": "keyDown", "value": KEYS[key]}, {"type": "keyUp", "value": KEYS[key]}]
        self.do("POST", "/actions", {"actions": [{"type": "key", "id": "keyboard", "actions": steps}]})
        self.do("DELETE", "/actions")

    def script(self, body: str, *args):
        """Run ``body`` (a function body: ``return ...``) in the page, its value back."""
        return self.do("POST", "/execute/sync", {"script": body, "args": list(args)})

    def wait(self, body: str, timeout: float = 60.0, *args):
        """Poll the script ``body`` until it returns something truthy; that value back."""
        end = time.monotonic() + timeout
        while True:
            value = self.script(body, *args)
            if value or time.monotonic() > end:
                assert value, f"timed out waiting for: {body}"
                return value
            time.sleep(0.05)

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.do("GET", "/screenshot")))

    def console(self) -> list[dict]:
        """The page's console entries since the last call (errors, CSP refusals)."""
        return self.do("POST", "/se/log", {"type": "browser"})

    def quit(self) -> None:
        try:
            self.do("DELETE", "")
        finally:
            self.process.terminate()
            self.process.wait(timeout=30)


@pytest.fixture
def webdriver(tmp_path: Path) -> Iterator[WebDriver]:
    """Headless Chromium under chromedriver (skips where Debian's chromium-driver is not
    installed, unless PRIVSPEC_REQUIRE_BROWSER is set: .ci/run installs both and sets it,
    and then a missing one fails)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if exe is None or driver is None:
        why = "chromium or chromedriver is not installed (apt-get install chromium chromium-driver)"
        if os.environ.get("PRIVSPEC_REQUIRE_BROWSER"):
            pytest.fail(f"PRIVSPEC_REQUIRE_BROWSER is set but {why}")
        pytest.skip(why)
    session = WebDriver(driver, exe, tmp_path)
    try:
        yield session
    finally:
        session.quit()
