"""Frequency oracles (privspec.backends.oracles.pure): closed forms, Monte Carlo covariance,
the peers' estimators on the peers' own reports, an empirical privacy audit, and the
sampler's independence from chunking.

Statistical tolerances (fixed seeds; each stated where it is used):

* a sample variance of R normal estimates has ``(R-1) S / sigma^2 ~ chi2(R-1)``: each
  diagonal entry must lie in the central ``1 - 1e-4`` chi-square interval (a family of
  ~100 entries then fails by chance with probability ~1%);
* an off-diagonal sample covariance has variance ``(s_vv s_ww + s_vw^2)/(R-1)`` (Wishart):
  each entry within 4.5 of those standard deviations, and the whole matrix within a
  normalized Frobenius distance of 3 times its expected size;
* the privacy audit follows tests/test_privacy_audit.py (Clopper-Pearson, Bonferroni).
"""
from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
import sympy
from scipy import stats

from privspec.backends.oracles import sampling as orc
from privspec.backends.oracles.protocol import EPSILON, F
from privspec.backends.oracles.protocols import hash_values
from privspec.backends.oracles.pure import (covariance, epsilon_of, format_reports, ibu, ibu_support_counts, oracle,
                                            pair_probs, parse_reports, privatize, standard_errors, support_counts,
                                            support_probs, support_sets, symbols_of, unbiased, variance_formula)
from privspec.backends.core.rowrandom import RowRandom

KINDS = ("grr", "sue", "oue", "blh", "olh", "ss", "hr")


# ---- 1. closed forms -------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("d, eps", [(2, 0.5), (5, 1.0), (12, 2.5), (40, 0.1)])
def test_closed_forms(kind: str, d: int, eps: float) -> None:
    o = oracle(kind, d, eps)
    vals = symbols_of(o)
    p, q = support_probs(o)
    pe, qe = support_probs(o, exact=True)
    assert float(sympy.sympify(pe).subs(vals)) == pytest.approx(p, rel=1e-13)
    assert float(sympy.sympify(qe).subs(vals)) == pytest.approx(q, rel=1e-13)
    assert p > q
    # the epsilon read back from the mechanism's probabilities is the declared one
    assert epsilon_of(o) == pytest.approx(eps, rel=1e-12)
    assert sympy.simplify(epsilon_of(o, exact=True) - EPSILON) == 0
    pairs, pairs_exact = pair_probs(o), pair_probs(o, exact=True)
    for a, b in zip(pairs, pairs_exact):
        if not (kind == "ss" and d == 2):          # d = 2: the "neither" case has no instance
            assert float(sympy.sympify(b).subs(vals)) == pytest.approx(a, rel=1e-12, abs=1e-15)
    # Wang et al.'s Eq. (1)/(2) is the diagonal of the conditional covariance; the
    # population covariance adds f (1 - f)
    f = np.random.default_rng(d).dirichlet(np.ones(d))
    n = 777
    cond, pop = covariance(o, f, n, conditional=True), covariance(o, f, n)
    for exact in (True, False):
        v_c = variance_formula(o, exact=exact)
        v_p = variance_formula(o, exact=exact, conditional=False)
        sub = vals if exact else {}
        for j in (0, d - 1):
            assert float(v_c.subs(sub).subs(F, f[j])) / n == pytest.approx(cond[j, j], rel=1e-10)
            assert float(v_p.subs(sub).subs(F, f[j])) / n == pytest.approx(pop[j, j], rel=1e-10)
    assert np.allclose(pop - cond, (np.diag(f) - np.outer(f, f)) / n, rtol=1e-9, atol=1e-15)
    assert np.allclose(standard_errors(o, f, n), np.sqrt(np.diag(pop)), rtol=1e-12)
    assert np.allclose(standard_errors(o, f, n, conditional=True), np.sqrt(np.diag(cond)), rtol=1e-12)


