"""GET /messages without a body (tornchat/direct_get.py) answers exactly as MessagesHandler does.

Each comparison sends the same parameters twice: in the query string of a body-less GET (DirectGet)
and as a form body of a GET (the RequestHandler), then compares status, body and header names.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
from urllib.parse import urlencode

import pytest
import tornado.iostream
from tornado import httputil

from storage.model.errors import ApiError
from storage.org import users
from storage.org.user_changes import deactivate_user
from tornchat.direct_get import carries_body
from tornchat.handlers import messages

PATH = "/api/v1/messages"
NEWEST = {"anchor": "newest", "num_before": "10", "num_after": "0"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
INTERNAL_ERROR = b'{"result":"error","msg":"Internal server error","code":"BAD_REQUEST"}\n'


def auth(email: str, api_key: str, scheme: str = "Basic") -> dict[str, str]:
    token = base64.b64encode(f"{email}:{api_key}".encode()).decode()
    return {"Authorization": f"{scheme} {token}"}


def owner_auth(owner) -> dict[str, str]:
    return auth(owner.delivery_email, owner.api_key)


async def direct(http_client, base_url, params, headers):
    """A GET with the parameters in the query string and no body: DirectGet."""
    query = "?" + urlencode(params) if params else ""
    return await http_client.fetch(base_url + PATH + query, headers=headers, raise_error=False)


async def with_body(http_client, base_url, params, headers, method="GET"):
    """A GET with the parameters as a form body: MessagesHandler."""
    return await http_client.fetch(
        base_url + PATH,
        method=method,
        body=urlencode(params),
        headers={**headers, **FORM},
        allow_nonstandard_methods=True,
        raise_error=False,
    )


async def both(http_client, base_url, params, headers):
    """(direct, handler) responses, asserted identical: status, body, header names."""
    first = await direct(http_client, base_url, params, headers)
    second = await with_body(http_client, base_url, params, headers)
    assert first.code == second.code
    assert first.body == second.body
    assert sorted(first.headers) == sorted(second.headers)
    assert first.headers["Content-Type"] == second.headers["Content-Type"] == "application/json"
    assert {"Server", "Content-Type", "Date", "Content-Length"} <= set(first.headers)
    assert first.headers["Server"] == second.headers["Server"]
    assert first.headers["Content-Length"] == str(len(first.body))
    return first, second


async def post(http_client, base_url, owner, path, params):
    response = await http_client.fetch(
        base_url + "/api/v1" + path, method="POST", body=urlencode(params), headers={**owner_auth(owner), **FORM}
    )
    body = json.loads(response.body)
    assert body["result"] == "success", body
    return body


async def send_messages(http_client, base_url, owner):
    """#general with three messages in two topics, sent through the API; returns their ids."""
    await post(http_client, base_url, owner, "/channels/create", {"name": "general", "subscribers": f"[{owner.id}]"})
    ids = []
    for topic, content in [("greetings", "hello"), ("other", "elsewhere"), ("greetings", "again")]:
        params = {"type": "stream", "to": "general", "topic": topic, "content": content}
        ids.append((await post(http_client, base_url, owner, "/messages", params))["id"])
    return ids


def error_body(response) -> dict:
    body = json.loads(response.body)
    assert body["result"] == "error"
    return body


# -- the same answer both ways ------------------------------------------------------------


@pytest.mark.gen_test
async def test_success_with_a_narrow_is_identical(http_client, base_url, state):
    _, owner = state
    messages_sent = await send_messages(http_client, base_url, owner)
    narrow = json.dumps([{"operator": "channel", "operand": "general"}, {"operator": "topic", "operand": "greetings"}])
    first, _ = await both(http_client, base_url, {**NEWEST, "narrow": narrow}, owner_auth(owner))
    assert first.code == 200
    body = json.loads(first.body)
    assert body["result"] == "success"
    assert [m["id"] for m in body["messages"]] == [messages_sent[0], messages_sent[2]]
    assert "ignored_parameters_unsupported" not in body


