"""The JavaScript randomizer in a real browser: the same law as Python's privatize in Chromium.

tests/test_collect_randomizer.py checks every family under node; this runs the generated
module in headless Chromium (Debian's chromium, the ``browser`` fixture of conftest.py),
inlined into a page as a ``<script type="module">`` as a survey page holds it, drawing
from the browser's own ``crypto.getRandomValues`` (no seeded generator).  One page draws
>= 1e5 reports per true value for one mechanism of each family -- a finite one (``grr``,
and a subset design with dummy categories), a frequency oracle that hashes (``olh``), a
multi-attribute one (``rsfd``), an interval one (Case I), a selective one, a numeric
local-DP one (``hm``: Duchi's atoms and piecewise's density) -- and a
longitudinal oracle's permanent response kept in the browser's ``localStorage``; it writes the counts into the DOM (``--dump-dom``), and each
is compared (chi-square, p > 1e-4) with the exact law and with Python's privatize.  The
hash: the browser's ``localHash`` of 2,000 drawn seeds, for every category, is
bit-identical to Python's ``hash_values``; so is its hash of fixed seeds.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import privspec
from privspec.api import privatize
from privspec.backends.collect.randomizer import client_module
from privspec.backends.core.algebra import Float
from privspec.backends.core.compile import channel_of
from privspec.backends.finite.data import privatize_frame
from privspec.backends.numeric.backend import ldp_of
from privspec.backends.numeric.mechanisms import Duchi, Piecewise
from privspec.backends.oracles.backend import oracle_of
from privspec.backends.oracles.multi_backend import multi_of
from privspec.backends.oracles.protocols import hash_values
from tests.test_collect_randomizer_numeric import _piecewise_cdf

SPEC = """\
variable c: categorical {a, b, c, d, e}
variable color: categorical {black, red, green, blue}
variable y: continuous [0, 150]
mechanism k = grr(c, epsilon = 1)
mechanism floor = subset(color, uniform, min_coverage = 1/5)
mechanism hashed = olh(c, epsilon = 1)
mechanism c1 = interval(y, case1(uniform(0, 150)))
mechanism weekly = l_grr(c, epsilon = 2, first = 1)
variable g: categorical {F, M}
population y ~ uniform(0, 150)
mechanism fake = rsfd(c, g, epsilon = 1)
mechanism s1 = selective(c1, tau = 3/10, rho = 1/2)
mechanism hmy = hm(y, epsilon = 1)
"""
N = 100_000
P_MIN = 1e-4
#: fixed seeds of the local-hashing family (below P^3, P = 2^19 - 1), hashed in both languages
SEEDS = [0, 1, 524286, 524287, 524288, 274876858368, 524287 ** 3 - 1, 98765432109876543]

#: what the page runs after each mechanism's module (in the same module script: its
#: functions in scope; one module per mechanism, so that privatize draws that one only)
COUNT = """
const N = %(n)d;
const count = (draw) => { const c = {}; for (let r = 0; r < N; r++) { const k = draw(); c[k] = (c[k] || 0) + 1; } return c; };
const one = (answers) => () => Object.values(privatize(answers))[0];
const out = {};
"""
DRIVERS = {
    "k": 'for (const c of ["a", "d"]) out[c] = count(one({c}));',
    "floor": 'out.green = count(one({color: "green"}));',
    # olh: (whether the value is the hash of the answer, the value), 2,000 seeds' hashes, fixed seeds'
    "hashed": """const G = LAWS.hashed.factors[0].g; out.sample = []; let drawn = 0;
