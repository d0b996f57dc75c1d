"""The survey page (``privspec serve``'s ``GET /``, :mod:`privspec.backends.collect.page`).

The page alone: self-contained (nothing loaded, one inline module allowed by its hash,
one ``fetch``: to the submission URL), a fieldset per privatized variable with its
categories in the spec's order, ranges for interval mechanisms, the mechanisms the
randomizer refuses left out.  Then the real page in headless Chromium (chromedriver,
W3C WebDriver), served by a small stdlib HTTP server that records what the page POSTs:
answered by keyboard and by clicks for a spec of each family, the body is exactly
``{"reports": {...}}``, reports ``run``'s reader accepts and nothing of the answers
themselves; the server's error is shown and a retry sends the same reports.  The
randomizer inlined in a page draws, in Chromium, from the exact law (one mechanism per
family, 1e5 draws, seeded, chi-square p > 1e-4).  Screenshots for docs/collect.md are
written to docs/img/ when ``PRIVSPEC_SCREENSHOTS=1`` is set (to a temporary folder, and
checked, otherwise).
"""
from __future__ import annotations

import base64
import hashlib
import html.parser
import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import privspec
from privspec.api import privatize
from privspec.errors import BackendError
from privspec.backends.collect.page import page_mechanisms, script_text, survey_page
from privspec.backends.collect.randomizer import client_module
from privspec.backends.collect.store_checks import cells, check_reports, report_columns
from privspec.backends.core.algebra import Float
from privspec.backends.core.compile import channel_of
from privspec.backends.interval.laws import law_distribution
from privspec.backends.oracles.backend import oracle_of
from privspec.backends.oracles.protocols import hash_values

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"
#: where the screenshots of docs/collect.md live
IMG = ROOT / "docs" / "img"
N = 100_000
#: the thank-you's sentence
RECEIVED = "Your randomized reports were received: submission {}."
P_MIN = 1e-4

SUBSETS = """\
spec "Colours and census"
variable color: categorical {black, red, green, blue}
variable gender: categorical {Female, Male}
variable income: categorical {Low, High}
variable gi = gender * income
mechanism urn = subset(color, uniform)
mechanism floor = subset(color, uniform, min_coverage = 1/5)
mechanism gi_m = subset(gi, uniform)
mechanism k = grr(gender, epsilon = 1)
"""


def load(name: str):
    return privspec.load(SPECS / f"{name}.privspec").model


