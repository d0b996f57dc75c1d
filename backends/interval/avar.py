"""Asymptotic variances of estimators from interval data (``avar(...)`` queries).

``avar`` is the variance of sqrt(n)(estimate - truth) in the limit:

* ``mean by unbiased`` — Var(D) of one term of Example 2's eq. (3), exact when the
  population lies within the anchors' [a, b] (:func:`.example2_variance`);
* ``mean``/``moment by npmle`` for Case I — the information bound
  int phi'^2 F (1 - F) / p_U, which the NPMLE attains (proof of Theorem 2; Groeneboom
  and Wellner 1992).  Other schemes have no closed form here (Case II: Geskus and
  Groeneboom 1999, an integral equation);
* ``... by mle(normal | logistic)`` — the inverse expected Fisher information of the
  location-scale model under the mechanism, when the population is of that family:
  I = E_T sum_i grad P_i grad P_i^T / P_i over the ranges of the anchors' partition
  (quasi-Monte Carlo over the anchors), plus the disclosed values' score outer
  product over the acceptable range; moments by the delta method;
* ``cdf`` — none: F_hat(x) converges at the cube-root rate for interval data.

Examples
--------
>>> import privspec
>>> spec = privspec.load('''
... variable s: continuous [0, 150]
... population s ~ uniform(0, 150)
... mechanism c1 = interval(s, case1(uniform(0, 150)))
... query v = avar(mean(s) from c1 by unbiased)
... ''')
>>> avar(spec.model, spec.model.queries["v"]).value
5625
"""
from __future__ import annotations

import numpy as np
import sympy
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import IntervalMechanism, ModelGraph, Query
from privspec.backends.interval.reports import report_model
from privspec.results.kinds import Avar
from privspec.results.result import Result
from privspec.backends.interval.estimators import ParametricFit, example2_variance, information_bound, score_ratio
from privspec.backends.interval.laws import law_distribution, nearest_double, population_law

QMC_POINTS = 2 ** 14
_FAMILIES = {"normal": "norm", "logistic": "logistic"}   # scipy.stats names, looked up on use: start-up


def avar(model: ModelGraph, q: Query) -> Result:
    """The ``avar`` query's Result for an interval mechanism."""
    mech, est, method = q.mechanism, q.estimand, q.method.name
    if est.kind == "cdf":
        raise BackendError(Diagnostic(
            "B131", "F_hat(x) from interval data converges at the rate n^(-1/3) (Groeneboom and Wellner 1992): "
                    "it has no sqrt(n) asymptotic variance",
            hint="ask for the pointwise band: estimate cdf(...) by npmle on data reports it"))
    if est.kind == "regression":
        raise BackendError(Diagnostic("B131", "no asymptotic variance is derived for Algorithm 1"))
    pop = population_law(model, est.variables[0])
    if pop is None:
        raise BackendError(Diagnostic("B134", f"avar needs the population of {est.variables[0].name}",
                                      hint=f"declare it: population {est.variables[0].name} ~ normal(0, 1)"))
    order = est.order or 1
    meaning = "n Var(estimate) in the limit: the variance of sqrt(n)(estimate - truth)"
    if method == "unbiased":
        a, b = mech.anchor.support()
        value, how, bias = example2_variance(pop, a, b)
        extras = {"method": "unbiased (Example 2)", "evaluation": how, "meaning": meaning}
        if abs(bias) > 1e-12:
            extras["bias"] = bias
            extras["note"] = "the population reaches beyond the anchors [a, b]: the estimator has this bias"
        return Avar(value if isinstance(value, sympy.Basic) else float(value), **extras)
    if method == "npmle":
        rm = report_model(mech)
        if not (rm.one_sided and not rm.allows_null):  # plain Case I: every report (-inf, U] or (U, inf]
            raise BackendError(Diagnostic(
                "B130", "the asymptotic variance of NPMLE functionals is given here for Case-I mechanisms "
                        "(the information bound of Theorem 2's proof)",
                hint="for Case II it solves an integral equation (Geskus and Groeneboom 1999); simulate instead"))
        value, outside = information_bound(pop, mech.anchor, order)
        extras = {"method": "npmle", "evaluation": "quadrature", "meaning": meaning,
                  "formula": "int phi'(y)^2 F(y) (1 - F(y)) / p_U(y) dy, phi(y) = y^k (the NPMLE attains it)"}
        if not np.isfinite(value):
            extras["note"] = ("infinite: F(1 - F)/p_U is not integrable (the anchors' tails are thinner than "
                              "the population's), so the NPMLE of this functional is not root-n consistent")
        elif outside > 0:
            extras["unidentified_mass"] = outside
            extras["note"] = ("the anchors do not reach every value: strictly the bound is infinite; "
                              "the value is the integral over the anchors' support")
        return Avar(value, **extras)
    family = [a for a in q.method.args if not isinstance(a, tuple)][0]
    if pop.family != family:
        raise BackendError(Diagnostic(
            "B132", f"mle({family}) under a {pop.family} population is misspecified: no avar is computed",
            hint=f"declare a {family} population, or use simulate to see the misspecified fit"))
    rm = report_model(mech)
    if rm.allows_null or rm.base is None:  # reports selected (selective) or cut in rounds (progressive)
        raise BackendError(Diagnostic("B133", "the Fisher information is computed for interval mechanisms "
                                              "(not selective or progressive ones)"))
    dist = law_distribution(pop)   # a loc-scale scipy law: (mean, sd) or (location, scale)
    mu, sigma = float(dist.kwds["loc"]), float(dist.kwds["scale"])
    info = fisher_information(mech, family, mu, sigma)
    V = np.linalg.inv(info)
    fit = ParametricFit(family, mu, sigma, V, 0.0, 0, True, 1)
    value = float(fit.moment(order)[1] ** 2)
    return Avar(value, method=f"mle({family})", evaluation="quasi-monte-carlo", meaning=meaning,
                fisher_information=info.tolist(), parameters=["location", "scale"],
                note=f"{QMC_POINTS} scrambled Sobol anchor draws")


