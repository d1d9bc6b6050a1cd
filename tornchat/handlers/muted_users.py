"""Muted users: POST and DELETE /users/me/muted_users/{muted_user_id}."""

from __future__ import annotations

import tornado.web

from storage.messages import muted_users
from tornchat.base import ID, BaseHandler


class MutedUserHandler(BaseHandler):
    def post(self, muted_user_id: str) -> None:
        self.parse()
        self.server.db.write(muted_users.mute_user, self.user, int(muted_user_id))
        self.respond()

    def delete(self, muted_user_id: str) -> None:
        self.parse()
        self.server.db.write(muted_users.unmute_user, self.user, int(muted_user_id))
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    ("/users/me/muted_users/" + ID, MutedUserHandler),
]
