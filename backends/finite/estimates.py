"""Estimates of a finite mechanism's distribution with their standard errors and intervals.

One path for ``run`` and ``simulate``: :func:`fit_estimate` fits the query's estimator on
counts per observation, refuses a fit that is not an answer, and attaches

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
  likelihood interval ``{c : 2 (l_hat - max_{w_j = c} l(w)) <= chi2_1(level)}`` (its lower
  end is 0 when the data cannot rule out an empty category, where a Wald interval has
  the wrong width and the estimate is biased away from 0); for MoM and the one-step
  estimator (linear or nearly so, unconstrained), the Wald interval clipped to ``[0, 1]``.
  Quantiles come from :mod:`scipy.stats` (the normal one from :mod:`privspec.backends.core.normal`).

Refusals (each a clear error, never a printed non-answer): an iterative fit that did not
reach its optimum (B020); an MLE that the data do not determine (D020, checked exactly:
the set of maximizers is a polytope ``{w >= 0 : K_obs w = lambda_hat, sum w = 1}``, and
the estimand is determined when a generic linear functional of it is constant there, two
linear programs); a one-step estimate whose Hessian is singular (Assumption 2).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import ProductMechanism, Query, Variable
from privspec.results.values import Inference
from privspec.backends.core.channel import B_matrix, Channel
from privspec.backends.core.compile import channel_in_w, channel_of
from privspec.backends.core.estimators import AFFINE_METHODS, Fit, em, estimate, fit_with_mass
from privspec.backends.core.normal import z_quantile
from privspec.backends.core.projections import SCORE_CI, WALD_CI, score_interval, wald_interval

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
    factors = mech.factors if isinstance(mech, ProductMechanism) else (mech,)
    comps = [c for f in factors for c in f.variable.components()]
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
    raise BackendError(Diagnostic("B020", f"the {method} fit did not reach the maximum of the likelihood "
                                  f"(KKT violation {fit.kkt:.3g} after {fit.iterations} iterations)",
                                  hint="use by mle (EM), which always ascends, or by mom"))


def estimand_map(labels: tuple[str, ...], mech: Any, q: Query) -> tuple[np.ndarray | None, tuple[str, ...]]:
    """The 0/1 matrix summing the channel's categories into the estimand's (None: the same)."""
    variable = q.estimand.variables[0] if q.estimand is not None and len(q.estimand.variables) == 1 else None
    if variable is None:
        return None, labels
    M = marginal_map(labels, mech, variable)
    return (None, labels) if M is None else (M, variable.labels)


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


def _fit_and_covariance(q: Query, ch: Channel, counts: np.ndarray) -> tuple[Fit, Any, tuple[str, ...], Any]:
    """The fit over the channel's real categories, a function giving the population ``n Cov``
    at a point (or a fixed matrix), the labels, and the dummy design if any."""
    mech = q.mechanism
    method = q.method.name
    if ch.closed is None and ch is channel_of(mech):
        ch = channel_in_w(mech)  # the mechanism's channel in w (affine for dummy categories)
    if ch.offset is not None and method not in AFFINE_METHODS:
        raise BackendError(Diagnostic("B008", f"'{method}' is not available with dummy categories",
                                      hint="use mom or mle (EM with the dummies' mass fixed)"))
    fit = estimate(ch, counts, method)
    if method == "mom":
        return fit, ch.avar_mom, ch.x_labels, ch
    if ch.closed is not None:
        # a partial channel (the observed reports only) has no expected information: the
        # observed one stands in for it
        return Fit(fit.w, fit.method, fit.n, fit.loglik, fit.iterations, fit.kkt, fit.converged,
                   f"{fit.note}; standard errors from the observed information"), \
            observed_information(ch, counts), ch.x_labels, ch
    return fit, (lambda w: ch.avar_mle(np.clip(w, 1e-12, None))), ch.x_labels, ch


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



def fit_estimate(q: Query, ch: Channel, counts: np.ndarray, *, level: float = 0.95) -> FiniteEstimate:
    """Fit ``q``'s estimator on ``counts`` (per observation of ``ch``) with covariance and intervals."""
    method = q.method.name
    kind = se_kind_of(q)
    counts = np.asarray(counts, dtype=float)
    ch.check_floating()
    fit, avar, labels, ch_w = _fit_and_covariance(q, ch, counts)
    _refuse_unconverged(fit, method)
    M, est_labels = estimand_map(tuple(labels), q.mechanism, q)
    affine = ch_w is not None and ch_w.offset is not None
    K_w = ch_w.Kn if affine else ch.Kn   # the reports' probabilities in w (affine: K_eff w + b)
    _check_determined(K_w[np.asarray(counts) > 0], fit, method, M)
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
    ci, ci_method = _intervals(q, ch, counts, fit, w, V, M, kind, V_pop, affine, level, notes)

    def intervals(at: float) -> np.ndarray | None:
        """The same method's intervals at another level (the notes were said at ``level``)."""
        return _intervals(q, ch, counts, fit, w, V, M, kind, V_pop, affine, at, [])[0]

    return FiniteEstimate(w, V, tuple(est_labels), fit, kind, ci, ci_method, level, tuple(notes), intervals)


