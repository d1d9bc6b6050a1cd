"""Editing and moving messages (PATCH /messages/{id}) and fetching one message (GET /messages/{id}).

Who may do what. Zulip keeps part of this in realm settings tornchat does not have yet
(can_move_messages_between_topics_group, can_move_messages_between_channels_group,
can_resolve_topics_group); here those realm-wide rights belong to organization moderators and above:
- content: only the sender;
- topic: the sender, moderators, the channel's administrators, and the can_move_messages_within_channel_group
  of the source or target channel;
- resolving or unresolving (adding or removing the "✔ " prefix, nothing else): the sender, moderators and
  the can_resolve_topics_group of the source or target channel;
- channel: moderators, the source channel's administrators and its can_move_messages_out_of_channel_group;
  the target must be readable, and the actor allowed to post there (and to create the topic if new).
The realm's editing settings and time limits apply (storage/org/realm_settings.py).
send_notification_to_old_thread/new_thread are accepted, but no notification-bot messages are sent.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import msgspec

from storage.channels.channels import can_administer, content_access_ids, has_content_access
from storage.channels.topics import RESOLVED_PREFIX, check_topic_allowed, normalize_topic, topic_exists
from storage.channels.user_topics import user_topic_event
from storage.db.tx import Tx, topic_key
from storage.fetch.message_access import access_message, message_channel, message_viewers
from storage.fetch.message_objects import MESSAGE_COLUMNS, message_objects
from storage.messages.attachments import relink_attachments
from storage.messages.message_delete import delete_event
from storage.messages.message_render import render_message
from storage.messages.messages import check_content, user_flags
from storage.messages.submessages import is_widget_message
from storage.model import flags, recipients
from storage.model.channel import Channel, get_channel_by_id
from storage.model.errors import ApiError
from storage.model.message import Destination
from storage.model.user import User
from storage.org import alert_words, groups, realm_settings
from storage.text import linkify

PROPAGATE_MODES = ("change_one", "change_later", "change_all")
# The resolved form of the empty topic, as typed: the general chat cannot be resolved.
RESOLVED_GENERAL_CHAT = {RESOLVED_PREFIX.strip(), RESOLVED_PREFIX + "general chat"}


class EditRequest(msgspec.Struct, kw_only=True):
    """What PATCH /messages/{id} asks for; None: leave as it is."""

    content: str | None = None
    topic: str | None = None
    stream_id: int | None = None
    propagate_mode: str = "change_one"
    send_notification_to_old_thread: bool = False
    send_notification_to_new_thread: bool = True
    # The SHA-256 (hex) of the content the client edited from: a mismatch means someone edited first.
    prev_content_sha256: str | None = None


class Edit(msgspec.Struct, kw_only=True):
    """A validated edit of one message row: the new content, and where it (and others) move."""

    row: Any
    content: str | None
    orig_channel: Channel | None
    target_channel: Channel | None
    orig_topic: str
    target_topic: str
    topic_edited: bool
    stream_edited: bool
    resolve_toggle: bool  # the topic change only adds or removes the resolved prefix
    propagate_mode: str

    @property
    def moved(self) -> bool:
        return self.topic_edited or self.stream_edited


def no_edit_permission() -> ApiError:
    return ApiError("You don't have permission to edit this message")


# -- validation --------------------------------------------------------------------------------


def edited_content(content: str) -> str:
    """Return the content to store; emptying a message leaves "(deleted)" (deleting is its own action)."""
    return check_content(content if content.strip() else "(deleted)")


def is_resolve_toggle(old: str, typed: str, new: str) -> bool:
    """Zulip's test: the new topic is the old one with the prefix added (as typed, before truncation) or removed."""
    resolved = new.startswith(RESOLVED_PREFIX) and not old.startswith(RESOLVED_PREFIX)
    unresolved = old.startswith(RESOLVED_PREFIX) and not new.startswith(RESOLVED_PREFIX)
    return (resolved and typed[len(RESOLVED_PREFIX) :] == old) or (unresolved and old.lstrip(RESOLVED_PREFIX) == new)


