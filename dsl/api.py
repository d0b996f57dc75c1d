"""The Python API: answer a spec's queries from Python, with DataFrames in and out.

The command line is a thin layer over these functions (``privspec analyze|run|simulate|
privatize``); :class:`privspec.Spec` offers them as methods:

>>> import privspec
>>> spec = privspec.load("variable x: categorical {a, b, c, d}\\n"
...                      "population x ~ categorical(1/2, 1/4, 1/8, 1/8)\\n"
...                      "mechanism m = subset(x, uniform)\\nquery tau = coverage(m)")
>>> res = spec.analyze()
>>> res["tau"].value, res.ok
(9/16, True)

Nothing here reaches a back end's internals from user code: the registry says where each
query goes (:func:`privspec.backends.route`), exactly as the runner does.
"""
from __future__ import annotations

import html
import json
import math
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, Sequence

import pandas as pd

from privspec.backends import comparer_for, privatizer_for, route
from privspec.backends.collect.urls import reads_a_store
from privspec.backends.core.numbers import parse_numbers
from privspec.backends.data.bindings import DataBindings, data_role, observed_columns
from privspec.backends.data.replicates import Replicates
from privspec.backends.data.survey import SurveyDesign
from privspec.backends.data.checks import check_columns, frame_nested, require_flat
from privspec.backends.data.csv_cells import guard_cells
from privspec.backends.data.writing import write_table_atomic
from privspec.backends.privatize import adds_rows, kept_columns, with_kept
from privspec.errors import BackendError, DataError, Diagnostic, PrivspecError, SpecError, did_you_mean
from privspec.model import costs, query_kinds
from privspec.model.graph import Query
from privspec.model.query_kinds import VERBS
from privspec.outputs import check_output, write_text_atomic
from privspec.progress import chosen
from privspec.results.compare_report import report_targets, write_report
from privspec.results.report import Summary
from privspec.results.result import Result, render_results


