"""Unauthenticated endpoints: server settings and API-key login."""

from __future__ import annotations

from typing import Annotated

import msgspec

from storage.model.errors import ApiError
from storage.org import passwords, realm_images, users
from tornchat import FEATURE_LEVEL, ZULIP_VERSION
from tornchat.base import BaseHandler, check_password
from tornchat.params import Params

RATE_LIMIT_MSG = "API usage exceeded rate limit; see https://zulip.com/api/http-headers#rate-limiting-response-headers"
AUTHENTICATION_METHODS = {
    "password": True,
    "dev": False,
    "email": True,
    "ldap": False,
    "remoteuser": False,
    "github": False,
    "azuread": False,
    "gitlab": False,
    "apple": False,
    "google": False,
    "saml": False,
    "openid connect": False,
}


class ServerSettingsHandler(BaseHandler):
    requires_auth = False

    def get(self) -> None:
        self.parse()
        realm = self.server.realm
        self.respond(
            {
                "authentication_methods": AUTHENTICATION_METHODS,
                "external_authentication_methods": [],
                "zulip_version": ZULIP_VERSION,
                "zulip_merge_base": ZULIP_VERSION,
                "zulip_feature_level": FEATURE_LEVEL,
                "push_notifications_enabled": self.server.settings.push_configured,
                "is_incompatible": False,
                "email_auth_enabled": True,
                "require_email_format_usernames": True,
                "realm_url": realm.url,
                "realm_uri": realm.url,
                "realm_name": realm.name,
                "realm_icon": self.server.db.read(realm_images.realm_icon_url),
                "realm_description": "",
                "realm_web_public_access_enabled": realm.enable_spectator_access,
                "max_file_upload_size_mib": self.server.settings.max_file_upload_size_mib,
            }
        )


class FetchApiKey(msgspec.Struct):
    username: str
    password: Annotated[str, msgspec.Meta(max_length=passwords.MAX_LOGIN_PASSWORD_LENGTH)]


FETCH_API_KEY = Params(FetchApiKey)


class FetchApiKeyHandler(BaseHandler):
    params = {"post": FETCH_API_KEY}
    requires_auth = False

    async def post(self) -> None:
        params = self.parse()
        username, address, limiter = params.username, self.client_address(), self.server.login_limiter
        wait = limiter.retry_after(username, address)
        if wait:
            raise ApiError(RATE_LIMIT_MSG, "RATE_LIMIT_HIT", 429, {"retry-after": wait}, {"Retry-After": str(wait)})
        login = self.server.db.read(users.get_login, username)
        limiter.record_attempt(username, address)
        matches = await check_password(params.password, login.password_hash)
        result = self.server.db.read(users.fetch_api_key, login, matches)
        limiter.record_success(username, address)
        self.respond(result)
