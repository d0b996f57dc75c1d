"""Seeded replications of a regression on a privatized categorical response, for the
quick check of a design comparison (:mod:`privspec.backends.design.finite_sample`).

A comparison ``for regression(Y ~ X, coefficients = {...}, of = ...)`` plans the
coefficients' standard errors; its check must simulate those, not ``distribution(Y)``.
Each replication draws n respondents' covariates from their declared populations, the
response from the model at the declared coefficients (``pi(x; beta)``, the softmax of
:func:`~privspec.backends.finite.regression.probabilities`), the report through the
mechanism's channel ``K[:, y]``, and fits the regression on the counts of each distinct
(covariates, report) by :func:`~privspec.backends.finite.regression.fit_logit`; the
estimates are those of the coefficients planned for (``of``; all without it), the block
the ``avar`` is of.

Examples
--------
>>> import privspec
>>> spec = privspec.load('''
... variable y: categorical {no, yes}
... variable g: categorical {a, b}
... population g ~ categorical(1/2, 1/2)
... mechanism w = rr(y, matrix [[3/4, 1/4], [1/4, 3/4]])
... query e = estimate regression(y ~ g, coefficients = {intercept: -1, g: {b: 1}}) from w by mle(logistic)''')
>>> q = spec.model.queries["e"]
>>> E, truth, why = regression_estimates(spec.model, q, 500, 5, np.random.default_rng(1))
>>> E.shape, truth.tolist(), why
((5, 2), [-1.0, 1.0], None)
"""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from privspec.errors import PrivspecError
from privspec.model.graph import ModelGraph, Query, Variable
from privspec.backends.core.populations import population_vector
from privspec.backends.design.criteria import NotApplicable
from privspec.backends.finite.regression import fit_logit, probabilities
from privspec.backends.finite.regression_planning import channel_matrix
from privspec.backends.finite.regression_predictor import item_is_covariate
from privspec.backends.interval.laws import draw, population_law

#: a check whose fits fail to converge in at least this share of the replications says so
FAILED_SHARE = 0.05


def draw_design(model: ModelGraph, covariates: Sequence[Variable], n: int, rng: np.random.Generator) -> np.ndarray:
    """n design rows (intercept first, then each covariate's columns as
    :func:`~privspec.backends.finite.regression_data.design_matrix` orders them: a
    categorical's dummies against its first category, a continuous one raw) drawn from
    the covariates' declared populations (the categoricals jointly, each continuous one
    on its own); NotApplicable where one has none."""
    categorical = [v for v in covariates if v.is_categorical]
    codes = np.zeros((n, 0), dtype=int)
    if categorical:
        w = population_vector(model, categorical)
        if w is None:
            raise NotApplicable(f"no population to draw {', '.join(v.name for v in categorical)} from")
        cells = np.array(list(itertools.product(*(range(len(v.labels)) for v in categorical))), dtype=int)
        p = np.clip(np.array([float(x) for x in w], dtype=float), 0.0, None)
        codes = cells[rng.choice(len(cells), size=n, p=p / p.sum())].reshape(n, len(categorical))
    columns = [np.ones(n)]
    for v in covariates:
        if v.is_categorical:
            code = codes[:, categorical.index(v)]
            columns += [(code == j).astype(float) for j in range(1, len(v.labels))]
        else:
            law = population_law(model, v)
            if law is None:
                raise NotApplicable(f"no population to draw {v.name} from")
            columns.append(np.asarray(draw(law, n, rng), dtype=float))
    return np.column_stack(columns)


def _categorical_draw(P: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category per row of the probabilities P (rows summing to 1), by inversion."""
    u = rng.random(len(P))[:, None]
    return np.minimum((np.cumsum(P, axis=1) < u).sum(axis=1), P.shape[1] - 1)


def regression_estimates(model: ModelGraph, q: Query, n: int, reps: int, rng: np.random.Generator
                         ) -> tuple[np.ndarray, np.ndarray, str | None]:
    """``reps`` replications' estimates of the planned coefficients (one row each), their
    declared values, and what the replications saw (fits that did not converge)."""
    est = q.estimand
    if item_is_covariate(q):
        raise NotApplicable("no simulation of a regression on a randomized-response predictor")
    if not est.coefficients:
        raise NotApplicable("no coefficients declared to simulate the regression at")
    response, covariates = est.variables[0], list(est.variables[1:])
    if response.name != q.mechanism.variable.name:
        raise NotApplicable("the response is not the mechanism's variable")
    labels = tuple(lab for lab, _ in est.coefficients)
    m = len(response.labels) - 1
    values = np.array([float(v) for _, v in est.coefficients])
    coef = values.reshape((-1, m), order="F")
    keep = [labels.index(lab) for lab in est.focus or labels]
    try:
        K = channel_matrix(model, q.mechanism)                       # K[r, y]
    except PrivspecError as e:
        raise NotApplicable(str(e)) from None
    out, failed = [], 0
    for _ in range(reps):
        X = draw_design(model, covariates, n, rng)
        y = _categorical_draw(probabilities(X, coef), rng)
        r = _categorical_draw(K.T[y], rng)                           # the report, through column y of K
        # the sufficient statistic: counts of each distinct (covariates, report)
        rows, counts = np.unique(np.column_stack([X, r]), axis=0, return_counts=True)
        try:
            fit = fit_logit(rows[:, :-1], K[rows[:, -1].astype(int)], counts.astype(float))
        except (PrivspecError, np.linalg.LinAlgError):
            failed += 1
            continue
        if not fit.converged or not np.all(np.isfinite(fit.coef)):
            failed += 1
            continue
        out.append(fit.coef.ravel(order="F")[keep])
    share = failed / reps if reps else 0.0
    why = f"the fit did not converge in {share:.0%} of the samples" if share >= FAILED_SHARE else None
    return np.array(out, dtype=float).reshape(len(out), len(keep)), values[keep], why
