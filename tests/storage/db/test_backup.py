"""Backups of a live server under write load, restored and served again (storage/db/backup.py)."""

from __future__ import annotations

import os
import sqlite3
import tarfile
import threading
import types

import msgspec
import pytest

from storage.db import backup
from tests.support.channel_helpers import make_channel
from tests.support.helpers import NextServer, assert_success, wait_for


class Writer(threading.Thread):
    """Sends messages one after another; records the id of every acknowledged one, and any failure."""

    def __init__(self, client) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.acknowledged: list[int] = []
        self.failures: list[str] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stopping.is_set():
            n += 1
            body = {"type": "stream", "to": "load", "topic": "backup", "content": f"write {n}"}
            response = self.client.post("/messages", body)
            if response.status_code != 200:
                self.failures.append(response.text)
                return
            self.acknowledged.append(response.json()["id"])

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)


def restored_server(live, data_dir):
    """A server on the restored data directory, with the first one's clock and owner."""
    first = types.SimpleNamespace(
        clock=live.clock, settings=msgspec.structs.replace(live.settings, data_dir=data_dir), owner_user=live.owner_user
    )
    return NextServer(first)


def test_backup_under_write_load_restores_every_acknowledged_write(live, tmp_path):
    make_channel(live, "load")
    writer = Writer(live.make_user())
    writer.start()
    archive = str(tmp_path / "backup.tar.gz")
    try:
        wait_for(lambda: len(writer.acknowledged) >= 20, "the writer is writing")
        # Back up until some write was acknowledged while a backup ran (the copy and the server's
        # commits overlapped); each backup replaces the last.
        for _ in range(50):
            before = list(writer.acknowledged)
            backup.create_backup(live.settings.data_dir, archive, live.clock())
            if len(writer.acknowledged) > len(before):
                break
        assert len(writer.acknowledged) > len(before), "no write was acknowledged during a backup"
        wait_for(lambda: len(writer.acknowledged) >= len(before) + 20, "writes go on after the backup")
    finally:
        writer.stop()
    assert writer.failures == []

    restored = str(tmp_path / "restored")
    summary = backup.restore_backup(archive, restored)
    assert summary.files == ["zuliprc"]
    with open(live.settings.zuliprc_path) as original, open(os.path.join(restored, "zuliprc")) as copy:
        assert copy.read() == original.read()
    second = restored_server(live, restored)
    try:
        ids = set(second.read(lambda tx: tx.column("SELECT id FROM messages WHERE content LIKE 'write %'")))
        # Every write acknowledged before the backup began is there, and nothing but acknowledged
        # writes (the writer stops only once its last request is answered).
        assert set(before) <= ids <= set(writer.acknowledged)
        assert second.read(lambda tx: tx.column("PRAGMA integrity_check")) == ["ok"]
        newest = assert_success(second.owner.get(f"/messages/{before[-1]}"))["message"]
        assert newest["content"] == f"<p>write {len(before)}</p>"
        # The restored server takes new writes.
        assert_success(second.owner.post("/messages", {"type": "stream", "to": "load", "topic": "t", "content": "x"}))
    finally:
        second.stop()


def test_backup_includes_uploads(live, tmp_path):
    uploads = os.path.join(live.settings.data_dir, "uploads", "2", "ab")
    os.makedirs(uploads)
    with open(os.path.join(uploads, "cat.png"), "wb") as file:
        file.write(b"\x89PNG fake")
    os.symlink("/etc/passwd", os.path.join(uploads, "link"))  # not a file of ours: skipped
    archive = str(tmp_path / "backup.tar.gz")
    summary = backup.create_backup(live.settings.data_dir, archive, live.clock())
    assert summary.files == ["zuliprc", "uploads/2/ab/cat.png"]
    assert summary.uploads == 1
    assert oct(os.stat(archive).st_mode & 0o777) == "0o600"
    restored = str(tmp_path / "restored")
    backup.restore_backup(archive, restored)
    with open(os.path.join(restored, "uploads", "2", "ab", "cat.png"), "rb") as file:
        assert file.read() == b"\x89PNG fake"
    assert sorted(os.listdir(restored)) == ["tornchat.sqlite3", "uploads", "zuliprc"]


def test_backup_includes_the_configuration_file(live, tmp_path):
    with open(os.path.join(live.settings.data_dir, "tornchat.toml"), "w") as file:
        file.write('realm_name = "Team"\n')
    archive = str(tmp_path / "backup.tar.gz")
    assert backup.create_backup(live.settings.data_dir, archive, live.clock()).files == ["zuliprc", "tornchat.toml"]
    restored = str(tmp_path / "restored")
    backup.restore_backup(archive, restored)
    with open(os.path.join(restored, "tornchat.toml")) as file:
        assert file.read() == 'realm_name = "Team"\n'


