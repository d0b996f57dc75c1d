"""The Spark engine (the ``spark`` extra: ``pip install 'privspec[spark]'``, Java 17+).

:class:`SparkEngine` counts the distinct tuples of a table (:class:`~.tally.Tally`) with a
Spark ``groupBy(...).count()``: only the distinct tuples and their counts come back to
the driver, never the rows.  It gives the same tally as the other engines
(:mod:`privspec.backends.data.engines`): the same tuples, counts, canonical order and rows for
an error message.

Which Spark
-----------
The engine calls :meth:`SparkSession.builder.getOrCreate`, so a session that already
exists is used as it is: that is how privspec runs on a cluster.  Create the session
first, with the master and resources of your cluster, then call privspec::

    from pyspark.sql import SparkSession  # extra: spark
    spark = (SparkSession.builder.master("yarn")          # or spark://host:7077, k8s://...
             .config("spark.executor.memory", "8g").getOrCreate())
    privspec.load("survey.privspec").run({"urn": "/shared/survey.parquet"}, engine="spark")

or launch the program with ``spark-submit --master ...`` (or set ``spark.master`` in
``spark-defaults.conf``, or ``PYSPARK_SUBMIT_ARGS="--master ... pyspark-shell"``): where
a master is configured so, the session the engine creates uses it.  Where no session
exists and no master is configured, the engine starts a local one: ``local[*]`` (all
cores of this machine), app name ``privspec``, no web UI, no progress bars, logging at
``FATAL`` only (a file Spark refuses is read by pandas, without a stack trace).

The data file is checked here, on the driver (a file, its header read by pandas), and
read by the executors under the same absolute path: on a cluster, keep it on a file
system every node mounts at the same place (NFS, a FUSE mount of HDFS or S3).

Reading
-------
- CSV: a header, every cell text, a space after a comma skipped, an empty cell ``""``,
  quoted fields as Python's :mod:`csv` and pandas read them (``"a, b"``, doubled quotes
  ``""`` inside, line breaks inside), blank lines not rows.  The file is read whole by
  one task (``multiLine``: a quoted field may hold a line break, so the file cannot be
  split), with ``mode=FAILFAST``: a row with more or fewer fields than the header, or a
  quote that never closes, fails the read and the file is read by
  :func:`.files.read_table`, which names the rows (D002) as for every engine.  Spark
  skips every control character after a comma (a tab, say), where pandas skips only
  spaces; Spark keeps text after a closing quote (``"a" b``) with the quotes, where
  pandas appends it to the value (``a b``); Spark reads bytes that are not UTF-8 as
  U+FFFD, where pandas refuses them: a first, splittable pass over the lines
  (:data:`_SUSPECT`) looks for these, and a file holding one is read by
  :func:`.files.read_table` (its diagnostic, or pandas' reading).
- Parquet: the column types kept; NaN is missing, as for pandas.
- A pandas DataFrame: ``spark.createDataFrame(frame)`` for columns of text, numbers and
  booleans; any other frame is counted by :class:`.pandas.PandasEngine`.

Rows for error messages (:meth:`Tally.locate`) take a second pass: Parquet's own row
index (``_metadata.row_index``), else the position of each row in its partition
(``monotonically_increasing_id``) plus the rows of the partitions before it.
"""
from __future__ import annotations

import os
import re
import shlex
import warnings
from typing import Any, ClassVar, Iterator, Sequence

import numpy as np
import pandas as pd

from privspec.errors import DataError
from privspec.backends.data.csv_cells import read_csv
from privspec.backends.data.engines.fallback import PandasFallback
from privspec.backends.data.tally import Tally, canonical

#: a CSV line that Spark may read otherwise than pandas: a byte that is not UTF-8 (Spark
#: reads U+FFFD, pandas refuses the file); a control character (other than a line break)
#: at the start of a field after spaces (Spark skips it, pandas keeps it); text after a
#: closing quote (``"a" b,`` or ``"a"  ,``: pandas appends it to the value, Spark keeps the
#: quotes); a cell guarded for spreadsheets (``'=...``, :func:`.csv_cells.guard_cells`: pandas
#: drops the quote).  A line inside a quoted field, or a quote inside an unquoted value, may
#: match too: the file is then read by pandas, with the same results.
_SUSPECT = ("\ufffd|(^|,) *[\\x00-\\x09\\x0b\\x0c\\x0e-\\x1f]|[^, \"]\"[^\",\\r\\n]"
            "|(^|,) *\"?'+([=+\\-@\\t\\r]|$)")


