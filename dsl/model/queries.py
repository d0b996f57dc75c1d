"""Query and compare declarations -> model queries, checking that each estimator fits
the mechanism the data came through."""
from __future__ import annotations

import sympy

from privspec.language import arith
from privspec.language import ast
from privspec.model import signatures
from privspec.model.mechanisms import build_mechanism
from privspec.model.query_kinds import FAMILIES as FAMILY_WORDS
from privspec.model.query_kinds import (ESTIMANDS, INTERVAL, PLAIN_QUERIES, PRODUCT_JOINT, QUERY_KINDS, estimators_for,
                          family_of)
from privspec.model.graph import (Estimand, FrequencyOracle, IntervalMechanism, Mechanism, Method, MultiAttributeOracle,
                    ProductMechanism, Query, RandomizedResponse, SubsetMechanism, Variable)
from privspec.model.scope import Context, compare, describe, did_you_mean, fmt
from privspec.language.source import Span

#: estimand kind -> estimators that can make it (from the estimand table, :mod:`.query_kinds`)
ESTIMATORS: dict[str, tuple[str, ...]] = {k: e.estimators for k, e in ESTIMANDS.items()}
#: regressors of ``iterative``, laws of ``mle(normal)`` and Algorithm 1's noise, privacy
#: metrics, estimators' options and named arguments: from the signature table
REGRESSORS = signatures.REGRESSORS
FAMILIES = signatures.NOISE_LAWS
NAMED_ARGS = signatures.NAMED_ARGS
METRICS = signatures.METRICS
#: how a test's p-value is calibrated: permutation (the default when no clause is given,
#: exact in size) or the statistic's chi-square limit where it has one
CALIBRATIONS = signatures.names("calibration")
#: estimators that combine per-attribute reports of a product mechanism (castell paper)
_PRODUCT_JOINT = PRODUCT_JOINT
#: keyword options of estimators: option -> (estimators taking it, allowed names; None: a number in [0, 1])
METHOD_OPTIONS = signatures.METHOD_OPTIONS
#: the standard-error kinds of the ``se`` option, the default first
SE_KINDS = METHOD_OPTIONS["se"][1]


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


def _estimand(ctx: Context, node: ast.Node, verb: str) -> Estimand | None:
    if not isinstance(node, ast.Call) or node.name not in ESTIMANDS or ESTIMANDS[node.name].verb != verb:
        kinds = [k for k, e in ESTIMANDS.items() if e.verb == verb]
        name = node.name if isinstance(node, ast.Call) else None
        ctx.error("E206", f"unknown {'hypothesis' if verb == 'test' else 'estimand'} "
                          f"{repr(name) if name else describe(node)}", node.span,
                  (did_you_mean(name, kinds) if name else "") or f"{verb} {' | '.join(k + '(...)' for k in kinds)}")
        return None
    kind = node.name
    if node.keywords:
        ctx.error("E205", f"{kind}() takes no options", node.keywords[0].span)
        return None
    args = node.args
    if kind == "regression":
        if len(args) != 1 or not isinstance(args[0], ast.Formula):
            ctx.error("E205", "regression() takes a formula: regression(response ~ x1 + x2)", node.span)
            return None
        terms = [args[0].lhs] + _terms(args[0].rhs)
        vars_ = [ctx.variable(t, "a variable") for t in terms]
        if any(v is None for v in vars_):
            return None
        return Estimand(kind, tuple(vars_), span=node.span)  # type: ignore[arg-type]
    order = None
    if kind == "moment":
        if len(args) != 2:
            ctx.error("E205", "moment() takes a variable and an order: moment(score, 2)", node.span)
            return None
        order = ctx.integer(args[1], "the order of the moment", 1)
        if order is None:
            return None
        args = args[:1]
    want = ESTIMANDS[kind].arity
    if (want is not None and len(args) != want) or (want is None and len(args) < 2):
        ctx.error("E205", f"{kind}() takes {'two or more variables' if want is None else f'{want} variable' + ('s' if want > 1 else '')}, "
                          f"found {len(args)}", node.span)
        return None
    vars_ = [ctx.variable(a) for a in args]
    if any(v is None for v in vars_):
        return None
    names = [c for v in vars_ for c in v.components()]  # type: ignore[union-attr]
    if len(set(names)) != len(names):
        ctx.error("E205", f"a variable appears twice in {kind}()", node.span)
        return None
    for v, a in zip(vars_, args):
        categorical = ESTIMANDS[kind].categorical
        if v.is_categorical != categorical:  # type: ignore[union-attr]
            ctx.error("E401", f"{kind}() is for {'categorical' if categorical else 'continuous'} variables; "
                              f"{v.name} is {'categorical' if v.is_categorical else 'continuous'}", a.span)  # type: ignore[union-attr]
            return None
    return Estimand(kind, tuple(vars_), order, node.span)  # type: ignore[arg-type]


