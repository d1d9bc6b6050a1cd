"""Server settings: command-line flags first, then TORNCHAT_* variables, then DATA_DIR/tornchat.toml, then defaults."""

from __future__ import annotations

import difflib
import ipaddress
import json
import math
import os
import tomllib
import urllib.parse
import uuid
from collections.abc import Callable
from typing import Any, BinaryIO

import msgspec
import msgspec.structs

DEFAULT_DATA_DIR = "./tornchat-data"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9991
DEFAULT_REALM_NAME = "Tornchat"
DEFAULT_MAX_BODY_SIZE = 25 * 1024 * 1024
DEFAULT_HEADER_TIMEOUT = 60.0
DEFAULT_BODY_TIMEOUT = 120.0
# Bytes of events one event queue may hold (docs/reliability.md): about 1,000 messages of a few
# hundred characters. A client further behind is told to register again (BAD_EVENT_QUEUE_ID).
DEFAULT_MAX_QUEUE_BYTES = 1024 * 1024
# Uploads (POST /user_uploads): the largest file (Zulip's MAX_FILE_UPLOAD_SIZE default) and the
# bytes of files one user may keep. An upload request may be this much larger than its file (part
# headers, boundaries): its body limit is the file limit plus this, or max_body_size if larger.
DEFAULT_MAX_FILE_UPLOAD_SIZE_MIB = 25
DEFAULT_UPLOAD_QUOTA_MIB = 1024
MULTIPART_OVERHEAD = 64 * 1024
DEFAULT_MESSAGE_CACHE_MIB = 128  # storage/cache/message_cache.py: some 200,000 messages of one format


