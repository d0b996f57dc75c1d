"""Design comparisons and planning queries -> model: ``compare`` blocks (candidates with
their estimators, settings, targets, the test to power), ``sample_size(...)`` /
``power(...)`` queries and ``allocate(...)`` (a survey's epsilon shared among its
questions), checked like every other declaration.

The back end (:mod:`privspec.backends.design.comparison`) evaluates them; the criteria and
the default estimators are in :mod:`privspec.model.query_kinds`, so the front end and the back
end read one table.
"""
from __future__ import annotations

import math

import sympy

from privspec.language import ast
from privspec.language.arith import fmt
from privspec.model import signatures
from privspec.model.estimands import (ESTIMATORS, build_estimand, build_method, check_fit, coefficient_labels, observes,
                                     regression_terms)
from privspec.model.arguments import FLOAT_LIMIT, check_probability, sums_to_one
from privspec.model.mechanisms import build_law, build_mechanism
from privspec.model.graph import (Compare, Estimand, FrequencyOracle, Law, Mechanism, Method, MultiAttributeOracle,
                                  Parameter, PlausiblePopulations, Plan, PowerTest, ProductMechanism, Query,
                                  RandomizedResponse, Target, Variable)
from privspec.model.query_kinds import (ALLOCATION_CRITERIA, CRITERIA, FAMILIES, LATENT_ESTIMANDS, LAW_FUNCTIONALS,
                                       POWER_TESTS, default_estimator, family_of)
from privspec.model.scope import Context, compare, describe
from privspec.errors import did_you_mean
from privspec.language.source import Span

#: the settings of a compare block (``at n = 1000, alpha = 0.05, test = proportion(Black, 0.08)``;
#: ``tolerance = 5``: a guess of a continuous variable within 5 of the truth counts as right)
SETTINGS = ("n", "alpha", "test", "populations", "tolerance")
#: the privacy criterion of a comparison that names none: on one scale for every family
DEFAULT_PRIVACY = "prediction"
#: targets a planning query takes as options (``sample_size(..., max_se = 0.01)``)
PLANNING_TARGETS = ("max_se", "ci_width", "max_cv", "power")
#: estimands whose sample size and power can be planned
PLANNED_ESTIMANDS = ("distribution", "joint", "mean", "moment", "regression", "cheaters", "honesty")


def build_compare(ctx: Context, decl: ast.CompareDecl) -> Compare | None:
    """A ``compare`` block: every candidate observes the estimand and has an estimator for it
    (its ``by``, else its family's default), the settings and targets are valid."""
    est = build_estimand(ctx, decl.estimand, "estimate")
    settings = _settings(ctx, decl, est)
    ok = est is not None and settings is not None
    settings = settings or {}
    n, alpha, test = settings.get("n"), settings.get("alpha", sympy.Rational(1, 20)), settings.get("test")
    populations, tolerance = settings.get("populations"), settings.get("tolerance")
    targets = []
    for ref, op, value in decl.targets:
        t = _target(ctx, ref, op, value)
        ok = ok and t is not None
        targets.append(t)
    if any(t is not None and t.criterion == "power" for t in targets) and test is None:
        ctx.error("E504", "a power target needs the test to power", decl.span,
                  "add it to the settings: at n = 1000, test = proportion(LABEL, p0)")
        ok = False
    candidates, estimators = [], []
    seen: set[str] = set()
    for key, value, by in decl.candidates:
        if key.name in seen:
            ctx.error("E202", f"candidate '{key.name}' is declared twice in this comparison", key.span)
            ok = False
            continue
        seen.add(key.name)
        mech = build_mechanism(ctx, value, key.name)
        if mech is None:
            ok = False
            continue
        # a regression's covariates are read raw beside the reports: its response is observed
        observed = est.variables[:1] if est is not None and est.kind == "regression" else \
            est.variables if est is not None else ()
        if not all(observes(mech, v) for v in observed):
            ctx.error("E503", f"candidate {key.name} does not observe {', '.join(v.name for v in observed)}",
                      value.span)
            ok = False
            continue
        method = candidate_estimator(ctx, est, mech, by, key) if est is not None else None
        if method is None:
            ok = False
            continue
        candidates.append((key.name, mech))
        estimators.append((key.name, method))
    if not decl.candidates:
        ctx.error("E205", "a comparison needs candidate mechanisms in { }", decl.span)
        ok = False
    criteria = []
    for c in decl.criteria:
        if not isinstance(c, ast.Ref) or c.name not in CRITERIA:
            shown = c.name if isinstance(c, ast.Ref) else describe(c)
            ctx.error("E502", f"unknown comparison criterion '{shown}'", c.span,
                      (did_you_mean(shown, CRITERIA) if isinstance(c, ast.Ref) else "")
                      or f"criteria: {', '.join(CRITERIA)}")
            ok = False
            continue
        criteria.append(c.name)
    if "power" in criteria and test is None:
        ctx.error("E504", "the power criterion needs the test to power", decl.span,
                  "add it to the settings: at n = 1000, test = proportion(LABEL, p0)")
        ok = False
    if not ok:
        return None
    plan = Plan(n=n, alpha=alpha, test=test, targets=tuple(targets), populations=populations,  # type: ignore[arg-type]
                tolerance=tolerance)
    criteria = criteria or ["avar_trace"]
    if not any(CRITERIA[c].side == "privacy" for c in criteria):
        criteria.append(DEFAULT_PRIVACY)
    return Compare(decl.name.name, est, (("n", n),) if n is not None else (), tuple(candidates),  # type: ignore[arg-type]
                   tuple(criteria), decl.span, tuple(estimators), plan)