out.cells = count(() => {
  const [seed, value] = privatize({c: "c"}).hashed.split(":");
  if (drawn++ < 2000) out.sample.push([seed, Array.from({length: 5}, (_, u) => localHash(seed, u, G))]);
  return `${localHash(seed, 2, G) === Number(value) ? 1 : 0}:${value}`;
});
out.fixed = %(seeds)s.map((s) => Array.from({length: 5}, (_, u) => localHash(BigInt(s), u, G)));""",
    # case I at y = 10: the side, and the anchor's tenth of [0, 150]
    "c1": """out.cells = count(() => {
  const [lo, hi] = privatize({y: 10}).c1.slice(1, -1).split(", ");
  return lo === "-inf" ? `below:${Math.floor(Number(hi) / 10)}` : `above:${Math.floor(Number(lo) / 10)}`;
});""",
    # rsfd (grr fakes): the whole report, its columns joined
    "fake": 'out.cells = count(() => Object.values(privatize({c: "b", g: "M"}).fake).join(" & "));',
    # selective case I at y = 60: null, or the side collected
    "s1": """out.cells = count(() => {
  const r = privatize({y: 60}).s1;
  return r === "null" ? "null" : r.startsWith("(-inf") ? "below" : "above";
});""",
    # hm at y = 10: Duchi's atoms, or piecewise's tenth of [-C, C]
    "hmy": """const C = LAWS.hmy.factors[0].piecewise.bound, D = LAWS.hmy.factors[0].duchi.bound;
out.cells = count(() => {
  const x = Number(privatize({y: 10}).hmy);
  return x === D ? "plus" : x === -D ? "minus" : `pm:${Math.min(Math.floor((x + C) / (2 * C) * 10), 9)}`;
});""",
    # l_grr: no store passed, so localStorage keeps the permanent response, read back later
    "weekly": """localStorage.clear();
out.first = privatize({c: "b"}).weekly;
out.kept = Object.keys(localStorage).map((k) => [k, localStorage.getItem(k)]);
for (let i = 0; i < 20; i++) privatize({c: "b"});
out.after = Object.keys(localStorage).map((k) => [k, localStorage.getItem(k)]);""",
}


@pytest.fixture(scope="module")
def spec():
    s = privspec.load(SPEC)
    assert s.ok, s.diagnostics
    return s


def _page(spec, tmp: Path) -> Path:
    """One module script per mechanism: its module, then its driver writing into its <pre>."""
    scripts = []
    for name, driver in DRIVERS.items():
        module = client_module(spec.model, [name])
        assert "</script" not in module
        scripts.append(f"<pre id='{name}'></pre><script type='module'>\n{module}\n{COUNT % {'n': N}}"
                       f"{driver % {'seeds': json.dumps([str(s) for s in SEEDS])} if name == 'hashed' else driver}\n"
                       f"document.getElementById('{name}').textContent = JSON.stringify(out);\n</script>")
    page = tmp / "randomizer.html"
    page.write_text("<!doctype html><html><head><meta charset='utf-8'><title>privspec randomizer</title></head>"
                    "<body>" + "".join(scripts) + "</body></html>", encoding="utf-8")
    return page


#: the page's counts, drawn once for the module's tests (one Chromium run)
DRAWN: dict = {}


@pytest.fixture
def drawn(spec, browser) -> dict:
    """The counts the page wrote into its DOM (the first test runs the page, the others
    read what it wrote)."""
    if not DRAWN:
        page = _page(spec, browser.tmp)
        done = browser.run("--virtual-time-budget=600000", "--dump-dom", page.as_uri())
        for name in DRIVERS:
            found = re.search(rf"<pre id=\"{name}\">(.*?)</pre>", done.stdout, re.S)
            assert found and found.group(1), (name, done.stdout[-2000:], browser.console(done.stderr))
            DRAWN[name] = json.loads(html.unescape(found.group(1)))
    return DRAWN


def _check(js: dict[str, int], py: dict[str, int], exact: dict[str, float], what) -> None:
    """Goodness of fit to the exact law and homogeneity with Python's draws, p > P_MIN."""
    assert set(js) <= {k for k, v in exact.items() if v > 0}, (what, set(js) - set(exact))
    labels = sorted(exact)
    observed = np.array([js.get(k, 0) for k in labels])
    expected = np.array([exact[k] for k in labels])
    assert observed.sum() == N
    assert stats.chisquare(observed, expected / expected.sum() * N).pvalue > P_MIN, (what, js)
    table = np.array([observed, [py.get(k, 0) for k in labels]])
    table = table[:, table.sum(axis=0) > 0]
    assert stats.chi2_contingency(table).pvalue > P_MIN, (what, js, py)


