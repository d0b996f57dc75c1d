"""The randomized-response back end: what the castell paper adds to the channel core.

Registered before the general finite back end (``PRIORITY = 10``); it answers only what
it adds or answers better for randomized response (grr, rr, products of them) and
leaves everything else (moments, Fisher information, leakage, marginal estimates,
privatize) to :class:`privspec.backends.finite.FiniteBackend`:

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

import dataclasses
import itertools
import math
from typing import Any, Sequence

import numpy as np
import sympy

from ..errors import BackendError, DataError, Diagnostic
from ..model import ModelGraph, ProductMechanism, Query, RandomizedResponse, Variable
from ..results import Matrix, Result, Table, Vector
from . import register
from .channel import matrix_channel, product_channel
from .compile import channel_of
from .estimators import em
from .finite_estimates import require_answer
from .finite_data import _factor_codes, count_observations
from .populations import population_vector, symbolic_vector
from .rr_joint import SE_KINDS, JointFit, estimate_joint, project, rr_joint, with_projection

#: beyond this many cells the MLE of a joint (dense EM on the Kronecker channel) is refused
MLE_CELL_LIMIT = 2048
#: exact (sympy) joint covariances up to this many cells; floating point beyond
EXACT_CELLS = 64
Z95 = 1.959963984540054


# ---- what the back end takes ------------------------------------------------------------------
def rr_based(mech: Any) -> bool:
    """Randomized response, or a product of randomized responses."""
    if isinstance(mech, ProductMechanism):
        return all(isinstance(f, RandomizedResponse) for f in mech.factors)
    return isinstance(mech, RandomizedResponse)


def _subs(model: ModelGraph) -> dict:
    return {p.symbol: p.value for p in model.parameters.values() if p.value is not None}


_K_CACHE: dict[tuple, tuple[Any, np.ndarray]] = {}


def numeric_K(model: ModelGraph, mech: RandomizedResponse) -> np.ndarray:
    """The channel ``K = P^T`` of one RR mechanism in floating point (parameter values
    substituted; cached per mechanism); a clear error when it is still symbolic."""
    subs = _subs(model)
    key = (id(mech), tuple(sorted((str(k), str(v)) for k, v in subs.items())))
    hit = _K_CACHE.get(key)
    if hit is not None and hit[0] is mech:
        return hit[1]
    K = channel_of(mech).K.subs(subs)
    if K.free_symbols:
        names = ", ".join(sorted(map(str, K.free_symbols)))
        raise BackendError(Diagnostic("B401", f"mechanism {mech.name or mech.variable.name} depends on {names}: "
                                      "estimation and simulation need numbers",
                                      hint=f"give the parameter a value: parameter {names} > 0 = 1"))
    out = np.array(K.evalf(17).tolist(), dtype=float)
    _K_CACHE[key] = (mech, out)
    return out


def factor_index(mech: ProductMechanism, variable: Variable) -> int:
    """The factor of a product that privatizes ``variable``."""
    for k, f in enumerate(mech.factors):
        if f.variable.components() == variable.components() and f.variable.labels == variable.labels:
            return k
    raise BackendError(Diagnostic("B402", f"no factor of {mech.name} privatizes {variable.name} alone: joint "
                                  "estimators of a product need each variable of joint() to be one factor",
                                  hint="list the factors' own variables in joint(...)"))


def _grr_keep(model: ModelGraph, mech: RandomizedResponse) -> tuple[float, float] | None:
    if mech.kind != "grr":
        return None
    eps = sympy.sympify(mech.epsilon).subs(_subs(model))
    if eps.free_symbols:
        numeric_K(model, mech)  # raises the clear error
    e, d = math.exp(float(eps)), mech.variable.p
    return e / (e + d - 1), 1 / (e + d - 1)


@register
class RRBackend:
    """Randomized response under local DP: joints of products (castell paper), closed forms."""

    REGISTER_NAME = "rr"
    PRIORITY = 10

    def supports(self, query: Query, verb: str) -> bool:
        mech = query.mechanism
        if mech is None or not rr_based(mech):
            return False
        kind = query.kind
        if kind in ("bounds", "thresholds", "epsilon"):
            return True
        est, method = query.estimand, query.method
        if kind == "avar" and est is not None:
            if est.kind == "distribution":
                return isinstance(mech, RandomizedResponse) and mech.kind == "grr" and method.name == "mom" \
                    and est.variables[0] == mech.variable
            return est.kind == "joint" and method.name in ("castell", "mom", "joint")
        if kind == "estimate" and verb in ("run", "simulate") and est is not None:
            if est.kind == "joint":
                return True
            # a projected estimate is the castell paper's; everything else the channel core's
            return est.kind == "distribution" and "project" in method.options and method.name == "mom"
        return False

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        kind = query.kind
        if kind in ("bounds", "thresholds"):
            from .rr_bounds import bounds_result, thresholds_result

            return (bounds_result if kind == "bounds" else thresholds_result)(model, query)
        if kind == "epsilon":
            return epsilon_result(model, query)
        if kind == "avar":
            return avar_result(model, query)
        if verb == "simulate":
            from .rr_simulate import simulate_joint

            return simulate_joint(model, query, n=options["n"], reps=options["reps"], seed=options.get("seed"))
        data = options.get("data")
        if data is None:
            raise BackendError(Diagnostic("B002", f"query '{query.name}' needs data"))
        mech_name = query.mechanism.name or query.name
        frame = data.frame_for(mech_name)
        return estimate_result(model, query, frame, data.path_for(mech_name))


# ---- estimation on data --------------------------------------------------------------------------
class JointProblem:
    """A joint (or marginal) estimand of an RR-based mechanism: which attributes, their
    channels, and how report counts are read."""

    def __init__(self, model: ModelGraph, q: Query):
        self.model, self.q = model, q
        mech = q.mechanism
        self.variables = tuple(q.estimand.variables)
        self.names = tuple(v.name for v in self.variables)
        self.labels = tuple(v.labels for v in self.variables)
        self.shape = tuple(len(lab) for lab in self.labels)
        self.product = isinstance(mech, ProductMechanism)
        if self.product:
            self.index = [factor_index(mech, v) for v in self.variables]
            self.factors = [mech.factors[k] for k in self.index]
        else:
            self.factors = [mech]
            whole = mech.variable
            comps = whole.components()
            if len(self.variables) == 1 and self.variables[0].components() == comps:
                self.parts = [0]
                self.part_sizes = [whole.p]
            else:
                self.part_sizes = [len(model.variables[c].labels) for c in comps]
                self.parts = []
                for v in self.variables:
                    if v.name not in comps:
                        raise BackendError(Diagnostic("B402", f"{v.name} is not one of the parts of "
                                                      f"{whole.name} ({', '.join(comps)})"))
                    self.parts.append(comps.index(v.name))

    @property
    def cells(self) -> int:
        return int(math.prod(self.shape))

    def K(self) -> list[np.ndarray]:
        return [numeric_K(self.model, f) for f in self.factors]

    def counts_from(self, frame, path) -> np.ndarray:
        """The report counts: the w-way table (products) or the vector over the combined domain."""
        mech = self.q.mechanism
        if not self.product:
            return count_observations(mech, frame, path)
        codes = [_codes(f, frame, path) for f in self.factors]
        joint = np.ravel_multi_index(tuple(codes), self.shape) if len(codes) > 1 else codes[0]
        return np.bincount(joint, minlength=self.cells).astype(float).reshape(self.shape)

    def fit(self, counts: np.ndarray, projection: str | None = None) -> JointFit:
        """The query's estimator on report counts (``projection`` overrides the option)."""
        method = self.q.method.name
        options = dict(self.q.method.options)
        if projection is not None:
            options["project"] = projection
        se = str(options.get("se", "population"))
        if se not in SE_KINDS:
            raise BackendError(Diagnostic("B406", f"unknown se {se!r}", hint=f"se = {' | '.join(SE_KINDS)}"))
        if self.product:
            if method in ("mle", "em"):
                return with_projection(self._mle_product(counts, se), "none")
            return estimate_joint(method, counts, self.K(), self.names, options)
        return with_projection(self._combined(counts, method, se), str(options.get("project", "none")))

    def _mle_product(self, counts: np.ndarray, se: str = "population") -> JointFit:
        if self.cells > MLE_CELL_LIMIT:
            raise BackendError(Diagnostic("B403", f"the MLE of a {self.cells}-cell joint (EM on the Kronecker "
                                          f"channel) is limited to {MLE_CELL_LIMIT} cells",
                                          hint="use castell (with project = euclidean for a distribution)"))
        ch = product_channel([channel_of(f) for f in self.factors]) if len(self.factors) > 1 \
            else channel_of(self.factors[0])
        ch = _numeric_channel(self.model, ch, self.factors)
        fit = em(ch, counts.reshape(-1))
        require_answer(ch, counts.reshape(-1), fit, "mle")
        var = None
        try:
            var = np.diag(ch.avar_mle(np.clip(fit.w, 1e-12, None))) / fit.n
            if se == "conditional":
                # asymptotically linear in lambda_hat with J K = I on the simplex's tangent space:
                # conditional = population - (diag(Pi) - Pi Pi^T)/n (module docstring of rr_joint)
                var = var - (fit.w - fit.w ** 2) / fit.n
        except np.linalg.LinAlgError:
            pass
        return JointFit(fit.w.reshape(self.shape), "mle", fit.n, None if var is None else var.reshape(self.shape),
                        note=fit.note, info={"iterations": fit.iterations, "kkt": fit.kkt,
                                             "converged": bool(fit.converged), "loglik": fit.loglik},
                        se_kind=None if var is None else se, se_target="joint")

    def _combined(self, counts: np.ndarray, method: str, se: str = "population") -> JointFit:
        """RR on the combined domain (RR-Joint): estimate there, then sum to the estimand.

        ``se = conditional``: each estimand cell is a sum ``c^T Pi_hat`` of combined-domain
        cells, an estimator with ``A K = I``, so its conditional variance is the population
        one less ``(c^T Pi - (c^T Pi)^2)/n`` (module docstring of :mod:`.rr_joint`)."""
        mech = self.q.mechanism
        keep, K = None, None
        if method in ("mle", "em"):
            ch = _numeric_channel(self.model, channel_of(mech), [mech])
            f = em(ch, counts)
            require_answer(ch, counts, f, "mle")
            V = ch.avar_mle(np.clip(f.w, 1e-12, None))
            if se == "conditional":
                V = V - (np.diag(f.w) - np.outer(f.w, f.w))
            full = JointFit(f.w, "mle", f.n, None, note=f.note,
                            info={"iterations": f.iterations, "kkt": f.kkt, "converged": bool(f.converged)})
            lam = None
        else:
            keep = _grr_keep(self.model, mech)
            if keep is not None:
                full = rr_joint(counts, keep=keep, se=se)
            else:
                K = numeric_K(self.model, mech)
                full = rr_joint(counts, K, se=se)
            full = dataclasses.replace(full, method=method)
            lam = counts / counts.sum()
            V = None
        if self.parts == [0] and len(self.variables) == 1 and self.variables[0].p == full.table.size:
            if V is not None:
                full = dataclasses.replace(full, var=np.diag(V) / full.n, se_kind=se, se_target="joint")
            return full
        tensor = full.table.reshape(self.part_sizes)
        others = tuple(j for j in range(len(self.part_sizes)) if j not in self.parts)
        kept = sorted(self.parts)
        table = tensor.sum(axis=others) if others else tensor
        table = np.transpose(table, [kept.index(p) for p in self.parts])
        # the variance of each marginal cell, a sum of full-domain cells c: c^T V c
        var = np.empty(self.shape)
        for cell in itertools.product(*(range(s) for s in self.shape)):
            mask = np.zeros(self.part_sizes, dtype=bool)
            index = [slice(None)] * len(self.part_sizes)
            for p, i in zip(self.parts, cell):
                index[p] = i
            mask[tuple(index)] = True
            c = mask.reshape(-1).astype(float)
            if V is not None:
                var[cell] = c @ V @ c / full.n
                continue
            if keep is not None:
                s = lam @ c
                var[cell] = (s - s * s) / (keep[0] - keep[1]) ** 2 / full.n
            else:
                u = np.linalg.solve(K.T, c)  # the cell is c^T K^-1 lambda_hat = u^T lambda_hat
                var[cell] = (u * u @ lam - (u @ lam) ** 2) / full.n
            if se == "conditional":
                t = full.table @ c
                var[cell] -= (t - t * t) / full.n
        return JointFit(table, full.method, full.n, var, note=full.note + "; summed over the other parts",
                        info=full.info, se_kind=se, se_target="joint")


