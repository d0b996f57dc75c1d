"""The whole path of a fielded survey (issue 36's "done when"): the bundled
specs/survey.privspec served by ``privspec serve``, answered in headless Chromium (the
randomizer on the page, only reports sent), stored in SQLite and in PostgreSQL (where
PRIVSPEC_TEST_POSTGRES names a server; .ci/run starts one), and ``privspec run`` on the
store gives what it gives on the store's export and on a file of the same reports
written by hand.  The live results page is looked at too; with PRIVSPEC_SCREENSHOTS=1 its
screenshot is written to docs/img/ for docs/collect.md."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.api import answer, export
from privspec.backends.collect.store import open_store

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "survey.privspec"
IMG = ROOT / "docs" / "img"
#: (drinks, smokes) as five respondents answer
ANSWERS = [("none", "no"), ("1-7", "yes"), ("8-14", "no"), ("15+", "no"), ("1-7", "no")]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/reports.db"
    return request.getfixturevalue("postgres_url")


def answer_the_page(webdriver, survey: str, model, drinks: str, smokes: str) -> int:
    """One respondent: the page opened, a radio clicked per question, Send; the id shown."""
    webdriver.get(survey)
    webdriver.wait("return !document.querySelector('#send').disabled")
    for variable, label in (("drinks", drinks), ("smokes", smokes)):
        webdriver.click(f"#v-{variable}-{model.variables[variable].labels.index(label)}")
    webdriver.click("#send")
    return int(webdriver.wait("return document.querySelector('#submission-id').textContent"))


def test_a_bundled_survey_answered_in_chromium_is_stored_and_run_reads_it(store_url, webdriver, tmp_path) -> None:
    spec = privspec.load(SPEC)
    proc = subprocess.Popen([sys.executable, "-m", "privspec", "serve", str(SPEC), "--db", store_url, "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        survey, results = proc.stdout.readline().split()[-1], proc.stdout.readline().split()[-1]
        assert survey.startswith("http://127.0.0.1:")
        ids = [answer_the_page(webdriver, survey, spec.model, d, s) for d, s in ANSWERS]
        # the live results: the page behind the token, and run's JSON
        webdriver.get(results)
        shown = webdriver.wait("return document.body.innerText")
        assert "drinking" in shown and "smokers" in shown
        if store_url.startswith("sqlite") and os.environ.get("PRIVSPEC_SCREENSHOTS") == "1":
            webdriver.do("POST", "/window/rect", {"width": 900, "height": 1100})
            webdriver.screenshot(IMG / "survey-results.png")
        token = results.split("token=")[1]
        live = httpx.get(survey + "api/results", headers={"Authorization": f"Bearer {token}"}, timeout=60).json()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert proc.returncode in (0, 130), proc.stderr.read()
    with open_store(store_url, spec.model, create=False) as store:
        assert store.ids() == ids == sorted(ids)
        frame = store.frame()
    # what was stored is reports only: one column per fielded variable, no raw answer kept
    assert list(frame.columns) == ["drinks", "smokes"] and len(frame) == len(ANSWERS)
    assert all(len(r.split("|")) == 2 for r in frame["drinks"])       # pairs: two categories
    on_store = answer(spec, "run", data=store_url)
    assert on_store["smokers"].extras["n"] == len(ANSWERS)
    # Five random pairs determine the MLE of four shares only when they link every category
    # (about 92% of the time): otherwise run refuses with D020, as it does on any file.
    if "drinking" in on_store.failures:
        assert on_store.failures["drinking"].diagnostics[0].code == "D020"
        assert _pair_rank(frame["drinks"], spec.model.variables["drinks"].labels) < 4
    else:
        assert on_store["drinking"].extras["n"] == len(ANSWERS)
    out = tmp_path / "export.csv"
    export(spec, store_url, out)
    by_hand = tmp_path / "by_hand.csv"
    frame.to_csv(by_hand, index=False)
    # the same results from the three sources; an error names its own source, so that is set aside
    assert _sourceless(on_store.to_dict()) == _sourceless(answer(spec, "run", data=str(out)).to_dict()) \
        == _sourceless(answer(spec, "run", data=str(by_hand)).to_dict())
    assert pd.read_csv(out).equals(pd.read_csv(by_hand))
    assert live["queries"]["smokers"]["value"] == on_store.to_dict()["queries"]["smokers"]["value"]
    if "drinking" not in on_store.failures:
        assert live["queries"]["drinking"]["value"] == on_store.to_dict()["queries"]["drinking"]["value"]


def _sourceless(results: dict) -> dict:
    """Results with each error's ``file`` (the data source it was read from) taken out."""
    queries = {name: {**q, "error": {k: v for k, v in q["error"].items() if k != "file"}} if "error" in q else q
               for name, q in results["queries"].items()}
    return {**results, "queries": queries}


def _pair_rank(reports: pd.Series, labels) -> int:
    """The rank of the observed pairs' indicator rows (the reports' span, Assumption 2)."""
    rows = [[float(label in r.split("|")) for label in labels] for r in set(reports)]
    return int(np.linalg.matrix_rank(np.array(rows)))

