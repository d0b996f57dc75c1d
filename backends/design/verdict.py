"""The verdict of a design comparison: which design to use, why, and what would change it.

:func:`recommend` reads the candidates' rows (their criteria, the targets they meet at n
and the sample sizes meeting them) and writes a :class:`privspec.results.comparison.Recommendation`.
"""
from __future__ import annotations

from typing import Sequence

from privspec.model.graph import Target
from privspec.results.comparison import CandidateRow, Recommendation
from privspec.backends.design.criteria import REGISTRY


def recommend(rows: Sequence[CandidateRow], criteria: Sequence[str], targets: Sequence[Target]
              ) -> Recommendation | None:
    """The most private candidate that meets every target at n, when one does."""
    privacy = [c for c in criteria if REGISTRY[c].side == "privacy"]
    if not targets or not privacy:
        return None
    ok = [r for r in rows if all(v is True for v in r.targets.values())]
    if not ok:
        return Recommendation(None, "no candidate meets every target at n; see the sample sizes")
    p = privacy[0]
    scored = [r for r in ok if r.values[p].value is not None]
    if not scored:
        return Recommendation(None, f"{', '.join(r.name for r in ok)} meet every target at n")
    best = scored[0]
    for r in scored[1:]:
        if REGISTRY[p].better_than(r.values[p].value, best.values[p].value):
            best = r
    return Recommendation(best.name, f"{best.name}: the most private on {p} of the candidates that meet every "
                                     "target at n", decided_by=p)
