"""The comparison document: what a ``compare`` block answers, as typed objects.

The comparison back end (:mod:`privspec.backends.design.comparison`) builds a
:class:`ComparisonDocument`, the value of a ``comparison`` result; the tables
(:mod:`privspec.results.comparison_tables`) and the report
(:mod:`privspec.results.compare_report`) read its attributes. ``to_dict()`` is its JSON-able
form, the value of the result in the JSON contract (LANGUAGE.md, "JSON results"; numbers
become JSON through :func:`privspec.results.values.to_json`), and ``from_dict`` reads that
form back, optional keys absent, None or empty.

A document holds, per candidate design (:class:`CandidateRow`), each criterion's value or
the reason it does not apply (:class:`CriterionValue`), its ranks, the targets it meets and
the sample sizes meeting them, its standard errors and power curve; beside them the Pareto
frontiers (:class:`Frontier`), the targets, the planning test (:class:`Planning`) and the
inverse designs of candidates with a free parameter (:class:`InverseDesign`).

Examples
--------
>>> doc = ComparisonDocument.from_dict({"name": "d", "criteria": ["max_se"], "candidates": [
...     {"name": "a", "values": {"max_se": {"value": 0.05}}, "rank": {"max_se": 1}}]})
>>> doc.candidates[0].values["max_se"].value, doc.candidates[0].rank
(0.05, {'max_se': 1})
>>> doc.to_dict()["candidates"][0]["values"]
{'max_se': {'value': 0.05}}
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


def _given(raw: Mapping[str, Any], key: str, default: Any) -> Any:
    """``raw[key]``, or ``default`` where the key is absent or None."""
    got = raw.get(key)
    return default if got is None else got


@dataclass
class CriterionInfo:
    """A criterion as the language defines it: its ``side`` (``utility`` or ``privacy``),
    which way is ``better`` (``lower`` or ``higher``), and its ``meaning`` in words."""

    side: str
    better: str
    meaning: str

    def to_dict(self) -> dict:
        return {"side": self.side, "better": self.better, "meaning": self.meaning}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> CriterionInfo:
        return cls(raw.get("side", ""), raw.get("better", ""), raw.get("meaning", ""))


@dataclass
class CriterionValue:
    """One criterion of one candidate: its analytic ``value`` at n, or None with the reason
    ``na``; ``exact``: its exact form, where one is known (the report shows it as a tooltip);
    from a simulation (``reps``), the ``simulated`` value with its Monte Carlo error
    ``mc_error`` and a note on how that error was computed (``mc_note``), or why the
    simulation gives none (``simulated_na``)."""

    value: float | None = None
    na: str | None = None
    exact: str | None = None
    simulated: float | None = None
    mc_error: float | None = None
    mc_note: str | None = None
    simulated_na: str | None = None
    #: the simulated value is the one to decide on: the asymptotic value is more than 10% off
    #: it (a rare category near the boundary, a small n)
    unreliable: bool = False
    #: over the comparison's plausible populations: the worst value and the population where
    #: it is reached (None without a set of populations)
    worst: float | None = None
    worst_at: str | None = None

    @property
    def decisive(self) -> float | None:
        """The value a verdict reads: the simulated one where the asymptotic one is unreliable."""
        return self.simulated if self.unreliable and self.simulated is not None else self.value

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"value": self.value}
        if self.exact is not None:
            out["exact"] = self.exact
        if self.na is not None:
            out["na"] = self.na
        if self.simulated is not None:
            out["simulated"], out["mc_error"] = self.simulated, self.mc_error
        if self.mc_note is not None:
            out["mc_note"] = self.mc_note
        if self.simulated_na is not None:
            out["simulated_na"] = self.simulated_na
        if self.unreliable:
            out["unreliable"] = True
        if self.worst is not None or self.worst_at is not None:
            out["worst"], out["worst_at"] = self.worst, self.worst_at
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | float) -> CriterionValue:
        """An entry, or a bare number (its value)."""
        if not isinstance(raw, Mapping):
            return cls(value=raw)
        return cls(**{k: raw.get(k) for k in ("value", "na", "exact", "simulated", "mc_error", "mc_note",
                                              "simulated_na", "worst", "worst_at")},
                   unreliable=bool(raw.get("unreliable")))


@dataclass
class StandardErrors:
    """A candidate's standard error per cell of its estimate at n."""

    labels: list[str]
    values: list[float]

    def to_dict(self) -> dict:
        return {"labels": list(self.labels), "values": list(self.values)}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> StandardErrors:
        return cls(list(_given(raw, "labels", [])), list(_given(raw, "values", [])))


