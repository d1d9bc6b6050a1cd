"""Linkifiers: administrators' patterns that turn text into links (spec 2.8, 4.15).

Validation follows Zulip's model checks and reports like Django's full_clean: every failing
check adds its message under its field (`pattern`, `url_template`, `alternative_url_templates`)
or under `__all__` for checks across fields; `msg` is the first of them and `errors` holds all.
A pattern must compile both as RE2 (the engine that runs it: linear time, no catastrophic
backtracking) and as a Python regular expression (what the spec promises), and must run within
PATTERN_TIME_BUDGET on its example and on adversarial inputs.

Every write to linkifiers bumps linkifier_state.version (the triggers of migration 0014), and every
change sends the full list to every active user.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, NamedTuple

import re2
import uri_template

from storage.db.tx import Tx
from storage.model.errors import ApiError, must_be_admin
from storage.model.user import User
from storage.org import groups
from storage.text import linkify

LINKIFIER_COLUMNS = "id, pattern, url_template, example_input, reverse_template, alternative_url_templates"
BLANK = "This field cannot be blank."
INVALID_TEMPLATE = "Invalid URL template."
# Django's unique_together message for Zulip's RealmFilter (realm, pattern).
DUPLICATE = "Realm filter with this Realm and Pattern already exists."
# Seconds a pattern may take, all test inputs together, before it is refused as too slow.
PATTERN_TIME_BUDGET = 0.25
TOO_SLOW = "Bad regular expression: too slow to match on test input."
MISSING_EXAMPLE = "Example text is required when auto-conversion field is set."
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


class LinkifierFields(NamedTuple):
    """A linkifier as requested; None for an optional field means null (POST) or unchanged (PATCH)."""

    pattern: str
    url_template: str
    example_input: str | None = None
    reverse_template: str | None = None
    alternative_url_templates: list[str] | None = None


def linkifier_object(row: Any) -> dict[str, Any]:
    """Return the API linkifier object of a linkifiers row."""
    return {
        "id": row["id"],
        "pattern": row["pattern"],
        "url_template": row["url_template"],
        "example_input": row["example_input"],
        "reverse_template": row["reverse_template"],
        "alternative_url_templates": json.loads(row["alternative_url_templates"]),
    }


def list_linkifiers(tx: Tx) -> list[dict[str, Any]]:
    """GET /realm/linkifiers: every linkifier, in the order they apply."""
    rows = tx.all(f"SELECT {LINKIFIER_COLUMNS} FROM linkifiers ORDER BY sort_order, id")
    return [linkifier_object(row) for row in rows]


def access_linkifier(tx: Tx, linkifier_id: int) -> Any:
    """Return the linkifier's row; raise "Linkifier not found." for an unknown id."""
    row = tx.one(f"SELECT {LINKIFIER_COLUMNS} FROM linkifiers WHERE id = ?", (linkifier_id,))
    if row is None:
        raise ApiError("Linkifier not found.")
    return row


def check_admin(actor: User) -> None:
    """Raise unless the actor is an organization administrator (every change needs one)."""
    if not actor.is_admin:
        raise must_be_admin()


def _optional(value: str | None) -> str | None:
    """Strip an optional text; blank means null."""
    value = value.strip() if value is not None else None
    return value or None


