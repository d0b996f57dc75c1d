"""Frequency oracles from a spec (issue 19): the language, analysis, privatize, run on
every engine, simulate, compare and the errors, through the public API and the CLI.

The oracles' mathematics (closed forms, Monte Carlo covariances, peers, the privacy
audit) is tested on the core in tests/test_oracles.py; here each oracle is driven as a
user drives it.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import sympy

import privspec
from privspec.backends.oracles import pure as core

LABELS = ("Asian", "Black", "Hispanic", "Other", "White")
W = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
SPEC = """
variable race: categorical {Asian, Black, Hispanic, Other, White}
population race ~ categorical(0.1, 0.2, 0.3, 0.15, 0.25)
parameter eps > 0 = 1
mechanism sue = sue(race, epsilon = eps)
mechanism oue = oue(race, epsilon = 1)
mechanism blh = blh(race, epsilon = 1)
mechanism olh = olh(race, epsilon = 2, g = 5)
mechanism ss = ss(race, epsilon = 1, k = 2)
mechanism hr = hr(race, epsilon = 1)
mechanism adp = adp(race, epsilon = 1)
"""
KINDS = ("sue", "oue", "blh", "olh", "ss", "hr", "adp")


def _queries(kind: str, method: str = "mom") -> str:
    return (f"query eps_{kind} = epsilon({kind})\n"
            f"query avar_{kind} = avar(distribution(race) from {kind} by mom)\n"
            f"query est_{kind} = estimate distribution(race) from {kind} by {method}\n")


@pytest.fixture(scope="module")
def spec() -> privspec.Spec:
    return privspec.load(SPEC + "".join(_queries(k) for k in KINDS)
                         + "query ibu_ss = estimate distribution(race) from ss by mle\n"
                         + "query clip_oue = estimate distribution(race) from oue by mom(project = euclidean)\n")


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    x = np.random.default_rng(0).choice(5, size=40_000, p=W)
    return pd.DataFrame({"race": np.asarray(LABELS, dtype=object)[x], "id": np.arange(40_000)})


def test_every_oracle_analyses_with_its_declared_epsilon(spec) -> None:
    res = spec.analyze()
    for kind in KINDS:
        eps = res[f"eps_{kind}"]
        declared = 2 if kind == "olh" else 1
        assert float(eps.value) == declared and float(eps.extras["read_back"]) == declared
        V = np.asarray(res[f"avar_{kind}"].to_frame(), dtype=float)
        o = core.oracle(kind, 5, float(declared), g=5 if kind == "olh" else None, k=2 if kind == "ss" else None)
        assert np.allclose(V, core.covariance(o, W, 1.0), rtol=1e-12)
    assert res["eps_adp"].extras["protocol"] == "grr (chosen by adp)"     # d = 5 <= 3 e + 2


@pytest.mark.parametrize("kind", KINDS)
def test_privatize_then_run_recovers_the_population(spec, raw, kind) -> None:
    reports = spec.privatize(raw, kind, seed=7, keep=["id"])
    assert reports["id"].tolist() == raw["id"].tolist()          # a raw column kept when named, in order
    assert reports.columns.tolist() == ["id", "race"]            # and nothing else of the raw table
    res = spec.run(reports, [f"est_{kind}"])[f"est_{kind}"]
    est = np.array(res.value.values, dtype=float)
    se = np.array(res.extras["se"].values, dtype=float)
    # within 4 standard errors of the truth, each category (fixed seed)
    assert np.all(np.abs(est - W) <= 4 * se), (est, se)


def test_reports_depend_on_row_and_seed_only(spec, raw) -> None:
    for kind in ("oue", "olh", "ss", "hr"):
        whole = spec.privatize(raw, kind, seed=3)["race"]
        piece = spec.privatize(raw.iloc[1000:2000].reset_index(drop=True), kind, seed=3, offset=1000)["race"]
        assert whole.iloc[1000:2000].tolist() == piece.tolist()
        assert not whole.equals(spec.privatize(raw, kind, seed=4)["race"])


def test_mle_and_projection(spec, raw) -> None:
    ss = spec.privatize(raw, "ss", seed=1)
    r = spec.run(ss, ["ibu_ss", "est_ss"])
    mle = np.array(r["ibu_ss"].value.values, dtype=float)
    mom = np.array(r["est_ss"].value.values, dtype=float)
    assert mle.min() >= 0 and abs(mle.sum() - 1) < 1e-9
    assert np.abs(mle - mom).max() < 0.03                       # both consistent
    se = np.array(r["ibu_ss"].extras["se"].values, dtype=float)
    assert np.all(se > 0) and np.all(np.abs(mle - W) <= 4 * se)
    oue = spec.privatize(raw, "oue", seed=1)
    p = np.array(spec.run(oue, ["clip_oue"])["clip_oue"].value.values, dtype=float)
    assert p.min() >= 0 and abs(p.sum() - 1) < 1e-12


def test_engines_agree_to_the_last_digit(spec, raw, tmp_path) -> None:
    pytest.importorskip("duckdb")
    for kind in ("oue", "olh", "ss", "hr"):
        path = tmp_path / f"{kind}.csv"
        spec.privatize(raw, kind, seed=2).to_csv(path, index=False)
        outs = [spec.run(str(path), [f"est_{kind}"], engine=e)[f"est_{kind}"] for e in ("pandas", "duckdb")]
        a, b = (json.dumps(o.value.values, default=float) for o in outs)
        assert a == b


def test_wide_unary_reports_counted_by_row_equal_the_tally(tmp_path) -> None:
    """Unary encoding of more than 64 categories writes Arrow text from one buffer, and the
    unbiased estimate counts its bits row by row (no grouping of the nearly all distinct
    texts): the same estimate, to the last digit, as from the distinct reports (an object
    column, a file through DuckDB); texts that are not reports still get D013 with their
    rows, missing ones D004."""
    pytest.importorskip("duckdb")
    from privspec.backends.oracles import reports as frequency_oracles

    labels = [f"c{i}" for i in range(100)]
    wide = privspec.load("variable x: categorical {" + ", ".join(labels) + "}\n"
                         "mechanism m = oue(x, epsilon = 2)\n"
                         "query q = estimate distribution(x) from m by mom\n")
    x = np.random.default_rng(3).integers(0, 100, 3_000)
    reports = wide.privatize(pd.DataFrame({"x": np.asarray(labels, dtype=object)[x]}), "m", seed=1)
    assert isinstance(reports["x"].dtype, pd.ArrowDtype) or str(reports["x"].dtype).startswith("string")
    assert reports["x"].str.len().eq(26).all()                  # 13 bytes as hex
    calls = []
    original = frequency_oracles.read_reports
    frequency_oracles.read_reports = lambda *a: calls.append(1) or original(*a)
    try:
        rowwise = wide.run(reports, ["q"])["q"]
        assert not calls                                         # no distinct reports read
        as_text = wide.run(reports.astype({"x": object}), ["q"])["q"]
        assert not calls                                         # an object column converted once
        path = tmp_path / "wide.csv"
        reports.to_csv(path, index=False)
        from_file = wide.run(str(path), ["q"], engine="duckdb")["q"]
        assert calls                                             # DuckDB: the distinct reports
    finally:
        frequency_oracles.read_reports = original
    got = [json.dumps([r.value.values, r.extras["se"].values], default=float) for r in (rowwise, as_text, from_file)]
    assert got[0] == got[1] == got[2]
    bad = reports.astype({"x": object})
    bad.loc[[10, 2_000], "x"] = ["G" + bad.loc[10, "x"][1:], "0" * 25]     # not hex; 25 digits
    d = _failure(wide.run(bad, ["q"]), "q")
    assert d.code == "D013" and d.rows == (11, 2001)
    bad.loc[[10, 2_000], "x"] = [reports.loc[10, "x"], None]
    assert _failure(wide.run(bad, ["q"]), "q").code == "D004"


def _failure(results, name: str):
    return results.failures[name].diagnostics[0]


def test_bad_reports_name_their_rows(spec, raw) -> None:
    reports = spec.privatize(raw.iloc[:50], "olh", seed=1)
    reports["race"] = reports["race"].astype(object)            # edited by hand
    reports.loc[[3, 17], "race"] = ["White", "12:99"]           # a raw label; a value outside [0, g)
    d = _failure(spec.run(reports, ["est_olh"]), "est_olh")
    assert d.code == "D013" and d.rows == (4, 18) and d.columns == ("race",)
    assert "'12:99'" in d.message and "'White'" in d.message and "SEED:VALUE" in d.hint
    hr = spec.privatize(raw.iloc[:20], "hr", seed=1)
    hr["race"] = hr["race"].astype(object)
    hr.loc[5, "race"] = "8"                                       # K = 8: indices 0 .. 7
    assert _failure(spec.run(hr, ["est_hr"]), "est_hr").rows == (6,)


def test_simulate_agrees_with_the_analytic_covariance(spec) -> None:
    sim = spec.simulate(n=2000, reps=300, seed=5, queries=["est_oue"])["est_oue"]
    emp = np.asarray(sim.value["n_cov_empirical"].data, dtype=float)
    ana = np.asarray(sim.value["n_cov_analytic"].data, dtype=float)
    # trace of 5 variances from 300 reps: relative sd about sqrt(2/300/5) = 3.7%; 15% is 4 sd
    assert abs(np.trace(emp) / np.trace(ana) - 1) < 0.15
    cover = np.array(sim.value["ci95_coverage"].values, dtype=float)
    assert np.all(np.abs(cover - 0.95) < 0.05)


def test_errors_in_the_spec(tmp_path) -> None:
    bad = ("variable r: categorical {a, b, c}\n"
           "mechanism m1 = ss(r, epsilon = 1, k = 3)\n"
           "mechanism m2 = olh(r, epsilon = 1, g = 1)\n"
           "mechanism m3 = l_oue(r, epsilon = 1, first = 2)\n"
           "mechanism m4 = ouee(r, epsilon = 1)\n"
           "mechanism m5 = hr(r, epsilon = 0)\n")
    path = tmp_path / "bad.privspec"
    path.write_text(bad)
    proc = subprocess.run([sys.executable, "-m", "privspec", "check", str(path)], capture_output=True, text=True)
    assert proc.returncode == 1
    err = proc.stderr
    assert "k must be below the number of categories (3)" in err
    assert "must be at least 2" in err
    assert "first (the privacy of one collection) must be below epsilon" in err
    assert "did you mean 'oue'?" in err
    assert "epsilon must be > 0" in err


def test_compare_puts_oracles_beside_subset_and_grr() -> None:
    spec = privspec.load(SPEC.replace("parameter eps > 0 = 1\n", "").replace("epsilon = eps", "epsilon = 1")
                         + "compare c for distribution(race) at n = 1000 {\n  g = grr(race, epsilon = 1)\n"
                           "  o = oue(race, epsilon = 1)\n  h = hr(race, epsilon = 1)\n  s = subset(race, uniform)\n"
                           "} by avar_trace, max_se, coverage, epsilon\n")
    res = spec.compare()["c"]
    text = str(res)
    assert "o " in text and "h " in text
    assert "frequency oracle" in text                              # the reason of n/a coverage


# ---- several attributes: spl, smp, rsfd --------------------------------------------------------------
MULTI = """
variable race: categorical {Asian, Black, Hispanic, Other, White}
variable gender: categorical {F, M}
variable income: categorical {Low, Mid, High}
population race ~ categorical(0.1, 0.2, 0.3, 0.15, 0.25)
population gender ~ categorical(0.45, 0.55)
population income ~ categorical(0.5, 0.3, 0.2)
mechanism s = spl(oue(race), grr(gender), olh(income), epsilon = 3)
mechanism m = smp(oue(race), grr(gender), hr(income), epsilon = 1)
mechanism r = rsfd(race, gender, income, epsilon = 1, fake = oue_z)
mechanism g = rsfd(race, gender, income, epsilon = 1)
query es = epsilon(s)
query er = epsilon(r)
query vm = avar(distribution(income) from m by mom)
query fs = estimate distribution(race) from s by mom
query fm = estimate distribution(income) from m by mom
query fr = estimate distribution(race) from r by mom
query fg = estimate distribution(gender) from g by mom(project = clip)
"""
TRUTH = {"race": W, "gender": np.array([0.45, 0.55]), "income": np.array([0.5, 0.3, 0.2])}


@pytest.fixture(scope="module")
def multi_spec() -> privspec.Spec:
    return privspec.load(MULTI)


@pytest.fixture(scope="module")
def raw3() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    n = 30_000
    return pd.DataFrame({"race": rng.choice(LABELS, n, p=W), "gender": rng.choice(["F", "M"], n, p=[.45, .55]),
                         "income": rng.choice(["Low", "Mid", "High"], n, p=[.5, .3, .2])})


@pytest.mark.parametrize("mech,query,variable", [("s", "fs", "race"), ("m", "fm", "income"),
                                                 ("r", "fr", "race"), ("g", "fg", "gender")])
def test_multi_attribute_protocols_recover_each_marginal(multi_spec, raw3, mech, query, variable) -> None:
    reports = multi_spec.privatize(raw3, mech, seed=4)
    if mech == "m":                          # smp: one attribute per row, which one in 'sampled'
        assert set(reports["sampled"]) == {"0", "1", "2"}
        assert ((reports[["race", "gender", "income"]] != "").sum(axis=1) == 1).all()
    res = multi_spec.run(reports, [query])[query]
    est = np.array(res.value.values, dtype=float)
    se = np.array(res.extras["se"].values, dtype=float)
    assert np.all(np.abs(est - TRUTH[variable]) <= 4 * se), (est, se)


def test_multi_attribute_privacy_levels(multi_spec) -> None:
    res = multi_spec.analyze()
    assert float(res["es"].value) == 3 and res["es"].extras["attribute_epsilon"] == 1
    # rsfd: eps' = ln(A (e^eps - 1) + 1) between tuples that differ everywhere, eps for one attribute
    er = res["er"]
    assert abs(float(er.value) - np.log(3 * (np.e - 1) + 1)) < 1e-12
    assert abs(er.extras["epsilon_one_attribute"] - 1) < 1e-12


def test_multi_attribute_engines_and_pieces(multi_spec, raw3, tmp_path) -> None:
    whole = multi_spec.privatize(raw3, "m", seed=5)
    piece = multi_spec.privatize(raw3.iloc[700:900].reset_index(drop=True), "m", seed=5, offset=700)
    assert whole.iloc[700:900].reset_index(drop=True).equals(piece)
    path = tmp_path / "smp.csv"
    whole.to_csv(path, index=False)
    outs = [multi_spec.run(str(path), ["fm"], engine=e)["fm"].value.values for e in ("pandas", "duckdb")]
    assert json.dumps(outs[0], default=float) == json.dumps(outs[1], default=float)


def test_multi_attribute_simulation_matches_its_covariance(multi_spec) -> None:
    sim = multi_spec.simulate(n=1500, reps=300, seed=2, queries=["fm"])["fm"]
    emp = np.asarray(sim.value["n_cov_empirical"].data, dtype=float)
    ana = np.asarray(sim.value["n_cov_analytic"].data, dtype=float)
    assert abs(np.trace(emp) / np.trace(ana) - 1) < 0.15       # 300 reps: about 4.5% sd on a trace of 3
    V = np.asarray(multi_spec.analyze()["vm"].to_frame(), dtype=float)
    assert np.allclose(V, ana, rtol=0.01)                        # n Cov at n = 1500 ~ its limit


def test_multi_attribute_errors(tmp_path) -> None:
    bad = ("variable a: categorical {x, y}\nvariable b: categorical {u, v, w}\n"
           "mechanism m1 = spl(oue(a, epsilon = 1), grr(b), epsilon = 2)\n"
           "mechanism m2 = rsfd(a, b, epsilon = 1, fake = oue_zz)\n"
           "mechanism m3 = smp(oue(a), epsilon = 1)\n"
           "mechanism m4 = spl(oue(a), grrr(b), epsilon = 1)\n"
           "mechanism m5 = smp(oue(a), grr(a), epsilon = 1)\n")
    path = tmp_path / "bad.privspec"
    path.write_text(bad)
    proc = subprocess.run([sys.executable, "-m", "privspec", "check", str(path)], capture_output=True, text=True)
    err = proc.stderr
    assert proc.returncode == 1
    assert "an oracle takes its variable only" in err
    assert "did you mean 'oue_z'?" in err
    assert "collects at least two attributes" in err
    assert "did you mean 'grr'?" in err
    assert "variable a is collected twice" in err


# ---- longitudinal forms: memoized permanent response, then one per collection ----------------------------
LONG = """
variable race: categorical {Asian, Black, Hispanic, Other, White}
population race ~ categorical(0.1, 0.2, 0.3, 0.15, 0.25)
mechanism lg = l_grr(race, epsilon = 2, first = 1)
mechanism ls = l_sue(race, epsilon = 2, first = 1)
mechanism lo = l_oue(race, epsilon = 2, first = 1)
mechanism lx = l_osue(race, epsilon = 2, first = 1)
query e_lg = epsilon(lg)
query v_lo = avar(distribution(race) from lo by mom)
""" + "".join(f"query f_{m} = estimate distribution(race) from {m} by mom\n" for m in ("lg", "ls", "lo", "lx"))


@pytest.mark.parametrize("mech", ["lg", "ls", "lo", "lx"])
def test_longitudinal_oracles_privatize_and_estimate(raw, mech) -> None:
    spec = privspec.load(LONG)
    reports = spec.privatize(raw, mech, seed=8)
    res = spec.run(reports, [f"f_{mech}"])[f"f_{mech}"]
    est = np.array(res.value.values, dtype=float)
    se = np.array(res.extras["se"].values, dtype=float)
    assert np.all(np.abs(est - W) <= 4 * se), (est, se)


def test_longitudinal_privacy_over_collections() -> None:
    res = privspec.load(LONG).analyze()
    e = res["e_lg"]
    assert float(e.value) == 2 and abs(e.extras["read_back_first"] - 1) < 1e-12
    spent = [e.extras["after_collections"][t] for t in range(1, 11)]
    assert spent[0] == pytest.approx(1) and all(a <= b + 1e-12 for a, b in zip(spent, spent[1:]))
    assert 1.99 < spent[-1] <= 2 + 1e-12
    sim = privspec.load(LONG).simulate(n=2000, reps=200, seed=3, queries=["f_lo"])["f_lo"]
    emp = np.asarray(sim.value["n_cov_empirical"].data, dtype=float)
    ana = np.asarray(res["v_lo"].to_frame(), dtype=float)
    assert abs(np.trace(emp) / np.trace(ana) - 1) < 0.18          # 200 reps of 5 variances: 4.5% sd


# ---- the MLE (IBU) beyond one-round oracles ---------------------------------------------------------------
MLE = MULTI + """
mechanism l = l_oue(race, epsilon = 2, first = 1)
mechanism x = rsfd(race, gender, income, epsilon = 1, fake = oue_r)
query ms = estimate distribution(race) from s by mle
query mm = estimate distribution(income) from m by mle
query mr = estimate distribution(race) from r by mle
query mg = estimate distribution(gender) from g by mle
query ml = estimate distribution(race) from l by mle
query mx = estimate distribution(race) from x by mle
"""


@pytest.mark.parametrize("query", ["ms", "mm", pytest.param("mr", marks=pytest.mark.slow), "mg",
                                   pytest.param("ml", marks=pytest.mark.slow)])
def test_mle_of_multi_attribute_and_longitudinal_protocols_covers(query) -> None:
    """The IBU with the protocol's own likelihood (a mixture of real and fake reports, or a
    memoized response seen once): in simulations its 95% Wald intervals from the observed
    information cover at their rate, and it is near the truth."""
    sim = privspec.load(MLE).simulate(n=3000, reps=150, seed=6, queries=[query])[query]
    cover = np.array(sim.value["ci95_coverage"].values, dtype=float)
    bias = np.array(sim.value["bias"].values, dtype=float)
    assert np.all(np.abs(cover - 0.95) < 0.07), cover            # 150 reps: sd 1.8%, boundary effects
    assert np.all(np.abs(bias) < 0.01), bias


def test_mle_refused_where_the_likelihood_has_no_pair(raw3) -> None:
    spec = privspec.load(MLE)
    reports = spec.privatize(raw3.iloc[:2000], "x", seed=1)
    d = spec.run(reports, ["mx"]).failures["mx"].diagnostics[0]
    assert d.code == "B415" and "fake = grr | oue_z | sue_z" in d.hint


def test_mle_of_one_round_oracles_covers(spec) -> None:
    sim = spec.simulate(n=3000, reps=150, seed=7, queries=["ibu_ss"])["ibu_ss"]
    cover = np.array(sim.value["ci95_coverage"].values, dtype=float)
    assert np.all(np.abs(cover - 0.95) < 0.07), cover


def test_planning_for_oracles() -> None:
    """sample_size(...) from an oracle is the smallest n whose largest standard error meets
    the target (from the oracle's covariance), and power(...) answers."""
    spec = privspec.load(SPEC + "query n_oue = sample_size(distribution(race) from oue, max_se = 0.01)\n"
                         "query pw = power(distribution(race) from hr, n = 5000, test = proportion(Asian, 0.08))\n")
    res = spec.analyze(queries=["n_oue", "pw"])
    V = core.covariance(core.oracle("oue", 5, 1.0), W, 1.0)
    want = int(np.ceil(np.max(np.diag(V)) / 0.01 ** 2 - 1e-9))
    assert int(res["n_oue"].value) == want
    assert 0.05 < float(res["pw"].value) < 1


def test_an_oracle_on_a_combined_variable_reads_its_parts_columns() -> None:
    """Raw values of ``oue(gender * income, ...)`` come from the parts' columns (as for every
    mechanism: one reader of raw values), and the joint is estimated from the reports."""
    spec = privspec.load("variable gender: categorical {F, M}\nvariable income: categorical {Low, High}\n"
                         "mechanism j = oue(gender * income, epsilon = 2)\n"
                         "query t = estimate joint(gender, income) from j by mom\n")
    rng = np.random.default_rng(0)
    g, i = rng.choice(["F", "M"], 20_000, p=[0.4, 0.6]), rng.choice(["Low", "High"], 20_000, p=[0.7, 0.3])
    raw = pd.DataFrame({"gender": g, "income": i, "id": np.arange(20_000)})
    assert spec.privatize(raw, "j", seed=1).columns.tolist() == ["gender*income"]
    reports = spec.privatize(raw, "j", seed=1, keep=["id"])
    assert reports.columns.tolist() == ["id", "gender*income"]
    res = spec.run(reports, ["t"])["t"]
    truth = np.outer([0.4, 0.6], [0.7, 0.3])
    se = np.array(res.extras["se"].values, dtype=float).reshape(2, 2)
    assert np.all(np.abs(np.asarray(res.value.data) - truth) <= 4 * se)


CROSS = """
variable gender: categorical {F, M}
variable income: categorical {Low, High}
population (gender, income) ~ counts [[40, 10], [15, 35]]
mechanism s = spl(grr(gender), grr(income), epsilon = 4)
mechanism m = smp(grr(gender), grr(income), epsilon = 4)
mechanism r = rsfd(gender, income, epsilon = 2, fake = sue_z)
query vs = avar(distribution(gender) from s by mom)
query vs_given = avar(distribution(gender) from s by mom(se = conditional))
query vm = avar(distribution(gender) from m by mom)
query vm_given = avar(distribution(gender) from m by mom(se = conditional))
query vr = avar(distribution(income) from r by mom)
"""


def test_avar_of_one_attribute_gives_its_covariance_with_the_others() -> None:
    """n Cov(gender's estimate, income's) beside gender's avar, from the population's joint
    (the core's formulas are checked by simulation in test_oracles_multi)."""
    from privspec.backends.oracles import multi as om

    res = privspec.load(CROSS).analyze()
    P = np.array([[0.4, 0.1], [0.15, 0.35]])
    D = P - np.outer(P.sum(axis=1), P.sum(axis=0))           # [[.125, -.125], [-.125, .125]]

    def cross(name: str, other: str) -> np.ndarray:
        return np.asarray(res[name].extras[f"cross_covariance_{other}"].data, dtype=float)

    assert np.allclose(cross("vs", "income"), D, atol=1e-15)             # spl: the answers' own
    assert np.allclose(cross("vs_given", "income"), 0, atol=1e-15)       # ... none given the table
    assert np.allclose(cross("vm", "income"), 0, atol=1e-15)             # smp: disjoint respondents
    assert np.allclose(cross("vm_given", "income"), -D, atol=1e-15)      # ... parts of one table
    mo = om.multi_oracle("rsfd", None, (2, 2), 2.0, variant="sue-z")
    want = om.cross_covariance(mo, 1, 0, P.sum(axis=0), P.sum(axis=1), 1, joint=P.T)
    assert np.allclose(cross("vr", "gender"), want, atol=1e-15) and np.abs(want).max() > 0.01
    # the labels: this attribute's rows, the other's columns
    m = res["vs"].extras["cross_covariance_income"]
    assert tuple(m.rows) == ("F", "M") and tuple(m.cols) == ("Low", "High")


# ---- extreme epsilons: an answer or a refusal within seconds (issue 33) ---------------------------------
EXTREME = """
variable x: categorical {a, b, c, d}
population x ~ categorical(1/10, 2/10, 3/10, 4/10)
mechanism m = MECH
query e = epsilon(m)
query v = avar(distribution(x) from m by mom)
query vc = avar(distribution(x) from m by mom(se = conditional))
query n = sample_size(distribution(x) from m, max_se = 0.01)
query pw = power(distribution(x) from m, n = 1000, test = proportion(a, 0.08))
"""
W4 = np.array([0.1, 0.2, 0.3, 0.4])


def _extreme(mech: str, within, seconds: float = 10.0):
    with within(seconds):
        return privspec.load(EXTREME.replace("MECH", mech)).analyze()


@pytest.mark.parametrize("kind", ("grr",) + tuple(k for k in KINDS if k != "olh"))
def test_epsilon_700_is_all_but_noiseless(kind, within) -> None:
    """At epsilon = 700 (e^700 = 1e304: the largest the checker allows) the analysis is
    the limit of the closed forms, in floating point and in seconds; exact arithmetic in
    e^700 factored polynomials of degree 1400 for minutes.  The covariance is that of
    epsilon = 200 to rounding (sue: e^-100 = 4e-44), grr's the multinomial's diag(w) - w w^T."""
    res = _extreme(f"{kind}(x, epsilon = 700)", within)
    assert res.ok, {k: str(e) for k, e in res.failures.items()}
    assert float(res["e"].value) == 700
    V = np.asarray(res["v"].value.data, dtype=float)
    o = core.oracle(kind, 4, 200.0)
    assert np.allclose(V, core.covariance(o, W4, 1.0), rtol=1e-12, atol=1e-15)
    if kind != "grr":   # (the grr mechanism's avar is the population one, with a note)
        assert np.allclose(np.asarray(res["vc"].value.data, dtype=float),
                           core.covariance(o, W4, 1.0, conditional=True), rtol=1e-12, atol=1e-15)
    if core.oracle(kind, 4, 700.0).kind == "grr":
        assert np.allclose(V, np.diag(W4) - np.outer(W4, W4), atol=1e-15)
    assert int(res["n"].value) == int(np.ceil(np.max(np.diag(V)) / 1e-4 - 1e-9))
    from privspec.backends.design.planning import power_proportion

    assert float(res["pw"].value) == pytest.approx(power_proportion(1000, 0.1 - 0.08, V[0, 0]), rel=1e-12)


def test_olh_past_the_hash_field_is_refused(within) -> None:
    """olh's default g = round(e^eps) + 1 is beyond the hash field (2^19 - 1) from epsilon
    13.2 on: the hashes then never reach most of [g] and q* = 1/g is false, so the oracle is
    refused (B412) naming g and the field; an explicit small g is analysed."""
    with within(10):   # (the exact read-back with g = 10^304 ran for minutes)
        res = privspec.load(EXTREME.replace("MECH", "olh(x, epsilon = 700)")).analyze(queries=["v", "e"])
    for name in ("v", "e"):
        d = res.failures[name].diagnostics[0]
        assert d.code == "B412" and "10^304" in d.message and "524287" in d.message
    ok = privspec.load(EXTREME.replace("MECH", "olh(x, epsilon = 700, g = 1000)")).analyze(queries=["v", "e"])
    assert ok.ok and float(ok["e"].value) == 700


@pytest.mark.parametrize("kind", ("grr",) + KINDS)
def test_epsilon_1e_300_is_refused_for_floating_point(kind, within) -> None:
    """At epsilon = 1e-300 the variance is about 1/eps^2 = 10^600 per respondent: no float
    holds it, and it was a LinAlgError (eigenvalues of inf) or a matrix of inf.  Now a
    B416 refusal naming epsilon and the size; the epsilon query still answers."""
    res = _extreme(f"{kind}(x, epsilon = 1e-300)", within)
    assert float(res["e"].value) == pytest.approx(1e-300)
    for name in ("v", "vc", "n", "pw"):
        e = res.failures[name]
        text = str(e)
        assert "B416" in text and "epsilon = 1.00e-300" in text and "10^60" in text, text


@pytest.mark.parametrize("kind", ("grr",) + KINDS)
def test_tiny_epsilon_variance_is_accurate(kind) -> None:
    """p* - q* by expm1: at epsilon = 1e-9 the float covariance equals the exact one to 1e-9
    of its scale (the difference p* - q* of two floats near 1/2 kept 7 digits; off the
    diagonal, the terms of size (p* - q*)^2 are below the rounding of the others)."""
    eps = sympy.Rational(1, 10 ** 9)
    o = core.oracle(kind, 4, 1e-9)
    exact = core.exact_covariance(o, eps, [sympy.Rational(k, 10) for k in (1, 2, 3, 4)])
    want = np.array(exact.evalf(30).tolist(), dtype=float)
    got = core.covariance(o, W4, 1.0)
    assert np.allclose(np.diag(got), np.diag(want), rtol=1e-9, atol=0)
    assert np.allclose(got, want, rtol=0, atol=1e-9 * np.abs(want).max())
    values = {core.EPSILON: eps, core.D: 4, **({core.G: o.g} if o.g else {}), **({core.K: o.k} if o.k else {})}
    p, q = (sympy.sympify(x).subs(values) for x in core.support_probs(o, exact=True))
    assert core.support_gap(o) == pytest.approx(float((p - q).evalf(30)), rel=1e-12)


@pytest.mark.parametrize("kind", ("l_grr", "l_sue", "l_oue", "l_osue"))
@pytest.mark.parametrize("eps,first", [("700", "1/2"), ("700", "699"), ("2", "1e-9"), ("1e-9", "1e-10")])
def test_longitudinal_oracles_at_extreme_epsilons(kind, eps, first, within) -> None:
    """l_grr/l_sue/l_oue at epsilon = 700 ended in ZeroDivisionError or ValueError (1 - p1 =
    0 in doubles, e^700 squared), l_oue at first = 1e-9 in a catastrophic cancellation:
    each answers, its epsilon and first read back (at first = 1e-9 no n up to 10^9 meets
    max_se = 0.01: B151, the planning refusal)."""
    res = _extreme(f"{kind}(x, epsilon = {eps}, first = {first})", within)
    failed = {k: e.code for k, e in res.failures.items()}
    assert failed == ({"n": "B151"} if first.startswith("1e-") else {}), failed
    e = res["e"]
    assert float(e.value) == pytest.approx(float(sympy.sympify(eps)), rel=1e-12)
    assert float(e.extras["read_back_first"]) == pytest.approx(float(sympy.sympify(first)), rel=1e-6)
    V = np.asarray(res["v"].value.data, dtype=float)
    assert np.all(np.isfinite(V)) and np.all(np.diag(V) > 0)


JOINT_EXTREME = """
variable g: categorical {F, M}
variable i: categorical {L, H}
population (g, i) ~ counts [[4, 1], [2, 3]]
variable gi = g * i
mechanism prod = product(grr(g, epsilon = 1), grr(i, epsilon = EPS))
mechanism whole = grr(gi, epsilon = EPS)
mechanism one = grr(g, epsilon = EPS)
query castell = avar(joint(g, i) from prod by castell)
query joint = avar(joint(g, i) from whole by joint)
query est_castell = estimate joint(g, i) from prod by castell
query est_joint = estimate joint(g, i) from whole by joint
query est_mle = estimate distribution(g) from one by mle
"""


def test_grr_in_products_and_combined_domains_at_extreme_epsilons(within) -> None:
    """castell's and RR-Joint's covariances at epsilon = 700 ran for minutes in exact
    arithmetic (sympy's cancel of e^700); at 1e-300 the float paths ended in a LinAlgError
    or a ZeroDivisionError, and the MLE's analytic reference in minutes of evalf.  Now
    700 answers in floating point (the grr factor all but noiseless) and 1e-300 is B416
    (a variance of about 10^600, a matrix singular in doubles)."""
    with within(15):
        high = privspec.load(JOINT_EXTREME.replace("EPS", "700"))
        res = high.analyze()
        sim = high.simulate(n=50, reps=2, seed=1)
    assert res.ok and sim.ok, {**res.failures, **sim.failures}
    P = np.array([0.4, 0.1, 0.2, 0.3])
    # RR-Joint at epsilon = 700 reports the truth: the multinomial covariance of the joint
    V = np.asarray(res["joint"].value.data, dtype=float)
    assert np.allclose(V, np.diag(P) - np.outer(P, P), atol=1e-12)
    with within(15):
        low = privspec.load(JOINT_EXTREME.replace("EPS", "1e-300"))
        res = low.analyze()
        sim = low.simulate(n=50, reps=2, seed=1)
    assert {k: e.code for k, e in res.failures.items()} == {"castell": "B416", "joint": "B416"}
    assert {k: e.code for k, e in sim.failures.items()} == {k: "B416" for k in low.model.queries}
