"""GET /messages: anchors, ranges and message_ids over a narrow (spec 4.5, api-notes 4).

The order of checks is Zulip's (api-notes 4.1), with one difference from the spec: message_ids may not
come with any of the range parameters, whatever their values. num_before and num_after default to 0 as
in Zulip (zerver/views/message_fetch.py), where the spec calls them required: a range request without
them is the anchor alone. `anchor` has no default ("Missing 'anchor' argument.").
"""

from __future__ import annotations

import bisect
import datetime
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, TypeVar

import msgspec

from storage.cache.flag_cache import entries_for
from storage.db.tx import Tx
from storage.fetch.message_access import access_message
from storage.fetch.message_encoded import encoded_page, encoded_search_page
from storage.fetch.message_objects import RENDERED, Formats, MessageObject, MessageRow, message_tuple_objects
from storage.fetch.narrow import Query, build_query
from storage.fetch.narrow_select import Side, find_flag_rows, find_message_rows, ids_query, unread_query
from storage.fetch.narrow_terms import Term, bad_narrow, parse_narrow
from storage.model import recipients
from storage.model.errors import ApiError, missing_argument
from storage.model.user import User
from storage.text.search_highlight import highlight_content, highlight_topic

# The `newest` anchor, returned as it is (a number above any message id).
LARGER_THAN_MAX_MESSAGE_ID = 10000000000000000
MAX_MESSAGES_PER_FETCH = 5000
UNSUPPORTED_COMBINATION = (
    "Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor,"
    " use_first_unread_anchor"
)
TOO_MANY = f"Too many messages requested (maximum {MAX_MESSAGES_PER_FETCH})."
# Terms the `with` operator replaces by the conversation of its message (Zulip's list).
CONVERSATION_OPERATORS = {"stream", "channel", "topic", "dm", "pm-with"}

NonNegative = Annotated[int, msgspec.Meta(ge=0)]


class GetMessages(msgspec.Struct, kw_only=True):
    """GET /messages' parameters; None where the client did not send one.

    The handler decodes the request into this Struct (tornchat/params.py reads the field names, types
    and constraints: the API's error texts and ignored_parameters_unsupported come from them).
    message_ids rules out every range parameter, even one sent with its default value: hence None.
    """

    anchor: str | None = None
    anchor_date: str | None = None
    include_anchor: bool | None = None
    num_before: NonNegative | None = None
    num_after: NonNegative | None = None
    narrow: Any = None
    message_ids: list[NonNegative] | None = None
    use_first_unread_anchor: bool | None = None
    apply_markdown: bool = True
    client_gravatar: bool = True
    allow_empty_topic_name: bool = False


class Anchor(msgspec.Struct, frozen=True):
    """A parsed anchor: a number, or what to look for (first_unread, the first message since `date`)."""

    value: int = 0
    kind: str = "id"  # id | first_unread | date
    date: int = 0


def check_combination(request: GetMessages) -> None:
    """message_ids excludes every range parameter (spec 4.5), even one sent with its default value."""
    range_parameters = (
        request.num_before, request.num_after, request.anchor, request.include_anchor, request.use_first_unread_anchor
    )  # fmt: skip
    if request.message_ids is not None and any(value is not None for value in range_parameters):
        raise ApiError(UNSUPPORTED_COMBINATION)


def parse_anchor(request: GetMessages) -> Anchor:
    """Return the anchor asked for; use_first_unread_anchor=true overrides `anchor` (clients send both)."""
    if request.use_first_unread_anchor:
        return Anchor(kind="first_unread")
    anchor = request.anchor
    if anchor is None:
        raise ApiError("Missing 'anchor' argument.")
    if anchor in ("newest", "oldest"):
        return Anchor(LARGER_THAN_MAX_MESSAGE_ID if anchor == "newest" else 0)
    if anchor == "first_unread":
        return Anchor(kind="first_unread")
    if anchor == "date":
        return Anchor(kind="date", date=parse_anchor_date(request.anchor_date))
    try:
        value = int(anchor)
    except ValueError:
        raise ApiError("Invalid anchor") from None
    return Anchor(min(max(value, 0), LARGER_THAN_MAX_MESSAGE_ID))