class Settings(msgspec.Struct, kw_only=True):
    data_dir: str = DEFAULT_DATA_DIR
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    realm_name: str | None = None  # None: keep the stored name (bootstrap uses DEFAULT_REALM_NAME)
    email_host: str | None = None  # None: keep the stored host (bootstrap uses the site's host)
    site: str | None = None  # None: http://{host}:{port}, https:// with TLS
    web_public_channels: bool = True  # the server-wide switch for web-public channels
    # Zulip's ENABLE_GRAVATAR: avatars of users who uploaded none come from Gravatar (an outside service,
    # told of every viewer's address) instead of the default the server draws. Off: no request leaves.
    enable_gravatar: bool = False
    # Zulip's mobile push notification service (its push bouncer), all three or none: its URL
    # (https://push.zulipchat.com) and this server's registration there, the organization id (a
    # UUID) and key that `tornchat register-push-bouncer` creates and keeps in DATA_DIR/push-bouncer.json.
    push_bouncer_url: str | None = None
    zulip_org_id: str | None = None
    zulip_org_key: str | None = None
    # Limits at the HTTP edge (docs/reliability.md): the largest request body in bytes (Zulip's
    # nginx allows 25 MiB), the seconds allowed to send a request's headers (and to sit idle
    # between keep-alive requests) and its body, and the proxies whose X-Real-Ip and
    # X-Forwarded-For are believed (addresses or networks such as 10.0.0.0/8; none by default).
    max_body_size: int = DEFAULT_MAX_BODY_SIZE
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    trusted_proxy: list[str] = msgspec.field(default_factory=list)
    max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES
    max_file_upload_size_mib: int = DEFAULT_MAX_FILE_UPLOAD_SIZE_MIB
    upload_quota_mib: int = DEFAULT_UPLOAD_QUOTA_MIB
    # MiB of encoded messages GET /messages keeps between fetches (storage/cache/message_cache.py), and an
    # eighth of that for its readers' flags (storage/cache/flag_cache.py); 0: both off.
    message_cache_mib: int = DEFAULT_MESSAGE_CACHE_MIB
    # Serving HTTPS directly (both or neither): PEM files of the certificate chain and its key.
    tls_cert: str | None = None
    tls_key: str | None = None
    owner_email: str | None = None  # the owner `serve` creates on an empty data directory

    @property
    def upload_body_limit(self) -> int:
        """The largest POST /user_uploads body: room for the largest file and its multipart framing."""
        return max(self.max_body_size, self.max_file_upload_size_mib * 1024 * 1024 + MULTIPART_OVERHEAD)

    @property
    def trusted_proxy_networks(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        return tuple(ipaddress.ip_network(entry, strict=False) for entry in self.trusted_proxy)

    @property
    def push_configured(self) -> bool:
        return self.push_bouncer_url is not None

    @property
    def push_bouncer_credentials_path(self) -> str:
        return os.path.join(self.data_dir, PUSH_BOUNCER_FILE)

    @property
    def database_path(self) -> str:
        return os.path.join(self.data_dir, "tornchat.sqlite3")

    @property
    def zuliprc_path(self) -> str:
        return os.path.join(self.data_dir, "zuliprc")

    @property
    def site_url(self) -> str:
        if self.site:
            return self.site.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        scheme = "https" if self.tls_cert else "http"
        return f"{scheme}://{host}:{self.port}"

    @property
    def site_hostname(self) -> str:
        return urllib.parse.urlsplit(self.site_url).hostname or "localhost"


CONFIG_FILE = "tornchat.toml"  # in the data directory
# Written by `tornchat register-push-bouncer` (mode 600): the bouncer URL, zulip_org_id, zulip_org_key.
PUSH_BOUNCER_FILE = "push-bouncer.json"
PUSH_BOUNCER_KEYS = ("push_bouncer_url", "zulip_org_id", "zulip_org_key")
ZULIP_ORG_KEY_LENGTH = 64

ENVIRONMENT = {
    "data_dir": "TORNCHAT_DATA_DIR",
    "host": "TORNCHAT_HOST",
    "port": "TORNCHAT_PORT",
    "realm_name": "TORNCHAT_REALM_NAME",
    "email_host": "TORNCHAT_EMAIL_HOST",
    "site": "TORNCHAT_SITE",
    "web_public_channels": "TORNCHAT_WEB_PUBLIC_CHANNELS",
    "enable_gravatar": "TORNCHAT_ENABLE_GRAVATAR",
    "push_bouncer_url": "TORNCHAT_PUSH_BOUNCER_URL",
    "zulip_org_id": "TORNCHAT_ZULIP_ORG_ID",
    "zulip_org_key": "TORNCHAT_ZULIP_ORG_KEY",
    "max_body_size": "TORNCHAT_MAX_BODY_SIZE",
    "header_timeout": "TORNCHAT_HEADER_TIMEOUT",
    "body_timeout": "TORNCHAT_BODY_TIMEOUT",
    "trusted_proxy": "TORNCHAT_TRUSTED_PROXY",
    "max_queue_bytes": "TORNCHAT_MAX_QUEUE_BYTES",
    "max_file_upload_size_mib": "TORNCHAT_MAX_FILE_UPLOAD_SIZE_MIB",
    "upload_quota_mib": "TORNCHAT_UPLOAD_QUOTA_MIB",
    "message_cache_mib": "TORNCHAT_MESSAGE_CACHE_MIB",
    "tls_cert": "TORNCHAT_TLS_CERT",
    "tls_key": "TORNCHAT_TLS_KEY",
    "owner_email": "TORNCHAT_OWNER_EMAIL",
}
FIELD_TYPES = {field.name: field.type for field in msgspec.structs.fields(Settings)}
# Keys of the file: every setting but the data directory, which holds the file. The owner's
# password is refused there: it is needed once, at the first start, and a configuration file
# lives long, is copied and is often readable by others (TORNCHAT_OWNER_PASSWORD or a generated one).
REFUSED_FILE_KEYS = {
    "data_dir": "the file is inside the data directory: use --data-dir or TORNCHAT_DATA_DIR",
    "zulip_org_key": "a secret does not belong in a configuration file: `tornchat register-push-bouncer` keeps it"
    f" in DATA_DIR/{PUSH_BOUNCER_FILE}, or use TORNCHAT_ZULIP_ORG_KEY",
    "owner_password": "a password does not belong in a configuration file: use TORNCHAT_OWNER_PASSWORD"
    " or let the first start generate one",
}
SETTING_KEYS = tuple(name for name in FIELD_TYPES if name != "data_dir")
FILE_KEYS = tuple(name for name in SETTING_KEYS if name not in REFUSED_FILE_KEYS)
TYPE_WORDS = {
    int: "an integer",
    float: "a number",
    bool: "true or false",
    str: "a string",
    str | None: "a string",
    list[str]: "an array of strings",
}


def _is_site(value: str) -> bool:
    parts = urllib.parse.urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


POSITIVE = (lambda value: value >= 1, "must be positive")
SECONDS = (lambda value: math.isfinite(value) and value > 0, "must be a positive number of seconds")
NOT_NEGATIVE = (lambda value: value >= 0, "must not be negative")
NOT_EMPTY = (bool, "must not be empty")
# What a value of the right type must also be, and what the error says when it is not.
VALUE_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "port": (lambda value: 1 <= value <= 65535, "is not a port number (1 to 65535)"),
    "site": (_is_site, "is not a URL starting with http:// or https://"),
    "max_body_size": POSITIVE,
    "max_queue_bytes": POSITIVE,
    "header_timeout": SECONDS,
    "body_timeout": SECONDS,
    "max_file_upload_size_mib": NOT_NEGATIVE,
    "upload_quota_mib": NOT_NEGATIVE,
    "message_cache_mib": NOT_NEGATIVE,
    "tls_cert": NOT_EMPTY,
    "tls_key": NOT_EMPTY,
}


