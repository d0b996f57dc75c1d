"""The back end of numeric values under local DP (``laplace``, ``duchi``, ``piecewise``,
``hm``, ``square_wave`` on a bounded continuous variable), over
:mod:`privspec.backends.numeric.mechanisms`:

* ``epsilon(M)``: the declared epsilon and the one read back exactly from the report
  law's densities (they must agree);
* ``avar(mean(Y) from M by unbiased)``: ``n Var`` of the mean of the reports' unbiased
  estimates, ``Var(Y) + s^2 E[Var(t_hat | t)]`` at the declared population (``s`` the
  slope of the map from the mechanism's domain onto the declared range ``[a, b]``), beside the papers' worst-case noise variance ``max_t Var(t_hat | t)``;
  without a population, the largest value over every population on ``[a, b]``;
* ``estimate mean(Y) from M by unbiased``: the mean of the reports' unbiased estimates,
  its standard error from their sample variance, a 95% Wald interval, on data (``run``)
  and in seeded simulations (``simulate``: bias, empirical SD, interval coverage);
* ``estimate cdf(Y) from M by ems`` (square wave): Li et al.'s EMS histogram on
  :data:`EMS_BUCKETS` equal buckets of ``[a, b]`` (:mod:`privspec.backends.numeric.ems`);
* ``privatize``: one report per row from per-row randomness, written as a decimal number
  that reads back to the same double.

Examples
--------
>>> import privspec
>>> spec = privspec.load('''
... variable y: continuous [0, 10]
... population y ~ uniform(0, 10)
... mechanism D = duchi(y, epsilon = 1)
... query v = avar(mean(y) from D by unbiased)
... ''')
>>> round(spec.analyze()["v"].value, 4)     # 25 ((e+1)/(e-1))^2 - 25 E[t^2] + Var(y) = 25 (4.6827 - 1/3) + 25/3
117.0674
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import sympy

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import ModelGraph, Query
from privspec.model.query_kinds import NUMERIC, Answers
from privspec.results.kinds import Avar, Epsilon, Estimate, Simulation
from privspec.results.result import Result
from privspec.results.values import Vector
from privspec.backends import register
from privspec.backends.core.normal import Z95
from privspec.backends.core.numbers import parse_numbers
from privspec.backends.core.populations import bind_parameters
from privspec.backends.core.rowrandom import RowRandom, stream_of
from privspec.backends.data.survey import SurveyDesign, design_cells, design_mean, design_tally, replicate_sums
from privspec.backends.interval.backend import raw_values
from privspec.backends.interval.estimate import number_wald_inference
from privspec.backends.interval.laws import law_distribution, nearest_double, population_law, support_of
from privspec.backends.numeric.ems import ems
from privspec.backends.numeric.mechanisms import MECHANISMS, NumericLDP, SquareWave, mechanism

_ANSWERS = (
    Answers(("epsilon",), NUMERIC),
    Answers(("avar",), NUMERIC, estimands=("mean",), methods=("unbiased",)),
    Answers(("estimate",), NUMERIC, ("run", "simulate"), estimands=("mean", "cdf"), methods=("unbiased", "ems")),
)
#: the buckets of ``[a, b]`` on which ``ems`` estimates the distribution
EMS_BUCKETS = 64


# ---- the mechanism and the population ---------------------------------------------------------------
def _epsilon(model: ModelGraph, mech: Any) -> sympy.Expr:
    eps = bind_parameters(model, mech.epsilon)
    if getattr(eps, "free_symbols", None):
        raise BackendError(Diagnostic("B001", f"epsilon of {mech.name} is symbolic in "
                                              f"{', '.join(sorted(map(str, eps.free_symbols)))}",
                                      hint="give the parameter a value"))
    return eps


def ldp_of(model: ModelGraph, mech: Any) -> NumericLDP:
    """The mechanism's sampler and formulas at its epsilon (B416 when it rounds to 0 or its
    noise overflows floating point)."""
    eps = nearest_double(_epsilon(model, mech))
    m = mechanism(mech.protocol, eps)
    if not (eps > 0 and all(math.isfinite(c) for c in m.coefficients)):
        raise BackendError(Diagnostic("B416", f"{mech.protocol}() at epsilon = {eps:g} is beyond floating point",
                                      hint="use a larger epsilon"))
    return m


def _bounds(mech: Any) -> tuple[float, float]:
    return support_of(mech.variable)


def population_moments(model: ModelGraph, mech: Any) -> tuple[float, float] | None:
    """E[Y] and E[Y^2] of the declared population (None without one; the front end keeps
    it inside the declared range, E309)."""
    pop = population_law(model, mech.variable)
    if pop is None:
        return None
    dist = law_distribution(pop)
    return float(dist.mean()), float(dist.var() + dist.mean() ** 2)


def _draw(model: ModelGraph, mech: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """Values from the population, by inversion."""
    return law_distribution(population_law(model, mech.variable)).ppf(rng.random(size))


# ---- the analytic answers ---------------------------------------------------------------------------
def epsilon_result(model: ModelGraph, mech: Any) -> Result:
    declared = _epsilon(model, mech)
    back = MECHANISMS[mech.protocol].epsilon_exact(declared)
    return Epsilon(back, declared=declared, read_back=back, protocol=mech.protocol,
                   reason="the largest ratio of a report's densities under two values of the domain, from the "
                          f"report law's own parameters ({MECHANISMS[mech.protocol].source})")


def _worst_population(m: NumericLDP) -> float:
    """max over laws of t on the domain of Var(t) + E[c0 + c1 t + c2 t^2]: for a mean mu the
    largest E[t^2] is the two-point law on the ends (c2 >= -1 always), a concave function of mu."""
    c0, c1, c2 = m.coefficients
    lo, hi = m.domain
    best = min(max((c1 + (1 + c2) * (lo + hi)) / 2, lo), hi)
    return c0 + c1 * best + (1 + c2) * ((lo + hi) * best - lo * hi) - best * best


def avar_result(model: ModelGraph, q: Query) -> Result:
    mech = q.mechanism
    m = ldp_of(model, mech)
    lo, hi = _bounds(mech)
    s2 = m.value_scale(lo, hi) ** 2
    extras: dict = {"method": "unbiased", "protocol": mech.protocol,
                    "worst_case_noise": s2 * m.worst_variance(), "worst_case_noise_unit": m.worst_variance(),
                    "meaning": "n Var(estimate) = Var(Y) + E[Var(report's estimate | Y)] (sampling plus privacy "
                               "noise); worst_case_noise: the papers' max over values of the noise variance "
                               f"(unit: on the mechanism's domain {list(m.domain)})"}
    moments = population_moments(model, mech)
    if moments is None:
        extras["evaluation"] = f"no population for {mech.variable.name}: the largest value over every population " \
                               f"on [{lo:g}, {hi:g}]"
        return Avar(s2 * _worst_population(m), **extras)
    m1, m2 = moments
    t1 = float(m.to_domain(m1, lo, hi))
    t2 = float(m.to_domain(m1, lo, hi) ** 2 + (m.value_scale(lo, hi) ** -2) * (m2 - m1 * m1))
    noise = s2 * m.mean_variance(t1, t2)
    extras.update(evaluation="closed form at the population's mean and variance",
                  noise_at_population=noise, population_variance=m2 - m1 * m1)
    return Avar(m2 - m1 * m1 + noise, **extras)


# ---- estimates ------------------------------------------------------------------------------------
def mean_estimate(m: NumericLDP, reports: np.ndarray, counts: np.ndarray, lo: float, hi: float) -> Estimate:
    """The mean of the reports' unbiased estimates (mapped to ``[lo, hi]``), with the
    standard error of a mean of iid terms (their weighted sample variance)."""
    n = float(counts.sum())
    if n < 2:
        raise DataError(Diagnostic("D103", "fewer than 2 reports: no mean with a standard error"))
    y = m.to_value(m.unbiased(reports), lo, hi)
    mu = float(np.dot(counts, y) / n)
    se = float(math.sqrt(np.dot(counts, (y - mu) ** 2) / (n - 1) / n))
    return Estimate(mu, method=f"unbiased ({m.name})", n=int(n), se=se, se_kind="population",
                    ci95=[mu - Z95 * se, mu + Z95 * se], ci_method="estimate +- 1.96 se",
                    protocol=m.name, inference=number_wald_inference(mu, se))


def weighted_mean_estimate(m: NumericLDP, engine: Any, column: str, design: SurveyDesign, lo: float,
                           hi: float) -> Estimate:
    """The Hajek mean of the reports' unbiased estimates with survey weights, strata and
    clusters: its design-based standard error by linearization and design effect
    (:func:`privspec.backends.data.survey.design_mean`)."""
    tally = design_tally(engine, design, [column])
    reports, _ = read_reports(m, tally, column)
    d = design_mean(m.to_value(m.unbiased(reports), lo, hi), tally, design)
    return Estimate(d.mean, method=f"unbiased ({m.name}), weighted", n=d.n, se=d.se,
                    se_kind=design.se_kind, ci95=[d.mean - Z95 * d.se, d.mean + Z95 * d.se],
                    ci_method="estimate +- 1.96 se (design-based)", deff=d.deff, design=design.describe(),
                    weighted_n=d.weighted_n, protocol=m.name, inference=number_wald_inference(d.mean, d.se))


def cdf_estimate(m: SquareWave, reports: np.ndarray, counts: np.ndarray, lo: float, hi: float,
                 **extras: Any) -> Estimate:
    """Square wave's EMS histogram on :data:`EMS_BUCKETS` buckets of ``[lo, hi]`` (the front
    end lets ``ems`` reach square wave only); ``extras`` added to the result's (a weighted
    fit's design, and its ``n``, the rows, where ``counts`` are sums of weights)."""
    fit = ems(m, reports, counts=counts, buckets=EMS_BUCKETS)
    edges = lo + (hi - lo) * fit.edges
    labels = tuple(f"[{a:.6g}, {b:.6g}]" if i == EMS_BUCKETS - 1 else f"[{a:.6g}, {b:.6g})"
                   for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])))
    fields = {"method": f"ems ({EMS_BUCKETS} equal buckets; Li et al. 2020)", "n": int(round(float(counts.sum()))),
              **extras}
    return Estimate(Vector(labels, tuple(float(x) for x in fit.probabilities)), **fields,
                    protocol=m.name, histogram_mean=lo + (hi - lo) * fit.mean, iterations=fit.iterations,
                    converged=fit.converged,
                    meaning="the probability of each bucket (the distribution function: their running sums)")


