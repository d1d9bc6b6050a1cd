"""GET /messages parameters: types, required ones, combinations, limits and the order of the checks
(spec 4.5 and §8; api-notes 4.1 where the spec is silent)."""

from __future__ import annotations

import json
import os

import pytest

from tests.support.channel_helpers import make_channel
from tests.support.get_messages_helpers import NEWEST, ids_of, post
from tests.support.helpers import assert_error, assert_success

UNSUPPORTED = (
    "Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor,"
    " use_first_unread_anchor"
)
TOO_MANY = "Too many messages requested (maximum 5000)."
EXCLUDED_ANCHOR = "The anchor can only be excluded at an end of the range"
RANGE = {"anchor": "newest", "num_before": 10, "num_after": 0}


@pytest.fixture(scope="module", autouse=True)
def params_history(shared_live):
    server = shared_live
    make_channel(server, "general", [server.owner.id])
    server.message_ids = [post(server, server.owner, "general", "t", f"message {n}") for n in range(3)]


def get(live, params):
    return live.owner.get("/messages", params)


def test_num_before_and_num_after_default_to_zero(shared_live):
    # Zulip's defaults (zerver/views/message_fetch.py), where the spec calls them required.
    first, second, third = shared_live.message_ids
    body = assert_success(get(shared_live, {"anchor": second}))
    assert ids_of(body) == [second] and body["anchor"] == second and body["found_anchor"] is True
    assert (body["found_oldest"], body["found_newest"]) == (False, False)
    assert ids_of(assert_success(get(shared_live, {"anchor": third, "num_before": 1}))) == [second, third]
    assert ids_of(assert_success(get(shared_live, {"anchor": first, "num_after": 1}))) == [first, second]
    assert ids_of(assert_success(get(shared_live, {"anchor": "newest"}))) == [], "no message has the anchor's id"


def test_anchor_has_no_default(shared_live):
    assert_error(get(shared_live, {}), "Missing 'anchor' argument.")
    assert_error(get(shared_live, {"num_before": 1}), "Missing 'anchor' argument.")


def test_missing_anchor(shared_live):
    assert_error(get(shared_live, {"num_before": 1, "num_after": 1}), "Missing 'anchor' argument.")


@pytest.mark.parametrize("anchor", ["abc", "1.5", "", "NEWEST", "0x10", "first unread"])
def test_invalid_anchor(shared_live, anchor):
    assert_error(get(shared_live, {**RANGE, "anchor": anchor}), "Invalid anchor")


def test_message_ids_make_num_before_and_num_after_optional(shared_live):
    body = assert_success(get(shared_live, {"message_ids": shared_live.message_ids[:1]}))
    assert ids_of(body) == shared_live.message_ids[:1]


@pytest.mark.parametrize(
    "extra",
    [
        {"anchor": "newest"},
        {"anchor": "5"},
        {"num_before": 0},
        {"num_after": 0},
        {"num_before": 5},
        {"include_anchor": True},
        {"include_anchor": False},
        {"use_first_unread_anchor": True},
        {"use_first_unread_anchor": False},
    ],
)
def test_message_ids_with_any_range_parameter_is_unsupported(shared_live, extra):
    assert_error(get(shared_live, {"message_ids": shared_live.message_ids, **extra}), UNSUPPORTED)


def test_message_ids_with_anchor_date_or_display_options_is_fine(shared_live):
    params = {"message_ids": shared_live.message_ids, "anchor_date": "2020-01-01", "apply_markdown": False,
              "client_gravatar": False, "allow_empty_topic_name": True, "narrow": []}  # fmt: skip
    assert ids_of(assert_success(get(shared_live, params))) == shared_live.message_ids


