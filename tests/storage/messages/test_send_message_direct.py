"""POST /messages to people: recipients by id or email, conversations, and the recipient errors."""

from __future__ import annotations

import pytest

from tests.support.helpers import assert_error, assert_success
from tests.support.send_helpers import message_events, send_direct, send_direct_ok, stored, stored_flags

MIXED = "Recipient lists may contain emails or user IDs, but not both."


@pytest.fixture
def alice_and_bob(live):
    """Two members with known emails."""
    alice = live.make_user(email="alice@example.com", full_name="Alice")
    bob = live.make_user(email="bob@example.com", full_name="Bob")
    return alice, bob


def receivers(live, message_id):
    return sorted(stored_flags(live, message_id))


def test_one_to_one_by_ids(live, alice_and_bob):
    alice, _ = alice_and_bob
    message_id = send_direct_ok(live.owner, [alice.id], "hi alice")
    row = stored(live, message_id)
    assert (row["channel_id"], row["topic"], row["content"]) == (None, "", "hi alice")
    assert receivers(live, message_id) == [live.owner.id, alice.id]


def test_by_emails_json_list(live, alice_and_bob):
    alice, bob = alice_and_bob
    message_id = send_direct_ok(live.owner, ["alice@example.com", "bob@example.com"])
    assert receivers(live, message_id) == [live.owner.id, alice.id, bob.id]


@pytest.mark.parametrize(
    "to", ["alice@example.com", "alice@example.com,bob@example.com", " ALICE@example.com , bob@example.com,"]
)
def test_by_comma_separated_emails(live, alice_and_bob, to):
    alice, bob = alice_and_bob
    expected = [live.owner.id, alice.id] + ([bob.id] if "bob" in to else [])
    assert receivers(live, send_direct_ok(live.owner, to)) == expected


def test_by_json_string_email(live, alice_and_bob):
    alice, _ = alice_and_bob
    assert receivers(live, send_direct_ok(live.owner, '"alice@example.com"')) == [live.owner.id, alice.id]


def test_by_dummy_api_email(live, alice_and_bob):
    alice, _ = alice_and_bob
    live.write(lambda tx: tx.execute("UPDATE users SET email_address_visibility = 5 WHERE id = ?", (alice.id,)))
    dummy = f"user{alice.id}@zulip.testserver"
    assert receivers(live, send_direct_ok(live.owner, [dummy])) == [live.owner.id, alice.id]


def test_conversation_recipient_is_the_same_whatever_the_order(live, alice_and_bob):
    alice, bob = alice_and_bob
    first = stored(live, send_direct_ok(live.owner, [alice.id, bob.id]))
    second = stored(live, send_direct_ok(live.owner, [bob.id, alice.id]))
    third = stored(live, send_direct_ok(alice, [bob.id, live.owner.id]))
    fourth = stored(live, send_direct_ok(bob, ["alice@example.com", "owner@example.com"]))
    assert first["recipient_id"] == second["recipient_id"] == third["recipient_id"] == fourth["recipient_id"]


def test_one_to_one_is_the_same_conversation_both_ways(live, alice_and_bob):
    alice, bob = alice_and_bob
    there = stored(live, send_direct_ok(live.owner, [alice.id]))
    back = stored(live, send_direct_ok(alice, [live.owner.id]))
    including_self = stored(live, send_direct_ok(alice, [alice.id, live.owner.id]))
    assert there["recipient_id"] == back["recipient_id"] == including_self["recipient_id"]
    group = stored(live, send_direct_ok(live.owner, [alice.id, bob.id]))
    assert group["recipient_id"] != there["recipient_id"]


def test_self_message(live, alice_and_bob):
    message_id = send_direct_ok(live.owner, [live.owner.id], "note to self")
    assert receivers(live, message_id) == [live.owner.id]
    other_self = stored(live, send_direct_ok(live.owner, ["owner@example.com"]))
    assert other_self["recipient_id"] == stored(live, message_id)["recipient_id"]


def test_duplicates_are_removed(live, alice_and_bob):
    alice, _ = alice_and_bob
    message_id = send_direct_ok(live.owner, [alice.id, alice.id, live.owner.id])
    assert receivers(live, message_id) == [live.owner.id, alice.id]
    message_id = send_direct_ok(live.owner, "alice@example.com,alice@example.com")
    assert receivers(live, message_id) == [live.owner.id, alice.id]


def test_display_recipient_in_the_event(live, alice_and_bob):
    alice, _ = alice_and_bob
    message_id = send_direct_ok(live.owner, [alice.id])
    [(event, audience)] = message_events(live, message_id)
    assert audience == [live.owner.id, alice.id]
    recipients = event["message"]["display_recipient"]
    assert [r["id"] for r in recipients] == [live.owner.id, alice.id]
    assert recipients[1] == {
        "id": alice.id,
        "email": "alice@example.com",
        "full_name": "Alice",
        "is_mirror_dummy": False,
    }
    assert event["message"]["type"] == "private"


# -- errors ------------------------------------------------------------------------------------------


def test_mixing_ids_and_emails(live, alice_and_bob):
    alice, _ = alice_and_bob
    assert_error(send_direct(live.owner, [alice.id, "bob@example.com"]), MIXED)
    assert_error(send_direct(live.owner, ["bob@example.com", alice.id]), MIXED)


@pytest.mark.parametrize("to", ["5", "true", '{"a": 1}', "[1.5]", "[null]", "[[1]]"])
def test_invalid_data_type_for_recipients(live, alice_and_bob, to):
    assert_error(send_direct(live.owner, to), "Invalid data type for recipients")


def test_unknown_user_id(live, alice_and_bob):
    alice, _ = alice_and_bob
    assert_error(send_direct(live.owner, [alice.id, 9999]), "Invalid user ID 9999")
    assert_error(send_direct(live.owner, [-3]), "Invalid user ID -3")


def test_unknown_email(live, alice_and_bob):
    assert_error(
        send_direct(live.owner, ["alice@example.com", "nobody@example.com"]), "Invalid email 'nobody@example.com'"
    )
    assert_error(send_direct(live.owner, "nobody@example.com"), "Invalid email 'nobody@example.com'")


def test_deactivated_recipient(live, alice_and_bob):
    alice, _ = alice_and_bob
    assert_success(live.owner.delete(f"/users/{alice.id}"))
    assert_error(send_direct(live.owner, [alice.id]), "'alice@example.com' is no longer using Zulip.")
    assert_error(send_direct(live.owner, "alice@example.com"), "'alice@example.com' is no longer using Zulip.")


@pytest.mark.parametrize("to", ["[]", "", ",", " , "])
def test_no_recipients(live, alice_and_bob, to):
    assert_error(send_direct(live.owner, to), "Message must have recipients")


def test_missing_to(live, alice_and_bob):
    response = live.owner.post("/messages", {"type": "direct", "content": "x"})
    assert_error(response, "Message must have recipients")


def test_errors_store_no_conversation(live, alice_and_bob):
    alice, _ = alice_and_bob
    count = live.read(lambda tx: tx.value("SELECT count(*) FROM direct_message_groups"))
    assert_error(send_direct(live.owner, [alice.id], " "), "Message must not be empty")
    assert live.read(lambda tx: tx.value("SELECT count(*) FROM direct_message_groups")) == count
