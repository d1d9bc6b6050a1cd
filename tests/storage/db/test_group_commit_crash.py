"""kill -9 and group commit: every answered send is stored; a batch killed before its COMMIT leaves nothing.

The durability setting (WAL, synchronous = NORMAL) is durable against a crash of the process:
a transaction is in the WAL file when COMMIT returns, and a send is answered only after that.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import requests

from tests.support.channel_helpers import make_channel
from tests.support.helpers import PASSWORD, free_port
from tests.support.paths import REPO
from tornchat.bootstrap import bootstrap
from tornchat.settings import Settings

SENDERS = 8
ANSWERED_BEFORE_KILL = 60


def start_server(data_dir: str, port: int) -> subprocess.Popen[bytes]:
    """`python -m tornchat serve` in its own process; return once it accepts connections."""
    command = [sys.executable, "-m", "tornchat", "serve", "--data-dir", data_dir, "--port", str(port)]
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, f"the server exited with {server.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.05)  # waiting on a real process to start listening
    server.kill()
    raise AssertionError("the server did not start listening")


def test_kill_9_right_after_answered_sends_loses_none_of_them(tmp_path):
    data_dir = str(tmp_path / "data")
    settings = Settings(data_dir=data_dir, site="http://127.0.0.1:9991", email_host="zulip.testserver")
    owner = bootstrap(settings, "owner@example.com", PASSWORD)
    port = free_port()
    server = start_server(data_dir, port)
    base = f"http://127.0.0.1:{port}/api/v1"
    auth = ("owner@example.com", owner.api_key)
    try:
        created = requests.post(f"{base}/channels/create", data={"name": "general", "subscribers": "[]"}, auth=auth)
        assert created.status_code == 200, created.text
        answered: list[tuple[int, str]] = []
        stop = threading.Event()

        def sender(n: int) -> None:
            session = requests.Session()
            session.auth = auth
            k = 0
            while not stop.is_set():
                content = f"sender {n} message {k}"
                body = {"type": "stream", "to": "general", "topic": "t", "content": content}
                try:
                    response = session.post(f"{base}/messages", data=body, timeout=30)
                except requests.RequestException:
                    return  # the server was killed: this send was not answered
                assert response.status_code == 200, response.text
                answered.append((response.json()["id"], content))
                k += 1

        threads = [threading.Thread(target=sender, args=(n,), daemon=True) for n in range(SENDERS)]
        for thread in threads:
            thread.start()
        while len(answered) < ANSWERED_BEFORE_KILL:
            assert server.poll() is None
            time.sleep(0.01)  # waiting on the real server process
        os.kill(server.pid, signal.SIGKILL)  # sends are in flight: some queued, one batch maybe mid-commit
        server.wait(10)
        stop.set()
        for thread in threads:
            thread.join(30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)

    known = list(answered)
    conn = sqlite3.connect(settings.database_path)  # recovers the WAL the killed server left
    try:
        stored = dict(conn.execute("SELECT id, content FROM messages").fetchall())
        rows = dict(conn.execute("SELECT message_id, count(*) FROM user_messages GROUP BY message_id").fetchall())
    finally:
        conn.close()
    assert len(known) >= ANSWERED_BEFORE_KILL
    assert {message_id: stored.get(message_id) for message_id, _ in known} == dict(known)
    assert all(rows.get(message_id) == 1 for message_id, _ in known)  # the owner's row (the only subscriber)
    assert set(rows) == set(stored)  # no rows of a message that is not there


KILLED_MID_BATCH = """
import os, signal, sys
from storage.db.database import Database
from storage.db.write_batch import WriteBatcher
from storage.messages.messages import SendRequest, send_message
from storage.org.users import get_user_by_id

path, owner_id = sys.argv[1], int(sys.argv[2])
db = Database(path)
owner = db.read(get_user_by_id, owner_id)
flushes = []
batcher = WriteBatcher(db, flushes.append, lambda delay, fn: flushes.append(fn))

def answered(error, result):
    print(result if error is None else f"error {error}", flush=True)

def killed_after_storing(tx, sender, request):
    message_id = send_message(tx, sender, request)
    os.kill(os.getpid(), signal.SIGKILL)  # the batch's last call: written, not committed

def request(content):
    return SendRequest(type="stream", to="general", topic="t", content=content)

for b, batch in enumerate(((send_message,) * 3, (send_message, send_message, killed_after_storing))):
    for n, fn in enumerate(batch):
        batcher.submit(answered, fn, owner, request(f"batch {b} send {n}"))
    while flushes:
        flushes.pop(0)()
"""


def test_kill_9_between_batch_start_and_commit_loses_only_unanswered_sends(live):
    make_channel(live, "general", [live.owner.id])
    env = {**os.environ, "PYTHONPATH": REPO}
    args = [live.server.settings.database_path, str(live.owner.id)]
    done = subprocess.run([sys.executable, "-c", KILLED_MID_BATCH, *args], cwd=REPO, env=env, timeout=60,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stderr
    answered = [int(line) for line in done.stdout.split()]
    assert len(answered) == 3  # the first batch; the second was killed before its COMMIT
    stored = live.read(lambda tx: tx.column("SELECT id FROM messages ORDER BY id"))
    assert stored == answered
    rows = live.read(lambda tx: tx.column("SELECT DISTINCT message_id FROM user_messages ORDER BY message_id"))
    assert rows == answered
