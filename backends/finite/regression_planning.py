"""Planning a regression on a privatized categorical response: the expected Fisher
information of its coefficients per respondent, and their asymptotic covariance.

With the model of :mod:`privspec.backends.finite.regression` (``pi(x; beta)`` the softmax
of ``x' beta_j``, the first category the base) and the reports drawn through the channel,
``q(x) = K pi(x)``, one respondent with covariates x carries the information

    I(beta | x) = J(x)' K' diag(1 / q(x)) K J(x),

``J = d pi / d beta`` (``J[y, (j, t)] = pi_y (1[y = j] - pi_j) x_t``); reports that cannot
occur (``q_r = 0``) carry none.  The information per respondent is its mean over the law
of the covariates, ``I(beta) = E_x[I(beta | x)]``, and ``avar = I(beta)^-1`` is the limit of
``n Cov`` of the maximum-likelihood fit.

The covariates' law is the spec's populations: categorical covariates exactly, over their
(joint, or independent) population's categories; each continuous covariate, independent
of the others, by quadrature (:data:`NODES` Gauss-Hermite nodes for a normal law, Gauss-
Legendre on its support for a uniform one, Gauss-Legendre on the probability scale,
``x = F^-1(u)``, for any other law); the grid is their product.

Examples
--------
Warner's design (p = 0.8) for a logistic regression on one standard normal covariate at
``beta = (0, 1)``; without privacy (``K = I``) the information is the plain logistic one:

>>> X, w = np.column_stack([np.ones(NODES), normal_nodes(0.0, 1.0)[0]]), normal_nodes(0.0, 1.0)[1]
>>> coef = np.array([[0.0], [1.0]])
>>> plain = expected_information(X, w, np.eye(2), coef)
>>> private = expected_information(X, w, np.array([[0.8, 0.2], [0.2, 0.8]]), coef)
>>> round(float(plain[0, 0]), 4), bool(np.all(np.linalg.eigvalsh(plain - private) > 0))
(0.2066, True)
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

import numpy as np

from privspec.errors import BackendError, Diagnostic
from privspec.model.estimands import coefficient_labels, regression_terms
from privspec.model.graph import ModelGraph, Query, Variable
from privspec.results.kinds import Avar
from privspec.results.result import Result
from privspec.backends.core.compile import channel_of
from privspec.backends.core.populations import parameter_values, population_vector
from privspec.backends.finite.regression import block_sum, probabilities
from privspec.backends.finite.regression_data import check_response
from privspec.backends.finite.regression_predictor import item_is_covariate
from privspec.backends.finite.truth import as_matrix
from privspec.backends.interval.laws import law_distribution, population_law

#: quadrature nodes per continuous covariate (Gauss-Hermite for a normal law: exact for
#: polynomials of degree 2 NODES - 1; the integrand is smooth and bounded by one)
NODES = 40
#: nodes on the probability scale for other laws (the quantile function is steep at the ends)
QUANTILE_NODES = 200
#: the largest grid (the product of every covariate's nodes) evaluated
MAX_GRID = 250_000
#: an information whose least eigenvalue is below this share of the largest one without
#: privacy is singular (rounding: a design whose reports carry nothing gives 1e-33)
SINGULAR = 1e-10


def normal_nodes(mean: float, sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes and weights (summing to 1) for a normal law."""
    z, w = np.polynomial.hermite_e.hermegauss(NODES)
    return mean + sd * z, w / w.sum()


def law_nodes(law: Any) -> tuple[np.ndarray, np.ndarray, str]:
    """Nodes, weights (summing to 1) and the rule's name for a continuous law."""
    dist = law_distribution(law)
    if law.family == "normal":
        x, w = normal_nodes(float(dist.mean()), float(dist.std()))
        return x, w, f"Gauss-Hermite, {NODES} nodes"
    lo, hi = (float(b) for b in dist.support())
    if law.family == "uniform":
        u, w = np.polynomial.legendre.leggauss(NODES)
        return lo + (hi - lo) * (u + 1) / 2, w / 2, f"Gauss-Legendre on [{lo:g}, {hi:g}], {NODES} nodes"
    u, w = np.polynomial.legendre.leggauss(QUANTILE_NODES)
    return dist.ppf((u + 1) / 2), w / 2, f"Gauss-Legendre on the quantile scale, {QUANTILE_NODES} nodes"


def covariate_grid(model: ModelGraph, covariates: Sequence[Variable]) -> tuple[np.ndarray, np.ndarray, str]:
    """The design rows (intercept first, the columns of :func:`regression_terms`) at the
    points of the covariates' law, their probabilities, and how the law was integrated."""
    categorical = [v for v in covariates if v.is_categorical]
    axes: dict[str, tuple[np.ndarray, np.ndarray]] = {}   # variable -> (its values per point, weights)
    how = []
    if categorical:
        w = population_vector(model, categorical)
        if w is None:
            _no_population(categorical)
        cells = list(itertools.product(*(range(len(v.labels)) for v in categorical)))
        probs = np.array([float(x) for x in w], dtype=float)
        codes = np.array(cells, dtype=int).reshape(len(cells), len(categorical))
        axes["categories"] = (codes, probs)
        how.append(f"{', '.join(v.name for v in categorical)}: every category, at the declared population")
    for v in covariates:
        if v.is_categorical:
            continue
        law = population_law(model, v)
        if law is None:
            _no_population([v])
        x, w, rule = law_nodes(law)
        axes[v.name] = (x[:, None], w)
        how.append(f"{v.name}: {rule}")
    size = math.prod(len(w) for _, w in axes.values())
    if size > MAX_GRID:
        raise BackendError(Diagnostic("B152", f"the covariates' quadrature grid has {size:,} points (at most "
                                              f"{MAX_GRID:,})", hint="fewer continuous covariates"))
    # the product grid: every combination of the axes' points, weights multiplied
    index = np.array(list(itertools.product(*(range(len(w)) for _, w in axes.values()))), dtype=int)
    index = index.reshape(size, len(axes))
    weights = np.ones(size)
    values: dict[str, np.ndarray] = {}
    for i, (name, (points, w)) in enumerate(axes.items()):
        weights = weights * w[index[:, i]]
        values[name] = points[index[:, i]]
    columns = [np.ones(size)]
    for v in covariates:
        if v.is_categorical:
            code = values["categories"][:, categorical.index(v)]
            columns += [(code == j).astype(float) for j in range(1, len(v.labels))]
        else:
            columns.append(values[v.name][:, 0])
    keep = weights > 0
    return np.column_stack(columns)[keep], weights[keep], "; ".join(how)


