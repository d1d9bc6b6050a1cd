"""Channels by id: GET /streams, GET /streams/{id}, members, GET /get_stream_id, DELETE (archive)."""

from __future__ import annotations

import pytest

from tests.support.helpers import assert_error, assert_success, make_bot


def create_channel(client, name, subscribers=(), **params):
    """Create a channel through the API; return its id."""
    body = {"name": name, "subscribers": list(subscribers), **params}
    return assert_success(client.post("/channels/create", body))["id"]


def stream_names(client, **params):
    return [s["name"] for s in assert_success(client.get("/streams", params))["streams"]]


def events_after(live, count, event_type="stream"):
    """(event, audience) pairs of one type published after the first `count` events."""
    return [(event, set(ids)) for event, ids in live.events()[count:] if event["type"] == event_type]


@pytest.fixture
def three_channels(live):
    """An owner, a member, a guest; a public, a private (owner and member) and a secret channel (owner)."""
    member = live.make_user()
    guest = live.make_user("guest")
    ids = {
        "public": create_channel(live.owner, "public"),
        "Private": create_channel(live.owner, "Private", [live.owner.id, member.id], invite_only=True),
        "secret": create_channel(live.owner, "secret", [live.owner.id], invite_only=True),
    }
    return member, guest, ids


# -- GET /streams ------------------------------------------------------------------------------


def test_list_defaults_to_public_and_subscribed_sorted_by_name(live, three_channels):
    member, guest, ids = three_channels
    assert stream_names(member) == ["Private", "public"]
    assert stream_names(live.owner) == ["Private", "public", "secret"]
    # Guests never get public channels they are not subscribed to.
    assert stream_names(guest) == []


def test_list_objects_have_the_channel_fields(live, three_channels):
    member, _, ids = three_channels
    stream = next(s for s in assert_success(member.get("/streams"))["streams"] if s["name"] == "public")
    assert stream["stream_id"] == ids["public"]
    assert stream["creator_id"] == live.owner.id
    assert stream["invite_only"] is False and stream["is_archived"] is False
    assert stream["subscriber_count"] == 0
    assert stream["topics_policy"] == "inherit"
    assert "is_default" not in stream
    for field in ("rendered_description", "date_created", "can_administer_channel_group", "stream_post_policy"):
        assert field in stream


def test_list_sources_can_be_turned_off(live, three_channels):
    member, _, _ = three_channels
    assert stream_names(member, include_public=False) == ["Private"]
    assert stream_names(member, include_subscribed=False) == ["public"]
    assert stream_names(member, include_public=False, include_subscribed=False) == []


def test_include_all_lists_what_the_user_may_see(live, three_channels):
    member, guest, _ = three_channels
    admin = live.make_user("admin")
    assert stream_names(admin, include_all=True) == ["Private", "public", "secret"]
    assert stream_names(admin, include_all_active=True) == ["Private", "public", "secret"]
    assert stream_names(member, include_all=True) == ["Private", "public"]
    assert stream_names(guest, include_all=True) == []


def test_include_all_under_both_names_is_confusing(live, three_channels):
    body = assert_error(
        live.owner.get("/streams", {"include_all": True, "include_all_active": True}),
        "Can't decide between 'include_all' and 'include_all_active' arguments",
        "REQUEST_CONFUSING_VAR",
    )
    assert (body["var_name1"], body["var_name2"]) == ("include_all", "include_all_active")


def test_list_parameters_are_json_booleans(live):
    assert_error(live.owner.get("/streams", {"include_public": "yes"}), "include_public is not valid JSON")
    assert_error(live.owner.get("/streams", {"include_default": 1}), "include_default is not a boolean")


def test_include_default_marks_default_channels(live, three_channels):
    member, _, ids = three_channels
    create_channel(live.owner, "welcome", is_default_stream=True)
    streams = assert_success(member.get("/streams", {"include_default": True}))["streams"]
    assert {s["name"]: s["is_default"] for s in streams} == {"Private": False, "public": False, "welcome": True}


def test_include_can_access_content(live, three_channels):
    member, _, ids = three_channels
    create_channel(
        live.owner,
        "joinable",
        invite_only=True,
        can_subscribe_group={"direct_members": [member.id], "direct_subgroups": []},
    )
    admin = live.make_user("admin")
    assert stream_names(member, include_can_access_content=True) == ["Private", "joinable", "public"]
    # Administrators may see every private channel's settings but not its content.
    assert stream_names(admin, include_can_access_content=True) == ["public"]


def test_include_web_public_reaches_guests(live, three_channels):
    _, guest, _ = three_channels
    live.write(lambda tx: tx.execute("UPDATE realm SET enable_spectator_access = 1"))
    create_channel(live.owner, "open to all", is_web_public=True)
    assert stream_names(guest) == []
    assert stream_names(guest, include_web_public=True) == ["open to all"]


