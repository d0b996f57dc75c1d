"""Estimates of a finite mechanism's distribution with their standard errors and intervals.

One path for ``run`` and ``simulate``: :func:`fit_estimates` fits the query's estimator on
counts per observation of many replications at once (``run`` has one, :func:`fit_estimate`;
the EM fits and profile intervals are batched across them), refuses a fit that is not an
answer, and attaches what follows.  It fits through the query's plan (:class:`EstimatePlan`,
made once with the model by :func:`estimate_plan`; numbers only, so a later process fits it
by :func:`fit_planned` without the model or sympy: :mod:`privspec.backends.finite.estimate_plan`):

* the covariance of the kind asked (the ``se`` option of the estimator):
  ``population`` (the default) is sampling plus privacy noise, ``avar / n``;
  ``conditional`` is privacy noise alone, given the respondents' true values (the
  question about the table collected; multi-freq-ldpy calls it ``VAR_Pure``).  For every
  regular, asymptotically linear estimator of w (MoM, the MLE and its one-step and
  Newton forms, with or without dummy categories) the influence function psi(A) has
  ``E[psi(A) | X = x] = e_x - w`` (differentiate ``E_w psi = 0`` along the simplex), so
  ``n Cov(w_hat | X) -> avar - (diag(w) - w w^T)``: the population covariance less the
  multinomial covariance of the true values.  Marginals are the same linear image of both.
* a confidence interval per category that respects ``[0, 1]``: for the MLE, the profile
  likelihood interval ``{c : 2 (l_hat - max_{w_j = c} l(w)) <= chi2_1(level)}``
  (:mod:`privspec.backends.finite.profile`; its lower end is 0 when the data cannot rule
  out an empty category, where a Wald interval has the wrong width and the estimate is
  biased away from 0); for MoM and the one-step estimator (linear or nearly so,
  unconstrained), the Wald interval clipped to ``[0, 1]``.  Quantiles come from
  :mod:`scipy.stats`.

Refusals (each a clear error, never a printed non-answer): an iterative fit that did not
reach its optimum (B020); an MLE that the data do not determine (D020, checked exactly:
the set of maximizers is a polytope ``{w >= 0 : K_obs w = lambda_hat, sum w = 1}``, and
the estimand is determined when a generic linear functional of it is constant there, two
linear programs); a one-step estimate whose Hessian is singular (Assumption 2).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, DataError, Diagnostic, PrivspecError
from privspec.results.values import Inference
from privspec.backends.core.channel import B_matrix, Channel
from privspec.backends.core.batched import em_fits
from privspec.backends.core.estimators import AFFINE_METHODS, Fit, em, estimate
from privspec.backends.core.projections import SCORE_CI, WALD_CI, score_interval, wald_interval
from privspec.backends.finite.profile import critical_table, profile_intervals

if TYPE_CHECKING:  # start-up: the model graph imports sympy; a planned fit needs neither
    from privspec.model.graph import Query, Variable

#: estimators whose intervals come from the profile likelihood
MLE_FAMILY = ("mle", "em", "newton")
#: at most this many EM runs' worth of work (estimand cells x observations x categories) for
#: profile intervals; beyond, the clipped Wald interval (and the result says so)
PROFILE_WORK_LIMIT = 5e8


@dataclass(frozen=True)
class FiniteEstimate:
    """An estimate over the estimand's categories with its covariance and intervals.

    ``V`` is ``n`` times the covariance of the kind ``se_kind`` (None if singular), ``ci`` a
    ``(k, 2)`` array of interval ends at ``level`` made by ``ci_method``.
    """

    w: np.ndarray
    V: np.ndarray | None
    labels: tuple[str, ...]
    fit: Fit
    se_kind: str
    ci: np.ndarray | None
    ci_method: str
    level: float
    notes: tuple[str, ...] = ()
    #: ``level -> (k, 2)`` intervals by ``ci_method`` at any level (``ci`` is its value at ``level``)
    intervals: Callable[[float], np.ndarray | None] | None = field(default=None, compare=False, repr=False)

    @property
    def se(self) -> np.ndarray | None:
        return None if self.V is None else np.sqrt(np.maximum(np.diag(self.V), 0.0) / self.fit.n)

    @property
    def cov(self) -> np.ndarray | None:
        """The covariance of the estimate, ``V / n`` (its diagonal is ``se ** 2``)."""
        return None if self.V is None else self.V / self.fit.n


def se_kind_of(q: Query) -> str:
    return str(q.method.options.get("se", "population")) if q.method is not None else "population"


def conditional_covariance(V: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``V - (diag(w) - w w^T)``: the privacy-noise part of a population covariance ``V``
    (n times the covariance) of an estimator of the distribution ``w``.

    Examples
    --------
    >>> V = np.array([[0.5, -0.5], [-0.5, 0.5]])     # n Cov of w_hat, two categories
    >>> conditional_covariance(V, np.array([0.5, 0.5])).tolist()
    [[0.25, -0.25], [-0.25, 0.25]]
    """
    w = np.asarray(w, dtype=float)
    return V - (np.diag(w) - np.outer(w, w))