def _settings(ctx: Context, decl: ast.CompareDecl, est: Estimand | None) -> dict[str, object] | None:
    """The block's settings by name, each checked (None: one is wrong, and said)."""
    readers = {
        "n": lambda v: _sample_size_n(ctx, v),
        "alpha": lambda v: _level(ctx, v),
        "test": lambda v: power_test(ctx, v, est) if est is not None else None,
        "populations": lambda v: plausible_populations(ctx, v, est) if est is not None else None,
        "tolerance": lambda v: _tolerance(ctx, v),
    }
    got: dict[str, object] = {}
    ok = True
    for key, value in decl.settings:
        if key.name not in SETTINGS:
            ctx.error("E205", f"unknown setting '{key.name}'", key.span,
                      did_you_mean(key.name, SETTINGS) or f"settings: {', '.join(SETTINGS)}")
            ok = False
            continue
        got[key.name] = readers[key.name](value)
        ok = ok and got[key.name] is not None
    return got if ok else None


def candidate_estimator(ctx: Context, est: Estimand, mech: Mechanism, by: ast.Node | None,
                        src: ast.Ref) -> Method | None:
    """The estimator a candidate (or a planning query's mechanism) is judged with: ``by``
    checked as in ``estimate``, else the family's efficient default."""
    if by is not None:
        method = build_method(ctx, by, ESTIMATORS[est.kind], f"estimator for {est.kind}()")
    else:
        family = family_of(mech)
        name = default_estimator(est.kind, family)
        if name is None:
            ctx.error("E501", f"no estimator of {est.kind}() applies to {FAMILIES[family]} ({src.name})", src.span,
                      f"candidates for {est.kind}() are mechanisms that observe "
                      f"{', '.join(v.name for v in est.variables)}")
            return None
        method = Method(name, ("normal",) if name == "mle" and est.kind in LAW_FUNCTIONALS else (),
                        src.span)
    if method is None or not check_fit(ctx, est, mech, method, src):
        return None
    return method


