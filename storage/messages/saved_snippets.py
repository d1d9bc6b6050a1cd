"""Saved snippets: titled pieces of Markdown a user keeps to insert into messages.

A snippet is private to its user: every lookup is by (id, user), so another user's snippet
answers "Saved snippet does not exist." exactly like a missing one. Changes are told to all of
the user's clients (saved_snippets events).
"""

from __future__ import annotations

from typing import Any

from storage.db.tx import Tx
from storage.model.errors import ApiError, not_found
from storage.model.realm import MAX_MESSAGE_LENGTH
from storage.model.user import User

MAX_TITLE_LENGTH = 60
SNIPPET_COLUMNS = "id, title, content, date_created"


def check_text(name: str, value: str, limit: int) -> str:
    """Return the value stripped, or the API's error when it is blank or longer than `limit`."""
    value = value.strip()
    if not value:
        raise ApiError(f"{name} cannot be blank")
    if len(value) > limit:
        raise ApiError(f"{name} is too long (limit: {limit} characters)")
    return value


def snippet_object(row: Any) -> dict[str, Any]:
    """Return the API saved snippet object of a saved_snippets row."""
    return {"id": row["id"], "title": row["title"], "content": row["content"], "date_created": row["date_created"]}


def access_saved_snippet(tx: Tx, user: User, snippet_id: int) -> Any:
    """Return the user's snippet row; another user's answers 404 like a missing one."""
    row = tx.one(f"SELECT {SNIPPET_COLUMNS} FROM saved_snippets WHERE id = ? AND user_id = ?", (snippet_id, user.id))
    if row is None:
        raise not_found("Saved snippet does not exist.")
    return row


def list_saved_snippets(tx: Tx, user: User) -> list[dict[str, Any]]:
    """GET /saved_snippets: the user's snippets, oldest first."""
    rows = tx.all(f"SELECT {SNIPPET_COLUMNS} FROM saved_snippets WHERE user_id = ? ORDER BY id", (user.id,))
    return [snippet_object(row) for row in rows]


def saved_snippets_state(tx: Tx, user: User) -> dict[str, Any]:
    """POST /register's `saved_snippets`."""
    return {"saved_snippets": list_saved_snippets(tx, user)}


def create_saved_snippet(tx: Tx, user: User, title: str, content: str) -> int:
    """POST /saved_snippets: store a snippet (title 1..60, content 1..10000 after stripping); return its id."""
    title = check_text("title", title, MAX_TITLE_LENGTH)
    content = check_text("content", content, MAX_MESSAGE_LENGTH)
    cursor = tx.execute(
        "INSERT INTO saved_snippets (user_id, title, content, date_created) VALUES (?, ?, ?, ?)",
        (user.id, title, content, tx.timestamp),
    )
    snippet_id = int(cursor.lastrowid or 0)
    row = access_saved_snippet(tx, user, snippet_id)
    tx.publish({"type": "saved_snippets", "op": "add", "saved_snippet": snippet_object(row)}, [user.id])
    return snippet_id


def edit_saved_snippet(tx: Tx, user: User, snippet_id: int, title: str | None, content: str | None) -> None:
    """PATCH /saved_snippets/{id}: change the title and/or content; nothing given changes nothing."""
    if title is not None:
        title = check_text("title", title, MAX_TITLE_LENGTH)
    if content is not None:
        content = check_text("content", content, MAX_MESSAGE_LENGTH)
    if title is None and content is None:
        # Zulip answers success without looking the snippet up, and sends no spurious event.
        return
    row = access_saved_snippet(tx, user, snippet_id)
    tx.execute(
        "UPDATE saved_snippets SET title = ?, content = ? WHERE id = ?",
        (title if title is not None else row["title"], content if content is not None else row["content"], row["id"]),
    )
    row = access_saved_snippet(tx, user, snippet_id)
    tx.publish({"type": "saved_snippets", "op": "update", "saved_snippet": snippet_object(row)}, [user.id])


def delete_saved_snippet(tx: Tx, user: User, snippet_id: int) -> None:
    """DELETE /saved_snippets/{id}: delete the user's snippet; 404 otherwise."""
    access_saved_snippet(tx, user, snippet_id)
    tx.execute("DELETE FROM saved_snippets WHERE id = ?", (snippet_id,))
    tx.publish({"type": "saved_snippets", "op": "remove", "saved_snippet_id": snippet_id}, [user.id])
