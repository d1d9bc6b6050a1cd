"""Print (or, with --write, save to storage/db/schema.sql) the schema all migrations produce.

`python -m storage.db.dump_schema --write` after adding a migration; a test keeps the file current.
"""

from __future__ import annotations

import os
import sys
import tempfile

from storage.db.database import connect
from storage.db.migrate import migrate

SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "schema.sql")
HEADER = "-- The whole schema, as the migrations in storage/db/migrations/ build it. Generated: do not edit.\n"


def current_schema() -> str:
    """Return the CREATE statements of a freshly migrated database, in a stable order."""
    with tempfile.TemporaryDirectory() as directory:
        conn = connect(os.path.join(directory, "schema.sqlite3"))
        try:
            migrate(conn, 0)
            rows = conn.execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
                " ORDER BY CASE type WHEN 'table' THEN 0 ELSE 1 END, tbl_name, name"
            ).fetchall()
        finally:
            conn.close()
    return HEADER + "".join(f"\n{row[0]};\n" for row in rows)


def main(argv: list[str]) -> int:
    schema = current_schema()
    if "--write" in argv:
        with open(SCHEMA_PATH, "w", encoding="utf-8") as handle:
            handle.write(schema)
    else:
        sys.stdout.write(schema)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
