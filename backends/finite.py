"""The back end for finite mechanisms (subset designs, randomized response, products):
symbolic analysis, estimation on data, simulation and privatization, all through the
channel core."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy

from ..errors import BackendError, DataError, Diagnostic
from ..model import ModelGraph, ProductMechanism, Query, SubsetMechanism
from ..results import Matrix, Result, TestResult, Vector
from . import register
from .channel import Channel, _Exact
from .dummies import DummyDesign
from . import uniform
from .compile import channel_of, enlarge_population, large_uniform, uniform_r
from .finite_data import count_observations, observations, privatize_frame
from .finite_estimates import conditional_covariance, fit_estimate, marginal_map, se_kind_of
from .independence import independence_test
from .populations import population_vector, symbolic_vector

#: query kinds answered without data
ANALYTIC = ("avar", "moments", "fisher", "coverage", "leakage", "epsilon", "identifiable", "individual")
#: beyond this many observations x categories, exact arithmetic gives way to floating point
EXACT_LIMIT = 20_000
#: beyond this many categories, results symbolic in w are refused (they would take minutes)
SYMBOLIC_LIMIT = 8


def _finite(mech: Any) -> bool:
    return getattr(mech, "is_finite", False)


# ---- the truth a result is evaluated at --------------------------------------------------------
class Truth:
    """w for a channel: exact at the declared population, symbolic without one, with the
    parameters that have values substituted."""

    def __init__(self, model: ModelGraph, mech: Any):
        self.model = model
        self.mech = mech
        self.uniform_p = mech.variable.p if large_uniform(mech) else None
        factors = mech.factors if isinstance(mech, ProductMechanism) else (mech,)
        w = population_vector(model, [f.variable for f in factors])
        self.declared = w is not None
        if w is None:
            w = symbolic_vector(_real_labels(mech))
        self.w_real = w
        if isinstance(mech, SubsetMechanism) and mech.min_coverage is not None:
            w = enlarge_population(w, mech.min_coverage)
        self.w = w
        self.subs = {p.symbol: p.value for p in model.parameters.values() if p.value is not None}

    def _uses(self, symbol: sympy.Symbol) -> bool:
        if self.uniform_p:
            return False
        ch = self.channel
        return any(symbol in f.exact_K.free_symbols for f in (ch.factors or (ch,))
                   if isinstance(f.exact_K, sympy.MatrixBase))

    @property
    def channel(self) -> Channel:
        """The mechanism's channel (raises for uniform designs too large to enumerate)."""
        return channel_of(self.mech)

    @property
    def p(self) -> int:
        return self.uniform_p or self.channel.p

    @property
    def exact_ok(self) -> bool:
        if self.uniform_p:  # closed forms: O(p^2) exact arithmetic
            return self.uniform_p <= 60
        return self.channel.n_obs * self.channel.p <= EXACT_LIMIT

    def numeric_w(self) -> np.ndarray:
        if not self.declared:
            raise BackendError(Diagnostic("B001", "this needs a population: no population is declared for "
                                          f"{', '.join(v.name for v in self.mech.variables)}",
                                          hint="declare one, e.g. population X ~ categorical(...)"))
        return np.array([float(x) for x in self.w], dtype=float)

    def evaluation(self) -> str:
        if self.uniform_p:
            how = "exact" if self.exact_ok else "floating point"
            return (f"{how}, in closed form for the uniform design (exchangeable: no enumeration of the "
                    f"2^{self.uniform_p} subsets)" + ("" if self.declared else ", symbolic in w"))
        params = sorted(str(p.symbol) for p in self.model.parameters.values()
                        if p.value is None and self._uses(p.symbol))
        in_params = f", symbolic in {', '.join(params)}" if params else ""
        if not self.declared:
            return "exact, symbolic in w (no population declared)" + in_params
        return "exact, at the declared population" + in_params if self.exact_ok else \
            f"floating point at the declared population ({self.channel.n_obs} observations x {self.channel.p} " \
            "categories is beyond exact arithmetic)"

    def value(self, fn, real: bool = False) -> Any:
        """fn(w) exactly when feasible, else in floating point; parameters with values substituted.
        ``real``: w over the real categories (dummy categories of Appendix II left out)."""
        if real and self.w_real is not self.w:
            w = self.w_real
            return fn(w if self.exact_ok or not self.declared else np.array([float(x) for x in w]))
        if self.declared and not self.exact_ok:
            return fn(self.numeric_w())
        if not self.declared and self.p > SYMBOLIC_LIMIT and not (self.uniform_p and self.p <= 30):
            raise BackendError(Diagnostic("B006", f"results symbolic in w are limited to p <= {SYMBOLIC_LIMIT} "
                                          f"categories; this mechanism has {self.p}",
                                          hint="declare a population to evaluate exactly at it"))
        out = fn(self.w)
        if self.subs and hasattr(out, "subs"):
            out = out.subs(self.subs)
        return out


