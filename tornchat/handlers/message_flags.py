"""Read state and personal flags: /messages/flags, /messages/flags/narrow, mark_*_as_read."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from storage.messages import message_flags
from tornchat.base import BaseHandler
from tornchat.params import Params

NonNegative = Annotated[int, msgspec.Meta(ge=0)]


class UpdateMessageFlags(msgspec.Struct, kw_only=True):
    messages: list[int]
    op: str
    flag: str


class UpdateMessageFlagsForNarrow(msgspec.Struct, kw_only=True):
    # Field order is the order missing parameters are reported in (Zulip's).
    anchor: str
    include_anchor: bool = True
    num_before: NonNegative
    num_after: NonNegative
    narrow: Any  # required, but may be null
    op: str
    flag: str


class MarkStreamAsRead(msgspec.Struct):
    stream_id: int


class MarkTopicAsRead(msgspec.Struct):
    stream_id: int
    topic_name: str


UPDATE_FLAGS = Params(UpdateMessageFlags)
UPDATE_FLAGS_FOR_NARROW = Params(UpdateMessageFlagsForNarrow)
MARK_STREAM = Params(MarkStreamAsRead)
MARK_TOPIC = Params(MarkTopicAsRead)


class MessageFlagsHandler(BaseHandler):
    params = {"post": UPDATE_FLAGS}

    def post(self) -> None:
        p = self.parse()
        self.respond(self.server.db.write(message_flags.update_message_flags, self.user, p.messages, p.op, p.flag))


class MessageFlagsForNarrowHandler(BaseHandler):
    params = {"post": UPDATE_FLAGS_FOR_NARROW}

    def post(self) -> None:
        p = self.parse()
        request = msgspec.convert(msgspec.structs.asdict(p), message_flags.FlagsForNarrowRequest)
        self.respond(self.server.db.write(message_flags.update_message_flags_for_narrow, self.user, request))


class MarkStreamAsReadHandler(BaseHandler):
    params = {"post": MARK_STREAM}

    def post(self) -> None:
        p = self.parse()
        self.server.db.write(message_flags.mark_stream_as_read, self.user, p.stream_id)
        self.respond()


class MarkTopicAsReadHandler(BaseHandler):
    params = {"post": MARK_TOPIC}

    def post(self) -> None:
        p = self.parse()
        self.server.db.write(message_flags.mark_topic_as_read, self.user, p.stream_id, p.topic_name)
        self.respond()


class MarkAllAsReadHandler(BaseHandler):
    def post(self) -> None:
        self.parse()
        self.server.db.write(message_flags.mark_all_as_read, self.user)
        # Zulip answers complete=false when its batches time out; one transaction here always completes.
        self.respond({"complete": True})


ROUTES = [
    (r"/messages/flags", MessageFlagsHandler),
    (r"/messages/flags/narrow", MessageFlagsForNarrowHandler),
    (r"/mark_stream_as_read", MarkStreamAsReadHandler),
    (r"/mark_topic_as_read", MarkTopicAsReadHandler),
    (r"/mark_all_as_read", MarkAllAsReadHandler),
]
