"""Coverage of the 95% intervals privspec prints for interval data, beside the alternatives.

For each estimator, interval method and sample size: the share of seeded replications
whose interval holds the truth (with its Monte Carlo standard error) and the mean
width.  The settings are the interval-privacy paper's:

* Table II (section IV-A): Y ~ N(0.5, 1), Case-I anchors Uniform[-T, T], T = 2 n^(1/3),
  n = 100, 400, 1,000, 1,600 (the paper's 100 and 1,000, and between);
* Case II with two logistic(0, 5) anchors (sections IV-B and IV-D), a canonical
  mechanism (three uniform anchors) and Case I with logistic(0, 2) anchors and a
  logistic population (Fig. 5), at n = 200 and 1,000;
* ``se = conditional``: one sample of Y held fixed and only the anchors redrawn, the
  interval held against that sample's own mean; a uniform population with uniform
  anchors on [0, 150] as well, where the two questions differ most (Var(Y) is a third
  of Var(D) for Example 2, half the NPMLE's n Var);
* the pointwise band of F: the likelihood-ratio statistic at fixed points (the true
  quartiles) and at the points ``privspec run`` prints (the fit's quartiles), against
  Banerjee and Wellner's 2.269 and the calibrated 2.486.

"printed" marks the interval ``privspec run`` prints now; "before" the one it printed
before (the plug-in information bound; Wald for the parametric fit; D's 2.269 for the
band).  Replications run in parallel (``--workers``), each task with its own seed, so
the table does not depend on the number of workers.

    python bench/interval_coverage.py [--reps 300] [--seed 1] [--workers 2]

About 20 minutes of CPU time with the defaults (10 minutes on 2 free cores; measured
2026-11-27); ``--reps 30`` for a quick look (a tenth of that).
"""
from __future__ import annotations

import argparse
import time
from multiprocessing import Pool

import numpy as np
import sympy
from scipy import stats
from scipy.special import stdtrit

from privspec.backends.interval.fit import aggregate
from privspec.backends.interval.estimators import (example2_conditional_se, example2_mean, npmle_case1_se,
                                                   parametric_mle)
from privspec.backends.interval.laws import law_distribution
from privspec.backends.interval.ranges import likelihood_pieces
from privspec.backends.interval.sampling import sample_interval
from privspec.backends.core.normal import Z95
from privspec.backends.interval.resample import (bootstrap, case1_fitter, engine_fitter, moment_statistic,
                                                 npmle_moment_interval)
from privspec.backends.interval.npmle.estimator import likelihood_ratio, npmle
from privspec.model.graph import IntervalMechanism, Law, Variable

Y = Variable("y", "continuous")
BOOT = 200          # bootstrap resamples (the alternatives to the jackknife)
D95, D96 = 2.26916, 2.486   # Banerjee-Wellner's D: its 0.95 quantile, and the calibrated value


def law(family: str, *params: float) -> Law:
    names = {"uniform": ("a", "b"), "normal": ("mean", "sd"), "logistic": ("location", "scale")}[family]
    return Law(family, tuple(zip(names, map(sympy.nsimplify, params))))


def table2(n: int) -> IntervalMechanism:
    T = 2 * n ** (1 / 3)
    return IntervalMechanism("c1", Y, "case1", law("uniform", -T, T), 2)


SETTINGS = {
    "Table II (Case I, U[-T, T])": (table2, law("normal", 0.5, 1)),
    "Case II, logistic(0, 5)": (lambda n: IntervalMechanism("c2", Y, "case2", law("logistic", 0, 5), 3),
                                law("normal", 0.5, 1)),
    "canonical(4, U[-4, 5])": (lambda n: IntervalMechanism("cm", Y, "canonical", law("uniform", -4, 5), 4),
                               law("normal", 0.5, 1)),
    "Fig. 5 (Case I, logistic(0, 2))": (lambda n: IntervalMechanism("c1", Y, "case1", law("logistic", 0, 2), 2),
                                        law("logistic", 0, 1)),
    "uniform [0, 150], Case I U[0, 150]": (lambda n: IntervalMechanism("c1", Y, "case1", law("uniform", 0, 150), 2),
                                           law("uniform", 0, 150)),
}


def truth(pop: Law, k: int) -> float:
    d = law_distribution(pop)
    return float(d.moment(k))


def draw(setting: str, n: int, rng: np.random.Generator, y: np.ndarray | None = None):
    make, pop = SETTINGS[setting]
    mech = make(n)
    if y is None:
        y = law_distribution(pop).rvs(n, random_state=rng)
    return mech, y, aggregate(*sample_interval(mech, y, rng))


