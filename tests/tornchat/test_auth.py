"""HTTP Basic authentication and POST /fetch_api_key with its brute-force protection."""

from __future__ import annotations

import base64

import requests

from tests.support.helpers import PASSWORD, assert_error, assert_success

WWW_AUTHENTICATE = 'Basic realm="zulip"'
NOT_LOGGED_IN = "Not logged in: API authentication or user session required"


def raw_get(live, headers):
    return requests.get(live.base_url + "/api/v1/users/me", headers=headers)


def basic(value: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(value.encode()).decode()}


def test_no_credentials(live):
    response = live.anonymous().get("/users/me")
    assert_error(response, NOT_LOGGED_IN, "UNAUTHORIZED", 401)
    assert response.headers["WWW-Authenticate"] == WWW_AUTHENTICATE


def test_not_basic_scheme(live):
    assert_error(raw_get(live, {"Authorization": "Bearer abc"}), "This endpoint requires HTTP basic authentication.")


def test_malformed_basic_header(live):
    for header in ("Basic !!!notbase64", "Basic " + base64.b64encode(b"no-colon").decode()):
        response = raw_get(live, {"Authorization": header})
        assert_error(response, "Invalid authorization header for basic auth", "UNAUTHORIZED", 401)
        assert response.headers["WWW-Authenticate"] == WWW_AUTHENTICATE


def test_malformed_api_key(live):
    for key in ("short", "x" * 31 + "!", "y" * 33):
        response = raw_get(live, basic(f"owner@example.com:{key}"))
        assert_error(response, "Malformed API key", "UNAUTHORIZED", 401)
        assert response.headers["WWW-Authenticate"] == WWW_AUTHENTICATE


def test_wrong_api_key_and_unknown_email(live):
    # Zulip's REST decorator (authenticated_rest_api_view) re-raises every key failure as UNAUTHORIZED
    # with WWW-Authenticate; its INVALID_API_KEY code only reaches clients on paths that do not wrap it
    # (webhooks taking api_key), which this server does not serve. The Zulip mobile app's test data
    # (test/example_data.dart, apiExceptionUnauthorized) records the same answer, and it logs out on any 401.
    member = live.make_user()
    for credentials in (f"owner@example.com:{member.api_key}", f"nobody@example.com:{member.api_key}"):
        response = raw_get(live, basic(credentials))
        assert_error(response, "Invalid API key", "UNAUTHORIZED", 401)
        assert response.headers["WWW-Authenticate"] == WWW_AUTHENTICATE
    register = requests.post(live.base_url + "/api/v1/register", headers=basic(f"owner@example.com:{member.api_key}"))
    assert_error(register, "Invalid API key", "UNAUTHORIZED", 401)


def test_email_is_case_insensitive_and_dummy_email_works(live):
    assert_success(raw_get(live, basic(f"OWNER@Example.com:{live.owner.api_key}")))
    dummy = f"user{live.owner.id}@zulip.testserver"
    assert_success(raw_get(live, basic(f"{dummy}:{live.owner.api_key}")))


def test_deactivated_account(live):
    member = live.make_user()
    assert_success(live.owner.delete(f"/users/{member.id}"))
    response = member.get("/users/me")
    assert_error(response, "Account is deactivated", "UNAUTHORIZED", 401)
    assert response.headers["WWW-Authenticate"] == WWW_AUTHENTICATE


def test_api_keys_are_32_alphanumeric_and_distinct(live):
    keys = {live.make_user().api_key for _ in range(3)} | {live.owner.api_key}
    assert len(keys) == 4
    assert all(len(k) == 32 and k.isalnum() for k in keys)


def fetch(live, username, password, **kwargs):
    return live.anonymous().post("/fetch_api_key", {"username": username, "password": password}, **kwargs)


def test_fetch_api_key(live):
    member = live.make_user(email="Mixed@Example.com")
    body = assert_success(fetch(live, "mixed@example.com", PASSWORD))
    assert body["api_key"] == member.api_key
    assert body["email"] == "Mixed@Example.com"
    assert body["user_id"] == member.id


def test_fetch_api_key_failures(live):
    live.make_user(email="someone@example.com")
    wrong = fetch(live, "someone@example.com", "wrong password")
    assert_error(wrong, "Your username or password is incorrect", "AUTHENTICATION_FAILED", 401)
    assert "WWW-Authenticate" not in wrong.headers
    assert_error(
        fetch(live, "ghost@example.com", PASSWORD),
        "Your username or password is incorrect",
        "AUTHENTICATION_FAILED",
        401,
    )
    assert_error(fetch(live, "not an email", PASSWORD), "Enter a valid email address.")
    body = assert_error(
        live.anonymous().post("/fetch_api_key", {"username": "a@b.c"}),
        "Missing 'password' argument",
        "REQUEST_VARIABLE_MISSING",
    )
    assert body["var_name"] == "password"


def test_fetch_api_key_deactivated(live):
    member = live.make_user(email="gone@example.com")
    assert_success(live.owner.delete(f"/users/{member.id}"))
    assert_error(fetch(live, "gone@example.com", PASSWORD), "Account is deactivated", "USER_DEACTIVATED", 401)


def test_fetch_api_key_without_password(live):
    live.make_user(email="nopass@example.com", password=None)
    assert_error(
        fetch(live, "nopass@example.com", "anything"),
        "Your password has been disabled and needs to be reset",
        "PASSWORD_RESET_REQUIRED",
        401,
    )


def test_fetch_api_key_needs_no_auth_but_accepts_it(live):
    assert_success(live.owner.post("/fetch_api_key", {"username": "owner@example.com", "password": PASSWORD}))


def test_brute_force_on_one_username_is_limited(live):
    live.make_user(email="target@example.com")
    for _ in range(5):
        assert fetch(live, "target@example.com", "guess").status_code == 401
    limited = fetch(live, "target@example.com", PASSWORD)  # even the right password waits
    body = assert_error(
        limited,
        "API usage exceeded rate limit; see https://zulip.com/api/http-headers#rate-limiting-response-headers",
        "RATE_LIMIT_HIT",
        429,
    )
    assert body["retry-after"] == 300
    assert limited.headers["Retry-After"] == "300"
    live.clock.advance(120)
    assert fetch(live, "target@example.com", PASSWORD).json()["retry-after"] == 180
    live.clock.advance(181)
    assert_success(fetch(live, "target@example.com", PASSWORD))


def test_success_resets_the_username_counter(live):
    live.make_user(email="forgetful@example.com")
    for _ in range(4):
        fetch(live, "forgetful@example.com", "guess")
    assert_success(fetch(live, "forgetful@example.com", PASSWORD))
    for _ in range(4):
        assert fetch(live, "forgetful@example.com", "guess").status_code == 401


def test_brute_force_from_one_address_is_limited(live):
    for n in range(30):
        assert fetch(live, f"spray{n}@example.com", "guess").status_code == 401
    assert fetch(live, "owner@example.com", PASSWORD).status_code == 429
