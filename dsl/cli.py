"""The ``privspec`` command line.

Exit status: 0 on success, 1 when the spec or data is invalid or a query cannot be
answered (nothing written), 2 on a usage error, 3 on an internal error (a bug: please
report it; set ``PRIVSPEC_DEBUG=1`` for the traceback).
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path
from typing import Sequence, TextIO

from . import __version__
from .errors import Diagnostic, PrivspecError
from .render import FORMATS, check_report

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

#: query kinds that need no data (answered by ``analyze``)
ANALYTIC_KINDS = ("avar", "moments", "fisher", "coverage", "leakage", "epsilon", "identifiable",
                  "optimal_anchor", "budget", "variance", "individual", "bounds", "thresholds")


class _Usage(Exception):
    """A usage error (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print and exit; we decide the exit
        raise _Usage(f"{self.prog}: {message}")


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("spec", help="the spec file (*.privspec)")
    common.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    common.add_argument("--query", action="append", default=[], metavar="NAME",
                        help="answer only this query (repeatable)")

    p = _Parser(prog="privspec", description="Design and analyse privacy-preserving data collection.")
    p.add_argument("--version", action="version", version=f"privspec {__version__}")
    sub = p.add_subparsers(dest="verb", metavar="COMMAND", parser_class=_Parser)
    sub.add_parser("check", parents=[common], help="parse and validate a spec")
    sub.add_parser("analyze", parents=[common], help="symbolic and numeric results that need no data")
    run = sub.add_parser("run", parents=[common], help="answer every query on data")
    run.add_argument("--data", action="append", default=[], metavar="FILE|M=FILE",
                     help="privatized data (CSV or Parquet); M=FILE (or M1,M2=FILE) binds a file to mechanism M")
    run.add_argument("--seed", type=int, default=None,
                     help="seed of the randomized parts (permutation p-values, bootstrap): the same seed, "
                          "the same answer (default: 0)")
    priv = sub.add_parser("privatize", parents=[common], help="privatize raw data with a mechanism")
    priv.add_argument("--mechanism", required=True, metavar="M", help="a mechanism, or a release (count tables)")
    priv.add_argument("--input", required=True, metavar="RAW")
    priv.add_argument("--output", required=True, metavar="OUT")
    priv.add_argument("--seed", type=int, default=None)
    priv.add_argument("--nonnegative", action="store_true",
                      help="releases: post-process away negative counts, totals kept (biases small cells)")
    sim = sub.add_parser("simulate", parents=[common], help="empirical against analytic, from the populations")
    sim.add_argument("--n", type=int, required=True)
    sim.add_argument("--reps", type=int, default=1000)
    sim.add_argument("--seed", type=int, default=None)
    comp = sub.add_parser("compare", parents=[common], help="design comparisons")
    comp.add_argument("--report", metavar="FILE", default=None, help="write an HTML report")
    return p


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
        return _dispatch(args, out, err)
    except _Usage as e:
        print(str(e), file=err)
        return EXIT_USAGE
    except PrivspecError as e:
        print(e.render(), file=err)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug: say so plainly instead of a bare traceback
        if os.environ.get("PRIVSPEC_DEBUG"):
            traceback.print_exc(file=err)
        print(f"privspec: internal error: {type(e).__name__}: {e}\n"
              "this is a bug in privspec; run with PRIVSPEC_DEBUG=1 for the traceback", file=err)
        return EXIT_INTERNAL


def _dispatch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .spec import Spec

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
    unknown = [q for q in args.query if q not in model.queries]
    if unknown:
        from .scope import did_you_mean

        hint = did_you_mean(unknown[0], model.queries)
        raise _Usage(f"privspec {args.verb}: no query named '{unknown[0]}' in {args.spec}"
                     + (f"; {hint}" if hint else ""))
    if args.verb == "privatize" and args.mechanism not in model.mechanisms and args.mechanism not in model.releases:
        from .scope import did_you_mean

        hint = did_you_mean(args.mechanism, [*model.mechanisms, *model.releases])
        raise _Usage(f"privspec privatize: no mechanism named '{args.mechanism}' in {args.spec}"
                     + (f"; {hint}" if hint else ""))
    return _answer(args, spec, out, err)


def _selected(args: argparse.Namespace, model) -> list:
    names = args.query or list(model.queries)
    queries = [model.queries[n] for n in names]
    if args.verb == "analyze" and not args.query:
        queries = [q for q in queries if q.kind in ANALYTIC_KINDS]
    return queries


def _answer(args: argparse.Namespace, spec, out: TextIO, err: TextIO) -> int:
    """Hand each selected query to the back end that answers it."""
    from .backends import backend_for

    model = spec.model
    if args.verb == "privatize":
        return _privatize(args, model, err)
    if args.verb == "compare":
        return _compare(args, model, out, err)
    queries = _selected(args, model)
    if args.verb == "analyze":
        needs_data = [q for q in queries if q.kind not in ANALYTIC_KINDS]
        for q in needs_data:
            print(f"privspec analyze: query '{q.name}' ({q.kind}) needs data: use privspec run --data FILE "
                  "or privspec simulate", file=err)
        if needs_data:
            return EXIT_INVALID
    options: dict = {"seed": getattr(args, "seed", None)}
    if args.verb == "run":
        from .backends.data import DataBindings

        if not args.data:
            raise _Usage("privspec run: give the data with --data FILE (or --data MECHANISM=FILE)")
        try:
            options["data"] = DataBindings.parse(args.data, [*model.mechanisms, *model.releases])
        except ValueError as e:
            raise _Usage(f"privspec run: {e}") from None
        options["data"].check(queries)
    if args.verb == "simulate":
        if args.n < 1 or args.reps < 1:
            raise _Usage("privspec simulate: --n and --reps must be positive")
        options.update(n=args.n, reps=args.reps)
    if not queries:
        print(f"privspec {args.verb}: {args.spec} has no queries to answer", file=err)
        return EXIT_OK
    plan = [(q, backend_for(q, args.verb)) for q in queries]
    unsupported = [q for q, b in plan if b is None]
    if unsupported:
        for q in unsupported:
            text = spec.source.snippet(q.span) if q.span else q.name
            print(f"privspec {args.verb}: query '{q.name}' is not supported yet ({q.kind} queries of this "
                  f"kind have no back end for '{args.verb}' in this version): {' '.join(text.split())}", file=err)
        return EXIT_INVALID
    # every answer is computed before anything is printed: no partial output
    results = {q.name: b.answer(model, q, args.verb, **options) for q, b in plan}
    from .results import render_results

    print(render_results(args.format, model, results), file=out)
    return EXIT_OK


def _privatize(args: argparse.Namespace, model, err: TextIO) -> int:
    from .backends import privatizer_for
    from .backends.data import read_table, write_table_atomic

    # a release privatizes raw records into its released table(s)
    mech = model.mechanisms.get(args.mechanism) or model.releases[args.mechanism]
    if args.nonnegative and args.mechanism not in model.releases:
        raise _Usage("privspec privatize: --nonnegative applies to releases (count tables) only")
    backend = privatizer_for(mech)
    if backend is None:
        print(f"privspec privatize: privatizing data with mechanism '{args.mechanism}' "
              f"({getattr(mech, 'family', 'release')}) is not supported yet; nothing was written", file=err)
        return EXIT_INVALID
    frame = read_table(args.input)
    extra = {"nonnegative": True} if args.nonnegative else {}
    result = backend.privatize(model, mech, frame, seed=args.seed, **extra)
    write_table_atomic(result, args.output)
    print(f"privspec privatize: wrote {len(result)} rows to {args.output}", file=err)
    return EXIT_OK


def _compare(args: argparse.Namespace, model, out: TextIO, err: TextIO) -> int:
    from .backends import comparer_for

    if not model.compares:
        print(f"privspec compare: {args.spec} declares no compare block", file=err)
        return EXIT_INVALID
    plan = [(c, comparer_for(c)) for c in model.compares.values()]
    missing = [c.name for c, b in plan if b is None]
    if missing:
        print(f"privspec compare: design comparison ({', '.join(missing)}) is not supported yet", file=err)
        return EXIT_INVALID
    results = {c.name: b.compare(model, c, report=args.report, seed=getattr(args, "seed", None)) for c, b in plan}
    from .results import render_results

    print(render_results(args.format, model, results), file=out)
    return EXIT_OK
