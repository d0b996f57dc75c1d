"""The criteria of a design comparison and their evaluation for one candidate.

Every criterion a ``compare`` block can rank by (:data:`privspec.model.query_kinds.CRITERIA`
names them for the language, with their side and direction) is one :class:`Criterion` of
:data:`REGISTRY` here: how its value at n is computed (``analytic``, by the query that
already answers it: ``avar`` for the utility criteria, ``coverage``/``leakage``/``epsilon``
for privacy), how it is read off replications of ``simulate`` where it is a sampling
quantity (``simulated``), and the fewest respondents that meet a target on it where it
depends on n (``sample_size``). Adding a criterion is one :class:`Criterion` and its line in
:data:`REGISTRY` (and its name in the language's list).

An :class:`Evaluation` is one candidate at one model, memoized (the avar is computed once);
a criterion that does not apply raises :class:`NotApplicable` with the reason.

Examples
--------
>>> REGISTRY["max_se"].side, REGISTRY["max_se"].smaller_is_better, REGISTRY["efficiency"].smaller_is_better
('utility', True, False)
>>> REGISTRY["epsilon"].better_than(1.0, 2.0), REGISTRY["coverage"].better_than(0.2, 0.6)
(True, False)
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import sympy
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import Diagnostic, PrivspecError
from privspec.model.graph import Estimand, Law, Method, ModelGraph, Plan, Query, Target
from privspec.model.query_kinds import CRITERIA, FINITE, INTERVAL, family_of
from privspec.results.comparison import CriterionInfo, StandardErrors
from privspec.results.result import Result
from privspec.results.values import Matrix
from privspec.backends import backend_for
from privspec.backends.core.populations import population_vector, with_population
from privspec.backends.design import planning
from privspec.backends.finite.joint_independence import between_factors, wald_effect
from privspec.backends.finite.truth import Truth, report_table
from privspec.backends.interval.laws import law_distribution, population_law
from privspec.backends.rr.two_group_plans import estimand_truth as two_group_truth
from privspec.backends.rr.two_group_plans import trait_shares as two_group_trait


class NotApplicable(Exception):
    """A criterion that does not apply to a candidate; the message says why, and
    ``diagnostic`` is the back end's own where one refused (a planning query fails with it)."""

    def __init__(self, reason: str, diagnostic: Diagnostic | None = None):
        super().__init__(reason)
        self.diagnostic = diagnostic


def not_applicable(e: PrivspecError) -> NotApplicable:
    """A back end's refusal as a criterion that does not apply (its first diagnostic kept)."""
    return NotApplicable(reason(e), e.diagnostics[0] if e.diagnostics else None)


# ---- one candidate's criteria ------------------------------------------------------------------------
@dataclasses.dataclass
class Candidate:
    """A candidate mechanism with its estimator, and what the back ends say about it."""

    name: str
    mechanism: Any
    method: Method
    estimand: Estimand

    def query(self, kind: str, **kw: Any) -> Query:
        # a multi-attribute oracle's leakage is of the estimand's attribute
        needs_estimand = kind in ("avar", "estimate") or (kind == "leakage" and family_of(self.mechanism) == "multi_oracle")
        return Query(f"{self.name}.{kind}", kind, mechanism=self.mechanism,
                     estimand=self.estimand if needs_estimand else None,
                     method=self.method if needs_estimand else None, **kw)


def answer(model: ModelGraph, q: Query, verb: str = "analyze", **options: Any) -> Result:
    backend = backend_for(q, verb)
    if backend is None:
        raise NotApplicable(f"no back end answers {q.kind} for this mechanism")
    try:
        return backend.answer(model, q, verb, **options)
    except PrivspecError as e:
        raise not_applicable(e) from None
    except (ValueError, TypeError, np.linalg.LinAlgError, ZeroDivisionError) as e:
        raise NotApplicable(str(e)) from None


def reason(e: PrivspecError) -> str:
    d = getattr(e, "diagnostics", None) or [getattr(e, "diagnostic", None)]
    d = [x for x in d if x is not None]
    if d:
        return f"{d[0].message} [{d[0].code}]"
    return str(e)


def number(x: Any) -> float:
    if isinstance(x, sympy.Basic):
        if x.free_symbols:
            raise NotApplicable(f"symbolic in {', '.join(sorted(map(str, x.free_symbols)))}: give the parameters "
                                "values, or see the inverse design")
        if x is sympy.oo:
            return math.inf
        return float(x)
    return float(x)


