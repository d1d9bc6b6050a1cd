"""GET /messages: every narrow operator error, BAD_NARROW with its `desc` (api-notes 4.3)."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import make_channel
from tests.support.get_messages_helpers import post, post_direct
from tests.support.helpers import assert_error, assert_success

BOTH = "No message can be both a channel message and direct message"


@pytest.fixture(scope="module", autouse=True)
def narrow_errors_history(shared_live):
    server = shared_live
    server.alice = server.make_user(email="alice@example.com", full_name="Alice")
    server.bob = server.make_user(email="bob@example.com", full_name="Bob")
    make_channel(server, "general", [server.owner.id, server.alice.id])
    server.channel_message = post(server, server.owner, "general")
    server.private_dm = post_direct(server, server.alice, [server.bob.id], "not for the owner")


def narrow_error(live, narrow, desc, **params):
    params = params or {"anchor": "newest", "num_before": 5, "num_after": 0}
    body = assert_error(live.owner.get("/messages", {**params, "narrow": narrow}), f"Invalid narrow operator: {desc}",
                        "BAD_NARROW")  # fmt: skip
    assert body["desc"] == desc
    return body


@pytest.mark.parametrize(
    ("narrow", "desc"),
    [
        ([["nonsense", "x"]], "unknown operator nonsense"),
        ([{"operator": "subject", "operand": "x"}], "unknown operator subject"),
        ([{"operator": "", "operand": "x"}], "unknown operator "),
        ([{"operator": "channel", "operand": "nowhere"}], "unknown channel nowhere"),
        ([["stream", "nowhere"]], "unknown channel nowhere"),
        ([{"operator": "channel", "operand": 999}], "unknown channel 999"),
        ([{"operator": "stream", "operand": "999", "negated": True}], "unknown channel 999"),
        ([{"operator": "channels", "operand": "private"}], "unknown channels operand private"),
        ([["streams", "all"]], "unknown channels operand all"),
        ([{"operator": "sender", "operand": "ghost@example.com"}], "unknown user ghost@example.com"),
        ([{"operator": "sender", "operand": 999}], "unknown user 999"),
        ([{"operator": "dm-including", "operand": "ghost@example.com"}], "unknown user ghost@example.com"),
        ([{"operator": "group-pm-with", "operand": 999}], "unknown user 999"),
        ([["group_pm_with", "ghost@example.com"]], "unknown user ghost@example.com"),
        ([{"operator": "mentions", "operand": 999}], "unknown user 999"),
        ([{"operator": "dm", "operand": [999]}], "unknown user in [999]"),
        ([{"operator": "dm", "operand": "alice@example.com,ghost@example.com"}],
         "unknown user in alice@example.com,ghost@example.com"),
        ([["pm-with", ""]], "unknown user in "),
        ([{"operator": "is", "operand": "unknown"}], "unknown 'is' operand unknown"),
        ([{"operator": "is", "operand": "Starred"}], "unknown 'is' operand Starred"),
        ([{"operator": "has", "operand": "emoji"}], "unknown 'has' operand emoji"),
        ([{"operator": "in", "operand": "inbox"}], "unknown 'in' operand inbox"),
        ([{"operator": "id", "operand": "abc"}], "Invalid message ID"),
        ([{"operator": "id", "operand": -1}], "Invalid message ID"),
        ([{"operator": "id", "operand": 2147483648}], "Invalid message ID"),
        ([["id", "1.0"]], "Invalid message ID"),
        ([{"operator": "with", "operand": "abc"}], "Invalid 'with' operator"),
        ([{"operator": "with", "operand": 10**9}], "Invalid 'with' operator"),
        ([{"operator": "with", "operand": -3}], "Invalid 'with' operator"),
    ],
)  # fmt: skip
def test_operator_errors(shared_live, narrow, desc):
    narrow_error(shared_live, narrow, desc)


def test_with_an_inaccessible_message_and_no_conversation(shared_live):
    hidden = shared_live.private_dm
    narrow_error(shared_live, [["with", str(hidden)]], "Invalid 'with' operator")
    narrow_error(shared_live, [["with", str(hidden)], ["is", "starred"]], "Invalid 'with' operator")
    narrow_error(shared_live, [["with", str(hidden)], ["topic", "greetings"]], "Invalid 'with' operator")
    narrow_error(shared_live, [["with", str(hidden)], ["channel", "general"]], "Invalid 'with' operator")


def test_duplicate_with_operators(shared_live):
    message = shared_live.channel_message
    narrow = [{"operator": "with", "operand": message}, {"operator": "with", "operand": message, "negated": True}]
    body = assert_error(
        shared_live.owner.get("/messages", {"anchor": "newest", "num_before": 5, "num_after": 0, "narrow": narrow}),
        "Invalid narrow operator combination: Duplicate 'with' operators.",
        "BAD_NARROW",
    )
    assert body["desc"] == "Duplicate 'with' operators."


@pytest.mark.parametrize(
    "narrow",
    [
        [["channel", "general"], ["dm", "alice@example.com"]],
        [["dm", "alice@example.com"], ["stream", "general"]],
        [["topic", "greetings"], ["pm-with", "alice@example.com"]],
        [["channels", "public"], ["is", "dm"]],
        [["is", "private"], ["topic", "x"]],
        [["dm-including", "alice@example.com"], ["channel", "general"]],
        [["group-pm-with", "alice@example.com"], ["streams", "public"]],
        [{"operator": "is", "operand": "dm", "negated": True}, ["dm", "alice@example.com"]],
        [["channel", "general"], {"operator": "is", "operand": "dm", "negated": True}, ["is", "dm"]],
    ],
)
def test_channel_and_direct_message_terms_together(shared_live, narrow):
    narrow_error(shared_live, narrow, BOTH)


def test_negated_terms_of_either_kind_combine(shared_live):
    params = {"anchor": "newest", "num_before": 5, "num_after": 0}
    narrows = [
        [{"operator": "channel", "operand": "general", "negated": True}, ["dm", "alice@example.com"]],
        [["channel", "general"], {"operator": "dm", "operand": "alice@example.com", "negated": True}],
        [["is", "dm"], {"operator": "topic", "operand": "x", "negated": True}],
        [["channel", "general"], {"operator": "dm-including", "operand": "alice@example.com", "negated": True}],
    ]
    for narrow in narrows:
        assert_success(shared_live.owner.get("/messages", {**params, "narrow": narrow}))


def test_errors_follow_the_order_of_terms(shared_live):
    # The first bad term is reported; the channel/DM conflict is found when its second term comes.
    narrow_error(shared_live, [["is", "nonsense"], ["has", "nonsense"]], "unknown 'is' operand nonsense")
    narrow_error(shared_live, [["channel", "general"], ["dm", "ghost@example.com"]], BOTH)
    narrow_error(
        shared_live, [["dm", "ghost@example.com"], ["channel", "general"]], "unknown user in ghost@example.com"
    )
    narrow_error(shared_live, [["channel", "nowhere"], ["dm", "alice@example.com"]], "unknown channel nowhere")


def test_operator_errors_also_apply_to_message_ids(shared_live):
    params = {"message_ids": [shared_live.channel_message]}
    narrow_error(shared_live, [["is", "nonsense"]], "unknown 'is' operand nonsense", **params)
    narrow_error(shared_live, [["channel", "general"], ["is", "dm"]], BOTH, **params)
