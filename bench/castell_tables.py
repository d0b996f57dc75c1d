"""The castell paper's Table V on the Adult margins it rests on, Table III, and its synthetic Fig. 10.

No PyPI or Debian package ships the Adult data for offline use (adult-dataset, aif360
and fairlearn download it at run time; specs/data/adult_rr_raw.csv is a synthetic sample
of its margins), so Tables V and VI cannot be rerun on the 32,561 rows.  What can:

* Table V's (sex, income) column, from the Adult sex x income table the subset-privacy
  paper prints (its Table III: [[9592, 1179], [15128, 6662]], n = 32,561), GRR with
  eps = 1 on each attribute.  The paper's numbers are noise-free: the estimators run on
  the expected report table ``n (K_sex (x) K_income) Pi`` (no randomization), so
  RR-Ind-Joint recovers Pi to rounding (paper 7.07e-10) and RR-Independent's error is
  its bias, whose cell mean *square* is the printed 1.88e-3 (its mean absolute error
  is 0.0435: the column labelled MAE holds the MSE).  Cramer's V: 0.216 in both.  Also
  the errors with the randomization (the mean over --reps privatizations of the same
  respondents).  The (sex, race) and (education, occupation) columns need joint tables
  neither paper prints.
* Fig. 10: MAE of RR-Ind-Joint (castell) and RR-Independent on Appendix D-1's synthetic
  d x d tables: both margins ``lambda_a = c/a`` (a = 2, ..., d + 1: d values; the text's
  "a = 2, ..., d" gives d - 1), Cramer's V = v by ``Pi = (1 - v) lambda lambda^T + v
  diag(lambda)`` (its V is exactly v; the paper does not say how it sets V), n
  respondents drawn from Pi, each attribute randomized by GRR at eps (per attribute);
  one parameter varied at a time around Fig. 9's v = 0.5, eps = 1, n = 1,000, d = 10.
  The figure prints no values; the paper states the trends, checked below (two do not
  hold: RR-Ind-Joint's MAE falls as n^-1/2, not 1/n, and at Fig. 9's d = 10, n = 1,000
  RR-Independent's MAE is not constant in eps: its noise outweighs its bias below eps 1.5).

* Table III (Adult, n = 32,561, d = 16): privspec's ``thresholds`` (Appendix C's
  formulas) beside the paper's: w* = 1.374 agrees; n* and eps* cannot both be the
  paper's, whatever w and eps: n* and eps* solve the same equation (Eq. 26 = Eq. 27)
  for n and for eps, so n* = 121,000 means eps = 2.52 at w = 2, where eps* at n =
  32,561 is 4.32, and at eps = 0.473 n* is 720,397, not 32,561; for w >= 3 the bounds never
  cross at n = 32,561 (no eps*).  privspec prints n* = 185,628 at the spec's eps = 1
  per attribute (w = 2).

Estimators: privspec.backends.rr (castell, independent); errors: privspec.backends.rr.metrics.

    python bench/castell_tables.py                 # 200 replications per point: about 10 seconds
    python bench/castell_tables.py --reps 10       # a smoke run
"""
from __future__ import annotations

import argparse

import numpy as np
from scipy.optimize import brentq

import privspec

from privspec.backends.core.kron import kron_apply
from privspec.backends.rr.bounds import thresholds_result
from privspec.backends.rr.castell import castell
from privspec.backends.rr.independent import independent
from privspec.backends.rr.metrics import cramers_v, mae, mse
from privspec.backends.rr.simulate import privatize_counts

#: Adult: sex (Female, Male) x income (<=50K, >50K), the subset-privacy paper's Table III
ADULT_SEX_INCOME = np.array([[9592, 1179], [15128, 6662]])
#: Table V, (sex, income) column: Cramer's V, RR-Ind, RR-Ind-Joint
PAPER_TABLE_V = {"V": 0.216, "RR-Ind": 1.88e-3, "RR-Ind-Joint": 7.07e-10}
ESTIMATORS = {"RR-Ind-Joint": castell, "RR-Ind": independent}
DEFAULTS = {"v": 0.5, "eps": 1.0, "n": 1000, "d": 10}
SWEEPS = {"v": (0.0, 0.25, 0.5, 0.75, 1.0), "eps": (0.1, 0.5, 1.0, 1.5, 2.0),
          "n": (10, 100, 1000, 10000), "d": (2, 5, 10, 15, 20)}