@dataclass
class Results(Mapping):
    """The answers to a spec's queries: a mapping query name -> :class:`~privspec.results.result.Result`
    (answered queries only), with the queries that could not be answered in :attr:`failures`.

    Attributes
    ----------
    verb : str
        ``analyze``, ``run`` or ``simulate``.
    queries : tuple
        The queries asked, in spec order.
    failures : dict
        Query name -> the :class:`~privspec.errors.PrivspecError` that stopped it.
    """

    verb: str
    model: Any = field(repr=False)
    queries: tuple
    results: dict
    failures: dict = field(default_factory=dict)
    #: query name -> what the runner says instead of the error's own text (a query that
    #: needs data under analyze, a kind no back end answers)
    messages: dict = field(default_factory=dict, repr=False)

    def __getitem__(self, name: str) -> Result:
        if name in self.results:
            return self.results[name]
        if name in self.failures:
            raise KeyError(f"query '{name}' was not answered: {self.failures[name].diagnostics[0].message}")
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __repr__(self) -> str:
        failed = f", {len(self.failures)} failed" if self.failures else ""
        return f"<Results of {self.verb}: {len(self.results)} answered{failed}>"

    @property
    def ok(self) -> bool:
        """Every query asked was answered."""
        return not self.failures

    def render(self, fmt: str = "text", verbose: bool = False) -> str:
        """The answers as the command line prints them: ``text``, ``json``, ``markdown`` or
        ``latex``.  JSON also lists each failed query, in query order, as ``{"kind",
        "value": null, "error": {...}}`` (the documented contract).  Text: each query under
        a one-line caption of what it answers; ``verbose`` adds the extras that restate
        derivations (``meaning``, ``eigenvalues`` ...: :data:`privspec.results.report.DETAILS`)."""
        if fmt != "json":
            return render_results(fmt, self.model, self.results, verbose=verbose)
        return json.dumps(self.to_dict(), indent=2, default=str)

    def to_dict(self) -> dict:
        """The JSON document as a dict (see :meth:`render`)."""
        doc = json.loads(render_results("json", self.model, self.results))
        answered = doc.get("queries", {})
        entries: dict[str, Any] = {}
        for q in self.queries:
            if q.name in answered:
                entries[q.name] = answered[q.name]
            elif q.name in self.failures:
                diags = self.failures[q.name].diagnostics
                entries[q.name] = {"kind": q.kind, "value": None, "error": diags[0].to_dict()}
                if len(diags) > 1:
                    entries[q.name]["errors"] = [d.to_dict() for d in diags]
        doc["queries"] = entries
        return doc

    def to_json(self) -> str:
        return self.render("json")

    def summary(self) -> Any:
        """The answers as a :class:`privspec.results.report.Summary`: it prints as the text the command
        line prints (``str()`` of it is that text) and renders as HTML in a notebook, with
        ``as_text()``, ``as_html()``, ``as_markdown()`` and ``as_latex()`` (the ``text``,
        HTML, ``markdown`` and ``latex`` renderings of :meth:`render`)."""
        return Summary(self.render("text"), html=self._repr_html_, markdown=lambda: self.render("markdown"),
                       latex=lambda: self.render("latex"))

    def _repr_html_(self) -> str:
        """Each answer's table under its name; failures with their code and message."""
        parts = []
        for q in self.queries:
            if q.name in self.results:
                parts.append(f"<h4>{html.escape(q.name)}</h4>{self.results[q.name]._repr_html_()}")
            elif q.name in self.failures:
                d = self.failures[q.name].diagnostics[0]
                parts.append(f"<h4>{html.escape(q.name)}</h4><p>not answered: {d.code} "
                             f"{html.escape(d.message)}</p>")
        return "<div>" + "".join(parts) + "</div>"

    def to_frame(self) -> Any:
        """Every answer's numbers in one tidy long table, one number a row: ``query``,
        ``kind``, ``label`` (a category, a matrix row, a joint table's cell ``a1, b2``; empty
        for a result of one row), ``statistic`` (``estimate``, ``se``, ``lower``, ``upper``,
        ``value``, a matrix column ...), ``value`` (a float) and ``error`` (the code of what
        stopped a query, whose one row has no value; else empty).  Each result's own
        :meth:`~privspec.results.result.Result.to_long`, stacked in query order: filter and pivot
        it with pandas (``frame.pivot_table(index="label", columns="statistic")``)."""
        rows: list[tuple] = []
        for q in self.queries:
            if q.name in self.results:
                r = self.results[q.name]
                rows += [(q.name, r.kind, label, statistic, value, "")
                         for label, statistic, value in r.to_long().itertuples(index=False)]
            elif q.name in self.failures:
                rows.append((q.name, q.kind, "", "", float("nan"), self.failures[q.name].diagnostics[0].code))
        out = pd.DataFrame(rows, columns=["query", "kind", "label", "statistic", "value", "error"])
        out["value"] = out["value"].astype(float)
        return out


def select(model: Any, verb: str, queries: Sequence[str] | None = None) -> list:
    """The queries a verb answers: the named ones (KeyError for an unknown name), else all of
    them (``analyze`` leaves out those that need data)."""
    if queries:
        unknown = [n for n in queries if n not in model.queries]
        if unknown:
            raise KeyError(unknown[0])
        return [model.queries[n] for n in queries]
    chosen = list(model.queries.values())
    if verb == "analyze":
        chosen = [q for q in chosen if not query_kinds.needs_data(q.kind)]
    return chosen


def _bind_stores(bindings: DataBindings, model: Any) -> None:
    """Bind the mechanisms whose data are a store to its reports (files need nothing)."""
    if reads_a_store(bindings):
        from privspec.backends.collect.store import bind_stores  # start-up: sqlite3 and every back end, 0.15 s
        bind_stores(bindings, model)


