"""Frequency estimates of the local-DP frequency oracles from weighted, stratified, clustered
reports (a survey design bound with the data: :mod:`privspec.backends.data.survey`).

Every oracle's unbiased estimate (``by mom``) is affine in the share of reports whose support
holds each category: ``f_v = (C_v / n - q*) / (p* - q*)``.  Its weighted (Hajek) version
puts the weighted share ``lambda_v = sum_i w_i s_i(v) / sum_i w_i`` in its place: the same
estimator of the oracle, run on the sums of weights per distinct (report, stratum, PSU)
instead of the counts (one group-by of the engine, then numpy; no loop over respondents).
The multi-attribute protocols (``spl``, ``smp``, ``rsfd``) share this path with their
attribute's effective ``p*, q*``; ``smp``'s attribute is a domain (the rows that sampled it:
the others weigh 0 in the ratio, and still count as PSUs in its variance).

The MLE (``by mle``, the IBU) becomes the weighted pseudo-MLE: the IBU on the sums of
weights per distinct support set, which maximizes ``sum_i w_i log (L f)_i``.

A ratio of weighted totals is linearized as ``survey``'s ``svyratio``: the influence value of
a row is ``(s_i(v) - lambda_v) / ((p* - q*) sum_i w_i)``; the pseudo-MLE's is ``B J^-1 s(o) /
sum_i w_i`` (:func:`privspec.backends.core.survey_design.mle_influence`, as for the channel
mechanisms, with a report's likelihood row ``a`` in its support and ``b`` out).  Each is
totalled per PSU with the row's weight, and the stratified with-replacement variance is
:func:`privspec.backends.core.survey_design.linearized_covariance`'s, the one every other
weighted estimate uses.  The design effect is that variance over the unweighted estimator's
(mom: its covariance at the estimate brought onto the simplex; mle: the inverse observed
information; over the n rows).

The memory is that of one float per distinct (report, design cell) tuple and category: the
support indicators of local hashing or unary encoding on many categories (nearly every
report distinct) take ``8 d`` bytes per row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from privspec.errors import DataError, Diagnostic
from privspec.model.graph import Query
from privspec.results.kinds import Estimate
from privspec.results.result import Result
from privspec.backends.core.projections import WALD_CI, wald_interval
from privspec.backends.core.projections import project as project_onto
from privspec.backends.core.channel import B_matrix
from privspec.backends.core.survey_design import DesignCells, linearized_covariance, mle_influence
from privspec.backends.data.survey import (SurveyDesign, design_cells, design_tally, refuse_conditional_se,
                                          replicate_sums)
from privspec.backends.data.tally import Tally
from privspec.backends.finite.estimates import wald_inference
from privspec.backends.finite.truth import as_vector
from privspec.backends.oracles.protocol import OneAttributeOracle, Oracle
from privspec.backends.oracles.reports import mle_fit, require_column, tally_reports

#: the oracles' estimators with a weighted version
WEIGHTED_METHODS = ("mom", "mle")


def weighted_supports(q: Query) -> str:
    """Why ``q`` has no weighted version ("" for an estimate by ``mom``, projected or not,
    or ``mle``)."""
    if q.kind != "estimate":
        return f"{q.kind} queries of frequency oracles"
    if q.method is None or q.method.name not in WEIGHTED_METHODS:
        return (f"the estimator '{q.method.name if q.method else '?'}' of a frequency oracle "
                f"(weighted: {', '.join(WEIGHTED_METHODS)})")
    return ""


@dataclass(frozen=True)
class Law:
    """What a weighted estimate asks of one attribute's oracle: ``reader`` reads its reports
    (support sets), ``probs`` is ``(p*, q*)``, ``unbiased(C, n)`` its unbiased estimate from
    support counts, ``covariance(f, n, reports)`` n times that estimate's covariance from
    ``n`` rows of which ``reports`` report the attribute, ``pair()`` the IBU's likelihoods of
    a category in / not in a report's support (asked only by mle: rsfd's ``_r`` fakes have
    none, B415)."""

    reader: Oracle
    probs: tuple[float, float]
    unbiased: Callable[[np.ndarray, float], np.ndarray]
    covariance: Callable[[np.ndarray, int, int], np.ndarray]
    pair: Callable[[], tuple[float, float]]


@dataclass(frozen=True)
class DesignFit:
    """A weighted frequency estimate (:func:`hajek_frequencies`).

    ``raw``: the estimate before any projection; ``V``: its design-based covariance;
    ``srs``: the unweighted estimator's covariance from the same rows (at ``raw``); ``n``:
    rows; ``reports``: rows that report the attribute (smp: those that sampled it);
    ``total``: every row's sum of weights; ``loglik``: the MLE's weighted
    pseudo-log-likelihood (None for mom); ``replicates``: with replicate weights, how many
    (``V`` is then theirs and there are no ``cells``).
    """

    raw: np.ndarray
    V: np.ndarray
    srs: np.ndarray
    cells: DesignCells | None
    n: int
    reports: int
    total: float
    loglik: float | None = None
    #: with replicate weights (then no ``cells``): how many
    replicates: int | None = None


def hajek_frequencies(q: Query, law: Law, reports: Any, tally: Tally, design: SurveyDesign,
                      domain: np.ndarray | None = None) -> DesignFit:
    """The Hajek estimate of ``q`` (``mom`` or ``mle``) from the ``reports`` of the distinct
    tuples of ``tally`` in ``domain`` (bool over the tuples, default all; a report per tuple
    of the domain), with its design-based covariance (the module docstring)."""
    tuples = np.arange(len(tally.counts))
    if design.replicates is None:
        cells, sums = design_cells(tally, design, tuples), None
        weighted = cells.weighted_counts(len(tuples))                # the sum of weights of each tuple
    else:
        cells, sums = None, replicate_sums(tally, design, tuples, len(tuples))
        weighted = sums[:, 0]
    mine = np.ones(len(tally.counts), dtype=bool) if domain is None else domain
    weight = weighted[mine]
    total = float(weight.sum())
    if not total > 0:
        raise DataError(Diagnostic("D103", "the reports weigh 0 in all: nothing to estimate from",
                                   columns=(design.weights,), hint="a survey weight is a number >= 0, "
                                                                   "some of the reporting rows' positive"))
    members = law.reader.membership(reports)
    n, m = tally.n, int(tally.counts[mine].sum())
    loglik = None
    if q.method.name == "mom":
        raw, psi = _mom(law, members, weight, total)
        srs = law.covariance(project_onto(raw, "clip"), n, m) / n
    else:
        raw, psi, srs, loglik = _mle(law, reports, members, weight, total)
        srs = srs / m
    if sums is not None:
        # each replicate re-runs the same estimator on its own sums of weights per tuple
        again = (_mom(law, members, sums[mine, r], float(sums[mine, r].sum()))[0] if q.method.name == "mom"
                 else mle_fit(law.reader, reports, sums[mine, r], law.pair())[0] for r in range(1, sums.shape[1]))
        V = design.replicates.covariance(raw, np.array(list(again)))
        return DesignFit(raw, V, srs, None, n, m, float(sums[:, 0].sum()), loglik, replicates=sums.shape[1] - 1)
    full = np.zeros((members.shape[1], len(tally.counts)))
    full[:, mine] = psi
    return DesignFit(raw, linearized_covariance(full, cells), srs, cells, n, m, cells.total_weight, loglik)


def _mom(law: Law, members: np.ndarray, weight: np.ndarray, total: float) -> tuple[np.ndarray, np.ndarray]:
    """The unbiased estimate from the weighted support counts and its influence values per
    unit of weight (``d x tuples``): ``(s(v) - lambda_v) / ((p* - q*) N_hat)``."""
    C = weight @ members                                           # the weighted support counts
    p, q = law.probs
    return law.unbiased(C, total), (members - C / total).T / ((p - q) * total)


def _mle(law: Law, reports: Any, members: np.ndarray, weight: np.ndarray, total: float
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The weighted pseudo-MLE (the IBU on the weighted support sets), its influence values
    per unit of weight (:func:`~privspec.backends.core.survey_design.mle_influence`: a
    report's likelihood row is ``a`` in its support, ``b`` out, a factor common to the
    categories aside), the inverse information per unit of weight and the
    pseudo-log-likelihood.  D020 when the information is singular (an estimate on the
    boundary)."""
    pair = law.pair()
    w, V, loglik = mle_fit(law.reader, reports, weight, pair)
    K = np.where(members, *pair)
    try:
        if V is None:
            raise np.linalg.LinAlgError
        psi = mle_influence(K, K @ w, B_matrix(len(w), exact=False), weight / total, total)
    except np.linalg.LinAlgError:
        raise DataError(Diagnostic("D020", "the weighted reports do not determine the estimate's covariance: "
                                           "the information at the estimate is singular (an estimate on the "
                                           "boundary) or too large to form", hint="more respondents, or by mom")
                        ) from None
    return w, psi, V, loglik


