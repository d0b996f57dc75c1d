"""Releases: count tables that are epsilon-private on a subset of variables.

The back end for ``release`` declarations (privacy on a subset of variables, Tan):

* ``budget(per variable)``, ``budget(per release)``, ``budget({a, b})`` — the epsilon
  of sets of variables across all releases (:mod:`privspec.backends.releases.budget`);
* ``variance(D)`` / ``variance(D, v, ...)`` — the exact variance of a released cell or
  margin cell (:mod:`privspec.backends.releases.noise`);
* every result of a release names its noise ``calibration`` and its exact
  ``privacy_loss`` on the noised variables (the declared epsilon, or half of it for
  Algorithm 1 with ``calibration = paper``);
* ``table(D)`` / ``table(D, v, ...)`` — a released table read back (``run``) with its
  standard errors and exact totals, or simulated (``simulate``);
* ``privatize`` with a release: raw records in, the released table out, in the tidy
  layout (one row per cell: the table's variables and a ``count`` column).

Data reach the mechanism only as the table of counts (one ``bincount`` over the
records' cell indices), never record by record.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
import sympy
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.limits import COV_CELL_LIMIT
from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import ModelGraph, Query, Release
from privspec.model.query_kinds import Answers
from privspec.results.kinds import Budget, Leakage, ReleasedTable, Variance
from privspec.results.result import Result
from privspec.results.values import Inference, Matrix, Table, Vector
from privspec.backends import register
from privspec.backends.core.numbers import parse_numbers
from privspec.backends.data.checks import MISSING, require_columns
from privspec.backends.data.engines import PandasEngine
from privspec.backends.finite.data import joined_labels
from privspec.backends.data.tally import Tally, describe_distinct
from privspec.backends.core.populations import bind_parameters
from privspec.backends.releases import guessing
from privspec.backends.releases.budget import budget_on, budget_table, describe_release, release_privacy_loss
from privspec.backends.releases.noise import (PAPER, algorithm1, cell_covariance, geometric_mechanism, margin_variance,
                            noise_variance, nonnegative, unit_loss)

#: the column of counts in the tidy layout of a released table
COUNT = "count"


# ---- the shape of a release -------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """A release's table as an nd-array (axes: its variables in declared order) and as
    the ``(m, n)`` array of Algorithm 1 (rows: total cells, columns: protected cells).

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load('''
    ... variable degree: categorical {BA, BSc, BEng}
    ... variable band: categorical {low, mid, high, top}
    ... release D = counts(band, degree) with geometric(epsilon = 1) protect {band} exact totals(degree)
    ... ''').model
    >>> lay = Layout.of(m.releases["D"])
    >>> lay.shape, lay.m, lay.n
    ((4, 3), 3, 4)
    >>> t = np.arange(12).reshape(4, 3)
    >>> lay.to_groups(t)[0].tolist()   # the BA column of t: one total cell
    [0, 3, 6, 9]
    >>> bool((lay.from_groups(lay.to_groups(t)) == t).all())
    True
    """

    names: tuple[str, ...]
    labels: tuple[tuple[str, ...], ...]
    totals: tuple[bool, ...]
    exact: bool

    @classmethod
    def of(cls, release: Release) -> "Layout":
        return cls(tuple(v.name for v in release.variables), tuple(v.labels for v in release.variables),
                   tuple(v.name in release.exact_totals for v in release.variables), bool(release.exact_totals))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(lab) for lab in self.labels)

    @property
    def _perm(self) -> list[int]:
        axes = range(len(self.names))
        return [i for i in axes if self.totals[i]] + [i for i in axes if not self.totals[i]]

    @property
    def m(self) -> int:
        """Number of total cells (1 without exact totals)."""
        return math.prod(s for s, t in zip(self.shape, self.totals) if t)

    @property
    def n(self) -> int:
        """Number of cells in each total cell (``n_i`` of Algorithm 1)."""
        return math.prod(s for s, t in zip(self.shape, self.totals) if not t)

    def to_groups(self, table: np.ndarray) -> np.ndarray:
        """``(..., *shape)`` -> ``(..., m, n)`` (leading axes, e.g. replications, kept)."""
        table = np.asarray(table)
        lead = table.ndim - len(self.shape)
        perm = list(range(lead)) + [lead + i for i in self._perm]
        return table.transpose(perm).reshape(*table.shape[:lead], self.m, self.n)

    def from_groups(self, groups: np.ndarray) -> np.ndarray:
        """``(..., m, n)`` -> ``(..., *shape)``."""
        groups = np.asarray(groups)
        lead = groups.ndim - 2
        perm = self._perm
        inverse = list(range(lead)) + [lead + int(i) for i in np.argsort(perm)]
        return groups.reshape(*groups.shape[:lead], *[self.shape[i] for i in perm]).transpose(inverse)

    def axes(self, keep: Sequence[str]) -> list[int]:
        return [self.names.index(k) for k in keep]


def _epsilon(model: ModelGraph, release: Release) -> float:
    eps = bind_parameters(model, release.epsilon)
    if eps.free_symbols:
        names = ", ".join(sorted(str(s) for s in eps.free_symbols))
        raise BackendError(Diagnostic("B601", f"release {release.name} has a symbolic epsilon ({eps}): "
                                              "noise needs a number",
                                      hint=f"give the parameter a value: parameter {names} > 0 = 1"))
    return float(eps)


def add_noise(model: ModelGraph, release: Release, groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The release's noise added to counts in the ``(rows, n)`` layout of Algorithm 1
    (:meth:`Layout.to_groups`; replications stack as more rows): Algorithm 1 when the
    release has exact totals, the geometric mechanism otherwise, each with the
    release's calibration.  Every sampler of a release (privatize, simulate, the
    privacy audit) goes through here.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load('''
    ... variable degree: categorical {BA, BSc}
    ... variable band: categorical {low, mid, high}
    ... release D = counts(degree, band) with geometric(epsilon = 1) protect {band} exact totals(degree)
    ... ''').model
    >>> g = add_noise(m, m.releases["D"], np.tile([[3, 5, 2]], (1000, 1)), np.random.default_rng(0))
    >>> g.shape, bool((g.sum(axis=1) == 10).all())
    ((1000, 3), True)
    """
    eps = _epsilon(model, release)
    if release.exact_totals:
        return algorithm1(groups, eps, rng, release.calibration)
    return geometric_mechanism(groups, eps, rng, release.calibration)


