"""The organization (one per database): creation, settings and limits."""

from __future__ import annotations

import secrets
import uuid

from storage.db.tx import Tx
from storage.org import groups

# Realm settings that hold a group id, and the system group each starts as.
REALM_GROUP_DEFAULTS = {
    "can_access_all_users_group": "role:everyone",
    "can_add_custom_emoji_group": "role:members",
    "can_add_subscribers_group": "role:members",
    "can_create_groups": "role:members",
    "can_create_private_channel_group": "role:members",
    "can_create_public_channel_group": "role:members",
    "can_create_web_public_channel_group": "role:owners",
    "can_delete_any_message_group": "role:administrators",
    "can_delete_own_message_group": "role:everyone",
    "can_manage_all_groups": "role:owners",
    "can_set_delete_message_policy_group": "role:moderators",
    "can_set_topics_policy_group": "role:members",
}


def realm_exists(tx: Tx) -> bool:
    """Return whether the realm has been created in this database."""
    return tx.one("SELECT 1 FROM realm") is not None


def create_realm(tx: Tx, name: str, url: str, email_host: str, enable_gravatar: bool = False) -> None:
    """Create the realm and its eight system groups with the realm's group-setting defaults."""
    tx.execute(
        "INSERT INTO realm (id, name, url, email_host, date_created, uuid, uuid_owner_secret, enable_gravatar)"
        " VALUES (1, ?, ?, ?, ?, ?, ?, ?)",
        (
            name,
            url,
            email_host,
            tx.timestamp,
            str(uuid.uuid4()),
            "zuliprealm_" + secrets.token_hex(24),
            enable_gravatar,
        ),  # fmt: skip
    )
    ids = groups.create_system_groups(tx)
    for setting, group_name in REALM_GROUP_DEFAULTS.items():
        tx.execute(f"UPDATE realm SET {setting} = ?", (ids[group_name],))


def realm_group(tx: Tx, setting: str) -> int:
    """Return the group id held by one of the realm's group settings."""
    if setting not in REALM_GROUP_DEFAULTS:
        raise KeyError(setting)
    return int(tx.value(f"SELECT {setting} FROM realm"))


def update_realm(
    tx: Tx,
    name: str | None = None,
    url: str | None = None,
    email_host: str | None = None,
    enable_gravatar: bool | None = None,
) -> None:
    """Change the realm's name, URL, dummy-email host or Gravatar switch (server settings given at start)."""
    changes = (("name", name), ("url", url), ("email_host", email_host), ("enable_gravatar", enable_gravatar))
    for column, value in changes:
        if value is not None:
            # Only a change is written: a write to the realm drops every encoded message (storage/cache/).
            tx.execute(f"UPDATE realm SET {column} = ? WHERE {column} IS NOT ?", (value, value))