def _codes(factor: Any, frame, path) -> np.ndarray:
    """Report index per row for one factor (the finite back end's reader)."""
    out = _factor_codes(channel_of(factor), frame, factor.variable, path)
    return out[0] if isinstance(out, tuple) else out


def _numeric_channel(model: ModelGraph, ch, factors) -> Any:
    """The channel with parameter values substituted (a float K for the estimators)."""
    subs = _subs(model)
    if not subs:
        return ch
    if ch.factors:
        return product_channel([matrix_channel(f.variable.labels, numeric_K(model, f).T) for f in factors])
    return matrix_channel(ch.x_labels, numeric_K(model, factors[0]).T)


def joint_result(problem: JointProblem, fit: JointFit) -> Result:
    """A joint estimate as the JSON contract has it: a table, ``se`` of the same shape,
    ``method``, ``n``, and which projection was applied."""
    single = len(problem.variables) == 1
    extras: dict = {"method": problem.q.method.name, "n": fit.n}
    if fit.var is not None:
        se = np.sqrt(np.maximum(fit.var, 0.0))
        extras["se"] = _value(problem, se)
        extras["se_kind"] = fit.se_kind or "population"
        if fit.se_target and fit.se_target != "joint":
            extras["se_target"] = fit.se_target
        lo, hi = fit.ci if fit.ci is not None else (fit.table - Z95 * se, fit.table + Z95 * se)
        if single:
            extras["ci95"] = {lab: [float(a), float(b)] for lab, a, b in
                              zip(problem.labels[0], lo.reshape(-1), hi.reshape(-1))}
        else:
            extras["ci95"] = {"lower": _value(problem, lo), "upper": _value(problem, hi)}
        extras["ci_method"] = fit.ci_method or "wald (estimate +- 1.96 se)"
    extras["projection"] = fit.projection
    extras["negative_cells"] = fit.negative_cells
    if fit.projection != "none" and fit.var is None and fit.negative_cells:
        extras["se_note"] = "no se: the projection moved the estimate off the linear estimator"
    elif fit.var is None and fit.method == "truncated":
        extras["se_note"] = "no se: truncation (a minimum of estimates) is not smooth where it binds"
    extras["sum"] = float(np.sum(fit.table))
    for k, v in fit.info.items():
        if k != "cluster_axes":          # the clusters by name are there already
            extras[k] = v
    if fit.note:
        extras["note"] = fit.note
    return Result("estimate", _value(problem, fit.table), extras)


