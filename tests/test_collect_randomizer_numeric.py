"""The JavaScript randomizer of the numeric local-DP mechanisms (``laplace``, ``duchi``,
``piecewise``, ``hm``, ``square_wave``): the law of Python's privatize, under node.

* Draw for draw: the module run on a recorded stream of uniforms gives, for each value,
  the report Python's sampler gives on the same uniforms (the same text; Laplace's within
  one ulp of ``log1p``), so the two laws are one by construction.
* Against the exact law: >= 1e5 seeded reports per value at the two ends of the range and
  inside it, one-sample Kolmogorov-Smirnov against the report's exact CDF on the
  mechanism's domain (Duchi's two atoms: chi-square; the hybrid: chi-square of Duchi's
  atoms against the rest, KS of the rest against piecewise's CDF), and two-sample KS
  against Python's privatize; each at p > 1e-4 (fixed seeds: a pass is reproducible; a
  one-in-ten-thousand false alarm per comparison were they drawn afresh).
* An empirical audit of epsilon on the JavaScript reports, as tests/test_numeric_ldp.py
  audits Python's samplers: 4e5 reports at each end of the domain binned on 60 bins of
  the report range (Laplace's: [-1 - 6/eps, 1 + 6/eps]); on the bins with >= 2,000 of
  each, |log ratio| <= epsilon + 4 sqrt(1/c1 + 1/c2), and its largest value within 0.05
  of epsilon.
* ``run`` reads the module's reports unchanged: the mean of 4,000 answers estimated
  within 3 of its standard errors (0.3% false alarm per mechanism were the seed drawn
  afresh), square wave's EMS distribution too.
* The text: ``formatRepr`` is Python's ``repr`` of the double, for 20,000 doubles of every
  magnitude.
"""
from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import privspec
from privspec.errors import DataError
from privspec.api import privatize
from privspec.backends.collect.randomizer import client_module
from privspec.backends.collect.store_checks import cells, check_reports, report_columns
from privspec.backends.numeric.backend import ldp_of
from privspec.backends.numeric.mechanisms import Duchi, Piecewise

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

SPEC = """\
variable salary: continuous [20, 150]
population salary ~ uniform(20, 150)
mechanism lap = laplace(salary, epsilon = 1)
mechanism duc = duchi(salary, epsilon = 1)
mechanism pm = piecewise(salary, epsilon = 1)
mechanism hm = hm(salary, epsilon = 1)
mechanism hm_low = hm(salary, epsilon = 1/2)
mechanism sw = square_wave(salary, epsilon = 1)
"""
NAMES = ["lap", "duc", "pm", "hm", "hm_low", "sw"]
N = 100_000
P_MIN = 1e-4


@pytest.fixture(scope="module")
def spec():
    s = privspec.load(SPEC)
    assert s.ok, s.diagnostics
    return s


def _node(spec, tmp: Path, names: list[str], script: str, *args) -> object:
    """Run ``script`` (``m``: the module of ``names``; ``args``: process.argv[2:], as JSON) under node."""
    path = tmp / "randomizer.mjs"
    path.write_text(client_module(spec.model, names), encoding="utf-8")
    done = subprocess.run([NODE, "--input-type=module", "-e", "const m = await import(process.argv[1]);\n" + script,
                           path.as_uri(), *(json.dumps(a) for a in args)], capture_output=True, text=True,
                          timeout=300, check=True)
    return json.loads(done.stdout)


REPORTS = """
const [values, n, seed] = JSON.parse(process.argv[2]), random = m.seededRandom(seed);
console.log(JSON.stringify(values.map((y) => Array.from({length: n}, () => Object.values(m.privatize({salary: y}, {random}))[0]))));
"""


# ---- draw for draw ---------------------------------------------------------------------------------
RECORDED = """
const [values, seed] = JSON.parse(process.argv[2]), source = m.seededRandom(seed);
const out = values.map((y) => {
  const used = [];
  const random = () => { const u = source(); used.push(u); return u; };
  return [Object.values(m.privatize({salary: y}, {random}))[0], used];
});
console.log(JSON.stringify(out));
"""


