"""Local hashing's reports (``SEED:VALUE``) written from one buffer and read from the rows'
bytes (:func:`privspec.backends.oracles.sampling.decimal_pairs`,
:func:`~privspec.backends.oracles.sampling.parse_decimal_pairs`): the same texts as one
Python string per report, the same reports as the regular-expression parse, the same
estimates from the rows as from the distinct reports, and D013 with rows for a text that
is not a report."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.backends.core.rowrandom import RowRandom, row_key, stream_of
from privspec.backends.oracles import reports as oracle_reports
from privspec.backends.oracles import sampling as S
from privspec.backends.oracles.pure import KINDS, format_reports, oracle, parse_reports, privatize

LABELS = [f"c{i}" for i in range(12)]


def _spec(kind: str, method: str = "mom") -> privspec.Spec:
    return privspec.load("variable x: categorical {" + ", ".join(LABELS) + "}\n"
                         f"mechanism m = {kind}(x, epsilon = 1.5)\n"
                         f"query q = estimate distribution(x) from m by {method}\n")


def _frame(n: int) -> pd.DataFrame:
    x = np.random.default_rng(5).integers(0, len(LABELS), n)
    return pd.DataFrame({"x": np.asarray(LABELS, dtype=object)[x]})


@pytest.mark.parametrize("top", [1, 10, 1000, 10 ** 8, 10 ** 9, 10 ** 10, S.LH_PRIME ** 3, 10 ** 18 - 1])
def test_decimal_pairs_are_the_decimal_texts_and_parse_back(top: int) -> None:
    rng = np.random.default_rng(top % 1000)
    a, b = rng.integers(0, top, 3000), rng.integers(0, top, 3000)
    a[:3], b[:3] = [0, top - 1, 0], [0, 0, top - 1]
    data, offsets = S.decimal_pairs(a, b)
    texts = [data[offsets[i]:offsets[i + 1]].tobytes().decode() for i in range(len(a))]
    assert texts == [f"{x}:{y}" for x, y in zip(a, b)]
    for lo, hi in ((0, 3000), (7, 2001)):                       # a slice of the rows: its own offsets
        got_a, got_b, ok = S.parse_decimal_pairs(data, offsets[lo:hi + 1])
        assert ok.all() and np.array_equal(got_a, a[lo:hi]) and np.array_equal(got_b, b[lo:hi])


def _reference(o, texts: list) -> tuple[list[tuple[int, int]], list[int]]:
    """The parse before the rows' bytes were read: ``DEC:DEC`` by regular expression, then
    the seed below LH_PRIME^3 and the value below g."""
    good, bad = [], []
    for i, t in enumerate(texts):
        m = re.fullmatch(r"(0|[1-9][0-9]{0,17}):(0|[1-9][0-9]{0,17})", t) if isinstance(t, str) else None
        if m and int(m[1]) < S.LH_PRIME ** 3 and int(m[2]) < o.g:
            good.append((int(m[1]), int(m[2])))
        else:
            bad.append(i)
    return good, bad


@pytest.mark.parametrize("kind", ["blh", "olh"])
def test_local_hashing_parse_equals_the_regular_expression(kind: str) -> None:
    o = oracle(kind, 12, 1.5)
    P3 = S.LH_PRIME ** 3
    valid = list(format_reports(o, privatize(o, np.arange(12) % 12, RowRandom(3, rows=range(12)))))
    tricky = ["", ":", "1:", ":1", "01:1", "1:01", "0:0", "00:0", "1:2:3", "1:1 ", " 1:1", "1a:1", "+1:1", "-1:1",
              "1.0:1", "é:1", "\uff11:1", "1\uff1a1", "1;1", "1::1", f"{P3 - 1}:0", f"{P3}:0", f"{10 ** 17}:0",
              "1" * 18 + ":0", "1" * 19 + ":0", "1:" + "0" * 18, f"1:{o.g - 1}", f"1:{o.g}", "1:" + "9" * 19,
              "١:1", "1:1\n", None, 5]
    texts = valid[:4] + tricky + valid[4:]
    reports, bad = parse_reports(o, texts)
    good, want_bad = _reference(o, texts)
    assert bad.tolist() == want_bad
    assert [(int(s), int(v)) for s, v in zip(reports["seed"], reports["value"])] == good


def test_parse_of_the_rows_bytes_equals_the_regular_expression_row_by_row() -> None:
    """parse_decimal_pairs on buffers of valid and invalid texts mixed (empty rows, several
    or no separators, leading zeros, bytes of multi-byte characters, a slice of the rows
    that starts inside the buffer): each row as the regular expression reads it alone."""
    pieces = ["0:3", "1207:10", "", ":", "1:", ":1", "01:1", "1:01", "00:0", "1:2:3", "1:1 ", " 1:1", "+1:1",
              "-1:1", "é:1", "\uff11:1", "1::1", "1" * 18 + ":0", "1" * 19 + ":0", "1:" + "9" * 18,
              "1:" + "9" * 19, "١:1", "1:1\n", "0", "12", "0:0", f"{S.LH_PRIME ** 3}:5"]
    pattern = re.compile(r"(0|[1-9][0-9]{0,17}):(0|[1-9][0-9]{0,17})")
    rng = np.random.default_rng(8)
    for _ in range(200):
        texts = list(rng.choice(pieces, size=int(rng.integers(1, 12))))
        encoded = [t.encode() for t in texts]
        skip = int(rng.integers(0, 3))                           # rows before the slice
        data = np.frombuffer(b"9:9"[:skip] + b"".join(encoded), dtype=np.uint8)
        offsets = skip + np.concatenate([[0], np.cumsum([len(e) for e in encoded])])
        a, b, ok = S.parse_decimal_pairs(data, offsets)
        want = [pattern.fullmatch(t) for t in texts]
        assert ok.tolist() == [m is not None for m in want]
        assert a.tolist() == [int(m[1]) if m else 0 for m in want]
        assert b.tolist() == [int(m[2]) if m else 0 for m in want]


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "grr"])   # a spec's grr: finite randomized response
def test_privatize_writes_the_texts_of_format_reports(kind: str) -> None:
    """The API's column (categorical, Arrow text from one buffer, or one string per row)
    holds, row by row, the texts the core's format_reports writes for the same draws."""
    spec = _spec(kind)
    frame = _frame(2000)
    column = spec.privatize(frame, "m", seed=4)["x"]
    o = oracle(kind, len(LABELS), 1.5)
    codes = pd.Categorical(frame["x"], categories=LABELS).codes.astype(np.int64)
    core = privatize(o, codes, RowRandom(row_key(4), rows=range(len(codes)), stream=stream_of("m")))
    assert [str(t) for t in column] == list(format_reports(o, core))


