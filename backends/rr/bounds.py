"""The castell paper's error bounds (Theorems 4-6) and hybrid thresholds (Appendix C),
exact (sympy) and symbolic in n when no ``n`` is given.

The paper writes its bounds with one domain size d and one keep probability p (for GRR
``p = e^eps'/(e^eps' + d - 1)`` with the per-attribute budget ``eps' = eps / w``); for
unequal domains it takes the largest d and the smallest p.  ``bounds`` and
``thresholds`` use instead the generalization of Theorems 5-6 and Appendix C that their
proofs give for factors with domain sizes and budgets of their own,
:func:`privspec.backends.rr.hybrid.bound_rule` -- the one rule that ``hybrid(switch =
thresholds)`` uses too, so that ``thresholds(M, n = N)``'s ``castell_preferred`` is the
hybrid's choice at that n.  With one domain size and ``eps/w`` per attribute it is the
paper's.  For each w the entry is for the w attributes for which castell is least
preferred (the largest ``n*``).

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
import math
from typing import Any

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)
import sympy

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import ModelGraph, Query
from privspec.results.kinds import Bounds, Thresholds
from privspec.results.result import Result
from privspec.backends.core.compile import channel_of
from privspec.backends.core.populations import parameter_values, population_vector
from privspec.backends.rr.hybrid import bound_rule, keep_probabilities
from privspec.backends.rr.problem import numeric_K

N = sympy.Symbol("n", positive=True)
#: beyond this many w-subsets of a product, the entry for w is for the w factors with
#: the largest d_k/p_k instead of the searched worst subset
SUBSET_SEARCH_LIMIT = 20000


class _Factor:
    """One RR factor's exact d, p (smallest keep probability), q, eps and ||K^-1||_inf."""

    def __init__(self, model: ModelGraph, mech: Any):
        subs = parameter_values(model)
        self.model, self.mech = model, mech
        self.name = mech.variable.name
        self.d = mech.variable.p
        self.grr = mech.kind == "grr"
        if self.grr:
            self.eps = sympy.sympify(mech.epsilon).subs(subs)
            e = sympy.exp(self.eps)
            self.p, self.q = e / (e + self.d - 1), 1 / (e + self.d - 1)
            # P^-1 = (I - q J)/(p - q): row absolute sum (1 - q + (d - 1) q)/(p - q)
            self.inv_norm = _tidy((1 + (self.d - 2) * self.q) / (self.p - self.q))
        else:
            K = channel_of(mech).K.subs(subs)
            self.eps = channel_of(mech).epsilon()
            self.p = sympy.Min(*[K[i, i] for i in range(self.d)])
            self.q = None
            Ki = K.inv()
            self.inv_norm = sympy.Max(*[sum(abs(Ki[i, j]) for j in range(self.d)) for i in range(self.d)])

    @property
    def numeric(self) -> bool:
        return not sympy.sympify(self.p).free_symbols

    def keep(self) -> float:
        """The keep probability as ``hybrid`` sees it: from the same floating-point channel."""
        return float(keep_probabilities([numeric_K(self.model, self.mech)])[0])


def _worst(factors: list[_Factor], w: int) -> list[_Factor]:
    """The w factors for which castell is least preferred: the largest ``n*`` of
    :func:`bound_rule`, searched over the w-subsets (numeric budgets), else the w
    largest domains (symbolic budgets: with one budget for all, ``n*`` grows with every
    domain size, so this is the worst subset)."""
    if all(f.numeric for f in factors):
        if math.comb(len(factors), w) <= SUBSET_SEARCH_LIMIT:
            subsets = itertools.combinations(factors, w)
            return list(max(subsets, key=lambda S: bound_rule([f.d for f in S], [f.keep() for f in S], 1).n_star))
        order = sorted(factors, key=lambda f: -f.d / f.keep())
    else:
        order = sorted(factors, key=lambda f: -f.d)
    return order[:w]


def _tidy(x: Any) -> Any:
    """Simplified where symbolic (the expression is shown); a number is left as it is
    (simplifying long products of exponentials is slow and shows nothing)."""
    x = sympy.sympify(x)
    return sympy.simplify(x) if x.free_symbols else x


def _unsearched(factors: list[_Factor], w: int) -> dict:
    """A note where :func:`_worst` did not search the w-subsets (too many)."""
    if all(f.numeric for f in factors) and math.comb(len(factors), w) > SUBSET_SEARCH_LIMIT:
        return {"attributes_note": f"the w factors with the largest d_k/p_k: {math.comb(len(factors), w):,} "
                                   "subsets were not searched for the largest n*"}
    return {}