@pytest.mark.gen_test
async def test_message_ids_and_repeated_parameters_are_identical(http_client, base_url, state):
    _, owner = state
    messages_sent = await send_messages(http_client, base_url, owner)
    params = [("message_ids", json.dumps(messages_sent[:2])), ("apply_markdown", "true"), ("apply_markdown", "false")]
    first, _ = await both(http_client, base_url, params, owner_auth(owner))
    body = json.loads(first.body)
    assert [m["id"] for m in body["messages"]] == messages_sent[:2]
    assert body["messages"][0]["content"] == "hello"  # the last apply_markdown counts: raw Markdown


@pytest.mark.gen_test
@pytest.mark.parametrize(
    "params, msg, code",
    [
        ({**NEWEST, "num_before": "-1"}, "num_before is too small", "BAD_REQUEST"),
        ({**NEWEST, "num_before": ""}, None, "BAD_REQUEST"),
        ({**NEWEST, "num_after": "x"}, "num_after is not valid JSON", "BAD_REQUEST"),
        ({**NEWEST, "narrow": "not json"}, None, "BAD_REQUEST"),
        ({**NEWEST, "narrow": json.dumps([{"operator": "no-such-operator", "operand": "x"}])}, None, "BAD_NARROW"),
        ({**NEWEST, "anchor": "\udcff"}, None, "BAD_REQUEST"),
        ({**NEWEST, "message_ids": "[1]"}, None, "BAD_REQUEST"),
    ],
    ids=["negative", "blank", "not-int", "narrow-not-json", "narrow-bad-operator", "anchor-bad", "ids-and-anchor"],
)
async def test_parameter_errors_are_identical(http_client, base_url, state, params, msg, code):
    _, owner = state
    await send_messages(http_client, base_url, owner)
    params = {k: v.encode("utf-8", "surrogateescape") for k, v in params.items()}
    first, _ = await both(http_client, base_url, params, owner_auth(owner))
    assert first.code == 400
    body = error_body(first)
    assert body["code"] == code and body["msg"]
    if msg is not None:
        assert body["msg"] == msg


@pytest.mark.gen_test
async def test_unknown_parameters_are_reported_identically(http_client, base_url, state):
    _, owner = state
    await send_messages(http_client, base_url, owner)
    first, _ = await both(http_client, base_url, {**NEWEST, "client": "x", "frobnicate": "1"}, owner_auth(owner))
    assert first.code == 200
    body = json.loads(first.body)
    assert body["ignored_parameters_unsupported"] == ["frobnicate"]
    assert len(body["messages"]) == 3


# -- authentication -----------------------------------------------------------------------


@pytest.mark.gen_test
async def test_no_credentials_is_401_with_a_challenge(http_client, base_url, state):
    first, second = await both(http_client, base_url, NEWEST, {})
    assert first.code == 401
    assert error_body(first) == {
        "result": "error",
        "msg": "Not logged in: API authentication or user session required",
        "code": "UNAUTHORIZED",
    }
    assert first.headers["WWW-Authenticate"] == second.headers["WWW-Authenticate"] == 'Basic realm="zulip"'


@pytest.mark.gen_test
@pytest.mark.parametrize(
    "credentials, status, msg",
    [
        (("owner@example.com", "x" * 32), 401, "Invalid API key"),
        (("nobody@example.com", "x" * 32), 401, "Invalid API key"),
        (("owner@example.com", "short"), 401, "Malformed API key"),
        (("owner@example.com", None, "Bearer"), 400, "This endpoint requires HTTP basic authentication."),
    ],
    ids=["wrong-key", "unknown-user", "malformed-key", "bearer"],
)
async def test_bad_credentials_are_refused_identically(http_client, base_url, state, credentials, status, msg):
    _, owner = state
    email, api_key, *scheme = credentials
    headers = auth(email, api_key or owner.api_key, *scheme)
    first, _ = await both(http_client, base_url, NEWEST, headers)
    assert first.code == status
    assert error_body(first)["msg"] == msg
    assert ("WWW-Authenticate" in first.headers) == (status == 401)


@pytest.mark.gen_test
async def test_malformed_basic_header_is_refused_identically(http_client, base_url, state):
    first, _ = await both(http_client, base_url, NEWEST, {"Authorization": "Basic !!!not-base64"})
    assert first.code == 401
    assert error_body(first)["msg"] == "Invalid authorization header for basic auth"


@pytest.mark.gen_test
async def test_credentials_are_checked_before_parameters(http_client, base_url, state):
    first, _ = await both(http_client, base_url, {**NEWEST, "num_before": "-1"}, auth("owner@example.com", "x" * 32))
    assert first.code == 401
    assert error_body(first)["msg"] == "Invalid API key"


