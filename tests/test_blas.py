"""Small dense algebra runs on one BLAS thread by default (issue 38): the finite back end
answers every query inside the limit and lifts it after, so a user's own numpy code keeps
its threads.  bench/blas_threads.py measures what it buys on a busy machine."""
from __future__ import annotations

import os
import subprocess
import sys

import threadpoolctl

import privspec
from privspec.backends.finite import backend as finite_backend

URN = """variable color: categorical {black, red, green, blue}
population color ~ categorical(black = 0.1, red = 0.2, green = 0.3, blue = 0.4)
mechanism urn = subset(color, uniform)
query v = avar(distribution(color) from urn by mom)
"""


def blas_threads() -> set[int]:
    return {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}


def test_the_finite_back_end_answers_on_one_blas_thread(monkeypatch) -> None:
    seen: list[set[int]] = []
    avar = finite_backend.ANALYSES["avar"]

    def recording(model, q):
        seen.append(blas_threads())
        return avar(model, q)

    monkeypatch.setitem(finite_backend.ANALYSES, "avar", recording)
    before = blas_threads()
    with threadpoolctl.threadpool_limits(2, user_api="blas"):   # as on any machine with 2+ cores
        outside = blas_threads()
        results = privspec.load(URN).analyze(["v"])
        assert blas_threads() == outside                        # lifted after the answer
    assert seen == [{1}] and results["v"] is not None
    assert blas_threads() == before


def test_the_limit_reaches_a_library_loaded_after_the_first_lookup() -> None:
    """The libraries are looked up once and again only after an import: scipy.linalg's own
    OpenBLAS, loaded after a first limit, is limited by the next (a fresh interpreter)."""
    code = ("import numpy\n"
            "from threadpoolctl import threadpool_info\n"
            "from privspec.backends.core.blas import one_blas_thread\n"
            "with one_blas_thread(): pass\n"
            "import scipy.linalg\n"
            "with one_blas_thread():\n"
            "    print(sorted({i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "4"}).stdout
    assert out.strip() == "[1]"
