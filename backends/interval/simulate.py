"""``privspec simulate`` for interval mechanisms: replications drawn from the population.

Each replication draws n values of Y from the declared population, privatizes them
with the mechanism (its report model's :meth:`~.reports.ReportModel.draw`), aggregates
the reports, and answers
the query as ``run`` would; the summary sets empirical against analytic:

* coverage / leakage: the analytic value beside the mean individual coverage
  L(S_Z) of the simulated reports;
* mean / moment: mean estimate, truth, bias, empirical SD, mean absolute error (the
  measure of Table II), RMSE, and the coverage of the 95% intervals the estimator
  prints (``ci95``; estimate +- 1.96 se where it prints only a standard error), with
  its Monte Carlo standard error; for ``se = conditional`` the interval is held
  against each replication's own sample mean, the target of that question;
* cdf: the mean over replications of sup |F_hat - F| on 201 population quantiles;
* avar: the analytic value beside n times the variance of the estimates.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import scipy  # its submodules load on first use (start-up: scipy.stats alone costs 0.4-0.9 s)

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import Law, ModelGraph, Query
from privspec.results.kinds import Simulation
from privspec.results.result import Result
from privspec.progress import progress
from privspec.backends.core.normal import Z95
from privspec.backends.interval.estimate import estimate_from_reports, named_args
from privspec.backends.interval.estimators import law_moment
from privspec.backends.interval.laws import draw, law_distribution, population_law
from privspec.backends.interval.ranges import range_coverage
from privspec.backends.interval.reports import ReportModel, report_model

#: refits of an NPMLE functional's jackknife per replication (``run`` makes up to
#: :data:`.resample.JACKKNIFE_GROUPS`): the t quantile with groups - 1 degrees of
#: freedom keeps the intervals honest with fewer groups, and replications stay cheap
SIMULATE_JACKKNIFE_GROUPS = 20
#: the fitted laws of ``mle(...)``
_FAMILIES = {"normal": "norm", "logistic": "logistic"}   # scipy.stats names, looked up on use: start-up


def simulate_query(analytic: Callable[..., Result], model: ModelGraph, q: Query, *, n: int, reps: int,
                   seed: int | None) -> Result:
    """Empirical against analytic for one query, from ``reps`` replications of size ``n``;
    ``analytic(model, q, kind=None)`` is the back end's answer without data (as ``kind``,
    ``q.kind`` by default)."""
    mech = q.mechanism
    reports = report_model(mech)  # draws the reports; says which range a report leaves
    pop = population_law(model, mech.variable)
    if q.kind in ("epsilon", "optimal_anchor"):
        return analytic(model, q).with_fields(simulation="analytic only: nothing to draw")
    if q.estimand is not None and q.estimand.kind == "regression":
        raise BackendError(Diagnostic("B122", "simulating a regression needs the covariates' joint law, "
                                              "which a spec does not declare",
                                      hint="run it on data (privspec run), or see tests/test_interval_regression.py"))
    if pop is None:
        raise BackendError(Diagnostic("B121", f"simulate draws {mech.variable.name} from its population",
                                      hint=f"declare it: population {mech.variable.name} ~ normal(0, 1)"))
    rng = np.random.default_rng(seed)
    base = {"n": n, "reps": reps, "seed": seed}
    if q.kind in ("coverage", "leakage"):
        return _simulate_coverage(analytic(model, q, "coverage"), model, q, reports, pop, n, reps, rng, base)
    est = q.estimand
    truth = float(law_moment(pop, est.order or 1)) if est.kind in ("mean", "moment") else None
    estimates, hits, skipped, se_kind, se_method = _replicate(model, q, reports, pop, truth, n, reps, rng)
    if not estimates:
        raise BackendError(Diagnostic("B123", "every replication failed to produce an estimate"))
    E = np.array(estimates)
    extras = {**base, "method": q.method.name if q.method else None, "reps": len(E)}
    if skipped:
        extras["skipped"] = skipped
    if est.kind == "cdf":
        value = {"mean_sup_error": float(E.mean()), "sup_error_se": float(E.std(ddof=1) / np.sqrt(len(E)))
                 if len(E) > 1 else float("nan")}
        extras["note"] = "sup |F_hat - F| over 201 population quantiles, F_hat with mass at right ends"
        return Simulation(value, **extras)
    value = {"mean": float(E.mean()), "truth": truth, "bias": float(E.mean() - truth),
             "sd": float(E.std(ddof=1)) if len(E) > 1 else float("nan"),
             "mae": float(np.mean(np.abs(E - truth))), "rmse": float(np.sqrt(np.mean((E - truth) ** 2))),
             "n_var_empirical": float(n * E.var(ddof=1)) if len(E) > 1 else float("nan")}
    H = np.array(hits)
    if len(H) and np.all(np.isfinite(H)):
        value["ci95_coverage"] = float(H.mean())
        value["ci95_coverage_se"] = float(np.sqrt(H.mean() * (1 - H.mean()) / len(H)))
        extras["se_kind"] = se_kind
        if se_method:
            extras["se_method"] = se_method
        if se_kind == "conditional":
            extras["ci95_target"] = "each replication's own sample mean (se = conditional)"
    if q.kind == "avar":
        value["analytic"] = float(analytic(model, q, "avar").value)
    return Simulation(value, **extras)


def _simulate_coverage(analytic: Result, model: ModelGraph, q: Query, reports: ReportModel, pop: Law, n: int,
                       reps: int, rng: np.random.Generator, base: dict) -> Result:
    """Coverage or leakage: the analytic value beside the mean individual coverage of the drawn reports."""
    dist = law_distribution(pop)
    means = []
    for _ in progress(range(reps), desc=f"simulate {q.name}", unit="rep"):
        left, right = reports.draw(model, draw(pop, n, rng), rng)
        cov = range_coverage(left, right, dist.cdf, reports.disclose)
        means.append(float(np.mean(np.where(np.isnan(left), 1.0, cov))))
    emp = float(np.mean(means))
    se = float(np.std(means, ddof=1) / np.sqrt(reps)) if reps > 1 else float("nan")
    a = float(analytic.value) if analytic.evaluation != "symbolic" else float("nan")
    if q.kind == "leakage":
        a, emp = 1.0 - a, 1.0 - emp
    value = {"analytic": a, "empirical": emp, "empirical_se": se}
    return Simulation(value, **base, evaluation=analytic.evaluation,
                      note="empirical: mean individual coverage L(S_Z) of the drawn reports (a null counts 1)")


def _replicate(model: ModelGraph, q: Query, reports: ReportModel, pop: Law, truth: float | None, n: int, reps: int,
               rng: np.random.Generator) -> tuple[list, list, int, str | None, str | None]:
    """The estimate of each replication (for a cdf its sup error on 201 population quantiles),
    whether its printed interval held its target, how many replications failed, and the
    standard error's kind and method."""
    est = q.estimand
    dist = law_distribution(pop)
    estimates, hits, skipped = [], [], 0
    se_kind, se_method = None, None
    grid = dist.ppf(np.linspace(0.005, 0.995, 201))
    for rep in progress(range(reps), desc=f"simulate {q.name}", unit="rep"):
        y = draw(pop, n, rng)
        left, right = reports.draw(model, y, rng)
        try:
            r = estimate_from_reports(model, q, left, right, seed=rep, jackknife_groups=SIMULATE_JACKKNIFE_GROUPS)
        except BackendError as e:
            if any(d.code == "B140" for d in e.diagnostics):
                raise   # a refused option is the answer, not a failed replication
            skipped += 1
            continue
        except (DataError, np.linalg.LinAlgError, ValueError):
            skipped += 1
            continue
        if est.kind == "cdf":
            if isinstance(r.value, dict):  # mle: a fitted law
                fam = getattr(scipy.stats, _FAMILIES[named_args(q)[0]])
                Fh = fam(loc=r.value["location"], scale=r.value["scale"]).cdf(grid)
            else:
                iv = np.asarray(r.value.intervals, dtype=float)
                cum = np.concatenate([[0.0], np.cumsum(r.value.mass)])
                Fh = cum[np.searchsorted(iv[:, 1], grid, side="right")]
            estimates.append(float(np.max(np.abs(Fh - dist.cdf(grid)))))
            continue
        estimates.append(float(r.value))
        se_kind, se_method = r.se_kind, r.se_method if r.se_method is not None else se_method
        # the interval printed, about its own target: the population's moment, or for
        # se = conditional the respondents' own mean (what that question is about)
        target = float(np.mean(y ** (est.order or 1))) if se_kind == "conditional" else truth
        ci, se = r.ci95, r.se
        if ci is not None:
            hits.append(float(ci[0] <= target <= ci[1]))
        elif isinstance(se, (int, float)) and np.isfinite(se):
            hits.append(float(abs(float(r.value) - target) <= Z95 * se))
        else:
            hits.append(np.nan)
    return estimates, hits, skipped, se_kind, se_method
