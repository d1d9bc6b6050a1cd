"""POST /channels/create: every parameter, default and error, permissions and events."""

from __future__ import annotations

import pytest

from storage.channels import channels
from storage.channels.channel_creation import default_channel_ids
from storage.channels.channel_objects import channel_object
from storage.org import groups
from tests.support.channel_helpers import INSUFFICIENT, set_realm_group
from tests.support.helpers import assert_error, assert_success


def group_id(live, name):
    return live.read(groups.system_group_id, name)


def channel_obj(live, name):
    def read(tx):
        channel = channels.get_channel_by_name(tx, name)
        return None if channel is None else channel_object(tx, channel, tx.now)

    return live.read(read)


def create(client, name="new channel", subscribers=(), **params):
    return client.post("/channels/create", {"name": name, "subscribers": list(subscribers), **params})


def test_create_with_defaults(live):
    body = assert_success(create(live.owner, "general", [live.owner.id]))
    channel = channel_obj(live, "general")
    assert body["id"] == channel["stream_id"]
    assert channel["creator_id"] == live.owner.id
    assert channel["date_created"] == int(live.clock.now)
    expected = {
        "description": "",
        "rendered_description": "",
        "invite_only": False,
        "is_web_public": False,
        "history_public_to_subscribers": True,
        "message_retention_days": None,
        "folder_id": None,
        "topics_policy": "inherit",
        "is_archived": False,
        "stream_post_policy": 1,
        "is_announcement_only": False,
        "first_message_id": None,
        "stream_weekly_traffic": None,
        "subscriber_count": 1,
    }
    assert {k: channel[k] for k in expected} == expected


def test_group_setting_defaults(live):
    assert_success(create(live.owner, "defaults"))
    channel = channel_obj(live, "defaults")
    nobody, everyone = group_id(live, "role:nobody"), group_id(live, "role:everyone")
    assert channel["can_administer_channel_group"] == {"direct_members": [live.owner.id], "direct_subgroups": []}
    assert channel["can_remove_subscribers_group"] == group_id(live, "role:administrators")
    for setting in ("can_create_topic_group", "can_send_message_group"):
        assert channel[setting] == everyone
    for setting in (
        "can_add_subscribers_group",
        "can_delete_any_message_group",
        "can_delete_own_message_group",
        "can_move_messages_out_of_channel_group",
        "can_move_messages_within_channel_group",
        "can_resolve_topics_group",
        "can_subscribe_group",
    ):
        assert channel[setting] == nobody, setting


def test_subscribers_are_required_but_may_be_empty(live):
    body = assert_error(
        live.owner.post("/channels/create", {"name": "x"}), "Missing 'subscribers' argument", "REQUEST_VARIABLE_MISSING"
    )
    assert body["var_name"] == "subscribers"
    assert_success(create(live.owner, "empty", []))
    assert channel_obj(live, "empty")["subscriber_count"] == 0


def test_bad_subscribers_create_nothing(live):
    gone = live.make_user()
    assert_success(live.owner.delete(f"/users/{gone.id}"))
    assert_error(create(live.owner, "c1", [live.owner.id, 9999]), "No such user")
    assert_error(create(live.owner, "c2", [gone.id]), "User is deactivated")
    assert channel_obj(live, "c1") is None and channel_obj(live, "c2") is None


@pytest.mark.parametrize(
    ("name", "msg"),
    [
        ("", "name cannot be blank"),
        ("   ", "name cannot be blank"),
        ("x" * 61, "Channel name too long (limit: 60 characters)."),
        ("bad\x07name", "Invalid character in channel name, at position 4."),
    ],
)
def test_name_errors(live, name, msg):
    assert_error(create(live.owner, name), msg)


def test_name_is_stripped_and_may_be_60_characters(live):
    assert_success(create(live.owner, "  padded  "))
    assert channel_obj(live, "padded")["name"] == "padded"
    assert_success(create(live.owner, "y" * 60))