def answer(spec: Any, verb: str, *, queries: Sequence[str] | None = None, data: Any = None,
           n: int | None = None, reps: int | None = None, seed: int | None = None,
           engine: str | None = None, progress: Any = None, weights: str | None = None,
           strata: str | None = None, cluster: str | None = None,
           replicate_weights: str | Sequence[str] | None = None, replicate_type: str | None = None,
           fay_rho: float | None = None, rscales: Sequence[float] | None = None) -> Results:
    """Answer a spec's queries for ``verb`` (``analyze``, ``run`` or ``simulate``).

    Parameters
    ----------
    spec : privspec.Spec
        A spec without errors (:class:`~privspec.errors.SpecError` otherwise).
    queries : sequence of str, optional
        Names of the queries to answer (default: all; ``analyze`` skips those needing data).
    data : path, DataFrame or mapping, optional
        For ``run``: a path or a DataFrame with every mechanism's reports, or a mapping
        mechanism -> path/DataFrame (key ``None`` for the default table).
    n, reps : int
        For ``simulate``: respondents per replication and replications.
    engine : {"pandas", "duckdb", "spark"}, optional
        For ``run``: who counts the reports (:mod:`privspec.backends.data.engines`); by default
        pandas for a DataFrame, DuckDB for a file.  Every engine gives the same results.
    seed : int, optional
        Seed of the randomized parts (permutation tests, jackknife groups, simulation).
    weights, strata, cluster : str, optional
        For ``run``: the data's columns of survey weights, strata and clusters (the
        agency's, not privatized): Hajek estimates with design-based standard errors and
        design effects (:mod:`privspec.backends.finite.weighted`, :mod:`privspec.backends.oracles.weighted`,
        :mod:`privspec.backends.interval.weighted`); ``strata`` and ``cluster`` need
        ``weights``.  A query without a weighted version fails with B040.
    replicate_weights, replicate_type, fay_rho, rscales : optional
        For ``run`` with ``weights``: the replicate weight columns (a comma list or a
        sequence of names and glob patterns such as ``"rw*"``) and their type (``brr``,
        ``fay`` with ``fay_rho``, ``jk1``, ``jkn`` with ``rscales`` one per column,
        ``bootstrap``): standard errors from the replicates instead of linearization
        (:mod:`privspec.backends.data.replicates`); not with ``strata`` or ``cluster``
        (B042).
    progress : bool, stream or None
        Progress bars of the long loops (simulation replications, permutations, bootstrap
        refits): None shows them where someone watches (a notebook, an interactive
        terminal; never a pipe or a file), True on standard error, False never, a stream
        there (:func:`privspec.progress.chosen`).

    A query that cannot be answered stops nothing else: it is in ``failures``.  Errors
    about the whole call (a data table whose column would feed several mechanisms, D006)
    are raised.
    """
    if verb not in VERBS:
        raise ValueError(f"verb must be one of {', '.join(VERBS)}, not {verb!r}")
    spec.raise_for_errors()
    model = spec.model
    asked = select(model, verb, queries)
    options: dict[str, Any] = {"seed": seed}
    if verb == "run":
        if data is None:
            raise ValueError("run needs data: a path, a DataFrame, or a mapping mechanism -> path/DataFrame")
        bindings = data if isinstance(data, DataBindings) else DataBindings.of(data, [*model.mechanisms,
                                                                                      *model.releases])
        if engine is not None:
            bindings.engine = engine
        design = _survey_design(weights, strata, cluster, replicate_weights, replicate_type, fay_rho, rscales)
        if design is not None:
            bindings.design = design
        _bind_stores(bindings, model)
        try:
            bindings.check(asked)
        except DataError as e:
            raise e.with_file(bindings.default) from None
        options["data"] = bindings
    if verb == "simulate":
        if not (n and reps) or n < 1 or reps < 1:
            raise ValueError("simulate needs n >= 1 respondents and reps >= 1 replications")
        _refuse_simulation(spec, [(q, n, None) for q in asked], reps)
        options.update(n=n, reps=reps)
    out = Results(verb, model, tuple(asked), {})
    with chosen(progress):
        for q in asked:
            _answer_one(spec, model, q, verb, options, out)
    return out


def _survey_design(weights: str | None, strata: str | None, cluster: str | None,
                   replicate_weights: str | Sequence[str] | None, replicate_type: str | None,
                   fay_rho: float | None, rscales: Sequence[float] | None) -> SurveyDesign | None:
    """The survey design of :func:`answer`'s keywords (None: unweighted); ValueError for a
    keyword without the one it needs."""
    if replicate_weights is None and (replicate_type, fay_rho, rscales) != (None, None, None):
        raise ValueError("replicate_type, fay_rho and rscales need replicate_weights (the replicate columns)")
    if weights is None:
        if strata is not None or cluster is not None:
            raise ValueError("strata and cluster need weights (a column of survey weights; 1 for equal weights)")
        if replicate_weights is not None:
            raise ValueError("replicate_weights need weights (the full-sample weights column)")
        return None
    replicates = None if replicate_weights is None else Replicates.of(replicate_weights, replicate_type, fay_rho,
                                                                      rscales)
    return SurveyDesign(weights, strata, cluster, replicates)


