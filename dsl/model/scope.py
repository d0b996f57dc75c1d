"""The resolver's working context: names in scope, diagnostics, and the small
helpers every declaration needs (numbers, labels, variables, call arguments).
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import sympy
from sympy.core.evalf import PrecisionExhausted

from privspec.language import arith
from privspec.language.arith import fmt
from privspec.language import ast
from privspec.model import costs
from privspec.errors import ERROR, WARNING, Diagnostic, did_you_mean
from privspec.model.graph import Parameter, Variable
from privspec.language.source import Span



def sign(x: sympy.Expr) -> int | None:
    """-1, 0 or 1 for a real expression; None when undecidable (symbolic)."""
    if isinstance(x, sympy.Rational):
        return int(x.p > 0) - int(x.p < 0)
    if x is sympy.oo:
        return 1
    if x is -sympy.oo:
        return -1
    if x.is_number:
        return _numeric_sign(x)
    if x.is_positive:
        return 1
    if x.is_negative:
        return -1
    if x.is_zero:
        return 0
    return None


@functools.lru_cache(maxsize=1024)
def _numeric_sign(x: sympy.Expr) -> int | None:
    """The sign of a closed number by 50-digit evaluation; cached, as a spec repeats its
    constants (``epsilon = log(3)`` in every mechanism)."""
    try:
        v = sympy.N(x, 50)
        if not v.is_real:  # the parser refuses complex numbers; be safe anyway
            return None
        if abs(v) < sympy.Float("1e-40", 50):
            return 0
        return 1 if v > 0 else -1
    except (OverflowError, ValueError, TypeError, PrecisionExhausted, RecursionError):
        return None


def compare(x: sympy.Expr, y: sympy.Expr) -> int | None:
    """Sign of x - y (infinities handled), None when undecidable."""
    if isinstance(x, sympy.Rational) and isinstance(y, sympy.Rational):
        # integers only: the common case (probabilities against 0 and 1) without sympy's
        # arithmetic, which was most of resolving a long spec
        a, b = x.p * y.q, y.p * x.q
        return int(a > b) - int(a < b)
    if x == y:
        return 0
    if arith.infinite(x) or arith.infinite(y):
        if x is sympy.oo or y is -sympy.oo:
            return 1
        if x is -sympy.oo or y is sympy.oo:
            return -1
    if x.is_number and y.is_number:
        return sign(x - y)  # evaluated: expanding (1/3 + pi)^99 first would take minutes
    return sign(sympy.expand(x - y))


@dataclass
class Declared:
    kind: str
    value: Any
    span: Span


class Context:
    """Names in scope and the diagnostics found so far."""

    def __init__(self, all_declared: dict[str, Span], poisoned: set[str]):
        self.scope: dict[str, Declared] = {}
        self.all_declared = all_declared   # every name declared anywhere, first position
        self.poisoned = poisoned           # names of declarations that failed to parse
        self.diagnostics: list[Diagnostic] = []
        self.parameters: dict[str, Parameter] = {}
        self._combined: dict[tuple[str, ...], Variable] = {}

    # -- diagnostics ---------------------------------------------------------------
    def error(self, code: str, message: str, span: Span | None, hint: str = "") -> None:
        self.diagnostics.append(Diagnostic(code, message, span, hint, ERROR))

    def warn(self, code: str, message: str, span: Span | None, hint: str = "") -> None:
        self.diagnostics.append(Diagnostic(code, message, span, hint, WARNING))

    # -- names -----------------------------------------------------------------------
    def declare(self, ref: ast.Ref, kind: str, value: Any) -> None:
        if ref.name in self.scope:
            first = self.scope[ref.name]
            self.error("E202", f"'{ref.name}' is already declared (as a {first.kind})", ref.span,
                       "choose another name; every variable, parameter, mechanism, release, query "
                       "and comparison needs its own")
            return
        self.scope[ref.name] = Declared(kind, value, ref.span)

    def names_of(self, kinds: Sequence[str]) -> list[str]:
        return [n for n, d in self.scope.items() if d.kind in kinds]

    def lookup(self, ref: ast.Ref, kinds: Sequence[str], extra: Iterable[str] = ()) -> Any:
        """The declared object ``ref`` names if it is one of ``kinds``, else a diagnostic."""
        found = self.scope.get(ref.name)
        wanted = " or ".join(kinds)
        if found is not None:
            if found.kind in kinds:
                return found.value
            self.error("E204", f"'{ref.name}' is a {found.kind}, expected a {wanted}", ref.span,
                       _suggest(ref.name, self.names_of(kinds), wanted))
            return None
        if ref.name in self.poisoned:
            return None  # its declaration already has a syntax error
        later = self.all_declared.get(ref.name)
        if later is not None and later.start > ref.span.start:
            self.error("E203", f"'{ref.name}' is used before its declaration", ref.span,
                       f"move the declaration of '{ref.name}' above this line")
            return None
        hint = did_you_mean(ref.name, list(self.names_of(kinds)) + list(extra))
        self.error("E201", f"unknown {wanted} '{ref.name}'", ref.span,
                   hint or (f"declare it first: {_declaration_example(kinds[0], ref.name)}"))
        return None

    # -- values -------------------------------------------------------------------------
    def number(self, node: ast.Node, what: str = "a number") -> sympy.Expr | None:
        """Evaluate exact arithmetic; parameter names become their sympy symbols.

        Arithmetic on parameters is priced like the parser's on numbers
        (:mod:`privspec.language.arith`), and once more at the values of the parameters that have
        one: the back ends substitute them, so ``a^1000000`` with ``parameter a = 2``
        must be refused here, not hang there.
        """
        got = self._number(node, what)
        return None if got is None else got[0]

    def _number(self, node: ast.Node, what: str) -> tuple[sympy.Expr, sympy.Expr | None] | None:
        """``(expression, value)``: the value has the parameters' values substituted (None
        while some parameter in it has no value)."""
        if isinstance(node, ast.Num):
            return node.value, node.value
        if isinstance(node, ast.Ref):
            found = self.scope.get(node.name)
            if found is not None and found.kind == "parameter":
                param = found.value
                return param.symbol, param.value
            if found is None and node.name not in self.poisoned and node.name not in self.all_declared:
                self.error("E201", f"unknown name '{node.name}' where {what} is expected", node.span,
                           did_you_mean(node.name, self.names_of(["parameter"]))
                           or f"numbers are exact (1/3, 0.25, log(3)); a symbol needs "
                              f"'parameter {node.name}' first")
                return None
            self.lookup(node, ["parameter"])
            return None
        if isinstance(node, ast.Neg):
            x = self._number(node.operand, what)
            return None if x is None else (-x[0], None if x[1] is None else -x[1])
        if isinstance(node, ast.BinOp):
            a, b = self._number(node.left, what), self._number(node.right, what)
            if a is None or b is None:
                return None
            return self._fold(node, arith.binary, node.op, (a[0], b[0]), (a[1], b[1]))
        if isinstance(node, ast.Call) and node.name in arith.FUNCTIONS and len(node.args) == 1:
            x = self._number(node.args[0], what)
            if x is None:
                return None
            return self._fold(node, arith.call, node.name, (x[0],), (x[1],))
        self.error("E205", f"expected {what}, found {describe(node)}", node.span)
        return None

    def _fold(self, node: ast.Node, fn, op: str, exprs: tuple, values: tuple
              ) -> tuple[sympy.Expr, sympy.Expr | None] | None:
        try:
            expr = fn(op, *exprs)
        except arith.Refused as e:
            self.error("E104", e.message, node.span, e.hint)
            return None
        if any(v is None for v in values):
            return expr, None
        if expr.is_number:
            return expr, expr
        try:
            return expr, fn(op, *values)
        except arith.Refused as e:
            self.error("E104", f"{e.message} at the values given to the parameters", node.span, e.hint)
            return None

    def evaluated(self, expr: sympy.Expr) -> sympy.Expr:
        """``expr`` at the values of its parameters that have one (what the back ends compute
        with); unchanged when it has no symbols.  Safe: :meth:`number` priced that value."""
        if not getattr(expr, "free_symbols", None):
            return expr
        values = {p.symbol: p.value for p in self.parameters.values() if p.value is not None}
        return expr.subs(values) if values else expr

    def integer(self, node: ast.Node, what: str, minimum: int | None = None) -> int | None:
        x = self.number(node, what)
        if x is None:
            return None
        if not (isinstance(x, sympy.Integer) or (isinstance(x, sympy.Rational) and x.q == 1)):
            self.error("E205", f"{what} must be a whole number, found {fmt(x)}", node.span)
            return None
        if minimum is not None and int(x) < minimum:
            self.error("E309", f"{what} must be at least {minimum}, found {x}", node.span)
            return None
        return int(x)

    def integer_or_parameter(self, node: ast.Node, what: str) -> int | sympy.Symbol | None:
        """A whole number, or the symbol of a parameter that has no value yet (a design
        parameter that a comparison searches over its whole numbers); a parameter with a
        value gives its value."""
        if isinstance(node, ast.Ref):
            found = self.scope.get(node.name)
            if found is not None and found.kind == "parameter" and found.value.value is None:
                return found.value.symbol
        got = self._number(node, what)
        if got is None:
            return None
        x = got[1] if got[1] is not None else got[0]
        if not (isinstance(x, sympy.Integer) or (isinstance(x, sympy.Rational) and x.q == 1)):
            self.error("E205", f"{what} must be a whole number, found {fmt(x)}", node.span,
                       "a parameter without a value stands alone here (sizes {k: 1})")
            return None
        return int(x)

    def label(self, node: ast.Node) -> str | None:
        if isinstance(node, ast.Ref):
            return node.name
        if isinstance(node, (ast.Str, ast.Dotted)):
            return node.text
        self.error("E205", f"expected a category label, found {describe(node)}", node.span,
                   'labels are names or double-quoted strings ("Amer-Indian-Eskimo")')
        return None

    def domain_label(self, node: ast.Node, variable: Variable) -> str | None:
        """A label that must belong to ``variable``'s categories."""
        lab = self.label(node)
        if lab is None:
            return None
        if lab not in variable.labels:
            hint = did_you_mean(lab, variable.labels) or \
                f"the categories of {variable.name} are {{{', '.join(variable.labels)}}}"
            self.error("E307", f"'{lab}' is not a category of {variable.name}", node.span, hint)
            return None
        return lab

    def variable(self, node: ast.Node, role: str = "a variable") -> Variable | None:
        """A declared variable, or ``a * b * c`` (an implicit combined variable)."""
        if isinstance(node, ast.Ref):
            return self.lookup(node, ["variable"])
        if isinstance(node, ast.BinOp) and node.op == "*":
            parts = [self.variable(p, role) for p in factors(node)]
            if any(p is None for p in parts):
                return None
            return self.combine(parts, None, node.span)  # type: ignore[arg-type]
        self.error("E205", f"expected {role}, found {describe(node)}", node.span)
        return None

    def combine(self, parts: list[Variable], name: str | None, span: Span) -> Variable | None:
        """The combined variable of categorical ``parts`` (section II-D)."""
        bad = [p for p in parts if not p.is_categorical]
        if bad:
            self.error("E401", f"only categorical variables can be combined; {bad[0].name} is continuous", span)
            return None
        names = [c for p in parts for c in p.components()]
        dup = {c for c in names if names.count(c) > 1}
        if dup:
            self.error("E205", f"variable {sorted(dup)[0]} appears twice in this combination", span)
            return None
        key = tuple(names)
        if name is None and key in self._combined:
            return self._combined[key]
        # priced before its labels are built: 40 binary parts would make 2^40 of them
        refusal = costs.combined_refusal(parts, name or " * ".join(p.name for p in parts))
        if refusal is not None:
            self.error(refusal.code, refusal.message, span, refusal.hint)
            return None
        labels = tuple(".".join(t) for t in itertools.product(*(p.labels for p in parts)))
        var = Variable(name or "*".join(p.name for p in parts), "categorical", labels,
                       parts=tuple(names), span=span)
        if name is None:
            self._combined[key] = var
        return var

    # -- call arguments -------------------------------------------------------------------
    def bind(self, call: ast.Call, positional: Sequence[str], required: Sequence[str] = (),
             keywords: Sequence[str] = (), usage: str = "") -> dict[str, ast.Node] | None:
        """Match a call's arguments to parameter names; report what does not fit."""
        out: dict[str, ast.Node] = {}
        ok = True
        pos = call.positional
        for a in pos:
            if isinstance(a, ast.Phrase):  # `subset(color uniform)` parses as a two-word phrase
                first, second = a.words
                self.error("E205", f"{call.name}() does not take two words side by side: "
                                   f"'{first.name} {second.name}'", a.span,
                           f"is a comma missing? write '{first.name}, {second.name}'")
                return None
        for name, node in zip(positional, pos):
            out[name] = node
        if len(pos) > len(positional):
            extra = pos[len(positional)]
            self.error("E205", f"{call.name}() takes {len(positional)} positional argument"
                               f"{'s' if len(positional) != 1 else ''}, found {len(pos)}",
                       extra.span, usage)
            ok = False
        allowed = list(positional) + list(keywords)
        for kw in call.keywords:
            key = kw.key.name if isinstance(kw.key, ast.Ref) else None
            if key is None or key not in allowed:
                shown = key or kw.key.text  # type: ignore[union-attr]
                self.error("E205", f"{call.name}() has no option '{shown}'", kw.key.span,
                           did_you_mean(shown, allowed) or (f"options: {', '.join(allowed)}" if allowed else usage))
                ok = False
            elif key in out:
                self.error("E205", f"'{key}' is given twice", kw.key.span, usage)
                ok = False
            else:
                out[key] = kw.value
        for name in required:
            if name not in out:
                self.error("E205", f"{call.name}() needs its {name.replace('_', ' ')}", call.span, usage)
                ok = False
        return out if ok else None


