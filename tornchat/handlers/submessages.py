"""Widget submessages: POST /submessage (votes, options and tasks of polls and to-do lists)."""

from __future__ import annotations

import msgspec
import tornado.web

from storage.messages.submessages import add_submessage
from tornchat.base import BaseHandler
from tornchat.params import Params


class AddSubmessage(msgspec.Struct, kw_only=True):
    message_id: int
    msg_type: str
    content: str  # a JSON text, stored and sent on as it is


ADD_SUBMESSAGE = Params(AddSubmessage)


class SubmessageHandler(BaseHandler):
    params = {"post": ADD_SUBMESSAGE}

    def post(self) -> None:
        p = self.parse()
        self.server.db.write(add_submessage, self.user, p.message_id, p.msg_type, p.content)
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [(r"/submessage", SubmessageHandler)]
