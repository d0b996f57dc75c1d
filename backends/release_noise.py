"""Noise for released count tables (privacy on a subset of variables, section 5).

Two samplers, both on integer tables laid out as an ``(m, n)`` array: one row per
*total cell* (a category of the exact-total variables, ``v_i`` of section 5.2) and one
column per *protected cell* (``u_{i,j}``, a category of the other table variables):

* :func:`algorithm1` — Algorithm 1: within each row, every pair of cells (j, k)
  exchanges an independent two-sided geometric amount ``b`` (the rows of a matrix of
  ``M(n)``: +1 in column j, -1 in column k), so every row total stays exact and every
  cell stays an unbiased integer (Proposition 5.1).
* :func:`geometric_mechanism` — the geometric mechanism (Ghosh et al. 2009) for a
  table with no exact totals: independent two-sided geometric noise on every cell.

Both draw from the two-sided geometric distribution with ratio ``a = e^(-eps/2)``::

    P(Z = z) = (1 - a)/(1 + a) * a^|z|,      Var(Z) = 2a/(1 - a)^2.

The paper prints the constant as ``(1 - e^(eps/2))/(1 + e^(eps/2))``, which is
negative; the constant that makes the weights ``e^(-eps|z|/2)`` sum to 1 is
``(1 - e^(-eps/2))/(1 + e^(-eps/2))`` (a typo in the sign of the exponent), which is
what is used here.

:func:`cell_variance` and :func:`margin_variance` give the exact (sympy) variance of a
released cell or margin, :func:`nonnegative` the optional post-processing that
removes negative counts while keeping the totals.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import sympy

#: int64 elements in one scratch block of Algorithm 1 (16 MiB): bounds the memory
#: of very large tables without a Python loop per cell
_BLOCK = 1 << 21


# ---- the two-sided geometric distribution ---------------------------------------------
def ratio(epsilon: sympy.Expr) -> sympy.Expr:
    """The ratio ``a = e^(-eps/2)`` of the two-sided geometric noise (Algorithm 1).

    Examples
    --------
    >>> ratio(sympy.Integer(2))
    exp(-1)
    """
    return sympy.exp(-sympy.sympify(epsilon) / 2)


def noise_variance(epsilon: sympy.Expr) -> sympy.Expr:
    """``Var(Z) = 2a/(1 - a)^2`` of one two-sided geometric draw, exactly.

    Z is the difference of two independent geometric counts G with ``P(G = k) = (1 -
    a) a^k``, each of variance ``a/(1 - a)^2``.

    Examples
    --------
    >>> noise_variance(sympy.Integer(2))
    2*exp(-1)/(1 - exp(-1))**2
    >>> round(float(noise_variance(sympy.Integer(2))), 6)
    1.841347
    """
    a = ratio(epsilon)
    return 2 * a / (1 - a) ** 2


def pmf(z: np.ndarray | int, epsilon: float) -> np.ndarray:
    """``P(Z = z) = (1 - a)/(1 + a) a^|z|`` with ``a = e^(-eps/2)`` (the paper's
    Algorithm 1, its sign typo corrected).

    Examples
    --------
    >>> p = pmf(np.arange(-200, 201), 1.0)
    >>> round(float(p.sum()), 12)
    1.0
    """
    a = math.exp(-epsilon / 2)
    return (1 - a) / (1 + a) * a ** np.abs(np.asarray(z, dtype=float))


def sample(rng: np.random.Generator, epsilon: float, size: int | Sequence[int]) -> np.ndarray:
    """Independent two-sided geometric draws (int64) with ``a = e^(-eps/2)``.

    The difference of two independent geometric counts of success probability
    ``1 - a`` has exactly this law (numpy's geometric counts trials, so the +1 of each
    count cancels).  ``1 - a`` is computed as ``-expm1(-eps/2)`` so that tiny epsilons
    keep their precision.

    Examples
    --------
    >>> z = sample(np.random.default_rng(1), 1.0, 5)
    >>> z.dtype, z.shape
    (dtype('int64'), (5,))
    """
    p = -math.expm1(-float(epsilon) / 2)
    if not p > 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}")
    return rng.geometric(p, size).astype(np.int64) - rng.geometric(p, size).astype(np.int64)


# ---- the two mechanisms -----------------------------------------------------------------
def algorithm1(f: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 1 on counts ``f`` of shape ``(m, n)``: row i is total cell ``v_i``,
    column j protected cell ``u_{i,j}``.

    For every row, ``C(n, 2)`` independent two-sided geometric draws ``b`` are added
    as ``b M`` with ``M`` in ``M(n)``: here the row of ``M`` for the pair ``j < k`` has
    +1 in column j and -1 in column k.  Every row sum is unchanged, every cell is an
    integer with mean ``f`` (Proposition 5.1), variance ``(n - 1) 2a/(1 - a)^2`` and
    covariance ``-2a/(1 - a)^2`` with every other cell of its row.

    The paper adds noise only ``if n_i > 2``; with ``n_i = 2`` that would publish both
    cells exactly, which is not private on ``U``, while ``M(2)`` (defined for ``N >= 2``)
    is the single row ``[1, -1]``.  So noise is added whenever ``n >= 2`` (the
    condition is a typo for ``n_i >= 2``); with ``n = 1`` the cell is its exact total.

    Examples
    --------
    >>> f = np.array([[5, 10, 47, 68], [1, 13, 44, 92]])
    >>> g = algorithm1(f, 1.0, np.random.default_rng(7))
    >>> g.sum(axis=1).tolist() == f.sum(axis=1).tolist(), g.dtype
    (True, dtype('int64'))
    """
    g = np.array(f, dtype=np.int64, copy=True)
    if g.ndim != 2:
        raise ValueError("algorithm1 takes an (m, n) array of counts")
    m, n = g.shape
    if n < 2 or m == 0:
        return g
    if n * n <= _BLOCK:
        j, k = np.triu_indices(n, 1)  # the C(n, 2) rows of M, in a fixed order
        per_block = max(1, _BLOCK // (n * n))
        for g0 in range(0, m, per_block):  # a few blocks of whole rows, not a loop per cell
            g1 = min(m, g0 + per_block)
            b = np.zeros((g1 - g0, n, n), dtype=np.int64)
            b[:, j, k] = sample(rng, epsilon, (g1 - g0, j.size))
            # cell j gains b[j, k] for every k > j and loses b[k', j] for every k' < j
            g[g0:g1] += b.sum(axis=2) - b.sum(axis=1)
        return g
    # very wide rows: blocks of pair-matrix rows, so that memory stays bounded
    rows = max(1, _BLOCK // n)
    cols = np.arange(n)
    for i in range(m):
        for r0 in range(0, n - 1, rows):
            r1 = min(n - 1, r0 + rows)
            upper = cols[None, :] > np.arange(r0, r1)[:, None]
            b = np.where(upper, sample(rng, epsilon, (r1 - r0, n)), 0)
            g[i, r0:r1] += b.sum(axis=1)
            g[i] -= b.sum(axis=0)
    return g


def geometric_mechanism(f: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """The geometric mechanism: ``f`` plus independent two-sided geometric noise with
    ``a = e^(-eps/2)`` on every cell.

    Changing one record moves one unit between two cells (bounded neighbours, Def.
    2.2), so the likelihood ratio is at most ``a^(-1) a^(-1) = e^eps``: the table is
    eps-differentially private, hence eps-private on every set of variables
    (Proposition 3.5).  Totals are not exact.

    Examples
    --------
    >>> g = geometric_mechanism(np.zeros((2, 3), int), 2.0, np.random.default_rng(0))
    >>> g.shape, g.dtype
    ((2, 3), dtype('int64'))
    """
    f = np.asarray(f, dtype=np.int64)
    return f + sample(rng, epsilon, f.shape)


# ---- exact variances ------------------------------------------------------------------------
def cell_variance(epsilon: sympy.Expr, n: int, exact_totals: bool) -> sympy.Expr:
    """Variance of one released cell: ``(n - 1) 2a/(1 - a)^2`` under Algorithm 1 (a cell
    is in ``n - 1`` pairs), ``2a/(1 - a)^2`` under the geometric mechanism.

    Examples
    --------
    >>> cell_variance(sympy.Integer(2), 8, True)
    14*exp(-1)/(1 - exp(-1))**2
    """
    return (n - 1) * noise_variance(epsilon) if exact_totals else noise_variance(epsilon)


def cell_covariance(epsilon: sympy.Expr, exact_totals: bool) -> sympy.Expr:
    """Covariance of two cells of one total cell: ``-2a/(1 - a)^2`` under Algorithm 1
    (they share one pair, with opposite signs), 0 otherwise; cells of different total
    cells are independent.

    Examples
    --------
    >>> cell_covariance(sympy.Integer(2), True)
    -2*exp(-1)/(1 - exp(-1))**2
    """
    return -noise_variance(epsilon) if exact_totals else sympy.Integer(0)


def margin_variance(epsilon: sympy.Expr, sizes: Sequence[int], totals: Sequence[bool],
                    kept: Sequence[bool], exact_totals: bool) -> sympy.Expr:
    """Variance of one cell of a released margin (the table summed over some variables).

    ``sizes[v]`` is the number of categories of table variable v, ``totals[v]``
    whether v is an exact-total variable, ``kept[v]`` whether the margin keeps it.  A
    margin cell sums, in each of ``G`` total cells (the exact-total categories summed
    over), ``K`` protected cells of the ``n`` there.  Under Algorithm 1 the covariance
    of a row is ``s^2 (n I - J)`` with ``s^2 = 2a/(1 - a)^2``, so the sum of K cells of
    a row has variance ``s^2 K (n - K)``; rows are independent, so the margin cell has
    ``s^2 G K (n - K)`` — 0 when it sums whole rows (``K = n``: margins over
    exact-total variables only are exact).  Under the geometric mechanism it is
    ``s^2 G K``.

    Examples
    --------
    >>> # degree (exact totals, 3 categories) x band (8): the margin by band
    >>> margin_variance(sympy.Integer(2), [3, 8], [True, False], [False, True], True)
    42*exp(-1)/(1 - exp(-1))**2
    >>> margin_variance(sympy.Integer(2), [3, 8], [True, False], [True, False], True)
    0
    """
    n = math.prod(s for s, t in zip(sizes, totals) if not t)
    K = math.prod(s for s, t, k in zip(sizes, totals, kept) if not t and not k)
    G = math.prod(s for s, t, k in zip(sizes, totals, kept) if t and not k)
    s2 = noise_variance(epsilon)
    return s2 * G * K * (n - K) if exact_totals else s2 * G * K


# ---- post-processing -------------------------------------------------------------------------
def nonnegative(g: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """Remove negative counts, row by row, keeping each row's total.

    A row with a negative cell is replaced by its Euclidean projection onto ``{x >= 0,
    sum(x) = t}`` (t the row's total, or 0 if that is negative), then rounded to
    integers that keep the sum (largest remainders first; ties, which are common since
    the projection subtracts the same amount from every positive cell, are broken at
    random with ``rng``, else by position).  Rows without negative
    cells are unchanged.  This is post-processing, so the privacy guarantee is
    unchanged (transformation invariance, Remark 4.2.1), and the exact totals stay
    exact; but the cells are no longer unbiased: cells with small true counts are
    pushed up (their negative draws are cut off) and the other cells of their row
    down by the same total amount.

    Examples
    --------
    >>> nonnegative(np.array([[-2, 1, 5], [3, 0, 1]])).tolist()
    [[0, 0, 4], [3, 0, 1]]
    """
    g = np.array(g, dtype=np.int64, copy=True)
    bad = (g < 0).any(axis=1)
    if not bad.any():
        return g
    x = g[bad].astype(float)
    t = np.maximum(x.sum(axis=1), 0.0)
    r, n = x.shape
    # projection onto the scaled simplex (the sort-and-threshold algorithm, per row)
    u = -np.sort(-x, axis=1)
    css = np.cumsum(u, axis=1) - t[:, None]
    idx = np.arange(1, n + 1)
    positive = u - css / idx > 0
    last = n - 1 - np.argmax(positive[:, ::-1], axis=1)  # the last index where it holds
    theta = css[np.arange(r), last] / (last + 1)
    y = np.where(t[:, None] > 0, np.maximum(x - theta[:, None], 0.0), 0.0)
    # integers with the same sum: floors, then one more unit to the largest remainders
    y = np.round(y, 9)
    low = np.floor(y)
    short = (t - low.sum(axis=1)).round().astype(np.int64)
    # ties broken at random, so that no category systematically loses the odd unit
    tie = rng.random(y.shape) if rng is not None else np.zeros(y.shape)
    order = np.lexsort((tie, -(y - low).round(9)), axis=1)
    rank = np.empty_like(order)
    rank[np.arange(r)[:, None], order] = np.arange(n)[None, :]
    low += rank < short[:, None]
    g[bad] = low.astype(np.int64)
    return g
