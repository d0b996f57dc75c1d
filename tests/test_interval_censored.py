"""Interval-censored data as they come: ``censored(Y, ...)`` (issue 14).

Real data sets (tests/data, see its README) run from a spec through ``privspec run`` to
the NPMLE, whose log-likelihood must equal R's npsurv's; mixed rows parse to the right
ends and closedness; bad rows are errors naming rows and columns; what describes a
privacy mechanism (coverage, epsilon, privatize, simulate) is refused (B106).
"""
from __future__ import annotations

import io
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.backends.interval.mechanisms import parse_bounds, parse_censored, written_intervals
from privspec.backends.interval.npmle.estimator import npmle
from privspec.cli import main
from privspec.errors import DataError

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def run_json(spec: Path, data: str | Path, *queries: str) -> dict:
    argv = ["run", str(spec), "--data", str(data), "--format", "json"]
    for q in queries:
        argv += ["--query", q]
    code, out, err = run(*argv)
    assert code == 0, err
    return json.loads(out)["queries"]


@pytest.fixture
def write(tmp_path: Path):
    """Write a spec or a data file into the test's folder; returns its path."""
    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path
    return _write


# ---- the data sets, against npsurv ----------------------------------------------------------------
# npsurv's log-likelihoods, computed once with R 4.2.2, npsurv 0.5-0, KMsurv 0.1-5 and
# survival 3.5-3 (Debian bookworm) on the CSV files of tests/data:
#     f <- npsurv(cbind(L, R), maxit = 10000, tol = 1e-12); f$ll
# with R = Inf for a missing upper end; a closed [L, R] given to npsurv (which reads (L, R])
# as (L - 1e-4, R] (no data end lies within 1e-4 below another: they are integers);
# leukemia: exact times and (t, Inf); tobin: (-Inf, 0] for durable == 0, exact otherwise.
# npsurv's maxgrad was below 1e-9 everywhere.  For right-censored data only (leukemia)
# npsurv answers with its Kaplan-Meier shortcut, whose `ll` (-108.7475905061) counts every
# censored respondent at the last mass instead of at S(c); the value below is the
# log-likelihood of npsurv's fitted F on the data, sum(log(P_i)), computed in R from
# f$f (the same computation gives f$ll back, -138.0352217605, for bcdeter).
SETS = [
    # id, spec lines, data file, npsurv's log-likelihood, n
    ("bcdeter", "variable months: continuous [0, inf]\n"
                "mechanism visits = censored(months, ends = right_closed, lower = lower, upper = upper)\n"
                "query F = estimate cdf(months) from visits by npmle\n",
     "bcdeter.csv", -138.0352217605, 95),
    ("diabetes-closed", "variable age: continuous [0, inf]\n"
                        "mechanism exams = censored(age, ends = closed, lower = left, upper = right)\n"
                        "query F = estimate cdf(age) from exams by npmle\n",
     "diabetes.csv", -1961.0530477568, 731),
    ("diabetes-right-closed", "variable age: continuous [0, inf]\n"
                              "mechanism exams = censored(age, lower = left, upper = right)\n"
                              "query F = estimate cdf(age) from exams by npmle\n",
     "diabetes.csv", -1966.5468827787, 731),
    ("c_botulinum", "variable lag: continuous [0, inf]\n"
                    "mechanism plates = censored(lag, ends = closed, lower = lower_bound_days, "
                    "upper = upper_bound_days)\n"
                    "query F = estimate cdf(lag) from plates by npmle\n",
     "c_botulinum.csv", -31.9143378430, 25),
    ("leukemia", "variable weeks: continuous [0, inf]\n"
                 "mechanism remission = censored(weeks)\n"
                 "query F = estimate cdf(weeks) from remission by npmle\n",
     "leukemia.csv", -102.4328275189, 42),
    ("tobin", "variable spending: continuous\n"
              "mechanism purchases = censored(spending, ends = right_closed)\n"
              "query F = estimate cdf(spending) from purchases by npmle\n",
     "tobin.csv", -26.5703038241, 20),
]