def _answer_one(spec: Any, model: Any, q: Any, verb: str, options: dict, out: Results) -> None:
    """One query's answer, or why not, into ``out`` (:func:`answer`)."""
    found = route(q, verb)
    if found.needs_data:
        out.failures[q.name] = BackendError(Diagnostic(
            "B002", f"query '{q.name}' ({q.kind}) needs data",
            hint="privspec run SPEC --data FILE, or privspec simulate SPEC --n N"))
        out.messages[q.name] = (f"query '{q.name}' ({q.kind}) needs data: use privspec run --data FILE "
                                "or privspec simulate")
        return
    backend, why = found.backend, found.why
    unweighted = _without_weights(q, backend, options.get("data"))
    if unweighted:
        out.failures[q.name] = BackendError(Diagnostic(
            "B040", f"query '{q.name}': survey weights are not supported for {unweighted}",
            hint="run it without --weights (weights=); weighted: every estimate of the distribution or joint of "
                 "subset, grr and rr mechanisms and their products (mom, mle, em, newton, one_step, castell, "
                 "independent, clusters, hybrid, truncated, joint, projected; past 4,096 x 4,096 Jacobian entries "
                 "castell/mom on a product, per-cell), of frequency oracles (mom, mle) "
                 "and of the two-group designs (uqm, cdm, sld); independence tests; regressions on a randomized "
                 "response (two-group designs too) or with a randomized-response predictor; a numeric "
                 "mechanism's mean and square wave's ems distribution; an interval mechanism's cdf, mean and "
                 "moments (unbiased, npmle, mle) "
                 "and its regressions by iterative (linear, random_forest, gradient_boosting; normal or logistic "
                 "noise) (docs/cli.md)"))
        return
    if backend is None:
        text = spec.source.snippet(q.span) if q.span else q.name
        out.failures[q.name] = BackendError(Diagnostic(
            "B000", f"query '{q.name}' is not supported yet: {q.kind} queries have no back end for "
                    f"'{verb}' in this version", hint=why))
        out.messages[q.name] = (f"query '{q.name}' is not supported yet ({q.kind} queries of this kind have "
                                f"no back end for '{verb}' in this version): {' '.join(text.split())}\n  {why}")
        return
    try:
        # the query rides along (never serialized): plots are labelled with the spec's names
        out.results[q.name] = backend.answer(model, q, verb, **options).with_query(q)
    except DataError as e:
        out.failures[q.name] = with_data_file(e, q, options.get("data"), spec.source.name)
    except PrivspecError as e:
        out.failures[q.name] = e


def _without_weights(q: Any, backend: Any, data: Any) -> str:
    """What of ``q`` has no version with the survey design bound to ``data`` ("" when
    none is bound, ``q`` reads no data, or its back end weighs it)."""
    if getattr(data, "design", None) is None or data_role(q) != "required" or backend is None:
        return ""
    says = getattr(backend, "weighted", None)
    if says is None:
        family = getattr(q.mechanism, "family", None)
        return f"{q.kind} queries of {family} mechanisms" if family else f"{q.kind} queries of releases"
    return says(q)


def compare(spec: Any, names: Sequence[str] | None = None, *, reps: int | None = None, seed: int | None = None,
            report: Any = None, force: bool = False, progress: Any = None) -> Results:
    """Evaluate a spec's ``compare`` blocks (all, or those ``names``): a mapping block name ->
    ``comparison`` result whose value is the comparison document (criteria per candidate,
    ranks, Pareto frontiers, sample sizes, power curves, inverse designs).

    ``reps``: replications for the simulated value of each utility criterion beside the
    analytic one (with ``seed``); None: a quick seeded check of the analytic values, the
    simulated one shown and used where they are more than 10% off; 0: no check. ``report``: a path
    ending in ``.html`` (one self-contained page) or ``.md`` (Markdown with PNGs beside it); with several blocks,
    each gets its own file, the block's name added to the path's stem.  An existing report
    (or PNG) is replaced only with ``force`` (:func:`write_reports`).  ``progress``: bars
    over the simulated replications, as :func:`answer` says.
    """
    spec.raise_for_errors()
    model = spec.model
    if not model.compares:
        raise ValueError(f"{spec.source.name} declares no compare block")
    if names:
        unknown = [n for n in names if n not in model.compares]
        if unknown:
            raise KeyError(unknown[0])
    blocks = [model.compares[n] for n in names] if names else list(model.compares.values())
    if reps is not None and reps != 0 and reps < 2:
        raise ValueError("reps must be 0 (no check) or at least 2 (a Monte Carlo error needs two replications)")
    if reps:
        # each candidate's estimate is simulated at the block's n (the back end's default 1000)
        _refuse_simulation(spec, [(Query(name, "estimate", mechanism=mech, estimand=c.estimand,
                                         method=c.estimator(name), span=c.span), int(c.n or 1000),
                                   f"candidate '{name}' of compare block '{c.name}'")
                                  for c in blocks for name, mech in c.candidates], reps)
    out = Results("compare", model, tuple(blocks), {})
    for c in blocks:
        backend = comparer_for(c)
        if backend is None:
            out.failures[c.name] = BackendError(Diagnostic(
                "B000", f"design comparison ({c.name}) is not supported yet: no back end evaluates compare "
                        "blocks in this version"))
            continue
        try:
            with chosen(progress):
                out.results[c.name] = backend.compare(model, c, reps=reps, seed=seed).with_query(c)
        except PrivspecError as e:
            out.failures[c.name] = e
    if report is not None and out.results:
        write_reports(out, report, force=force)
    return out


