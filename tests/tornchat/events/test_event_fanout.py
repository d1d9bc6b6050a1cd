"""Event fan-out (issue 12 point 5): polls answer from each form's JSON, encoded once, byte for byte as before."""

from __future__ import annotations

import gc
import logging
import random

import msgspec
import pytest

from storage.org.users import get_user_by_id
from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import (
    Poll,
    poll,
    register,
    send_direct,
    send_stream,
    wait_on_server,
    wait_until_parked,
)
from tests.support.helpers import assert_success
from tornchat.events import gc_hold
from tornchat.events.body import Body, entry_json, prepared
from tornchat.handlers.events import DEFERRED_LOGS

_encode = msgspec.json.Encoder().encode


def old_answer(queue, ignored=None) -> bytes:
    """GET /events' answer as it was encoded before: the whole response, per queue, from its event dicts."""
    body = {"result": "success", "msg": "", "events": queue.events, "queue_id": queue.id}
    if ignored:
        body["ignored_parameters_unsupported"] = ignored
    return _encode(body) + b"\n"


def random_options(rng: random.Random, guest: bool) -> dict:
    capabilities = {name: rng.random() < 0.5 for name in ("empty_topic_name", "user_settings_object")}
    return {
        "apply_markdown": rng.random() < 0.5,
        "client_gravatar": rng.random() < 0.5,
        "all_public_streams": not guest and rng.random() < 0.3,
        "client_capabilities": capabilities,
    }


def random_actions(live, rng: random.Random, people, own_queues: dict[int, list[str]], count: int) -> None:
    """Messages (channel and direct, empty topics, mentions, own local ids), reactions, edits and flags."""
    names = {p.id: live.read(get_user_by_id, p.id).full_name for p in people}
    sent: list[tuple[object, int]] = []
    for _ in range(count):
        author = rng.choice(people)
        roll = rng.random()
        if roll < 0.45 or not sent:
            mention = f"@**{names[rng.choice(people).id]}** " if rng.random() < 0.4 else ""
            topic = rng.choice(["", "lunch", "Lunch", "✔ done"])
            channel = "closed" if rng.random() < 0.3 and author is not people[2] else "open"  # people[2] is not in it
            own = {"queue_id": rng.choice(own_queues[author.id]), "local_id": str(rng.randint(1, 99))}
            message_id = send_stream(author, channel, mention + "*hi* " * rng.randint(1, 4), topic, **own)
            sent.append((author, message_id))
        elif roll < 0.6:
            others = rng.sample([p.id for p in people if p is not author], rng.randint(1, 2))
            sent.append((author, send_direct(author, others, "**psst**")))
        elif roll < 0.75:
            reactor = rng.choice(people)
            reactor.post(f"/messages/{rng.choice(sent)[1]}/reactions", {"emoji_name": rng.choice(["smile", "tada"])})
        elif roll < 0.9:
            owner, message_id = rng.choice(sent)
            assert_success(owner.patch(f"/messages/{message_id}", {"content": f"edited {rng.random()}"}))
        else:
            reader = rng.choice(people)
            ids = [message_id for _, message_id in rng.sample(sent, min(3, len(sent)))]
            reader.post("/messages/flags", {"messages": ids, "op": rng.choice(["add", "remove"]), "flag": "read"})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_poll_answers_are_the_old_per_queue_encoding(gravatar_live, seed):
    live = gravatar_live  # with Gravatar on, client_gravatar makes a form of its own
    rng = random.Random(seed)
    people = [live.owner, live.make_user(), live.make_user(), live.make_user(role="guest"), live.make_user()]
    ids = [p.id for p in people]
    make_channel(live, "open", ids)
    make_channel(live, "closed", [i for i in ids if i != people[2].id], invite_only=True)
    queues = []
    for person in people:
        for _ in range(3):
            state = register(person, **random_options(rng, person is people[3]))
            queues.append((person, state["queue_id"]))
    own_queues = {p.id: [q for owner, q in queues if owner is p] for p in people}
    random_actions(live, rng, people, own_queues, 40)
    answers = b""
    for index, (person, queue_id) in enumerate(queues):
        queue = live.call(lambda q=queue_id: live.server.queues.queues[q])
        extra = {"unknown_option": "1"} if index % 4 == 0 else {}
        expected = live.call(lambda q=queue, e=extra: old_answer(q, list(e)))
        answer = poll(person, queue_id, dont_block=True, **extra)
        assert answer.status_code == 200
        assert answer.content == expected, f"queue {index}"
        answers += answer.content
        assert len(queue.entries) > 3
        assert all(body.json == _encode(dict(body)) for _, body, _ in queue.entries)
    # The forms that make queues' JSON differ all occurred.
    for form in (b'"local_message_id"', b'"text/x-markdown"', b'"avatar_url":null', b'"reaction"', b'"mentioned"'):
        assert form in answers, form


def test_one_encoding_per_form_shared_by_every_queue(live):
    people = [live.owner] + [live.make_user() for _ in range(5)]
    make_channel(live, "open", [p.id for p in people])
    markdown = [register(p, apply_markdown=True)["queue_id"] for p in people]
    source = [register(p, apply_markdown=False)["queue_id"] for p in people[1:]]
    send_stream(live.owner, "open", "hello **there**")

    def messages(queue_ids):
        return [
            next(b for _, b, _ in live.server.queues.queues[q].entries if b["type"] == "message") for q in queue_ids
        ]

    rendered, raw = live.call(lambda: (messages(markdown[1:]), messages(source)))
    assert all(body is rendered[0] for body in rendered) and all(body is raw[0] for body in raw)
    assert rendered[0].json != raw[0].json and b"<strong>" in rendered[0].json


def test_entry_json_appends_the_id_as_the_old_encoding_did():
    for body in ({"type": "x", "list": [1, "é"]}, {"type": "y", "id": 7, "z": None}, {}):
        encoded, _ = prepared(body)
        assert isinstance(encoded, Body)
        assert entry_json(12, encoded) == _encode({**body, "id": 12})


def test_a_woken_poll_is_logged_after_its_wave(live, caplog):
    caplog.set_level(logging.INFO, logger="tornchat.access")
    make_channel(live, "open", [live.owner.id])
    queue_id = register(live.owner, event_types=["message"])["queue_id"]
    parked = Poll(live.owner, queue_id)
    wait_until_parked(live, queue_id)
    send_stream(live.owner, "open")
    assert_success(parked.result())
    live.call(lambda: DEFERRED_LOGS[live.loop].flush())
    lines = [r.getMessage() for r in caplog.records if r.name == "tornchat.access"]
    assert any(line.startswith("GET /api/v1/events 200") for line in lines), lines


def test_a_wave_of_polls_holds_the_garbage_collector_until_answered(live, monkeypatch):
    monkeypatch.setattr(gc_hold, "WAVE_QUEUES", 3)
    monkeypatch.setattr(gc_hold, "WAVE_SECONDS", 2.0)
    people = [live.owner, live.make_user(), live.make_user()]
    make_channel(live, "open", [p.id for p in people])
    make_channel(live, "small", [live.owner.id])
    for person in people:
        register(person, event_types=["message"])
    try:
        send_stream(live.owner, "small")  # one queue: no wave
        assert live.call(gc.isenabled)
        send_stream(live.owner, "open")  # three queues: a wave
        assert not live.call(gc.isenabled)
        wait_on_server(live, gc.isenabled, "the collector runs again after WAVE_SECONDS")
    finally:
        live.call(lambda: gc_hold._release_garbage_collection(live.loop))
        gc.enable()
