"""The survey design of a data table: the columns of its weights, strata and clusters
(``--weights W --strata S --cluster C``, ``spec.run(data, weights=..., strata=...,
cluster=...)``), read beside the reports as the agency wrote them (they are not
privatized), and checked with messages that name rows and columns.

The design columns are counted with the reports in one group-by of the engine (the
weight a column of it, as survey weights come in few distinct values, one per weighting
class); the sums of weights per distinct (report, stratum, PSU) are then taken over the
distinct tuples, vectorized (:func:`design_cells`), for every engine alike.

Strata and clusters follow the ``survey`` package with ``nest = TRUE``: a cluster is a
primary sampling unit (PSU) within its stratum (the same cluster label in two strata is
two PSUs); without clusters every row is its own PSU; without strata there is one.  A
stratum with one PSU has no variance estimate: it is refused (D071, ``survey``'s default
``lonely.psu = "fail"``), and the hint says to merge it with a neighbouring stratum.

A design may instead carry the agency's replicate weights
(:mod:`privspec.backends.data.replicates`): they replace strata and clusters (B042 for
both), and the sums of every weight column per distinct report are taken in the same
way, from the one group-by (:func:`replicate_sums`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.backends.core.survey_design import DesignCells, weighted_mean
from privspec.backends.data.checks import show_value
from privspec.backends.data.replicates import Replicates
from privspec.backends.data.tally import Tally, missing_mask


@dataclass(frozen=True)
class SurveyDesign:
    """The columns of a table's survey design (None: not given), or its weights and
    replicate weights (B042 with strata or clusters too).

    Examples
    --------
    >>> SurveyDesign("w", cluster="school").columns
    ('w', 'school')
    """

    weights: str
    strata: str | None = None
    cluster: str | None = None
    replicates: Replicates | None = None

    def __post_init__(self) -> None:
        if self.replicates is not None and (self.strata is not None or self.cluster is not None):
            raise BackendError(Diagnostic("B042", "replicate weights with strata or clusters: the replicates "
                                                  "already carry the design",
                                          hint="give either --replicate-weights or --strata/--cluster, not both"))

    @property
    def columns(self) -> tuple[str, ...]:
        """The design's named columns: weights, strata, cluster (those given; replicate
        columns are matched in a header: :meth:`Replicates.columns_in`)."""
        return tuple(c for c in (self.weights, self.strata, self.cluster) if c is not None)

    @property
    def se_kind(self) -> str:
        """How the design's standard errors are computed, for a result's extras."""
        if self.replicates is None:
            return "design-based (Taylor linearization)"
        return f"design-based (replicate weights, {self.replicates.type})"

    def describe(self) -> str:
        """The design in words, for a result's extras."""
        if self.replicates is not None:
            return f"weights {self.weights}, {self.replicates.describe()}"
        parts = [f"weights {self.weights}"]
        parts.append(f"strata {self.strata}" if self.strata else "one stratum")
        parts.append(f"clusters {self.cluster} (the PSUs)" if self.cluster else "each row its own PSU")
        return ", ".join(parts)


def check_design_columns(design: SurveyDesign, header: Sequence[str], source: str,
                         reports: Sequence[str]) -> tuple[str, ...]:
    """The design's columns in a table with ``header``, replicate columns included: D003
    for a design column the table lacks (the columns found in the hint); D072 for one
    that is also read as reports."""
    replicates = () if design.replicates is None else design.replicates.columns_in(header, design.weights, source)
    for option, column in (("--weights", design.weights), ("--strata", design.strata),
                           ("--cluster", design.cluster), *(("--replicate-weights", c) for c in replicates)):
        if column is None:
            continue
        if column not in header:
            raise DataError(Diagnostic("D003", f"{source} has no column '{column}' ({option})", columns=(column,),
                                       hint=f"columns found: {', '.join(map(str, header)) or 'none'}"))
        if column in reports:
            raise DataError(Diagnostic("D072", f"the column '{column}' ({option}) holds reports of the mechanism",
                                       columns=(column,), hint="a design column is the agency's own, beside the "
                                                                "privatized reports: name another column"))
    return (*design.columns, *replicates)


def design_tally(engine: Any, design: SurveyDesign, reports: Sequence[str]) -> Tally:
    """The counts of the distinct tuples of the ``reports`` columns and the design's columns
    in the table ``engine`` counts, the design's columns checked first
    (:func:`check_design_columns`)."""
    columns = check_design_columns(design, engine.columns(), engine.source, reports)
    return engine.tally(list(dict.fromkeys([*reports, *columns])))


def refuse_conditional_se(kind: str) -> None:
    """B041 unless ``kind`` (an estimator's ``se``) is ``population``: with survey weights the
    design-based standard error answers the population question only."""
    if kind != "population":
        raise BackendError(Diagnostic("B041", "se = conditional with survey weights: the design-based standard "
                                              "error is the population one",
                                      hint="drop the se option, or run without --weights"))


