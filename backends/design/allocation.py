"""A survey's budget: a total epsilon shared among the questions of one survey.

A question of ``allocate(...)`` is a declared mechanism whose randomizers each have an
epsilon, a number or a parameter without a value (``grr(race, epsilon = e_race)`` with
``parameter e_race > 0``); a product's factors are randomizers of their own, each on its
own variables (:func:`privspec.model.plans.epsilon_terms`). The accounting is that of
privacy on a subset of variables (``privacy-on-a-subset-of-variables.md``): the survey is
private on each variable with the sum of the epsilons of the randomizers that observe it
(Propositions 3.3-3.5: one that does not observe a variable is 0-private on it), and on the
whole record with the sum of all of them (Proposition 3.4 with U = V, which is
epsilon-differential privacy by Proposition 3.1). ``total`` bounds the whole record's.

The allocation minimizes the weighted loss ``L(theta) = sum_q w_q U_q(theta)`` (``U_q``
the question's criterion at n, lower is better: ``max_se`` by default) over the free
parameters ``theta_j`` within their ranges (a missing upper bound: the budget itself),
subject to ``sum_j c_j theta_j <= total - fixed`` (``c_j``: how many randomizers use
``theta_j``; ``fixed``: the numbers' sum). Each ``U_q`` falls as its epsilons grow, and is
convex in them for k-RR and the frequency oracles, so the problem is convex and the
budget is spent to the end; it is solved by sequential least squares (SciPy's SLSQP) from
the equal split, with central-difference gradients, and the answer is checked against the
Karush-Kuhn-Tucker conditions: ``dL/dtheta_j = -lambda c_j`` where ``theta_j`` is inside its
range (``>=`` at its lower end, ``<=`` at its upper end), ``lambda`` the loss one more unit of
total epsilon saves. The equal split (every free epsilon the same value, as far as the
ranges allow) is reported beside it.

Examples
--------
>>> import privspec
>>> spec = privspec.load('''
... variable a: categorical {x, y, z}
... variable b: categorical {u, v}
... population a ~ categorical(0.2, 0.3, 0.5)
... population b ~ categorical(0.4, 0.6)
... parameter e_a > 0
... parameter e_b > 0
... mechanism q_a = grr(a, epsilon = e_a)
... mechanism q_b = grr(b, epsilon = e_b)
... query plan = allocate(total = 4, n = 1000, weights = {q_a: 1, q_b: 1})''')
>>> r = spec.analyze()["plan"]
>>> round(sum(r.value.values), 6), r.weighted_loss < r.equal_loss
(4.0, True)
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import sympy
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import Method, ModelGraph, Parameter, Plan, Query
from privspec.model.plans import epsilon_terms, parameter_floor, question_estimand
from privspec.model.query_kinds import Answers, default_estimator, family_of
from privspec.results.kinds import Allocation
from privspec.results.result import Result
from privspec.results.values import Matrix, Vector
from privspec.backends import register
from privspec.backends.design.criteria import REGISTRY, Candidate, Evaluation, NotApplicable
from privspec.backends.design.inverse import bind

#: the relative step of the central differences (gradients and the KKT check)
STEP = 1e-6


@dataclass(frozen=True)
class Question:
    """One question: its mechanism as a comparison candidate, its weight, and its randomizers'
    epsilons (``terms``: the variables each observes, and a number or a parameter's symbol)."""

    candidate: Candidate
    weight: float
    terms: tuple[tuple[tuple[str, ...], sympy.Expr], ...]


class Problem:
    """The allocation of one ``allocate`` query: its questions, free parameters, their ranges,
    and the loss as a function of the parameters' values."""

    def __init__(self, model: ModelGraph, query: Query):
        self.model = model
        self.criterion = query.method.name
        options = query.method.options
        self.n, self.plan = int(query.plan.n), query.plan
        self.total = float(options["total"])
        weights = dict(options["weights"])
        self.questions = [self._question(name, float(weights[name])) for name in query.scope]
        symbols = list(dict.fromkeys(eps for q in self.questions for _, eps in q.terms if eps.free_symbols))
        self.parameters: list[Parameter] = [next(p for p in model.parameters.values() if p.symbol == s)
                                            for s in symbols]
        self.counts = np.array([sum(eps == s for q in self.questions for _, eps in q.terms) for s in symbols],
                               dtype=float)
        self.fixed = sum(float(eps) for q in self.questions for _, eps in q.terms if not eps.free_symbols)
        self.budget = self.total - self.fixed
        self.bounds = [self._range(p, self.budget / c) for p, c in zip(self.parameters, self.counts)]
        self._memo: dict[tuple, float] = {}

    def _question(self, name: str, weight: float) -> Question:
        mech = self.model.mechanisms[name]
        est = question_estimand(mech, dict(self.model.variables))
        method = Method(str(default_estimator(est.kind, family_of(mech))))
        return Question(Candidate(name, mech, method, est), weight, epsilon_terms(mech))  # type: ignore[arg-type]

    @staticmethod
    def _range(p: Parameter, cap: float) -> tuple[float, float]:
        """The parameter's range within the budget; an open end moves in by 10^-6 of it."""
        lo = parameter_floor(p.constraints)
        his = [float(b) for op, b in p.constraints if op in ("<", "<=")]
        hi = min(his + [cap])
        width = (hi - lo) * 1e-6
        # an epsilon of 0 tells nothing (an infinite variance): 0 is an open end whatever the constraint says
        lo_open = any(op == ">" and float(b) == lo for op, b in p.constraints) or lo == 0
        hi_open = any(op == "<" and float(b) == hi for op, b in p.constraints)
        return lo + (width if lo_open else 0.0), hi - (width if hi_open else 0.0)

    # -- the loss ---------------------------------------------------------------------------------
    def utility(self, q: Question, theta: np.ndarray) -> float:
        """The question's criterion at n with the parameters at ``theta`` (memoized)."""
        # a double as it is (53 bits): sympy's exact closed forms of the avar at a wider Float are
        # some 25 times slower, for digits the double does not have
        values = {p.symbol: sympy.Float(float(x)) for p, x in zip(self.parameters, theta)}
        mine = tuple(float(values[s]) for _, s in q.terms if s in values)
        key = (q.candidate.name, mine)
        if key not in self._memo:
            cand = dataclasses.replace(q.candidate, mechanism=bind(q.candidate.mechanism, values))
            try:
                self._memo[key] = REGISTRY[self.criterion].analytic(Evaluation(self.model, cand, self.plan), self.n)
            except NotApplicable as e:
                d = e.diagnostic if e.diagnostic is not None else Diagnostic(
                    "B150", f"{self.criterion} of {q.candidate.name} at {_shown(self.parameters, theta)}: {e}")
                raise BackendError(d) from None
        return self._memo[key]

    def utilities(self, theta: np.ndarray) -> np.ndarray:
        return np.array([self.utility(q, theta) for q in self.questions])

    def loss(self, theta: np.ndarray) -> float:
        """``sum_q w_q U_q(theta)``."""
        return float(sum(q.weight * u for q, u in zip(self.questions, self.utilities(theta))))

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """Central differences, one-sided at the ends of a range."""
        g = np.zeros_like(theta)
        for j, (lo, hi) in enumerate(self.bounds):
            h = STEP * max(1.0, abs(theta[j]))
            up, down = theta.copy(), theta.copy()
            up[j], down[j] = min(theta[j] + h, hi), max(theta[j] - h, lo)
            g[j] = (self.loss(up) - self.loss(down)) / (up[j] - down[j])
        return g

    # -- the splits -------------------------------------------------------------------------------
    def equal_split(self) -> np.ndarray:
        """Every free epsilon the same value ``t``, each clipped into its range, with
        ``sum_j c_j theta_j`` the budget (or every one at its upper end where they cannot reach it)."""
        lo, hi = np.array(self.bounds).T

        def spent(t: float) -> float:
            return float(self.counts @ np.clip(t, lo, hi))

        if spent(float(hi.max())) <= self.budget:
            return hi.copy()
        t = float(scipy.optimize.brentq(lambda t: spent(t) - self.budget, float(lo.min()), float(hi.max()), xtol=1e-14))
        return np.clip(t, lo, hi)

    def solve(self) -> tuple[np.ndarray, str]:
        """The allocation minimizing the weighted loss, and how it was found."""
        x0 = self.equal_split()
        if len(self.parameters) == 1:
            return x0, "one free parameter: the whole budget left (or its range's upper end)"
        scale = self.loss(x0) or 1.0
        res = scipy.optimize.minimize(lambda x: self.loss(x) / scale, x0, jac=lambda x: self.gradient(x) / scale,
                                method="SLSQP", bounds=self.bounds,
                                constraints=[{"type": "ineq", "fun": lambda x: (self.budget - self.counts @ x),
                                              "jac": lambda x: -self.counts}],
                                options={"ftol": 1e-12, "maxiter": 200})
        x = np.clip(np.asarray(res.x, dtype=float), *np.array(self.bounds).T)
        how = (f"SLSQP from the equal split ({res.nit} iterations, central-difference gradients"
               f"{'' if res.success else '; it stopped: ' + str(res.message)})")
        if self.loss(x) > self.loss(x0):
            return x0, how + "; the equal split was better and is kept"
        return x, how

    def kkt(self, theta: np.ndarray) -> tuple[float, float]:
        """The multiplier ``lambda`` and the largest violation of the KKT conditions relative to
        ``lambda c_j`` (0 at an exact optimum)."""
        g = self.gradient(theta)
        lo, hi = np.array(self.bounds).T
        tol = 1e-6 * max(self.budget, 1.0)
        inside = (theta > lo + tol) & (theta < hi - tol)
        prices = -g / self.counts
        lam = float(np.median(prices[inside])) if inside.any() else float(max(0.0, np.max(prices)))
        if self.counts @ theta < self.budget - tol:
            lam = 0.0                                   # the budget is not spent: no price on it
        r = g + lam * self.counts
        violation = np.where(inside, np.abs(r), np.where(theta <= lo + tol, np.maximum(0.0, -r),
                                                         np.maximum(0.0, r)))
        return lam, float(np.max(violation / np.maximum(abs(lam) * self.counts, 1e-300)))

    # -- what a split spends ----------------------------------------------------------------------
    def epsilons(self, theta: np.ndarray) -> list[float]:
        """Each question's epsilon: the sum of its randomizers'."""
        values = dict(zip((p.symbol for p in self.parameters), theta))
        return [sum(float(values.get(eps, eps)) for _, eps in q.terms) for q in self.questions]

    def per_variable(self, theta: np.ndarray) -> Matrix:
        """The epsilon each question spends on each variable, and the survey's ('all')."""
        values = dict(zip((p.symbol for p in self.parameters), theta))
        names = [v for v in self.model.variables if any(v in vs for q in self.questions for vs, _ in q.terms)]
        data = np.zeros((len(self.questions) + 1, len(names)))
        for i, q in enumerate(self.questions):
            for vs, eps in q.terms:
                for v in vs:
                    data[i, names.index(v)] += float(values.get(eps, eps))
        data[-1] = data[:-1].sum(axis=0)
        return Matrix(tuple(q.candidate.name for q in self.questions) + ("all",), tuple(names), data.tolist())


def _shown(parameters: Sequence[Parameter], theta: np.ndarray) -> str:
    return ", ".join(f"{p.name} = {x:.6g}" for p, x in zip(parameters, theta))


def allocate(model: ModelGraph, query: Query) -> Result:
    """The answer to an ``allocate`` query: the best split, beside the equal split."""
    prob = Problem(model, query)
    theta, how = prob.solve()
    equal = prob.equal_split()
    lam, residual = prob.kkt(theta)
    names = tuple(q.candidate.name for q in prob.questions)
    fixed = f"; fixed epsilons spend {prob.fixed:g} of it" if prob.fixed else ""
    return Allocation(
        Vector(names, tuple(prob.epsilons(theta))), criterion=prob.criterion, n=prob.n, total=prob.total,
        parameters=Vector(tuple(p.name for p in prob.parameters), tuple(float(x) for x in theta)),
        per_variable=prob.per_variable(theta),
        weights=Vector(names, tuple(q.weight for q in prob.questions)),
        utility=Vector(names, tuple(prob.utilities(theta).tolist())), weighted_loss=prob.loss(theta),
        equal_epsilon=Vector(names, tuple(prob.epsilons(equal))),
        equal_utility=Vector(names, tuple(prob.utilities(equal).tolist())), equal_loss=prob.loss(equal),
        multiplier=lam, kkt_residual=residual, method=how,
        note=("epsilon on the whole record: the sum of every randomizer's (a product's factors each count on "
              f"their own variables){fixed}; per variable: the sum of those that observe it (privacy on a subset "
              "of variables, Propositions 3.3-3.5); minimized: the sum of the weights times each question's "
              f"{prob.criterion} at n = {prob.n:,} (the distribution of its variable, or the joint of its variables, "
              "by its family's default estimator)"))


@register
class AllocationBackend:
    """``allocate(...)``: a survey's total epsilon shared among its questions."""

    REGISTER_NAME = "allocation"
    # the questions are mechanisms the query names; the query itself has none
    ANSWERS = (Answers(("allocate",), ("release",)),)

    def supports(self, query: Query, verb: str) -> bool:
        return any(row.matches(query, verb) for row in self.ANSWERS)

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        try:
            return allocate(model, query)
        except BackendError as e:
            raise BackendError([dataclasses.replace(d, span=d.span or query.span) for d in e.diagnostics]) from None
