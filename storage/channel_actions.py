"""Actions that create channels together with their first subscribers."""

from __future__ import annotations

from storage import subscriptions
from storage.channels import ChannelOptions, check_can_add_others, check_subscriber_ids, create_channel
from storage.db import Tx
from storage.users import User


def create_channel_with_subscribers(
    tx: Tx, actor: User, name: str, options: ChannelOptions, subscriber_ids: list[int], web_public_enabled: bool
) -> int:
    """POST /channels/create: create the channel and subscribe the given users; return its id."""
    channel = create_channel(tx, actor, name, options, web_public_enabled)
    user_ids = check_subscriber_ids(tx, subscriber_ids)
    check_can_add_others(tx, actor, user_ids)
    subscriptions.subscribe(tx, [channel], user_ids)
    return channel.id
