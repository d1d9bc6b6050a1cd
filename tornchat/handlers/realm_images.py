"""The organization's icon and logos: POST and DELETE /realm/icon and /realm/logo, and their files.

Uploads are decoded and resized off the event loop (the avatars' image thread); the files are served
without credentials at /user_avatars/1/realm/{file}.png, as Zulip serves its realm icons and logos.
"""

from __future__ import annotations

import msgspec
import tornado.web

from storage.media import icons
from storage.org import realm_images
from tornchat.base import BaseHandler
from tornchat.handlers.avatars import ImageHandler, in_image_thread
from tornchat.params import Params


class Logo(msgspec.Struct):
    night: bool


LOGO = Params(Logo)


class RealmImageHandler(BaseHandler):
    """What the icon and the logo handlers share: store a processed upload, or go back to the default."""

    async def upload(self, kind: realm_images.Kind) -> dict[str, str]:
        files = [part.body for parts in self.request.files.values() for part in parts]
        upload = self.server.db.read(realm_images.check_image_upload, self.user, kind, files)
        process = icons.uploaded_icon_png if kind is realm_images.ICON else icons.uploaded_logo_png
        png = await in_image_thread(process, upload)
        data_dir = self.server.settings.data_dir
        file_name = realm_images.store_image_file(data_dir, png)
        try:
            state, replaced = self.server.db.write(realm_images.change_image, self.user, kind, file_name)
        except BaseException:
            realm_images.remove_image_file(data_dir, file_name)
            raise
        realm_images.remove_image_file(data_dir, replaced)  # committed: nothing names it now
        return state

    def reset(self, kind: realm_images.Kind) -> dict[str, str]:
        state, replaced = self.server.db.write(realm_images.change_image, self.user, kind, None)
        realm_images.remove_image_file(self.server.settings.data_dir, replaced)
        return state


class RealmIconHandler(RealmImageHandler):
    async def post(self) -> None:
        self.parse()
        self.respond({"icon_url": (await self.upload(realm_images.ICON))["icon_url"]})

    def delete(self) -> None:
        self.parse()
        self.respond({"icon_url": self.reset(realm_images.ICON)["icon_url"]})


class RealmLogoHandler(RealmImageHandler):
    params = {"post": LOGO, "delete": LOGO}

    async def post(self) -> None:
        p = self.parse()
        await self.upload(realm_images.logo_kind(p.night))
        self.respond()

    def delete(self) -> None:
        p = self.parse()
        self.reset(realm_images.logo_kind(p.night))
        self.respond()


class RealmImageFileHandler(ImageHandler):
    """/user_avatars/1/realm/{file}.png: an uploaded icon or logo (a new upload gets a new name)."""

    def get(self, file_name: str) -> None:
        self.send_png_file(realm_images.image_file_path(self.server.settings.data_dir, file_name))


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/realm/icon", RealmIconHandler),
    (r"/realm/logo", RealmLogoHandler),
]
SITE_ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/user_avatars/1/realm/([^/]+)", RealmImageFileHandler),
]