def _value(problem: JointProblem, data: np.ndarray):
    if len(problem.variables) == 1 and problem.q.estimand.kind == "distribution":
        return Vector(problem.labels[0], tuple(np.asarray(data).reshape(-1)))
    return Table(problem.names, problem.labels, np.asarray(data).reshape(problem.shape))


def estimate_result(model: ModelGraph, q: Query, frame, path) -> Result:
    problem = JointProblem(model, q)
    counts = problem.counts_from(frame, path)
    if counts.sum() <= 0:
        raise DataError(Diagnostic("D001", f"{path} has no reports"))
    try:
        fit = problem.fit(counts)
    except np.linalg.LinAlgError as e:
        raise BackendError(Diagnostic("B404", f"a randomization matrix is singular ({e})",
                                      hint="GRR is singular only at eps = 0 (Theorem 1)")) from None
    return joint_result(problem, fit)


# ---- epsilon ---------------------------------------------------------------------------------------
def factor_epsilon(mech: RandomizedResponse) -> sympy.Expr:
    """GRR: ``|eps|`` (p/q = e^eps, Theorem 3's proof); a matrix: the channel's max log ratio."""
    if mech.kind == "grr":
        return sympy.Abs(sympy.sympify(mech.epsilon))
    return channel_of(mech).epsilon()


