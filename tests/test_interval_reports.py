"""Report models (issue 15): one object per interval-family mechanism, built in one place.

Each mechanism kind of specs/interval_privacy.privspec and specs/bcdeter.privspec gets
its report model with the right capabilities; frames read through the report model give
the same reports, and the same diagnostics (code, rows, columns, message), as through the
back end's queries.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.backends.data.bindings import DataBindings
from privspec.backends.interval.backend import CensoredBackend, IntervalBackend
from privspec.backends.interval.laws import population_law
from privspec.backends.interval.reports import coverage_from_data, mechanism_coverage, sample_reports
from privspec.backends.interval.reports import (CensoredReports, IntervalReports, ProgressiveReports, ReportModel,
                                                SelectiveReports, is_interval_family, report_model)
from privspec.errors import BackendError, DataError

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "interval_privacy.privspec"
BCDETER = ROOT / "specs" / "bcdeter.privspec"


@pytest.fixture(scope="module")
def model():
    return privspec.load(SPEC).model


@pytest.fixture(scope="module")
def censored_model():
    return privspec.load(BCDETER).model


# ---- capabilities ------------------------------------------------------------------------------------
#: name: (class, has_anchors, allows_null, base, rings, one_sided, disclose, anchor range)
EXPECTED = {
    "c1": (IntervalReports, True, False, "c1", False, True, None, (0.0, 150.0)),
    "s1": (IntervalReports, True, False, "s1", False, True, None, (-9.0, 9.0)),
    "c2": (IntervalReports, True, False, "c2", False, False, None, (-np.inf, np.inf)),
    "life2": (IntervalReports, True, False, "life2", False, False, None, (-np.inf, np.inf)),
    "cm": (IntervalReports, True, False, "cm", False, False, None, (0.0, 150.0)),
    "ring": (IntervalReports, True, False, "ring", True, False, None, (0.0, 150.0)),
    "open": (IntervalReports, True, False, "open", False, False, (0.0, 20.0), (0.0, 150.0)),
    "sel": (SelectiveReports, True, True, "c1", False, True, None, (0.0, 150.0)),
    "prog": (ProgressiveReports, True, True, None, False, False, None, (0.0, 150.0)),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_privacy_mechanism_gets_its_report_model(model, name):
    kind, anchors, null, base, rings, one_sided, disclose, anchor_range = EXPECTED[name]
    mech = model.mechanisms[name]
    rm = report_model(mech)
    assert type(rm) is kind and rm.mechanism is mech
    assert rm.has_anchors is anchors and rm.allows_null is null and rm.written_ends is False
    assert (rm.base.name if rm.base is not None else None) == base
    assert rm.rings is rings and rm.one_sided is one_sided
    assert (None if rm.disclose is None else tuple(float(x) for x in rm.disclose)) == disclose
    assert rm.anchor_range() == anchor_range
    assert rm.columns(mech.variable.name) == [mech.variable.name]
    assert rm.extras() == {}
    # B140's case: only the selective mechanism has no honest conditional standard error
    assert (rm.conditional_se_refusal() is not None) is (name == "sel")
    assert report_model(mech) is rm      # built once per mechanism


def test_censored_data_get_a_report_model_without_anchors(censored_model):
    mech = censored_model.mechanisms["visits"]
    rm = report_model(mech)
    assert type(rm) is CensoredReports and not rm.has_anchors and not rm.allows_null
    assert rm.written_ends and rm.base is None and rm.disclose is None and not rm.rings
    assert rm.columns("months") == ["lower", "upper"]
    assert "interval-censored observations (columns lower (lower end) and upper (upper end))" in rm.extras()["data"]
    assert rm.conditional_se_refusal() is None
    with pytest.raises(BackendError) as e:   # privspec draws no censored data
        rm.draw(censored_model, np.array([1.0]), np.random.default_rng(0))
    assert e.value.diagnostics[0].code == "B103"


def test_only_interval_family_mechanisms_have_one(model, censored_model):
    assert all(is_interval_family(m) for m in model.mechanisms.values())
    assert is_interval_family(censored_model.mechanisms["visits"])
    assert not is_interval_family(None) and not is_interval_family("c1")
    with pytest.raises(TypeError):
        report_model(object())
    rr = privspec.load("variable c: categorical {a, b, d, e}\nmechanism u = subset(c, uniform)").model.mechanisms["u"]
    assert not is_interval_family(rr)


def test_back_ends_route_on_the_stated_capability(model, censored_model):
    backend, censored = IntervalBackend(), CensoredBackend()
    for m in model.mechanisms.values():
        assert backend.privatizes(m) and not censored.privatizes(m)
    visits = censored_model.mechanisms["visits"]
    assert censored.privatizes(visits) and not backend.privatizes(visits)


# ---- coverage and drawing go through the report model ------------------------------------------------
@pytest.mark.parametrize("name", ["c1", "c2", "ring", "open", "sel", "prog"])
def test_coverage_and_draws_agree_with_the_module_functions(model, name):
    mech = model.mechanisms[name]
    rm = report_model(mech)
    pop = population_law(model, mech.variable)
    if name != "sel":   # the selective coverage is quasi-Monte Carlo: slow and checked elsewhere
        a, b = rm.coverage(pop), mechanism_coverage(mech, pop)
        assert (a.value, a.method) == (b.value, b.method)
    assert rm.coverage(None).method == "symbolic"
    y = np.linspace(1.0, 149.0, 50) if mech.variable.name == "salary" else np.linspace(-3.0, 3.0, 50)
    l1, r1 = rm.draw(model, y, np.random.default_rng(5))
    l2, r2 = sample_reports(model, mech, y, np.random.default_rng(5))
    np.testing.assert_array_equal(l1, l2)
    np.testing.assert_array_equal(r1, r2)
    keep = ~np.isnan(l1)
    rm.check(l1[keep], r1[keep], mech.variable.name)   # what it draws, it accepts
    counts = np.ones(len(l1))
    cdf = lambda x: np.clip(np.asarray(x, dtype=float) / 150.0, 0.0, 1.0)
    assert rm.coverage_from_data(l1, r1, counts, cdf) == coverage_from_data(l1, r1, counts, mech, cdf)


def test_case1_coverage_from_data_uses_the_anchors_only_without_nulls(model):
    cdf = lambda x: np.clip(np.asarray(x, dtype=float) / 150.0, 0.0, 1.0)
    l, r, c = np.array([-np.inf, 30.0]), np.array([30.0, np.inf]), np.array([1.0, 1.0])
    assert report_model(model.mechanisms["c1"]).coverage_from_data(l, r, c, cdf)[1].startswith("Theorem 1")
    assert report_model(model.mechanisms["sel"]).coverage_from_data(l, r, c, cdf)[1].startswith("mean individual")


# ---- reading frames: the report model and the back end agree -------------------------------------------
def _query_error(spec_text: str, query: str, path: Path, backend) -> DataError | None:
    """What the back end says when its query reads the file (None: no error)."""
    spec = privspec.load(spec_text + f"\nquery probe = {query}\n")
    m = spec.model
    q = m.queries["probe"]
    try:
        backend.answer(m, q, "run", data=DataBindings(default=str(path)))
    except DataError as e:
        return e
    return None


def _same(a: DataError, b: DataError) -> None:
    da, db = a.diagnostics[0], b.diagnostics[0]
    assert (da.code, da.message, da.rows, da.columns, da.hint) == (db.code, db.message, db.rows, db.columns, db.hint)


#: mechanism, query, cells of its column (row 3 bad), expected code and words
PRIVACY_FRAMES = [
    ("c1", "estimate cdf(salary) from c1 by npmle", "[1, 2]", "D101", "not interval reports"),
    ("c1", "estimate cdf(salary) from c1 by npmle", "12.5", "D102", "no acceptable range"),
    ("c1", "estimate cdf(salary) from c1 by npmle", "(-inf, 10] | (90, inf]", "D102", "not a ring design"),
    ("c1", "estimate cdf(salary) from c1 by npmle", "(160, inf]", "D102", "outside [0, 150]"),
    ("c1", "estimate cdf(salary) from c1 by npmle", "(10, 20]", "D102", "Case-I reports"),
    ("c1", "estimate cdf(salary) from c1 by npmle", "null", "D004", "missing"),
    ("open", "estimate cdf(salary) from open by npmle", "30", "D102", "outside the acceptable range"),
    ("cm", "estimate cdf(salary) from cm by npmle", "(-inf, inf]", "D102", "the whole range"),
    ("ring", "estimate cdf(salary) from ring by npmle", "(10, 200]", "D102", "where this mechanism's anchors"),
    ("sel", "estimate cdf(salary) from sel by npmle", "(10, 20]", "D102", "Case-I reports"),
    ("prog", "estimate cdf(salary) from prog by npmle", "(-10, -5]", "D102", "outside [0, 150]"),
]


@pytest.mark.parametrize("bad_at", [0, 4, 9, None])
def test_block_wise_check_finds_a_bad_report_in_any_block(monkeypatch, model, bad_at):
    """Millions of reports are checked a block at a time: a bad report in the first, a
    middle or the last (short) block is found and named as the check of all at once names
    it; good reports pass."""
    from privspec.backends.interval import reports as interval_reports
    rm = report_model(model.mechanisms["c2"])
    left = np.array([-np.inf, 10.0, 20.0, 5.0, -np.inf, 30.0, 40.0, 1.0, 2.0, -np.inf])
    right = np.array([40.0, 75.0, np.inf, 60.0, 50.0, 90.0, np.inf, 3.0, 100.0, 80.0])
    if bad_at is not None:
        left[bad_at], right[bad_at] = -np.inf, np.inf      # the whole line: never a report
    monkeypatch.setattr(interval_reports, "_CHECK_BLOCK", 4)
    if bad_at is None:
        rm.check(left, right, "salary")
        return
    with pytest.raises(DataError) as blocks:
        rm.check(left, right, "salary")
    monkeypatch.setattr(interval_reports, "_CHECK_BLOCK", 1 << 20)
    with pytest.raises(DataError) as whole:
        rm.check(left, right, "salary")
    assert blocks.value.diagnostics[0].rows == whole.value.diagnostics[0].rows == (bad_at + 1,)
    assert "the whole range" in blocks.value.diagnostics[0].message


@pytest.mark.parametrize("name, query, cell, code, words", PRIVACY_FRAMES)
def test_invalid_reports_same_diagnostic_as_the_back_end(tmp_path, model, name, query, cell, code, words):
    good = {"c1": ["(-inf, 40]", "(75, inf]"], "open": ["(-inf, 40]", "5"], "cm": ["(10, 40]", "(75, inf]"],
            "ring": ["(20, 100]", "(-inf, 10] | (120, inf]"],
            "sel": ["(-inf, 40]", "null"], "prog": ["(-inf, 75]", "null"]}[name]
    cells = [good[0], good[1], cell, good[0]]
    frame = pd.DataFrame({"salary": cells})
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(DataError) as direct:
        report_model(model.mechanisms[name]).read(pd.read_csv(path, dtype=str, keep_default_na=False), "salary")
    d = direct.value.diagnostics[0]
    assert d.code == code and words in d.message and d.rows == (3,)
    through = _query_error(SPEC.read_text(), query, path, IntervalBackend())
    assert through is not None
    _same(direct.value, through)


@pytest.mark.parametrize("name, cells", [
    ("c1", ["(-inf, 40]", "(75, inf]", "(-inf, 10]"]),
    ("ring", ["(20, 100]", "(-inf, 10] | (120, inf]", "(10, 20]"]),
    ("open", ["(-inf, 40]", "5", "(30, inf]"]),
    ("sel", ["(-inf, 40]", "null", "(75, inf]"]),
    ("prog", ["(-inf, 75]", "null", "(37.5, 75]"]),
])
def test_valid_reports_read_the_same_as_the_back_end(tmp_path, model, name, cells):
    path = tmp_path / "d.csv"
    pd.DataFrame({"salary": cells}).to_csv(path, index=False)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    left, right = report_model(model.mechanisms[name]).read(frame, "salary")
    assert np.isnan(left).sum() == cells.count("null")
    report_model(model.mechanisms[name]).check(left[~np.isnan(left)], right[~np.isnan(left)], "salary")
    spec = privspec.load(SPEC.read_text() + f"\nquery probe = estimate mean(salary) from {name} by npmle\n")
    result = IntervalBackend().answer(spec.model, spec.model.queries["probe"], "run",
                                      data=DataBindings(default=str(path)))
    assert result.extras["n"] == len(cells) - cells.count("null")
    assert result.extras.get("n_null", 0) == cells.count("null")


CENSORED_SPECS = {
    "two": "variable t: continuous [0, inf]\nmechanism obs = censored(t, lower = L, upper = R)\n",
    "one": "variable t: continuous [0, 10]\nmechanism obs = censored(t)\n",
    "closed": "variable t: continuous [0, 10]\nmechanism obs = censored(t, ends = closed)\n",
}


@pytest.mark.parametrize("layout, columns, code", [
    ("two", {"L": ["1", "x", "2"], "R": ["2", "3", "4"]}, "D101"),
    ("two", {"L": ["1", "5", "2"], "R": ["2", "3", "4"]}, "D109"),
    ("two", {"L": ["1", "-3", "2"], "R": ["2", "4", "4"]}, "D110"),
    ("one", {"t": ["(1, 2]", "(5, 12]", "[2, 3]"]}, "D110"),
    ("one", {"t": ["(1, 2]", "(3, 2]", "[2, 3]"]}, "D109"),
    ("one", {"t": ["(1, 2]", "(-inf, 1] | (3, inf]", "2"]}, "D101"),
    ("closed", {"t": ["[1, 2]", "(1, 2]", "5"]}, "D111"),
])
def test_invalid_censored_frames_same_diagnostic_as_the_back_end(tmp_path, layout, columns, code):
    text = CENSORED_SPECS[layout]
    path = tmp_path / "d.csv"
    pd.DataFrame(columns).to_csv(path, index=False)
    mech = privspec.load(text).model.mechanisms["obs"]
    rm = report_model(mech)
    assert rm.columns("t") == list(columns)
    with pytest.raises(DataError) as direct:
        rm.read(pd.read_csv(path, dtype=str, keep_default_na=False), "t")
    assert direct.value.diagnostics[0].code == code and direct.value.diagnostics[0].rows == (2,)
    through = _query_error(text, "estimate cdf(t) from obs by npmle", path, CensoredBackend())
    assert through is not None
    _same(direct.value, through)


def test_valid_censored_frame_reads_as_the_back_end(censored_model):
    frame = pd.read_csv(ROOT / "tests" / "data" / "bcdeter.csv", dtype=str, keep_default_na=False)
    mech = censored_model.mechanisms["visits"]
    left, right = report_model(mech).read(frame, "months")
    assert len(left) == len(frame) and not np.isnan(left).any() and np.all(left <= right)
    result = CensoredBackend().answer(censored_model, censored_model.queries["F"], "run",
                                      data=DataBindings(default=str(ROOT / "tests" / "data" / "bcdeter.csv")))
    assert result.extras["n"] == len(frame)
    assert result.extras["data"] == report_model(mech).extras()["data"]


# ---- capabilities the back end branches on -----------------------------------------------------------
def test_conditional_se_refusal_is_the_back_ends_b140(tmp_path, model):
    spec = privspec.load(SPEC.read_text()
                         + "\nquery probe = estimate mean(salary) from sel by npmle(se = conditional)\n")
    path = tmp_path / "d.csv"
    pd.DataFrame({"salary": ["(-inf, 40]", "null", "(75, inf]"]}).to_csv(path, index=False)
    with pytest.raises(BackendError) as e:
        IntervalBackend().answer(spec.model, spec.model.queries["probe"], "run", data=DataBindings(default=str(path)))
    d = e.value.diagnostics[0]
    assert d.code == "B140" and d.message == report_model(model.mechanisms["sel"]).conditional_se_refusal()


@pytest.mark.parametrize("verb, query", [("analyze", "coverage(visits)"), ("simulate", "estimate cdf(months) "
                                                                                     "from visits by npmle")])
def test_no_anchors_is_b106(censored_model, verb, query):
    spec = privspec.load(BCDETER.read_text() + f"\nquery probe = {query}\n")
    with pytest.raises(BackendError) as e:
        CensoredBackend().answer(spec.model, spec.model.queries["probe"], verb, n=10, reps=1)
    assert e.value.diagnostics[0].code == "B106"


def test_the_cache_does_not_keep_mechanisms_alive():
    import gc
    import weakref

    mech = privspec.load(SPEC).model.mechanisms["c1"]
    ref = weakref.ref(mech)
    assert report_model(mech).mechanism is mech
    del mech
    gc.collect()
    assert ref() is None


def test_report_model_base_class_is_abstract_about_draws():
    class Fake:
        name = "fake"

    with pytest.raises(BackendError) as e:
        ReportModel(Fake()).draw(None, np.array([0.0]), np.random.default_rng(0))
    assert e.value.diagnostics[0].code == "B103"


WIDE = """\
spec "Case I with anchors wider than the support (the interval paper's Fig. 14)"
variable y: continuous [0, 1]
population y ~ uniform(0, 1)
mechanism c = interval(y, case1(uniform(-4, 5)))
query m = estimate mean(y) from c by unbiased
query f = estimate cdf(y) from c by npmle
"""


def test_case1_anchors_beyond_the_support_are_reports_and_estimate_the_mean() -> None:
    # Half the anchors of uniform(-4, 5) fall outside [0, 1], so most reports are (U, inf]
    # with U < 0 or (-inf, U] with U > 1: each contains the whole support and is a report
    # the mechanism produces (it was refused as "the whole range", D102, and Example 2 read
    # such an anchor as an open end).  Example 2 stays unbiased: seeded simulation.
    spec = privspec.load(WIDE)
    rng = np.random.default_rng(3)
    raw = pd.DataFrame({"y": rng.uniform(0, 1, 4000)})
    reports = spec.privatize(raw, "c", seed=3)
    outside = reports["y"].astype(str).str.contains(r"\(-[0-9]|, [2-5]\.?[0-9]*\]")
    assert outside.mean() > 0.3
    res = spec.run(reports, queries=["m", "f"])
    assert res.ok
    m = res["m"]
    assert abs(m.value - raw["y"].mean()) < 4 * m.extras["se"]
    sim = spec.simulate(100, 400, seed=1, queries=["m"])["m"].value
    assert abs(sim["bias"]) < 4 * sim["sd"] / np.sqrt(400)
    assert abs(sim["ci95_coverage"] - 0.95) < 4 * sim["ci95_coverage_se"]
    # the whole line and anchors where the law puts none are still refused
    for cell, words in (("(-inf, inf]", "the whole range"), ("(0, 1]", "the whole range"),
                        ("(-6, inf]", "where this mechanism's anchors")):
        bad = spec.run(pd.DataFrame({"y": [cell, "(-1.5, inf]"]}), queries=["m"])
        assert bad.failures["m"].code == "D102" and words in str(bad.failures["m"])
