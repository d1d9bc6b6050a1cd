"""Emoji reactions: POST and DELETE /messages/{message_id}/reactions (spec 4.16, api-notes)."""

from __future__ import annotations

import pytest

from storage.model import flags
from storage.model.user import NOBODY
from storage.text import emoji
from tests.support.channel_helpers import archive, make_channel, subscribe
from tests.support.helpers import assert_error, assert_success, dummy, set_visibility
from tests.support.send_helpers import send_direct_ok, send_ok

INVALID_MESSAGE = "Invalid message(s)"


def react(client, message_id, **params):
    return client.post(f"/messages/{message_id}/reactions", params)


def unreact(client, message_id, **params):
    return client.delete(f"/messages/{message_id}/reactions", params)


def reactions_of(client, message_id):
    body = assert_success(client.get("/messages", {"message_ids": [message_id]}))
    [message] = body["messages"]
    return message["reactions"]


def reaction_events(live, before):
    return [(event, ids) for event, ids in live.events()[before:] if event["type"] == "reaction"]


def user_message_flags(live, user_id, message_id):
    sql = "SELECT flags FROM user_messages WHERE user_id = ? AND message_id = ?"
    return live.read(lambda tx: tx.value(sql, (user_id, message_id)))


def custom_emoji(live, name, deactivated=False):
    emoji_id = live.write(emoji.create_realm_emoji, name, live.owner.id)
    if deactivated:
        live.write(lambda tx: tx.execute("UPDATE realm_emoji SET deactivated = 1 WHERE id = ?", (emoji_id,)))
    return emoji_id


@pytest.fixture
def member_and_message(live):
    """A public channel "general" with the owner and a member subscribed, and one message in it."""
    member = live.make_user(full_name="Member")
    make_channel(live, "general", [live.owner.id, member.id])
    return member, send_ok(live.owner, "general")


# -- the emoji tables ---------------------------------------------------------------------------


def test_emoji_tables():
    # Zulip's names (storage/text/emoji_names.json), not the Unicode CLDR names.
    assert emoji.NAME_TO_CODE["thumbs_up"] == emoji.NAME_TO_CODE["+1"] == "1f44d"
    assert emoji.NAME_TO_CODE["heart"] == "2764"  # no variation selector
    assert emoji.NAME_TO_CODE["octopus"] == "1f419"
    assert emoji.NAME_TO_CODE["smile"] == "1f642"  # Zulip's smile is the slightly smiling face
    assert emoji.NAME_TO_CODE["big_smile"] == "1f604"
    assert emoji.CODE_TO_NAME["1f44d"] == "+1"  # the canonical name; thumbs_up is an alias
    assert emoji.CODE_TO_NAME["0023-20e3"] == "hash"
    assert emoji.emoji_code("👨‍👩‍👧") == "1f468-200d-1f469-200d-1f467"  # joiners are kept
    assert emoji.emoji_code("❤️") == "2764"
    assert len(emoji.CODE_TO_NAME) == 1847 and len(emoji.NAME_TO_CODE) == 2960
    assert all(name == name.lower() and " " not in name for name in emoji.NAME_TO_CODE)


# -- adding -------------------------------------------------------------------------------------


def test_add_by_name_shows_in_messages_with_user(live, member_and_message):
    member, message_id = member_and_message
    before = len(live.events())
    body = assert_success(react(member, message_id, emoji_name="octopus"))
    assert "ignored_parameters_unsupported" not in body
    expected = {
        "emoji_name": "octopus",
        "emoji_code": "1f419",
        "reaction_type": "unicode_emoji",
        "user_id": member.id,
        "user": {"user_id": member.id, "email": member.email, "full_name": "Member"},
    }
    assert reactions_of(live.owner, message_id) == [expected]
    [(event, user_ids)] = reaction_events(live, before)
    assert event == {"type": "reaction", "op": "add", "message_id": message_id, **expected}
    assert user_ids == sorted([live.owner.id, member.id])


