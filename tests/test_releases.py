"""Releases: budgets (Table 1 of Example 3.6), the variance and table queries, privatize
and run on released tables, the university example of section 5.1."""
from __future__ import annotations

import importlib.util
import io
import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sympy

import privspec
from privspec.backends import privatizer_for
from privspec.backends.releases.budget import budget_on, budget_table, release_epsilon
from privspec.backends.releases.backend import Layout, count_records, read_released, tidy
from privspec.cli import main
from privspec.errors import DataError

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
RELEASES = SPECS / "releases.privspec"
UNIVERSITY = SPECS / "university.privspec"
RAW = SPECS / "data" / "university.csv"
RELEASED = SPECS / "data" / "university_released.csv"
TABLE2 = [[5, 10, 47, 68, 54, 33, 12, 2], [1, 13, 44, 92, 131, 75, 21, 15], [2, 25, 78, 218, 237, 153, 46, 18]]
oo = sympy.oo


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def example() -> privspec.model.graph.ModelGraph:
    return privspec.load(RELEASES).model


# ---- Table 1 of Example 3.6 ---------------------------------------------------------------------
def test_table1_exactly(example) -> None:
    rows, cols, data = budget_table(example, releases=["A", "B", "C"])
    assert rows == ["A", "B", "C", "all"]
    assert cols == ["age", "sex", "region", "race", "degree", "band"]
    # columns {age}, {sex}, {residential region}, {race}, then two "other variables"
    table1 = [[1, 1, 0, 0, 0, 0],
              [0, 0, 1, 1, 0, 0],
              [1, 0, 1, 0, 0, 0],
              [2, 1, 2, 1, 0, 0]]
    assert data.tolist() == table1
    assert all(isinstance(x, sympy.Integer) for x in data)      # exact arithmetic


def test_budget_per_variable_from_the_spec(example) -> None:
    code, out, err = run("analyze", str(RELEASES), "--format", "json")
    assert code == 0, err
    q = json.loads(out)["queries"]
    # release D adds {band} 1 and publishes the degree totals exactly
    assert q["budget"]["value"] == {"age": 2, "sex": 1, "region": 2, "race": 1, "degree": "inf", "band": 1}
    rel = q["budget"]["releases"]
    assert rel["rows"] == ["A", "B", "C", "D", "all"]
    assert rel["data"][:3] == [[1, 1, 0, 0, 0, 0], [0, 0, 1, 1, 0, 0], [1, 0, 1, 0, 0, 0]]
    assert q["budget_ages"]["value"] == {"{age, sex}": 2}
    assert q["budget_ages"]["releases"] == {"A": 1, "B": 0, "C": 1, "D": 0}
    assert q["budget_rel"]["value"]["C"] == {"age": 1, "sex": 0, "region": 1, "race": 0, "degree": 0, "band": 0}
    assert q["budget_rel"]["mechanism"] == {"A": "geometric", "B": "geometric", "C": "geometric", "D": "algorithm1"}
    assert q["budget_rel"]["exact_totals"]["D"] == ["degree"]


@pytest.mark.parametrize("subset, expected", [
    ({"age", "sex"}, 2), ({"age"}, 2), ({"race"}, 1), ({"band"}, 1), ({"degree"}, oo),
    ({"degree", "band"}, oo), ({"region", "race", "age"}, 3), (set(), 0),
])
def test_budget_for_subsets(example, subset: set, expected) -> None:
    total, parts = budget_on(example, subset)
    assert total == expected and set(parts) == {"A", "B", "C", "D"}


def test_budget_follows_the_propositions(example) -> None:
    names = ["age", "sex", "region", "race", "degree", "band"]
    subsets = [frozenset(c) for k in range(len(names) + 1) for c in itertools.combinations(names, k)]
    for release in example.releases.values():
        whole = release_epsilon(example, release, names)
        for u in subsets:
            e = release_epsilon(example, release, u)
            # Prop 3.3: 0 on sets it does not use; Prop 3.5: ε-DP bounds every subset
            if not u & {v.name for v in release.variables}:
                assert e == 0
            assert e <= whole
            for w in subsets:
                if u <= w:
                    assert e <= release_epsilon(example, release, w)   # Prop 3.2
    # Prop 3.4: composition adds the releases' epsilons
    for u in subsets:
        total, parts = budget_on(example, u)
        assert total == sum(parts.values(), sympy.Integer(0))


