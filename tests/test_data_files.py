"""Data files (issue 14): numbers parsed exactly, one row numbering, every data error names
its file, rows and columns, and every distinct bad value; counts checked against their type."""
from __future__ import annotations

import io
import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.backends.data import MAX_COUNT, describe_values, parse_numbers, read_table
from privspec.errors import DataError, Diagnostic
from privspec.source import Source

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
UNIVERSITY = SPECS / "university.privspec"
RELEASED = SPECS / "data" / "university_released.csv"

SUBSET = """
variable color: categorical {black, red, green, blue}
mechanism urn = subset(color, uniform)
query ok = identifiable(urn)
query w = estimate distribution(color) from urn by mom
query w_mle = estimate distribution(color) from urn by mle
"""


def cli(*argv: object) -> tuple[int, str, str]:
    from privspec.cli import main

    out, err = io.StringIO(), io.StringIO()
    return main([str(a) for a in argv], stdout=out, stderr=err), out.getvalue(), err.getvalue()


# ---- numbers ---------------------------------------------------------------------------------------------
def test_parse_numbers_is_correctly_rounded() -> None:
    """17-digit and shortest-repr decimals, each equal to Python's float() (correctly
    rounded), whatever pandas' own parser does."""
    rng = random.Random(14)
    texts = [f"{rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30):.16e}" for _ in range(20_000)]
    texts += [repr(rng.random() * 10 ** rng.randint(-300, 300)) for _ in range(20_000)]
    texts += [f"{rng.randint(0, 10 ** 17 - 1):017d}e-{rng.randint(0, 40)}" for _ in range(20_000)]
    texts += texts[:5000]                                              # repeats: parsed once each
    numbers, bad = parse_numbers(pd.Series(texts, dtype=object))
    assert not bad.any()
    assert np.array_equal(numbers, np.array([float(t) for t in texts]))


@pytest.mark.parametrize("text, value", [(" 2.5 ", 2.5), ("-inf", -np.inf), ("1e400", np.inf), ("+7", 7.0)])
def test_parse_numbers_accepts(text: str, value: float) -> None:
    numbers, bad = parse_numbers([text])
    assert not bad[0] and numbers[0] == value


@pytest.mark.parametrize("text", ["", "ten", "1_000", "1,5", "nan", "0x10", None])
def test_parse_numbers_rejects(text) -> None:
    assert parse_numbers([text])[1].tolist() == [True]


def test_parse_numbers_integers_exactly() -> None:
    numbers, bad = parse_numbers(["3", "-2", "3.0", "1e3", "3.5", "3.0000000000000001", "1e30",
                                  str(MAX_COUNT), str(MAX_COUNT + 1), "inf", "1e999999999"], integer=True)
    assert bad.tolist() == [False, False, False, False, True, True, False, False, False, True, False]
    assert numbers[[0, 1, 2, 3, 7]].tolist() == [3, -2, 3, 1000, MAX_COUNT]
    assert np.isinf(numbers[[6, 8, 10]]).all()                       # integers beyond +-2^53
    ints = pd.Series([1, MAX_COUNT + 1, -5], dtype="int64")          # Parquet: numbers already
    assert np.isinf(parse_numbers(ints, integer=True)[0][1])


# ---- reading files: one row numbering, the file named ---------------------------------------------------
def test_not_utf8_names_every_row_and_column(tmp_path: Path) -> None:
    f = tmp_path / "latin.csv"
    f.write_bytes("a,b\nok,1\ncaf\xe9,1\nx,\xff\nfine,2\n".encode("latin-1"))
    with pytest.raises(DataError) as e:
        read_table(f)
    d = e.value.diagnostics[0]
    assert d.code == "D002" and d.rows == (2, 3) and d.columns == ("a", "b") and d.file == str(f)
    assert "'caf\\xe9' in row 2, column a" in d.message and "iconv" in d.hint
    assert e.value.render().startswith(f"{f}: rows 2, 3 (columns a, b): error[D002]")


def test_parser_rows_are_data_rows(tmp_path: Path) -> None:
    """pandas says 'line 5' (the header and blank lines counted, a quoted newline not):
    privspec names the data row, the same numbering as every other message."""
    f = tmp_path / "shape.csv"
    f.write_text('a,b\n1,2\n\n3,4\n5,6,7\n"x\ny",2\n8,9,10\n')
    with pytest.raises(DataError) as e:
        read_table(f)
    d = e.value.diagnostics[0]
    assert d.code == "D002" and d.rows == (3, 5) and "more fields than the header" in d.message
    g = tmp_path / "quote.csv"
    g.write_text('a,b\n1,2\n3,"4\n5,6\n')
    with pytest.raises(DataError) as e:
        read_table(g)
    assert e.value.diagnostics[0].rows == (2,) and "never ends" in e.value.diagnostics[0].message


def test_data_rows_agree_with_the_frame(tmp_path: Path) -> None:
    """The row a value error names is the row a parse error would name: blank lines skipped."""
    f = tmp_path / "r.csv"
    f.write_text("color\nblack|red\n\nred|green\npurple|red\n")
    spec = tmp_path / "s.privspec"
    spec.write_text(SUBSET)
    code, _, err = cli("run", spec, "--data", f, "--query", "w")
    assert code == 1 and f"{f}: rows 3 (column color): error[D010]" in err


