"""README's screenshot script still runs: a seeded server, the owner signed in, the #design channel drawn."""

from __future__ import annotations

import pytest

from tests.browser.helpers import DESKTOP
from tests.browser.screenshot import take

pytestmark = pytest.mark.client


def test_the_screenshot_script_draws_the_client(tmp_path):
    path = tmp_path / "screenshot.png"
    take(str(path))
    png = path.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (
        DESKTOP["width"],
        DESKTOP["height"],
    )
