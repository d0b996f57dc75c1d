"""The back end of the local-DP frequency oracles (``sue``, ``oue``, ``blh``, ``olh``, ``ss``,
``hr``, ``adp``): what a spec asks of them, answered with :mod:`privspec.backends.oracles.pure`.

* ``epsilon(M)``: the declared epsilon, and the one read back from the mechanism's report
  probabilities (they must agree: a test and this back end check it);
* ``avar(distribution(X) from M by mom)``: ``n`` times the full covariance of the unbiased
  estimator at the declared population, sampling plus privacy noise (``se = population``)
  or privacy noise alone given the collected table (``mom(se = conditional)``), with the
  closed forms of ``p*, q*`` and of ``n Var(f_hat_v)`` in epsilon and d;
* ``estimate distribution(X) from M by mom(project = none | clip | euclidean)`` (the
  unbiased estimator) or ``by mle`` (the iterative Bayesian update), on data (``run``) and
  in seeded simulations (``simulate``), with standard errors and 95% intervals;
* the same estimates with survey weights, strata and clusters (``run --weights``): the Hajek
  versions with design-based standard errors (:mod:`privspec.backends.oracles.weighted`);
* ``leakage(M)`` (``prediction``, ``individual``): the chance that an adversary who knows
  the protocol and the population guesses a respondent's category from one report
  (Bayes vulnerability, Def. 7 of the subset-privacy paper) and the largest posterior of
  any report, exact or by a stated Monte Carlo (:mod:`privspec.backends.oracles.guessing`);
* ``privatize``: reports drawn per row (a row's report a function of seed, row index and
  value), written as text (:func:`privspec.backends.oracles.pure.format_reports`).

Data reach the estimators as the distinct reports of the column and their counts (the
engine's tally): parsed once per distinct report, reduced to support counts (``mom``) or
to the distinct support sets (``mle``).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import sympy

from privspec.model import costs
from privspec.errors import BackendError, DataError, Diagnostic
from privspec.model.graph import ModelGraph, Query
from privspec.model.query_kinds import ORACLE, Answers
from privspec.results.kinds import Avar, Epsilon, Estimate, Leakage, Simulation
from privspec.results.result import Result
from privspec.results.values import Inference, Matrix, Table, Vector
from privspec.backends import register
from privspec.backends.oracles.guessing import GUESSES
from privspec.backends.oracles import multi_backend as frequency_multi
from privspec.backends.core.frequency import FloatRangeError
from privspec.backends.oracles import sampling
from privspec.backends.oracles.longitudinal import LONGITUDINAL, longitudinal
from privspec.backends.oracles.protocol import OneAttributeOracle, Oracle
from privspec.backends.oracles.pure import oracle
from privspec.backends.oracles.reports import avar_extras, mle_fit, number_of, read_reports, read_support_counts
from privspec.backends.oracles.weighted import design_result, oracle_design_fit, weighted_supports
from privspec.backends.data.engines import PandasEngine
from privspec.backends.finite.data import raw_codes
from privspec.backends.finite.estimates import conditional_covariance, wald_inference
from privspec.backends.finite.truth import as_matrix, as_vector
from privspec.backends.core.normal import Z95
from privspec.backends.core.populations import bind_parameters, population_vector
from privspec.backends.core.rowrandom import RowRandom, row_key, stream_of
from privspec.backends.core.projections import PROJECTIONS
from privspec.backends.core.projections import project as project_onto

#: what this back end answers (:mod:`privspec.model.query_kinds`)
_ANSWERS = (
    Answers(("epsilon",), ORACLE),
    # the best guess from one report (prediction) and the worst report's posterior (individual)
    Answers(("leakage",), ("oracle",)),
    Answers(("avar",), ("oracle",), estimands=("distribution", "joint"), methods=("mom",)),
    Answers(("estimate",), ("oracle",), ("run", "simulate"), estimands=("distribution", "joint"),
            methods=("mom", "mle")),
    # several attributes (spl, smp, rsfd): one attribute's distribution at a time
    Answers(("avar",), ("multi_oracle",), estimands=("distribution",), methods=("mom",)),
    # one attribute's best guess from a whole report (a comparison's prediction)
    Answers(("leakage",), ("multi_oracle",), estimands=("distribution",)),
    Answers(("estimate",), ("multi_oracle",), ("run", "simulate"), estimands=("distribution",),
            methods=("mom", "mle")),
)
#: rows privatized at once (per-row randomness: the result does not depend on it)
CHUNK = 1 << 20
#: exact (sympy) covariances up to this many categories (at exact epsilon and population); floats beyond
EXACT_CATEGORIES = 16


def _exact(x: Any) -> bool:
    """A number sympy holds exactly (a rational, e, a logarithm...), not a float."""
    x = sympy.sympify(x)
    return bool(x.is_number) and not x.atoms(sympy.Float)


# ---- the oracle of a mechanism --------------------------------------------------------------------
def oracle_of(model: ModelGraph, mech: Any) -> OneAttributeOracle:
    """The oracle a mechanism declares (one round, or longitudinal), at the parameters' values."""
    if mech.protocol in LONGITUDINAL:
        try:
            return longitudinal(mech.protocol, mech.variable.p, number_of(model, mech.epsilon, "epsilon"),
                                number_of(model, mech.first, "first"))
        except ValueError as e:
            raise BackendError(Diagnostic("B412", str(e))) from None
    g = int(mech.hash_range) if mech.hash_range is not None else None
    k = int(mech.subset_size) if mech.subset_size is not None else None
    eps = number_of(model, mech.epsilon, "epsilon")
    if eps == 0:  # positive (the checker says so), but below the smallest double
        raise float_range(model, mech, FloatRangeError(0.0, math.inf))
    try:
        return oracle(mech.protocol, mech.variable.p, eps, g=g, k=k)
    except ValueError as e:
        raise BackendError(Diagnostic("B412", str(e))) from None


