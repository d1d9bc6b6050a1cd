"""Administrators' and users' changes to accounts: role, name, email, deactivation, reactivation.

Each change is one transaction and tells the users who may see it (realm_user update events).
"""

from __future__ import annotations

from typing import Any

from storage.db.tx import Tx
from storage.model.errors import ApiError, must_be_admin, must_be_owner
from storage.model.realm import Realm
from storage.model.roles import ROLE_ADMINISTRATOR, ROLE_OWNER
from storage.model.user import User
from storage.org import groups, profile_fields
from storage.org.users import (
    EMAIL_RE,
    access_user_by_id,
    api_email,
    check_full_name,
    get_user_by_delivery_email,
    users_who_see_email,
)


def count_active_owners(tx: Tx) -> int:
    return int(tx.value("SELECT count(*) FROM users WHERE role = ? AND is_active AND NOT is_bot", (ROLE_OWNER,)))


def is_only_owner(tx: Tx, user: User) -> bool:
    return user.is_owner and user.is_active and not user.is_bot and count_active_owners(tx) == 1


def _publish_person(tx: Tx, person: dict[str, Any], audience: list[int] | None = None) -> None:
    audience = groups.active_user_ids(tx) if audience is None else audience
    tx.publish({"type": "realm_user", "op": "update", "person": person}, audience)


def change_role(tx: Tx, actor: User, target: User, role: int) -> None:
    """Change a user's role following spec 4.8's rules; move them between system groups."""
    if role == target.role:
        return
    if ROLE_OWNER in (role, target.role) and not actor.is_owner:
        raise must_be_owner()
    if not actor.is_admin:
        raise must_be_admin()
    if target.is_owner and is_only_owner(tx, target):
        raise ApiError("The owner permission cannot be removed from the only organization owner.")
    # Spec 3: guests cannot be administrators. A guest is first made a member, then promoted.
    if target.is_guest and role in (ROLE_OWNER, ROLE_ADMINISTRATOR):
        raise ApiError("Guests cannot be organization administrators")
    tx.execute("UPDATE users SET role = ? WHERE id = ?", (role, target.id))
    groups.set_role_groups(tx, target.id, target.role, role)
    _publish_person(tx, {"user_id": target.id, "role": role})


def change_full_name(tx: Tx, target: User, full_name: str) -> None:
    if full_name == target.full_name or not full_name.strip():
        return
    name = check_full_name(full_name)
    tx.execute("UPDATE users SET full_name = ? WHERE id = ?", (name, target.id))
    _publish_person(tx, {"user_id": target.id, "full_name": name})


def change_email(tx: Tx, actor: User, target: User, new_email: str, realm: Realm) -> None:
    """Change a user's real email; the actor must be an owner with can_change_user_emails."""
    if not (actor.is_owner and actor.can_change_user_emails):
        raise ApiError("User not authorized to change user emails")
    email = new_email.strip()
    if not EMAIL_RE.match(email):
        raise ApiError("Invalid new email address.")
    if email.lower() == target.delivery_email.lower():
        return
    if get_user_by_delivery_email(tx, email) is not None:
        raise ApiError("New email value error: Already has an account.")
    tx.execute("UPDATE users SET delivery_email = ? WHERE id = ?", (email, target.id))
    # The new address goes only to those who may see it; the rest learn of no change.
    _publish_person(tx, {"user_id": target.id, "delivery_email": email}, users_who_see_email(tx, target))
    if api_email(target, realm) == target.delivery_email:
        _publish_person(tx, {"user_id": target.id, "new_email": email})


def update_user(
    tx: Tx,
    actor: User,
    user_id: int,
    realm: Realm,
    *,
    full_name: str | None,
    role: int | None,
    profile_data: list[tuple[int, Any]] | None,
    new_email: str | None,
) -> None:
    """PATCH /users/{id}: apply every given change, or none (the transaction rolls back on error)."""
    target = access_user_by_id(tx, actor, user_id, for_admin=True)
    if role is not None:
        change_role(tx, actor, target, role)
    if full_name is not None:
        change_full_name(tx, target, full_name)
    if profile_data is not None:
        for change in profile_fields.set_values(tx, target.id, profile_data):
            _publish_person(tx, {"user_id": target.id, "custom_profile_field": change})
    if new_email is not None:
        change_email(tx, actor, target, new_email, realm)


def cannot_deactivate_last_user(is_last_owner: bool) -> ApiError:
    """Zulip's CANNOT_DEACTIVATE_LAST_USER: the only account, or the only owner, leaving by itself."""
    entity = "organization owner" if is_last_owner else "user"
    data = {"is_last_owner": is_last_owner, "entity": entity}
    return ApiError(f"Cannot deactivate the only {entity}.", "CANNOT_DEACTIVATE_LAST_USER", data=data)


def deactivate_own_user(tx: Tx, actor: User) -> None:
    """DELETE /users/me: deactivate oneself (and one's bots); raise for the only account or the only owner."""
    # Zulip counts every active account of the realm, bots included; its system bots live in another
    # realm, so this server's (bots without an owner) are left out.
    others = tx.value(
        "SELECT count(*) FROM users WHERE is_active AND id != ? AND NOT (is_bot AND bot_owner_id IS NULL)",
        (actor.id,),
    )
    if not others:
        raise cannot_deactivate_last_user(False)
    if is_only_owner(tx, actor):
        raise cannot_deactivate_last_user(True)
    deactivate_user(tx, actor, actor.id, own=True)


def deactivate_user(tx: Tx, actor: User, user_id: int, own: bool = False) -> None:
    """Deactivate a user and the bots they own; the only owner cannot be deactivated."""
    target = actor if own else access_user_by_id(tx, actor, user_id, for_admin=True)
    if target.is_owner and not actor.is_owner:
        raise must_be_owner()
    if is_only_owner(tx, target):
        raise ApiError("Cannot deactivate the only organization owner")
    if not target.is_active:
        raise ApiError("User is already deactivated")
    affected = [target.id] + tx.column(
        "SELECT id FROM users WHERE bot_owner_id = ? AND is_active ORDER BY id", (target.id,)
    )
    for uid in affected:
        tx.execute("UPDATE users SET is_active = 0 WHERE id = ?", (uid,))
        _publish_person(tx, {"user_id": uid, "is_active": False})


def reactivate_user(tx: Tx, actor: User, user_id: int) -> None:
    """Reactivate a deactivated user (administrators only)."""
    target = access_user_by_id(tx, actor, user_id, for_admin=True)
    if target.is_owner and not actor.is_owner:
        raise must_be_owner()
    if target.is_active:
        raise ApiError("User is already active")
    tx.execute("UPDATE users SET is_active = 1 WHERE id = ?", (target.id,))
    _publish_person(tx, {"user_id": target.id, "is_active": True})