def test_use_first_unread_anchor_overrides_anchor(shared_live):
    # Every message is unread by the owner here (sent through the API, read by sender) but one.
    first, second, _ = shared_live.message_ids
    shared_live.write(
        lambda tx: tx.execute("UPDATE user_messages SET flags = flags | 1 WHERE message_id = ?", (first,))
    )
    shared_live.write(
        lambda tx: tx.execute("UPDATE user_messages SET flags = flags & ~1 WHERE message_id = ?", (second,))
    )
    params = {"anchor": "oldest", "use_first_unread_anchor": True, "num_before": 0, "num_after": 0}
    body = assert_success(get(shared_live, params))
    assert (body["anchor"], ids_of(body)) == (second, [second])
    # Alone, it needs no anchor; false leaves the anchor in charge.
    assert assert_success(get(shared_live, {**params, "anchor": "10"}))["anchor"] == second
    del params["anchor"]
    assert assert_success(get(shared_live, params))["anchor"] == second
    body = assert_success(get(shared_live, {**params, "use_first_unread_anchor": False, "anchor": "oldest"}))
    assert body["anchor"] == 0
    assert_error(get(shared_live, {**params, "use_first_unread_anchor": False}), "Missing 'anchor' argument.")


def test_too_many_messages(shared_live):
    assert_error(get(shared_live, {**RANGE, "num_before": 2501, "num_after": 2500}), TOO_MANY)
    assert_error(get(shared_live, {**RANGE, "num_before": 5001}), TOO_MANY)
    assert_error(get(shared_live, {"message_ids": list(range(1, 5002))}), TOO_MANY)
    assert_success(get(shared_live, {**RANGE, "num_before": 2500, "num_after": 2500}))
    assert_success(get(shared_live, {**RANGE, "num_before": 5000}))
    assert_success(get(shared_live, {"message_ids": list(range(1, 5001))}))


def test_the_anchor_may_only_be_excluded_at_an_end(shared_live):
    params = {"anchor": "2", "num_before": 1, "num_after": 1, "include_anchor": False}
    assert_error(get(shared_live, params), EXCLUDED_ANCHOR)
    assert assert_success(get(shared_live, {**params, "num_after": 0}))["found_anchor"] is False
    assert assert_success(get(shared_live, {**params, "num_before": 0}))["found_anchor"] is False
    assert_success(get(shared_live, {**params, "include_anchor": True}))


@pytest.mark.parametrize(
    ("params", "msg"),
    [
        ({"num_before": -1}, "num_before is too small"),
        ({"num_after": -5}, "num_after is too small"),
        ({"num_before": "abc"}, "num_before is not valid JSON"),
        ({"num_before": 1.5}, "num_before is not an integer"),
        ({"num_after": True}, "num_after is not an integer"),
        ({"num_before": 2**64}, "num_before is too large"),
        ({"include_anchor": "True"}, "include_anchor is not valid JSON"),
        ({"include_anchor": 1}, "include_anchor is not a boolean"),
        ({"use_first_unread_anchor": "yes"}, "use_first_unread_anchor is not valid JSON"),
        ({"apply_markdown": "1"}, "apply_markdown is not a boolean"),
        ({"client_gravatar": "null"}, "client_gravatar is not a boolean"),
        ({"allow_empty_topic_name": "[]"}, "allow_empty_topic_name is not a boolean"),
        ({"narrow": "{foo"}, "narrow is not valid JSON"),
    ],
)
def test_parameter_types(shared_live, params, msg):
    assert_error(get(shared_live, {**RANGE, **params}), msg)


@pytest.mark.parametrize(
    ("message_ids", "msg"),
    [
        ("5", "message_ids is not a list"),
        ('["a"]', "message_ids[0] is not an integer"),
        ("[1, -1]", "message_ids[1] is too small"),
        ("[1.5]", "message_ids[0] is not an integer"),
        ("[1,", "message_ids is not valid JSON"),
    ],
)
def test_message_ids_types(shared_live, message_ids, msg):
    assert_error(get(shared_live, {"message_ids": message_ids}), msg)