def _channel(o) -> tuple[np.ndarray, np.ndarray]:
    """``(Pr(y|x) as a (reports x d) matrix, support membership (reports x d))`` enumerated
    from each mechanism's definition (not from the module's closed forms)."""
    d, e = o.d, math.exp(o.epsilon)
    if o.kind == "grr":
        K = np.full((d, d), 1 / (e + d - 1))
        np.fill_diagonal(K, e / (e + d - 1))
        return K, np.eye(d, dtype=bool)
    if o.kind in ("sue", "oue"):
        p, q = ((math.exp(o.epsilon / 2) / (math.exp(o.epsilon / 2) + 1), 1 / (math.exp(o.epsilon / 2) + 1))
                if o.kind == "sue" else (0.5, 1 / (e + 1)))
        ys = np.array(list(itertools.product([0, 1], repeat=d)), dtype=bool)
        prob = np.where(ys, q, 1 - q).prod(axis=1)[:, None] * np.ones((1, d))
        for x in range(d):
            prob[:, x] *= np.where(ys[:, x], p / q, (1 - p) / (1 - q))
        return prob, ys
    if o.kind == "ss":
        k = o.k
        pi = k * e / (k * e + d - k)
        ys = np.array([[v in s for v in range(d)] for s in itertools.combinations(range(d), k)])
        prob = np.where(ys, pi / math.comb(d - 1, k - 1), (1 - pi) / math.comb(d - 1, k))
        return prob, ys
    if o.kind == "hr":
        K = o.K
        ys = np.array([[bin(j & (u + 1)).count("1") % 2 == 0 for u in range(d)] for j in range(K)])
        p = e / (e + 1)
        return np.where(ys, p / (K // 2), (1 - p) / (K // 2)), ys
    raise AssertionError(o.kind)


@pytest.mark.parametrize("kind, d", [("grr", 4), ("sue", 4), ("oue", 5), ("ss", 6), ("ss", 7), ("hr", 6), ("hr", 7)])
def test_closed_forms_against_the_enumerated_mechanism(kind: str, d: int) -> None:
    o = oracle(kind, d, 1.3)
    P, S = _channel(o)
    assert np.allclose(P.sum(axis=0), 1.0)
    eps = max(math.log(row.max() / row.min()) for row in P)
    assert eps == pytest.approx(1.3, rel=1e-12)
    p, q = support_probs(o)
    one, neither, xor = pair_probs(o)
    for v, w in itertools.permutations(range(d), 2):
        assert P[S[:, v], v].sum() == pytest.approx(p, rel=1e-12)
        assert P[S[:, v], w].sum() == pytest.approx(q, rel=1e-12)
        both = S[:, v] & S[:, w]
        assert P[both, v].sum() == pytest.approx(one, abs=1e-12)
        for x in set(range(d)) - {v, w}:
            want = xor if kind == "hr" and (x + 1) == (v + 1) ^ (w + 1) else neither
            assert P[both, x].sum() == pytest.approx(want, abs=1e-12)
    # the sampler draws from this law: chi-square goodness of fit, x = 1
    n = 60_000
    reps = privatize(o, np.full(n, 1), RowRandom(21, rows=range(n)))
    member = o.membership(reps)
    index = {row.tobytes(): i for i, row in enumerate(S)} if kind != "grr" else None
    if kind == "grr":
        obs = np.bincount(reps, minlength=d)
    elif kind == "hr":
        obs = np.bincount(reps, minlength=o.K)
    else:
        obs = np.bincount([index[r.tobytes()] for r in member], minlength=len(S))
    exp = P[:, 1] * n
    assert stats.chisquare(obs, exp).pvalue > 1e-4


def test_validation_and_the_peers_parameter_rules() -> None:
    for args, msg in [(("xx", 4, 1.0), "unknown"), (("grr", 1, 1.0), "d >= 2"), (("grr", 4, 0.0), "epsilon"),
                      (("grr", 4, math.inf), "epsilon"), (("grr", 4, "a"), "epsilon"),
                      (("olh", 4, 1.0, 1), "g must"), (("ss", 4, 1.0, None, 4), "1 <= k < d"),
                      (("ss", 4, 1.0, None, 0), "1 <= k < d"), (("grr", 4, 1.0, 3), "parameter of blh"),
                      (("oue", 4, 1.0, None, 2), "parameter of ss"), (("olh", orc.LH_PRIME + 1, 1.0), "field")]:
        with pytest.raises(ValueError, match=msg):
            oracle(*args)
    for eps in (0.1, 0.5, 1.0, 1.1, 2.0, 3.0, 5.0):
        e = np.exp(eps)
        # multi-freq-ldpy's LH_Client and pure-ldp's LHClient(use_olh=True): int(round(e^eps)) + 1
        assert oracle("olh", 10, eps).g == int(round(e)) + 1
        assert oracle("blh", 10, eps).g == 2
        for d in (2, 3, 7, 10, 50, 1000):
            # SS_Client: int(max(1, np.rint(k / (e^eps + 1))))
            assert oracle("ss", d, eps).k == int(max(1, np.rint(d / (e + 1))))
            # ADP: GRR iff its variance <= OUE's, i.e. d <= 3 e^eps + 2 (Wang et al.)
            assert oracle("adp", d, eps).kind == ("grr" if d <= 3 * e + 2 else "oue")
            assert oracle("adp", d, eps).via == "adp"


# ---- 2. Monte Carlo covariance ---------------------------------------------------------------------
R, N_MC, D_MC = 2000, 2000, 8
F_MC = np.array([0.30, 0.20, 0.15, 0.12, 0.10, 0.07, 0.04, 0.02])


def _estimates(o, x: np.ndarray, seed: int) -> np.ndarray:
    """``(R, d)`` unbiased estimates of R surveys of N_MC rows each (one big privatize)."""
    reps = privatize(o, x.ravel(), RowRandom(seed, rows=range(x.size)))
    # support counts of every survey at once: the rows' supports summed per survey, in
    # blocks of surveys (support_counts itself is checked against these in test 5)
    C = np.empty((R, o.d), dtype=np.int64)
    block = 100
    for r in range(0, R, block):
        member = o.membership(reps[r * N_MC:(r + block) * N_MC])
        C[r:r + block] = member.reshape(-1, N_MC, o.d).sum(axis=1)
    for r in (0, R - 1):
        assert np.array_equal(support_counts(o, reps[r * N_MC:(r + 1) * N_MC]), C[r])
    return np.array([unbiased(o, c, N_MC) for c in C])


def _check_covariance(est: np.ndarray, V: np.ndarray) -> None:
    S = np.cov(est.T)
    dof = R - 1
    # trace within 5%: its sampling sd, sqrt(2 ||V||_F^2 / (R-1)) / tr V, is 1.0-1.3% here
    assert math.sqrt(2 * (V ** 2).sum() / dof) / np.trace(V) < 0.015
    assert np.trace(S) == pytest.approx(np.trace(V), rel=0.05)
    # diagonal: the central 1 - 1e-4 interval of chi2(R-1)/(R-1)
    lo, hi = stats.chi2.ppf([0.5e-4, 1 - 0.5e-4], dof) / dof
    ratio = np.diag(S) / np.diag(V)
    assert np.all((ratio > lo) & (ratio < hi)), ratio
    # every entry within 4.5 Wishart standard deviations
    sd = np.sqrt((np.outer(np.diag(V), np.diag(V)) + V ** 2) / dof)
    assert np.abs((S - V) / sd).max() < 4.5
    # normalized Frobenius distance: E||S - V||^2 = ((tr V)^2 + ||V||^2) / (R-1)
    expected = math.sqrt((np.trace(V) ** 2 + (V ** 2).sum()) / dof)
    assert np.linalg.norm(S - V) < 3 * expected


@pytest.mark.parametrize("kind", [k if k == "grr" else pytest.param(k, marks=pytest.mark.slow) for k in KINDS])
def test_covariance_monte_carlo(kind: str) -> None:
    o = oracle(kind, D_MC, 1.0)
    seed = 100 + KINDS.index(kind)
    # population: each survey draws its x's from F_MC
    x = np.random.default_rng(seed).choice(D_MC, size=(R, N_MC), p=F_MC)
    est = _estimates(o, x, seed)
    assert np.abs(est.mean(axis=0) - F_MC).max() < 5 * np.sqrt(np.diag(covariance(o, F_MC, N_MC)) / R).max()
    _check_covariance(est, covariance(o, F_MC, N_MC))
    # conditional: the same table of x's in every survey (privacy noise only)
    table = np.repeat(np.arange(D_MC), np.rint(F_MC * N_MC).astype(int))
    est = _estimates(o, np.tile(table, (R, 1)), seed + 50)
    _check_covariance(est, covariance(o, F_MC, N_MC, conditional=True))


def test_hadamard_xor_term_matters() -> None:
    # the (x+1) = (v+1)^(w+1) term of Hadamard response's pair probability is not a
    # rounding: without it the covariance is off by several Wishart sds somewhere
    o = oracle("hr", D_MC, 1.0)
    V = covariance(o, F_MC, N_MC)
    one, neither, _ = pair_probs(o)
    fv = F_MC[:, None] + F_MC[None, :]
    naive = one * fv + neither * (1 - fv)
    np.fill_diagonal(naive, 0)
    p, q = support_probs(o)
    lam = q + (p - q) * F_MC
    Vn = (naive - np.outer(lam, lam)) / (N_MC * (p - q) ** 2)
    np.fill_diagonal(Vn, np.diag(V))
    sd = np.sqrt((np.outer(np.diag(V), np.diag(V)) + V ** 2) / (R - 1))
    assert np.abs((V - Vn) / sd).max() > 4.5


# ---- 3. the peers, on their own reports ------------------------------------------------------------
def _uncompiled(monkeypatch, *modules) -> None:
    """multi-freq-ldpy's clients and IBU are numba-compiled: compiling them takes 10-20 s
    here.  Their Python source (``.py_func``: the same code, run by CPython and numpy's
    global generator, seeded by np.random.seed) is put in their place in the modules
    that call them."""
    for module in modules:
        for name in ("GRR_Client", "UE_Client", "SS_Client", "IBU"):
            fn = getattr(module, name, None)
            if fn is not None and hasattr(fn, "py_func"):
                monkeypatch.setattr(module, name, fn.py_func)


D_P, N_P, EPS_P = 8, 3000, 1.0
F_P = np.array([0.25, 0.2, 0.15, 0.12, 0.1, 0.08, 0.06, 0.04])


def _peer_x(seed: int) -> list[int]:
    return [int(v) for v in np.random.default_rng(seed).choice(D_P, size=N_P, p=F_P)]


class _Xxh:
    """The peers' LH hashes ``xxh32(str(v), seed)``: python-xxhash before 4 took a str as its
    UTF-8 bytes, 4.x raises "Strings must be encoded before hashing".  This shim restores
    the old behaviour (the digits' bytes are the same in any encoding) for their code and
    ours."""

    def __init__(self, module):
        self.module = module

    def xxh32(self, data, seed=0):
        return self.module.xxh32(data.encode("utf-8") if isinstance(data, str) else data, seed=int(seed))


def _close(ours, theirs, rtol=1e-9, atol=1e-12) -> None:
    np.testing.assert_allclose(np.asarray(ours, float), np.asarray(theirs, float), rtol=rtol, atol=atol)


def test_multi_freq_ldpy_same_reports_same_estimates(monkeypatch) -> None:
    pytest.importorskip("multi_freq_ldpy.pure_frequency_oracles", reason="multi-freq-ldpy not installed")
    from multi_freq_ldpy.pure_frequency_oracles import ADP, GRR, LH, SS, UE
    xxhash = _Xxh(pytest.importorskip("xxhash"))
    monkeypatch.setattr(LH, "xxhash", xxhash)
    _uncompiled(monkeypatch, ADP, GRR, LH, SS, UE)
    np.random.seed(3)
    x = _peer_x(3)
    # GRR: the unbiased estimate clipped (their MI) and the IBU (the exact EM for GRR)
    o = oracle("grr", D_P, EPS_P)
    reps = np.array([GRR.GRR_Client(v, D_P, EPS_P) for v in x])
    _close(unbiased(o, support_counts(o, reps), N_P, project="clip"), GRR.GRR_Aggregator_MI(reps, D_P, EPS_P))
    sets, counts = support_sets(o, reps)
    _close(ibu(o, sets, counts, N_P), GRR.GRR_Aggregator_IBU(reps, D_P, EPS_P))
    # SUE / OUE
    for kind, optimal in (("sue", False), ("oue", True)):
        o = oracle(kind, D_P, EPS_P)
        vecs = np.array([UE.UE_Client(v, D_P, EPS_P, optimal) for v in x])
        packed = np.packbits(vecs.astype(bool), axis=1, bitorder="little")
        C = support_counts(o, packed)
        _close(unbiased(o, C, N_P, project="clip"), UE.UE_Aggregator_MI(vecs, EPS_P, optimal))
        _close(ibu_support_counts(o, C), UE.UE_Aggregator_IBU(vecs, D_P, EPS_P, optimal))
    # BLH / OLH: support counts with THEIR hash (xxh32 of str(v), the report's seed, mod g)
    for kind, optimal in (("blh", False), ("olh", True)):
        o = oracle(kind, D_P, EPS_P)
        reps = [LH.LH_Client(v, D_P, EPS_P, optimal) for v in x[:1500]]
        hit = np.array([[xxhash.xxh32(str(v), seed=int(s)).intdigest() % o.g == val for v in range(D_P)]
                        for val, s in reps])
        C = hit.sum(axis=0)
        _close(unbiased(o, C, len(reps), project="clip"), LH.LH_Aggregator_MI(reps, D_P, EPS_P, optimal))
        _close(ibu_support_counts(o, C), LH.LH_Aggregator_IBU(reps, D_P, EPS_P, optimal))
        # the exact EM on the same supports (no peer has it): a distribution near the truth
        packed, inv = np.unique(np.packbits(hit, axis=1, bitorder="little"), axis=0, return_inverse=True)
        f = ibu(o, np.unpackbits(packed, axis=1, count=D_P, bitorder="little").astype(bool),
                np.bincount(inv.ravel()).astype(float), tol=1e-9)
        assert f.sum() == pytest.approx(1.0) and np.abs(f - F_P).max() < 0.1
    # SS: their k, their reports as our bitmask
    o = oracle("ss", D_P, EPS_P)
    subsets = [SS.SS_Client(v, D_P, EPS_P) for v in x]
    assert {len(s) for s in subsets} == {o.k}
    bits = np.zeros((N_P, D_P), dtype=bool)
    np.put_along_axis(bits, np.array(subsets), True, axis=1)
    C = support_counts(o, np.packbits(bits, axis=1, bitorder="little"))
    _close(unbiased(o, C, N_P, project="clip"), SS.SS_Aggregator_MI(subsets, D_P, EPS_P))
    _close(ibu_support_counts(o, C), SS.SS_Aggregator_IBU(subsets, D_P, EPS_P))
    # ADP: the same choice, then the same estimate
    for d in (4, 20):
        o = oracle("adp", d, EPS_P)
        reps = [ADP.ADP_Client(v % d, d, EPS_P) for v in x[:1000]]
        assert o.kind == ("grr" if np.ndim(reps[0]) == 0 else "oue")     # a code, or d bits
        if o.kind == "grr":
            C = support_counts(o, np.array(reps))
        else:
            C = support_counts(o, np.packbits(np.array(reps).astype(bool), axis=1, bitorder="little"))
        _close(unbiased(o, C, 1000, project="clip"), ADP.ADP_Aggregator_MI(reps, d, EPS_P))


def test_multi_freq_ldpy_variance() -> None:
    pytest.importorskip("multi_freq_ldpy.pure_frequency_oracles", reason="multi-freq-ldpy not installed")
    from multi_freq_ldpy.pure_frequency_oracles.Variance_PURE import VAR_Pure
    d, eps, n = 10, 1.3, 5000
    e = np.exp(eps)
    sub_k = int(max(1, np.rint(d / (e + 1))))
    g = int(round(e)) + 1
    p_grr = e / (e + d - 1)
    # (p, q) exactly as their clients/aggregators write them
    theirs = {
        "grr": (p_grr, (1 - p_grr) / (d - 1)),
        "sue": (np.exp(eps / 2) / (np.exp(eps / 2) + 1), 1 - np.exp(eps / 2) / (np.exp(eps / 2) + 1)),
        "oue": (1 / 2, 1 / (e + 1)),
        "blh": (e / (e + 2 - 1), 1 / 2),
        "olh": (e / (e + g - 1), 1 / g),
        "ss": (sub_k * e / (sub_k * e + d - sub_k),
               ((sub_k - 1) * (sub_k * e) + (d - sub_k) * sub_k) / ((d - 1) * (sub_k * e + d - sub_k))),
    }
    for kind, (p, q) in theirs.items():
        o = oracle(kind, d, eps)
        assert support_probs(o) == pytest.approx((p, q), rel=1e-14)
        for f in (0.0, 0.13, 0.5):
            ours = float(variance_formula(o, exact=False).subs(F, f)) / n
            assert ours == pytest.approx(VAR_Pure(p, q, n, f), rel=1e-12)
            assert standard_errors(o, np.full(d, f), n, conditional=True)[0] ** 2 == pytest.approx(
                VAR_Pure(p, q, n, f), rel=1e-12)


# pure-ldp's HR client calls random.randint with float bounds (deprecated in Python 3.10,
# an error from 3.12)
@pytest.mark.filterwarnings("ignore:non-integer arguments to randrange:DeprecationWarning")
def test_pure_ldp_same_reports_same_estimates(monkeypatch) -> None:
    # no reason of our own: pytest's names the module that is missing (pure_ldp, or the
    # scikit-learn that pure_ldp.frequency_oracles imports)
    pytest.importorskip("pure_ldp.frequency_oracles")
    xxhash = _Xxh(pytest.importorskip("xxhash"))
    from pure_ldp.frequency_oracles.local_hashing import lh_client, lh_server
    monkeypatch.setattr(lh_client, "xxhash", xxhash)
    monkeypatch.setattr(lh_server, "xxhash", xxhash)
    from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
    from pure_ldp.frequency_oracles.hadamard_response import HadamardResponseClient, HadamardResponseServer
    from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
    from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer
    random.seed(5)
    np.random.seed(5)
    x = _peer_x(5)
    data = [v + 1 for v in x]          # pure-ldp's default index_mapper: x - 1

    def run(client, server, n=N_P):
        reps = [client.privatise(v) for v in data[:n]]
        server.aggregate_all(reps)
        return reps, server.estimate_all(range(1, D_P + 1), suppress_warnings=True)

    o = oracle("grr", D_P, EPS_P)
    reps, theirs = run(DEClient(EPS_P, D_P), DEServer(EPS_P, D_P))
    _close(N_P * unbiased(o, support_counts(o, np.array(reps)), N_P), theirs)
    for kind, oue in (("sue", False), ("oue", True)):
        o = oracle(kind, D_P, EPS_P)
        reps, theirs = run(UEClient(EPS_P, D_P, use_oue=oue), UEServer(EPS_P, D_P, use_oue=oue))
        packed = np.packbits(np.array(reps).astype(bool), axis=1, bitorder="little")
        _close(N_P * unbiased(o, support_counts(o, packed), N_P), theirs)
    for kind, olh in (("blh", False), ("olh", True)):
        o = oracle(kind, D_P, EPS_P)
        n = 1000
        reps, theirs = run(LHClient(EPS_P, D_P, use_olh=olh), LHServer(EPS_P, D_P, use_olh=olh), n)
        C = np.array([[xxhash.xxh32(str(v), seed=s).intdigest() % o.g == val for v in range(D_P)]
                      for val, s in reps]).sum(axis=0)
        _close(n * unbiased(o, C, n), theirs)
    # Hadamard response at eps <= 1 is Acharya-Sun-Zhang's HR (Hadamard_Rand_high_priv):
    # K = 2^ceil(log2(d+1)), report j, support {u : H[u+1, j] = +1}
    for eps in (0.5, 1.0):
        o = oracle("hr", D_P, eps)
        reps, theirs = run(HadamardResponseClient(eps, D_P, None), HadamardResponseServer(eps, D_P))
        assert max(reps) < o.K == 16
        _close(N_P * unbiased(o, support_counts(o, np.array(reps)), N_P), theirs, atol=1e-9)


# ---- 4. privacy audit ------------------------------------------------------------------------------
N_AUDIT = 1_000_000


def epsilon_lower_bound(k1: int, n1: int, k2: int, n2: int, alpha: float = 0.05) -> float:
    """As tests/test_privacy_audit.py: ``log(p1_lower / p2_upper)``, one-sided
    Clopper-Pearson bounds at alpha/2 each."""
    lower = stats.beta.ppf(alpha / 2, k1, n1 - k1 + 1) if k1 > 0 else 0.0
    upper = stats.beta.ppf(1 - alpha / 2, k2 + 1, n2 - k2) if k2 < n2 else 1.0
    return math.log(lower / upper) if lower > 0 else -math.inf


def _event(o, reps, x1: int, x2: int) -> np.ndarray:
    """The analytic event separating x1 from x2 (fixed before any draw): the support holds
    x1 but not x2.  Its probabilities (ratio e^eps for every kind): grr p'/q'; UE p(1-q)
    vs q(1-p); ss pi (d-k)/(d-1) vs (1-pi) k/(d-1); LH p'(1 - 1/g) vs (1-p')/g; hr p/2 vs
    (1-p)/2."""
    if o.kind == "grr":
        return reps == x1
    if o.kind in ("sue", "oue", "ss"):
        bits = np.unpackbits(reps[:, :1], axis=1, bitorder="little")
        return (bits[:, x1] == 1) & (bits[:, x2] == 0)
    if o.kind in ("blh", "olh"):
        h = hash_values(o, reps["seed"], [x1, x2])
        return (h[:, 0] == reps["value"]) & (h[:, 1] != reps["value"])
    member = orc.hadamard_member(reps, o.d)
    return member[:, x1] & ~member[:, x2]


@pytest.mark.parametrize("kind, d", [("grr", 4), ("sue", 4), ("oue", 6), ("blh", 6), ("olh", 6), ("ss", 8),
                                     ("hr", 6)])
def test_privacy_audit(kind: str, d: int) -> None:
    o = oracle(kind, d, 1.0)
    hits = []
    for seed, x in ((31, 0), (32, 1)):
        reps = privatize(o, np.full(N_AUDIT, x), RowRandom(seed, rows=range(N_AUDIT)))
        hits.append(int(_event(o, reps, 0, 1).sum()))
    lower = epsilon_lower_bound(hits[0], N_AUDIT, hits[1], N_AUDIT)
    assert lower <= epsilon_of(o)
    assert lower >= 0.95 * o.epsilon


# ---- 5. chunking, weights, text form ---------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_chunking_weights_and_text(kind: str, monkeypatch) -> None:
    o = oracle(kind, 13, 0.8)
    n, m = 3000, 1234
    x = np.random.default_rng(8).integers(0, o.d, n)
    whole = privatize(o, x, RowRandom(77, rows=range(n)))
    pieces = np.concatenate([privatize(o, x[:m], RowRandom(77, rows=range(0, m))),
                             privatize(o, x[m:], RowRandom(77, rows=range(m, n)))])
    assert np.array_equal(whole, pieces)
    C = support_counts(o, whole)
    # the internal chunks (tiny here) change nothing either
    monkeypatch.setattr(orc, "_CHUNK", 200)
    monkeypatch.setattr(orc, "_LH_CHUNK", 200)
    rng = RowRandom(77, rows=range(n))
    assert np.array_equal(privatize(o, x, rng), whole)
    assert np.array_equal(support_counts(o, whole), C)
    monkeypatch.undo()
    assert C.sum() > 0 and C.shape == (o.d,)
    # the rows' support sets, weighted, give the same counts
    assert np.array_equal(o.membership(whole).sum(axis=0), C)
    sets, counts = support_sets(o, whole)
    assert counts.sum() == n and np.allclose(counts @ sets, C)
    uniq, inv = np.unique(whole, return_inverse=True, axis=0 if whole.ndim == 2 else None)
    assert np.allclose(support_counts(o, uniq, np.bincount(inv.ravel())), C)
    # text round trip
    text = format_reports(o, whole)
    assert text.shape == (n,) and text.dtype.kind == "U"
    back, bad = parse_reports(o, text)
    assert len(bad) == 0 and np.array_equal(back, whole)
    # malformed strings are flagged, not raised, and the good ones kept in order
    bad_strings = {
        "grr": ["13", "-1", "01", "1.0", " 2", ""],
        "hr": ["16", "-1", "01", "x", "3 ", ""],
        "sue": ["000", "00000", "ZZZZ", "0020", "00-0", "0 00"],   # padding bit 13 set: "0020"
        "oue": ["00000", "000", "00g0", "FFFF", "0040", ""],
        "blh": ["1:2", "1", "1:-1", f"{orc.LH_PRIME ** 3}:0", "a:0", "1:0:0"],
        "olh": [f"1:{o.g}", "01:1", "1:", ":1", "1:1 ", "1;1"],
        "ss": ["3|2", "13", "1|1", "a", "|", "1||2"],
    }[kind]
    if kind == "ss":       # a subset of the wrong size
        bad_strings += ["|".join(str(v) for v in range(o.k + 1)), "|".join(str(v) for v in range(o.k - 1)) or "x"]
        if o.k == 1:
            bad_strings[:3] = ["13", "-1", "1|2"]
    mixed = list(text[:3]) + bad_strings + [None, 5] + list(text[3:6])
    back, bad = parse_reports(o, mixed)
    assert bad.tolist() == list(range(3, 3 + len(bad_strings) + 2))
    assert np.array_equal(back, whole[:6])


@pytest.mark.parametrize("kind", ["sue", "oue"])
def test_unary_encoding_lanes_and_ties_are_exact(kind: str, monkeypatch) -> None:
    # with 3-bit lanes (instead of 8) a lane ties its threshold with probability 1/8:
    # both tie paths (a row's ties from its coin words, more than its coins from a retry)
    # run on most rows; every bit must still be Bernoulli(q) (Bernoulli(p) for the true
    # value), independent, and the same whatever the chunks
    monkeypatch.setattr(orc, "_LANE_BITS", 3)
    o = oracle(kind, 12, 1.3)
    p, q = support_probs(o)
    n = 100_000
    x = np.full(n, 5)
    reps = privatize(o, x, RowRandom(3, rows=range(n)))
    bits = np.unpackbits(reps, axis=1, count=o.d, bitorder="little").astype(float)
    want = np.where(np.arange(o.d) == 5, p, q)
    z = (bits.mean(axis=0) - want) / np.sqrt(want * (1 - want) / n)
    assert np.abs(z).max() < 4.0
    # pairs: Pr(both) = product, for neighbours in one word and across words
    for v, w in ((0, 1), (4, 6), (1, 11)):
        both = (bits[:, v] * bits[:, w]).mean()
        assert abs(both - want[v] * want[w]) < 4.5 * math.sqrt(want[v] * want[w] / n)
    monkeypatch.setattr(orc, "_CHUNK", 5000)
    assert np.array_equal(privatize(o, x, RowRandom(3, rows=range(n))), reps)


def test_first_distinct_draws_give_the_first_m_distinct_values() -> None:
    # values 3, 3, 7, 0, 7, (rejected), 5 (N = 10): the first three distinct are {3, 7, 0}
    v = np.array([[3, 3, 7, 0, 7, 10, 5]] * 4)
    m = np.array([3, 0, 4, 5])
    pos, keep, short = orc._first_distinct(v, 10, m)
    assert [pos[i][keep[i]].tolist() for i in range(4)] == [[0, 3, 7], [], [0, 3, 5, 7], [0, 3, 5, 7]]
    assert short.tolist() == [False, False, False, True]       # only 4 distinct values drawn
    # positions from 32-bit halves: each value of range(N) from exactly floor(2^32 / N) halves
    # (Lemire), the others rejected; checked on a small word size by brute force
    N = 10
    halves = np.arange(0, 1 << 32, 4099, dtype=np.uint64)
    words = (halves[:len(halves) // 2 * 2].reshape(-1, 2) * np.array([1, 1 << 32], dtype=np.uint64)).sum(axis=1)
    got = orc._positions(words.astype(np.uint64)[:, None], N).ravel()
    prod = halves[:len(got)] * N
    want = np.where(prod % (1 << 32) < (1 << 32) % N, N, prod >> 32)
    assert np.array_equal(got, want)
    # the keys' fallback: exactly m of the N, the smallest keys
    kpos, kkeep = orc._subset_by_keys(np.array([[0.9, 0.1, 0.5, 0.3]]), np.array([2]))
    assert kpos[kkeep].tolist() == [1, 3]
    # packed as numpy.packbits would
    bits = np.zeros((2, 70), dtype=bool)
    bits[0, [0, 9, 31, 32, 69]] = True
    bits[1, [5]] = True
    pos = np.array([[0, 9, 31, 32, 69], [5, 6, 7, 8, 9]])
    keep = np.array([[True] * 5, [True] + [False] * 4])
    assert np.array_equal(orc._pack_positions(pos, keep, 70), np.packbits(bits, axis=1, bitorder="little"))


# first distinct draws (d > 64); the same, of the others left out (2k > d - 1)
@pytest.mark.slow   # 100,000 rows each; test_subset_selection_samplers_have_the_right_support_rates is the quick check
@pytest.mark.parametrize("d,eps,k", [(70, 3.0, None), (300, 0.5, None), (90, 1.0, 60)])
@pytest.mark.parametrize("spare", [None, -3.0])
def test_subset_selection_draws_uniform_subsets(d, eps, k, spare, monkeypatch) -> None:
    """Given the truth, every other category is reported at the same rate and every pair of
    them equally often (chi-square over the C(d-1, 2) pairs), at the rates pair_probs
    gives; with too few spare draws (spare = -3 sd) many rows redraw by keys, to the same
    law.  The result does not depend on the chunks."""
    if spare is not None:
        monkeypatch.setattr(orc, "_SPARE_SD", spare)
    o = oracle("ss", d, eps, k=k)
    n = 100_000
    x = np.zeros(n, dtype=np.int64)
    reps = privatize(o, x, RowRandom(5, rows=range(n)))
    bits = np.unpackbits(reps, axis=1, count=o.d, bitorder="little").astype(np.int64)
    assert (bits.sum(axis=1) == o.k).all()
    p, q = support_probs(o)
    assert abs(bits[:, 0].mean() - p) < 4.5 * math.sqrt(p * (1 - p) / n)
    others = bits[:, 1:]
    col = others.sum(axis=0)
    assert abs(col.mean() / n - q) < 4.5 * math.sqrt(q / (n * (d - 1)))
    stat = float(((col - col.mean()) ** 2).sum() / (col.mean() * (1 - q)))
    assert stats.chi2.sf(stat, d - 2) > 1e-4
    pairs = (others.T @ others)[np.triu_indices(o.d - 1, 1)]
    want = n * pair_probs(o).neither
    assert abs(pairs.mean() / want - 1) < 0.02
    stat = float(((pairs - pairs.mean()) ** 2 / pairs.mean()).sum())
    assert stats.chi2.sf(stat * (1 - want / n), len(pairs) - 1) > 1e-4
    monkeypatch.setattr(orc, "_CHUNK", 3000)
    assert np.array_equal(privatize(o, x, RowRandom(5, rows=range(n))), reps)


@pytest.mark.parametrize("spare", [None, -3.0])
def test_sparse_unary_encoding_is_independent_bits(spare, monkeypatch) -> None:
    """OUE at a large epsilon draws how many of the other bits are 1 (binomial), then which:
    the truth's bit must be Bernoulli(p), the others' count binomial, the others
    Bernoulli(q) and pairs independent; rows left short redraw by keys; chunks change
    nothing."""
    if spare is not None:
        monkeypatch.setattr(orc, "_SPARE_SD", spare)
    o = oracle("oue", 1024, 5.0)
    p, q = support_probs(o)
    assert orc._ue_sparse_plan(o.d, q) is not None
    n = 60_000
    x = np.random.default_rng(2).integers(0, o.d, n)
    reps = privatize(o, x, RowRandom(8, rows=range(n)))
    bits = np.unpackbits(reps, axis=1, count=o.d, bitorder="little").astype(np.int64)
    rows = np.arange(n)
    truth = bits[rows, x]
    assert abs(truth.mean() - p) < 4.5 * math.sqrt(p * (1 - p) / n)
    bits[rows, x] = 0
    ones = bits.sum(axis=1)
    counts = np.bincount(ones, minlength=40)[:40]
    want = n * stats.binom.pmf(np.arange(40), o.d - 1, q)
    ok = want > 5
    assert stats.chi2.sf(float(((counts[ok] - want[ok]) ** 2 / want[ok]).sum()), ok.sum() - 1) > 1e-4
    assert abs(ones.sum() / (n * (o.d - 1)) - q) < 4.5 * math.sqrt(q / (n * (o.d - 1)))
    for v, w in ((0, 1), (7, 8), (63, 64), (100, 900)):
        both = (bits[:, v] * bits[:, w]).mean()
        assert abs(both - q * q) < 5 * math.sqrt(q * q / n)
    monkeypatch.setattr(orc, "_CHUNK", 4000)
    assert np.array_equal(privatize(o, x, RowRandom(8, rows=range(n))), reps)


def test_ibu_exact_em_is_the_mle() -> None:
    # on the distinct supports the EM climbs the exact likelihood (a pure protocol's
    # Pr(y|u) is a(y) e^eps if u in S(y) else a(y)), to a stationary point
    o = oracle("ss", 6, 1.0)
    n = 5000
    x = np.random.default_rng(4).choice(6, size=n, p=[0.4, 0.3, 0.2, 0.1, 0.0, 0.0])
    sets, counts = support_sets(o, privatize(o, x, RowRandom(9, rows=range(n))))
    f = ibu(o, sets, counts, n)
    r = math.exp(epsilon_of(o))

    def loglik(g):
        return float(counts @ np.log(1 + (r - 1) * sets @ g))

    assert f.sum() == pytest.approx(1.0, abs=1e-9)
    for seed in range(5):      # no nearby distribution does better
        g = np.clip(f + np.random.default_rng(seed).normal(0, 0.01, 6), 0, None)
        assert loglik(g / g.sum()) <= loglik(f) + 1e-9
    assert np.abs(f[:4] - [0.4, 0.3, 0.2, 0.1]).max() < 0.05


# a table of subsets; first distinct draws
@pytest.mark.parametrize("d,eps", [(6, 1.0), (16, 2.0), (70, 3.0), (70, 1.0)])
def test_subset_selection_samplers_have_the_right_support_rates(d, eps) -> None:
    from privspec.backends.oracles.protocols import _ss_enumerable

    o = oracle("ss", d, eps)
    assert _ss_enumerable(o) == (d <= 64)
    n = 60_000
    x = np.random.default_rng(d).integers(0, d, n)
    bits = np.unpackbits(privatize(o, x, RowRandom(3, rows=range(n))), axis=1, count=d, bitorder="little")
    assert (bits.sum(axis=1) == o.k).all()                          # exactly k categories
    p, q = support_probs(o)
    truth = bits[np.arange(n), x].mean()
    others = (bits.sum() - bits[np.arange(n), x].sum()) / (n * (d - 1))
    assert abs(truth - p) < 5 * np.sqrt(p * (1 - p) / n)
    assert abs(others - q) < 5 * np.sqrt(q * (1 - q) / (n * (d - 1))) * 3   # positions within a row: dependent
