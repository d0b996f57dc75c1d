"""The abstract syntax tree: frozen dataclasses, each with the span it came from.

Each class lists its ``__slots__`` (no per-node ``__dict__``): the parser makes tens of
thousands of nodes for a long spec, and a slotted node is about twice as fast to build
and is one object, not two, for the garbage collector to track.  They are written out
rather than asked of ``dataclass(slots=True)``, which builds every class twice at import.

Values are generic (numbers, names, calls, tagged blocks, sets, maps, lists); the
resolver (:mod:`privspec.model.resolve`) decides what a call means in its position.
Arithmetic on constants is already folded into exact sympy numbers (:class:`Num`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import sympy

from privspec.language.source import Span


class _Slotted:
    """What a slotted frozen class needs to be copied and pickled: rebuilt by its
    constructor (the default, which sets each slot, is refused by ``frozen``)."""

    __slots__ = ()

    def __reduce__(self) -> tuple:
        return type(self), tuple(getattr(self, name) for name in self.__slots__)


# ---- values ---------------------------------------------------------------------
@dataclass(frozen=True)
class Num(_Slotted):
    """An exact constant (``1/3``, ``log(3)``, ``inf``) already folded by the parser."""

    __slots__ = ("value", "span")
    value: sympy.Expr
    span: Span


@dataclass(frozen=True)
class Ref(_Slotted):
    """A bare name: a variable, parameter, mechanism, label or keyword-like option."""

    __slots__ = ("name", "span")
    name: str
    span: Span


@dataclass(frozen=True)
class Str(_Slotted):
    """A double-quoted label."""

    __slots__ = ("text", "span")
    text: str
    span: Span


@dataclass(frozen=True)
class Dotted(_Slotted):
    """A combined-variable label such as ``Female.Low``."""

    __slots__ = ("parts", "span")
    parts: tuple[str, ...]
    span: Span

    @property
    def text(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True)
class BinOp(_Slotted):
    """Arithmetic that could not be folded (it involves a name): ``+ - * / ^``."""

    __slots__ = ("op", "left", "right", "span")
    op: str
    left: "Node"
    right: "Node"
    span: Span


@dataclass(frozen=True)
class Neg(_Slotted):
    __slots__ = ("operand", "span")
    operand: "Node"
    span: Span


@dataclass(frozen=True)
class KwArg(_Slotted):
    """``key = value`` inside a call; the key is a name, a quoted or a dotted label."""

    __slots__ = ("key", "value", "span")
    key: Union[Ref, Str, Dotted]
    value: "Node"
    span: Span


@dataclass(frozen=True)
class Formula(_Slotted):
    """``life ~ gdp + gni`` (a regression formula)."""

    __slots__ = ("lhs", "rhs", "span")
    lhs: "Node"
    rhs: "Node"
    span: Span


@dataclass(frozen=True)
class Phrase(_Slotted):
    """Two words side by side, as in ``budget(per variable)``."""

    __slots__ = ("words", "span")
    words: tuple[Ref, ...]
    span: Span


@dataclass(frozen=True)
class Qualified(_Slotted):
    """An estimand with clauses: ``distribution(color) from urn by mom``."""

    __slots__ = ("value", "source", "method", "calibrate", "span")
    value: "Node"
    source: Ref | None
    method: "Node | None"
    calibrate: "Node | None"
    span: Span


@dataclass(frozen=True)
class Call(_Slotted):
    """``name(args...)``; positional and keyword arguments kept in source order."""

    __slots__ = ("func", "args", "span")
    func: Ref
    args: tuple["Node", ...]
    span: Span

    @property
    def name(self) -> str:
        return self.func.name

    @property
    def positional(self) -> tuple["Node", ...]:
        return tuple(a for a in self.args if not isinstance(a, KwArg))

    @property
    def keywords(self) -> tuple[KwArg, ...]:
        return tuple(a for a in self.args if isinstance(a, KwArg))


@dataclass(frozen=True)
class ListLit(_Slotted):
    """``[a, b, ...]``; a matrix is a list of lists."""

    __slots__ = ("items", "span")
    items: tuple["Node", ...]
    span: Span


@dataclass(frozen=True)
class Entry(_Slotted):
    """``key: value`` inside braces."""

    __slots__ = ("key", "value", "span")
    key: "Node"
    value: "Node"
    span: Span


@dataclass(frozen=True)
class Braced(_Slotted):
    """``{...}``: a set of labels (items) or a map (entries); the resolver checks which."""

    __slots__ = ("items", "span")
    items: tuple["Node", ...]
    span: Span

    @property
    def entries(self) -> tuple[Entry, ...]:
        return tuple(i for i in self.items if isinstance(i, Entry))

    @property
    def is_map(self) -> bool:
        return bool(self.items) and all(isinstance(i, Entry) for i in self.items)

    @property
    def is_set(self) -> bool:
        return not any(isinstance(i, Entry) for i in self.items)


@dataclass(frozen=True)
class Tagged(_Slotted):
    """A keyword followed by a block: ``conditional {...}``, ``matrix [[...]]``."""

    __slots__ = ("tag", "body", "span")
    tag: Ref
    body: Union[Braced, ListLit]
    span: Span


Node = Union[Num, Ref, Str, Dotted, BinOp, Neg, KwArg, Formula, Phrase, Qualified, Call,
             ListLit, Entry, Braced, Tagged]


# ---- declarations -----------------------------------------------------------------
@dataclass(frozen=True)
class SpecTitle(_Slotted):
    __slots__ = ("title", "span")
    title: str
    span: Span


@dataclass(frozen=True)
class CategoricalDecl(_Slotted):
    __slots__ = ("name", "labels", "span")
    name: Ref
    labels: tuple[Union[Ref, Str, Dotted], ...]
    span: Span


@dataclass(frozen=True)
class ContinuousDecl(_Slotted):
    __slots__ = ("name", "bounds", "span")
    name: Ref
    bounds: tuple[Node, Node] | None
    span: Span


@dataclass(frozen=True)
class CombinedDecl(_Slotted):
    """``variable gi = gender * income``."""

    __slots__ = ("name", "expr", "span")
    name: Ref
    expr: Node
    span: Span


@dataclass(frozen=True)
class ParameterDecl(_Slotted):
    __slots__ = ("name", "constraints", "value", "span")
    name: Ref
    constraints: tuple[tuple[str, Node], ...]
    value: Node | None
    span: Span


@dataclass(frozen=True)
class PopulationDecl(_Slotted):
    __slots__ = ("targets", "law", "span")
    targets: tuple[Ref, ...]
    law: Node
    span: Span


@dataclass(frozen=True)
class MechanismDecl(_Slotted):
    __slots__ = ("name", "value", "span")
    name: Ref
    value: Node
    span: Span


@dataclass(frozen=True)
class ReleaseDecl(_Slotted):
    __slots__ = ("name", "table", "noise", "protect", "totals", "span")
    name: Ref
    table: Node
    noise: tuple[Node, ...]
    protect: tuple[Node, ...]
    totals: tuple[tuple[Ref, ...], ...]
    span: Span


@dataclass(frozen=True)
class QueryDecl(_Slotted):
    """``query NAME = [estimate|test] VALUE [from M] [by METHOD] [calibrate C]``."""

    __slots__ = ("name", "verb", "body", "source", "method", "calibrate", "span")
    name: Ref
    verb: str | None
    body: Node
    source: tuple[Ref, ...]
    method: tuple[Node, ...]
    calibrate: tuple[Node, ...]
    span: Span


@dataclass(frozen=True)
class CompareDecl:
    """``compare NAME for ESTIMAND at SETTINGS target TARGETS { name = MECHANISM [by
    ESTIMATOR] ... } by CRITERIA``: candidates are (name, mechanism, estimator or None);
    targets (criterion, ``<=``/``<``/``>=``/``>``, value)."""

    name: Ref
    estimand: Node
    settings: tuple[tuple[Ref, Node], ...]
    candidates: tuple[tuple[Ref, Node, Node | None], ...]
    criteria: tuple[Node, ...]
    span: Span
    targets: tuple[tuple[Ref, str, Node], ...] = ()


Declaration = Union[SpecTitle, CategoricalDecl, ContinuousDecl, CombinedDecl, ParameterDecl,
                    PopulationDecl, MechanismDecl, ReleaseDecl, QueryDecl, CompareDecl]


def declared_name(decl: Declaration) -> Ref | None:
    """The name a declaration introduces (None for titles and populations)."""
    return getattr(decl, "name", None) if not isinstance(decl, (SpecTitle, PopulationDecl)) else None
