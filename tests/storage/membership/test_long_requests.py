"""Requests that once held the event loop long (bench/long_requests.py): their work stays linear.

No timings here: the SQL statements a request runs are counted, which grew with the square of the
users subscribed at once before (each new subscriber's event rebuilt the channel object and read the
whole subscriber list).
"""

from __future__ import annotations

import json

from tests.support.helpers import assert_success


def count_statements(live, send):
    """Run send() and return how many SQL statements the server ran meanwhile.

    SQLite's trace repeats a statement's text for each trigger program it runs (the change journal's,
    storage/cache/journal.py): those repeats are not statements of their own and are not counted.
    """
    statements = []
    conn = live.server.db.conn
    live.call(lambda: conn.set_trace_callback(statements.append))
    try:
        send()
    finally:
        live.call(lambda: conn.set_trace_callback(None))
    return sum(1 for index, sql in enumerate(statements) if index == 0 or sql != statements[index - 1])


def test_subscribing_many_users_builds_each_channel_once(live):
    people = [live.make_user() for _ in range(60)]
    ids = [person.id for person in people]
    start = len(live.events())

    def subscribe(name, count):
        params = {
            "subscriptions": json.dumps([{"name": name}]),
            "principals": json.dumps(ids[:count]),
            "send_new_subscription_messages": "false",  # those are linear too, but many statements each
        }
        assert_success(live.owner.post("/users/me/subscriptions", params))

    few = count_statements(live, lambda: subscribe("few", 10))
    many = count_statements(live, lambda: subscribe("many", 60))
    # About five statements per extra subscriber (its row, its colour, the row read back...); twenty
    # more each when every subscriber's event rebuilt the channel object.
    assert many - few <= 6 * 50
    adds = [(event, audience) for event, audience in live.events()[start:] if event.get("op") == "add"]
    objects = {
        audience[0]: event["subscriptions"][0]
        for event, audience in adds
        if event["subscriptions"][0]["name"] == "many"
    }
    assert sorted(objects) == sorted(ids)
    for subscription in objects.values():
        assert subscription["subscribers"] == sorted(ids)
        assert subscription["subscriber_count"] == 60
    # Each user's object is its own: changing one changes no other.
    objects[ids[0]]["color"] = "changed"
    assert all(objects[user_id]["color"] != "changed" for user_id in ids[1:])


def test_new_subscription_messages_only_up_to_zulips_bulk_limit(live):
    """Subscribing more than 100 others at once sends them no notification-bot messages (Zulip's limit)."""
    people = [live.make_user(password=None) for _ in range(101)]
    ids = [person.id for person in people]
    state = assert_success(live.owner.post("/register", {"fetch_event_types": json.dumps(["realm"])}))
    assert state["max_bulk_new_subscription_messages"] == 100

    def subscribe(name, principals):
        params = {"subscriptions": json.dumps([{"name": name}]), "principals": json.dumps(principals)}
        return assert_success(live.owner.post("/users/me/subscriptions", params))["new_subscription_messages_sent"]

    def messages_sent():
        return live.read(lambda tx: tx.value("SELECT count(*) FROM messages"))

    before = messages_sent()
    assert subscribe("too many", ids) is False
    assert messages_sent() == before
    assert subscribe("just enough", ids[:100]) is True
    assert messages_sent() == before + 100
