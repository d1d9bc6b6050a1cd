"""Take README's screenshot of the web client: `python -m tests.browser.screenshot [PATH]` (docs/screenshot.png).

A fresh server in a temporary directory, a small team and a conversation, the owner signed in with
Debian's chromium at 1280x800, the #design channel open. Emoji need a colour emoji font
(Debian: fonts-noto-color-emoji).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from tests.browser.helpers import DESKTOP, Browser, start_playwright
from tests.support.channel_helpers import make_channel
from tests.support.helpers import LiveServer, assert_success
from tests.support.paths import REPO
from tests.support.send_helpers import send_ok

DEFAULT_PATH = os.path.join(REPO, "docs", "screenshot.png")
CONVERSATION = [
    ("ana", "logo", "The new logo is in the shared folder: two colours, and it works at 16 px."),
    ("ben", "logo", "Looks great! Could the blue be a touch **darker** for contrast?"),
    ("owner", "logo", "Agreed. @**Ana Silva** can you try `#1d4ed8`?"),
    ("ana", "logo", "Done, updated both files:\n- logo.svg\n- logo-dark.svg"),
    ("ben", "launch page", "Draft of the launch page copy is ready for review."),
    ("owner", "launch page", "Thanks, I'll read it after lunch."),
]


def seed(live: LiveServer) -> dict[str, int]:
    """Two colleagues, three channels, a conversation with a reaction; returns the channel ids."""
    people = {
        "owner": live.owner,
        "ana": live.make_user(email="ana@example.com", full_name="Ana Silva"),
        "ben": live.make_user(email="ben@example.com", full_name="Ben Okafor"),
    }
    everyone = [client.id for client in people.values()]
    channels = {name: make_channel(live, name, everyone) for name in ("design", "general", "releases")}
    send_ok(people["ben"], "general", "Welcome to the team chat!", topic="hello")
    send_ok(people["ana"], "releases", "Version 2.1 is tagged.", topic="2.1")
    ids = [send_ok(people[who], "design", content, topic=topic) for who, topic, content in CONVERSATION]
    assert_success(people["ben"].post(f"/messages/{ids[3]}/reactions", {"emoji_name": "tada"}))
    assert_success(people["owner"].post(f"/messages/{ids[3]}/reactions", {"emoji_name": "tada"}))
    return channels


def take(path: str) -> None:
    with tempfile.TemporaryDirectory(prefix="tornchat-screenshot-") as directory:
        live = LiveServer(os.path.join(directory, "data"))
        live.clock.now = float(int(time.time()))
        playwright = start_playwright()
        try:
            channels = seed(live)
            browser = Browser(playwright, live)
            page = browser.sign_in("owner@example.com", viewport=DESKTOP)
            design = page.locator(f'[data-testid="channel-item"][data-stream-id="{channels["design"]}"]')
            design.locator("button").first.click()
            page.get_by_text("logo-dark.svg").wait_for()
            design.get_by_test_id("unread-count").filter(has_text="6").wait_for(state="detached")  # read as seen
            page.get_by_test_id("compose-content").click()
            page.screenshot(path=path)
            browser.close()
        finally:
            playwright.stop()
            live.stop()
    print(f"wrote {path}")


if __name__ == "__main__":
    take(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_PATH)
