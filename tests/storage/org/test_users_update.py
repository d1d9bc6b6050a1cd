"""PATCH /users/{user_id} (roles and their system groups, name, email, all or nothing); deactivation."""

from __future__ import annotations

import pytest

from storage.messages import system_bots
from tests.storage.org.test_users import ADMINS
from tests.support.helpers import (
    ROLE_NAMES,
    assert_error,
    assert_success,
    events_since,
    get_user,
    make_bot,
    set_visibility,
)

MUST_BE_OWNER = ("Must be an organization owner", "UNAUTHORIZED_PRINCIPAL")
GUEST_ADMIN = ("Guests cannot be organization administrators",)
ONLY_OWNER = ("The owner permission cannot be removed from the only organization owner.",)
INSUFFICIENT = ("Insufficient permission",)
NOT_EMAIL_CHANGER = ("User not authorized to change user emails",)
DEACTIVATED = ("Account is deactivated", "UNAUTHORIZED", 401)
# The system groups a user of each role is a direct member of (api-notes 5.1).
ROLE_GROUPS = {
    "owner": {"role:owners"},
    "admin": {"role:administrators"},
    "moderator": {"role:moderators"},
    "member": {"role:fullmembers", "role:members"},
    "guest": {"role:everyone"},
}


def groups_of(live, user_id):
    """Names of the system groups the user is a direct member of, read over the API."""
    groups = assert_success(live.owner.get("/user_groups"))["user_groups"]
    return {g["name"] for g in groups if g["is_system_group"] and user_id in g["members"]}


def group_ids(live):
    groups = assert_success(live.owner.get("/user_groups"))["user_groups"]
    return {g["name"]: g["id"] for g in groups}


# (requester, target's role, new role, expected error or None)
ROLE_CHANGES = [
    ("admin", "member", "moderator", None),
    ("admin", "moderator", "member", None),
    ("admin", "member", "guest", None),
    ("admin", "guest", "member", None),
    ("admin", "guest", "moderator", None),
    ("admin", "moderator", "guest", None),
    ("admin", "member", "admin", None),
    ("admin", "admin", "member", None),
    ("admin", "member", "owner", MUST_BE_OWNER),
    ("admin", "owner", "admin", MUST_BE_OWNER),
    ("admin", "owner", "member", MUST_BE_OWNER),
    ("admin", "guest", "admin", GUEST_ADMIN),
    ("admin", "guest", "owner", MUST_BE_OWNER),
    ("owner", "member", "owner", None),
    ("owner", "admin", "owner", None),
    ("owner", "owner", "member", None),
    ("owner", "owner", "admin", None),
    ("owner", "guest", "admin", GUEST_ADMIN),
    ("owner", "guest", "owner", GUEST_ADMIN),
    ("moderator", "member", "guest", INSUFFICIENT),
    ("moderator", "guest", "member", INSUFFICIENT),
    ("member", "member", "moderator", INSUFFICIENT),
    ("member", "owner", "member", INSUFFICIENT),
    ("guest", "member", "guest", INSUFFICIENT),
]


@pytest.mark.parametrize(("requester", "old", "new", "error"), ROLE_CHANGES)
def test_role_changes(live, requester, old, new, error):
    client = live.owner if requester == "owner" else live.make_user(role=requester)
    target = live.make_user(role=old)
    response = client.patch(f"/users/{target.id}", {"role": ROLE_NAMES[new]})
    if error is None:
        assert_success(response)
    else:
        assert_error(response, *error)
    final = old if error else new
    assert live.user(target.id).role == ROLE_NAMES[final]
    assert groups_of(live, target.id) == ROLE_GROUPS[final]


def test_role_change_events(live):
    target = live.make_user()
    ids = group_ids(live)
    before = len(live.events())
    assert_success(live.owner.patch(f"/users/{target.id}", {"role": 300}))
    group_events = [(e["op"], e["group_id"], e["user_ids"]) for e, _ in events_since(live, before, "user_group")]
    assert sorted(group_events) == sorted(
        [
            ("remove_members", ids["role:fullmembers"], [target.id]),
            ("remove_members", ids["role:members"], [target.id]),
            ("add_members", ids["role:moderators"], [target.id]),
        ]
    )
    [(event, recipients)] = events_since(live, before)
    assert (event["op"], event["person"]) == ("update", {"user_id": target.id, "role": 300})
    assert recipients == [live.owner.id, target.id]


