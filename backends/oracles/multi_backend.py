"""Several attributes under one local-DP budget (``spl``, ``smp``, ``rsfd``): what the
frequency-oracle back end (:mod:`privspec.backends.oracles.backend`) answers for them,
with :mod:`privspec.backends.oracles.multi`.

A report file holds one column per attribute, named after its variable (``smp`` adds the
column ``sampled``: which attribute the respondent reported; the other cells of its row
are empty).  ``distribution(X)`` of one attribute reads its column only (``smp``: with
``sampled``), as distinct reports and their counts.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
import sympy

from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import ModelGraph, Query
from privspec.results.kinds import Avar, Epsilon, Estimate, Leakage, Simulation
from privspec.results.result import Result
from privspec.results.values import Inference, Matrix, Vector
from privspec.backends.oracles.reports import avar_extras, check_reports, form_hint, mle_fit, number_of, tally_reports
from privspec.backends.oracles import multi
from privspec.backends.oracles.weighted import Law, design_result, hajek_frequencies
from privspec.backends.data.survey import SurveyDesign, design_tally, refuse_conditional_se
from privspec.backends.data.checks import require_columns
from privspec.backends.data.engines import PandasEngine
from privspec.backends.finite.data import raw_codes
from privspec.backends.finite.estimates import conditional_covariance, wald_inference
from privspec.backends.finite.truth import as_matrix, as_vector
from privspec.backends.core.normal import Z95
from privspec.backends.core.populations import bind_parameters, population_vector
from privspec.backends.core.rowrandom import RowRandom, row_key, stream_of
from privspec.backends.core.projections import project as project_onto

#: rows privatized at once (per-row randomness: the result does not depend on it)
CHUNK = 1 << 19


def multi_of(model: ModelGraph, mech: Any) -> multi.MultiOracle:
    """The :class:`~privspec.backends.oracles.multi.MultiOracle` a mechanism declares."""
    eps = number_of(model, mech.epsilon, "epsilon")
    ds = tuple(v.p for v in mech.attributes)
    try:
        if mech.fake is not None:            # rsfd: the variant says the oracles
            return multi.multi_oracle(mech.protocol, None, ds, eps, variant=mech.fake.replace("_", "-"))
        return multi.multi_oracle(mech.protocol, mech.oracles, ds, eps)
    except ValueError as e:
        raise BackendError(Diagnostic("B412", str(e))) from None


def attribute_of(mech: Any, query: Query) -> int | None:
    """The attribute a one-variable estimand is about (None: not one of them)."""
    est = query.estimand
    if est is None or est.kind != "distribution":
        return None
    return next((j for j, v in enumerate(mech.attributes) if v == est.variables[0]), None)


def _others_uniform(mo: multi.MultiOracle, j: int, f: np.ndarray) -> list[np.ndarray]:
    """Marginals for :func:`~privspec.backends.oracles.multi.covariance`: attribute ``j``'s
    ``f``, the others uniform (an attribute's covariance depends on its own marginal only)."""
    return [f if i == j else np.full(d, 1.0 / d) for i, d in enumerate(mo.ds)]


def attribute_covariance(mo: multi.MultiOracle, j: int, f: np.ndarray, conditional: bool, n: int,
                         split: int | None = None) -> np.ndarray:
    """``n`` times the covariance of attribute ``j``'s estimate from ``n`` respondents (smp:
    given that ``split`` of them reported it; without it, averaged over the split)."""
    split_all = None if split is None else [split if i == j else 1 for i in range(mo.A)]
    return n * mo.covariance(_others_uniform(mo, j, f), n, conditional, n_attribute=split_all)[j]


def epsilon_result(model: ModelGraph, mech: Any, mo: multi.MultiOracle) -> Result:
    """The local-DP epsilon of one respondent's whole report (any two tuples), read back
    from the probabilities; the one-attribute level beside it."""
    declared = bind_parameters(model, mech.epsilon)
    any_change = mo.epsilon_of("any")
    extras = mo.facts()
    extras["declared"] = declared
    extras["reason"] = mo.REASON
    if not mo.SPENDS_DECLARED:
        return Epsilon(sympy.Float(any_change, 15), **extras)
    if abs(any_change - float(declared)) > 1e-9 * max(1.0, float(declared)):
        raise BackendError(Diagnostic("B414", f"the epsilon read back ({any_change}) differs from the declared "
                                      f"one ({declared})"))
    return Epsilon(declared, **extras)


def avar_result(model: ModelGraph, q: Query, mo: multi.MultiOracle) -> Result:
    mech = q.mechanism
    j = attribute_of(mech, q)
    var = mech.attributes[j]
    w = population_vector(model, [var])
    if w is None:
        raise BackendError(Diagnostic("B001", f"avar needs a population for {var.name}"))
    f = np.array([float(x) for x in w], dtype=float)
    f = f / f.sum()
    kind = str(q.method.options.get("se", "population"))
    V = mo.asymptotic_covariance(j, f, kind == "conditional")
    extras = avar_extras(kind, mo.facts(j), V, note=mo.NOTE)
    for l, other in enumerate(mech.attributes):
        C = None if l == j else cross_avar(model, mo, j, l, var, other, kind == "conditional")
        if C is not None:
            extras[f"cross_covariance_{other.name}"] = as_matrix(C, var.labels, other.labels)
    return Avar(as_matrix(V, var.labels, var.labels), **extras)


def leakage_result(model: ModelGraph, q: Query, mo: multi.MultiOracle, metrics: Sequence[str]) -> Result:
    """One attribute's best guess from a whole report (``prediction``, ``individual``):
    :meth:`~privspec.backends.oracles.multidim.MultiOracle.guessing`, for attributes whose
    populations are declared apart (independent: the others' reports then say nothing of
    this one's answer)."""
    mech = q.mechanism
    j = attribute_of(mech, q)
    var = mech.attributes[j]
    pop = model.population_of(var.name)
    joint = [v.name for v in getattr(pop, "variables", ()) if v.name != var.name
             and v.name in {a.name for a in mech.attributes}]
    if joint:
        raise BackendError(Diagnostic("B417", f"the leakage of {var.name} from {mech.name}: its population is "
                                              f"declared jointly with {', '.join(joint)}, whose reports then tell "
                                              "about it too: not computed"))
    ws = [population_vector(model, [v]) for v in mech.attributes]
    ws = [None if w is None else np.array([float(x) for x in w], dtype=float) for w in ws]
    if ws[j] is None:
        raise BackendError(Diagnostic("B001", f"leakage needs a population for {var.name}"))
    try:
        guess = mo.guessing(j, ws)
    except ValueError as e:
        missing = [v.name for v, w in zip(mech.attributes, ws) if w is None]
        raise BackendError(Diagnostic("B001", f"the leakage of {var.name} from {mech.name}: {e}",
                                      hint=f"declare a population for {', '.join(missing)}")) from None
    return Leakage(guess.by_metric(metrics), evaluation=guess.evaluation,
                   meaning=f"prediction: the chance that the best guess of {var.name} from one report is right "
                           "(Def. 7); individual: the largest posterior of any report")


def cross_avar(model: ModelGraph, mo: multi.MultiOracle, j: int, l: int, var: Any, other: Any,
               conditional: bool) -> np.ndarray | None:
    """``n`` times the covariance of attribute ``j``'s and ``l``'s estimates as ``n`` grows
    (:meth:`~privspec.backends.oracles.multidim.MultiOracle.cross_covariance`), at the population; None
    where the spec does not give both attributes' populations.  Two populations declared
    apart are independent (their joint is the product, exactly: D = 0)."""
    pair = population_vector(model, [var, other])
    if pair is None:
        return None
    exact = sympy.Matrix(len(var.labels), len(other.labels), list(pair))
    exact = exact / sum(exact)
    fj_x = [sum(exact.row(i)) for i in range(exact.rows)]
    fl_x = [sum(exact.col(k)) for k in range(exact.cols)]
    fj, fl = np.array(fj_x, dtype=float), np.array(fl_x, dtype=float)
    independent = all((exact[i, k] - fj_x[i] * fl_x[k]).is_zero is True      # exact numbers: instant
                      for i in range(exact.rows) for k in range(exact.cols))
    P = np.outer(fj, fl) if independent else np.array(exact.tolist(), dtype=float)
    limit = mo.asymptotic_cross(P - np.outer(fj, fl), conditional)
    return limit if limit is not None else mo.cross_covariance(j, l, fj, fl, 1, conditional, P)


# ---- data ------------------------------------------------------------------------------------------
def read_attribute(mech: Any, mo: multi.MultiOracle, j: int, engine: Any) -> tuple[Any, np.ndarray, int]:
    """Attribute ``j``'s distinct reports (parsed) and their counts, and the number of
    respondents ``n`` (smp: all rows; the reports are those of the rows that sampled j)."""
    columns = attribute_columns(mech, mo, j)
    require_columns(pd.DataFrame(columns=engine.columns()), columns, getattr(engine, "source", "the data"))
    tally = engine.tally(columns)
    reports, mine = attribute_reports(mech, mo, j, tally)
    counts = np.asarray(tally.counts, dtype=float)
    return reports, counts[mine], int(counts.sum())


def attribute_columns(mech: Any, mo: multi.MultiOracle, j: int) -> list[str]:
    """The columns attribute ``j``'s reports are read from (smp: with ``sampled``)."""
    name = mech.attributes[j].name
    return [multi.SAMPLED, name] if mo.KEEPS_SAMPLED else [name]


def attribute_reports(mech: Any, mo: multi.MultiOracle, j: int, tally: Any) -> tuple[Any, np.ndarray]:
    """Attribute ``j``'s reports (parsed) in the distinct tuples of ``tally`` that report it,
    and which tuples those are (bool; smp: those whose ``sampled`` is j, else all).  Other
    columns may be counted beside them (a survey design's)."""
    var = mech.attributes[j]
    o = mo.oracles[j]
    if not mo.KEEPS_SAMPLED:
        return tally_reports(tally, var.name, mech.protocol, o), np.ones(len(tally.counts), dtype=bool)
    tally.check_no_missing([multi.SAMPLED])
    sampled = np.array([str(v).strip() for v in tally.column(multi.SAMPLED)], dtype=object)
    valid = np.isin(sampled, [str(i) for i in range(mo.A)])
    mine = sampled == str(j)
    # the cells of the attributes a row did not report are empty (missing to the engines)
    text = np.array(["" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v).strip()
                     for v in tally.column(var.name)], dtype=object)
    reports, bad = o.parse_reports(text[mine])
    bad_mask = ~valid
    bad_mask[np.flatnonzero(mine)[np.asarray(bad, dtype=np.int64)]] = True
    check_reports(tally, bad_mask, np.where(valid, text, sampled),
                  var.name if valid.all() else multi.SAMPLED, mech.protocol,
                  form_hint(o) + "; the column 'sampled' holds the index of the attribute reported "
                                 "(0 .. A-1, in the order of smp(...))")
    return reports, mine