def avar_of(model: ModelGraph, cand: Candidate) -> tuple[np.ndarray, tuple[str, ...], float]:
    """The candidate's asymptotic covariance (n Var), its labels, and the squared bias of
    its limit (0 but for estimators that do not converge to the estimand), from ``avar``."""
    r = answer(model, cand.query("avar"), simplified=False)  # its numbers only
    value = r.value
    bias2 = float(r.bias_squared or 0.0)
    if isinstance(value, Matrix):
        data = value.data
        if isinstance(data, sympy.MatrixBase):
            if data.free_symbols:
                number(data[0, 0] + sum(data))  # says which symbols
            data = np.array(data.evalf(17).tolist(), dtype=float)
        return np.asarray(data, dtype=float), tuple(value.rows), bias2
    return np.array([[number(value)]]), (cand.estimand.kind,), bias2


def population_of(model: ModelGraph, cand: Candidate) -> np.ndarray:
    """The estimand's truth, cell by cell; a two-group design's ``(pi, 1 - pi)`` (for cdm the
    honest carriers, below the trait's share by the cheaters), or its latent share."""
    if family_of(cand.mechanism) == "two_group":
        try:
            return two_group_truth(model, cand.query("avar"))
        except PrivspecError as e:
            raise not_applicable(e) from None
    w = population_vector(model, list(cand.estimand.variables))
    if w is None:
        raise NotApplicable("no population is declared for " + ", ".join(v.name for v in cand.estimand.variables))
    return np.array([number(x) for x in w], dtype=float)


