"""Data files (issue 14): numbers parsed exactly, one row numbering, every data error names
its file, rows and columns, and every distinct bad value; counts checked against their type."""
from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privspec
from privspec.backends.core.numbers import MAX_COUNT, parse_numbers
from privspec.backends.data.checks import describe_values
from privspec.backends.data.files import read_table
from privspec.errors import DataError, Diagnostic
from privspec.language.source import Source

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


# ---- issue 33: every file an answer or a clear error, the same on every engine -----------------------------
ENGINES = ["pandas", "duckdb"]
FAMILIES = """
variable color: categorical {black, red, green, blue}
variable gender: categorical {Female, Male}
variable y: continuous [0, 10]
mechanism urn = subset(color, uniform)
mechanism g = grr(color, epsilon = 1)
mechanism pair = product(grr(color, epsilon = 1), grr(gender, epsilon = 1))
mechanism iv = interval(y, case1(uniform(0, 10)))
mechanism o = oue(color, epsilon = 1)
query w = estimate distribution(color) from urn by mom
query wg = estimate distribution(color) from g by mle
query t = test independence(color, gender) from pair by pearson
query j = estimate joint(color, gender) from pair by castell
query mu = estimate mean(y) from iv by unbiased
query F = estimate cdf(y) from iv by npmle
query fo = estimate distribution(color) from o by mom
"""
#: each data query of FAMILIES and the mechanism whose file it reads
FAMILY_QUERIES = {"w": "urn", "wg": "g", "t": "pair", "j": "pair", "mu": "iv", "F": "iv", "fo": "o"}


def _families(tmp_path: Path) -> Path:
    spec = tmp_path / "families.privspec"
    spec.write_text(FAMILIES)
    return spec