def parse_anchor_date(value: str | None) -> int:
    """Return the moment (UTC seconds) of an ISO 8601 date (midnight UTC) or datetime (UTC if naive)."""
    if value is None:
        raise missing_argument("anchor_date")
    try:
        moment = datetime.datetime.fromisoformat(value.strip())
    except ValueError:
        raise ApiError("Invalid anchor_date") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp())


def check_sizes(request: GetMessages) -> None:
    requested = (
        len(request.message_ids)
        if request.message_ids is not None
        else (request.num_before or 0) + (request.num_after or 0)
    )
    if requested > MAX_MESSAGES_PER_FETCH:
        raise ApiError(TOO_MANY)
    if (request.num_before or 0) > 0 and (request.num_after or 0) > 0 and request.include_anchor is False:
        raise ApiError("The anchor can only be excluded at an end of the range")


def rewrite_with(tx: Tx, user: User, terms: list[Term]) -> list[Term]:
    """Replace `with:<id>` by the channel and topic (or conversation) of that message (Zulip's rules).

    A message the user may not read leaves the other terms as they are if they name a conversation
    themselves, and is an error otherwise.
    """
    with_terms = [t for t in terms if t.operator == "with"]
    if not with_terms:
        return terms
    if len(with_terms) > 1:
        desc = "Duplicate 'with' operators."
        raise ApiError(f"Invalid narrow operator combination: {desc}", "BAD_NARROW", data={"desc": desc})
    rest = [t for t in terms if t.operator != "with"]
    try:
        message_id = int(str(with_terms[0].operand))
    except ValueError:
        raise bad_narrow("Invalid 'with' operator") from None
    try:
        row, _ = access_message(tx, user, message_id, allow_archived=True)
    except ApiError:
        if _names_conversation(rest):
            return rest
        raise bad_narrow("Invalid 'with' operator") from None
    kept = [t for t in rest if t.operator not in CONVERSATION_OPERATORS]
    if row["channel_id"] is not None:
        return [Term("channel", row["channel_id"]), Term("topic", row["topic"]), *kept]
    return [Term("dm", recipients.direct_message_group_members(tx, row["recipient_id"])), *kept]


def _names_conversation(terms: list[Term]) -> bool:
    """Zulip's can_narrow_define_conversation: a dm term, or a channel term and a topic term."""
    operators = {t.operator for t in terms}
    return bool(operators & {"dm", "pm-with"}) or (bool(operators & {"stream", "channel"}) and "topic" in operators)


def anchor_value(tx: Tx, query: Query, anchor: Anchor) -> int:
    found: int | None
    if anchor.kind == "first_unread":
        found = first_unread(tx, query)
    elif anchor.kind == "date":
        found = first_since(tx, query, anchor.date)
    else:
        return anchor.value
    return LARGER_THAN_MAX_MESSAGE_ID if found is None else found


def first_unread(tx: Tx, query: Query) -> int | None:
    """Return the oldest unread message matching the query, skipping muted ones unless DM-only."""
    found = find_flag_rows(tx, unread_query(query), Side.AT_OR_AFTER, 0, 1)
    return found[0][0] if found else None


# anchor=date: the first message sent at or after a moment, by messages_by_date.
FIRST_SINCE_SQL = "SELECT id FROM messages WHERE date_sent >= ? ORDER BY date_sent, id LIMIT 1"


def first_since(tx: Tx, query: Query, moment: int) -> int | None:
    """Return the first message matching the query sent at or after `moment` (ids grow with time)."""
    first = tx.value(FIRST_SINCE_SQL, (moment,))
    if first is None:
        return None
    found = find_flag_rows(tx, query, Side.AT_OR_AFTER, first, 1)
    return found[0][0] if found else None


Row = TypeVar("Row", bound=tuple[Any, ...])
# Reads one scan's rows in one shape, (tx, query, side, anchor id, limit) -> rows in the scan's order:
# narrow_select.find_flag_rows (FlagRow) or find_message_rows (MessageRow).
Find = Callable[[Tx, Query, Side, int, int | None], list[Row]]


