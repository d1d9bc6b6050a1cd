"""Avatars: POST and DELETE /users/me/avatar, GET /avatar/{email_or_id}[/medium], and the images.

The API routes sit under /api/v1. The rest are the site's own paths, where Zulip has them and where
avatar URLs point: /avatar/... (zulip-flutter's fallback, with the app's credentials) redirects to the
avatar's URL; /user_avatars/1/{file}.png (uploaded) and /user_avatars/default/{id}.png (generated) are
served without credentials, as Zulip serves /user_avatars/ (img tags and the app load them as they are).
Decoding, resizing and drawing run in a thread pool, off the event loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Callable
from typing import Any

import tornado.web

from storage.media import avatars as avatar_images
from storage.model import avatars
from storage.model.realm import get_realm
from storage.org import user_avatars
from tornchat.base import BaseHandler

# Pillow work on uploaded or generated images: one thread at a time beside the event loop (2 cores).
IMAGE_PROCESSING = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="tornchat-images")
# File names never reused (a new upload gets new names; a default depends on the id alone): cached for a year.
IMMUTABLE = "public, max-age=31536000, immutable"


async def in_image_thread(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(IMAGE_PROCESSING, functools.partial(fn, *args))


class OwnAvatarHandler(BaseHandler):
    async def post(self) -> None:
        self.parse()
        upload = user_avatars.check_avatar_files([part.body for parts in self.request.files.values() for part in parts])
        small, medium = await in_image_thread(avatar_images.avatar_pngs, upload)
        data_dir = self.server.settings.data_dir
        avatar_file = user_avatars.store_avatar_files(data_dir, small, medium)
        try:
            result, replaced = self.server.db.write(user_avatars.set_avatar, self.user, avatar_file)
        except BaseException:
            user_avatars.remove_avatar_files(data_dir, avatar_file)
            raise
        user_avatars.remove_avatar_files(data_dir, replaced)  # committed: nothing names them now
        self.respond(result)

    def delete(self) -> None:
        self.parse()
        result, replaced = self.server.db.write(user_avatars.delete_avatar, self.user)
        user_avatars.remove_avatar_files(self.server.settings.data_dir, replaced)
        self.respond(result)


class AvatarRedirectHandler(BaseHandler):
    """GET /avatar/{email_or_id}[/medium]: a redirect to the avatar's URL, the query string kept (Zulip's avatar view).

    With the API's credentials, or none when the organization lets spectators in (then by id only).
    """

    requires_auth = False
    medium = False

    def get(self, email_or_id: str) -> None:
        viewer = None
        if self.request.headers.get("Authorization") or not self._spectators_allowed():
            viewer = self.authenticate()
        url = self.server.db.read(user_avatars.access_avatar_url, viewer, email_or_id, self.medium)
        if self.request.query:
            url += ("&" if "?" in url else "?") + self.request.query
        self.redirect(url)

    def _spectators_allowed(self) -> bool:
        return self.server.settings.web_public_channels and self.server.db.read(get_realm).enable_spectator_access


class MediumAvatarRedirectHandler(AvatarRedirectHandler):
    medium = True


class ImageHandler(BaseHandler):
    """A PNG of the server's, without credentials: only what the path names, nothing from the file system."""

    requires_auth = False

    def send_png(self, data: bytes, cache_control: str = IMMUTABLE) -> None:
        self.set_header("Content-Type", "image/png")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Content-Security-Policy", "default-src 'none'")
        self.set_header("Cache-Control", cache_control)
        self.finish(data)

    def send_png_file(self, path: str | None) -> None:
        """Send a stored PNG; 404 when the name was refused (None) or the file is gone."""
        try:
            with open(path or "", "rb") as image:
                data = image.read()
        except FileNotFoundError:
            raise tornado.web.HTTPError(404) from None
        self.send_png(data)


class UploadedAvatarHandler(ImageHandler):
    """/user_avatars/1/{avatar_file}[-medium].png: an uploaded avatar's files."""

    def get(self, file_name: str) -> None:
        self.send_png_file(user_avatars.avatar_file_path(self.server.settings.data_dir, file_name))


class DefaultAvatarHandler(ImageHandler):
    """/user_avatars/default/{user_id}[-medium].png: the generated avatar of an id (any id: it reveals nothing)."""

    async def get(self, user_id: str, medium: str | None) -> None:
        size = avatars.MEDIUM_SIZE if medium else avatars.DEFAULT_SIZE
        self.send_png(await in_image_thread(avatar_images.default_avatar_png, int(user_id), size))

    async def head(self, user_id: str, medium: str | None) -> None:  # type: ignore[override]
        await self.get(user_id, medium)


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/users/me/avatar", OwnAvatarHandler),
]
# Served at the site's root, where Zulip serves them and avatar URLs point.
SITE_ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/avatar/([^/]+)/medium", MediumAvatarRedirectHandler),
    (r"/avatar/([^/]+)", AvatarRedirectHandler),
    (r"/user_avatars/default/(\d{1,18})(-medium)?\.png", DefaultAvatarHandler),
    (r"/user_avatars/1/([^/]+)", UploadedAvatarHandler),
]
