"""Viewers' flags kept between fetches (storage/cache/flag_cache.py): pages of channel, topic and sender
narrows read with them are byte for byte the pages read without the cache, after every kind of
write to user_messages; what a transaction read after writing is not kept."""

from __future__ import annotations

import random
import sqlite3

import msgspec
import pytest

from storage.cache.directory import directory
from storage.cache.flag_cache import FlagCache
from storage.db.tx import _WRITES_USER_MESSAGES
from storage.fetch.message_fetch import GetMessages, get_messages
from storage.fetch.narrow import build_query
from storage.fetch.narrow_select import Selected, Side, keeps_flags, select_sql
from storage.fetch.narrow_terms import parse_narrow
from storage.model import flags as flag_bits
from tests.storage.cache.test_message_cache import http_params, make_org, uncached
from tests.support.channel_helpers import make_channel, subscribe
from tests.support.get_messages_helpers import post
from tests.support.helpers import LiveServer, assert_success, data_dir_for

TOPICS = ["lunch", "deploy", "coffee"]


@pytest.fixture
def org_two_in_random(live):
    return make_org(live, in_random=2)  # bob and carol read random as history once subscribed


def flag_counts(live) -> tuple[int, int, int]:
    return live.read(lambda tx: (directory(tx).flags.hits, directory(tx).flags.misses, len(directory(tx).flags)))


def page_params(rng, live, message_ids):
    params = {
        "anchor": rng.choice(["newest", "oldest", str(rng.choice(message_ids))]),
        "num_before": rng.randint(0, 15),
        "num_after": rng.randint(0, 15),
        "apply_markdown": rng.random() < 0.5,
    }
    channel = rng.choice(list(live.channels))
    kind = rng.choice(["channel", "topic", "topic", "sender"])
    narrow = [{"operator": "channel", "operand": live.channels[channel]}]
    if kind == "topic":
        narrow.append({"operator": "topic", "operand": rng.choice(TOPICS)})
    elif kind == "sender":
        narrow.append({"operator": "sender", "operand": rng.choice(live.people).id})
    params["narrow"] = narrow
    return params


def write_flags(rng, live, message_ids, step):
    """One random write to user_messages (or to what decides them), through the API where there is one."""
    person = rng.choice(live.people)
    target = rng.choice(message_ids)
    choice = rng.randrange(11)
    if choice == 0:
        message_ids.append(post(live, person, rng.choice(list(live.channels)), rng.choice(TOPICS), f"say {step}"))
    elif choice == 1:
        person.post("/messages/flags", {"messages": f"[{target}]", "op": rng.choice(["add", "remove"]),
                                        "flag": rng.choice(["read", "starred"])})  # fmt: skip
    elif choice == 2:
        person.post("/mark_all_as_read")
    elif choice == 3:
        person.post("/mark_topic_as_read", {"stream_id": live.channels["general"], "topic_name": rng.choice(TOPICS)})
    elif choice == 4:  # on a message this person may only read as history: their row is inserted
        person.post(f"/messages/{target}/reactions", {"emoji_name": rng.choice(["tada", "heart"])})
    elif choice == 5 and len(message_ids) > 8:
        live.owner.delete(f"/messages/{target}")
        message_ids.remove(target)
    elif choice == 6:
        channel = rng.choice(list(live.channels.values()))
        live.owner.patch(f"/messages/{target}", {"stream_id": channel, "propagate_mode": "change_one"})
    elif choice == 7:
        live.owner.patch(f"/messages/{target}", {"content": f"@**{rng.choice(['Alice', 'Bob', 'Carol'])}** {step}"})
    elif choice == 8:
        assert_success(subscribe(live.bob, ["random"]))  # bob reads random's earlier messages as history
    elif choice == 9:
        toggle_star = "UPDATE user_messages SET flags = (flags | 2) - (flags & 2) WHERE message_id = ?"
        live.write(lambda tx: tx.execute(toggle_star, (target,)))
    else:
        person.post("/messages/flags/narrow", {"anchor": "newest", "num_before": 5, "num_after": 0, "narrow": "[]",
                                               "op": "add", "flag": "read"})  # fmt: skip


