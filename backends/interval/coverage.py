"""Privacy coverage of interval mechanisms: tau(M) = E[L(S_Z)] (Definition 1).

Every result says how it was computed (``Coverage.method``):

``exact``
    sympy integration; for uniform anchors and a uniform population inside their
    support the integrands are polynomials (also the progressive mechanism on a
    uniform population: (2/3)^h, see :func:`progressive_coverage`).
``quadrature``
    scipy ``quad`` (Case I and Case II: the formulas of the proof of Theorem 1) or a
    composite Gauss-Legendre rule on the population's quantile square (any partition
    mechanism, acceptable ranges included), or a trapezoid grid (progressive).
``quasi-monte-carlo``
    scrambled Sobol anchors, with an error estimate from independent scrambles
    (selective mechanisms: the threshold 1{L >= tau} is not smooth).
``symbolic``
    no population: the coverage as an integral in the unknown CDF.

The identity behind the partition formulas: with Y, Y' iid from the population and
independent of the anchors T, ``sum_i L(R_T^(i))^2 = P(Y, Y' in the same range | T)``
(eq. 15), so ``tau = E[P(Y and Y' share a range)]``.  For m - 1 iid anchors with CDF
G that is ``E[(1 - D)^(m-1)]`` with ``D = |G(Y) - G(Y')|``; a ring of q anchors keeps
Y and Y' together also when all anchors fall between them: ``E[(1 - D)^q + D^q]``.

Examples
--------
>>> from scipy import stats
>>> round(case1_coverage(stats.norm.cdf, stats.norm()), 6)   # Y and U iid: F(U) ~ U(0, 1)
0.666667
>>> round(case2_coverage(stats.norm.cdf, stats.norm()), 6)
0.5
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import sympy
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.model.graph import IntervalMechanism, Law, ProgressiveMechanism, SelectiveMechanism
from privspec.backends.interval.laws import law_cdf_expr, law_distribution, nearest_double, support_of
from privspec.backends.interval.ranges import range_coverage

QMC_POINTS = 2 ** 14
QMC_SCRAMBLES = 8


@dataclass(frozen=True)
class Coverage:
    """A coverage value and how it was obtained (``exact``, ``quadrature``, ...)."""

    value: Any
    method: str
    note: str = ""
    extras: dict = field(default_factory=dict)


# ---- Case I and Case II: the formulas of the proof of Theorem 1 -----------------------------------
def _over_anchor(g: Callable[[float], float], anchor, weight: Callable[[float], float] | None = None) -> float:
    """``E[g(U)]`` (times ``weight(F_U(U))`` when given) for the anchor law ``anchor``, by
    quadrature in the anchor's quantile: ``int_0^1 g(F_U^-1(q)) dq``.  In the anchor's own
    variable the integrand is ``g`` times the anchor's density, which quadrature never
    sees when the anchor is narrow (an anchor of sd 1e-300 gave tau = 1 for a Case II whose
    coverage is 1/2); in its quantile every anchor law is uniform on [0, 1]."""
    w = weight or (lambda q: 1.0)
    val, _ = scipy.integrate.quad(lambda q: g(anchor.ppf(q)) * w(q), 0.0, 1.0, epsabs=1e-13, epsrel=1e-12,
                                  limit=200)
    return float(val)


def case1_coverage(cdf: Callable, anchor) -> float:
    """tau = E[F(U)^2 + (1 - F(U))^2] (eq. 14), by quadrature over the anchor law (in its
    quantile: :func:`_over_anchor`).

    ``cdf`` is the population CDF F_Y, ``anchor`` a frozen scipy distribution of U.
    """
    return _over_anchor(lambda u: cdf(u) ** 2 + (1 - cdf(u)) ** 2, anchor)


def case2_coverage(cdf: Callable, anchor) -> float:
    """tau = E[F(U)^2 + (F(V) - F(U))^2 + (1 - F(V))^2], U <= V sorted iid anchors.

    Expanded into one-dimensional integrals: with m1 = E F(U1), m2 = E F(U1)^2 and
    E F(V) = E max(F(U1), F(U2)) = int_0^1 F(F_U^-1(q)) 2q dq (V's quantile law has density
    2q), tau = 4 m2 - 2 m1^2 - 2 E F(V) + 1.
    """
    m1 = _over_anchor(lambda u: cdf(u), anchor)
    m2 = _over_anchor(lambda u: cdf(u) ** 2, anchor)
    emax = _over_anchor(lambda v: cdf(v), anchor, weight=lambda q: 2 * q)
    return float(4 * m2 - 2 * m1 ** 2 - 2 * emax + 1)


# ---- any partition mechanism: the pair representation ---------------------------------------------
def same_range(scheme: str, count: int) -> Callable[[np.ndarray], np.ndarray]:
    """P(Y and Y' share a range | D) for a scheme with ``count`` iid anchors, D = |G(Y) - G(Y')|."""
    if scheme == "ring":
        return lambda d: (1 - d) ** count + d ** count
    return lambda d: (1 - d) ** count


def _gl(n: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(n)
    return (x + 1) / 2, w / 2


def pair_integral(population, together: Callable[[np.ndarray, np.ndarray], np.ndarray],
                  breaks: Sequence[float] = (), nodes: int = 24) -> float:
    """E[together(Y, Y')] for Y, Y' iid from ``population`` (a frozen scipy law).

    Composite Gauss-Legendre on the quantile square, symmetric integrand: twice the
    triangle s < s', cut at the quantiles ``breaks`` where the integrand has kinks
    (ends of the anchors' support, ends of an acceptable range); diagonal panels are
    mapped onto the triangle (collapsed coordinates) so the kink on the diagonal is
    never inside a panel.
    """
    # graded panels toward 0 and 1: the quantile function of an unbounded population
    # has a logarithmic singularity there, which a single Gauss rule resolves badly
    grading = [10.0 ** -k for k in (12, 9, 6, 4, 3, 2)] + [0.05, 0.2, 0.5]
    grading += [1 - g for g in grading]
    qs = sorted({0.0, 1.0, *grading, *(float(population.cdf(b)) for b in breaks if np.isfinite(b))})
    qs = [q for q in qs if 0.0 <= q <= 1.0]
    x, w = _gl(nodes)
    total = 0.0
    for i in range(len(qs) - 1):
        p, q = qs[i], qs[i + 1]
        if q <= p:
            continue
        # diagonal panel: s' in (p, q), s = p + (s' - p) t
        sp = p + (q - p) * x
        s = p + (sp[:, None] - p) * x[None, :]
        jac = (q - p) * (sp[:, None] - p)
        yp = population.ppf(sp)[:, None]
        y = population.ppf(s)
        total += 2 * float(np.sum(w[:, None] * w[None, :] * jac * together(y, yp)))
        for j in range(i + 1, len(qs) - 1):
            p2, q2 = qs[j], qs[j + 1]
            if q2 <= p2:
                continue
            s1, s2 = p + (q - p) * x, p2 + (q2 - p2) * x
            vals = together(population.ppf(s1)[:, None], population.ppf(s2)[None, :])
            total += 2 * float(np.sum(w[:, None] * w[None, :] * vals)) * (q - p) * (q2 - p2)
    return total


def _outside(disclose: tuple | None) -> Callable[[np.ndarray], np.ndarray]:
    if disclose is None:
        return lambda y: 1.0
    a, b = nearest_double(disclose[0]), nearest_double(disclose[1])
    return lambda y: ((y < a) | (y > b)).astype(float)


def partition_coverage(population, anchor, scheme: str, count: int, disclose: tuple | None = None) -> float:
    """tau of a canonical or ring mechanism (with an acceptable range) by quadrature."""
    same = same_range(scheme, count)
    out = _outside(disclose)

    def together(y, yp):
        return same(np.abs(anchor.cdf(y) - anchor.cdf(yp))) * out(y) * out(yp)

    lo, hi = anchor.support()
    breaks = [lo, hi] + ([nearest_double(disclose[0]), nearest_double(disclose[1])] if disclose else [])
    return pair_integral(population, together, breaks)


def ensemble_coverage(population, mechanisms: Sequence[IntervalMechanism]) -> float:
    """tau of the ensemble (Definition 3) of mechanisms with independent anchors.

    The ensemble's partition is cut by every mechanism's anchors and discloses on the
    union of the acceptable ranges, so Y and Y' share a range iff every mechanism
    keeps them together and neither is disclosed.
    """
    parts = []
    breaks: list[float] = []
    for m in mechanisms:
        anchor = law_distribution(m.anchor)
        count = m.m if m.scheme == "ring" else m.m - 1
        parts.append((anchor, same_range(m.scheme, count), _outside(m.disclose)))
        breaks += list(anchor.support()) + ([nearest_double(m.disclose[0]), nearest_double(m.disclose[1])] if m.disclose else [])

    def together(y, yp):
        val = 1.0
        for anchor, same, out in parts:
            val = val * same(np.abs(anchor.cdf(y) - anchor.cdf(yp))) * out(y) * out(yp)
        return val

    return pair_integral(population, together, breaks)


def composition_bound(coverages: Sequence[float]) -> float:
    """Theorem 4: 1 - tau(M1 + ... + Mk) <= sum_j (1 - tau(Mj)); returns the implied
    lower bound on the ensemble's coverage.

    >>> composition_bound([0.9, 0.95])
    0.85
    """
    return float(round(1 - sum(1 - t for t in coverages), 15))


# ---- exact (sympy): uniform anchors around a uniform population --------------------------------
def _uniform_ends(law: Law) -> tuple[sympy.Expr, sympy.Expr] | None:
    if law.family != "uniform":
        return None
    return law.support()


def exact_uniform_coverage(population: Law, anchor: Law, scheme: str, count: int,
                           disclose: tuple | None = None) -> sympy.Expr | None:
    """The exact coverage when Y ~ uniform[c, d] and anchors ~ uniform[a, b] contain it.

    Then G is linear on [c, d], D = |Y - Y'| / (b - a), and the pair integral is an
    integral of a polynomial over triangles and rectangles.  None when the laws do
    not have this form.

    >>> import sympy
    >>> u = Law("uniform", (("a", sympy.Integer(0)), ("b", sympy.Integer(150))))
    >>> exact_uniform_coverage(u, u, "canonical", 1)
    2/3
    >>> exact_uniform_coverage(u, u, "canonical", 2)
    1/2
    """
    pe, ae = _uniform_ends(population), _uniform_ends(anchor)
    if pe is None or ae is None:
        return None
    (c, d), (a, b) = pe, ae
    if not (sympy.simplify(a - c) <= 0 and sympy.simplify(d - b) <= 0):
        return None
    y, yp = sympy.symbols("y yp", real=True)
    dist = (yp - y) / (b - a)
    same = (1 - dist) ** count + (dist ** count if scheme == "ring" else 0)
    same = sympy.expand(same)
    pieces = [(c, d)]
    if disclose is not None:
        lo, hi = disclose
        pieces = [(c, sympy.Min(lo, d)), (sympy.Max(hi, c), d)]
        pieces = [(p, q) for p, q in pieces if sympy.simplify(q - p) > 0]

    def tri(p, q):
        inner = sympy.integrate(same, (y, p, yp))
        return sympy.integrate(inner, (yp, p, q))

    def rect(p1, q1, p2, q2):
        inner = sympy.integrate(same, (y, p1, q1))
        return sympy.integrate(inner, (yp, p2, q2))

    total = sum((tri(p, q) for p, q in pieces), sympy.Integer(0))
    if len(pieces) == 2:
        total += rect(*pieces[0], *pieces[1])
    return sympy.nsimplify(sympy.simplify(2 * total / (d - c) ** 2))


# ---- progressive (Example 4) ------------------------------------------------------------------
def progressive_coverage(population, lower: float, upper: float, rounds: int, grid: int = 1201) -> float:
    """tau of the progressive mechanism when every round is answered, by a trapezoid grid.

    C_h(a, b) = E[sum over the final ranges inside [a, b] of L(range)^2] obeys
    C_h(a, b) = (1/(b - a)) int_a^b [C_{h-1}(a, u) + C_{h-1}(u, b)] du with
    C_0(a, b) = L((a, b])^2, and tau = C_rounds(lower, upper).  For a uniform
    population on [lower, upper] each round multiplies the coverage by
    E[U^2 + (1 - U)^2] = 2/3 (scale invariance), so tau = (2/3)^rounds exactly.
    """
    x = np.linspace(lower, upper, grid)
    F = population.cdf(x)
    C = np.triu((F[None, :] - F[:, None]) ** 2)
    dx = np.diff(x)
    width = x[None, :] - x[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        for _ in range(rounds):
            # int_{x_i}^{x_j} C(i, u) du: cumulative trapezoid along rows (C(i, u) = 0 for u < x_i)
            row = np.zeros_like(C)
            row[:, 1:] = np.cumsum((C[:, 1:] + C[:, :-1]) / 2 * dx[None, :], axis=1)
            row = row - np.diag(row)[:, None]
            # int_{x_i}^{x_j} C(u, j) du: cumulative trapezoid down columns, from row i to row j
            col = np.zeros_like(C)
            col[1:, :] = np.cumsum((C[1:, :] + C[:-1, :]) / 2 * dx[:, None], axis=0)
            col = np.diag(col)[None, :] - col
            C = np.triu(np.where(width > 0, (row + col) / width, 0.0))
    return float(C[0, -1])


# ---- selective (Definition 5) ---------------------------------------------------------------------
def partition_probabilities(mech: IntervalMechanism, anchors: np.ndarray, cdf: Callable) -> np.ndarray:
    """L(R_t^(i) minus A) for every range i of the partitions cut by rows of ``anchors``."""
    t = np.sort(anchors, axis=1)
    n = t.shape[0]
    ends = np.column_stack([np.full(n, -np.inf), t, np.full(n, np.inf)])
    lefts, rights = ends[:, :-1], ends[:, 1:]
    if mech.scheme == "ring":
        # the first and last canonical intervals are one range (Example 3)
        ring_l, ring_r = t[:, -1:], t[:, :1]
        lefts = np.column_stack([ring_l, lefts[:, 1:-1]])
        rights = np.column_stack([ring_r, rights[:, 1:-1]])
    probs = range_coverage(lefts.ravel(), rights.ravel(), cdf, mech.disclose)
    return probs.reshape(lefts.shape)


def _sobol_anchors(mech: IntervalMechanism, points: int, seed: int) -> np.ndarray:
    count = mech.m if mech.scheme == "ring" else mech.m - 1
    u = scipy.stats.qmc.Sobol(d=count, scramble=True, seed=seed).random(points)
    u = np.clip(u, 1e-15, 1 - 1e-15)
    return law_distribution(mech.anchor).ppf(u)


def selective_terms(mech: SelectiveMechanism, cdf: Callable, points: int = QMC_POINTS,
                    scrambles: int = QMC_SCRAMBLES) -> dict:
    """p = P(L(S_Z) >= tau) and s = E[L(S_Z) 1{L(S_Z) >= tau}] of the base mechanism.

    Both are expectations over the anchors of sums over ranges, sum_i P_i 1{P_i >= tau}
    and sum_i P_i^2 1{P_i >= tau} with P_i = L(R^(i)) (Y falls in range i with
    probability P_i); computed by randomized quasi-Monte Carlo.
    """
    tau = nearest_double(mech.tau)
    ps, ss = [], []
    for k in range(scrambles):
        P = partition_probabilities(mech.base, _sobol_anchors(mech.base, points // scrambles, k), cdf)
        keep = P >= tau
        ps.append(float(np.mean(np.sum(P * keep, axis=1))))
        ss.append(float(np.mean(np.sum(P ** 2 * keep, axis=1))))
    err = lambda v: float(np.std(v, ddof=1) / np.sqrt(len(v)))
    return {"p": float(np.mean(ps)), "p_error": err(ps), "s": float(np.mean(ss)), "s_error": err(ss)}


def ignorability(rho: float, p: float) -> dict:
    """Proposition 2 for a (tau, rho)-selective mechanism with p = P(L(S_Z) >= tau).

    The exact P(W = 0 | null) = (1 - rho) / (1 - rho p); the paper's sufficient
    condition rho <= p makes it >= 1/2, and the exact condition is rho <= 1/(2 - p).
    (The proof writes P(Z = 0) for P(W = 0).)

    >>> ignorability(0.5, 0.8)["p_w0_given_null"]
    0.8333333333333334
    """
    w0 = (1 - rho) / (1 - rho * p) if rho * p < 1 else float("nan")
    return {"condition": bool(rho <= p), "p_w0_given_null": w0, "ignorable": bool(w0 >= 0.5),
            "rho_max": 1 / (2 - p)}


def selective_coverage(mech: SelectiveMechanism, cdf: Callable) -> Coverage:
    """tau of a selective mechanism; a null report counts with coverage 1.

    Given null, Y may be anything (W = 0 happens whatever Y is when rho < 1), so
    L(S_null) = 1; the collected reports have coverage >= tau.
    """
    terms = selective_terms(mech, cdf)
    rho = nearest_double(mech.rho)
    p, s = terms["p"], terms["s"]
    value = rho * s + (1 - rho * p)
    extras = {"p_coverage_at_least_tau": p, "collect_probability": rho * p,
              "coverage_collected": s / p if p > 0 else float("nan"),
              "ignorability": ignorability(rho, p),
              "error": rho * terms["s_error"] + rho * terms["p_error"]}
    return Coverage(value, "quasi-monte-carlo",
                    f"{QMC_POINTS} scrambled Sobol anchor draws in {QMC_SCRAMBLES} scrambles; a null report "
                    "counts with coverage 1", extras)


def progressive_mechanism_coverage(mech: ProgressiveMechanism, population: Law) -> Coverage:
    """tau of the progressive mechanism: exact for a uniform population on the support,
    otherwise by quadrature (every round answered)."""
    dist = law_distribution(population)
    lo, hi = support_of(mech.variable)
    ends = population.support() if population.family == "uniform" else None
    if ends is not None and sympy.simplify(ends[0] - mech.variable.lower) == 0 \
            and sympy.simplify(ends[1] - mech.variable.upper) == 0:
        return Coverage(sympy.Rational(2, 3) ** mech.rounds, "exact",
                        "uniform population on the support: each round keeps 2/3 in expectation")
    return Coverage(progressive_coverage(dist, lo, hi, mech.rounds), "quadrature",
                    "trapezoid grid of 1201 points; every round answered")


def interval_mechanism_coverage(mech: IntervalMechanism, population: Law) -> Coverage:
    """tau of an interval mechanism: exact for uniform anchors around a uniform population,
    Theorem 1's formulas for Case I and II, otherwise Gauss-Legendre on the quantile square."""
    dist = law_distribution(population)
    count = mech.m if mech.scheme == "ring" else mech.m - 1
    exact = exact_uniform_coverage(population, mech.anchor, mech.scheme, count, mech.disclose)
    if exact is not None:
        return Coverage(exact, "exact", "uniform anchors around a uniform population: polynomial integrals")
    anchor = law_distribution(mech.anchor)
    if mech.disclose is None and mech.scheme in ("case1", "case2"):
        f = case1_coverage if mech.scheme == "case1" else case2_coverage
        return Coverage(f(dist.cdf, anchor), "quadrature",
                        f"{'Case I' if mech.scheme == 'case1' else 'Case II'} formula of the proof of "
                        "Theorem 1, scipy quad")
    return Coverage(partition_coverage(dist, anchor, mech.scheme, count, mech.disclose), "quadrature",
                    "Gauss-Legendre on the quantile square (eq. 15 as P(Y, Y' in one range))")


def symbolic_coverage(mech) -> Coverage:
    """Without a population: tau as an integral in the unknown CDF F of the variable."""
    var = mech.variable.name
    F = sympy.Function(f"F_{var}")
    u, v = sympy.symbols("u v", real=True)
    if isinstance(mech, IntervalMechanism) and mech.disclose is None and mech.scheme in ("case1", "case2"):
        g, lo, hi = _density_on_support(mech.anchor, u)
        if mech.scheme == "case1":
            expr = sympy.Integral((F(u) ** 2 + (1 - F(u)) ** 2) * g, (u, lo, hi))
        else:
            gv = g.subs(u, v)
            expr = 2 * sympy.Integral(sympy.Integral(
                (F(u) ** 2 + (F(v) - F(u)) ** 2 + (1 - F(v)) ** 2) * g * gv, (u, lo, v)), (v, lo, hi))
        return Coverage(expr, "symbolic", f"no population for {var}: the formula of the proof of Theorem 1")
    y, yp = sympy.symbols("y yp", real=True)
    f = sympy.Function(f"f_{var}")
    expr = sympy.Integral(sympy.Function("same")(y, yp) * f(y) * f(yp), (y, -sympy.oo, sympy.oo),
                          (yp, -sympy.oo, sympy.oo))
    return Coverage(expr, "symbolic", f"no population for {var}: tau = P(Y and Y' share a range), "
                                      "declare a population to evaluate it")


def _density_on_support(law: Law, u: sympy.Symbol) -> tuple[sympy.Expr, sympy.Expr, sympy.Expr]:
    lo, hi = law.support()
    if law.family == "uniform":
        return 1 / (hi - lo), lo, hi
    if law.family == "exponential":
        rate = law.param("rate") / law.scale
        return rate * sympy.exp(-rate * (u - law.shift)), lo, hi
    return sympy.diff(law_cdf_expr(law, u), u), lo, hi