def test_hidden_email_is_the_dummy_address(live, member_and_message):
    member, message_id = member_and_message
    set_visibility(live, member.id, NOBODY)
    before = len(live.events())
    assert_success(react(member, message_id, emoji_name="octopus"))
    [(event, _)] = reaction_events(live, before)
    assert event["user"]["email"] == dummy(member.id)
    assert reactions_of(live.owner, message_id)[0]["user"]["email"] == dummy(member.id)


def test_reactions_oldest_first_and_votes_reuse_the_name(live, member_and_message):
    member, message_id = member_and_message
    third = live.make_user()
    assert_success(react(member, message_id, emoji_name="+1"))
    assert_success(react(live.owner, message_id, emoji_name="heart"))
    # Same code under another name: a vote for the existing reaction, which keeps its name.
    assert_success(react(third, message_id, emoji_name="thumbs_up"))
    reactions = reactions_of(live.owner, message_id)
    assert [(r["user_id"], r["emoji_name"], r["emoji_code"]) for r in reactions] == [
        (member.id, "+1", "1f44d"),
        (live.owner.id, "heart", "2764"),
        (third.id, "+1", "1f44d"),
    ]


def test_vote_with_code_skips_the_name_check(live, member_and_message):
    member, message_id = member_and_message
    assert_success(react(member, message_id, emoji_name="thumbs_up"))
    before = len(live.events())
    assert_success(
        react(live.owner, message_id, emoji_name="whatever", emoji_code="1f44d", reaction_type="unicode_emoji")
    )
    [(event, _)] = reaction_events(live, before)
    assert event["emoji_name"] == "thumbs_up"


def test_add_with_code_and_type(live, member_and_message):
    _, message_id = member_and_message
    assert_success(react(live.owner, message_id, emoji_name="tada", emoji_code="1f389", reaction_type="unicode_emoji"))
    # A code without a type is a Unicode emoji code.
    assert_success(react(live.owner, message_id, emoji_name="joy", emoji_code="1f602"))
    assert [r["emoji_code"] for r in reactions_of(live.owner, message_id)] == ["1f389", "1f602"]


def test_reaction_already_exists(live, member_and_message):
    member, message_id = member_and_message
    assert_success(react(member, message_id, emoji_name="thumbs_up"))
    assert_error(react(member, message_id, emoji_name="+1"), "Reaction already exists.", "REACTION_ALREADY_EXISTS")
    assert_success(react(member, message_id, emoji_name="thumbs_down"))


@pytest.mark.parametrize(
    ("params", "msg"),
    [
        ({"emoji_name": "no_such_emoji"}, "Emoji 'no_such_emoji' does not exist"),
        ({"emoji_name": "octopus", "emoji_code": "fffff", "reaction_type": "unicode_emoji"}, "Invalid emoji code."),
        ({"emoji_name": "octopus", "emoji_code": "2764-fe0f"}, "Invalid emoji code."),
        ({"emoji_name": "heart", "emoji_code": "1f419", "reaction_type": "unicode_emoji"}, "Invalid emoji name."),
        ({"emoji_name": "octopus", "emoji_code": "1f419", "reaction_type": "animated"}, "Invalid emoji type."),
        ({"emoji_name": "octopus", "reaction_type": "animated"}, "Invalid emoji type."),
        ({"emoji_name": "zulip", "emoji_code": "zulip2", "reaction_type": "zulip_extra_emoji"}, "Invalid emoji code."),
        ({"emoji_name": "zulip2", "emoji_code": "zulip", "reaction_type": "zulip_extra_emoji"}, "Invalid emoji name."),
        ({"emoji_name": "x", "emoji_code": "999", "reaction_type": "realm_emoji"}, "Invalid custom emoji."),
        ({"emoji_name": "x", "emoji_code": "abc", "reaction_type": "realm_emoji"}, "Invalid custom emoji."),
    ],
)
def test_add_errors(live, member_and_message, params, msg):
    member, message_id = member_and_message
    before = len(live.events())
    assert_error(react(member, message_id, **params), msg)
    assert reactions_of(member, message_id) == []
    assert reaction_events(live, before) == []


