"""Progress bars for long work (simulate, permutation tests, bootstrap bands, privatize),
with tqdm: shown only where someone watches.

The command line switches them on for a terminal (stderr is a TTY) unless ``--quiet``;
the Python API leaves them off unless asked (:func:`enabled`).  A back end wraps its
loop in :func:`progress`, which returns the iterable itself when bars are off, so the
loop costs nothing extra.

Examples
--------
>>> list(progress(range(3), desc="reps"))     # off: the iterable itself
[0, 1, 2]
>>> with enabled(True, stream=None):
...     sum(progress(range(4), desc="reps"))  # on, but no stream: still silent
6
"""
from __future__ import annotations

import contextlib
import contextvars
import sys
from typing import Any, Iterable, Iterator, TextIO

_STREAM: contextvars.ContextVar[TextIO | None] = contextvars.ContextVar("privspec_progress", default=None)


@contextlib.contextmanager
def enabled(on: bool = True, stream: TextIO | None = sys.stderr) -> Iterator[None]:
    """Show progress bars on ``stream`` inside the block (when ``on``)."""
    token = _STREAM.set(stream if on else None)
    try:
        yield
    finally:
        _STREAM.reset(token)


def wanted(stream: Any, quiet: bool) -> bool:
    """The command line's rule: bars on a terminal, never on a pipe or a file, never with --quiet."""
    return not quiet and hasattr(stream, "isatty") and stream.isatty()


def progress(iterable: Iterable, *, total: int | None = None, desc: str = "", unit: str = "it") -> Iterable:
    """``iterable``, with a tqdm bar on the enabled stream (the iterable itself otherwise)."""
    stream = _STREAM.get()
    if stream is None:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, file=stream, leave=False, dynamic_ncols=True)
