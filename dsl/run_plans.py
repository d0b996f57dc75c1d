"""Compiled run plans: ``privspec run`` of a spec it has run before, without parsing it.

Parsing a spec builds its model graph in sympy (with lark), and reading data through the
engines uses pandas: 0.6 s of CPU before the first report is counted, where DuckDB counts
10^7 reports of a Parquet file in 0.05 s.  Yet what a run computes from the counts needs
none of it.  So after the command line has answered ``run`` the usual way, it writes a
*plan* of the spec (:class:`RunPlan`): for each query it can answer from counts alone, the
mechanism and the column its reports are read from, the caption over its result, and the
back end's numeric plan of the estimate (:func:`~privspec.backends.finite.estimate_plan.estimate_plan`:
the channel as numbers, the estimator and its options).  The next run of the same spec
loads the plan, counts the reports in DuckDB, reads them against the channel
(:func:`~privspec.backends.finite.report_index.parse_reports`), and computes and prints the
results through the same functions as the usual path
(:func:`~privspec.backends.finite.estimate_plan.estimate_result`,
:func:`~privspec.results.result.render_results`): the same output, to the last digit
(tests/test_run_plans.py compares them).

What a plan answers: estimates of a finite mechanism's distribution (subset designs,
randomized response) from reports in a Parquet file, without survey weights; a spec
without warnings.  Anything else, and anything unexpected in the data (a missing value, a
report the mechanism cannot give, a CSV file, a column of numbers), goes the usual way,
which also gives every error message: a plan never says anything the usual path would
not.

Plans live in the user's cache (:func:`privspec.outputs.user_cache`), in ``plans/``, one
file per spec text and privspec code (a changed spec, privspec upgraded or its code
edited: another file).  They are pickles that only privspec writes there, as Python's own
caches are; a plan is read only from a file of this user's that no one else may write.
``PRIVSPEC_NO_PLANS=1`` turns them off; a cache that cannot be written is left alone,
silently.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import pickle
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, TextIO

from privspec import __version__
from privspec.errors import PrivspecError
from privspec.model.query_kinds import describe
from privspec.outputs import user_cache
from privspec.backends.core.blas import pin_one_thread
from privspec.backends.data.cell_text import MISSING
from privspec.backends.data.data_args import columns_fed_twice, parse_data_args

#: bumped when a plan's layout changes: older plans are then other files, never read
PLAN_FORMAT = 1
#: plans kept in the cache, the most recently used (older ones are removed when one is written)
PLANS_KEPT = 256
#: the ``run`` options a plan answers with their defaults; any other value goes the usual way
PLAIN_RUN = {"weights": None, "strata": None, "cluster": None, "replicate_weights": None,
             "replicate_type": None, "fay_rho": None, "rscales": None, "plot": None}


@dataclass(frozen=True)
class QueryPlan:
    """What one query needs to be answered from counts: the mechanism (its name, as
    ``--data M=FILE`` binds it), the column of its reports and the columns it observes (for
    the check that a file's column feeds one mechanism, D006), and the back end's numeric
    plan of the estimate."""

    name: str
    mechanism: str
    column: str
    observed: tuple[str, ...]
    estimate: Any


@dataclass(frozen=True)
class RunPlan:
    """The queries of a spec that a run can answer from a plan (:class:`QueryPlan`), the
    order in which ``run`` answers every query, the spec's title, and the names that
    ``--data M=FILE`` may bind."""

    title: str | None
    order: tuple[str, ...]
    queries: Mapping[str, QueryPlan]
    bindable: tuple[str, ...]
    #: the captions of the planned queries (:func:`privspec.results.report.caption` reads them)
    captions: Mapping[str, str] = field(default_factory=dict)


# ---- where plans live -----------------------------------------------------------------------------
def cache_dir() -> Path | None:
    """privspec's cache folder (:func:`privspec.outputs.user_cache`), or None when plans
    are turned off."""
    if os.environ.get("PRIVSPEC_NO_PLANS"):
        return None
    return user_cache()


@functools.lru_cache(maxsize=1)
def _code_stamp() -> str:
    """privspec's version and the size and time of every module of its packages: a plan
    made by other code is another file (an upgrade, or an edited checkout).  Read once per
    process: a run looks its plan up, and may then write it."""
    parts = [__version__, sys.version, str(PLAN_FORMAT)]
    for package in ("privspec", "privspec.backends", "privspec.grammar"):
        found = importlib.util.find_spec(package)
        for root in (found.submodule_search_locations or []) if found else []:
            for folder, _, files in sorted(os.walk(root)):
                for name in sorted(files):
                    if name.endswith((".py", ".lark")):
                        st = os.stat(os.path.join(folder, name))
                        parts.append(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


def plan_path(source: bytes) -> Path | None:
    """The file of the plan of a spec whose text is ``source`` (None: plans are off)."""
    folder = cache_dir()
    if folder is None:
        return None
    digest = hashlib.sha256(source + b"\0" + _code_stamp().encode()).hexdigest()
    return folder / "plans" / f"{digest}.pickle"


@dataclass(frozen=True)
class StoredPlan:
    """A plan as the cache holds it: which queries it answers and in what order, read
    without numpy, and the plan itself (:meth:`load`), unpickled only once a run knows it
    can use it and has started numpy on one BLAS thread."""

    order: tuple[str, ...]
    planned: frozenset[str]
    payload: bytes

    def load(self) -> RunPlan | None:
        """The plan (None for bytes that are not one: written by another numpy, say)."""
        try:
            plan = pickle.loads(self.payload)
        except Exception:   # whatever it is, the usual path answers (and writes the plan anew)
            return None
        return plan if isinstance(plan, RunPlan) else None


def load_plan(source: bytes) -> StoredPlan | None:
    """The stored plan of the spec whose text is ``source``, if one was written (None
    otherwise, and for a file that is not a plan)."""
    path = plan_path(source)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None     # a pickle is code: only one this user wrote, which no one else may change
            version, order, planned, payload = pickle.load(f)
    except Exception:   # none, a truncated file, another layout: the usual path, which (re)writes it
        return None
    if version != PLAN_FORMAT or not isinstance(payload, bytes):
        return None
    try:
        os.utime(path)      # used now: the last to be removed (:data:`PLANS_KEPT`)
    except OSError:
        pass
    return StoredPlan(tuple(order), frozenset(planned), payload)


def save_plan(source: bytes, plan: RunPlan) -> None:
    """Write ``plan`` for the spec whose text is ``source`` (a temporary file, then renamed:
    a reader never sees half a plan); a cache that cannot be written is left alone."""
    path = plan_path(source)
    if path is None:
        return
    stored = (PLAN_FORMAT, plan.order, tuple(plan.queries), pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".plan-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(stored, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(path.parent)
    except OSError:
        return


def _prune(folder: Path) -> None:
    """Remove all but the :data:`PLANS_KEPT` most recently used plans (a spec edited
    week after week leaves one plan per version)."""
    plans = sorted(folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime_ns)
    for old in plans[:-PLANS_KEPT]:
        old.unlink(missing_ok=True)


# ---- making a plan (with the model graph) -----------------------------------------------------------
def plan_of(spec: Any) -> RunPlan | None:
    """The plan of a spec whose ``run`` was answered the usual way; None when it has
    diagnostics (a plan would not print them) or no query a plan answers."""
    from privspec.api import select  # start-up: the usual path's (imported by then); a plan's run never needs it

    if spec.diagnostics:
        return None
    model = spec.model
    queries: dict[str, QueryPlan] = {}
    for q in model.queries.values():
        planned = _query_plan(q)
        if planned is not None:
            queries[q.name] = planned
    if not queries:
        return None
    return RunPlan(title=model.title, order=tuple(q.name for q in select(model, "run")), queries=queries,
                   bindable=(*model.mechanisms, *model.releases),
                   captions={name: describe(model.queries[name]) for name in queries})


def _query_plan(q: Any) -> QueryPlan | None:
    """The plan of one query: an estimate of a finite mechanism's distribution that the
    finite back end answers, its reports in one column named after the variable."""
    # start-up: the usual path's modules (imported by then); a plan's run needs none of them
    from privspec.backends import route  # start-up: as above
    from privspec.backends.core.compile import channel_of  # start-up: as above
    from privspec.backends.data.bindings import observed_columns  # start-up: as above (pandas)
    from privspec.backends.finite.estimate_plan import estimate_plan, plannable  # start-up: as above
    from privspec.model.graph import ProductMechanism  # start-up: as above (sympy)

    # plannable: an estimate of a finite mechanism with an enumerable channel; a plan's run
    # reads one column, so a distribution of one named mechanism on a plain variable
    if not plannable(q) or q.estimand.kind != "distribution":
        return None
    mech = q.mechanism
    if isinstance(mech, ProductMechanism) or not mech.name or mech.variable.is_combined \
            or getattr(route(q, "run").backend, "REGISTER_NAME", None) != "finite":
        return None
    try:
        plan = estimate_plan(q, channel_of(mech))
    except PrivspecError:   # refused (B008...): the usual path says so at each run
        return None
    return QueryPlan(q.name, mech.name, mech.variable.name, tuple(sorted(observed_columns(mech))), plan)


# ---- running one -------------------------------------------------------------------------------------
def plain_run(args: Any) -> bool:
    """Whether the command line's ``run`` options are ones a plan answers (DuckDB counts, no
    survey design, no pictures)."""
    return args.verb == "run" and args.engine in (None, "duckdb") and \
        all(getattr(args, k, None) == v for k, v in PLAIN_RUN.items())


def remember_plan(args: Any, spec: Any) -> None:
    """After the usual path answered ``run`` without a failure: write the spec's plan for its
    next run, where the options are ones a plan answers and none is written yet."""
    if cache_dir() is None or not plain_run(args):
        return
    try:
        source = Path(args.spec).read_bytes()
    except OSError:
        return
    if load_plan(source) is None:
        plan = plan_of(spec)
        if plan is not None:
            save_plan(source, plan)


def planned_run(args: Any, out: TextIO) -> int | None:
    """Answer ``privspec run`` from the spec's plan and print the results; None (having
    printed nothing) where the usual path must answer: no plan, options a plan does not
    take, or data it does not read as the usual path would (which then says what is wrong)."""
    if not plain_run(args):
        return None
    try:
        source = Path(args.spec).read_bytes()
    except OSError:
        return None
    stored = load_plan(source)
    if stored is None:
        return None
    asked = list(args.query) if args.query else list(stored.order)
    if not asked or any(name not in stored.planned for name in asked):
        return None
    # a plan's algebra is a channel's (d x d): one BLAS thread, which also spares the 0.06 s
    # of CPU that starting OpenBLAS's threads costs at import
    pin_one_thread()
    plan = stored.load()
    if plan is None:
        return None

    try:
        default, per_mechanism = parse_data_args(args.data, plan.bindable)
    except ValueError:
        return None
    wanted = [plan.queries[name] for name in asked]
    if default is not None and columns_fed_twice({q.mechanism: q.observed for q in wanted
                                                  if q.mechanism not in per_mechanism}):
        return None     # D006, which the usual path gives
    results = {}
    for q in wanted:
        path = per_mechanism.get(q.mechanism, default)
        counts = None if path is None else _counts(path, q)
        if counts is None:
            return None
        try:
            results[q.name] = _answer(q, counts)
        except Exception:   # whatever it is, the usual path says it
            return None
    from privspec.results.result import render_results  # start-up: numpy, once set to one BLAS thread

    print(render_results(args.format, plan, results, verbose=args.verbose), file=out)
    return 0


def _counts(path: str, q: QueryPlan) -> Any:
    """The counts per observation of ``q``'s channel, or None where the usual path must read."""
    # start-up: numpy (and DuckDB), once numpy is set to one BLAS thread (planned_run)
    import numpy as np  # start-up: as above

    from privspec.backends.data.parquet_counts import text_counts  # start-up: as above
    from privspec.backends.finite.report_index import parse_reports  # start-up: as above

    got = text_counts(path, q.column)
    if got is None:
        return None
    values, n = got
    if not values or any(v is None or str(v).strip() in MISSING for v in values):
        return None      # no row (D103) or a missing value (D004)
    ch = q.estimate.channel
    mapping, reasons = parse_reports(values, ch)
    if reasons:
        return None      # reports the mechanism cannot give (D010)
    return np.bincount(mapping, weights=n.astype(float), minlength=ch.n_obs)


def _answer(q: QueryPlan, counts: Any) -> Any:
    from privspec.backends.finite.estimate_plan import estimate_result  # start-up: numpy, as above

    return estimate_result(q.estimate, counts)
