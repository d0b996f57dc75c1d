"""Logistic regression on the reports of RRreg's two-group designs (``uqm``, ``cdm``,
``sld``; :mod:`privspec.backends.rr.two_groups`): RRreg's ``RRlog`` for its two-group
models, written on counts per distinct (group, report, covariates) tuple.

The model: a respondent with covariates x carries the trait (the variable's first
category) with probability ``s(x) = 1 / (1 + exp(x' b))``, ``b`` the log odds of the
second category against the first (the convention of every regression here; RRreg's
coefficients are the log odds of the first, so ``-b``).  The design's extra parameter
``phi`` is one constant for everyone, and a respondent of group g says yes with

    P(yes | x, g) = K_g[yes, 1](phi) s(x) + K_g[yes, 2](phi) (1 - s(x)),

each group's channel (RRreg's ``getPW``) affine in ``phi``, ``K_g(phi) = K0_g + phi K1_g``:

* ``uqm`` (``phi = pi_u``, the unrelated question's share): ``P(yes | carrier) = p_g + (1 -
  p_g) pi_u``, ``P(yes | non-carrier) = (1 - p_g) pi_u``;
* ``cdm`` (``phi = gamma``, the cheaters, a share of everyone whatever the trait, as the
  planning assumes: ``s(x)`` is the trait's probability among the honest respondents, and
  the honest carriers at x are ``(1 - gamma) s(x)``): ``P(yes | carrier) = 1 - gamma``,
  ``P(yes | non-carrier) = (1 - gamma) p_g``;
* ``sld`` (``phi = t``, the carriers' honesty): ``P(yes | carrier) = t``, ``P(yes |
  non-carrier) = 1 - p_g``.

(RRreg's ``RRlog`` writes the same likelihood for ``UQTunknown`` and ``SLD``; for ``CDM``
its channel leaves gamma out, ``P(yes | x, g) = pi(x) + p_g (1 - pi(x))``, so there its
gamma is not identified.)

At fixed ``phi`` the model is the finite regression of
:mod:`privspec.backends.finite.regression` with the channel's row of each tuple's
report; the fit climbs the joint likelihood in ``(b, phi)`` by Newton's method from the
intercept-only fit's ``phi`` (that fit, and any where Newton stalls, maximizes the profile
likelihood over ``phi`` on a grid, then by Brent's method).  The joint score and Hessian add to the finite
regression's, with ``a = (K1 pi) / q`` per tuple (``q`` the report's probability),
``d l / d phi = sum c a``, ``d2 l / d phi2 = -sum c a^2`` and
``d2 l / d b d phi = sum c (pi_2 K1_2 / q - a post_2) x`` (``post_2 = pi_2 K_2 / q``, the
posterior of the second category).  Standard errors from the observed information of
``(b, phi)``; with the intercept alone the fit is the two groups' closed form of
:func:`~privspec.backends.rr.two_groups.fit` in other coordinates.

Examples
--------
The stochastic lie detector, 4,000 respondents, ``t = 0.8``, log odds of the trait
``-0.5 + x``:

>>> rng = np.random.default_rng(3)
>>> n = 4000; x = rng.normal(size=n); g = rng.integers(0, 2, n); p = np.array([0.2, 0.8])[g]
>>> carrier = rng.random(n) < 1 / (1 + np.exp(0.5 - x))
>>> yes = np.where(carrier, rng.random(n) < 0.8, rng.random(n) >= p)
>>> K0, K1 = channel_parts("sld", p, np.where(yes, 0, 1))
>>> f = fit_two_group(np.column_stack([np.ones(n), x]), K0, K1, np.ones(n))
>>> bool(np.all(np.abs(f.coef[:, 0] - [0.5, -1.0]) < 3 * f.se[:-1])), bool(abs(f.phi - 0.8) < 3 * f.se[-1])
(True, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
import scipy  # its submodules load on first use

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.estimands import coefficient_labels
from privspec.model.graph import ModelGraph, Query
from privspec.results.kinds import Estimate
from privspec.backends.core.normal import z_quantile
from privspec.backends.data.checks import require_columns
from privspec.backends.data.tally import Tally
from privspec.backends.finite.regression import LogitFit, fit_logit, loglik_derivatives, probabilities
from privspec.backends.finite.regression_data import (check_response, design_matrix, logit_estimate, meaning,
                                                     refuse_unfit as refuse_logit_unfit)
from privspec.backends.finite.regression_predictor import item_is_covariate
from privspec.backends.rr.two_groups import category_codes, counts_by_group, probabilities as group_probabilities, wald

#: each design's extra parameter: its name (as the two-group estimate names it) and meaning
EXTRA = {"uqm": ("pi_unrelated", "the share of yes to the unrelated question"),
         "cdm": ("gamma", "cheaters: no whatever they draw, a share of everyone whatever the trait"),
         "sld": ("t", "the carriers' honesty: the share of them who say yes")}
#: the profile likelihood's grid over phi in [0, 1] (then Brent's method between neighbours)
GRID = 21
#: the intercept-only fit starts Newton only with the trait's share this far inside (0, 1):
#: nearer, its maximum is at infinity and Newton could stall in the flat region there
INTERIOR = 1e-4


def channel_parts(kind: str, p: np.ndarray, report: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``K0, K1`` (tuples x 2): the channel's row of each tuple's report, ``P(report |
    first category), P(report | second)``, is ``K0 + phi K1``.

    ``p``: the randomization probability of each tuple's group; ``report``: 0 for yes, 1
    for no.

    Examples
    --------
    >>> K0, K1 = channel_parts("cdm", np.array([0.3, 0.3]), np.array([0, 1]))
    >>> (K0 + 0.1 * K1).round(3).tolist()       # yes: (1 - gamma, (1 - gamma) p); no: the rest
    [[0.9, 0.27], [0.1, 0.73]]
    """
    p = np.asarray(p, dtype=float)
    zero, one = np.zeros_like(p), np.ones_like(p)
    # P(yes | first), P(yes | second) = Y0 + phi Y1
    Y0, Y1 = {"uqm": ((p, zero), (1 - p, 1 - p)),
              "cdm": ((one, p), (-one, -p)),
              "sld": ((zero, 1 - p), (one, zero))}[kind]
    Y0, Y1 = np.column_stack(Y0), np.column_stack(Y1)
    no = (np.asarray(report) == 1)[:, None]
    return np.where(no, 1 - Y0, Y0), np.where(no, -Y1, Y1)


