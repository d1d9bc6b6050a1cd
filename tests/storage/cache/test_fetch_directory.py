"""Users, channels and the realm held in memory (storage/cache/directory.py): every change shows at once.

GET /messages and authentication read them from memory; these tests change each through the API
(or behind its back, in SQL: the triggers see every write) and look at the very next request.
"""

from __future__ import annotations

import sqlite3

import pytest

from storage.cache import journal as journal_module
from storage.cache.directory import directory
from storage.db.database import connect
from storage.org import groups
from storage.org.users import get_user_by_id
from tests.support.channel_helpers import make_channel, set_channel_group
from tests.support.get_messages_helpers import add_reaction_row, message_by_id, narrow_ids, post, post_direct
from tests.support.helpers import assert_error, assert_success, set_visibility


def test_a_renamed_sender_shows_at_once_in_messages_reactions_and_conversations(people):
    live = people
    channel_message = post(live, live.alice, "general")
    direct = post_direct(live, live.alice, [live.bob.id])
    add_reaction_row(live, channel_message, live.alice.id, "tada", "1f389")
    assert message_by_id(live.bob, channel_message)["sender_full_name"] == "Alice"
    assert_success(live.owner.patch(f"/users/{live.alice.id}", {"full_name": "Alicia"}))
    message = message_by_id(live.bob, channel_message)
    assert message["sender_full_name"] == "Alicia"
    assert message["reactions"][0]["user"]["full_name"] == "Alicia"
    names = {p["id"]: p["full_name"] for p in message_by_id(live.bob, direct)["display_recipient"]}
    assert names[live.alice.id] == "Alicia"


def test_an_email_visibility_change_shows_at_once(people):
    live = people
    message_id = post(live, live.alice, "general")
    before = message_by_id(live.bob, message_id)["sender_email"]
    set_visibility(live, live.alice.id, 5 if before == "alice@example.com" else 1)
    after = message_by_id(live.bob, message_id)["sender_email"]
    assert after != before
    assert {before, after} == {"alice@example.com", f"user{live.alice.id}@{live.server.realm.email_host}"}


def test_a_renamed_channel_shows_at_once(people):
    live = people
    message_id = post(live, live.alice, "general")
    assert message_by_id(live.bob, message_id)["display_recipient"] == "general"
    assert_success(live.owner.patch(f"/streams/{live.channel_id}", {"new_name": "town square"}))
    assert message_by_id(live.bob, message_id)["display_recipient"] == "town square"


def test_the_realm_edit_history_setting_shows_at_once(people):
    live = people
    message_id = post(live, live.alice, "general", content="first")
    assert_success(live.alice.patch(f"/messages/{message_id}", {"content": "second"}))
    assert "edit_history" in message_by_id(live.bob, message_id)
    assert_success(live.owner.patch("/realm", {"allow_edit_history": False}))
    assert "edit_history" not in message_by_id(live.bob, message_id)


def test_a_deactivated_user_fails_authentication_at_once(people):
    live = people
    assert_success(live.alice.get("/users/me"))
    assert_success(live.owner.delete(f"/users/{live.alice.id}"))
    assert_error(live.alice.get("/users/me"), "Account is deactivated", "UNAUTHORIZED", 401)
    assert_success(live.owner.post(f"/users/{live.alice.id}/reactivate"))
    assert_success(live.alice.get("/users/me"))


def test_a_changed_api_key_fails_at_once_and_the_new_one_works(people):
    live = people
    assert_success(live.alice.get("/users/me"))
    new_key = "N" * 32
    live.write(lambda tx: tx.execute("UPDATE users SET api_key = ? WHERE id = ?", (new_key, live.alice.id)))
    assert_error(live.alice.get("/users/me"), "Invalid API key", "UNAUTHORIZED", 401)
    live.alice.session.auth = (live.alice.email, new_key)
    assert_success(live.alice.get("/users/me"))


