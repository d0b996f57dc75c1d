"""The hybrid scheme (section III-D of the castell paper): castell or RR-Independent,
chosen by their estimated mean squared errors (:func:`mse_comparison`) or by the paper's
error bounds (Theorems 5-6, Appendix C: :func:`bound_rule`)."""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)
import sympy

from privspec.backends.core.kron import kron_apply, kron_cov_frobenius2, kron_inverses
from privspec.backends.core.projections import project
from privspec.backends.rr.castell import castell
from privspec.backends.rr.fit import JointFit, expand_axes, frequencies, se_kind, tensor_margin
from privspec.backends.rr.independent import independent

#: the chance that ``hybrid(switch = variance)`` picks castell by its noise alone where
#: RR-Independent is just as good (:func:`mse_comparison`'s ``margin``)
MARGIN_LEVEL = 0.01
#: how ``hybrid`` chooses (``by hybrid(switch = thresholds)``), the default first
SWITCHES = ("variance", "thresholds")


# ---- the paper's bound rule (Theorems 5 and 6, Appendix C) -------------------------------------------
def keep_probabilities(K: Sequence[np.ndarray]) -> np.ndarray:
    """``p_k = min_u P_k[u][u]``: the smallest probability of keeping the truth."""
    return np.array([float(np.min(np.diag(np.asarray(Kk, float)))) for Kk in K])


@dataclass(frozen=True)
class BoundRule:
    """The paper's hybrid rule for one product of RR factors (:func:`bound_rule`)."""

    castell_bound: Any
    independent_bound: Any
    n_star: Any
    castell_preferred: bool | None


def bound_rule(dims: Sequence[int], keep: Sequence[Any], n: Any) -> BoundRule:
    """Is castell (RR-Ind-Joint) preferred to RR-Independent by the paper's error bounds?
    One rule for any product of RR factors, with domain sizes ``d_k`` and keep
    probabilities ``p_k`` (GRR: ``e^eps_k / (e^eps_k + d_k - 1)``; a general matrix: its
    smallest diagonal entry) of their own.

    The generalization of Theorems 5-6 and Appendix C, from their proofs:

    * castell (Theorem 6, Lemma 3's proof): each entry of ``P^-1 = (x) P_k^-1`` is taken
      to be at most ``1/(p_1 ... p_w)`` and each of the ``d_1 ... d_w`` report
      frequencies off by at most ``1/n``, so the error is below ``prod_k (d_k/p_k) / n``
      -- the proof's own first expression, before it replaces every ``d_k`` by ``d =
      max d_k`` and every ``p_k`` by ``p = min p_k``;
    * RR-Independent (Theorem 5's proof): with uniform marginals its estimate of every
      cell is ``1/D``, ``D = d_1 ... d_w``, while the cell lies in ``[0, min_k 1/d_k] =
      [0, 1/d*]``, ``d* = max d_k`` (Lemma 1), so the error is below ``max(1/D, 1/d* -
      1/D)`` -- the proof writes ``1/D <= d*^-w``, which runs the wrong way for unequal
      domains (``1/D >= d*^-w``);
    * castell is preferred where its bound is the smaller: ``n > n* = prod_k (d_k/p_k) /
      max(1/D, 1/d* - 1/D)`` (Appendix C).

    With one domain size d and one budget ``eps/w`` per attribute (``p_k = p =
    e^(eps/w)/(e^(eps/w) + d - 1)``) this is exactly Eqs. (26), (27) and Appendix C's
    ``n* = (1 + (d-1)/e^(eps/w))^w d^w / max(d^-w, 1/d - d^-w)``.  The paper's convention
    for unequal domains (``d = max d_k``, ``p = min p_k`` in both bounds) inflates both
    bounds and is not this rule.

    The bounds are of a rounding model (report frequencies off by at most 1/n; the
    sampling error is of order n^-1/2) and assume uniform marginals: they ignore how
    dependent the attributes are, which is what RR-Independent's error depends on.  See
    :func:`hybrid` for the data-driven rule.

    Parameters
    ----------
    dims : sequence of int
        The factors' domain sizes.
    keep : sequence
        The factors' keep probabilities: floats, or sympy expressions (then the bounds
        are exact and ``castell_preferred`` is None unless everything is a number).
    n : number or sympy expression
        The number of respondents.

    Returns
    -------
    BoundRule
        ``castell_bound``, ``independent_bound``, ``n_star`` and ``castell_preferred``
        (``n > n_star``).

    Examples
    --------
    Titanic (Class 4, Sex, Age, Survived 2 each), eps = 1 per attribute, n = 2201:

    >>> e = np.e
    >>> r = bound_rule([4, 2, 2, 2], [e / (e + 3), e / (e + 1), e / (e + 1), e / (e + 1)], 2201)
    >>> round(r.n_star), r.castell_preferred
    (788, True)

    One domain size: Appendix C's n* (d = 16, w = 2, eps = 1 per attribute):

    >>> p = e / (e + 15)
    >>> bool(np.isclose(bound_rule([16, 16], [p, p], 1).n_star, (16 / p) ** 2 / (1 / 16 - 16 ** -2)))
    True
    """
    dims = [int(d) for d in dims]
    if len(dims) != len(keep) or not dims:
        raise ValueError("one keep probability per factor")
    ratio, ind_bound = _bounds(dims, keep, exact=any(hasattr(x, "free_symbols") for x in [*keep, n]))
    n_star = ratio / ind_bound
    preferred: bool | None = None
    try:
        preferred = bool(float(n) > float(n_star))
    except TypeError:
        pass
    return BoundRule(ratio / n, ind_bound, n_star, preferred)