def marginal_map(ch_labels: tuple[str, ...], mech: Any, variable: Variable) -> np.ndarray | None:
    """The 0/1 matrix summing the channel's categories into ``variable``'s (None: identity)."""
    if len(ch_labels) == variable.p and tuple(ch_labels) == variable.labels:
        return None
    comps = components_of(mech)
    wanted = list(variable.components())
    # each channel category is a '.'-joined tuple over comps
    M = np.zeros((variable.p, len(ch_labels)))
    pos = [comps.index(c) for c in wanted]
    for j, lab in enumerate(ch_labels):
        parts = lab.split(".")
        if len(parts) != len(comps):
            return None
        key = ".".join(parts[k] for k in pos)
        M[variable.labels.index(key), j] = 1.0
    return M


# ---- the fit -------------------------------------------------------------------------------------
def _refuse_unconverged(fit: Fit, method: str) -> None:
    if fit.converged or math.isnan(fit.kkt):
        return
    # EM itself stalls only where the likelihood is flat in doubles: pointing to EM again
    # (as for the Newton methods) would send the user round in a circle
    hint = ("EM stopped where the likelihood no longer rises in double precision; by mom gives the "
            "unbiased estimate" if method in ("mle", "em") else "use by mle (EM), which always ascends, or by mom")
    raise BackendError(Diagnostic("B020", f"the {method} fit did not reach the maximum of the likelihood "
                                  f"(KKT violation {fit.kkt:.3g} after {fit.iterations} iterations)", hint=hint))


def components_of(mech: Any) -> list[str]:
    """The plain variables of a mechanism's categories, in the order their labels join them."""
    from privspec.model.graph import ProductMechanism  # start-up: the model graph imports sympy (a plan needs neither)
    factors = mech.factors if isinstance(mech, ProductMechanism) else (mech,)
    return [c for f in factors for c in f.variable.components()]


def joint_map(labels: tuple[str, ...], components: list[str], variables: Any) -> np.ndarray | None:
    """The 0/1 matrix from the channel's categories ``labels`` (each a '.'-joined tuple over
    ``components``) to the joint of ``variables`` (rows in row-major order of their labels;
    the other components summed out); None when a label does not split into the components
    (a label with a '.' of its own).

    Examples
    --------
    Categories over ``a, b, c`` (two labels each) to the joint of ``c`` and ``a``:

    >>> from types import SimpleNamespace as V
    >>> a = V(labels=("0", "1"), components=lambda: ("a",))
    >>> c = V(labels=("u", "v"), components=lambda: ("c",))
    >>> labels = tuple(f"{i}.{j}.{k}" for i in "01" for j in "01" for k in "uv")
    >>> joint_map(labels, ["a", "b", "c"], [c, a])[1].tolist()      # the cell (c = u, a = 1)
    [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    """
    at = {c: i for i, c in enumerate(components)}
    index = np.zeros(len(labels), dtype=np.int64)
    for v in variables:
        pos = [at[c] for c in v.components()]
        row = {lab: i for i, lab in enumerate(v.labels)}
        keys = []
        for lab in labels:
            parts = lab.split(".")
            key = ".".join(parts[i] for i in pos) if len(parts) == len(components) else None
            if key not in row:
                return None
            keys.append(row[key])
        index = index * len(v.labels) + np.array(keys, dtype=np.int64)
    M = np.zeros((int(np.prod([len(v.labels) for v in variables])), len(labels)))
    M[index, np.arange(len(labels))] = 1.0
    return M