def estimate_attribute(q: Query, mo: multi.MultiOracle, j: int, reports: Any, counts: np.ndarray,
                       n: int) -> dict:
    """Attribute ``j``'s estimate from its distinct reports and counts: ``w`` and ``V`` (n
    times its covariance at the estimate, of the kind ``se`` asks)."""
    o = mo.oracles[j]
    project = str(q.method.options.get("project", "none"))
    se_kind = str(q.method.options.get("se", "population"))
    m = float(counts.sum())              # reports of the attribute (smp: those who sampled it)
    if m <= 0:
        raise DataError(Diagnostic("D103", f"no respondent reported {q.estimand.variables[0].name}: nothing to "
                                           "estimate from"))
    if q.method.name == "mle":
        w, V, loglik = mle_fit(o, reports, counts, mo.likelihood_pair(j))
        if V is not None:
            V = V * (n / m)              # m reports of the attribute among n respondents (smp)
            if se_kind == "conditional":
                V = conditional_covariance(V, w)
        return {"w": w, "V": V, "n": n, "reports": int(round(m)), "projection": "none", "se_kind": se_kind,
                "loglik": loglik}
    C = o.support_counts(reports, counts)
    raw = mo.attribute_estimate(j, o, C, m, "none")
    split = int(round(m)) if mo.KEEPS_SAMPLED else None
    V = attribute_covariance(mo, j, project_onto(raw, "clip"), se_kind == "conditional", n=n, split=split)
    return {"w": project_onto(raw, project), "V": V, "n": n, "reports": int(round(m)), "projection": project,
            "se_kind": se_kind}


