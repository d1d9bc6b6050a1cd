"""POST /fetch_api_key under attack: forwarded addresses, lockout, timing, hashing off the event loop.

The server's peer is always 127.0.0.1 here; with 127.0.0.1 as a trusted proxy, X-Real-Ip and
X-Forwarded-For stand for clients at other addresses.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
import threading

import pytest
import requests

from storage.org import passwords
from tests.support.helpers import PASSWORD, LiveServer, assert_error, assert_success, free_port
from tornchat.ratelimit import LOGIN_FAILURES_PER_ADDRESS, LOGIN_FAILURES_PER_PAIR, LOGIN_FAILURES_PER_USERNAME

RATE_LIMITED = "API usage exceeded rate limit; see https://zulip.com/api/http-headers#rate-limiting-response-headers"
INCORRECT = "Your username or password is incorrect"


@pytest.fixture
def proxied(tmp_path):
    """A server behind a trusted proxy at 127.0.0.1 (and 10.0.0.0/8, its other hops)."""
    server = LiveServer(os.path.join(str(tmp_path), "data"), trusted_proxy=["127.0.0.1", "10.0.0.0/8"])
    yield server
    server.stop()


def login(server, username, password, **headers):
    data = {"username": username, "password": password}
    return requests.post(server.base_url + "/api/v1/fetch_api_key", data=data, headers=headers)


def from_address(server, address, username, password):
    return login(server, username, password, **{"X-Real-Ip": address})


def assert_limited(response, retry_after=None):
    body = assert_error(response, RATE_LIMITED, "RATE_LIMIT_HIT", 429)
    if retry_after is not None:
        assert body["retry-after"] == retry_after
        assert response.headers["Retry-After"] == str(retry_after)


@pytest.fixture
def quick_hashing(monkeypatch):
    """Password checks without scrypt's 40 ms, for the tests that make a hundred attempts."""
    monkeypatch.setattr(passwords, "check_password", lambda password, stored: password == PASSWORD)


# -- which address counts ---------------------------------------------------------------------


def test_forwarded_headers_are_ignored_without_a_trusted_proxy(live, quick_hashing):
    # Before: a different X-Real-Ip or X-Forwarded-For per request escaped the per-address limit.
    for n in range(LOGIN_FAILURES_PER_ADDRESS):
        headers = {"X-Real-Ip": f"10.1.0.{n}", "X-Forwarded-For": f"10.2.0.{n}"}
        assert login(live, f"spray{n}@example.com", "guess", **headers).status_code == 401
    assert_limited(login(live, "owner@example.com", PASSWORD, **{"X-Real-Ip": "10.3.0.1"}))


def test_a_peer_outside_the_trusted_proxies_is_not_believed(tmp_path):
    server = LiveServer(os.path.join(str(tmp_path), "data"), trusted_proxy=["10.0.0.0/8"])
    try:
        for n in range(LOGIN_FAILURES_PER_PAIR):
            assert from_address(server, f"10.1.0.{n}", "owner@example.com", "guess").status_code == 401
        assert_limited(from_address(server, "10.9.9.9", "owner@example.com", PASSWORD))
    finally:
        server.stop()


def test_a_trusted_proxy_names_the_client(proxied):
    for _ in range(LOGIN_FAILURES_PER_PAIR):
        assert_error(from_address(proxied, "203.0.113.5", "owner@example.com", "guess"), INCORRECT,
                     "AUTHENTICATION_FAILED", 401)  # fmt: skip
    assert_limited(from_address(proxied, "203.0.113.5", "owner@example.com", PASSWORD), 300)
    assert_success(from_address(proxied, "203.0.113.6", "owner@example.com", PASSWORD))


def test_x_forwarded_for_is_read_from_the_right(proxied):
    # The client may write anything on the left; the rightmost hop not a trusted proxy counts.
    for n in range(LOGIN_FAILURES_PER_PAIR):
        forwarded = f"198.51.100.{n}, 203.0.113.7, 10.0.0.2"
        assert login(proxied, "owner@example.com", "guess", **{"X-Forwarded-For": forwarded}).status_code == 401
    assert_limited(login(proxied, "owner@example.com", PASSWORD, **{"X-Forwarded-For": "1.1.1.1, 203.0.113.7"}))
    assert_success(login(proxied, "owner@example.com", PASSWORD, **{"X-Forwarded-For": "203.0.113.8"}))


