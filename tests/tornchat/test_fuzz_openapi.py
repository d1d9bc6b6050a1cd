"""Schemathesis against the OpenAPI document, as every role: no 5xx, and every answer is the JSON envelope.

Each role gets its own server (users of every role, channels, messages and the other things ids
name), so what one role's requests change cannot spoil another's run. Path ids are drawn small so
that they hit those rows. The run is bounded and derandomized: a few examples per operation and
mode (valid and invalid input) after Schemathesis's coverage phase (boundary values, each parameter
left out), no deadline, no example database.
"""

from __future__ import annotations

import copy
import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis

from tests.support.helpers import Client, LiveServer, assert_success, data_dir_for
from tornchat.openapi import generate
from tornchat.routes import ROUTES

FORM = "application/x-www-form-urlencoded"
ROLES = ["owner", "admin", "moderator", "member", "guest", "bot"]
# Path ids are drawn from 0..SMALL_ID, where the rows each server starts with live.
SMALL_ID = 40
EXAMPLES_PER_OPERATION = 8
# Calls that would take the fuzzing account out of the run (deactivating oneself or a chosen id).
EXCLUDED = [("DELETE", "/users/me"), ("DELETE", "/users/{user_id}")]
REQUEST_TIMEOUT = 30


def fuzz_document() -> dict[str, Any]:
    document = copy.deepcopy(generate(ROUTES))
    for item in document["paths"].values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path" and parameter["schema"].get("type") == "integer":
                    parameter["schema"]["maximum"] = SMALL_ID
    return document


DOCUMENT = fuzz_document()
CONFIG = schemathesis.Config.from_dict(
    {
        "seed": 10,
        "generation": {
            "mode": "all",
            "max-examples": EXAMPLES_PER_OPERATION,
            "deterministic": True,
            "database": "none",
        },
        "phases": {
            "examples": {"enabled": False},
            # Boundary values and each parameter left out, once; methods no path takes are test_envelope's.
            "coverage": {"enabled": True, "unexpected-methods": []},
            "stateful": {"enabled": False},
        },
    }
)
schema = schemathesis.openapi.from_dict(DOCUMENT, config=CONFIG)
for method, path in EXCLUDED:
    schema = schema.exclude(method=method, path=path)


def _json_encoded(case: Any) -> set[str]:
    """The body parameters this operation takes as JSON text (the document's `encoding`)."""
    operation = DOCUMENT["paths"][case.path].get(case.method.lower(), {})
    return set(operation.get("requestBody", {}).get("content", {}).get(FORM, {}).get("encoding", {}))


@schemathesis.serializer(FORM)
def form_serializer(ctx: Any, value: Any) -> bytes:
    """Form bodies as the API takes them: strings as they are, other values as JSON text.

    Text that is not valid UTF-8 (lone surrogates) goes out as such bytes: the server must cope.
    """
    if not isinstance(value, dict):
        return json.dumps(value).encode()
    encoded = _json_encoded(ctx.case)
    pairs = []
    for name, item in value.items():
        text = item if isinstance(item, str) and name not in encoded else json.dumps(item)
        pairs.append((name.encode("utf-8", "surrogatepass"), text.encode("utf-8", "surrogatepass")))
    return urllib.parse.urlencode(pairs).encode()


def make_bot(live: LiveServer) -> Client:
    """A generic bot owned by the owner: tornchat has no API to create bots, so storage makes one."""
    member = live.make_user("member", full_name="Fuzz Bot")
    owner_id = live.owner.id
    live.write(
        lambda tx: tx.execute(
            "UPDATE users SET is_bot = 1, bot_type = 1, bot_owner_id = ? WHERE id = ?", (owner_id, member.id)
        )
    )
    return member


def seed(live: LiveServer) -> dict[str, Client]:
    """Users of every role and a few rows of each kind a path id can name."""
    clients = {"owner": live.owner}
    clients.update({role: live.make_user(role) for role in ROLES[1:-1]})
    clients["bot"] = make_bot(live)
    owner = live.owner
    everyone = [client.id for client in clients.values()]
    for name, private in (("general", False), ("random", False), ("secret", True)):
        subscriptions = [{"name": name, "description": f"The {name} channel"}]
        params = {"subscriptions": subscriptions, "principals": everyone, "invite_only": private}
        assert_success(owner.post("/users/me/subscriptions", params))
    for n in range(6):
        channel = ("general", "random", "secret")[n % 3]
        content = f"message {n} with **markdown** and @**all**"
        assert_success(
            owner.post("/messages", {"type": "stream", "to": channel, "topic": f"topic {n}", "content": content})
        )
    for client in clients.values():
        assert_success(client.post("/messages", {"type": "direct", "to": [owner.id], "content": "hello"}))
    assert_success(
        owner.post("/drafts", {"drafts": [{"type": "private", "to": [owner.id], "topic": "", "content": "draft"}]})
    )
    assert_success(owner.post("/saved_snippets", {"title": "snippet", "content": "text"}))
    return clients


@pytest.fixture(scope="module", params=ROLES)
def fuzz_client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    """A server of its own and the client of one role on it."""
    live = LiveServer(data_dir_for(tmp_path_factory.mktemp(f"fuzz-{request.param}")))
    try:
        clients = seed(live)
        yield clients[request.param]
        still_active = live.user(clients[request.param].id).is_active
        assert still_active, "the fuzzing account was deactivated: the rest of its run was meaningless"
    finally:
        live.stop()


def assert_envelope(case: Any, response: Any) -> None:
    assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.status_code} {response.text}"
    assert response.headers.get("content-type", [""])[0].startswith("application/json"), response.headers
    body = json.loads(response.content)
    if case.path == "/openapi.json" and response.status_code == 200:
        assert "paths" in body
        return
    assert body.get("result") in ("success", "error"), body
    assert isinstance(body.get("msg"), str), body
    if response.status_code == 405:  # a path argument chose another route (/users/{email}): Zulip's 405
        assert body["result"] == "error" and isinstance(body.get("allowed_methods"), list), body
    elif body["result"] == "error":
        assert response.status_code >= 400 and isinstance(body.get("code"), str), (response.status_code, body)
    else:
        assert response.status_code == 200, (response.status_code, body)


@schema.parametrize()
def test_no_server_error_and_always_the_envelope(case: Any, fuzz_client: Client) -> None:
    response = case.call(
        base_url=fuzz_client.base_url + "/api/v1", session=fuzz_client.session, timeout=REQUEST_TIMEOUT
    )
    assert_envelope(case, response)
