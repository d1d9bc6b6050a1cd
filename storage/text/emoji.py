"""Emoji: Zulip's names for Unicode emoji, the realm's custom emoji, "zulip"; emoji found in text.

Names and codes are Zulip's (storage/text/emoji_names.json, written by storage/text/emoji_data_build.py from
Zulip's emoji name table): each emoji code has a canonical name and aliases, and every one of those
names is accepted for reactions and `:name:` in messages, as Zulip's clients offer them.

Each reaction lives in one namespace, its `reaction_type` (spec 2.6): `unicode_emoji` (emoji_code
is the dash-separated hex of the codepoints), `realm_emoji` (emoji_code is the custom emoji's id)
and `zulip_extra_emoji` (the one extra emoji, code and name "zulip"; the spec spells the type
`service_extra_emoji`, accepted in requests but never stored or sent).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

from storage.db.tx import Tx
from storage.model.errors import ApiError

UNICODE_EMOJI = "unicode_emoji"
REALM_EMOJI = "realm_emoji"
EXTRA_EMOJI = "zulip_extra_emoji"
REACTION_TYPES = {UNICODE_EMOJI: UNICODE_EMOJI, REALM_EMOJI: REALM_EMOJI, EXTRA_EMOJI: EXTRA_EMOJI}
REACTION_TYPES["service_extra_emoji"] = EXTRA_EMOJI
EXTRA_EMOJI_NAME = "zulip"
# Zulip's own URL for its extra emoji, used in rendered messages as Zulip does.
EXTRA_EMOJI_URL = "/static/generated/emoji/images/emoji/unicode/zulip.png"
DATA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "emoji_names.json")

# Variation selectors only choose text or emoji presentation: codes leave them out, as Zulip's do,
# so "❤" and "❤️" are the same emoji "2764".
VARIATION_SELECTORS = {0xFE0E, 0xFE0F}
# What makes a known emoji part of a longer sequence (skin tone, joiner, keycap, tag): Zulip looks
# the whole sequence up, and one it does not know stays text.
_EXTENDERS = {0x200D, 0x20E3, *range(0x1F3FB, 0x1F400), *range(0xE0020, 0xE0080)}


def emoji_code(text: str) -> str:
    """Return the emoji_code of an emoji string: "👍" -> "1f44d", "#️⃣" -> "0023-20e3"."""
    return "-".join(f"{ord(c):04x}" for c in text if ord(c) not in VARIATION_SELECTORS)


def _load() -> tuple[dict[str, str], dict[str, str], frozenset[str]]:
    """Return (name -> code, code -> canonical name, text-presentation codes) from the data file."""
    with open(DATA_FILE, encoding="utf-8") as data_file:
        data = json.load(data_file)
    name_to_code: dict[str, str] = {}
    code_to_name: dict[str, str] = {}
    for code, canonical, aliases in data["emoji"]:
        code_to_name[code] = canonical
        # Zulip's generate_name_to_codepoint_map: every name and alias, in the table's order.
        for name in (canonical, *aliases):
            name_to_code[name] = code
    return name_to_code, code_to_name, frozenset(data["text_presentation"])


NAME_TO_CODE, CODE_TO_NAME, _TEXT_PRESENTATION = _load()


def server_emoji_data() -> bytes:
    """The file POST /register's server_emoji_data_url names: {"code_to_names": {code: [canonical, *aliases]}}.

    Zulip's emoji_api.json, the shape zulip-flutter decodes (ServerEmojiData): the canonical name first.
    """
    with open(DATA_FILE, encoding="utf-8") as data_file:
        data = json.load(data_file)
    code_to_names = {code: [canonical, *aliases] for code, canonical, aliases in data["emoji"]}
    return json.dumps({"code_to_names": code_to_names}, ensure_ascii=False, separators=(",", ":")).encode()


_MAX_PARTS = max(code.count("-") + 1 for code in CODE_TO_NAME)


def _character_class(code_points: set[int]) -> str:
    """A regex class of the code points as ranges (1,400 characters make 155 ranges, 8x faster to scan)."""
    ranges: list[list[int]] = []
    for point in sorted(code_points):
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1][1] = point
        else:
            ranges.append([point, point])
    parts = (re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in ranges)
    return "[" + "".join(parts) + "]"


# A run of characters that may be part of an emoji; find_unicode_emoji splits it into emoji.
_EMOJI_CHARACTERS = {int(part, 16) for code in CODE_TO_NAME for part in code.split("-")}
_EMOJI_RUN = re.compile(_character_class(_EMOJI_CHARACTERS | VARIATION_SELECTORS | _EXTENDERS) + "+")
# Zulip's EMOJI_REGEX: `:name:`; an unknown name stays text and is not looked into again.
EMOJI_SYNTAX = re.compile(r":[\w\-+]+:")


def _is_text_presentation(raw: str) -> bool:
    """Zulip's TEXT_PRESENTATION_RE: one text-style character (maybe a keycap) without FE0F is text."""
    if len(raw) == 2 and raw[1] == "\u20e3":
        raw = raw[0]
    return len(raw) == 1 and f"{ord(raw):04x}" in _TEXT_PRESENTATION


