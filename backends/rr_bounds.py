"""The castell paper's error bounds (Theorems 4-6) and hybrid thresholds (Appendix C),
exact (sympy) and symbolic in n when no ``n`` is given.

For w of the product's attributes the paper writes its bounds with one domain size d
(the largest) and one keep probability p (the smallest; for GRR ``p = e^eps'/(e^eps' +
d - 1)`` with the per-attribute budget ``eps' = eps / w``).  ``bounds`` and
``thresholds`` follow that convention: for each w the worst case over the factors.

What the paper's Theorem 6 bounds is a *rounding* model of the report frequencies
(each off by at most 1/n); the sampling error of the castell estimate is of order
n^-1/2, so Eq. (27) is not a bound on it.  ``bounds`` therefore also gives the exact
worst case of the paper's own rounding model, ``||K^-1||_inf / n`` (Lemma 2's "an
element of P^-1 is at most 1/p" does not hold: the diagonal of ``P^-1 = (I - qJ)/(p -
q)`` is ``(1 - q)/(p - q) > 1/p``), and the standard deviation of a castell cell at the
uniform distribution, from the Kronecker covariance.
"""
from __future__ import annotations

import itertools
from typing import Any

import sympy

from ..errors import BackendError, Diagnostic
from ..model import ModelGraph, Query
from ..results import Result
from .compile import channel_of
from .populations import population_vector

N = sympy.Symbol("n", positive=True)


class _Factor:
    """One RR factor's exact d, p (smallest keep probability), q, eps and ||K^-1||_inf."""

    def __init__(self, model: ModelGraph, mech: Any):
        subs = {p.symbol: p.value for p in model.parameters.values() if p.value is not None}
        self.name = mech.variable.name
        self.d = mech.variable.p
        self.grr = mech.kind == "grr"
        if self.grr:
            self.eps = sympy.sympify(mech.epsilon).subs(subs)
            e = sympy.exp(self.eps)
            self.p, self.q = e / (e + self.d - 1), 1 / (e + self.d - 1)
            # P^-1 = (I - q J)/(p - q): row absolute sum (1 - q + (d - 1) q)/(p - q)
            self.inv_norm = sympy.simplify((1 + (self.d - 2) * self.q) / (self.p - self.q))
        else:
            K = channel_of(mech).K.subs(subs)
            self.eps = channel_of(mech).epsilon()
            self.p = sympy.Min(*[K[i, i] for i in range(self.d)])
            self.q = None
            Ki = K.inv()
            self.inv_norm = sympy.Max(*[sum(abs(Ki[i, j]) for j in range(self.d)) for i in range(self.d)])

    def badness(self) -> float | None:
        try:
            return float(self.d / self.p)
        except TypeError:
            return None


def _worst(factors: list[_Factor], w: int) -> list[_Factor]:
    """The w factors with the largest d/p (the paper's d = max d_i, p = min p_i)."""
    keys = [f.badness() for f in factors]
    if all(k is not None for k in keys):
        order = sorted(range(len(factors)), key=lambda i: -keys[i])
    else:  # symbolic: with a common eps the largest domain is the worst
        order = sorted(range(len(factors)), key=lambda i: -factors[i].d)
    return [factors[i] for i in order[:w]]


def _n(q: Query) -> sympy.Expr:
    return q.method.options.get("n", N) if q.method is not None else N


def _factors(model: ModelGraph, q: Query) -> list[_Factor]:
    return [_Factor(model, f) for f in q.mechanism.factors]


def independent_bound(d: int, w: int) -> sympy.Expr:
    """Theorem 5 (Eq. 26): ``max(d^-w, 1/d - d^-w)``."""
    d = sympy.Integer(d)
    return sympy.Max(d ** -w, 1 / d - d ** -w)


def castell_bound(d: int, p: sympy.Expr, w: int, n: sympy.Expr) -> sympy.Expr:
    """Theorem 6 (Eq. 27): ``d^w / (p^w n) = (1 + (d - 1)/e^(eps/w))^w d^w / n`` for GRR
    with ``eps / w`` per attribute.  (The proof's last expression writes ``d^(eps/w)``
    where ``e^(eps/w)`` is meant.)"""
    return sympy.Integer(d) ** w / (p ** w * n)


