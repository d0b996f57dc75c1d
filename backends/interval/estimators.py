"""Estimators from interval data other than the NPMLE itself.

* :func:`example2_mean` — the unbiased mean of Example 2 (eq. 3) with its standard
  error, and :func:`example2_variance`, its exact per-respondent variance;
* :func:`parametric_mle` — maximum likelihood for a normal or logistic population
  from intervals, points and ring ranges, with standard errors from the observed
  information;
* :func:`optimal_anchor` and :func:`information_bound` — Theorem 2 and the
  information lower bound of its proof;
* :func:`npmle_functional` — a linear functional int phi dF of an NPMLE (Example 1).

All take sufficient statistics: distinct reports with counts.

Examples
--------
>>> import numpy as np
>>> # Case I reports from uniform anchors on [0, 10]: (-inf, U] if Y <= U, else (U, inf]
>>> left = np.array([-np.inf, 2.0, -np.inf]); right = np.array([6.0, np.inf, 9.0])
>>> mu, se, n = example2_mean(left, right, np.array([1, 1, 2]), 0.0, 10.0)
>>> float(mu), n   # D = 2(6) - 10, 2(2) - 0, 2(9) - 10 twice
(5.5, 4)
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import sympy
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import Law
from privspec.backends.interval.laws import law_cdf_expr, law_distribution, nearest_double


# ---- Example 2 --------------------------------------------------------------------------------
def case1_anchor(left: np.ndarray, right: np.ndarray, lower: float = -np.inf,
                 upper: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
    """(U, Delta) of Case-I reports: (-inf, U] gives Delta = 1, (U, inf] gives Delta = 0.

    An end at the variable's support bound counts as infinite (data written within the
    support, ``(0, U]``); an end beyond it is an anchor (anchors wider than the support,
    as in the interval paper's Fig. 14: ``(U, inf]`` with ``U`` below the support).
    Raises ValueError on reports that are not Case-I reports.
    """
    lo_open = (left == -np.inf) | (left == lower)
    hi_open = (right == np.inf) | (right == upper)
    delta = lo_open & ~hi_open
    bad = (lo_open == hi_open) | (left >= right)
    if bad.any():
        raise ValueError(np.flatnonzero(bad))
    return np.where(delta, right, left), delta.astype(float)


def example2_terms(u: np.ndarray, delta: np.ndarray, a: float, b: float) -> np.ndarray:
    """D_i = Delta_i (2 U_i - b) + (1 - Delta_i)(2 U_i - a), whose mean is eq. (3)."""
    return delta * (2 * u - b) + (1 - delta) * (2 * u - a)


def example2_mean(left: np.ndarray, right: np.ndarray, counts: np.ndarray, a: float, b: float,
                  lower: float = -np.inf, upper: float = np.inf) -> tuple[float, float, int]:
    """The Example 2 estimator (eq. 3), its standard error and n.

    E[D | Y] = Y for Y in [a, b] (proof of Proposition 1), so the mean of D is unbiased;
    the standard error is the sample standard deviation of D over sqrt(n).
    """
    u, delta = case1_anchor(left, right, lower, upper)
    d = example2_terms(u, delta, a, b)
    w = np.asarray(counts, dtype=float)
    n = int(w.sum())
    mu = float(np.sum(w * d) / n)
    var = float(np.sum(w * (d - mu) ** 2) / max(n - 1, 1))
    return mu, float(np.sqrt(var / n)), n


def example2_conditional_se(left: np.ndarray, right: np.ndarray, counts: np.ndarray, a: float, b: float,
                            lower: float = -np.inf, upper: float = np.inf) -> float:
    """The standard error of eq. (3) given the respondents' true values (privacy noise only).

    Given Y in [a, b], D = Delta (2U - b) + (1 - Delta)(2U - a) has mean Y and variance
    v(Y) = (Y - a)(Y - b) + (b - a)^2 / 3 (from E[D^2 | Y] = 2Y^2 - (a + b)Y +
    (a^2 + ab + b^2)/3), so Var(mu_hat | Y_1..n) = sum v(Y_i) / n^2.  v is quadratic in Y,
    so it has an unbiased estimate from each report: D_i for Y_i and
    W_i = (a^2 + b^2)/2 + (b - a) U_i (1 - 2 Delta_i) for Y_i^2 (E[(1 - Delta) 2U] =
    (Y^2 - a^2)/(b - a), E[Delta 2U] = (b^2 - Y^2)/(b - a)).  Its mean over the sample
    is E[v(Y)] = Var(D) - Var(Y): the population variance less the sampling part.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.uniform(0, 150, 2000)                       # the respondents, held fixed
    >>> v = np.mean((y - 0) * (y - 150) + 150 ** 2 / 3)     # their mean conditional variance
    >>> u = rng.uniform(0, 150, 2000)
    >>> left, right = np.where(y <= u, -np.inf, u), np.where(y <= u, u, np.inf)
    >>> se = example2_conditional_se(left, right, np.ones(2000), 0.0, 150.0)
    >>> bool(abs(se * np.sqrt(2000) / np.sqrt(v) - 1) < 0.15)   # an estimate: about 5% noise here
    True
    """
    u, delta = case1_anchor(left, right, lower, upper)
    w = np.asarray(counts, dtype=float)
    n = float(w.sum())
    d = example2_terms(u, delta, a, b)
    y2 = (a * a + b * b) / 2 + (b - a) * u * (1 - 2 * delta)
    v = y2 - (a + b) * d + (a * a + a * b + b * b) / 3
    # an unbiased estimate of a nonnegative quantity may fall below zero in a tiny sample
    return float(np.sqrt(max(float(w @ v), 0.0)) / n)


def example2_variance(population: Law, a: sympy.Expr, b: sympy.Expr) -> tuple[sympy.Expr | float, str, float]:
    """Var(D) of one Example 2 term (n Var of eq. 3), how it was computed, and the bias.

    E[D^2 | Y] = [b^3 - (2Y - b)^3 + (2Y - a)^3 - a^3] / (6 (b - a)) for Y in [a, b]: a
    quadratic in Y (the cubes cancel), so Var(D) is exact from E Y and E Y^2 when the
    population lies in [a, b].  Outside [a, b] every anchor falls on one side, and
    E[D | Y] = clip(Y, a, b): then by quadrature, with the bias E clip(Y) - E Y.
    """
    lo, hi = population.support()
    if sympy.simplify(lo - a) >= 0 and sympy.simplify(hi - b) <= 0:
        y = sympy.Symbol("y")
        second = sympy.expand((b ** 3 - (2 * y - b) ** 3 + (2 * y - a) ** 3 - a ** 3) / (6 * (b - a)))
        m1, m2 = law_moment(population, 1), law_moment(population, 2)
        poly = sympy.Poly(second, y)
        e_second = sum(c * (m1 if k == 1 else m2 if k == 2 else 1) for (k,), c in poly.terms())
        return sympy.simplify(e_second - m1 ** 2), "exact", 0.0
    dist = law_distribution(population)
    af, bf = nearest_double(a), nearest_double(b)

    def cond(y):
        y = np.clip(y, af, bf)
        return (bf ** 3 - (2 * y - bf) ** 3 + (2 * y - af) ** 3 - af ** 3) / (6 * (bf - af))

    e2 = scipy.integrate.quad(lambda y: cond(y) * dist.pdf(y), *dist.support(), limit=200)[0]
    e1 = scipy.integrate.quad(lambda y: np.clip(y, af, bf) * dist.pdf(y), *dist.support(), limit=200)[0]
    return e2 - e1 ** 2, "quadrature", e1 - float(dist.mean())


def law_moment(law: Law, k: int) -> sympy.Expr:
    """E[Y^k] exactly, Y = shift + scale X with X of the law's family.

    >>> import sympy
    >>> law_moment(Law("logistic", (("location", sympy.Integer(0)), ("scale", sympy.Integer(1)))), 2)
    pi**2/3
    """
    p = dict(law.params)
    x = sympy.Symbol("x")
    if law.family == "uniform":
        a, b = p["a"], p["b"]
        base = [sympy.integrate(x ** j, (x, a, b)) / (b - a) for j in range(k + 1)]
    elif law.family == "normal":
        mu, sd = p["mean"], p["sd"]
        base = [sympy.expand(sum(sympy.binomial(j, i) * mu ** (j - i) * sd ** i * _std_normal_moment(i)
                                 for i in range(j + 1))) for j in range(k + 1)]
    elif law.family == "logistic":
        mu, s = p["location"], p["scale"]
        base = [sympy.expand(sum(sympy.binomial(j, i) * mu ** (j - i) * s ** i * _std_logistic_moment(i)
                                 for i in range(j + 1))) for j in range(k + 1)]
    elif law.family == "exponential":
        base = [sympy.factorial(j) / p["rate"] ** j for j in range(k + 1)]
    else:
        raise BackendError(Diagnostic("B101", f"no continuous law '{law.family}'"))
    c, s = law.shift, law.scale
    return sympy.nsimplify(sympy.expand(sum(sympy.binomial(k, j) * c ** (k - j) * s ** j * base[j]
                                            for j in range(k + 1))))


def _std_normal_moment(i: int) -> sympy.Expr:
    return sympy.Integer(0) if i % 2 else sympy.factorial2(i - 1) if i else sympy.Integer(1)


def _std_logistic_moment(i: int) -> sympy.Expr:
    # E X^(2n) = (2^(2n) - 2) pi^(2n) |B_(2n)| for the standard logistic law
    if i % 2:
        return sympy.Integer(0)
    if i == 0:
        return sympy.Integer(1)
    return (2 ** i - 2) * sympy.pi ** i * abs(sympy.bernoulli(i))


# ---- parametric MLE -----------------------------------------------------------------------------
_FAMILIES = {"normal": "norm", "logistic": "logistic"}   # scipy.stats names, looked up on use: start-up


def score_ratio(family: str, z: np.ndarray) -> np.ndarray:
    """f0'(z) / f0(z) of the standard law."""
    return -z if family == "normal" else -np.tanh(z / 2)


@dataclass(frozen=True)
class ParametricFit:
    """A location-scale fit: ``location``, ``scale``, their covariance, the log-likelihood."""

    family: str
    location: float
    scale: float
    cov: np.ndarray  # of (location, scale)
    loglik: float
    iterations: int
    converged: bool
    n: int
    #: the negative log-likelihood of (mu, log s) and its gradient (None: not kept)
    negll: Callable[[np.ndarray], tuple[float, np.ndarray]] | None = field(default=None, compare=False, repr=False)

    def _standard_moments(self, k: int) -> list[float]:
        std = _std_normal_moment if self.family == "normal" else _std_logistic_moment
        return [float(std(i)) for i in range(k + 1)]

    def moment_value(self, k: int, location: float, scale: float) -> float:
        """E[Y^k] of the family at (location, scale)."""
        mom = self._standard_moments(k)
        return float(sum(scipy.special.comb(k, i) * location ** (k - i) * scale ** i * mom[i] for i in range(k + 1)))

    def profile_interval(self, k: int, level: float = 0.95) -> tuple[float, float] | None:
        """The profile-likelihood interval for E[Y^k]: every value v with
        2 (loglik - max{loglik(theta) : E_theta[Y^k] = v}) <= the chi-square(1) quantile.

        Wald intervals (estimate +- z se) assume the estimate is normal with the
        observed-information variance; from interval data at n = 100-200 the scale's
        estimate is skewed and E[Y^2] = mu^2 + s^2 m_2 inherits it: Wald covered 83-92%
        for E[Y^2] in simulation where the profile covered 90-95% (bench/interval_coverage.py).
        Given for k = 1 (v = mu for these symmetric laws: the profile maximizes over s)
        and k = 2 (mu = sqrt(v) cos(phi), s = sqrt(v / m_2) sin(phi): over phi in (0, pi));
        None for other k or without the likelihood.  An end is infinite where the
        profile never drops that far (the data do not bound the value).
        """
        if self.negll is None or k not in (1, 2) or not (self.scale > 0):
            return None
        crit = float(scipy.special.ndtri(0.5 + level / 2) ** 2)
        negll = self.negll
        m2 = self._standard_moments(2)[2]
        v_hat = self.moment_value(k, self.location, self.scale)
        # the nuisance: log s with mu = v (k = 1), or the angle phi (k = 2); each profile
        # evaluation searches from the fit's value, so that it does not depend on the ones before
        if k == 1:
            def theta(v: float, t: float) -> np.ndarray:
                return np.array([v, t])
            t0, t_lo, t_hi = float(np.log(self.scale)), -np.inf, np.inf
        else:
            def theta(v: float, t: float) -> np.ndarray:
                return np.array([np.sqrt(v) * np.cos(t), np.log(np.sqrt(v / m2) * np.sin(t))])
            t0, t_lo, t_hi = float(np.arctan2(self.scale * np.sqrt(m2), self.location)), 1e-12, np.pi - 1e-12

        def profile(v: float) -> float:
            """max over the nuisance of the log-likelihood at E[Y^k] = v (Brent's method on a
            bracket around the fit's value, widened until the optimum lies inside it)."""
            if k == 2 and v <= 0:
                return -np.inf
            f = lambda t: negll(theta(v, t))[0]
            width = 0.5
            while True:
                a, b = max(t0 - width, t_lo), min(t0 + width, t_hi)
                r = scipy.optimize.minimize_scalar(f, bounds=(a, b), method="bounded", options={"xatol": 1e-7})
                at_a, at_b = r.x - a < 1e-3 * width, b - r.x < 1e-3 * width
                if (not at_a or a == t_lo) and (not at_b or b == t_hi) or width > 50:
                    return -float(r.fun)
                width *= 4

        def excess(v: float) -> float:
            with np.errstate(all="ignore"):
                return 2.0 * (self.loglik - profile(v)) - crit

        _, se = self.moment(k)
        step = 1.96 * se if np.isfinite(se) and se > 0 else 0.1 * max(abs(v_hat), 1.0)
        ends = []
        for sign in (-1.0, 1.0):
            inner, width = v_hat, step
            for _ in range(60):
                v = v_hat + sign * width
                if k == 2 and v <= 0:
                    # E[Y^2] > 0: halve toward 0 instead of stepping past it
                    v = inner / 2
                    if v < 1e-12 * max(v_hat, 1.0):
                        ends.append(0.0)
                        break
                if excess(v) > 0:
                    try:
                        ends.append(float(scipy.optimize.brentq(excess, min(inner, v), max(inner, v),
                                                          xtol=1e-8 * max(1.0, abs(v)), rtol=1e-10)))
                    except ValueError:
                        # no sign change: the fit stopped short of the maximum (separated data,
                        # the scale tending to 0); keep the outer point, the wider end
                        ends.append(float(v))
                    break
                inner, width = v, 2 * width
            else:
                ends.append(sign * np.inf)
        return ends[0], ends[1]

    def effective_n(self) -> float:
        """How many exactly observed values would carry the data's information on the
        location: Var(Y) / Var(location estimate) (n for exact data, less for intervals)."""
        var_loc = float(self.cov[0, 0])
        var_y = self.moment_value(2, 0.0, self.scale)
        return var_y / var_loc if var_loc > 0 and np.isfinite(var_loc) else float("nan")

    def moment(self, k: int) -> tuple[float, float]:
        """E[Y^k] under the fit and its standard error (delta method)."""
        def value(theta):
            loc, scale = theta
            if self.family == "normal":
                mom = [float(_std_normal_moment(i)) for i in range(k + 1)]
            else:
                mom = [float(_std_logistic_moment(i)) for i in range(k + 1)]
            return sum(scipy.special.comb(k, i) * loc ** (k - i) * scale ** i * mom[i] for i in range(k + 1))

        theta = np.array([self.location, self.scale])
        h = 1e-6 * np.maximum(1.0, np.abs(theta))
        grad = np.array([(value(theta + h * e) - value(theta - h * e)) / (2 * h[i])
                         for i, e in enumerate(np.eye(2))])
        return float(value(theta)), float(np.sqrt(max(grad @ self.cov @ grad, 0.0)))


def _negative_loglik(piece_left: np.ndarray, piece_right: np.ndarray, owner: np.ndarray, counts: np.ndarray,
                     family: str) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """The negative log-likelihood of (mu, log s) and its gradient (see :func:`parametric_mle`)."""
    dist = getattr(scipy.stats, _FAMILIES[family])
    pl, pr = np.asarray(piece_left, dtype=float), np.asarray(piece_right, dtype=float)
    owner = np.asarray(owner)
    counts = np.asarray(counts, dtype=float)
    R = len(counts)
    is_point = pl == pr
    point_owner = np.zeros(R, dtype=bool)
    point_owner[owner[is_point]] = True
    if np.any(point_owner[owner[~is_point]]):
        raise BackendError(Diagnostic("B104", "a report mixes a point and an interval"))

    def negll(theta):
        mu, log_s = theta
        s = np.exp(log_s)
        zl, zr = (pl - mu) / s, (pr - mu) / s
        # probabilities from the tail that keeps precision (sf above the median)
        upper = zl > 0
        prob = np.where(upper, dist.sf(zl) - dist.sf(zr), dist.cdf(zr) - dist.cdf(zl))
        fl = np.where(np.isfinite(zl), dist.pdf(zl), 0.0)
        fr = np.where(np.isfinite(zr), dist.pdf(zr), 0.0)
        zlf, zrf = np.where(np.isfinite(zl), zl, 0.0), np.where(np.isfinite(zr), zr, 0.0)
        d_mu = np.where(is_point, 0.0, -(fr - fl) / s)
        d_ls = np.where(is_point, 0.0, -(zrf * fr - zlf * fl))
        P = np.bincount(owner, weights=np.where(is_point, 0.0, prob), minlength=R)
        dP_mu = np.bincount(owner, weights=d_mu, minlength=R)
        dP_ls = np.bincount(owner, weights=d_ls, minlength=R)
        interval = ~point_owner
        P = np.maximum(P, 1e-300)
        ll = np.sum(counts[interval] * np.log(P[interval]))
        g_mu = np.sum(counts[interval] * dP_mu[interval] / P[interval])
        g_ls = np.sum(counts[interval] * dP_ls[interval] / P[interval])
        if is_point.any():
            zp = zl[is_point]
            cp = counts[owner[is_point]]
            ll += np.sum(cp * (dist.logpdf(zp) - log_s))
            ratio = score_ratio(family, zp)
            g_mu += np.sum(cp * (-ratio / s))
            g_ls += np.sum(cp * (-ratio * zp - 1))
        return -ll, -np.array([g_mu, g_ls])

    return negll


def parametric_mle(piece_left: np.ndarray, piece_right: np.ndarray, owner: np.ndarray, counts: np.ndarray,
                   family: str) -> ParametricFit:
    """Maximum likelihood of a normal or logistic law from reports that are unions of pieces.

    The log-likelihood is sum_i c_i log P_theta(R_i) with P_theta(R_i) the sum of
    F((r - mu)/s) - F((l - mu)/s) over the pieces of report i, and log f for a
    disclosed point (the footnote to eq. 7: standard parametric maximum likelihood).
    Optimized in (mu, log s) with the analytic gradient; standard errors from the
    observed information (a central-difference Hessian of the analytic gradient).
    """
    negll = _negative_loglik(piece_left, piece_right, owner, counts, family)
    pl, pr = np.asarray(piece_left, dtype=float), np.asarray(piece_right, dtype=float)
    counts = np.asarray(counts, dtype=float)
    finite = np.concatenate([pl[np.isfinite(pl)], pr[np.isfinite(pr)]])
    if not len(finite):
        raise BackendError(Diagnostic("B105", "no finite interval end: the data carry no information"))
    start = np.array([np.median(finite), np.log(max(np.std(finite), 1e-3))])
    res = scipy.optimize.minimize(negll, start, jac=True, method="BFGS",
                            options={"gtol": 1e-9 * max(1.0, counts.sum()), "maxiter": 500})
    theta = res.x
    h = 1e-5 * np.maximum(1.0, np.abs(theta))
    hess = np.array([(negll(theta + h[i] * e)[1] - negll(theta - h[i] * e)[1]) / (2 * h[i])
                     for i, e in enumerate(np.eye(2))])
    hess = (hess + hess.T) / 2
    try:
        cov_eta = np.linalg.inv(hess)
    except np.linalg.LinAlgError:
        cov_eta = np.full((2, 2), np.nan)
    s = float(np.exp(theta[1]))
    jac = np.diag([1.0, s])  # (mu, log s) -> (mu, s)
    # BFGS stops with "precision loss" when the gradient cannot be reduced further in floating
    # point; the fit is at the maximum when the Newton decrement g^T H^-1 g (twice the
    # log-likelihood still to gain) is negligible
    g = negll(theta)[1]
    with np.errstate(all="ignore"):
        decrement = float(g @ cov_eta @ g)
    converged = bool(res.success) or (np.isfinite(decrement) and 0 <= decrement < 1e-8)
    return ParametricFit(family, float(theta[0]), s, jac @ cov_eta @ jac, float(-res.fun), int(res.nit),
                         converged, int(counts.sum()), negll)


# ---- Theorem 2 ---------------------------------------------------------------------------------
def optimal_anchor(population: Law, order: int = 1) -> tuple[sympy.Expr, sympy.Symbol, sympy.Expr, str]:
    """Theorem 2: g_U(u) = c {F(u)(1 - F(u))}^(1/2) |phi'(u)| for phi(y) = y^order.

    Returns the density (a sympy expression in ``u`` on the population's support),
    the symbol, the constant c and how c was found.  For a uniform population on
    [c0, d0] and the mean, int sqrt(F(1 - F)) = (d0 - c0) pi / 8 exactly.

    >>> import sympy
    >>> g, u, c, how = optimal_anchor(Law("uniform", (("a", sympy.Integer(0)), ("b", sympy.Integer(150)))))
    >>> g, how
    (2*sqrt(u*(150 - u))/(5625*pi), 'exact')
    """
    u = sympy.Symbol("u", real=True)
    lo, hi = population.support()
    phi_prime = order * u ** (order - 1)
    if population.family == "uniform" and order == 1:
        F = (u - lo) / (hi - lo)
        c = 8 / (sympy.pi * (hi - lo))
        return c * sympy.sqrt((u - lo) * (hi - u)) / (hi - lo), u, c, "exact"
    F = law_cdf_expr(population, u)
    dist = law_distribution(population)
    total = scipy.integrate.quad(lambda x: np.sqrt(dist.cdf(x) * dist.sf(x)) * abs(order * x ** (order - 1)),
                           *dist.support(), limit=200)[0]
    c = sympy.Float(1 / total, 15)
    return c * sympy.sqrt(F * (1 - F)) * sympy.Abs(phi_prime), u, c, "quadrature"


def information_bound(population: Law, anchor: Law | None, order: int = 1) -> tuple[float, float]:
    """The Case-I information bound int phi'^2 F(1 - F) / p_U (proof of Theorem 2).

    With ``anchor`` None the bound under the optimal anchor, (int |phi'| sqrt(F(1-F)))^2
    (the Cauchy inequality of the proof, whose right-hand side lacks its square in the
    paper).  Returns the bound over the anchor's support and the population mass
    outside it, where F is not identified (the bound is then strictly infinite).
    """
    dist = law_distribution(population)
    lo, hi = dist.support()
    phi2 = lambda x: (order * x ** (order - 1)) ** 2
    if anchor is None:
        val = scipy.integrate.quad(lambda x: np.sqrt(dist.cdf(x) * dist.sf(x) * phi2(x)), lo, hi, limit=200)[0]
        return float(val ** 2), 0.0
    a = law_distribution(anchor)
    alo, ahi = a.support()
    lo2, hi2 = max(lo, alo), min(hi, ahi)

    def integrand(x: Any) -> Any:
        # in logs: in the tails F (1 - F) and p_U are both below the smallest double
        with np.errstate(all="ignore"):
            return phi2(x) * np.exp(dist.logcdf(x) + dist.logsf(x) - a.logpdf(x))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.integrate.IntegrationWarning)
        val = float(scipy.integrate.quad(integrand, lo2, hi2, limit=200)[0])
    # anchors with thinner tails than the population (normal anchors, a wider normal or a
    # logistic population): the integrand grows in the tails and the bound is infinite
    tails = [x for x in dist.ppf([1e-12, 1 - 1e-12]) if lo2 < x < hi2]
    if not np.isfinite(val) or any(integrand(x) > 1e-6 * max(val, 1.0) for x in tails):
        val = math.inf
    outside = float(dist.cdf(lo2) + dist.sf(hi2))
    return val, outside