def float_range(model: ModelGraph, mech: Any, e: FloatRangeError) -> BackendError:
    """B416: a covariance of ``mech`` beyond floating point (its epsilon is too small; for a
    longitudinal oracle its ``first``, always the smaller)."""
    name = "first" if getattr(mech, "first", None) is not None else "epsilon"
    value = bind_parameters(model, getattr(mech, name))
    shown = sympy.sstr(sympy.N(value, 3)) if getattr(value, "is_number", False) else str(value)
    return BackendError(Diagnostic("B416", e.describe(shown, name), hint=e.HINT))


def _population(model: ModelGraph, mech: Any) -> sympy.Matrix | None:
    return population_vector(model, [mech.variable])


def _declared_population(model: ModelGraph, mech: Any, what: str) -> sympy.Matrix:
    """The declared population of the mechanism's variable; B001 without one."""
    w = _population(model, mech)
    if w is None:
        raise BackendError(Diagnostic("B001", f"{what} needs a population for {mech.variable.name}",
                                      hint=f"population {mech.variable.name} ~ categorical(...)"))
    return w


# ---- estimates ------------------------------------------------------------------------------------
def fit(q: Query, o: OneAttributeOracle, reports: Any, counts: np.ndarray, support: np.ndarray | None = None) -> dict:
    """The estimate of ``q`` (``mom`` or ``mle``) from distinct reports and their counts:
    ``w``, ``V`` (n times its covariance, of the kind ``se`` asks; None when unknown), and notes.

    ``mom`` needs only the support counts: given as ``support`` (with ``counts`` then the
    number of reports, :func:`read_support_counts`), the reports are not looked at."""
    n = float(np.sum(counts))
    if n <= 0:
        raise DataError(Diagnostic("D103", "no report was collected: nothing to estimate from"))
    method = q.method.name
    options = q.method.options
    se_kind = str(options.get("se", "population"))
    out: dict = {"n": n, "se_kind": se_kind, "notes": []}
    if method == "mom":
        project = str(options.get("project", "none"))
        raw = o.unbiased(o.support_counts(reports, counts) if support is None else support, n)
        out.update(w=project_onto(raw, project), projection=project)
        # the covariance of the linear estimator, at the estimate brought onto the simplex
        V = o.covariance(project_onto(raw, "clip"), 1.0, conditional=(se_kind == "conditional"))
        if project != "none" and np.any(raw < 0):
            out["notes"].append("the projection moved the estimate: its standard errors are the linear "
                                "estimator's (conservative near the boundary)")
        out["V"] = V
    else:
        w, V, loglik = mle_fit(o.report_oracle(), reports, counts, o.likelihood_pair())
        out["w"] = w
        out["loglik"] = loglik
        if V is None:
            out["notes"].append("no standard errors: the observed information is too large to form or singular "
                                "(an estimate on the boundary)")
        elif se_kind == "conditional":
            V = conditional_covariance(V, w)
        out["V"] = V
    return out


