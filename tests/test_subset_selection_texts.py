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