def _refuse_simulation(spec: Any, queries: Sequence[tuple[Any, int, str | None]], reps: int) -> None:
    """E703 (:func:`privspec.model.costs.simulation_refusal`) for the first query whose simulation,
    ``reps`` replications of its n respondents, would hold more than memory allows: raised
    before anything is drawn.  ``queries``: (query, n, how the message names it)."""
    model = spec.model
    for q, n, what in queries:
        release = model.releases.get(q.scope) if q.mechanism is None and isinstance(q.scope, str) else None
        cells = math.prod(v.p for v in release.variables) if release is not None else 0
        refusal = costs.simulation_refusal(q, int(n), int(reps), cells, what)
        if refusal is not None:
            raise SpecError(Diagnostic(refusal.code, refusal.message, span=q.span, hint=refusal.hint), spec.source)


def report_paths(report: Any, names: Sequence[str]) -> dict[str, Any]:
    """Block name -> the path of its report: ``report`` itself for one block, else the
    block's name added to its stem (``r.html`` -> ``r_design.html``)."""
    path = Path(report)
    if len(names) == 1:
        return {names[0]: path}
    return {name: path.with_name(f"{path.stem}_{name}{path.suffix}") for name in names}


def write_reports(results: Results, report: Any, force: bool = False) -> list[str]:
    """Write each comparison's report (see :func:`compare`); returns the paths written.

    Every file (each report and its PNGs) is checked before any is written
    (:func:`privspec.outputs.check_output`): an existing one without ``force``, or
    one that is not a regular file, stops them all (D007) with nothing written.  A file
    that appears meanwhile stops the writing there, and the files this call wrote before
    it are removed (without ``force`` they were all new)."""
    paths = report_paths(report, list(results.results))
    for name, path in paths.items():
        for target in report_targets(results.results[name].value, path):
            check_output(target, force=force)
    written: list[str] = []
    try:
        for name, path in paths.items():
            written += write_report(results.results[name].value, path, force=force)
    except BaseException:
        if not force:
            for done in written:
                os.unlink(done)
        raise
    return written


def privatizer(model: Any, mechanism: str, *, nonnegative: bool = False, offset: int | None = None,
               records: str = "table", keep: Sequence[str] | None = None) -> tuple[Any, Any]:
    """The mechanism (or release) named ``mechanism`` and the back end that privatizes with
    it (None when none does yet), after checking the options fit it: ``nonnegative`` is
    for releases, ``offset`` and ``keep`` for mechanisms (``keep`` not for one that adds
    dummy respondents).  ``records`` names the input in messages."""
    if mechanism not in model.mechanisms and mechanism not in model.releases:
        hint = did_you_mean(mechanism, [*model.mechanisms, *model.releases])
        raise KeyError(f"no mechanism named '{mechanism}'" + (f"; {hint}" if hint else ""))
    # a release privatizes raw records into its released table(s)
    is_release = mechanism in model.releases and mechanism not in model.mechanisms
    if nonnegative and not is_release:
        raise ValueError("nonnegative applies to releases (count tables) only")
    if offset is not None and is_release:
        raise ValueError("offset applies to mechanisms (one report per row); a release's noise is per cell of "
                         f"its table, so privatize the whole {records} at once")
    if keep and is_release:
        raise ValueError("keep applies to mechanisms (one report per row); a release writes a count table, "
                         "which has no row of anyone's to keep a column of")
    mech = model.mechanisms.get(mechanism) or model.releases[mechanism]
    if keep and adds_rows(mech):
        raise ValueError(f"keep cannot be used with mechanism '{mechanism}': it adds dummy respondents "
                         "(min_coverage), whose rows have no raw values, and empty ones would point them out")
    return mech, privatizer_for(mech)


