"""Server settings: command-line flags first, then TORNCHAT_* environment variables, then defaults."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import os
import urllib.parse

import msgspec

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


class Settings(msgspec.Struct, kw_only=True):
    data_dir: str = DEFAULT_DATA_DIR
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    realm_name: str | None = None  # None: keep the stored name (bootstrap uses DEFAULT_REALM_NAME)
    email_host: str | None = None  # None: keep the stored host (bootstrap uses the site's host)
    site: str | None = None  # None: http://{host}:{port}
    web_public_channels: bool = True  # the server-wide switch for web-public channels
    # The push notification service (both or neither): its URL and the standard Base64 of its
    # 32-byte Curve25519 public key, with which mobile clients encrypt their token registrations.
    push_service_url: str | None = None
    push_service_public_key: str | None = None
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

    @property
    def upload_body_limit(self) -> int:
        """The largest POST /user_uploads body: room for the largest file and its multipart framing."""
        return max(self.max_body_size, self.max_file_upload_size_mib * 1024 * 1024 + MULTIPART_OVERHEAD)

    @property
    def trusted_proxy_networks(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        return tuple(ipaddress.ip_network(entry, strict=False) for entry in self.trusted_proxy)

    @property
    def push_configured(self) -> bool:
        return self.push_service_url is not None

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
        return f"http://{host}:{self.port}"

    @property
    def site_hostname(self) -> str:
        return urllib.parse.urlsplit(self.site_url).hostname or "localhost"


ENVIRONMENT = {
    "data_dir": "TORNCHAT_DATA_DIR",
    "host": "TORNCHAT_HOST",
    "port": "TORNCHAT_PORT",
    "realm_name": "TORNCHAT_REALM_NAME",
    "email_host": "TORNCHAT_EMAIL_HOST",
    "site": "TORNCHAT_SITE",
    "web_public_channels": "TORNCHAT_WEB_PUBLIC_CHANNELS",
    "push_service_url": "TORNCHAT_PUSH_SERVICE_URL",
    "push_service_public_key": "TORNCHAT_PUSH_SERVICE_PUBLIC_KEY",
    "max_body_size": "TORNCHAT_MAX_BODY_SIZE",
    "header_timeout": "TORNCHAT_HEADER_TIMEOUT",
    "body_timeout": "TORNCHAT_BODY_TIMEOUT",
    "trusted_proxy": "TORNCHAT_TRUSTED_PROXY",
    "max_queue_bytes": "TORNCHAT_MAX_QUEUE_BYTES",
    "max_file_upload_size_mib": "TORNCHAT_MAX_FILE_UPLOAD_SIZE_MIB",
    "upload_quota_mib": "TORNCHAT_UPLOAD_QUOTA_MIB",
}


def load_settings(flags: dict[str, object], environ: dict[str, str] | None = None) -> Settings:
    """Merge flags (None = not given) over TORNCHAT_* variables; raise ValueError on a bad value."""
    environ = dict(os.environ) if environ is None else environ
    values: dict[str, object] = {}
    for name, variable in ENVIRONMENT.items():
        flag = flags.get(name)
        if flag is not None:
            values[name] = flag
        elif environ.get(variable):
            values[name] = environ[variable]
    if "trusted_proxy" in values:
        values["trusted_proxy"] = split_addresses(values["trusted_proxy"])
    try:
        settings = msgspec.convert(values, Settings, strict=False)
    except msgspec.ValidationError as error:
        raise ValueError(f"invalid setting: {error}") from None
    check_push_settings(settings)
    check_edge_settings(settings)
    if settings.max_queue_bytes < 1:
        raise ValueError("max queue bytes must be positive")
    if settings.max_file_upload_size_mib < 0 or settings.upload_quota_mib < 0:
        raise ValueError("max file upload size and upload quota must not be negative")
    return settings


def split_addresses(given: object) -> list[str]:
    """--trusted-proxy values (repeated flags, each possibly comma-separated) as one list."""
    parts = given if isinstance(given, list) else [given]
    return [entry.strip() for part in parts for entry in str(part).split(",") if entry.strip()]


def check_edge_settings(settings: Settings) -> None:
    """Raise ValueError for a trusted proxy that is no address or network, or a limit below 1."""
    for entry in settings.trusted_proxy:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ValueError(f"invalid trusted proxy {entry!r}: expected an IP address or network") from None
    if settings.max_body_size < 1 or settings.header_timeout <= 0 or settings.body_timeout <= 0:
        raise ValueError("max body size and timeouts must be positive")


def check_push_settings(settings: Settings) -> None:
    """Raise ValueError unless the push service settings are both absent or both valid."""
    url, key = settings.push_service_url, settings.push_service_public_key
    if (url is None) != (key is None):
        raise ValueError("--push-service-url and --push-service-public-key must be given together")
    if url is None or key is None:
        return
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise ValueError(f"invalid push service URL {url!r}: it must start with http:// or https://")
    try:
        decoded = base64.b64decode(key, validate=True)
    except binascii.Error:
        decoded = b""
    if len(decoded) != 32:
        raise ValueError("invalid push service public key: expected the standard Base64 of 32 bytes")