def _channel_law(spec, name: str, label: str) -> dict[str, float]:
    mech = spec.model.mechanisms[name]
    ch = channel_of(mech)
    x = mech.variable.labels.index(label)
    return {lab: float(ch.Kn[o, x]) for o, lab in enumerate(ch.obs_labels) if ch.Kn[o, x] > 0}


def _python(spec, name: str, column: str, value, seed: int = 36) -> pd.Series:
    frame = pd.DataFrame({column: [value] * N})
    mech = spec.model.mechanisms[name]
    reports = privatize(spec, frame, name, seed=seed) if mech.family in ("oracle", "multi_oracle", "interval",
                                                                         "numeric") \
        else privatize_frame(spec.model, mech, frame, seed)
    return reports[column].astype(str)


def test_a_finite_mechanism_in_chromium_has_python_s_law(spec, drawn) -> None:
    """grr and the uniform subset design with dummy categories (its channel's column of a
    real category), drawn in the browser, against the channel and Python's privatize."""
    for label in ("a", "d"):
        py = _python(spec, "k", "c", label).value_counts().to_dict()
        _check(drawn["k"][label], py, _channel_law(spec, "k", label), ("k", label))
    py = _python(spec, "floor", "color", "green")
    _check(drawn["floor"]["green"], py.value_counts().to_dict(), _channel_law(spec, "floor", "green"),
           ("floor", "green"))


def test_local_hashing_in_chromium_is_bit_identical_to_python_and_has_its_law(spec, drawn) -> None:
    o = oracle_of(spec.model, spec.model.mechanisms["hashed"])
    np.testing.assert_array_equal(np.array(drawn["hashed"]["fixed"]), hash_values(o, np.array(SEEDS, dtype=np.uint64)))
    seeds = np.array([int(s) for s, _ in drawn["hashed"]["sample"]], dtype=np.uint64)
    np.testing.assert_array_equal(np.array([h for _, h in drawn["hashed"]["sample"]]), hash_values(o, seeds))
    texts = _python(spec, "hashed", "c", "c")
    py_seeds = np.array([int(t.split(":")[0]) for t in texts], dtype=np.uint64)
    py_values = np.array([int(t.split(":")[1]) for t in texts])
    hit = hash_values(o, py_seeds, np.array([2]))[:, 0] == py_values
    py = pd.Series([f"{int(h)}:{v}" for h, v in zip(hit, py_values)]).value_counts().to_dict()
    p = float(o.probs(Float)[0])
    exact = {f"{h}:{v}": (p if h else 1 - p) / o.g for h in (0, 1) for v in range(o.g)}
    _check(drawn["hashed"]["cells"], py, exact, "olh")


def test_an_interval_mechanism_in_chromium_has_python_s_law(spec, drawn) -> None:
    """case I, uniform anchor on [0, 150], y = 10: (the side, the anchor's tenth of the
    range) is uniform on 15 cells, the first tenth (U < 10) on the side above."""
    def cell(t: str) -> str:
        lo, hi = t[1:-1].split(", ")
        return f"below:{int(float(hi) // 10)}" if lo == "-inf" else f"above:{int(float(lo) // 10)}"
    py = _python(spec, "c1", "y", 10.0).map(cell).value_counts().to_dict()
    exact = {("above:0" if b == 0 else f"below:{b}"): 1 / 15 for b in range(15)}
    _check(drawn["c1"]["cells"], py, exact, "c1")


