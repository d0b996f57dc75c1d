"""Lark tree -> AST: the parser's callbacks (:class:`ToAst`), which build
:mod:`privspec.language.ast` nodes with exact numbers folded as they are read (numeric
literals, arithmetic on numbers, quoted strings and their escapes).  A refusal inside them
(a number too long, arithmetic nested too deeply, an unknown escape) is a
:class:`BuildError` carrying its diagnostic; :mod:`privspec.language.parser` reports it.
"""
from __future__ import annotations

import contextvars
import dataclasses
import functools
import re

import sympy
from lark import Token, Transformer

from privspec.errors import Diagnostic
from privspec.language import arith
from privspec.language import ast
from privspec.language.source import Span

# Longest numeric literal (digits) and the largest power of ten it may carry.
_MAX_DIGITS = arith.MAX_DIGITS
#: Deepest arithmetic on names accepted (``a * b * c ...``): later passes recurse on it.
MAX_DEPTH = 100


class BuildError(Exception):
    """Raised inside the transformer; becomes a diagnostic."""

    def __init__(self, diagnostic: Diagnostic):
        self.diagnostic = diagnostic


def parse_number(text: str, span: Span) -> sympy.Rational:
    """An exact rational from a numeric literal (``0.25`` -> 1/4, ``2e-3`` -> 1/500)."""
    if len(text) > _MAX_DIGITS:
        raise BuildError(Diagnostic("E104", f"number {text[:12]}... has too many digits", span,
                                    f"numbers are limited to {_MAX_DIGITS} digits"))
    if text.isdigit():
        return sympy.Integer(int(text))
    mantissa, _, exponent = text.lower().partition("e")
    exp = int(exponent or 0)
    whole, _, frac = mantissa.partition(".")
    if abs(exp) > _MAX_DIGITS or len(whole.lstrip("0")) + exp > _MAX_DIGITS:
        raise BuildError(Diagnostic("E104", f"number {text} is out of range", span,
                                    f"numbers are limited to {_MAX_DIGITS} digits"))
    num = int((whole or "0") + frac)
    exp -= len(frac)
    value = sympy.Rational(num * 10**exp, 1) if exp >= 0 else sympy.Rational(num, 10**-exp)
    if arith.size_bits(value) > arith.MAX_BITS:  # many digits and a small exponent: 1.999...9e-2999
        raise BuildError(Diagnostic("E104", f"number {text[:12]}... is out of range", span,
                                    f"numbers are limited to {_MAX_DIGITS} digits"))
    return value


#: the folds themselves, remembered: a spec repeats its constants (``1/10``, ``log(3)``
#: in every block of a long one), and pricing and checking a fold costs more than the
#: lookup (``log(3)``'s check evaluates it to 30 digits).  Refusals are not remembered:
#: each raises again, where it is written.
_BINARY = functools.lru_cache(maxsize=4096)(arith.binary)
_CALL = functools.lru_cache(maxsize=4096)(arith.call)


def _fold(fn, span: Span, *args) -> sympy.Expr:
    """Fold exact arithmetic (:mod:`privspec.language.arith` prices it first), refusals as E104."""
    try:
        return fn(*args)
    except arith.Refused as e:
        raise BuildError(Diagnostic("E104", e.message, span, e.hint)) from None


#: a Span from a ``(start, end)`` pair without the named tuple's Python-level ``__new__``
#: (the builder makes one per token and node: ~60,000 for a 5,000-line spec)
_span = functools.partial(tuple.__new__, Span)


def _tspan(tok: Token, offset: int) -> Span:
    return _span((tok.start_pos + offset, tok.end_pos + offset))


#: the punctuation tokens that rules marked ``!`` keep for their spans, dropped from their values
_PUNCTUATION = frozenset({"LPAR", "RPAR", "LSQB", "RSQB", "LBRACE", "RBRACE", "COMMA", "MINUS"})


def _is_tok(x, *types: str) -> bool:
    return isinstance(x, Token) and (not types or x.type in types)


