"""The randomized-response back end: what the castell paper adds to the channel core.

Its declaration (``ANSWERS``) is narrower than the general finite back end's, so the
registry prefers it where both match; it answers only what
it adds or answers better for randomized response (grr, rr, products of them) and
leaves everything else (moments, Fisher information, leakage, marginal estimates,
privatize) to :class:`privspec.backends.finite.backend.FiniteBackend`:

* ``estimate joint(...)`` from a product of randomized responses by ``castell`` (=
  ``mom``), ``independent``, ``truncated``, ``clusters``, ``hybrid`` or ``mle``, and from
  RR on a combined domain by ``joint`` (RR-Joint), ``mom`` or ``mle``, for any subset of
  the attributes in any order, with the ``project`` and ``se`` (``population`` |
  ``conditional``) options (``run`` and ``simulate``; simulations report MAE and AVD);
  results say which standard error they carry (``se_kind``) and give 95% intervals
  (``ci95``, ``ci_method``: score intervals for the castell-type estimates);
* ``estimate distribution(X) from M by mom(...)`` with an option (``project``, ``se``);
* ``avar`` of GRR marginals in closed form in d and eps, and of joints (the Kronecker
  covariance);
* ``epsilon`` in closed form (GRR: eps; products: sequential composition);
* ``bounds(M, n = N)`` (Theorems 4-6) and ``thresholds(M, n = N)`` (Appendix C).
"""
from __future__ import annotations

import functools
import itertools
from typing import Any, Sequence

import numpy as np
import sympy

from privspec.model import costs
from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import ModelGraph, Query, Variable
from privspec.model.query_kinds import Answers
from privspec.results.kinds import Avar, Epsilon
from privspec.results.result import Result
from privspec.results.values import Matrix
from privspec.backends import register
from privspec.backends.core.grr_channel import grr_channel
from privspec.backends.core.compile import channel_of
from privspec.backends.finite.weighted import weighted_estimate
from privspec.backends.core.kron import kron_apply, kron_cov
from privspec.backends.core.populations import parameter_values, population_vector, symbolic_vector
from privspec.backends.rr.bounds import bounds_result, thresholds_result
from privspec.backends.rr.problem import JointProblem
from privspec.backends.rr.simulate import simulate_joint
from privspec.backends.rr.joint_results import joint_result
from privspec.backends.rr.weighted import is_rr_weighted, rr_weighted_supports, weighted_joint

#: exact (sympy) joint covariances up to this many cells; floating point beyond
EXACT_CELLS = 64


# ---- what the back end takes ------------------------------------------------------------------
#: the mechanism families of randomized response
_RR = ("grr", "rr", "rr_product")


@register
class RRBackend:
    """Randomized response under local DP: joints of products (castell paper), closed forms."""

    REGISTER_NAME = "rr"
    #: what it answers (:mod:`privspec.model.query_kinds`); the rest of randomized response (moments,
    #: Fisher information, leakage, marginal estimates, privatize) is the finite back end's
    ANSWERS = (
        Answers(("bounds", "thresholds", "epsilon"), _RR),
        # GRR marginals in closed form (the estimand's variable the mechanism's own: supports)
        Answers(("avar",), ("grr",), estimands=("distribution",), methods=("mom",)),
        Answers(("avar",), _RR, estimands=("joint",), methods=("castell", "mom", "joint", "independent")),
        Answers(("estimate",), _RR, ("run", "simulate"), estimands=("joint",)),
        # a projected estimate is the castell paper's; everything else the channel core's
        Answers(("estimate",), _RR, ("run", "simulate"), estimands=("distribution",), methods=("mom",),
                options=("project",)),
    )

    def supports(self, query: Query, verb: str) -> bool:
        """Its ``ANSWERS``, and for the closed-form GRR avar, a marginal of the mechanism's own variable."""
        if not any(row.matches(query, verb) for row in self.ANSWERS):
            return False
        if query.kind == "avar" and query.estimand.kind == "distribution":
            return query.estimand.variables[0] == query.mechanism.variable
        return True

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        kind = query.kind
        if kind in ("bounds", "thresholds"):
            return (bounds_result if kind == "bounds" else thresholds_result)(model, query)
        if kind == "epsilon":
            return epsilon_result(model, query)
        if kind == "avar":
            return avar_result(model, query, simplified=options.get("simplified", True))
        if verb == "simulate":
            return simulate_joint(model, query, n=options["n"], reps=options["reps"], seed=options.get("seed"))
        data = options.get("data")
        if data is None:
            raise BackendError(Diagnostic("B002", f"query '{query.name}' needs data"))
        mech_name = query.mechanism.name or query.name
        if data.design is not None:
            if is_rr_weighted(query):
                return weighted_joint(model, query, data.engine_for(mech_name), data.design)
            return weighted_estimate(query, data.engine_for(mech_name), data.design)
        return estimate_result(model, query, data.engine_for(mech_name), data.path_for(mech_name))

    def weighted(self, query: Query) -> str:
        """What of ``query`` has no version with survey weights ("" for a joint or marginal
        by the back end's own estimators, :mod:`privspec.backends.rr.weighted`, or by mom
        or mle through the channel, :mod:`privspec.backends.finite.weighted`)."""
        return rr_weighted_supports(query)


