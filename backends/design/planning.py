"""Design planning: sample sizes and power of privacy mechanisms (like R's ``rr``
package ``power.rr.test`` / ``power.rr.plot``).

Everything here takes plain numbers.  ``avar`` is the asymptotic covariance of
``sqrt(n) (estimate - truth)`` (from the channel core, e.g.
:meth:`privspec.backends.core.channel.Channel.avar_mom`), so at ``n`` respondents an
estimate has variance ``avar / n``; only its diagonal ``avar_kk`` enters.

Precision targets
-----------------
* ``SE_k(n) = sqrt(avar_kk / n)``; :func:`n_for_max_se` is the smallest ``n`` with
  ``max_k SE_k(n) <= target`` and :func:`n_for_ci_width` the smallest with the widest
  two-sided Wald interval ``2 z_{1 - alpha/2} max_k SE_k(n) <= width``.  Both start
  from the closed form ``ceil(max_k avar_kk / t^2)`` and then check ``n`` and ``n - 1``
  with the very predicate that defines the criterion (bisecting if floating rounding
  moved the answer), so the result is provably the smallest ``n`` that meets it.
* Relative precision: the coefficient of variation ``CV_k(n) = SE_k(n) / |v_k|`` of a
  cell whose value ``v_k`` (a share, a mean) is not 0; :func:`n_for_max_cv` is the
  smallest ``n`` with ``max_k CV_k(n) <= c``, from ``ceil(max_k avar_kk / (c v_k)^2)``
  checked the same way.  ``c = 0.3`` is the publication rule of many statistical
  agencies (an estimate with a CV above 30% is suppressed or flagged as unreliable).

Power (asymptotic Wald tests, the standard error at the truth)
--------------------------------------------------------------
With ``sigma^2`` the asymptotic variance at the truth, ``delta`` the truth minus the
null value and ``s = sqrt(n) delta / sigma``:

* two-sided: ``Phi(s - z_{1-alpha/2}) + Phi(-s - z_{1-alpha/2})``;
* ``"greater"`` (H1: truth > null): ``Phi(s - z_{1-alpha})``;
* ``"less"`` (H1: truth < null): ``Phi(-s - z_{1-alpha})``.

:func:`power_proportion` tests ``H0: w_k = p0`` (``sigma^2 = avar_kk``);
:func:`power_difference` tests equal proportions in two independent samples of ``n``
respondents each (``sigma^2 = avar1_kk + avar2_kk``, each group's avar at its own population:
the second's is the first's with the tested share moved by the difference,
:func:`shifted_shares`).  The test that these formulas
describe uses the estimated (plug-in) standard error; it has the same limit.

:func:`power_independence` is the asymptotic power of Pearson's chi-square test of
independence on the table of reports ``(A, B)`` of a product mechanism (subset privacy,
section IV-B: ``X`` and ``Y`` are independent iff ``A`` and ``B`` are), with expected
counts from the table's margins: ``1 - F_{chi2'(df, lam)}(chi2_{1-alpha, df})`` with
``df = (r - 1)(c - 1)`` and noncentrality ``lam = n sum_ab (P_ab - P_a P_b)^2 / (P_a P_b)``
(the usual local-alternative approximation; ``P`` the report probabilities).

All of these are large-sample approximations: they ignore the finite-sample bias and
non-normality of the estimators and the chance that a report category is empty.

Examples
--------
Warner's design with ``p = 0.7`` (``(p - q)^2 = 0.16``) at ``w = 0.3``: ``lambda = 0.42``
and ``avar = 0.42 * 0.58 / 0.16``; the ``n`` for a standard error of 0.02 and for 80 %
power against ``p0 = 0.25``:

>>> avar = 0.42 * 0.58 / 0.16
>>> n_for_max_se([avar], 0.02)
3807
>>> n = n_for_power(lambda n: power_proportion(n, 0.05, avar), 0.8)
>>> n, round(power_proportion(n, 0.05, avar), 4)
(4780, 0.8)
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

__all__ = [
    "ALTERNATIVES", "standard_errors", "n_for_max_se", "n_for_ci_width", "coefficients_of_variation",
    "n_for_max_cv",
    "power_proportion", "power_difference", "independence_effect", "power_independence",
    "smallest_n", "n_for_power", "power_curve", "n_grid", "N_MAX",
]

#: the alternatives of the Wald tests
ALTERNATIVES = ("two-sided", "greater", "less")
#: the most respondents a sample size is searched up to (``sample_size`` queries: B151 beyond)
N_MAX = 10 ** 9


# ---- helpers ---------------------------------------------------------------------------------
def _variances(avar: ArrayLike) -> np.ndarray:
    """The variances: a vector as is, a square covariance matrix's diagonal."""
    a = np.asarray(avar, dtype=float)
    if a.ndim == 2 and a.shape[0] == a.shape[1]:
        a = np.diag(a)
    a = np.atleast_1d(a)
    if a.ndim != 1 or a.size == 0:
        raise ValueError("avar must be a non-empty vector of variances or a square covariance matrix")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("asymptotic variances must be finite and >= 0")
    return a


