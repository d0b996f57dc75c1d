"""Make docs/img/rr_avd_vs_w.png: AVD of w-way joint estimates against w, castell
(RR-Ind-Joint) and RR-Independent, on statsmodels' bundled Redbook survey (``fair``:
6,366 respondents, 8 categorical attributes), every attribute privatized by GRR with
eps = 2 (the castell paper's Fig. 5 on another survey).

    pip install ".[plot,test]" && python docs/img/make_rr_crossover.py
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import statsmodels.api as sm  # noqa: E402

from privspec.backends.rr.experiments import avd_by_dimension  # noqa: E402

COLUMNS = ["rate_marriage", "age", "yrs_married", "children", "religious", "educ", "occupation", "occupation_husb"]

if __name__ == "__main__":
    frame = sm.datasets.fair.load_pandas().data
    widths = range(1, 9)
    fig, ax = plt.subplots(figsize=(6, 4))
    for eps, style in ((2.0, "-"), (3.0, "--")):
        out = avd_by_dimension(frame, COLUMNS, eps, widths=widths, subsets=12, reps=3, seed=1)
        ax.plot(widths, [out[w]["castell"] for w in widths], "o" + style, color="C0",
                label=f"castell (RR-Ind-Joint), eps = {eps:g}")
        ax.plot(widths, [out[w]["independent"] for w in widths], "s" + style, color="C3",
                label=f"RR-Independent, eps = {eps:g}")
    ax.set_yscale("log")
    ax.set_xlabel("w (attributes in the joint)")
    ax.set_ylabel("AVD (largest cell error, mean over subsets)")
    ax.set_title("statsmodels 'fair' survey, n = 6,366, GRR per attribute", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(Path(__file__).with_name("rr_avd_vs_w.png"), dpi=110)
