"""Joint distributions from randomized-response reports (the castell paper): the spec's
estimator of a joint, by name, and the projection option.

Kikuchi, Domingo-Ferrer and Soria-Comas, "Castell: scalable joint probability
estimation of multi-dimensional data randomized with local differential privacy".
Respondents randomize each attribute independently (RR-Independent randomization:
``Y_k = RR_{P_k}(X_k)``); the reports of a subset S of w attributes form a
``d_1 x ... x d_w`` table of counts.  With ``K_k = P_k^T`` (``P[u][v] = Pr(Y = v | X =
u)``) the report frequencies are ``lambda = (K_1 (x) ... (x) K_w) Pi``.  From the table:

* :func:`~privspec.backends.rr.castell.castell` -- RR-Ind-Joint, Algorithm 3: ``Pi_hat =
  (K_1^-1 (x) ... (x) K_w^-1) lambda_hat`` mode-wise on the tensor
  (:mod:`privspec.backends.core.kron`), with the per-cell variance from the Kronecker
  (Warner) covariance;
* :func:`~privspec.backends.rr.independent.independent` -- RR-Independent, Algorithm 2
  (Eq. 2): the outer product of the marginal Warner estimates, with a delta-method variance;
* :func:`~privspec.backends.rr.independent.truncated` -- Algorithm 4 with Eq. (25);
* :func:`~privspec.backends.rr.independent.clusters` -- RR-Clusters (section II-B3):
  castell within clusters of attributes linked by Cramer's V, independence across clusters;
* :func:`~privspec.backends.rr.hybrid.hybrid` -- section III-D: castell or RR-Independent,
  chosen by the estimated mean squared errors (the default) or by the paper's bound rule
  (Theorems 5-6, Appendix C: :func:`~privspec.backends.rr.hybrid.bound_rule`);
* :func:`~privspec.backends.rr.castell.rr_joint` -- RR-Joint (Eq. 1): one RR on the
  combined domain, inverted there.

Each returns a :class:`~privspec.backends.rr.fit.JointFit`, its standard error of the kind
asked (:mod:`privspec.backends.rr.fit`).  Error metrics (section III-G):
:mod:`privspec.backends.rr.metrics`.  Data reach these functions only as count tables
(sufficient statistics).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from privspec.backends.core.projections import project
from privspec.backends.rr.castell import castell
from privspec.backends.rr.fit import JointFit, se_kind
from privspec.backends.rr.hybrid import SWITCHES, hybrid
from privspec.backends.rr.independent import clusters, independent, truncated


def estimate_joint(method: str, counts: np.ndarray, K: Sequence[np.ndarray], names: Sequence[str],
                   options: dict[str, Any] | None = None) -> JointFit:
    """Dispatch on the spec's estimator, then apply the projection option.

    ``mom`` on a product of randomized responses is the castell estimate (the method of
    moments for the Kronecker channel, computed mode-wise).  The options are the spec's:
    ``project``, ``se`` (``population`` by default), ``switch`` (``hybrid``) and ``v``
    (``clusters``).
    """
    options = dict(options or {})
    how = str(options.get("project", "none"))
    se = se_kind(str(options.get("se", "population")))
    if method in ("castell", "mom"):
        fit = castell(counts, K, se=se)
        if method == "mom":
            fit = dataclasses.replace(fit, method="mom", note="method of moments = castell inversion (the "
                                                                "Kronecker channel, mode-wise)")
    elif method == "independent":
        fit = independent(counts, K, se=se)
    elif method == "truncated":
        fit = truncated(counts, K)
    elif method == "clusters":
        fit = clusters(counts, K, names, float(options.get("v", 0.2)), se=se)
    elif method == "hybrid":
        fit = hybrid(counts, K, str(options.get("switch", SWITCHES[0])), se=se)
    else:
        raise ValueError(f"unknown joint estimator {method!r}")
    return with_projection(fit, how)


def with_projection(fit: JointFit, how: str) -> JointFit:
    """``fit`` projected onto the simplex (``none`` leaves it as it is); the variance is
    that of the unprojected estimate and is dropped when a projection changed it."""
    negative = int(np.sum(fit.table < 0)) if fit.method != "truncated" else fit.negative_cells
    if how == "none":
        return dataclasses.replace(fit, projection="none", negative_cells=negative)
    table = project(fit.table, how)
    changed = not np.allclose(table, fit.table, rtol=0, atol=1e-15)
    kept = not changed and fit.var is not None
    return dataclasses.replace(fit, table=table, var=fit.var if kept else None, projection=how,
                               negative_cells=negative, se_kind=fit.se_kind if kept else None,
                               ci=fit.ci if kept else None, ci_method=fit.ci_method if kept else None,
                               intervals=fit.intervals if kept else None, cov=fit.cov if kept else None)