def weighted_cdf_estimate(m: SquareWave, engine: Any, column: str, design: SurveyDesign, lo: float,
                          hi: float) -> Estimate:
    """Square wave's EMS histogram with survey weights: the same EM on the sums of weights
    per distinct report, scaled to the rows (the EM's step and its stopping rule, a change
    of the log likelihood per report, depend on the counts only through their shares, so
    integer weights give the fit of the duplicated rows).  The unweighted EMS has no
    standard error, and neither has this one (no deff): the design is checked (strata,
    clusters, weights: the same refusals as every weighted estimate) and described."""
    tally = design_tally(engine, design, [column])
    reports, counts = read_reports(m, tally, column)
    tuples = np.arange(len(counts))
    if design.replicates is None:
        cells = design_cells(tally, design, tuples)
        weighted, layout = cells.weighted_counts(len(tuples)), cells.layout()
    else:
        weighted = replicate_sums(tally, design, tuples, len(tuples))[:, 0]
        layout = {}
    rows, total = float(counts.sum()), float(weighted.sum())
    return cdf_estimate(m, reports, weighted * (rows / total), lo, hi, method=f"ems ({EMS_BUCKETS} equal buckets; "
                        "Li et al. 2020), weighted", n=int(rows), design=design.describe(), weighted_n=total,
                        **layout, note="the EMS on the sums of weights per report (Hajek), scaled to the rows; "
                                       "no standard error, as without weights (the EMS has none)")