@dataclasses.dataclass
class ParseState:
    """What the AST builder needs to know about the declaration being parsed: ``offset``
    makes token spans absolute, ``decl_span`` is the declaration's span, ``depth`` maps
    id(BinOp or Neg) -> nesting depth (per declaration)."""

    offset: int = 0
    decl_span: Span = Span(0, 0)
    depth: dict[int, int] = dataclasses.field(default_factory=dict)


#: the state of the parse under way in this thread/task (:func:`parse_state` sets it;
#: a direct ``get_parser().parse(...)`` sees offset 0, as before)
_STATE: contextvars.ContextVar[ParseState] = contextvars.ContextVar("privspec_parse_state",
                                                                    default=ParseState())


class parse_state:  # noqa: N801 - used as a function: ``with parse_state(start, end):``
    """The builder's state while one declaration, ``start:end`` of its file, is parsed (a
    context variable set for this parse only: parses may nest or run in several threads on
    the one shared parser).  A class, not a ``contextlib.contextmanager`` generator: it is
    entered once per declaration, and the generator's machinery cost several times more.

    Examples
    --------
    >>> with parse_state(10, 20):
    ...     _STATE.get().offset, _STATE.get().decl_span
    (10, Span(start=10, end=20))
    >>> _STATE.get().offset
    0
    """

    __slots__ = ("_state", "_token")

    def __init__(self, start: int, end: int) -> None:
        self._state = ParseState(start, Span(start, end))

    def __enter__(self) -> None:
        self._token = _STATE.set(self._state)

    def __exit__(self, *exc: object) -> None:
        _STATE.reset(self._token)


