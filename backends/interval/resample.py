"""Standard errors of NPMLE functionals from interval data, by resampling the respondents.

A linear functional ``int phi dF`` of the NPMLE (Example 1 of the interval-privacy paper)
has a sqrt(n) limit, but the NPMLE underneath converges at the cube-root rate, and
at the sample sizes of the paper's experiments that slow part is not small: in the
Table II setting (Y ~ N(0.5, 1), Case-I anchors Uniform[-T, T], T = 2 n^(1/3)) the
NPMLE mean's variance is 10-25% above the information bound at n = 100-1,600, and
the plug-in bound, evaluated at the too-steep step function F_hat, is lower still:
the interval estimate +- 1.96 se covered 78% at n = 100 and 90% at n = 400-1,600.

What was tried (``bench/interval_coverage.py`` measures it; docs/interval-privacy.md
has the table):

* the plug-in information bound (Case I only): 79-91%;
* the nonparametric bootstrap of the counts (multinomial resamples of the distinct
  reports, refitted): its standard deviation is 5-10% below the estimate's, so
  90-92% at n = 100-1,000 and 94% at n = 1,600; percentile, basic and bias-corrected
  percentile intervals do no better, the Bayesian bootstrap (Dirichlet weights)
  worse; a bootstrap from a kernel-smoothed F_hat no better either.  The bootstrap
  reproduces the linear part of the estimator but not the local (cube-root)
  behaviour of the NPMLE, which resampling with ties smooths away (the bootstrap is
  not consistent for the NPMLE of F itself: Kosorok 2008; Sen, Banerjee and Woodroofe 2010);
* the bootstrap-t, studentized by the plug-in bound of each resample: good at
  n >= 1,000 but unusable at n = 100, where a resample's NPMLE often has a single
  support point and a zero plug-in standard error;
* the jackknife over respondents (chosen): its variance is not below the estimate's
  (Efron and Stein 1981: the jackknife variance of a symmetric statistic of i.i.d.
  data is biased upward; here by 0-15%), it needs no tuning, and with the normal
  quantile it covered 94-97% from n = 400 in Case I and n = 200 in Case II.  At
  n = 100 in Table II, though, a fifth of the data sets have fewer than five
  respondents whose reports bound the estimate, and there it covered 80%; so the
  interval is estimate +- t(df) se, df one less than the respondents whose deletion
  moves the estimate (the jackknife variance is a sum over them): 96-97% at n = 100,
  94.5-97% beyond (:func:`npmle_moment_interval`).

So ``se`` is the jackknife standard error: delete one respondent, refit, repeat.
Respondents with the same report give the same refit, so the refits run over the
distinct reports, weighted by their counts (the sufficient statistics; no loop over
respondents).  With more distinct reports than :data:`JACKKNIFE_GROUPS`, the
respondents are dealt at random (seeded) into that many groups and a group is
deleted at a time (the delete-a-group jackknife, Kott 2001), which keeps the cost
at that many refits (:data:`CASE1_GROUPS` on the fast path, :data:`RANGE_FIT_GROUPS` for
the slower range fit).  Case-I data take a fast path: their NPMLE is the isotonic
regression of the indicators on the anchors (Groeneboom and Wellner 1992), about
100 times faster than the general engine and equal to it to the engine's tolerance.

The population and the conditional question
---------------------------------------------
``se = population`` (the default) answers how far the estimate may be from the
population's ``E phi(Y)``: sampling and privacy noise.  ``se = conditional`` answers
how far it may be from the respondents' own mean ``(1/n) sum phi(Y_i)``: privacy
noise only, the true values held fixed.  Anchors independent of Y make the reports
coarsened at random, so every influence function of the observed data has
conditional mean ``phi(Y) - E phi(Y)`` given Y (the full-data influence function of
a mean in a nonparametric model; van der Laan and Robins 2003, ch. 1).  Hence
``n Var = Var(phi(Y)) + E Var(IF | Y)``, and the conditional variance is the
population variance less ``Var(phi(Y)) / n``, ``Var(phi(Y))`` taken under F_hat.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> y, u = rng.normal(size=300), rng.uniform(-4, 4, size=300)
>>> left, right = np.where(y <= u, -np.inf, u), np.where(y <= u, u, np.inf)
>>> fitter = case1_fitter(left, right)
>>> intervals, mass = fitter(np.ones(300))
>>> from privspec.backends.interval.npmle.estimator import npmle
>>> engine = npmle(left, right)
>>> mean = lambda iv, m: float(np.sum(m * representative_points(iv)))
>>> bool(abs(mean(intervals, mass) - mean(engine.intervals, engine.mass)) < 1e-8)
True
>>> jk = jackknife(fitter, np.ones(300), mean, groups=CASE1_GROUPS)
>>> jk.replicates, jk.method
(300, 'jackknife (delete-1, 300 distinct reports)')
>>> 0.05 < jk.se < 0.3
True
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.backends.interval.estimators import representative_points

#: the most refits of the interval engine a jackknife makes (beyond, respondents are dealt
#: into this many groups; the t quantile with groups - 1 degrees of freedom pays for the
#: noisier variance: 25 to 100 groups covered alike in simulation)
JACKKNIFE_GROUPS = 50
#: on the Case-I fast path (an isotonic regression costs about 1% of an engine fit)
CASE1_GROUPS = 2000
#: for the range fit (reports in two pieces: ten to a hundred times an engine fit)
RANGE_FIT_GROUPS = 20
#: beyond this many distinct reports the range fit takes seconds a refit (0.25 s at
#: 2,000, 25 s at 3,000 where it may stop at its iteration limit), so no jackknife
RANGE_FIT_MAX_REPORTS = 2000

Statistic = Callable[[np.ndarray, np.ndarray], float]


class Fitter(Protocol):
    """The NPMLE of the same distinct reports under new counts: ``(intervals, mass)``."""

    def __call__(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


# ---- fitters ----------------------------------------------------------------------------------
def case1_fitter(left: np.ndarray, right: np.ndarray) -> Fitter | None:
    """The Case-I NPMLE as an isotonic regression, for reports ``(-inf, U]`` / ``(U, inf)``.

    The NPMLE of F from current-status data is the weighted isotonic regression of the
    share of ``Y <= U`` reports at each distinct anchor (Groeneboom and Wellner 1992,
    Part II); F_hat jumps only between an anchor holding a ``(U, inf)``
    report and the next one holding a ``(-inf, U]`` report, so its masses on
    ``(-inf, a_1], (a_1, a_2], ..., (a_K, inf)`` are the engine's on Turnbull's
    innermost intervals (the intervals with no mass do not change a functional).
    Returns None for reports of another form (or without scipy's isotonic
    regression): the general engine answers those.
    """
    # scipy before 1.12 has none: the engine answers (scipy.optimize loads here, on first use)
    iso = getattr(scipy.optimize, "isotonic_regression", None)
    left, right = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
    below = (left == -np.inf) & np.isfinite(right)
    above = np.isfinite(left) & (right == np.inf)
    if iso is None or not np.all(below | above) or left.size == 0:
        return None
    anchor = np.where(below, right, left)
    anchors, where = np.unique(anchor, return_inverse=True)
    k = anchors.size
    is_below = below.astype(float)

    def fit(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w = np.bincount(where, weights=counts, minlength=k)
        s = np.bincount(where, weights=counts * is_below, minlength=k)
        on = w > 0
        a = anchors[on]
        F = iso(s[on] / w[on], weights=w[on]).x
        ends = np.column_stack([np.concatenate([[-np.inf], a]), np.concatenate([a, [np.inf]])])
        mass = np.diff(np.concatenate([[0.0], F, [1.0]]))
        return ends, np.maximum(mass, 0.0)

    return fit


def engine_fitter(left: np.ndarray, right: np.ndarray,
                  fit: Callable[[np.ndarray, np.ndarray, np.ndarray], object]) -> Fitter:
    """A fitter from any NPMLE routine ``fit(left, right, counts)`` with ``.intervals``
    and ``.mass`` (the interval engine, or the range fit): reports with no count left
    are dropped first, as a fresh fit of the smaller data would."""
    left, right = np.asarray(left, dtype=float), np.asarray(right, dtype=float)

    def refit(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        on = counts > 0
        result = fit(left[on], right[on], counts[on])
        return np.asarray(result.intervals, dtype=float), np.asarray(result.mass, dtype=float)

    return refit


# ---- the jackknife -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Jackknife:
    """A jackknife standard error: ``se``, the ``replicates`` (refits) it took, how."""

    se: float
    replicates: int
    method: str
    values: np.ndarray


def jackknife(fitter: Fitter, counts: np.ndarray, statistic: Statistic, *,
              groups: int = JACKKNIFE_GROUPS, seed: int | None = None) -> Jackknife:
    """The jackknife standard error of ``statistic(*fitter(counts))``.

    Parameters
    ----------
    fitter : Fitter
        Refits the NPMLE of the distinct reports under other counts.
    counts : ndarray
        Respondents per distinct report (whole numbers).
    statistic : callable
        ``statistic(intervals, mass) -> float``: the functional, with the estimate's
        placement of the mass.
    groups : int
        Delete one respondent at a time (refits per distinct report) when there are at
        most this many distinct reports; otherwise deal the respondents at random into
        this many groups and delete a group at a time.
    seed : int, optional
        For the grouping (the delete-1 jackknife is not random).

    Returns
    -------
    Jackknife
        ``var = (n - 1)/n sum_i (theta_(i) - theta_bar)^2`` over respondents (each
        distinct report's refit counted as often as it was reported), or
        ``(G - 1)/G sum_g (theta_(g) - theta_bar)^2`` over groups.

    Examples
    --------
    The jackknife of a sample mean is its usual standard error, s / sqrt(n):

    >>> import numpy as np
    >>> x = np.array([1.0, 2.0, 4.0]); c = np.array([2.0, 1.0, 1.0])
    >>> fit = lambda counts: (np.column_stack([x, x]), counts / counts.sum())
    >>> jk = jackknife(fit, c, lambda iv, m: float(m @ iv[:, 0]))
    >>> y = np.repeat(x, [2, 1, 1])
    >>> bool(np.isclose(jk.se, y.std(ddof=1) / 2))
    True
    """
    counts = np.asarray(counts, dtype=float)
    n = int(round(counts.sum()))
    D = counts.size
    if n < 2:
        return Jackknife(float("nan"), 0, "jackknife (one respondent: none)", np.zeros(0))
    if D <= groups:
        values = np.empty(D)
        for d in range(D):   # one refit per distinct report, not per respondent
            c = counts.copy()
            c[d] -= 1.0
            values[d] = statistic(*fitter(c))
        mean = float(counts @ values) / n
        var = (n - 1) / n * float(counts @ (values - mean) ** 2)
        return Jackknife(float(np.sqrt(max(var, 0.0))), D, f"jackknife (delete-1, {D} distinct reports)", values)
    # deal the respondents into groups: each respondent is its report's index
    rng = np.random.default_rng(seed)
    owner = np.repeat(np.arange(D), counts.astype(np.int64))
    rng.shuffle(owner)
    G = min(groups, n)
    values = np.empty(G)
    for g in range(G):
        c = counts - np.bincount(owner[g::G], minlength=D)
        values[g] = statistic(*fitter(c))
    var = (G - 1) / G * float(np.sum((values - values.mean()) ** 2))
    size = f"{n // G}" if n % G == 0 else f"{n // G}-{n // G + 1}"
    return Jackknife(float(np.sqrt(max(var, 0.0))), G,
                     f"delete-a-group jackknife ({G} random groups of {size} respondents, seed {seed})", values)


# ---- the bootstrap (for comparison: bench/interval_coverage.py) ---------------------------------------
def bootstrap(fitter: Fitter, counts: np.ndarray, statistic: Statistic, *, reps: int,
              seed: int | None = None) -> np.ndarray:
    """``reps`` values of the statistic on multinomial resamples of the respondents.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([1.0, 2.0, 4.0])
    >>> fit = lambda counts: (np.column_stack([x, x]), counts / counts.sum())
    >>> draws = bootstrap(fit, np.array([2.0, 1.0, 1.0]), lambda iv, m: float(m @ iv[:, 0]), reps=50, seed=1)
    >>> draws.shape, bool(draws.min() >= 1 and draws.max() <= 4)
    ((50,), True)
    """
    counts = np.asarray(counts, dtype=float)
    n = int(round(counts.sum()))
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, counts / counts.sum(), size=reps).astype(float)
    return np.array([statistic(*fitter(c)) for c in draws])


# ---- functionals -----------------------------------------------------------------------------------
def moment_statistic(order: int, lower: float = -np.inf, upper: float = np.inf) -> Statistic:
    """``int y^order dF`` with each innermost interval's mass at its representative point
    (:func:`.representative_points`, the estimate's placement)."""
    def statistic(intervals: np.ndarray, mass: np.ndarray) -> float:
        on = mass > 0
        x = representative_points(intervals[on], lower, upper)
        return float(np.sum(mass[on] * x ** order))

    return statistic


def moment_variance(intervals: np.ndarray, mass: np.ndarray, order: int,
                    lower: float = -np.inf, upper: float = np.inf) -> float:
    """``Var(Y^order)`` under the NPMLE (the same placement): what the sample adds to the
    privacy noise, subtracted for the conditional standard error."""
    on = np.asarray(mass) > 0
    x = representative_points(np.asarray(intervals, dtype=float)[on], lower, upper) ** order
    m = np.asarray(mass, dtype=float)[on]
    mean = float(m @ x)
    return max(float(m @ (x - mean) ** 2), 0.0)


# ---- the interval printed with an NPMLE functional -----------------------------------------------------
@dataclass(frozen=True)
class FunctionalInterval:
    """A standard error and 95% interval of an NPMLE functional, and how they were made."""

    se: float
    lower: float
    upper: float
    df: int
    kind: str
    method: str
    replicates: int
    effective_n: float
    note: str | None = None

    def at(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """The interval at another ``level`` by the same method: ``estimate +- t(df) se`` (the
        whole line where there is no standard error)."""
        if self.df <= 0 or not np.isfinite(self.se):
            return np.array([-np.inf]), np.array([np.inf])
        mid, q = (self.lower + self.upper) / 2, float(scipy.special.stdtrit(self.df, 0.5 + level / 2))
        return np.array([mid - q * self.se]), np.array([mid + q * self.se])

    def extras(self) -> dict:
        """The fields of the estimate's Result (``se``, ``ci95``, ``se_kind``, ...)."""
        how = (f"estimate +- t(0.975, {self.df}) se: df = respondents whose deletion moves the estimate, less 1"
               if self.df > 0 else "none: see coverage_note")
        out = {"se": self.se, "ci95": [self.lower, self.upper], "se_kind": self.kind,
               "target": TARGETS[self.kind], "se_method": self.method, "ci_method": how,
               "effective_n": self.effective_n}
        if self.note:
            out["coverage_note"] = self.note
        return out


#: what each kind of standard error is about
TARGETS = {"population": "the population's E[phi(Y)] (sampling and privacy noise)",
           "conditional": "the respondents' own mean of phi(Y), their values held fixed (privacy noise only)"}


def no_interval(kind: str, why: str) -> FunctionalInterval:
    """No standard error, and why (printed as ``coverage_note``)."""
    return FunctionalInterval(float("nan"), -np.inf, np.inf, 0, kind, "none", 0, float("nan"), why)


def _fitter(left: np.ndarray, right: np.ndarray, refit: Callable[[np.ndarray, np.ndarray, np.ndarray], object],
            groups: int | None) -> tuple[Fitter, int]:
    """The refits of a jackknife and how many: the Case-I fast path where it applies (up to
    :data:`CASE1_GROUPS`), else ``refit`` (``groups``, :data:`JACKKNIFE_GROUPS` by default)."""
    fast = case1_fitter(left, right)
    if fast is not None:
        return fast, CASE1_GROUPS
    return engine_fitter(left, right, refit), JACKKNIFE_GROUPS if groups is None else groups


def _movers(jk: Jackknife, value: float, counts: np.ndarray) -> int:
    """The respondents (groups) whose deletion moves the estimate, beyond the fit's round-off."""
    moved = np.abs(jk.values - value) > 1e-6 * max(jk.se, 1e-300)
    return int(round(float(counts @ moved))) if jk.values.size == counts.size else int(moved.sum())


def npmle_moment_interval(left: np.ndarray, right: np.ndarray, counts: np.ndarray, order: int, *,
                          refit: Callable[[np.ndarray, np.ndarray, np.ndarray], object],
                          lower: float = -np.inf, upper: float = np.inf, kind: str = "population",
                          seed: int | None = None, level: float = 0.95, groups: int | None = None,
                          center: float | None = None) -> FunctionalInterval:
    """The jackknife standard error and interval of ``int y^order dF_hat`` (Example 1).

    Parameters
    ----------
    left, right, counts : ndarray
        The distinct reports and their counts (the data the estimate came from).
    order : int
        The moment.
    refit : callable
        ``refit(left, right, counts)``: the NPMLE routine of the estimate (the engine, or
        the range fit), used where the Case-I fast path does not apply.
    lower, upper : float
        The variable's support (the placement cuts intervals to it, as the estimate does).
    kind : {"population", "conditional"}
        The question the standard error answers (see the module's notes).
    seed : int, optional
        For the grouping of a delete-a-group jackknife (0 when None: reproducible).
    level : float
        Of the interval.
    groups : int, optional
        Most refits of ``refit``; default :data:`JACKKNIFE_GROUPS`.  The Case-I fast path
        makes up to :data:`CASE1_GROUPS` whatever this says.
    center : float, optional
        The estimate printed (default: the functional of this fit; the two agree to the
        engine's tolerance).

    Returns
    -------
    FunctionalInterval
        ``lower, upper = estimate -+ t(df) se`` with ``df`` one less than the respondents
        (groups) whose deletion moves the estimate: the jackknife variance is a sum over
        them, so it has about that many degrees of freedom, few when few reports bound
        the estimate (Table II at n = 100: often under ten; the normal quantile then
        covered 80%, t 97%).

    Examples
    --------
    >>> import numpy as np
    >>> from privspec.backends.interval.npmle.estimator import npmle
    >>> rng = np.random.default_rng(1)
    >>> y, u = rng.normal(size=400), rng.uniform(-4, 4, size=400)
    >>> left, right = np.where(y <= u, -np.inf, u), np.where(y <= u, u, np.inf)
    >>> ci = npmle_moment_interval(left, right, np.ones(400), 1, refit=npmle)
    >>> ci.method, ci.kind
    ('jackknife (delete-1, 400 distinct reports)', 'population')
    >>> bool(ci.lower < 0 < ci.upper), ci.df > 30
    (True, True)
    >>> cond = npmle_moment_interval(left, right, np.ones(400), 1, refit=npmle, kind="conditional")
    >>> bool(cond.se < ci.se)                     # less the sampling part, Var(Y) / n
    True
    """
    if kind not in TARGETS:
        raise ValueError(f"kind must be 'population' or 'conditional', not {kind!r}")
    counts = np.asarray(counts, dtype=float)
    fitter, groups = _fitter(left, right, refit, groups)
    statistic = moment_statistic(order, lower, upper)
    intervals, mass = fitter(counts)
    value = statistic(intervals, mass)
    jk = jackknife(fitter, counts, statistic, groups=groups, seed=0 if seed is None else seed)
    var_phi = moment_variance(intervals, mass, order, lower, upper)
    movers = _movers(jk, value, counts)
    var = jk.se ** 2
    if kind == "conditional":
        var = max(var - var_phi / float(counts.sum()), 0.0)
    se = float(np.sqrt(var))
    effective = var_phi / jk.se ** 2 if jk.se > 0 else float("inf")
    if movers < 2 or not np.isfinite(se):
        return FunctionalInterval(float("nan"), -np.inf, np.inf, 0, kind, jk.method, jk.replicates, float("nan"),
                                  "fewer than two respondents' reports move the estimate: the data give no "
                                  "standard error (the 'range' extra shows what they allow)")
    df = movers - 1
    q = float(scipy.special.stdtrit(df, 0.5 + level / 2))
    mid = value if center is None else float(center)
    return FunctionalInterval(se, mid - q * se, mid + q * se, df, kind, jk.method, jk.replicates, effective)
