"""Multidimensional frequency estimation under local DP: several categorical attributes
per respondent, collected with the single-attribute oracles of
:mod:`privspec.backends.oracles.pure`.

Arcolezi, Couchot, Al Bouna and Xiao, "Random Sampling Plus Fake Data: Multidimensional
Frequency Estimates With Local Differential Privacy" (CIKM 2021; "the paper" below;
multi-freq-ldpy's ``mdim_freq_est``) compare three protocols for ``A`` attributes of
domain sizes ``d_1 .. d_A`` and a budget ``eps``:

========  =========================================================================
protocol  what one respondent sends
========  =========================================================================
spl       every attribute ``j``, each through its oracle at ``eps / A`` (split the
          budget; sequential composition)
smp       one attribute ``j`` drawn uniformly, and ``oracle_j(x_j)`` at ``eps``
          (sample; the server learns ``j``)
rsfd      every attribute: the sampled one through its oracle at the amplified
          ``eps' = ln(A (e^eps - 1) + 1)``, the others fake data (random sampling plus
          fake data; the server does not learn which one is real)
========  =========================================================================

RS+FD's variants (multi-freq-ldpy's clients): ``grr`` (fake: a uniform value),
``oue-z`` / ``sue-z`` (fake: the unary encoding of the zero vector, i.e. every bit 1 with
probability q), ``oue-r`` / ``sue-r`` (fake: the unary encoding of a uniform random
value), ``adp`` (per attribute ``grr`` or ``oue-z``, whichever has the smaller variance at
``f = 0``, their ``RSpFD_ADP_Client`` rule).

**RS+FD is a pure protocol per attribute.**  A respondent's report on attribute ``j``
is the real one with probability ``1/A`` and a fake one otherwise, so the support
indicator ``Z_v`` of category ``v`` has, with ``phi`` the probability that a fake report's
support contains ``v`` (grr ``1/d``, ``-z`` ``q``, ``-r`` ``q + (p - q)/d``)::

    Pr(Z_v = 1 | x = v) = p_eff = (p + (A - 1) phi) / A
    Pr(Z_v = 1 | x = u) = q_eff = (q + (A - 1) phi) / A        (u != v)

with ``p, q`` the oracle's at ``eps'``: the paper's unbiased estimators (its RS+FD[GRR],
[OUE-z], [OUE-r] estimators, multi-freq-ldpy's ``RSpFD_*_Aggregator_MI`` before the
clipping) are exactly ``f_hat = (C/n - q_eff)/(p_eff - q_eff)`` (Wang et al. Eq. (1) with
these constants), and its variances (``Variance_RSpFD.py``: ``A^2 s (1 - s) / (n (p -
q)^2)`` with ``s = (q + f (p - q) + (A-1) phi) / A``) are the diagonal of the *population*
covariance ``lam (1 - lam) / (n (p_eff - q_eff)^2)``, ``lam = q_eff + (p_eff - q_eff) f``.
Two categories are both in a support with probability ``one_eff = (one + (A-1) c)/A``
given ``x`` is one of them and ``neither_eff = (neither + (A-1) c)/A`` otherwise (``one,
neither``: :func:`~privspec.backends.oracles.pure.pair_probs` of the oracle; ``c``: both in a
fake support: grr 0, ``-z`` ``q^2``, ``-r`` ``(2/d) p q + (1 - 2/d) q^2``), which gives
the full covariance by Wang et al.'s pure-protocol formulas (:func:`covariance`).

**Cross-attribute covariances** (:func:`cross_covariance`, :func:`joint_covariance`):
SPL, population ``(P_jl - f_j f_l^T)/n`` (``P_jl`` the two attributes' joint table; the
reports are independent given ``x``, so only the true values' covariance remains),
conditional on the table 0.  SMP, population 0 (disjoint i.i.d. respondents), given
the table ``-(P_jl - f_j f_l^T)/(n - 1)`` (disjoint parts of one table).  RS+FD,
population ``A^2 Cov(Z_j, Z_l)/(n (p_j - q_j)(p_l - q_l))`` with ``E[Z_j Z_l^T] = (mu_j
phi_l^T + phi_j mu_l^T + (A - 2) phi_j phi_l^T)/A`` (``mu_j = q_j + (p_j - q_j) f_j``): at
most one attribute is real, so it needs the marginals only (and is not 0: sampling makes
attributes' noise dependent); given the table, that minus ``(P_jl - f_j f_l^T)/n``.

**Privacy** (:func:`epsilon_of`).  SPL spends ``eps`` (composition), SMP ``eps`` (a report
is one oracle's at ``eps``, labelled by a data-independent index).  RS+FD: the paper's
privacy theorem derives ``eps`` from amplification by sampling, which bounds the ratio for
two tuples that differ in **one attribute** (``neighbours="attribute"``: ``(A - 1 +
e^eps')/A = e^eps`` for grr with equal domain sizes and for the ``-z`` variants).  Two
tuples that differ in every attribute (the usual local-DP definition: any two inputs,
``neighbours="any"``) are separated by ``eps'``: with the report ``y = x`` on every
attribute, ``Pr(y | x) / Pr(y | x') = sum_j d_j p_j / sum_j d_j q_j = e^eps'`` for grr.
So :func:`epsilon_of` returns ``eps'`` for RS+FD by default.  With unequal domain sizes
(grr) or random fake data (``-r``) even the one-attribute bound exceeds ``eps``; see
:func:`epsilon_of`.

Examples
--------
>>> import numpy as np
>>> from privspec.backends.core.rowrandom import RowRandom
>>> mo = multi_oracle("rsfd", None, (3, 4), 1.0, variant="grr")
>>> rng = np.random.default_rng(0)
>>> x = np.column_stack([rng.choice(3, 4000, p=[.6, .3, .1]), rng.choice(4, 4000)])
>>> reports = privatize(mo, x, RowRandom(1, rows=range(len(x))))
>>> est = estimate(mo, reports)
>>> [e.shape for e in est], bool(abs(est[0][0] - 0.6) < 0.15)
([(3,), (4,)], True)
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from privspec.backends.oracles.protocol import check_epsilon
from privspec.backends.oracles.multidim import (RSFD, SAMPLED, SMP, SPL, MultiOracle, MultiReports, MultiStats,
                                                amplified_epsilon, inverse_binomial_mean)
from privspec.backends.core.rowrandom import RowRandom

__all__ = ["PROTOCOLS", "RSFD_VARIANTS", "SAMPLED", "MultiOracle", "MultiReports", "MultiStats", "multi_oracle",
           "amplified_epsilon", "rsfd_probs", "privatize", "statistics", "estimate", "covariance",
           "cross_covariance", "joint_covariance",
           "inverse_binomial_mean", "epsilon_of", "format_reports", "parse_reports", "column_names"]

#: the protocols by the spec's name (:mod:`privspec.backends.oracles.multidim`): a class and a line here
MULTI: dict[str, type[MultiOracle]] = {"spl": SPL, "smp": SMP, "rsfd": RSFD}
#: the protocols of :func:`multi_oracle`
PROTOCOLS = tuple(MULTI)
#: RS+FD's variants: the oracle and the fake data
RSFD_VARIANTS = RSFD.VARIANTS


def multi_oracle(protocol: str, kinds: str | Sequence[str] | None, ds: Sequence[int], epsilon: float,
                 variant: str | None = None) -> MultiOracle:
    """A validated :class:`MultiOracle`.

    Parameters
    ----------
    protocol : {"spl", "smp", "rsfd"}
    kinds : str or sequence of str or None
        spl/smp: the oracle of every attribute (one kind) or of each (one per attribute),
        among :data:`privspec.backends.oracles.pure.KINDS` (``adp`` is resolved per attribute
        at its epsilon, multi-freq-ldpy's rule).  rsfd: None (the variant says it).
    ds : sequence of int
        The attributes' domain sizes (at least two attributes, each ``d >= 2``).
    epsilon : float
        The budget of one respondent (> 0, finite).
    variant : str, optional
        rsfd only: one of :data:`RSFD_VARIANTS`.

    Raises
    ------
    ValueError
        For an unknown protocol, kind or variant, fewer than two attributes, a kind list
        of the wrong length, kinds given to rsfd or a variant to spl/smp, and whatever
        :func:`privspec.backends.oracles.pure.oracle` refuses.

    Examples
    --------
    >>> multi_oracle("smp", "adp", (3, 40), 1.0).kinds
    ('grr', 'oue')
    >>> mo = multi_oracle("rsfd", None, (3, 40), 1.0, variant="adp")
    >>> mo.kinds, mo.fakes
    (('grr', 'oue'), ('uniform', 'zero'))
    >>> multi_oracle("rsfd", "grr", (3, 4), 1.0)
    Traceback (most recent call last):
    ...
    ValueError: rsfd takes a variant (one of grr, oue-z, oue-r, sue-z, sue-r, adp), not kinds
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}: one of {', '.join(PROTOCOLS)}")
    ds_t = tuple(ds) if not isinstance(ds, (int, np.integer)) else (ds,)
    if len(ds_t) < 2:
        raise ValueError(f"a multidimensional protocol has at least two attributes, not {len(ds_t)}")
    for d in ds_t:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
            raise ValueError(f"every attribute needs an integer domain size >= 2, not {d!r}")
    ds_t = tuple(int(d) for d in ds_t)
    epsilon = check_epsilon(epsilon)
    return MULTI[protocol].build(kinds, ds_t, epsilon, variant)

