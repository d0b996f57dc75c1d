"""The channel core: one object for every finite mechanism.

A finite mechanism (a subset design, k-RR, any randomization matrix, a combined
variable, a product) compiles to a channel ``K[o, x] = Pr(observation o | X = x)``
with labels, exact (sympy) and numeric (numpy).  Everything below is written once,
for channels:

* moments: ``lambda = K w`` (observation probabilities), the moment features ``T``
  (for set-valued observations the indicator vectors ``1_a``; for randomized response
  the identity), ``Q = T K``, ``gamma = Q w``, ``H = T diag(lambda) T^T`` and
  ``C = H - gamma gamma^T`` (subset privacy, section III-B; for RR this is the Warner
  covariance ``diag(lambda) - lambda lambda^T``);
* the Fisher information of one observation ``I(w) = K^T diag(1/lambda) K`` and, in the
  paper's parameterization ``w = alpha + B theta``, ``I(theta) = B^T I(w) B``; the
  asymptotic covariances ``B I(theta)^-1 B^T`` (MLE, Theorem 3) and
  ``Q^-1 C Q^-T`` (MoM, Theorem 4);
* privacy: size coverage ``tau = E[L(A)]`` for set-valued observations (Def. 5),
  mutual information ``I(X; A)`` and ``H(X | A)`` in bits (Def. 6), prediction
  leakage ``R = sum_o max_x Pr(X = x, O = o)`` (Def. 7), local-DP epsilon;
* identifiability (exact rank of K; Assumption 1 for subset designs).

A product mechanism keeps its factors (``factors``); its matrix is their Kronecker
product, built only when asked for (:attr:`Channel.K`).  Observations of a product are
tuples of the factors' observations; labels join them with ``" & "``.

The same formulas serve exact and floating evaluation through a tiny algebra
(:mod:`privspec.backends.core.algebra`), so a formula is written once.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from privspec.errors import BackendError, Diagnostic
from privspec.limits import EXACT_CELL_LIMIT, SYMBOLIC_LIMIT
from privspec.backends.core.algebra import Exact, Float, algebra
from privspec.backends.core.kron import kron_apply

if TYPE_CHECKING:  # start-up: sympy (0.2-0.3 s) is imported where an exact value is computed
    import sympy


def B_matrix(p: int, exact: bool = True):
    """B = (I_{p-1}, -1)^T of ``w = alpha + B theta`` (subset privacy, section III-A)."""
    if exact:
        import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
        return sympy.Matrix.vstack(sympy.eye(p - 1), -sympy.ones(1, p - 1))
    return np.vstack([np.eye(p - 1), -np.ones((1, p - 1))])


# ---- the channel ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Channel:
    """``K[o, x] = Pr(O = o | X = x)`` with labels.

    Parameters
    ----------
    x_labels : tuple of str
        The categories of the privatized variable (for a product: the joint categories,
        labels joined with ``.``).
    obs_labels : tuple of str
        One label per possible observation (for subsets: labels joined with ``|``).
    exact_K : sympy.Matrix or None
        The exact matrix (rows: observations).  None for products (see ``factors``).
    exact_T : sympy.Matrix or None
        Moment features (p x observations): indicators of set-valued observations, or
        the identity for randomized response.
    masks : tuple of int, optional
        For set-valued observations, each observation as a bitmask over ``x_labels``.
    factors : tuple of Channel
        For a product mechanism: the factors (``K`` is their Kronecker product).
    kind : str
        ``"subset"``, ``"rr"``, ``"product"`` or ``"affine"``.
    offset : sympy.Matrix or None
        An affine channel's known part ``b``: observation probabilities are ``K w + b``
        (dummy categories of known mass, subset privacy Appendix II; see
        :func:`affine_channel`).  None for a linear channel.

    Examples
    --------
    >>> import sympy
    >>> ch = Channel(("a", "b"), ("a", "b"), sympy.Matrix([[3, 1], [1, 3]]) / 4, sympy.eye(2), kind="rr")
    >>> ch.moments(sympy.Matrix([sympy.Rational(1, 2)] * 2))["Q"]
    Matrix([
    [3/4, 1/4],
    [1/4, 3/4]])
    >>> ch.epsilon()
    log(3)
    """

    x_labels: tuple[str, ...]
    obs_labels: tuple[str, ...]
    exact_K: Any = None
    exact_T: Any = None
    masks: tuple[int, ...] | None = None
    factors: tuple["Channel", ...] = ()
    kind: str = "rr"
    note: str = ""
    offset: Any = None
    #: closed forms of the design that results quote beside the matrices (the uniform
    #: design's r_p of Eq. 6), as (name, value) pairs
    facts: tuple = ()
    #: for a partial channel (the observed reports only, of a design too large to
    #: enumerate): the closed-form channel it is cut from, which gives the moments and the
    #: MoM covariance (a partial K cannot), while K gives the likelihood of what was seen
    closed: Any = None
    #: a numeric snapshot (:meth:`numeric`): the floating-point matrices only, no sympy value
    snapshot: bool = False
    _cache: dict = field(default_factory=dict, repr=False)

    #: results symbolic in w (no population) are refused beyond this many categories
    symbolic_limit = SYMBOLIC_LIMIT
    #: the channel keeps the true value with one probability and reports each other value
    #: with another (GRR): :meth:`keep_probabilities`
    keeps_truth = False

    # -- shapes and matrices -------------------------------------------------------------
    @property
    def p(self) -> int:
        return len(self.x_labels)

    @property
    def n_obs(self) -> int:
        return len(self.obs_labels)

    @property
    def is_set_valued(self) -> bool:
        """Observations are sets (subset designs, and products of them)."""
        if self.factors:
            return all(f.is_set_valued for f in self.factors)
        return self.masks is not None

    def _derived(self, key: str, leaf, join, part) -> Any:
        """A matrix computed once: ``leaf()`` for a plain channel, the Kronecker product
        (``join``) of the factors' ``part`` for a product."""
        if key not in self._cache:
            self._cache[key] = functools.reduce(join, [part(f) for f in self.factors]) if self.factors else leaf()
        return self._cache[key]

    @property
    def K(self) -> sympy.Matrix:
        """The exact matrix (a Kronecker product for products, built on demand)."""
        import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
        return self._derived("K", lambda: self.exact_K, sympy.kronecker_product, lambda f: f.K)

    @property
    def T(self) -> sympy.Matrix:
        import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
        return self._derived("T", lambda: self.exact_T, sympy.kronecker_product, lambda f: f.T)

    @property
    def Kn(self) -> np.ndarray:
        """K as float64 (products: np.kron of the factors, exact entries evaluated once)."""
        return self._derived("Kn", lambda: _to_float(self.exact_K), np.kron, lambda f: f.Kn)

    @property
    def Tn(self) -> np.ndarray:
        return self._derived("Tn", lambda: _to_float(self.exact_T), np.kron, lambda f: f.Tn)

    def _once(self, key: str, make: Callable[[], np.ndarray]) -> np.ndarray:
        """A floating-point matrix of the channel alone, computed on first use: every
        estimate on the channel reuses it (d = 256: milliseconds of d^3 work a call)."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @property
    def Qn(self) -> np.ndarray:
        """``Q = T K`` in floating point (the method of moments' matrix, Eq. 5)."""
        return self._once("Qn", lambda: self.Tn @ self.Kn)

    @property
    def Qn_inv(self) -> np.ndarray:
        """``Q^-1`` in floating point (the MoM covariance's, Theorem 4)."""
        return self._once("Qn_inv", lambda: np.linalg.inv(self.Qn))

    @property
    def mom_map(self) -> np.ndarray:
        """``Q^-1 T`` in floating point: the MoM estimate is this matrix times the
        observations' frequencies (without dummy categories)."""
        return self._once("mom_map", lambda: np.linalg.solve(self.Qn, self.Tn))

    def index_of(self, key: Any) -> int | None:
        """The observation with this bitmask (set-valued channels) or label, or None."""
        if "index" not in self._cache:
            keys = self.masks if self.masks is not None else self.obs_labels
            self._cache["index"] = {k: i for i, k in enumerate(keys)}
        return self._cache["index"].get(key)

    def matrices(self, exact: bool):
        return (self.K, self.T) if exact else (self.Kn, self.Tn)

    def exact_ok(self) -> bool:
        """Exact (sympy) arithmetic up to :data:`~privspec.limits.EXACT_CELL_LIMIT` observations x categories."""
        return self.n_obs * self.p <= EXACT_CELL_LIMIT

    def evaluation(self, exact: bool, declared: bool) -> str:
        """How a result on this channel was evaluated, in words."""
        if not declared:
            return "exact, symbolic in w (no population declared)"
        return "exact, at the declared population" if exact else \
            f"floating point at the declared population ({self.n_obs} observations x {self.p} " \
            "categories is beyond exact arithmetic)"

    @property
    def bn(self) -> np.ndarray | None:
        """The offset ``b`` as float64 (None for a linear channel)."""
        if self.offset is None:
            return None
        return self._derived("bn", lambda: _to_float(self.offset).ravel(), None, None)

    def _offset(self, exact: bool) -> Any:
        return self.offset if exact else self.bn

    def probabilities(self, w: Any) -> np.ndarray:
        """``lambda = K w (+ b)`` in floating point: each observation's probability."""
        lam = self.matvec(w)
        return lam if self.offset is None else lam + self.bn

    def matvec(self, w: Any) -> np.ndarray:
        """``K w`` in floating point; for products mode-wise on the factors
        (:func:`privspec.backends.core.kron.kron_apply`), never forming the Kronecker matrix.

        Examples
        --------
        >>> import sympy
        >>> f = matrix_channel(("a", "b"), [[sympy.Rational(3, 4), sympy.Rational(1, 4)],
        ...                                 [sympy.Rational(1, 4), sympy.Rational(3, 4)]])
        >>> product_channel([f, f]).matvec([0.4, 0.0, 0.2, 0.4]).round(4).tolist()
        [0.2875, 0.1625, 0.2625, 0.2875]
        """
        if self.factors and "Kn" not in self._cache:
            return kron_apply([f.Kn for f in self.factors], np.asarray(w, dtype=float)).reshape(-1)
        return self.Kn @ np.asarray(w, dtype=float).reshape(-1)

    def rmatvec(self, v: Any) -> np.ndarray:
        """``K^T v`` in floating point (mode-wise for products)."""
        if self.factors and "Kn" not in self._cache:
            return kron_apply([f.Kn.T for f in self.factors], np.asarray(v, dtype=float)).reshape(-1)
        return self.Kn.T @ np.asarray(v, dtype=float).reshape(-1)

    def check_floating(self) -> None:
        """Raise B416 where the channel's floating-point matrix has lost what the exact one
        holds (grr at an epsilon below about 1e-16: every report equally likely in
        doubles); the float paths (estimates, simulation) call it first.  A snapshot
        (:meth:`numeric`) was checked when it was made."""
        for f in self.factors:
            f.check_floating()

    def numeric(self) -> "Channel":
        """A numeric snapshot: this channel (of the same class) with its exact values dropped
        and its floating-point matrices kept, built once.

        The estimators, covariances and intervals run on it unchanged and to the same bits
        (it holds the very arrays ``Kn``, ``Tn``, ``bn`` of this channel, and those already
        computed from them, such as ``Qn`` and ``mom_map``); the offset of dummy categories
        is ``bn``; the factors of a product are snapshots.  It holds no sympy object, so it
        pickles and loads without sympy (a compiled plan:
        :mod:`privspec.backends.finite.estimate_plan`).  Raises what :attr:`Kn` and
        :meth:`check_floating` raise (B009 for a parameter without a value, B416), and
        ValueError for a partial channel (:attr:`closed`), which its data define.

        Examples
        --------
        >>> import pickle, sympy
        >>> ch = matrix_channel(("a", "b"), [[sympy.Rational(3, 4), sympy.Rational(1, 4)],
        ...                                  [sympy.Rational(1, 4), sympy.Rational(3, 4)]])
        >>> snap = pickle.loads(pickle.dumps(ch.numeric()))
        >>> snap.exact_K is None, bool((snap.avar_mom([0.3, 0.7]) == ch.avar_mom([0.3, 0.7])).all())
        (True, True)
        """
        if self.snapshot:
            return self
        if "numeric" not in self._cache:
            if self.closed is not None:
                raise ValueError("a partial channel (the observed reports only) has no snapshot: its data define it")
            self.check_floating()
            _ = self.Kn, self.Tn, self.bn  # computed once, here, and shared with the snapshot
            kept = {k: v for k, v in self._cache.items() if isinstance(k, str) and k in SNAPSHOT_KEYS}
            self._cache["numeric"] = dataclasses.replace(
                self, exact_K=None, exact_T=None, offset=self.bn, facts=(), snapshot=True, _cache=kept,
                factors=tuple(f.numeric() for f in self.factors))
        return self._cache["numeric"]

    def at(self, values: dict) -> "Channel":
        """This channel with the parameters in ``values`` replaced by their values (built
        once per set of values).

        Examples
        --------
        >>> import sympy
        >>> e = sympy.Symbol("e", positive=True)
        >>> ch = matrix_channel(("a", "b"), [[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]])
        >>> ch.at({e: 3}).K
        Matrix([
        [3/4, 1/4],
        [1/4, 3/4]])
        """
        if not values:
            return self
        import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
        key = ("at", frozenset(values.items()))
        if key not in self._cache:
            if self.factors:
                self._cache[key] = product_channel([f.at(values) for f in self.factors])
            else:
                facts = tuple((k, v.subs(values) if isinstance(v, sympy.Basic) else v) for k, v in self.facts)
                self._cache[key] = dataclasses.replace(
                    self, exact_K=self.exact_K.subs(values), facts=facts, _cache={},
                    offset=None if self.offset is None else self.offset.subs(values))
        return self._cache[key]

    def is_symbolic(self) -> bool:
        return any(bool(getattr(x, "free_symbols", None)) for f in (self.factors or (self,))
                   for x in (f.exact_K if f.exact_K is not None else []))

    # -- moments (section III-B) ------------------------------------------------------------
    def mom_solve(self, gamma: np.ndarray) -> np.ndarray:
        """``Q^-1 gamma`` in floating point (the method of moments, Eq. 5)."""
        if self.closed is not None:
            return self.closed.mom_solve(gamma)
        return np.linalg.solve(self.Qn, gamma)

    def moments(self, w: Any) -> dict[str, Any]:
        """``lambda = K w``, ``Q = T K``, ``gamma = Q w``, ``H``, ``C = H - gamma gamma^T``."""
        if self.closed is not None:
            return self.closed.moments(w)
        A = algebra(w)
        K, T = self.matrices(A is Exact)
        w = A.asmatrix(w)
        lam = K @ w if A is Float else K * w
        if self.offset is not None:  # affine: lambda = K w + b, and Q (the part in w) stays T K
            lam = lam + (self.bn.reshape(-1, 1) if A is Float else self.offset)
        Q = self.Qn if A is Float else T * K
        gamma = T @ lam if A is Float else T * lam  # = Q w (+ T b)
        # T diag(lambda) T^T: the columns of T scaled (the same numbers as the product by the
        # diagonal matrix, whose other terms are zeros, without its d^3 work)
        H = ((T * lam.T) @ T.T) if A is Float else T * A.diag(lam) * T.T
        C = H - A.outer(gamma, gamma) if A is Float else H - gamma * gamma.T
        return {"lambda": lam, "Q": Q, "gamma": gamma, "H": H, "C": C}

    def avar_mom(self, w: Any) -> Any:
        """Asymptotic covariance of sqrt(n)(w_MoM - w): ``Q^-1 C Q^-T`` (Theorem 4)."""
        if self.closed is not None:
            return self.closed.avar_mom(w)
        A = algebra(w)
        m = self.moments(w)
        Qi = self.Qn_inv if A is Float else A.inv(m["Q"])
        return Qi @ m["C"] @ Qi.T if A is Float else A.simplify(Qi * m["C"] * Qi.T)

    def covariance_closed_form(self, w: Any) -> Any:
        """The MoM covariance in the design's own closed form where it has one (GRR:
        Warner's, see :class:`~privspec.backends.core.grr_channel.GRRChannel`), else :meth:`avar_mom`: the same matrix,
        written as the papers write it."""
        return self.avar_mom(w)

    def keep_probabilities(self) -> tuple[float, float] | None:
        """``(p, q)`` for a channel that keeps the true value with probability p and reports
        each other value with probability q (GRR); None for any other channel."""
        return None

    def epsilon_reason(self) -> str:
        """Why :meth:`epsilon` is what it is, in words."""
        return "max over reports of log(max_x Pr(report | x) / min_x Pr(report | x))"

    # -- likelihood and Fisher information (section III-A) ---------------------------------------
    def fisher_w(self, w: Any) -> Any:
        """Fisher information of one observation in w: ``K^T diag(1/lambda) K`` (observations with
        lambda = 0 carry no information and are left out)."""
        A = algebra(w)
        K, _ = self.matrices(A is Exact)
        w = A.asmatrix(w)
        b = self._offset(A is Exact)
        if A is Float:
            lam = (K @ w).ravel() + (0.0 if b is None else b)
            keep = lam > 0
            Kk = K[keep]
            return Kk.T @ (Kk / lam[keep, None])
        lam = K * w if b is None else K * w + b
        rows = [i for i in range(K.rows) if lam[i] != 0]
        Kk = K.extract(rows, list(range(K.cols)))
        return A.simplify(Kk.T * A.diag(A.recip([lam[i] for i in rows])) * Kk)

    def fisher_theta(self, w: Any) -> Any:
        """``I(theta) = B^T I(w) B`` for ``w = alpha + B theta`` (the paper's parameterization)."""
        A = algebra(w)
        B = B_matrix(self.p, A is Exact)
        Iw = self.fisher_w(w)
        return B.T @ Iw @ B if A is Float else A.simplify(B.T * Iw * B)

    def avar_mle(self, w: Any) -> Any:
        """Asymptotic covariance of sqrt(n)(w_MLE - w): ``B I(theta)^-1 B^T`` (Theorem 3)."""
        A = algebra(w)
        B = B_matrix(self.p, A is Exact)
        Ii = A.inv(self.fisher_theta(w))
        return B @ Ii @ B.T if A is Float else A.simplify(B * Ii * B.T)

    def loglik(self, w: np.ndarray, counts: np.ndarray) -> float:
        """``sum_o n_o log (K w)_o`` (Eq. 3), on counts per observation."""
        lam = self.probabilities(w)
        nz = counts > 0
        with np.errstate(divide="ignore"):
            return float(np.sum(counts[nz] * np.log(lam[nz])))

    # -- privacy (section II-B) -------------------------------------------------------------------
    def size_coverage(self, w: Any) -> Any:
        """``tau = E[L(A)] = sum_a Pr(A = a) 1_a^T w`` (Def. 5); set-valued observations only."""
        if not self.is_set_valued:
            raise ValueError("size coverage needs set-valued observations")
        A = algebra(w)
        m = self.moments(w)
        lam, T = m["lambda"], (self.T if A is Exact else self.Tn)
        size = (T.T @ A.asmatrix(w)) if A is Float else T.T * A.asmatrix(w)
        if A is Float:
            return float(lam.ravel() @ size.ravel())
        import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
        return sympy.expand(sum(lam[i] * size[i] for i in range(self.n_obs)))

    def joint(self, w: Any) -> Any:
        """``Pr(X = x, O = o) = K[o, x] w_x`` (observations x categories)."""
        A = algebra(w)
        K, _ = self.matrices(A is Exact)
        if A is Float:
            return K * np.asarray(w, dtype=float).ravel()[None, :]
        w = A.asmatrix(w)
        return K * A.diag(list(w))

    def mutual_information(self, w: Any) -> Any:
        """``I(X; O) = sum_{x,o} Pr(x, o) log2( K[o, x] / lambda_o )`` in bits (Def. 6)."""
        A = algebra(w)
        J = self.joint(w)
        if A is Float:
            lam = J.sum(axis=1, keepdims=True)
            K = self.Kn
            with np.errstate(divide="ignore", invalid="ignore"):
                terms = np.where(J > 0, J * np.log2(np.where(J > 0, K / lam, 1.0)), 0.0)
            return float(terms.sum())
        K = self.K
        lam = [sum(J[i, :]) for i in range(J.rows)]
        total = 0
        for i in range(J.rows):
            for j in range(J.cols):
                if J[i, j] != 0:
                    total += J[i, j] * A.log2(K[i, j] / lam[i])
        return total

    def entropy(self, w: Any) -> Any:
        """``H(X)`` in bits."""
        A = algebra(w)
        if A is Float:
            v = np.asarray(w, dtype=float).ravel()
            v = v[v > 0]
            return float(-(v * np.log2(v)).sum())
        return -sum(x * A.log2(x) for x in A.asmatrix(w) if x != 0)

    def prediction_leakage(self, w: Any) -> Any:
        """``R(X; O) = sum_o max_x Pr(X = x, O = o)`` (Def. 7): the best guess's accuracy."""
        A = algebra(w)
        J = self.joint(w)
        if A is Float:
            return float(J.max(axis=1).sum())
        import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
        return sum(sympy.Max(*[J[i, j] for j in range(J.cols)]) for i in range(J.rows))

    def epsilon(self) -> Any:
        """Local-DP epsilon: ``max_o log( max_x K[o, x] / min_x K[o, x] )``; ``oo`` when some
        observation is impossible for one value and possible for another."""
        import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
        if self.factors:  # sequential composition: epsilons add up
            return sympy.Add(*[f.epsilon() for f in self.factors])
        closed = dict(self.facts).get("epsilon")
        if closed is not None:  # the design's own closed form (GRR: |eps|)
            return closed
        K = self.exact_K
        best = sympy.Integer(0)
        for i in range(K.rows):
            row = [K[i, j] for j in range(K.cols)]
            if all(x == 0 for x in row):
                continue
            if any(x == 0 for x in row):
                return sympy.oo
            ratio = sympy.simplify(sympy.log(sympy.Max(*row) / sympy.Min(*row)))
            best = ratio if best == 0 else sympy.Max(best, ratio)
        return sympy.simplify(best)

    # -- identifiability ---------------------------------------------------------------------------
    def rank(self) -> int:
        """Exact rank of K (the channel determines w iff rank = p)."""
        if self.factors:
            return int(np.prod([f.rank() for f in self.factors]))
        return int(self.exact_K.rank(simplify=True))

    def identifiable(self) -> tuple[bool, str]:
        """Whether w is determined by the distribution of observations, and why."""
        r = self.rank()
        if self.offset is not None:
            return r == self.p, (f"with the dummies' known mass alpha, w enters the reports through "
                                 f"(1 - 2 alpha) K_real, of rank {r} {'=' if r == self.p else '<'} p = {self.p}")
        if r == self.p:
            return True, f"K has full column rank {r} = p (Assumption 1 holds)"
        return False, (f"K has rank {r} < p = {self.p}: the observation distribution does not "
                       "determine w (Assumption 1 fails)")


#: what a snapshot keeps of a channel's cache (:meth:`Channel.numeric`): floating-point values only
SNAPSHOT_KEYS = ("Kn", "Tn", "bn", "Qn", "Qn_inv", "mom_map", "index", "inverse_form")


def _to_float(m: Any) -> np.ndarray:
    """The exact matrix ``m`` in float64, each distinct entry evaluated once (a GRR matrix
    has two: entry by entry, d = 256 took 8 s), to the same double as ``m.evalf(17)``."""
    if isinstance(m, np.ndarray):
        return m.astype(float)
    if m.free_symbols:
        _symbolic_error(m)
    values: dict = {}

    def number(x: Any) -> float:
        if x not in values:
            values[x] = float(x.evalf(17))
        return values[x]

    return np.array([[number(x) for x in row] for row in m.tolist()], dtype=float).reshape(m.shape)


def _symbolic_error(m: Any):
    names = sorted(map(str, m.free_symbols))
    raise BackendError(Diagnostic("B009", f"the mechanism depends on the parameter{'s' if len(names) > 1 else ''} "
                                  f"{', '.join(names)}, which has no value: this needs numbers",
                                  hint=f"give it a value: parameter {names[0]} > 0 = ..."))


# ---- building channels ---------------------------------------------------------------------
def subset_channel(labels: Sequence[str], mu: dict[frozenset, Any], note: str = "") -> Channel:
    """The channel of a conditional design ``mu`` (Def. 2): ``K[a, x] = mu_a 1{x in a}``.

    Observations are the subsets with ``mu_a > 0``, ordered by size then by the declared
    order of their categories; each is labelled ``"x|y|z"`` and kept as a bitmask.

    Examples
    --------
    >>> import sympy
    >>> ch = subset_channel(("a", "b", "c"), {frozenset("ab"): sympy.Rational(1, 2),
    ...     frozenset("bc"): sympy.Rational(1, 2), frozenset("ac"): sympy.Rational(1, 2)})
    >>> ch.obs_labels
    ('a|b', 'a|c', 'b|c')
    >>> ch.K
    Matrix([
    [1/2, 1/2,   0],
    [1/2,   0, 1/2],
    [  0, 1/2, 1/2]])
    """
    import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
    index = {lab: i for i, lab in enumerate(labels)}
    subsets = sorted((a for a, m in mu.items() if m != 0),
                     key=lambda a: (len(a), sorted(index[x] for x in a)))
    masks = tuple(sum(1 << index[x] for x in a) for a in subsets)
    p = len(labels)
    K = sympy.Matrix(len(subsets), p, lambda i, j: mu[subsets[i]] if masks[i] >> j & 1 else 0)
    T = sympy.Matrix(p, len(subsets), lambda j, i: 1 if masks[i] >> j & 1 else 0)
    obs = tuple("|".join(labels[j] for j in range(p) if m >> j & 1) for m in masks)
    return Channel(tuple(labels), obs, K, T, masks, kind="subset", note=note)


def matrix_channel(labels: Sequence[str], P: Any, note: str = "", facts: tuple = ()) -> Channel:
    """Randomized response with ``P[u][v] = Pr(Y = v | X = u)``: ``K = P^T``, ``T = I``."""
    import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
    P = sympy.Matrix(P)
    return Channel(tuple(labels), tuple(labels), P.T, sympy.eye(len(labels)), None, kind="rr", note=note,
                   facts=facts)


def kuk_channel(labels: Sequence[str], P: Any, reports: Sequence[str], note: str = "") -> Channel:
    """Kuk's card design (:class:`~privspec.model.randomized_response.KukResponse`): ``K = P^T`` with one
    column per category and one row per number of red cards ``j = 0 .. k``.  Its moment
    features are the shares of the draws that point to each category, ``T = [j/k; 1 - j/k]``,
    so that ``Q = T K = [[p1, p2], [1 - p1, 1 - p2]]`` and the MoM is Kuk's estimator
    ``(mean(j)/k - p2) / (p1 - p2)`` of the first category's share.

    Examples
    --------
    >>> import sympy
    >>> ch = kuk_channel(("y", "n"), [[sympy.Rational(9, 16), sympy.Rational(3, 8), sympy.Rational(1, 16)],
    ...                               [sympy.Rational(1, 16), sympy.Rational(3, 8), sympy.Rational(9, 16)]],
    ...                  ("0", "1", "2"))
    >>> ch.T * ch.K
    Matrix([
    [1/4, 3/4],
    [3/4, 1/4]])
    """
    import sympy  # start-up: only exact values need it (a floating-point estimate never loads it)
    k = len(reports) - 1
    T = sympy.Matrix(2, k + 1, lambda u, j: sympy.Rational(j, k) if u == 0 else 1 - sympy.Rational(j, k))
    return Channel(tuple(labels), tuple(reports), sympy.Matrix(P).T, T, None, kind="rr",
                   note=note or "kuk's card design")


def affine_channel(ch: Channel, p: int, alpha: Any, note: str = "") -> Channel:
    """The channel in the real categories of a design with two dummy categories of known
    mass ``alpha`` each (subset privacy, Appendix II): ``ch`` is the channel on the
    enlarged domain (the ``p`` real categories, then the two dummies), whose population is
    ``((1 - 2 alpha) w, alpha, alpha)``, so the report probabilities are affine in w:

        lambda = (1 - 2 alpha) K_real w + alpha (K_d1 + K_d2)  =  K_eff w + b.

    Moments, Fisher information, covariances, the likelihood and identifiability of the
    affine channel are the linear channel's formulas with ``b`` added to ``lambda``
    (:class:`Channel`); the MoM solves the real categories' equations ``T_r (K_eff w + b)
    = gamma``, EM holds the dummies' mass fixed (:mod:`privspec.backends.core.estimators`).

    Examples
    --------
    >>> import sympy
    >>> big = subset_channel(("a", "b", "d1", "d2"), {frozenset("ab"): sympy.Rational(1, 2),
    ...     frozenset({"a", "d1"}): sympy.Rational(1, 2), frozenset({"b", "d2"}): sympy.Rational(1, 2),
    ...     frozenset({"d1", "d2"}): sympy.Rational(1, 2)})
    >>> aff = affine_channel(big, 2, sympy.Rational(1, 5))
    >>> aff.K.T, aff.offset.T
    (Matrix([
    [3/10, 3/10,    0, 0],
    [3/10,    0, 3/10, 0]]), Matrix([[0, 1/10, 1/10, 1/5]]))
    """
    K, T = ch.K, ch.T
    K_eff = (1 - 2 * alpha) * K[:, :p]
    b = alpha * (K[:, p] + K[:, p + 1])
    return Channel(ch.x_labels[:p], ch.obs_labels, K_eff, T[:p, :], ch.masks, kind="affine",
                   note=note or "dummy categories of known mass (Appendix II)", offset=b)


def product_channel(factors: Sequence[Channel]) -> Channel:
    """The product mechanism (Def. 8): independent factors, ``K = K_1 (x) ... (x) K_d``."""
    x_labels = tuple(".".join(t) for t in itertools.product(*(f.x_labels for f in factors)))
    obs = tuple(" & ".join(t) for t in itertools.product(*(f.obs_labels for f in factors)))
    return Channel(x_labels, obs, None, None, None, tuple(factors), kind="product")
