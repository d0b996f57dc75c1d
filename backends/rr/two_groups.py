"""RRreg's two-group designs (:class:`~privspec.model.randomized_response.TwoGroupResponse`):
a yes/no question asked in two groups randomized with different probabilities, so that
the two groups' yes rates determine two unknowns.

Each design's yes rate is affine in two parameters ``theta``, ``lambda_g = a_g + A_g
theta``, on a polygon (:class:`Design`):

* ``uqm`` (Greenberg et al. 1969): ``theta = (pi, pi_u)`` on the unit square,
  ``lambda_g = p_g pi + (1 - p_g) pi_u``;
* ``cdm`` (Clark and Desharnais 1998): ``theta = (pi, beta)`` on the triangle
  ``pi, beta >= 0, pi + beta <= 1``, ``lambda_g = pi + p_g beta``; the cheaters
  ``gamma = 1 - pi - beta``;
* ``sld`` (Moshagen et al. 2010): ``theta = (pi, h)`` with ``h = pi t`` the honest
  carriers, on ``0 <= h <= pi <= 1``, ``lambda_g = h + (1 - pi)(1 - p_g)``; the honesty
  ``t = h / pi``.

The maximum-likelihood estimate of the binomial counts per group: two equations in two
unknowns, so RRreg's closed form ``theta = A^-1 (lambda_hat - a)`` where it lies in the
polygon, else the maximum over its edges (the log likelihood is concave along each);
standard errors from the expected information at the estimate, ``A^-1 diag(lambda_g (1 -
lambda_g) / n_g) A^-T`` (RRreg's formulas, with ``n_g`` where RRreg writes ``n_g - 1``),
by the delta method for ``gamma`` and ``t``; Wald intervals cut to [0, 1].
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd
import sympy

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import ModelGraph, Query
from privspec.results.kinds import Epsilon, Estimate
from privspec.results.result import Result
from privspec.results.values import Inference, Vector
from privspec.backends.core.normal import z_quantile
from privspec.backends.core.populations import bind_parameters
from privspec.backends.core.rowrandom import RowRandom, stream_of
from privspec.backends.data.checks import show_value
from privspec.backends.data.tally import Tally

#: the design's parameter that each latent estimand is (``cheaters(Y)``: cdm's gamma)
LATENT_PARAMETER = {"cheaters": "gamma", "honesty": "t"}

#: an estimand of a design: its name, what it is, and its value and gradient at theta
Parameter = tuple[str, str, Callable[[np.ndarray], tuple[float, np.ndarray]]]


def _linear(i: int) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """theta_i and its gradient."""
    return lambda t: (float(t[i]), np.eye(2)[i])


def _honesty(t: np.ndarray) -> tuple[float, np.ndarray]:
    pi, h = float(t[0]), float(t[1])
    if pi <= 0:
        return math.nan, np.full(2, math.nan)
    return h / pi, np.array([-h / pi ** 2, 1 / pi])


@dataclass(frozen=True)
class Design:
    """``lambda = a + A theta`` on the polygon ``vertices``, and the parameters reported."""

    a: np.ndarray
    A: np.ndarray
    vertices: tuple[tuple[float, float], ...]
    parameters: tuple[Parameter, ...]

    def rates(self, theta: np.ndarray) -> np.ndarray:
        return self.a + self.A @ theta

    def inside(self, theta: np.ndarray, tol: float = 1e-12) -> bool:
        """Within the polygon (convex, vertices counter-clockwise)."""
        v = np.array(self.vertices)
        edges = np.roll(v, -1, axis=0) - v
        cross = edges[:, 0] * (theta[1] - v[:, 1]) - edges[:, 1] * (theta[0] - v[:, 0])
        return bool(np.all(cross >= -tol))


def design_of(kind: str, p1: float, p2: float) -> Design:
    """The affine yes rates of design ``kind`` at the groups' probabilities.

    Examples
    --------
    >>> d = design_of("cdm", 0.3, 0.7)
    >>> d.rates(np.array([0.2, 0.5])).round(3).tolist()
    [0.35, 0.55]
    """
    p = np.array([p1, p2])
    if kind == "uqm":
        return Design(np.zeros(2), np.column_stack([p, 1 - p]), ((0, 0), (1, 0), (1, 1), (0, 1)),
                      (("pi", "the share of the sensitive yes", _linear(0)),
                       ("pi_unrelated", "the share of yes to the unrelated question", _linear(1))))
    if kind == "cdm":
        return Design(np.zeros(2), np.column_stack([np.ones(2), p]), ((0, 0), (1, 0), (0, 1)),
                      (("pi", "honest carriers: they say yes", _linear(0)),
                       ("beta", "honest non-carriers: yes only when forced", _linear(1)),
                       ("gamma", "cheaters: no whatever they draw (1 - pi - beta)",
                        lambda t: (1 - float(t[0]) - float(t[1]), np.array([-1.0, -1.0])))))
    return Design(1 - p, np.column_stack([-(1 - p), np.ones(2)]), ((0, 0), (1, 0), (1, 1)),
                  (("pi", "carriers of the trait", _linear(0)),
                   ("t", "the carriers' honesty: the share of them who say yes", _honesty)))


# ---- the fit ------------------------------------------------------------------------------------------
def loglik(design: Design, theta: np.ndarray, yes: np.ndarray, n: np.ndarray) -> float:
    lam = np.clip(design.rates(theta), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(yes > 0, yes * np.log(lam), 0.0) + np.where(n - yes > 0, (n - yes) * np.log1p(-lam), 0.0)
    return float(np.sum(terms))


def _on_segment(f: Callable[[float], float], tol: float = 1e-12) -> float:
    """The maximizer on [0, 1] of a concave function, by golden-section search."""
    g = (math.sqrt(5) - 1) / 2
    lo, hi = 0.0, 1.0
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    while hi - lo > tol:
        if f1 < f2:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = f(x2)
        else:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = f(x1)
    return max((0.0, 1.0, (lo + hi) / 2), key=f)


def fit(design: Design, yes: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, bool]:
    """The MLE of theta and whether it lies on the polygon's boundary (the closed form fell
    outside: the yes rates contradict the design, or sampling noise put them there)."""
    theta = np.linalg.solve(design.A, yes / n - design.a)
    if design.inside(theta):
        return theta, False
    v = np.array(design.vertices, dtype=float)
    best, best_ll = v[0], -math.inf
    for start, end in zip(v, np.roll(v, -1, axis=0)):
        s = _on_segment(lambda u: loglik(design, start + u * (end - start), yes, n))
        ll = loglik(design, start + s * (end - start), yes, n)
        if ll > best_ll:
            best, best_ll = start + s * (end - start), ll
    return best, True


def covariance(design: Design, theta: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``A^-1 diag(lambda (1 - lambda) / n) A^-T`` at theta."""
    lam = np.clip(design.rates(theta), 0.0, 1.0)
    Ainv = np.linalg.inv(design.A)
    return Ainv @ np.diag(lam * (1 - lam) / n) @ Ainv.T