def test_existing_name_is_409_case_insensitively(live):
    assert_success(create(live.owner, "Design"))
    body = assert_error(create(live.owner, "design"), "Channel 'design' already exists", "CHANNEL_ALREADY_EXISTS", 409)
    assert body["channel_name"] == "design"


def test_description_is_rendered_and_one_line(live):
    assert_success(create(live.owner, "described", description="Talk about **design**\nhere"))
    channel = channel_obj(live, "described")
    assert channel["description"] == "Talk about **design** here"
    assert channel["rendered_description"] == "<p>Talk about <strong>design</strong> here</p>"
    assert_error(create(live.owner, "long", description="d" * 1025), "description is too long (limit: 1024 characters)")


def test_private_channel_history_default_and_override(live):
    assert_success(create(live.owner, "secret", [live.owner.id], invite_only=True))
    assert channel_obj(live, "secret")["history_public_to_subscribers"] is False
    assert_success(create(live.owner, "shared", [live.owner.id], invite_only=True, history_public_to_subscribers=True))
    assert channel_obj(live, "shared")["history_public_to_subscribers"] is True
    # Public channels always have public history.
    assert_success(create(live.owner, "open", history_public_to_subscribers=False))
    assert channel_obj(live, "open")["history_public_to_subscribers"] is True


@pytest.mark.parametrize(("value", "stored"), [('"realm_default"', None), ('"unlimited"', -1), ("30", 30)])
def test_message_retention_days(live, value, stored):
    assert_success(create(live.owner, "kept", message_retention_days=value))
    assert channel_obj(live, "kept")["message_retention_days"] == stored


@pytest.mark.parametrize(("value", "bad"), [("0", 0), ("-5", -5), ('"forever"', "forever")])
def test_message_retention_days_bad_values(live, value, bad):
    body = assert_error(
        create(live.owner, "kept", message_retention_days=value),
        f"Bad value for 'message_retention_days': {bad}",
        "REQUEST_VARIABLE_INVALID",
    )
    assert (body["var_name"], body["bad_value"]) == ("message_retention_days", bad)


def test_message_retention_needs_an_owner(live):
    admin = live.make_user(role="admin")
    assert_error(
        create(admin, "kept", message_retention_days="30"), "Must be an organization owner", "UNAUTHORIZED_PRINCIPAL"
    )
    assert_success(create(admin, "kept", message_retention_days='"realm_default"'))


@pytest.mark.parametrize("policy", ["inherit", "allow_empty_topic", "disable_empty_topic", "empty_topic_only"])
def test_topics_policy_values(live, policy):
    assert_success(create(live.owner, "topical", topics_policy=f'"{policy}"'))
    assert channel_obj(live, "topical")["topics_policy"] == policy


def test_topics_policy_errors(live):
    assert_error(create(live.owner, "t", topics_policy='"sometimes"'), "Invalid topics_policy")
    assert_error(create(live.owner, "t", topics_policy="inherit"), "topics_policy is not valid JSON")
    set_realm_group(live, "can_set_topics_policy_group", "role:administrators")
    member = live.make_user()
    assert_error(create(member, "t", topics_policy='"allow_empty_topic"'), INSUFFICIENT)
    assert_success(create(member, "t", topics_policy='"inherit"'))


def test_folder(live):
    assert_error(create(live.owner, "f", folder_id=99), "Invalid channel folder ID")
    folder = live.write(
        lambda tx: tx.execute("INSERT INTO channel_folders (name, date_created) VALUES ('Work', 0)").lastrowid
    )
    assert_success(create(live.owner, "f", folder_id=folder))
    assert channel_obj(live, "f")["folder_id"] == folder


def test_default_stream(live):
    assert_success(create(live.make_user(role="admin"), "welcome", is_default_stream=True))
    assert live.read(default_channel_ids) == [channel_obj(live, "welcome")["stream_id"]]
    assert_error(create(live.make_user(), "not-default", is_default_stream=True), INSUFFICIENT)
    assert_error(
        create(live.owner, "private-default", invite_only=True, is_default_stream=True),
        "A default channel cannot be private.",
    )