def read_reports(m: NumericLDP, tally: Any, column: str) -> tuple[np.ndarray, np.ndarray]:
    """The distinct reports of the column and their counts; D105 for one that is not a
    number, D106 for one outside the mechanism's report range."""
    tally.check_no_missing([column])
    x = parse_numbers(tally.values[column])[0]
    lo, hi = m.report_range()
    tol = 1e-9 * (1 + max(abs(lo), abs(hi))) if math.isfinite(lo) else 0.0
    bad = ~np.isfinite(x)
    if bad.any():
        rows = tally.locate(bad)
        raise DataError(Diagnostic("D105", f"{len(rows)} report(s) of {column} are not finite numbers",
                                   rows=rows, columns=(column,), hint=f"{m.name} reports are numbers"))
    out = (x < lo - tol) | (x > hi + tol)
    if out.any():
        rows = tally.locate(out)
        raise DataError(Diagnostic("D106", f"{len(rows)} report(s) of {column} outside the range of {m.name} "
                                           f"reports [{lo:.6g}, {hi:.6g}] at this epsilon",
                                   rows=rows, columns=(column,), hint="are these the reports of this mechanism?"))
    atoms = m.atoms()
    if atoms is not None:
        off = np.min(np.abs(x[:, None] - np.asarray(atoms)[None, :]), axis=1) > tol
        if off.any():
            rows = tally.locate(off)
            shown = " or ".join(f"{a:.6g}" for a in atoms)
            raise DataError(Diagnostic("D106", f"{len(rows)} report(s) of {column} that {m.name} never gives at this "
                                               f"epsilon (its reports are {shown})",
                                       rows=rows, columns=(column,), hint="are these the reports of this mechanism?"))
    return x, np.asarray(tally.counts, dtype=float)