def _check_alpha(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), not {alpha}")
    return float(alpha)


def _as_float_n(n: ArrayLike) -> np.ndarray:
    """Numbers of respondents as floats: a whole number beyond doubles (a spec's n =
    10^400) is inf, where every power has reached its limit."""
    try:
        return np.asarray(n, dtype=float)
    except OverflowError:
        return np.array([float(x) if abs(x) < 2 ** 1023 else math.inf if x > 0 else -math.inf
                         for x in np.ravel(np.asarray(n, dtype=object))]).reshape(np.shape(n))


def _as_result(x: np.ndarray) -> float | np.ndarray:
    """A float for a scalar input, else the array."""
    return float(x) if np.ndim(x) == 0 else x


def _bisect(reached: Callable[[int], bool], lo: int, hi: int) -> int:
    """The smallest n in (lo, hi] with reached(n), given reached(hi) and (lo == 0 or not
    reached(lo)) and reached monotone."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if reached(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _smallest_from_guess(reached: Callable[[int], bool], guess: int) -> int:
    """The smallest n >= 1 with reached(n) (monotone), starting at a closed-form guess:
    returned as is when reached(guess) and not reached(guess - 1), else bracketed by
    doubling steps away from the guess and bisected."""
    guess = max(1, guess)
    if reached(guess):
        if guess == 1 or not reached(guess - 1):
            return guess
        hi, step = guess, 1
        while True:                      # step down until not reached (or 0)
            lo = max(0, hi - step)
            if lo == 0 or not reached(lo):
                return _bisect(reached, lo, hi)
            hi, step = lo, 2 * step
    lo, step = guess, 1
    while True:                          # step up until reached
        hi = lo + step
        if reached(hi):
            return _bisect(reached, lo, hi)
        lo, step = hi, 2 * step


def _smallest_within(reached: Callable[[int], bool], root: float, n_max: int | None) -> int | None:
    """The smallest n >= 1 with reached(n), from the closed form ``n ~ root^2`` (``root`` the
    largest standard deviation over the target, so that the square is taken once, where it
    is known to fit: a target of 1e-300 squared is 0 and 1e300 squared inf in doubles);
    None when it is beyond ``n_max``; ValueError beyond floating point without one."""
    limit = math.inf if n_max is None else n_max
    # (a float ** 2 past 1.3e154 raises OverflowError: squared only where it fits)
    square = float(root) ** 2 if abs(root) < 1e154 else math.inf     # nan: not < 1e154
    if not (square < math.inf and square <= limit):
        if n_max is not None:
            return None
        raise ValueError(f"target too small: the sample size, about ({float(root):.3g})^2, is beyond floating point")
    n = _smallest_from_guess(reached, max(1, math.ceil(square)))
    return n if n_max is None or n <= n_max else None


# ---- precision targets -----------------------------------------------------------------------
def standard_errors(avar_diag: ArrayLike, n: float) -> np.ndarray:
    """Standard errors ``sqrt(avar_kk / n)`` at ``n`` respondents.

    Parameters
    ----------
    avar_diag : array_like
        Asymptotic variances of ``sqrt(n)(estimate - truth)`` (a vector, or a square
        covariance matrix whose diagonal is taken).
    n : float
        Number of respondents (> 0).

    Returns
    -------
    ndarray
        One standard error per estimate.

    Examples
    --------
    >>> standard_errors([1.0, 4.0], 100)
    array([0.1, 0.2])
    """
    if not n > 0:
        raise ValueError(f"n must be > 0, not {n}")
    return np.sqrt(_variances(avar_diag) / n)


def n_for_max_se(avar_diag: ArrayLike, target: float, n_max: int | None = None) -> int | None:
    """The smallest ``n >= 1`` with ``max_k sqrt(avar_kk / n) <= target``.

    Parameters
    ----------
    avar_diag : array_like
        Asymptotic variances (vector or square covariance matrix).
    target : float
        The largest standard error allowed (> 0; any size: 1e-300 and 1e300 too).
    n_max : int, optional
        The largest n searched (None: any, up to floating point).

    Returns
    -------
    int or None
        ``ceil(max_k avar_kk / target^2)``, checked against the criterion itself
        (:func:`standard_errors`) so that floating rounding cannot make it off by one;
        1 when every variance is 0 or the target is above every standard error at n = 1;
        None when it is beyond ``n_max``.

    Examples
    --------
    >>> n_for_max_se([0.5, 1.0], 0.1)     # 1 / 0.01 = 100 exactly
    100
    >>> n_for_max_se([0.0], 0.1), n_for_max_se([1.0], 1e300), n_for_max_se([1.0], 1e-300, n_max=10 ** 9)
    (1, 1, None)
    """
    if not target > 0:
        raise ValueError(f"target must be > 0, not {target}")
    v = _variances(avar_diag)
    top = float(v.max())
    if top == 0:
        return 1
    return _smallest_within(lambda n: bool(standard_errors(v, n).max() <= target), math.sqrt(top) / target, n_max)


def n_for_ci_width(avar_diag: ArrayLike, width: float, alpha: float = 0.05, n_max: int | None = None
                   ) -> int | None:
    """The smallest ``n >= 1`` whose widest two-sided Wald interval,
    ``2 z_{1-alpha/2} max_k SE_k(n)``, is at most ``width``.

    Parameters
    ----------
    avar_diag : array_like
        Asymptotic variances (vector or square covariance matrix).
    width : float
        The largest full width allowed (> 0).
    alpha : float
        One minus the confidence level.
    n_max : int, optional
        The largest n searched (None: any, up to floating point).

    Returns
    -------
    int or None
        The smallest such ``n`` (1 when every variance is 0); None beyond ``n_max``.

    Examples
    --------
    >>> n_for_ci_width([0.25], 0.1)          # a plain proportion at 1/2: 1.96^2 / 0.01
    385
    """
    if not width > 0:
        raise ValueError(f"width must be > 0, not {width}")
    z = scipy.special.ndtri(1 - _check_alpha(alpha) / 2)   # the normal quantile (scipy.stats costs 0.5 s to import)
    v = _variances(avar_diag)
    top = float(v.max())
    if top == 0:
        return 1
    return _smallest_within(lambda n: bool(2 * z * standard_errors(v, n).max() <= width),
                            math.sqrt(top) * (2 * z / width), n_max)


def coefficients_of_variation(avar_diag: ArrayLike, values: ArrayLike, n: float) -> np.ndarray:
    """``SE_k(n) / |v_k|`` per cell at ``n`` respondents; nan where ``v_k = 0`` (a share of 0
    has no relative precision).

    Parameters
    ----------
    avar_diag : array_like
        Asymptotic variances (vector or square covariance matrix).
    values : array_like
        The cells' true values (shares, or a mean), in the same order.
    n : float
        Number of respondents (> 0).

    Returns
    -------
    ndarray
        One coefficient of variation per cell.

    Examples
    --------
    >>> coefficients_of_variation([0.09, 0.16], [0.1, 0.0], 100)
    array([0.3, nan])
    """
    se = standard_errors(avar_diag, n)
    v = np.abs(np.asarray(values, dtype=float).ravel())
    if v.shape != se.shape:
        raise ValueError(f"{v.size} values for {se.size} variances")
    out = np.full(se.shape, np.nan)
    np.divide(se, v, out=out, where=v > 0)
    return out


def n_for_max_cv(avar_diag: ArrayLike, values: ArrayLike, target: float, n_max: int | None = None) -> int | None:
    """The smallest ``n >= 1`` whose largest coefficient of variation
    (:func:`coefficients_of_variation`, over the cells whose value is not 0) is at most
    ``target``.

    Parameters
    ----------
    avar_diag : array_like
        Asymptotic variances (vector or square covariance matrix).
    values : array_like
        The cells' true values (shares, or a mean), in the same order.
    target : float
        The largest CV allowed (> 0): 0.3 for the usual publication rule.
    n_max : int, optional
        The largest n searched (None: any, up to floating point).

    Returns
    -------
    int or None
        ``ceil(max_k avar_kk / (target v_k)^2)``, checked against the criterion itself;
        None beyond ``n_max``.

    Examples
    --------
    >>> n_for_max_cv([0.09, 0.16], [0.1, 0.0], 0.3)    # 0.09 / 0.03^2; the share of 0 left out
    100
    """
    if not target > 0:
        raise ValueError(f"target must be > 0, not {target}")
    v = _variances(avar_diag)
    w = np.abs(np.asarray(values, dtype=float).ravel())
    if w.shape != v.shape:
        raise ValueError(f"{w.size} values for {v.size} variances")
    if not np.any(w > 0):
        raise ValueError("every cell has the value 0: a coefficient of variation needs a nonzero value")
    top = float(np.max(v[w > 0] / w[w > 0] ** 2))
    if top == 0:
        return 1
    return _smallest_within(lambda n: bool(np.nanmax(coefficients_of_variation(v, w, n)) <= target),
                            math.sqrt(top) / target, n_max)


# ---- power -------------------------------------------------------------------------------------
def _wald_power(n: ArrayLike, delta: float, var: float, alpha: float, alternative: str) -> float | np.ndarray:
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, not {alternative!r}")
    alpha = _check_alpha(alpha)
    if not (math.isfinite(var) and var > 0):
        raise ValueError(f"the asymptotic variance must be finite and > 0, not {var}")
    n = _as_float_n(n)
    if np.any(n <= 0):
        raise ValueError("n must be > 0")
    # sqrt(n) delta: 0 under the null at any n (inf * 0 would be nan for n beyond doubles)
    s = np.sqrt(n) * delta / math.sqrt(var) if delta != 0 else np.zeros_like(n)
    # the standard normal's cdf and quantile (what scipy.stats.norm calls, without its 0.5 s import)
    cdf, ppf = scipy.special.ndtr, scipy.special.ndtri
    if alternative == "two-sided":
        z = ppf(1 - alpha / 2)
        return _as_result(cdf(s - z) + cdf(-s - z))
    z = ppf(1 - alpha)
    return _as_result(cdf(s - z) if alternative == "greater" else cdf(-s - z))


def power_proportion(n: ArrayLike, delta: float, var: float, alpha: float = 0.05,
                     alternative: str = "two-sided") -> float | np.ndarray:
    """Power of the Wald z-test of ``H0: w_k = p0`` at ``n`` respondents.

    Parameters
    ----------
    n : int or array_like
        Number(s) of respondents.
    delta : float
        ``w_k - p0``: the truth minus the null value.
    var : float
        ``avar_kk`` at the truth (> 0).
    alpha : float
        Level of the test.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: H1 ``w_k > p0``; ``"less"``: H1 ``w_k < p0``.

    Returns
    -------
    float or ndarray
        A float for a scalar ``n``, else one power per ``n``.

    Examples
    --------
    >>> round(power_proportion(100, 0.0, 1.0), 4)                 # the size
    0.05
    >>> power_proportion([100, 400], 0.2, 1.0).round(4)           # s = 2 and 4
    array([0.516 , 0.9793])
    >>> round(power_proportion(100, 0.2, 1.0, alternative="greater"), 4)
    0.6388
    """
    return _wald_power(n, delta, var, alpha, alternative)


def power_difference(n: ArrayLike, delta: float, var1: float, var2: float, alpha: float = 0.05,
                     alternative: str = "two-sided") -> float | np.ndarray:
    """Power of the Wald z-test of equal proportions in two independent samples of ``n``
    respondents each: ``Var(w1_hat - w2_hat) = (var1 + var2) / n``.

    Parameters
    ----------
    n : int or array_like
        Respondents per group.
    delta : float
        The true difference ``w1 - w2``.
    var1, var2 : float
        The groups' asymptotic variances ``avar_kk`` at their truths.
    alpha : float
        Level of the test.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: H1 ``w1 > w2``.

    Returns
    -------
    float or ndarray
        A float for a scalar ``n``, else one power per ``n``.

    Examples
    --------
    >>> round(power_difference(200, 0.2, 1.0, 1.0), 4)            # = power_proportion(100, 0.2, 1)
    0.516
    """
    return _wald_power(n, delta, var1 + var2, alpha, alternative)


def shifted_shares(w: ArrayLike, k: int, delta: float) -> np.ndarray:
    """The second group's population of a difference test: ``w`` with share ``k`` moved by
    ``delta`` and the other shares rescaled in proportion, so that they sum to 1 (its
    variance, not the first group's, is the second group's in :func:`power_difference`).

    Examples
    --------
    >>> shifted_shares([0.2, 0.3, 0.5], 0, 0.2).round(4)
    array([0.4  , 0.225, 0.375])
    """
    w = np.asarray(w, dtype=float)
    moved = w[k] + delta
    if not 0 <= moved <= 1:
        raise ValueError(f"the second group's share would be {moved:.4g}, outside [0, 1]: "
                         "test a difference that keeps it a share")
    rest = 1 - w[k]
    if rest <= 0:
        raise ValueError("every respondent is in this category: the other shares cannot make room")
    out = w * ((1 - moved) / rest)
    out[k] = moved
    return out


def _report_table(joint: ArrayLike) -> np.ndarray:
    P = np.asarray(joint, dtype=float)
    if P.ndim != 2:
        raise ValueError("joint must be a matrix of report probabilities")
    if not np.all(np.isfinite(P)) or np.any(P < 0) or not math.isclose(P.sum(), 1.0, abs_tol=1e-9):
        raise ValueError("joint must hold nonnegative probabilities that sum to 1")
    P = P[P.sum(axis=1) > 0][:, P.sum(axis=0) > 0]
    if min(P.shape) < 2:
        raise ValueError("independence needs at least two reports with positive probability on each side")
    return P / P.sum()


def independence_effect(joint: ArrayLike) -> float:
    """``sum_ab (P_ab - P_a P_b)^2 / (P_a P_b)``: the Pearson noncentrality per respondent
    (Cohen's ``w^2``) of a table of report probabilities (all-zero rows and columns
    dropped).

    Examples
    --------
    >>> round(independence_effect([[0.3, 0.2], [0.2, 0.3]]), 12)   # 4 * 0.05^2 / 0.25
    0.04
    """
    P = _report_table(joint)
    E = np.outer(P.sum(axis=1), P.sum(axis=0))
    return float(np.sum((P - E) ** 2 / E))


#: a noncentrality at which Pearson's test has power 1 in doubles (for any table below 10^11 cells)
_NONCENTRALITY_ONE = 1e12


def power_independence(n: ArrayLike, joint: ArrayLike, alpha: float = 0.05) -> float | np.ndarray:
    """Asymptotic power of Pearson's chi-square test of independence on the report table
    of a product mechanism.

    Parameters
    ----------
    n : int or array_like
        Number(s) of respondents.
    joint : array_like
        ``P(A = a, B = b)``: rows the reports of X, columns those of Y (for a product of
        channels ``K_A W K_B^T``); all-zero rows and columns are dropped.
    alpha : float
        Level of the test.

    Returns
    -------
    float or ndarray
        ``1 - F_{chi2'(df, lam)}(chi2_{1-alpha, df})``, ``df = (r-1)(c-1)``,
        ``lam = n * independence_effect(joint)``; ``alpha`` at independence.

    Examples
    --------
    >>> round(power_independence(100, [[0.3, 0.2], [0.2, 0.3]]), 4)   # lam = 4, df = 1
    0.516
    >>> round(power_independence(100, np.outer([0.4, 0.6], [0.5, 0.3, 0.2])), 6)
    0.05
    """
    alpha = _check_alpha(alpha)
    P = _report_table(joint)
    df = (P.shape[0] - 1) * (P.shape[1] - 1)
    n = _as_float_n(n)
    if np.any(n <= 0):
        raise ValueError("n must be > 0")
    effect = independence_effect(P)
    lam = n * effect if effect > 0 else np.zeros_like(n)
    crit = scipy.stats.chi2.ppf(1 - alpha, df)
    # scipy's noncentral chi-square is nan past lam ~ 1e15; the power (rising in lam) is 1 in
    # doubles long before: at lam = 1e12 the critical value is some 7e5 standard deviations below
    sf = scipy.stats.ncx2.sf(crit, df, np.clip(lam, 0.0, _NONCENTRALITY_ONE))
    return _as_result(np.where(lam > 0, sf, alpha))


def power_wald(n: ArrayLike, effect: float, df: int, alpha: float = 0.05) -> float | np.ndarray:
    """Asymptotic power of a Wald chi-square test with ``df`` degrees of freedom whose
    noncentrality is ``n * effect`` (``effect``: the statistic over n in the limit; the
    independence test of two variables sharing a factor,
    :func:`privspec.backends.finite.joint_independence.wald_effect`).

    Examples
    --------
    >>> round(power_wald(100, 0.04, 1), 4)        # the same noncentrality as Pearson's 2 x 2 above
    0.516
    >>> round(power_wald(100, 0.0, 2), 6)
    0.05
    """
    alpha = _check_alpha(alpha)
    n = _as_float_n(n)
    if np.any(n <= 0):
        raise ValueError("n must be > 0")
    lam = n * effect if effect > 0 else np.zeros_like(n)
    crit = scipy.stats.chi2.ppf(1 - alpha, df)
    sf = scipy.stats.ncx2.sf(crit, df, np.clip(lam, 0.0, _NONCENTRALITY_ONE))
    return _as_result(np.where(lam > 0, sf, alpha))


# ---- searching n and plotting power -------------------------------------------------------------
def smallest_n(predicate_or_power: Callable[[int], float | bool], target: float | None = None,
               n_max: int = 10 ** 9) -> int | None:
    """The smallest ``n`` in ``[1, n_max]`` where a monotone nondecreasing function of
    ``n`` reaches ``target`` (a predicate: where it is true).

    Exponential search (1, 2, 4, ...) then bisection on the integers: about
    ``2 log2(n)`` evaluations.  The function must be nondecreasing in ``n`` (a power
    function, a precision criterion); otherwise the answer is some crossing point.

    Parameters
    ----------
    predicate_or_power : callable
        ``f(n)``; with ``target=None`` a predicate, else a number compared with ``>= target``.
    target : float, optional
        The value to reach.
    n_max : int
        The largest ``n`` searched.

    Returns
    -------
    int or None
        None when even ``f(n_max)`` does not reach the target.

    Examples
    --------
    >>> smallest_n(lambda n: n * n >= 1000)
    32
    >>> smallest_n(lambda n: 1 - 1 / n, 0.99)
    100
    >>> smallest_n(lambda n: 1 - 1 / n, 0.99, n_max=50) is None
    True
    """
    if n_max < 1:
        raise ValueError(f"n_max must be >= 1, not {n_max}")
    f = predicate_or_power

    def reached(n: int) -> bool:
        return bool(f(n)) if target is None else bool(f(n) >= target)

    if not reached(n_max):
        return None
    lo, hi = 0, 1
    while hi < n_max and not reached(hi):
        lo, hi = hi, min(2 * hi, n_max)
    return _bisect(reached, lo, hi)


def n_for_power(power_fn: Callable[[int], float], target_power: float, n_max: int = 10 ** 9) -> int | None:
    """The smallest ``n <= n_max`` with ``power_fn(n) >= target_power`` (None if none).

    Examples
    --------
    >>> n_for_power(lambda n: power_proportion(n, 0.2, 1.0), 0.8)   # (1.96 + 0.84)^2 / 0.04
    197
    """
    if not 0 < target_power < 1:
        raise ValueError(f"target_power must lie in (0, 1), not {target_power}")
    return smallest_n(power_fn, target_power, n_max)


def power_curve(power_fn: Callable[[int], float], n_values: ArrayLike) -> np.ndarray:
    """``power_fn(n)`` at each ``n`` of ``n_values``.

    Examples
    --------
    >>> power_curve(lambda n: power_proportion(n, 0.2, 1.0), [100, 400]).round(4)
    array([0.516 , 0.9793])
    """
    return np.array([float(power_fn(n if isinstance(n, float) else int(n)))
                     for n in np.asarray(n_values).ravel().tolist()])


def n_grid(n_center: float, points: int = 25) -> np.ndarray:
    """Sorted unique integers log-spaced from about ``n_center / 10`` to ``10 n_center``
    (and ``n_center`` itself): the x axis of a power curve.

    Integers (int64) while they fit; whole numbers as floats beyond (a power at n = 10^300).

    Examples
    --------
    >>> n_grid(100, points=5)
    array([  10,   32,  100,  316, 1000])
    >>> n_grid(10 ** 300, points=3)
    array([1.e+299, 1.e+300, 1.e+301])
    """
    center = float(_as_float_n(n_center))
    if not center >= 1:
        raise ValueError(f"n_center must be >= 1, not {n_center}")
    if points < 2:
        raise ValueError(f"points must be >= 2, not {points}")
    if not math.isfinite(10 * center):
        raise ValueError(f"n_center must be a finite number of respondents, not {n_center}")
    grid = np.union1d(np.maximum(np.round(np.geomspace(max(1.0, center / 10), 10 * center, points)), 1),
                      [np.round(center)])
    return grid.astype(np.int64) if grid[-1] < 2 ** 62 else grid