@dataclass(frozen=True)
class TwoGroupFit:
    """A fitted regression: ``coef`` (terms x 1, as :class:`LogitFit`), ``phi``, ``cov``
    the covariance of ``(coef, phi)``, ``loglik``; ``boundary`` where ``phi`` is at 0 or 1."""

    coef: np.ndarray
    phi: float
    cov: np.ndarray
    loglik: float
    iterations: int
    converged: bool
    boundary: bool
    n: int

    @property
    def se(self) -> np.ndarray:
        """Standard errors of ``(coef, phi)``."""
        return np.sqrt(np.clip(np.diag(self.cov), 0, None))

    def logit(self) -> LogitFit:
        """The coefficients' part, as the finite regression's results read it."""
        d = self.coef.shape[0]
        return LogitFit(self.coef, self.cov[:d, :d], self.loglik, self.iterations, self.converged, self.n)


def joint_derivatives(X: np.ndarray, K0: np.ndarray, K1: np.ndarray, counts: np.ndarray, coef: np.ndarray,
                      phi: float) -> tuple[float, np.ndarray, np.ndarray]:
    """The log likelihood, its gradient and Hessian in ``(coef, phi)`` (``-inf`` and empty
    arrays where a report has probability 0)."""
    K = K0 + phi * K1
    ll, grad, hess, _ = loglik_derivatives(X, K, counts, coef)
    if not np.isfinite(ll):
        return -math.inf, np.empty(0), np.empty((0, 0))
    pi = probabilities(X, coef)
    q = np.einsum("gy,gy->g", K, pi)
    a = np.einsum("gy,gy->g", K1, pi) / q
    cross = X.T @ (counts * (pi[:, 1] * K1[:, 1] / q - a * pi[:, 1] * K[:, 1] / q))
    d = len(grad)
    H = np.empty((d + 1, d + 1))
    H[:d, :d], H[:d, d], H[d, :d], H[d, d] = hess, cross, cross, -(counts @ a ** 2)
    return ll, np.append(grad, counts @ a), H