class TestWebPublic:
    def enable_spectators(self, live):
        live.write(lambda tx: tx.execute("UPDATE realm SET enable_spectator_access = 1"))

    def test_needs_realm_spectator_access(self, live):
        assert_error(create(live.owner, "web", is_web_public=True), "Web-public channels are not enabled.")

    def test_needs_the_server_switch(self, live):
        self.enable_spectators(live)
        live.call(lambda: setattr(live.server.settings, "web_public_channels", False))
        assert_error(
            create(live.owner, "web", is_web_public=True), "Web-public channels are not enabled on this server."
        )

    def test_needs_can_create_web_public_channel_group(self, live):
        self.enable_spectators(live)
        assert_error(create(live.make_user(role="admin"), "web", is_web_public=True), INSUFFICIENT)
        assert_success(create(live.owner, "web", is_web_public=True))
        assert channel_obj(live, "web")["is_web_public"] is True


class TestGroupSettings:
    def test_named_group_and_object_forms(self, live):
        member = live.make_user()
        moderators = group_id(live, "role:moderators")
        assert_success(
            create(
                live.owner,
                "set",
                can_send_message_group=moderators,
                can_administer_channel_group={"direct_members": [member.id], "direct_subgroups": [moderators]},
                can_resolve_topics_group={"direct_members": [], "direct_subgroups": [moderators]},
            )
        )
        channel = channel_obj(live, "set")
        assert channel["can_send_message_group"] == moderators
        assert channel["stream_post_policy"] == 4
        assert channel["can_administer_channel_group"] == {
            "direct_members": [member.id],
            "direct_subgroups": [moderators],
        }
        assert channel["can_resolve_topics_group"] == moderators

    def test_administrators_only_posting_is_announcement_only(self, live):
        assert_success(create(live.owner, "news", can_send_message_group=group_id(live, "role:administrators")))
        channel = channel_obj(live, "news")
        assert (channel["stream_post_policy"], channel["is_announcement_only"]) == (2, True)

    @pytest.mark.parametrize(
        "setting", ["can_add_subscribers_group", "can_administer_channel_group", "can_subscribe_group"]
    )
    def test_role_everyone_not_allowed(self, live, setting):
        assert_error(
            create(live.owner, "x", **{setting: group_id(live, "role:everyone")}),
            f"'{setting}' setting cannot be set to 'role:everyone' group.",
        )

    @pytest.mark.parametrize("setting", sorted(channels.CHANNEL_RULES))
    def test_role_internet_never_allowed(self, live, setting):
        assert_error(
            create(live.owner, "x", **{setting: group_id(live, "role:internet")}),
            f"'{setting}' setting cannot be set to 'role:internet' group.",
        )

    def test_invalid_values(self, live):
        assert_error(create(live.owner, "x", can_send_message_group=9999), "Invalid user group")
        assert_error(
            create(live.owner, "x", can_send_message_group={"direct_members": [9999], "direct_subgroups": []}),
            "Invalid user ID: 9999",
        )
        assert_error(create(live.owner, "x", can_send_message_group="all"), "can_send_message_group is not valid JSON")
        assert_error(
            create(live.owner, "x", can_send_message_group='"all"'), "can_send_message_group is not an integer"
        )
        assert channel_obj(live, "x") is None

    def test_private_protected_history_needs_everyone_for_topics(self, live):
        moderators = group_id(live, "role:moderators")
        assert_error(
            create(live.owner, "p", invite_only=True, can_create_topic_group=moderators),
            "'can_create_topic_group' must be 'role:everyone' for private channels with protected history.",
        )
        assert_success(
            create(
                live.owner, "p", invite_only=True, history_public_to_subscribers=True, can_create_topic_group=moderators
            )
        )

    def test_delete_settings_need_the_realm_permission(self, live):
        everyone = group_id(live, "role:everyone")
        assert_error(create(live.make_user(), "d", can_delete_own_message_group=everyone), INSUFFICIENT)
        assert_success(create(live.make_user(role="moderator"), "d", can_delete_own_message_group=everyone))
        assert channel_obj(live, "d")["can_delete_own_message_group"] == everyone


