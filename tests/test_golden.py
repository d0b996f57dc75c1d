"""Golden files: what the parser and the resolver make of every example spec.

For each ``specs/<stem>.privspec`` the AST dump and the model-graph dump
(:mod:`privspec.model.serialize`) are compared with ``tests/golden/<stem>.ast.json`` and
``tests/golden/<stem>.model.json``.  After an intended change, regenerate them with
``pytest tests/test_golden.py --update-golden`` and read the diff before committing.
"""
from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

import privspec
from privspec.language.parser import parse_declarations
from privspec.model.serialize import ast_to_dict, dumps, model_to_dict
from privspec.language.source import Source

GOLDEN = Path(__file__).resolve().parent / "golden"
SPECS = Path(__file__).resolve().parent.parent / "specs"

SPEC_FILES = sorted(SPECS.glob("*.privspec"))


def _source(path: Path) -> Source:
    # a stable, machine-independent name: the spans and diagnostics mention it
    return Source(path.read_text(encoding="utf-8-sig"), f"specs/{path.name}")


def ast_dump(path: Path) -> str:
    source = _source(path)
    decls, diags, _ = parse_declarations(source)
    return dumps({"source": source.name,
                  "syntax_errors": [d.to_dict(source) for d in diags],
                  "declarations": ast_to_dict(decls, source)})


def model_dump(path: Path) -> str:
    source = _source(path)
    spec = privspec.load(source.text, name=source.name)
    return dumps({"source": source.name,
                  "diagnostics": [d.to_dict(source) for d in spec.check()],
                  "model": model_to_dict(spec.model)})


def _compare(kind: str, path: Path, actual: str, update: bool) -> None:
    golden = GOLDEN / f"{path.stem}.{kind}.json"
    if update:
        golden.parent.mkdir(parents=True, exist_ok=True)
        if not golden.exists() or golden.read_text(encoding="utf-8") != actual:
            golden.write_text(actual, encoding="utf-8")
        return
    if not golden.exists():
        pytest.fail(f"{golden.relative_to(GOLDEN.parent.parent)} is missing; "
                    "run pytest tests/test_golden.py --update-golden and review it")
    expected = golden.read_text(encoding="utf-8")
    if expected != actual:
        diff = "".join(list(difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True),
            fromfile=f"golden/{golden.name}", tofile="now"))[:200])
        pytest.fail(f"{path.name}: the {kind} dump differs from golden/{golden.name} "
                    f"(--update-golden rewrites it after review):\n{diff}", pytrace=False)


@pytest.mark.parametrize("path", SPEC_FILES, ids=[p.stem for p in SPEC_FILES])
def test_ast_golden(path: Path, update_golden: bool) -> None:
    _compare("ast", path, ast_dump(path), update_golden)


@pytest.mark.parametrize("path", SPEC_FILES, ids=[p.stem for p in SPEC_FILES])
def test_model_golden(path: Path, update_golden: bool) -> None:
    _compare("model", path, model_dump(path), update_golden)


def test_every_spec_has_golden_files() -> None:
    """No stale golden files for specs that no longer exist, none missing."""
    stems = {p.stem for p in SPEC_FILES}
    assert stems, "no specs found"
    present = {p.name.split(".")[0] for p in GOLDEN.glob("*.json")}
    assert present <= stems, f"golden files without a spec: {sorted(present - stems)}"


@pytest.mark.parametrize("path", SPEC_FILES, ids=[p.stem for p in SPEC_FILES])
def test_dumps_are_deterministic_json(path: Path) -> None:
    """Dumping twice gives the same text, and the text is valid JSON."""
    a, b = model_dump(path), model_dump(path)
    assert a == b
    json.loads(a)
    json.loads(ast_dump(path))


# ---- the serializer's conventions ------------------------------------------------------
def test_serializer_conventions() -> None:
    import sympy

    from privspec.model.graph import SubsetDesign

    design = SubsetDesign("conditional", ((frozenset({"red", "black"}), sympy.Rational(1, 2)),
                                          (frozenset({"blue", "green"}), sympy.log(3))))
    assert ast_to_dict(design) == {"type": "SubsetDesign", "kind": "conditional",
                                   "weights": [[["black", "red"], "1/2"], [["blue", "green"], "log(3)"]]}
    source = Source("variable x: continuous\nvariable y: continuous [0, inf]")
    decls, _, _ = parse_declarations(source)
    with_lines = ast_to_dict(decls[1], source)
    assert with_lines["span"] == [[2, 1], [2, 32]]
    assert with_lines["bounds"][1] == {"type": "Num", "value": "oo", "span": [[2, 28], [2, 31]]}
    assert ast_to_dict(decls[1])["span"] == [23, 54]  # offsets without a source


def test_model_dump_refers_to_declared_names() -> None:
    spec = privspec.load("variable c: categorical {a, b, c, d}\n"
                         "variable g: categorical {F, M}\n"
                         "mechanism u = subset(c, uniform)\n"
                         "mechanism w = grr(g * c, epsilon = log(3))\n"
                         "query k = coverage(u)\n")
    d = model_to_dict(spec.model)
    assert list(d) == ["type", "title", "variables", "parameters", "populations", "mechanisms",
                       "releases", "queries", "compares"]
    assert list(d["variables"]) == ["c", "g"]
    assert d["mechanisms"]["u"]["variable"] == {"$ref": "#/variables/c"}
    assert d["queries"]["k"]["mechanism"] == {"$ref": "#/mechanisms/u"}
    anonymous = d["mechanisms"]["w"]["variable"]          # g * c is declared nowhere
    assert anonymous["type"] == "Variable" and anonymous["parts"] == ["g", "c"]
    assert anonymous["labels"][:2] == ["F.a", "F.b"]
    assert d["mechanisms"]["w"]["epsilon"] == "log(3)"
    assert json.loads(dumps(d)) == d
