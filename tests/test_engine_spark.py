"""The Spark engine (privspec.backends.data.engines.spark) counts what DuckDB and pandas count:
the same distinct tuples, counts, dtypes, canonical order and rows for messages, for CSV,
Parquet and a DataFrame, and the same diagnostic for a file it cannot read.

Needs pyspark and Java 17+ (the ``spark`` extra); one local session for the module."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import os  # noqa: E402
import shutil  # noqa: E402

if os.environ.get("PRIVSPEC_REQUIRE_SPARK"):
    # the extras venv of .ci/run: the Spark tests must run there, never skip
    import pyspark  # noqa: F401
    assert shutil.which("java"), "PRIVSPEC_REQUIRE_SPARK is set but java is not installed"
else:
    pytest.importorskip("pyspark")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from privspec.backends.data.engines import DuckDBEngine, PandasEngine, engine_for  # noqa: E402
from privspec.backends.data.tally import Tally  # noqa: E402
from privspec.errors import DataError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning",
                                        "ignore::DeprecationWarning")

#: subset reports (Black|White), a space after a comma, empty cells, quoted commas,
#: doubled quotes, a line break inside quotes, a blank line, a trailing space kept
SURVEY = (
    "race,age, smoker,note\n"
    "Black|White, 30-39,yes,\"a, b\"\n"
    "White,30-39, no,\n"
    "Black|White,30-39,yes,\"a, b\"\n"
    "\n"
    ",40-49,,\"he said \"\"hi\"\"\"\n"
    "Asian , 40-49,no,\"two\nlines\"\n"
    "White,,yes,plain\n"
    "Black|White,30-39,  yes,\"a, b\"\n"
    "NA,50+,no,\n"
    "White,30-39,no,\"\"\n"
)


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    from privspec.backends.data.engines.spark import spark_session

    existed = SparkSession.getActiveSession() is not None
    session = spark_session()
    yield session
    if not existed:  # the local session this module started
        session.stop()


def engines(source, spark) -> list:
    """Pandas, DuckDB and Spark engines on one file (or frame)."""
    from privspec.backends.data.engines.spark import SparkEngine

    if isinstance(source, pd.DataFrame):
        return [PandasEngine(source), DuckDBEngine(source), SparkEngine(source)]
    return [engine_for(source, "pandas"), engine_for(source, "duckdb"), SparkEngine(source)]


def assert_same(expected: Tally, got: Tally) -> None:
    assert got.columns == expected.columns
    assert got.source == expected.source
    assert list(got.values.columns) == list(expected.values.columns)
    assert list(got.values.dtypes) == list(expected.values.dtypes)
    assert got.values.equals(expected.values), (expected.values, got.values)
    assert got.counts.dtype == np.int64
    np.testing.assert_array_equal(got.counts, expected.counts)


def assert_engines_agree(source, columns, spark, masks=None, with_duckdb=True) -> list[Tally]:
    tallies = [e.tally(columns) for e in engines(source, spark)]
    pandas_t, duck_t, spark_t = tallies
    assert_same(pandas_t, spark_t)
    if with_duckdb:
        assert_same(duck_t, spark_t)
    k = len(spark_t.counts)
    for mask in masks or [np.arange(k) % 2 == 0, np.ones(k, bool)]:
        assert spark_t.locate(mask) == pandas_t.locate(mask)
        if with_duckdb:
            assert spark_t.locate(mask) == duck_t.locate(mask)
    return tallies


@pytest.fixture
def survey_csv(tmp_path: Path) -> Path:
    path = tmp_path / "survey.csv"
    path.write_text(SURVEY, encoding="utf-8", newline="")
    return path


@pytest.mark.parametrize("columns", [["race"], ["note"], ["race", "age"], ["note", "age", "smoker", "race"]])
def test_csv_same_tally_and_rows(survey_csv, columns, spark):
    assert_engines_agree(survey_csv, columns, spark)


def test_csv_conventions(survey_csv, spark):
    from privspec.backends.data.engines.spark import SparkEngine

    engine = SparkEngine(survey_csv)
    assert engine.name == "spark" and engine.source == str(survey_csv)
    assert engine.columns() == ["race", "age", "smoker", "note"]  # a space after a comma skipped
    t = engine.tally(["race", "note"])
    rows = dict(zip(zip(t.values["race"], t.values["note"]), t.counts.tolist()))
    assert rows[("Black|White", "a, b")] == 3          # quoted comma; subset report
    assert rows[("", 'he said "hi"')] == 1             # empty cell "", doubled quotes
    assert rows[("Asian ", "two\nlines")] == 1         # trailing space kept, line break in quotes
    assert rows[("White", "")] == 2                    # empty and quoted-empty cells alike
    assert rows[("NA", "")] == 1                       # text as read: NA is no missing value here
    assert t.n == 9                                    # the blank line is no row
    assert t.locate((t.values["race"] == "Black|White").to_numpy()) == (1, 3, 7)
    assert t.locate((t.values["race"] == "").to_numpy()) == (4,)
    assert engine._fallback is None  # counted by Spark, not by the pandas fallback


def test_engine_for_spark(survey_csv, spark):
    from privspec.backends.data.engines.spark import SparkEngine

    engine = engine_for(survey_csv, "spark")
    assert isinstance(engine, SparkEngine)
    assert engine.columns() == engine_for(survey_csv, "duckdb").columns()


@pytest.fixture
def survey_parquet(tmp_path: Path) -> Path:
    rng = np.random.default_rng(7)
    n = 3000
    income = rng.integers(0, 4, n).astype(float) * 1000
    income[rng.random(n) < 0.1] = np.nan
    table = pa.table({
        "race": pa.array(rng.choice(["Black", "White", "Black|White", "Asian"], n)),
        "town": pa.array([None if m else t for m, t in zip(rng.random(n) < 0.05, rng.choice(["x", "y", ""], n))],
                         type=pa.string()),
        "income": pa.array(income, from_pandas=True),                       # numbers, nulls
        "kids": pa.array(rng.integers(0, 4, n), type=pa.int64()),           # integers, no nulls
        "age": pa.array(rng.integers(18, 22, n).astype("int32"), mask=rng.random(n) < 0.1),
        "smoker": pa.array(rng.random(n) < 0.3),
    })
    path = tmp_path / "survey.parquet"
    pq.write_table(table, path, row_group_size=500)  # several row groups: row order matters
    return path


@pytest.mark.parametrize("columns", [["town"], ["income"], ["age", "town", "kids"], ["smoker", "income", "race"]])
def test_parquet_same_tally_and_rows(survey_parquet, columns, spark):
    pandas_t, _, spark_t = assert_engines_agree(survey_parquet, columns, spark)
    assert spark_t.n == 3000


def test_parquet_types_kept(survey_parquet, spark):
    from privspec.backends.data.engines.spark import SparkEngine

    engine = SparkEngine(survey_parquet)
    t = engine.tally(["income", "kids", "race"])
    assert t.values["income"].dtype == np.float64 and t.values["income"].isna().any()  # missing last
    assert t.values["kids"].dtype == np.int64
    assert t.values["race"].dtype == object
    assert np.isnan(t.values["income"].iloc[-1])
    assert engine._fallback is None


def test_parquet_nan_is_missing(tmp_path, spark):
    """A Parquet NaN and a null are one missing value, as for pandas."""
    from privspec.backends.data.engines.spark import SparkEngine

    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"f": pa.array([1.0, float("nan"), None, float("nan"), 1.0], from_pandas=False)}), path)
    want = engine_for(path, "pandas").tally(["f"])
    got = SparkEngine(path).tally(["f"])
    assert_same(want, got)
    assert got.counts.tolist() == [2, 3]
    assert got.locate(got.values["f"].isna().to_numpy()) == want.locate(want.values["f"].isna().to_numpy()) == (2, 3, 4)


@pytest.mark.parametrize("columns", [["race", "income"], ["smoker", "kids"]])
def test_dataframe_same_tally_and_rows(survey_parquet, columns, spark):
    frame = pd.read_parquet(survey_parquet)
    frame["race"] = frame["race"].astype(object)
    assert_engines_agree(frame, columns, spark)


def test_dataframe_other_dtypes_counted_by_pandas(spark):
    from privspec.backends.data.engines.spark import SparkEngine

    frame = pd.DataFrame({"x": pd.Categorical(["b", "a", "b"]), "y": ["1", 1, None]})
    for cols in (["x"], ["y"], ["x", "y"]):
        assert_same(PandasEngine(frame).tally(cols), SparkEngine(frame).tally(cols))


def test_csv_pandas_conventions(tmp_path, spark):
    """Where Spark's CSV reader alone would differ from pandas: a tab after a comma (Spark
    skips it), a quoted leading space, a byte-order mark, blank lines before the header,
    a line of spaces, CRLF line ends, text after a closing quote."""
    from privspec.backends.data.engines.spark import SparkEngine

    cases = {
        "tab.csv": "x,y\na,\tb\na, b\n",
        "quoted_space.csv": 'x,y\na," b"\na, b\n',
        "bom.csv": "\ufeffx,y\na,b\n",
        "blank_first.csv": "\n\nx,y\na,b\n\nc,d\n",
        "spaces_line.csv": "x\na\n   \nb\n",
        "crlf.csv": "x,y\r\na,b\r\n\r\nc,\r\n",
        "after_quote.csv": 'x,y\n"a"b,c\n"a" b,"c"  \n"a""q""",""\n',
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8", newline="")
        want = engine_for(path, "pandas")
        got = SparkEngine(path)
        assert got.columns() == want.columns(), name
        t_want, t_got = want.tally(want.columns()), got.tally(got.columns())
        assert_same(t_want, t_got)
        mask = np.arange(len(t_got.counts)) % 2 == 0
        assert t_got.locate(mask) == t_want.locate(mask), name


