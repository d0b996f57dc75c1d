"""RR-Independent (Algorithm 2), truncated castell (Algorithm 4) and RR-Clusters
(section II-B3): joints built from the castell estimates of blocks of attributes
(singletons, (w-1)-way margins, clusters), with the variance of a product of blocks."""
from __future__ import annotations

import functools
import itertools
from typing import Callable, Sequence

import numpy as np

from privspec.backends.core.kron import kron_apply, kron_inverses
from privspec.backends.core.projections import project
from privspec.backends.rr.fit import (JointFit, check_cells, expand_axes, frequencies, kron_matrix, linear_covariance,
                                      se_kind, tensor_margin)
from privspec.backends.rr.metrics import cramers_v

def _block_product(lam: np.ndarray, inv: Sequence[np.ndarray], blocks: Sequence[Sequence[int]], n: int,
                   variance: bool, se: str) -> tuple[np.ndarray, np.ndarray | None, Callable[[], np.ndarray]]:
    """``Pi_hat = prod_g B_g``, ``B_g`` the castell estimate of the margin over block g (the
    blocks partition the axes; singletons: RR-Independent), and its per-cell variance.

    population (delta method, around ``prod_g B_g`` at the true margins): one respondent
    contributes ``u = sum_g c_g A_g[x_g, y_g]`` (``c_g = prod_{h != g} B_h``), so ``n Var =
    sum_{g,h} c_g c_h S_gh - (G Pi_hat)^2`` with ``S_gg = ((x)_{j in g} A_j o A_j)
    lambda_g`` and, for ``g != h``, ``S_gh = ((x)_{j in g u h} A_j) lambda_{g u h}``.

    conditional (the respondents' values fixed): the blocks' reports are then independent
    (each attribute is randomized on its own) and each ``B_g`` is unbiased for the
    respondents' own g-margin ``m_g`` with variance ``v_g = ((A o A) lambda_g - m_g)/n``;
    so ``Var = prod_g (v_g + m_g^2) - prod_g m_g^2`` exactly, estimated without bias by
    ``prod_g B_g^2 - prod_g (B_g^2 - v_g)`` (``E B_g^2 = v_g + m_g^2``).

    The third value computes the full covariance of the cells when asked
    (:func:`_block_covariance`): the same formulas between two cells.
    """
    w = lam.ndim
    blocks = [sorted(g) for g in blocks]
    parts = [expand_axes(kron_apply([inv[j] for j in g], tensor_margin(lam, g)), g, w) for g in blocks]
    table = functools.reduce(np.multiply, parts, np.ones(lam.shape))
    cov = functools.partial(_block_covariance, lam, inv, blocks, n, se)
    if not variance:
        return table, None, cov
    seconds = [expand_axes(kron_apply([inv[j] * inv[j] for j in g], tensor_margin(lam, g)), g, w) for g in blocks]
    if se == "conditional":
        v = [(s - b) / n for s, b in zip(seconds, parts)]
        upper = functools.reduce(np.multiply, [b * b for b in parts], np.ones(lam.shape))
        lower = functools.reduce(np.multiply, [b * b - vg for b, vg in zip(parts, v)], np.ones(lam.shape))
        return table, upper - lower, cov
    G = len(blocks)
    c = [functools.reduce(np.multiply, [parts[h] for h in range(G) if h != g], np.ones(lam.shape))
         for g in range(G)]
    second = np.zeros(lam.shape)
    for g in range(G):
        second = second + c[g] ** 2 * seconds[g]
        for h in range(g + 1, G):
            both = sorted(blocks[g] + blocks[h])
            S = expand_axes(kron_apply([inv[j] for j in both], tensor_margin(lam, both)), both, w)
            second = second + 2 * c[g] * c[h] * S
    return table, (second - (G * table) ** 2) / n, cov