def _profile(X: np.ndarray, K0: np.ndarray, K1: np.ndarray, counts: np.ndarray, phi: float) -> float:
    """The log likelihood maximized over the coefficients at ``phi`` (``-inf`` where a
    report cannot occur, or the information is singular there)."""
    K = K0 + phi * K1
    if np.any((K.max(axis=1) <= 0) & (counts > 0)):
        return -math.inf
    try:
        return fit_logit(X, K, counts).loglik
    except BackendError as err:
        if any(d.code == "B015" for d in err.diagnostics):
            return -math.inf
        raise


def fit_two_group(X: np.ndarray, K0: np.ndarray, K1: np.ndarray, counts: np.ndarray, *,
                  max_iter: int = 50, tol: float = 1e-12) -> TwoGroupFit:
    """The maximum-likelihood fit of ``(b, phi)`` on grouped data (``X`` with the
    intercept's ones first; ``K0``, ``K1`` from :func:`channel_parts`; ``counts`` per
    tuple).

    Newton's method on the joint likelihood climbs from the fit with the intercept alone
    (its ``phi`` is consistent whatever the slopes: the groups' yes rates average the
    trait over the covariates, and that fit has a handful of tuples, each group's yes and
    no).  Where it stalls (the joint Hessian not negative definite on the way), and for the
    intercept alone, the profile likelihood over ``phi`` (the finite regression's fit at
    each ``phi``) on a grid, then Brent's method between the best point's neighbours, finds
    the start."""
    X, K0, K1, counts = _collapse(*(np.asarray(a, dtype=float) for a in (X, K0, K1, counts)))
    if X.shape[1] > 1:
        start = fit_two_group(X[:, :1], K0, K1, counts)
        share = float(probabilities(X[:1, :1], start.coef)[0, 0])
        # a start on the boundary (phi at 0 or 1, the trait's share at 0 or 1) may hold Newton
        # in a flat region away from the maximum: the profile's grid then
        if start.converged and not start.boundary and INTERIOR < share < 1 - INTERIOR:
            phi = start.phi
            fit = _newton(X, K0, K1, counts, fit_logit(X, K0 + phi * K1, counts).coef, phi, max_iter, tol)
            if fit.converged:
                return fit
    grid = np.linspace(0.0, 1.0, GRID)
    values = np.array([_profile(X, K0, K1, counts, u) for u in grid])
    if not np.isfinite(values).any():
        raise DataError(Diagnostic("D020", "the data do not determine the regression: no value of the design's "
                                           "parameter gives the reports a positive likelihood",
                                   hint="more respondents, or fewer covariates"))
    i = int(np.argmax(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, GRID - 1)]
    best = scipy.optimize.minimize_scalar(lambda u: -_profile(X, K0, K1, counts, u), bounds=(lo, hi),
                                          method="bounded", options={"xatol": 1e-10})
    phi = float(best.x) if -best.fun >= values[i] else float(grid[i])
    return _newton(X, K0, K1, counts, fit_logit(X, K0 + phi * K1, counts).coef, phi, max_iter, tol)


