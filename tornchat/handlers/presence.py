"""Presence: POST /users/me/presence, GET /users/{user_id_or_email}/presence, GET /realm/presence."""

from __future__ import annotations

import msgspec
import tornado.web

from storage.org import presence
from tornchat.base import BaseHandler
from tornchat.params import Params


class UpdatePresence(msgspec.Struct, kw_only=True):
    status: str
    ping_only: bool = False
    # Zulip records new_user_input in its activity analytics, which tornchat does not keep.
    new_user_input: bool = False
    slim_presence: bool = False
    last_update_id: int | None = None
    history_limit_days: int | None = None


UPDATE_PRESENCE = Params(UpdatePresence)


class OwnPresenceHandler(BaseHandler):
    params = {"post": UPDATE_PRESENCE}

    def post(self) -> None:
        p = self.parse()
        data = self.server.db.write(
            presence.update_presence, self.server.realm, self.user, p.status, ping_only=p.ping_only,
            slim=p.slim_presence, last_update_id=p.last_update_id, history_limit_days=p.history_limit_days,
        )  # fmt: skip
        self.respond(data)


class UserPresenceHandler(BaseHandler):
    def get(self, user_id_or_email: str) -> None:
        self.parse()
        self.respond(self.server.db.read(presence.user_presence, self.server.realm, self.user, user_id_or_email))


class RealmPresenceHandler(BaseHandler):
    def get(self) -> None:
        self.parse()
        self.respond(self.server.db.read(presence.realm_presence, self.server.realm))


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    # Before the next route, which would take "me" for a user: GET /users/me/presence is a 405 (Zulip).
    (r"/users/me/presence", OwnPresenceHandler),
    (r"/users/([^/]+)/presence", UserPresenceHandler),
    (r"/realm/presence", RealmPresenceHandler),
]
