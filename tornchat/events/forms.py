"""What one queue receives of a published event: its form (content, avatars, topics, flags) and narrow.

A published event reaches many queues, most of which want it in the same form. A `Fanout` builds
each form once per publish, with its size, and every queue wanting that form holds the same body
(tornchat/events/body.py): 1,000 subscribers of a channel hold one copy of a message, not 1,000
(and the saved-queues file writes it once). Bodies are never changed once queued; a queue that
needs another form replaces its reference.
"""

from __future__ import annotations

from typing import Any

import msgspec

from storage.channels.topics import RESOLVED_PREFIX, stored_topic
from storage.messages.messages import LOCAL, RAW_CONTENT, SENDER_INFO
from storage.model.realm import EMPTY_TOPIC_DISPLAY_NAME
from storage.org.presence import presence_event_form
from storage.org.users import VISIBLE_TO_ROLE
from tornchat.events.body import Body, prepared
from tornchat.events.queue import EventQueue

# Private keys a message event carries for per-queue formatting, never sent to clients; defined
# next to the code that publishes them (RAW_CONTENT: the Markdown source; SENDER_INFO: {user_id,
# visibility, is_bot, gravatar}; LOCAL: {queue_id, local_id} of the sending client; PUBLIC_CHANNEL:
# true for a message in a public channel, the only ones all_public_streams queues may see).
# USER_FLAGS ({user_id: [flag names]}) lets one event carry every recipient's flags instead of one
# event per distinct flag set.
USER_FLAGS = "_user_flags"

_encode = msgspec.json.Encoder().encode


# Events that name topics, and the fields naming them. The empty topic goes under its display name to
# clients without the empty_topic_name capability, as every topic Zulip sends (a move's old and new
# topic in update_message, a deleted message's in delete_message: Zulip's event_queue.py).
TOPIC_FIELDS = {
    "typing": ("topic",), "user_topic": ("topic_name",), "update_message": ("orig_subject", "subject"),
    "delete_message": ("topic",),
}  # fmt: skip


def names_empty_topic(event: dict[str, Any]) -> bool:
    """Whether the event names the empty topic in one of its TOPIC_FIELDS."""
    return any(event.get(field) == "" for field in TOPIC_FIELDS.get(event["type"], ()))


def empty_topic_form(body: dict[str, Any], fields: tuple[str, ...], empty_topic_name: bool) -> dict[str, Any]:
    """The event as a queue receives it: its empty topics renamed unless the client asked for ""."""
    if empty_topic_name:
        return body
    return {**body, **{field: EMPTY_TOPIC_DISPLAY_NAME for field in fields if body.get(field) == ""}}


class Fanout:
    """One published event on its way to many queues: each of its forms built, encoded and sized once."""

    __slots__ = ("event", "plain", "messages", "forms")

    def __init__(self, event: dict[str, Any]) -> None:
        self.event = event
        self.plain = {k: v for k, v in event.items() if not k.startswith("_")}
        # A message's forms (by message_form) and their JSON, shared by the bodies of every flag set.
        self.messages: dict[tuple[bool, bool, bool], tuple[dict[str, Any], msgspec.Raw]] = {}
        self.forms: dict[Any, tuple[Body, int]] = {}

    def form(self, queue: EventQueue, flags: list[str] | None = None) -> tuple[Body, int]:
        """The body (without an id) and size of the event for this queue; flags for message events."""
        key: Any = None
        if self.event["type"] == "message":
            local = self.event.get(LOCAL)
            own = local is not None and local.get("queue_id") == queue.id
            key = (message_form(queue, self.event), tuple(flags or ()), own)
        elif self.event["type"] == "presence":
            key = ("presence", queue.simplified_presence_events, queue.slim_presence)
        elif names_empty_topic(self.event):
            key = ("empty_topic", queue.empty_topic_name)
        found = self.forms.get(key)
        if found is None:
            if key is None:
                found = prepared(self.plain)
            elif key[0] == "presence":
                found = prepared(presence_event_form(self.event, key[1], key[2]))
            elif key[0] == "empty_topic":
                found = prepared(empty_topic_form(self.plain, TOPIC_FIELDS[self.event["type"]], key[1]))
            else:
                found = self._message_body(*key)
            self.forms[key] = found
        return found

    def _message_body(self, variant: tuple[bool, bool, bool], flags: tuple[str, ...], own: bool) -> tuple[Body, int]:
        cached = self.messages.get(variant)
        if cached is None:
            message = _format_message(self.event, *variant)
            cached = self.messages[variant] = (message, msgspec.Raw(_encode(message)))
        body = dict(self.plain)
        body["message"] = cached[0]
        if own:
            body["local_message_id"] = self.event[LOCAL].get("local_id")
        body["flags"] = list(flags)
        # The message's JSON is spliced in as it is: encoded once per form, not once per flag set.
        return prepared(body, _encode({**body, "message": cached[1]}))