def test_malformed_forwarded_addresses_fall_back_to_the_peer(proxied):
    for n in range(LOGIN_FAILURES_PER_PAIR):
        headers = {"X-Real-Ip": f"not-an-address-{n}", "X-Forwarded-For": f"garbage-{n}"}
        assert login(proxied, "owner@example.com", "guess", **headers).status_code == 401
    assert_limited(login(proxied, "owner@example.com", PASSWORD))  # 127.0.0.1 itself


# -- lockout ---------------------------------------------------------------------------------------


def test_wrong_passwords_from_one_address_do_not_lock_out_the_owner(proxied):
    member = proxied.make_user(email="target@example.com")
    for _ in range(LOGIN_FAILURES_PER_PAIR * 3):
        from_address(proxied, "203.0.113.66", "target@example.com", "guess")
    body = assert_success(from_address(proxied, "192.0.2.10", "target@example.com", PASSWORD))
    assert body["api_key"] == member.api_key


def test_guessing_spread_over_many_addresses_meets_the_username_limit(proxied, quick_hashing):
    proxied.make_user(email="target@example.com")
    for n in range(LOGIN_FAILURES_PER_USERNAME):
        address = f"203.0.113.{n // LOGIN_FAILURES_PER_PAIR}"
        assert from_address(proxied, address, "TARGET@example.com ", "guess").status_code == 401
    assert_limited(from_address(proxied, "192.0.2.10", "target@example.com", PASSWORD), 3600)
    proxied.clock.advance(3600)
    assert_success(from_address(proxied, "192.0.2.10", "target@example.com", PASSWORD))


def test_a_success_takes_back_its_attempt(proxied, quick_hashing):
    for n in range(LOGIN_FAILURES_PER_USERNAME - 1):
        from_address(proxied, f"203.0.113.{n // LOGIN_FAILURES_PER_PAIR}", "owner@example.com", "guess")
    for _ in range(3):  # each is counted when it starts, then taken back
        assert_success(from_address(proxied, "192.0.2.10", "owner@example.com", PASSWORD))
    assert from_address(proxied, "192.0.2.11", "owner@example.com", "guess").status_code == 401
    assert_limited(from_address(proxied, "192.0.2.10", "owner@example.com", PASSWORD))


def test_parallel_guesses_cannot_outrun_the_limit(proxied):
    # Attempts are counted when they start, not when their (threaded) hash finishes.
    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
        futures = [pool.submit(from_address, proxied, "203.0.113.9", "owner@example.com", "guess") for _ in range(12)]
        codes = sorted(f.result().status_code for f in futures)
    assert codes == [401] * LOGIN_FAILURES_PER_PAIR + [429] * (12 - LOGIN_FAILURES_PER_PAIR)


# -- the password hash -----------------------------------------------------------------------------


@pytest.fixture
def hashing(monkeypatch):
    """Record every password check: the stored hash and the thread it ran on."""
    calls = []
    real = passwords.check_password

    def recording(password, stored):
        calls.append((stored, threading.current_thread().name))
        return real(password, stored)

    monkeypatch.setattr(passwords, "check_password", recording)
    return calls


def test_an_unknown_username_costs_a_hash_too(live, hashing):
    # Before: ~40 ms for an account, 1.4 ms without: the timing told which usernames exist.
    assert_error(login(live, "ghost@example.com", "guess"), INCORRECT, "AUTHENTICATION_FAILED", 401)
    assert_error(login(live, "owner@example.com", "guess"), INCORRECT, "AUTHENTICATION_FAILED", 401)
    [(dummy, _), (stored, _)] = hashing
    assert dummy == passwords.DUMMY_HASH and stored != dummy
    assert dummy.split("$")[:4] == stored.split("$")[:4]  # the same scrypt cost
    assert not passwords.check_password("", passwords.DUMMY_HASH)


