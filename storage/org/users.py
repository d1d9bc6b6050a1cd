"""Users: accounts, authentication, API objects, and the administrators' actions on them."""

from __future__ import annotations

import datetime
import functools
import hmac
import re
import urllib.parse
from typing import Any

import msgspec

from storage.cache.directory import directory
from storage.db.tx import Tx
from storage.model import avatars
from storage.model.errors import ApiError, insufficient_permission, must_be_admin, no_such_user
from storage.model.realm import MAX_NAME_LENGTH, Realm, get_realm
from storage.model.roles import ROLE_ADMINISTRATOR, ROLE_GUEST, ROLE_MODERATOR, ROLE_OWNER, ROLES
from storage.model.user import ADMINS, EVERYONE, MAX_ID, MEMBERS, MODERATORS, USER_COLUMNS, User
from storage.org import groups, passwords, profile_fields

# Email-visibility settings whose real addresses each role may see.
VISIBLE_TO_ROLE = {
    ROLE_OWNER: {EVERYONE, MEMBERS, ADMINS, MODERATORS},
    ROLE_ADMINISTRATOR: {EVERYONE, MEMBERS, ADMINS, MODERATORS},
    ROLE_MODERATOR: {EVERYONE, MEMBERS, MODERATORS},
    groups.ROLE_MEMBER: {EVERYONE, MEMBERS},
    ROLE_GUEST: {EVERYONE},
}
INVALID_NAME_CHARACTERS = set('*`\\>"@')
EMAIL_RE = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@([A-Za-z0-9-]+\.)*[A-Za-z0-9-]+$")
MIN_PASSWORD_LENGTH = 6


def _user(row: Any) -> User | None:
    # strict=False turns SQLite's 0/1 into the Struct's booleans.
    return None if row is None else msgspec.convert(dict(row), User, strict=False)


def get_user_by_id(tx: Tx, user_id: int) -> User | None:
    """Return the user with this id, active or not, or None."""
    if not 0 < user_id <= MAX_ID:
        return None
    return _user(tx.one(f"SELECT {USER_COLUMNS} FROM users WHERE id = ?", (user_id,)))


def get_user_by_delivery_email(tx: Tx, email: str) -> User | None:
    """Return the user whose real email matches (case-insensitively), or None."""
    return _user(tx.one(f"SELECT {USER_COLUMNS} FROM users WHERE delivery_email = ?", (email.strip(),)))


def dummy_email(user_id: int, realm: Realm) -> str:
    return f"user{user_id}@{realm.email_host}"


def get_user_by_api_email(tx: Tx, email: str, realm: Realm) -> User | None:
    """Return the user an API email names: a dummy `user{id}@host` address or a real one."""
    match = re.fullmatch(r"user(\d+)@(.+)", email.strip(), re.IGNORECASE)
    if match and match.group(2).lower() == realm.email_host.lower():
        return get_user_by_id(tx, int(match.group(1)))
    return get_user_by_delivery_email(tx, email)


def api_email(user: User, realm: Realm) -> str:
    """Return the address the API shows: real when visible to everyone (and for bots), else dummy."""
    if user.is_bot or user.email_address_visibility == EVERYONE:
        return user.delivery_email
    return dummy_email(user.id, realm)


def can_see_delivery_email(viewer: User | None, user: User) -> bool:
    if viewer is None:
        return False
    if viewer.id == user.id or user.is_bot:
        return True
    return user.email_address_visibility in VISIBLE_TO_ROLE[viewer.role]


def avatar_url(user: User, realm: Realm, medium: bool = False) -> str:
    """Return the URL of a user's avatar: uploaded, Gravatar or the generated default (storage/model/avatars.py)."""
    return avatars.avatar_url(user, realm, medium)


def absolute_avatar_url(user: User, realm: Realm) -> str:
    """Return the avatar URL with the realm's URL in front (Zulip's, for push notifications: no page to resolve it)."""
    return urllib.parse.urljoin(realm.url, avatars.avatar_url(user, realm))


