"""The organization's settings: PATCH /realm (the message-editing settings)."""

from __future__ import annotations

import msgspec
import tornado.web

from storage import realm_settings
from tornchat.base import BaseHandler
from tornchat.params import Params


class UpdateRealm(msgspec.Struct, kw_only=True):
    # Limits are seconds or "unlimited": JSON (Zulip's Json[int | str]), or the bare word as the zulip
    # package sends a string; storage.realm_settings.parse_time_limit checks them.
    allow_message_editing: bool | None = None
    message_content_edit_limit_seconds: str | None = None
    allow_edit_history: bool | None = None
    message_content_delete_limit_seconds: str | None = None
    move_messages_within_stream_limit_seconds: str | None = None
    move_messages_between_streams_limit_seconds: str | None = None


def time_limit(raw: str) -> int | str:
    """A limit's JSON integer or string, or the raw text when it is neither."""
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return raw
    return value if isinstance(value, int | str) and not isinstance(value, bool) else raw


UPDATE_REALM = Params(UpdateRealm)


class RealmHandler(BaseHandler):
    params = {"patch": UPDATE_REALM}

    def patch(self) -> None:
        p = self.parse()
        changes = {k: v for k, v in msgspec.structs.asdict(p).items() if v is not None}
        changes.update({k: time_limit(v) for k, v in changes.items() if k in realm_settings.TIME_LIMITS})
        self.respond(self.server.db.write(realm_settings.update_realm_settings, self.user, changes))


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [(r"/realm", RealmHandler)]