def power_test(ctx: Context, node: ast.Node, est: Estimand) -> PowerTest | None:
    """``proportion(LABEL, p0)``, ``difference(LABEL, delta)``, ``independence(X, Y)`` or
    ``coefficient(TERM, b0)``."""
    usage = "proportion(LABEL, p0), difference(LABEL, delta), independence(X, Y) or coefficient(TERM, b0)"
    if not isinstance(node, ast.Call) or node.name not in POWER_TESTS:
        shown = node.name if isinstance(node, ast.Call) else describe(node)
        ctx.error("E502", f"unknown test {shown!r} to power", node.span,
                  (did_you_mean(shown, POWER_TESTS) if isinstance(node, ast.Call) else "") or usage)
        return None
    if node.keywords or len(node.args) != 2:
        ctx.error("E205", f"{node.name}() takes two arguments: {usage}", node.span)
        return None
    if node.name == "independence":
        names = []
        for a in node.args:
            v = ctx.variable(a, "a variable")
            if v is None:
                return None
            names.append(v.name)
        if names[0] == names[1]:
            ctx.error("E205", f"{names[0]} appears twice in independence()", node.span)
            return None
        return PowerTest("independence", variables=tuple(names), span=node.span)
    if node.name == "coefficient":
        return _coefficient_test(ctx, node, est)
    if est.kind in LATENT_ESTIMANDS and node.name == "proportion":
        return _latent_test(ctx, node, est)
    if est.kind != "distribution":
        ctx.error("E501", f"{node.name}() tests a category's proportion: it needs distribution(X), "
                          f"not {est.kind}()", node.span)
        return None
    label = ctx.domain_label(node.args[0], est.variables[0])
    value = ctx.number(node.args[1], "the null proportion" if node.name == "proportion" else "the difference")
    if label is None or value is None:
        return None
    lo = -1 if node.name == "difference" else 0
    if not value.is_number or (compare(value, sympy.Integer(lo)) or 0) < 0 or (compare(value, sympy.Integer(1)) or 0) > 0:
        ctx.error("E309", f"the {'difference' if lo else 'null proportion'} must be a number in [{lo}, 1], "
                          f"found {fmt(value)}", node.args[1].span)
        return None
    if node.name == "difference" and value == 0:
        ctx.error("E309", "a difference of 0 has no power to find: give the difference to detect", node.args[1].span)
        return None
    return PowerTest(node.name, label=label, value=value, variables=(est.variables[0].name,), span=node.span)


def _latent_test(ctx: Context, node: ast.Call, est: Estimand) -> PowerTest | None:
    """``proportion(cheaters, g0)`` (or ``honesty``): the Wald test of the latent share."""
    label, value = ctx.label(node.args[0]), ctx.number(node.args[1], "the null share")
    if label is None or value is None:
        return None
    if label != est.kind:
        ctx.error("E205", f"{est.kind}({est.variables[0].name}) is one share: test proportion({est.kind}, p0)",
                  node.args[0].span)
        return None
    lo, hi = compare(value, sympy.Integer(0)), compare(value, sympy.Integer(1))
    if not value.is_number or (lo or 0) < 0 or (hi or 0) > 0:
        ctx.error("E309", f"the null share must be a number in [0, 1], found {fmt(value)}", node.args[1].span)
        return None
    return PowerTest("proportion", label=label, value=value, variables=(est.variables[0].name,), span=node.span)


def _coefficient_test(ctx: Context, node: ast.Call, est: Estimand) -> PowerTest | None:
    """``coefficient(TERM, b0)``: the Wald test of a regression's coefficient."""
    if est.kind != "regression":
        ctx.error("E501", f"coefficient() tests a regression's coefficient: it needs regression(Y ~ X), "
                          f"not {est.kind}()", node.span)
        return None
    term, value = ctx.label(node.args[0]), ctx.number(node.args[1], "the coefficient under the null")
    if term is None or value is None:
        return None
    labels = est.focus or coefficient_labels(est.variables[0], regression_terms(est.variables[1:]))
    if term not in labels:
        ctx.error("E205", f"'{term}' is not a coefficient of this regression", node.args[0].span,
                  did_you_mean(term, labels) or f"coefficients: {', '.join(labels)} (quote var=label)")
        return None
    if not value.is_number or value.is_finite is False:
        ctx.error("E309", f"the coefficient under the null is a finite number, found {fmt(value)}", node.args[1].span)
        return None
    return PowerTest("coefficient", label=term, value=value, variables=(est.variables[0].name,), span=node.span)


def _level(ctx: Context, node: ast.Node, what: str = "alpha") -> sympy.Expr | None:
    """A number strictly between 0 and 1: the level ``alpha`` of a test or interval, or the
    ``power`` a sample size is planned for (a power of 1 is reached at no finite n)."""
    words = {"alpha": "the level alpha", "power": "the power wanted"}[what]
    value = ctx.number(node, words)
    if value is None:
        return None
    if not value.is_number or not 0 < float(value) < 1:
        hint = ("a test reaches power 1 only as n grows without end, and power 0 at no n: ask for a power "
                "such as 0.8 or 0.9" if what == "power" else "the level of a test: 0.05, 0.01")
        ctx.error("E309", f"{what} must be in (0, 1), found {fmt(value)}", node.span, hint)
        return None
    return value


