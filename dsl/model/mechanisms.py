"""Mechanism declarations -> model mechanisms, with the design checks of the papers.

Subset designs follow Definitions 2-4 and Appendices II-III of the subset-privacy
paper; interval mechanisms the interval-privacy paper (Definitions 1, 4, 5; Examples 3,
4).  Randomized response and the frequency oracles are built in
:mod:`privspec.model.randomized_response`, the checks the builders share are in
:mod:`privspec.model.arguments`; :func:`build_mechanism` dispatches on the call's name
(:data:`BUILDERS`).
"""
from __future__ import annotations

import functools
from fractions import Fraction
from typing import Callable

import sympy

from privspec.errors import did_you_mean
from privspec.language import arith
from privspec.language import ast
from privspec.language.arith import fmt
from privspec.language.source import Span
from privspec.model import costs
from privspec.model.arguments import (bind_variable, categorical_variable, check_float, check_positive,
                                      check_probability, continuous_variable, repeated_component, sums_to_one, value)
from privspec.model.graph import (CONTINUOUS_FAMILIES, CensoredMechanism, IntervalMechanism, Law, Mechanism,
                                  NumericMechanism, ProductMechanism, ProgressiveMechanism, SelectiveMechanism,
                                  SubsetDesign, SubsetMechanism, Variable)
from privspec.model.randomized_response import (ORACLES, TWO_GROUP_DESIGNS, build_grr, build_kuk, build_multi_oracle,
                                                build_oracle, build_rr, build_rsfd, build_two_group)
from privspec.model.scope import Context, compare, describe, sign
from privspec.model.signatures import bind, names, signature

SUBSET_DESIGNS = names("subset design")
INTERVAL_SCHEMES = names("interval scheme")


# ---- dispatch -------------------------------------------------------------------------
def build_mechanism(ctx: Context, node: ast.Node, name: str | None) -> Mechanism | None:
    """The mechanism a value describes (a call, or the name of a declared mechanism)."""
    if isinstance(node, ast.Ref):
        found = ctx.lookup(node, ["mechanism"], extra=BUILDERS)
        return found
    if not isinstance(node, ast.Call):
        ctx.error("E205", f"expected a mechanism, found {describe(node)}", node.span,
                  "e.g. subset(color, uniform), grr(race, epsilon = 1), interval(salary, case1(uniform(0, 150)))")
        return None
    builder = BUILDERS.get(node.name)
    if builder is None:
        ctx.error("E206", f"unknown mechanism '{node.name}'", node.func.span,
                  did_you_mean(node.name, BUILDERS) or f"mechanisms: {', '.join(BUILDERS)}")
        return None
    mech = builder(ctx, node, name)
    if mech is not None:
        # what no back end could build (a 10^8-cell channel, 100,000 ranges) is refused here
        refusal = costs.mechanism_refusal(mech)
        if refusal is not None:
            ctx.error(refusal.code, refusal.message, node.span, refusal.hint)
            return None
    return mech


# ---- subset privacy ---------------------------------------------------------------------
_SUBSET_USAGE = signature("subset", "mechanism").usage


def build_subset(ctx: Context, call: ast.Call, name: str | None) -> SubsetMechanism | None:
    args = bind(ctx, call, signature("subset", "mechanism"))
    if args is None:
        return None
    var = categorical_variable(ctx, args["variable"], "subset")
    alpha = None
    if "min_coverage" in args:
        alpha = ctx.number(args["min_coverage"], "a coverage floor")
        if alpha is not None:
            lo, hi = compare(alpha, sympy.Integer(0)), compare(alpha, sympy.Rational(1, 2))
            if (lo is not None and lo <= 0) or (hi is not None and hi >= 0):
                ctx.error("E309", f"min_coverage must lie in (0, 1/2), found {fmt(alpha)}",
                          args["min_coverage"].span,
                          "alpha is the probability of each of the two dummy categories (Appendix II)")
                alpha = None
    if var is None:
        return None
    design = _subset_design(ctx, args["design"], var, alpha is not None)
    if design is None:
        return None
    if alpha is not None and not design.is_independent:
        ctx.error("E409", f"min_coverage needs a uniform or independent design, not a {design.kind} one",
                  args["min_coverage"].span,
                  "dummy respondents draw their subset from nu (Appendix II): give the design as "
                  "independent { ... } or uniform")
        return None
    p = var.p
    if alpha is None:
        if p < 3:
            ctx.error("E405", f"subset privacy needs at least 3 categories; {var.name} has {p}",
                      args["variable"].span,
                      "combine variables (section II-D: variable gi = gender * income) or add dummy "
                      "categories with min_coverage = 1/5 (Appendices II-III)")
            return None
        if p == 3 and design.is_independent:
            ctx.error("E405", f"an independent design needs at least 4 categories; {var.name} has 3",
                      args["design"].span,
                      "use a conditional design (e.g. sizes {2: 1}), combine variables (section II-D), "
                      "or add min_coverage (Appendix III)")
            return None
    mech = SubsetMechanism(name, var, design, alpha, call.span)
    _warn_unidentifiable_subset(ctx, mech, args["design"].span)
    return mech