def _cell_sd_uniform(f: _Factor, w: int, n: sympy.Expr) -> sympy.Expr | None:
    """sd of each castell cell at the uniform truth, GRR: ``sqrt((s^w - d^-2w) / n)`` with
    ``s = ((1 - q)^2 + (d - 1) q^2) / ((p - q)^2 d)`` (the row of ``A o A`` times uniform lambda)."""
    if not f.grr:
        return None
    s = ((1 - f.q) ** 2 + (f.d - 1) * f.q ** 2) / ((f.p - f.q) ** 2 * f.d)
    return sympy.sqrt((s ** w - sympy.Integer(f.d) ** (-2 * w)) / n)


def theorem4(model: ModelGraph, q: Query) -> dict:
    """Theorem 4 for each pair with a declared population: Cramer's V, the limit of
    RR-Independent's MSE (the squared bias of assuming independence) and the bound.

    The theorem states ``MSE < V^2 / d`` for ``d = |A| = |B|``; it holds (``MSE =
    sum (Pi - pi_a pi_b)^2 / d^2 <= chi^2/n / d^2 = V^2 (d - 1) / d^2``), although the
    proof's inequalities run the other way.  For ``|A| != |B|`` the same argument gives
    ``V^2 (min(d_A, d_B) - 1) / (d_A d_B)``, which is what ``bound`` holds.
    """
    out: dict = {}
    factors = q.mechanism.factors
    for a, b in itertools.combinations(factors, 2):
        w = population_vector(model, [a.variable, b.variable])
        if w is None:
            continue
        da, db = a.variable.p, b.variable.p
        T = sympy.Matrix(da, db, list(w))
        ra = [sum(T[i, j] for j in range(db)) for i in range(da)]
        cb = [sum(T[i, j] for i in range(da)) for j in range(db)]
        chi2 = sum((T[i, j] - ra[i] * cb[j]) ** 2 / (ra[i] * cb[j])
                   for i in range(da) for j in range(db) if ra[i] * cb[j] != 0)
        V2 = sympy.nsimplify(chi2 / (min(da, db) - 1))
        mse = sum((T[i, j] - ra[i] * cb[j]) ** 2 for i in range(da) for j in range(db)) / (da * db)
        out[f"{a.variable.name},{b.variable.name}"] = {
            "cramers_v": sympy.sqrt(V2), "mse_rr_independent": sympy.nsimplify(mse),
            "bound": V2 * (min(da, db) - 1) / (da * db)}
    return out


def bounds_result(model: ModelGraph, q: Query) -> Result:
    factors = _factors(model, q)
    n = _n(q)
    value: dict = {}
    for w in range(1, len(factors) + 1):
        worst = _worst(factors, w)
        d = max(f.d for f in worst)
        p = worst[0].p if all(f.badness() is None for f in worst) else \
            min(worst, key=lambda f: float(f.p)).p
        entry = {"independent": independent_bound(d, w),
                 "castell": sympy.simplify(castell_bound(d, p, w, n)),
                 "castell_rounding_exact": sympy.simplify(sympy.Mul(*[f.inv_norm for f in worst]) / n)}
        sd = _cell_sd_uniform(worst[0], w, n) if all(f.grr for f in worst) and len({(f.d, f.eps) for f in worst}) == 1 \
            else None
        if sd is not None:
            entry["castell_sd_uniform"] = sympy.simplify(sd)
        value[f"w={w}"] = entry
    t4 = theorem4(model, q)
    if t4:
        value["theorem4"] = t4
    extras = _symbolic_extras(value)
    extras.update({"n": str(n) if n.free_symbols else n, "meaning": (
        "per w (worst w factors: largest d, smallest keep probability p): independent = Theorem 5 "
        "(Eq. 26), max(d^-w, 1/d - d^-w); castell = Theorem 6 (Eq. 27), d^w/(p^w n); "
        "castell_rounding_exact = ||K^-1||_inf / n, the exact worst case of the paper's rounding model "
        "(|error of each report frequency| <= 1/n); castell_sd_uniform = standard deviation of each castell "
        "cell when the truth is uniform (the sampling error, of order n^-1/2, which Eq. 27 does not bound); "
        "theorem4: Cramer's V, RR-Independent's limiting MSE and its bound V^2 (min(d_A, d_B) - 1)/(d_A d_B) "
        "(= V^2 (d - 1)/d^2 < V^2/d for equal d)")})
    return Result("bounds", value, extras)