@dataclass
class PowerCurve:
    """The power of the planning test over sample sizes ``n``, and at the document's n."""

    n: list[int]
    power: list[float]
    at_n: float | None = None

    def to_dict(self) -> dict:
        return {"n": list(self.n), "power": list(self.power), "at_n": self.at_n}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> PowerCurve:
        return cls(list(_given(raw, "n", [])), list(_given(raw, "power", [])), raw.get("at_n"))


@dataclass
class CandidateRow:
    """One candidate design: its ``name``, ``mechanism`` (as the spec writes it), ``family``
    and ``estimator``, the ``values`` of the criteria (by criterion), its standard errors
    (``se``, or None with the reason ``se_na``), whether it meets each target at n
    (``targets``: True, False or None where the criterion does not apply, by the target's
    text) and the fewest respondents meeting each utility target (``sample_size``: a number,
    or ``"n/a: reason"``), its power curve where the plan has a test (``power``, or None with
    the reason ``power_na``), its ``rank`` per criterion (1 best, None: n/a), and the Pareto
    frontiers: by whom it is dominated per ``"y vs x"`` pair (``dominated_by``), whether it is
    on some frontier (``pareto``) and which (``frontiers_on``)."""

    name: str
    mechanism: str = ""
    family: str = ""
    estimator: str = ""
    values: dict[str, CriterionValue] = field(default_factory=dict)
    se: StandardErrors | None = None
    se_na: str | None = None
    targets: dict[str, bool | None] = field(default_factory=dict)
    sample_size: dict[str, int | str] = field(default_factory=dict)
    power: PowerCurve | None = None
    power_na: str | None = None
    rank: dict[str, int | None] = field(default_factory=dict)
    dominated_by: dict[str, list[str]] = field(default_factory=dict)
    pareto: bool | None = None
    frontiers_on: list[str] | None = None
    #: the coefficient of variation SE_j / w_j per cell at n (SE / |mean| for a mean; a cell
    #: of share 0: None), where a population gives the estimand's value
    cv: StandardErrors | None = None
    #: what a reader of this design should know, in words (categories failing a publication
    #: rule, an asymptotic value replaced by a simulated one); the verdict repeats its design's
    flags: list[str] = field(default_factory=list)
    #: whether each target is met at every plausible population (None without a set of
    #: populations; a target's None: its criterion does not apply), by the target's text
    targets_everywhere: dict[str, bool | None] | None = None

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "mechanism": self.mechanism, "family": self.family,
                               "estimator": self.estimator,
                               "values": {k: v.to_dict() for k, v in self.values.items()},
                               "se": None if self.se is None else self.se.to_dict()}
        if self.se_na is not None:
            out["se_na"] = self.se_na
        out["targets"], out["sample_size"] = dict(self.targets), dict(self.sample_size)
        if self.power is not None or self.power_na is not None:  # the plan has a test
            out["power"] = None if self.power is None else self.power.to_dict()
            if self.power_na is not None:
                out["power_na"] = self.power_na
        out["rank"] = dict(self.rank)
        out["dominated_by"] = {k: list(v) for k, v in self.dominated_by.items()}
        out["pareto"] = self.pareto
        out["frontiers_on"] = self.frontiers_on
        if self.cv is not None:
            out["cv"] = self.cv.to_dict()
        if self.flags:
            out["flags"] = list(self.flags)
        if self.targets_everywhere is not None:
            out["targets_everywhere"] = dict(self.targets_everywhere)
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> CandidateRow:
        se, power, cv = raw.get("se"), raw.get("power"), raw.get("cv")
        return cls(name=raw.get("name", "?"), mechanism=_given(raw, "mechanism", ""),
                   family=_given(raw, "family", ""), estimator=_given(raw, "estimator", ""),
                   values={k: CriterionValue.from_dict(v) for k, v in _given(raw, "values", {}).items()
                           if v is not None},
                   se=None if se is None else StandardErrors.from_dict(se), se_na=raw.get("se_na"),
                   targets=dict(_given(raw, "targets", {})), sample_size=dict(_given(raw, "sample_size", {})),
                   power=None if power is None else PowerCurve.from_dict(power), power_na=raw.get("power_na"),
                   rank=dict(_given(raw, "rank", {})),
                   dominated_by={k: list(v) for k, v in _given(raw, "dominated_by", {}).items()},
                   pareto=raw.get("pareto"), frontiers_on=raw.get("frontiers_on"),
                   cv=None if cv is None else StandardErrors.from_dict(cv), flags=list(_given(raw, "flags", [])),
                   targets_everywhere=None if raw.get("targets_everywhere") is None
                   else dict(raw["targets_everywhere"]))