class TestPermissions:
    @pytest.mark.parametrize("role", ["owner", "admin", "moderator", "member"])
    @pytest.mark.parametrize("invite_only", [False, True])
    def test_non_guests_may_create(self, live, role, invite_only):
        client = live.make_user(role=role)
        assert_success(create(client, f"{role}-{invite_only}", [client.id], invite_only=invite_only))

    def test_guests_may_not(self, live):
        assert_error(create(live.make_user(role="guest"), "g"), "Not allowed for guest users")

    def test_realm_creation_settings(self, live):
        set_realm_group(live, "can_create_private_channel_group", "role:administrators")
        member = live.make_user()
        assert_error(create(member, "private", invite_only=True), INSUFFICIENT)
        assert_success(create(member, "public"))
        set_realm_group(live, "can_create_public_channel_group", "role:moderators")
        assert_error(create(member, "public2"), INSUFFICIENT)

    def test_subscribing_others_needs_a_subscriber_permission(self, live):
        set_realm_group(live, "can_add_subscribers_group", "role:administrators")
        member, other = live.make_user(), live.make_user()
        admins_only = {"direct_members": [], "direct_subgroups": [group_id(live, "role:administrators")]}
        assert_error(
            create(member, "mine", [member.id, other.id], can_administer_channel_group=admins_only), INSUFFICIENT
        )
        assert channel_obj(live, "mine") is None
        assert_success(create(member, "mine", [member.id], can_administer_channel_group=admins_only))
        # By default the creator administers the channel, and so may add anyone.
        assert_success(create(member, "ours", [member.id, other.id]))


class TestEvents:
    def test_public_channel_events(self, live):
        member, guest = live.make_user(), live.make_user(role="guest")
        before = len(live.events())
        assert_success(create(live.owner, "town", [live.owner.id]))
        events = live.events()[before:]
        [(stream_event, audience)] = [(e, ids) for e, ids in events if e["type"] == "stream"]
        assert stream_event["op"] == "create" and stream_event["streams"][0]["name"] == "town"
        assert audience == [live.owner.id, member.id]  # not the guest
        [(added, added_to)] = [(e, ids) for e, ids in events if e["type"] == "subscription" and e["op"] == "add"]
        assert added_to == [live.owner.id]
        assert added["subscriptions"][0]["subscribers"] == [live.owner.id]
        [(peer, peers)] = [(e, ids) for e, ids in events if e.get("op") == "peer_add"]
        assert peer["stream_ids"] == [stream_event["streams"][0]["stream_id"]]
        assert peer["user_ids"] == [live.owner.id]
        assert peers == [member.id]
        assert guest.id not in peers

    def test_private_channel_events_reach_only_those_with_access(self, live):
        member, outsider, admin = live.make_user(), live.make_user(), live.make_user(role="admin")
        before = len(live.events())
        assert_success(create(member, "hideout", [member.id], invite_only=True))
        for event, audience in live.events()[before:]:
            assert outsider.id not in audience, event
        [(_, audience)] = [(e, ids) for e, ids in live.events()[before:] if e["type"] == "stream"]
        assert audience == sorted([live.owner.id, member.id, admin.id])

    def test_failed_creation_publishes_nothing(self, live):
        before = len(live.events())
        assert_error(create(live.owner, "nope", [12345]), "No such user")
        assert live.events()[before:] == []


def test_default_channel_creation_sends_default_streams(live):
    guest = live.make_user(role="guest")
    before = len(live.events())
    assert_success(create(live.owner, "lobby", is_default_stream=True))
    [(event, audience)] = [(e, ids) for e, ids in live.events()[before:] if e["type"] == "default_streams"]
    assert [c["name"] for c in event["default_streams"]] == ["lobby"]
    assert live.owner.id in audience and guest.id not in audience