def _collapse(X: np.ndarray, K0: np.ndarray, K1: np.ndarray, counts: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Tuples with the same design row and channel rows merged, their counts added (the
    intercept-only fit of the LR test has four: each group's yes and no)."""
    rows, inverse = np.unique(np.column_stack([X, K0, K1]), axis=0, return_inverse=True)
    if len(rows) == len(X):
        return X, K0, K1, counts
    d = X.shape[1]
    merged = np.bincount(inverse.ravel(), weights=counts, minlength=len(rows))
    return rows[:, :d], rows[:, d:d + 2], rows[:, d + 2:], merged


def _newton(X: np.ndarray, K0: np.ndarray, K1: np.ndarray, counts: np.ndarray, coef: np.ndarray, phi: float,
            max_iter: int, tol: float) -> TwoGroupFit:
    """Newton's method on the joint likelihood from ``(coef, phi)``, with step halving and
    ``phi`` kept in [0, 1]; converged when the Newton decrement is below ``tol``."""
    ll, grad, H = joint_derivatives(X, K0, K1, counts, coef, phi)
    converged, it = False, 0
    for it in range(1, max_iter + 1):
        if not H.size:
            break
        # phi moves unless it is at a bound that its score pushes against
        inward = 0 < phi < 1 or (phi <= 0 and grad[-1] > 0) or (phi >= 1 and grad[-1] < 0)
        free = list(range(len(grad) - 1 + inward))
        try:
            step_free = np.linalg.solve(-H[np.ix_(free, free)], grad[free])
        except np.linalg.LinAlgError:
            break
        step = np.zeros(len(grad))
        step[free] = step_free
        if not grad @ step > tol:
            converged = grad @ step > -tol
            if converged:
                # one last Newton step: quadratic convergence takes the error to rounding
                c_t, p_t = coef + step[:-1, None], min(max(phi + step[-1], 0.0), 1.0)
                t_ll, t_grad, t_H = joint_derivatives(X, K0, K1, counts, c_t, p_t)
                if t_ll >= ll - 1e-12 * abs(ll) and t_H.size:
                    coef, phi, ll, grad, H = c_t, p_t, t_ll, t_grad, t_H
            break
        size = 1.0
        if step[-1] != 0:
            # no further than the bound: a step beyond it is cut there
            room = (1 - phi) / step[-1] if step[-1] > 0 else -phi / step[-1]
            size = min(size, room)
        while size > 1e-12:
            c_t, p_t = coef + size * step[:-1, None], min(max(phi + size * step[-1], 0.0), 1.0)
            t_ll, t_grad, t_H = joint_derivatives(X, K0, K1, counts, c_t, p_t)
            if t_ll >= ll - 1e-12 * abs(ll):
                break
            size /= 2
        else:
            converged = True   # no step raises the likelihood: it is at its maximum to rounding
            break
        coef, phi, ll, grad, H = c_t, p_t, t_ll, t_grad, t_H
    boundary = phi <= 0 or phi >= 1
    info = -H
    cov = np.full_like(info, np.nan)
    if info.size and np.all(np.isfinite(info)) and np.all(np.linalg.eigvalsh((info + info.T) / 2) > 0):
        cov = np.linalg.inv(info)
    return TwoGroupFit(coef, phi, (cov + cov.T) / 2, ll, it, converged, boundary, int(round(counts.sum())))


def lr_slopes(fit: TwoGroupFit, X: np.ndarray, K0: np.ndarray, K1: np.ndarray, counts: np.ndarray
              ) -> dict[str, float]:
    """The likelihood-ratio test of all slopes = 0 against the fit with the intercept and
    ``phi`` only: the statistic, its chi-square df, the p-value and the null fit's log
    likelihood."""
    null = fit_two_group(np.asarray(X, dtype=float)[:, :1], K0, K1, counts)
    stat = max(2 * (fit.loglik - null.loglik), 0.0)
    df = fit.coef.shape[0] - 1
    p = float(scipy.stats.chi2.sf(stat, df)) if df else float("nan")
    return {"statistic": stat, "df": df, "p_value": p, "loglik_null": null.loglik}


# ---- data ----------------------------------------------------------------------------------------------
def two_group_reports(model: ModelGraph, q: Query, engine: Any, extra: Sequence[str] = ()
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple[str, ...], Tally]:
    """From one count of the distinct (report, group, covariates) tuples: the design, the
    channel's parts (:func:`channel_parts`), the counts, the terms' names and the tally (of
    the reports, groups, covariates and the ``extra`` columns: a survey design's)."""
    mech = q.mechanism
    if item_is_covariate(q):
        raise BackendError(Diagnostic("B016", f"{mech.kind}() reports as a regression's predictor are not there "
                                              "yet: its regression takes them as the response",
                                      hint=f"estimate regression({mech.variable.name} ~ ...) from {mech.name}"))
    check_response(q)
    covariates = list(q.estimand.variables[1:])
    header = engine.columns()
    found = ", ".join(map(str, header))
    require_columns(pd.DataFrame(columns=header), list(mech.columns), engine.source,
                    hint=f"{mech.kind}() reads the answers from '{mech.variable.name}' and each respondent's group "
                         f"from '{mech.group.name}'; found: {found}")
    names = [v.name for v in covariates]
    require_columns(pd.DataFrame(columns=header), names, engine.source,
                    hint=f"a regression reads its covariates beside the reports of {mech.name}; found: {found}")
    tally = engine.tally(list(dict.fromkeys([*mech.columns, *names, *extra])))
    counts_by_group(mech, tally)        # the reports' and groups' checks, and both groups answered
    report = category_codes(tally, mech.variable.name, mech.variable.labels, "reports")
    group = category_codes(tally, mech.group.name, mech.group.labels, "groups")
    X, terms = design_matrix(tally, covariates)
    p = np.array(group_probabilities(model, mech))[group]
    K0, K1 = channel_parts(mech.kind, p, report)
    return X, K0, K1, tally.counts.astype(float), terms, tally


def refuse_unfit(fit: TwoGroupFit, X: np.ndarray) -> None:
    """The finite regression's refusals (:func:`~privspec.backends.finite.regression_data.refuse_unfit`)
    with the two-group designs' reasons: a singular information may mean the design's
    parameter and the coefficients cannot be told apart."""
    refuse_logit_unfit(fit, X, separation="the covariates separate the reports: fewer covariates or more respondents",
                       singular=" (the design's parameter and the coefficients cannot be told apart)",
                       singular_hint="more respondents, fewer covariates, or the groups' probabilities farther apart")


def regression_result(model: ModelGraph, q: Query, engine: Any) -> Estimate:
    """``estimate regression(Y ~ X1 + X2) from M by mle(logistic)`` for a two-group design:
    the coefficients with their standard errors, Wald intervals and tests, the LR test of
    all slopes, and the design's parameter (``parameters``) with its se and interval."""
    mech = q.mechanism
    X, K0, K1, counts, terms, _ = two_group_reports(model, q, engine)
    fit = fit_two_group(X, K0, K1, counts)
    refuse_unfit(fit, X)
    name, what = EXTRA[mech.kind]
    se = float(fit.se[-1])
    params = {name: {"estimate": fit.phi, "se": se, "ci95": wald(fit.phi, se, z_quantile(0.95)), "meaning": what}}
    p1, p2 = group_probabilities(model, mech)
    notes = [f"groups: {mech.group.labels[0]} (p1 = {p1:g}), {mech.group.labels[1]} (p2 = {p2:g}); {name} one "
             "constant for everyone"]
    if fit.boundary:
        notes.append(f"{name} is at its bound {fit.phi:g}: the maximum on the boundary, where the standard errors "
                     "understate the uncertainty")
    response = q.estimand.variables[0]
    return logit_estimate(fit.logit(), coefficient_labels(response, terms), meaning(response, fit.logit()),
                          lr_test=lr_slopes(fit, X, K0, K1, counts), parameters=params,
                          se_method="observed information of the coefficients and " + name,
                          note="; ".join(notes))
