"""Data for finite mechanisms: reading reports into counts per distinct observation, and
privatizing raw answers as a survey would.

Layout (LANGUAGE.md): one column per variable, named after it.  A subset report is its
labels joined by ``|`` (``Black|White``, in any order); a randomized-response report is
one label; a combined variable's label joins its parts with ``.`` (``Female.Low``).  A
product mechanism reads one column per factor.  A factor on an unnamed combination
(``grr(gender * race * income, ...)``) reads the column ``gender*race*income`` if there
is one, else the part columns ``gender``, ``race``, ``income`` (each holding its part of
the report).

Aggregation is one vectorized pass (``pandas.factorize`` + ``numpy.bincount``); only the
few distinct strings are parsed in Python.  Rows are numbered from 1 (the first row
after the header) in error messages.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..errors import DataError, Diagnostic
from ..model import ProductMechanism, SubsetMechanism, Variable
from .channel import Channel
from .compile import base_independent_design, channel_of, dummy_labels, large_uniform, observed_subset_channel
from .data import MISSING, check_no_missing, missing_rows

CHUNK = 1_000_000  # rows privatized at a time


def factor_mechanisms(mechanism: Any) -> list[Any]:
    return list(mechanism.factors) if isinstance(mechanism, ProductMechanism) else [mechanism]


def columns_for(variable: Variable, frame_columns: Sequence[str]) -> list[str]:
    """The column(s) holding a variable's reports."""
    if variable.name in frame_columns or not variable.is_combined or "*" not in variable.name:
        return [variable.name]
    return list(variable.parts)


def _rows_of(values: pd.Series, bad: set) -> tuple[int, ...]:
    return tuple(int(i) + 1 for i in np.nonzero(values.isin(list(bad)).to_numpy())[0])


def _parse_observation(text: str, ch: Channel, labels: tuple[str, ...]) -> tuple[int | None, str]:
    """Observation index of one distinct report, or (None, reason)."""
    parts = [t.strip() for t in str(text).split("|")]
    position = {lab: j for j, lab in enumerate(labels)}
    unknown = [t for t in parts if t not in position]
    if unknown:
        return None, f"'{unknown[0]}' is not a category"
    if ch.masks is None:  # one label per report
        if len(parts) != 1:
            return None, "a randomized-response report is one label"
        idx = ch.index_of(parts[0])
        if idx is not None and not np.any(ch.Kn[idx] > 0):
            return None, "this report has probability 0 under the mechanism's randomization matrix"
        return idx, ""
    mask = 0
    for t in parts:
        mask |= 1 << position[t]
    idx = ch.index_of(mask)
    if idx is None:
        return None, "this subset has probability 0 under the declared design (mu_a = 0)"
    return idx, ""


def _factor_codes(ch: Channel | Any, frame: pd.DataFrame, variable: Variable,
                  path: Any) -> tuple[np.ndarray, Channel]:
    """Observation index per row, and the channel they index.  ``ch`` may be a mechanism
    that is a large uniform design: its channel is then built from the distinct observed
    subsets (see :func:`privspec.backends.compile.observed_subset_channel`)."""
    cols = columns_for(variable, list(frame.columns))
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise DataError(Diagnostic("D003", f"{path} has no column {', '.join(map(repr, missing))}",
                                   columns=tuple(missing),
                                   hint=f"reports of {variable.name} are read from the column "
                                        f"'{variable.name}'; found: {', '.join(map(str, frame.columns))}"))
    if len(cols) == 1:
        values = frame[cols[0]]
    else:  # part columns of an unnamed combination: join them into the joint label
        check_no_missing(frame, cols, path)
        values = frame[cols[0]].astype(str).str.strip()
        for c in cols[1:]:
            values = values + "." + frame[c].astype(str).str.strip()
    # one pass over the rows (hashing); everything else looks at the few distinct reports
    codes, uniques = pd.factorize(values, sort=False, use_na_sentinel=True)
    blank = [k for k, u in enumerate(uniques) if str(u).strip() in MISSING]
    if (codes < 0).any() or blank:
        rows = tuple(int(i) + 1 for i in np.nonzero((codes < 0) | np.isin(codes, blank))[0])
        raise DataError(Diagnostic("D004", f"{len(rows)} missing value{'s' if len(rows) > 1 else ''} in {path}",
                                   rows=rows, columns=tuple(cols),
                                   hint="privspec does not impute: remove or complete these rows"))
    if not isinstance(ch, Channel):  # a large uniform design: build the observed channel
        ch = _observed_uniform(ch, uniques, codes, variable, cols)
    labels = ch.x_labels
    mapping = np.empty(len(uniques), dtype=np.int64)
    problems: dict[str, list] = {}
    for k, u in enumerate(uniques):
        idx, why = _parse_observation(u, ch, labels)
        if idx is None:
            problems.setdefault(why, []).append(u)
            mapping[k] = -1
        else:
            mapping[k] = idx
    if problems:
        why, bad = next(iter(problems.items()))
        rows = tuple(int(i) + 1 for i in np.nonzero(np.isin(codes, [list(uniques).index(b) for b in bad]))[0])
        raise DataError(Diagnostic("D010", f"{len(rows)} report{'s' if len(rows) > 1 else ''} of {variable.name} "
                                   f"cannot come from this mechanism: {why} (e.g. {bad[0]!r})",
                                   rows=rows, columns=tuple(cols),
                                   hint=f"categories of {variable.name}: {', '.join(labels)}"))
    return mapping[codes], ch


