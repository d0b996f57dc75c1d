"""Regression with interval-valued responses: Algorithm 1 (iterative transformations).

Model Y = f(X) + eps, eps ~ F_eps known up to scale (normal or logistic, mean 0).
Each round replaces every response by its conditional mean given the report and the
current fit (eq. 13), ``y~_i = f_(k-1)(x_i) + E(eps | eps in R_i - f_(k-1)(x_i))``, and
refits any regressor to ``(x_i, y~_i)`` (eq. 11).

The conditional means are the closed forms of supplement eq. (28), written for any
report as a union of pieces (l, r]: with G(s) = int_{-inf}^s x dF_eps(x),
``E(eps | eps in R) = sum (G(r) - G(l)) / sum (F(r) - F(l))``.  For the normal law
G(s) = -sigma phi(s / sigma); for the logistic law of scale s, G = -s H(F(./s)) with H
the binary entropy (in nats), and the second moments (for the scale) use the
dilogarithm (:func:`_logistic_S`).  Eq. (28) of the supplement writes the last numerator
term as (1 - delta - gamma){1 - G(v)}; it is (1 - delta - gamma){0 - G(v)}, since
G(inf) = E(eps) = 0, so its second line has no "+ (1 - delta - gamma)" in the
numerator.  The supplement suggests a Mills-ratio approximation of the normal CDF; it
is not needed: Phi is computed exactly, from the tail that keeps precision.

The noise scale is estimated at each round unless given: for the normal law the EM
update sigma^2 = mean E[(Y - f_k(X))^2 | report] (Remark 5 suggests
n^-1 sum (y_i - y~_i)^2, but y_i is not observed; the conditional second moment is
what it can mean); for the logistic law the same variance is matched,
s = sqrt(3 v) / pi (the logistic variance is s^2 pi^2 / 3: the supplement's
"sigma standard deviation" of a logistic noise is its scale, not its SD).

Regressors: ``linear`` (least squares with an intercept, numpy), ``random_forest``
(100 trees of depth 3, as in section IV-B) and ``gradient_boosting`` from
scikit-learn, an optional extra (``pip install 'privspec[ml]'``).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> x = rng.normal(size=400); y = 1.0 * x + rng.normal(size=400)
>>> u = rng.logistic(0, 5, size=400)                      # Case-I anchors, scale 5
>>> left = np.where(y <= u, -np.inf, u); right = np.where(y <= u, u, np.inf)
>>> fit = iterative_regression(x[:, None], left, right, "linear")
>>> bool(abs(fit.coefficients[1] - 1.0) < 0.25), fit.converged
(True, True)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.backends.interval.estimators import parametric_mle
from privspec.backends.interval.ranges import likelihood_pieces

REGRESSORS = ("linear", "random_forest", "gradient_boosting")
NOISES = ("normal", "logistic")


# ---- conditional moments of the noise --------------------------------------------------------------
def _normal_piece(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Z = P(a < e <= b), N = E[e; a < e <= b], S = E[e^2; ...] for e ~ N(0, 1), with a <= 0."""
    Z = scipy.special.ndtr(b) - scipy.special.ndtr(a)
    fa, fb = np.where(np.isfinite(a), a, 0.0), np.where(np.isfinite(b), b, 0.0)
    pa = np.where(np.isfinite(a), np.exp(-fa * fa / 2) / np.sqrt(2 * np.pi), 0.0)
    pb = np.where(np.isfinite(b), np.exp(-fb * fb / 2) / np.sqrt(2 * np.pi), 0.0)
    N = pa - pb
    S = Z + fa * pa - fb * pb
    return Z, N, S


def _logistic_G(z: np.ndarray) -> np.ndarray:
    # G(z) = F log F + (1 - F) log(1 - F), each factor from the side that keeps precision
    F, Fc = scipy.special.expit(z), scipy.special.expit(-z)
    with np.errstate(invalid="ignore"):
        g = F * scipy.special.log_expit(z) + Fc * scipy.special.log_expit(-z)
    return np.where(np.isinf(z), 0.0, g)


def _logistic_S(z: np.ndarray) -> np.ndarray:
    """int_{-inf}^z x^2 dF(x) for the standard logistic law.

    For z <= 0: z^2 F(z) - 2 [z log(1 + e^z) + Li2(-e^z)] (integration by parts, with
    d/dx [x log(1 + e^x)] = log(1 + e^x) + x F(x) and int log(1 + e^x) = -Li2(-e^x));
    for z > 0 by symmetry, pi^2/3 - S(-z).
    """
    w = -np.abs(z)
    with np.errstate(invalid="ignore"):
        e = np.exp(w)
        low = w * w * scipy.special.expit(w) - 2 * (w * np.log1p(e) + scipy.special.spence(1 + e))
    low = np.where(np.isinf(w), 0.0, low)
    return np.where(z > 0, np.pi ** 2 / 3 - low, low)


