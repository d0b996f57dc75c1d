"""The finite back end against an independent reference, and its properties.

Issue 15 ("tests that would pass a wrong answer"): the exact-vs-floating test of
``test_subset_analysis`` compares two paths that share ``subset_channel``.  Here the
channel of every mechanism is built a second time, in this file, with numpy and straight
from the papers' definitions:

* subset designs (subset-privacy, Definitions 2-4): ``K[a, x] = mu_a 1{x in a}`` with
  ``mu`` given (conditional), ``mu_a = nu_a + nu_(a^c)`` (independent), ``nu_a =
  1/(2^p - 2p - 2)`` for ``2 <= |a| <= p - 2`` (uniform, Def. 4) and ``mu_a =
  weight_|a| / C(p - 1, |a| - 1)`` (``sizes``, LANGUAGE.md 4.1);
* k-ary randomized response: ``e^eps/(e^eps + d - 1)`` on the diagonal,
  ``1/(e^eps + d - 1)`` off it; ``rr(X, matrix P)``: ``K = P^T``;
* products (subset-privacy Def. 8, castell): ``K = K_1 (x) K_2``, features ``T_1 (x) T_2``;
* dummy categories (subset-privacy Appendix II): the domain grows to ``p + 2`` with
  population ``((1 - 2 alpha) w, alpha, alpha)``; a true respondent reports ``A u {d}``
  with ``A ~ mu(. | x)`` and ``d`` one of the two dummies with probability 1/2, a dummy
  respondent ``d`` reports ``A~ u {d}`` with ``A~ ~ nu``;

and the moments (``Q = T K``, ``H = T diag(lambda) T^T``, ``C = H - gamma gamma^T``,
subset-privacy section III-B), the MoM and MLE covariances (Theorems 3-4), the Fisher
information in ``theta`` (with dummies: about the real w, alpha known), size coverage, mutual information and prediction leakage
(Defs. 5-7) are computed from that reference channel and compared with privspec's exact
(sympy) answers evaluated to float.

Then properties over random designs, populations and budgets (hypothesis, derandomized,
few examples: exact sympy analysis is slow): symmetric PSD covariances, symbolic ==
numeric at random parameter values, MoM unbiased in expectation, channel columns summing
to one, coverage and leakage in range; a Monte Carlo check of the GRR and product
covariances; and the same for releases (privacy on a subset of variables: Algorithm 1's
noise covariance built from its pair matrix ``M(n)``, the geometric mechanism's).
"""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import sympy
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import privspec
from privspec.backends.core.compile import channel_of
from privspec.backends.finite.backend import FiniteBackend, estimate_on_counts
from privspec.results.values import Matrix as ResultMatrix

PROPS = settings(derandomize=True, deadline=None, max_examples=30, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
#: reference (float64) against privspec's exact results evaluated to float
RTOL, ATOL = 1e-9, 1e-11


# ---- the reference: channels from the papers' definitions, numpy only -----------------------------
class _Information:
    """``I(theta) = B^T I(w) B`` and the MLE covariance ``B I(theta)^-1 B^T`` (Theorem 3),
    from a reference's own ``fisher_w``."""

    def fisher_theta(self, w):
        B = B_matrix(self.p)
        return B.T @ self.fisher_w(w) @ B

    def avar_mle(self, w):
        B = B_matrix(self.p)
        return B @ np.linalg.inv(self.fisher_theta(w)) @ B.T


class Ref(_Information):
    """A reference channel: ``K[o, x]`` (observations x categories), the moment features
    ``T`` (categories x observations), one key per observation (a frozenset of member
    labels for set-valued reports, a label or tuple of labels otherwise) and the
    population ``w`` it is evaluated at."""

    def __init__(self, K, T, keys, labels, set_valued):
        self.K = np.asarray(K, float)
        self.T = np.asarray(T, float)
        self.keys = list(keys)
        self.labels = tuple(labels)
        self.set_valued = set_valued

    @property
    def p(self) -> int:
        return self.K.shape[1]

    def lam(self, w):
        return self.K @ w

    def moments(self, w):
        lam = self.lam(w)
        Q = self.T @ self.K
        gamma = Q @ w
        H = self.T @ np.diag(lam) @ self.T.T
        return {"Q": Q, "gamma": gamma, "H": H, "C": H - np.outer(gamma, gamma)}

    def avar_mom(self, w):
        m = self.moments(w)
        Qi = np.linalg.inv(m["Q"])
        return Qi @ m["C"] @ Qi.T

    def fisher_w(self, w):
        lam = self.lam(w)
        keep = lam > 0
        return self.K[keep].T @ np.diag(1 / lam[keep]) @ self.K[keep]


    def size_coverage(self, w):
        # tau = E[L(A)] = sum_a Pr(A = a) 1_a^T w  (Def. 5)
        return float(self.lam(w) @ (self.T.T @ w))

    def mutual_information(self, w):
        J = self.K * w[None, :]
        lam = J.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.where(J > 0, J * np.log2(np.where(J > 0, J / (lam * w[None, :]), 1)), 0).sum())

    def prediction(self, w):
        return float((self.K * w[None, :]).max(axis=1).sum())


def B_matrix(p: int) -> np.ndarray:
    return np.vstack([np.eye(p - 1), -np.ones((1, p - 1))])


def entropy(w) -> float:
    w = np.asarray(w, float)
    w = w[w > 0]
    return float(-(w * np.log2(w)).sum())


def subsets(labels, sizes):
    return [frozenset(a) for k in sizes for a in itertools.combinations(labels, k)]


def ref_uniform_nu(labels) -> dict:
    """Def. 4: nu_a = 1/(2^p - 2p - 2) for 2 <= |a| <= p - 2."""
    p = len(labels)
    return {a: 1 / (2 ** p - 2 * p - 2) for a in subsets(labels, range(2, p - 1))}


def ref_mu_of_nu(labels, nu) -> dict:
    """Def. 3: P(A = a | X = j) = (nu_a + nu_(a^c)) 1{j in a}."""
    full = frozenset(labels)
    return {a: nu.get(a, 0) + nu.get(full - a, 0) for a in subsets(labels, range(1, len(labels)))}


def ref_mu_of_sizes(labels, weights) -> dict:
    p = len(labels)
    return {a: weights.get(len(a), 0) / math.comb(p - 1, len(a) - 1) for a in subsets(labels, range(1, p + 1))}


def ref_subset(labels, mu) -> Ref:
    """Def. 2: K[a, x] = mu_a 1{x in a}; features 1_a."""
    obs = [a for a, m in mu.items() if m > 0]
    K = [[mu[a] if x in a else 0.0 for x in labels] for a in obs]
    T = [[1.0 if x in a else 0.0 for a in obs] for x in labels]
    return Ref(K, T, obs, labels, True)


def ref_grr(labels, eps: float) -> Ref:
    d = len(labels)
    e = math.exp(eps)
    K = np.full((d, d), 1 / (e + d - 1))
    np.fill_diagonal(K, e / (e + d - 1))
    return Ref(K, np.eye(d), labels, labels, False)


def ref_rr(labels, P) -> Ref:
    """P[u][v] = Pr(Y = v | X = u): K = P^T."""
    return Ref(np.asarray(P, float).T, np.eye(len(labels)), labels, labels, False)


