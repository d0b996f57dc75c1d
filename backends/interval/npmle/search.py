"""The search for each bound of the profile likelihood band (:mod:`.bands`): Newton's
method on the signed root of the likelihood-ratio statistic over a profile's candidate
set, each bound found checked over every innermost interval (or certified without).
``prof`` is always a :class:`.bands._Profile` (typed ``Any`` here: this module is below
that one)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["profile_interval"]

#: a bound's search checks its fit over every innermost interval once the statistic is this
#: near the critical value (:func:`_bound`)
_NEAR = 0.05
#: a bound found over ``J`` needs no check of its own where the tangent at a fit checked
#: nearby puts the true statistic there within this of the critical value (:func:`_certified`)
_CERTIFY = 1e-4


def profile_interval(prof: Any, ll_max: float, crit: float, reach: list[tuple[float, float]] | None = None
                      ) -> tuple[float, float]:
    """The interval of theta = F(cut) with 2 (ll_max - ll(theta)) <= crit.

    The innermost intervals are refined at the cut (a zero-weight range ending there), so
    that F(cut) is well defined in the constraint; each bound costs about four
    constrained fits, each warm-started along the last one's tangent, found by Newton's
    method on the signed root of the likelihood-ratio statistic, or its quadratic model
    once two tries give the slope's change (:func:`_bound`, :func:`_root_step`; the
    profile's slope is the difference of the two groups' Lagrange multipliers).

    Each bound is searched over the space's ``J`` (:func:`_bound`), then its fit checked
    over every innermost interval; where ``J`` had to grow, searched again.  The search
    over ``J`` gives an upper bound of the statistic, exact where the check holds: a bound
    whose statistic is within 1e-6 of ``crit`` there is the root of the true statistic
    (which is convex in theta, so has one root on either side); the end itself, where the
    statistic over ``J`` is within ``crit``, is within the true band as well.

    ``reach``: the bounds found so far at other points of the same band, each as
    ``(side, distance / spread)`` (:attr:`_Profile.spread`); the bounds found here are
    added.  The first try of each bound lies that far out (the last on the same side):
    the band's width in that scale changes little from one quartile to the next, so the
    first fit lands near the root, where Newton's method is quadratic (from one binomial
    standard error out, the first fit lay next to the maximum, where the profile is
    flat, and Newton's next step far beyond the bound).
    """
    bounds = []
    for end in (0.0, 1.0):
        side = 1.0 if end > prof.theta_hat else -1.0
        prof.reset()
        first = _first_try(prof, side, end, reach)
        found, at_end, exact = _bound(prof, end, ll_max, crit, first)
        while not (at_end or _certified(prof, found, exact, ll_max, crit) or prof.exact_at(found)):
            # (from the bound found and its fit: the new candidates move it a little)
            found, at_end, exact = _bound(prof, end, ll_max, crit, found)
        if reach is not None and not at_end and found != prof.theta_hat:
            reach.append((side, abs(found - prof.theta_hat) / prof.spread))
        bounds.append(found)
    return bounds[0], bounds[1]


def _first_try(prof: Any, side: float, end: float, reach: list[tuple[float, float]] | None
               ) -> float | None:
    """Where the search for the bound on ``side`` starts: as far out as the bounds found on
    that side (their geometric mean; else the last on the other), in units of
    :attr:`_Profile.spread`; else ``2 n^(-1/3)`` of them, the cube-root rate of the NPMLE
    from interval data (at 1e6 and 1e7 Case-II reports the bounds lay 1.5-2 of those
    out); never past half the way to ``end``.  None where the maximum is at ``end`` (no
    search).  The mean steadies the guess where the bounds' distances alternate from one
    point to the next (1e7 Case-II reports: 31 fits -> 29, 66 Newton steps -> 60; the
    bounds within 5e-10 of those from the last bound alone, the root's own tolerance)."""
    if prof.theta_hat == end:
        return None
    same = [d for s, d in (reach or []) if s == side]
    scale = (math.exp(sum(map(math.log, same)) / len(same)) if same else reach[-1][1] if reach
             else 2.0 * prof.space.des.n ** (-1.0 / 3.0))
    return prof.theta_hat + side * min(scale * prof.spread, 0.5 * abs(end - prof.theta_hat))


def _certified(prof: Any, found: float, exact: tuple[float, float, float, np.ndarray] | None,
               ll_max: float, crit: float) -> bool:
    """Whether the bound ``found`` over ``J`` is, without a check of its own, within
    :data:`_CERTIFY` of the true one in the statistic.  ``exact``: ``(theta, g, g', J)`` of a
    fit checked over every innermost interval during the search (``g`` the statistic less
    ``crit``, ``g'`` its slope).

    The true ``g`` is convex in theta (the profile log-likelihood is concave), so it lies
    above its tangent at that checked fit; and it is at most ``g`` over ``J`` (a smaller
    set of intervals only lowers the constrained maximum), within 1e-6 of 0 at ``found``.
    Where the tangent at ``found`` is above ``-_CERTIFY``, so is the true ``g``: the bound
    is the true statistic's root to 1e-4 (its critical value is known to 3-4 digits, see
    :func:`_bound`; in theta, 1e-4 / g', under 1e-7 from n = 1,000 on).  1e6 Case-II
    reports: two of the six bounds' checks over every row saved, the bounds the same."""
    if exact is None or exact[3] is not prof.space.J:
        return False
    theta, g, slope, _ = exact
    return g + slope * (found - theta) >= -_CERTIFY


def _bound(prof: Any, end: float, ll_max: float, crit: float, first: float | None
           ) -> tuple[float, bool, tuple[float, float, float, np.ndarray] | None]:
    """The bound of theta on the side of ``end`` over the profile's ``J``, whether it is
    ``end`` itself with the statistic within ``crit`` there (no root on that side), and the
    try checked over every innermost interval on the way, where it held: ``(theta, g, g',
    J)`` (:func:`_certified`); ``first``: the first try (else one binomial standard error
    out)."""
    theta_hat = prof.theta_hat
    if theta_hat == end:
        return end, True, None
    root = math.sqrt(crit)
    step = math.sqrt(max(theta_hat * (1.0 - theta_hat), 1e-12) / prof.space.des.n)
    side = 1.0 if end > theta_hat else -1.0
    # g(theta) = 2 (ll_max - ll(theta)) - crit is convex in theta (ll is concave), -crit at
    # theta_hat and increasing toward the end: the bound is its one root there, or the end
    # itself.  Newton's method on the signed root r = sqrt(g + crit) (the likelihood-ratio
    # statistic's root, nearly linear in theta where the profile is nearly quadratic)
    # finds it in a few constrained fits, each warm-started from the last (Newton on g
    # itself, from the end inward, took ~13); a bracket [inside, outside] keeps every try
    # in range, and bisection takes over where Newton would leave it
    inside, outside, outside_seen = theta_hat, end, False
    theta = theta_hat + side * min(step, 0.5 * abs(end - theta_hat)) if first is None else first
    # from a first try inside, at most twice as far out at each try until one is outside
    # (:func:`_doubling`)
    doubling = first is not None and theta_hat * (1.0 - theta_hat) > 1e-12
    found, best = theta_hat, math.inf
    checked = False
    exact: tuple[float, float, float, np.ndarray] | None = None
    # the last try's theta, the slope of the signed root there and the J it was fitted over
    last: tuple[float, float, np.ndarray] | None = None
    for _ in range(100):
        ll, slope = prof.loglik(theta)
        g, slope = 2.0 * (ll_max - ll) - crit, -2.0 * slope
        if not checked and abs(g) < _NEAR and prof.space.reduced:
            # near the root: the fit checked over every innermost interval now (its fit is
            # at hand), so that J grows before Newton's last steps, not after them (which
            # then ran again from the bound found: 1e6 Case-II reports, 36 -> 27 fits).
            # A larger J only lowers the statistic: what was inside stays inside
            checked = True
            if not prof.exact_at(theta):
                outside, outside_seen, best = end, False, math.inf
                continue            # the same theta over the new J
            exact = (theta, g, slope, prof.space.J)
        if abs(g) < best:
            found, best = theta, abs(g)
        if g <= 0:
            inside = theta
            if theta == end:            # the whole way to the end is within the band
                return end, True, None
        else:
            outside, outside_seen = theta, True
        # the statistic to 1e-6: its critical value is known to a few digits (the
        # Banerjee-Wellner table's 3-4), a root that close moves the bound by 1e-6 / g'
        # (< 1e-7 in theta from n = 50 on), and at 1e7 reports the constrained fits'
        # log-likelihoods carry round-off of that order (Newton then chased it for five
        # more fits per bound)
        if abs(g) < 1e-6 or abs(outside - inside) < 1e-10:
            break
        nxt = math.nan
        lr = g + crit
        if math.isfinite(lr) and lr > 0 and math.isfinite(slope) and slope * side > 0:
            r = math.sqrt(lr)
            rp = slope / (2.0 * r)
            nxt = theta + _root_step(root - r, rp, last if last is not None and last[2] is prof.space.J else None,
                                     theta)
            last = (theta, rp, prof.space.J)
        if doubling and not outside_seen:
            nxt = _doubling(nxt, inside, theta_hat)
        if not (min(inside, outside) < nxt < max(inside, outside)):
            if outside_seen:
                nxt = 0.5 * (inside + outside)
            else:                       # no root seen yet: farther out, or the end itself
                nxt = theta_hat + 4.0 * (inside - theta_hat) if inside != theta_hat else math.nan
                if not (min(inside, end) < nxt < max(inside, end)):
                    nxt = end
        if abs(nxt - theta) < 1e-11:        # within the fits' round-off: as near as it gets
            break
        theta = nxt
    return float(found), False, exact


def _doubling(nxt: float, inside: float, theta_hat: float) -> float:
    """The next try ``nxt``, at most twice as far from ``theta_hat`` as the last one inside.

    From a first try (a guess of the bound's distance, :func:`_first_try`) that falls
    inside: near the maximum the statistic is small and its signed root's slope says little
    of how far the root is (1e7 Case-II reports: from 0.3% of theta out, the statistic 0.04,
    Newton's step went to 7.5 times as far where the root lay at twice; the fit there took 8
    Newton steps and two more fits to come back: the band's fits 60 Newton steps -> 47, the
    bounds within 6e-12).  Not where theta_hat is 0 or 1 (:func:`_bound`): there the guess
    is no measure of the distance (its spread is 0), and Newton's steps are what reach out.
    """
    if abs(nxt - theta_hat) > 2.0 * abs(inside - theta_hat):
        return theta_hat + 2.0 * (inside - theta_hat)
    return nxt


def _root_step(gap: float, rp: float, last: tuple[float, float, np.ndarray] | None, theta: float) -> float:
    """The step in theta that takes the signed root ``r`` of the statistic up by ``gap`` (to
    the square root of the critical value), ``rp`` its slope here: Newton's, or where the
    last try over the same J gives the slope's change (``last``), the root of the quadratic
    model ``rp d + r'' d^2 / 2 = gap`` with ``r''`` the slopes' difference quotient.  The
    profile's curvature, free from the two fits, takes the last try from ~1e-2 to below
    1e-6 where Newton's method needed two (1e6 Case-II reports: 26 fits -> 24)."""
    newton = gap / rp
    if last is None or last[0] == theta:
        return newton
    r2 = (rp - last[1]) / (theta - last[0])
    disc = rp * rp + 2.0 * r2 * gap
    if not (math.isfinite(r2) and disc > 0):
        return newton
    step = 2.0 * gap / (rp + math.copysign(math.sqrt(disc), rp))
    # (a model far from Newton's is one the two tries do not support: Newton's then)
    return step if abs(step - newton) <= 0.5 * abs(newton) else newton