def weighted_attribute(q: Query, mo: multi.MultiOracle, j: int, engine: Any, design: SurveyDesign) -> Result:
    """Attribute ``j``'s weighted estimate by mom or mle (smp: over the rows that sampled it,
    a domain), with design-based standard errors (:mod:`privspec.backends.oracles.weighted`)."""
    refuse_conditional_se(str(q.method.options.get("se", "population")))
    mech = q.mechanism
    columns = attribute_columns(mech, mo, j)
    require_columns(pd.DataFrame(columns=engine.columns()), columns, getattr(engine, "source", "the data"))
    tally = design_tally(engine, design, columns)
    reports, mine = attribute_reports(mech, mo, j, tally)
    o = mo.oracles[j]
    split = mo.KEEPS_SAMPLED
    law = Law(o, mo.attribute_probs(j), lambda C, total: mo.attribute_estimate(j, o, C, total, "none"),
              lambda f, n, m: attribute_covariance(mo, j, f, False, n=n, split=m if split else None),
              lambda: mo.likelihood_pair(j))
    fit = hajek_frequencies(q, law, reports, tally, design, domain=mine)
    labels = mech.attributes[j].labels
    more = {"reports_of_attribute": fit.reports} if split else {}
    return design_result(q, fit, lambda w: as_vector(w, labels), labels, design, mo.facts(j), **more)


