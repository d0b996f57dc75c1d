"""A comparison over its plausible populations (``at populations = dirichlet(200)`` or
``at populations = [categorical(...), ...]``): each candidate's criteria at the declared
population (the plug-in) and at every population of the set, the worst value of each by
its direction and where it is reached, and whether each target is met at all of them.

A designer does not know the population (that is why the survey is run): a design that
meets its targets at the plug-in may miss them at a population as plausible. The set is
one model per population, built once for every candidate
(:func:`privspec.backends.core.populations.with_population`); each is evaluated by an
:class:`privspec.backends.design.criteria.Evaluation` of its own. A candidate's channel
does not depend on the population and is compiled once (cached per mechanism), and a
population drawn in floating point is evaluated in floating point.

Examples
--------
>>> import privspec
>>> spec = privspec.load('''
... variable x: categorical {a, b, c}
... population x ~ categorical(1/2, 3/10, 1/5)
... compare d for distribution(x) at n = 500, populations = [categorical(0.58, 0.32, 0.1)] {
...     rr = grr(x, epsilon = 2)
... } by max_se''')
>>> doc = spec.compare()["d"].value
>>> v = doc.candidates[0].values["max_se"]
>>> v.worst >= v.value, v.worst_at
(True, 'categorical(0.58, 0.32, 0.1)')
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import sympy

from privspec.language.source import Span
from privspec.model.graph import Law, ModelGraph, PlausiblePopulations, Plan, Target
from privspec.results.comparison import CriterionValue
from privspec.backends.core.populations import population_vector, with_population
from privspec.backends.design.criteria import REGISTRY, Candidate, Evaluation, NotApplicable

#: what the plug-in is called where it is the worst case
PLUG_IN = "the declared population"


@dataclass
class PopulationSet:
    """The plausible populations of a comparison: a ``description`` of the set in words,
    and a model per population with the population in words (``models``); ``none``: why the
    set could not be built (no population to draw around, a population declared jointly
    with other variables)."""

    description: str
    models: list[tuple[str, ModelGraph]] = field(default_factory=list)
    none: str | None = None


def population_set(model: ModelGraph, plausible: PlausiblePopulations) -> PopulationSet:
    """The models of ``plausible``: its listed laws (named as written), or its Dirichlet
    draws around the declared population (named ``draw K: (shares...)``)."""
    names = plausible.variables
    of = ", ".join(names)
    if plausible.laws:
        texts = [_text(model, span, law) for law, span in zip(plausible.laws, plausible.spans or
                                                               [None] * len(plausible.laws))]
        out = PopulationSet(f"{PLUG_IN} of {of} and {len(texts)} listed: {'; '.join(texts)}")
        laws = list(zip(texts, plausible.laws))
    else:
        c = float(plausible.concentration)  # type: ignore[arg-type]
        out = PopulationSet(f"{PLUG_IN} of {of} and {plausible.draws} draws from a Dirichlet with mean it and "
                            f"concentration {c:g} (seed {plausible.seed})")
        w = population_vector(model, [model.variables[v] for v in names])
        if w is None:
            out.none = f"no population is declared for {of}: a Dirichlet around it has no mean"
            return out
        laws = dirichlet_laws(np.array([float(x) for x in w]), c, plausible.draws, plausible.seed)
    try:
        out.models = [(text, with_population(model, names, law)) for text, law in laws]
    except ValueError as e:
        out.none = f"{e}: its plausible populations cannot be varied alone"
    return out


def dirichlet_laws(w: np.ndarray, concentration: float, draws: int, seed: int) -> list[tuple[str, Law]]:
    """``draws`` populations from a Dirichlet with mean ``w`` and total ``concentration``
    (a zero share stays zero), seeded, each named by its number and shares.

    Examples
    --------
    >>> import numpy as np
    >>> [text for text, _ in dirichlet_laws(np.array([0.5, 0.5, 0.0]), 100.0, 2, 0)]
    ['draw 1: (0.482, 0.518, 0)', 'draw 2: (0.436, 0.564, 0)']
    """
    on = w > 0
    got = np.random.default_rng(seed).dirichlet(concentration * w[on], size=draws)
    out = []
    for k, shares in enumerate(got, 1):
        full = np.zeros(len(w))
        full[on] = shares
        text = f"draw {k}: ({', '.join(f'{x:.3g}' for x in full)})"
        out.append((text, Law("categorical", probs=tuple(sympy.Float(float(x), 17) for x in full),
                              shape=(len(w),))))
    return out


def _text(model: ModelGraph, span: Span | None, law: Law) -> str:
    """A listed population as the spec writes it (its family's name without the source)."""
    if span is not None and model.source is not None:
        return " ".join(model.source.text[span.start:span.end].split())
    return law.family


def worst_cases(ev: Evaluation, pset: PopulationSet, criteria: Sequence[str], n: int, plan: Plan
                ) -> dict[str, tuple[float | None, str | None]]:
    """Each criterion's worst value over the plug-in (``ev``) and the set, by its direction,
    with the population where it is reached (``(None, "n/a at ...: why")`` where it does not
    apply at one of them; ``(None, None)`` where it does not apply at the plug-in)."""
    cand: Candidate = ev.cand
    at = [(PLUG_IN, ev)] + [(text, Evaluation(m, cand, plan)) for text, m in pset.models]
    out: dict[str, tuple[float | None, str | None]] = {}
    for crit in criteria:
        worst: tuple[float, str] | None = None
        values = []
        for text, e in at:
            try:
                v = e.at(crit, n)
            except NotApplicable as why:
                worst = None
                out[crit] = (None, None) if text == PLUG_IN else (None, f"n/a at {text}: {why}")
                break
            values.append(v)
            if worst is None or REGISTRY[crit].better_than(worst[0], v):
                worst = (v, text)
        if worst is not None:
            same = len(set(values)) == 1 and len(values) > 1
            out[crit] = (worst[0], "every population (the same at each)" if same else worst[1])
    return out


def robust_row(ev: Evaluation, pset: PopulationSet, values: Mapping[str, CriterionValue],
               targets: Sequence[Target], n: int) -> dict[str, bool | None]:
    """Fill each criterion's ``worst`` and ``worst_at`` over the set; whether each target
    is met at every plausible population (None: the criterion does not apply, or the set
    could not be built), by the target's text."""
    if pset.none is not None:
        return {str(t): None for t in targets}
    names = list(dict.fromkeys(list(values) + [t.criterion for t in targets]))
    worst = worst_cases(ev, pset, names, n, ev.plan)
    for crit, entry in values.items():
        entry.worst, entry.worst_at = worst[crit]
    return {str(t): None if worst[t.criterion][0] is None else bool(t.met(worst[t.criterion][0]))
            for t in targets}