def _label_set(ctx: Context, node: ast.Node, var: Variable) -> frozenset | None:
    if not (isinstance(node, ast.Braced) and node.is_set):
        ctx.error("E205", f"expected a subset of {var.name}'s categories, found {describe(node)}", node.span,
                  "write subsets as {black, red}")
        return None
    labels = [ctx.domain_label(i, var) for i in node.items]
    if any(lab is None for lab in labels):
        return None
    if len(set(labels)) != len(labels):
        ctx.error("E311", "a category is listed twice in this subset", node.span)
        return None
    return frozenset(labels)


def _design_entries(ctx: Context, body: ast.Node, kind: str) -> list[ast.Entry] | None:
    if not isinstance(body, ast.Braced) or not (body.is_map or not body.items):
        ctx.error("E205", f"a {kind} design is a map {{subset: weight, ...}}", body.span,
                  "e.g. conditional { {black, red}: 1/2, {green, blue}: 1/2 }" if kind != "sizes"
                  else "e.g. sizes {2: 1/2, 3: 1/2}")
        return None
    return list(body.entries)


def _subset_design(ctx: Context, node: ast.Node, var: Variable, dummies: bool) -> SubsetDesign | None:
    if isinstance(node, ast.Ref):
        if node.name == "uniform":
            return SubsetDesign("uniform")
        ctx.error("E206", f"unknown subset design '{node.name}'", node.span,
                  did_you_mean(node.name, SUBSET_DESIGNS) or f"designs: {', '.join(SUBSET_DESIGNS)}")
        return None
    if not isinstance(node, ast.Tagged) or node.tag.name not in SUBSET_DESIGNS[1:]:
        tag = node.tag.name if isinstance(node, ast.Tagged) else None
        ctx.error("E206", f"unknown subset design {repr(tag) if tag else describe(node)}", node.span,
                  (did_you_mean(tag, SUBSET_DESIGNS) if tag else "") or f"designs: {', '.join(SUBSET_DESIGNS)}")
        return None
    kind = node.tag.name
    entries = _design_entries(ctx, node.body, kind)
    if entries is None:
        return None
    p = var.p
    weights: list[tuple] = []
    ok = True
    seen: dict = {}
    for e in entries:
        w = ctx.number(e.value, "a design weight")
        if kind == "sizes":
            k = ctx.integer_or_parameter(e.key, "a subset size")
            if k is None:
                ok = False
                continue
            if isinstance(k, int) and (k < 2 or k > p):
                ctx.error("E408", f"subset size {k} is not allowed for {var.name} (p = {p})", e.key.span,
                          "sizes run from 2 (a subset of one category discloses the answer) to p")
                ok = False
                continue
            key = k
        else:
            key = _label_set(ctx, e.key, var)
            if key is None:
                ok = False
                continue
            if kind == "conditional" and len(key) < 2:
                ctx.error("E407", "a conditional design gives no weight to subsets of one category",
                          e.key.span, "mu_a = 0 when |a| < 2 (Definition 2): a singleton reveals the answer")
                ok = False
                continue
            if kind == "independent" and not dummies and len(key) in (1, p - 1):
                ctx.error("E403", f"an independent design gives no weight to subsets of size 1 or p - 1 = {p - 1}",
                          e.key.span, "nu_a = 0 if |a| = 1 or p - 1 (Definition 3): A or its complement "
                                      "would be a single category")
                ok = False
                continue
        if key in seen:
            ctx.error("E311", "this subset is given a weight twice" if kind != "sizes" else "this size is given twice",
                      e.key.span)
            ok = False
            continue
        seen[key] = True
        if w is None or not check_probability(ctx, w, e.value.span, "design weight"):
            ok = False
            continue
        weights.append((key, w))
    if not ok:
        return None
    design = SubsetDesign(kind, tuple(weights))
    if kind == "conditional":
        for lab in var.labels:
            total_ok, total = sums_to_one([w for a, w in weights if lab in a])
            if total_ok is False:
                ctx.error("E402", f"conditional design does not sum to 1 for category '{lab}' (sum = {fmt(total)})",
                          node.span, "every category must lie in subsets whose weights sum to 1 (Definition 2)")
                return None
    else:
        total_ok, total = sums_to_one([w for _, w in weights])
        if total_ok is False:
            code = "E404" if kind == "independent" else "E302"
            ctx.error(code, f"{kind} design weights do not sum to 1 (sum = {fmt(total)})", node.span,
                      "nu is a probability distribution over subsets (Definition 3)" if kind == "independent"
                      else "the weights of the sizes form a probability distribution")
            return None
    return design