# ---- intervals ---------------------------------------------------------------------------------------
def wald_inference(w: np.ndarray, se: np.ndarray, cov: Callable[[], np.ndarray] | None,
                   no_covariance: str = "") -> Inference:
    """The Python API's view of an estimate whose intervals are :func:`wald_interval`'s
    (``w`` and ``se`` flat, in the estimate's order): those intervals at any level, and the
    covariance ``cov`` computes (None: ``no_covariance`` says why)."""
    w, se = np.ravel(w), np.ravel(se)
    return Inference(WALD_CI, lambda level: tuple(wald_interval(w, se, level).T), cov, no_covariance)


@functools.lru_cache(maxsize=8)
def _critical_table(level: float) -> tuple[np.ndarray, np.ndarray]:
    grid = np.linspace(0.0, 4.0, 401)
    lo, hi = float(scipy.stats.chi2.ppf(2 * level - 1, 1)), float(scipy.stats.chi2.ppf(level, 1))

    def accept(c: float, mu: float) -> float:
        r = math.sqrt(c)
        low = mu - r if mu >= r else ((mu * mu - c) / (2 * mu) if mu > 0 else -np.inf)
        return float(scipy.stats.norm.cdf(r) - scipy.stats.norm.cdf(low - mu)) - level

    crit = [scipy.optimize.brentq(accept, lo * (1 - 1e-12), hi * (1 + 1e-12), args=(mu,), xtol=1e-12) for mu in grid]
    return grid, np.array(crit)


def boundary_critical(distance: np.ndarray | float, level: float = 0.95) -> np.ndarray | float:
    """The critical value of the profile deviance for a parameter ``distance`` standard errors
    from a boundary (0 or 1 for a probability), so that the interval covers at ``level``.

    In the limit the estimate is ``X ~ N(mu, 1)`` restricted to ``mu >= 0``; the profile
    deviance at ``mu`` is ``(X - mu)^2`` for ``X >= 0`` and ``mu^2 - 2 X mu`` for ``X < 0``
    (the MLE sits at 0).  Accepting ``mu`` when the deviance is at most ``c(mu)`` with
    ``P_mu(deviance <= c(mu)) = level`` is the likelihood-ratio-ordered Neyman construction
    (Feldman and Cousins 1998): exact coverage for every ``mu``.  ``c`` rises from
    ``chi2_1(2 level - 1)`` (2.71 at 95%: at the boundary half the estimates are at 0 and
    always covered) to ``chi2_1(level)`` (3.84) about 2 standard errors away; a fixed 3.84
    covers 97.5% at the boundary.

    Examples
    --------
    >>> [round(float(boundary_critical(d)), 3) for d in (0.0, 1.0, 3.0)]
    [2.706, 3.31, 3.841]
    """
    grid, crit = _critical_table(float(level))
    return np.interp(distance, grid, crit, right=float(scipy.stats.chi2.ppf(level, 1)))


