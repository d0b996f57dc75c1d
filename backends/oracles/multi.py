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

import math
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np
from scipy import stats

from privspec.backends.oracles import pure as orc
from privspec.backends.oracles.pure import Oracle
from privspec.backends.core.rowrandom import RowRandom
from privspec.backends.core.projections import project as _project

__all__ = ["PROTOCOLS", "RSFD_VARIANTS", "SAMPLED", "MultiOracle", "MultiReports", "MultiStats", "multi_oracle",
           "amplified_epsilon", "rsfd_probs", "privatize", "statistics", "estimate", "covariance",
           "cross_covariance", "joint_covariance",
           "inverse_binomial_mean", "epsilon_of", "format_reports", "parse_reports", "column_names"]

#: the protocols of :func:`multi_oracle`
PROTOCOLS = ("spl", "smp", "rsfd")
#: RS+FD's variants: the oracle and the fake data
RSFD_VARIANTS = ("grr", "oue-z", "oue-r", "sue-z", "sue-r", "adp")
#: the name of SMP's column of sampled attributes (:func:`format_reports`)
SAMPLED = "sampled"

_FAKE = {"grr": ("grr", "uniform"), "oue-z": ("oue", "zero"), "oue-r": ("oue", "random"),
         "sue-z": ("sue", "zero"), "sue-r": ("sue", "random")}


# ---- the protocol ----------------------------------------------------------------------------------
def amplified_epsilon(epsilon: float, A: int) -> float:
    """RS+FD's ``eps' = ln(A (e^eps - 1) + 1)`` (the paper's amplification by sampling),
    by multi-freq-ldpy's numpy expression (so that its floats agree with theirs).

    Examples
    --------
    >>> round(amplified_epsilon(1.0, 3), 6)
    1.81724
    """
    return float(np.log(A * (np.exp(epsilon) - 1) + 1))


@dataclass(frozen=True)
class MultiOracle:
    """A multidimensional protocol: ``protocol`` (:data:`PROTOCOLS`), the per-attribute
    oracle ``kinds`` (``adp`` already resolved), domain sizes ``ds``, the total
    ``epsilon``, and for RS+FD its ``variant`` and per attribute the ``fakes`` (``uniform``,
    ``zero`` or ``random``).  Build it with :func:`multi_oracle`.

    Examples
    --------
    >>> mo = multi_oracle("spl", ("grr", "oue"), (3, 5), 2.0)
    >>> mo.A, mo.attribute_epsilon, [o.kind for o in mo.oracles]
    (2, 1.0, ['grr', 'oue'])
    """

    protocol: str
    kinds: tuple[str, ...]
    ds: tuple[int, ...]
    epsilon: float
    variant: str | None = None
    fakes: tuple[str, ...] | None = None

    @property
    def A(self) -> int:
        """The number of attributes."""
        return len(self.ds)

    @property
    def attribute_epsilon(self) -> float:
        """The epsilon of each attribute's oracle: ``eps / A`` (spl), ``eps`` (smp), ``eps'``
        (rsfd, :func:`amplified_epsilon`)."""
        if self.protocol == "spl":
            return self.epsilon / self.A          # multi-freq-ldpy's eps_spl = epsilon / d
        if self.protocol == "smp":
            return self.epsilon
        return amplified_epsilon(self.epsilon, self.A)

    @property
    def oracles(self) -> tuple[Oracle, ...]:
        """Each attribute's :class:`~privspec.backends.oracles.pure.Oracle` at
        :attr:`attribute_epsilon` (for RS+FD: the real report's)."""
        e = self.attribute_epsilon
        return tuple(orc.oracle(k, d, e) for k, d in zip(self.kinds, self.ds))


