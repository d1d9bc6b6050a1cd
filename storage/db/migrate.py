"""Migrations: numbered SQL files under storage/db/migrations/, applied in order and recorded."""

from __future__ import annotations

import sqlite3
from importlib import resources

from storage.db.tx import topic_key


def _compare_folded(a: str, b: str) -> int:
    a, b = a.casefold(), b.casefold()
    return (a > b) - (a < b)


# Registered only while migrations run: 0003 created an index and a column with the TOPIC
# collation (until 0008 replaced them by topic_key), and 0008 fills topic_key with casefold().
# The finished database needs neither, so any SQLite tool can open, check and query it.
_MIGRATION_COLLATIONS = {"TOPIC": _compare_folded}
_MIGRATION_FUNCTIONS = {"casefold": topic_key}


def migration_scripts() -> list[tuple[int, str, str]]:
    """Return (number, name, sql) of every migration file, in order."""
    found = []
    for entry in resources.files("storage.db").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            number = int(entry.name.split("_", 1)[0])
            found.append((number, entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


class DatabaseTooNew(Exception):
    """The database records a migration this build does not have: a newer tornchat wrote it."""

    def __init__(self, path: str, newest: int, known: int) -> None:
        super().__init__(
            f"the database at {path} was written by a newer tornchat (migration {newest:04d};"
            f" this build knows up to {known:04d}): upgrade tornchat or restore a backup"
        )


def _applied_migrations(conn: sqlite3.Connection) -> set[int]:
    """Return the numbers recorded in the migrations table (none if the table does not exist yet)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'").fetchone() is None:
        return set()
    return {row[0] for row in conn.execute("SELECT id FROM migrations")}


def migrate(conn: sqlite3.Connection, now: float, until: int | None = None) -> list[str]:
    """Apply the migrations not yet recorded (up to number `until`, if given); return their names.

    Raises DatabaseTooNew, before writing anything, if the database records a migration newer than
    this build's newest; sqlite3.IntegrityError, with nothing of that migration applied, if one breaks a
    foreign key.
    """
    scripts = migration_scripts()
    applied = _applied_migrations(conn)
    known = max((number for number, _, _ in scripts), default=0)
    # Migrations are numbered in order and never removed: one past the newest file came from a newer build.
    if applied and max(applied) > known:
        path = conn.execute("PRAGMA database_list").fetchone()[2] or ":memory:"
        raise DatabaseTooNew(path, max(applied), known)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS migrations ("
        " id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    pending = [m for m in scripts if m[0] not in applied and (until is None or m[0] <= until)]
    if not pending:
        return []
    # Table rebuilds (SQLite's 12-step ALTER TABLE procedure) drop tables that others reference:
    # foreign keys are off meanwhile (the pragma is a no-op inside a transaction) and each
    # migration is checked with foreign_key_check before it commits.
    conn.execute("PRAGMA foreign_keys = OFF")
    for name, collation in _MIGRATION_COLLATIONS.items():
        conn.create_collation(name, collation)
    for name, function in _MIGRATION_FUNCTIONS.items():
        conn.create_function(name, 1, function, deterministic=True)
    try:
        for number, name, sql in pending:
            _apply(conn, number, name, sql, now)
    finally:
        for name in _MIGRATION_COLLATIONS:
            conn.create_collation(name, None)
        for name in _MIGRATION_FUNCTIONS:
            conn.create_function(name, 1, None)
        conn.execute("PRAGMA foreign_keys = ON")
    return [name for _, name, _ in pending]


def _apply(conn: sqlite3.Connection, number: int, name: str, sql: str, now: float) -> None:
    """Run one migration file and its record in one transaction."""
    try:
        # executescript commits first and runs statements as given: the BEGIN around the file
        # makes the migration and its record one transaction.
        conn.executescript(
            f"BEGIN IMMEDIATE;\n{sql}\n"
            f"INSERT INTO migrations (id, name, applied_at) VALUES ({number}, '{name}', {int(now)});\n"
        )
        broken = conn.execute("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise sqlite3.IntegrityError(f"migration {name} breaks foreign keys: {[tuple(r) for r in broken[:5]]}")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
