"""One BLAS thread for privspec's small dense algebra.

OpenBLAS splits even a 100 x 100 solve over every core; on a busy machine its threads
wait on each other and a solve takes ten to a hundred times longer than on one thread
(GRR at d = 256 through the API at load 26: 15.4 s, on one thread 1.02 s; the NPMLE's
0.09 s at n = 1e5 became 0.6 to 12 s).  Every back end that does many small dense
solves, products or decompositions runs them inside :func:`one_blas_thread`; the limit
holds for the block and is lifted after it, so a user's own numpy code keeps its threads.

Examples
--------
>>> from threadpoolctl import threadpool_info
>>> with one_blas_thread():
...     print({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} <= {1})
True
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
from typing import TYPE_CHECKING, Callable, ParamSpec, TypeVar

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

P = ParamSpec("P")
R = TypeVar("R")


class _Libraries:
    """The process's BLAS libraries, looked up again only when a module was imported since.

    A lookup reads the process's memory map (0.15-0.8 ms, a GRR estimate's whole cost at
    d = 256 was 4-7 ms); a library is loaded only with an extension module, so while
    ``sys.modules`` holds as many modules as at the last lookup its result stands.
    scipy.linalg brings its own OpenBLAS when it is first used: its import grows
    ``sys.modules``, and the next limit reaches it."""

    controller: "ThreadpoolController | None" = None
    modules = -1
    #: every BLAS library of the process started on one thread (:func:`pin_one_thread`)
    pinned = False

    @classmethod
    def limit(cls) -> contextlib.AbstractContextManager:
        if cls.pinned:
            return contextlib.nullcontext()
        if cls.controller is None or len(sys.modules) != cls.modules:
            # start-up: threadpoolctl reads the process's libraries (0.03 s to import, more to look)
            from threadpoolctl import ThreadpoolController
            cls.controller, cls.modules = ThreadpoolController(), len(sys.modules)
        return cls.controller.limit(limits=1, user_api="blas")


#: the variables BLAS and OpenMP libraries read once, when they are loaded, for their threads
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def pin_one_thread() -> bool:
    """Start every BLAS library this process will load on one thread, before any is loaded
    (the variables each reads at load, :data:`THREAD_VARIABLES`); True where that was still
    possible (numpy not yet imported, no thread count set by the user), and then
    :func:`one_blas_thread` has nothing left to do.

    For a process whose algebra is all small (a run from a compiled plan,
    :mod:`privspec.run_plans`): OpenBLAS also costs 0.06 s of CPU per library at load to
    start its threads, which is then spared.  The variables stay set for the process (a
    library loaded later reads them too) and are inherited by any child it starts."""
    if "numpy" in sys.modules or any(v in os.environ for v in THREAD_VARIABLES):
        return False
    for v in THREAD_VARIABLES:
        os.environ[v] = "1"
    _Libraries.pinned = True
    return True


def one_blas_thread() -> contextlib.AbstractContextManager:
    """A context in which BLAS runs on one thread (about 0.01 ms to enter and leave once
    the libraries are known: :class:`_Libraries`)."""
    return _Libraries.limit()


def on_one_blas_thread(method: Callable[P, R]) -> Callable[P, R]:
    """``method`` run inside :func:`one_blas_thread` (for a back end whose every matrix is
    small: d x d channels and covariances)."""
    @functools.wraps(method)
    def limited(*args: P.args, **kwargs: P.kwargs) -> R:
        with one_blas_thread():
            return method(*args, **kwargs)
    return limited
