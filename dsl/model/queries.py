"""Query declarations -> model queries: ``estimate``/``test`` (the estimand, the estimator
checked against the mechanism: :mod:`privspec.model.estimands`) and the plain queries
(``coverage(M)``, ``budget(...)``, ``bounds(M, n = N)`` ...); planning queries are built by
:mod:`privspec.model.plans`."""
from __future__ import annotations

import sympy

from privspec.language import arith
from privspec.language import ast
from privspec.language.arith import fmt
from privspec.errors import did_you_mean
from privspec.language.source import Span
from privspec.model import signatures
from privspec.model.estimands import CALIBRATIONS, ESTIMATORS, build_estimand, build_method, check_fit, observes
from privspec.model.graph import (Estimand, IntervalMechanism, Mechanism, Method, ProductMechanism, Query, RandomizedResponse,
                                  Variable)
from privspec.model.mechanisms import build_mechanism
from privspec.model.plans import allocate_query, planning_query
from privspec.model.query_kinds import ESTIMANDS, PLAIN_QUERIES, QUERY_KINDS, family_of
from privspec.model.scope import Context, compare, describe

#: privacy metrics of ``coverage`` and ``leakage`` (from the signature table)
METRICS = signatures.METRICS


def build_query(ctx: Context, decl: ast.QueryDecl) -> Query | None:
    name = decl.name.name
    for clause, label in ((decl.source, "from"), (decl.method, "by"), (decl.calibrate, "calibrate")):
        if len(clause) > 1:
            ctx.error("E205", f"'{label}' is given twice", clause[1].span)
            return None
    body = decl.body
    source = decl.source[0] if decl.source else None
    method = decl.method[0] if decl.method else None
    calib = decl.calibrate[0] if decl.calibrate else None
    if decl.verb in ("estimate", "test"):
        return _estimate(ctx, name, decl.verb, body, source, method, calib, decl.span)
    if not isinstance(body, ast.Call):
        ctx.error("E205", f"expected a query, found {describe(body)}", body.span,
                  "e.g. estimate distribution(X) from M by mom, coverage(M), epsilon(M)")
        return None
    if body.name in ESTIMATORS:
        verb = ESTIMANDS[body.name].verb
        ctx.error("E205", f"{body.name}(...) is an estimand: say what to do with it", body.span,
                  f"write: query {name} = {verb} {body.name}(...) from MECHANISM by METHOD")
        return None
    if body.name not in PLAIN_QUERIES:
        ctx.error("E206", f"unknown query '{body.name}'", body.func.span,
                  did_you_mean(body.name, PLAIN_QUERIES + ("estimate", "test"))
                  or f"queries: estimate, test, {', '.join(PLAIN_QUERIES)}")
        return None
    for clause in (source, method, calib):
        if clause is not None:
            ctx.error("E205", f"{body.name}(...) takes no from/by/calibrate clause", clause.span)
            return None
    return _plain(ctx, name, body, decl.span)