# Pure functions run for every user of every POST /register and GET /users: cached (bounded).
@functools.lru_cache(maxsize=16384)
def iso_minutes(timestamp: int) -> str:
    moment = datetime.datetime.fromtimestamp(timestamp, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M+00:00")


def user_object(
    viewer: User | None,
    user: User,
    realm: Realm,
    client_gravatar: bool,
    profile_data: dict[str, dict[str, str]] | None,
) -> dict[str, Any]:
    """Return the API user object (spec 2.5) of `user` as `viewer` may see it."""
    email_visible = can_see_delivery_email(viewer, user)
    result: dict[str, Any] = {
        "email": api_email(user, realm),
        "user_id": user.id,
        "avatar_version": user.avatar_version,
        "is_admin": user.is_admin,
        "is_owner": user.is_owner,
        "is_guest": user.is_guest,
        "role": user.role,
        "is_bot": user.is_bot,
        "full_name": user.full_name,
        "timezone": user.timezone,
        "is_active": user.is_active,
        "date_joined": iso_minutes(user.date_joined),
        "delivery_email": user.delivery_email if email_visible else None,
        "is_imported_stub": user.is_imported_stub,
        # Null only where the client can compute it: a Gravatar (the server's switch on) of an email it sees.
        "avatar_url": None
        if client_gravatar and email_visible and avatars.uses_gravatar(user, realm)
        else avatars.avatar_url(user, realm),
        "bot_type": user.bot_type,
        "bot_owner_id": user.bot_owner_id,
    }
    if profile_data is not None and not user.is_bot:
        result["profile_data"] = profile_data
    return result


def users_objects(
    tx: Tx, viewer: User, realm: Realm, users: list[User], client_gravatar: bool, include_profile: bool
) -> list[dict[str, Any]]:
    """Return API objects for several users with one query for their profile data."""
    values = profile_fields.values_by_user(tx, [u.id for u in users]) if include_profile else {}
    return [
        user_object(viewer, u, realm, client_gravatar, values.get(u.id, {}) if include_profile else None) for u in users
    ]


def own_user_object(tx: Tx, user: User, realm: Realm) -> dict[str, Any]:
    """Return GET /users/me: the user's own object, flat, with profile data and max_message_id."""
    data = user_object(user, user, realm, False, profile_fields.values_by_user(tx, [user.id]).get(user.id, {}))
    data.pop("bot_type")
    data.pop("bot_owner_id")
    data["max_message_id"] = max_message_id(tx, user)
    return data


def max_message_id(tx: Tx, user: User) -> int:
    """Return the id of the newest message the user has a row for, or -1 when there is none."""
    # The last entry of the user's range of the user_messages primary key.
    value = tx.value(
        "SELECT message_id FROM user_messages WHERE user_id = ? ORDER BY message_id DESC LIMIT 1", (user.id,)
    )
    return -1 if value is None else int(value)


def check_email(email: str) -> str:
    """Return the stripped email if it is a valid address, else raise "Bad name or username"."""
    email = email.strip()
    if len(email) > 254 or not EMAIL_RE.match(email):
        raise ApiError("Bad name or username")
    return email


def check_full_name(full_name: str) -> str:
    """Return the stripped name, or raise the API's error for a name that cannot be used."""
    name = full_name.strip()
    if len(name) > MAX_NAME_LENGTH:
        raise ApiError("Name too long!")
    if not name:
        raise ApiError("Name too short!")
    if any(c in INVALID_NAME_CHARACTERS or not c.isprintable() for c in name):
        raise ApiError("Invalid characters in name!")
    return name


def create_user(
    tx: Tx,
    email: str,
    full_name: str,
    password: str | None,
    role: int = groups.ROLE_MEMBER,
    *,
    can_create_users: bool = False,
    can_change_user_emails: bool = False,
    password_hash: str | None = None,
) -> User:
    """Create an active user in the realm's system groups; raise ApiError for a bad or taken email.

    password_hash: the password's hash when the caller computed it (off the event loop).
    """
    email = check_email(email)
    full_name = check_full_name(full_name)
    if role not in ROLES:
        raise ApiError("Invalid role")
    if password is not None and len(password) > passwords.MAX_PASSWORD_LENGTH:
        raise ApiError(f"password is too long (limit: {passwords.MAX_PASSWORD_LENGTH} characters)")
    if get_user_by_delivery_email(tx, email) is not None:
        raise ApiError("Email is already in use.")
    visibility = tx.value("SELECT default_email_address_visibility FROM realm")
    cursor = tx.execute(
        "INSERT INTO users (delivery_email, full_name, password_hash, api_key, role, date_joined,"
        " email_address_visibility, can_create_users, can_change_user_emails)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            email,
            full_name,
            password_hash or (passwords.hash_password(password) if password else None),
            passwords.generate_api_key(),
            role,
            tx.timestamp,
            visibility,
            can_create_users,
            can_change_user_emails,
        ),
    )
    user = get_user_by_id(tx, int(cursor.lastrowid or 0))
    assert user is not None
    _publish_new_user(tx, user, get_realm(tx))
    groups.set_role_groups(tx, user.id, None, role)
    return user