# ---- simulation ---------------------------------------------------------------------------------------
def _require_population(model: ModelGraph, mech: Any) -> None:
    """B121 unless the mechanism's variable has a population to draw the surveys from."""
    if population_law(model, mech.variable) is None:
        raise BackendError(Diagnostic("B121", f"simulate draws {mech.variable.name} from its population",
                                      hint=f"declare it: population {mech.variable.name} ~ uniform(a, b)"))


def simulate_mean(model: ModelGraph, q: Query, analytic: Result | None, n: int, reps: int,
                  seed: int | None) -> Result:
    """``reps`` surveys of ``n`` values drawn from the population, privatized and estimated
    as on data: the mean of the estimates against the truth, their SD, n times their
    variance (beside the analytic avar), and the coverage of the printed 95% intervals."""
    mech = q.mechanism
    _require_population(model, mech)
    m = ldp_of(model, mech)
    lo, hi = _bounds(mech)
    truth = population_moments(model, mech)[0]
    rng = np.random.default_rng(seed)
    ones = np.ones(n)
    E, hits = np.empty(reps), np.empty(reps)
    for r in range(reps):
        est = mean_estimate(m, m.sample(m.to_domain(_draw(model, mech, n, rng), lo, hi), rng), ones, lo, hi)
        E[r] = est.value
        hits[r] = est.ci95[0] <= truth <= est.ci95[1]
    value = {"mean": float(E.mean()), "truth": truth, "bias": float(E.mean() - truth),
             "sd": float(E.std(ddof=1)) if reps > 1 else float("nan"),
             "mae": float(np.mean(np.abs(E - truth))), "rmse": float(np.sqrt(np.mean((E - truth) ** 2))),
             "n_var_empirical": float(n * E.var(ddof=1)) if reps > 1 else float("nan"),
             "ci95_coverage": float(hits.mean()),
             "ci95_coverage_se": float(math.sqrt(hits.mean() * (1 - hits.mean()) / reps))}
    if analytic is not None:
        value["analytic"] = float(analytic.value)
    return Simulation(value, n=n, reps=reps, seed=seed, method="unbiased", se_kind="population")


def simulate_cdf(model: ModelGraph, q: Query, analytic: Result | None, n: int, reps: int,
                 seed: int | None) -> Result:
    """``reps`` surveys of ``n`` square-wave reports: the mean over replications of the EMS
    histogram's largest error in the distribution function at the bucket edges."""
    mech = q.mechanism
    _require_population(model, mech)
    m = ldp_of(model, mech)
    lo, hi = _bounds(mech)
    truth = law_distribution(population_law(model, mech.variable)).cdf(np.linspace(lo, hi, EMS_BUCKETS + 1)[1:])
    rng = np.random.default_rng(seed)
    errors = np.empty(reps)
    for r in range(reps):
        est = cdf_estimate(m, m.sample(m.to_domain(_draw(model, mech, n, rng), lo, hi), rng), np.ones(n), lo, hi)
        errors[r] = np.max(np.abs(np.cumsum(est.value.values) - truth))
    value = {"mean_sup_error": float(errors.mean()),
             "sup_error_se": float(errors.std(ddof=1) / math.sqrt(reps)) if reps > 1 else float("nan")}
    return Simulation(value, n=n, reps=reps, seed=seed, method="ems",
                      note=f"sup |F_hat - F| over the {EMS_BUCKETS} bucket edges, F_hat the histogram's running sums")


