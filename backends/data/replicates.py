"""Replicate weights: the variance of a survey estimate from the agency's replicate weight
columns (``--replicate-weights COLS --replicate-type TYPE``, ``spec.run(data, weights=W,
replicate_weights=COLS, replicate_type=TYPE)``) instead of its strata and clusters.

Each replicate column is a full set of weights (the ``survey`` package's
``combined.weights = TRUE``: the sampling weight already in it).  The estimate is the
Hajek one on the full-sample weights ``W``; each replicate ``r`` re-runs the same estimator
on its own weights, ``theta_r``, and

    V = scale * sum_r rscale_r (theta_r - theta)(theta_r - theta)^T

the squared deviations taken from the full-sample estimate ``theta`` (``svrepdesign``'s
``mse = TRUE``).  ``scale`` and ``rscales`` follow ``svrepdesign`` for each type, with ``R``
replicate columns:

======================  ==========================  =======================
type                    scale                       rscales
======================  ==========================  =======================
``brr``                 ``1 / R``                   1
``fay`` (rho)           ``1 / (R (1 - rho)^2)``     1
``jk1``                 ``(R - 1) / R``             1
``jkn``                 1                           given, one per column
``bootstrap``           ``1 / (R - 1)``             1
======================  ==========================  =======================

(``survey`` asks for the scale of combined JK1 weights; ``(R - 1) / R`` is the one its
``jk1weights`` gives for R delete-one-PSU replicates, which is what a JK1 column set is.)

The columns are named by a comma list whose items are column names or glob patterns
(``repw*``, ``rw[0-9]*``: :func:`fnmatch.fnmatchcase`), matched against the table's header
in its order; the full-sample weights column is never a match of a pattern.
"""
from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Sequence

import numpy as np

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.backends.core.survey_design import replicate_covariance

#: the replicate types (``svrepdesign``'s ``type``, lower case)
REPLICATE_TYPES = ("brr", "fay", "jk1", "jkn", "bootstrap")
_GLOB = set("*?[")


def _refuse(message: str, hint: str) -> BackendError:
    """B042: a replicate design that cannot be used."""
    return BackendError(Diagnostic("B042", message, hint=hint))


