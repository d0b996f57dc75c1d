"""Estimands and estimators -> model: what an ``estimate``, ``test`` or ``avar`` asks for
(:func:`build_estimand`), the estimator, test or calibration named after ``by`` or
``calibrate`` (:func:`build_method`), and whether that estimator fits the mechanism the data
came through (:func:`check_fit`).

Queries (:mod:`privspec.model.queries`) and design comparisons and planning queries
(:mod:`privspec.model.plans`) read them alike.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import sympy

from privspec.language import ast
from privspec.errors import did_you_mean
from privspec.model import signatures
from privspec.model.graph import (Estimand, FrequencyOracle, IntervalMechanism, Mechanism, Method, MultiAttributeOracle,
                                  ProductMechanism, RandomizedResponse, SubsetMechanism, Variable)
from privspec.model.query_kinds import FAMILIES as FAMILY_WORDS
from privspec.model.query_kinds import (ESTIMANDS, INTERVAL, LATENT_ESTIMANDS, LAW_FUNCTIONALS, PRODUCT_JOINT,
                                       estimators_for, family_of)
from privspec.model.scope import Context, compare, describe

#: estimand kind -> estimators that can make it (from the estimand table, :mod:`.query_kinds`)
ESTIMATORS: dict[str, tuple[str, ...]] = {k: e.estimators for k, e in ESTIMANDS.items()}
#: how a test's p-value is calibrated: permutation (the default when no clause is given,
#: exact in size) or the statistic's chi-square limit where it has one
CALIBRATIONS = signatures.names("calibration")
#: keyword options of estimators: option -> (estimators taking it, allowed names; None: a number in [0, 1])
METHOD_OPTIONS = signatures.METHOD_OPTIONS


def build_estimand(ctx: Context, node: ast.Node, verb: str) -> Estimand | None:
    if not isinstance(node, ast.Call) or node.name not in ESTIMANDS or ESTIMANDS[node.name].verb != verb:
        kinds = [k for k, e in ESTIMANDS.items() if e.verb == verb]
        name = node.name if isinstance(node, ast.Call) else None
        ctx.error("E206", f"unknown {'hypothesis' if verb == 'test' else 'estimand'} "
                          f"{repr(name) if name else describe(node)}", node.span,
                  (did_you_mean(name, kinds) if name else "") or f"{verb} {' | '.join(k + '(...)' for k in kinds)}")
        return None
    kind = node.name
    if kind == "regression":
        return _regression(ctx, node)
    if node.keywords:
        ctx.error("E205", f"{kind}() takes no options", node.keywords[0].span)
        return None
    args = node.args
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


def _regression(ctx: Context, node: ast.Call) -> Estimand | None:
    """``regression(Y ~ X1 + X2[, coefficients = {...}])``."""
    args, keywords = node.positional, node.keywords
    if len(args) != 1 or not isinstance(args[0], ast.Formula):
        ctx.error("E205", "regression() takes a formula: regression(response ~ x1 + x2)", node.span)
        return None
    options: dict[str, ast.Node] = {}
    for kw in keywords:
        key = kw.key.name if isinstance(kw.key, ast.Ref) else ""
        if key not in ("coefficients", "of") or key in options:
            ctx.error("E205", f"regression() takes the options coefficients = {{TERM: VALUE, ...}} and of = TERM, "
                              f"each once; found {key or describe(kw.key)}", kw.span)
            return None
        options[key] = kw.value
    vars_ = [ctx.variable(t, "a variable") for t in [args[0].lhs] + _terms(args[0].rhs)]
    if any(v is None for v in vars_):
        return None
    est = Estimand("regression", tuple(vars_), span=node.span)  # type: ignore[arg-type]
    if "coefficients" in options:
        values = _coefficients(ctx, options["coefficients"], est)
        if values is None:
            return None
        est = dataclasses.replace(est, coefficients=values)
    if "of" in options:
        focus = _focus(ctx, options["of"], est)
        if focus is None:
            return None
        est = dataclasses.replace(est, focus=focus)
    return est


def _focus(ctx: Context, node: ast.Node, est: Estimand) -> tuple[str, ...] | None:
    """``of = age`` or ``of = {age, "year=second"}``: coefficients of the fit, in its order."""
    labels = coefficient_labels(est.variables[0], regression_terms(est.variables[1:]))
    items = node.items if isinstance(node, ast.Braced) and node.is_set else (node,)
    chosen = set()
    for item in items:
        lab = ctx.label(item)
        if lab is None:
            return None
        if lab not in labels:
            ctx.error("E205", f"'{lab}' is not a coefficient of this regression", item.span,
                      did_you_mean(lab, labels) or f"coefficients: {', '.join(labels)} (quote var=label)")
            return None
        chosen.add(lab)
    return tuple(lab for lab in labels if lab in chosen)


REGRESSION_USAGE = ("coefficients = {intercept: -1, age: 0.5, year: {second: 0.2, third: 0.4}} (a binary response); "
                    "one such map per category after the first for more: {middle: {...}, high: {...}}")


def regression_terms(covariates: Sequence[Variable]) -> tuple[str, ...]:
    """The terms of a regression's design: the intercept, each continuous covariate, and a
    dummy ``var=label`` per category after the first of each categorical one."""
    terms = ["intercept"]
    for v in covariates:
        terms += [f"{v.name}={lab}" for lab in v.labels[1:]] if v.is_categorical else [v.name]
    return tuple(terms)


def coefficient_labels(response: Variable, terms: Sequence[str]) -> tuple[str, ...]:
    """``term`` for a binary response; ``category:term`` (each against the first category)
    for more."""
    if len(response.labels) == 2:
        return tuple(terms)
    return tuple(f"{c}:{t}" for c in response.labels[1:] for t in terms)


def _coefficients(ctx: Context, node: ast.Node, est: Estimand) -> tuple[tuple[str, sympy.Expr], ...] | None:
    """The declared coefficients: a map from term to value (a categorical covariate: a map
    from its categories after the first), one per response category after the first for a
    multinomial logit; every label of the fit in its order, 0 where left out."""
    response, covariates = est.variables[0], est.variables[1:]
    if not response.is_categorical:
        ctx.error("E401", f"coefficients are declared for a categorical response; {response.name} is continuous",
                  node.span)
        return None
    got: dict[str, sympy.Expr] = {}
    if len(response.labels) == 2:
        ok = _term_values(ctx, node, covariates, "", got)
    else:
        ok = _map(ctx, node, "the coefficients of each category after the first")
        for entry in node.entries if ok else ():   # type: ignore[union-attr]
            cat = ctx.domain_label(entry.key, response)
            if cat is None or cat == response.labels[0]:
                if cat is not None:
                    ctx.error("E205", f"{cat} is the base category: its coefficients are 0", entry.key.span)
                return None
            ok = ok and _term_values(ctx, entry.value, covariates, f"{cat}:", got)
    if not ok:
        return None
    return tuple((lab, got.get(lab, sympy.Integer(0)))
                 for lab in coefficient_labels(response, regression_terms(covariates)))


def _map(ctx: Context, node: ast.Node, what: str) -> bool:
    if isinstance(node, ast.Braced) and node.is_map:
        return True
    ctx.error("E205", f"{what}: a map {{key: value, ...}}, found {describe(node)}", node.span, REGRESSION_USAGE)
    return False


def _term_values(ctx: Context, node: ast.Node, covariates: Sequence[Variable], prefix: str,
                 got: dict[str, sympy.Expr]) -> bool:
    """One category's coefficients (``{intercept: -1, age: 0.5, year: {second: 0.2}}``) into ``got``."""
    if not _map(ctx, node, "the coefficients"):
        return False
    by_name = {v.name: v for v in covariates}
    for entry in node.entries:   # type: ignore[union-attr]
        name = ctx.label(entry.key)
        if name is None:
            return False
        v = by_name.get(name)
        if name != "intercept" and v is None:
            ctx.error("E205", f"'{name}' is not a term of this regression", entry.key.span,
                      did_you_mean(name, ["intercept", *by_name]) or f"terms: intercept, {', '.join(by_name)}")
            return False
        pairs = [(entry.key, name, entry.value)]
        if v is not None and v.is_categorical:
            if not _map(ctx, entry.value, f"{name} is categorical: a coefficient per category after {v.labels[0]}"):
                return False
            pairs = []
            for e in entry.value.entries:   # type: ignore[union-attr]
                lab = ctx.domain_label(e.key, v)
                if lab is None or lab == v.labels[0]:
                    if lab is not None:
                        ctx.error("E205", f"{lab} is {name}'s base category: its coefficient is 0", e.key.span)
                    return False
                pairs.append((e.key, f"{name}={lab}", e.value))
        for key, label, value in pairs:
            number = ctx.number(value, f"the coefficient of {label}")
            if number is None:
                return False
            if not number.is_number or number.is_finite is False:
                ctx.error("E309", f"a coefficient is a finite number, found {number}", value.span)
                return False
            if prefix + label in got:
                ctx.error("E202", f"the coefficient of {label} is given twice", key.span)
                return False
            got[prefix + label] = number
    return True


