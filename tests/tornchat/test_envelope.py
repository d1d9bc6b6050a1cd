"""The one response envelope: success, errors, unknown routes, wrong methods, 500s."""

from __future__ import annotations

import logging

import pytest

from tests.support.helpers import assert_error, assert_success


def test_success_envelope_and_ignored_parameters(live):
    body = assert_success(live.owner.get("/users/me", {"zeta": "1", "alpha": "2", "client": "x"}))
    assert body["ignored_parameters_unsupported"] == ["alpha", "zeta"]


def test_no_ignored_key_when_everything_is_used(live):
    body = assert_success(live.owner.get("/users", {"client_gravatar": False}))
    assert "ignored_parameters_unsupported" not in body


def test_unknown_route_is_json_404(live):
    response = live.owner.get("/no/such/endpoint")
    assert_error(response, "Not Found", status=404)
    assert response.headers["Content-Type"] == "application/json"


def test_unknown_route_without_credentials_is_404(live):
    assert_error(live.anonymous().get("/nope"), "Not Found", status=404)


def test_wrong_method_is_405_with_allowed_methods(live):
    response = live.owner.request("PUT", "/users")
    assert response.status_code == 405
    assert response.json() == {
        "result": "error",
        "msg": "Method Not Allowed",
        "allowed_methods": ["GET", "HEAD", "POST"],
    }


def test_head_is_allowed_where_get_is(live):
    response = live.owner.request("HEAD", "/users/me")
    assert response.status_code == 200
    assert response.content == b""


def test_options_lists_methods(live):
    response = live.owner.request("OPTIONS", "/users/me")
    assert response.status_code == 204
    assert response.headers["Allow"] == "GET, HEAD, DELETE"


def test_unexpected_exception_is_json_500_and_rolls_back(live, monkeypatch, caplog):
    from storage.org import user_changes

    real_touch = user_changes.change_full_name

    def explode(tx, target, full_name):
        real_touch(tx, target, full_name)  # the write happens, then the bug strikes
        raise RuntimeError("boom")

    monkeypatch.setattr(user_changes, "change_full_name", explode)
    member = live.make_user(full_name="Before")
    with caplog.at_level(logging.ERROR, logger="tornchat"):
        response = live.owner.patch(f"/users/{member.id}", {"full_name": "After"})
    assert_error(response, "Internal server error", status=500)
    assert "RuntimeError: boom" in caplog.text
    assert live.user(member.id).full_name == "Before"


@pytest.mark.parametrize(
    ("value", "msg"),
    [
        ("abc", "user_ids is not valid JSON"),
        ("True", "user_ids is not valid JSON"),
        ('"x"', "user_ids is not a list"),
        ('[1, "a"]', "user_ids[1] is not an integer"),
        ("{}", "user_ids is not a list"),
    ],
)
def test_json_parameter_errors(live, value, msg):
    assert_error(live.owner.get("/users", {"user_ids": value}), msg)


@pytest.mark.parametrize(
    ("value", "msg"),
    [("1", "client_gravatar is not a boolean"), ('"true"', "client_gravatar is not a boolean")],
)
def test_boolean_parameter_errors(live, value, msg):
    assert_error(live.owner.get("/users", {"client_gravatar": value}), msg)


def test_missing_argument(live):
    body = assert_error(
        live.owner.post("/users", {"email": "x@example.com", "password": "pw123456"}),
        "Missing 'full_name' argument",
        "REQUEST_VARIABLE_MISSING",
    )
    assert body["var_name"] == "full_name"


def test_body_parameters_win_over_query_string(live):
    member = live.make_user(full_name="Original")
    url_params = "?full_name=FromQuery"
    assert_success(live.owner.patch(f"/users/{member.id}{url_params}", {"full_name": "FromBody"}))
    assert live.user(member.id).full_name == "FromBody"


def test_query_string_used_for_patch_without_body(live):
    member = live.make_user(full_name="Original")
    assert_success(live.owner.patch(f"/users/{member.id}?full_name=FromQuery"))
    assert live.user(member.id).full_name == "FromQuery"


def test_strings_are_taken_verbatim(live):
    member = live.make_user(full_name="Original")
    assert_success(live.owner.patch(f"/users/{member.id}", {"full_name": "null"}))
    assert live.user(member.id).full_name == "null"
    assert_success(live.owner.patch(f"/users/{member.id}", {"full_name": "[1, 2]"}))
    assert live.user(member.id).full_name == "[1, 2]"


def test_integers_beyond_64_bits_are_rejected_not_crashed(live):
    assert_error(live.owner.get("/users", {"user_ids": "[18446744073709551615]"}), "user_ids[0] is too large")
    assert_error(live.owner.get("/users/99999999999999999999"), "Not Found", status=404)
    assert_error(live.owner.request("POST", "/users/99999999999999999999/reactivate"), "Not Found", status=404)
