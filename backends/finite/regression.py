"""Logistic and multinomial-logit regression of a response privatized by a finite mechanism.

The model (R's rr ``rrreg``, RRreg's ``RRlog``): the true category Y of a respondent with
covariates x has ``pi_y(x) = exp(x' beta_y) / sum_z exp(x' beta_z)``, with ``beta_0 = 0``
for the first category (binary Y: logistic regression); the report r is drawn through
the mechanism's channel, so

    P(r | x) = sum_y K[r, y] pi_y(x).

The log likelihood ``sum_g c_g log P(r_g | x_g)`` is written on sufficient statistics:
one row per distinct (covariate pattern, report) with its count ``c_g``.  With
``post_y = pi_y K[r, y] / P(r | x)``, the posterior of the true category, its gradient
in ``beta_j`` is ``sum_g c_g (post_gj - pi_gj) x_g`` (the EM score of rr/RRreg) and its
Hessian's ``(j, l)`` block is
``sum_g c_g [diag(post) - post post' - diag(pi) + pi pi']_jl x_g x_g'``
(the complete-data information minus the missing information).  Newton steps maximise
it, with the complete-data information (positive definite) in place of the Hessian where
the likelihood is not concave there, and step halving: every step raises the likelihood.

Standard errors are from the observed information at the estimate; Wald intervals and
tests per coefficient; the likelihood-ratio test of all slopes = 0 against the fit with
intercepts only.

Examples
--------
>>> rng = np.random.default_rng(1)
>>> x = rng.normal(size=4000); y = rng.random(4000) < 1 / (1 + np.exp(-(0.5 + x)))
>>> K = np.array([[0.8, 0.2], [0.2, 0.8]])               # Warner's design, p = 0.8
>>> r = np.where(rng.random(4000) < 0.8, y, ~y).astype(int)
>>> X = np.column_stack([np.ones(4000), x])
>>> fit = fit_logit(X, K[r], np.ones(4000))
>>> bool(np.all(np.abs(fit.coef[:, 0] - [0.5, 1.0]) < 3 * fit.se[:, 0])), fit.converged
(True, True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.backends.core.normal import z_quantile


@dataclass(frozen=True)
class LogitFit:
    """A fitted regression: ``coef[t, j]`` is term t's coefficient for category j + 1
    (against the first); ``cov`` the covariance of ``coef.ravel(order="F")`` (category
    by category); ``loglik`` at the estimate."""

    coef: np.ndarray
    cov: np.ndarray
    loglik: float
    iterations: int
    converged: bool
    n: int

    @property
    def se(self) -> np.ndarray:
        """Standard errors, shaped like ``coef``."""
        return np.sqrt(np.clip(np.diag(self.cov), 0, None)).reshape(self.coef.shape, order="F")


def probabilities(X: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``pi_y(x)`` per row of X (all k categories, the first the base), by a stable softmax."""
    eta = np.column_stack([np.zeros(len(X)), X @ coef])
    eta -= eta.max(axis=1, keepdims=True)
    e = np.exp(eta)
    return e / e.sum(axis=1, keepdims=True)


