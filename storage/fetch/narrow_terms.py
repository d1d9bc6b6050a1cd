"""Narrow terms: GET /messages' `narrow` parsed into Terms, each operand checked and bounded.

Nothing here reads the database: what a term means is storage/fetch/narrow.py.
"""

from __future__ import annotations

from typing import Any

import msgspec

from storage.model.errors import ApiError
from storage.text.search_highlight import search_terms

CHANNEL_OPERATORS = {"channel", "stream"}
CHANNELS_OPERATORS = {"channels", "streams"}
DM_OPERATORS = {"dm", "pm-with", "pm_with"}
GROUP_DM_OPERATORS = {"group-pm-with", "group_pm_with"}
# Operand types (api-notes 4.3): these take a string or an integer; dm/pm-with a string or an
# integer list; search a non-blank string; everything else a string.
ID_OR_STRING_OPERATORS = CHANNEL_OPERATORS | {"id", "sender", "group-pm-with", "dm-including", "with", "mentions"}
ID_LIST_OPERATORS = {"dm", "pm-with"}
KNOWN_OPERATORS = (
    CHANNEL_OPERATORS | CHANNELS_OPERATORS | DM_OPERATORS | GROUP_DM_OPERATORS
    | {"dm-including", "topic", "sender", "is", "has", "in", "id", "near", "search", "with", "mentions"}
)  # fmt: skip
DM_TERM_OPERATORS = DM_OPERATORS | GROUP_DM_OPERATORS | {"dm-including"}
MAX_MESSAGE_ID = 2147483647
# Bounds checked before any query runs, so that one request cannot hold the server: every term
# adds a filter evaluated on each row a page walks (SQLite refuses expressions nested 1,000 deep),
# every search word an FTS phrase and an alternative in the highlighting pattern, every user a
# dm term names a lookup. Real narrows are a few terms (docs/reliability.md has the figures).
MAX_NARROW_TERMS = 20
MAX_OPERAND_LENGTH = 2000  # characters of a string operand (a dm operand's emails included)
MAX_NARROW_USERS = 1000  # users named by all dm terms together (ids in lists, comma-separated emails)
MAX_SEARCH_WORDS = 25  # words and "quoted phrases" of all search terms together


class Term(msgspec.Struct):
    operator: str
    operand: Any
    negated: bool = False


def bad_narrow(desc: str) -> ApiError:
    return ApiError(f"Invalid narrow operator: {desc}", "BAD_NARROW", data={"desc": desc})


def parse_narrow(raw: Any) -> list[Term]:
    """Return the terms of a decoded `narrow` (objects or legacy pairs); raise the API's type errors.

    Unknown operators and operands are BAD_NARROW errors of build_query, as in Zulip.
    """
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ApiError("narrow is not a list")
    if len(raw) > MAX_NARROW_TERMS:
        raise ApiError(f"narrow is too long (limit: {MAX_NARROW_TERMS} items)")
    terms = [_parse_term(index, element) for index, element in enumerate(raw)]
    words = sum(len(search_terms(t.operand)) for t in terms if t.operator == "search")
    if words > MAX_SEARCH_WORDS:
        raise ApiError(f"narrow has too many search words (limit: {MAX_SEARCH_WORDS})")
    named = sum(_count_users(t.operand) for t in terms if t.operator in DM_OPERATORS)
    if named > MAX_NARROW_USERS:
        raise ApiError(f"narrow names too many users (limit: {MAX_NARROW_USERS})")
    return terms


def _count_users(operand: Any) -> int:
    return len(operand) if isinstance(operand, list) else operand.count(",") + 1


def _parse_term(index: int, element: Any) -> Term:
    if isinstance(element, list):
        if len(element) != 2 or not all(isinstance(e, str) for e in element):
            raise ApiError(f"Invalid narrow[{index}]: Value error, element is not a string pair")
        return Term(element[0], check_operand(element[0], element[1]))
    if not isinstance(element, dict):
        raise ApiError(f"Invalid narrow[{index}]: Value error, dict or list required")
    if element.get("operand") is None:
        raise ApiError(f"Invalid narrow[{index}]: Value error, operand is missing")
    if element.get("operator") is None:
        raise ApiError(f"Invalid narrow[{index}]: Value error, operator is missing")
    operator, negated = element["operator"], element.get("negated", False)
    if not isinstance(operator, str):
        raise ApiError(f'narrow[{index}]["operator"] is not a string')
    if not isinstance(negated, bool):
        raise ApiError(f'narrow[{index}]["negated"] is not a boolean')
    return Term(operator, check_operand(operator, element["operand"]), negated)


def check_operand(operator: str, operand: Any) -> Any:
    """Return the operand if its type suits the operator and fits the bounds; the API's error otherwise."""
    if isinstance(operand, str):
        if len(operand) > MAX_OPERAND_LENGTH:
            raise ApiError(f"operand is too long (limit: {MAX_OPERAND_LENGTH} characters)")
        # No stored text holds NUL, and SQLite's FTS5 query parser stops at one ("unterminated string").
        if "\x00" in operand:
            raise ApiError("operand contains NULL (0x00) characters.")
    if operator in ID_OR_STRING_OPERATORS:
        if isinstance(operand, bool) or not isinstance(operand, (str, int)):
            raise ApiError("operand is not a string or integer")
    elif operator in ID_LIST_OPERATORS:
        if not isinstance(operand, (str, list)):
            raise ApiError("operand is not a string or an integer list")
        for i, item in enumerate(operand if isinstance(operand, list) else []):
            if isinstance(item, bool) or not isinstance(item, int):
                raise ApiError(f"operand[{i}] is not an integer")
    elif not isinstance(operand, str):
        raise ApiError("operand is not a string")
    elif operator == "search" and not operand.strip():
        raise ApiError("operand cannot be blank.")
    return operand
