"""GET /server_settings: no authentication, version and realm facts."""

from __future__ import annotations

from tests.helpers import assert_success
from tornchat import FEATURE_LEVEL, ZULIP_VERSION


def test_server_settings_without_auth(live):
    body = assert_success(live.anonymous().get("/server_settings"))
    assert body["zulip_version"] == ZULIP_VERSION
    assert body["zulip_feature_level"] == FEATURE_LEVEL
    assert body["authentication_methods"]["password"] is True
    assert body["email_auth_enabled"] is True
    assert body["realm_name"] == "Tornchat"
    assert body["realm_url"] == body["realm_uri"] == "http://127.0.0.1:9991"
    assert body["push_notifications_enabled"] is False
    assert "ignored_parameters_unsupported" not in body


def test_server_settings_reports_unknown_parameters(live):
    body = assert_success(live.anonymous().get("/server_settings", {"extra": "1"}))
    assert body["ignored_parameters_unsupported"] == ["extra"]