def test_budget_symbolic_and_bound_parameters() -> None:
    text = """
parameter eps > 0
parameter half > 0 = 1/2
variable a: categorical {x, y}
variable b: categorical {u, v}
release A = counts(a) with geometric(epsilon = eps)
release B = counts(a, b) with geometric(epsilon = half)
query per_var = budget(per variable)
query per_rel = budget(per release)
query ab = budget({a, b})
"""
    model = privspec.load(text).model
    eps = model.parameters["eps"].symbol
    total, _ = budget_on(model, {"a"})
    assert total == eps + sympy.Rational(1, 2)
    from privspec.backends.releases.backend import budget_result

    d = budget_result(model, model.queries["per_var"]).to_dict()
    assert d["value"] is None and "eps + 1/2" in d["expr"]
    d = budget_result(model, model.queries["per_rel"]).to_dict()
    assert d["value"] is None and d["expr"]["A"]["a"] == "eps" and d["expr"]["B"]["b"] == "1/2"
    assert d["privacy_loss_expr"] == {"A": "eps", "B": "1/2"} and d["calibration"] == {"A": "tight", "B": "tight"}
    d = budget_result(model, model.queries["ab"]).to_dict()
    assert d["value"] is None and d["releases"] == {"A": None, "B": 0.5}


def test_budget_with_combined_and_unprotected_variables() -> None:
    model = privspec.load("""
variable gender: categorical {F, M}
variable income: categorical {Low, High}
variable race: categorical {x, y, z}
variable region: categorical {n, s}
variable gi = gender * income
release R = counts(gi, race) with geometric(epsilon = 1)
release S = counts(region, race, income) with geometric(epsilon = 2) protect {race} exact totals(region)
""").model
    assert budget_on(model, {"gender"})[0] == 1                 # a combined variable counts as its parts
    assert budget_on(model, {"gi"})[0] == 3                     # {gender, income}: R 1 + S 2
    # income is neither protected nor an exact total in S: the noise covers it
    assert release_epsilon(model, model.releases["S"], {"income"}) == 2
    assert release_epsilon(model, model.releases["S"], {"region"}) == oo
    assert budget_table(model)[1] == ["gender", "income", "race", "region"]   # gi is not a dataset variable


# ---- the query kinds variance() and table() ---------------------------------------------------------------
RELVARS = """variable degree: categorical {BA, BSc, BEng}
variable band: categorical {b1, b2, b3, b4}
variable sex: categorical {F, M}
release D = counts(degree, band) with geometric(epsilon = 1) protect {band} exact totals(degree)
"""


@pytest.mark.parametrize("query, code", [
    ("query v = variance(D)", None),
    ("query v = variance(D, band)", None),
    ("query t = table(D, band, degree)", None),
    ("query v = variance(D, sex)", "E601"),
    ("query v = variance(degree)", "E204"),
    ("query v = variance()", "E205"),
    ("query v = variance(D, band, band)", "E205"),
    ("query v = table(D, 3)", "E205"),
    ("query v = table(D, epsilon = 1)", "E205"),
    ("query v = table(E)", "E201"),
    ("query v = tabel(D)", "E206"),
])
def test_release_queries_validate(query: str, code: str | None) -> None:
    spec = privspec.load(RELVARS + query)
    codes = [d.code for d in spec.check()]
    assert codes == ([] if code is None else [code])