def _tolerance(ctx: Context, node: ast.Node) -> sympy.Expr | None:
    """``tolerance = T``: how close a guess of a continuous variable must come to count as
    right (prediction of an interval design); a positive number."""
    value = ctx.number(node, "the tolerance")
    if value is None:
        return None
    if not value.is_number or not float(value) > 0:
        ctx.error("E309", f"the tolerance must be a positive number, found {fmt(value)}", node.span,
                  "a guess within the tolerance of the true value counts as right: tolerance = 5")
        return None
    return value


def _sample_size_n(ctx: Context, node: ast.Node) -> sympy.Integer | None:
    """The number of respondents of ``at n = N`` or ``power(..., n = N)``: a whole number
    from 1 to :data:`privspec.model.arguments.FLOAT_LIMIT` (it is computed with in floating point)."""
    got = ctx.integer(node, "the sample size n", 1)
    if got is None:
        return None
    if got > FLOAT_LIMIT:
        ctx.error("E309", f"the sample size n must be at most 1e300, found {fmt(sympy.Integer(got))}", node.span,
                  "standard errors and power are computed in floating point (64-bit); at 1e300 respondents "
                  "every standard error is 0 and every power 1 already")
        return None
    return sympy.Integer(got)


def _target(ctx: Context, ref: ast.Ref, op: str, node: ast.Node) -> Target | None:
    if ref.name not in CRITERIA:
        ctx.error("E502", f"unknown criterion '{ref.name}' in a target", ref.span,
                  did_you_mean(ref.name, CRITERIA) or f"criteria: {', '.join(CRITERIA)}")
        return None
    value = ctx.number(node, f"the target for {ref.name}")
    if value is None:
        return None
    if not value.is_number:
        ctx.error("E205", f"a target is a number, found {fmt(value)}", node.span)
        return None
    better = CRITERIA[ref.name].better
    if (better == "lower") != op.startswith("<"):
        word = "at most (<=)" if better == "lower" else "at least (>=)"
        ctx.error("E205", f"{ref.name} is better {better}: its target says {word} a value", ref.span,
                  f"{ref.name} {'<=' if better == 'lower' else '>='} {fmt(value)}")
        return None
    return Target(ref.name, op, value, ref.span)


# ---- plausible populations --------------------------------------------------------------------------
#: the most draws a Dirichlet set of plausible populations takes (each is a full evaluation)
MAX_DRAWS = 10_000
POPULATIONS_USAGE = ("populations = dirichlet(CONCENTRATION [, draws = 200, seed = 0]) or populations = "
                     "[categorical(...), ...] (normal(m, s), ... for a continuous variable)")


def plausible_populations(ctx: Context, node: ast.Node, est: Estimand) -> PlausiblePopulations | None:
    """``populations = dirichlet(C, draws = D, seed = S)`` (D seeded draws around the declared
    population) or ``populations = [LAW, ...]`` over the estimand's variables."""
    if est.kind == "regression":
        ctx.error("E501", "plausible populations are drawn for a distribution or a mean, not a regression",
                  node.span, "compare at other coefficients in another block, or declare other covariate populations")
        return None
    names = tuple(c for v in est.variables for c in v.components())
    categorical = all(v.is_categorical for v in est.variables)
    if isinstance(node, ast.ListLit):
        if not node.items:
            ctx.error("E205", "the list of plausible populations is empty", node.span, POPULATIONS_USAGE)
            return None
        laws = [_plausible_law(ctx, item, est, categorical) for item in node.items]
        if any(law is None for law in laws):
            return None
        return PlausiblePopulations(names, tuple(laws), tuple(item.span for item in node.items))  # type: ignore[arg-type]
    if not isinstance(node, ast.Call) or node.name != "dirichlet":
        shown = node.name if isinstance(node, ast.Call) else describe(node)
        ctx.error("E206", f"unknown plausible populations {shown!r}", node.span, POPULATIONS_USAGE)
        return None
    if not categorical:
        ctx.error("E401", f"dirichlet() draws shares of categories; {est.variables[0].name} is continuous",
                  node.span, "list its plausible laws: populations = [normal(0, 1), normal(1, 2)]")
        return None
    options = {kw.key.name if isinstance(kw.key, ast.Ref) else "": kw.value for kw in node.keywords}
    unknown = [k for k in options if k not in ("draws", "seed")]
    if len(node.positional) != 1 or unknown:
        ctx.error("E205", "dirichlet() takes its concentration and the options draws and seed", node.span,
                  POPULATIONS_USAGE)
        return None
    concentration = ctx.number(node.positional[0], "the concentration")
    if concentration is None:
        return None
    if not concentration.is_number or not 0 < float(concentration) < math.inf:
        ctx.error("E309", f"the concentration must be a positive number, found {fmt(concentration)}",
                  node.positional[0].span, "the larger, the closer the draws to the declared population: "
                                           "dirichlet(200)")
        return None
    draws = ctx.integer(options["draws"], "the number of draws", 1) if "draws" in options else 200
    seed = ctx.integer(options["seed"], "the seed", 0) if "seed" in options else 0
    if draws is None or seed is None:
        return None
    if draws > MAX_DRAWS:
        ctx.error("E309", f"at most {MAX_DRAWS:,} draws, found {draws:,}", options["draws"].span,
                  "each draw evaluates every criterion of every candidate")
        return None
    return PlausiblePopulations(names, concentration=concentration, draws=draws, seed=seed)


