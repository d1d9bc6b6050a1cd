"""Users: /users, /users/me, /users/{id}, /users/{email}, deactivation and reactivation."""

from __future__ import annotations

from typing import Literal

import msgspec

from storage.membership import accounts
from storage.org import user_changes, users
from tornchat.base import BaseHandler, hash_password
from tornchat.params import Params


class GetUser(msgspec.Struct):
    client_gravatar: bool = True
    include_custom_profile_fields: bool = False


class ListUsers(GetUser):
    user_ids: list[int] | None = None


class CreateUser(msgspec.Struct):
    email: str
    password: str
    full_name: str


class ProfileDataEntry(msgspec.Struct, forbid_unknown_fields=True):
    id: int
    value: str | list[int] | None


class UpdateUser(msgspec.Struct):
    full_name: str | None = None
    role: Literal[100, 200, 300, 400, 600] | None = None
    profile_data: list[ProfileDataEntry] | None = None
    new_email: str | None = None


GET_USER = Params(GetUser)
LIST_USERS = Params(ListUsers)
CREATE_USER = Params(CreateUser)
UPDATE_USER = Params(UpdateUser)


class UsersHandler(BaseHandler):
    params = {"get": LIST_USERS, "post": CREATE_USER}

    def get(self) -> None:
        p = self.parse()
        members = self.server.db.read(
            users.list_user_objects,
            self.user,
            self.server.realm,
            p.user_ids,
            p.client_gravatar,
            p.include_custom_profile_fields,
        )
        self.respond({"members": members})

    async def post(self) -> None:
        p = self.parse()
        # Checked first, so that only a request that will create an account costs a hash.
        self.server.db.read(users.check_user_by_admin, self.user, p.email, p.password, p.full_name)
        password_hash = await hash_password(p.password)
        user_id = self.server.db.write(
            accounts.create_account_by_admin, self.user, p.email, p.password, p.full_name, password_hash
        )
        self.respond({"user_id": user_id})


class OwnUserHandler(BaseHandler):
    def get(self) -> None:
        self.parse()
        self.respond(self.server.db.read(users.own_user_object, self.user, self.server.realm))

    def delete(self) -> None:
        self.parse()
        self.server.db.write(user_changes.deactivate_own_user, self.user)
        self.respond()


class UserByIdHandler(BaseHandler):
    params = {"get": GET_USER, "patch": UPDATE_USER}

    def get(self, user_id: str) -> None:
        p = self.parse()
        user = self.server.db.read(
            users.user_object_by_id,
            self.user,
            self.server.realm,
            int(user_id),
            p.client_gravatar,
            p.include_custom_profile_fields,
        )
        self.respond({"user": user})

    def patch(self, user_id: str) -> None:
        p = self.parse()
        profile = None if p.profile_data is None else [(e.id, e.value) for e in p.profile_data]
        self.server.db.write(
            user_changes.update_user,
            self.user,
            int(user_id),
            self.server.realm,
            full_name=p.full_name,
            role=p.role,
            profile_data=profile,
            new_email=p.new_email,
        )
        self.respond()

    def delete(self, user_id: str) -> None:
        self.parse()
        self.server.db.write(user_changes.deactivate_user, self.user, int(user_id))
        self.respond()


class UserByEmailHandler(BaseHandler):
    params = {"get": GET_USER}

    def get(self, email: str) -> None:
        p = self.parse()
        user = self.server.db.read(
            users.user_object_by_email,
            self.user,
            self.server.realm,
            email,
            p.client_gravatar,
            p.include_custom_profile_fields,
        )
        self.respond({"user": user})


class ReactivateUserHandler(BaseHandler):
    def post(self, user_id: str) -> None:
        self.parse()
        self.server.db.write(user_changes.reactivate_user, self.user, int(user_id))
        self.respond()
