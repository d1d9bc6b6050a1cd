"""Holding the cyclic garbage collector off while a wave of long-polls is answered.

An event published to many queues wakes their parked polls at once (tornchat/events/registry.py);
a pass of the collector in the middle of their answers delays the last of them.
"""

from __future__ import annotations

import asyncio
import gc
import weakref

# An event for this many queues wakes a wave of polls: the cyclic garbage collector waits until
# they are answered (WAVE_SECONDS after the last such event). Its passes over the heap came in the
# middle of 1,000 answers, 15 to 40 of them per wave, delaying the last answer by 20-80 ms. A hold
# extended to MAX_HOLD seconds ends then and is followed by as long without one, so that under a
# stream of waves the collector still runs about half the time.
WAVE_QUEUES = 200
WAVE_SECONDS = 0.5
MAX_HOLD = 2.0


class _Hold:
    __slots__ = ("timer", "started")

    def __init__(self, started: float) -> None:
        self.timer: asyncio.TimerHandle | None = None
        self.started = started


_holds: dict[asyncio.AbstractEventLoop, _Hold] = {}  # loops holding the collector off
_rest_until: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, float] = weakref.WeakKeyDictionary()


def hold_garbage_collection() -> None:
    """Hold the cyclic garbage collector off for WAVE_SECONDS (more if called again meanwhile).

    Only on an event loop, and only if the collector runs: another holder (tornchat/events/saved.py's
    read_saved) keeps its own state.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    for other in [other for other in _holds if other.is_closed()]:  # stopped before its hold ended
        _release_garbage_collection(other)
    now = loop.time()
    hold = _holds.get(loop)
    if hold is None:
        if (not _holds and not gc.isenabled()) or now < _rest_until.get(loop, 0.0):
            return
        hold = _holds[loop] = _Hold(now)
        gc.disable()
    elif now - hold.started >= MAX_HOLD:
        return  # it ends as planned
    if hold.timer is not None:
        hold.timer.cancel()
    hold.timer = loop.call_later(WAVE_SECONDS, _release_garbage_collection, loop)


def release_garbage_collection() -> None:
    """End the running loop's hold now (a server closing: the loop may end before the hold's timer)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    hold = _holds.get(loop)
    if hold is not None:
        if hold.timer is not None:
            hold.timer.cancel()
        _release_garbage_collection(loop)


def _release_garbage_collection(loop: asyncio.AbstractEventLoop) -> None:
    hold = _holds.pop(loop, None)
    if hold is not None and not loop.is_closed() and loop.time() - hold.started >= MAX_HOLD:
        _rest_until[loop] = loop.time() + MAX_HOLD
    if not _holds:
        gc.enable()