def privatize(spec: Any, frame: Any, mechanism: str, *, seed: int | None = None, offset: int | None = None,
              nonnegative: bool = False, keep: Sequence[str] | None = None, csv_guard: bool = False,
              progress: Any = None) -> Any:
    """Privatize raw records with a mechanism (or a release): a DataFrame in, the reports
    (or the released table) out.  A row's report depends on (seed, row index, value) only,
    so a file can be privatized in pieces (``offset``: the index of the first row).

    The result holds the mechanism's report columns only, with the rows and index of
    ``frame``; ``keep`` names raw columns to put beside them (an id, a survey wave: D040
    for a column ``frame`` lacks, D041 for one the mechanism privatizes).  ``csv_guard``:
    quote every cell that starts like a spreadsheet formula (``=``, ``+``, ``-``, ``@``,
    tab, carriage return), for a CSV that a spreadsheet will open; privspec reads such a
    CSV file back as it was (docs/cli.md).  ``progress``: bars over the chunks of a large
    frame, as :func:`answer` says.
    """
    spec.raise_for_errors()
    model = spec.model
    mech, backend = privatizer(model, mechanism, nonnegative=nonnegative, offset=offset, keep=keep)
    if backend is None:
        raise BackendError(Diagnostic("B000", f"privatizing data with mechanism '{mechanism}' "
                                              f"({getattr(mech, 'family', 'release')}) is not supported yet"))
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, not {type(frame).__name__}")
    # the table's shape, checked as every engine checks a file's: a repeated name (D014),
    # nested values in a column the mechanism reads (D015)
    check_columns(list(frame.columns))
    require_flat([str(c) for c in frame.columns if str(c) in observed_columns(mech)], frame_nested(frame))
    if isinstance(keep, str):
        keep = [keep]
    kept = kept_columns(mech, list(frame.columns), keep, "<DataFrame>") if keep else []
    extra: dict[str, Any] = {"nonnegative": True} if nonnegative else {}
    if offset is not None:
        extra["offset"] = offset
    with chosen(progress):
        out = with_kept(backend.privatize(model, mech, frame, seed=seed, **extra), frame, kept)
    return guard_cells(out) if csv_guard else out


def export(spec: Any, db: Any, out: Any, *, mechanisms: Sequence[str] | None = None, force: bool = False) -> int:
    """Write a survey store's reports (``db``: ``sqlite:///reports.db``, a path, or
    ``postgresql://...``) to ``out`` (CSV or Parquet by its suffix), one row per
    submission in the order of their ids, as ``privatize`` would have written them:
    ``privspec run`` on the file gives what it gives on the store.  ``mechanisms``: whose
    reports (default: every one the store fielded; two that fill the same column need
    a file each, D006).  Written atomically, never over a file without ``force`` (D007);
    D051 when the spec's design is not the store's.  Returns the rows written."""
    from privspec.backends.collect.store import open_store  # start-up: as in answer, 50 ms
    spec.raise_for_errors()
    check_output(out, force=force)
    with open_store(db, spec.model, create=False) as store:
        frame = store.frame(mechanisms)
    write_table_atomic(frame, out, force=force)
    return len(frame)


def client(spec: Any, out: str | os.PathLike[str], mechanisms: Sequence[str] | None = None, *,
           force: bool = False) -> str:
    """Write the JavaScript randomizer of the spec's mechanisms (``mechanisms``: names; all
    by default) to ``out``: one ES module exposing ``privatize(answers) -> reports``
    (:mod:`privspec.backends.collect.randomizer`), written atomically and never over an
    existing file without ``force``.  Returns the module's text.  A mechanism the
    randomizer cannot run yet is refused naming it (B000), an unknown name is a KeyError;
    nothing is written then.
    """
    # the randomizer brings the oracle and interval back ends, which the other verbs need not load:
    # start-up: 150-220 ms measured with -X importtime
    from privspec.backends.collect.randomizer import client_module

    spec.raise_for_errors()
    check_output(out, force=force)  # before any work
    text = client_module(spec.model, mechanisms)
    write_text_atomic(text, out, force=force)
    return text