def check_linkifier(tx: Tx, fields: LinkifierFields, linkifier_id: int | None = None) -> LinkifierFields:
    """Return the fields normalized (stripped, blanks null), or raise every validation error at once."""
    pattern, url_template = fields.pattern.strip(), fields.url_template.strip()
    example, reverse = _optional(fields.example_input), _optional(fields.reverse_template)
    alternatives = [template.strip() for template in fields.alternative_url_templates or []]
    errors: dict[str, list[str]] = {}
    if not pattern:
        errors["pattern"] = [BLANK]
    if not url_template:
        errors["url_template"] = [BLANK]
    elif not uri_template.validate(url_template):
        errors["url_template"] = [INVALID_TEMPLATE]
    if not all(template and uri_template.validate(template) for template in alternatives):
        errors["alternative_url_templates"] = [INVALID_TEMPLATE]
    problem = _check_pattern(pattern, url_template, example, reverse)
    if problem is not None:
        errors["__all__"] = [problem]
    if pattern and tx.one("SELECT 1 FROM linkifiers WHERE pattern = ? AND id IS NOT ?", (pattern, linkifier_id)):
        errors.setdefault("__all__", []).append(DUPLICATE)
    if errors:
        raise ApiError(next(iter(errors.values()))[0], data={"errors": errors})
    return LinkifierFields(pattern, url_template, example, reverse, alternatives)


def _regex_error(error: re2.error) -> str:
    detail = error.args[0] if error.args else "unknown error"
    return "Bad regular expression: " + (detail.decode() if isinstance(detail, bytes) else str(detail))


def _check_pattern(pattern: str, url_template: str, example: str | None, reverse: str | None) -> str | None:
    """Return the first problem of the pattern with the other fields (Zulip's clean()), or None."""
    try:
        regex = re2.compile(pattern, options=_RE2_OPTIONS)
        wrapped = linkify.compile_pattern(pattern)
    except re2.error as error:
        return _regex_error(error)
    try:
        re.compile(pattern)
    except re.error as error:
        return f"Bad regular expression: {error}"
    if pattern and too_slow(wrapped, pattern, example):
        return TOO_SLOW
    names = set(regex.groupindex)
    if reverse is not None and example is None:
        # Zulip's missing-dependent-parameter error ends the checks at once.
        raise ApiError(MISSING_EXAMPLE, data={"errors": {"__all__": [MISSING_EXAMPLE]}})
    if example is not None:
        match = regex.search(example)
        if match is None:
            return "Example input does not match the linkifier pattern."
        if reverse is not None:
            try:
                expanded = expand_reverse_template(reverse, match.groupdict())
            except ValueError as error:
                return str(error)
            if expanded != example:
                return "Example text does not match auto-conversion field."
    if not uri_template.validate(url_template):
        return None  # reported under url_template
    variables = set(uri_template.URITemplate(url_template).variable_names)
    if variables - names:
        return f"Group {min(variables - names)!r} in URL template is not present in linkifier pattern."
    if names - variables:
        return f"Group {min(names - variables)!r} in linkifier pattern is not present in URL template."
    return None


def expand_reverse_template(template: str, values: dict[str, str | None]) -> str:
    """Fill `{name}` fields with the named groups' values; `{{` and `}}` are literal braces.

    Raises ValueError with the API's message for a malformed field or an unknown group.
    """
    output: list[str] = []
    index = 0
    while index < len(template):
        if template.startswith(("{{", "}}"), index):
            output.append(template[index])
            index += 2
        elif template[index] == "{":
            end = template.find("}", index + 1)
            if end == -1:
                raise ValueError("Invalid auto-conversion field: missing '}' character.")
            name = template[index + 1 : end]
            if not name:
                raise ValueError("Invalid auto-conversion field: empty field name.")
            if name not in values:
                raise ValueError(f"Group {name!r} in auto-conversion field is not present in linkifier pattern.")
            output.append(values[name] or "")
            index = end + 1
        else:
            output.append(template[index])
            index += 1
    return "".join(output)


