"""Fitting the NPMLE of F to interval reports, and the fit the Python API reads.

Data enter as distinct reports with counts (:func:`aggregate`: one ``np.unique``, nulls
left out); :func:`fit_npmle` runs the one engine of :mod:`.npmle` on them (the reports
themselves, or their pieces less an acceptable range) and says how (:class:`Fit`);
:class:`DistributionFit` carries the fit behind a ``cdf`` estimate for the Python API.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from privspec.errors import DataError, Diagnostic
from privspec.results.values import StepFunction
from privspec.backends.core.memory import reuse_freed_memory
from privspec.backends.interval.laws import support_of
# the engine read as its module's attributes (tests stand in for its functions there)
from privspec.backends.interval.npmle import estimator as npmle_engine
from privspec.backends.interval.reports import report_model

#: where `run` bounds F: the fit's quartiles (the profile band costs a constrained fit per point)
BAND_QUANTILES = (0.25, 0.5, 0.75)


def aggregate(left: np.ndarray, right: np.ndarray, counts: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct collected reports with counts (nulls left out): one sort at most, no loop.
    ``counts``: how many rows each entry stands for (a tally's), 1 each by default.
    Reports already distinct and in order, without nulls (an engine's tally), come back
    as they are, counts included (no copies; nothing writes into them).

    >>> aggregate(np.array([1.0, 0.0, 1.0, np.nan]), np.array([2.0, 1.0, 2.0, np.nan]))
    (array([0., 1.]), array([1., 2.]), array([1., 2.]))
    """
    keep = ~np.isnan(left)
    if keep.all():
        # no nulls (most data): the arrays as they are, no copies (nothing downstream
        # writes into them), and the counts too where they are numbers (an engine's whole
        # counts, one per row: a read-only broadcast of 1, which the NPMLE reads without
        # a pass); at 1e7 reports the copies and the conversion took 0.5-0.6 s of fresh
        # memory
        l, r = left, right
        if counts is None:
            w = np.ones(l.size)
        else:
            w = np.asarray(counts)
            if w.dtype.kind not in "iuf":
                w = w.astype(float)
    else:
        l, r = left[keep], right[keep]
        w = np.ones(l.size) if counts is None else np.asarray(counts, dtype=float)[keep]
    # pairs that increase strictly are the answer (an engine's tally, distinct and in
    # order: one pass, where the sort costs 2.4 s at 1e7 reports); else a stable lexsort
    # and the runs of equal pairs (np.unique(axis=0) sorts the rows as records: 1.8 s on
    # 1e6 reports against 0.2 s), the counts summed in the rows' order
    up = (l[1:] > l[:-1]) | ((l[1:] == l[:-1]) & (r[1:] > r[:-1]))
    if up.all():
        return l, r, w
    order = np.lexsort((r, l))
    l, r, w = l[order], r[order], np.asarray(w, dtype=float)[order]
    new = np.ones(l.size, dtype=bool)
    new[1:] = (l[1:] != l[:-1]) | (r[1:] != r[:-1])
    starts = np.flatnonzero(new)
    c = np.add.reduceat(w, starts) if starts.size else np.zeros(0)
    return l[starts], r[starts], c


def count_nulls(left: np.ndarray, counts: np.ndarray | None) -> int:
    null = np.isnan(left)
    return int(null.sum() if counts is None else np.asarray(counts)[null].sum())



class Fit:
    """An NPMLE and how it was fitted (``engine``: the method and what was done to the reports)."""

    def __init__(self, result: Any, engine: str, n: float, support: tuple[float, float], band=None):
        self.result = result
        self.engine = engine
        self.n = n
        self.support = support
        self.band = band

    def step_function(self) -> StepFunction:
        """Innermost intervals with mass, cut to the variable's support."""
        iv = np.asarray(self.result.intervals, dtype=float)
        mass = np.asarray(self.result.mass, dtype=float)
        on = mass > 0
        lo, hi = self.support
        a, b = np.maximum(iv[on, 0], lo), np.minimum(iv[on, 1], hi)
        return StepFunction(tuple((float(x), float(y)) for x, y in zip(a, b)), tuple(float(m) for m in mass[on]))

    def extras(self) -> dict:
        r = self.result
        out = {"loglik": float(r.loglik), "iterations": int(r.iterations), "kkt": float(r.kkt),
               "converged": bool(r.converged), "method": f"npmle ({self.engine})", "n": int(round(self.n))}
        return out


def fit_npmle(mech: Any, left: np.ndarray, right: np.ndarray, counts: np.ndarray, *,
              band: bool | Any = False) -> Fit:
    """The NPMLE of F from distinct reports with counts (nulls already left out).

    ``band``: True for the pointwise 95% band at the fit's quartiles (:data:`BAND_QUANTILES`),
    or the points (any finite numbers, an array) where to bound F.
    """
    # the fit's arrays and then the band's reuse the memory of those freed before them
    with reuse_freed_memory():
        return _fit_npmle(mech, left, right, counts, band)


