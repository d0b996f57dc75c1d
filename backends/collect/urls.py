"""Which texts name a store (``privspec run SPEC --data sqlite:///reports.db``): apart from
:mod:`.store`, which brings sqlite3 and the submissions' checks (every back end: about
0.15 s), so that a run on data files never imports it.

Examples
--------
>>> is_store("sqlite:///reports.db"), is_store("reports.parquet"), is_store(None)
(True, False, False)
"""
from __future__ import annotations

from typing import Any

#: the URL schemes of a store (``privspec run SPEC --data URL``)
SCHEMES = ("sqlite://", "postgresql://", "postgres://")


def is_store(text: Any) -> bool:
    """Whether ``text`` is the URL of a store (``sqlite://``, ``postgresql://``)."""
    return isinstance(text, str) and text.startswith(SCHEMES)


def reads_a_store(bindings: Any) -> bool:
    """Whether any source of ``bindings`` (a :class:`privspec.backends.data.bindings.DataBindings`:
    its default and its per-mechanism sources) is a store's URL."""
    return any(is_store(url) for url in (bindings.default, *bindings.per_mechanism.values()))
