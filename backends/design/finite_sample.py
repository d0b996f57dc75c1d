"""Finite-sample honesty of a design comparison: its asymptotic utility values checked
against a quick seeded simulation at n.

An asymptotic variance is a limit; at the comparison's n it can mislead (an MLE that sits
at 0 for a rare category in a third of the samples has a smaller spread than its avar
says). :func:`check` simulates each candidate's estimator at n (:data:`QUICK_REPS`
replications, seed :data:`QUICK_SEED` unless the comparison has one; the replications are
drawn as sufficient statistics and fitted all at once where the estimator allows,
:data:`SLOW_REPS` where each must be fitted on its own) and :func:`judge` marks a value
``unreliable`` where it differs from the simulated one by more than :data:`TOLERANCE`
(relative) and by more than :data:`MC_Z` Monte Carlo errors: the simulated value is
kept beside it, decides the ranks, frontiers, targets and verdict, and the row says so
in words. A criterion with no closed form (an NPMLE functional of a Case-II design,
B130) takes the simulated value as its value, marked as simulated.

Linear estimators (``mom`` without a projection, Example 2's ``unbiased``) are not
checked: their variance is ``avar / n`` exactly at every n.

Examples
--------
>>> import numpy as np
>>> K = np.array([[0.75, 0.25], [0.25, 0.75]])               # Warner's design
>>> C = np.array([[70.0, 30.0], [40.0, 60.0]])               # two samples' report counts
>>> em_many(K, C).round(3).tolist()                           # the MLE of each, on the simplex
[[0.9, 0.1], [0.3, 0.7]]
"""
from __future__ import annotations

import math
from typing import Callable, MutableMapping

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import PrivspecError
from privspec.model.graph import ModelGraph, Query
from privspec.model.query_kinds import FINITE, INTERVAL, family_of
from privspec.results.comparison import CriterionValue
from privspec.results.result import Result
from privspec.results.values import Matrix, Table
from privspec.backends.core.channel import Channel
from privspec.backends.core.estimators import ESTIMATORS, estimate
from privspec.backends.design.criteria import (REGISTRY, Candidate, Evaluation, NotApplicable, Replications, answer,
                                               not_applicable)
from privspec.backends.design.regression_sample import regression_estimates
from privspec.backends.finite.estimates import estimand_map, se_kind_of
from privspec.backends.finite.truth import Truth
from privspec.backends.interval.estimate import estimate_from_reports, named_args
from privspec.backends.interval.estimators import law_moment, npmle_functional, parametric_mle
from privspec.backends.interval.fit import aggregate, fit_npmle
from privspec.backends.interval.laws import draw, population_law, support_of
from privspec.backends.interval.mechanisms import written_intervals
from privspec.backends.interval.reports import report_model

#: replications of the quick check where they are fitted all at once (finite channels)
QUICK_REPS = 200
#: replications of the quick check where each is fitted on its own by an iterative solver
#: (interval NPMLE and parametric MLE, randomized-response joints): 10 to 30 ms a fit at n = 500
SLOW_REPS = 40
#: a value found off on :data:`SLOW_REPS` is judged again on this many times as many
CONFIRM = 3
#: the quick check's seed where the comparison has none: the same document every run
QUICK_SEED = 35
#: an asymptotic value this far (relative) from the simulated one is unreliable ...
TOLERANCE = 0.10
#: ... when it is also this many Monte Carlo errors away
MC_Z = 3.0
#: report counts the check draws at most (replications x reports), 8 bytes each
REPORT_LIMIT = 10 ** 7
#: EM's iterations at most, and its stopping change in w (the quick check's fits)
EM_MAX_ITER, EM_TOL = 20_000, 1e-8


def linear(cand: Candidate) -> bool:
    """Whether the candidate's estimator is a mean of its reports (``mom`` unprojected,
    Example 2's ``unbiased``): its variance is ``avar / n`` exactly, at every n."""
    m = cand.method
    return m.name == "unbiased" or m.name == "mom" and str(m.options.get("project", "none")) == "none"


def no_closed_form(ev: Evaluation) -> bool:
    """Whether the candidate's asymptotic variance has no closed form here (B130: an NPMLE
    functional of a design other than Case I), so that a simulated one stands for it."""
    try:
        ev.avar()
    except NotApplicable as e:
        return e.diagnostic is not None and e.diagnostic.code == "B130"
    return False