@pytest.mark.parametrize(
    ("narrow", "msg"),
    [
        ("0", "narrow is not a list"),
        ('{"operator": "is", "operand": "dm"}', "narrow is not a list"),
        ('"is:dm"', "narrow is not a list"),
        ("[5]", "Invalid narrow[0]: Value error, dict or list required"),
        ('[["is", "dm"], "x"]', "Invalid narrow[1]: Value error, dict or list required"),
        ('[["is"]]', "Invalid narrow[0]: Value error, element is not a string pair"),
        ('[["is", "dm", "x"]]', "Invalid narrow[0]: Value error, element is not a string pair"),
        ('[["channel", 5]]', "Invalid narrow[0]: Value error, element is not a string pair"),
        ('[{"operator": "is"}]', "Invalid narrow[0]: Value error, operand is missing"),
        ('[{"operator": "is", "operand": null}]', "Invalid narrow[0]: Value error, operand is missing"),
        ('[{"operand": "dm"}]', "Invalid narrow[0]: Value error, operator is missing"),
        ('[{"operator": null, "operand": "dm"}]', "Invalid narrow[0]: Value error, operator is missing"),
        ("[{}]", "Invalid narrow[0]: Value error, operand is missing"),
        ('[{"operator": 5, "operand": "dm"}]', 'narrow[0]["operator"] is not a string'),
        ('[{"operator": "is", "operand": "dm", "negated": "yes"}]', 'narrow[0]["negated"] is not a boolean'),
        ('[{"operator": "channel", "operand": [1]}]', "operand is not a string or integer"),
        ('[{"operator": "stream", "operand": 1.5}]', "operand is not a string or integer"),
        ('[{"operator": "sender", "operand": true}]', "operand is not a string or integer"),
        ('[{"operator": "id", "operand": {}}]', "operand is not a string or integer"),
        ('[{"operator": "group-pm-with", "operand": [1]}]', "operand is not a string or integer"),
        ('[{"operator": "dm-including", "operand": [1]}]', "operand is not a string or integer"),
        ('[{"operator": "with", "operand": [1]}]', "operand is not a string or integer"),
        ('[{"operator": "mentions", "operand": [1]}]', "operand is not a string or integer"),
        ('[{"operator": "dm", "operand": 5}]', "operand is not a string or an integer list"),
        ('[{"operator": "pm-with", "operand": {"a": 1}}]', "operand is not a string or an integer list"),
        ('[{"operator": "dm", "operand": [1, "a"]}]', "operand[1] is not an integer"),
        ('[{"operator": "pm_with", "operand": [1]}]', "operand is not a string"),
        ('[{"operator": "group_pm_with", "operand": 5}]', "operand is not a string"),
        ('[{"operator": "topic", "operand": 5}]', "operand is not a string"),
        ('[{"operator": "is", "operand": ["dm"]}]', "operand is not a string"),
        ('[{"operator": "nonsense", "operand": 5}]', "operand is not a string"),
        ('[{"operator": "search", "operand": 5}]', "operand is not a string"),
        ('[{"operator": "search", "operand": "  "}]', "operand cannot be blank."),
        ('[["search", ""]]', "operand cannot be blank."),
    ],
)
def test_narrow_shape_and_operand_types(shared_live, narrow, msg):
    assert_error(get(shared_live, {**RANGE, "narrow": narrow}), msg)


def test_order_of_checks(shared_live):
    bad_narrow = '[{"operator": "channel", "operand": [1]}]'
    unknown = json.dumps([["nonsense", "x"]])
    duplicate_with = json.dumps([["with", "1"], ["with", "2"]])
    # The narrow's shape is a parameter error: it comes first.
    assert_error(get(shared_live, {"narrow": bad_narrow}), "operand is not a string or integer")
    assert_error(
        get(shared_live, {"narrow": bad_narrow, "message_ids": [1], "anchor": "1"}),
        "operand is not a string or integer",
    )
    # Then the combination, the anchor.
    assert_error(get(shared_live, {"message_ids": [1], "anchor": "x", "narrow": unknown}), UNSUPPORTED)
    assert_error(get(shared_live, {"anchor": "x", "narrow": unknown}), "Invalid anchor")
    both = {"num_before": 3000, "num_after": 3000, "include_anchor": False}
    assert_error(get(shared_live, {**both, "narrow": unknown}), "Missing 'anchor' argument.")
    assert_error(get(shared_live, {**both, "anchor": "x", "narrow": duplicate_with}), "Invalid anchor")
    # Then the `with` rewrite, the size limit, the excluded anchor, and last the operators themselves.
    body = assert_error(
        get(shared_live, {**both, "anchor": "1", "narrow": duplicate_with}),
        "Invalid narrow operator combination: Duplicate 'with' operators.", "BAD_NARROW",
    )  # fmt: skip
    assert body["desc"] == "Duplicate 'with' operators."
    assert_error(get(shared_live, {**both, "anchor": "1", "narrow": unknown}), TOO_MANY)
    assert_error(get(shared_live, {**both, "num_after": 1, "anchor": "1", "narrow": unknown}), EXCLUDED_ANCHOR)
    assert_error(
        get(shared_live, {**RANGE, "narrow": unknown}),
        "Invalid narrow operator: unknown operator nonsense",
        "BAD_NARROW",
    )
    assert_error(get(shared_live, {"message_ids": list(range(5001)), "narrow": unknown}), TOO_MANY)