def test_local_hashing_column_is_arrow_text() -> None:
    column = _spec("olh").privatize(_frame(100), "m", seed=1)["x"]
    assert isinstance(column.array, pd.arrays.ArrowExtensionArray)


@pytest.mark.parametrize("kind", ["blh", "olh"])
def test_rows_counted_equal_the_distinct_reports(kind: str, monkeypatch, tmp_path) -> None:
    """``by mom`` counts the rows' texts (no distinct reports read): the same estimate and
    standard errors, to the last digit, as from the distinct reports (a categorical column,
    a file through DuckDB); ``by mle`` reads the distinct reports and parses them the same."""
    pytest.importorskip("duckdb")
    spec = _spec(kind)
    reports = spec.privatize(_frame(3000), "m", seed=2)
    calls = []
    original = oracle_reports.read_reports
    monkeypatch.setattr(oracle_reports, "read_reports", lambda *a: calls.append(1) or original(*a))
    rowwise = spec.run(reports, ["q"])["q"]
    assert not calls
    as_object = spec.run(reports.astype({"x": object}), ["q"])["q"]
    assert not calls                                             # an object column: converted once
    distinct = spec.run(reports.astype({"x": "category"}), ["q"])["q"]
    assert calls
    path = tmp_path / "r.csv"
    reports.to_csv(path, index=False)
    outs = [rowwise, as_object, distinct, spec.run(str(path), ["q"], engine="duckdb")["q"]]
    got = {json.dumps([r.value.values, r.extras["se"].values], default=float) for r in outs}
    assert len(got) == 1
    mle = _spec(kind, "mle")
    a, b = (mle.run(r, ["q"])["q"] for r in (reports, reports.astype({"x": "category"})))
    assert json.dumps(a.value.values, default=float) == json.dumps(b.value.values, default=float)


def test_a_text_that_is_not_a_report_gets_d013_with_its_rows() -> None:
    spec = _spec("olh")
    reports = spec.privatize(_frame(500), "m", seed=3)
    bad = reports["x"].astype(object)
    bad[[4, 300]] = ["01:1", bad[300] + ":0"]
    d = spec.run(pd.DataFrame({"x": pd.array(bad, dtype="string[pyarrow]")}), ["q"]).failures["q"].diagnostics[0]
    assert d.code == "D013" and d.rows == (5, 301) and "'01:1'" in d.message