def noisy_counts(model: ModelGraph, release: Release, counts: np.ndarray, rng: np.random.Generator,
                 nonneg: bool = False) -> np.ndarray:
    """The released table for true ``counts`` (an nd-array in the release's layout):
    the noise of :func:`add_noise`; ``nonneg`` applies
    :func:`~privspec.backends.releases.noise.nonnegative`.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load('''
    ... variable degree: categorical {BA, BSc}
    ... variable band: categorical {low, mid, high}
    ... release D = counts(degree, band) with geometric(epsilon = 1) protect {band} exact totals(degree)
    ... ''').model
    >>> f = np.array([[3, 5, 2], [0, 1, 9]])
    >>> g = noisy_counts(m, m.releases["D"], f, np.random.default_rng(3))
    >>> g.sum(axis=1).tolist()
    [10, 10]
    """
    lay = Layout.of(release)
    noisy = add_noise(model, release, lay.to_groups(np.asarray(counts, dtype=np.int64)), rng)
    if nonneg:
        noisy = nonnegative(noisy, rng)
    return lay.from_groups(noisy)


# ---- data in and out ----------------------------------------------------------------------
def _codes(tally: Tally, values: pd.Series, column: str, labels: Sequence[str], path: Any) -> np.ndarray:
    """Category index per distinct tuple of the tally; DataError D601 naming every distinct
    other value with its rows."""
    which, distinct = pd.factorize(values, use_na_sentinel=False)
    names, mapping = _label_indices(distinct, labels)
    if (mapping < 0).any():
        text, rows = describe_distinct(tally, which, names, np.flatnonzero(mapping < 0).tolist())
        raise DataError(Diagnostic("D601", f"{len(rows)} value{'s' if len(rows) > 1 else ''} in {path} "
                                           f"{'are' if len(rows) > 1 else 'is'} not a category of {column}: {text}",
                                   rows=rows, columns=(column,),
                                   hint=f"categories of {column}: {', '.join(labels)}"))
    return mapping[which]


def _engine(data: Any, path: Any) -> Any:
    return PandasEngine(data, str(path)) if isinstance(data, pd.DataFrame) else data


