"""GET /messages/{message_id}/history (edit history) and POST /messages/render (Markdown preview)."""

from __future__ import annotations

from typing import Annotated

import msgspec
import tornado.web

from storage.messages.message_history import message_history
from storage.messages.message_render import render_message
from storage.model.realm import MAX_MESSAGE_LENGTH
from tornchat.base import ID, BaseHandler
from tornchat.params import Params


class GetMessageHistory(msgspec.Struct, kw_only=True):
    allow_empty_topic_name: bool = False


class RenderMessage(msgspec.Struct, kw_only=True):
    # Zulip: any string up to a message's length; "" renders as "".
    content: Annotated[str, msgspec.Meta(max_length=MAX_MESSAGE_LENGTH)]


GET_MESSAGE_HISTORY = Params(GetMessageHistory)
RENDER_MESSAGE = Params(RenderMessage)


class MessageHistoryHandler(BaseHandler):
    params = {"get": GET_MESSAGE_HISTORY}

    def get(self, message_id: str) -> None:
        p = self.parse()
        history = self.server.db.read(message_history, self.user, int(message_id), p.allow_empty_topic_name)
        self.respond({"message_history": history})


class RenderMessageHandler(BaseHandler):
    params = {"post": RENDER_MESSAGE}

    def post(self) -> None:
        p = self.parse()
        # The renderer of sending (mentions, channel links, linkifiers as the sender sees them); nothing is stored.
        rendered = self.server.db.read(render_message, p.content, self.user)
        self.respond({"rendered": rendered.html})


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    ("/messages/" + ID + "/history", MessageHistoryHandler),
    (r"/messages/render", RenderMessageHandler),
]
