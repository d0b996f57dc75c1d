"""RRreg's published logistic regression on the stochastic lie detector (Heck and Moshagen
2018, JSS 85(2), section 4.3) beside privspec's fit of the same model.

RRreg's minarets data (1,621 respondents; the 1,256 with ``RRdesign == 1`` answered the
SLD question with p = 2/12, 10/12 by ``condition``) are not bundled here: export them from
R with ``write.csv(RRreg::minarets, "minarets.csv", row.names = FALSE)`` and run

    python bench/rrreg_minarets.py --data minarets.csv

The model is ``rrt ~ age.c * leftRight.c``: privspec's language has no interaction term,
so the product enters as a column of the design and the fit is
:func:`privspec.backends.rr.two_group_regression.fit_two_group` on the counts of each
distinct (condition, rrt, age.c, leftRight.c). privspec's coefficients are the log odds
of no; RRreg's of yes, so they are negated here.
"""
from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from privspec.backends.rr.two_group_regression import channel_parts, fit_two_group, joint_derivatives

#: RRreg's printed summary (the paper, section 4.3): estimate and standard error
RRREG = {"(Intercept)": (1.89659, 0.38104), "age.c": (0.01364, 0.06071), "leftRight.c": (0.62442, 0.15681),
         "age.c:leftRight.c": (-0.02039, 0.01168), "t": (0.65170, 0.01800)}
RRREG_LOGLIK = -821.084


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="RRreg's minarets data as CSV (exported from R)")
    args = parser.parse_args()
    frame = pd.read_csv(args.data)
    frame = frame[frame["RRdesign"] == 1]
    keys, counts = np.unique(frame[["condition", "rrt", "age.c", "leftRight.c"]].to_numpy(dtype=float), axis=0,
                             return_counts=True)
    a, lr = keys[:, 2], keys[:, 3]
    X = np.column_stack([np.ones(len(keys)), a, lr, a * lr])
    p = np.array([2 / 12, 10 / 12])[keys[:, 0].astype(int) - 1]
    K0, K1 = channel_parts("sld", p, np.where(keys[:, 1] == 1, 0, 1))
    fit = fit_two_group(X, K0, K1, counts.astype(float))
    mine = np.append(-fit.coef[:, 0], fit.phi)
    theirs = np.array([[v for v, _ in RRREG.values()]]).T
    at_theirs = joint_derivatives(X, K0, K1, counts.astype(float), -theirs[:-1], float(theirs[-1, 0]))[0]
    print(f"n = {int(counts.sum())}; log likelihood: privspec {fit.loglik:.7f}, RRreg {RRREG_LOGLIK} "
          f"(RRreg's estimates in privspec's likelihood: {at_theirs:.7f})")
    print(f"{'term':<20}{'privspec':>12}{'se':>10}{'RRreg':>12}{'se':>10}")
    for (term, (est, se)), m, s in zip(RRREG.items(), mine, fit.se):
        print(f"{term:<20}{m:>12.5f}{s:>10.5f}{est:>12.5f}{se:>10.5f}")


if __name__ == "__main__":
    main()