def check_payload(
    row: Any, mode: str, content: str | None, typed_topic: str | None, stream_id: int | None, prev_sha256: str | None
) -> None:
    """The checks that need no permissions, in Zulip's order (typed_topic: the changed topic, stripped)."""
    if content is None and typed_topic is None and stream_id is None:
        raise ApiError("Nothing to change")
    if row["channel_id"] is None:
        if stream_id is not None:
            raise ApiError("Direct messages cannot be moved to channels.")
        if typed_topic is not None:
            raise ApiError("Direct messages cannot have topics.")
    if mode != "change_one" and typed_topic is None and stream_id is None:
        raise ApiError("Invalid propagate_mode without topic edit")
    if typed_topic in RESOLVED_GENERAL_CHAT:
        raise ApiError("General chat cannot be marked as resolved")
    if stream_id is not None and content is not None:
        raise ApiError("Cannot change message content while changing channel")
    # Checked for any edit, not only of content, as Zulip does (feature level 379).
    if prev_sha256 is not None and prev_sha256 != hashlib.sha256(row["content"].encode()).hexdigest():
        raise ApiError("'content' value does not match the expected value.", "EXPECTATION_MISMATCH")


def access_target_channel(tx: Tx, actor: User, stream_id: int) -> Channel:
    """Return the channel messages move to; "Invalid channel ID" unless it is active and readable."""
    channel = get_channel_by_id(tx, stream_id)
    if channel is None or channel.is_archived or not has_content_access(tx, actor, channel):
        raise ApiError("Invalid channel ID")
    return channel


def plan_edit(tx: Tx, actor: User, row: Any, request: EditRequest) -> Edit:
    """Return the edit a request makes of a message row; unchanged values count as not given."""
    content = None if request.content is None else edited_content(request.content)
    if content == row["content"]:
        content = None
    typed = None if request.topic is None else request.topic.strip()
    topic = None if typed is None else normalize_topic(typed)
    if topic == row["topic"]:
        typed = topic = None
    stream_id = None if request.stream_id == row["channel_id"] else request.stream_id
    check_payload(row, request.propagate_mode, content, typed, stream_id, request.prev_content_sha256)
    if content is not None and is_widget_message(tx, row["id"]):
        raise ApiError("Widgets cannot be edited.")  # Zulip: a poll's or list's data would no longer match
    orig_channel = message_channel(tx, row)
    target_channel = orig_channel if stream_id is None else access_target_channel(tx, actor, stream_id)
    edit = Edit(
        row=row, content=content, orig_channel=orig_channel, target_channel=target_channel,
        orig_topic=row["topic"], target_topic=row["topic"] if topic is None else topic,
        topic_edited=topic is not None, stream_edited=stream_id is not None,
        resolve_toggle=typed is not None and topic is not None and is_resolve_toggle(row["topic"], typed, topic),
        propagate_mode=request.propagate_mode,
    )  # fmt: skip
    if edit.moved:
        assert target_channel is not None
        check_topic_allowed(tx, target_channel, edit.target_topic)
    return edit


# -- permissions -------------------------------------------------------------------------------


def _channels(edit: Edit) -> list[Channel]:
    assert edit.orig_channel is not None and edit.target_channel is not None
    return [edit.orig_channel] + ([edit.target_channel] if edit.stream_edited else [])


def can_move_within_channel(tx: Tx, actor: User, edit: Edit) -> bool:
    """Whether the actor may change the message's topic (not only resolving it)."""
    if actor.id == edit.row["sender_id"] or actor.is_moderator:
        return True
    return any(
        can_administer(tx, actor, channel)
        or groups.is_member(tx, actor.id, channel.can_move_messages_within_channel_group)
        for channel in _channels(edit)
    )


def can_resolve_topic(tx: Tx, actor: User, edit: Edit) -> bool:
    """Whether the actor may add or remove the resolved prefix of the message's topic."""
    if actor.id == edit.row["sender_id"] or actor.is_moderator:
        return True
    return any(groups.is_member(tx, actor.id, channel.can_resolve_topics_group) for channel in _channels(edit))


def can_move_out_of_channel(tx: Tx, actor: User, channel: Channel) -> bool:
    """Whether the actor may move messages from this channel to another."""
    if actor.is_moderator or can_administer(tx, actor, channel):
        return True
    return groups.is_member(tx, actor.id, channel.can_move_messages_out_of_channel_group)


