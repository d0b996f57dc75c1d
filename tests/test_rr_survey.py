"""A real multi-attribute survey: the 1974 Redbook survey of women shipped with statsmodels
(``statsmodels.datasets.fair``: 6,366 respondents, 8 categorical attributes with 4 to 7
categories).  Each attribute is privatized by GRR with eps = 2; the AVD of w-way joint
estimates against the survey's own joint shows the paper's crossover (Fig. 5): castell
(RR-Ind-Joint) is more accurate for small w, RR-Independent for large w, castell's
error grows with w.  Seeded; about 2 s.  Skipped without statsmodels (a test extra)."""
from __future__ import annotations

import pytest

COLUMNS = ["rate_marriage", "age", "yrs_married", "children", "religious", "educ", "occupation", "occupation_husb"]


@pytest.mark.slow
def test_avd_against_w_crosses_over() -> None:
    sm = pytest.importorskip("statsmodels.api")
    from privspec.backends.rr.experiments import avd_by_dimension

    frame = sm.datasets.fair.load_pandas().data
    out = avd_by_dimension(frame, COLUMNS, 2.0, widths=range(1, 8), subsets=8, reps=2, seed=1)
    castell = [out[w]["castell"] for w in range(1, 8)]
    independent = [out[w]["independent"] for w in range(1, 8)]
    assert abs(castell[0] - independent[0]) < 1e-12                 # w = 1: both are Warner's
    assert castell[1] < 0.7 * independent[1]                        # w = 2: castell clearly better
    assert all(independent[w - 1] < castell[w - 1] for w in (5, 6, 7))   # large w: RR-Independent
    crossover = next(w for w in range(2, 8) if independent[w - 1] < castell[w - 1])
    assert 3 <= crossover <= 5                                      # the paper: w* = 4 to 5 on Adult
    assert castell[6] > castell[1]                                  # castell's error grows with w
    assert independent[6] < independent[1]                          # RR-Independent's falls (cells shrink)
