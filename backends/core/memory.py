"""Freed memory kept for reuse while a large computation runs (glibc's ``malloc``).

numpy asks ``malloc`` for every array.  glibc serves a block larger than its mmap
threshold (at most 32 MiB) with a fresh mapping from the kernel and unmaps it when freed,
so every array of millions of numbers starts on untouched pages: each page faults and is
zeroed on first write.  On the 2-core VMs of the benches that costs about 3 s per GB, more
than the arithmetic in the array, and a fit over millions of reports frees and makes
arrays of 60-80 MB hundreds of times (the NPMLE of 1e7 Case-II reports in a fresh process:
3.57 s CPU, 1.20 s of it in the kernel; 2.71 s and 0.50 s with the memory reused).

Inside :func:`reuse_freed_memory` every block comes from ``malloc``'s heap
(``M_MMAP_MAX = 0``) and freed blocks stay there (``M_TRIM_THRESHOLD`` as large as it
goes), so the next array reuses pages already touched.  On leaving, glibc's usual limits
are set again (the thresholds its own adjustment reaches once large arrays were freed) and
``malloc_trim(0)`` gives the heap's free pages back to the kernel: the process holds no
more memory afterwards than before.

Inside, numpy also stops asking the kernel for huge pages for its arrays
(``madvise(MADV_HUGEPAGE)``, numpy's default on Linux; ``NUMPY_MADVISE_HUGEPAGE=0`` is its
switch, read at import).  Where the kernel's ``transparent_hugepage/defrag`` is
``madvise`` (the usual default), a first touch of such memory that finds no free huge page
compacts memory there and then, in the faulting thread: in the benches' VM that stalled
the 1e7 Case-II run by 0.4-1.4 s of kernel time from one run to the next (0.5-0.7 s,
steadily, without), and the heap's pages, once touched, are reused anyway.

The setting is the process's: while one thread is inside a block, the others' large
arrays come from the heap too.  Elsewhere (another C
library, or none found) it does nothing: the results are the same either way, only the
time differs.

Examples
--------
>>> import numpy as np
>>> with reuse_freed_memory():
...     float(np.ones(10_000_000).sum())
10000000.0
"""
from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import Any, Iterator

__all__ = ["reuse_freed_memory"]

# mallopt's parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
#: on leaving: glibc's default number of mappings, and the thresholds its own adjustment
#: reaches once a process has freed large arrays (setting any of them ends that adjustment)
_AFTER_MMAP_MAX = 65536
_AFTER_MMAP_THRESHOLD = 32 * 1024 * 1024
_AFTER_TRIM_THRESHOLD = 2 * _AFTER_MMAP_THRESHOLD
#: the trim threshold inside: the largest an ``int`` holds (free memory is kept)
_KEEP = 2 ** 31 - 1

_lock = threading.Lock()
_depth = 0
#: numpy's huge-page advice as it was on entering the outermost block
_hugepages: bool | None = None


def _libc() -> Any | None:
    """The process's C library where it has glibc's ``mallopt`` and ``malloc_trim``, else None."""
    try:
        lib = ctypes.CDLL(None)
        lib.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.malloc_trim.argtypes = [ctypes.c_size_t]
        return lib
    except (OSError, TypeError, AttributeError):    # (no such C library: macOS, musl, Windows)
        return None


_LIBC = _libc()


def _set_hugepages(on: bool) -> bool | None:
    """Whether numpy advised huge pages for its arrays, after advising ``on`` from now on
    (None where this numpy has no such switch: nothing changes)."""
    import numpy as np      # (with the first block, not with this module: nothing more at start-up)

    switch = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_set_madvise_hugepage", None)
    return None if switch is None else bool(switch(on))


@contextlib.contextmanager
def reuse_freed_memory() -> Iterator[None]:
    """Large arrays freed inside the block are reused by the next ones instead of coming
    fresh from the kernel; the free memory goes back to the kernel on leaving (the
    outermost block, where blocks nest or threads overlap)."""
    global _depth, _hugepages
    if _LIBC is None:
        yield
        return
    with _lock:
        _depth += 1
        if _depth == 1:
            _LIBC.mallopt(_M_MMAP_MAX, 0)
            _LIBC.mallopt(_M_TRIM_THRESHOLD, _KEEP)
            _hugepages = _set_hugepages(False)
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _LIBC.mallopt(_M_MMAP_MAX, _AFTER_MMAP_MAX)
                _LIBC.mallopt(_M_MMAP_THRESHOLD, _AFTER_MMAP_THRESHOLD)
                _LIBC.mallopt(_M_TRIM_THRESHOLD, _AFTER_TRIM_THRESHOLD)
                _LIBC.malloc_trim(0)
                if _hugepages is not None:
                    _set_hugepages(_hugepages)