def test_a_changed_email_authenticates_by_the_new_one_only(people):
    live = people
    assert_success(live.bob.get("/users/me"))
    set_visibility(live, live.bob.id, 1)
    live.write(lambda tx: tx.execute("UPDATE users SET delivery_email = 'robert@example.com' WHERE id = ?",
                                     (live.bob.id,)))  # fmt: skip
    assert_error(live.bob.get("/users/me"), "Invalid API key", "UNAUTHORIZED", 401)
    live.bob.session.auth = ("Robert@Example.com", live.bob.api_key)
    assert_success(live.bob.get("/users/me"))


def test_a_rolled_back_write_leaves_nothing_behind(people):
    live = people

    def rename_then_fail(tx):
        tx.execute("UPDATE users SET full_name = 'Nobody' WHERE id = ?", (live.alice.id,))
        assert directory(tx).user(live.alice.id).full_name == "Nobody"  # read inside: not kept
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        live.write(rename_then_fail)
    assert live.read(lambda tx: directory(tx).user(live.alice.id).full_name) == "Alice"
    message_id = post(live, live.alice, "general")
    assert message_by_id(live.bob, message_id)["sender_full_name"] == "Alice"


def test_a_value_read_inside_the_writing_transaction_is_dropped_after_its_commit(people):
    live = people

    def rename_and_read(tx):
        tx.execute("UPDATE users SET full_name = 'Ally' WHERE id = ?", (live.alice.id,))
        return directory(tx).sender(live.alice.id).full_name

    assert live.write(rename_and_read) == "Ally"
    live.write(lambda tx: tx.execute("UPDATE users SET full_name = 'Al' WHERE id = ?", (live.alice.id,)))
    assert live.read(lambda tx: directory(tx).user(live.alice.id).full_name) == "Al"


def test_a_commit_by_another_connection_is_seen(people):
    live = people
    message_id = post(live, live.alice, "general")
    assert message_by_id(live.bob, message_id)["sender_full_name"] == "Alice"
    other = sqlite3.connect(live.server.db.path)  # another process's connection: no triggers of ours
    with other:
        other.execute("UPDATE users SET full_name = 'Elsewhere' WHERE id = ?", (live.alice.id,))
    other.close()
    assert message_by_id(live.bob, message_id)["sender_full_name"] == "Elsewhere"


def test_last_active_writes_do_not_drop_users(people):
    live = people
    live.read(lambda tx: directory(tx).user(live.alice.id))
    live.write(lambda tx: tx.execute("UPDATE users SET last_active = last_active + 1 WHERE id = ?", (live.alice.id,)))
    assert live.read(lambda tx: live.alice.id in directory(tx).users)


def test_the_directory_agrees_with_the_database_for_every_user(people):
    live = people

    def compare(tx):
        known = directory(tx)
        ids = [row[0] for row in tx.all("SELECT id FROM users")]
        return [(known.user(user_id), get_user_by_id(tx, user_id)) for user_id in ids]

    pairs = live.read(compare)
    assert len(pairs) >= 3
    for cached, stored in pairs:
        assert cached == stored


def test_triggers_created_in_a_rolled_back_transaction_are_created_again(tmp_path):
    from storage.db.database import Database

    db = Database(str(tmp_path / "db.sqlite3"))
    try:

        def first_use_then_fail(tx):
            directory(tx)
            assert tx.value(journal_module.COUNT_TRIGGERS) == journal_module.TRIGGER_COUNT
            raise RuntimeError("rolled back")

        with pytest.raises(RuntimeError):
            db.write(first_use_then_fail)
        assert db.read(lambda tx: tx.value(journal_module.COUNT_TRIGGERS)) == 0
        assert not db.conn.journal.installed
        db.read(lambda tx: directory(tx))
        assert db.read(lambda tx: tx.value(journal_module.COUNT_TRIGGERS)) == journal_module.TRIGGER_COUNT
        assert db.conn.journal.installed
    finally:
        db.close()


def test_a_connection_not_opened_by_connect_gets_a_fresh_directory_each_time(tmp_path):
    path = str(tmp_path / "db.sqlite3")
    connect(path).close()
    plain = sqlite3.connect(path)

    class FakeTx:
        conn = plain
        after_commit: list = []

    assert directory(FakeTx()) is not directory(FakeTx())
    plain.close()