@pytest.mark.gen_test
async def test_deactivated_user_is_refused(http_client, base_url, state):
    server, owner = state
    user = server.db.write(users.create_user, "gone@example.com", "Gone", "pw-654321")
    headers = auth(user.delivery_email, user.api_key)
    assert (await direct(http_client, base_url, NEWEST, headers)).code == 200
    server.db.write(deactivate_user, owner, user.id)
    first, _ = await both(http_client, base_url, NEWEST, headers)
    assert first.code == 401
    assert error_body(first) == {"result": "error", "msg": "Account is deactivated", "code": "UNAUTHORIZED"}


# -- which path answers -------------------------------------------------------------------


@pytest.mark.gen_test
async def test_body_less_get_never_reaches_the_request_handler(http_client, base_url, state, monkeypatch):
    _, owner = state

    def handler_get(self):
        raise ApiError("answered by MessagesHandler", "HANDLER_PATH", 418)

    monkeypatch.setattr(messages.MessagesHandler, "get", handler_get)
    response = await direct(http_client, base_url, NEWEST, owner_auth(owner))
    assert response.code == 200 and json.loads(response.body)["result"] == "success"
    explicit_zero = await http_client.fetch(
        base_url + PATH + "?" + urlencode(NEWEST), headers={**owner_auth(owner), "Content-Length": "0"}
    )
    assert explicit_zero.code == 200
    for response in [
        await with_body(http_client, base_url, NEWEST, owner_auth(owner)),
        await http_client.fetch(base_url + PATH, method="HEAD", headers=owner_auth(owner), raise_error=False),
    ]:
        assert response.code == 418


@pytest.mark.gen_test
async def test_body_less_get_is_answered_by_the_direct_serve(http_client, base_url, app, state, monkeypatch):
    _, owner = state
    calls = []

    def serve(request):
        calls.append(request.method)
        return b'{"result":"success","msg":"direct"}\n'

    monkeypatch.setitem(app.direct_gets, PATH, serve)
    response = await direct(http_client, base_url, NEWEST, owner_auth(owner))
    assert response.body == b'{"result":"success","msg":"direct"}\n'
    assert calls == ["GET"]
    handled = await with_body(http_client, base_url, NEWEST, owner_auth(owner))
    assert json.loads(handled.body)["msg"] == ""
    assert calls == ["GET"]
    # Another path, and another method on this path, never reach it.
    assert (await http_client.fetch(base_url + "/api/v1/users/me", headers=owner_auth(owner))).code == 200
    posted = await with_body(http_client, base_url, {"type": "stream"}, owner_auth(owner), method="POST")
    assert posted.code == 400
    assert calls == ["GET"]


@pytest.mark.gen_test
async def test_head_is_answered_by_the_handler_without_a_body(http_client, base_url, state, monkeypatch):
    _, owner = state
    await send_messages(http_client, base_url, owner)
    handler_calls = []
    original = messages.MessagesHandler.get

    def counting_get(self):
        handler_calls.append(self.request.method)
        return original(self)

    monkeypatch.setattr(messages.MessagesHandler, "get", counting_get)
    url = base_url + PATH + "?" + urlencode(NEWEST)
    got = await http_client.fetch(url, headers=owner_auth(owner))
    assert handler_calls == []
    head = await http_client.fetch(url, method="HEAD", headers=owner_auth(owner))
    assert handler_calls == ["HEAD"]
    assert head.code == 200 and head.body == b""
    assert head.headers["Content-Type"] == "application/json"
    assert head.headers["Content-Length"] == str(len(got.body))
    refused = await http_client.fetch(url, method="HEAD", raise_error=False)
    assert refused.code == 401 and refused.body == b""


# -- failures, logging, side effects -------------------------------------------------------