def rsfd_probs(mo: MultiOracle, j: int) -> tuple[float, float, float, float]:
    """RS+FD's per-attribute pure-protocol constants ``(p_eff, q_eff, one_eff,
    neither_eff)`` of attribute ``j`` (module docstring): support probabilities given
    ``x = v`` / ``x != v``, and both-in-support probabilities of two categories given
    ``x`` is one of them / neither.

    Examples
    --------
    >>> mo = multi_oracle("rsfd", None, (4, 4, 4), 1.0, variant="grr")
    >>> p, q = mo.oracles[0].support_probs()
    >>> pe, qe, one, neither = rsfd_probs(mo, 0)
    >>> bool(np.isclose(pe, (p + 2 / 4) / 3)), bool(np.isclose(qe, (q + 2 / 4) / 3)), one, neither
    (True, True, 0.0, 0.0)
    """
    if not isinstance(mo, RSFD):
        raise ValueError("rsfd_probs is for the rsfd protocol")
    return mo.probs(j)

# ---- reports ---------------------------------------------------------------------------------------
def privatize(mo: MultiOracle, codes: np.ndarray, rng: RowRandom) -> MultiReports:
    """Privatize each row's tuple ``codes[i] = (x_1, ..., x_A)``: :class:`MultiReports`.

    Every row makes the same calls on ``rng`` whatever its values and its sampled
    attribute, so a row's report is a function of (seed, row index, tuple) alone and a
    file privatizes to the same reports whole or in pieces.  For that (and to stay in
    numpy's C Philox, which draws contiguous rows ten times faster than a row subset)
    smp privatizes every attribute of every row and keeps the sampled one, and rsfd draws
    both a real and a fake report for every attribute of every row: ``A`` and 2 times the
    oracle work, with no Python loop over rows.

    Draws, in order: spl: each attribute's oracle (its draws, see
    :func:`privspec.backends.oracles.pure.privatize`); smp and rsfd: one uniform (the sampled
    attribute, ``floor(u A)``), then per attribute its oracle on the true values and, for
    rsfd, its fake data: grr one uniform (a uniform value); ``-r`` one uniform (a uniform
    value) and the oracle on it; ``-z`` the oracle on value 0 and one uniform to redraw
    bit 0 with probability q (then every bit is 1 with probability q, independently).

    Examples
    --------
    >>> mo = multi_oracle("smp", ("grr", "oue"), (3, 10), 1.0)
    >>> r = privatize(mo, np.array([[0, 9], [2, 3], [1, 1]]), RowRandom(4, rows=range(3)))
    >>> r.attribute.shape, sum(len(v) for v in r.values)
    ((3,), 3)
    """
    return mo.privatize(codes, rng)