def _rsfd_adp(d: int, A: int, eps_amp: float) -> str:
    """multi-freq-ldpy's ``RSpFD_ADP_Client`` rule: RS+FD[GRR] when ``VAR_RSpFD_GRR <=
    VAR_RSpFD_UE_zero`` at ``n = 1, f = 0`` (OUE parameters), with their float expressions."""
    e = np.exp(eps_amp)
    p_grr = e / (e + d - 1)
    q_grr = (1 - p_grr) / (d - 1)
    p_ue, q_ue = 0.5, 1 / (e + 1)
    s_grr = (1 / A) * (q_grr + 0 * (p_grr - q_grr) + (A - 1) / d)
    s_ue = (1 / A) * (A * q_ue + 0 * (p_ue - q_ue))
    var_grr = (A ** 2 * s_grr * (1 - s_grr)) / (1 * (p_grr - q_grr) ** 2)
    var_ue = (A ** 2 * s_ue * (1 - s_ue)) / (1 * (p_ue - q_ue) ** 2)
    return "grr" if var_grr <= var_ue else "oue-z"


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
    A = len(ds_t)
    epsilon = orc.check_epsilon(epsilon)
    if protocol == "rsfd":
        if kinds is not None:
            raise ValueError(f"rsfd takes a variant (one of {', '.join(RSFD_VARIANTS)}), not kinds")
        if variant not in RSFD_VARIANTS:
            raise ValueError(f"unknown RS+FD variant {variant!r}: one of {', '.join(RSFD_VARIANTS)}")
        e_amp = amplified_epsilon(epsilon, A)
        per = [_rsfd_adp(d, A, e_amp) if variant == "adp" else variant for d in ds_t]
        mo = MultiOracle("rsfd", tuple(_FAKE[v][0] for v in per), ds_t, epsilon, variant,
                         tuple(_FAKE[v][1] for v in per))
        mo.oracles  # validates (e.g. a domain the oracle refuses)
        return mo
    if variant is not None:
        raise ValueError(f"a variant is a parameter of rsfd, not of {protocol}")
    kinds_t = (kinds,) * A if isinstance(kinds, str) else tuple(kinds) if kinds is not None else ()
    if len(kinds_t) != A:
        raise ValueError(f"one oracle kind for all attributes or one per attribute ({A}), not {kinds!r}")
    e_attr = epsilon / A if protocol == "spl" else epsilon
    resolved = tuple(orc.oracle(k, d, e_attr).kind for k, d in zip(kinds_t, ds_t))
    return MultiOracle(protocol, resolved, ds_t, epsilon)


def rsfd_probs(mo: MultiOracle, j: int) -> tuple[float, float, float, float]:
    """RS+FD's per-attribute pure-protocol constants ``(p_eff, q_eff, one_eff,
    neither_eff)`` of attribute ``j`` (module docstring): support probabilities given
    ``x = v`` / ``x != v``, and both-in-support probabilities of two categories given
    ``x`` is one of them / neither.

    Examples
    --------
    >>> mo = multi_oracle("rsfd", None, (4, 4, 4), 1.0, variant="grr")
    >>> p, q = orc.support_probs(mo.oracles[0])
    >>> pe, qe, one, neither = rsfd_probs(mo, 0)
    >>> bool(np.isclose(pe, (p + 2 / 4) / 3)), bool(np.isclose(qe, (q + 2 / 4) / 3)), one, neither
    (True, True, 0.0, 0.0)
    """
    if mo.protocol != "rsfd":
        raise ValueError("rsfd_probs is for the rsfd protocol")
    A = mo.A
    p, q = orc.support_probs(mo.oracles[j])
    one, neither, _ = orc.pair_probs(mo.oracles[j])
    phi, c = _fake_support(mo, j)
    return ((p + (A - 1) * phi) / A, (q + (A - 1) * phi) / A,
            (one + (A - 1) * c) / A, (neither + (A - 1) * c) / A)


