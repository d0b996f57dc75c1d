"""Deterministic, JSON-ready dumps of the AST and of the model graph.

Used by the golden tests (``tests/golden/*.json``) and handy for debugging: the dumps
say exactly what the parser and the resolver understood, with exact values written
as sympy's string form.

Conventions (the same for both dumps):

- a dataclass becomes an object whose first key ``"type"`` is its class name, then
  its fields in declaration order (a field marked ``metadata={"dump": "unless default"}``
  only where it is not its default: what most dumps never use stays out of them);
- sympy values become ``str(expr)`` (``1/4``, ``log(3)``, ``oo``), so exact values
  stay exact; Python ``int``, ``bool``, ``str`` and ``None`` are kept as they are;
- a frozenset becomes a list sorted by its elements' JSON text (deterministic
  whatever the hash seed); tuples and lists become lists;
- a mapping becomes an object in its own (declared) order when its keys are strings,
  else a list of ``[key, value]`` pairs;
- a :class:`~privspec.language.source.Span` becomes ``[[line, column], [end_line,
  end_column]]`` (1-based, the end just past the last character) when a source is
  available, else the offsets ``[start, end]``.

In the model dump a variable or mechanism that is declared by name in the spec is
written where it is used as a reference ``{"$ref": "#/variables/color"}`` (a JSON
pointer into the same dump); anonymous ones (``grr(gender * race * income, ...)``,
the factors of a product) are written in full.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, get_args

import sympy

from privspec.model.graph import Mechanism, ModelGraph, Variable
from privspec.language.source import Source, Span

__all__ = ["ast_to_dict", "model_to_dict", "dumps"]

JSON = Any  # dict | list | str | int | float | bool | None
_MECHANISMS = get_args(Mechanism)


def _span(span: Span, source: Source | None) -> JSON:
    if source is None:
        return [span.start, span.end]
    return [list(source.line_col(span.start)), list(source.line_col(span.end))]


def _sort_key(value: JSON) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class _Dumper:
    """Recursive conversion; ``refs`` maps (kind, name) to the objects declared by name."""

    def __init__(self, source: Source | None, refs: Mapping[tuple[str, str], object] | None = None):
        self.source = source
        self.refs = refs or {}
        self.skip_refs_for: object | None = None  # the object being written at its own place

    def _ref(self, obj: object) -> JSON | None:
        if obj is self.skip_refs_for or not self.refs:
            return None
        name = getattr(obj, "name", None)
        if not isinstance(name, str):
            return None
        kind = "variables" if isinstance(obj, Variable) else "mechanisms"
        declared = self.refs.get((kind, name))
        # equality (spans excluded) and not identity: a mechanism nested in a query is a
        # copy of the named one when the resolver rebuilt it
        if declared is not None and type(declared) is type(obj) and declared == obj:
            return {"$ref": f"#/{kind}/{name}"}
        return None

    def __call__(self, obj: Any) -> JSON:
        if obj is None or isinstance(obj, (bool, int, str)):
            return obj
        if isinstance(obj, float):
            return obj if obj == obj and obj not in (float("inf"), float("-inf")) else repr(obj)
        if isinstance(obj, sympy.Basic):
            return str(obj)
        if isinstance(obj, Span):
            return _span(obj, self.source)
        if isinstance(obj, Source):
            return obj.name
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            ref = self._ref(obj) if isinstance(obj, (Variable, *_MECHANISMS)) else None
            if ref is not None:
                return ref
            out: dict[str, JSON] = {"type": type(obj).__name__}
            for f in dataclasses.fields(obj):
                if f.name.startswith("_") or isinstance(getattr(obj, f.name), Source):
                    continue
                if f.metadata.get("dump") == "unless default" and getattr(obj, f.name) == f.default:
                    continue
                out[f.name] = self(getattr(obj, f.name))
            return out
        if isinstance(obj, Mapping):
            if all(isinstance(k, str) for k in obj):
                return {k: self(v) for k, v in obj.items()}
            return [[self(k), self(v)] for k, v in obj.items()]
        if isinstance(obj, (frozenset, set)):
            return sorted((self(x) for x in obj), key=_sort_key)
        if isinstance(obj, (tuple, list)):
            return [self(x) for x in obj]
        raise TypeError(f"cannot serialize {type(obj).__name__}: {obj!r}")


def ast_to_dict(node: Any, source: Source | None = None) -> JSON:
    """A JSON-ready dump of an AST node (or a list of declarations).

    Parameters
    ----------
    node : ast node, declaration, or a list/tuple of them
        What :func:`privspec.language.parser.parse_declarations` returned, or any part of it.
    source : Source, optional
        The text the spans point into; with it spans are written as ``[[line,
        column], [end_line, end_column]]``, without it as ``[start, end]`` offsets.

    Returns
    -------
    dict or list
        Nested dicts and lists of str, int, bool and None: ``json.dumps`` writes it
        as is, and the same input always gives the same output.

    Examples
    --------
    >>> from privspec.language.parser import parse_declarations
    >>> from privspec.model.serialize import ast_to_dict
    >>> from privspec.language.source import Source
    >>> src = Source("variable x: continuous [0, 1/4]")
    >>> decls, _, _ = parse_declarations(src)
    >>> d = ast_to_dict(decls[0], src)
    >>> d["type"], d["name"], d["bounds"][1]
    ('ContinuousDecl', {'type': 'Ref', 'name': 'x', 'span': [[1, 10], [1, 11]]}, {'type': 'Num', 'value': '1/4', 'span': [[1, 28], [1, 31]]})
    >>> ast_to_dict(decls[0].bounds[1])
    {'type': 'Num', 'value': '1/4', 'span': [27, 30]}
    """
    return _Dumper(source)(node)


def model_to_dict(model: ModelGraph, source: Source | None = None) -> dict[str, JSON]:
    """A JSON-ready dump of a model graph.

    Parameters
    ----------
    model : ModelGraph
        The model of a valid spec (``spec.model``).
    source : Source, optional
        The text the spans point into; ``model.source`` by default.

    Returns
    -------
    dict
        ``{"type": "ModelGraph", "title": ..., "variables": {...}, "parameters":
        {...}, "populations": [...], "mechanisms": {...}, "releases": {...},
        "queries": {...}, "compares": {...}}``, mappings in declared order.  Named
        variables and mechanisms used inside other objects are written as
        ``{"$ref": "#/variables/NAME"}`` or ``{"$ref": "#/mechanisms/NAME"}``.

    Examples
    --------
    >>> import privspec
    >>> from privspec.model.serialize import model_to_dict
    >>> spec = privspec.load('''
    ... variable color: categorical {black, red, green, blue}
    ... population color ~ categorical(0.25, 0.25, 1/4, 1/4)
    ... mechanism urn = subset(color, sizes {2: 1})
    ... ''')
    >>> d = model_to_dict(spec.model)
    >>> d["variables"]["color"]["labels"]
    ['black', 'red', 'green', 'blue']
    >>> d["populations"][0]["law"]["probs"]
    ['1/4', '1/4', '1/4', '1/4']
    >>> d["mechanisms"]["urn"]["variable"], d["mechanisms"]["urn"]["design"]
    ({'$ref': '#/variables/color'}, {'type': 'SubsetDesign', 'kind': 'sizes', 'weights': [[2, '1']]})
    >>> d["mechanisms"]["urn"]["span"]
    [[4, 17], [4, 44]]
    """
    if source is None:
        source = model.source
    refs: dict[tuple[str, str], object] = {}
    for name, var in model.variables.items():
        refs[("variables", name)] = var
    for name, mech in model.mechanisms.items():
        refs[("mechanisms", name)] = mech
    dump = _Dumper(source, refs)
    out: dict[str, JSON] = {"type": type(model).__name__, "title": model.title}
    for f in dataclasses.fields(model):
        if f.name in ("title", "source"):
            continue
        value = getattr(model, f.name)
        if f.name in ("variables", "mechanisms"):
            # the declarations themselves are written in full, their insides with refs
            section: dict[str, JSON] = {}
            for name, obj in value.items():
                dump.skip_refs_for = obj
                section[name] = dump(obj)
                dump.skip_refs_for = None
            out[f.name] = section
        else:
            out[f.name] = dump(value)
    return out


_WIDTH = 100


def _leafy(value: JSON) -> bool:
    """True for a container with no object nested below its own level."""
    items = value.values() if isinstance(value, dict) else value
    return all(not isinstance(x, dict) and (not isinstance(x, list) or _leafy(x)) for x in items)


def _write(value: JSON, indent: int, out: list[str]) -> None:
    if not isinstance(value, (dict, list)) or not value:
        out.append(json.dumps(value, ensure_ascii=False))
        return
    flat = json.dumps(value, ensure_ascii=False)
    if _leafy(value) and indent + len(flat) <= _WIDTH:
        out.append(flat)
        return
    pad = " " * (indent + 2)
    is_dict = isinstance(value, dict)
    out.append("{" if is_dict else "[")
    items = list(value.items()) if is_dict else [(None, x) for x in value]
    for i, (key, item) in enumerate(items):
        out.append("\n" + pad)
        if is_dict:
            out.append(json.dumps(key, ensure_ascii=False) + ": ")
        _write(item, indent + 2, out)
        if i < len(items) - 1:
            out.append(",")
    out.append("\n" + " " * indent + ("}" if is_dict else "]"))


def dumps(data: JSON) -> str:
    """The canonical JSON text of a dump, one final newline.

    Objects and lists are indented by two spaces, except that a small one with no
    object inside it (a span, a list of labels, a number node) stays on one line.

    Examples
    --------
    >>> from privspec.model.serialize import dumps
    >>> print(dumps({"type": "Num", "value": "1/3", "span": [[1, 5], [1, 8]]}), end="")
    {"type": "Num", "value": "1/3", "span": [[1, 5], [1, 8]]}
    >>> print(dumps({"a": {"b": 1}, "c": [1, 2]}), end="")
    {
      "a": {"b": 1},
      "c": [1, 2]
    }
    """
    out: list[str] = []
    _write(data, 0, out)
    return "".join(out) + "\n"