def grr(d: int, eps: float) -> np.ndarray:
    """GRR's channel ``K = P^T`` on d categories (symmetric): keep with e^eps/(e^eps + d - 1)."""
    e = np.exp(eps)
    K = np.full((d, d), 1 / (e + d - 1))
    np.fill_diagonal(K, e / (e + d - 1))
    return K


def fit(name: str, counts: np.ndarray, K: list[np.ndarray]) -> np.ndarray:
    return ESTIMATORS[name](counts, K, variance=False).table


def table_v(reps: int, rng: np.random.Generator) -> None:
    table = ADULT_SEX_INCOME.astype(float)
    truth = table / table.sum()
    K = [grr(2, 1.0), grr(2, 1.0)]
    expected = kron_apply(K, table)                  # the noise-free report table
    print("Table V, (sex, income) column: Adult n = 32,561, GRR eps = 1 per attribute")
    print(f"  Cramer's V: {cramers_v(table):.3f} (paper {PAPER_TABLE_V['V']})")
    print(f"  {'':14}{'noise-free MSE':>16}{'paper':>10}{'noise-free MAE':>16}"
          f"{f'MAE, {reps} privatizations':>28}{'MSE, same':>12}")
    for name in ESTIMATORS:
        est = fit(name, expected, K)
        sampled = [fit(name, privatize_counts(ADULT_SEX_INCOME, K, rng), K) for _ in range(reps)]
        print(f"  {name:14}{mse(truth, est):16.4g}{PAPER_TABLE_V[name]:10.3g}{mae(truth, est):16.3g}"
              f"{np.mean([mae(truth, s) for s in sampled]):28.3g}{np.mean([mse(truth, s) for s in sampled]):12.3g}")


def synthetic(v: float, eps: float, n: int, d: int, reps: int, rng: np.random.Generator) -> dict[str, float]:
    """Mean MAE of each estimator over ``reps`` samples of n respondents from the d x d
    table of Appendix D-1 with Cramer's V = v."""
    margin = 1 / np.arange(2, d + 2)
    margin /= margin.sum()
    truth = (1 - v) * np.outer(margin, margin) + v * np.diag(margin)
    K = [grr(d, eps), grr(d, eps)]
    errors: dict[str, list[float]] = {name: [] for name in ESTIMATORS}
    for _ in range(reps):
        reports = privatize_counts(rng.multinomial(n, truth.ravel()).reshape(d, d), K, rng)
        for name in ESTIMATORS:
            errors[name].append(mae(truth, fit(name, reports, K)))
    return {name: float(np.mean(e)) for name, e in errors.items()}


def fig10(reps: int, rng: np.random.Generator) -> dict[str, list]:
    print(f"\nFig. 10: synthetic d x d tables, MAE (mean of {reps}), around "
          + ", ".join(f"{k} = {x}" for k, x in DEFAULTS.items()))
    curves = {}
    for varied, values in SWEEPS.items():
        print(f"  ({'abcd'['v eps n d'.split().index(varied)]}) {varied:>4}: "
              + "  ".join(f"{x:>9}" for x in values))
        points = [synthetic(**{**DEFAULTS, varied: x}, reps=reps, rng=rng) for x in values]
        for name in ESTIMATORS:
            print(f"      {name:>12}: " + "  ".join(f"{p[name]:9.2e}" for p in points))
        curves[varied] = points
    return curves


