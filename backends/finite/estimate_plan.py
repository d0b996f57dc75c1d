"""A finite estimate compiled once and computed from counts alone: the run path of a spec
that has not changed.

:func:`estimate_plan` needs the model (the query, its mechanism's channel, sympy); the
:class:`~privspec.backends.finite.estimates.EstimatePlan` it returns holds numbers only (the
estimator's name and options, the channels as numeric snapshots, the estimand's map and
labels, the level), so it pickles, and :func:`estimate_result` computes the answer from
counts per observation in another process with numpy alone, through the same functions as
:func:`privspec.backends.finite.truth.estimate_on_counts`, which is
``estimate_result(estimate_plan(q, ch), counts)``: the same result to the last bit.

What loading a plan and computing imports: this module, the channel and estimator cores,
numpy, top-level scipy and the results' value types; never sympy, pandas, lark, the model
graph, nor scipy.stats, scipy.special, scipy.optimize or scipy.linalg for the estimates at
the plan's level (the MLE's profile likelihood intervals read the plan's critical values).
Only these load a scipy submodule, on first use: intervals at another level
(``conf_int(level)``: scipy.special, and scipy.stats for a profile interval), and the MLE's
check that data of rank below p still determine it (two linear programs: scipy.optimize).

A plan pickles its classes by reference (the channel, the plan): keep it for the code that
made it, with the spec's text (a cache keyed on both), and make it again after either changes.

Examples
--------
>>> import pickle, privspec
>>> from privspec.backends.core.compile import channel_of
>>> m = privspec.load('''
... variable c: categorical {a, b, c, d}
... mechanism u = subset(c, uniform)
... query w = estimate distribution(c) from u by mom''').model
>>> q, ch = m.queries["w"], channel_of(m.mechanisms["u"])
>>> plannable(q, ch)
True
>>> saved = pickle.dumps(estimate_plan(q, ch))               # kept between runs
>>> counts = np.array([30.0, 20.0, 25.0, 10.0, 5.0, 10.0])   # per subset of ch.obs_labels
>>> r = estimate_result(pickle.loads(saved), counts)
>>> [round(float(x), 3) for x in r.value.values]
[0.625, 0.175, 0.1, 0.1]
>>> from privspec.backends.finite.truth import estimate_on_counts
>>> r.to_dict() == estimate_on_counts(q, counts, ch).to_dict()
True
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from privspec.model.query_kinds import FINITE, family_of
from privspec.results.kinds import Estimate
from privspec.results.values import Inference, Table, Vector
from privspec.backends.core.blas import on_one_blas_thread
from privspec.backends.core.channel import Channel
from privspec.backends.core.estimators import ESTIMATORS
from privspec.backends.finite.estimates import EstimatePlan, FiniteEstimate, estimate_plan, fit_planned

if TYPE_CHECKING:  # start-up: the model graph imports sympy; computing from a plan needs neither
    from privspec.model.graph import Query

__all__ = ["EstimatePlan", "estimate_plan", "estimate_result", "plannable"]

#: the estimand kinds a plan computes
PLANNED_ESTIMANDS = ("distribution", "joint")
#: the families whose joints another back end estimates (randomized response: the castell
#: paper's estimators, :mod:`privspec.backends.rr`)
RR_FAMILIES = ("grr", "rr", "rr_product")


def plannable(q: Query, ch: Channel | None = None) -> bool:
    """Whether ``q``'s answer on counts per observation of ``ch`` is computed from a plan: an
    ``estimate`` of a distribution (or of a joint of a subset design or a product) of a finite
    mechanism by any estimator of :func:`~privspec.backends.finite.truth.estimate_on_counts`
    (mom, mle, em, newton, one_step) with no option but ``se``, on a full channel (``ch``
    None: the mechanism's, :func:`~privspec.backends.core.compile.channel_of`, whenever it
    can be enumerated).

    Not plannable: a partial channel (the uniform design on many categories, whose channel
    is the subsets its data hold), the estimates other back ends make (randomized
    response's joints and projected estimates), tests and regressions.  Weighted data
    (a survey design) take their own path (:mod:`privspec.backends.finite.weighted`) whatever
    this says.  :func:`estimate_plan` may still refuse a plannable query (a method the
    channel does not allow, B008; labels a joint cannot split, B017), as
    :func:`~privspec.backends.finite.truth.estimate_on_counts` would.

    Examples
    --------
    >>> import privspec
    >>> from privspec.backends.core.compile import channel_of
    >>> m = privspec.load('''
    ... variable c: categorical {a, b}
    ... variable d: categorical {x, y}
    ... mechanism r = grr(c, epsilon = 1)
    ... mechanism g = grr(d, epsilon = 1)
    ... mechanism both = product(r, g)
    ... query w = estimate distribution(c) from r by mle
    ... query j = estimate joint(c, d) from both by mom''').model
    >>> [plannable(q, channel_of(q.mechanism)) for q in (m.queries["w"], m.queries["j"])]
    [True, False]
    """
    method, estimand = q.method, q.estimand
    if q.kind != "estimate" or method is None or estimand is None or estimand.kind not in PLANNED_ESTIMANDS:
        return False
    family = family_of(q.mechanism)
    if not (family in FINITE and method.name in ESTIMATORS and set(method.options) <= {"se"}
            and not (estimand.kind == "joint" and family in RR_FAMILIES)):
        return False
    if ch is None:
        # start-up: the channels' compiler needs sympy and the model graph (a plan is made with both)
        from privspec.backends.core.compile import large_uniform
        return not any(large_uniform(f) for f in getattr(q.mechanism, "factors", None) or (q.mechanism,))
    return ch.closed is None


@on_one_blas_thread   # as the finite back end computes (its matrices are small): the same bits on any machine
def estimate_result(plan: EstimatePlan, counts: np.ndarray) -> Estimate:
    """The estimate on ``counts`` (per observation of ``plan.channel``) with its standard
    errors of the kind asked and its intervals: the result
    :func:`~privspec.backends.finite.truth.estimate_on_counts` gives, computed from the
    plan's numbers alone (:func:`~privspec.backends.finite.estimates.fit_planned`).

    Raises what refuses the fit (B020 unconverged, D020 undetermined, ValueError for counts
    that do not fit the channel or sum to 0).

    Examples
    --------
    >>> import privspec
    >>> from privspec.backends.core.compile import channel_of
    >>> m = privspec.load("variable c: categorical {a, b}\\nmechanism g = grr(c, epsilon = log(3))\\n"
    ...                   "query w = estimate distribution(c) from g by mom").model
    >>> r = estimate_result(estimate_plan(m.queries["w"], channel_of(m.mechanisms["g"])), np.array([70.0, 30.0]))
    >>> [round(float(x), 3) for x in r.value.values], r.extras["n"]
    ([0.9, 0.1], 100)
    """
    got = fit_planned(plan, np.asarray(counts, dtype=float)[None, :])[0]
    if isinstance(got, Exception):
        raise got
    est: FiniteEstimate = got
    fit = est.fit
    extras: dict = {"method": plan.method, "n": fit.n}
    if est.V is not None:
        extras["se"] = as_vector(est.se, est.labels)
        extras["se_kind"] = est.se_kind
    if est.ci is not None:
        extras["ci95"] = dict(zip(est.labels, np.asarray(est.ci, dtype=float).tolist()))  # [lo, hi] floats
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
    inference = estimate_inference(est)
    if plan.joint is not None:
        names, labels = zip(*plan.joint)
        table = Table(tuple(names), tuple(labels), est.w.reshape(tuple(len(x) for x in labels)))
        return Estimate(table, **extras, inference=inference)
    return Estimate(as_vector(est.w, est.labels), **extras, inference=inference)


def estimate_inference(est: FiniteEstimate) -> Inference:
    """The estimate's covariance (``V / n``, of its ``se_kind``) and its intervals at any level
    by the same method as ``ci95`` (the Python API's ``cov_params`` and ``conf_int``)."""
    cov = est.cov

    def interval(level: float) -> tuple[np.ndarray, np.ndarray]:
        ci = est.intervals(level) if est.intervals is not None else None
        if ci is None:
            raise ValueError(f"no intervals: {est.ci_method}")
        return ci[:, 0], ci[:, 1]

    return Inference(est.ci_method, interval, None if cov is None else (lambda: cov),
                     "" if cov is not None else "the estimator's covariance is singular at the estimate")


def as_vector(data: Any, labels) -> Vector:
    """A result vector with these labels, of sympy or numpy values.

    Examples
    --------
    >>> as_vector(np.array([0.25, 0.75]), ("a", "b")).labels
    ('a', 'b')
    """
    values = list(np.asarray(data).ravel()) if isinstance(data, np.ndarray) else list(data)
    return Vector(tuple(labels), tuple(values))
