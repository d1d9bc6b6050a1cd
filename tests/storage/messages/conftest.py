"""Fixtures of the message tests (tests/storage/messages/) that more than one module takes."""

from __future__ import annotations

import pytest

from tests.support.message_flags_helpers import World


@pytest.fixture
def world(live):  # type: ignore[no-untyped-def]
    """The owner, Alice and Bob, all subscribed to the public channel "general" (the flag tests)."""
    return World(live)
