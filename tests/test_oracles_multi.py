"""Multidimensional frequency estimation (privspec.backends.oracles.multi): SPL, SMP and
RS+FD (Arcolezi et al., CIKM 2021) over single-attribute oracles.

1. Monte Carlo: R = 2,000 simulated surveys of n = 1,000 respondents from a correlated,
   non-uniform joint population of A = 3 attributes (d = 3, 4, 6), all privatized in one
   vectorized call; the empirical covariance of each attribute's estimate against
   :func:`covariance`, population form (fresh respondents per survey) and conditional
   form (one fixed table, fresh privacy noise).  Tolerances:

   * trace within 5% (its Wishart standard deviation ``sqrt(2 ||Sigma||_F^2 / (R-1))`` is
     1.3% to 2.3% of the trace here, asserted below 2.5%: 5% is >= 2 of them);
   * each diagonal entry: ``(R-1) S_vv / Sigma_vv ~ chi2(R-1)`` for normal estimates (a
     mean of 1,000 reports), inside its central ``1 - 1e-4`` interval (about +-12%; ~130
     entries, so a correct covariance fails by chance with probability ~1%);
   * each off-diagonal entry within 4.5 of its Wishart standard deviations
     ``sqrt((s_vv s_ww + s_vw^2)/(R-1))``; each mean within 4.5 standard errors.
2. The peers' own reports (multi-freq-ldpy's clients; numpy's global generator and
   numba's, which its compiled oracle clients use, both seeded) through our estimators:
   equal to their aggregators (clip and renormalize) to 1e-9; their RS+FD variance
   functions equal our covariance's diagonal.
3. Privacy: :func:`epsilon_of` against a brute-force evaluation of the whole channel, and
   an empirical audit of RS+FD[GRR] (Clopper-Pearson, as tests/test_privacy_audit.py).
4. Chunking: privatizing rows 0..n-1 at once or in two pieces gives the same reports; the
   text form round-trips.
"""
from __future__ import annotations

import itertools
import math
import zlib

import numpy as np
import pytest
from scipy import stats

from privspec.backends.oracles import pure as orc
from privspec.backends.oracles import multi as om
from privspec.backends.core.rowrandom import RowRandom

DS = (3, 4, 6)
R, N_RESP = 2000, 1000


def correlated_joint(ds: tuple[int, ...], seed: int = 5) -> np.ndarray:
    """A joint table over ``ds``: a two-component mixture of product distributions
    (so the attributes are dependent), with skewed Dirichlet(0.7) components."""
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(2))
    comps = [np.einsum("i,j,k->ijk", *[rng.dirichlet(np.full(d, 0.7)) for d in ds]) for _ in range(2)]
    return w[0] * comps[0] + w[1] * comps[1]


def marginals(joint: np.ndarray) -> list[np.ndarray]:
    A = joint.ndim
    return [joint.sum(axis=tuple(i for i in range(A) if i != j)) for j in range(A)]