def _terms(node: ast.Node) -> list[ast.Node]:
    if isinstance(node, ast.BinOp) and node.op == "+":
        return _terms(node.left) + _terms(node.right)
    return [node]


def _method(ctx: Context, node: ast.Node, allowed: tuple[str, ...], role: str) -> Method | None:
    if isinstance(node, ast.Ref):
        name, args = node.name, ()
    elif isinstance(node, ast.Call):
        name, args = node.name, node.positional
    else:
        ctx.error("E205", f"expected {role}, found {describe(node)}", node.span)
        return None
    if name not in allowed:
        ctx.error("E502", f"unknown {role} '{name}'", node.span,
                  did_you_mean(name, allowed) or f"choose one of: {' | '.join(allowed)}")
        return None
    values: list = []
    for kw in node.keywords if isinstance(node, ast.Call) else ():
        option = _method_option(ctx, name, kw, [v[0] for v in values])
        if option is None:
            return None
        values.append(option)
    for a in args:
        if isinstance(a, ast.Ref) and name in NAMED_ARGS:
            slot = sum(1 for v in values if not isinstance(v, tuple))
            what, plural, names = NAMED_ARGS[name][min(slot, len(NAMED_ARGS[name]) - 1)]
            if a.name not in names:
                ctx.error("E502", f"unknown {what} '{a.name}'", a.span,
                          did_you_mean(a.name, names) or f"{plural}: {' | '.join(names)}")
                return None
            values.append(a.name)
        else:
            v = ctx.number(a, f"an argument of {name}()")
            if v is None:
                return None
            values.append(v)
    if name == "iterative" and len(values) not in (1, 2):
        ctx.error("E205", "iterative() takes a regressor and optionally the noise law: iterative(linear) "
                          "or iterative(linear, logistic)", node.span)
        return None
    if name == "permutation":
        # `calibrate permutation` alone takes the default number of draws (999)
        if len(values) > 1 or (values and not (isinstance(values[0], sympy.Integer) and values[0] >= 1)):
            ctx.error("E205", "permutation() takes the number of permutations: permutation(999)", node.span)
            return None
    if name == "asymptotic" and values:
        ctx.error("E205", "asymptotic takes no arguments: calibrate asymptotic", node.span)
        return None
    return Method(name, tuple(values), node.span)