@functools.lru_cache(maxsize=256)
def _rank(rows: tuple[tuple[int, ...], ...]) -> int:
    """Exact rank of an integer matrix (Gaussian elimination over the rationals).

    Cached: a spec repeats its designs, and the rank of the same subsets is asked again.

    Examples
    --------
    >>> _rank(((1, 1, 0), (0, 1, 1), (1, 2, 1)))
    2
    """
    m = [[Fraction(x) for x in r] for r in rows]
    rank, ncols = 0, len(m[0]) if m else 0
    for col in range(ncols):
        if rank == len(m):
            break   # every row is a pivot: the rank is the number of rows
        pivot = next((i for i in range(rank, len(m)) if m[i][col] != 0), None)
        if pivot is None:
            continue
        m[rank], m[pivot] = m[pivot], m[rank]
        for i in range(rank + 1, len(m)):
            if m[i][col] != 0:
                f = m[i][col] / m[rank][col]
                m[i] = [a - f * b for a, b in zip(m[i], m[rank])]
        rank += 1
    return rank


def _warn_unidentifiable_subset(ctx: Context, mech: SubsetMechanism, span: Span) -> None:
    """W101 when Assumption 1 fails: the subsets with mu_a > 0 must span R^p."""
    if mech.min_coverage is not None:
        return
    var, design = mech.variable, mech.design
    p = var.p
    if design.kind == "uniform":
        return  # full rank for p >= 4
    if design.kind == "sizes":
        if all(k == p for k, w in design.weights if sign(w) != 0):
            ctx.warn("W101", f"this design always reports all {p} categories: w is not identifiable",
                     span, "give weight to some size k < p (Assumption 1)")
        return
    support = [a for a, w in mech.conditional_design().items() if sign(w) != 0]
    rows = tuple(tuple(1 if lab in a else 0 for lab in var.labels) for a in support)
    r = _rank(rows)
    if r < p:
        ctx.warn("W101", f"the design is valid but not identifiable: its subsets span rank {r} < p = {p}",
                 span, "Assumption 1 (Theorem 1): add subsets that separate the categories")


# ---- products ------------------------------------------------------------------------------
def build_product(ctx: Context, call: ast.Call, name: str | None) -> ProductMechanism | None:
    if call.keywords:
        ctx.error("E205", "product() takes only mechanisms", call.keywords[0].span)
        return None
    if len(call.args) < 2:
        ctx.error("E205", "product() needs at least two mechanisms", call.span,
                  "product(subset(race, uniform), subset(gi, uniform))")
        return None
    factors = []
    for arg in call.args:
        m = build_mechanism(ctx, arg, None)
        if m is None:
            return None
        if not m.is_finite:
            ctx.error("E401", "product() combines finite mechanisms (subset, grr, rr)", arg.span)
            return None
        factors.append(m)
    repeated = repeated_component((arg, v) for arg, f in zip(call.args, factors) for v in f.variables)
    if repeated is not None:
        c, arg = repeated
        ctx.error("E205", f"variable {c} is privatized by two factors of this product", arg.span,
                  "each factor of a product mechanism observes different variables (Definition 8)")
        return None
    return ProductMechanism(name, tuple(factors), call.span)


