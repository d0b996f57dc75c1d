"""The abstract syntax tree: frozen dataclasses, each with the span it came from.

Values are generic (numbers, names, calls, tagged blocks, sets, maps, lists); the
resolver (:mod:`privspec.model.resolve`) decides what a call means in its position.
Arithmetic on constants is already folded into exact sympy numbers (:class:`Num`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import sympy

from privspec.language.source import Span


# ---- values ---------------------------------------------------------------------
@dataclass(frozen=True)
class Num:
    """An exact constant (``1/3``, ``log(3)``, ``inf``) already folded by the parser."""

    value: sympy.Expr
    span: Span


@dataclass(frozen=True)
class Ref:
    """A bare name: a variable, parameter, mechanism, label or keyword-like option."""

    name: str
    span: Span


@dataclass(frozen=True)
class Str:
    """A double-quoted label."""

    text: str
    span: Span


@dataclass(frozen=True)
class Dotted:
    """A combined-variable label such as ``Female.Low``."""

    parts: tuple[str, ...]
    span: Span

    @property
    def text(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True)
class BinOp:
    """Arithmetic that could not be folded (it involves a name): ``+ - * / ^``."""

    op: str
    left: "Node"
    right: "Node"
    span: Span


@dataclass(frozen=True)
class Neg:
    operand: "Node"
    span: Span


@dataclass(frozen=True)
class KwArg:
    """``key = value`` inside a call; the key is a name, a quoted or a dotted label."""

    key: Union[Ref, Str, Dotted]
    value: "Node"
    span: Span


@dataclass(frozen=True)
class Formula:
    """``life ~ gdp + gni`` (a regression formula)."""

    lhs: "Node"
    rhs: "Node"
    span: Span


@dataclass(frozen=True)
class Phrase:
    """Two words side by side, as in ``budget(per variable)``."""

    words: tuple[Ref, ...]
    span: Span


@dataclass(frozen=True)
class Qualified:
    """An estimand with clauses: ``distribution(color) from urn by mom``."""

    value: "Node"
    source: Ref | None
    method: "Node | None"
    calibrate: "Node | None"
    span: Span


@dataclass(frozen=True)
class Call:
    """``name(args...)``; positional and keyword arguments kept in source order."""

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
class ListLit:
    """``[a, b, ...]``; a matrix is a list of lists."""

    items: tuple["Node", ...]
    span: Span


@dataclass(frozen=True)
class Entry:
    """``key: value`` inside braces."""

    key: "Node"
    value: "Node"
    span: Span


@dataclass(frozen=True)
class Braced:
    """``{...}``: a set of labels (items) or a map (entries); the resolver checks which."""

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
class Tagged:
    """A keyword followed by a block: ``conditional {...}``, ``matrix [[...]]``."""

    tag: Ref
    body: Union[Braced, ListLit]
    span: Span


Node = Union[Num, Ref, Str, Dotted, BinOp, Neg, KwArg, Formula, Phrase, Qualified, Call,
             ListLit, Entry, Braced, Tagged]


# ---- declarations -----------------------------------------------------------------
@dataclass(frozen=True)
class SpecTitle:
    title: str
    span: Span


@dataclass(frozen=True)
class CategoricalDecl:
    name: Ref
    labels: tuple[Union[Ref, Str, Dotted], ...]
    span: Span


@dataclass(frozen=True)
class ContinuousDecl:
    name: Ref
    bounds: tuple[Node, Node] | None
    span: Span


@dataclass(frozen=True)
class CombinedDecl:
    """``variable gi = gender * income``."""

    name: Ref
    expr: Node
    span: Span


@dataclass(frozen=True)
class ParameterDecl:
    name: Ref
    constraints: tuple[tuple[str, Node], ...]
    value: Node | None
    span: Span


@dataclass(frozen=True)
class PopulationDecl:
    targets: tuple[Ref, ...]
    law: Node
    span: Span


@dataclass(frozen=True)
class MechanismDecl:
    name: Ref
    value: Node
    span: Span


@dataclass(frozen=True)
class ReleaseDecl:
    name: Ref
    table: Node
    noise: tuple[Node, ...]
    protect: tuple[Node, ...]
    totals: tuple[tuple[Ref, ...], ...]
    span: Span


@dataclass(frozen=True)
class QueryDecl:
    """``query NAME = [estimate|test] VALUE [from M] [by METHOD] [calibrate C]``."""

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
