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

Both draw from the two-sided geometric distribution with ratio ``a``::

    P(Z = z) = (1 - a)/(1 + a) * a^|z|,      Var(Z) = 2a/(1 - a)^2.

Shifting one draw by one unit changes its likelihood by at most ``a^(-1)``, so
``-log a`` is the privacy cost of one unit (:func:`unit_loss`).  A release's exact
privacy loss on its noised variables (:func:`privacy_loss`, derived in
``docs/releases.md``) is

* geometric mechanism, ``a = e^(-eps/2)``: moving one record changes two cells by one
  unit each, loss ``2 (eps/2) = eps``;
* Algorithm 1 moves one record by shifting one pair's draw by one unit, loss
  ``-log a``.  The paper's ``a = e^(-eps/2)`` (``calibration = paper``) therefore
  spends only ``eps/2``; the default ``calibration = tight`` uses ``a = e^(-eps)``,
  which spends exactly the declared ``eps`` with much less noise.

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
from typing import Sequence, TypeVar

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)
import sympy

#: int64 elements in one scratch block of Algorithm 1 (16 MiB): bounds the memory
#: of very large tables without a Python loop per cell
_BLOCK = 1 << 21

#: ``with geometric(epsilon = E, calibration = C)``: ``tight`` (the default) spends
#: exactly E; ``paper`` is Algorithm 1 as published (a = e^(-E/2), in fact E/2-private)
TIGHT, PAPER = "tight", "paper"
CALIBRATIONS = (TIGHT, PAPER)

_E = TypeVar("_E", float, sympy.Expr)


def _check(calibration: str) -> None:
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {', '.join(CALIBRATIONS)}, got {calibration!r}")


# ---- the two-sided geometric distribution ---------------------------------------------
def unit_loss(epsilon: _E, exact_totals: bool = False, calibration: str = TIGHT) -> _E:
    """``-log a``: the privacy cost of shifting one geometric draw by one unit.

    ``eps`` for Algorithm 1 under the tight calibration (one record moves one unit of
    one draw, so one unit must cost the whole budget), ``eps/2`` otherwise: the
    geometric mechanism (a record moves two cells, one unit each) and the paper's
    Algorithm 1 (which calibrates its one unit like the geometric mechanism's two).

    Examples
    --------
    >>> unit_loss(sympy.Integer(2), exact_totals=True), unit_loss(sympy.Integer(2), True, PAPER)
    (2, 1)
    >>> unit_loss(1.0)
    0.5
    """
    _check(calibration)
    return epsilon if exact_totals and calibration == TIGHT else epsilon / 2


def privacy_loss(epsilon: _E, exact_totals: bool = False, calibration: str = TIGHT, cells: int = 2) -> _E:
    """The exact privacy loss on the noised variables: the smallest epsilon for which
    the release is epsilon-private on them (derivation: ``docs/releases.md``).

    ``2 unit_loss`` for the geometric mechanism (a moved record changes two cells),
    ``unit_loss`` for Algorithm 1 (it shifts one pair's draw): ``eps`` except for
    the paper's Algorithm 1, ``eps/2``.  ``cells`` is the number of cells a record can
    move between (``n_i``, or the whole table without exact totals); with fewer than
    two, no two neighbours differ and the loss is 0.

    Examples
    --------
    >>> e = sympy.Symbol("epsilon", positive=True)
    >>> privacy_loss(e), privacy_loss(e, True), privacy_loss(e, True, PAPER), privacy_loss(e, True, cells=1)
    (epsilon, epsilon, epsilon/2, 0)
    """
    unit = unit_loss(epsilon, exact_totals, calibration)
    if cells < 2:
        return 0 * unit  # an exact 0 for sympy, 0.0 for a float
    return unit if exact_totals else 2 * unit


def ratio(epsilon: sympy.Expr, exact_totals: bool = False, calibration: str = TIGHT) -> sympy.Expr:
    """The ratio ``a = e^(-unit_loss)`` of the two-sided geometric noise: ``e^(-eps/2)``
    for the geometric mechanism and the paper's Algorithm 1, ``e^(-eps)`` for the
    tight Algorithm 1.

    Examples
    --------
    >>> ratio(sympy.Integer(2)), ratio(sympy.Integer(2), True, PAPER), ratio(sympy.Integer(2), True)
    (exp(-1), exp(-1), exp(-2))
    """
    return sympy.exp(-unit_loss(sympy.sympify(epsilon), exact_totals, calibration))


