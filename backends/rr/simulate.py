"""``privspec simulate`` for joint (and projected marginal) estimates from randomized
responses: replications drawn as multinomial report counts (never respondents), each
estimate scored by the paper's error metrics (MAE, AVD, MSE; section III-G) and, for the
linear estimators, its variance set against the analytic (Kronecker) one and its
intervals' coverage.  With ``se = conditional`` the respondents are drawn once and only
their randomization is redrawn (:func:`privatize_counts`, from counts).
:func:`joint_coverage` is the coverage experiment for any estimator (tests, bench)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, Diagnostic
from privspec.model.graph import ModelGraph, Query
from privspec.results.kinds import Simulation
from privspec.results.result import Result
from privspec.results.values import Table, Vector
from privspec.progress import progress
from privspec.backends.core.kron import kron_apply
from privspec.backends.core.populations import population_vector
from privspec.backends.core.normal import Z95
from privspec.backends.rr.problem import JointProblem, numeric_K
from privspec.backends.rr.fit import SE_KINDS, JointFit
from privspec.backends.rr.metrics import avd, mae, mse


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
    """Empirical against analytic for one joint estimate, from ``reps`` replications of n.

    With the query's ``se = population`` (the default) every replication draws fresh
    respondents from the population; with ``se = conditional`` one set of respondents is
    drawn and kept, and every replication redraws only their randomization
    (:func:`privatize_counts`), so the errors, the variance and the coverage are those
    given the respondents, against their own table.
    """
    problem = JointProblem(model, q)
    lam, truth = _truth(model, problem)
    lam = np.maximum(lam.reshape(-1), 0.0)
    lam = lam / lam.sum()
    rng = np.random.default_rng(seed)
    shape = truth.shape if problem.product else (lam.size,)
    conditional = str(q.method.options.get("se", "population")) == "conditional"
    if conditional:
        # the respondents' true values, drawn once; reports are redrawn from them
        full = np.asarray(_full_truth(model, problem), dtype=float).reshape(-1)
        respondents = rng.multinomial(n, full / full.sum()).reshape(shape)
        channel = problem.K() if problem.product else [numeric_K(model, problem.q.mechanism)]
        truth = _estimand_table(problem, respondents / n)
    estimates, metrics, covered, covered_joint, chosen = [], [], [], [], {}
    for _ in progress(range(reps), desc="simulate", unit="rep"):
        if conditional:
            counts = privatize_counts(respondents, channel, rng)
        else:
            counts = rng.multinomial(n, lam).astype(float).reshape(shape)
        fit = problem.fit(counts)
        est = fit.table
        estimates.append(est)
        metrics.append((mae(truth, est), avd(truth, est), mse(truth, est)))
        if fit.var is not None:
            target = target_of(fit, truth)
            covered.append(np.mean(covers(fit, target)))
            if target is not truth:
                covered_joint.append(np.mean(covers(fit, truth)))
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
    if conditional:
        expected_counts = _expected_reports(respondents, channel).reshape(shape)
    else:
        expected_counts = lam.reshape(shape) * n
    expected = problem.fit(expected_counts, projection="none")
    if expected.var is not None and reps > 1:
        value["n_var_empirical"] = _wrap(problem, E.var(axis=0, ddof=1) * n)
        value["n_var_analytic"] = _wrap(problem, expected.var * n)
    if covered:
        value["ci95_coverage"] = float(np.mean(covered))
    if covered_joint:
        value["ci95_coverage_of_joint"] = float(np.mean(covered_joint))
    extras: dict = {"method": q.method.name, "n": n, "reps": reps, "seed": seed,
                    "projection": str(q.method.options.get("project", "none")),
                    "se_kind": "conditional" if conditional else "population",
                    "note": ("respondents drawn once from the population; each replication redraws their "
                             "randomization only (se = conditional), truth = their own table; "
                             if conditional else "report counts drawn as Multinomial(n, K Pi) per replication; ")
                    + "mae: mean absolute cell error; avd: the largest cell error (the paper's AVD for one "
                      "table); mse: mean squared cell error; ci95_coverage: of what each interval covers "
                      "(the joint; for RR-Independent the product of the marginals, then also "
                      "ci95_coverage_of_joint)"}
    if chosen:
        extras["chosen"] = chosen
    return Simulation(value, **extras)


def _full_truth(model: ModelGraph, problem: JointProblem) -> np.ndarray:
    """The population over what the mechanism randomizes: the estimand's attributes
    (product) or the whole combined domain (RR-Joint)."""
    if problem.product:
        return _truth(model, problem)[1]
    whole = problem.q.mechanism.variable
    parts = [model.variables[c] for c in whole.components()] if whole.is_combined else [whole]
    return np.array([float(x) for x in population_vector(model, parts)])


def _estimand_table(problem: JointProblem, full: np.ndarray) -> np.ndarray:
    """The estimand's table from a table over what the mechanism randomizes."""
    if problem.product or (problem.parts == [0] and len(problem.variables) == 1
                           and problem.variables[0].p == full.size):
        return full.reshape(problem.shape)
    tensor = full.reshape(problem.part_sizes)
    others = tuple(j for j in range(len(problem.part_sizes)) if j not in problem.parts)
    kept = sorted(problem.parts)
    table = tensor.sum(axis=others) if others else tensor
    return np.transpose(table, [kept.index(p) for p in problem.parts])