def estimate_result(model: ModelGraph, q: Query, data, path) -> Result:
    """A joint estimate from reports: ``data`` an engine or a DataFrame (counted as a tally)."""
    problem = JointProblem(model, q)
    counts = problem.counts_from(data, path)
    if counts.sum() <= 0:
        raise DataError(Diagnostic("D001", f"{path} has no reports"))
    return joint_result(problem, problem.fit(counts))


# ---- epsilon ---------------------------------------------------------------------------------------
def epsilon_result(model: ModelGraph, q: Query) -> Result:
    mech = q.mechanism
    ch = channel_of(mech)
    # GRR: |eps| (p/q = e^eps, Theorem 3's proof), a matrix: the channel's max log ratio
    parts = [f.epsilon() for f in (ch.factors or (ch,))]
    eps = sympy.simplify(sympy.Add(*parts))
    subs = parameter_values(model)
    if subs:
        eps = eps.subs(subs)
    if ch.factors:
        reason = ("sequential composition (Theorem 3): the factors' epsilons add up, "
                  + " + ".join(str(p) for p in parts))
    else:
        reason = ch.epsilon_reason()
        if mech.variable.is_combined:
            reason += f"; one RR on the combined domain of {mech.variable.p} categories (RR-Joint)"
    return Epsilon(eps, reason=reason)


# ---- asymptotic covariances ---------------------------------------------------------------------
def grr_avar(d: int, eps: sympy.Expr, w: sympy.Matrix) -> sympy.Matrix:
    """Closed form of Warner's covariance for GRR (:meth:`GRRChannel.covariance_closed_form`).

    Examples
    --------
    >>> grr_avar(2, sympy.log(3), sympy.Matrix([sympy.Rational(2, 5), sympy.Rational(3, 5)]))
    Matrix([
    [ 99/100, -99/100],
    [-99/100,  99/100]])
    """
    return grr_channel(tuple(f"x{i}" for i in range(d)), eps).covariance_closed_form(w)


def _truth(model: ModelGraph, variables: Sequence[Variable]) -> tuple[sympy.Matrix, bool]:
    w = population_vector(model, list(variables))
    if w is not None:
        return w, True
    labels = [".".join(t) for t in itertools.product(*(v.labels for v in variables))]
    return symbolic_vector(labels), False


