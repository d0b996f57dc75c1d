"""float_order: the order that sorts floats by numpy's integer sort, against np.argsort."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privspec.backends.data.float_sort import float_order


def _check(x: np.ndarray) -> None:
    order, values = float_order(x)
    ref = np.argsort(x, kind="stable")
    assert np.array_equal(values, x[ref])
    assert np.array_equal(values, x[order])
    assert np.array_equal(np.sort(order), np.arange(x.size))
    if not np.any(x == 0):       # (-0.0 before 0.0: equal values, not in index order)
        assert np.array_equal(order, ref)


@pytest.mark.parametrize("kind", ["normal", "repeats", "near_ones", "tiny", "ulps"])
def test_the_order_is_the_stable_argsorts_past_the_packed_bits(kind):
    # 20,000 values: past the size argsort takes alone; values that agree in their top
    # 49 bits (near_ones, tiny, ulps) must be put in order by the repair
    rng = np.random.default_rng(3)
    n = 20_000
    x = {"normal": rng.standard_normal(n),
         "repeats": rng.integers(-5, 5, n).astype(float),
         "near_ones": np.where(rng.random(n) < 0.3, -np.inf, 1.0 + rng.standard_normal(n) * 1e-9),
         "tiny": np.where(rng.random(n) < 0.3, np.inf, rng.standard_normal(n) * 1e-300),
         "ulps": (1.0 + rng.integers(0, 1000, n) * 2.0 ** -52) * np.where(rng.random(n) < 0.5, -1, 1)}[kind]
    _check(x)


def test_signed_zeros_and_infinities_sort_as_floats():
    x = np.tile([0.0, -0.0, np.inf, -np.inf, 1e-320, -1e-320, 5.0], 1000)
    order, values = float_order(x)
    assert np.all(values[1:] >= values[:-1])
    assert np.array_equal(values, np.sort(x))
    assert values[0] == -np.inf and values[-1] == np.inf


def test_out_receives_the_sorted_values():
    x = np.random.default_rng(1).standard_normal(10_000)
    out = np.empty_like(x)
    order, values = float_order(x, out=out)
    assert values is out and np.array_equal(out, np.sort(x))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=False, width=64), min_size=0, max_size=300), st.integers(1, 40))
def test_any_floats_repeated(values, times):
    # repeated past the small size, so that the packed sort runs
    _check(np.tile(np.array(values, dtype=float), times * 20))
