"""Fixtures of the tests of tornchat's own modules (tests/tornchat/) that more than one module takes."""

from __future__ import annotations

import pytest

from tests.support.cli_helpers import run
from tests.support.helpers import FakeClock
from tornchat.app import make_app
from tornchat.bootstrap import bootstrap
from tornchat.server import Server
from tornchat.settings import Settings


@pytest.fixture
def initialised(tmp_path):  # type: ignore[no-untyped-def]
    """A data directory made by `tornchat init` (owner boss@example.com, password pw-12345); its path."""
    data_dir = str(tmp_path / "data")
    result = run(
        "init",
        "--data-dir",
        data_dir,
        "--owner-email",
        "boss@example.com",
        "--owner-password",
        "pw-12345",
        "--site",
        "http://chat.example.com",
    )
    assert result.returncode == 0, result.stderr
    return data_dir


@pytest.fixture
def state(tmp_path):  # type: ignore[no-untyped-def]
    """A bootstrapped Server in this process, not listening: (server, owner)."""
    settings = Settings(data_dir=str(tmp_path / "data"), site="http://127.0.0.1:9991")
    owner = bootstrap(settings, "owner@example.com", "pw-123456")
    server = Server(settings, clock=FakeClock())
    yield server, owner
    server.close()


@pytest.fixture
def app(state):  # type: ignore[no-untyped-def]
    """The Tornado application of `state`'s server: pytest-tornado serves it to http_client and base_url."""
    return make_app(state[0])