def profile_interval(ch: Channel, counts: np.ndarray, w_hat: np.ndarray, loglik: float, group: np.ndarray,
                     level: float = 0.95, *, scale: float = 1.0, se: float | None = None) -> tuple[float, float]:
    """The profile likelihood interval of ``c = sum_{j in group} w_j`` at ``level``.

    ``{c : 2 (l_hat - l_c) <= scale crit(c)}`` with ``l_c`` the likelihood maximized with
    the group's mass fixed at c and ``crit`` the boundary-aware critical value
    (:func:`boundary_critical`, at c's distance from 0 or 1 in units of ``se``: 3.84 away from
    the boundary, 2.71 at it) (:func:`privspec.backends.core.estimators.fit_with_mass`,
    warm-started).  Each end solves ``r(c) = +-1`` for the signed root deviance
    ``r(c) = sign(c - c_hat) sqrt(2 (l_hat - l_c) / (scale crit(c)))``, nearly linear in c, by
    Brent's method in a bracket grown from the Wald guess ``c_hat +- z se``; an end stays at 0 or 1
    where the deviance there is below the critical value.  ``scale`` < 1 narrows the interval
    by the ratio of two variances while keeping its shape at the boundary (the conditional
    interval, :func:`fit_estimate`).

    Examples
    --------
    >>> import sympy
    >>> from privspec.backends.core.channel import matrix_channel
    >>> from privspec.backends.core.estimators import em
    >>> ch = matrix_channel(("a", "b"), sympy.Matrix([[3, 1], [1, 3]]) / 4)
    >>> counts = np.array([260.0, 740.0])
    >>> fit = em(ch, counts)
    >>> lo, hi = profile_interval(ch, counts, fit.w, fit.loglik, np.array([True, False]))
    >>> lo == 0.0, round(hi, 3)
    (True, 0.076)
    """
    z = z_quantile(level)
    c_hat = float(w_hat[group].sum())
    warm = {"w": w_hat}
    unit = se if se is not None and se > 0 else 0.0
    step = max(unit, 1e-4)

    def root(c: float) -> float:
        """sign(c - c_hat) sqrt(deviance / critical value): +-1 at the interval's ends."""
        fit = fit_with_mass(ch, counts, group, c, warm["w"])
        if not np.isfinite(fit.loglik):
            return math.copysign(1e6, c - c_hat)
        warm["w"] = fit.w
        dev = 2.0 * (loglik - fit.loglik) / scale
        crit = float(boundary_critical(min(c, 1.0 - c) / unit, level)) if unit > 0 else z * z
        return math.copysign(math.sqrt(max(dev, 0.0) / crit), c - c_hat)

    ends = []
    for sign, edge in ((-1.0, 0.0), (1.0, 1.0)):
        warm["w"] = w_hat
        if abs(c_hat - edge) < 1e-12:
            ends.append(edge)
            continue
        inner, outer = c_hat, c_hat + sign * z * step
        while True:  # grow the bracket until the root deviance passes z or the edge is reached
            if sign * (outer - edge) >= 0:
                outer = edge
                if sign * root(edge) <= 1.0:
                    ends.append(edge)
                    break
            elif sign * root(outer) <= 1.0:
                inner, outer = outer, outer + sign * 2 * abs(outer - c_hat)
                continue
            a, b = sorted((inner, outer))
            ends.append(float(scipy.optimize.brentq(lambda c: root(c) - sign, a, b, xtol=max(1e-10, 1e-5 * step))))
            break
    return ends[0], ends[1]


def _intervals(q: Query, ch: Channel, counts: np.ndarray, fit: Fit, w: np.ndarray, V: np.ndarray | None,
               M: np.ndarray | None, kind: str, V_pop: np.ndarray | None, dummies: bool, level: float,
               notes: list[str]) -> tuple[np.ndarray | None, str]:
    """Intervals per estimand category: the profile likelihood for the likelihood-based
    estimators, the clipped Wald interval for MoM (unbiased and unconstrained)."""
    method = q.method.name
    se = None if V is None else np.sqrt(np.maximum(np.diag(V), 0.0) / fit.n)
    if method in MLE_FAMILY + ("one_step",) and not dummies and V is not None and V_pop is not None:
        groups = [np.eye(ch.p, dtype=bool)[j] for j in range(ch.p)] if M is None else [row > 0 for row in M]
        work = len(groups) * float(np.count_nonzero(counts)) * ch.p * 400
        if work <= PROFILE_WORK_LIMIT:
            # se = conditional: the deviance threshold scaled by Var_conditional / Var_population
            # per category, the same interval to first order as the conditional Wald one, with
            # the profile likelihood's shape near 0 (where the MLE has an atom)
            ratio = np.ones(len(groups)) if kind == "population" else \
                np.clip(np.diag(V) / np.maximum(np.diag(V_pop), 1e-300), 1e-6, 1.0)
            ll_hat = fit.loglik if method in MLE_FAMILY else _mle_loglik(ch, counts, fit.w)
            w_full = fit.w if method in MLE_FAMILY else _mle(ch, counts, fit.w)
            ci = np.array([profile_interval(ch, counts, w_full, ll_hat, g, level, scale=float(r), se=float(s))
                           for g, r, s in zip(groups, ratio, se)])
            how = "profile likelihood" + ("" if kind == "population" else
                                          ", deviance scaled by the conditional/population variance ratio")
            return ci, how
        notes.append("intervals by the clipped Wald method: profile likelihood intervals of this many "
                     "categories would take too long")
    if se is None:
        return None, "none (singular covariance)"
    if method == "mom" and M is None and not dummies and ch.closed is None:
        # MoM is linear, w_hat = A lambda_hat with A = Q^-1 T (A K = I): the score interval
        # evaluates its variance at each candidate value, as Wilson's does for a proportion
        K, T = ch.Kn, ch.Tn
        A = np.linalg.solve(T @ K, T)
        lam = counts / counts.sum()
        lo, hi = score_interval(A @ lam, (A * A) @ lam, np.einsum("xy,yx->x", A * A, K),
                                np.abs(A).max(axis=1) / (2 * fit.n), fit.n, kind, level)
        return np.column_stack([lo, hi]), SCORE_CI
    return wald_interval(w, se, level), "Wald, clipped to [0, 1]"


def _mle(ch: Channel, counts: np.ndarray, start: np.ndarray) -> np.ndarray:
    return em(ch, counts, start).w


def _mle_loglik(ch: Channel, counts: np.ndarray, start: np.ndarray) -> float:
    return em(ch, counts, start).loglik
