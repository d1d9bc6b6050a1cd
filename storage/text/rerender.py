"""Stored HTML rendered by older code, brought up to the current renderer at start.

Descriptions and profile values saved before images became links still hold `<img>` tags that make
every reader's client fetch a third-party URL. Only rows whose HTML holds an image are rendered again,
so a start costs one LIKE scan of each of these small tables, and no writes once they are clean.
"""

from __future__ import annotations

from storage.db.tx import Tx
from storage.text import markdown

# (table, key columns, Markdown column, HTML column): every Markdown field rendered with storage.text.markdown.
RENDERED_COLUMNS = (
    ("channels", ("id",), "description", "rendered_description"),
    ("channel_folders", ("id",), "description", "rendered_description"),
    ("custom_profile_field_values", ("user_id", "field_id"), "value", "rendered_value"),
)


def rerender_images(tx: Tx) -> int:
    """Render again every stored description or profile value whose HTML holds an <img>; return how many."""
    changed = 0
    for table, keys, source, html in RENDERED_COLUMNS:
        where = " AND ".join(f"{key} = ?" for key in keys)
        rows = tx.all(f"SELECT {', '.join(keys)}, {source} FROM {table} WHERE {html} LIKE '%<img%'")
        for row in rows:
            rendered = markdown.render(row[source]) if row[source] else ""
            tx.execute(f"UPDATE {table} SET {html} = ? WHERE {where}", (rendered, *(row[key] for key in keys)))
            changed += 1
    return changed
