"""Mechanisms -> channels.  A mechanism only says how to build its channel; all the
analysis is written once in :mod:`privspec.backends.core.channel`."""
from __future__ import annotations

import dataclasses
import itertools
import weakref
from typing import Any, Callable

import numpy as np
import sympy

from privspec.errors import BackendError, Diagnostic
from privspec.limits import UNIFORM_ENUM_LIMIT
from privspec.model.graph import ProductMechanism, RandomizedResponse, SubsetMechanism
from privspec.backends.core.channel import (Channel, affine_channel, kuk_channel, matrix_channel, product_channel,
                                            subset_channel)
from privspec.backends.core.grr_channel import grr_channel
from privspec.backends.core.uniform import UniformChannel, constants, uniform_facts

#: labels of the two dummy categories of Appendix II (made unique against the variable's)
DUMMY_LABELS = ("_dummy1", "_dummy2")

# Channels are built once per mechanism and forgotten with it: mechanisms are frozen
# dataclasses, so a weak mapping keyed by them holds each channel exactly as long as some
# model holds its mechanism (equal mechanisms share one channel).
_CHANNELS: "weakref.WeakKeyDictionary[Any, Channel]" = weakref.WeakKeyDictionary()
_CHANNELS_IN_W: "weakref.WeakKeyDictionary[Any, Channel]" = weakref.WeakKeyDictionary()


def _cached(cache: "weakref.WeakKeyDictionary[Any, Channel]", mechanism: Any, build: Callable[[], Channel]) -> Channel:
    try:
        hit = cache.get(mechanism)
    except TypeError:  # an unhashable mechanism (never from the front end): no cache
        return build()
    if hit is None:
        hit = cache[mechanism] = build()
    return hit


def large_uniform(mechanism: Any) -> bool:
    """A uniform subset design too large to enumerate (its 2^p subsets); the closed forms of
    :mod:`privspec.backends.core.uniform` serve it instead."""
    return isinstance(mechanism, SubsetMechanism) and mechanism.design.kind == "uniform" \
        and mechanism.min_coverage is None and mechanism.variable.p > UNIFORM_ENUM_LIMIT


def observed_subset_channel(mechanism: SubsetMechanism, masks: list[int]) -> Channel:
    """The channel restricted to the subsets actually observed (bitmasks), for the uniform
    design on many categories: the likelihood involves only observed subsets, and
    ``mu_a = 2 nu`` is the same for all of them."""
    labels = mechanism.variable.labels
    p = len(labels)
    nu, _, _ = constants(p)
    masks = sorted(masks)
    # membership bits from Python ints of any width (a uniform design may have 64+ categories)
    nbytes = (p + 7) // 8
    raw = np.frombuffer(b"".join(m.to_bytes(nbytes, "little") for m in masks), dtype=np.uint8)
    T = np.unpackbits(raw.reshape(len(masks), nbytes), axis=1, bitorder="little")[:, :p].T.astype(float)
    # numeric only: there may be as many observed subsets as respondents
    obs = tuple("|".join(labels[j] for j in range(p) if m >> j & 1) for m in masks)
    return Channel(tuple(labels), obs, float(2 * nu) * T.T, T, tuple(masks), kind="subset",
                   note="uniform design, observed subsets only", closed=UniformChannel(tuple(labels)))


def channel_of(mechanism: Any) -> Channel:
    """The channel of a finite mechanism (cached per mechanism object).

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load("variable c: categorical {a, b, c, d}\\nmechanism u = subset(c, uniform)").model
    >>> ch = channel_of(m.mechanisms["u"])
    >>> ch.n_obs, ch.K[0, 0]
    (6, 1/3)
    """
    if large_uniform(mechanism):
        raise BackendError(Diagnostic("B007", f"this needs all 2^{mechanism.variable.p} subsets of the uniform "
                                      f"design on {mechanism.variable.p} categories",
                                      hint="closed forms cover moments, the MoM covariance and size coverage; "
                                           "estimation uses the observed subsets only"))
    return _cached(_CHANNELS, mechanism, lambda: _build(mechanism))


def _build(mechanism: Any) -> Channel:
    if isinstance(mechanism, SubsetMechanism):
        return _subset(mechanism)
    if isinstance(mechanism, RandomizedResponse):
        if mechanism.kind == "grr":  # closed forms for its epsilon and covariance
            return grr_channel(mechanism.variable.labels, mechanism.epsilon, note="grr randomized response",
                               P=mechanism.randomization_matrix())
        if mechanism.kind == "kuk":  # reports other than the categories: the red cards
            return kuk_channel(mechanism.variable.labels, mechanism.randomization_matrix(), mechanism.reports)
        return matrix_channel(mechanism.variable.labels, mechanism.randomization_matrix(),
                              note=f"{mechanism.kind} randomized response")
    if isinstance(mechanism, ProductMechanism):
        return product_channel([channel_of(f) for f in mechanism.factors])
    raise TypeError(f"{type(mechanism).__name__} is not a finite mechanism")


