"""PATCH /streams/{stream_id}: each property, its errors, who may change it and who hears of it."""

from __future__ import annotations

import pytest

from storage.org import groups
from tests.storage.channels.test_streams import CANNOT_ADMINISTER, actor, create_channel, events_after
from tests.support.helpers import assert_error, assert_success


def patch(client, channel_id, **params):
    return client.patch(f"/streams/{channel_id}", params)


def stream(client, channel_id):
    return assert_success(client.get(f"/streams/{channel_id}"))["stream"]


def group_id(live, name):
    return live.read(groups.system_group_id, name)


def update_event(channel_id, name, prop, value, **extra):
    return {
        "type": "stream",
        "op": "update",
        "stream_id": channel_id,
        "name": name,
        "property": prop,
        "value": value,
    } | extra


# -- who may patch -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "public_error", "private_error"),
    [
        ("owner", None, None),
        ("admin", None, None),
        ("moderator", CANNOT_ADMINISTER, "Invalid channel ID"),
        ("member", CANNOT_ADMINISTER, "Invalid channel ID"),
        ("guest", "Invalid channel ID", "Invalid channel ID"),
        ("channel_admin", None, None),
    ],
)
def test_patch_permissions(live, role, public_error, private_error):
    channel_admin = live.make_user()
    administrators = {"direct_members": [live.owner.id, channel_admin.id], "direct_subgroups": []}
    public = create_channel(live.owner, "public", can_administer_channel_group=administrators)
    private = create_channel(live.owner, "private", invite_only=True, can_administer_channel_group=administrators)
    client = actor(live, role, channel_admin)
    for channel_id, error in ((public, public_error), (private, private_error)):
        response = patch(client, channel_id, description=f"by {role}")
        if error is None:
            assert_success(response)
            assert stream(live.owner, channel_id)["description"] == f"by {role}"
        else:
            assert_error(response, error)


def test_patch_unknown_channel(live):
    assert_error(patch(live.owner, 999999, description="x"), "Invalid channel ID")


# -- name and description ----------------------------------------------------------------------


def test_rename(live, general):
    member = live.make_user()
    count = len(live.events())
    assert_success(patch(live.owner, general, new_name="  announcements "))
    assert stream(live.owner, general)["name"] == "announcements"
    [(event, audience)] = events_after(live, count)
    assert event == update_event(general, "general", "name", "announcements")
    assert audience == {live.owner.id, member.id}


def test_rename_errors(live, general):
    create_channel(live.owner, "Taken")
    assert_error(patch(live.owner, general, new_name="general"), "Channel already has that name.")
    body = assert_error(
        patch(live.owner, general, new_name="taken"), "Channel 'taken' already exists", "CHANNEL_ALREADY_EXISTS", 409
    )
    assert body["channel_name"] == "taken"
    assert_error(patch(live.owner, general, new_name="  "), "Channel name can't be empty.")
    assert_error(patch(live.owner, general, new_name="x" * 61), "Channel name too long (limit: 60 characters).")
    assert_error(patch(live.owner, general, new_name="a\x00b"), "Invalid character in channel name, at position 2.")
    # Changing only the case is a rename like any other.
    assert_success(patch(live.owner, general, new_name="General"))
    assert stream(live.owner, general)["name"] == "General"


def test_description(live, general):
    count = len(live.events())
    assert_success(patch(live.owner, general, description="*All*\nhands"))
    rendered = "<p><em>All</em> hands</p>"
    assert (stream(live.owner, general)["description"], stream(live.owner, general)["rendered_description"]) == (
        "*All* hands",
        rendered,
    )
    [(event, _)] = events_after(live, count)
    assert event == update_event(general, "general", "description", "*All* hands", rendered_description=rendered)
    assert_error(patch(live.owner, general, description="x" * 1025), "description is too long (limit: 1024 characters)")


def test_nothing_to_change_is_not_an_error(live, general):
    count = len(live.events())
    assert_success(patch(live.owner, general))
    assert_success(patch(live.owner, general, description="", is_private=False, topics_policy="inherit"))
    assert events_after(live, count) == []


def test_events_carry_the_name_at_their_time(live, general):
    folder = assert_success(live.owner.post("/channel_folders/create", {"name": "Teams"}))["channel_folder_id"]
    count = len(live.events())
    assert_success(patch(live.owner, general, description="d", new_name="renamed", folder_id=folder))
    assert [(e["property"], e["name"]) for e, _ in events_after(live, count)] == [
        ("description", "general"),
        ("name", "general"),
        ("folder_id", "renamed"),
    ]


