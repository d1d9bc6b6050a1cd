"""Backups of a data directory: one gzip-compressed tar archive, and its restore.

The archive holds:
  tornchat-backup.json  what the backup is (format, time, migrations applied, files)
  tornchat.sqlite3      a consistent copy of the database, made with SQLite's online backup API
  zuliprc               the owner's credentials, when the data directory has them
  tornchat.toml         the configuration file, when the data directory has one
  push-bouncer.json     the server's push bouncer registration, when it has one (without it, a
                        restored server would have to register as a new one)
  uploads/...           uploaded files, when the data directory has an uploads folder

Not kept: event queues (event_queues.json) are transient; clients re-register after a restore.
The archive holds API keys and password hashes, so it is created readable by its owner only.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
from dataclasses import dataclass, field

from storage.db.database import connect
from storage.db.upload_files import UPLOADS

FORMAT = 1
MANIFEST = "tornchat-backup.json"
# The names tornchat.settings gives these inside a data directory.
DATABASE = "tornchat.sqlite3"
ZULIPRC = "zuliprc"
CONFIG = "tornchat.toml"
PUSH_BOUNCER = "push-bouncer.json"
# gzip's own default: tarfile's 9 took three times as long (21 s, not 6.5 s) on a 191 MB database
# for an archive 4% smaller.
COMPRESS_LEVEL = 6


class BackupError(Exception):
    """A backup or restore that cannot be made; the message is one line for the user."""


@dataclass
class Summary:
    """What a backup holds (or a restore brought back)."""

    created_at: int
    migrations: list[str]
    database_bytes: int
    files: list[str] = field(default_factory=list)  # archive members besides the manifest and database

    @property
    def uploads(self) -> int:
        return sum(1 for name in self.files if name.startswith(UPLOADS + "/"))


def copy_database(source_path: str, target_path: str) -> list[str]:
    """Copy a live database to target_path (a new file), check the copy; return its migrations or raise BackupError."""
    source = sqlite3.connect(source_path, isolation_level=None)
    target = sqlite3.connect(target_path, isolation_level=None)
    try:
        source.execute("PRAGMA busy_timeout = 5000")
        # pages=-1 copies every page in one step, inside one read transaction: the copy is the
        # database as of one commit. In WAL mode the server keeps writing meanwhile. A step-by-step
        # copy would restart whenever another connection writes, and might never end under load.
        source.backup(target, pages=-1)
    except sqlite3.Error as error:
        raise BackupError(f"cannot copy the database {source_path}: {error}") from None
    finally:
        target.close()
        source.close()
    return check_database(target_path, f"the copy of {source_path}")


def check_database(path: str, name: str | None = None) -> list[str]:
    """Run integrity and foreign key checks on a database file; return its migrations or raise BackupError.

    The file is left in rollback-journal mode (no -wal file needed), readable by standard SQLite tools.
    Errors call the database `name` (default: its path).
    """
    name = name or path
    try:
        # tornchat's own connection, so the check sees the database as the server does.
        conn = connect(path)
    except sqlite3.Error as error:
        raise BackupError(f"{name} is not a readable SQLite database: {error}") from None
    try:
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if problems != ["ok"]:
            raise BackupError(f"integrity check failed on {name}: {problems[0]}")
        if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
            raise BackupError(f"foreign key check failed on {name}")
        migrations = [row[0] for row in conn.execute("SELECT name FROM migrations ORDER BY id")]
        conn.execute("PRAGMA journal_mode = DELETE")
    except sqlite3.Error as error:
        raise BackupError(f"cannot check {name}: {error}") from None
    finally:
        conn.close()
    return migrations


def create_backup(data_dir: str, archive_path: str, now: float) -> Summary:
    """Write a backup of data_dir to archive_path (replaced atomically); return its Summary or raise BackupError."""
    database = os.path.join(data_dir, DATABASE)
    if not os.path.isfile(database):
        raise BackupError(f"no tornchat database in {data_dir}")
    target_dir = os.path.dirname(os.path.abspath(archive_path))
    if not os.path.isdir(target_dir):
        raise BackupError(f"no such directory: {target_dir}")
    try:
        staging = tempfile.mkdtemp(prefix=".tornchat-backup-", dir=target_dir)
    except OSError as error:
        raise BackupError(f"cannot write in {target_dir}: {error.strerror or error}") from None
    try:
        copy = os.path.join(staging, DATABASE)
        migrations = copy_database(database, copy)
        summary = Summary(int(now), migrations, os.path.getsize(copy), _extra_files(data_dir))
        partial = os.path.join(staging, "archive.tar.gz")
        _write_archive(partial, summary, copy, data_dir)
        os.replace(partial, archive_path)
    except OSError as error:
        raise BackupError(f"cannot write {archive_path}: {error.strerror or error}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return summary


def _extra_files(data_dir: str) -> list[str]:
    """zuliprc, tornchat.toml, push-bouncer.json and every regular file under uploads/, as archive names
    (symbolic links are skipped)."""
    found = [name for name in (ZULIPRC, CONFIG, PUSH_BOUNCER) if os.path.isfile(os.path.join(data_dir, name))]
    uploads = os.path.join(data_dir, UPLOADS)
    for root, directories, files in os.walk(uploads):
        directories.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.append(os.path.relpath(path, data_dir).replace(os.sep, "/"))
    return found


def _write_archive(path: str, summary: Summary, database_copy: str, data_dir: str) -> None:
    manifest = {
        "format": FORMAT,
        "created_at": summary.created_at,
        "migrations": summary.migrations,
        "database_bytes": summary.database_bytes,
        "files": summary.files,
    }
    encoded = json.dumps(manifest, indent=1).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as raw:
        with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=COMPRESS_LEVEL) as archive:
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mtime, info.mode = len(encoded), summary.created_at, 0o600
            archive.addfile(info, io.BytesIO(encoded))
            archive.add(database_copy, DATABASE, recursive=False)
            for name in summary.files:
                archive.add(os.path.join(data_dir, name), name, recursive=False)
        raw.flush()
        os.fsync(raw.fileno())


def restore_backup(archive_path: str, data_dir: str) -> Summary:
    """Unpack a backup into data_dir, which must be empty or absent; return its Summary or raise BackupError."""
    if os.path.exists(data_dir) and not os.path.isdir(data_dir):
        raise BackupError(f"{data_dir} is not a directory")
    if os.path.isdir(data_dir) and os.listdir(data_dir):
        raise BackupError(f"{data_dir} is not empty: restore needs a new or empty data directory")
    parent = os.path.dirname(os.path.abspath(data_dir))
    try:
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".tornchat-restore-", dir=parent)
    except OSError as error:
        raise BackupError(f"cannot write in {parent}: {error.strerror or error}") from None
    try:
        summary = _unpack(archive_path, staging)
        os.makedirs(data_dir, exist_ok=True)
        for name in sorted(os.listdir(staging)):
            if name != MANIFEST:
                os.rename(os.path.join(staging, name), os.path.join(data_dir, name))
    except OSError as error:
        raise BackupError(f"cannot restore into {data_dir}: {error.strerror or error}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return summary


def _unpack(archive_path: str, staging: str) -> Summary:
    """Extract and check the archive in staging; raise BackupError if it is not a sound tornchat backup."""
    try:
        with tarfile.open(archive_path, mode="r:gz") as archive:
            members = archive.getmembers()
            for member in members:
                if not _expected_member(member):
                    raise BackupError(f"{archive_path} is not a tornchat backup: unexpected entry {member.name!r}")
            names = {member.name for member in members}
            if MANIFEST not in names or DATABASE not in names:
                raise BackupError(f"{archive_path} is not a tornchat backup: no {MANIFEST} or {DATABASE}")
            # The "data" filter refuses links, devices and paths leaving the directory all over again.
            archive.extractall(staging, members=members, filter="data")
    except (OSError, EOFError, tarfile.TarError) as error:
        raise BackupError(f"cannot read {archive_path}: {error}") from None
    try:
        with open(os.path.join(staging, MANIFEST), "rb") as file:
            manifest = json.load(file)
        created_at, files = int(manifest["created_at"]), [str(name) for name in manifest["files"]]
        if manifest["format"] != FORMAT:
            raise BackupError(f"{archive_path} has backup format {manifest['format']}; this tornchat reads {FORMAT}")
    except (ValueError, KeyError, TypeError) as error:
        raise BackupError(f"{archive_path} has an unreadable {MANIFEST}: {error}") from None
    database = os.path.join(staging, DATABASE)
    migrations = check_database(database, f"the database in {archive_path}")
    return Summary(created_at, migrations, os.path.getsize(database), files)


def _expected_member(member: tarfile.TarInfo) -> bool:
    """Only the manifest, the database, zuliprc, tornchat.toml, push-bouncer.json and plain files or
    folders under uploads/."""
    name = member.name
    if name in (MANIFEST, DATABASE, ZULIPRC, CONFIG, PUSH_BOUNCER):
        return member.isfile()
    parts = name.split("/")
    in_uploads = parts[0] == UPLOADS and all(part not in ("", ".", "..") for part in parts)
    return in_uploads and (member.isfile() or member.isdir())