def test_unchanged_role_is_a_no_op(live):
    target = live.make_user(role="moderator")
    before = len(live.events())
    assert_success(live.owner.patch(f"/users/{target.id}", {"role": 300}))
    assert live.events()[before:] == []


@pytest.mark.parametrize(
    ("value", "msg"),
    [(250, "Invalid role"), (0, "Invalid role"), ("x", "role is not valid JSON"), ("true", "role is not an integer")],
)
def test_invalid_role_value(live, value, msg):
    target = live.make_user()
    assert_error(live.owner.patch(f"/users/{target.id}", {"role": value}), msg)
    assert live.user(target.id).role == 400


def test_only_owner_cannot_be_demoted(live):
    assert_error(live.owner.patch(f"/users/{live.owner.id}", {"role": 200}), *ONLY_OWNER)
    assert live.user(live.owner.id).role == 100


def test_owner_can_be_demoted_when_another_owner_exists(live):
    other = live.make_user(role="owner")
    assert_success(live.owner.patch(f"/users/{live.owner.id}", {"role": 200}))
    assert live.user(live.owner.id).role == 200
    assert_error(other.patch(f"/users/{other.id}", {"role": 400}), *ONLY_OWNER)


def test_deactivated_owner_is_not_another_owner_for_demotion(live):
    other = live.make_user(role="owner")
    assert_success(live.owner.delete(f"/users/{other.id}"))
    assert_error(live.owner.patch(f"/users/{live.owner.id}", {"role": 400}), *ONLY_OWNER)


def test_bot_owner_needs_admin_to_change_its_role(live):
    member = live.make_user()
    bot_id = make_bot(live, member.id)
    response = member.patch(f"/users/{bot_id}", {"role": 600})
    assert_error(response, "Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL")


# -- full_name ----------------------------------------------------------------------------------


def test_change_full_name(live):
    target = live.make_user(full_name="Old Name")
    admin = live.make_user(role="admin")
    before = len(live.events())
    assert_success(admin.patch(f"/users/{target.id}", {"full_name": " New Name "}))
    assert assert_success(live.owner.get(f"/users/{target.id}"))["user"]["full_name"] == "New Name"
    [(event, _)] = events_since(live, before)
    assert event["person"] == {"user_id": target.id, "full_name": "New Name"}


@pytest.mark.parametrize("name", ["", "   ", "Old Name"])
def test_blank_or_unchanged_full_name_is_ignored(live, name):
    target = live.make_user(full_name="Old Name")
    before = len(live.events())
    assert_success(live.owner.patch(f"/users/{target.id}", {"full_name": name}))
    assert live.user(target.id).full_name == "Old Name"
    assert live.events()[before:] == []


@pytest.mark.parametrize(
    ("name", "msg"), [("x" * 101, "Name too long!"), ("A `quoted` name", "Invalid characters in name!")]
)
def test_bad_full_name(live, name, msg):
    target = live.make_user(full_name="Old Name")
    assert_error(live.owner.patch(f"/users/{target.id}", {"full_name": name}), msg)
    assert live.user(target.id).full_name == "Old Name"


# -- new_email ----------------------------------------------------------------------------------


def test_owner_with_permission_changes_email(live):
    target = live.make_user(email="old@example.com")
    before = len(live.events())
    assert_success(live.owner.patch(f"/users/{target.id}", {"new_email": "new@example.com"}))
    assert assert_success(live.owner.get(f"/users/{target.id}"))["user"]["delivery_email"] == "new@example.com"
    assert_error(live.owner.get("/users/old@example.com"), "No such user")
    people = [event["person"] for event, _ in events_since(live, before)]
    assert people == [
        {"user_id": target.id, "delivery_email": "new@example.com"},
        {"user_id": target.id, "new_email": "new@example.com"},
    ]


