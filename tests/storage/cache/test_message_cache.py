"""The encoded-message cache (storage/cache/message_cache.py): pages assembled from it are byte for byte
the pages built without it, after every kind of change to what a message shows (issue 12 point 3)."""

from __future__ import annotations

import random

import msgspec
import pytest

from storage.cache.directory import directory
from storage.cache.message_cache import ENTRY_OVERHEAD, MessageCache, shape_of
from storage.fetch.message_fetch import GetMessages, get_messages
from tests.support.channel_helpers import make_channel
from tests.support.get_messages_helpers import add_reaction_row, post, post_direct
from tests.support.helpers import LiveServer, assert_success, data_dir_for, set_visibility

_encode = msgspec.json.Encoder().encode
EMOJI = [("tada", "1f389"), ("heart", "2764"), ("octopus", "1f419")]
WORDS = ["lunch", "deploy", "coffee", "release", "https://example.com/x"]


def make_org(live, in_random=4):
    """Alice, Bob and Carol beside the owner; channels general (all four) and random (the first `in_random`)."""
    live.alice = live.make_user(email="alice@example.com", full_name="Alice")
    live.bob = live.make_user(email="bob@example.com", full_name="Bob")
    live.carol = live.make_user(email="carol@example.com", full_name="Carol")
    live.people = [live.owner, live.alice, live.bob, live.carol]
    members = {"general": live.people, "random": live.people[:in_random]}
    live.channels = {name: make_channel(live, name, [p.id for p in people]) for name, people in members.items()}
    return live


@pytest.fixture
def org_everyone_in_random(live):
    return make_org(live)


def uncached(live, client, params):
    """The body GET /messages answers with the cache off: built from objects, then encoded."""
    user = live.user(client.id)
    request = msgspec.convert(params, GetMessages)
    body = live.read(get_messages, user, request)
    return _encode({"result": "success", "msg": "", **body}) + b"\n"


def random_params(rng, live, message_ids):
    params = {
        "anchor": rng.choice(["newest", "oldest", str(rng.choice(message_ids)) if message_ids else "newest"]),
        "num_before": rng.randint(0, 12),
        "num_after": rng.randint(0, 12),
        "apply_markdown": rng.random() < 0.5,
        "client_gravatar": rng.random() < 0.5,
        "allow_empty_topic_name": rng.random() < 0.5,
    }
    kind = rng.choice(["none", "none", "channel", "topic", "dm", "search", "starred", "ids"])
    if kind == "channel":
        params["narrow"] = [{"operator": "channel", "operand": rng.choice(list(live.channels))}]
    elif kind == "topic":
        params["narrow"] = [{"operator": "channel", "operand": min(live.channels.values())},
                            {"operator": "topic", "operand": rng.choice(["", "general chat", *WORDS[:3]])}]  # fmt: skip
    elif kind == "dm":
        params["narrow"] = [{"operator": "is", "operand": "dm"}]
    elif kind == "search":
        params["narrow"] = [{"operator": "search", "operand": rng.choice(WORDS[:4])}]
    elif kind == "starred":
        params["narrow"] = [{"operator": "is", "operand": "starred"}]
    elif kind == "ids" and message_ids:
        params = {k: v for k, v in params.items() if k not in ("anchor", "num_before", "num_after")}
        params["message_ids"] = rng.sample(message_ids, min(len(message_ids), rng.randint(1, 6)))
    return params


def http_params(params):
    return {k: v if isinstance(v, str) else msgspec.json.encode(v).decode() for k, v in params.items()}


