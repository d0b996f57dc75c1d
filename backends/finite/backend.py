"""The back end for finite mechanisms (subset designs, randomized response, products):
symbolic analysis, estimation on data, simulation and privatization, all through the
channel core."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import sympy

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import ModelGraph, Query
from privspec.model.query_kinds import FINITE, Answers, analytic
from privspec.results.kinds import (Avar, Coverage, Epsilon, Fisher, Identifiable, Individual, Leakage,
                                    Moments)
from privspec.results.result import Result
from privspec.backends import register
from privspec.backends.core.blas import on_one_blas_thread
from privspec.backends.core.compile import channel_in_w
from privspec.backends.finite.data import count_observations, observations, privatize_frame
from privspec.backends.finite.estimates import se_kind_of
from privspec.backends.finite.regression_data import regression_on_data
from privspec.backends.finite.regression_planning import regression_avar
from privspec.backends.finite.regression_predictor import item_is_covariate, predictor_on_data
from privspec.backends.finite.simulate import simulate_query
from privspec.backends.finite.weighted import weighted_estimate, weighted_supports
from privspec.backends.finite.weighted_independence import weighted_independence
from privspec.backends.finite.weighted_predictor import weighted_predictor
from privspec.backends.finite.weighted_regression import weighted_regression
from privspec.backends.finite.truth import (Truth, as_matrix, as_vector, avar_matrix, coverage_value,
                                            estimate_on_counts, independence_on_counts, leakage_value)
from privspec.backends.core.populations import parameter_values

#: what this back end answers (the registry reads it; :mod:`privspec.model.query_kinds`)
_ANSWERS = (
    Answers(("moments", "fisher", "coverage", "leakage", "identifiable", "individual"), FINITE),
    Answers(("epsilon",), ("subset", "product")),  # randomized response: the rr back end's closed forms
    Answers(("avar",), FINITE, estimands=("distribution",)),
    # a regression's coefficients at their declared values, the covariates at their populations
    Answers(("avar",), ("subset", "grr", "rr"), estimands=("regression",), methods=("mle",)),
    Answers(("estimate",), FINITE, ("run", "simulate"), estimands=("distribution",)),
    Answers(("estimate",), ("subset", "product"), ("run", "simulate"), estimands=("joint",),
            methods=("mom", "mle", "em", "newton")),
    Answers(("test",), FINITE, ("run", "simulate"), estimands=("independence",)),
    # a categorical response through its mechanism, raw covariates beside it (:mod:`.regression`)
    Answers(("estimate",), ("subset", "grr", "rr"), ("run",), estimands=("regression",), methods=("mle",)),
)
#: query kinds answered without data
ANALYTIC = analytic(_ANSWERS)


def _finite(mech: Any) -> bool:
    return getattr(mech, "is_finite", False)


# ---- analysis (no data) -------------------------------------------------------------------------
def _moments(model: ModelGraph, q: Query) -> Result:
    t = Truth(model, q.mechanism)
    ch = t.full_channel  # the reports' moments (dummy categories included)
    m = t.value(ch.moments, full=True)
    lab = ch.x_labels
    value = {"Q": as_matrix(m["Q"], lab, lab), "gamma": as_vector(m["gamma"], lab),
             "H": as_matrix(m["H"], lab, lab), "C": as_matrix(m["C"], lab, lab)}
    extras: dict = {"evaluation": t.evaluation(), **dict(ch.facts)}
    return Moments(value, **extras)


def _fisher(model: ModelGraph, q: Query) -> Result:
    t = Truth(model, q.mechanism)
    ch = t.channel
    if not t.declared and ch.p > 5:
        raise BackendError(Diagnostic("B003", "the symbolic Fisher information is too large for p > 5 "
                                      "without a population", hint="declare a population to evaluate it"))
    value = t.value(ch.fisher_theta)
    theta = tuple(f"theta_{lab}" for lab in ch.x_labels[:-1])
    return Fisher(as_matrix(value, theta, theta), I_w=as_matrix(t.value(ch.fisher_w), ch.x_labels, ch.x_labels),
                  parameterization="w = alpha + B theta, theta = w[:p-1] (section III-A)", evaluation=t.evaluation())


def _avar(model: ModelGraph, q: Query) -> Result:
    if q.estimand.kind == "regression":
        return regression_avar(model, q)
    t = Truth(model, q.mechanism)
    V, labels = avar_matrix(t, q)
    kind = se_kind_of(q)
    extras = {"method": q.method.name, "evaluation": t.evaluation(), "se_kind": kind,
              "meaning": Avar.meaning_of(kind) + (": the population one less diag(w) - w w^T"
                                                  if kind == "conditional" else "")}
    numeric = V if isinstance(V, np.ndarray) else (None if V.free_symbols else np.array(V.evalf(17).tolist(), float))
    if numeric is not None:
        eig = np.sort(np.linalg.eigvalsh((numeric + numeric.T) / 2))[::-1]
        extras["trace"] = float(np.trace(numeric))
        extras["eigenvalues"] = [float(x) for x in eig]
        extras["scaled_loss_limit"] = ("n ||w_hat - w||^2 -> sum_i lambda_i Z_i, Z_i iid chi2(1): "
                                       f"mean {float(np.trace(numeric)):.6g}")
    elif hasattr(V, "trace"):
        extras["trace"] = sympy.simplify(V.trace())
    return Avar(as_matrix(V, labels, labels), **extras)


def _coverage(model: ModelGraph, q: Query) -> Result:
    metric = q.metrics[0] if q.metrics else "size"
    t = Truth(model, q.mechanism)
    value = coverage_value(t, metric)
    meaning = {"size": "tau = E[L(A)] (Def. 5)", "mutual_information": "H(X | A) in bits (Def. 6)",
               "prediction": "1 - R(X; A) (Def. 7)"}[metric]
    return Coverage(value, metric=metric, meaning=meaning, evaluation=t.evaluation())


def _leakage(model: ModelGraph, q: Query) -> Result:
    t = Truth(model, q.mechanism)
    value = {m: leakage_value(t, m) for m in q.metrics}
    return Leakage(value, evaluation=t.evaluation(),
                   meaning="size: 1 - tau; mutual_information: I(X; A) in bits; "
                           "prediction: R(X; A) = sum_a max_x Pr(X = x, A = a)")


def _epsilon(model: ModelGraph, q: Query) -> Result:
    ch = Truth(model, q.mechanism).full_channel
    eps = ch.epsilon()
    extras: dict = {}
    if eps is sympy.oo:
        extras["reason"] = ("some report is impossible for one value and possible for another "
                            "(a subset report excludes the categories outside it: "
                            "Pr(A = a | X = x) = 0 for x not in a), so no finite epsilon bounds the ratio")
    elif ch.factors:
        extras["reason"] = "sequential composition: the factors' epsilons add up"
    else:
        extras["reason"] = "max over reports of log(max_x Pr(report | x) / min_x Pr(report | x))"
    subs = parameter_values(model)
    return Epsilon(eps.subs(subs) if subs else eps, **extras)


def _identifiable(model: ModelGraph, q: Query) -> Result:
    ok, reason = channel_in_w(q.mechanism).identifiable()
    return Identifiable(ok, reason=reason)


def _individual(model: ModelGraph, q: Query) -> Result:
    """Size and prediction leakage of one respondent before and after observing the subset
    (subset privacy, section V-B and Fig. 4): size leakage 1 - L = 1 - P(X in S) for S = {x}
    before and S = a after; prediction leakage 1 before (X itself is known) and, after,
    whether the optimal guess argmax_{j in a} P(X = j | A = a) = argmax_{j in a} w_j is x."""
    t = Truth(model, q.mechanism)
    labels = q.mechanism.variable.labels
    w = list(t.w)
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
    return Individual(value, **extras)


#: how each query kind answered without data (:data:`ANALYTIC`) is computed
ANALYSES: dict[str, Callable[[ModelGraph, Query], Result]] = {
    "moments": _moments, "fisher": _fisher, "avar": _avar, "coverage": _coverage, "leakage": _leakage,
    "epsilon": _epsilon, "identifiable": _identifiable, "individual": _individual,
}


# ---- the back end ----------------------------------------------------------------------------
@register
class FiniteBackend:
    """Subset privacy and randomized response: everything a channel can answer."""

    REGISTER_NAME = "finite"
    ANSWERS = _ANSWERS

    def supports(self, query: Query, verb: str) -> bool:
        """Everything its ``ANSWERS`` cover: no finer condition."""
        return any(row.matches(query, verb) for row in self.ANSWERS)

    @on_one_blas_thread   # every matrix here is d x d (a channel, a covariance): BLAS threads only contend
    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        if verb == "simulate" and query.kind in ("estimate", "avar", "test"):
            return simulate_query(model, query, n=options["n"], reps=options["reps"], seed=options.get("seed"))
        kind = query.kind
        if kind in ANALYTIC:
            return ANALYSES[kind](model, query)
        data = options.get("data")
        if data is None:
            raise BackendError(Diagnostic("B002", f"query '{query.name}' needs data"))
        mech_name = query.mechanism.name or query.name
        engine = data.engine_for(mech_name)
        if data.design is not None:
            if query.estimand is not None and query.estimand.kind == "regression":
                weighted = weighted_predictor if item_is_covariate(query) else weighted_regression
                return weighted(query, engine, data.design)
            if kind == "test":
                return weighted_independence(query, engine, data.design)
            return weighted_estimate(query, engine, data.design)
        if query.estimand is not None and query.estimand.kind == "regression":
            return (predictor_on_data if item_is_covariate(query) else regression_on_data)(query, engine)
        if kind == "test":
            counts = count_observations(query.mechanism, engine)
            return independence_on_counts(query, counts, seed=options.get("seed"))
        ch, counts = observations(query.mechanism, engine)
        return estimate_on_counts(query, counts, ch)

    def weighted(self, query: Query) -> str:
        """What of ``query`` has no version with survey weights ("" when it has one:
        :mod:`privspec.backends.finite.weighted`)."""
        if query.kind == "estimate" and query.estimand is not None and query.estimand.kind == "regression":
            return ""       # backends/finite/weighted_regression.py, weighted_predictor.py
        if query.kind == "test":
            return ""       # the design-based Wald test (backends/finite/weighted_independence.py)
        return weighted_supports(query)

    # -- privatize --------------------------------------------------------------------------------
    def privatizes(self, mechanism: Any) -> bool:
        return _finite(mechanism)

    def privatize(self, model: ModelGraph, mechanism: Any, frame, seed: int | None = None, offset: int = 0):
        return privatize_frame(model, mechanism, frame, seed, offset=offset)

