"""Randomized-response mechanisms -> model: ``grr`` and ``rr`` (a response matrix) of the
multidimensional-RR paper, Kuk's card design ``kuk`` (:class:`KukResponse`), RRreg's
two-group designs ``uqm``, ``cdm``, ``sld`` (:class:`TwoGroupResponse`), the local-DP
frequency oracles (``sue``, ``oue``, ``olh`` ..., longitudinal ``l_*``), and the oracles
that share one budget among several attributes (``spl``, ``smp``, ``rsfd``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import sympy

from privspec.errors import did_you_mean
from privspec.language import ast
from privspec.language.arith import fmt
from privspec.language.source import Span
from privspec.model.arguments import (bind_variable, categorical_variable, check_positive, check_probability,
                                      repeated_component, sums_to_one)
from privspec.model.graph import FrequencyOracle, MultiAttributeOracle, RandomizedResponse, Variable
from privspec.model.scope import Context, compare, describe
from privspec.model.signatures import bind, signature


def build_grr(ctx: Context, call: ast.Call, name: str | None) -> RandomizedResponse | None:
    bound = bind_variable(ctx, call, categorical_variable, ("epsilon",))
    if bound is None:
        return None
    args, var, values = bound
    if var.p < 2:
        ctx.error("E405", f"randomized response needs at least 2 categories; {var.name} has {var.p}",
                  args["variable"].span)
        return None
    return RandomizedResponse(name, var, epsilon=values["epsilon"], span=call.span)


@dataclass(frozen=True)
class KukResponse(RandomizedResponse):
    """Kuk's card design ``kuk(X, p1 = a, p2 = b, k = K)`` on a binary variable (Kuk 1990;
    RRreg's ``"Kuk"``): a respondent in the first category draws ``k`` cards with
    replacement from a deck whose red share is ``p1``, one in the second from a deck of
    red share ``p2``, and reports the number of red cards.  Its reports are ``0 .. k``,
    its matrix ``2 x (k + 1)`` with binomial rows.

    Examples
    --------
    >>> v = Variable("y", "categorical", ("yes", "no"))
    >>> m = KukResponse("m", v, p1=sympy.Rational(3, 4), p2=sympy.Rational(1, 4), k=sympy.Integer(2))
    >>> m.reports, m.randomization_matrix()[0]
    (('0', '1', '2'), (1/16, 3/8, 9/16))
    """

    p1: sympy.Expr = sympy.Integer(0)
    p2: sympy.Expr = sympy.Integer(0)
    k: sympy.Expr = sympy.Integer(1)

    @property
    def kind(self) -> str:
        return "kuk"

    @property
    def reports(self) -> tuple[str, ...]:
        return tuple(str(j) for j in range(int(self.k) + 1))

    @property
    def square(self) -> bool:
        return False

    def randomization_matrix(self) -> tuple[tuple[sympy.Expr, ...], ...]:
        """Row u: the binomial law of the red cards in k draws at red share p_(u+1)."""
        k = int(self.k)
        return tuple(tuple(sympy.binomial(k, j) * p ** j * (1 - p) ** (k - j) for j in range(k + 1))
                     for p in (self.p1, self.p2))


def build_kuk(ctx: Context, call: ast.Call, name: str | None) -> KukResponse | None:
    """``kuk(Y, p1 = a, p2 = b, k = K)``: a binary variable, two red shares in [0, 1] that
    differ (else the reports say nothing of Y: E305), k >= 1 cards."""
    bound = bind_variable(ctx, call, categorical_variable, ("p1", "p2", "k"))
    if bound is None:
        return None
    args, var, values = bound
    if var.p != 2:
        ctx.error("E405", f"kuk() privatizes a binary variable; {var.name} has {var.p} categories",
                  args["variable"].span, "the first category draws from deck 1 (p1), the second from deck 2 (p2)")
        return None
    p1, p2 = values["p1"], values["p2"]
    if p1.is_number and p2.is_number and sympy.simplify(p1 - p2) == 0:
        ctx.error("E305", f"kuk()'s decks have the same red share {fmt(p1)}: the reports do not depend on "
                          f"{var.name}", args["p2"].span, "use two decks with different red shares, e.g. "
                                                         "p1 = 0.8, p2 = 0.2")
        return None
    return KukResponse(name, var, span=call.span, p1=p1, p2=p2, k=sympy.Integer(values["k"]))


#: RRreg's designs of two groups randomized with different probabilities (docs/randomized-response.md)
TWO_GROUP_DESIGNS = ("uqm", "cdm", "sld")


@dataclass(frozen=True)
class TwoGroupResponse:
    """A yes/no question asked in two groups randomized with probabilities ``p1`` and ``p2``
    (RRreg's two-group designs); the reports are ``variable``'s two categories, the first
    meaning yes (the sensitive answer), and the ``group`` column says which group (its first
    category: ``p1``).

    * ``uqm``: the unrelated question with unknown prevalence (Greenberg et al. 1969): with
      ``p_g`` the sensitive question, else an unrelated one (``unrelated``, a binary variable
      of unknown share), ``Pr(yes | g) = p_g pi + (1 - p_g) pi_u``;
    * ``cdm``: the cheating-detection model (Clark and Desharnais 1998): with ``p_g`` a forced
      yes, else the truth; cheaters say no whatever they draw: ``Pr(yes | g) = pi + p_g beta``
      (``beta`` the honest non-carriers, ``gamma = 1 - pi - beta`` the cheaters);
    * ``sld``: the stochastic lie detector (Moshagen et al. 2010): a non-carrier says no with
      ``p_g``, a carrier yes if honest (share ``t``): ``Pr(yes | g) = pi t + (1 - pi)(1 - p_g)``.
    """

    name: str | None
    variable: Variable
    design: str
    p1: sympy.Expr
    p2: sympy.Expr
    group: Variable
    unrelated: Variable | None = None
    span: Span | None = field(default=None, compare=False)
    family = "two_group"
    is_finite = False

    @property
    def kind(self) -> str:
        return self.design

    @property
    def variables(self) -> tuple[Variable, ...]:
        return (self.variable,)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns of its reports: the answer and the group."""
        return (self.variable.name, self.group.name)


def _binary(ctx: Context, node: ast.Node, mech: str, what: str) -> Variable | None:
    var = categorical_variable(ctx, node, mech)
    if var is not None and var.p != 2:
        ctx.error("E405", f"{mech}() needs a binary {what}; {var.name} has {var.p} categories", node.span,
                  "two categories, the first meaning yes" if what != "group" else
                  "two groups, the first randomized with p1, the second with p2")
        return None
    return var


def build_two_group(ctx: Context, call: ast.Call, name: str | None) -> TwoGroupResponse | None:
    """``cdm(Y, p1 = a, p2 = b, group = G)`` and ``sld``, ``uqm`` (with ``unrelated = U``):
    binary Y and G, two different probabilities (else the two groups' equations are one:
    E305), the group another variable than Y."""
    bound = bind_variable(ctx, call, categorical_variable, ("p1", "p2"))
    if bound is None:
        return None
    args, var, values = bound
    if _binary(ctx, args["variable"], call.name, "variable") is None:
        return None
    group = _binary(ctx, args["group"], call.name, "group")
    unrelated = _binary(ctx, args["unrelated"], call.name, "unrelated question") if "unrelated" in args else None
    if group is None or ("unrelated" in args and unrelated is None):
        return None
    p1, p2 = values["p1"], values["p2"]
    if p1.is_number and p2.is_number and sympy.simplify(p1 - p2) == 0:
        ctx.error("E305", f"{call.name}()'s two groups are randomized alike (p1 = p2 = {fmt(p1)}): their answers "
                          "cannot tell the design's two unknowns apart", args["p2"].span,
                  "give the groups different probabilities, e.g. p1 = 0.3, p2 = 0.7")
        return None
    if len({v.name for v in (var, group, unrelated) if v is not None}) < 2 + (unrelated is not None):
        ctx.error("E205", f"{call.name}()'s answer, group and unrelated question are different variables",
                  call.span)
        return None
    return TwoGroupResponse(name, var, call.name, p1, p2, group, unrelated, call.span)


#: the local-DP frequency oracles of one variable (docs/oracles.md); l_*: longitudinal forms
ORACLES = ("sue", "oue", "blh", "olh", "ss", "hr", "adp", "l_grr", "l_sue", "l_oue", "l_osue")


def build_oracle(ctx: Context, call: ast.Call, name: str | None) -> FrequencyOracle | None:
    """``sue(X, epsilon = e)`` and the other frequency oracles: a categorical variable of at
    least 2 categories, epsilon > 0, a hash range g >= 2 (olh), a subset size 1 <= k < d
    (ss), and for a longitudinal form 0 < first < epsilon."""
    protocol = call.name
    bound = bind_variable(ctx, call, categorical_variable, ("epsilon", "g", "k", "first"))
    if bound is None:
        return None
    args, var, values = bound
    eps, g, k, first = values["epsilon"], values.get("g"), values.get("k"), values.get("first")
    if var.p < 2:
        ctx.error("E405", f"{protocol}() needs at least 2 categories; {var.name} has {var.p}", args["variable"].span)
        return None
    if k is not None and k >= var.p:
        ctx.error("E309", f"the subset size k must be below the number of categories ({var.p}), found {k}",
                  args["k"].span, f"ss reports k of {var.name}'s {var.p} categories: 1 <= k <= {var.p - 1}")
        return None
    if first is not None and (compare(first, eps) or 0) >= 0:
        ctx.error("E304", f"first (the privacy of one collection) must be below epsilon (that of every "
                          f"collection together), found first = {fmt(first)} >= epsilon = {fmt(eps)}",
                  args["first"].span, "memoization: the permanent report spends epsilon once; each collection "
                                      "re-randomizes it at first < epsilon")
        return None
    if protocol == "l_oue" and first is not None:
        # p2 = 1/2 leaves one report at most log((2 e^eps + 1)/3)-private (Arcolezi et al.)
        ceiling = sympy.log((2 * sympy.exp(eps) + 1) / 3)
        if (compare(first, ceiling) or 0) > 0:
            ctx.error("E304", f"l_oue's first must be at most log((2 e^epsilon + 1)/3) = {float(ceiling):.6g} "
                              f"at epsilon = {fmt(eps)}, found {fmt(first)}", args["first"].span,
                      "its instantaneous response keeps the permanent 1-bit with probability 1/2; use l_osue "
                      "or a smaller first")
            return None
    return FrequencyOracle(name, var, protocol, eps, sympy.Integer(g) if g is not None else None,
                           sympy.Integer(k) if k is not None else None, first, call.span)


#: the oracles an spl/smp attribute may use (written without epsilon: the protocol's budget)
ATTRIBUTE_ORACLES = ("grr", "sue", "oue", "blh", "olh", "ss", "hr", "adp")


def _keyword_args(ctx: Context, call: ast.Call, allowed: tuple[str, ...]) -> dict[str, ast.Node] | None:
    """The keyword arguments of a call with variadic positional ones (E205 for an unknown
    or repeated option, with did-you-mean)."""
    out: dict[str, ast.Node] = {}
    for kw in call.keywords:
        key = kw.key.name if isinstance(kw.key, ast.Ref) else None
        if key is None or key not in allowed:
            shown = key or kw.key.text  # type: ignore[union-attr]
            ctx.error("E205", f"{call.name}() has no option '{shown}'", kw.key.span,
                      did_you_mean(shown, allowed) or f"options: {', '.join(allowed)}")
            return None
        if key in out:
            ctx.error("E205", f"'{key}' is given twice", kw.key.span)
            return None
        out[key] = kw.value
    return out


def _distinct_attributes(ctx: Context, call: ast.Call, nodes: list[ast.Node], variables: list[Variable]) -> bool:
    if len(variables) < 2:
        ctx.error("E205", f"{call.name}() collects at least two attributes", call.span,
                  "for one attribute use its oracle alone: oue(race, epsilon = 1)")
        return False
    repeated = repeated_component(zip(nodes, variables))
    if repeated is not None:
        c, node = repeated
        ctx.error("E205", f"variable {c} is collected twice by {call.name}()", node.span,
                  "each attribute is one variable, given once")
        return False
    return True


def build_multi_oracle(ctx: Context, call: ast.Call, name: str | None) -> MultiAttributeOracle | None:
    """``spl(oue(race), grr(gender), epsilon = 2)`` and ``smp(...)``: at least two oracles,
    each on its own categorical variable and written without epsilon (the protocol's
    budget), and the budget epsilon > 0."""
    sig = signature(call.name, "mechanism")
    kws = _keyword_args(ctx, call, ("epsilon",))
    if kws is None:
        return None
    if "epsilon" not in kws:
        ctx.error("E205", f"{call.name}() needs epsilon = ...", call.span, sig.usage)
        return None
    eps = ctx.number(kws["epsilon"], "epsilon")
    if eps is None or not check_positive(ctx, eps, kws["epsilon"], "epsilon"):
        return None
    kinds, variables, nodes = [], [], []
    for arg in call.positional:
        if not (isinstance(arg, ast.Call) and arg.name in ATTRIBUTE_ORACLES):
            found = arg.name if isinstance(arg, ast.Call) else None
            ctx.error("E205", f"{call.name}() takes an oracle per attribute, found "
                              f"{repr(found + '(...)') if found else describe(arg)}", arg.span,
                      (did_you_mean(found, ATTRIBUTE_ORACLES) if found else "") or
                      f"e.g. {call.name}(oue(race), grr(gender), epsilon = 2); oracles: {', '.join(ATTRIBUTE_ORACLES)}")
            return None
        if arg.keywords or len(arg.positional) != 1:
            ctx.error("E205", f"inside {call.name}() an oracle takes its variable only: {arg.name}(X)",
                      (arg.keywords[0].span if arg.keywords else arg.span),
                      f"the budget is {call.name}()'s epsilon (split or sampled among the attributes)")
            return None
        var = categorical_variable(ctx, arg.positional[0], arg.name)
        if var is None:
            return None
        kinds.append(arg.name)
        variables.append(var)
        nodes.append(arg)
    if not _distinct_attributes(ctx, call, nodes, variables):
        return None
    if call.name == "smp" and any(v.name == "sampled" for v in variables):
        ctx.error("E205", "smp() writes the sampled attribute in a column named 'sampled': no attribute may be "
                          "called so", call.span)
        return None
    return MultiAttributeOracle(name, call.name, tuple(kinds), tuple(variables), eps, None, call.span)


def build_rsfd(ctx: Context, call: ast.Call, name: str | None) -> MultiAttributeOracle | None:
    """``rsfd(race, gender, epsilon = 1, fake = grr)``: at least two categorical
    variables, epsilon > 0, a fake-data variant."""
    sig = signature("rsfd", "mechanism")
    kws = _keyword_args(ctx, call, ("epsilon", "fake"))
    if kws is None:
        return None
    if "epsilon" not in kws:
        ctx.error("E205", "rsfd() needs epsilon = ...", call.span, sig.usage)
        return None
    eps = ctx.number(kws["epsilon"], "epsilon")
    if eps is None or not check_positive(ctx, eps, kws["epsilon"], "epsilon"):
        return None
    fake = "grr"
    if "fake" in kws:
        node = kws["fake"]
        words = sig.param("fake").words
        if not (isinstance(node, ast.Ref) and node.name in words):
            shown = node.name if isinstance(node, ast.Ref) else describe(node)
            ctx.error("E205", f"unknown fake-data variant {shown!r}", node.span,
                      (did_you_mean(shown, words) if isinstance(node, ast.Ref) else "") or f"fake = {' | '.join(words)}")
            return None
        fake = node.name
    variables = []
    for arg in call.positional:
        var = categorical_variable(ctx, arg, "rsfd")
        if var is None:
            return None
        variables.append(var)
    if not _distinct_attributes(ctx, call, list(call.positional), variables):
        return None
    return MultiAttributeOracle(name, "rsfd", (fake,) * len(variables), tuple(variables), eps, fake, call.span)


def _matrix(ctx: Context, node: ast.Node, what: str = "matrix") -> list[list[tuple[sympy.Expr, ast.Node]]] | None:
    if isinstance(node, ast.Tagged) and node.tag.name == "matrix":
        node = node.body
    if not isinstance(node, ast.ListLit) or not all(isinstance(r, ast.ListLit) for r in node.items):
        ctx.error("E205", f"expected a {what} [[...], [...]], found {describe(node)}", node.span)
        return None
    rows = []
    for r in node.items:
        vals = [(ctx.number(x, "a matrix entry"), x) for x in r.items]  # type: ignore[union-attr]
        if any(v is None for v, _ in vals):
            return None
        rows.append(vals)
    return rows  # type: ignore[return-value]


#: largest matrix whose rank is found by elimination on fractions (d^3 steps); a larger one,
#: or one with an irrational entry, by sympy's rank
_FRACTION_RANK_SIZE = 16


def _singular(matrix: tuple[tuple[sympy.Expr, ...], ...]) -> bool:
    """Whether a square matrix of numbers has a rank below its size (False when it holds a
    parameter's symbol).

    Rational entries are eliminated as fractions: building a sympy Matrix and asking its
    rank took 0.1 ms for a 2 x 2, per ``rr`` declaration of a long spec.

    Examples
    --------
    >>> half, third = sympy.Rational(1, 2), sympy.Rational(1, 3)
    >>> _singular(((half, half), (half, half))), _singular(((half, half), (third, 1 - third)))
    (True, False)
    """
    n = len(matrix)
    if n <= _FRACTION_RANK_SIZE and all(isinstance(x, sympy.Rational) for row in matrix for x in row):
        rows = [[Fraction(int(x.p), int(x.q)) for x in row] for row in matrix]
        rank = 0
        for col in range(n):
            pivot = next((i for i in range(rank, n) if rows[i][col]), None)
            if pivot is None:
                continue
            rows[rank], rows[pivot] = rows[pivot], rows[rank]
            for i in range(rank + 1, n):
                factor = rows[i][col] / rows[rank][col]
                if factor:
                    rows[i] = [a - factor * b for a, b in zip(rows[i], rows[rank])]
            rank += 1
        return rank < n
    m = sympy.Matrix(matrix)
    return all(x.is_number for x in m) and m.rank(simplify=True) < n


def build_rr(ctx: Context, call: ast.Call, name: str | None) -> RandomizedResponse | None:
    args = bind(ctx, call, signature("rr", "mechanism"))
    if args is None:
        return None
    var = categorical_variable(ctx, args["variable"], "rr")
    rows = _matrix(ctx, args["matrix"])
    if var is None or rows is None:
        return None
    span = args["matrix"].span
    n = len(rows)
    if any(len(r) != n for r in rows):
        widths = sorted({len(r) for r in rows})
        ctx.error("E305", f"the randomization matrix is not square ({n} rows, rows of length "
                          f"{', '.join(map(str, widths))})", span, "P[u][v] = Pr(Y = v | X = u) is d x d")
        return None
    if n != var.p:
        ctx.error("E305", f"the matrix is {n}x{n} but {var.name} has {var.p} categories", span,
                  "one row and one column per category, in declared order")
        return None
    ok = True
    for i, r in enumerate(rows):
        for v, node in r:
            ok &= check_probability(ctx, v, node.span, "matrix entry")
        if not ok:
            continue
        good, total = sums_to_one([v for v, _ in r])
        if good is False:
            row_node = args["matrix"].body.items[i] if isinstance(args["matrix"], ast.Tagged) else args["matrix"].items[i]
            ctx.error("E306", f"row {i + 1} ({var.labels[i]}) of the matrix sums to {fmt(total)}, not 1",
                      row_node.span, "the matrix must be row-stochastic: each row is Pr(Y = . | X = u)")
            ok = False
    if not ok:
        return None
    matrix = tuple(tuple(v for v, _ in r) for r in rows)
    if _singular(matrix):
        ctx.warn("W101", "the randomization matrix is singular: the distribution is not identifiable",
                 span, "use a nonsingular matrix (e.g. grr(X, epsilon = 1))")
    return RandomizedResponse(name, var, matrix=matrix, span=call.span)
