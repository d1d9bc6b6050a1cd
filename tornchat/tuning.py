"""Process settings `tornchat serve` applies once started: the garbage collector and malloc.

What each one saved is in bench/README.md (GET /messages against the floor, third and fourth rounds).
"""

from __future__ import annotations

import ctypes
import gc
import platform
import sys

# Young-generation threshold of the cyclic garbage collector (Python's default: 700). See tune_garbage_collector.
GC_YOUNG_THRESHOLD = 50_000

# glibc's mallopt parameters (malloc.h) and the values tune_malloc sets.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 8 << 20
TRIM_THRESHOLD = 32 << 20


def tune_garbage_collector() -> None:
    """Set the cyclic garbage collector for a server, once its start is done.

    What the start loaded (modules, routes, the realm) lives as long as the process: frozen, the
    collector's full passes skip it. A page of messages holds thousands of container objects at
    once (rows, message objects), which reference counting frees when the page is answered; at
    Python's default young threshold they set off a collection every 700, and a full pass every
    few pages (6% of the server's time on pages of 5,000). Cycles are still collected, once 50,000
    more objects were created than freed.
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)


def tune_malloc() -> bool:
    """Have glibc's malloc keep the memory of large responses for the next ones; False where it cannot.

    A page of a few hundred messages is a body of a few hundred KB, built in a handful of buffers
    of that size. By default glibc maps each buffer past 128 KB from the kernel and unmaps it when
    freed (its dynamic threshold moves up, but trimming then hands the heap's top back), so every
    such response touched fresh pages: a page fault every 4 KB, about a sixth of the time of a
    300 KB answer. Buffers up to MMAP_THRESHOLD now come from the heap, and the heap
    keeps up to TRIM_THRESHOLD free at its top: the process holds up to that much more memory.
    """
    if sys.platform != "linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
