"""User groups, system groups and group-setting values.

Every `can_*_group` permission in tornchat is a group id; `is_member` is the one check that
answers "does this user hold it", recursively through subgroups.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec

from storage.db.tx import Tx
from storage.model.errors import ApiError, insufficient_permission
from storage.model.roles import ROLE_ADMINISTRATOR, ROLE_GUEST, ROLE_MEMBER, ROLE_MODERATOR, ROLE_OWNER

# (name, description), in creation order: consecutive ids, each nested in the next.
SYSTEM_GROUPS = (
    ("role:nobody", "Nobody"),
    ("role:owners", "Owners of this organization"),
    ("role:administrators", "Administrators of this organization, including owners"),
    ("role:moderators", "Moderators of this organization, including administrators"),
    ("role:fullmembers", "Members of this organization, not including new accounts and guests"),
    ("role:members", "Members of this organization, not including guests"),
    ("role:everyone", "Everyone in this organization, including guests"),
    ("role:internet", "Everyone on the Internet"),
)

# The system groups a user of each role is a direct member of.
ROLE_GROUPS = {
    ROLE_OWNER: ("role:owners",),
    ROLE_ADMINISTRATOR: ("role:administrators",),
    ROLE_MODERATOR: ("role:moderators",),
    ROLE_MEMBER: ("role:fullmembers", "role:members"),
    ROLE_GUEST: ("role:everyone",),
}

GROUP_SETTINGS = (
    "can_add_members_group",
    "can_join_group",
    "can_leave_group",
    "can_manage_group",
    "can_mention_group",
    "can_remove_members_group",
)


class AnonymousGroup(msgspec.Struct, forbid_unknown_fields=True):
    """The object form of a group-setting value (spec 2.1)."""

    direct_members: list[int]
    direct_subgroups: list[int]


GroupSettingValue = int | AnonymousGroup


class SettingRule(msgspec.Struct, frozen=True):
    """How one group setting may be set and what it defaults to."""

    default: str  # a system group name, or "creator" for an anonymous group of the creator
    allow_everyone: bool = True
    allow_nobody: bool = True
    forbidden: tuple[str, ...] = ()  # further system groups the setting cannot be


USER_GROUP_RULES = {
    "can_add_members_group": SettingRule("creator", allow_everyone=False),
    "can_join_group": SettingRule("role:nobody", allow_everyone=False),
    "can_leave_group": SettingRule("role:everyone"),
    "can_manage_group": SettingRule("creator", allow_everyone=False),
    "can_mention_group": SettingRule("role:everyone", forbidden=("role:owners",)),
    "can_remove_members_group": SettingRule("role:nobody", allow_everyone=False),
}


def system_group_id(tx: Tx, name: str) -> int:
    """Return the id of a system group by name."""
    group_id = tx.value("SELECT id FROM user_groups WHERE name = ? AND is_system_group", (name,))
    if group_id is None:
        raise LookupError(name)
    return int(group_id)


def create_system_groups(tx: Tx) -> dict[str, int]:
    """Create the eight system groups, nested as each includes the one before; return name→id."""
    ids: dict[str, int] = {}
    for name, description in SYSTEM_GROUPS:
        cursor = tx.execute(
            "INSERT INTO user_groups (name, description, is_system_group) VALUES (?, ?, 1)",
            (name, description),
        )
        ids[name] = int(cursor.lastrowid or 0)
    nobody = ids["role:nobody"]
    tx.execute(
        "UPDATE user_groups SET " + ", ".join(f"{s} = ?" for s in GROUP_SETTINGS),
        (nobody,) * len(GROUP_SETTINGS),
    )
    names = [name for name, _ in SYSTEM_GROUPS]
    # role:nobody stands alone; owners ⊂ administrators ⊂ … ⊂ everyone ⊂ internet.
    for inner, outer in itertools.pairwise(names[1:]):
        tx.execute(
            "INSERT INTO user_group_subgroups (supergroup_id, subgroup_id) VALUES (?, ?)",
            (ids[outer], ids[inner]),
        )
    return ids


def set_role_groups(tx: Tx, user_id: int, old_role: int | None, new_role: int) -> None:
    """Move a user between the system groups of their old and new role, with events."""
    old = set(ROLE_GROUPS.get(old_role, ())) if old_role is not None else set()
    new = set(ROLE_GROUPS[new_role])
    everyone = active_user_ids(tx)
    for name in sorted(old - new):
        group_id = system_group_id(tx, name)
        tx.execute("DELETE FROM user_group_members WHERE group_id = ? AND user_id = ?", (group_id, user_id))
        event = {"type": "user_group", "op": "remove_members", "group_id": group_id, "user_ids": [user_id]}
        tx.publish(event, everyone)
    for name in sorted(new - old):
        group_id = system_group_id(tx, name)
        tx.execute("INSERT INTO user_group_members (group_id, user_id) VALUES (?, ?)", (group_id, user_id))
        event = {"type": "user_group", "op": "add_members", "group_id": group_id, "user_ids": [user_id]}
        tx.publish(event, everyone)


def active_user_ids(tx: Tx) -> list[int]:
    """Return the ids of every active user: the audience of realm-wide events."""
    return tx.column("SELECT id FROM users WHERE is_active ORDER BY id")


# The recursive walk starts at the setting's group and goes down through subgroups; a user holds
# the permission if they are a direct member of any group reached. System groups nest at most
# eight deep and named groups rarely more, so the walk touches a handful of rows.
# Deactivated users keep their memberships (for reactivation) but hold no permission meanwhile.
_IS_MEMBER_SQL = """
WITH RECURSIVE reachable(id) AS (
    SELECT ?
    UNION
    SELECT s.subgroup_id FROM user_group_subgroups AS s JOIN reachable AS r ON s.supergroup_id = r.id
)
SELECT 1 FROM user_group_members AS m JOIN reachable AS r ON m.group_id = r.id
JOIN users AS u ON u.id = m.user_id
WHERE m.user_id = ? AND u.is_active LIMIT 1
"""


def is_member(tx: Tx, user_id: int, group_id: int) -> bool:
    """Return whether the active user is in the group directly or through nested subgroups."""
    return tx.one(_IS_MEMBER_SQL, (group_id, user_id)) is not None


_RECURSIVE_MEMBERS_SQL = """
WITH RECURSIVE reachable(id) AS (
    SELECT ?
    UNION
    SELECT s.subgroup_id FROM user_group_subgroups AS s JOIN reachable AS r ON s.supergroup_id = r.id
)
SELECT DISTINCT m.user_id FROM user_group_members AS m JOIN reachable AS r ON m.group_id = r.id
JOIN users AS u ON u.id = m.user_id WHERE u.is_active ORDER BY m.user_id
"""


def recursive_member_ids(tx: Tx, group_id: int) -> list[int]:
    """Return the active users who hold a group-setting value, sorted."""
    return tx.column(_RECURSIVE_MEMBERS_SQL, (group_id,))


def setting_value(tx: Tx, group_id: int) -> int | dict[str, list[int]]:
    """Return the API form of a group setting: the id of a named group, or the anonymous object."""
    row = tx.one("SELECT name FROM user_groups WHERE id = ?", (group_id,))
    if row is not None and row["name"] is not None:
        return group_id
    return {"direct_members": list_active_member_ids(tx, group_id), "direct_subgroups": list_subgroup_ids(tx, group_id)}


def list_active_member_ids(tx: Tx, group_id: int) -> list[int]:
    """Return the group's direct members who are active, sorted.

    Deactivated users keep their rows so that reactivation restores them, but the API never
    shows them as members (as Zulip does).
    """
    return tx.column(
        "SELECT m.user_id FROM user_group_members AS m JOIN users AS u ON u.id = m.user_id"
        " WHERE m.group_id = ? AND u.is_active ORDER BY m.user_id",
        (group_id,),
    )


def list_subgroup_ids(tx: Tx, group_id: int) -> list[int]:
    """Return the ids of the group's direct subgroups, sorted."""
    return tx.column(
        "SELECT subgroup_id FROM user_group_subgroups WHERE supergroup_id = ? ORDER BY subgroup_id", (group_id,)
    )


