"""The Python API (issue 16): everything the runner does, from Python, DataFrames in and
out, over the same objects (the command line is a thin layer over privspec.api)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.cli import main
from privspec.errors import DataError, SpecError

ROOT = Path(__file__).resolve().parent.parent
URN = ROOT / "specs" / "urn.privspec"
URN_RAW = ROOT / "specs" / "data" / "urn_raw.csv"


def cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main([str(a) for a in argv], stdout=out, stderr=err), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def urn():
    return privspec.load(URN)


@pytest.fixture(scope="module")
def reports(urn, tmp_path_factory):
    """The urn's raw data privatized with 'urn' (seed 1), as a DataFrame and as a file."""
    raw = pd.read_csv(URN_RAW)
    frame = urn.privatize(raw, "urn", seed=1)
    path = tmp_path_factory.mktemp("api") / "urn_reports.csv"
    frame.to_csv(path, index=False)
    return frame, path


def test_analyze_is_the_runners_json(urn) -> None:
    res = urn.analyze()
    code, out, _ = cli("analyze", URN, "--format", "json")
    assert code == 0 and res.ok
    assert res.to_dict() == json.loads(out)
    assert set(res) == set(json.loads(out)["queries"])
    assert res["cov"].value == pytest.approx(0.6841333, abs=1e-6)


def test_privatize_returns_the_clis_reports(urn, reports, tmp_path) -> None:
    frame, path = reports
    code, _, err = cli("privatize", URN, "--mechanism", "urn", "--input", URN_RAW, "--output",
                       tmp_path / "o.csv", "--seed", "1")
    assert code == 0, err
    assert isinstance(frame, pd.DataFrame)
    pd.testing.assert_frame_equal(frame.astype(str), pd.read_csv(tmp_path / "o.csv", dtype=str),
                                  check_dtype=False)


@pytest.mark.parametrize("how", ["path", "frame", "mapping", "default-key"])
def test_run_takes_a_path_a_frame_or_a_mapping(urn, reports, how) -> None:
    frame, path = reports
    data = {"path": path, "frame": frame, "mapping": {"urn": frame}, "default-key": {None: str(path)}}[how]
    res = urn.run(data, queries=["w", "w_mle"])
    code, out, err = cli("run", URN, "--data", path, "--query", "w", "--query", "w_mle", "--format", "json")
    assert code == 0 and res.ok, err
    assert res.to_dict()["queries"] == json.loads(out)["queries"]


def test_a_failed_query_stops_nothing_else(urn) -> None:
    raw = pd.read_csv(URN_RAW)  # plain categories: not subset reports
    res = urn.run(raw, queries=["w", "cov"])
    assert not res.ok and list(res) == ["cov"]
    assert res.failures["w"].diagnostics[0].code == "D010"
    assert "<DataFrame>" in res.failures["w"].render()            # the table is named, as a file would be
    with pytest.raises(KeyError, match="was not answered"):
        res["w"]
    frame = res.to_frame()                                        # tidy: one number a row
    assert list(frame.columns) == ["query", "kind", "label", "statistic", "value", "error"]
    assert frame.to_dict("records")[0] == {"query": "w", "kind": "estimate", "label": "", "statistic": "",
                                           "value": pytest.approx(float("nan"), nan_ok=True), "error": "D010"}
    cov = frame[frame["query"] == "cov"]
    assert cov["statistic"].tolist() == ["value"] and cov["error"].tolist() == [""]
    assert cov["value"].dtype == float and cov["value"].iloc[0] == pytest.approx(0.6841333, abs=1e-6)


def test_simulate(urn) -> None:
    res = urn.simulate(n=500, reps=20, seed=3, queries=["cov"])
    assert res.ok and res.verb == "simulate" and "cov" in res


def test_errors_are_raised_for_the_whole_call(urn, reports) -> None:
    bad = privspec.load("variable x: categorical {a, b}\nmechanism m = subset(x, uniform)")
    with pytest.raises(SpecError):
        bad.analyze()
    with pytest.raises(ValueError, match="no mechanism named 'nope'"):
        urn.run({"nope": reports[0]})
    with pytest.raises(TypeError, match="path or a pandas DataFrame"):
        urn.run({"urn": [1, 2]})
    with pytest.raises(KeyError, match="did you mean 'urn'"):
        urn.privatize(pd.read_csv(URN_RAW), "unr")
    with pytest.raises(ValueError, match="simulate needs"):
        urn.simulate(n=0, reps=1)


