"""What a message is sent to and what its content renders to: the types send, push and edit share."""

from __future__ import annotations

import msgspec

from storage.model.channel import Channel


class Destination(msgspec.Struct):
    """Where a validated message goes."""

    recipient_id: int
    channel: Channel | None
    topic: str
    receivers: list[int]  # every user who gets a user_messages row, the sender included


class Rendered(msgspec.Struct):
    """A message's HTML and what its content mentions and links to."""

    html: str
    mentioned_user_ids: set[int]  # @**Name**, @**Name|id**; never silent @_**Name**
    mentioned_group_ids: set[int]  # @*group*; never silent @_*group*
    stream_wildcard: bool  # @**all**, @**everyone**, @**channel**, @**stream**
    topic_wildcard: bool  # @**topic**
    has_link: bool
    has_image: bool
    has_attachment: bool  # a link to this server's /user_uploads/
    is_me_message: bool