def check_active_user_ids(tx: Tx, user_ids: list[int]) -> None:
    """Raise "Invalid user ID: N" for the first id that is not an active user."""
    for user_id in user_ids:
        if tx.one("SELECT 1 FROM users WHERE id = ? AND is_active", (user_id,)) is None:
            raise ApiError(f"Invalid user ID: {user_id}")


def check_named_group_ids(tx: Tx, group_ids: list[int]) -> None:
    """Raise for the first id that is not a named group ("Invalid user group ID: N") or is deactivated."""
    for group_id in group_ids:
        row = tx.one("SELECT deactivated FROM user_groups WHERE id = ? AND name IS NOT NULL", (group_id,))
        if row is None:
            raise ApiError(f"Invalid user group ID: {group_id}")
        if row["deactivated"]:
            raise ApiError("User group is deactivated.")


def resolve_setting(
    tx: Tx, setting: str, value: GroupSettingValue | None, rule: SettingRule, creator_id: int | None
) -> int:
    """Validate a group-setting value and return the group id to store (creating anonymous groups)."""
    if value is None:
        if rule.default == "creator":
            if creator_id is None:
                return system_group_id(tx, "role:nobody")
            return create_anonymous_group(tx, [creator_id], [])
        return system_group_id(tx, rule.default)
    if isinstance(value, AnonymousGroup):
        members = sorted(set(value.direct_members))
        subgroups = sorted(set(value.direct_subgroups))
        check_active_user_ids(tx, members)
        check_named_group_ids(tx, subgroups)
        if not members and not subgroups:
            return system_group_id(tx, "role:nobody")
        if members or len(subgroups) != 1:
            return create_anonymous_group(tx, members, subgroups)
        group_id = subgroups[0]
    else:
        group_id = value
    row = tx.one("SELECT name, is_system_group, deactivated FROM user_groups WHERE id = ?", (group_id,))
    if row is None or row["name"] is None:
        raise ApiError("Invalid user group")
    if row["deactivated"]:
        raise ApiError("User group is deactivated.")
    if row["is_system_group"] and _is_forbidden(rule, row["name"]):
        raise ApiError(f"'{setting}' setting cannot be set to '{row['name']}' group.")
    return group_id


