"""AST -> model graph: resolve names in declaration order and validate everything,
collecting all diagnostics in one pass."""
from __future__ import annotations

import re

import sympy

from privspec.language import arith
from privspec.language.arith import fmt
from privspec.language import ast
from privspec.model import costs
from privspec.errors import Diagnostic, did_you_mean
from privspec.model.arguments import check_float, check_positive, check_probability, sums_to_one
from privspec.model.mechanisms import build_law, build_mechanism
from privspec.model.graph import (CONTINUOUS_FAMILIES, LATENT_SHARES, Law, ModelGraph, Parameter, Population, Release,
                                  Variable)
from privspec.language.parser import DECLARATION_KEYWORDS
from privspec.model.plans import build_compare
from privspec.model.randomized_response import TwoGroupResponse
from privspec.model.queries import build_query
from privspec.model.scope import Context, compare, describe, factors, sign
from privspec.language.source import Source, Span

NOISES = ("geometric",)
#: release noise calibrations (the back end's release_noise.CALIBRATIONS; a test keeps them equal)
CALIBRATIONS = ("tight", "paper")
_NAME_OF_FAILED = re.compile(r"\s*(?:variable|parameter|mechanism|release|query|compare)\s+([A-Za-z_]\w*)")


def resolve(decls: list[ast.Declaration], source: Source,
            failed: list[tuple[int, int]] = ()) -> tuple[ModelGraph, list[Diagnostic]]:
    """Build the model graph of parsed declarations; return it with every diagnostic.

    The graph holds what could be resolved; it is only meaningful when no diagnostic
    is an error.
    """
    all_declared: dict[str, Span] = {}
    for d in decls:
        ref = ast.declared_name(d)
        if ref is not None and ref.name not in all_declared:
            all_declared[ref.name] = ref.span
    poisoned = set()
    for s, e in failed:
        m = _NAME_OF_FAILED.match(source.text, s, e)
        if m:
            poisoned.add(m.group(1))
    ctx = Context(all_declared, poisoned)
    r = _Resolver(ctx)
    for d in decls:
        r.declaration(d)
    r.price_queries()
    r.unread_latent_shares()
    graph = ModelGraph(r.title, r.variables, ctx.parameters, tuple(r.populations), r.mechanisms,
                       r.releases, r.queries, r.compares, source)
    return graph, ctx.diagnostics


