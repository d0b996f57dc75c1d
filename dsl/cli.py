"""The ``privspec`` command line.

Exit status: 0 on success, 1 when the spec or data is invalid or a query cannot be
answered (nothing written; the queries that could be answered are still printed), 2 on
a usage error, 3 on an internal error (a bug: please report it; set ``PRIVSPEC_DEBUG=1``
for the traceback), 130/143 when interrupted by SIGINT/SIGTERM.
"""
from __future__ import annotations

import argparse
import gc
import io
import os
import signal
import sys
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Sequence, TextIO

from privspec import __version__
from privspec.model import query_kinds
from privspec.errors import DataError, Diagnostic, PrivspecError, did_you_mean
from privspec.outputs import PARQUET, check_output, write_bytes_atomic
from privspec.progress import enabled, wanted
from privspec.results.render import FORMATS, check_report
from privspec.signals import interrupt_on_signals

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

#: query kinds that need no data (answered by ``analyze``): from the query-kind table
ANALYTIC_KINDS = query_kinds.ANALYTIC_KINDS


class _Usage(Exception):
    """A usage error (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print and exit; we decide the exit
        raise _Usage(f"{self.prog}: {message}")


def _natural(what: str):
    """An argparse type: an integer >= 0 (a negative seed or offset is a usage error)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer >= 0, not {text!r}") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"{what} must be an integer >= 0, not {text!r}")
        return value
    return parse