def channel_in_w(mechanism: Any) -> Channel:
    """The channel whose unknown is the population w of the mechanism's own variable: the
    mechanism's channel; for dummy categories (``min_coverage``, Appendix II) the affine
    channel ``K_eff w + b`` over the real categories (:func:`affine_channel`), whose
    observations are the same; for the uniform design on many categories its closed forms
    (:class:`~privspec.backends.core.uniform.UniformChannel`).  Estimators, covariances and
    privacy measures are written once, for channels."""
    if large_uniform(mechanism):  # closed forms, never enumerated
        return _cached(_CHANNELS_IN_W, mechanism, lambda: UniformChannel(mechanism.variable.labels))
    if not (isinstance(mechanism, SubsetMechanism) and mechanism.min_coverage is not None):
        return channel_of(mechanism)
    return _cached(_CHANNELS_IN_W, mechanism, lambda: affine_channel(
        channel_of(mechanism), mechanism.variable.p, mechanism.min_coverage))


def dummy_labels(labels: tuple[str, ...]) -> tuple[str, str]:
    """Two dummy-category labels that no real category uses."""
    d1, d2 = DUMMY_LABELS
    while d1 in labels or d2 in labels:
        d1, d2 = "_" + d1, "_" + d2
    return d1, d2


def base_independent_design(mechanism: SubsetMechanism) -> dict[frozenset, sympy.Expr]:
    """The independent design nu behind a uniform or independent mechanism.

    For the dummy-category mechanisms of Appendices II-III the uniform design on p < 4
    categories is uniform over the subsets of size 1..p-1 (Appendix III allows |A| = 1
    and p - 1 there, since a dummy is always added).
    """
    labels = mechanism.variable.labels
    p = len(labels)
    design = mechanism.design
    if design.kind == "independent":
        return dict(design.weights)
    if design.kind != "uniform":
        raise ValueError("dummy categories (min_coverage) need a uniform or independent design (Appendix II)")
    lo, hi = (2, p - 2) if p >= 4 else (1, p - 1)
    subsets = [frozenset(a) for k in range(lo, hi + 1) for a in itertools.combinations(labels, k)]
    return {a: sympy.Rational(1, len(subsets)) for a in subsets}


def _subset(mechanism: SubsetMechanism) -> Channel:
    labels = mechanism.variable.labels
    free = [k for k, _ in mechanism.design.weights if isinstance(k, sympy.Symbol)]
    if mechanism.design.kind == "sizes" and free:
        raise BackendError(Diagnostic(
            "B009", f"the subset size {free[0]} has no value: this needs a number",
            hint=f"give it a value (parameter {free[0]} = 2), or search its whole numbers in a compare "
                 f"block with a target (parameter {free[0]} >= 2 <= {len(labels)})", span=mechanism.span))
    if mechanism.min_coverage is None:
        ch = subset_channel(labels, mechanism.conditional_design(), note=f"{mechanism.design.kind} design")
        if mechanism.design.kind == "uniform" and len(labels) >= 4:
            ch = dataclasses.replace(ch, facts=uniform_facts(len(labels)))
        return ch
    # Appendix II: the domain grows to p + 2 with two dummy categories.  A true respondent
    # draws A containing X from the design and one dummy is added with probability 1/2;
    # a dummy respondent (category d) draws A~ from nu and reports A~ + {d}.
    nu = base_independent_design(mechanism)
    full = frozenset(labels)
    mu: dict[frozenset, Any] = {}
    for a, v in nu.items():
        for b in (a, full - a):
            if b:
                mu[b] = mu.get(b, 0) + v
    d1, d2 = dummy_labels(labels)
    enlarged = tuple(labels) + (d1, d2)
    p = len(labels)
    observed = sorted({a for a in mu if mu[a] != 0} | {a for a in nu if nu[a] != 0},
                      key=lambda a: (len(a), sorted(labels.index(x) for x in a)))
    rows, obs_sets = [], []
    for d in (d1, d2):
        for a in observed:
            row = [sympy.Rational(1, 2) * mu.get(a, 0) if labels[j] in a else 0 for j in range(p)]
            row += [nu.get(a, 0) if d == dd else 0 for dd in (d1, d2)]
            rows.append(row)
            obs_sets.append(a | {d})
    index = {lab: i for i, lab in enumerate(enlarged)}
    masks = tuple(sum(1 << index[x] for x in s) for s in obs_sets)
    K = sympy.Matrix(rows)
    T = sympy.Matrix(len(enlarged), len(rows), lambda j, i: 1 if masks[i] >> j & 1 else 0)
    obs = tuple("|".join(lab for lab in enlarged if lab in s) for s in obs_sets)
    return Channel(enlarged, obs, K, T, masks, kind="subset",
                   note=f"{mechanism.design.kind} design with dummy categories (Appendix II), "
                        f"alpha = {mechanism.min_coverage}")


def population_on_channel(mechanism: Any, w: Any) -> Any:
    """The population on the mechanism's own channel, given w over its variable's
    categories: ``((1 - 2 alpha) w, alpha, alpha)`` with dummy categories (Appendix II),
    else w itself."""
    if isinstance(mechanism, SubsetMechanism) and mechanism.min_coverage is not None:
        return enlarge_population(w, mechanism.min_coverage)
    return w


def enlarge_population(w: Any, alpha: Any) -> Any:
    """``((1 - 2 alpha) w, alpha, alpha)``: the population on the enlarged domain (Appendix II)."""
    if isinstance(w, sympy.MatrixBase):
        return sympy.Matrix(list((1 - 2 * alpha) * w) + [alpha, alpha])
    a = float(alpha)
    return np.concatenate([(1 - 2 * a) * np.asarray(w, dtype=float), [a, a]])