class Replay:
    """A generator for ``sample`` on one value: ``random(1)`` gives the recorded uniforms in turn."""

    def __init__(self, uniforms: list[float]):
        self.uniforms = list(uniforms)

    def random(self, size: int) -> np.ndarray:
        assert size == 1
        return np.array([self.uniforms.pop(0)])


@pytest.mark.parametrize("name", NAMES)
def test_the_javascript_report_is_python_s_on_the_same_uniforms(spec, name: str, tmp_path: Path) -> None:
    mech = spec.model.mechanisms[name]
    m = ldp_of(spec.model, mech)
    values = [20.0, 150.0, 37.25, 85.0, 149.999, *np.round(np.linspace(20, 150, 995), 3)]
    drawn = _node(spec, tmp_path, [name], RECORDED, [values, 5])
    for y, (text, used) in zip(values, drawn):
        replay = Replay(used)
        t = m.to_domain(np.array([y]), 20.0, 150.0)
        report = m.sample(t, replay)[0]
        assert replay.uniforms == [], (name, y)  # the same number of uniforms, used in the same order
        if mech.protocol == "laplace":  # Math.log1p and numpy's may differ in the last bit of the noise
            assert abs(float(text) - report) <= 4e-16 * (abs(t[0]) + abs(report - t[0])), (name, y)
        else:
            assert text == repr(float(report)), (name, y)


def test_the_module_refuses_a_value_outside_the_declared_range_as_privatize_does(spec, tmp_path: Path) -> None:
    """Never a report of a value outside [a, b] (its epsilon would not hold): an Error
    naming the variable, as privatize's D106."""
    script = """for (const y of [19.99, 150.01, "abc", NaN]) {
  try { m.privatize({salary: y}); console.log("drawn"); } catch (e) { console.log(JSON.stringify(e.message)); }
}"""
    path = tmp_path / "randomizer.mjs"
    path.write_text(client_module(spec.model, ["duc"]), encoding="utf-8")
    done = subprocess.run([NODE, "--input-type=module", "-e", "const m = await import(process.argv[1]);\n" + script,
                           path.as_uri()], capture_output=True, text=True, timeout=60, check=True)
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    assert messages[0] == "19.99 is not a value of salary in [20, 150]"
    assert all("is not a value of salary in [20, 150]" in t for t in messages)
    with pytest.raises(DataError, match="D106"):
        privatize(spec, pd.DataFrame({"salary": [150.01]}), "duc", seed=1)


# ---- the exact law ---------------------------------------------------------------------------------
def _uniform_cdf(x: np.ndarray, a: float, b: float) -> np.ndarray:
    return np.clip((x - a) / (b - a), 0.0, 1.0)


def _piecewise_cdf(m: Piecewise, t: float, x: np.ndarray) -> np.ndarray:
    """Uniform on [l(t), r(t)] with probability e^(eps/2)/(e^(eps/2) + 1), else uniform on
    the rest of [-C, C] (Wang et al. 2019, Algorithm 2)."""
    C, h = m.bound, math.exp(m.epsilon / 2)
    left = (C + 1) / 2 * t - (C - 1) / 2
    right = left + C - 1
    outer = np.clip(x, -C, left) + C + np.clip(x, right, C) - right  # the outer length below x
    return h / (h + 1) * _uniform_cdf(x, left, right) + 1 / (h + 1) * outer / (C + 1)


def _exact_cdf(m, t: float):
    """The CDF of a report given t on the domain (a continuous law's)."""
    if m.name == "laplace":
        return stats.laplace(loc=t, scale=m.scale).cdf
    if m.name == "piecewise":
        return lambda x: _piecewise_cdf(m, t, x)
    assert m.name == "square_wave"
    b, near = m.b, 2 * m.b * m.p
    return lambda x: near * _uniform_cdf(x, t - b, t + b) + (1 - near) * (
        np.clip(x, -b, t - b) + b + np.clip(x, t + b, 1 + b) - t - b)