def test_include_owner_subscribed_for_bots(live, three_channels):
    member, _, _ = three_channels
    bot = live.client_for(live.user(make_bot(live, member.id)))
    assert stream_names(bot) == ["public"]
    assert stream_names(bot, include_owner_subscribed=True) == ["Private", "public"]
    # Only bots have owners: for a human the flag adds nothing.
    assert stream_names(member, include_public=False, include_owner_subscribed=True) == ["Private"]


def test_archived_channels_only_when_asked(live, three_channels):
    member, _, ids = three_channels
    assert_success(live.owner.delete(f"/streams/{ids['public']}"))
    assert stream_names(member) == ["Private"]
    assert stream_names(member, exclude_archived=False) == ["Private", "public"]


# -- GET /streams/{id}, members, get_stream_id --------------------------------------------------


def test_get_stream_by_id(live, three_channels):
    member, _, ids = three_channels
    stream = assert_success(member.get(f"/streams/{ids['Private']}"))["stream"]
    assert (stream["name"], stream["invite_only"], stream["subscriber_count"]) == ("Private", True, 2)
    # Administrators see a private channel's settings without being subscribed.
    admin = live.make_user("admin")
    assert assert_success(admin.get(f"/streams/{ids['secret']}"))["stream"]["name"] == "secret"


@pytest.mark.parametrize("path", ["/streams/{}", "/streams/{}/members"])
def test_unknown_and_hidden_channels_answer_alike(live, three_channels, path):
    member, guest, ids = three_channels
    for client, channel_id in ((member, 999999), (member, 0), (member, ids["secret"]), (guest, ids["public"])):
        assert_error(client.get(path.format(channel_id)), "Invalid channel ID")


def test_stream_members(live, three_channels):
    member, _, ids = three_channels
    assert assert_success(member.get(f"/streams/{ids['Private']}/members"))["subscribers"] == sorted(
        [live.owner.id, member.id]
    )
    assert assert_success(member.get(f"/streams/{ids['public']}/members"))["subscribers"] == []


def test_get_stream_id(live, three_channels):
    member, _, ids = three_channels
    assert assert_success(member.get("/get_stream_id", {"stream": "private"}))["stream_id"] == ids["Private"]
    assert_error(member.get("/get_stream_id", {"stream": "nope"}), "Invalid channel name 'nope'")
    assert_error(member.get("/get_stream_id", {"stream": "secret"}), "Invalid channel name 'secret'")
    body = assert_error(member.get("/get_stream_id"), "Missing 'stream' argument", "REQUEST_VARIABLE_MISSING")
    assert body["var_name"] == "stream"


def test_get_stream_id_of_archived_channel(live, three_channels):
    member, _, ids = three_channels
    assert_success(live.owner.delete(f"/streams/{ids['public']}"))
    assert_error(member.get("/get_stream_id", {"stream": "public"}), "Invalid channel name 'public'")


def test_non_digit_ids_are_not_routes(live):
    response = live.owner.get("/streams/abc")
    assert response.status_code == 404


# -- DELETE /streams/{id} ----------------------------------------------------------------------


def test_archive_channel(live, three_channels):
    member, _, ids = three_channels
    count = len(live.events())
    assert_success(live.owner.delete(f"/streams/{ids['Private']}"))
    stream = assert_success(member.get(f"/streams/{ids['Private']}"))["stream"]
    assert stream["is_archived"] is True
    # Subscriptions stay: the members still see the channel they were in.
    assert assert_success(member.get(f"/streams/{ids['Private']}/members"))["subscribers"] == sorted(
        [live.owner.id, member.id]
    )
    (update, update_to), (delete, delete_to) = events_after(live, count)
    assert update == {
        "type": "stream",
        "op": "update",
        "stream_id": ids["Private"],
        "name": "Private",
        "property": "is_archived",
        "value": True,
    }
    # Zulip's shape since feature level 343: stream_ids, and the deprecated streams with only stream_id.
    assert delete == {
        "type": "stream", "op": "delete", "streams": [{"stream_id": ids["Private"]}], "stream_ids": [ids["Private"]],
        "for_archiving": True,
    }  # fmt: skip
    assert update_to == delete_to == {live.owner.id, member.id}


def test_archive_twice(live, three_channels):
    _, _, ids = three_channels
    assert_success(live.owner.delete(f"/streams/{ids['public']}"))
    assert_error(live.owner.delete(f"/streams/{ids['public']}"), "Channel is already deactivated")


def test_archive_default_channel_removes_it_from_defaults(live):
    member = live.make_user()
    guest = live.make_user("guest")
    channel_id = create_channel(live.owner, "welcome", is_default_stream=True)
    count = len(live.events())
    assert_success(live.owner.delete(f"/streams/{channel_id}"))
    [(event, audience)] = events_after(live, count, "default_streams")
    assert event["default_streams"] == [] and audience == {live.owner.id, member.id}
    assert guest.id not in audience
    streams = assert_success(live.owner.get("/streams", {"include_default": True, "exclude_archived": False}))
    assert [s["is_default"] for s in streams["streams"]] == [False]