def _result(q: Query, labels: tuple[str, ...], o: OneAttributeOracle, est: dict) -> Result:
    n = est["n"]
    extras: dict = {"method": q.method.name, "n": int(round(n)), **o.facts()}
    if est.get("projection"):
        extras["projection"] = est["projection"]
    V = est["V"]
    inference = Inference(None, None, None, "no standard errors (see note)")
    if V is not None:
        se = np.sqrt(np.maximum(np.diag(V), 0.0) / n)
        extras["se"] = as_vector(se, labels)
        extras["se_kind"] = est["se_kind"]
        inference = wald_inference(est["w"], se, lambda: V / n)
        extras["ci95"] = {lab: [float(a), float(b)] for lab, a, b in zip(labels, *inference.interval(0.95))}
        extras["ci_method"] = inference.method
    if "loglik" in est:
        extras["loglik"] = est["loglik"]
    if est["notes"]:
        extras["note"] = "; ".join(est["notes"])
    return Estimate(_shaped(q, est["w"], labels), **extras, inference=inference)


# ---- simulation -----------------------------------------------------------------------------------
def simulate(model: ModelGraph, q: Query, o: OneAttributeOracle, n: int, reps: int, seed: int | None) -> Result:
    """``reps`` surveys of ``n`` respondents drawn from the population, privatized report by
    report (the sampler of ``privatize``), estimated as on data; empirical against analytic."""
    mech = q.mechanism
    w_exact = _population(model, mech)
    if w_exact is None:
        raise BackendError(Diagnostic("B001", f"simulate needs a population for {mech.variable.name}"))
    w = np.array([float(x) for x in w_exact], dtype=float)
    w = w / w.sum()
    labels = mech.variable.labels
    rng = np.random.default_rng(seed)
    key = row_key(rng.integers(0, 2 ** 63))
    tables = rng.multinomial(n, w, size=reps)
    se_kind = str(q.method.options.get("se", "population"))
    estimates, targets, covered, widths = [], [], [], []
    for r, table in enumerate(tables):
        x = np.repeat(np.arange(o.d), table)
        reports = o.privatize(x, RowRandom(key, rows=range(r * n, (r + 1) * n), stream=stream_of(mech)))
        est = fit(q, o, reports, np.ones(n))
        aim = w if se_kind == "population" else table / n
        estimates.append(est["w"])
        targets.append(aim)
        if est["V"] is not None:
            se = np.sqrt(np.maximum(np.diag(est["V"]), 0.0) / n)
            covered.append(np.abs(est["w"] - aim) <= Z95 * se)
            widths.append(2 * Z95 * se)
    E, A = np.array(estimates), np.array(targets)
    emp = np.cov(E - A, rowvar=False) * n
    value: dict = {
        "mean": Vector(labels, tuple(E.mean(axis=0))),
        "truth": Vector(labels, tuple(w)),
        "bias": Vector(labels, tuple(E.mean(axis=0) - A.mean(axis=0))),
        "n_cov_empirical": Matrix(labels, labels, emp),
    }
    if q.method.name == "mom" and str(q.method.options.get("project", "none")) == "none":
        V = o.covariance(w, 1.0, conditional=(se_kind == "conditional"))
        value["n_cov_analytic"] = Matrix(labels, labels, V)
        value["scaled_loss_limit"] = float(np.trace(V))
    loss = n * np.sum((E - A) ** 2, axis=1)
    value["scaled_loss_mean"] = float(loss.mean())
    value["scaled_loss_se"] = float(loss.std(ddof=1) / math.sqrt(len(loss))) if len(loss) > 1 else float("nan")
    if covered:
        value["ci95_coverage"] = Vector(labels, tuple(np.mean(covered, axis=0)))
        value["ci95_mean_width"] = Vector(labels, tuple(np.mean(widths, axis=0)))
    extras = {"method": q.method.name, "se_kind": se_kind, "n": n, "reps": reps, "seed": seed, **o.facts(),
              "note": "true tables ~ Multinomial(n, w); every respondent's report drawn by privatize's sampler"
                      + ("; errors against each replication's own true table (se = conditional)"
                         if se_kind == "conditional" else "")}
    return Simulation(value, **extras)