def _write(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return path


def _same_on_every_engine(*argv: object) -> tuple[int, str]:
    """The exit status and stderr of one command, which every engine must give alike."""
    seen = {e: cli(*argv, "--engine", e) for e in ENGINES}
    first = seen[ENGINES[0]]
    for engine, (code, _, err) in seen.items():
        assert (code, err) == first[::2], f"{engine} differs from {ENGINES[0]}:\n{err[:2000]}\n{first[2][:2000]}"
    return first[0], first[2]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_table_without_rows_is_d103_for_every_query_and_engine(tmp_path: Path, fmt: str) -> None:
    """A header-only CSV or a zero-row Parquet: 'no report was collected' (D103, exit 1) for
    every family, where finite mechanisms said ValueError: no observations (exit 3) and the
    unbiased interval mean ZeroDivisionError."""
    spec = _families(tmp_path)
    empty = _write(pd.DataFrame({c: pd.Series([], dtype=object) for c in ("color", "gender", "y")}),
                   tmp_path / f"empty.{fmt}")
    for query, mech in FAMILY_QUERIES.items():
        code, err = _same_on_every_engine("run", spec, "--data", f"{mech}={empty}", "--query", query)
        assert code == 1 and f"{empty}: error[D103]: no report was collected" in err, (query, err)


def test_an_empty_dataframe_is_d103_in_the_api() -> None:
    spec = privspec.load(FAMILIES)
    for engine in ENGINES:
        res = spec.run({"g": pd.DataFrame({"color": pd.Series([], dtype=object)})}, ["wg"], engine=engine)
        assert res.failures["wg"].code == "D103"


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("mech, column", [("g", "color"), ("urn", "color"), ("iv", "y")])
def test_privatizing_no_rows_writes_the_header_only(tmp_path: Path, fmt: str, mech: str, column: str) -> None:
    """Zero rows in, zero rows out: the output holds the report column and no row, on every engine."""
    spec = _families(tmp_path)
    raw = _write(pd.DataFrame({column: pd.Series([], dtype=object)}), tmp_path / f"raw.{fmt}")
    for engine in ENGINES:
        out = tmp_path / f"out_{engine}.{fmt}"
        code, _, err = cli("privatize", spec, "--mechanism", mech, "--input", raw, "--output", out,
                           "--seed", 1, "--engine", engine)
        assert code == 0 and "wrote 0 rows" in err, err
        back = pd.read_parquet(out) if fmt == "parquet" else pd.read_csv(out, dtype=str)
        assert len(back) == 0 and column in back.columns


def _nested(kind: str, path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    values = {"list": pa.array([["red"], ["blue", "red"], ["black"]]),
              "struct": pa.array([{"a": "red"}, {"a": "blue"}, {"a": "black"}]),
              "map": pa.array([[("red", 1)], [("blue", 2)], [("black", 3)]], type=pa.map_(pa.string(), pa.int64()))}
    pq.write_table(pa.table({"id": ["1", "2", "3"], "color": values[kind]}), path)
    return path


@pytest.mark.parametrize("kind", ["list", "struct", "map"])
def test_a_column_of_nested_values_is_d015_on_every_engine(tmp_path: Path, kind: str) -> None:
    """pandas said 'unhashable type' (exit 3), DuckDB D010/D011 on the printed lists: now one
    code and one message naming the column, for run and privatize."""
    spec = _families(tmp_path)
    data = _nested(kind, tmp_path / f"{kind}.parquet")
    for argv in (("run", spec, "--data", f"g={data}", "--query", "wg"),
                 ("run", spec, "--data", f"urn={data}", "--query", "w"),
                 ("privatize", spec, "--mechanism", "g", "--input", data, "--output", tmp_path / "o.csv")):
        code, err = _same_on_every_engine(*argv)
        assert code == 1 and f"{data} (column color): error[D015]: the column 'color' holds nested values" in err, err
        assert not (tmp_path / "o.csv").exists()


def test_an_unused_nested_column_is_no_error(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "tags.parquet"
    pq.write_table(pa.table({"color": ["red", "blue", "red"], "tags": [["a"], [], ["b", "c"]]}), data)
    code, err = _same_on_every_engine("run", _families(tmp_path), "--data", f"g={data}", "--query", "wg")
    assert code == 0, err


def test_a_dataframe_column_of_lists_is_d015_in_the_api() -> None:
    spec = privspec.load(FAMILIES)
    frame = pd.DataFrame({"color": [["red"], ["blue"], ["red", "black"]]})
    for engine in ENGINES:
        res = spec.run({"g": frame}, ["wg"], engine=engine)
        assert res.failures["wg"].code == "D015" and "'color'" in res.failures["wg"].diagnostics[0].message
    for mech, column in (("g", "color"), ("iv", "y")):   # spec.privatize: iv said unhashable type
        with pytest.raises(DataError) as e:
            spec.privatize(pd.DataFrame({column: [["red"], [1.5]]}), mech, seed=1)
        assert e.value.code == "D015" and e.value.diagnostics[0].columns == (column,)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_duplicate_column_names_are_d014_on_every_engine(tmp_path: Path, fmt: str) -> None:
    """``color,color``: pandas used 'color' and renamed the other color.1, DuckDB color_1 (and
    pandas could not read such a Parquet file at all): now an error naming the column."""
    spec = _families(tmp_path)
    path = tmp_path / f"dup.{fmt}"
    if fmt == "csv":
        path.write_text("color,gender,color\nred,Male,blue\nblack,Female,green\n")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_arrays([pa.array(["red", "black"]), pa.array(["Male", "Female"]),
                                             pa.array(["blue", "green"])], names=["color", "gender", "color"]), path)
    for argv in (("run", spec, "--data", f"g={path}", "--query", "wg"),
                 ("privatize", spec, "--mechanism", "g", "--input", path, "--output", tmp_path / "o.csv")):
        code, err = _same_on_every_engine(*argv)
        assert code == 1 and f"{path} (column color): error[D014]: the column name 'color' appears twice in the " \
                             "header (columns 1 and 3)" in err, err
        assert not (tmp_path / "o.csv").exists()


def test_duplicate_dataframe_columns_are_d014_in_the_api() -> None:
    spec = privspec.load(FAMILIES)
    frame = pd.DataFrame([["red", "blue"]], columns=["color", "color"])
    for engine in ENGINES:
        assert spec.run({"g": frame}, ["wg"], engine=engine).failures["wg"].code == "D014"
    with pytest.raises(DataError) as e:
        spec.privatize(frame, "g", seed=1)
    assert e.value.code == "D014"


#: longer than DuckDB's CSV buffer (16 x its 2 MB line limit): a final row this long was
#: dropped without a word (duckdb/duckdb#25825)
LONG = 40_000_000


def _long_last_row(path: Path, last: str) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        f.write("color\nred\nblue\n")
        f.write(last)
        f.write("\n")
    return path


@pytest.mark.slow
def test_a_final_row_longer_than_duckdbs_buffer_is_not_dropped(tmp_path: Path) -> None:
    """A valid report padded to 40 MB in the last row: DuckDB returned two rows of three (n = 2),
    and privatize wrote two; now every engine reads all three."""
    spec = _families(tmp_path)
    data = _long_last_row(tmp_path / "padded.csv", "red" + " " * LONG)
    ns = {}
    for engine in ENGINES:
        code, out, err = cli("run", spec, "--data", f"g={data}", "--query", "wg", "--format", "json",
                             "--engine", engine)
        assert code == 0, err
        ns[engine] = json.loads(out)["queries"]["wg"]["n"]
        target = tmp_path / f"o_{engine}.csv"
        code, _, err = cli("privatize", spec, "--mechanism", "g", "--input", data, "--output", target,
                           "--seed", 1, "--engine", engine)
        assert code == 0 and "wrote 3 rows" in err, err
        assert len(pd.read_csv(target)) == 3
    assert ns == {"pandas": 3, "duckdb": 3}


@pytest.mark.slow
def test_a_huge_bad_row_is_named_briefly(tmp_path: Path) -> None:
    """A 40 MB value that is no report: the row is named on every engine (DuckDB privatize
    wrote 0 rows of it before), and the message shows the value's start, not 40 MB of it."""
    spec = _families(tmp_path)
    data = _long_last_row(tmp_path / "huge.csv", "r" * LONG)
    code, err = _same_on_every_engine("run", spec, "--data", f"g={data}", "--query", "wg")
    assert code == 1 and f"{data}: rows 3 (column color): error[D010]" in err and len(err) < 2_000, err[:2000]
    assert f"({LONG:,} characters)" in err
    code, err = _same_on_every_engine("privatize", spec, "--mechanism", "g", "--input", data,
                                      "--output", tmp_path / "o.csv")
    assert code == 1 and f"{data}: rows 3 (column color): error[D011]" in err and len(err) < 2_000, err[:2000]
    assert not (tmp_path / "o.csv").exists()


def test_out_of_memory_while_reading_names_the_longest_row(tmp_path: Path, monkeypatch) -> None:
    """A row too large to read in memory (the issue: 1 GiB under a 6 GB cap, exit 3 on both
    engines): D017, naming the longest row and its size."""
    from privspec.backends.data import files as data_module

    spec = _families(tmp_path)
    path = tmp_path / "big.csv"
    path.write_text("color\nred\n" + "r" * 3_000_000 + "\nblue\n")

    def no_memory(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(data_module.pd, "read_csv", no_memory)
    with pytest.raises(DataError) as e:
        read_table(path)
    d = e.value.diagnostics[0]
    assert d.code == "D017" and d.rows == (2,) and "row 2 holds 3,000,000 bytes" in d.message
    code, err = _same_on_every_engine("run", spec, "--data", f"g={path}", "--query", "wg")
    assert code == 1 and f"{path}: rows 2: error[D017]" in err, err


# ---- rows in = rows out ------------------------------------------------------------------------------------
CSV_ATOMS = ["a", "b", "é", " ", "  ", "\t", ",", '"', '""', '"a"', ' "', '," ', "\n", "\r\n", "\r", "x y", "'",
             "\x00", "\ufeff"]


@pytest.mark.slow
@given(st.lists(st.lists(st.sampled_from(CSV_ATOMS), max_size=6), max_size=12), st.sampled_from([1, 2, 3, 7, 1 << 24]),
       st.booleans())
@settings(max_examples=400, deadline=None, derandomize=True)
def test_counted_rows_are_the_rows_pandas_reads(tmp_path_factory, lines, block, bom) -> None:
    """The independent count of a CSV's data rows (no parse: line breaks outside quotes, blank
    lines skipped) is the number of rows pandas reads, for every file pandas reads, whatever
    the blocks it is read in; its longest row is the longest line."""
    from privspec.backends.data import files as data_module

    path = tmp_path_factory.mktemp("count") / "f.csv"
    text = "\n".join("".join(line) for line in lines)
    if re.search(r"(^|[\n\r])\r(?!\n)", text):
        return  # a blank line ended by a lone \r: pandas' tokenizer quirks (count_rows' docstring)
    path.write_bytes((("\ufeff" if bom else "") + "a,b\n" + text).encode("utf-8"))
    try:
        rows = len(read_table(path))
    except DataError:
        return
    saved = data_module.COUNT_BLOCK
    data_module.COUNT_BLOCK = block
    try:
        counted = data_module.count_rows(path, longest=True)
    finally:
        data_module.COUNT_BLOCK = saved
    assert counted.rows == rows
    if '"' not in text and "\r" not in text and counted.rows:
        data_lines = [x for x in text.split("\n") if x.strip(" \t")]
        assert counted.longest_bytes == max(len(x.encode()) for x in data_lines)


def test_privatize_checks_rows_in_against_rows_out(tmp_path: Path, monkeypatch) -> None:
    """A reader that loses a row while streaming: D016 and no output, never a shorter file."""
    from privspec.backends.data import engines

    spec = _families(tmp_path)
    raw = tmp_path / "raw.csv"
    raw.write_text("color\n" + "red\nblue\n" * 50)
    real = engines.DuckDBEngine.chunks

    def lossy(self, rows):
        for piece in real(self, rows):
            yield piece.iloc[:-1]

    monkeypatch.setattr(engines.DuckDBEngine, "chunks", lossy)
    out = tmp_path / "o.csv"
    code, _, err = cli("privatize", spec, "--mechanism", "g", "--input", raw, "--output", out, "--engine", "duckdb")
    assert code == 1 and "error[D016]" in err and "100 data rows" in err and "99" in err, err
    assert not out.exists()


def test_an_engine_that_misses_rows_is_replaced_by_the_reference_reading(tmp_path: Path, monkeypatch) -> None:
    """With the check of the file's last line switched off, DuckDB drops the 40 MB last row
    again; privatize's independent count sees it and reads the file as pandas does."""
    from privspec.backends.data.engines import duckdb as engines

    monkeypatch.setattr(engines, "LONG_LAST_LINE", 10 ** 12)
    spec = _families(tmp_path)
    data = _long_last_row(tmp_path / "padded.csv", "red" + " " * LONG)
    out = tmp_path / "o.csv"
    code, _, err = cli("privatize", spec, "--mechanism", "g", "--input", data, "--output", out, "--engine", "duckdb")
    assert code == 0 and "wrote 3 rows" in err, err


def test_a_bad_row_far_down_the_file_is_named_by_every_engine(tmp_path: Path) -> None:
    """A row with an extra field after 100,000 good ones: DuckDB found it only part way
    (its error came through Arrow's reader as OSError, and the SQL parse of interval
    reports did not catch its error at all: exit 3); now D002 naming the row, on every
    engine, for every family and for privatize."""
    spec = _families(tmp_path)
    reports = tmp_path / "reports.csv"
    reports.write_text("y,color\n" + '"(1.5, inf]",red\n' * 100_000 + '"(2.5, inf]",red,extra\n')
    raw = tmp_path / "raw.csv"
    raw.write_text("y,color\n" + "1.5,red\n" * 100_000 + "2.5,red,extra\n")
    for argv in (("run", spec, "--data", f"iv={reports}", "--query", "mu"),
                 ("run", spec, "--data", f"g={reports}", "--query", "wg"),
                 ("privatize", spec, "--mechanism", "iv", "--input", raw, "--output", tmp_path / "o.csv"),
                 ("privatize", spec, "--mechanism", "g", "--input", raw, "--output", tmp_path / "o.csv")):
        code, err = _same_on_every_engine(*argv)
        assert code == 1 and "rows 100001: error[D002]: 1 row has more fields than the header" in err, err


@pytest.mark.parametrize("text, rows", [("color,y\nred,1,x\nblue,2,y\n", (1, 2)),
                                        ("color,y\nred,1\nblue,2,x\nred,1,,,z\n", (2, 3))])
def test_rows_longer_than_the_header_are_d002_on_every_engine(tmp_path: Path, text: str, rows: tuple) -> None:
    """A first data row longer than the header: pandas took its first fields for an index and
    read 'red,1,x' as color 1, y x, without a word (and DuckDB handed it to pandas)."""
    path = tmp_path / "long.csv"
    path.write_text(text)
    code, err = _same_on_every_engine("run", _families(tmp_path), "--data", f"g={path}", "--query", "wg")
    assert code == 1 and f"rows {', '.join(map(str, rows))}: error[D002]: 2 rows have more fields than the header" \
        in err, err


def test_empty_fields_past_the_header_are_read_alike(tmp_path: Path) -> None:
    """A trailing comma (red,1,): DuckDB drops the empty fields, pandas refused the row (D002)
    or, in the first row, shifted the columns: now both read the row without them."""
    spec = _families(tmp_path)
    for text in ("color,y\nred,1\nblue,2,\n", "color,y\nblack,0,,\nred,1\n"):
        path = tmp_path / "trailing.csv"
        path.write_text(text)
        for engine in ENGINES:
            code, out, err = cli("run", spec, "--data", f"g={path}", "--query", "wg", "--format", "json",
                                 "--engine", engine)
            assert code == 0 and json.loads(out)["queries"]["wg"]["n"] == 2, (engine, err)
        assert read_table(path)["color"].tolist() == [line.split(",")[0] for line in text.split("\n")[1:3]]