def get_messages(tx: Tx, user: User, request: GetMessages, cache_bytes: int | None = None) -> dict[str, Any]:
    """Return the GET /messages response body (without result/msg).

    With `cache_bytes` (the encoded-message cache's bound), `messages` is the encoded array
    (msgspec.Raw) assembled from that cache (storage/fetch/message_encoded.py); without, a list of MessageObject.
    """
    terms = parse_narrow(request.narrow)
    check_combination(request)
    anchor = parse_anchor(request) if request.message_ids is None else None
    terms = rewrite_with(tx, user, terms)
    check_sizes(request)
    query = build_query(tx, user, terms)
    formats = Formats(request.apply_markdown, request.client_gravatar, request.allow_empty_topic_name)
    if cache_bytes is not None and not query.search_terms:
        # Ids and flags only: the messages' bytes come from the encoded-message cache.
        find_flags = partial(find_flag_rows, flag_entries=entries_for(cache_bytes))
        flag_rows, body = _select_page(tx, query, request, anchor, find_flags)
        body["messages"] = encoded_page(tx, flag_rows, formats, cache_bytes)
        return body
    rows, body = _select_page(tx, query, request, anchor, partial(find_message_rows, markdown=request.apply_markdown))
    if cache_bytes is not None:
        body["messages"] = encoded_search_page(tx, rows, formats, query.search_terms, cache_bytes)
    else:
        body["messages"] = _objects(tx, rows, formats, query.search_terms)
    return body


def _select_page(
    tx: Tx, query: Query, request: GetMessages, anchor: Anchor | None, find: Find[Row]
) -> tuple[list[Row], dict[str, Any]]:
    """The page's rows (ascending) and the body's fields before `messages`: by message_ids, or a range."""
    if anchor is None:
        assert request.message_ids is not None
        rows = find(tx, ids_query(query, request.message_ids), Side.AT_OR_AFTER, 0, None)
        return rows, {"found_anchor": False, "found_oldest": False, "found_newest": False, "history_limited": False}
    value = anchor_value(tx, query, anchor)
    rows, found_oldest, found_newest = select_range(
        tx, query, value, request.include_anchor is not False, request.num_before or 0, request.num_after or 0, find
    )
    return rows, {
        "anchor": value,
        "found_anchor": _holds(rows, value),
        "found_oldest": found_oldest,
        "found_newest": found_newest,
        "history_limited": False,
    }


def select_range(
    tx: Tx, query: Query, anchor: int, include_anchor: bool, num_before: int, num_after: int, find: Find[Row]
) -> tuple[list[Row], bool, bool]:
    """Return (rows ascending, found_oldest, found_newest): one scan down from the anchor and one up.

    `find` reads each scan, and its rows' shape is the page's.
    """
    if anchor >= LARGER_THAN_MAX_MESSAGE_ID:
        num_after = 0
    down = Side.AT_OR_BEFORE if include_anchor else Side.BEFORE
    before = find(tx, query, down, anchor, num_before + include_anchor)
    # Newest first and at most the anchor: only the first row can be the anchor.
    anchor_rows = before[:1] if before and before[0][0] == anchor else []
    before = before[len(anchor_rows) : len(anchor_rows) + num_before]
    before.reverse()
    after = find(tx, query, Side.AFTER, anchor, num_after)
    found_oldest = anchor == 0 or len(before) < num_before
    found_newest = anchor >= LARGER_THAN_MAX_MESSAGE_ID or len(after) < num_after
    return before + anchor_rows + after, found_oldest, found_newest


def _holds(rows: list[Row], message_id: int) -> bool:
    """Whether rows (ascending by id) hold this message."""
    index = bisect.bisect_left(rows, message_id, key=lambda row: row[0])
    return index < len(rows) and rows[index][0] == message_id


def _objects(tx: Tx, rows: list[MessageRow], formats: Formats, search_terms: list[str]) -> list[MessageObject]:
    """The page's message objects (the encoded-message cache off), with highlights for a search narrow."""
    objects = message_tuple_objects(tx, rows, formats)
    if search_terms:
        for obj, row in zip(objects, rows, strict=True):
            obj.match_content = highlight_content(row[RENDERED], search_terms)
            obj.match_subject = highlight_topic(obj.subject, search_terms)
    return objects