def statistics(mo: MultiOracle, reports: MultiReports) -> MultiStats:
    """The sufficient statistics (:class:`MultiStats`) of collected reports: per
    attribute the support counts of its reports under its oracle, and their number.

    Examples
    --------
    >>> mo = multi_oracle("spl", "grr", (2, 3), 1.0)
    >>> st = statistics(mo, MultiReports((np.array([0, 1, 1]), np.array([2, 2, 0]))))
    >>> [c.tolist() for c in st.counts], st.n
    ([[1, 2], [1, 0, 2]], (3, 3))
    """
    if len(reports.values) != mo.A:
        raise ValueError(f"reports for {len(reports.values)} attributes, not {mo.A}")
    counts = tuple(o.support_counts(v) for o, v in zip(mo.oracles, reports.values))
    return MultiStats(counts, mo.report_numbers(reports.values))


def estimate(mo: MultiOracle, data: MultiReports | MultiStats, project: str = "none") -> list[np.ndarray]:
    """Each attribute's unbiased frequency estimate, optionally projected onto the simplex
    (``clip``: multi-freq-ldpy's MI; ``euclidean``), from reports or their statistics.

    spl: ``(C_j/n - q_j)/(p_j - q_j)`` at ``eps/A``; smp: the same with the ``n_j``
    reports of attribute ``j`` at ``eps`` (NaN where ``n_j = 0``); rsfd: ``(C_j/n -
    q_eff)/(p_eff - q_eff)`` (:func:`rsfd_probs`; the paper's RS+FD estimators).

    Examples
    --------
    >>> mo = multi_oracle("rsfd", None, (2, 2), 1.0, variant="oue-z")
    >>> st = MultiStats((np.array([300, 200]), np.array([250, 250])), (1000, 1000))
    >>> [e.round(4).tolist() for e in estimate(mo, st)]
    [[0.7344, 0.1016], [0.418, 0.418]]
    """
    st = statistics(mo, data) if isinstance(data, MultiReports) else data
    return [mo.attribute_estimate(j, o, np.asarray(st.counts[j], dtype=float), st.n[j], project)
            for j, o in enumerate(mo.oracles)]