def ref_product(a: Ref, b: Ref) -> Ref:
    labels = [f"{x}.{y}" for x, y in itertools.product(a.labels, b.labels)]
    keys = list(itertools.product(a.keys, b.keys))
    return Ref(np.kron(a.K, b.K), np.kron(a.T, b.T), keys, labels, a.set_valued and b.set_valued)


def ref_dummies(labels, nu, alpha: float) -> tuple[Ref, "DummyRef"]:
    """Appendix II on the enlarged domain [p + 2] (the dummies are called d1, d2 here)."""
    mu = ref_mu_of_nu(labels, nu)
    d1, d2 = "d1", "d2"
    enlarged = list(labels) + [d1, d2]
    rows: dict[frozenset, list[float]] = {}
    for d in (d1, d2):
        for a, m in mu.items():                    # a true respondent x in a: mu_a, times 1/2 for d
            if m > 0:
                row = rows.setdefault(a | {d}, [0.0] * len(enlarged))
                for j, x in enumerate(labels):
                    if x in a:
                        row[j] += m / 2
        for a, v in nu.items():                    # a dummy respondent d: A~ ~ nu, reports A~ u {d}
            if v > 0:
                rows.setdefault(a | {d}, [0.0] * len(enlarged))[enlarged.index(d)] += v
    keys = list(rows)
    K = np.array([rows[k] for k in keys])
    T = np.array([[1.0 if x in k else 0.0 for k in keys] for x in enlarged])
    return Ref(K, T, keys, enlarged, True), DummyRef(K, T, len(labels), alpha)


class DummyRef(_Information):
    """The real categories' MoM and MLE with the dummies' mass alpha known: reports have
    probabilities ``lambda = (1 - 2 alpha) K_real w + alpha (K_d1 + K_d2)``; the MoM solves
    ``T_real lambda = T_real lambda_hat`` for w, the MLE maximizes the likelihood in w."""

    def __init__(self, K, T, p, alpha):
        self.Keff = (1 - 2 * alpha) * K[:, :p]
        self.b = alpha * (K[:, p] + K[:, p + 1])
        self.Tr = T[:p]
        self.p, self.alpha = p, alpha
        self.K = K

    def wide(self, w):
        return np.concatenate([(1 - 2 * self.alpha) * w, [self.alpha, self.alpha]])

    def avar_mom(self, w):
        lam = self.K @ self.wide(w)
        M = np.linalg.inv(self.Tr @ self.Keff)
        S = self.Tr @ (np.diag(lam) - np.outer(lam, lam)) @ self.Tr.T
        return M @ S @ M.T

    def fisher_w(self, w):
        """The information about the real w in one report, alpha known: K_eff^T diag(1/lambda) K_eff."""
        lam = self.Keff @ w + self.b
        keep = lam > 0
        return self.Keff[keep].T @ np.diag(1 / lam[keep]) @ self.Keff[keep]



# ---- privspec's side --------------------------------------------------------------------------
def analyze(model, name: str):
    return FiniteBackend().answer(model, model.queries[name], "analyze")


def to_float(x, subs: dict | None = None):
    """An exact result (sympy scalar or matrix, numpy array) as float64, after ``subs``
    (by symbol name)."""
    if isinstance(x, np.ndarray):
        return x.astype(float)
    if isinstance(x, ResultMatrix):
        return to_float(x.data, subs)
    if isinstance(x, (int, float)):
        return float(x)
    if subs:   # 30-digit floats: substituting exact rationals into large rational functions is slow
        x = x.xreplace({s: sympy.Float(subs[str(s)], 30) for s in x.free_symbols if str(s) in subs})
    assert not getattr(x, "free_symbols", set()), f"still symbolic: {x.free_symbols}"
    if isinstance(x, sympy.MatrixBase):
        return np.array(x.evalf(30).tolist(), dtype=float)
    return float(sympy.N(x, 30))