# ---- data ----------------------------------------------------------------------------------------------
def category_codes(tally: Tally, column: str, labels: tuple[str, ...], what: str) -> np.ndarray:
    """Each distinct tuple's index of its value of ``column`` among ``labels`` (D010 naming
    the rows of a value that is none of them; ``what``: the values, in words)."""
    values = [str(v).strip() for v in tally.column(column)]
    codes = np.array([labels.index(v) if v in labels else -1 for v in values])
    bad = codes < 0
    if bad.any():
        shown = ", ".join(sorted({show_value(v) for v, b in zip(values, bad) if b}))
        rows = tally.locate(bad)
        raise DataError(Diagnostic("D010", f"{len(rows)} {what} of {column} are not among its categories: {shown}",
                                   rows=rows, columns=(column,), hint=f"categories: {', '.join(labels)}"))
    return codes


def observations(mech: Any, tally: Tally) -> np.ndarray:
    """Each distinct tuple's observation ``2 g + r``: its group ``g`` (0, 1) and its report
    ``r`` (0: yes, the first category; 1: no), so 0 and 1 are the first group's yes and no."""
    y, g = mech.variable, mech.group
    tally.check_no_missing([y.name, g.name])
    return 2 * category_codes(tally, g.name, g.labels, "groups") + category_codes(tally, y.name, y.labels, "reports")


def group_counts(mech: Any, counts: np.ndarray, source: str, what: str = "respondent") -> tuple[np.ndarray, np.ndarray]:
    """The yes reports and the respondents (or sums of weights) of each group from the
    counts of the four observations (:func:`observations`); D020 for a group without any."""
    yes, n = counts[0::2], counts[0::2] + counts[1::2]
    if (n <= 0).any():
        empty = mech.group.labels[int(np.argmin(n))]
        raise DataError(Diagnostic("D020", f"no {what} of group {empty} in {source}: {mech.kind}() needs "
                                           "both groups' answers", columns=(mech.group.name,)))
    return yes, n


def counts_by_group(mech: Any, tally: Tally) -> tuple[np.ndarray, np.ndarray]:
    """The yes reports (the first category) and the respondents of each group."""
    counts = np.bincount(observations(mech, tally), weights=tally.counts, minlength=4)
    return group_counts(mech, counts, tally.source)


def probabilities(model: ModelGraph, mech: Any) -> tuple[float, float]:
    p = [bind_parameters(model, v) for v in (mech.p1, mech.p2)]
    if any(getattr(v, "free_symbols", None) for v in p):
        raise BackendError(Diagnostic("B001", f"{mech.kind}() of {mech.name} has a symbolic probability",
                                      hint="give the parameter a value"))
    return float(p[0]), float(p[1])