def _logistic_piece(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Z, N, S for the standard logistic law, in closed form."""
    Z = scipy.special.expit(b) - scipy.special.expit(a)
    N = _logistic_G(b) - _logistic_G(a)
    S = _logistic_S(b) - _logistic_S(a)
    return Z, N, S


def conditional_moments(piece_left: np.ndarray, piece_right: np.ndarray, owner: np.ndarray, rows: int,
                        noise: str, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """E(eps | eps in R_i) and E(eps^2 | eps in R_i) for reports given as pieces.

    A piece with l == r is the point itself.  Pieces with a > 0 are reflected
    (eps is symmetric) so that the CDF differences are taken in the lower tail.  Where
    a report's probability underflows (far in a tail), its end nearest the bulk is used.
    """
    pl = np.asarray(piece_left, dtype=float) / scale
    pr = np.asarray(piece_right, dtype=float) / scale
    point = pl == pr
    flip = pl > 0
    a = np.where(flip, -pr, pl)
    b = np.where(flip, -pl, pr)
    piece = _normal_piece if noise == "normal" else _logistic_piece
    Z, N, S = piece(a, b)
    N = np.where(flip, -N, N)
    narrow = ~point & (b - a < 1e-9 * (1 + np.abs(a)))
    with np.errstate(invalid="ignore"):
        mid = np.where(point | narrow, (pl + pr) / 2, 0.0)
    # points and very narrow pieces: e is (about) known
    Z = np.where(point | narrow, 1.0, Z)
    N = np.where(point | narrow, mid, N)
    S = np.where(point | narrow, mid ** 2, S)
    Zr = np.bincount(owner, weights=Z, minlength=rows)
    Nr = np.bincount(owner, weights=N, minlength=rows)
    Sr = np.bincount(owner, weights=S, minlength=rows)
    # underflow: the end of the report nearest the bulk of the noise
    near = np.where(np.abs(np.where(np.isfinite(pl), pl, np.inf)) < np.abs(np.where(np.isfinite(pr), pr, np.inf)),
                    pl, pr)
    near_r = np.full(rows, 0.0)
    near_r[owner] = np.where(np.isfinite(near), near, 0.0)
    ok = Zr > 1e-280
    mean = np.where(ok, Nr / np.where(ok, Zr, 1.0), near_r)
    second = np.where(ok, Sr / np.where(ok, Zr, 1.0), near_r ** 2)
    return mean * scale, second * scale ** 2


# ---- identification of the noise scale ----------------------------------------------------------
#: a variance inflation factor above this is the usual rule of thumb for collinearity
SCALE_VIF_LIMIT = 10.0


def scale_vif(X: np.ndarray, piece_left: np.ndarray, piece_right: np.ndarray, owner: np.ndarray,
              coefficients: np.ndarray, scale: float, noise: str) -> float:
    """How far the reports tell the noise scale apart from the coefficients (a VIF).

    Algorithm 1 with a linear regressor and an estimated scale is the EM of the
    interval-censored linear model, whose likelihood is
    ``prod_i sum_pieces F((r - x b) / s) - F((l - x b) / s)``.  When every anchor sits
    at the same point c the reports say only whether ``(Y - c) / s`` is positive: the
    likelihood depends on ``(b - c e_0) / s`` alone, so ``b`` and ``s`` are not
    identified one without the other, and the EM stops anywhere on that ridge.  The
    returned number is the variance inflation factor of ``log s`` in the information
    (outer product of the per-report scores) of ``(b, log s)`` at the fit:
    ``J_ss (J^-1)_ss``, 1 when the scale is learnt apart from the coefficients and
    infinite when it is not.  Over :data:`SCALE_VIF_LIMIT` the fit is weakly identified.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=2000); y = 1 + 2 * x + rng.normal(size=2000)
    >>> def vif(anchor_scale):
    ...     u = rng.logistic(0, anchor_scale, size=2000)
    ...     left, right = np.where(y <= u, -np.inf, u), np.where(y <= u, u, np.inf)
    ...     fit = iterative_regression(x[:, None], left, right, "linear", init="center")
    ...     pl, pr, owner = likelihood_pieces(left, right, (-np.inf, np.inf))
    ...     return scale_vif(x[:, None], pl, pr, owner, fit.coefficients, fit.scale, "normal")
    >>> bool(vif(5.0) < 2), bool(vif(0.01) > 100)
    (True, True)
    """
    X1 = np.column_stack([np.ones(len(X)), np.asarray(X, dtype=float)])
    _, scores = report_scores(X1, piece_left, piece_right, owner, coefficients, scale, noise)
    info = scores.T @ scores
    try:
        inverse = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        return float("inf")
    vif = float(info[-1, -1] * inverse[-1, -1])
    return vif if np.isfinite(vif) and vif > 0 else float("inf")


def report_scores(X1: np.ndarray, piece_left: np.ndarray, piece_right: np.ndarray, owner: np.ndarray,
                  coefficients: np.ndarray, scale: float, noise: str) -> tuple[np.ndarray, np.ndarray]:
    """Each report's log likelihood in the interval-censored linear model (the one Algorithm 1
    with a linear regressor fits: ``log sum_pieces F((r - x b) / s) - F((l - x b) / s)``, or
    ``log p((y - x b) / s) / s`` for a disclosed value) and its score in ``(b, log s)``
    (reports x (terms + 1)); ``X1`` with its intercept column.  A report whose probability
    underflows has log likelihood ``log 1e-300`` and score 0.

    Examples
    --------
    One Case-I report ``(-inf, 0]`` at ``b = 0``, ``s = 1``: ``log Phi(0)``, and the score in
    the intercept ``-phi(0) / Phi(0)``.

    >>> ll, sc = report_scores(np.ones((1, 1)), np.array([-np.inf]), np.array([0.0]), np.array([0]),
    ...                        np.array([0.0]), 1.0, "normal")
    >>> round(float(ll[0]), 6), round(float(sc[0, 0]), 6), float(sc[0, 1])
    (-0.693147, -0.797885, 0.0)
    """
    rows = len(X1)
    f = (X1 @ np.asarray(coefficients, dtype=float))[owner]
    za, zb = (np.asarray(piece_left) - f) / scale, (np.asarray(piece_right) - f) / scale
    if noise == "normal":
        cdf, pdf = scipy.special.ndtr, lambda z: np.exp(-z * z / 2) / np.sqrt(2 * np.pi)
        slope = lambda z: -z                                   # d log pdf / dz
        logpdf = lambda z: -z * z / 2 - 0.5 * np.log(2 * np.pi)
    else:
        cdf, pdf = scipy.special.expit, lambda z: scipy.special.expit(z) * scipy.special.expit(-z)
        slope = lambda z: -np.tanh(z / 2)
        logpdf = lambda z: scipy.special.log_expit(z) + scipy.special.log_expit(-z)
    point = za == zb
    fa, fb = np.where(np.isfinite(za), za, 0.0), np.where(np.isfinite(zb), zb, 0.0)
    pa, pb = np.where(np.isfinite(za), pdf(fa), 0.0), np.where(np.isfinite(zb), pdf(fb), 0.0)
    # a range piece's probability and its derivatives in f (the prediction) and in log s
    prob = np.where(point, 0.0, cdf(zb) - cdf(za))
    d_f = np.where(point, 0.0, -(pb - pa) / scale)
    d_s = np.where(point, 0.0, -(fb * pb - fa * pa))
    total = np.bincount(owner, prob, rows)
    g_f = np.bincount(owner, d_f, rows) / np.where(total > 0, total, 1.0)
    g_s = np.bincount(owner, d_s, rows) / np.where(total > 0, total, 1.0)
    loglik = np.log(np.maximum(total, 1e-300))
    # a disclosed value: the density p(z) / s, its log's derivatives
    at = owner[point]
    g_f[at], g_s[at] = -slope(fa[point]) / scale, -1.0 - fa[point] * slope(fa[point])
    loglik[at] = logpdf(fa[point]) - np.log(scale)
    return loglik, np.column_stack([X1 * g_f[:, None], g_s])


# ---- regressors ----------------------------------------------------------------------------------
class _Linear:
    """Least squares with an intercept."""

    def fit(self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None) -> "_Linear":
        A = np.column_stack([np.ones(len(X)), X])
        if sample_weight is not None:       # weighted least squares: rows scaled by sqrt(w)
            root = np.sqrt(np.asarray(sample_weight, dtype=float))
            A, y = A * root[:, None], y * root
        self.coef_, *_ = np.linalg.lstsq(A, y, rcond=None)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.coef_[0] + X @ self.coef_[1:]


def make_regressor(name: str, seed: int | None = None) -> Any:
    """A fresh regressor; scikit-learn ones need the ``ml`` extra."""
    if name == "linear":
        return _Linear()
    if name not in REGRESSORS:
        raise BackendError(Diagnostic("B110", f"unknown regressor '{name}'", hint=f"regressors: {', '.join(REGRESSORS)}"))
    try:
        # extra: scikit-learn (privspec[ml]) only for these regressors
        from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    except ImportError:
        raise BackendError(Diagnostic("B111", f"the {name} regressor needs scikit-learn",
                                      hint="pip install 'privspec[ml]'")) from None
    if name == "random_forest":
        return RandomForestRegressor(n_estimators=100, max_depth=3, random_state=seed)
    return GradientBoostingRegressor(random_state=seed)


# ---- Algorithm 1 -----------------------------------------------------------------------------------
@dataclass
class RegressionFit:
    """The fitted regression and its iterations."""

    regressor: str
    noise: str
    model: Any
    scale: float
    iterations: int
    converged: bool
    history: list = field(default_factory=list)   # per round: change of the fit, noise scale
    surrogate: np.ndarray | None = None           # the last y~
    scale_vif: float | None = None                # linear with an estimated scale: :func:`scale_vif`

    @property
    def coefficients(self) -> np.ndarray | None:
        """Intercept then slopes, for the linear regressor."""
        return getattr(self.model, "coef_", None) if self.regressor == "linear" else None

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict(np.asarray(X, dtype=float)), dtype=float)


def iterative_regression(X: np.ndarray, left: np.ndarray, right: np.ndarray, regressor: str = "linear",
                         *, noise: str = "normal", scale: float | None = None,
                         support: tuple[float, float] = (-np.inf, np.inf), disclose: tuple | None = None,
                         max_iter: int = 50, tol: float = 1e-3, init: str = "zero",
                         seed: int | None = 0, track: np.ndarray | None = None,
                         weights: np.ndarray | None = None) -> RegressionFit:
    """Algorithm 1 on reports ``(left, right)`` (the interval module's convention) and covariates X.

    ``init="zero"`` starts from f_0 = 0 as the paper does; ``"center"`` from the
    location of the marginal law of Y fitted to the reports (useful far from 0).  An
    unknown noise scale starts at that marginal law's scale.  Stops when the fit
    changes by less than ``tol`` times (1 + its spread), in root mean square, or after
    ``max_iter`` rounds; ``track`` (covariate rows) records the fit's predictions
    there at every round, in ``history``.

    ``weights`` (one per row, survey weights or counts of distinct rows) make every step
    weighted: the marginal start is the weighted fit, the regressor gets them as
    ``sample_weight``, and the scale update and the stopping rule's mean and spread are
    weighted means.  Weights all 1 are the unweighted iteration, exactly: they are dropped
    (scikit-learn's forest draws its bootstrap otherwise once it has a ``sample_weight``).
    """
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    n = len(X)
    if noise not in NOISES:
        raise BackendError(Diagnostic("B112", f"unknown noise law '{noise}'", hint="noise: normal | logistic"))
    pl, pr, owner = likelihood_pieces(left, right, support, disclose)
    estimate_scale = scale is None
    w = None if weights is None else np.asarray(weights, dtype=float)
    if w is not None and np.all(w == 1.0):
        w = None
    average = np.mean if w is None else (lambda a: float(np.average(a, weights=w)))
    spread = np.std if w is None else (lambda a: float(np.sqrt(average((a - average(a)) ** 2))))
    fit_options = {} if w is None else {"sample_weight": w}
    f = np.zeros(n)
    if estimate_scale or init == "center":
        # the marginal law of Y fitted to the reports (maximum likelihood, no covariates):
        # its scale bounds the noise's from above, a safe start for the EM updates
        marginal = parametric_mle(pl, pr, owner, np.ones(n) if w is None else w, noise)
        s = marginal.scale if estimate_scale else float(scale)
        if init == "center":
            f[:] = marginal.location
    else:
        s = float(scale)
    history = []
    model = None
    converged = False
    ytilde = f
    for k in range(1, max_iter + 1):
        shift = f[owner]
        mean, second = conditional_moments(pl - shift, pr - shift, owner, n, noise, s)
        ytilde = f + mean                                     # eq. (13)
        model = make_regressor(regressor, seed).fit(X, ytilde, **fit_options)  # eq. (11)
        f_new = np.asarray(model.predict(X), dtype=float)
        change = float(np.sqrt(average((f_new - f) ** 2)))
        if estimate_scale:
            # EM: E[(Y - f_k(x))^2 | report] with Y = f_(k-1)(x) + eps
            d = f - f_new
            v = float(average(second + 2 * mean * d + d ** 2))
            s = max(np.sqrt(v) if noise == "normal" else np.sqrt(3 * v) / np.pi, 1e-8)
        f = f_new
        history.append({"iteration": k, "change": change, "scale": s})
        if track is not None:
            history[-1]["prediction"] = np.asarray(model.predict(np.asarray(track, dtype=float)), dtype=float)
        if change < tol * (1 + float(spread(f))):
            converged = True
            break
    fit = RegressionFit(regressor, noise, model, s, len(history), converged, history, ytilde)
    if regressor == "linear" and estimate_scale and w is None:
        fit.scale_vif = scale_vif(X, pl, pr, owner, fit.coefficients, s, noise)
    return fit
