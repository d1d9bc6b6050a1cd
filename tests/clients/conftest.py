"""Fixtures of the real-client tests (tests/clients/) that more than one module takes."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.support.client_helpers import AccessLog, zulip_term_path
from tests.support.zulip_terminal_helpers import Terminal, seed, start_terminal


@pytest.fixture
def access_log() -> Iterator[AccessLog]:
    """The live server's answers while a test runs (the `tornchat.access` log)."""
    logger = logging.getLogger("tornchat.access")
    handler = AccessLog()
    previous = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(previous)


@pytest.fixture
def terminal(live, tmp_path, access_log) -> Iterator[Terminal]:  # access_log: from the client's first request
    zulip_term_path()
    bob, general, edited = seed(live)
    tmux = start_terminal(live, tmp_path)
    try:
        yield Terminal(live, bob, tmux, general, edited)
    finally:
        tmux.close()
        traceback = tmp_path / "zulip-terminal-tracebacks.log"
        if traceback.exists():  # shown in the failure report, with the captured screen
            print(traceback.read_text())