def weights_of(tally: Tally, column: str) -> np.ndarray:
    """Each distinct tuple's weight: a finite number >= 0.  D070 naming every row whose weight
    is missing, not a number or negative, and the total weight 0."""
    values = tally.values[column]
    missing = missing_mask(values)
    number = _numbers(values, missing)
    problems = (("missing", missing), ("not a number", ~missing & ~np.isfinite(number)),
                ("negative", np.isfinite(number) & (number < 0)))
    for what, bad in problems:
        if bad.any():
            rows = tally.locate(bad)
            example = values[bad].iloc[0]
            shown = "" if what == "missing" else f" (e.g. {show_value(example)})"
            raise DataError(Diagnostic("D070", f"{len(rows)} weight{'s' if len(rows) > 1 else ''} {what}{shown}",
                                       rows=rows, columns=(column,),
                                       hint="a survey weight is a number >= 0 in every row"))
    if not np.any(number * tally.counts > 0):
        raise DataError(Diagnostic("D070", "every weight is 0: nothing to estimate from", columns=(column,),
                                   hint="a survey weight is a number >= 0, some of them positive"))
    return number


def _numbers(values: pd.Series, missing: np.ndarray) -> np.ndarray:
    """The values as floats, NaN where missing or not a number.  Text is read by numpy's
    correctly rounded parse (pandas' own is off by an ulp at times: a weight written to a
    CSV would not read back as the DataFrame's)."""
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return values.to_numpy(dtype=float)
    text = values.astype(object).where(~missing, None)
    # a copy, written below (under pandas 3's copy-on-write, to_numpy gives a read-only view)
    number = np.array(pd.to_numeric(text, errors="coerce"), dtype=float)
    ok = ~np.isnan(number)
    number[ok] = np.asarray(text[ok].astype(str).str.strip().to_numpy(), dtype=np.str_).astype(float)
    return number


def design_cells(tally: Tally, design: SurveyDesign, reports: np.ndarray) -> DesignCells:
    """The tally (report columns and the design's) as cells per distinct (report, stratum,
    PSU), with their sums of weights (:class:`~privspec.backends.core.survey_design.DesignCells`).
    ``reports``: each distinct tuple's observation index.  D004 for a missing stratum or
    cluster, D070 for a weight (:func:`weights_of`), D071 for a stratum with one PSU; B040
    for a design of replicate weights (an estimate linearized over PSUs would ignore them)."""
    if design.replicates is not None:
        raise BackendError(Diagnostic("B040", "replicate weights are not supported for this estimate (its "
                                              "standard error is linearized over strata and clusters)",
                                      hint="run it with --strata/--cluster instead of --replicate-weights"))
    weight = weights_of(tally, design.weights)
    labels = [c for c in (design.strata, design.cluster) if c is not None]
    if labels:                       # (an empty list would check every column: smp leaves cells empty)
        tally.check_no_missing(labels)
    stratum, cluster = _codes(tally, design.strata), _codes(tally, design.cluster)
    # the cells in one order whatever the engine's order of the tuples (text weights of a
    # CSV sort otherwise than a DataFrame's numbers): the sums, to the last digit, too
    order = np.lexsort((weight, cluster, stratum, reports))
    reports, weight, stratum, cluster = reports[order], weight[order], stratum[order], cluster[order]
    counts = tally.counts[order].astype(np.int64)
    if design.cluster is None:       # each row its own PSU: a tuple stands for its rows
        cells = DesignCells(reports, weight, stratum, np.arange(len(counts)), counts)
        psus = np.bincount(stratum, weights=counts)
    else:
        psu = np.unique(stratum * (int(cluster.max()) + 1) + cluster, return_inverse=True)[1].ravel()
        cells = DesignCells(reports, weight * counts, stratum, psu, np.ones(len(psu), dtype=np.int64))
        first = np.unique(psu, return_index=True)[1]
        psus = np.bincount(stratum[first], minlength=int(stratum.max()) + 1)
    lonely = np.flatnonzero(psus == 1)
    if lonely.size:
        _lonely_psu(tally, design, _codes(tally, design.strata), lonely)
    return cells


def _codes(tally: Tally, column: str | None) -> np.ndarray:
    """Each distinct tuple's code of a design column's value, as text (0 for all without
    one): the codes in the texts' order, the same whichever engine counted."""
    if column is None:
        return np.zeros(len(tally.counts), dtype=np.int64)
    return np.asarray(pd.factorize(tally.values[column].astype(str).str.strip(), sort=True)[0], dtype=np.int64)


