"""``privspec simulate`` for joint (and projected marginal) estimates from randomized
responses: replications drawn as multinomial report counts (never respondents), each
estimate scored by the paper's error metrics (MAE, AVD, MSE; section III-G) and, for the
linear estimators, its variance set against the analytic (Kronecker) one."""
from __future__ import annotations

import numpy as np

from ..errors import BackendError, Diagnostic
from ..model import ModelGraph, Query
from ..results import Result, Table, Vector
from .kron import kron_apply
from .populations import population_vector
from .rr import JointProblem, Z95, numeric_K
from .rr_joint import avd, mae, mse


def _truth(model: ModelGraph, problem: JointProblem) -> tuple[np.ndarray, np.ndarray]:
    """(report probabilities lambda, the estimand's true table)."""
    mech = problem.q.mechanism
    if problem.product:
        w = population_vector(model, list(problem.variables))
        if w is None:
            raise BackendError(Diagnostic("B001", "simulate needs a population for "
                                          f"{', '.join(problem.names)}"))
        truth = np.array([float(x) for x in w]).reshape(problem.shape)
        return kron_apply(problem.K(), truth), truth
    whole = mech.variable
    parts = [model.variables[c] for c in whole.components()] if whole.is_combined else [whole]
    w = population_vector(model, parts)
    if w is None:
        raise BackendError(Diagnostic("B001", f"simulate needs a population for {whole.name}"))
    full = np.array([float(x) for x in w])
    lam = numeric_K(model, mech) @ full
    if problem.parts == [0] and len(problem.variables) == 1 and problem.variables[0].p == full.size:
        return lam, full.reshape(problem.shape)
    tensor = full.reshape(problem.part_sizes)
    others = tuple(j for j in range(len(problem.part_sizes)) if j not in problem.parts)
    kept = sorted(problem.parts)
    table = tensor.sum(axis=others) if others else tensor
    return lam, np.transpose(table, [kept.index(p) for p in problem.parts])


def _wrap(problem: JointProblem, data: np.ndarray):
    data = np.asarray(data, dtype=float)
    if problem.q.estimand.kind == "distribution":
        return Vector(problem.labels[0], tuple(data.reshape(-1)))
    return Table(problem.names, problem.labels, data.reshape(problem.shape))


def simulate_joint(model: ModelGraph, q: Query, *, n: int, reps: int, seed: int | None) -> Result:
    """Empirical against analytic for one joint estimate, from ``reps`` replications of n."""
    problem = JointProblem(model, q)
    lam, truth = _truth(model, problem)
    lam = np.maximum(lam.reshape(-1), 0.0)
    lam = lam / lam.sum()
    rng = np.random.default_rng(seed)
    shape = truth.shape if problem.product else (lam.size,)
    estimates, metrics, covered, chosen = [], [], [], {}
    for _ in range(reps):
        counts = rng.multinomial(n, lam).astype(float).reshape(shape)
        fit = problem.fit(counts)
        est = fit.table
        estimates.append(est)
        metrics.append((mae(truth, est), avd(truth, est), mse(truth, est)))
        if fit.var is not None:
            covered.append(np.mean(np.abs(est - truth) <= Z95 * np.sqrt(np.maximum(fit.var, 0.0))))
        if "chosen" in fit.info:
            chosen[fit.info["chosen"]] = chosen.get(fit.info["chosen"], 0) + 1
    E = np.array(estimates)
    M = np.array(metrics)
    se = M.std(axis=0, ddof=1) / np.sqrt(len(M)) if len(M) > 1 else np.full(3, np.nan)
    value: dict = {
        "truth": _wrap(problem, truth),
        "mean": _wrap(problem, E.mean(axis=0)),
        "max_abs_bias": float(np.max(np.abs(E.mean(axis=0) - truth))),
        "mae": float(M[:, 0].mean()), "mae_se": float(se[0]),
        "avd": float(M[:, 1].mean()), "avd_se": float(se[1]),
        "mse": float(M[:, 2].mean()), "mse_se": float(se[2]),
    }
    # the analytic variance is the estimator's own variance formula at the true report
    # probabilities (linear estimators, no projection)
    expected = problem.fit(lam.reshape(shape) * n, projection="none")
    if expected.var is not None and reps > 1:
        value["n_var_empirical"] = _wrap(problem, E.var(axis=0, ddof=1) * n)
        value["n_var_analytic"] = _wrap(problem, expected.var * n)
    if covered:
        value["ci95_coverage"] = float(np.mean(covered))
    extras: dict = {"method": q.method.name, "n": n, "reps": reps, "seed": seed,
                    "projection": str(q.method.options.get("project", "none")),
                    "note": "report counts drawn as Multinomial(n, K Pi) per replication; mae: mean absolute "
                            "cell error; avd: the largest cell error (the paper's AVD for one table); "
                            "mse: mean squared cell error"}
    if chosen:
        extras["chosen"] = chosen
    return Result("simulation", value, extras)
