"""Read receipts: GET /messages/{message_id}/read_receipts."""

from __future__ import annotations

import tornado.web

from storage.messages.read_receipts import read_receipts
from tornchat.base import ID, BaseHandler


class ReadReceiptsHandler(BaseHandler):
    def get(self, message_id: str) -> None:
        self.parse()
        self.respond({"user_ids": self.server.db.read(read_receipts, self.user, int(message_id))})


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    ("/messages/" + ID + "/read_receipts", ReadReceiptsHandler),
]
