"""GET /messages ranges: anchors, include_anchor and the found_* flags at both ends and around
messages the user did not receive; message_ids; the 5000 limit; anchor=date (api-notes 4.2)."""

from __future__ import annotations

import datetime
import os

import pytest

from tests.support.channel_helpers import make_channel
from tests.support.get_messages_helpers import NEWEST, fetch, ids_of, post, post_direct
from tests.support.helpers import LiveServer


@pytest.fixture(scope="module", autouse=True)
def anchors_history(shared_live):
    """Alice sees g1..g5; between them are messages of a private channel and a DM she is not in."""
    server = shared_live
    owner = server.owner
    alice = server.alice = server.make_user(full_name="Alice")
    bob, carol = server.make_user(), server.make_user()
    make_channel(server, "general", [owner.id, alice.id])
    make_channel(server, "private", [owner.id], invite_only=True)
    order = ["g1", "p1", "g2", "p2", "p3", "g3", "d", "g4", "g5"]
    server.m = {}
    for key in order:
        if key == "d":
            server.m[key] = post_direct(server, bob, [carol.id], "not for alice")
        else:
            server.m[key] = post(server, owner, "general" if key[0] == "g" else "private", "t", key)


def page(live, anchor, before, after, **params):
    body = fetch(live.alice, anchor=str(anchor), num_before=before, num_after=after, **params)
    names = {v: k for k, v in live.m.items()}
    return body, [names.get(i, i) for i in ids_of(body)]


def flags_of(body):
    return body["found_anchor"], body["found_oldest"], body["found_newest"]


def test_newest(shared_live):
    body, names = page(shared_live, "newest", 2, 0)
    assert names == ["g4", "g5"] and body["anchor"] == NEWEST
    assert flags_of(body) == (False, False, True)
    body, names = page(shared_live, "newest", 10, 5)  # num_after means nothing above the newest
    assert names == ["g1", "g2", "g3", "g4", "g5"] and flags_of(body) == (False, True, True)


def test_oldest(shared_live):
    body, names = page(shared_live, "oldest", 3, 2)
    assert names == ["g1", "g2"] and body["anchor"] == 0
    assert flags_of(body) == (False, True, False)
    body, names = page(shared_live, "oldest", 0, 5)
    assert names == ["g1", "g2", "g3", "g4", "g5"] and flags_of(body) == (False, True, False)
    body, names = page(shared_live, "oldest", 0, 6)
    assert names == ["g1", "g2", "g3", "g4", "g5"] and flags_of(body) == (False, True, True)


def test_numeric_anchor_in_the_middle(shared_live):
    g3 = shared_live.m["g3"]
    body, names = page(shared_live, g3, 1, 1)
    assert names == ["g2", "g3", "g4"] and body["anchor"] == g3
    assert flags_of(body) == (True, False, False)
    # Exactly as many as asked for on a side promises nothing; fewer than asked reaches the end.
    body, names = page(shared_live, g3, 2, 2)
    assert names == ["g1", "g2", "g3", "g4", "g5"] and flags_of(body) == (True, False, False)
    body, names = page(shared_live, g3, 3, 3)
    assert names == ["g1", "g2", "g3", "g4", "g5"] and flags_of(body) == (True, True, True)


def test_anchor_alone(shared_live):
    body, names = page(shared_live, shared_live.m["g3"], 0, 0)
    assert names == ["g3"] and flags_of(body) == (True, False, False)
    body, names = page(shared_live, shared_live.m["p2"], 0, 0)
    assert names == [] and flags_of(body) == (False, False, False)


def test_anchor_on_a_message_the_user_did_not_receive(shared_live):
    for key in ("p2", "p3"):
        body, names = page(shared_live, shared_live.m[key], 1, 1)
        assert names == ["g2", "g3"] and body["anchor"] == shared_live.m[key]
        assert flags_of(body) == (False, False, False)
    body, names = page(shared_live, shared_live.m["d"], 5, 5)
    assert names == ["g1", "g2", "g3", "g4", "g5"] and flags_of(body) == (False, True, True)