def _real_p(mech: Any) -> int:
    return len(_real_labels(mech))


def _real_labels(mech: Any) -> tuple[str, ...]:
    """The categories w is over (joint ones for products; dummies excluded)."""
    if isinstance(mech, ProductMechanism):
        return channel_of(mech).x_labels
    return mech.variable.labels


def _mat(data: Any, rows, cols) -> Matrix:
    if isinstance(data, np.ndarray):
        return Matrix(tuple(rows), tuple(cols), data)
    return Matrix(tuple(rows), tuple(cols), sympy.Matrix(data))


def _vec(data: Any, labels) -> Vector:
    values = list(np.asarray(data).ravel()) if isinstance(data, np.ndarray) else list(data)
    return Vector(tuple(labels), tuple(values))


# ---- estimands --------------------------------------------------------------------------------
# ---- the back end ----------------------------------------------------------------------------
@register
class FiniteBackend:
    """Subset privacy and randomized response: everything a channel can answer."""

    REGISTER_NAME = "finite"

    def supports(self, query: Query, verb: str) -> bool:
        mech = query.mechanism
        if mech is None or not _finite(mech):
            return False
        if query.kind in ANALYTIC:
            if query.kind == "avar":
                return query.estimand is not None and query.estimand.kind in ("distribution",)
            return True
        if query.kind == "estimate":
            return verb in ("run", "simulate") and query.estimand.kind in ("distribution",) \
                or (verb in ("run", "simulate") and query.estimand.kind == "joint"
                    and query.method.name in ("mom", "mle", "em", "newton"))
        if query.kind == "test":
            return verb in ("run", "simulate") and query.estimand.kind == "independence"
        return False

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        if verb == "simulate" and query.kind in ("estimate", "avar", "test"):
            from .finite_simulate import simulate_query

            return simulate_query(model, query, n=options["n"], reps=options["reps"], seed=options.get("seed"))
        kind = query.kind
        if kind in ANALYTIC:
            return getattr(self, "_" + kind)(model, query)
        data = options.get("data")
        if data is None:
            raise BackendError(Diagnostic("B002", f"query '{query.name}' needs data"))
        mech_name = query.mechanism.name or query.name
        frame = data.frame_for(mech_name)
        if kind == "test":
            counts = count_observations(query.mechanism, frame, data.path_for(mech_name))
            return independence_on_counts(query, counts, seed=options.get("seed"))
        ch, counts = observations(query.mechanism, frame, data.path_for(mech_name))
        return estimate_on_counts(query, counts, ch)

    # -- analysis -----------------------------------------------------------------------------
    def _moments(self, model: ModelGraph, q: Query) -> Result:
        t = Truth(model, q.mechanism)
        if t.uniform_p:
            m = t.value(lambda w: uniform.moments(t.uniform_p, w))
            lab = q.mechanism.variable.labels
        else:
            ch = t.channel
            m = t.value(ch.moments)
            lab = ch.x_labels
        value = {"Q": _mat(m["Q"], lab, lab), "gamma": _vec(m["gamma"], lab), "H": _mat(m["H"], lab, lab),
                 "C": _mat(m["C"], lab, lab)}
        extras: dict = {"evaluation": t.evaluation()}
        if isinstance(q.mechanism, SubsetMechanism) and q.mechanism.design.kind == "uniform" \
                and q.mechanism.min_coverage is None:
            r = uniform_r(t.p)
            extras["r_p"] = r
            extras["closed_form"] = (f"q_ii = 1, q_ij = 1/r_p = {1 / r} (Eq. 6); Q^-1 = r_p/(r_p - 1) (I - J/(r_p - 1 + p)); "
                                     "Eq. 6's (r_p gamma - 1)/(r_p - 1) is Q^-1 gamma with sum w = 1 imposed")
        return Result("moments", value, extras)

    def _fisher(self, model: ModelGraph, q: Query) -> Result:
        t = Truth(model, q.mechanism)
        ch = t.channel
        if not t.declared and ch.p > 5:
            raise BackendError(Diagnostic("B003", "the symbolic Fisher information is too large for p > 5 "
                                          "without a population", hint="declare a population to evaluate it"))
        value = t.value(ch.fisher_theta)
        theta = tuple(f"theta_{lab}" for lab in ch.x_labels[:-1])
        return Result("fisher", _mat(value, theta, theta),
                      {"I_w": _mat(t.value(ch.fisher_w), ch.x_labels, ch.x_labels),
                       "parameterization": "w = alpha + B theta, theta = w[:p-1] (section III-A)",
                       "evaluation": t.evaluation()})

    def _avar(self, model: ModelGraph, q: Query) -> Result:
        t = Truth(model, q.mechanism)
        V, labels = avar_matrix(t, q)
        kind = se_kind_of(q)
        extras = {"method": q.method.name, "evaluation": t.evaluation(), "se_kind": kind,
                  "meaning": "asymptotic covariance of sqrt(n) (w_hat - w)" if kind == "population" else
                  "asymptotic covariance of sqrt(n) (w_hat - pi) given the respondents' true table pi "
                  "(privacy noise only): the population one less diag(w) - w w^T"}
        numeric = V if isinstance(V, np.ndarray) else (None if V.free_symbols else np.array(V.evalf(17).tolist(), float))
        if numeric is not None:
            eig = np.sort(np.linalg.eigvalsh((numeric + numeric.T) / 2))[::-1]
            extras["trace"] = float(np.trace(numeric))
            extras["eigenvalues"] = [float(x) for x in eig]
            extras["scaled_loss_limit"] = ("n ||w_hat - w||^2 -> sum_i lambda_i Z_i, Z_i iid chi2(1): "
                                           f"mean {float(np.trace(numeric)):.6g}")
        elif hasattr(V, "trace"):
            extras["trace"] = sympy.simplify(V.trace())
        return Result("avar", _mat(V, labels, labels), extras)

    def _coverage(self, model: ModelGraph, q: Query) -> Result:
        metric = q.metrics[0] if q.metrics else "size"
        t = Truth(model, q.mechanism)
        value = coverage_value(t, metric)
        meaning = {"size": "tau = E[L(A)] (Def. 5)", "mutual_information": "H(X | A) in bits (Def. 6)",
                   "prediction": "1 - R(X; A) (Def. 7)"}[metric]
        return Result("coverage", value, {"metric": metric, "meaning": meaning, "evaluation": t.evaluation()})

    def _leakage(self, model: ModelGraph, q: Query) -> Result:
        t = Truth(model, q.mechanism)
        value = {m: leakage_value(t, m) for m in q.metrics}
        return Result("leakage", value, {"evaluation": t.evaluation(),
                                         "meaning": "size: 1 - tau; mutual_information: I(X; A) in bits; "
                                                    "prediction: R(X; A) = sum_a max_x Pr(X = x, A = a)"})

    def _epsilon(self, model: ModelGraph, q: Query) -> Result:
        eps = sympy.oo if large_uniform(q.mechanism) else channel_of(q.mechanism).epsilon()
        extras: dict = {}
        if eps is sympy.oo:
            extras["reason"] = ("some report is impossible for one value and possible for another "
                                "(a subset report excludes the categories outside it: "
                                "Pr(A = a | X = x) = 0 for x not in a), so no finite epsilon bounds the ratio")
        elif isinstance(q.mechanism, ProductMechanism):
            extras["reason"] = "sequential composition: the factors' epsilons add up"
        else:
            extras["reason"] = "max over reports of log(max_x Pr(report | x) / min_x Pr(report | x))"
        subs = {p.symbol: p.value for p in model.parameters.values() if p.value is not None}
        return Result("epsilon", eps.subs(subs) if subs else eps, extras)

    def _identifiable(self, model: ModelGraph, q: Query) -> Result:
        if large_uniform(q.mechanism):  # Q = (1 - c2) I + c2 J is nonsingular for every p >= 4
            return Result("identifiable", True, {"reason": "the uniform design's Q = (1 - 1/r_p) I + J/r_p is "
                                                           "nonsingular (Assumption 1 holds)"})
        if has_dummies(q.mechanism):
            d = DummyDesign(q.mechanism)
            r = d.rank()
            ok = r == d.p
            reason = (f"with the dummies' known mass alpha, w enters the reports through (1 - 2 alpha) K_real, "
                      f"of rank {r} {'=' if ok else '<'} p = {d.p}")
            return Result("identifiable", ok, {"reason": reason})
        ok, reason = channel_of(q.mechanism).identifiable()
        return Result("identifiable", ok, {"reason": reason})

    def _individual(self, model: ModelGraph, q: Query) -> Result:
        """Size and prediction leakage of one respondent before and after observing the subset
        (subset privacy, section V-B and Fig. 4): size leakage 1 - L = 1 - P(X in S) for S = {x}
        before and S = a after; prediction leakage 1 before (X itself is known) and, after,
        whether the optimal guess argmax_{j in a} P(X = j | A = a) = argmax_{j in a} w_j is x."""
        t = Truth(model, q.mechanism)
        labels = q.mechanism.variable.labels
        w = list(t.w)[:len(labels)]
        if isinstance(q.mechanism, SubsetMechanism) and q.mechanism.min_coverage is not None:
            w = [x / (1 - 2 * q.mechanism.min_coverage) for x in w]
        inside = [labels.index(lab) for lab in q.observed]
        L = sum(w[j] for j in inside)
        guess_index = max(inside, key=lambda j: (float(w[j]) if t.declared else 0.0, -j))
        guess = labels[guess_index]
        value: dict = {"size": {"after": 1 - L}, "prediction": {}}
        if q.truth is not None:
            x = labels.index(q.truth)
            value["size"]["before"] = 1 - w[x]
            value["prediction"] = {"before": sympy.Integer(1), "after": sympy.Integer(int(guess == q.truth))}
        else:
            value["prediction"] = {"after": max((w[j] for j in inside), key=lambda v: float(v)) / L}
        extras = {"observed": "|".join(q.observed), "optimal_guess": guess, "evaluation": t.evaluation(),
                  "meaning": "size leakage 1 - P(X in S); prediction leakage: the optimal guess is right"
                             + (" (given the true category)" if q.truth else " (its posterior probability)")}
        return Result("individual", value, extras)

    # -- privatize --------------------------------------------------------------------------------
    def privatizes(self, mechanism: Any) -> bool:
        return _finite(mechanism)

    def privatize(self, model: ModelGraph, mechanism: Any, frame, seed: int | None = None, offset: int = 0):
        return privatize_frame(model, mechanism, frame, seed, offset=offset)