def estimate_result(q: Query, mo: multi.MultiOracle, j: int, est: dict) -> Result:
    var = q.mechanism.attributes[j]
    n = est["n"]
    extras: dict = {"method": q.method.name, "n": n, **mo.facts(j), "projection": est["projection"]}
    V = est["V"]
    if V is not None:
        se = np.sqrt(np.maximum(np.diag(V), 0.0) / n)
        inference = wald_inference(est["w"], se, lambda: V / n)
        extras.update(se=as_vector(se, var.labels), se_kind=est["se_kind"],
                      ci95={lab: [float(a), float(b)] for lab, a, b in zip(var.labels, *inference.interval(0.95))},
                      ci_method=inference.method)
    else:
        extras["note"] = "no standard errors: the observed information is singular (an estimate on the boundary)"
        inference = Inference(None, None, None, extras["note"])
    if mo.KEEPS_SAMPLED:
        extras["reports_of_attribute"] = est["reports"]
    if "loglik" in est:
        extras["loglik"] = est["loglik"]
    return Estimate(as_vector(est["w"], var.labels), **extras, inference=inference)


def privatize_frame(model: ModelGraph, mech: Any, frame: pd.DataFrame, seed: int | None, offset: int = 0
                    ) -> pd.DataFrame:
    """The reports on a raw table: a column per attribute (smp: and the column ``sampled``),
    the rows and index of ``frame``, none of its columns."""
    mo = multi_of(model, mech)
    names = [v.name for v in mech.attributes]
    engine = PandasEngine(frame, "the raw data")
    codes = np.empty((len(frame), mo.A), dtype=np.int64)
    for j, v in enumerate(mech.attributes):
        codes[:, j] = raw_codes(engine, v)[0]   # a combined attribute read from its parts' columns
    key = row_key(seed)
    pieces: list[dict[str, np.ndarray]] = []
    for start in range(0, len(frame), CHUNK):
        stop = min(len(frame), start + CHUNK)
        rng = RowRandom(key, rows=range(offset + start, offset + stop), stream=stream_of(mech))
        pieces.append(mo.format_reports(mo.privatize(codes[start:stop], rng), names))
    return pd.DataFrame({c: np.concatenate([p[c].astype(object) for p in pieces]) if pieces
                         else np.empty(0, dtype=object) for c in mo.column_names(names)}, index=frame.index)


def simulate_attribute(model: ModelGraph, q: Query, mo: multi.MultiOracle, j: int, n: int, reps: int,
                       seed: int | None) -> Result:
    """``reps`` surveys of ``n`` respondents: every attribute drawn from its population
    marginal (independently: one attribute's estimate depends on its own marginal only),
    privatized by the protocol's sampler, attribute ``j`` estimated as on data."""
    mech = q.mechanism
    ws = []
    for v in mech.attributes:
        w = population_vector(model, [v])
        if w is None:
            raise BackendError(Diagnostic("B001", f"simulate needs a population for {v.name}"))
        f = np.array([float(x) for x in w], dtype=float)
        ws.append(f / f.sum())
    rng = np.random.default_rng(seed)
    key = row_key(rng.integers(0, 2 ** 63))
    se_kind = str(q.method.options.get("se", "population"))
    var = mech.attributes[j]
    E, A, covered = [], [], []
    for r in range(reps):
        codes = np.column_stack([rng.choice(len(f), size=n, p=f) for f in ws])
        reports = mo.privatize(codes, RowRandom(key, rows=range(r * n, (r + 1) * n), stream=stream_of(mech)))
        values = reports.values[j]
        est = estimate_attribute(q, mo, j, values, np.ones(len(values)), n)
        aim = ws[j] if se_kind == "population" else np.bincount(codes[:, j], minlength=var.p) / n
        E.append(est["w"])
        A.append(aim)
        if est["V"] is not None:
            se = np.sqrt(np.maximum(np.diag(est["V"]), 0.0) / n)
            covered.append(np.abs(est["w"] - aim) <= Z95 * se)
    E, A = np.array(E), np.array(A)
    labels = var.labels
    value = {"mean": Vector(labels, tuple(E.mean(axis=0))), "truth": Vector(labels, tuple(ws[j])),
             "bias": Vector(labels, tuple(E.mean(axis=0) - A.mean(axis=0))),
             "n_cov_empirical": Matrix(labels, labels, np.cov(E - A, rowvar=False) * n)}
    if covered:
        value["ci95_coverage"] = Vector(labels, tuple(np.mean(covered, axis=0)))
    if q.method.name == "mom" and str(q.method.options.get("project", "none")) == "none":
        V = attribute_covariance(mo, j, ws[j], se_kind == "conditional", n=n)
        value["n_cov_analytic"] = Matrix(labels, labels, V)
    extras = {"method": q.method.name, "se_kind": se_kind, "n": n, "reps": reps, "seed": seed, **mo.facts(j),
              "note": "attributes drawn independently from their marginals; every respondent privatized by the "
                      "protocol's sampler"}
    return Simulation(value, **extras)