def test_variance_is_exact_and_symbolic() -> None:
    model = privspec.load(RELVARS + "parameter e > 0\nrelease S = counts(sex) with geometric(epsilon = e)\n"
                          "release P = counts(degree, band) with geometric(epsilon = 1, calibration = paper) "
                          "protect {band} exact totals(degree)\n"
                          "query v = variance(D)\nquery m = variance(D, band)\nquery d = variance(D, degree)\n"
                          "query s = variance(S)\nquery p = variance(P)\nquery pm = variance(P, band)").model
    from privspec.backends import backend_for

    answer = {n: backend_for(q, "analyze").answer(model, q, "analyze") for n, q in model.queries.items()}
    # D (tight, the default): Algorithm 1 with a = e^(-eps) = e^(-1)
    a = sympy.exp(-1)
    s2 = 2 * a / (1 - a) ** 2
    assert answer["v"].value == 3 * s2                                   # (n_i - 1) s2 with n_i = 4, exactly
    assert sympy.simplify(answer["v"].extras["covariance"] + s2) == 0
    assert sympy.simplify(answer["v"].extras["noise_variance"] - s2) == 0
    assert sympy.simplify(answer["m"].value - 3 * 3 * s2) == 0           # 3 rows of (n - 1) s2
    assert answer["d"].value == 0                                        # exact totals
    assert answer["v"].extras["calibration"] == "tight" and answer["v"].extras["privacy_loss"] == 1
    # P (the paper's calibration): a = e^(-eps/2), exactly eps/2-private
    a = sympy.exp(sympy.Rational(-1, 2))
    s2 = 2 * a / (1 - a) ** 2
    assert sympy.simplify(answer["p"].value - 3 * s2) == 0
    assert sympy.simplify(answer["p"].extras["covariance"] + s2) == 0
    assert sympy.simplify(answer["pm"].value - 3 * 3 * s2) == 0
    assert answer["p"].extras["calibration"] == "paper"
    assert answer["p"].extras["privacy_loss"] == sympy.Rational(1, 2)
    assert answer["pm"].to_dict()["privacy_loss"] == 0.5
    e = model.parameters["e"].symbol
    d = answer["s"].to_dict()
    assert d["value"] is None and d["expr"] == str(2 * sympy.exp(-e / 2) / (1 - sympy.exp(-e / 2)) ** 2)


