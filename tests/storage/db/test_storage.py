"""The storage layer itself: migrations, the dumped schema, transactions."""

from __future__ import annotations

import os

import pytest

from storage.db.database import Database
from storage.db.dump_schema import SCHEMA_PATH, current_schema
from storage.db.migrate import migration_scripts
from storage.model.errors import ApiError
from storage.org import realm as realm_storage


def test_schema_sql_is_current():
    with open(SCHEMA_PATH, encoding="utf-8") as handle:
        assert handle.read() == current_schema(), "run: python -m storage.db.dump_schema --write"


def test_migrations_are_numbered_and_recorded(tmp_path):
    scripts = migration_scripts()
    assert [number for number, _, _ in scripts] == list(range(1, len(scripts) + 1))
    db = Database(os.path.join(str(tmp_path), "db.sqlite3"), clock=lambda: 1000.0)
    recorded = db.read(lambda tx: tx.all("SELECT id, name, applied_at FROM migrations ORDER BY id"))
    assert [(r["id"], r["name"], r["applied_at"]) for r in recorded] == [(n, name, 1000) for n, name, _ in scripts]
    db.close()
    # Opening again applies nothing new.
    again = Database(os.path.join(str(tmp_path), "db.sqlite3"))
    assert again.read(lambda tx: tx.value("SELECT count(*) FROM migrations")) == len(scripts)
    again.close()


def test_wal_mode_and_foreign_keys(tmp_path):
    db = Database(os.path.join(str(tmp_path), "db.sqlite3"))
    assert db.read(lambda tx: tx.value("PRAGMA journal_mode")) == "wal"
    assert db.read(lambda tx: tx.value("PRAGMA foreign_keys")) == 1
    db.close()


def test_failed_write_rolls_back_and_publishes_nothing(tmp_path):
    published = []
    db = Database(os.path.join(str(tmp_path), "db.sqlite3"), publish=lambda e, u: published.append(e))

    def create_then_fail(tx):
        realm_storage.create_realm(tx, "Org", "http://x", "x")
        tx.publish({"type": "test"}, [1])
        raise ApiError("nope")

    with pytest.raises(ApiError):
        db.write(create_then_fail)
    assert db.read(realm_storage.realm_exists) is False
    assert published == []
    db.write(lambda tx: tx.publish({"type": "test"}, [2, 1, 2]))
    assert published == [{"type": "test"}]
    db.close()