# ---- the tasks: each returns rows (estimand, setting, interval, n, hits, widths, extra) ----------------
def npmle_mean(setting: str, n: int, reps: int, seed: int, boot: bool) -> list:
    """NPMLE mean: the printed jackknife-t interval, its normal variant, and (Case I) the
    plug-in bound of before and the bootstrap alternatives."""
    rng = np.random.default_rng(seed)
    make, pop = SETTINGS[setting]
    mu = truth(pop, 1)
    case1 = make(n).scheme == "case1"
    out = {k: ([], []) for k in ("jackknife, t (printed)", "jackknife, normal", "plug-in bound (before)",
                                 "bootstrap SE, normal", "bootstrap percentile")}
    st = moment_statistic(1)
    for r in range(reps):
        mech, y, (L, R, C) = draw(setting, n, rng)
        ring = mech.scheme == "ring"
        ci = npmle_moment_interval(L, R, C, 1, refit=lambda l, r_, c: npmle(l, r_, c, ring=ring), seed=r)
        est = (ci.lower + ci.upper) / 2
        add(out["jackknife, t (printed)"], ci.lower, ci.upper, mu)
        add(out["jackknife, normal"], est - Z95 * ci.se, est + Z95 * ci.se, mu)
        if case1:
            fit = npmle(L, R, C)
            se = npmle_case1_se(fit.intervals, fit.mass, mech.anchor, n, 1)
            add(out["plug-in bound (before)"], est - Z95 * se, est + Z95 * se, mu)
            if boot:
                draws = bootstrap(case1_fitter(L, R) or engine_fitter(L, R, npmle), C, st, reps=BOOT, seed=r)
                sb = draws.std(ddof=1)
                add(out["bootstrap SE, normal"], est - Z95 * sb, est + Z95 * sb, mu)
                add(out["bootstrap percentile"], *np.quantile(draws, [0.025, 0.975]), mu)
    return [("E(Y), NPMLE", setting, k, n, h, w, "") for k, (h, w) in out.items() if h]


def npmle_conditional(setting: str, n: int, reps: int, seed: int) -> list:
    """se = conditional against its own Monte Carlo: one sample of Y, anchors redrawn;
    se = population against the Monte Carlo over both."""
    rng = np.random.default_rng(seed)
    _, pop = SETTINGS[setting]
    y = law_distribution(pop).rvs(n, random_state=rng)
    ybar = float(y.mean())
    rows = []
    for kind, held in (("conditional", True), ("population", False)):
        est, ses, hit, wid = [], [], [], []
        target = ybar if held else truth(pop, 1)
        for r in range(reps):
            _, _, (L, R, C) = draw(setting, n, rng, y=y if held else None)
            ci = npmle_moment_interval(L, R, C, 1, refit=npmle, kind=kind, seed=r)
            est.append((ci.lower + ci.upper) / 2)
            ses.append(ci.se)
            add((hit, wid), ci.lower, ci.upper, target)
        sd = float(np.sqrt(np.mean((np.array(est) - target) ** 2)))
        extra = f"mean se {np.mean(ses):.4g} vs Monte Carlo {sd:.4g}"
        label = "jackknife, conditional (Y fixed)" if held else "jackknife, population"
        rows.append(("E(Y), NPMLE", setting, label, n, hit, wid, extra))
    return rows


def example2(setting: str, n: int, reps: int, seed: int) -> list:
    """Example 2's estimator: se = population (sample variance of D) over both, se = conditional
    with Y held fixed."""
    rng = np.random.default_rng(seed)
    make, pop = SETTINGS[setting]
    a, b = (float(sympy.N(v)) for v in make(n).anchor.support())
    y_fixed = law_distribution(pop).rvs(n, random_state=rng)
    rows = []
    for kind, held in (("population", False), ("conditional", True)):
        est, ses, hit, wid = [], [], [], []
        target = float(y_fixed.mean()) if held else truth(pop, 1)
        for _ in range(reps):
            _, _, (L, R, C) = draw(setting, n, rng, y=y_fixed if held else None)
            mu, se, _ = example2_mean(L, R, C, a, b)
            if held:
                se = example2_conditional_se(L, R, C, a, b)
            est.append(mu)
            ses.append(se)
            add((hit, wid), mu - Z95 * se, mu + Z95 * se, target)
        sd = float(np.sqrt(np.mean((np.array(est) - target) ** 2)))
        rows.append(("E(Y), Example 2", setting, f"{kind}{' (Y fixed)' if held else ''}, +- 1.96 se", n, hit, wid,
                     f"mean se {np.mean(ses):.4g} vs Monte Carlo {sd:.4g}"))
    return rows


def mle(setting: str, n: int, reps: int, seed: int, family: str) -> list:
    """Parametric MLE: E(Y) and E(Y^2) by Wald (before) and the profile likelihood (printed)."""
    rng = np.random.default_rng(seed)
    _, pop = SETTINGS[setting]
    out = {(k, m): ([], []) for k in (1, 2) for m in ("Wald (before)", "profile (printed)")}
    for _ in range(reps):
        _, _, (L, R, C) = draw(setting, n, rng)
        pl, pr, owner = likelihood_pieces(L, R, (-np.inf, np.inf), None)
        fit = parametric_mle(pl, pr, owner, C, family)
        for k in (1, 2):
            value, se = fit.moment(k)
            t = truth(pop, k)
            add(out[(k, "Wald (before)")], value - Z95 * se, value + Z95 * se, t)
            lo, hi = fit.profile_interval(k)
            add(out[(k, "profile (printed)")], lo, hi, t)
    return [(f"E(Y{'^2' if k == 2 else ''}), mle({family})", setting, m, n, h, w, "")
            for (k, m), (h, w) in out.items()]


