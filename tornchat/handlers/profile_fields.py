"""Custom profile fields: GET and POST /realm/profile_fields."""

from __future__ import annotations

from typing import Any

import msgspec

from storage.model.errors import must_be_admin
from storage.org import profile_fields
from tornchat.base import BaseHandler
from tornchat.params import Params


class CreateProfileField(msgspec.Struct):
    field_type: int
    # Zulip defaults a missing name to "", which then fails as "Label cannot be blank.".
    name: str = ""
    hint: str = ""
    field_data: dict[str, Any] | None = None
    display_in_profile_summary: bool = False
    required: bool = False
    editable_by_user: bool = True


CREATE_PROFILE_FIELD = Params(CreateProfileField)


class ProfileFieldsHandler(BaseHandler):
    params = {"post": CREATE_PROFILE_FIELD}

    def get(self) -> None:
        self.parse()
        self.respond({"custom_fields": self.server.db.read(profile_fields.list_fields)})

    def post(self) -> None:
        # Administrators only, checked before the parameters as Zulip's decorator does.
        if not self.user.is_admin:
            raise must_be_admin()
        p = self.parse()
        field_id = self.server.db.write(
            profile_fields.create_field,
            p.name,
            p.hint,
            p.field_type,
            p.field_data,
            p.display_in_profile_summary,
            p.required,
            p.editable_by_user,
        )
        self.respond({"id": field_id})