@pytest.mark.parametrize("spec, data, loglik, n", [pytest.param(*s[1:], id=s[0]) for s in SETS])
def test_data_set_runs_from_the_command_line_to_npsurvs_loglik(write, spec, data, loglik, n):
    result = run_json(write("s.privspec", spec), DATA / data, "F")["F"]
    assert result["converged"] and result["kkt"] <= 1e-9 and result["n"] == n
    assert result["loglik"] == pytest.approx(loglik, abs=1e-6)
    assert sum(result["value"]["mass"]) == pytest.approx(1.0)


def test_bcdeter_innermost_intervals_are_npsurvs(write):
    """npsurv's f$f for bcdeter, (L, R]: the same 12 innermost intervals with mass."""
    result = run_json(write("s.privspec", SETS[0][1]), DATA / "bcdeter.csv", "F")["F"]
    assert result["value"]["intervals"] == [[4, 5], [6, 7], [7, 8], [11, 12], [16, 17], [18, 19], [19, 20],
                                            [24, 25], [30, 31], [34, 34], [38, 39], [48, 48]]
    assert result["innermost"][:2] == ["(4, 5]", "(6, 7]"] and result["innermost"][-1] == "[48, 48]"
    # npsurv: 0.04446035 0.02279987 0.05486512 ... 0.30018481
    assert result["value"]["mass"][0] == pytest.approx(0.04446035, abs=1e-8)
    assert result["value"]["mass"][-1] == pytest.approx(0.30018481, abs=1e-8)


def test_closed_ends_change_the_innermost_intervals(write):
    """c_botulinum read closed, as lifelines reads it: [0, 1] keeps 0, [85, inf) keeps 85."""
    result = run_json(write("s.privspec", SETS[3][1]), DATA / "c_botulinum.csv", "F")["F"]
    assert result["innermost"] == ["[0, 1]", "[2, 2]", "[3, 3]", "[7, 7]", "[85, inf)"]
    assert result["value"]["intervals"][0] == [0, 1]


def test_parametric_fits_match_survreg(write):
    """Tobin's tobit (no covariates) and a normal fit to bcdeter, against R's survreg:
    survreg(Surv(durable, durable > 0, type = "left") ~ 1, tobin, dist = "gaussian" | "logistic")
    and survreg(Surv(lower, upper, type = "interval2") ~ 1, bcdeter, dist = "gaussian")
    (survival 3.5-3): location, scale and log-likelihood."""
    tobin = write("t.privspec", "variable spending: continuous\n"
                                "mechanism purchases = censored(spending)\n"
                                "query normal = estimate mean(spending) from purchases by mle(normal)\n"
                                "query logistic = estimate mean(spending) from purchases by mle(logistic)\n")
    got = run_json(tobin, DATA / "tobin.csv")
    for family, loc, scale, loglik in (("normal", -2.2274394398, 5.9452622171, -29.4921995482),
                                       ("logistic", -1.9033307734, 3.2697740825, -29.6227125008)):
        r = got[family]
        assert r["parameters"]["location"] == pytest.approx(loc, rel=1e-6)
        assert r["parameters"]["scale"] == pytest.approx(scale, rel=1e-6)
        assert r["loglik"] == pytest.approx(loglik, abs=1e-6)
    bc = write("b.privspec", "variable months: continuous [0, inf]\n"
                             "mechanism visits = censored(months, lower = lower, upper = upper)\n"
                             "query normal = estimate mean(months) from visits by mle(normal)\n")
    r = run_json(bc, DATA / "bcdeter.csv")["normal"]
    assert r["parameters"]["location"] == pytest.approx(30.5252759338, rel=1e-6)
    assert r["parameters"]["scale"] == pytest.approx(17.1237074509, rel=1e-6)
    assert r["loglik"] == pytest.approx(-162.7801628124, abs=1e-6)


def test_tobit_regression_by_algorithm_1(write):
    """Algorithm 1 (linear, normal noise) on Tobin's left-censored purchases is EM for the
    tobit: near survreg(Surv(durable, durable > 0, type = "left") ~ age + quant, tobin,
    dist = "gaussian") = 15.14486636, -0.12905928, -0.04554166 (it stops on a small change,
    not at the maximum: within 0.5%)."""
    spec = write("t.privspec", "variable spending: continuous\nvariable age: continuous\n"
                               "variable quant: continuous\nmechanism purchases = censored(spending)\n"
                               "query reg = estimate regression(spending ~ age + quant) from purchases "
                               "by iterative(linear)\n")
    got = run_json(spec, DATA / "tobin.csv")["reg"]["value"]
    assert [got["intercept"], got["age"], got["quant"]] == pytest.approx([15.14486636, -0.12905928, -0.04554166],
                                                                          rel=5e-3)


