"""One message: GET, PATCH (edit content, topic, channel) and DELETE /messages/{message_id}."""

from __future__ import annotations

from typing import Annotated

import msgspec
import tornado.web

from storage.messages.message_delete import delete_message
from storage.messages.message_edit import EditRequest, get_message, update_message
from tornchat.base import ID, BaseHandler
from tornchat.params import Params


class GetMessage(msgspec.Struct, kw_only=True):
    apply_markdown: bool = True
    allow_empty_topic_name: bool = False


class UpdateMessage(msgspec.Struct, kw_only=True):
    content: str | None = None
    topic: str | None = None
    stream_id: Annotated[int, msgspec.Meta(ge=0)] | None = None
    propagate_mode: str = "change_one"  # checked in storage: "Invalid propagate_mode"
    # Accepted; tornchat sends no notification-bot messages about moves.
    send_notification_to_old_thread: bool = False
    send_notification_to_new_thread: bool = True
    prev_content_sha256: str | None = None


GET_MESSAGE = Params(GetMessage)
UPDATE_MESSAGE = Params(UpdateMessage, aliases={"subject": "topic"})


class MessageHandler(BaseHandler):
    params = {"get": GET_MESSAGE, "patch": UPDATE_MESSAGE}

    def get(self, message_id: str) -> None:
        p = self.parse()
        self.respond(
            self.server.db.read(get_message, self.user, int(message_id), p.apply_markdown, p.allow_empty_topic_name)
        )

    def patch(self, message_id: str) -> None:
        p = self.parse()
        request = msgspec.convert(msgspec.structs.asdict(p), EditRequest)
        self.respond(self.server.db.write(update_message, self.user, int(message_id), request))

    def delete(self, message_id: str) -> None:
        self.parse()
        self.server.db.write(delete_message, self.user, int(message_id))
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [("/messages/" + ID, MessageHandler)]