def test_new_email_reaches_only_users_who_may_see_it(live):
    target = live.make_user(email="old@example.com")
    set_visibility(live, target.id, ADMINS)
    admin, member = live.make_user(role="admin"), live.make_user()
    before = len(live.events())
    assert_success(live.owner.patch(f"/users/{target.id}", {"new_email": "new@example.com"}))
    [(event, recipients)] = events_since(live, before)
    assert event["person"] == {"user_id": target.id, "delivery_email": "new@example.com"}
    assert recipients == [live.owner.id, target.id, admin.id]
    assert member.id not in recipients


@pytest.mark.parametrize(("role", "permission"), [("admin", False), ("admin", True), ("owner", False)])
def test_changing_email_needs_owner_with_permission(live, role, permission):
    client = live.make_user(role=role, can_change_user_emails=permission)
    target = live.make_user(email="old@example.com")
    assert_error(client.patch(f"/users/{target.id}", {"new_email": "new@example.com"}), *NOT_EMAIL_CHANGER)
    assert live.user(target.id).delivery_email == "old@example.com"


@pytest.mark.parametrize(
    ("new_email", "msg"),
    [
        ("not-an-email", "Invalid new email address."),
        ("", "Invalid new email address."),
        ("OWNER@example.com", "New email value error: Already has an account."),
    ],
)
def test_bad_new_email(live, new_email, msg):
    target = live.make_user(email="old@example.com")
    assert_error(live.owner.patch(f"/users/{target.id}", {"new_email": new_email}), msg)
    assert live.user(target.id).delivery_email == "old@example.com"


# -- lookup and atomicity -----------------------------------------------------------------------


def test_update_unknown_user(live):
    assert_error(live.owner.patch("/users/999", {"full_name": "X"}), "No such user")


@pytest.mark.parametrize("role", ["moderator", "member", "guest"])
def test_non_admin_cannot_update_users(live, role):
    target = live.make_user(full_name="Old Name")
    assert_error(live.make_user(role=role).patch(f"/users/{target.id}", {"full_name": "New"}), *INSUFFICIENT)
    assert live.user(target.id).full_name == "Old Name"


@pytest.mark.parametrize(
    ("client_role", "new_email", "error"),
    [
        ("owner", "not-an-email", ("Invalid new email address.",)),
        ("owner", "owner@example.com", ("New email value error: Already has an account.",)),
        ("admin", "new@example.com", NOT_EMAIL_CHANGER),
    ],
)
def test_a_bad_part_changes_nothing(live, client_role, new_email, error):
    client = live.owner if client_role == "owner" else live.make_user(role="admin")
    target = live.make_user(full_name="Old Name")
    before = len(live.events())
    response = client.patch(f"/users/{target.id}", {"role": 300, "full_name": "New Name", "new_email": new_email})
    assert_error(response, *error)
    user = live.user(target.id)
    assert (user.role, user.full_name, user.delivery_email) == (400, "Old Name", target.email)
    assert groups_of(live, target.id) == ROLE_GROUPS["member"]
    assert live.events()[before:] == []


# -- DELETE /users/{id}, DELETE /users/me, POST /users/{id}/reactivate ----------------------------


def test_deactivate_and_reactivate_user(live):
    member = live.make_user()
    before = len(live.events())
    assert_success(live.owner.delete(f"/users/{member.id}"))
    response = member.get("/users/me")
    assert_error(response, *DEACTIVATED)
    assert response.headers["WWW-Authenticate"] == 'Basic realm="zulip"'
    assert get_user(live.owner, member.id)["is_active"] is False
    assert_success(live.owner.post(f"/users/{member.id}/reactivate"))
    assert assert_success(member.get("/users/me"))["is_active"] is True
    events = [event["person"] for event, _ in events_since(live, before)]
    assert events == [{"user_id": member.id, "is_active": False}, {"user_id": member.id, "is_active": True}]


def test_deactivating_a_user_deactivates_their_bots(live):
    member = live.make_user()
    bot_id = make_bot(live, member.id)
    assert_success(live.owner.delete(f"/users/{member.id}"))
    assert live.user(bot_id).is_active is False


