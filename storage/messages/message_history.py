"""A message's edit history as GET /messages/{message_id}/history shows it, and the HTML diff of each edit.

messages.edit_history keeps what each edit changed, newest first (storage/messages/message_edit.py):
user_id, timestamp, and prev_content/prev_rendered_content, prev_topic/topic, prev_stream/stream as
they apply. The endpoint turns that into snapshots, oldest first: the message as it was after each
edit (and as sent), with what the edit replaced, as Zulip's fill_edit_history_entries does.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from storage.channels.topics import display_topic
from storage.db.tx import Tx
from storage.fetch.message_access import access_message
from storage.model.errors import ApiError
from storage.model.user import User
from storage.org.realm_settings import get_realm_settings

# Tags, runs of text without spaces, and runs of spaces: the units a diff compares.
_TOKEN = re.compile(r"<[^>]*>|[^<\s]+|\s+")
INSERTED, DELETED = "highlight_text_inserted", "highlight_text_deleted"


def message_history(tx: Tx, user: User, message_id: int, allow_empty_topic_name: bool) -> list[dict[str, Any]]:
    """GET /messages/{id}/history: snapshots oldest first (the message as sent, then after each edit).

    Raises "Invalid message(s)" for a message the user may not read, and refuses every message while
    the realm hides edit history (checked first, as Zulip does).
    """
    if not get_realm_settings(tx).allow_edit_history:
        raise ApiError("Message edit history is disabled in this organization")
    row, _ = access_message(tx, user, message_id, allow_archived=True)
    raw: list[dict[str, Any]] = json.loads(row["edit_history"]) if row["edit_history"] else []
    content, rendered, topic = row["content"], row["rendered_content"], row["topic"]
    snapshots: list[dict[str, Any]] = []
    for edit in raw:  # newest first: walk back from the current state
        snapshot = _snapshot(content, rendered, edit["timestamp"], topic, edit["user_id"])
        if "prev_topic" in edit:
            topic = snapshot["prev_topic"] = edit["prev_topic"]
        if "prev_content" in edit:
            content = snapshot["prev_content"] = edit["prev_content"]
            rendered = snapshot["prev_rendered_content"] = edit["prev_rendered_content"]
            snapshot["content_html_diff"] = highlight_html_differences(rendered, snapshot["rendered_content"])
        if "prev_stream" in edit:
            snapshot["prev_stream"], snapshot["stream"] = edit["prev_stream"], edit["stream"]
        snapshots.append(snapshot)
    snapshots.append(_snapshot(content, rendered, row["date_sent"], topic, row["sender_id"]))
    if row["channel_id"] is not None:
        for snapshot in snapshots:
            for key in ("topic", "prev_topic"):
                if key in snapshot:
                    snapshot[key] = display_topic(snapshot[key], allow_empty_topic_name)
    snapshots.reverse()
    return snapshots


def _snapshot(content: str, rendered: str, timestamp: int, topic: str, user_id: int) -> dict[str, Any]:
    """The keys every snapshot has: the message after an edit (or as sent), and who made it when."""
    return {
        "content": content,
        "rendered_content": rendered,
        "timestamp": timestamp,
        "topic": topic,
        "user_id": user_id,
    }


def highlight_html_differences(before: str, after: str) -> str:
    """Return `after` (rendered HTML) with the words it added and the words `before` had and it lost marked.

    The markup is Zulip's: <span class="highlight_text_inserted"> and <span class="highlight_text_deleted">,
    the whole in a <div>. Every tag comes from `after`, so the result is as well-formed as it is; deleted
    text (never tags) is placed where it was lost. Both sides are rendered HTML: text is already escaped.
    """
    old, new = _TOKEN.findall(before), _TOKEN.findall(after)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        if op == "equal":
            out.extend(new[new_start:new_end])
            continue
        if op in ("delete", "replace"):
            _mark(out, old[old_start:old_end], DELETED, keep_tags=False)
        if op in ("insert", "replace"):
            _mark(out, new[new_start:new_end], INSERTED, keep_tags=True)
    return "<div>" + "".join(out) + "</div>"


def _mark(out: list[str], tokens: list[str], css_class: str, keep_tags: bool) -> None:
    """Append runs of text wrapped in a span of css_class; tags as they are (keep_tags) or dropped."""
    run: list[str] = []
    for token in [*tokens, ""]:
        if token == "" or token.startswith("<"):
            if "".join(run).strip():
                out.append(f'<span class="{css_class}">{"".join(run)}</span>')
            elif run:
                out.extend(run)
            run = []
            if token and keep_tags:
                out.append(token)
        else:
            run.append(token)
