"""Independence tests on subset-valued (or any finite-report) contingency tables
(subset privacy, section IV-B).

The table ``N[a, b]`` counts respondents who reported ``a`` for X and ``b`` for Y
through a product mechanism.  Since ``P(A = a, B = b) = mu_a mu_b 1_a^T W 1_b``,
``X`` and ``Y`` are independent iff ``A`` and ``B`` are.  Four tests:

* ``pearson``: ``sum (n_ab - e_ab)^2 / e_ab`` with ``e_ab = n P(A = a) P(B = b)`` at the
  marginal MLEs;
* ``lrt``: Eq. 8 with the joint and marginal MLEs, chi-square with (p - 1)(q - 1) df;
* ``lrt_mom``: Eq. 8 with method-of-moments estimates;
* ``bonferroni``: Pearson tests of the p q aggregated 2 x 2 tables of Table I, the
  smallest p-value times p q.

``calibrate permutation(B)`` replaces the asymptotic p-value by the permutation one:
shuffling A against B keeps both margins of N, so the B permuted tables are drawn
directly as random tables with N's margins (Patefield's algorithm, via
``scipy.stats.random_table``), never by shuffling respondents.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from .channel import Channel, product_channel
from .estimators import em, mom, project_simplex


@dataclass(frozen=True)
class TestOutcome:
    __test__ = False

    method: str
    statistic: float
    df: float | None
    p_value: float
    note: str = ""


def _safe_w(ch: Channel, table_counts: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, bool]:
    """Make every observed cell's probability positive (MoM may leave the simplex)."""
    lam = ch.Kn @ w
    if np.all(lam[table_counts > 0] > 0):
        return w, False
    return 0.999999 * project_simplex(w) + 1e-6 / len(w), True


def _lrt_statistic(chA: Channel, chB: Channel, joint: Channel, N: np.ndarray, wA, wB, W) -> float:
    """Eq. 8: ``2 sum n_ab log( 1_a^T W 1_b / (1_a^T w_X)(1_b^T w_Y) )`` (the mu's cancel);
    written with the channels so it also holds for randomized-response factors."""
    lam_joint = (joint.Kn @ W).reshape(N.shape)
    lam_null = np.outer(chA.Kn @ wA, chB.Kn @ wB)
    nz = N > 0
    return float(2.0 * np.sum(N[nz] * (np.log(lam_joint[nz]) - np.log(lam_null[nz]))))


def _statistic(method: str, chA: Channel, chB: Channel, joint: Channel, N: np.ndarray) -> tuple[float, float | None, str]:
    p, q = chA.p, chB.p
    rows, cols = N.sum(axis=1), N.sum(axis=0)
    n = N.sum()
    if method == "pearson":
        wA, wB = em(chA, rows).w, em(chB, cols).w
        e = n * np.outer(chA.Kn @ wA, chB.Kn @ wB)
        cells = e > 0
        stat = float(np.sum((N[cells] - e[cells]) ** 2 / e[cells]))
        # Goodness of fit of the independence model: cells with positive probability, less 1,
        # less the (p - 1) + (q - 1) estimated parameters.  (The paper's "chi^2_sr" counts the
        # s r cells without these constraints; we follow the mathematics.)
        df = int(cells.sum()) - 1 - (p - 1) - (q - 1)
        return stat, float(df), "expected counts at the marginal MLEs"
    if method in ("lrt", "lrt_mom"):
        flat = N.ravel()
        if method == "lrt":
            wA, wB, W = em(chA, rows).w, em(chB, cols).w, em(joint, flat).w
            note = "joint and marginal MLEs (EM)"
        else:
            wA, wB, W = mom(chA, rows).w, mom(chB, cols).w, mom(joint, flat).w
            note = "method-of-moments estimates"
            fixes = []
            wA, fa = _safe_w(chA, rows, wA)
            wB, fb = _safe_w(chB, cols, wB)
            W, fw = _safe_w(joint, flat, W)
            if fa or fb or fw:
                fixes.append("projected onto the simplex where MoM left it")
            if fixes:
                note += "; " + "; ".join(fixes)
        return _lrt_statistic(chA, chB, joint, N, wA, wB, W), float((p - 1) * (q - 1)), note
    if method == "bonferroni":
        TA, TB = chA.Tn, chB.Tn
        n11 = TA @ N @ TB.T                       # x in a and y in b  (Table I)
        inA = TA @ rows                           # x in a
        inB = TB @ cols                           # y in b
        n10 = inA[:, None] - n11
        n01 = inB[None, :] - n11
        n00 = n - n11 - n10 - n01
        r1, r0 = n11 + n10, n01 + n00
        c1, c0 = n11 + n01, n10 + n00
        with np.errstate(divide="ignore", invalid="ignore"):
            chi2 = n * (n11 * n00 - n10 * n01) ** 2 / (r1 * r0 * c1 * c0)
        chi2 = np.where(np.isfinite(chi2), chi2, 0.0)
        pvals = stats.chi2.sf(chi2, 1)
        k = int(np.argmin(pvals))
        return float(chi2.ravel()[k]), 1.0, f"{p * q} aggregated 2x2 tables (Table I)"
    raise ValueError(f"unknown test {method!r}")


def independence_test(chA: Channel, chB: Channel, N: np.ndarray, method: str, *,
                      permutations: int | None = None, seed: int | None = None) -> TestOutcome:
    """Test X independent of Y from the report table ``N`` (rows: chA's observations)."""
    N = np.asarray(N, dtype=float)
    joint = product_channel([chA, chB])
    stat, df, note = _statistic(method, chA, chB, joint, N)
    if method == "bonferroni":
        p, q = chA.p, chB.p
        p_value = min(1.0, p * q * float(stats.chi2.sf(stat, 1)))
    else:
        p_value = float(stats.chi2.sf(stat, df)) if df and df > 0 else float("nan")
    if permutations:
        rng = np.random.default_rng(seed)
        rows, cols = N.sum(axis=1).astype(int), N.sum(axis=0).astype(int)
        keep_r, keep_c = rows > 0, cols > 0
        tables = stats.random_table(rows[keep_r], cols[keep_c]).rvs(size=permutations, random_state=rng)
        full = np.zeros((permutations,) + N.shape)
        full[np.ix_(np.arange(permutations), np.nonzero(keep_r)[0], np.nonzero(keep_c)[0])] = tables
        perm = np.array([_statistic(method, chA, chB, joint, t)[0] for t in full])
        p_value = float((1 + np.sum(perm >= stat - 1e-12)) / (permutations + 1))
        note += f"; p-value calibrated by {permutations} permutations"
    return TestOutcome(method, stat, df, p_value, note)
