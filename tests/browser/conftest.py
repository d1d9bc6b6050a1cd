"""Fixtures of the browser tests: one tornchat and one chromium per module, screenshots on failure."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.helpers import Browser, start_playwright
from tests.support.helpers import LiveServer, data_dir_for


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A live tornchat for the module. Its fake clock starts at the real time: the browser's clock
    (date inputs, "send later") and the server's agree."""
    live = LiveServer(data_dir_for(tmp_path_factory.mktemp("web")))
    live.clock.now = float(int(time.time()))
    yield live
    live.stop()


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    started = start_playwright()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def browser(playwright: Any, server: LiveServer) -> Iterator[Browser]:
    opened = Browser(playwright, server)
    yield opened
    opened.close()


@pytest.fixture(autouse=True)
def screenshot_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a failed test, every open page of the module's browser is saved; the path is printed."""
    yield
    if request.node.stash.get(FAILED, False) and "browser" in request.fixturenames:
        opened: Browser = request.getfixturevalue("browser")
        print(f"\nscreenshots of {request.node.name}: {opened.screenshots(request.node.name)}")
