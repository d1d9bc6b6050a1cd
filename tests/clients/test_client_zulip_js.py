"""zulip-js (npm, pinned in tests/js/package.json) in Node against a live tornchat, one script per flow.

Each script in tests/js logs in with a password as zulip-js users do and prints its result as JSON.
Node and `npm ci` in tests/js are needed: `.ci/run` does both; locally the tests skip without them.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from tests.support.channel_helpers import make_channel
from tests.support.client_helpers import CLIENT_TIMEOUT, JS_DIR, node_with_zulip_js
from tests.support.helpers import PASSWORD, assert_success

pytestmark = pytest.mark.client


@pytest.fixture
def js(live):
    """Run tests/js/NAME.js as the owner (password login); return its parsed JSON output."""
    node = node_with_zulip_js()
    make_channel(live, "general", [live.owner.id])

    def environment(**extra: str) -> dict[str, str]:
        account = {"ZULIP_USERNAME": "owner@example.com", "ZULIP_PASSWORD": PASSWORD, "ZULIP_REALM": live.base_url}
        return {**os.environ, **account, "CHANNEL": "general", **extra}

    def run(name: str, **extra: str) -> Any:
        result = subprocess.run(
            [node, f"{name}.js"],
            cwd=JS_DIR,
            env=environment(**extra),
            capture_output=True,
            text=True,
            timeout=CLIENT_TIMEOUT,
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    run.node = node  # type: ignore[attr-defined]
    run.environment = environment  # type: ignore[attr-defined]
    return run


def test_password_login_fetches_the_key_and_works(js, live):
    out = js("login")
    assert out["apiKey"] == live.owner.api_key
    assert (out["profile"]["result"], out["profile"]["email"]) == ("success", "owner@example.com")


def test_send_then_read_with_a_narrow(js, live):
    out = js("send_read")
    assert out["sent"]["result"] == "success", out
    read = out["read"]
    assert read["result"] == "success", read
    assert [m["id"] for m in read["messages"]] == [out["sent"]["id"]]
    assert read["messages"][0]["content"] == "<p>hello from <strong>zulip-js</strong></p>"


def test_register_without_parameters(js, live):
    out = js("register")
    assert out["result"] == "success", out
    assert out["queue_id"] and isinstance(out["last_event_id"], int)
    # No fetch_event_types: the whole state, for the user who asked.
    assert out["user_id"] == live.owner.id
    assert any(sub["name"] == "general" for sub in out["subscriptions"])


def test_receive_an_event_by_long_polling(js, live):
    bob = live.make_user()
    process = subprocess.Popen(
        [js.node, "receive_event.js"],
        cwd=JS_DIR,
        env=js.environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("REGISTERED "), (line, process.stderr.read() if process.stderr else "")
        assert_success(bob.post("/messages", {"type": "direct", "to": [live.owner.id], "content": "ping from bob"}))
        out, err = process.communicate(timeout=CLIENT_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    events = json.loads(out.strip().splitlines()[-1])["events"]
    assert [(e["message"]["content"], e["message"]["sender_id"]) for e in events] == [
        ("ping from bob", bob.id)
    ]  # register: apply_markdown defaults to false


def test_topics_of_a_channel(js, live):
    for topic in ("lunch", "design", "lunch"):
        body = {"type": "stream", "to": "general", "topic": topic, "content": "x"}
        assert_success(live.owner.post("/messages", body))
    out = js("topics")
    assert out["result"] == "success", out
    assert [t["name"] for t in out["topics"]] == ["lunch", "design"]
    assert all(isinstance(t["max_id"], int) for t in out["topics"])


def test_render_markdown(js):
    out = js("render")
    assert out["result"] == "success", out
    assert out["rendered"].startswith("<p><strong>bold</strong> and ")
    assert '<span aria-label="wave" class="emoji emoji-1f44b" role="img" title="wave">:wave:</span>' in out["rendered"]
    assert "<code>code</code>" in out["rendered"]
