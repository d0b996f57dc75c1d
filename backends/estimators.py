"""Estimators of w from counts per distinct observation, for any channel.

Data reach these functions only as sufficient statistics: ``counts[o]`` = how many
respondents reported observation ``o`` of the channel.  Every iteration therefore costs
O(observations x p), whatever the number of respondents.

* :func:`mom`: the method of moments ``Q w = gamma_hat`` (Eq. 5; Warner's estimator for
  randomized response, where Q = K);
* :func:`em`: the MLE by EM (section III-A) with SQUAREM acceleration;
* :func:`newton`: the MLE by a projected Newton (active-set) method on the simplex;
* :func:`one_step`: one Newton step from the MoM estimate (Eq. 7);
* :func:`kkt`: the optimality check of the MLE on the simplex.

All return a :class:`Fit`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .channel import Channel


@dataclass(frozen=True)
class Fit:
    """An estimate of w with how it was obtained."""

    w: np.ndarray
    method: str
    n: int
    loglik: float
    iterations: int = 0
    kkt: float = float("nan")
    converged: bool = True
    note: str = ""


def _check(ch: Channel, counts: np.ndarray) -> np.ndarray:
    counts = np.asarray(counts, dtype=float)
    if counts.shape != (ch.n_obs,):
        raise ValueError(f"expected {ch.n_obs} counts, got shape {counts.shape}")
    if counts.sum() <= 0:
        raise ValueError("no observations")
    return counts


def _observed(ch: Channel, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The rows of K that were observed, their counts, and n: the likelihood involves
    nothing else."""
    nz = counts > 0
    return ch.Kn[nz], counts[nz], float(counts[nz].sum())


def gradient(ch: Channel, counts: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``g_j = d l / d w_j = sum_o n_o K[o, j] / (K w)_o``."""
    K = ch.Kn
    lam = K @ w
    nz = counts > 0
    return K[nz].T @ (counts[nz] / lam[nz])


def kkt(ch: Channel, counts: np.ndarray, w: np.ndarray) -> float:
    """``max_j (g_j / n - 1)``: at the MLE on the simplex it is 0 (up to rounding) where
    w_j > 0 and <= 0 elsewhere (the Lagrange multiplier of sum w = 1 is n)."""
    n = counts.sum()
    return float(np.max(gradient(ch, counts, w) / n - 1.0))


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the probability simplex (sort-based, O(p log p)).

    Examples
    --------
    >>> project_simplex(np.array([0.6, 0.6, -0.2])).round(3).tolist()
    [0.5, 0.5, 0.0]
    """
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, len(v) + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1), 0.0)


def clip_renormalize(v: np.ndarray) -> np.ndarray:
    """Set negative entries to 0 and rescale to sum 1."""
    c = np.maximum(v, 0.0)
    return c / c.sum()


def mom(ch: Channel, counts: np.ndarray) -> Fit:
    """``w_hat = Q^-1 gamma_hat`` with ``gamma_hat = T counts / n`` (Eq. 5).

    Unbiased and linear in the counts; it may leave the simplex (negative entries) in
    small samples: see :func:`project_simplex`.
    """
    counts = _check(ch, counts)
    n = counts.sum()
    gamma = ch.Tn @ counts / n
    Q = ch.Tn @ ch.Kn
    w = np.linalg.solve(Q, gamma)
    lam = ch.Kn @ w
    ll = float(np.sum(counts[counts > 0] * np.log(lam[counts > 0]))) if np.all(lam[counts > 0] > 0) else float("nan")
    return Fit(w, "mom", int(round(n)), ll)


def _em_step(K: np.ndarray, counts: np.ndarray, n: float, w: np.ndarray) -> np.ndarray:
    lam = K @ w
    return w * (K.T @ (counts / np.where(lam > 0, lam, 1.0))) / n


def em(ch: Channel, counts: np.ndarray, w0: np.ndarray | None = None, *, tol: float = 1e-10,
       max_iter: int = 100_000, accelerate: bool = True) -> Fit:
    """The MLE by EM: ``w_j <- w_j sum_o n_o K[o, j] / (K w)_o / n`` (section III-A).

    With ``accelerate`` each cycle is a SQUAREM step (Varadhan and Roland 2008, scheme S3)
    kept only when it does not lower the likelihood.  Stops when the KKT violation is
    below ``tol``; iterations cost O(observations x p), independent of n.
    """
    counts = _check(ch, counts)
    Kz, cz, n = _observed(ch, counts)
    p = ch.p
    w = np.full(p, 1.0 / p) if w0 is None else clip_renormalize(np.asarray(w0, dtype=float)) * 0.999 + 0.001 / p
    step = lambda v: _em_step(Kz, cz, n, v)  # noqa: E731
    ll = lambda v: float(cz @ np.log(np.maximum(Kz @ v, 1e-300)))  # noqa: E731
    it = 0
    violation = np.inf
    while it < max_iter:
        w1 = step(w)
        it += 1
        if accelerate:
            w2 = step(w1)
            it += 1
            r = w1 - w
            v = w2 - 2 * w1 + w
            nv = np.linalg.norm(v)
            if nv > 0:
                alpha = -np.linalg.norm(r) / nv
                alpha = min(alpha, -1.0)
                cand = w - 2 * alpha * r + alpha ** 2 * v
                if np.all(cand >= 0) and cand.sum() > 0:
                    cand = step(cand / cand.sum())
                    it += 1
                    w_next = cand if ll(cand) >= ll(w2) else w2
                else:
                    w_next = w2
            else:
                w_next = w2
        else:
            w_next = w1
        w = w_next
        violation = float(np.max(Kz.T @ (cz / (Kz @ w)) / n - 1.0))
        if violation < tol:
            break
    return Fit(w, "em", int(round(n)), ll(w), it, violation, violation < tol,
               "EM with SQUAREM acceleration" if accelerate else "EM")