def avar_result(model: ModelGraph, q: Query, simplified: bool = True) -> Result:
    """``avar``: GRR's closed form (:meth:`GRRChannel.covariance_closed_form`) for a marginal,
    the Kronecker covariance for a joint.  ``simplified=False`` (a caller that reads only the
    numbers) leaves the marginal's exact entries unsimplified and its traces out."""
    mech = q.mechanism
    est = q.estimand
    subs = parameter_values(model)
    if est.kind == "distribution":
        var = mech.variable
        w, declared = _truth(model, [var])
        ch = channel_of(mech)
        if subs and all(isinstance(v, sympy.Float) for v in subs.values()):
            ch = ch.at(subs)  # numbers in floating point (a numeric search): the float path
        V = ch.covariance_closed_form(w, simplified)  # GRR (its ANSWERS row): Warner's closed form
        if subs:
            V = V.subs(subs)
        e = sympy.Symbol("e^eps")
        floating = V.has(sympy.Float)
        extras = {"method": "mom", "evaluation": ("floating point" if floating else "exact") + ", at the declared "
                  "population" if declared else "exact, symbolic in w (no population declared)",
                  "meaning": Avar.meaning_of("population"),
                  "closed_form": "(diag(lambda) - lambda lambda^T) (e^eps + d - 1)^2 / (e^eps - 1)^2 with "
                                 "lambda = ((e^eps - 1) w + 1) / (e^eps + d - 1)"}
        if simplified:  # the traces in closed form, for a reader
            extras["trace"] = shown(sympy.factor(sympy.simplify(V.trace())) if V.free_symbols
                                    or not V.has(sympy.Float) else V.trace())
            extras["trace_uniform"] = shown(sympy.factor((1 - sympy.Rational(1, var.p)) * (e + var.p - 1) ** 2
                                                         / (e - 1) ** 2).subs(e, sympy.exp(sympy.sympify(mech.epsilon)
                                                                                           .subs(subs))))
        extras["fixed_population"] = ("conditional on the respondents' true values (Wang et al. 2017) the "
                                      "covariance is this minus diag(w) - w w^T")
        return Avar(Matrix(var.labels, var.labels, V), **extras)
    return _joint_avar(model, q)


def _joint_avar(model: ModelGraph, q: Query) -> Result:
    """The Kronecker (castell) covariance ``K^-1 (diag(lambda) - lambda lambda^T) K^-T`` of a
    joint, exact for small tables (through ``K^-1 = (x) K_k^-1``), floating beyond; for
    RR-Joint the combined domain's covariance summed to the estimand."""
    problem = JointProblem(model, q)
    subs = parameter_values(model)
    labels = tuple(".".join(t) for t in itertools.product(*problem.labels))
    mech = q.mechanism
    if q.method.name == "independent":
        return _independent_avar(model, problem, labels)
    if problem.product:
        w, declared = _truth(model, problem.variables)
        inv = [channel_of(f).K.inv() for f in problem.factors]
        Kf = [channel_of(f).K for f in problem.factors]
        # exact algebra with transcendental keep probabilities (epsilon = 1: e/(e + 1)) grows
        # fast with the cells (20 cells: 46 s); rational ones (epsilon = log 3) stay cheap; high
        # powers of e or roots of it (epsilon = 700, 1e-300) take minutes on 4 cells
        rational = all(x.is_rational for k in Kf for x in k.subs(subs))
        simple = all(costs.channel_class(f) in ("rational", "irrational", "symbolic") for f in problem.factors)
        exact = (problem.cells <= 8 and (simple or not declared)) or (problem.cells <= EXACT_CELLS and declared
                                                                      and rational)
        if exact:
            A = sympy.kronecker_product(*inv)
            lam = sympy.kronecker_product(*Kf) * w
            V = A * sympy.diag(*lam) * A.T - w * w.T
            V = V.subs(subs).applyfunc(sympy.cancel)
            evaluation = "exact, at the declared population" if declared else "exact, symbolic in w"
        else:
            if not declared:
                raise BackendError(Diagnostic("B003", f"the covariance of a {problem.cells}-cell joint symbolic "
                                              "in w is too large", hint="declare a population"))
            K = problem.K()
            wn = np.array([float(x) for x in w.subs(subs)])

            lamn = kron_apply(K, wn).reshape(-1)
            V = kron_cov([np.linalg.inv(k) for k in K], lamn)
            evaluation = "floating point at the declared population"
        formula = "K^-1 (diag(lambda) - lambda lambda^T) K^-T with K^-1 = K_1^-1 (x) ... (x) K_w^-1 (Kronecker)"
    else:
        whole = mech.variable
        w_full, declared = _truth(model, [model.variables[c] for c in whole.components()]) \
            if whole.is_combined else _truth(model, [whole])
        if not declared:
            raise BackendError(Diagnostic("B001", "this needs a population for the combined domain",
                                          hint="declare populations for its parts"))
        V_full = channel_of(mech).covariance_closed_form(w_full).subs(subs)
        M = problem.part_sum_matrix()
        V = sympy.Matrix(M) * V_full * sympy.Matrix(M).T
        V = V.applyfunc(sympy.cancel)
        evaluation = "exact, at the declared population"
        formula = "RR-Joint: (diag(lambda) - lambda lambda^T)/(p - q)^2 on the combined domain, summed to the estimand"
    extras: dict = {"method": q.method.name, "evaluation": evaluation, "formula": formula,
                    "meaning": "asymptotic covariance of sqrt(n) (Pi_hat - Pi), cells row-major"}
    if isinstance(V, np.ndarray):
        extras["trace"] = float(np.trace(V))
        extras["max_variance"] = float(np.max(np.diag(V)))
    else:
        if V.free_symbols:
            V = V.applyfunc(sympy.factor)
        extras["trace"] = shown(sympy.simplify(V.trace()))
    return Avar(Matrix(labels, labels, V), **extras)