class _Source(msgspec.Struct, frozen=True):
    """Where one setting came from, named the way its user wrote it."""

    kind: str  # "flag", "variable" or "file"
    path: str = ""  # the file, for kind "file"

    def name(self, setting: str) -> str:
        if self.kind == "flag":
            return "--" + setting.replace("_", "-")
        if self.kind == "variable":
            return ENVIRONMENT[setting]
        return setting

    def describe(self, setting: str) -> str:
        return f"{setting} in {self.path}" if self.kind == "file" else self.name(setting)


def load_settings(flags: dict[str, object], environ: dict[str, str] | None = None) -> Settings:
    """Merge flags (None = not given) over TORNCHAT_* variables over DATA_DIR/tornchat.toml.

    The data directory comes from the flag, the variable or the default only. Raise ValueError
    with a one-line reason naming the setting (and the file) for a bad key, type or value.
    """
    environ = dict(os.environ) if environ is None else environ
    data_dir = str(flags.get("data_dir") or environ.get(ENVIRONMENT["data_dir"]) or DEFAULT_DATA_DIR)
    path = os.path.join(data_dir, CONFIG_FILE)
    in_file = _file_values(path)  # all checked, even those a variable or flag overrides
    values: dict[str, object] = {"data_dir": data_dir}
    sources: dict[str, _Source] = {}
    for name in SETTING_KEYS:
        if flags.get(name) is not None:
            given, source = flags[name], _Source("flag")
        elif environ.get(ENVIRONMENT[name]):
            given, source = environ[ENVIRONMENT[name]], _Source("variable")
        else:
            if name in in_file:
                values[name], sources[name] = in_file[name], _Source("file", path)
            continue
        if name == "trusted_proxy":
            given = split_addresses(given)
        values[name], sources[name] = _convert(name, given, source), source
    _add_bouncer_credentials(values, sources, os.path.join(data_dir, PUSH_BOUNCER_FILE))
    settings = Settings(**values)  # type: ignore[arg-type]
    _check_pair(settings, sources, "tls_cert", "tls_key")
    check_push_settings(settings, sources)
    return settings


def _add_bouncer_credentials(values: dict[str, object], sources: dict[str, _Source], path: str) -> None:
    """Fill the push bouncer settings not given otherwise from the file `register-push-bouncer` wrote."""
    stored = read_bouncer_credentials(path)
    for name in PUSH_BOUNCER_KEYS:
        if name not in values and name in stored:
            values[name], sources[name] = stored[name], _Source("file", path)


def read_bouncer_credentials(path: str) -> dict[str, str]:
    """The push bouncer settings kept at `path` ({} when there is none); ValueError for a bad file."""
    stored = _load_file(path, json.load, "JSON")
    if stored is None:
        return {}
    if not isinstance(stored, dict) or not all(isinstance(stored.get(k), str) for k in PUSH_BOUNCER_KEYS):
        raise ValueError(f"cannot read {path}: expected an object of strings {', '.join(PUSH_BOUNCER_KEYS)}")
    return {name: stored[name] for name in PUSH_BOUNCER_KEYS}


def _file_values(path: str) -> dict[str, object]:
    """The settings of the file at `path`, converted and checked; relative TLS paths made relative to it."""
    source = _Source("file", path)
    values = {name: _convert(name, given, source) for name, given in read_config_file(path).items()}
    for name in ("tls_cert", "tls_key"):
        if name in values:
            values[name] = os.path.join(os.path.dirname(path), str(values[name]))
    return values