class ToAst(Transformer):
    """Build :mod:`privspec.language.ast` nodes as the parser's callbacks (no parse tree is built).

    Spans come from tokens (rules marked ``!`` in the grammar keep their brackets).  The
    instance is shared by the cached parser and holds no state: ``offset``,
    ``decl_span`` and ``depth`` read the :class:`ParseState` of the parse under way
    (:func:`parse_statement`; a parse outside it sees offset 0).
    """

    def __init__(self) -> None:
        super().__init__(visit_tokens=False)

    @property
    def offset(self) -> int:
        return _STATE.get().offset

    @property
    def decl_span(self) -> Span:
        return _STATE.get().decl_span

    @property
    def depth(self) -> dict[int, int]:
        return _STATE.get().depth

    # -- helpers (the hot ones read the state directly) -------------------------------
    def _ref(self, tok: Token) -> ast.Ref:
        off = _STATE.get().offset
        return ast.Ref(str(tok), _span((tok.start_pos + off, tok.end_pos + off)))

    def _sp(self, x) -> Span:
        return _tspan(x, _STATE.get().offset) if isinstance(x, Token) else x.span

    def _cover(self, first, last) -> Span:
        """The span from ``first`` to ``last`` (tokens or nodes, in source order)."""
        off = _STATE.get().offset
        start = first.start_pos + off if isinstance(first, Token) else first.span.start
        end = last.end_pos + off if isinstance(last, Token) else last.span.end
        return _span((start, end))

    @staticmethod
    def _inner(c) -> list:
        """Children without the kept punctuation tokens."""
        return [x for x in c if not (isinstance(x, Token) and x.type in _PUNCTUATION)]

    # -- declarations ----------------------------------------------------------
    def spec_decl(self, c):
        return ast.SpecTitle(_unquote(c[0]), self.decl_span)

    def categorical_decl(self, c):
        return ast.CategoricalDecl(self._ref(c[0]), c[1], self.decl_span)

    def label_set(self, c):
        return tuple(self._inner(c))

    def continuous_decl(self, c):
        return ast.ContinuousDecl(self._ref(c[0]), c[1] if len(c) > 1 else None, self.decl_span)

    def bounds(self, c):
        a, b = self._inner(c)
        return (a, b)

    def combined_decl(self, c):
        return ast.CombinedDecl(self._ref(c[0]), c[1], self.decl_span)

    def parameter_decl(self, c):
        constraints = tuple(x for x in c[1:] if isinstance(x, tuple))
        value = [x for x in c[1:] if not isinstance(x, tuple)]
        return ast.ParameterDecl(self._ref(c[0]), constraints, value[0] if value else None, self.decl_span)

    def constraint(self, c):
        return (str(c[0]), c[1])

    def population_decl(self, c):
        return ast.PopulationDecl(c[0], c[1], self.decl_span)

    def pop_single(self, c):
        return (self._ref(c[0]),)

    def pop_joint(self, c):
        return tuple(self._ref(t) for t in c if _is_tok(t, "NAME"))

    def mechanism_decl(self, c):
        return ast.MechanismDecl(self._ref(c[0]), c[1], self.decl_span)

    def release_decl(self, c):
        noise = tuple(v for k, v in c[2:] if k == "with")
        protect = tuple(v for k, v in c[2:] if k == "protect")
        totals = tuple(v for k, v in c[2:] if k == "totals")
        return ast.ReleaseDecl(self._ref(c[0]), c[1], noise, protect, totals, self.decl_span)

    def with_clause(self, c):
        return ("with", c[0])

    def protect_clause(self, c):
        v = c[0]
        return ("protect", self._ref(v) if isinstance(v, Token) else v)

    def totals_clause(self, c):
        return ("totals", tuple(self._ref(t) for t in c))

    def query_decl(self, c):
        verb, body, quals = c[1]
        pick = lambda k: tuple(v for kk, v in quals if kk == k)  # noqa: E731
        return ast.QueryDecl(self._ref(c[0]), verb, body, pick("from"), pick("by"), pick("calibrate"),
                             self.decl_span)

    def estimate_query(self, c):
        return ("estimate", c[0], c[1:])

    def test_query(self, c):
        return ("test", c[0], c[1:])

    def plain_query(self, c):
        return (None, c[0], c[1:])

    def from_clause(self, c):
        return ("from", self._ref(c[0]))

    def by_clause(self, c):
        return ("by", c[0])

    def calibrate_clause(self, c):
        return ("calibrate", c[0])

    def compare_decl(self, c):
        name, estimand, rest = self._ref(c[0]), c[1], c[2:]
        settings: tuple = ()
        targets: tuple = ()
        criteria: tuple = ()
        entries = []
        for x in rest:
            if isinstance(x, tuple) and x and x[0] == "at":
                settings = x[1]
            elif isinstance(x, tuple) and x and x[0] == "target":
                targets = x[1]
            elif isinstance(x, tuple) and x and x[0] == "criteria":
                criteria = x[1]
            else:
                entries.append(x)
        return ast.CompareDecl(name, estimand, settings, tuple(entries), criteria, self.decl_span, targets)

    def at_clause(self, c):
        return ("at", tuple(c))

    def setting(self, c):
        return (self._ref(c[0]), c[1])

    def target_clause(self, c):
        return ("target", tuple(c))

    def target(self, c):
        return (self._ref(c[0]), str(c[1]), c[2])

    def compare_entry(self, c):
        return (self._ref(c[0]), c[1], c[2] if len(c) > 2 else None)

    def criteria(self, c):
        return ("criteria", tuple(c))

    # -- values ------------------------------------------------------------------
    def tagged(self, c):
        return ast.Tagged(self._ref(c[0]), c[1], self._cover(c[0], c[1]))

    def list(self, c):
        return ast.ListLit(tuple(self._inner(c)), self._cover(c[0], c[-1]))

    def braced(self, c):
        return ast.Braced(tuple(self._inner(c)), self._cover(c[0], c[-1]))

    def entry(self, c):
        return ast.Entry(c[0], c[1], self._cover(c[0], c[1]))

    def label(self, c):
        tok = c[0]
        if tok.type == "STRING":
            return ast.Str(_unquote(tok), self._sp(tok))
        return self._ref(tok)

    def string(self, c):
        return ast.Str(_unquote(c[0]), self._sp(c[0]))

    def dotted(self, c):
        return ast.Dotted(tuple(str(t) for t in c), self._cover(c[0], c[-1]))

    def argkey(self, c):
        if len(c) > 1:
            return ast.Dotted(tuple(str(t) for t in c), self._cover(c[0], c[-1]))
        tok = c[0]
        return ast.Str(_unquote(tok), self._sp(tok)) if tok.type == "STRING" else self._ref(tok)

    def kwarg(self, c):
        return ast.KwArg(c[0], c[1], self._cover(c[0], c[1]))

    def formula(self, c):
        return ast.Formula(c[0], c[1], self._cover(c[0], c[1]))

    def qualified(self, c):
        quals = c[1:]
        first = lambda k: next((v for kk, v in quals if kk == k), None)  # noqa: E731
        return ast.Qualified(c[0], first("from"), first("by"), first("calibrate"),
                             self._cover(c[0], quals[-1][1]))

    def phrase(self, c):
        return ast.Phrase((self._ref(c[0]), c[1]), self._cover(c[0], c[1]))

    def word(self, c):
        return self._ref(c[0])

    def call(self, c):
        func = self._ref(c[0])
        args = tuple(self._inner(c[1:]))
        span = self._cover(c[0], c[-1])
        if func.name in arith.FUNCTIONS and len(args) == 1 and isinstance(args[0], ast.Num):
            return ast.Num(_fold(_CALL, span, func.name, args[0].value), span)
        return ast.Call(func, args, span)

    # -- arithmetic ----------------------------------------------------------------
    def number(self, c):
        span = self._sp(c[0])
        return ast.Num(parse_number(str(c[0]), span), span)

    def ref(self, c):
        name = str(c[0])
        if name in arith.CONSTANTS:
            return ast.Num(arith.CONSTANTS[name], self._sp(c[0]))
        return self._ref(c[0])

    def _binary(self, op: str, c):
        a, b = c
        span = self._cover(a, b)
        if isinstance(a, ast.Num) and isinstance(b, ast.Num):
            return ast.Num(_fold(_BINARY, span, op, a.value, b.value), span)
        return self._deep(ast.BinOp(op, a, b, span), a, b)

    def _deep(self, node, *children):
        """Record the nesting depth of unfolded arithmetic; refuse it past MAX_DEPTH."""
        depth = 1 + max(self.depth.get(id(c), 0) for c in children)
        if depth > MAX_DEPTH:
            raise BuildError(Diagnostic("E104", "expression nested too deeply", node.span,
                                        f"arithmetic on names is limited to {MAX_DEPTH} levels"))
        self.depth[id(node)] = depth
        return node

    def add(self, c):
        return self._binary("+", c)

    def sub(self, c):
        return self._binary("-", c)

    def mul(self, c):
        return self._binary("*", c)

    def div(self, c):
        return self._binary("/", c)

    def pow(self, c):
        return self._binary("^", c)

    def neg(self, c):
        x = c[-1]
        span = self._cover(c[0], x)
        if isinstance(x, ast.Num):
            return ast.Num(-x.value, span)
        return self._deep(ast.Neg(x, span), x)

    def pos(self, c):
        return c[0]

    def paren(self, c):
        node = c[1]
        new = dataclasses.replace(node, span=self._cover(c[0], c[2]))
        depth = self.depth.pop(id(node), None)
        if depth is not None:
            self.depth[id(new)] = depth
        return new


