"""Actions that create channels together with their first subscribers."""

from __future__ import annotations

from storage.channels.channel_admin import publish_default_channels
from storage.channels.channel_creation import ChannelOptions, check_subscriber_ids, create_channel
from storage.db.tx import Tx
from storage.membership import subscriptions
from storage.model.errors import insufficient_permission
from storage.model.user import User


def create_channel_with_subscribers(
    tx: Tx, actor: User, name: str, options: ChannelOptions, subscriber_ids: list[int], web_public_enabled: bool
) -> int:
    """POST /channels/create: create the channel and subscribe the given users; return its id."""
    channel = create_channel(tx, actor, name, options, web_public_enabled)
    user_ids = check_subscriber_ids(tx, subscriber_ids)
    # The same rule as adding subscribers later: the creator administers the channel by default.
    if any(user_id != actor.id for user_id in user_ids) and not subscriptions.can_add_subscribers(tx, actor, channel):
        raise insufficient_permission()
    subscriptions.subscribe(tx, [channel], user_ids)
    if options.is_default_stream:
        publish_default_channels(tx)
    return channel.id