# ---- covariance ------------------------------------------------------------------------------------
def covariance(mo: MultiOracle, f: Sequence[Sequence[float]], n: int, conditional: bool = False,
               n_attribute: Sequence[int] | None = None) -> list[np.ndarray]:
    """Each attribute's ``d_j x d_j`` covariance of :func:`estimate` (unprojected), at the
    marginals ``f[j]`` and ``n`` respondents.

    ``conditional=False``: respondents drawn i.i.d. from the population; ``True``: given
    the collected table (its marginals ``f``), privacy noise (and smp's sampling) only.
    The cross-attribute blocks: :func:`cross_covariance`, :func:`joint_covariance`.

    * spl: the oracle's (:func:`privspec.backends.oracles.pure.covariance`) at ``eps/A``, n.
    * smp, given ``n_attribute`` (the split ``n_j``, conditioned on): population
      ``Sigma_j / n_j`` (``Sigma_j``: the oracle's population covariance of one report;
      the n_j respondents are an i.i.d. sample, whoever sampled j); conditional on the
      table: the oracle's conditional ``K_j / n_j`` plus the variance of the sampled
      respondents' empirical distribution (a simple random sample of n_j of the n rows),
      ``(diag f - f f^T)(n - n_j)/(n_j (n - 1))``.  Without ``n_attribute``: averaged over
      ``n_j ~ Binomial(n, 1/A)`` given ``n_j >= 1`` (the estimate is unbiased given n_j,
      so no between-split term): ``Sigma_j E[1/n_j]`` and ``K_j E[1/n_j] + (diag f - f
      f^T)(n E[1/n_j] - 1)/(n - 1)``, with the exact ``E[1/n_j]``
      (:func:`inverse_binomial_mean`), not the first-order ``A/n`` (whose relative error
      ``(A - 1)/n`` is small but free to avoid).
    * rsfd: the pure-protocol formulas with :func:`rsfd_probs` (module docstring); the
      diagonal of the population form is the paper's variance (multi-freq-ldpy's
      ``VAR_RSpFD_GRR``, ``VAR_RSpFD_UE_zero``, ``VAR_RSpFD_UE_rnd``).

    In every case population minus conditional is the multinomial term ``(diag f - f
    f^T)/n`` (smp: ``(1 - E[1/n_j]) (diag f - f f^T)/(n - 1)``, the same to first order).

    Examples
    --------
    >>> mo = multi_oracle("rsfd", None, (3, 3), 1.0, variant="grr")
    >>> f = [np.array([.5, .3, .2]), np.array([1 / 3] * 3)]
    >>> pop, cond = covariance(mo, f, 1000), covariance(mo, f, 1000, conditional=True)
    >>> bool(np.allclose(pop[0] - cond[0], (np.diag(f[0]) - np.outer(f[0], f[0])) / 1000))
    True
    """
    return mo.covariance(f, n, conditional, n_attribute)


