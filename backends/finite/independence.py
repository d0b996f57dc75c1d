"""Independence tests on subset-valued (or any finite-report) contingency tables
(subset privacy, section IV-B), calibrated so that they hold their size.

The table ``N[a, b]`` counts respondents who reported ``a`` for X and ``b`` for Y
through a product mechanism.  Since ``P(A = a, B = b) = mu_a mu_b 1_a^T W 1_b``,
``X`` and ``Y`` are independent iff ``A`` and ``B`` are.  Four statistics:

* ``pearson``: ``sum (n_ab - e_ab)^2 / e_ab`` with ``e_ab = n P(A = a) P(B = b)`` at the
  marginal MLEs;
* ``lrt``: Eq. 8 with the joint and marginal MLEs;
* ``lrt_mom``: Eq. 8 evaluated at the method-of-moments estimates;
* ``bonferroni``: the largest of the p q Pearson chi-squares of the aggregated 2 x 2
  tables of Table I (the smallest of their p-values).

Calibration (how a statistic becomes a p-value)
-----------------------------------------------
``permutation`` (the default, :data:`DEFAULT_DRAWS` draws): under H0 and a product
mechanism the pairs ``(A_i, B_i)`` are iid with ``A`` independent of ``B``, so given both
margins of ``N`` every re-pairing of the A reports with the B reports is equally likely
(the paper's "shuffle the order of A_i", Appendix IV-B).  The permuted tables are drawn
directly as random tables with ``N``'s margins (Patefield's algorithm,
``scipy.stats.random_table``), never by shuffling respondents, and
``p = (1 + #{T* >= T}) / (B + 1)`` has ``P(p <= alpha) <= floor(alpha (B + 1)) / (B + 1)``
for any statistic and any n: with B = 999 or 199 and alpha = 0.05, exactly 0.05.
Because the margins are fixed, every marginal fit (Pearson's expected counts, the LRT's
marginal MLEs, the MoM marginals) is computed once; only the joint part is redone per
table, vectorized over the tables: ``pearson``, ``lrt_mom`` (MoM is linear in the table)
and ``bonferroni`` in closed form, ``lrt`` by an EM on all permuted tables at once that
uses the Kronecker structure of the joint channel (``lambda = K_A W K_B^T``) and drops
each table as soon as bounds on its maximal likelihood decide ``T* >= T``
(:func:`_lrt_exceeds`): the p-value is the one of the exact LRT, at a fraction of the
cost of fitting every table.

``asymptotic``: the chi-square (``pearson``, ``lrt``) or Bonferroni-chi-square
(``bonferroni``) p-value, only where it holds its size.  It is refused
(:class:`~privspec.errors.BackendError`) for ``lrt_mom`` always (its statistic evaluates
the likelihood at points that are not its maximizers, so it is a difference of
quadratic forms with no chi-square limit and is negative in most samples), for
``pearson`` where Cochran's rule on the expected counts fails (B010), for ``lrt`` where
the joint MLE is near the boundary of the simplex (B011: a cell of the null joint
``w_X w_Y^T`` less than :data:`LRT_MIN_Z` standard errors from 0), and for
``bonferroni`` where an aggregated 2 x 2 table has an expected count below 5 (B012).
A parametric bootstrap (tables drawn from the fitted null, every fit redone) is not
offered: it is only asymptotically valid where permutation is exact, and for ``lrt`` it
costs three full EM fits per draw where permutation needs part of one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.progress import progress
from privspec.backends.core.channel import Channel, product_channel
from privspec.backends.core.estimators import em, mom

#: permutations drawn when a test has no ``calibrate`` clause
DEFAULT_DRAWS = 999
#: the seed of the permutations when the runner gives none (so ``privspec run`` repeats itself)
DEFAULT_SEED = 0
#: the calibrations a test accepts, the default first
CALIBRATIONS = ("permutation", "asymptotic")
#: Cochran's rule for Pearson's chi-square: every expected count >= 1 and at most 20% below 5
COCHRAN_MIN, COCHRAN_SMALL, COCHRAN_FRACTION = 1.0, 5.0, 0.2
#: the LRT's chi-square limit needs the joint MLE inside the simplex: every cell of the
#: null joint at least this many (asymptotic) standard errors from 0
LRT_MIN_Z = 1.0
#: KKT tolerance of the observed table's joint MLE: its log-likelihood is within
#: n log(1 + tol) of the maximum (the statistic to 2e-3 at n = 1e5)
_KKT_TOL = 1e-8
#: tables per vectorized batch: bounds memory at about 2e7 cells
_CELLS_PER_BATCH = 20_000_000
#: the LRT's EM works on sub-batches of about this many gathered channel entries
_GATHERED = 400_000


@dataclass(frozen=True)
class TestOutcome:
    """A test of independence: its statistic and how its p-value was calibrated.

    ``df`` is the degrees of freedom of the statistic's chi-square limit where it has one
    (None for ``lrt_mom``); with ``calibration == "permutation"`` the p-value does not
    use it.  ``draws`` is the number of permuted tables (None for ``asymptotic``) and
    ``seed`` the seed they were drawn with.
    """

    __test__ = False

    method: str
    statistic: float
    df: float | None
    p_value: float
    note: str = ""
    calibration: str = "permutation"
    draws: int | None = None
    seed: int | None = None
    undecided: int = 0


# -- the fits that only depend on the margins -------------------------------------------------
@dataclass(frozen=True)
class _Margins:
    """What a statistic needs that stays fixed when A is re-paired with B."""

    method: str
    KA: np.ndarray
    KB: np.ndarray
    TA: np.ndarray
    TB: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    n: float
    wA: np.ndarray | None = None
    wB: np.ndarray | None = None
    loglik0: float = 0.0          # the null log-likelihood (constant under permutation)
    note: str = ""


def _safe_w(K: np.ndarray, counts: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, bool]:
    """Make every observed report's probability positive (MoM may leave the simplex)."""
    lam = K @ w
    if np.all(lam[counts > 0] > 0):
        return w, False
    return 0.999999 * _project_rows(w[None])[0] + 1e-6 / len(w), True


