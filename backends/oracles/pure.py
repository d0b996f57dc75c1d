"""Local-DP frequency oracles ("pure protocols") over one categorical variable.

Wang, Blocki, Li and Jha, "Locally Differentially Private Protocols for Frequency
Estimation" (USENIX Security 2017; "Wang et al." below) call a frequency oracle *pure*
when every report ``y`` has a *support set* ``S(y)`` of categories and two numbers
``p* > q*`` with

    Pr(v in S(Y) | X = v) = p*,        Pr(v in S(Y) | X = u) = q*   (u != v).

The support counts ``C_v = #{reports whose support contains v}`` then give the unbiased
estimate ``f_hat = (C/n - q*) / (p* - q*)`` (their Eq. (1)), whatever the oracle.  This
module holds the oracles of that family, categories coded ``0 .. d-1``:

=======  =====================================  ======================================
kind     report                                 support set
=======  =====================================  ======================================
grr      a category (k-ary randomized response)  ``{y}``
sue      d bits (basic one-time RAPPOR)          the bits that are 1
oue      d bits (optimized unary encoding)       the bits that are 1
blh      (hash seed s, v in [2])                 ``{u : H_s(u) = v}``
olh      (hash seed s, v in [g]), g = e^eps + 1  ``{u : H_s(u) = v}``
ss       a k-subset (subset selection)           the subset
hr       j in [K] (Hadamard response)            ``{u : H[u+1, j] = +1}``
adp      grr or oue, whichever has the smaller variance (multi-freq-ldpy's ADP)
=======  =====================================  ======================================

and, for each: the closed forms of ``p*, q*`` (:func:`support_probs`), the probabilities
that two categories are both in a support (:func:`pair_probs`), the full covariance of
``f_hat`` (:func:`covariance`), the local-DP epsilon read back from the mechanism
(:func:`epsilon_of`), a vectorized sampler driven by per-row randomness
(:func:`privatize`), the support counts of collected reports (:func:`support_counts`),
a text form of reports (:func:`format_reports`, :func:`parse_reports`) and two
estimators, the unbiased one (:func:`unbiased`) and the iterative Bayesian update
(:func:`ibu`, the EM maximum-likelihood estimate).

Examples
--------
>>> import numpy as np
>>> from privspec.backends.core.rowrandom import RowRandom
>>> o = oracle("oue", d=5, epsilon=1.0)
>>> x = np.repeat(np.arange(5), [400, 300, 200, 50, 50])
>>> reports = privatize(o, x, RowRandom(1, rows=range(len(x))))
>>> est = unbiased(o, support_counts(o, reports), n=len(x), project="clip")
>>> bool(abs(est[0] - 0.4) < 0.1), round(float(est.sum()), 12)
(True, 1.0)
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np
import pandas as pd
import sympy

from privspec.backends.core.rowrandom import RowRandom
from privspec.backends.core.projections import project as _project
from privspec.backends.data.tally import all_text

__all__ = ["KINDS", "Oracle", "oracle", "support_probs", "PairProbs", "pair_probs", "covariance",
           "pure_covariance", "exact_covariance", "support_gap", "FloatRangeError",
           "variance_formula", "epsilon_of", "privatize", "support_counts", "support_sets",
           "format_reports", "parse_reports", "hex_chars", "unhex", "unbiased", "ibu", "ibu_support_counts",
           "standard_errors", "hash_values", "symbols_of", "LH_PRIME", "EPSILON", "D", "G", "K", "F"]

#: the kinds :func:`oracle` accepts (``adp`` resolves to ``grr`` or ``oue``)
KINDS = ("grr", "sue", "oue", "blh", "olh", "ss", "hr", "adp")
_UE = ("sue", "oue")
_LH = ("blh", "olh")

#: the symbols of the closed forms
EPSILON = sympy.Symbol("epsilon", positive=True)
D = sympy.Symbol("d", integer=True, positive=True)
G = sympy.Symbol("g", integer=True, positive=True)
K = sympy.Symbol("k", integer=True, positive=True)
F = sympy.Symbol("f", nonnegative=True)

#: the prime field of the local-hashing family (a Mersenne prime, 2^19 - 1): see :func:`hash_values`
LH_PRIME = (1 << 19) - 1
#: elements (rows x categories) handled at once by the chunked loops: 256 Ki (2 MB of words: small
#: blocks stay in cache and are reused by the allocator; 32 MB blocks ran 1.5-3 times slower)
_CHUNK = 1 << 18
#: the same for local hashing's evaluation (its float passes run in L2 cache: 256 KB blocks)
_LH_CHUNK = 1 << 15


# ---- the oracle ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Oracle:
    """A frequency oracle: its kind, domain size ``d``, local-DP ``epsilon`` and, for
    local hashing, the hash range ``g``, for subset selection the subset size ``k``.
    Build it with :func:`oracle` (which validates and fills the defaults).

    ``via`` is ``"adp"`` when the oracle was chosen by multi-freq-ldpy's adaptive rule.

    Examples
    --------
    >>> oracle("olh", 10, 1.0)
    Oracle(kind='olh', d=10, epsilon=1.0, g=4, k=None, via=None)
    """

    kind: str
    d: int
    epsilon: float
    g: int | None = None
    k: int | None = None
    via: str | None = None

    @property
    def K(self) -> int:
        """Hadamard response's output size: the smallest power of two > d."""
        return 1 << int(self.d).bit_length()

    @property
    def packed_width(self) -> int:
        """Bytes of a packed bit report (UE, SS): ``ceil(d / 8)``."""
        return -(-self.d // 8)


def _adp_choice(d: int, epsilon: float) -> str:
    """multi-freq-ldpy's ADP rule (``ADP_Client``): GRR when ``VAR_Pure(p_grr, q_grr) <=
    VAR_Pure(p_oue, q_oue)`` at ``n = 1, f = 0`` (ties go to GRR), else OUE; written with
    their float expressions so that the choice agrees with theirs at the boundary.  In
    closed form: GRR iff ``d - 2 + e^eps <= 4 e^eps``, i.e. ``d <= 3 e^eps + 2`` (Wang et al.)."""
    e = np.exp(epsilon)
    p_grr = e / (e + d - 1)
    q_grr = (1 - p_grr) / (d - 1)
    p_ue, q_ue = 1 / 2, 1 / (e + 1)
    var_grr = q_grr * (1 - q_grr) / (1 * (p_grr - q_grr) ** 2) + 0 * (1 - p_grr - q_grr) / (1 * (p_grr - q_grr))
    var_ue = q_ue * (1 - q_ue) / (1 * (p_ue - q_ue) ** 2) + 0 * (1 - p_ue - q_ue) / (1 * (p_ue - q_ue))
    return "grr" if var_grr <= var_ue else "oue"


def check_epsilon(epsilon: Any, what: str = "epsilon") -> float:
    """``epsilon`` as a float; ValueError unless it is a positive finite number.

    Examples
    --------
    >>> check_epsilon(1)
    1.0
    """
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a positive finite number, not {epsilon!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{what} must be a positive finite number, not {epsilon!r}")
    return value


def oracle(kind: str, d: int, epsilon: float, g: int | None = None, k: int | None = None) -> Oracle:
    """A validated :class:`Oracle`, with the peers' defaults.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    d : int
        Number of categories (>= 2).
    epsilon : float
        The local-DP epsilon (> 0, finite).
    g : int, optional
        Hash range of ``blh``/``olh`` (>= 2).  Default: 2 for ``blh``; for ``olh``
        ``int(round(e^eps)) + 1``, exactly as multi-freq-ldpy (``LH_Client``) and pure-ldp
        (``LHClient(use_olh=True)``) compute it (Python's round: halves to even).  Wang et
        al. give ``g = e^eps + 1`` (rounded).
    k : int, optional
        Subset size of ``ss`` (``1 <= k < d``).  Default: ``int(max(1, np.rint(d / (e^eps
        + 1))))``, multi-freq-ldpy's ``SS_Client`` rule (Ye & Barg's optimal size, rounded
        half to even).

    Raises
    ------
    ValueError
        For an unknown kind, d < 2, a non-positive or non-finite epsilon, g < 2, k outside
        ``[1, d)``, ``g``/``k`` given to a kind without them, or ``d`` or ``g`` beyond the
        hash field of local hashing (:data:`LH_PRIME`; the default ``g`` is beyond it for
        epsilon above about 13.2).

    Examples
    --------
    >>> oracle("ss", 10, 1.0).k, oracle("adp", 4, 1.0).kind, oracle("adp", 100, 1.0).kind
    (3, 'grr', 'oue')
    >>> oracle("grr", 1, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: a frequency oracle needs d >= 2 categories, not 1
    """
    if kind not in KINDS:
        raise ValueError(f"unknown frequency oracle {kind!r}: one of {', '.join(KINDS)}")
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
        raise ValueError(f"a frequency oracle needs d >= 2 categories, not {d!r}")
    d = int(d)
    epsilon = check_epsilon(epsilon)
    if g is not None and kind not in _LH:
        raise ValueError(f"g (the hash range) is a parameter of blh and olh, not of {kind}")
    if k is not None and kind != "ss":
        raise ValueError(f"k (the subset size) is a parameter of ss, not of {kind}")
    if kind == "adp":
        return Oracle(_adp_choice(d, epsilon), d, epsilon, via="adp")
    if kind in _LH:
        if d > LH_PRIME:
            raise ValueError(f"local hashing here hashes categories in the field of {LH_PRIME}: d <= {LH_PRIME}")
        default = g is None
        if default:
            g = 2 if kind == "blh" else int(round(math.exp(epsilon))) + 1
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g < 2:
            raise ValueError(f"the hash range g must be an integer >= 2, not {g!r}")
        if g > LH_PRIME:
            # hashes are reduced mod LH_PRIME first: values of [g] beyond it never occur, and
            # q* = 1/g (the analysis, the estimator) would be false
            why = f" (the default round(e^epsilon) + 1 at epsilon = {epsilon:g})" if default else ""
            shown = f"{int(g):,}" if g < 10 ** 15 else f"about 10^{int(int(g).bit_length() * math.log10(2))}"
            raise ValueError(f"the hash range g = {shown}{why} is beyond the hash field of local hashing: "
                             f"g <= {LH_PRIME}; give a smaller g (olh(x, epsilon = e, g = 1000)), or use grr, "
                             "which needs no hash")
        return Oracle(kind, d, epsilon, g=int(g))
    if kind == "ss":
        if k is None:
            k = int(max(1, np.rint(d / (np.exp(epsilon) + 1))))
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < d:
            raise ValueError(f"the subset size k must be an integer with 1 <= k < d = {d}, not {k!r}")
        return Oracle(kind, d, epsilon, k=int(k))
    return Oracle(kind, d, epsilon)


def symbols_of(o: Oracle) -> dict[sympy.Symbol, Any]:
    """The values of the closed forms' symbols for ``o`` (to ``subs`` them).

    Examples
    --------
    >>> symbols_of(oracle("ss", 6, 0.5))
    {epsilon: 0.5, d: 6, k: 2}
    """
    out: dict[sympy.Symbol, Any] = {EPSILON: o.epsilon, D: o.d}
    if o.g is not None:
        out[G] = o.g
    if o.k is not None:
        out[K] = o.k
    return out


# ---- closed forms ----------------------------------------------------------------------------------
def _probs_exact(kind: str) -> tuple[sympy.Expr, sympy.Expr]:
    e = sympy.exp(EPSILON)
    if kind == "grr":
        return e / (e + D - 1), 1 / (e + D - 1)
    if kind == "sue":
        h = sympy.exp(EPSILON / 2)
        return h / (h + 1), 1 / (h + 1)
    if kind == "oue":
        return sympy.Rational(1, 2), 1 / (e + 1)
    if kind in _LH:
        # p*: the GRR over [g] keeps the hashed value; q*: another category hashes to the
        # reported value with probability 1/g (see hash_values for the rounding)
        return e / (e + G - 1), 1 / G
    if kind == "ss":
        # p*: the true value is put in the subset; q*: v != x is in it either as one of
        # the k-1 others drawn from d-1 (x in it) or as one of k drawn from d-1 (x not in it)
        pv = K * e / (K * e + D - K)
        return pv, ((K - 1) * K * e + (D - K) * K) / ((D - 1) * (K * e + D - K))
    if kind == "hr":
        # p*: j in C_x; q*: |C_x & C_v| = K/4 = |C_x^c & C_v| (rows of H orthogonal) -> 1/2
        return e / (e + 1), sympy.Rational(1, 2)
    raise ValueError(f"unknown kind {kind!r}")


def support_probs(o: Oracle, exact: bool = False) -> tuple[Any, Any]:
    """``(p*, q*)``: the probability that the true value is in the report's support, and
    that another given category is.

    With ``exact=True``: sympy expressions in :data:`EPSILON`, :data:`D` and, where they
    are parameters, :data:`G` (local hashing) and :data:`K` (subset selection).

    Examples
    --------
    >>> support_probs(oracle("oue", 4, 1.0), exact=True)
    (1/2, 1/(exp(epsilon) + 1))
    >>> [round(v, 6) for v in support_probs(oracle("grr", 4, 1.0))]
    [0.475367, 0.174878]
    """
    p, q = _probs_exact(o.kind)
    if exact:
        return p, q
    vals = symbols_of(o)
    e = math.exp(o.epsilon)
    # floats by the same expressions as the peers (sympy's evalf would round differently)
    if o.kind == "grr":
        return e / (e + o.d - 1), 1 / (e + o.d - 1)
    if o.kind == "sue":
        # q* = 1/(h + 1), not the peers' 1 - h/(h + 1): the same to rounding where q* is not small,
        # and not 0 where it is (epsilon = 700: h = e^350)
        h = math.exp(o.epsilon / 2)
        return h / (h + 1), 1 / (h + 1)
    if o.kind == "oue":
        return 0.5, 1 / (e + 1)
    if o.kind in _LH:
        return e / (e + o.g - 1), 1 / o.g
    if o.kind == "ss":
        k, d = o.k, o.d
        return (k * e / (k * e + d - k),
                ((k - 1) * (k * e) + (d - k) * k) / ((d - 1) * (k * e + d - k)))
    if o.kind == "hr":
        return e / (e + 1), 0.5
    return float(p.subs(vals)), float(q.subs(vals))  # pragma: no cover - every kind is above


def support_gap(o: Oracle) -> float:
    """``p* - q*`` in floating point, accurate at any epsilon: every kind's gap is ``e^eps - 1``
    (``expm1``) times a ratio of positive terms, so it is not the difference of two nearly
    equal floats (at epsilon = 1e-9 that difference keeps 7 digits; at 1e-20 none).

    Examples
    --------
    >>> o = oracle("oue", 4, 1e-9)
    >>> p, q = support_probs(o)
    >>> round(support_gap(o) / 2.5e-10, 9), round((p - q) / 2.5e-10, 9) != 1.0
    (1.0, True)
    >>> abs(support_gap(oracle("ss", 6, 1.0)) - (lambda pq: pq[0] - pq[1])(support_probs(oracle("ss", 6, 1.0)))) < 1e-15
    True
    """
    eps, d = o.epsilon, o.d
    e, m = math.exp(eps), math.expm1(eps)
    if o.kind == "grr":
        return m / (e + d - 1)
    if o.kind == "sue":                     # (h - 1)/(h + 1), h = e^(eps/2)
        return math.expm1(eps / 2) / (math.exp(eps / 2) + 1)
    if o.kind in ("oue", "hr"):             # 1/2 - 1/(e + 1) and e/(e + 1) - 1/2
        return m / (2 * (e + 1))
    if o.kind in _LH:                       # e/(e + g - 1) - 1/g
        g = o.g
        return (g - 1) / g * m / (e + g - 1)
    if o.kind == "ss":                      # k (d - k) (e - 1) / ((d - 1)(k e + d - k))
        k = o.k
        return k * (d - k) / (d - 1) * m / (k * e + d - k)
    raise ValueError(f"unknown kind {o.kind!r}")


class FloatRangeError(ValueError):
    """A covariance beyond floating point: ``1/(p* - q*)^2`` overflows (an epsilon so small
    that no survey of fewer than about 10^300 respondents could inform).  ``log10`` is the
    base-10 logarithm of the variance's size per respondent, ``gap`` the oracle's ``p* - q*``."""

    #: what to do instead
    HINT = ("use a larger epsilon (for a longitudinal oracle, a larger first): the variance grows as "
            "1/epsilon^2 and leaves floating point below about 1e-150; an epsilon this small makes the reports "
            "all but independent of the answers")

    def __init__(self, gap: float, log10: float):
        self.gap, self.log10 = gap, log10
        super().__init__(f"the estimator's variance is about 10^{log10:.0f} per respondent (p* - q* = {gap:.3g}): "
                         "beyond floating point (1.8e308)")

    def describe(self, epsilon: str, name: str = "epsilon") -> str:
        """The message of the refusal, naming the parameter (``epsilon``, or a longitudinal
        oracle's ``first``) and its value as the spec gives it."""
        if not self.gap or not math.isfinite(self.log10):
            return (f"{name} = {epsilon} is too small for floating point: p* - q* is 0 in doubles, so the "
                    "estimator's variance is infinite there")
        return (f"{name} = {epsilon} is too small for floating point: p* - q* = {self.gap:.3g}, so the "
                f"estimator's variance is about 10^{self.log10:.0f} per respondent, beyond the largest double "
                "(1.8e308)")


class PairProbs(NamedTuple):
    """Probabilities that two distinct categories ``v != w`` are both in the support.

    ``one``: given ``X = v`` (or ``X = w``); ``neither``: given ``X = x`` not in ``{v, w}``;
    ``xor``: for Hadamard response only, given the one ``x`` with ``(x+1) = (v+1) XOR
    (w+1)`` (every other kind: equal to ``neither``).

    Examples
    --------
    >>> PairProbs(0.1, 0.05, 0.05).neither
    0.05
    """

    one: Any
    neither: Any
    xor: Any


def pair_probs(o: Oracle, exact: bool = False) -> PairProbs:
    """Both-in-support probabilities of two categories (:class:`PairProbs`): what the
    off-diagonal of the covariance needs beyond ``p*, q*``.

    Derivations (``Z_v`` = 1 when v is in the support):

    * grr: the support is one category: 0, 0.
    * sue/oue: bits are independent given x: ``E[Z_v Z_w | x=v] = p q``, ``q^2`` otherwise.
    * ss: with ``pi = Pr(x in S) = k e^eps / (k e^eps + d - k)``: given x = v, w joins v
      as one of the k-1 others drawn from the d-1: ``pi (k-1)/(d-1)``; given x not in
      {v, w}: both among the k-1 others (x in S) or the k (x not in S) drawn uniformly
      from d-1: ``[pi (k-1)(k-2) + (1-pi) k(k-1)] / ((d-1)(d-2))``.
    * blh/olh: the hash family is 3-wise independent (:func:`hash_values`): given x = v,
      ``Pr(V = H(v) and H(w) = H(v)) = p' / g``; given x not in {v, w}, ``H(v), H(w)`` are
      independent of ``H(x)`` and of the noise, so ``Pr(H(v) = H(w) = V) = 1/g^2``.
    * hr: ``C_u`` = {j : H[u+1, j] = +1}, ``|C_a & C_b| = K/4`` and ``|C_a & C_b & C_c| = K/8``
      unless ``a ^ b ^ c = 0`` (then ``K/4``: the product of the three rows is row a^b^c,
      which sums to K only when it is row 0).  Given x = v: j in C_v with prob p, uniform
      there: ``p (K/4)/(K/2) = p/2``.  Given another x: ``p |C_x&C_v&C_w|/(K/2) + (1-p)
      |C_x^c&C_v&C_w|/(K/2)`` = 1/4, or ``p/2`` for the x with ``(x+1) = (v+1)^(w+1)``.

    Examples
    --------
    >>> pair_probs(oracle("hr", 6, 1.0), exact=True)
    PairProbs(one=exp(epsilon)/(2*(exp(epsilon) + 1)), neither=1/4, xor=exp(epsilon)/(2*(exp(epsilon) + 1)))
    """
    p, q = support_probs(o, exact=exact)
    if exact:
        d, g, k, half, zero = D, G, K, sympy.Rational(1, 2), sympy.Integer(0)
    else:
        d, g, k, half, zero = o.d, o.g, o.k, 0.5, 0.0
    if o.kind == "grr":
        return PairProbs(zero, zero, zero)
    if o.kind in _UE:
        return PairProbs(p * q, q * q, q * q)
    if o.kind in _LH:
        return PairProbs(p / g, 1 / g ** 2, 1 / g ** 2)
    if o.kind == "ss":
        one = p * (k - 1) / (d - 1)
        if not exact and o.d == 2:  # no third category: the case cannot happen
            return PairProbs(one, 0.0, 0.0)
        neither = (p * (k - 1) * (k - 2) + (1 - p) * k * (k - 1)) / ((d - 1) * (d - 2))
        return PairProbs(one, neither, neither)
    if o.kind == "hr":
        return PairProbs(p * half, half * half, p * half)
    raise ValueError(f"unknown kind {o.kind!r}")


def _xor_partner(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Hadamard response: for each pair ``v != w`` the category ``x`` with ``(x+1) = (v+1)
    XOR (w+1)`` (the third row of H whose product with rows v+1, w+1 is row 0), where it
    exists: ``(index matrix, where it exists)``."""
    idx = np.arange(d) + 1
    z = (idx[:, None] ^ idx[None, :]) - 1
    return z, (z >= 0) & (z < d)


def pure_covariance(p: Any, q: Any, one: Any, neither: Any, f: np.ndarray, n: Any = 1,
                    conditional: bool = False, xor: tuple[Any, np.ndarray, np.ndarray] | None = None,
                    gap: Any = None) -> np.ndarray:
    """The covariance of ``(C/n - q)/(p - q)`` for any pure protocol, from its constants:
    ``p, q`` (support probabilities) and ``one, neither`` (two categories both in the
    support, given the truth is one of them / neither).  The one computation behind
    :func:`covariance` and the multidimensional and longitudinal protocols.

    With the supports ``Z`` of ``n`` reports (``E[Z_v Z_w] = one (f_v + f_w) + neither (1 -
    f_v - f_w)`` for ``v != w``, plus ``(xor_value - neither) f_x`` for Hadamard response's
    ``xor = (xor_value, partner, exists)``):

    * population (i.i.d. respondents from ``f``): ``Cov(Z) = E[Z Z^T] - lam lam^T``,
      ``lam = q + (p - q) f``, diagonal ``lam (1 - lam)``;
    * ``conditional`` (given the table ``n f``): ``sum_x f_x Cov(Z | x)``, diagonal ``f p (1 -
      p) + (1 - f) q (1 - q)`` (Wang et al. 2017, Eq. (1)), off-diagonal ``E[Z_v Z_w] - (p q
      (f_v + f_w) + q^2 (1 - f_v - f_w))``;

    divided by ``n (p - q)^2`` (``gap``: ``p - q`` when the caller has it more accurately
    than the difference, :func:`support_gap`).  ``f`` may be a float array or an object
    array of sympy numbers (exact covariances).  :class:`FloatRangeError` when a float
    result overflows.

    Examples
    --------
    >>> V = pure_covariance(0.5, 0.25, 0.1, 0.05, np.array([0.5, 0.5]))
    >>> V.shape, bool(np.allclose(V, V.T))
    ((2, 2), True)
    """
    f = np.asarray(f)
    d = len(f)
    fv = f[:, None] + f[None, :]
    m = one * fv + neither * (1 - fv)                 # E[Z_v Z_w], v != w
    if xor is not None and xor[0] != neither:
        value, partner, exists = xor
        m[exists] = m[exists] + (value - neither) * f[partner[exists]]
    if conditional:
        cov = m - (p * q * fv + q * q * (1 - fv))
        diag = f * p * (1 - p) + (1 - f) * q * (1 - q)
    else:
        lam = q + (p - q) * f
        cov = m - lam[:, None] * lam[None, :]
        diag = lam * (1 - lam)
    cov[np.arange(d), np.arange(d)] = diag
    gap = p - q if gap is None else gap
    if cov.dtype == object:
        return cov / (n * gap ** 2)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out = cov / (n * gap ** 2)
    if not np.all(np.isfinite(out)):
        # the size of the largest variance, from logs (gap ** 2 itself may be 0 in doubles)
        top = float(np.max(np.abs(np.diag(cov)))) / float(n)
        raise FloatRangeError(float(gap), (math.log10(top) if top > 0 else 0.0)
                              - 2 * (math.log10(abs(float(gap))) if gap else -324.0))
    return out


def covariance(o: Oracle, f: Sequence[float], n: float, conditional: bool = False) -> np.ndarray:
    """The ``d x d`` covariance of ``f_hat = (C/n - q*)/(p* - q*)``.

    ``conditional=False``: n respondents drawn i.i.d. from the population ``f`` (sampling
    and privacy noise).  The supports ``Z_i`` are then i.i.d. with mean ``lam = q* + (p*
    - q*) f`` and ``Cov(C) = n Cov(Z)``: ``lam_v (1 - lam_v)`` on the diagonal, ``E[Z_v Z_w]
    - lam_v lam_w`` off it.

    ``conditional=True``: given the collected table ``n f`` (privacy noise only):
    ``Cov(C) = sum_i Cov(Z_i | x_i)``, diagonal ``n [f p*(1-p*) + (1-f) q*(1-q*)]`` (Wang et
    al.'s Eq. (1) after dividing by ``n^2 (p*-q*)^2``), off-diagonal ``n (E[Z_v Z_w] - [p*
    q* (f_v + f_w) + q*^2 (1 - f_v - f_w)])``.  The two differ by the multinomial sampling
    term ``(diag(f) - f f^T)/n``.

    ``E[Z_v Z_w]`` comes from :func:`pair_probs`.

    Parameters
    ----------
    o : Oracle
    f : array of float, shape (d,)
        A distribution (the population's, or the collected table's frequencies).
    n : float
        Number of respondents.
    conditional : bool
        Privacy noise only (given the table ``n f``) instead of sampling plus privacy.

    Returns
    -------
    numpy.ndarray, shape (d, d)

    Examples
    --------
    >>> o = oracle("oue", 3, 1.0)
    >>> f = np.array([0.5, 0.3, 0.2])
    >>> pop, cond = covariance(o, f, 100), covariance(o, f, 100, conditional=True)
    >>> bool(np.allclose(pop - cond, (np.diag(f) - np.outer(f, f)) / 100))
    True
    """
    f = np.asarray(f, dtype=float)
    if f.shape != (o.d,):
        raise ValueError(f"f has {o.d} entries (one per category), not shape {f.shape}")
    if not abs(f.sum() - 1.0) <= 1e-6:
        raise ValueError(f"f must be a distribution (it sums to {f.sum()})")
    return pure_covariance(*_constants(o), f, n, conditional, xor=_xor_of(o), gap=support_gap(o))


def _constants(o: Oracle, exact: bool = False) -> tuple[Any, Any, Any, Any]:
    """``(p*, q*, one, neither)`` (floats, or sympy in the symbols)."""
    p, q = support_probs(o, exact=exact)
    one, neither, _ = pair_probs(o, exact=exact)
    return p, q, one, neither


def _xor_of(o: Oracle, exact: bool = False) -> tuple[Any, np.ndarray, np.ndarray] | None:
    if o.kind != "hr":
        return None
    return (pair_probs(o, exact=exact).xor, *_xor_partner(o.d))


def exact_covariance(o: Oracle, epsilon: sympy.Expr, f: Sequence[sympy.Expr], conditional: bool = False
                     ) -> sympy.Matrix:
    """:func:`covariance` times n, exactly: at an exact ``epsilon`` (a sympy number, the
    oracle's) and an exact distribution ``f``.

    Examples
    --------
    >>> V = exact_covariance(oracle("oue", 2, 1.0), sympy.Integer(1), [sympy.Rational(1, 2)] * 2)
    >>> sympy.simplify(V[0, 0]), sympy.simplify(V[0, 1])
    ((1 + 3*E)*(E + 3)/(4*(-1 + E)**2), -1/4)
    """
    values = {EPSILON: epsilon, D: sympy.Integer(o.d)}
    if o.g is not None:
        values[G] = sympy.Integer(o.g)
    if o.k is not None:
        values[K] = sympy.Integer(o.k)
    p, q, one, neither = (sympy.sympify(c).subs(values) for c in _constants(o, exact=True))
    xor = _xor_of(o, exact=True)
    if xor is not None:
        xor = (sympy.sympify(xor[0]).subs(values), xor[1], xor[2])
    fa = np.array([sympy.sympify(x) for x in f], dtype=object)
    V = pure_covariance(p, q, one, neither, fa, sympy.Integer(1), conditional, xor=xor)
    return sympy.Matrix(V.tolist())


def variance_formula(o: Oracle, exact: bool = True, conditional: bool = True) -> sympy.Expr:
    """``n Var(f_hat_v)`` as a sympy expression in :data:`F` (the category's frequency).

    ``conditional=True``: Wang et al.'s Eq. (1)/(2), ``q*(1-q*)/(p*-q*)^2 + f (1-p*-q*)/
    (p*-q*)`` (multi-freq-ldpy's ``VAR_Pure``); ``conditional=False`` adds the sampling
    term ``f (1 - f)``.  ``exact=True``: in :data:`EPSILON`, :data:`D` (and :data:`G`,
    :data:`K`); ``exact=False``: with ``o``'s numbers put in (floats), still in ``f``.

    Examples
    --------
    >>> variance_formula(oracle("oue", 4, 1.0)).subs(F, 0).simplify()
    sinh(epsilon/2)**(-2)
    """
    p, q = support_probs(o, exact=True)
    if not exact:
        vals = {s: sympy.Float(v, 17) if isinstance(v, float) else sympy.Integer(v) for s, v in symbols_of(o).items()}
        p, q = sympy.sympify(p).subs(vals), sympy.sympify(q).subs(vals)
    v = q * (1 - q) / (p - q) ** 2 + F * (1 - p - q) / (p - q)
    return v if conditional else v + F * (1 - F)


def epsilon_of(o: Oracle, exact: bool = False) -> Any:
    """The local-DP epsilon of the mechanism, ``max_y log(max_x Pr(y|x) / min_x Pr(y|x))``,
    from its report probabilities (not from ``o.epsilon``); it equals the declared one.

    Per kind, the report probabilities and the report that maximizes the ratio:

    * grr: ``p'`` or ``q'``: ``log(p'/q')``.
    * sue/oue: ``Pr(y|x) = c(y) (p/q)^{y_x} ((1-p)/(1-q))^{1-y_x}``: a report with a 1 and
      a 0 gives ``log(p(1-q) / ((1-p) q))`` (``e^eps`` for both: SUE's
      ``p = e^{eps/2}/(e^{eps/2}+1)`` squared ratio, OUE's ``(1/2)(e^eps/(e^eps+1)) /
      ((1/2)/(e^eps+1))``).
    * ss: ``Pr(S|x) = pi / C(d-1, k-1)`` (x in S) or ``(1-pi) / C(d-1, k)``: ratio
      ``pi (d-k) / ((1-pi) k)``.
    * blh/olh: given the seed, GRR over [g]: ``log(p'/q')``, ``q' = (1-p')/(g-1)``.
    * hr: ``Pr(j|x) = p/(K/2)`` (j in C_x) or ``(1-p)/(K/2)``: ``log(p/(1-p))``.

    Examples
    --------
    >>> epsilon_of(oracle("oue", 6, 1.5), exact=True)
    epsilon
    >>> round(epsilon_of(oracle("ss", 6, 1.5)), 12)
    1.5
    """
    if exact:
        p, q = support_probs(o, exact=True)
        if o.kind == "grr":
            r = p / q
        elif o.kind in _UE:
            r = p * (1 - q) / ((1 - p) * q)
        elif o.kind == "ss":
            r = p * (D - K) / ((1 - p) * K)
        elif o.kind in _LH:
            r = p / ((1 - p) / (G - 1))
        else:
            r = p / (1 - p)
        return sympy.simplify(sympy.expand_log(sympy.log(sympy.simplify(r)), force=True))
    # in logs, with 1 - p* and 1 - q* from their own expressions (1 - p* in doubles is 0 at
    # epsilon = 700, and its log -inf)
    p, q = support_probs(o)
    not_p, not_q = _complements(o)
    if o.kind == "grr":
        return math.log(p) - math.log(not_p / (o.d - 1))
    if o.kind in _UE:
        return math.log(p) + math.log(not_q) - math.log(not_p) - math.log(q)
    if o.kind == "ss":
        return math.log(p) + math.log(o.d - o.k) - math.log(not_p) - math.log(o.k)
    if o.kind in _LH:
        return math.log(p) - math.log(not_p / (o.g - 1))
    return math.log(p) - math.log(not_p)


def _complements(o: Oracle) -> tuple[float, float]:
    """``(1 - p*, 1 - q*)`` in floating point, each from its own expression (not a
    difference with 1, which loses them where they are small)."""
    e, d = math.exp(o.epsilon), o.d
    if o.kind == "grr":
        return (d - 1) / (e + d - 1), (e + d - 2) / (e + d - 1)
    if o.kind == "sue":
        p, q = support_probs(o)
        return q, p
    if o.kind == "oue":
        return 0.5, e / (e + 1)
    if o.kind in _LH:
        return (o.g - 1) / (e + o.g - 1), (o.g - 1) / o.g
    if o.kind == "ss":
        p, q = support_probs(o)
        return (d - o.k) / (o.k * e + d - o.k), 1 - q
    if o.kind == "hr":
        return 1 / (e + 1), 0.5
    raise ValueError(f"unknown kind {o.kind!r}")


def _likelihood_pair(o: Oracle) -> tuple[float, float]:
    """``(a, b)`` proportional to ``Pr(y | x)`` for x in / not in ``S(y)`` (the factor
    common to all x dropped): the likelihood of :func:`ibu`.  Their ratio is ``e^eps``
    for every kind (:func:`epsilon_of`)."""
    p, q = support_probs(o)
    if o.kind == "grr":
        return p, q                                   # the channel itself (as multi-freq-ldpy)
    if o.kind in _UE:
        return p * (1 - q), (1 - p) * q               # the x-th bit: p vs q if 1 (1-p vs 1-q if 0)
    if o.kind == "ss":
        return p * (o.d - o.k), (1 - p) * o.k         # pi / C(d-1,k-1) vs (1-pi) / C(d-1,k)
    if o.kind in _LH:
        return p, (1 - p) / (o.g - 1)                 # GRR over [g] given the seed
    return p, 1 - p                                   # hr: p/(K/2) vs (1-p)/(K/2)


# ---- local hashing ---------------------------------------------------------------------------------
def _coefficients(seed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s = np.asarray(seed).astype(np.int64)
    P = LH_PRIME
    return s % P, (s // P) % P, s // (P * P)


def hash_values(o: Oracle, seed: np.ndarray, categories: np.ndarray | None = None) -> np.ndarray:
    """``H_s(u)`` for each seed (rows) and category (columns): our local-hashing family.

    A seed is ``s = a + P b + P^2 c`` with ``a, b, c`` in ``[0, P)``, ``P`` =
    :data:`LH_PRIME` = 2^19 - 1 (so ``s < 2^57``: one uint64), and

        H_s(u) = ((a + b u + c u^2) mod P) mod g.

    The quadratic polynomials over the field Z_P are exactly 3-wise independent: for
    distinct ``u1, u2, u3 < P`` the values ``(a + b u + c u^2) mod P`` are independent and
    uniform on Z_P when ``(a, b, c)`` is (Vandermonde).  Reducing mod g makes each value
    ``t`` of ``[g]`` come with probability ``pi_t = #{h < P : h = t mod g} / P``, within
    ``1/P`` (1.9e-6) of ``1/g``.  That does not move p* (the GRR over [g] keeps the hashed
    value with probability p' whatever its law) nor epsilon (given the seed it is GRR);
    it moves ``q* = q' + (p'-q') sum_t pi_t^2 = 1/g + (p'-q') sum_t (pi_t - 1/g)^2`` by at
    most ``g / P^2`` (about 1.5e-11 for g = 4): the deviation is second order, so the
    closed form ``q* = 1/g`` holds to ~1e-11 (and the pair probabilities likewise).
    :func:`privatize` draws ``a, b, c`` uniform on Z_P (to 2^-53).

    Evaluation is integer numpy on (reports x categories) blocks: two products below
    2^38 and two remainders per entry, no Python loop per respondent.

    Examples
    --------
    >>> o = oracle("olh", 5, 1.0)
    >>> hash_values(o, np.array([1 + 2 * LH_PRIME]))     # a = 1, b = 2, c = 0: (1 + 2u) mod 4
    array([[1, 3, 1, 3, 1]])
    """
    u = np.arange(o.d) if categories is None else np.asarray(categories)
    return _hash_float(o, seed, u).astype(np.int64)


def _hash_float(o: Oracle, seed: np.ndarray, u: np.ndarray) -> np.ndarray:
    """:func:`hash_values` in float64, exactly: ``h = a + b u + c (u^2 mod P) < 2^40`` is an
    exact double; ``floor(h / P)`` is exact because a correctly rounded quotient is an
    integer exactly when ``h`` is a multiple of ``P`` and is otherwise ``>= 1/P`` from
    one, far beyond its rounding (``2^21 2^-53``); likewise ``mod g``.  Float division is
    vectorized where int64 remainders are not (4-5 times faster)."""
    a, b, c = (v.astype(float)[:, None] for v in _coefficients(np.asarray(seed).ravel()))
    u = np.asarray(u, dtype=np.int64)
    uf, u2 = u.astype(float), ((u * u) % LH_PRIME).astype(float)
    h = b * uf                                   # in place, two buffers: the passes are memory bound
    t = c * u2
    h += t
    h += a
    for mod in (LH_PRIME, o.g):
        np.divide(h, mod, out=t)
        np.floor(t, out=t)
        t *= mod
        h -= t
    return h


def _hadamard_member(j: np.ndarray, d: int) -> np.ndarray:
    """``M[i, u]`` = True when report ``j[i]`` is in ``C_u`` (H[u+1, j] = +1: even parity of
    ``(u+1) & j``)."""
    x = np.asarray(j, dtype=np.int64)[:, None] & (np.arange(d, dtype=np.int64) + 1)[None, :]
    return _parity(x) == 0


def _parity(x: np.ndarray) -> np.ndarray:
    """Parity of the set bits of non-negative int64 values (xor-fold)."""
    x = x.copy()
    for s in (32, 16, 8, 4, 2, 1):
        x ^= x >> s
    return x & 1


def _fwht(a: np.ndarray) -> np.ndarray:
    """Fast Walsh-Hadamard transform in natural (Sylvester) order: ``H a`` with ``H[i, j] =
    (-1)^popcount(i & j)``, ``O(K log K)``."""
    a = np.array(a, dtype=float)
    K_ = len(a)
    h = 1
    while h < K_:
        a = a.reshape(-1, 2, h)
        a = np.concatenate([a[:, :1] + a[:, 1:], a[:, :1] - a[:, 1:]], axis=1).reshape(-1)
        h *= 2
    return a


# ---- sampling --------------------------------------------------------------------------------------
def _pieces(rng: RowRandom, per_row: int):
    """``(lo, hi, sub)`` pieces of ``rng``'s rows of at most ``_CHUNK / per_row`` rows, each
    ``sub`` a :class:`RowRandom` at the same draw number (row randomness depends on the
    row index and draw number alone, so cutting rows does not change it); ``rng`` is
    advanced past the calls made once the pieces are consumed."""
    n = len(rng)
    step = max(1, _CHUNK // max(per_row, 1))
    if n <= step:
        yield 0, n, rng
        return
    start, sub = rng._draw, rng
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        sub = RowRandom(rng.key, rng.rows[lo:hi], rng.stream, _draw=start, _attempt=rng._attempt)
        yield lo, hi, sub
    rng._draw, rng._last = sub._draw, sub._last


def _grr_from_uniform(x: np.ndarray, u: np.ndarray, m: int, p: float) -> np.ndarray:
    """GRR over ``[m]`` from one uniform per row: keep ``x`` when ``u < p``, else ``(x + 1 +
    floor((u-p)/(1-p) (m-1))) mod m`` (uniform over the other m-1 values)."""
    other = np.minimum(((u - p) / (1 - p) * (m - 1)).astype(np.int64), m - 2)
    return np.where(u < p, x, (x + 1 + np.maximum(other, 0)) % m)


#: bits per lane of a random word in unary encoding's sampler (see _ue_bits)
_LANE_BITS = 8


def _coins_for(d: int, bits: int) -> int:
    """Tie coins per row in :func:`_ue_bits`: the ties' number is Binomial(d, 2^-bits);
    its mean plus four standard deviations, plus 1 (a row with more redraws)."""
    mean = d * 2.0 ** -bits
    return int(math.ceil(mean + 4 * math.sqrt(mean))) + 1


def _ue_bits(rng: RowRandom, x: np.ndarray, d: int, p: float, q: float) -> np.ndarray:
    """``(m, d)`` independent bits, bit ``x_i`` of row i 1 with probability p, the others q:
    exactly (to 2^-63), with ``d / 8`` random words per row instead of d.

    Each 64-bit word gives eight 8-bit lanes ``L`` (one per category; read as uint8
    without arithmetic, so the comparison runs at memory speed); with ``q 2^8 = t +
    frac``, a bit is 1 when ``L < t``, 0 when ``L > t`` and, on a tie ``L = t``
    (probability 2^-8), 1 with probability ``frac``: ``Pr(1) = t/2^8 + frac/2^8 = q``.
    The ties' coins (:func:`_coins_for` per row: about ``d/256 + 4 sqrt(d/256) + 1``
    words) and the true value's bit (``word < p 2^63``) come from more words per row; a
    row with more ties than coins (well under one in 10^4) redraws a word per category
    with :meth:`RowRandom.retry`, which depends on the row alone.  So every row makes the
    same calls and its bits are a function of (seed, row, value).  (Philox costs ~4-5 ns
    a word here, most of the sampler: one word per bit made UE's sampler 3-4 times
    slower, 16-bit lanes 1.5 times.)

    The full 64-bit words come from ``RowRandom._next_words``, the draw that ``random``
    and ``integers`` make (``integers`` keeps 63 bits at most)."""
    m = len(x)
    per = 64 // _LANE_BITS
    nw = -(-d // per)
    words = rng._next_words(nw)
    if _LANE_BITS in (8, 16):
        # little-endian order fixed, so that a seed gives the same bits on every platform
        lanes = words.astype("<u8", copy=False).view(f"<u{_LANE_BITS // 8}").reshape(m, per * nw)[:, :d]
    else:            # other widths: tests only (many ties)
        shifts = np.arange(per, dtype=np.uint64) * np.uint64(_LANE_BITS)
        lanes = ((words[:, :, None] >> shifts) & np.uint64((1 << _LANE_BITS) - 1)).reshape(m, per * nw)[:, :d]
    scaled = q * float(1 << _LANE_BITS)
    t = int(scaled)
    coin = np.int64(min(round((scaled - t) * 2.0 ** 63), 2 ** 63 - 1))   # Pr(word < coin) = frac
    coins = _coins_for(d, _LANE_BITS)
    bits = lanes < t
    tie = lanes == t
    extra = rng.integers(0, 1 << 63, size=(m, 1 + coins))
    rows = np.arange(m)
    bits[rows, x] = extra[:, 0] < np.int64(min(round(p * 2.0 ** 63), 2 ** 63 - 1))
    tie[rows, x] = False
    at = np.flatnonzero(tie)                      # row-major: a row's ties in column order
    if len(at):
        tr, tc = np.divmod(at, d)
        rank = np.arange(len(tr)) - np.searchsorted(tr, tr)
        many = np.unique(tr[rank >= coins])
        few = ~np.isin(tr, many) if len(many) else np.ones(len(tr), dtype=bool)
        bits[tr[few], tc[few]] = extra[tr[few], 1 + rank[few]] < coin
        if len(many):
            fresh = rng.retry(many).integers(0, 1 << 63, size=(len(many), d))
            sel = ~few
            bits[tr[sel], tc[sel]] = fresh[np.searchsorted(many, tr[sel]), tc[sel]] < coin
    return bits


#: a row's positions come from a fixed number of uniform draws (:func:`_draws_for`); a row
#: whose draws hold too few distinct positions (about one in 10^4 or fewer) redraws by keys
#: (:func:`_subset_by_keys`): fewer spare draws for all rows cost more than the redraws
_SPARE_SD = 4.0


def _draws_for(N: int, m: int) -> int:
    """Uniform draws on ``range(N)`` that hold ``m`` distinct values but for a small
    probability: the waiting time's mean plus four standard deviations, plus 4.  The wait
    for the i-th new value is geometric with success probability ``(N - i)/N``.

    Examples
    --------
    >>> _draws_for(4095, 74), _draws_for(255, 69), _draws_for(10, 0)
    (82, 100, 0)
    """
    if m <= 0:
        return 0
    frac = np.arange(m) / N
    mean = float(np.sum(1 / (1 - frac)))
    sd = math.sqrt(float(np.sum(frac / (1 - frac) ** 2)))
    return int(math.ceil(mean + _SPARE_SD * sd)) + 4


def _positions(words: np.ndarray, N: int) -> np.ndarray:
    """Two uniform positions in ``range(N)`` per 64-bit word (its 32-bit halves), exactly:
    Lemire's multiply-shift ``floor(h N / 2^32)``, rejecting a half whose low product falls
    below ``2^32 mod N`` (probability below ``N 2^-32``); a rejected one is ``N``, which
    :func:`_first_distinct` skips.  ``N < 2^21``.

    Examples
    --------
    >>> w = np.array([[(3 << 62) | (1 << 31) | 1, 1 << 31]], dtype=np.uint64)
    >>> _positions(w, 10).tolist()      # halves 2^31 + 1, 3 2^30; 2^31 and 0: low products 0 < 6
    [[5, 7, 10, 10]]
    """
    if not 0 < N < 2 ** 21:
        raise ValueError("positions in range(N), 0 < N < 2^21")
    halves = words.astype("<u8", copy=False).view("<u4").reshape(len(words), -1)
    # h N < 2^53: exact in float64, and so is its scaling by 2^-32 (1.5x faster than uint64)
    out = np.multiply(halves, N * 2.0 ** -32, dtype=np.float64).astype(np.int32)
    bad = halves * np.uint32(N) < np.uint32((1 << 32) % N)      # the low product, mod 2^32
    if bad.any():
        np.putmask(out, bad, N)
    return out


def _first_distinct(v: np.ndarray, N: int, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row, the first ``m`` distinct values of the draws ``v`` (uniform on ``range(N)``,
    ``N`` marking a rejected draw) in draw order: a uniform m-subset of ``range(N)`` (the
    law of i.i.d. uniform draws is the same under any relabelling of ``range(N)``, so is
    the set of the first m distinct).

    Two sorts per row: of ``value * 2^s + j`` (``j`` the draw's index), where equal values
    sit together with their first draw first; then of the first draws' indices, whose
    m-th smallest is the last draw to keep.

    Returns ``(pos, keep, short)``: ``pos`` each row's draws sorted by value, ``keep`` the
    mask of the chosen ones (the kept positions of a row in increasing order), ``short``
    the rows whose draws held fewer than m distinct values (to redraw).

    Examples
    --------
    >>> v = np.array([[0, 5, 0, 10, 9, 3]])       # N = 10: the 10 was rejected
    >>> pos, keep, short = _first_distinct(v, 10, np.array([3]))
    >>> pos[keep].tolist(), short.tolist()
    ([0, 5, 9], [False])
    """
    rows, w = v.shape
    shift = max(w - 1, 1).bit_length()
    dt = np.int32 if ((N + 1) << (shift + 1)) < 2 ** 31 else np.int64
    key = np.left_shift(v.astype(dt, copy=False), shift)
    key |= np.arange(w, dtype=dt)
    key.sort(axis=1)
    order = key & dt((1 << shift) - 1)
    pos = key >> shift
    new = np.empty((rows, w), dtype=bool)
    new[:, :1] = True
    np.not_equal(pos[:, 1:], pos[:, :-1], out=new[:, 1:])
    if w and (pos[:, -1] == N).any():                    # rejected draws (sorted last): never chosen
        new &= pos < N
    late = dt(1 << shift)                                 # after every draw
    first = np.logical_not(new).view(np.uint8).astype(dt)
    first <<= shift                                       # the draw that first gave each value;
    first |= order                                        # at least late for the others
    first.sort(axis=1)
    last = first[np.arange(rows), np.clip(m - 1, 0, max(w - 1, 0))] if w else np.full(rows, late)
    last = np.where(m > 0, last, -1)
    short = (m > w) | (last >= late)
    return pos, new & (order <= last[:, None]), short


def _subset_by_keys(u: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the positions of the ``m`` smallest of ``N`` keys: ``(pos, keep)`` as
    :func:`_first_distinct` gives them (a sort: exactly m per row, ties or not)."""
    rows, N = u.shape
    rank = np.empty((rows, N), dtype=np.int64)
    np.put_along_axis(rank, np.argsort(u, axis=1), np.arange(N), axis=1)
    return np.broadcast_to(np.arange(N), (rows, N)), rank < m[:, None]


def _pack_positions(pos: np.ndarray, keep: np.ndarray, d: int) -> np.ndarray:
    """The packed bits ``(rows, ceil(d/8))`` (:func:`numpy.packbits`'s little bit order) of
    each row's kept positions: set in a bool matrix through their flat indices, then
    packed (measured 1.4-2x faster than a weighted histogram over 32-bit lanes, and than
    an OR-reduction per word)."""
    rows = pos.shape[0]
    bits = np.zeros((rows, d), dtype=bool)
    dt = np.int32 if rows * d < 2 ** 31 else np.int64
    flat = pos.astype(dt, copy=False) + (np.arange(rows, dtype=dt) * d)[:, None]
    bits.reshape(-1)[np.compress(keep.ravel(), flat.ravel())] = True   # compress: 4x a bool index
    return np.packbits(bits, axis=1, bitorder="little")


def _other_positions(rng: RowRandom, draws: int, x: np.ndarray, d: int, m: np.ndarray) -> np.ndarray:
    """Packed bits (:func:`_pack_positions`) of a uniform ``m``-subset of the ``d - 1``
    categories other than each row's ``x``, from ``draws`` (at least :func:`_draws_for`)
    positions per row, two per word of one call on ``rng``; rows they leave short redraw
    ``d - 1`` keys by ``rng.retry``: every row's subset is a function of (seed, row, m)."""
    N = d - 1
    pos, keep, short = _first_distinct(_positions(rng._next_words(-(-draws // 2)), N), N, m)
    bits = _pack_positions(pos + (pos >= x[:, None]), keep, d)     # the others skip x
    if short.any():
        s = np.flatnonzero(short)
        kpos, kkeep = _subset_by_keys(rng.retry(s).random((len(s), N)), m[s])
        bits[s] = _pack_positions(kpos + (kpos >= x[s, None]), kkeep, d)
    return bits


def _flip_bit(bits: np.ndarray, x: np.ndarray, on: np.ndarray) -> None:
    """Flip bit ``x_i`` of row i's packed bits where ``on_i``."""
    bits[np.arange(len(x)), x >> 3] ^= on.astype(np.uint8) << (x & 7).astype(np.uint8)


def _all_but_truth(d: int, x: np.ndarray) -> np.ndarray:
    """Packed bits with every category but each row's ``x`` on."""
    bits = np.tile(np.packbits(np.ones(d, dtype=bool), bitorder="little"), (len(x), 1))
    _flip_bit(bits, x, np.ones(len(x), dtype=bool))
    return bits


@functools.lru_cache(maxsize=64)
def _ue_sparse_plan(d: int, q: float) -> tuple[np.ndarray, int] | None:
    """Unary encoding's sparse sampler where the other bits are rarely 1: their number is
    ``Binomial(d - 1, q)`` (drawn by the inverse of its CDF) and their positions a uniform
    subset of that size (:func:`_other_positions`): the same law as d - 1 independent
    Bernoulli(q) bits.  ``(cdf, draws)`` where its positions number less than half the
    dense sampler's ``d / 8`` words, else None (measured at n = 2e5: oue eps = 4: d = 512
    even, 1024 1.4x and 4096 2x faster; eps = 3, d = 4096, 309 positions against 512
    words: 1.1x slower).  ``draws`` covers counts up to the ``1 - 1e-9`` quantile; a row
    with more redraws by keys."""
    from scipy import stats

    N = d - 1
    cap = int(stats.binom.ppf(1 - 1e-9, N, q))
    draws = _draws_for(N, min(cap, N))
    if 2 * draws >= d / 8:
        return None
    cdf = stats.binom.cdf(np.arange(N + 1), N, q)
    cdf[-1] = 1.0
    return cdf, draws


#: subset selection draws a subset by its index among all of them when there are at most
#: this many (and d <= 64: one word per subset); else its positions by draws (:func:`_other_positions`)
SS_TABLE = 1 << 20


def _ss_enumerable(o: Oracle) -> bool:
    return o.d <= 64 and max(math.comb(o.d - 1, o.k - 1), math.comb(o.d - 1, o.k)) <= SS_TABLE


@functools.lru_cache(maxsize=32)
def _ss_table(d: int, m: int) -> np.ndarray:
    """Every m-subset of the d - 1 other positions, as uint64 bitmasks (in lexicographic
    order: a uniform index gives a uniform subset)."""
    if m == 0:
        return np.zeros(1, dtype=np.uint64)
    combos = np.array(list(itertools.combinations(range(d - 1), m)), dtype=np.uint64)
    return np.bitwise_or.reduce(np.uint64(1) << combos, axis=1)



def privatize(o: Oracle, codes: Sequence[int] | np.ndarray, rng: RowRandom) -> np.ndarray:
    """Privatize each row's category: the reports, one per row.

    ``rng`` is a :class:`~privspec.backends.core.rowrandom.RowRandom` with one row per code;
    every row makes the same calls whatever its value, so a row's report is a function of
    (seed, row index, value) alone: the same whole or in pieces.

    Reports: grr: int codes; sue/oue/ss: packed bits (``np.packbits(..., axis=1,
    bitorder="little")``, shape ``(n, ceil(d/8))`` uint8: bit ``v`` of the support in byte
    ``v // 8``, bit ``v % 8``); blh/olh: a structured array with fields ``seed`` (uint64,
    :func:`hash_values`) and ``value`` (int64); hr: int ``j`` in ``[K]``.

    Subset selection's k-subset is stored as its bitmask: fixed width whatever k, smaller
    than k int16 codes once ``k > d/16`` (the default ``k ~ d/(e^eps+1)`` for eps < 2.7),
    and :func:`support_counts` and :func:`support_sets` share unary encoding's code;
    :func:`format_reports` writes the sorted codes.

    Draws per row: grr: 1 uniform; sue/oue: ``ceil(d/8)`` 64-bit words (eight 8-bit lanes
    per word, ties resolved exactly: :func:`_ue_bits`) and ``1 +`` :func:`_coins_for` more, or,
    where the other bits are rarely 1 (:func:`_ue_sparse_plan`: oue at a large epsilon),
    2 uniforms (the true value's bit; how many others are 1, Binomial(d - 1, q)) and that
    many positions among the others (:func:`_other_positions`); ss: 2 uniforms (the
    true value in or out, then the index of a subset of the others among all of them,
    :data:`SS_TABLE`; an index from a 53-bit uniform is uniform to ``C(d-1, k) 2^-53``)
    where d <= 64 and the subsets fit a table; else 1 uniform (the true value in or out)
    and the first k - 1 or k distinct of about ``k + k^2/(2d)`` uniform positions among
    the others, two per word, exactly (:func:`_positions`, :func:`_first_distinct`; where
    ``2k > d - 1`` the others left out instead); blh/olh: 3 uniforms for the seed's
    coefficients, 1 for the GRR; hr: one integer in [K] and one uniform (pure-ldp's
    ``Hadamard_Rand_high_priv.encode_symbol``).  A row whose draws fall short (too many
    ties or repeats: well under one row in 10^4) redraws by :meth:`RowRandom.retry`.

    Parameters
    ----------
    o : Oracle
    codes : int array, shape (n,)
        The respondents' categories, in ``[0, d)``.
    rng : RowRandom
        Per-row randomness with ``n`` rows (absolute row indices: a piece of a file
        passes its own).

    Returns
    -------
    numpy.ndarray
        The n reports (see above for each kind's layout).

    Examples
    --------
    >>> o = oracle("sue", 10, 2.0)
    >>> r = privatize(o, np.array([0, 9, 3]), RowRandom(4, rows=range(3)))
    >>> r.shape, r.dtype
    ((3, 2), dtype('uint8'))
    """
    x = np.asarray(codes)
    if x.ndim != 1:
        raise ValueError("codes is a 1-D array of category codes")
    if x.size and (not np.issubdtype(x.dtype, np.integer) or x.min() < 0 or x.max() >= o.d):
        raise ValueError(f"codes are integers in [0, {o.d})")
    x = x.astype(np.int64, copy=False)
    n = len(x)
    if len(rng) != n:
        raise ValueError(f"rng has {len(rng)} rows for {n} codes")
    p, q = support_probs(o)
    if o.kind == "grr":
        out = np.empty(n, dtype=np.int64)
        for lo, hi, sub in _pieces(rng, 1):    # blocks that stay in cache (as for every kind)
            out[lo:hi] = _grr_from_uniform(x[lo:hi], sub.random(hi - lo), o.d, p)
        return out
    if o.kind in _UE:
        out = np.empty((n, o.packed_width), dtype=np.uint8)
        plan = _ue_sparse_plan(o.d, q)
        if plan is None:
            for lo, hi, sub in _pieces(rng, -(-o.d // 4)):
                out[lo:hi] = np.packbits(_ue_bits(sub, x[lo:hi], o.d, p, q), axis=1, bitorder="little")
            return out
        # few ones: the truth's bit, then how many of the others are 1 and which
        cdf, draws = plan
        for lo, hi, sub in _pieces(rng, draws // 2 + 2):
            u = sub.random((hi - lo, 2))
            ones = np.minimum(np.searchsorted(cdf, u[:, 1], side="right"), o.d - 1)
            out[lo:hi] = _other_positions(sub, draws, x[lo:hi], o.d, ones)
            _flip_bit(out[lo:hi], x[lo:hi], u[:, 0] < p)           # the truth's bit was 0
        return out
    if o.kind == "ss" and _ss_enumerable(o):
        # two uniforms per row: the truth in or out, then which subset of the others
        # (an index into all of them: one lookup instead of d keys and a partition)
        out = np.zeros((n, 8), dtype=np.uint8)
        u = rng.random((n, 2))
        take = u[:, 0] < p
        masks = np.empty(n, dtype=np.uint64)
        for m, rows in ((o.k - 1, take), (o.k, ~take)):
            table = _ss_table(o.d, m)
            pick = np.minimum((u[rows, 1] * len(table)).astype(np.int64), len(table) - 1)
            masks[rows] = table[pick]
        xs = x.astype(np.uint64)
        low = (np.uint64(1) << xs) - np.uint64(1)
        full = (masks & low) | ((masks & ~low) << np.uint64(1))   # the others' positions skip x
        full |= take.astype(np.uint64) << xs
        out[:] = full.view(np.uint8).reshape(n, 8)
        return np.ascontiguousarray(out[:, :o.packed_width])
    if o.kind == "ss":
        # the truth in or out, then the k - 1 or k others: where k > (d - 1)/2 the others
        # left out instead (fewer draws), then every other bit flipped
        out = np.empty((n, o.packed_width), dtype=np.uint8)
        N = o.d - 1
        flip = 2 * o.k > N
        draws = _draws_for(N, N - o.k + 1 if flip else o.k)
        for lo, hi, sub in _pieces(rng, draws // 2 + 1):
            take = sub.random(hi - lo) < p
            m = np.where(take, o.k - 1, o.k)
            xs = x[lo:hi]
            bits = _other_positions(sub, draws, xs, o.d, N - m if flip else m)
            if flip:                                   # every bit but the truth's (0 until here)
                bits ^= _all_but_truth(o.d, xs)
            _flip_bit(bits, xs, take)
            out[lo:hi] = bits
        return out
    if o.kind in _LH:
        out = np.empty(n, dtype=[("seed", np.uint64), ("value", np.int64)])
        for lo, hi, sub in _pieces(rng, 4):
            u = sub.random((hi - lo, 4))
            abc = np.minimum((u[:, :3] * LH_PRIME).astype(np.int64), LH_PRIME - 1)
            a, b, c = abc[:, 0], abc[:, 1], abc[:, 2]
            xs = x[lo:hi]
            h = ((a + b * xs + c * ((xs * xs) % LH_PRIME)) % LH_PRIME) % o.g
            out["seed"][lo:hi] = a + LH_PRIME * (b + LH_PRIME * c)
            out["value"][lo:hi] = _grr_from_uniform(h, u[:, 3], o.g, p)
        return out
    if o.kind == "hr":
        # pure-ldp's high-privacy HR: out1 uniform on [K]; out2 = out1 with the highest bit
        # of x+1 flipped (exactly one of the two is in C_x); the one in C_x with prob p
        out = np.empty(n, dtype=np.int64)
        for lo, hi, sub in _pieces(rng, 2):
            out1 = sub.integers(0, o.K, size=hi - lo)
            u = sub.random(hi - lo)
            code = x[lo:hi] + 1
            high = np.left_shift(1, np.frexp(code.astype(float))[1] - 1).astype(np.int64)
            out2 = out1 ^ high
            in1 = _parity(out1 & code) == 0
            out[lo:hi] = np.where(u < p, np.where(in1, out1, out2), np.where(in1, out2, out1))
        return out
    raise ValueError(f"unknown kind {o.kind!r}")


# ---- aggregation -----------------------------------------------------------------------------------
#: bit v of a byte, little bit order: _BITS[b, v]
_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(float)


def _weights(counts: Any, m: int) -> np.ndarray | None:
    if counts is None:
        return None
    w = np.asarray(counts, dtype=float).ravel()
    if w.shape != (m,):
        raise ValueError(f"counts has one entry per report ({m}), not {w.shape}")
    return w


def _collected(o: Oracle, reports: Any, counts: Any) -> tuple[Any, Any, Any, int, np.ndarray | None]:
    """Reports as arrays: ``(reports, seed, value, m, weights)`` (local hashing: its seeds and
    values; the others: None, None), ``m`` reports, their weights (None: one each)."""
    seed = value = None
    if o.kind in _LH:
        seed, value = _lh_fields(reports)
        m = len(seed)
    else:
        reports = np.asarray(reports)
        m = len(reports)
    return reports, seed, value, m, _weights(counts, m)


def _lh_fields(reports: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(reports["seed"]), np.asarray(reports["value"], dtype=np.int64)


def support_counts(o: Oracle, reports: Any, counts: Sequence[float] | None = None) -> np.ndarray:
    """``C_v``: the number of reports whose support contains ``v`` (length ``d``).

    ``counts`` weights the reports (data that arrive as distinct reports with their
    counts); without it every report counts once and C is an int array.

    grr/hr: a weighted histogram (hr: then a fast Walsh-Hadamard transform, ``C_u = (N +
    (H h)[u+1]) / 2``); sue/oue/ss: the unpacked bits summed (weighted: per byte column a
    256-bin histogram times the bits of each byte value); blh/olh: hashing in blocks.

    Parameters
    ----------
    o : Oracle
    reports : array
        Reports as :func:`privatize` or :func:`parse_reports` give them.
    counts : array of float, optional
        One weight per report.

    Returns
    -------
    numpy.ndarray, shape (d,)

    Examples
    --------
    >>> o = oracle("hr", 3, 1.0)            # K = 4; C_0 = {0, 2}, C_1 = {0, 1}, C_2 = {0, 3}
    >>> support_counts(o, np.array([0, 1, 2, 3, 3]))
    array([2, 2, 3])
    """
    reports, seed, value, m, w = _collected(o, reports, counts)
    out = np.zeros(o.d, dtype=float if w is not None else np.int64)
    if m == 0:
        return out
    if o.kind == "grr":
        c = np.bincount(reports.astype(np.int64), weights=w, minlength=o.d)
        return c if w is not None else c.astype(np.int64)
    if o.kind == "hr":
        hist = np.bincount(reports.astype(np.int64), weights=w, minlength=o.K)
        total = hist.sum()
        c = (total + _fwht(hist)[1:o.d + 1]) / 2
        return c if w is not None else np.rint(c).astype(np.int64)
    if o.kind in _UE or o.kind == "ss":
        nb = o.packed_width
        if reports.ndim != 2 or reports.shape[1] != nb:
            raise ValueError(f"packed reports have shape (n, {nb})")
        if w is None:
            # unpacked in blocks of 255 rows summed in uint8 (no overflow), then in int64:
            # 2.5x faster than a histogram of the bytes
            step = 255 * max(1, _CHUNK // (255 * 8 * nb))
            for lo in range(0, m, step):
                bits = np.unpackbits(reports[lo:lo + step], axis=1, count=o.d, bitorder="little")
                full = len(bits) // 255 * 255
                if full:
                    out += bits[:full].reshape(-1, 255, o.d).sum(axis=1, dtype=np.uint8).sum(axis=0, dtype=np.int64)
                out += bits[full:].sum(axis=0, dtype=np.int64)
            return out
        hist = np.zeros(nb * 256)
        offsets = np.arange(nb, dtype=np.int64) * 256
        step = max(1, _CHUNK // nb)
        for lo in range(0, m, step):
            idx = (reports[lo:lo + step].astype(np.int64) + offsets).ravel()
            hist += np.bincount(idx, weights=np.repeat(w[lo:lo + step], nb), minlength=nb * 256)
        return (hist.reshape(nb, 256) @ _BITS).ravel()[:o.d]
    if o.kind in _LH:
        step = max(1, _LH_CHUNK // o.d)
        u = np.arange(o.d)
        for lo in range(0, m, step):
            hit = _hash_float(o, seed[lo:lo + step], u) == value[lo:lo + step, None]
            if w is None:
                out += np.count_nonzero(hit, axis=0)
            else:
                out += w[lo:lo + step] @ hit
        return out
    raise ValueError(f"unknown kind {o.kind!r}")


def _membership(o: Oracle, reports: Any) -> np.ndarray:
    """Bool ``(m, d)``: which categories each report's support contains."""
    if o.kind == "grr":
        r = np.asarray(reports, dtype=np.int64)
        return r[:, None] == np.arange(o.d)[None, :]
    if o.kind == "hr":
        return _hadamard_member(np.asarray(reports), o.d)
    if o.kind in _UE or o.kind == "ss":
        return np.unpackbits(np.asarray(reports), axis=1, count=o.d, bitorder="little").astype(bool)
    seed, value = _lh_fields(reports)
    return hash_values(o, seed) == value[:, None]


def support_sets(o: Oracle, reports: Any, counts: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct support sets of the reports, as a bool ``(m, d)`` matrix, and how many
    reports (or how much weight) each has: the sufficient statistic of :func:`ibu` (the
    likelihood of a report depends on it only through its support).

    Examples
    --------
    >>> sets, c = support_sets(oracle("grr", 3, 1.0), np.array([2, 0, 2, 2]))
    >>> sets.astype(int).tolist(), c.tolist()
    ([[1, 0, 0], [0, 0, 1]], [1.0, 3.0])
    """
    reports, seed, value, m, w = _collected(o, reports, counts)
    if w is None:
        w = np.ones(m)
    if o.kind in ("grr", "hr"):
        uniq, inv = np.unique(np.asarray(reports, dtype=np.int64), return_inverse=True)
        return _membership(o, uniq), np.bincount(inv.ravel(), weights=w, minlength=len(uniq))
    if o.kind in _UE or o.kind == "ss":
        packed = np.asarray(reports)
    else:
        step = max(1, _CHUNK // o.d)
        packed = np.concatenate([np.packbits(_membership(o, reports[lo:lo + step]), axis=1, bitorder="little")
                                 for lo in range(0, m, step)]) if m else np.zeros((0, -(-o.d // 8)), np.uint8)
    uniq, inv = np.unique(packed, axis=0, return_inverse=True)
    sets = np.unpackbits(uniq, axis=1, count=o.d, bitorder="little").astype(bool)
    return sets, np.bincount(inv.ravel(), weights=w, minlength=len(uniq))


# ---- estimators ------------------------------------------------------------------------------------
def unbiased(o: Oracle, C: Sequence[float], n: float, project: str = "none") -> np.ndarray:
    """``f_hat = (C/n - q*)/(p* - q*)`` (Wang et al. Eq. (1)), optionally projected onto
    the simplex with :func:`privspec.backends.core.projections.project`: ``clip`` (negatives to 0,
    rescaled to sum 1: multi-freq-ldpy's ``MI``) or ``euclidean`` (nearest distribution in
    L2).

    Parameters
    ----------
    o : Oracle
    C : array of float, shape (d,)
        Support counts (:func:`support_counts`).
    n : float
        Number of reports.
    project : {"none", "clip", "euclidean"}

    Returns
    -------
    numpy.ndarray, shape (d,)

    Examples
    --------
    >>> o = oracle("grr", 3, math.log(2))            # p* = 1/2, q* = 1/4
    >>> unbiased(o, [50, 30, 20], 100).round(12).tolist()
    [1.0, 0.2, -0.2]
    >>> unbiased(o, [50, 30, 20], 100, project="clip").round(4).tolist()
    [0.8333, 0.1667, 0.0]
    """
    C = np.asarray(C, dtype=float)
    if C.shape != (o.d,):
        raise ValueError(f"C has {o.d} entries, not shape {C.shape}")
    if not n > 0:
        raise ValueError("n must be positive")
    return _project((C / n - support_probs(o)[1]) / support_gap(o), project)


def _stop(err: str):
    rules = {"max_abs": lambda a, b: np.abs(a - b).max(), "mse": lambda a, b: np.square(b - a).mean(),
             "mae": lambda a, b: np.abs(a - b).mean(), "max_squared": lambda a, b: np.square(b - a).max()}
    if err not in rules:
        raise ValueError(f"unknown stopping rule {err!r}: one of {', '.join(rules)}")
    return rules[err]


def ibu(o: Oracle, supports: np.ndarray, counts: Sequence[float], n: float | None = None, iters: int = 10000,
        tol: float = 1e-12, err: str = "max_abs", pair: tuple[float, float] | None = None) -> np.ndarray:
    """The iterative Bayesian update (Agrawal & Aggarwal 2001): EM for the maximum-likelihood
    estimate of ``f`` from the distinct support sets (:func:`support_sets`) and counts.

    A report's likelihood given ``x = u`` is ``a(y)`` times ``e^eps`` if ``u`` is in
    ``S(y)`` and 1 otherwise (:func:`epsilon_of`: the ratio is the same for every report
    of a pure protocol, so the support set is sufficient).  With ``L[y, u]`` that
    likelihood (per kind: :func:`_likelihood_pair`) and ``obs = counts / sum(counts)``::

        f <- f * L^T (obs / (L f))

    from the uniform ``f``, stopped as multi-freq-ldpy's ``IBU`` does: after ``iters``
    steps or at the first step whose change (``err``: ``max_abs`` (default), ``mse``,
    ``mae``, ``max_squared``) is below ``tol`` (its defaults: 10000, 1e-12).  For grr,
    ``L`` is the d x d channel and this is multi-freq-ldpy's ``GRR_Aggregator_IBU`` step
    for step; for the other kinds multi-freq-ldpy iterates on the support counts instead
    (:func:`ibu_support_counts`), which is not this likelihood's EM.

    Parameters
    ----------
    o : Oracle
    supports : bool array, shape (m, d)
        Distinct support sets (:func:`support_sets`).
    counts : array of float, shape (m,)
        How many reports have each.
    n : float, optional
        The number of reports, checked against ``sum(counts)``.
    iters, tol, err
        The stopping rule (multi-freq-ldpy's ``nb_iter``, ``tol``, ``err_func``).
    pair : (a, b), optional
        The likelihood of a report for a category in / not in its support, up to a factor
        common to all categories, when it is not ``o``'s own (:func:`_likelihood_pair`):
        a protocol built on ``o``'s reports (longitudinal collection, random sampling plus
        fake data) whose reports keep that form.

    Returns
    -------
    numpy.ndarray, shape (d,)
        The estimate (a distribution).

    Examples
    --------
    >>> o = oracle("oue", 3, 1.0)
    >>> sets = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 0]], dtype=bool)
    >>> f = ibu(o, sets, [40, 20, 10, 30])
    >>> round(float(f.sum()), 9), bool(f[0] > f[1] > f[2])
    (1.0, True)
    """
    M = np.asarray(supports, dtype=bool)
    c = np.asarray(counts, dtype=float)
    if M.ndim != 2 or M.shape[1] != o.d or c.shape != (M.shape[0],):
        raise ValueError(f"supports is (m, {o.d}) bool and counts has m entries")
    total = c.sum()
    if total <= 0:
        raise ValueError("no reports")
    if n is not None and not math.isclose(float(n), total, rel_tol=1e-9):
        raise ValueError(f"n = {n} but the counts sum to {total}")
    if not (isinstance(iters, int) and iters > 0 and tol > 0):
        raise ValueError("iters (int) and tol need values > 0")
    change = _stop(err)
    a, b = _likelihood_pair(o) if pair is None else pair
    if o.kind == "grr":
        # the d x d channel and the report frequencies over all d codes, built and
        # multiplied as multi-freq-ldpy does (A symmetric: A, not A^T), so that the
        # iterates agree with theirs to the last bits
        obs = np.zeros(o.d)
        np.add.at(obs, np.argmax(M, axis=1), c)       # rows need not be distinct
        obs = obs / obs.sum()
        L = np.eye(o.d)
        L[L == 1] = a
        L[L == 0] = b
        back = L
    else:
        obs = c / total
        L = np.where(M, a, b)
        back = L.T
    return _iterate(L, back, obs, iters, tol, change)


def ibu_support_counts(o: Oracle, C: Sequence[float], iters: int = 10000, tol: float = 1e-12,
                       err: str = "max_abs") -> np.ndarray:
    """multi-freq-ldpy's IBU for UE, LH and SS (``*_Aggregator_IBU``): the IBU step with
    ``A = q* J + (p* - q*) I`` on the normalized support counts ``C / sum(C)``.

    For grr it is :func:`ibu`; for the others ``A`` is not a channel (its columns do not
    sum to 1) and the support counts are not a multinomial sample, so its fixed point is
    not the maximum-likelihood estimate: kept to reproduce their numbers.

    Examples
    --------
    >>> o = oracle("oue", 3, 1.0)
    >>> ibu_support_counts(o, [50, 40, 30]).round(3).tolist()
    [0.685, 0.315, 0.0]
    """
    C = np.asarray(C, dtype=float)
    if C.shape != (o.d,):
        raise ValueError(f"C has {o.d} entries, not shape {C.shape}")
    change = _stop(err)
    p, q = support_probs(o)
    A = np.eye(o.d)
    A[A == 1] = p
    A[A == 0] = q
    return _iterate(A, A, C / sum(C), iters, tol, change)


def _iterate(L: np.ndarray, back: np.ndarray, obs: np.ndarray, iters: int, tol: float, change: Any) -> np.ndarray:
    """The IBU step ``f <- f * back (obs / (L f))`` from the uniform ``f``, stopped after
    ``iters`` steps or at the first whose ``change`` is below ``tol`` (multi-freq-ldpy's
    rule), in their order of operations (so that iterates agree to the last bits)."""
    est = np.ones(L.shape[1]) / L.shape[1]
    est_t = est
    for _ in range(iters):
        est_t = est * np.dot(back, obs / np.dot(L, est))
        if change(est, est_t) < tol:
            return est_t
        est = est_t
    return est_t


def standard_errors(o: Oracle, f_hat: Sequence[float], n: float, conditional: bool = False) -> np.ndarray:
    """``sqrt(diag(covariance))`` at the plug-in ``f_hat`` (clipped to [0, 1] per category,
    as the diagonal needs only the category's own frequency): Wang et al.'s Eq. (1) with
    ``conditional=True``, plus ``f (1 - f) / n`` without.

    Examples
    --------
    >>> o = oracle("oue", 4, 1.0)
    >>> f = np.array([0.4, 0.3, 0.2, 0.1])
    >>> bool(np.allclose(standard_errors(o, f, 500), np.sqrt(np.diag(covariance(o, f, 500)))))
    True
    """
    f = np.clip(np.asarray(f_hat, dtype=float), 0.0, 1.0)
    p, q = support_probs(o)
    v = (q * (1 - q) / (p - q) ** 2 + f * (1 - p - q) / (p - q))
    if not conditional:
        v = v + f * (1 - f)
    return np.sqrt(v / n)


# ---- text form -------------------------------------------------------------------------------------
_DEC = r"(?:0|[1-9][0-9]{0,17})"


def format_reports(o: Oracle, reports: Any) -> np.ndarray:
    """One string per report: grr and hr the decimal code; sue/oue lower-case hex of the
    packed bits (``2 ceil(d/8)`` characters, byte 0 first); blh/olh ``"seed:value"``; ss
    the subset's codes in increasing order joined by ``|``.

    Examples
    --------
    >>> o = oracle("ss", 6, 1.0, k=2)
    >>> format_reports(o, np.packbits([[1, 0, 0, 0, 1, 0]], axis=1, bitorder="little")).tolist()
    ['0|4']
    >>> format_reports(oracle("oue", 10, 1.0), np.array([[5, 2]], dtype=np.uint8)).tolist()
    ['0502']
    """
    if o.kind in ("grr", "hr"):
        return np.asarray(reports, dtype=np.int64).astype(str)
    if o.kind in _LH:
        seed, value = _lh_fields(reports)
        return np.char.add(np.char.add(seed.astype(str), ":"), value.astype(str))
    packed = np.asarray(reports, dtype=np.uint8)
    m, nb = packed.shape
    if o.kind in _UE:
        return hex_chars(packed).view(f"S{2 * nb}").ravel().astype(str)
    bits = np.unpackbits(packed, axis=1, count=o.d, bitorder="little").astype(bool)
    if m and not np.all(bits.sum(axis=1) == o.k):
        raise ValueError(f"a subset-selection report has exactly k = {o.k} categories")
    codes = np.nonzero(bits)[1].reshape(m, o.k).astype(str)
    out = codes[:, 0]
    for j in range(1, o.k):
        out = np.char.add(np.char.add(out, "|"), codes[:, j])
    return np.asarray(out, dtype=str)


def hex_chars(packed: np.ndarray) -> np.ndarray:
    """Packed bits as the ASCII codes of their text (:func:`format_reports` of sue/oue): an
    ``(m, 2 nb)`` uint8 matrix, two lower-case hex digits per byte, high nibble first.

    Examples
    --------
    >>> hex_chars(np.array([[5, 162]], dtype=np.uint8)).tobytes()
    b'05a2'
    """
    packed = np.asarray(packed, dtype=np.uint8)
    m, nb = packed.shape
    chars = np.empty((m, nb, 2), dtype=np.uint8)
    # in cache-sized blocks, by arithmetic on contiguous nibbles (a table lookup gathers
    # through an index array 8x the size): '0' + v, and 39 more for v > 9 ('a' - '0' - 10)
    step = max(1, _CHUNK // nb)
    for lo in range(0, m, step):
        block = packed[lo:lo + step]
        out = chars[lo:lo + step]
        np.right_shift(block, 4, out=out[:, :, 0])
        np.bitwise_and(block, 15, out=out[:, :, 1])
        letter = out > 9
        out += 48
        out += letter * np.uint8(39)
    return chars.reshape(m, 2 * nb)


def unhex(o: Oracle, chars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sue/oue reports of texts given as ASCII codes (:func:`hex_chars`' inverse): an
    ``(m, 2 ceil(d/8))`` uint8 matrix in, ``(packed reports of the valid rows, which rows are
    valid)`` out.  A row is valid when every character is a lower-case hex digit and the
    padding bits of the last byte are 0.

    Examples
    --------
    >>> o = oracle("oue", 10, 1.0)
    >>> packed, ok = unhex(o, np.frombuffer(b"0502" b"05f2" b"0A02", dtype=np.uint8).reshape(3, 4))
    >>> packed.tolist(), ok.tolist()
    ([[5, 2]], [True, False, False])
    """
    # arithmetic, as hex_chars: v = c - '0' is a digit's value (< 10); past '9', v - 39 is
    # a letter's (10 .. 15); anything else is above 15, or below 10 past '9' (uint8 wraps)
    nib = chars - np.uint8(48)
    past = nib > 9
    nib -= past * np.uint8(39)
    ok = ~((nib > 15) | (past & (nib < 10))).any(axis=1)
    packed = (nib[:, 0::2] << 4) | nib[:, 1::2]
    if o.d % 8:   # the padding bits of the last byte are 0
        ok &= (packed[:, -1] >> (o.d % 8)) == 0
    return (packed if ok.all() else packed[ok]), ok


def parse_reports(o: Oracle, strings: Sequence[Any]) -> tuple[Any, np.ndarray]:
    """The reports of :func:`format_reports`'s strings, and the positions of the invalid
    ones (malformed, out of range, wrong width, a subset of the wrong size or not in
    increasing order, padding bits set): ``(reports of the valid strings, in order,
    bad positions)``; nothing is raised for bad data.

    Parameters
    ----------
    o : Oracle
    strings : sequence
        One string per report; anything that is not a str is invalid.

    Returns
    -------
    (reports, bad) : (array, int array)
        The valid strings' reports (as :func:`privatize` lays them out) and the positions
        of the invalid ones.

    Examples
    --------
    >>> o = oracle("olh", 5, 1.0)
    >>> r, bad = parse_reports(o, ["12:3", "7:4", "x:1", "5:0", None])
    >>> r["seed"].tolist(), r["value"].tolist(), bad.tolist()
    ([12, 5], [3, 0], [1, 2, 4])
    """
    raw = pd.Series(list(strings) if not isinstance(strings, pd.Series) else strings.tolist(), dtype=object)
    is_str = np.ones(len(raw), dtype=bool) if all_text(raw.to_numpy(dtype=object)) else \
        raw.map(lambda s: isinstance(s, str)).to_numpy(dtype=bool)
    s = raw.where(is_str, "").astype("string[pyarrow]")
    if o.kind in ("grr", "hr"):
        top = o.d if o.kind == "grr" else o.K
        ok = is_str & s.str.fullmatch(_DEC).fillna(False).to_numpy(dtype=bool)
        vals = np.full(len(s), -1, dtype=np.int64)
        vals[ok] = pd.to_numeric(s[ok]).to_numpy(dtype=np.int64)
        ok &= (vals >= 0) & (vals < top)
        return vals[ok], np.flatnonzero(~ok)
    if o.kind in _LH:
        ok = is_str & s.str.fullmatch(_DEC + ":" + _DEC).fillna(False).to_numpy(dtype=bool)
        seed = np.zeros(len(s), dtype=np.int64)
        value = np.full(len(s), -1, dtype=np.int64)
        if ok.any():
            parts = s[ok].str.split(":", n=1, expand=True)
            seed[ok] = pd.to_numeric(parts[0]).to_numpy(dtype=np.int64)
            value[ok] = pd.to_numeric(parts[1]).to_numpy(dtype=np.int64)
        ok &= (seed >= 0) & (seed < LH_PRIME ** 3) & (value >= 0) & (value < o.g)
        out = np.empty(int(ok.sum()), dtype=[("seed", np.uint64), ("value", np.int64)])
        out["seed"], out["value"] = seed[ok].astype(np.uint64), value[ok]
        return out, np.flatnonzero(~ok)
    nb = o.packed_width
    if o.kind in _UE:
        ok = is_str & s.str.fullmatch(f"[0-9a-f]{{{2 * nb}}}").fillna(False).to_numpy(dtype=bool)
        good = s[ok].to_numpy(dtype=object)
        chars = np.frombuffer("".join(good).encode("ascii"), dtype=np.uint8).reshape(len(good), 2 * nb)
        packed, valid = unhex(o, chars)
        ok[np.flatnonzero(ok)[~valid]] = False
        return packed, np.flatnonzero(~ok)
    # ss: exactly k decimal codes separated by "|", strictly increasing, below d
    pattern = _DEC + (rf"(?:\|{_DEC}){{{o.k - 1}}}" if o.k > 1 else "")
    ok = is_str & s.str.fullmatch(pattern).fillna(False).to_numpy(dtype=bool)
    idx = np.flatnonzero(ok)
    if len(idx):
        parts = s[ok].str.split("|", expand=True)
        codes = np.column_stack([pd.to_numeric(parts[j]).to_numpy(dtype=np.int64) for j in range(o.k)])
        valid = (codes[:, 0] >= 0) & (codes[:, -1] < o.d) & np.all(np.diff(codes, axis=1) > 0, axis=1)
        ok[idx[~valid]] = False
        codes = codes[valid]
    else:
        codes = np.zeros((0, o.k), dtype=np.int64)
    bits = np.zeros((len(codes), o.d), dtype=bool)
    np.put_along_axis(bits, codes, True, axis=1)
    return np.packbits(bits, axis=1, bitorder="little"), np.flatnonzero(~ok)