def _is_forbidden(rule: SettingRule, system_group: str) -> bool:
    # role:internet (logged-out visitors) can never hold a permission.
    return (
        system_group == "role:internet"
        or system_group in rule.forbidden
        or (system_group == "role:everyone" and not rule.allow_everyone)
        or (system_group == "role:nobody" and not rule.allow_nobody)
    )


def create_anonymous_group(tx: Tx, member_ids: list[int], subgroup_ids: list[int]) -> int:
    """Create a nameless group holding exactly these members and subgroups; return its id."""
    nobody = system_group_id(tx, "role:nobody")
    cursor = tx.execute(
        "INSERT INTO user_groups (name, description, is_system_group, "
        + ", ".join(GROUP_SETTINGS)
        + ") VALUES (NULL, '', 0"
        + ", ?" * len(GROUP_SETTINGS)
        + ")",
        (nobody,) * len(GROUP_SETTINGS),
    )
    group_id = int(cursor.lastrowid or 0)
    tx.executemany(
        "INSERT INTO user_group_members (group_id, user_id) VALUES (?, ?)", [(group_id, u) for u in member_ids]
    )
    tx.executemany(
        "INSERT INTO user_group_subgroups (supergroup_id, subgroup_id) VALUES (?, ?)",
        [(group_id, g) for g in subgroup_ids],
    )
    return group_id


