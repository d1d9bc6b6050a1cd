"""Users: POST /users, GET /users, /users/{id}, /users/{email}, /users/me, deactivation."""

from __future__ import annotations

import pytest

from storage.membership import accounts
from storage.org import profile_fields
from tests.support.channel_helpers import make_channel
from tests.support.helpers import (
    Client,
    assert_error,
    assert_success,
    dummy,
    events_since,
    get_user,
    make_bot,
    set_visibility,
)

EVERYONE, MEMBERS, ADMINS, NOBODY, MODERATORS = 1, 2, 3, 4, 5
ALL_VISIBILITIES = (EVERYONE, MEMBERS, ADMINS, NOBODY, MODERATORS)
# Which email visibility settings let each role see a real address (api-notes 4.4).
VISIBLE_TO = {
    "owner": {EVERYONE, MEMBERS, ADMINS, MODERATORS},
    "admin": {EVERYONE, MEMBERS, ADMINS, MODERATORS},
    "moderator": {EVERYONE, MEMBERS, MODERATORS},
    "member": {EVERYONE, MEMBERS},
    "guest": {EVERYONE},
}
USER_FIELDS = {
    "email",
    "user_id",
    "avatar_version",
    "is_admin",
    "is_owner",
    "is_guest",
    "role",
    "is_bot",
    "full_name",
    "timezone",
    "is_active",
    "date_joined",
    "delivery_email",
    "is_imported_stub",
    "avatar_url",
    "bot_type",
    "bot_owner_id",
}
OWN_USER_FIELDS = {
    "avatar_url",
    "avatar_version",
    "email",
    "full_name",
    "is_admin",
    "is_owner",
    "role",
    "is_guest",
    "is_bot",
    "is_active",
    "timezone",
    "date_joined",
    "max_message_id",
    "user_id",
    "delivery_email",
    "is_imported_stub",
    "profile_data",
}


# -- POST /users --------------------------------------------------------------------------------


def test_create_user(live):
    before = len(live.events())
    body = assert_success(
        live.owner.post("/users", {"email": "new@example.com", "password": "sup3r secret", "full_name": " New One "})
    )
    user = get_user(live.owner, body["user_id"])
    assert (user["delivery_email"], user["full_name"], user["role"]) == ("new@example.com", "New One", 400)
    assert user["is_active"] and not user["is_bot"] and not user["is_admin"]
    [(event, recipients)] = events_since(live, before)
    assert event["op"] == "add" and event["person"]["user_id"] == body["user_id"]
    assert (event["person"]["full_name"], event["person"]["delivery_email"]) == ("New One", "new@example.com")
    assert set(event["person"]) == USER_FIELDS | {"profile_data"}
    assert recipients == [live.owner.id, body["user_id"]]
    group_events = events_since(live, before, "user_group")
    assert [(e["op"], e["user_ids"]) for e, _ in group_events] == [("add_members", [body["user_id"]])] * 2


def test_new_accounts_join_the_default_channels(live):
    welcome = make_channel(live, "welcome", [live.owner.id])
    archived = make_channel(live, "old-news", [live.owner.id])
    make_channel(live, "elsewhere", [live.owner.id])
    for channel_id in (welcome, archived):
        assert_success(live.owner.patch(f"/streams/{channel_id}", {"is_default_stream": "true"}))
    assert_success(live.owner.delete(f"/streams/{archived}"))
    before = len(live.events())
    body = assert_success(
        live.owner.post("/users", {"email": "new@example.com", "password": "sup3r secret", "full_name": "New"})
    )
    new_id = body["user_id"]
    added = [(e, ids) for e, ids in events_since(live, before, "subscription") if e["op"] == "add"]
    assert [([s["name"] for s in e["subscriptions"]], ids) for e, ids in added] == [(["welcome"], [new_id])]
    # `tornchat create-user` creates accounts through the same storage call.
    other = live.write(accounts.create_account, "cli@example.com", "Cli", "sup3r secret")
    subscribed = live.read(lambda tx: tx.column("SELECT channel_id FROM subscriptions WHERE user_id = ?", (other.id,)))
    assert subscribed == [welcome]