def mutate(rng, live, message_ids, step):
    """One random change of a kind that changes what messages show (or their flags)."""
    owner, people = live.owner, live.people
    choice = rng.randrange(15)
    target = rng.choice(message_ids)
    if choice == 0:
        sender = rng.choice(people)
        message_ids.append(post(live, sender, rng.choice(list(live.channels)), rng.choice(["", *WORDS[:3]]),
                                f"{rng.choice(WORDS)} number {step}"))  # fmt: skip
    elif choice == 1:
        a, b = rng.sample(people, 2)
        message_ids.append(post_direct(live, a, [b.id], f"{rng.choice(WORDS)} direct {step}"))
    elif choice == 2:
        owner.patch(f"/messages/{target}", {"content": f"edited {rng.choice(WORDS)} {step}"})
    elif choice == 3:
        owner.patch(f"/messages/{target}", {"topic": rng.choice(WORDS[:3]), "propagate_mode": "change_one"})
    elif choice == 4 and len(message_ids) > 5:
        owner.delete(f"/messages/{target}")
        message_ids.remove(target)
    elif choice == 5:
        name, code = rng.choice(EMOJI)
        add_reaction_row(live, target, rng.choice(people).id, name, code)
    elif choice == 6:
        live.write(lambda tx: tx.execute("DELETE FROM reactions WHERE id IN (SELECT id FROM reactions LIMIT 1)"))
    elif choice == 7:
        person = rng.choice(people[1:])
        assert_success(owner.patch(f"/users/{person.id}", {"full_name": f"Name {step}"}))
    elif choice == 8:
        set_visibility(live, rng.choice(people).id, rng.choice([1, 5]))
    elif choice == 9:
        person = rng.choice(people)
        live.write(lambda tx: tx.execute("UPDATE users SET avatar_version = avatar_version + 1, avatar_source = ?"
                                         " WHERE id = ?", (rng.choice(["G", "U"]), person.id)))  # fmt: skip
    elif choice == 10:
        channel = rng.choice(list(live.channels))
        new = f"{channel.split('-')[0]}-{step}"
        assert_success(owner.patch(f"/streams/{live.channels[channel]}", {"new_name": new}))
        live.channels[new] = live.channels.pop(channel)
    elif choice == 11:
        owner.post("/realm/filters", {"pattern": rf"#{rng.choice(['deploy', 'lunch'])}{step}(?P<id>[0-9]+)",
                                      "url_template": "https://tracker.example/{id}"})  # fmt: skip
        message_ids.append(
            post(live, owner, next(iter(live.channels)), f"deploy{step}17 https://example.com/{step}", "text")
        )
    elif choice == 12:
        assert_success(owner.patch("/realm", {"allow_edit_history": rng.random() < 0.5}))
    elif choice == 13:  # users columns no message shows: the encoded messages stay
        change_unshown_columns(live, rng.choice(people[1:]).id, rng)
    else:
        flag = rng.choice(["read", "starred"])
        op = rng.choice(["add", "remove"])
        rng.choice(people).post("/messages/flags", {"messages": msgspec.json.encode([target]).decode(),
                                                    "op": op, "flag": flag})  # fmt: skip


def change_unshown_columns(live, user_id, rng):
    live.write(lambda tx: tx.execute(
        "UPDATE users SET timezone = ?, role = ?, enable_drafts_synchronization = ?, can_create_users = ?,"
        " last_active = last_active + 1 WHERE id = ?",
        (rng.choice(["", "Europe/Paris"]), rng.choice([200, 300, 400]), rng.random() < 0.5, rng.random() < 0.5,
         user_id),
    ))  # fmt: skip


def test_pages_from_the_cache_equal_pages_without_it_after_random_changes(org_everyone_in_random):
    live = org_everyone_in_random
    rng = random.Random(12)
    message_ids = []
    for n in range(12):
        message_ids.append(post(live, live.people[n % 4], "general", WORDS[n % 3], f"{WORDS[n % 5]} start {n}"))
    message_ids.append(post_direct(live, live.alice, [live.bob.id, live.carol.id], "three of us"))
    compared = hits_seen = 0
    for step in range(60):
        mutate(rng, live, message_ids, step)
        for _ in range(4):
            client = rng.choice(live.people)
            params = random_params(rng, live, message_ids)
            response = client.get("/messages", http_params(params))
            assert response.status_code == 200, response.text
            assert response.content == uncached(live, client, params), (step, params)
            compared += 1
        hits_seen = live.read(lambda tx: directory(tx).messages.hits)
    assert compared == 240 and hits_seen > 50  # the cache did serve