# ---- interval privacy ------------------------------------------------------------------------
def build_law(ctx: Context, node: ast.Node, role: str) -> Law | None:
    """A continuous law ``uniform(a, b)``, ``normal(m, s)``, ``logistic(l, s)``, ``exponential(r)``,
    each with optional ``shift =`` and ``scale =``."""
    if not isinstance(node, ast.Call) or node.name not in CONTINUOUS_FAMILIES:
        name = node.name if isinstance(node, ast.Call) else None
        ctx.error("E206", f"unknown {role} {repr(name) if name else describe(node)}", node.span,
                  (did_you_mean(name, CONTINUOUS_FAMILIES) if name else "")
                  or f"laws: {', '.join(f + '(...)' for f in CONTINUOUS_FAMILIES)}")
        return None
    names = CONTINUOUS_FAMILIES[node.name]
    # shift/scale make shifted and scaled versions; a family's own parameter of that
    # name (logistic's scale) is the parameter, not the option (the signature table knows)
    options = [k for k in ("shift", "scale") if k not in names]
    args = bind(ctx, node, signature(node.name, "law"))
    if args is None:
        return None
    vals = {k: ctx.number(v, f"the {k} of {node.name}()") for k, v in args.items()}
    if any(v is None for v in vals.values()):
        return None
    for k, v in vals.items():
        if k in ("a", "b") and arith.infinite(v):
            continue  # uniform's ends: reported below with their own message
        # a scale parameter (or the scale option, whatever its sign) must not round to 0
        scale = k in ("sd", "rate", "scale")
        if not check_float(ctx, v, args[k], f"the {k} of {node.name}()", scale=scale):
            return None
    if node.name == "uniform":
        c = compare(vals["a"], vals["b"])
        if c is not None and c >= 0:
            ctx.error("E309", f"uniform(a, b) needs a < b, found a = {fmt(vals['a'])}, b = {fmt(vals['b'])}",
                      node.span)
            return None
        if arith.infinite(vals["a"]) or arith.infinite(vals["b"]):
            ctx.error("E309", "uniform(a, b) needs finite ends", node.span)
            return None
        if vals["a"].is_number and vals["b"].is_number and float(vals["a"]) >= float(vals["b"]):
            ctx.error("E309", f"uniform(a, b) has a < b, but a and b are the same number in floating point "
                              f"(a = {fmt(vals['a'])}, b = {fmt(vals['b'])})", node.span,
                      "the interval back end computes in floating point (64-bit): widen the range")
            return None
    for k in ("sd", "scale", "rate"):
        if k in vals and k in args and not check_positive(ctx, vals[k], args[k], f"the {k} of {node.name}()"):
            return None
    return Law(node.name, tuple((k, vals[k]) for k in names),
               shift=vals.get("shift", sympy.Integer(0)) if "shift" in options else sympy.Integer(0),
               scale=vals.get("scale", sympy.Integer(1)) if "scale" in options else sympy.Integer(1))


def build_interval(ctx: Context, call: ast.Call, name: str | None) -> IntervalMechanism | None:
    args = bind(ctx, call, signature("interval", "mechanism"))
    if args is None:
        return None
    var = continuous_variable(ctx, args["variable"], "interval")
    scheme = args["scheme"]
    if not isinstance(scheme, ast.Call) or scheme.name not in INTERVAL_SCHEMES:
        sname = scheme.name if isinstance(scheme, ast.Call) else (scheme.name if isinstance(scheme, ast.Ref) else None)
        ctx.error("E206", f"unknown interval scheme {repr(sname) if sname else describe(scheme)}", scheme.span,
                  (did_you_mean(sname, INTERVAL_SCHEMES) if sname else "") or
                  "schemes: case1(anchor), case2(anchor), canonical(m, anchor), ring(m, anchor)")
        return None
    ssig = signature(scheme.name, "interval scheme")
    sargs = bind(ctx, scheme, ssig)
    if scheme.name in ("case1", "case2"):
        m = 2 if scheme.name == "case1" else 3
    else:
        m = value(ctx, sargs, ssig, "m") if sargs else None
        if sargs and m is None:
            return None
    if sargs is None:
        return None
    anchor = build_law(ctx, sargs["anchor"], "anchor law")
    disclose = None
    if "disclose" in args:
        disclose = _disclosed(ctx, args["disclose"], var)
        if disclose is None:
            return None
    if var is None or anchor is None or m is None:
        return None
    _check_anchor_support(ctx, var, anchor, sargs["anchor"].span)
    return IntervalMechanism(name, var, scheme.name, anchor, m, disclose, call.span)