def test_a_longitudinal_oracle_keeps_its_permanent_response_in_local_storage(drawn) -> None:
    store = drawn["weekly"]
    assert len(store["kept"]) == 1 and store["kept"][0][0] == "privspec:weekly:l_grr:5:2.0"
    assert set(json.loads(store["kept"][0][1])) <= {"0", "1", "2", "3", "4"} and store["after"] == store["kept"]
    assert store["first"] in {"0", "1", "2", "3", "4"}


def test_a_multi_attribute_oracle_in_chromium_has_python_s_law(spec, drawn) -> None:
    """rsfd with grr fakes: each attribute's report is its oracle's at the amplified
    epsilon with probability 1/A, a uniform code otherwise (the exact marginals), and the
    whole report has the law of Python's privatize (homogeneity)."""
    mech = spec.model.mechanisms["fake"]
    mo = multi_of(spec.model, mech)
    frame = pd.DataFrame({"c": ["b"] * N, "g": ["M"] * N})
    py = privatize(spec, frame, "fake", seed=36).astype(str).agg(" & ".join, axis=1).value_counts().to_dict()
    js = drawn["fake"]["cells"]
    labels = sorted(set(js) | set(py))
    table = np.array([[js.get(k, 0) for k in labels], [py.get(k, 0) for k in labels]])
    assert stats.chi2_contingency(table).pvalue > P_MIN
    for j, (o, x) in enumerate(zip(mo.oracles, [1, 1])):
        p, q = (float(v) for v in o.probs(Float))
        exact = {str(v): ((p if v == x else q) + (mo.A - 1) / o.d) / mo.A for v in range(o.d)}
        marginal: dict[str, int] = {}
        for key, n in js.items():
            marginal[key.split(" & ")[j]] = marginal.get(key.split(" & ")[j], 0) + n
        py_marginal: dict[str, int] = {}
        for key, n in py.items():
            py_marginal[key.split(" & ")[j]] = py_marginal.get(key.split(" & ")[j], 0) + n
        _check(marginal, py_marginal, exact, ("fake", j))


def test_a_selective_mechanism_in_chromium_has_python_s_law(spec, drawn) -> None:
    """selective(case I, tau = 3/10, rho = 1/2) at y = 60, uniform anchor and population:
    (U, inf] is kept when U <= 105, (-inf, U] when U >= 45, each with the coin."""
    def side(t: str) -> str:
        return "null" if t == "null" else "below" if t.startswith("(-inf") else "above"
    py = _python(spec, "s1", "y", 60.0).map(side).value_counts().to_dict()
    exact = {"above": 0.5 * 60 / 150, "below": 0.5 * (150 - 60) / 150}
    exact["null"] = 1 - sum(exact.values())
    _check(drawn["s1"]["cells"], py, exact, "s1")


def test_a_numeric_mechanism_in_chromium_has_python_s_law(spec, drawn) -> None:
    """hm at epsilon 1, y = 10 of [0, 150]: Duchi's atoms +-D with probability (1 - alpha)
    (1/2 +- t/(2D)), else piecewise's report, counted in tenths of [-C, C] (its exact CDF)."""
    m = ldp_of(spec.model, spec.model.mechanisms["hmy"])
    pm, duchi = Piecewise(m.epsilon), Duchi(m.epsilon)
    t = float(m.to_domain(10.0, 0.0, 150.0))

    def cell(x: float) -> str:
        if abs(x) == duchi.bound:
            return "plus" if x > 0 else "minus"
        return f"pm:{min(int((x + pm.bound) / (2 * pm.bound) * 10), 9)}"
    py = _python(spec, "hmy", "y", 10.0).astype(float).map(cell).value_counts().to_dict()
    plus = 0.5 + t / (2 * duchi.bound)
    exact = {"plus": (1 - m.alpha) * plus, "minus": (1 - m.alpha) * (1 - plus)}
    F = _piecewise_cdf(pm, t, np.linspace(-pm.bound, pm.bound, 11))
    exact.update({f"pm:{i}": m.alpha * float(F[i + 1] - F[i]) for i in range(10)})
    _check(drawn["hmy"]["cells"], py, exact, "hmy")