def get(cache: MessageCache, shape: int, message_id: int) -> bytes | None:
    return cache.lookup(shape, [message_id])[0]


def test_the_cache_is_bounded_by_bytes():
    cache = MessageCache()
    cache.limit = 10 * (100 + ENTRY_OVERHEAD)
    shape = shape_of(True, True, False)
    for n in range(50):
        cache.put(shape, n, b"x" * 100)
    assert cache.size <= cache.limit and len(cache) == 10
    assert get(cache, shape, 49) is not None and get(cache, shape, 0) is None
    other = shape_of(False, False, True)
    cache.put(other, 49, b"z")  # past the bound: 40 goes, the least recently used of the fuller format
    cache.drop_message(49)
    assert get(cache, shape, 49) is None and get(cache, other, 49) is None  # both formats of 49 gone
    assert len(cache) == 8 and cache.size == 8 * (100 + ENTRY_OVERHEAD)
    cache.limit = 0
    cache.put(shape, 99, b"y")
    assert get(cache, shape, 99) is None


def test_the_least_recently_used_entries_go_first():
    cache = MessageCache()
    cache.limit = 10 * (100 + ENTRY_OVERHEAD)
    shape, other = shape_of(True, False, False), shape_of(False, False, False)
    for n in range(10):
        cache.put(shape, n, b"x" * 100)
    assert cache.lookup(shape, [0, 3, 77]) == [b"x" * 100, b"x" * 100, None]  # 0 and 3: now the most recent
    for n in range(10, 14):
        cache.put(shape, n, b"x" * 100)
    assert [n for n in range(14) if n in cache.entries[shape]] == [0, 3, 6, 7, 8, 9, 10, 11, 12, 13]
    for n in range(3):  # another format: entries go from the one holding the most bytes
        cache.put(other, n, b"y" * 100)
    assert list(cache.entries[shape]) == [9, 0, 3, 10, 11, 12, 13] and list(cache.entries[other]) == [0, 1, 2]
    assert cache.size == len(cache) * (100 + ENTRY_OVERHEAD) <= cache.limit


def test_a_zero_bound_turns_the_cache_off(tmp_path):
    server = LiveServer(data_dir_for(tmp_path), message_cache_mib=0)
    try:
        make_channel(server, "solo", [server.owner.id])
        message_id = post(server, server.owner, "solo", "t", "hello")
        body = assert_success(server.owner.get("/messages", {"anchor": "newest", "num_before": 5, "num_after": 0}))
        assert [m["id"] for m in body["messages"]][-1] == message_id
        assert server.read(lambda tx: len(directory(tx).messages)) == 0
    finally:
        server.stop()


def test_changing_what_no_message_shows_keeps_the_encoded_messages(org_everyone_in_random):
    live = org_everyone_in_random
    post(live, live.alice, "general", "lunch", "kept across user changes")
    page = {"anchor": "newest", "num_before": "20", "num_after": "0"}
    first = live.bob.get("/messages", page)
    assert first.status_code == 200, first.text
    counts = live.read(lambda tx: (directory(tx).messages.hits, directory(tx).messages.misses))
    change_unshown_columns(live, live.alice.id, random.Random(3))
    again = live.bob.get("/messages", page)
    assert again.content == first.content
    after = live.read(lambda tx: (directory(tx).messages.hits, directory(tx).messages.misses))
    assert after[1] == counts[1] and after[0] > counts[0]  # every message from the cache, none encoded again
    assert_success(live.owner.patch(f"/users/{live.alice.id}", {"full_name": "Alice Renamed"}))
    renamed = live.bob.get("/messages", page)
    assert b"Alice Renamed" in renamed.content
    assert live.read(lambda tx: directory(tx).messages.misses) > after[1]  # a shown column: encoded again


