"""Draw docs/img/interval_cdf.png: the NPMLE of a distribution function from Case-II
interval data, with its pointwise 95% band (profile likelihood; the bootstrap should that fail)
and the true CDF.

1,000 respondents with Y ~ N(1/2, 1) report (U, V] from two sorted Logistic(0, 2)
anchors (seeded), as ``interval(score, case2(logistic(0, 2)))`` would collect them.

    python docs/img/make_cdf_plot.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import sympy
from scipy import stats

from privspec.backends.interval.fit import aggregate
from privspec.backends.interval.sampling import sample_interval
from privspec.backends.interval.npmle.estimator import cdf_confidence_band, npmle
from privspec.results.plots import plot_cdf
from privspec.model.graph import IntervalMechanism, Law, Variable

OUT = Path(__file__).resolve().parent / "interval_cdf.png"


def main() -> None:
    rng = np.random.default_rng(10)
    mech = IntervalMechanism("c2", Variable("score", "continuous"), "case2",
                             Law("logistic", (("location", sympy.Integer(0)), ("scale", sympy.Integer(2)))), 3)
    y = rng.normal(0.5, 1.0, 1000)
    left, right, counts = aggregate(*sample_interval(mech, y, rng))
    fit = npmle(left, right, counts)
    x = np.linspace(-1.5, 2.5, 17)
    try:
        lower, upper = cdf_confidence_band(fit, left, right, counts, x)
        how = "profile likelihood"
    except ValueError:  # should the profile solve fail, the bootstrap band instead
        lower, upper = cdf_confidence_band(fit, left, right, counts, x, method="bootstrap", reps=200, seed=1)
        how = "bootstrap"
    plot_cdf(fit, (x, lower, upper), OUT, truth=stats.norm(0.5, 1).cdf, xlabel="score",
             title=f"NPMLE from 1,000 Case-II reports, 95% pointwise band ({how})")
    print(f"wrote {OUT} (loglik {fit.loglik:.3f}, kkt {fit.kkt:.1e}, {int((fit.mass > 0).sum())} support intervals)")


if __name__ == "__main__":
    main()
