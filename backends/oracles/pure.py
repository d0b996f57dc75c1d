"""Local-DP frequency oracles ("pure protocols") over one categorical variable: what every
protocol shares.

Wang, Blocki, Li and Jha, "Locally Differentially Private Protocols for Frequency
Estimation" (USENIX Security 2017; "Wang et al." below) call a frequency oracle *pure*
when every report ``y`` has a *support set* ``S(y)`` of categories and two numbers
``p* > q*`` with

    Pr(v in S(Y) | X = v) = p*,        Pr(v in S(Y) | X = u) = q*   (u != v).

The support counts ``C_v = #{reports whose support contains v}`` then give the unbiased
estimate ``f_hat = (C/n - q*) / (p* - q*)`` (their Eq. (1)), whatever the oracle.  Each
protocol is one class (:mod:`privspec.backends.oracles.protocols`, named in
:data:`PROTOCOLS`), categories coded ``0 .. d-1``, and what every protocol shares is
their base's (:class:`~privspec.backends.oracles.protocol.Oracle`); this module builds them
(:func:`oracle`) and gives, as functions of the oracle, for all:
``p*, q*`` (:func:`support_probs`), the probabilities that two categories are both in a
support (:func:`pair_probs`), the full covariance of ``f_hat`` (:func:`covariance`), the
local-DP epsilon read back from the mechanism (:func:`epsilon_of`), the sampler's checks
(:func:`privatize`), the support counts of collected reports (:func:`support_counts`),
the text form of reports (:func:`format_reports`, :func:`parse_reports`) and two
estimators, the unbiased one (:func:`unbiased`) and the iterative Bayesian update
(:func:`ibu`, the EM maximum-likelihood estimate).

Examples
--------
>>> from privspec.backends.core.rowrandom import RowRandom
>>> o = oracle("oue", d=5, epsilon=1.0)
>>> x = np.repeat(np.arange(5), [400, 300, 200, 50, 50])
>>> reports = privatize(o, x, RowRandom(1, rows=range(len(x))))
>>> est = unbiased(o, support_counts(o, reports), n=len(x), project="clip")
>>> bool(abs(est[0] - 0.4) < 0.1), round(float(est.sum()), 12)
(True, 1.0)
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import sympy

from privspec.backends.core.algebra import Exact, Float
from privspec.backends.core.rowrandom import RowRandom
# D, EPSILON, F, G, K: the symbols this module's exact answers are written in, read here by its users
from privspec.backends.oracles.protocol import (D, EPSILON, F, G, K, Oracle, PairProbs, check_domain, check_epsilon,
                                                check_support_counts)
from privspec.backends.oracles.protocols import ADP, BLH, GRR, HR, OLH, OUE, SS, SUE

__all__ = ["PROTOCOLS", "KINDS", "oracle", "support_probs", "pair_probs", "covariance", "exact_covariance",
           "support_gap", "variance_formula", "epsilon_of", "complements", "likelihood_pair", "privatize",
           "support_counts", "support_sets", "format_reports", "parse_reports", "unbiased", "ibu",
           "ibu_support_counts", "standard_errors", "symbols_of", "EPSILON", "D", "G", "K", "F"]

#: the protocols by the spec's name: adding one is a class and a line here
PROTOCOLS: dict[str, Any] = {"grr": GRR, "sue": SUE, "oue": OUE, "blh": BLH, "olh": OLH, "ss": SS, "hr": HR,
                             "adp": ADP}
#: the kinds :func:`oracle` accepts (``adp`` resolves to ``grr`` or ``oue``)
KINDS = tuple(PROTOCOLS)


def _having(param: str) -> str:
    return " and ".join(kind for kind, cls in PROTOCOLS.items() if param in cls.PARAMS)


def oracle(kind: str, d: int, epsilon: float, g: int | None = None, k: int | None = None) -> Oracle:
    """A validated oracle of the protocol ``kind`` (:data:`PROTOCOLS`), with the peers' defaults.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    d : int
        Number of categories (>= 2).
    epsilon : float
        The local-DP epsilon (> 0, finite).
    g : int, optional
        Hash range of ``blh``/``olh`` (>= 2).  Default: 2 for ``blh``; for ``olh``
        ``int(round(e^eps)) + 1`` (:class:`~privspec.backends.oracles.protocols.OLH`).
    k : int, optional
        Subset size of ``ss`` (``1 <= k < d``).  Default: ``int(max(1, np.rint(d / (e^eps
        + 1))))``, multi-freq-ldpy's ``SS_Client`` rule (Ye & Barg's optimal size, rounded
        half to even).

    Raises
    ------
    ValueError
        For an unknown kind, d < 2, a non-positive or non-finite epsilon, g < 2, k outside
        ``[1, d)``, ``g``/``k`` given to a kind without them, or ``d`` or ``g`` beyond the
        hash field of local hashing (the default ``g`` is beyond it for epsilon above about 13.2).

    Examples
    --------
    >>> oracle("olh", 10, 1.0)
    OLH(d=10, epsilon=1.0, g=4, k=None, via=None)
    >>> oracle("ss", 10, 1.0).k, oracle("adp", 4, 1.0).kind, oracle("adp", 100, 1.0).kind
    (3, 'grr', 'oue')
    >>> oracle("grr", 1, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: a frequency oracle needs d >= 2 categories, not 1
    """
    if kind not in PROTOCOLS:
        raise ValueError(f"unknown frequency oracle {kind!r}: one of {', '.join(KINDS)}")
    d = check_domain(d)
    epsilon = check_epsilon(epsilon)
    protocol = PROTOCOLS[kind]
    if g is not None and "g" not in protocol.PARAMS:
        raise ValueError(f"g (the hash range) is a parameter of {_having('g')}, not of {kind}")
    if k is not None and "k" not in protocol.PARAMS:
        raise ValueError(f"k (the subset size) is a parameter of {_having('k')}, not of {kind}")
    return protocol.build(d, epsilon, g, k)


def symbols_of(o: Oracle) -> dict[sympy.Symbol, Any]:
    """The values of the closed forms' symbols for ``o`` (to ``subs`` them).

    Examples
    --------
    >>> symbols_of(oracle("ss", 6, 0.5))
    {epsilon: 0.5, d: 6, k: 2}
    """
    return o.symbols()


def _algebra(exact: bool) -> Any:
    return Exact if exact else Float


# ---- closed forms ----------------------------------------------------------------------------------
def support_probs(o: Oracle, exact: bool = False) -> tuple[Any, Any]:
    """``(p*, q*)``: the probability that the true value is in the report's support, and
    that another given category is.

    With ``exact=True``: sympy expressions in :data:`EPSILON`, :data:`D` and, where they
    are parameters, :data:`G` (local hashing) and :data:`K` (subset selection); else
    floats by the same expressions as the peers (sympy's evalf would round differently).

    Examples
    --------
    >>> support_probs(oracle("oue", 4, 1.0), exact=True)
    (1/2, 1/(exp(epsilon) + 1))
    >>> [round(v, 6) for v in support_probs(oracle("grr", 4, 1.0))]
    [0.475367, 0.174878]
    """
    return o.probs(_algebra(exact))


def support_gap(o: Oracle) -> float:
    """``p* - q*`` in floating point, accurate at any epsilon: every kind's gap is ``e^eps - 1``
    (``expm1``) times a ratio of positive terms, so it is not the difference of two nearly
    equal floats (at epsilon = 1e-9 that difference keeps 7 digits; at 1e-20 none).

    Examples
    --------
    >>> o = oracle("oue", 4, 1e-9)
    >>> p, q = support_probs(o)
    >>> round(support_gap(o) / 2.5e-10, 9), round((p - q) / 2.5e-10, 9) != 1.0
    (1.0, True)
    >>> abs(support_gap(oracle("ss", 6, 1.0)) - (lambda pq: pq[0] - pq[1])(support_probs(oracle("ss", 6, 1.0)))) < 1e-15
    True
    """
    return o.gap()


def complements(o: Oracle) -> tuple[float, float]:
    """``(1 - p*, 1 - q*)`` in floating point, each from its own expression (not a
    difference with 1, which loses them where they are small)."""
    return o.complements()


def pair_probs(o: Oracle, exact: bool = False) -> PairProbs:
    """Both-in-support probabilities of two categories (:class:`PairProbs`): what the
    off-diagonal of the covariance needs beyond ``p*, q*``.

    Derivations (``Z_v`` = 1 when v is in the support): grr: the support is one category:
    0, 0.  sue/oue: bits are independent given x: ``E[Z_v Z_w | x=v] = p q``, ``q^2``
    otherwise.  ss: with ``pi = p*``: given x = v, w joins v as one of the k-1 others
    drawn from the d-1: ``pi (k-1)/(d-1)``; given x not in {v, w}: ``[pi (k-1)(k-2) +
    (1-pi) k(k-1)] / ((d-1)(d-2))``.  blh/olh: the hash family is 3-wise independent
    (:func:`~privspec.backends.oracles.protocols.hash_values`): ``p' / g`` and ``1/g^2``.
    hr: ``C_u`` = {j : H[u+1, j] = +1}, ``|C_a & C_b| = K/4`` and ``|C_a & C_b & C_c| = K/8``
    unless ``a ^ b ^ c = 0`` (then ``K/4``).  Given x = v: ``p/2``; given another x: 1/4, or
    ``p/2`` for the x with ``(x+1) = (v+1)^(w+1)``.

    Examples
    --------
    >>> pair_probs(oracle("hr", 6, 1.0), exact=True)
    PairProbs(one=exp(epsilon)/(2*(exp(epsilon) + 1)), neither=1/4, xor=exp(epsilon)/(2*(exp(epsilon) + 1)))
    """
    A = _algebra(exact)
    return o.pairs(A, *o.probs(A))


def likelihood_pair(o: Oracle) -> tuple[float, float]:
    """``(a, b)`` proportional to ``Pr(y | x)`` for x in / not in ``S(y)`` (the factor
    common to all x dropped): the likelihood of :func:`ibu`.  Their ratio is ``e^eps``
    for every kind (:func:`epsilon_of`)."""
    return o.likelihood_pair()


def covariance(o: Oracle, f: Sequence[float], n: float, conditional: bool = False) -> np.ndarray:
    """The ``d x d`` covariance of ``f_hat = (C/n - q*)/(p* - q*)``.

    ``conditional=False``: n respondents drawn i.i.d. from the population ``f`` (sampling
    and privacy noise).  The supports ``Z_i`` are then i.i.d. with mean ``lam = q* + (p*
    - q*) f`` and ``Cov(C) = n Cov(Z)``: ``lam_v (1 - lam_v)`` on the diagonal, ``E[Z_v Z_w]
    - lam_v lam_w`` off it.

    ``conditional=True``: given the collected table ``n f`` (privacy noise only):
    ``Cov(C) = sum_i Cov(Z_i | x_i)``, diagonal ``n [f p*(1-p*) + (1-f) q*(1-q*)]`` (Wang et
    al.'s Eq. (1) after dividing by ``n^2 (p*-q*)^2``), off-diagonal ``n (E[Z_v Z_w] - [p*
    q* (f_v + f_w) + q*^2 (1 - f_v - f_w)])``.  The two differ by the multinomial sampling
    term ``(diag(f) - f f^T)/n``.

    ``E[Z_v Z_w]`` comes from :func:`pair_probs`.

    Parameters
    ----------
    o : Oracle
    f : array of float, shape (d,)
        A distribution (the population's, or the collected table's frequencies).
    n : float
        Number of respondents.
    conditional : bool
        Privacy noise only (given the table ``n f``) instead of sampling plus privacy.

    Returns
    -------
    numpy.ndarray, shape (d, d)

    Examples
    --------
    >>> o = oracle("oue", 3, 1.0)
    >>> f = np.array([0.5, 0.3, 0.2])
    >>> pop, cond = covariance(o, f, 100), covariance(o, f, 100, conditional=True)
    >>> bool(np.allclose(pop - cond, (np.diag(f) - np.outer(f, f)) / 100))
    True
    """
    return o.covariance(f, n, conditional)


def exact_covariance(o: Oracle, epsilon: sympy.Expr, f: Sequence[sympy.Expr], conditional: bool = False
                     ) -> sympy.Matrix:
    """:func:`covariance` times n, exactly: at an exact ``epsilon`` (a sympy number, the
    oracle's) and an exact distribution ``f``.

    Examples
    --------
    >>> V = exact_covariance(oracle("oue", 2, 1.0), sympy.Integer(1), [sympy.Rational(1, 2)] * 2)
    >>> sympy.simplify(V[0, 0]), sympy.simplify(V[0, 1])
    ((1 + 3*E)*(E + 3)/(4*(-1 + E)**2), -1/4)
    """
    return o.exact_covariance(epsilon, f, conditional)



def variance_formula(o: Oracle, exact: bool = True, conditional: bool = True) -> sympy.Expr:
    """``n Var(f_hat_v)`` as a sympy expression in :data:`F` (the category's frequency).

    ``conditional=True``: Wang et al.'s Eq. (1)/(2), ``q*(1-q*)/(p*-q*)^2 + f (1-p*-q*)/
    (p*-q*)`` (multi-freq-ldpy's ``VAR_Pure``); ``conditional=False`` adds the sampling
    term ``f (1 - f)``.  ``exact=True``: in :data:`EPSILON`, :data:`D` (and :data:`G`,
    :data:`K`); ``exact=False``: with ``o``'s numbers put in (floats), still in ``f``.

    Examples
    --------
    >>> variance_formula(oracle("oue", 4, 1.0)).subs(F, 0).simplify()
    sinh(epsilon/2)**(-2)
    """
    return o.variance_formula(exact, conditional)



def epsilon_of(o: Oracle, exact: bool = False) -> Any:
    """The local-DP epsilon of the mechanism, ``max_y log(max_x Pr(y|x) / min_x Pr(y|x))``,
    from its report probabilities (not from ``o.epsilon``); it equals the declared one.

    Every protocol's report is likelier by a factor ``a / b`` for a category in its support
    than for one outside it (the protocol's likelihood terms): grr ``p' / q'``; sue/oue ``p
    (1-q) / ((1-p) q)`` (a report with a 1 and a 0); ss ``pi (d-k) / ((1-pi) k)``; blh/olh
    ``p' / q'`` of the GRR over [g] given the seed; hr ``p / (1-p)``.  In floating point it
    is a sum of logs, with ``1 - p*`` and ``1 - q*`` from their own expressions (``1 - p*``
    in doubles is 0 at epsilon = 700, and its log -inf).

    Examples
    --------
    >>> epsilon_of(oracle("oue", 6, 1.5), exact=True)
    epsilon
    >>> round(epsilon_of(oracle("ss", 6, 1.5)), 12)
    1.5
    """
    return o.epsilon_of(exact)


# ---- sampling and aggregation -----------------------------------------------------------------------
def privatize(o: Oracle, codes: Sequence[int] | np.ndarray, rng: RowRandom) -> np.ndarray:
    """Privatize each row's category: the reports, one per row.

    ``rng`` is a :class:`~privspec.backends.core.rowrandom.RowRandom` with one row per code;
    every row makes the same calls whatever its value, so a row's report is a function of
    (seed, row index, value) alone: the same whole or in pieces.

    Reports: grr: int codes; sue/oue/ss: packed bits (``np.packbits(..., axis=1,
    bitorder="little")``, shape ``(n, ceil(d/8))`` uint8: bit ``v`` of the support in byte
    ``v // 8``, bit ``v % 8``); blh/olh: a structured array with fields ``seed`` (uint64,
    :func:`~privspec.backends.oracles.protocols.hash_values`) and ``value`` (int64); hr: int ``j`` in ``[K]``.

    Subset selection's k-subset is stored as its bitmask: fixed width whatever k, smaller
    than k int16 codes once ``k > d/16`` (the default ``k ~ d/(e^eps+1)`` for eps < 2.7),
    and :func:`support_counts` and :func:`support_sets` share unary encoding's code;
    :func:`format_reports` writes the sorted codes.

    Draws per row: grr: 1 uniform; sue/oue: ``ceil(d/8)`` 64-bit words (eight 8-bit lanes
    per word, ties resolved exactly: :func:`_ue_bits`) and ``1 +`` a few tie coins more, or,
    where the other bits are rarely 1 (oue at a large epsilon),
    2 uniforms (the true value's bit; how many others are 1, Binomial(d - 1, q)) and that
    many positions among the others (:func:`~privspec.backends.oracles.sampling.other_positions`); ss: 2 uniforms (the
    true value in or out, then the index of a subset of the others among all of them,
    :data:`~privspec.backends.oracles.protocols.SS_TABLE`; an index from a 53-bit uniform is uniform to ``C(d-1, k) 2^-53``)
    where d <= 64 and the subsets fit a table; else 1 uniform (the true value in or out)
    and the first k - 1 or k distinct of about ``k + k^2/(2d)`` uniform positions among
    the others, two per word, exactly (``sampling._positions``, ``sampling._first_distinct``; where
    ``2k > d - 1`` the others left out instead); blh/olh: 3 uniforms for the seed's
    coefficients, 1 for the GRR; hr: one integer in [K] and one uniform (pure-ldp's
    ``Hadamard_Rand_high_priv.encode_symbol``).  A row whose draws fall short (too many
    ties or repeats: well under one row in 10^4) redraws by :meth:`RowRandom.retry`.

    Parameters
    ----------
    o : Oracle
    codes : int array, shape (n,)
        The respondents' categories, in ``[0, d)``.
    rng : RowRandom
        Per-row randomness with ``n`` rows (absolute row indices: a piece of a file
        passes its own).

    Returns
    -------
    numpy.ndarray
        The n reports (see above for each kind's layout).

    Examples
    --------
    >>> o = oracle("sue", 10, 2.0)
    >>> r = privatize(o, np.array([0, 9, 3]), RowRandom(4, rows=range(3)))
    >>> r.shape, r.dtype
    ((3, 2), dtype('uint8'))
    """
    return o.privatize(codes, rng)


def support_counts(o: Oracle, reports: Any, counts: Sequence[float] | None = None) -> np.ndarray:
    """``C_v``: the number of reports whose support contains ``v`` (length ``d``).

    ``counts`` weights the reports (data that arrive as distinct reports with their
    counts); without it every report counts once and C is an int array.

    grr/hr: a weighted histogram (hr: then a fast Walsh-Hadamard transform, ``C_u = (N +
    (H h)[u+1]) / 2``); sue/oue/ss: the unpacked bits summed (weighted: per byte column a
    256-bin histogram times the bits of each byte value); blh/olh: hashing in blocks.

    Parameters
    ----------
    o : Oracle
    reports : array
        Reports as :func:`privatize` or :func:`parse_reports` give them.
    counts : array of float, optional
        One weight per report.

    Returns
    -------
    numpy.ndarray, shape (d,)

    Examples
    --------
    >>> o = oracle("hr", 3, 1.0)            # K = 4; C_0 = {0, 2}, C_1 = {0, 1}, C_2 = {0, 3}
    >>> support_counts(o, np.array([0, 1, 2, 3, 3]))
    array([2, 2, 3])
    """
    return o.support_counts(reports, counts)


def support_sets(o: Oracle, reports: Any, counts: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct support sets of the reports, as a bool ``(m, d)`` matrix, and how many
    reports (or how much weight) each has: the sufficient statistic of :func:`ibu` (the
    likelihood of a report depends on it only through its support).

    Examples
    --------
    >>> sets, c = support_sets(oracle("grr", 3, 1.0), np.array([2, 0, 2, 2]))
    >>> sets.astype(int).tolist(), c.tolist()
    ([[1, 0, 0], [0, 0, 1]], [1.0, 3.0])
    """
    return o.support_sets(reports, counts)


# ---- estimators ------------------------------------------------------------------------------------
def unbiased(o: Oracle, C: Sequence[float], n: float, project: str = "none") -> np.ndarray:
    """``f_hat = (C/n - q*)/(p* - q*)`` (Wang et al. Eq. (1)), optionally projected onto
    the simplex with :func:`privspec.backends.core.projections.project`: ``clip`` (negatives to 0,
    rescaled to sum 1: multi-freq-ldpy's ``MI``) or ``euclidean`` (nearest distribution in
    L2).

    Parameters
    ----------
    o : Oracle
    C : array of float, shape (d,)
        Support counts (:func:`support_counts`).
    n : float
        Number of reports.
    project : {"none", "clip", "euclidean"}

    Returns
    -------
    numpy.ndarray, shape (d,)

    Examples
    --------
    >>> o = oracle("grr", 3, math.log(2))            # p* = 1/2, q* = 1/4
    >>> unbiased(o, [50, 30, 20], 100).round(12).tolist()
    [1.0, 0.2, -0.2]
    >>> unbiased(o, [50, 30, 20], 100, project="clip").round(4).tolist()
    [0.8333, 0.1667, 0.0]
    """
    return o.unbiased(C, n, project)


def _stop(err: str):
    rules = {"max_abs": lambda a, b: np.abs(a - b).max(), "mse": lambda a, b: np.square(b - a).mean(),
             "mae": lambda a, b: np.abs(a - b).mean(), "max_squared": lambda a, b: np.square(b - a).max()}
    if err not in rules:
        raise ValueError(f"unknown stopping rule {err!r}: one of {', '.join(rules)}")
    return rules[err]


def ibu(o: Oracle, supports: np.ndarray, counts: Sequence[float], n: float | None = None, iters: int = 10000,
        tol: float = 1e-12, err: str = "max_abs", pair: tuple[float, float] | None = None) -> np.ndarray:
    """The iterative Bayesian update (Agrawal & Aggarwal 2001): EM for the maximum-likelihood
    estimate of ``f`` from the distinct support sets (:func:`support_sets`) and counts.

    A report's likelihood given ``x = u`` is ``a(y)`` times ``e^eps`` if ``u`` is in
    ``S(y)`` and 1 otherwise (:func:`epsilon_of`: the ratio is the same for every report
    of a pure protocol, so the support set is sufficient).  With ``L[y, u]`` that
    likelihood (per kind: :func:`likelihood_pair`) and ``obs = counts / sum(counts)``::

        f <- f * L^T (obs / (L f))

    from the uniform ``f``, stopped as multi-freq-ldpy's ``IBU`` does: after ``iters``
    steps or at the first step whose change (``err``: ``max_abs`` (default), ``mse``,
    ``mae``, ``max_squared``) is below ``tol`` (its defaults: 10000, 1e-12).  For grr,
    ``L`` is the d x d channel and this is multi-freq-ldpy's ``GRR_Aggregator_IBU`` step
    for step; for the other kinds multi-freq-ldpy iterates on the support counts instead
    (:func:`ibu_support_counts`), which is not this likelihood's EM.

    Parameters
    ----------
    o : Oracle
    supports : bool array, shape (m, d)
        Distinct support sets (:func:`support_sets`).
    counts : array of float, shape (m,)
        How many reports have each.
    n : float, optional
        The number of reports, checked against ``sum(counts)``.
    iters, tol, err
        The stopping rule (multi-freq-ldpy's ``nb_iter``, ``tol``, ``err_func``).
    pair : (a, b), optional
        The likelihood of a report for a category in / not in its support, up to a factor
        common to all categories, when it is not ``o``'s own (:func:`likelihood_pair`):
        a protocol built on ``o``'s reports (longitudinal collection, random sampling plus
        fake data) whose reports keep that form.

    Returns
    -------
    numpy.ndarray, shape (d,)
        The estimate (a distribution).

    Examples
    --------
    >>> o = oracle("oue", 3, 1.0)
    >>> sets = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 0]], dtype=bool)
    >>> f = ibu(o, sets, [40, 20, 10, 30])
    >>> round(float(f.sum()), 9), bool(f[0] > f[1] > f[2])
    (1.0, True)
    """
    M = np.asarray(supports, dtype=bool)
    c = np.asarray(counts, dtype=float)
    if M.ndim != 2 or M.shape[1] != o.d or c.shape != (M.shape[0],):
        raise ValueError(f"supports is (m, {o.d}) bool and counts has m entries")
    total = c.sum()
    if total <= 0:
        raise ValueError("no reports")
    if n is not None and not math.isclose(float(n), total, rel_tol=1e-9):
        raise ValueError(f"n = {n} but the counts sum to {total}")
    if not (isinstance(iters, int) and iters > 0 and tol > 0):
        raise ValueError("iters (int) and tol need values > 0")
    change = _stop(err)
    a, b = o.likelihood_pair() if pair is None else pair
    L, back, obs = o.ibu_system(M, c, a, b)
    return _iterate(L, back, obs, iters, tol, change)


def ibu_support_counts(o: Oracle, C: Sequence[float], iters: int = 10000, tol: float = 1e-12,
                       err: str = "max_abs") -> np.ndarray:
    """multi-freq-ldpy's IBU for UE, LH and SS (``*_Aggregator_IBU``): the IBU step with
    ``A = q* J + (p* - q*) I`` on the normalized support counts ``C / sum(C)``.

    For grr it is :func:`ibu`; for the others ``A`` is not a channel (its columns do not
    sum to 1) and the support counts are not a multinomial sample, so its fixed point is
    not the maximum-likelihood estimate: kept to reproduce their numbers.

    Examples
    --------
    >>> o = oracle("oue", 3, 1.0)
    >>> ibu_support_counts(o, [50, 40, 30]).round(3).tolist()
    [0.685, 0.315, 0.0]
    """
    C = check_support_counts(C, o.d)
    change = _stop(err)
    p, q = support_probs(o)
    A = np.eye(o.d)
    A[A == 1] = p
    A[A == 0] = q
    return _iterate(A, A, C / sum(C), iters, tol, change)


def _iterate(L: np.ndarray, back: np.ndarray, obs: np.ndarray, iters: int, tol: float, change: Any) -> np.ndarray:
    """The IBU step ``f <- f * back (obs / (L f))`` from the uniform ``f``, stopped after
    ``iters`` steps or at the first whose ``change`` is below ``tol`` (multi-freq-ldpy's
    rule), in their order of operations (so that iterates agree to the last bits)."""
    est = np.ones(L.shape[1]) / L.shape[1]
    est_t = est
    for _ in range(iters):
        est_t = est * np.dot(back, obs / np.dot(L, est))
        if change(est, est_t) < tol:
            return est_t
        est = est_t
    return est_t


def standard_errors(o: Oracle, f_hat: Sequence[float], n: float, conditional: bool = False) -> np.ndarray:
    """``sqrt(diag(covariance))`` at the plug-in ``f_hat`` (clipped to [0, 1] per category,
    as the diagonal needs only the category's own frequency): Wang et al.'s Eq. (1) with
    ``conditional=True``, plus ``f (1 - f) / n`` without.

    Examples
    --------
    >>> o = oracle("oue", 4, 1.0)
    >>> f = np.array([0.4, 0.3, 0.2, 0.1])
    >>> bool(np.allclose(standard_errors(o, f, 500), np.sqrt(np.diag(covariance(o, f, 500)))))
    True
    """
    f = np.clip(np.asarray(f_hat, dtype=float), 0.0, 1.0)
    p, q = support_probs(o)
    v = (q * (1 - q) / (p - q) ** 2 + f * (1 - p - q) / (p - q))
    if not conditional:
        v = v + f * (1 - f)
    return np.sqrt(v / n)




# ---- text form -------------------------------------------------------------------------------------
def format_reports(o: Oracle, reports: Any) -> np.ndarray:
    """One string per report: grr and hr the decimal code; sue/oue lower-case hex of the
    packed bits (``2 ceil(d/8)`` characters, byte 0 first); blh/olh ``"seed:value"``; ss
    the subset's codes in increasing order joined by ``|``.

    Examples
    --------
    >>> o = oracle("ss", 6, 1.0, k=2)
    >>> format_reports(o, np.packbits([[1, 0, 0, 0, 1, 0]], axis=1, bitorder="little")).tolist()
    ['0|4']
    >>> format_reports(oracle("oue", 10, 1.0), np.array([[5, 2]], dtype=np.uint8)).tolist()
    ['0502']
    """
    return o.format_reports(reports)


def parse_reports(o: Oracle, strings: Sequence[Any]) -> tuple[Any, np.ndarray]:
    """The reports of :func:`format_reports`'s strings, and the positions of the invalid
    ones (malformed, out of range, wrong width, a subset of the wrong size or not in
    increasing order, padding bits set): ``(reports of the valid strings, in order,
    bad positions)``; nothing is raised for bad data.

    Parameters
    ----------
    o : Oracle
    strings : sequence
        One string per report; anything that is not a str is invalid.

    Returns
    -------
    (reports, bad) : (array, int array)
        The valid strings' reports (as :func:`privatize` lays them out) and the positions
        of the invalid ones.

    Examples
    --------
    >>> o = oracle("olh", 5, 1.0)
    >>> r, bad = parse_reports(o, ["12:3", "7:4", "x:1", "5:0", None])
    >>> r["seed"].tolist(), r["value"].tolist(), bad.tolist()
    ([12, 5], [3, 0], [1, 2, 4])
    """
    return o.parse_reports(strings)