def cache_misses(live) -> int:
    return live.read(lambda tx: directory(tx).messages.misses)


def test_new_channels_and_conversations_keep_the_encoded_messages(org_everyone_in_random):
    """A new channel, a channel's first message and a new conversation change no message already sent:
    the encoded messages stay. Members added to an existing conversation (in SQL: the API never does)
    change what its messages show: they are encoded again."""
    live = org_everyone_in_random
    older = [post(live, live.alice, "general", "lunch", "before"), post_direct(live, live.alice, [live.bob.id])]
    page = {"anchor": str(max(older)), "num_before": "20", "num_after": "0"}

    first = live.bob.get("/messages", page)
    assert first.status_code == 200, first.text
    before = cache_misses(live)
    make_channel(live, "brand-new", [live.owner.id, live.alice.id, live.bob.id])
    post(live, live.alice, "brand-new", "hello", "the channel's first message")
    post_direct(live, live.carol, [live.bob.id, live.alice.id], "a new conversation of three")
    assert live.bob.get("/messages", page).content == first.content
    assert cache_misses(live) == before  # nothing encoded again

    def add_member(tx):
        group = tx.value("SELECT type_id FROM recipients WHERE id = (SELECT recipient_id FROM messages WHERE id = ?)",
                         (older[1],))  # fmt: skip
        tx.execute("INSERT INTO direct_message_group_members (group_id, user_id) VALUES (?, ?)",
                   (group, live.carol.id))  # fmt: skip

    live.write(add_member)
    after = live.bob.get("/messages", page)
    [direct] = [m for m in after.json()["messages"] if m["id"] == older[1]]
    assert sorted(p["id"] for p in direct["display_recipient"]) == sorted([live.alice.id, live.bob.id, live.carol.id])
    assert cache_misses(live) > before
    assert after.content == uncached(live, live.bob, {**page, "num_before": 20, "num_after": 0})


def test_channel_settings_keep_the_encoded_messages_and_a_rename_does_not(org_everyone_in_random):
    """Messages show a channel's name only: its description or privacy leave them encoded."""
    live = org_everyone_in_random
    post(live, live.alice, "general", "lunch", "in general")
    page = {"anchor": "newest", "num_before": "20", "num_after": "0"}

    first = live.bob.get("/messages", page)
    before = cache_misses(live)
    channel = live.channels["general"]
    assert_success(live.owner.patch(f"/streams/{channel}", {"description": "where everyone is"}))
    assert_success(live.owner.patch(f"/streams/{channel}", {"is_private": "true"}))
    assert live.bob.get("/messages", page).content == first.content
    assert cache_misses(live) == before
    assert_success(live.owner.patch(f"/streams/{channel}", {"new_name": "everyone"}))
    renamed = live.bob.get("/messages", page)
    assert b'"display_recipient":"everyone"' in renamed.content and cache_misses(live) > before


def test_the_envelope_around_an_encoded_page_is_the_encoding_of_the_whole():
    """success_body joins a trailing msgspec.Raw (a page from the cache) instead of encoding around it."""
    from tornchat.base import success_body

    page = msgspec.Raw(b'[{"id":1,"content":"x"},{"id":2,"flags":["read"]}]')
    data = {"anchor": 2, "found_anchor": True, "history_limited": False, "messages": page}
    for ignored in ([], ["bogus", "other"]):
        whole = {"result": "success", "msg": "", **data}
        if ignored:
            whole["ignored_parameters_unsupported"] = ignored
        assert success_body(data, ignored) == _encode(whole) + b"\n"
    assert success_body({"messages": msgspec.Raw(b"[]")}, []) == b'{"result":"success","msg":"","messages":[]}\n'
    assert success_body(None, []) == b'{"result":"success","msg":""}\n'
