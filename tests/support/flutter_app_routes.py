"""The routes the Zulip mobile app calls at feature level 483 (zulip/zulip-flutter lib/api/route/*.dart),
each with the parameters the app sends, for tests/clients/test_client_zulip_flutter.py. No tests here.

Left out: routes the app calls only on older servers (PATCH users/me/subscriptions/muted_topics
before feature level 170; users/me/android_gcm_reg_id and users/me/apns_device_token before 470).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import requests

from tests.support.channel_helpers import make_channel
from tests.support.flutter_app_helpers import REGISTER, TADA
from tests.support.helpers import PASSWORD, assert_success

OCTOPUS = {**TADA, "emoji_name": "octopus", "emoji_code": "1f419"}  # the reaction the town's fixture adds
# -- the routes the app calls at feature level 483 (lib/api/route/*.dart) ---------------------------


def upload(town) -> requests.Response:
    return town.alice.session.post(f"{town.alice.base_url}/api/v1/user_uploads", files={"file": ("a.txt", b"hi")})


def temporary_url(town) -> requests.Response:
    uri = assert_success(upload(town))["url"]  # /user_uploads/<realm id>/<path>, asked under /api/v1
    return town.alice.get(uri)


def report(town) -> requests.Response:
    """The app's report (a type, an optional description), once the realm names a moderation channel."""
    moderators = make_channel(town, "moderation", [town.owner.id], invite_only=True)
    assert_success(town.owner.patch("/realm", {"moderation_request_channel_id": moderators}))
    return town.alice.post(f"/messages/{town.empty_topic_message}/report", {"report_type": "spam"})


def subscribe(town) -> requests.Response:
    return town.alice.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]})


def flags_for_narrow(town) -> requests.Response:
    params = {"anchor": "oldest", "num_before": 0, "num_after": 100, "narrow": [], "op": "add", "flag": "read"}
    return town.alice.post("/messages/flags/narrow", params)


def device_and_push_key(town) -> requests.Response:
    device = assert_success(town.alice.post("/register_client_device"))["device_id"]
    key = {"device_id": device, "push_key_id": 7, "push_key": "MQ" + "A" * 42 + "="}
    return town.alice.post("/mobile_push/register", key)