def adversarial_inputs(pattern: str) -> list[str]:
    """Texts that make slow patterns show it: long runs of the pattern's characters and of a few others."""
    length = linkify.MAX_SCAN_LENGTH
    characters = sorted({c for c in pattern if c.isprintable()} | set("a0 -#"))[:40]
    texts = [c * length for c in characters]
    texts.append("".join(characters) * (length // max(len(characters), 1)))
    return texts


def too_slow(wrapped: Any, pattern: str, example: str | None) -> bool:
    """Return whether scanning the example and adversarial inputs takes over PATTERN_TIME_BUDGET.

    This measures the work of the server's own CPU, not the time of day, so it reads the
    performance counter rather than the injected clock.
    """
    deadline = time.perf_counter() + PATTERN_TIME_BUDGET
    for text in ([example] if example else []) + adversarial_inputs(pattern):
        # The scan gives up at the deadline, so the check never holds the event loop much longer.
        for _ in linkify.scan(wrapped, text, deadline=deadline):
            pass
        if time.perf_counter() > deadline:
            return True
    return False


def _changed(tx: Tx) -> None:
    """Send the full list to every active user (the triggers of migration 0014 have bumped the version)."""
    event = {"type": "realm_linkifiers", "realm_linkifiers": list_linkifiers(tx)}
    tx.publish(event, groups.active_user_ids(tx))


def create_linkifier(tx: Tx, actor: User, fields: LinkifierFields) -> int:
    """POST /realm/filters: add a linkifier after all others; return its id."""
    check_admin(actor)
    checked = check_linkifier(tx, fields)
    cursor = tx.execute(
        "INSERT INTO linkifiers (pattern, url_template, example_input, reverse_template, alternative_url_templates,"
        " sort_order) VALUES (?, ?, ?, ?, ?, (SELECT COALESCE(MAX(sort_order) + 1, 0) FROM linkifiers))",
        (checked.pattern, checked.url_template, checked.example_input, checked.reverse_template,
         json.dumps(checked.alternative_url_templates)),
    )  # fmt: skip
    _changed(tx)
    return int(cursor.lastrowid or 0)


def update_linkifier(tx: Tx, actor: User, linkifier_id: int, fields: LinkifierFields) -> None:
    """PATCH /realm/filters/{id}: replace pattern and URL template; optional fields absent stay as they are."""
    check_admin(actor)
    row = access_linkifier(tx, linkifier_id)
    alternatives = fields.alternative_url_templates
    merged = LinkifierFields(
        fields.pattern,
        fields.url_template,
        row["example_input"] if fields.example_input is None else fields.example_input,
        row["reverse_template"] if fields.reverse_template is None else fields.reverse_template,
        json.loads(row["alternative_url_templates"]) if alternatives is None else alternatives,
    )
    checked = check_linkifier(tx, merged, linkifier_id)
    tx.execute(
        "UPDATE linkifiers SET pattern = ?, url_template = ?, example_input = ?, reverse_template = ?,"
        " alternative_url_templates = ? WHERE id = ?",
        (checked.pattern, checked.url_template, checked.example_input, checked.reverse_template,
         json.dumps(checked.alternative_url_templates), linkifier_id),
    )  # fmt: skip
    _changed(tx)


def delete_linkifier(tx: Tx, actor: User, linkifier_id: int) -> None:
    """DELETE /realm/filters/{id}: remove a linkifier; the others keep their order."""
    check_admin(actor)
    access_linkifier(tx, linkifier_id)
    tx.execute("DELETE FROM linkifiers WHERE id = ?", (linkifier_id,))
    _changed(tx)


def reorder_linkifiers(tx: Tx, actor: User, ordered_ids: list[int]) -> None:
    """PATCH /realm/linkifiers: apply linkifiers in this order; it must list every one exactly once."""
    check_admin(actor)
    if len(set(ordered_ids)) < len(ordered_ids):
        raise ApiError("The ordered list must not contain duplicated linkifiers")
    existing = set(tx.column("SELECT id FROM linkifiers"))
    if existing != set(ordered_ids):
        raise ApiError("The ordered list must enumerate all existing linkifiers exactly once")
    if not existing:
        return  # nothing to reorder: no version bump, no event (as Zulip)
    tx.executemany("UPDATE linkifiers SET sort_order = ? WHERE id = ?", list(enumerate(ordered_ids)))
    _changed(tx)