def estimate(model: ModelGraph, q: Query, tally: Tally) -> Result:
    """``estimate distribution(Y) from M by mle``: the trait's share, with the design's
    other parameters (``parameters``: each with its se and 95% interval)."""
    mech = q.mechanism
    p1, p2 = probabilities(model, mech)
    design = design_of(mech.kind, p1, p2)
    yes, n = counts_by_group(mech, tally)
    theta, boundary = fit(design, yes, n)
    params = parameter_table(design, theta, covariance(design, theta, n))
    notes = ["the closed form fell outside the parameter space: the maximum on its boundary, where the "
             "standard errors understate the uncertainty"] if boundary else []
    extras = {"method": "mle", "n": int(n.sum()), "ci_method": "Wald: estimate +- z se, cut to [0, 1]",
              "se_method": "expected information at the estimate (RRreg's two-group formulas)",
              "loglik": loglik(design, theta, yes, n), "parameters": params,
              "note": "; ".join([f"groups: {mech.group.labels[0]} (p1 = {p1:g}), {mech.group.labels[1]} "
                                 f"(p2 = {p2:g})", *notes])}
    if q.estimand.kind in LATENT_PARAMETER:
        share = params[LATENT_PARAMETER[q.estimand.kind]]
        return Estimate(share["estimate"], se=share["se"], ci95=share["ci95"], **extras)
    pi, se = params["pi"]["estimate"], params["pi"]["se"]
    labels = mech.variable.labels
    return Estimate(Vector(labels, (pi, 1 - pi)), se=Vector(labels, (se, se)),
                    ci95=dict(zip(labels, (wald(pi, se, z_quantile(0.95)), wald(1 - pi, se, z_quantile(0.95))))),
                    **extras, inference=share_inference(pi, se))


def parameter_table(design: Design, theta: np.ndarray, V: np.ndarray) -> dict[str, dict[str, Any]]:
    """Each parameter of the design at ``theta``: its value, its standard error by the delta
    method from ``V`` (the covariance of theta), its 95% Wald interval, what it is."""
    params = {}
    for name, meaning, f in design.parameters:
        value, grad = f(theta)
        se = float(math.sqrt(max(grad @ V @ grad, 0.0))) if np.all(np.isfinite(grad)) else math.nan
        params[name] = {"estimate": value, "se": se, "ci95": wald(value, se, z_quantile(0.95)),
                        "meaning": meaning}
    return params


def wald(value: float, se: float, z: float) -> list[float]:
    """``value +- z se`` cut to [0, 1]."""
    return [max(0.0, value - z * se), min(1.0, value + z * se)]


def share_inference(pi: float, se: float) -> Inference:
    """Wald intervals at any level and the covariance of the shares ``(pi, 1 - pi)``."""
    def interval(level: float) -> tuple[np.ndarray, np.ndarray]:
        z = z_quantile(level)
        lo, hi = wald(pi, se, z), wald(1 - pi, se, z)
        return np.array([lo[0], hi[0]]), np.array([lo[1], hi[1]])

    return Inference("Wald: estimate +- z se, cut to [0, 1]", interval,
                     lambda: np.array([[se ** 2, -se ** 2], [-se ** 2, se ** 2]]))


# ---- privacy and privatize -----------------------------------------------------------------------------
def epsilon_result(mech: Any) -> Result:
    """No finite epsilon: in cdm and sld a no is impossible for an honest carrier; in uqm a
    report is impossible for one category where the unrelated share is 0 or 1, and that
    share is unknown."""
    why = {"cdm": "an honest carrier never says no (a no shows a non-carrier or a cheater)",
           "sld": "an honest carrier never says no (a no shows a non-carrier or a liar)",
           "uqm": "the unrelated question's share is unknown: at 0 (or 1) a yes (no) is impossible "
                  "for the second (first) category in the group that is not always asked the sensitive question"}
    return Epsilon(sympy.oo, reason=f"{why[mech.kind]}, so no finite epsilon bounds the ratio")


def privatize(model: ModelGraph, mech: Any, frame: pd.DataFrame, seed: int | None, offset: int) -> pd.DataFrame:
    """Each row's report as an honest respondent gives it (cheaters and liars are the
    respondents' own behaviour, not the mechanism's): ``uqm`` answers the sensitive
    question with ``p_g``, else the unrelated one (its raw column); ``cdm`` says yes with
    ``p_g``, else the truth; ``sld`` the truth with ``p_g``, else yes.  The group column is
    copied beside the reports."""
    y, g = mech.variable, mech.group
    need = [y.name, g.name] + ([mech.unrelated.name] if mech.unrelated is not None else [])
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise DataError(Diagnostic("D003", f"no column '{missing[0]}' to privatize with {mech.name}",
                                   columns=tuple(missing), hint=f"{mech.kind}() reads {', '.join(need)}"))
    codes = {c: np.array([str(v).strip() for v in frame[c]], dtype=object) for c in need}
    truth = codes[y.name] == y.labels[0]
    group = codes[g.name] == g.labels[1]
    p = np.where(group, *probabilities(model, mech)[::-1])
    u = RowRandom(seed, rows=range(offset, offset + len(frame)), stream=stream_of(mech)).random(len(frame))
    if mech.kind == "uqm":
        other = codes[mech.unrelated.name] == mech.unrelated.labels[0]
        yes = np.where(u < p, truth, other)
    elif mech.kind == "cdm":
        yes = (u < p) | truth
    else:
        yes = np.where(u < p, truth, True)
    return pd.DataFrame({y.name: np.where(yes, y.labels[0], y.labels[1]), g.name: codes[g.name]},
                        index=frame.index)