def _columns_of(var: Any, header: Sequence[str], path: Any) -> list[str]:
    """A table variable's column: its own, or for a combined variable its parts' columns
    (joined with '.', LANGUAGE.md, Data)."""
    if var.name in header or not var.is_combined or not all(p in header for p in var.parts):
        parts = f" (or its parts' columns {', '.join(var.parts)})" if var.is_combined else ""
        require_columns(pd.DataFrame(columns=list(header)), [var.name], path,
                        hint=f"records hold one column per variable: {var.name}{parts}; "
                             f"found: {', '.join(map(str, header)) or 'none'}")
        return [var.name]
    return list(var.parts)


def _label_indices(distinct: Any, labels: Sequence[str]) -> tuple[pd.Index, np.ndarray]:
    """The distinct values as texts (stripped) and each one's category index (-1: not a category)."""
    names = pd.Index(distinct).astype(str).str.strip()
    return names, pd.Index(list(labels)).get_indexer(names).astype(np.int64)


def _direct_counts(release: Release, frame: pd.DataFrame, shape: tuple[int, ...]) -> np.ndarray | None:
    """The count table straight from each column's codes when every table variable is a
    text or categorical column of its own whose values are all its labels: the column's
    categorical codes (what ``spec.privatize`` and a Parquet dictionary column give) or
    one factorization of its texts, the few distinct values mapped to label indices, one
    ``bincount``; no tally of the distinct records.  None otherwise (a missing value,
    another value, a number, combined columns): the tally then counts and names the rows
    in its errors."""
    codes = []
    for var in release.variables:
        col = frame.get(var.name)
        if col is None:
            return None
        if isinstance(col.dtype, pd.CategoricalDtype):
            own, distinct = col.cat.codes.to_numpy(), col.cat.categories
        elif pd.api.types.is_object_dtype(col.dtype) or pd.api.types.is_string_dtype(col.dtype):
            try:
                own, distinct = pd.factorize(col, use_na_sentinel=True)
            except TypeError:   # unhashable (nested) values: the tally's error
                return None
        else:
            return None
        if len(own) and int(own.min()) < 0:
            return None
        names, mapping = _label_indices(distinct, var.labels)
        mapping[names.isin(MISSING)] = -1        # a missing-value word is D004's, not a label
        if (mapping < 0).any() and (mapping[np.unique(own)] < 0).any():
            return None
        identity = np.array_equal(mapping, np.arange(len(mapping)))
        codes.append(own if identity else mapping[own])
    if not codes:
        return None
    # the row-major cell of each record, accumulated in place (no array per variable)
    flat = codes[0].astype(np.int64)
    for c, d in zip(codes[1:], shape[1:]):
        flat *= d
        flat += c
    return np.bincount(flat, minlength=math.prod(shape)).reshape(shape).astype(np.int64)


def count_records(model: ModelGraph, release: Release, data: Any, path: Any = "input") -> np.ndarray:
    """The true count table of raw records (one row per respondent) in the release's
    layout: ``data`` a DataFrame or an engine (:mod:`privspec.backends.data.engines`), counted
    as a tally of the distinct records; only those are labelled.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load('''
    ... variable sex: categorical {F, M}
    ... variable band: categorical {low, high}
    ... release A = counts(sex, band) with geometric(epsilon = 1)
    ... ''').model
    >>> raw = pd.DataFrame({"sex": ["F", "M", "F", "F"], "band": ["low", "low", "high", "low"]})
    >>> count_records(m, m.releases["A"], raw).tolist()
    [[2, 1], [1, 0]]
    """
    lay = Layout.of(release)
    if isinstance(data, pd.DataFrame):
        direct = _direct_counts(release, data, lay.shape)
        if direct is not None:
            return direct
    engine = _engine(data, path)
    header = engine.columns()
    per_var = [_columns_of(v, header, path) for v in release.variables]
    tally = engine.tally(list(dict.fromkeys(c for cols in per_var for c in cols)))
    if tally.n == 0:
        return np.zeros(lay.shape, dtype=np.int64)
    for cols in per_var:
        tally.check_no_missing(cols)
    codes = [_codes(tally, joined_labels(tally.values, cols), v.name, v.labels, path)
             for v, cols in zip(release.variables, per_var)]
    flat = np.ravel_multi_index(codes, lay.shape)
    return np.bincount(flat, weights=tally.counts, minlength=math.prod(lay.shape)).reshape(lay.shape).astype(np.int64)


