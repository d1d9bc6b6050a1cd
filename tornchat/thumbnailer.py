"""The thumbnailer: image decoding off the event loop, results recorded on it (Zulip's thumbnail worker).

Pillow's work (storage/media/thumbnail.py) runs in threads: a header probe while an upload is stored
(its own thread, so an upload never waits behind a long thumbnail job), then the thumbnails once its
row is committed. Only the IOLoop thread touches the database:
each finished job comes back to it and is recorded by storage/messages/image_attachments.py in one
transaction (thumbnails, rewritten previews, their events). One job per image at a time: a request for
a thumbnail not made yet waits for the job already running instead of starting another.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging

from storage.db.database import Database
from storage.media import thumbnail
from storage.media.thumbnail import ImageInfo, ThumbnailError
from storage.media.thumbnail_formats import StoredThumbnail
from storage.messages import image_attachments

log = logging.getLogger("tornchat.thumbnail")

# Decoding is CPU-bound and Pillow holds big buffers: one image at a time keeps memory bounded and
# leaves the other core to the event loop.
WORKERS = 1


class Thumbnailer:
    """Runs probes and thumbnail jobs for one Server's database and data directory."""

    def __init__(self, db: Database, data_dir: str, workers: int = WORKERS) -> None:
        self.db = db
        self.data_dir = data_dir
        self.pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="thumbnail")
        self.probes = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="image-probe")
        self.running: dict[int, asyncio.Task[None]] = {}

    async def probe(self, path: str, content_type: str) -> ImageInfo | None:
        """The header facts of a staged upload (None: not an image to preview), read off the loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.probes, thumbnail.probe_image, path, content_type)

    def schedule(self, attachment_id: int) -> asyncio.Task[None]:
        """Start making an image's missing thumbnails (or join the job already doing it)."""
        task = self.running.get(attachment_id)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._run(attachment_id))
            self.running[attachment_id] = task
            task.add_done_callback(lambda _: self.running.pop(attachment_id, None))
        return task

    def schedule_waiting(self) -> None:
        """Start the jobs a previous process left undone."""
        for attachment_id in self.db.read(image_attachments.list_waiting_images):
            self.schedule(attachment_id)

    async def ensure(self, attachment_id: int) -> None:
        """Return once the image's thumbnails are made (or failed)."""
        await asyncio.shield(self.schedule(attachment_id))

    async def _run(self, attachment_id: int) -> None:
        job = self.db.read(image_attachments.get_thumbnail_job, attachment_id)
        if job is None:
            return
        loop = asyncio.get_running_loop()
        made: list[StoredThumbnail] | None
        try:
            made = await loop.run_in_executor(
                self.pool, thumbnail.make_thumbnails, self.data_dir, job.path_id, job.formats
            )
        except ThumbnailError as error:
            log.info("thumbnailing %s failed: %s", job.path_id, error)
            made = None
        except RuntimeError:  # the pool was shut down: the server is stopping; the job waits for the next start
            return
        if not self.db.write(image_attachments.record_thumbnails, attachment_id, made):
            thumbnail.remove_thumbnails(self.data_dir, job.path_id)  # the upload was deleted meanwhile

    def close(self) -> None:
        """Stop: jobs not started are dropped (schedule_waiting picks them up at the next start)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.probes.shutdown(wait=False, cancel_futures=True)
