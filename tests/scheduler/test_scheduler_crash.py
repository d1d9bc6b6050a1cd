"""kill -9 during delivery: every scheduled message is still delivered exactly once.

A subprocess opens the live server's database with storage.db.Database, delivers due messages
one transaction at a time, and SIGKILLs itself: right after its Nth commit, or inside the Nth
transaction (the message and its per-user rows written, the COMMIT not reached). The test then
runs deliver_due on the server and checks the database: one message per scheduled message,
`delivered_message_id` set on each, no message without its scheduled row, no duplicates.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.support.channel_helpers import make_channel
from tests.support.paths import REPO
from tests.support.scheduled_helpers import deliver, listed, schedule_direct_ok, schedule_ok

MESSAGES = 30
KILL_AFTER = 12

DELIVER_UNTIL_KILLED = """
import os, signal, sys
import scheduler.delivery as delivery
from storage.db.database import Database

path, now, kill_after, mode = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
db = Database(path, clock=lambda: now)
real_deliver_one = delivery.deliver_one
attempts = 0

def deliver_one(tx, scheduled_id):
    global attempts
    attempts += 1
    message_id = real_deliver_one(tx, scheduled_id)
    if mode == "inside" and attempts == kill_after:
        os.kill(os.getpid(), signal.SIGKILL)  # inside the transaction: written, not committed
    return message_id

delivery.deliver_one = deliver_one
while True:
    delivery.deliver_due(db, now, 1)
    if mode == "between" and attempts == kill_after:
        os.kill(os.getpid(), signal.SIGKILL)  # right after a commit
"""


def counts(live) -> dict[str, int]:
    def count(tx):
        return {
            "delivered": tx.value("SELECT count(*) FROM scheduled_messages WHERE delivered_message_id IS NOT NULL"),
            "distinct_messages": tx.value("SELECT count(DISTINCT delivered_message_id) FROM scheduled_messages"),
            "messages": tx.value("SELECT count(*) FROM messages"),
            "orphans": tx.value(
                "SELECT count(*) FROM messages WHERE id NOT IN"
                " (SELECT delivered_message_id FROM scheduled_messages WHERE delivered_message_id IS NOT NULL)"
            ),
            "orphan_rows": tx.value(
                "SELECT count(*) FROM user_messages WHERE message_id NOT IN (SELECT id FROM messages)"
            ),
            "failed": tx.value("SELECT count(*) FROM scheduled_messages WHERE failed"),
        }

    return live.read(count)


@pytest.mark.parametrize(("mode", "committed"), [("between", KILL_AFTER), ("inside", KILL_AFTER - 1)])
def test_kill_9_during_delivery_loses_and_repeats_nothing(live, mode, committed):
    general = make_channel(live, "general", [live.owner.id])
    alice, bob = live.make_user(), live.make_user()
    due = int(live.clock.now) + 60
    for i in range(MESSAGES):
        if i % 3:
            schedule_ok(live, live.owner, general, at=due + i % 5, content=f"m{i}")
        else:
            schedule_direct_ok(live, live.owner, [alice.id, bob.id], at=due + i % 5, content=f"m{i}")
    live.clock.advance(70)

    args = [live.server.settings.database_path, str(live.clock.now), str(KILL_AFTER), mode]
    env = {**os.environ, "PYTHONPATH": REPO}
    done = subprocess.run([sys.executable, "-c", DELIVER_UNTIL_KILLED, *args], cwd=REPO, env=env, timeout=60,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stderr

    after_crash = counts(live)
    assert after_crash == {"delivered": committed, "distinct_messages": committed, "messages": committed,
                           "orphans": 0, "orphan_rows": 0, "failed": 0}  # fmt: skip

    assert len(deliver(live)) == MESSAGES - committed
    assert counts(live) == {"delivered": MESSAGES, "distinct_messages": MESSAGES, "messages": MESSAGES,
                            "orphans": 0, "orphan_rows": 0, "failed": 0}  # fmt: skip
    contents = live.read(lambda tx: tx.column("SELECT content FROM messages ORDER BY content"))
    assert contents == sorted(f"m{i}" for i in range(MESSAGES))
    assert listed(live.owner) == []
    assert deliver(live) == []