def message_form(queue: EventQueue, event: dict[str, Any]) -> tuple[bool, bool, bool]:
    """How this queue wants a message: (Markdown source, avatar left to the client, empty topic renamed)."""
    message = event["message"]
    raw = not queue.apply_markdown and RAW_CONTENT in event
    sender = event.get(SENDER_INFO)
    gravatar = queue.client_gravatar and sender is not None and sender["gravatar"] and _sees_email(queue, sender)
    renamed = message.get("type") == "stream" and message.get("subject") == "" and not queue.empty_topic_name
    return raw, bool(gravatar), renamed


def _format_message(event: dict[str, Any], raw: bool, gravatar: bool, renamed: bool) -> dict[str, Any]:
    message = dict(event["message"])
    if raw:
        message["content"], message["content_type"] = event[RAW_CONTENT], "text/x-markdown"
    if gravatar:
        message["avatar_url"] = None
    if renamed:
        message["subject"] = EMPTY_TOPIC_DISPLAY_NAME
    return message


def _sees_email(queue: EventQueue, sender: dict[str, Any]) -> bool:
    own = sender["user_id"] == queue.user_id
    return own or sender["is_bot"] or sender["visibility"] in VISIBLE_TO_ROLE[queue.role]


def format_for(queue: EventQueue, event: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of the event as this queue receives it as a recipient (content form, avatars, topics)."""
    flags = flags_for(queue, event, True) if event["type"] == "message" else None
    return dict(Fanout(event).form(queue, flags)[0])


def flags_for(queue: EventQueue, event: dict[str, Any], recipient: bool) -> list[str]:
    """The queue's user's flags for a message event: [] for a public-channel onlooker."""
    if not recipient:
        return []
    per_user = event.get(USER_FLAGS)
    if per_user is not None:
        return list(per_user.get(queue.user_id, []))
    return list(event.get("flags", []))


# -- narrows ------------------------------------------------------------------------------------


def matches_narrow(queue: EventQueue, message: dict[str, Any], flags: list[str]) -> bool:
    """Whether a message matches a queue's narrow ([operator, operand] pairs, all must hold)."""
    return all(_term_matches(queue, operator, operand, message, flags) for operator, operand in queue.narrow)


MENTION_FLAGS = {"mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned", "group_mentioned"}


def _term_matches(queue: EventQueue, operator: str, operand: str, message: dict[str, Any], flags: list[str]) -> bool:
    is_channel = message["type"] == "stream"
    if operator in ("channel", "stream"):
        named = str(message["display_recipient"]).lower() == operand.lower()
        return is_channel and (named or operand == str(message.get("stream_id")))
    if operator == "topic":
        return is_channel and message["subject"].lower() == stored_topic(operand).lower()
    if operator == "sender":
        return operand.lower() == message["sender_email"].lower() or operand == str(message["sender_id"])
    if operator in ("dm", "pm-with", "pm_with"):
        return not is_channel and _same_conversation(queue.user_id, operand, message["display_recipient"])
    if operator == "is":
        return _is_matches(operand, message, flags)
    return True  # only the operators above pass check_narrow


def _same_conversation(viewer_id: int, operand: str, participants: list[dict[str, Any]]) -> bool:
    """Whether the DM's participants are exactly the operand's users (emails or ids) and the viewer."""
    by_key = {str(p["id"]): p["id"] for p in participants} | {p["email"].lower(): p["id"] for p in participants}
    wanted = {by_key.get(token.strip().lower()) for token in operand.split(",") if token.strip()}
    return None not in wanted and wanted | {viewer_id} == {p["id"] for p in participants}


def _is_matches(operand: str, message: dict[str, Any], flags: list[str]) -> bool:
    if operand in ("dm", "private"):
        return message["type"] != "stream"
    if operand == "unread":
        return "read" not in flags
    if operand == "starred":
        return "starred" in flags
    if operand in ("mentioned", "alerted"):
        return bool(MENTION_FLAGS.intersection(flags)) or (operand == "alerted" and "has_alert_word" in flags)
    if operand == "resolved":
        return message["type"] == "stream" and message["subject"].startswith(RESOLVED_PREFIX)
    return True  # like Zulip's event narrows, other `is` operands do not filter