def frac(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def rationals(raw) -> list[Fraction]:
    return [Fraction(v, sum(raw)) for v in raw]


def rename(key):
    """Reference observation keys in privspec's naming (dummies: _dummy1, _dummy2)."""
    names = {"d1": "_dummy1", "d2": "_dummy2"}
    if isinstance(key, frozenset):
        return frozenset(names.get(x, x) for x in key)
    if isinstance(key, tuple):
        return tuple(rename(k) for k in key)
    return key


def close(a, b, rtol=RTOL, atol=ATOL, what=""):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    assert np.allclose(a, b, rtol=rtol, atol=atol), f"{what}: max |diff| {np.max(np.abs(a - b))}\n{a}\n{b}"


_SUMS_CHECKED: set = set()


def check_against_reference(model, mech: str, ref: Ref, w: np.ndarray, *, queries: tuple[str, ...],
                            w_wide: np.ndarray | None = None, dummy: DummyRef | None = None,
                            subs: dict | None = None, answer=None) -> None:
    """Every analysis query of ``mech`` (declared in the model under fixed names) against
    the reference at population ``w`` (``w_wide``: the enlarged one of Appendix II).
    ``subs``: values (by symbol name) for results symbolic in w or a parameter;
    ``answer(name)``: the results (default: answered here)."""
    if answer is None:
        def answer(name):
            return analyze(model, name)
    wide = w if w_wide is None else w_wide
    ch = channel_of(model.mechanisms[mech])
    # the channel itself: same observations, same probabilities; columns sum to 1 (exactly)
    K = ch.K
    if id(ch) not in _SUMS_CHECKED:
        assert all(sympy.simplify(s - 1) == 0 for s in (K.T * sympy.ones(ch.n_obs, 1)))
        _SUMS_CHECKED.add(id(ch))
    close(to_float(K, subs)[observation_order(ch, ref)], ref.K, what="K")
    assert np.allclose(ref.K.sum(axis=0), 1)
    if "mats" in queries:
        r = answer("mats").value
        m = ref.moments(wide)
        for key in ("Q", "H", "C"):
            close(to_float(r[key], subs), m[key], what=key)
        close([to_float(v, subs) for v in r["gamma"].values], m["gamma"], what="gamma")
    if "vmom" in queries:
        V = to_float(answer("vmom").value, subs)
        close(V, dummy.avar_mom(w) if dummy else ref.avar_mom(w), what="avar mom")
    if "vmle" in queries:
        V = to_float(answer("vmle").value, subs)
        close(V, dummy.avar_mle(w) if dummy else ref.avar_mle(w), what="avar mle")
    if "info" in queries:   # with dummies: the information about the real w, alpha known
        r = answer("info")
        info = dummy or ref
        close(to_float(r.value, subs), info.fisher_theta(w if dummy else wide), what="fisher theta")
        close(to_float(r.extras["I_w"], subs), info.fisher_w(w if dummy else wide), what="fisher w")
    if "cov" in queries:
        close(to_float(answer("cov").value, subs), ref.size_coverage(wide), what="size coverage")
    if "leak" in queries:
        leak = answer("leak").value
        mi = ref.mutual_information(wide)
        close(to_float(leak["mutual_information"], subs), mi, what="mutual information")
        close(to_float(leak["prediction"], subs), ref.prediction(wide), what="prediction leakage")
        if "size" in leak:
            close(to_float(leak["size"], subs), 1 - ref.size_coverage(wide), what="size leakage")
        close(to_float(answer("hx").value, subs), entropy(wide) - mi, what="H(X | A)")


SUBSET_QUERIES = """
query mats = moments(m)
query vmom = avar(distribution(x) from m by mom)
query vmle = avar(distribution(x) from m by mle)
query info = fisher(m)
query cov = coverage(m)
query hx = coverage(m, mutual_information)
query leak = leakage(m, size, mutual_information, prediction)
"""
RR_QUERIES = SUBSET_QUERIES.replace("query cov = coverage(m)\n", "").replace("leakage(m, size, ", "leakage(m, ")
ALL = ("mats", "vmom", "vmle", "info", "cov", "leak")
RR_ALL = ("mats", "vmom", "vmle", "info", "leak")


def variable(name: str, labels) -> str:
    return f"variable {name}: categorical {{{', '.join(labels)}}}\n"


def population(name: str, w: list[Fraction]) -> str:
    return f"population {name} ~ categorical({', '.join(map(frac, w))})\n"


# ---- 1. exact (privspec) == floating (reference), fixed cases from the papers ---------------------
URN_W = [Fraction(1, 100), Fraction(1, 10), Fraction(1, 5), Fraction(69, 100)]
COLORS = ("black", "red", "green", "blue")


@pytest.mark.parametrize("design, mu", [
    ("uniform", lambda L: ref_mu_of_nu(L, ref_uniform_nu(L))),
    ("independent { {black, red}: 2/5, {black, green}: 3/10, {black, blue}: 3/10 }",
     lambda L: ref_mu_of_nu(L, {frozenset({"black", "red"}): .4, frozenset({"black", "green"}): .3,
                                frozenset({"black", "blue"}): .3})),
    ("sizes {2: 1}", lambda L: ref_mu_of_sizes(L, {2: 1.0})),
], ids=["uniform", "independent", "sizes"])
def test_urn_designs_match_the_papers_definitions(design: str, mu) -> None:
    """The urn of Example 2 under three designs: the channel, Q, H, C, gamma, both
    covariances, the Fisher information, coverage and the three leakages."""
    text = variable("x", COLORS) + population("x", URN_W) + f"mechanism m = subset(x, {design})\n" + SUBSET_QUERIES
    model = privspec.load(text).model
    w = np.array([float(v) for v in URN_W])
    check_against_reference(model, "m", ref_subset(COLORS, mu(COLORS)), w, queries=ALL)


def test_urn_coverage_is_example_2s_number() -> None:
    """tau = 0.684 for the uniform design (Example 2), from the reference alone: the
    reference itself is checked against the paper before it checks privspec."""
    w = np.array([float(v) for v in URN_W])
    ref = ref_subset(COLORS, ref_mu_of_nu(COLORS, ref_uniform_nu(COLORS)))
    assert round(ref.size_coverage(w), 3) == 0.684
    assert np.allclose(ref.moments(w)["Q"], np.where(np.eye(4) > 0, 1, 1 / 3))   # Eq. 6: r_4 = 3


def test_grr_and_rr_match_their_definitions() -> None:
    """k-RR with eps = log 3 (e^eps = 3: exact rationals) on five categories, and Warner's
    matrix on two."""
    L = ("a", "b", "c", "d", "e")
    w = rationals([3, 1, 4, 1, 5])
    text = variable("x", L) + population("x", w) + "mechanism m = grr(x, epsilon = log(3))\n" + RR_QUERIES
    model = privspec.load(text).model
    ref = ref_grr(L, math.log(3))
    assert np.allclose(np.diag(ref.K), 3 / 7) and np.isclose(ref.K[0, 1], 1 / 7)
    check_against_reference(model, "m", ref, np.array([float(v) for v in w]), queries=RR_ALL)
    P = [[Fraction(3, 4), Fraction(1, 4)], [Fraction(1, 4), Fraction(3, 4)]]
    w2 = rationals([2, 5])
    text = (variable("x", ("F", "M")) + population("x", w2)
            + "mechanism m = rr(x, matrix [[3/4, 1/4], [1/4, 3/4]])\n" + RR_QUERIES)
    check_against_reference(privspec.load(text).model, "m", ref_rr(("F", "M"), P),
                            np.array([float(v) for v in w2]), queries=RR_ALL)


def test_product_of_rr_matches_the_kronecker_reference() -> None:
    """product(rr(g, P), grr(h, eps = log 2)): K = K_g (x) K_h over the joint categories
    (first variable slowest), at a joint population with dependence."""
    P = [[Fraction(4, 5), Fraction(1, 5)], [Fraction(1, 3), Fraction(2, 3)]]
    counts = [[1, 4], [6, 2]]
    text = (variable("g", ("F", "M")) + variable("h", ("lo", "hi"))
            + "population (g, h) ~ counts [[1, 4], [6, 2]]\n"
            + "mechanism m = product(rr(g, matrix [[4/5, 1/5], [1/3, 2/3]]), grr(h, epsilon = log(2)))\n"
            + RR_QUERIES.replace("distribution(x)", "distribution(g * h)"))
    model = privspec.load(text).model
    ref = ref_product(ref_rr(("F", "M"), P), ref_grr(("lo", "hi"), math.log(2)))
    w = np.array(counts, float).ravel() / 13
    check_against_reference(model, "m", ref, w, queries=RR_ALL)


def test_product_of_subset_designs_matches_the_kronecker_reference() -> None:
    """product(subset(x, uniform), subset(y, sizes {2: 1/2, 3: 1/2})): set-valued reports
    whose features are 1_a (x) 1_b; the moments, Fisher information and leakages."""
    X, Y = ("a", "b", "c", "d"), ("u", "v", "s")
    # y has 3 categories: a sizes design is valid there (sizes 2 and 3)
    text = (variable("x", X) + variable("y", Y) + population("x", rationals([1, 2, 3, 4]))
            + population("y", rationals([1, 1, 2]))
            + "mechanism m = product(subset(x, uniform), subset(y, sizes {2: 1/2, 3: 1/2}))\n"
            + "query mats = moments(m)\nquery info = fisher(m)\n"
            + "query hx = coverage(m, mutual_information)\nquery leak = leakage(m, mutual_information, prediction)\n")
    spec = privspec.load(text)
    if not spec.ok:
        pytest.fail(spec.render_diagnostics())
    model = spec.model
    ref = ref_product(ref_subset(X, ref_mu_of_nu(X, ref_uniform_nu(X))),
                      ref_subset(Y, ref_mu_of_sizes(Y, {2: .5, 3: .5})))
    w = np.kron(np.array([1, 2, 3, 4]) / 10, np.array([1, 1, 2]) / 4)
    check_against_reference(model, "m", ref, w, queries=("mats", "info", "leak"))
    # size coverage of a product is refused by the front end (E501) although the reports
    # are sets (A_1 x A_2); the channel core computes it: compare there
    ch = channel_of(model.mechanisms["m"])
    assert ch.is_set_valued
    close(ch.size_coverage(w), ref.size_coverage(w), what="size coverage of the product")


@pytest.mark.parametrize("p, alpha", [(2, Fraction(1, 5)), (4, Fraction(1, 5)), (5, Fraction(1, 10))])
def test_dummy_categories_match_appendix_ii(p: int, alpha: Fraction) -> None:
    """min_coverage = alpha (Appendix II; p = 2 by Appendix III: nu puts 1/2 on each
    singleton).  The enlarged channel, the moments, coverage and leakages at ((1 - 2 alpha)
    w, alpha, alpha); the real categories' covariances and Fisher information with alpha
    known (reports have probabilities (1 - 2 alpha) K_real w + alpha (K_d1 + K_d2))."""
    L = tuple(f"c{i}" for i in range(p))
    w = rationals(list(range(1, p + 1)))
    text = (variable("x", L) + population("x", w) + f"mechanism m = subset(x, uniform, min_coverage = {frac(alpha)})\n"
            + SUBSET_QUERIES)
    model = privspec.load(text).model
    nu = ref_uniform_nu(L) if p >= 4 else {a: 1 / (2 ** p - 2) for a in subsets(L, range(1, p))}
    ref, dummy = ref_dummies(L, nu, float(alpha))
    wf = np.array([float(v) for v in w])
    wide = dummy.wide(wf)
    check_against_reference(model, "m", ref, wf, w_wide=wide, dummy=dummy, queries=ALL)
    # every report holds a dummy of mass alpha: coverage of each report is at least alpha
    assert min(float(ref.T[:, i] @ wide) for i in range(ref.K.shape[0])) >= float(alpha) - 1e-12


# ---- 2. properties over random mechanisms and populations ------------------------------------------
def observation_order(ch, ref: Ref) -> np.ndarray:
    """``order`` with privspec's observation ``order[i]`` = the reference's observation i."""
    if ref.set_valued:
        def key(label):
            return tuple(frozenset(part.split("|")) for part in label.split(" & ")) if " & " in label \
                else frozenset(label.split("|"))
    else:
        def key(label):
            return tuple(label.split(" & ")) if " & " in label else label
    index = {key(lab): i for i, lab in enumerate(ch.obs_labels)}
    return np.array([index[rename(k)] for k in ref.keys])


def expected_counts(ch, ref: Ref, wide: np.ndarray, n: float) -> np.ndarray:
    """n lambda in privspec's observation order, lambda from the reference channel."""
    counts = np.zeros(ch.n_obs)
    counts[observation_order(ch, ref)] = n * ref.lam(wide)
    return counts


def assert_covariance(V: np.ndarray, what: str) -> None:
    """Symmetric, positive semidefinite, rows summing to 0 (sum w_hat = 1 for every sample)."""
    assert np.allclose(V, V.T, atol=1e-12), what
    eig = np.linalg.eigvalsh((V + V.T) / 2)
    assert eig.min() > -1e-10 * max(1.0, eig.max()), (what, eig)


def assert_ranges(ref: Ref, wide: np.ndarray, leak: dict, hx, cov=None, subs=None) -> None:
    """0 <= I(X; A) <= H(X), H(X | A) = H(X) - I(X; A) >= 0, max w <= R(X; A) <= 1, 0 <= tau <= 1."""
    H = entropy(wide)
    mi = to_float(leak["mutual_information"], subs)
    assert -1e-12 <= mi <= H + 1e-12
    assert -1e-12 <= to_float(hx, subs) <= H + 1e-12
    pred = to_float(leak["prediction"], subs)
    assert wide.max() - 1e-12 <= pred <= 1 + 1e-12
    if cov is not None:
        tau = to_float(cov, subs)
        assert float(wide @ wide) - 1e-12 <= tau <= 1 + 1e-12   # at least the no-privacy coverage sum w^2


@st.composite
def populations(draw, p: int) -> list[Fraction]:
    return rationals(draw(st.lists(st.integers(1, 12), min_size=p, max_size=p)))


@st.composite
def rr_cases(draw):
    """A randomization matrix with rational rows (invertible), or k-RR with e^eps an integer."""
    d = draw(st.integers(2, 4))
    labels = tuple(f"c{i}" for i in range(d))
    w = draw(populations(d))
    if draw(st.booleans()):
        k = draw(st.integers(2, 6))
        return labels, w, f"grr(x, epsilon = log({k}))", ref_grr(labels, math.log(k))
    while True:
        rows = [rationals(draw(st.lists(st.integers(1, 9), min_size=d, max_size=d))) for _ in range(d)]
        # diagonal dominance keeps it invertible
        rows = [[v + (1 if i == j else 0) for j, v in enumerate(r)] for i, r in enumerate(rows)]
        rows = [[v / 2 for v in r] for r in rows]
        if sympy.Matrix(rows).det() != 0:
            break
    text = "rr(x, matrix [" + ", ".join("[" + ", ".join(map(frac, r)) + "]" for r in rows) + "])"
    return labels, w, text, ref_rr(labels, rows)


@PROPS
@given(rr_cases())
def test_rr_properties(case) -> None:
    """Random RR: privspec == reference; covariances symmetric PSD with the MLE's below the
    MoM's (MoM - MLE PSD: the MLE is efficient); ranges; MoM unbiased in expectation."""
    labels, w, mech, ref = case
    text = (variable("x", labels) + population("x", w) + f"mechanism m = {mech}\n" + RR_QUERIES
            + "query est = estimate distribution(x) from m by mom\n")
    model = privspec.load(text).model
    wf = np.array([float(v) for v in w])
    check_against_reference(model, "m", ref, wf, queries=RR_ALL)
    Vmom = to_float(analyze(model, "vmom").value)
    Vmle = to_float(analyze(model, "vmle").value)
    assert_covariance(Vmom, "mom")
    assert_covariance(Vmle, "mle")
    assert_covariance(Vmom - Vmle, "mom - mle")
    assert np.allclose(Vmom.sum(axis=1), 0, atol=1e-10)
    assert_ranges(ref, wf, analyze(model, "leak").value, analyze(model, "hx").value)
    ch = channel_of(model.mechanisms["m"])
    est = estimate_on_counts(model.queries["est"], expected_counts(ch, ref, wf, 1000.0))
    close(np.array(est.value.values, float), wf, rtol=1e-9, atol=1e-12, what="E[w_hat] = w")


@st.composite
def subset_cases(draw):
    """A random independent design nu on p = 4 or 5 categories (subsets of size 2..p-2),
    identifiable or not, with or without dummy categories (Appendix II: nu symmetric,
    nu_a = nu_(a^c))."""
    p = draw(st.integers(4, 5))
    labels = tuple(f"c{i}" for i in range(p))
    allowed = subsets(labels, range(2, p - 1))
    full = frozenset(labels)
    halves = sorted({min(a, full - a, key=sorted) for a in allowed}, key=sorted)
    chosen = draw(st.lists(st.sampled_from(halves), min_size=p - 1, max_size=len(halves), unique=True))
    raw = draw(st.lists(st.integers(1, 6), min_size=len(chosen), max_size=len(chosen)))
    total = 2 * sum(raw)
    nu = {}
    for a, r in zip(chosen, raw):         # symmetric: nu_a = nu_(a^c), as Appendix II asks
        nu[a] = nu.get(a, Fraction(0)) + Fraction(r, total)
        nu[full - a] = nu.get(full - a, Fraction(0)) + Fraction(r, total)
    alpha = draw(st.sampled_from([None, Fraction(1, 5), Fraction(1, 8)]))
    return labels, draw(populations(p)), nu, alpha


@pytest.mark.slow   # 30 exact analyses
@PROPS
@given(subset_cases())
def test_subset_and_dummy_properties(case) -> None:
    """Random independent designs, with and without dummy categories: privspec ==
    reference (channel, moments, Fisher, coverage, leakages; covariances where
    identifiable); PSD covariances; ranges; MoM unbiased in expectation."""
    labels, w, nu, alpha = case
    listed = ", ".join("{" + ", ".join(sorted(a)) + "}: " + frac(v) for a, v in nu.items())
    dummies = f", min_coverage = {frac(alpha)}" if alpha else ""
    text = (variable("x", labels) + population("x", w)
            + f"mechanism m = subset(x, independent {{ {listed} }}{dummies})\n"
            + "query ok = identifiable(m)\nquery est = estimate distribution(x) from m by mom\n" + SUBSET_QUERIES)
    model = privspec.load(text).model
    wf = np.array([float(v) for v in w])
    nu_f = {a: float(v) for a, v in nu.items()}
    if alpha:
        ref, dummy = ref_dummies(labels, nu_f, float(alpha))
        wide = dummy.wide(wf)
        rank_ok = np.linalg.matrix_rank(dummy.Keff) == len(labels)
    else:
        ref, dummy, wide = ref_subset(labels, ref_mu_of_nu(labels, nu_f)), None, wf
        rank_ok = np.linalg.matrix_rank(ref.K) == len(labels)
    assert analyze(model, "ok").value is bool(rank_ok)
    event(f"p = {len(labels)}, dummies: {bool(alpha)}, identifiable: {rank_ok}")
    queries = ALL if rank_ok else ("mats", "cov", "leak")   # not identifiable: no covariances
    check_against_reference(model, "m", ref, wf, w_wide=wide, dummy=dummy, queries=queries)
    assert_ranges(ref, wide, analyze(model, "leak").value, analyze(model, "hx").value, analyze(model, "cov").value)
    # every report's coverage is at least alpha with dummies (Appendix II)
    if alpha:
        assert min(ref.T[:, i] @ wide for i in range(ref.K.shape[0])) >= float(alpha) - 1e-12
    if rank_ok:
        Vmom = to_float(analyze(model, "vmom").value)
        Vmle = to_float(analyze(model, "vmle").value)
        assert_covariance(Vmom, "mom")
        assert_covariance(Vmle, "mle")
        assert_covariance(Vmom - Vmle, "mom - mle")
        ch = channel_of(model.mechanisms["m"])
        n = 1000.0
        est = estimate_on_counts(model.queries["est"], expected_counts(ch, ref, wide, n))
        close(np.array(est.value.values, float), wf, rtol=1e-9, atol=1e-12, what="E[w_hat] = w")


@st.composite
def product_cases(draw):
    """product of two RR factors (2 x 2 or 2 x 3 joint categories) at a random joint population."""
    dh = draw(st.integers(2, 3))
    G, Hl = ("F", "M"), tuple(f"h{i}" for i in range(dh))
    k1, k2 = draw(st.integers(2, 5)), draw(st.integers(2, 5))
    raw = draw(st.lists(st.integers(1, 9), min_size=2 * dh, max_size=2 * dh))
    if draw(st.booleans()):
        a, b = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        P = [[Fraction(a + 4, a + 5), Fraction(1, a + 5)], [Fraction(b, b + 5), Fraction(5, b + 5)]]
        first, ref1 = (f"rr(g, matrix [[{frac(P[0][0])}, {frac(P[0][1])}], [{frac(P[1][0])}, {frac(P[1][1])}]])",
                       ref_rr(G, P))
    else:
        first, ref1 = f"grr(g, epsilon = log({k1}))", ref_grr(G, math.log(k1))
    return G, Hl, raw, f"product({first}, grr(h, epsilon = log({k2})))", ref_product(ref1, ref_grr(Hl, math.log(k2)))


@pytest.mark.slow   # 30 exact analyses
@PROPS
@given(product_cases())
def test_product_properties(case) -> None:
    """Random products of RR: privspec == Kronecker reference; PSD covariances (joint and
    a marginal, whose covariance is M V M^T); ranges; MoM unbiased in expectation, joint
    and marginal."""
    G, Hl, raw, mech, ref = case
    rows = [raw[i * len(Hl):(i + 1) * len(Hl)] for i in range(2)]
    text = (variable("g", G) + variable("h", Hl)
            + "population (g, h) ~ counts [" + ", ".join("[" + ", ".join(map(str, r)) + "]" for r in rows) + "]\n"
            + f"mechanism m = {mech}\n" + RR_QUERIES.replace("distribution(x)", "distribution(g * h)")
            + "query vh = avar(distribution(h) from m by mom)\n"
            + "query est = estimate distribution(g * h) from m by mom\n"
            + "query esth = estimate distribution(h) from m by mom\n")
    model = privspec.load(text).model
    wf = np.array(raw, float) / sum(raw)
    check_against_reference(model, "m", ref, wf, queries=RR_ALL)
    V = to_float(analyze(model, "vmom").value)
    assert_covariance(V, "joint mom")
    assert_covariance(V - to_float(analyze(model, "vmle").value), "mom - mle")
    Mh = np.kron(np.ones((1, 2)), np.eye(len(Hl)))         # sum g out
    Vh = to_float(analyze(model, "vh").value)
    close(Vh, Mh @ ref.avar_mom(wf) @ Mh.T, what="marginal avar")
    assert_covariance(Vh, "marginal mom")
    assert_ranges(ref, wf, analyze(model, "leak").value, analyze(model, "hx").value)
    ch = channel_of(model.mechanisms["m"])
    counts = expected_counts(ch, ref, wf, 500.0)
    est = estimate_on_counts(model.queries["est"], counts)
    close(np.array(est.value.values, float), wf, rtol=1e-9, atol=1e-12, what="E[w_hat] = w (joint)")
    esth = estimate_on_counts(model.queries["esth"], counts)
    close(np.array(esth.value.values, float), Mh @ wf, rtol=1e-9, atol=1e-12, what="E[w_hat] = w (marginal)")


# ---- symbolic == numeric: results without a population (and in eps), at random values ---------------
def _no_mle(queries: str) -> str:
    return "\n".join(line for line in queries.splitlines() if "by mle" not in line) + "\n"


SYMBOLIC = {
    # kind: (declarations, reference (w, eps) -> (Ref, DummyRef | None, w on the channel's domain),
    #        the categories of w, the queries compared)
    "grr": (variable("x", ("a", "b", "c")) + "parameter eps > 0\nmechanism m = grr(x, epsilon = eps)\n"
            + _no_mle(RR_QUERIES),
            lambda w, eps: (ref_grr(("a", "b", "c"), eps), None, w), ("a", "b", "c"), ("mats", "vmom", "info", "leak")),
    # the symbolic MLE covariance is answered for 2 categories only (E702 beyond)
    "grr2": (variable("x", ("a", "b")) + "parameter eps > 0\nmechanism m = grr(x, epsilon = eps)\n" + RR_QUERIES,
             lambda w, eps: (ref_grr(("a", "b"), eps), None, w), ("a", "b"), RR_ALL),
    "subset": (variable("x", COLORS) + "mechanism m = subset(x, uniform)\n" + _no_mle(SUBSET_QUERIES),
               lambda w, eps: (ref_subset(COLORS, ref_mu_of_nu(COLORS, ref_uniform_nu(COLORS))), None, w),
               COLORS, ("mats", "vmom", "info", "cov", "leak")),
    "dummies": (variable("x", ("a", "b")) + "mechanism m = subset(x, uniform, min_coverage = 1/5)\n"
                + _no_mle(SUBSET_QUERIES),
                lambda w, eps: (*ref_dummies(("a", "b"), {frozenset("a"): .5, frozenset("b"): .5}, .2),
                                np.concatenate([.6 * w, [.2, .2]])),
                ("a", "b"), ("mats", "vmom", "info", "cov", "leak")),
    "product": (variable("g", ("F", "M")) + variable("h", ("lo", "hi")) + "parameter eps > 0\n"
                + "mechanism m = product(rr(g, matrix [[3/4, 1/4], [1/3, 2/3]]), grr(h, epsilon = eps))\n"
                + _no_mle(RR_QUERIES.replace("distribution(x)", "distribution(g * h)")).replace(
                    "query info = fisher(m)\n", ""),   # symbolic Fisher: E702 beyond 3 categories
                lambda w, eps: (ref_product(ref_rr(("F", "M"), [[.75, .25], [1 / 3, 2 / 3]]),
                                            ref_grr(("lo", "hi"), eps)), None, w),
                ("F.lo", "F.hi", "M.lo", "M.hi"), ("mats", "vmom", "leak")),
}
_SYMBOLIC: dict = {}


def symbolic_answers(kind: str):
    """The model of ``kind`` (no population) and its answers, each computed once: the
    symbolic analysis is the slow part, the substitution is what varies."""
    if kind not in _SYMBOLIC:
        model = privspec.load(SYMBOLIC[kind][0]).model
        cache: dict = {}

        def answer(name):
            if name not in cache:
                cache[name] = analyze(model, name)
            return cache[name]
        _SYMBOLIC[kind] = (model, answer)
    return _SYMBOLIC[kind]


@pytest.mark.slow
@settings(PROPS, max_examples=20)
@given(st.sampled_from(sorted(SYMBOLIC)), st.lists(st.integers(1, 30), min_size=4, max_size=4),
       st.integers(1, 40))
def test_symbolic_equals_numeric_at_random_values(kind: str, raw: list[int], eps10: int) -> None:
    """Results symbolic in w (no population declared) and in eps equal the reference at
    random w and eps = eps10/10 once those are substituted: the channel, Q, H, C, gamma,
    the MoM (and for GRR on two categories the MLE) covariance, the Fisher information, coverage, leakages."""
    _, build, labels, queries = SYMBOLIC[kind]
    model, answer = symbolic_answers(kind)
    raw = raw[:len(labels)]
    w = np.array(raw, float) / sum(raw)
    subs = {f"w_{lab}": sympy.Rational(r, sum(raw)) for lab, r in zip(labels, raw)}
    subs["eps"] = sympy.Rational(eps10, 10)
    assert answer("vmom").value.data.free_symbols, "the covariance should be symbolic here"
    ref, dummy, wide = build(w, eps10 / 10)
    check_against_reference(model, "m", ref, w, w_wide=wide, dummy=dummy, queries=queries, subs=subs,
                            answer=answer)
    V = to_float(answer("vmom").value, subs)
    assert_covariance(V, f"{kind} mom")


# ---- Monte Carlo: the covariances describe the estimator's sampling distribution ---------------------
def simulate_reports(rng, factors: list[Ref], x: np.ndarray) -> np.ndarray:
    """Each respondent's report, drawn factor by factor from its own column of K (the
    factors privatize independently: Def. 8), as the index of the joint observation."""
    out = np.zeros(x.shape[1:], dtype=np.int64)
    for ref, xk in zip(factors, x):
        cum = np.cumsum(ref.K, axis=0)[:, xk]              # (observations, *respondents)
        y = (rng.random(xk.shape)[None] > cum).sum(axis=0)
        out = out * ref.K.shape[0] + np.minimum(y, ref.K.shape[0] - 1)
    return out


def monte_carlo(model, query: str, factors: list[Ref], w: np.ndarray, n: int, reps: int, seed: int) -> None:
    """Draw ``reps`` samples of ``n`` respondents from w, privatize them, estimate w by the
    MoM (reference: Q^-1 T lambda_hat) and compare the empirical covariance of
    sqrt(n)(w_hat - w) with privspec's avar, entry by entry.

    Tolerance: the standard error of a sample covariance, sqrt((V_ii V_jj + V_ij^2)/reps)
    (normal limit), times 5; the mean within 5 standard errors sqrt(V_ii/(n reps)).  The
    MoM is linear in the report frequencies, so its covariance is exactly avar/n at every
    n (no finite-n bias to allow for)."""
    rng = np.random.default_rng(seed)
    ref = factors[0] if len(factors) == 1 else ref_product(*factors)
    V = to_float(analyze(model, query).value)
    shapes = [f.p for f in factors]
    counts = np.zeros((reps, ref.K.shape[0]))
    for start in range(0, reps, 2000):                    # in blocks: bounded memory
        block = min(2000, reps - start)
        cells = rng.choice(len(w), size=(block, n), p=w)
        x = np.array(np.unravel_index(cells, shapes))     # (factors, block, n)
        y = simulate_reports(rng, factors, x) + ref.K.shape[0] * np.arange(block)[:, None]
        counts[start:start + block] = np.bincount(y.ravel(), minlength=block * ref.K.shape[0]).reshape(block, -1)
    Qi = np.linalg.inv(ref.T @ ref.K)
    w_hat = (counts / n) @ ref.T.T @ Qi.T                  # (reps, p)
    # privspec's estimator gives the same estimates on these reports
    ch = channel_of(model.mechanisms["m"])
    est_query = model.queries["est"]
    for r in range(3):
        c = np.zeros(ch.n_obs)
        c[observation_order(ch, ref)] = counts[r]
        close(np.array(estimate_on_counts(est_query, c).value.values, float), w_hat[r], rtol=1e-9, atol=1e-12,
              what="privspec's MoM on simulated reports")
    Z = np.sqrt(n) * (w_hat - w)
    S = np.cov(Z, rowvar=False)
    se = np.sqrt((np.outer(np.diag(V), np.diag(V)) + V ** 2) / reps)
    assert np.all(np.abs(S - V) <= 5 * se), f"empirical\n{S}\navar\n{V}\n|diff|/se\n{np.abs(S - V) / se}"
    assert np.all(np.abs(Z.mean(axis=0)) <= 5 * np.sqrt(np.diag(V) / reps)), Z.mean(axis=0)


@pytest.mark.slow
def test_monte_carlo_grr_covariance() -> None:
    """GRR on 4 categories, eps = 1 (exact in e): 20000 samples of 200 respondents, seed 11
    (tolerance 5 standard errors: about 5% of a variance)."""
    L = ("a", "b", "c", "d")
    w = rationals([1, 2, 3, 6])
    text = (variable("x", L) + population("x", w) + "mechanism m = grr(x, epsilon = 1)\n"
            + "query v = avar(distribution(x) from m by mom)\nquery est = estimate distribution(x) from m by mom\n")
    model = privspec.load(text).model
    monte_carlo(model, "v", [ref_grr(L, 1.0)], np.array([float(v) for v in w]), n=200, reps=20000, seed=11)


def test_monte_carlo_product_covariance() -> None:
    """product(rr(g, P), grr(h, eps = log 3)) on 2 x 3 joint categories with dependence:
    20000 samples of 200 respondents, seed 12, each factor privatized on its own."""
    G, Hl = ("F", "M"), ("x", "y", "z")
    text = (variable("g", G) + variable("h", Hl) + "population (g, h) ~ counts [[6, 1, 3], [1, 5, 4]]\n"
            + "mechanism m = product(rr(g, matrix [[4/5, 1/5], [1/4, 3/4]]), grr(h, epsilon = log(3)))\n"
            + "query v = avar(distribution(g * h) from m by mom)\n"
            + "query est = estimate distribution(g * h) from m by mom\n")
    model = privspec.load(text).model
    w = np.array([6, 1, 3, 1, 5, 4], float) / 20
    monte_carlo(model, "v", [ref_rr(G, [[.8, .2], [.25, .75]]), ref_grr(Hl, math.log(3))], w,
                n=200, reps=20000, seed=12)


# ---- releases (privacy on a subset of variables, section 5) -----------------------------------------
def two_sided_geometric_variance(a: float) -> float:
    """Var(Z) for P(Z = z) = (1 - a)/(1 + a) a^|z|, summed term by term (not the closed form)."""
    z = np.arange(-4000, 4001, dtype=float)
    pmf = (1 - a) / (1 + a) * a ** np.abs(z)
    assert abs(pmf.sum() - 1) < 1e-12
    return float(pmf @ z ** 2)


def pair_matrix(n: int) -> np.ndarray:
    """A matrix of M(n) (section 5): one row per pair j < k, +1 in column j, -1 in column k."""
    rows = []
    for j, k in itertools.combinations(range(n), 2):
        r = np.zeros(n)
        r[j], r[k] = 1, -1
        rows.append(r)
    return np.array(rows).reshape(-1, n)


def reference_noise_covariance(sizes, totals, s2: float, exact: bool) -> np.ndarray:
    """The covariance of the noise on the whole table (cells in row-major order of the
    release's variables): Algorithm 1 adds b M within each total cell (b iid with variance
    s2), so the cells of one total cell have covariance s2 M^T M and different total cells
    are independent; the geometric mechanism adds iid noise to every cell."""
    cells = list(itertools.product(*[range(s) for s in sizes]))
    N = len(cells)
    if not exact:
        return s2 * np.eye(N)
    group = [tuple(c[i] for i in range(len(sizes)) if totals[i]) for c in cells]
    inner = [tuple(c[i] for i in range(len(sizes)) if not totals[i]) for c in cells]
    n = math.prod(s for s, t in zip(sizes, totals) if not t)
    position = {key: i for i, key in enumerate(itertools.product(*[range(s) for s, t in zip(sizes, totals) if not t]))}
    M = pair_matrix(n)
    within = s2 * M.T @ M if n >= 2 else np.zeros((1, 1))
    Sigma = np.zeros((N, N))
    for i in range(N):
        for j in range(N):
            if group[i] == group[j]:
                Sigma[i, j] = within[position[inner[i]], position[inner[j]]]
    return Sigma


def margin_matrix(sizes, keep) -> np.ndarray:
    """Rows: cells of the margin over the kept variables; 1 where a table cell sums into it."""
    cells = list(itertools.product(*[range(s) for s in sizes]))
    margin_cells = sorted({tuple(c[i] for i in keep) for c in cells})
    index = {m: r for r, m in enumerate(margin_cells)}
    S = np.zeros((len(margin_cells), len(cells)))
    for j, c in enumerate(cells):
        S[index[tuple(c[i] for i in keep)], j] = 1
    return S


@st.composite
def release_cases(draw):
    k = draw(st.integers(2, 3))
    sizes = draw(st.lists(st.integers(2, 4), min_size=k, max_size=k))
    totals = draw(st.lists(st.booleans(), min_size=k, max_size=k).filter(lambda t: not all(t)))
    keep = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True))
    calibration = draw(st.sampled_from(["tight", "paper"]))
    eps10 = draw(st.integers(2, 30))
    symbolic = draw(st.booleans())
    return sizes, totals, keep, calibration, eps10, symbolic