def _terms(node: ast.Node) -> list[ast.Node]:
    if isinstance(node, ast.BinOp) and node.op == "+":
        return _terms(node.left) + _terms(node.right)
    return [node]


def build_method(ctx: Context, node: ast.Node, allowed: tuple[str, ...], role: str) -> Method | None:
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
        if isinstance(a, ast.Ref) and name in signatures.NAMED_ARGS:
            slot = sum(1 for v in values if not isinstance(v, tuple))
            what, plural, names = signatures.NAMED_ARGS[name][min(slot, len(signatures.NAMED_ARGS[name]) - 1)]
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


def observes(mech: Mechanism, var: Variable) -> bool:
    """Whether the mechanism's reports carry every component of ``var``."""
    comps = set(var.components())
    observed = {c for v in mech.variables for c in v.components()}
    return comps <= observed


def check_fit(ctx: Context, est: Estimand, mech: Mechanism, method: Method, src: ast.Ref) -> bool:
    """E503/E501: the mechanism observes the estimand, and the estimator fits the mechanism.

    Both are reported: an unobserved variable does not hide an estimator that could not
    work on this mechanism anyway (``joint(gender, race) from rr by castell``).
    """
    observed = _observed(ctx, est, mech, src)
    m = method.name
    span = method.span
    table, family = ESTIMANDS[est.kind], family_of(mech)
    # a regression's response may be either (interval or categorical): the estimand table says where
    wrong_kind = family not in table.families and (family in INTERVAL) == table.categorical \
        and est.kind != "regression"
    if observed and wrong_kind and table.categorical:
        ctx.error("E501", f"{est.kind}() needs a finite mechanism (subset, grr, rr, product); "
                          f"{src.name} is an interval mechanism", src.span)
        return False
    if observed and wrong_kind:
        ctx.error("E501", f"{est.kind}() is estimated from interval data; {src.name} is a "
                          f"{mech.family} mechanism", src.span)
        return False
    if observed and est.kind in LATENT_ESTIMANDS and getattr(mech, "kind", None) != LATENT_ESTIMANDS[est.kind]:
        design = LATENT_ESTIMANDS[est.kind]
        ctx.error("E501", f"{est.kind}() is a share that {design}() estimates; {src.name} is "
                          f"{getattr(mech, 'kind', None) or family}()", src.span,
                  f"collect with {design}(Y, p1 = a, p2 = b, group = G)")
        return False
    if est.kind == "joint" and not _joint_fits(ctx, est, mech, method, src):
        return False
    if est.kind == "independence" and not _independence_fits(ctx, est, mech, src, observed):
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
    if m == "mle" and est.kind in LAW_FUNCTIONALS and len(named) != 1:
        ctx.error("E205", "mle() from interval data fits a law: mle(normal) or mle(logistic)", span)
        return False
    if m == "mle" and est.kind == "regression" and named not in ([], ["logistic"]):
        ctx.error("E205", "a regression on a categorical response is logistic: mle(logistic)", span)
        return False
    if m == "mle" and est.kind == "regression" and method.options.get("se", "population") != "population":
        ctx.error("E205", "a regression's standard errors are of the coefficients (se = population)", span,
                  "drop the se option")
        return False
    if m == "mle" and est.kind not in LAW_FUNCTIONALS | {"regression"} and named:
        ctx.error("E205", "mle takes no argument here", span)
        return False
    if m == "unbiased" and family in INTERVAL:
        if not (isinstance(mech, IntervalMechanism) and mech.scheme == "case1" and mech.anchor.family == "uniform"):
            ctx.error("E501", "the unbiased mean estimator (Example 2) needs a Case-I mechanism with "
                              "uniform anchors", span, "use npmle, or collect with interval(X, case1(uniform(a, b)))")
            return False
    if m == "ems" and getattr(mech, "protocol", None) != "square_wave":
        ctx.error("E501", "ems estimates the distribution behind square-wave reports (Li et al. 2020)", span,
                  "collect with square_wave(X, epsilon = e)")
        return False
    fits = estimators_for(est.kind, family)
    if observed and m not in fits:  # what the checks above leave: the estimand table decides
        ctx.error("E501", f"'{m}' does not apply to {est.kind}() from {FAMILY_WORDS[family]}", span,
                  f"from {src.name}: {' | '.join(fits)}" if fits else
                  f"{est.kind}() takes data from {', '.join(FAMILY_WORDS[f] for f in table.families)}")
        return False
    return observed


