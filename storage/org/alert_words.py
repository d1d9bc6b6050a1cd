"""Alert words: words and phrases a user wants to be alerted to, and the has_alert_word flag.

A user's alert words are kept as typed and compared case-insensitively (one per lower() form).
Every new message (and every content edit) sets has_alert_word for its receivers whose alert
word occurs in the content as Zulip matches them: case-insensitive, not inside another word or a
URL (the characters allowed around a match are Zulip's), not inside a fenced code block, and never
for the message's own sender.
"""

from __future__ import annotations

import json
import re
from typing import Any

from storage.db.tx import Tx
from storage.model import flags
from storage.model.errors import ApiError
from storage.model.user import User

MAX_ALERT_WORD_LENGTH = 100  # Zulip's limit, checked on the request (tornchat/handlers/alert_words.py)
# Not a Zulip limit: bounds the per-message matching work one account can cause.
MAX_ALERT_WORDS = 1000

# Zulip's AlertWordNotificationProcessor: what may come right before and right after a match.
# (Zulip's after-set holds the two-character string '",', which never equals one character, so a
# double quote after a word does not count as a boundary; the same here.)
ALLOWED_BEFORE = frozenset(" \n(\".,';[*`>")
ALLOWED_AFTER = frozenset(" \n)?:.,';]!*`")

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")

# Sending: the alert words of the message's receivers, through alert_words_by_user.
RECEIVER_WORDS_SQL = (
    "SELECT user_id, word_key FROM alert_words WHERE user_id IN (SELECT value FROM json_each(?)) ORDER BY user_id"
)


def list_alert_words(tx: Tx, user: User) -> list[str]:
    """GET /users/me/alert_words: the user's alert words as typed, oldest first."""
    return tx.column("SELECT word FROM alert_words WHERE user_id = ? ORDER BY id", (user.id,))


def alert_words_state(tx: Tx, user: User) -> dict[str, Any]:
    """POST /register's `alert_words`."""
    return {"alert_words": list_alert_words(tx, user)}


def _changed(tx: Tx, user: User) -> list[str]:
    words = list_alert_words(tx, user)
    tx.publish({"type": "alert_words", "alert_words": words}, [user.id])
    return words


def add_alert_words(tx: Tx, user: User, words: list[str]) -> list[str]:
    """POST /users/me/alert_words: add words (stripped; blank ones skipped); return the full list.

    A word already present in another case is not added again; within one request the last
    spelling of a word wins, as in Zulip. Raises when the user would have more than MAX_ALERT_WORDS.
    """
    new: dict[str, str] = {}
    for word in words:
        word = word.strip()
        if word:
            new[word.lower()] = word
    existing = set(tx.column("SELECT word_key FROM alert_words WHERE user_id = ?", (user.id,)))
    rows = [(user.id, word, key) for key, word in new.items() if key not in existing]
    if len(existing) + len(rows) > MAX_ALERT_WORDS:
        raise ApiError(f"Too many alert words (limit: {MAX_ALERT_WORDS})")
    tx.executemany("INSERT INTO alert_words (user_id, word, word_key) VALUES (?, ?, ?)", rows)
    return _changed(tx, user)


def remove_alert_words(tx: Tx, user: User, words: list[str]) -> list[str]:
    """DELETE /users/me/alert_words: remove these words, in any case; unknown ones are ignored."""
    keys = sorted({word.lower() for word in words})
    tx.execute(
        "DELETE FROM alert_words WHERE user_id = ? AND word_key IN (SELECT value FROM json_each(?))",
        (user.id, json.dumps(keys)),
    )
    return _changed(tx, user)


# -- matching --------------------------------------------------------------------------------


def without_fenced_code(content: str) -> str:
    """Return the content with fenced code blocks (``` or ~~~, closed or running to the end) removed."""
    kept: list[str] = []
    fence = ""
    for line in content.split("\n"):
        match = _FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = ""
            kept.append("")  # keeps the line boundary: a word before a block still ends there
            continue
        if match:
            fence = match.group(1)
            kept.append("")
            continue
        kept.append(line)
    return "\n".join(kept)


def occurs(text: str, word: str) -> bool:
    """Return whether `word` (lower case) occurs in `text` (lower case) between allowed boundaries."""
    start = text.find(word)
    while start != -1:
        end = start + len(word)
        if (start == 0 or text[start - 1] in ALLOWED_BEFORE) and (end == len(text) or text[end] in ALLOWED_AFTER):
            return True
        start = text.find(word, start + 1)
    return False


def flag_alert_words(tx: Tx, sender_id: int, content: str, bits: dict[int, int]) -> None:
    """Set has_alert_word in `bits` (user id: flag bits) for receivers with an alert word in the content.

    Clears it for the others, so an edit that removes the word removes the flag. One query, for
    the receivers' words only; the sender's own alert words never flag their message.
    """
    for user_id in bits:
        bits[user_id] &= ~flags.HAS_ALERT_WORD
    receivers = sorted(user_id for user_id in bits if user_id != sender_id)
    rows = tx.all(RECEIVER_WORDS_SQL, (json.dumps(receivers),)) if receivers else []
    if not rows:
        return
    users_by_word: dict[str, list[int]] = {}
    for user_id, word in rows:
        users_by_word.setdefault(word, []).append(user_id)
    text = without_fenced_code(content).lower()
    for word, user_ids in users_by_word.items():
        if occurs(text, word):
            for user_id in user_ids:
                bits[user_id] |= flags.HAS_ALERT_WORD
