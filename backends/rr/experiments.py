"""The castell paper's accuracy experiment (section IV-B, Fig. 5) on any raw table:
privatize every attribute with GRR, then for w = 1, 2, ... estimate w-way joints of
random attribute subsets by castell and by RR-Independent and average each one's AVD
against the raw table's own joint.

Everything goes through privspec's own paths: the spec is generated and loaded, raw
answers are privatized by the finite back end (:func:`privatize_frame`) and reports are
read and estimated by the randomized-response back end, as ``privspec privatize`` and
``privspec run`` would.
"""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np
import pandas as pd

import privspec
from privspec.model.graph import Estimand, Method, Query
from privspec.backends.finite.data import privatize_frame, tally_of
from privspec.backends.rr.problem import JointProblem, report_codes
from privspec.backends.rr.castell import castell
from privspec.backends.rr.hybrid import hybrid
from privspec.backends.rr.independent import independent
from privspec.backends.rr.metrics import avd, mae
from privspec.backends.rr.simulate import privatize_counts


def _quote(text: str) -> str:
    return '"' + str(text).replace('"', "'") + '"'


def study_spec(frame: pd.DataFrame, columns: Sequence[str], epsilon: float) -> str:
    """A spec declaring each column as a categorical variable and a product of GRRs."""
    lines = ['spec "castell study"']
    for c in columns:
        labels = ", ".join(_quote(v) for v in sorted(frame[c].astype(str).unique()))
        lines.append(f"variable {c}: categorical {{{labels}}}")
    factors = ", ".join(f"grr({c}, epsilon = {epsilon!r})" for c in columns)
    lines.append(f"mechanism m = product({factors})")
    return "\n".join(lines) + "\n"


def avd_by_dimension(frame: pd.DataFrame, columns: Sequence[str], epsilon: float, *,
                     widths: Sequence[int] | None = None, subsets: int = 8, reps: int = 1,
                     seed: int = 0, methods: Sequence[str] = ("castell", "independent")) -> dict[int, dict[str, float]]:
    """Mean AVD (the paper's: largest cell error per table, averaged over the subsets and
    replications) of each method's w-way joint estimates, for each w in ``widths``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 3000)
    >>> raw = pd.DataFrame({"a": a, "b": a ^ (rng.random(3000) < 0.1), "c": rng.integers(0, 2, 3000)})
    >>> out = avd_by_dimension(raw.astype(str), ["a", "b", "c"], 2.0, widths=[2], subsets=3)
    >>> out[2]["castell"] < out[2]["independent"]
    True
    """
    raw = frame[list(columns)].astype(str).reset_index(drop=True)
    model = privspec.load(study_spec(raw, columns, epsilon)).model
    mech = model.mechanisms["m"]
    rng = np.random.default_rng(seed)
    widths = list(widths or range(1, len(columns) + 1))
    picks = {}
    for w in widths:
        all_subsets = list(itertools.combinations(range(len(columns)), w))
        chosen = rng.choice(len(all_subsets), size=min(subsets, len(all_subsets)), replace=False)
        picks[w] = [all_subsets[i] for i in chosen]
    errors: dict[int, dict[str, list[float]]] = {w: {m: [] for m in methods} for w in widths}
    for r in range(reps):
        reports = privatize_frame(model, mech, raw, seed=seed + 1 + r)
        # the reports are counted once (a tally of the distinct report tuples); a subset's
        # table is one bincount over the tuples
        tally = tally_of(mech, reports, "reports")
        codes = [report_codes(f, tally) for f in mech.factors]
        for w in widths:
            for S in picks[w]:
                variables = tuple(model.variables[columns[j]] for j in S)
                truth = _empirical(raw, variables)
                shape = tuple(v.p for v in variables)
                index = np.ravel_multi_index(tuple(codes[j] for j in S), shape)
                counts = np.bincount(index, weights=tally.counts.astype(float),
                                     minlength=int(np.prod(shape))).reshape(shape)
                for m in methods:
                    q = Query(f"{m}_{w}", "estimate", mechanism=mech, estimand=Estimand("joint", variables),
                              method=Method(m))
                    fit = JointProblem(model, q).fit(counts)
                    errors[w][m].append(avd(truth, fit.table))
    return {w: {m: float(np.mean(v)) for m, v in errors[w].items()} for w in widths}


def _empirical(raw: pd.DataFrame, variables) -> np.ndarray:
    codes = [pd.Categorical(raw[v.name], categories=list(v.labels)).codes for v in variables]
    shape = [v.p for v in variables]
    index = np.ravel_multi_index(tuple(codes), shape)
    return np.bincount(index, minlength=int(np.prod(shape))).reshape(shape) / len(raw)


def table_study(table: np.ndarray, epsilon: float, seeds: int = 20,
                methods: Sequence[str] = ("castell", "independent", "hybrid", "hybrid_thresholds")
                ) -> dict[str, dict[str, float]]:
    """MAE and AVD of joint estimates of a whole table of respondents (counts), each
    attribute privatized by GRR with ``epsilon``, over ``seeds`` randomizations of the
    same respondents (:func:`privspec.backends.rr.simulate.privatize_counts`: from the
    counts, exactly as privatizing every respondent would); for the hybrids also how
    often castell was chosen.

    ``hybrid`` is the default (``switch = variance``), ``hybrid_thresholds`` the paper's
    bound rule.  MAE: the mean absolute cell error; AVD: the largest cell error (the
    paper's, for one table).

    Examples
    --------
    >>> table = np.array([[3000, 200], [400, 2400]])           # strongly dependent
    >>> out = table_study(table, 1.0, seeds=5)
    >>> out["castell"]["mae"] < out["independent"]["mae"], out["hybrid"]["castell_chosen"]
    (True, 5)
    """
    table = np.asarray(table, dtype=float)
    truth = table / table.sum()
    K = []
    for d in table.shape:
        e = np.exp(epsilon)
        P = np.full((d, d), 1 / (e + d - 1))
        np.fill_diagonal(P, e / (e + d - 1))
        K.append(P.T)
    fitters = {"castell": lambda c: castell(c, K, variance=False),
               "independent": lambda c: independent(c, K, variance=False),
               "hybrid": lambda c: hybrid(c, K), "hybrid_thresholds": lambda c: hybrid(c, K, "thresholds")}
    errors: dict[str, list] = {m: [] for m in methods}
    chosen = {m: 0 for m in methods}
    for seed in range(seeds):
        reports = privatize_counts(table, K, np.random.default_rng(seed))
        for m in methods:
            fit = fitters[m](reports)
            errors[m].append((mae(truth, fit.table), avd(truth, fit.table)))
            chosen[m] += fit.info.get("chosen") == "castell"
    out: dict[str, dict[str, float]] = {}
    for m in methods:
        E = np.array(errors[m])
        out[m] = {"mae": float(E[:, 0].mean()), "avd": float(E[:, 1].mean())}
        if m.startswith("hybrid"):
            out[m]["castell_chosen"] = chosen[m]
    return out