# -- privacy -----------------------------------------------------------------------------------


def test_make_private_needs_content_access(live):
    admin = live.make_user("admin")
    private = create_channel(live.owner, "private", [live.owner.id], invite_only=True)
    assert_error(patch(admin, private, is_private=False), "Channel content access is required.")
    # Other settings need no content access: administrators manage private channels they are not in.
    assert_success(patch(admin, private, description="managed"))


def test_make_private_tells_losers_and_keepers(live):
    member = live.make_user()
    subscriber = live.make_user()
    public = create_channel(live.owner, "public", [live.owner.id, subscriber.id])
    count = len(live.events())
    assert_success(patch(live.owner, public, is_private=True))
    assert stream(live.owner, public)["history_public_to_subscribers"] is False
    (update, kept), (delete, lost) = events_after(live, count)
    assert update == update_event(
        public, "public", "invite_only", True, history_public_to_subscribers=False, is_web_public=False
    )
    assert kept == {live.owner.id, subscriber.id}
    assert delete == {
        "type": "stream", "op": "delete", "streams": [{"stream_id": public}], "stream_ids": [public],
        "for_archiving": False,
    }  # fmt: skip
    assert lost == {member.id}
    assert_error(member.get(f"/streams/{public}"), "Invalid channel ID")


def test_make_public_tells_gainers_with_subscribers(live):
    member = live.make_user()
    private = create_channel(live.owner, "private", [live.owner.id], invite_only=True)
    count = len(live.events())
    assert_success(patch(live.owner, private, is_private=False))
    assert stream(member, private)["history_public_to_subscribers"] is True
    events = events_after(live, count) + events_after(live, count, "subscription")
    by_op = {event["op"]: (event, audience) for event, audience in events}
    assert by_op["update"][1] == {live.owner.id}
    create, gained = by_op["create"]
    assert create["streams"][0]["invite_only"] is False and gained == {member.id}
    assert by_op["peer_add"] == (
        {"type": "subscription", "op": "peer_add", "stream_ids": [private], "user_ids": [live.owner.id]},
        {member.id},
    )


def test_private_channel_history(live):
    private = create_channel(live.owner, "private", [live.owner.id], invite_only=True)
    assert_success(patch(live.owner, private, history_public_to_subscribers=True))
    assert stream(live.owner, private)["history_public_to_subscribers"] is True


@pytest.mark.parametrize(
    "params",
    [
        {"history_public_to_subscribers": False},
        {"is_private": False, "history_public_to_subscribers": False},
    ],
)
def test_public_channels_share_history(live, general, params):
    assert_error(patch(live.owner, general, **params), "Invalid parameters")


def test_web_public_rules(live, general):
    private = create_channel(live.owner, "private", [live.owner.id], invite_only=True)
    assert_error(patch(live.owner, general, is_web_public=True), "Web-public channels are not enabled.")
    live.write(lambda tx: tx.execute("UPDATE realm SET enable_spectator_access = 1"))
    assert_error(patch(live.owner, private, is_web_public=True), "Invalid parameters")
    assert_error(patch(live.make_user("admin"), general, is_web_public=True), "Insufficient permission")
    assert_success(patch(live.owner, general, is_web_public=True))
    assert stream(live.owner, general)["is_web_public"] is True
    assert_error(patch(live.owner, general, is_private=True), "Invalid parameters")


def test_privacy_needs_the_realm_permission(live):
    member = live.make_user()
    mine = create_channel(member, "mine", [member.id])
    admins = group_id(live, "role:administrators")
    live.write(lambda tx: tx.execute("UPDATE realm SET can_create_private_channel_group = ?", (admins,)))
    assert_error(patch(member, mine, is_private=True), "Insufficient permission")


# -- default channels, retention, folders, topics policy ---------------------------------------


def test_default_channel(live, general):
    guest = live.make_user("guest")
    count = len(live.events())
    assert_success(patch(live.owner, general, is_default_stream=True))
    [(event, audience)] = events_after(live, count, "default_streams")
    assert [s["stream_id"] for s in event["default_streams"]] == [general] and guest.id not in audience
    assert_error(patch(live.owner, general, is_private=True), "A default channel cannot be private.")
    assert_success(patch(live.owner, general, is_default_stream=False, is_private=True))
    assert assert_success(live.owner.get("/streams", {"include_default": True}))["streams"][0]["is_default"] is False


