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
from typing import Any, Callable, Sequence

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
    dummies) and the item's model on the other covariates (``item``); ``theta`` all the
    coefficients (the item's, then the outcome's, each ``ravel(order="F")``) and
    ``information`` the observed information in them (the inverse of the joint covariance
    whose diagonal blocks the two fits carry)."""

    outcome: LogitFit
    item: LogitFit
    theta: np.ndarray
    information: np.ndarray

    @property
    def coef(self) -> np.ndarray:
        return self.outcome.coef

    @property
    def se(self) -> np.ndarray:
        return self.outcome.se

    @property
    def converged(self) -> bool:
        return self.outcome.converged


@dataclass(frozen=True)
class PredictorData:
    """The grouped data of the model: ``Xo`` the item model's design per group (intercept
    first); ``W[z]`` the outcome's design per group with Z = z; ``y`` the outcome's category
    per group (0 the base); ``K_rows[g, z] = K[r_g, z]``; ``ky`` the outcome's categories."""

    Xo: np.ndarray
    W: np.ndarray
    y: np.ndarray
    K_rows: np.ndarray
    ky: int

    @property
    def kz(self) -> int:
        return self.W.shape[0]

    @property
    def split_at(self) -> int:
        """The item model's coefficients: the first ``split_at`` of ``theta``."""
        return self.Xo.shape[1] * (self.kz - 1)

    def split(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``theta`` as the item's ``gamma`` (terms x (kz - 1)) and the outcome's ``beta``."""
        m = self.split_at
        return (theta[:m].reshape((self.Xo.shape[1], self.kz - 1), order="F"),
                theta[m:].reshape((self.W.shape[2], self.ky - 1), order="F"))

    def scores(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Each group's log likelihood and score (groups x coefficients, ``theta``'s order):
        the complete-data score averaged over the posterior of Z (the EM identity); None
        where a group's likelihood is 0."""
        gamma, beta = self.split(theta)
        pz = probabilities(self.Xo, gamma)                                             # (g, z)
        py = np.stack([probabilities(self.W[z], beta) for z in range(self.kz)])        # (z, g, y)
        joint = pz * self.K_rows * np.take_along_axis(py, self.y[None, :, None], axis=2)[:, :, 0].T
        lik = joint.sum(axis=1)
        if np.any(lik <= 0):
            return None
        post = joint / lik[:, None]
        g = len(lik)
        # (g, terms, categories) flattened category by category, as theta is
        s_gamma = (self.Xo[:, :, None] * (post - pz)[:, None, 1:]).transpose(0, 2, 1).reshape(g, -1)
        resid = (np.eye(self.ky)[self.y][None, :, :] - py)[:, :, 1:]                   # (z, g, y - 1)
        s_beta = np.einsum("gz,zgd,zgk->gkd", post, self.W, resid).reshape(g, -1)
        return np.log(lik), np.column_stack([s_gamma, s_beta])


def fit_predictor(Xo: np.ndarray, design: Callable[[int], np.ndarray], kz: int, y: np.ndarray,
                  K_rows: np.ndarray, ky: int, counts: np.ndarray, *, gtol: float = 1e-7) -> PredictorFit:
    """The maximum-likelihood fit of the model above on grouped data.

    ``Xo``: the item model's design per group (intercept first); ``design(z)``: the
    outcome's design per group with Z = z; ``y``: the outcome's category per group (0 the
    base); ``K_rows[g, z] = K[r_g, z]``; ``counts``: respondents per group.
    """
    data = PredictorData(Xo, np.stack([design(z) for z in range(kz)]), np.asarray(y), K_rows, ky)
    return fit_grouped(data, counts, gtol=gtol)


def fit_grouped(data: PredictorData, counts: np.ndarray, *, gtol: float = 1e-7) -> PredictorFit:
    """:func:`fit_predictor` on :class:`PredictorData`: BFGS on the analytic gradient, the
    observed information a central difference of it."""
    def negative(theta: np.ndarray) -> tuple[float, np.ndarray]:
        got = data.scores(theta)
        if got is None:
            return np.inf, np.zeros_like(theta)
        loglik, score = got
        return -float(counts @ loglik), -(counts @ score)

    start = np.zeros(data.split_at + data.W.shape[2] * (data.ky - 1))
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
    gamma, beta = data.split(theta)
    m = data.split_at
    ll, n = -float(opt.fun), int(round(float(counts.sum())))
    converged = bool(opt.success) or float(np.max(np.abs(opt.jac))) < 1e-4
    return PredictorFit(LogitFit(beta, cov[m:, m:], ll, int(opt.nit), converged, n),
                        LogitFit(gamma, cov[:m, :m], ll, int(opt.nit), converged, n), theta, H)


def item_is_covariate(q: Query) -> bool:
    """Whether the query's mechanism privatizes one of the regression's covariates (not its
    response)."""
    return q.mechanism.variable.name in {v.name for v in q.estimand.variables[1:]}


@dataclass(frozen=True)
class PredictorReports:
    """A predictor query's data: the grouped model data, the respondents per group, the
    tally they came from (the design's columns too where asked), and the labels of the
    outcome's and the item model's coefficients."""

    data: PredictorData
    counts: np.ndarray
    tally: Any
    labels: tuple
    item_labels: tuple


def predictor_reports(q: Query, engine: Any, extra: tuple = ()) -> PredictorReports:
    """The distinct (reports, outcome, other covariates, ``extra``) tuples of the data of a
    query whose mechanism privatizes a covariate, as the model's grouped data."""
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
                                            [v.name for v in others] + list(extra))))
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

    data = PredictorData(Xo, np.stack([design(z) for z in range(len(item.labels))]), y, ch.Kn[codes],
                         len(response.labels))
    return PredictorReports(data, tally.counts.astype(float), tally,
                            tuple(coefficient_labels(response, regression_terms(covariates))),
                            tuple(coefficient_labels(item, regression_terms(others))))


def refuse_unfit_predictor(fit: PredictorFit) -> None:
    """B020 where BFGS did not converge; D020 where the observed information is singular."""
    if not fit.converged:
        raise BackendError(Diagnostic("B020", "the regression's maximization did not converge",
                                      hint="fewer covariates"))
    if np.isnan(fit.outcome.cov).any():
        raise DataError(Diagnostic("D020", "the data do not determine the regression: its observed information "
                                           "is singular at the estimate", hint="more respondents, or fewer covariates"))


def item_model(fit: PredictorFit, item_labels: Sequence[str]) -> dict:
    """The item model's coefficients and standard errors, by label."""
    flat = fit.item.coef.ravel(order="F"), fit.item.se.ravel(order="F")
    return {"coefficients": dict(zip(item_labels, map(float, flat[0]))), "se": dict(zip(item_labels, map(float, flat[1])))}


def predictor_meaning(q: Query) -> str:
    """What the coefficients are, in words."""
    response, item = q.estimand.variables[0], q.mechanism.variable
    return (f"logistic regression of {response.name} with the randomized response {item.name} as a predictor "
            f"(rr's rrreg.predictor): {item.name} modelled by a multinomial logit on the other covariates")


def predictor_on_data(q: Query, engine: Any) -> Estimate:
    """Fit the regression of the query, whose mechanism privatizes a covariate, on its data."""
    reports = predictor_reports(q, engine)
    fit = fit_grouped(reports.data, reports.counts)
    refuse_unfit_predictor(fit)
    return logit_estimate(fit.outcome, reports.labels, predictor_meaning(q),
                          item_model=item_model(fit, reports.item_labels))
