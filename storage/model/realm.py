"""The Realm: the organization's row (one per database) and the limits announced to clients."""

from __future__ import annotations

import msgspec

from storage.db.tx import Tx

# Limits announced to clients (POST /register) and enforced by the validators.
MAX_MESSAGE_LENGTH = 10000
MAX_TOPIC_LENGTH = 60
MAX_STREAM_NAME_LENGTH = 60
MAX_STREAM_DESCRIPTION_LENGTH = 1024
MAX_NAME_LENGTH = 100
EMPTY_TOPIC_DISPLAY_NAME = "general chat"


class Realm(msgspec.Struct, frozen=True):
    """The realm row, as the rest of the code reads it."""

    name: str
    url: str
    email_host: str
    date_created: int
    default_email_address_visibility: int
    enable_spectator_access: bool
    uuid: str  # the organization's identity at the push bouncer (migration 0020)
    uuid_owner_secret: str
    enable_gravatar: bool  # the server's switch (tornchat/settings.py), written at every start


def get_realm(tx: Tx) -> Realm:
    """Return the realm; raise LookupError if the database was never initialised."""
    row = tx.one(
        "SELECT name, url, email_host, date_created, default_email_address_visibility,"
        " enable_spectator_access, uuid, uuid_owner_secret, enable_gravatar FROM realm"
    )
    if row is None:
        raise LookupError("the database holds no realm: run `tornchat init` first")
    return Realm(
        row["name"],
        row["url"],
        row["email_host"],
        row["date_created"],
        row["default_email_address_visibility"],
        bool(row["enable_spectator_access"]),
        row["uuid"],
        row["uuid_owner_secret"],
        bool(row["enable_gravatar"]),
    )
