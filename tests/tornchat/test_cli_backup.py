"""The command-line contract of `tornchat backup` and `tornchat restore`: exit codes and one-line reasons."""

from __future__ import annotations

import io
import os
import sqlite3
import tarfile

import pytest
import zulip

from tests.support.cli_helpers import read_zuliprc, run, serving
from tests.support.helpers import free_port


@pytest.fixture
def data_dir(tmp_path):
    path = str(tmp_path / "data")
    result = run("init", "--data-dir", path, "--owner-email", "boss@example.com", "--owner-password", "pw-12345")
    assert result.returncode == 0, result.stderr
    return path


def assert_refused(result, reason):
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"tornchat: {reason}\n"


def test_backup_and_restore(data_dir, tmp_path):
    archive = str(tmp_path / "backup.tar.gz")
    result = run("backup", "--data-dir", data_dir, archive)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Backed up {data_dir} to {archive}: database ")
    assert result.stdout.endswith(" bytes (integrity ok), zuliprc, 0 uploaded files\n")

    restored = str(tmp_path / "restored")
    result = run("restore", "--data-dir", restored, archive)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Restored {archive} into {restored}: database ")
    with open(os.path.join(data_dir, "zuliprc")) as original, open(os.path.join(restored, "zuliprc")) as copy:
        assert copy.read() == original.read()
    conn = sqlite3.connect(os.path.join(restored, "tornchat.sqlite3"))
    try:
        assert conn.execute("SELECT delivery_email FROM users WHERE role = 100").fetchall() == [("boss@example.com",)]
    finally:
        conn.close()
    # The restored directory is a working one: create-user opens it.
    result = run(
        "create-user",
        "--data-dir",
        restored,
        "--email",
        "new@example.com",
        "--full-name",
        "N",
        "--password",
        "pw-123456",
    )
    assert result.returncode == 0, result.stderr


def test_backup_of_a_serving_server_restored_and_served(data_dir, tmp_path):
    """A backup taken by another process while `tornchat serve` runs holds what it acknowledged."""
    port = free_port()
    archive = str(tmp_path / "backup.tar.gz")
    with serving("--data-dir", data_dir, "--port", str(port)):
        client = zulip.Client(config_file=os.path.join(data_dir, "zuliprc"), site=f"http://127.0.0.1:{port}")
        channel = client.add_subscriptions([{"name": "kept"}])
        assert channel["result"] == "success", channel
        sent = client.send_message({"type": "stream", "to": "kept", "topic": "t", "content": "before the backup"})
        assert sent["result"] == "success", sent
        result = run("backup", "--data-dir", data_dir, archive)
        assert result.returncode == 0, result.stderr
    restored = str(tmp_path / "restored")
    assert run("restore", "--data-dir", restored, archive).returncode == 0
    assert read_zuliprc(os.path.join(restored, "zuliprc"))["email"] == "boss@example.com"
    port = free_port()
    with serving("--data-dir", restored, "--port", str(port)):
        client = zulip.Client(config_file=os.path.join(restored, "zuliprc"), site=f"http://127.0.0.1:{port}")
        message = client.get_raw_message(sent["id"])
        assert message["result"] == "success", message
        assert message["message"]["content"] == "<p>before the backup</p>"


def test_backup_data_dir_from_the_environment(data_dir, tmp_path):
    archive = str(tmp_path / "backup.tar.gz")
    result = run("backup", archive, env={"TORNCHAT_DATA_DIR": data_dir})
    assert result.returncode == 0, result.stderr
    assert os.path.getsize(archive) > 0


def test_backup_without_a_database(tmp_path):
    empty = str(tmp_path / "nothing")
    assert_refused(run("backup", "--data-dir", empty, str(tmp_path / "b.tar.gz")), f"no tornchat database in {empty}")


def test_backup_into_a_missing_directory(data_dir, tmp_path):
    missing = str(tmp_path / "missing")
    assert_refused(
        run("backup", "--data-dir", data_dir, os.path.join(missing, "b.tar.gz")), f"no such directory: {missing}"
    )


def test_restore_refuses_a_non_empty_directory(data_dir, tmp_path):
    archive = str(tmp_path / "backup.tar.gz")
    assert run("backup", "--data-dir", data_dir, archive).returncode == 0
    assert_refused(
        run("restore", "--data-dir", data_dir, archive),
        f"{data_dir} is not empty: restore needs a new or empty data directory",
    )


def test_restore_onto_a_file(data_dir, tmp_path):
    archive = str(tmp_path / "backup.tar.gz")
    assert run("backup", "--data-dir", data_dir, archive).returncode == 0
    assert_refused(run("restore", "--data-dir", archive, archive), f"{archive} is not a directory")


def test_restore_of_something_else(tmp_path):
    not_an_archive = tmp_path / "notes.txt"
    not_an_archive.write_text("hello")
    result = run("restore", "--data-dir", str(tmp_path / "restored"), str(not_an_archive))
    assert (result.returncode, result.stderr.count("\n")) == (1, 1)
    assert result.stderr.startswith(f"tornchat: cannot read {not_an_archive}: ")
    assert not os.path.exists(tmp_path / "restored")


def test_restore_refuses_entries_outside_the_data_directory(tmp_path):
    archive = str(tmp_path / "evil.tar.gz")
    with tarfile.open(archive, "w:gz") as opened:
        info = tarfile.TarInfo("uploads/../../escaped")
        info.size = 1
        opened.addfile(info, io.BytesIO(b"x"))
    assert_refused(
        run("restore", "--data-dir", str(tmp_path / "restored"), archive),
        f"{archive} is not a tornchat backup: unexpected entry 'uploads/../../escaped'",
    )
    assert not os.path.exists(tmp_path / "escaped")


def test_restore_of_a_missing_file(tmp_path):
    missing = str(tmp_path / "missing.tar.gz")
    result = run("restore", "--data-dir", str(tmp_path / "restored"), missing)
    assert_refused(result, f"cannot read {missing}: [Errno 2] No such file or directory: '{missing}'")


def test_restore_needs_a_data_dir(tmp_path):
    result = run("restore", str(tmp_path / "b.tar.gz"))
    assert result.returncode == 2
    assert "the following arguments are required: --data-dir" in result.stderr
