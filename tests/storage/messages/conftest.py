"""Fixtures of the message tests (tests/storage/messages/) that more than one module takes."""

from __future__ import annotations

import pytest

from tests.support.message_flags_helpers import World
from tests.support.send_helpers import make_team


@pytest.fixture
def world(live):  # type: ignore[no-untyped-def]
    """The owner, Alice and Bob, all subscribed to the public channel "general" (the flag tests)."""
    return World(live)


@pytest.fixture
def team(live):  # type: ignore[no-untyped-def]
    """Alice and Bob subscribed with the owner to #general, Carol not (send_helpers.make_team):
    (alice, bob, carol, channel id)."""
    return make_team(live)