def check_edit_permissions(tx: Tx, actor: User, edit: Edit) -> None:
    """Raise the API's error unless the actor may make this topic or channel change (content: see caller)."""
    if edit.topic_edited:
        if edit.resolve_toggle and not can_resolve_topic(tx, actor, edit):
            raise ApiError("You don't have permission to resolve topics in this channel.")
        if not edit.resolve_toggle and not can_move_within_channel(tx, actor, edit):
            raise no_edit_permission()
    target = edit.target_channel
    if edit.stream_edited:
        assert edit.orig_channel is not None and target is not None
        if not can_move_out_of_channel(tx, actor, edit.orig_channel):
            raise ApiError("You don't have permission to move this message")
        if not groups.is_member(tx, actor.id, target.can_send_message_group):
            raise ApiError("You do not have permission to post in this channel.")
    if edit.moved:
        assert target is not None
        recipient_id = recipients.get_recipient(tx, recipients.CHANNEL, target.id)
        if not topic_exists(tx, recipient_id, edit.target_topic) and not groups.is_member(
            tx, actor.id, target.can_create_topic_group
        ):
            raise ApiError("You do not have permission to create new topics in this channel.")


# -- applying ----------------------------------------------------------------------------------


def update_message(tx: Tx, actor: User, message_id: int, request: EditRequest) -> dict[str, Any]:
    """Edit a message's content, topic or channel; return the response data (raise the API's errors)."""
    if request.propagate_mode not in PROPAGATE_MODES:
        raise ApiError("Invalid propagate_mode")
    row, _ = access_message(tx, actor, message_id)
    if request.content is not None:
        realm_settings.check_content_edit(tx, actor, row)  # editing allowed, the sender's, within the limit
    edit = plan_edit(tx, actor, row, request)
    check_edit_permissions(tx, actor, edit)
    realm_settings.check_move_limits(tx, actor, row, edit.topic_edited and not edit.resolve_toggle, edit.stream_edited)
    viewers_before = message_viewers(tx, row, edit.orig_channel)
    event = base_event(tx, actor, edit)
    entry: dict[str, Any] = {"user_id": actor.id, "timestamp": tx.timestamp}
    detached_uploads: list[dict[str, Any]] = []
    if edit.content is not None:
        edit_content(tx, actor, edit, entry, event)
        detached_uploads = relink_attachments(tx, actor, message_id)
    if edit.moved:
        event["message_ids"] = move_messages(tx, actor, edit, entry)
    else:
        write_history(tx, message_id, entry)
        event["message_ids"] = [message_id]
    publish_update(tx, edit, event, viewers_before)
    return {"detached_uploads": detached_uploads}


def base_event(tx: Tx, actor: User, edit: Edit) -> dict[str, Any]:
    """Return the update_message event's fields that describe where the message was and goes."""
    event: dict[str, Any] = {
        "type": "update_message", "user_id": actor.id, "edit_timestamp": tx.timestamp,
        "message_id": edit.row["id"], "rendering_only": False,
    }  # fmt: skip
    if edit.orig_channel is not None:
        event.update(stream_name=edit.orig_channel.name, stream_id=edit.orig_channel.id)
    if edit.moved:
        event["propagate_mode"] = edit.propagate_mode
    if edit.stream_edited:
        assert edit.target_channel is not None
        event.update(new_stream_id=edit.target_channel.id, orig_subject=edit.orig_topic)
    if edit.topic_edited:
        topic_links = linkify.topic_links(linkify.current(tx), edit.target_topic)
        event.update(orig_subject=edit.orig_topic, subject=edit.target_topic, topic_links=topic_links)
    return event


def edit_content(tx: Tx, actor: User, edit: Edit, entry: dict[str, Any], event: dict[str, Any]) -> None:
    """Store and re-render the new content, recompute mention flags, fill the history entry and event."""
    row, content = edit.row, edit.content
    assert content is not None
    rendered = render_message(tx, content, actor)
    tx.execute(
        "UPDATE messages SET content = ?, rendered_content = ?, is_me_message = ?, has_link = ?, has_image = ?,"
        " has_attachment = ?, last_edit_timestamp = ? WHERE id = ?",
        (content, rendered.html, rendered.is_me_message, rendered.has_link, rendered.has_image,
         rendered.has_attachment, tx.timestamp, row["id"]),
    )  # fmt: skip
    entry.update(prev_content=row["content"], prev_rendered_content=row["rendered_content"])
    event.update(
        orig_content=row["content"], orig_rendered_content=row["rendered_content"], content=content,
        rendered_content=rendered.html, is_me_message=rendered.is_me_message,
    )  # fmt: skip
    rows = tx.all("SELECT user_id, flags FROM user_messages WHERE message_id = ?", (row["id"],))
    current: dict[int, int] = {user_id: bits for user_id, bits in rows}
    destination = Destination(row["recipient_id"], edit.orig_channel, edit.target_topic, sorted(current))
    # The same mention rules as sending; other flags (read, starred, ...) are the users' own.
    computed = user_flags(tx, actor, destination, rendered, False)
    alert_words.flag_alert_words(tx, row["sender_id"], content, computed)  # Zulip re-matches them on edit
    recomputed = flags.ANY_MENTION | flags.HAS_ALERT_WORD
    changed = [
        ((bits & ~recomputed) | (computed[user_id] & recomputed), user_id, row["id"])
        for user_id, bits in current.items()
    ]
    tx.executemany("UPDATE user_messages SET flags = ? WHERE user_id = ? AND message_id = ?", changed)