def noise_variance(epsilon: sympy.Expr, exact_totals: bool = False, calibration: str = TIGHT) -> sympy.Expr:
    """``Var(Z) = 2a/(1 - a)^2`` of one two-sided geometric draw, exactly.

    Z is the difference of two independent geometric counts G with ``P(G = k) = (1 -
    a) a^k``, each of variance ``a/(1 - a)^2``.

    Examples
    --------
    >>> noise_variance(sympy.Integer(2))
    2*exp(-1)/(1 - exp(-1))**2
    >>> round(float(noise_variance(sympy.Integer(2))), 6)
    1.841347
    >>> noise_variance(sympy.Integer(2), exact_totals=True)      # the tight Algorithm 1
    2*exp(-2)/(1 - exp(-2))**2
    """
    a = ratio(epsilon, exact_totals, calibration)
    return 2 * a / (1 - a) ** 2


def pmf(z: np.ndarray | int, epsilon: float, exact_totals: bool = False, calibration: str = TIGHT) -> np.ndarray:
    """``P(Z = z) = (1 - a)/(1 + a) a^|z|`` with ``a = e^(-unit_loss)`` (the paper's
    Algorithm 1 has ``a = e^(-eps/2)``, its sign typo corrected).

    Examples
    --------
    >>> p = pmf(np.arange(-200, 201), 1.0)
    >>> round(float(p.sum()), 12)
    1.0
    """
    # scipy's discrete Laplace law with shape a' = -log a: tanh(a'/2) e^(-a'|z|) = (1 - a)/(1 + a) a^|z|
    return scipy.stats.dlaplace.pmf(np.asarray(z), unit_loss(float(epsilon), exact_totals, calibration))


def sample(rng: np.random.Generator, epsilon: float, size: int | Sequence[int], exact_totals: bool = False,
           calibration: str = TIGHT) -> np.ndarray:
    """Independent two-sided geometric draws (int64) with ``a = e^(-unit_loss)``
    (``e^(-eps/2)`` with the defaults).

    The difference of two independent geometric counts of success probability
    ``1 - a`` has exactly this law (numpy's geometric counts trials, so the +1 of each
    count cancels).  ``1 - a`` is computed as ``-expm1(-unit_loss)`` so that tiny
    epsilons keep their precision.

    Examples
    --------
    >>> z = sample(np.random.default_rng(1), 1.0, 5)
    >>> z.dtype, z.shape
    (dtype('int64'), (5,))
    """
    p = -math.expm1(-unit_loss(float(epsilon), exact_totals, calibration))
    if not p > 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}")
    return rng.geometric(p, size).astype(np.int64) - rng.geometric(p, size).astype(np.int64)


