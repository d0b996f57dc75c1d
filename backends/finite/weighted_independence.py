"""The test of independence of two privatized variables with survey weights, strata and
clusters (``test independence(X, Y) from M``, ``run --weights``): the design-based Wald
test of the ``survey`` package's ``svychisq(statistic = "adjWald")``.

The permutation and chi-square calibrations of :mod:`.independence` assume independent,
equally weighted respondents; under a cluster sample they reject too often.  Here the
joint of the two variables is the Hajek method of moments on the product mechanism's
weighted reports (:func:`.weighted.design_estimate`), with its design-based covariance
``V`` (linearized, or from replicate weights).  Independence is ``d_ij = w_ij - r_i c_j
= 0`` for the first ``p - 1`` rows and ``q - 1`` columns (``r``, ``c`` the margins of the
joint), and the Wald statistic ``W = d' (D V D')^-1 d``, ``D`` the contrasts' Jacobian
(``dd_ij / dw_kl = [k = i][l = j] - [k = i] c_j - r_i [l = j]``), is chi-square with
``k = (p - 1)(q - 1)`` degrees of freedom in the limit.  With few PSUs ``V`` is itself
noisy and that chi-square rejects too often (9.7% at 5% with 40 clusters in 4 strata, in
tests/test_survey_weights_independence.py), so the test is the adjusted Wald test
(``svychisq``'s ``adjWald``; Thomas and Rao 1987): ``F = (f - k + 1) / (f k) W`` against
``F(k, f - k + 1)``, ``f`` the design's degrees of freedom (PSUs less strata; replicates
less one).  The method of moments is linear
in the weighted shares, so its covariance holds wherever the estimate lies (the MLE's
would not on the boundary, where independence tests often sit).  Beside it the result
carries the Rao-Scott second-order corrected test (``svychisq``'s default;
:mod:`.rao_scott`), on the same joint and design covariance.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import Query
from privspec.results.kinds import HypothesisTest
from privspec.results.result import Result
from privspec.results.values import TestResult
from privspec.backends.data.survey import SurveyDesign
from privspec.backends.finite.rao_scott import METHOD as RAO_SCOTT_METHOD, rao_scott_test
from privspec.backends.finite.weighted import design_estimate

METHOD = "design-based adjusted Wald test of independence (svychisq's statistic = 'adjWald'), on the weighted MoM joint"


def weighted_independence(q: Query, engine: Any, design: SurveyDesign) -> Result:
    """The design-based Wald test of ``q`` on the table ``engine`` counts (the module
    docstring)."""
    factors = list(q.mechanism.factors)
    where = []
    for v in q.estimand.variables:
        found = [i for i, f in enumerate(factors) if set(v.components()) == set(f.variable.components())]
        if not found:
            raise BackendError(Diagnostic("B040", f"query '{q.name}': survey weights are not supported for an "
                                                  f"independence test of {v.name} within a factor of the product",
                                          hint="a test of two factors' variables has a weighted version"))
        where.append(found[0])
    d = design_estimate(q, engine, design, "mom")
    if d.channel.offset is not None:
        raise BackendError(Diagnostic("B040", f"query '{q.name}': survey weights are not supported for an "
                                              "independence test with dummy categories",
                                      hint="a design without dummy categories"))
    L, shape = _pair_map(d.channel.p, [len(f.variable.labels) for f in factors], where)
    W, V, S = (L @ d.fit.w).reshape(shape), L @ d.V @ L.T, L @ d.srs @ L.T
    wald, k = wald_statistic(W, V)
    # the design's degrees of freedom: PSUs less strata (replicates less one)
    design_df = d.layout["psus"] - d.layout["strata"] if "psus" in d.layout else d.layout["replicates"] - 1
    if design_df < k:
        raise BackendError(Diagnostic("B020", f"query '{q.name}': {design_df} design degrees of freedom for {k} "
                                              "independence contrasts: no adjusted Wald test",
                                      hint="more clusters (PSUs), or fewer categories"))
    stat = (design_df - k + 1) / (design_df * k) * wald
    p_value = float(scipy.stats.f.sf(stat, k, design_df - k + 1))
    x, y = (v.name for v in q.estimand.variables)
    rao = rao_scott_test(W, V, S, design_df)
    rao_note = (f"beside it, rao_scott: {RAO_SCOTT_METHOD}, F = {rao.statistic:.6g} on ({rao.ndf:.4g}, "
                f"{rao.ddf:.4g}) degrees of freedom, p = {rao.p_value:.4g}, mean generalized design effect "
                f"{rao.mean_deff:.4g} (over the unweighted estimator's covariance from the same reports, the "
                "privatization's noise included)" if rao is not None else
                "no Rao-Scott test beside it: an estimated margin is not positive, or the unweighted "
                "estimator's covariance of the contrasts is singular")
    extras = {"rao_scott": rao.as_dict()} if rao is not None else {}
    return HypothesisTest(TestResult(METHOD, stat, float(k), p_value), n=int(round(d.fit.n)),
                          null=f"{x} and {y} are independent",
                          calibration=f"F({k}, {design_df - k + 1}) (the adjusted Wald test; Wald statistic "
                                      f"{wald:.6g} on {design_df} design degrees of freedom)",
                          note=f"survey weights: {design.describe()}; {design.se_kind} covariance of the joint; "
                               f"the query's '{q.method.name}' and its calibration assume a simple random sample, "
                               f"so the weighted version of every independence test is this one; {rao_note}",
                          **extras)


def _pair_map(p: int, sizes: list[int], where: list[int]) -> tuple[np.ndarray, tuple[int, int]]:
    """The linear map from the product's joint (``p`` categories, factor-major) to the
    two tested factors' table (the other factors summed out, rows the first variable)."""
    basis = np.eye(p).reshape(p, *sizes)
    others = tuple(1 + i for i in range(len(sizes)) if i not in where)
    table = basis.sum(axis=others) if others else basis
    if where[0] > where[1]:
        table = table.transpose(0, 2, 1)
    return table.reshape(p, -1).T, (sizes[where[0]], sizes[where[1]])


def wald_statistic(W: np.ndarray, V: np.ndarray) -> tuple[float, int]:
    """``d' (D V D')^-1 d`` of the independence contrasts of a ``p x q`` joint ``W`` with
    covariance ``V`` (of ``W.ravel()``), and its degrees of freedom ``(p - 1)(q - 1)``.

    Examples
    --------
    An independent joint has statistic 0:

    >>> W = np.outer([0.4, 0.6], [0.3, 0.7])
    >>> stat, df = wald_statistic(W, np.eye(4) * 1e-3)
    >>> round(stat, 12), df
    (0.0, 1)
    """
    p, q = W.shape
    r, c = W.sum(axis=1), W.sum(axis=0)
    rows = [(i, j) for i in range(p - 1) for j in range(q - 1)]
    d = np.array([W[i, j] - r[i] * c[j] for i, j in rows])
    D = np.zeros((len(rows), p * q))
    for k, (i, j) in enumerate(rows):
        grad = np.zeros((p, q))
        grad[i, j] += 1.0
        grad[i, :] -= c[j]
        grad[:, j] -= r[i]
        D[k] = grad.ravel()
    S = D @ V @ D.T
    try:
        stat = float(d @ np.linalg.solve(S, d))
    except np.linalg.LinAlgError:
        raise BackendError(Diagnostic("B020", "the independence contrasts' design-based covariance is singular",
                                      hint="more clusters, or fewer categories")) from None
    return stat, len(rows)
