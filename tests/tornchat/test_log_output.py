"""The command's log handler: access lines held while a loop runs, everything else written at once."""

from __future__ import annotations

import asyncio
import io
import logging
import re
import subprocess
import sys
import time
from typing import Any

from tornchat import http_edge
from tornchat.log_output import ACCESS_LOGGER, FLUSH_SECONDS, HELD_LIMIT, LINE_FORMAT, HeldAccessHandler, LogFormatter


def make_handler() -> tuple[HeldAccessHandler, io.StringIO]:
    stream = io.StringIO()
    handler = HeldAccessHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    return handler, stream


def run(coroutine: Any) -> Any:
    """Run on a loop of its own, which never becomes the thread's current loop (asyncio.run's would
    replace, and so drop unclosed, a loop an earlier test left current)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def record(name: str, message: str, level: int = logging.INFO) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 0, message, None, None)


def test_without_a_running_loop_each_line_is_written_at_once():
    handler, stream = make_handler()
    handler.handle(record(ACCESS_LOGGER, "GET /a 200"))
    assert stream.getvalue() == "tornchat.access GET /a 200\n"
    handler.handle(record("tornchat", "started"))
    assert stream.getvalue().splitlines() == ["tornchat.access GET /a 200", "tornchat started"]


def test_access_lines_on_a_loop_are_held_then_written_together_in_order():
    handler, stream = make_handler()

    async def main() -> list[str]:
        for n in range(3):
            handler.handle(record(ACCESS_LOGGER, f"GET /{n} 200"))
        held = stream.getvalue()
        await asyncio.sleep(2 * FLUSH_SECONDS)
        return [held, stream.getvalue()]

    held, later = run(main())
    assert held == ""
    assert later.splitlines() == [f"tornchat.access GET /{n} 200" for n in range(3)]
    assert handler.held == [] and handler.flush_loop is None


def test_other_lines_and_warnings_write_what_was_held_before_them():
    handler, stream = make_handler()

    async def main() -> list[str]:
        handler.handle(record(ACCESS_LOGGER, "GET /a 200"))
        handler.handle(record(ACCESS_LOGGER, "POST /b 413 refused", logging.WARNING))
        first = stream.getvalue()
        handler.handle(record(ACCESS_LOGGER, "GET /c 200"))
        handler.handle(record("tornchat", "queue saved"))
        return [first, stream.getvalue()]

    first, second = run(main())
    assert first.splitlines() == ["tornchat.access GET /a 200", "tornchat.access POST /b 413 refused"]
    assert second.splitlines()[2:] == ["tornchat.access GET /c 200", "tornchat queue saved"]


def test_held_lines_are_written_once_they_reach_the_limit():
    handler, stream = make_handler()
    path = "/" + "x" * 1000

    async def main() -> tuple[int, int]:
        count = 0
        while not stream.getvalue():
            handler.handle(record(ACCESS_LOGGER, f"GET {path} 200"))
            count += 1
        return count, len(stream.getvalue())

    count, written = run(main())
    line = len(f"tornchat.access GET {path} 200\n")
    assert count == -(-HELD_LIMIT // line)  # the first line that brings the total to the limit
    assert written == count * line


def test_a_flush_pending_on_a_stopped_loop_does_not_keep_later_lines_held():
    handler, stream = make_handler()

    async def log(message: str) -> None:
        handler.handle(record(ACCESS_LOGGER, message))

    run(log("GET /first 200"))  # the loop ends before its flush comes due
    assert stream.getvalue() == ""

    async def second() -> None:
        await log("GET /second 200")
        await asyncio.sleep(2 * FLUSH_SECONDS)

    run(second())
    assert stream.getvalue().splitlines() == ["tornchat.access GET /first 200", "tornchat.access GET /second 200"]


def test_the_command_writes_access_lines_without_records_and_the_rest_at_exit():
    """configure_logging in a process of its own: log_access's lines go straight to the handler, in
    the order of the records around them, and all are written when the process exits."""
    script = f"""