class _Resolver:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.title: str | None = None
        self.title_span: Span | None = None
        self.variables: dict[str, Variable] = {}
        self.populations: list[Population] = []
        self.populated: dict[str, Span] = {}
        self.mechanisms: dict = {}
        self.releases: dict[str, Release] = {}
        self.queries: dict = {}
        self.compares: dict = {}

    def declaration(self, d: ast.Declaration) -> None:
        getattr(self, "_" + type(d).__name__)(d)

    #: which two-group design reads each latent share
    LATENT_READERS = {"cheaters": "cdm", "honesty": "sld"}

    def unread_latent_shares(self) -> None:
        """W102 for a latent share declared where no design that reads it observes the
        variable (a ``cheaters`` without a ``cdm``, an ``honesty`` without an ``sld``): the
        share would be silently ignored."""
        designs = {(m.variable.name, m.design) for m in self.mechanisms.values() if isinstance(m, TwoGroupResponse)}
        designs |= {(m.variable.name, m.design) for c in self.compares.values() for _, m in c.candidates
                    if isinstance(m, TwoGroupResponse)}
        for pop in self.populations:
            for share, _ in pop.latent:
                reader = self.LATENT_READERS[share]
                if not any((v.name, reader) in designs for v in pop.variables):
                    name = pop.variables[0].name
                    self.ctx.warn("W102", f"the latent share {share} of {name} is read by no design: no {reader}() "
                                          f"observes {name}", pop.span,
                                  f"{share} is the truth of a {reader}(...) design of {name}; drop it, or declare "
                                  f"the {reader} mechanism that estimates it")

    def price_queries(self) -> None:
        """E702 for queries and comparisons that would cost more than :mod:`privspec.model.costs`
        allows; priced once every population is known (it may be declared below its query),
        against an index of the populations by variable (a scan of them all per query was
        quadratic in the spec's length)."""
        populations = costs.PopulationIndex(self.populations)
        for query in self.queries.values():
            refusal = costs.query_refusal(query, populations)
            if refusal is not None:
                self.ctx.error(refusal.code, f"query {query.name}: {refusal.message}", query.span, refusal.hint)
        for comp in self.compares.values():
            found = costs.compare_refusal(comp, populations)
            if found is not None:
                name, refusal = found
                self.ctx.error(refusal.code, f"candidate {name} of {comp.name}: {refusal.message}", comp.span,
                               refusal.hint)

    def _check_name(self, ref: ast.Ref) -> bool:
        if ref.name in arith.CONSTANTS or ref.name in DECLARATION_KEYWORDS:
            self.ctx.error("E202", f"'{ref.name}' is reserved and cannot be declared", ref.span,
                           "pi and inf are constants; choose another name")
            return False
        return True

    def _declare(self, ref: ast.Ref, kind: str, value) -> bool:
        if not self._check_name(ref):
            return False
        before = len(self.ctx.diagnostics)
        self.ctx.declare(ref, kind, value)
        return len(self.ctx.diagnostics) == before

    # -- spec title ------------------------------------------------------------------
    def _SpecTitle(self, d: ast.SpecTitle) -> None:
        if self.title_span is not None:
            self.ctx.error("E207", "the spec title is given twice", d.span, "keep one 'spec \"...\"' line")
            return
        self.title, self.title_span = d.title, d.span

    # -- variables -------------------------------------------------------------------
    def _CategoricalDecl(self, d: ast.CategoricalDecl) -> None:
        labels = []
        seen: set[str] = set()  # a set: a list scan made 125,000 labels take minutes
        for node in d.labels:
            lab = self.ctx.label(node)
            if lab is None:
                continue
            if lab in seen:
                self.ctx.error("E311", f"category '{lab}' is listed twice", node.span)
                continue
            seen.add(lab)
            labels.append(lab)
        if len(labels) < 2:
            self.ctx.error("E309", f"a categorical variable needs at least 2 categories; {d.name.name} has "
                                   f"{len(labels)}", d.span, "a variable with one category is not random")
        self._add_variable(d.name, Variable(d.name.name, "categorical", tuple(labels), span=d.span))

    def _ContinuousDecl(self, d: ast.ContinuousDecl) -> None:
        lo, hi = -sympy.oo, sympy.oo
        if d.bounds is not None:
            a, b = (self.ctx.number(x, "a bound") for x in d.bounds)
            # a finite bound is a floating-point number for the interval back end; inf is allowed
            for v, x in ((a, d.bounds[0]), (b, d.bounds[1])):
                if v is not None and not (arith.infinite(v) and v.is_number) and not check_float(self.ctx, v, x, "a bound"):
                    a = b = None
            if a is not None and b is not None:
                c = compare(a, b)
                if c is not None and c >= 0:
                    self.ctx.error("E309", f"the support [{fmt(a)}, {fmt(b)}] is empty: the lower bound must be "
                                           "below the upper", d.bounds[0].span.join(d.bounds[1].span))
                else:
                    lo, hi = a, b
        self._add_variable(d.name, Variable(d.name.name, "continuous", lower=lo, upper=hi, span=d.span))

    def _CombinedDecl(self, d: ast.CombinedDecl) -> None:
        expr = d.expr
        if not (isinstance(expr, ast.BinOp) and expr.op == "*"):
            self.ctx.error("E205", f"a combined variable is a product of variables, found {describe(expr)}",
                           expr.span, f"variable {d.name.name} = gender * income")
            return
        parts = [self.ctx.variable(p) for p in factors(expr)]
        if any(p is None for p in parts):
            self.ctx.poisoned.add(d.name.name)
            return
        var = self.ctx.combine(parts, d.name.name, d.span)  # type: ignore[arg-type]
        if var is not None:
            self._add_variable(d.name, var)
        else:  # refused (too many categories, a part twice): later uses are not unknown names
            self.ctx.poisoned.add(d.name.name)

    def _add_variable(self, ref: ast.Ref, var: Variable) -> None:
        if self._declare(ref, "variable", var):
            self.variables[ref.name] = var

    # -- parameters --------------------------------------------------------------------
    def _ParameterDecl(self, d: ast.ParameterDecl) -> None:
        constraints = []
        for op, node in d.constraints:
            v = self.ctx.number(node, "a bound")
            if v is not None:
                constraints.append((op, v))
        assumptions = {}
        for op, v in constraints:
            s = sign(v) if v.is_number else None  # never a raw comparison: log(8) - 3*log(2) >= 0 is undecidable
            if op in (">", ">=") and s is not None and s >= 0:
                assumptions["positive" if (op == ">" or s > 0) else "nonnegative"] = True
            if op in ("<", "<=") and s is not None and s <= 0:
                assumptions["negative" if (op == "<" or s < 0) else "nonpositive"] = True
        assumptions.setdefault("real", True)
        # empty when some lower bound lies above some upper bound (`> 2 < 1`, `> 0 <= 0`);
        # `>= 0 <= 0` still leaves 0
        empty = any(c is not None and (c > 0 or (c == 0 and (lop == ">" or uop == "<")))
                    for lop, lo in constraints if lop in (">", ">=")
                    for uop, hi in constraints if uop in ("<", "<=")
                    for c in (compare(lo, hi),))
        if empty:
            self.ctx.error("E312", f"no value satisfies the bounds of parameter {d.name.name}", d.span)
            return
        symbol = sympy.Symbol(d.name.name, **assumptions)
        value = None
        if d.value is not None:
            value = self.ctx.number(d.value, "a value")
            if value is not None:
                for op, bound in constraints:
                    c = compare(value, bound)
                    ok = c is None or {">": c > 0, ">=": c >= 0, "<": c < 0, "<=": c <= 0}[op]
                    if not ok:
                        self.ctx.error("E312", f"the value {fmt(value)} of {d.name.name} breaks its bound "
                                               f"{op} {fmt(bound)}", d.value.span)
                        value = None
                        break
        param = Parameter(d.name.name, symbol, tuple(constraints), value, d.span)
        if self._declare(d.name, "parameter", param):
            self.ctx.parameters[d.name.name] = param

    # -- populations --------------------------------------------------------------------
    def _PopulationDecl(self, d: ast.PopulationDecl) -> None:
        vars_ = []
        for ref in d.targets:
            v = self.ctx.lookup(ref, ["variable"])
            if v is None:
                return
            if ref.name in self.populated:
                line = "above"
                self.ctx.error("E202", f"{ref.name} already has a population {line}", ref.span,
                               "declare one population per variable")
                return
            vars_.append(v)
        split = self._latent(d.law, vars_)
        if split is None:
            return
        node, latent = split
        law = self._law(node, vars_)
        if law is None:
            return
        for ref in d.targets:
            self.populated[ref.name] = ref.span
        self.populations.append(Population(tuple(vars_), law, d.span, latent))

    def _latent(self, node: ast.Node, vars_: list[Variable]) -> tuple[ast.Node, tuple] | None:
        """``categorical(0.3, 0.7, cheaters = 0.1)``: the law without its latent shares
        (:data:`LATENT_SHARES`, keywords that are not a category), and those shares, each in
        [0, 1] (E301), of one binary variable (E401)."""
        if not isinstance(node, ast.Call) or node.name != "categorical":
            return node, ()
        labels = self._labels(vars_)
        found = [kw for kw in node.keywords
                 if isinstance(kw.key, ast.Ref) and kw.key.name in LATENT_SHARES and kw.key.name not in labels]
        if node.positional:  # the shares in declared order: a keyword can only be a latent share
            stray = [kw for kw in node.keywords if not any(kw is f for f in found)
                     and not (isinstance(kw.key, ast.Ref) and kw.key.name in labels)]   # a label: E205 below
            if stray:
                shown = stray[0].key.name if isinstance(stray[0].key, ast.Ref) else describe(stray[0].key)
                self.ctx.error("E205", f"categorical() with its shares in declared order takes no option '{shown}'",
                               stray[0].key.span, did_you_mean(shown, tuple(LATENT_SHARES)) or
                               f"the latent shares of a yes/no question: {', '.join(LATENT_SHARES)}; or give every "
                               "share by label")
                return None
        if not found:
            return node, ()
        if len(vars_) != 1 or len(labels) != 2:
            self.ctx.error("E401", f"{found[0].key.name} is a latent share of a yes/no question: a binary variable's "
                                   f"population declares it", found[0].span,
                           f"{found[0].key.name} = ... beside the two shares, e.g. categorical(0.3, 0.7, "
                           f"{found[0].key.name} = 0.1)")
            return None
        latent = []
        for kw in found:
            v = self.ctx.number(kw.value, f"the share {kw.key.name}")
            if v is None:
                return None
            if any(name == kw.key.name for name, _ in latent):
                self.ctx.error("E311", f"{kw.key.name} is given twice", kw.key.span)
                return None
            lo, hi = compare(v, sympy.Integer(0)), compare(v, sympy.Integer(1))
            if (lo is not None and lo < 0) or (hi is not None and hi > 0):
                self.ctx.error("E301", f"the share {kw.key.name} = {fmt(v)} is outside [0, 1]", kw.value.span,
                               f"{kw.key.name}: {LATENT_SHARES[kw.key.name]}, a share between 0 and 1")
                return None
            latent.append((kw.key.name, v))
        rest = tuple(a for a in node.args if not any(a is kw for kw in found))
        return ast.Call(node.func, rest, node.span), tuple(latent)

    def _law(self, node: ast.Node, vars_: list[Variable]) -> Law | None:
        ctx = self.ctx
        categorical = all(v.is_categorical for v in vars_)
        if not categorical and len(vars_) > 1:
            ctx.error("E401", "joint populations are declared for categorical variables", node.span)
            return None
        name = node.tag.name if isinstance(node, ast.Tagged) else node.name if isinstance(node, ast.Call) else None
        if name == "counts":
            if not categorical:
                ctx.error("E401", f"counts describe categorical variables; {vars_[0].name} is continuous", node.span,
                          "use normal(m, s), uniform(a, b), logistic(l, s) or exponential(r)")
                return None
            return self._counts(node, vars_)
        if name == "categorical":
            if not categorical:
                ctx.error("E401", f"{vars_[0].name} is continuous: categorical() does not fit", node.span,
                          "use normal(m, s), uniform(a, b), logistic(l, s) or exponential(r)")
                return None
            return self._categorical(node, vars_)  # type: ignore[arg-type]
        if name in CONTINUOUS_FAMILIES:
            if categorical:
                ctx.error("E401", f"{vars_[0].name} is categorical: {name}() does not fit", node.span,
                          "use categorical(label = p, ...) or counts [...]")
                return None
            law = build_law(ctx, node, "population law")
            if law is not None:
                self._check_population_support(law, vars_[0], node.span)
            return law
        known = ("categorical", "counts") + tuple(CONTINUOUS_FAMILIES)
        ctx.error("E206", f"unknown population law {repr(name) if name else describe(node)}", node.span,
                  (did_you_mean(name, known) if name else "") or f"laws: {', '.join(known)}")
        return None

    def _check_population_support(self, law: Law, var: Variable, span: Span) -> None:
        lo, hi = law.support()
        below, above = compare(lo, var.lower), compare(hi, var.upper)
        if (below is not None and below < 0) or (above is not None and above > 0):
            self.ctx.error("E309", f"this population puts mass outside the support of {var.name} "
                                   f"[{fmt(var.lower)}, {fmt(var.upper)}]", span,
                           "choose a law supported inside the variable's bounds")

    def _labels(self, vars_: list[Variable]) -> tuple[str, ...]:
        if len(vars_) == 1:
            return vars_[0].labels
        var = self.ctx.combine(vars_, None, Span(0, 0))
        return var.labels if var is not None else ()

    def _categorical(self, call: ast.Call, vars_: list[Variable]) -> Law | None:
        ctx = self.ctx
        labels = self._labels(vars_)
        if not isinstance(call, ast.Call) or not call.args:
            ctx.error("E205", "categorical() takes the probabilities of the categories", call.span,
                      "categorical(black = 0.01, red = 0.1, ...) or categorical(0.01, 0.1, ...) in declared order")
            return None
        if call.positional and call.keywords:
            ctx.error("E205", "give the probabilities either all by label or all in declared order", call.span)
            return None
        probs: dict[str, sympy.Expr] = {}
        ok = True
        if call.positional:
            if len(call.positional) != len(labels):
                ctx.error("E310", f"categorical() has {len(call.positional)} probabilities but "
                                  f"{' x '.join(v.name for v in vars_)} has {len(labels)} categories", call.span,
                          "in declared order: " + ", ".join(labels))
                return None
            items = list(zip(labels, call.positional))
        else:
            var = vars_[0] if len(vars_) == 1 else Variable("*".join(v.name for v in vars_), "categorical", labels)
            items = []
            for kw in call.keywords:
                lab = ctx.domain_label(kw.key, var)
                if lab is None:
                    ok = False
                    continue
                if lab in dict(items):
                    ctx.error("E311", f"category '{lab}' is given twice", kw.key.span)
                    ok = False
                    continue
                items.append((lab, kw.value))
        for lab, node in items:
            v = ctx.number(node, "a probability")
            if v is None or not check_probability(ctx, v, node.span):
                ok = False
                continue
            probs[lab] = v
        if not ok:
            return None
        good, total = sums_to_one(list(probs.values()))
        if good is False:
            ctx.error("E302", f"the probabilities do not sum to 1 (sum = {fmt(total)})", call.span,
                      "a population is a probability distribution; counts [...] are normalized for you")
            return None
        return Law("categorical", probs=tuple(probs.get(lab, sympy.Integer(0)) for lab in labels),
                   shape=tuple(v.p for v in vars_))

    def _counts(self, node: ast.Node, vars_: list[Variable]) -> Law | None:
        ctx = self.ctx
        body = node.body if isinstance(node, ast.Tagged) else None
        if not isinstance(body, ast.ListLit):
            ctx.error("E205", "counts are written as a list: counts [n1, n2, ...] or counts [[...], [...]]",
                      node.span)
            return None
        shape = tuple(v.p for v in vars_)
        flat: list[tuple[sympy.Expr, ast.Node]] = []

        def walk(n: ast.Node, depth: int) -> bool:
            if depth == len(shape):
                if isinstance(n, ast.ListLit):
                    ctx.error("E310", f"the counts nest deeper than the {len(shape)} variable(s) declared", n.span)
                    return False
                v = ctx.number(n, "a count")
                if v is None:
                    return False
                flat.append((v, n))
                return True
            want = shape[depth]
            if not isinstance(n, ast.ListLit) or len(n.items) != want:
                got = f"{len(n.items)} entries" if isinstance(n, ast.ListLit) else describe(n)
                ctx.error("E310", f"expected {want} entries for the categories of {vars_[depth].name}, found {got}",
                          n.span, f"the table's shape is {' x '.join(map(str, shape))} "
                                  f"({', '.join(v.name for v in vars_)})")
                return False
            return all([walk(x, depth + 1) for x in n.items])

        if not walk(body, 0):
            return None
        ok = True
        for v, n in flat:
            s = compare(v, sympy.Integer(0))
            if s is not None and s < 0:
                ctx.error("E303", f"count {fmt(v)} is negative", n.span, "counts are >= 0")
                ok = False
            elif arith.infinite(v):
                ctx.error("E303", "a count must be finite, found inf", n.span, "counts are numbers of respondents")
                ok = False
        if not ok:
            return None
        counts = tuple(v for v, _ in flat)
        total = sympy.Add(*counts)
        if total == 0:
            ctx.error("E303", "all counts are zero", node.span)
            return None
        return Law("categorical", probs=tuple(c / total for c in counts), counts=counts, shape=shape)

    # -- mechanisms -------------------------------------------------------------------------
    def _named(self, ref: ast.Ref, kind: str, build, store: dict) -> None:
        """Declare ``ref`` as the ``kind`` that ``build()`` makes.

        When building fails (its diagnostics are already reported) the name is still
        declared, as poisoned, so that later uses do not cascade into unknown-name errors.
        """
        if not self._check_name(ref):
            return
        value = build()
        if value is None:
            self.ctx.poisoned.add(ref.name)
            self.ctx.declare(ref, kind, None)
        elif self._declare(ref, kind, value):
            store[ref.name] = value

    def _MechanismDecl(self, d: ast.MechanismDecl) -> None:
        self._named(d.name, "mechanism", lambda: build_mechanism(self.ctx, d.value, d.name.name), self.mechanisms)

    # -- releases ---------------------------------------------------------------------------
    def _ReleaseDecl(self, d: ast.ReleaseDecl) -> None:
        self._named(d.name, "release", lambda: self._release(d), self.releases)

    def _release(self, d: ast.ReleaseDecl) -> Release | None:
        ctx = self.ctx
        usage = "release NAME = counts(a, b) with geometric(epsilon = e) protect {b} exact totals(a)"
        table = d.table
        if not isinstance(table, ast.Call) or table.name != "counts" or table.keywords or not table.args:
            ctx.error("E206", f"a release is a count table counts(VARIABLES...), found {describe(table)}",
                      table.span, usage)
            return None
        vars_ = []
        for a in table.args:
            v = ctx.variable(a, "a variable")
            if v is None:
                return None
            if not v.is_categorical:
                ctx.error("E401", f"count tables are over categorical variables; {v.name} is continuous", a.span)
                return None
            vars_.append(v)
        names = [v.name for v in vars_]
        if len(set(names)) != len(names):
            ctx.error("E205", "a variable appears twice in this table", table.span)
            return None
        noise = _release_noise(ctx, d, usage)
        if noise is None:
            return None
        noise_name, eps, calibration = noise
        if len(d.protect) > 1:
            ctx.error("E205", "'protect' is given twice", d.protect[1].span)
            return None
        protect = list(names)
        if d.protect:
            node = d.protect[0]
            items = node.items if isinstance(node, ast.Braced) and node.is_set else (node,)
            protect = []
            for item in items:
                if not isinstance(item, ast.Ref):
                    ctx.error("E205", f"expected a variable, found {describe(item)}", item.span)
                    return None
                if item.name not in names:
                    v = ctx.lookup(item, ["variable"])
                    if v is not None:
                        ctx.error("E601", f"protected variable {item.name} is not in this table "
                                          f"({', '.join(names)})", item.span,
                                  "a release is 0-private on variables it does not use (Proposition 3.3)")
                    return None
                protect.append(item.name)
        totals: list[str] = []
        for group in d.totals:
            for ref in group:
                if ref.name not in names:
                    if ctx.lookup(ref, ["variable"]) is not None:
                        ctx.error("E601", f"{ref.name} is not in this table ({', '.join(names)})", ref.span)
                    return None
                if ref.name in protect:
                    ctx.error("E602", f"totals over {ref.name} cannot be exact: {ref.name} is protected", ref.span,
                              "exact totals are over unprotected variables (Algorithm 1): "
                              f"protect {{{', '.join(n for n in names if n != ref.name)}}}")
                    return None
                totals.append(ref.name)
        return Release(d.name.name, tuple(vars_), noise_name, eps, tuple(protect), tuple(totals), calibration,
                       d.span)

    # -- queries and comparisons ------------------------------------------------------------
    def _QueryDecl(self, d: ast.QueryDecl) -> None:
        self._named(d.name, "query", lambda: build_query(self.ctx, d), self.queries)

    def _CompareDecl(self, d: ast.CompareDecl) -> None:
        self._named(d.name, "compare", lambda: build_compare(self.ctx, d), self.compares)