@pytest.mark.gen_test
async def test_unexpected_exception_is_a_logged_500(http_client, base_url, state, monkeypatch, caplog):
    _, owner = state
    await send_messages(http_client, base_url, owner)

    def broken(*args, **kwargs):
        raise RuntimeError("boom in the page")

    monkeypatch.setattr(messages, "get_messages", broken)
    with caplog.at_level(logging.ERROR, logger="tornchat"):
        first, _ = await both(http_client, base_url, NEWEST, owner_auth(owner))
    assert first.code == 500
    assert first.body == INTERNAL_ERROR
    errors = [r for r in caplog.records if r.name == "tornchat" and r.levelno == logging.ERROR]
    assert len(errors) == 2  # one per path
    for record in errors:
        text = record.getMessage()
        assert text.startswith("Uncaught exception GET /api/v1/messages")
        assert "RuntimeError: boom in the page" in text
    monkeypatch.undo()
    after = await direct(http_client, base_url, NEWEST, owner_auth(owner))
    assert after.code == 200 and len(json.loads(after.body)["messages"]) == 3


@pytest.mark.gen_test
async def test_one_access_log_record_per_direct_request(http_client, base_url, state, caplog):
    _, owner = state
    with caplog.at_level(logging.INFO, logger="tornchat.access"):
        await direct(http_client, base_url, NEWEST, owner_auth(owner))
        [ok] = [r for r in caplog.records if r.name == "tornchat.access"]
        caplog.clear()
        await direct(http_client, base_url, NEWEST, {})
        [refused] = [r for r in caplog.records if r.name == "tornchat.access"]
    assert ok.args[:3] == ("GET", PATH, 200)
    assert refused.args[:3] == ("GET", PATH, 401)
    method, path, status, millis = ok.getMessage().split()
    assert (method, path, status) == ("GET", PATH, "200")
    assert millis.endswith("ms") and float(millis[:-2]) >= 0


def last_active(server, user_id):
    return server.db.read(lambda tx: tx.value("SELECT last_active FROM users WHERE id = ?", (user_id,)))


@pytest.mark.gen_test
async def test_last_active_written_by_direct_get(http_client, base_url, state):
    server, owner = state
    await direct(http_client, base_url, NEWEST, owner_auth(owner))
    first = last_active(server, owner.id)
    assert first == int(server.clock())
    server.clock.advance(60)
    await direct(http_client, base_url, NEWEST, owner_auth(owner))
    assert last_active(server, owner.id) == first
    server.clock.advance(15 * 60)
    await direct(http_client, base_url, NEWEST, owner_auth(owner))
    assert last_active(server, owner.id) == int(server.clock())


@pytest.mark.gen_test
@pytest.mark.parametrize("path", ["handler", "direct"])
async def test_last_active_written_by_an_authenticated_request_with_bad_parameters(http_client, base_url, state, path):
    server, owner = state
    send = with_body if path == "handler" else direct
    response = await send(http_client, base_url, {**NEWEST, "num_before": "-1"}, owner_auth(owner))
    assert response.code == 400
    assert last_active(server, owner.id) == int(server.clock())


# -- the connection -----------------------------------------------------------------------


@pytest.mark.gen_test
async def test_keep_alive_connection_serves_requests_after_a_direct_answer(http_server, http_port, state):
    _, owner = state
    stream = tornado.iostream.IOStream(socket.socket())
    await stream.connect(("127.0.0.1", http_port))
    head = "".join(f"{name}: {value}\r\n" for name, value in owner_auth(owner).items())
    query = urlencode(NEWEST)
    try:
        for path in [f"{PATH}?{query}", f"{PATH}?{query}&num_before=-1", "/api/v1/users/me", f"{PATH}?{query}"]:
            stream.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}\r\n".encode())
            start, _, fields = (await stream.read_until(b"\r\n\r\n")).decode("latin-1").partition("\r\n")
            headers = httputil.HTTPHeaders.parse(fields)
            body = await stream.read_bytes(int(headers["Content-Length"]))
            assert start.split()[1] == ("400" if "-1" in path else "200"), body
            assert "Connection" not in headers or headers["Connection"].lower() != "close"
    finally:
        stream.close()


# -- carries_body ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers, expected",
    [
        ({}, False),
        ({"Content-Length": "0"}, False),
        ({"Content-Length": " 0 "}, False),
        ({"Content-Length": "5"}, True),
        ({"Transfer-Encoding": "chunked"}, True),
        ({"Content-Length": "0", "Transfer-Encoding": "chunked"}, True),
        ({"Content-Type": "application/x-www-form-urlencoded"}, False),
    ],
)
def test_carries_body(headers, expected):
    assert carries_body(httputil.HTTPHeaders(headers)) is expected