def _bounds(dims: list[int], keep: Sequence[Any], exact: bool) -> tuple[Any, Any]:
    """castell's bound times n, ``prod_k (d_k/p_k)``, and RR-Independent's, ``max(1/D, 1/d* -
    1/D)`` (:func:`bound_rule`): sympy numbers where ``exact``, else floats."""
    D, top = math.prod(dims), max(dims)
    ind = max(Fraction(1, D), Fraction(1, top) - Fraction(1, D))
    if exact:
        ratio = sympy.Mul(*[sympy.Integer(d) / p for d, p in zip(dims, keep)])
        return ratio, sympy.Rational(ind.numerator, ind.denominator)
    return math.prod(d / float(p) for d, p in zip(dims, keep)), float(ind)


# ---- the data-driven rule ----------------------------------------------------------------------------
def mse_comparison(counts: np.ndarray, K: Sequence[np.ndarray], c: JointFit | None = None,
                   ind: JointFit | None = None) -> dict[str, float]:
    """The estimated mean squared errors (summed over the cells, population scale) of
    castell and RR-Independent on one table of report counts: what ``hybrid(switch =
    variance)`` decides by.

    * ``castell_mse``: castell is unbiased, its MSE is the sum of its cell variances.
    * ``independent_bias2``: RR-Independent's squared bias ``sum (E Pi_ind - Pi)^2``,
      estimated by ``sum (Pi_ind - Pi_castell)^2 - sum Var(Pi_ind - Pi_castell)``
      (castell is unbiased, so the first sum has expectation bias^2 + the variance of
      the difference, to first order).  ``Var(ind - castell) = Var(ind) + Var(castell)
      - 2 Cov``; one respondent contributes ``u_ind = sum_k c_k A_k[x_k, y_k]`` and
      ``u_castell = prod_k A_k[x_k, y_k]``, so ``n Cov = sum_k c_k T_k - w Pi_ind
      Pi_castell`` with ``T_k`` the castell inversion of ``lambda`` with ``A_k o A_k`` in
      place of ``A_k``: w mode-wise passes, no matrix.
    * ``bias2_max``: the largest squared bias RR-Independent can have with these
      marginals (Lemma 1: ``Pi(x) <= min_k pi_k(x_k)``), ``sum Pi^2 + sum P^2 <= min_k
      max_a pi_k(a) + prod_k |pi_k|^2`` (``P = prod_k pi_k``); the estimate is clipped to
      ``[0, bias2_max]``.
    * ``independent_mse``: its variance plus the clipped squared bias.
    * ``margin``: how far the bias estimate may exceed the truth by chance.  The estimate
      carries castell's noise, ``sum (Pi_castell - Pi)^2``, a weighted sum of chi-squares
      with few effective degrees of freedom where a few directions of ``(x) K_k^-1``
      dominate; where castell is noisy it often exceeds castell's MSE by chance
      (Titanic, eps = 1 per attribute: 10% of the tables) and a wrong choice of castell
      costs without bound, while RR-Independent's error is bounded by ``bias2_max``.  So
      castell must win by the margin: the 99th percentile of that sum less its mean, by
      Satterthwaite's approximation ``a chi2_nu`` with ``a nu = tr S``, ``2 a^2 nu = 2 tr
      S^2`` (``S = Cov(Pi_castell)``; ``tr S^2`` from
      :func:`privspec.backends.core.kron.kron_cov_frobenius2`): ``margin = a (chi2_nu(0.99) -
      nu)``.

    Examples
    --------
    >>> P = np.array([[3, 1], [1, 3]]) / 4
    >>> m = mse_comparison(np.array([[300, 100], [300, 300]]), [P.T, P.T])
    >>> m["castell_mse"] + m["margin"] < m["independent_mse"]
    True
    """
    c = c if c is not None and c.var is not None else castell(counts, K)
    ind = ind if ind is not None and ind.var is not None else independent(counts, K)
    lam, n = frequencies(counts)
    inv = kron_inverses(K)
    w = lam.ndim
    pis = [kron_apply([inv[k]], tensor_margin(lam, [k])) for k in range(w)]
    full = [expand_axes(p, [k], w) for k, p in enumerate(pis)]
    cross = np.zeros(lam.shape)
    for k in range(w):
        ck = functools.reduce(np.multiply, [full[j] for j in range(w) if j != k], np.ones(lam.shape))
        Tk = kron_apply([inv[j] * inv[j] if j == k else inv[j] for j in range(w)], lam)
        cross = cross + ck * Tk
    cov = (cross - w * ind.table * c.table) / n
    var_diff = ind.var + c.var - 2 * cov
    bias2 = float(np.sum((ind.table - c.table) ** 2) - np.sum(var_diff))
    margins = [project(p, "clip") for p in pis]      # the marginals as distributions
    bias2_max = float(min(p.max() for p in margins) + math.prod(float(p @ p) for p in margins))
    var_i, mse_c = float(np.sum(ind.var)), float(np.sum(c.var))
    tr2 = max(kron_cov_frobenius2(inv, lam), 0.0) / n ** 2
    margin = 0.0
    if tr2 > 0 and mse_c > 0:
        a, nu = tr2 / mse_c, mse_c ** 2 / tr2
        margin = float(a * (scipy.stats.chi2.ppf(1 - MARGIN_LEVEL, nu) - nu))
    return {"castell_mse": mse_c, "independent_mse": var_i + min(max(bias2, 0.0), bias2_max),
            "independent_variance": var_i, "independent_bias2": bias2, "bias2_max": bias2_max, "margin": margin}