def ids_to_move(tx: Tx, actor: User, edit: Edit) -> list[int]:
    """Return the ids of the messages a move takes along, by propagate_mode, sorted."""
    message_id = edit.row["id"]
    if edit.propagate_mode == "change_one":
        return [message_id]
    floor = message_id if edit.propagate_mode == "change_later" else 0
    # Topics compare case-insensitively, beyond ASCII too (topic_key): one range of messages_by_topic.
    ids = tx.column(
        "SELECT id FROM messages WHERE recipient_id = ? AND topic_key = ? AND id >= ? ORDER BY id",
        (edit.row["recipient_id"], topic_key(edit.orig_topic), floor),
    )
    channel = edit.orig_channel
    assert channel is not None
    if edit.stream_edited and not (channel.history_public_to_subscribers and has_content_access(tx, actor, channel)):
        # To another channel, only what the actor may read goes: a move must not reveal protected history.
        own = set(
            tx.column(
                "SELECT message_id FROM user_messages WHERE user_id = ?"
                " AND message_id IN (SELECT value FROM json_each(?))",
                (actor.id, json.dumps(ids)),
            )
        )
        ids = [i for i in ids if i in own or i == message_id]
    return ids


def move_messages(tx: Tx, actor: User, edit: Edit, entry: dict[str, Any]) -> list[int]:
    """Move the message (and others, by propagate_mode); write every edit history; return the moved ids."""
    target = edit.target_channel
    assert target is not None
    ids = ids_to_move(tx, actor, edit)
    moves: dict[str, Any] = {"user_id": entry["user_id"], "timestamp": entry["timestamp"]}
    if edit.stream_edited:
        assert edit.orig_channel is not None
        moves.update(prev_stream=edit.orig_channel.id, stream=target.id)
    if edit.topic_edited:
        moves.update(prev_topic=edit.orig_topic, topic=edit.target_topic)
    entry.update(moves)
    recipient_id = recipients.get_or_create_recipient(tx, recipients.CHANNEL, target.id)
    # Resolving or unresolving a topic is not a move (last_moved_timestamp stays).
    moved_at = None if edit.resolve_toggle and not edit.stream_edited else tx.timestamp
    histories = tx.all(
        "SELECT id, edit_history FROM messages WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)
    )
    tx.executemany(
        "UPDATE messages SET recipient_id = ?, channel_id = ?, topic = COALESCE(?, topic),"
        " topic_key = COALESCE(?, topic_key), edit_history = ?,"
        " last_moved_timestamp = COALESCE(?, last_moved_timestamp) WHERE id = ?",
        [
            (
                recipient_id,
                target.id,
                edit.target_topic if edit.topic_edited else None,
                topic_key(edit.target_topic) if edit.topic_edited else None,
                _prepend(h["edit_history"], entry if h["id"] == edit.row["id"] else moves),
                moved_at,
                h["id"],
            )
            for h in histories
        ],
    )
    if edit.stream_edited:
        move_user_messages(tx, target, ids)
    move_user_topics(tx, edit)
    return ids


def _prepend(history: str | None, entry: dict[str, Any]) -> str:
    return json.dumps([entry, *(json.loads(history) if history else [])])


def write_history(tx: Tx, message_id: int, entry: dict[str, Any]) -> None:
    """Add an entry at the head of a message's edit history (newest first)."""
    history = tx.value("SELECT edit_history FROM messages WHERE id = ?", (message_id,))
    tx.execute("UPDATE messages SET edit_history = ? WHERE id = ?", (_prepend(history, entry), message_id))