def estimand_map(labels: tuple[str, ...], mech: Any, q: Query) -> tuple[np.ndarray | None, tuple[str, ...]]:
    """The 0/1 matrix summing the channel's categories into the estimand's (None: the same):
    a marginal, or a joint of any of the mechanism's variables in any order (the full joint's
    estimate and covariance are summed by this linear map)."""
    variables = q.estimand.variables if q.estimand is not None else ()
    if len(variables) == 1:
        M = marginal_map(labels, mech, variables[0])
        return (None, labels) if M is None else (M, variables[0].labels)
    if q.estimand is None or q.estimand.kind != "joint" or not variables:
        return None, labels
    M = joint_map(labels, components_of(mech), variables)
    if M is None:
        raise BackendError(Diagnostic("B017", f"the joint of {', '.join(v.name for v in variables)}: a category "
                                              "of the mechanism does not split into the variables' labels",
                                      hint="labels without '.'"))
    if M.shape[0] == M.shape[1] and np.array_equal(M, np.eye(len(labels))):
        return None, labels
    cells = [".".join(c) for c in itertools.product(*(v.labels for v in variables))]
    return M, tuple(cells)


def mle_determined(K_obs: np.ndarray, w: np.ndarray, M: np.ndarray | None = None, seed: int = 0) -> bool:
    """Whether the MLE (or its image ``M w``) is the same at every maximizer of the likelihood.

    The likelihood depends on w only through ``K_obs w`` (the observed reports), and is
    strictly concave in it, so the maximizers are ``{v >= 0 : K_obs v = K_obs w, sum v = 1}``.
    With full column rank (Assumption 2) that is one point; otherwise two linear programs
    bound a generic (seeded Gaussian) functional ``r^T M v`` over it: it is constant iff
    ``M v`` is, with probability one.

    Examples
    --------
    >>> K = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]])  # only w_1 + w_2 and w_3 + w_4 observed
    >>> mle_determined(K, np.array([0.1, 0.2, 0.3, 0.4]))
    False
    >>> mle_determined(K, np.array([0.1, 0.2, 0.3, 0.4]), M=np.array([[1.0, 1.0, 0.0, 0.0]]))
    True
    """
    p = K_obs.shape[1]
    if np.linalg.matrix_rank(K_obs) == p:
        return True
    r = np.random.default_rng(seed).standard_normal(p if M is None else M.shape[0])
    c = r if M is None else M.T @ r
    A = np.vstack([K_obs, np.ones((1, p))])
    b = np.append(K_obs @ w, 1.0)
    lo = scipy.optimize.linprog(c, A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    hi = scipy.optimize.linprog(-c, A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    if not (lo.success and hi.success):
        return True  # the fit itself is feasible; an LP failure is numerical, not evidence
    return (-hi.fun - lo.fun) <= 1e-6 * max(1.0, float(np.abs(c).sum()))


def _check_determined(K_obs: np.ndarray, fit: Fit, method: str, M: np.ndarray | None) -> None:
    """Refuse an estimate the data do not determine (see the module docstring); ``K_obs`` are
    the observed rows of the channel in w (for dummy categories, of the affine channel)."""
    if method != "one_step" and method not in MLE_FAMILY:
        return                          # the other estimators need no rank (an SVD: ms at d = 256)
    p = K_obs.shape[1]
    r = int(np.linalg.matrix_rank(K_obs)) if len(K_obs) else 0
    if method == "one_step":
        if r < p:
            raise DataError(Diagnostic("D020", f"the one-step estimator needs the observed reports to span "
                                       f"all {p} categories (Assumption 2): they span rank {r}",
                                       hint="use by mle, whose answer the LP check can still certify, or by mom"))
        return
    if method in MLE_FAMILY and r < p and not mle_determined(K_obs, fit.w, M):
        raise DataError(Diagnostic("D020", "the reports in the data do not determine the maximum likelihood "
                                   f"estimate: the observed reports span rank {r} < p = {p} (Assumption 2 "
                                   "fails) and the likelihood is flat along a direction that changes the estimand",
                                   hint="more respondents, a design whose subsets separate the categories, "
                                        "or by mom (defined whenever the design identifies w)"))


def require_answer(ch: Channel, counts: np.ndarray, fit: Fit, method: str, M: np.ndarray | None = None) -> None:
    """Refuse a fit that is not an answer: not converged (B020), or not determined by the data
    (D020).  For estimators outside :func:`fit_estimate` (joints of randomized response)."""
    _refuse_unconverged(fit, method)
    _check_determined(ch.Kn[np.asarray(counts) > 0], fit, method, M)


def fit_channel(q: Query, ch: Channel) -> Channel:
    """The channel ``q``'s estimator fits on: the mechanism's channel in w (affine for dummy
    categories), or ``ch`` itself."""
    # start-up: building channels needs sympy and the model graph; a planned fit needs neither
    from privspec.backends.core.compile import channel_in_w, channel_of
    method = q.method.name
    if ch.closed is None and ch is channel_of(q.mechanism):
        ch = channel_in_w(q.mechanism)
    if ch.offset is not None and method not in AFFINE_METHODS:
        raise BackendError(Diagnostic("B008", f"'{method}' is not available with dummy categories",
                                      hint="use mom or mle (EM with the dummies' mass fixed)"))
    return ch


def _fits(ch: Channel, C: np.ndarray, method: str) -> list[Fit | Exception]:
    """The estimator's fit on each row of counts, or the error that refused it: EM on all rows
    at once (:func:`privspec.backends.core.batched.em_fits`), the other estimators row by row."""
    if method in ("mle", "em") and ch.closed is None:
        return em_fits(ch, C)
    out: list[Fit | Exception] = []
    for counts in C:
        try:
            out.append(estimate(ch, counts, method))
        except REFUSALS as e:
            out.append(e)
    return out


def _covariance(method: str, ch: Channel, counts: np.ndarray, fit: Fit) -> tuple[Fit, Any]:
    """The fit (its note completed) and a function giving the population ``n Cov`` at a
    point; ``ch`` the channel of the fit (:func:`fit_channel`)."""
    if method == "mom":
        return fit, ch.avar_mom
    if ch.closed is not None:
        # a partial channel (the observed reports only) has no expected information: the
        # observed one stands in for it
        return Fit(fit.w, fit.method, fit.n, fit.loglik, fit.iterations, fit.kkt, fit.converged,
                   f"{fit.note}; standard errors from the observed information"), observed_information(ch, counts)
    return fit, (lambda w: ch.avar_mle(np.clip(w, 1e-12, None)))


def observed_information(ch: Channel, counts: np.ndarray):
    """``w -> B J(theta)^-1 B^T`` with ``J`` the observed information per respondent (the
    MLE covariance where the expected information needs every report)."""
    nz = counts > 0
    n = counts.sum()
    K = ch.Kn[nz]

    def avar(v: np.ndarray) -> np.ndarray:
        lam = K @ v
        J = (K.T * (counts[nz] / lam ** 2)) @ K / n
        B = B_matrix(ch.p, exact=False)
        return B @ np.linalg.inv(B.T @ J @ B) @ B.T

    return avar



#: what refuses one replication's estimate (``simulate`` skips it, ``run`` reports it)
REFUSALS = (np.linalg.LinAlgError, ValueError, PrivspecError)


def fit_estimate(q: Query, ch: Channel, counts: np.ndarray, *, level: float = 0.95) -> FiniteEstimate:
    """Fit ``q``'s estimator on ``counts`` (per observation of ``ch``) with covariance and intervals."""
    got = fit_estimates(q, ch, np.asarray(counts, dtype=float)[None, :], level=level)[0]
    if isinstance(got, Exception):
        raise got
    return got


def fit_estimates(q: Query, ch: Channel, C: np.ndarray, *, level: float = 0.95) -> list[FiniteEstimate | Exception]:
    """:func:`fit_estimate` on each row of counts ``C`` (replications on one channel): each
    row's estimate, or the error that refused it.  The query's :func:`estimate_plan` fitted
    by :func:`fit_planned` (what refuses the plan refuses every row)."""
    ch.check_floating()
    try:
        plan = estimate_plan(q, ch, level=level)
    except REFUSALS as e:
        return [e] * len(C)
    return fit_planned(plan, C)


# ---- the plan: what a fit needs of the query and its channels, in numbers --------------------------
@dataclass(frozen=True)
class EstimatePlan:
    """What fitting ``q``'s estimate on counts needs, made once with the model
    (:func:`estimate_plan`) and numeric: no sympy object and no model object, so that it
    pickles and a later process fits with it (:func:`fit_planned`) without either.

    ``channel`` is the channel counted on and ``fit_on`` the one the estimator fits on
    (:func:`fit_channel`: in w, affine for dummy categories; often the same object), both
    numeric snapshots (:meth:`~privspec.backends.core.channel.Channel.numeric`) except a
    partial channel, which its data define; ``M`` (None: the identity) and ``labels`` map the
    categories of ``fit_on`` to the estimand's (:func:`estimand_map`); ``joint`` names the
    variables of a joint estimand and their labels (None for a distribution); ``critical``
    is :func:`~privspec.backends.finite.profile.critical_table` at ``level`` where profile
    likelihood intervals may be asked for (their one use of :mod:`scipy.stats`), else None.
    """

    method: str
    se_kind: str
    level: float
    channel: Channel
    fit_on: Channel
    M: np.ndarray | None
    labels: tuple[str, ...]
    joint: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    critical: tuple[np.ndarray, np.ndarray, float] | None = field(default=None, repr=False)


def estimate_plan(q: Query, ch: Channel, *, level: float = 0.95) -> EstimatePlan:
    """The plan of ``q``'s estimate on counts per observation of ``ch`` (it needs the model:
    the refusals of :func:`fit_channel` and :func:`estimand_map` are raised here).

    Examples
    --------
    >>> import pickle, privspec
    >>> from privspec.backends.core.compile import channel_of
    >>> m = privspec.load("variable c: categorical {a, b, c, d}\\nmechanism u = subset(c, uniform)\\n"
    ...                   "query w = estimate distribution(c) from u by mom").model
    >>> plan = pickle.loads(pickle.dumps(estimate_plan(m.queries["w"], channel_of(m.mechanisms["u"]))))
    >>> plan.method, plan.labels, plan.channel.exact_K is None
    ('mom', ('a', 'b', 'c', 'd'), True)
    """
    ch.check_floating()
    ch_w = fit_channel(q, ch)
    M, labels = estimand_map(tuple(ch_w.x_labels), q.mechanism, q)
    estimand = q.estimand
    joint = tuple((v.name, tuple(v.labels)) for v in estimand.variables) \
        if estimand is not None and estimand.kind == "joint" else None
    method = q.method.name
    profiled = method in MLE_FAMILY + ("one_step",) and ch_w.offset is None and ch.closed is None
    return EstimatePlan(method, se_kind_of(q), float(level), _snapshot(ch), _snapshot(ch_w), M, tuple(labels),
                        joint, critical_table(float(level)) if profiled else None)


def _snapshot(ch: Channel) -> Channel:
    """The channel's numeric snapshot; a partial channel (made from its data) as it is."""
    return ch if ch.closed is not None else ch.numeric()


def fit_planned(plan: EstimatePlan, C: np.ndarray) -> list[FiniteEstimate | Exception]:
    """The plan's estimate on each row of counts ``C``, or the error that refused it: the
    EM fits of all rows at once, and their profile likelihood intervals
    (:func:`privspec.backends.finite.profile.profile_intervals`).  Numbers only: nothing
    here needs the model or sympy.

    Examples
    --------
    >>> import privspec
    >>> from privspec.backends.core.compile import channel_of
    >>> m = privspec.load("variable c: categorical {a, b}\\nmechanism g = grr(c, epsilon = log(3))\\n"
    ...                   "query w = estimate distribution(c) from g by mle").model
    >>> plan = estimate_plan(m.queries["w"], channel_of(m.mechanisms["g"]))
    >>> fits = fit_planned(plan, np.array([[70.0, 30.0], [40.0, 60.0]]))   # two samples' report counts
    >>> [f.w.round(3).tolist() for f in fits], fits[0].ci_method
    ([[0.9, 0.1], [0.3, 0.7]], 'profile likelihood')
    """
    C = np.asarray(C, dtype=float)
    out: list[FiniteEstimate | Exception] = []
    plans: list[tuple[int, _Profile]] = []
    for counts, fit in zip(C, _fits(plan.fit_on, C, plan.method)):
        try:
            if isinstance(fit, Exception):
                raise fit
            est, profile = _estimate(plan, counts, fit)
        except REFUSALS as e:
            out.append(e)
            continue
        if profile is not None:
            plans.append((len(out), profile))
        out.append(est)
    if plans:
        ci, failed = _profile(plan, [profile for _, profile in plans], plan.level)
        for (i, profile), interval, bad in zip(plans, ci, failed):
            out[i] = ValueError("the profile likelihood's bracket lost its sign change") if bad else \
                replace(out[i], ci=interval, ci_method=profile.how)
    return out


def _estimate(plan: EstimatePlan, counts: np.ndarray, fit: Fit) -> tuple[FiniteEstimate, "_Profile | None"]:
    """One replication's estimate from its fit on ``plan.fit_on``, with its intervals unless
    they are profile likelihood intervals: then what they need."""
    method, kind, level, ch, ch_w, M = plan.method, plan.se_kind, plan.level, plan.channel, plan.fit_on, plan.M
    fit, avar = _covariance(method, ch_w, counts, fit)
    _refuse_unconverged(fit, method)
    affine = ch_w.offset is not None
    K_w = ch_w.Kn if affine else ch.Kn   # the reports' probabilities in w (affine: K_eff w + b)
    _check_determined(K_w[counts > 0], fit, method, M)
    try:
        V = np.asarray(avar(fit.w), dtype=float)
    except np.linalg.LinAlgError:
        V = None
    w = fit.w if M is None else M @ fit.w
    V_pop = None
    if V is not None:
        V_pop = V if M is None else M @ V @ M.T
        V = conditional_covariance(V_pop, w) if kind == "conditional" else V_pop
    notes: list[str] = []
    if np.any(w < 0):
        notes.append("the estimate has negative entries (MoM is unbiased but may leave the simplex)")
    profile = _profile_plan(method, ch, counts, fit, V, M, kind, V_pop, affine, level, notes)
    ci, ci_method = (None, "") if profile is not None else _other_intervals(method, ch, counts, fit, w, V, M, kind,
                                                                             affine, level)

    def intervals(at: float) -> np.ndarray | None:
        """The same method's intervals at another level (the notes were said at ``level``)."""
        again = _profile_plan(method, ch, counts, fit, V, M, kind, V_pop, affine, at, [])
        if again is None:
            return _other_intervals(method, ch, counts, fit, w, V, M, kind, affine, at)[0]
        ci, failed = _profile(plan, [again], at)
        if failed[0]:
            raise ValueError("the profile likelihood's bracket lost its sign change")
        return ci[0]

    return FiniteEstimate(w, V, plan.labels, fit, kind, ci, ci_method, level, tuple(notes), intervals), profile


# ---- intervals ---------------------------------------------------------------------------------------
def wald_inference(w: np.ndarray, se: np.ndarray, cov: Callable[[], np.ndarray] | None,
                   no_covariance: str = "") -> Inference:
    """The Python API's view of an estimate whose intervals are :func:`wald_interval`'s
    (``w`` and ``se`` flat, in the estimate's order): those intervals at any level, and the
    covariance ``cov`` computes (None: ``no_covariance`` says why)."""
    w, se = np.ravel(w), np.ravel(se)
    return Inference(WALD_CI, lambda level: tuple(wald_interval(w, se, level).T), cov, no_covariance)


@dataclass(frozen=True)
class _Profile:
    """What one replication's profile likelihood intervals need: its counts, the MLE and its
    log-likelihood, the categories of each estimand cell, the deviance's scale and the
    standard error per cell, and the method's name."""

    counts: np.ndarray
    w: np.ndarray
    loglik: float
    groups: np.ndarray
    scale: np.ndarray
    se: np.ndarray
    how: str


def _profile(plan: EstimatePlan, profiles: list[_Profile], level: float) -> tuple[np.ndarray, np.ndarray]:
    """The profile likelihood intervals of every replication's ``profiles`` at once, and which
    failed (the plan's critical values at its level; at another, computed)."""
    return profile_intervals(plan.channel.Kn, np.array([p.counts for p in profiles]), np.array([p.w for p in profiles]),
                             np.array([p.loglik for p in profiles]), profiles[0].groups, level,
                             scale=np.array([p.scale for p in profiles]), se=np.array([p.se for p in profiles]),
                             critical=plan.critical if level == plan.level else None)


def _profile_plan(method: str, ch: Channel, counts: np.ndarray, fit: Fit, V: np.ndarray | None, M: np.ndarray | None,
                  kind: str, V_pop: np.ndarray | None, dummies: bool, level: float, notes: list[str]
                  ) -> _Profile | None:
    """What the profile likelihood intervals need, for the likelihood-based estimators where
    they are affordable; None for the others (a note says when it is for the work)."""
    if not (method in MLE_FAMILY + ("one_step",) and not dummies and V is not None and V_pop is not None):
        return None
    groups = np.eye(ch.p, dtype=bool) if M is None else M > 0
    work = len(groups) * float(np.count_nonzero(counts)) * ch.p * 400
    if work > PROFILE_WORK_LIMIT:
        notes.append("intervals by the clipped Wald method: profile likelihood intervals of this many "
                     "categories would take too long")
        return None
    se = np.sqrt(np.maximum(np.diag(V), 0.0) / fit.n)
    # se = conditional: the deviance threshold scaled by Var_conditional / Var_population
    # per category, the same interval to first order as the conditional Wald one, with
    # the profile likelihood's shape near 0 (where the MLE has an atom)
    ratio = np.ones(len(groups)) if kind == "population" else \
        np.clip(np.diag(V) / np.maximum(np.diag(V_pop), 1e-300), 1e-6, 1.0)
    full = fit if method in MLE_FAMILY else em(ch, counts, fit.w)
    how = "profile likelihood" + ("" if kind == "population" else
                                  ", deviance scaled by the conditional/population variance ratio")
    return _Profile(counts, full.w, full.loglik, groups, ratio, se, how)


def _other_intervals(method: str, ch: Channel, counts: np.ndarray, fit: Fit, w: np.ndarray, V: np.ndarray | None,
                     M: np.ndarray | None, kind: str, dummies: bool, level: float) -> tuple[np.ndarray | None, str]:
    """Intervals per estimand category where they are not the profile likelihood's: the score
    interval for MoM (unbiased and unconstrained), else the clipped Wald interval."""
    se = None if V is None else np.sqrt(np.maximum(np.diag(V), 0.0) / fit.n)
    if se is None:
        return None, "none (singular covariance)"
    if method == "mom" and M is None and not dummies and ch.closed is None:
        # MoM is linear, w_hat = A lambda_hat with A = Q^-1 T (A K = I): the score interval
        # evaluates its variance at each candidate value, as Wilson's does for a proportion
        K, A = ch.Kn, ch.mom_map
        lam = counts / counts.sum()
        lo, hi = score_interval(A @ lam, (A * A) @ lam, np.einsum("xy,yx->x", A * A, K),
                                np.abs(A).max(axis=1) / (2 * fit.n), fit.n, kind, level)
        return np.column_stack([lo, hi]), SCORE_CI
    return wald_interval(w, se, level), "Wald, clipped to [0, 1]"