def _longest_at(run: str, start: int) -> tuple[str, int] | None:
    """Return (code, end) of the longest known emoji starting at run[start], or None."""
    parts: list[str] = []
    ends: list[int] = []
    index = start
    while index < len(run) and len(parts) < _MAX_PARTS:
        if ord(run[index]) not in VARIATION_SELECTORS:
            parts.append(f"{ord(run[index]):04x}")
            ends.append(index + 1)
        elif ends:
            ends[-1] = index + 1  # a variation selector belongs to the character before it
        index += 1
    for count in range(len(parts), 0, -1):
        code = "-".join(parts[:count])
        if code in CODE_TO_NAME:
            return code, ends[count - 1]
    return None


def find_unicode_emoji(text: str) -> Iterator[tuple[int, int, str]]:
    """Yield (start, end, code) of each emoji typed as Unicode in text that Zulip's names know."""
    for run in _EMOJI_RUN.finditer(text):
        chars, index = run.group(), 0
        while index < len(chars):
            found = _longest_at(chars, index)
            if found is None:
                index += 1
                continue
            code, end = found
            if end < len(chars) and ord(chars[end]) in _EXTENDERS:
                # Part of a longer sequence Zulip has no name for: skip the whole sequence.
                end += 1
                while end < len(chars) and (ord(chars[end]) in _EXTENDERS or ord(chars[end - 1]) == 0x200D):
                    end += 1
            elif not _is_text_presentation(chars[index:end]):
                yield run.start() + index, run.start() + end, code
            index = end


def reaction_type(value: str) -> str:
    """Return the stored spelling of a reaction type; raise "Invalid emoji type." if unknown."""
    stored = REACTION_TYPES.get(value)
    if stored is None:
        raise ApiError("Invalid emoji type.")
    return stored


def create_realm_emoji(tx: Tx, name: str, author_id: int | None) -> int:
    """Add a custom emoji row without an image (tests; uploads use storage.org.realm_emoji); return its id."""
    cursor = tx.execute("INSERT INTO realm_emoji (name, author_id) VALUES (?, ?)", (name, author_id))
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def get_realm_emoji(tx: Tx, code: str) -> Any:
    """Return the realm_emoji row whose id is `code`, or None."""
    if not code.isascii() or not code.isdigit() or len(code) > 18:
        return None
    return tx.one("SELECT * FROM realm_emoji WHERE id = ?", (int(code),))


def emoji_for_name(tx: Tx, name: str) -> tuple[str, str]:
    """Return (emoji_code, reaction_type) for a name; raise "Emoji '<name>' does not exist".

    An active custom emoji wins over the extra emoji and Unicode emoji of the same name.
    """
    realm_id = tx.value("SELECT id FROM realm_emoji WHERE name = ? AND NOT deactivated", (name,))
    if realm_id is not None:
        return str(realm_id), REALM_EMOJI
    if name == EXTRA_EMOJI_NAME:
        return EXTRA_EMOJI_NAME, EXTRA_EMOJI
    if name in NAME_TO_CODE:
        return NAME_TO_CODE[name], UNICODE_EMOJI
    raise ApiError(f"Emoji '{name}' does not exist")


def check_emoji_code(tx: Tx, code: str, kind: str) -> None:
    """Raise "Invalid emoji code." unless `code` names an emoji (active or not) of type `kind`."""
    if kind == REALM_EMOJI:
        valid = get_realm_emoji(tx, code) is not None
    elif kind == EXTRA_EMOJI:
        valid = code == EXTRA_EMOJI_NAME
    else:
        valid = code in CODE_TO_NAME
    if not valid:
        raise ApiError("Invalid emoji code.")


def check_emoji(tx: Tx, name: str, code: str, kind: str) -> None:
    """Raise unless (name, code) is a usable emoji of type `kind` (Zulip's check_emoji_request)."""
    if kind == REALM_EMOJI:
        row = get_realm_emoji(tx, code)
        if row is None:
            raise ApiError("Invalid custom emoji.")
        if row["name"] != name:
            raise ApiError("Invalid custom emoji name.")
        if row["deactivated"]:
            raise ApiError("This custom emoji has been deactivated.")
        return
    check_emoji_code(tx, code, kind)
    names = {EXTRA_EMOJI_NAME: EXTRA_EMOJI_NAME} if kind == EXTRA_EMOJI else NAME_TO_CODE
    if names.get(name) != code:
        raise ApiError("Invalid emoji name.")