def epsilon_result(model: ModelGraph, q: Query) -> Result:
    mech = q.mechanism
    factors = mech.factors if isinstance(mech, ProductMechanism) else (mech,)
    parts = [factor_epsilon(f) for f in factors]
    eps = sympy.simplify(sympy.Add(*parts))
    subs = _subs(model)
    if subs:
        eps = eps.subs(subs)
    if isinstance(mech, ProductMechanism):
        reason = ("sequential composition (Theorem 3): the factors' epsilons add up, "
                  + " + ".join(str(p) for p in parts))
    elif mech.kind == "grr":
        reason = ("GRR: Pr(Y = x | X = x) / Pr(Y = x | X = x') = p/q = e^eps with p = e^eps/(e^eps + d - 1), "
                  "q = 1/(e^eps + d - 1)")
    else:
        reason = "max over reports of log(max_x Pr(report | x) / min_x Pr(report | x))"
    if not isinstance(mech, ProductMechanism) and mech.variable.is_combined:
        reason += f"; one RR on the combined domain of {mech.variable.p} categories (RR-Joint)"
    return Result("epsilon", eps, {"reason": reason})


# ---- asymptotic covariances ---------------------------------------------------------------------
def grr_avar(d: int, eps: sympy.Expr, w: sympy.Matrix) -> sympy.Matrix:
    """Closed form of Warner's covariance for GRR: ``(diag(lambda) - lambda lambda^T) /
    (p - q)^2`` with ``lambda = (p - q) w + q``, ``p - q = (e^eps - 1)/(e^eps + d - 1)``.

    ``P = (p - q) I + q J`` and ``p + (d - 1) q = 1`` give ``P^-1 = (I - q J)/(p - q)``;
    ``(I - q J)`` leaves ``diag(lambda) - lambda lambda^T`` unchanged (its rows and
    columns sum to 0), hence the closed form of ``P^-T (diag(lambda) - lambda
    lambda^T) P^-1``.

    Examples
    --------
    >>> grr_avar(2, sympy.log(3), sympy.Matrix([sympy.Rational(2, 5), sympy.Rational(3, 5)]))
    Matrix([
    [ 99/100, -99/100],
    [-99/100,  99/100]])
    """
    e = sympy.exp(eps)
    gap = (e - 1) / (e + d - 1)
    q = 1 / (e + d - 1)
    lam = [gap * x + q for x in w]
    return sympy.Matrix(d, d, lambda i, j: sympy.factor(sympy.simplify(
        ((lam[i] if i == j else 0) - lam[i] * lam[j]) / gap ** 2)))