def _no_population(variables: Sequence[Variable]) -> None:
    names = ", ".join(v.name for v in variables)
    raise BackendError(Diagnostic("B134", f"planning a regression needs the covariates' law: no population is "
                                          f"declared for {names}",
                                  hint=f"declare it: population {variables[0].name} ~ "
                                       f"{'categorical(...)' if variables[0].is_categorical else 'normal(0, 1)'}"))


def expected_information(X: np.ndarray, weights: np.ndarray, K: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``sum_g weights_g J_g' K' diag(1 / q_g) K J_g`` over ``coef.ravel(order="F")``
    (category by category): the Fisher information of one respondent whose covariates
    take the rows of X with these probabilities.  ``K[r, y]``: the channel."""
    pi = probabilities(X, coef)                                          # (g, k)
    A = pi[:, :, None] * (np.eye(pi.shape[1])[None, :, 1:] - pi[:, None, 1:])   # d pi_y / d eta_j: (g, k, m)
    q = pi @ K.T                                                          # (g, r)
    inv = np.divide(1.0, q, out=np.zeros_like(q), where=q > 0)   # a report that cannot occur carries nothing
    KA = np.einsum("ry,gym->grm", K, A)
    B = np.einsum("grm,gr,grl->gml", KA, inv, KA)                         # J' K' diag(1/q) K J per eta
    return block_sum(X, weights, B)


def declared_coefficients(q: Query) -> tuple[Any, list, tuple[str, ...], np.ndarray]:
    """The planned regression's response, covariates, coefficient labels and declared
    values (in the estimand's order), after :func:`check_response`; B134 where the
    estimand declares no coefficients (planning needs them)."""
    est = q.estimand
    check_response(q)
    response, covariates = est.variables[0], list(est.variables[1:])
    if not est.coefficients:
        labels = coefficient_labels(response, regression_terms(covariates))
        raise BackendError(Diagnostic("B134", "planning a regression needs its coefficients: declare them in the "
                                              "estimand", hint=f"regression(... , coefficients = {{{labels[0]}: -1, "
                                                               f"{labels[-1]}: 0.5}}) (terms left out are 0)"))
    labels = tuple(lab for lab, _ in est.coefficients)
    return response, covariates, labels, np.array([float(v) for _, v in est.coefficients])


def regression_avar(model: ModelGraph, q: Query) -> Result:
    """The ``avar`` of a regression's coefficients at its declared coefficients."""
    est, mech = q.estimand, q.mechanism
    if item_is_covariate(q):
        raise BackendError(Diagnostic("B016", "planning a regression with a randomized-response predictor is not "
                                              "there yet: avar, sample_size and power are for a privatized response",
                                      hint="plan the item's own distribution: avar(distribution(...) from ...)"))
    response, covariates, labels, values = declared_coefficients(q)
    m = len(response.labels) - 1
    coef = values.reshape((-1, m), order="F")
    X, weights, how = covariate_grid(model, covariates)
    info = expected_information(X, weights, channel_matrix(model, mech), coef)
    # the scale: the information without privacy (K = I), which bounds it from above
    scale = np.linalg.eigvalsh(expected_information(X, weights, np.eye(m + 1), coef))[-1]
    if not np.linalg.eigvalsh((info + info.T) / 2)[0] > SINGULAR * scale:
        raise BackendError(Diagnostic("B153", "the coefficients' information is singular: the covariates' law or "
                                              "the design cannot tell them apart",
                                      hint="a covariate needs several values with positive probability, and the "
                                           "mechanism must be identifiable"))
    V = np.linalg.inv(info)
    V = (V + V.T) / 2
    # the coefficients planned for (of = ...): their block of the whole covariance
    keep = [labels.index(lab) for lab in est.focus or labels]
    V, labels = V[np.ix_(keep, keep)], tuple(labels[i] for i in keep)
    return Avar(as_matrix(V, labels, labels), method="mle(logistic)", evaluation=f"quadrature ({how})",
                meaning="n Cov(beta_hat) in the limit: the inverse of the expected Fisher information per respondent "
                        "E_x[J' K' diag(1/q) K J] at the declared coefficients" +
                        (f", the block of {', '.join(labels)}" if est.focus else ""),
                trace=float(np.trace(V)), fisher_information=info.tolist(),
                parameters=[f"{lab} = {float(v):g}" for lab, v in est.coefficients])


def channel_matrix(model: ModelGraph, mech: Any) -> np.ndarray:
    """``K[r, y]``, in floating point with the parameters' values in (B009 for a parameter
    without one)."""
    ch = channel_of(mech)
    subs = parameter_values(model)
    return np.asarray((ch.at(subs) if subs else ch).Kn, dtype=float)
