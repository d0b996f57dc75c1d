"""A randomized response as a predictor (R's rr ``rrreg.predictor``): a raw categorical
outcome Y regressed on raw covariates x and a sensitive categorical item Z that is only
seen through a finite mechanism's report r.

The model: ``P(Z = z | x) = softmax(x' gamma)_z`` (a multinomial logit on the other
covariates, the first category the base) and ``P(Y = y | x, z) = softmax(w(x, z)' beta)_y``
with ``w(x, z)`` the regression's terms (Z's dummies among them); the report depends on Z
alone, ``K[r, z]``.  One respondent's likelihood is

    P(y, r | x) = sum_z P(z | x) K[r, z] P(y | x, z),

summed over the distinct (outcome, covariates, report) tuples with their counts.  Its
gradient is the complete-data score averaged over the posterior of Z (the EM identity);
BFGS maximizes it, and the standard errors are from the observed information, a central
difference of the analytic gradient.

Examples
--------
>>> rng = np.random.default_rng(0)
>>> n = 3000; x = rng.normal(size=n); z = (rng.random(n) < 1 / (1 + np.exp(-x))).astype(int)
>>> y = (rng.random(n) < 1 / (1 + np.exp(-(-0.5 + 0.5 * x + z)))).astype(int)
>>> K = np.array([[0.8, 0.2], [0.2, 0.8]]); r = np.where(rng.random(n) < 0.8, z, 1 - z)
>>> Xo = np.column_stack([np.ones(n), x])
>>> fit = fit_predictor(Xo, lambda zz: np.column_stack([Xo, np.full(n, float(zz))]), 2, y, K[r], 2, np.ones(n))
>>> bool(np.all(np.abs(fit.coef[:, 0] - [-0.5, 0.5, 1.0]) < 3 * fit.se[:, 0])), fit.converged
(True, True)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.estimands import coefficient_labels, regression_terms
from privspec.model.graph import Query, SubsetMechanism
from privspec.results.kinds import Estimate
from privspec.backends.core.compile import channel_of
from privspec.backends.data.checks import require_columns
from privspec.backends.finite.data import factor_codes, report_columns
from privspec.backends.finite.regression import LogitFit, probabilities
from privspec.backends.finite.regression_data import design_matrix, logit_estimate


@dataclass(frozen=True)
class PredictorFit:
    """The outcome's regression (``outcome``: a :class:`LogitFit` over the terms with Z's
    dummies) and the item's model on the other covariates (``item``)."""

    outcome: LogitFit
    item: LogitFit

    @property
    def coef(self) -> np.ndarray:
        return self.outcome.coef

    @property
    def se(self) -> np.ndarray:
        return self.outcome.se

    @property
    def converged(self) -> bool:
        return self.outcome.converged