@settings(PROPS, max_examples=40)
@given(release_cases())
def test_release_variance_properties(case) -> None:
    """variance(D) and variance(D, v, ...) on random tables, exact totals or not, both
    calibrations, eps a number or a parameter (substituted): every margin cell's variance
    equals diag(S Sigma S^T) from the pair-matrix construction of Algorithm 1 (or iid
    geometric noise), with the noise variance summed from the pmf; the covariance extra
    equals Sigma's within-total off-diagonal entry; a margin over exact-total variables
    only has variance 0 (Proposition 5.1: totals exact)."""
    sizes, totals, keep, calibration, eps10, symbolic = case
    names = [f"v{i}" for i in range(len(sizes))]
    text = "".join(variable(nm, [f"{nm}_{j}" for j in range(s)]) for nm, s in zip(names, sizes))
    eps_text = "eps" if symbolic else f"{eps10}/10"
    if symbolic:
        text += "parameter eps > 0\n"
    exact = any(totals)
    clause = ""
    if exact:
        clause = (" protect {" + ", ".join(nm for nm, t in zip(names, totals) if not t) + "} exact totals("
                  + ", ".join(nm for nm, t in zip(names, totals) if t) + ")")
    text += (f"release D = counts({', '.join(names)}) with geometric(epsilon = {eps_text}, "
             f"calibration = {calibration}){clause}\n")
    keep_sorted = sorted(keep)
    text += "query full = variance(D)\n" + f"query part = variance(D, {', '.join(names[i] for i in keep_sorted)})\n"
    spec = privspec.load(text)
    assert spec.ok, spec.render_diagnostics()
    model = spec.model
    from privspec.backends.releases.backend import ReleaseBackend

    subs = {"eps": sympy.Rational(eps10, 10)}
    eps = eps10 / 10
    # docs/releases.md: a = e^(-eps/2) for the geometric mechanism and the paper's Algorithm 1,
    # a = e^(-eps) for Algorithm 1 with calibration = tight
    a = math.exp(-eps) if exact and calibration == "tight" else math.exp(-eps / 2)
    s2 = two_sided_geometric_variance(a)
    Sigma = reference_noise_covariance(sizes, totals, s2, exact)
    full = ReleaseBackend().answer(model, model.queries["full"], "analyze")
    part = ReleaseBackend().answer(model, model.queries["part"], "analyze")
    if symbolic:
        assert full.value.free_symbols, "symbolic in eps"
    close(np.full(len(Sigma), to_float(full.value, subs)), np.diag(Sigma), what="cell variance")  # every cell alike
    S = margin_matrix(sizes, keep_sorted)
    close(np.full(len(S), to_float(part.value, subs)), np.diag(S @ Sigma @ S.T), what="margin variance")
    cov = full.extras["covariance"]
    if exact and math.prod(s for s, t in zip(sizes, totals) if not t) >= 2:
        i, j = 0, 1     # cells 0 and 1 of the table differ in the last variable only: same total cell iff it is protected
        same = not totals[-1]
        close(to_float(cov, subs), Sigma[i, j] if same else -s2, what="covariance within a total cell")
    else:
        assert to_float(cov, subs) == 0
    if exact and all(totals[i] for i in keep_sorted):
        assert to_float(part.value, subs) == 0


