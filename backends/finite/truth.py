"""What every finite query is computed from, once for analysis, run and simulate: the
truth a result is evaluated at (:class:`Truth`: the population w, exact or symbolic, on
the mechanism's channel in w), the asymptotic covariance of an estimand's estimator, the
privacy measures, estimates and independence tests on counts per observation."""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import ModelGraph, Query
from privspec.results.kinds import HypothesisTest
from privspec.results.result import Result
from privspec.results.values import Matrix, TestResult
from privspec.backends.core.channel import Channel
from privspec.backends.core.compile import channel_in_w, channel_of, population_on_channel
from privspec.backends.finite.estimates import conditional_covariance, estimand_map, se_kind_of
from privspec.backends.finite.estimate_plan import as_vector, estimate_plan, estimate_result
from privspec.backends.finite.independence import independence_test
from privspec.backends.finite.joint_independence import between_factors, joint_independence
from privspec.backends.core.populations import parameter_values, population_vector, symbolic_vector

# ---- the truth a result is evaluated at --------------------------------------------------------
class Truth:
    """w for a channel: exact at the declared population, symbolic without one, with the
    parameters that have values substituted.  ``channel`` is the mechanism's channel in w
    (:func:`~privspec.backends.core.compile.channel_in_w`: affine for dummy categories, closed
    forms for the uniform design on many categories); ``w`` is over its categories and
    ``w_full`` over the mechanism's own channel (dummy categories included), for the
    privacy measures, which are the whole channel's."""

    def __init__(self, model: ModelGraph, mech: Any):
        self.model = model
        self.mech = mech
        self.channel = channel_in_w(mech)
        w = population_vector(model, list(mech.variables))
        self.declared = w is not None
        if w is None:
            w = symbolic_vector(real_labels(mech))
        self.w = w
        self.w_full = population_on_channel(mech, w)
        self.subs = parameter_values(model)

    def _uses(self, symbol: sympy.Symbol) -> bool:
        ch = self.channel
        return any(symbol in f.exact_K.free_symbols for f in (ch.factors or (ch,))
                   if isinstance(f.exact_K, sympy.MatrixBase))

    @property
    def full_channel(self) -> Channel:
        """The mechanism's own channel (on the enlarged domain for dummy categories)."""
        return self.channel if self.w_full is self.w else channel_of(self.mech)

    @property
    def p(self) -> int:
        return self.channel.p

    def numeric_channel(self) -> Channel:
        """The channel in w with the parameters' values in (for floating-point evaluation)."""
        return self.channel.at(self.subs) if self.subs else self.channel

    @property
    def exact_ok(self) -> bool:
        return self.channel.exact_ok()

    def numeric_w(self, w: Any = None) -> np.ndarray:
        if not self.declared:
            raise BackendError(Diagnostic("B001", "this needs a population: no population is declared for "
                                          f"{', '.join(v.name for v in self.mech.variables)}",
                                          hint="declare one, e.g. population X ~ categorical(...)"))
        return np.array([float(x) for x in (self.w if w is None else w)], dtype=float)

    def evaluation(self) -> str:
        params = sorted(str(p.symbol) for p in self.model.parameters.values()
                        if p.value is None and self._uses(p.symbol))
        in_params = f", symbolic in {', '.join(params)}" if params else ""
        return self.channel.evaluation(self.exact_ok, self.declared) + \
            (in_params if self.exact_ok or not self.declared else "")

    def value(self, fn, full: bool = False, numeric: bool = False) -> Any:
        """fn(w) exactly when feasible, else in floating point; parameters with values substituted.
        ``full``: w over the mechanism's own channel (dummy categories of Appendix II included);
        ``numeric``: in floating point at the declared population (``fn`` then a method of a
        channel with the parameters' values in: :meth:`numeric_channel`)."""
        w = self.w_full if full else self.w
        if self.declared and (numeric or not self.exact_ok or w.has(sympy.Float)):  # a population in floats
            return fn(self.numeric_w(w))
        if not self.declared and self.p > self.channel.symbolic_limit:
            raise BackendError(Diagnostic("B006", f"results symbolic in w are limited to p <= {self.channel.symbolic_limit} "
                                          f"categories; this mechanism has {self.p}",
                                          hint="declare a population to evaluate exactly at it"))
        out = fn(w)
        if self.subs and hasattr(out, "subs"):
            out = out.subs(self.subs)
        return out