def test_d006_from_a_shared_frame() -> None:
    spec = privspec.load(ROOT / "specs" / "interval_privacy.privspec")
    frame = pd.DataFrame({"salary": ["(0, 75]"] * 3, "score": ["(-inf, 0.5]"] * 3})
    with pytest.raises(DataError) as e:
        spec.run(frame)
    assert e.value.diagnostics[0].code == "D006" and "<DataFrame>" in e.value.render()


def test_spec_repr_is_short_and_html_is_a_table(urn) -> None:
    assert repr(urn) == ("<Spec 'Obfuscated urn: subset privacy on four colors': 1 variable, 1 population, "
                         "4 mechanisms, 10 queries>")   # cond: specs/identifiability.privspec
    one = privspec.load("variable x: categorical {a, b}\nmechanism m = grr(x, epsilon = 1)\nquery c = leakage(m)")
    assert repr(one) == "<Spec '<string>': 1 variable, 1 mechanism, 1 query>"
    html = urn._repr_html_()
    assert html.startswith("<table>") and html.count("<tr>") == 1 + 1 + 4 + 10
    assert "<td>mechanism</td><td>urn</td><td><code>subset(color, uniform)</code></td>" in html
    bad = privspec.load("variable x: categorical {a}")
    assert repr(bad) == "<Spec '<string>': 1 error>" and "E309" in bad._repr_html_()


def test_results_render_like_the_cli(urn) -> None:
    res = urn.analyze(queries=["cov", "v_mom"])
    for fmt in ("text", "markdown", "latex"):
        code, out, _ = cli("analyze", URN, "--query", "cov", "--query", "v_mom", "--format", fmt)
        assert code == 0 and res.render(fmt) == out.rstrip("\n")
    assert np.isclose(json.loads(res.to_json())["queries"]["cov"]["value"], 0.6841333)


# ---- typed results ----------------------------------------------------------------------------
def test_estimates_have_statsmodels_accessors(urn, reports) -> None:
    res = urn.run(reports[0], queries=["w_mle"])
    r, d = res["w_mle"], res.to_dict()["queries"]["w_mle"]
    assert list(r.params.index) == ["black", "red", "green", "blue"]
    assert r.params.to_dict() == pytest.approx(d["value"]) and r.bse.to_dict() == pytest.approx(d["se"])
    assert r.nobs == d["n"] == 2000 and r.method == "mle" and r.se_kind == "population"
    ci = r.conf_int()                               # at 95%: the back end's profile likelihood intervals
    assert ci.loc["black"].tolist() == pytest.approx(d["ci95"]["black"])
    assert ci.attrs["method"] == r.ci_method == d["ci_method"] == "profile likelihood"
    narrow = r.conf_int(0.1)                        # another level: the same method, asked again
    assert narrow.attrs == {"method": "profile likelihood", "level": pytest.approx(0.9)}
    assert np.all(narrow["lower"] > ci["lower"]) and np.all(narrow["upper"] < ci["upper"])
    frame = r.to_frame()
    assert list(frame.columns) == ["estimate", "se", "lower", "upper"]
    html = r._repr_html_()
    for label, row in frame.iterrows():             # the HTML table, cell by cell
        assert f"<th>{label}</th>" in html
        for x in row:
            assert f"<td>{x:.6g}</td>" in html
    cov = r.cov_params()                            # the full covariance: negative off the diagonal
    assert np.diag(cov) == pytest.approx(r.bse.to_numpy() ** 2) and np.all(cov.to_numpy()[np.triu_indices(4, 1)] < 0)
    assert cov.sum(axis=1).to_numpy() == pytest.approx(0, abs=1e-12)


def test_joint_tables_are_multiindexed() -> None:
    spec = privspec.load(ROOT / "specs" / "castell_example.privspec")
    res = spec.run(ROOT / "specs" / "data" / "castell_example_reports.csv", queries=["castell"])
    r, d = res["castell"], res.to_dict()["queries"]["castell"]
    assert r.params.index.names == ["A", "B"] and r.params.loc[("a1", "b2")] == pytest.approx(-0.15)
    assert r.to_frame().shape == (4, 4) and r.conf_int().loc[("a1", "b2"), "upper"] == pytest.approx(0.841816, abs=1e-6)
    np.testing.assert_allclose(r.params.to_numpy().reshape(2, 2), np.asarray(d["value"]["data"], dtype=float))