def tidy(release: Release, table: np.ndarray) -> pd.DataFrame:
    """The tidy layout of a released table: one row per cell (variables in declared
    order, labels in declared order, row-major) and the ``count`` column.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load('''
    ... variable sex: categorical {F, M}
    ... variable band: categorical {low, high}
    ... release A = counts(sex, band) with geometric(epsilon = 1)
    ... ''').model
    >>> tidy(m.releases["A"], np.array([[2, 1], [1, 0]])).values.tolist()
    [['F', 'low', 2], ['F', 'high', 1], ['M', 'low', 1], ['M', 'high', 0]]
    """
    lay = Layout.of(release)
    shape = lay.shape
    # row-major: variable i's label repeats once per cell of the later variables, and that
    # run repeats once per cell of the earlier ones (no index array per variable)
    out = {name: np.tile(np.repeat(np.asarray(labels, dtype=object), math.prod(shape[i + 1:])), math.prod(shape[:i]))
           for i, (name, labels) in enumerate(zip(lay.names, lay.labels))}
    out[COUNT] = np.asarray(table, dtype=np.int64).ravel()
    # copy=False: the columns are fresh arrays, which the frame keeps as they are instead of
    # stacking the label columns into one block (a copy of every cell's labels)
    return pd.DataFrame(out, copy=False)


def read_released(release: Release, data: Any, path: Any = "data") -> np.ndarray:
    """A released table in the tidy layout, back as an nd-array: ``data`` a DataFrame or
    an engine, read as a tally of its distinct rows.

    Every cell must appear exactly once with an integer count (negative counts are
    valid: Algorithm 1 does not ensure nonnegativity).  Raises DataError D003/D004
    (columns, missing values), D601 (a label that is not a category), D602 (a count
    that is not an integer) or D603 (a cell missing or given twice).
    """
    lay = Layout.of(release)
    engine = _engine(data, path)
    header = engine.columns()
    if COUNT not in header and all(n in header for n in lay.names):
        raise DataError(Diagnostic("D003", f"{path} has no column '{COUNT}': it looks like raw records, "
                                           f"not the released table of {release.name}", columns=(COUNT,),
                                   hint=f"privatize the records first: privspec privatize SPEC --mechanism "
                                        f"{release.name} --input RAW --output RELEASED"))
    require_columns(pd.DataFrame(columns=list(header)), [*lay.names, COUNT], path)
    tally = engine.tally([*lay.names, COUNT])
    tally.check_no_missing([*lay.names, COUNT])
    codes = [_codes(tally, tally.values[name], name, labels, path) for name, labels in zip(lay.names, lay.labels)]
    # every count exactly: an integer (no decimal that merely rounds to one), and within
    # +-2^53, where doubles hold integers exactly and int64 sums cannot overflow
    values, not_integer = parse_numbers(tally.values[COUNT], integer=True)
    if not_integer.any():
        rows = tally.locate(not_integer)
        raise DataError(Diagnostic("D602", f"{len(rows)} count{'s' if len(rows) > 1 else ''} in {path} "
                                           f"{'are' if len(rows) > 1 else 'is'} not an integer",
                                   rows=rows, columns=(COUNT,),
                                   hint="released counts are integers (Proposition 5.1)"))
    huge = np.isinf(values)
    if huge.any() or (np.abs(values) * tally.counts).sum() > 2.0 ** 62:
        rows = tally.locate(huge if huge.any() else np.abs(values) > 0)
        raise DataError(Diagnostic("D602", f"{len(rows)} count{'s' if len(rows) > 1 else ''} in {path} "
                                           f"{'are' if len(rows) > 1 else 'is'} too large to be a count "
                                           f"({'beyond +-2^53' if huge.any() else 'their total is beyond 2^62'})",
                                   rows=rows, columns=(COUNT,),
                                   hint="a count of respondents is at most 2^53 (9007199254740992); "
                                        "check this column of the released table"))
    flat = np.ravel_multi_index(codes, lay.shape) if codes else np.zeros(len(tally.counts), dtype=np.int64)
    given = np.bincount(flat, weights=tally.counts, minlength=math.prod(lay.shape))
    if (given > 1).any():
        # every row of a cell given more than once, less the first of each
        twice = sorted(r for cell in np.flatnonzero(given > 1) for r in tally.locate(flat == cell)[1:])
        raise DataError(Diagnostic("D603", f"{path} gives {len(twice)} cell{'s' if len(twice) > 1 else ''} "
                                           "of the table more than once", rows=tuple(twice),
                                   columns=lay.names, hint="one row per cell of the released table"))
    size = math.prod(lay.shape)
    present = given > 0
    if not present.all():
        missing = [".".join(lab[i] for lab, i in zip(lay.labels, ix))
                   for ix in zip(*np.unravel_index(np.flatnonzero(~present)[:5], lay.shape))]
        lacking = int((~present).sum())
        raise DataError(Diagnostic("D603", f"{path} lacks {lacking} cell{'s' if lacking > 1 else ''} "
                                           f"of release {release.name}, e.g. {', '.join(missing)}", columns=lay.names,
                                   hint="one row per cell of the released table, as privspec privatize writes it"))
    table = np.zeros(size, dtype=np.int64)
    table[flat] = values.astype(np.int64)
    return table.reshape(lay.shape)