def draw_tuples(joint: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    flat = rng.choice(joint.size, size=size, p=joint.ravel())
    return np.column_stack(np.unravel_index(flat, joint.shape)).astype(np.int64)


def pair_table(table: np.ndarray, j: int, l: int, ds: tuple[int, ...] = DS) -> np.ndarray:
    """The empirical joint table of attributes j < l of collected tuples."""
    dj, dl = ds[j], ds[l]
    return np.bincount(table[:, j] * dl + table[:, l], minlength=dj * dl).reshape(dj, dl) / len(table)


def per_survey_counts(o: orc.Oracle, values, group: np.ndarray, reps: int) -> np.ndarray:
    """``(reps, d)`` support counts of the reports of each survey (``group``: its index),
    vectorized for grr and packed bits (ue, ss), one call per survey otherwise."""
    if o.kind == "grr":
        return np.bincount(group * o.d + values, minlength=reps * o.d).reshape(reps, o.d)
    if o.kind in ("sue", "oue", "ss"):
        bits = np.unpackbits(values, axis=1, count=o.d, bitorder="little")
        return np.column_stack([np.bincount(group, weights=bits[:, v], minlength=reps) for v in range(o.d)])
    bounds = np.searchsorted(group, np.arange(reps + 1))
    return np.array([orc.support_counts(o, values[bounds[r]:bounds[r + 1]]) for r in range(reps)])


def per_survey_estimates(mo: om.MultiOracle, rep: om.MultiReports, reps: int, n: int) -> list[np.ndarray]:
    """``(reps, d_j)`` estimates per attribute: survey r is rows ``r n .. (r+1) n - 1``;
    :func:`estimate` on each survey's statistics (those of survey 0 checked against
    :func:`statistics`)."""
    counts, sizes = [], []
    for j, o in enumerate(mo.oracles):
        rows = np.flatnonzero(rep.attribute == j) if mo.protocol == "smp" else np.arange(reps * n)
        group = rows // n
        counts.append(per_survey_counts(o, rep.values[j], group, reps))
        sizes.append(np.bincount(group, minlength=reps))
    first = om.MultiReports(tuple(v[:sizes[j][0]] for j, v in enumerate(rep.values)),
                            None if rep.attribute is None else rep.attribute[:n])
    st = om.statistics(mo, first)
    assert all(np.array_equal(st.counts[j], counts[j][0]) for j in range(mo.A)) and st.n == tuple(s[0] for s in sizes)
    out = [om.estimate(mo, om.MultiStats(tuple(c[r] for c in counts), tuple(int(s[r]) for s in sizes)))
           for r in range(reps)]
    return [np.array([e[j] for e in out]) for j in range(mo.A)]


def check_covariance(E: np.ndarray, mean: np.ndarray, Sigma: np.ndarray) -> None:
    reps = len(E)
    S = np.cov(E.T)
    tr = np.trace(Sigma)
    # the check can detect a 5% error: the trace's own noise is well below 5%
    assert math.sqrt(2 * np.sum(Sigma ** 2) / (reps - 1)) < 0.025 * tr
    assert abs(np.trace(S) - tr) <= 0.05 * tr
    lo, hi = stats.chi2.ppf([0.5e-4, 1 - 0.5e-4], reps - 1) / (reps - 1)
    ratio = np.diag(S) / np.diag(Sigma)
    assert np.all((ratio > lo) & (ratio < hi)), ratio
    sd = np.sqrt((np.outer(np.diag(Sigma), np.diag(Sigma)) + Sigma ** 2) / (reps - 1))
    assert np.all(np.abs(S - Sigma) <= 4.5 * sd)
    assert np.all(np.abs(E.mean(axis=0) - mean) <= 4.5 * np.sqrt(np.diag(Sigma) / reps))


CONFIGS = [("spl", ("grr", "oue", "olh"), None, 2.0), ("smp", ("ss", "grr", "hr"), None, 2.0),
           ("rsfd", None, "grr", 1.0), ("rsfd", None, "oue-z", 2.0), ("rsfd", None, "oue-r", 1.0)]


# ---- 1. Monte Carlo --------------------------------------------------------------------------------
@pytest.mark.parametrize("conditional", [False, True], ids=["population", "conditional"])
@pytest.mark.parametrize("protocol, kinds, variant, eps",
                         [c if c[0] == "smp" else pytest.param(*c, marks=pytest.mark.slow) for c in CONFIGS],
                         ids=[c[2] or c[0] for c in CONFIGS])
def test_monte_carlo_covariance(protocol: str, kinds, variant, eps: float, conditional: bool) -> None:
    mo = om.multi_oracle(protocol, kinds, DS, eps, variant=variant)
    joint = correlated_joint(DS)
    rng = np.random.default_rng(zlib.crc32(f"{protocol}/{variant}/{conditional}".encode()))
    if conditional:
        # one collected table, privatized R times (rows r n + i: fresh randomness per survey)
        table = draw_tuples(joint, N_RESP, rng)
        x = np.tile(table, (R, 1))
        f = [np.bincount(table[:, j], minlength=d) / N_RESP for j, d in enumerate(DS)]
    else:
        x = draw_tuples(joint, R * N_RESP, rng)
        f = marginals(joint)
    reports = om.privatize(mo, x, RowRandom(int(rng.integers(2 ** 32)), rows=range(R * N_RESP)))
    E = per_survey_estimates(mo, reports, R, N_RESP)
    cov = om.covariance(mo, f, N_RESP, conditional=conditional)
    for j in range(mo.A):
        check_covariance(E[j], f[j], cov[j])
    # the whole covariance, across attributes: pairwise tables of the population or the table
    pairs = {(j, l): (pair_table(table, j, l) if conditional else joint.sum(axis=3 - j - l))   # A = 3
             for j in range(mo.A) for l in range(j + 1, mo.A)}
    V = om.joint_covariance(mo, f, N_RESP, conditional, pairs)
    S = np.cov(np.column_stack(E).T)
    sd = np.sqrt((np.outer(np.diag(V), np.diag(V)) + V ** 2) / (R - 1))
    # (these cross blocks are within 4 sd of 0 here: test_cross_attribute_covariance_monte_carlo
    # checks them where the surveys can tell them from 0)
    assert np.all(np.abs(S - V) <= 4.5 * sd)


# strongly dependent answers and little noise: cross-attribute blocks far from 0
PAIR = np.array([[0.45, 0.03, 0.02], [0.03, 0.25, 0.02], [0.02, 0.03, 0.35]]) / 1.2
CROSS = [("spl", "grr", None, 6.0, False), ("spl", "oue", None, 6.0, False), ("smp", "grr", None, 6.0, True),
         ("rsfd", None, "grr", 4.0, True), ("rsfd", None, "sue-z", 4.0, False), ("rsfd", None, "sue-z", 4.0, True)]


@pytest.mark.parametrize("protocol, kinds, variant, eps, conditional",
                         [c if c[2] != "sue-z" else pytest.param(*c, marks=pytest.mark.slow) for c in CROSS],
                         ids=[f"{c[0]}-{c[2] or c[1]}-{'cond' if c[4] else 'pop'}" for c in CROSS])
def test_cross_attribute_covariance_monte_carlo(protocol, kinds, variant, eps, conditional) -> None:
    """The covariance between two attributes' estimates (spl: the answers' own dependence;
    smp given the table: disjoint parts of one table; rsfd: sampling and fake data) agrees
    with 4,000 simulated surveys, and those surveys tell it from 0."""
    reps, n, ds = 4000, 300, (3, 3)
    mo = om.multi_oracle(protocol, kinds, ds, eps, variant=variant)
    rng = np.random.default_rng(zlib.crc32(f"cross/{protocol}/{variant}/{conditional}".encode()))
    if conditional:
        table = draw_tuples(PAIR, n, rng)
        x = np.tile(table, (reps, 1))
        P = pair_table(table, 0, 1, ds)
    else:
        x = draw_tuples(PAIR, reps * n, rng)
        P = PAIR
    f = [P.sum(axis=1), P.sum(axis=0)]
    reports = om.privatize(mo, x, RowRandom(int(rng.integers(2 ** 32)), rows=range(reps * n)))
    E = per_survey_estimates(mo, reports, reps, n)
    V = om.joint_covariance(mo, f, n, conditional, {(0, 1): P})
    S = np.cov(np.column_stack(E).T)
    sd = np.sqrt((np.outer(np.diag(V), np.diag(V)) + V ** 2) / (reps - 1))
    assert np.all(np.abs(S - V) <= 4.5 * sd)
    block, noise = V[:3, 3:], sd[:3, 3:]
    assert np.abs(block / noise).max() > 9                  # the formula: far from 0 ...
    assert np.abs(S[:3, 3:] / noise).max() > 4.5            # ... and so are the surveys
    # the other form (population vs conditional) differs by D / n: the surveys tell them apart
    other = om.cross_covariance(mo, 0, 1, f[0], f[1], n, not conditional, P)
    assert np.any(np.abs(S[:3, 3:] - other) > 4.5 * noise)


def test_covariance_forms() -> None:
    f = marginals(correlated_joint(DS))
    n = 1000
    for protocol, kinds, variant, eps in CONFIGS:
        mo = om.multi_oracle(protocol, kinds, DS, eps, variant=variant)
        pop, cond = om.covariance(mo, f, n), om.covariance(mo, f, n, conditional=True)
        for j, fj in enumerate(f):
            D = np.diag(fj) - np.outer(fj, fj)
            if protocol == "smp":
                inv = om.inverse_binomial_mean(n, 1 / 3)
                assert np.allclose(pop[j] - cond[j], D * (1 - inv) / (n - 1), atol=1e-15)
            else:
                assert np.allclose(pop[j] - cond[j], D / n, atol=1e-15)
            # positive semi-definite (grr's estimates sum to 1: one zero eigenvalue)
            assert np.linalg.eigvalsh(cond[j]).min() > -1e-12 * np.trace(cond[j])
    # spl is the oracle at eps/A; smp given n_j = n/A is the oracle with n/A reports
    mo = om.multi_oracle("spl", "oue", DS, 3.0)
    assert np.allclose(om.covariance(mo, f, n)[2], orc.covariance(orc.oracle("oue", 6, 1.0), f[2], n))
    mo = om.multi_oracle("smp", "grr", DS, 1.0)
    given = om.covariance(mo, f, 999, n_attribute=[333] * 3)[1]
    assert np.allclose(given, orc.covariance(orc.oracle("grr", 4, 1.0), f[1], 333))
    # unconditional on the split: E[1/n_j] > A/n, by (A-1)/n to first order
    assert om.inverse_binomial_mean(999, 1 / 3) * 333 == pytest.approx(1 + 2 / 999, rel=2e-5)
    uncond = om.covariance(mo, f, 999)[1]
    assert np.allclose(uncond, given * om.inverse_binomial_mean(999, 1 / 3) * 333)
    # exact small case: N ~ Bin(3, 1/2) given N >= 1
    pmf = [3 / 8, 3 / 8, 1 / 8]
    assert om.inverse_binomial_mean(3, 0.5) == pytest.approx(sum(p / k for p, k in zip(pmf, (1, 2, 3))) / (7 / 8))


# ---- 2. peers --------------------------------------------------------------------------------------
mf = pytest.importorskip("multi_freq_ldpy")
from multi_freq_ldpy.mdim_freq_est import RSpFD_solution as peer_rsfd  # noqa: E402
from multi_freq_ldpy.mdim_freq_est import SMP_solution as peer_smp  # noqa: E402
from multi_freq_ldpy.mdim_freq_est import SPL_solution as peer_spl  # noqa: E402
from multi_freq_ldpy.mdim_freq_est import Variance_RSpFD as peer_var  # noqa: E402

numba = pytest.importorskip("numba")


@numba.njit
def _numba_seed(seed: int) -> None:
    np.random.seed(seed)


def seed_peers(seed: int) -> None:
    """multi-freq-ldpy draws from two generators: numpy's global one (the sampled
    attribute, RS+FD[GRR]'s fake values) and, inside its ``@jit(nopython=True)`` oracle
    clients (GRR_Client, UE_Client, SS_Client), numba's own, which ``np.random.seed``
    called from Python does not touch: seed both."""
    np.random.seed(seed)
    _numba_seed(seed)


def to_ours(o: orc.Oracle, reports: list) -> np.ndarray:
    """A peer's reports of one attribute in our format (grr ints, ue/ss packed bits)."""
    if o.kind == "grr":
        return np.array([int(r) for r in reports], dtype=np.int64)
    bits = np.zeros((len(reports), o.d), dtype=bool)
    for i, r in enumerate(reports):
        if o.kind == "ss":
            bits[i, np.asarray(r, dtype=np.int64)] = True
        else:
            bits[i] = np.asarray(r) == 1
    return np.packbits(bits, axis=1, bitorder="little")


PEER_DS = [3, 5, 12]
PEER_N = 500


def peer_tuples(seed: int) -> list[list[int]]:
    x = draw_tuples(correlated_joint((3, 5, 12), seed=seed), PEER_N, np.random.default_rng(seed))
    return [[int(v) for v in row] for row in x]


# (subset selection is left out: its numba-compiled client costs ~5 s to compile, and the
# multidimensional wrappers are the same for every oracle; its single-attribute estimator
# is checked against the peer in tests/test_oracles.py)
PEERS = [
    ("spl", "grr", None, lambda t, e: peer_spl.SPL_GRR_Client(t, PEER_DS, 3, e),
     lambda r, e: peer_spl.SPL_GRR_Aggregator_MI(r, PEER_DS, 3, e)),
    ("spl", "oue", None, lambda t, e: peer_spl.SPL_UE_Client(t, PEER_DS, 3, e),
     lambda r, e: peer_spl.SPL_UE_Aggregator_MI(r, 3, e)),
    ("spl", "sue", None, lambda t, e: peer_spl.SPL_UE_Client(t, PEER_DS, 3, e, optimal=False),
     lambda r, e: peer_spl.SPL_UE_Aggregator_MI(r, 3, e, optimal=False)),
    ("spl", "adp", None, lambda t, e: peer_spl.SPL_ADP_Client(t, PEER_DS, 3, e),
     lambda r, e: peer_spl.SPL_ADP_Aggregator_MI(r, PEER_DS, 3, e)),
    ("smp", "grr", None, lambda t, e: peer_smp.SMP_GRR_Client(t, PEER_DS, 3, e),
     lambda r, e: peer_smp.SMP_GRR_Aggregator_MI(r, PEER_DS, 3, e)),
    ("smp", "oue", None, lambda t, e: peer_smp.SMP_UE_Client(t, PEER_DS, 3, e),
     lambda r, e: peer_smp.SMP_UE_Aggregator_MI(r, 3, e)),
    ("smp", "adp", None, lambda t, e: peer_smp.SMP_ADP_Client(t, PEER_DS, 3, e),
     lambda r, e: peer_smp.SMP_ADP_Aggregator_MI(r, PEER_DS, 3, e)),
    ("rsfd", None, "grr", lambda t, e: peer_rsfd.RSpFD_GRR_Client(t, PEER_DS, 3, e),
     lambda r, e: peer_rsfd.RSpFD_GRR_Aggregator_MI(r, PEER_DS, 3, e)),
    ("rsfd", None, "oue-z", lambda t, e: peer_rsfd.RSpFD_UE_zero_Client(t, PEER_DS, 3, e),
     lambda r, e: peer_rsfd.RSpFD_UE_zero_Aggregator_MI(r, PEER_DS, 3, e)),
    ("rsfd", None, "sue-z", lambda t, e: peer_rsfd.RSpFD_UE_zero_Client(t, PEER_DS, 3, e, optimal=False),
     lambda r, e: peer_rsfd.RSpFD_UE_zero_Aggregator_MI(r, PEER_DS, 3, e, optimal=False)),
    ("rsfd", None, "oue-r", lambda t, e: peer_rsfd.RSpFD_UE_rnd_Client(t, PEER_DS, 3, e),
     lambda r, e: peer_rsfd.RSpFD_UE_rnd_Aggregator_MI(r, PEER_DS, 3, e)),
    ("rsfd", None, "sue-r", lambda t, e: peer_rsfd.RSpFD_UE_rnd_Client(t, PEER_DS, 3, e, optimal=False),
     lambda r, e: peer_rsfd.RSpFD_UE_rnd_Aggregator_MI(r, PEER_DS, 3, e, optimal=False)),
    ("rsfd", None, "adp", lambda t, e: peer_rsfd.RSpFD_ADP_Client(t, PEER_DS, 3, e),
     lambda r, e: peer_rsfd.RSpFD_ADP_Aggregator_MI(r, PEER_DS, 3, e)),
]


@pytest.mark.parametrize("i", range(len(PEERS)), ids=[f"{p[0]}-{p[1] or p[2]}" for p in PEERS])
def test_peer_reports_give_peer_estimates(i: int) -> None:
    protocol, kinds, variant, client, aggregate = PEERS[i]
    eps = 1.0 if protocol == "spl" else 0.5   # adp: spl at 1/3 picks grr, grr, oue; rsfd grr, grr, oue
    mo = om.multi_oracle(protocol, kinds, PEER_DS, eps, variant=variant)
    seed_peers(100 + i)
    # spl's clients call the oracle A times per respondent (and slowly): fewer respondents
    peer_reports = [client(t, eps) for t in peer_tuples(i)[:300 if protocol == "spl" else PEER_N]]
    theirs = aggregate(peer_reports, eps)
    if protocol == "smp":
        s = np.array([r[0] for r in peer_reports])
        values = tuple(to_ours(o, [r[1] for r in peer_reports if r[0] == j]) for j, o in enumerate(mo.oracles))
        reports = om.MultiReports(values, s)
    else:
        reports = om.MultiReports(tuple(to_ours(o, [r[j] for r in peer_reports]) for j, o in enumerate(mo.oracles)))
    ours = om.estimate(mo, reports, project="clip")
    for j in range(3):
        assert np.allclose(ours[j], np.asarray(theirs[j], dtype=float), rtol=0, atol=1e-9)
    if kinds == "adp" or variant == "adp":
        assert len(set(mo.kinds)) == 2       # both oracles in play


def test_peer_clients_are_seeded() -> None:
    t = peer_tuples(0)[:50]
    runs = []
    for _ in range(2):
        seed_peers(7)
        runs.append([peer_rsfd.RSpFD_UE_rnd_Client(x, PEER_DS, 3, 1.0) for x in t])
    assert all(np.array_equal(a, b) for r1, r2 in zip(*runs) for a, b in zip(r1, r2))
    np.random.seed(7)            # numpy's generator alone does not fix the reports
    again = [peer_rsfd.RSpFD_UE_rnd_Client(x, PEER_DS, 3, 1.0) for x in t]
    assert not all(np.array_equal(a, b) for r1, r2 in zip(runs[0], again) for a, b in zip(r1, r2))


@pytest.mark.parametrize("variant", ["grr", "oue-z", "sue-z", "oue-r", "sue-r"])
def test_peer_variance_functions(variant: str) -> None:
    ds, eps, n = (3, 7, 20), 1.3, 4321
    mo = om.multi_oracle("rsfd", None, ds, eps, variant=variant)
    f = [np.random.default_rng(d).dirichlet(np.ones(d)) for d in ds]
    cov = om.covariance(mo, f, n)
    for j, o in enumerate(mo.oracles):
        p, q = orc.support_probs(o)
        for v in range(o.d):
            if variant == "grr":
                theirs = peer_var.VAR_RSpFD_GRR(p, q, o.d, 3, n, f[j][v])
            elif variant.endswith("-z"):
                theirs = peer_var.VAR_RSpFD_UE_zero(p, q, 3, n, f[j][v])
            else:
                theirs = peer_var.VAR_RSpFD_UE_rnd(p, q, o.d, 3, n, f[j][v])
            assert cov[j][v, v] == pytest.approx(theirs, rel=1e-12)


# ---- 3. privacy ------------------------------------------------------------------------------------
def channel(mo: om.MultiOracle) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """The whole RS+FD channel by brute force: ``Pr(y | x)`` for every report tuple y (rows)
    and input tuple x (columns), each attribute's report enumerated (grr: d values, ue:
    2^d bit vectors)."""
    real, fake = [], []
    for o, kind_fake in zip(mo.oracles, mo.fakes):
        p, q = orc.support_probs(o)
        if o.kind == "grr":
            K = np.where(np.eye(o.d, dtype=bool), p, (1 - p) / (o.d - 1))
        else:
            Y = np.array(list(itertools.product([0, 1], repeat=o.d)), dtype=bool)       # (2^d, d)
            eye = np.eye(o.d, dtype=bool)
            P = np.where(eye, p, q)                                                   # Pr(bit v = 1 | x)
            K = np.prod(np.where(Y[:, None, :], P[None], 1 - P[None]), axis=2)        # (2^d, d)
        z = {"uniform": np.full(o.d, 1 / o.d), "random": K.mean(axis=1)}.get(kind_fake)
        if z is None:                                                                 # zero vector
            z = np.prod(np.where(Y, q, 1 - q), axis=1)
        real.append(K)
        fake.append(z)
    A = mo.A
    xs = list(itertools.product(*[range(d) for d in mo.ds]))
    ys = list(itertools.product(*[range(len(z)) for z in fake]))
    M = np.zeros((len(ys), len(xs)))
    for b, x in enumerate(xs):
        for a, y in enumerate(ys):
            M[a, b] = sum(real[j][y[j], x[j]] * np.prod([fake[i][y[i]] for i in range(A) if i != j])
                          for j in range(A)) / A
    return M, xs


@pytest.mark.parametrize("variant, ds, eps", [("grr", (3, 3, 3), 1.0), ("grr", (2, 3, 4), 1.0),
                                              ("oue-z", (2, 3, 2), 1.0), ("oue-r", (2, 3, 2), 1.0),
                                              ("sue-r", (3, 2), 1.0), ("adp", (2, 6), 0.05)])
def test_rsfd_epsilon_brute_force(variant: str, ds: tuple[int, ...], eps: float) -> None:
    mo = om.multi_oracle("rsfd", None, ds, eps, variant=variant)
    if variant == "adp":
        assert mo.kinds == ("grr", "oue")       # mixed terms: grr's d p / d q and oue's ratios
    M, xs = channel(mo)
    assert np.allclose(M.sum(axis=0), 1.0)
    lm = np.log(M)
    any_eps = np.max(lm.max(axis=1) - lm.min(axis=1))
    diff1 = [(a, b) for a, b in itertools.combinations(range(len(xs)), 2)
             if sum(u != v for u, v in zip(xs[a], xs[b])) == 1]
    attr_eps = max(np.max(np.abs(lm[:, a] - lm[:, b])) for a, b in diff1)
    assert om.epsilon_of(mo) == pytest.approx(any_eps, rel=1e-12)
    assert om.epsilon_of(mo, "attribute") == pytest.approx(attr_eps, rel=1e-12)
    # any two tuples: eps' > eps, whatever the variant
    assert any_eps == pytest.approx(om.amplified_epsilon(eps, mo.A), rel=1e-12)
    # one attribute: the paper's eps for grr with equal domains and for -z, more otherwise
    if variant == "oue-z" or (variant == "grr" and len(set(ds)) == 1):
        assert attr_eps == pytest.approx(eps, rel=1e-12)
    elif variant != "adp":
        assert attr_eps > eps * 1.01


def test_epsilon_of_spl_smp() -> None:
    for eps in (0.5, 2.0):
        spl = om.multi_oracle("spl", ("grr", "oue", "olh"), DS, eps)
        smp = om.multi_oracle("smp", ("ss", "hr", "sue"), DS, eps)
        assert om.epsilon_of(spl) == pytest.approx(eps, rel=1e-12)
        assert om.epsilon_of(spl, "attribute") == pytest.approx(eps / 3, rel=1e-12)
        assert om.epsilon_of(smp) == pytest.approx(eps, rel=1e-12)
        assert om.epsilon_of(smp, "attribute") == pytest.approx(eps, rel=1e-12)


N_AUDIT = 1_000_000


def epsilon_lower_bound(k1: int, n1: int, k2: int, n2: int, alpha: float = 0.05) -> float:
    """``log(p1_lower / p2_upper)``, one-sided Clopper-Pearson bounds at alpha/2 each."""
    lower = stats.beta.ppf(alpha / 2, k1, n1 - k1 + 1) if k1 > 0 else 0.0
    upper = stats.beta.ppf(1 - alpha / 2, k2 + 1, n2 - k2) if k2 < n2 else 1.0
    return math.log(lower / upper) if lower > 0 else -math.inf


def test_rsfd_grr_audit() -> None:
    """RS+FD[GRR], A = 3, d = 4 each, eps = 1 (eps' = ln(3 (e - 1) + 1) = 1.817).

    Events fixed from the law (module docstring: ``Pr(y | x)`` is proportional to ``sum_j
    T_j`` with ``T_j = d p`` if ``y_j = x_j`` else ``d q``):

    * one attribute: x = (0, 0, 0) vs x' = (1, 0, 0), event {y_0 = 0, y_1 != 0, y_2 != 0}:
      every y in it has ratio ``(d p + 2 d q)/(3 d q) = (e^eps' + 2)/3 = e^eps`` (probability
      0.17 under x): the lower bound is <= eps and >= 0.95 eps;
    * any two tuples: x = (0, 0, 0) vs x' = (1, 1, 1), event {y = (0, 0, 0)}, ratio ``p/q =
      e^eps'`` (probability 0.042 under x): the lower bound exceeds eps (RS+FD is not
      eps-LDP for tuples that differ in every attribute) and stays <= eps'.
    """
    mo = om.multi_oracle("rsfd", None, (4, 4, 4), 1.0, variant="grr")
    rows = range(N_AUDIT)
    x0 = np.zeros((N_AUDIT, 3), dtype=np.int64)
    x1 = x0.copy()
    x1[:, 0] = 1
    x111 = np.ones((N_AUDIT, 3), dtype=np.int64)
    y0 = om.privatize(mo, x0, RowRandom(31, rows=rows)).values
    y1 = om.privatize(mo, x1, RowRandom(32, rows=rows)).values
    y111 = om.privatize(mo, x111, RowRandom(33, rows=rows)).values
    event = lambda y: (y[0] == 0) & (y[1] != 0) & (y[2] != 0)  # noqa: E731
    lower = epsilon_lower_bound(int(event(y0).sum()), N_AUDIT, int(event(y1).sum()), N_AUDIT)
    assert om.epsilon_of(mo, "attribute") == pytest.approx(1.0, rel=1e-12)
    assert 0.95 * 1.0 <= lower <= 1.0
    allzero = lambda y: (y[0] == 0) & (y[1] == 0) & (y[2] == 0)  # noqa: E731
    lower_any = epsilon_lower_bound(int(allzero(y0).sum()), N_AUDIT, int(allzero(y111).sum()), N_AUDIT)
    eps_any = om.epsilon_of(mo)
    assert eps_any == pytest.approx(math.log(3 * (math.e - 1) + 1), rel=1e-12)
    assert 1.0 < 0.95 * eps_any <= lower_any <= eps_any


# ---- 4. chunking, text form, validation ------------------------------------------------------------
ALL = CONFIGS + [("rsfd", None, "sue-z", 1.0), ("rsfd", None, "sue-r", 1.0), ("rsfd", None, "adp", 0.5),
                 ("smp", ("olh", "oue", "grr"), None, 1.0)]


@pytest.mark.parametrize("protocol, kinds, variant, eps", ALL, ids=[f"{c[0]}-{c[2] or c[1][0]}" for c in ALL])
def test_chunking_and_text(protocol: str, kinds, variant, eps: float) -> None:
    ds = (3, 4, 20)
    mo = om.multi_oracle(protocol, kinds, ds, eps, variant=variant)
    n, m = 2003, 777
    x = draw_tuples(correlated_joint(ds, seed=9), n, np.random.default_rng(9))
    whole = om.privatize(mo, x, RowRandom(42, rows=range(n)))
    a = om.privatize(mo, x[:m], RowRandom(42, rows=range(m)))
    b = om.privatize(mo, x[m:], RowRandom(42, rows=range(m, n)))
    for j in range(mo.A):
        assert np.array_equal(whole.values[j], np.concatenate([a.values[j], b.values[j]]))
    if protocol == "smp":
        assert np.array_equal(whole.attribute, np.concatenate([a.attribute, b.attribute]))
        assert np.bincount(whole.attribute, minlength=3).min() > 600   # ~n/3 each
    else:
        assert whole.attribute is None      # RS+FD keeps no trace of the real attribute
    # text: round trip; a corrupted cell makes its row (and only it) invalid
    cols = om.format_reports(mo, whole, names=["age", "sex", "job"])
    assert set(cols) == {"age", "sex", "job"} | ({om.SAMPLED} if protocol == "smp" else set())
    back, bad = om.parse_reports(mo, cols, names=["age", "sex", "job"])
    assert bad.size == 0
    st, st2 = om.statistics(mo, whole), om.statistics(mo, back)
    assert all(np.array_equal(c1, c2) for c1, c2 in zip(st.counts, st2.counts)) and st.n == st2.n
    j = int(whole.attribute[5]) if protocol == "smp" else 1
    broken = {k: v.copy().astype(object) for k, v in cols.items()}
    broken[["age", "sex", "job"][j]][5] = "zz"
    back, bad = om.parse_reports(mo, broken, names=["age", "sex", "job"])
    assert bad.tolist() == [5]
    assert sum(len(v) for v in back.values) == (n - 1 if protocol == "smp" else 3 * (n - 1))


def test_validation() -> None:
    with pytest.raises(ValueError, match="at least two attributes"):
        om.multi_oracle("spl", "grr", (3,), 1.0)
    with pytest.raises(ValueError, match="unknown RS\\+FD variant"):
        om.multi_oracle("rsfd", None, (3, 3), 1.0, variant="olh")
    with pytest.raises(ValueError, match="one per attribute"):
        om.multi_oracle("smp", ("grr", "oue"), (3, 3, 3), 1.0)
    with pytest.raises(ValueError, match="variant is a parameter of rsfd"):
        om.multi_oracle("spl", "grr", (3, 3), 1.0, variant="grr")
    mo = om.multi_oracle("spl", "grr", (3, 3), 1.0)
    with pytest.raises(ValueError, match="codes in"):
        om.privatize(mo, np.array([[0, 3]]), RowRandom(1, rows=range(1)))
    with pytest.raises(ValueError, match="rows"):
        om.privatize(mo, np.array([[0, 2]]), RowRandom(1, rows=range(2)))
    smp = om.multi_oracle("smp", "grr", (3, 3), 1.0)
    est = om.estimate(smp, om.MultiStats((np.array([1, 0, 0]), np.zeros(3)), (1, 0)))
    assert np.all(np.isnan(est[1])) and not np.any(np.isnan(est[0]))
