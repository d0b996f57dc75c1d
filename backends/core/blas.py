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
from typing import Callable, ParamSpec, TypeVar

from threadpoolctl import threadpool_limits

P = ParamSpec("P")
R = TypeVar("R")


def one_blas_thread() -> contextlib.AbstractContextManager:
    """A context in which BLAS runs on one thread (about 0.4 ms to enter and leave).

    The BLAS libraries are looked up on every call, not once: scipy.linalg brings its own
    OpenBLAS when it is first used, which a lookup made before would not limit."""
    return threadpool_limits(limits=1, user_api="blas")


def on_one_blas_thread(method: Callable[P, R]) -> Callable[P, R]:
    """``method`` run inside :func:`one_blas_thread` (for a back end whose every matrix is
    small: d x d channels and covariances)."""
    @functools.wraps(method)
    def limited(*args: P.args, **kwargs: P.kwargs) -> R:
        with one_blas_thread():
            return method(*args, **kwargs)
    return limited