def test_bundled_spec_checks_and_runs_on_its_data():
    code, out, err = run("check", str(ROOT / "specs" / "bcdeter.privspec"))
    assert code == 0 and err == "", err
    got = run_json(ROOT / "specs" / "bcdeter.privspec", DATA / "bcdeter.csv")
    assert got["F"]["loglik"] == pytest.approx(-138.0352217605, abs=1e-6)
    assert got["mean_npmle"]["value"] == pytest.approx(29.4197, abs=1e-4)
    assert got["mean_normal"]["parameters"]["location"] == pytest.approx(30.5252759338, rel=1e-6)
    # at survreg's maximum although BFGS stops with "precision loss": the Newton decrement says so
    assert got["mean_normal"]["converged"] is True


def test_the_pages_censored_commands_work():
    """The commands of docs/interval-privacy.md's section on censored data, from the
    repository root (where the page says they run; their data live in tests/data)."""
    text = (ROOT / "docs" / "interval-privacy.md").read_text(encoding="utf-8")
    section = text[text.index("## Interval-censored data as they come"):]
    section = section[:section.index("\n## ", 5)]
    commands = [line for block in re.findall(r"```sh\n(.*?)```", section, re.S)
                for line in block.splitlines() if line.startswith("privspec ")]
    assert len(commands) >= 2
    outputs = []
    for line in commands:
        argv = [str(ROOT / a) if a.startswith(("specs/", "tests/")) else a for a in shlex.split(line)[1:]]
        code, out, err = run(*argv)
        assert code == 0, (line, err)
        outputs.append(out)
    # the page quotes the run's output
    quoted = re.search(r"prints, among the rest:\n\n```\n(.*?)```", section, re.S).group(1)
    for line in quoted.splitlines():
        assert line in outputs[1], line


# ---- the layouts and the ends ----------------------------------------------------------------------
def test_mixed_rows_parse_to_ends_and_closedness():
    """Exact values, closed, open, half-open, right- and left-censored rows in one column."""
    rows = ["2.5", "[1, 3]", "(1, 3)", "[1, 3)", "(1, 3]", "(4, inf)", "[4, inf)", "(-inf, 0.5]",
            "(-inf, 0.5)", "[7, 7]", " ( 2 , 5e1 ] ", "(5, inf]"]
    c = parse_censored(rows, "t")
    assert c.left.tolist() == [2.5, 1, 1, 1, 1, 4, 4, -np.inf, -np.inf, 7, 2, 5]
    assert c.right.tolist() == [2.5, 3, 3, 3, 3, np.inf, np.inf, 0.5, 0.5, 7, 50, np.inf]
    assert c.left_closed.tolist() == [True, True, False, True, False, False, True, False, False, True, False, False]
    assert c.right_closed.tolist() == [True, True, False, False, True, False, False, True, False, True, True, False]


def test_two_column_layout():
    """R's interval2 / lifelines layout: NA or inf for open ends, L == R exact."""
    c = parse_bounds(["0", "3", "NA", "", "2.5", "-inf"], ["5", "3", "4", "7", "inf", "1"], ("L", "R"))
    assert c.left.tolist() == [0, 3, -np.inf, -np.inf, 2.5, -np.inf]
    assert c.right.tolist() == [5, 3, 4, 7, np.inf, 1]
    assert c.left_closed.tolist() == [False, True, False, False, False, False]     # (l, r] by default
    assert c.right_closed.tolist() == [True, True, True, True, False, True]
    closed = parse_bounds(["0", "3"], ["5", "NA"], ends="closed")
    assert closed.left_closed.tolist() == [True, True] and closed.right_closed.tolist() == [True, False]