def _disclosed(ctx: Context, node: ast.Node, var: Variable | None):
    if not (isinstance(node, ast.Tagged) and node.tag.name == "disclose" and isinstance(node.body, ast.ListLit)
            and len(node.body.items) == 2):
        ctx.error("E205", f"expected disclose [a, b], found {describe(node)}", node.span)
        return None
    lo, hi = (ctx.number(x, "an end of the disclosed range") for x in node.body.items)
    if lo is None or hi is None:
        return None
    if not all(check_float(ctx, v, x, "an end of the disclosed range") for v, x in zip((lo, hi), node.body.items)):
        return None
    c = compare(lo, hi)
    if c is not None and c >= 0:
        ctx.error("E309", f"the disclosed range needs a < b, found [{fmt(lo)}, {fmt(hi)}]", node.span)
        return None
    if var is not None and ((compare(lo, var.lower) or 0) < 0 or (compare(hi, var.upper) or 0) > 0):
        ctx.error("E309", f"the disclosed range [{fmt(lo)}, {fmt(hi)}] leaves the support of {var.name} "
                          f"[{fmt(var.lower)}, {fmt(var.upper)}]", node.span)
        return None
    return (lo, hi)


def _check_anchor_support(ctx: Context, var: Variable, anchor: Law, span: Span) -> None:
    """E406 when the anchors cannot reach a finite end of the variable's support.

    F_Y is identified only where anchors fall (interval privacy, Theorem 1): a bounded
    support must be covered.  On an unbounded side nothing can be required.
    """
    lo, hi = anchor.support()
    bad = []
    if var.lower.is_finite and (compare(lo, var.lower) or 0) > 0:
        bad.append(f"below {fmt(lo)}")
    if var.upper.is_finite and (compare(hi, var.upper) or 0) < 0:
        bad.append(f"above {fmt(hi)}")
    below, above = compare(hi, var.lower), compare(lo, var.upper)
    if not bad and ((below is not None and below <= 0) or (above is not None and above >= 0)):
        bad = ["inside it"]
    if bad:
        ctx.error("E406", f"the anchors cannot cover the support of {var.name} [{fmt(var.lower)}, "
                          f"{fmt(var.upper)}]: no anchor falls {' or '.join(bad)}", span,
                  f"choose anchors whose support contains [{fmt(var.lower)}, {fmt(var.upper)}], "
                  f"e.g. uniform({fmt(var.lower)}, {fmt(var.upper)})" if var.is_bounded else
                  "choose anchors whose support reaches the variable's bounds")


def build_selective(ctx: Context, call: ast.Call, name: str | None) -> SelectiveMechanism | None:
    sig = signature("selective", "mechanism")
    usage = sig.usage
    args = bind(ctx, call, sig)
    if args is None:
        return None
    base = build_mechanism(ctx, args["mechanism"], None)
    if base is not None and not isinstance(base, IntervalMechanism):
        ctx.error("E401", "selective() collects ranges of an interval mechanism (Definition 5)",
                  args["mechanism"].span, usage)
        return None
    vals = {}
    for k in ("tau", "rho"):
        v = value(ctx, args, sig, k)
        if v is None:
            return None
        vals[k] = v
    if base is None:
        return None
    return SelectiveMechanism(name, base, vals["tau"], vals["rho"], call.span)


def build_progressive(ctx: Context, call: ast.Call, name: str | None) -> ProgressiveMechanism | None:
    bound = _bounded_variable(ctx, call, ("rounds",), "draws anchors uniformly in the current range")
    if bound is None:
        return None
    var, values = bound
    return ProgressiveMechanism(name, var, values["rounds"], call.span)


