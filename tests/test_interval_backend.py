"""Interval privacy through the runner: analyze, privatize, run and simulate, with the JSON
contract of LANGUAGE.md and data errors that name rows."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.cli import main

pytest.importorskip("privspec.backends.interval.npmle.estimator")

SPECS = Path(__file__).resolve().parent.parent / "specs"
SPEC = str(SPECS / "interval_privacy.privspec")
RAW = str(SPECS / "data" / "interval_raw.csv")

ALL = """spec "every interval mechanism"
variable salary: continuous [0, 150]
variable score: continuous
variable x: continuous
population score ~ normal(1/2, 1)
population salary ~ uniform(0, 150)
mechanism c1   = interval(salary, case1(uniform(0, 150)))
mechanism c2   = interval(score, case2(logistic(0, 5)))
mechanism cm   = interval(salary, canonical(4, uniform(0, 150)))
mechanism ring = interval(salary, ring(3, uniform(0, 150)))
mechanism open = interval(salary, case1(uniform(0, 150)), disclose [0, 20])
mechanism mid  = interval(salary, case2(uniform(0, 150)), disclose [60, 80])
mechanism sel  = selective(c1, tau = 3/10, rho = 1/2)
mechanism prog = progressive(salary, rounds = 3)
query F_c1   = estimate cdf(salary) from c1 by npmle
query m_cm   = estimate mean(salary) from cm by npmle   # (a cdf would add the profile band: slow here)
query F_ring = estimate cdf(salary) from ring by npmle
query F_open = estimate cdf(salary) from open by npmle
query F_mid  = estimate cdf(salary) from mid by npmle
query F_sel  = estimate cdf(salary) from sel by npmle
query m_prog = estimate mean(salary) from prog by npmle
query m_mid  = estimate mean(salary) from mid by npmle
query m_c2   = estimate moment(score, 2) from c2 by mle(normal)
query c_c2   = estimate cdf(score) from c2 by mle(logistic)
query cov    = coverage(sel)
"""


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def as_json(*argv: str) -> dict:
    code, out, err = run(*argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)["queries"]


@pytest.fixture(scope="module")
def privatized(tmp_path_factory) -> dict:
    """The bundled raw data privatized by c1, c2 and life2 (one file), and by s1."""
    d = tmp_path_factory.mktemp("interval")
    a, b, c, s1 = (str(d / f) for f in ("a.csv", "b.csv", "c.csv", "s1.csv"))
    # a file holds the reports and the columns named with --keep: here the next one's input
    # and gdp, the regression's plain covariate (docs/interval-privacy.md)
    for mech, src, dst, seed, keep in (("c1", RAW, a, "1", "score,life,gdp"), ("c2", a, b, "2", "salary,life,gdp"),
                                       ("life2", b, c, "3", "salary,score,gdp"), ("s1", RAW, s1, "4", None)):
        code, _, err = run("privatize", SPEC, "--mechanism", mech, "--input", src, "--output", dst, "--seed", seed,
                           *(["--keep", keep] if keep else []))
        assert code == 0, err
    return {"all": c, "s1": s1, "dir": d}


# ---- analyze ---------------------------------------------------------------------------------------
def test_analyze_the_bundled_spec():
    q = as_json("analyze", SPEC)
    assert q["tau"]["value"] == pytest.approx(0.9373123, abs=1e-6) and q["tau"]["evaluation"] == "quadrature"
    assert q["g"]["value"] is None and q["g"]["expr"] == "2*sqrt(u*(150 - u))/(5625*pi)"
    assert q["g"]["information_bound"] == pytest.approx((150 * np.pi / 8) ** 2)
    assert q["leak"]["value"]["size"] == pytest.approx(1 - 0.8932384, abs=1e-6)
    assert q["e"]["value"] == "inf" and "Proposition 3" in q["e"]["reason"]
    assert q["tau_prog"]["expr"] == "8/27" and q["v_mu"]["value"] == 5625
    ig = q["tau_sel"]["ignorability"]
    assert ig["condition_rho_le_p"] is True and ig["p_w0_given_null"] >= 0.5
    assert set(q) == {"tau", "g", "leak", "e", "tau_sel", "tau_prog", "v_mu"}   # the rest needs data


def test_analyze_table2_spec():
    q = as_json("analyze", str(SPECS / "interval_table2.privspec"))
    assert 0.93 < q["tau"]["value"] < 0.95
    assert q["v_np"]["value"] < q["v2"]["value"]          # the NPMLE is the efficient one


def test_avar_of_a_cdf_is_refused_with_a_reason(tmp_path):
    spec = tmp_path / "s.privspec"
    spec.write_text("variable y: continuous\npopulation y ~ normal(0, 1)\n"
                    "mechanism m = interval(y, case1(normal(0, 2)))\n"
                    "query v = avar(cdf(y) from m by npmle)\n")
    code, _, err = run("analyze", str(spec))
    assert code == 1 and "B131" in err and "n^(-1/3)" in err


# ---- privatize ------------------------------------------------------------------------------------------
def test_privatize_keeps_rows_order_and_the_named_columns_only(privatized):
    """The three reports and gdp, kept by name (in the input's order, before the reports);
    the respondent column, never named, is not there."""
    raw = pd.read_csv(RAW)
    out = pd.read_csv(privatized["all"], dtype=str, keep_default_na=False)
    assert list(out.columns) == ["gdp", "salary", "score", "life"] and len(out) == len(raw)
    assert out["gdp"].astype(float).tolist() == raw["gdp"].tolist()
    left, right = privspec.backends.interval.mechanisms.parse_ranges(out["salary"])
    y = raw["salary"].to_numpy()
    assert np.all((left < y) & (y <= right))


def test_privatize_is_seeded(tmp_path):
    paths = [str(tmp_path / f"{k}.csv") for k in range(3)]
    for path, seed in zip(paths, ("5", "5", "6")):
        assert run("privatize", SPEC, "--mechanism", "c2", "--input", RAW, "--output", path, "--seed", seed)[0] == 0
    a, b, c = (Path(p).read_text() for p in paths)
    assert a == b and a != c


@pytest.mark.parametrize("mech", ["c1", "c2", "cm", "ring", "open", "mid", "sel", "prog"])
def test_privatize_and_run_every_mechanism(tmp_path, mech):
    spec = tmp_path / "all.privspec"
    spec.write_text(ALL)
    out = str(tmp_path / f"{mech}.csv")
    code, _, err = run("privatize", str(spec), "--mechanism", mech, "--input", RAW, "--output", out, "--seed", "9")
    assert code == 0, err
    written = pd.read_csv(out, dtype=str, keep_default_na=False)
    column = "score" if mech == "c2" else "salary"
    if mech == "sel":
        assert (written["salary"] == "null").mean() == pytest.approx(1 - 0.5 * 0.91, abs=0.07)
    if mech == "ring":
        assert written["salary"].str.contains("|", regex=False).any()
    if mech in ("open", "mid"):
        assert (~written[column].str.startswith("(")).any()      # disclosed values
    queries = [q for q in privspec.load(ALL).model.queries.values() if q.mechanism.name == mech]
    for q in queries:
        result = as_json("run", str(spec), "--data", out, "--query", q.name)[q.name]
        if q.estimand is not None and q.estimand.kind == "cdf" and q.method.name == "npmle":
            v = result["value"]
            assert set(v) == {"intervals", "mass"} and sum(v["mass"]) == pytest.approx(1.0)
            assert all(0 <= lo <= hi <= 150 for lo, hi in v["intervals"])
            assert result["kkt"] <= 1e-8 and result["converged"] and {"loglik", "iterations"} <= set(result)
            assert result["n"] == (500 - result.get("n_null", 0))
        if q.estimand is not None and q.estimand.kind == "mean":
            assert result["range"][0] <= result["value"] <= result["range"][1] and result["kkt"] <= 1e-8
            assert result["value"] == pytest.approx(75, abs=15)


def test_run_the_bundled_spec(privatized):
    # c1, sel and prog all observe salary: the file holds c1's reports, so it is bound to c1
    # (sel and prog, without reports, get their analytic coverage)
    q = as_json("run", SPEC, "--data", f"c1,c2,life2={privatized['all']}", "--data", f"s1={privatized['s1']}")
    assert q["mu"]["value"] == pytest.approx(75, abs=4 * q["mu"]["se"]) and q["mu"]["n"] == 500
    F = q["F"]
    assert F["kind"] == "estimate" and F["kkt"] <= 1e-10 and "band" in F
    band = F["band"]
    assert all(lo <= hi for lo, hi in zip(band["lower"], band["upper"]))
    assert q["m2"]["range"][0] <= q["m2"]["value"] <= q["m2"]["range"][1]
    reg = q["reg"]["value"]
    assert reg["gdp"] == pytest.approx(0.55, abs=0.15) and reg["intercept"] == pytest.approx(58, abs=3)
    assert q["tau"]["estimate"] == pytest.approx(q["tau"]["value"], abs=0.02)
    assert q["mu_mle"]["value"] == pytest.approx(0.5, abs=4 * q["mu_mle"]["se"])
    assert q["leak"]["value"]["size"] == pytest.approx(0.1067616, abs=1e-6)


@pytest.mark.slow
def test_regression_with_a_forest(privatized, tmp_path):
    pytest.importorskip("sklearn")
    spec = tmp_path / "rf.privspec"
    spec.write_text(Path(SPEC).read_text() + "query rf = estimate regression(life ~ gdp) from life2 "
                                             "by iterative(random_forest, logistic)\n")
    q = as_json("run", str(spec), "--data", privatized["all"], "--query", "rf")["rf"]
    assert list(q["value"]) == ["gdp"] and q["value"]["gdp"] == pytest.approx(1.0)
    assert q["noise"] == "logistic" and q["n"] == 500


# ---- data errors ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cell, code, words", [
    ("[1, 2]", "D101", "not interval reports"),
    ("12.5", "D102", "no acceptable range"),
    ("(-inf, 10] | (90, inf]", "D102", "not a ring design"),
    ("(160, inf]", "D102", "outside [0, 150]"),      # an anchor where c1's anchors never fall
    ("", "D004", "missing"),
])
def test_bad_data_names_the_row(tmp_path, privatized, cell, code, words):
    frame = pd.read_csv(privatized["all"], dtype=str, keep_default_na=False)
    frame.loc[2, "salary"] = cell
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    rc, out, err = run("run", SPEC, "--data", str(path), "--data", f"s1={privatized['s1']}", "--query", "mu")
    assert rc == 1 and out == ""
    assert code in err and words in err and "rows 3" in err.replace("row 3", "rows 3")


def test_raw_data_errors(tmp_path):
    frame = pd.read_csv(RAW)
    frame.loc[4, "salary"] = 200.0
    path = tmp_path / "raw.csv"
    frame.to_csv(path, index=False)
    rc, _, err = run("privatize", SPEC, "--mechanism", "c1", "--input", str(path), "--output", str(tmp_path / "o.csv"))
    assert rc == 1 and "D106" in err and "5" in err and not (tmp_path / "o.csv").exists()


# ---- simulate ------------------------------------------------------------------------------------------------
@pytest.mark.slow   # 5 s of replications
def test_simulate(tmp_path):
    q = as_json("simulate", SPEC, "--n", "200", "--reps", "40", "--seed", "3",
                "--query", "tau", "--query", "mu", "--query", "m2", "--query", "v_mu", "--query", "e")
    assert q["tau"]["value"]["empirical"] == pytest.approx(q["tau"]["value"]["analytic"],
                                                           abs=4 * q["tau"]["value"]["empirical_se"])
    mu = q["mu"]["value"]
    assert mu["truth"] == 75 and abs(mu["bias"]) < 4 * mu["sd"] / np.sqrt(40) and 0.8 <= mu["ci95_coverage"] <= 1
    assert q["v_mu"]["value"]["analytic"] == 5625
    assert q["m2"]["value"]["truth"] == pytest.approx(1.25)
    assert q["e"]["value"] == "inf"
    code, _, err = run("simulate", SPEC, "--n", "50", "--reps", "2", "--query", "reg")
    assert code == 1 and "B122" in err


# ---- the front end's estimator names -------------------------------------------------------------------------
@pytest.mark.parametrize("query, message", [
    ("estimate mean(score) from c2 by mle", "mle(normal) or mle(logistic)"),
    ("estimate mean(score) from c2 by mle(cauchy)", "unknown family 'cauchy'"),
    ("estimate regression(life ~ gdp) from life2 by iterative(linear, cauchy)", "unknown noise law"),
    ("estimate regression(life ~ gdp) from life2 by iterative(linear, normal, normal)", "optionally the noise law"),
])
def test_estimator_arguments_are_checked(query, message):
    spec = privspec.load(Path(SPEC).read_text() + f"query bad = {query}\n")
    assert any(message in d.message for d in spec.check())


def test_selective_privatize_needs_the_population(tmp_path):
    spec = tmp_path / "sel.privspec"
    spec.write_text("variable s: continuous [0, 150]\nmechanism c1 = interval(s, case1(uniform(0, 150)))\n"
                    "mechanism sel = selective(c1, tau = 3/10, rho = 1/2)\n")
    raw = tmp_path / "raw.csv"
    pd.DataFrame({"s": [10.0, 90.0]}).to_csv(raw, index=False)
    code, _, err = run("privatize", str(spec), "--mechanism", "sel", "--input", str(raw), "--output",
                       str(tmp_path / "o.csv"))
    assert code == 1 and "B102" in err and "population s ~" in err


def test_case1_data_bound_to_the_wrong_mechanism(privatized):
    # score as privatized by c2 (Case II) is not Case-I data for s1
    code, _, err = run("run", SPEC, "--data", privatized["all"], "--query", "tau")
    assert code == 1 and "D102" in err and "Case-I reports" in err


# ---- standard errors: which question, and the interval printed beside them (issue 13) ------------------
SE_SPEC = """spec "standard errors"
variable salary: continuous [0, 150]
variable score: continuous
population salary ~ uniform(0, 150)
population score ~ normal(1/2, 1)
mechanism c1 = interval(salary, case1(uniform(0, 150)))
mechanism c2 = interval(score, case2(logistic(0, 5)))
query mu_p  = estimate mean(salary) from c1 by unbiased
query mu_c  = estimate mean(salary) from c1 by unbiased(se = conditional)
query np_p  = estimate mean(salary) from c1 by npmle(se = population)
query np_c  = estimate mean(salary) from c1 by npmle(se = conditional)
query m2    = estimate moment(score, 2) from c2 by npmle
query ml    = estimate mean(score) from c2 by mle(normal)
query ml_c  = estimate mean(score) from c2 by mle(normal, se = conditional)
"""


@pytest.fixture(scope="module")
def se_data(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("se")
    spec = d / "se.privspec"
    spec.write_text(SE_SPEC)
    a, b = str(d / "a.csv"), str(d / "b.csv")
    for mech, src, dst, seed, keep in (("c1", RAW, a, "1", "score"), ("c2", a, b, "2", "salary")):
        code, _, err = run("privatize", str(spec), "--mechanism", mech, "--input", src, "--output", dst, "--seed", seed,
                           "--keep", keep)
        assert code == 0, err
    return {"spec": str(spec), "data": ["--data", f"c1={b}", "--data", f"c2={b}"]}


def test_every_standard_error_says_its_question_and_interval(se_data):
    names = ["mu_p", "mu_c", "np_p", "np_c", "m2", "ml"]
    q = as_json("run", se_data["spec"], *se_data["data"], *sum((["--query", n] for n in names), []))
    for name in names:
        r = q[name]
        lo, hi = r["ci95"]
        assert lo < r["value"] < hi and r["se"] > 0 and r["se_kind"] in ("population", "conditional")
        assert r["ci_method"] and r["target"]
    assert q["mu_c"]["se_kind"] == "conditional" and "respondents' own mean" in q["mu_c"]["target"]
    # uniform salary, uniform anchors: the conditional variance is 2/3 (Example 2) and 1/2
    # (NPMLE) of the population one; one data set, so within the estimates' noise
    assert q["mu_c"]["se"] / q["mu_p"]["se"] == pytest.approx(np.sqrt(2 / 3), abs=0.15)
    assert q["np_c"]["se"] / q["np_p"]["se"] == pytest.approx(np.sqrt(1 / 2), abs=0.15)
    assert q["np_p"]["se_method"].startswith("jackknife (delete-1, 500")        # the Case-I fast path
    assert q["m2"]["se_method"].startswith("delete-a-group jackknife (50 random groups")
    assert "t(0.975" in q["m2"]["ci_method"] and q["m2"]["range"][0] <= q["m2"]["value"] <= q["m2"]["range"][1]
    assert q["ml"]["ci_method"].startswith("profile likelihood") and q["ml"]["effective_n"] > 20
    assert "coverage_note" not in q["ml"]


def test_conditional_se_of_a_parametric_fit_is_refused(se_data):
    code, out, err = run("run", se_data["spec"], *se_data["data"], "--query", "ml_c")
    assert code == 1 and "B140" in err and "not centred on their mean" in err and "npmle(se = conditional)" in err


def test_band_at_chosen_points():
    """fit_npmle bounds F at any finite points (the API to come); True keeps the quartiles."""
    from privspec.backends.interval.fit import fit_npmle

    model = privspec.load(SE_SPEC).model
    mech = model.queries["m2"].mechanism
    rng = np.random.default_rng(0)
    from privspec.backends.interval.reports import sample_reports

    left, right = sample_reports(model, mech, rng.normal(0.5, 1, 300), rng)
    L, R, C = privspec.backends.interval.backend.aggregate(left, right)
    at = fit_npmle(mech, L, R, C, band=np.array([1.0, -0.5, np.inf, 0.2]))
    assert at.band["x"] == [-0.5, 0.2, 1.0] and "coverage_note" not in at.band
    quart = fit_npmle(mech, L, R, C, band=True)
    assert len(quart.band["x"]) == 3 and "chosen by the data" in quart.band["coverage_note"]
    assert "2.486" in quart.band["method"]


def test_simulate_holds_a_conditional_interval_against_the_sample_mean(tmp_path):
    spec = tmp_path / "s.privspec"
    spec.write_text(SE_SPEC)
    q = as_json("simulate", str(spec), "--n", "150", "--reps", "30", "--seed", "4", "--query", "np_c",
                "--query", "mu_p")
    assert q["np_c"]["se_kind"] == "conditional" and "sample mean" in q["np_c"]["ci95_target"]
    for name in ("np_c", "mu_p"):
        v = q[name]["value"]
        assert 0.8 <= v["ci95_coverage"] <= 1 and v["ci95_coverage_se"] < 0.1


def test_a_regression_on_narrow_anchors_says_it_is_weakly_identified(tmp_path):
    """Through the runner: the note and the scale's VIF, and no note for wide anchors."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=1500)
    raw = tmp_path / "raw.csv"
    pd.DataFrame({"y": 1 + 2 * x + rng.normal(size=1500), "x": x}).to_csv(raw, index=False)
    got = {}
    for name, anchor in (("narrow", "logistic(0, 1/50)"), ("wide", "logistic(0, 5)")):
        spec = tmp_path / f"{name}.privspec"
        spec.write_text('spec "regression"\nvariable y: continuous\nvariable x: continuous\n'
                        f"mechanism m = interval(y, case1({anchor}))\n"
                        "query reg = estimate regression(y ~ x) from m by iterative(linear)\n")
        out = tmp_path / f"{name}.csv"
        code, _, err = run("privatize", str(spec), "--mechanism", "m", "--input", str(raw), "--output", str(out),
                           "--seed", "1", "--keep", "x")
        assert code == 0, err
        got[name] = as_json("run", str(spec), "--data", str(out))["reg"]
    assert got["narrow"]["scale_vif"] > 10 and "weakly identified" in got["narrow"]["note"]
    assert "coefficient / noise_scale" in got["narrow"]["note"]
    assert got["wide"]["scale_vif"] < 2 and "note" not in got["wide"]