# ---- margins and variances ---------------------------------------------------------------------
def _margin_names(query: Query, release: Release) -> list[str]:
    if query.estimand is None:
        return [v.name for v in release.variables]
    return [v.name for v in query.estimand.variables]


def margin(lay: Layout, tables: np.ndarray, keep: Sequence[str]) -> np.ndarray:
    """Sum tables (the last ``len(lay.shape)`` axes) over the variables not in ``keep``;
    the kept axes come out in the order of ``keep``."""
    lead = tables.ndim - len(lay.shape)
    axes = lay.axes(keep)
    drop = tuple(lead + i for i in range(len(lay.shape)) if i not in axes)
    summed = tables.sum(axis=drop) if drop else tables
    kept_sorted = sorted(axes)
    perm = list(range(lead)) + [lead + kept_sorted.index(i) for i in axes]
    return summed.transpose(perm)


def variance_of(model: ModelGraph, release: Release, keep: Sequence[str]) -> sympy.Expr:
    """Exact variance of one released cell of the margin over ``keep`` (the whole table
    when ``keep`` names all its variables)."""
    lay = Layout.of(release)
    eps = bind_parameters(model, release.epsilon)
    return margin_variance(eps, lay.shape, lay.totals, [n in keep for n in lay.names], lay.exact,
                           release.calibration)


def _table(release: Release, keep: Sequence[str], data: np.ndarray) -> Table:
    labels = {v.name: v.labels for v in release.variables}
    return Table(tuple(keep), tuple(labels[k] for k in keep), data)


def _release_of(model: ModelGraph, query: Query) -> Release:
    return model.releases[str(query.scope)]


def _population(model: ModelGraph, release: Release, purpose: str = "simulating") -> np.ndarray:
    """Cell probabilities of the release's table from the declared populations
    (independent across population declarations), for ``simulate`` and ``leakage``."""
    atoms: list[tuple[str, int]] = []
    for v in release.variables:
        if model.population_of(v.name) is not None or not v.is_combined:
            atoms.append((v.name, v.p))
        else:
            atoms += [(p, model.variables[p].p) for p in v.parts]
    pops = []
    for name, _ in atoms:
        pop = model.population_of(name)
        if pop is None or pop.law.family != "categorical":
            raise BackendError(Diagnostic("B602", f"{purpose} release {release.name} needs a categorical "
                                                  f"population for {name}",
                                          hint=f"declare one: population {name} ~ categorical(...)"))
        if all(pop is not q for q in pops):
            pops.append(pop)
    joint, axes = np.ones(()), []
    for pop in pops:
        probs = np.array([float(p) for p in pop.law.probs]).reshape([v.p for v in pop.variables])
        joint = np.multiply.outer(joint, probs)
        axes += [v.name for v in pop.variables]
    wanted = [a for a, _ in atoms]
    joint = joint.sum(axis=tuple(i for i, a in enumerate(axes) if a not in wanted))
    axes = [a for a in axes if a in wanted]
    joint = joint.transpose([axes.index(a) for a in wanted])
    joint = joint.reshape(Layout.of(release).shape)
    return joint / joint.sum()