def test_only_administrators_change_default_channels(live):
    member = live.make_user()
    mine = create_channel(member, "mine", [member.id])
    assert_error(patch(member, mine, is_default_stream=True), "You do not have permission to change default channels.")


def test_message_retention(live, general):
    for value, stored in (('"unlimited"', -1), (30, 30), ('"realm_default"', None)):
        assert_success(patch(live.owner, general, message_retention_days=value))
        assert stream(live.owner, general)["message_retention_days"] == stored
    for bad in (0, -5, '"forever"'):
        body = assert_error(
            patch(live.owner, general, message_retention_days=bad),
            f"Bad value for 'message_retention_days': {str(bad).strip(chr(34))}",
            "REQUEST_VARIABLE_INVALID",
        )
        assert body["var_name"] == "message_retention_days"
    assert_error(
        patch(live.make_user("admin"), general, message_retention_days=30),
        "Must be an organization owner",
        "UNAUTHORIZED_PRINCIPAL",
    )


def test_folder(live, general):
    folder = assert_success(live.owner.post("/channel_folders/create", {"name": "Teams"}))["channel_folder_id"]
    count = len(live.events())
    assert_success(patch(live.owner, general, folder_id=folder))
    assert stream(live.owner, general)["folder_id"] == folder
    assert_success(patch(live.owner, general, folder_id=None))
    assert stream(live.owner, general)["folder_id"] is None
    assert [e["value"] for e, _ in events_after(live, count)] == [folder, None]
    assert_error(patch(live.owner, general, folder_id=999), "Invalid channel folder ID")
    assert_error(patch(live.owner, general, folder_id="x"), "folder_id is not valid JSON")


def test_topics_policy(live, general):
    count = len(live.events())
    assert_success(patch(live.owner, general, topics_policy="disable_empty_topic"))
    assert_success(patch(live.owner, general, topics_policy='"empty_topic_only"'))
    assert stream(live.owner, general)["topics_policy"] == "empty_topic_only"
    assert [e["value"] for e, _ in events_after(live, count)] == ["disable_empty_topic", "empty_topic_only"]
    assert_error(patch(live.owner, general, topics_policy="sometimes"), "Invalid topics_policy")


def test_topics_policy_needs_the_realm_permission(live):
    member = live.make_user()
    mine = create_channel(member, "mine", [member.id])
    admins = group_id(live, "role:administrators")
    live.write(lambda tx: tx.execute("UPDATE realm SET can_set_topics_policy_group = ?", (admins,)))
    assert_error(patch(member, mine, topics_policy="allow_empty_topic"), "Insufficient permission")


# -- group settings ----------------------------------------------------------------------------


def test_group_setting_new_and_old(live, general):
    admins, everyone = group_id(live, "role:administrators"), group_id(live, "role:everyone")
    count = len(live.events())
    assert_success(patch(live.owner, general, can_send_message_group={"new": admins, "old": everyone}))
    body = assert_error(
        patch(live.owner, general, can_send_message_group={"new": everyone, "old": everyone}),
        "'old' value does not match the expected value.",
        "EXPECTATION_MISMATCH",
    )
    assert body["field_name"] == "can_send_message_group"
    got = stream(live.owner, general)
    assert (got["can_send_message_group"], got["stream_post_policy"], got["is_announcement_only"]) == (admins, 2, True)
    assert [(e["property"], e["value"]) for e, _ in events_after(live, count)] == [
        ("can_send_message_group", admins),
        ("stream_post_policy", 2),
        ("is_announcement_only", True),
    ]


def test_group_setting_anonymous_values(live, general):
    member = live.make_user()
    value = {"direct_members": [member.id], "direct_subgroups": [group_id(live, "role:moderators")]}
    assert_success(patch(live.owner, general, can_remove_subscribers_group={"new": value}))
    assert stream(live.owner, general)["can_remove_subscribers_group"] == value
    # The same members in another order, or one subgroup spelled as an object: no change, no event.
    count = len(live.events())
    same = {"direct_members": [member.id], "direct_subgroups": value["direct_subgroups"]}
    assert_success(patch(live.owner, general, can_remove_subscribers_group={"new": same, "old": value}))
    admins = group_id(live, "role:administrators")
    assert_success(
        patch(
            live.owner,
            general,
            can_create_topic_group={
                "new": {"direct_members": [], "direct_subgroups": [group_id(live, "role:everyone")]}
            },
        )
    )
    assert events_after(live, count) == []
    assert_success(patch(live.owner, general, can_remove_subscribers_group={"new": admins}))
    assert stream(live.owner, general)["can_remove_subscribers_group"] == admins


