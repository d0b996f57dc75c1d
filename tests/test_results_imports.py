"""The results layer imports light (issue 38): a compiled run prints its results without
sympy, pandas, lark, scipy's submodules or matplotlib.

- Importing :mod:`privspec.results.kinds` (and with it every module of the results layer
  but the comparison report's plots) and :mod:`privspec.model.query_kinds` loads none of
  them; top-level ``scipy`` is allowed (it loads its submodules on first use).
- An estimate of plain numbers, built as the finite back end builds one
  (:func:`privspec.backends.finite.truth.estimate_on_counts`), renders in every format
  (text, verbose text, JSON, Markdown, LaTeX) in a fresh interpreter, its captions from a
  plain object (``title`` and ``captions``) instead of the model graph, and loads none of
  them; its texts are character for character the reports of the same results rendered
  in process with the spec's model graph (``privspec.load(spec).run(frame)``).
- The caption of a plain object: its ``captions`` entry, or none.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.results.kinds import Estimate
from privspec.results.report import caption
from privspec.results.result import render_results
from privspec.results.values import Vector

ROOT = Path(__file__).resolve().parent.parent
#: what the results layer must not load (top-level scipy may: its submodules load on use)
HEAVY = ("sympy", "pandas", "lark", "scipy.stats", "scipy.special", "scipy.optimize", "scipy.integrate",
         "scipy.linalg", "matplotlib", "jinja2")
FORMATS = (("text", False), ("text", True), ("json", False), ("markdown", False), ("latex", False))

SPEC = """spec "Obfuscated urn"
variable color: categorical {black, red, green, blue}
mechanism urn = subset(color, uniform)
query w = estimate distribution(color) from urn by mom
query w_mle = estimate distribution(color) from urn by mle
"""


def fresh(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; the JSON it prints on its last line."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def probe(code: str) -> str:
    """``code``, then a line printing which of :data:`HEAVY` it loaded."""
    return f"{code}\nimport json, sys\nprint(json.dumps([n for n in {list(HEAVY)!r} if n in sys.modules]))"


def test_the_results_layer_imports_none_of_the_heavy_libraries() -> None:
    modules = ("privspec.results.kinds", "privspec.results.result", "privspec.results.report",
               "privspec.results.values", "privspec.results.views", "privspec.results.layout",
               "privspec.results.plots", "privspec.results.comparison", "privspec.results.comparison_tables",
               "privspec.results.compare_report", "privspec.results.compare_plots", "privspec.results.render",
               "privspec.model.query_kinds")
    assert fresh(probe("\n".join(f"import {m}" for m in modules))) == []


# ---- an estimate of plain numbers, as the finite back end builds one ------------------------------
def plain(x):
    """A JSON form of an extra that the subprocess turns back into the same objects."""
    if isinstance(x, Vector):
        return {"vector": [list(x.labels), [float(v) for v in x.values]]}
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    return x


#: rebuilds each result from its JSON form (values and standard errors as numpy float64, as
#: ``as_vector`` gives them) and renders it in every format with captions from a plain object
BUILD = """
import json, sys
from types import SimpleNamespace
import numpy as np
from privspec.results.kinds import Estimate
from privspec.results.result import render_results
from privspec.results.values import Inference, Vector

doc = json.loads(sys.stdin.read())

def back(x):
    if isinstance(x, dict) and set(x) == {"vector"}:
        labels, values = x["vector"]
        return Vector(tuple(labels), tuple(np.float64(v) for v in values))
    return x

results = {name: Estimate(back(r["value"]), **{k: back(v) for k, v in r["extras"].items()},
                          inference=Inference(r["extras"].get("ci_method")))
           for name, r in doc["results"].items()}
plan = SimpleNamespace(title=doc["title"], captions=doc["captions"])
texts = [render_results(fmt, plan, results, verbose=verbose) for fmt, verbose in doc["formats"]]
heavy = [n for n in doc["heavy"] if n in sys.modules]
print(json.dumps({"texts": texts, "heavy": heavy}))
"""


@pytest.fixture(scope="module")
def answered():
    spec = privspec.load(SPEC)
    rng = np.random.default_rng(38)
    raw = pd.DataFrame({"color": rng.choice(["black", "red", "green", "blue"], 3000, p=[0.05, 0.15, 0.3, 0.5])})
    reports = spec.privatize(raw, "urn", seed=38)
    return spec, spec.run(reports).results


def test_an_estimate_prints_without_the_heavy_libraries_as_with_the_model(answered) -> None:
    spec, results = answered
    assert set(results) == {"w", "w_mle"}
    # the fields of a finite back end's estimate, the EM's among them (a test of the test)
    assert {"se", "ci95", "ci_method", "loglik", "iterations", "kkt", "converged", "note"} <= set(results["w_mle"].extras)
    doc = {"title": spec.model.title, "captions": {name: caption(spec.model, name) for name in results},
           "results": {name: {"value": plain(r.value), "extras": {k: plain(v) for k, v in r.extras.items()}}
                       for name, r in results.items()},
           "formats": FORMATS, "heavy": HEAVY}
    out = subprocess.run([sys.executable, "-c", BUILD], cwd=ROOT, input=json.dumps(doc), capture_output=True,
                         text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["heavy"] == []
    expected = [render_results(fmt, spec.model, results, verbose=verbose) for fmt, verbose in FORMATS]
    for (fmt, verbose), want, have in zip(FORMATS, expected, got["texts"]):
        assert have == want, f"{fmt} (verbose={verbose}) differs"
    # the captions are there (a caption the plain object lacked would drop silently)
    assert all(c and c[0].upper() + c[1:] in expected[0] for c in doc["captions"].values())
    assert "Obfuscated urn" in expected[0]


def test_a_plain_object_gives_the_captions_and_title() -> None:
    plan = SimpleNamespace(title="t", captions={"w": "the distribution of color"})
    assert caption(plan, "w") == "the distribution of color"
    assert caption(plan, "other") is None
    r = {"w": Estimate(Vector(("a", "b"), (0.25, 0.75)), method="mom", n=10)}
    assert render_results("text", plan, r).splitlines()[:3] == ["t", "", "The distribution of color"]
    assert json.loads(render_results("json", plan, r))["spec"] == "t"
    # no captions at all: the model graph's way (none for a query it does not declare)
    assert render_results("text", SimpleNamespace(title=None), r).splitlines()[0] == "w (estimate): {a: 0.25, b: 0.75}"
