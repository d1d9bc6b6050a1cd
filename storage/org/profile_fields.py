"""Custom profile fields: definitions, validation of values per field type, stored values."""

from __future__ import annotations

import datetime
import json
import urllib.parse
from typing import Any

from storage.db.tx import Tx
from storage.model.errors import ApiError
from storage.org import groups
from storage.text import markdown

SHORT_TEXT, LONG_TEXT, SELECT, DATE, URL, USER, EXTERNAL_ACCOUNT, PRONOUNS = range(1, 9)
FIELD_TYPES = {
    SHORT_TEXT: "Short text",
    LONG_TEXT: "Long text",
    SELECT: "List of options",
    DATE: "Date picker",
    URL: "Link",
    USER: "Person picker",
    PRONOUNS: "Pronouns",
}
MAX_LENGTH = {SHORT_TEXT: 50, PRONOUNS: 50, LONG_TEXT: 500, URL: 2048, SELECT: 100}
# Types whose values are Markdown and so carry a rendered_value.
RENDERED_TYPES = {SHORT_TEXT, LONG_TEXT}
MAX_FIELD_NAME_LENGTH, MAX_HINT_LENGTH = 40, 80


def field_object(row: Any) -> dict[str, Any]:
    """Return the API object of a custom_profile_fields row."""
    result: dict[str, Any] = {
        "id": row["id"],
        "type": row["field_type"],
        "order": row["order"],
        "name": row["name"],
        "hint": row["hint"],
        "field_data": row["field_data"],
        "required": bool(row["required"]),
        "editable_by_user": bool(row["editable_by_user"]),
    }
    # Zulip sends display_in_profile_summary only when it is true.
    if row["display_in_profile_summary"]:
        result["display_in_profile_summary"] = True
    return result


def list_fields(tx: Tx) -> list[dict[str, Any]]:
    """Return every custom profile field, in display order."""
    return [field_object(row) for row in tx.all('SELECT * FROM custom_profile_fields ORDER BY "order", id')]


# Zulip's texts for option lists, from its dict validator: the options are checked one by one,
# required keys first, then keys that should not be there.
def _check_select_data(field_data: dict[str, Any]) -> None:
    if not field_data:
        raise ApiError("Field must have at least one choice.")
    texts = set()
    for key, option in field_data.items():
        if not key.strip():
            raise ApiError("'value' cannot be blank.")
        if not isinstance(option, dict):
            raise ApiError("field_data is not a dict")
        for required in ("text", "order"):
            if required not in option:
                raise ApiError(f"{required} key is missing from field_data")
            if not isinstance(option[required], str):
                raise ApiError(f'field_data["{required}"] is not a string')
            if not option[required].strip():
                raise ApiError(f'field_data["{required}"] cannot be blank.')
        extra = set(option) - {"text", "order"}
        if extra:
            raise ApiError(f"Unexpected arguments: {', '.join(sorted(extra))}")
        texts.add(option["text"])
    if len(texts) != len(field_data):
        raise ApiError("Field must not have duplicate choices.")


# Long text would not fit a one-line summary; a list of people needs client support first.
NOT_IN_SUMMARY = {LONG_TEXT, USER}
MAX_SUMMARY_FIELDS = 2


def _summary_count(tx: Tx) -> int:
    return int(tx.value("SELECT count(*) FROM custom_profile_fields WHERE display_in_profile_summary"))


def check_definition(
    tx: Tx, name: str, hint: str, field_type: int, field_data: dict[str, Any], in_summary: bool
) -> None:
    """Raise ApiError for an invalid field definition, checking in Zulip's order."""
    if in_summary and _summary_count(tx) >= MAX_SUMMARY_FIELDS:
        raise ApiError(f"Only {MAX_SUMMARY_FIELDS} custom profile fields can be displayed in the profile summary.")
    if field_type == SELECT:
        _check_select_data(field_data)
    if not name:
        raise ApiError("Label cannot be blank.")
    if len(hint) > MAX_HINT_LENGTH:
        raise ApiError(f"hint is too long (limit: {MAX_HINT_LENGTH} characters)")
    if len(name) > MAX_FIELD_NAME_LENGTH:
        raise ApiError(f"name is too long (limit: {MAX_FIELD_NAME_LENGTH} characters)")
    if field_type not in FIELD_TYPES:
        raise ApiError("Invalid field type.")
    if in_summary and field_type in NOT_IN_SUMMARY:
        raise ApiError("Field type not supported for display in profile summary.")
    if tx.one("SELECT 1 FROM custom_profile_fields WHERE name = ?", (name,)):
        raise ApiError("A field with that label already exists.")


