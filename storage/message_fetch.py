"""GET /messages: anchors, ranges and message_ids over a narrow (spec 4.5, api-notes 4.2)."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from storage.channels import get_channel_by_id, has_content_access
from storage.db import Tx
from storage.errors import ApiError, missing_argument
from storage.message_objects import MESSAGE_COLUMNS, message_objects
from storage.narrow import (
    CHANNEL_OPERATORS,
    DM_OPERATORS,
    Query,
    Term,
    anchor_for_date,
    build_query,
    find_ids,
    first_unread,
    parse_narrow,
)
from storage.search_highlight import highlight_content, highlight_topic
from storage.users import User

# The `newest` anchor, returned as it is (a number above any message id).
LARGER_THAN_MAX_MESSAGE_ID = 10000000000000000
MAX_MESSAGES_PER_FETCH = 5000
UNSUPPORTED_COMBINATION = (
    "Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor,"
    " use_first_unread_anchor"
)


class FetchRequest(msgspec.Struct, kw_only=True):
    anchor: str | None = None
    anchor_date: str | None = None
    include_anchor: bool | None = None  # None: not given (default true)
    num_before: int | None = None
    num_after: int | None = None
    narrow: Any = None
    message_ids: list[int] | None = None
    use_first_unread_anchor: bool = False
    apply_markdown: bool = True
    client_gravatar: bool = True
    allow_empty_topic_name: bool = False


def check_request(request: FetchRequest) -> None:
    """The checks of api-notes 4.1 that need no database, in their order."""
    if request.message_ids is not None:
        if (
            request.num_before is not None
            or request.num_after is not None
            or request.anchor is not None
            or request.include_anchor is not None
            or request.use_first_unread_anchor
        ):
            raise ApiError(UNSUPPORTED_COMBINATION)
        if len(request.message_ids) > MAX_MESSAGES_PER_FETCH:
            raise ApiError(f"Too many messages requested (maximum {MAX_MESSAGES_PER_FETCH}).")
        return
    if request.anchor is None and not request.use_first_unread_anchor:
        raise ApiError("Missing 'anchor' argument.")
    for name in ("num_before", "num_after"):
        if getattr(request, name) is None:
            raise missing_argument(name)
    assert request.num_before is not None and request.num_after is not None
    if request.num_before + request.num_after > MAX_MESSAGES_PER_FETCH:
        raise ApiError(f"Too many messages requested (maximum {MAX_MESSAGES_PER_FETCH}).")
    include_anchor = request.include_anchor is not False
    if request.num_before > 0 and request.num_after > 0 and not include_anchor:
        raise ApiError("The anchor can only be excluded at an end of the range")


def rewrite_with(tx: Tx, user: User, terms: list[Term]) -> list[Term]:
    """Replace `with:<id>` by the channel and topic (or conversation) of that message."""
    with_term = next((t for t in terms if t.operator == "with"), None)
    if with_term is None:
        return terms
    rest = [t for t in terms if t.operator != "with"]
    text = str(with_term.operand)
    row = (
        tx.one("SELECT channel_id, topic, recipient_id FROM messages WHERE id = ?", (int(text),))
        if text.isdigit() and int(text) < 2**63
        else None
    )
    visible = row is not None and _can_read(tx, user, row, int(text))
    if not visible:
        conversation = {t.operator for t in rest} & (CHANNEL_OPERATORS | DM_OPERATORS)
        if not conversation:
            raise ApiError("Invalid 'with' operator")
        return rest
    kept = [t for t in rest if t.operator not in CHANNEL_OPERATORS | DM_OPERATORS | {"topic", "subject"}]
    if row["channel_id"] is not None:
        return [Term("channel", row["channel_id"]), Term("topic", row["topic"] or "general chat"), *kept]
    members = tx.column(
        "SELECT g.user_id FROM recipients AS r JOIN direct_message_group_members AS g ON g.group_id = r.type_id"
        " WHERE r.id = ? AND g.user_id != ? ORDER BY g.user_id",
        (row["recipient_id"], user.id),
    )
    return [Term("dm", members), *kept]


def _can_read(tx: Tx, user: User, row: Any, message_id: int) -> bool:
    if tx.one("SELECT 1 FROM user_messages WHERE user_id = ? AND message_id = ?", (user.id, message_id)):
        return True
    channel = get_channel_by_id(tx, row["channel_id"]) if row["channel_id"] is not None else None
    return channel is not None and channel.history_public_to_subscribers and has_content_access(tx, user, channel)


def resolve_anchor(tx: Tx, query: Query, request: FetchRequest) -> int:
    """Return the numeric anchor for the request (api-notes 4.2)."""
    anchor = "first_unread" if request.use_first_unread_anchor else request.anchor
    if anchor == "newest":
        return LARGER_THAN_MAX_MESSAGE_ID
    if anchor == "oldest":
        return 0
    if anchor == "first_unread":
        found = first_unread(tx, query)
        return LARGER_THAN_MAX_MESSAGE_ID if found is None else found
    if anchor == "date":
        found = anchor_for_date(tx, query, request.anchor_date)
        return LARGER_THAN_MAX_MESSAGE_ID if found is None else found
    try:
        value = int(str(anchor))
    except ValueError:
        raise ApiError("Invalid anchor") from None
    return min(max(value, 0), LARGER_THAN_MAX_MESSAGE_ID)


def get_messages(tx: Tx, user: User, request: FetchRequest) -> dict[str, Any]:
    """Return the GET /messages response body (without result/msg)."""
    check_request(request)
    terms = rewrite_with(tx, user, parse_narrow(request.narrow))
    query = build_query(tx, user, terms)
    if request.message_ids is not None:
        ids = sorted(set(request.message_ids))
        found = find_ids(tx, query, "IN (SELECT value FROM json_each(?))", [json.dumps(ids)], False, None)
        if query.driver in ("um", "flag") and not query.history:
            found = _with_history(tx, user, terms, ids, found)
        body: dict[str, Any] = {"found_anchor": False, "found_oldest": False, "found_newest": False}
        body.update(history_limited=False, messages=_objects(tx, user, request, query, found))
        return body
    assert request.num_before is not None and request.num_after is not None
    anchor = resolve_anchor(tx, query, request)
    include_anchor = request.include_anchor is not False
    num_before, num_after = request.num_before, request.num_after
    if anchor >= LARGER_THAN_MAX_MESSAGE_ID:
        num_after = 0
    before = find_ids(tx, query, "<= ?" if include_anchor else "< ?", [anchor], True, num_before + include_anchor)
    anchor_rows = [row for row in before if row[0] == anchor]
    before = [row for row in before if row[0] != anchor][:num_before]
    after = find_ids(tx, query, "> ?", [anchor], False, num_after)
    rows = sorted(before + anchor_rows + after)
    return {
        "anchor": anchor,
        "found_anchor": bool(anchor_rows),
        "found_oldest": anchor == 0 or len(before) < num_before,
        "found_newest": anchor >= LARGER_THAN_MAX_MESSAGE_ID or len(after) < num_after,
        "history_limited": False,
        "messages": _objects(tx, user, request, query, rows),
    }


def _with_history(
    tx: Tx, user: User, terms: list[Term], ids: list[int], found: list[tuple[int, int | None]]
) -> list[tuple[int, int | None]]:
    """message_ids mode: add requested messages the user has no row for but may read (public history)."""
    have = {row[0] for row in found}
    extra = []
    for message_id in ids:
        if message_id in have:
            continue
        row = tx.one("SELECT channel_id FROM messages WHERE id = ?", (message_id,)) if message_id < 2**63 else None
        if row is None or row["channel_id"] is None:
            continue
        channel_query = build_query(tx, user, [Term("channel", row["channel_id"]), *terms])
        if channel_query.history:
            extra.extend(find_ids(tx, channel_query, "= ?", [message_id], False, 1))
    return sorted(found + extra)


def _objects(
    tx: Tx, user: User, request: FetchRequest, query: Query, rows: list[tuple[int, int | None]]
) -> list[dict[str, Any]]:
    if not rows:
        return []
    flags_by_id = dict(rows)
    message_rows = tx.all(
        f"SELECT {MESSAGE_COLUMNS} FROM messages AS m WHERE m.id IN (SELECT value FROM json_each(?)) ORDER BY m.id",
        (json.dumps([row[0] for row in rows]),),
    )
    full = [{**dict(r), "flags": flags_by_id[r["id"]]} for r in message_rows]
    objects = message_objects(
        tx, user, full, apply_markdown=request.apply_markdown, client_gravatar=request.client_gravatar,
        allow_empty_topic_name=request.allow_empty_topic_name,
    )  # fmt: skip
    if query.search_terms:
        for obj, row in zip(objects, full, strict=True):
            obj["match_content"] = highlight_content(row["rendered_content"], query.search_terms)
            obj["match_subject"] = highlight_topic(obj["subject"], query.search_terms)
    return objects
