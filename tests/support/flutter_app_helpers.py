"""The Zulip mobile app's requests (zulip/zulip-flutter lib/api/route/*.dart at feature level 483), for
tests/clients/test_client_zulip_flutter.py: its /register parameters, its narrows, the changes that
make each kind of event (the routes it calls: tests/support/flutter_app_routes.py). No tests here.

`town` below is the live server of that module's fixture: owner, Alice and Bob in "general", with
.stream_message, .empty_topic_message and .direct_message (owner to Alice).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.support.channel_helpers import make_channel
from tests.support.helpers import assert_success

# lib/api/route/events.dart registerQueue: everything else is left to the server's defaults. The app
# JSON-encodes every parameter but those it wraps in RawParameter (lib/api/core.dart encodeParameters):
# the test client sends strings as they are, so a JSON string is written here as its JSON text.
REGISTER: dict[str, Any] = {
    "idle_queue_timeout": json.dumps("mobile"),
    "apply_markdown": True,
    "client_gravatar": False,
    "slim_presence": True,
    "client_capabilities": {
        "notification_settings_null": True,
        "bulk_message_deletion": True,
        "user_avatar_url_field_optional": True,
        "stream_typing_notifications": True,
        "user_settings_object": True,
        "include_deactivated_groups": True,
        "empty_topic_name": True,
        "individual_emoji_changes": True,
    },
}
TADA = {"emoji_name": "tada", "emoji_code": "1f389", "reaction_type": "unicode_emoji"}  # as the app names an emoji
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(40)


def app_register(client) -> dict[str, Any]:
    return assert_success(client.post("/register", REGISTER))


def narrow_param(town, narrow: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The narrow as the app sends it: operands resolved against the town (see NARROWS)."""
    return [
        {**term, "operand": term["operand"](town) if callable(term["operand"]) else term["operand"]} for term in narrow
    ]


def get_messages(client, narrow: list[dict[str, Any]]) -> dict[str, Any]:
    """GET /messages as the app's message list fetches: newest first page, allow_empty_topic_name."""
    params = {"narrow": narrow, "anchor": "newest", "num_before": 100, "num_after": 0, "allow_empty_topic_name": True}
    return assert_success(client.get("/messages", params))


def channel(town) -> int:
    return town.channel_id


# lib/api/model/narrow.dart, as resolveApiNarrowForServer gives them at feature level 483: the narrow
# (operands may be functions of the town), and the town's messages Alice sees in it, oldest first.
NARROWS: dict[str, tuple[list[dict[str, Any]], list[str]]] = {
    "combined feed": ([], ["stream_message", "empty_topic_message", "direct_message"]),
    "channel": ([{"operator": "channel", "operand": channel}], ["stream_message", "empty_topic_message"]),
    "topic": (
        [{"operator": "channel", "operand": channel}, {"operator": "topic", "operand": "lunch"}],
        ["stream_message"],
    ),
    "empty topic": (
        [{"operator": "channel", "operand": channel}, {"operator": "topic", "operand": ""}],
        ["empty_topic_message"],
    ),
    "with": (
        [
            {"operator": "channel", "operand": channel},
            {"operator": "topic", "operand": "lunch"},
            {"operator": "with", "operand": lambda town: town.stream_message},
        ],
        ["stream_message"],
    ),
    # DmNarrow.apiEncode: every recipient, the user included, sorted (lib/model/narrow.dart).
    "dm": ([{"operator": "dm", "operand": lambda town: sorted([town.owner.id, town.alice.id])}], ["direct_message"]),
    "is dm": ([{"operator": "is", "operand": "dm"}], ["direct_message"]),
    "is starred": ([{"operator": "is", "operand": "starred"}], ["direct_message"]),
    "is mentioned": ([{"operator": "is", "operand": "mentioned"}], ["direct_message"]),
    "search": ([{"operator": "search", "operand": "soup"}], ["stream_message"]),
}


def send(client, to: int, topic: str = "lunch", content: str = "hello") -> int:
    params = {"type": "channel", "to": to, "topic": topic, "content": content}
    return assert_success(client.post("/messages", params))["id"]


