"""POST /register's initial state: built from the same storage code the events come from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from storage.channels.channel_creation import default_channel_ids
from storage.channels.channel_folders import list_channel_folders
from storage.channels.channels import has_content_access, has_metadata_access
from storage.channels.topics import display_topic
from storage.channels.user_topics import list_user_topics, muted_checker, muted_topics
from storage.db.tx import Tx, topic_key
from storage.membership import subscriptions
from storage.messages import drafts, muted_users, saved_snippets, scheduled_messages
from storage.model import realm as model_realm
from storage.model.flags import ANY_MENTION, MENTIONED
from storage.model.realm import Realm
from storage.org import groups, linkifiers, profile_fields, user_settings, users
from storage.org import realm as realm_storage
from storage.org.alert_words import alert_words_state
from storage.org.presence import presence_state
from storage.org.realm_emoji import realm_emoji_state
from storage.org.user_status import user_status_state
from storage.push import devices
from storage.register import register_realm, register_user
from storage.register.register_channels import ChannelObjects

# Unread messages beyond this many are left out of unread_msgs (old_unreads_missing is set).
MAX_UNREAD_MESSAGES = 50_000
LONGPOLL_TIMEOUT_SECONDS = 90


def realm_state(tx: Tx, realm: Realm, server_generation: int) -> dict[str, Any]:
    """The realm's limits and settings, included in every registration."""
    row = tx.one("SELECT * FROM realm")
    assert row is not None
    state: dict[str, Any] = {
        "max_message_length": model_realm.MAX_MESSAGE_LENGTH,
        "max_topic_length": model_realm.MAX_TOPIC_LENGTH,
        "max_stream_name_length": model_realm.MAX_STREAM_NAME_LENGTH,
        "max_stream_description_length": model_realm.MAX_STREAM_DESCRIPTION_LENGTH,
        "realm_empty_topic_display_name": model_realm.EMPTY_TOPIC_DISPLAY_NAME,
        "max_bulk_new_subscription_messages": subscriptions.MAX_BULK_NEW_SUBSCRIPTION_MESSAGES,
        "event_queue_longpoll_timeout_seconds": LONGPOLL_TIMEOUT_SECONDS,
        "server_generation": server_generation,
        "realm_name": realm.name,
        "realm_url": realm.url,
        "realm_uri": realm.url,
        "realm_date_created": realm.date_created,
        "realm_enable_spectator_access": bool(row["enable_spectator_access"]),
        "realm_topics_policy": row["topics_policy"],
        "realm_message_retention_days": row["message_retention_days"] or -1,
        "realm_waiting_period_threshold": row["waiting_period_threshold"],
    }
    for setting in realm_storage.REALM_GROUP_DEFAULTS:
        state[f"realm_{setting}"] = groups.setting_value(tx, row[setting])
    return state


# Unread messages newest first, as the user_messages_unread index serves them. Like Zulip, unread
# messages of channels the user has left are not counted: clients could not show them.
UNREAD_SQL = (
    "SELECT um.message_id, um.flags, m.channel_id, m.topic, m.recipient_id, m.sender_id"
    " FROM user_messages AS um INDEXED BY user_messages_unread CROSS JOIN messages AS m ON m.id = um.message_id"
    " WHERE um.user_id = ? AND (um.flags & 1) = 0 AND (m.channel_id IS NULL OR EXISTS (SELECT 1 FROM subscriptions"
    " AS s WHERE s.user_id = um.user_id AND s.channel_id = m.channel_id AND s.active))"
    " ORDER BY um.message_id DESC LIMIT ?"
)