@pytest.mark.parametrize("content, words", [("", "empty"), (None, "folder")])
def test_unreadable_inputs_exit_1(tmp_path: Path, content, words: str) -> None:
    path = tmp_path / "x.csv"
    if content is None:
        path.mkdir()
    else:
        path.write_text(content)
    spec = tmp_path / "s.privspec"
    spec.write_text(SUBSET)
    code, _, err = cli("run", spec, "--data", path, "--query", "w")
    assert code == 1 and words in err and "internal error" not in err


def test_diagnostic_render_names_the_file_and_keeps_spec_format() -> None:
    d = Diagnostic("D004", "3 missing values", rows=(2, 3, 4), columns=("income",), hint="h")
    assert d.render(None).startswith("<input>: rows 2, 3, 4 (column income): error[D004]")
    assert d.with_file("reports.csv").render(None).startswith("reports.csv: rows 2, 3, 4 (column income): error[D004]")
    assert d.with_file("reports.csv").to_dict()["file"] == "reports.csv"
    src = Source("variable x: categorical {a}\n", "s.privspec")
    spec_diag = privspec.load("variable x: categorical {a, a}\n").diagnostics[0]
    assert spec_diag.with_file("reports.csv") is spec_diag            # spec diagnostics keep their span
    assert src.name == "s.privspec"


# ---- bad values: every distinct one, with its rows --------------------------------------------------------
def test_describe_values_lists_distinct_values_then_more() -> None:
    values = pd.Series(["ok"] + [f"bad{k}" for k in range(8) for _ in range(2)])
    codes, uniques = pd.factorize(values)
    text, rows = describe_values(codes, uniques, list(range(1, 9)))
    assert text.startswith("'bad0' (rows 2, 3), 'bad1' (rows 4, 5)") and text.endswith("and 3 more distinct values")
    assert rows == tuple(range(2, 18))


def test_d010_lists_every_distinct_bad_report(tmp_path: Path) -> None:
    frame = pd.DataFrame({"color": ["black|red", "red|purple", "black", "red|purple", "black|red|green|blue",
                                    "green|blue", "blue|teal"]})
    path = tmp_path / "r.csv"
    frame.to_csv(path, index=False)
    spec = tmp_path / "s.privspec"
    spec.write_text(SUBSET)
    code, _, err = cli("run", spec, "--data", path, "--query", "w")
    assert code == 1
    assert f"{path}: rows 2, 3, 4, 5, 7 (column color): error[D010]: 5 reports of color" in err
    for part in ("'red|purple' (rows 2, 4): 'purple' is not a category",
                 "'black' (row 3), 'black|red|green|blue' (row 5): this subset has probability 0",
                 "'blue|teal' (row 7): 'teal' is not a category"):
        assert part in err


def test_raw_subset_data_given_to_run_hint_at_privatize(tmp_path: Path) -> None:
    spec = tmp_path / "s.privspec"
    spec.write_text(SUBSET)
    raw = tmp_path / "raw.csv"
    pd.DataFrame({"color": ["black", "red", "green", "blue"] * 5}).to_csv(raw, index=False)
    code, _, err = cli("run", spec, "--data", raw, "--query", "w")
    assert code == 1 and "raw data?" in err
    assert f"privspec privatize {spec} --mechanism urn --input {raw} --output PRIVATIZED" in err


def test_d011_lists_every_raw_value_outside_the_domain(tmp_path: Path) -> None:
    spec = tmp_path / "s.privspec"
    spec.write_text(SUBSET)
    raw = tmp_path / "raw.csv"
    raw.write_text("color\nblack\npink\nred\nteal\npink\n")
    code, _, err = cli("privatize", spec, "--mechanism", "urn", "--input", raw, "--output", tmp_path / "o.csv")
    assert code == 1 and f"{raw}: rows 2, 4, 5 (column color): error[D011]" in err
    assert "'pink' (rows 2, 5), 'teal' (row 4)" in err and not (tmp_path / "o.csv").exists()


# ---- released counts ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("count, words", [("1e30", "too large"), (str(MAX_COUNT + 1), "too large"),
                                          ("-1e30", "too large"), ("3.0000000000000001", "not an integer")])
def test_released_count_checked_against_its_type(tmp_path: Path, count: str, words: str) -> None:
    """1e30 used to become -9223372036854775808 (int64 overflow) and n turned negative."""
    table = pd.read_csv(RELEASED, dtype=str, keep_default_na=False)
    table.loc[2, "count"] = count
    bad = tmp_path / "bad.csv"
    table.to_csv(bad, index=False)
    code, out, err = cli("run", UNIVERSITY, "--data", bad, "--query", "released")
    assert code == 1 and "D602" in err and words in err and f"{bad}: rows 3 (column count)" in err
    assert out == ""


def test_released_table_read_back_exactly(tmp_path: Path) -> None:
    code, out, err = cli("run", UNIVERSITY, "--data", RELEASED, "--query", "released", "--format", "json")
    assert code == 0, err
    n = json.loads(out)["queries"]["released"]["n"]
    assert n == pd.read_csv(RELEASED)["count"].sum() and n > 0


def test_raw_interval_data_given_to_run_hint_at_privatize() -> None:
    raw = SPECS / "data" / "interval_raw.csv"
    code, _, err = cli("run", SPECS / "interval_privacy.privspec", "--data", f"c1={raw}", "--query", "mu")
    assert code == 1 and f"{raw}: rows 1, 2, 3" in err and "raw data?" in err
    assert "--mechanism c1 --input" in err