def cross_covariance(mo: MultiOracle, j: int, l: int, f_j: Sequence[float], f_l: Sequence[float], n: int,
                     conditional: bool = False, joint: Any = None) -> np.ndarray:
    """The ``d_j x d_l`` covariance of attribute ``j``'s and attribute ``l``'s estimates
    (:func:`estimate`, unprojected) from ``n`` respondents, ``j != l``.

    ``joint`` is the ``d_j x d_l`` table ``P_jl`` of the two attributes (the population's,
    or given the collected table its own), ``D = P_jl - f_j f_l^T`` the covariance of one
    respondent's two one-hot answers.  Population (``conditional=False``) and
    conditional on the collected table:

    * spl: ``D / n`` and 0.  Given x the attributes are randomized independently, so
      only the answers' own dependence remains, and none given the table.
    * smp: 0 and ``-D / (n - 1)``.  In the population the two estimates come from
      disjoint sets of i.i.d. respondents (whatever the split).  Given the table, the
      respondents who sampled ``j`` and those who sampled ``l`` are disjoint parts of
      one table, so their empirical distributions are negatively dependent: a random
      partition gives ``-D/(n-1)`` whatever the sizes ``n_j, n_l >= 1``.
    * rsfd: ``A^2 Cov(Z_j, Z_l) / (n (p_j - q_j)(p_l - q_l))`` (``Z``: one respondent's
      support indicators; ``p, q`` the oracles' at eps') with ``E[Z_j Z_l^T] = (mu_j
      phi_l^T + phi_j mu_l^T + (A - 2) phi_j phi_l^T) / A``, ``mu_j = q_j + (p_j - q_j)
      f_j`` (at most one of the two is real, the fake one independent of everything):
      the marginals suffice, no joint; and it is not 0, sampling makes the attributes'
      noise dependent.  Given the table: that minus ``D / n``.

    In each case population minus conditional is ``D / n`` (smp: ``D / (n - 1)``), as
    within one attribute (:func:`covariance`).  A form that needs ``joint`` raises
    ValueError without it.

    Examples
    --------
    >>> mo = multi_oracle("spl", "grr", (2, 2), 1.0)
    >>> P = np.array([[0.4, 0.1], [0.1, 0.4]])            # two agreeing answers
    >>> cross_covariance(mo, 0, 1, [.5, .5], [.5, .5], 100, joint=P).round(6).tolist()
    [[0.0015, -0.0015], [-0.0015, 0.0015]]
    >>> rs = multi_oracle("rsfd", None, (2, 2), 1.0, variant="grr")     # no joint needed
    >>> cross_covariance(rs, 0, 1, [.8, .2], [.7, .3], 100).round(6).tolist()
    [[-0.0006, 0.0006], [0.0006, -0.0006]]
    """
    return mo.cross_covariance(j, l, f_j, f_l, n, conditional, joint)


def joint_covariance(mo: MultiOracle, f: Sequence[Sequence[float]], n: int, conditional: bool = False,
                     joints: dict | None = None) -> np.ndarray:
    """The covariance of all attributes' estimates stacked (``sum d_j`` square): the
    blocks of :func:`covariance` on the diagonal, :func:`cross_covariance` off it.
    ``joints[(j, l)]`` (``j < l``) holds the pairwise tables a form needs; smp's diagonal
    blocks are averaged over the split.

    Examples
    --------
    >>> mo = multi_oracle("rsfd", None, (2, 3), 1.0, variant="oue-z")
    >>> V = joint_covariance(mo, [[.5, .5], [.2, .3, .5]], 1000)
    >>> V.shape, bool(np.allclose(V, V.T))
    ((5, 5), True)
    """
    joints = joints or {}
    blocks = covariance(mo, f, n, conditional)
    at = np.concatenate([[0], np.cumsum(mo.ds)])
    V = np.zeros((at[-1], at[-1]))
    for j in range(mo.A):
        V[at[j]:at[j + 1], at[j]:at[j + 1]] = blocks[j]
        for l in range(j + 1, mo.A):
            C = cross_covariance(mo, j, l, f[j], f[l], n, conditional, joints.get((j, l)))
            V[at[j]:at[j + 1], at[l]:at[l + 1]] = C
            V[at[l]:at[l + 1], at[j]:at[j + 1]] = C.T
    return V