@pytest.mark.parametrize("second, loglik", [
    ("(1, 2]", 0.0),                 # both hold 2: all mass there
    ("[1, 2]", 0.0),
    ("(1, 2)", 2 * np.log(0.5)),     # 2 is not in (1, 2): the sets are disjoint
    ("[2, 3]", 0.0),
    ("(2, 3]", 2 * np.log(0.5)),
])
def test_closedness_reaches_the_npmle(write, second, loglik):
    """An exact 2 and one interval: whether the interval holds 2 decides the NPMLE."""
    spec = write("s.privspec", "variable t: continuous\nmechanism obs = censored(t)\n"
                               "query F = estimate cdf(t) from obs by npmle\n")
    data = write("d.csv", f't\n2\n"{second}"\n')
    assert run_json(spec, data, "F")["F"]["loglik"] == pytest.approx(loglik, abs=1e-12)


def test_encoding_is_the_same_fit_as_npsurvs_shift():
    """Closed ends as the double below (exact) give the NPMLE of npsurv's 1e-4 shift."""
    rng = np.random.default_rng(3)
    left = rng.integers(0, 20, 300).astype(float)
    right = left + rng.integers(0, 6, 300)
    c = parse_bounds(left.astype(str), right.astype(str), ends="closed")
    shifted = npmle(np.where(left < right, left - 1e-4, left), right)
    assert npmle(*c.encoded()).loglik == pytest.approx(shifted.loglik, abs=1e-9)


def test_written_innermost_intervals():
    l, r = parse_censored(["[1, 2)", "(0, 1]", "[1, 1]"]).encoded()
    below_one = np.nextafter(1.0, -np.inf)      # (1-, 1] holds one double: the exact value 1
    _, _, text = written_intervals(np.array([l[0], below_one, l[1]]), np.array([r[0], 1.0, 0.5]), (0.0, 9.0))
    assert text.tolist() == ["[1, 2)", "[1, 1]", "(0, 0.5]"]


# ---- bad rows ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, code", [
    ("(3, 2]", "D109"),              # l > r
    ("[3, 2]", "D109"),
    ("(2, 2]", "D109"),              # equal ends: only [x, x] (or x) is an exact value
    ("(2, 2)", "D109"),
    ("inf", "D109"),                 # no infinite exact value
    ("abc", "D101"),
    ("{1, 2}", "D101"),
    ("(-inf, 1] | (3, inf]", "D101"),   # a ring range is a privacy mechanism's report
    ("", "D004"),
])
def test_bad_rows_are_named(bad, code):
    with pytest.raises(DataError) as e:
        parse_censored(["(0, 1]", "2", bad, "[0, 1]"], column="t")
    d = e.value.diagnostics[0]
    assert (d.code, d.rows, d.columns) == (code, (3,), ("t",))


@pytest.mark.parametrize("lower, upper, code, columns", [
    (["1", "x", "2"], ["2", "3", "4"], "D101", ("L",)),
    (["1", "2", "2"], ["2", "one", "4"], "D101", ("R",)),
    (["1", "5", "2"], ["2", "3", "4"], "D109", ("L", "R")),          # L > R
    (["1", "NA", "2"], ["2", "", "4"], "D004", ("L", "R")),          # neither end: nothing known
    (["1", "inf", "2"], ["2", "inf", "4"], "D109", ("L", "R")),       # no infinite exact value
])
def test_bad_two_column_rows_are_named(lower, upper, code, columns):
    with pytest.raises(DataError) as e:
        parse_bounds(lower, upper, ("L", "R"))
    d = e.value.diagnostics[0]
    assert (d.code, d.rows, d.columns) == (code, (2,), columns)


def test_declared_ends_must_match_written_brackets():
    parse_censored(["[1, 2]", "3", "[4, inf)", "(-inf, 5]"], "t", ends="closed")   # infinite ends: any bracket
    with pytest.raises(DataError) as e:
        parse_censored(["[1, 2]", "(1, 2]", "[1, 2)", "5"], "t", ends="closed")
    d = e.value.diagnostics[0]
    assert d.code == "D111" and d.rows == (2, 3) and "[a, b]" in d.message