def _truth(model: ModelGraph, variables: Sequence[Variable]) -> tuple[sympy.Matrix, bool]:
    w = population_vector(model, list(variables))
    if w is not None:
        return w, True
    labels = [".".join(t) for t in itertools.product(*(v.labels for v in variables))]
    return symbolic_vector(labels), False


def avar_result(model: ModelGraph, q: Query) -> Result:
    mech = q.mechanism
    est = q.estimand
    subs = _subs(model)
    if est.kind == "distribution":
        var = mech.variable
        w, declared = _truth(model, [var])
        V = grr_avar(var.p, sympy.sympify(mech.epsilon), w)
        if subs:
            V = V.subs(subs)
        e = sympy.Symbol("e^eps")
        extras = {"method": "mom", "evaluation": "exact, at the declared population" if declared
                  else "exact, symbolic in w (no population declared)",
                  "meaning": "asymptotic covariance of sqrt(n) (w_hat - w)",
                  "closed_form": "(diag(lambda) - lambda lambda^T) (e^eps + d - 1)^2 / (e^eps - 1)^2 with "
                                 "lambda = ((e^eps - 1) w + 1) / (e^eps + d - 1)",
                  "trace": shown(sympy.factor(sympy.simplify(V.trace()))),
                  "trace_uniform": shown(sympy.factor((1 - sympy.Rational(1, var.p)) * (e + var.p - 1) ** 2
                                                      / (e - 1) ** 2).subs(e, sympy.exp(sympy.sympify(mech.epsilon)
                                                                                        .subs(subs)))),
                  "fixed_population": "conditional on the respondents' true values (Wang et al. 2017) the "
                                      "covariance is this minus diag(w) - w w^T"}
        return Result("avar", Matrix(var.labels, var.labels, V), extras)
    return _joint_avar(model, q)


