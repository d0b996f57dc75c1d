"""Run the docstring examples of every privspec module (they are part of the docs)."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import privspec

import privspec.backends  # noqa: E402

MODULES = sorted({m.name for m in pkgutil.walk_packages(privspec.__path__, "privspec.")
                  if m.name != "privspec.__main__"}
                 | {m.name for m in pkgutil.walk_packages(privspec.backends.__path__, "privspec.backends.")}
                 | {"privspec", "privspec.backends"})


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
