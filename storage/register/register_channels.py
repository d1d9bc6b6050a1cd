"""Every channel's API object at once, for POST /register (streams, subscriptions, never_subscribed).

channels.channel_object builds one channel's object with about twenty queries (each group
setting, the post policy, the subscriber count, the message statistics). A registration shows
every channel the user may know of, twice for most of them; here each object is built once from
a few queries over all channels: the objects equal channel_object's, key for key and in the same
order (tests/storage/register/test_register_cost.py compares them).
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

from storage.cache.directory import directory
from storage.cache.kept import kept
from storage.channels.channel_objects import (
    POST_POLICY_BY_GROUP,
    RECENTLY_ACTIVE_SECONDS,
    TRAFFIC_WINDOW_SECONDS,
    WEEK,
    build_channel_object,
)
from storage.db.tx import Tx
from storage.model.channel import Channel

R = TypeVar("R")

# Active subscribers per channel; deactivated users are few: a list, not a join (half the time).
SUBSCRIBER_COUNTS_SQL = (
    "SELECT channel_id, count(*) FROM subscriptions"
    " WHERE active AND user_id NOT IN (SELECT id FROM users WHERE NOT is_active) GROUP BY channel_id"
)
# Each channel recipient's first and last message, and its messages from an id on: one statement
# each, the per-channel index lookups run inside SQLite (600 statements from Python took 8 times as long).
FIRST_LAST_SQL = (
    "SELECT r.id, (SELECT id FROM messages WHERE recipient_id = r.id ORDER BY id LIMIT 1),"
    " (SELECT id FROM messages WHERE recipient_id = r.id ORDER BY id DESC LIMIT 1)"
    " FROM recipients AS r WHERE r.type = 2"
)
COUNTS_SINCE_SQL = (
    "SELECT r.id, (SELECT count(*) FROM messages WHERE recipient_id = r.id AND id >= ?) FROM recipients AS r"
    " WHERE r.type = 2"
)
# Anonymous groups (a setting's {direct_members, direct_subgroups}): their active members and subgroups.
ANONYMOUS_MEMBERS_SQL = (
    "SELECT m.group_id, m.user_id FROM user_group_members AS m JOIN users AS u ON u.id = m.user_id"
    " WHERE u.is_active AND m.group_id IN (SELECT id FROM user_groups WHERE name IS NULL)"
    " ORDER BY m.group_id, m.user_id"
)
ANONYMOUS_SUBGROUPS_SQL = (
    "SELECT supergroup_id, subgroup_id FROM user_group_subgroups"
    " WHERE supergroup_id IN (SELECT id FROM user_groups WHERE name IS NULL) ORDER BY supergroup_id, subgroup_id"
)


class ChannelObjects:
    """The channels of the realm (archived ones too) and their API objects, read in one transaction."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx
        self._objects: dict[int, dict[str, Any]] = {}
        self._since: dict[int, int | None] = {}  # a moment: the first message sent then or later

    @functools.cached_property
    def channels(self) -> dict[int, Channel]:
        """Every channel by id (shared)."""
        return directory(self.tx).all_channels()

    @functools.cached_property
    def _groups(self) -> dict[int, tuple[str | None, bool]]:
        return kept(self.tx, "groups", _read_groups)

    @functools.cached_property
    def _members(self) -> dict[int, list[int]]:
        return kept(self.tx, "members", lambda tx: _grouped(tx, ANONYMOUS_MEMBERS_SQL))

    @functools.cached_property
    def _subgroups(self) -> dict[int, list[int]]:
        return kept(self.tx, "subgroups", lambda tx: _grouped(tx, ANONYMOUS_SUBGROUPS_SQL))

    @functools.cached_property
    def _subscribers(self) -> dict[int, int]:
        return subscriber_counts(self.tx)

    @functools.cached_property
    def _recipients(self) -> dict[int, int]:
        sql = "SELECT type_id, id FROM recipients WHERE type = 2"
        return kept(self.tx, "recipients", lambda tx: dict(tx.execute(sql).fetchall()))

    def object(self, channel_id: int) -> dict[str, Any]:
        """channels.channel_object of this channel (shared: copy it before changing it)."""
        found = self._objects.get(channel_id)
        if found is None:
            found = self._objects[channel_id] = self._build(self.channels[channel_id])
        return found

    def _build(self, channel: Channel) -> dict[str, Any]:
        name, system = self._groups.get(channel.can_send_message_group, (None, False))
        post_policy = POST_POLICY_BY_GROUP.get(name, 1) if system and name is not None else 1
        return build_channel_object(
            channel, post_policy, self._statistics(channel), self._subscribers.get(channel.id, 0), self._setting_value
        )

    def _setting_value(self, group_id: int) -> int | dict[str, list[int]]:
        """groups.setting_value, from the groups read at the start."""
        if self._groups.get(group_id, (None, False))[0] is not None:
            return group_id
        return {
            "direct_members": list(self._members.get(group_id, ())),
            "direct_subgroups": list(self._subgroups.get(group_id, ())),
        }

    def _statistics(self, channel: Channel) -> dict[str, Any]:
        """channels.message_statistics, from a few statements over every channel's recipient."""
        now = self.tx.now
        recipient = self._recipients.get(channel.id)
        first, last = self._first_last.get(recipient, (None, None)) if recipient is not None else (None, None)
        age = now - channel.date_created
        traffic = None
        if age >= WEEK:
            window = min(age, TRAFFIC_WINDOW_SECONDS)
            if window == TRAFFIC_WINDOW_SECONDS:  # the same moment for every channel that old: counted together
                count = self._window_counts.get(recipient, 0) if recipient is not None else 0
            else:
                count = self._count_since(recipient, now - window)
            traffic = round(count * WEEK / window)
        # A message sent since the moment exists if the channel's last message is one.
        since = self._first_since(now - RECENTLY_ACTIVE_SECONDS)
        recently_active = age < RECENTLY_ACTIVE_SECONDS or (since is not None and last is not None and last >= since)
        return {"first_message_id": first, "stream_weekly_traffic": traffic, "is_recently_active": recently_active}

    @functools.cached_property
    def _first_last(self) -> dict[int, tuple[int | None, int | None]]:
        """Each channel recipient's first and last message ids (index lookups in one statement)."""
        rows = self.tx.execute(FIRST_LAST_SQL).fetchall()
        return {row[0]: (row[1], row[2]) for row in rows}

    @functools.cached_property
    def _window_counts(self) -> dict[int, int]:
        """Each channel recipient's messages in the last TRAFFIC_WINDOW_SECONDS (one statement)."""
        since = self._first_since(self.tx.now - TRAFFIC_WINDOW_SECONDS)
        return {} if since is None else dict(self.tx.execute(COUNTS_SINCE_SQL, (since,)).fetchall())

    def _first_since(self, moment: float) -> int | None:
        """The first message id sent at or after the moment (ids grow with their send time)."""
        key = int(moment)
        if key not in self._since:
            self._since[key] = self.tx.value(
                "SELECT id FROM messages WHERE date_sent >= ? ORDER BY date_sent, id LIMIT 1", (key,)
            )
        return self._since[key]

    def _count_since(self, recipient_id: int | None, moment: float) -> int:
        since = self._first_since(moment)
        if recipient_id is None or since is None:
            return 0
        return int(
            self.tx.value("SELECT count(*) FROM messages WHERE recipient_id = ? AND id >= ?", (recipient_id, since))
        )


def subscriber_counts(tx: Tx) -> dict[int, int]:
    """Active, non-deactivated subscribers per channel id (channels without any are left out); kept."""
    return kept(tx, "subscriber_counts", lambda tx: dict(tx.execute(SUBSCRIBER_COUNTS_SQL).fetchall()))


def _read_groups(tx: Tx) -> dict[int, tuple[str | None, bool]]:
    rows = tx.execute("SELECT id, name, is_system_group FROM user_groups")
    return {row[0]: (row[1], bool(row[2])) for row in rows}


def _grouped(tx: Tx, sql: str) -> dict[int, list[int]]:
    result: dict[int, list[int]] = {}
    for key, value in tx.execute(sql):
        result.setdefault(key, []).append(value)
    return result
