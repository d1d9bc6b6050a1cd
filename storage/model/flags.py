"""Per-user message flags: one bit each in user_messages.flags.

The partial indexes of migration 0003 hard-code some of these values (unread: bit 1 clear,
starred 2, any mention 120, alerted 128, private 512); change them together or not at all.
"""

from __future__ import annotations

READ = 1
STARRED = 2
COLLAPSED = 4
MENTIONED = 8
STREAM_WILDCARD_MENTIONED = 16
TOPIC_WILDCARD_MENTIONED = 32
GROUP_MENTIONED = 64
HAS_ALERT_WORD = 128
HISTORICAL = 256
IS_PRIVATE = 512
FORCE_EXPAND = 1024
FORCE_COLLAPSE = 2048
# Zulip's internal bit: a mobile notification of the message was queued for the user, so reading or
# deleting it must withdraw that notification (storage/push/push_notifications.py).
ACTIVE_MOBILE_PUSH_NOTIFICATION = 4096

ANY_MENTION = MENTIONED | STREAM_WILDCARD_MENTIONED | TOPIC_WILDCARD_MENTIONED | GROUP_MENTIONED

# Names as the API shows them, in the order Zulip lists them.
NAMES = {
    "read": READ,
    "starred": STARRED,
    "collapsed": COLLAPSED,
    "mentioned": MENTIONED,
    "stream_wildcard_mentioned": STREAM_WILDCARD_MENTIONED,
    "topic_wildcard_mentioned": TOPIC_WILDCARD_MENTIONED,
    "group_mentioned": GROUP_MENTIONED,
    "has_alert_word": HAS_ALERT_WORD,
    "historical": HISTORICAL,
    "is_private": IS_PRIVATE,
    "force_expand": FORCE_EXPAND,
    "force_collapse": FORCE_COLLAPSE,
}
# Flags a user may set or clear through POST /messages/flags.
EDITABLE = {"read", "starred", "collapsed"}


# Internal bits (for the indexes; for withdrawing notifications), never shown in the API.
HIDDEN = IS_PRIVATE | ACTIVE_MOBILE_PUSH_NOTIFICATION


def flag_names(bits: int) -> list[str]:
    """Return the API flag list for a bit set; wildcard_mentioned is added for either wildcard."""
    names = [name for name, bit in NAMES.items() if bits & bit and not bit & HIDDEN]
    if bits & (STREAM_WILDCARD_MENTIONED | TOPIC_WILDCARD_MENTIONED):
        names.append("wildcard_mentioned")
    return names


_HISTORICAL_NAMES = ["read", "historical"]
_flag_lists: dict[int, list[str]] = {}


def flag_list(bits: int | None) -> list[str]:
    """The API flag list of a bit set (None: historical), computed once per distinct value."""
    if bits is None:
        return _HISTORICAL_NAMES
    found = _flag_lists.get(bits)
    if found is None:
        found = _flag_lists[bits] = flag_names(bits)
    return found
