"""Emoji reactions: POST and DELETE /messages/{message_id}/reactions."""

from __future__ import annotations

import msgspec
import tornado.web

from storage.messages.reactions import add_reaction, remove_reaction
from tornchat.base import ID, BaseHandler
from tornchat.params import Params


class AddReaction(msgspec.Struct, kw_only=True):
    emoji_name: str
    emoji_code: str | None = None
    reaction_type: str | None = None


class RemoveReaction(msgspec.Struct, kw_only=True):
    emoji_name: str | None = None
    emoji_code: str | None = None
    reaction_type: str | None = None


ADD_REACTION = Params(AddReaction)
REMOVE_REACTION = Params(RemoveReaction)


class ReactionsHandler(BaseHandler):
    params = {"post": ADD_REACTION, "delete": REMOVE_REACTION}

    def post(self, message_id: str) -> None:
        p = self.parse()
        self.server.db.write(add_reaction, self.user, int(message_id), p.emoji_name, p.emoji_code, p.reaction_type)
        self.respond()

    def delete(self, message_id: str) -> None:
        p = self.parse()
        self.server.db.write(remove_reaction, self.user, int(message_id), p.emoji_name, p.emoji_code, p.reaction_type)
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [("/messages/" + ID + "/reactions", ReactionsHandler)]