# ---- shared computations (analysis, run and simulate use the same ones) ---------------------------
def avar_matrix(t: Truth, q: Query) -> tuple[Any, tuple[str, ...]]:
    """The asymptotic covariance of the estimand's estimator at the truth, and its labels."""
    method = q.method.name
    if t.uniform_p:
        if method != "mom":
            raise BackendError(Diagnostic("B007", f"the MLE covariance of the uniform design on {t.uniform_p} "
                                          "categories needs all its subsets",
                                          hint="use by mom (closed form), or estimate from data: standard "
                                               "errors then use the observed information"))
        V = t.value(lambda w: uniform.avar_mom(t.uniform_p, w))
        return _to_estimand(V, q.mechanism.variable.labels, t, q)
    if has_dummies(q.mechanism):
        d = DummyDesign(q.mechanism)
        V = t.value(d.avar_mom if method == "mom" else d.avar_mle, real=True)
        return _to_estimand(V, q.mechanism.variable.labels, t, q)
    ch = t.channel
    if method == "mom":
        fn = ch.avar_mom
    else:  # mle, em, newton and one_step share the MLE's limit (Theorems 3 and 5)
        if not t.declared and ch.p > 3:
            raise BackendError(Diagnostic("B003", f"the MLE covariance symbolic in w is too large for p = {ch.p} "
                                          "(it inverts a matrix of rational functions)",
                                          hint="declare a population to evaluate it exactly there"))
        fn = ch.avar_mle
    V = t.value(fn)
    labels = ch.x_labels
    V, labels = _to_estimand(V, labels, t, q)
    return V, labels