def move_user_messages(tx: Tx, target: Channel, message_ids: list[int]) -> None:
    """Per-user rows after a move to another channel: rows of users who cannot read it go, subscribers gain one."""
    ids = json.dumps(message_ids)
    holders = set(
        tx.column(
            "SELECT DISTINCT user_id FROM user_messages WHERE message_id IN (SELECT value FROM json_each(?))", (ids,)
        )
    )
    lost = sorted(holders - content_access_ids(tx, target, holders))
    tx.execute(
        "DELETE FROM user_messages WHERE user_id IN (SELECT value FROM json_each(?))"
        " AND message_id IN (SELECT value FROM json_each(?))",
        (json.dumps(lost), ids),
    )
    # Subscribers of the target get the moved messages as if they had received them, already read.
    subscribers = tx.column("SELECT user_id FROM subscriptions WHERE channel_id = ? AND active", (target.id,))
    tx.executemany(
        "INSERT OR IGNORE INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)",
        [(user_id, message_id, flags.READ) for user_id in subscribers for message_id in message_ids],
    )


def move_user_topics(tx: Tx, edit: Edit) -> None:
    """When a whole topic moves, its users' visibility policies (muted, followed...) move with it."""
    orig, target, now = edit.orig_channel, edit.target_channel, tx.timestamp
    assert orig is not None and target is not None
    if edit.propagate_mode != "change_all" and topic_exists(tx, edit.row["recipient_id"], edit.orig_topic):
        return
    key = (orig.id, topic_key(edit.orig_topic))
    rows = tx.all("SELECT user_id, visibility_policy FROM user_topics WHERE channel_id = ? AND topic_key = ?", key)
    tx.execute("DELETE FROM user_topics WHERE channel_id = ? AND topic_key = ?", key)
    # Users who cannot read the target lose the setting, as if the topic had been deleted.
    readers = content_access_ids(tx, target, {row["user_id"] for row in rows})
    for user_id, policy in rows:
        tx.publish(user_topic_event(orig.id, edit.orig_topic, 0, now), [user_id])
        if user_id not in readers:
            continue
        existing = tx.value(
            "SELECT visibility_policy FROM user_topics WHERE user_id = ? AND channel_id = ? AND topic_key = ?",
            (user_id, target.id, topic_key(edit.target_topic)),
        )
        # Merging into an existing setting, the more visible wins: followed (3), unmuted (2), muted (1).
        policy = max(policy, existing or 0)
        tx.execute(
            "INSERT OR REPLACE INTO user_topics (user_id, channel_id, topic, topic_key, visibility_policy,"
            " last_updated) VALUES (?, ?, ?, ?, ?, ?)",
            (user_id, target.id, edit.target_topic, topic_key(edit.target_topic), policy, now),
        )
        tx.publish(user_topic_event(target.id, edit.target_topic, policy, now), [user_id])


def publish_update(tx: Tx, edit: Edit, event: dict[str, Any], viewers_before: dict[int, int | None]) -> None:
    """Publish update_message to who sees the message now, with their flags; delete_message to who lost it."""
    viewers = message_viewers(tx, edit.row, edit.target_channel)
    if edit.stream_edited:
        target = edit.target_channel
        assert target is not None
        if target.history_public_to_subscribers:
            for user_id in content_access_ids(tx, target, set(viewers_before)):
                viewers.setdefault(user_id, None)
        lost = set(viewers_before) - set(viewers)
        if lost:
            tx.publish(delete_event(event["message_ids"], edit.orig_channel, edit.orig_topic), lost)
    by_flags: dict[tuple[str, ...], list[int]] = {}
    for user_id, bits in viewers.items():
        # Users without a row read the channel's shared history: Zulip tells them ["read"].
        names = ("read",) if bits is None else tuple(flags.flag_names(bits))
        by_flags.setdefault(names, []).append(user_id)
    for names, user_ids in sorted(by_flags.items()):
        tx.publish({**event, "flags": list(names)}, user_ids)


# -- one message -------------------------------------------------------------------------------


def get_message(
    tx: Tx, user: User, message_id: int, apply_markdown: bool, allow_empty_topic_name: bool
) -> dict[str, Any]:
    """Return GET /messages/{id}'s data: the message with the user's flags, and its Markdown source."""
    _, bits = access_message(tx, user, message_id, allow_archived=True)
    row = tx.one(f"SELECT {MESSAGE_COLUMNS} FROM messages AS m WHERE m.id = ?", (message_id,))
    assert row is not None
    [message] = message_objects(
        tx, [{**dict(row), "flags": bits}], apply_markdown=apply_markdown,
        allow_empty_topic_name=allow_empty_topic_name,
    )  # fmt: skip
    return {"message": message, "raw_content": row["content"]}