# -- each kind of event: a change made by another client, and the (type, op) it must bring ----------


def message_events(town) -> list[tuple[str, Any]]:
    send(town.owner, town.channel_id)
    assert_success(town.owner.post("/messages", {"type": "direct", "to": [town.alice.id], "content": "psst"}))
    return [("message", None)]


def update_message_events(town) -> list[tuple[str, Any]]:
    sent = send(town.owner, town.channel_id)
    assert_success(town.owner.patch(f"/messages/{sent}", {"content": "edited"}))
    assert_success(town.owner.patch(f"/messages/{sent}", {"topic": "dinner", "propagate_mode": "change_one"}))
    return [("update_message", None)]


def delete_message_events(town) -> list[tuple[str, Any]]:
    sent = send(town.owner, town.channel_id)
    direct = assert_success(town.owner.post("/messages", {"type": "direct", "to": [town.alice.id], "content": "x"}))
    assert_success(town.owner.delete(f"/messages/{sent}"))
    assert_success(town.owner.delete(f"/messages/{direct['id']}"))
    return [("delete_message", None)]


def reaction_events(town) -> list[tuple[str, Any]]:
    path = f"/messages/{town.stream_message}/reactions"
    assert_success(town.bob.post(path, TADA))
    assert_success(town.bob.delete(path, TADA))
    return [("reaction", "add"), ("reaction", "remove")]


def submessage_events(town) -> list[tuple[str, Any]]:
    """A poll (its message carries the widget submessage the app's Poll reads), a vote and a new option
    as the app sends them (lib/model/submessage.dart: PollVoteEventSubmessage, PollNewOptionEventSubmessage)."""
    poll = send(town.owner, town.channel_id, content="/poll Soup?\nyes\nno")
    for data in ({"type": "vote", "key": "canned,0", "vote": 1}, {"type": "new_option", "idx": 1, "option": "maybe"}):
        submessage = {"message_id": poll, "msg_type": "widget", "content": json.dumps(data)}
        assert_success(town.bob.post("/submessage", submessage))
    return [("message", None), ("submessage", None)]


def typing_events(town) -> list[tuple[str, Any]]:
    for op in ("start", "stop"):
        assert_success(town.owner.post("/typing", {"op": op, "type": "direct", "to": [town.alice.id]}))
        channel_typing = {"op": op, "type": "channel", "stream_id": town.channel_id, "topic": "lunch"}
        assert_success(town.owner.post("/typing", channel_typing))
    return [("typing", "start"), ("typing", "stop")]


def presence_events(town) -> list[tuple[str, Any]]:
    assert_success(town.bob.post("/users/me/presence", {"status": "active", "slim_presence": True}))
    return [("presence", None)]


def subscription_events(town) -> list[tuple[str, Any]]:
    make_channel(town, "random", [town.owner.id, town.alice.id])
    data = [
        {"stream_id": town.channel_id, "property": property, "value": value}
        for property, value in (
            ("color", "#aabbcc"),
            ("is_muted", True),
            ("pin_to_top", True),
            ("desktop_notifications", False),
            ("push_notifications", True),
        )
    ]
    assert_success(town.alice.post("/users/me/subscriptions/properties", {"subscription_data": data}))
    # Alice sees the owner leave and come back (peer_remove, peer_add), then leaves "random" herself.
    assert_success(town.owner.delete("/users/me/subscriptions", {"subscriptions": ["general"]}))
    assert_success(town.owner.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]}))
    assert_success(town.alice.delete("/users/me/subscriptions", {"subscriptions": ["random"]}))
    return [("subscription", op) for op in ("add", "update", "peer_add", "peer_remove", "remove")]


def stream_events(town) -> list[tuple[str, Any]]:
    created = make_channel(town, "announce", [town.owner.id, town.alice.id])
    senders = {"direct_members": [town.owner.id], "direct_subgroups": []}  # a group-setting value the app decodes
    for change in ({"new_name": "news"}, {"description": "All the **news**"}, {"is_private": True},
                   {"message_retention_days": 30}, {"topics_policy": "allow_empty_topic"},
                   {"can_send_message_group": {"new": senders}}):  # fmt: skip
        assert_success(town.owner.patch(f"/streams/{created}", change))
    assert_success(town.owner.delete(f"/streams/{created}"))
    return [("stream", "create"), ("stream", "update"), ("stream", "delete")]


