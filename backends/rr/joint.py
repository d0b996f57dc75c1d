"""Joint distributions from randomized-response reports (the castell paper).

Kikuchi, Domingo-Ferrer and Soria-Comas, "Castell: scalable joint probability
estimation of multi-dimensional data randomized with local differential privacy".
Respondents randomize each attribute independently (RR-Independent randomization:
``Y_k = RR_{P_k}(X_k)``); the reports of a subset S of w attributes form a
``d_1 x ... x d_w`` table of counts.  With ``K_k = P_k^T`` (``P[u][v] = Pr(Y = v | X =
u)``) the report frequencies are ``lambda = (K_1 (x) ... (x) K_w) Pi``.  From the table:

* :func:`castell` -- RR-Ind-Joint, Algorithm 3: ``Pi_hat = (K_1^-1 (x) ... (x) K_w^-1)
  lambda_hat`` mode-wise on the tensor (:mod:`privspec.backends.core.kron`), with the
  per-cell variance from the Kronecker (Warner) covariance;
* :func:`independent` -- RR-Independent, Algorithm 2 (Eq. 2): the outer product of the
  marginal Warner estimates, with a delta-method variance;
* :func:`truncated` -- Algorithm 4 with Eq. (25);
* :func:`clusters` -- RR-Clusters (section II-B3): castell within clusters of attributes
  linked by Cramer's V, independence across clusters;
* :func:`hybrid` -- section III-D: castell or RR-Independent, chosen by the estimated
  mean squared errors (the default) or by the paper's bound rule (Theorems 5-6,
  Appendix C: :func:`bound_rule`);
* :func:`rr_joint` -- RR-Joint (Eq. 1): one RR on the combined domain, inverted there.

Every estimator with an asymptotic variance gives it in one of two kinds (``se``):
``population`` -- sampling plus privacy noise, the error against the population the
respondents were drawn from -- or ``conditional`` -- privacy noise alone, given the
respondents' true values, the error against the table of the respondents themselves
(multi-freq-ldpy's ``VAR_Pure`` for GRR).  For an estimator that is asymptotically
linear in the report frequencies, ``A lambda_hat`` with ``A K = I`` (castell, RR-Joint,
the MLE's influence function), the reports' conditional covariance ``(diag(K pi) - K
diag(pi) K^T)/n`` gives ``conditional = population - (diag(pi) - pi pi^T)/n``.

Error metrics (section III-G): :func:`mae`, :func:`avd`, :func:`mse`.  Data reach these
functions only as count tables (sufficient statistics).
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np
import scipy.stats

from privspec.limits import COV_CELL_LIMIT
from privspec.backends.core.estimators import clip_renormalize, project_simplex
from privspec.backends.core.kron import kron_apply, kron_cov_frobenius2, kron_inverses

__all__ = ["JointFit", "BoundRule", "castell", "independent", "truncated", "clusters", "hybrid", "rr_joint",
           "project", "bound_rule", "mse_comparison", "score_interval", "cramers_v", "mae", "avd", "mse",
           "PROJECTIONS", "SE_KINDS", "SWITCHES", "estimate_joint"]

#: simplex projections an estimate may be given (``by castell(project = euclidean)``)
PROJECTIONS = ("none", "clip", "euclidean")
#: the kinds of standard error (``by castell(se = conditional)``), the default first
SE_KINDS = ("population", "conditional")
#: the chance that ``hybrid(switch = variance)`` picks castell by its noise alone where
#: RR-Independent is just as good (:func:`mse_comparison`'s ``margin``)
MARGIN_LEVEL = 0.01
#: how ``hybrid`` chooses (``by hybrid(switch = thresholds)``), the default first
SWITCHES = ("variance", "thresholds")


@dataclass(frozen=True)
class JointFit:
    """A w-way joint estimate (a tensor in the estimand's axis order) and how it was made.

    ``var`` is the per-cell variance of the estimate (already divided by n) where an
    asymptotic variance exists, else None; ``se_kind`` says which (``population`` or
    ``conditional``, see the module docstring) and ``se_target`` what an interval from
    it covers (``joint``: the table itself; ``product of marginals``: RR-Independent's
    own limit).  ``ci`` is the 95% interval per cell (lower, upper) where it is not the
    Wald interval ``table +- 1.96 se`` (clipped to [0, 1]), and ``ci_method`` names it
    (:func:`score_interval`); ``intervals`` gives it at any level.  ``cov`` computes the
    full covariance of the cells (C order, divided by n, of the kind ``se_kind``) when
    asked: the Python API's ``cov_params``.
    """

    table: np.ndarray
    method: str
    n: int
    var: np.ndarray | None = None
    projection: str = "none"
    negative_cells: int = 0
    note: str = ""
    info: dict = field(default_factory=dict)
    se_kind: str | None = None
    se_target: str | None = None
    ci: tuple[np.ndarray, np.ndarray] | None = None
    ci_method: str | None = None
    intervals: Callable[[float], tuple[np.ndarray, np.ndarray]] | None = field(default=None, compare=False,
                                                                                repr=False)
    cov: Callable[[], np.ndarray] | None = field(default=None, compare=False, repr=False)


def _check_cells(cells: int) -> None:
    if cells > COV_CELL_LIMIT:
        raise ValueError(f"the covariance of {cells:,} cells would be a {cells:,} x {cells:,} matrix; it is formed "
                         f"up to {COV_CELL_LIMIT:,} cells (the standard errors are there: bse)")


def linear_covariance(U: np.ndarray, lam: np.ndarray, n: int, se: str, table: np.ndarray | None = None
                      ) -> np.ndarray:
    """The covariance of an estimate asymptotically linear in the report frequencies, with
    Jacobian ``U`` (cells x reports) at ``lambda``: ``U (diag(lambda) - lambda lambda^T) U^T / n``
    (population); conditional: that less ``(diag(Pi) - Pi Pi^T)/n`` (for ``U K = I``: the
    module docstring), ``Pi = table`` (default ``U lambda``).

    Examples
    --------
    >>> A = np.linalg.inv(np.array([[3, 1], [1, 3]]) / 4)
    >>> lam = np.array([0.3, 0.7])
    >>> V = linear_covariance(A, lam, 100, "population")
    >>> bool(np.allclose(np.diag(V), ((A * A) @ lam - (A @ lam) ** 2) / 100)), bool(np.allclose(V.sum(axis=1), 0))
    (True, True)
    """
    lam = np.asarray(lam, dtype=float).reshape(-1)
    t = U @ lam
    V = ((U * lam) @ U.T - np.outer(t, t)) / n
    if se == "conditional":
        pi = t if table is None else np.asarray(table, dtype=float).reshape(-1)
        V = V - (np.diag(pi) - np.outer(pi, pi)) / n
    return V


def _kron_matrix(inv: Sequence[np.ndarray]) -> np.ndarray:
    return functools.reduce(np.kron, [np.asarray(A, dtype=float) for A in inv])


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


def _se_kind(se: str) -> str:
    if se not in SE_KINDS:
        raise ValueError(f"unknown se {se!r}: {' | '.join(SE_KINDS)}")
    return se


#: the interval of castell-type (linear, unbiased) estimates (:func:`score_interval`)
SCORE_CI = "score (Wilson-type, continuity-corrected, within [0, 1])"
#: beyond this many cells castell gives Wald's interval: the score interval takes about
#: ten temporary tables, and with millions of cells no cell is carried by a few reports
#: unless n is larger still
SCORE_CELL_LIMIT = 1 << 22


def score_interval(est: np.ndarray, second: np.ndarray, g: np.ndarray, step: np.ndarray, n: int,
                   se: str = "population", level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The 95% score interval of each cell of a linear estimate ``Pi_hat = A lambda_hat``
    (``A K = I``): the cell values t with ``|Pi_hat - t| <= z sqrt(V(t)/n)``, V evaluated
    where the cell is t, widened by half a lattice step and cut to [0, 1].

    The Wald interval ``Pi_hat +- z se`` under-covers cells near 0 (or 1) where few
    reports carry them (large eps, small n: 78% at eps = 8 per attribute, n = 1000, a cell
    of 0.0014; see docs/randomized-response.md): its se is estimated where the cell is
    ``Pi_hat``, too small when ``Pi_hat`` happens to be small.  As Wilson's interval does
    for a proportion, the score interval evaluates the variance at each candidate t.  To
    move the cell to t the truth's other cells give up (or take) mass in proportion,
    ``Pi(t) = Pi_hat + (t - Pi_hat_x)(e_x - Pi_hat_-x/(1 - Pi_hat_x))``, so that with
    ``s = (A o A) lambda_hat`` (``n`` times the second moment) and ``g_x = sum_y A[x, y]^2
    K[y, x]``, ``n V(t) = s + b (t - Pi_hat_x) - t^2`` (population) or ``s + b (t -
    Pi_hat_x) - t`` (conditional), ``b = (g - s)/(1 - Pi_hat_x)``: a quadratic inequality
    in t, solved in closed form.  For GRR on two categories it is Wilson's interval on
    the report scale.  The reports are counts, so the estimate moves on a lattice (a
    report changing cells moves cell x by at most ``2 max_y |A[x, y]| / n``); where the
    privacy noise is a handful of such moves (conditional, large eps) a normal interval
    misses whenever one happens, so each end is moved out by ``step = max_y |A[x, y]| /
    (2 n)`` (a continuity correction, negligible for large n).

    Parameters
    ----------
    est, second, g, step : arrays
        ``Pi_hat``, ``(A o A) lambda_hat``, ``g`` and the half lattice step, per cell.
    n : int
        The number of reports.
    se : {"population", "conditional"}
        Which variance.
    level : float
        The coverage aimed at.

    Returns
    -------
    (lower, upper) : arrays

    Examples
    --------
    GRR on two categories (p = 3/4): Wilson's interval for the report frequency 0.3,
    mapped to the cell, then the continuity correction:

    >>> A = np.array([[1.5, -0.5], [-0.5, 1.5]]); K = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> lam = np.array([0.3, 0.7]); n = 100
    >>> lo, hi = score_interval(A @ lam, (A * A) @ lam, np.diag((A * A) @ K), np.full(2, 1.5 / 200), n)
    >>> z = 1.959963984540054; c = z * z / n
    >>> w = (0.3 + c / 2 - z * np.sqrt(0.3 * 0.7 / n + c / (4 * n))) / (1 + c)    # Wilson, lower end
    >>> bool(np.isclose(lo[0], max((w - 0.25) / 0.5 - 1.5 / 200, 0)))
    True
    """
    z = float(scipy.stats.norm.ppf(0.5 + level / 2))
    c = z * z / n
    b = (g - second) / np.maximum(1 - est, 1.0 / n)
    if se == "population":
        a2, a1 = 1 + c, -(2 * est + c * b)
    else:
        a2, a1 = 1.0, -(2 * est + c * (b - 1))
    a0 = est * est - c * (second - b * est)
    root = np.sqrt(np.maximum(a1 * a1 - 4 * a2 * a0, 0.0))
    lower = np.clip((-a1 - root) / (2 * a2) - step, 0.0, 1.0)
    upper = np.clip((-a1 + root) / (2 * a2) + step, 0.0, 1.0)
    return lower, upper


def castell(counts: np.ndarray, K: Sequence[np.ndarray], *, variance: bool = True,
            se: str = "population") -> JointFit:
    """RR-Ind-Joint by castell inversion (Algorithm 3).

    ``counts`` is the ``d_1 x ... x d_w`` table of report counts, ``K[k] = P_k^T`` the
    factors' channels.  ``Pi_hat = (K_1^-1 (x) ... (x) K_w^-1) lambda_hat`` is computed
    one mode at a time (O(prod d_i) memory).  With ``A = (x) K_k^-1`` its covariance is
    ``A (diag(lambda) - lambda lambda^T) A^T / n`` (``se = population``: Warner's, for
    the Kronecker matrix) or ``(A diag(lambda) A^T - diag(Pi)) / n`` (``se =
    conditional``: the respondents' values fixed); the diagonal of ``A diag(lambda)
    A^T`` is ``((x) A_k o A_k) lambda``, evaluated at ``lambda_hat`` (and ``Pi`` at
    ``Pi_hat``) without forming a matrix.

    Parameters
    ----------
    counts : array
        The w-way table of report counts.
    K : sequence of arrays
        ``K_k = P_k^T``, one per axis of ``counts``.
    variance : bool
        Whether to compute the per-cell variance.
    se : {"population", "conditional"}
        Which variance.

    Returns
    -------
    JointFit

    Examples
    --------
    >>> P = np.array([[3, 1], [1, 3]]) / 4                    # Appendix B, eps = log 3
    >>> fit = castell(np.array([[3, 1], [3, 3]]), [P.T, P.T])
    >>> fit.table.round(2).tolist()
    [[0.45, -0.15], [0.25, 0.45]]
    >>> cond = castell(np.array([[3, 1], [3, 3]]), [P.T, P.T], se="conditional")
    >>> np.allclose(cond.var, fit.var - (fit.table - fit.table ** 2) / 10)
    True
    """
    se = _se_kind(se)
    lam, n = _frequencies(counts)
    inv = kron_inverses(K)
    table = kron_apply(inv, lam)
    if not variance:
        return JointFit(table, "castell", n, None, se_target="joint",
                        note="castell inversion (Algorithm 3): mode-wise, the Kronecker matrix is never formed")
    second = kron_apply([A * A for A in inv], lam)
    var = (second - (table * table if se == "population" else table)) / n

    def cov() -> np.ndarray:  # A (diag(lambda) - lambda lambda^T) A^T / n, A = (x) K_k^-1
        _check_cells(table.size)
        return linear_covariance(_kron_matrix(inv), lam, n, se)

    if table.size > SCORE_CELL_LIMIT:
        return JointFit(table, "castell", n, var, se_kind=se, se_target="joint", cov=cov,
                        note="castell inversion (Algorithm 3): mode-wise, the Kronecker matrix is never formed; "
                             f"Wald intervals (more than {SCORE_CELL_LIMIT:,} cells)")
    # g_x = sum_y A[x, y]^2 K[y, x] and max_y |A[x, y]| factor over the attributes
    g = _outer([np.diag((A * A) @ np.asarray(Kk, float)) for A, Kk in zip(inv, K)]).reshape(table.shape)
    step = _outer([np.abs(A).max(axis=1) for A in inv]).reshape(table.shape) / (2 * n)
    intervals = functools.partial(_score_at, table, second, g, step, n, se)
    return JointFit(table, "castell", n, var, se_kind=se, se_target="joint", ci=intervals(0.95), ci_method=SCORE_CI,
                    intervals=intervals, cov=cov,
                    note="castell inversion (Algorithm 3): mode-wise, the Kronecker matrix is never formed")


def _score_at(est: np.ndarray, second: np.ndarray, g: np.ndarray, step: np.ndarray, n: int, se: str,
              level: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`score_interval` with the level last (a partial of the rest: the intervals at any level)."""
    return score_interval(est, second, g, step, n, se, level)


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


def _margin(lam: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """The margin of ``lam`` over ``axes`` (ascending), in that order."""
    others = tuple(j for j in range(lam.ndim) if j not in axes)
    return lam.sum(axis=others) if others else lam


def _expand(t: np.ndarray, axes: Sequence[int], ndim: int) -> np.ndarray:
    """A tensor over ``axes`` (ascending) viewed with singleton axes elsewhere (to broadcast)."""
    shape = [1] * ndim
    for j, size in zip(axes, np.shape(t)):
        shape[j] = size
    return np.asarray(t).reshape(shape)


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
    parts = [_expand(kron_apply([inv[j] for j in g], _margin(lam, g)), g, w) for g in blocks]
    table = functools.reduce(np.multiply, parts, np.ones(lam.shape))
    cov = functools.partial(_block_covariance, lam, inv, blocks, n, se)
    if not variance:
        return table, None, cov
    seconds = [_expand(kron_apply([inv[j] * inv[j] for j in g], _margin(lam, g)), g, w) for g in blocks]
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
            S = _expand(kron_apply([inv[j] for j in both], _margin(lam, both)), both, w)
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
    shape, cells = lam.shape, lam.size
    _check_cells(cells)
    coords = np.indices(shape).reshape(lam.ndim, cells)
    index, A, B = [], [], []
    for g in (sorted(b) for b in blocks):
        index.append(np.ravel_multi_index(tuple(coords[j] for j in g), tuple(shape[j] for j in g)))
        A.append(_kron_matrix([inv[j] for j in g]))
        B.append(A[-1] @ _margin(lam, g).reshape(-1))
    if se == "population":
        U = np.zeros((cells, cells))
        for k, (ix, Ag) in enumerate(zip(index, A)):
            c = functools.reduce(np.multiply, [B[h][index[h]] for h in range(len(A)) if h != k], np.ones(cells))
            U += c[:, None] * Ag[np.ix_(ix, ix)]
        return linear_covariance(U, lam, n, "population")
    upper, lower = np.ones((cells, cells)), np.ones((cells, cells))
    for g, ix, Ag, Bg in zip(blocks, index, A, B):
        lam_g = _margin(lam, sorted(g)).reshape(-1)
        S = ((Ag * lam_g) @ Ag.T - np.diag(Bg)) / n
        P = np.outer(Bg, Bg)
        upper *= P[np.ix_(ix, ix)]
        lower *= (P - S)[np.ix_(ix, ix)]
    return upper - lower


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
    se = _se_kind(se)
    lam, n = _frequencies(counts)
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
    se = _se_kind(se)
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
    table, var, cov = _block_product(lam, kron_inverses(K), parts, n, variance, se)
    info = {"clusters": [[names[j] for j in g] for g in parts], "cluster_axes": parts, "threshold": threshold,
            "cramers_v": {f"{names[k]},{names[l]}": float(V[k, l]) for k, l in itertools.combinations(range(w), 2)}}
    return JointFit(table, "clusters", n, var, info=info, se_kind=se if variance else None,
                    cov=cov if variance else None,
                    se_target="joint" if len(parts) == 1 else "product of the clusters' joints",
                    note="RR-Clusters: castell within clusters linked by Cramer's V >= threshold, independence "
                         "across clusters; se excludes the bias where the clusters are dependent")


# ---- the paper's bound rule (Theorems 5 and 6, Appendix C) -------------------------------------------
def keep_probabilities(K: Sequence[np.ndarray]) -> np.ndarray:
    """``p_k = min_u P_k[u][u]``: the smallest probability of keeping the truth."""
    return np.array([float(np.min(np.diag(np.asarray(Kk, float)))) for Kk in K])


@dataclass(frozen=True)
class BoundRule:
    """The paper's hybrid rule for one product of RR factors (:func:`bound_rule`)."""

    castell_bound: Any
    independent_bound: Any
    n_star: Any
    castell_preferred: bool | None


def bound_rule(dims: Sequence[int], keep: Sequence[Any], n: Any) -> BoundRule:
    """Is castell (RR-Ind-Joint) preferred to RR-Independent by the paper's error bounds?
    One rule for any product of RR factors, with domain sizes ``d_k`` and keep
    probabilities ``p_k`` (GRR: ``e^eps_k / (e^eps_k + d_k - 1)``; a general matrix: its
    smallest diagonal entry) of their own.

    The generalization of Theorems 5-6 and Appendix C, from their proofs:

    * castell (Theorem 6, Lemma 3's proof): each entry of ``P^-1 = (x) P_k^-1`` is taken
      to be at most ``1/(p_1 ... p_w)`` and each of the ``d_1 ... d_w`` report
      frequencies off by at most ``1/n``, so the error is below ``prod_k (d_k/p_k) / n``
      -- the proof's own first expression, before it replaces every ``d_k`` by ``d =
      max d_k`` and every ``p_k`` by ``p = min p_k``;
    * RR-Independent (Theorem 5's proof): with uniform marginals its estimate of every
      cell is ``1/D``, ``D = d_1 ... d_w``, while the cell lies in ``[0, min_k 1/d_k] =
      [0, 1/d*]``, ``d* = max d_k`` (Lemma 1), so the error is below ``max(1/D, 1/d* -
      1/D)`` -- the proof writes ``1/D <= d*^-w``, which runs the wrong way for unequal
      domains (``1/D >= d*^-w``);
    * castell is preferred where its bound is the smaller: ``n > n* = prod_k (d_k/p_k) /
      max(1/D, 1/d* - 1/D)`` (Appendix C).

    With one domain size d and one budget ``eps/w`` per attribute (``p_k = p =
    e^(eps/w)/(e^(eps/w) + d - 1)``) this is exactly Eqs. (26), (27) and Appendix C's
    ``n* = (1 + (d-1)/e^(eps/w))^w d^w / max(d^-w, 1/d - d^-w)``.  The paper's convention
    for unequal domains (``d = max d_k``, ``p = min p_k`` in both bounds) inflates both
    bounds and is not this rule.

    The bounds are of a rounding model (report frequencies off by at most 1/n; the
    sampling error is of order n^-1/2) and assume uniform marginals: they ignore how
    dependent the attributes are, which is what RR-Independent's error depends on.  See
    :func:`hybrid` for the data-driven rule.

    Parameters
    ----------
    dims : sequence of int
        The factors' domain sizes.
    keep : sequence
        The factors' keep probabilities: floats, or sympy expressions (then the bounds
        are exact and ``castell_preferred`` is None unless everything is a number).
    n : number or sympy expression
        The number of respondents.

    Returns
    -------
    BoundRule
        ``castell_bound``, ``independent_bound``, ``n_star`` and ``castell_preferred``
        (``n > n_star``).

    Examples
    --------
    Titanic (Class 4, Sex, Age, Survived 2 each), eps = 1 per attribute, n = 2201:

    >>> e = np.e
    >>> r = bound_rule([4, 2, 2, 2], [e / (e + 3), e / (e + 1), e / (e + 1), e / (e + 1)], 2201)
    >>> round(r.n_star), r.castell_preferred
    (788, True)

    One domain size: Appendix C's n* (d = 16, w = 2, eps = 1 per attribute):

    >>> p = e / (e + 15)
    >>> bool(np.isclose(bound_rule([16, 16], [p, p], 1).n_star, (16 / p) ** 2 / (1 / 16 - 16 ** -2)))
    True
    """
    dims = [int(d) for d in dims]
    if len(dims) != len(keep) or not dims:
        raise ValueError("one keep probability per factor")
    D, top = math.prod(dims), max(dims)
    ind = max(Fraction(1, D), Fraction(1, top) - Fraction(1, D))
    exact = any(hasattr(x, "free_symbols") for x in [*keep, n])
    if exact:
        import sympy

        ind_bound: Any = sympy.Rational(ind.numerator, ind.denominator)
        ratio: Any = sympy.Mul(*[sympy.Integer(d) / p for d, p in zip(dims, keep)])
    else:
        ind_bound = float(ind)
        ratio = math.prod(d / float(p) for d, p in zip(dims, keep))
    n_star = ratio / ind_bound
    preferred: bool | None = None
    try:
        preferred = bool(float(n) > float(n_star))
    except TypeError:
        pass
    return BoundRule(ratio / n, ind_bound, n_star, preferred)


def mse_comparison(counts: np.ndarray, K: Sequence[np.ndarray], c: JointFit | None = None,
                   ind: JointFit | None = None) -> dict[str, float]:
    """The estimated mean squared errors (summed over the cells, population scale) of
    castell and RR-Independent on one table of report counts: what ``hybrid(switch =
    variance)`` decides by.

    * ``castell_mse``: castell is unbiased, its MSE is the sum of its cell variances.
    * ``independent_bias2``: RR-Independent's squared bias ``sum (E Pi_ind - Pi)^2``,
      estimated by ``sum (Pi_ind - Pi_castell)^2 - sum Var(Pi_ind - Pi_castell)``
      (castell is unbiased, so the first sum has expectation bias^2 + the variance of
      the difference, to first order).  ``Var(ind - castell) = Var(ind) + Var(castell)
      - 2 Cov``; one respondent contributes ``u_ind = sum_k c_k A_k[x_k, y_k]`` and
      ``u_castell = prod_k A_k[x_k, y_k]``, so ``n Cov = sum_k c_k T_k - w Pi_ind
      Pi_castell`` with ``T_k`` the castell inversion of ``lambda`` with ``A_k o A_k`` in
      place of ``A_k``: w mode-wise passes, no matrix.
    * ``bias2_max``: the largest squared bias RR-Independent can have with these
      marginals (Lemma 1: ``Pi(x) <= min_k pi_k(x_k)``), ``sum Pi^2 + sum P^2 <= min_k
      max_a pi_k(a) + prod_k |pi_k|^2`` (``P = prod_k pi_k``); the estimate is clipped to
      ``[0, bias2_max]``.
    * ``independent_mse``: its variance plus the clipped squared bias.
    * ``margin``: how far the bias estimate may exceed the truth by chance.  The estimate
      carries castell's noise, ``sum (Pi_castell - Pi)^2``, a weighted sum of chi-squares
      with few effective degrees of freedom where a few directions of ``(x) K_k^-1``
      dominate; where castell is noisy it often exceeds castell's MSE by chance
      (Titanic, eps = 1 per attribute: 10% of the tables) and a wrong choice of castell
      costs without bound, while RR-Independent's error is bounded by ``bias2_max``.  So
      castell must win by the margin: the 99th percentile of that sum less its mean, by
      Satterthwaite's approximation ``a chi2_nu`` with ``a nu = tr S``, ``2 a^2 nu = 2 tr
      S^2`` (``S = Cov(Pi_castell)``; ``tr S^2`` from
      :func:`privspec.backends.core.kron.kron_cov_frobenius2`): ``margin = a (chi2_nu(0.99) -
      nu)``.

    Examples
    --------
    >>> P = np.array([[3, 1], [1, 3]]) / 4
    >>> m = mse_comparison(np.array([[300, 100], [300, 300]]), [P.T, P.T])
    >>> m["castell_mse"] + m["margin"] < m["independent_mse"]
    True
    """
    c = c if c is not None and c.var is not None else castell(counts, K)
    ind = ind if ind is not None and ind.var is not None else independent(counts, K)
    lam, n = _frequencies(counts)
    inv = kron_inverses(K)
    w = lam.ndim
    pis = [kron_apply([inv[k]], _margin(lam, [k])) for k in range(w)]
    full = [_expand(p, [k], w) for k, p in enumerate(pis)]
    cross = np.zeros(lam.shape)
    for k in range(w):
        ck = functools.reduce(np.multiply, [full[j] for j in range(w) if j != k], np.ones(lam.shape))
        Tk = kron_apply([inv[j] * inv[j] if j == k else inv[j] for j in range(w)], lam)
        cross = cross + ck * Tk
    cov = (cross - w * ind.table * c.table) / n
    var_diff = ind.var + c.var - 2 * cov
    bias2 = float(np.sum((ind.table - c.table) ** 2) - np.sum(var_diff))
    margins = [project(p, "clip") for p in pis]      # the marginals as distributions
    bias2_max = float(min(p.max() for p in margins) + math.prod(float(p @ p) for p in margins))
    var_i, mse_c = float(np.sum(ind.var)), float(np.sum(c.var))
    tr2 = max(kron_cov_frobenius2(inv, lam), 0.0) / n ** 2
    margin = 0.0
    if tr2 > 0 and mse_c > 0:
        a, nu = tr2 / mse_c, mse_c ** 2 / tr2
        margin = float(a * (scipy.stats.chi2.ppf(1 - MARGIN_LEVEL, nu) - nu))
    return {"castell_mse": mse_c, "independent_mse": var_i + min(max(bias2, 0.0), bias2_max),
            "independent_variance": var_i, "independent_bias2": bias2, "bias2_max": bias2_max, "margin": margin}


def hybrid(counts: np.ndarray, K: Sequence[np.ndarray], switch: str = "variance", *,
           se: str = "population") -> JointFit:
    """The hybrid scheme (section III-D): castell or RR-Independent, whichever is expected
    to be the more accurate.

    ``switch = variance`` (the default; data-driven, what section V-A suggests in place of
    the loose bounds): castell where its estimated mean squared error, the sum of its
    cell variances, plus a margin for castell's noise in the bias estimate, is below
    RR-Independent's, the sum of its cell variances plus its estimated squared bias
    (:func:`mse_comparison`).  Both are at the population scale whatever ``se`` asks, so
    the choice, and the estimate, do not depend on the kind of standard error.

    ``switch = thresholds`` (the paper's rule): castell where the bound of Theorem 6 is
    below that of Theorem 5, i.e. ``n > n*`` (Appendix C), generalized to factors with
    domain sizes and budgets of their own (:func:`bound_rule`; the ``thresholds(M, n =
    N)`` query uses the same function).  The bounds ignore the data: on the Titanic table
    (eps = 1 per attribute) this rule picks castell, with 2.6 times RR-Independent's
    error (docs/randomized-response.md).

    The standard error is the chosen estimator's, of the kind ``se``.

    Examples
    --------
    Two hundred reports of Appendix B's design whose table shows no dependence: the
    bounds say castell (n = 200 > n* = 28.4), but castell's estimated MSE is 2.9 times
    RR-Independent's (its squared bias is estimated at 0):

    >>> P = np.array([[3, 1], [1, 3]]) / 4
    >>> hybrid(np.array([[60, 40], [55, 45]]), [P.T, P.T], "thresholds").info["chosen"]
    'castell'
    >>> fit = hybrid(np.array([[60, 40], [55, 45]]), [P.T, P.T])
    >>> fit.info["chosen"], round(fit.info["castell_mse"] / fit.info["independent_mse"], 1)
    ('independent', 2.9)
    >>> hybrid(np.array([[300, 100], [300, 300]]), [P.T, P.T]).info["chosen"]     # strong dependence
    'castell'
    """
    se = _se_kind(se)
    c = castell(counts, K)
    ind = independent(counts, K)
    n = c.n
    if switch == "thresholds":
        rule = bound_rule([np.asarray(k).shape[0] for k in K], keep_probabilities(K), n)
        choose = bool(rule.castell_preferred)
        info: dict = {"castell_bound": rule.castell_bound, "independent_bound": rule.independent_bound,
                      "n_star": rule.n_star,
                      "rule": "castell when the bound of Theorem 6, prod_k (d_k/p_k)/n, is below Theorem 5's, "
                              "max(1/D, 1/d* - 1/D): n > n* (Appendix C)"}
    elif switch == "variance":
        info = mse_comparison(counts, K, c, ind)
        choose = info["castell_mse"] + info["margin"] < info["independent_mse"]
        info["rule"] = ("castell when its estimated MSE (the sum of its cell variances) plus the margin (the "
                        "99th percentile of castell's noise in the bias estimate, less its mean) is below "
                        "RR-Independent's (the sum of its cell variances plus its squared bias, estimated from "
                        "castell, within [0, bias2_max])")
    else:
        raise ValueError(f"unknown switch {switch!r}: {' | '.join(SWITCHES)}")
    if se == "population":
        chosen = c if choose else ind
    else:
        chosen = castell(counts, K, se=se) if choose else independent(counts, K, se=se)
    info["chosen"] = "castell" if choose else "independent"
    info["switch"] = switch
    return dataclasses.replace(chosen, method="hybrid", info=info,
                               note=f"hybrid (section III-D): {info['chosen']} chosen by {switch}")


def rr_joint(counts: np.ndarray, K: np.ndarray | None = None, keep: tuple[float, float] | None = None, *,
             se: str = "population") -> JointFit:
    """RR-Joint (Eq. 1): ``Pi_hat = K^-1 lambda_hat`` on the combined domain (``counts`` a
    vector over it), with the covariance diagonal ``K^-1 (diag(lambda) - lambda
    lambda^T) K^-T / n`` (``se = population``) or that minus ``(diag(Pi) -
    Pi Pi^T)/n`` (``se = conditional``).

    For GRR give ``keep = (p, q)`` instead of ``K``: ``K^-1 = (I - q J)/(p - q)`` (since
    ``p + (d - 1) q = 1``), so ``Pi_hat = (lambda_hat - q)/(p - q)`` and the variance is
    ``lambda (1 - lambda)/(p - q)^2 / n``; conditional: ``(q (1 - q)/(p - q)^2 + Pi (1 -
    p - q)/(p - q))/n``, Wang et al.'s (multi-freq-ldpy's ``VAR_Pure``).  O(d) for any
    domain size.

    Examples
    --------
    >>> rr_joint(np.array([3, 1, 3, 3]), keep=(0.75, 1 / 12)).table.round(4).tolist()
    [0.325, 0.025, 0.325, 0.325]
    """
    se = _se_kind(se)
    if keep is None:
        fit = castell(np.asarray(counts, float).reshape(-1), [K], se=se)
        table, var, n, ci, intervals, cov = fit.table, fit.var, fit.n, fit.ci, fit.intervals, fit.cov
    else:
        lam, n = _frequencies(np.asarray(counts, float).reshape(-1))
        p, q = keep
        table = (lam - q) / (p - q)
        var = lam * (1 - lam) / (p - q) ** 2 / n
        if se == "conditional":
            var = var - (table - table * table) / n
        # score_interval's inputs for A = (I - q J)/(p - q), K = P^T
        d = lam.size
        second = ((1 - q) ** 2 * lam + q * q * (1 - lam)) / (p - q) ** 2
        g = np.full(d, ((1 - q) ** 2 * p + (d - 1) * q ** 3) / (p - q) ** 2)
        intervals = functools.partial(_score_at, table, second, g, np.full(d, (1 - q) / (p - q) / (2 * n)), n, se)
        ci = intervals(0.95)

        def cov() -> np.ndarray:  # A = (I - q J)/(p - q) takes J lambda = 1 to 0: (diag - lam lam^T)/(p - q)^2
            _check_cells(d)
            V = (np.diag(lam) - np.outer(lam, lam)) / (p - q) ** 2 / n
            return V - (np.diag(table) - np.outer(table, table)) / n if se == "conditional" else V
    return JointFit(table, "joint", n, var, se_kind=se, se_target="joint", ci=ci, ci_method=SCORE_CI,
                    intervals=intervals, cov=cov,
                    note="RR-Joint (Eq. 1): inversion on the combined domain")


METHODS = ("castell", "mom", "independent", "truncated", "clusters", "hybrid")


def estimate_joint(method: str, counts: np.ndarray, K: Sequence[np.ndarray], names: Sequence[str],
                   options: dict[str, Any] | None = None) -> JointFit:
    """Dispatch on the spec's estimator, then apply the projection option.

    ``mom`` on a product of randomized responses is the castell estimate (the method of
    moments for the Kronecker channel, computed mode-wise).  The options are the spec's:
    ``project``, ``se`` (``population`` by default), ``switch`` (``hybrid``) and ``v``
    (``clusters``).
    """
    options = dict(options or {})
    how = str(options.get("project", "none"))
    se = _se_kind(str(options.get("se", "population")))
    if method in ("castell", "mom"):
        fit = castell(counts, K, se=se)
        if method == "mom":
            fit = dataclasses.replace(fit, method="mom", note="method of moments = castell inversion (the "
                                                                "Kronecker channel, mode-wise)")
    elif method == "independent":
        fit = independent(counts, K, se=se)
    elif method == "truncated":
        fit = truncated(counts, K)
    elif method == "clusters":
        fit = clusters(counts, K, names, float(options.get("v", 0.2)), se=se)
    elif method == "hybrid":
        fit = hybrid(counts, K, str(options.get("switch", SWITCHES[0])), se=se)
    else:
        raise ValueError(f"unknown joint estimator {method!r}")
    return with_projection(fit, how)


def with_projection(fit: JointFit, how: str) -> JointFit:
    """``fit`` projected onto the simplex (``none`` leaves it as it is); the variance is
    that of the unprojected estimate and is dropped when a projection changed it."""
    negative = int(np.sum(fit.table < 0)) if fit.method != "truncated" else fit.negative_cells
    if how == "none":
        return dataclasses.replace(fit, projection="none", negative_cells=negative)
    table = project(fit.table, how)
    changed = not np.allclose(table, fit.table, rtol=0, atol=1e-15)
    kept = not changed and fit.var is not None
    return dataclasses.replace(fit, table=table, var=fit.var if kept else None, projection=how,
                               negative_cells=negative, se_kind=fit.se_kind if kept else None,
                               ci=fit.ci if kept else None, ci_method=fit.ci_method if kept else None,
                               intervals=fit.intervals if kept else None, cov=fit.cov if kept else None)


def cell_count(dims: Sequence[int]) -> int:
    return int(math.prod(dims))