def _observed_uniform(mechanism: Any, uniques, codes: np.ndarray, variable: Variable, cols) -> Channel:
    labels = variable.labels
    p = len(labels)
    masks, bad, why = [], [], ""
    for u in uniques:
        parts = [t.strip() for t in str(u).split("|")]
        if any(t not in labels for t in parts):
            continue  # reported below, with the rows, by the common path
        if not 2 <= len(set(parts)) <= p - 2:
            bad.append(u)
            why = "this subset has probability 0 under the uniform design (sizes 2..p-2 only)"
            continue
        masks.append(sum(1 << labels.index(t) for t in set(parts)))
    if bad:
        rows = tuple(int(i) + 1 for i in np.nonzero(np.isin(codes, [list(uniques).index(b) for b in bad]))[0])
        raise DataError(Diagnostic("D010", f"{len(rows)} report{'s' if len(rows) > 1 else ''} of {variable.name} "
                                   f"cannot come from this mechanism: {why} (e.g. {bad[0]!r})",
                                   rows=rows, columns=tuple(cols)))
    return observed_subset_channel(mechanism, sorted(set(masks)))


def observations(mechanism: Any, frame: pd.DataFrame, path: Any = "data") -> tuple[Channel, np.ndarray]:
    """The channel the reports are read against and the counts per observation (products:
    row-major joint).  For a uniform design on many categories the channel holds only the
    observed subsets."""
    factors = factor_mechanisms(mechanism)
    if large_uniform(mechanism):
        codes, ch = _factor_codes(mechanism, frame, mechanism.variable, path)
        return ch, np.bincount(codes, minlength=ch.n_obs).astype(float)
    ch = channel_of(mechanism)
    chans = [channel_of(f) for f in factors]
    codes = [_factor_codes(c, frame, f.variable, path)[0] for c, f in zip(chans, factors)]
    if len(codes) == 1:
        joint = codes[0]
    else:
        joint = np.ravel_multi_index(tuple(codes), tuple(c.n_obs for c in chans))
    return ch, np.bincount(joint, minlength=ch.n_obs).astype(float)


def count_observations(mechanism: Any, frame: pd.DataFrame, path: Any = "data") -> np.ndarray:
    """Counts per observation of the mechanism's channel (see :func:`observations`)."""
    return observations(mechanism, frame, path)[1]


# ---- privatize -----------------------------------------------------------------------------------
def _labels_to_index(values: pd.Series, labels: tuple[str, ...], column: str) -> np.ndarray:
    codes, uniques = pd.factorize(values.astype(str).str.strip(), sort=False)
    mapping = np.array([labels.index(u) if u in labels else -1 for u in uniques], dtype=np.int64)
    bad = [u for u, m in zip(uniques, mapping) if m < 0]
    if bad:
        rows = _rows_of(values.astype(str).str.strip(), set(bad))
        raise DataError(Diagnostic("D011", f"{len(rows)} raw value{'s' if len(rows) > 1 else ''} not in the "
                                   f"domain of {column} (e.g. {bad[0]!r})", rows=rows, columns=(column,),
                                   hint=f"categories: {', '.join(labels)}"))
    return mapping[codes]


def _sample_from_columns(rng: np.random.Generator, P: np.ndarray, x: np.ndarray) -> np.ndarray:
    """For each row i, an index drawn from the distribution P[:, x_i] (loops over categories,
    not respondents)."""
    out = np.empty(len(x), dtype=np.int64)
    for j in range(P.shape[1]):
        rows = np.nonzero(x == j)[0]
        if len(rows):
            col = P[:, j] / P[:, j].sum()
            out[rows] = rng.choice(P.shape[0], size=len(rows), p=col)
    return out


def _uniform_subsets(rng: np.random.Generator, p: int, size: int) -> np.ndarray:
    """``size`` draws of A~ from the uniform design (Def. 4) as bitmasks: uniform over all
    subsets, redrawn while the size is 0, 1, p - 1 or p (no enumeration of the 2^p subsets)."""
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while len(todo):
        draw = rng.integers(0, 1 << p, size=len(todo), dtype=np.int64)
        k = np.zeros(len(todo), dtype=np.int64)
        for j in range(p):
            k += (draw >> j) & 1
        ok = (k >= 2) & (k <= p - 2)
        out[todo[ok]] = draw[ok]
        todo = todo[~ok]
    return out


