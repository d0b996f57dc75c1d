"""The test of independence of two variables that are not two whole factors of a product
mechanism: both inside one factor (``test independence(a, b)`` from ``grr(a * b)``), or a
part of a combined variable against another factor (``a`` against ``c`` from
``product(grr(a * b), grr(c))``).

The tests of :mod:`.independence` permute the table of two factors' reports: exact because,
under independence and a product mechanism, the report pairs are independent.  Here they
are not: one factor's report of ``(a, b)`` carries both variables through one
randomization (a GRR report of the pair is dependent across its parts even when ``a`` and
``b`` are independent), and its report of ``(a, b)`` against ``c`` tests the pair, not
``a``, against ``c`` (``b`` may depend on ``c`` under the null).  So the test is made on the
joint of the two variables: the method of moments on the mechanism's channel (linear in
the report shares ``lambda_hat``, ``w_hat = A lambda_hat`` with ``A = Q^-1 T``, so its
covariance ``A (diag(lambda_hat) - lambda_hat lambda_hat^T) A^T / n`` holds wherever the
estimate lies, the boundary included, where independence tests often sit), summed to the
two variables' table by the labels (:func:`pair_map`, the other components summed out),
and the Wald test of the independence contrasts ``w_ij - r_i c_j`` (:func:`wald_statistic`,
the statistic of the weighted test of :mod:`.weighted_independence` without the design),
chi-square with ``(p - 1)(q - 1)`` degrees of freedom in the limit.  The
query's ``pearson``, ``lrt``, ``lrt_mom`` and ``bonferroni`` are statistics of a table of
two factors' reports, which does not exist here; all are this test, and the result says so.
An explicit ``calibrate permutation`` is refused (B018): no re-pairing of reports is
exchangeable under this null.  Its size at 5% in seeded simulations of n = 2000
(tests/test_joint_within_factors.py, 1,000 samples each): 0.061 for ``a`` against ``b``
inside ``grr(a * b)``, 0.056 for ``a`` against ``c``, 0.050 for ``a`` against ``c`` where
``b`` depends on ``c`` (where main's test of the pair rejected 0.989).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import ProductMechanism, Query
from privspec.results.kinds import HypothesisTest
from privspec.results.result import Result
from privspec.results.values import TestResult
from privspec.backends.core.compile import channel_in_w
from privspec.backends.finite.estimates import components_of, joint_map

METHOD = "Wald test of independence on the method-of-moments joint (the variables share a factor)"


def between_factors(q: Query) -> bool:
    """Whether ``q``'s two variables are two whole factors' variables of its product
    mechanism (the report-table tests of :mod:`.independence` apply), not parts of one."""
    mech = q.mechanism
    if not isinstance(mech, ProductMechanism):
        return False
    whole = [tuple(f.variable.components()) for f in mech.factors]
    x, y = q.estimand.variables
    return (tuple(x.components()) in whole and tuple(y.components()) in whole
            and tuple(x.components()) != tuple(y.components()))


def joint_moments(mech: Any, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """The method-of-moments estimate of the mechanism's categories from counts per report
    (of its own channel), ``n`` times its covariance at the observed shares, and the
    categories' labels.

    Examples
    --------
    >>> from privspec import load
    >>> spec = load('spec "s"\\nvariable a: categorical {a0, a1}\\nmechanism m = grr(a, epsilon = 1)')
    >>> w, V, labels = joint_moments(spec.model.mechanisms["m"], np.array([60.0, 40.0]))
    >>> labels, bool(np.isclose(w.sum(), 1.0)), bool(np.allclose(V, V.T))
    (('a0', 'a1'), True, True)
    """
    ch = channel_in_w(mech)
    ch.check_floating()
    counts = np.asarray(counts, dtype=float)
    n = counts.sum()
    lam = counts / n
    if ch.closed is not None:
        raise BackendError(Diagnostic("B003", "an independence test within a factor needs the design's matrices, "
                                              "too large here (a uniform subset design on many categories)",
                                      hint="a design with fewer categories"))
    Q, T = ch.Tn @ ch.Kn, ch.Tn
    A = np.linalg.solve(Q, T)
    # dummy categories (an affine channel, lambda = K w + b): the MoM solves T (lambda - b) = Q w
    w = A @ (lam - (ch.bn if ch.offset is not None else 0.0))
    V = (A * lam) @ A.T - np.outer(A @ lam, A @ lam)
    return w, V, tuple(ch.x_labels)


def wald_effect(mech: Any, w: np.ndarray, x: Any, y: Any, subs: dict | None = None) -> tuple[float, int]:
    """The Wald test's noncentrality per respondent at the mechanism's categories' shares
    ``w`` (:func:`joint_independence`'s statistic over n in the limit: ``d' (D V D')^-1 d``
    with ``V`` the MoM's asymptotic covariance at ``w``) and its degrees of freedom, for
    planning the power of a test of ``x`` against ``y`` sharing a factor; ``subs``: the
    parameters' values, where the mechanism has parameters.

    Examples
    --------
    >>> from privspec import load
    >>> spec = load('spec "s"\\nvariable a: categorical {a0, a1}\\nvariable b: categorical {b0, b1}\\n'
    ...             'mechanism m = grr(a * b, epsilon = 2)')
    >>> m, (a, b) = spec.model.mechanisms["m"], (spec.model.variables[v] for v in "ab")
    >>> effect, df = wald_effect(m, np.outer([0.4, 0.6], [0.5, 0.5]).ravel(), a, b)
    >>> round(effect, 12), df                                 # independent: no effect
    (0.0, 1)
    >>> round(wald_effect(m, np.array([0.3, 0.1, 0.2, 0.4]), a, b)[0], 4) > 0
    True
    """
    ch = channel_in_w(mech)
    if ch.closed is not None:
        raise BackendError(Diagnostic("B003", "an independence test within a factor needs the design's matrices, "
                                              "too large here (a uniform subset design on many categories)",
                                      hint="a design with fewer categories"))
    ch = ch.at(subs) if subs else ch
    w = np.asarray(w, dtype=float)
    V = np.asarray(ch.avar_mom(w), dtype=float)
    L, shape = pair_map(tuple(ch.x_labels), components_of(mech), x, y)
    return wald_statistic((L @ w).reshape(shape), L @ V @ L.T)


def joint_independence(q: Query, counts: np.ndarray) -> Result:
    """The Wald test of ``q`` (two variables sharing a factor) on counts per report of its
    mechanism (the module docstring)."""
    cal = q.calibrate
    if cal is not None and cal.name == "permutation":
        raise BackendError(Diagnostic("B018", f"query '{q.name}': no permutation calibration when "
                                              f"{q.estimand.variables[0].name} and {q.estimand.variables[1].name} "
                                              "are not two whole factors of the product: re-pairing reports is "
                                              "exact only between factors",
                                      hint="drop the calibrate clause: the Wald test on the method-of-moments "
                                           "joint, with its chi-square limit"))
    x, y = q.estimand.variables
    w, V, labels = joint_moments(q.mechanism, counts)
    n = float(np.sum(counts))
    L, shape = pair_map(labels, components_of(q.mechanism), x, y)
    stat, k = wald_statistic((L @ w).reshape(shape), L @ V @ L.T / n)
    p_value = float(scipy.stats.chi2.sf(stat, k))
    return HypothesisTest(TestResult(METHOD, stat, float(k), p_value), n=int(round(n)),
                          null=f"{x.name} and {y.name} are independent",
                          calibration=f"chi-square({k}) (the Wald test's limit)",
                          note=f"the query's '{q.method.name}' is a statistic of two factors' report table; "
                               f"{x.name} and {y.name} share a factor, so the test is the Wald test of the "
                               "independence contrasts on the method-of-moments joint (other variables summed "
                               "out), its covariance at the observed report shares")


def pair_map(labels: tuple[str, ...], components: list[str], x: Any, y: Any) -> tuple[np.ndarray, tuple[int, int]]:
    """The 0/1 map from the mechanism's joint (its categories ``labels``, each a '.'-joined
    tuple over ``components``, the product's variables' components in order) to the table of
    ``x`` by ``y`` (rows ``x``; the other components summed out), whether ``x`` and ``y``
    are two factors' variables or parts of one factor's combined variable, and the table's
    shape.  B017 where a category's label does not split into the components (a label
    with a '.' of its own).

    Examples
    --------
    A factor over ``a * b`` and one over ``c``: ``a`` by ``c`` sums ``b`` out.

    >>> from types import SimpleNamespace as V
    >>> a = V(name="a", labels=("0", "1"), components=lambda: ("a",))
    >>> c = V(name="c", labels=("u", "v"), components=lambda: ("c",))
    >>> labels = tuple(f"{i}.{j}.{k}" for i in "01" for j in "01" for k in "uv")
    >>> L, shape = pair_map(labels, ["a", "b", "c"], a, c)
    >>> shape, L[0].tolist()
    ((2, 2), [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    """
    L = joint_map(labels, components, (x, y))
    if L is None:
        raise BackendError(Diagnostic("B017", f"no independence test of {x.name} and {y.name} here: a category "
                                              "of the mechanism does not split into the variables' labels",
                                      hint="labels without '.'"))
    return L, (len(x.labels), len(y.labels))


def wald_statistic(W: np.ndarray, V: np.ndarray) -> tuple[float, int]:
    """``d' (D V D')^-1 d`` of the independence contrasts of a ``p x q`` joint ``W`` with
    covariance ``V`` (of ``W.ravel()``), and its degrees of freedom ``(p - 1)(q - 1)``.

    Examples
    --------
    An independent joint has statistic 0:

    >>> W = np.outer([0.4, 0.6], [0.3, 0.7])
    >>> stat, df = wald_statistic(W, np.eye(4) * 1e-3)
    >>> round(stat, 12), df
    (0.0, 1)
    """
    p, q = W.shape
    r, c = W.sum(axis=1), W.sum(axis=0)
    rows = [(i, j) for i in range(p - 1) for j in range(q - 1)]
    d = np.array([W[i, j] - r[i] * c[j] for i, j in rows])
    D = np.zeros((len(rows), p * q))
    for k, (i, j) in enumerate(rows):
        grad = np.zeros((p, q))
        grad[i, j] += 1.0
        grad[i, :] -= c[j]
        grad[:, j] -= r[i]
        D[k] = grad.ravel()
    S = D @ V @ D.T
    try:
        stat = float(d @ np.linalg.solve(S, d))
    except np.linalg.LinAlgError:
        raise BackendError(Diagnostic("B020", "the independence contrasts' covariance is singular",
                                      hint="more respondents (or clusters), or fewer categories")) from None
    return stat, len(rows)
