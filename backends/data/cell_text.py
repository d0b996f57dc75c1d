"""How cells read as text: which are missing values, and how a message quotes one.
Without pandas (:mod:`privspec.backends.data.checks` re-exports them), so that the run
from a compiled plan (:mod:`privspec.run_plans`) reads reports as the engines do."""
from __future__ import annotations

from typing import Any

#: strings read as missing values
MISSING = ("", "NA", "N/A", "NaN", "nan", "null", "NULL", "None")

#: characters of a value a message shows; a longer value is cut there, its length given
SHOWN = 60


def show_value(value: Any) -> str:
    """A value as a message quotes it: its text in quotes, cut to :data:`SHOWN` characters
    with its length after (a 40 MB cell is named, not printed).

    Examples
    --------
    >>> show_value("red"), show_value("r" * 100)
    ("'red'", "'rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr...' (100 characters)")
    """
    text = str(value)
    if len(text) <= SHOWN:
        return repr(text)
    return f"{text[:SHOWN] + '...'!r} ({len(text):,} characters)"
