"""reuse_freed_memory: large arrays freed inside the block are reused, not faulted in afresh,
and the memory goes back to the kernel on leaving (issue 38)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from privspec.backends.core import memory

glibc = pytest.mark.skipif(memory._LIBC is None, reason="needs glibc's mallopt and malloc_trim")


#: in a fresh interpreter: malloc's state is the process's, and this suite's other tests
#: (a collector's results computed on a worker thread, say) may be inside a block meanwhile
_FAULTS = r"""
import resource
import threading
import numpy as np
from privspec.backends.core import memory
from privspec.backends.core.memory import reuse_freed_memory

def faults():  # minor page faults while 200 MB are allocated, written and freed
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    x = np.ones(25_000_000)
    del x
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

def rss():  # MiB resident
    return next(int(line.split()[1]) // 1024 for line in open("/proc/self/status") if line.startswith("VmRSS"))

faults()
outside, base = faults(), rss()
with reuse_freed_memory():
    faults()
    again = faults()
    with reuse_freed_memory():      # nested: still reusing after the inner block
        pass
    after_inner, kept = faults(), rss()
after = rss()
# blocks on several threads at once, inside one on the main thread: all left at the end,
# and each thread's result the same as outside any block
x = np.random.default_rng(1).standard_normal(200_000)
want = float(np.sort(x)[::100].sum())
got = []
before_threads = rss()
def work():
    with reuse_freed_memory():
        faults()
        got.append(float(np.sort(x)[::100].sum()))
threads = [threading.Thread(target=work) for _ in range(3)]
with reuse_freed_memory():
    for t in threads:
        t.start()
    for t in threads:
        t.join()
print(outside, again, after_inner, base, kept, after, memory._depth, before_threads, rss(), got == [want] * 3)
"""


@glibc
def test_inside_the_block_a_freed_array_is_reused_and_given_back_after() -> None:
    got = subprocess.run([sys.executable, "-c", _FAULTS], capture_output=True, text=True, check=True)
    *counts, same = got.stdout.split()
    outside, again, after_inner, base, kept, after, depth, before_threads, after_threads = (int(v) for v in counts)
    assert outside > 20                 # each fresh mapping faults its pages in
    assert again <= outside // 10 and after_inner <= outside // 10
    assert kept >= base + 150           # inside, the freed 200 MB stay with the process ...
    assert after <= base + 50           # ... and go back to the kernel on leaving
    # the same after blocks on four threads at once, each thread's result unchanged
    assert depth == 0 and after_threads <= before_threads + 50
    assert same == "True"


@glibc
def test_inside_the_block_numpy_asks_for_no_huge_pages_and_as_before_after() -> None:
    """Huge pages advised by numpy are off inside (their first touch may compact memory in
    the kernel then and there), nested blocks included, and as they were after."""
    np = pytest.importorskip("numpy")
    switch = getattr(np._core.multiarray, "_get_madvise_hugepage", None)
    if switch is None:
        pytest.skip("this numpy has no huge-page switch")
    before = switch()
    with memory.reuse_freed_memory():
        assert switch() is False
        with memory.reuse_freed_memory():
            assert switch() is False
        assert switch() is False
    assert switch() is before
