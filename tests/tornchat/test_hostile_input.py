"""Hostile parameters: bounded narrows and JSON 400s (never 500s) from every shared decode path.

Issue 10 measured each of these as a 500 or a stalled server before the fix.
"""

from __future__ import annotations

import base64
from typing import Any

import msgspec
import pytest
import requests

from storage.fetch.narrow_terms import MAX_NARROW_TERMS, MAX_NARROW_USERS, MAX_OPERAND_LENGTH, MAX_SEARCH_WORDS
from storage.model.errors import ApiError
from tests.support.channel_helpers import make_channel
from tests.support.helpers import assert_error, assert_success
from tornchat.params import MAX_JSON_DEPTH, Params

PAGE = {"anchor": "newest", "num_before": 5, "num_after": 0}
FLAGS_PAGE = {"anchor": "newest", "num_before": 5, "num_after": 0, "op": "add", "flag": "starred"}


@pytest.fixture(scope="module", autouse=True)
def hostile_input_history(shared_live):
    server = shared_live
    assert_success(server.owner.post("/messages", {"type": "direct", "to": [server.owner.id], "content": "hello"}))


def get_messages(live, narrow):
    return live.owner.get("/messages", {**PAGE, "narrow": narrow})


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# -- narrows: bounded before any query runs --------------------------------------------------


def test_a_narrow_of_many_terms_is_refused(shared_live):
    # 1,000 terms made SQLite fail with "Expression tree is too large" (a 500).
    for count in (MAX_NARROW_TERMS + 1, 1000):
        assert_error(get_messages(shared_live, [["has", "link"]] * count), "narrow is too long (limit: 20 items)")
    assert_success(get_messages(shared_live, [["has", "link"]] * MAX_NARROW_TERMS))


def test_narrow_bounds_come_before_the_terms_are_resolved(shared_live):
    narrow = [["channel", "nowhere"]] + [["has", "link"]] * MAX_NARROW_TERMS
    assert_error(get_messages(shared_live, narrow), "narrow is too long (limit: 20 items)")
    narrow = [["channel", "nowhere"], ["search", " ".join(["w"] * (MAX_SEARCH_WORDS + 1))]]
    assert_error(get_messages(shared_live, narrow), "narrow has too many search words (limit: 25)")


def test_a_long_operand_is_refused(shared_live):
    for operator in ("search", "topic", "channel", "sender", "dm"):
        response = get_messages(shared_live, [[operator, "a" * (MAX_OPERAND_LENGTH + 1)]])
        assert_error(response, "operand is too long (limit: 2000 characters)")
    assert_success(get_messages(shared_live, [["search", "hello " + "a" * (MAX_OPERAND_LENGTH - 6)]]))


def test_users_named_by_dm_terms_are_bounded_across_terms(shared_live):
    # Each named user is a lookup: 100 dm terms of 1,000 ids each took 1.4 s before.
    me = shared_live.owner.id
    too_many = [
        {"operator": "dm", "operand": [me] * 600, "negated": True},
        {"operator": "pm-with", "operand": [me] * 401},
    ]
    assert_error(get_messages(shared_live, too_many), "narrow names too many users (limit: 1000)")
    emails = ",".join(["owner@example.com"] * 101)
    narrow = [{"operator": "dm", "operand": [me] * (MAX_NARROW_USERS - 100), "negated": True}, ["pm_with", emails]]
    assert_error(get_messages(shared_live, narrow), "narrow names too many users (limit: 1000)")
    assert_success(get_messages(shared_live, [{"operator": "dm", "operand": [me] * MAX_NARROW_USERS}]))


def test_search_words_are_bounded_across_terms(shared_live):
    assert_success(get_messages(shared_live, [["search", " ".join(["hello"] * MAX_SEARCH_WORDS)]]))
    too_many = [["search", " ".join(["hello"] * 20)], ["search", '"a phrase" ' + " ".join(["x"] * 5)]]
    assert_error(get_messages(shared_live, too_many), "narrow has too many search words (limit: 25)")
    negated = {"operator": "search", "operand": " ".join(["w"] * (MAX_SEARCH_WORDS + 1)), "negated": True}
    assert_error(get_messages(shared_live, [negated]), "narrow has too many search words (limit: 25)")


def test_a_nul_character_in_an_operand_is_refused(shared_live):
    # FTS5 stopped at the NUL: "unterminated string" (a 500).
    for operator in ("search", "topic"):
        assert_error(get_messages(shared_live, [[operator, "hel\x00lo"]]), "operand contains NULL (0x00) characters.")
    body = assert_success(get_messages(shared_live, [["search", "hello"]]))
    assert len(body["messages"]) == 1