def _fit_npmle(mech: Any, left: np.ndarray, right: np.ndarray, counts: np.ndarray, band: bool | Any) -> Fit:
    """:func:`fit_npmle` itself."""
    rm = report_model(mech)
    support = support_of(mech.variable)
    disclose = rm.disclose
    n = float(counts.sum())
    if n == 0:
        raise DataError(Diagnostic("D103", "no report was collected: nothing to estimate from"))
    # one engine for every report (intervals, points, rings, pieces): no fallback, so a
    # failure of it surfaces (a DataError for bad reports, an internal error otherwise)
    if disclose is None:
        # the reports themselves: a ring range is one row of the engine (ring=True)
        ring = bool(np.any(left > right))
        want = band is not False and band is not None
        # where a band follows, the fit's design is kept for it (derived at the band's
        # points, not built again); a list, so that the band lets it go once used
        design: list | None = None
        with np.errstate(all="ignore"):
            if want and not ring:
                result, des = npmle_engine.npmle_design(left, right, counts)
                design = [des]
                del des
            else:
                result = npmle_engine.npmle(left, right, counts, ring=ring)
        engine = "constrained Newton, cnm"
        fit = Fit(result, engine, n, support)
        if want and ring:
            fit.band = {"note": "no band for ring designs"}
        elif want:
            x = _band_points(result, support) if band is True else np.unique(np.asarray(band, dtype=float))
            x = x[np.isfinite(x)]
            if len(x):
                try:
                    with np.errstate(all="ignore"):
                        lower, upper = npmle_engine.cdf_confidence_band(result, left, right, counts, x, ring=ring,
                                                                        design=design)
                    fit.band = {"x": x.tolist(), "lower": np.asarray(lower).tolist(),
                                "upper": np.asarray(upper).tolist(), "level": 0.95,
                                "method": "profile likelihood ratio, critical value 2.486 (Banerjee-Wellner's "
                                          "law D at 0.96: a finite-sample calibration)"}
                    if band is True:
                        fit.band["coverage_note"] = (
                            "x are the fit's quartiles, chosen by the data: there the band covered 97-100% "
                            "in simulation, at points fixed in advance 94-96% (docs/interval-privacy.md)")
                except (ValueError, ArithmeticError) as e:  # a band is a bonus, the estimate stands
                    fit.band = {"note": f"no band: {e}"}
        return fit
    pl, pr, owner = rm.likelihood_pieces(left, right)
    pieces = np.bincount(owner, minlength=len(counts))
    if np.any(pieces == 0):
        raise DataError(Diagnostic("D104", "a report holds only values of the acceptable range, which "
                                           "would have been disclosed", hint="check the data against the mechanism"))
    if np.all(pieces == 1):
        # the acceptable range removed from each report leaves one interval
        with np.errstate(all="ignore"):
            result = npmle_engine.npmle(pl, pr, counts[owner])
        return Fit(result, "constrained Newton, cnm; acceptable range taken out of each report", n, support)
    # reports in several pieces: the same engine on the pieces ("on ranges": their jackknife
    # is limited, resample.RANGE_FIT_MAX_REPORTS); the fit on its support, as before
    with np.errstate(all="ignore"):
        result = npmle_engine.npmle_pieces(pl, pr, owner, counts).support_only()
    return Fit(result, "constrained Newton on ranges; acceptable range taken out of each report", n, support)


def _band_points(result: Any, support: tuple[float, float]) -> np.ndarray:
    """Where to bound F: the fit's quartiles (right ends of innermost intervals), finite, in the support."""
    iv, mass = np.asarray(result.intervals, dtype=float), np.asarray(result.mass, dtype=float)
    cum = np.cumsum(mass)
    idx = np.searchsorted(cum, np.array(BAND_QUANTILES))
    x = iv[np.clip(idx, 0, len(iv) - 1), 1]
    x = x[np.isfinite(x) & (x >= support[0]) & (x <= support[1])]
    return np.unique(x)



class DistributionFit:
    """The NPMLE behind a ``cdf`` estimate, for the Python API (never in the JSON): ``F``,
    its survival function and quantiles at any points, and the pointwise band at any
    points and level (:func:`privspec.backends.interval.npmle.estimator.cdf_confidence_band`).

    ``left``, ``right``, ``counts`` are the distinct reports the fit used; ``rows``: they
    are rows of the engine (an interval, a point or a ring each), so a band can be
    computed from them (not for reports less an acceptable range).
    """

    def __init__(self, result: Any, left: np.ndarray, right: np.ndarray, counts: np.ndarray, rows: bool,
                 moment: Any = None):
        self.result, self.left, self.right, self.counts, self.rows = result, left, right, counts, rows
        self._moment = moment

    def moment(self, order: int, level: float = 0.95, kind: str = "population", seed: int | None = None
               ) -> tuple[float, dict]:
        """``int y^order dF_hat`` and its jackknife extras, as ``estimate moment(Y, order)
        by npmle`` answers it (:func:`.estimate.npmle_moment`)."""
        if self._moment is None:
            raise ValueError("this fit carries no moments")
        return self._moment(order, kind=kind, seed=seed, level=level)

    def cdf(self, x: Any) -> np.ndarray:
        return np.asarray(self.result.cdf(np.asarray(x, dtype=float)), dtype=float)

    def quantile(self, q: Any) -> np.ndarray:
        return np.asarray(self.result.quantile(np.asarray(q, dtype=float)), dtype=float)

    def band(self, x: Any, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
        if not self.rows:
            raise ValueError("no band for reports less an acceptable range (their pieces): estimate by "
                             "simulation instead")
        x = np.asarray(x, dtype=float)
        with np.errstate(all="ignore"):
            lower, upper = npmle_engine.cdf_confidence_band(self.result, self.left, self.right, self.counts, x,
                                               level=1.0 - alpha, ring=bool(np.any(self.left > self.right)))
        return np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
