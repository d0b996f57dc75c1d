"""Longitudinal frequency oracles (privspec.backends.oracles.longitudinal): L-GRR, L-SUE
(basic RAPPOR), L-OUE, L-OSUE.

0. Parameters and closed forms: each kind's second round solves its one-report equation;
   the covariance equals the one computed from the enumerated mechanism.
1. Monte Carlo: R = 2,000 simulated surveys of n = 2,000 respondents (d = 6, eps_perm = 2,
   eps_1 = 1, a non-uniform f), all privatized in one vectorized call per kind; the
   empirical covariance of :func:`unbiased` against :func:`covariance`, population form
   (fresh respondents per survey) and conditional form (one fixed table).  Tolerances:

   * trace within 5% (its Wishart standard deviation ``sqrt(2 ||Sigma||_F^2 / (R-1))`` is
     asserted below 2.5% of the trace, so 5% is >= 2 of them; it is ~1.3% here);
   * each diagonal entry: ``(R-1) S_vv / Sigma_vv ~ chi2(R-1)`` for normal estimates (each
     a mean of 2,000 reports), inside its central ``1 - 1e-4`` interval (about +-12%; 48
     entries, so a correct covariance fails by chance with probability ~0.5%);
   * each off-diagonal entry within 4.5 of its Wishart standard deviations
     ``sqrt((s_vv s_ww + s_vw^2)/(R-1))``; each mean within 4.5 standard errors.
2. Memoization: the PRR of (seed, row, value) is shared by every collection, the IRR is
   fresh per collection, a respondent's PRRs of two values are independent, and pieces
   privatize as the whole.
3. Peers: multi-freq-ldpy's ``L_*_Client`` reports (their Python source, numpy's global
   generator seeded) through our estimator equal their ``L_*_Aggregator_MI`` to 1e-9; their
   parameters and ``VAR_Long_Pure`` reproduced.
4. Privacy: :func:`epsilon_of` against a brute-force enumeration of report sequences, its
   limits, and an empirical audit (Clopper-Pearson, as tests/test_privacy_audit.py): one
   collection (lower bound <= eps_1 and >= 0.95 eps_1) and ten collections of the same
   PRR (lower bound <= the exact loss of ten collections <= eps_perm, and >= 0.97
   eps_perm; the events' exact log ratios are >= 1.98 and their approximate 95% lower
   bounds >= 1.97 at N = 10^6).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from privspec.backends.oracles import pure as orc
from privspec.backends.oracles import longitudinal as ol
from privspec.backends.oracles import sampling
from privspec.backends.core.rowrandom import RowRandom

KINDS = ol.KINDS
D, EPS_PERM, EPS_1 = 6, 2.0, 1.0
F = np.array([0.35, 0.25, 0.15, 0.12, 0.08, 0.05])


def one_report_epsilon(lo: ol.LongitudinalOracle) -> float:
    """``log(p*/q*)`` (GRR) or ``log(p*(1-q*)/((1-p*)q*))`` (UE) from the composed probabilities."""
    p, q = ol.support_probs(lo)
    return math.log(p / q) if lo.kind == "l_grr" else math.log(p * (1 - q) / ((1 - p) * q))


# ---- 0. parameters, validation, exact covariance ---------------------------------------------------
GRID = [(2, 0.5, 0.1), (3, 2.0, 1.0), (6, 2.0, 1.0), (10, 4.0, 0.5), (40, 1.0, 0.9), (5, 8.0, 7.5)]


@pytest.mark.parametrize("d, eps_perm, eps_1", GRID)
def test_second_round_solves_the_one_report_equation(d: int, eps_perm: float, eps_1: float) -> None:
    for kind in KINDS:
        if eps_1 > ol.max_eps_1(kind, eps_perm):
            with pytest.raises(ValueError, match="l_oue cannot reach"):
                ol.longitudinal(kind, d, eps_perm, eps_1)
            continue
        lo = ol.longitudinal(kind, d, eps_perm, eps_1)
        assert 0 <= lo.q2 < lo.p2 <= 1 and 0 < lo.q1 < lo.p1 < 1
        assert one_report_epsilon(lo) == pytest.approx(eps_1, rel=1e-10)
        p, q = ol.support_probs(lo)
        assert p == pytest.approx(lo.p1 * lo.p2 + (1 - lo.p1) * lo.q2, rel=1e-13)
        assert q == pytest.approx(lo.q1 * lo.p2 + (1 - lo.q1) * lo.q2, rel=1e-13)
        # the composed protocols: L-GRR is GRR at eps_1, L-SUE SUE at eps_1, L-OSUE OUE at eps_1
        if kind == "l_grr":
            a = math.exp(eps_1)
            assert (p, q) == pytest.approx((a / (a + d - 1), 1 / (a + d - 1)), rel=1e-12)
            assert lo.q2 == pytest.approx((1 - lo.p2) / (d - 1), rel=1e-12)
        elif kind == "l_sue":
            assert (p, q) == pytest.approx(orc.support_probs(orc.oracle("sue", d, eps_1)), rel=1e-12)
        elif kind == "l_osue":
            assert (p, q) == pytest.approx(orc.support_probs(orc.oracle("oue", d, eps_1)), rel=1e-12)
        # the rounds as one-round oracles: the PRR exactly, the IRR to rounding
        first, second = ol.round_oracles(lo)
        assert orc.support_probs(first) == pytest.approx((lo.p1, lo.q1), rel=1e-15)
        assert first.epsilon == eps_perm and orc.epsilon_of(first) == pytest.approx(eps_perm, rel=1e-12)
        assert orc.support_probs(second) == pytest.approx((lo.p2, lo.q2), rel=1e-9)
        assert ol.report_oracle(lo) == second
    # L-GRR, multi-freq-ldpy's calibration: the binary equation; the loss below eps_1 when d > 2
    peer = ol.longitudinal("l_grr", d, eps_perm, eps_1, calibration="peer")
    p1, q1, p2, q2 = peer.p1, peer.q1, peer.p2, peer.q2
    assert (p1 * p2 + q1 * q2) / (p1 * q2 + q1 * p2) == pytest.approx(math.exp(eps_1), rel=1e-12)
    if d == 2:
        assert (peer.p2, peer.q2) == pytest.approx((ol.longitudinal("l_grr", d, eps_perm, eps_1).p2,
                                                    ol.longitudinal("l_grr", d, eps_perm, eps_1).q2), rel=1e-12)
    else:
        assert one_report_epsilon(peer) < eps_1 * (1 - 1e-6)
        assert ol.epsilon_of(peer, 1) == pytest.approx(one_report_epsilon(peer), rel=1e-12)


def test_validation() -> None:
    for args, match in [(("l_xx", 4, 2.0, 1.0), "unknown longitudinal"), (("l_grr", 1, 2.0, 1.0), "d >= 2"),
                        (("l_grr", 2.0, 2.0, 1.0), "d >= 2"), (("l_grr", True, 2.0, 1.0), "d >= 2"),
                        (("l_sue", 4, math.inf, 1.0), "eps_perm must be"), (("l_sue", 4, 2.0, 0.0), "eps_1 must be"),
                        (("l_sue", 4, 2.0, -1.0), "eps_1 must be"), (("l_sue", 4, 2.0, math.nan), "eps_1 must be"),
                        (("l_sue", 4, "x", 1.0), "eps_perm must be"), (("l_osue", 4, 2.0, 2.0), "must be below"),
                        (("l_grr", 4, 1.0, 3.0), "must be below"), (("l_oue", 4, 1.0, 0.9), "l_oue cannot reach")]:
        with pytest.raises(ValueError, match=match):
            ol.longitudinal(*args)
    with pytest.raises(ValueError, match="unknown calibration"):
        ol.longitudinal("l_grr", 4, 2.0, 1.0, calibration="paper")
    # L-OUE up to its ceiling: q2 -> 0 there; just past it, refused
    top = ol.max_eps_1("l_oue", 1.0)
    assert top == pytest.approx(math.log((2 * math.e + 1) / 3))
    assert 0 <= ol.longitudinal("l_oue", 4, 1.0, top * (1 - 1e-9)).q2 < 1e-8
    with pytest.raises(ValueError):
        ol.longitudinal("l_oue", 4, 1.0, top * (1 + 1e-9))
    lo = ol.longitudinal("l_sue", 4, 2.0, 1.0)
    with pytest.raises(ValueError, match="f has 4"):
        ol.covariance(lo, np.ones(3) / 3, 10)
    with pytest.raises(ValueError, match="distribution"):
        ol.covariance(lo, np.ones(4), 10)
    with pytest.raises(ValueError, match="C has 4"):
        ol.unbiased(lo, [1, 2, 3], 10)
    rng = RowRandom(1, rows=range(3))
    for bad in (-1, 1.0, True, 1 << 40):
        with pytest.raises(ValueError, match="collection"):
            ol.privatize(lo, np.array([0, 1, 2]), rng, collection=bad)
    with pytest.raises(ValueError, match="codes"):
        ol.privatize(lo, np.array([0, 1, 4]), rng)
    with pytest.raises(ValueError, match="rows"):
        ol.privatize(lo, np.array([0, 1]), rng)
    for bad in (0, 1.5):
        with pytest.raises(ValueError, match="collections"):
            ol.epsilon_of(lo, bad)


def channel_moments(lo: ol.LongitudinalOracle) -> tuple[np.ndarray, np.ndarray]:
    """``E[Z | x]`` (d x d) and ``E[Z Z^T | x]`` (d x d x d) of one report's support
    indicators, by enumerating the memoized value B and the report (small d)."""
    d = lo.d
    if lo.kind == "l_grr":
        K1 = np.full((d, d), lo.q1)
        np.fill_diagonal(K1, lo.p1)               # K1[x, b]
        K2 = np.full((d, d), lo.q2)
        np.fill_diagonal(K2, lo.p2)               # K2[b, y]
        P = K1 @ K2                               # Pr(y | x): Z is the one-hot of y
        return P, np.stack([np.diag(P[x]) for x in range(d)])
    Bs = np.array(list(itertools.product([0, 1], repeat=d)), dtype=float)
    m1, m2 = np.zeros((d, d)), np.zeros((d, d, d))
    for x in range(d):
        pi = np.full(d, lo.q1)
        pi[x] = lo.p1
        for B in Bs:
            pB = np.prod(np.where(B == 1, pi, 1 - pi))
            for Y in Bs:
                py = np.prod(np.where(B == 1, np.where(Y == 1, lo.p2, 1 - lo.p2), np.where(Y == 1, lo.q2, 1 - lo.q2)))
                m1[x] += pB * py * Y
                m2[x] += pB * py * np.outer(Y, Y)
    return m1, m2


@pytest.mark.parametrize("kind", KINDS)
def test_covariance_equals_the_enumerated_mechanism(kind: str) -> None:
    for calibration in (("tight", "peer") if kind == "l_grr" else ("tight",)):
        lo = ol.longitudinal(kind, 4, 1.5, 0.7, calibration)
        f, n = np.array([0.4, 0.3, 0.2, 0.1]), 250
        m1, m2 = channel_moments(lo)
        p, q = ol.support_probs(lo)
        # every report's support: p* for the true value, q* for another
        assert np.allclose(m1, q + (p - q) * np.eye(4), rtol=0, atol=1e-13)
        one, neither, _ = ol.pair_probs(lo)
        assert np.allclose(m2[0, 0, 1], one, atol=1e-13) and np.allclose(m2[0, 2, 3], neither, atol=1e-13)
        scale = n * (p - q) ** 2
        mean = f @ m1
        pop = np.tensordot(f, m2, axes=1) - np.outer(mean, mean)
        cond = np.tensordot(f, m2 - np.einsum("xi,xj->xij", m1, m1), axes=1)
        assert np.allclose(ol.covariance(lo, f, n), pop / scale, rtol=1e-10, atol=1e-15)
        assert np.allclose(ol.covariance(lo, f, n, conditional=True), cond / scale, rtol=1e-10, atol=1e-15)
        assert np.allclose(ol.variance(lo, f, n), np.diag(pop) / scale, rtol=1e-10)
        assert np.allclose(ol.variance(lo, f, n, conditional=True), np.diag(cond) / scale, rtol=1e-10)
        # the estimator is unbiased: the expected counts give f back
        assert np.allclose(ol.unbiased(lo, n * mean, n), f, atol=1e-12)


def cross_moments(lo: ol.LongitudinalOracle) -> np.ndarray:
    """``E[Z_t Z_s^T | x]`` (d x d x d) of two collections' supports of one respondent, by
    enumerating the shared memoized B: the reports are independent given B, so it is
    ``sum_B Pr(B | x) E[Z | B] E[Z | B]^T``."""
    d = lo.d
    g = lo.p2 - lo.q2
    out = np.zeros((d, d, d))
    for x in range(d):
        if lo.kind == "l_grr":
            states = [(lo.p1 if b == x else lo.q1, lo.q2 + g * np.eye(d)[b]) for b in range(d)]
        else:
            pi = np.full(d, lo.q1)
            pi[x] = lo.p1
            states = [(np.prod(np.where(B == 1, pi, 1 - pi)), lo.q2 + g * B)
                      for B in np.array(list(itertools.product([0, 1], repeat=d)), dtype=float)]
        for prob, mean in states:
            out[x] += prob * np.outer(mean, mean)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_cross_collection_covariance_equals_the_enumerated_mechanism(kind: str) -> None:
    for eps_perm, eps_1 in ((1.5, 0.7), (4.0, 0.5)):
        lo = ol.longitudinal(kind, 4, eps_perm, eps_1)
        f, n = np.array([0.4, 0.3, 0.2, 0.1]), 250
        m1, _ = channel_moments(lo)
        m2 = cross_moments(lo)
        p, q = ol.support_probs(lo)
        scale = n * (p - q) ** 2
        mean = f @ m1
        pop = (np.tensordot(f, m2, axes=1) - np.outer(mean, mean)) / scale
        cond = np.tensordot(f, m2 - np.einsum("xi,xj->xij", m1, m1), axes=1) / scale
        assert np.allclose(ol.cross_collection_covariance(lo, f, n), pop, rtol=1e-10, atol=1e-15)
        assert np.allclose(ol.cross_collection_covariance(lo, f, n, conditional=True), cond, rtol=1e-10, atol=1e-15)
        # below one collection's covariance: the IRR's noise is not shared (L-GRR's
        # estimates sum to 1, so both are 0 along the ones vector)
        gap = ol.covariance(lo, f, n) - ol.cross_collection_covariance(lo, f, n)
        assert np.all(np.linalg.eigvalsh(gap) > -1e-15) and np.all(np.diag(gap) > 0)


# ---- 1. Monte Carlo covariance ---------------------------------------------------------------------
R, N_MC = 2000, 2000


def survey_estimates(lo: ol.LongitudinalOracle, x: np.ndarray, seed: int, collection: int) -> np.ndarray:
    """``(R, d)`` unbiased estimates of R surveys of N_MC rows each (one big privatize)."""
    reps = ol.privatize(lo, x.ravel(), RowRandom(seed, rows=range(x.size)), collection=collection)
    if lo.kind == "l_grr":
        survey = np.repeat(np.arange(R), N_MC)
        C = np.bincount(survey * lo.d + reps, minlength=R * lo.d).reshape(R, lo.d)
    else:
        C = np.empty((R, lo.d), dtype=np.int64)
        block = 250
        for r in range(0, R, block):
            bits = np.unpackbits(reps[r * N_MC:(r + block) * N_MC], axis=1, count=lo.d, bitorder="little")
            C[r:r + block] = bits.reshape(-1, N_MC, lo.d).sum(axis=1)
    for r in (0, R - 1):   # the per-survey counts are those of support_counts
        assert np.array_equal(ol.support_counts(lo, reps[r * N_MC:(r + 1) * N_MC]), C[r])
    return np.array([ol.unbiased(lo, c, N_MC) for c in C])


def check_covariance(est: np.ndarray, V: np.ndarray) -> None:
    dof = R - 1
    S = np.cov(est.T)
    assert np.abs(est.mean(axis=0) - F).max() < 4.5 * np.sqrt(np.diag(V) / R).max()
    # trace within 5%: its Wishart sd is below 2.5% of it
    assert math.sqrt(2 * (V ** 2).sum() / dof) / np.trace(V) < 0.025
    assert np.trace(S) == pytest.approx(np.trace(V), rel=0.05)
    # diagonal: the central 1 - 1e-4 interval of chi2(R-1)/(R-1)
    lo_, hi_ = stats.chi2.ppf([0.5e-4, 1 - 0.5e-4], dof) / dof
    ratio = np.diag(S) / np.diag(V)
    assert np.all((ratio > lo_) & (ratio < hi_)), ratio
    # off-diagonal: within 4.5 Wishart standard deviations
    sd = np.sqrt((np.outer(np.diag(V), np.diag(V)) + V ** 2) / dof)
    off = ~np.eye(len(V), dtype=bool)
    assert np.abs((S - V) / sd)[off].max() < 4.5


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.slow
def test_covariance_monte_carlo(kind: str) -> None:
    lo = ol.longitudinal(kind, D, EPS_PERM, EPS_1)
    seed = 100 + KINDS.index(kind)
    # population: every survey draws its respondents from F (fresh PRRs: distinct rows)
    x = np.random.default_rng(seed).choice(D, size=(R, N_MC), p=F)
    check_covariance(survey_estimates(lo, x, seed, collection=0), ol.covariance(lo, F, N_MC))
    # conditional: the same table in every survey, fresh noise of both rounds
    table = np.repeat(np.arange(D), np.rint(F * N_MC).astype(int))
    est = survey_estimates(lo, np.tile(table, (R, 1)), seed + 50, collection=3)
    check_covariance(est, ol.covariance(lo, F, N_MC, conditional=True))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.slow
def test_cross_collection_covariance_monte_carlo(kind: str) -> None:
    """Two collections of the same respondents (one PRR each, fresh IRRs): the empirical
    covariance between their estimates over R surveys against
    :func:`cross_collection_covariance`, entrywise within 4.5 of its standard deviations
    ``sqrt((s_tt,vv s_ss,ww + s_ts,vw^2) / (R-1))`` (a cross-covariance is small beside
    the variances that make its noise: its trace has a standard deviation of 4-6% here);
    its trace above 4.5 of them (the PRR is shared); and the covariance of the change
    ``f_hat_t - f_hat_s`` (:func:`change_covariance`, ``2 (covariance -
    cross_collection_covariance)`` in both forms), within 5% in
    trace (its Wishart sd asserted below 2.5%) and per diagonal entry inside the central
    ``1 - 1e-4`` interval of chi2(R-1)/(R-1)."""
    lo = ol.longitudinal(kind, D, EPS_PERM, EPS_1)
    seed = 300 + KINDS.index(kind)
    table = np.repeat(np.arange(D), np.rint(F * N_MC).astype(int))
    cases = ((np.random.default_rng(seed).choice(D, size=(R, N_MC), p=F), False),   # population
             (np.tile(table, (R, 1)), True))                                      # given the table
    for x, conditional in cases:
        # the same seed and rows: the same PRRs; collections 2 and 5: independent IRRs
        a = survey_estimates(lo, x, seed, collection=2)
        b = survey_estimates(lo, x, seed, collection=5)
        V = ol.cross_collection_covariance(lo, F, N_MC, conditional=conditional)
        one = ol.covariance(lo, F, N_MC, conditional=conditional)
        dof = R - 1
        S = (a - a.mean(axis=0)).T @ (b - b.mean(axis=0)) / dof
        sd = np.sqrt((np.outer(np.diag(one), np.diag(one)) + V ** 2) / dof)
        assert np.abs((S - V) / sd).max() < 4.5, (S - V) / sd
        trace_sd = math.sqrt(((np.outer(np.diag(one), np.diag(one)) + V ** 2) / dof)[np.diag_indices(D)].sum())
        assert abs(np.trace(S) - np.trace(V)) < 4.5 * trace_sd
        assert np.trace(S) > 4.5 * trace_sd        # the shared PRR is seen
        change = np.cov((a - b).T)
        W = ol.change_covariance(lo, F, N_MC)
        assert np.allclose(W, 2 * (one - V), rtol=1e-12, atol=1e-18)
        assert math.sqrt(2 * (W ** 2).sum() / dof) / np.trace(W) < 0.025
        assert np.trace(change) == pytest.approx(np.trace(W), rel=0.05)
        lo_, hi_ = stats.chi2.ppf([0.5e-4, 1 - 0.5e-4], dof) / dof
        ratio = np.diag(change) / np.diag(W)
        assert np.all((ratio > lo_) & (ratio < hi_)), ratio


# ---- 2. memoization --------------------------------------------------------------------------------
def unpack(lo: ol.LongitudinalOracle, reps: np.ndarray) -> np.ndarray:
    return np.unpackbits(reps, axis=1, count=lo.d, bitorder="little").astype(bool)


def within(k: float, n: int, p: float, z: float = 5.0) -> bool:
    """``k`` successes of ``n`` within z binomial standard deviations of ``n p``."""
    return abs(k - n * p) <= z * math.sqrt(n * p * (1 - p))


@pytest.mark.parametrize("kind", KINDS)
def test_prr_is_shared_by_collections_and_irr_is_fresh(kind: str) -> None:
    lo = ol.longitudinal(kind, D, EPS_PERM, EPS_1)
    n, T = 20_000, 6
    x = np.random.default_rng(7).choice(D, size=n, p=F)
    rng = RowRandom(8, rows=range(n))
    memo = ol.permanent(lo, x, rng)
    days = ol.privatize_collections(lo, x, rng, range(T))
    rng.random(n)                      # the caller's own draws do not move the memo
    for t in (0, T - 1):
        assert np.array_equal(ol.privatize(lo, x, rng, collection=t), days[t])
        assert np.array_equal(ol.instantaneous(lo, memo, RowRandom(8, rows=range(n)), t), days[t])
    assert np.array_equal(ol.permanent(lo, x, RowRandom(8, rows=range(n))), memo)
    assert not np.array_equal(days[0], days[1])
    # given the memo the reports of every collection follow the IRR, independently across
    # collections: a memoized bit (or code) kept with p2, a report agreeing between two
    # collections with p2^2 + (1-p2)^2 (UE bit on) or p2^2 + (d-1) q2^2 (GRR)
    if kind == "l_grr":
        keep = sum(int((day == memo).sum()) for day in days)
        assert within(keep, n * T, lo.p2)
        agree = sum(int((days[s] == days[t]).sum()) for s in range(T) for t in range(s))
        assert within(agree, n * T * (T - 1) // 2, lo.p2 ** 2 + (D - 1) * lo.q2 ** 2, z=8)
        # with a PRR redrawn per collection two reports would agree with p*^2 + (d-1) q*^2
        p, q = ol.support_probs(lo)
        assert agree / (n * T * (T - 1) / 2) > p ** 2 + (D - 1) * q ** 2 + 0.05
        # the PRR is the round-1 oracle's law: the true code kept with p1
        assert within(int((memo == x).sum()), n, lo.p1)
    else:
        B = unpack(lo, memo)
        ys = [unpack(lo, day) for day in days]
        on = sum(int((y & B).sum()) for y in ys)
        off = sum(int((y & ~B).sum()) for y in ys)
        assert within(on, T * int(B.sum()), lo.p2) and within(off, T * int((~B).sum()), lo.q2)
        both = sum(int(((ys[s] == ys[t]) & B).sum()) for s in range(T) for t in range(s))
        assert within(both, T * (T - 1) // 2 * int(B.sum()), lo.p2 ** 2 + (1 - lo.p2) ** 2, z=8)
        rows = np.arange(n)
        assert within(int(B[rows, x].sum()), n, lo.p1)
        assert within(int(B[rows, (x + 1) % D].sum()), n, lo.q1)


def test_nearly_identity_irr_repeats_the_memoized_value() -> None:
    # eps_1 close to eps_perm: the IRR keeps the memoized code with p2 ~ 1, so two
    # collections agree almost everywhere, while each report is the truth only with p* ~ p1
    lo = ol.longitudinal("l_grr", D, EPS_PERM, EPS_PERM - 1e-3)
    assert lo.p2 > 0.999
    n = 50_000
    x = np.random.default_rng(1).choice(D, size=n, p=F)
    rng = RowRandom(2, rows=range(n))
    a, b = ol.privatize(lo, x, rng, 0), ol.privatize(lo, x, rng, 1)
    assert (a == b).mean() > 0.997
    assert abs((a == x).mean() - lo.p1) < 0.01


@pytest.mark.parametrize("kind", KINDS)
def test_prrs_of_two_values_are_independent(kind: str) -> None:
    # memoization per value: the same respondent's PRRs of v and w share no randomness
    lo = ol.longitudinal(kind, D, EPS_PERM, EPS_1)
    n = 40_000
    v, w = np.zeros(n, dtype=np.int64), np.full(n, 3)
    rng = RowRandom(5, rows=range(n))
    bv, bw = ol.permanent(lo, v, rng), ol.permanent(lo, w, rng)
    if kind == "l_grr":
        # one uniform per row would make B(w) - B(v) = w - v (mod d) always
        shifted = int(((bw - bv) % D == 3).sum())
        assert within(shifted, n, lo.p1 ** 2 + (D - 1) * lo.q1 ** 2)
    else:
        Bv, Bw = unpack(lo, bv), unpack(lo, bw)
        for u in (1, 2, 4, 5):         # shared lanes would make these bits equal
            assert within(int((Bv[:, u] == Bw[:, u]).sum()), n, lo.q1 ** 2 + (1 - lo.q1) ** 2)
        assert within(int((Bv[:, 0] & Bw[:, 0]).sum()), n, lo.p1 * lo.q1)


@pytest.mark.parametrize("kind", KINDS)
def test_pieces_privatize_as_the_whole_and_text_round_trips(kind: str, monkeypatch) -> None:
    lo = ol.longitudinal(kind, 13, EPS_PERM, EPS_1)
    n, m = 3000, 1234
    x = np.random.default_rng(3).integers(0, 13, n)
    whole = ol.privatize(lo, x, RowRandom(6, rows=range(n)), collection=5)
    head = ol.privatize(lo, x[:m], RowRandom(6, rows=range(m)), collection=5)
    tail = ol.privatize(lo, x[m:], RowRandom(6, rows=range(m, n)), collection=5)
    assert np.array_equal(np.concatenate([head, tail]), whole)
    pick = np.array([2999, 17, 1500, 3])          # any rows, in any order
    assert np.array_equal(ol.privatize(lo, x[pick], RowRandom(6, rows=pick), collection=5), whole[pick])
    # small blocks change nothing (the IRR's blocks of rows, the PRR sampler's)
    monkeypatch.setattr(ol, "_CHUNK", 64)
    monkeypatch.setattr(sampling, "_CHUNK", 64)   # the one-round samplers, in pieces too
    assert np.array_equal(ol.privatize(lo, x, RowRandom(6, rows=range(n)), collection=5), whole)
    monkeypatch.undo()
    # another stream, another collection: other reports
    assert not np.array_equal(ol.privatize(lo, x, RowRandom(6, rows=range(n), stream=1), collection=5), whole)
    assert not np.array_equal(ol.privatize(lo, x, RowRandom(6, rows=range(n)), collection=6), whole)
    # text form and support counts through the IRR's one-round oracle
    text = ol.format_reports(lo, whole)
    back, bad = ol.parse_reports(lo, list(text) + ["zz"])
    assert np.array_equal(back, whole) and bad.tolist() == [n]
    assert np.array_equal(ol.support_counts(lo, whole), orc.support_counts(ol.report_oracle(lo), whole))


# ---- 3. the peers: multi-freq-ldpy -----------------------------------------------------------------
D_P, N_P = 8, 3000
F_P = np.array([0.25, 0.2, 0.15, 0.12, 0.1, 0.08, 0.06, 0.04])


def peer_modules():
    pytest.importorskip("multi_freq_ldpy.long_freq_est", reason="multi-freq-ldpy not installed")
    from multi_freq_ldpy.long_freq_est import L_GRR, L_OSUE, L_OUE, L_SUE
    return {"l_grr": L_GRR, "l_sue": L_SUE, "l_oue": L_OUE, "l_osue": L_OSUE}


def their_parameters(monkeypatch, module, call) -> tuple[float, float, float, float]:
    """``(p1, q1, p2, q2)`` as their aggregator computes them: caught on their way into
    ``MI_long``."""
    seen = {}
    original = module.MI_long

    def spy(count_report, n, p1, q1, p2, q2):
        seen["params"] = (p1, q1, p2, q2)
        return original(count_report, n, p1, q1, p2, q2)

    monkeypatch.setattr(module, "MI_long", spy)
    call()
    monkeypatch.setattr(module, "MI_long", original)
    return seen["params"]


def test_multi_freq_ldpy_same_reports_same_estimates(monkeypatch) -> None:
    mods = peer_modules()
    from multi_freq_ldpy.pure_frequency_oracles import GRR
    # their clients are numba-compiled (10-20 s to compile here): their Python source runs
    # instead, drawing from numpy's global generator, seeded below
    monkeypatch.setattr(mods["l_grr"], "GRR_Client", GRR.GRR_Client.py_func)
    x = [int(v) for v in np.random.default_rng(3).choice(D_P, size=N_P, p=F_P)]
    for kind, module in mods.items():
        calibration = "peer" if kind == "l_grr" else "tight"
        lo = ol.longitudinal(kind, D_P, EPS_PERM, EPS_1, calibration)
        client = getattr(module, f"L_{kind[2:].upper()}_Client")
        client = getattr(client, "py_func", client)
        np.random.seed(11 + KINDS.index(kind))
        reps = [client(v, D_P, EPS_PERM, EPS_1) for v in x]
        if kind == "l_grr":
            ours = np.array([int(r) for r in reps], dtype=np.int64)
            agg = lambda: module.L_GRR_Aggregator_MI(reps, D_P, EPS_PERM, EPS_1)  # noqa: E731
        else:
            ours = np.packbits(np.array(reps) == 1, axis=1, bitorder="little")
            agg = getattr(module, f"L_{kind[2:].upper()}_Aggregator_MI")
            agg = (lambda a: lambda: a(reps, EPS_PERM, EPS_1))(agg)
        theirs = agg()
        est = ol.unbiased(lo, ol.support_counts(lo, ours), N_P, project="clip")
        np.testing.assert_allclose(est, theirs, rtol=1e-9, atol=1e-12)
        # their reports have our law: the unprojected estimate within 4.5 standard errors
        # of the sample's frequencies (conditional variance: the table is fixed)
        raw = ol.unbiased(lo, ol.support_counts(lo, ours), N_P)
        table = np.bincount(x, minlength=D_P) / N_P
        assert np.all(np.abs(raw - table) < 4.5 * np.sqrt(ol.variance(lo, table, N_P, conditional=True)))
        # their parameters are ours (L-OUE: they write sqrt(5)/2 to 15 digits)
        params = their_parameters(monkeypatch, module, agg)
        assert params == pytest.approx((lo.p1, lo.q1, lo.p2, lo.q2), rel=1e-12, abs=1e-15)
    # L-GRR's default (tight) second round differs from theirs once d > 2, not at d = 2
    assert ol.longitudinal("l_grr", D_P, EPS_PERM, EPS_1).p2 > ol.longitudinal(
        "l_grr", D_P, EPS_PERM, EPS_1, "peer").p2 + 0.01
    two = their_parameters(monkeypatch, mods["l_grr"],
                           lambda: mods["l_grr"].L_GRR_Aggregator_MI([0, 1, 1], 2, EPS_PERM, EPS_1))
    lo2 = ol.longitudinal("l_grr", 2, EPS_PERM, EPS_1)
    assert two == pytest.approx((lo2.p1, lo2.q1, lo2.p2, lo2.q2), rel=1e-12)


def test_multi_freq_ldpy_variance() -> None:
    peer_modules()
    from multi_freq_ldpy.long_freq_est.Variance_LONG_PURE import VAR_Long_Pure
    n = 5000
    for kind in KINDS:
        lo = ol.longitudinal(kind, D, EPS_PERM, EPS_1, "peer" if kind == "l_grr" else "tight")
        args = (lo.p1, lo.q1, lo.p2, lo.q2)
        # f = 0 (their default): the same for every kind
        assert ol.variance(lo, 0.0, n) == pytest.approx(VAR_Long_Pure(*args, n=n), rel=1e-12)
        for f in (0.1, 0.5):
            theirs = VAR_Long_Pure(*args, n=n, f=f)
            if kind == "l_sue":          # symmetric rounds: their sig is the report's probability
                assert ol.variance(lo, f, n) == pytest.approx(theirs, rel=1e-12)
            else:                        # theirs writes p* - q* as 2 p1 p2 - 2 p1 q2 + 2 q2 - 1
                assert abs(ol.variance(lo, f, n) / theirs - 1) > 1e-3
                p, q = ol.support_probs(lo)
                assert (p - q) != pytest.approx(2 * lo.p1 * lo.p2 - 2 * lo.p1 * lo.q2 + 2 * lo.q2 - 1)


# ---- 4. privacy: exact accounting and audit --------------------------------------------------------
def brute_force_epsilon(lo: ol.LongitudinalOracle, t: int) -> float:
    """``max_y max_{x, x'} log Pr(y_1..y_t | x) / Pr(y_1..y_t | x')`` over every sequence of
    t reports, by summing over the memoized value (small d and t only)."""
    d = lo.d
    best = -math.inf
    if lo.kind == "l_grr":
        K1 = np.full((d, d), lo.q1)
        np.fill_diagonal(K1, lo.p1)                # K1[b, x]
        K2 = np.full((d, d), lo.q2)
        np.fill_diagonal(K2, lo.p2)                # K2[y, b]
        for ys in itertools.product(range(d), repeat=t):
            px = np.prod(K2[list(ys), :], axis=0) @ K1
            best = max(best, math.log(px.max() / px.min()))
        return best
    Bs = np.array(list(itertools.product([0, 1], repeat=d)))
    PB = np.empty((d, len(Bs)))
    for x in range(d):
        pi = np.full(d, lo.q1)
        pi[x] = lo.p1
        PB[x] = np.prod(np.where(Bs == 1, pi, 1 - pi), axis=1)
    for ys in itertools.product(range(2 ** d), repeat=t):
        s = np.array([[(y >> v) & 1 for v in range(d)] for y in ys]).sum(axis=0)
        lik = np.prod(np.where(Bs == 1, lo.p2 ** s * (1 - lo.p2) ** (t - s), lo.q2 ** s * (1 - lo.q2) ** (t - s)),
                      axis=1)
        px = PB @ lik
        best = max(best, math.log(px.max() / px.min()))
    return best


@pytest.mark.parametrize("kind", KINDS)
def test_epsilon_of_against_brute_force(kind: str) -> None:
    cases = [(2, 3.0, 2.0, 3), (3, 2.0, 1.0, 2), (3, 1.5, 0.4, 2), (4, 2.0, 1.0, 1)]
    if kind == "l_grr":
        cases += [(3, 2.0, 1.0, 4), (4, 1.5, 0.4, 3), (3, 8.0, 0.5, 3)]
    for calibration in (("tight", "peer") if kind == "l_grr" else ("tight",)):
        for d, eps_perm, eps_1, t_max in cases:
            lo = ol.longitudinal(kind, d, eps_perm, eps_1, calibration)
            for t in range(1, t_max + 1):
                exact = brute_force_epsilon(lo, t)
                assert ol.epsilon_of(lo, t) == pytest.approx(exact, rel=1e-10)
                assert ol.epsilon_by_counts(lo, t) == pytest.approx(exact, rel=1e-10)


def test_sequential_composition_does_not_bound_memoized_reports() -> None:
    # the reports share the PRR: t of them can leak more than t eps_1 (never more than eps_perm)
    lo = ol.longitudinal("l_oue", 2, 10.0, 2.1)
    assert brute_force_epsilon(lo, 2) == pytest.approx(ol.epsilon_of(lo, 2), rel=1e-10)
    assert ol.epsilon_of(lo, 2) == pytest.approx(4.6346, abs=1e-4)
    assert 2 * 2.1 < ol.epsilon_of(lo, 2) < 10
    lo = ol.longitudinal("l_grr", 100, 4.0, 0.04)
    assert ol.epsilon_by_counts(lo, 50) == pytest.approx(ol.epsilon_of(lo, 50), rel=1e-10)
    assert ol.epsilon_of(lo, 50) == pytest.approx(3.5355, abs=1e-4)
    assert 50 * 0.04 < ol.epsilon_of(lo, 50) < 4
    table = ol.epsilon_table(lo, 60)
    assert list(table.columns) == ["collections", "epsilon", "independent"]
    assert (table["epsilon"] > table["independent"]).any()


@pytest.mark.parametrize("kind", KINDS)
def test_epsilon_limits(kind: str) -> None:
    for calibration in (("tight", "peer") if kind == "l_grr" else ("tight",)):
        for d, eps_perm, eps_1 in GRID:
            if eps_1 > ol.max_eps_1(kind, eps_perm):
                continue
            lo = ol.longitudinal(kind, d, eps_perm, eps_1, calibration)
            eps = np.array([ol.epsilon_of(lo, t) for t in range(1, 301)])
            if calibration == "tight":
                assert eps[0] == pytest.approx(eps_1, rel=1e-10)
            assert np.all(np.diff(eps) >= -1e-12)                   # more reports never leak less
            assert np.all(eps <= eps_perm * (1 + 1e-12))            # the PRR's eps bounds them all
            assert ol.epsilon_of(lo, math.inf) == pytest.approx(eps_perm, rel=1e-12)
            assert ol.epsilon_of(lo, 10 ** 7) == pytest.approx(eps_perm, rel=1e-9)
            assert ol.epsilon_by_counts(lo, 12) == pytest.approx(ol.epsilon_of(lo, 12), rel=1e-10)
            table = ol.epsilon_table(lo, 5)
            assert table["epsilon"].tolist() == pytest.approx(eps[:5].tolist(), rel=1e-15)


N_AUDIT = 1_000_000
T_AUDIT = 10
D_AUDIT = 4


def epsilon_lower_bound(k1: int, n1: int, k2: int, n2: int, alpha: float = 0.05) -> float:
    """As tests/test_privacy_audit.py: ``log(p1_lower / p2_upper)``, one-sided
    Clopper-Pearson bounds at alpha/2 each (Bonferroni)."""
    lower = stats.beta.ppf(alpha / 2, k1, n1 - k1 + 1) if k1 > 0 else 0.0
    upper = stats.beta.ppf(1 - alpha / 2, k2 + 1, n2 - k2) if k2 < n2 else 1.0
    return math.log(lower / upper) if lower > 0 else -math.inf


def threshold_event(lo: ol.LongitudinalOracle, t: int) -> tuple[tuple[int, ...], float]:
    """The test event of t collections, fixed from the exact law before any draw: L-GRR
    ``{at least k reports equal x1}`` (it tells ``B = x1``); UE ``{bit x1 on in at least k
    reports, bit x2 on in fewer than k'}`` (``B_x1 = 1, B_x2 = 0``).  The thresholds
    maximize the normal approximation of the 95% lower bound at N_AUDIT draws; returns
    them and the event's exact log ratio."""
    k = np.arange(t + 2)
    T1, T0 = stats.binom.sf(k - 1, t, lo.p2), stats.binom.sf(k - 1, t, lo.q2)   # Pr(count >= k | B)
    if lo.kind == "l_grr":
        P1, P2 = lo.p1 * T1 + (1 - lo.p1) * T0, lo.q1 * T1 + (1 - lo.q1) * T0
    else:
        A1, A2 = lo.p1 * T1 + (1 - lo.p1) * T0, lo.q1 * T1 + (1 - lo.q1) * T0
        B1, B2 = lo.q1 * (1 - T1) + (1 - lo.q1) * (1 - T0), lo.p1 * (1 - T1) + (1 - lo.p1) * (1 - T0)
        P1, P2 = np.outer(A1, B1), np.outer(A2, B2)
    z = stats.norm.ppf(1 - 0.025)
    ok = (P1 > 0) & (P2 > 0)
    lo1 = np.maximum(P1 - z * np.sqrt(P1 * (1 - P1) / N_AUDIT), 1e-300)
    hi2 = np.maximum(P2 + z * np.sqrt(P2 * (1 - P2) / N_AUDIT), 1e-300)
    approx = np.where(ok, np.log(lo1 / hi2), -np.inf)
    at = np.unravel_index(np.argmax(approx), approx.shape)
    return tuple(int(k[i]) for i in at), float(np.log(P1[at] / P2[at]))


@pytest.mark.parametrize("kind", [k if k == "l_grr" else pytest.param(k, marks=pytest.mark.slow) for k in KINDS])
def test_privacy_audit(kind: str) -> None:
    lo = ol.longitudinal(kind, D_AUDIT, EPS_PERM, EPS_1)
    thresholds, event_eps = threshold_event(lo, T_AUDIT)
    eps_t = ol.epsilon_of(lo, T_AUDIT)
    assert 0.99 * EPS_PERM <= event_eps <= eps_t <= EPS_PERM
    one, many = [], []
    for seed, x in ((41, 0), (42, 1)):                  # neighbours: the true value 0 or 1
        codes = np.full(N_AUDIT, x)
        days = ol.privatize_collections(lo, codes, RowRandom(seed, rows=range(N_AUDIT)), range(T_AUDIT))
        if kind == "l_grr":
            one.append(int((days[0] == 0).sum()))       # Pr: p* vs q*
            hits = sum((day == 0).astype(np.int64) for day in days) >= thresholds[0]
        else:
            bits = [np.unpackbits(day[:, :1], axis=1, bitorder="little") for day in days]
            one.append(int(((bits[0][:, 0] == 1) & (bits[0][:, 1] == 0)).sum()))   # p*(1-q*) vs q*(1-p*)
            on0 = sum(b[:, 0].astype(np.int64) for b in bits)
            on1 = sum(b[:, 1].astype(np.int64) for b in bits)
            hits = (on0 >= thresholds[0]) & (on1 < thresholds[1])
        many.append(int(hits.sum()))
    lower_one = epsilon_lower_bound(one[0], N_AUDIT, one[1], N_AUDIT)
    assert lower_one <= ol.epsilon_of(lo, 1)
    assert lower_one >= 0.95 * EPS_1
    lower_many = epsilon_lower_bound(many[0], N_AUDIT, many[1], N_AUDIT)
    assert lower_many <= eps_t
    assert lower_many >= 0.97 * EPS_PERM