def _mask_labels(mask: int, labels: Sequence[str]) -> str:
    return "|".join(lab for j, lab in enumerate(labels) if mask >> j & 1)


def privatize_factor(mechanism: Any, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Reports (as strings) for true category indices ``x``.

    The independent (and uniform) subset mechanism is realized as a survey would: draw
    A~ from nu and report A~ if it holds the answer, else its complement (Definition 3).
    Conditional designs draw from mu given the answer (Definition 2); randomized
    response draws from the row P[x] of its matrix.
    """
    if isinstance(mechanism, SubsetMechanism) and mechanism.design.kind in ("uniform", "independent") \
            and mechanism.min_coverage is None:
        labels = mechanism.variable.labels
        p = len(labels)
        full = (1 << p) - 1
        if mechanism.design.kind == "uniform":
            drawn = _uniform_subsets(rng, p, len(x))
        else:
            nu = base_independent_design(mechanism)
            subsets = list(nu)
            probs = np.array([float(nu[a]) for a in subsets])
            masks = np.array([sum(1 << labels.index(t) for t in a) for a in subsets], dtype=np.int64)
            drawn = masks[rng.choice(len(subsets), size=len(x), p=probs / probs.sum())]
        reported = np.where((drawn >> x) & 1 == 1, drawn, full ^ drawn)
        uniq, inv = np.unique(reported, return_inverse=True)
        text = np.array([_mask_labels(int(m), labels) for m in uniq], dtype=object)
        return text[inv]
    ch = channel_of(mechanism)
    obs = _sample_from_columns(rng, ch.Kn, x)
    return np.asarray(ch.obs_labels, dtype=object)[obs]


def privatize_frame(model: Any, mechanism: Any, frame: pd.DataFrame, seed: int | None) -> pd.DataFrame:
    """Privatize the mechanism's column(s) of a raw table; other columns are kept.

    Processed in chunks of :data:`CHUNK` rows with one seeded generator, so the output
    depends only on the seed.  With dummy categories (``min_coverage``, Appendix II) the
    collection system adds dummy respondents: the output then has only the privatized
    column(s), with ``round(2 alpha n / (1 - 2 alpha))`` dummy rows inserted at random
    positions (the real respondents keep their relative order).
    """
    rng = np.random.default_rng(seed)
    factors = factor_mechanisms(mechanism)
    out = frame.copy()
    for f in factors:
        var = f.variable
        cols = columns_for(var, list(frame.columns))
        check_no_missing(frame, [c for c in cols if c in frame.columns] or cols, "the raw data")
        if len(cols) == 1:
            raw = frame[cols[0]].astype(str).str.strip()
        else:
            raw = frame[cols[0]].astype(str).str.strip()
            for c in cols[1:]:
                raw = raw + "." + frame[c].astype(str).str.strip()
        x = _labels_to_index(raw, var.labels, var.name)
        if isinstance(f, SubsetMechanism) and f.min_coverage is not None:
            if len(factors) > 1:
                raise DataError(Diagnostic("D012", "dummy categories inside a product mechanism are not "
                                           "supported by privatize"))
            return _privatize_with_dummies(f, x, rng, var.name)
        reports = np.empty(len(x), dtype=object)
        for start in range(0, len(x), CHUNK):
            reports[start:start + CHUNK] = privatize_factor(f, x[start:start + CHUNK], rng)
        if len(cols) > 1:
            out = out.drop(columns=cols)
        out[var.name] = reports
    return out


def _privatize_with_dummies(mechanism: SubsetMechanism, x: np.ndarray, rng: np.random.Generator,
                            column: str) -> pd.DataFrame:
    alpha = float(mechanism.min_coverage)
    n = len(x)
    m = int(round(2 * alpha * n / (1 - 2 * alpha)))
    ch = channel_of(mechanism)
    p = mechanism.variable.p
    dummies = p + rng.integers(0, 2, size=m)
    everyone = np.concatenate([x, dummies])
    obs = _sample_from_columns(rng, ch.Kn, everyone)
    reports = np.asarray(ch.obs_labels, dtype=object)[obs]
    positions = np.sort(rng.choice(n + m, size=m, replace=False)) if m else np.array([], dtype=int)
    is_dummy = np.zeros(n + m, dtype=bool)
    is_dummy[positions] = True
    arranged = np.empty(n + m, dtype=object)
    arranged[~is_dummy] = reports[:n]
    arranged[is_dummy] = reports[n:]
    return pd.DataFrame({column: arranged})


__all__ = ["count_observations", "privatize_frame", "dummy_labels", "missing_rows"]