@pytest.mark.parametrize("rows, bad, columns", [
    (['"(1, 2]"', "-1", '"(2, 3]"'], (2,), ("t",)),              # an exact value below the support
    (['"(1, 2]"', '"(5, 12]"', '"[2, 3]"'], (2,), ("t",)),        # an end above it
    (['"(10, inf)"', '"(1, 2]"'], (1,), ("t",)),                  # (10, inf) holds nothing of [0, 10]
    (['"[10, inf)"', '"(-inf, 0)"'], (2,), ("t",)),               # [10, inf) holds 10; (-inf, 0) nothing
])
def test_ends_outside_the_support_are_named(write, rows, bad, columns):
    spec = write("s.privspec", "variable t: continuous [0, 10]\nmechanism obs = censored(t)\n"
                               "query F = estimate cdf(t) from obs by npmle\n")
    data = write("d.csv", "t\n" + "\n".join(rows) + "\n")
    code, out, err = run("run", str(spec), "--data", str(data), "--format", "json")
    assert code == 1 and "error[D110]" in err
    shown = re.search(r"rows? ([\d, and]+)", err).group(1)
    assert tuple(int(x) for x in re.findall(r"\d+", shown)) == bad
    assert all(f"column {c}" in err or f"columns {c}" in err for c in columns)


def test_two_column_support_names_the_column(write):
    spec = write("s.privspec", "variable t: continuous [0, inf]\n"
                               "mechanism obs = censored(t, lower = L, upper = R)\n"
                               "query F = estimate cdf(t) from obs by npmle\n")
    code, _, err = run("run", str(spec), "--data", str(write("d.csv", "L,R\n1,2\n-3,4\n5,NA\n")))
    assert code == 1 and "error[D110]" in err and re.search(r"\brows? 2\b", err) and "column L" in err


# ---- what does not apply ------------------------------------------------------------------------------
@pytest.mark.parametrize("verb, query", [
    ("analyze", "query q = coverage(obs)"),
    ("analyze", "query q = leakage(obs, size)"),
    ("analyze", "query q = epsilon(obs)"),
    ("analyze", "query q = avar(mean(t) from obs by npmle)"),
    ("simulate", "query q = estimate mean(t) from obs by npmle"),
])
def test_privacy_queries_say_there_are_no_anchors(write, verb, query):
    spec = write("s.privspec", "variable t: continuous [0, inf]\npopulation t ~ exponential(1)\n"
                               f"mechanism obs = censored(t)\n{query}\n")
    argv = [verb, str(spec)] + (["--n", "10", "--reps", "2"] if verb == "simulate" else [])
    code, out, err = run(*argv)
    assert code == 1 and "error[B106]" in err and "no anchors" in err and out == ""


def test_privatize_is_refused(write, tmp_path):
    spec = write("s.privspec", "variable t: continuous [0, inf]\nmechanism obs = censored(t)\n")
    raw = write("raw.csv", "t\n1\n2\n")
    code, _, err = run("privatize", str(spec), "--mechanism", "obs", "--input", str(raw),
                       "--output", str(tmp_path / "out.csv"))
    assert code == 1 and "error[B106]" in err and not (tmp_path / "out.csv").exists()


def test_optimal_anchor_and_unbiased_are_refused_by_the_checker():
    spec = privspec.load("variable t: continuous [0, 10]\nmechanism obs = censored(t)\n"
                         "query g = optimal_anchor(mean(t), obs)\n"
                         "query u = estimate mean(t) from obs by unbiased\n")
    assert [d.code for d in spec.check()] == ["E501", "E501"]


# ---- the interval mechanisms are unchanged -------------------------------------------------------------
@pytest.mark.parametrize("row, code", [("[1, 2]", "D101"), ("2", "D102")])
def test_interval_mechanisms_still_refuse_what_they_cannot_produce(write, row, code):
    spec = write("s.privspec", "variable t: continuous [0, 10]\n"
                               "mechanism c2 = interval(t, case2(uniform(0, 10)))\n"
                               "query F = estimate cdf(t) from c2 by npmle\n")
    data = write("d.csv", f't\n"(1, 3]"\n"{row}"\n')
    code_, _, err = run("run", str(spec), "--data", str(data))
    assert code_ == 1 and f"error[{code}]" in err and re.search(r"\brows? 2\b", err)