def _lonely_psu(tally: Tally, design: SurveyDesign, stratum: np.ndarray, lonely: np.ndarray) -> None:
    """D071 naming the strata with one PSU and their rows."""
    bad = np.isin(stratum, lonely)
    rows = tally.locate(bad)
    name = design.strata or "the whole table"
    shown = ", ".join(show_value(v) for v in tally.values[design.strata][bad].astype(str).str.strip().unique()[:5]) \
        if design.strata else "the one stratum"
    raise DataError(Diagnostic(
        "D071", f"{len(lonely)} {'strata' if len(lonely) > 1 else 'stratum'} of {name} with one PSU ({shown}): no "
                "design-based variance can be estimated there",
        rows=rows, columns=tuple(c for c in (design.strata, design.cluster) if c),
        hint="merge each such stratum with a similar one in the strata column (the usual collapse), or give "
             "more than one cluster per stratum; privspec does not guess a 'certainty' PSU"))


def replicate_sums(tally: Tally, design: SurveyDesign, reports: np.ndarray, n_obs: int) -> np.ndarray:
    """The sums of the full-sample weights (column 0) and of each replicate's (columns 1..R,
    in :meth:`Replicates.columns_in`'s order) per observation (``n_obs x (1 + R)``), from
    the tally of the reports and the design's columns; ``reports``: each distinct tuple's
    observation index.  D070 for a weight of any of them (:func:`weights_of`: the column
    and rows named, a replicate whose weights are all 0 too)."""
    assert design.replicates is not None
    columns = (design.weights, *design.replicates.columns_in(tally.columns, design.weights, tally.source))
    weights = np.column_stack([weights_of(tally, c) for c in columns])
    # the sums in one order whatever the engine's order of the tuples (text weights of a
    # CSV sort otherwise than a DataFrame's numbers): the same to the last digit
    order = np.lexsort((*weights.T[::-1], reports))
    sums = np.zeros((n_obs, len(columns)))
    np.add.at(sums, reports[order], weights[order] * tally.counts[order, None])
    return sums


def design_sums(tally: Tally, design: SurveyDesign, reports: np.ndarray, n_obs: int
                ) -> tuple[DesignCells | None, np.ndarray | None, np.ndarray, dict]:
    """What every weighted estimator reads first: ``(cells, sums, weighted, layout)``.
    Linearization: the :class:`DesignCells` (:func:`design_cells`), no replicate sums, the
    sum of weights per observation and the design's strata and PSUs.  Replicate weights:
    no cells, the sums per observation of the full-sample and each replicate's weights
    (:func:`replicate_sums`), their column 0, and how many replicates."""
    if design.replicates is None:
        cells = design_cells(tally, design, reports)
        return cells, None, cells.weighted_counts(n_obs), cells.layout()
    sums = replicate_sums(tally, design, reports, n_obs)
    return None, sums, sums[:, 0], {"replicates": sums.shape[1] - 1}


@dataclass(frozen=True)
class DesignMean:
    """The Hajek mean of per-row values under a survey design (:func:`design_mean`)."""

    mean: float
    se: float
    #: design variance over the simple random sample's at the same n
    deff: float
    n: int
    weighted_n: float


def design_mean(values: np.ndarray, tally: Tally, design: SurveyDesign) -> DesignMean:
    """The Hajek mean of ``values`` (one per distinct tuple of ``tally``, standing for its
    rows), its design-based standard error (by linearization, or from the replicate
    weights' means) and its design effect against
    the unweighted mean's iid variance at the same n: the weighted version of every
    estimator that is a mean of per-row values (a numeric mechanism's unbiased reports,
    Example 2's terms of Case-I reports).

    Examples
    --------
    >>> from privspec.backends.data.engines.pandas import PandasEngine
    >>> t = PandasEngine(pd.DataFrame({"y": ["a", "b"], "w": [1.0, 3.0]}), "x").tally(["y", "w"])
    >>> m = design_mean(np.array([0.0, 1.0]), t, SurveyDesign("w"))
    >>> m.mean, m.n, m.weighted_n
    (0.75, 2, 4.0)
    """
    if design.replicates is None:
        cells = design_cells(tally, design, np.arange(len(tally.counts)))
        mean, var = weighted_mean(values, cells)
        total = cells.total_weight
    else:   # each replicate's Hajek mean: one product of the values with every weight column
        sums = replicate_sums(tally, design, np.arange(len(tally.counts)), len(tally.counts))
        means = values @ sums / sums.sum(axis=0)
        mean, total = float(means[0]), float(sums[:, 0].sum())
        var = float(design.replicates.covariance(means[:1], means[1:, None])[0, 0])
    counts = tally.counts.astype(float)
    n = float(counts.sum())
    srs = float(np.dot(counts, (values - mean) ** 2) / max(n - 1, 1) / n)
    return DesignMean(mean, float(np.sqrt(var)), var / srs if srs > 0 else float("nan"), int(n), total)