def test_group_setting_errors(live, general):
    everyone = group_id(live, "role:everyone")
    assert_error(
        patch(live.owner, general, can_add_subscribers_group={"new": everyone}),
        "'can_add_subscribers_group' setting cannot be set to 'role:everyone' group.",
    )
    assert_error(
        patch(live.owner, general, can_send_message_group={"old": everyone}),
        'can_send_message_group["new"] field is missing: Field required',
    )
    assert_error(
        patch(live.owner, general, can_send_message_group={"new": everyone, "oldest": 1}),
        'Argument "oldest" at can_send_message_group["oldest"] is unexpected',
    )
    assert_error(patch(live.owner, general, can_send_message_group={"new": 999999}), "Invalid user group")
    assert_error(patch(live.owner, general, can_send_message_group=5), "can_send_message_group is not a dict")


def test_settings_granting_access_need_content_access(live):
    admin = live.make_user("admin")
    private = create_channel(live.owner, "private", [live.owner.id], invite_only=True)
    value = {"new": {"direct_members": [admin.id], "direct_subgroups": []}}
    assert_error(patch(admin, private, can_add_subscribers_group=value), "Channel content access is required.")
    assert_error(patch(admin, private, can_subscribe_group=value), "Channel content access is required.")


def test_delete_settings_need_the_realm_permission(live):
    member = live.make_user()
    mine = create_channel(member, "mine", [member.id])
    admins = group_id(live, "role:administrators")
    assert_error(patch(member, mine, can_delete_any_message_group={"new": admins}), "Insufficient permission")
    assert_success(patch(live.owner, mine, can_delete_any_message_group={"new": admins}))


def test_protected_history_keeps_topic_creation_open(live):
    private = create_channel(live.owner, "private", [live.owner.id], invite_only=True)
    admins = group_id(live, "role:administrators")
    message = "'can_create_topic_group' must be 'role:everyone' for private channels with protected history."
    assert_error(patch(live.owner, private, can_create_topic_group={"new": admins}), message)
    public = create_channel(live.owner, "public", [live.owner.id], can_create_topic_group=admins)
    assert_error(patch(live.owner, public, is_private=True), message)
    assert_success(patch(live.owner, public, is_private=True, history_public_to_subscribers=True))


def test_channel_administrator_change_moves_the_audience(live):
    newcomer = live.make_user()
    private = create_channel(live.owner, "private", [live.owner.id], invite_only=True)
    count = len(live.events())
    administrators = {"direct_members": [live.owner.id, newcomer.id], "direct_subgroups": []}
    assert_success(patch(live.owner, private, can_administer_channel_group={"new": administrators}))
    events = {
        e["op"]: (e, audience) for e, audience in events_after(live, count) + events_after(live, count, "subscription")
    }
    assert events["update"] == (
        update_event(private, "private", "can_administer_channel_group", administrators),
        {live.owner.id},
    )
    assert events["create"][1] == {newcomer.id} and events["peer_add"][1] == {newcomer.id}
    # The newcomer may now manage it; taking the permission away sends them a delete.
    assert_success(patch(newcomer, private, description="mine now"))
    count = len(live.events())
    assert_success(
        patch(
            live.owner,
            private,
            can_administer_channel_group={"new": {"direct_members": [live.owner.id], "direct_subgroups": []}},
        )
    )
    ops = {e["op"]: audience for e, audience in events_after(live, count)}
    assert ops == {"update": {live.owner.id}, "delete": {newcomer.id}}
    assert_error(newcomer.get(f"/streams/{private}"), "Invalid channel ID")


def test_failed_patch_changes_nothing(live, general):
    count = len(live.events())
    assert_error(
        patch(live.owner, general, description="new", new_name="x" * 61),
        "Channel name too long (limit: 60 characters).",
    )
    assert stream(live.owner, general)["description"] == ""
    assert events_after(live, count) == []
