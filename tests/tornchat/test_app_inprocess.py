"""The application driven in-process through pytest-tornado: access log and auth at the edge."""

from __future__ import annotations

import asyncio
import base64
import logging
import socket

import pytest
import tornado.httputil
import tornado.iostream

from tornchat.app import make_app, make_http_server
from tornchat.http_edge import EdgeLimits, HTTPServer


def auth(owner):
    token = base64.b64encode(f"{owner.delivery_email}:{owner.api_key}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.mark.gen_test
async def test_access_log_line_per_request(http_client, base_url, state, caplog):
    _, owner = state
    with caplog.at_level(logging.INFO, logger="tornchat.access"):
        response = await http_client.fetch(base_url + "/api/v1/users/me?secret=1", headers=auth(owner))
    assert response.code == 200
    [record] = [r for r in caplog.records if r.name == "tornchat.access"]
    method, path, status, millis = record.getMessage().split()
    assert (method, path, status) == ("GET", "/api/v1/users/me", "200")
    assert millis.endswith("ms") and float(millis[:-2]) >= 0
    # Handlers read the fields from the record (tests/support/client_helpers.py's AccessLog does).
    assert record.args[:3] == ("GET", "/api/v1/users/me", 200)


@pytest.mark.gen_test
async def test_last_active_written_at_most_every_fifteen_minutes(http_client, base_url, state):
    server, owner = state
    last_active = lambda: server.db.read(lambda tx: tx.value("SELECT last_active FROM users WHERE id = ?", (owner.id,)))  # noqa: E731
    await http_client.fetch(base_url + "/api/v1/users/me", headers=auth(owner))
    first = last_active()
    assert first == int(server.clock())
    server.clock.advance(60)
    await http_client.fetch(base_url + "/api/v1/users/me", headers=auth(owner))
    assert last_active() == first
    server.clock.advance(15 * 60)
    await http_client.fetch(base_url + "/api/v1/users/me", headers=auth(owner))
    assert last_active() == int(server.clock())


def serve_one_connection(http) -> tuple[tornado.iostream.IOStream, socket.socket]:
    """A TCP connection handed to `http` as its listener would: (the client's stream, the server's socket)."""
    listener = socket.create_server(("127.0.0.1", 0))
    client = tornado.iostream.IOStream(socket.create_connection(listener.getsockname()))
    accepted, address = listener.accept()
    listener.close()
    http.handle_stream(tornado.iostream.IOStream(accepted), address)
    return client, accepted


@pytest.mark.gen_test
async def test_tcp_nodelay_stays_on_between_requests(state):
    """tornchat.http_edge.HTTPServer sets TCP_NODELAY once; Tornado's own server clears it after each request."""
    server, owner = state
    http = make_http_server(server)
    client, accepted = serve_one_connection(http)
    head = "".join(f"{name}: {value}\r\n" for name, value in auth(owner).items())
    try:
        for _ in range(2):
            client.write(f"GET /api/v1/users/me HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}\r\n".encode())
            start, _, fields = (await client.read_until(b"\r\n\r\n")).decode("latin-1").partition("\r\n")
            await client.read_bytes(int(tornado.httputil.HTTPHeaders.parse(fields)["Content-Length"]))
            assert start.split()[1] == "200"
        await asyncio.sleep(0.05)  # the request finishes after its write: Tornado would turn Nagle back on here
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        client.close()
        await http.close_all_connections()


@pytest.mark.gen_test(timeout=10)
async def test_the_header_timeout_closes_a_silent_connection_then_stops_sweeping(state):
    server, _ = state
    edge = EdgeLimits(make_app(server), 1024, header_timeout=0.2)
    http = HTTPServer(edge)
    assert http.conn_params.header_timeout is None  # no timer per request: the sweep keeps the timeout
    client, _ = serve_one_connection(http)
    await asyncio.sleep(0.05)  # the connection's loop starts its first request
    assert edge.sweeper is not None and len(edge.current) == 1
    with pytest.raises(tornado.iostream.StreamClosedError):
        await client.read_bytes(1)  # nothing sent: closed after 0.2-0.25 s
    for _ in range(100):  # the next sweep finds no connection and stops
        if edge.sweeper is None:
            break
        await asyncio.sleep(0.05)
    assert edge.sweeper is None and edge.current == {}