def _numbers(what: str):
    """An argparse type: a comma list of numbers."""
    def parse(text: str) -> list[float]:
        try:
            return [float(x) for x in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a comma list of numbers, not {text!r}") from None
    return parse


class _EngineNames:
    """The ``--engine`` choices: the names in the engine registry
    (:data:`privspec.backends.data.engines.ENGINES`), read the first time argparse checks
    or shows them, so that a command without ``--engine`` never loads the engines."""

    def _names(self) -> list[str]:
        # start-up: the engine registry brings pandas (about 600 ms) that check and --help never need
        from privspec.backends.data.engines import ENGINES

        return list(ENGINES)

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("spec", help="the spec file (*.privspec)")
    common.add_argument("--quiet", action="store_true",
                        help="no progress bars (they show on a terminal only, never on a pipe; default: off)")
    common.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    common.add_argument("--query", action="append", default=[], metavar="NAME",
                        help="answer only this query (repeatable; default: every query the command answers)")

    p = _Parser(prog="privspec", description="Design and analyse privacy-preserving data collection.")
    p.add_argument("--version", action="version", version=f"privspec {__version__}")
    sub = p.add_subparsers(dest="verb", metavar="COMMAND", parser_class=_Parser)
    sub.add_parser("check", parents=[common], help="parse and validate a spec")
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument("--verbose", "-v", action="store_true",
                         help="text: also the extras that restate how each value is derived (its meaning in the "
                              "papers' notation, eigenvalues, closed forms; default: off; the other formats "
                              "always have them)")
    analyze = sub.add_parser("analyze", parents=[common, verbose],
                             help="symbolic and numeric results that need no data")
    plot = argparse.ArgumentParser(add_help=False)
    plot.add_argument("--plot", metavar="DIR", default=None,
                      help="also write the natural picture of each query that has one to DIR/QUERY.png: a CDF "
                           "with its band, estimates with intervals, a matrix as a heat map (needs the plot "
                           "extra; default: no pictures)")
    run = sub.add_parser("run", parents=[common, plot, verbose], help="answer every query on data")
    analyze.add_argument("--plot", metavar="DIR", default=None, help=plot._actions[0].help)
    run.add_argument("--data", action="append", default=[], metavar="FILE|M=FILE",
                     help="privatized data (CSV or Parquet), or a survey's store (sqlite:///reports.db, "
                          "postgresql://...: each fielded mechanism reads its own reports); M=FILE (or M1,M2=FILE) "
                          "binds a file or store to mechanism M (required, repeatable)")
    run.add_argument("--seed", type=_natural("--seed"), default=None,
                     help="seed of the randomized parts (permutation p-values, bootstrap): the same seed, "
                          "the same answer (default: 0)")
    run.add_argument("--engine", choices=_EngineNames(), metavar="ENGINE", default=None,
                     help="who counts the reports: duckdb (the default for files: out of core, all cores), "
                          "pandas (in memory), spark (a cluster: the spark extra); every engine gives the "
                          "same results (docs/scale.md)")
    _add_survey_design(run)
    _add_privatize(sub, common)
    export = sub.add_parser("export", parents=[common], help="write a survey store's reports to a data file")
    export.add_argument("--db", required=True, metavar="DB",
                        help="the store: sqlite:///reports.db (or a path), postgresql://... (required)")
    export.add_argument("--out", required=True, metavar="OUT",
                        help="the reports file, .csv or .parquet (written to a temporary file, then renamed; required)")
    export.add_argument("--mechanism", action="append", default=[], metavar="M",
                        help="export the reports of M only (repeatable; default: every mechanism the store fielded; "
                             "two that fill the same column need a file each)")
    export.add_argument("--force", action="store_true", help="replace OUT if it exists (default: refuse)")
    _add_client(sub)
    _add_serve(sub)
    sim = sub.add_parser("simulate", parents=[common, verbose], help="empirical against analytic, from the populations")
    sim.add_argument("--n", type=int, required=True, metavar="N", help="respondents per simulated data set (required)")
    sim.add_argument("--reps", type=int, default=1000, metavar="R",
                     help="simulated data sets (replications; default: 1000)")
    sim.add_argument("--seed", type=_natural("--seed"), default=None,
                     help="seed of the simulation: the same seed, the same table (default: fresh OS entropy)")
    comp = sub.add_parser("compare", parents=[common], help="design comparisons and planning")
    comp.add_argument("--report", metavar="FILE", default=None,
                      help="write a report: FILE.html (one self-contained page) or FILE.md (Markdown with PNGs "
                           "beside it); with several compare blocks, one file each, the block's name added "
                           "(default: none)")
    comp.add_argument("--reps", type=int, default=None, metavar="R",
                      help="simulate each utility criterion from R replications, with its Monte Carlo error; "
                           "0: analytic values only, unchecked (default: a quick seeded check of the "
                           "asymptotic values, the simulated one used where they are more than 10%% off)")
    comp.add_argument("--seed", type=_natural("--seed"), default=None,
                      help="seed of the simulation (default: fresh OS entropy)")
    comp.add_argument("--force", action="store_true",
                      help="replace an existing report and its PNGs (default: refuse, and write nothing)")
    return p


def _add_survey_design(run: argparse.ArgumentParser) -> None:
    """``run``'s options of the data's survey design: weights, strata and clusters, or
    replicate weights (docs/cli.md)."""
    run.add_argument("--weights", metavar="W", default=None,
                     help="the data's column of survey weights (the agency's, not privatized): Hajek estimates "
                          "with design-based standard errors and design effects (docs/cli.md; default: none, "
                          "unweighted)")
    run.add_argument("--strata", metavar="S", default=None,
                     help="the data's column of strata, with --weights (default: none, one stratum)")
    run.add_argument("--cluster", metavar="C", default=None,
                     help="the data's column of clusters, the primary sampling units within each stratum, with "
                          "--weights (default: none, each row its own)")
    run.add_argument("--replicate-weights", metavar="COLS", default=None,
                     help="the data's replicate weight columns, with --weights instead of --strata/--cluster: a "
                          "comma list of names and glob patterns (rw1,rw2 or 'rw*'); standard errors from the "
                          "replicates (docs/cli.md; default: none, linearization)")
    run.add_argument("--replicate-type", metavar="TYPE", default=None,
                     help="how the replicate weights were made: brr, fay (with --fay-rho), jk1, jkn (with "
                          "--rscales) or bootstrap, as R's survey::svrepdesign (required with --replicate-weights)")
    run.add_argument("--fay-rho", type=float, metavar="RHO", default=None,
                     help="Fay's rho of --replicate-type fay (required there)")
    run.add_argument("--rscales", type=_numbers("--rscales"), metavar="LIST", default=None,
                     help="--replicate-type jkn: one scale per replicate column, (n_h - 1) / n_h of its stratum, "
                          "in the columns' order (required there)")


def _add_privatize(sub: Any, common: argparse.ArgumentParser) -> None:
    """The ``privatize`` command and its options."""
    priv = sub.add_parser("privatize", parents=[common], help="privatize raw data with a mechanism")
    priv.add_argument("--mechanism", required=True, metavar="M",
                      help="a mechanism, or a release (count tables) (required)")
    priv.add_argument("--input", required=True, metavar="RAW",
                      help="the raw records (CSV or Parquet) with a column per variable of the mechanism (required)")
    priv.add_argument("--output", required=True, metavar="OUT",
                      help="where the reports go (.csv or .parquet; written to a temporary file, then renamed; "
                           "required)")
    priv.add_argument("--seed", type=_natural("--seed"), default=None,
                      help="the key of every row's randomness (default: fresh OS entropy); keep it secret")
    priv.add_argument("--force", action="store_true",
                      help="replace OUT if it is a file (or a symbolic link: the link itself is replaced, never what "
                           "it points to); a device, pipe, socket or folder is never replaced (default: refuse)")
    priv.add_argument("--keep", action="append", default=[], metavar="COLS",
                      help="raw columns of RAW to write beside the reports, e.g. --keep id,wave (repeatable; "
                           "default: none: OUT holds the reports only)")
    priv.add_argument("--csv-guard", action="store_true",
                      help="for a CSV a spreadsheet will open: put a single quote before every cell that starts like "
                           "a formula (= + - @, tab, carriage return); privspec run reads it back as it was "
                           "(default: cells written as they are)")
    priv.add_argument("--engine", choices=_EngineNames(), metavar="ENGINE", default=None,
                      help="who reads RAW: duckdb (the default: streamed, out of core), pandas (in memory), "
                           "spark; the output is the same")
    priv.add_argument("--chunk-rows", type=_natural("--chunk-rows"), default=1_000_000, metavar="N",
                      help="rows privatized at a time (default 1,000,000); the output does not depend on it")
    priv.add_argument("--offset", type=_natural("--offset"), default=None, metavar="N",
                      help="the input's first row is row N+1 of the whole file (privatizing a file in pieces: "
                           "give each piece the number of data rows before it; default: 0)")
    priv.add_argument("--nonnegative", action="store_true",
                      help="releases: post-process away negative counts, totals kept (biases small cells; "
                           "default: off)")


def _add_client(sub: Any) -> None:
    """The ``client`` command: the JavaScript randomizer of the spec's mechanisms."""
    client = sub.add_parser("client", help="write the randomizer that runs on the respondent's device (JavaScript)")
    client.add_argument("spec", help="the spec file (*.privspec)")
    client.add_argument("--out", required=True, metavar="FILE",
                        help="where the ES module goes, e.g. randomizer.js (written to a temporary file, then "
                             "renamed; required)")
    client.add_argument("--mechanism", action="append", default=[], metavar="M",
                        help="a mechanism to randomize with (repeatable; default: every mechanism of the spec)")
    client.add_argument("--force", action="store_true", help="replace FILE if it exists (default: refuse)")


def _add_serve(sub: Any) -> None:
    """The ``serve`` command: the survey page and its collector."""
    serve = sub.add_parser("serve", help="field the survey: its page, the store of its reports, the live results")
    serve.add_argument("spec", help="the spec file (*.privspec)")
    serve.add_argument("--db", required=True, metavar="DB",
                       help="the store: sqlite:///reports.db (or a path), postgresql://... (created if new; "
                            "refused if it holds the reports of another design; required)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="the address to listen on (default: 127.0.0.1, this machine only; 0.0.0.0 for every "
                            "interface)")
    serve.add_argument("--port", type=_natural("--port"), default=8000, help="the port (default: 8000; 0: any free one)")
    serve.add_argument("--token", default=None, metavar="T",
                       help="the admin token of /results and /api/results (default: a fresh random one, printed)")
    serve.add_argument("--mechanism", action="append", default=[], metavar="M",
                       help="field M (repeatable; default: every mechanism a randomizer draws reports of; an "
                            "existing store keeps its own)")


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the command line; returns the exit status."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    try:
        try:
            args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        except SystemExit as e:  # --help and --version
            return int(e.code or 0)
        if args.verb is None:
            _parser().print_usage(err)
            return EXIT_USAGE
        if args.verb == "run":
            # a spec run before: answered from its compiled plan, none of sympy, lark and
            # pandas imported (privspec.run_plans); None: the usual way
            from privspec.run_plans import planned_run  # start-up: hashlib, pickle; run only

            planned = planned_run(args, out)
            if planned is not None:
                return planned
        if argv is None:  # the program itself (the console script, python -m privspec)
            _start_up(args.verb)
        with enabled(wanted(err, getattr(args, "quiet", False)), stream=err):
            return _dispatch(args, out, err)
    except _Usage as e:
        print(str(e), file=err)
        return EXIT_USAGE
    except PrivspecError as e:
        print(e.render(), file=err)
        return EXIT_INVALID
    except BrokenPipeError:  # the reader went away (privspec ... | head): nothing more to say
        try:
            sys.stdout = open(os.devnull, "w")  # so that the interpreter's final flush stays quiet
        except OSError:
            pass
        return EXIT_OK
    except KeyboardInterrupt as e:  # SIGINT, or SIGTERM while privatize runs: temporary files removed
        signum = int(getattr(e, "signum", signal.SIGINT))
        print(f"privspec: interrupted ({signal.Signals(signum).name}); nothing was written", file=err)
        return 128 + signum
    except Exception as e:  # a bug: say so plainly instead of a bare traceback
        if os.environ.get("PRIVSPEC_DEBUG"):
            traceback.print_exc(file=err)
        print(f"privspec: internal error: {type(e).__name__}: {e}\n"
              "this is a bug in privspec; run with PRIVSPEC_DEBUG=1 for the traceback", file=err)
        return EXIT_INTERNAL


def _start_up(verb: str) -> None:
    """The program's start: import what ``verb`` stands on with Python's cycle collector
    paused, then move every object so far to the collector's permanent generation.

    The imports (sympy, numpy, pandas, lark, privspec's model) leave about 110,000 objects
    that live until the process ends and hold no garbage worth collecting; with the
    collector on, its passes during the imports and every full pass during the command
    traverse them all.  Paused and frozen (:func:`gc.freeze`), ``privspec analyze
    specs/urn.privspec`` took 0.65-0.69 s of CPU instead of 1.0 s (bench/startup.py).  Frozen
    objects are never collected: the few hundred garbage objects the imports leave (739
    measured) stay, so only the program itself does this, never a caller of :func:`main`
    in its own process.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        # start-up: a spec brings sympy and lark (about 1 s) that --help and --version never need
        import privspec.spec  # noqa: F401
        if verb != "check":
            # start-up: the API brings numpy and pandas, which checking a spec never needs
            import privspec.api  # noqa: F401
    finally:
        if paused:
            gc.freeze()
            gc.enable()


def _dispatch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    # start-up: a spec brings sympy and lark (about 1 s) that --help and --version never need
    from privspec.spec import Spec

    path = Path(args.spec)
    if not path.is_file():
        print(f"privspec {args.verb}: no such spec file: {args.spec}", file=err)
        return EXIT_INVALID
    try:
        spec = Spec.load(path)
    except UnicodeDecodeError as e:
        print(f"{args.spec}: error[E100]: the file is not UTF-8 text ({e.reason} at byte {e.start})", file=err)
        return EXIT_INVALID
    if spec.diagnostics and not (args.verb == "check" and args.format == "json"):
        print(spec.render_diagnostics(), file=err)
    if args.verb == "check":
        report = check_report(args.format, spec.source, spec.title, spec.diagnostics,
                              spec.summary() if spec.ok else None)
        print(report, file=out if (spec.ok or args.format == "json") else err)
        return EXIT_OK if spec.ok else EXIT_INVALID
    if not spec.ok:
        n = len(spec.errors)
        print(f"privspec {args.verb}: {args.spec} has {n} error{'s' if n != 1 else ''}; nothing was done", file=err)
        return EXIT_INVALID
    model = spec.model
    # compare selects compare blocks with --query; the other verbs, queries
    names = model.compares if args.verb == "compare" else model.queries
    unknown = [q for q in getattr(args, "query", ()) if q not in names]
    if unknown:
        hint = did_you_mean(unknown[0], names)
        what = "compare block" if args.verb == "compare" else "query"
        raise _Usage(f"privspec {args.verb}: no {what} named '{unknown[0]}' in {args.spec}"
                     + (f"; {hint}" if hint else ""))
    if args.verb == "privatize" and args.mechanism not in model.mechanisms and args.mechanism not in model.releases:
        hint = did_you_mean(args.mechanism, [*model.mechanisms, *model.releases])
        raise _Usage(f"privspec privatize: no mechanism named '{args.mechanism}' in {args.spec}"
                     + (f"; {hint}" if hint else ""))
    if args.verb == "client":
        return _client(args, spec, err)
    if args.verb == "serve":
        return _serve(args, spec, out, err)
    return _answer(args, spec, out, err)


def _answer(args: argparse.Namespace, spec, out: TextIO, err: TextIO) -> int:
    """Answer the selected queries through the Python API (:func:`privspec.api.answer`).

    A query that cannot be answered stops nothing else: its diagnostic goes to stderr,
    naming the query; every other query is answered and printed (JSON: failed queries
    are ``{"kind", "value": null, "error": {...}}`` entries); the exit status is then 1.
    """
    # check and --help never need what the API and the back ends bring:
    # start-up: numpy, scipy and pandas (about 2 s)
    from privspec.api import answer, export, select

    model = spec.model
    if args.verb == "privatize":
        return _privatize(args, spec, err)
    if args.verb == "export":
        unknown = [m for m in args.mechanism if m not in model.mechanisms]
        if unknown:
            raise _Usage(f"privspec export: no mechanism named '{unknown[0]}' in {args.spec}")
        rows = export(spec, args.db, args.out, mechanisms=args.mechanism or None, force=args.force)
        print(f"privspec export: wrote {rows} rows to {args.out}", file=err)
        return EXIT_OK
    if args.verb == "compare":
        return _compare(args, spec, out, err)
    if args.verb == "run" and not args.data:
        raise _Usage("privspec run: give the data with --data FILE (or --data MECHANISM=FILE)")
    if args.verb == "simulate" and (args.n < 1 or args.reps < 1):
        raise _Usage("privspec simulate: --n and --reps must be positive")
    data = None
    if args.verb == "run":
        from privspec.backends.data.bindings import DataBindings  # start-up: as the API's

        try:
            data = DataBindings.parse(args.data, [*model.mechanisms, *model.releases])
        except ValueError as e:
            raise _Usage(f"privspec run: {e}") from None
        data.engine = args.engine
        _check_survey_design(args)
    if not select(model, args.verb, args.query):
        print(f"privspec {args.verb}: {args.spec} has no queries to answer", file=err)
        return EXIT_OK
    design = {k: getattr(args, k, None) for k in ("weights", "strata", "cluster", "replicate_weights",
                                                  "replicate_type", "fay_rho", "rscales")}
    res = answer(spec, args.verb, queries=args.query or None, data=data, seed=getattr(args, "seed", None),
                 n=getattr(args, "n", None), reps=getattr(args, "reps", None), **design)
    shown: dict[str, str] = {}  # a rendered error -> the first query it stopped
    for q in res.queries:
        error = res.failures.get(q.name)
        if error is None:
            continue
        if q.name in res.messages:  # said in the runner's words
            print(f"privspec {args.verb}: {res.messages[q.name]}", file=err)
            continue
        text = _render_error(_with_spec_path(error, args.spec, spec), spec)
        if text in shown:
            print(f"privspec {args.verb}: query '{q.name}' ({q.kind}) was not answered: the same error as "
                  f"query '{shown[text]}' ({error.code})", file=err)
        else:
            shown[text] = q.name
            print(f"privspec {args.verb}: query '{q.name}' ({q.kind}) was not answered:\n{text}", file=err)
    if res.results or args.format == "json":
        print(res.render(args.format, verbose=args.verbose), file=out)
    if args.verb == "run" and not res.failures:
        from privspec.run_plans import remember_plan  # start-up: run only (the module is light)
        remember_plan(args, spec)
    if getattr(args, "plot", None):
        written = _plots(res, Path(args.plot))
        print(f"privspec {args.verb}: wrote {len(written)} picture{'s' if len(written) != 1 else ''} to "
              f"{args.plot}", file=err)
    return EXIT_INVALID if res.failures else EXIT_OK


def _check_survey_design(args: argparse.Namespace) -> None:
    """A usage error for a survey design option without the one it needs (the API builds
    the design: :func:`privspec.api.answer`)."""
    if args.weights is None and (args.strata is not None or args.cluster is not None):
        raise _Usage("privspec run: --strata and --cluster need --weights (a column of survey weights)")
    if args.weights is None and args.replicate_weights is not None:
        raise _Usage("privspec run: --replicate-weights need --weights (the full-sample weights column)")
    if args.replicate_weights is None and (args.replicate_type, args.fay_rho, args.rscales) != (None,) * 3:
        raise _Usage("privspec run: --replicate-type, --fay-rho and --rscales need --replicate-weights")


def _plots(res, folder: Path) -> list[Path]:
    """The natural picture of each answered query that has one (``result.plot()``), as
    ``folder/QUERY.png``; results without one (a number, a mapping) are skipped."""
    from privspec.results.values import Matrix, StepFunction, Table, Vector  # start-up: as the API's

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DataError(Diagnostic("D007", f"cannot write pictures to {folder}: {e.strerror or e}", file=str(folder),
                                   hint="give a folder that can be created and written")) from None

    written = []
    for name, result in res.items():
        if not isinstance(result.value, (StepFunction, Vector, Matrix, Table)):
            continue
        path = folder / f"{name}.png"
        check_output(path, force=True)  # a picture of a former run is replaced; a device or a pipe never
        fig = result.plot()
        buf = io.BytesIO()
        try:
            fig.savefig(buf, format="png")
        finally:
            import matplotlib.pyplot as plt  # start-up: result.plot() above has loaded it

            plt.close(fig)
        write_bytes_atomic(buf.getvalue(), path, force=True)
        written.append(path)
    return written


def _with_spec_path(error: PrivspecError, path: str, spec) -> PrivspecError:
    """Hints name the spec as the user typed it on the command line."""
    if spec.source.name == path:
        return error
    diags = [replace(d, hint=d.hint.replace(f"privspec privatize {spec.source.name}", f"privspec privatize {path}"))
             for d in error.diagnostics]
    return type(error)(diags, error.source)


def _render_error(error: PrivspecError, spec) -> str:
    """An error as the compiler-style text, spans pointing into the spec."""
    source = error.source or spec.source  # a diagnostic with no span and no file: the spec's query
    return "\n".join(d.render(source) for d in error.diagnostics)


def _privatize(args: argparse.Namespace, spec, err: TextIO) -> int:
    # check and --help never need what the API and the back ends bring:
    # start-up: numpy, scipy and pandas (about 2 s)
    from privspec.api import privatizer
    from privspec.backends.privatize import privatize_file  # start-up: as the API's

    keep = [c.strip() for item in args.keep for c in item.split(",") if c.strip()]
    try:
        mech, backend = privatizer(spec.model, args.mechanism, nonnegative=args.nonnegative, offset=args.offset,
                                   records="file", keep=keep)
    except ValueError as e:
        raise _Usage(f"privspec privatize: --{e}") from None
    if args.csv_guard and Path(args.output).suffix.lower() in PARQUET:
        raise _Usage(f"privspec privatize: --csv-guard is for CSV files a spreadsheet opens, not for Parquet "
                     f"({args.output})")
    if backend is None:
        print(f"privspec privatize: privatizing data with mechanism '{args.mechanism}' "
              f"({getattr(mech, 'family', 'release')}) is not supported yet; nothing was written", file=err)
        return EXIT_INVALID
    check_output(args.output, force=args.force)  # before any work
    with interrupt_on_signals():  # SIGTERM too: the temporary file of the write is removed
        try:
            # streamed: the input is read in pieces through the engine, the output written as
            # it goes to a temporary file renamed into place at the end
            rows = privatize_file(spec.model, mech, backend, args.input, args.output, seed=args.seed,
                                  offset=args.offset, nonnegative=args.nonnegative, engine=args.engine,
                                  chunk_rows=args.chunk_rows, keep=keep, csv_guard=args.csv_guard,
                                  force=args.force)
        except DataError as e:
            raise e.with_file(args.input) from None
        except OSError as e:
            raise DataError(Diagnostic("D007", f"cannot write {args.output}: {e.strerror or e}", file=args.output,
                                       hint="check the disk space and the folder's permissions")) from None
    if keep:
        raw = f"raw columns kept, as asked: {', '.join(dict.fromkeys(keep))}"
    elif args.mechanism in spec.model.releases and args.mechanism not in spec.model.mechanisms:
        raw = "the released table only"
    else:
        raw = "reports only: no raw column kept"
    guard = "; cells guarded for spreadsheets" if args.csv_guard else ""
    print(f"privspec privatize: wrote {rows} rows to {args.output} ({raw}{guard})", file=err)
    return EXIT_OK


def _client(args: argparse.Namespace, spec, err: TextIO) -> int:
    # start-up: the API brings numpy, scipy and pandas (about 2 s), which check and --help never need
    from privspec.api import client

    unknown = [m for m in args.mechanism if m not in spec.model.mechanisms]
    if unknown:
        hint = did_you_mean(unknown[0], list(spec.model.mechanisms))
        raise _Usage(f"privspec client: no mechanism named '{unknown[0]}' in {args.spec}" + (f"; {hint}" if hint else ""))
    chosen = args.mechanism or list(spec.model.mechanisms)
    try:
        client(spec, args.out, chosen, force=args.force)
    except PrivspecError as e:  # named after the spec (a mechanism refused has no span of its own here)
        raise type(e)(list(e.diagnostics), e.source or spec.source) from None
    print(f"privspec client: wrote {args.out} (privatize(answers) for {', '.join(chosen)}; "
          "only the reports leave the respondent's device)", file=err)
    return EXIT_OK


def _serve(args: argparse.Namespace, spec, out: TextIO, err: TextIO) -> int:
    # start-up: the API brings numpy, scipy and pandas (about 2 s), which check and --help never need
    from privspec.api import serve

    unknown = [m for m in args.mechanism if m not in spec.model.mechanisms]
    if unknown:
        hint = did_you_mean(unknown[0], list(spec.model.mechanisms))
        raise _Usage(f"privspec serve: no mechanism named '{unknown[0]}' in {args.spec}" + (f"; {hint}" if hint else ""))
    if args.token is not None and not args.token.strip():
        raise _Usage("privspec serve: --token is empty")

    def announce(text: str) -> None:
        print(text, file=out, flush=True)

    try:
        with interrupt_on_signals():   # uvicorn stops on the signal, then raises it again here
            serve(spec, args.db, host=args.host, port=args.port, token=args.token,
                  mechanisms=args.mechanism or None, announce=announce)
    except PrivspecError as e:  # named after the spec (a mechanism refused has no span of its own here)
        raise type(e)(list(e.diagnostics), e.source or spec.source) from None
    except OSError as e:
        print(f"privspec serve: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=err)
        return EXIT_INVALID
    except KeyboardInterrupt as e:
        signum = int(getattr(e, "signum", signal.SIGINT))
        print(f"privspec serve: stopped ({signal.Signals(signum).name}); every acknowledged submission is in "
              f"{args.db}", file=err)
        return 128 + signum
    return EXIT_OK


def _compare(args: argparse.Namespace, spec, out: TextIO, err: TextIO) -> int:
    # check and --help never need what the API and the back ends bring:
    # start-up: numpy, scipy and pandas (about 2 s)
    from privspec import api

    model = spec.model
    if not model.compares:
        print(f"privspec compare: {args.spec} declares no compare block", file=err)
        return EXIT_INVALID
    if args.reps is not None and args.reps != 0 and args.reps < 2:
        raise _Usage("privspec compare: --reps must be 0 (no check) or at least 2")
    if args.report is not None:
        report = Path(args.report)
        if report.suffix.lower() not in (".html", ".htm", ".md"):
            raise _Usage(f"privspec compare: --report {args.report}: name an .html or .md file")
        # the reports themselves before any work (their PNGs, which depend on the results,
        # are checked with them before anything is written)
        for target in api.report_paths(report, args.query or list(model.compares)).values():
            check_output(target, force=args.force)
    results = api.compare(spec, args.query or None, reps=args.reps, seed=args.seed)
    for name, e in results.failures.items():
        print(f"privspec compare: {name} was not answered:\n{e}", file=err)
    if args.report is not None and results.results:
        written = api.write_reports(results, args.report, force=args.force)
        print(f"privspec compare: wrote {', '.join(written)}", file=err)
    if results.results or args.format == "json":
        print(results.render(args.format), file=out)
    return EXIT_OK if results.ok else EXIT_INVALID