class Evaluation:
    """Every criterion of one candidate at one model (memoized: the avar is computed once)."""

    def __init__(self, model: ModelGraph, cand: Candidate, plan: Plan):
        self.model, self.cand, self.plan = model, cand, plan
        self.alpha = float(plan.alpha)
        self._cache: dict[str, Any] = {}
        #: why nothing can be computed (a free parameter), or None
        self.free: NotApplicable | None = None

    def memo(self, key: str, fn: Callable[[], Any]) -> Any:
        """``fn()``, computed once per key; a criterion that does not apply is remembered too."""
        if self.free is not None:
            raise self.free
        if key not in self._cache:
            try:
                self._cache[key] = fn()
            except NotApplicable as e:
                self._cache[key] = e
            except PrivspecError as e:
                self._cache[key] = not_applicable(e)
            except (ValueError, np.linalg.LinAlgError, ZeroDivisionError) as e:
                self._cache[key] = NotApplicable(str(e))
        got = self._cache[key]
        if isinstance(got, NotApplicable):
            raise got
        return got

    # -- utility ----------------------------------------------------------------------------------
    def avar(self) -> tuple[np.ndarray, tuple[str, ...]]:
        return self.memo("avar", lambda: avar_of(self.model, self.cand))[:2]

    def bias_squared(self) -> float:
        return self.memo("avar", lambda: avar_of(self.model, self.cand))[2]

    def diag(self) -> np.ndarray:
        d = np.maximum(np.diag(self.avar()[0]), 0.0)
        if not np.all(np.isfinite(d)):
            raise NotApplicable("the asymptotic variance is infinite: the estimator is not root-n consistent "
                                "for this design")
        return d

    def at(self, criterion: str, n: int) -> float:
        """The criterion's value at ``n`` respondents (privacy criteria do not depend on n)."""
        return REGISTRY[criterion].analytic(self, n)

    def efficiency(self) -> float:
        """The efficient estimator's asymptotic variance over this one's (traces)."""
        est = self.cand.estimand
        mine = self.diag().sum()
        if est.kind in ("distribution", "joint"):
            best = Method("mle")
        elif self.cand.method.name == "mle":
            raise NotApplicable("a parametric fit: its efficiency is relative to its model (compare max_se)")
        else:
            best = Method("npmle")   # attains the information bound (Theorem 2's proof)
        if best.name == self.cand.method.name and not self.cand.method.args:
            return 1.0
        other = dataclasses.replace(self.cand, method=best)
        try:
            bound = np.diag(avar_of(self.model, other)[0]).sum()
        except NotApplicable as e:
            raise NotApplicable(f"the efficient estimator's variance ({best.name}): {e}") from None
        return float(bound / mine) if mine > 0 else math.nan

    # -- relative precision -----------------------------------------------------------------------
    def truth(self) -> np.ndarray:
        """The estimand's value at the population, cell by cell in the avar's order: the
        shares of a distribution or a joint, the mean of a mean (NotApplicable otherwise)."""
        return self.memo("truth", self._truth)

    def _truth(self) -> np.ndarray:
        est = self.cand.estimand
        if est.kind in ("distribution", "joint", "cheaters", "honesty"):
            return population_of(self.model, self.cand)
        if est.kind == "mean":
            law = population_law(self.model, est.variables[0])
            if law is None:
                raise NotApplicable(f"no population is declared for {est.variables[0].name}")
            return np.array([float(law_distribution(law).mean())])
        raise NotApplicable(f"a coefficient of variation is defined for shares and means, not {est.kind}()")

    def known_truth(self) -> np.ndarray | None:
        """:meth:`truth`, or None where it does not apply."""
        try:
            return self.truth()
        except NotApplicable:
            return None

    def cv(self, n: int) -> np.ndarray:
        """The coefficient of variation ``SE_j / |truth_j|`` of each cell at ``n`` (nan where
        the truth is 0)."""
        try:
            return planning.coefficients_of_variation(self.diag(), self.truth(), n)
        except ValueError as e:      # the avar's cells are not the population's
            raise NotApplicable(str(e)) from None

    # -- planning ---------------------------------------------------------------------------------
    def power_function(self) -> Callable[[np.ndarray], np.ndarray]:
        """Power of the plan's test as a function of n (vectorized)."""
        return self.memo("power", self._power_function)

    def _power_function(self) -> Callable[[np.ndarray], np.ndarray]:
        test, alpha = self.plan.test, self.alpha
        if test is None:
            raise NotApplicable("no test to power: add test = ... to the settings")
        if test.kind == "independence":
            within = self.within_factor_effect(test.variables)
            if within is not None:      # the Wald test on the MoM joint (variables sharing a factor)
                effect, df = within
                return lambda n: np.asarray(planning.power_wald(n, effect, df, alpha), dtype=float)
            joint = self.report_joint(test.variables)
            return lambda n: np.asarray(planning.power_independence(n, joint, alpha), dtype=float)
        V, labels = self.avar()
        if test.label not in labels:
            raise NotApplicable(f"this estimate has no cell {test.label}")
        k = labels.index(test.label)
        var = float(V[k, k])
        if test.kind == "coefficient":
            # the Wald test of beta_k = b0, beta_k the declared coefficient
            delta = float(dict(self.cand.estimand.coefficients)[test.label]) - float(test.value)
            return lambda n: np.asarray(planning.power_proportion(n, delta, var, alpha), dtype=float)
        if test.kind == "proportion":
            w = population_of(self.model, self.cand)
            delta = float(w[k]) - float(test.value)
            return lambda n: np.asarray(planning.power_proportion(n, delta, var, alpha), dtype=float)
        # the second group differs by delta: its variance is at its own population
        delta = float(test.value)
        w2 = planning.shifted_shares(population_of(self.model, self.cand), k, delta)
        if family_of(self.cand.mechanism) == "two_group":   # w2 is of the design's pi (cdm: the honest carriers)
            w2 = two_group_trait(self.model, self.cand.mechanism, w2)
        names = [c for v in self.cand.estimand.variables for c in v.components()]
        second = with_population(self.model, names, Law("categorical", probs=tuple(sympy.Float(x, 17) for x in w2)))
        var2 = float(Evaluation(second, self.cand, self.plan).avar()[0][k, k])
        return lambda n: np.asarray(planning.power_difference(n, delta, var, var2, alpha), dtype=float)

    def within_factor_effect(self, variables: Sequence[str]) -> tuple[float, int] | None:
        """The Wald test's noncentrality per respondent and degrees of freedom where the two
        variables are not two whole factors of the product (they share one); None where they
        are (the report-table test, :meth:`report_joint`)."""
        mech = self.cand.mechanism
        if family_of(mech) not in ("product", "rr_product"):
            raise NotApplicable("independence is tested on the reports of a product mechanism")
        vs = tuple(self.model.variables[v] for v in variables)
        if between_factors(Query("power", "test", mechanism=mech, estimand=Estimand("independence", vs))):
            return None
        t = Truth(self.model, mech)
        if t.w_full is not t.w:
            raise NotApplicable("the power of a test within a factor with dummy categories (min_coverage)")
        return wald_effect(mech, t.numeric_w(), *vs, subs=t.subs)

    def report_joint(self, variables: Sequence[str]) -> np.ndarray:
        """``P(A = a, B = b)``: the table of two factors' reports at the population."""
        mech = self.cand.mechanism
        if family_of(mech) not in ("product", "rr_product"):
            raise NotApplicable("independence is tested on the reports of a product mechanism")
        t = Truth(self.model, mech)
        ch = t.full_channel
        lam = np.maximum((ch.at(t.subs) if t.subs else ch).Kn @ t.numeric_w(t.w_full), 0.0)
        vs = tuple(self.model.variables[v] for v in variables)
        q = Query("power", "test", mechanism=mech, estimand=Estimand("independence", vs))
        try:
            return np.asarray(report_table(q, lam / lam.sum())[2], dtype=float)
        except StopIteration:
            raise NotApplicable(f"no single factor observes each of {', '.join(variables)}") from None

    def sample_size(self, target: Target) -> int | None:
        """The fewest respondents meeting a utility target (None: not within
        :data:`privspec.backends.design.planning.N_MAX`, 10^9)."""
        needs = REGISTRY[target.criterion].sample_size
        if needs is None:
            raise NotApplicable(f"{target.criterion} does not depend on n")
        value = float(target.value)
        try:
            return needs(self, value)
        except ValueError as e:
            raise NotApplicable(str(e)) from None