@dataclass
class Frontier:
    """The Pareto frontier of privacy criterion ``x`` against utility criterion ``y``: the
    candidates on it, the dominated ones with why (by name), and those not compared with why
    (n/a on one of the two)."""

    x: str
    y: str
    frontier: list[str] = field(default_factory=list)
    dominated: dict[str, str] = field(default_factory=dict)
    not_compared: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"x": self.x, "y": self.y, "frontier": list(self.frontier), "dominated": dict(self.dominated),
                "not_compared": dict(self.not_compared)}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Frontier:
        return cls(str(raw.get("x", "?")), str(raw.get("y", "?")), list(_given(raw, "frontier", [])),
                   dict(_given(raw, "dominated", {})), dict(_given(raw, "not_compared", {})))


@dataclass
class TargetEntry:
    """A target of the comparison: ``criterion op value`` (``max_se <= 0.01``)."""

    criterion: str
    op: str
    value: float

    def to_dict(self) -> dict:
        return {"criterion": self.criterion, "op": self.op, "value": self.value}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> TargetEntry:
        return cls(raw.get("criterion", "?"), raw.get("op", ""), raw.get("value"))


@dataclass
class Planning:
    """The plan's test in words (with its level; None without a test) and the target power."""

    test: str | None = None
    target_power: float | None = None

    def to_dict(self) -> dict:
        return {"test": self.test, "target_power": self.target_power}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Planning:
        return cls(raw.get("test"), raw.get("target_power"))


@dataclass
class InverseChoice:
    """One answer of an inverse design: the parameter's ``value`` that ``verb`` (``meets``
    the utility targets, or is the best utility ``at`` the privacy targets) the ``targets``
    (their text), with the criteria there (``criteria``, or why they could not be computed:
    ``criteria_na``); or ``none``: why no value in the range does."""

    value: float | None = None
    verb: str = "meets"
    targets: str = ""
    criteria: dict[str, float] = field(default_factory=dict)
    criteria_na: str | None = None
    none: str | None = None

    def to_dict(self) -> dict:
        if self.none is not None:
            return {"none": self.none}
        criteria = {"n/a": self.criteria_na} if self.criteria_na is not None else dict(self.criteria)
        return {"value": self.value, self.verb: self.targets, "criteria": criteria}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> InverseChoice:
        if "none" in raw:
            return cls(none=str(raw["none"]))
        verb = "at" if "at" in raw else "meets"
        criteria = dict(_given(raw, "criteria", {}))
        na = criteria.pop("n/a", None)
        return cls(raw.get("value"), verb, _given(raw, verb, ""), criteria, na)


@dataclass
class InverseDesign:
    """A candidate with one free ``parameter``: its ``range`` (``integer``: a subset size,
    searched over whole numbers), the ``privacy`` and ``utility`` criteria the search
    optimizes, and its two answers (:class:`InverseChoice`; None where there are no targets
    on that side); or ``none``: why there is no search."""

    candidate: str
    parameter: str
    privacy: str = ""
    utility: str = ""
    none: str | None = None
    range: list[float] | None = None
    integer: bool = False
    most_private: InverseChoice | None = None
    best_utility: InverseChoice | None = None

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"candidate": self.candidate, "parameter": self.parameter, "privacy": self.privacy,
                               "utility": self.utility}
        if self.none is not None:
            out["none"] = self.none
        if self.range is not None:
            out["range"] = list(self.range)
        if self.integer:
            out["integer"] = True
        for key, choice in (("most_private", self.most_private), ("best_utility", self.best_utility)):
            if choice is not None:
                out[key] = choice.to_dict()
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> InverseDesign:
        most, best = raw.get("most_private"), raw.get("best_utility")
        return cls(str(raw.get("candidate", "?")), str(raw.get("parameter", "?")), _given(raw, "privacy", ""),
                   _given(raw, "utility", ""), raw.get("none"), raw.get("range") or None, bool(raw.get("integer")),
                   None if most is None else InverseChoice.from_dict(most),
                   None if best is None else InverseChoice.from_dict(best))


@dataclass
class Recommendation:
    """The verdict of a comparison: the ``candidate`` to use (None where no design meets
    the targets), the verdict in words (``text``), why (``reasons``: the targets it meets,
    the criterion that decided among those that meet them and by how much; ``decided_by``
    names that criterion), the ``runner_up`` and what would change the choice
    (``changes``: the n or epsilon at which another design would win); where no design
    meets the targets, what is missing (``missing``) and the cheapest fixes (``fixes``: the
    n, the epsilon); and ``notes``: what the verdict rests on that a reader should know
    (simulated values used instead of asymptotic ones, categories failing a publication
    rule, whether the choice holds over every plausible population)."""

    candidate: str | None = None
    text: str = ""
    reasons: list[str] = field(default_factory=list)
    decided_by: str | None = None
    runner_up: str | None = None
    changes: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"candidate": self.candidate, "text": self.text, "reasons": list(self.reasons),
                               "decided_by": self.decided_by, "runner_up": self.runner_up,
                               "changes": list(self.changes)}
        for key in ("missing", "fixes", "notes"):
            if getattr(self, key):
                out[key] = list(getattr(self, key))
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | str) -> Recommendation:
        """A recommendation from its JSON form."""
        if isinstance(raw, str):
            return cls(text=raw)
        return cls(raw.get("candidate"), _given(raw, "text", ""), list(_given(raw, "reasons", [])),
                   raw.get("decided_by"), raw.get("runner_up"), list(_given(raw, "changes", [])),
                   list(_given(raw, "missing", [])), list(_given(raw, "fixes", [])), list(_given(raw, "notes", [])))


