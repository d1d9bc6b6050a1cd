"""Server settings: command-line flags first, then TORNCHAT_* environment variables, then defaults."""

from __future__ import annotations

import os
import urllib.parse

import msgspec

DEFAULT_DATA_DIR = "./tornchat-data"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9991
DEFAULT_REALM_NAME = "Tornchat"


class Settings(msgspec.Struct, kw_only=True):
    data_dir: str = DEFAULT_DATA_DIR
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    realm_name: str | None = None  # None: keep the stored name (bootstrap uses DEFAULT_REALM_NAME)
    email_host: str | None = None  # None: keep the stored host (bootstrap uses the site's host)
    site: str | None = None  # None: http://{host}:{port}
    web_public_channels: bool = True  # the server-wide switch for web-public channels

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
    try:
        return msgspec.convert(values, Settings, strict=False)
    except msgspec.ValidationError as error:
        raise ValueError(f"invalid setting: {error}") from None