def _method_option(ctx: Context, method: str, kw: ast.KwArg, seen: list[str]) -> tuple | None:
    """One keyword option of an estimator, as a ``(name, value)`` pair (:data:`METHOD_OPTIONS`)."""
    key = kw.key.name if isinstance(kw.key, ast.Ref) else getattr(kw.key, "text", "")
    takes = [k for k, (methods, _) in METHOD_OPTIONS.items() if method in methods]
    if key not in takes:
        ctx.error("E502", f"unknown option '{key}' for '{method}'", kw.span,
                  (did_you_mean(key, takes) if takes else "") or
                  (f"{method} takes: {', '.join(takes)}" if takes else f"'{method}' takes no options"))
        return None
    if key in seen:
        ctx.error("E205", f"option '{key}' is given twice", kw.span)
        return None
    names = METHOD_OPTIONS[key][1]
    if names is None:
        v = ctx.number(kw.value, f"the option {key}")
        if v is None:
            return None
        lo, hi = compare(v, sympy.Integer(0)), compare(v, sympy.Integer(1))
        if not v.is_number or lo is None or hi is None or lo < 0 or hi > 0:
            ctx.error("E309", f"{key} must be between 0 and 1, found {v}", kw.value.span)
            return None
        return (key, v)
    if not isinstance(kw.value, ast.Ref) or kw.value.name not in names:
        shown = kw.value.name if isinstance(kw.value, ast.Ref) else describe(kw.value)
        ctx.error("E502", f"unknown value '{shown}' for {key}", kw.value.span,
                  (did_you_mean(shown, names) if isinstance(kw.value, ast.Ref) else "") or
                  f"{key} = {' | '.join(names)}")
        return None
    return (key, kw.value.name)


def _rr_based(mech: Mechanism) -> bool:
    """Randomized response, a product of randomized responses, or a frequency oracle."""
    if isinstance(mech, (FrequencyOracle, MultiAttributeOracle)):
        return True
    if isinstance(mech, ProductMechanism):
        return all(isinstance(f, RandomizedResponse) for f in mech.factors)
    return isinstance(mech, RandomizedResponse)


def _observes(mech: Mechanism, var: Variable) -> bool:
    comps = set(var.components())
    observed = {c for v in mech.variables for c in v.components()}
    return comps <= observed


