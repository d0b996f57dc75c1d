"""The house keeps its architecture (docs/architecture.md), measured over the installed
package: no import cycle, no private name taken from another module, no import inside a
function but for an optional extra or a measured start-up cost (said in a comment), no
module over 700 lines and no function over 80."""
from __future__ import annotations

import ast
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import privspec
import privspec.backends

#: the limits of the issue that set the layout (34)
MODULE_LINES, FUNCTION_LINES = 700, 80
#: words a comment must hold to justify an import inside a function
WHY_LAZY = ("extra", "start-up")


def _modules() -> dict[str, Path]:
    """Every module of the installed package: dotted name -> file."""
    found = {}
    # privspec.backends is its own folder (pyproject's package-dir): walked from its own path
    for root in (privspec, privspec.backends):
        found[root.__name__] = Path(root.__file__)
        for info in pkgutil.walk_packages(root.__path__, root.__name__ + "."):
            spec = importlib.util.find_spec(info.name)
            if spec is not None and spec.origin and spec.origin.endswith(".py"):
                found[info.name] = Path(spec.origin)
    return found


MODULES = _modules()
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _package(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rsplit(".", 1)[0]


def _absolute(name: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = _package(name).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str):
    """(node, target module, names) of every import of a privspec module in ``name``."""
    for node in ast.walk(TREES[name]):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("privspec"):
                    yield node, a.name, ()
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(name, node)
            if target == "privspec" or target.startswith("privspec."):
                yield node, target, tuple(a.name for a in node.names)


def _edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {n: set() for n in MODULES}
    for name in MODULES:
        for _, target, names in _imports(name):
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
            if subs:
                graph[name].update(subs)
            if len(subs) < len(names) or not names:
                if target in MODULES:
                    graph[name].add(target)
        graph[name].discard(name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_package_is_read_whole() -> None:
    assert len(MODULES) > 60 and "privspec.backends" in MODULES and "privspec.cli" in MODULES


def test_no_import_cycle() -> None:
    """Imports point down the layers: no module reaches itself through imports (those
    inside functions included)."""
    assert _cycles(_edges()) == []


def test_no_private_name_from_another_module() -> None:
    """``from privspec.x import _y`` and ``x._y`` of an imported privspec module: a private
    name stays in its module (a name another module needs is public)."""
    found = []
    for name in MODULES:
        aliases = {}
        for node, target, names in _imports(name):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"{name}: from {target} import {a.name}")
                full = f"{target}.{a.name}" if isinstance(node, ast.ImportFrom) else a.name
                if full in MODULES:
                    aliases[a.asname or a.name.split(".")[-1]] = full
        for node in ast.walk(TREES[name]):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                found.append(f"{name}: {node.value.id}.{node.attr}")
    assert found == []


def test_imports_inside_functions_say_why() -> None:
    """An import inside a function is for an optional extra or a measured start-up cost,
    and a comment on its line (or the line above) says which."""
    found = []
    for name, tree in TREES.items():
        lines = MODULES[name].read_text(encoding="utf-8").splitlines()
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    said = " ".join(lines[max(0, node.lineno - 2): node.end_lineno])
                    if "#" not in said or not any(w in said for w in WHY_LAZY):
                        found.append(f"{name}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert found == []


def test_modules_and_functions_are_small() -> None:
    long_modules = [f"{n}: {len(p.read_text(encoding='utf-8').splitlines())}" for n, p in MODULES.items()
                    if len(p.read_text(encoding="utf-8").splitlines()) > MODULE_LINES]
    long_functions = [f"{n}.{fn.name}: {fn.end_lineno - fn.lineno + 1}" for n, tree in TREES.items()
                      for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and fn.end_lineno - fn.lineno + 1 > FUNCTION_LINES]
    assert (long_modules, long_functions) == ([], [])


@pytest.mark.parametrize("layer", ["privspec.language", "privspec.model", "privspec.results"])
def test_the_front_end_never_imports_a_back_end(layer: str) -> None:
    """The language, the model and the results know nothing of the back ends (the verbs,
    ``api`` and ``cli``, bring them together)."""
    found = [f"{name} -> {target}" for name in MODULES if name == layer or name.startswith(layer + ".")
             for _, target, _ in _imports(name) if target.startswith("privspec.backends")]
    assert found == []
