"""The HTTP edge: body, URL and header limits answered in JSON; header and body timeouts; settings.

Bodies are limited by a small configured size here (the default is 25 MiB): no test sends much.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time

import pytest
import requests

from tests.support.events_helpers import Poll, register, send_direct, wait_until_parked
from tests.support.helpers import LiveServer, assert_error, assert_success
from tornchat import cli
from tornchat.http_edge import HEADER_READ_LIMIT, MAX_HEADER_FIELDS_SIZE, MAX_URL_LENGTH
from tornchat.settings import DEFAULT_MAX_BODY_SIZE, Settings, load_settings

LIMIT = 4096


@pytest.fixture(scope="module")
def small_limits(tmp_path_factory):
    """A server whose bodies are limited to 4 KiB and whose clients get half a second for a request."""
    data_dir = os.path.join(str(tmp_path_factory.mktemp("hostile-http")), "data")
    server = LiveServer(data_dir, max_body_size=LIMIT, header_timeout=0.5, body_timeout=0.5)
    yield server
    server.stop()


def exchange(server, data: bytes) -> bytes:
    """Send raw bytes on a new connection; return everything received until the server closes it.

    A server closing with unread input resets the connection: that ends the exchange too.
    """
    received = []
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        try:
            connection.sendall(data)
            while chunk := connection.recv(65536):
                received.append(chunk)
        except (ConnectionResetError, BrokenPipeError):
            pass
    return b"".join(received)


def parse(raw: bytes) -> tuple[int, dict[str, str], dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return int(status_line.split(" ")[1]), headers, json.loads(body)


def assert_refused(raw: bytes, status: int, msg: str) -> None:
    code, headers, body = parse(raw)
    assert (code, body) == (status, {"result": "error", "msg": msg, "code": "BAD_REQUEST"})
    assert headers["Content-Type"] == "application/json"
    assert headers["Connection"] == "close"


def post_head(length: int, extra: str = "") -> bytes:
    return (
        "POST /api/v1/fetch_api_key HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {length}\r\n{extra}\r\n"
    ).encode()


# -- request bodies ------------------------------------------------------------------------------


def test_a_declared_body_over_the_limit_gets_a_json_413_before_it_is_sent(small_limits, caplog):
    # The answer comes from the head alone: the server never reads (or holds) the body.
    caplog.set_level(logging.INFO, logger="tornchat.access")
    raw = exchange(small_limits, post_head(LIMIT + 1))
    assert_refused(raw, 413, "Request body is too large (limit: 4096 bytes)")
    assert "POST /api/v1/fetch_api_key 413 refused" in caplog.messages


def test_a_client_expecting_100_continue_is_refused_instead(small_limits):
    raw = exchange(small_limits, post_head(10**9, "Expect: 100-continue\r\n"))
    assert b"100 Continue" not in raw
    assert_refused(raw, 413, "Request body is too large (limit: 4096 bytes)")


def test_a_body_over_the_limit_sent_whole(small_limits):
    response = requests.post(
        small_limits.base_url + "/api/v1/fetch_api_key", data={"username": "a@b.c", "pad": "x" * LIMIT}
    )
    assert_error(response, "Request body is too large (limit: 4096 bytes)", status=413)


def test_a_body_within_the_limit_is_served(small_limits):
    body = {"username": "nobody@example.com", "password": "x", "pad": "p" * (LIMIT - 100)}
    response = requests.post(small_limits.base_url + "/api/v1/fetch_api_key", data=body)
    assert_error(response, "Your username or password is incorrect", "AUTHENTICATION_FAILED", 401)


def test_a_chunked_body_over_the_limit_is_cut_off(small_limits):
    # No length is declared, so Tornado counts while reading and closes with a bare 400.
    chunk = b"%x\r\n%s\r\n" % (LIMIT, b"a" * LIMIT)
    head = b"POST /api/v1/fetch_api_key HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    raw = exchange(small_limits, head + chunk * 2 + b"0\r\n\r\n")
    assert raw.startswith(b"HTTP/1.1 400 Bad Request\r\n")


def test_the_default_limit_is_25_mib(live):
    assert DEFAULT_MAX_BODY_SIZE == 25 * 1024 * 1024
    assert_refused(exchange(live, post_head(DEFAULT_MAX_BODY_SIZE + 1)), 413,
                   "Request body is too large (limit: 26214400 bytes)")  # fmt: skip


# -- URLs and headers ------------------------------------------------------------------------------


def get_head(path: str, headers: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode()


def test_a_long_url_gets_a_json_414(small_limits):
    raw = exchange(small_limits, get_head("/api/v1/server_settings?x=" + "a" * MAX_URL_LENGTH))
    assert_refused(raw, 414, "Request URL is too long (limit: 65536 bytes)")


def test_a_url_within_the_limit_is_served(small_limits):
    query = "a" * (MAX_URL_LENGTH - 100)
    body = assert_success(requests.get(small_limits.base_url + "/api/v1/server_settings?x=" + query))
    assert body["ignored_parameters_unsupported"] == ["x"]


@pytest.mark.parametrize(
    ("host_lines", "msg"),
    [
        ("Host: %\r\n", "Invalid Host header: '%'"),
        ("Host: a b\r\n", "Invalid Host header: 'a b'"),
        ("Host: a\r\nHost: b\r\n", "Multiple host headers not allowed: 'a,b'"),
        ("", "Missing Host header"),
    ],
)
def test_a_bad_host_header_gets_a_json_400(small_limits, host_lines, msg):
    # Tornado refuses these itself with a bare "400 Bad Request"; the edge answers in the envelope.
    raw = exchange(small_limits, f"GET /api/v1/server_settings HTTP/1.1\r\n{host_lines}\r\n".encode())
    assert_refused(raw, 400, msg)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1:9991", "[::1]:8080", "chat.example.com:", "xn--bcher-kva.de"])
def test_good_host_headers_are_served(small_limits, host):
    raw = exchange(
        small_limits, f"GET /api/v1/server_settings HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    )
    assert raw.startswith(b"HTTP/1.1 200 ")


def test_large_headers_get_a_json_431(small_limits):
    raw = exchange(small_limits, get_head("/api/v1/server_settings", f"X-Big: {'a' * MAX_HEADER_FIELDS_SIZE}\r\n"))
    assert_refused(raw, 431, "Request headers are too large (limit: 65536 bytes)")
    many = "".join(f"X-Header-{n}: {'b' * 100}\r\n" for n in range(MAX_HEADER_FIELDS_SIZE // 100))
    assert_refused(exchange(small_limits, get_head("/api/v1/server_settings", many)), 431,
                   "Request headers are too large (limit: 65536 bytes)")  # fmt: skip


def test_a_head_beyond_what_tornado_reads_is_dropped(small_limits):
    # Tornado stops reading at HEADER_READ_LIMIT bytes: no answer can be parsed from such a head.
    assert exchange(small_limits, get_head("/api/v1/server_settings", f"X-Big: {'a' * HEADER_READ_LIMIT}\r\n")) == b""


# -- timeouts ---------------------------------------------------------------------------------------


def test_a_client_stalling_in_its_headers_is_disconnected(small_limits):
    assert exchange(small_limits, b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n") == b""


def test_a_client_stalling_in_its_body_is_disconnected(small_limits):
    assert exchange(small_limits, post_head(100) + b"username=a") == b""


def test_a_connection_that_never_sends_is_closed(small_limits):
    assert exchange(small_limits, b"") == b""  # closed by the server well before the exchange's 10 s


def test_a_long_poll_outlasting_the_header_timeout_is_answered(small_limits):
    """The header timeout counts only while a head is awaited: a parked poll is not cut at 0.5 s."""
    queue_id = register(small_limits.owner)["queue_id"]
    waiting = Poll(small_limits.owner, queue_id)
    wait_until_parked(small_limits, queue_id)
    time.sleep(1.5)  # three header timeouts
    assert not waiting.done()
    message_id = send_direct(small_limits.owner, [small_limits.owner.id], "after a long wait")
    events = assert_success(waiting.result())["events"]
    assert [(e["type"], e["message"]["id"]) for e in events] == [("message", message_id)]


def test_an_idle_keep_alive_connection_is_closed(small_limits):
    raw = exchange(small_limits, get_head("/api/v1/server_settings"))
    code, headers, _ = parse(raw[: raw.index(b"\r\n\r\n") + 4] + b"{}")
    assert code == 200 and headers.get("Connection") != "close"  # answered, kept alive, then closed


# -- settings ---------------------------------------------------------------------------------------


def test_edge_settings_from_the_environment():
    environ = {
        "TORNCHAT_MAX_BODY_SIZE": "1048576",
        "TORNCHAT_TRUSTED_PROXY": "10.0.0.1, 192.168.0.0/16,::1",
        "TORNCHAT_HEADER_TIMEOUT": "5",
        "TORNCHAT_BODY_TIMEOUT": "30",
    }
    settings = load_settings({}, environ)
    assert settings.max_body_size == 1048576
    assert settings.trusted_proxy == ["10.0.0.1", "192.168.0.0/16", "::1"]
    assert (settings.header_timeout, settings.body_timeout) == (5.0, 30.0)
    defaults = load_settings({}, {})
    assert (defaults.max_body_size, defaults.trusted_proxy) == (25 * 1024 * 1024, [])
    assert (defaults.header_timeout, defaults.body_timeout) == (60.0, 120.0)


def test_edge_flags_win_over_the_environment():
    args = cli.build_parser().parse_args(
        ["serve", "--max-body-size", "2048", "--trusted-proxy", "10.0.0.1", "--trusted-proxy", "10.0.0.2,10.1.0.0/16"]
    )
    settings = cli._settings(args)
    assert settings.max_body_size == 2048
    assert settings.trusted_proxy == ["10.0.0.1", "10.0.0.2", "10.1.0.0/16"]
    environ = {"TORNCHAT_TRUSTED_PROXY": "10.9.9.9"}
    assert load_settings({"trusted_proxy": ["10.0.0.1"]}, environ).trusted_proxy == ["10.0.0.1"]


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"TORNCHAT_TRUSTED_PROXY": "proxy.example.com"}, "invalid trusted proxy 'proxy.example.com'"),
        ({"TORNCHAT_MAX_BODY_SIZE": "0"}, "invalid setting TORNCHAT_MAX_BODY_SIZE: 0 must be positive"),
        ({"TORNCHAT_MAX_BODY_SIZE": "lots"}, "invalid setting"),
        ({"TORNCHAT_BODY_TIMEOUT": "-1"}, "invalid setting TORNCHAT_BODY_TIMEOUT: -1.0 must be a positive number"),
    ],
)
def test_bad_edge_settings_are_refused(environ, message):
    with pytest.raises(ValueError, match=message):
        load_settings({}, environ)


def test_serve_refuses_a_bad_trusted_proxy(tmp_path, capsys):
    assert cli.main(["serve", "--data-dir", str(tmp_path / "data"), "--trusted-proxy", "nonsense"]) == 1
    assert "invalid trusted proxy 'nonsense'" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "data")


def test_settings_struct_defaults():
    settings = Settings()
    assert settings.trusted_proxy_networks == ()
    assert Settings(trusted_proxy=["10.0.0.0/8"]).trusted_proxy_networks[0].num_addresses == 2**24
