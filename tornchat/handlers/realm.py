"""The organization's settings: PATCH /realm (message editing, read receipts, the moderation request channel)."""

from __future__ import annotations

from typing import Any

import msgspec
import tornado.web

from storage.org import realm_settings
from tornchat.base import BaseHandler
from tornchat.params import Params

# One optional field per setting of storage.org.realm_settings.RealmSettings and OTHER_SETTINGS. Limits are seconds or
# "unlimited": JSON (Zulip's Json[int | str]), or the bare word as the zulip package sends a string;
# storage.org.realm_settings.parse_time_limit checks them.
UpdateRealm: Any = msgspec.defstruct(
    "UpdateRealm",
    [
        *(
            (name, (str if name in realm_settings.TIME_LIMITS else bool) | None, None)
            for name in realm_settings.RealmSettings.__struct_fields__
        ),
        *((name, kind | None, None) for name, kind in realm_settings.OTHER_SETTINGS.items()),
    ],
    kw_only=True,
)


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
        changes = {
            name: time_limit(value) if name in realm_settings.TIME_LIMITS else value
            for name, value in msgspec.structs.asdict(p).items()
            if value is not None
        }
        self.respond(self.server.db.write(realm_settings.update_realm_settings, self.user, changes))


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [(r"/realm", RealmHandler)]