def test_hashing_runs_off_the_event_loop(live, monkeypatch):
    started, release = threading.Event(), threading.Event()
    real = passwords.check_password

    def slow(password, stored):
        started.set()
        assert release.wait(10)
        return real(password, stored)

    monkeypatch.setattr(passwords, "check_password", slow)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(login, live, "owner@example.com", PASSWORD)
        assert started.wait(10)
        # The login waits on its hash; the server answers others meanwhile.
        assert_success(live.owner.get("/users/me"))
        assert not pending.done()
        release.set()
        assert_success(pending.result(10))


def test_hashes_run_in_the_hashing_threads(live, hashing):
    login(live, "owner@example.com", PASSWORD)
    assert [name.startswith("tornchat-password") for _, name in hashing] == [True]


def test_account_creation_hashes_off_the_event_loop(live, monkeypatch):
    member = live.make_user()
    hashed = []
    real = passwords.hash_password

    def recording(password):
        hashed.append(threading.current_thread().name)
        return real(password)

    monkeypatch.setattr(passwords, "hash_password", recording)
    params = {"email": "new@example.com", "full_name": "New", "password": "sup3r secret"}
    assert_error(member.post("/users", params), "Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL")
    assert_error(live.owner.post("/users", {**params, "password": "aaaaaa"}), "The password is too weak.")
    assert hashed == []  # refused before any hashing
    assert_success(live.owner.post("/users", params))
    assert [name.startswith("tornchat-password") for name in hashed] == [True]
    assert_success(login(live, "new@example.com", "sup3r secret"))


def test_login_password_length_is_bounded(live, hashing):
    too_long = ("pass" * 300)[: passwords.MAX_LOGIN_PASSWORD_LENGTH + 1]
    assert_error(login(live, "owner@example.com", too_long), "password is too long (limit: 1024 characters)")
    assert_error(login(live, "owner@example.com", "p" * 10_000_000), "password is too long (limit: 1024 characters)")
    assert hashing == []  # refused before any hashing, and not counted as attempts
    assert_error(login(live, "owner@example.com", too_long[:-1]), INCORRECT, "AUTHENTICATION_FAILED", 401)


def test_new_password_length_is_bounded(live):
    too_long = ("pass" * 30)[: passwords.MAX_PASSWORD_LENGTH + 1]
    params = {"email": "new@example.com", "full_name": "New", "password": too_long}
    assert_error(live.owner.post("/users", params), "password is too long (limit: 100 characters)")
    assert_success(live.owner.post("/users", {**params, "password": too_long[:-1]}))
    assert_success(login(live, "new@example.com", too_long[:-1]))


def test_a_password_set_before_the_limit_still_logs_in(live):
    older = ("word" * 200)[:800]
    member = live.make_user(email="older@example.com")
    live.write(lambda tx: tx.execute("UPDATE users SET password_hash = ? WHERE id = ?",
                                     (passwords.hash_password(older), member.id)))  # fmt: skip
    assert_success(login(live, "older@example.com", older))


# -- the real `tornchat serve` -----------------------------------------------------------------------


def test_serve_applies_the_edge_settings(tmp_path):
    port = free_port()
    env = {**os.environ, "TORNCHAT_OWNER_EMAIL": "owner@example.com", "TORNCHAT_OWNER_PASSWORD": PASSWORD}
    command = [sys.executable, "-m", "tornchat", "serve", "--data-dir", str(tmp_path / "data"), "--port", str(port),
               "--max-body-size", "1000", "--trusted-proxy", "10.0.0.1"]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in process.stdout:
            if line.startswith("Serving"):
                break
        base = f"http://127.0.0.1:{port}/api/v1"
        response = requests.post(base + "/fetch_api_key", data={"username": "a@b.c", "password": "x" * 1000})
        assert_error(response, "Request body is too large (limit: 1000 bytes)", status=413)
        for n in range(LOGIN_FAILURES_PER_PAIR):  # the peer is no trusted proxy: X-Real-Ip is not believed
            response = requests.post(base + "/fetch_api_key", data={"username": "owner@example.com", "password": "x"},
                                     headers={"X-Real-Ip": f"192.0.2.{n}"})  # fmt: skip
            assert response.status_code == 401
        response = requests.post(base + "/fetch_api_key", data={"username": "owner@example.com", "password": PASSWORD})
        assert_limited(response, 300)
    finally:
        process.terminate()
        process.wait(10)
        process.stdout.close()
