"""Subset selection's reports as text (``c1|c2|...``, k increasing codes): written and read
by Arrow's kernels, so that d = 256 (k = 69 at epsilon = 1) goes through the API (a
regular expression of k fields passed RE2's bound on repetitions there), with the same
reports as the regular expression reads and the core's estimate."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.backends.core.rowrandom import RowRandom, row_key, stream_of
from privspec.backends.oracles.pure import format_reports, oracle, parse_reports, privatize, support_counts, unbiased


def test_d256_through_the_api_is_the_core_estimate() -> None:
    d, n = 256, 3000
    labels = [f"c{i}" for i in range(d)]
    spec = privspec.load("variable x: categorical {" + ", ".join(labels) + "}\n"
                         "mechanism m = ss(x, epsilon = 1)\nquery q = estimate distribution(x) from m by mom\n")
    x = np.random.default_rng(2).integers(0, d, n)
    reports = spec.privatize(pd.DataFrame({"x": pd.Categorical.from_codes(x, categories=labels)}), "m", seed=1)
    got = np.asarray(spec.run(reports, ["q"])["q"].value.values, dtype=float)
    o = oracle("ss", d, 1.0)
    core = privatize(o, x, RowRandom(row_key(1), rows=range(n), stream=stream_of("m")))
    assert np.allclose(got, unbiased(o, support_counts(o, core), n), rtol=0, atol=1e-12)


@pytest.mark.parametrize("d, eps", [(12, 1.5), (6, 0.5), (12, 6.0), (40, 1.0), (3, 3.0)])
def test_parse_equals_the_regular_expression(d: int, eps: float) -> None:
    o = oracle("ss", d, eps)
    valid = list(format_reports(o, privatize(o, np.arange(30) % d, RowRandom(3, rows=range(30)))))
    tricky = ["", "|", "1|", "|1", "01|2", "1|2|", "1||2", "2|1", "1|1", "a|b", " 1|2", "1|2 ", "+1|2", "-1|2",
              "١|2", "\uff11|2", f"{d}|{d + 1}", "0", "1", "0|1", "0|1|2", "0|1|2|3", "1" * 19 + "|2", "00",
              "0|01", "5|7|9", None, 3, "1|2\n", "é|1"]
    texts = valid[:5] + tricky + valid[5:]
    dec = r"(0|[1-9][0-9]{0,17})"
    pattern = re.compile(dec + rf"(?:\|{dec})" * (o.k - 1))
    want_bad, want = [], []
    for i, t in enumerate(texts):
        m = pattern.fullmatch(t) if isinstance(t, str) else None
        codes = [int(c) for c in t.split("|")] if m else []
        if m and codes[-1] < d and all(a < b for a, b in zip(codes, codes[1:])):
            want.append(codes)
        else:
            want_bad.append(i)
    reports, bad = parse_reports(o, texts)
    assert bad.tolist() == want_bad
    bits = np.unpackbits(reports, axis=1, count=d, bitorder="little").astype(bool)
    assert [np.flatnonzero(b).tolist() for b in bits] == want


def _d256(n: int = 2000):
    d = 256
    labels = [f"c{i}" for i in range(d)]
    spec = privspec.load("variable x: categorical {" + ", ".join(labels) + "}\n"
                         "mechanism m = ss(x, epsilon = 1)\nquery q = estimate distribution(x) from m by mom\n")
    x = np.random.default_rng(7).integers(0, d, n)
    reports = spec.privatize(pd.DataFrame({"x": pd.Categorical.from_codes(x, categories=labels)}), "m", seed=1)
    o = oracle("ss", d, 1.0)
    core = privatize(o, x, RowRandom(row_key(1), rows=range(n), stream=stream_of("m")))
    return spec, reports, o, core


def test_beyond_64_categories_the_text_is_hex_read_from_the_rows_bytes(monkeypatch) -> None:
    """d = 256: each report is its 256 bits in 64 hex digits (unary encoding's text), read
    from the column's bytes with no tally of the rows, to the core's estimate."""
    spec, reports, o, core = _d256()
    texts = reports["x"].astype(object)
    assert texts.str.fullmatch("[0-9a-f]{64}").all()
    bits = np.unpackbits(core, axis=1, count=256, bitorder="little")
    assert [int(t[2 * b:2 * b + 2], 16) for t in texts[:3] for b in range(32)] == core[:3].ravel().tolist()
    assert (bits.sum(axis=1) == o.k).all()
    from privspec.backends.data.engines import PandasEngine
    monkeypatch.setattr(PandasEngine, "_tally", lambda *a, **k: pytest.fail("the rows were tallied"))
    got = np.asarray(spec.run(reports, ["q"])["q"].value.values, dtype=float)
    assert np.allclose(got, unbiased(o, support_counts(o, core), len(core)), rtol=0, atol=1e-12)


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_the_codes_text_written_before_still_reads(engine: str, tmp_path) -> None:
    """Reports saved in the earlier text (codes joined by |) read to the same estimate as the
    hex, alone or mixed with hex rows, from a DataFrame or a CSV file."""
    spec, reports, o, core = _d256()
    old = pd.Series(np.asarray(o.arrow_texts(core).to_pylist(), dtype=object))
    mixed = old.where(np.arange(len(old)) % 2 == 0, reports["x"].astype(object))
    want = spec.run(reports, ["q"])["q"].value.values
    for column in (old, mixed):
        frame = pd.DataFrame({"x": column})
        if engine == "duckdb":
            frame.to_csv(tmp_path / "r.csv", index=False)
            got = spec.run(str(tmp_path / "r.csv"), ["q"], engine="duckdb")["q"].value.values
        else:
            got = spec.run(frame, ["q"])["q"].value.values
        assert np.allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=0, atol=1e-12)


def test_hex_texts_that_are_no_report_are_named() -> None:
    """A hex text of the right width whose subset is not of size k, or with a padding bit set,
    is not a report: D013 names it (both readers)."""
    spec, reports, o, _ = _d256(200)
    texts = reports["x"].astype(object).to_numpy(copy=True)   # written below (pandas 3: views are read-only)
    texts[3] = "f" + texts[3][1:] if texts[3][0] != "f" else "0" + texts[3][1:]   # 4 bits more or fewer
    got = spec.run(pd.DataFrame({"x": texts}), ["q"])
    diag = got.failures["q"].diagnostics[0]
    assert diag.code == "D013" and diag.rows == (4,)
    parsed, bad = parse_reports(o, [texts[3], "0" * 64, reports["x"].astype(object)[0], "G" * 64])
    assert bad.tolist() == [0, 1, 3] and len(parsed) == 1
