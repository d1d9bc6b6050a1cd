"""User status: POST /users/me/status, GET /users/{user_id}/status and an administrator's POST of it."""

from __future__ import annotations

import msgspec
import tornado.web

from storage.org import user_status
from tornchat.base import ID, BaseHandler
from tornchat.params import Params


class UpdateOtherStatus(msgspec.Struct, kw_only=True):
    """An administrator's change of another user's status: no `away` (Zulip's update_user_status_admin)."""

    status_text: str | None = None
    emoji_name: str | None = None
    emoji_code: str | None = None
    reaction_type: str | None = None


UPDATE_STATUS = Params(user_status.StatusChange)
UPDATE_OTHER_STATUS = Params(UpdateOtherStatus)


class OwnStatusHandler(BaseHandler):
    params = {"post": UPDATE_STATUS}

    def post(self) -> None:
        p = self.parse()
        self.server.db.write(user_status.update_user_status, self.user, p)
        self.respond()


class UserStatusHandler(BaseHandler):
    params = {"post": UPDATE_OTHER_STATUS}

    def get(self, user_id: str) -> None:
        self.parse()
        self.respond({"status": self.server.db.read(user_status.get_user_status, self.user, int(user_id))})

    def post(self, user_id: str) -> None:
        p = self.parse()
        change = user_status.StatusChange(**msgspec.structs.asdict(p))
        self.server.db.write(user_status.update_user_status, self.user, change, int(user_id))
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    # Before the next route, which would take "me" for a user id if it matched it.
    (r"/users/me/status", OwnStatusHandler),
    ("/users/" + ID + "/status", UserStatusHandler),
]