def test_add_requires_emoji_name(live, member_and_message):
    _, message_id = member_and_message
    response = react(live.owner, message_id, emoji_code="1f419")
    body = assert_error(response, "Missing 'emoji_name' argument", "REQUEST_VARIABLE_MISSING")
    assert body["var_name"] == "emoji_name"


def test_add_to_unknown_message(live, member_and_message):
    _, message_id = member_and_message
    for bad in (message_id + 100, 0, 999_999_999_999_999_999):
        assert_error(react(live.owner, bad, emoji_name="octopus"), INVALID_MESSAGE)


def test_extra_emoji(live, member_and_message):
    member, message_id = member_and_message
    assert_success(react(member, message_id, emoji_name="zulip"))
    # The spec's spelling of the type is accepted; the stored and sent one is zulip_extra_emoji.
    before = len(live.events())
    assert_success(
        react(live.owner, message_id, emoji_name="zulip", emoji_code="zulip", reaction_type="service_extra_emoji")
    )
    [(event, _)] = reaction_events(live, before)
    assert (event["emoji_name"], event["emoji_code"], event["reaction_type"]) == ("zulip", "zulip", "zulip_extra_emoji")
    reactions = reactions_of(live.owner, message_id)
    assert {(r["emoji_code"], r["reaction_type"]) for r in reactions} == {("zulip", "zulip_extra_emoji")}
    assert_success(unreact(member, message_id, emoji_code="zulip", reaction_type="service_extra_emoji"))
    assert_success(unreact(live.owner, message_id, emoji_name="zulip"))
    assert reactions_of(live.owner, message_id) == []


# -- custom emoji -------------------------------------------------------------------------------


def test_custom_emoji_by_name_and_code(live, member_and_message):
    member, message_id = member_and_message
    party = custom_emoji(live, "party_parrot")
    assert_success(react(member, message_id, emoji_name="party_parrot"))
    assert_success(
        react(live.owner, message_id, emoji_name="party_parrot", emoji_code=str(party), reaction_type="realm_emoji")
    )
    reactions = reactions_of(live.owner, message_id)
    assert [(r["emoji_name"], r["emoji_code"], r["reaction_type"]) for r in reactions] == [
        ("party_parrot", str(party), "realm_emoji")
    ] * 2


def test_custom_emoji_shadows_unicode_name(live, member_and_message):
    _, message_id = member_and_message
    octopus = custom_emoji(live, "octopus")
    assert_success(react(live.owner, message_id, emoji_name="octopus"))
    [reaction] = reactions_of(live.owner, message_id)
    assert (reaction["emoji_code"], reaction["reaction_type"]) == (str(octopus), "realm_emoji")


def test_custom_emoji_errors(live, member_and_message):
    member, message_id = member_and_message
    party = custom_emoji(live, "party_parrot")
    gone = custom_emoji(live, "old_logo", deactivated=True)
    wrong_name = react(member, message_id, emoji_name="parrot", emoji_code=str(party), reaction_type="realm_emoji")
    assert_error(wrong_name, "Invalid custom emoji name.")
    old = react(member, message_id, emoji_name="old_logo", emoji_code=str(gone), reaction_type="realm_emoji")
    assert_error(old, "This custom emoji has been deactivated.")
    # By name, a deactivated custom emoji is not found at all.
    assert_error(react(member, message_id, emoji_name="old_logo"), "Emoji 'old_logo' does not exist")


def test_deactivated_custom_emoji_reaction_can_be_removed(live, member_and_message):
    member, message_id = member_and_message
    logo = custom_emoji(live, "logo")
    assert_success(react(member, message_id, emoji_name="logo"))
    live.write(lambda tx: tx.execute("UPDATE realm_emoji SET deactivated = 1 WHERE id = ?", (logo,)))
    assert_success(unreact(member, message_id, emoji_code=str(logo), reaction_type="realm_emoji"))
    assert reactions_of(member, message_id) == []


# -- who may react --------------------------------------------------------------------------------