# ---- the two mechanisms -----------------------------------------------------------------
def algorithm1(f: np.ndarray, epsilon: float, rng: np.random.Generator, calibration: str = TIGHT) -> np.ndarray:
    """Algorithm 1 on counts ``f`` of shape ``(m, n)``: row i is total cell ``v_i``,
    column j protected cell ``u_{i,j}``.

    For every row, ``C(n, 2)`` independent two-sided geometric draws ``b`` are added
    as ``b M`` with ``M`` in ``M(n)``: here the row of ``M`` for the pair ``j < k`` has
    +1 in column j and -1 in column k.  Every row sum is unchanged, every cell is an
    integer with mean ``f`` (Proposition 5.1), variance ``(n - 1) 2a/(1 - a)^2`` and
    covariance ``-2a/(1 - a)^2`` with every other cell of its row.  The ratio is
    ``a = e^(-eps)`` under the tight calibration (exactly eps-private on the noised
    variables) and the paper's ``a = e^(-eps/2)`` under ``calibration = "paper"``
    (exactly eps/2-private): see :func:`privacy_loss`.

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
    >>> g = algorithm1(f, 1.0, np.random.default_rng(7), calibration="paper")   # twice the noise scale
    >>> g.sum(axis=1).tolist() == f.sum(axis=1).tolist()
    True
    """
    _check(calibration)
    g = np.array(f, dtype=np.int64, copy=True)
    if g.ndim != 2:
        raise ValueError("algorithm1 takes an (m, n) array of counts")
    m, n = g.shape
    if n < 2 or m == 0:
        return g

    def draws(size: tuple[int, int]) -> np.ndarray:
        return sample(rng, epsilon, size, exact_totals=True, calibration=calibration)

    if n * n <= _BLOCK:
        j, k = np.triu_indices(n, 1)  # the C(n, 2) rows of M, in a fixed order
        per_block = max(1, _BLOCK // (n * n))
        for g0 in range(0, m, per_block):  # a few blocks of whole rows, not a loop per cell
            g1 = min(m, g0 + per_block)
            b = np.zeros((g1 - g0, n, n), dtype=np.int64)
            b[:, j, k] = draws((g1 - g0, j.size))
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
            b = np.where(upper, draws((r1 - r0, n)), 0)
            g[i, r0:r1] += b.sum(axis=1)
            g[i] -= b.sum(axis=0)
    return g


def geometric_mechanism(f: np.ndarray, epsilon: float, rng: np.random.Generator,
                        calibration: str = TIGHT) -> np.ndarray:
    """The geometric mechanism: ``f`` plus independent two-sided geometric noise with
    ``a = e^(-eps/2)`` on every cell.

    Changing one record moves one unit between two cells (bounded neighbours, Def.
    2.2), so the likelihood ratio is at most ``a^(-1) a^(-1) = e^eps``, reached when
    one cell's noise is <= 0 and the other's >= 0: the table is exactly
    eps-differentially private, hence eps-private on every set of variables
    (Proposition 3.5).  That is already tight, so both calibrations give this same
    noise.  Totals are not exact.

    Examples
    --------
    >>> g = geometric_mechanism(np.zeros((2, 3), int), 2.0, np.random.default_rng(0))
    >>> g.shape, g.dtype
    ((2, 3), dtype('int64'))
    """
    f = np.asarray(f, dtype=np.int64)
    return f + sample(rng, epsilon, f.shape, exact_totals=False, calibration=calibration)


# ---- exact variances ------------------------------------------------------------------------
def cell_variance(epsilon: sympy.Expr, n: int, exact_totals: bool, calibration: str = TIGHT) -> sympy.Expr:
    """Variance of one released cell: ``(n - 1) 2a/(1 - a)^2`` under Algorithm 1 (a cell
    is in ``n - 1`` pairs), ``2a/(1 - a)^2`` under the geometric mechanism, with the
    calibration's ``a`` (:func:`ratio`).

    Examples
    --------
    >>> cell_variance(sympy.Integer(2), 8, True)                        # a = e^(-2)
    14*exp(-2)/(1 - exp(-2))**2
    >>> cell_variance(sympy.Integer(2), 8, True, calibration="paper")   # a = e^(-1)
    14*exp(-1)/(1 - exp(-1))**2
    """
    s2 = noise_variance(epsilon, exact_totals, calibration)
    return (n - 1) * s2 if exact_totals else s2


def cell_covariance(epsilon: sympy.Expr, exact_totals: bool, calibration: str = TIGHT) -> sympy.Expr:
    """Covariance of two cells of one total cell: ``-2a/(1 - a)^2`` under Algorithm 1
    (they share one pair, with opposite signs), 0 otherwise; cells of different total
    cells are independent.

    Examples
    --------
    >>> cell_covariance(sympy.Integer(2), True, "paper")
    -2*exp(-1)/(1 - exp(-1))**2
    """
    return -noise_variance(epsilon, exact_totals, calibration) if exact_totals else sympy.Integer(0)


def margin_variance(epsilon: sympy.Expr, sizes: Sequence[int], totals: Sequence[bool],
                    kept: Sequence[bool], exact_totals: bool, calibration: str = TIGHT) -> sympy.Expr:
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
    42*exp(-2)/(1 - exp(-2))**2
    >>> margin_variance(sympy.Integer(2), [3, 8], [True, False], [False, True], True, "paper")
    42*exp(-1)/(1 - exp(-1))**2
    >>> margin_variance(sympy.Integer(2), [3, 8], [True, False], [True, False], True)
    0
    """
    n = math.prod(s for s, t in zip(sizes, totals) if not t)
    K = math.prod(s for s, t, k in zip(sizes, totals, kept) if not t and not k)
    G = math.prod(s for s, t, k in zip(sizes, totals, kept) if t and not k)
    s2 = noise_variance(epsilon, exact_totals, calibration)
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
