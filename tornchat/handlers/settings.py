"""A user's own settings: PATCH /settings (every personal setting, full_name and timezone)."""

from __future__ import annotations

from typing import Any

import msgspec
import tornado.web

from storage.org import user_settings
from storage.org.user_settings_definitions import SETTINGS, check_human
from tornchat.base import BaseHandler
from tornchat.params import Params

# One optional field per setting, typed as Zulip's (booleans and integers JSON-encoded, strings
# verbatim). email and password changes are not offered: they are reported as ignored.
UpdateSettings: Any = msgspec.defstruct(
    "UpdateSettings",
    [
        ("full_name", str | None, None),
        ("timezone", str | None, None),
        *((name, setting.type | None, None) for name, setting in SETTINGS.items()),
    ],
    kw_only=True,
)

UPDATE_SETTINGS = Params(UpdateSettings)


class SettingsHandler(BaseHandler):
    params = {"patch": UPDATE_SETTINGS}

    def patch(self) -> None:
        # Bots are refused before the parameters are read, as Zulip's decorator does.
        check_human(self.user)
        p = self.parse()
        changes = {name: getattr(p, name) for name in SETTINGS if getattr(p, name) is not None}
        self.server.db.write(user_settings.update_user_settings, self.user, changes, p.full_name, p.timezone)
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [(r"/settings", SettingsHandler)]
