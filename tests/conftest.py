from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import LiveServer, data_dir_for


@pytest.fixture
def live(tmp_path) -> Iterator[LiveServer]:  # type: ignore[no-untyped-def]
    """A fresh server on a fresh temporary database, owned by owner@example.com."""
    server = LiveServer(data_dir_for(tmp_path))
    yield server
    server.stop()