def test_matrices_and_moments_are_labelled_frames(urn) -> None:
    res = urn.analyze()
    d = res.to_dict()["queries"]
    cov = res["v_mom"].cov_params()
    assert list(cov.index) == list(cov.columns) == d["v_mom"]["value"]["rows"]
    np.testing.assert_allclose(cov.to_numpy(), np.asarray(d["v_mom"]["value"]["data"], dtype=float))
    mats = res["mats"].to_frame()
    assert mats.loc[("Q", "black"), "red"] == pytest.approx(1 / 3) and ("gamma", "gamma") in mats.index
    cov_row = res["cov"].to_frame()
    assert cov_row.loc["coverage", "exact"] == "5131/7500"
    html = res["v_mom"]._repr_html_()
    assert html.count("<tr") == 1 + 4 and "<td>0.5049</td>" in html and "<th>black</th>" in html


def test_test_results_have_statistic_df_pvalue() -> None:
    from privspec.results.kinds import HypothesisTest
    from privspec.results.values import TestResult

    r = HypothesisTest(TestResult("pearson", 3.2, 1.0, 0.0736), n=500, calibration="permutation")
    assert (r.statistic, r.df, r.pvalue, r.method, r.nobs) == (3.2, 1.0, 0.0736, "pearson", 500)
    assert r.to_frame().to_dict("records") == [{"method": "pearson", "statistic": 3.2, "df": 1.0, "pvalue": 0.0736}]


# ---- the command line around the API: progress and --help --------------------------------------
class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("quiet", [False, True])
def test_progress_bars_on_a_terminal_only(quiet: bool) -> None:
    argv = ["simulate", str(URN), "--query", "w", "--n", "200", "--reps", "30", "--seed", "1"]
    tty, out = _Terminal(), io.StringIO()
    assert main(argv + (["--quiet"] if quiet else []), stdout=out, stderr=tty) == 0
    assert ("simulate w" in tty.getvalue()) is not quiet          # tqdm's bar, named after the query
    pipe = io.StringIO()
    assert main(argv, stdout=io.StringIO(), stderr=pipe) == 0
    assert "simulate w" not in pipe.getvalue() and "it/s" not in pipe.getvalue()


def test_progress_argument_of_the_long_calls(urn, capsys, monkeypatch) -> None:
    """``progress=``: True draws a bar on standard error, False none, None (the default) only
    where someone watches: not under pytest (stderr captured), yes on a terminal; None
    keeps an enclosing choice (the command line's)."""
    from privspec.progress import enabled

    def bar(**kw) -> str:
        urn.simulate(n=200, reps=30, seed=1, queries=["w"], **kw)
        return capsys.readouterr().err

    assert "simulate w" in bar(progress=True)
    assert bar(progress=False) == "" and bar() == ""               # auto: off, output is not a terminal
    tty = _Terminal()
    monkeypatch.setattr("sys.stderr", tty)
    urn.simulate(n=200, reps=30, seed=1, queries=["w"])             # auto: on, a terminal watches
    assert "simulate w" in tty.getvalue()
    monkeypatch.undo()
    mine = io.StringIO()
    with enabled(True, stream=mine):                                 # the command line's choice stands
        urn.simulate(n=200, reps=30, seed=1, queries=["w"])
        assert "simulate w" in mine.getvalue()
        drawn = len(mine.getvalue())
        urn.simulate(n=200, reps=30, seed=1, queries=["w"], progress=False)  # unless the call says no
        assert len(mine.getvalue()) == drawn and capsys.readouterr().err == ""
    with pytest.raises(TypeError, match="progress must be"):
        urn.simulate(n=200, reps=3, queries=["w"], progress="yes")


@pytest.mark.parametrize("verb", ["check", "analyze", "run", "privatize", "simulate", "compare"])
def test_every_option_in_help_is_described_with_its_default(verb: str) -> None:
    import re
    import contextlib

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main([verb, "--help"]) == 0
    text = buf.getvalue()
    options = text[text.index("options:"):]
    entries = re.split(r"\n  (?=-)", options)[1:]
    assert entries, text
    for entry in entries:
        name = entry.split()[0].rstrip(",")
        if name in ("-h", "--help"):
            continue
        words = " ".join(entry.split())
        assert re.search(r"default|required|repeatable", words), f"{verb} {name}: {words}"


# ---- distribution functions and plots -----------------------------------------------------------
@pytest.fixture(scope="module")
def bcdeter_cdf():
    spec = privspec.load(ROOT / "specs" / "bcdeter.privspec")
    return spec.run(ROOT / "tests" / "data" / "bcdeter.csv", queries=["F"])["F"]


