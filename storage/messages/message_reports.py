"""Message reports: POST /messages/{message_id}/report, delivered to the realm's moderators.

As Zulip does (zerver/views/message_report.py, zerver/lib/message_report.py), a report is a message
from the notification bot to the realm's moderation request channel (a private channel an
administrator picks through PATCH /realm; none, the default, turns reporting off), in the topic
"<reported user's name> moderation" (the empty topic in a channel whose topics_policy allows only
it). It names the reporter and the reported user with silent mentions, says where and when the
message was sent, quotes the reason and the reporter's description, and holds the reported
message's Markdown (cut to leave room for the rest) in a spoiler block whose fence the message
cannot close. Anyone who may read a message may report it, their own included.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from storage.cache.directory import directory
from storage.channels.channels import subscriber_ids
from storage.db.tx import Tx
from storage.fetch.message_access import access_message
from storage.messages.messages import store_message
from storage.messages.system_bots import notification_bot
from storage.model import recipients
from storage.model.channel import Channel, get_channel_by_id
from storage.model.errors import ApiError
from storage.model.message import Destination
from storage.model.realm import MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH, get_realm
from storage.model.user import User
from storage.org.users import get_user_by_id

# Zulip's report types and the reasons a report shows (Realm.REPORT_MESSAGE_REASONS), in its order.
REPORT_TYPES = {
    "spam": "Spam",
    "harassment": "Harassment",
    "inappropriate": "Inappropriate content",
    "norms": "Violates community norms",
    "other": "Other reason",
}
MAX_DESCRIPTION_LENGTH = 1000  # Zulip's MAX_REPORT_MESSAGE_EXPLANATION_LENGTH
# Zulip's room for the reported message: the description and 500 characters of text around it fit.
MAX_SNIPPET_LENGTH = MAX_MESSAGE_LENGTH - MAX_DESCRIPTION_LENGTH - 500
TRUNCATED = "\n[message truncated]"
EMPTY_TOPIC_ONLY = "empty_topic_only"
_FENCE = re.compile(r"^[ \t]*(`{3,})", re.MULTILINE)


def report_types() -> list[dict[str, str]]:
    """POST /register's server_report_message_types: each type's key and the name clients show."""
    return [{"key": key, "name": name} for key, name in REPORT_TYPES.items()]


def silent_mention(user: User) -> str:
    return f"@_**{user.full_name}|{user.id}**"


def unused_fence(content: str) -> str:
    """A backtick fence longer than any fence in the content (three at least), so the content cannot close it."""
    longest = max((len(run) for run in _FENCE.findall(content)), default=2)
    return "`" * max(3, longest + 1)


def truncated(content: str) -> str:
    if len(content) <= MAX_SNIPPET_LENGTH:
        return content
    return content[: MAX_SNIPPET_LENGTH - len(TRUNCATED)] + TRUNCATED


def global_time(timestamp: int) -> str:
    """Zulip's <time:...> syntax: every reader sees the moment in their own time zone."""
    return f"<time:{datetime.datetime.fromtimestamp(timestamp, datetime.UTC).isoformat()}>"


def moderation_channel(tx: Tx) -> Channel | None:
    """The realm's moderation request channel, or None when reporting is off (or its channel archived)."""
    channel_id = tx.value("SELECT moderation_request_channel_id FROM realm")
    channel = None if channel_id is None else get_channel_by_id(tx, channel_id)
    return None if channel is None or channel.is_archived else channel


def _header(tx: Tx, reporter: User, sender: User, row: Any) -> str:
    """The report's first sentence: who reported whose message, where and when."""
    who = f"{silent_mention(reporter)} reported a"
    sent = f"sent by {silent_mention(sender)}"
    when = f"at {global_time(row['date_sent'])}."
    if row["channel_id"] is not None:
        return f"{who} message {sent} {when}"
    members = directory(tx).members(row["recipient_id"])
    if len(members) <= 2:
        if sender.id != reporter.id:
            return f"{who} direct message {sent} {when}"
        # Reporting one's own direct message: name whom it went to (oneself, in a note to self).
        others = [user_id for user_id in members if user_id != reporter.id] or [reporter.id]
        receiver = get_user_by_id(tx, others[0])
        assert receiver is not None
        return f"{who} direct message {sent} to {silent_mention(receiver)} {when}"
    names = []
    for user_id in members:
        if user_id != sender.id:
            user = get_user_by_id(tx, user_id)
            assert user is not None
            names.append(silent_mention(user))
    names.sort()
    last = names.pop()
    listed = ", ".join(names) + ("," if len(names) > 1 else "")
    return f"{who} direct message {sent} to {listed} and {last} {when}"


def _original_link(tx: Tx, row: Any) -> str:
    if row["channel_id"] is not None:
        channel = get_channel_by_id(tx, row["channel_id"])
        assert channel is not None
        return f"Original message at #**{channel.name}>{row['topic']}@{row['id']}**"
    members = directory(tx).members(row["recipient_id"])
    slug = ",".join(str(user_id) for user_id in sorted(members)) + ("-group" if len(members) >= 3 else "")
    return f"[Original message]({get_realm(tx).url}/#narrow/dm/{slug}/near/{row['id']})"


def report_content(tx: Tx, reporter: User, row: Any, report_type: str, description: str) -> str:
    """The report message's Markdown (Zulip's layout)."""
    sender = get_user_by_id(tx, row["sender_id"])
    assert sender is not None
    snippet = truncated(row["content"])
    fence = unused_fence(snippet)
    return (
        f"{_header(tx, reporter, sender, row)}\n"
        f"```quote\n**{REPORT_TYPES[report_type]}**. {description}\n```\n\n"
        f"{fence} spoiler {_original_link(tx, row)}\n{snippet}\n{fence}\n"
    )


def report_message(tx: Tx, reporter: User, message_id: int, report_type: str, description: str) -> int:
    """POST /messages/{id}/report: send the report to the moderation request channel; return its id.

    Raises, in Zulip's order: an unknown report_type, "An explanation is required." (type "other"
    without a description), "Message reporting is not enabled in this organization.", and
    "Invalid message(s)" for a message the reporter may not read.
    """
    if report_type not in REPORT_TYPES:
        raise ApiError("Invalid report_type: Value error, Not in the list of possible values")
    if report_type == "other" and description == "":
        raise ApiError("An explanation is required.")
    channel = moderation_channel(tx)
    if channel is None:
        raise ApiError("Message reporting is not enabled in this organization.")
    row, _ = access_message(tx, reporter, message_id)
    content = report_content(tx, reporter, row, report_type, description)
    sender = get_user_by_id(tx, row["sender_id"])
    assert sender is not None
    topic = "" if channel.topics_policy == EMPTY_TOPIC_ONLY else f"{sender.full_name} moderation"
    if len(topic) > MAX_TOPIC_LENGTH:  # a long name: cut as Zulip cuts the topics of internal messages
        topic = topic[: MAX_TOPIC_LENGTH - 3] + "..."
    bot = notification_bot(tx)
    # The server speaks: no sending policy applies to the bot, as for Zulip's internal messages.
    recipient_id = recipients.get_or_create_recipient(tx, recipients.CHANNEL, channel.id)
    receivers = sorted(set(subscriber_ids(tx, channel.id)) | {bot.id})
    destination = Destination(recipient_id, channel, topic, receivers)
    return store_message(tx, bot, destination, content, "Internal", False)
