"""Back ends: symbolic (sympy), numeric (numpy/scipy) and data engines.

A back end is a class with ``REGISTER_NAME`` that implements (part of) the
:class:`Backend` protocol; decorating it with :func:`register` adds it to
:data:`REGISTRY`.  Every module of this package and its subpackages but those of
:data:`NO_BACK_ENDS` is imported by :func:`load_all`, so a new back end only has to exist
(and be named in :data:`HOMES`, which a test checks).  Routing a query imports only the
back-end modules whose :data:`HOMES` entry reaches its kind and family (start-up: an
analysis of a subset design never imports the interval, oracle or numeric back ends).
A back end declares, as data, what it answers: ``ANSWERS``,
rows of :class:`privspec.model.query_kinds.Answers` (query kinds x mechanism families x verbs,
optionally narrowed to estimands, estimators and options).  The runner asks
:func:`route` where a query goes for a verb (``analyze``, ``run``, ``simulate``): to the
back end whose matching row is the most specific (and whose ``supports()`` agrees),
whatever the order of registration (:func:`backend_for`); nowhere for a query that needs
data asked of ``analyze``; and, when no back end answers it, why (:func:`explain_unanswered`:
which back ends answer that kind and for what).
:func:`privatizer_for` says which one privatizes data with a mechanism, and
:func:`comparer_for` which one evaluates a compare block; where none does, the runner
says "not supported yet" (exit 1), never a traceback.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from privspec.model.query_kinds import (FINITE, INTERVAL, NUMERIC, ORACLE, TWO_GROUP, Answers, explain,
                                        family_of, needs_data)

#: name -> back-end class
REGISTRY: dict[str, type] = {}
_loaded = False
#: subpackages that register no back end, which routing leaves unimported (start-up: the
#: collection server imports starlette and asyncio; tests/test_startup.py checks none registers)
NO_BACK_ENDS = ("collect",)


@dataclass(frozen=True)
class Reach:
    """The query kinds and mechanism families a back-end module's ``ANSWERS`` may name
    (None: any).  A superset of its rows, read before the module is imported: routing
    imports the module only for a query inside it.

    Examples
    --------
    >>> Reach(kinds=("power",)).covers("power", "subset"), Reach(families=("grr",)).covers("avar", "subset")
    (True, False)
    """

    kinds: tuple[str, ...] | None = None
    families: tuple[str, ...] | None = None

    def covers(self, kind: str, family: str) -> bool:
        """Whether a query of ``kind`` on a mechanism of ``family`` may be answered there."""
        return (self.kinds is None or kind in self.kinds) and (self.families is None or family in self.families)


#: module (under this package) that registers back ends -> what their ``ANSWERS`` may name.
#: tests/test_startup.py checks every module that registers a back end is here and every row
#: of every ``ANSWERS`` is inside its module's reach (a row outside would never be routed to).
HOMES: dict[str, Reach] = {
    "finite.backend": Reach(families=FINITE),
    "rr.backend": Reach(families=("grr", "rr", "rr_product")),
    "rr.two_group_backend": Reach(families=TWO_GROUP),
    "interval.backend": Reach(families=INTERVAL),
    "oracles.backend": Reach(families=ORACLE),
    "numeric.backend": Reach(families=NUMERIC),
    "releases.backend": Reach(families=("release",)),
    "design.comparison": Reach(kinds=("sample_size", "power")),
    "design.allocation": Reach(kinds=("allocate",), families=("release",)),
}
_homes_loaded: set[str] = set()


@runtime_checkable
class Backend(Protocol):
    """What a back end offers the runner.  Methods it does not offer may be absent."""

    REGISTER_NAME: str
    #: what it answers (the registry reads these rows; ``supports`` may refuse a query they match)
    ANSWERS: tuple[Answers, ...]

    def supports(self, query: Any, verb: str) -> bool:
        """Whether this back end answers ``query`` for the runner verb ``verb`` (a query that
        its ``ANSWERS`` cover; conditions finer than the declaration)."""

    def answer(self, model: Any, query: Any, verb: str, **options: Any) -> Any:
        """The query's :class:`privspec.results.result.Result`.

        ``options`` carry the command line: ``data`` (a :class:`privspec.backends.data.bindings.DataBindings`
        for ``run``), ``n``, ``reps`` and ``seed`` (``simulate``); ``simplified=False`` from a caller
        that reads only the result's numbers (a comparison's criteria), which a back end may
        then leave unsimplified.
        """


def register(cls: type) -> type:
    """Class decorator: add a back end to :data:`REGISTRY` under its ``REGISTER_NAME``."""
    name = getattr(cls, "REGISTER_NAME", None)
    if not name:
        raise TypeError(f"{cls.__name__} has no REGISTER_NAME")
    REGISTRY[name] = cls
    return cls


def load_all() -> None:
    """Import every back-end module of this package (once): all but :data:`NO_BACK_ENDS`."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for info in pkgutil.iter_modules(__path__):
        if info.name in NO_BACK_ENDS:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if info.ispkg:
            for sub in pkgutil.walk_packages(module.__path__, module.__name__ + "."):
                importlib.import_module(sub.name)


