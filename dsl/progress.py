"""Progress bars for long work (simulate, permutation tests, bootstrap bands, privatize),
with tqdm: shown only where someone watches.

The Python API's long calls (``Spec.run``, ``simulate``, ``privatize``, ``compare``) take
``progress=``: ``None`` (the default) shows bars where someone watches, as ``tqdm.auto``
does -- in a notebook (its widget where ipywidgets is installed), or on standard error
when that is an interactive terminal -- and never on a pipe, a file or pytest's capture;
``True`` shows them on standard error (or pass a stream), ``False`` never
(:func:`chosen`).  The command line switches them on for a terminal (stderr is a TTY)
unless ``--quiet`` (:func:`wanted`).  A back end wraps its loop in :func:`progress`,
which returns the iterable itself when bars are off, so the loop costs nothing extra.

Examples
--------
>>> list(progress(range(3), desc="reps"))     # off: the iterable itself
[0, 1, 2]
>>> with enabled(True, stream=None):
...     sum(progress(range(4), desc="reps"))  # on, but no stream: still silent
6
>>> import io
>>> out = io.StringIO()
>>> with chosen(out):                          # progress=<a stream>: bars there
...     sum(progress(range(4), desc="reps"))
6
>>> "reps" in out.getvalue()
True
"""
from __future__ import annotations

import contextlib
import contextvars
import sys
from typing import Any, Iterable, Iterator, TextIO

#: bars in a notebook's output (tqdm.auto's choice of bar)
NOTEBOOK = "notebook"
#: no choice made yet (a call of the API decides; outside one, no bars)
_UNSET: Any = object()

_STREAM: contextvars.ContextVar[Any] = contextvars.ContextVar("privspec_progress", default=_UNSET)


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


def in_notebook() -> bool:
    """Whether this is a Jupyter kernel's process (a notebook, JupyterLab, VS Code): tqdm.auto's test."""
    if "ipykernel.zmqshell" not in sys.modules:
        return False
    try:
        shell = sys.modules["IPython"].get_ipython()
    except (KeyError, AttributeError):
        return False
    return shell is not None and "zmq" in type(shell).__name__.lower()


def automatic() -> Any:
    """Where bars go when the caller did not say: a notebook's output, standard error when it
    is an interactive terminal, else nowhere (None)."""
    if in_notebook():
        return NOTEBOOK
    return sys.stderr if wanted(sys.stderr, False) else None


@contextlib.contextmanager
def chosen(progress: bool | TextIO | None = None) -> Iterator[None]:
    """The ``progress=`` argument of the API's long calls, for the block: ``None`` keeps an
    enclosing choice (the command line's, :func:`enabled`) and otherwise decides
    (:func:`automatic`); ``True`` shows bars on standard error, ``False`` shows none, and a
    stream shows them there."""
    current = _STREAM.get()
    if progress is None:
        stream = automatic() if current is _UNSET else current
    elif progress is True:
        stream = sys.stderr
    elif progress is False:
        stream = None
    elif hasattr(progress, "write"):
        stream = progress
    else:
        raise TypeError(f"progress must be None, True, False or a stream, not {progress!r}")
    token = _STREAM.set(stream)
    try:
        yield
    finally:
        _STREAM.reset(token)


def progress(iterable: Iterable, *, total: int | None = None, desc: str = "", unit: str = "it") -> Iterable:
    """``iterable``, with a tqdm bar on the enabled stream (the iterable itself otherwise)."""
    stream = _STREAM.get()
    if stream is None or stream is _UNSET:
        return iterable
    if isinstance(stream, str):  # NOTEBOOK
        # start-up: tqdm.auto costs 60 ms more than tqdm (it looks for ipywidgets); notebooks only
        from tqdm.auto import tqdm as auto

        return auto(iterable, total=total, desc=desc, unit=unit, leave=False)
    # start-up: tqdm costs 40-200 ms, paid only when a bar is shown (never by check)
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, file=stream, leave=False, dynamic_ncols=True)