def band(setting: str, n: int, reps: int, seed: int) -> list:
    """The profile band for F: the likelihood-ratio statistic at the true quartiles (points
    fixed in advance) and at the fit's quartiles (the points run prints)."""
    rng = np.random.default_rng(seed)
    _, pop = SETTINGS[setting]
    dist = law_distribution(pop)
    fixed, chosen = [], []
    for _ in range(reps):
        _, _, (L, R, C) = draw(setting, n, rng)
        fit = npmle(L, R, C)
        x = dist.ppf([0.25, 0.5, 0.75])
        fixed.append(likelihood_ratio(fit, L, R, C, x, dist.cdf(x)))
        idx = np.clip(np.searchsorted(np.cumsum(fit.mass), [0.25, 0.5, 0.75]), 0, fit.mass.size - 1)
        xq = fit.intervals[idx, 1]
        xq = xq[np.isfinite(xq)]
        chosen.append(likelihood_ratio(fit, L, R, C, xq, dist.cdf(xq)))
    rows = []
    for where, stat in (("true quartiles", np.concatenate(fixed)), ("fit's quartiles", np.concatenate(chosen))):
        for crit, label in ((D95, "D 0.95 = 2.269 (before)"), (D96, "2.486 (printed)")):
            hits = list((stat <= crit).astype(float))
            rows.append(("F(x), profile band", setting, f"{label}, at {where}", n, hits, [], ""))
    return rows


def add(cell: tuple, lo: float, hi: float, target: float) -> None:
    hits, widths = cell
    hits.append(float(lo <= target <= hi))
    widths.append(float(hi - lo))


def tasks(reps: int, seed: int) -> list:
    t2 = "Table II (Case I, U[-T, T])"
    out = [(npmle_mean, (t2, n, reps, True)) for n in (100, 400, 1000, 1600)]
    out += [(npmle_mean, (s, n, reps, False)) for s in ("Case II, logistic(0, 5)", "canonical(4, U[-4, 5])")
            for n in (200, 1000)]
    out += [(npmle_mean, ("Fig. 5 (Case I, logistic(0, 2))", 1000, reps, False))]
    out += [(npmle_conditional, (s, n, reps // 2)) for s, n in ((t2, 400), ("uniform [0, 150], Case I U[0, 150]", 300))]
    out += [(example2, (s, n, reps)) for s, n in ((t2, 100), (t2, 1000), ("uniform [0, 150], Case I U[0, 150]", 300))]
    out += [(mle, (t2, n, reps, "normal")) for n in (100, 1000)]
    out += [(mle, ("Case II, logistic(0, 5)", n, reps, "normal")) for n in (200, 1000)]
    out += [(band, (s, n, reps)) for s, n in ((t2, 100), (t2, 200), (t2, 1000), ("Case II, logistic(0, 5)", 100),
                                              ("Case II, logistic(0, 5)", 200), ("Case II, logistic(0, 5)", 1000))]
    # each task its own seed (the fourth argument): the table does not depend on the order or
    # number of workers
    return [(f, args[:3] + (seed * 1000 + i,) + args[3:]) for i, (f, args) in enumerate(out)]


def run(task: tuple) -> tuple[list, float]:
    f, args = task
    t0 = time.perf_counter()
    return f(*args), time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    jobs = tasks(args.reps, args.seed)
    t0 = time.perf_counter()
    if args.workers > 1:
        with Pool(args.workers) as pool:
            results = pool.map(run, jobs, chunksize=1)
    else:
        results = [run(j) for j in jobs]
    print(f"Coverage of 95% intervals, seed {args.seed}, --reps {args.reps} "
          f"({time.perf_counter() - t0:.0f} s on {args.workers} workers)\n")
    print("| estimand | setting | interval | n | coverage (MC se) | mean width | |")
    print("|---|---|---|---|---|---|---|")
    for rows, _ in results:
        for estimand, setting, label, n, hits, widths, extra in rows:
            h = np.asarray(hits)
            cov = f"{h.mean():.3f} ({np.sqrt(h.mean() * (1 - h.mean()) / len(h)):.3f})"
            width = f"{np.mean(widths):.3g}" if len(widths) else ""
            print(f"| {estimand} | {setting} | {label} | {n} | {cov} | {width} | {extra} |")
    print("\nseconds per task: " + ", ".join(f"{f.__name__}{args[:2]} {t:.0f}" for (f, args), (_, t) in zip(jobs, results)))


if __name__ == "__main__":
    main()