def _expected_reports(respondents: np.ndarray, K: Sequence[np.ndarray]) -> np.ndarray:
    return kron_apply(K, np.asarray(respondents, dtype=float))


# ---- report tables of fixed respondents, and coverage ----------------------------------------------
def privatize_counts(true_counts: np.ndarray, K: Sequence[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """The table of report counts of fixed respondents, each attribute randomized on its
    own: an exact draw from the distribution of the privatized reports given the
    respondents' true table, from counts alone.

    Attribute by attribute, the respondents of each cell with true value ``x_k`` are
    split over the reports ``y_k`` by ``Multinomial(count, K_k[:, x_k])``: one draw per
    (cell, value) pair, vectorized, never one per respondent.

    Parameters
    ----------
    true_counts : array
        The respondents' ``d_1 x ... x d_w`` table of true values (integers).
    K : sequence of arrays
        ``K_k = P_k^T`` per axis (a single matrix for RR on a combined domain).
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray
        The report counts, same shape, same total.

    Examples
    --------
    >>> K = [np.array([[0.75, 0.25], [0.25, 0.75]])] * 2
    >>> out = privatize_counts(np.array([[4, 0], [2, 4]]), K, np.random.default_rng(0))
    >>> out.shape, int(out.sum())
    ((2, 2), 10)
    """
    t = np.asarray(true_counts).astype(np.int64)
    for k, Kk in enumerate(K):
        Kk = np.asarray(Kk, dtype=float)
        moved = np.moveaxis(t, k, -1)
        flat = moved.reshape(-1, moved.shape[-1])
        out = np.zeros_like(flat)
        for j in range(flat.shape[1]):      # d_k draws, each over all the other cells
            column = np.clip(Kk[:, j], 0.0, None)
            out += rng.multinomial(flat[:, j], column / column.sum())
        t = np.moveaxis(out.reshape(moved.shape), -1, k)
    return t.astype(float)


def target_of(fit: JointFit, table: np.ndarray) -> np.ndarray:
    """What an interval from ``fit`` covers, given the true (population or respondents')
    table: the table itself, or for RR-Independent the product of its marginals, for
    RR-Clusters the product of the clusters' margins (``fit.info["cluster_axes"]``)."""
    if fit.se_target in (None, "joint"):
        return table
    blocks = fit.info.get("cluster_axes") or [[k] for k in range(table.ndim)]
    out = np.ones(table.shape)
    for g in blocks:
        others = tuple(j for j in range(table.ndim) if j not in g)
        out = out * (table.sum(axis=others, keepdims=True) if others else table)
    return out


def interval(fit: JointFit, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """The interval a fit reports: its own (``fit.ci``, the score interval of castell-type
    estimates at 95%) or Wald's ``table +- z se``."""
    if fit.ci is not None and np.isclose(z, Z95):
        return fit.ci
    se = np.sqrt(np.maximum(fit.var, 0.0))
    return fit.table - z * se, fit.table + z * se


def covers(fit: JointFit, target: np.ndarray, z: float = Z95) -> np.ndarray:
    """Per cell: whether the fit's interval contains the target."""
    lower, upper = interval(fit, z)
    return (lower <= target) & (target <= upper)


def joint_coverage(estimate: Callable[[np.ndarray], JointFit], truth: np.ndarray, K: Sequence[np.ndarray], n: int,
                   reps: int, seed: int, se: str = "population", level: float = 0.95) -> dict[str, Any]:
    """Monte Carlo coverage of each cell's interval (:func:`interval`: the score interval of
    castell-type estimates, else ``estimate +- z se``), against what the interval claims
    to cover (:func:`target_of`).

    ``se = population``: every replication draws fresh respondents from ``truth`` and their
    reports (``Multinomial(n, K truth)``), the target is built from ``truth``.  ``se =
    conditional``: one set of respondents is drawn once and kept; every replication
    redraws only their randomization (:func:`privatize_counts`), the target is built from
    the respondents' own table.

    Returns
    -------
    dict
        ``coverage`` (per cell), ``mean`` (over the cells), ``mc_se`` (the Monte Carlo
        standard error of the mean coverage, from the spread across replications),
        ``min``, ``reps`` and ``defined`` (replications with a standard error).

    Examples
    --------
    >>> from privspec.backends.rr.castell import castell
    >>> K = [np.array([[0.75, 0.25], [0.25, 0.75]])] * 2
    >>> truth = np.array([[0.4, 0.1], [0.2, 0.3]])
    >>> out = joint_coverage(lambda c: castell(c, K), truth, K, 5000, 200, seed=1)
    >>> 0.9 < out["mean"] < 1.0
    True
    """
    if se not in SE_KINDS:
        raise ValueError(f"unknown se {se!r}: {' | '.join(SE_KINDS)}")
    z = float(scipy.stats.norm.ppf(0.5 + level / 2))
    rng = np.random.default_rng(seed)
    truth = np.asarray(truth, dtype=float)
    if se == "conditional":
        respondents = rng.multinomial(n, truth.reshape(-1) / truth.sum()).reshape(truth.shape)
        table = respondents / n
    else:
        lam = np.maximum(kron_apply(K, truth).reshape(-1), 0.0)
        lam = lam / lam.sum()
        table = truth
    hits, per_rep = [], []
    for _ in progress(range(reps), desc="simulate", unit="rep"):
        if se == "conditional":
            counts = privatize_counts(respondents, K, rng)
        else:
            counts = rng.multinomial(n, lam).astype(float).reshape(truth.shape)
        fit = estimate(counts)
        if fit.var is None:
            continue
        inside = covers(fit, target_of(fit, table), z)
        hits.append(inside)
        per_rep.append(inside.mean())
    if not hits:
        return {"coverage": None, "mean": float("nan"), "mc_se": float("nan"), "min": float("nan"),
                "reps": reps, "defined": 0}
    H = np.array(hits, dtype=float)
    cover = H.mean(axis=0)
    return {"coverage": cover, "mean": float(cover.mean()),
            "mc_se": float(np.std(per_rep, ddof=1) / np.sqrt(len(per_rep))) if len(per_rep) > 1 else float("nan"),
            "min": float(cover.min()), "reps": reps, "defined": len(hits)}
