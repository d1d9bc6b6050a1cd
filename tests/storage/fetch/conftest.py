"""Fixtures of the GET /messages tests (tests/storage/fetch/) that more than one module takes."""

from __future__ import annotations

import os

import pytest

from storage.channels.channel_creation import ChannelOptions, create_channel
from storage.db.database import Database
from storage.model import recipients
from storage.org import realm as realm_storage
from storage.org import users


@pytest.fixture(scope="module")
def plans_db(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A database with Alice and Bob, a public and a protected channel and a direct message group:
    what the EXPLAIN QUERY PLAN pins plan on. Yields (db, {"alice": ..., "bob": ...})."""
    path = os.path.join(str(tmp_path_factory.mktemp("plans")), "db.sqlite3")
    db = Database(path, clock=lambda: 1_800_000_000.0)

    def create(tx):
        realm_storage.create_realm(tx, "Org", "http://x", "x.example")
        alice = users.create_user(tx, "alice@x.example", "Alice", None)
        bob = users.create_user(tx, "bob@x.example", "Bob", None)
        general = create_channel(tx, alice, "general", ChannelOptions(), True)
        protected = create_channel(tx, alice, "protected", ChannelOptions(invite_only=True), True)
        for channel in (general, protected):
            tx.execute(
                "INSERT INTO subscriptions (user_id, channel_id, color) VALUES (?, ?, '#fff')", (alice.id, channel.id)
            )
            recipients.get_or_create_recipient(tx, recipients.CHANNEL, channel.id)
        recipients.get_or_create_direct_message_group(tx, [alice.id, bob.id])
        return alice, bob

    alice, bob = db.write(create)
    yield db, {"alice": alice, "bob": bob}
    db.close()