def _piece_terms(dist, l: np.ndarray, r: np.ndarray, mu: float, sigma: float):
    """P((l, r]) and its gradient in (mu, sigma) for a location-scale law."""
    zl, zr = (l - mu) / sigma, (r - mu) / sigma
    fl = np.where(np.isfinite(zl), dist.pdf(np.where(np.isfinite(zl), zl, 0.0)), 0.0)
    fr = np.where(np.isfinite(zr), dist.pdf(np.where(np.isfinite(zr), zr, 0.0)), 0.0)
    P = np.where(r > l, dist.cdf(zr) - dist.cdf(zl), 0.0)
    zlf, zrf = np.where(np.isfinite(zl), zl, 0.0), np.where(np.isfinite(zr), zr, 0.0)
    d_mu = np.where(r > l, -(fr - fl) / sigma, 0.0)
    d_sigma = np.where(r > l, -(zrf * fr - zlf * fl) / sigma, 0.0)
    return P, d_mu, d_sigma


def fisher_information(mech: IntervalMechanism, family: str, mu: float, sigma: float,
                       points: int = QMC_POINTS, seed: int = 0) -> np.ndarray:
    """Expected information per respondent of (location, scale) under the mechanism."""
    dist = getattr(scipy.stats, _FAMILIES[family])
    count = mech.m if mech.scheme == "ring" else mech.m - 1
    u = np.clip(scipy.stats.qmc.Sobol(d=count, scramble=True, seed=seed).random(points), 1e-15, 1 - 1e-15)
    T = np.sort(law_distribution(mech.anchor).ppf(u), axis=1)
    N = len(T)
    ends = np.column_stack([np.full(N, -np.inf), T, np.full(N, np.inf)])
    lefts, rights = ends[:, :-1], ends[:, 1:]
    # each range as up to two pieces; a ring joins the first and last canonical cells
    if mech.scheme == "ring":
        p1l = np.column_stack([lefts[:, :1], lefts[:, 1:-1]])
        p1r = np.column_stack([rights[:, :1], rights[:, 1:-1]])
        p2l = np.column_stack([lefts[:, -1:], np.zeros((N, count - 1))])
        p2r = np.column_stack([rights[:, -1:], np.zeros((N, count - 1))])
    else:
        p1l, p1r = lefts, rights
        p2l, p2r = np.zeros_like(lefts), np.zeros_like(lefts)
    pieces = [(p1l, p1r), (p2l, p2r)]
    if mech.disclose is not None:
        a, b = nearest_double(mech.disclose[0]), nearest_double(mech.disclose[1])
        cut = []
        for pl, pr in pieces:
            cut += [(pl, np.minimum(pr, a)), (np.maximum(pl, b), pr)]
        pieces = cut
    P = np.zeros_like(lefts)
    dm = np.zeros_like(lefts)
    ds = np.zeros_like(lefts)
    for pl, pr in pieces:
        p, gm, gs = _piece_terms(dist, pl, pr, mu, sigma)
        P, dm, ds = P + p, dm + gm, ds + gs
    ok = P > 1e-300
    Pw = np.where(ok, P, 1.0)
    info = np.array([[np.sum(np.where(ok, dm * dm / Pw, 0.0)), np.sum(np.where(ok, dm * ds / Pw, 0.0))],
                     [np.sum(np.where(ok, dm * ds / Pw, 0.0)), np.sum(np.where(ok, ds * ds / Pw, 0.0))]]) / N
    if mech.disclose is not None:
        # disclosed values: E[score score^T; Y in A], score of log f((y - mu)/sigma)/sigma
        x, w = np.polynomial.legendre.leggauss(200)
        a, b = nearest_double(mech.disclose[0]), nearest_double(mech.disclose[1])
        y = a + (b - a) * (x + 1) / 2
        z = (y - mu) / sigma
        s = score_ratio(family, z)
        g = np.vstack([-s / sigma, -(1 + z * s) / sigma])
        dens = dist.pdf(z) / sigma
        info = info + (g * (w * dens * (b - a) / 2)) @ g.T
    return info
