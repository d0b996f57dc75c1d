"""Numbers read from data, each correctly rounded to the nearest double, and the largest
count privspec accepts.

Every data file, whatever engine reads it, goes through :func:`parse_numbers`: a report
``"0.1"`` is the same double in every estimate, and a value that is no number (or, for
a count, no integer) is marked bad for the caller to name by row.
"""
from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

#: the largest count magnitude privspec accepts: integers up to 2^53 are exact as doubles,
#: so every sum, margin and estimate computed from such counts is exact too
MAX_COUNT = 2 ** 53


def parse_numbers(values: Sequence[Any] | pd.Series | np.ndarray,
                  integer: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Numbers read from data, each correctly rounded to the nearest double.

    Every distinct string is converted once with Python's :func:`float` (correctly
    rounded, unlike parsers that round some 17-digit decimals to a neighbouring
    double) and mapped back to the rows with :func:`pandas.factorize`, so the cost is
    one hashing pass over the rows plus one conversion per distinct value.

    Parameters
    ----------
    values : sequence of str (or numbers)
        Text such as ``"0.1"``, ``" -2.5e3 "``, ``"inf"``; numeric input is taken as it is.
    integer : bool
        Also mark as bad every value that is not exactly an integer (``"3"``, ``"3.0"``
        and ``"3e2"`` are; ``"3.5"`` is not, nor a decimal that merely rounds to one).

    Returns
    -------
    numbers : float64 array
        NaN where bad; with ``integer``, +-inf for an integer beyond +-2^53 (:data:`MAX_COUNT`:
        not exact as a double), for the caller to name as out of range.
    bad : bool array
        True for a missing value, NaN, or text that is not a number (digit separators
        such as ``1_000`` or ``1,000`` included).

    Examples
    --------
    >>> x, bad = parse_numbers(["0.1", " 2e3", "inf", "ten", "1_0", ""])
    >>> x[:3].tolist(), bad.tolist()
    ([0.1, 2000.0, inf], [False, False, False, True, True, True])
    >>> parse_numbers(["3", "3.0", "3.5", "1e2", "1e30"], integer=True)[0].tolist()
    [3.0, 3.0, nan, 100.0, inf]
    """
    series = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=object), dtype=object)
    if pd.api.types.is_bool_dtype(series.dtype):
        series = series.astype(object).astype(str)
    if pd.api.types.is_numeric_dtype(series.dtype):  # already numbers (Parquet): nothing to round
        numbers = series.to_numpy(dtype=float, na_value=np.nan)
        if integer:
            with np.errstate(invalid="ignore"):
                numbers[np.isfinite(numbers) & (numbers % 1 != 0) | np.isnan(numbers) | np.isinf(numbers)] = np.nan
            if pd.api.types.is_integer_dtype(series.dtype):  # int64 beyond 2^53: compare as integers
                big = (series.abs() > MAX_COUNT).to_numpy(dtype=bool, na_value=False)
                numbers[big] = np.copysign(np.inf, numbers[big])
            numbers[np.abs(numbers) > MAX_COUNT] = np.copysign(np.inf, numbers[np.abs(numbers) > MAX_COUNT])
        return numbers, np.isnan(numbers)
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    converted = _convert(uniques, integer)
    numbers = np.append(converted, np.nan)[codes]  # code -1 (missing): the NaN at the end
    return numbers, np.isnan(numbers)


#: plain decimals, which Arrow's cast converts correctly rounded (fast_float: checked against
#: Python's float on 17-25 digit and exactly-halfway decimals in tests/test_engines.py)
PLAIN = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"


def _convert(uniques: Any, integer: bool) -> np.ndarray:
    """Each distinct string -> float: plain decimals by Arrow's cast (one vectorized pass),
    everything else (spaces, inf, separators, integer checks) by :func:`_number`."""
    texts = pd.Index(uniques).astype(str)
    out = np.full(len(texts), np.nan)
    fast = np.zeros(len(texts), dtype=bool)
    if not integer and len(texts) > 64:
        arr = pa.array(np.asarray(texts, dtype=object), type=pa.string())
        fast = pc.match_substring_regex(arr, PLAIN).to_numpy(zero_copy_only=False)
        if fast.any():
            out[fast] = pc.cast(pc.filter(arr, pa.array(fast)), pa.float64()).to_numpy(zero_copy_only=False)
    slow = np.flatnonzero(~fast)
    out[slow] = np.fromiter((_number(texts[i], integer) for i in slow), dtype=float, count=len(slow))
    return out


def _number(text: str, integer: bool) -> float:
    """One distinct string -> float (NaN: not a number, or not an integer when asked; in
    integer mode +-inf: an integer beyond +-2^53)."""
    text = text.strip()
    if not text or "_" in text:
        return math.nan
    try:
        value = float(text)  # correctly rounded
    except ValueError:
        return math.nan
    if not integer:
        return value
    if value != value:
        return math.nan
    try:
        exact = int(text)
    except ValueError:
        try:
            d = Decimal(text)
        except InvalidOperation:
            return math.nan
        if not d.is_finite() or d != d.to_integral_value():
            return math.nan  # 3.0000000000000001 rounds to 3.0 but is no integer
        if d.adjusted() > 30:
            return math.copysign(math.inf, d)  # 1e999999999: no need to build the integer
        exact = int(d)
    return float(exact) if abs(exact) <= MAX_COUNT else math.copysign(math.inf, exact)