def set_valued(mech: Any) -> bool:
    fam = getattr(mech, "family", None)
    if fam in ("subset", "interval"):
        return True
    return fam == "product" and all(getattr(f, "family", None) == "subset" for f in mech.factors)


def worst_posterior(K: np.ndarray, w: np.ndarray) -> float:
    """``max_o max_x Pr(X = x | O = o)`` over the reports ``o`` that can occur: what the
    most revealing report tells about one respondent (1: some report discloses a value).

    Examples
    --------
    >>> import numpy as np
    >>> p, q = np.e / (np.e + 1), 1 / (np.e + 1)       # Warner's RR, epsilon = 1
    >>> round(worst_posterior(np.array([[p, q], [q, p]]), np.array([0.5, 0.5])), 4)
    0.7311
    """
    J = np.asarray(K, dtype=float) * np.asarray(w, dtype=float)[None, :]
    lam = J.sum(axis=1)
    on = lam > 0
    return float((J[on].max(axis=1) / lam[on]).max())



# ---- the criteria ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Replications:
    """What ``simulate`` of a candidate's estimate gives the simulated criteria: ``n Cov`` of
    the replications' estimates (``full``: the whole matrix, else only its diagonal), their
    number ``R``, the mean squared error summed over cells with its Monte Carlo error (None
    where the simulation keeps no squared errors), the Wald quantile ``z`` and the estimand's
    true value per cell (``truth``, for the coefficient of variation)."""

    cov: np.ndarray
    full: bool
    R: int
    mse: tuple[float, float] | None
    z: float
    #: the estimand's value per cell (the coefficient of variation's denominator), where known
    truth: np.ndarray | None = None

    @property
    def variances(self) -> np.ndarray:
        return np.maximum(np.diag(self.cov), 0.0)

    @property
    def largest(self) -> float:
        """The largest of the variances (of the cell with the largest standard error)."""
        d = self.variances
        return d[int(np.argmax(d))]


@dataclass(frozen=True)
class Criterion:
    """One criterion of a comparison: its ``name`` (the language's, whose ``side``, direction
    and meaning :data:`privspec.model.query_kinds.CRITERIA` holds), its value at n
    (``analytic(evaluation, n)``), its value and Monte Carlo error from replications where
    it is a sampling quantity (``simulated(replications, n)``; None: the simulation does not
    give it, ``not_simulated`` says why a criterion without one has none), and the fewest
    respondents meeting a target value where it depends on n (``sample_size(evaluation,
    value)``). ``diagonal_note`` is said of a simulated value computed from the variances
    alone where the simulation keeps no covariances."""

    name: str
    analytic: Callable[[Evaluation, int], float]
    simulated: Callable[[Replications, int], tuple[float, float] | None] | None = None
    sample_size: Callable[[Evaluation, float], int | None] | None = None
    not_simulated: str = "analytic: not a sampling quantity"
    diagonal_note: str | None = None

    @property
    def side(self) -> str:
        """``utility`` or ``privacy``."""
        return CRITERIA[self.name].side

    @property
    def better(self) -> str:
        """``lower`` or ``higher``: which way is better."""
        return CRITERIA[self.name].better

    @property
    def smaller_is_better(self) -> bool:
        return self.better == "lower"

    @property
    def meaning(self) -> str:
        """What the criterion is, in words."""
        return CRITERIA[self.name].doc

    @property
    def info(self) -> CriterionInfo:
        """What a comparison document says of the criterion: side, direction, meaning."""
        return CriterionInfo(self.side, self.better, self.meaning)

    def better_than(self, a: float, b: float) -> bool:
        """Whether ``a`` is strictly better than ``b``."""
        return a < b if self.smaller_is_better else a > b


