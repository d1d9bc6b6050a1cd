"""User groups: POST /user_groups/create, GET /user_groups."""

from __future__ import annotations

import msgspec

from storage.model.errors import ApiError
from storage.org import groups
from storage.org.groups import GroupSettingValue
from tornchat.base import BaseHandler
from tornchat.params import Params


class CreateUserGroup(msgspec.Struct):
    name: str
    description: str
    members: list[int]
    subgroups: list[int] | None = None
    can_add_members_group: GroupSettingValue | None = None
    can_join_group: GroupSettingValue | None = None
    can_leave_group: GroupSettingValue | None = None
    can_manage_group: GroupSettingValue | None = None
    can_mention_group: GroupSettingValue | None = None
    can_remove_members_group: GroupSettingValue | None = None


class ListUserGroups(msgspec.Struct):
    include_deactivated_groups: bool = False


CREATE_USER_GROUP = Params(CreateUserGroup)
LIST_USER_GROUPS = Params(ListUserGroups)


class CreateUserGroupHandler(BaseHandler):
    params = {"post": CREATE_USER_GROUP}

    def post(self) -> None:
        # Permission first, as Zulip's decorator does: a refused caller gets one answer whatever it sent.
        self.server.db.read(groups.check_can_create_groups, self.user)
        p = self.parse()
        settings = {name: getattr(p, name) for name in groups.GROUP_SETTINGS}
        group_id = self.server.db.write(
            groups.create_group, self.user, p.name, p.description, p.members, p.subgroups, settings
        )
        self.respond({"group_id": group_id})


class UserGroupsHandler(BaseHandler):
    params = {"get": LIST_USER_GROUPS}

    def get(self) -> None:
        # Guests are refused before their parameters are read, as Zulip's decorator does.
        if self.user.is_guest:
            raise ApiError("Not allowed for guest users")
        p = self.parse()
        self.respond({"user_groups": self.server.db.read(groups.list_groups, p.include_deactivated_groups)})