# ---- the check -----------------------------------------------------------------------------------------
def check(model: ModelGraph, cand: Candidate, ev: Evaluation, n: int, values: MutableMapping[str, CriterionValue],
          seed: int | None = None) -> list[str]:
    """The quick check of one candidate's utility values at n (in place: an unreliable
    value gets its simulated one beside it, a value without a closed form takes the
    simulated one); the row's flags in words."""
    missing = no_closed_form(ev) if ev.free is None else False
    wanted = [c for c, v in values.items() if REGISTRY[c].simulated is not None and (v.value is not None or missing)]
    if not wanted or ev.free is not None or (linear(cand) and not missing):
        return []
    seed = QUICK_SEED if seed is None else seed
    try:
        got, reps, why = quick_replications(model, cand, n, seed, ev.alpha, ev.known_truth())
        _fill(values, wanted, got, n, seed, reps)
        if reps < QUICK_REPS and any(off(values[c]) for c in wanted):
            # few replications, each fitted on its own: a variance from 40 of them is off by
            # 10% more often than normal theory says; confirm on more before saying so
            got, reps, why = quick_replications(model, cand, n, seed, ev.alpha, ev.known_truth(), CONFIRM * reps)
            _fill(values, wanted, got, n, seed, reps)
    except NotApplicable:   # nothing to check against: the analytic values stand, as without a check
        for c in wanted:
            values[c].simulated = values[c].mc_error = values[c].mc_note = None
        return []
    simulated_only = {c for c in wanted if values[c].value is None}
    flags = judge(values, n, missing, why)
    for c in wanted:  # a value the check confirms stays as it was, without the check's numbers
        v = values[c]
        if not v.unreliable and c not in simulated_only:
            v.simulated = v.mc_error = v.mc_note = None
    return flags


def _fill(values: MutableMapping[str, CriterionValue], wanted: list[str], got: Replications, n: int, seed: int,
          reps: int) -> None:
    """The simulated value of each ``wanted`` criterion, with its Monte Carlo error and how it was found."""
    for c in wanted:
        sim = REGISTRY[c].simulated(got, n)
        if sim is not None:
            v = values[c]
            v.simulated, v.mc_error = sim
            v.mc_note = f"quick check: {reps} seeded replications at n = {n:,} (seed {seed})"


def off(v: CriterionValue) -> bool:
    """Whether an asymptotic value is more than :data:`TOLERANCE` and :data:`MC_Z` Monte
    Carlo errors away from its simulated one."""
    if v.value is None or v.simulated is None or v.mc_error is None or not v.simulated > 0:
        return False
    gap = abs(v.value - v.simulated)
    return gap > TOLERANCE * v.simulated and gap > MC_Z * v.mc_error


def judge(values: MutableMapping[str, CriterionValue], n: int, missing: bool, why: str | None = None) -> list[str]:
    """Mark the values whose asymptotic form is more than :data:`TOLERANCE` and :data:`MC_Z`
    Monte Carlo errors off their simulated one as unreliable; give a value without a closed
    form (``missing``) its simulated one; the flags in words (``why``: what the simulation
    saw, said with each)."""
    flags = []
    for c, v in values.items():
        if v.simulated is None or v.mc_error is None or not math.isfinite(v.simulated):
            continue
        if v.value is None and missing:
            v.value, v.na = v.simulated, None
            v.mc_note = "; ".join(x for x in ("no closed form for the asymptotic variance: the value is simulated",
                                                v.mc_note) if x)
            flags.append(f"{c}: {v.value:.4g} +- {v.mc_error:.2g} is simulated at n = {n:,} (no closed form for "
                         "the asymptotic variance of this estimator)")
            continue
        if off(v):
            gap = v.value - v.simulated
            v.unreliable = True
            flags.append(f"{c}: the asymptotic {v.value:.4g} is {abs(gap) / v.simulated:.0%} "
                         f"{'above' if gap > 0 else 'below'} the simulated {v.simulated:.4g} +- {v.mc_error:.2g} "
                         f"at n = {n:,}{f' ({why})' if why else ''}; the simulated value is used")
    return flags


