"""Emoji for reactions: Unicode emoji (from the `emoji` package), the realm's custom emoji, "zulip".

Each reaction lives in one namespace, its `reaction_type` (spec 2.6): `unicode_emoji` (emoji_code
is the dash-separated hex of the codepoints), `realm_emoji` (emoji_code is the custom emoji's id)
and `zulip_extra_emoji` (the one extra emoji, code and name "zulip"; the spec spells the type
`service_extra_emoji`, accepted in requests but never stored or sent).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import emoji as emoji_data

from storage.db import Tx
from storage.errors import ApiError

UNICODE_EMOJI = "unicode_emoji"
REALM_EMOJI = "realm_emoji"
EXTRA_EMOJI = "zulip_extra_emoji"
REACTION_TYPES = {UNICODE_EMOJI: UNICODE_EMOJI, REALM_EMOJI: REALM_EMOJI, EXTRA_EMOJI: EXTRA_EMOJI}
REACTION_TYPES["service_extra_emoji"] = EXTRA_EMOJI
EXTRA_EMOJI_NAME = "zulip"

# Variation selectors only choose text or emoji presentation: codes leave them out, as Zulip's do,
# so "❤" and "❤️" are the same emoji "2764".
VARIATION_SELECTORS = {0xFE0E, 0xFE0F}
_QUOTES = re.compile(r"[’'\"“”]")
_NOT_NAME = re.compile(r"[^a-z0-9+\-]+")


def emoji_name(shortcode: str) -> str:
    """Return the Zulip-style name of a shortcode: ":Woman’s_hat:" -> "womans_hat", ":+1:" -> "+1"."""
    text = unicodedata.normalize("NFKD", shortcode.strip(":").lower())
    text = "".join(c for c in text if not unicodedata.combining(c))  # piñata -> pinata
    text = text.replace("#", "hash").replace("*", "asterisk")  # keycap_# and keycap_* stay apart
    return _NOT_NAME.sub("_", _QUOTES.sub("", text)).strip("_")


def emoji_code(text: str) -> str:
    """Return the emoji_code of an emoji string: "👍" -> "1f44d", "#️⃣" -> "0023-20e3"."""
    return "-".join(f"{ord(c):04x}" for c in text if ord(c) not in VARIATION_SELECTORS)


def _build_tables() -> tuple[dict[str, str], dict[str, str]]:
    """Return (name -> code, code -> canonical name), built once at import."""
    name_to_code: dict[str, str] = {}
    code_to_name: dict[str, str] = {}
    aliases: list[tuple[str, str]] = []
    for text, data in emoji_data.EMOJI_DATA.items():
        code, name = emoji_code(text), emoji_name(data["en"])
        code_to_name.setdefault(code, name)
        name_to_code.setdefault(name, code)
        aliases.extend((emoji_name(alias), code) for alias in data.get("alias", ()))
    # Aliases ("+1", "heart", "smile") come second so that no alias hides another emoji's own name.
    for name, code in aliases:
        name_to_code.setdefault(name, code)
    return name_to_code, code_to_name


NAME_TO_CODE, CODE_TO_NAME = _build_tables()


def reaction_type(value: str) -> str:
    """Return the stored spelling of a reaction type; raise "Invalid emoji type." if unknown."""
    stored = REACTION_TYPES.get(value)
    if stored is None:
        raise ApiError("Invalid emoji type.")
    return stored


def create_realm_emoji(tx: Tx, name: str, author_id: int | None) -> int:
    """Add a custom emoji (no image: uploads are not supported) and return its id."""
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
