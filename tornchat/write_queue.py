"""Awaitable group-committed writes for handlers: `await server.writes.write(fn, *args)`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from storage.db.database import Database
from storage.db.write_batch import WriteBatcher

R = TypeVar("R")


class WriteQueue:
    """Runs write calls through a WriteBatcher on the running event loop; each call is a future."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.batcher = WriteBatcher(db, self._schedule, self._schedule_later, wait_for_copy=self._wait_for_copy)

    @staticmethod
    def _schedule(fn: Callable[[], None]) -> None:
        asyncio.get_running_loop().call_soon(fn)

    @staticmethod
    def _schedule_later(delay: float, fn: Callable[[], None]) -> None:
        asyncio.get_running_loop().call_later(delay, fn)

    def _wait_for_copy(self, fn: Callable[[], None]) -> None:
        """fn() runs on the loop once the checkpointer's thread has copied the whole WAL."""
        checkpointer, loop = self.db.checkpointer, asyncio.get_running_loop()

        def copied() -> None:  # on the checkpointer's thread
            try:
                loop.call_soon_threadsafe(fn)
            except RuntimeError:  # the loop closed first: the batcher was drained
                pass

        if checkpointer is not None:
            checkpointer.when_copied(copied)

    def write(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> asyncio.Future[R]:
        """Queue fn(tx, *args, **kwargs); the future holds its result once the batch's COMMIT returned."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()

        def done(error: BaseException | None, result: Any) -> None:
            if future.cancelled():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

        self.batcher.submit(done, fn, *args, **kwargs)
        return future