# ---- the back end ------------------------------------------------------------------------------
@register
class ReleaseBackend:
    """Budgets, variances and tables of ``release`` declarations; privatizes raw records
    into released tables."""

    REGISTER_NAME = "releases"
    #: what it answers (:mod:`privspec.model.query_kinds`): queries on releases, which have no mechanism
    ANSWERS = (
        Answers(("budget", "variance", "leakage"), ("release",)),
        Answers(("table",), ("release",), ("run", "simulate")),
    )

    def supports(self, query: Query, verb: str) -> bool:
        """Everything its ``ANSWERS`` cover: no finer condition."""
        return any(row.matches(query, verb) for row in self.ANSWERS)

    def weighted(self, query: Query) -> str:
        """Why a release's table has no weighted version: its file is the table as
        published, one row per cell with its noisy count, so there is no respondent to
        weigh.  Survey weights would enter where the table is made, as weighted totals,
        and then a record could move a cell by its whole weight: the noise would have to
        be calibrated to the largest weight, not to 1 as the paper's counts are."""
        return (f"{query.kind} queries of releases (a released table is read back as published, one row "
                "per cell: its rows are cells, not respondents, and its counts are unweighted, the noise "
                "calibrated to one record)")

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        if query.kind == "budget":
            return budget_result(model, query)
        release = _release_of(model, query)
        if query.kind == "leakage":
            return leakage_result(model, release, query.metrics)
        keep = _margin_names(query, release)
        if verb == "simulate":
            return _simulate(model, query, release, keep, **options)
        if query.kind == "variance":
            return variance_result(model, release, keep)
        engine = options["data"].engine_for(release.name)
        path = options["data"].path_for(release.name)
        return table_result(model, release, keep, read_released(release, engine, path))

    def privatizes(self, obj: Any) -> bool:
        return isinstance(obj, Release)

    def privatize(self, model: ModelGraph, release: Release, frame: pd.DataFrame, seed: int | None = None,
                  nonnegative: bool = False) -> pd.DataFrame:
        """Raw records (one row per respondent) -> the released table, tidy layout.

        The noise is per cell of the table, not per row: one generator seeded by ``seed``
        draws it for the whole table (rows only enter through their counts), so a release
        is privatized from the whole file at once, never in pieces."""
        if COUNT in (v.name for v in release.variables):
            raise BackendError(Diagnostic("B603", f"release {release.name} has a variable named '{COUNT}', "
                                                  "the column of counts of the tidy layout",
                                          hint="rename the variable"))
        counts = count_records(model, release, frame, "the raw records")
        rng = np.random.default_rng(seed)
        return tidy(release, noisy_counts(model, release, counts, rng, nonnegative))


# ---- results --------------------------------------------------------------------------------------
def _charge_note(model: ModelGraph, names: Sequence[str]) -> str:
    """What the budget charges, and which releases spend less than they are charged."""
    below = [r for r in names if model.releases[r].calibration == PAPER and model.releases[r].exact_totals]
    note = "each release is charged its declared epsilon (its guarantee)"
    if below:
        note += (f"; {', '.join(below)} (Algorithm 1, calibration = paper) in fact "
                 f"spend{'s' if len(below) == 1 else ''} half of it: privacy_loss in budget(per release)")
    return note


def _loss_extras(model: ModelGraph, release: Release) -> dict[str, Any]:
    """The calibration and the exact privacy loss on the noised variables, for every
    result of a release."""
    return {"calibration": release.calibration, "privacy_loss": release_privacy_loss(model, release)}