def test_create_user_event_hides_email_from_those_who_may_not_see_it(live):
    def hide_by_default(tx):
        tx.execute("UPDATE realm SET default_email_address_visibility = ?", (ADMINS,))

    live.write(hide_by_default)
    admin, member = live.make_user(role="admin"), live.make_user()
    before = len(live.events())
    params = {"email": "new@example.com", "password": "sup3r secret", "full_name": "New"}
    new_id = assert_success(live.owner.post("/users", params))["user_id"]
    sent = {tuple(ids): event["person"] for event, ids in events_since(live, before)}
    assert sent[(live.owner.id, admin.id, new_id)]["delivery_email"] == "new@example.com"
    assert sent[(member.id,)]["delivery_email"] is None
    assert sent[(member.id,)]["email"] == dummy(new_id)


def test_admin_with_permission_creates_users(live):
    admin = live.make_user(role="admin", can_create_users=True)
    body = assert_success(admin.post("/users", {"email": "b@example.com", "password": "pa55word", "full_name": "B"}))
    assert live.user(body["user_id"]).role == 400


@pytest.mark.parametrize("role", ["moderator", "member", "guest"])
def test_create_user_requires_admin(live, role):
    client = live.make_user(role=role, can_create_users=True)
    response = client.post("/users", {"email": "x@example.com", "password": "pa55word", "full_name": "X"})
    assert_error(response, "Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL")


def test_create_user_requires_can_create_users(live):
    admin = live.make_user(role="admin")
    response = admin.post("/users", {"email": "x@example.com", "password": "pa55word", "full_name": "X"})
    assert_error(response, "User not authorized to create users")


@pytest.mark.parametrize(
    ("email", "full_name", "password", "msg"),
    [
        ("OWNER@Example.com", "X", "pa55word", "Email is already in use."),
        ("not-an-email", "X", "pa55word", "Bad name or username"),
        ("two@@example.com", "X", "pa55word", "Bad name or username"),
        ("@example.com", "X", "pa55word", "Bad name or username"),
        ("x@example.com", "x" * 101, "pa55word", "Name too long!"),
        ("x@example.com", "Bad*Name", "pa55word", "Invalid characters in name!"),
        ("x@example.com", "   ", "pa55word", "Name too short!"),
        ("x@example.com", "X", "abc", "The password is too weak."),
        ("x@example.com", "X", "aaaaaaaa", "The password is too weak."),
    ],
)
def test_create_user_rejects_bad_input(live, email, full_name, password, msg):
    before = len(live.events())
    response = live.owner.post("/users", {"email": email, "password": password, "full_name": full_name})
    assert_error(response, msg)
    assert [u["user_id"] for u in assert_success(live.owner.get("/users"))["members"]] == [live.owner.id]
    assert live.events()[before:] == []


@pytest.mark.parametrize("missing", ["email", "password", "full_name"])
def test_create_user_missing_argument(live, missing):
    params = {"email": "x@example.com", "password": "pa55word", "full_name": "X"}
    del params[missing]
    body = assert_error(live.owner.post("/users", params), f"Missing '{missing}' argument", "REQUEST_VARIABLE_MISSING")
    assert body["var_name"] == missing


# -- GET /users/{email} -------------------------------------------------------------------------


def test_get_user_by_real_email_is_case_insensitive(live):
    target = live.make_user(email="Target@Example.com", full_name="Target")
    viewer = live.make_user()
    user = get_user(viewer, "tARGET@example.COM")
    assert (user["user_id"], user["email"], user["delivery_email"]) == (
        target.id,
        "Target@Example.com",
        "Target@Example.com",
    )


def test_get_user_object_fields(live):
    member = live.make_user(full_name="Member")
    user = get_user(live.owner, member.email)
    assert set(user) == USER_FIELDS
    assert user["bot_type"] is None and user["bot_owner_id"] is None
    assert (user["role"], user["is_owner"], user["is_admin"], user["is_guest"]) == (400, False, False, False)
    assert (user["timezone"], user["is_imported_stub"], user["avatar_version"]) == ("", False, 1)
    assert user["date_joined"] == "2027-01-15T08:00+00:00"