# ---- the university example (section 5.1) -----------------------------------------------------------------
def _make_university():
    spec = importlib.util.spec_from_file_location("make_university", SPECS / "data" / "make_university.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_university_raw_data_reproduce_table2_and_are_reproducible() -> None:
    raw = pd.read_csv(RAW, dtype=str, keep_default_na=False)
    assert len(raw) == 1400 and list(raw.columns) == ["id", "degree", "income", "sex"]
    model = privspec.load(UNIVERSITY).model
    release = model.releases["income_by_degree"]
    assert count_records(model, release, raw).tolist() == TABLE2
    made = _make_university().records()
    assert made.equals(raw)                                   # the seeded script makes this file


def test_university_release_is_the_seeded_privatize_output() -> None:
    model = privspec.load(UNIVERSITY).model
    release = model.releases["income_by_degree"]
    raw = pd.read_csv(RAW, dtype=str, keep_default_na=False)
    released = privatizer_for(release).privatize(model, release, raw, seed=2024)
    on_disk = pd.read_csv(RELEASED, dtype={"count": "int64"}, keep_default_na=False)
    assert released.astype({"count": "int64"}).equals(on_disk)
    table = read_released(release, on_disk)
    assert table.sum(axis=1).tolist() == [231, 392, 777]    # exact totals by programme


def test_university_analyze_json() -> None:
    code, out, err = run("analyze", str(UNIVERSITY), "--format", "json")
    assert code == 0, err
    q = json.loads(out)["queries"]
    assert set(q) == {"budget", "budget_income", "cell_var", "band_var"}
    assert q["budget"]["value"] == {"degree": "inf", "income": 2, "sex": 0}
    assert q["budget_income"]["value"] == {"{income, sex}": 2}
    # the tight calibration (the default): a = e^(-eps) = e^(-2), exactly 2-private on {income}
    assert q["cell_var"]["expr"] == "14*exp(-2)/(1 - exp(-2))**2"
    assert q["cell_var"]["value"] == pytest.approx(14 * np.exp(-2) / (1 - np.exp(-2)) ** 2)
    assert q["cell_var"]["cells_per_total"] == 8 and q["cell_var"]["method"] == "algorithm1"
    assert q["cell_var"]["calibration"] == "tight" and q["cell_var"]["privacy_loss"] == 2
    assert q["band_var"]["expr"] == "42*exp(-2)/(1 - exp(-2))**2"
    assert "charged its declared epsilon" in q["budget"]["note"]


def test_university_with_the_papers_calibration(tmp_path: Path) -> None:
    # calibration = paper keeps the paper's noise (a = e^(-1)): the old numbers, and
    # the result says that this noise is in fact only 1-private while 2 is charged
    spec = tmp_path / "u.privspec"
    spec.write_text(UNIVERSITY.read_text().replace("geometric(epsilon = 2)",
                                                   "geometric(epsilon = 2, calibration = paper)"))
    code, out, err = run("analyze", str(spec), "--format", "json")
    assert code == 0, err
    q = json.loads(out)["queries"]
    assert q["cell_var"]["expr"] == "14*exp(-1)/(1 - exp(-1))**2"
    assert q["band_var"]["expr"] == "42*exp(-1)/(1 - exp(-1))**2"
    assert q["cell_var"]["calibration"] == "paper" and q["cell_var"]["privacy_loss"] == 1
    assert q["budget"]["value"] == {"degree": "inf", "income": 2, "sex": 0}      # the declared charge
    assert "income_by_degree (Algorithm 1, calibration = paper) in fact spends half" in q["budget"]["note"]


def test_university_run_on_the_released_table() -> None:
    code, out, err = run("run", str(UNIVERSITY), "--data", str(RELEASED), "--format", "json")
    assert code == 0, err
    q = json.loads(out)["queries"]
    rel = q["released"]
    assert rel["kind"] == "table" and rel["value"]["variables"] == ["degree", "income"]
    assert rel["value"]["shape"] == [3, 8]
    assert rel["totals"]["data"] == [231, 392, 777] and rel["n"] == 1400
    assert rel["se"]["data"][0][0] == pytest.approx(np.sqrt(14 * np.exp(-2) / (1 - np.exp(-2)) ** 2))
    assert rel["calibration"] == "tight" and rel["privacy_loss"] == 2
    assert q["by_degree"]["value"]["data"] == [231, 392, 777] and q["by_degree"]["se"]["data"] == [0, 0, 0]
    assert sum(q["by_band"]["value"]["data"]) == 1400
    # a file bound to the release by name works the same
    code, out2, err = run("run", str(UNIVERSITY), "--data", f"income_by_degree={RELEASED}", "--format", "json")
    assert code == 0, err
    assert json.loads(out2) == json.loads(out)


def test_university_simulate() -> None:
    code, out, err = run("simulate", str(UNIVERSITY), "--n", "1400", "--reps", "3000", "--seed", "4",
                         "--format", "json", "--query", "cell_var", "--query", "by_band")
    assert code == 0, err
    q = json.loads(out)["queries"]
    # empirical mean cell variance over 24 cells x 3000 reps: within 3% of the exact one
    assert q["cell_var"]["empirical"] == pytest.approx(q["cell_var"]["value"], rel=0.03)
    emp, se = np.array(q["by_band"]["empirical_se"]["data"]), np.array(q["by_band"]["se"]["data"])
    assert emp == pytest.approx(se, rel=0.06)
    mean, truth = np.array(q["by_band"]["value"]["data"]), np.array(q["by_band"]["data"]["data"])
    assert np.abs(mean - truth).max() < 4.5 * se[0] / np.sqrt(3000)


# ---- privatize from the command line -----------------------------------------------------------------------
def test_privatize_a_release(tmp_path: Path) -> None:
    out = tmp_path / "released.csv"
    code, _, err = run("privatize", str(UNIVERSITY), "--mechanism", "income_by_degree", "--input", str(RAW),
                       "--output", str(out), "--seed", "2024")
    assert code == 0, err
    assert "wrote 24 rows" in err
    assert out.read_bytes() == RELEASED.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["released.csv"]      # no temporary left behind


def test_privatize_nonnegative(tmp_path: Path) -> None:
    # seed 2033: a release of the university table with negative counts (the tight
    # calibration's smaller noise leaves the seed-2024 release without any)
    out, plain = tmp_path / "released.csv", tmp_path / "plain.csv"
    code, _, err = run("privatize", str(UNIVERSITY), "--mechanism", "income_by_degree", "--input", str(RAW),
                       "--output", str(out), "--seed", "2033", "--nonnegative")
    assert code == 0, err
    table = pd.read_csv(out)
    assert (table["count"] >= 0).all()
    assert table.groupby("degree", sort=False)["count"].sum().tolist() == [231, 392, 777]
    code, _, err = run("privatize", str(UNIVERSITY), "--mechanism", "income_by_degree", "--input", str(RAW),
                       "--output", str(plain), "--seed", "2033")
    assert code == 0, err
    assert (pd.read_csv(plain)["count"] < 0).any()   # the seeded release did have negatives


def test_privatize_nonnegative_needs_a_release(tmp_path: Path) -> None:
    code, _, err = run("privatize", str(SPECS / "language.privspec"), "--mechanism", "urn", "--input", str(RAW),
                       "--output", str(tmp_path / "x.csv"), "--nonnegative")
    assert code == 2 and "releases" in err


def test_privatize_bad_records_write_nothing(tmp_path: Path) -> None:
    raw = tmp_path / "raw.csv"
    raw.write_text("degree,income\nBA,<30k\nBA,lots\nPhD,<30k\nBSc,\n")
    out = tmp_path / "out.csv"
    code, _, err = run("privatize", str(UNIVERSITY), "--mechanism", "income_by_degree", "--input", str(raw),
                       "--output", str(out))
    assert code == 1 and "D004" in err and "rows 4" in err and not out.exists()
    raw.write_text("degree,income\nBA,<30k\nBA,lots\nPhD,<30k\n")
    code, _, err = run("privatize", str(UNIVERSITY), "--mechanism", "income_by_degree", "--input", str(raw),
                       "--output", str(out))
    assert code == 1 and "D601" in err and "rows 3" in err and "'PhD'" in err and not out.exists()
    assert "Traceback" not in err


def test_privatize_symbolic_epsilon_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "s.privspec"
    spec.write_text("parameter e > 0\nvariable degree: categorical {BA, BSc, BEng}\n"
                    "release D = counts(degree) with geometric(epsilon = e)\n")
    code, _, err = run("privatize", str(spec), "--mechanism", "D", "--input", str(RAW),
                       "--output", str(tmp_path / "o.csv"))
    assert code == 1 and "B601" in err and not (tmp_path / "o.csv").exists()


def test_privatize_combined_variable_from_its_parts() -> None:
    model = privspec.load("""variable gender: categorical {F, M}
variable income: categorical {Low, High}
variable gi = gender * income
release R = counts(gi) with geometric(epsilon = 3)""").model
    raw = pd.DataFrame({"gender": ["F", "M", "M"], "income": ["High", "Low", "Low"]})
    assert count_records(model, model.releases["R"], raw).tolist() == [0, 1, 2, 0]


# ---- reading released tables back -------------------------------------------------------------------------
@pytest.mark.parametrize("edit, code", [
    (lambda t: t.drop(index=3), "D603"),
    (lambda t: pd.concat([t, t.iloc[[5]]]), "D603"),
    (lambda t: t.assign(count=t["count"].astype(str).where(t.index != 2, "1.5")), "D602"),
    (lambda t: t.assign(income=t["income"].where(t.index != 4, "rich")), "D601"),
    (lambda t: t.drop(columns="count"), "D003"),
])
def test_released_table_errors(tmp_path: Path, edit, code: str) -> None:
    bad = tmp_path / "bad.csv"
    edit(pd.read_csv(RELEASED, dtype=str, keep_default_na=False)).to_csv(bad, index=False)
    rc, out, err = run("run", str(UNIVERSITY), "--data", str(bad), "--query", "released")
    assert rc == 1 and code in err and out == "" and "Traceback" not in err


def test_tidy_layout_round_trip() -> None:
    model = privspec.load(RELVARS).model
    release = model.releases["D"]
    table = np.arange(12).reshape(3, 4) - 3
    frame = tidy(release, table)
    assert list(frame.columns) == ["degree", "band", "count"] and len(frame) == 12
    assert (read_released(release, frame.astype(str)) == table).all()
    assert (read_released(release, frame.iloc[::-1]) == table).all()      # row order does not matter
    lay = Layout.of(release)
    assert (lay.from_groups(lay.to_groups(table)) == table).all()
    with pytest.raises(DataError):
        read_released(release, frame.iloc[1:])


# ---- layouts: exact totals on any axes, combined variables ----------------------------------------------------
LAYOUTS = """variable region: categorical {n, s}
variable band: categorical {b1, b2, b3}
variable degree: categorical {BA, BSc, BEng}
variable gender: categorical {F, M}
variable income: categorical {Low, High}
variable gi = gender * income
release R1 = counts(band, degree) with geometric(epsilon = 1) protect {band} exact totals(degree)
release R2 = counts(region, band, degree) with geometric(epsilon = 1) protect {band} exact totals(region, degree)
release R3 = counts(gi, region) with geometric(epsilon = 1/2) protect {gi} exact totals(region)
release R4 = counts(band, gi) with geometric(epsilon = 2)
"""


@pytest.mark.parametrize("name, totals_axes", [("R1", (1,)), ("R2", (0, 2)), ("R3", (1,)), ("R4", None)])
def test_noisy_counts_keep_the_exact_totals_on_any_axes(name: str, totals_axes) -> None:
    from privspec.backends.releases.backend import noisy_counts

    model = privspec.load(LAYOUTS).model
    release = model.releases[name]
    shape = Layout.of(release).shape
    rng = np.random.default_rng(31)
    f = rng.integers(0, 50, size=shape)
    g = noisy_counts(model, release, f, rng)
    assert g.shape == f.shape and g.dtype == np.int64 and not (g == f).all()
    if totals_axes is not None:
        other = tuple(i for i in range(len(shape)) if i not in totals_axes)
        assert (g.sum(axis=other) == f.sum(axis=other)).all()


def test_simulate_with_independent_populations(tmp_path: Path) -> None:
    spec = tmp_path / "s.privspec"
    spec.write_text(LAYOUTS + "population band ~ categorical(1/2, 1/4, 1/4)\n"
                              "population (gender, income) ~ counts [[3, 1], [2, 2]]\n"
                              "query v = variance(R4)\nquery t = table(R4, gi)\n")
    code, out, err = run("simulate", str(spec), "--n", "500", "--reps", "4000", "--seed", "2", "--format", "json")
    assert code == 0, err
    q = json.loads(out)["queries"]
    # geometric mechanism at eps = 2: s2 = 2e^-1/(1 - e^-1)^2 per cell; within 5% over 6 cells x 4000 reps
    assert q["v"]["empirical"] == pytest.approx(q["v"]["value"], rel=0.05)
    assert sum(q["t"]["data"]["data"]) == 500 and len(q["t"]["data"]["data"]) == 4


def test_simulate_needs_a_population(tmp_path: Path) -> None:
    spec = tmp_path / "s.privspec"
    spec.write_text(LAYOUTS + "query t = table(R1)\n")
    code, out, err = run("simulate", str(spec), "--n", "100", "--reps", "10")
    assert code == 1 and "B602" in err and out == ""


def test_run_with_a_symbolic_epsilon_keeps_the_se_symbolic(tmp_path: Path) -> None:
    spec = tmp_path / "s.privspec"
    spec.write_text(UNIVERSITY.read_text().replace("epsilon = 2", "epsilon = e").replace(
        "variable degree", "parameter e > 0\nvariable degree"))
    code, out, err = run("run", str(spec), "--data", str(RELEASED), "--format", "json", "--query", "released")
    assert code == 0, err
    rel = json.loads(out)["queries"]["released"]
    assert "se" not in rel and "exp(-e/2)" in rel["se_expr"] and rel["totals"]["data"] == [231, 392, 777]
    # sqrt(14 * 2a/(1 - a)^2) with the tight a = e^(-e)
    assert rel["se_expr"] == "sqrt(14)*exp(-e/2)/Abs(1 - exp(-e))" and str(rel["privacy_loss"]) == "e"


# ---- docs/releases.md prints what the code does ------------------------------------------------------------
DOC = ROOT / "docs" / "releases.md"


def test_releases_doc_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every `privspec ...` command of the page's sh blocks (continuation lines joined)
    exits 0 from the repository root's point of view; outputs go to a temporary folder."""
    import re
    import shlex

    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    lines = [ln for block in blocks for ln in block.replace("\\\n", " ").splitlines()]
    commands = [ln for ln in lines if ln.startswith("privspec ")]
    assert len(commands) == 4
    monkeypatch.chdir(tmp_path)
    for line in commands:
        argv = [str(ROOT / a) if a.startswith(("specs/", "docs/")) else a for a in shlex.split(line)[1:]]
        argv = [a.replace("=specs/", f"={ROOT}/specs/") for a in argv]
        code, out, err = run(*argv)
        assert code == 0, (line, err)
    # the privatize line writes the seeded release that the page excerpts
    assert (tmp_path / "released.csv").read_bytes() == RELEASED.read_bytes()
    excerpt = re.search(r"```\ndegree,income,count\n(.*?)\.\.\.\n```", text, re.S).group(1).splitlines()
    assert RELEASED.read_text().splitlines()[1:1 + len(excerpt)] == excerpt


def test_releases_doc_table1_block_is_the_output() -> None:
    text = DOC.read_text(encoding="utf-8")
    shown = text.split("`privspec analyze specs/releases.privspec --query budget`:\n\n```\n", 1)[1].split("```", 1)[0]
    code, out, err = run("analyze", str(RELEASES), "--query", "budget")
    assert code == 0, err
    printed = [ln.rstrip() for ln in out.splitlines()[2:]]       # the spec title and a blank line first
    assert printed == shown.rstrip("\n").splitlines()


def test_releases_doc_variance_numbers() -> None:
    """The university numbers and the calibration comparison table of the page."""
    import re

    text = DOC.read_text(encoding="utf-8")

    def s2(a: float) -> float:
        return 2 * a / (1 - a) ** 2

    rows = re.findall(r"^\| (\d) \| (paper|tight) \| `e\^\(−([\d/]+)\)` \| ([\d.]+) \| ([\d.]+) \(([\d.]+)\) \| "
                      r"([\d.]+) \|", text, re.M)
    assert len(rows) == 4
    for eps, cal, exponent, var, cell, sd, band in rows:
        a = float(np.exp(-float(sympy.Rational(exponent))))
        assert a == pytest.approx(np.exp(-int(eps) if cal == "tight" else -int(eps) / 2))
        model = privspec.load(UNIVERSITY.read_text().replace(
            "geometric(epsilon = 2)", f"geometric(epsilon = {eps}, calibration = {cal})")).model
        from privspec.backends.releases.backend import variance_of

        release = model.releases["income_by_degree"]
        exact_cell = float(variance_of(model, release, ["degree", "income"]))
        exact_band = float(variance_of(model, release, ["income"]))
        assert float(var) == pytest.approx(s2(a), abs=1e-3)
        assert float(cell) == pytest.approx(exact_cell, abs=6e-3) and exact_cell == pytest.approx(7 * s2(a))
        assert float(sd) == pytest.approx(np.sqrt(exact_cell), abs=6e-3)
        assert float(band) == pytest.approx(exact_band, abs=6e-3) and exact_band == pytest.approx(21 * s2(a))
    # 14 e^(-2)/(1 - e^(-2))^2 = 7 s2(e^(-2)) and so on
    for shown, exact in (("2.534", 7 * s2(np.exp(-2))), ("7.603", 21 * s2(np.exp(-2))),
                         ("12.89", 7 * s2(np.exp(-1))), ("38.67", 21 * s2(np.exp(-1)))):
        assert f"≈ {shown}" in text and float(shown) == pytest.approx(exact, abs=6e-3)