def test_reacting_to_history_creates_historical_row(live, member_and_message):
    member, message_id = member_and_message
    outsider = live.make_user(full_name="Outsider")  # not subscribed to the public channel
    assert user_message_flags(live, outsider.id, message_id) is None
    before = len(live.events())
    assert_success(react(outsider, message_id, emoji_name="octopus"))
    assert user_message_flags(live, outsider.id, message_id) == flags.HISTORICAL | flags.READ
    [(event, user_ids)] = reaction_events(live, before)
    assert user_ids == sorted([live.owner.id, member.id, outsider.id])
    # The member already had a row: it is left as it was (unread, not historical).
    assert_success(react(member, message_id, emoji_name="octopus"))
    assert user_message_flags(live, member.id, message_id) == 0
    # The outsider now follows the message: later reactions reach them too.
    before = len(live.events())
    assert_success(react(live.owner, message_id, emoji_name="heart"))
    [(_, user_ids)] = reaction_events(live, before)
    assert outsider.id in user_ids


def test_audience_is_users_with_rows_only(live, member_and_message):
    member, message_id = member_and_message
    bystander = live.make_user()
    before = len(live.events())
    assert_success(react(member, message_id, emoji_name="octopus"))
    [(_, user_ids)] = reaction_events(live, before)
    assert bystander.id not in user_ids


def test_private_channel_not_reactable_by_outsiders(live):
    member = live.make_user()
    outsider = live.make_user()
    admin = live.make_user(role="admin")
    make_channel(live, "secret", [live.owner.id, member.id], invite_only=True)
    message_id = send_ok(live.owner, "secret")
    for client in (outsider, admin):
        assert_error(react(client, message_id, emoji_name="octopus"), INVALID_MESSAGE)
        assert_error(unreact(client, message_id, emoji_name="octopus"), INVALID_MESSAGE)
    assert_success(react(member, message_id, emoji_name="octopus"))


def test_protected_history_needs_a_row(live):
    make_channel(live, "secret", [live.owner.id], invite_only=True)
    message_id = send_ok(live.owner, "secret")
    late = live.make_user()  # subscribed after the message was sent
    assert_success(subscribe(live.owner, ["secret"], principals=[late.id]))
    assert_error(react(late, message_id, emoji_name="octopus"), INVALID_MESSAGE)


def test_guest_cannot_react_to_unsubscribed_channel(live, member_and_message):
    _, message_id = member_and_message
    guest = live.make_user(role="guest")
    assert_error(react(guest, message_id, emoji_name="octopus"), INVALID_MESSAGE)


def test_archived_channel_messages_are_invalid(live, member_and_message):
    member, message_id = member_and_message
    assert_success(react(member, message_id, emoji_name="octopus"))
    archive(live, live.read(lambda tx: tx.value("SELECT channel_id FROM messages WHERE id = ?", (message_id,))))
    assert_error(react(member, message_id, emoji_name="heart"), INVALID_MESSAGE)
    assert_error(unreact(member, message_id, emoji_name="octopus"), INVALID_MESSAGE)


def test_direct_messages(live):
    friend = live.make_user()
    stranger = live.make_user()
    message_id = send_direct_ok(live.owner, [friend.id], "psst")
    before = len(live.events())
    assert_success(react(friend, message_id, emoji_name="heart"))
    [(_, user_ids)] = reaction_events(live, before)
    assert user_ids == sorted([live.owner.id, friend.id])
    assert_error(react(stranger, message_id, emoji_name="heart"), INVALID_MESSAGE)
    assert_error(unreact(stranger, message_id, emoji_name="heart"), INVALID_MESSAGE)


# -- removing -------------------------------------------------------------------------------------


def test_remove_by_name_and_event(live, member_and_message):
    member, message_id = member_and_message
    assert_success(react(member, message_id, emoji_name="+1"))
    assert_success(react(live.owner, message_id, emoji_name="+1"))
    before = len(live.events())
    # Removing by another name of the same emoji finds the reaction; the event carries its name.
    assert_success(unreact(member, message_id, emoji_name="thumbs_up"))
    [(event, user_ids)] = reaction_events(live, before)
    assert event == {
        "type": "reaction",
        "op": "remove",
        "message_id": message_id,
        "emoji_name": "+1",
        "emoji_code": "1f44d",
        "reaction_type": "unicode_emoji",
        "user_id": member.id,
        "user": {"user_id": member.id, "email": member.email, "full_name": "Member"},
    }
    assert user_ids == sorted([live.owner.id, member.id])
    assert [r["user_id"] for r in reactions_of(live.owner, message_id)] == [live.owner.id]


