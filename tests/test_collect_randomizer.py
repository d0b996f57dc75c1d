"""The JavaScript randomizer (``privspec client``): the same law as Python's privatize.

For each family -- finite mechanisms, the one-round, longitudinal and multi-attribute
frequency oracles, interval, selective and progressive mechanisms -- the generated module
is run under node (one process per mechanism, seeded), >= 1e5 reports per true value
counted there, and the counts compared with the exact law (chi-square goodness of fit)
and with Python's privatize on the same answers (chi-square homogeneity), each at
p > 1e-4.  Seeds are fixed, so a pass is reproducible; the threshold is a
one-in-ten-thousand false alarm per comparison were the seeds drawn afresh.  The
reports of each family are read by ``run``; docs/client.md's platform snippets run here
too, on a stand-in of the platform's page (tests/test_collect_randomizer_browser.py runs
the module in Chromium).
"""
from __future__ import annotations

import io
import itertools
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import privspec
from privspec.api import client, privatize
from privspec.cli import main
from privspec.errors import BackendError
from privspec.backends.collect.randomizer import client_module
from privspec.backends.core.algebra import Float
from privspec.backends.core.compile import channel_of
from privspec.backends.finite.data import factor_mechanisms, privatize_frame
from privspec.backends.interval.laws import law_distribution
from privspec.backends.core.rowrandom import RowRandom
from privspec.backends.oracles.backend import oracle_of
from privspec.backends.oracles.longitudinal import privatize_collections
from privspec.backends.oracles.multi_backend import multi_of
from privspec.backends.oracles.protocols import hash_values

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

SPEC = """\
variable c: categorical {a, b, c, d, e}
variable g: categorical {F, M}
variable i: categorical {Lo, Hi}
variable color: categorical {black, red, green, blue}
mechanism k = grr(c, epsilon = 1)
mechanism warner = rr(g, matrix [[3/4, 1/4], [1/4, 3/4]])
mechanism forced = rr(g, matrix [[4/5, 1/5], [3/10, 7/10]])
mechanism u = subset(c, uniform)
mechanism indep = subset(color, independent { {black, red}: 2/5, {black, green}: 3/10, {black, blue}: 3/10 })
mechanism cond = subset(color, conditional { {black, red}: 2/5, {green, blue}: 2/5, {black, green}: 3/5, {red, blue}: 3/5 })
mechanism pairs = subset(color, sizes {2: 1/2, 3: 1/2})
mechanism floor = subset(color, uniform, min_coverage = 1/5)
mechanism joint = grr(g * i, epsilon = 2)
mechanism prod = product(grr(g, epsilon = 1), subset(color, uniform))
mechanism hashed = olh(c, epsilon = 1)
mechanism ue = oue(c, epsilon = 1)
mechanism su = sue(c, epsilon = 1)
mechanism sel = ss(c, epsilon = 1/2)
mechanism had = hr(c, epsilon = 1)
mechanism ad = adp(c, epsilon = 1)
mechanism weekly = l_osue(c, epsilon = 2, first = 1)
"""
N = 100_000
P_MIN = 1e-4

DRIVER = """
const m = await import(process.argv[1]);
const answers = JSON.parse(process.argv[2]);
const n = Number(process.argv[3]);
const random = m.seededRandom(Number(process.argv[4]));
const out = [];
for (const a of answers) {
  const counts = {};
  for (let r = 0; r < n; r++) {
    const rep = Object.values(m.privatize(a, {random}))[0];
    const key = typeof rep === "string" ? rep : Object.values(rep).join(" & ");
    counts[key] = (counts[key] || 0) + 1;
  }
  out.push(counts);
}
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def model():
    spec = privspec.load(SPEC)
    assert spec.ok, spec.diagnostics
    return spec.model


def _node(module: str, tmp: Path, answers: list[dict], n: int, seed: int) -> list[dict[str, int]]:
    path = tmp / "randomizer.mjs"
    path.write_text(module, encoding="utf-8")
    done = subprocess.run([NODE, "--input-type=module", "-e", DRIVER, path.as_uri(), json.dumps(answers), str(n),
                           str(seed)], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def _exact(mech, answer: dict) -> dict[str, float]:
    """The exact law of the report (a product's factors joined with ' & '), from the channels."""
    laws = []
    for f in factor_mechanisms(mech):
        ch = channel_of(f)
        x = f.variable.labels.index(answer[f.variable.name] if f.variable.name in answer
                                    else ".".join(answer[p] for p in f.variable.parts))
        laws.append({lab: float(ch.Kn[o, x]) for o, lab in enumerate(ch.obs_labels) if ch.Kn[o, x] > 0})
    out = {}
    for combo in itertools.product(*(law.items() for law in laws)):
        out[" & ".join(lab for lab, _ in combo)] = float(np.prod([p for _, p in combo]))
    return out


def _oracle_exact(model, mech, answer: dict) -> dict[str, float]:
    """The exact law of a one-round oracle's report text, from its declared ``(p*, q*)``."""
    o = oracle_of(model, mech)
    x = mech.variable.labels.index(answer[mech.variable.name])
    p, q = (float(v) for v in o.probs(Float))
    d = o.d
    if o.kind == "grr":
        return {str(j): p if j == x else q for j in range(d)}
    if o.kind in ("sue", "oue"):
        out = {}
        for bits in itertools.product([0, 1], repeat=d):
            prob = np.prod([(p if v == x else q) if b else (1 - (p if v == x else q)) for v, b in enumerate(bits)])
            out[np.packbits(bits, bitorder="little").tobytes().hex()] = float(prob)
        return out
    if o.kind == "ss":
        k = o.k
        return {"|".join(map(str, a)): p / math.comb(d - 1, k - 1) if x in a else (1 - p) / math.comb(d - 1, k)
                for a in itertools.combinations(range(d), k)}
    assert o.kind == "hr"
    inside = [bin(j & (x + 1)).count("1") % 2 == 0 for j in range(o.K)]
    return {str(j): (p if inside[j] else 1 - p) / (o.K / 2) for j in range(o.K)}


def _python(model, mech, answer: dict, n: int, seed: int) -> dict[str, int]:
    frame = pd.DataFrame({k: [v] * n for k, v in answer.items()})
    if mech.family == "oracle":
        reports = privatize(privspec.load(SPEC), frame, mech.name, seed=seed)
    else:
        reports = privatize_frame(model, mech, frame, seed)
    keys = reports.astype(str).agg(" & ".join, axis=1)
    return keys.value_counts().to_dict()


CASES = {  # mechanism: the true answers drawn for
    "k": [{"c": "a"}, {"c": "d"}],
    "warner": [{"g": "F"}, {"g": "M"}],
    "forced": [{"g": "F"}, {"g": "M"}],
    "u": [{"c": "a"}, {"c": "e"}],
    "indep": [{"color": "black"}, {"color": "blue"}],
    "cond": [{"color": "red"}, {"color": "green"}],
    "pairs": [{"color": "black"}],
    "floor": [{"color": "green"}],
    "joint": [{"g": "F", "i": "Lo"}, {"g": "M", "i": "Hi"}],
    "prod": [{"g": "M", "color": "red"}],
    "ue": [{"c": "b"}],
    "su": [{"c": "e"}],
    "sel": [{"c": "a"}, {"c": "c"}],
    "had": [{"c": "a"}, {"c": "e"}],
    "ad": [{"c": "d"}],
}


#: one mechanism per family runs by default; the others (1-3 s each) with the slow tests
FAST = {"k", "u", "prod", "ue"}


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in CASES])
def test_the_javascript_draws_from_the_law_python_privatizes_with(model, name: str, tmp_path: Path) -> None:
    mech = model.mechanisms[name]
    answers = CASES[name]
    drawn = _node(client_module(model, [name]), tmp_path, answers, N, seed=36)
    for answer, js in zip(answers, drawn):
        exact = _oracle_exact(model, mech, answer) if mech.family == "oracle" else _exact(mech, answer)
        assert set(js) <= set(exact), f"{name}: reports outside the law: {set(js) - set(exact)}"
        labels = sorted(exact)
        observed = np.array([js.get(lab, 0) for lab in labels])
        expected = np.array([exact[lab] for lab in labels]) * N
        fit = stats.chisquare(observed, expected / expected.sum() * observed.sum())
        assert fit.pvalue > P_MIN, (name, answer, fit)
        py = _python(model, mech, answer, N, seed=36)
        table = np.array([observed, [py.get(lab, 0) for lab in labels]])
        table = table[:, table.sum(axis=0) > 0]
        if table.shape[1] > 1:
            same = stats.chi2_contingency(table)
            assert same.pvalue > P_MIN, (name, answer, same.pvalue)


