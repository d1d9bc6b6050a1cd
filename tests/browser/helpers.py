"""The web client in a real browser: Debian's chromium driven by Playwright for Python, against a live tornchat.

Playwright's own browser download is not used (it is not reachable here): the system's chromium is
launched by path. Missing chromium or playwright skips these tests locally and fails them in CI
(TORNCHAT_REQUIRE_CLIENTS=1, like the other real clients).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.client_helpers import client_missing
from tests.support.helpers import PASSWORD, LiveServer

CHROMIUM = os.environ.get("TORNCHAT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# How long the page gets to show something (a live event, a sign-in): generous for 2 busy cores.
TIMEOUT_MS = 15_000
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 360, "height": 740}
# A page's console line when the Content-Security-Policy refused something.
CSP_VIOLATION = re.compile(r"Content Security Policy|Content-Security-Policy", re.I)


def chromium_path() -> str:
    """Debian's chromium, or skip/fail as for a missing client."""
    path = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    if not path:
        client_missing(f"chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    assert path is not None
    return path


def launch(playwright: Any) -> Any:
    """One headless chromium for a test module."""
    return playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)


def start_playwright() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        client_missing("playwright is not installed (pip install -e '.[test]')")
    return sync_playwright().start()


@dataclass
class Console:
    """Every console message and page error of the pages it watches: CSP refusals show up here."""

    lines: list[str] = field(default_factory=list)

    def watch(self, page: Any) -> None:
        page.on("console", lambda message: self.lines.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: self.lines.append(f"pageerror: {error}"))

    def csp_violations(self) -> list[str]:
        return [line for line in self.lines if CSP_VIOLATION.search(line)]


class Browser:
    """One chromium for a module, its contexts (one per signed-in person) and their console."""

    def __init__(self, playwright: Any, live: LiveServer) -> None:
        self.browser = launch(playwright)
        self.live = live
        self.console = Console()
        self.pages: list[Any] = []

    def new_page(self, viewport: dict[str, int] = DESKTOP, context: Any = None) -> Any:
        """A page in a new context (a person of its own), or a new tab of a given context."""
        if context is None:
            # UTC: the datetime-local inputs (send later) mean what the test computes.
            context = self.browser.new_context(viewport=viewport, base_url=self.live.base_url, timezone_id="UTC")
            context.set_default_timeout(TIMEOUT_MS)
        page = context.new_page()
        self.console.watch(page)
        self.pages.append(page)
        return page

    def sign_in(
        self, email: str, password: str = PASSWORD, remember: bool = False, page: Any = None, **kwargs: Any
    ) -> Any:
        """A page signed in as `email` (new context unless `page`), once the chat page shows its user."""
        page = page or self.new_page(**kwargs)
        page.goto("/")
        page.get_by_test_id("login-email").fill(email)
        page.get_by_test_id("login-password").fill(password)
        if remember:
            page.get_by_test_id("login-remember").check()
        page.get_by_test_id("login-submit").click()
        page.get_by_test_id("current-user").wait_for(state="attached")  # hidden on a phone
        page.get_by_test_id("message-list").wait_for()
        return page

    def screenshots(self, name: str) -> str:
        """Save a screenshot of every open page to a new temporary directory; return its path."""
        directory = tempfile.mkdtemp(prefix=f"tornchat-browser-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)[:80]}-")
        for number, page in enumerate(self.pages):
            if not page.is_closed():
                try:
                    page.screenshot(path=os.path.join(directory, f"page{number}.png"), full_page=True)
                except Exception as error:  # noqa: BLE001 - a page that cannot be drawn is still reported
                    with open(os.path.join(directory, f"page{number}.txt"), "w") as handle:
                        handle.write(str(error))
        with open(os.path.join(directory, "console.txt"), "w") as handle:
            handle.write("\n".join(self.console.lines))
        return directory

    def close(self) -> None:
        self.browser.close()


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = TIMEOUT_MS / 1000) -> None:
    """Wait (bounded, polling) for something the server or browser does on another thread."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