def fit_predictor(Xo: np.ndarray, design: Callable[[int], np.ndarray], kz: int, y: np.ndarray,
                  K_rows: np.ndarray, ky: int, counts: np.ndarray, *, gtol: float = 1e-7) -> PredictorFit:
    """The maximum-likelihood fit of the model above on grouped data.

    ``Xo``: the item model's design per group (intercept first); ``design(z)``: the
    outcome's design per group with Z = z; ``y``: the outcome's category per group (0 the
    base); ``K_rows[g, z] = K[r_g, z]``; ``counts``: respondents per group.
    """
    W = np.stack([design(z) for z in range(kz)])                   # (z, g, d)
    do, d = Xo.shape[1], W.shape[2]
    shapes = ((do, kz - 1), (d, ky - 1))
    onehot = np.eye(ky)[y]

    def split(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return theta[:do * (kz - 1)].reshape(shapes[0], order="F"), theta[do * (kz - 1):].reshape(shapes[1], order="F")

    def negative(theta: np.ndarray) -> tuple[float, np.ndarray]:
        gamma, beta = split(theta)
        pz = probabilities(Xo, gamma)                                      # (g, z)
        py = np.stack([probabilities(W[z], beta) for z in range(kz)])      # (z, g, y)
        joint = pz * K_rows * np.take_along_axis(py, y[None, :, None], axis=2)[:, :, 0].T
        lik = joint.sum(axis=1)
        if np.any(lik <= 0):
            return np.inf, np.zeros_like(theta)
        post = joint / lik[:, None]
        g_gamma = Xo.T @ (counts[:, None] * (post - pz)[:, 1:])
        g_beta = sum(W[z].T @ ((counts * post[:, z])[:, None] * (onehot - py[z])[:, 1:]) for z in range(kz))
        grad = np.concatenate([g_gamma.ravel(order="F"), g_beta.ravel(order="F")])
        return -float(counts @ np.log(lik)), -grad

    start = np.zeros(do * (kz - 1) + d * (ky - 1))
    opt = scipy.optimize.minimize(negative, start, jac=True, method="BFGS", options={"gtol": gtol, "maxiter": 1000})
    theta = opt.x
    # the observed information: a central difference of the analytic gradient
    h = 1e-5
    H = np.column_stack([(negative(theta + h * e)[1] - negative(theta - h * e)[1]) / (2 * h)
                         for e in np.eye(len(theta))])
    H = (H + H.T) / 2
    try:
        cov = np.linalg.inv(H) if np.all(np.linalg.eigvalsh(H) > 0) else np.full_like(H, np.nan)
    except np.linalg.LinAlgError:
        cov = np.full_like(H, np.nan)
    gamma, beta = split(theta)
    m = do * (kz - 1)
    ll, n = -float(opt.fun), int(counts.sum())
    converged = bool(opt.success) or float(np.max(np.abs(opt.jac))) < 1e-4
    return PredictorFit(LogitFit(beta, cov[m:, m:], ll, int(opt.nit), converged, n),
                        LogitFit(gamma, cov[:m, :m], ll, int(opt.nit), converged, n))


def item_is_covariate(q: Query) -> bool:
    """Whether the query's mechanism privatizes one of the regression's covariates (not its
    response)."""
    return q.mechanism.variable.name in {v.name for v in q.estimand.variables[1:]}


def predictor_on_data(q: Query, engine: Any) -> Estimate:
    """Fit the regression of the query, whose mechanism privatizes a covariate, on its data."""
    mech, response = q.mechanism, q.estimand.variables[0]
    covariates = list(q.estimand.variables[1:])
    item = mech.variable
    if isinstance(mech, SubsetMechanism) and mech.min_coverage is not None:
        raise BackendError(Diagnostic("B016", f"{mech.name} adds dummy categories to {item.name}: a predictor's "
                                              "reports must be of its own categories", hint="drop min_coverage"))
    others = [v for v in covariates if v.name != item.name]
    header = engine.columns()
    found = ", ".join(map(str, header))
    require_columns(pd.DataFrame(columns=header), [response.name] + [v.name for v in others], engine.source,
                    hint=f"the outcome and the other covariates are read raw beside the reports of {mech.name}; "
                         f"found: {found}")
    require_columns(pd.DataFrame(columns=header), report_columns(mech, header), engine.source,
                    hint=f"the reports of {item.name} are read from the column '{item.name}'; found: {found}")
    tally = engine.tally(list(dict.fromkeys(report_columns(mech, header) + [response.name] +
                                            [v.name for v in others])))
    codes, ch = factor_codes(channel_of(mech), tally, item, mech.name)
    Xo, _ = design_matrix(tally, others)
    y = (design_matrix(tally, [response])[0][:, 1:] @ np.arange(1, len(response.labels))).astype(int)
    # each covariate's columns in Xo (after the intercept), for the outcome's design per z
    width = {v.name: len(v.labels) - 1 if v.is_categorical else 1 for v in others}
    start = {v.name: 1 + sum(width[u.name] for u in others[:i]) for i, v in enumerate(others)}

    def design(z: int) -> np.ndarray:
        columns = [Xo[:, :1]]
        for v in covariates:
            if v.name == item.name:
                columns.append(np.tile((np.arange(1, len(item.labels)) == z).astype(float), (len(Xo), 1)))
            else:
                columns.append(Xo[:, start[v.name]:start[v.name] + width[v.name]])
        return np.column_stack(columns)

    fit = fit_predictor(Xo, design, len(item.labels), y, ch.Kn[codes], len(response.labels),
                        tally.counts.astype(float))
    if not fit.converged:
        raise BackendError(Diagnostic("B020", "the regression's maximization did not converge",
                                      hint="fewer covariates"))
    if np.isnan(fit.outcome.cov).any():
        raise DataError(Diagnostic("D020", "the data do not determine the regression: its observed information "
                                           "is singular at the estimate", hint="more respondents, or fewer covariates"))
    labels = coefficient_labels(response, regression_terms(covariates))
    item_labels = coefficient_labels(item, regression_terms(others))
    flat = fit.item.coef.ravel(order="F"), fit.item.se.ravel(order="F")
    model = {"coefficients": dict(zip(item_labels, map(float, flat[0]))), "se": dict(zip(item_labels, map(float, flat[1])))}
    meaning = (f"logistic regression of {response.name} with the randomized response {item.name} as a predictor "
               f"(rr's rrreg.predictor): {item.name} modelled by a multinomial logit on the other covariates")
    return logit_estimate(fit.outcome, labels, meaning, item_model=model)