def trends(curves: dict[str, list]) -> list[tuple[str, bool]]:
    """The paper's statements on Fig. 10."""
    col = {k: {name: np.array([p[name] for p in pts]) for name in ESTIMATORS} for k, pts in curves.items()}
    ind, joint = "RR-Ind", "RR-Ind-Joint"
    v = np.array(SWEEPS["v"])
    slope = np.polyfit(v, col["v"][ind], 1)
    resid = col["v"][ind] - np.polyval(slope, v)
    n = np.array(SWEEPS["n"], dtype=float)
    rate = float(np.diff(np.log(col["n"][joint][-2:]))[0] / np.diff(np.log(n[-2:]))[0])
    return [
        (f"(a) RR-Ind's MAE grows linearly in V (largest residual {np.abs(resid).max():.1e} "
         f"of a range {np.ptp(col['v'][ind]):.1e})", bool(np.abs(resid).max() < 0.1 * np.ptp(col["v"][ind]))),
        (f"(a) RR-Ind-Joint's MAE does not depend on V (range {np.ptp(col['v'][joint]):.1e} "
         f"around {col['v'][joint].mean():.1e})", bool(np.ptp(col["v"][joint]) < 0.2 * col["v"][joint].mean())),
        ("(b) RR-Ind-Joint's MAE decreases as eps increases", bool(np.all(np.diff(col["eps"][joint]) < 0))),
        (f"(b) RR-Ind's MAE constant in eps (from eps = 0.5 on: {col['eps'][ind][1:].min():.2e} to "
         f"{col['eps'][ind][1:].max():.2e}; at eps = 0.1 the noise dominates: {col['eps'][ind][0]:.2e})",
         bool(np.ptp(col["eps"][ind][1:]) < 0.1 * col["eps"][ind][1:].min())),
        ("(c) RR-Ind-Joint's MAE decreases as n increases", bool(np.all(np.diff(col["n"][joint]) < 0))),
        (f"(c) ... 'according to 1/n when n > 1000': the slope of log MAE on log n from 1,000 to 10,000 "
         f"is {rate:.2f} (sampling error: -1/2; -1 is the rounding model of Theorem 6)", bool(abs(rate + 1) < 0.2)),
        ("(d) RR-Ind-Joint's MAE increases with d (eps per attribute fixed)",
         bool(np.all(np.diff(col["d"][joint]) > 0))),
        ("(d) RR-Ind's MAE falls with d, as Theorem 4's bias bound V^2 (d - 1)/d^2",
         bool(np.all(np.diff(col["d"][ind]) < 0))),
    ]


def n_star(w: int, eps: float, d: int = 16) -> float:
    """Appendix C's n*: (1 + (d-1)/e^(eps/w))^w d^w / max(d^-w, 1/d - d^-w)."""
    return (1 + (d - 1) / np.exp(eps / w)) ** w * d**w / max(d**-w, 1 / d - d**-w)


def table_iii() -> None:
    labels = ", ".join(f"c{i}" for i in range(16))
    spec = (f"variable a: categorical {{{labels}}}\nvariable b: categorical {{{labels}}}\n"
            "mechanism m = product(grr(a, epsilon = 1), grr(b, epsilon = 1))\nquery th = thresholds(m, n = 32561)\n")
    model = privspec.load(spec).model
    th = thresholds_result(model, model.queries["th"]).value
    print("\nTable III (Adult, n = 32,561, d = 16): privspec's thresholds | the paper's")
    print(f"  w*   {float(th['w_star']):>10.3f} | 1.374")
    print(f"  n*   {float(th['w=2']['n_star']):>10,.0f} | 121,000   (w = 2, eps = 1 per attribute)")
    print(f"  eps* {float(th['w=2']['eps_star']):>10.3f} | 0.473     (w = 2, total budget)")
    eps_121 = brentq(lambda e: n_star(2, e) - 121_000, 0.01, 50)
    print(f"  Appendix C's n* is 121,000 at eps = {eps_121:.2f} (w = 2); at eps = 0.473 it is "
          f"{n_star(2, 0.473):,.0f}, not 32,561 (which eps* = 0.473 would mean): no (w, eps) gives both")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200, help="replications per point")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    table_v(args.reps, rng)
    table_iii()
    curves = fig10(args.reps, rng)
    print("\nThe paper's statements on Fig. 10:")
    for text, holds in trends(curves):
        print(f"  {'holds' if holds else 'DIFFERS'}: {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