def thresholds_result(model: ModelGraph, q: Query) -> Result:
    """Appendix C: ``n*``, ``eps*`` and ``w*`` for w = 2..m (GRR factors), with
    ``d = max d_i`` and ``eps = w eps'`` (``eps'`` the smallest per-attribute budget).

    ``eps*`` solves Eq. 27 = Eq. 26 for eps with ``1/d - d^-w`` as RR-Independent's bound
    (the larger one for w >= 2); it is ``oo`` where no budget makes castell's bound the
    smaller.  RR-Ind-Joint (castell) is preferred for ``n > n*``, ``eps > eps*`` (Appendix
    C's closing "eps < eps*" is a typo: Table III and the derivation say eps > eps*) and
    ``w < w*``.
    """
    factors = _factors(model, q)
    if not all(f.grr for f in factors):
        raise BackendError(Diagnostic("B405", "thresholds() need GRR factors (an epsilon each)"))
    n = _n(q)
    value: dict = {}
    d_all = max(f.d for f in factors)
    for w in range(2, len(factors) + 1):
        worst = _worst(factors, w)
        d = max(f.d for f in worst)
        eps_attr = worst[0].eps if all(f.badness() is None for f in worst) else \
            min((f.eps for f in worst), key=lambda e: float(e))
        eps = w * eps_attr
        D = sympy.Integer(d)
        B = independent_bound(d, w)
        n_star = (1 + (D - 1) / sympy.exp(eps / w)) ** w * D ** w / B
        den = (1 / D - D ** -w) ** sympy.Rational(1, w) * n ** sympy.Rational(1, w) / D - 1
        if den.is_number and den <= 0:
            eps_star: Any = sympy.oo
        else:
            eps_star = w * sympy.log((D - 1) / den)
        entry: dict = {"d": d, "eps": eps, "n_star": sympy.simplify(n_star), "eps_star": eps_star}
        if n.is_number and n_star.is_number:
            entry["castell_preferred"] = bool(n > n_star)
        value[f"w={w}"] = entry
    D = sympy.Integer(d_all)
    value["w_star"] = (sympy.log(n) - sympy.log(D)) / sympy.log(D ** 2)
    extras = _symbolic_extras(value)
    extras.update({"n": str(n) if n.free_symbols else n, "meaning": (
        "Appendix C: RR-Ind-Joint (castell) is preferred for n > n_star = (1 + (d-1)/e^(eps/w))^w d^w / "
        "max(d^-w, 1/d - d^-w), for eps > eps_star = w log((d-1) / ((1/d - d^-w)^(1/w) n^(1/w)/d - 1)) "
        "(eps: the budget of the w attributes together), and for w < w_star = (log n - log d)/log d^2; "
        "d: the largest domain")})
    return Result("thresholds", value, extras)


def _symbolic_extras(value: dict) -> dict:
    """``expr``/``latex`` for mappings with symbolic entries (their JSON value is null)."""
    def walk(v, fn):
        if isinstance(v, dict):
            return {k: walk(x, fn) for k, x in v.items()}
        return fn(v) if isinstance(v, sympy.Basic) else v

    symbolic = []
    walk(value, lambda x: symbolic.append(bool(x.free_symbols)) or x)
    if not any(symbolic):
        return {}
    return {"expr": walk(value, str), "latex": walk(value, sympy.latex)}