def _covers(query: Query) -> bool:
    """The estimand is the mechanism's own variable: ``distribution(X)`` from an oracle on
    X, or ``joint(X, Y)`` from an oracle on the combined ``X * Y`` (its cells in order)."""
    comps = [c for v in query.estimand.variables for c in v.components()]
    return comps == list(query.mechanism.variable.components())


def _shaped(query: Query, value: Any, labels: tuple[str, ...]) -> Any:
    """A joint's estimate as a table over its variables; a distribution as a vector."""
    if query.estimand.kind == "joint":
        variables = query.estimand.variables
        shape = tuple(len(v.labels) for v in variables)
        return Table(tuple(v.name for v in variables), tuple(v.labels for v in variables),
                     np.asarray(value, dtype=float).reshape(shape))
    return as_vector(value, labels)


def _engine(query: Query, options: dict) -> Any:
    """The engine holding the reports of ``query``'s mechanism (``run``'s data); B002 without."""
    data = options.get("data")
    if data is None:
        raise BackendError(Diagnostic("B002", f"query '{query.name}' needs data"))
    return data.engine_for(query.mechanism.name or query.name)


# ---- the back end ---------------------------------------------------------------------------------
@register
class FrequencyOracleBackend:
    """Local-DP frequency oracles: closed forms, estimates on data, simulation, privatize."""

    REGISTER_NAME = "oracle"
    ANSWERS = _ANSWERS

    def supports(self, query: Query, verb: str) -> bool:
        """Its ``ANSWERS``, for an estimand on the mechanism's own variable."""
        if not any(row.matches(query, verb) for row in self.ANSWERS):
            return False
        if query.kind == "leakage" and not set(query.metrics or GUESSES) <= set(GUESSES):
            return False
        if query.estimand is not None:
            if query.mechanism.family == "multi_oracle":
                return frequency_multi.attribute_of(query.mechanism, query) is not None
            return _covers(query)
        return True

    def answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        try:
            return self._answer(model, query, verb, **options)
        except FloatRangeError as e:
            raise float_range(model, query.mechanism, e) from None

    def _answer(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        mech = query.mechanism
        if mech.family == "multi_oracle":
            return self._multi(model, query, verb, **options)
        o = oracle_of(model, mech)
        labels = mech.variable.labels
        if query.kind == "epsilon":
            return self._epsilon(model, mech, o)
        if query.kind == "avar":
            return self._avar(model, query, o)
        if query.kind == "leakage":
            return self._leakage(model, query, o)
        project = str(query.method.options.get("project", "none"))
        if project not in PROJECTIONS:
            raise BackendError(Diagnostic("B413", f"unknown projection {project!r}",
                                          hint=f"project = {' | '.join(PROJECTIONS)}"))
        if verb == "simulate":
            return simulate(model, query, o, n=int(options["n"]), reps=int(options["reps"]), seed=options.get("seed"))
        engine = _engine(query, options)
        design = options["data"].design
        if design is not None:       # by mom or mle (weighted says so before the query gets here)
            weighted = oracle_design_fit(query, o, engine, design)
            return design_result(query, weighted, lambda w: _shaped(query, w, labels), labels, design, o.facts())
        if query.method.name == "mom":
            C, n = read_support_counts(mech.variable.name, mech.protocol, o, engine)
            return _result(query, labels, o, fit(query, o, None, np.array([n]), support=C))
        reports, counts = read_reports(mech.variable.name, mech.protocol, o, engine)
        return _result(query, labels, o, fit(query, o, reports, counts))

    def _multi(self, model: ModelGraph, query: Query, verb: str, **options: Any) -> Result:
        mech = query.mechanism
        mo = frequency_multi.multi_of(model, mech)
        if query.kind == "epsilon":
            return frequency_multi.epsilon_result(model, mech, mo)
        if query.kind == "avar":
            return frequency_multi.avar_result(model, query, mo)
        if query.kind == "leakage":
            return frequency_multi.leakage_result(model, query, mo, query.metrics)
        j = frequency_multi.attribute_of(mech, query)
        if verb == "simulate":
            return frequency_multi.simulate_attribute(model, query, mo, j, n=int(options["n"]),
                                                      reps=int(options["reps"]), seed=options.get("seed"))
        design = options["data"].design
        if design is not None:
            return frequency_multi.weighted_attribute(query, mo, j, _engine(query, options), design)
        reports, counts, n = frequency_multi.read_attribute(mech, mo, j, _engine(query, options))
        return frequency_multi.estimate_result(query, mo, j,
                                               frequency_multi.estimate_attribute(query, mo, j, reports, counts, n))

    def weighted(self, query: Query) -> str:
        """What of ``query`` has no version with survey weights ("" for an estimate by mom:
        :mod:`privspec.backends.oracles.weighted`)."""
        return weighted_supports(query)

    def _epsilon(self, model: ModelGraph, mech: Any, o: OneAttributeOracle) -> Result:
        declared = bind_parameters(model, mech.epsilon)
        first = bind_parameters(model, mech.first) if getattr(mech, "first", None) is not None else None
        try:
            extras = {**o.facts(), **o.read_back(declared, first)}
        except ValueError as e:
            raise BackendError(Diagnostic("B414", str(e))) from None
        return Epsilon(declared, **extras)

    def _leakage(self, model: ModelGraph, q: Query, o: OneAttributeOracle) -> Result:
        mech = q.mechanism
        w = np.array([float(x) for x in _declared_population(model, mech, "leakage")], dtype=float)
        guess = o.guessing(w)
        return Leakage(guess.by_metric(q.metrics), evaluation=guess.evaluation,
                       meaning="prediction: R = sum_o max_x w_x Pr(o | x) (Def. 7), the chance that the best guess "
                               "from one report is right; individual: the largest posterior max_x Pr(X = x | o) "
                               "of any report")

    def _avar(self, model: ModelGraph, q: Query, o: OneAttributeOracle) -> Result:
        mech = q.mechanism
        w_exact = _declared_population(model, mech, "avar")
        w = np.array([float(x) for x in w_exact], dtype=float)
        kind = str(q.method.options.get("se", "population"))
        V = o.covariance(w / w.sum(), 1.0, conditional=(kind == "conditional"))
        labels = mech.variable.labels
        eps = bind_parameters(model, mech.epsilon)
        value: Any = V
        exact = None
        if o.d <= EXACT_CATEGORIES and _exact(eps) and costs.exact_exp(eps) and all(_exact(x) for x in w_exact):
            total = sum(w_exact)
            exact = o.exact_covariance(eps, [x / total for x in w_exact], conditional=(kind == "conditional"))
        if exact is not None:
            value = exact.applyfunc(sympy.factor)
        eig = np.sort(np.linalg.eigvalsh((V + V.T) / 2))[::-1]
        extras = avar_extras(kind, o.facts(), V, evaluation="exact, at the declared population" if value is not V
                             else "floating point, at the declared population",
                             eigenvalues=[float(x) for x in eig])
        for name, X in o.collection_covariances(w / w.sum(), conditional=(kind == "conditional")).items():
            extras[name] = as_matrix(X, labels, labels)
        return Avar(as_matrix(value, labels, labels), **extras)

    # -- privatize --------------------------------------------------------------------------------
    def privatizes(self, mechanism: Any) -> bool:
        return getattr(mechanism, "family", None) in ORACLE

    def privatize(self, model: ModelGraph, mechanism: Any, frame: pd.DataFrame, seed: int | None = None,
                  offset: int = 0) -> pd.DataFrame:
        """The reports (text) of the mechanism's variable on the raw table ``frame``, in one
        column named after it (a combined variable's read from its parts' columns); the rows
        and index of ``frame``, none of its columns."""
        if mechanism.family == "multi_oracle":
            return frequency_multi.privatize_frame(model, mechanism, frame, seed, offset=offset)
        o = oracle_of(model, mechanism)
        var = mechanism.variable
        x, cols = raw_codes(PandasEngine(frame, "the raw data"), var)
        key = row_key(seed)
        stream = stream_of(mechanism)
        pieces = []
        for start in range(0, len(x), CHUNK):
            stop = min(len(x), start + CHUNK)
            rng = RowRandom(key, rows=range(offset + start, offset + stop), stream=stream)
            pieces.append(report_column(o.report_oracle(), o.privatize(x[start:stop], rng)))
        return pd.DataFrame({var.name: _concatenate(pieces)}, index=frame.index)


#: keys below this many values are grouped by a table (a bincount), not by hashing
_DENSE_KEYS = 1 << 20


def report_column(o: Oracle, reports: Any) -> Any:
    """The reports as a column: where a report fits in 8 bytes, a categorical (codes into the
    texts of the distinct reports, sorted as text, so that a tally of it is in canonical
    order already: no string built per row, none hashed back when counted, as for finite
    mechanisms); unary encoding's longer bit vectors (hex digits) and local hashing's
    ``seed:value`` as Arrow text built from one buffer (no Python string per report); else
    one text per row."""
    key = o.small_key(reports)
    if key is None:
        if o.HEX_TEXT:
            chars = sampling.hex_chars(reports)
            return _arrow_texts(chars.ravel(), np.arange(len(chars) + 1, dtype=np.int64) * chars.shape[1])
        if o.DECIMAL_TEXT:
            return _arrow_texts(*o.text_buffers(reports))
        texts = o.arrow_texts(reports)
        return o.format_reports(reports) if texts is None else pd.arrays.ArrowExtensionArray(texts)
    top = o.key_range
    if top <= _DENSE_KEYS:
        # a table over every possible key: the distinct ones in increasing order, no hashing
        seen = np.bincount(key.astype(np.intp), minlength=top) > 0
        uniq = np.flatnonzero(seen).astype(key.dtype)
        index = np.zeros(top, dtype=np.int32)
        index[uniq.astype(np.intp)] = np.arange(uniq.size, dtype=np.int32)
        codes = index[key.astype(np.intp)]
    else:
        codes, uniq = pd.factorize(key, sort=False)          # hashing, not a sort
        codes, uniq = np.asarray(codes).ravel(), np.asarray(uniq, dtype=key.dtype)
    text = np.asarray(o.format_reports(o.keyed_reports(uniq)))
    if not o.HEX_TEXT or top > _DENSE_KEYS:
        # the texts sorted (decimal codes and subsets do not sort as their keys do)
        order = np.argsort(text, kind="stable")
        rank = np.empty(order.size, dtype=np.int32)
        rank[order] = np.arange(order.size, dtype=np.int32)
        codes, text = rank[codes], text[order]
    return pd.Categorical.from_codes(codes, categories=pd.Index(text, dtype=object),
                                     validate=False)


def _arrow_texts(data: np.ndarray, offsets: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """Texts given as one buffer of ASCII codes and the rows' ``m + 1`` offsets in it, as an
    Arrow string column (no Python string per row)."""
    big = len(data) >= 2 ** 31
    kind = pa.LargeStringArray if big else pa.StringArray
    offsets = np.ascontiguousarray(offsets, dtype=np.int64 if big else np.int32)
    arr = kind.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data)))
    return pd.arrays.ArrowExtensionArray(arr)


def _concatenate(pieces: list[Any]) -> Any:
    """Pieces of a report column as one (categoricals merged on their texts, Arrow texts
    chunked)."""
    if not pieces:
        return np.empty(0, dtype=object)
    if all(isinstance(p, pd.Categorical) for p in pieces):
        return pieces[0] if len(pieces) == 1 else pd.api.types.union_categoricals(pieces)
    if all(isinstance(p, pd.arrays.ArrowExtensionArray) for p in pieces):
        if len(pieces) == 1:
            return pieces[0]
        arrays = [pa.array(p) for p in pieces]
        if len({a.type for a in arrays}) == 1:
            return pd.arrays.ArrowExtensionArray(pa.chunked_array(arrays))
    return np.concatenate([np.asarray(p, dtype=object) for p in pieces])


__all__ = ["FrequencyOracleBackend", "oracle_of", "fit", "simulate"]