@pytest.mark.parametrize(
    ("anchor_date", "msg", "code"),
    [
        (None, "Missing 'anchor_date' argument", "REQUEST_VARIABLE_MISSING"),
        ("yesterday", "Invalid anchor_date", "BAD_REQUEST"),
        ("2024-13-01", "Invalid anchor_date", "BAD_REQUEST"),
        ("", "Invalid anchor_date", "BAD_REQUEST"),
    ],
)
def test_anchor_date_errors(shared_live, anchor_date, msg, code):
    params = {**RANGE, "anchor": "date"}
    if anchor_date is not None:
        params["anchor_date"] = anchor_date
    body = assert_error(get(shared_live, params), msg, code)
    if code == "REQUEST_VARIABLE_MISSING":
        assert body["var_name"] == "anchor_date"


def test_unknown_parameters_are_reported_and_known_ones_are_not(shared_live):
    body = assert_success(get(shared_live, {**RANGE, "zeta": "1", "alpha": "2", "anchor_date": "2020-01-01"}))
    assert body["ignored_parameters_unsupported"] == ["alpha", "zeta"]
    assert "ignored_parameters_unsupported" not in assert_success(get(shared_live, RANGE))


def test_response_shape(shared_live):
    body = assert_success(get(shared_live, RANGE))
    assert set(body) == {"result", "msg", "anchor", "found_anchor", "found_oldest", "found_newest",
                         "history_limited", "messages"}  # fmt: skip
    assert body["anchor"] == NEWEST and body["history_limited"] is False
    body = assert_success(get(shared_live, {"message_ids": shared_live.message_ids}))
    assert set(body) == {"result", "msg", "found_anchor", "found_oldest", "found_newest", "history_limited", "messages"}
    assert (body["found_anchor"], body["found_oldest"], body["found_newest"], body["history_limited"]) == (
        False, False, False, False,
    )  # fmt: skip


def test_parameters_may_come_in_the_form_body_of_a_get(shared_live):
    response = shared_live.owner.session.request(
        "GET", shared_live.base_url + "/api/v1/messages", data={"anchor": "newest", "num_before": "1", "num_after": "0"}
    )
    assert ids_of(assert_success(response)) == shared_live.message_ids[-1:]


def test_requires_authentication(shared_live):
    assert_error(
        shared_live.anonymous().get("/messages", RANGE),
        "Not logged in: API authentication or user session required",
        "UNAUTHORIZED",
        401,
    )


def test_the_zulip_client(shared_live, tmp_path):
    import zulip

    from tornchat.bootstrap import write_zuliprc

    path = os.path.join(str(tmp_path), "zuliprc")
    write_zuliprc(path, "owner@example.com", shared_live.owner.api_key, shared_live.base_url)
    client = zulip.Client(config_file=path)
    result = client.get_messages(
        {"anchor": "newest", "num_before": 2, "num_after": 0, "narrow": [["channel", "general"]]}
    )
    assert result["result"] == "success" and [m["id"] for m in result["messages"]] == shared_live.message_ids[-2:]
    result = client.get_messages({"anchor": shared_live.message_ids[0], "num_before": 0, "num_after": 1, "narrow": []})
    assert [m["id"] for m in result["messages"]] == shared_live.message_ids[:2] and result["found_anchor"] is True
    result = client.get_messages({"num_before": 1, "num_after": 1})
    assert result["result"] == "error" and result["msg"] == "Missing 'anchor' argument."