def unread_msgs(tx: Tx, user_id: int, empty_topic_name: bool = False) -> dict[str, Any]:
    """The user's unread messages grouped as clients show them (channel topics, DMs, mentions)."""
    rows = tx.all(UNREAD_SQL, (user_id, MAX_UNREAD_MESSAGES + 1))
    missing = len(rows) > MAX_UNREAD_MESSAGES
    rows = sorted(rows[:MAX_UNREAD_MESSAGES], key=lambda r: r["message_id"])
    members = register_user.conversation_members(tx, {r["recipient_id"] for r in rows if r["channel_id"] is None})
    streams: dict[tuple[int, str], tuple[str, list[int]]] = {}  # (channel, topic_key): (topic, ids)
    pms: dict[int, list[int]] = {}
    huddles: dict[str, list[int]] = {}
    # Zulip's rule: unread messages of muted topics and channels stay listed but are not counted,
    # and mention them only when the user is mentioned by name (not by a wildcard).
    is_muted, muted = muted_checker(tx, user_id), set[int]()
    for row in rows:
        if row["channel_id"] is not None:
            if is_muted(row["channel_id"], row["topic"]):
                muted.add(row["message_id"])
            # One entry per topic whatever the case each message spells it in, named as the oldest
            # spells it, sorted by the folded name (Zulip's rule, which folds the display name).
            topic = display_topic(row["topic"], empty_topic_name)
            streams.setdefault((row["channel_id"], topic_key(topic)), (topic, []))[1].append(row["message_id"])
            continue
        people = members[row["recipient_id"]]
        if len(people) > 2:
            huddles.setdefault(",".join(map(str, people)), []).append(row["message_id"])
        else:
            other = next((p for p in people if p != user_id), user_id)
            pms.setdefault(other, []).append(row["message_id"])
    return {
        "count": len(rows) - len(muted),
        "pms": [{"other_user_id": o, "sender_id": o, "unread_message_ids": ids} for o, ids in sorted(pms.items())],
        "streams": [
            {"stream_id": c, "topic": t, "unread_message_ids": ids} for (c, _), (t, ids) in sorted(streams.items())
        ],
        "huddles": [{"user_ids_string": k, "unread_message_ids": ids} for k, ids in sorted(huddles.items())],
        "mentions": [
            r["message_id"]
            for r in rows
            if r["flags"] & MENTIONED or (r["flags"] & ANY_MENTION and r["message_id"] not in muted)
        ],
        "old_unreads_missing": missing,
    }


def subscription_state(
    tx: Tx, user: users.User, include_subscribers: str, objects: ChannelObjects | None = None
) -> dict[str, Any]:
    """subscriptions, unsubscribed (left, still visible) and never_subscribed (visible, never joined)."""
    objects = objects or ChannelObjects(tx)
    subscribed = subscriptions.list_subscriptions(tx, user, include_subscribers, objects.object)
    joined = {s["stream_id"] for s in subscribed}
    left = set(tx.column("SELECT channel_id FROM subscriptions WHERE user_id = ? AND NOT active", (user.id,)))
    unsubscribed: list[dict[str, Any]] = []
    never: list[dict[str, Any]] = []
    for channel_id in tx.column("SELECT id FROM channels WHERE NOT is_archived ORDER BY name"):
        channel = objects.channels[channel_id]
        # Not subscribed (left or never joined): has_*_access need not look the subscription up.
        if channel.id in joined or not has_metadata_access(tx, user, channel, False):
            continue
        obj = dict(objects.object(channel_id))
        if include_subscribers != "false" and has_content_access(tx, user, channel, False):
            obj["subscribers"] = subscriptions.subscriber_ids(tx, channel.id)
        (unsubscribed if channel.id in left else never).append(obj)
    return {"subscriptions": subscribed, "unsubscribed": unsubscribed, "never_subscribed": never}


# (event type, state key, type of its empty value) of the features this server lacks.
NOTHING_TO_SHOW: tuple[tuple[str, str, Any], ...] = (
    ("realm_domains", "realm_domains", list),
    ("realm_playgrounds", "realm_playgrounds", list), ("default_stream_groups", "realm_default_stream_groups", list),
    ("realm_embedded_bots", "realm_embedded_bots", list),
    ("realm_incoming_webhook_bots", "realm_incoming_webhook_bots", list),
    ("onboarding_steps", "onboarding_steps", list),
)  # fmt: skip


def _user_and_realm_state(
    tx: Tx,
    user: users.User,
    realm: Realm,
    want: Callable[[str], bool],
    options: dict[str, Any],
    objects: ChannelObjects | None,
) -> dict[str, Any]:
    """The own-user, settings, realm and conversation state of fetch_initial_state (Zulip's keys per type)."""
    state: dict[str, Any] = {}
    if want("realm"):
        state.update(register_realm.realm_extra_state(tx, realm, options.get("push_enabled", False)))
    if want("realm_user"):
        state.update(register_user.own_user_state(tx, user, realm))
        state["cross_realm_bots"] = register_user.cross_realm_bots(tx, realm)
    if want("realm_bot"):
        state["realm_bots"] = register_user.realm_bots(tx, user, realm)
    if want("recent_private_conversations"):
        state["recent_private_conversations"] = register_user.recent_private_conversations(tx, user)
    if want("starred_messages"):
        state["starred_messages"] = register_user.starred_message_ids(tx, user)
    kinds = ("user_settings", "update_display_settings", "update_global_notifications")
    legacy = not options.get("user_settings_object", False)
    state.update(user_settings.user_settings_state(tx, user, legacy, {kind: want(kind) for kind in kinds}))
    if want("realm_user_settings_defaults"):
        state["realm_user_settings_defaults"] = user_settings.realm_user_settings_defaults(tx)
    if want("custom_profile_fields"):
        state["custom_profile_fields"] = profile_fields.list_fields(tx)
        state["custom_profile_field_types"] = register_realm.custom_profile_field_types()
    if want("default_streams"):
        state["realm_default_streams"] = visible_channels(tx, user, default_channel_ids(tx), objects)
    if want("stream"):
        active = tx.column("SELECT id FROM channels WHERE NOT is_archived ORDER BY name")
        state["streams"] = visible_channels(tx, user, active, objects)
    # Features this server does not have: no realm domains, code playgrounds, default
    # channel groups, embedded or incoming-webhook bots or onboarding steps.
    for kind, key, value in NOTHING_TO_SHOW:
        if want(kind):
            state[key] = value()
    return state