def _n(q: Query) -> sympy.Expr:
    return q.method.options.get("n", N) if q.method is not None else N


def _factors(model: ModelGraph, q: Query) -> list[_Factor]:
    return [_Factor(model, f) for f in q.mechanism.factors]


def independent_bound(d: int, w: int) -> sympy.Expr:
    """Theorem 5 (Eq. 26) with one domain size: ``max(d^-w, 1/d - d^-w)``."""
    d = sympy.Integer(d)
    return sympy.Max(d ** -w, 1 / d - d ** -w)


def castell_bound(d: int, p: sympy.Expr, w: int, n: sympy.Expr) -> sympy.Expr:
    """Theorem 6 (Eq. 27) with one domain size: ``d^w / (p^w n) = (1 + (d - 1)/e^(eps/w))^w
    d^w / n`` for GRR with ``eps / w`` per attribute.  (The proof's last expression
    writes ``d^(eps/w)`` where ``e^(eps/w)`` is meant.)"""
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
        rule = bound_rule([f.d for f in worst], [f.p for f in worst], n)
        entry = {"attributes": [f.name for f in worst], **_unsearched(factors, w),
                 "independent": rule.independent_bound,
                 "castell": _tidy(rule.castell_bound),
                 "castell_rounding_exact": _tidy(sympy.Mul(*[f.inv_norm for f in worst]) / n)}
        sd = _cell_sd_uniform(worst[0], w, n) if all(f.grr for f in worst) and len({(f.d, f.eps) for f in worst}) == 1 \
            else None
        if sd is not None:
            entry["castell_sd_uniform"] = _tidy(sd)
        value[f"w={w}"] = entry
    t4 = theorem4(model, q)
    if t4:
        value["theorem4"] = t4
    return _result(Bounds, value, n, (
        "per w (the w attributes for which castell is least preferred, listed in attributes), with d_k the "
        "domain sizes, p_k the keep probabilities, D = prod d_k, d* = max d_k: independent = Theorem 5 (Eq. 26) "
        "from its proof, max(1/D, 1/d* - 1/D); castell = Theorem 6 (Eq. 27) from its proof, prod_k (d_k/p_k)/n "
        "(with one d and p: max(d^-w, 1/d - d^-w) and d^w/(p^w n), the paper's); castell_rounding_exact = "
        "||K^-1||_inf / n, the exact worst case of the paper's rounding model (|error of each report frequency| "
        "<= 1/n); castell_sd_uniform = standard deviation of each castell cell when the truth is uniform (the "
        "sampling error, of order n^-1/2, which Eq. 27 does not bound); theorem4: Cramer's V, RR-Independent's "
        "limiting MSE and its bound V^2 (min(d_A, d_B) - 1)/(d_A d_B) (= V^2 (d - 1)/d^2 < V^2/d for equal d)"))


def _eps_star(worst: list[_Factor], n: Any, B: Any) -> Any:
    """The total budget of the w attributes at which the two bounds are equal, each
    attribute keeping its share of the budget (``eps_k = s_k eps``, ``s_k = eps_k / sum
    eps_k``): castell is preferred for ``eps > eps*``.

    One domain size and one budget: Appendix C's closed form ``w log((d - 1) / ((B n)^(1/w)
    / d - 1))`` (``oo`` where no budget makes castell's bound the smaller).  Otherwise
    ``prod_k d_k (1 + (d_k - 1) e^(-s_k eps)) = n B`` -- the same equation -- is solved
    numerically (its left side falls with eps, to ``prod d_k``), which needs a number n.
    """
    w = len(worst)
    if len({(f.d, f.eps) for f in worst}) == 1:
        D = sympy.Integer(worst[0].d)
        den = (B * n) ** sympy.Rational(1, w) / D - 1
        if den.is_number and den <= 0:
            return sympy.oo
        return w * sympy.log((D - 1) / den)
    if not sympy.sympify(n).is_number or not all(f.numeric for f in worst):
        return None
    target = float(n) * float(B)
    d = np.array([f.d for f in worst], dtype=float)
    total = sum(float(f.eps) for f in worst)
    share = np.array([float(f.eps) / total for f in worst])

    def gap(eps: float) -> float:
        return float(np.sum(np.log(d * (1 + (d - 1) * np.exp(-share * eps))))) - math.log(target)

    if target <= float(np.prod(d)):
        return sympy.oo
    # the left side is decreasing in eps; a negative eps* (the paper's closed form gives
    # one too) means castell's bound is the smaller at any budget
    lo, hi = -1.0, 1.0
    while gap(lo) < 0:
        lo *= 2
    while gap(hi) > 0:
        hi *= 2
    return sympy.Float(scipy.optimize.brentq(gap, lo, hi, xtol=1e-12))