RUN_QUERIES = """
query q_k = estimate distribution(c) from k by mle
query q_u = estimate distribution(c) from u by mle
query q_indep = estimate distribution(color) from indep by mle
query q_joint = estimate joint(g, i) from joint by joint
query q_prod = estimate joint(g, color) from prod by mle
query q_ue = estimate distribution(c) from ue by mom
query q_su = estimate distribution(c) from su by mom
query q_sel = estimate distribution(c) from sel by mom
query q_had = estimate distribution(c) from had by mom
query q_hashed = estimate distribution(c) from hashed by mom
query q_ad = estimate distribution(c) from ad by mom
"""


def test_reports_are_written_as_privspec_reads_them(tmp_path: Path) -> None:
    """The JS reports of every family, in the columns privatize writes (a product's one
    per factor), are read and answered by ``run``."""
    spec = privspec.load(SPEC + RUN_QUERIES)
    assert spec.ok, spec.diagnostics
    names = [q[2:] for q in spec.model.queries]
    answers = [{"c": "abcde"[r % 5], "color": ["black", "red", "green", "blue"][r % 4], "g": "FM"[r % 2],
                "i": ["Lo", "Hi"][r // 2 % 2]} for r in range(400)]
    path = tmp_path / "r.mjs"
    path.write_text(client_module(spec.model, names), encoding="utf-8")
    script = ("const m = await import(process.argv[1]); const r = m.seededRandom(7);"
              "console.log(JSON.stringify(JSON.parse(process.argv[2]).map(a => m.privatize(a, {random: r}))));")
    done = subprocess.run([NODE, "--input-type=module", "-e", script, path.as_uri(), json.dumps(answers)],
                          capture_output=True, text=True, timeout=60, check=True)
    rows = json.loads(done.stdout)
    for n in names:
        mech = spec.model.mechanisms[n]
        if isinstance(rows[0][n], dict):   # a product: one column per factor's variable
            frame = pd.DataFrame([row[n] for row in rows])
        else:
            frame = pd.DataFrame({mech.variables[0].name: [row[n] for row in rows]})
        csv = tmp_path / f"{n}.csv"
        frame.to_csv(csv, index=False)
        res = spec.run(data={n: str(csv)}, queries=[f"q_{n}"])
        assert res.ok, (n, res.failures)


def test_interval_reports_are_read_by_run(tmp_path: Path) -> None:
    spec = privspec.load(INTERVALS + "query mu = estimate mean(y) from c1 by unbiased\n"
                                     "query F = estimate cdf(z) from c2 by npmle\n")
    assert spec.ok, spec.diagnostics
    path = tmp_path / "r.mjs"
    path.write_text(client_module(spec.model, ["c1", "c2"]), encoding="utf-8")
    script = ("const m = await import(process.argv[1]); const r = m.seededRandom(8);"
              "console.log(JSON.stringify(Array.from({length: 500}, (_, i) => "
              "m.privatize({y: (i * 37) % 150, z: (i % 13) - 6}, {random: r}))));")
    done = subprocess.run([NODE, "--input-type=module", "-e", script, path.as_uri()], capture_output=True, text=True,
                          timeout=60, check=True)
    rows = json.loads(done.stdout)
    for n, v, q in [("c1", "y", "mu"), ("c2", "z", "F")]:
        csv = tmp_path / f"{n}.csv"
        pd.DataFrame({v: [row[n] for row in rows]}).to_csv(csv, index=False)
        res = spec.run(data={n: str(csv)}, queries=[q])
        assert res.ok, (n, res.failures)


CENSORED = "variable t: continuous [0, 10]\nmechanism cens = censored(t)\n"


def test_a_censored_mechanism_is_refused_saying_no_respondent_draws_it() -> None:
    spec = privspec.load(SPEC + CENSORED)
    assert spec.ok, spec.diagnostics
    assert "export function privatize" in client_module(spec.model, ["k", "weekly"])   # longitudinal: run
    with pytest.raises(BackendError) as err:
        client_module(spec.model, ["k", "cens"])
    assert err.value.code == "B000" and "'cens'" in str(err.value) and "not drawn by a respondent" in str(err.value)


def test_the_module_draws_from_the_platform_csprng_only(model) -> None:
    text = client_module(model, ["k"])
    assert "crypto.getRandomValues" in text and "Math.random" not in text and "import " not in text.split(
        "export const LAWS")[1].split("\n")[0]


def test_client_verb_writes_the_module_once_and_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    spec = tmp_path / "s.privspec"
    spec.write_text(SPEC + CENSORED, encoding="utf-8")
    out = tmp_path / "randomizer.js"
    err = io.StringIO()
    assert main(["client", str(spec), "--out", str(out), "--mechanism", "k", "--mechanism", "prod"],
                stdout=io.StringIO(), stderr=err) == 0
    first = out.read_text(encoding="utf-8")
    assert "export function privatize" in first and '"prod"' in first and '"u"' not in first
    err = io.StringIO()
    assert main(["client", str(spec), "--out", str(out), "--mechanism", "u"], stdout=io.StringIO(), stderr=err) == 1
    assert "D007" in err.getvalue() and out.read_text(encoding="utf-8") == first   # never overwritten ...
    assert main(["client", str(spec), "--out", str(out), "--mechanism", "u", "--force"],
                stdout=io.StringIO(), stderr=io.StringIO()) == 0
    assert '"u"' in out.read_text(encoding="utf-8")                                  # ... unless asked
    other = tmp_path / "all.js"
    err = io.StringIO()
    assert main(["client", str(spec), "--out", str(other)], stdout=io.StringIO(), stderr=err) == 1
    assert "error[B000]" in err.getvalue() and "'cens'" in err.getvalue() and str(spec) in err.getvalue()
    assert not other.exists()
    err = io.StringIO()
    assert main(["client", str(spec), "--out", str(other), "--mechanism", "kk"], stdout=io.StringIO(), stderr=err) == 2
    assert "no mechanism named 'kk'" in err.getvalue() and not other.exists()


def test_client_in_python(tmp_path: Path) -> None:
    spec = privspec.load(SPEC)
    text = client(spec, tmp_path / "r.js", ["joint"])
    assert (tmp_path / "r.js").read_text(encoding="utf-8") == text
    with pytest.raises(KeyError):
        client(spec, tmp_path / "x.js", ["nope"])


def test_an_answer_outside_the_categories_throws_naming_the_variable(model, tmp_path: Path) -> None:
    path = tmp_path / "r.mjs"
    path.write_text(client_module(model, ["joint"]), encoding="utf-8")
    script = ("const m = await import(process.argv[1]);"
              "console.log(JSON.stringify(m.privatize({g: 'F', i: 'Hi'})));"
              "try { m.privatize({g: 'X', i: 'Hi'}); } catch (e) { console.log(e.message); }"
              "try { m.privatize({g: 'F'}); } catch (e) { console.log(e.message); }")
    done = subprocess.run([NODE, "--input-type=module", "-e", script, path.as_uri()], capture_output=True, text=True,
                          timeout=60, check=True)
    first, outside, missing = done.stdout.splitlines()
    assert json.loads(first)["joint"] in {"F.Lo", "F.Hi", "M.Lo", "M.Hi"}
    assert outside == '"X.Hi" is not a category of g*i: F.Lo, F.Hi, M.Lo, M.Hi'
    assert missing == "no answer for g*i (or its parts g, i)"


HASH_DRIVER = """
const m = await import(process.argv[1]);
const [answer, n, seed, d, g] = JSON.parse(process.argv[2]);
const random = m.seededRandom(seed);
const reports = [], hashes = [];
for (let r = 0; r < n; r++) {
  const rep = Object.values(m.privatize(answer, {random}))[0];
  reports.push(rep);
  if (r < 2000) hashes.push(Array.from({length: d}, (_, u) => m.localHash(rep.split(":")[0], u, g)));
}
console.log(JSON.stringify({reports, hashes}));
"""


@pytest.mark.parametrize("name", ["hashed"])
def test_local_hashing_in_javascript_hashes_as_python_and_draws_its_law(model, name: str, tmp_path: Path) -> None:
    """olh: the JS hash of each drawn seed equals Python's hash_values for every category
    (bit-identical), and (hit, value) -- whether the value is the hash of the answer, and
    the value -- has the law of the GRR over [g] and Python's privatize's law."""
    mech = model.mechanisms[name]
    o = oracle_of(model, mech)
    path = tmp_path / "r.mjs"
    path.write_text(client_module(model, [name]), encoding="utf-8")
    x = 2
    answer = {"c": mech.variable.labels[x]}
    done = subprocess.run([NODE, "--input-type=module", "-e", HASH_DRIVER, path.as_uri(),
                           json.dumps([answer, N, 36, o.d, o.g])], capture_output=True, text=True, timeout=120,
                          check=True)
    out = json.loads(done.stdout)

    def split(texts):
        seeds = np.array([int(t.split(":")[0]) for t in texts], dtype=np.uint64)
        return seeds, np.array([int(t.split(":")[1]) for t in texts])

    seeds, values = split(out["reports"])
    assert seeds.max() < np.uint64(524287 ** 3)
    np.testing.assert_array_equal(np.array(out["hashes"]), hash_values(o, seeds[:2000]))
    python = privatize(privspec.load(SPEC), pd.DataFrame({"c": [answer["c"]] * N}), name, seed=36)
    py_seeds, py_values = split(python["c"].astype(str))

    def cells(seeds, values):  # (hit, value) as one of 2 g cells
        hit = hash_values(o, seeds, np.array([x]))[:, 0] == values
        return np.bincount(hit * o.g + values, minlength=2 * o.g)

    js, py = cells(seeds, values), cells(py_seeds, py_values)
    p = float(o.probs(Float)[0])
    exact = np.array([(1 - p) / o.g] * o.g + [p / o.g] * o.g)   # the hash of x uniform on [g] to 1/P
    assert stats.chisquare(js, exact * N).pvalue > P_MIN
    assert stats.chi2_contingency(np.array([js, py])).pvalue > P_MIN


INTERVALS = """\
variable y: continuous [0, 150]
variable z: continuous
mechanism c1 = interval(y, case1(uniform(0, 150)))
mechanism c2 = interval(z, case2(logistic(0, 5)))
mechanism cm = interval(y, canonical(4, uniform(0, 150)))
mechanism ring = interval(y, ring(3, uniform(0, 150)))
mechanism nz = interval(z, case2(normal(1, 2)))
mechanism open = interval(y, case1(uniform(0, 150)), disclose [0, 20])
"""
REPORTS_DRIVER = """
const m = await import(process.argv[1]);
const [answer, n, seed] = JSON.parse(process.argv[2]);
const random = m.seededRandom(seed);
console.log(JSON.stringify(Array.from({length: n}, () => Object.values(m.privatize(answer, {random}))[0])));
"""


def _ends(texts) -> tuple[np.ndarray, np.ndarray]:
    """(left, right) of ``(l, r]`` reports; a ring range ``(-inf, r] | (l, inf]`` as l > r."""
    left, right = [], []
    for t in texts:
        if "|" in t:
            a, b = t.split("|")
            left.append(float(b.strip()[1:].split(",")[0]))
            right.append(float(a.strip()[:-1].split(",")[1]))
        else:
            lo, hi = t[1:-1].split(",")
            left.append(float(lo))
            right.append(float(hi))
    return np.array(left), np.array(right)


@pytest.mark.parametrize("name, value", [("c1", 10.0), *(pytest.param(*case, marks=pytest.mark.slow) for case in
                                                       [("c2", -0.5), ("cm", 70.0), ("ring", 40.0), ("nz", 2.0)])])
def test_interval_reports_in_javascript_have_python_s_law(name: str, value: float, tmp_path: Path) -> None:
    """Which side (no anchor below, none above, between; ``ring``: the ring range or not)
    against the binomial law of the anchors below the answer and against Python's
    privatize; each finite end's distribution against Python's (two-sample KS)."""
    spec = privspec.load(INTERVALS)
    mech = spec.model.mechanisms[name]
    var = mech.variable.name
    path = tmp_path / "r.mjs"
    path.write_text(client_module(spec.model, [name]), encoding="utf-8")
    done = subprocess.run([NODE, "--input-type=module", "-e", REPORTS_DRIVER, path.as_uri(),
                           json.dumps([{var: value}, N, 36])], capture_output=True, text=True, timeout=120, check=True)
    js = _ends(json.loads(done.stdout))
    py = _ends(privatize(spec, pd.DataFrame({var: [value] * N}), name, seed=36)[var].astype(str))
    count = mech.m if mech.scheme == "ring" else mech.m - 1
    F = float(law_distribution(mech.anchor).cdf(value))
    none_below, none_above = (1 - F) ** count, F ** count

    def sides(left, right):
        if mech.scheme == "ring":
            ring = left > right
            return np.array([ring.sum(), (~ring).sum()])
        return np.array([np.isinf(left).sum(), np.isinf(right).sum(), (np.isfinite(left) & np.isfinite(right)).sum()])

    exact = (np.array([none_below + none_above, 1 - none_below - none_above]) if mech.scheme == "ring"
             else np.array([none_below, none_above, 1 - none_below - none_above]))
    a, b = sides(*js), sides(*py)
    keep = exact > 0
    assert stats.chisquare(a[keep], exact[keep] / exact[keep].sum() * a.sum()).pvalue > P_MIN
    table = np.array([a, b])[:, (a + b) > 0]
    assert table.shape[1] < 2 or stats.chi2_contingency(table).pvalue > P_MIN
    assert np.all((js[0] < value) & (value <= js[1]) | (js[0] > js[1]))  # the range holds the answer
    for j, p in zip(js, py):
        fj, fp = j[np.isfinite(j)], p[np.isfinite(p)]
        assert stats.ks_2samp(fj, fp).pvalue > P_MIN


def test_interval_anchors_shown_and_the_side_answered(tmp_path: Path) -> None:
    """drawAnchors gives the sorted anchors to show, rangeReport the chosen side's report;
    disclose reports a value in the acceptable range exactly."""
    spec = privspec.load(INTERVALS)
    path = tmp_path / "r.mjs"
    path.write_text(client_module(spec.model, ["cm", "ring", "open"]), encoding="utf-8")
    script = ("const m = await import(process.argv[1]); const r = m.seededRandom(5);"
              "const a = m.drawAnchors('cm', {random: r}); const t = m.drawAnchors('ring', {random: r});"
              "console.log(JSON.stringify([a, m.rangeReport('cm', a, 0), m.rangeReport('cm', a, 2),"
              " m.rangeReport('cm', a, 3), m.rangeReport('ring', t, 3), m.privatize({y: 12.5}, {random: r}).open,"
              " m.formatNumber(1e-5), m.formatNumber(-0), m.formatNumber(3)]));")
    done = subprocess.run([NODE, "--input-type=module", "-e", script, path.as_uri()], capture_output=True, text=True,
                          timeout=60, check=True)
    a, first, middle, last, ring, disclosed, small, zero, whole = json.loads(done.stdout)
    assert len(a) == 3 and a == sorted(a) and all(0 <= x <= 150 for x in a)
    assert first == f"(-inf, {a[0]!r}]" and middle == f"({a[1]!r}, {a[2]!r}]" and last == f"({a[2]!r}, inf]"
    assert ring.startswith("(-inf, ") and ring.endswith(", inf]") and " | (" in ring
    assert (disclosed, small, zero, whole) == ("12.5", "1e-05", "0", "3")


def test_a_selective_mechanism_without_a_population_is_refused_as_privatize_refuses_it() -> None:
    spec = privspec.load(INTERVALS + "mechanism sel = selective(c1, tau = 3/10, rho = 1/2)")
    assert spec.ok, spec.diagnostics
    with pytest.raises(BackendError) as err:
        client_module(spec.model, ["c1", "sel"])
    assert err.value.code == "B102" and "'sel'" in str(err.value) and "population of y" in str(err.value)


SELECTIVE = """\
variable y: continuous [0, 150]
variable z: continuous
population y ~ uniform(0, 150)
population z ~ normal(1, 2)
mechanism c1 = interval(y, case1(uniform(0, 150)))
mechanism s1 = selective(c1, tau = 3/10, rho = 1/2)
mechanism cm = interval(y, canonical(4, uniform(0, 150)), disclose [0, 20])
mechanism sd = selective(cm, tau = 1/5, rho = 3/4)
mechanism c2 = interval(z, case2(logistic(0, 5)))
mechanism sz = selective(c2, tau = 1/5, rho = 3/4)
mechanism rg = interval(y, ring(3, uniform(0, 150)))
mechanism sr = selective(rg, tau = 2/5, rho = 1)
"""


def _selective_sides(texts) -> dict[str, int]:
    """null, a ring range, no anchor below, none above, between, a disclosed point."""
    def side(t: str) -> str:
        if t == "null":
            return "null"
        if "|" in t:
            return "ring"
        if not t.startswith("("):
            return "point"
        lo, hi = t[1:-1].split(", ")
        return "below" if lo == "-inf" else "above" if hi == "inf" else "between"
    return pd.Series([side(t) for t in texts]).value_counts().to_dict()


@pytest.mark.parametrize("name, value", [("s1", 60.0), *(pytest.param(*case, marks=pytest.mark.slow) for case in
                                                         [("s1", 130.0), ("sd", 10.0), ("sd", 70.0), ("sz", 0.5),
                                                          ("sr", 40.0)])])
def test_selective_reports_in_javascript_have_python_s_law(name: str, value: float, tmp_path: Path) -> None:
    """selective(M, tau, rho) drawn on the device: null or the side collected against
    Python's privatize (chi-square), each finite end of the collected ranges by KS; for
    s1 (case I, uniform anchor and population) also against the exact law: the range
    below (U, inf] is kept when U <= 150 (1 - tau), the one above (-inf, U] when
    U >= 150 tau, each with the coin rho."""
    spec = privspec.load(SELECTIVE)
    assert spec.ok, spec.diagnostics
    mech = spec.model.mechanisms[name]
    var = mech.variable.name
    path = tmp_path / "r.mjs"
    path.write_text(client_module(spec.model, [name]), encoding="utf-8")
    done = subprocess.run([NODE, "--input-type=module", "-e", REPORTS_DRIVER, path.as_uri(),
                           json.dumps([{var: value}, N, 36])], capture_output=True, text=True, timeout=120, check=True)
    js_texts = json.loads(done.stdout)
    py_texts = privatize(spec, pd.DataFrame({var: [value] * N}), name, seed=36)[var].astype(str).tolist()
    js, py = _selective_sides(js_texts), _selective_sides(py_texts)
    if name == "s1":
        tau, rho = 0.3, 0.5
        exact = {"above": rho * min(value, 150 * (1 - tau)) / 150,     # the range (U, inf]: U below y
                 "below": rho * (150 - max(value, 150 * tau)) / 150}   # (-inf, U]: U at or above y
        exact["null"] = 1 - sum(exact.values())
        _same_law(js, py, exact, (name, value))
    labels = sorted(set(js) | set(py))
    table = np.array([[js.get(k, 0) for k in labels], [py.get(k, 0) for k in labels]])
    assert table.shape[1] < 2 or stats.chi2_contingency(table).pvalue > P_MIN, (name, value, js, py)
    kept = [t for t in js_texts if t not in ("null",) and "|" not in t and t.startswith("(")]
    py_kept = [t for t in py_texts if t not in ("null",) and "|" not in t and t.startswith("(")]
    if kept and py_kept:
        for j, p in zip(_ends(kept), _ends(py_kept)):
            fj, fp = j[np.isfinite(j)], p[np.isfinite(p)]
            if len(fj) and len(fp):
                assert stats.ks_2samp(fj, fp).pvalue > P_MIN, (name, value)


def test_a_selective_range_is_decided_on_the_device(tmp_path: Path) -> None:
    """selectiveReport: the side the respondent chose, collected or null by its coverage
    under the population law and the coin (rho = 1 here: coverage alone decides)."""
    spec = privspec.load(SELECTIVE)
    path = tmp_path / "r.mjs"
    path.write_text(client_module(spec.model, ["sr"]), encoding="utf-8")
    script = ("const m = await import(process.argv[1]); const r = m.seededRandom(2);"
              "const a = [30, 60, 135];"   # coverages 0.2 (30, 60], 0.5 (60, 135], the ring 0.3
              "console.log(JSON.stringify([m.selectiveReport('sr', a, 1, {random: r}),"
              " m.selectiveReport('sr', a, 2, {random: r}), m.selectiveReport('sr', a, 0, {random: r}),"
              " m.drawAnchors('sr', {random: r}).length]));")
    done = subprocess.run([NODE, "--input-type=module", "-e", script, path.as_uri()], capture_output=True, text=True,
                          timeout=60, check=True)
    assert json.loads(done.stdout) == ["null", "(60, 135]", "null", 3]


def test_progressive_rounds_in_javascript_have_python_s_law(tmp_path: Path) -> None:
    """progressive(y, rounds = 3) asked round by round: the ends of the range left equal
    Python's privatize's in law (the side pattern by chi-square, each finite end by KS),
    and the successive questions of the API give the same reports as privatize."""
    spec = privspec.load(INTERVALS + "mechanism prog = progressive(y, rounds = 3)\n")
    path = tmp_path / "r.mjs"
    path.write_text(client_module(spec.model, ["prog"]), encoding="utf-8")
    value = 40.0
    done = subprocess.run([NODE, "--input-type=module", "-e", REPORTS_DRIVER, path.as_uri(),
                           json.dumps([{"y": value}, N, 36])], capture_output=True, text=True, timeout=120, check=True)
    js = _ends(json.loads(done.stdout))
    py = _ends(privatize(spec, pd.DataFrame({"y": [value] * N}), "prog", seed=36)["y"].astype(str))

    def sides(left, right):
        return np.array([np.isinf(left).sum(), np.isinf(right).sum(), (np.isfinite(left) & np.isfinite(right)).sum()])

    assert np.all((js[0] < value) & (value <= js[1]))
    assert stats.chi2_contingency(np.array([sides(*js), sides(*py)])).pvalue > P_MIN
    for j, p in zip(js, py):
        assert stats.ks_2samp(j[np.isfinite(j)], p[np.isfinite(p)]).pvalue > P_MIN
    script = ("const m = await import(process.argv[1]); const a = m.seededRandom(9), b = m.seededRandom(9);"
              "let range; const asked = [];"
              "for (let h = 0; h < 3; h++) { const u = m.nextAnchor('prog', range, {random: a});"
              " range = m.answerRound(range || [0, 150], u, 40 <= u); }"
              "console.log(JSON.stringify([m.progressiveReport('prog', range), m.privatize({y: 40}, {random: b}).prog]));")
    done = subprocess.run([NODE, "--input-type=module", "-e", script, path.as_uri()], capture_output=True, text=True,
                          timeout=60, check=True)
    asked, direct = json.loads(done.stdout)
    assert asked == direct


# ---- longitudinal and multi-attribute oracles ------------------------------------------------------
ORACLES = """\
variable race: categorical {a, b, c, d}
variable gender: categorical {F, M}
variable income: categorical {lo, mid, hi}
mechanism lg = l_grr(race, epsilon = 2, first = 1)
mechanism lx = l_osue(race, epsilon = 2, first = 1)
mechanism lo = l_oue(race, epsilon = 2, first = 1)
mechanism s = spl(oue(race), grr(gender), hr(income), epsilon = 3)
mechanism m = smp(oue(race), grr(gender), ss(income), epsilon = 1)
mechanism g = rsfd(race, gender, income, epsilon = 1)
mechanism z = rsfd(race, gender, income, epsilon = 1, fake = oue_z)
mechanism r = rsfd(race, gender, income, epsilon = 1, fake = sue_r)
"""
#: respondents per true value and collections per respondent, each with a fresh store
STORE_DRIVER = """
const m = await import(process.argv[1]);
const [answers, n, seed, collections] = JSON.parse(process.argv[2]);
const random = m.seededRandom(seed);
const out = [];
for (const a of answers) {
  const counts = {};
  for (let r = 0; r < n; r++) {
    const kept = new Map();
    const store = {getItem: (k) => (kept.has(k) ? kept.get(k) : null), setItem: (k, v) => kept.set(k, v)};
    const reps = [];
    for (let t = 0; t < collections; t++) {
      const rep = Object.values(m.privatize(a, {random, store}))[0];
      reps.push(typeof rep === "string" ? rep : Object.values(rep).join(" & "));
    }
    const key = reps.join(" ; ");
    counts[key] = (counts[key] || 0) + 1;
  }
  out.push(counts);
}
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def oracles():
    spec = privspec.load(ORACLES)
    assert spec.ok, spec.diagnostics
    return spec


def _store_node(module: str, tmp: Path, answers: list[dict], n: int, seed: int, collections: int = 1
                ) -> list[dict[str, int]]:
    path = tmp / "randomizer.mjs"
    path.write_text(module, encoding="utf-8")
    done = subprocess.run([NODE, "--input-type=module", "-e", STORE_DRIVER, path.as_uri(),
                           json.dumps([answers, n, seed, collections])], capture_output=True, text=True, timeout=300,
                          check=True)
    return json.loads(done.stdout)


def _one_round(o, x: int) -> dict[str, float]:
    """The exact law of a one-round oracle's report text for category code ``x``."""
    p, q = (float(v) for v in o.probs(Float))
    d = o.d
    if o.kind == "grr":
        return {str(j): p if j == x else q for j in range(d)}
    if o.kind in ("sue", "oue"):
        return _bits(d, [p if v == x else q for v in range(d)])
    if o.kind == "ss":
        return {"|".join(map(str, a)): p / math.comb(d - 1, o.k - 1) if x in a else (1 - p) / math.comb(d - 1, o.k)
                for a in itertools.combinations(range(d), o.k)}
    assert o.kind == "hr"
    inside = [bin(j & (x + 1)).count("1") % 2 == 0 for j in range(o.K)]
    return {str(j): (p if inside[j] else 1 - p) / (o.K / 2) for j in range(o.K)}


def _bits(d: int, on: list[float]) -> dict[str, float]:
    """Independent bits, bit v on with probability on[v], as privspec writes them (hex)."""
    out = {}
    for bits in itertools.product([0, 1], repeat=d):
        prob = np.prod([pv if b else 1 - pv for pv, b in zip(on, bits)])
        out[np.packbits(bits, bitorder="little").tobytes().hex()] = float(prob)
    return out


def _fake(kind: str, o) -> dict[str, float]:
    """RS+FD's fake report's law (privspec.backends.oracles.fakes)."""
    if kind == "uniform":
        return {str(j): 1 / o.d for j in range(o.d)}
    if kind == "zero":
        return _bits(o.d, [float(o.probs(Float)[1])] * o.d)
    out: dict[str, float] = {}
    for u in range(o.d):
        for k, v in _one_round(o, u).items():
            out[k] = out.get(k, 0.0) + v / o.d
    return out


def _multi_exact(spec, name: str, answer: dict) -> dict[str, float]:
    """The exact law of a multi-attribute oracle's report (its columns joined with ' & ')."""
    mech = spec.model.mechanisms[name]
    mo = multi_of(spec.model, mech)
    xs = [v.labels.index(answer[v.name]) for v in mech.attributes]
    real = [_one_round(o, x) for o, x in zip(mo.oracles, xs)]
    if mo.protocol == "spl":
        laws_by_s = [(1.0, real)]
    elif mo.protocol == "smp":
        laws_by_s = [(1 / mo.A, [real[j] if j == s else {"": 1.0} for j in range(mo.A)] + [{str(s): 1.0}])
                     for s in range(mo.A)]
    else:
        fakes = [_fake(f, o) for f, o in zip(mo.fakes, mo.oracles)]
        laws_by_s = [(1 / mo.A, [real[j] if j == s else fakes[j] for j in range(mo.A)]) for s in range(mo.A)]
    out: dict[str, float] = {}
    for weight, laws in laws_by_s:
        for combo in itertools.product(*(law.items() for law in laws)):
            key = " & ".join(k for k, _ in combo)
            out[key] = out.get(key, 0.0) + weight * float(np.prod([p for _, p in combo]))
    return out


def _long_exact(lo, x: int, collections: int) -> dict[str, float]:
    """The exact law of ``collections`` reports of one respondent of a longitudinal oracle:
    the PRR b drawn once, each report an IRR of b (reports joined with ' ; ')."""
    d = lo.d
    if lo.ROUNDS[0] == "grr":
        memos = {b: (lo.p1 if b == x else lo.q1) for b in range(d)}
        irr = {b: {str(y): (lo.p2 if y == b else (1 - lo.p2) / (d - 1)) for y in range(d)} for b in range(d)}
    else:
        memos, irr = {}, {}
        for bits in itertools.product([0, 1], repeat=d):
            memos[bits] = float(np.prod([(lo.p1 if v == x else lo.q1) if b else 1 - (lo.p1 if v == x else lo.q1)
                                         for v, b in enumerate(bits)]))
            irr[bits] = _bits(d, [lo.p2 if b else lo.q2 for b in bits])
    out: dict[str, float] = {}
    for b, pb in memos.items():
        for combo in itertools.product(*(irr[b].items() for _ in range(collections))):
            key = " ; ".join(k for k, _ in combo)
            out[key] = out.get(key, 0.0) + pb * float(np.prod([p for _, p in combo]))
    return out


def _same_law(js: dict[str, int], py: dict[str, int], exact: dict[str, float], what) -> None:
    """JS counts against the exact law (goodness of fit) and against Python's counts
    (homogeneity), each at p > P_MIN; cells expected below 5 times pooled into one."""
    assert set(js) <= {k for k, v in exact.items() if v > 0}, (what, set(js) - set(exact))
    labels = sorted(exact)
    e = np.array([exact[k] for k in labels])
    e = e / e.sum()
    n_js = sum(js.values())
    small = e * n_js < 5
    def pooled(counts, total):
        c = np.array([counts.get(k, 0) for k in labels], dtype=float)
        return np.append(c[~small], c[small].sum()) if small.any() else c
    a, expected = pooled(js, n_js), (np.append(e[~small], e[small].sum()) if small.any() else e) * n_js
    fit = stats.chisquare(a, expected)
    assert fit.pvalue > P_MIN, (what, fit)
    b = pooled(py, sum(py.values()))
    table = np.array([a, b])
    table = table[:, table.sum(axis=0) > 0]
    assert stats.chi2_contingency(table).pvalue > P_MIN, what


MULTI_CASES = {"s": {"race": "b", "gender": "M", "income": "hi"}, "m": {"race": "d", "gender": "F", "income": "lo"},
               "g": {"race": "a", "gender": "M", "income": "mid"}, "z": {"race": "c", "gender": "F", "income": "hi"},
               "r": {"race": "b", "gender": "F", "income": "lo"}}


@pytest.mark.parametrize("name", [n if n in {"m", "g"} else pytest.param(n, marks=pytest.mark.slow)
                                  for n in MULTI_CASES])
def test_multi_attribute_oracles_in_javascript_have_python_s_law(oracles, name: str, tmp_path: Path) -> None:
    """spl, smp, rsfd (grr, oue_z, sue_r fakes): the whole report {column: report}, as the
    columns privatize writes, against its exact law and against Python's privatize."""
    answer = MULTI_CASES[name]
    (js,) = _store_node(client_module(oracles.model, [name]), tmp_path, [answer], N, seed=36)
    frame = pd.DataFrame({k: [v] * N for k, v in answer.items()})
    py = privatize(oracles, frame, name, seed=36).astype(str).agg(" & ".join, axis=1).value_counts().to_dict()
    _same_law(js, py, _multi_exact(oracles, name, answer), name)


@pytest.mark.parametrize("name", ["lx", pytest.param("lo", marks=pytest.mark.slow)])
def test_a_longitudinal_collection_in_javascript_has_python_s_law(oracles, name: str, tmp_path: Path) -> None:
    """One collection of l_osue / l_oue (PRR then IRR, the bits in hex) against the exact
    law and Python's privatize."""
    mech = oracles.model.mechanisms[name]
    lo = oracle_of(oracles.model, mech)
    (js,) = _store_node(client_module(oracles.model, [name]), tmp_path, [{"race": "c"}], N, seed=36)
    py = privatize(oracles, pd.DataFrame({"race": ["c"] * N}), name, seed=36)["race"].astype(str)
    _same_law(js, py.value_counts().to_dict(), _long_exact(lo, 2, 1), name)


def test_longitudinal_collections_share_the_kept_permanent_response(oracles, tmp_path: Path) -> None:
    """l_grr, two collections of each respondent through one store: the pair of reports has
    the law of one PRR and two fresh IRRs (not two independent reports), as Python's
    privatize_collections draws it."""
    lo = oracle_of(oracles.model, oracles.model.mechanisms["lg"])
    (js,) = _store_node(client_module(oracles.model, ["lg"]), tmp_path, [{"race": "b"}], N, seed=36, collections=2)
    first, second = privatize_collections(lo, np.full(N, 1), RowRandom(36, rows=range(N)), [0, 1])
    py = pd.Series([f"{a} ; {b}" for a, b in zip(first, second)]).value_counts().to_dict()
    exact = _long_exact(lo, 1, 2)
    _same_law(js, py, exact, "lg")
    independent = {f"{a} ; {b}": float(pa * pb) for a, pa in _long_exact(lo, 1, 1).items()
                   for b, pb in _long_exact(lo, 1, 1).items()}
    labels = sorted(exact)
    observed = np.array([js.get(k, 0) for k in labels])
    assert stats.chisquare(observed, np.array([independent[k] for k in labels]) * N).pvalue < 1e-6


def test_the_permanent_response_is_kept_in_the_store_and_a_store_is_required(oracles, tmp_path: Path) -> None:
    """The PRRs of every value are drawn at first use and written once under the
    mechanism's key (one entry, whatever the answer: the store does not show it), read
    back by a later survey (a new module load, the same store); without localStorage or a
    store, privatize throws rather than draw a fresh PRR (which would spend eps_perm at
    every collection)."""
    path = tmp_path / "r.mjs"
    path.write_text(client_module(oracles.model, ["lg"]), encoding="utf-8")
    script = ("const kept = new Map(); const store = {getItem: (k) => kept.has(k) ? kept.get(k) : null,"
              " setItem: (k, v) => kept.set(k, v)};"
              "const a = await import(process.argv[1]); a.privatize({race: 'b'}, {store});"
              "const first = JSON.stringify([...kept]);"
              "const b = await import(process.argv[1] + '?again');"
              "for (let i = 0; i < 50; i++) b.privatize({race: 'b'}, {store});"
              "b.privatize({race: 'c'}, {store});"
              "let refused = ''; try { b.privatize({race: 'b'}); } catch (e) { refused = e.message; }"
              "console.log(JSON.stringify([JSON.parse(first), [...kept], refused]));")
    done = subprocess.run([NODE, "--input-type=module", "-e", script, path.as_uri()], capture_output=True, text=True,
                          timeout=60, check=True)
    first, after, refused = json.loads(done.stdout)
    assert len(first) == 1 and first[0][0] == "privspec:lg:l_grr:4:2.0"
    assert len(json.loads(first[0][1])) == 4 and set(json.loads(first[0][1])) <= {"0", "1", "2", "3"}
    assert after == first
    assert "keeps its permanent randomized response on the device" in refused


def test_longitudinal_and_multi_reports_are_read_by_run(oracles, tmp_path: Path) -> None:
    """The JS reports of a longitudinal and of each multi-attribute protocol, in the
    columns privatize writes, are read and answered by ``run``."""
    queries = ("query q_lx = estimate distribution(race) from lx by mom\n"
               "query q_s = estimate distribution(gender) from s by mom\n"
               "query q_m = estimate distribution(race) from m by mom\n"
               "query q_g = estimate distribution(income) from g by mom\n")
    spec = privspec.load(ORACLES + queries)
    assert spec.ok, spec.diagnostics
    path = tmp_path / "r.mjs"
    path.write_text(client_module(spec.model, ["lx", "s", "m", "g"]), encoding="utf-8")
    answers = [{"race": "abcd"[i % 4], "gender": "FM"[i % 2], "income": ["lo", "mid", "hi"][i % 3]}
               for i in range(600)]
    script = ("const m = await import(process.argv[1]); const r = m.seededRandom(7);"
              "console.log(JSON.stringify(JSON.parse(process.argv[2]).map(a => { const kept = new Map();"
              " return m.privatize(a, {random: r, store: {getItem: (k) => kept.get(k) ?? null,"
              " setItem: (k, v) => kept.set(k, v)}}); })));")
    done = subprocess.run([NODE, "--input-type=module", "-e", script, path.as_uri(), json.dumps(answers)],
                          capture_output=True, text=True, timeout=60, check=True)
    rows = json.loads(done.stdout)
    for n in ["lx", "s", "m", "g"]:
        frame = pd.DataFrame([row[n] if isinstance(row[n], dict) else {"race": row[n]} for row in rows])
        csv = tmp_path / f"{n}.csv"
        frame.to_csv(csv, index=False)
        res = spec.run(data={n: str(csv)}, queries=[f"q_{n}"])
        assert res.ok, (n, res.failures)


def test_selective_reports_are_read_by_run(tmp_path: Path) -> None:
    spec = privspec.load(SELECTIVE + "query F = estimate cdf(y) from sd by npmle\n")
    assert spec.ok, spec.diagnostics
    path = tmp_path / "r.mjs"
    path.write_text(client_module(spec.model, ["sd"]), encoding="utf-8")
    script = ("const m = await import(process.argv[1]); const r = m.seededRandom(8);"
              "console.log(JSON.stringify(Array.from({length: 500}, (_, i) => m.privatize({y: (i * 37) % 150},"
              " {random: r}).sd)));")
    done = subprocess.run([NODE, "--input-type=module", "-e", script, path.as_uri()], capture_output=True, text=True,
                          timeout=60, check=True)
    reports = json.loads(done.stdout)
    assert "null" in reports and any(r.startswith("(") for r in reports)
    csv = tmp_path / "sd.csv"
    pd.DataFrame({"y": reports}).to_csv(csv, index=False)
    res = spec.run(data={"sd": str(csv)}, queries=["F"])
    assert res.ok, res.failures


# ---- docs/client.md: the platforms' snippets, run under node against a generated module ------------
DOCS = Path(__file__).resolve().parent.parent / "docs" / "client.md"
#: a page of the platform, as much of it as the snippets touch: the four radio inputs, the
#: hidden question's input (LimeSurvey) or the embedded data (Qualtrics); each respondent's
#: snippet run afresh, submitted once before the module loaded and once after
PLATFORM = """
const [url, platform, snippet, answers] = JSON.parse(process.argv[1]);
let loading = null;
globalThis.__import = (u) => (loading = import(u.includes("randomizer.js") ? url : "missing:" + u));
const code = snippet.replaceAll("import(", "__import(").replaceAll("{SID}", "123456").replaceAll("{SGQ}", "123456X1X2");
const out = [];
for (const color of answers) {
  const inputs = ["black", "red", "green", "blue"].map((v) => ({value: v, checked: v === color, disabled: false}));
  const hidden = {value: ""}, embedded = {}, listeners = {}, question = {next: true};
  globalThis.document = {
    getElementById: (id) => id === "limesurvey" ? {addEventListener: (t, f) => { listeners[t] = f; }}
      : id === "answer123456X1X2" ? hidden : null,
    querySelector: (s) => s === "input[name=true_color]:checked" ? inputs.find((i) => i.checked) || null : null,
    querySelectorAll: (s) => s === "input[name=true_color]" ? inputs : [],
  };
  let onload = null, submit = null;
  globalThis.Qualtrics = {SurveyEngine: {addOnload: (f) => { onload = f; }, addOnPageSubmit: (f) => { submit = f; },
    setEmbeddedData: (k, v) => { embedded[k] = v; }}};
  question.disableNextButton = () => { question.next = false; };
  question.enableNextButton = () => { question.next = true; };
  new Function(code)();
  let early;
  if (platform === "limesurvey") {
    let prevented = false;
    listeners.submit({preventDefault: () => { prevented = true; }});
    early = prevented && hidden.value === "";
    await loading; await new Promise((r) => setTimeout(r, 0));
    listeners.submit({preventDefault: () => { throw new Error("prevented after loading"); }});
  } else {
    onload.call(question);
    early = question.next === false;
    await loading; await new Promise((r) => setTimeout(r, 0));
    if (!question.next) throw new Error("the next button stayed disabled");
    submit.call(question, "next");
  }
  out.push({early, report: platform === "limesurvey" ? hidden.value : embedded.color,
            disabled: inputs.every((i) => i.disabled)});
}
console.log(JSON.stringify(out));
"""


def _snippet(platform: str) -> str:
    """The ```js block of docs/client.md whose first line names the platform."""
    blocks = re.findall(r"```js\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    (block,) = [b for b in blocks if b.startswith(f"// {platform}:")]
    return block


@pytest.mark.parametrize("platform", ["LimeSurvey", "Qualtrics"])
def test_the_platform_snippets_of_the_docs_store_only_reports_that_run_reads(platform: str, tmp_path: Path) -> None:
    """docs/client.md's snippet on a stand-in of the platform's page: submitting before the
    module loaded is held back, after it the hidden field / embedded data holds urn's
    report (a pair of colors holding the answer), the true inputs are disabled (never
    sent), and the platform's export of 400 respondents is read by ``run``."""
    spec = privspec.load(Path(__file__).resolve().parent.parent / "specs" / "urn.privspec")
    path = tmp_path / "urn-randomizer.js"
    path.write_text(client_module(spec.model, ["urn"]), encoding="utf-8")
    colors = [["black", "red", "green", "blue"][i % 4] for i in range(400)]
    args = json.dumps([path.as_uri(), platform.lower(), _snippet(platform), colors])
    done = subprocess.run([NODE, "--input-type=module", "-e", PLATFORM, args], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert all(r["early"] and r["disabled"] for r in rows)
    for color, r in zip(colors, rows):
        parts = r["report"].split("|")
        assert color in parts and len(parts) == 2 and parts == [c for c in spec.model.variables["color"].labels
                                                                 if c in parts]
    export = tmp_path / "export.csv"
    pd.DataFrame({"id": range(1, 401), "submitdate": "2026-11-28 09:00:00",
                  "color": [r["report"] for r in rows]}).to_csv(export, index=False)
    res = spec.run(data={"urn": str(export)}, queries=["w"])
    assert res.ok, res.failures