def budget_result(model: ModelGraph, query: Query) -> Result:
    """The Result of a budget query (JSON: an object keyed by variable, release or set)."""
    scope = query.scope
    if scope == "per variable":
        rows, cols, data = budget_table(model)
        total = Vector(tuple(cols), tuple(data[len(rows) - 1, j] for j in range(len(cols))))
        return Budget(total, releases=_matrix(rows, cols, data),
                      note="epsilon-privacy on each single variable, composed over all releases (Table 1); "
                           "'releases' gives one row per release and the sum in 'all'; inf: the variable's "
                           "totals are published exactly; " + _charge_note(model, rows[:-1]))
    if scope == "per release":
        rows, cols, data = budget_table(model)
        value = {r: Vector(tuple(cols), tuple(data[i, j] for j in range(len(cols)))) for i, r in enumerate(rows[:-1])}
        extras: dict[str, Any] = {}
        about = {r: describe_release(model, model.releases[r]) for r in rows[:-1]}
        for key in ("epsilon", "privacy_loss", "calibration", "mechanism", "protect", "private_on",
                    "exact_totals"):
            extras[key] = {r: about[r][key] for r in about}
        if any(e.free_symbols for e in data):
            extras["expr"] = {r: {c: str(data[i, j]) for j, c in enumerate(cols)} for i, r in enumerate(rows[:-1])}
        if any(sympy.sympify(about[r]["privacy_loss"]).free_symbols for r in about):
            # a symbolic loss is null in the numeric mapping; keep its expression
            extras["privacy_loss_expr"] = {r: str(about[r]["privacy_loss"]) for r in about}
        extras["note"] = ("epsilon: the charge (declared); privacy_loss: the exact loss on private_on; "
                          + _charge_note(model, rows[:-1]))
        return Budget(value, **extras)
    subset = tuple(scope)  # type: ignore[arg-type]
    total, parts = budget_on(model, subset)
    key = "{" + ", ".join(subset) + "}"
    return Budget(Vector((key,), (total,)), releases=Vector(tuple(parts), tuple(parts.values())),
                  note=f"epsilon-privacy on {key}: the sum of each release's epsilon on it; "
                       + _charge_note(model, list(parts)))


def _matrix(rows: Sequence[str], cols: Sequence[str], data: sympy.Matrix) -> Matrix:
    return Matrix(tuple(rows), tuple(cols), data)


def leakage_result(model: ModelGraph, release: Release, metrics: Sequence[str] = ()) -> Result:
    """``leakage(D)``: the chance that an adversary who knows every other record, the noise
    and the population guesses one record's cell of the table (``prediction``, on the scale
    of every mechanism's), and the largest posterior of any released table
    (``individual``): :mod:`privspec.backends.releases.guessing`."""
    a = math.exp(-float(unit_loss(_epsilon(model, release), bool(release.exact_totals), release.calibration)))
    w = Layout.of(release).to_groups(_population(model, release, "the leakage of"))
    try:
        guess = guessing.algorithm1(a, w) if release.exact_totals else guessing.geometric(a, w)
    except guessing.TooLarge as e:
        raise BackendError(Diagnostic("B604", f"leakage({release.name}): {e}",
                                      hint="fewer protected cells per exact total, or a larger epsilon")) from None
    return Leakage(guess.by_metric(metrics), evaluation=guess.evaluation,
                   meaning="prediction: R = sum_z max_j w_j Pr(z | j) (Def. 7), z the released table minus the other "
                           "records' counts; individual: the largest posterior max_j Pr(cell j | z) of any z",
                   **_loss_extras(model, release))


def variance_result(model: ModelGraph, release: Release, keep: Sequence[str]) -> Result:
    """Exact variance of a released cell (or margin cell) of ``release``."""
    lay = Layout.of(release)
    eps = bind_parameters(model, release.epsilon)
    value = variance_of(model, release, keep)
    extras: dict[str, Any] = {
        "method": "algorithm1" if lay.exact else "geometric",
        **_loss_extras(model, release),
        "noise_variance": noise_variance(eps, lay.exact, release.calibration),
    }
    if lay.exact:
        extras["cells_per_total"] = lay.n  # n_i of Algorithm 1
    if list(keep) == list(lay.names):
        extras["covariance"] = cell_covariance(eps, lay.exact, release.calibration)
        extras["note"] = ("every cell has this variance; two cells of one exact-total cell have covariance "
                          "'covariance', cells of different ones are independent" if lay.exact else
                          "every cell has this variance; cells are independent")
    else:
        extras["note"] = f"variance of each cell of the margin over {', '.join(keep)}"
    return Variance(value, **extras)


