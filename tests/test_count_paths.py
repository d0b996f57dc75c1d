"""The short cuts on the counting paths give what the general path gives.

- A release counted straight from categorical codes or one factorization of text columns
  (``_direct_counts``) equals the tally's count, whatever the categories' order; a missing
  value, another value or a missing-value word falls back to the tally and its errors
  name the rows.
- ``missing_mask`` checks the distinct values of a long column once: the same mask as
  value by value.
- ``frame_nested`` finds a nested first value after missing ones without a pass over
  the column.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import privspec
from privspec.backends.data import tally as tally_module
from privspec.backends.data.checks import frame_nested
from privspec.backends.data.tally import missing_mask
from privspec.backends.releases.backend import count_records
from privspec.errors import DataError

SPEC = privspec.load("""
variable sex: categorical {F, M}
variable band: categorical {low, mid, high}
release A = counts(sex, band) with geometric(epsilon = 1)
""").model
RELEASE = SPEC.releases["A"]


def _frames(n: int = 2000, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    raw = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "band": rng.choice(["low", "mid", "high"], n)})
    # categories in another order than the labels, one of them never used, one padded
    cat = raw.assign(sex=pd.Categorical(raw["sex"], categories=["M", "F", "X"]),
                     band=pd.Categorical(raw["band"].replace({"mid": " mid"}), categories=["high", " mid", "low"]))
    return raw, cat


def test_categorical_codes_count_as_the_tally_does() -> None:
    raw, cat = _frames()
    want = count_records(SPEC, RELEASE, raw)
    assert want.sum() == len(raw)
    assert np.array_equal(count_records(SPEC, RELEASE, cat), want)
    # and as a plain crosstab, in the labels' order
    tab = pd.crosstab(raw["sex"], raw["band"]).reindex(index=["F", "M"], columns=["low", "mid", "high"])
    assert np.array_equal(want, tab.to_numpy())


@pytest.mark.parametrize("value, code", [(None, "D004"), ("X", "D601"), ("NA", "D004")])
def test_categorical_problems_get_the_tallys_errors(value, code) -> None:
    _, cat = _frames(50)
    sex = cat["sex"].astype(object)
    sex.iloc[[3, 7]] = value
    bad = cat.assign(sex=pd.Categorical(sex, categories=["M", "F", "X", "NA"]))
    with pytest.raises(DataError) as err:
        count_records(SPEC, RELEASE, bad)
    d = err.value.diagnostics[0]
    assert d.code == code and tuple(d.rows) == (4, 8) and d.columns == ("sex",)


def test_text_columns_count_directly_as_the_tally_does(monkeypatch) -> None:
    raw, _ = _frames()
    padded = raw.assign(band=raw["band"].replace({"mid": " mid "}))
    want = count_records(SPEC, RELEASE, raw)
    from privspec.backends.releases import backend as release_backend
    monkeypatch.setattr(release_backend, "_direct_counts", lambda *a: None)   # the tally alone
    assert np.array_equal(count_records(SPEC, RELEASE, padded), want)
    monkeypatch.undo()
    assert np.array_equal(count_records(SPEC, RELEASE, padded), want)
    assert np.array_equal(count_records(SPEC, RELEASE, padded.astype("string")), want)


@pytest.mark.parametrize("value, code", [(None, "D004"), ("X", "D601"), (" NA", "D004"), (3, "D601")])
def test_text_problems_get_the_tallys_errors(value, code) -> None:
    raw, _ = _frames(50)
    sex = raw["sex"].astype(object)
    sex.iloc[[3, 7]] = value
    with pytest.raises(DataError) as err:
        count_records(SPEC, RELEASE, raw.assign(sex=sex))
    d = err.value.diagnostics[0]
    assert d.code == code and tuple(d.rows) == (4, 8) and d.columns == ("sex",)


def test_missing_mask_of_distinct_values_equals_value_by_value(monkeypatch) -> None:
    values = pd.Series(["a", " NA ", "b", None, "a", float("nan"), "", " x", 3, "null"] * 600, dtype=object)
    assert len(values) > tally_module.DISTINCT_FIRST
    fast = missing_mask(values)
    monkeypatch.setattr(tally_module, "DISTINCT_FIRST", 10 ** 9)
    slow = missing_mask(values)
    assert np.array_equal(fast, slow)
    assert fast[:10].tolist() == [False, True, False, True, False, True, True, False, False, True]
    cat = pd.Series(pd.Categorical(["a", "NA", None, "b"], categories=["a", "NA", "b"]))
    assert missing_mask(cat).tolist() == [False, True, True, False]


def test_nested_first_value_after_missing_ones() -> None:
    n = 100_000
    col = np.empty(n, dtype=object)
    col[:5000] = None
    col[5000:] = [[1, 2]] * (n - 5000)
    frame = pd.DataFrame({"x": col, "y": ["a"] * n, "z": [None] * n})
    assert frame_nested(frame) == frozenset({"x"})
