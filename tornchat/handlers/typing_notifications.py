"""Typing notifications: POST /typing and POST /messages/{message_id}/typing (editing)."""

from __future__ import annotations

import msgspec
import tornado.web

from storage.messages import typing_notifications as typing_storage
from tornchat.base import ID, BaseHandler
from tornchat.params import Params


class SendTyping(msgspec.Struct, kw_only=True):
    op: str
    # `type` on the wire: "direct" (alias "private") or "stream" (alias "channel").
    type: str = "direct"
    to: list[int] | None = None
    stream_id: int | None = None
    topic: str | None = None


class SendEditTyping(msgspec.Struct, kw_only=True):
    op: str


SEND_TYPING = Params(SendTyping)
SEND_EDIT_TYPING = Params(SendEditTyping)


class TypingHandler(BaseHandler):
    params = {"post": SEND_TYPING}

    def post(self) -> None:
        p = self.parse()
        # A read transaction: typing notifications store nothing, only publish.
        self.server.db.read(
            typing_storage.send_typing, self.server.realm, self.user, p.op, p.type, p.to, p.stream_id, p.topic
        )
        self.respond()


class EditTypingHandler(BaseHandler):
    params = {"post": SEND_EDIT_TYPING}

    def post(self, message_id: str) -> None:
        p = self.parse()
        self.server.db.read(typing_storage.send_edit_typing, self.user, int(message_id), p.op)
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/typing", TypingHandler),
    ("/messages/" + ID + "/typing", EditTypingHandler),
]