def test_npmle_results_answer_at_any_point(bcdeter_cdf) -> None:
    F = bcdeter_cdf
    x = np.array([5.0, 17.0, 31.0, 48.0])
    assert np.all(np.diff(F.cdf(x)) >= 0) and F.survival(x) == pytest.approx(1 - F.cdf(x))
    q = F.quantile([0.25, 0.5])
    assert np.all(F.cdf(q) >= [0.25, 0.5])                     # the quantile reaches its probability
    band = F.extras["band"]                                    # the run's band at the quartiles
    mine = F.band(band["x"])
    assert mine["lower"].tolist() == pytest.approx(band["lower"]) and mine["upper"].tolist() == pytest.approx(band["upper"])
    wider = F.band(band["x"], alpha=0.01)
    assert np.all(wider["lower"] <= mine["lower"] + 1e-12) and np.all(wider["upper"] >= mine["upper"] - 1e-12)



def test_moments_of_a_cdf_result_are_the_moment_queries(bcdeter_cdf) -> None:
    """``F.mean()`` / ``F.moment(k)`` answer as ``estimate mean/moment(Y) by npmle`` on the same
    data: the same estimate, jackknife standard error and interval; other levels widen it."""
    spec = privspec.load(ROOT / "specs" / "bcdeter.privspec")
    query = spec.run(ROOT / "tests" / "data" / "bcdeter.csv", queries=["mean_npmle"])["mean_npmle"]
    m = bcdeter_cdf.mean()
    assert m["estimate"] == pytest.approx(query.value, rel=1e-12)
    assert m["se"] == pytest.approx(query.extras["se"], rel=1e-9) and m["se"] > 0
    assert [m["lower"], m["upper"]] == pytest.approx(query.extras["ci95"], rel=1e-9)
    assert m["range_lower"] <= m["estimate"] <= m["range_upper"] and m["se_kind"] == "population"
    wide = bcdeter_cdf.moment(1, alpha=0.01)
    assert wide["lower"] < m["lower"] and wide["upper"] > m["upper"] and wide["se"] == pytest.approx(m["se"])
    second = bcdeter_cdf.moment(2)
    assert second["estimate"] > m["estimate"] ** 2 and second["se"] > 0      # Var(Y) > 0
    assert bcdeter_cdf.mean(se="conditional")["se"] < m["se"]               # privacy noise only


@pytest.mark.slow   # 9 s of matplotlib; test_cli_plot_writes_the_pictures draws in the quick run
def test_plots_return_figures(urn, reports, bcdeter_cdf) -> None:
    import matplotlib.pyplot as plt

    def labels(fig) -> tuple[str, str, str]:
        ax = fig.axes[0]
        return " ".join(ax.get_title().split()), ax.get_xlabel(), ax.get_ylabel()

    for r in (bcdeter_cdf, urn.analyze(queries=["v_mom"])["v_mom"], urn.run(reports[0], queries=["w"])["w"]):
        fig = r.plot()
        assert len(fig.axes) >= 1 and fig.axes[0].has_data()
        plt.close(fig)
    # every plot in the spec's own words: query, estimand, mechanism, estimator, variable
    fig = urn.run(reports[0], queries=["w_mle"])["w_mle"].plot()
    assert labels(fig) == ("w_mle: estimate of distribution(color) from urn by mle", "P(color = category)", "color")
    assert "profile likelihood" in fig.axes[0].get_legend().get_texts()[0].get_text()
    assert labels(bcdeter_cdf.plot()) == ("F: estimate of cdf(months) from visits by npmle (constrained Newton, cnm)",
                                          "months", "F(months) = P(months <= x)")
    assert labels(urn.analyze(queries=["v_mom"])["v_mom"].plot()) == (
        "v_mom: avar of distribution(color) from urn by mom", "color", "color")
    planning = privspec.load(ROOT / "specs" / "planning.privspec").analyze(queries=["pw", "n_se"])
    pw, n_se = planning["pw"], planning["n_se"]
    fig = pw.plot()                                  # the power curve over n, not one dot
    curve, point = fig.axes[0].get_lines()[0], fig.axes[0].get_lines()[1]
    assert curve.get_xdata().tolist() == pw.extras["curve"]["n"] and curve.get_ydata().tolist() == pw.extras["curve"]["power"]
    assert (point.get_xdata()[0], point.get_ydata()[0]) == (5000, pw.value)
    assert labels(fig)[1:] == ("respondents n", "power") and labels(fig)[0].startswith("pw: power of the one-sample")
    fig = n_se.plot()                                # the criterion over n, the target and the size marked
    ax = fig.axes[0]
    assert labels(fig) == ("n_se: sample size for max_se <= 0.01 (distribution(race) from rr2)", "respondents n",
                           "max_se")
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert lines["target max_se <= 0.01"].get_ydata()[0] == 0.01 and lines["n = 7,802"].get_xdata()[0] == 7802
    se = lines["max_se"].get_ydata()
    assert np.all(np.diff(se) < 0) and se[0] > 0.01 > se[-1]        # falls through the target
    plt.close("all")
    with pytest.raises(TypeError, match="not an estimated distribution function"):
        urn.analyze(queries=["cov"])["cov"].cdf(0.5)


