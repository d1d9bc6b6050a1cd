"""The `tornchat` command: serve, init, create-user, backup, restore, register-push-bouncer."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import secrets
import signal
import ssl
import sys
import time

from storage.db.database import Database
from storage.db.migrate import DatabaseTooNew
from storage.membership import accounts
from storage.model.errors import ApiError
from storage.org import groups
from tornchat import FEATURE_LEVEL, __version__
from tornchat.log_output import configure_logging
from tornchat.settings import Settings, load_settings
from tornchat.tuning import tune_garbage_collector, tune_malloc

ROLES = {
    "owner": groups.ROLE_OWNER,
    "admin": groups.ROLE_ADMINISTRATOR,
    "moderator": groups.ROLE_MODERATOR,
    "member": groups.ROLE_MEMBER,
    "guest": groups.ROLE_GUEST,
}


# Where the first `serve` not attached to a terminal also leaves the generated owner password.
OWNER_PASSWORD_FILE = "owner-password"
# How long answered long-polls get to reach their clients when the server stops.
SHUTDOWN_GRACE_SECONDS = 0.2


class CommandError(Exception):
    """A failure to report as one line on stderr with a non-zero exit."""


def _settings(args: argparse.Namespace) -> Settings:
    flags = {
        name: getattr(args, name, None)
        for name in (
            "data_dir",
            "host",
            "port",
            "realm_name",
            "email_host",
            "site",
            "enable_gravatar",
            "push_bouncer_url",
            "max_body_size",
            "trusted_proxy",
            "max_queue_bytes",
            "max_file_upload_size_mib",
            "upload_quota_mib",
            "message_cache_mib",
            "tls_cert",
            "tls_key",
        )
    }
    try:
        return load_settings(flags)
    except ValueError as error:
        raise CommandError(str(error)) from None


def _add_common(parser: argparse.ArgumentParser, data_dir_required: bool = False) -> None:
    parser.add_argument(
        "--data-dir",
        dest="data_dir",
        required=data_dir_required,
        help="directory holding the database and zuliprc (default ./tornchat-data)",
    )
    parser.add_argument("--realm-name", dest="realm_name", help="organization name")
    parser.add_argument("--email-host", dest="email_host", help="host of dummy API emails user{id}@HOST")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tornchat", description="A small chat server speaking the Zulip API.")
    parser.add_argument(
        "--version", action="version", version=f"tornchat {__version__} (feature level {FEATURE_LEVEL})"
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the server (bootstrapping an empty data directory first)")
    _add_common(serve)
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default 9991)")
    serve.add_argument(
        "--site", help="public URL of the server written to zuliprc (default http://HOST:PORT, https with TLS)"
    )
    serve.add_argument(
        "--enable-gravatar",
        dest="enable_gravatar",
        action="store_true",
        default=None,
        help="avatars of users who uploaded none come from gravatar.com (default: drawn by the server)",
    )
    serve.add_argument(
        "--push-bouncer-url",
        dest="push_bouncer_url",
        help="URL of Zulip's push notification service (default: the one `register-push-bouncer` registered with)",
    )
    serve.add_argument(
        "--max-body-size", dest="max_body_size", type=int, help="largest request body in bytes (default 25 MiB)"
    )
    serve.add_argument(
        "--trusted-proxy",
        dest="trusted_proxy",
        action="append",
        help="address or network of a reverse proxy whose X-Real-Ip / X-Forwarded-For are believed (repeatable)",
    )
    serve.add_argument(
        "--max-queue-bytes",
        dest="max_queue_bytes",
        type=int,
        help="bytes of events one event queue may hold before its client must register again (default 1 MiB)",
    )
    serve.add_argument(
        "--max-file-upload-size-mib",
        dest="max_file_upload_size_mib",
        type=int,
        help="largest file POST /user_uploads accepts, in MiB (default 25)",
    )
    serve.add_argument(
        "--upload-quota-mib",
        dest="upload_quota_mib",
        type=int,
        help="MiB of uploaded files each user may keep (default 1024)",
    )
    serve.add_argument(
        "--message-cache-mib",
        dest="message_cache_mib",
        type=int,
        help="MiB of encoded messages GET /messages keeps between fetches, an eighth more for flags;"
        " 0 turns the caches off (default 128)",
    )
    serve.add_argument("--tls-cert", dest="tls_cert", metavar="FILE", help="serve HTTPS: PEM certificate chain")
    serve.add_argument("--tls-key", dest="tls_key", metavar="FILE", help="the PEM private key of --tls-cert")

    init = commands.add_parser("init", help="create the database, organization, owner and zuliprc")
    _add_common(init, data_dir_required=True)
    init.add_argument("--owner-email", required=True)
    init.add_argument("--owner-password", required=True)
    init.add_argument("--site", help="public URL of the server (default http://127.0.0.1:9991)")

    create = commands.add_parser("create-user", help="create a user; prints the API key as the last line")
    create.add_argument("--data-dir", dest="data_dir", required=True)
    create.add_argument("--email", required=True)
    create.add_argument("--full-name", dest="full_name", required=True)
    create.add_argument("--password", required=True)
    create.add_argument("--role", choices=sorted(ROLES), default="member")
    create.add_argument("--can-create-users", action="store_true", help="grant the can_create_users permission")
    create.add_argument(
        "--can-change-user-emails", action="store_true", help="grant the can_change_user_emails permission"
    )
    create.add_argument(
        "--zuliprc",
        metavar="PATH",
        help="also write the user's credentials to PATH as a zuliprc (mode 600), for zulip-terminal or zulip",
    )
    backup = commands.add_parser(
        "backup",
        help="copy a data directory (database, zuliprc, tornchat.toml, push-bouncer.json, uploads) to FILE,"
        " a .tar.gz; safe while serving",
    )
    backup.add_argument("--data-dir", dest="data_dir", help="data directory to back up (default ./tornchat-data)")
    backup.add_argument("file", metavar="FILE", help="the archive to write (replaced if it exists)")
    restore = commands.add_parser("restore", help="unpack a backup FILE into a new or empty data directory")
    restore.add_argument("--data-dir", dest="data_dir", required=True)
    restore.add_argument("file", metavar="FILE", help="an archive written by `tornchat backup`")
    bouncer = commands.add_parser(
        "register-push-bouncer",
        help="register this server with Zulip's mobile push notification service, so the Zulip apps get notifications",
    )
    bouncer.add_argument("--data-dir", dest="data_dir", required=True)
    bouncer.add_argument(
        "--bouncer-url",
        dest="bouncer_url",
        help="the push notification service (default: the one registered before, else https://push.zulipchat.com)",
    )
    bouncer.add_argument("--contact-email", dest="contact_email", required=True, help="the service writes here")
    bouncer.add_argument("--hostname", help="this server's public host[:port] (default: that of the realm's URL)")
    bouncer.add_argument(
        "--agree-to-terms-of-service",
        dest="agree",
        action="store_true",
        help="agree to the Zulip Terms of Service (https://zulip.com/policies/terms), which govern the service",
    )
    return parser


def command_register_push_bouncer(args: argparse.Namespace) -> None:
    """Register (or update) the server at the bouncer, keep its credentials, and upload the realm.

    The organization id and key are made once and kept in DATA_DIR/push-bouncer.json (mode 600),
    where `serve` finds them with the bouncer URL; registering again reuses them, as Zulip's
    `manage.py register_server` does.
    """
    from storage.model.realm import get_realm
    from storage.org.realm import realm_exists
    from tornchat import push_bouncer
    from tornchat.bootstrap import open_private
    from tornchat.settings import PUSH_BOUNCER_KEYS, is_bouncer_url, read_bouncer_credentials

    if not args.agree:
        raise CommandError(
            "the push notification service is governed by the Zulip Terms of Service"
            " (https://zulip.com/policies/terms): pass --agree-to-terms-of-service to agree"
        )
    settings = _settings(args)
    if not os.path.exists(settings.database_path):
        raise CommandError(f"no tornchat database in {settings.data_dir}: run `tornchat init` first")
    path = settings.push_bouncer_credentials_path
    try:
        stored = read_bouncer_credentials(path)
    except ValueError as error:
        raise CommandError(str(error)) from None
    url = args.bouncer_url or stored.get("push_bouncer_url") or push_bouncer.DEFAULT_BOUNCER_URL
    if not is_bouncer_url(url):
        raise CommandError(f"invalid --bouncer-url {url!r}: it must start with http:// or https://")
    db = Database(settings.database_path)
    try:
        if not db.read(realm_exists):
            raise CommandError(f"no organization in {settings.data_dir}: run `tornchat init` first")
        realm = db.read(get_realm)
    finally:
        db.close()
    org_id, org_key = stored.get("zulip_org_id"), stored.get("zulip_org_key")
    if org_id is None or org_key is None:
        org_id, org_key = push_bouncer.new_credentials()
    hostname = args.hostname or push_bouncer.realm_host(realm)
    try:
        created = push_bouncer.register_server(url, org_id, org_key, hostname, args.contact_email)
        # Kept before the realm goes up: a failed upload is retried by `serve` (MISSING_REMOTE_REALM).
        with open_private(path + ".new") as handle:
            json.dump(dict(zip(PUSH_BOUNCER_KEYS, (url, org_id, org_key), strict=True)), handle, indent=2)
        os.replace(path + ".new", path)
        push_bouncer.upload_realm(url, org_id, org_key, realm)
    except push_bouncer.BouncerError as error:
        if error.status is None:  # no answer, or not one of the service's
            raise CommandError(error.msg) from None
        raise CommandError(f"the push notification service at {url} refused: {error.msg}") from None
    print(f"{'Registered' if created else 'Updated the registration of'} {hostname} at {url}")
    print(f"Organization id {org_id}; credentials kept in {os.path.abspath(path)} (readable by its owner only)")
    print("Restart `tornchat serve` to send push notifications through it.")


def command_backup(args: argparse.Namespace) -> None:
    from storage.db.backup import BackupError, create_backup

    settings = _settings(args)
    try:
        summary = create_backup(settings.data_dir, args.file, time.time())
    except BackupError as error:
        raise CommandError(str(error)) from None
    contents = _archive_contents(summary.database_bytes, summary.files, summary.uploads)
    print(f"Backed up {settings.data_dir} to {args.file}: {contents}")


def command_restore(args: argparse.Namespace) -> None:
    from storage.db.backup import BackupError, restore_backup

    try:
        summary = restore_backup(args.file, args.data_dir)
    except BackupError as error:
        raise CommandError(str(error)) from None
    contents = _archive_contents(summary.database_bytes, summary.files, summary.uploads)
    print(f"Restored {args.file} into {args.data_dir}: {contents}")


def _archive_contents(database_bytes: int, files: list[str], uploads: int) -> str:
    """What a backup archive holds (a storage.db.backup.Summary's fields), as `backup` and `restore` both print it.

    It takes the fields rather than the Summary: this module imports storage.db.backup only when a command needs it.
    """
    extras = "".join(f", {name}" for name in files if name == "zuliprc")
    return f"database {database_bytes} bytes (integrity ok){extras}, {uploads} uploaded files"


def command_init(args: argparse.Namespace) -> None:
    from tornchat.bootstrap import bootstrap

    settings = _settings(args)
    try:
        owner = bootstrap(settings, args.owner_email, args.owner_password)
    except FileExistsError as error:
        raise CommandError(str(error)) from None
    print(f"Created organization in {settings.data_dir} with owner {owner.delivery_email}")
    print(f"API credentials written to {settings.zuliprc_path}")


def command_create_user(args: argparse.Namespace) -> None:
    from storage.model.realm import get_realm
    from storage.org.realm import realm_exists
    from tornchat.bootstrap import write_zuliprc

    settings = _settings(args)
    if not os.path.exists(settings.database_path):
        raise CommandError(f"no tornchat database in {settings.data_dir}: run `tornchat init` first")
    if args.zuliprc and os.path.isdir(args.zuliprc):
        raise CommandError(f"--zuliprc {args.zuliprc} is a directory")
    db = Database(settings.database_path)
    try:
        if not db.read(realm_exists):
            raise CommandError(f"no organization in {settings.data_dir}: run `tornchat init` first")
        site = db.read(get_realm).url
        user = db.write(
            accounts.create_account,
            args.email,
            args.full_name,
            args.password,
            ROLES[args.role],
            can_create_users=args.can_create_users,
            can_change_user_emails=args.can_change_user_emails,
        )
    except ApiError as error:
        raise CommandError(error.msg) from None
    finally:
        db.close()
    print(f"Created user {user.delivery_email} (id {user.id}, role {args.role})")
    if args.zuliprc:
        try:
            write_zuliprc(args.zuliprc, user.delivery_email, user.api_key, site)
        except OSError as error:
            raise CommandError(f"user created, but cannot write {args.zuliprc}: {error.strerror}") from None
        print(f"API credentials written to {os.path.abspath(args.zuliprc)}")
    print(user.api_key)


def command_serve(args: argparse.Namespace) -> None:
    from tornchat.bootstrap import apply_settings, bootstrap, is_bootstrapped

    settings = _settings(args)
    ssl_context = _ssl_context(settings)
    if not is_bootstrapped(settings):
        email = settings.owner_email or f"owner@{settings.email_host or settings.site_hostname}"
        given = os.environ.get("TORNCHAT_OWNER_PASSWORD")
        password = given or secrets.token_urlsafe(12)
        try:
            owner = bootstrap(settings, email, password)
        except ApiError as error:
            raise CommandError(f"cannot create the owner account: {error.msg}") from None
        print(f"Created organization in {settings.data_dir}; owner {owner.delivery_email}", flush=True)
        _tell_owner_password(settings, owner.delivery_email, password, given is not None)
    else:
        apply_settings(settings)
    print(f"API credentials for the owner: {os.path.abspath(settings.zuliprc_path)}", flush=True)
    asyncio.run(_serve(settings, ssl_context))


def _ssl_context(settings: Settings) -> ssl.SSLContext | None:
    """The TLS context when a certificate and key are set, checked before anything is created."""
    from tornchat.tls import make_ssl_context

    if settings.tls_cert is None or settings.tls_key is None:
        return None
    try:
        return make_ssl_context(settings.tls_cert, settings.tls_key)
    except ValueError as error:
        raise CommandError(str(error)) from None


def _tell_owner_password(settings: Settings, email: str, password: str, from_environment: bool) -> None:
    """Say how to sign in the first time: the URL, the owner's email and a generated password.

    The password goes to stdout only, never through the logger (stderr). Not on a terminal (systemd,
    Docker, a pipe) it is also written to a file (mode 600), which outlives the scrollback.
    """
    from tornchat.bootstrap import open_private

    if from_environment:
        print("The owner's password is the one TORNCHAT_OWNER_PASSWORD gave.", flush=True)
    else:
        print(f"The owner's password (printed on this first start only): {password}", flush=True)
        if not sys.stdout.isatty():
            path = os.path.join(settings.data_dir, OWNER_PASSWORD_FILE)
            with open_private(path) as handle:
                handle.write(password + "\n")
            logging.getLogger("tornchat").info(
                "The owner's password is in %s (readable by its owner only)", os.path.abspath(path)
            )
    print(f"Open {settings.site_url.rstrip('/')}/ in a browser and sign in as {email} with that password.", flush=True)


async def _serve(settings: Settings, ssl_context: ssl.SSLContext | None = None) -> None:
    from tornchat.app import make_http_server
    from tornchat.server import Server

    server_state = Server(settings)
    http_server = make_http_server(server_state, ssl_context)
    try:
        http_server.listen(settings.port, settings.host)
    except OSError as error:
        raise CommandError(f"cannot listen on {settings.host}:{settings.port}: {error.strerror}") from None
    server_state.start()
    tune_garbage_collector()
    tune_malloc()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # Said once the signals stop it gracefully: a supervisor may send SIGTERM right after.
    print(f"Serving {server_state.realm.name} at {settings.site_url}", flush=True)
    await stop.wait()
    # Graceful stop: refuse new connections, answer parked long-polls (their queues are saved
    # and restored at the next start), let those answers go out, then close and exit.
    http_server.stop()
    server_state.shutdown()
    await asyncio.sleep(SHUTDOWN_GRACE_SECONDS)
    await http_server.close_all_connections()
    server_state.close()


def main(argv: list[str] | None = None) -> int:
    configure_logging()
    args = build_parser().parse_args(argv)
    handlers = {
        "serve": command_serve,
        "init": command_init,
        "create-user": command_create_user,
        "backup": command_backup,
        "restore": command_restore,
        "register-push-bouncer": command_register_push_bouncer,
    }
    try:
        handlers[args.command](args)
    except (CommandError, DatabaseTooNew) as error:
        print(f"tornchat: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
