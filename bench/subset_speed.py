"""Benchmark: subset privacy estimation on sufficient statistics.

For p = 5 (the uniform design) and n = 10^6 and 10^7 subset reports held as strings
(as read from a file), measures in one run:

* aggregation (one pass: pandas.factorize + numpy.bincount) plus MoM;
* aggregation plus EM (SQUAREM) on the counts;
* a per-record EM as in the paper, O(n p) per iteration (vectorized numpy over the n x p
  indicator matrix; no Python loop), at n = 10^6 only;
* scipy's general constrained optimizer (SLSQP) on the same (aggregated) likelihood;
* the time of the symbolic analysis (moments, MoM covariance, coverage) of the uniform
  design for p = 4..8, exact at a population and symbolic in w.

Prints times and ratios.  Run:  python bench/subset_speed.py [--quick]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.optimize import minimize

import privspec
from privspec.backends.core.compile import channel_of
from privspec.backends.core.estimators import em, mom
from privspec.backends.finite.backend import FiniteBackend
from privspec.backends.finite.data import count_observations

LABELS = ("a", "b", "c", "d", "e")
W = np.array([0.05, 0.1, 0.15, 0.3, 0.4])
SPEC = f"""variable x: categorical {{{', '.join(LABELS)}}}
population x ~ categorical({', '.join(map(str, W))})
mechanism u = subset(x, uniform)
query w = estimate distribution(x) from u by mom
"""


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def reports(n: int, rng: np.random.Generator):
    model = privspec.load(SPEC).model
    mech = model.mechanisms["u"]
    ch = channel_of(mech)
    obs = rng.choice(ch.n_obs, size=n, p=ch.Kn @ W)
    text = np.asarray(ch.obs_labels, dtype=object)[obs]
    return mech, ch, pd.DataFrame({"x": text}), obs


def per_record_em(ch, obs: np.ndarray, tol: float = 1e-10, max_iter: int = 5000):
    """The paper's EM over respondents: w_j <- mean_i w_j 1{j in a_i} / (1_{a_i}^T w)."""
    R = ch.Tn.T[obs]                       # n x p indicators of each respondent's subset
    w = np.full(ch.p, 1.0 / ch.p)
    for it in range(1, max_iter + 1):
        denom = R @ w
        new = w * (R / denom[:, None]).mean(axis=0)
        if np.max(np.abs(new - w)) < tol:
            return new, it
        w = new
    return w, max_iter


def scipy_mle(ch, counts: np.ndarray):
    K = ch.Kn
    nz = counts > 0

    def nll(w):
        return -float(counts[nz] @ np.log(np.maximum(K[nz] @ w, 1e-300)))

    def grad(w):
        return -(K[nz].T @ (counts[nz] / np.maximum(K[nz] @ w, 1e-300)))

    res = minimize(nll, np.full(ch.p, 1.0 / ch.p), jac=grad, method="SLSQP",
                   bounds=[(0, 1)] * ch.p, constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}],
                   options={"ftol": 1e-14, "maxiter": 1000})
    return res.x, -res.fun


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = 10^5 and 10^6 only")
    args = ap.parse_args()
    rng = np.random.default_rng(2026)
    sizes = (10**5, 10**6) if args.quick else (10**6, 10**7)
    print("subset privacy, uniform design, p = 5")
    for n in sizes:
        mech, ch, frame, obs = reports(n, rng)
        counts, t_agg = timed(lambda: count_observations(mech, frame))
        fit_mom, t_mom = timed(lambda: mom(ch, counts))
        fit_em, t_em = timed(lambda: em(ch, counts))
        (w_sp, ll_sp), t_sp = timed(lambda: scipy_mle(ch, counts))
        print(f"\nn = {n:,}")
        print(f"  aggregation (factorize + bincount)   {t_agg:8.3f} s")
        print(f"  aggregation + MoM                    {t_agg + t_mom:8.3f} s   (MoM alone {t_mom * 1e3:.2f} ms)")
        print(f"  aggregation + EM                     {t_agg + t_em:8.3f} s   (EM alone {t_em * 1e3:.2f} ms, "
              f"{fit_em.iterations} EM steps, KKT {fit_em.kkt:.1e})")
        print(f"  scipy SLSQP on the same likelihood   {t_sp:8.3f} s   ratio to our EM {t_sp / t_em:8.1f}x, "
              f"loglik gap {fit_em.loglik - ll_sp:+.2e}")
        if n <= 10**6:
            (w_pr, iters), t_pr = timed(lambda: per_record_em(ch, obs))
            print(f"  per-record EM (O(np) per iteration)  {t_pr:8.3f} s   ({iters} iterations; "
                  f"ratio to aggregation + EM {t_pr / (t_agg + t_em):8.1f}x, to EM on counts {t_pr / t_em:8.0f}x)")
            print(f"    max |w_per-record - w_counts| = {np.max(np.abs(w_pr - fit_em.w)):.2e}")
        del frame, obs
    # EM's cost per iteration does not grow with n: it sees only the counts
    mech, ch, frame, _ = reports(10**4, rng)
    small = count_observations(mech, frame)
    big = small * 1000
    _, t_small = timed(lambda: [em(ch, small, accelerate=False, max_iter=200, tol=0) for _ in range(5)])
    _, t_big = timed(lambda: [em(ch, big, accelerate=False, max_iter=200, tol=0) for _ in range(5)])
    print(f"\nEM, 200 iterations on counts from n = 10^4 vs n = 10^7: {t_small:.3f} s vs {t_big:.3f} s "
          f"(ratio {t_big / t_small:.2f}: cost independent of n)")

    print("\nsymbolic analysis of the uniform design (moments, MoM covariance, coverage)")
    for p in range(4, 9):
        labels = ", ".join(f"c{i}" for i in range(p))
        probs = ", ".join(f"{k + 1}/{p * (p + 1) // 2}" for k in range(p))
        text = (f"variable x: categorical {{{labels}}}\npopulation x ~ categorical({probs})\n"
                "mechanism u = subset(x, uniform)\nquery m = moments(u)\n"
                "query v = avar(distribution(x) from u by mom)\nquery c = coverage(u)\n"
                "variable y: categorical {" + labels + "}\nmechanism s = subset(y, uniform)\nquery cs = coverage(s)\n")
        model = privspec.load(text).model
        backend = FiniteBackend()
        _, t_exact = timed(lambda: [backend.answer(model, model.queries[q], "analyze") for q in ("m", "v", "c")])
        _, t_sym = timed(lambda: backend.answer(model, model.queries["cs"], "analyze"))
        print(f"  p = {p}: {2 ** p - 2 * p - 2:4d} subsets in nu; exact at the population {t_exact:7.3f} s; "
              f"coverage symbolic in w {t_sym:7.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
