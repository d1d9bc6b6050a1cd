"""First start: create the data directory, database, realm, owner account and zuliprc."""

from __future__ import annotations

import configparser
import os
from typing import TextIO

from storage.db.database import Database
from storage.org import groups, users
from storage.org import realm as realm_storage
from tornchat.settings import DEFAULT_REALM_NAME, Settings


def is_bootstrapped(settings: Settings) -> bool:
    if not os.path.exists(settings.database_path):
        return False
    db = Database(settings.database_path)
    try:
        return db.read(realm_storage.realm_exists)
    finally:
        db.close()


def bootstrap(settings: Settings, owner_email: str, owner_password: str | None) -> users.User:
    """Create database, realm and owner; write DIR/zuliprc; return the owner. Raise if already done."""
    os.makedirs(settings.data_dir, exist_ok=True)
    db = Database(settings.database_path)
    try:

        def create(tx):  # type: ignore[no-untyped-def]
            if realm_storage.realm_exists(tx):
                raise FileExistsError(f"{settings.data_dir} already holds a tornchat organization")
            realm_storage.create_realm(
                tx,
                settings.realm_name or DEFAULT_REALM_NAME,
                settings.site_url,
                settings.email_host or settings.site_hostname,
                settings.enable_gravatar,
            )
            return users.create_user(
                tx,
                owner_email,
                "Owner",
                owner_password,
                groups.ROLE_OWNER,
                can_create_users=True,
                can_change_user_emails=True,
            )

        owner = db.write(create)
    finally:
        db.close()
    write_zuliprc(settings.zuliprc_path, owner.delivery_email, owner.api_key, settings.site_url)
    return owner


def write_zuliprc(path: str, email: str, api_key: str, site: str) -> None:
    """Write the `[api]` file the zulip client reads, readable by its owner only."""
    config = configparser.ConfigParser()
    config["api"] = {"email": email, "key": api_key, "site": site}
    with open_private(path) as handle:
        config.write(handle)


def open_private(path: str) -> TextIO:
    """Open path for writing (truncated), readable by its owner only: for files holding a secret."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode through os.open: it holds a secret now
    return os.fdopen(fd, "w")


def apply_settings(settings: Settings) -> None:
    """Bring the stored realm in line with explicitly given settings (name, URL, email host), and with the
    Gravatar switch, which is always given (its default is off)."""
    db = Database(settings.database_path)
    try:
        db.write(
            realm_storage.update_realm,
            name=settings.realm_name,
            url=settings.site,
            email_host=settings.email_host,
            enable_gravatar=settings.enable_gravatar,
        )
    finally:
        db.close()