def _to_estimand(V: Any, labels: tuple[str, ...], t: Truth, q: Query) -> tuple[Any, tuple[str, ...]]:
    """Sums over combined categories taken (a marginal of a combined or product variable)."""
    mech = q.mechanism
    exact = not isinstance(V, np.ndarray)
    w = sympy.Matrix(list(t.w_real)) if exact else np.array([float(x) for x in t.w_real])
    variable = q.estimand.variables[0] if q.estimand is not None and len(q.estimand.variables) == 1 else None
    if variable is not None:
        M = marginal_map(labels, mech, variable)
        if M is not None:
            Mx = sympy.Matrix(M.astype(int)) if exact else M
            V = Mx * V * Mx.T if exact else M @ V @ M.T
            w = Mx * w if exact else M @ w
            labels = variable.labels
    if se_kind_of(q) == "conditional":  # privacy noise only: less the multinomial covariance of X
        V = (V - (sympy.diag(*list(w)) - w * w.T)).applyfunc(sympy.simplify) if exact \
            else conditional_covariance(V, w)
    return V, labels


def coverage_value(t: Truth, metric: str) -> Any:
    if metric == "size" and t.uniform_p:
        return t.value(lambda w: uniform.size_coverage(t.uniform_p, w))
    ch = t.channel
    if metric == "size":
        if not ch.is_set_valued:
            raise BackendError(Diagnostic("B004", "size coverage needs set-valued reports"))
        return t.value(ch.size_coverage)
    if metric == "mutual_information":
        return t.value(lambda w: ch.entropy(w) - ch.mutual_information(w))
    return 1 - t.value(ch.prediction_leakage)


