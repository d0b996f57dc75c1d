"""Planning the logistic regression on a two-group design's reports
(:mod:`privspec.backends.rr.two_group_regression`): the expected Fisher information of
``(b, phi)`` per respondent and the coefficients' asymptotic covariance, so that ``avar``,
``sample_size``, ``power`` and ``compare`` reach it as they reach the finite regression.

One respondent of group g with covariates x gives a yes with ``lambda = A_g s(x) + B_g
(1 - s(x))`` (``A_g``, ``B_g`` the channel's yes row, affine in ``phi``), so carries the
information ``grad lambda grad lambda' / (lambda (1 - lambda))`` over ``(b, phi)``, with
``d lambda / d b = -(A_g - B_g) s (1 - s) x`` and ``d lambda / d phi = A_g' s + B_g' (1 - s)``.
Its mean over the groups' shares and the covariates' law (the finite regression's
quadrature grid, :func:`~privspec.backends.finite.regression_planning.covariate_grid`)
is the information per respondent; ``avar`` is the coefficients' block of its inverse
(``phi`` estimated beside them costs them precision).

The truth: the coefficients declared in the estimand; ``phi`` and the groups' shares from
the populations, as :mod:`privspec.backends.rr.two_group_plans` reads them (cdm:
``cheaters = 0.1`` on the variable's population; sld: ``honesty = 0.8``; uqm: the
unrelated question's population).

Examples
--------
The stochastic lie detector (p = 0.2, 0.8; honesty 0.8) for the log odds of no on one
standard normal covariate at ``b = (0, 1)``: the slope's avar is 57.5, eight times the 6.9
of a logistic regression on the true answers:

>>> import privspec
>>> spec = privspec.load('''variable y: categorical {yes, no}
... variable g: categorical {first, second}
... variable x: continuous
... population x ~ normal(0, 1)
... population y ~ categorical(0.5, 0.5, honesty = 0.8)
... population g ~ categorical(0.5, 0.5)
... mechanism m = sld(y, p1 = 0.2, p2 = 0.8, group = g)
... query v = avar(regression(y ~ x, coefficients = {intercept: 0, x: 1}) from m by mle)''')
>>> r = spec.analyze()["v"]
>>> round(float(r.value.data[1][1]), 1), r.parameters[2]
(57.5, 't = 0.8 (avar 1.05067)')
"""
from __future__ import annotations

import numpy as np

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import ModelGraph, Query
from privspec.results.kinds import Avar
from privspec.results.result import Result
from privspec.backends.finite.regression import probabilities
from privspec.backends.finite.regression_planning import SINGULAR, covariate_grid, declared_coefficients
from privspec.backends.finite.regression_predictor import item_is_covariate
from privspec.backends.finite.truth import as_matrix
from privspec.backends.rr.two_group_plans import declared_latent, declared_share
from privspec.backends.rr.two_group_regression import EXTRA, channel_parts
from privspec.backends.rr.two_groups import probabilities as group_probabilities


def extra_truth(model: ModelGraph, mech) -> float:
    """The design's parameter at the declared truth (cdm: cheaters, 0 unless declared;
    sld: honesty, 1 unless declared; uqm: the unrelated question's first share)."""
    if mech.kind == "cdm":
        return declared_latent(model, mech.variable, "cheaters", 0.0)
    if mech.kind == "sld":
        return declared_latent(model, mech.variable, "honesty", 1.0)
    return float(declared_share(model, mech.unrelated, "the unrelated question's share")[0])


def expected_information(kind: str, p: np.ndarray, w: np.ndarray, X: np.ndarray, weights: np.ndarray,
                         coef: np.ndarray, phi: float) -> np.ndarray:
    """The Fisher information of ``(b, phi)`` of one respondent: group g with probability
    ``w[g]`` (randomized with ``p[g]``), covariates the rows of X with ``weights``."""
    s = probabilities(X, coef)[:, 0]                          # the trait (the first category)
    info = np.zeros((X.shape[1] + 1,) * 2)
    for pg, wg in zip(p, w):
        K0, K1 = channel_parts(kind, np.full(len(X), pg), np.zeros(len(X), dtype=int))   # the yes row
        A, B = K0[:, 0] + phi * K1[:, 0], K0[:, 1] + phi * K1[:, 1]
        lam = A * s + B * (1 - s)
        grad = np.column_stack([-((A - B) * s * (1 - s))[:, None] * X, K1[:, 0] * s + K1[:, 1] * (1 - s)])
        keep = (lam > 0) & (lam < 1)                            # a sure answer carries nothing
        scale = np.where(keep, wg * weights / np.where(keep, lam * (1 - lam), 1.0), 0.0)
        info += (grad * scale[:, None]).T @ grad
    return info


def regression_avar(model: ModelGraph, q: Query) -> Result:
    """``avar(regression(Y ~ X, coefficients = {...}) from M by mle)`` for a two-group
    design: ``n Cov`` of the coefficients in the limit, with ``phi`` estimated beside them."""
    est, mech = q.estimand, q.mechanism
    if item_is_covariate(q):
        raise BackendError(Diagnostic("B016", f"{mech.kind}() reports as a regression's predictor are not there yet",
                                      hint=f"plan regression({mech.variable.name} ~ ...) from {mech.name}"))
    _, covariates, labels, values = declared_coefficients(q)
    coef = values.reshape((-1, 1))
    phi = extra_truth(model, mech)
    w = declared_share(model, mech.group, "the share of each group")
    p = np.array(group_probabilities(model, mech))
    X, weights, how = covariate_grid(model, covariates)
    info = expected_information(mech.kind, p, w, X, weights, coef, phi)
    eig = np.linalg.eigvalsh((info + info.T) / 2)
    if not eig[0] > SINGULAR * max(eig[-1], 1e-300):
        raise BackendError(Diagnostic("B153", "the coefficients' information is singular: the covariates' law or "
                                              "the design cannot tell them and the design's parameter apart",
                                      hint="a covariate needs several values with positive probability; both "
                                           "groups need respondents, a declared truth inside (0, 1)"))
    d = len(labels)
    V = np.linalg.inv(info)
    V = (V + V.T) / 2
    name = EXTRA[mech.kind][0]
    keep = [labels.index(lab) for lab in est.focus or labels]
    block, shown = V[np.ix_(keep, keep)], tuple(labels[i] for i in keep)
    return Avar(as_matrix(block, shown, shown), method="mle(logistic)", evaluation=f"quadrature ({how})",
                meaning=f"n Cov(beta_hat) in the limit, {name} estimated beside the coefficients: the coefficients' "
                        "block of the inverse of the expected Fisher information per respondent" +
                        (f", the block of {', '.join(shown)}" if est.focus else ""),
                trace=float(np.trace(block)), fisher_information=info.tolist(),
                parameters=[f"{lab} = {float(v):g}" for lab, v in est.coefficients] +
                           [f"{name} = {phi:g} (avar {float(V[d, d]):.6g})",
                            f"groups: {', '.join(f'{g} {x:g}' for g, x in zip(mech.group.labels, w))}"])