# (label, request, the app's decoder of the answer or None, must succeed)
APP_ROUTES: list[tuple[str, Callable[[Any], requests.Response], str | None, bool]] = [
    ("GET server_settings", lambda t: t.anonymous().get("/server_settings"), "GetServerSettingsResult", True),
    (
        "POST fetch_api_key",
        lambda t: t.anonymous().post("/fetch_api_key", {"username": t.alice.email, "password": PASSWORD}),
        "FetchApiKeyResult",
        True,
    ),
    ("POST register", lambda t: t.alice.post("/register", REGISTER), "InitialSnapshot", True),
    (
        "GET messages/{id}",
        lambda t: t.alice.get(f"/messages/{t.stream_message}", {"allow_empty_topic_name": True}),
        "GetMessageResult",
        True,
    ),
    (
        "GET messages",
        lambda t: t.alice.get(
            "/messages",
            {"narrow": [], "anchor": "first_unread", "num_before": 5, "num_after": 5, "allow_empty_topic_name": True},
        ),
        "GetMessagesResult",
        True,
    ),
    (
        "POST messages",
        lambda t: t.alice.post(
            "/messages", {"type": "direct", "to": [t.bob.id], "content": "x", "read_by_sender": True}
        ),
        "SendMessageResult",
        True,
    ),
    (
        "PATCH messages/{id}",
        lambda t: t.alice.patch(f"/messages/{t.stream_message}", {"content": "soup."}),
        "UpdateMessageResult",
        True,
    ),
    ("DELETE messages/{id}", lambda t: t.owner.delete(f"/messages/{t.empty_topic_message}"), None, True),
    ("POST messages/{id}/report", report, None, True),
    ("POST user_uploads", upload, "UploadFileResult", True),
    ("GET user_uploads/{realm}/{file}", temporary_url, "GetFileTemporaryUrlResult", True),
    (
        "POST messages/{id}/reactions",
        lambda t: t.alice.post(f"/messages/{t.stream_message}/reactions", TADA),
        None,
        True,
    ),
    (
        "DELETE messages/{id}/reactions",
        lambda t: t.owner.delete(
            f"/messages/{t.stream_message}/reactions", {**TADA, "emoji_name": "octopus", "emoji_code": "1f419"}
        ),
        None,
        True,
    ),
    (
        "POST messages/flags",
        lambda t: t.alice.post("/messages/flags", {"messages": [t.stream_message], "op": "add", "flag": "read"}),
        "UpdateMessageFlagsResult",
        True,
    ),
    ("POST messages/flags/narrow", flags_for_narrow, "UpdateMessageFlagsForNarrowResult", True),
    (
        "GET messages/{id}/read_receipts",
        lambda t: t.owner.get(f"/messages/{t.direct_message}/read_receipts"),
        "GetReadReceiptsResult",
        True,
    ),
    ("POST users/me/subscriptions", subscribe, None, True),
    (
        "DELETE users/me/subscriptions",
        lambda t: t.alice.delete("/users/me/subscriptions", {"subscriptions": ["general"]}),
        None,
        True,
    ),
    (
        "POST users/me/subscriptions/properties",
        lambda t: t.alice.post(
            "/users/me/subscriptions/properties",
            {"subscription_data": [{"stream_id": t.channel_id, "property": "is_muted", "value": True}]},
        ),
        None,
        True,
    ),
    (
        "GET users/me/{id}/topics",
        lambda t: t.alice.get(f"/users/me/{t.channel_id}/topics", {"allow_empty_topic_name": True}),
        "GetChannelTopicsResult",
        True,
    ),
    (
        "POST user_topics",
        lambda t: t.alice.post("/user_topics", {"stream_id": t.channel_id, "topic": "lunch", "visibility_policy": 3}),
        None,
        True,
    ),
    ("PATCH settings", lambda t: t.alice.patch("/settings", {"emojiset": "twitter"}), None, True),
    (
        "POST submessage",
        lambda t: t.alice.post(
            "/submessage",
            {"message_id": t.stream_message, "msg_type": "widget", "content": json.dumps({"type": "vote"})},
        ),
        None,
        True,
    ),
    (
        "POST typing",
        lambda t: t.alice.post(
            "/typing", {"op": "start", "type": "channel", "stream_id": t.channel_id, "topic": "lunch"}
        ),
        None,
        True,
    ),
    ("GET users/me", lambda t: t.alice.get("/users/me"), "GetOwnUserResult", True),
    (
        "POST users/me/status",
        lambda t: t.alice.post(
            "/users/me/status", {"status_text": "out", "emoji_name": "", "emoji_code": "", "reaction_type": ""}
        ),
        None,
        True,
    ),
    (
        "POST users/me/presence",
        lambda t: t.alice.post(
            "/users/me/presence",
            {"status": "active", "ping_only": False, "new_user_input": True, "slim_presence": True},
        ),
        "UpdatePresenceResult",
        True,
    ),
    (
        "POST saved_snippets",
        lambda t: t.alice.post("/saved_snippets", {"title": "t", "content": "c"}),
        "CreateSavedSnippetResult",
        True,
    ),
    (
        "POST register_client_device",
        lambda t: t.alice.post("/register_client_device"),
        "RegisterClientDeviceResult",
        True,
    ),
    (
        "POST remove_client_device",
        lambda t: t.alice.post(
            "/remove_client_device", {"device_id": assert_success(t.alice.post("/register_client_device"))["device_id"]}
        ),
        None,
        True,
    ),
    # Needs a push service (the push bouncer): answered here, with an error when none is configured.
    ("POST mobile_push/register", device_and_push_key, None, False),
]


def route_answers(response: requests.Response) -> tuple[int, dict[str, Any]]:
    try:
        body = response.json()
    except ValueError:
        body = {"not json": response.text[:200]}
    return response.status_code, body