def realm_user_events(town) -> list[tuple[str, Any]]:
    new = {"email": "carol@example.com", "password": "secret-pass", "full_name": "Carol"}
    carol = assert_success(town.owner.post("/users", new))["user_id"]
    assert_success(town.owner.patch(f"/users/{town.bob.id}", {"full_name": "Robert"}))
    assert_success(town.owner.patch(f"/users/{town.bob.id}", {"role": 200}))  # and its system groups
    field = assert_success(town.owner.post("/realm/profile_fields", {"name": "Desk", "field_type": 1}))["id"]
    profile = {"profile_data": [{"id": field, "value": "Kitchen"}]}
    assert_success(town.owner.patch(f"/users/{town.bob.id}", profile))
    assert_success(town.owner.delete(f"/users/{carol}"))
    return [("realm_user", "add"), ("realm_user", "update"), ("user_group", "add_members"),
            ("user_group", "remove_members")]  # fmt: skip


def realm_events(town) -> list[tuple[str, Any]]:
    assert_success(town.owner.patch("/realm", {"allow_edit_history": False}))
    assert_success(town.owner.patch("/realm", {"message_content_edit_limit_seconds": 600}))
    assert_success(town.owner.patch("/realm", {"allow_message_editing": False}))
    return [("realm", "update"), ("realm", "update_dict")]


def user_settings_events(town) -> list[tuple[str, Any]]:
    for name, value in (
        ("starred_message_counts", False),
        ("twenty_four_hour_time", True),
        ("display_emoji_reaction_users", False),
        ("emojiset", "text"),
        ("presence_enabled", False),
    ):
        assert_success(town.alice.patch("/settings", {name: value}))
    return [("user_settings", "update")]


def user_topic_events(town) -> list[tuple[str, Any]]:
    params = {"stream_id": town.channel_id, "topic": "lunch", "visibility_policy": 1}
    assert_success(town.alice.post("/user_topics", params))
    return [("user_topic", None)]


def flag_events(town) -> list[tuple[str, Any]]:
    for op in ("add", "remove"):
        for flag in ("starred", "read"):
            ids = [town.stream_message, town.direct_message]
            assert_success(town.alice.post("/messages/flags", {"messages": ids, "op": op, "flag": flag}))
    return [("update_message_flags", "add"), ("update_message_flags", "remove")]


def alert_word_events(town) -> list[tuple[str, Any]]:
    assert_success(town.alice.post("/users/me/alert_words", {"alert_words": ["soup"]}))
    return [("alert_words", None)]


def realm_emoji_events(town) -> list[tuple[str, Any]]:
    """The whole list each time ("update"): the individual_emoji_changes capability the app sends
    (for "add" and "update_one") is newer than the API tornchat speaks, and "update" still decodes."""
    url = f"{town.owner.base_url}/api/v1/realm/emoji/wave_cat"
    assert_success(town.owner.session.post(url, files={"file": ("x.png", PNG, "image/png")}))
    assert_success(town.owner.delete("/realm/emoji/wave_cat"))
    return [("realm_emoji", "update")]


def profile_field_events(town) -> list[tuple[str, Any]]:
    assert_success(town.owner.post("/realm/profile_fields", {"name": "Team", "field_type": 1, "hint": "Yours"}))
    return [("custom_profile_fields", None)]


def user_group_events(town) -> list[tuple[str, Any]]:
    cooks = {"name": "cooks", "members": [town.alice.id], "description": "Kitchen"}
    cooks_id = assert_success(town.owner.post("/user_groups/create", cooks))["group_id"]
    staff = {"name": "staff", "members": [town.bob.id], "description": "All", "subgroups": [cooks_id]}
    assert_success(town.owner.post("/user_groups/create", staff))
    return [("user_group", "add"), ("user_group", "add_subgroups")]


