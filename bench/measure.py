"""What every bench script measures with: peak memory of this process, and how sizes are
read and printed.  Imported by the scripts of this folder (run as ``python bench/X.py``:
this folder is then the first entry of ``sys.path``).

Examples
--------
>>> fmt_n(10 ** 6), fmt_n(1500), size("1e7")
('1e6', '1,500', 10000000)
"""
from __future__ import annotations

import math
import resource
import sys


def peak_mib() -> float:
    """This process's peak resident memory so far, MiB.  On Linux ``VmHWM`` of
    /proc/self/status: ``ru_maxrss`` survives fork + exec (it is kept per process, not
    per address space), so a child started by a script would report the parent's peak
    (the driver's, after it generated data) whenever that is higher; elsewhere ru_maxrss
    (KiB on Linux, bytes on macOS)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2 ** 20 if sys.platform == "darwin" else rss / 1024


def size(text: str) -> int:
    """A count given on the command line (``1e7`` or ``10000000``)."""
    return int(float(text))


def fmt_n(n: int) -> str:
    """A count as ``1e6`` when it is a power of ten, else with thousands separators."""
    e = int(round(math.log10(n))) if n > 0 else 0
    return f"1e{e}" if 10 ** e == n else f"{n:,}"
