"""reuse_freed_memory: large arrays freed inside the block are reused, not faulted in afresh,
and the memory goes back to the kernel on leaving (issue 38)."""
from __future__ import annotations

import resource
import threading

import numpy as np
import pytest

from privspec.backends.core import memory
from privspec.backends.core.memory import reuse_freed_memory

glibc = pytest.mark.skipif(memory._LIBC is None, reason="needs glibc's mallopt and malloc_trim")


def _faults_of_a_fresh_array() -> int:
    """Minor page faults while 200 MB are allocated, written and freed."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    x = np.ones(25_000_000)
    del x
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@glibc
def test_inside_the_block_a_freed_array_is_reused_and_given_back_after() -> None:
    _faults_of_a_fresh_array()
    outside = _faults_of_a_fresh_array()
    assert outside > 20                 # each fresh mapping faults its pages in
    with reuse_freed_memory():
        _faults_of_a_fresh_array()
        again = _faults_of_a_fresh_array()
        with reuse_freed_memory():      # nested: still reusing after the inner block
            pass
        after_inner = _faults_of_a_fresh_array()
    assert again <= outside // 10 and after_inner <= outside // 10
    # on leaving, the heap's free pages went back: a new array faults them in again
    assert _faults_of_a_fresh_array() > outside // 2


def test_the_block_changes_no_result_and_nests_across_threads() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(2_000_000)
    want = float(np.sort(x)[::1000].sum())
    got: list[float] = []

    def work() -> None:
        with reuse_freed_memory():
            got.append(float(np.sort(x)[::1000].sum()))

    threads = [threading.Thread(target=work) for _ in range(3)]
    with reuse_freed_memory():
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert got == [want] * 3
    assert memory._depth == 0