def test_deactivate_own_account(live):
    member = live.make_user()
    assert_success(member.delete("/users/me"))
    assert_error(member.get("/users/me"), *DEACTIVATED)
    assert live.user(member.id).is_active is False


LAST_USER = "CANNOT_DEACTIVATE_LAST_USER"


def test_only_account_cannot_deactivate_itself(live):
    live.write(system_bots.notification_bot)  # the system bot is no other account (Zulip's are in another realm)
    body = assert_error(live.owner.delete("/users/me"), "Cannot deactivate the only user.", LAST_USER)
    assert (body["entity"], body["is_last_owner"]) == ("user", False)
    assert live.user(live.owner.id).is_active is True


def test_only_owner_cannot_deactivate_itself(live):
    member = live.make_user()
    make_bot(live, member.id)
    body = assert_error(live.owner.delete("/users/me"), "Cannot deactivate the only organization owner.", LAST_USER)
    assert (body["entity"], body["is_last_owner"]) == ("organization owner", True)
    # Through DELETE /users/{user_id}, Zulip answers a plain error (zerver/views/users.py).
    assert_error(live.owner.delete(f"/users/{live.owner.id}"), "Cannot deactivate the only organization owner")
    assert live.user(live.owner.id).is_active is True


def test_owner_can_deactivate_self_when_another_owner_exists(live):
    other = live.make_user(role="owner")
    live.make_user()
    assert_success(live.owner.delete("/users/me"))
    body = assert_error(other.delete("/users/me"), "Cannot deactivate the only organization owner.", LAST_USER)
    assert body["is_last_owner"] is True


def test_deactivated_owner_is_not_another_owner_for_deactivation(live):
    other = live.make_user(role="owner")
    assert_success(live.owner.delete(f"/users/{other.id}"))
    assert_error(live.owner.delete(f"/users/{live.owner.id}"), "Cannot deactivate the only organization owner")


def test_admin_cannot_deactivate_or_reactivate_an_owner(live):
    other = live.make_user(role="owner")
    admin = live.make_user(role="admin")
    assert_error(admin.delete(f"/users/{other.id}"), "Must be an organization owner", "UNAUTHORIZED_PRINCIPAL")
    assert_success(live.owner.delete(f"/users/{other.id}"))
    assert_error(admin.post(f"/users/{other.id}/reactivate"), "Must be an organization owner", "UNAUTHORIZED_PRINCIPAL")
    assert live.user(other.id).is_active is False


def test_admin_deactivates_member(live):
    member = live.make_user()
    assert_success(live.make_user(role="admin").delete(f"/users/{member.id}"))
    assert live.user(member.id).is_active is False


@pytest.mark.parametrize("role", ["moderator", "member", "guest"])
def test_non_admin_cannot_deactivate_or_reactivate(live, role):
    client = live.make_user(role=role)
    target = live.make_user()
    assert_error(client.delete(f"/users/{target.id}"), "Insufficient permission")
    assert_success(live.owner.delete(f"/users/{target.id}"))
    assert_error(client.post(f"/users/{target.id}/reactivate"), "Insufficient permission")
    assert live.user(target.id).is_active is False


def test_already_deactivated_and_already_active(live):
    member = live.make_user()
    assert_error(live.owner.post(f"/users/{member.id}/reactivate"), "User is already active")
    assert_success(live.owner.delete(f"/users/{member.id}"))
    assert_error(live.owner.delete(f"/users/{member.id}"), "User is already deactivated")


def test_deactivate_or_reactivate_unknown_user(live):
    assert_error(live.owner.delete("/users/999"), "No such user")
    assert_error(live.owner.post("/users/999/reactivate"), "No such user")


def test_member_cannot_deactivate_self_by_id(live):
    member = live.make_user()
    assert_error(member.delete(f"/users/{member.id}"), "Insufficient permission")
    assert live.user(member.id).is_active is True


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_ids_beyond_64_bits_are_not_found(live, method):
    response = live.owner.request(method, "/users/99999999999999999999")
    assert_error(response, "Not Found", status=404)