def _master_configured() -> bool:
    """Whether a master is set outside this code: spark-submit (its gateway),
    ``PYSPARK_SUBMIT_ARGS`` or ``spark-defaults.conf``."""
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        return True
    if "--master" in shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", "")):
        return True
    folder = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None)
    if folder:
        try:
            with open(os.path.join(folder, "spark-defaults.conf"), encoding="utf-8") as f:
                return any(re.match(r"\s*spark\.master[\s=:]", line) for line in f)
        except OSError:
            pass
    return False


def spark_session() -> Any:
    """The session in use (the user's, e.g. on a cluster), else a new local one."""
    from pyspark import SparkContext  # extra: spark
    from pyspark.sql import SparkSession  # extra: spark

    if SparkSession.getActiveSession() is not None or SparkContext._active_spark_context is not None:
        return SparkSession.builder.getOrCreate()
    builder = (SparkSession.builder.appName("privspec")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    if not _master_configured():
        builder = builder.master("local[*]")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL")  # a file Spark refuses is read by pandas: no stack traces
    return spark


def _spark_ready(frame: pd.DataFrame) -> bool:
    """Whether Spark reads each column of ``frame`` as pandas does: text (``str`` and
    missing values only), numbers or booleans; not categories, dates, mixed objects."""
    for c in frame.columns:
        dtype = frame[c].dtype
        if pd.api.types.is_bool_dtype(dtype) and dtype == np.bool_:
            continue
        if pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_float_dtype(dtype):
            if isinstance(dtype, np.dtype):
                continue
            return False  # nullable extension types: leave them to pandas
        if pd.api.types.is_string_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype):
            if pd.api.types.infer_dtype(frame[c], skipna=True) in ("string", "empty"):
                continue
        return False
    return True


