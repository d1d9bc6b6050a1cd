"""Messages: POST /messages, GET /messages."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from storage.message_fetch import FetchRequest, get_messages
from storage.messages import SendRequest, send_message
from tornchat.base import BaseHandler
from tornchat.params import Params, decode_json_or_text

NonNegative = Annotated[int, msgspec.Meta(ge=0)]


class SendMessage(msgspec.Struct, kw_only=True):
    type: str
    to: str | None = None
    content: str
    topic: str | None = None
    read_by_sender: bool | None = None
    # The sender's event queue gets `local_message_id` = local_id with the message event (local echo).
    queue_id: str | None = None
    local_id: str | None = None


class GetMessages(msgspec.Struct, kw_only=True):
    # None: not sent. message_ids rules out every range parameter, even sent with its default value.
    anchor: str | None = None
    anchor_date: str | None = None
    include_anchor: bool | None = None
    num_before: NonNegative | None = None
    num_after: NonNegative | None = None
    narrow: Any = None
    message_ids: list[NonNegative] | None = None
    use_first_unread_anchor: bool | None = None
    apply_markdown: bool = True
    client_gravatar: bool = True
    allow_empty_topic_name: bool = False


SEND_MESSAGE = Params(SendMessage, aliases={"subject": "topic"})
GET_MESSAGES = Params(GetMessages)


def decode_to(raw: str | None) -> Any:
    """`to` is JSON (an id, a name, a list) or, for convenience, a plain channel name or emails."""
    return None if raw is None else decode_json_or_text("to", raw)


class MessagesHandler(BaseHandler):
    params = {"post": SEND_MESSAGE, "get": GET_MESSAGES}

    async def post(self) -> None:
        p = self.parse()
        request = SendRequest(
            type=p.type, to=decode_to(p.to), content=p.content, topic=p.topic,
            read_by_sender=p.read_by_sender, client=self.client_name(), queue_id=p.queue_id, local_id=p.local_id,
        )  # fmt: skip
        # Group commit: sends arriving together share a transaction; answered once it committed.
        message_id = await self.server.writes.write(send_message, self.user, request)
        self.respond({"id": message_id})

    def get(self) -> None:
        p = self.parse()
        request = msgspec.convert(msgspec.structs.asdict(p), FetchRequest)
        # `messages` comes encoded from the message cache (storage/message_cache.py) unless it is off.
        cache_bytes = self.server.settings.message_cache_mib << 20 or None
        self.respond(self.server.db.read(get_messages, self.user, request, cache_bytes))


ROUTES = [(r"/messages", MessagesHandler)]
