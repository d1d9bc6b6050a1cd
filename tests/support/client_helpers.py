"""Running real Zulip clients against a live tornchat: where they are installed, tmux, the server's answers,
and zulip-terminal's Model driven directly (Driver, tests/support/zt_model_driver.py).

A client that is not installed skips its tests locally; CI (`.ci/run`) installs every client and
sets TORNCHAT_REQUIRE_CLIENTS=1, under which a missing client fails instead.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.helpers import LiveServer
from tests.support.paths import REPO
from tornchat.bootstrap import write_zuliprc

# Where `.ci/run` (and a developer following README) puts the clients when no variable names them.
CLIENTS_DIR = os.path.join(REPO, ".clients")
JS_DIR = os.path.join(REPO, "tests", "js")
# zulip-terminal's Model, run by zulip-terminal's Python (see Driver).
ZT_MODEL_DRIVER = os.path.join(REPO, "tests", "support", "zt_model_driver.py")
# How long a client gets to show something on its screen or finish a step.
CLIENT_TIMEOUT = 30.0
_sessions = itertools.count(1)


def clients_required() -> bool:
    return os.environ.get("TORNCHAT_REQUIRE_CLIENTS") == "1"


def client_missing(reason: str) -> None:
    """Skip (locally) or fail (in CI, TORNCHAT_REQUIRE_CLIENTS=1) because a client is not installed."""
    if clients_required():
        pytest.fail(f"{reason} (TORNCHAT_REQUIRE_CLIENTS=1: .ci/run installs it)")
    pytest.skip(reason)


def zulip_term_path() -> str:
    """The zulip-term executable: $TORNCHAT_ZULIP_TERM, else .clients/zulip-term/bin/zulip-term."""
    path = os.environ.get("TORNCHAT_ZULIP_TERM") or os.path.join(CLIENTS_DIR, "zulip-term", "bin", "zulip-term")
    if not os.access(path, os.X_OK):
        client_missing(f"zulip-terminal is not installed at {path} (set TORNCHAT_ZULIP_TERM)")
    if shutil.which("tmux") is None:
        client_missing("tmux is not installed")
    return path


def node_with_zulip_js() -> str:
    """The node executable, once tests/js/node_modules holds zulip-js (npm ci in tests/js)."""
    node = shutil.which("node")
    if node is None:
        client_missing("node is not installed")
    assert node is not None
    if not os.path.isdir(os.path.join(JS_DIR, "node_modules", "zulip-js")):
        client_missing("zulip-js is not installed: run `npm ci` in tests/js")
    return node


class Tmux:
    """A program in a detached tmux session of a fixed size, on a tmux server of its own."""

    def __init__(self, width: int = 200, height: int = 50) -> None:
        self.socket = f"tornchat-test-{os.getpid()}-{next(_sessions)}"
        self.width, self.height = width, height
        self.started = False
        self.stderr_path: str | None = None  # set by callers that send the program's stderr to a file

    def _tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        # The tmux server, and so the client, get this environment without pytest's variables:
        # zulip-terminal runs its threads inline when it sees PYTEST_CURRENT_TEST, and hangs.
        env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST")}
        command = ["tmux", "-L", self.socket, "-f", "/dev/null", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=20, env=env)

    def start(self, command: list[str], cwd: str, env: dict[str, str], stderr: str | None = None) -> None:
        """Run the command in the session; stderr: a file for what it writes there (else the screen)."""
        shell_command = " ".join(shlex.quote(part) for part in command)
        if stderr is not None:
            shell_command += " 2>" + shlex.quote(stderr)
        size = ["-x", str(self.width), "-y", str(self.height)]
        environment = [item for name, value in env.items() for item in ("-e", f"{name}={value}")]
        result = self._tmux("new-session", "-d", "-s", "client", *size, "-c", cwd, *environment, shell_command)
        assert result.returncode == 0, result.stderr
        self.started = True
        # Keep the pane when the program exits, so that a crash stays on screen for the assertion.
        self._tmux("set-option", "-t", "client", "remain-on-exit", "on")

    def screen(self) -> str:
        result = self._tmux("capture-pane", "-p", "-t", "client")
        return result.stdout

    def keys(self, *keys: str) -> None:
        """Press keys by tmux's names (`Enter`, `Escape`, `C-s`, `Tab`); each name is one key."""
        for key in keys:
            assert self._tmux("send-keys", "-t", "client", key).returncode == 0

    def type(self, text: str) -> None:
        """Type text literally."""
        assert self._tmux("send-keys", "-t", "client", "-l", text).returncode == 0

    def wait_for(self, check: str | Callable[[str], bool], timeout: float = CLIENT_TIMEOUT) -> str:
        """Poll the screen until it shows `check` (text) or `check(screen)` holds; return that screen."""
        predicate = (lambda screen: check in screen) if isinstance(check, str) else check
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never showed {check!r}; it shows:\n{screen}")
            time.sleep(0.1)

    def close(self) -> None:
        if self.started:
            self._tmux("kill-server")


def wait_until(predicate: Callable[[], Any], what: str, timeout: float = CLIENT_TIMEOUT) -> Any:
    """Poll (bounded) for something an external client does; return the first truthy value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


class AccessLog(logging.Handler):
    """Every request the live server answered: (method, path, status)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, str, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        method, path, status = record.args[:3]  # type: ignore[index]
        self.requests.append((str(method), str(path), int(status)))

    def failures(self) -> list[tuple[str, str, int]]:
        """Requests answered with an error (4xx or 5xx)."""
        return [request for request in self.requests if request[2] >= 400]


class Driver:
    """zulip-terminal's Model for the owner, in a subprocess speaking JSON lines."""

    def __init__(self, live: LiveServer, tmp_path: Any) -> None:
        python = os.path.join(os.path.dirname(zulip_term_path()), "python")
        if not os.access(python, os.X_OK):
            client_missing(f"no Python beside zulip-term at {python} (a virtualenv, as .ci/run makes)")
        zuliprc = str(tmp_path / "zuliprc")
        write_zuliprc(zuliprc, "owner@example.com", live.owner.api_key, live.base_url)
        env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST")}
        self.process = subprocess.Popen(
            [python, ZT_MODEL_DRIVER, zuliprc], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.registered = self._read()

    def _read(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the driver ended (exit status {self.process.wait(timeout=10)})"
        return json.loads(line)

    def ask(self, command: str) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._read()

    def poll(self) -> list[dict[str, Any]]:
        """Dispatch every queued event; fail on any handler's exception; return the events' results."""
        results = self.ask("poll")
        errors = [(r["type"], r["event"], r["error"]) for r in results if r["error"]]
        assert errors == [], "\n".join(f"{kind} {event}\n{error}" for kind, event, error in errors)
        return results

    def state(self) -> dict[str, Any]:
        return self.ask("state")

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        if self.process.poll() is None:
            self.process.stdin.write("quit\n")
        self.process.stdin.close()
        self.process.wait(timeout=20)
        self.process.stdout.close()