def _publish_new_user(tx: Tx, user: User, realm: Realm) -> None:
    """Send realm_user add: with the real email to those who may see it, without it to the rest."""
    seeing = users_who_see_email(tx, user)
    others = sorted(set(groups.active_user_ids(tx)) - set(seeing))
    for viewer, audience in ((user, seeing), (None, others)):
        if audience:
            person = user_object(viewer, user, realm, False, {})
            tx.publish({"type": "realm_user", "op": "add", "person": person}, audience)


def check_user_by_admin(tx: Tx, actor: User, email: str, password: str, full_name: str) -> None:
    """POST /users, before the password is hashed: raise what accounts.create_account_by_admin would."""
    if not actor.is_admin:
        raise must_be_admin()
    if not actor.can_create_users:
        raise ApiError("User not authorized to create users")
    check_full_name(full_name)
    email = check_email(email)
    if get_user_by_delivery_email(tx, email) is not None:
        raise ApiError("Email is already in use.")
    if len(password) < MIN_PASSWORD_LENGTH or len(set(password)) < 3:
        raise ApiError("The password is too weak.")
    if len(password) > passwords.MAX_PASSWORD_LENGTH:
        raise ApiError(f"password is too long (limit: {passwords.MAX_PASSWORD_LENGTH} characters)")


def authenticate(tx: Tx, email: str, api_key: str, realm: Realm) -> User:
    """Return the active user these HTTP Basic credentials name; raise 401 ApiError otherwise."""
    if not passwords.is_well_formed_api_key(api_key):
        raise unauthorized("Malformed API key")
    # From the in-memory directory, which every write to users invalidates (storage/cache/directory.py).
    user = directory(tx).user_by_api_email(email)
    # Compare keys in constant time; a missing user is compared against a dummy of equal length.
    expected = user.api_key if user is not None else "x" * passwords.API_KEY_LENGTH
    if not hmac.compare_digest(expected.encode(), api_key.encode()) or user is None:
        raise unauthorized("Invalid API key")
    if not user.is_active:
        raise unauthorized("Account is deactivated")
    return user


def unauthorized(msg: str) -> ApiError:
    return ApiError(msg, "UNAUTHORIZED", 401, headers={"WWW-Authenticate": 'Basic realm="zulip"'})


class Login(msgspec.Struct, frozen=True):
    """The account a login names (None: no such account) and the hash to check the password against."""

    user_id: int | None
    password_hash: str


def get_login(tx: Tx, username: str) -> Login:
    """POST /fetch_api_key, first step: the Login for a username; an unknown one gets the dummy hash.

    Raise "Enter a valid email address." or PASSWORD_RESET_REQUIRED (an account without password).
    """
    if not EMAIL_RE.match(username.strip()):
        raise ApiError("Enter a valid email address.")
    row = tx.one("SELECT id, password_hash FROM users WHERE delivery_email = ?", (username.strip(),))
    if row is None:
        return Login(None, passwords.DUMMY_HASH)
    if row["password_hash"] is None:
        raise ApiError("Your password has been disabled and needs to be reset", "PASSWORD_RESET_REQUIRED", 401)
    return Login(row["id"], row["password_hash"])