def test_unreadable_channels_follow_subscriptions_and_groups_written_behind_the_back(people):
    """The channels a user may no longer read are kept per user; writes to subscriptions, group
    memberships and channels (even in SQL, past the API) show on the very next fetch."""
    live = people
    secret = make_channel(live, "secret", [live.owner.id, live.alice.id], invite_only=True)
    m1 = post(live, live.owner, "secret", "plans", "secret plans")
    dm = post_direct(live, live.owner, [live.alice.id], "still here")
    assert narrow_ids(live.alice, []) == [m1, dm]

    def set_active(active):
        live.write(lambda tx: tx.execute("UPDATE subscriptions SET active = ? WHERE user_id = ? AND channel_id = ?",
                                         (active, live.alice.id, secret)))  # fmt: skip

    set_active(0)
    assert narrow_ids(live.alice, []) == [dm]
    set_active(1)
    assert narrow_ids(live.alice, []) == [m1, dm]
    set_active(0)
    set_channel_group(live, secret, "can_subscribe_group", "role:members")  # a channels write
    assert narrow_ids(live.alice, []) == [m1, dm]
    held = live.read(lambda tx: tx.column("SELECT group_id FROM user_group_members WHERE user_id = ?",
                                          (live.alice.id,)))  # fmt: skip
    assert live.read(lambda tx: groups.system_group_id(tx, "role:members")) in held
    live.write(lambda tx: tx.execute("DELETE FROM user_group_members WHERE user_id = ?", (live.alice.id,)))
    assert narrow_ids(live.alice, []) == [dm]
    live.write(lambda tx: tx.executemany("INSERT INTO user_group_members (group_id, user_id) VALUES (?, ?)",
                                         [(g, live.alice.id) for g in held]))  # fmt: skip
    assert narrow_ids(live.alice, []) == [m1, dm]


def test_channel_narrows_follow_channel_rows_and_recipients_written_behind_the_back(people):
    """A channel term's channel and recipient are kept: a channel's first message, and a history
    setting changed in SQL, show on the very next fetch (by id, and by id as a digit string)."""
    live = people
    carol = live.make_user(email="carol@example.com", full_name="Carol")  # subscribed to nothing
    quiet = make_channel(live, "quiet", [live.owner.id])
    by_id, by_digits = [{"operator": "channel", "operand": quiet}], [{"operator": "stream", "operand": str(quiet)}]
    assert narrow_ids(carol, by_id) == []  # nothing sent yet: the channel has no recipient
    first = post(live, live.owner, "quiet")
    assert narrow_ids(carol, by_id) == narrow_ids(carol, by_digits) == [first]  # public history

    def set_history_public(public):
        live.write(lambda tx: tx.execute("UPDATE channels SET history_public_to_subscribers = ? WHERE id = ?",
                                         (public, quiet)))  # fmt: skip

    set_history_public(0)
    assert narrow_ids(carol, by_id) == narrow_ids(carol, by_digits) == []  # only her own rows: none
    set_history_public(1)
    assert narrow_ids(carol, by_id) == [first]


def test_a_linkifier_version_written_behind_the_back_shows_at_once(people):
    """The directory keeps linkifier_state's version (storage/text/linkify.py compiles per version): a
    linkifier added in SQL with its version bump links the next page's topics."""
    live = people
    message_id = post(live, live.alice, "general", topic="see #42")
    assert message_by_id(live.bob, message_id)["topic_links"] == []

    def add_linkifier(tx):
        tx.execute("INSERT INTO linkifiers (pattern, url_template) VALUES (?, ?)",
                   (r"#(?P<id>[0-9]+)", "https://tracker.example/{id}"))  # fmt: skip
        tx.execute("UPDATE linkifier_state SET version = version + 1")

    live.write(add_linkifier)
    links = message_by_id(live.bob, message_id)["topic_links"]
    assert links == [{"text": "#42", "url": "https://tracker.example/42"}]