def test_get_user_by_dummy_email(live):
    target = live.make_user()
    set_visibility(live, target.id, NOBODY)
    member = live.make_user()
    for address in (dummy(target.id), dummy(target.id).upper()):
        user = get_user(member, address)
        assert (user["user_id"], user["email"], user["delivery_email"]) == (target.id, dummy(target.id), None)


@pytest.mark.parametrize("role", sorted(VISIBLE_TO))
def test_email_visibility_rules(live, role):
    viewer = live.owner if role == "owner" else live.make_user(role=role)
    target = live.make_user()
    for visibility in ALL_VISIBILITIES:
        set_visibility(live, target.id, visibility)
        response = viewer.get(f"/users/{target.email}")
        by_id = get_user(viewer, target.id)
        if visibility in VISIBLE_TO[role]:
            assert assert_success(response)["user"] == by_id
            assert by_id["delivery_email"] == target.email
        else:
            assert_error(response, "No such user")
            assert by_id["delivery_email"] is None
        assert by_id["email"] == (target.email if visibility == EVERYONE else dummy(target.id))


def test_admins_only_email_hidden_from_member_visible_to_admin(live):
    target = live.make_user(email="hidden@example.com")
    set_visibility(live, target.id, ADMINS)
    assert_error(live.make_user().get("/users/hidden@example.com"), "No such user")
    user = get_user(live.make_user(role="admin"), "hidden@example.com")
    assert (user["user_id"], user["email"], user["delivery_email"]) == (
        target.id,
        dummy(target.id),
        "hidden@example.com",
    )


def test_users_always_see_their_own_email(live):
    member = live.make_user(email="me@example.com")
    set_visibility(live, member.id, NOBODY)
    user = get_user(member, "me@example.com")
    assert (user["email"], user["delivery_email"]) == (dummy(member.id), "me@example.com")


def test_client_gravatar_hides_avatar_url_only_when_email_visible(gravatar_live):
    live = gravatar_live
    visible = live.make_user()
    hidden = live.make_user()
    set_visibility(live, hidden.id, NOBODY)
    member = live.make_user()
    assert get_user(member, visible.email)["avatar_url"] is None
    assert get_user(member, visible.email, {"client_gravatar": True})["avatar_url"] is None
    assert get_user(member, dummy(hidden.id))["avatar_url"].startswith("https://secure.gravatar.com/avatar/")
    url = get_user(member, visible.email, {"client_gravatar": False})["avatar_url"]
    assert url.startswith("https://secure.gravatar.com/avatar/") and url.endswith("?v=1")


def test_without_gravatar_every_avatar_url_is_served_here(live):
    """Gravatar off (the default): nothing for a client to compute, so client_gravatar never nulls a URL."""
    visible = live.make_user()
    member = live.make_user()
    for params in ({}, {"client_gravatar": True}, {"client_gravatar": False}):
        assert get_user(member, visible.email, params)["avatar_url"] == f"/user_avatars/default/{visible.id}.png?v=1"
    members = assert_success(member.get("/users", {"client_gravatar": True}))["members"]
    assert all(m["avatar_url"] == f"/user_avatars/default/{m['user_id']}.png?v=1" for m in members)


def test_include_custom_profile_fields(live):
    field_id = live.write(profile_fields.create_field, "Team", "", profile_fields.SHORT_TEXT, {}, False, False, True)
    member = live.make_user()
    live.write(profile_fields.set_values, member.id, [(field_id, "Backend")])
    assert "profile_data" not in get_user(live.owner, member.email)
    data = get_user(live.owner, member.email, {"include_custom_profile_fields": True})["profile_data"]
    assert data[str(field_id)]["value"] == "Backend"
    assert get_user(live.owner, live.owner.email, {"include_custom_profile_fields": True})["profile_data"] == {}


def test_bots_are_visible_without_profile_data(live):
    bot_id = make_bot(live, live.owner.id)
    user = get_user(live.make_user(), "bot@example.com", {"include_custom_profile_fields": True})
    assert (user["user_id"], user["is_bot"], user["bot_type"], user["bot_owner_id"]) == (bot_id, True, 1, live.owner.id)
    assert (user["email"], user["delivery_email"]) == ("bot@example.com", "bot@example.com")
    assert "profile_data" not in user


