"""``privspec simulate`` for finite mechanisms: replications drawn as multinomial counts
per observation (never individual respondents), each estimator compared with its
asymptotic theory."""
from __future__ import annotations

import numpy as np
from scipy import stats

from ..errors import BackendError, Diagnostic
from ..model import ModelGraph, Query
from ..results import Matrix, Result, Vector
from .compile import channel_of
from .estimators import estimate
from .finite import Truth, Z95, _real_labels, avar_matrix, fit_with_avar, independence_on_counts, marginal_map


def simulate_query(model: ModelGraph, q: Query, *, n: int, reps: int, seed: int | None) -> Result:
    """Empirical against analytic for one query, from ``reps`` replications of size ``n``."""
    t = Truth(model, q.mechanism)
    if not t.declared:
        raise BackendError(Diagnostic("B001", f"simulate needs a population for "
                                      f"{', '.join(v.name for v in q.mechanism.variables)}"))
    ch = t.channel
    w_true = t.numeric_w()
    lam = ch.Kn @ w_true
    lam = np.maximum(lam, 0.0)
    lam /= lam.sum()
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, lam, size=reps).astype(float)
    if q.kind == "test":
        return _simulate_test(q, draws, n, reps, seed)
    estimates = []
    covered = []
    V_true, labels = avar_matrix(t, q)
    V_true = np.array(V_true.evalf(17).tolist(), dtype=float) if not isinstance(V_true, np.ndarray) else V_true
    target = np.array([float(x) for x in t.w_real])
    variable = q.estimand.variables[0] if len(q.estimand.variables) == 1 else None
    if variable is not None:
        M = marginal_map(_real_labels(t.mech), q.mechanism, variable)
        if M is not None:
            target = M @ target
    skipped = 0
    for counts in draws:
        try:
            w_hat, Vh, _, _ = fit_with_avar(q, ch, counts)
        except (np.linalg.LinAlgError, ValueError):
            skipped += 1
            continue
        estimates.append(w_hat)
        if Vh is not None:
            se = np.sqrt(np.maximum(np.diag(Vh), 0) / n)
            covered.append(np.abs(w_hat - target) <= Z95 * se)
    if not estimates:
        raise BackendError(Diagnostic("B005", "every replication failed to produce an estimate"))
    E = np.array(estimates)
    emp_cov = np.cov(E, rowvar=False) * n
    loss = n * np.sum((E - target) ** 2, axis=1)
    value = {
        "mean": Vector(tuple(labels), tuple(E.mean(axis=0))),
        "truth": Vector(tuple(labels), tuple(target)),
        "bias": Vector(tuple(labels), tuple(E.mean(axis=0) - target)),
        "n_cov_empirical": Matrix(tuple(labels), tuple(labels), emp_cov),
        "n_cov_analytic": Matrix(tuple(labels), tuple(labels), V_true),
        "scaled_loss_mean": float(loss.mean()),
        "scaled_loss_se": float(loss.std(ddof=1) / np.sqrt(len(loss))) if len(loss) > 1 else float("nan"),
        "scaled_loss_limit": float(np.trace(V_true)),
    }
    if covered:
        value["ci95_coverage"] = Vector(tuple(labels), tuple(np.mean(covered, axis=0)))
    extras = {"method": q.method.name, "n": n, "reps": len(E), "seed": seed,
              "note": "counts drawn as Multinomial(n, K w) per replication"}
    if skipped:
        extras["skipped"] = skipped
    return Result("simulation", value, extras)


def _simulate_test(q: Query, draws: np.ndarray, n: int, reps: int, seed: int | None) -> Result:
    pvals = np.array([independence_on_counts(q, c, seed=seed).value.p_value for c in draws])
    value = {"rejection_rate_0.05": float(np.mean(pvals < 0.05)), "mean_p_value": float(np.mean(pvals)),
             "p_value_ks_uniform": float(stats.kstest(pvals, "uniform").pvalue)}
    return Result("simulation", value, {"method": q.method.name, "n": n, "reps": reps, "seed": seed,
                                        "note": "power under the declared population (size if it is independent)"})