def _atoms(reports: np.ndarray, d: Duchi, t: float, weight: float) -> tuple[np.ndarray, np.ndarray]:
    """Observed and expected counts of Duchi's +C, -C and anything else (weight: Duchi's share)."""
    plus = 0.5 + t / (2 * d.bound)
    observed = np.array([(reports == d.bound).sum(), (reports == -d.bound).sum()])
    observed = np.append(observed, len(reports) - observed.sum())
    return observed, np.array([weight * plus, weight * (1 - plus), 1 - weight]) * len(reports)


#: the mechanisms whose law and audit run by default (hm: Duchi's atoms and piecewise's
#: density); the others (10-15 s each) with the slow tests
FAST = {"hm", "sw"}


def _cases(names):
    return [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in names]


@pytest.mark.parametrize("name", _cases(NAMES))
def test_the_javascript_reports_have_the_exact_law_and_python_s(spec, name: str, tmp_path: Path) -> None:
    mech = spec.model.mechanisms[name]
    m = ldp_of(spec.model, mech)
    values = [20.0, 150.0, 59.0]
    drawn = _node(spec, tmp_path, [name], REPORTS, [values, N, 36])
    for y, texts in zip(values, drawn):
        js = np.array([float(t) for t in texts])
        t = float(m.to_domain(y, 20.0, 150.0))
        lo, hi = m.report_range()
        assert js.min() >= lo and js.max() <= hi, (name, y)
        if m.name in ("duchi", "hm"):
            weight = 1 - (m.alpha if m.name == "hm" else 0.0)
            observed, expected = _atoms(js, Duchi(m.epsilon), t, weight)
            keep = expected > 0
            assert observed[~keep].sum() == 0
            assert stats.chisquare(observed[keep], expected[keep]).pvalue > P_MIN, (name, y, observed, expected)
            rest = js[np.abs(js) != Duchi(m.epsilon).bound]
            if len(rest):
                assert stats.kstest(rest, lambda x: _piecewise_cdf(Piecewise(m.epsilon), t, x)).pvalue > P_MIN
        else:
            assert stats.kstest(js, _exact_cdf(m, t)).pvalue > P_MIN, (name, y)
        py = privatize(spec, pd.DataFrame({"salary": [y] * N}), name, seed=36)["salary"].astype(float).to_numpy()
        if m.name == "duchi" or (m.name == "hm" and m.alpha == 0):
            table = np.array([[(r == Duchi(m.epsilon).bound).sum(), (r != Duchi(m.epsilon).bound).sum()]
                              for r in (js, py)])
            assert stats.chi2_contingency(table).pvalue > P_MIN, (name, y, table)
        else:
            assert stats.ks_2samp(js, py).pvalue > P_MIN, (name, y)


# ---- an empirical audit of epsilon ---------------------------------------------------------------------
HISTOGRAM = """
const [values, n, seed, a, b, bins] = JSON.parse(process.argv[2]), random = m.seededRandom(seed);
console.log(JSON.stringify(values.map((y) => {
  const counts = new Array(bins).fill(0);
  for (let r = 0; r < n; r++) {
    const x = Number(Object.values(m.privatize({salary: y}, {random}))[0]);
    if (x >= a && x <= b) counts[Math.min(Math.floor((x - a) / (b - a) * bins), bins - 1)] += 1;
  }
  return counts;
})));
"""


@pytest.mark.parametrize("name", _cases(NAMES))
def test_empirical_epsilon_audit_of_the_javascript_reports(spec, name: str, tmp_path: Path) -> None:
    m = ldp_of(spec.model, spec.model.mechanisms[name])
    eps = m.epsilon
    a, b = m.report_range()
    if not math.isfinite(a):
        a, b = -1 - 6 / eps, 1 + 6 / eps
    c1, c2 = (np.array(c, dtype=float) for c in _node(spec, tmp_path, [name], HISTOGRAM, [[20, 150], 400_000, 11, a,
                                                                                          b, 60]))
    keep = (c1 >= 2000) & (c2 >= 2000)
    assert keep.sum() >= 2
    ratio = np.abs(np.log(c1[keep] / c2[keep]))
    slack = 4 * np.sqrt(1 / c1[keep] + 1 / c2[keep])
    assert np.all(ratio <= eps + slack), (name, float(np.max(ratio - slack)))
    assert ratio.max() >= eps - 0.05, (name, float(ratio.max()))