def _release_noise(ctx: Context, d: ast.ReleaseDecl, usage: str) -> tuple[str, sympy.Expr, str] | None:
    """A release's noise (``with geometric(epsilon = e[, calibration = tight])``): its name,
    epsilon and calibration, or None after saying what is wrong."""
    if len(d.noise) != 1:
        span = d.noise[1].span if d.noise else d.span
        ctx.error("E205", "a release needs exactly one noise mechanism: with geometric(epsilon = e)", span, usage)
        return None
    noise = d.noise[0]
    if not isinstance(noise, ast.Call) or noise.name not in NOISES:
        nname = noise.name if isinstance(noise, ast.Call) else None
        ctx.error("E206", f"unknown noise mechanism {repr(nname) if nname else describe(noise)}", noise.span,
                  (did_you_mean(nname, NOISES) if nname else "") or "noise: geometric(epsilon = e) (Algorithm 1)")
        return None
    args = ctx.bind(noise, ["epsilon"], ["epsilon"], ["calibration"], "geometric(epsilon = e)")
    if args is None:
        return None
    eps = ctx.number(args["epsilon"], "epsilon")
    if eps is None or not check_positive(ctx, eps, args["epsilon"], "epsilon"):
        return None
    calibration = CALIBRATIONS[0]
    if "calibration" in args:
        node = args["calibration"]
        # a name, as options are written (`by mom`); a quoted one is accepted too
        word = node.name if isinstance(node, ast.Ref) else node.text if isinstance(node, ast.Str) else None
        if word not in CALIBRATIONS:
            about = ("tight (the default) spends exactly epsilon; paper is Algorithm 1 as published "
                     "(in fact epsilon/2-private)")
            close = did_you_mean(word, CALIBRATIONS) if word else ""
            ctx.error("E603", f"unknown noise calibration {word!r}: it is tight or paper" if word else
                      f"a noise calibration is tight or paper, found {describe(node)}", node.span,
                      f"{close} {about}" if close else about)
            return None
        calibration = word
    return noise.name, eps, calibration