def test_deactivated_users_are_visible(live):
    target = live.make_user()
    assert_success(live.owner.delete(f"/users/{target.id}"))
    assert get_user(live.make_user(), target.email)["is_active"] is False


@pytest.mark.parametrize(
    "address",
    [
        "nobody@example.com",
        "user999@zulip.testserver",
        "user1@other.example",
        "user99999999999999999999@zulip.testserver",
    ],
)
def test_get_user_by_unknown_email(live, address):
    assert_error(live.owner.get(f"/users/{address}"), "No such user")


# -- GET /users/{user_id}, GET /users -----------------------------------------------------------


def test_get_user_by_id(live):
    member = live.make_user(full_name="Someone")
    user = get_user(live.make_user(role="guest"), member.id)
    assert set(user) == USER_FIELDS
    assert (user["user_id"], user["full_name"], user["email"]) == (member.id, "Someone", member.email)


def test_get_user_by_unknown_id(live):
    assert_error(live.owner.get("/users/999"), "No such user")


def test_dummy_email_beyond_64_bits_names_no_user(live):
    # The id of a dummy address is not bounded by the route: storage must not pass it to SQLite.
    client = Client(live.base_url, dummy(10**20), live.owner.api_key)
    assert_error(client.get("/users/me"), "Invalid API key", "UNAUTHORIZED", 401)


def test_list_users_includes_bots_and_deactivated_users(live):
    member = live.make_user()
    gone = live.make_user()
    bot_id = make_bot(live, member.id)
    assert_success(live.owner.delete(f"/users/{gone.id}"))
    members = assert_success(member.get("/users"))["members"]
    assert [u["user_id"] for u in members] == [live.owner.id, member.id, gone.id, bot_id]
    assert [u["is_active"] for u in members] == [True, True, False, True]
    assert all(set(u) == USER_FIELDS for u in members)


def test_list_users_filtered_by_ids(live):
    first, second, third = live.make_user(), live.make_user(), live.make_user()
    members = assert_success(live.owner.get("/users", {"user_ids": [third.id, first.id, 999]}))["members"]
    assert [u["user_id"] for u in members] == [first.id, third.id]
    assert second.id not in [u["user_id"] for u in members]
    with_profile = assert_success(
        live.owner.get("/users", {"user_ids": [first.id], "include_custom_profile_fields": True})
    )
    assert with_profile["members"][0]["profile_data"] == {}


# -- GET /users/me ------------------------------------------------------------------------------


def test_own_user_is_flat_with_every_field(live):
    member = live.make_user(email="me@example.com", full_name="Me")
    set_visibility(live, member.id, NOBODY)
    body = assert_success(member.get("/users/me"))
    body.pop("result"), body.pop("msg")
    assert set(body) == OWN_USER_FIELDS
    assert (body["user_id"], body["full_name"], body["role"]) == (member.id, "Me", 400)
    assert (body["email"], body["delivery_email"]) == (dummy(member.id), "me@example.com")
    assert (body["max_message_id"], body["profile_data"], body["is_active"]) == (-1, {}, True)
    assert body["avatar_url"] == f"/user_avatars/default/{member.id}.png?v=1"


def test_own_user_of_owner(live):
    body = assert_success(live.owner.get("/users/me"))
    assert (body["role"], body["is_owner"], body["is_admin"], body["is_guest"]) == (100, True, True, False)
    assert body["avatar_url"].endswith("?v=1")


def test_own_user_of_bot_has_no_profile_data(live):
    bot_id = make_bot(live, live.owner.id)
    bot = live.client_for(live.user(bot_id))
    body = assert_success(bot.get("/users/me"))
    assert (body["user_id"], body["is_bot"], body["delivery_email"]) == (bot_id, True, "bot@example.com")
    assert "profile_data" not in body


def test_own_user_max_message_id_follows_received_messages(live):
    member = live.make_user()
    sent = assert_success(live.owner.post("/messages", {"type": "direct", "to": [member.id], "content": "hello"}))["id"]
    assert assert_success(member.get("/users/me"))["max_message_id"] == sent
    assert assert_success(live.owner.get("/users/me"))["max_message_id"] == sent
    assert assert_success(live.make_user().get("/users/me"))["max_message_id"] == -1
