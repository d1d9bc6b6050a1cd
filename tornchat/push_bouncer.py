"""Zulip's mobile push notification service (the push bouncer): what tornchat sends it, and how.

The official Zulip apps encrypt their FCM/APNs token for the bouncer (push.zulipchat.com), which
alone delivers to them; tornchat speaks to it as a self-hosted Zulip server does
(zerver/lib/remote_server.py send_to_push_bouncer):
- every request goes to `<bouncer>/api/v1/remotes/<endpoint>` with HTTP Basic authentication by the
  server's zulip_org_id and zulip_org_key, except the registration of the server itself;
- `server/register` (form: zulip_org_id, zulip_org_key, hostname, contact_email) registers or updates
  the server and answers {"created": bool};
- `server/analytics/status` and `server/analytics` tell the bouncer of the realm (its uuid above
  all), without usage statistics: a device registration names the realm by its uuid;
- `push/e2ee/register` (form: realm_uuid, token_id, bouncer_public_key, encrypted_push_registration)
  forwards a device's sealed token as the app sent it;
- `push/e2ee/notify` (JSON: realm_uuid, push_requests) carries notifications sealed with each
  device's push key, answered with the token ids the bouncer no longer knows (`delete_token_ids`).

Errors come back as JSON {"result": "error", "msg", "code"}: 5xx and no answer mean "try later";
4xx codes are sorted by `classify` below. The blocking helpers here serve the command line
(`tornchat register-push-bouncer`); tornchat/push_sender.py sends the outbox with AsyncHTTPClient.
"""

from __future__ import annotations

import base64
import json
import secrets
import string
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any

from storage.model.realm import Realm
from tornchat import FEATURE_LEVEL, ZULIP_VERSION

DEFAULT_BOUNCER_URL = "https://push.zulipchat.com"
ORG_KEY_LENGTH = 64
TIMEOUT_SECONDS = 15.0  # Zulip's PushBouncerSession default
USER_AGENT = f"ZulipServer/{ZULIP_VERSION}"  # as Zulip servers name themselves to the bouncer

# How a 4xx answer is handled (Zulip's rules for device registrations, applied to notifications too):
# the server's administrator has to act (credentials, the realm unknown to the bouncer, the plan):
# the request stays in the outbox, retried until it expires; anything else is final for the request.
RETRY_CODES = frozenset(
    {
        "UNAUTHORIZED",
        "INVALID_ZULIP_SERVER",
        "PUSH_NOTIFICATIONS_DISALLOWED",
        "REMOTE_REALM_SERVER_MISMATCH_ERROR",
        "MISSING_REMOTE_REALM",
        "RATE_LIMIT_HIT",
    }
)
MISSING_REMOTE_REALM = "MISSING_REMOTE_REALM"


class BouncerError(Exception):
    """A request the bouncer refused or could not be sent; `msg` is the bouncer's words."""

    def __init__(self, msg: str, code: str | None = None, status: int | None = None) -> None:
        super().__init__(msg)
        self.msg, self.code, self.status = msg, code, status


def endpoint_url(bouncer_url: str, endpoint: str) -> str:
    return f"{bouncer_url.rstrip('/')}/api/v1/remotes/{endpoint}"


def basic_auth(org_id: str, org_key: str) -> str:
    return "Basic " + base64.b64encode(f"{org_id}:{org_key}".encode()).decode("ascii")


def new_credentials() -> tuple[str, str]:
    """A new zulip_org_id (a UUID) and zulip_org_key (64 letters and digits), as Zulip generates them."""
    alphabet = string.ascii_letters + string.digits
    return str(uuid.uuid4()), "".join(secrets.choice(alphabet) for _ in range(ORG_KEY_LENGTH))


def realm_host(realm: Realm) -> str:
    """The realm's host as the bouncer knows it: the host and port of its URL."""
    return urllib.parse.urlsplit(realm.url).netloc


def realm_info(realm: Realm) -> dict[str, Any]:
    """The realm as `server/analytics` describes it (Zulip's RealmDataForAnalytics)."""
    return {
        "id": 1,
        "host": realm_host(realm),
        "url": realm.url,
        "name": realm.name,
        "org_type": 0,
        "date_created": float(realm.date_created),
        "deactivated": False,
        "is_system_bot_realm": False,
        "authentication_methods": {"Email": True},
        "uuid": realm.uuid,
        "uuid_owner_secret": realm.uuid_owner_secret,
    }


def analytics_form(realm: Realm) -> dict[str, str]:
    """The form of `server/analytics` telling the bouncer of the realm, with no usage statistics."""
    return {
        "realm_counts": "[]",
        "installation_counts": "[]",
        "realmauditlog_rows": "[]",
        "realms": json.dumps([realm_info(realm)]),
        "version": json.dumps(ZULIP_VERSION),
        "merge_base": json.dumps(ZULIP_VERSION),
        "api_feature_level": json.dumps(FEATURE_LEVEL),
    }


def classify(status: int, body: bytes | None) -> tuple[str, str, str]:
    """Sort a non-200 answer: ("retry" or "refused", code, msg)."""
    code, msg = error_of(body)
    if status >= 500 or not 400 <= status < 500:
        return "retry", code or f"HTTP_{status}", msg
    if code in RETRY_CODES or status == 401:
        return "retry", code or "UNAUTHORIZED", msg
    return "refused", code or "BAD_REQUEST", msg


def error_of(body: bytes | None) -> tuple[str, str]:
    """The (code, msg) of a JSON error body; empty strings for what it lacks."""
    try:
        decoded = json.loads(body or b"")
    except ValueError:
        return "", ""
    if not isinstance(decoded, dict):
        return "", ""
    code, msg = decoded.get("code"), decoded.get("msg")
    return (code if isinstance(code, str) else ""), (msg if isinstance(msg, str) else "")


# -- blocking requests, for the command line ---------------------------------------------------------


def request(
    bouncer_url: str, method: str, endpoint: str, form: dict[str, str] | None, auth: tuple[str, str] | None
) -> dict[str, Any]:
    """Send one request and return the decoded success answer; raise BouncerError otherwise."""
    url = endpoint_url(bouncer_url, endpoint)
    data = None
    if form is not None and method == "POST":
        data = urllib.parse.urlencode(form).encode()
    headers = {"User-Agent": USER_AGENT}
    if auth is not None:
        headers["Authorization"] = basic_auth(*auth)
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_SECONDS) as response:
            body = response.read()
    except urllib.error.HTTPError as error:
        code, msg = error_of(error.read())
        raise BouncerError(msg or f"HTTP {error.code}", code or None, error.code) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise BouncerError(f"network error connecting to the push bouncer at {bouncer_url}: {reason}") from None
    try:
        answer = json.loads(body)
    except ValueError:
        raise BouncerError(f"the push bouncer at {bouncer_url} answered something other than JSON") from None
    return answer if isinstance(answer, dict) else {}


def register_server(bouncer_url: str, org_id: str, org_key: str, hostname: str, contact_email: str) -> bool:
    """Register the server (or update its registration); return whether it was new."""
    form = {"zulip_org_id": org_id, "zulip_org_key": org_key, "hostname": hostname, "contact_email": contact_email}
    return bool(request(bouncer_url, "POST", "server/register", form, None).get("created"))


def upload_realm(bouncer_url: str, org_id: str, org_key: str, realm: Realm) -> None:
    """Tell the bouncer of the realm (Zulip's send_server_data_to_push_bouncer without statistics)."""
    request(bouncer_url, "GET", "server/analytics/status", None, (org_id, org_key))
    request(bouncer_url, "POST", "server/analytics", analytics_form(realm), (org_id, org_key))
