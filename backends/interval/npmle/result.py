"""The fitted distribution of the NPMLE and its functionals.

:class:`NPMLEResult` holds Turnbull's innermost intervals and the masses the NPMLE puts
on them, with what the solver reports (log-likelihood, Newton steps, KKT measure), and
answers the questions asked of a distribution function: ``cdf``, ``cdf_bounds`` (the
range over all maximizers), ``quantile``, linear functionals and moments, the support,
and the :class:`privspec.results.values.StepFunction` of the JSON contract.

Conventions
-----------
* Within an innermost interval ``(l, r]`` the likelihood does not say where the mass
  lies, so the NPMLE of ``F`` is unique only outside the innermost intervals.
  ``cdf`` places each innermost interval's mass at its right end ``r`` (the smallest
  ``F`` among the maximizers, a right-continuous step function, as R's ``npsurv`` and
  ``Icens`` draw it); ``cdf_bounds`` gives the range over all maximizers.
* Linear functionals (``functional``, ``moment``, ``mean``) evaluate ``g`` at the same
  point (``at="right"``; ``"left"`` and ``"mid"`` are the alternatives).  An innermost
  interval with positive mass and an infinite end at that point makes the functional
  infinite (``g`` is called at ``inf``), the honest answer: the data do not bound it.

Examples
--------
>>> fit = NPMLEResult(np.array([[0.0, 1.0], [1.0, 2.0]]), np.array([0.5, 0.5]), -1.386, 3, 0.0, True)
>>> fit.cdf([0.5, 1, 2]).tolist(), fit.quantile([0.5]).tolist()
([0.0, 0.5, 1.0], [1.0])
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from privspec.results.values import StepFunction
from privspec.backends.interval.npmle.data import Design
from privspec.backends.interval.npmle.solver import Fit

__all__ = ["NPMLEResult", "make_result"]


@dataclass(frozen=True, eq=False)
class NPMLEResult:
    """The NPMLE of a distribution function on Turnbull's innermost intervals.

    Attributes
    ----------
    intervals : ndarray, shape (m, 2)
        Innermost intervals ``(l, r]`` in increasing order; an exact point ``x`` is
        ``[x, x]``.
    mass : ndarray, shape (m,)
        The mass on each innermost interval (>= 0, sums to 1).
    loglik : float
        ``sum_i counts_i * log P_i`` at the estimate.
    iterations : int
        Newton steps of the constrained Newton method.
    kkt : float
        ``max_j`` of the directional derivative of ``psi`` (eq. 7) toward a point mass
        on innermost interval ``j``: <= ``tol`` at the maximum; the log-likelihood is at
        most ``n * kkt`` below its maximum.
    converged : bool
        Whether ``kkt <= tol`` was reached.
    method : str
        ``"cnm"``: constrained Newton method with support reduction (Wang 2008).
    n : float
        The total count of observations.

    Examples
    --------
    >>> from privspec.backends.interval.npmle.estimator import npmle
    >>> fit = npmle([-np.inf, 0, 1], [0, 1, np.inf])
    >>> fit.mass.tolist(), fit.mean()
    ([0.3333333333333333, 0.3333333333333333, 0.3333333333333333], inf)
    >>> bool(np.isnan(fit.mean(at="mid")))   # -inf + inf: the data bound neither tail
    True
    >>> fit.cdf_bounds([0.5])
    (array([0.33333333]), array([0.66666667]))
    """

    intervals: np.ndarray
    mass: np.ndarray
    loglik: float
    iterations: int
    kkt: float
    converged: bool
    method: str = "cnm"
    n: float = 0.0

    @property
    def is_point(self) -> np.ndarray:
        """Which innermost intervals are exact points."""
        return self.intervals[:, 0] == self.intervals[:, 1]

    def cdf(self, x: Any) -> np.ndarray:
        """``F(x)`` with each innermost interval's mass at its right end (right-continuous).

        Examples
        --------
        >>> from privspec.backends.interval.npmle.estimator import npmle
        >>> npmle([0, 1], [1, 2]).cdf([0, 1, 1.5, 2]).tolist()
        [0.0, 0.5, 0.5, 1.0]
        """
        xs = np.asarray(x, dtype=float)
        cum = np.concatenate([[0.0], np.cumsum(self.mass)])
        out = cum[np.searchsorted(self.intervals[:, 1], xs, side="right")]
        return np.minimum(out, 1.0)

    def cdf_bounds(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """The smallest and largest ``F(x)`` over all maximizers of the likelihood.

        Mass on ``(l, r]`` may lie anywhere in it: it counts for the upper bound once
        ``x > l`` (for a point ``x >= l``) and for the lower bound once ``x >= r``.
        """
        xs = np.asarray(x, dtype=float)
        cum = np.minimum(np.concatenate([[0.0], np.cumsum(self.mass)]), 1.0)
        left = self.intervals[:, 0]
        i = np.searchsorted(left, xs, side="left")
        # a point exactly at x has key (x) <= (x): it is below x as well
        at_point = (i < left.size) & (left[np.minimum(i, left.size - 1)] == xs) \
            & self.is_point[np.minimum(i, left.size - 1)]
        upper = cum[i + at_point]
        return self.cdf(xs), upper

    def quantile(self, q: Any) -> np.ndarray:
        """The smallest ``x`` with ``cdf(x) >= q`` (right ends of innermost intervals).

        Examples
        --------
        >>> from privspec.backends.interval.npmle.estimator import npmle
        >>> npmle([0, 1, 2], [1, 2, 3]).quantile([0.1, 0.5, 1.0]).tolist()
        [1.0, 2.0, 3.0]
        """
        qs = np.asarray(q, dtype=float)
        cum = np.cumsum(self.mass)
        # a relative slack so that q = 1 finds the last interval despite round-off
        i = np.searchsorted(cum, qs - 1e-12, side="left")
        return self.intervals[np.minimum(i, self.mass.size - 1), 1]

    def _points(self, at: str) -> np.ndarray:
        lo, hi = self.intervals[:, 0], self.intervals[:, 1]
        if at == "right":
            return hi
        if at == "left":
            return lo
        if at == "mid":
            with np.errstate(invalid="ignore"):
                return np.where(self.is_point, lo, (lo + hi) / 2.0)
        raise ValueError(f"at must be 'left', 'right' or 'mid', not {at!r}")

    def functional(self, g: Callable[[np.ndarray], Any], *, at: str = "right") -> float:
        """``sum_j mass_j g(y_j)`` with ``y_j`` the chosen point of innermost interval ``j``.

        Only intervals with positive mass are evaluated (``g`` receives an array).

        Examples
        --------
        >>> from privspec.backends.interval.npmle.estimator import npmle
        >>> fit = npmle([0, 2], [1, 3])
        >>> fit.functional(lambda y: y ** 2), fit.functional(np.abs, at="left")
        (5.0, 1.0)
        """
        on = self.mass > 0
        y = self._points(at)[on]
        with np.errstate(invalid="ignore", over="ignore"):
            values = np.asarray(g(y), dtype=float)
            return float(np.sum(self.mass[on] * values))

    def moment(self, k: int, *, at: str = "right") -> float:
        """``E[Y^k]`` under the estimate (see :meth:`functional`)."""
        return self.functional(lambda y: y ** k, at=at)

    def mean(self, *, at: str = "right") -> float:
        """``E[Y]`` under the estimate (see :meth:`functional`)."""
        return self.moment(1, at=at)

    def support(self) -> tuple[np.ndarray, np.ndarray]:
        """The innermost intervals that carry mass, and their masses."""
        on = self.mass > 0
        return self.intervals[on], self.mass[on]

    def support_only(self) -> "NPMLEResult":
        """The same fit on the innermost intervals that carry mass only.

        Examples
        --------
        >>> from privspec.backends.interval.npmle.estimator import npmle
        >>> fit = npmle([0, 0, 5], [1, 1, 0], ring=True)   # (0, 1] twice, (5, inf) U (-inf, 0]
        >>> fit.intervals.tolist(), fit.support_only().intervals.tolist()
        ([[-inf, 0.0], [0.0, 1.0], [5.0, inf]], [[-inf, 0.0], [0.0, 1.0]])
        """
        on = self.mass > 0
        return dataclasses.replace(self, intervals=self.intervals[on], mass=self.mass[on])

    def to_step_function(self, *, all_intervals: bool = False) -> StepFunction:
        """The estimate as a :class:`privspec.results.values.StepFunction` (the JSON contract).

        Only the innermost intervals with positive mass, unless ``all_intervals``.

        Examples
        --------
        >>> from privspec.backends.interval.npmle.estimator import npmle
        >>> npmle([0, 1], [1, 2]).to_step_function()
        StepFunction({'(0, 1]': 0.5, '(1, 2]': 0.5})
        """
        iv, ms = (self.intervals, self.mass) if all_intervals else self.support()
        return StepFunction(intervals=tuple((float(a), float(b)) for a, b in iv),
                            mass=tuple(float(v) for v in ms))


def make_result(des: Design, fit: Fit) -> NPMLEResult:
    """The result of a solver run on a design (all innermost intervals, zeros included)."""
    intervals = np.column_stack([des.inner_left, des.inner_right])
    mass = fit.p.copy()
    return NPMLEResult(intervals=intervals, mass=mass, loglik=fit.loglik, iterations=fit.iterations,
                       kkt=fit.kkt, converged=fit.converged, method="cnm", n=des.n)