# ---- the back end ---------------------------------------------------------------------------------
@register
class NumericBackend:
    """Numeric values under local DP: epsilon, the unbiased mean, square wave's EMS, privatize, simulate."""

    REGISTER_NAME = "numeric"
    ANSWERS = _ANSWERS

    def supports(self, query: Query, verb: str) -> bool:
        return any(row.matches(query, verb) for row in self.ANSWERS)

    def privatizes(self, mechanism: Any) -> bool:
        return getattr(mechanism, "family", None) == "numeric"

    def weighted(self, query: Query) -> str:
        """What of ``query`` has no version with survey weights ("" for the mean by
        ``unbiased``, a mean of per-row values: :func:`weighted_mean_estimate`, and square
        wave's distribution by ``ems``: :func:`weighted_cdf_estimate`)."""
        if query.kind == "estimate" and query.estimand.kind in ("mean", "cdf"):
            return ""
        return (f"{query.kind} queries of a {query.estimand.kind} from numeric mechanisms (weighted: the mean, "
                "and the distribution by ems)")

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        if query.method is not None and query.method.options.get("se", "population") != "population":
            raise BackendError(Diagnostic("B140", "se = conditional is not given for numeric mechanisms: the "
                                                  "standard error is the population's (sampling and privacy noise)",
                                          hint="leave se out (se = population)"))
        if query.kind == "epsilon":
            result = epsilon_result(model, query.mechanism)
            return result.with_fields(simulation="analytic only: nothing to draw") if verb == "simulate" else result
        if query.kind == "avar":
            result = avar_result(model, query)
            if verb != "simulate":
                return result
            return simulate_mean(model, query, result, options["n"], options["reps"], options.get("seed"))
        if verb == "simulate":
            simulate = simulate_cdf if query.estimand.kind == "cdf" else simulate_mean
            return simulate(model, query, None, options["n"], options["reps"], options.get("seed"))
        return self._estimate(model, query, options.get("data"))

    def _estimate(self, model: ModelGraph, q: Query, data: Any) -> Result:
        mech = q.mechanism
        if data is None:
            raise BackendError(Diagnostic("B120", f"query '{q.name}' needs data", hint="privspec run SPEC --data FILE"))
        m = ldp_of(model, mech)
        column = mech.variable.name
        engine = data.engine_for(mech.name or q.name)
        lo, hi = _bounds(mech)
        if data.design is not None:
            weighted = weighted_cdf_estimate if q.estimand.kind == "cdf" else weighted_mean_estimate
            return weighted(m, engine, column, data.design, lo, hi)
        reports, counts = read_reports(m, engine.tally([column]), column)
        if q.estimand.kind == "cdf":
            return cdf_estimate(m, reports, counts, lo, hi)
        return mean_estimate(m, reports, counts, lo, hi)

    def privatize(self, model: ModelGraph, mechanism: Any, frame: pd.DataFrame, seed: int | None = None,
                  offset: int = 0) -> pd.DataFrame:
        """One report per row of ``frame`` (its index kept): row ``i`` is the file's row
        ``offset + i`` and its report depends on (seed, mechanism, that index, its value) only."""
        m = ldp_of(model, mechanism)
        lo, hi = _bounds(mechanism)
        y = raw_values(mechanism, frame)
        rng = RowRandom(seed, rows=range(offset, offset + len(y)), stream=stream_of(mechanism))
        reports = m.sample(m.to_domain(y, lo, hi), rng)
        return pd.DataFrame({mechanism.variable.name: [repr(float(x)) for x in reports]}, index=frame.index)
