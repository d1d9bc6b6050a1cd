"""Alert words: GET, POST and DELETE /users/me/alert_words; each answers the user's full list."""

from __future__ import annotations

from typing import Annotated

import msgspec
import tornado.web

from storage.org import alert_words
from tornchat.base import BaseHandler
from tornchat.params import Params


class AddAlertWords(msgspec.Struct):
    alert_words: list[Annotated[str, msgspec.Meta(max_length=alert_words.MAX_ALERT_WORD_LENGTH)]]


class RemoveAlertWords(msgspec.Struct):
    alert_words: list[str]


ADD_ALERT_WORDS = Params(AddAlertWords)
REMOVE_ALERT_WORDS = Params(RemoveAlertWords)


class AlertWordsHandler(BaseHandler):
    params = {"post": ADD_ALERT_WORDS, "delete": REMOVE_ALERT_WORDS}

    def get(self) -> None:
        self.respond({"alert_words": self.server.db.read(alert_words.list_alert_words, self.user)})

    def post(self) -> None:
        p = self.parse()
        self.respond({"alert_words": self.server.db.write(alert_words.add_alert_words, self.user, p.alert_words)})

    def delete(self) -> None:
        p = self.parse()
        self.respond({"alert_words": self.server.db.write(alert_words.remove_alert_words, self.user, p.alert_words)})


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/users/me/alert_words", AlertWordsHandler),
]