# ---- functionals of an NPMLE ----------------------------------------------------------------------
def representative_points(intervals: np.ndarray, lower: float = -np.inf, upper: float = np.inf) -> np.ndarray:
    """Where the mass of each innermost interval is put for a functional.

    The NPMLE fixes only the mass of each interval, not where it lies inside.  Ends
    are first cut to ``[lower, upper]`` (the variable's support, or where anchors fall:
    beyond the anchors the data say nothing); the mass then sits at the midpoint, or
    at the finite end of an interval that is still half-infinite; points stay points.
    """
    lo = np.maximum(intervals[:, 0], lower)
    hi = np.minimum(intervals[:, 1], upper)
    mid = (lo + hi) / 2
    return np.where(np.isfinite(lo) & np.isfinite(hi), mid, np.where(np.isfinite(lo), lo, hi))


def npmle_functional(intervals: np.ndarray, mass: np.ndarray, phi: Callable[[np.ndarray], np.ndarray],
                     lower: float = -np.inf, upper: float = np.inf) -> tuple[float, tuple[float, float]]:
    """int phi dF of an NPMLE (Example 1), and its range over the NPMLE's non-uniqueness.

    The range puts each interval's mass where phi is smallest or largest on it
    (evaluated at its ends and at 0, enough for phi(y) = y^k).
    """
    intervals = np.asarray(intervals, dtype=float)
    mass = np.asarray(mass, dtype=float)
    x = representative_points(intervals, lower, upper)
    value = float(np.sum(mass * phi(x)))
    lo = np.maximum(intervals[:, 0], lower)
    hi = np.minimum(intervals[:, 1], upper)
    with np.errstate(invalid="ignore", over="ignore"):
        at_lo, at_hi = phi(lo), phi(hi)
        at_zero = np.where((lo < 0) & (0 < hi), phi(np.zeros_like(lo)), at_lo)
    cand = np.column_stack([at_lo, at_hi, at_zero])
    low = float(np.sum(mass * cand.min(axis=1)))
    high = float(np.sum(mass * cand.max(axis=1)))
    return value, (low, high)