def loglik_derivatives(X: np.ndarray, K_rows: np.ndarray, counts: np.ndarray,
                       coef: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """The log likelihood, its gradient and Hessian, and the complete-data information.

    ``K_rows[g, y] = K[r_g, y]``: the channel's row of each group's report.  The gradient
    and matrices are over ``coef.ravel(order="F")``.
    """
    pi = probabilities(X, coef)
    q = np.einsum("gy,gy->g", K_rows, pi)
    if np.any(q <= 0):
        return -np.inf, np.empty(0), np.empty((0, 0)), np.empty((0, 0))
    post = pi * K_rows / q[:, None]
    ll = float(counts @ np.log(q))
    s, t = post[:, 1:], pi[:, 1:]
    grad = ((counts[:, None] * (s - t)).T @ X).T.ravel(order="F")
    eye = np.eye(s.shape[1])
    complete = block_sum(X, counts, t[:, :, None] * eye - t[:, :, None] * t[:, None, :])
    hess = block_sum(X, counts, s[:, :, None] * eye - s[:, :, None] * s[:, None, :]) - complete
    return ll, grad, hess, complete


def block_sum(X: np.ndarray, counts: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_g c_g w_g kron x_g x_g'`` with ``w_g`` symmetric (m x m), category-major (over
    ``coef.ravel(order="F")``): one ``X' diag X`` product (BLAS) per pair of categories."""
    m, d = w.shape[1], X.shape[1]
    full = np.empty((m, d, m, d))
    for j in range(m):
        for l in range(j, m):
            full[j, :, l, :] = (X * (counts * w[:, j, l])[:, None]).T @ X
            full[l, :, j, :] = full[j, :, l, :].T
    return full.reshape(m * d, m * d)


def fit_logit(X: np.ndarray, K_rows: np.ndarray, counts: np.ndarray, *, max_iter: int = 200,
              tol: float = 1e-10) -> LogitFit:
    """The maximum-likelihood fit of the model above on grouped data.

    ``X``: the design per group (its first column the intercept's ones); ``K_rows``: the
    channel's row of each group's report (groups x categories); ``counts``: respondents
    per group.  Stops when the Newton decrement ``g' H^-1 g`` is below ``tol``, after one
    more Newton step.
    """
    X, K_rows, counts = (np.asarray(a, dtype=float) for a in (X, K_rows, counts))
    d, k = X.shape[1], K_rows.shape[1]
    if np.linalg.matrix_rank(X) < d:
        raise BackendError(Diagnostic("B014", "the covariates are collinear (the design matrix has rank "
                                      f"{np.linalg.matrix_rank(X)} < {d} terms)",
                                      hint="drop a covariate that is a combination of the others"))
    coef = np.zeros((d, k - 1))
    ll, grad, hess, complete = loglik_derivatives(X, K_rows, counts, coef)
    converged, it = False, 0
    for it in range(1, max_iter + 1):
        step, decrement = _direction(grad, hess, complete)
        if decrement < tol:
            # one last Newton step: quadratic convergence takes the error to rounding
            last = coef + step.reshape(coef.shape, order="F")
            l_ll, *l_rest = loglik_derivatives(X, K_rows, counts, last)
            if l_ll >= ll - 1e-12 * abs(ll):
                coef, (ll, (grad, hess, complete)) = last, (l_ll, l_rest)
            converged = True
            break
        size = 1.0
        while size > 1e-12:
            trial = coef + size * step.reshape(coef.shape, order="F")
            t_ll, *rest = loglik_derivatives(X, K_rows, counts, trial)
            if t_ll >= ll - 1e-12 * abs(ll):
                break
            size /= 2
        else:
            break   # no step raises the likelihood: the estimate is as good as it gets
        coef, (ll, (grad, hess, complete)) = trial, (t_ll, rest)
    info = -hess
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        cov = np.full_like(info, np.nan)
    if not np.all(np.linalg.eigvalsh((info + info.T) / 2) > 0):
        cov = np.full_like(info, np.nan)   # a flat or saddle direction: no honest standard error
    return LogitFit(coef, cov, ll, it, converged, int(counts.sum()))


def _direction(grad: np.ndarray, hess: np.ndarray, complete: np.ndarray) -> tuple[np.ndarray, float]:
    """Newton's direction where ``-hess`` is positive definite, else the complete-data
    information's (an ascent direction always), and the decrement ``g' step``."""
    for info in (-hess, complete):
        try:
            chol = np.linalg.cholesky((info + info.T) / 2)
        except np.linalg.LinAlgError:
            continue
        step = scipy.linalg.cho_solve((chol, True), grad)
        return step, float(grad @ step)
    raise BackendError(Diagnostic("B015", "the regression's information is singular",
                                  hint="every category needs respondents at several covariate values"))


@dataclass(frozen=True)
class Wald:
    """Wald z, two-sided p-values and intervals per coefficient, shaped like ``coef``."""

    z: np.ndarray
    p_value: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def wald(fit: LogitFit, level: float = 0.95) -> Wald:
    """``coef / se`` against the normal law, and the intervals ``coef +- z_(1+level)/2 se``."""
    se = fit.se
    z = fit.coef / se
    half = z_quantile(level) * se
    # the normal's upper tail, as scipy.stats.norm.sf computes it (ndtr(-x))
    return Wald(z, 2 * scipy.special.ndtr(-np.abs(z)), fit.coef - half, fit.coef + half)


def lr_test(fit: LogitFit, X: np.ndarray, K_rows: np.ndarray, counts: np.ndarray) -> dict[str, float]:
    """The likelihood-ratio test of all slopes = 0 against the fit with the intercepts
    only: the statistic, its chi-square df ((terms - 1)(k - 1)), the p-value and the null
    fit's log likelihood."""
    null = fit_logit(np.asarray(X, dtype=float)[:, :1], K_rows, counts)
    stat = max(2 * (fit.loglik - null.loglik), 0.0)
    df = (fit.coef.shape[0] - 1) * fit.coef.shape[1]
    p = float(scipy.stats.chi2.sf(stat, df)) if df else float("nan")
    return {"statistic": stat, "df": df, "p_value": p, "loglik_null": null.loglik}