def _estimate(ctx: Context, name: str, verb: str, body: ast.Node, source: ast.Ref | None,
              method_node: ast.Node | None, calib: ast.Node | None, span: Span, kind: str | None = None) -> Query | None:
    est = build_estimand(ctx, body, verb)
    if est is None:
        return None
    if source is None:
        ctx.error("E504", "say which mechanism the data came through: ... from MECHANISM", body.span,
                  f"e.g. {verb} {est.kind}(...) from {next(iter(ctx.names_of(['mechanism'])), 'M')} by "
                  f"{ESTIMATORS[est.kind][0]}")
        return None
    if method_node is None:
        ctx.error("E504", f"say which {'test' if verb == 'test' else 'estimator'}: ... by METHOD", body.span,
                  f"{est.kind}() takes: {' | '.join(ESTIMATORS[est.kind])}")
        return None
    mech = ctx.lookup(source, ["mechanism"])
    method = build_method(ctx, method_node, ESTIMATORS[est.kind], "test" if verb == "test" else f"estimator for {est.kind}()")
    calibrate = None
    if calib is not None:
        if verb != "test":
            ctx.error("E205", "calibrate applies to tests only", calib.span)
            return None
        calibrate = build_method(ctx, calib, CALIBRATIONS, "calibration")
        if calibrate is None:
            return None
        if calibrate.name == "asymptotic" and method is not None and method.name == "lrt_mom":
            # Eq. 8 at the MoM estimates (not the maximizers) has no chi-square limit
            ctx.error("E505", "lrt_mom has no asymptotic p-value: the likelihood ratio at method-of-moments "
                              "estimates has no chi-square limit", calib.span,
                      "drop the calibrate clause (permutation, exact in size), or test by lrt")
            return None
    if mech is None or method is None or not check_fit(ctx, est, mech, method, source):
        return None
    return Query(name, kind or verb, mechanism=mech, estimand=est, method=method, calibrate=calibrate, span=span)


def _mechanism_arg(ctx: Context, node: ast.Node) -> Mechanism | None:
    if isinstance(node, ast.Ref):
        return ctx.lookup(node, ["mechanism"])
    return build_mechanism(ctx, node, None)


