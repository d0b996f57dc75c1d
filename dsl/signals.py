"""SIGINT and SIGTERM while a file is written: raised as :class:`Interrupted`, so that the
writer removes its temporary file on the way out (:func:`privspec.outputs.write_atomic`)
and the command exits with ``128 + signum``."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived while a file was being written (the temporary file is
    removed on the way out); :attr:`signum` gives the exit status ``128 + signum``."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum


@contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM raise :class:`Interrupted` (SIGTERM would
    otherwise end the process at once, leaving the temporary file behind); the
    previous handlers come back afterwards.  Only the main thread can set handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise Interrupted(signum)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, interrupt)
        except (ValueError, OSError):  # not settable here
            pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
