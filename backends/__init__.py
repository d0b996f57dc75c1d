"""Back ends: symbolic (sympy), numeric (numpy/scipy) and data engines.

A back end is a class with ``REGISTER_NAME`` and the :class:`Backend` protocol; it is
added to :data:`REGISTRY` when its module is imported (see :func:`register`).  The
runner asks :func:`backend_for` which back end answers a query; queries that no back
end answers yet are reported as "not supported yet" (exit 1), never as a traceback.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

#: name -> back-end class
REGISTRY: dict[str, type] = {}

#: back-end modules imported on first use (later issues add theirs here)
BACKEND_MODULES: tuple[str, ...] = ()


@runtime_checkable
class Backend(Protocol):
    """What a back end offers the runner."""

    REGISTER_NAME: str

    def supports(self, query: Any, verb: str) -> bool:
        """Whether this back end answers ``query`` for the runner verb ``verb``."""

    def answer(self, model: Any, query: Any, verb: str, **options: Any) -> Any:
        """The query's result object (with ``to_dict()`` per the JSON contract)."""


def register(cls: type) -> type:
    """Class decorator: add a back end to :data:`REGISTRY` under its ``REGISTER_NAME``."""
    name = getattr(cls, "REGISTER_NAME", None)
    if not name:
        raise TypeError(f"{cls.__name__} has no REGISTER_NAME")
    REGISTRY[name] = cls
    return cls


def _load_all() -> None:
    import importlib

    for module in BACKEND_MODULES:
        importlib.import_module(module)


def backend_for(query: Any, verb: str) -> Backend | None:
    """The first registered back end that answers ``query`` for ``verb``, or None."""
    _load_all()
    for cls in REGISTRY.values():
        backend = cls()
        if backend.supports(query, verb):
            return backend
    return None