# ---- privacy ---------------------------------------------------------------------------------------
def epsilon_of(mo: MultiOracle, neighbours: str = "any") -> float:
    """The local-DP epsilon of one respondent's whole report, ``max_y log(Pr(y | x) /
    Pr(y | x'))``, from the mechanism's probabilities (the oracles'
    :func:`privspec.backends.oracles.pure.epsilon_of`).

    ``neighbours="any"`` (local DP: any two tuples ``x, x'``):

    * spl: the sum of the attributes' (sequential composition, attained by a report that
      is each oracle's worst): ``eps``.
    * smp: the largest attribute's: ``eps`` (the sampled index does not depend on x).
    * rsfd: ``Pr(y | x)`` is proportional to ``sum_j T_j(y_j, x_j)`` (:meth:`~privspec.backends.oracles.fakes.Fake.ratio_terms`)
      and each ``T_j`` ranges over a factor ``e^eps'``, reached at the same y for every j:
      ``eps' = ln(A (e^eps - 1) + 1)``, **not** eps: the paper's amplification by
      sampling holds for tuples that differ in one attribute only.

    ``neighbours="attribute"`` (``x, x'`` differ in one attribute ``j``): spl ``max_j eps/A``;
    smp ``eps``; rsfd ``max_j log max (S_j + T_j(y, x)) / (S_j + T_j(y, x'))`` with ``S_j
    = sum_{i != j} min T_i``: ``log((A - 1 + e^eps')/A) = eps`` for grr with equal domain
    sizes and for ``-z``; more than eps for grr with unequal domain sizes (the ratio is
    ``1 + (e^eps' - 1) d_j q_j / sum_i d_i q_i``) and for ``-r`` (a fake random one-hot
    report can make the others' terms small).

    Examples
    --------
    >>> round(epsilon_of(multi_oracle("spl", ("grr", "oue", "ss"), (3, 4, 5), 1.5)), 12)
    1.5
    >>> mo = multi_oracle("rsfd", None, (4, 4, 4), 1.0, variant="grr")
    >>> round(epsilon_of(mo), 6), round(epsilon_of(mo, "attribute"), 12)
    (1.81724, 1.0)
    """
    return mo.epsilon_of(neighbours)


# ---- text form -------------------------------------------------------------------------------------
def column_names(mo: MultiOracle, names: Sequence[str] | None = None) -> list[str]:
    """The columns of :func:`format_reports`: the attributes' names (default ``x0 ..``)
    and, for smp, :data:`SAMPLED`.

    Examples
    --------
    >>> column_names(multi_oracle("smp", "grr", (2, 2), 1.0), ["age", "sex"])
    ['age', 'sex', 'sampled']
    """
    return mo.column_names(names)


def format_reports(mo: MultiOracle, reports: MultiReports, names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Reports as text columns: one per attribute
    (:func:`privspec.backends.oracles.pure.format_reports`), and for smp the sampled attribute
    (decimal) with empty strings in the other attributes' columns.

    Examples
    --------
    >>> mo = multi_oracle("smp", ("grr", "oue"), (3, 10), 1.0)
    >>> r = MultiReports((np.array([2]), np.array([[5, 2]], dtype=np.uint8)), np.array([1, 0]))
    >>> {k: v.tolist() for k, v in format_reports(mo, r).items()}
    {'x0': ['', '2'], 'x1': ['0502', ''], 'sampled': ['1', '0']}
    """
    return mo.format_reports(reports, names)


def parse_reports(mo: MultiOracle, columns: dict[str, Sequence[Any]],
                  names: Sequence[str] | None = None) -> tuple[MultiReports, np.ndarray]:
    """The reports of :func:`format_reports`'s columns and the positions of the invalid
    rows (any attribute's string invalid for spl and rsfd; for smp an invalid sampled
    index or an invalid string in the sampled attribute's column, the other columns being
    ignored): ``(reports of the valid rows, bad positions)``; nothing is raised for bad
    data.

    Examples
    --------
    >>> mo = multi_oracle("spl", "grr", (3, 2), 1.0)
    >>> r, bad = parse_reports(mo, {"x0": ["0", "2", "5"], "x1": ["1", "x", "0"]})
    >>> [v.tolist() for v in r.values], bad.tolist()
    ([[0], [1]], [1, 2])
    """
    return mo.parse_reports(columns, names)
