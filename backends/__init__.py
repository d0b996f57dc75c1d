"""Back ends: symbolic (sympy), numeric (numpy/scipy) and data engines.

A back end is a class with ``REGISTER_NAME`` that implements (part of) the
:class:`Backend` protocol; decorating it with :func:`register` adds it to
:data:`REGISTRY`.  Every module of this package is imported on first use, so a new
back end only has to exist.  The runner asks :func:`backend_for` which back end
answers a query for a verb (``analyze``, ``run``, ``simulate``),
:func:`privatizer_for` which one privatizes data with a mechanism, and
:func:`comparer_for` which one evaluates a compare block; where none does, the
runner says "not supported yet" (exit 1), never a traceback.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Protocol, runtime_checkable

#: name -> back-end class
REGISTRY: dict[str, type] = {}
_loaded = False


@runtime_checkable
class Backend(Protocol):
    """What a back end offers the runner.  Methods it does not offer may be absent."""

    REGISTER_NAME: str

    def supports(self, query: Any, verb: str) -> bool:
        """Whether this back end answers ``query`` for the runner verb ``verb``."""

    def answer(self, model: Any, query: Any, verb: str, **options: Any) -> Any:
        """The query's :class:`privspec.results.Result`.

        ``options`` carry the command line: ``data`` (a :class:`privspec.backends.data.DataBindings`
        for ``run``), ``n``, ``reps`` and ``seed`` (``simulate``).
        """


def register(cls: type) -> type:
    """Class decorator: add a back end to :data:`REGISTRY` under its ``REGISTER_NAME``."""
    name = getattr(cls, "REGISTER_NAME", None)
    if not name:
        raise TypeError(f"{cls.__name__} has no REGISTER_NAME")
    REGISTRY[name] = cls
    return cls


def load_all() -> None:
    """Import every back-end module of this package (once)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for info in pkgutil.iter_modules(__path__, __name__ + "."):
        importlib.import_module(info.name)


def _instances():
    """Registered back ends, highest ``PRIORITY`` first (default 0): a specialised back end
    (e.g. one for randomized response) can answer before the general one for finite
    mechanisms, and leaves to it what it does not support."""
    load_all()
    return [cls() for cls in sorted(REGISTRY.values(), key=lambda c: -getattr(c, "PRIORITY", 0))]


def backend_for(query: Any, verb: str) -> Backend | None:
    """The first registered back end that answers ``query`` for ``verb``, or None."""
    for backend in _instances():
        supports = getattr(backend, "supports", None)
        if supports is not None and supports(query, verb):
            return backend
    return None


def privatizer_for(mechanism: Any) -> Any | None:
    """The back end that privatizes raw data with ``mechanism`` (``privatizes``/``privatize``)."""
    for backend in _instances():
        privatizes = getattr(backend, "privatizes", None)
        if privatizes is not None and privatizes(mechanism):
            return backend
    return None


def comparer_for(compare: Any) -> Any | None:
    """The back end that evaluates a compare block (``compares``/``compare``)."""
    for backend in _instances():
        compares = getattr(backend, "compares", None)
        if compares is not None and compares(compare):
            return backend
    return None