def visible_channels(
    tx: Tx, user: users.User, channel_ids: list[int], objects: ChannelObjects | None = None
) -> list[dict[str, Any]]:
    """The channel objects, in the order given, of those of these channels the user may know of."""
    objects = objects or ChannelObjects(tx)
    subscribed = set(tx.column("SELECT channel_id FROM subscriptions WHERE user_id = ? AND active", (user.id,)))
    result = []
    for channel_id in channel_ids:
        channel = objects.channels.get(channel_id)
        if channel is not None and has_metadata_access(tx, user, channel, channel_id in subscribed):
            result.append(dict(objects.object(channel_id)))
    return result


def fetch_initial_state(
    tx: Tx, user: users.User, realm: Realm, wanted: set[str] | None, options: dict[str, Any]
) -> dict[str, Any]:
    """Return the state of every requested event type (None: all) for a new queue."""

    def want(kind: str) -> bool:
        return wanted is None or kind in wanted

    state: dict[str, Any] = realm_state(tx, realm, options["server_generation"])
    # Channel objects are built once each (from a few queries over all channels) when a section shows them.
    objects = ChannelObjects(tx) if want("stream") or want("subscription") or want("default_streams") else None
    state.update(_user_and_realm_state(tx, user, realm, want, options, objects))
    if want("message"):
        state["max_message_id"] = users.max_message_id(tx, user)
    if want("update_message_flags") or want("message"):
        state["unread_msgs"] = unread_msgs(tx, user.id, options.get("empty_topic_name", False))
    if want("subscription"):
        state.update(subscription_state(tx, user, options["include_subscribers"], objects))
    if want("channel_folders"):
        # Archived folders too, as Zulip: channels may still be in them.
        state["channel_folders"] = list_channel_folders(tx, True)
    if want("realm_user"):
        # With their custom profile field values (profile_data), as Zulip sends them to logged-in users.
        everyone = users.list_user_objects(tx, user, realm, None, options["client_gravatar"], True)
        state["realm_users"] = [u for u in everyone if u["is_active"]]
        state["realm_non_active_users"] = [u for u in everyone if not u["is_active"]]
    if want("realm_user_groups"):
        state["realm_user_groups"] = groups.list_groups(tx, False)
    if want("realm_linkifiers"):
        # Zulip's rule since FL 176: only clients with the linkifier_url_template capability get them.
        state["realm_linkifiers"] = linkifiers.list_linkifiers(tx) if options.get("linkifier_url_template") else []
    if want("realm_filters"):
        state["realm_filters"] = []  # the pre-FL 176 format, always empty (as in Zulip)
    if want("scheduled_messages"):
        state["scheduled_messages"] = scheduled_messages.list_scheduled_messages(tx, user)
    if want("drafts"):
        state.update(drafts.drafts_state(tx, user))
    if want("saved_snippets"):
        state.update(saved_snippets.saved_snippets_state(tx, user))
    if want("device"):
        state.update(devices.devices_state(tx, user))
    if want("presence"):
        state.update(
            presence_state(tx, realm, options.get("slim_presence", False),
                           options.get("presence_last_update_id"), options.get("presence_history_limit_days"))
        )  # fmt: skip
    if want("realm_emoji"):
        state.update(realm_emoji_state(tx))
    if want("realm"):
        state["max_file_upload_size_mib"] = options["max_file_upload_size_mib"]  # a server setting
    if want("user_topic"):
        state["user_topics"] = list_user_topics(tx, user, options.get("empty_topic_name", False))
    if want("muted_topics"):
        state["muted_topics"] = muted_topics(tx, user, options.get("empty_topic_name", False))
    if want("alert_words"):
        state.update(alert_words_state(tx, user))
    if want("muted_users"):
        state["muted_users"] = muted_users.list_muted_users(tx, user)
    if want("user_status"):
        state["user_status"] = user_status_state(tx)
    return state