def factors(node: ast.Node) -> list[ast.Node]:
    """The operands of ``a * b * c`` (a combined variable), left to right."""
    if isinstance(node, ast.BinOp) and node.op == "*":
        return factors(node.left) + factors(node.right)
    return [node]


def _suggest(name: str, candidates: list[str], wanted: str) -> str:
    return did_you_mean(name, candidates) or (f"declared {wanted}s: {', '.join(candidates)}" if candidates
                                              else f"no {wanted} is declared yet")


def _declaration_example(kind: str, name: str) -> str:
    return {
        "variable": f"variable {name}: categorical {{a, b, c, d}}",
        "parameter": f"parameter {name} > 0",
        "mechanism": f"mechanism {name} = subset(VARIABLE, uniform)",
        "release": f"release {name} = counts(VARIABLE) with geometric(epsilon = 1)",
    }.get(kind, f"{kind} {name} = ...")


def describe(node: ast.Node) -> str:
    """A few words naming what a node is, for messages."""
    if isinstance(node, ast.Num):
        return f"the number {fmt(node.value)}"
    if isinstance(node, ast.Ref):
        return f"the name '{node.name}'"
    if isinstance(node, ast.Str):
        return f'the label "{node.text}"'
    if isinstance(node, ast.Call):
        return f"a call of {node.name}()"
    if isinstance(node, ast.Tagged):
        return f"a '{node.tag.name}' block"
    if isinstance(node, ast.Braced):
        return "a { } block"
    if isinstance(node, ast.ListLit):
        return "a [ ] list"
    if isinstance(node, ast.Qualified):
        return "an estimator (... from ... by ...)"
    return "an expression"