def _block_covariance(lam: np.ndarray, inv: Sequence[np.ndarray], blocks: Sequence[Sequence[int]], n: int,
                      se: str) -> np.ndarray:
    """The covariance between every two cells of ``prod_g B_g`` (:func:`_block_product`, whose
    variances are its diagonal).

    population: the delta method, ``U (diag(lambda) - lambda lambda^T) U^T / n`` with the
    Jacobian ``U[x, y] = sum_g c_g(x) A_g[x_g, y_g]``.  conditional: the blocks' estimates
    are independent given the respondents, each unbiased with covariance ``S_g = (A_g
    diag(lambda_g) A_g^T - diag(B_g))/n``, so ``Cov(x, x') = prod_g E[B_g(x_g) B_g(x'_g)] -
    prod_g m_g(x_g) m_g(x'_g)``, estimated without bias by ``prod_g B_g B_g' - prod_g (B_g B_g'
    - S_g)`` (as the variances are): where the covariance is nearly singular the estimate
    may have slightly negative eigenvalues.
    """
    cells = lam.size
    check_cells(cells)
    if se == "population":
        return linear_covariance(block_jacobian(lam, inv, blocks), lam, n, "population")
    index, A, B = _block_parts(lam, inv, blocks)
    upper, lower = np.ones((cells, cells)), np.ones((cells, cells))
    for g, ix, Ag, Bg in zip(blocks, index, A, B):
        lam_g = tensor_margin(lam, sorted(g)).reshape(-1)
        S = ((Ag * lam_g) @ Ag.T - np.diag(Bg)) / n
        P = np.outer(Bg, Bg)
        upper *= P[np.ix_(ix, ix)]
        lower *= (P - S)[np.ix_(ix, ix)]
    return upper - lower