def _project_rows(V: np.ndarray) -> np.ndarray:
    """Each row of ``V`` projected onto the probability simplex (sort-based, vectorized).

    Examples
    --------
    >>> _project_rows(np.array([[0.6, 0.6, -0.2], [0.2, 0.3, 0.5]])).round(3).tolist()
    [[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]
    """
    U = -np.sort(-V, axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    k = np.arange(1, V.shape[1] + 1)
    rho = np.sum(U - css / k > 0, axis=1) - 1          # the condition holds on a prefix
    theta = css[np.arange(len(V)), rho] / (rho + 1)
    return np.maximum(V - theta[:, None], 0.0)


def _null_loglik(KA, KB, rows, cols, wA, wB) -> float:
    """``sum n_ab log(P(A = a) P(B = b))`` splits into the two margins' log-likelihoods."""
    la, lb = KA @ wA, KB @ wB
    return float(rows[rows > 0] @ np.log(la[rows > 0]) + cols[cols > 0] @ np.log(lb[cols > 0]))


def _margins(method: str, chA: Channel, chB: Channel, N: np.ndarray) -> _Margins:
    KA, KB, TA, TB = chA.Kn, chB.Kn, chA.Tn, chB.Tn
    rows, cols = N.sum(axis=1), N.sum(axis=0)
    base = dict(method=method, KA=KA, KB=KB, TA=TA, TB=TB, rows=rows, cols=cols, n=float(N.sum()))
    if method in ("pearson", "lrt"):
        wA, wB = em(chA, rows).w, em(chB, cols).w
        note = "expected counts at the marginal MLEs" if method == "pearson" else "joint and marginal MLEs"
        return _Margins(**base, wA=wA, wB=wB, loglik0=_null_loglik(KA, KB, rows, cols, wA, wB), note=note)
    if method == "lrt_mom":
        (wA, fa), (wB, fb) = _safe_w(KA, rows, mom(chA, rows).w), _safe_w(KB, cols, mom(chB, cols).w)
        note = "likelihoods at the method-of-moments estimates"
        if fa or fb:
            note += "; marginal MoM projected onto the simplex"
        return _Margins(**base, wA=wA, wB=wB, loglik0=_null_loglik(KA, KB, rows, cols, wA, wB), note=note)
    if method == "bonferroni":
        return _Margins(**base, note=f"largest chi-square of the {chA.p * chB.p} aggregated 2x2 tables (Table I)")
    raise ValueError(f"unknown test {method!r}")


# -- statistics of a batch of tables with the margins of m --------------------------------------
def _pearson(m: _Margins, tables: np.ndarray) -> np.ndarray:
    e = m.n * np.outer(m.KA @ m.wA, m.KB @ m.wB)
    cells = e > 0
    return np.sum((tables[:, cells] - e[cells]) ** 2 / e[cells], axis=1)


def _lrt_mom(m: _Margins, tables: np.ndarray) -> np.ndarray:
    """MoM is linear in the table: ``W = QA^-1 (TA N TB^T / n) QB^-T`` (the joint
    ``Q = QA (x) QB``), projected onto the simplex where it gives an observed report
    probability <= 0; then Eq. 8 at the MoM estimates."""
    QA, QB = m.TA @ m.KA, m.TB @ m.KB
    gamma = m.TA @ tables @ m.TB.T / m.n                                  # (C, p, q)
    W = np.linalg.solve(QA, gamma)                                        # QA^-1 gamma
    W = np.swapaxes(np.linalg.solve(QB, np.swapaxes(W, 1, 2)), 1, 2)     # ... QB^-T
    lam = m.KA @ W @ m.KB.T
    pos = tables > 0
    bad = np.any(pos & (lam <= 0), axis=(1, 2))
    if bad.any():
        C, p, q = W.shape
        W[bad] = (0.999999 * _project_rows(W[bad].reshape(-1, p * q)) + 1e-6 / (p * q)).reshape(-1, p, q)
        lam[bad] = m.KA @ W[bad] @ m.KB.T
    ll = np.sum(np.where(pos, tables * np.log(np.where(pos, lam, 1.0)), 0.0), axis=(1, 2))
    return 2.0 * (ll - m.loglik0)


def _aggregated_chi2(m: _Margins, tables: np.ndarray) -> np.ndarray:
    """Pearson's chi-square of every aggregated 2 x 2 table (Table I), shape (C, p, q)."""
    n = m.n
    n11 = m.TA @ tables @ m.TB.T                   # x in a and y in b
    inA = (m.TA @ m.rows)[:, None]                 # x in a
    inB = (m.TB @ m.cols)[None, :]                 # y in b
    n10, n01 = inA - n11, inB - n11
    n00 = n - n11 - n10 - n01
    with np.errstate(divide="ignore", invalid="ignore"):
        chi2 = n * (n11 * n00 - n10 * n01) ** 2 / (inA * (n - inA) * inB * (n - inB))
    return np.where(np.isfinite(chi2), chi2, 0.0)


def _bonferroni(m: _Margins, tables: np.ndarray) -> np.ndarray:
    return _aggregated_chi2(m, tables).max(axis=(1, 2))


_CLOSED_FORM = {"pearson": _pearson, "lrt_mom": _lrt_mom, "bonferroni": _bonferroni}


# -- the joint MLE, Kronecker-structured and vectorized over tables ------------------------------
class _ObservedCells:
    """The nonzero cells of a batch of tables, padded to a common length.

    The likelihood of ``W`` only involves observed cells: ``lambda_c = KA[a_c] W KB[b_c]^T``
    and the EM numerator ``G = sum_c (n_c / lambda_c) KA[a_c]^T KB[b_c]`` (the gradient),
    so one evaluation costs O(cells x p x q) per table however many cells the design has.
    """

    def __init__(self, KA: np.ndarray, KB: np.ndarray, tables: np.ndarray):
        C, s, r = tables.shape
        flat = tables.reshape(C, s * r)
        m = max(1, int((flat > 0).sum(axis=1).max()))
        order = np.argsort(flat <= 0, axis=1, kind="stable")[:, :m]      # observed cells first
        self.counts = np.take_along_axis(flat, order, axis=1)
        a, b = np.divmod(order, r)
        self.KAg, self.KBg = KA[a], KB[b]                                   # (C, m, p), (C, m, q)
        self.pos = self.counts > 0

    def keep(self, mask: np.ndarray) -> None:
        self.counts, self.pos, self.KAg, self.KBg = (x[mask] for x in (self.counts, self.pos, self.KAg, self.KBg))

    def evaluate(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Log-likelihoods (C,) and EM numerators ``G`` (C, p, q) at ``W`` (C, p, q)."""
        lam = np.sum((self.KAg @ W) * self.KBg, axis=2)
        lam = np.where(self.pos, lam, 1.0)
        G = np.swapaxes(self.KAg * (self.counts / lam)[:, :, None], 1, 2) @ self.KBg
        return np.sum(self.counts * np.log(lam), axis=1), G


def _squarem(cells: _ObservedCells, W: np.ndarray, ll: np.ndarray, G: np.ndarray, n: float):
    """One SQUAREM cycle (Varadhan and Roland 2008, S3) of EM ``W <- W * G / n`` for every
    table: two EM steps, an extrapolation whose step is halved until it stays in the
    simplex, kept only where it does not lower the likelihood (so the cycle is monotone)."""
    W1 = W * G / n
    _, G1 = cells.evaluate(W1)
    W2 = W1 * G1 / n
    ll2, G2 = cells.evaluate(W2)
    r, v = W1 - W, W2 - 2 * W1 + W
    nr, nv = np.sqrt(np.sum(r * r, axis=(1, 2))), np.sqrt(np.sum(v * v, axis=(1, 2)))
    alpha = np.minimum(-nr / np.where(nv > 0, nv, 1.0), -1.0)
    for _ in range(8):
        cand = W - 2 * alpha[:, None, None] * r + (alpha ** 2)[:, None, None] * v
        outside = np.any(cand < 0, axis=(1, 2)) & (alpha < -1)
        if not outside.any():
            break
        alpha = np.where(outside, (alpha - 1) / 2, alpha)
    cand = np.maximum(cand, 0.0)
    cand /= cand.sum(axis=(1, 2), keepdims=True)
    llc, Gc = cells.evaluate(cand)
    better = (llc >= ll2) & (nv > 0)
    pick = better[:, None, None]
    return np.where(pick, cand, W2), np.where(better, llc, ll2), np.where(pick, Gc, G2)


def _upper(ll: np.ndarray, G: np.ndarray, n: float) -> np.ndarray:
    """An upper bound of the maximal log-likelihood from any W (Jensen on the mixture
    likelihood): ``l(W*) - l(W) = sum n_c log(lambda*_c / lambda_c)
    <= n log(sum_j W*_j G_j / n) <= n log(max_j G_j / n)``."""
    return ll + n * np.log(np.max(G, axis=(1, 2)) / n)


def _lrt_exceeds(m: _Margins, tables: np.ndarray, threshold: float, max_cycles: int = 2_000):
    """For each table, whether its maximal joint log-likelihood may reach ``threshold``.

    EM-SQUAREM runs on many tables at once from the null fit ``w_A w_B^T`` (a point that
    only depends on the margins); a table leaves the batch as soon as its log-likelihood
    reaches the threshold (counted) or its upper bound falls below it (not counted).
    The rare table still undecided after ``max_cycles`` is counted, which can only make
    the p-value larger.  Returns (counted, undecided).
    """
    C = tables.shape[0]
    p, q = m.KA.shape[1], m.KB.shape[1]
    # sub-batches whose gathered channel rows (tables x observed cells x p) stay a few MB:
    # EM on them is memory-bound, and large temporaries cost more than the Python loop
    observed = max(1, int((tables > 0).reshape(C, -1).sum(axis=1).max()))
    size = max(8, _GATHERED // (observed * max(p, q)))
    counted = np.ones(C, dtype=bool)
    undecided = 0
    for start in range(0, C, size):
        part = slice(start, min(C, start + size))
        counted[part], left = _lrt_exceeds_batch(m, tables[part], threshold, max_cycles)
        undecided += left
    return counted, undecided


def _lrt_exceeds_batch(m: _Margins, tables: np.ndarray, threshold: float, max_cycles: int):
    C = tables.shape[0]
    counted = np.ones(C, dtype=bool)
    active = np.arange(C)
    p, q = m.KA.shape[1], m.KB.shape[1]
    W = np.broadcast_to(0.999 * np.outer(m.wA, m.wB) + 0.001 / (p * q), (C, p, q)).copy()
    cells = _ObservedCells(m.KA, m.KB, tables)
    ll, G = cells.evaluate(W)
    for _ in range(max_cycles):
        yes, no = ll >= threshold, _upper(ll, G, m.n) < threshold
        done = yes | no
        counted[active[no]] = False
        if done.any():
            stay = ~done
            active, W, ll, G = active[stay], W[stay], ll[stay], G[stay]
            cells.keep(stay)
        if active.size == 0:
            break
        W, ll, G = _squarem(cells, W, ll, G, m.n)
    return counted, int(active.size)


# -- asymptotic p-values and when they are refused ---------------------------------------------
def _simplex_avar(info: np.ndarray) -> np.ndarray:
    """``B (B^T I B)^-1 B^T``: the asymptotic covariance of an MLE on the simplex."""
    k = info.shape[0]
    Bm = np.vstack([np.eye(k - 1), -np.ones((1, k - 1))])
    return Bm @ np.linalg.pinv(Bm.T @ info @ Bm) @ Bm.T


def _lrt_boundary_z(m: _Margins) -> float:
    """The smallest ``W0_xy / se(W_xy)`` over the cells of the null joint ``W0 = w_X w_Y^T``.

    Under H0 the reports' probabilities factor, so the joint Fisher information per
    respondent is ``I_A (x) I_B`` with ``I_A = K_A^T diag(1 / lambda_A) K_A``.  A cell a few
    standard errors from 0 keeps the joint MLE inside the simplex, where Eq. 8 is
    asymptotically chi-square; near 0 the MLE sits on the boundary with positive
    probability and the statistic is stochastically smaller (the test too conservative).
    """
    la, lb = m.KA @ m.wA, m.KB @ m.wB
    IA = m.KA[la > 0].T @ (m.KA[la > 0] / la[la > 0][:, None])
    IB = m.KB[lb > 0].T @ (m.KB[lb > 0] / lb[lb > 0][:, None])
    V = _simplex_avar(np.kron(IA, IB))
    se = np.sqrt(np.maximum(np.diag(V), 1e-300) / m.n)
    return float(np.min(np.outer(m.wA, m.wB).ravel() / se))


def _refuse_asymptotic(m: _Margins, df: float | None) -> None:
    """Raise where the asymptotic p-value would not hold its size (see the module doc)."""
    method = m.method
    if method == "lrt_mom":
        raise BackendError(Diagnostic(
            "B013", "lrt_mom has no asymptotic p-value: Eq. 8 evaluated at the MoM estimates (not the "
                    "maximizers) has no chi-square limit and is negative in most samples",
            hint="drop the calibrate clause (permutation, exact in size) or use by lrt"))
    if method == "pearson":
        e = m.n * np.outer(m.KA @ m.wA, m.KB @ m.wB)
        e = e[e > 0]
        small = float(np.mean(e < COCHRAN_SMALL))
        if e.min() < COCHRAN_MIN or small > COCHRAN_FRACTION:
            raise BackendError(Diagnostic(
                "B010", f"Pearson's chi-square with {df:.0f} df does not hold its size on this table: "
                        f"the smallest expected count is {e.min():.3g} and {100 * small:.0f}% of the "
                        f"{e.size} cells expect fewer than 5 (Cochran's rule: none below 1, at most 20% below 5)",
                hint="drop the calibrate clause: the permutation p-value is exact in size at any n"))
    if method == "lrt":
        z = _lrt_boundary_z(m)
        if z < LRT_MIN_Z:
            raise BackendError(Diagnostic(
                "B011", f"the likelihood ratio's chi-square limit does not hold here: a cell of the null joint "
                        f"w_X w_Y^T is {z:.2g} standard errors from 0 (needs {LRT_MIN_Z:g}), so the joint MLE "
                        "often lies on the boundary and the chi-square p-value is too large",
                hint="drop the calibrate clause: the permutation p-value is exact in size at any n"))
    if method == "bonferroni":
        n = m.n
        inA, inB = m.TA @ m.rows, m.TB @ m.cols
        low = min(inA.min(), (n - inA).min()) * min(inB.min(), (n - inB).min()) / n
        if low < COCHRAN_SMALL:
            raise BackendError(Diagnostic(
                "B012", f"an aggregated 2x2 table (Table I) expects {low:.3g} < 5 respondents in a cell: its "
                        "chi-square p-value, and so the Bonferroni bound, does not hold its size",
                hint="drop the calibrate clause: the permutation p-value is exact in size at any n"))


def _df(method: str, m: _Margins) -> float | None:
    p, q = m.KA.shape[1], m.KB.shape[1]
    if method == "pearson":
        # goodness of fit of the independence model: cells with positive probability, less 1,
        # less the (p - 1) + (q - 1) estimated parameters.  (The paper's "chi^2_sr" counts the
        # s r cells without these constraints; we follow the mathematics.)
        cells = np.outer(m.KA @ m.wA, m.KB @ m.wB) > 0
        return float(int(cells.sum()) - 1 - (p - 1) - (q - 1))
    if method == "lrt":
        return float((p - 1) * (q - 1))
    if method == "bonferroni":
        return 1.0
    return None                                       # lrt_mom: no chi-square limit


# -- the test ---------------------------------------------------------------------------------
def _random_tables(rows: np.ndarray, cols: np.ndarray, draws: int, rng: np.random.Generator):
    """Batches of random tables with these margins (Patefield), zero rows and columns kept
    as zeros; the batch size depends on the shape only, so a seed always gives the same tables."""
    rows_i, cols_i = np.rint(rows).astype(np.int64), np.rint(cols).astype(np.int64)
    keep_r, keep_c = np.nonzero(rows_i > 0)[0], np.nonzero(cols_i > 0)[0]
    dist = scipy.stats.random_table(rows_i[keep_r], cols_i[keep_c])
    per_batch = max(1, _CELLS_PER_BATCH // (rows.size * cols.size))
    for done in progress(range(0, draws, per_batch), total=-(-draws // per_batch), desc="permutations",
                         unit="batch"):
        size = min(per_batch, draws - done)
        drawn = dist.rvs(size=size, random_state=rng)
        full = np.zeros((size, rows.size, cols.size))
        full[:, keep_r[:, None], keep_c[None, :]] = drawn
        yield full


def independence_test(chA: Channel, chB: Channel, N: np.ndarray, method: str, *,
                      calibration: str = "permutation", draws: int | None = None,
                      seed: int | np.random.SeedSequence | None = None) -> TestOutcome:
    """Test ``X`` independent of ``Y`` from the report table ``N`` (rows: chA's reports).

    Parameters
    ----------
    chA, chB : Channel
        The two factors of the product mechanism.
    N : ndarray
        Counts of report pairs, ``chA.n_obs x chB.n_obs``.
    method : {"pearson", "lrt", "lrt_mom", "bonferroni"}
        The statistic.
    calibration : {"permutation", "asymptotic"}
        ``"permutation"`` (exact in size; ``draws`` random tables with N's margins) or the
        chi-square limit, refused with a :class:`~privspec.errors.BackendError` where it
        does not hold its size.
    draws : int, optional
        Permutations (default :data:`DEFAULT_DRAWS`).
    seed : int or SeedSequence, optional
        Seed of the permutations (default :data:`DEFAULT_SEED`).

    Examples
    --------
    >>> from privspec.backends.core.channel import matrix_channel
    >>> import sympy
    >>> warner = matrix_channel(("a", "b"), sympy.Matrix([[3, 1], [1, 3]]) / 4)   # Warner's design
    >>> out = independence_test(warner, warner, np.array([[30., 20.], [20., 30.]]), "pearson", draws=199, seed=1)
    >>> out.calibration, out.draws, out.df, round(out.statistic, 3)
    ('permutation', 199, 1.0, 4.0)
    >>> round(out.p_value * 200) == out.p_value * 200                 # a multiple of 1/(B + 1)
    True
    >>> independence_test(warner, warner, np.array([[30., 20.], [20., 30.]]), "pearson",
    ...                   calibration="asymptotic").p_value            # doctest: +ELLIPSIS
    0.0455...

    The LRT of a strongly dependent table: no permuted table reaches its statistic.

    >>> out = independence_test(warner, warner, np.array([[40., 10.], [10., 40.]]), "lrt", draws=99, seed=1)
    >>> round(out.statistic, 2), out.df, out.p_value
    (24.2, 1.0, 0.01)
    """
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, not {calibration!r}")
    N = np.asarray(N, dtype=float)
    m = _margins(method, chA, chB, N)
    df = _df(method, m)
    ll = None
    if method == "lrt":
        # the observed table's joint MLE (EM on its observed cells, from the null fit); the
        # joint model contains the null point w_A w_B^T, so its maximum is >= loglik0
        fit = em(product_channel([chA, chB]), N.ravel(), np.outer(m.wA, m.wB).ravel(), tol=_KKT_TOL)
        ll = max(fit.loglik, m.loglik0)
        stat = 2.0 * (ll - m.loglik0)
    else:
        stat = float(_CLOSED_FORM[method](m, N[None])[0])
    if calibration == "asymptotic":
        _refuse_asymptotic(m, df)
        if method == "bonferroni":
            p_value = min(1.0, chA.p * chB.p * float(scipy.stats.chi2.sf(stat, 1)))
            note = m.note + "; Bonferroni bound on the smallest chi-square(1) p-value"
        else:
            p_value = float(scipy.stats.chi2.sf(stat, df))
            note = m.note + f"; chi-square({df:.0f}) p-value"
        return TestOutcome(method, stat, df, p_value, note, "asymptotic")
    return _permutation_test(method, m, stat, df, ll, draws, seed)


def _permutation_test(method: str, m: _Margins, stat: float, df: float | None, ll: float | None, draws: int | None,
                      seed: int | np.random.SeedSequence | None) -> TestOutcome:
    """The statistic calibrated by ``draws`` random tables with the observed margins (the
    LRT's by :func:`_lrt_exceeds` against the observed joint log-likelihood ``ll``)."""
    B = DEFAULT_DRAWS if draws is None else int(draws)
    if B < 1:
        raise ValueError("draws must be at least 1")
    seed_used = DEFAULT_SEED if seed is None else seed
    rng = np.random.default_rng(seed_used)
    exceed, undecided = 0, 0
    for tables in _random_tables(m.rows, m.cols, B, rng):
        if method == "lrt":
            counted, left = _lrt_exceeds(m, tables, ll)
            exceed += int(counted.sum())
            undecided += left
        else:
            # ties (a permuted table equal to N) count: the p-value can only grow
            exceed += int(np.sum(_CLOSED_FORM[method](m, tables) >= stat - 1e-9 * max(1.0, abs(stat))))
    p_value = (1 + exceed) / (B + 1)
    note = m.note + f"; p-value calibrated by {B} permutations (random tables with the observed margins)"
    if undecided:
        note += f"; {undecided} permuted tables undecided after the iteration limit, counted as exceeding"
    return TestOutcome(method, stat, df, p_value, note, "permutation", B,
                       seed_used if isinstance(seed_used, (int, np.integer)) else None, undecided)