@pytest.mark.slow
def test_release_monte_carlo_algorithm1_and_geometric() -> None:
    """Noisy tables drawn by privspec (noisy_counts, fixed seed), 4000 of each release:
    with exact totals every total is exact in every draw, every cell is unbiased and has
    the exact variance; cells of one total cell have the exact covariance; without totals
    the geometric mechanism's cells are independent with the exact variance.  Tolerance:
    5 standard errors of a sample variance, sqrt((m4 - s^4)/reps), m4 the empirical
    fourth central moment; means within 5 sqrt(var/reps)."""
    from privspec.backends.releases.backend import ReleaseBackend, noisy_counts

    text = (variable("deg", ("BA", "BSc", "BEng")) + variable("band", ("b1", "b2", "b3", "b4"))
            + "release D = counts(deg, band) with geometric(epsilon = 1) protect {band} exact totals(deg)\n"
            + "release P = counts(deg, band) with geometric(epsilon = 1, calibration = paper) protect {band} "
              "exact totals(deg)\n"
            + "release G = counts(deg, band) with geometric(epsilon = 1)\n"
            + "query vD = variance(D)\nquery vP = variance(P)\nquery vG = variance(G)\n"
            + "query mD = variance(D, band)\n")
    model = privspec.load(text).model
    f = np.array([[5, 10, 47, 68], [1, 13, 44, 92], [0, 2, 3, 30]])
    reps = 4000
    rng = np.random.default_rng(2024)
    for name in ("D", "P", "G"):
        release = model.releases[name]
        draws = np.stack([noisy_counts(model, release, f, rng) for _ in range(reps)]).astype(float)
        exact = name != "G"
        if exact:
            assert (draws.sum(axis=2) == f.sum(axis=1)).all()        # Proposition 5.1 (2)
            assert (draws == np.round(draws)).all()                  # (3) integers
        var = to_float(ReleaseBackend().answer(model, model.queries["v" + name], "analyze").value)
        cov = to_float(ReleaseBackend().answer(model, model.queries["v" + name], "analyze").extras["covariance"])
        noise = (draws - f).reshape(reps, -1)
        assert np.all(np.abs(noise.mean(axis=0)) <= 5 * math.sqrt(var / reps)), noise.mean(axis=0)   # (4)
        S = np.cov(noise, rowvar=False)
        m4 = ((noise - noise.mean(axis=0)) ** 4).mean(axis=0)
        se_var = np.sqrt((m4 - np.diag(S) ** 2) / reps)
        assert np.all(np.abs(np.diag(S) - var) <= 5 * se_var), (name, np.diag(S), var)
        # covariance of cells 0 and 1 (same total cell): within 5 se of the exact one
        se_cov = math.sqrt((S[0, 0] * S[1, 1] + S[0, 1] ** 2) / reps)
        assert abs(S[0, 1] - cov) <= 5 * se_cov, (name, S[0, 1], cov)
        # cells of different total cells (0 and 4) are independent
        assert abs(S[0, 4]) <= 5 * math.sqrt(S[0, 0] * S[4, 4] / reps), (name, S[0, 4])
    # the margin by band sums one cell of each degree: its exact variance against the draws of D
    draws = np.stack([noisy_counts(model, model.releases["D"], f, rng) for _ in range(reps)]).astype(float)
    m = draws.sum(axis=1)
    v = to_float(ReleaseBackend().answer(model, model.queries["mD"], "analyze").value)
    c = m - m.mean(axis=0)
    se = np.sqrt(((c ** 4).mean(axis=0) - m.var(axis=0) ** 2) / reps)
    assert np.all(np.abs(m.var(axis=0, ddof=1) - v) <= 5 * se), (m.var(axis=0), v)


