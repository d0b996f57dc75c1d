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
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.backends.core.survey_design import DesignCells, weighted_mean
from privspec.backends.data.checks import show_value
from privspec.backends.data.tally import Tally, missing_mask


@dataclass(frozen=True)
class SurveyDesign:
    """The columns of a table's survey design (None: not given).

    Examples
    --------
    >>> SurveyDesign("w", cluster="school").columns
    ('w', 'school')
    """

    weights: str
    strata: str | None = None
    cluster: str | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        """The design's columns: weights, strata, cluster (those given)."""
        return tuple(c for c in (self.weights, self.strata, self.cluster) if c is not None)

    def describe(self) -> str:
        """The design in words, for a result's extras."""
        parts = [f"weights {self.weights}"]
        parts.append(f"strata {self.strata}" if self.strata else "one stratum")
        parts.append(f"clusters {self.cluster} (the PSUs)" if self.cluster else "each row its own PSU")
        return ", ".join(parts)


def check_design_columns(design: SurveyDesign, header: Sequence[str], source: str,
                         reports: Sequence[str]) -> None:
    """D003 for a design column the table lacks (the columns found in the hint); D072 for
    one that is also read as reports."""
    for option, column in (("--weights", design.weights), ("--strata", design.strata),
                           ("--cluster", design.cluster)):
        if column is None:
            continue
        if column not in header:
            raise DataError(Diagnostic("D003", f"{source} has no column '{column}' ({option})", columns=(column,),
                                       hint=f"columns found: {', '.join(map(str, header)) or 'none'}"))
        if column in reports:
            raise DataError(Diagnostic("D072", f"the column '{column}' ({option}) holds reports of the mechanism",
                                       columns=(column,), hint="a design column is the agency's own, beside the "
                                                                "privatized reports: name another column"))


def design_tally(engine: Any, design: SurveyDesign, reports: Sequence[str]) -> Tally:
    """The counts of the distinct tuples of the ``reports`` columns and the design's columns
    in the table ``engine`` counts, the design's columns checked first
    (:func:`check_design_columns`)."""
    check_design_columns(design, engine.columns(), engine.source, reports)
    return engine.tally(list(dict.fromkeys([*reports, *design.columns])))


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
    cluster, D070 for a weight (:func:`weights_of`), D071 for a stratum with one PSU."""
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
    rows), its design-based standard error by linearization and its design effect against
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
    cells = design_cells(tally, design, np.arange(len(tally.counts)))
    mean, var = weighted_mean(values, cells)
    counts = tally.counts.astype(float)
    n = float(counts.sum())
    srs = float(np.dot(counts, (values - mean) ** 2) / max(n - 1, 1) / n)
    return DesignMean(mean, float(np.sqrt(var)), var / srs if srs > 0 else float("nan"), int(n),
                      cells.total_weight)