import asyncio, logging
from tornchat import http_edge
from tornchat.log_output import configure_logging
configure_logging()
assert http_edge._access_writer is not None
async def main():
    http_edge.log_access("GET", "/api/v1/messages", 200, 0.00125)
    logging.getLogger("{ACCESS_LOGGER}").info("GET %s %d %.1fms", "/%", 404, 0.5)
    http_edge.log_access("POST", "/api/v1/users/m\u00e9", 400, 2)
    logging.getLogger("tornchat").info("stopping")
asyncio.run(main())
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
    expected = [
        f"{ACCESS_LOGGER} GET /api/v1/messages 200 1.2ms",
        f"{ACCESS_LOGGER} GET /% 404 0.5ms",
        f"{ACCESS_LOGGER} POST /api/v1/users/m\u00e9 400 2000.0ms",
        "tornchat stopping",
    ]
    lines = result.stderr.splitlines()
    assert len(lines) == len(expected)
    for line, text in zip(lines, expected, strict=True):
        assert re.fullmatch(f"{stamp} {re.escape(text)}", line), line


def test_an_access_line_without_its_record_is_the_line_of_the_record():
    handler = HeldAccessHandler(io.StringIO())
    handler.setFormatter(LogFormatter(LINE_FORMAT))
    for created in (1_800_000_000.0, 1_800_000_000.9994, 1_800_000_001.0625):
        one = record(ACCESS_LOGGER, "GET /x 200 1.0ms")
        one.created, one.msecs = created, int((created - int(created)) * 1000) + 0.0
        handler.handle(one)
        handler.access_line(created, "GET /x 200 1.0ms")
        first, second = handler.stream.getvalue().splitlines()[-2:]
        assert first == second


def test_log_access_hands_its_line_to_the_writer_set(caplog):
    lines: list[tuple[float, str]] = []
    http_edge.write_access_lines_to(lambda created, message: lines.append((created, message)))
    try:
        with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
            before = time.time()
            http_edge.log_access("GET", "/api/v1/messages", 200, 0.0031)
    finally:
        http_edge.write_access_lines_to(None)
    assert [message for _, message in lines] == ["GET /api/v1/messages 200 3.1ms"]
    assert before <= lines[0][0] <= time.time()
    assert not [r for r in caplog.records if r.name == ACCESS_LOGGER]
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        http_edge.log_access("GET", "/api/v1/messages", 200, 0.0031)
    assert [r.getMessage() for r in caplog.records if r.name == ACCESS_LOGGER] == ["GET /api/v1/messages 200 3.1ms"]


def test_log_lines_are_loggings_default_format():
    """LogFormatter caches the date and time per second; the lines stay what logging.Formatter writes."""
    fmt = "%(asctime)s %(name)s %(message)s"
    ours, standard = LogFormatter(fmt), logging.Formatter(fmt)
    for created in (1_800_000_000.25, 1_800_000_000.75, 1_800_000_001.5, 1_800_000_000.125):
        one = logging.LogRecord("tornchat.access", logging.INFO, __file__, 0, "GET %s", ("/x",), None)
        one.created, one.msecs = created, (created - int(created)) * 1000
        assert ours.format(one) == standard.format(one)


def test_access_lines_skip_records_only_where_nothing_else_would_see_them():
    from tornchat.log_output import _reaches_only_root

    logger = logging.getLogger("tornchat.test_log_output.access")
    assert _reaches_only_root(logger)
    for change, undo in [
        (lambda: logger.addHandler(logging.NullHandler()), lambda: logger.handlers.clear()),
        (
            lambda: logging.getLogger("tornchat").addFilter(logging.Filter("x")),
            lambda: logging.getLogger("tornchat").filters.clear(),
        ),
        (lambda: setattr(logger, "propagate", False), lambda: setattr(logger, "propagate", True)),
    ]:
        change()
        try:
            assert not _reaches_only_root(logger)
        finally:
            undo()
    assert _reaches_only_root(logger)


def test_configure_logging_leaves_a_configured_root_alone():
    """Under pytest the root logger has handlers: no handler is added and records stay records."""
    from tornchat.log_output import configure_logging

    root = logging.getLogger()
    before = list(root.handlers)
    assert before
    configure_logging()
    assert root.handlers == before and http_edge._access_writer is None