def load_for(query: Any) -> None:
    """Import the back-end modules whose :data:`HOMES` reach covers ``query`` (once each):
    every back end that could answer it is then in :data:`REGISTRY`."""
    kind, family = query.kind, family_of(query.mechanism)
    for module, reach in HOMES.items():
        if module not in _homes_loaded and reach.covers(kind, family):
            importlib.import_module(f"{__name__}.{module}")
            _homes_loaded.add(module)


def _instances(query: Any = None):
    """Registered back ends by name: every one (:func:`load_all`), or for ``query`` those
    loaded so far once its homes are (:func:`load_for`; the others cannot answer it).  The
    order decides nothing for queries (the most specific declaration does); for privatize
    and compare it is ``PRIORITY`` order, highest first (default 0)."""
    if query is None:
        load_all()
    else:
        load_for(query)
    order = sorted(REGISTRY.values(), key=lambda c: (-getattr(c, "PRIORITY", 0), c.REGISTER_NAME))
    return [cls() for cls in order]


def declarations() -> dict[str, tuple[Answers, ...]]:
    """Back-end name -> the rows it declares (:class:`~privspec.model.query_kinds.Answers`)."""
    load_all()
    return {name: tuple(getattr(cls, "ANSWERS", ())) for name, cls in REGISTRY.items()}


def candidates(query: Any, verb: str) -> list[tuple[tuple[int, int], Backend]]:
    """The back ends that would answer ``query`` for ``verb``, with the specificity of the
    row that matched, most specific first.  A back end with no ``ANSWERS`` but a
    ``supports()`` (an older one) counts as the least specific."""
    out = []
    for backend in _instances(query):
        supports = getattr(backend, "supports", None)
        rows = getattr(backend, "ANSWERS", None)
        if rows is None:
            if supports is not None and supports(query, verb):
                out.append(((-1, 0), backend))
            continue
        matching = [r.specificity for r in rows if r.matches(query, verb)]
        if matching and (supports is None or supports(query, verb)):
            out.append((max(matching), backend))
    out.sort(key=lambda c: c[0], reverse=True)
    return out


def backend_for(query: Any, verb: str) -> Backend | None:
    """The back end that answers ``query`` for ``verb``, or None: among those whose declared
    rows match (and whose ``supports()`` agrees), the one whose row is the most specific.

    Two back ends matching equally specifically is a mistake in their declarations
    (:class:`RuntimeError`; tests/test_query_kinds.py checks every spec's queries)."""
    found = candidates(query, verb)
    if not found:
        return None
    if len(found) > 1 and found[0][0] == found[1][0]:
        raise RuntimeError(f"back ends {found[0][1].REGISTER_NAME} and {found[1][1].REGISTER_NAME} both answer "
                           f"{query.kind} query '{query.name}' for '{verb}' equally specifically")
    return found[0][1]


def explain_unanswered(query: Any, verb: str) -> str:
    """Which back ends answer queries of ``query``'s kind, for which mechanism families,
    estimators and verbs (the hint of "not supported yet")."""
    return explain(query.kind, declarations(), family_of(query.mechanism))


@dataclass(frozen=True)
class Route:
    """Where a query goes for a verb (:func:`route`): the back end that answers it, or why
    none does."""

    backend: Backend | None
    #: ``analyze`` was asked a query that needs data (no back end is looked for)
    needs_data: bool = False
    #: when no back end answers: which ones answer the query's kind, and for what
    why: str = ""


def route(query: Any, verb: str) -> Route:
    """Where ``query`` goes for ``verb``: the runner's one question to the registry."""
    if verb == "analyze" and needs_data(query.kind):
        return Route(None, needs_data=True)
    backend = backend_for(query, verb)
    return Route(backend, why="" if backend is not None else explain_unanswered(query, verb))


def _first_that(says: str, obj: Any) -> Any | None:
    """The first back end (``PRIORITY`` order) whose method ``says`` is true of ``obj``."""
    for backend in _instances():
        method = getattr(backend, says, None)
        if method is not None and method(obj):
            return backend
    return None


def privatizer_for(mechanism: Any) -> Any | None:
    """The back end that privatizes raw data with ``mechanism`` (``privatizes``/``privatize``)."""
    return _first_that("privatizes", mechanism)


def comparer_for(compare: Any) -> Any | None:
    """The back end that evaluates a compare block (``compares``/``compare``)."""
    return _first_that("compares", compare)
