"""zulip-terminal 0.7.0, unchanged, in tmux against a live tornchat: what a person does in a day's chat.

The client runs in its own virtualenv (it pins old packages; `.ci/run` installs it, see
tests/support/client_helpers.py). Each test starts it on a seeded organization, presses the keys its
config/keys.py binds, and asserts on the captured screen and on the server's state. Every test also
asserts that no request the client made was answered with an error: zulip-terminal shows those in
its footer ("Not Found") and otherwise goes on, so the screen alone would not tell.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.client_helpers import Tmux, wait_until
from tests.support.events_helpers import send_direct, send_stream
from tests.support.helpers import LiveServer, assert_success
from tests.support.zulip_terminal_helpers import Terminal, assert_no_errors, seed, start_terminal
from tornchat.bootstrap import write_zuliprc

pytestmark = pytest.mark.client

HEADER = "Owner (owner@example.com) - "


# -- startup and reading ------------------------------------------------------------------------


def test_it_starts_and_shows_channels_and_messages(terminal):
    screen = terminal.tmux.wait_for("# design")
    assert "has crashed" not in screen
    assert HEADER in screen
    for text in ("# general", "lunch at one", "the usual place", "the logo is blue", "hello owner", "Bob Builder"):
        assert text in screen, text
    assert "EDITED" in screen  # the edited message is marked


def test_nothing_it_asks_for_at_startup_fails(terminal, access_log):
    terminal.tmux.wait_for("# design")
    # Startup: server settings, the first messages, register, presence, the event long-poll.
    wait_until(lambda: any(path.endswith("/users/me/presence") for _, path, _ in access_log.requests), "no presence")
    assert_no_errors(terminal, access_log)


def test_it_shows_a_message_another_user_sends_while_it_runs(terminal, access_log):
    terminal.tmux.wait_for("# design")
    send_stream(terminal.bob, "design", "or maybe green", topic="logo")
    terminal.tmux.wait_for("or maybe green")
    send_direct(terminal.bob, [1], "are you there?")
    terminal.tmux.wait_for("are you there?")


# -- writing ------------------------------------------------------------------------------------


def test_it_sends_to_a_channel(terminal, access_log):
    tmux = terminal.tmux
    terminal.open_messages()
    tmux.keys("c")
    tmux.wait_for("\u2717 ")  # the empty stream box of the compose area
    tmux.type("general")
    tmux.keys("Tab")
    tmux.type("from the terminal")
    tmux.keys("Tab")
    tmux.type("written in zulip-terminal")
    tmux.keys("C-d")
    sent = wait_until(
        lambda: [m for m in terminal.messages() if m["content"] == "written in zulip-terminal"], "never sent"
    )
    assert (sent[0]["display_recipient"], sent[0]["subject"]) == ("general", "from the terminal")
    tmux.wait_for("general \u25b6  from the terminal")
    tmux.keys("Escape")
    assert_no_errors(terminal, access_log)


def test_it_sends_to_a_person(terminal, access_log):
    tmux = terminal.tmux
    terminal.open_messages()
    tmux.keys("x")
    tmux.wait_for("To:")
    tmux.type("Bob Builder <bob@example.com>")
    tmux.keys("Tab")
    tmux.type("psst, bob")  # typing in a direct message also sends typing notifications
    tmux.keys("C-d")
    sent = wait_until(lambda: [m for m in terminal.messages() if m["content"] == "psst, bob"], "never sent")
    assert sent[0]["type"] == "private"
    assert sorted(r["email"] for r in sent[0]["display_recipient"]) == ["bob@example.com", "owner@example.com"]
    tmux.keys("Escape")
    tmux.wait_for(lambda screen: screen.count("psst, bob") >= 1 and "To: Bob Builder" not in screen)
    assert_no_errors(terminal, access_log)


def test_it_stars_a_message(terminal, access_log):
    tmux = terminal.tmux
    terminal.open_messages()
    tmux.keys("*")
    starred = wait_until(lambda: [m["id"] for m in terminal.messages() if "starred" in m["flags"]], "never starred")
    assert starred == [terminal.edited]
    tmux.wait_for(lambda screen: any(line.startswith(" Starred messages [f]      1") for line in screen.splitlines()))
    tmux.keys("C-s")  # the other binding unstars it
    wait_until(lambda: not any("starred" in m["flags"] for m in terminal.messages()), "never unstarred")
    assert_no_errors(terminal, access_log)


@pytest.mark.parametrize("name", ["big_smile", "heart_box"])
def test_it_reacts_with_an_emoji_only_zulip_names(terminal, access_log, name):
    tmux = terminal.tmux
    terminal.open_messages()
    tmux.keys(":")
    tmux.wait_for("Search [p]:")
    tmux.type(name)
    tmux.wait_for(f"Search [p]: {name} ")
    tmux.keys("Enter")  # to the results
    tmux.wait_for(f"Search Results  {name}")
    tmux.keys("Enter")  # select the first one
    tmux.wait_for("\u2713 1")
    tmux.keys("Escape")  # the picker sends its selection when it closes
    reactions = wait_until(
        lambda: [r for m in terminal.messages() if m["id"] == terminal.edited for r in m["reactions"]], "no reaction"
    )
    assert [(r["emoji_name"], r["user_id"]) for r in reactions] == [(name, terminal.live.owner.id)]
    tmux.wait_for(f":{name}: You")
    assert_no_errors(terminal, access_log)


# -- files --------------------------------------------------------------------------------------


def test_it_downloads_a_file_another_user_linked(terminal, access_log, tmp_path):
    # Bob uploads a file and links it; zulip-terminal's message info popup lists the link, and Enter on
    # it downloads the file with the owner's credentials (HTTP Basic) into TMPDIR.
    part = ("notes.txt", b"minutes of the meeting\n", "text/plain")
    response = terminal.bob.session.post(terminal.live.base_url + "/api/v1/user_uploads", files={"file": part})
    url = assert_success(response)["url"]
    send_stream(terminal.bob, "design", f"the notes: [notes.txt]({url})", topic="logo")
    tmux = terminal.tmux
    tmux.wait_for("the notes: notes.txt")
    terminal.open_messages()
    tmux.keys("G")  # the newest message: Bob's link
    tmux.keys("i")
    tmux.wait_for("Message Links")
    tmux.keys("Enter")  # the popup's first selectable line: the link
    tmux.wait_for(lambda screen: "Downloaded notes.txt" in screen.splitlines()[-1])
    assert ("GET", url, 200) in access_log.requests
    saved = wait_until(lambda: list(tmp_path.glob("zt-*-notes.txt")), "no downloaded file")
    assert saved[0].read_bytes() == b"minutes of the meeting\n"
    # Then it asks whether to open the file with xdg-open: decline, whether or not that tool exists.
    tmux.wait_for("Do you want the application to open it with xdg-open?")
    tmux.keys("Escape")  # No
    tmux.wait_for(lambda screen: "Do you want the application" not in screen)
    assert_no_errors(terminal, access_log)


# -- topics and edit history --------------------------------------------------------------------


def test_it_opens_a_channels_topic_list(terminal, access_log):
    tmux = terminal.tmux
    tmux.wait_for("# design")
    tmux.keys("q")  # search channels
    tmux.type("gen")
    tmux.keys("Enter")  # into the filtered list, on #general
    tmux.keys("t")
    screen = tmux.wait_for("Topics")
    assert "lunch" in screen
    requests = [path for method, path, _ in access_log.requests if method == "GET"]
    assert f"/api/v1/users/me/{terminal.general}/topics" in requests
    assert_no_errors(terminal, access_log)


def test_it_shows_a_messages_edit_history(terminal, access_log):
    tmux = terminal.tmux
    terminal.open_messages()
    tmux.keys("i")
    tmux.wait_for("Edit History")
    tmux.keys("e")
    screen = tmux.wait_for(lambda s: "lunch at noon" in s or "Could not find" in s)
    assert "Could not find any message history" not in screen
    assert "lunch at one" in screen
    assert_no_errors(terminal, access_log)


def test_zuliprc_fixture_is_private(tmp_path, live):
    # The zuliprc the tests hand zulip-terminal is the one `tornchat` writes: mode 600.
    path = str(tmp_path / "rc")
    write_zuliprc(path, "owner@example.com", live.owner.api_key, live.base_url)
    assert os.stat(path).st_mode & 0o777 == 0o600


# -- presence, typing, muted topics -----------------------------------------------------------------


@contextmanager
def running_terminal(live: LiveServer, tmp_path, log) -> Iterator[Tmux]:  # type: ignore[no-untyped-def]
    """zulip-terminal started on what the test seeded, closed after the block; no request of it failed."""
    tmux = start_terminal(live, tmp_path)
    try:
        yield tmux
    finally:
        tmux.close()
    assert log.failures() == []


def users_column(screen: str) -> str:
    """The right-hand column (the user list) of each line."""
    return "\n".join(line.rsplit("\u2502", 1)[-1] for line in screen.splitlines() if "\u2502" in line)


def test_it_lists_who_is_online(live, tmp_path, access_log):
    # Bob reports himself active before zulip-terminal starts: its user list shows him.
    bob, _, _ = seed(live)
    assert_success(bob.post("/users/me/presence", {"status": "active", "new_user_input": "true"}))
    with running_terminal(live, tmp_path, access_log) as tmux:
        # zulip-terminal marks active users with a full circle (idle and offline ones with others).
        tmux.wait_for(lambda screen: " \u25cf Bob Builder" in users_column(screen))


def test_it_shows_that_someone_is_typing(terminal, access_log):
    tmux = terminal.tmux
    terminal.open_messages()
    tmux.keys("G")  # the last message: Bob's direct message
    tmux.keys("S")  # narrow to that conversation
    tmux.wait_for(lambda screen: "hello owner" in screen and "the logo is blue" not in screen)
    assert_success(terminal.bob.post("/typing", {"op": "start", "to": [terminal.live.owner.id]}))
    tmux.wait_for(lambda screen: "Bob Builder  is typing" in screen.splitlines()[-1])
    assert_no_errors_but_typing(terminal, access_log)


def assert_no_errors_but_typing(terminal: Terminal, log) -> None:  # type: ignore[no-untyped-def]
    assert log.failures() == []
    assert "rror" not in terminal.tmux.screen().splitlines()[-1]


def test_it_hides_a_muted_topic(live, tmp_path, access_log):
    bob, general, _ = seed(live)
    send_stream(bob, "general", "blah blah", topic="noise")
    send_stream(bob, "general", "after it", topic="lunch")
    request = {"stream_id": general, "topic": "noise", "visibility_policy": 1}
    assert_success(live.owner.post("/user_topics", request))
    with running_terminal(live, tmp_path, access_log) as tmux:
        screen = tmux.wait_for("after it")  # shown below where the muted message would be
        assert "blah blah" not in screen
