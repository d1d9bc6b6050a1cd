"""GET /server_settings: no authentication, version and realm facts."""

from __future__ import annotations

from tests.support.helpers import assert_success
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


def test_feature_level_is_the_newest_the_spec_names_and_its_features_answer(live):
    # 483: legacy push registrations removed on E2EE registration; 471: example_input and
    # reverse_template on linkifiers; 470: remove_client_device; 468: the push registration redesign.
    assert assert_success(live.anonymous().get("/server_settings"))["zulip_feature_level"] == 483
    device_id = assert_success(live.owner.post("/register_client_device"))["device_id"]
    linkifier = {"pattern": "#(?P<id>[0-9]+)", "url_template": "https://x.example/{id}", "example_input": "#1"}
    assert_success(live.owner.post("/realm/filters", linkifier))
    listed = assert_success(live.owner.get("/realm/linkifiers"))["linkifiers"]
    assert listed[0]["example_input"] == "#1"
    error = live.owner.post("/mobile_push/register", {"device_id": device_id, "push_key_id": 1})
    assert error.json()["code"] == "PUSH_SERVICE_NOT_CONFIGURED"
    assert_success(live.owner.post("/remove_client_device", {"device_id": device_id}))