def test_pages_with_kept_flags_equal_pages_without_them_after_random_writes(org_two_in_random):
    live = org_two_in_random
    rng = random.Random(7)
    message_ids = [post(live, live.people[n % 4], ["general", "random"][n % 2 if n % 4 < 2 else 0], TOPICS[n % 3],
                        f"start {n}") for n in range(16)]  # fmt: skip
    compared = 0
    for step in range(70):
        write_flags(rng, live, message_ids, step)
        for _ in range(5):
            client = rng.choice(live.people)
            params = page_params(rng, live, message_ids)
            for _ in range(2):  # the second fetch reads the flags the first one kept
                response = client.get("/messages", http_params(params))
                assert response.status_code == 200, response.text
                assert response.content == uncached(live, client, params), (step, params)
                compared += 1
    hits, misses, _ = flag_counts(live)
    assert compared == 700 and hits > 500 and misses > 100, (hits, misses)


def test_a_second_fetch_reads_every_flag_from_the_cache(org_two_in_random):
    live = org_two_in_random
    for n in range(6):
        post(live, live.alice, "general", "lunch", f"m{n}")
    narrow = [{"operator": "channel", "operand": "general"}, {"operator": "topic", "operand": "lunch"}]
    page = {"anchor": "newest", "num_before": "20", "num_after": "0", "narrow": msgspec.json.encode(narrow).decode()}
    first = live.bob.get("/messages", page)
    before = flag_counts(live)
    assert before[2] == 6  # bob's six flags, kept by the join that read them
    again = live.bob.get("/messages", page)
    assert again.content == first.content
    after = flag_counts(live)
    assert after[0] == before[0] + 6 and after[1] == before[1]
    live.bob.post("/messages/flags", {"messages": f"[{again.json()['messages'][0]['id']}]", "op": "add",
                                      "flag": "starred"})  # fmt: skip
    assert flag_counts(live)[2] == 0  # the write emptied the cache
    starred = live.bob.get("/messages", page).json()["messages"][0]["flags"]
    assert "starred" in starred


def test_historical_messages_are_kept_without_flags_until_a_row_is_inserted(org_two_in_random):
    live = org_two_in_random
    older = post(live, live.alice, "random", "lunch", "before bob joined")
    assert_success(subscribe(live.bob, ["random"]))
    page = {"anchor": "newest", "num_before": "5", "num_after": "0",
            "narrow": '[{"operator": "channel", "operand": "random"}]'}  # fmt: skip
    for _ in range(2):
        [message] = assert_success(live.bob.get("/messages", page))["messages"]
        assert message["id"] == older and message["flags"] == ["read", "historical"]
    assert live.read(lambda tx: directory(tx).flags.of(live.bob.id)) == {older: None}
    # Reacting gives bob a row (flagged historical and read, as in Zulip): the None kept is gone.
    assert_success(live.bob.post(f"/messages/{older}/reactions", {"emoji_name": "tada"}))
    assert flag_counts(live)[2] == 0
    [message] = assert_success(live.bob.get("/messages", page))["messages"]
    assert message["flags"] == ["read", "historical"]
    assert live.read(lambda tx: directory(tx).flags.of(live.bob.id)) == {older: flag_bits.HISTORICAL | flag_bits.READ}


def test_reads_after_a_write_in_the_same_transaction_are_not_kept(org_two_in_random):
    live = org_two_in_random
    message_id = post(live, live.alice, "general", "lunch", "hello")
    narrow = [{"operator": "channel", "operand": "general"}]
    request = msgspec.convert({"anchor": "newest", "num_before": 5, "num_after": 0, "narrow": narrow}, GetMessages)
    bob = live.user(live.bob.id)

    def write_then_read(tx):
        tx.execute("UPDATE users SET timezone = 'Europe/Paris' WHERE id = ?", (bob.id,))
        assert not tx.unwritten()
        return get_messages(tx, bob, request, 1 << 20)

    live.write(write_then_read)
    assert flag_counts(live)[2] == 0

    def read(tx):
        assert tx.unwritten()
        return get_messages(tx, bob, request, 1 << 20)

    live.read(read)
    assert live.read(lambda tx: directory(tx).flags.of(bob.id)) == {message_id: 0}

    def two_calls(first_writes):
        calls = [(lambda tx: tx.execute("UPDATE users SET timezone = '' WHERE id = ?", (bob.id,)) if first_writes
                  else None, (), {}), (lambda tx: tx.unwritten(), (), {})]  # fmt: skip
        return live.call(lambda: live.server.db.write_batch(calls))[1][1]

    assert two_calls(False) is True and two_calls(True) is False  # a batch's writes count for its later calls