def hybrid(counts: np.ndarray, K: Sequence[np.ndarray], switch: str = "variance", *,
           se: str = "population") -> JointFit:
    """The hybrid scheme (section III-D): castell or RR-Independent, whichever is expected
    to be the more accurate.

    ``switch = variance`` (the default; data-driven, what section V-A suggests in place of
    the loose bounds): castell where its estimated mean squared error, the sum of its
    cell variances, plus a margin for castell's noise in the bias estimate, is below
    RR-Independent's, the sum of its cell variances plus its estimated squared bias
    (:func:`mse_comparison`).  Both are at the population scale whatever ``se`` asks, so
    the choice, and the estimate, do not depend on the kind of standard error.

    ``switch = thresholds`` (the paper's rule): castell where the bound of Theorem 6 is
    below that of Theorem 5, i.e. ``n > n*`` (Appendix C), generalized to factors with
    domain sizes and budgets of their own (:func:`bound_rule`; the ``thresholds(M, n =
    N)`` query uses the same function).  The bounds ignore the data: on the Titanic table
    (eps = 1 per attribute) this rule picks castell, with 2.6 times RR-Independent's
    error (docs/randomized-response.md).

    The standard error is the chosen estimator's, of the kind ``se``.

    Examples
    --------
    Two hundred reports of Appendix B's design whose table shows no dependence: the
    bounds say castell (n = 200 > n* = 28.4), but castell's estimated MSE is 2.9 times
    RR-Independent's (its squared bias is estimated at 0):

    >>> P = np.array([[3, 1], [1, 3]]) / 4
    >>> hybrid(np.array([[60, 40], [55, 45]]), [P.T, P.T], "thresholds").info["chosen"]
    'castell'
    >>> fit = hybrid(np.array([[60, 40], [55, 45]]), [P.T, P.T])
    >>> fit.info["chosen"], round(fit.info["castell_mse"] / fit.info["independent_mse"], 1)
    ('independent', 2.9)
    >>> hybrid(np.array([[300, 100], [300, 300]]), [P.T, P.T]).info["chosen"]     # strong dependence
    'castell'
    """
    se = se_kind(se)
    c = castell(counts, K)
    ind = independent(counts, K)
    n = c.n
    if switch == "thresholds":
        rule = bound_rule([np.asarray(k).shape[0] for k in K], keep_probabilities(K), n)
        choose = bool(rule.castell_preferred)
        info: dict = {"castell_bound": rule.castell_bound, "independent_bound": rule.independent_bound,
                      "n_star": rule.n_star,
                      "rule": "castell when the bound of Theorem 6, prod_k (d_k/p_k)/n, is below Theorem 5's, "
                              "max(1/D, 1/d* - 1/D): n > n* (Appendix C)"}
    elif switch == "variance":
        info = mse_comparison(counts, K, c, ind)
        choose = info["castell_mse"] + info["margin"] < info["independent_mse"]
        info["rule"] = ("castell when its estimated MSE (the sum of its cell variances) plus the margin (the "
                        "99th percentile of castell's noise in the bias estimate, less its mean) is below "
                        "RR-Independent's (the sum of its cell variances plus its squared bias, estimated from "
                        "castell, within [0, bias2_max])")
    else:
        raise ValueError(f"unknown switch {switch!r}: {' | '.join(SWITCHES)}")
    if se == "population":
        chosen = c if choose else ind
    else:
        chosen = castell(counts, K, se=se) if choose else independent(counts, K, se=se)
    info["chosen"] = "castell" if choose else "independent"
    info["switch"] = switch
    return dataclasses.replace(chosen, method="hybrid", info=info,
                               note=f"hybrid (section III-D): {info['chosen']} chosen by {switch}")