def _fit(ctx: Context, est: Estimand, mech: Mechanism, method: Method, src: ast.Ref) -> bool:
    """E503/E501: the mechanism observes the estimand, and the estimator fits the mechanism.

    Both are reported: an unobserved variable does not hide an estimator that could not
    work on this mechanism anyway (``joint(gender, race) from rr by castell``).
    """
    observed = True
    for v in est.variables[:1] if est.kind == "regression" else est.variables:
        if not _observes(mech, v):
            seen = ", ".join(v.name for v in mech.variables)
            ctx.error("E503", f"mechanism {src.name} observes {seen}, not {v.name}", src.span,
                      did_you_mean(v.name, [x.name for x in mech.variables]) or
                      "use the mechanism through which this variable was collected")
            observed = False
            break
    m = method.name
    span = method.span
    table, family = ESTIMANDS[est.kind], family_of(mech)
    wrong_kind = family not in table.families and (family in INTERVAL) == table.categorical
    if observed and wrong_kind and table.categorical:
        ctx.error("E501", f"{est.kind}() needs a finite mechanism (subset, grr, rr, product); "
                          f"{src.name} is an interval mechanism", src.span)
        return False
    if observed and wrong_kind:
        ctx.error("E501", f"{est.kind}() is estimated from interval data; {src.name} is a "
                          f"{mech.family} mechanism", src.span)
        return False
    if est.kind == "joint":
        if m in _PRODUCT_JOINT:
            factors = mech.factors if isinstance(mech, ProductMechanism) else (mech,)
            covering = [f for f in factors if any(set(f.variables[0].components()) & set(v.components())
                                                  for v in est.variables)]
            if not isinstance(mech, ProductMechanism) or len(covering) < 2:
                ctx.error("E501", f"'{m}' combines per-attribute reports of a product mechanism, "
                                  f"but {src.name} privatizes {', '.join(v.name for v in mech.variables)} as one variable",
                          span, "use 'joint' for RR on the combined domain (RR-Joint), or collect with "
                                "product(grr(a, epsilon = e), grr(b, epsilon = e), ...)")
                return False
            if any(not isinstance(f, RandomizedResponse) for f in covering):
                ctx.error("E501", f"'{m}' is defined for randomized-response factors (grr, rr)", span,
                          "for products of subset designs use mle or mom")
                return False
        if m == "joint" and isinstance(mech, ProductMechanism):
            ctx.error("E501", f"'joint' inverts the full-domain RR matrix, but {src.name} is a product "
                              "of per-attribute mechanisms", span,
                      "use castell, independent, hybrid or truncated for RR-Independent data")
            return False
        if m == "joint" and not isinstance(mech, RandomizedResponse):
            ctx.error("E501", "'joint' is the RR-Joint estimator and needs grr/rr on the combined domain", span)
            return False
    if est.kind == "independence":
        if not isinstance(mech, ProductMechanism):
            ctx.error("E501", f"independence tests need a product mechanism (Definition 8); {src.name} is not",
                      src.span, "collect with product(subset(a, uniform), subset(b, uniform))")
            return False
        for v in est.variables if observed else ():
            if not any(set(v.components()) <= set(f.variables[0].components()) for f in mech.factors):
                ctx.error("E503", f"no single factor of {src.name} observes {v.name}", src.span)
                return False
    if "project" in method.options and not _rr_based(mech):
        ctx.error("E501", "project applies to randomized-response estimates (grr, rr, products of them, frequency oracles)", span,
                  "the MLE (by mle) stays on the simplex for any finite mechanism")
        return False
    if m in ("newton", "one_step") and not isinstance(mech, SubsetMechanism):
        if not (isinstance(mech, ProductMechanism) and all(isinstance(f, SubsetMechanism) for f in mech.factors)):
            ctx.error("E501", f"'{m}' is a subset-privacy estimator (section III)", span,
                      "for randomized response use mom or mle")
            return False
    named = [x for x in method.args if not isinstance(x, tuple)]
    if m == "mle" and est.kind in ("mean", "cdf", "moment") and len(named) != 1:
        ctx.error("E205", "mle() from interval data fits a law: mle(normal) or mle(logistic)", span)
        return False
    if m == "mle" and est.kind not in ("mean", "cdf", "moment") and named:
        ctx.error("E205", "mle takes no argument here", span)
        return False
    if m == "unbiased":
        if not (isinstance(mech, IntervalMechanism) and mech.scheme == "case1" and mech.anchor.family == "uniform"):
            ctx.error("E501", "the unbiased mean estimator (Example 2) needs a Case-I mechanism with "
                              "uniform anchors", span, "use npmle, or collect with interval(X, case1(uniform(a, b)))")
            return False
    fits = estimators_for(est.kind, family)
    if observed and m not in fits:  # what the checks above leave: the estimand table decides
        ctx.error("E501", f"'{m}' does not apply to {est.kind}() from {FAMILY_WORDS[family]}", span,
                  f"from {src.name}: {' | '.join(fits)}" if fits else
                  f"{est.kind}() takes data from {', '.join(FAMILY_WORDS[f] for f in table.families)}")
        return False
    return observed


def _estimate(ctx: Context, name: str, verb: str, body: ast.Node, source: ast.Ref | None,
              method_node: ast.Node | None, calib: ast.Node | None, span: Span, kind: str | None = None) -> Query | None:
    est = _estimand(ctx, body, verb)
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
    method = _method(ctx, method_node, ESTIMATORS[est.kind], "test" if verb == "test" else f"estimator for {est.kind}()")
    calibrate = None
    if calib is not None:
        if verb != "test":
            ctx.error("E205", "calibrate applies to tests only", calib.span)
            return None
        calibrate = _method(ctx, calib, CALIBRATIONS, "calibration")
        if calibrate is None:
            return None
        if calibrate.name == "asymptotic" and method is not None and method.name == "lrt_mom":
            # Eq. 8 at the MoM estimates (not the maximizers) has no chi-square limit
            ctx.error("E505", "lrt_mom has no asymptotic p-value: the likelihood ratio at method-of-moments "
                              "estimates has no chi-square limit", calib.span,
                      "drop the calibrate clause (permutation, exact in size), or test by lrt")
            return None
    if mech is None or method is None or not _fit(ctx, est, mech, method, source):
        return None
    return Query(name, kind or verb, mechanism=mech, estimand=est, method=method, calibrate=calibrate, span=span)


