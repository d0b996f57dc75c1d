"""The randomizer in JavaScript, generated from a spec: ``privspec client SPEC --out randomizer.js``.

One self-contained ES module (no import, no network) exposing ``privatize(answers) ->
reports`` (``{"<mechanism>": report}``), for a survey page or a survey platform that keeps
its own pages: the respondent's answers are privatized on the respondent's device, and
only the reports leave it.  Each report is written as privspec writes it in a data file
(:mod:`privspec.backends.finite.data`): one label, or a subset's labels joined by ``|`` in
the variable's order; a combined variable's label joins its parts with ``.``; a product's
report is ``{column: report}``, one per factor's variable (a file's columns).

The JavaScript draws from the law Python's ``privatize`` draws from, by construction:
each factor's law is written here from the same place
:func:`privspec.backends.finite.data.privatize_codes` takes it -- the channel's columns
``K[., x]`` (:func:`privspec.backends.core.compile.channel_of`), GRR's keep and other
probabilities, an independent design's nu
(:func:`privspec.backends.core.compile.base_independent_design`) with the complement rule of
Definition 3, the uniform design's rejection rule (Definition 4) -- and the module's
runtime (``randomizer.js`` beside this file) inverts the same CDFs from uniform doubles of
53 bits drawn from ``crypto.getRandomValues`` (never ``Math.random``); ``privatize(answers,
{random})`` takes a seeded generator (``seededRandom(seed)``) for tests.

Interval mechanisms (``interval(X, case1|case2|canonical|ring(...), disclose [a, b])``)
export ``drawAnchors(name)`` (the sorted anchors to show the respondent) and
``rangeReport(name, anchors, k)`` (the report of the side the respondent chose: k anchors
below the answer), as the interval-privacy paper's survey interface asks; ``privatize``
takes the number itself; ``progressive`` is asked as successive questions
(``nextAnchor``, ``answerRound``, ``progressiveReport``).

The frequency oracles: the one-round ones (:func:`oracle_law`), the longitudinal ones
(:func:`longitudinal_law`: the permanent randomized response is drawn once per
respondent and value and kept on the device, in ``localStorage`` or the store passed as
``privatize(answers, {store})``), the multi-attribute ones (:func:`multi_law`: ``spl``,
``smp``, ``rsfd``, a report ``{column: report}`` as privatize writes its columns).
``selective`` (Definition 5) is drawn on the device too: whether a range is collected
depends on the range, so a range the collector received and then dropped would already
have left the respondent; the module holds the population law its coverage is computed
under (:func:`selective_law`).  ``censored`` is refused (B000): censored data are not
drawn by a respondent.

The numeric local-DP mechanisms (``laplace``, ``duchi``, ``piecewise``, ``hm``,
``square_wave``: :func:`numeric_law`) take the number itself, refuse one outside the
declared range ``[a, b]`` (as ``privatize`` refuses it, D106), map it onto the mechanism's
domain as :meth:`~privspec.backends.numeric.mechanisms.NumericLDP.to_domain` does and
draw the report as its ``sample`` does, from the parameters :func:`numeric_law` writes
(the doubles of the same objects); a report is written as ``privatize`` writes it
(Python's ``repr`` of the double: ``formatRepr`` in the runtime).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from privspec.errors import BackendError, Diagnostic, did_you_mean
from privspec.model.graph import (CensoredMechanism, IntervalMechanism, ProductMechanism, ProgressiveMechanism,
                                  RandomizedResponse, SelectiveMechanism, SubsetMechanism)
from privspec.backends.core.algebra import Float
from privspec.backends.core.grr_channel import GRRChannel
from privspec.backends.core.compile import base_independent_design, channel_of
from privspec.backends.interval.laws import law_distribution, nearest_double, support_of
from privspec.backends.interval.reports import selective_population
from privspec.backends.numeric.backend import ldp_of
from privspec.backends.numeric.mechanisms import Duchi, Hybrid, Laplace, NumericLDP, Piecewise, SquareWave
from privspec.backends.oracles.backend import oracle_of
from privspec.backends.oracles.memoized import LongitudinalOracle
from privspec.backends.oracles.multi_backend import multi_of
from privspec.backends.oracles.multidim import SAMPLED, MultiOracle
from privspec.backends.oracles.protocol import Oracle

#: the runtime the laws are put into (package data)
RUNTIME = Path(__file__).with_name("randomizer.js")
#: where the runtime takes the laws
SLOT = "/*LAWS*/"


def client_module(model: Any, mechanisms: Sequence[str] | None = None) -> str:
    """The ES module that privatizes answers with ``mechanisms`` (names; every mechanism
    of the model by default).  A mechanism the randomizer cannot run yet is refused
    (B000, not supported yet), naming it; an unknown name is a KeyError.

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load("variable c: categorical {a, b, c}\\nmechanism k = grr(c, epsilon = 1)").model
    >>> text = client_module(m)
    >>> "export function privatize" in text and "Math.random" not in text
    True
    """
    names = list(model.mechanisms) if mechanisms is None else list(mechanisms)
    unknown = [n for n in names if n not in model.mechanisms]
    if unknown:
        hint = did_you_mean(unknown[0], list(model.mechanisms))
        raise KeyError(f"no mechanism named '{unknown[0]}'" + (f"; {hint}" if hint else ""))
    if not names:
        raise BackendError(Diagnostic("B000", "the spec declares no mechanism: there is nothing to randomize"))
    laws = {name: mechanism_law(model, model.mechanisms[name], name) for name in names}
    text = json.dumps(laws, indent=1, allow_nan=False)
    return RUNTIME.read_text(encoding="utf-8").replace(SLOT, text, 1)


def mechanism_law(model: Any, mechanism: Any, name: str) -> dict[str, Any]:
    """A mechanism's report law as the runtime reads it: ``{"product": bool, "factors":
    [factor_law, ...]}`` (an oracle's: :func:`oracle_law`, :func:`longitudinal_law`; a
    multi-attribute oracle's ``{"multi": multi_law}``: :func:`multi_law`); B000 for a
    mechanism it cannot run, saying why."""
    family = getattr(mechanism, "family", None)
    if family == "oracle":
        o = oracle_of(model, mechanism)
        law = longitudinal_law(o, mechanism.variable, name) if isinstance(o, LongitudinalOracle) \
            else oracle_law(o, mechanism.variable)
        return {"product": False, "factors": [law]}
    if family == "multi_oracle":
        return {"product": False, "factors": [], "multi": multi_law(multi_of(model, mechanism), mechanism)}
    if family == "numeric":
        return {"product": False, "factors": [numeric_law(model, mechanism)]}
    if isinstance(mechanism, IntervalMechanism):
        return {"product": False, "factors": [interval_law(mechanism)]}
    if isinstance(mechanism, ProgressiveMechanism):
        return {"product": False, "factors": [progressive_law(mechanism)]}
    if isinstance(mechanism, SelectiveMechanism):
        return {"product": False, "factors": [selective_law(model, mechanism, name)]}
    if isinstance(mechanism, CensoredMechanism):
        raise BackendError(Diagnostic(
            "B000", f"mechanism '{name}' (censored) has no randomizer: censored data are not drawn by a "
                    "respondent, the censoring comes from how they were observed (inspection times, a "
                    "detection limit), so there is nothing to privatize on the respondent's device",
            hint="privspec client SPEC --mechanism NAME writes the randomizer of the named mechanisms only"))
    if not getattr(mechanism, "is_finite", False):
        raise BackendError(Diagnostic(
            "B000", f"mechanism '{name}' ({mechanism.family}: {getattr(mechanism, 'kind', mechanism.family)}) cannot "
                    "be run by the JavaScript randomizer yet: finite mechanisms (subset designs, grr, rr "
                    "matrices, products, RR-Joint), the frequency oracles (one-round, longitudinal, "
                    "multi-attribute), interval(...), progressive(...) and the numeric local-DP mechanisms only",
            hint="privspec client SPEC --mechanism NAME writes the randomizer of the named mechanisms only"))
    product = isinstance(mechanism, ProductMechanism)
    factors = list(mechanism.factors) if product else [mechanism]
    if product and any(isinstance(f, SubsetMechanism) and f.min_coverage is not None for f in factors):
        # as privatize refuses it (D012)
        raise BackendError(Diagnostic("B000", f"mechanism '{name}': dummy categories inside a product mechanism "
                                              "are not supported"))
    return {"product": product, "factors": [factor_law(f) for f in factors]}


def factor_law(mechanism: Any) -> dict[str, Any]:
    """One factor's law for true category ``x``, from where
    :func:`~privspec.backends.finite.data.privatize_codes` draws it: ``uniform`` and
    ``independent`` for the independent subset designs (drawn as Definition 3 says),
    ``grr`` for k-RR (its keep and other probabilities), ``columns`` for any other channel
    (conditional subset designs, ``sizes``, dummy categories, rr matrices: each column
    ``K[., x]`` as the cumulative probabilities of its reports of positive probability)."""
    variable = mechanism.variable
    law: dict[str, Any] = {"variable": variable.name, "parts": list(variable.parts or ()),
                           "categories": list(variable.labels)}
    labels = variable.labels
    if isinstance(mechanism, SubsetMechanism) and mechanism.design.is_independent \
            and mechanism.min_coverage is None:
        if mechanism.design.kind == "uniform":
            return {**law, "kind": "uniform"}
        nu = base_independent_design(mechanism)
        subsets = list(nu)
        probs = np.array([float(nu[a]) for a in subsets])
        return {**law, "kind": "independent",
                "subsets": [sorted(labels.index(t) for t in a) for a in subsets],
                "cdf": _column(probs)}
    ch = channel_of(mechanism)
    if isinstance(ch, GRRChannel) and list(ch.obs_labels) == list(ch.x_labels) and ch.p > 1:
        return {**law, "kind": "grr", "keep": float(ch.Kn[0, 0]), "other": float(ch.Kn[1, 0])}
    if not isinstance(mechanism, (SubsetMechanism, RandomizedResponse)):  # pragma: no cover - a new family
        raise TypeError(f"{type(mechanism).__name__} has no JavaScript law")
    K = np.asarray(ch.Kn, dtype=float)
    # the real categories only: dummy respondents (min_coverage) are the collector's to add
    columns = [_column(K[:, x]) for x in range(len(labels))]
    return {**law, "kind": "columns", "reports": list(ch.obs_labels), "cdf": columns}


def oracle_law(o: Oracle, variable: Any) -> dict[str, Any]:
    """A one-round frequency oracle's law, from the oracle privatize samples with
    (:func:`privspec.backends.oracles.backend.oracle_of`, its ``probs``): its reports are
    written as privspec writes them (:func:`privspec.backends.oracles.pure.format_reports`):
    ``grr`` the category's code, ``sue``/``oue`` the bits in hex, ``ss`` the codes joined by
    ``|``, ``blh``/``olh`` ``seed:value`` (the seed of
    :func:`privspec.backends.oracles.protocols.hash_values`' family: the runtime's
    ``localHash`` is bit-identical), ``hr`` the index j."""
    law: dict[str, Any] = {"variable": variable.name, "parts": list(variable.parts or ()),
                           "categories": list(variable.labels)}
    p, q = (float(v) for v in o.probs(Float))
    if o.kind == "grr":
        return {**law, "kind": "grr", "keep": p, "other": q, "reports": [str(c) for c in range(o.d)]}
    if o.kind in ("sue", "oue"):
        return {**law, "kind": "unary", "p": p, "q": q}
    if o.kind == "ss":
        return {**law, "kind": "ss", "k": int(o.k), "pi": p}
    if o.kind in ("blh", "olh"):  # the hash: localHash in the runtime, hash_values' family
        return {**law, "kind": "lh", "g": int(o.g), "p": p}
    return {**law, "kind": "hr", "K": int(o.K), "p": p}


def longitudinal_law(lo: LongitudinalOracle, variable: Any, name: str) -> dict[str, Any]:
    """A longitudinal oracle's law (:mod:`privspec.backends.oracles.memoized`): the
    permanent randomized response (PRR), the one-round oracle of ``lo.ROUNDS[0]`` at
    ``eps_perm`` (``p1, q1``: grr keeps the category with ``p1``, else moves to each other
    with ``q1``; ue sets bit x with ``p1``, each other with ``q1``), drawn once per
    respondent and value -- at first use for every value, independently, so that the
    store does not show which values the respondent held -- and kept on the device under
    ``memo`` (the runtime's store: ``localStorage`` in a browser); every collection then
    reports the instantaneous
    randomized response (IRR) of the kept PRR, fresh: grr keeps the kept code with ``p2``,
    else a uniform other; ue sets bit v with ``p2`` where the kept bit is 1, ``q2`` where
    it is 0 -- :meth:`~privspec.backends.oracles.memoized.LongitudinalOracle.irr`.  Reports
    as the IRR's one-round oracle writes them (a code, or the bits in hex)."""
    law: dict[str, Any] = {"variable": variable.name, "parts": list(variable.parts or ()),
                           "categories": list(variable.labels)}
    unary = lo.ROUNDS[0] != "grr"
    permanent = ({**law, "kind": "unary", "p": float(lo.p1), "q": float(lo.q1)} if unary else
                 {**law, "kind": "grr", "keep": float(lo.p1), "other": float(lo.q1),
                  "reports": [str(c) for c in range(lo.d)]})
    return {**law, "kind": "longitudinal", "permanent": permanent, "p2": float(lo.p2), "q2": float(lo.q2),
            "memo": f"privspec:{name}:{lo.kind}:{lo.d}:{lo.eps_perm!r}"}


def multi_law(mo: MultiOracle, mechanism: Any) -> dict[str, Any]:
    """A multi-attribute oracle's law (:mod:`privspec.backends.oracles.multidim`): each
    attribute's one-round oracle (:func:`oracle_law` of ``mo.oracles``, at the protocol's
    per-attribute epsilon); ``spl`` reports every attribute; ``smp`` draws the attribute
    ``s`` uniformly, reports it alone (the others' cells empty) and writes ``s`` in the
    column ``sampled``; ``rsfd`` draws ``s`` uniformly, reports it through its oracle and
    every other attribute as fake data (``uniform``: a uniform code; ``zero``: every bit
    on with the oracle's q; ``random``: the oracle's report of a uniform category), ``s``
    not written (:mod:`privspec.backends.oracles.fakes`)."""
    attributes = [oracle_law(o, v) for o, v in zip(mo.oracles, mechanism.attributes)]
    for law, o in zip(attributes, mo.oracles):
        law["q0"] = float(o.probs(Float)[1])  # the zero fake's bit probability (ue only)
    return {"protocol": mo.protocol, "attributes": attributes, "fakes": list(mo.fakes or ()),
            "sampled": SAMPLED if mo.KEEPS_SAMPLED else None}


def interval_law(mechanism: IntervalMechanism) -> dict[str, Any]:
    """An interval mechanism's law, from where
    :func:`privspec.backends.interval.sampling.sample_interval` draws it: ``count`` iid
    anchors (m - 1; ``ring``: q) of the anchor law (its ``loc + scale * X`` of
    :func:`privspec.backends.interval.laws.law_distribution`), sorted; the range holding
    the answer, the ring range for ``ring``'s ends, the answer itself in ``disclose``."""
    ring = mechanism.scheme == "ring"
    disclose = None if mechanism.disclose is None else [nearest_double(v) for v in mechanism.disclose]
    return {"variable": mechanism.variable.name, "parts": [], "kind": "interval",
            "support": [_json_end(v) for v in support_of(mechanism.variable)],
            "count": int(mechanism.m if ring else mechanism.m - 1), "ring": ring,
            "anchor": _loc_scale(law_distribution(mechanism.anchor)), "disclose": disclose}


def numeric_law(model: Any, mechanism: Any) -> dict[str, Any]:
    """A numeric local-DP mechanism's law, from the sampler ``privatize`` draws with
    (:func:`privspec.backends.numeric.backend.ldp_of`, its ``sample``): the declared range
    ``support`` the value is checked in and mapped from, the mechanism's ``domain``, and
    the doubles its sampler uses (:func:`numeric_parameters`)."""
    m = ldp_of(model, mechanism)
    return {"variable": mechanism.variable.name, "parts": [], "kind": "numeric",
            "support": list(support_of(mechanism.variable)), "domain": list(m.domain), **numeric_parameters(m)}


def numeric_parameters(m: NumericLDP) -> dict[str, Any]:
    """``protocol`` and the parameters of ``m.sample`` (:mod:`privspec.backends.numeric.mechanisms`):
    Laplace's ``scale``; Duchi's and piecewise's ``bound`` C (piecewise's ``keep``: the
    probability of the piece around t, ``e^(eps/2)/(e^(eps/2) + 1)``); the hybrid's
    ``alpha`` and its two parts; square wave's ``b`` and ``near`` (``2 b p``, the mass
    within b of the value)."""
    if isinstance(m, Laplace):
        return {"protocol": m.name, "scale": m.scale}
    if isinstance(m, Duchi):
        return {"protocol": m.name, "bound": m.bound}
    if isinstance(m, Piecewise):
        half = math.exp(m.epsilon / 2)
        return {"protocol": m.name, "bound": m.bound, "keep": half / (half + 1)}
    if isinstance(m, Hybrid):
        return {"protocol": m.name, "alpha": m.alpha, "piecewise": numeric_parameters(Piecewise(m.epsilon)),
                "duchi": numeric_parameters(Duchi(m.epsilon))}
    if isinstance(m, SquareWave):
        return {"protocol": m.name, "b": m.b, "near": 2 * m.b * m.p}
    raise TypeError(f"{type(m).__name__} has no JavaScript law")  # pragma: no cover - a new mechanism


def selective_law(model: Any, mechanism: SelectiveMechanism, name: str) -> dict[str, Any]:
    """``selective(M, tau, rho)`` (Definition 5) as
    :func:`privspec.backends.interval.sampling.sample_selective` draws it: the base's report
    (:func:`interval_law`), collected when its coverage under the population law
    (:func:`privspec.backends.interval.ranges.range_coverage`: the range less the acceptable
    range; a disclosed point 0) reaches ``tau`` and a coin ``W ~ Bern(rho)`` is 1, else
    ``null``.  A respondent-side mechanism: the paper's "not wish to answer" -- a range
    the collector received and dropped would already have left the device -- so the
    device decides, and needs the population law (B102 without one, as privatize)."""
    law = selective_population(model, mechanism, name)
    return {"variable": mechanism.variable.name, "parts": [], "kind": "selective",
            "support": [_json_end(v) for v in support_of(mechanism.variable)],
            "base": interval_law(mechanism.base), "tau": nearest_double(mechanism.tau),
            "rho": nearest_double(mechanism.rho), "population": _loc_scale(law_distribution(law))}


def progressive_law(mechanism: ProgressiveMechanism) -> dict[str, Any]:
    """``progressive(X, rounds = h)`` as :func:`privspec.backends.interval.sampling.sample_progressive`
    draws it without a sensitivity: each round an anchor uniform on the current range
    (from the support, which the checker keeps finite), the range shrunk to the answer's side."""
    lo, hi = support_of(mechanism.variable)
    return {"variable": mechanism.variable.name, "parts": [], "kind": "progressive", "support": [lo, hi],
            "rounds": int(mechanism.rounds)}


def _loc_scale(dist: Any) -> dict[str, Any]:
    """A frozen scipy law of :func:`~privspec.backends.interval.laws.law_distribution` as the
    runtime reads it: its family and ``loc + scale * X``."""
    family = {"uniform": "uniform", "norm": "normal", "logistic": "logistic", "expon": "exponential"}[dist.dist.name]
    return {"family": family, "loc": float(dist.kwds["loc"]), "scale": float(dist.kwds["scale"])}


def _json_end(x: float) -> float:
    """A support's end for JSON, which has no infinity: an unbounded end as the largest
    double (every finite answer lies within it)."""
    return x if np.isfinite(x) else float(np.copysign(np.finfo(float).max, x))


def _column(probs: np.ndarray) -> list[list[Any]]:
    """``[index, cumulative probability]`` of each outcome of positive probability,
    normalized: the CDF :func:`privatize_codes` inverts, without its zero steps."""
    positive = np.flatnonzero(probs > 0)
    cdf = np.cumsum(probs[positive] / probs[positive].sum())
    return [[int(i), float(c)] for i, c in zip(positive, cdf)]


__all__ = ["client_module", "mechanism_law", "factor_law", "oracle_law", "longitudinal_law", "multi_law", "interval_law",
           "numeric_law", "numeric_parameters", "selective_law", "progressive_law", "RUNTIME"]