def fetch_api_key(tx: Tx, login: Login, password_matches: bool) -> dict[str, Any]:
    """POST /fetch_api_key, once the password was checked against login.password_hash.

    Return {api_key, email, user_id}; raise AUTHENTICATION_FAILED or USER_DEACTIVATED (401).
    """
    user = None if login.user_id is None or not password_matches else get_user_by_id(tx, login.user_id)
    if user is None:
        raise ApiError("Your username or password is incorrect", "AUTHENTICATION_FAILED", 401)
    if not user.is_active:
        raise ApiError("Account is deactivated", "USER_DEACTIVATED", 401)
    return {"api_key": user.api_key, "email": user.delivery_email, "user_id": user.id}


def access_user_by_id(tx: Tx, actor: User, user_id: int, *, for_admin: bool) -> User:
    """Return a user the actor may act on; "No such user" / "Insufficient permission" otherwise."""
    target = get_user_by_id(tx, user_id)
    if target is None:
        raise no_such_user()
    if for_admin and not actor.is_admin and not (target.is_bot and target.bot_owner_id == actor.id):
        raise insufficient_permission()
    return target


def access_user_by_email(tx: Tx, actor: User, email: str, realm: Realm) -> User:
    """Return the user a real or dummy email names, if the actor may see that real email."""
    match = re.fullmatch(r"user(\d+)@(.+)", email.strip(), re.IGNORECASE)
    if match and match.group(2).lower() == realm.email_host.lower():
        target = get_user_by_id(tx, int(match.group(1)))
    else:
        target = get_user_by_delivery_email(tx, email)
        if target is not None and not can_see_delivery_email(actor, target):
            target = None
    if target is None:
        raise no_such_user()
    return target


def list_users(tx: Tx, user_ids: list[int] | None) -> list[User]:
    """Return users (active and not, bots included) by id; all of them when user_ids is None."""
    if user_ids is None:
        # Every user, from the in-memory directory (which every write to users invalidates).
        found = directory(tx)
        return [user for user_id in tx.column("SELECT id FROM users ORDER BY id") if (user := found.user(user_id))]
    rows = tx.execute(
        f"SELECT {USER_COLUMNS} FROM users WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
        (msgspec.json.encode(user_ids).decode(),),
    ).fetchall()
    # One conversion for the whole list (strict=False turns SQLite's 0/1 into booleans).
    fields = User.__struct_fields__
    return msgspec.convert([dict(zip(fields, row, strict=True)) for row in rows], list[User], strict=False)


def users_who_see_email(tx: Tx, user: User) -> list[int]:
    """Return the active users allowed to see the user's real email: the audience of its changes."""
    if user.is_bot:
        return groups.active_user_ids(tx)
    roles = [role for role, visible in VISIBLE_TO_ROLE.items() if user.email_address_visibility in visible]
    return tx.column(
        "SELECT id FROM users WHERE is_active AND (id = ? OR role IN (SELECT value FROM json_each(?))) ORDER BY id",
        (user.id, msgspec.json.encode(roles).decode()),
    )


def touch_last_active(tx: Tx, user_id: int) -> None:
    """Record that the user made a request now (for "active in the last 14 days")."""
    tx.execute("UPDATE users SET last_active = ? WHERE id = ?", (tx.timestamp, user_id))


def list_user_objects(
    tx: Tx, viewer: User, realm: Realm, user_ids: list[int] | None, client_gravatar: bool, include_profile: bool
) -> list[dict[str, Any]]:
    """GET /users: API objects of all users (or of user_ids), deactivated users and bots included."""
    return users_objects(tx, viewer, realm, list_users(tx, user_ids), client_gravatar, include_profile)


def user_object_by_id(
    tx: Tx, viewer: User, realm: Realm, user_id: int, client_gravatar: bool, include_profile: bool
) -> dict[str, Any]:
    """GET /users/{id}: one user's API object; raise "No such user" if there is none."""
    target = access_user_by_id(tx, viewer, user_id, for_admin=False)
    return users_objects(tx, viewer, realm, [target], client_gravatar, include_profile)[0]


def user_object_by_email(
    tx: Tx, viewer: User, realm: Realm, email: str, client_gravatar: bool, include_profile: bool
) -> dict[str, Any]:
    """GET /users/{email}: by real email (if visible to the viewer) or dummy address."""
    target = access_user_by_email(tx, viewer, email, realm)
    return users_objects(tx, viewer, realm, [target], client_gravatar, include_profile)[0]