# ---- run reads the reports --------------------------------------------------------------------------------
ANSWERED = """
const [values, seed] = JSON.parse(process.argv[2]), random = m.seededRandom(seed);
console.log(JSON.stringify(values.map((y) => m.privatize({salary: y}, {random}))));
"""
QUERIES = "".join(f"query mean_{n} = estimate mean(salary) from {n} by unbiased\n" for n in NAMES) \
    + "query cdf_sw = estimate cdf(salary) from sw by ems\n"


def test_run_reads_the_javascript_reports_and_estimates_the_mean_within_its_se(tmp_path: Path) -> None:
    spec = privspec.load(SPEC + QUERIES)
    assert spec.ok, spec.diagnostics
    values = np.round(np.random.default_rng(3).beta(2, 5, 4000) * 130 + 20, 2)
    rows = _node(spec, tmp_path, NAMES, ANSWERED, [values.tolist(), 9])
    truth = float(values.mean())
    for n in NAMES:
        csv = tmp_path / f"{n}.csv"
        pd.DataFrame({"salary": [row[n] for row in rows]}).to_csv(csv, index=False)
        res = spec.run(data={n: str(csv)}, queries=[f"mean_{n}"] + (["cdf_sw"] if n == "sw" else []))
        assert res.ok, (n, res.failures)
        est = res[f"mean_{n}"]
        assert est.n == len(values) and abs(est.value - truth) <= 3 * est.se, (n, est.value, truth, est.se)
        if n == "sw":   # EMS's distribution: a mean near the truth (its buckets' midpoints)
            assert abs(res["cdf_sw"].histogram_mean - truth) <= 5, res["cdf_sw"].histogram_mean


# ---- the text of a report --------------------------------------------------------------------------------
REPRS = """
const random = m.seededRandom(17), xs = [0, 1, -1, 1e16, 9999999999999998, 1e-4, 9.999e-5, 1e-5, 5e-324,
  1.7976931348623157e308, 0.1, 123456789012345.6, 2 ** 53, 2 ** 53 + 2, 1e21, 1e22, 1.5e-7];
for (let i = 0; i < 20000; i++) xs.push((random() - 0.5) * 10 ** Math.floor(random() * 60 - 30));
console.log(JSON.stringify(xs.map((x) => [m.formatRepr(x), x.toPrecision(17)])));
"""


def test_reports_are_written_as_python_s_repr(spec, tmp_path: Path) -> None:
    for text, exact in _node(spec, tmp_path, ["duc"], REPRS):
        assert text == repr(float(exact)), (text, exact)


@pytest.mark.parametrize("bad, code", [("9", "D106"), ("abc", "D105"), ("inf", "D105")])
def test_a_submitted_report_is_checked_as_run_checks_a_file(bad: str, code: str, tmp_path: Path) -> None:
    """What the survey's server stores is checked by run's reader: a report Duchi cannot
    produce gets run's code and message (then the submission is refused, 422)."""
    spec = privspec.load(SPEC + QUERIES)
    mech = spec.model.mechanisms["duc"]
    with pytest.raises(DataError) as e:
        check_reports(spec.model, mech, pd.DataFrame([cells("duc", bad, report_columns(spec.model, mech))]))
    path = tmp_path / "duc.csv"
    pd.DataFrame({"salary": [bad]}).to_csv(path, index=False)
    first = spec.run(data={"duc": str(path)}, queries=["mean_duc"]).failures["mean_duc"].diagnostics[0]
    assert e.value.code == first.code == code
    assert e.value.diagnostics[0].message == first.message
    check_reports(spec.model, mech, pd.DataFrame([cells("duc", repr(Duchi(1.0).bound), ["salary"])]))