def _independent_avar(model: ModelGraph, problem: JointProblem, labels: tuple[str, ...]) -> Result:
    """RR-Independent (Algorithm 2) by the delta method around its limit, the product of the
    true marginals ``Pi_ind = (x)_k m_k``: one respondent's reports ``y`` contribute
    ``u(y) = sum_k c_k A_k[., y_k]`` (``A_k = K_k^-1``, ``c_k = prod_{j != k} m_j``), so
    ``n Cov = U diag(lambda) U^T - (w Pi_ind)(w Pi_ind)^T`` with w factors; the per-cell
    variances are those of :func:`~privspec.backends.rr.independent.independent`. The limit is
    not the joint where the attributes are dependent: ``bias = Pi_ind - Pi`` goes in the
    extras (the comparison's ``mse`` adds it)."""
    w, declared = _truth(model, problem.variables)
    if not declared:
        raise BackendError(Diagnostic("B001", "the RR-Independent covariance needs a population for the joint",
                                      hint="declare populations for the attributes"))
    if problem.cells > 4096:
        raise BackendError(Diagnostic("B003", f"the RR-Independent covariance of a {problem.cells}-cell joint is "
                                              "computed up to 4,096 cells", hint="simulate instead"))
    subs = parameter_values(model)
    K = problem.K()
    A = [np.linalg.inv(k) for k in K]
    truth = np.array([float(x) for x in w.subs(subs)]).reshape(problem.shape)
    d = len(problem.shape)
    margins = [truth.sum(axis=tuple(j for j in range(d) if j != k)) for k in range(d)]
    limit = functools.reduce(np.multiply.outer, margins)
    lam = kron_apply(K, truth.reshape(-1)).reshape(-1)
    cells = list(itertools.product(*(range(s) for s in problem.shape)))
    reports = list(itertools.product(*(range(k.shape[0]) for k in K)))
    U = np.zeros((len(cells), len(reports)))
    for k in range(d):
        c = np.array([np.prod([margins[j][cell[j]] for j in range(d) if j != k]) for cell in cells])
        rows = np.array([cell[k] for cell in cells])
        cols = np.array([y[k] for y in reports])
        U += c[:, None] * A[k][rows][:, cols]
    mean = d * limit.reshape(-1)
    V = (U * lam[None, :]) @ U.T - np.outer(mean, mean)
    bias = (limit - truth).reshape(-1)
    extras: dict = {"method": "independent", "evaluation": "floating point at the declared population",
                    "formula": "delta method around the product of the true marginals: U diag(lambda) U^T - "
                               "(w Pi_ind)(w Pi_ind)^T",
                    "meaning": "asymptotic covariance of sqrt(n) (Pi_hat - Pi_ind), cells row-major; Pi_ind, "
                               "the product of the marginals, is the estimator's limit",
                    "trace": float(np.trace(V)), "max_variance": float(np.max(np.diag(V))),
                    "limit": [float(x) for x in limit.reshape(-1)], "bias": [float(x) for x in bias],
                    "bias_squared": float(bias @ bias)}
    return Avar(Matrix(labels, labels, V), **extras)


def shown(x: Any) -> Any:
    """An extra as JSON shows it: a number, or the expression's text when symbolic."""
    return str(x) if isinstance(x, sympy.Basic) and x.free_symbols else x


__all__ = ["RRBackend", "grr_avar", "epsilon_result", "joint_result"]