class SparkEngine(PandasFallback):
    """Counts in Spark: ``df.groupBy(cells).count()``, on the session in use (a cluster)
    or a local one; see the module notes for the reading conventions."""

    name: ClassVar[str] = "spark"
    needs: ClassVar[str] = "pyspark"
    extra: ClassVar[str | None] = "spark"
    #: the default for no data: asked for by name (``--engine spark``)
    default_for: ClassVar[tuple[type, ...]] = ()
    rank: ClassVar[int] = 0

    def __init__(self, source: Any, name: str | None = None):
        from pyspark.sql import functions as F  # extra: spark

        self._F = F
        self.spark = spark_session()
        self._start()
        self._checked = False
        if isinstance(source, pd.DataFrame):
            self._open_frame(source, name)
            if not len(source.columns) or not _spark_ready(source):
                self._use_pandas()
                return
            frame = source.copy(deep=False)
            frame.columns = [f"c{i}" for i in range(len(frame.columns))]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self._df = self.spark.createDataFrame(frame)
            except Exception:
                self._use_pandas()
            return
        path = self._open_file(source, name)
        self._path = os.path.abspath(path)
        try:
            if self._csv:
                self._header = [str(c) for c in read_csv(path, nrows=0).columns]  # pandas' names
                schema = ", ".join(f"c{i} STRING" for i in range(len(self._header)))
                self._df = self.spark.read.csv(
                    self._path, schema=schema, header=True, enforceSchema=True, inferSchema=False, sep=",",
                    quote='"', escape='"', multiLine=True, ignoreLeadingWhiteSpace=True,
                    ignoreTrailingWhiteSpace=False, mode="FAILFAST", encoding="UTF-8", comment=None)
            else:
                df = self.spark.read.parquet(self._path)
                self._header = list(df.columns)
                self._df = df.toDF(*[f"c{i}" for i in range(len(self._header))])
        except DataError:
            raise
        except Exception:
            self._use_pandas()

    def has_rows(self) -> bool:
        """Whether the table holds a data row (Spark takes the first)."""
        if self._fallback is not None or self._suspect():
            return self._use_pandas().has_rows()
        try:
            return bool(self._df.take(1))
        except Exception:
            return self._use_pandas().has_rows()

    # ---- counting ---------------------------------------------------------------------------
    def _suspect(self) -> bool:
        """A CSV holding text Spark reads otherwise than pandas (:data:`_SUSPECT`): one
        splittable pass over its lines, once per engine."""
        if not self._csv or self._checked:
            return False
        self._checked = True
        lines = self.spark.read.text(self._path)
        return not lines.filter(lines["value"].rlike(_SUSPECT)).isEmpty()

    def _cells(self, columns: Sequence[str]) -> list[Any]:
        """The cells of ``columns`` as every engine reads them, named ``k0, k1, ...``: CSV
        text with ``""`` for an empty cell; NaN as a missing value."""
        from pyspark.sql.types import DoubleType, FloatType  # extra: spark

        F = self._F
        types = {f.name: f.dataType for f in self._df.schema.fields}
        out = []
        for j, c in enumerate(columns):
            i = f"c{self._header.index(c)}"
            cell = F.col(i)
            if self._csv:
                cell = F.coalesce(cell, F.lit(""))
            elif isinstance(types[i], (DoubleType, FloatType)):
                cell = F.when(F.isnan(cell), F.lit(None)).otherwise(cell)
            out.append(cell.alias(f"k{j}"))
        return out

    def _count(self, columns: list[str]) -> Tally:
        keys = [f"k{j}" for j in range(len(columns))]
        try:
            if self._suspect():
                return self._use_pandas().tally(columns)
            counted = self._df.select(*self._cells(columns)).groupBy(*keys).count()
            values, counts = self._collect(counted, columns, "count")
        except DataError:
            raise
        except Exception:
            return self._use_pandas().tally(columns)
        values, counts, _ = canonical(values, counts)

        def locator(mask: np.ndarray) -> np.ndarray:
            return self._rows(columns, mask)

        return Tally(tuple(columns), values, counts, self.source, locator)

    def _collect(self, grouped: Any, columns: list[str], count: str) -> tuple[pd.DataFrame, np.ndarray]:
        """The distinct tuples of ``grouped`` and its ``count`` column, on the driver."""
        return self._tuples(grouped.collect(), grouped.schema, columns, count)

    @staticmethod
    def _tuples(rows: list[Any], schema: Any, columns: list[str], count: str) -> tuple[pd.DataFrame, np.ndarray]:
        """Collected tuples as a frame with the dtypes pandas would give (int64, float64
        where a number is missing, bool, else objects), and the ``count`` column."""
        # extra: spark
        from pyspark.sql.types import BooleanType, ByteType, DoubleType, FloatType, IntegerType, LongType, ShortType

        types = {f.name: f.dataType for f in schema.fields}
        data = {}
        for j, c in enumerate(columns):
            k = f"k{j}"
            cells = [r[k] for r in rows]
            kind = types[k]
            has_none = any(v is None for v in cells)
            if isinstance(kind, (LongType, IntegerType, ShortType, ByteType)):
                data[c] = (np.array([np.nan if v is None else float(v) for v in cells], dtype=float) if has_none
                           else np.array(cells, dtype=np.int64))
            elif isinstance(kind, (DoubleType, FloatType)):
                data[c] = np.array([np.nan if v is None else v for v in cells], dtype=float)
            elif isinstance(kind, BooleanType) and not has_none:
                data[c] = np.array(cells, dtype=bool)
            else:
                data[c] = pd.Series([bytes(v) if isinstance(v, bytearray) else v for v in cells], dtype=object)
        values = pd.DataFrame(data, columns=columns) if rows else pd.DataFrame(
            {c: pd.Series([], dtype=object) for c in columns})
        counts = np.array([r[count] for r in rows], dtype=np.int64)
        return values, counts

    def chunks(self, rows: int) -> Iterator[pd.DataFrame]:
        """The table in pieces of ``rows`` rows, in file order (every column, cells as the
        other engines read them), streamed to the driver partition by partition
        (``toLocalIterator``: a CSV is one partition, a Parquet file's partitions come in
        file order) -- privatize writes one file, so its rows pass through the driver."""
        if self._fallback is not None or self._suspect():
            yield from self._use_pandas().chunks(rows)
            return
        cells = self._cells(self._header)
        buffer: list[tuple] = []
        empty = True
        for row in self._df.select(*cells).toLocalIterator(prefetchPartitions=True):
            buffer.append(tuple(row))
            if len(buffer) == rows:
                yield self._piece(buffer)
                buffer, empty = [], False
        if buffer or empty:
            yield self._piece(buffer)

    def _piece(self, rows: list[tuple]) -> pd.DataFrame:
        data = {c: pd.Series([r[j] for r in rows], dtype=object) for j, c in enumerate(self._header)}
        frame = pd.DataFrame(data, columns=self._header)
        for c in frame.columns:   # numbers stay numbers (Parquet), as the other engines give them
            if len(frame) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in frame[c]):
                frame[c] = pd.to_numeric(frame[c])
        return frame

    # ---- rows for messages ------------------------------------------------------------------
    def _numbered(self, columns: Sequence[str]) -> Any:
        """The cells of ``columns`` (``k0, k1, ...``) with ``r``: the 1-based row, in file order."""
        F = self._F
        cells = self._cells(columns)
        if self._path is not None and not self._csv:
            try:  # Parquet's own row index
                return self._df.select((F.col("_metadata.row_index") + 1).alias("r"), *cells)
            except Exception:  # none in this Spark: the partitions' order below
                pass
        ided = self._df.select(F.monotonically_increasing_id().alias("m"), *cells)
        if self._csv:  # one file, never split (multiLine): one partition, its rows in file order
            return ided.select((F.col("m") + 1).alias("r"), *cells_of(columns))
        # a frame sliced in order: the position in its partition, after the rows of the partitions before
        from pyspark import StorageLevel  # extra: spark

        ided = ided.persist(StorageLevel.MEMORY_AND_DISK)
        self._persisted.append(ided)
        part = F.shiftright(F.col("m"), 33)
        sizes = {int(r["p"]): int(r["n"])
                 for r in ided.groupBy(part.alias("p")).agg(F.count(F.lit(1)).alias("n")).collect()}
        before, total = [], 0
        for p in sorted(sizes):
            before.append((p, total))
            total += sizes[p]
        offsets = self.spark.createDataFrame(before, "p LONG, o LONG")
        local = F.col("m").bitwiseAND(F.lit((1 << 33) - 1))
        return ided.withColumn("p", part).join(F.broadcast(offsets), "p") \
            .select((F.col("o") + local + 1).alias("r"), *cells_of(columns))

    def _rows(self, columns: list[str], mask: np.ndarray) -> np.ndarray:
        """The 1-based rows whose tuple is selected by ``mask`` (over the canonical tuples),
        in two jobs: the tuples counted again with their first rows and put in canonical
        order on the driver, which names the first rows of the wanted tuples; then every
        row whose tuple's first row is one of those."""
        from pyspark.sql import Window  # extra: spark

        if self._fallback is not None:
            return np.asarray(self._fallback.tally(columns).locate(mask), dtype=np.int64)
        F = self._F
        keys = cells_of(columns)
        self._persisted: list[Any] = []
        try:
            numbered = self._numbered(columns)
            firsts = numbered.groupBy(*keys).agg(F.min("r").alias("first"), F.count(F.lit(1)).alias("n"))
            rows = firsts.collect()
            values, counts = self._tuples(rows, firsts.schema, columns, "n")
            first = np.array([r["first"] for r in rows], dtype=np.int64)
            _, _, order = canonical(values, counts)
            mask = np.asarray(mask, dtype=bool)
            if len(order) != len(mask):
                raise ValueError(f"{self.source} changed since it was counted: "
                                 f"{len(order)} distinct tuples now, {len(mask)} then")
            wanted = sorted(int(x) for x in first[order[mask]])
            if not wanted:
                return np.empty(0, dtype=np.int64)
            tagged = numbered.withColumn("first", F.min("r").over(Window.partitionBy(*keys)))
            if len(wanted) <= 1000:
                picked = tagged.filter(F.col("first").isin(wanted))
            else:  # many tuples: a broadcast join rather than a long IN list
                firsts_wanted = self.spark.createDataFrame([(w,) for w in wanted], "first LONG")
                picked = tagged.join(F.broadcast(firsts_wanted), "first")
            got = picked.select("r").collect()
            return np.sort(np.array([int(r["r"]) for r in got], dtype=np.int64))
        finally:
            for frame in self._persisted:
                frame.unpersist()


def cells_of(columns: Sequence[str]) -> list[Any]:
    """The columns ``k0, k1, ...`` that :meth:`SparkEngine._cells` names."""
    from pyspark.sql import functions as F  # extra: spark

    return [F.col(f"k{j}") for j in range(len(columns))]
