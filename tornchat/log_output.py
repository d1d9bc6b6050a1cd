"""Where the `tornchat` command's log lines go: stderr, in logging's default line format.

Every answered request logs a line (tornchat/http_edge.py, log_access). Made into a LogRecord,
passed down the logger hierarchy and written one by one, those lines took about a tenth of the
server's time on small cached pages (bench/README.md, sixth round). So `tornchat serve`:

- hands log_access's lines straight to its handler (no LogRecord: the line's text and time are
  all the format shows), where the root logger holds that handler alone;
- holds access lines logged while an event loop runs and writes them together, FLUSH_SECONDS
  after the first one held, or as soon as HELD_LIMIT characters are held. Any other line
  (startup, warnings, errors) is written at once, after the lines held before it, so the order
  stays the order they were logged in. What is held is written when logging shuts down (at exit,
  after a signal stopped the server); a process killed outright loses at most FLUSH_SECONDS of
  access lines, never data.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import IO

from tornchat import http_edge

ACCESS_LOGGER = http_edge.access_log.name
FLUSH_SECONDS = 0.1
HELD_LIMIT = 64 * 1024
LINE_FORMAT = "%(asctime)s %(name)s %(message)s"


class LogFormatter(logging.Formatter):
    """logging's default line, its date and time formatted once per second (every request logs one)."""

    _second = -1
    _text = ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        return self.time_text(record.created)

    def time_text(self, created: float) -> str:
        """What `%(asctime)s` shows for a record created at `created` (time.time())."""
        second = int(created)
        if second != self._second:
            self._second = second
            self._text = time.strftime(self.default_time_format, self.converter(created))
        return self.default_msec_format % (self._text, int((created - second) * 1000))


class HeldAccessHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A StreamHandler that holds access lines logged on a running event loop and writes them together."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__(stream)
        self.held: list[str] = []
        self.held_size = 0
        self.flush_loop: asyncio.AbstractEventLoop | None = None  # where the pending flush is scheduled

    def emit(self, record: logging.LogRecord) -> None:
        try:
            access = record.name == ACCESS_LOGGER and record.levelno < logging.WARNING
            self._take(self.format(record) + self.terminator, access)
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)

    def access_line(self, created: float, message: str) -> None:
        """An access line without its record: the text format() gives a record of this time and message."""
        assert isinstance(self.formatter, LogFormatter)
        line = f"{self.formatter.time_text(created)} {ACCESS_LOGGER} {message}{self.terminator}"
        with self.lock:  # type: ignore[union-attr]
            self._take(line, True)

    def _take(self, line: str, holdable: bool) -> None:
        """Hold the line, and write what is held unless it may wait (called with the lock held)."""
        self.held.append(line)
        self.held_size += len(line)
        if not (holdable and self.held_size < HELD_LIMIT and self._flush_scheduled()):
            self.flush()

    def _flush_scheduled(self) -> bool:
        """Whether a flush is scheduled on a running loop (now, on this thread's, if none was): False without one."""
        if self.flush_loop is not None and self.flush_loop.is_running():
            return True  # (asyncio.get_running_loop costs a system call on Python 3.11: getpid)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        self.flush_loop = loop  # none was pending, or one on a loop that has since stopped
        loop.call_later(FLUSH_SECONDS, self.flush)
        return True

    def flush(self) -> None:
        """Write what is held, then flush the stream (logging.shutdown calls this at exit)."""
        with self.lock:  # type: ignore[union-attr]
            self.flush_loop = None
            if self.held:
                text = "".join(self.held)
                self.held.clear()
                self.held_size = 0
                self.stream.write(text)
            super().flush()


def configure_logging() -> None:
    """INFO and above to stderr through HeldAccessHandler, unless the root logger has handlers already."""
    handler = HeldAccessHandler()
    handler.setFormatter(LogFormatter(LINE_FORMAT))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    if logging.getLogger().handlers != [handler]:  # configured elsewhere (a test, an embedding program)
        return
    # The line shows neither thread nor process: records need not look them up (a system call each).
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    if _reaches_only_root(http_edge.access_log):
        http_edge.write_access_lines_to(handler.access_line)


def _reaches_only_root(logger: logging.Logger) -> bool:
    """Whether the logger's records reach the root's handlers and nothing else on the way
    (levels need no look: log_access asks isEnabledFor first either way)."""
    found: logging.Logger | None = logger
    while found is not None and found.parent is not None:
        if found.handlers or found.filters or not found.propagate:
            return False
        found = found.parent
    return True