def test_the_gap_does_not_count_against_num_before(shared_live):
    body, names = page(shared_live, shared_live.m["g3"], 2, 0)
    assert names == ["g1", "g2", "g3"] and flags_of(body) == (True, False, False)
    body, names = page(shared_live, shared_live.m["g3"], 3, 0)
    assert names == ["g1", "g2", "g3"] and flags_of(body) == (True, True, False)


def test_include_anchor_false(shared_live):
    g3 = shared_live.m["g3"]
    body, names = page(shared_live, g3, 2, 0, include_anchor=False)
    assert names == ["g1", "g2"] and flags_of(body) == (False, False, False)
    body, names = page(shared_live, g3, 0, 2, include_anchor=False)
    assert names == ["g4", "g5"] and flags_of(body) == (False, False, False)
    body, names = page(shared_live, g3, 0, 3, include_anchor=False)
    assert names == ["g4", "g5"] and flags_of(body) == (False, False, True)
    body, names = page(shared_live, "newest", 1, 0, include_anchor=False)
    assert names == ["g5"] and flags_of(body) == (False, False, True)
    body, names = page(shared_live, "oldest", 0, 1, include_anchor=False)
    assert names == ["g1"] and flags_of(body) == (False, True, False)


def test_numeric_anchors_beyond_the_ends(shared_live):
    body, names = page(shared_live, 10**6, 2, 2)
    assert body["anchor"] == 10**6 and names == ["g4", "g5"] and flags_of(body) == (False, False, True)
    # With num_after=0 a numeric anchor never claims the newest (Zulip's rule).
    body, names = page(shared_live, 10**6, 2, 0)
    assert flags_of(body) == (False, False, False)
    body, names = page(shared_live, 10**20, 1, 0)
    assert body["anchor"] == NEWEST and names == ["g5"] and flags_of(body) == (False, False, True)
    body, names = page(shared_live, -5, 0, 1)
    assert body["anchor"] == 0 and names == ["g1"] and flags_of(body) == (False, True, False)
    body, names = page(shared_live, 0, 0, 1)
    assert body["anchor"] == 0 and flags_of(body) == (False, True, False)
    body, names = page(shared_live, " 7 ", 0, 0)
    assert body["anchor"] == 7


def test_results_are_sorted_by_id(shared_live):
    body, _ = page(shared_live, shared_live.m["g3"], 5, 5)
    assert ids_of(body) == sorted(ids_of(body))


def test_message_ids_returns_the_accessible_subset_in_order(shared_live):
    m = shared_live.m
    requested = [m["g3"], m["p1"], 10**9, m["d"], m["g1"], m["g3"], 0]
    body = fetch(shared_live.alice, message_ids=requested)
    assert ids_of(body) == [m["g1"], m["g3"]]
    assert "anchor" not in body and flags_of(body) == (False, False, False) and body["history_limited"] is False
    assert ids_of(fetch(shared_live.alice, message_ids=[])) == []
    assert ids_of(fetch(shared_live.owner, message_ids=requested)) == [m["g1"], m["p1"], m["g3"]]


def test_message_ids_are_filtered_by_the_narrow(shared_live):
    m = shared_live.m
    every = list(m.values())
    assert ids_of(fetch(shared_live.owner, message_ids=every, narrow=[["channel", "private"]])) == [
        m["p1"],
        m["p2"],
        m["p3"],
    ]
    narrow = [{"operator": "id", "operand": m["g2"], "negated": True}, ["channel", "general"]]
    assert ids_of(fetch(shared_live.alice, message_ids=every, narrow=narrow)) == [m["g1"], m["g3"], m["g4"], m["g5"]]
    assert ids_of(fetch(shared_live.alice, message_ids=every, narrow=[["is", "dm"]])) == []


