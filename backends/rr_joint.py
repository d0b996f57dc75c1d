"""Joint distributions from randomized-response reports (the castell paper).

Kikuchi, Domingo-Ferrer and Soria-Comas, "Castell: scalable joint probability
estimation of multi-dimensional data randomized with local differential privacy".
Respondents randomize each attribute independently (RR-Independent randomization:
``Y_k = RR_{P_k}(X_k)``); the reports of a subset S of w attributes form a
``d_1 x ... x d_w`` table of counts.  With ``K_k = P_k^T`` (``P[u][v] = Pr(Y = v | X =
u)``) the report frequencies are ``lambda = (K_1 (x) ... (x) K_w) Pi``.  From the table:

* :func:`castell` -- RR-Ind-Joint, Algorithm 3: ``Pi_hat = (K_1^-1 (x) ... (x) K_w^-1)
  lambda_hat`` mode-wise on the tensor (:mod:`privspec.backends.kron`), with the
  per-cell variance from the Kronecker (Warner) covariance;
* :func:`independent` -- RR-Independent, Algorithm 2 (Eq. 2): the outer product of the
  marginal Warner estimates, with a delta-method variance;
* :func:`truncated` -- Algorithm 4 with Eq. (25);
* :func:`clusters` -- RR-Clusters (section II-B3): castell within clusters of attributes
  linked by Cramer's V, independence across clusters;
* :func:`hybrid` -- section III-D: castell or RR-Independent, chosen by the thresholds of
  Appendix C or by the estimated mean squared errors;
* :func:`rr_joint` -- RR-Joint (Eq. 1): one RR on the combined domain, inverted there.

Error metrics (section III-G): :func:`mae`, :func:`avd`, :func:`mse`.  Data reach these
functions only as count tables (sufficient statistics).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .estimators import clip_renormalize, project_simplex
from .kron import kron_apply, kron_cov_diag, kron_inverses

__all__ = ["JointFit", "castell", "independent", "truncated", "clusters", "hybrid", "rr_joint", "project",
           "cramers_v", "mae", "avd", "mse", "PROJECTIONS", "estimate_joint"]

#: simplex projections an estimate may be given (``by castell(project = euclidean)``)
PROJECTIONS = ("none", "clip", "euclidean")


@dataclass(frozen=True)
class JointFit:
    """A w-way joint estimate (a tensor in the estimand's axis order) and how it was made.

    ``var`` is the per-cell variance of the estimate (already divided by n) where an
    asymptotic variance exists, else None.
    """

    table: np.ndarray
    method: str
    n: int
    var: np.ndarray | None = None
    projection: str = "none"
    negative_cells: int = 0
    note: str = ""
    info: dict = field(default_factory=dict)


# ---- metrics (section III-G) --------------------------------------------------------------------
def mae(truth: np.ndarray, estimate: np.ndarray) -> float:
    """Mean absolute error over the cells: ``1/|Omega| sum_x |Pi(x) - Pi_hat(x)|``
    (section III-G writes it for two attributes, ``1/d^2 sum``).

    Examples
    --------
    >>> round(mae(np.array([[0.4, 0.0], [0.2, 0.4]]), np.array([[0.45, -0.15], [0.25, 0.45]])), 12)
    0.075
    """
    return float(np.mean(np.abs(np.asarray(truth, float) - np.asarray(estimate, float))))


def avd(truth: np.ndarray | Sequence[np.ndarray], estimate: np.ndarray | Sequence[np.ndarray]) -> float:
    """Average variation distance as the paper defines it: the largest cell error
    ``sup_c |Pi^c - Pi_hat^c|`` of each w-way table, averaged over the tables (the
    attribute subsets C) given.

    The paper's footnote calls it equivalent to Ren et al.'s average variant distance
    (half the L1 distance); its own definition and the numbers of Appendix B (AVD 0.29,
    0.15, 0.1) are the sup distance, which is what this computes.

    Examples
    --------
    >>> truth = np.array([[0.4, 0.0], [0.2, 0.4]])
    >>> avd(truth, np.array([[0.21, 0.09], [0.49, 0.21]]))
    0.29
    >>> avd([truth, truth], [np.array([[0.45, -0.15], [0.25, 0.45]]), np.array([[0.3, 0.0], [0.25, 0.3]])])
    0.125
    """
    if isinstance(truth, np.ndarray) and isinstance(estimate, np.ndarray):
        truth, estimate = [truth], [estimate]
    errors = [float(np.max(np.abs(np.asarray(t, float) - np.asarray(e, float)))) for t, e in zip(truth, estimate)]
    return round(float(np.mean(errors)), 15)


def mse(truth: np.ndarray, estimate: np.ndarray) -> float:
    """Mean squared error over the cells (Appendix B: 0.041 for RR-Independent, 0.0075
    for castell)."""
    return float(np.mean((np.asarray(truth, float) - np.asarray(estimate, float)) ** 2))


def cramers_v(table: np.ndarray) -> float:
    """Cramer's V of a two-way table of counts or probabilities (section II-B3):
    ``sqrt(chi^2 / n / min(d_i - 1, d_j - 1))``.

    Examples
    --------
    >>> round(cramers_v(np.array([[4, 0], [2, 4]])), 2), cramers_v(np.array([[3, 1], [3, 3]]))
    (0.67, 0.25)
    """
    t = np.asarray(table, dtype=float)
    n = t.sum()
    if n <= 0 or min(t.shape) < 2:
        return 0.0
    p = t / n
    e = np.outer(p.sum(axis=1), p.sum(axis=0))
    ok = e > 0
    chi2_n = float(np.sum((p[ok] - e[ok]) ** 2 / e[ok]))
    return float(np.sqrt(chi2_n / (min(t.shape) - 1)))


# ---- projections onto the simplex --------------------------------------------------------------
def project(table: np.ndarray, how: str) -> np.ndarray:
    """The table projected onto the probability simplex: ``none``, ``clip`` (negative
    cells set to 0, then rescaled to sum 1: what multi-freq-ldpy's MI does) or
    ``euclidean`` (the nearest distribution in L2)."""
    if how == "none":
        return table
    flat = np.asarray(table, dtype=float).reshape(-1)
    if how == "clip":
        out = clip_renormalize(flat) if np.any(flat > 0) else np.full(flat.size, 1.0 / flat.size)
    elif how == "euclidean":
        out = project_simplex(flat)
    else:
        raise ValueError(f"unknown projection {how!r}: {' | '.join(PROJECTIONS)}")
    return out.reshape(np.shape(table))


# ---- estimators ------------------------------------------------------------------------------------
def _frequencies(counts: np.ndarray) -> tuple[np.ndarray, int]:
    counts = np.asarray(counts, dtype=float)
    n = counts.sum()
    if n <= 0:
        raise ValueError("no reports")
    return counts / n, int(round(n))


def castell(counts: np.ndarray, K: Sequence[np.ndarray], *, variance: bool = True) -> JointFit:
    """RR-Ind-Joint by castell inversion (Algorithm 3).

    ``counts`` is the ``d_1 x ... x d_w`` table of report counts, ``K[k] = P_k^T`` the
    factors' channels.  ``Pi_hat = (K_1^-1 (x) ... (x) K_w^-1) lambda_hat`` is computed
    one mode at a time (O(prod d_i) memory); its covariance is
    ``K^-1 (diag(lambda) - lambda lambda^T) K^-T / n`` (Warner's, for the Kronecker
    matrix), of which the diagonal is evaluated at ``lambda_hat`` without forming it.

    Examples
    --------
    >>> P = np.array([[3, 1], [1, 3]]) / 4                    # Appendix B, eps = log 3
    >>> castell(np.array([[3, 1], [3, 3]]), [P.T, P.T]).table.round(2).tolist()
    [[0.45, -0.15], [0.25, 0.45]]
    """
    lam, n = _frequencies(counts)
    inv = kron_inverses(K)
    table = kron_apply(inv, lam)
    var = kron_cov_diag(inv, lam) / n if variance else None
    return JointFit(table, "castell", n, var,
                    note="castell inversion (Algorithm 3): mode-wise, the Kronecker matrix is never formed")


def marginal_estimates(counts: np.ndarray, K: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray], int]:
    """Per-attribute report frequencies ``lambda_k`` and Warner estimates ``pi_k = K_k^-1 lambda_k``."""
    lam, n = _frequencies(counts)
    w = lam.ndim
    lams = [lam.sum(axis=tuple(j for j in range(w) if j != k)) for k in range(w)]
    pis = [np.linalg.solve(np.asarray(K[k], float), lams[k]) for k in range(w)]
    return lams, pis, n


def _outer(vectors: Sequence[np.ndarray]) -> np.ndarray:
    out = np.ones(())
    for v in vectors:
        out = np.multiply.outer(out, v)
    return out


def _along(v: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = len(v)
    return np.asarray(v).reshape(shape)


def independent(counts: np.ndarray, K: Sequence[np.ndarray], *, variance: bool = True) -> JointFit:
    """RR-Independent (Algorithm 2, Eq. 2): ``Pi_hat(a_1..a_w) = pi_1(a_1) ... pi_w(a_w)``.

    The variance is the delta method's for this estimator around its own limit (the
    product of the true marginals): with ``A_k = K_k^-1``, ``c_k(a) = prod_{j != k}
    pi_j(a_j)`` and the pairwise report margins ``Lambda_kl``,
    ``n Var = sum_{k,l} c_k c_l S_kl - (w Pi_hat)^2`` where ``S_kl = A_k Lambda_kl A_l^T``
    (k != l) and ``S_kk = diag(A_k o A_k lambda_k)``.  It does not include the bias of
    assuming independence.

    Examples
    --------
    >>> P = np.array([[3, 1], [1, 3]]) / 4
    >>> independent(np.array([[3, 1], [3, 3]]), [P.T, P.T]).table.round(2).tolist()
    [[0.21, 0.09], [0.49, 0.21]]
    """
    lams, pis, n = marginal_estimates(counts, K)
    table = _outer(pis)
    var = None
    w = len(pis)
    if variance:
        lam, _ = _frequencies(counts)
        A = [np.linalg.inv(np.asarray(Kk, float)) for Kk in K]
        c = []
        for k in range(w):
            c.append(_outer([pis[j] if j != k else np.ones(len(pis[k])) for j in range(w)]))
        second = np.zeros(table.shape)
        for k in range(w):
            second = second + c[k] ** 2 * _along((A[k] * A[k]) @ lams[k], k, w)
            for l in range(k + 1, w):
                pair = lam.sum(axis=tuple(j for j in range(w) if j not in (k, l)))
                S = A[k] @ pair @ A[l].T  # (d_k, d_l), axes k < l in order
                shape = [1] * w
                shape[k], shape[l] = S.shape
                second = second + 2 * c[k] * c[l] * S.reshape(shape)
        var = np.maximum(second - (w * table) ** 2, 0.0) / n
    return JointFit(table, "independent", n, var,
                    note="RR-Independent (Algorithm 2): product of the marginal estimates; assumes the "
                         "attributes independent, se excludes that bias")


def truncated(counts: np.ndarray, K: Sequence[np.ndarray]) -> JointFit:
    """Algorithm 4: the castell estimate with negative cells set to 0, then each cell cut
    down to the castell estimates of the (w-1)-way margins containing it (Eq. 25).

    Eq. (25) bounds ``Pr(S)`` by the subsets ``S'`` with ``|S'| = |S| - 1`` (the paper's
    ``|S| + 1`` is a typo: a subset has fewer attributes) and below by 0; where a (w-1)-way
    estimate is negative, line 7 of Algorithm 4 would make the cell negative again, so
    the margins are used with their negative cells at 0, as Eq. (25) says.  The result
    need not sum to 1 (Appendix B: 0.85): add a projection for a distribution.

    Examples
    --------
    >>> P = np.array([[3, 1], [1, 3]]) / 4
    >>> truncated(np.array([[3, 1], [3, 3]]), [P.T, P.T]).table.round(2).tolist()
    [[0.3, 0.0], [0.25, 0.3]]
    """
    lam, n = _frequencies(counts)
    w = lam.ndim
    full = kron_apply(kron_inverses(K), lam)
    table = np.maximum(full, 0.0)
    for i in range(w):
        if w == 1:
            break
        rest = [K[j] for j in range(w) if j != i]
        margin = kron_apply(kron_inverses(rest), lam.sum(axis=i))
        table = np.minimum(table, np.expand_dims(np.maximum(margin, 0.0), i))
    return JointFit(table, "truncated", n, None, negative_cells=int(np.sum(full < 0)),
                    note="Algorithm 4: castell, negatives set to 0, cells cut to the (w-1)-way castell margins "
                         "(Eq. 25); no asymptotic variance (not smooth)")


def clusters(counts: np.ndarray, K: Sequence[np.ndarray], names: Sequence[str], threshold: float = 0.2) -> JointFit:
    """RR-Clusters (section II-B3, after Domingo-Ferrer and Soria-Comas): attributes whose
    estimated Cramer's V is at least ``threshold`` are linked; each connected cluster's
    joint is estimated by castell inversion (RR-Joint within the cluster: the inverse of
    the cluster's aggregated matrix), clusters are taken as independent.

    Cramer's V is computed from each pair's castell estimate projected onto the simplex
    (the reports' own V is attenuated by the randomization: Appendix B, 0.25 against
    0.66).
    """
    lam, n = _frequencies(counts)
    w = lam.ndim
    V = np.zeros((w, w))
    for k, l in itertools.combinations(range(w), 2):
        pair = lam.sum(axis=tuple(j for j in range(w) if j not in (k, l)))
        est = project(kron_apply(kron_inverses([K[k], K[l]]), pair), "euclidean")
        V[k, l] = V[l, k] = cramers_v(est)
    parent = list(range(w))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for k, l in itertools.combinations(range(w), 2):
        if V[k, l] >= threshold:
            parent[find(k)] = find(l)
    groups: dict[int, list[int]] = {}
    for k in range(w):
        groups.setdefault(find(k), []).append(k)
    parts = sorted(groups.values())
    table = np.ones([1] * w)
    for g in parts:
        margin = lam.sum(axis=tuple(j for j in range(w) if j not in g))
        est = kron_apply(kron_inverses([K[j] for j in g]), margin)
        shape = [1] * w
        for j, size in zip(g, est.shape):
            shape[j] = size
        table = table * est.reshape(shape)
    info = {"clusters": [[names[j] for j in g] for g in parts], "threshold": threshold,
            "cramers_v": {f"{names[k]},{names[l]}": float(V[k, l]) for k, l in itertools.combinations(range(w), 2)}}
    return JointFit(table, "clusters", n, None, info=info,
                    note="RR-Clusters: castell within clusters linked by Cramer's V >= threshold, independence "
                         "across clusters")


# ---- the paper's bounds (Theorems 5 and 6) and thresholds (Appendix C), numeric -----------------------
def keep_probabilities(K: Sequence[np.ndarray]) -> np.ndarray:
    """``p_k = min_u P_k[u][u]``: the smallest probability of keeping the truth."""
    return np.array([float(np.min(np.diag(np.asarray(Kk, float)))) for Kk in K])


def castell_bound(K: Sequence[np.ndarray], n: float) -> float:
    """Theorem 6 (Eq. 27) in its unmaximized form ``d_1 ... d_w / (p_1 ... p_w n)``
    (the proof's first expression; with equal d and ``p = e^(eps/w)/(e^(eps/w) + d - 1)``
    it is Eq. 27)."""
    d = np.array([np.asarray(Kk).shape[0] for Kk in K], dtype=float)
    return float(np.prod(d / keep_probabilities(K)) / n)


def independent_bound(dims: Sequence[int]) -> float:
    """Theorem 5 (Eq. 26): ``max(d^-w, 1/d - d^-w)`` with ``d`` the largest domain."""
    d, w = float(max(dims)), len(dims)
    return max(d ** -w, 1 / d - d ** -w)


def hybrid(counts: np.ndarray, K: Sequence[np.ndarray], switch: str = "thresholds") -> JointFit:
    """The hybrid scheme (section III-D): castell or RR-Independent.

    ``switch = thresholds`` (the paper's rule): castell where its bound (Theorem 6, Eq. 27)
    is below RR-Independent's (Theorem 5, Eq. 26), i.e. ``n > n*`` (equivalently
    ``eps > eps*``, Appendix C).  ``switch = variance``: castell where its estimated mean
    squared error ``sum Var(Pi_hat)`` (the Kronecker covariance at the reports) is below
    RR-Independent's estimated squared bias ``||Pi_ind - Pi_castell||^2 - sum Var``: a
    data-driven rule, what section V-A suggests in place of the loose bounds.
    """
    c = castell(counts, K)
    ind = independent(counts, K, variance=False)
    n = c.n
    if switch == "thresholds":
        bc, bi = castell_bound(K, n), independent_bound([np.asarray(k).shape[0] for k in K])
        choose = bc < bi
        info = {"castell_bound": bc, "independent_bound": bi,
                "rule": "castell when the Theorem 6 bound (Eq. 27) is below Theorem 5's (Eq. 26), i.e. n > n*"}
    elif switch == "variance":
        var_c = float(np.sum(c.var))
        bias2 = float(np.sum((ind.table - c.table) ** 2)) - var_c
        choose = var_c < bias2
        info = {"castell_mse": var_c, "independent_bias2": bias2,
                "rule": "castell when its estimated MSE (sum of variances) is below RR-Independent's estimated "
                        "squared bias"}
    else:
        raise ValueError(f"unknown switch {switch!r}: thresholds | variance")
    chosen = c if choose else ind
    info["chosen"] = "castell" if choose else "independent"
    info["switch"] = switch
    return JointFit(chosen.table, "hybrid", n, chosen.var if choose else None, info=info,
                    note=f"hybrid (section III-D): {info['chosen']} chosen by {switch}")


def rr_joint(counts: np.ndarray, K: np.ndarray | None = None, keep: tuple[float, float] | None = None) -> JointFit:
    """RR-Joint (Eq. 1): ``Pi_hat = K^-1 lambda_hat`` on the combined domain (``counts`` a
    vector over it), with the covariance diagonal ``K^-1 (diag(lambda) - lambda
    lambda^T) K^-T / n``.

    For GRR give ``keep = (p, q)`` instead of ``K``: ``K^-1 = (I - q J)/(p - q)`` (since
    ``p + (d - 1) q = 1``), so ``Pi_hat = (lambda_hat - q)/(p - q)`` and the covariance is
    ``(diag(lambda) - lambda lambda^T)/(p - q)^2 / n``: O(d) for any domain size.

    Examples
    --------
    >>> rr_joint(np.array([3, 1, 3, 3]), keep=(0.75, 1 / 12)).table.round(4).tolist()
    [0.325, 0.025, 0.325, 0.325]
    """
    if keep is None:
        fit = castell(np.asarray(counts, float).reshape(-1), [K])
        table, var, n = fit.table, fit.var, fit.n
    else:
        lam, n = _frequencies(np.asarray(counts, float).reshape(-1))
        p, q = keep
        table = (lam - q) / (p - q)
        var = lam * (1 - lam) / (p - q) ** 2 / n
    return JointFit(table, "joint", n, var, note="RR-Joint (Eq. 1): inversion on the combined domain")


METHODS = ("castell", "mom", "independent", "truncated", "clusters", "hybrid")


def estimate_joint(method: str, counts: np.ndarray, K: Sequence[np.ndarray], names: Sequence[str],
                   options: dict[str, Any] | None = None) -> JointFit:
    """Dispatch on the spec's estimator, then apply the projection option.

    ``mom`` on a product of randomized responses is the castell estimate (the method of
    moments for the Kronecker channel, computed mode-wise).
    """
    options = dict(options or {})
    how = str(options.get("project", "none"))
    if method in ("castell", "mom"):
        fit = castell(counts, K)
        if method == "mom":
            fit = JointFit(fit.table, "mom", fit.n, fit.var, note="method of moments = castell inversion "
                                                                    "(the Kronecker channel, mode-wise)")
    elif method == "independent":
        fit = independent(counts, K)
    elif method == "truncated":
        fit = truncated(counts, K)
    elif method == "clusters":
        fit = clusters(counts, K, names, float(options.get("v", 0.2)))
    elif method == "hybrid":
        fit = hybrid(counts, K, str(options.get("switch", "thresholds")))
    else:
        raise ValueError(f"unknown joint estimator {method!r}")
    return with_projection(fit, how)


def with_projection(fit: JointFit, how: str) -> JointFit:
    """``fit`` projected onto the simplex (``none`` leaves it as it is); the variance is
    that of the unprojected estimate and is dropped when a projection changed it."""
    negative = int(np.sum(fit.table < 0)) if fit.method != "truncated" else fit.negative_cells
    if how == "none":
        return JointFit(fit.table, fit.method, fit.n, fit.var, "none", negative, fit.note, fit.info)
    table = project(fit.table, how)
    changed = not np.allclose(table, fit.table, rtol=0, atol=1e-15)
    return JointFit(table, fit.method, fit.n, None if changed else fit.var, how, negative, fit.note, fit.info)


def cell_count(dims: Sequence[int]) -> int:
    return int(math.prod(dims))
