"""Make docs/img/oracle_variance.png: n Var(f_hat_v) at f_v = 0 (the closed forms of
privspec.backends.oracles.pure, Wang et al. 2017 Eq. (1)) against the domain size d, one
panel per epsilon, one line per frequency oracle.

    pip install . && python docs/img/make_oracle_variance.py
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from privspec.backends.oracles import pure as oracles  # noqa: E402
from privspec.backends.oracles.protocol import F  # noqa: E402

KINDS = ("grr", "sue", "oue", "blh", "olh", "ss", "hr")
EPSILONS = (0.5, 1.0, 2.0, 4.0)


def variance_at_zero(kind: str, d: int, eps: float) -> float:
    """n Var(f_hat_v) for a category of frequency 0, given the collected table."""
    o = oracles.oracle(kind, d, eps)
    return float(oracles.variance_formula(o, exact=False).subs(F, 0))


if __name__ == "__main__":
    ds = np.unique(np.round(np.logspace(np.log10(2), np.log10(4096), 40)).astype(int))
    fig, axes = plt.subplots(1, len(EPSILONS), figsize=(13, 3.6), sharey=False)
    for ax, eps in zip(axes, EPSILONS):
        for i, kind in enumerate(KINDS):
            ax.plot(ds, [variance_at_zero(kind, int(d), eps) for d in ds], label=kind, color=f"C{i}",
                    linestyle="--" if kind in ("sue", "blh") else "-")
        ax.axvline(3 * np.exp(eps) + 2, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"epsilon = {eps:g}", fontsize=10)
        ax.set_xlabel("d (categories)")
    axes[0].set_ylabel("n Var(f_hat) at f = 0")
    axes[-1].legend(fontsize=8, loc="upper left")
    fig.suptitle("Frequency oracles: variance against the domain size (dotted: d = 3 e^eps + 2, "
                 "where GRR stops being best)", fontsize=10)
    fig.tight_layout()
    fig.savefig(Path(__file__).with_name("oracle_variance.png"), dpi=100)
