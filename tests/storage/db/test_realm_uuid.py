"""Migration 0020: the realm's uuid and owner secret, which the push bouncer knows the organization by."""

from __future__ import annotations

import os
import re
import uuid

from storage.db.database import Database, connect
from storage.db.migrate import migrate
from storage.model.realm import get_realm
from storage.org import realm as realm_storage

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def test_an_existing_realm_gets_a_random_version_4_uuid(tmp_path):
    found = []
    for n in range(2):
        conn = connect(os.path.join(str(tmp_path), f"old{n}.sqlite3"))
        migrate(conn, 1_800_000_000, until=19)
        conn.execute(
            "INSERT INTO realm (id, name, url, email_host, date_created) VALUES (1, 'Org', 'http://x', 'x', 0)"
        )
        assert migrate(conn, 1_800_000_000, until=20) == ["0020_realm_uuid.sql"]
        found.append(conn.execute("SELECT uuid, uuid_owner_secret FROM realm").fetchone())
        conn.close()
    for realm_uuid, secret in found:
        assert UUID4.match(realm_uuid) and str(uuid.UUID(realm_uuid)) == realm_uuid
        assert re.match(r"^zuliprealm_[0-9a-f]{48}$", secret)
    assert found[0][0] != found[1][0] and found[0][1] != found[1][1]


def test_a_new_realm_is_created_with_its_uuid(tmp_path):
    db = Database(os.path.join(str(tmp_path), "db.sqlite3"))
    try:
        db.write(realm_storage.create_realm, "Org", "http://x", "x")
        realm = db.read(get_realm)
        assert UUID4.match(realm.uuid) and re.match(r"^zuliprealm_[0-9a-f]{48}$", realm.uuid_owner_secret)
    finally:
        db.close()