def npmle_case1_se(intervals: np.ndarray, mass: np.ndarray, anchor: Law, n: int, order: int = 1,
                   lower: float = -np.inf, upper: float = np.inf, grid: int = 4001) -> float:
    """Plug-in standard error of a moment of the Case-I NPMLE from the information bound.

    sqrt(int phi'^2 F_hat (1 - F_hat) / p_U / n) over the anchors' support (the NPMLE
    of a smooth functional attains the bound for Case I; proof of Theorem 2).
    """
    a = law_distribution(anchor)
    alo, ahi = a.support()
    lo, hi = max(lower, alo), min(upper, ahi)
    x_rep = representative_points(np.asarray(intervals, dtype=float), lower, upper)
    if not np.isfinite(lo):
        lo = float(np.min(x_rep))
    if not np.isfinite(hi):
        hi = float(np.max(x_rep))
    x = np.linspace(lo, hi, grid)
    order_idx = np.argsort(x_rep)
    cum = np.concatenate([[0.0], np.cumsum(np.asarray(mass)[order_idx])])
    F = cum[np.searchsorted(x_rep[order_idx], x, side="right")]
    integrand = (order * x ** (order - 1)) ** 2 * F * (1 - F) / np.maximum(a.pdf(x), 1e-300)
    return float(np.sqrt(max(scipy.integrate.trapezoid(integrand, x), 0.0) / n))