def thresholds_result(model: ModelGraph, q: Query) -> Result:
    """Appendix C, generalized to factors with domain sizes and budgets of their own
    (:func:`privspec.backends.rr.hybrid.bound_rule`): ``n*``, ``eps*`` and whether castell
    is preferred for w = 2..m (GRR factors), and the paper's ``w*``.

    For each w, the w attributes with the largest ``n*``.  ``castell_preferred`` is
    ``bound_rule``'s answer at the query's n, from the same floating-point channels as
    ``hybrid(switch = thresholds)``: for those w attributes (hence for every w-subset)
    and, at w = m, for the whole product, it is the hybrid's choice.  ``eps`` is the
    budget of the w attributes together (sequential composition); ``eps*`` the total
    budget at which the bounds are equal with each attribute keeping its share
    (:func:`_eps_star`).  RR-Ind-Joint (castell) is preferred for ``n > n*``, ``eps >
    eps*`` (Appendix C's closing "eps < eps*" is a typo: Table III and the derivation
    say eps > eps*) and ``w < w*``; ``w*`` is the paper's, with ``d`` the largest domain.
    """
    factors = _factors(model, q)
    if not all(f.grr for f in factors):
        raise BackendError(Diagnostic("B405", "thresholds() need GRR factors (an epsilon each)"))
    n = _n(q)
    value: dict = {}
    d_all = max(f.d for f in factors)
    for w in range(2, len(factors) + 1):
        worst = _worst(factors, w)
        dims = [f.d for f in worst]
        rule = bound_rule(dims, [f.p for f in worst], n)
        entry: dict = {"attributes": [f.name for f in worst], "domains": dims, "d": max(dims),
                       **_unsearched(factors, w),
                       "eps": _tidy(sympy.Add(*[f.eps for f in worst])),
                       "n_star": _tidy(rule.n_star),
                       "eps_star": _eps_star(worst, n, rule.independent_bound),
                       "castell_bound": _tidy(rule.castell_bound),
                       "independent_bound": rule.independent_bound}
        if entry["eps_star"] is None:
            del entry["eps_star"]
        if sympy.sympify(n).is_number and all(f.numeric for f in worst):
            # the decision from the floating-point channels hybrid uses: the same answer, always
            entry["castell_preferred"] = bound_rule(dims, [f.keep() for f in worst], float(n)).castell_preferred
        value[f"w={w}"] = entry
    D = sympy.Integer(d_all)
    value["w_star"] = (sympy.log(n) - sympy.log(D)) / sympy.log(D ** 2)
    return _result(Thresholds, value, n, (
        "Appendix C for factors with domain sizes d_k and keep probabilities p_k of their own (GRR: "
        "p_k = e^eps_k/(e^eps_k + d_k - 1)), for the w attributes with the largest n*: RR-Ind-Joint (castell) is "
        "preferred for n > n_star = prod_k (d_k/p_k) / max(1/D, 1/d* - 1/D) (D = prod d_k, d* = max d_k; with one "
        "d and eps/w each, the paper's (1 + (d-1)/e^(eps/w))^w d^w / max(d^-w, 1/d - d^-w)), i.e. where Theorem "
        "6's castell_bound is below Theorem 5's independent_bound, and for eps > eps_star (eps: the budget of the "
        "w attributes together, each keeping its share); castell_preferred is hybrid(switch = thresholds)'s "
        "choice at this n; w_star = (log n - log d)/log d^2 with d the largest domain (the paper's)"))


def _result(kind: type[Bounds], value: dict, n: Any, meaning: str) -> Result:
    """The result of a bounds query: ``value``, its symbolic form where it has one, the
    number of respondents ``n`` (text when symbolic) and what each entry means."""
    return kind(value, **_symbolic_extras(value), n=str(n) if n.free_symbols else n, meaning=meaning)


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