# ---- replications ----------------------------------------------------------------------------------------
def quick_replications(model: ModelGraph, cand: Candidate, n: int, seed: int, alpha: float,
                       truth: np.ndarray | None = None, slow_reps: int = SLOW_REPS
                       ) -> tuple[Replications, int, str | None]:
    """The candidate's estimator at n over the quick check's replications: what the
    simulated criteria read, how many replications, and what they saw (an MLE at the
    boundary). :data:`QUICK_REPS` where they are fitted all at once, ``slow_reps`` where
    each is fitted on its own (interval estimators; ``simulate`` for the other families);
    ``truth``: the estimand's value per cell where known (the CV's denominator)."""
    if se_kind_of(cand.query("estimate")) != "population":
        raise NotApplicable("the check is of the population variance")
    rng = np.random.default_rng(seed)
    fam = family_of(cand.mechanism)
    try:
        if fam in FINITE and cand.estimand.kind == "regression":
            # the coefficients' fits, never distribution(Y): the check is of the block's estimand
            E, truth, why = regression_estimates(model, cand.query("estimate"), n, slow_reps, rng)
        elif fam in FINITE and cand.method.name in ESTIMATORS:
            E, truth, why = finite_estimates(model, cand, n, QUICK_REPS, rng)
        elif fam in INTERVAL:
            if cand.estimand.kind not in ("mean", "moment"):
                raise NotApplicable("the check simulates the moments of interval designs")
            E, truth, why = interval_estimates(model, cand, n, slow_reps, rng)
        else:
            return simulated_replications(model, cand, n, slow_reps, seed, alpha, truth), slow_reps, None
    except PrivspecError as e:
        raise not_applicable(e) from None
    except (ValueError, TypeError, np.linalg.LinAlgError, ZeroDivisionError) as e:
        raise NotApplicable(str(e)) from None
    return from_estimates(E, truth, n, alpha), len(E), why


def from_estimates(E: np.ndarray, truth: np.ndarray, n: int, alpha: float) -> Replications:
    """What the simulated criteria read off replications' estimates ``E`` (one row each)
    of ``truth``."""
    E = E.reshape(len(E), -1)
    if len(E) < 2:
        raise NotApplicable("fewer than two replications succeeded")
    loss = np.sum((E - truth.reshape(1, -1)) ** 2, axis=1)
    return Replications(np.atleast_2d(np.cov(E, rowvar=False)) * n, True, len(E),
                        (float(loss.mean()), float(loss.std(ddof=1) / math.sqrt(len(loss)))),
                        float(scipy.stats.norm.ppf(1 - alpha / 2)), truth.reshape(-1))