def saved_snippet_events(town) -> list[tuple[str, Any]]:
    snippet = assert_success(town.alice.post("/saved_snippets", {"title": "hi", "content": "hello"}))[
        "saved_snippet_id"
    ]
    assert_success(town.alice.patch(f"/saved_snippets/{snippet}", {"title": "hey"}))
    assert_success(town.alice.delete(f"/saved_snippets/{snippet}"))
    return [("saved_snippets", op) for op in ("add", "update", "remove")]


def channel_folder_events(town) -> list[tuple[str, Any]]:
    assert_success(town.owner.post("/channel_folders/create", {"name": "Teams", "description": "Ours"}))
    return [("channel_folder", "add")]


def device_events(town) -> list[tuple[str, Any]]:
    device = assert_success(town.alice.post("/register_client_device"))["device_id"]
    assert_success(town.alice.post("/remove_client_device", {"device_id": device}))
    return [("device", "add"), ("device", "remove")]


def user_status_events(town) -> list[tuple[str, Any]]:
    status = {
        "status_text": "at lunch",
        "emoji_name": "octopus",
        "emoji_code": "1f419",
        "reaction_type": "unicode_emoji",
    }
    assert_success(town.bob.post("/users/me/status", status))
    assert_success(town.bob.post("/users/me/status", {"status_text": "", "emoji_name": ""}))
    return [("user_status", None)]


def muted_user_events(town) -> list[tuple[str, Any]]:
    assert_success(town.alice.post(f"/users/me/muted_users/{town.bob.id}"))
    assert_success(town.alice.delete(f"/users/me/muted_users/{town.bob.id}"))
    return [("muted_users", None)]


def events_the_app_ignores(town) -> list[tuple[str, Any]]:
    """Kinds the app has no decoder for (drafts, scheduled messages, linkifiers, attachments...)."""
    draft = {"type": "stream", "to": [town.channel_id], "topic": "lunch", "content": "later", "timestamp": 1}
    assert_success(town.alice.post("/drafts", {"drafts": [draft]}))
    later = {
        "type": "channel",
        "to": town.channel_id,
        "topic": "lunch",
        "content": "x",
        "scheduled_delivery_timestamp": int(town.clock()) + 3600,
    }
    assert_success(town.alice.post("/scheduled_messages", later))
    linkifier = {"pattern": r"#(?P<id>[0-9]+)", "url_template": "https://tracker.example.com/{id}"}
    assert_success(town.owner.post("/realm/filters", linkifier))
    uploaded = town.alice.session.post(f"{town.alice.base_url}/api/v1/user_uploads", files={"file": ("a.txt", b"a")})
    assert_success(uploaded)
    editing = send(town.owner, town.channel_id)
    assert_success(town.owner.post(f"/messages/{editing}/typing", {"op": "start"}))
    make_channel(town, "welcome", [town.owner.id], is_default_stream=True)
    return [("drafts", "add"), ("scheduled_messages", "add"), ("attachment", "add"),
            ("typing_edit_message", "start"), ("default_streams", None)]  # fmt: skip


SCENARIOS: dict[str, Callable[[Any], list[tuple[str, Any]]]] = {
    "message": message_events,
    "update_message": update_message_events,
    "delete_message": delete_message_events,
    "reaction": reaction_events,
    "submessage": submessage_events,
    "typing": typing_events,
    "presence": presence_events,
    "subscription": subscription_events,
    "stream": stream_events,
    "realm_user": realm_user_events,
    "realm": realm_events,
    "user_settings": user_settings_events,
    "user_topic": user_topic_events,
    "update_message_flags": flag_events,
    "alert_words": alert_word_events,
    "realm_emoji": realm_emoji_events,
    "custom_profile_fields": profile_field_events,
    "user_group": user_group_events,
    "saved_snippets": saved_snippet_events,
    "channel_folder": channel_folder_events,
    "device": device_events,
    "user_status": user_status_events,
    "muted_users": muted_user_events,
    "ignored by the app": events_the_app_ignores,
}