def _ci_z(alpha: float) -> float:
    return float(scipy.special.ndtri(1 - alpha / 2))   # the normal quantile, without scipy.stats's import


def _avar_max(ev: Evaluation, n: int) -> float:
    return float(ev.diag().max())


def _max_se(ev: Evaluation, n: int) -> float:
    return float(planning.standard_errors(ev.diag(), n).max())


def _ci_width(ev: Evaluation, n: int) -> float:
    return float(2 * _ci_z(ev.alpha) * planning.standard_errors(ev.diag(), n).max())


def _max_cv(ev: Evaluation, n: int) -> float:
    cv = ev.cv(n)
    if not np.any(np.isfinite(cv)):
        raise NotApplicable("every cell's value is 0: a coefficient of variation needs a nonzero value")
    return float(np.nanmax(cv))


def _cv_simulated(r: Replications, n: int) -> tuple[float, float] | None:
    # SE_j / w_j of the cell with the largest one; a sample standard deviation's relative
    # error is 1 / sqrt(2 (R - 1)) (normal theory), and w_j is known
    if r.truth is None or np.shape(r.truth) != r.variances.shape or not np.any(r.truth != 0):
        return None
    cv = float(np.nanmax(planning.coefficients_of_variation(r.variances, r.truth, n)))
    return cv, cv / math.sqrt(2 * (r.R - 1))


def _n_for_max_cv(ev: Evaluation, value: float) -> int | None:
    return planning.n_for_max_cv(ev.diag(), ev.truth(), value, n_max=planning.N_MAX)


def cv_cells(ev: Evaluation, n: int) -> StandardErrors | None:
    """The candidate's coefficient of variation per cell at ``n`` (None for a zero share);
    None where it does not apply."""
    try:
        cv = ev.cv(n)
        labels = ev.avar()[1]
    except NotApplicable:
        return None
    return StandardErrors(list(labels), [float(x) if np.isfinite(x) else None for x in cv])


def cv_flags(ev: Evaluation, targets: Sequence[Target], n: int) -> list[str]:
    """Each cell failing a ``max_cv`` target at ``n``, in words, with the ``n`` it needs alone:
    ``CV of Amer-Indian-Eskimo is 126% at n = 1,000, above the publication rule 30%; it
    needs n = 17,690``."""
    rules = [float(t.value) for t in targets if t.criterion == "max_cv"]
    if not rules:
        return []
    try:
        cv, labels, diag, truth = ev.cv(n), ev.avar()[1], ev.diag(), ev.truth()
    except NotApplicable:
        return []
    out = []
    for c in rules:
        for j in np.flatnonzero(np.nan_to_num(cv, nan=-1.0) > c):
            needs = planning.n_for_max_cv(diag[j:j + 1], truth[j:j + 1], c, n_max=planning.N_MAX)
            where = f"it needs n = {needs:,}" if needs is not None else \
                f"no n up to {planning.N_MAX:,} meets it"
            out.append(f"CV of {labels[j]} is {100 * cv[j]:.3g}% at n = {n:,}, above the publication rule "
                       f"{100 * c:.3g}%; {where}")
    return out


def _power(ev: Evaluation, n: int) -> float:
    try:
        return float(ev.power_function()(np.array([n]))[0])
    except ValueError as e:  # e.g. an estimate with no variance
        raise NotApplicable(str(e)) from None


def _trace_simulated(r: Replications, n: int) -> tuple[float, float]:
    # Var of a sample variance s^2 (normal theory): 2 sigma^4 / (R - 1); of tr S: 2 tr(Sigma^2) / (R - 1)
    d = r.variances
    return float(d.sum()), math.sqrt(2 * (float(np.sum(r.cov * r.cov)) if r.full else float(np.sum(d * d))) / (r.R - 1))


def _se_simulated(r: Replications, n: int) -> tuple[float, float]:
    return math.sqrt(r.largest / n), math.sqrt(r.largest / n) / math.sqrt(2 * (r.R - 1))