def oracle_design_fit(q: Query, o: OneAttributeOracle, engine: Any, design: SurveyDesign) -> DesignFit:
    """The weighted estimate of ``q`` (one attribute, one round or longitudinal) from the
    table ``engine`` counts, its design columns beside the reports."""
    refuse_conditional_se(str(q.method.options.get("se", "population")))
    mech = q.mechanism
    column = mech.variable.name
    require_column(column, engine)
    tally = design_tally(engine, design, [column])
    law = Law(o.report_oracle(), o.support_probs(), o.unbiased, lambda f, n, _: o.covariance(f, 1.0),
              o.likelihood_pair)
    return hajek_frequencies(q, law, tally_reports(tally, column, mech.protocol, o), tally, design)


def design_result(q: Query, fit: DesignFit, shape: Callable[[np.ndarray], Any], labels: tuple[str, ...],
                  design: SurveyDesign, facts: dict, **more: Any) -> Result:
    """The weighted estimate (``shape`` makes the value of its frequencies) with its
    design-based standard errors, Wald intervals and design effects (``more``: further
    extras)."""
    project = str(q.method.options.get("project", "none"))
    w = project_onto(fit.raw, project)
    se = np.sqrt(np.maximum(np.diag(fit.V), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.diag(fit.V) / np.diag(fit.srs)
    estimate = "unbiased estimate" if fit.loglik is None else "pseudo-maximum-likelihood estimate (the IBU)"
    how = ("by linearization, the stratified with-replacement variance over PSUs" if fit.replicates is None
           else f"from {fit.replicates} replicate weights, the estimator re-run on each")
    notes = [f"Hajek (weighted) {estimate}; design-based standard errors {how}; deff: design variance over the "
             "unweighted estimator's at the same n"]
    if project != "none" and np.any(fit.raw < 0):
        notes.append("the projection moved the estimate: its standard errors are the linear estimator's "
                     "(conservative near the boundary)")
    extras: dict = {
        "method": q.method.name, "n": fit.n, **facts, **({"projection": project} if fit.loglik is None else {}),
        **more,
        "se": as_vector(se, labels), "se_kind": design.se_kind,
        "ci95": {lab: [float(a), float(b)] for lab, (a, b) in zip(labels, wald_interval(w, se))},
        "ci_method": f"{WALD_CI} on the design-based standard error",
        "deff": as_vector(deff, labels), "design": design.describe(), "weighted_n": fit.total,
        **_layout(fit), "note": "; ".join(notes),
    }
    if fit.loglik is not None:
        extras["pseudo_loglik"] = fit.loglik
    return Estimate(shape(w), **extras, inference=wald_inference(w, se, lambda: fit.V))


def _layout(fit: DesignFit) -> dict:
    """The design's size in the result: its strata and PSUs, or its replicates."""
    return {"replicates": fit.replicates} if fit.cells is None else fit.cells.layout()


__all__ = ["WEIGHTED_METHODS", "weighted_supports", "Law", "DesignFit", "hajek_frequencies",
           "oracle_design_fit", "design_result"]