def test_another_connections_write_is_seen(org_two_in_random, tmp_path):
    live = org_two_in_random
    message_id = post(live, live.alice, "general", "lunch", "hello")
    page = {"anchor": "newest", "num_before": "5", "num_after": "0",
            "narrow": '[{"operator": "channel", "operand": "general"}]'}  # fmt: skip
    for _ in range(2):
        assert "starred" not in live.bob.get("/messages", page).json()["messages"][-1]["flags"]
    other = sqlite3.connect(live.server.db.path, isolation_level=None)
    try:
        other.execute("UPDATE user_messages SET flags = flags | 2 WHERE user_id = ? AND message_id = ?",
                      (live.bob.id, message_id))  # fmt: skip
    finally:
        other.close()
    assert "starred" in live.bob.get("/messages", page).json()["messages"][-1]["flags"]


def test_writes_to_user_messages_are_recognized():
    writes = [
        "INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)",
        "INSERT OR IGNORE INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)",
        "REPLACE INTO user_messages VALUES (1, 2, 3)",
        "UPDATE user_messages INDEXED BY user_messages_unread SET flags = flags | 1 WHERE user_id = ?",
        "update or ignore main.user_messages set flags = 0",
        "DELETE FROM user_messages WHERE message_id = ?",
        'WITH gone(id) AS (SELECT 1) DELETE FROM "user_messages" WHERE message_id IN gone',
        "DELETE FROM\n    user_messages WHERE user_id IN (SELECT value FROM json_each(?))",
    ]
    reads = [
        "SELECT message_id, flags FROM user_messages WHERE user_id = ?",
        "INSERT INTO reactions (message_id, user_id) SELECT message_id, user_id FROM user_messages",
        "UPDATE messages SET content = ? WHERE id IN (SELECT message_id FROM user_messages)",
        "DELETE FROM user_messages_archive",
    ]
    assert all(_WRITES_USER_MESSAGES.search(sql) for sql in writes)
    assert not any(_WRITES_USER_MESSAGES.search(sql) for sql in reads)


def test_the_cache_is_bounded_and_drops_the_least_recent_viewer_first():
    cache = FlagCache()
    cache.limit = 10
    cache.keep(1, {n: 0 for n in range(4)})
    cache.keep(2, {n: 1 for n in range(4)})
    assert cache.of(1) is not None  # viewer 1 is now the most recent
    cache.keep(3, {n: None for n in range(4)})
    assert list(cache.viewers) == [1, 3] and len(cache) == 8
    cache.keep(1, {n: 0 for n in range(2, 6)})  # two new entries of viewer 1
    assert len(cache) == 10 and cache.of(1) == {n: 0 for n in range(6)}
    cache.keep(4, {n: 0 for n in range(11)})  # larger than the bound: nothing stays
    assert len(cache) == 0 and not cache.viewers
    cache.limit = 0
    cache.keep(5, {1: 0})
    assert len(cache) == 0


def test_a_topic_page_reads_only_the_topic_index(org_two_in_random):
    live = org_two_in_random
    post(live, live.alice, "general", "lunch", "hello")
    bob = live.user(live.bob.id)
    narrow = [{"operator": "channel", "operand": "general"}, {"operator": "topic", "operand": "lunch"}]

    def plan(tx):
        query = build_query(tx, bob, parse_narrow(narrow))
        assert keeps_flags(query, 100)
        sql, params = select_sql(query, Side.AT_OR_BEFORE, 10**16, 100, Selected.IDS)
        return [row[3] for row in tx.all("EXPLAIN QUERY PLAN " + sql, params)]

    [step] = live.read(plan)
    assert step.startswith("SEARCH m USING COVERING INDEX messages_by_topic"), step


def test_a_zero_message_cache_keeps_no_flags(tmp_path):
    server = LiveServer(data_dir_for(tmp_path), message_cache_mib=0)
    try:
        make_channel(server, "solo", [server.owner.id])
        message_id = post(server, server.owner, "solo", "t", "hello")
        page = {"anchor": "newest", "num_before": "5", "num_after": "0",
                "narrow": '[{"operator": "channel", "operand": "solo"}]'}  # fmt: skip
        for _ in range(2):
            assert [m["id"] for m in assert_success(server.owner.get("/messages", page))["messages"]] == [message_id]
        assert flag_counts(server) == (0, 0, 0)
    finally:
        server.stop()