def _unquote(tok: Token) -> str:
    """The text of a STRING token (its quotes off, escapes read: :func:`unescape`)."""
    return unescape(str(tok)[1:-1], tok.start_pos + _STATE.get().offset + 1)


_ESCAPE = re.compile(r"\\(.)", re.S)
#: what a quoted string's escapes are, for the hint of E106
ESCAPES_HINT = ('a quoted string has two escapes: \\" for a quote and \\\\ for a backslash; write a '
                'backslash doubled (C:\\\\data)')


def unescape(text: str, start: int) -> str:
    """The value of the inside ``text`` of a quoted string, which starts at offset ``start``
    of the source: ``\\"`` is a quote and ``\\\\`` a backslash; any other escape is E106,
    pointing at it (it used to drop the backslash: ``"\\input"`` read as ``input``).

    Examples
    --------
    >>> unescape('say \\\\"hi\\\\" C:\\\\\\\\d', 0)
    'say "hi" C:\\\\d'
    """
    if "\\" not in text:
        return text

    def one(m: re.Match) -> str:
        if m.group(1) in '"\\':
            return m.group(1)
        raise BuildError(Diagnostic("E106", f"unknown escape '\\{m.group(1)}' in a quoted string",
                                    Span(start + m.start(), start + m.end()), ESCAPES_HINT))

    return _ESCAPE.sub(one, text)