def _plain(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    """A query named by its call (``coverage(M)``, ``budget(per variable)`` ...): each kind
    checks its own arguments."""
    kind = call.name
    if kind in ("variance", "table"):
        return _release_query(ctx, name, call, span)
    if kind in ("sample_size", "power"):
        return planning_query(ctx, name, call, span)
    if kind == "allocate":
        return allocate_query(ctx, name, call, span)
    if kind in ("bounds", "thresholds"):
        return _rr_bounds(ctx, name, call, span)
    build = {"avar": _avar, "budget": _budget, "individual": _individual, "optimal_anchor": _optimal_anchor,
             "composition": _composition}
    return build.get(kind, _mechanism_query)(ctx, name, call, span)


def _avar(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    """``avar(distribution(X) from M by mom)``: the estimate whose asymptotic variance it asks."""
    if not signatures.takes(signatures.signature("avar", "query"), len(call.args)) \
            or not isinstance(call.args[0], ast.Qualified):
        ctx.error("E205", "avar() takes an estimator: avar(distribution(X) from M by mom)", call.span)
        return None
    q = call.args[0]
    if q.calibrate is not None:
        ctx.error("E205", "avar() takes no calibrate clause", q.calibrate.span)
        return None
    return _estimate(ctx, name, "estimate", q.value, q.source, q.method, None, span, kind="avar")


def _budget(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    """``budget(per variable)``, ``budget(per release)`` or ``budget({a, b})``: the privacy
    spent by the releases declared above."""
    if not signatures.takes(signatures.signature("budget", "query"), len(call.args)):
        ctx.error("E205", "budget() takes per variable, per release, or a set {a, b}", call.span)
        return None
    arg = call.args[0]
    if not ctx.names_of(["release"]):
        ctx.error("E501", "budget() accounts for releases, and none is declared above", call.span,
                  "declare one: release A = counts(age, sex) with geometric(epsilon = 1)")
        return None
    if isinstance(arg, ast.Phrase) and arg.words[0].name == "per" and arg.words[1].name in ("variable", "release"):
        return Query(name, "budget", scope=f"per {arg.words[1].name}", span=span)
    if isinstance(arg, ast.Braced) and arg.is_set and arg.items:
        vars_ = []
        for item in arg.items:
            v = ctx.variable(item) if isinstance(item, ast.Ref) else None
            if v is None:
                if not isinstance(item, ast.Ref):
                    ctx.error("E205", f"expected a variable, found {describe(item)}", item.span)
                return None
            vars_.append(v.name)
        return Query(name, "budget", scope=tuple(vars_), span=span)
    ctx.error("E205", "budget() takes per variable, per release, or a set {a, b}", arg.span)
    return None


def _composition(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    """``composition(M1, M2, ...)``: the coverage of the ensemble of interval mechanisms on
    one variable (Definition 3) beside Theorem 4's bound; the names go in ``scope``."""
    usage = "composition() takes two or more interval mechanisms on one variable: composition(M1, M2)"
    if len(call.args) < 2 or call.keywords:
        ctx.error("E205", usage, call.keywords[0].span if call.keywords else call.span)
        return None
    mechs = []
    for a in call.args:
        mech = _mechanism_arg(ctx, a)
        if mech is None:
            return None
        if not isinstance(mech, IntervalMechanism):
            ctx.error("E501", "composition() is of interval(...) mechanisms (Theorem 4)", a.span, usage)
            return None
        if mechs and mech.variable != mechs[0].variable:
            ctx.error("E501", f"{mech.name} privatizes {mech.variable.name}, {mechs[0].name} "
                              f"{mechs[0].variable.name}: an ensemble queries one variable", a.span)
            return None
        mechs.append(mech)
    return Query(name, "composition", mechanism=mechs[0], scope=tuple(m.name for m in mechs), span=span)


def _optimal_anchor(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    """``optimal_anchor(mean(X), M)``: Theorem 2's anchor density for a Case-I mechanism."""
    if not signatures.takes(signatures.signature("optimal_anchor", "query"), len(call.args)):
        ctx.error("E205", "optimal_anchor() takes an estimand and a mechanism: optimal_anchor(mean(X), M)", call.span)
        return None
    est = build_estimand(ctx, call.args[0], "estimate")
    mech = _mechanism_arg(ctx, call.args[1])
    if est is None or mech is None:
        return None
    if est.kind != "mean":
        ctx.error("E501", "the optimal anchor density (Theorem 2) is derived for mean(X)", call.args[0].span)
        return None
    if not (isinstance(mech, IntervalMechanism) and mech.scheme == "case1"):
        ctx.error("E501", "the optimal anchor density (Theorem 2) is for Case-I mechanisms", call.args[1].span)
        return None
    if not observes(mech, est.variables[0]):
        ctx.error("E503", f"this mechanism observes {mech.variable.name}, not {est.variables[0].name}",
                  call.args[1].span)
        return None
    return Query(name, "optimal_anchor", mechanism=mech, estimand=est, span=span)


def _mechanism_query(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    """``moments``, ``fisher``, ``coverage``, ``leakage``, ``epsilon``, ``identifiable``: a
    mechanism first, then (coverage one, leakage any) privacy metrics."""
    kind = call.name
    sig = signatures.signature(kind, "query")
    if not call.args:
        ctx.error("E205", f"{kind}() needs a mechanism: {kind}(M)", call.span)
        return None
    if call.keywords and not sig.keywords:
        ctx.error("E205", f"{kind}() takes no options", call.keywords[0].span)
        return None
    if kind == "leakage" and _names_release(ctx, call.args[0]):
        return _release_leakage(ctx, name, call, span)
    mech = _mechanism_arg(ctx, call.args[0])
    metrics: list[str] = []
    _, most = signatures.arity(sig)  # at most one mechanism, coverage one metric, leakage any
    for a in call.args[1:]:
        if most == 1:
            ctx.error("E205", f"{kind}() takes one mechanism", a.span)
            return None
        if not isinstance(a, ast.Ref) or a.name not in METRICS:
            shown = a.name if isinstance(a, ast.Ref) else describe(a)
            ctx.error("E502", f"unknown privacy metric '{shown}'", a.span,
                      (did_you_mean(shown, METRICS) if isinstance(a, ast.Ref) else "") or f"metrics: {', '.join(METRICS)}")
            return None
        metrics.append(a.name)
    if most is not None and len(call.args) > most:  # only coverage gets here
        ctx.error("E205", "coverage() takes one metric; leakage() takes several", call.args[most].span)
        return None
    if mech is None:
        return None
    if kind in ("moments", "fisher", "identifiable") and not QUERY_KINDS[kind].accepts(family_of(mech)):
        ctx.error("E501", f"{kind}() is defined for finite mechanisms (subset, grr, rr, product)", call.args[0].span)
        return None
    if kind in ("coverage", "leakage"):
        metrics = _metrics(ctx, kind, mech, metrics, call)
        if metrics is None:
            return None
    return Query(name, kind, mechanism=mech, metrics=tuple(metrics), span=span)


def _names_release(ctx: Context, node: ast.Node) -> bool:
    found = ctx.scope.get(node.name) if isinstance(node, ast.Ref) else None
    return found is not None and found.kind == "release"


def _release_leakage(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    """``leakage(D[, prediction])``: how well an adversary who knows every other record
    guesses one record's cell of release D (its prediction, and the largest posterior)."""
    for a in call.args[1:]:
        if not (isinstance(a, ast.Ref) and a.name == "prediction"):
            ctx.error("E501", "a release's leakage is prediction: the chance that an adversary who knows every "
                              "other record guesses one record's cell", a.span, f"leakage({call.args[0].name}, prediction)")
            return None
    release = ctx.lookup(call.args[0], ["release"])
    if release is None:
        return None
    return Query(name, "leakage", metrics=tuple(a.name for a in call.args[1:]), scope=release.name, span=span)


def _metrics(ctx: Context, kind: str, mech: Mechanism, metrics: list[str], call: ast.Call) -> list[str] | None:
    """The metrics of ``coverage``/``leakage`` (the defaults where none is named), each
    checked against the mechanism's reports."""
    if not metrics:
        metrics = ["size"] if kind == "coverage" else (
            list(METRICS) if mech.family in ("subset",) else ["mutual_information", "prediction"]
            if mech.is_finite else ["prediction"] if mech.family == "two_group" else ["size"])
    for mt in metrics:
        set_valued = mech.family in ("subset", "interval") or (
            isinstance(mech, ProductMechanism) and all(f.family == "subset" for f in mech.factors))
        if mt == "size" and not set_valued:
            ctx.error("E501", "size coverage needs set-valued reports (subset or interval mechanisms)",
                      call.span, "for randomized response use mutual_information or prediction")
            return None
        # a frequency oracle's and a two-group design's prediction risk: their back ends compute it
        if mt != "size" and not mech.is_finite and not (mt == "prediction" and mech.family in ("oracle", "two_group")):
            ctx.error("E501", f"{mt} is computed for finite mechanisms", call.span)
            return None
    return metrics


def _release_query(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    """``variance(D)``, ``table(D)``, or the margin over some of D's variables: ``table(D, band)``.

    The release's name goes in ``scope``, the margin's variables (none: the whole table)
    in an ``Estimand("margin", ...)``.
    """
    kind = call.name
    usage = f"{kind}() takes a release and, for a margin, some of its variables: {kind}(D) or {kind}(D, band)"
    sig = signatures.signature(kind, "query")
    if not signatures.takes(sig, len(call.args)) or (call.keywords and not sig.keywords) \
            or not isinstance(call.args[0], ast.Ref):
        ctx.error("E205", usage, call.keywords[0].span if call.keywords else call.span)
        return None
    release = ctx.lookup(call.args[0], ["release"])
    if release is None:
        return None
    in_table = [v.name for v in release.variables]
    vars_: list[Variable] = []
    for a in call.args[1:]:
        v = ctx.variable(a)
        if v is None:
            return None
        if v.name not in in_table:
            ctx.error("E601", f"{v.name} is not in release {release.name} ({', '.join(in_table)})", a.span)
            return None
        if v in vars_:
            ctx.error("E205", f"{v.name} appears twice in {kind}()", a.span)
            return None
        vars_.append(v)
    est = Estimand("margin", tuple(vars_), span=call.span) if vars_ else None
    return Query(name, kind, estimand=est, scope=release.name, span=span)


def _individual(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    """``individual(M, {observed subset} [, true category])``: size and prediction leakage of
    one respondent before and after observing the subset (subset privacy, Fig. 4)."""
    usage = "individual(MECHANISM, {observed, subset}, true_category)"
    sig = signatures.signature("individual", "query")
    if (call.keywords and not sig.keywords) or not signatures.takes(sig, len(call.args)):
        ctx.error("E205", f"individual() takes a mechanism, an observed subset and optionally the true "
                          f"category: {usage}", call.span)
        return None
    mech = _mechanism_arg(ctx, call.args[0])
    if mech is None:
        return None
    if not QUERY_KINDS["individual"].accepts(family_of(mech)):
        ctx.error("E501", "individual() reads an observed subset of a subset mechanism", call.args[0].span)
        return None
    var = mech.variable
    subset = call.args[1]
    if not (isinstance(subset, ast.Braced) and subset.is_set and subset.items):
        ctx.error("E205", f"expected the observed subset of {var.name}, e.g. {{a, b}}, found {describe(subset)}",
                  subset.span, usage)
        return None
    labels = [ctx.domain_label(i, var) for i in subset.items]
    if any(lab is None for lab in labels):
        return None
    truth = None
    if len(call.args) == 3:
        truth = ctx.domain_label(call.args[2], var)
        if truth is None:
            return None
        if truth not in labels:
            ctx.error("E307", f"'{truth}' is not in the observed subset: a subset report always contains the "
                              "true category", call.args[2].span)
            return None
    ordered = tuple(lab for lab in var.labels if lab in labels)
    return Query(name, "individual", mechanism=mech, observed=ordered, truth=truth, span=span)


def _rr_bounds(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    """``bounds(M, n = N)`` and ``thresholds(M, n = N)``: the castell paper's error bounds
    (Theorems 4-6) and hybrid thresholds (Appendix C) for the joints of a product of
    randomized responses.  ``n`` may be left out (results symbolic in n).  The factors'
    variables go in the estimand, ``n`` in the method's options."""
    kind = call.name
    usage = f"{kind}(MECHANISM, n = N) for a product of randomized responses"
    sig = signatures.signature(kind, "query")
    if not signatures.takes(sig, len(call.positional)):
        ctx.error("E205", f"{kind}() takes one mechanism and the option n: {usage}", call.span)
        return None
    mech = _mechanism_arg(ctx, call.positional[0])
    if mech is None:
        return None
    factors = mech.factors if isinstance(mech, ProductMechanism) else ()
    wanted = "grr" if kind == "thresholds" else "grr or rr"
    if len(factors) < 2 or not all(isinstance(f, RandomizedResponse) and f.square
                                   and (kind == "bounds" or f.kind == "grr") for f in factors):
        ctx.error("E501", f"{kind}() is for a product of {wanted} mechanisms (RR-Independent "
                          "randomization, castell paper)", call.positional[0].span,
                  "e.g. product(grr(a, epsilon = 1), grr(b, epsilon = 1))")
        return None
    options: list = []
    for kw in call.keywords:
        key = kw.key.name if isinstance(kw.key, ast.Ref) else getattr(kw.key, "text", "")
        if key not in sig.keywords:
            ctx.error("E205", f"unknown option '{key}' for {kind}()", kw.span, did_you_mean(key, sig.keywords) or usage)
            return None
        n = ctx.number(kw.value, "the number of respondents n")
        if n is None:
            return None
        if n.is_number and ((compare(n, sympy.Integer(0)) or 0) <= 0 or arith.infinite(n)):
            ctx.error("E309", f"n must be a positive, finite number, found {fmt(n)}", kw.value.span)
            return None
        options.append(("n", n))
    est = Estimand("joint", tuple(f.variable for f in factors), span=call.positional[0].span)
    return Query(name, kind, mechanism=mech, estimand=est, method=Method(kind, tuple(options), call.span), span=span)