def _bounded_variable(ctx: Context, call: ast.Call, params: tuple[str, ...], why: str
                      ) -> tuple[Variable, dict] | None:
    """The call's continuous variable and values, or E406 when the variable is unbounded
    (``why``: what the mechanism does with the declared range)."""
    bound = bind_variable(ctx, call, continuous_variable, params)
    if bound is None:
        return None
    args, var, values = bound
    if not var.is_bounded:
        ctx.error("E406", f"{call.name}() {why}, but {var.name} has an unbounded support", args["variable"].span,
                  f"declare bounds: variable {var.name}: continuous [a, b]")
        return None
    return var, values


# ---- interval-censored data as they come ---------------------------------------------------------
#: endpoint conventions of censored(Y, ends = ...), as written
CENSORED_ENDS = {"right_closed": "(l, r]", "closed": "[l, r]", "left_closed": "[l, r)", "open": "(l, r)"}


def build_censored(ctx: Context, call: ast.Call, name: str | None) -> CensoredMechanism | None:
    """``censored(Y, ends = E, lower = L, upper = R)``: interval-censored data read as they are."""
    args = bind(ctx, call, signature("censored", "mechanism"))
    if args is None:
        return None
    var = ctx.variable(args["variable"], "a continuous variable")
    if var is not None and var.is_categorical:
        ctx.error("E401", f"censored() reads interval-censored values of a continuous variable, but {var.name} "
                          "is categorical", args["variable"].span,
                  f"declare it continuous: variable {var.name}: continuous [a, b]")
        return None
    ends = None
    if "ends" in args:
        node = args["ends"]
        shown = node.name if isinstance(node, ast.Ref) else node.text if isinstance(node, ast.Str) else None
        if shown not in CENSORED_ENDS:
            ctx.error("E206", f"unknown interval ends {repr(shown) if shown else describe(node)}", node.span,
                      (did_you_mean(shown, CENSORED_ENDS) if shown else "") or
                      "ends: " + ", ".join(f"{k} {v}" for k, v in CENSORED_ENDS.items()))
            return None
        ends = shown
    columns: dict[str, str] = {}
    for key in ("lower", "upper"):
        if key in args:
            node = args[key]
            if isinstance(node, (ast.Ref, ast.Str)):
                columns[key] = node.name if isinstance(node, ast.Ref) else node.text
            else:
                ctx.error("E205", f"{key} = names a data column, found {describe(node)}", node.span,
                          f'{key} = L or {key} = "lower bound"')
                return None
    if len(columns) == 1:
        ctx.error("E205", "lower = and upper = go together (the two-column layout)", call.span,
                  "give both columns, or neither: then the column named after the variable holds "
                  "written intervals such as (2, 5] or [3, inf)")
        return None
    if columns and columns["lower"] == columns["upper"]:
        ctx.error("E205", f"lower and upper name the same column '{columns['lower']}'", args["upper"].span)
        return None
    if var is None:
        return None
    return CensoredMechanism(name, var, ends, columns.get("lower"), columns.get("upper"), call.span)


# ---- numeric values under local DP ------------------------------------------------------------------
#: the local-DP mechanisms of one bounded continuous variable (docs/numeric.md)
NUMERIC = ("laplace", "duchi", "piecewise", "hm", "square_wave")


def build_numeric(ctx: Context, call: ast.Call, name: str | None) -> NumericMechanism | None:
    """``laplace(Y, epsilon = e)`` and the other numeric mechanisms: a continuous variable
    with a bounded declared range (its value is mapped from it) and epsilon > 0."""
    bound = _bounded_variable(ctx, call, ("epsilon",), "maps the value from its declared range")
    if bound is None:
        return None
    var, values = bound
    return NumericMechanism(name, var, call.name, values["epsilon"], call.span)


BUILDERS: dict[str, Callable[[Context, ast.Call, str | None], Mechanism | None]] = {
    "subset": build_subset,
    "grr": build_grr,
    **{o: build_oracle for o in ORACLES},
    "spl": build_multi_oracle,
    "smp": build_multi_oracle,
    "rsfd": build_rsfd,
    "rr": build_rr,
    "kuk": build_kuk,
    **{d: build_two_group for d in TWO_GROUP_DESIGNS},
    "product": build_product,
    "interval": build_interval,
    "selective": build_selective,
    "progressive": build_progressive,
    "censored": build_censored,
    **{m: build_numeric for m in NUMERIC},
}