def test_backup_includes_the_push_bouncer_registration_readable_by_its_owner_only(live, tmp_path):
    path = os.path.join(live.settings.data_dir, "push-bouncer.json")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as file:
        file.write('{"zulip_org_id": "id"}')
    archive = str(tmp_path / "backup.tar.gz")
    assert backup.create_backup(live.settings.data_dir, archive, live.clock()).files == ["zuliprc", "push-bouncer.json"]
    restored = str(tmp_path / "restored")
    backup.restore_backup(archive, restored)
    with open(os.path.join(restored, "push-bouncer.json")) as file:
        assert file.read() == '{"zulip_org_id": "id"}'
    assert os.stat(os.path.join(restored, "push-bouncer.json")).st_mode & 0o777 == 0o600


def test_restored_database_needs_no_wal_file(live, tmp_path):
    archive = str(tmp_path / "backup.tar.gz")
    backup.create_backup(live.settings.data_dir, archive, live.clock())
    with tarfile.open(archive) as opened:
        assert opened.getnames() == ["tornchat-backup.json", "tornchat.sqlite3", "zuliprc"]
        opened.extract("tornchat.sqlite3", str(tmp_path), filter="data")
    conn = sqlite3.connect(f"file:{tmp_path / 'tornchat.sqlite3'}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert conn.execute("SELECT count(*) FROM users").fetchone()[0] >= 1
    finally:
        conn.close()


def test_restore_into_an_empty_existing_directory(live, tmp_path):
    archive = str(tmp_path / "backup.tar.gz")
    backup.create_backup(live.settings.data_dir, archive, live.clock())
    empty = tmp_path / "empty"
    empty.mkdir()
    backup.restore_backup(archive, str(empty))
    assert sorted(os.listdir(empty)) == ["tornchat.sqlite3", "zuliprc"]


def test_restore_refuses_a_non_empty_directory(live, tmp_path):
    archive = str(tmp_path / "backup.tar.gz")
    backup.create_backup(live.settings.data_dir, archive, live.clock())
    with pytest.raises(backup.BackupError, match="is not empty: restore needs a new or empty data directory"):
        backup.restore_backup(archive, live.settings.data_dir)


def test_restore_refuses_a_damaged_database(tmp_path):
    archive = str(tmp_path / "bad.tar.gz")
    database = tmp_path / "tornchat.sqlite3"
    database.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    manifest = tmp_path / "tornchat-backup.json"
    manifest.write_text('{"format": 1, "created_at": 0, "migrations": [], "database_bytes": 216, "files": []}')
    with tarfile.open(archive, "w:gz") as opened:
        opened.add(str(manifest), "tornchat-backup.json")
        opened.add(str(database), "tornchat.sqlite3")
    with pytest.raises(backup.BackupError) as raised:
        backup.restore_backup(archive, str(tmp_path / "restored"))
    assert str(raised.value) == f"the database in {archive} is not a readable SQLite database: file is not a database"
    assert not os.path.exists(tmp_path / "restored")
    assert [name for name in os.listdir(tmp_path) if name.startswith(".tornchat")] == []


@pytest.mark.parametrize(
    ("manifest", "error"),
    [
        ('{"format": 2, "created_at": 0, "files": []}', "has backup format 2; this tornchat reads 1"),
        ('{"format": 1, "files": []}', "has an unreadable tornchat-backup.json: 'created_at'"),
        ("not json", "has an unreadable tornchat-backup.json: Expecting value: line 1 column 1 (char 0)"),
    ],
)
def test_restore_refuses_an_unknown_manifest(tmp_path, manifest, error):
    archive = str(tmp_path / "other.tar.gz")
    (tmp_path / "tornchat-backup.json").write_text(manifest)
    (tmp_path / "tornchat.sqlite3").write_bytes(b"")
    with tarfile.open(archive, "w:gz") as opened:
        opened.add(str(tmp_path / "tornchat-backup.json"), "tornchat-backup.json")
        opened.add(str(tmp_path / "tornchat.sqlite3"), "tornchat.sqlite3")
    with pytest.raises(backup.BackupError) as raised:
        backup.restore_backup(archive, str(tmp_path / "restored"))
    assert str(raised.value) == f"{archive} {error}"
    assert not os.path.exists(tmp_path / "restored")


def test_backup_refuses_a_copy_that_fails_its_checks(live, tmp_path):
    """A database with a broken reference is copied faithfully, and the backup then refuses it."""

    # A second connection, without tornchat's foreign_keys pragma, writes what the server never would.
    conn = sqlite3.connect(live.settings.database_path, timeout=10)
    try:
        with conn:
            conn.execute("UPDATE users SET bot_owner_id = 999999 WHERE id = ?", (live.owner_user.id,))
    finally:
        conn.close()
    archive = str(tmp_path / "backup.tar.gz")
    database = live.settings.database_path
    with pytest.raises(backup.BackupError) as raised:
        backup.create_backup(live.settings.data_dir, archive, live.clock())
    assert str(raised.value) == f"foreign key check failed on the copy of {database}"
    assert os.listdir(tmp_path) == ["data"]
