from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import zulip

from tests.support.channel_helpers import make_channel
from tests.support.helpers import LiveServer, NextServer, data_dir_for
from tests.support.push_bouncer import StandInBouncer
from tests.support.push_helpers import push_server, stop_server
from tornchat.bootstrap import write_zuliprc


@pytest.fixture
def live(tmp_path) -> Iterator[LiveServer]:  # type: ignore[no-untyped-def]
    """A fresh server on a fresh temporary database, owned by owner@example.com."""
    server = LiveServer(data_dir_for(tmp_path))
    yield server
    server.stop()


@pytest.fixture
def gravatar_live(tmp_path) -> Iterator[LiveServer]:  # type: ignore[no-untyped-def]
    """A fresh server like `live`, started with --enable-gravatar (avatars of users without an upload are Gravatars)."""
    server = LiveServer(data_dir_for(tmp_path), enable_gravatar=True)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shared_live(tmp_path_factory) -> Iterator[LiveServer]:  # type: ignore[no-untyped-def]
    """One server for every test of a module, on what the module's own (autouse) fixture puts in it:
    for tests that do not disturb one another, where a fresh `live` each would cost a start each."""
    server = LiveServer(data_dir_for(tmp_path_factory.mktemp("shared")))
    yield server
    server.stop()


@pytest.fixture
def general(live) -> int:  # type: ignore[no-untyped-def]
    """A public channel "general" the owner is subscribed to; its id."""
    return make_channel(live, "general", [live.owner.id])


@pytest.fixture
def people(live):  # type: ignore[no-untyped-def]
    """Alice and Bob beside the owner, all three in "general": the live server, with .alice, .bob
    and .channel_id set."""
    live.alice = live.make_user(email="alice@example.com", full_name="Alice")
    live.bob = live.make_user(email="bob@example.com", full_name="Bob")
    live.channel_id = make_channel(live, "general", [live.owner.id, live.alice.id, live.bob.id])
    return live


@pytest.fixture
def zulip_client(live, tmp_path):  # type: ignore[no-untyped-def]
    """The official zulip client, configured from a zuliprc for the live server's owner."""
    path = os.path.join(str(tmp_path), "zuliprc-live")
    write_zuliprc(path, "owner@example.com", live.owner.api_key, live.base_url)
    return zulip.Client(config_file=path)


@pytest.fixture
def restart(live):  # type: ignore[no-untyped-def]
    """Call to shut the live server down gracefully and start the next one on its data directory."""
    started: list[NextServer] = []

    def run() -> NextServer:
        live.call(live.server.shutdown)
        started.append(NextServer(live))
        return started[-1]

    yield run
    for server in started:
        server.stop()


@pytest.fixture
def bouncer() -> Iterator[StandInBouncer]:
    """The stand-in push bouncer; its clock is set to the live servers' fake clock by push_live."""
    running = StandInBouncer()
    yield running
    running.close()


@pytest.fixture
def push_live(tmp_path, bouncer: StandInBouncer) -> Iterator[LiveServer]:
    """A fresh server registered with the stand-in push bouncer (sharing the server's fake clock)."""
    server = push_server(data_dir_for(tmp_path), bouncer)
    yield server
    stop_server(server, bouncer)