def create_field(
    tx: Tx,
    name: str,
    hint: str,
    field_type: int,
    field_data: dict[str, Any] | None,
    display_in_profile_summary: bool,
    required: bool,
    editable_by_user: bool,
) -> int:
    """Create a custom profile field; return its id; raise ApiError for invalid definitions."""
    name, field_data = name.strip(), field_data or {}
    check_definition(tx, name, hint, field_type, field_data, display_in_profile_summary)
    order = tx.value('SELECT coalesce(max("order"), 0) + 1 FROM custom_profile_fields')
    # Only option lists keep their field_data; Zulip ignores it for the other types.
    stored_data = json.dumps(field_data) if field_type == SELECT else ""
    cursor = tx.execute(
        'INSERT INTO custom_profile_fields (name, hint, field_type, field_data, "order",'
        " display_in_profile_summary, required, editable_by_user) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (name, hint, field_type, stored_data, order, display_in_profile_summary, required, editable_by_user),
    )
    tx.publish({"type": "custom_profile_fields", "fields": list_fields(tx)}, groups.active_user_ids(tx))
    return int(cursor.lastrowid or 0)


# The schemes Django's URLValidator accepts, which is what Zulip checks links with.
URL_SCHEMES = ("http", "https", "ftp", "ftps")


def _is_url(value: str) -> bool:
    parts = urllib.parse.urlsplit(value)
    return parts.scheme in URL_SCHEMES and bool(parts.hostname) and not any(c.isspace() for c in value)


def _is_date(value: str) -> bool:
    # fromisoformat alone also takes "20200101" and week dates ("2020-W01-1"): only a value that
    # survives the round trip is a plain YYYY-MM-DD date.
    try:
        return datetime.date.fromisoformat(value).isoformat() == value
    except ValueError:
        return False


def _check_user_ids(tx: Tx, value: Any) -> str:
    """Return the stored JSON of a users field's value, or raise Zulip's error for it."""
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ApiError("User IDs is not a list")
    for user_id in value:
        row = tx.one("SELECT is_active, is_bot FROM users WHERE id = ?", (user_id,))
        if row is None:
            raise ApiError(f"Invalid user ID: {user_id}")
        if not row["is_active"]:
            raise ApiError(f"User with ID {user_id} is deactivated")
        if row["is_bot"]:
            raise ApiError(f"User with ID {user_id} is a bot")
    # Zulip stores the list as sent, in compact JSON; clients read the value as that text.
    return json.dumps(value, separators=(",", ":"))


def validate_value(tx: Tx, field: Any, value: Any) -> str | None:
    """Return the stored text of a value for this field (None: remove it), or raise ApiError."""
    name, field_type = field["name"], field["field_type"]
    if value is None or value == "" or value == []:
        return None
    if field_type == USER:
        return _check_user_ids(tx, value)
    if not isinstance(value, str):
        raise ApiError(f"{name} is not a string")
    limit = MAX_LENGTH.get(field_type)
    if limit is not None and len(value) > limit:
        raise ApiError(f"{name} is too long (limit: {limit} characters)")
    if field_type == URL and not _is_url(value):
        raise ApiError(f"{name} is not a URL")
    if field_type == DATE and not _is_date(value):
        raise ApiError(f"{name} is not a date")
    if field_type == SELECT and value not in json.loads(field["field_data"] or "{}"):
        raise ApiError(f"'{value}' is not a valid choice for '{name}'.")
    return value


def set_values(tx: Tx, user_id: int, entries: list[tuple[int, Any]]) -> list[dict[str, Any]]:
    """Validate and store (field id, value) pairs for a user; return the changes as API objects."""
    changes: list[tuple[Any, str | None]] = []
    for field_id, value in entries:
        field = tx.one("SELECT * FROM custom_profile_fields WHERE id = ?", (field_id,))
        if field is None:
            raise ApiError(f"Field id {field_id} not found.")
        changes.append((field, validate_value(tx, field, value)))
    changed = []
    for field, stored in changes:
        old = tx.value(
            "SELECT value FROM custom_profile_field_values WHERE user_id = ? AND field_id = ?", (user_id, field["id"])
        )
        if old == stored:
            continue
        change: dict[str, Any] = {"id": field["id"], "value": stored}
        if stored is None:
            tx.execute(
                "DELETE FROM custom_profile_field_values WHERE user_id = ? AND field_id = ?", (user_id, field["id"])
            )
        else:
            rendered = markdown.render(stored) if field["field_type"] in RENDERED_TYPES else None
            tx.execute(
                "INSERT INTO custom_profile_field_values (user_id, field_id, value, rendered_value)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (user_id, field_id)"
                " DO UPDATE SET value = excluded.value, rendered_value = excluded.rendered_value",
                (user_id, field["id"], stored, rendered),
            )
            if rendered is not None:
                change["rendered_value"] = rendered
        changed.append(change)
    return changed


def values_by_user(tx: Tx, user_ids: list[int] | None) -> dict[int, dict[str, dict[str, str]]]:
    """Return {user_id: {field_id_str: {value, rendered_value?}}} for the users (None: all)."""
    if user_ids is None:
        rows = tx.all("SELECT * FROM custom_profile_field_values")
    else:
        rows = tx.all(
            "SELECT v.* FROM custom_profile_field_values AS v JOIN json_each(?) AS j ON v.user_id = j.value",
            (json.dumps(user_ids),),
        )
    result: dict[int, dict[str, dict[str, str]]] = {}
    for row in rows:
        entry = {"value": row["value"]}
        if row["rendered_value"] is not None:
            entry["rendered_value"] = row["rendered_value"]
        result.setdefault(row["user_id"], {})[str(row["field_id"])] = entry
    return result