def _joint_avar(model: ModelGraph, q: Query) -> Result:
    """The Kronecker (castell) covariance ``K^-1 (diag(lambda) - lambda lambda^T) K^-T`` of a
    joint, exact for small tables (through ``K^-1 = (x) K_k^-1``), floating beyond; for
    RR-Joint the combined domain's covariance summed to the estimand."""
    problem = JointProblem(model, q)
    subs = _subs(model)
    labels = tuple(".".join(t) for t in itertools.product(*problem.labels))
    mech = q.mechanism
    if problem.product:
        w, declared = _truth(model, problem.variables)
        inv = [channel_of(f).K.inv() for f in problem.factors]
        Kf = [channel_of(f).K for f in problem.factors]
        exact = problem.cells <= EXACT_CELLS and (declared or problem.cells <= 8)
        if exact:
            A = _kron_exact(inv)
            lam = _kron_exact(Kf) * w
            V = A * sympy.diag(*lam) * A.T - w * w.T
            V = V.subs(subs).applyfunc(sympy.cancel)
            evaluation = "exact, at the declared population" if declared else "exact, symbolic in w"
        else:
            if not declared:
                raise BackendError(Diagnostic("B003", f"the covariance of a {problem.cells}-cell joint symbolic "
                                              "in w is too large", hint="declare a population"))
            from .kron import kron_cov

            K = problem.K()
            wn = np.array([float(x) for x in w.subs(subs)])
            from .kron import kron_apply

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
        if mech.kind == "grr":
            V_full = grr_avar(whole.p, sympy.sympify(mech.epsilon), w_full).subs(subs)
        else:
            V_full = channel_of(mech).avar_mom(w_full).subs(subs)
        M = _part_sum_matrix(problem)
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
    return Result("avar", Matrix(labels, labels, V), extras)


def shown(x: Any) -> Any:
    """An extra as JSON shows it: a number, or the expression's text when symbolic."""
    return str(x) if isinstance(x, sympy.Basic) and x.free_symbols else x


def _kron_exact(mats: Sequence[sympy.Matrix]) -> sympy.Matrix:
    out = mats[0]
    for m in mats[1:]:
        out = sympy.kronecker_product(out, m)
    return out


def _part_sum_matrix(problem: JointProblem) -> np.ndarray:
    """0/1 matrix summing the combined domain's cells into the estimand's cells."""
    sizes = problem.part_sizes
    rows = []
    for cell in itertools.product(*(range(s) for s in problem.shape)):
        mask = np.zeros(sizes, dtype=int)
        index = [slice(None)] * len(sizes)
        for p, i in zip(problem.parts, cell):
            index[p] = i
        mask[tuple(index)] = 1
        rows.append(mask.reshape(-1))
    return np.array(rows, dtype=int)


__all__ = ["RRBackend", "JointProblem", "grr_avar", "epsilon_result", "joint_result", "numeric_K", "rr_based",
           "project"]
