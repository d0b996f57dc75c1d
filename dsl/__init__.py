"""privspec: design and analyse privacy-preserving data collection.

Kept light on purpose: the heavy modules load on first use.

Examples
--------
>>> import privspec
>>> spec = privspec.load('''
... variable color: categorical {black, red, green, blue}
... mechanism urn = subset(color, uniform)
... ''')
>>> [d.code for d in spec.check()]
[]
>>> spec.model.mechanisms["urn"].variable.name
'color'
"""
from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from privspec.spec import Spec

__all__ = ["__version__", "load"]


def load(path_or_text: "str | Path", *, name: str | None = None) -> "Spec":
    """Load a spec from a file path or from spec text.

    A string containing a newline, or one that names no existing file, is read as
    spec text.  The spec is parsed and validated at once; ``spec.check()`` returns the
    diagnostics (errors and warnings), ``spec.model`` the model graph (raising
    :class:`privspec.errors.SpecError` if there are errors).
    """
    # ``import privspec`` and the command line's --help stay light:
    # start-up: a spec brings sympy and lark (about 1 s)
    from privspec.spec import Spec

    return Spec.load(path_or_text, name=name)
