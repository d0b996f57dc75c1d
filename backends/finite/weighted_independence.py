"""The test of independence of two privatized variables with survey weights, strata and
clusters (``test independence(X, Y) from M``, ``run --weights``): the design-based Wald
test of the ``survey`` package's ``svychisq(statistic = "adjWald")``.

The permutation and chi-square calibrations of :mod:`.independence` assume independent,
equally weighted respondents; under a cluster sample they reject too often.  Here the
joint of the two variables is the Hajek method of moments on the product mechanism's
weighted reports (:func:`.weighted.design_estimate`), with its design-based covariance
``V`` (linearized, or from replicate weights), summed to the two variables' table
(:func:`.joint_independence.pair_map`: two factors' variables, or parts of one factor's combined variable
such as ``grr(a * b)``, the other components summed out).  A product with dummy
categories (``min_coverage``) is refused (B040): privatize makes none, and its dummy
respondents would have no place in the survey design.  Independence is ``d_ij = w_ij - r_i c_j
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

import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import Query
from privspec.results.kinds import HypothesisTest
from privspec.results.result import Result
from privspec.results.values import TestResult
from privspec.backends.data.survey import SurveyDesign
from privspec.backends.finite.joint_independence import pair_map, wald_statistic
from privspec.backends.finite.rao_scott import METHOD as RAO_SCOTT_METHOD, rao_scott_test
from privspec.backends.finite.weighted import design_estimate

METHOD = "design-based adjusted Wald test of independence (svychisq's statistic = 'adjWald'), on the weighted MoM joint"


def weighted_independence(q: Query, engine: Any, design: SurveyDesign) -> Result:
    """The design-based Wald test of ``q`` on the table ``engine`` counts (the module
    docstring)."""
    d = design_estimate(q, engine, design, "mom")
    if d.channel.offset is not None:
        raise BackendError(Diagnostic("B040", f"query '{q.name}': survey weights are not supported for an "
                                              "independence test with dummy categories (min_coverage) in the "
                                              "product: its dummy respondents have no place in the design",
                                      hint="a design without dummy categories (privatize makes none in a product)"))
    x, y = q.estimand.variables
    factors = getattr(q.mechanism, "factors", None) or (q.mechanism,)
    L, shape = pair_map(tuple(d.channel.x_labels), [c for f in factors for c in f.variable.components()], x, y)
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
    rao = rao_scott_test(W, V, S, design_df)
    rao_note = (f"beside it, rao_scott: {RAO_SCOTT_METHOD}, F = {rao.statistic:.6g} on ({rao.ndf:.4g}, "
                f"{rao.ddf:.4g}) degrees of freedom, p = {rao.p_value:.4g}, mean generalized design effect "
                f"{rao.mean_deff:.4g} (over the unweighted estimator's covariance from the same reports, the "
                "privatization's noise included)" if rao is not None else
                "no Rao-Scott test beside it: an estimated margin is not positive, or the unweighted "
                "estimator's covariance of the contrasts is singular")
    extras = {"rao_scott": rao.as_dict()} if rao is not None else {}
    return HypothesisTest(TestResult(METHOD, stat, float(k), p_value), n=int(round(d.fit.n)),
                          null=f"{x.name} and {y.name} are independent",
                          calibration=f"F({k}, {design_df - k + 1}) (the adjusted Wald test; Wald statistic "
                                      f"{wald:.6g} on {design_df} design degrees of freedom)",
                          note=f"survey weights: {design.describe()}; {design.se_kind} covariance of the joint; "
                               f"the query's '{q.method.name}' and its calibration assume a simple random sample, "
                               f"so the weighted version of every independence test is this one; {rao_note}",
                          **extras)