def em_many(K: np.ndarray, C: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """The MLE of w from each row of report counts ``C`` (reports with probabilities
    ``K w + b``), by EM on all rows at once (from the uniform w, until w moves less than
    :data:`EM_TOL`)."""
    W = np.full((C.shape[0], K.shape[1]), 1.0 / K.shape[1])
    offset = 0.0 if b is None else b[None, :]
    for _ in range(EM_MAX_ITER):
        lam = W @ K.T + offset
        new = W * (np.divide(C, lam, out=np.zeros_like(C), where=lam > 0) @ K)
        new /= new.sum(axis=1, keepdims=True)
        if np.max(np.abs(new - W)) < EM_TOL:
            return new
        W = new
    return W


def finite_estimates(model: ModelGraph, cand: Candidate, n: int, reps: int, rng: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray, str | None]:
    """Replications of a finite mechanism's estimate: the report counts drawn as
    ``Multinomial(n, K w)`` (their sufficient statistic), the MLE fitted on all at once."""
    t = Truth(model, cand.mechanism)
    if not t.declared:
        raise NotApplicable("no population to draw from")
    ch, fit_on = t.full_channel, t.numeric_channel()
    if not (isinstance(ch, Channel) and isinstance(fit_on, Channel) and ch.closed is None and fit_on.closed is None) \
            or ch.n_obs * reps > REPORT_LIMIT:   # closed forms stand for a channel too large to draw from
        raise NotApplicable(f"{ch.n_obs:,} reports: too many to check quickly")
    ch.check_floating()
    w = np.maximum(t.numeric_w(t.w_full), 0.0)
    lam = np.maximum(ch.Kn @ (w / w.sum()), 0.0)
    C = rng.multinomial(n, lam / lam.sum(), size=reps).astype(float)
    method = cand.method.name
    if method in ("mle", "em"):
        E = em_many(fit_on.Kn, C, fit_on.bn if fit_on.offset is not None else None)
    else:
        E = np.array([estimate(fit_on, c, method).w for c in C])
    M, _ = estimand_map(tuple(fit_on.x_labels), cand.mechanism, cand.query("estimate"))
    truth = t.numeric_w()
    # at 0: less than half a respondent's share (EM nears the boundary, never reaches it)
    at_zero = float(np.mean(np.any(E < 0.5 / n, axis=1))) if method in ("mle", "em") else 0.0
    why = f"the MLE sits at 0 for some category in {at_zero:.0%} of the samples" if at_zero >= 0.05 else None
    return (E if M is None else E @ M.T), (truth if M is None else M @ truth), why


def interval_estimates(model: ModelGraph, cand: Candidate, n: int, reps: int, rng: np.random.Generator
                       ) -> tuple[np.ndarray, np.ndarray, str | None]:
    """Replications of an interval mechanism's estimate of a moment: n values drawn from
    the population, privatized, and the point estimate fitted (no standard error)."""
    mech, q = cand.mechanism, cand.query("estimate")
    pop = population_law(model, mech.variable)
    if pop is None:
        raise NotApplicable("no population to draw from")
    order = cand.estimand.order or 1
    point = _interval_point(model, q, order)
    out = []
    for _ in range(reps):
        left, right = report_model(mech).draw(model, draw(pop, n, rng), rng)
        try:
            out.append(point(left, right))
        except (PrivspecError, ValueError, np.linalg.LinAlgError):
            continue   # a replication without an estimate, as simulate skips it
    return np.array(out, dtype=float), np.array([float(law_moment(pop, order))]), None


def _interval_point(model: ModelGraph, q: Query, order: int) -> Callable[[np.ndarray, np.ndarray], float]:
    """The estimator's point estimate of ``E Y^order`` from reports, without its standard error."""
    mech, method = q.mechanism, q.method.name
    rm = report_model(mech)
    if method == "mle":
        family = named_args(q)[0]

        def mle(left: np.ndarray, right: np.ndarray) -> float:
            l, r, c = aggregate(left, right)
            fit = parametric_mle(*rm.likelihood_pieces(l, r), c, family)
            if not fit.converged:
                raise ValueError("the fit did not converge")
            return float(fit.moment(order)[0])
        return mle
    if method == "npmle":
        lo, hi = support_of(mech.variable)

        def npmle(left: np.ndarray, right: np.ndarray) -> float:
            fit = fit_npmle(mech, *aggregate(left, right))
            iv, mass = np.asarray(fit.result.intervals, dtype=float), np.asarray(fit.result.mass, dtype=float)
            if rm.written_ends:
                on = mass > 0
                wl, wr, _ = written_intervals(iv[on, 0], iv[on, 1])
                iv, mass = np.column_stack([wl, wr]), mass[on]
            return float(npmle_functional(iv, mass, lambda y: y ** order, lo, hi)[0])
        return npmle
    return lambda left, right: float(estimate_from_reports(model, q, left, right).value)   # closed forms


# ---- replications from simulate ------------------------------------------------------------------------
def simulated_replications(model: ModelGraph, cand: Candidate, n: int, reps: int, seed: int | None,
                           alpha: float, truth: np.ndarray | None = None) -> Replications:
    """What the simulated criteria read off ``reps`` replications of ``simulate`` of the
    candidate's estimate (``truth``: the estimand's value per cell, where known); for a
    regression on a finite mechanism, its coefficients' fits on seeded simulated data."""
    if cand.estimand.kind == "regression":
        if family_of(cand.mechanism) not in FINITE:
            # a back end's simulate may draw another estimand (a design's latent share):
            # no figure rather than the wrong one
            raise NotApplicable(f"no simulation of a regression on {family_of(cand.mechanism)} designs: "
                                "its analytic values stand")
        E, coef, _ = regression_estimates(model, cand.query("estimate"), n, reps, np.random.default_rng(seed))
        return from_estimates(E, coef, n, alpha)
    r = answer(model, cand.query("estimate"), "simulate", n=n, reps=reps, seed=seed)
    S, full, R = empirical_covariance(r)
    return Replications(S, full, R, empirical_mse(r, n), float(scipy.stats.norm.ppf(1 - alpha / 2)), truth)


def empirical_mse(r: Result, n: int) -> tuple[float, float] | None:
    """The mean squared error summed over cells (bias included) and its Monte Carlo error."""
    v = r.value
    if "scaled_loss_mean" in v:                       # finite: n ||w_hat - w||^2 per replication
        return float(v["scaled_loss_mean"]) / n, float(v["scaled_loss_se"]) / n
    if "mse_se" in v and isinstance(v.get("truth"), Table):   # joints: the mean over cells
        cells = int(np.asarray(v["truth"].data).size)
        return float(v["mse"]) * cells, float(v["mse_se"]) * cells
    return None


def empirical_covariance(r: Result) -> tuple[np.ndarray, bool, int]:
    """n Cov of the replications' estimates from a ``simulation`` result: (matrix, whether
    it is the full covariance or only its diagonal, replications)."""
    v, R = r.value, int(r.reps or 0)
    if R < 2:
        raise NotApplicable("fewer than two replications succeeded")
    if isinstance(v.get("n_cov_empirical"), Matrix):
        return np.asarray(v["n_cov_empirical"].data, dtype=float), True, R
    emp = v.get("n_var_empirical")
    if isinstance(emp, Table):
        return np.diag(np.asarray(emp.data, dtype=float).ravel()), False, R
    if emp is not None:
        return np.array([[float(emp)]]), True, R
    raise NotApplicable("the simulation gives no empirical variance")