@dataclass
class ComparisonDocument:
    """The answer of a ``compare`` block: its ``name``, the spec's ``title``, the
    ``estimand``, the sample size ``n`` and level ``alpha`` the criteria are taken at, the
    ``criteria`` (in the block's order) with what each is (``criterion_info``), a row per
    candidate, the Pareto frontiers and the criteria on none (``not_on_frontiers``, with
    why), the ``targets``, the ``planning`` test (None without a test or power target), the
    inverse designs, the simulation's ``reps`` and ``seed`` (None
    without one), the ``spec`` text, and the verdict (:class:`Recommendation`)."""

    name: str = ""
    title: str | None = None
    estimand: str = ""
    n: int | None = None
    alpha: float | None = None
    criteria: list[str] = field(default_factory=list)
    criterion_info: dict[str, CriterionInfo] = field(default_factory=dict)
    candidates: list[CandidateRow] = field(default_factory=list)
    frontiers: list[Frontier] = field(default_factory=list)
    #: the criteria that draw no frontier, and why (not finite for every candidate, equal
    #: for all, or unable to compare different mechanisms)
    not_on_frontiers: dict[str, str] = field(default_factory=dict)
    targets: list[TargetEntry] = field(default_factory=list)
    planning: Planning | None = None
    inverse: list[InverseDesign] = field(default_factory=list)
    reps: int | None = None
    seed: int | None = None
    spec: str | None = None
    recommendation: Recommendation | None = None
    #: the plausible populations the worst cases are taken over, in words (None: the
    #: declared population only)
    populations: str | None = None

    def to_dict(self) -> dict:
        """The document as plain dicts and lists, as the JSON contract spells it (its numbers
        as they are: :func:`privspec.results.values.to_json` writes them as JSON)."""
        out: dict[str, Any] = {
            "kind": "comparison", "name": self.name, "title": self.title, "estimand": self.estimand, "n": self.n,
            "alpha": self.alpha, "criteria": list(self.criteria),
            "criterion_info": {k: v.to_dict() for k, v in self.criterion_info.items()},
            "candidates": [c.to_dict() for c in self.candidates], "frontiers": [f.to_dict() for f in self.frontiers],
            **({"not_on_frontiers": dict(self.not_on_frontiers)} if self.not_on_frontiers else {}),
            "targets": [t.to_dict() for t in self.targets],
            "planning": None if self.planning is None else self.planning.to_dict(),
            "inverse": [e.to_dict() for e in self.inverse], "reps": self.reps, "seed": self.seed, "spec": self.spec,
        }
        if self.recommendation is not None:
            out["recommendation"] = self.recommendation.to_dict()
        if self.populations is not None:
            out["populations"] = self.populations
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ComparisonDocument:
        """A document from its JSON form (:meth:`to_dict`; the ``value`` of a comparison in
        ``privspec compare --format json``); optional keys may be absent, None or empty."""
        planning = raw.get("planning")
        return cls(
            name=_given(raw, "name", ""), title=raw.get("title"), estimand=_given(raw, "estimand", ""),
            n=raw.get("n"), alpha=raw.get("alpha"), criteria=[str(k) for k in _given(raw, "criteria", [])],
            criterion_info={k: CriterionInfo.from_dict(v) for k, v in _given(raw, "criterion_info", {}).items()},
            candidates=[CandidateRow.from_dict(c) for c in _given(raw, "candidates", [])],
            frontiers=[Frontier.from_dict(f) for f in _given(raw, "frontiers", [])],
            not_on_frontiers=dict(_given(raw, "not_on_frontiers", {})),
            targets=[TargetEntry.from_dict(t) for t in _given(raw, "targets", [])],
            planning=Planning.from_dict(planning) if planning else None,
            inverse=[InverseDesign.from_dict(e) for e in _given(raw, "inverse", [])],
            reps=raw.get("reps"), seed=raw.get("seed"), spec=raw.get("spec"),
            recommendation=Recommendation.from_dict(raw["recommendation"]) if raw.get("recommendation") else None,
            populations=raw.get("populations"))