def test_release_table_query_reads_back_the_released_table(tmp_path) -> None:
    """privatize raw records into a release with exact totals, then ``run`` its table
    queries (JSON): the table and its margin equal the released CSV summed by numpy, the
    standard error is the square root of the exact variance, the totals equal the raw
    records' totals exactly, n is the number of records."""
    import io
    import json

    from privspec.cli import main

    spec = tmp_path / "r.privspec"
    spec.write_text(variable("deg", ("BA", "BSc", "BEng")) + variable("band", ("b1", "b2", "b3", "b4"))
                    + "release D = counts(deg, band) with geometric(epsilon = 1) protect {band} exact totals(deg)\n"
                    + "query t = table(D)\nquery tb = table(D, band)\nquery v = variance(D)\nquery vb = variance(D, band)\n")
    rng = np.random.default_rng(5)
    raw = pd.DataFrame({"deg": rng.choice(["BA", "BSc", "BEng"], 300, p=[.5, .3, .2]),
                        "band": rng.choice(["b1", "b2", "b3", "b4"], 300)})
    raw.to_csv(tmp_path / "raw.csv", index=False)
    out, err = io.StringIO(), io.StringIO()
    assert main(["privatize", str(spec), "--mechanism", "D", "--input", str(tmp_path / "raw.csv"),
                 "--output", str(tmp_path / "rel.csv"), "--seed", "3"], stdout=out, stderr=err) == 0, err.getvalue()
    released = pd.read_csv(tmp_path / "rel.csv")
    table = released.pivot(index="deg", columns="band", values="count").loc[["BA", "BSc", "BEng"],
                                                                             ["b1", "b2", "b3", "b4"]].to_numpy()
    truth = pd.crosstab(raw["deg"], raw["band"]).loc[["BA", "BSc", "BEng"], ["b1", "b2", "b3", "b4"]].to_numpy()
    assert (table.sum(axis=1) == truth.sum(axis=1)).all()
    out, err = io.StringIO(), io.StringIO()
    assert main(["run", str(spec), "--data", f"D={tmp_path / 'rel.csv'}", "--format", "json"],
                stdout=out, stderr=err) == 0, err.getvalue()
    q = json.loads(out.getvalue())["queries"]
    assert np.array_equal(np.array(q["t"]["value"]["data"]), table)
    assert np.array_equal(np.array(q["tb"]["value"]["data"]), table.sum(axis=0))
    assert np.allclose(np.array(q["t"]["se"]["data"]), math.sqrt(q["v"]["value"]), rtol=1e-12)
    assert np.allclose(np.array(q["tb"]["se"]["data"]), math.sqrt(q["vb"]["value"]), rtol=1e-12)
    assert np.array_equal(np.array(q["t"]["totals"]["data"]), truth.sum(axis=1))
    assert q["t"]["n"] == 300 and q["t"]["negative_cells"] == int((table < 0).sum())
    s2 = two_sided_geometric_variance(math.exp(-1))            # tight Algorithm 1: a = e^(-eps)
    assert math.isclose(q["v"]["value"], 3 * s2, rel_tol=1e-9)     # n_i - 1 = 3 pairs per cell
    assert math.isclose(q["vb"]["value"], 3 * 1 * 3 * s2, rel_tol=1e-9)   # G K (n - K) s2