def _width_simulated(r: Replications, n: int) -> tuple[float, float]:
    return 2 * r.z * math.sqrt(r.largest / n), 2 * r.z * math.sqrt(r.largest / n) / math.sqrt(2 * (r.R - 1))


def _n_for_power(ev: Evaluation, value: float) -> int | None:
    fn = ev.power_function()
    return planning.n_for_power(lambda n: float(fn(np.array([n]))[0]), value, n_max=planning.N_MAX)


def _epsilon(ev: Evaluation, n: int) -> float:
    return ev.memo("epsilon", lambda: number(answer(ev.model, ev.cand.query("epsilon")).value))


def _individual(ev: Evaluation, n: int) -> float:
    def worst() -> float:
        mech = ev.cand.mechanism
        if family_of(mech) not in FINITE:
            return _guess(ev, "individual")
        t = Truth(ev.model, mech)
        ch = t.full_channel
        w = t.numeric_w(t.w_full)
        K = ch.at(t.subs).Kn if t.subs else ch.Kn
        return worst_posterior(K, w)

    return ev.memo("individual", worst)


def _guess(ev: Evaluation, metric: str) -> float:
    """``prediction`` or ``individual`` of a mechanism without a channel (a frequency oracle,
    an interval design): the back end's ``leakage`` query, with the plan (an interval
    design's tolerance)."""
    r = answer(ev.model, ev.cand.query("leakage", metrics=(metric,), plan=ev.plan))
    return number(r.value[metric])


def _leakage(kind: str, metric: str) -> Callable[[Evaluation, int], float]:
    """A privacy metric of a ``coverage`` or ``leakage`` query on the candidate's mechanism."""
    def leak(ev: Evaluation) -> float:
        mech = ev.cand.mechanism
        if metric == "prediction" and family_of(mech) not in FINITE:
            return _guess(ev, metric)
        if family_of(mech) in ("oracle", "multi_oracle"):
            raise NotApplicable(f"{metric} is computed from a channel's report probabilities; a frequency "
                                f"oracle's reports ({mech.protocol}: bit vectors, hashes, Hadamard indices) have no "
                                "channel here: compare it on prediction or epsilon")
        if metric != "size" and family_of(mech) in INTERVAL:
            raise NotApplicable(f"{metric} is computed for finite mechanisms")
        if metric == "size" and not set_valued(mech):
            raise NotApplicable("reports are single categories: size coverage is for set-valued reports "
                                "(subset and interval mechanisms)")
        r = answer(ev.model, ev.cand.query(kind, metrics=(metric,)))
        value = r.value[metric] if isinstance(r.value, dict) else r.value
        return number(value)

    return lambda ev, n: ev.memo(f"{kind} {metric}", lambda: leak(ev))


#: every criterion a comparison evaluates, by name (the language's names, in its order)
REGISTRY: dict[str, Criterion] = {c.name: c for c in (
    Criterion("avar_trace", lambda ev, n: float(ev.diag().sum()), _trace_simulated,
              diagonal_note="error from the variances alone (the simulation keeps no covariances)"),
    Criterion("avar_max", _avar_max, lambda r, n: (float(r.largest), float(r.largest) * math.sqrt(2 / (r.R - 1)))),
    Criterion("max_se", _max_se, _se_simulated,
              lambda ev, t: planning.n_for_max_se(ev.diag(), t, n_max=planning.N_MAX)),
    Criterion("ci_width", _ci_width, _width_simulated,
              lambda ev, t: planning.n_for_ci_width(ev.diag(), t, ev.alpha, n_max=planning.N_MAX)),
    Criterion("max_cv", _max_cv, _cv_simulated, _n_for_max_cv),
    Criterion("mse", lambda ev, n: float(ev.diag().sum() / n + ev.bias_squared()), lambda r, n: r.mse),
    Criterion("efficiency", lambda ev, n: ev.memo("efficiency", ev.efficiency),
              not_simulated="a ratio of asymptotic variances"),
    Criterion("power", _power, sample_size=_n_for_power),
    Criterion("coverage", _leakage("coverage", "size")),
    Criterion("size", _leakage("leakage", "size")),
    Criterion("mutual_information", _leakage("leakage", "mutual_information")),
    Criterion("prediction", _leakage("leakage", "prediction")),
    Criterion("individual", _individual),
    Criterion("epsilon", _epsilon),
)}