def _fake_support(mo: MultiOracle, j: int) -> tuple[float, float]:
    """RS+FD's fake report on attribute ``j``: the probability ``phi`` that its support holds
    a given category and ``c`` that it holds two given ones (module docstring)."""
    o = mo.oracles[j]
    d, fake = o.d, mo.fakes[j]
    p, q = orc.support_probs(o)
    if fake == "uniform":      # a uniform value: in the support {y} with prob 1/d; never two
        return 1.0 / d, 0.0
    if fake == "zero":         # every bit 1 with prob q, independently
        return q, q * q
    one, neither, _ = orc.pair_probs(o)   # the oracle applied to a uniform value
    return p / d + (1 - 1 / d) * q, (2 / d) * one + (1 - 2 / d) * neither


# ---- reports ---------------------------------------------------------------------------------------
class MultiReports(NamedTuple):
    """Collected reports.  ``values[j]``: attribute ``j``'s reports, in the format of
    :func:`privspec.backends.oracles.pure.privatize` for its oracle; one per respondent (spl,
    rsfd) or, for smp, one per respondent who sampled ``j``, in row order.  ``attribute``:
    smp's sampled attribute per respondent (None otherwise: RS+FD's sampled attribute is
    what the fake data hide, so it is never kept)."""

    values: tuple
    attribute: np.ndarray | None = None


class MultiStats(NamedTuple):
    """The sufficient statistics of :func:`estimate`: per attribute the support counts
    ``C_j`` (:func:`privspec.backends.oracles.pure.support_counts` of its reports) and the
    number of its reports ``n_j`` (n for spl and rsfd)."""

    counts: tuple
    n: tuple


def _uniform_index(u: np.ndarray, m: int) -> np.ndarray:
    """A uniform index in ``[0, m)`` from uniforms on (0, 1): ``floor(u m)`` (the uniforms
    have 53 bits, so each index's probability is ``1/m`` within ``2^-53``)."""
    return np.minimum((u * m).astype(np.int64), m - 1)