def _block_parts(lam: np.ndarray, inv: Sequence[np.ndarray], blocks: Sequence[Sequence[int]]
                 ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Per block (axes ascending): each cell's index in the block's margin, the block's
    inverse ``(x)_{j in g} A_j`` formed, and its castell estimate ``B_g`` of the margin."""
    shape, cells = lam.shape, lam.size
    coords = np.indices(shape).reshape(lam.ndim, cells)
    index, A, B = [], [], []
    for g in (sorted(b) for b in blocks):
        index.append(np.ravel_multi_index(tuple(coords[j] for j in g), tuple(shape[j] for j in g)))
        A.append(kron_matrix([inv[j] for j in g]))
        B.append(A[-1] @ tensor_margin(lam, g).reshape(-1))
    return index, A, B


def block_jacobian(lam: np.ndarray, inv: Sequence[np.ndarray], blocks: Sequence[Sequence[int]]) -> np.ndarray:
    """The Jacobian ``U[x, y] = d Pi_hat(x) / d lambda(y) = sum_g c_g(x) A_g[x_g, y_g]`` (cells x
    reports, C order) of the product of the blocks' castell estimates at ``lam`` (the
    tensor of report frequencies), ``c_g`` the product of the other blocks' estimates:
    the delta method's (:func:`_block_covariance`) and the survey linearization's
    (:mod:`privspec.backends.rr.weighted`).

    Examples
    --------
    One block of all the axes is castell itself, linear: the Jacobian is ``(x) A_k``.

    >>> A = np.linalg.inv(np.array([[3, 1], [1, 3]]) / 4)
    >>> lam = np.array([[0.3, 0.1], [0.3, 0.3]])
    >>> bool(np.allclose(block_jacobian(lam, [A, A], [[0, 1]]), np.kron(A, A)))
    True
    """
    cells = lam.size
    index, A, B = _block_parts(lam, inv, blocks)
    U = np.zeros((cells, cells))
    for k, (ix, Ag) in enumerate(zip(index, A)):
        c = functools.reduce(np.multiply, [B[h][index[h]] for h in range(len(A)) if h != k], np.ones(cells))
        U += c[:, None] * Ag[np.ix_(ix, ix)]
    return U


def independent(counts: np.ndarray, K: Sequence[np.ndarray], *, variance: bool = True,
                se: str = "population") -> JointFit:
    """RR-Independent (Algorithm 2, Eq. 2): ``Pi_hat(a_1..a_w) = pi_1(a_1) ... pi_w(a_w)``.

    Its variance is around its own limit, not the joint: it excludes the bias of assuming
    the attributes independent (``se_target`` says so).  ``se = population``: the delta
    method around the product of the true marginals; with ``A_k = K_k^-1``, ``c_k(a) =
    prod_{j != k} pi_j(a_j)`` and the pairwise report margins ``Lambda_kl``, ``n Var =
    sum_{k,l} c_k c_l S_kl - (w Pi_hat)^2`` where ``S_kl = A_k Lambda_kl A_l^T`` (k != l)
    and ``S_kk = diag(A_k o A_k lambda_k)``.  ``se = conditional``: around the product of
    the respondents' own marginals ``m_k``; given the respondents, the marginal
    estimates are independent and unbiased, so the variance is exact:
    ``prod_k (v_k + m_k^2) - prod_k m_k^2`` with ``v_k = (A_k o A_k lambda_k - m_k)/n``
    (estimated without bias, :func:`_block_product`).

    Examples
    --------
    >>> P = np.array([[3, 1], [1, 3]]) / 4
    >>> independent(np.array([[3, 1], [3, 3]]), [P.T, P.T]).table.round(2).tolist()
    [[0.21, 0.09], [0.49, 0.21]]
    """
    se = se_kind(se)
    lam, n = frequencies(counts)
    table, var, cov = _block_product(lam, kron_inverses(K), [[k] for k in range(lam.ndim)], n, variance, se)
    return JointFit(table, "independent", n, var, se_kind=se if variance else None, cov=cov if variance else None,
                    se_target="product of marginals",
                    note="RR-Independent (Algorithm 2): product of the marginal estimates; assumes the "
                         "attributes independent, se excludes that bias")


def truncated(counts: np.ndarray, K: Sequence[np.ndarray]) -> JointFit:
    """Algorithm 4: the castell estimate with negative cells set to 0, then each cell cut
    down to the castell estimates of the (w-1)-way margins containing it (Eq. 25).

    Eq. (25) bounds ``Pr(S)`` by the subsets ``S'`` with ``|S'| = |S| - 1`` (the paper's
    ``|S| + 1`` is a typo: a subset has fewer attributes) and below by 0; where a (w-1)-way
    estimate is negative, line 7 of Algorithm 4 would make the cell negative again, so
    the margins are used with their negative cells at 0, as Eq. (25) says.  The result
    need not sum to 1 (Appendix B: 0.85): add a projection for a distribution.  It has
    no standard error (a minimum of estimates is not smooth where it binds).

    Examples
    --------
    >>> P = np.array([[3, 1], [1, 3]]) / 4
    >>> truncated(np.array([[3, 1], [3, 3]]), [P.T, P.T]).table.round(2).tolist()
    [[0.3, 0.0], [0.25, 0.3]]
    """
    lam, n = frequencies(counts)
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


def clusters(counts: np.ndarray, K: Sequence[np.ndarray], names: Sequence[str], threshold: float = 0.2, *,
             variance: bool = True, se: str = "population") -> JointFit:
    """RR-Clusters (section II-B3, after Domingo-Ferrer and Soria-Comas): attributes whose
    estimated Cramer's V is at least ``threshold`` are linked; each connected cluster's
    joint is estimated by castell inversion (RR-Joint within the cluster: the inverse of
    the cluster's aggregated matrix), clusters are taken as independent.

    Cramer's V is computed from each pair's castell estimate projected onto the simplex
    (the reports' own V is attenuated by the randomization: Appendix B, 0.25 against
    0.66).  The variance is that of the product of the clusters' castell estimates for
    the clusters found (:func:`_block_product`; RR-Independent's with blocks): it covers
    the joint where the clusters are independent of one another, and like
    RR-Independent's it excludes the bias where they are not.

    Examples
    --------
    >>> P = np.array([[3, 1], [1, 3]]) / 4
    >>> fit = clusters(np.array([[3, 1], [3, 3]]), [P.T, P.T], ["A", "B"], 0.5)
    >>> fit.info["clusters"], fit.table.round(2).tolist()
    ([['A', 'B']], [[0.45, -0.15], [0.25, 0.45]])
    """
    se = se_kind(se)
    lam, n = frequencies(counts)
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
    table, var, cov = _block_product(lam, kron_inverses(K), parts, n, variance, se)
    info = {"clusters": [[names[j] for j in g] for g in parts], "cluster_axes": parts, "threshold": threshold,
            "cramers_v": {f"{names[k]},{names[l]}": float(V[k, l]) for k, l in itertools.combinations(range(w), 2)}}
    return JointFit(table, "clusters", n, var, info=info, se_kind=se if variance else None,
                    cov=cov if variance else None,
                    se_target="joint" if len(parts) == 1 else "product of the clusters' joints",
                    note="RR-Clusters: castell within clusters linked by Cramer's V >= threshold, independence "
                         "across clusters; se excludes the bias where the clusters are dependent")