def test_the_5000_limit_is_served(tmp_path):
    live = LiveServer(os.path.join(str(tmp_path), "data"))
    try:
        channel_id = make_channel(live, "bulk", [live.owner.id])
        first = post(live, live.owner, "bulk", "t", "first")

        def insert(tx):
            recipient_id = tx.value("SELECT recipient_id FROM messages WHERE id = ?", (first,))
            rows = [(live.owner.id, recipient_id, channel_id, "t", "t", f"m{n}", f"<p>m{n}</p>", tx.timestamp, "test")
                    for n in range(6000)]  # fmt: skip
            tx.executemany(
                "INSERT INTO messages (sender_id, recipient_id, channel_id, topic, topic_key, content,"
                " rendered_content, date_sent, client) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            tx.execute(
                "INSERT INTO user_messages (user_id, message_id, flags) SELECT ?, id, 1 FROM messages WHERE id > ?",
                (live.owner.id, first),
            )

        live.write(insert)
        body = fetch(live.owner, anchor="newest", num_before=5000, num_after=0)
        assert len(body["messages"]) == 5000 and flags_of(body) == (False, False, True)
        middle = first + 3000
        body = fetch(live.owner, anchor=str(middle), num_before=2500, num_after=2500)
        found = ids_of(body)
        assert len(found) == 5001 and found[0] == middle - 2500 and found[-1] == middle + 2500
        assert flags_of(body) == (True, False, False)
        body = fetch(live.owner, message_ids=list(range(first, first + 5000)))
        assert len(body["messages"]) == 5000
    finally:
        live.stop()


# -- anchor=date -------------------------------------------------------------------------------

T0 = 1_800_000_000  # the test clock's start: 2027-01-15T08:00:00Z
DAY = 86400


@pytest.fixture(scope="module")
def dated(tmp_path_factory):
    server = LiveServer(os.path.join(str(tmp_path_factory.mktemp("dates")), "data"))
    make_channel(server, "general", [server.owner.id])
    server.m = {}
    for key, at, topic in [("a", 0, "t"), ("b", DAY, "t"), ("c", DAY + 6 * 3600, "u"), ("d", 3 * DAY, "u")]:
        server.clock.now = T0 + at
        server.m[key] = post(server, server.owner, "general", topic, key)
    yield server
    server.stop()


def at_date(live, anchor_date, before=0, after=0, **params):
    body = fetch(live.owner, anchor="date", anchor_date=anchor_date, num_before=before, num_after=after, **params)
    names = {v: k for k, v in live.m.items()}
    return body, [names[i] for i in ids_of(body)]


def test_clock_start_is_what_the_dates_below_assume():
    assert datetime.datetime.fromtimestamp(T0, datetime.UTC).isoformat() == "2027-01-15T08:00:00+00:00"


@pytest.mark.parametrize(
    ("anchor_date", "expected"),
    [
        ("2020-01-01", "a"),
        ("2027-01-15", "a"),
        ("2027-01-16", "b"),  # a date is midnight UTC
        ("2027-01-16T08:00:00Z", "b"),  # on or after
        ("2027-01-16T08:00:01Z", "c"),
        ("2027-01-16T08:00:00+00:00", "b"),
        ("2027-01-16T10:00:00+05:00", "b"),  # 05:00 UTC
        ("2027-01-16T12:00:00", "c"),  # no timezone: UTC
        ("2027-01-16 12:00", "c"),
        ("2027-01-16T13:59:59-01:00", "d"),  # 14:59:59 UTC
        ("2027-01-17", "d"),
        ("2027-01-18T08:00:00.000Z", "d"),
    ],
)
def test_anchor_date_is_the_first_message_on_or_after_it(dated, anchor_date, expected):
    body, names = at_date(dated, anchor_date)
    assert body["anchor"] == dated.m[expected] and names == [expected]
    assert body["found_anchor"] is True


def test_anchor_date_after_every_message_is_the_newest(dated):
    body, names = at_date(dated, "2027-01-19", before=2, after=2)
    assert body["anchor"] == NEWEST and names == ["c", "d"]
    assert flags_of(body) == (False, False, True)


def test_anchor_date_with_a_range_and_a_narrow(dated):
    body, names = at_date(dated, "2027-01-16", before=1, after=1)
    assert names == ["a", "b", "c"] and flags_of(body) == (True, False, False)
    body, names = at_date(dated, "2027-01-15T09:00Z", before=5, after=5, narrow=[["topic", "u"]])
    assert body["anchor"] == dated.m["c"] and names == ["c", "d"]
    assert flags_of(body) == (True, True, True)
    body, names = at_date(dated, "2027-01-17", narrow=[["topic", "t"]], before=1)
    assert body["anchor"] == NEWEST and names == ["b"]