def leakage_value(t: Truth, metric: str) -> Any:
    if metric == "size":
        return 1 - coverage_value(t, "size")
    ch = t.channel
    if metric == "mutual_information":
        return t.value(ch.mutual_information)
    return t.value(ch.prediction_leakage)


def has_dummies(mech: Any) -> bool:
    return isinstance(mech, SubsetMechanism) and mech.min_coverage is not None


def estimate_on_counts(q: Query, counts: np.ndarray, ch: Channel | None = None) -> Result:
    """Fit the query's estimator on counts per observation of ``ch`` (default: the
    mechanism's channel), with standard errors of the kind asked and intervals
    (:func:`privspec.backends.finite_estimates.fit_estimate`)."""
    ch = channel_of(q.mechanism) if ch is None else ch
    est = fit_estimate(q, ch, counts)
    fit = est.fit
    extras: dict = {"method": q.method.name, "n": fit.n}
    if est.V is not None:
        extras["se"] = _vec(est.se, est.labels)
        extras["se_kind"] = est.se_kind
    if est.ci is not None:
        extras["ci95"] = {lab: [float(a), float(b)] for lab, (a, b) in zip(est.labels, est.ci)}
        extras["ci_method"] = est.ci_method
    if not math.isnan(fit.loglik):
        extras["loglik"] = fit.loglik
    if fit.iterations:
        extras["iterations"] = fit.iterations
    if not math.isnan(fit.kkt):
        extras["kkt"] = fit.kkt
        extras["converged"] = bool(fit.converged)
    note = "; ".join(x for x in (fit.note, *est.notes) if x)
    if note:
        extras["note"] = note
    if q.estimand.kind == "joint":
        from ..results import Table

        shape = tuple(len(v.labels) for v in q.estimand.variables)
        return Result("estimate", Table(tuple(v.name for v in q.estimand.variables),
                                        tuple(v.labels for v in q.estimand.variables), est.w.reshape(shape)), extras)
    return Result("estimate", _vec(est.w, est.labels), extras)


def report_table(q: Query, counts: np.ndarray):
    """The two factors' channels and their report table (other factors summed out)."""
    mech = q.mechanism
    factors = list(mech.factors)
    chans = [channel_of(f) for f in factors]
    tensor = counts.reshape([c.n_obs for c in chans])
    idx = []
    for v in q.estimand.variables:
        k = next(i for i, f in enumerate(factors) if set(v.components()) <= set(f.variable.components()))
        idx.append(k)
    others = tuple(i for i in range(len(factors)) if i not in idx)
    table = tensor.sum(axis=others) if others else tensor
    if idx[0] > idx[1]:
        table = table.T
    return chans[idx[0]], chans[idx[1]], table


def independence_on_counts(q: Query, counts: np.ndarray, seed: int | np.random.SeedSequence | None = None) -> Result:
    """The independence test of ``q`` on the counts of its mechanism's reports.

    Without a ``calibrate`` clause the p-value is the permutation one with
    :data:`~privspec.backends.independence.DEFAULT_DRAWS` draws (exact in size); the
    extras say which calibration was used, with how many draws and which seed.
    """
    chA, chB, table = report_table(q, counts)
    cal = q.calibrate
    calibration = cal.name if cal is not None else "permutation"
    draws = int(cal.args[0]) if cal is not None and cal.args else None
    out = independence_test(chA, chB, table, q.method.name, calibration=calibration, draws=draws, seed=seed)
    extras: dict = {"n": int(table.sum()), "note": out.note,
                    "null": f"{q.estimand.variables[0].name} and {q.estimand.variables[1].name} are independent",
                    "calibration": out.calibration}
    if out.draws is not None:
        extras["draws"] = out.draws
        if out.seed is not None:
            extras["seed"] = int(out.seed)
        # the Monte Carlo error of a permutation p-value, as if B were infinite
        extras["p_value_mc_se"] = float(np.sqrt(out.p_value * (1 - out.p_value) / out.draws))
    return Result("test", TestResult(out.method, out.statistic, out.df, out.p_value), extras)


# expose for the exact-symbolic tests
__all__ = ["FiniteBackend", "Truth", "avar_matrix", "coverage_value", "leakage_value", "estimate_on_counts",
           "independence_on_counts", "_Exact"]