@dataclass(frozen=True)
class Replicates:
    """Replicate weight columns and how their estimates make a variance (the module
    docstring).  B042 for a type that is not one of :data:`REPLICATE_TYPES`, ``fay``
    without ``fay_rho`` in [0, 1) (or ``fay_rho`` with another type), ``jkn`` without
    ``rscales`` (or ``rscales`` with another type).

    Examples
    --------
    >>> r = Replicates(("rw*",), "jk1")
    >>> r.columns_in(["y", "w", "rw1", "rw2", "rw3"], "w", "f.csv")
    ('rw1', 'rw2', 'rw3')
    >>> round(float(r.covariance(np.array([0.5]), np.array([[0.4], [0.5], [0.7]]))[0, 0]), 12)   # 2/3 (0.01 + 0.04)
    0.033333333333
    """

    patterns: tuple[str, ...]
    type: str
    fay_rho: float | None = None
    rscales: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.type not in REPLICATE_TYPES:
            raise _refuse(f"replicate type '{self.type}' is not one of {', '.join(REPLICATE_TYPES)}",
                          "the type the agency documents for its replicate weights (survey's svrepdesign type)")
        if not self.patterns or not all(p.strip() for p in self.patterns):
            raise _refuse("no replicate weight columns named", "a comma list of columns or patterns: rw1,rw2 or rw*")
        if (self.type == "fay") != (self.fay_rho is not None):
            raise _refuse("fay replicate weights need their rho (--fay-rho), and only they take one",
                          "the rho of Fay's method the agency used (e.g. 0.5): the perturbation of its weights")
        if self.fay_rho is not None and not 0 <= self.fay_rho < 1:
            raise _refuse(f"fay rho {self.fay_rho} is not in [0, 1)", "Fay's rho is in [0, 1); 0 is BRR")
        if (self.type == "jkn") != (self.rscales is not None):
            raise _refuse("jkn replicate weights need their rscales (--rscales), one per replicate column, and "
                          "only they take them", "for a stratified jackknife, (n_h - 1) / n_h of each "
                                                 "replicate's stratum, in the order of the columns")
        if self.rscales is not None and not all(np.isfinite(s) and s >= 0 for s in self.rscales):
            raise _refuse("rscales must be finite numbers >= 0", "(n_h - 1) / n_h per replicate column")

    @classmethod
    def of(cls, columns: str | Sequence[str], type: str | None, fay_rho: float | None = None,
           rscales: Sequence[float] | None = None) -> "Replicates":
        """From the options as given: ``columns`` a comma list (or a sequence) of names and
        patterns; B042 without a ``type`` (no default: the wrong one gives a wrong variance).

        Examples
        --------
        >>> Replicates.of("rw*, extra", "fay", fay_rho=0.5).patterns
        ('rw*', 'extra')
        """
        if type is None:
            raise _refuse("replicate weights without their type (--replicate-type)",
                          f"the type the agency documents for them: {', '.join(REPLICATE_TYPES)}")
        items = columns.split(",") if isinstance(columns, str) else list(columns)
        return cls(tuple(str(c).strip() for c in items), type.lower(),
                   None if fay_rho is None else float(fay_rho),
                   None if rscales is None else tuple(float(x) for x in rscales))

    def describe(self) -> str:
        """The replicates in words, for a result's extras."""
        rho = f" (rho {self.fay_rho:g})" if self.fay_rho is not None else ""
        return f"replicate weights {','.join(self.patterns)}, {self.type}{rho}"

    def columns_in(self, header: Sequence[str], weights: str, source: str) -> tuple[str, ...]:
        """The replicate columns of a table with ``header`` (the module docstring): D003 for a
        name it lacks or a pattern that matches none of its columns; B042 for the
        full-sample ``weights`` column named, fewer than 2 columns, or rscales that are not
        one per column."""
        found: list[str] = []
        for item in (p.strip() for p in self.patterns):
            if _GLOB & set(item):
                matches = [c for c in header if fnmatchcase(c, item) and c != weights]
                if not matches:
                    raise DataError(Diagnostic("D003", f"{source} has no column matching '{item}' "
                                                       "(--replicate-weights)",
                                               hint=f"columns found: {', '.join(map(str, header)) or 'none'}"))
            elif item == weights:
                raise _refuse(f"the column '{item}' is both the full-sample weights (--weights) and a replicate",
                              "name the replicate columns only in --replicate-weights")
            elif item not in header:
                raise DataError(Diagnostic("D003", f"{source} has no column '{item}' (--replicate-weights)",
                                           columns=(item,),
                                           hint=f"columns found: {', '.join(map(str, header)) or 'none'}"))
            else:
                matches = [item]
            found.extend(c for c in matches if c not in found)
        if len(found) < 2:
            raise _refuse(f"{len(found)} replicate weight column ({', '.join(found)}): no variance from one",
                          "name every replicate column of the file (a pattern such as rw* matches them all)")
        if self.rscales is not None and len(self.rscales) != len(found):
            raise _refuse(f"{len(self.rscales)} rscales for {len(found)} replicate columns",
                          "one rscale per replicate column, in the columns' order")
        return tuple(found)

    def factors(self, replicates: int) -> tuple[float, np.ndarray]:
        """``scale`` and ``rscales`` for ``replicates`` columns (the module docstring's table)."""
        R = replicates
        scale = {"brr": 1 / R, "fay": 1 / (R * (1 - (self.fay_rho or 0.0)) ** 2), "jk1": (R - 1) / R,
                 "jkn": 1.0, "bootstrap": 1 / (R - 1)}[self.type]
        rscales = np.ones(R) if self.rscales is None else np.asarray(self.rscales, dtype=float)
        return scale, rscales

    def covariance(self, theta: np.ndarray, thetas: np.ndarray) -> np.ndarray:
        """``scale * sum_r rscale_r (theta_r - theta)(theta_r - theta)^T``: ``theta`` the
        full-sample estimate (``k``), ``thetas`` the replicates' (``R x k``)."""
        scale, rscales = self.factors(len(thetas))
        return replicate_covariance(theta, thetas, scale * rscales)