def _rowwise(mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a`` where ``mask`` (per row) else ``b``; reports may be 1-D or (n, width)."""
    return np.where(mask.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)


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
    x = np.asarray(codes)
    if x.ndim != 2 or x.shape[1] != mo.A:
        raise ValueError(f"codes is an (n, {mo.A}) array: one column per attribute")
    if x.size and not np.issubdtype(x.dtype, np.integer):
        raise ValueError("codes are integer category codes")
    x = x.astype(np.int64, copy=False)
    n = len(x)
    if x.size and (x.min() < 0 or np.any(x.max(axis=0) >= np.asarray(mo.ds))):
        raise ValueError(f"column j holds codes in [0, d_j), d = {mo.ds}")
    if len(rng) != n:
        raise ValueError(f"rng has {len(rng)} rows for {n} tuples")
    oracles = mo.oracles
    if mo.protocol == "spl":
        return MultiReports(tuple(orc.privatize(o, x[:, j], rng) for j, o in enumerate(oracles)))
    s = _uniform_index(rng.random(n), mo.A)
    if mo.protocol == "smp":
        values = tuple(orc.privatize(o, x[:, j], rng)[s == j] for j, o in enumerate(oracles))
        return MultiReports(values, s)
    values = []
    for j, o in enumerate(oracles):
        real = orc.privatize(o, x[:, j], rng)
        if mo.fakes[j] == "uniform":
            fake = _uniform_index(rng.random(n), o.d)
        elif mo.fakes[j] == "random":
            fake = orc.privatize(o, _uniform_index(rng.random(n), o.d), rng)
        else:
            fake = orc.privatize(o, np.zeros(n, dtype=np.int64), rng)
            _, q = orc.support_probs(o)
            bit0 = (rng.random(n) < q).astype(np.uint8)
            fake[:, 0] = (fake[:, 0] & np.uint8(0xFE)) | bit0
        values.append(_rowwise(s == j, real, fake))
    return MultiReports(tuple(values))


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
    counts = tuple(orc.support_counts(o, v) for o, v in zip(mo.oracles, reports.values))
    if mo.protocol == "smp":
        n = tuple(len(v) for v in reports.values)
    else:
        lengths = {len(v) for v in reports.values}
        if len(lengths) > 1:
            raise ValueError(f"{mo.protocol}: every attribute has one report per respondent")
        n = (lengths.pop(),) * mo.A
    return MultiStats(counts, n)


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
    out = []
    for j, o in enumerate(mo.oracles):
        C, n = np.asarray(st.counts[j], dtype=float), st.n[j]
        if mo.protocol == "rsfd":
            if C.shape != (o.d,) or not n > 0:
                raise ValueError(f"attribute {j}: {o.d} counts and n > 0")
            pe, qe, _, _ = rsfd_probs(mo, j)
            out.append(_project((C / n - qe) / (pe - qe), project))
        elif n == 0:
            out.append(np.full(o.d, np.nan))  # no respondent sampled this attribute
        else:
            out.append(orc.unbiased(o, C, n, project=project))
    return out


# ---- covariance ------------------------------------------------------------------------------------
def inverse_binomial_mean(n: int, pi: float) -> float:
    """``E[1/N | N >= 1]`` for ``N ~ Binomial(n, pi)``, summed over the pmf within 40
    standard deviations of the mean (the rest weighs below 1e-300).  About ``1/(n pi) (1 +
    (1 - pi)/(n pi))``.

    Examples
    --------
    >>> round(inverse_binomial_mean(1000, 1 / 3) * 1000 / 3, 5)
    1.00201
    """
    n = int(n)
    if n < 1 or not 0 < pi <= 1:
        raise ValueError("n >= 1 and 0 < pi <= 1")
    mu, sd = n * pi, math.sqrt(n * pi * (1 - pi))
    lo, hi = max(1, int(mu - 40 * sd) - 1), min(n, int(mu + 40 * sd) + 2)
    k = np.arange(lo, hi + 1)
    w = stats.binom.pmf(k, n, pi)
    return float(np.sum(w / k) / -math.expm1(n * math.log1p(-pi)) if pi < 1 else 1.0 / n)


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
    if len(f) != mo.A:
        raise ValueError(f"f holds one distribution per attribute ({mo.A})")
    if not n >= 1:
        raise ValueError("n >= 1")
    if n_attribute is not None and (mo.protocol != "smp" or len(n_attribute) != mo.A):
        raise ValueError("n_attribute (one count per attribute) is smp's split")
    out = []
    for j, o in enumerate(mo.oracles):
        fj = np.asarray(f[j], dtype=float)
        if fj.shape != (o.d,) or not abs(fj.sum() - 1.0) <= 1e-6:
            raise ValueError(f"f[{j}] is a distribution over {o.d} categories")
        if mo.protocol == "spl":
            out.append(orc.covariance(o, fj, n, conditional))
        elif mo.protocol == "rsfd":
            out.append(orc.pure_covariance(*rsfd_probs(mo, j), fj, n, conditional))
        else:
            D = np.diag(fj) - np.outer(fj, fj)
            if n_attribute is not None:
                nj = n_attribute[j]
                if nj < 1:
                    out.append(np.full((o.d, o.d), np.nan))
                    continue
                inv, spread = 1.0 / nj, ((n - nj) / (nj * (n - 1)) if n > 1 else 0.0)
            else:
                inv = inverse_binomial_mean(n, 1.0 / mo.A)
                spread = (n * inv - 1) / (n - 1) if n > 1 else 0.0
            one = orc.covariance(o, fj, 1, conditional)
            out.append(one * inv + D * spread if conditional else one * inv)
    return out


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
    if j == l or not (0 <= j < mo.A and 0 <= l < mo.A):
        raise ValueError(f"two different attributes in [0, {mo.A})")
    if not n >= 1:
        raise ValueError("n >= 1")
    fj, fl = np.asarray(f_j, dtype=float), np.asarray(f_l, dtype=float)
    dj, dl = mo.ds[j], mo.ds[l]
    if fj.shape != (dj,) or fl.shape != (dl,):
        raise ValueError(f"f_j and f_l are distributions over {dj} and {dl} categories")
    D = None
    if joint is not None:
        P = np.asarray(joint, dtype=float)
        if P.shape != (dj, dl) or not abs(P.sum() - 1.0) <= 1e-6:
            raise ValueError(f"joint is a {dj} x {dl} table of probabilities")
        if not (np.allclose(P.sum(axis=1), fj, atol=1e-9) and np.allclose(P.sum(axis=0), fl, atol=1e-9)):
            raise ValueError("joint's margins differ from f_j and f_l")
        D = P - np.outer(fj, fl)

    def need() -> np.ndarray:
        if D is None:
            raise ValueError(f"{mo.protocol}'s {'conditional' if conditional else 'population'} cross-attribute "
                             "covariance needs the attributes' joint table")
        return D

    if mo.protocol == "spl":
        return np.zeros((dj, dl)) if conditional else need() / n
    if mo.protocol == "smp":
        if not conditional:
            return np.zeros((dj, dl))
        return -need() / (n - 1) if n > 1 else np.full((dj, dl), np.nan)
    A = mo.A
    (pj, qj), (pl, ql) = orc.support_probs(mo.oracles[j]), orc.support_probs(mo.oracles[l])
    phj, phl = _fake_support(mo, j)[0], _fake_support(mo, l)[0]
    mu_j, mu_l = qj + (pj - qj) * fj, ql + (pl - ql) * fl
    both = (np.outer(mu_j, np.full(dl, phl)) + np.outer(np.full(dj, phj), mu_l) + (A - 2) * phj * phl) / A
    cov_z = both - np.outer(mu_j + (A - 1) * phj, mu_l + (A - 1) * phl) / A ** 2
    pop = A ** 2 * cov_z / (n * (pj - qj) * (pl - ql))
    return pop - need() / n if conditional else pop


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
def _rsfd_ratio_terms(mo: MultiOracle, j: int) -> tuple[float, Any]:
    """RS+FD, attribute j: ``Pr(y | x) = prod_i Pr_fake_i(y_i) / A * sum_i T_i`` with ``T_i =
    Pr_real_i(y_i | x_i) / Pr_fake_i(y_i)``.  Returns the smallest ``T_j`` (over y_j and
    x_j) and the function ``S -> max (S + T_j(y, x)) / (S + T_j(y, x'))`` (over y_j and
    two values x_j, x'_j).  grr: ``T = d p`` or ``d q``; ``-z``: ``p/q`` or ``(1-p)/(1-q)``;
    ``-r``: ``R(y_x) / mean_u R(y_u)`` (``R``: the ``-z`` ratio), smallest ``d/((d-1) e' +
    1)`` (bit x off, every other on); the largest ratio has bit x on, bit x' off and no
    other on (the ratio falls as the mean grows)."""
    o = mo.oracles[j]
    p, q = orc.support_probs(o)
    d, fake = o.d, mo.fakes[j]
    if fake == "uniform":
        hi, lo = d * p, d * q
        return lo, lambda S: (S + hi) / (S + lo)
    r_hi, r_lo = p / q, (1 - p) / (1 - q)
    if fake == "zero":
        return r_lo, lambda S: (S + r_hi) / (S + r_lo)
    e = r_hi / r_lo
    D = e + d - 1                                   # mean_u R (in units of r_lo) times d, one bit on
    return d / ((d - 1) * e + 1), lambda S: (S * D + d * e) / (S * D + d)


def epsilon_of(mo: MultiOracle, neighbours: str = "any") -> float:
    """The local-DP epsilon of one respondent's whole report, ``max_y log(Pr(y | x) /
    Pr(y | x'))``, from the mechanism's probabilities (the oracles'
    :func:`privspec.backends.oracles.pure.epsilon_of`).

    ``neighbours="any"`` (local DP: any two tuples ``x, x'``):

    * spl: the sum of the attributes' (sequential composition, attained by a report that
      is each oracle's worst): ``eps``.
    * smp: the largest attribute's: ``eps`` (the sampled index does not depend on x).
    * rsfd: ``Pr(y | x)`` is proportional to ``sum_j T_j(y_j, x_j)`` (:func:`_rsfd_ratio_terms`)
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
    if neighbours not in ("any", "attribute"):
        raise ValueError(f"neighbours is 'any' or 'attribute', not {neighbours!r}")
    eps = [orc.epsilon_of(o) for o in mo.oracles]
    if mo.protocol == "spl":
        return float(sum(eps)) if neighbours == "any" else float(max(eps))
    if mo.protocol == "smp":
        return float(max(eps))
    if neighbours == "any":
        return float(max(eps))
    terms = [_rsfd_ratio_terms(mo, j) for j in range(mo.A)]
    lows = np.array([t[0] for t in terms])
    return float(max(math.log(terms[j][1](lows.sum() - lows[j])) for j in range(mo.A)))


# ---- text form -------------------------------------------------------------------------------------
def column_names(mo: MultiOracle, names: Sequence[str] | None = None) -> list[str]:
    """The columns of :func:`format_reports`: the attributes' names (default ``x0 ..``)
    and, for smp, :data:`SAMPLED`.

    Examples
    --------
    >>> column_names(multi_oracle("smp", "grr", (2, 2), 1.0), ["age", "sex"])
    ['age', 'sex', 'sampled']
    """
    names = [f"x{j}" for j in range(mo.A)] if names is None else [str(s) for s in names]
    if len(names) != mo.A or len(set(names)) != mo.A or (mo.protocol == "smp" and SAMPLED in names):
        raise ValueError(f"{mo.A} distinct attribute names (not {SAMPLED!r} for smp)")
    return names + ([SAMPLED] if mo.protocol == "smp" else [])


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
    cols = column_names(mo, names)
    text = [orc.format_reports(o, v) for o, v in zip(mo.oracles, reports.values)]
    if mo.protocol != "smp":
        return {c: t for c, t in zip(cols, text)}
    s = np.asarray(reports.attribute, dtype=np.int64)
    out: dict[str, np.ndarray] = {}
    for j, t in enumerate(text):
        where = s == j
        if int(where.sum()) != len(t):
            raise ValueError(f"attribute {j}: {len(t)} reports but {int(where.sum())} rows sampled it")
        col = np.full(len(s), "", dtype=t.dtype if len(t) else "<U1")
        col[where] = t
        out[cols[j]] = col
    out[SAMPLED] = s.astype(str)
    return out


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
    cols = column_names(mo, names)
    missing = [c for c in cols if c not in columns]
    if missing:
        raise ValueError(f"missing columns {missing}")
    lengths = {len(columns[c]) for c in cols}
    if len(lengths) > 1:
        raise ValueError("the columns have different lengths")
    m = lengths.pop()
    if mo.protocol == "smp":
        s_val, s_bad = orc.parse_reports(orc.oracle("grr", mo.A, 1.0), columns[SAMPLED])
        s = np.full(m, -1, dtype=np.int64)
        s[np.setdiff1d(np.arange(m), s_bad)] = s_val
        ok = s >= 0
        parsed = []
        for j, o in enumerate(mo.oracles):
            rows = np.flatnonzero(s == j)
            col = columns[cols[j]]
            vals, bad = orc.parse_reports(o, [col[i] for i in rows])
            ok[rows[bad]] = False
            good = np.ones(len(rows), dtype=bool)
            good[bad] = False
            parsed.append((rows[good], vals))
        values = tuple(v for _, v in parsed)
        return MultiReports(values, s[ok]), np.flatnonzero(~ok)
    ok = np.ones(m, dtype=bool)
    parsed = []
    for j, o in enumerate(mo.oracles):
        vals, bad = orc.parse_reports(o, columns[cols[j]])
        okj = np.ones(m, dtype=bool)
        okj[bad] = False
        ok &= okj
        parsed.append((okj, vals))
    values = tuple(vals[ok[okj]] for okj, vals in parsed)
    return MultiReports(values), np.flatnonzero(~ok)
