"""Drafts: GET/POST /drafts, PATCH/DELETE /drafts/{id}, and the synchronization setting (PATCH /settings)."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import archive, make_channel
from tests.support.helpers import assert_error, assert_success, make_bot

DISABLED = "User has disabled synchronizing drafts."
NOT_FOUND = "Draft does not exist"


def draft(type="", to=(), topic="", content="Hello", **extra):
    return {"type": type, "to": list(to), "topic": topic, "content": content, **extra}


def create(client, *drafts):
    return assert_success(client.post("/drafts", {"drafts": list(drafts)}))["ids"]


def listed(client):
    body = assert_success(client.get("/drafts"))
    assert body["count"] == len(body["drafts"])
    return body["drafts"]


def events_after(live, count, event_type="drafts"):
    return [(event, ids) for event, ids in live.events()[count:] if event["type"] == event_type]


def set_sync(client, value):
    return assert_success(client.patch("/settings", {"enable_drafts_synchronization": value}))


@pytest.fixture
def channel(live):
    return make_channel(live, "Denmark", [live.owner.id])


# -- creating and listing ---------------------------------------------------------------------


def test_create_every_kind_and_list(live, channel):
    alice, bob = live.make_user(), live.make_user()
    now = int(live.clock.now)
    count = len(live.events())
    ids = create(
        live.owner,
        draft("stream", [channel], "greetings", "To the channel"),
        draft("private", [alice.id], content="One to one"),
        draft("private", [bob.id, alice.id, live.owner.id, bob.id], content="Group"),
        draft("private", [live.owner.id], content="Note to self"),
        draft("", [alice.id], "ignored topic", "Unaddressed"),
        draft("private", [], "ignored", "Nobody yet"),
    )
    assert len(ids) == 6 and ids == sorted(ids)
    expected = [
        {"id": ids[0], "type": "stream", "to": [channel], "topic": "greetings", "content": "To the channel"},
        {"id": ids[1], "type": "private", "to": [alice.id], "topic": "", "content": "One to one"},
        {"id": ids[2], "type": "private", "to": sorted([alice.id, bob.id]), "topic": "", "content": "Group"},
        {"id": ids[3], "type": "private", "to": [live.owner.id], "topic": "", "content": "Note to self"},
        {"id": ids[4], "type": "", "to": [], "topic": "", "content": "Unaddressed"},
        # A private draft without users is stored and shown as unaddressed, as Zulip does.
        {"id": ids[5], "type": "", "to": [], "topic": "", "content": "Nobody yet"},
    ]
    expected = [{**d, "timestamp": now} for d in expected]
    assert listed(live.owner) == expected
    assert events_after(live, count) == [({"type": "drafts", "op": "add", "drafts": expected}, [live.owner.id])]


def test_private_draft_to_self_and_other_is_one_to_one(live):
    alice = live.make_user()
    [draft_id] = create(live.owner, draft("private", [live.owner.id, alice.id]))
    assert listed(live.owner)[0]["to"] == [alice.id]
    assert listed(live.owner)[0]["id"] == draft_id


def test_timestamps(live):
    live.clock.advance(0.75)
    ids = create(
        live.owner,
        draft(content="given", timestamp=1_500_000_000),
        draft(content="float", timestamp=1_600_000_000.9),
        draft(content="absent"),
        draft(content="null", timestamp=None),
        draft(content="zero", timestamp=0),
    )
    stamps = {d["id"]: d["timestamp"] for d in listed(live.owner)}
    assert [stamps[i] for i in ids] == [1_500_000_000, 1_600_000_000, int(live.clock.now), int(live.clock.now), 0]


@pytest.mark.parametrize("timestamp", [-1, -0.5])
def test_negative_timestamp(live, timestamp):
    assert_error(
        live.owner.post("/drafts", {"drafts": [draft(timestamp=timestamp)]}), "Timestamp must not be negative."
    )


def test_timestamp_beyond_year_9999(live):
    response = live.owner.post("/drafts", {"drafts": [draft(timestamp=253_402_300_800)]})
    assert_error(response, 'drafts[0]["timestamp"] is too large')


def test_listed_by_last_edit_time_then_id(live):
    late, early, tie_a, tie_b = create(
        live.owner,
        draft(content="late", timestamp=300),
        draft(content="early", timestamp=100),
        draft(content="tie a", timestamp=200),
        draft(content="tie b", timestamp=200),
    )
    assert [d["id"] for d in listed(live.owner)] == [early, tie_a, tie_b, late]
    assert_success(live.owner.patch(f"/drafts/{early}", {"draft": draft(content="edited", timestamp=400)}))
    assert [d["id"] for d in listed(live.owner)] == [tie_a, tie_b, late, early]


def test_topic_truncated_not_stripped_and_content_normalized(live, channel):
    create(
        live.owner,
        draft("stream", [channel], "  " + "t" * 70, "\n\n  body  \n\n"),
        draft("private", [live.owner.id], "a topic for a direct draft", "x" * 10_050),
    )
    first, second = listed(live.owner)
    assert first["topic"] == "  " + "t" * 55 + "..."
    assert first["content"] == "body"
    assert second["topic"] == ""
    assert len(second["content"]) == 10_000 and second["content"].endswith("\n[message truncated]")


def test_drafts_parameter_is_optional(live):
    # The spec makes `drafts` optional (Zulip requires it): nothing is created, nothing is sent.
    count = len(live.events())
    assert assert_success(live.owner.post("/drafts"))["ids"] == []
    assert assert_success(live.owner.post("/drafts", {"drafts": []}))["ids"] == []
    assert events_after(live, count) == []


def test_drafts_are_per_user(live):
    alice = live.make_user()
    create(live.owner, draft(content="owner's"))
    create(alice, draft(content="alice's"))
    assert [d["content"] for d in listed(live.owner)] == ["owner's"]
    assert [d["content"] for d in listed(alice)] == ["alice's"]


# -- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("drafts", "msg"),
    [
        ("[{", "drafts is not valid JSON"),
        ({"type": ""}, "drafts is not a list"),
        ([[]], "drafts[0] is not a dict"),
        ([draft(type="channel")], 'Invalid drafts[0]["type"]'),
        ([draft(), draft(type="direct")], 'Invalid drafts[1]["type"]'),
        ([{"type": "", "to": [], "content": "x"}], 'drafts[0]["topic"] field is missing: Field required'),
        ([{"to": [], "topic": "", "content": "x"}], 'drafts[0]["type"] field is missing: Field required'),
        ([draft(id=5)], 'Argument "id" at drafts[0]["id"] is unexpected'),
        ([{**draft(), "to": 5}], 'drafts[0]["to"] is not a list'),
        ([draft(to=["5"])], 'drafts[0]["to"][0] is not an integer'),
        ([draft(topic=5)], 'drafts[0]["topic"] is not a string'),
        ([draft(content=None)], 'drafts[0]["content"] is not a string'),
        ([draft(timestamp="now")], 'drafts[0]["timestamp"] is not an integer'),
        ([draft(content="")], 'drafts[0]["content"] cannot be blank'),
        ([draft(), draft(content=" \n\t\u3000")], 'drafts[1]["content"] cannot be blank'),
        # U+001C is not Unicode white space (the parameter check passes) but Python strips it.
        ([draft(content="\x1c")], "Message must not be empty"),
        ([draft(content="a\x00b")], "Message must not contain null bytes"),
    ],
)
def test_invalid_drafts(live, drafts, msg):
    count = len(live.events())
    assert_error(live.owner.post("/drafts", {"drafts": drafts}), msg)
    assert listed(live.owner) == []
    assert events_after(live, count) == []


def test_channel_draft_rules(live, channel):
    def check(to, msg, topic="t", client=live.owner):
        assert_error(client.post("/drafts", {"drafts": [draft("stream", to, topic)]}), msg)

    check([channel], "Topic must not contain null bytes", topic="a\x00b")
    check([], "Must specify exactly 1 channel ID for channel messages")
    check([channel, channel], "Must specify exactly 1 channel ID for channel messages")
    check([99999], "Invalid channel ID")
    check([-1], "Invalid channel ID")
    check([2**63 - 1], "Invalid channel ID")
    # A null byte cut off by truncation is gone before the check, as in Zulip.
    create(live.owner, draft("stream", [channel], "t" * 60 + "\x00"))


def test_channel_draft_needs_content_access(live, channel):
    member, guest = live.make_user(), live.make_user("guest")
    private = make_channel(live, "Secret", [live.owner.id], invite_only=True)
    archived = make_channel(live, "Old", [live.owner.id, member.id])
    archive(live, archived)
    for client, channel_id in ((member, private), (guest, channel), (member, archived), (live.owner, archived)):
        response = client.post("/drafts", {"drafts": [draft("stream", [channel_id], "t")]})
        assert_error(response, "Invalid channel ID")
    # A public channel is open to members who are not subscribed; a guest needs a subscription.
    create(member, draft("stream", [channel], "t"))
    guest_channel = make_channel(live, "Guests", [guest.id])
    create(guest, draft("stream", [guest_channel], "t"))


def test_private_draft_rules(live):
    alice = live.make_user()
    gone = live.make_user(email="gone@example.com")
    assert_success(live.owner.delete(f"/users/{gone.id}"))
    cases = [
        ([alice.id, 99999], "Invalid user ID 99999"),
        ([-3, 99999], "Invalid user ID -3"),
        ([gone.id], "'gone@example.com' is no longer using Zulip."),
        ([gone.id, 99999], "Invalid user ID 99999"),
    ]
    for to, msg in cases:
        assert_error(live.owner.post("/drafts", {"drafts": [draft("private", to)]}), msg)
    # The topic of a direct draft is not looked at.
    create(live.owner, draft("private", [alice.id], "a\x00b"))


def test_one_bad_draft_rejects_the_batch(live, channel):
    count = len(live.events())
    good = draft("stream", [channel], "fine")
    response = live.owner.post("/drafts", {"drafts": [good, draft(), draft("stream", [99999], "t"), good]})
    assert_error(response, "Invalid channel ID")
    assert listed(live.owner) == []
    assert events_after(live, count) == []
    assert len(create(live.owner, good, good)) == 2


def test_large_integers(live):
    response = live.owner.post("/drafts", {"drafts": [draft("private", [2**64])]})
    assert_error(response, 'drafts[0]["to"][0] is too large')


# -- editing ----------------------------------------------------------------------------------


def test_edit(live, channel):
    alice = live.make_user()
    [draft_id] = create(live.owner, draft(content="first", timestamp=100))
    count = len(live.events())
    live.clock.advance(60)
    body = assert_success(
        live.owner.patch(f"/drafts/{draft_id}", {"draft": draft("stream", [channel], "news", "second")})
    )
    assert "ignored_parameters_unsupported" not in body
    expected = {
        "id": draft_id, "type": "stream", "to": [channel], "topic": "news", "content": "second",
        "timestamp": int(live.clock.now),
    }  # fmt: skip
    assert listed(live.owner) == [expected]
    assert events_after(live, count) == [({"type": "drafts", "op": "update", "draft": expected}, [live.owner.id])]
    assert_success(live.owner.patch(f"/drafts/{draft_id}", {"draft": draft("private", [alice.id], "x", "third")}))
    assert listed(live.owner)[0] | {"timestamp": 0} == {
        "id": draft_id, "type": "private", "to": [alice.id], "topic": "", "content": "third", "timestamp": 0,
    }  # fmt: skip


def test_edit_errors(live, channel):
    [draft_id] = create(live.owner, draft(content="keep"))
    path = f"/drafts/{draft_id}"
    assert_error(live.owner.patch(path), "Missing 'draft' argument", "REQUEST_VARIABLE_MISSING")
    assert_error(live.owner.patch(path, {"draft": [draft()]}), "draft is not a dict")
    assert_error(live.owner.patch(path, {"draft": draft(type="x")}), 'Invalid draft["type"]')
    assert_error(live.owner.patch(path, {"draft": draft(content="  ")}), 'draft["content"] cannot be blank')
    assert_error(live.owner.patch(path, {"draft": draft(extra=1)}), 'Argument "extra" at draft["extra"] is unexpected')
    assert_error(
        live.owner.patch(path, {"draft": draft("stream", [], "t")}),
        "Must specify exactly 1 channel ID for channel messages",
    )
    assert_error(live.owner.patch(path, {"draft": draft(timestamp=-5)}), "Timestamp must not be negative.")
    assert_error(live.owner.patch(path, {"draft": draft(content="\x00")}), "Message must not contain null bytes")
    assert [d["content"] for d in listed(live.owner)] == ["keep"]


def test_missing_and_other_users_drafts_answer_alike(live):
    alice = live.make_user()
    [mine] = create(live.owner, draft(content="mine"))
    [theirs] = create(alice, draft(content="theirs"))
    count = len(live.events())
    for draft_id in (theirs, 99999):
        # Existence is checked before the draft itself, so an invalid draft still gets the 404.
        for body in (draft(), draft("stream", [99999], "t")):
            assert_error(live.owner.patch(f"/drafts/{draft_id}", {"draft": body}), NOT_FOUND, status=404)
        assert_error(live.owner.delete(f"/drafts/{draft_id}"), NOT_FOUND, status=404)
    assert [d["content"] for d in listed(alice)] == ["theirs"]
    assert events_after(live, count) == []
    assert_success(live.owner.delete(f"/drafts/{mine}"))
    assert_error(live.owner.delete(f"/drafts/{mine}"), NOT_FOUND, status=404)


def test_non_numeric_id_is_not_found(live):
    response = live.owner.delete("/drafts/abc")
    assert response.status_code == 404
    assert response.json()["msg"] == "Not Found"


# -- deleting ---------------------------------------------------------------------------------


def test_delete(live):
    first, second = create(live.owner, draft(content="one"), draft(content="two"))
    count = len(live.events())
    body = assert_success(live.owner.delete(f"/drafts/{first}"))
    assert body == {"result": "success", "msg": ""}
    assert [d["id"] for d in listed(live.owner)] == [second]
    assert events_after(live, count) == [({"type": "drafts", "op": "remove", "draft_id": first}, [live.owner.id])]


# -- ignored parameters (api-notes 1.1) -------------------------------------------------------


def test_ignored_parameters(live):
    body = assert_success(live.owner.post("/drafts", {"drafts": [draft()], "zeta": 1, "alpha": "x"}))
    assert body["ignored_parameters_unsupported"] == ["alpha", "zeta"]
    [draft_id] = body["ids"]
    body = assert_success(live.owner.patch(f"/drafts/{draft_id}", {"draft": draft(), "extra": 1}))
    assert body["ignored_parameters_unsupported"] == ["extra"]
    # GET and DELETE are outside Zulip's typed-parameter framework: nothing is reported.
    assert "ignored_parameters_unsupported" not in assert_success(live.owner.get("/drafts", {"extra": 1}))
    assert "ignored_parameters_unsupported" not in assert_success(live.owner.delete(f"/drafts/{draft_id}", {"x": 1}))


# -- the synchronization setting --------------------------------------------------------------


def test_disabling_synchronization(live):
    [draft_id] = create(live.owner, draft())
    alice = live.make_user()
    [alices] = create(alice, draft())
    count = len(live.events())
    set_sync(live.owner, False)
    setting_event = {
        "type": "user_settings",
        "op": "update",
        "property": "enable_drafts_synchronization",
        "value": False,
    }
    legacy_event = {"type": "update_display_settings", "user": live.owner.email,
                    "setting_name": "enable_drafts_synchronization", "setting": False}  # fmt: skip
    # The server forgets the drafts without drafts/remove events: clients keep their copies.
    assert [(e, ids) for e, ids in live.events()[count:]] == [
        (setting_event, [live.owner.id]),
        (legacy_event, [live.owner.id]),
    ]
    assert live.read(lambda tx: tx.value("SELECT count(*) FROM drafts WHERE user_id = ?", (live.owner.id,))) == 0
    assert live.user(live.owner.id).enable_drafts_synchronization is False
    for response in (
        live.owner.get("/drafts"),
        live.owner.post("/drafts", {"drafts": [draft()]}),
        live.owner.patch(f"/drafts/{draft_id}", {"draft": draft()}),
        live.owner.delete(f"/drafts/{draft_id}"),
        # The setting is checked before the parameters.
        live.owner.post("/drafts", {"drafts": "[{"}),
        live.owner.patch("/drafts/99999"),
    ):
        assert_error(response, DISABLED)
    assert [d["id"] for d in listed(alice)] == [alices]

    count = len(live.events())
    set_sync(live.owner, True)
    assert events_after(live, count, "user_settings") == [({**setting_event, "value": True}, [live.owner.id])]
    assert listed(live.owner) == []
    assert len(create(live.owner, draft())) == 1


def test_setting_unchanged_sends_nothing(live):
    count = len(live.events())
    set_sync(live.owner, True)
    assert_success(live.owner.patch("/settings"))
    assert live.events()[count:] == []


def test_settings_parameters(live):
    response = live.owner.patch("/settings", {"enable_drafts_synchronization": "yes"})
    assert_error(response, "enable_drafts_synchronization is not valid JSON")
    response = live.owner.patch("/settings", {"enable_drafts_synchronization": 1})
    assert_error(response, "enable_drafts_synchronization is not a boolean")
    params = {"email": "new@example.com", "enable_drafts_synchronization": False}
    body = assert_success(live.owner.patch("/settings", params))
    assert body["ignored_parameters_unsupported"] == ["email"]
    assert live.user(live.owner.id).delivery_email != "new@example.com"


def test_settings_refuse_bots(live):
    bot_id = make_bot(live, live.owner.id)
    bot = live.client_for(live.user(bot_id))
    response = bot.patch("/settings", {"enable_drafts_synchronization": "not even JSON"})
    assert_error(response, "This endpoint does not accept bot requests.")
    assert live.user(bot_id).enable_drafts_synchronization is True


# -- the official client and the query plan ----------------------------------------------------


def test_zulip_client(live, zulip_client):
    result = zulip_client.call_endpoint(url="drafts", method="POST", request={"drafts": [draft(content="hi")]})
    assert result["result"] == "success"
    [draft_id] = result["ids"]
    result = zulip_client.call_endpoint(url="drafts", method="GET")
    assert [d["id"] for d in result["drafts"]] == [draft_id]
    result = zulip_client.call_endpoint(
        url=f"drafts/{draft_id}", method="PATCH", request={"draft": draft(content="ho")}
    )
    assert result["result"] == "success"
    assert zulip_client.call_endpoint(url=f"drafts/{draft_id}", method="DELETE")["result"] == "success"


def test_list_query_uses_index(live):
    plan = live.read(
        lambda tx: " ".join(
            row["detail"]
            for row in tx.all(
                "EXPLAIN QUERY PLAN SELECT id FROM drafts WHERE user_id = ? ORDER BY last_edit_time, id", (1,)
            )
        )
    )
    assert "USING INDEX drafts_by_user" in plan or "USING COVERING INDEX drafts_by_user" in plan
    assert "TEMP B-TREE" not in plan