def test_archive_unknown_channel(live):
    assert_error(live.owner.delete("/streams/999999"), "Invalid channel ID")


ROLES = ("owner", "admin", "moderator", "member", "guest", "channel_admin")
CANNOT_ADMINISTER = "You do not have permission to administer this channel."


def actor(live, role, channel_admin):
    return {"owner": live.owner, "channel_admin": channel_admin}.get(role) or live.make_user(role)


@pytest.mark.parametrize(
    ("role", "public_error", "private_error"),
    [
        ("owner", None, None),
        ("admin", None, None),
        ("moderator", CANNOT_ADMINISTER, "Invalid channel ID"),
        ("member", CANNOT_ADMINISTER, "Invalid channel ID"),
        ("guest", "Invalid channel ID", "Invalid channel ID"),
        ("channel_admin", None, None),
    ],
)
def test_archive_permissions(live, role, public_error, private_error):
    channel_admin = live.make_user()
    administrators = {"direct_members": [live.owner.id, channel_admin.id], "direct_subgroups": []}
    public = create_channel(live.owner, "public", can_administer_channel_group=administrators)
    private = create_channel(live.owner, "private", invite_only=True, can_administer_channel_group=administrators)
    client = actor(live, role, channel_admin)
    for channel_id, error in ((public, public_error), (private, private_error)):
        response = client.delete(f"/streams/{channel_id}")
        if error is None:
            assert_success(response)
        else:
            assert_error(response, error)


def test_subscribed_non_administrators_learn_they_may_not(live):
    member = live.make_user()
    guest = live.make_user("guest")
    private = create_channel(live.owner, "private", [member.id, guest.id], invite_only=True)
    for client in (member, guest):
        assert_error(client.delete(f"/streams/{private}"), CANNOT_ADMINISTER)
        assert_error(client.patch(f"/streams/{private}", {"description": "x"}), CANNOT_ADMINISTER)


# -- private-channel isolation -----------------------------------------------------------------


def test_outsider_learns_nothing_about_a_private_channel(live):
    insider = live.make_user()
    outsider = live.make_user()
    secret = create_channel(live.owner, "secret plans", [insider.id], invite_only=True)
    missing = 999999
    for flags in ({}, {"include_all": True}, {"include_can_access_content": True}, {"exclude_archived": False}):
        assert "secret plans" not in stream_names(outsider, **flags)
    for path in ("/streams/{}", "/streams/{}/members"):
        hidden, absent = outsider.get(path.format(secret)), outsider.get(path.format(missing))
        assert (hidden.status_code, hidden.json()) == (absent.status_code, absent.json())
    hidden = outsider.get("/get_stream_id", {"stream": "secret plans"}).json()
    absent = outsider.get("/get_stream_id", {"stream": "no plans"}).json()
    assert hidden["msg"].replace("secret", "no") == absent["msg"] and hidden["code"] == absent["code"]
    for response in (outsider.patch(f"/streams/{secret}", {"new_name": "x"}), outsider.delete(f"/streams/{secret}")):
        assert_error(response, "Invalid channel ID")
    count = len(live.events())
    assert_success(live.owner.patch(f"/streams/{secret}", {"new_name": "still secret", "description": "shh"}))
    assert_success(live.owner.delete(f"/streams/{secret}"))
    events = events_after(live, count)
    assert len(events) == 4
    for _, audience in events:
        assert outsider.id not in audience and insider.id in audience and live.owner.id in audience


# -- the zulip client --------------------------------------------------------------------------


def test_zulip_client_manages_channels(zulip_client, live):
    member = live.make_user()
    channel_id = create_channel(live.owner, "devel", [live.owner.id, member.id])
    result = zulip_client.get_streams(include_public=True, include_default=True)
    assert result["result"] == "success", result
    assert [(s["name"], s["is_default"]) for s in result["streams"]] == [("devel", False)]
    assert zulip_client.get_stream_id("Devel") == {"result": "success", "msg": "", "stream_id": channel_id}
    assert zulip_client.get_subscribers(stream="devel")["subscribers"] == sorted([live.owner.id, member.id])
    result = zulip_client.update_stream({"stream_id": channel_id, "new_name": "development", "description": "**Code**"})
    assert result["result"] == "success", result
    stream = assert_success(live.owner.get(f"/streams/{channel_id}"))["stream"]
    assert (stream["name"], stream["rendered_description"]) == ("development", "<p><strong>Code</strong></p>")
    assert zulip_client.delete_stream(channel_id)["result"] == "success"
    assert zulip_client.get_streams()["streams"] == []
    assert zulip_client.delete_stream(channel_id) == {
        "result": "error",
        "msg": "Channel is already deactivated",
        "code": "BAD_REQUEST",
    }
    assert zulip_client.get_stream_id("nowhere")["msg"] == "Invalid channel name 'nowhere'"