def group_object(tx: Tx, row: Any) -> dict[str, Any]:
    """Return the API user group object for a user_groups row."""
    group_id = row["id"]
    return {
        "id": group_id,
        "name": row["name"],
        "creator_id": row["creator_id"],
        "date_created": row["date_created"],
        "description": row["description"],
        "members": list_active_member_ids(tx, group_id),
        "direct_subgroup_ids": list_subgroup_ids(tx, group_id),
        "is_system_group": bool(row["is_system_group"]),
        **{setting: setting_value(tx, row[setting]) for setting in GROUP_SETTINGS},
        "deactivated": bool(row["deactivated"]),
    }


def list_groups(tx: Tx, include_deactivated: bool) -> list[dict[str, Any]]:
    """Return every named group (system groups included) as API objects, by id."""
    rows = tx.all(
        "SELECT * FROM user_groups WHERE name IS NOT NULL AND (? OR NOT deactivated) ORDER BY id",
        (include_deactivated,),
    )
    return [group_object(tx, row) for row in rows]


def check_can_create_groups(tx: Tx, actor: Any) -> None:
    """Raise "Insufficient permission" unless the actor may create user groups."""
    can_create = tx.value("SELECT can_create_groups FROM realm")
    if actor.role == ROLE_GUEST or not is_member(tx, actor.id, can_create):
        raise insufficient_permission()


NAME_PREFIXES_RESERVED = ("@", "role:", "user:", "stream:", "channel:")
MAX_GROUP_NAME_LENGTH = 100


def check_group_name(name: str) -> str:
    """Return the stripped group name, or raise the API's error for it."""
    name = name.strip()
    if not name:
        raise ApiError("User group name can't be empty!")
    if len(name) > MAX_GROUP_NAME_LENGTH:
        raise ApiError(f"User group name cannot exceed {MAX_GROUP_NAME_LENGTH} characters.")
    for prefix in NAME_PREFIXES_RESERVED:
        if name.startswith(prefix):
            raise ApiError(f"User group name cannot start with '{prefix}'.")
    return name


def create_group(
    tx: Tx,
    actor: Any,
    name: str,
    description: str,
    members: list[int],
    subgroups: list[int] | None,
    settings: dict[str, GroupSettingValue | None],
) -> int:
    """Create a named user group (spec 4.9); return its id; raise ApiError on any invalid input."""
    check_can_create_groups(tx, actor)
    members = sorted(set(members))
    check_active_user_ids(tx, members)
    name = check_group_name(name)
    resolved = {
        setting: resolve_setting(tx, setting, settings.get(setting), rule, actor.id)
        for setting, rule in USER_GROUP_RULES.items()
    }
    if tx.one("SELECT 1 FROM user_groups WHERE name = ?", (name,)) is not None:
        raise ApiError(f"User group '{name}' already exists.")
    subgroups = sorted(set(subgroups or []))
    check_named_group_ids(tx, subgroups)
    cursor = tx.execute(
        "INSERT INTO user_groups (name, description, creator_id, date_created, "
        + ", ".join(GROUP_SETTINGS)
        + ") VALUES (?, ?, ?, ?"
        + ", ?" * len(GROUP_SETTINGS)
        + ")",
        (name, description, actor.id, tx.timestamp, *(resolved[s] for s in GROUP_SETTINGS)),
    )
    group_id = int(cursor.lastrowid or 0)
    tx.executemany("INSERT INTO user_group_members (group_id, user_id) VALUES (?, ?)", [(group_id, u) for u in members])
    audience = active_user_ids(tx)
    row = tx.one("SELECT * FROM user_groups WHERE id = ?", (group_id,))
    tx.publish({"type": "user_group", "op": "add", "group": group_object(tx, row), "for_reactivation": False}, audience)
    if subgroups:
        tx.executemany(
            "INSERT INTO user_group_subgroups (supergroup_id, subgroup_id) VALUES (?, ?)",
            [(group_id, g) for g in subgroups],
        )
        tx.publish(
            {"type": "user_group", "op": "add_subgroups", "group_id": group_id, "direct_subgroup_ids": subgroups},
            audience,
        )
    return group_id