@pytest.mark.parametrize("name, data", [
    ("ragged.csv", b"x,y\na,b\nc,d,e\nf,g\n"),                 # more fields than the header
    ("unclosed.csv", b'x,y\na,b\n"c,d\n'),                      # a quote that never closes
    ("latin1.csv", b"x,y\na,b\nc,caf\xe9\n"),                   # not UTF-8 (in a column not asked)
    ("empty.csv", b""),                                        # not even a header
])
def test_unreadable_csv_same_diagnostic(tmp_path, name, data, spark):
    from privspec.backends.data.engines.spark import SparkEngine

    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(DataError) as want:
        engine_for(path, "pandas").tally(["x"])
    with pytest.raises(DataError) as got:
        SparkEngine(path).tally(["x"])
    assert str(got.value) == str(want.value)
    assert [d.rows for d in got.value.diagnostics] == [d.rows for d in want.value.diagnostics]


def test_short_rows_read_as_pandas_reads_them(tmp_path, spark):
    """Fewer fields than the header: Spark refuses the row, pandas takes it; the pandas
    reading is used, as DuckDB does."""
    path = tmp_path / "short.csv"
    path.write_text("x,y\na\nb,c\n", encoding="utf-8")
    assert_engines_agree(path, ["x", "y"], spark)


def test_missing_file_and_column(tmp_path, survey_csv, spark):
    from privspec.backends.data.engines.spark import SparkEngine

    for source in (tmp_path / "nope.csv", tmp_path):
        with pytest.raises(DataError) as want:
            engine_for(source, "duckdb")
        with pytest.raises(DataError) as got:
            SparkEngine(source)
        assert str(got.value) == str(want.value)
    with pytest.raises(DataError) as want:
        engine_for(survey_csv, "duckdb").tally(["race", "income"])
    with pytest.raises(DataError) as got:
        SparkEngine(survey_csv).tally(["race", "income"])
    assert str(got.value) == str(want.value)


def test_existing_session_is_used(spark, survey_csv):
    from privspec.backends.data.engines.spark import SparkEngine, spark_session

    assert spark_session() is spark
    assert SparkEngine(survey_csv).spark is spark