def table_result(model: ModelGraph, release: Release, keep: Sequence[str], released: np.ndarray) -> Result:
    """A released table read back: the table (or margin), its standard errors, its exact
    totals and ``n``."""
    lay = Layout.of(release)
    data = margin(lay, released, keep)
    variance = variance_of(model, release, keep)
    extras: dict[str, Any] = {}
    if variance.free_symbols:  # a symbolic epsilon: the standard error stays an expression
        extras["se_expr"] = str(sympy.sqrt(variance))
        inference = Inference(None, None, None, "epsilon is symbolic: the covariance is an expression (se_expr)")
    else:
        se = math.sqrt(float(sympy.N(variance)))
        extras["se"] = _table(release, keep, np.full(data.shape, se))
        s2 = float(sympy.N(noise_variance(bind_parameters(model, release.epsilon), lay.exact, release.calibration)))
        inference = Inference("wald (table +- z se)", functools.partial(_wald_cells, np.ravel(data), se),
                              functools.partial(table_covariance, lay, tuple(keep), s2))
    extras.update(method="algorithm1" if lay.exact else "geometric", **_loss_extras(model, release),
                  n=int(released.sum()))
    if lay.exact:
        exact = [v for v, t in zip(lay.names, lay.totals) if t]
        extras["totals"] = _table(release, exact, margin(lay, released, exact))
    extras["negative_cells"] = int((released < 0).sum())
    return ReleasedTable(_table(release, keep, data), **extras, inference=inference)


def table_covariance(lay: Layout, keep: Sequence[str], s2: float) -> np.ndarray:
    """The covariance of the released margin over ``keep`` (C order): each total cell's
    protected cells have ``s^2 (n I - J)`` under Algorithm 1 (they share their noise
    pairs, :func:`privspec.backends.releases.noise.margin_variance`) and ``s^2 I`` under the geometric
    mechanism, total cells are independent, and a margin sums cells: ``S C S^T``.

    Examples
    --------
    >>> lay = Layout(("d", "b"), (("x", "y"), ("lo", "hi")), (True, False), True)
    >>> table_covariance(lay, ("d", "b"), 1.0).tolist()     # two total cells of two protected cells
    [[1.0, -1.0, 0.0, 0.0], [-1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, -1.0], [0.0, 0.0, -1.0, 1.0]]
    >>> table_covariance(lay, ("b",), 1.0).tolist()        # by b: a cell of each total cell
    [[2.0, -2.0], [-2.0, 2.0]]
    """
    cells = math.prod(lay.shape)
    if cells > COV_CELL_LIMIT:
        raise ValueError(f"the covariance of {cells:,} cells is formed up to {COV_CELL_LIMIT:,} cells "
                         "(the standard errors are there: bse)")
    one = s2 * (lay.n * np.eye(lay.n) - np.ones((lay.n, lay.n))) if lay.exact else s2 * np.eye(lay.n)
    C = np.zeros((cells, cells))
    for row in lay.to_groups(np.arange(cells).reshape(lay.shape)):
        C[np.ix_(row, row)] = one
    S = margin(lay, np.eye(cells).reshape(cells, *lay.shape), keep).reshape(cells, -1).T
    return S @ C @ S.T


def _wald_cells(data: np.ndarray, se: float, level: float) -> tuple[np.ndarray, np.ndarray]:
    z = float(scipy.special.ndtri(0.5 + level / 2))
    return data - z * se, data + z * se


def _simulate(model: ModelGraph, query: Query, release: Release, keep: Sequence[str], **options: Any) -> Result:
    """Empirical against analytic: draw ``n`` records from the populations once, release
    them ``reps`` times."""
    n, reps = int(options.get("n") or 1000), int(options.get("reps") or 1000)
    rng = np.random.default_rng(options.get("seed"))
    lay = Layout.of(release)
    counts = rng.multinomial(n, _population(model, release).ravel()).reshape(lay.shape)
    noisy = add_noise(model, release, np.tile(lay.to_groups(counts), (reps, 1)), rng)
    tables = lay.from_groups(noisy.reshape(reps, lay.m, lay.n))
    margins = margin(lay, tables, keep).astype(float)
    analytic = variance_of(model, release, keep)
    empirical = margins.var(axis=0, ddof=1) if reps > 1 else np.zeros(margins.shape[1:])
    if query.kind == "variance":
        result = variance_result(model, release, keep)
        return Variance(analytic, **result.extras, empirical=float(empirical.mean()), n=n, reps=reps)
    truth = margin(lay, counts, keep)
    return ReleasedTable(_table(release, keep, margins.mean(axis=0)), data=_table(release, keep, truth),
                         se=_table(release, keep, np.full(truth.shape, math.sqrt(float(sympy.N(analytic))))),
                         empirical_se=_table(release, keep, np.sqrt(empirical)),
                         method="algorithm1" if lay.exact else "geometric", **_loss_extras(model, release), n=n,
                         reps=reps, note="value: the mean released table over reps; data: the simulated true counts")