def test_remove_by_code(live, member_and_message):
    member, message_id = member_and_message
    assert_success(react(member, message_id, emoji_name="octopus"))
    assert_success(unreact(member, message_id, emoji_code="1f419"))
    assert_success(react(member, message_id, emoji_name="octopus"))
    assert_success(unreact(member, message_id, emoji_code="1f419", reaction_type="unicode_emoji", emoji_name="ignored"))
    assert reactions_of(member, message_id) == []


def test_remove_custom_emoji_by_name(live, member_and_message):
    member, message_id = member_and_message
    custom_emoji(live, "party_parrot")
    assert_success(react(member, message_id, emoji_name="party_parrot"))
    assert_success(unreact(member, message_id, emoji_name="party_parrot"))
    assert reactions_of(member, message_id) == []


def test_remove_errors(live, member_and_message):
    member, message_id = member_and_message
    assert_success(react(live.owner, message_id, emoji_name="octopus"))
    before = len(live.events())
    neither = "At least one of the following arguments must be present: emoji_name, emoji_code"
    assert_error(unreact(member, message_id), neither)
    assert_error(unreact(member, message_id, emoji_name="no_such_emoji"), "Emoji 'no_such_emoji' does not exist")
    # Spec 4.16: a code of no emoji is a BAD_REQUEST of its own ...
    assert_error(unreact(member, message_id, emoji_code="fffff"), "Invalid emoji code.")
    assert_error(
        unreact(member, message_id, emoji_code="zulip2", reaction_type="zulip_extra_emoji"), "Invalid emoji code."
    )
    assert_error(unreact(member, message_id, emoji_code="999", reaction_type="realm_emoji"), "Invalid emoji code.")
    assert_error(unreact(member, message_id, emoji_code="1f419", reaction_type="animated"), "Invalid emoji type.")
    # ... and a valid emoji the user has not reacted with (another user's reaction) does not exist.
    missing = ("Reaction doesn't exist.", "REACTION_DOES_NOT_EXIST")
    assert_error(unreact(member, message_id, emoji_name="octopus"), *missing)
    assert_error(unreact(member, message_id, emoji_code="2764"), *missing)
    assert_error(unreact(member, message_id, emoji_code="zulip", reaction_type="zulip_extra_emoji"), *missing)
    assert_error(unreact(live.owner, message_id + 100, emoji_name="octopus"), INVALID_MESSAGE)
    assert reaction_events(live, before) == []
    assert len(reactions_of(member, message_id)) == 1


# -- the official client ----------------------------------------------------------------------------


def test_zulip_client_add_and_remove(zulip_client, live, member_and_message):
    _, message_id = member_and_message
    added = zulip_client.add_reaction({"message_id": message_id, "emoji_name": "octopus"})
    assert added["result"] == "success", added
    full = {"message_id": message_id, "emoji_name": "joy", "emoji_code": "1f602", "reaction_type": "unicode_emoji"}
    assert zulip_client.add_reaction(full)["result"] == "success"
    again = zulip_client.add_reaction(full)
    assert (again["result"], again["code"]) == ("error", "REACTION_ALREADY_EXISTS")
    assert [r["emoji_name"] for r in reactions_of(live.owner, message_id)] == ["octopus", "joy"]
    assert zulip_client.remove_reaction(full)["result"] == "success"
    assert zulip_client.remove_reaction({"message_id": message_id, "emoji_name": "octopus"})["result"] == "success"
    gone = zulip_client.remove_reaction(full)
    assert (gone["result"], gone["code"], gone["msg"]) == (
        "error",
        "REACTION_DOES_NOT_EXIST",
        "Reaction doesn't exist.",
    )
    assert reactions_of(live.owner, message_id) == []
