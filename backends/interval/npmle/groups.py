"""Groups of innermost intervals whose masses have fixed sums, for the NPMLE's solver.

The plain fit has one group, summing to 1; the profile likelihood of a band
(:mod:`.bands`) has two, the innermost intervals below and above a cut.  Each group is a
run of innermost intervals, read by slices rather than by gathers over all of them.
"""
from __future__ import annotations

import math
from typing import Iterator

import numpy as np


class Groups:
    """The groups of innermost intervals whose masses have fixed sums (the plain fit: one,
    summing to 1; the profile likelihood: those below and above a cut), each a run of
    innermost intervals: read by slices, not by gathers over every innermost interval."""

    def __init__(self, grp: np.ndarray, sums: np.ndarray):
        if grp.size > 1 and not bool(np.all(grp[1:] >= grp[:-1])):
            raise ValueError("each group must be a run of innermost intervals (grp non-decreasing)")
        self.sums = sums
        #: where each group's run begins and ends
        self.bounds = np.searchsorted(grp, np.arange(sums.size + 1))
        #: where a group begins (candidates are searched within groups)
        self.starts = self.bounds[1:-1]

    def _runs(self) -> Iterator[tuple[int, int, int]]:
        return zip(range(self.sums.size), self.bounds[:-1].tolist(), self.bounds[1:].tolist())

    def rescale(self, p: np.ndarray) -> None:
        """Each group's masses scaled (in place) to its sum exactly (0 where it has none)."""
        for g, s, e in self._runs():
            tot = p[s:e].sum()
            p[s:e] *= self.sums[g] / tot if tot > 0 else 0.0

    def levels(self, d: np.ndarray, p: np.ndarray) -> np.ndarray:
        """lambda_g: the gradient's mass-weighted mean over group g (1 without groups, as
        sum p D = n), the level it takes on the group's support at the maximum."""
        scale = np.where(self.sums > 0, self.sums, 1.0)
        return np.array([float(p[s:e] @ d[s:e]) for _, s, e in self._runs()]) / scale

    def kkt(self, d: np.ndarray, p: np.ndarray) -> tuple[float, np.ndarray]:
        """The KKT measure (the largest directional derivative toward a point mass, scaled
        by its group's sum) and each innermost interval's excess over its group's level
        (-inf in a group with sum 0, which holds no mass)."""
        lam = self.levels(d, p)
        excess = np.empty_like(d)
        kkt = -math.inf if d.size else 0.0
        for g, s, e in self._runs():
            if self.sums[g] > 0:
                np.subtract(d[s:e], lam[g], out=excess[s:e])
                if e > s:
                    kkt = max(kkt, float(excess[s:e].max()) * float(self.sums[g]))
            else:
                excess[s:e] = -np.inf
        return kkt, excess
