"""Data for finite mechanisms: reading reports into counts per distinct observation, and
privatizing raw answers as a survey would.

Layout (LANGUAGE.md): one column per variable, named after it.  A subset report is its
labels joined by ``|`` (``Black|White``, in any order); a randomized-response report is
one label; a combined variable's label joins its parts with ``.`` (``Female.Low``).  A
product mechanism reads one column per factor.  A combined variable (named, ``variable
gi = gender * income``, or not, ``grr(gender * race * income, ...)``) reads the column
named after it if there is one, else the part columns ``gender``, ``race``, ``income``
(each holding its part of the report).

Reports reach the estimators as counts per distinct report tuple: an engine counts them
(:mod:`privspec.backends.data.engines`, the contract in :mod:`privspec.backends.data.tally`), and
only the few distinct strings are parsed here, in Python, the same for every engine.  Rows are numbered from 1 (the first row
after the header) in error messages.

Privatizing draws each row's randomness from :class:`~privspec.backends.core.rowrandom.RowRandom`:
a row's report is a function of (seed, mechanism, row index, value) alone, so the
output does not depend on the chunk size, on the other rows, or on whether the file
was privatized whole or in pieces (``offset``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from privspec.errors import DataError, Diagnostic
from privspec.model.graph import ProductMechanism, SubsetMechanism, Variable
from privspec.progress import progress
from privspec.backends.core.channel import Channel
from privspec.backends.core.grr_channel import GRRChannel
from privspec.backends.core.compile import base_independent_design, channel_of, large_uniform, observed_subset_channel
from privspec.backends.data.engines import PandasEngine
from privspec.backends.data.checks import MISSING, describe_values, require_columns, show_value
from privspec.backends.core.rowrandom import BLOCK, RowRandom, row_key, stream_of
from privspec.backends.data.tally import Tally, describe_distinct
from privspec.backends.finite.report_index import label_reports, parse_reports

CHUNK = 1_000_000  # rows privatized at a time (the output does not depend on it)


def factor_mechanisms(mechanism: Any) -> list[Any]:
    return list(mechanism.factors) if isinstance(mechanism, ProductMechanism) else [mechanism]


def columns_for(variable: Variable, frame_columns: Sequence[str]) -> list[str]:
    """The column(s) holding a variable's values: its own column, else (a combined
    variable) its parts' columns when the table has them all.

    Examples
    --------
    >>> v = Variable("gi", "categorical", ("F.Lo", "F.Hi", "M.Lo", "M.Hi"), parts=("g", "i"))
    >>> columns_for(v, ["g", "i"]), columns_for(v, ["gi", "g", "i"]), columns_for(v, ["g"])
    (['g', 'i'], ['gi'], ['gi'])
    """
    if variable.name in frame_columns or not variable.is_combined \
            or not all(p in frame_columns for p in variable.parts):
        return [variable.name]
    return list(variable.parts)


def _column_hint(variable: Variable, frame: pd.DataFrame | Sequence[str], what: str) -> str:
    header = frame.columns if isinstance(frame, pd.DataFrame) else frame
    found = ", ".join(map(str, header)) or "none"
    parts = f" (or its parts' columns {', '.join(repr(p) for p in variable.parts)})" if variable.is_combined else ""
    return f"{what} of {variable.name} are read from the column '{variable.name}'{parts}; found: {found}"


def joined_labels(frame: pd.DataFrame, cols: Sequence[str]) -> pd.Series:
    """One column, or part columns joined into the combined label (``F.Low``)."""
    if len(cols) == 1:
        return frame[cols[0]]
    values = frame[cols[0]].astype(str).str.strip()
    for c in cols[1:]:
        values = values + "." + frame[c].astype(str).str.strip()
    return values


def _uniform_reason(text: str, labels: Sequence[str]) -> tuple[int | None, str]:
    """Bitmask of one distinct report of a uniform design on many categories, or (None, reason)."""
    parts = {t.strip() for t in str(text).split("|")}
    unknown = sorted(t for t in parts if t not in labels)
    if unknown:
        return None, f"{show_value(unknown[0])} is not a category"
    if not 2 <= len(parts) <= len(labels) - 2:
        return None, "this subset has probability 0 under the uniform design (sizes 2..p-2 only)"
    return sum(1 << labels.index(t) for t in parts), ""


def _bad_reports(variable: Variable, cols: Sequence[str], codes: np.ndarray, uniques: Any,
                 reasons: dict[int, str], subsets: bool, mechanism: str | None, tally: Tally) -> DataError:
    """D010 naming every distinct report the mechanism cannot produce, each with its rows;
    a column of plain categories where subsets are expected is raw data: say privatize."""
    text, rows = describe_distinct(tally, codes, uniques, reasons)
    hint = f"categories of {variable.name}: {', '.join(variable.labels)}"
    if subsets and all(str(uniques[k]).strip() in variable.labels for k in reasons):
        hint = (f"these are plain categories, not subset reports: is this raw data? privatize it first: "
                f"privspec privatize SPEC --mechanism {mechanism or 'MECHANISM'} --input RAW --output PRIVATIZED, "
                "then run on PRIVATIZED")
    return DataError(Diagnostic("D010", f"{len(rows)} report{'s' if len(rows) > 1 else ''} of {variable.name} "
                                        f"cannot come from this mechanism: {text}",
                                rows=rows, columns=tuple(cols), hint=hint))


def report_columns(mechanism: Any, header: Sequence[str]) -> list[str]:
    """The columns holding a finite mechanism's reports (every factor's), in order."""
    out: list[str] = []
    for f in factor_mechanisms(mechanism):
        for c in columns_for(f.variable, header):
            if c not in out:
                out.append(c)
    return out


def tally_of(mechanism: Any, data: Any, path: Any = "data", extra: Sequence[str] = ()) -> Tally:
    """The counts of the mechanism's report columns (and the ``extra`` columns after them:
    a survey design's): ``data`` is a :class:`Tally`, an engine, or a DataFrame (counted by
    :class:`~privspec.backends.data.engines.PandasEngine`); D003 when a column is missing,
    with the hint of the variable that lacks it."""
    if isinstance(data, Tally):
        return data
    engine = PandasEngine(data, str(path)) if isinstance(data, pd.DataFrame) else data
    header = engine.columns()
    for f in factor_mechanisms(mechanism):
        cols = columns_for(f.variable, header)
        require_columns(pd.DataFrame(columns=header), cols, engine.source,
                        hint=_column_hint(f.variable, header, "reports"))
    return engine.tally(list(dict.fromkeys([*report_columns(mechanism, header), *extra])))


def factor_codes(ch: Channel | Any, tally: Tally, variable: Variable,
                  mechanism: str | None = None) -> tuple[np.ndarray, Channel]:
    """Observation index per distinct tuple of the tally, and the channel they index.
    ``ch`` may be a mechanism that is a large uniform design: its channel is then built
    from the distinct observed subsets (see
    :func:`privspec.backends.core.compile.observed_subset_channel`).  ``mechanism`` (its
    name) goes into the hint when the data look raw."""
    cols = columns_for(variable, list(tally.columns))
    path = tally.source
    if len(cols) > 1:
        tally.check_no_missing(cols)
    values = joined_labels(tally.values, cols)
    # the few distinct reports are parsed here, whatever the number of rows
    codes, uniques = pd.factorize(values, sort=False, use_na_sentinel=True)
    blank = [k for k, u in enumerate(uniques) if str(u).strip() in MISSING]
    gone = (codes < 0) | np.isin(codes, blank)
    if gone.any():
        rows = tally.locate(gone)
        raise DataError(Diagnostic("D004", f"{len(rows)} missing value{'s' if len(rows) > 1 else ''} in {path}",
                                   rows=rows, columns=tuple(cols),
                                   hint="privspec does not impute: remove or complete these rows"))
    reasons: dict[int, str] = {}
    if not isinstance(ch, Channel):  # a large uniform design: build the observed channel
        labels = variable.labels
        masks: list[int] = [0] * len(uniques)  # Python ints: any number of categories
        for k, u in enumerate(uniques):
            m, why = _uniform_reason(u, labels)
            if m is None:
                reasons[k] = why
            else:
                masks[k] = m
        if reasons:
            raise _bad_reports(variable, cols, codes, uniques, reasons, True, mechanism, tally)
        distinct = sorted(set(masks))
        ch = observed_subset_channel(ch, distinct)
        position = {m: i for i, m in enumerate(distinct)}
        return np.array([position[m] for m in masks], dtype=np.int64)[codes], ch
    mapping, reasons = parse_reports(uniques, ch)
    if reasons:
        raise _bad_reports(variable, cols, codes, uniques, reasons, ch.masks is not None, mechanism, tally)
    return mapping[codes], ch


def observations(mechanism: Any, data: Any, path: Any = "data") -> tuple[Channel, np.ndarray]:
    """The channel the reports are read against and the counts per observation (products:
    row-major joint).  ``data``: a tally, an engine or a DataFrame (:func:`tally_of`).
    For a uniform design on many categories the channel holds only the observed subsets."""
    quick = _categorical_counts(mechanism, data)
    if quick is not None:
        return quick
    tally = tally_of(mechanism, data, path)
    ch, codes = observation_codes(mechanism, tally)
    return ch, np.bincount(codes, weights=tally.counts.astype(float), minlength=ch.n_obs)


def _categorical_counts(mechanism: Any, data: Any) -> tuple[Channel, np.ndarray] | None:
    """:func:`observations` of one mechanism whose reports are its categories (randomized
    response), read from a categorical column in memory (what ``spec.privatize`` returns)
    whose every category is a report and no value missing: the codes counted, the
    categories checked once (:func:`~privspec.backends.finite.report_index.label_reports`), no tally of the rows.  None for
    anything else (the tally then reads it, and says what is wrong with it)."""
    frame = data.frame if isinstance(data, PandasEngine) else data if isinstance(data, pd.DataFrame) else None
    if frame is None or large_uniform(mechanism) or len(factor_mechanisms(mechanism)) != 1:
        return None
    cols = columns_for(mechanism.variable, [str(c) for c in frame.columns])
    if len(cols) != 1 or cols[0] not in frame.columns or list(frame.columns).count(cols[0]) != 1:
        return None
    column = frame[cols[0]]
    if not isinstance(column.dtype, pd.CategoricalDtype):
        return None
    ch = channel_of(mechanism)
    mapping = label_reports(column.cat.categories, ch)
    codes = np.asarray(column.cat.codes)
    if (mapping < 0).any() or (len(codes) and int(codes.min()) < 0):
        return None
    per_category = np.bincount(codes, minlength=len(mapping)) if len(codes) else np.zeros(len(mapping), np.int64)
    return ch, np.bincount(mapping, weights=per_category.astype(float), minlength=ch.n_obs)


def observation_codes(mechanism: Any, tally: Tally) -> tuple[Channel, np.ndarray]:
    """The channel the reports are read against, and the observation index of each distinct
    tuple of ``tally`` (products: the row-major joint index); other columns of the tally
    (a survey design's) are not read."""
    name = getattr(mechanism, "name", None)
    if large_uniform(mechanism):
        codes, ch = factor_codes(mechanism, tally, mechanism.variable, name)
        return ch, codes
    factors = factor_mechanisms(mechanism)
    chans = [channel_of(f) for f in factors]
    codes = [factor_codes(c, tally, f.variable, name)[0] for c, f in zip(chans, factors)]
    if len(codes) == 1:
        return channel_of(mechanism), codes[0]
    return channel_of(mechanism), np.ravel_multi_index(tuple(codes), tuple(c.n_obs for c in chans))


def count_observations(mechanism: Any, data: Any, path: Any = "data") -> np.ndarray:
    """Counts per observation of the mechanism's channel (see :func:`observations`)."""
    return observations(mechanism, data, path)[1]


# ---- privatize -----------------------------------------------------------------------------------
def _labels_to_index(values: pd.Series, labels: tuple[str, ...], column: str,
                     cols: Sequence[str] = (), tally: Tally | None = None) -> np.ndarray:
    """Category index per row (per distinct tuple of ``tally``, whose rows the message
    names, when given); D011 naming every distinct value outside the domain."""
    codes, uniques = pd.factorize(values.astype(str).str.strip(), sort=False)
    position = {lab: j for j, lab in enumerate(labels)}
    mapping = np.array([position.get(u, -1) for u in uniques], dtype=np.int64)
    bad = np.flatnonzero(mapping < 0)
    if bad.size:
        text, rows = (describe_values(codes, uniques, bad.tolist()) if tally is None
                      else describe_distinct(tally, codes, uniques, bad.tolist()))
        raise DataError(Diagnostic("D011", f"{len(rows)} raw value{'s' if len(rows) > 1 else ''} not in the "
                                           f"domain of {column}: {text}", rows=rows, columns=tuple(cols or (column,)),
                                   hint=f"categories: {', '.join(labels)}"))
    return mapping[codes]


def raw_codes(raw: Any, var: Variable, dtype: Any = np.int64) -> tuple[np.ndarray, list[str]]:
    """Each row's category index of ``var`` in a raw table (a
    :class:`~privspec.backends.data.engines.PandasEngine`), and the columns read: its own, or its
    parts' joined (``F.Low``).  One hashing pass over the rows; the checks on the distinct
    values: D003 without the column(s), D004 for missing values, D011 naming every value
    outside the domain with its rows.  ``dtype``: of the indices (a smaller one is a
    smaller array to write and read for a sampler that takes it)."""
    frame = raw.frame
    cols = columns_for(var, list(frame.columns))
    require_columns(frame, cols, "the raw data", hint=_column_hint(var, frame, "raw values"))
    own = _domain_codes(frame, cols, var)
    if own is not None:
        return own.astype(dtype, copy=False), cols
    tally, per_row = raw.tally_rows(cols)
    tally.check_no_missing(cols)
    index = _labels_to_index(joined_labels(tally.values, cols), var.labels, var.name, cols, tally)
    return per_row(index.astype(dtype, copy=False)), cols


def _domain_codes(frame: pd.DataFrame, cols: Sequence[str], var: Variable) -> np.ndarray | None:
    """The codes of a categorical column whose categories are ``var``'s labels in the domain's
    order, when no value is missing: each row's category index already, checked on the
    codes (one pass for their minimum), where the tally of the rows and the check of its
    distinct values took milliseconds a call; None for any other column (read by the tally)."""
    if len(cols) != 1 or list(frame.columns).count(cols[0]) != 1:
        return None
    column = frame[cols[0]]
    if not isinstance(column.dtype, pd.CategoricalDtype) or list(column.cat.categories) != list(var.labels):
        return None
    codes = np.asarray(column.cat.codes)
    return None if len(codes) and int(codes.min()) < 0 else codes


def check_raw(mechanism: Any, engine: Any) -> int:
    """The checks :func:`privatize_frame` makes of raw answers (columns, missing values,
    values outside the domain), on the distinct values an engine counts: the same
    messages, naming the file's rows, before a file is privatized in pieces.  Returns the
    number of rows the engine counted."""
    header = engine.columns()
    factors = factor_mechanisms(mechanism)
    per = [columns_for(f.variable, header) for f in factors]
    for f, cols in zip(factors, per):
        require_columns(pd.DataFrame(columns=list(header)), cols, "the raw data",
                        hint=_column_hint(f.variable, header, "raw values"))
    tally = engine.tally(list(dict.fromkeys(c for cols in per for c in cols)))
    for f, cols in zip(factors, per):
        tally.check_no_missing(cols)
        _labels_to_index(joined_labels(tally.values, cols), f.variable.labels, f.variable.name, cols, tally)
    return tally.n


def _inverse_cdf(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Index i with cdf[i-1] <= u < cdf[i] for ``probs`` (unnormalized): never an index of
    probability 0, rounding at the top end sent to the last index with mass."""
    cdf = np.cumsum(probs / probs.sum())
    idx = np.searchsorted(cdf, u, side="right")
    return np.minimum(idx, int(np.flatnonzero(probs > 0)[-1]))


def _sample_from_columns(rng: Any, P: np.ndarray, x: np.ndarray) -> np.ndarray:
    """For each row i, an index drawn from the distribution P[:, x_i], by inversion of one
    uniform per row (loops over categories, not respondents)."""
    u = rng.random(len(x))
    out = np.empty(len(x), dtype=np.int64)
    if not len(x):
        return out
    present = np.flatnonzero(np.bincount(x))      # the categories that occur (x are small ints)
    if len(present) == 1:
        return _inverse_cdf(np.asarray(P[:, present[0]], dtype=float), u)
    for j in present:
        rows = np.flatnonzero(x == j)
        out[rows] = _inverse_cdf(np.asarray(P[:, j], dtype=float), u[rows])
    return out


def _popcount(a: np.ndarray, bits: int) -> np.ndarray:
    if hasattr(np, "bitwise_count"):  # numpy >= 2
        return np.bitwise_count(a)
    k = np.zeros(a.shape, dtype=np.int64)
    for j in range(bits):
        k += (a >> j) & 1
    return k


def _uniform_subsets(rng: Any, p: int, size: int) -> np.ndarray:
    """``size`` draws of A~ from the uniform design (Def. 4) as bitmasks: uniform over all
    subsets, redrawn while the size is 0, 1, p - 1 or p (no enumeration of the 2^p subsets).

    One random word per row holds ``63 // p`` candidate subsets of p bits each; a row keeps
    its first acceptable one (all rejected: probability 0.625^12 for p = 5), and the
    rare rows with none redraw (:meth:`RowRandom.retry`: a redraw depends on the row only).
    """
    if p > 62:
        raise ValueError("bitmasks hold at most 62 categories: use _uniform_subset_bits")
    per = 63 // p
    full = (1 << p) - 1
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    sub = rng
    while len(todo):
        word = sub.integers(0, 1 << (p * per), size=len(todo), dtype=np.int64)
        pending = np.arange(len(todo))
        for j in range(per):
            cand = (word[pending] >> (p * j)) & full
            k = _popcount(cand, p)
            ok = (k >= 2) & (k <= p - 2)
            out[todo[pending[ok]]] = cand[ok]
            pending = pending[~ok]
            if not len(pending):
                break
        sub = sub.retry(pending) if isinstance(sub, RowRandom) else sub
        todo = todo[pending]
    return out


def _uniform_subset_bits(rng: Any, p: int, size: int) -> np.ndarray:
    """Like :func:`_uniform_subsets` for any p: ``size`` rows of p membership bits (bool),
    each category in with probability 1/2, redrawn while the size is 0, 1, p - 1 or p
    (at p > 62 a redraw has probability below 1e-16, but it is done all the same)."""
    out = np.empty((size, p), dtype=bool)
    todo = np.arange(size)
    sub = rng
    while len(todo):
        bits = sub.random((len(todo), p)) < 0.5
        k = bits.sum(axis=1)
        ok = (k >= 2) & (k <= p - 2)
        out[todo[ok]] = bits[ok]
        pending = np.nonzero(~ok)[0]
        sub = sub.retry(pending) if isinstance(sub, RowRandom) else sub
        todo = todo[pending]
    return out


def _bits_labels(bits: np.ndarray, labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each row of a membership-bit matrix as a code into its distinct reports' texts
    ``a|b|c`` (each distinct row joined once)."""
    packed = np.packbits(bits, axis=1)
    uniq, first, inv = np.unique(packed, axis=0, return_index=True, return_inverse=True)
    names = np.asarray(labels, dtype=object)
    text = np.array(["|".join(names[bits[i]]) for i in first], dtype=object)
    return np.asarray(inv).ravel(), text


def _mask_labels(mask: int, labels: Sequence[str]) -> str:
    return "|".join(lab for j, lab in enumerate(labels) if mask >> j & 1)


def privatize_factor(mechanism: Any, x: np.ndarray, rng: RowRandom | np.random.Generator) -> np.ndarray:
    """Reports (as strings) for true category indices ``x`` (see :func:`privatize_codes`)."""
    codes, texts = privatize_codes(mechanism, x, rng)
    return texts[codes]


def privatize_codes(mechanism: Any, x: np.ndarray, rng: RowRandom | np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Reports for true category indices ``x``, as codes into their texts: a dictionary
    encoding, so that no report string is built per row (nor hashed back when counted).

    The independent (and uniform) subset mechanism is realized as a survey would: draw
    A~ from nu and report A~ if it holds the answer, else its complement (Definition 3).
    Conditional designs draw from mu given the answer (Definition 2); randomized
    response draws from the row P[x] of its matrix.  Every row makes the same calls on
    ``rng`` whatever its value, so with a :class:`RowRandom` a row's report depends on its
    own value and index only (a :class:`numpy.random.Generator` also works: one stream).
    """
    if isinstance(mechanism, SubsetMechanism) and mechanism.design.is_independent \
            and mechanism.min_coverage is None:
        labels = mechanism.variable.labels
        p = len(labels)
        full = (1 << p) - 1
        if mechanism.design.kind == "uniform" and p > 62:  # beyond a 64-bit mask: a bit matrix
            bits = _uniform_subset_bits(rng, p, len(x))
            rows = np.arange(len(x))
            bits[~bits[rows, x]] ^= True  # the complement where A~ misses the answer
            return _bits_labels(bits, labels)
        if mechanism.design.kind == "uniform":
            drawn = _uniform_subsets(rng, p, len(x))
        else:
            nu = base_independent_design(mechanism)
            subsets = list(nu)
            probs = np.array([float(nu[a]) for a in subsets])
            masks = np.array([sum(1 << labels.index(t) for t in a) for a in subsets], dtype=np.int64)
            drawn = masks[_inverse_cdf(probs, rng.random(len(x)))]
        reported = np.where((drawn >> x) & 1 == 1, drawn, full ^ drawn)
        uniq, inv = np.unique(reported, return_inverse=True)
        text = np.array([_mask_labels(int(m), labels) for m in uniq], dtype=object)
        return np.asarray(inv).ravel(), text
    ch = channel_of(mechanism)
    if isinstance(ch, GRRChannel) and list(ch.obs_labels) == list(ch.x_labels) and ch.p > 1:
        return _sample_grr(ch, x, rng.random(len(x))), np.asarray(ch.obs_labels, dtype=object)
    obs = _sample_from_columns(rng, ch.Kn, x)
    return obs, np.asarray(ch.obs_labels, dtype=object)


def _sample_grr(ch: Any, x: np.ndarray, u: np.ndarray) -> np.ndarray:
    """GRR reports by the inverse CDF of column ``x`` of ``P = (p - q) I + q J`` in closed
    form: the categories before ``x`` hold ``[0, x q)``, ``x`` holds ``[x q, x q + p)``, the
    rest ``q`` each after it.  The same map from a row's uniform to its report as
    :func:`_sample_from_columns` (but for ties at block ends, of probability ~1e-16), in one
    pass over the rows instead of one per category (the cost of GRR's privatize at 1e6)."""
    d = ch.p
    p, q = float(ch.Kn[0, 0]), float(ch.Kn[1, 0])
    if q <= 0:
        return np.asarray(x, dtype=np.int64)
    x = np.asarray(x)
    out = np.empty(len(x), dtype=np.min_scalar_type(-d))   # the smallest signed type (codes)
    for s in range(0, len(x), BLOCK):              # cache-sized blocks: 2x faster at 1e6 rows
        xb, ub = x[s:s + BLOCK], u[s:s + BLOCK]
        start = xb * q                              # where the truth's block begins
        after = ub >= start
        start += p                                  # (in place: where it ends)
        keep = ub < start
        keep &= after
        np.multiply(after, p, out=start)            # p past the block's start, else 0 (exactly)
        np.subtract(ub, start, out=start)
        start *= 1.0 / q
        j = start.astype(np.int64)                  # among the d - 1 others ...
        j += j >= xb                                # ... skipping the truth
        np.minimum(j, d - 1, out=j)                 # rounding at the top end
        j -= (j - xb) * keep                        # the truth where kept (arithmetic: a masked
        out[s:s + BLOCK] = j                        # copy mispredicts, 2x slower here)
    return out


def privatize_frame(model: Any, mechanism: Any, frame: pd.DataFrame, seed: int | None,
                    offset: int = 0, chunk: int | None = None) -> pd.DataFrame:
    """The reports of the mechanism on a raw table: one column per privatized variable (a
    combined variable's, read from its parts' columns, under its own name), the rows in
    order, the table's index.  Nothing else of the table: a privatized table holds
    reports only (raw columns travel only when named: ``keep``,
    :func:`privspec.backends.privatize.with_kept`).

    Row ``i`` of ``frame`` is the file's row ``offset + i`` (0-based): its report depends
    only on (seed, mechanism, that index, its value), so privatizing a file in pieces,
    each with its ``offset``, gives the same rows as privatizing it whole, and the chunk
    size (``chunk``, :data:`CHUNK` by default) changes nothing.  ``seed`` None draws a
    key from OS entropy.  With dummy categories (``min_coverage``, Appendix II) the
    collection system adds dummy respondents: the output then has only the privatized
    column(s), with ``round(2 alpha n / (1 - 2 alpha))`` dummy rows inserted at random
    positions (the real respondents keep their relative order and their reports; the
    dummies are drawn per piece).
    """
    key = row_key(seed)  # once: every chunk and factor of this call shares it
    size = int(chunk or CHUNK)
    factors = factor_mechanisms(mechanism)
    reports: dict[str, Any] = {}
    n = len(frame)
    raw = PandasEngine(frame, "the raw data")
    for i, f in enumerate(factors):
        var = f.variable
        x, cols = raw_codes(raw, var, np.min_scalar_type(-max(var.p, 1)))   # int8 up to 128 categories
        stream = stream_of(mechanism, i)
        if isinstance(f, SubsetMechanism) and f.min_coverage is not None:
            if len(factors) > 1:
                raise DataError(Diagnostic("D012", "dummy categories inside a product mechanism are not "
                                           "supported by privatize"))
            rng = RowRandom(key, rows=range(offset, offset + n), stream=stream)
            return _privatize_with_dummies(f, x, rng, var.name)
        pieces = []
        for start in progress(range(0, n, size), desc=f"privatize {var.name}", unit="chunk"):
            stop = min(n, start + size)
            rng = RowRandom(key, rows=range(offset + start, offset + stop), stream=stream)
            pieces.append(privatize_codes(f, x[start:stop], rng))
        reports[var.name] = _categorical(pieces, n)
    return pd.DataFrame(reports, index=frame.index)


def _categorical(pieces: list[tuple[np.ndarray, np.ndarray]], n: int) -> pd.Categorical:
    """The reports of the pieces as one categorical column (codes into report texts)."""
    if not pieces:
        return pd.Categorical(np.empty(0, dtype=object))
    texts = pieces[0][1]
    if all(t is texts or (len(t) == len(texts) and (t == texts).all()) for _, t in pieces):
        codes = np.concatenate([c for c, _ in pieces]) if len(pieces) > 1 else pieces[0][0]
        return pd.Categorical.from_codes(codes, categories=pd.Index(texts, dtype=object), validate=False)
    # the pieces found different subsets (designs on many categories): one dictionary of all
    merged, inverse = np.unique(np.concatenate([t for _, t in pieces]), return_inverse=True)
    starts = np.cumsum([0] + [len(t) for _, t in pieces])
    codes = np.concatenate([inverse[a:b][c] for (c, _), a, b in zip(pieces, starts[:-1], starts[1:])])
    return pd.Categorical.from_codes(codes, categories=pd.Index(merged, dtype=object), validate=False)


def _privatize_with_dummies(mechanism: SubsetMechanism, x: np.ndarray, rng: RowRandom,
                            column: str) -> pd.DataFrame:
    """Real rows drawn per row; the dummy respondents (their number, categories, reports
    and positions) from a separate generator of the same key and first row."""
    alpha = float(mechanism.min_coverage)
    n = len(x)
    m = int(round(2 * alpha * n / (1 - 2 * alpha)))
    ch = channel_of(mechanism)
    p = mechanism.variable.p
    reports = np.asarray(ch.obs_labels, dtype=object)[_sample_from_columns(rng, ch.Kn, x)]
    extra = rng.generator(tag=1)
    dummies = p + extra.integers(0, 2, size=m)
    fake = np.asarray(ch.obs_labels, dtype=object)[_sample_from_columns(extra, ch.Kn, dummies)]
    positions = np.sort(extra.choice(n + m, size=m, replace=False)) if m else np.array([], dtype=int)
    is_dummy = np.zeros(n + m, dtype=bool)
    is_dummy[positions] = True
    arranged = np.empty(n + m, dtype=object)
    arranged[~is_dummy] = reports
    arranged[is_dummy] = fake
    return pd.DataFrame({column: arranged})


__all__ = ["count_observations", "privatize_frame", "raw_codes"]