def _observed(ctx: Context, est: Estimand, mech: Mechanism, src: ast.Ref) -> bool:
    """E503 for the first of the estimand's variables that the mechanism does not observe
    (a regression's response, or one categorical covariate with a categorical response: a
    randomized response as a predictor)."""
    if est.kind == "regression" and isinstance(mech, (RandomizedResponse, SubsetMechanism)) and \
            est.variables[0].is_categorical and any(v.is_categorical and observes(mech, v) and
                                                    v.name == mech.variables[0].name for v in est.variables[1:]):
        return True
    for v in est.variables[:1] if est.kind == "regression" else est.variables:
        if not observes(mech, v):
            seen = ", ".join(v.name for v in mech.variables)
            ctx.error("E503", f"mechanism {src.name} observes {seen}, not {v.name}", src.span,
                      did_you_mean(v.name, [x.name for x in mech.variables]) or
                      "use the mechanism through which this variable was collected")
            return False
    return True


def _joint_fits(ctx: Context, est: Estimand, mech: Mechanism, method: Method, src: ast.Ref) -> bool:
    """E501 for a joint estimator on the wrong kind of mechanism: the castell estimators
    need a product of randomized responses, RR-Joint one randomized response."""
    m, span = method.name, method.span
    if m in PRODUCT_JOINT:
        factors = mech.factors if isinstance(mech, ProductMechanism) else (mech,)
        covering = [f for f in factors if any(set(f.variables[0].components()) & set(v.components())
                                              for v in est.variables)]
        if not isinstance(mech, ProductMechanism) or len(covering) < 2:
            ctx.error("E501", f"'{m}' combines per-attribute reports of a product mechanism, "
                              f"but {src.name} privatizes {', '.join(v.name for v in mech.variables)} as one variable",
                      span, "use 'joint' for RR on the combined domain (RR-Joint), or collect with "
                            "product(grr(a, epsilon = e), grr(b, epsilon = e), ...)")
            return False
        if any(not (isinstance(f, RandomizedResponse) and f.square) for f in covering):
            ctx.error("E501", f"'{m}' is defined for randomized-response factors (grr, rr)", span,
                      "for products of subset designs use mle or mom")
            return False
    if m == "joint" and isinstance(mech, ProductMechanism):
        ctx.error("E501", f"'joint' inverts the full-domain RR matrix, but {src.name} is a product "
                          "of per-attribute mechanisms", span,
                  "use castell, independent, hybrid or truncated for RR-Independent data")
        return False
    if m == "joint" and not (isinstance(mech, RandomizedResponse) and mech.square):
        ctx.error("E501", "'joint' is the RR-Joint estimator and needs grr/rr on the combined domain", span)
        return False
    return True


def _independence_fits(ctx: Context, est: Estimand, mech: Mechanism, src: ast.Ref, observed: bool) -> bool:
    """E501/E503: an independence test needs a product mechanism, each variable observed by
    one factor."""
    if not isinstance(mech, ProductMechanism):
        ctx.error("E501", f"independence tests need a product mechanism (Definition 8); {src.name} is not",
                  src.span, "collect with product(subset(a, uniform), subset(b, uniform))")
        return False
    for v in est.variables if observed else ():
        if not any(set(v.components()) <= set(f.variables[0].components()) for f in mech.factors):
            ctx.error("E503", f"no single factor of {src.name} observes {v.name}", src.span)
            return False
    return True