def _plausible_law(ctx: Context, node: ast.Node, est: Estimand, categorical: bool) -> Law | None:
    """One population of a list: ``categorical(shares...)`` over the estimand's categories
    (row-major over its variables), or a continuous law for a continuous variable."""
    if not categorical:
        law = build_law(ctx, node, "plausible population")
        var = est.variables[0]
        if law is not None:
            lo, hi = law.support()
            if (compare(lo, var.lower) or 0) < 0 or (compare(hi, var.upper) or 0) > 0:
                ctx.error("E309", f"this population puts mass outside the support of {var.name}", node.span)
                return None
        return law
    shape = tuple(len(v.labels) for v in est.variables)
    cells = math.prod(shape)
    if not isinstance(node, ast.Call) or node.name != "categorical" or node.keywords:
        ctx.error("E206", f"a plausible population of {', '.join(v.name for v in est.variables)} is "
                          "categorical(SHARES...) in declared order", node.span, POPULATIONS_USAGE)
        return None
    if len(node.positional) != cells:
        ctx.error("E310", f"categorical() has {len(node.positional)} shares but "
                          f"{' x '.join(v.name for v in est.variables)} has {cells} categories", node.span)
        return None
    shares = [ctx.number(x, "a share") for x in node.positional]
    if any(x is None or not check_probability(ctx, x, a.span, "share") for x, a in zip(shares, node.positional)):
        return None
    good, total = sums_to_one(shares)  # type: ignore[arg-type]
    if good is False:
        ctx.error("E302", f"the shares do not sum to 1 (sum = {fmt(total)})", node.span)
        return None
    return Law("categorical", probs=tuple(shares), shape=shape)  # type: ignore[arg-type]