def test_the_bounds_hold_for_every_endpoint_taking_a_narrow(shared_live):
    for narrow, msg in (
        ([["has", "link"]] * 1000, "narrow is too long (limit: 20 items)"),
        ([["search", "a\x00b"]], "operand contains NULL (0x00) characters."),
    ):
        assert_error(shared_live.owner.post("/messages/flags/narrow", {**FLAGS_PAGE, "narrow": narrow}), msg)


# -- JSON parameters: nesting bounded in the shared decoder -------------------------------------


def test_deeply_nested_json_parameters_are_refused(shared_live):
    # ~1,000 levels raised RecursionError in the JSON decoder (a 500), in any JSON parameter.
    for depth in (MAX_JSON_DEPTH + 1, 1000, 100_000):
        response = shared_live.owner.get("/messages", data={**PAGE, "narrow": nested(depth)})  # in a body: no URL limit
        assert_error(response, "narrow is nested too deeply (limit: 100 levels)")
        response = shared_live.owner.post("/messages/flags", {"messages": nested(depth), "op": "add", "flag": "read"})
        assert_error(response, "messages is nested too deeply (limit: 100 levels)")
    # Within the bound the value reaches the endpoint's own checks.
    response = shared_live.owner.post(
        "/messages/flags", {"messages": nested(MAX_JSON_DEPTH), "op": "add", "flag": "read"}
    )
    assert_error(response, "messages[0] is not an integer")


def test_nesting_is_measured_through_objects_too(shared_live):
    deep = '{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1)
    response = shared_live.owner.post("/messages/flags", {"messages": deep, "op": "add", "flag": "read"})
    assert_error(response, "messages is nested too deeply (limit: 100 levels)")


def test_deep_json_in_the_hand_decoded_parameters(shared_live):
    # POST /messages' `to` is JSON or a plain name; a subscription property's value JSON or text.
    for depth in (MAX_JSON_DEPTH + 1, 1000):
        response = shared_live.owner.post(
            "/messages", {"type": "stream", "to": nested(depth), "topic": "t", "content": "x"}
        )
        assert_error(response, "to is nested too deeply (limit: 100 levels)")
    channel = make_channel(shared_live, "hostile", [shared_live.owner.id])
    response = shared_live.owner.patch(
        f"/users/me/subscriptions/{channel}", {"property": "is_muted", "value": nested(1000)}
    )
    assert response.status_code == 400, response.text
    assert response.json()["result"] == "error"


class _Json(msgspec.Struct):
    value: Any = None
    ids: list[int] | None = None


def _parse_json(**raw: str) -> _Json:
    return Params(_Json).parse(raw.get, list(raw))[0]


def test_the_text_shortcuts_decide_as_the_walks_would():
    """The decoder skips the depth walk for text with few brackets and the 64-bit walk for text
    without 19 digits in a row: brackets inside strings and long numbers at the edges still decide right."""
    inside_strings = '["' + "[" * 500 + '", {"k": "' + "{" * 500 + '"}]'
    assert _parse_json(value=inside_strings).value == ["[" * 500, {"k": "{" * 500}]
    assert _parse_json(value=nested(MAX_JSON_DEPTH)).value is not None
    with pytest.raises(ApiError, match="nested too deeply"):
        _parse_json(value=nested(MAX_JSON_DEPTH + 1))
    for fits in (2**63 - 1, -(2**63), 10**18, 999_999_999_999_999_999):
        assert _parse_json(ids=f"[{fits}]").ids == [fits]
    for too_large in (2**63, -(2**63) - 1, 10**19, 10**30):
        with pytest.raises(ApiError, match=r"ids\[0\] is too large"):
            _parse_json(ids=f"[{too_large}]")
    with pytest.raises(ApiError, match=r'value\[1\]\["n"\] is too large'):
        _parse_json(value=f'[1, {{"n": {2**64}}}]')


# -- Basic authentication: any bytes in the header ------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "Basic \xe9\xe9\xe9",  # non-ASCII header text: UnicodeEncodeError in base64 (a 500)
        "Basic " + base64.b64encode(b"\xff\xfe:key").decode(),  # credentials that are not UTF-8
        "Basic \xe9" + base64.b64encode(b"owner@example.com:key").decode(),
    ],
)
def test_non_ascii_basic_credentials_are_unauthorized(shared_live, value):
    response = requests.get(shared_live.base_url + "/api/v1/users/me", headers={"Authorization": value})
    assert_error(response, "Invalid authorization header for basic auth", "UNAUTHORIZED", 401)
    assert response.headers["WWW-Authenticate"] == 'Basic realm="zulip"'