def serve(spec: Any, db: Any, *, host: str = "127.0.0.1", port: int = 8000, token: str | None = None,
          mechanisms: Sequence[str] | None = None, announce: Any = print) -> None:
    """Field the spec's survey: the survey page and its collector on ``host:port``
    (:mod:`privspec.backends.collect.server`, served by uvicorn), the submissions
    stored in ``db`` (``sqlite:///reports.db``, a path, or ``postgresql://...``; created
    if new, D051 when it holds the reports of another design), the live results behind
    ``token`` (default: a fresh one).  ``announce(text)`` is told the survey's URL and
    the results' URL (with the token) once the port is bound.  Runs until SIGINT or
    SIGTERM: the server then stops taking requests, and every submission received is
    committed before it returns.  OSError when the port cannot be bound (nothing is
    created then)."""
    # start-up: starlette and uvicorn (55 ms measured with -X importtime), which only serve needs
    import uvicorn
    from privspec.backends.collect.page import page_mechanisms, survey_page  # start-up: as uvicorn's
    from privspec.backends.collect.server import create_app, listening_socket  # start-up: it brings starlette
    from privspec.backends.collect.store import is_store, open_store  # start-up: as in answer, 50 ms

    spec.raise_for_errors()
    token = token or secrets.token_urlsafe(24)
    url = os.fspath(db) if is_store(os.fspath(db)) else f"sqlite:///{os.fspath(db)}"   # run reads a URL
    if not mechanisms:   # an existing store fields its own mechanisms, a new one those the page asks
        try:
            with open_store(db, spec.model, create=False) as existing:
                mechanisms = list(existing.mechanisms)
        except DataError as e:
            if e.code != "D001":
                raise
            mechanisms = page_mechanisms(spec.model)
    page = survey_page(spec.model, list(mechanisms))   # B000 for one it cannot ask, before anything is created
    listening = listening_socket(host, port)
    try:
        with open_store(db, spec.model, mechanisms) as store:
            app = create_app(spec.model, store, page=page, token=token, title=spec.title or spec.source.name,
                             results=lambda: answer(spec, "run", data=url, progress=False))
            bound = listening.getsockname()[1]
            where = f"[{host}]" if ":" in host else host
            announce(f"survey:  http://{where}:{bound}/")
            announce(f"results: http://{where}:{bound}/results?token={token}")
            config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
            uvicorn.Server(config).run(sockets=[listening])
    finally:
        listening.close()


def with_data_file(error: DataError, query: Any, data: Any, spec_path: str) -> DataError:
    """The error naming the table bound to the query's mechanism; raw data read as reports
    get a hint at ``privatize``."""
    mech = getattr(query, "mechanism", None)
    name = getattr(mech, "name", None) or (str(query.scope) if getattr(query, "kind", "") == "table" else None)
    if data is None:
        return error
    try:
        path = data.path_for(name)
    except DataError:
        return error
    error = error.with_file(path)
    first = error.diagnostics[0]
    if "privspec privatize SPEC" in first.hint:  # the back end's hint, with this run's names
        hint = first.hint.replace("privspec privatize SPEC", f"privspec privatize {spec_path}").replace(
            "--input RAW", f"--input {path}")
        error = DataError([replace(first, hint=hint), *error.diagnostics[1:]], error.source)
        first = error.diagnostics[0]
    if first.code in ("D010", "D101", "D102") and "privatize" not in first.hint and _looks_raw(mech, data):
        hint = (f"the column '{mech.variable.name}' holds plain numbers: is this raw data? privatize it first: "
                f"privspec privatize {spec_path} --mechanism {mech.name} --input {path} --output PRIVATIZED, "
                "then run on PRIVATIZED")
        error = DataError([replace(first, hint=hint), *error.diagnostics[1:]], error.source)
    return error


def _looks_raw(mech: Any, data: Any) -> bool:
    """Whether an interval mechanism's column holds plain numbers only (raw values)."""
    if getattr(mech, "family", None) != "interval" or getattr(mech, "variable", None) is None:
        return False
    column = mech.variable.name
    try:
        engine = data.engine_for(mech.name)
        if column not in engine.columns():
            return False
        tally = engine.tally([column])  # the distinct values only, whatever the file's size
    except DataError:
        return False
    return tally.n > 0 and not parse_numbers(tally.values[column])[1].any()
