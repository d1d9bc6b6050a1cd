"""New accounts as Zulip makes them: the user, then the realm's default channels subscribed.

storage/org/users.py creates the row and its groups; subscribing lives in storage/membership/subscriptions.py, which
imports users. This module joins the two so that every way of creating an account (POST /users,
`tornchat create-user`) starts the person in the channels an administrator marked as default.
"""

from __future__ import annotations

from typing import Any

from storage.channels.channel_creation import default_channel_ids
from storage.db.tx import Tx
from storage.membership import subscriptions
from storage.model.channel import get_channel_by_id
from storage.org import users


def create_account(tx: Tx, email: str, full_name: str, password: str | None, *args: Any, **kwargs: Any) -> users.User:
    """Create a user (users.create_user's arguments and errors) subscribed to the default channels."""
    user = users.create_user(tx, email, full_name, password, *args, **kwargs)
    subscribe_to_default_channels(tx, user)
    return user


def create_account_by_admin(
    tx: Tx, actor: users.User, email: str, password: str, full_name: str, password_hash: str | None = None
) -> int:
    """POST /users: check the actor (users.check_user_by_admin), create the account; return its id."""
    users.check_user_by_admin(tx, actor, email, password, full_name)
    return create_account(tx, email, full_name, password, password_hash=password_hash).id


def subscribe_to_default_channels(tx: Tx, user: users.User) -> None:
    """Subscribe the user to every unarchived default channel, with the usual subscription events."""
    channels = [get_channel_by_id(tx, channel_id) for channel_id in default_channel_ids(tx)]
    unarchived = [channel for channel in channels if channel is not None and not channel.is_archived]
    if unarchived:
        subscriptions.subscribe(tx, unarchived, [user.id])