class Page(html.parser.HTMLParser):
    """The page's elements: every tag with its attributes, legends' and labels' text,
    the script's text."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: dict[str, list[str]] = {"legend": [], "label": [], "script": [], "title": []}
        self._open: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in self.text:
            self.text[tag].append("")
            self._open.append(tag)

    def handle_endtag(self, tag):
        if self._open and self._open[-1] == tag:
            self._open.pop()

    def handle_data(self, data):
        if self._open:
            self.text[self._open[-1]][-1] += data

    def find(self, tag: str, **attrs) -> list[dict]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]


# ---- the page alone -----------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["language", "oracles", "interval_privacy"])
def test_the_page_loads_nothing_and_sends_only_to_the_submission_url(spec: str) -> None:
    page_text = survey_page(load(spec), submit_url="collect/api/submit")
    page = Page(page_text)
    assert page_text.startswith("<!DOCTYPE html>")
    assert not [a for _, a in page.tags if "src" in a or "href" in a]  # nothing to load
    assert not re.search(r"https?://|//[a-z]", page_text.replace("\\/", "/").split("<script", 1)[0])
    (script,) = page.text["script"]
    assert page.find("script") == [{"type": "module"}]
    for network in ("XMLHttpRequest", "WebSocket", "sendBeacon", "EventSource", "import(", "Math.random",
                    "http://", "https://"):
        assert network not in script
    assert script.count("fetch(") == 1 and "fetch(SURVEY.submitUrl" in script
    assert '"submitUrl": "collect/api/submit"' in script
    (csp,) = [a["content"] for a in page.find("meta") if a.get("http-equiv") == "Content-Security-Policy"]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp  # the page's script, and only it, runs
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp and "form-action 'none'" in csp


def test_a_fieldset_per_privatized_variable_in_the_spec_s_order() -> None:
    model = privspec.load(SUBSETS).model
    page = Page(survey_page(model))
    assert page.text["title"] == ["Colours and census"]
    # the combined variable gi is asked as its parts, each once
    assert page.text["legend"] == ["color", "gender", "income"]
    for name in ("color", "gender", "income"):
        (box,) = page.find("fieldset", id=f"v-{name}")
        assert box["data-variable"] == name
        radios = page.find("input", type="radio", name=f"v-{name}")
        assert [r["value"] for r in radios] == list(model.variables[name].labels)
        assert all("required" in r for r in radios)
        labels = {a["for"] for a in page.find("label")}
        assert {r["id"] for r in radios} <= labels  # each radio has its label
    assert page.text["label"][:4] == ["black", "red", "green", "blue"]
    assert page.find("p", id="status")[0]["aria-live"] == "polite"


def test_interval_mechanisms_ask_for_a_range_never_for_the_value() -> None:
    model = load("interval_privacy")
    page = Page(survey_page(model))
    names = page_mechanisms(model)
    assert names == ["c1", "s1", "c2", "life2", "cm", "ring", "open", "sel", "prog"]
    assert [a["id"] for a in page.find("fieldset")] == [f"m-{n}" for n in names]
    # the only number input: the disclose range's optional exact value (open), off until chosen
    (exact,) = page.find("input", type="number")
    assert exact["id"] == "m-open-value" and "disabled" in exact and (exact["min"], exact["max"]) == ("0", "20")
    assert "you never type the value" in survey_page(model)


def test_numeric_mechanisms_ask_for_the_number_in_the_declared_range() -> None:
    """The numeric local-DP mechanisms take the number itself: one number input per
    variable, bounded by its declared range (the browser refuses a value outside it)."""
    model = load("numeric")
    assert page_mechanisms(model) == ["lap", "duc", "pm", "hm", "sw"]
    page = Page(survey_page(model))
    assert page.text["legend"] == ["salary"]
    (number,) = page.find("input", type="number")
    assert (number["id"], number["min"], number["max"], number["step"]) == ("v-salary-value", "0", "150", "any")
    assert "required" in number and "Your salary (between 0 and 150)" in page.text["label"]


def test_labels_and_the_title_are_escaped_and_cannot_end_the_script() -> None:
    spec = ('spec "<b>Tricky</b>"\nvariable c: categorical {"</script><script>alert(1)</script>", "a&b", '
            '"<!--"}\nmechanism k = grr(c, epsilon = 1)')
    text = survey_page(privspec.load(spec).model)
    page = Page(text)
    assert page.text["title"] == ["<b>Tricky</b>"] and len(page.find("script")) == 1
    assert [r["value"] for r in page.find("input", type="radio")] == ["</script><script>alert(1)</script>", "a&b",
                                                                      "<!--"]
    assert "</script" not in page.text["script"][0]


def test_mechanisms_the_randomizer_refuses_are_left_out_or_named() -> None:
    model = load("oracles")
    # every oracle a respondent draws: one-round, multi-attribute, longitudinal
    assert page_mechanisms(model) == ["unary", "rappor", "hashed", "subsets", "hadamard", "split", "sampled",
                                      "faked", "weekly"]
    assert page_mechanisms(model, ["hashed"]) == ["hashed"]
    only_refused = privspec.load("variable y: continuous [0, 1]\nvariable c: categorical {a, b, c}\n"
                                 "mechanism c1 = interval(y, case1(uniform(0, 1)))\n"
                                 "mechanism sel = selective(c1, tau = 3/10, rho = 1/2)\n"
                                 "mechanism cens = censored(y, ends = right_closed, lower = lo, upper = hi)\n"
                                 "mechanism w = l_osue(c, epsilon = 2, first = 1)").model
    with pytest.raises(BackendError) as e:      # censored data are not drawn by a respondent
        survey_page(only_refused, ["w", "cens"])
    assert e.value.diagnostics[0].code == "B000" and "'cens'" in e.value.diagnostics[0].message
    # sel: no population of y, so its coverage cannot be decided on the device (B102): left out
    assert page_mechanisms(only_refused) == ["c1", "w"]
    language = page_mechanisms(load("language"))
    assert "rr_s" not in language and "sel" in language and "urn" in language  # rr_s: its epsilon has no value
    with pytest.raises(BackendError, match="B009"):
        survey_page(load("language"), ["rr_s"])


# ---- the page in headless Chromium -------------------------------------------------------
class Site:
    """A stdlib HTTP server on loopback: serves ``pages`` (path -> HTML), records each POST
    (its path, headers and body) and answers it with the next of ``answers`` (status,
    JSON), 201 with the next id when none is left."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        self.posts: list[dict] = []
        self.answers: list[tuple[int, dict]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = site.pages.get(self.path.split("?")[0])
                self._send(200 if body is not None else 404, body or "", "text/html; charset=utf-8")

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                site.posts.append({"path": self.path, "type": self.headers.get("Content-Type"), "body": raw})
                status, answer = site.answers.pop(0) if site.answers else (201, {"id": len(site.posts)})
                self._send(status, json.dumps(answer), "application/json")

            def _send(self, status: int, text: str, kind: str) -> None:
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def body(self, i: int = -1) -> dict:
        return json.loads(self.posts[i]["body"])


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    try:
        yield s
    finally:
        s.server.shutdown()
        s.server.server_close()


def open_page(webdriver, site: Site, model, mechanisms=None, path: str = "/survey/") -> None:
    site.pages[path] = survey_page(model, mechanisms)
    webdriver.get(site.url + path)
    webdriver.wait("return !document.getElementById('send').disabled")  # the script ran (the CSP let it)


def unanswered(webdriver) -> list[str]:
    """The radio groups still without a choice (progressive rounds appear one by one)."""
    return webdriver.script("""return Array.from(new Set(Array.from(document.querySelectorAll(
        'input[type=radio]')).map((r) => r.name))).filter((n) => !document.querySelector(
        `input[name="${n}"]:checked`));""")


def answer_by_clicks(webdriver, choose=lambda name, count: 0) -> None:
    """Click one radio of every group, ``choose(name, count)`` its index, until none is left."""
    while names := unanswered(webdriver):
        for name in names:
            radios = webdriver.find_all(f'input[name="{name}"]')
            webdriver.do("POST", f"/element/{radios[choose(name, len(radios))]}/click", {})


def send(webdriver) -> str:
    """Click Send; the thank-you's text once shown, or the status's error."""
    webdriver.click("#send")
    return webdriver.wait("""const s = document.getElementById('status').textContent;
        const thanks = document.getElementById('thanks');
        return !thanks.hidden ? document.getElementById('received').textContent : s.startsWith('Not') ? s : null;""")


def assert_run_reads(model, reports: dict) -> None:
    """Each report is one ``run``'s reader accepts for its mechanism."""
    for name, report in reports.items():
        mechanism = model.mechanisms[name]
        columns = report_columns(model, mechanism)
        check_reports(model, mechanism, pd.DataFrame([cells(name, report, columns)]))


def test_a_subset_survey_answered_by_keyboard_sends_only_its_reports(webdriver, site: Site) -> None:
    """Tab from the top through the questions in order, Space and the arrows choose, Enter
    on Send: the body is {"reports": ...}, each subset report holds the answer (subset
    privacy reports a set containing the truth), and nothing else is sent."""
    model = privspec.load(SUBSETS).model
    open_page(webdriver, site, model)
    answers = {"color": 2, "gender": 1, "income": 0}  # green, Male, Low
    for name, index in answers.items():
        webdriver.press("tab")
        assert webdriver.script("return document.activeElement.name") == f"v-{name}"  # focus order = page order
        webdriver.press("space", *["down"] * index)
    webdriver.press("tab")
    assert webdriver.script("return document.activeElement.id") == "send"
    webdriver.press("enter")
    status = webdriver.wait("return !document.getElementById('thanks').hidden && "
                            "document.getElementById('received').textContent")
    assert status == RECEIVED.format(1)
    (post,) = site.posts
    assert post["path"] == "/survey/api/submit" and post["type"] == "application/json"
    body = site.body()
    assert list(body) == ["reports"] and list(body["reports"]) == ["urn", "floor", "gi_m", "k"]
    reports = body["reports"]
    assert "green" in reports["urn"].split("|") and "green" in reports["floor"].split("|")
    assert "Male.Low" in reports["gi_m"].split("|") and reports["k"] in ("Female", "Male")
    assert_run_reads(model, reports)
    # the thank-you: the id, focus moved to it, what was sent shown
    assert webdriver.script("return document.activeElement.id") == "thanks"
    assert webdriver.script("return document.getElementById('survey').hidden") is True
    assert json.loads(webdriver.script("return document.getElementById('sent').textContent")) == body
    assert not [e for e in webdriver.console() if e["level"] == "SEVERE"]


def test_nothing_is_sent_before_every_question_is_answered(webdriver, site: Site) -> None:
    """The browser's own check of the required choices: Send on a half-answered page posts
    nothing and takes the focus to the first question left."""
    open_page(webdriver, site, privspec.load(SUBSETS).model)
    webdriver.click("#v-color-1")
    webdriver.click("#send")
    assert webdriver.script("return document.activeElement.name") == "v-gender"
    assert site.posts == [] and webdriver.script("return document.getElementById('thanks').hidden") is True


def test_an_oracle_survey_sends_reports_run_reads(webdriver, site: Site) -> None:
    model = load("oracles")
    open_page(webdriver, site, model)
    # the multi-attribute oracles (split, sampled, faked) ask gender and income too
    assert webdriver.script("return Array.from(document.querySelectorAll('legend')).map((l) => l.textContent)") \
        == ["gender", "income", "race"]
    answer_by_clicks(webdriver, lambda name, count: count - 1)  # race: White
    assert send(webdriver) == RECEIVED.format(1)
    body = site.body()
    assert list(body) == ["reports"] and list(body["reports"]) == page_mechanisms(model)
    assert_run_reads(model, body["reports"])
    assert "Other" not in json.dumps(body)  # an oracle reports codes, never the label


def test_an_interval_survey_sends_the_chosen_ranges_and_no_value(webdriver, site: Site) -> None:
    model = load("interval_privacy")
    open_page(webdriver, site, model)
    shown = webdriver.script("return Array.from(document.querySelectorAll('#m-cm label')).map((l) => l.textContent)")
    assert len(shown) == 4 and shown[0].endswith(" or less") and shown[-1].startswith("more than ")
    ring = webdriver.script("return Array.from(document.querySelectorAll('#m-ring label')).map((l) => l.textContent)")
    assert len(ring) == 3 and ", or more than " in ring[0]  # the ring's two ends are one range
    assert webdriver.script("return document.querySelector('#m-open-value').disabled") is True
    # the last range each time (the ring's first: its ends), "no" to every progressive round
    choice = {"m-ring": lambda count: 0, "m-open": lambda count: count - 2}  # open's last: its exact value
    answer_by_clicks(webdriver, lambda name, count: 1 if re.search(r"-r\d+$", name) else choice.get(name, lambda c: c - 1)(count))
    assert webdriver.script("return document.querySelectorAll('#m-prog fieldset.round').length") == 3
    assert send(webdriver) == RECEIVED.format(1)
    reports = site.body()["reports"]
    assert list(site.body()) == ["reports"] and list(reports) == page_mechanisms(model)
    for name in ("c1", "s1", "c2", "life2", "cm", "open"):
        assert reports[name].endswith(", inf]"), reports[name]  # the last range: above every anchor
    assert re.fullmatch(r"\(-inf, [-0-9.e]+\] \| \([-0-9.e]+, inf\]", reports["ring"])
    assert reports["prog"].endswith(", inf]")  # "no" three times: above the last anchor
    # selective: the chosen range or nothing ("null"), decided on the device; the page's
    # question is its base's, and the hint says a range may not be sent
    assert reports["sel"] == "null" or reports["sel"].endswith(", inf]"), reports["sel"]
    assert "otherwise nothing is sent" in webdriver.script("return document.getElementById('m-sel-hint').textContent")
    assert_run_reads(model, reports)


def test_progressive_rounds_follow_one_another_in_the_focus_order(webdriver, site: Site) -> None:
    """By keyboard: each round's answer (Space: yes, Down: no) puts the next round right
    after it in the Tab order; three "yes" leave (lo, the last anchor]."""
    open_page(webdriver, site, load("interval_privacy"), ["prog"])
    for h in range(3):
        webdriver.press("tab")
        assert webdriver.script("return document.activeElement.name") == f"m-prog-r{h}"
        webdriver.press("space")
    anchors = webdriver.script("return Array.from(document.querySelectorAll('#m-prog legend')).slice(1)"
                               ".map((l) => Number(l.textContent.match(/at most (.*)\\?$/)[1]))")
    assert len(anchors) == 3 and anchors[0] >= anchors[1] >= anchors[2]  # each in the range left, below the last
    webdriver.press("tab", "enter")
    assert webdriver.wait("return !document.getElementById('thanks').hidden")
    (report,) = site.body()["reports"].values()
    assert report.startswith("(-inf, ") and float(report[7:-1]) == pytest.approx(anchors[2], rel=1e-4)
    assert_run_reads(load("interval_privacy"), site.body()["reports"])


def test_a_value_in_the_disclose_range_is_given_exactly(webdriver, site: Site) -> None:
    model = load("interval_privacy")
    open_page(webdriver, site, model, ["open"])
    webdriver.click("#m-open-exact")
    assert webdriver.script("return document.querySelector('#m-open-value').required") is True
    webdriver.type("#m-open-value", "12.5")
    assert send(webdriver) == RECEIVED.format(1)
    assert site.body() == {"reports": {"open": "12.5"}}


def test_a_numeric_survey_sends_the_reports_run_reads_and_never_the_number(webdriver, site: Site) -> None:
    """The salary typed (37.25: a value no report of these mechanisms equals), privatized
    by the five numeric mechanisms on the device: each report is a number ``run``'s reader
    accepts; the number typed is not in the body.  A value outside the declared range is
    refused by the browser's own check, and nothing is sent."""
    model = load("numeric")
    open_page(webdriver, site, model)
    webdriver.type("#v-salary-value", "151")
    webdriver.click("#send")
    assert webdriver.script("return document.activeElement.id") == "v-salary-value" and site.posts == []
    webdriver.script("document.getElementById('v-salary-value').value = ''")
    webdriver.type("#v-salary-value", "37.25")
    assert send(webdriver) == RECEIVED.format(1)
    body = site.body()
    assert list(body) == ["reports"] and list(body["reports"]) == ["lap", "duc", "pm", "hm", "sw"]
    assert all(isinstance(r, str) and float(r) == float(r) for r in body["reports"].values())
    assert_run_reads(model, body["reports"])
    assert "37.25" not in site.posts[0]["body"].decode()
    assert not [e for e in webdriver.console() if e["level"] == "SEVERE"]


def test_the_server_s_error_is_shown_and_a_retry_sends_the_same_reports(webdriver, site: Site) -> None:
    """A 422 (run's D-code) and a 413 are shown in the status; sending again sends the
    reports drawn the first time, not a second randomization of the same answers."""
    model = privspec.load(SUBSETS).model
    site.answers = [(422, {"error": "the report 'x' is not a subset of color", "code": "D010"}), (413, {})]
    open_page(webdriver, site, model)
    answer_by_clicks(webdriver, lambda name, count: 1)
    assert send(webdriver) == "Not received (422, D010): the report 'x' is not a subset of color"
    assert webdriver.script("return document.getElementById('send').disabled") is False
    assert send(webdriver) == "Not received (413): the submission is too large"
    assert send(webdriver) == RECEIVED.format(3)
    assert site.body(0) == site.body(1) == site.body(2)


# ---- the randomizer's law in Chromium ----------------------------------------------------
LAWS = """\
variable color: categorical {black, red, green, blue}
variable c: categorical {a, b, c, d, e}
variable z: continuous
mechanism floor = subset(color, uniform, min_coverage = 1/5)
mechanism hashed = olh(c, epsilon = 1)
mechanism c2 = interval(z, case2(logistic(0, 5)))
"""
#: draws N reports of one mechanism in the page (seeded) and leaves them in window.drawn
DRAWS = """
const random = seededRandom(SEED);
window.localHash = localHash;  // the module's hash, for the bit-identity check
window.drawn = Array.from({length: COUNT}, () => privatize(ANSWER, {random})[NAME]);
"""


def draw_in_chromium(webdriver, site: Site, model, name: str, answer: dict, seed: int) -> list[str]:
    """N reports of ``name`` for ``answer`` drawn in Chromium by the randomizer module,
    inlined as the survey page inlines it."""
    driver = (DRAWS.replace("SEED", str(seed)).replace("COUNT", str(N)).replace("ANSWER", json.dumps(answer))
              .replace("NAME", json.dumps(name)))
    site.pages[f"/law-{name}"] = (f"<!DOCTYPE html><title>{name}</title><script type=\"module\">"
                                  f"{script_text(client_module(model, [name]))}\n{driver}</script>")
    webdriver.get(f"{site.url}/law-{name}")
    return webdriver.wait("return window.drawn || null", 120)


def test_a_subset_design_with_dummies_draws_its_channel_in_chromium(webdriver, site: Site) -> None:
    """Finite: 1e5 reports of a subset design with dummy categories (seeded) against the
    channel's column K[., red]."""
    model = privspec.load(LAWS).model
    ch = channel_of(model.mechanisms["floor"])
    reports = draw_in_chromium(webdriver, site, model, "floor", {"color": "red"}, 7)
    column = np.asarray(ch.Kn, dtype=float)[:, 1]
    observed = pd.Series(reports).value_counts().reindex(list(ch.obs_labels), fill_value=0).to_numpy()
    assert observed.sum() == N
    keep = column > 0
    assert observed[~keep].sum() == 0
    assert stats.chisquare(observed[keep], column[keep] * N).pvalue > P_MIN


def test_local_hashing_hashes_as_python_and_draws_its_law_in_chromium(webdriver, site: Site) -> None:
    """Oracle: olh's hash in Chromium bit-identical to Python's for the drawn seeds, and
    (hit, value) of 1e5 reports against the GRR over [g]."""
    model = privspec.load(LAWS).model
    o = oracle_of(model, model.mechanisms["hashed"])
    reports = draw_in_chromium(webdriver, site, model, "hashed", {"c": "c"}, 8)
    seeds = np.array([int(r.split(":")[0]) for r in reports], dtype=np.uint64)
    values = np.array([int(r.split(":")[1]) for r in reports])
    hashes = webdriver.script("return arguments[0].map((s) => Array.from({length: arguments[1]}, (_, u) => "
                              "window.localHash(s, u, arguments[2])))", [str(s) for s in seeds[:500]], o.d, o.g)
    np.testing.assert_array_equal(np.array(hashes), hash_values(o, seeds[:500]))  # bit-identical
    hit = hash_values(o, seeds, np.array([2]))[:, 0] == values
    p = float(o.probs(Float)[0])
    observed = np.bincount(hit * o.g + values, minlength=2 * o.g)
    exact = np.array([(1 - p) / o.g] * o.g + [p / o.g] * o.g)  # the hash of c uniform on [g] (to 1/P)
    assert stats.chisquare(observed, exact * N).pvalue > P_MIN


def test_case_2_anchors_have_their_law_in_chromium(webdriver, site: Site) -> None:
    """Interval: 1e5 case-2 reports (logistic anchors) for the answer -0.5: the side
    against the binomial law of the anchors below it, the ends against Python's privatize
    (two-sample KS), each range holding the answer."""
    model = privspec.load(LAWS).model
    reports = draw_in_chromium(webdriver, site, model, "c2", {"z": -0.5}, 9)
    left, right = ends(reports)
    F = float(law_distribution(model.mechanisms["c2"].anchor).cdf(-0.5))
    sides = np.array([np.isinf(left).sum(), np.isinf(right).sum(), (np.isfinite(left) & np.isfinite(right)).sum()])
    exact = np.array([(1 - F) ** 2, F ** 2, 1 - (1 - F) ** 2 - F ** 2])
    assert stats.chisquare(sides, exact * N).pvalue > P_MIN
    assert np.all((left < -0.5) & (-0.5 <= right))
    python = privatize(privspec.load(LAWS), pd.DataFrame({"z": [-0.5] * N}), "c2", seed=9)["z"].astype(str)
    for js, py in zip((left, right), ends(python)):
        assert stats.ks_2samp(js[np.isfinite(js)], py[np.isfinite(py)]).pvalue > P_MIN


def ends(texts) -> tuple[np.ndarray, np.ndarray]:
    """(left, right) of ``(l, r]`` reports."""
    pairs = [t[1:-1].split(",") for t in texts]
    return np.array([float(a) for a, _ in pairs]), np.array([float(b) for _, b in pairs])


# ---- the screenshots of docs/collect.md --------------------------------------------------
def test_screenshots_of_a_survey_answered_and_thanked(webdriver, site: Site, tmp_path: Path) -> None:
    """docs/img/survey-*.png when PRIVSPEC_SCREENSHOTS=1 (else a temporary folder): a
    randomized-response survey and an interval one, answered, and the thank-you."""
    out = IMG if os.environ.get("PRIVSPEC_SCREENSHOTS") == "1" else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    shots = []
    for spec, mechanisms, path in (("randomized_response", None, "/rr/"), ("interval_privacy", ["c2", "ring", "prog"],
                                                                            "/interval/")):
        open_page(webdriver, site, load(spec), mechanisms, path)
        answer_by_clicks(webdriver, lambda name, count: 1)
        shots.append(snap(webdriver, out / f"survey-{spec.split('_')[0]}.png"))
    send(webdriver)
    webdriver.click("#thanks summary")  # what left the device, shown
    shots.append(snap(webdriver, out / "survey-thanks.png"))
    for shot in shots:
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and 5_000 < len(data) < 400_000


def snap(webdriver, path: Path) -> Path:
    """A screenshot of the whole page (the window fitted to its height first)."""
    height = webdriver.script("window.scrollTo(0, 0); return document.querySelector('main')"
                              ".getBoundingClientRect().bottom + 32 + window.outerHeight - window.innerHeight")
    webdriver.do("POST", "/window/rect", {"width": 900, "height": min(int(height), 2400)})
    webdriver.screenshot(path)
    return path