def _mechanism_arg(ctx: Context, node: ast.Node) -> Mechanism | None:
    if isinstance(node, ast.Ref):
        return ctx.lookup(node, ["mechanism"])
    return build_mechanism(ctx, node, None)


def _plain(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    kind = call.name
    sig = signatures.signature(kind, "query")
    if kind == "avar":
        if not signatures.takes(sig, len(call.args)) or not isinstance(call.args[0], ast.Qualified):
            ctx.error("E205", "avar() takes an estimator: avar(distribution(X) from M by mom)", call.span)
            return None
        q = call.args[0]
        if q.calibrate is not None:
            ctx.error("E205", "avar() takes no calibrate clause", q.calibrate.span)
            return None
        est = _estimate(ctx, name, "estimate", q.value, q.source, q.method, None, span, kind="avar")
        return est
    if kind == "budget":
        if not signatures.takes(sig, len(call.args)):
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
    if kind in ("variance", "table"):
        return _release_query(ctx, name, call, span)
    if kind == "individual":
        return _individual(ctx, name, call, span)
    if kind in ("sample_size", "power"):
        from privspec.model.plans import planning_query

        return planning_query(ctx, name, call, span)
    if kind in ("bounds", "thresholds"):
        return _rr_bounds(ctx, name, call, span)
    if kind == "optimal_anchor":
        if not signatures.takes(sig, len(call.args)):
            ctx.error("E205", "optimal_anchor() takes an estimand and a mechanism: optimal_anchor(mean(X), M)", call.span)
            return None
        est = _estimand(ctx, call.args[0], "estimate")
        mech = _mechanism_arg(ctx, call.args[1])
        if est is None or mech is None:
            return None
        if est.kind != "mean":
            ctx.error("E501", "the optimal anchor density (Theorem 2) is derived for mean(X)", call.args[0].span)
            return None
        if not (isinstance(mech, IntervalMechanism) and mech.scheme == "case1"):
            ctx.error("E501", "the optimal anchor density (Theorem 2) is for Case-I mechanisms", call.args[1].span)
            return None
        if not _observes(mech, est.variables[0]):
            ctx.error("E503", f"this mechanism observes {mech.variable.name}, not {est.variables[0].name}",
                      call.args[1].span)
            return None
        return Query(name, kind, mechanism=mech, estimand=est, span=span)
    # moments, fisher, coverage, leakage, epsilon, identifiable: a mechanism first
    if not call.args:
        ctx.error("E205", f"{kind}() needs a mechanism: {kind}(M)", call.span)
        return None
    if call.keywords and not sig.keywords:
        ctx.error("E205", f"{kind}() takes no options", call.keywords[0].span)
        return None
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
        if not metrics:
            metrics = ["size"] if kind == "coverage" else (
                list(METRICS) if mech.family in ("subset",) else ["mutual_information", "prediction"]
                if mech.is_finite else ["size"])
        for mt in metrics:
            set_valued = mech.family in ("subset", "interval") or (
                isinstance(mech, ProductMechanism) and all(f.family == "subset" for f in mech.factors))
            if mt == "size" and not set_valued:
                ctx.error("E501", "size coverage needs set-valued reports (subset or interval mechanisms)",
                          call.span, "for randomized response use mutual_information or prediction")
                return None
            if mt != "size" and not mech.is_finite:
                ctx.error("E501", f"{mt} is computed for finite mechanisms", call.span)
                return None
    return Query(name, kind, mechanism=mech, metrics=tuple(metrics), span=span)


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
    if len(factors) < 2 or not all(isinstance(f, RandomizedResponse) and (kind == "bounds" or f.kind == "grr")
                                   for f in factors):
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