def real_labels(mech: Any) -> tuple[str, ...]:
    """The categories w is over (joint ones for products; dummies excluded)."""
    return channel_in_w(mech).x_labels


def as_matrix(data: Any, rows, cols) -> Matrix:
    """A result matrix with these row and column labels, of sympy or numpy values."""
    if isinstance(data, np.ndarray):
        return Matrix(tuple(rows), tuple(cols), data)
    return Matrix(tuple(rows), tuple(cols), sympy.Matrix(data))


# ---- shared computations (analysis, run and simulate use the same ones) ---------------------------
def avar_matrix(t: Truth, q: Query, numeric: bool = False) -> tuple[Any, tuple[str, ...]]:
    """The asymptotic covariance of the estimand's estimator at the truth, and its labels
    (``numeric``: in floating point at the declared population, never exactly)."""
    # in w: affine for dummy categories, closed forms for the uniform design
    ch = t.numeric_channel() if numeric and t.declared else t.channel
    if q.method.name == "mom":
        fn = ch.avar_mom
    else:  # mle, em, newton and one_step share the MLE's limit (Theorems 3 and 5)
        if not t.declared and ch.p > 3:
            raise BackendError(Diagnostic("B003", f"the MLE covariance symbolic in w is too large for p = {ch.p} "
                                          "(it inverts a matrix of rational functions)",
                                          hint="declare a population to evaluate it exactly there"))
        fn = ch.avar_mle
    return _to_estimand(t.value(fn, numeric=numeric), ch.x_labels, t, q)


def _to_estimand(V: Any, labels: tuple[str, ...], t: Truth, q: Query) -> tuple[Any, tuple[str, ...]]:
    """Sums over combined categories taken (a marginal of a combined or product variable, or a
    joint of some of its variables: :func:`~privspec.backends.finite.estimates.estimand_map`)."""
    mech = q.mechanism
    exact = not isinstance(V, np.ndarray)
    w = sympy.Matrix(list(t.w)) if exact else np.array([float(x) for x in t.w])
    M, labels = estimand_map(labels, mech, q)
    if M is not None:
        Mx = sympy.Matrix(M.astype(int)) if exact else M
        V = Mx * V * Mx.T if exact else M @ V @ M.T
        w = Mx * w if exact else M @ w
    if se_kind_of(q) == "conditional":  # privacy noise only: less the multinomial covariance of X
        V = (V - (sympy.diag(*list(w)) - w * w.T)).applyfunc(sympy.simplify) if exact \
            else conditional_covariance(V, w)
    return V, labels


def coverage_value(t: Truth, metric: str) -> Any:
    """Privacy coverage of the mechanism's whole channel (dummy categories included)."""
    ch = t.full_channel
    if metric == "size":
        if not ch.is_set_valued:
            raise BackendError(Diagnostic("B004", "size coverage needs set-valued reports"))
        return t.value(ch.size_coverage, full=True)
    if metric == "mutual_information":
        return t.value(lambda w: ch.entropy(w) - ch.mutual_information(w), full=True)
    return 1 - t.value(ch.prediction_leakage, full=True)


def leakage_value(t: Truth, metric: str) -> Any:
    if metric == "size":
        return 1 - coverage_value(t, "size")
    ch = t.full_channel
    if metric == "mutual_information":
        return t.value(ch.mutual_information, full=True)
    return t.value(ch.prediction_leakage, full=True)


def estimate_on_counts(q: Query, counts: np.ndarray, ch: Channel | None = None) -> Result:
    """Fit the query's estimator on counts per observation of ``ch`` (default: the
    mechanism's channel), with standard errors of the kind asked and intervals: the plan of
    the estimate computed on the counts (:mod:`privspec.backends.finite.estimate_plan`; a run
    from a kept plan gives the same result)."""
    return estimate_result(estimate_plan(q, channel_of(q.mechanism) if ch is None else ch), counts)


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
    :data:`~privspec.backends.finite.independence.DEFAULT_DRAWS` draws (exact in size); the
    extras say which calibration was used, with how many draws and which seed.  Two variables
    that are not two whole factors of the product (one factor's parts) are tested on their
    joint instead (:mod:`privspec.backends.finite.joint_independence`).
    """
    if not between_factors(q):
        # both variables in one factor, or a part of a combined variable: no report table to test
        return joint_independence(q, counts)
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
    return HypothesisTest(TestResult(out.method, out.statistic, out.df, out.p_value), **extras)
