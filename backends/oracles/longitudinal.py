"""Longitudinal (memoized, two-round) frequency oracles: L-GRR, L-SUE, L-OUE, L-OSUE.

A respondent who answers the same question in many collections must not leak more as
the collections pile up.  RAPPOR (Erlingsson, Pihur and Korolova, CCS 2014) answers
with *memoization*: a **permanent randomized response** (PRR) of the true value is drawn
once, at ``eps_perm`` (``eps_inf``), kept for that respondent and value, and every
collection reports an **instantaneous randomized response** (IRR) of the memoized
value, fresh each time, calibrated so that *one* report is ``eps_1``-LDP.  Whatever the
number of collections, the reports are a post-processing of the PRR, so they are
``eps_perm``-LDP together.  Arcolezi, Couchot, Al Bouna and Xiao ("Improving the utility
of locally differentially private protocols for longitudinal and multidimensional
frequency estimates", Digital Communications and Networks 2023, arXiv:2111.04636;
"Arcolezi et al." below) chain the pure protocols of Wang et al. (USENIX Security 2017)
this way, and multi-freq-ldpy 0.2.5 (``long_freq_est``) implements them:

======  ==================  =================  ==========================================
kind    PRR (round 1)       IRR (round 2)      composed, one report
======  ==================  =================  ==========================================
l_grr   GRR at eps_perm     GRR over [d]       GRR at eps_1 (``calibration="tight"``)
l_sue   SUE at eps_perm     SUE (p2 + q2 = 1)  SUE at eps_1 (basic one-time RAPPOR's IRR)
l_oue   OUE at eps_perm     OUE (p2 = 1/2)     ``p* = 1/4 + q2/2`` (not OUE)
l_osue  OUE at eps_perm     SUE (p2 + q2 = 1)  OUE at eps_1 (``p* = 1/2, q* = 1/(e^eps_1+1)``)
======  ==================  =================  ==========================================

One collection is a pure protocol (Wang et al.) with ``p* = p1 p2 + (1 - p1) q2`` and
``q* = q1 p2 + (1 - q1) q2`` (per bit for UE; for GRR, the report equals ``v`` through
``B = v`` then keep, or ``B != v`` then move to ``v``), so the unbiased estimator, its
covariance and the support counts of :mod:`privspec.backends.oracles.pure` carry over with
these constants (:func:`support_probs`, :func:`pair_probs`, :func:`covariance`,
:func:`unbiased`).  The reports have the format of the one-round oracle of the IRR
(:func:`report_oracle`: grr codes, or UE bits packed), so
:func:`privspec.backends.oracles.pure.support_counts`, ``format_reports`` and
``parse_reports`` of that oracle read them (wrapped here as :func:`support_counts`,
:func:`format_reports`, :func:`parse_reports`); its ``unbiased`` would use the IRR's
``(p2, q2)`` instead of ``(p*, q*)``: use this module's.

The privacy of ``t`` collections of one value, between ``eps_1`` (t = 1) and
``eps_perm`` (t -> infinity), is computed exactly by :func:`epsilon_of` (and by
enumeration, :func:`epsilon_by_counts`; :func:`epsilon_table`).  It is not bounded by
``t eps_1``: the reports share the PRR, so sequential composition does not apply.  The
PRR is memoized per respondent *and value* (:func:`permanent`): a respondent whose value
changes among k values draws k independent PRRs, and spends at most ``k eps_perm``.

Where multi-freq-ldpy differs: its L-GRR second round solves the two-value equation
(``calibration="peer"`` here; one report then spends less than ``eps_1`` when d > 2);
its ``VAR_Long_Pure`` is exact only for L-SUE or at ``f = 0`` (:func:`variance`); its
``L_GRR_Aggregator_IBU`` builds the channel with ``q = p1 q2 + q1 p2``, which drops the
``(d-2) q1 q2`` of a memoized third value (its columns do not sum to 1 when d > 2); its
``L_*_Client`` draws both rounds at every call from numpy's global generator (numba's
for the UE clients): it simulates one collection, and nothing is memoized, so calling it
again for the same respondent draws a fresh PRR (the reports of t calls are then only
``t eps_1``-LDP together).

Examples
--------
>>> import numpy as np
>>> from privspec.backends.core.rowrandom import RowRandom
>>> lo = longitudinal("l_osue", d=4, eps_perm=2.0, eps_1=1.0)
>>> x = np.repeat(np.arange(4), [500, 300, 150, 50])
>>> rng = RowRandom(1, rows=range(len(x)))
>>> day0, day1 = privatize(lo, x, rng, collection=0), privatize(lo, x, rng, collection=1)
>>> est = unbiased(lo, support_counts(lo, day0), n=len(x), project="clip")
>>> bool(abs(est[0] - 0.5) < 0.15), bool((day0 != day1).any())
(True, True)
>>> round(epsilon_of(lo, 1), 9), round(epsilon_of(lo, float("inf")), 9)
(1.0, 2.0)
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from privspec.backends.oracles.memoized import (IRR_CHUNK, LGRR, LOSUE, LOUE, LSUE, LongitudinalOracle,
                                                check_collections)
from privspec.backends.oracles.protocol import Oracle, PairProbs, check_domain, check_epsilon
from privspec.backends.oracles.pure import oracle
from privspec.backends.core.rowrandom import RowRandom

__all__ = ["LONGITUDINAL", "KINDS", "CALIBRATIONS", "LongitudinalOracle", "longitudinal", "round_oracles",
           "report_oracle", "support_probs", "support_gap", "pair_probs", "covariance", "cross_collection_covariance",
           "change_covariance", "variance", "likelihood_pair", "unbiased", "permanent", "instantaneous", "privatize",
           "privatize_collections", "support_counts", "format_reports", "parse_reports", "epsilon_of",
           "epsilon_by_counts", "epsilon_table", "max_eps_1"]

#: the kinds by the spec's name (:mod:`privspec.backends.oracles.memoized`): a class and a line here
LONGITUDINAL: dict[str, type[LongitudinalOracle]] = {"l_grr": LGRR, "l_sue": LSUE, "l_oue": LOUE, "l_osue": LOSUE}
#: the kinds :func:`longitudinal` accepts
KINDS = tuple(LONGITUDINAL)
#: how L-GRR's second round is calibrated (the UE kinds: both are the same)
CALIBRATIONS = ("tight", "peer")
#: the IRR sampler's blocks for this module's functions (tests make them small: nothing changes)
_CHUNK = IRR_CHUNK


def max_eps_1(kind: str, eps_perm: float) -> float:
    """The largest one-report ``eps_1`` a kind can reach below ``eps_perm``: ``eps_perm``
    itself except for L-OUE, whose IRR keeps a memoized 1 with probability 1/2 only:
    its ``q2 = 0`` gives ``p* = 1/4, q* = q1/2`` and so ``eps_1 <= log((2 e^eps_perm + 1)
    / 3)`` (multi-freq-ldpy raises "Probabilities are negative" beyond it).

    Examples
    --------
    >>> round(max_eps_1("l_oue", 1.0), 6), max_eps_1("l_sue", 1.0)
    (0.763383, 1.0)
    """
    return LONGITUDINAL[kind].max_eps_1(eps_perm)

def longitudinal(kind: str, d: int, eps_perm: float, eps_1: float, calibration: str = "tight") -> LongitudinalOracle:
    """A validated :class:`LongitudinalOracle` with both rounds' probabilities.

    Round 1 (the PRR) is the one-round oracle at ``eps_perm``, its probabilities by
    the expressions of multi-freq-ldpy's ``L_*_Client`` (and of
    :func:`privspec.backends.oracles.pure.support_probs`, whose sampler draws it): GRR
    ``p1 = E/(E+d-1)``, ``q1 = (1-p1)/(d-1)``; SUE ``p1 = h/(h+1)``, ``q1 = 1 - p1``
    (``h = e^(eps_perm/2)``); OUE (L-OUE, L-OSUE) ``p1 = 1/2``, ``q1 = 1/(E+1)``
    (``E = e^eps_perm``).

    Round 2 (the IRR) solves "one report is exactly ``eps_1``-LDP": with ``a =
    e^eps_1``, the composed ``p* = p1 p2 + (1-p1) q2``, ``q* = q1 p2 + (1-q1) q2`` must
    satisfy ``p*/q* = a`` (GRR) or ``p*(1-q*) / ((1-p*) q*) = a`` (UE, the ratio of a
    report with bit x on and bit x' off).  Each kind's closed form is derived in its class
    (:mod:`privspec.backends.oracles.memoized`); each equals multi-freq-ldpy's expression,
    from Arcolezi et al.'s notebook ``1_ALLOMFREE_Analysis``, to rounding
    (tests/test_oracles_longitudinal.py).  L-GRR's ``calibration="peer"`` is theirs, which
    solves the binary (d = 2) equation: for ``d > 2`` one report then spends less than
    ``eps_1`` (:class:`~privspec.backends.oracles.memoized.LGRR`).

    Parameters
    ----------
    kind : str
        The longitudinal kind, a key of :data:`LONGITUDINAL`.
    d : int
        The domain size, as for :func:`privspec.backends.oracles.pure.oracle` (at least 2).
    eps_perm : float
        The PRR's epsilon: the local-DP loss of any number of collections of one value.
    eps_1 : float
        One collection's epsilon, ``0 < eps_1 < eps_perm`` (L-OUE: ``<=``
        :func:`max_eps_1`).
    calibration : str
        ``tight`` or ``peer`` (:data:`CALIBRATIONS`; only L-GRR's second round differs).

    Raises
    ------
    ValueError
        Unknown kind or calibration, ``d < 2``, an epsilon not finite and positive,
        ``eps_1 >= eps_perm``, or an L-OUE ``eps_1`` beyond :func:`max_eps_1`.

    Examples
    --------
    >>> lo = longitudinal("l_grr", 6, 2.0, 1.0)
    >>> p, q = support_probs(lo)
    >>> round(p / q, 12) == round(np.e, 12)
    True
    >>> longitudinal("l_sue", 4, 1.0, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: eps_1 (one collection) must be below eps_perm (every collection): 1.0 >= 1.0
    """
    if kind not in KINDS:
        raise ValueError(f"unknown longitudinal oracle {kind!r}: one of {', '.join(KINDS)}")
    if calibration not in CALIBRATIONS:
        raise ValueError(f"unknown calibration {calibration!r}: one of {', '.join(CALIBRATIONS)}")
    d = check_domain(d)
    eps_perm, eps_1 = check_epsilon(eps_perm, "eps_perm"), check_epsilon(eps_1, "eps_1")
    if eps_1 >= eps_perm:
        raise ValueError(f"eps_1 (one collection) must be below eps_perm (every collection): {eps_1} >= {eps_perm}")
    cls = LONGITUDINAL[kind]
    cls.check_eps_1(eps_perm, eps_1)
    # the PRR sampler's own floats (grr's q1 = 1/(E + d - 1) is multi-freq-ldpy's (1 - p1)/(d - 1)
    # to rounding where p1 is not near 1, and not 0 where it is: epsilon = 700)
    p1, q1 = oracle(cls.ROUNDS[0], d, eps_perm).support_probs()
    p2, q2 = cls.round2(d, eps_perm, eps_1, calibration)
    q2 = max(q2, 0.0)                                         # l_oue at max_eps_1: -1e-17 is 0
    return cls(d, eps_perm, eps_1, float(p1), float(q1), float(p2), float(q2), calibration)


def round_oracles(lo: LongitudinalOracle) -> tuple[Oracle, Oracle]:
    """The two rounds as one-round oracles of :mod:`privspec.backends.oracles.pure`: the PRR
    (exactly: :func:`permanent` draws it with this oracle's sampler) and the IRR, the
    one-round oracle with ``(p2, q2)``'s epsilon (GRR ``log(p2/q2)``, SUE ``2 log(p2/q2)``,
    OUE ``log((1-q2)/q2)``); the IRR is applied to a memoized bit vector that may have
    several bits on, bit by bit, which that oracle's ``privatize`` (one true category)
    does not do; its probabilities equal ``(p2, q2)`` to rounding.

    Examples
    --------
    >>> first, second = round_oracles(longitudinal("l_osue", 6, 2.0, 1.0))
    >>> first.kind, first.epsilon, second.kind, round(second.epsilon, 4)
    ('oue', 2.0, 'sue', 2.8152)
    """
    return lo.rounds()


def report_oracle(lo: LongitudinalOracle) -> Oracle:
    """The one-round oracle whose report format the reports have (the IRR's: ``grr``, or
    ``sue``/``oue`` packed bits): for :func:`privspec.backends.oracles.pure.support_counts`,
    ``support_sets``, ``format_reports`` and ``parse_reports``, which do not depend on
    its epsilon; not for its ``unbiased``/``covariance`` (they would use ``(p2, q2)``).

    Examples
    --------
    >>> report_oracle(longitudinal("l_grr", 5, 2.0, 1.0)).kind
    'grr'
    """
    return lo.report_oracle()


# ---- the composed pure protocol --------------------------------------------------------------------
def support_probs(lo: LongitudinalOracle) -> tuple[float, float]:
    """``(p*, q*)`` of one collection: the probability that the true value is in the
    report's support (GRR: the report equals it; UE: its bit is 1), and that another given
    category is.

    ``p* = p1 p2 + (1 - p1) q2`` (the memoized value/bit is the true one and kept, or not
    and the IRR puts it back: GRR ``Pr(B != x) = 1 - p1``, then the report moves to x with
    probability ``q2``); ``q* = q1 p2 + (1 - q1) q2`` likewise.  Both are written ``q2 +
    pi (p2 - q2)``, and ``p* - q* = (p1 - q1)(p2 - q2)``: multi-freq-ldpy's ``MI_long``
    subtracts ``n q1 (p2 - q2) + n q2 = n q*`` and divides by ``n (p1-q1)(p2-q2)``.

    Examples
    --------
    >>> [round(v, 6) for v in support_probs(longitudinal("l_osue", 6, 2.0, 1.0))]
    [0.5, 0.268941]
    """
    return lo.support_probs()


def support_gap(lo: LongitudinalOracle) -> float:
    """``p* - q*`` as the product ``(p1 - q1)(p2 - q2)``, the first factor by
    :func:`privspec.backends.oracles.pure.support_gap` (no cancellation when an epsilon is small).

    Examples
    --------
    >>> lo = longitudinal("l_osue", 6, 2.0, 1.0)
    >>> p, q = support_probs(lo)
    >>> abs(support_gap(lo) - (p - q)) < 1e-15
    True
    """
    return lo.support_gap()


def pair_probs(lo: LongitudinalOracle) -> PairProbs:
    """Probabilities that two categories ``v != w`` are both in the support (given ``X =
    v``: ``one``; given another x: ``neither``), for the off-diagonal of :func:`covariance`.

    UE kinds: given x the PRR bits are independent, and the IRR bits are independent
    given the PRR bits, so the report's bits are independent given x: ``p* q*`` and
    ``q*^2``.  L-GRR: a report is one category: 0.

    Examples
    --------
    >>> pair_probs(longitudinal("l_grr", 4, 2.0, 1.0))
    PairProbs(one=0.0, neither=0.0, xor=0.0)
    """
    return lo.pairs()


def covariance(lo: LongitudinalOracle, f: Sequence[float], n: float, conditional: bool = False) -> np.ndarray:
    """The ``d x d`` covariance of one collection's :func:`unbiased` estimate (unprojected).

    One collection is a pure protocol with :func:`support_probs` and :func:`pair_probs`,
    so Wang et al.'s covariance applies (as :func:`privspec.backends.oracles.pure.covariance`):
    ``conditional=False``, ``n`` respondents drawn from the population ``f`` (their PRRs
    fresh): diagonal ``lam (1 - lam) / (n (p*-q*)^2)`` with ``lam = q* + (p*-q*) f``;
    ``conditional=True``, given the table ``n f`` (both rounds' noise): diagonal ``[f
    p*(1-p*) + (1-f) q*(1-q*)] / (n (p*-q*)^2)``.  (Across collections of the same
    respondents the estimates are correlated through the shared PRR; that covariance is
    not this one: :func:`cross_collection_covariance`.)

    Examples
    --------
    >>> lo = longitudinal("l_sue", 3, 2.0, 1.0)
    >>> f = np.array([0.5, 0.3, 0.2])
    >>> pop, cond = covariance(lo, f, 100), covariance(lo, f, 100, conditional=True)
    >>> bool(np.allclose(pop - cond, (np.diag(f) - np.outer(f, f)) / 100))
    True
    """
    return lo.covariance(f, n, conditional)


def cross_collection_covariance(lo: LongitudinalOracle, f: Sequence[float], n: float,
                                conditional: bool = False) -> np.ndarray:
    """``Cov(f_hat_t, f_hat_s)``: the ``d x d`` covariance between the :func:`unbiased`
    estimates of two different collections ``t != s`` of the same respondents, whose
    values stay the same (so each keeps one PRR).

    Given a respondent's value x the two reports are independent given the memoized PRR
    ``B``, so the covariance of their supports is that of the IRR's means given B:
    ``Cov(Z_t, Z_s | x) = (p2 - q2)^2 Cov(b | x)``, with ``b`` the PRR's support (UE: B's
    bits, independent given x, so a diagonal ``pi (1 - pi)``; L-GRR: the indicator of B,
    ``diag(pi) - pi pi^T``), where ``pi = q1 + (p1 - q1) e_x``.  Summed over the table and
    divided by ``n^2 (p* - q*)^2 = n^2 (p1 - q1)^2 (p2 - q2)^2``, the IRR cancels:

    * ``conditional=True`` (given the table ``n f``), with ``delta = p1 - q1``:
      UE ``diag(f p1 (1 - p1) + (1 - f) q1 (1 - q1)) / (n delta^2)``; L-GRR
      ``[diag(q1 + delta f) - q1^2 J - q1 delta (1 f^T + f 1^T) - delta^2 diag(f)] / (n delta^2)``;
    * ``conditional=False`` (respondents drawn from ``f``): that plus the sampling term
      ``(diag(f) - f f^T) / n``, the same respondents' values being in both collections.

    It is below the one-collection :func:`covariance`: with ``Var(f_hat_t - f_hat_s) =
    2 (covariance - cross_collection_covariance)`` a change between collections is
    measured with only the IRR's noise (and the PRR's where values differ).  As eps_perm
    grows (p1 -> 1, q1 -> 0) the conditional part vanishes.

    Examples
    --------
    >>> lo = longitudinal("l_grr", 3, 2.0, 1.0)
    >>> f = np.array([0.5, 0.3, 0.2])
    >>> C = cross_collection_covariance(lo, f, 1000)
    >>> bool(np.all(np.diag(C) < np.diag(covariance(lo, f, 1000))))
    True
    >>> D = cross_collection_covariance(lo, f, 1000, conditional=True)
    >>> bool(np.allclose(C - D, (np.diag(f) - np.outer(f, f)) / 1000))
    True
    """
    return lo.cross_collection_covariance(f, n, conditional)


def change_covariance(lo: LongitudinalOracle, f: Sequence[float], n: float) -> np.ndarray:
    """``Cov(f_hat_t - f_hat_s)``, the covariance of the measured change between two
    collections ``t != s`` of the same respondents whose values stay the same:
    ``2 (covariance - cross_collection_covariance)``.  The respondents' sampling is
    common to both collections and cancels, so population and conditional forms agree,
    and it is computed from the conditional ones (UE's bits, independent given x, leave
    exact zeros off the diagonal).

    Examples
    --------
    >>> lo = longitudinal("l_osue", 4, 2.0, 1.0)
    >>> f = np.array([0.4, 0.3, 0.2, 0.1])
    >>> W = change_covariance(lo, f, 100)
    >>> bool(np.allclose(W, 2 * (covariance(lo, f, 100) - cross_collection_covariance(lo, f, 100))))
    True
    >>> float(W[0, 1])
    0.0
    """
    return lo.change_covariance(f, n)


def variance(lo: LongitudinalOracle, f: Any, n: float = 1, conditional: bool = False) -> Any:
    """``Var(f_hat_v)`` of one collection for categories of frequency ``f`` (a number or
    array): the diagonal of :func:`covariance`.

    ``conditional=False``: ``sig (1 - sig) / (n (p1-q1)^2 (p2-q2)^2)`` with ``sig = q* +
    (p1-q1)(p2-q2) f``, the probability that a report supports the category.  This is
    multi-freq-ldpy's ``VAR_Long_Pure(p1, q1, p2, q2, n, f)`` (Arcolezi et al.), whose
    ``sig = f (2 p1 p2 - 2 p1 q2 + 2 q2 - 1) + p2 q1 + q2 (1 - q1)`` writes ``p* - q*`` as
    ``2 p1 p2 - 2 p1 q2 + 2 q2 - 1``, which holds when ``q1 = 1 - p1`` and ``q2 = 1 - p2``
    (L-SUE): the two agree for every kind at ``f = 0`` (their default) and for L-SUE at
    every f; for L-OUE, L-OSUE and L-GRR at ``f > 0`` theirs is not the variance of their
    estimator (the Monte Carlo test checks ours).  ``conditional=True``: ``[f p*(1-p*) +
    (1-f) q*(1-q*)] / (n (p*-q*)^2)``.

    Examples
    --------
    >>> lo = longitudinal("l_oue", 6, 2.0, 1.0)
    >>> f = np.array([0.3, 0.2, 0.2, 0.1, 0.1, 0.1])
    >>> bool(np.allclose(variance(lo, f, 500), np.diag(covariance(lo, f, 500))))
    True
    """
    f = np.asarray(f, dtype=float)
    p, q = support_probs(lo)
    g2 = ((lo.p1 - lo.q1) * (lo.p2 - lo.q2)) ** 2
    if conditional:
        v = (f * p * (1 - p) + (1 - f) * q * (1 - q)) / (n * g2)
    else:
        sig = q + (lo.p1 - lo.q1) * (lo.p2 - lo.q2) * f
        v = sig * (1 - sig) / (n * g2)
    return float(v) if v.ndim == 0 else v


def likelihood_pair(lo: LongitudinalOracle) -> tuple[float, float]:
    """``(a, b)``: the likelihood of one collection's report for a category in / not in its
    support, up to a common factor (:func:`privspec.backends.oracles.pure.ibu`'s ``pair``).  A
    report is a pure protocol in ``p*, q*`` (:func:`support_probs`): the grr report's
    channel, or independent bits given x (unary encoding; the permanent bits are
    independent given x, and so are their instantaneous copies).

    Examples
    --------
    >>> a, b = likelihood_pair(longitudinal("l_grr", 4, 2.0, 1.0))
    >>> round(float(np.log(a / b)), 12)             # one report spends first
    1.0
    """
    return lo.likelihood_pair()


def unbiased(lo: LongitudinalOracle, C: Sequence[float], n: float, project: str = "none") -> np.ndarray:
    """``f_hat = (C/n - q*) / (p* - q*)`` from one collection's support counts ``C``
    (:func:`support_counts`), optionally projected onto the simplex (``clip``: negatives
    to 0 and rescaled, multi-freq-ldpy's ``MI_long``; ``euclidean``), as
    :func:`privspec.backends.oracles.pure.unbiased`.

    Examples
    --------
    >>> lo = longitudinal("l_grr", 3, 2.0, 1.0)
    >>> p, q = support_probs(lo)
    >>> C = 1000 * (q + (p - q) * np.array([0.6, 0.3, 0.1]))   # the expected counts
    >>> unbiased(lo, C, 1000).round(12).tolist()
    [0.6, 0.3, 0.1]
    """
    return lo.unbiased(C, n, project)


# ---- sampling --------------------------------------------------------------------------------------
def permanent(lo: LongitudinalOracle, codes: Sequence[int] | np.ndarray, rng: RowRandom) -> np.ndarray:
    """The memoized PRR of each row's value: the round-1 oracle's reports (grr codes, or UE
    bits packed as :func:`privspec.backends.oracles.pure.privatize` packs them), drawn by that
    oracle's sampler from randomness that depends on (key, row, value) and not on the
    collection.

    Memoization is per respondent *and value* (RAPPOR): the row ``r`` holding ``v`` draws
    at the counter row ``r d + v`` of its own stream (``rng.stream`` with tag 1 in bits
    32-62), so a respondent's PRRs of two values are independent.  Randomness shared
    between values would couple them: with one uniform per row, GRR's two PRRs would
    always differ by ``v' - v (mod d)``, and UE's would agree on every bit but ``v, v'``,
    revealing the change of value exactly however large ``eps_perm`` is.  ``rng``
    gives the key, the rows and the stream; its draw counter is neither read nor advanced,
    so one ``rng`` serves every collection.

    Examples
    --------
    >>> lo = longitudinal("l_grr", 5, 2.0, 1.0)
    >>> a = permanent(lo, np.array([0, 1, 2, 3]), RowRandom(9, rows=range(4)))
    >>> b = permanent(lo, np.array([2, 3]), RowRandom(9, rows=[2, 3]))
    >>> bool(np.array_equal(a[2:], b))
    True
    """
    return lo.permanent(codes, rng)


def instantaneous(lo: LongitudinalOracle, memo: np.ndarray, rng: RowRandom, collection: int = 0) -> np.ndarray:
    """The IRR of memoized PRRs (:func:`permanent`) at one collection: fresh randomness of
    that collection (stream tag ``collection + 2``): one uniform per row (GRR: keep the
    memoized code with probability ``p2``, else a uniform other) or per row and category
    (UE: bit ``v`` is 1 with probability ``p2`` if the memoized bit is 1, ``q2`` if it is
    0).  Every row makes the same draw whatever its value, in blocks that do not change it.

    Examples
    --------
    >>> lo = longitudinal("l_sue", 10, 3.0, 1.0)
    >>> memo = permanent(lo, np.array([0, 9]), RowRandom(4, rows=range(2)))
    >>> instantaneous(lo, memo, RowRandom(4, rows=range(2)), collection=5).shape
    (2, 2)
    """
    return lo.instantaneous(memo, rng, collection, chunk=_CHUNK)


def privatize(lo: LongitudinalOracle, codes: Sequence[int] | np.ndarray, rng: RowRandom,
              collection: int = 0) -> np.ndarray:
    """One collection's reports: the IRR (:func:`instantaneous`) of the memoized PRR
    (:func:`permanent`) of each row's value.

    A row's report is a function of (key, row index, value, collection) alone: the PRR
    of (key, row, value) is the same in every collection (memoized without storing it),
    the IRR is fresh per collection; the same whole or in pieces.  The respondent must
    keep its row index and the seed across collections.  Reports: L-GRR int codes; UE
    kinds ``(n, ceil(d/8))`` uint8 packed bits (:func:`report_oracle`'s format).

    Draws per row: the PRR's (one uniform for GRR; UE: :func:`privspec.backends.oracles.pure.
    privatize`'s ``ceil(d/4) + 3`` words) at a counter per (row, value), and the IRR's
    (1 uniform, or d).

    Examples
    --------
    >>> lo = longitudinal("l_oue", 10, 2.0, 1.0)
    >>> r = privatize(lo, np.array([0, 9, 3]), RowRandom(4, rows=range(3)), collection=2)
    >>> r.shape, r.dtype
    ((3, 2), dtype('uint8'))
    """
    return instantaneous(lo, permanent(lo, codes, rng), rng, collection)


def privatize_collections(lo: LongitudinalOracle, codes: Sequence[int] | np.ndarray, rng: RowRandom,
                          collections: Sequence[int]) -> list[np.ndarray]:
    """The reports of several collections of the same values: ``[privatize(lo, codes, rng,
    t) for t in collections]``, the PRR drawn once.

    Examples
    --------
    >>> lo = longitudinal("l_grr", 4, 2.0, 1.0)
    >>> x, rng = np.array([1, 2, 3]), RowRandom(2, rows=range(3))
    >>> both = privatize_collections(lo, x, rng, [0, 7])
    >>> bool(np.array_equal(both[1], privatize(lo, x, rng, 7)))
    True
    """
    memo = permanent(lo, codes, rng)
    return [instantaneous(lo, memo, rng, t) for t in collections]


def support_counts(lo: LongitudinalOracle, reports: Any, counts: Sequence[float] | None = None) -> np.ndarray:
    """``C_v``, the reports whose support contains ``v``:
    :func:`privspec.backends.oracles.pure.support_counts` of :func:`report_oracle`.

    Examples
    --------
    >>> support_counts(longitudinal("l_grr", 3, 2.0, 1.0), np.array([2, 0, 2]))
    array([1, 0, 2])
    """
    return lo.support_counts(reports, counts)


def format_reports(lo: LongitudinalOracle, reports: Any) -> np.ndarray:
    """The reports as text (:func:`privspec.backends.oracles.pure.format_reports` of
    :func:`report_oracle`: grr the decimal code, UE hex of the packed bits).

    Examples
    --------
    >>> format_reports(longitudinal("l_sue", 10, 2.0, 1.0), np.array([[5, 2]], dtype=np.uint8)).tolist()
    ['0502']
    """
    return lo.format_reports(reports)


def parse_reports(lo: LongitudinalOracle, strings: Sequence[Any]) -> tuple[Any, np.ndarray]:
    """``(reports of the valid strings, positions of the invalid ones)``:
    :func:`privspec.backends.oracles.pure.parse_reports` of :func:`report_oracle`.

    Examples
    --------
    >>> r, bad = parse_reports(longitudinal("l_grr", 3, 2.0, 1.0), ["2", "x", "3", "0"])
    >>> r.tolist(), bad.tolist()
    ([2, 0], [1, 2])
    """
    return lo.parse_reports(strings)


# ---- privacy accounting ----------------------------------------------------------------------------
def epsilon_of(lo: LongitudinalOracle, collections: float = 1) -> float:
    """The exact local-DP loss of ``t`` collections of one value: ``max over report
    sequences y_1..y_t and values x != x' of log Pr(y_1..y_t | x) / Pr(y_1..y_t | x')``.

    Given the memoized ``B``, the IRRs are i.i.d., so ``Pr(y | x) = sum_b Pr(B = b | x)
    prod_j Pr(y_j | b)``.

    * UE kinds: given x the bits are independent (:func:`pair_probs`) and only bits x
      and x' have laws that depend on which of the two is true, so the log ratio is a sum
      of two per-bit terms.  A bit whose t reports have s ones has ``Pr = pi p2^s
      (1-p2)^(t-s) + (1 - pi) q2^s (1-q2)^(t-s)``, ``pi = p1`` (the true value's bit) or
      ``q1``; the ratio of the two is ``(p1 L + 1 - p1)/(q1 L + 1 - q1)`` with ``L =
      (p2/q2)^s ((1-p2)/(1-q2))^(t-s)``, increasing in L and L in s: the maximum has bit x
      on in all t reports (``L = r^t``, ``r = p2/q2``) and bit x' off in all (``L =
      rho^t``, ``rho = (1-p2)/(1-q2)``)::

          eps(t) = log[(p1 r^t + 1-p1)/(q1 r^t + 1-q1)] + log[(q1 rho^t + 1-q1)/(p1 rho^t + 1-p1)]

    * L-GRR: with ``c_b`` the reports equal to b, ``Pr(y | x) = q2^t [(p1 - q1) r^(c_x) +
      q1 S]``, ``S = sum_b r^(c_b)``; the ratio is ``(p1 r^a + q1 T)/(q1 r^a + (p1-q1)
      r^b + q1 T)`` (``a = c_x, b = c_x'``, ``T = sum_{v != x} r^(c_v) >= d - 1``),
      falling in b and T and rising in ``r^a``: the maximum has every report equal to x::

          eps(t) = log[(p1 r^t + 1-p1)/(q1 r^t + 1-q1)]

    At t = 1 these are ``log(p*/q*)`` and ``log(p*(1-q*)/((1-p*)q*))``: ``eps_1`` (L-GRR
    with ``calibration="peer"``: less, see :func:`longitudinal`).  As ``t -> infinity``,
    ``r^t -> infinity`` and ``rho^t -> 0``: ``log(p1/q1)`` (GRR) and ``log(p1(1-q1)/
    ((1-p1)q1))`` (UE), the PRR's ``eps_perm``: ``collections=math.inf`` gives that limit.
    Computed in logs (any t).  :func:`epsilon_by_counts` finds the same maxima by
    enumeration.

    Examples
    --------
    >>> lo = longitudinal("l_sue", 6, 2.0, 1.0)
    >>> [round(epsilon_of(lo, t), 4) for t in (1, 2, 5, 10, float("inf"))]
    [1.0, 1.6116, 1.9872, 2.0, 2.0]
    """
    return lo.epsilon_of(collections)


def epsilon_by_counts(lo: LongitudinalOracle, collections: int) -> float:
    """:func:`epsilon_of` by enumeration of the reports' counts (a check of its maximizer;
    O(t) for UE, O(t^2) for L-GRR).

    The likelihood of t reports depends on them only through counts: per bit its number
    of ones (UE), or the reports equal to x, to x' and to the others (L-GRR; each kind's
    :meth:`~privspec.backends.oracles.memoized.LongitudinalOracle.epsilon_by_counts`).

    Examples
    --------
    >>> lo = longitudinal("l_grr", 4, 2.0, 1.0)
    >>> abs(epsilon_by_counts(lo, 5) - epsilon_of(lo, 5)) < 1e-12
    True
    """
    t = int(check_collections(collections))
    if not lo.q2 > 0:
        raise ValueError("epsilon_by_counts needs q2 > 0 (l_oue at max_eps_1 has q2 = 0: use epsilon_of)")
    return lo.epsilon_by_counts(t)


def epsilon_table(lo: LongitudinalOracle, T: int = 10) -> pd.DataFrame:
    """The loss of ``t = 1..T`` collections of one value (:func:`epsilon_of`) beside
    ``t eps_1``, what t *independent* ``eps_1``-LDP reports would cost.

    The loss rises with t (t reports are a post-processing of t + 1) and stays below
    ``eps_perm`` (they are a post-processing of the PRR), but ``t eps_1`` is no bound: the
    reports share the PRR, so sequential composition does not apply, and a strong PRR
    seen through weak IRRs can leak more than ``t eps_1`` (L-OUE at ``eps_perm = 10,
    eps_1 = 2.1``: 4.63 for two reports; L-GRR at d = 100, ``eps_perm = 4, eps_1 = 0.04``:
    3.54 for 50; both confirmed by enumeration in tests/test_oracles_longitudinal.py).

    Examples
    --------
    >>> epsilon_table(longitudinal("l_osue", 6, 2.0, 1.0), 3).round(4)
       collections  epsilon  independent
    0            1   1.0000          1.0
    1            2   1.6417          2.0
    2            3   1.8992          3.0
    """
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
        raise ValueError(f"T is an integer >= 1, not {T!r}")
    t = np.arange(1, int(T) + 1)
    return pd.DataFrame({"collections": t, "epsilon": [epsilon_of(lo, int(v)) for v in t],
                         "independent": t * lo.eps_1})