def newton(ch: Channel, counts: np.ndarray, w0: np.ndarray | None = None, *, tol: float = 1e-10,
           max_iter: int = 500) -> Fit:
    """The MLE by projected Newton on the simplex (an active-set method).

    Each iteration takes the Newton step of the log-likelihood on the free coordinates
    subject to ``sum w = 1`` (a bordered Hessian system), stops at the boundary of the
    simplex, frees a zero coordinate when its KKT condition is violated, and backtracks
    until the likelihood increases.
    """
    counts = _check(ch, counts)
    Kz, cz, n = _observed(ch, counts)
    p = ch.p
    w = em(ch, counts, w0, tol=1e-3, max_iter=50).w if w0 is None else clip_renormalize(np.asarray(w0, float))
    ll = lambda v: float(cz @ np.log(np.maximum(Kz @ v, 1e-300)))  # noqa: E731
    it = 0
    violation = np.inf
    for it in range(1, max_iter + 1):
        lam = Kz @ w
        g = Kz.T @ (cz / lam)
        violation = float(np.max(g / n - 1.0))
        free = (w > 1e-14) | (g / n - 1.0 > tol)
        S = np.nonzero(free)[0]
        H = -(Kz[:, S].T * (cz / lam ** 2)) @ Kz[:, S]
        m = len(S)
        A = np.zeros((m + 1, m + 1))
        A[:m, :m] = H
        A[:m, m] = 1.0
        A[m, :m] = 1.0
        rhs = np.concatenate([-g[S], [0.0]])
        try:
            sol = np.linalg.solve(A, rhs)
        except np.linalg.LinAlgError:
            sol = np.linalg.lstsq(A, rhs, rcond=None)[0]
        d = np.zeros(p)
        d[S] = sol[:m]
        if violation < tol and np.abs(d).max() < 1e-12:
            break
        neg = d < 0
        tmax = np.min(-w[neg] / d[neg]) if neg.any() else np.inf
        t = min(1.0, tmax)
        base = ll(w)
        while t > 1e-16:
            cand = np.maximum(w + t * d, 0.0)
            cand /= cand.sum()
            if ll(cand) >= base - 1e-12:
                break
            t /= 2
        else:
            break
        w = cand
        if violation < tol and t >= 1.0 and np.abs(d).max() < 1e-10:
            break
    violation = kkt(ch, counts, w)
    return Fit(w, "newton", int(round(n)), ll(w), it, violation, violation < max(tol, 1e-8),
               "projected Newton (active set) on the simplex")


def one_step(ch: Channel, counts: np.ndarray) -> Fit:
    """One Newton step from the MoM estimate (Eq. 7), in theta = w[:-1].

    The paper writes ``theta_MoM + (Hessian)^-1 gradient``; since the Hessian of the
    log-likelihood is negative definite the Newton step for a maximum is
    ``theta - (Hessian)^-1 gradient`` (the paper's sign is a typo, or reads the Hessian as
    the negative Hessian).  When the MoM estimate makes an observed probability <= 0 it
    is first projected onto the simplex and mixed with 1e-6 of the uniform distribution,
    so that the log-likelihood is defined; the note says so.
    """
    counts = _check(ch, counts)
    start = mom(ch, counts)
    # theta_MoM = w_MoM[:p-1] and w = alpha + B theta (Q^-1 gamma_hat need not sum to 1 exactly)
    w = np.append(start.w[:-1], 1.0 - start.w[:-1].sum())
    note = "one Newton step from the MoM estimate (Eq. 7)"
    K = ch.Kn
    nz = counts > 0
    if not np.all(K[nz] @ w > 0):
        w = 0.999999 * project_simplex(w) + 1e-6 / ch.p
        note += "; MoM projected onto the simplex first"
    Kz, cz = K[nz], counts[nz]
    lam = Kz @ w
    g = Kz.T @ (cz / lam)
    H = -(Kz.T * (cz / lam ** 2)) @ Kz
    p = ch.p
    B = np.vstack([np.eye(p - 1), -np.ones((1, p - 1))])
    step = np.linalg.solve(B.T @ H @ B, B.T @ g)
    theta = w[:-1] - step
    w1 = np.append(theta, 1.0 - theta.sum())
    lam1 = Kz @ w1
    ll = float(cz @ np.log(lam1)) if np.all(lam1 > 0) else float("nan")
    return Fit(w1, "one_step", int(round(counts.sum())), ll, 1, note=note)


ESTIMATORS = {"mom": mom, "mle": em, "em": em, "newton": newton, "one_step": one_step}


def estimate(ch: Channel, counts: np.ndarray, method: str) -> Fit:
    """Dispatch on the spec's estimator name (``mle`` is EM)."""
    return ESTIMATORS[method](ch, counts)