# ---- planning queries --------------------------------------------------------------------------------
def planning_query(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    """``sample_size(ESTIMAND from M [by E], max_se = x | ci_width = x | power = p, test = T)``
    and ``power(ESTIMAND from M [by E], n = N, test = T)``."""
    kind = call.name
    sig = signatures.signature(kind, "query")
    usage = QUERY_USAGE[kind]
    if len(call.positional) != 1 or not isinstance(call.positional[0], ast.Qualified):
        ctx.error("E205", f"{kind}() takes an estimand with its mechanism: {usage}", call.span)
        return None
    q = call.positional[0]
    if q.calibrate is not None:
        ctx.error("E205", f"{kind}() takes no calibrate clause", q.calibrate.span)
        return None
    if q.source is None:
        ctx.error("E504", "say which mechanism the data come through: ... from MECHANISM", q.span, usage)
        return None
    est = _planned_estimand(ctx, q.value)
    mech = ctx.lookup(q.source, ["mechanism"])
    if est is None or mech is None:
        return None
    method = candidate_estimator(ctx, est, mech, q.method, q.source)
    if method is None:
        return None
    options: dict[str, tuple[ast.KwArg, object]] = {}
    for kw in call.keywords:
        key = kw.key.name if isinstance(kw.key, ast.Ref) else getattr(kw.key, "text", "")
        if key not in sig.keywords:
            ctx.error("E205", f"unknown option '{key}' for {kind}()", kw.span, did_you_mean(key, sig.keywords) or usage)
            return None
        if key in options:
            ctx.error("E205", f"'{key}' is given twice", kw.span)
            return None
        if key == "test":
            value = power_test(ctx, kw.value, est)
        elif key == "alpha" or key == "power":
            value = _level(ctx, kw.value, key)
        elif key == "n":
            value = _sample_size_n(ctx, kw.value)
        else:
            value = ctx.number(kw.value, f"the target for {key}")
            if value is not None and (not value.is_number or float(value) <= 0):
                ctx.error("E309", f"{key} must be a positive number, found {fmt(value)}", kw.value.span)
                value = None
        if value is None:
            return None
        options[key] = (kw, value)
    test = options.get("test", (None, None))[1]
    alpha = options.get("alpha", (None, sympy.Rational(1, 20)))[1]
    if kind == "power":
        if "n" not in options or test is None:
            ctx.error("E504", f"power() needs n and the test: {usage}", call.span)
            return None
        plan = Plan(n=options["n"][1], alpha=alpha, test=test)  # type: ignore[arg-type]
    else:
        given = [k for k in PLANNING_TARGETS if k in options]
        if len(given) != 1:
            ctx.error("E504" if not given else "E205", f"sample_size() takes one target "
                      f"({', '.join(PLANNING_TARGETS)}), found {len(given)}", call.span, usage)
            return None
        if given[0] == "power" and test is None:
            ctx.error("E504", "a power target needs the test: test = proportion(LABEL, p0)", call.span, usage)
            return None
        op = ">=" if given[0] == "power" else "<="
        target = Target(given[0], op, options[given[0]][1], options[given[0]][0].span)  # type: ignore[arg-type]
        plan = Plan(alpha=alpha, test=test, targets=(target,))  # type: ignore[arg-type]
    if test is not None and test.kind == "independence":
        if not isinstance(mech, ProductMechanism):
            ctx.error("E501", f"independence tests need a product mechanism; {q.source.name} is not",
                      q.source.span, "collect with product(subset(a, uniform), subset(b, uniform))")
            return None
    return Query(name, kind, mechanism=mech, estimand=est, method=method, plan=plan, span=span)


def _planned_estimand(ctx: Context, node: ast.Node) -> Estimand | None:
    est = build_estimand(ctx, node, "estimate")
    if est is not None and est.kind not in PLANNED_ESTIMANDS:
        ctx.error("E501", f"sample sizes and power are planned for {', '.join(PLANNED_ESTIMANDS)}, "
                          f"not {est.kind}()", node.span)
        return None
    return est


QUERY_USAGE = {
    "sample_size": "sample_size(distribution(X) from M, max_se = 0.01) or sample_size(distribution(X) from M, "
                   "power = 0.8, test = proportion(LABEL, p0))",
    "power": "power(distribution(X) from M, n = 1000, test = proportion(LABEL, p0))",
}


# ---- a survey's budget: allocate(...) ------------------------------------------------------------------
ALLOCATE_USAGE = ("allocate(total = 4, n = 2000, criterion = max_se, weights = {q_race: 2, q_gender: 1}) or "
                  "allocate(q_race, q_gender, total = 4)")


def epsilon_terms(mech: Mechanism) -> tuple[tuple[tuple[str, ...], sympy.Expr | None], ...]:
    """What a mechanism spends, one term per randomizer (a product's factors each count on
    their own variables): the plain variables it observes and its epsilon (None: it has
    none, a subset, interval or matrix design).

    Examples
    --------
    >>> import privspec
    >>> m = privspec.load("variable a: categorical {x, y}\\nvariable b: categorical {u, v}\\n"
    ...                   "variable c: categorical {s, t}\\n"
    ...                   "mechanism m = product(grr(a, epsilon = 1), grr(b * c, epsilon = 2))").model
    >>> epsilon_terms(m.mechanisms["m"])
    ((('a',), 1), (('b', 'c'), 2))
    """
    if isinstance(mech, ProductMechanism):
        return tuple(t for f in mech.factors for t in epsilon_terms(f))
    variables = tuple(p for v in mech.variables for p in v.components())
    if isinstance(mech, RandomizedResponse) and mech.kind == "grr" or \
            isinstance(mech, (FrequencyOracle, MultiAttributeOracle)):
        return ((variables, mech.epsilon),)
    return ((variables, None),)


def question_estimand(mech: Mechanism, variables: dict[str, Variable]) -> Estimand:
    """What a question of ``allocate`` estimates: the distribution of its one variable, or the
    joint distribution of the plain variables it observes (a combined variable, a product)."""
    names = tuple(dict.fromkeys(p for v in mech.variables for p in v.components()))
    if len(names) == 1 and not isinstance(mech, ProductMechanism):
        return Estimand("distribution", (variables[names[0]],), span=mech.span)
    return Estimand("joint", tuple(variables[n] for n in names), span=mech.span)


def allocate_query(ctx: Context, name: str, call: ast.Call, span: Span) -> Query | None:
    """``allocate([Q1, Q2, ...,] total = T[, n = N][, criterion = C][, weights = {Q1: w1, ...}])``:
    the epsilon of each question (a declared mechanism with a free epsilon parameter) that
    minimizes the weighted utility loss, the whole survey spending ``total``."""
    options: dict[str, ast.KwArg] = {}
    for kw in call.keywords:
        key = kw.key.name if isinstance(kw.key, ast.Ref) else getattr(kw.key, "text", "")
        if key not in ("total", "n", "criterion", "weights"):
            ctx.error("E205", f"unknown option '{key}' for allocate()", kw.span,
                      did_you_mean(key, ("total", "n", "criterion", "weights")) or ALLOCATE_USAGE)
            return None
        if key in options:
            ctx.error("E205", f"'{key}' is given twice", kw.span)
            return None
        options[key] = kw
    if "total" not in options:
        ctx.error("E504", "allocate() needs the survey's total epsilon: total = 4", call.span, ALLOCATE_USAGE)
        return None
    total = _positive(ctx, options["total"].value, "the total epsilon")
    n = _sample_size_n(ctx, options["n"].value) if "n" in options else sympy.Integer(1000)
    criterion = _allocation_criterion(ctx, options.get("criterion"))
    weights = _weights(ctx, options["weights"].value) if "weights" in options else {}
    if total is None or n is None or criterion is None or weights is None:
        return None
    questions = _questions(ctx, call, weights)
    if questions is None or not _check_budget(ctx, questions, total, options["total"].value.span):
        return None
    pairs = tuple((q, weights[q][1] if q in weights else sympy.Integer(1)) for q in questions)
    method = Method(criterion, (("total", total), ("weights", pairs)), call.span)
    return Query(name, "allocate", method=method, scope=tuple(questions), plan=Plan(n=n), span=span)


def _positive(ctx: Context, node: ast.Node, what: str) -> sympy.Expr | None:
    """A positive, finite number (no free parameter)."""
    value = ctx.number(node, what)
    if value is None:
        return None
    if not value.is_number or value.is_finite is False or (compare(value, sympy.Integer(0)) or 0) <= 0:
        ctx.error("E309", f"{what} must be a positive, finite number, found {fmt(value)}", node.span)
        return None
    return value


def _allocation_criterion(ctx: Context, kw: ast.KwArg | None) -> str | None:
    if kw is None:
        return "max_se"
    node = kw.value
    if isinstance(node, ast.Ref) and node.name in ALLOCATION_CRITERIA:
        return node.name
    shown = node.name if isinstance(node, ast.Ref) else describe(node)
    ctx.error("E502", f"allocate() minimizes a utility criterion; '{shown}' is not one it takes", node.span,
              (did_you_mean(shown, ALLOCATION_CRITERIA) if isinstance(node, ast.Ref) else "")
              or f"criteria: {', '.join(ALLOCATION_CRITERIA)}")
    return None


def _weights(ctx: Context, node: ast.Node) -> dict[str, tuple[ast.Ref, sympy.Expr]] | None:
    """``{q_race: 2, q_gender: 1}``: a positive weight per question (with the key, for messages)."""
    if not (isinstance(node, ast.Braced) and node.is_map):
        ctx.error("E205", f"weights are a map from questions to numbers, found {describe(node)}", node.span,
                  "weights = {q_race: 2, q_gender: 1}")
        return None
    out: dict[str, tuple[ast.Ref, sympy.Expr]] = {}
    for entry in node.entries:
        if not isinstance(entry.key, ast.Ref):
            ctx.error("E205", f"a weight's key is a mechanism's name, found {describe(entry.key)}", entry.key.span)
            return None
        if entry.key.name in out:
            ctx.error("E202", f"'{entry.key.name}' has two weights", entry.key.span)
            return None
        w = ctx.number(entry.value, f"the weight of {entry.key.name}")
        if w is None:
            return None
        if not w.is_number or w.is_finite is False or (compare(w, sympy.Integer(0)) or 0) <= 0:
            ctx.error("E309", f"the weight of {entry.key.name} must be a positive, finite number, found {fmt(w)}",
                      entry.value.span, "a weight says how much a question's utility counts: 1, 2, 0.5")
            return None
        out[entry.key.name] = (entry.key, w)
    return out


def _questions(ctx: Context, call: ast.Call, weights: dict[str, tuple[ast.Ref, sympy.Expr]]
               ) -> dict[str, Mechanism] | None:
    """The questions: the mechanisms named in the call, else the weights' keys; each a declared
    mechanism with a free epsilon."""
    refs = list(call.positional) or [ref for ref, _ in weights.values()]
    if not refs:
        ctx.error("E504", "allocate() needs the questions to share the budget among", call.span, ALLOCATE_USAGE)
        return None
    named = {r.name for r in refs if isinstance(r, ast.Ref)}
    stray = [ref for key, (ref, _) in weights.items() if key not in named]
    if stray:
        ctx.error("E205", f"weights name {stray[0].name}, which is not among the questions", stray[0].span,
                  "name every weighted question, or leave the questions out")
        return None
    out: dict[str, Mechanism] = {}
    for r in refs:
        if not isinstance(r, ast.Ref):
            ctx.error("E205", f"a question is a declared mechanism's name, found {describe(r)}", r.span,
                      ALLOCATE_USAGE)
            return None
        if r.name in out:
            ctx.error("E202", f"question '{r.name}' is named twice", r.span)
            return None
        mech = ctx.lookup(r, ["mechanism"])
        if mech is None or not _free_epsilon(ctx, r, mech):
            return None
        variables = {n: d.value for n, d in ctx.scope.items() if d.kind == "variable"}
        if candidate_estimator(ctx, question_estimand(mech, variables), mech, None, r) is None:
            return None
        out[r.name] = mech
    return out


def _free_epsilon(ctx: Context, ref: ast.Ref, mech: Mechanism) -> bool:
    """Whether every randomizer of the question has an epsilon that is a number or one
    parameter, and at least one of them a parameter without a value (what is allocated)."""
    free = False
    for _, eps in epsilon_terms(mech):
        if eps is None:
            ctx.error("E501", f"{ref.name} has no epsilon to allocate: allocate() shares a budget among mechanisms "
                              "with an epsilon (grr, the frequency oracles, products of them)", ref.span)
            return False
        if eps.free_symbols and not (isinstance(eps, sympy.Symbol) and _parameter(ctx, eps) is not None):
            ctx.error("E501", f"{ref.name}'s epsilon is {fmt(eps)}: allocate() needs each epsilon to be one "
                              "parameter or a number", ref.span, "write epsilon = e_name with parameter e_name > 0")
            return False
        free = free or bool(eps.free_symbols)
    if not free:
        ctx.error("E501", f"{ref.name} has no free epsilon: its epsilon is fixed, so there is nothing to allocate",
                  ref.span, f"declare parameter e_{ref.name} > 0 (no value) and write epsilon = e_{ref.name}")
    return free


def _parameter(ctx: Context, symbol: sympy.Symbol) -> Parameter | None:
    """The declared parameter without a value whose symbol this is (a parameter with a value
    is a number here)."""
    p = ctx.parameters.get(symbol.name)
    return p if p is not None and p.value is None and p.symbol == symbol else None


def parameter_floor(constraints: tuple[tuple[str, sympy.Expr], ...]) -> float:
    """The lowest value a parameter's constraints allow (0 without a lower bound: an epsilon)."""
    return max([float(b) for op, b in constraints if op in (">", ">=")] + [0.0])


def _check_budget(ctx: Context, questions: dict[str, Mechanism], total: sympy.Expr, where: Span) -> bool:
    """Whether the fixed epsilons and the parameters' lowest values leave some of ``total`` to share."""
    floor = 0.0
    for mech in questions.values():
        for _, eps in epsilon_terms(mech):
            if eps is not None and not eps.free_symbols:
                floor += float(eps)
            elif eps is not None:
                floor += parameter_floor(ctx.parameters[eps.name].constraints)   # type: ignore[union-attr]
    if floor >= float(total):
        ctx.error("E309", f"the total epsilon {fmt(total)} is spent before it is shared: the fixed epsilons and the "
                          f"parameters' lowest values add up to {floor:g}", where,
                  "raise the total, or lower the parameters' bounds")
        return False
    return True