def _load_file(path: str, load: Callable[[BinaryIO], Any], kind: str) -> Any:
    """The parsed content of the file at `path`, None when there is none; ValueError for one that cannot
    be read or parsed (a decode error, or bytes that are not UTF-8), naming the file."""
    try:
        with open(path, "rb") as handle:
            return load(handle)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror}") from None
    except ValueError as error:
        raise ValueError(f"cannot read {path}: not valid {kind}: {error}") from None


def read_config_file(path: str) -> dict[str, object]:
    """The settings of a tornchat.toml ({} when there is none); ValueError for a bad file or key."""
    values = _load_file(path, tomllib.load, "TOML")
    if values is None:
        return {}
    for key in values:
        if key in REFUSED_FILE_KEYS:
            raise ValueError(f"{key} cannot be set in {path}: {REFUSED_FILE_KEYS[key]}")
        if key not in FILE_KEYS:
            close = difflib.get_close_matches(key, FILE_KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown setting {key!r} in {path}{hint}")
    return values


def _convert(name: str, given: object, source: _Source) -> object:
    """The value of one setting in its type (files are typed: no conversion from text), checked."""
    field_type = FIELD_TYPES[name]
    try:
        value = msgspec.convert(given, field_type, strict=source.kind == "file")
    except msgspec.ValidationError:
        shown = repr(given) if len(repr(given)) <= 60 else repr(given)[:57] + "..."
        words = TYPE_WORDS.get(field_type, str(field_type))
        raise ValueError(f"invalid setting {source.describe(name)}: expected {words}, got {shown}") from None
    if name in VALUE_CHECKS and not VALUE_CHECKS[name][0](value):
        raise ValueError(f"invalid setting {source.describe(name)}: {value!r} {VALUE_CHECKS[name][1]}")
    if name == "trusted_proxy":
        check_trusted_proxies(value, source.describe(name))  # type: ignore[arg-type]
    return value


def split_addresses(given: object) -> list[str]:
    """--trusted-proxy values (repeated flags, each possibly comma-separated) as one list."""
    parts = given if isinstance(given, list) else [given]
    return [entry.strip() for part in parts for entry in str(part).split(",") if entry.strip()]


def check_trusted_proxies(entries: list[str], where: str) -> None:
    """Raise ValueError for a trusted proxy that is no address or network."""
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ValueError(f"invalid trusted proxy {entry!r} ({where}): expected an IP address or network") from None


def _check_pair(settings: Settings, sources: dict[str, _Source], first: str, second: str) -> None:
    """Raise ValueError when only one of two settings that go together is given."""
    given = [name for name in (first, second) if getattr(settings, name) is not None]
    if len(given) != 1:
        return
    source = sources[given[0]]
    where = f" ({source.path})" if source.kind == "file" else ""
    raise ValueError(f"{source.name(first)} and {source.name(second)} must be given together{where}")


def check_push_settings(settings: Settings, sources: dict[str, _Source]) -> None:
    """Raise ValueError unless the push bouncer settings are all given, and valid, or none is."""
    given = [name for name in PUSH_BOUNCER_KEYS if getattr(settings, name) is not None]
    if not given:
        return
    if len(given) < len(PUSH_BOUNCER_KEYS):
        missing = [name for name in PUSH_BOUNCER_KEYS if name not in given]
        where = sources[given[0]].describe(given[0])
        raise ValueError(
            f"{where} needs {' and '.join(missing)} too: run `tornchat register-push-bouncer`,"
            " which stores all three in the data directory"
        )
    url, org_id, org_key = settings.push_bouncer_url, settings.zulip_org_id, settings.zulip_org_key
    assert url is not None and org_id is not None and org_key is not None
    if not is_bouncer_url(url):
        where = sources["push_bouncer_url"].describe("push_bouncer_url")
        raise ValueError(f"invalid push bouncer URL {url!r} ({where}): it must start with http:// or https://")
    if not is_org_id(org_id):
        where = sources["zulip_org_id"].describe("zulip_org_id")
        raise ValueError(f"invalid zulip_org_id {org_id!r} ({where}): expected a UUID such as {uuid.uuid4()}")
    if len(org_key) != ZULIP_ORG_KEY_LENGTH:
        where = sources["zulip_org_key"].describe("zulip_org_key")
        raise ValueError(f"invalid zulip_org_key ({where}): expected {ZULIP_ORG_KEY_LENGTH} characters")


def is_bouncer_url(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def is_org_id(value: str) -> bool:
    """Whether value is a UUID in canonical form (as Zulip's bouncer requires of zulip_org_id)."""
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False