def test_cli_plot_writes_the_pictures(tmp_path) -> None:
    code, _, err = cli("run", ROOT / "specs" / "bcdeter.privspec", "--data", ROOT / "tests" / "data" / "bcdeter.csv",
                       "--plot", tmp_path / "pics")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "pics").iterdir()) == ["F.png"]   # the means are numbers: no picture
    assert (tmp_path / "pics" / "F.png").read_bytes()[:4] == b"\x89PNG" and "wrote 1 picture to" in err


def test_results_html_lists_answers_and_failures(urn) -> None:
    res = urn.run(pd.read_csv(URN_RAW), queries=["w", "cov"])
    html = res._repr_html_()
    assert "<h4>cov</h4>" in html and "<td>0.684133</td>" in html and "not answered: D010" in html


# ---- every kind of result is a labelled table -----------------------------------------------------
def _cells(html: str) -> list[str]:
    import re

    return [re.sub(r"\s+", " ", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", html, re.S)]


@pytest.mark.parametrize("path", [p if p.stem not in ("planning", "language", "randomized_response")
                                  else pytest.param(p, marks=pytest.mark.slow)
                                  for p in sorted((ROOT / "specs").glob("*.privspec"))], ids=lambda p: p.stem)
def test_every_analysis_result_is_a_labelled_table(path) -> None:
    """No result falls back to key/value rows, and the HTML repr shows the frame cell by cell."""
    for name, r in privspec.load(path).analyze().items():
        frame = r.to_frame()
        assert list(frame.columns) != ["key", "value"], f"{path.stem}.{name} ({r.kind})"
        cells = _cells(r._repr_html_())
        for value in frame.to_numpy().ravel():
            if isinstance(value, float) and np.isnan(value):
                continue
            shown = f"{value:.6g}" if isinstance(value, float) else str(value)
            assert any(c == shown or (isinstance(value, float) and c and _close(c, value)) for c in cells), \
                f"{path.stem}.{name}: {value!r} not in its HTML table"


def _close(cell: str, value: float) -> bool:
    try:
        return float(cell) == pytest.approx(value, rel=1e-5, abs=1e-12) or (np.isinf(value) and cell == str(value))
    except ValueError:
        return False


def test_mapping_results_are_rows_per_group() -> None:
    castell = privspec.load(ROOT / "specs" / "castell_example.privspec").analyze(queries=["b", "th"])
    b = castell["b"].to_frame()
    assert list(b.index) == ["w=1", "w=2", "theorem4[A,B]"]
    assert b.loc["w=2", "attributes"] == "A, B" and b.loc["w=2", "castell"] == pytest.approx(32 / 45)
    assert b.loc["theorem4[A,B]", "bound"] == pytest.approx(1 / 9) and np.isnan(b.loc["w=1", "bound"])
    th = castell["th"].to_frame()
    assert th.loc["w=2", "n_star"] == pytest.approx(256 / 9) and th.loc["w=2", "eps_star"] == np.inf
    assert th.loc["w_star", "value"] == pytest.approx(1.160964, abs=1e-6)
    leak = privspec.load(URN).analyze(queries=["leak"])["leak"].to_frame()
    assert list(leak.index) == ["size", "mutual_information", "prediction"]
    assert leak.loc["prediction", "value"] == pytest.approx(0.8566666666666667)
    budget = privspec.load(ROOT / "specs" / "releases.privspec").analyze(queries=["budget"])["budget"].to_frame()
    assert budget.index.name == "variable" and list(budget.columns) == ["budget"]
    assert budget.loc["age", "budget"] == 2.0 and budget.loc["degree", "budget"] == np.inf
