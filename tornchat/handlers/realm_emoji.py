"""Custom emoji: GET /realm/emoji, POST and DELETE /realm/emoji/{emoji_name}, and their images."""

from __future__ import annotations

import os

import tornado.web

from storage.org import realm_emoji
from tornchat.base import BaseHandler

# GET and DELETE read no parameters; POST reads only its file part (multipart/form-data).


class RealmEmojiListHandler(BaseHandler):
    def get(self) -> None:
        self.respond({"emoji": self.server.db.read(realm_emoji.list_realm_emoji)})


class RealmEmojiHandler(BaseHandler):
    def post(self, name: str) -> None:
        files = [part.body for parts in self.request.files.values() for part in parts]
        # Check before writing the file, then again in the transaction that records it.
        self.server.db.read(realm_emoji.check_upload, self.user, name, files)
        file_name, content_type = realm_emoji.store_image(self.server.settings.data_dir, files[0])
        try:
            self.server.db.write(realm_emoji.upload_realm_emoji, self.user, name, files, file_name, content_type)
        except BaseException:
            realm_emoji.remove_image(self.server.settings.data_dir, file_name)
            raise
        self.respond()

    def delete(self, name: str) -> None:
        self.server.db.write(realm_emoji.deactivate_realm_emoji, self.user, name)
        self.respond()


class RealmEmojiImageHandler(BaseHandler):
    """An emoji image, public like Zulip's /user_avatars/ (img tags fetch it without API credentials).

    Only files a realm_emoji row names are served, with the type read from their bytes at upload.
    """

    requires_auth = False

    def get(self, realm_id: str, file_name: str) -> None:
        content_type = None
        if int(realm_id) == realm_emoji.REALM_ID and realm_emoji.FILE_NAME.fullmatch(file_name):
            content_type = self.server.db.read(realm_emoji.get_image_content_type, file_name)
        path = os.path.join(self.server.settings.data_dir, realm_emoji.EMOJI_FOLDER, file_name)
        if content_type is None or not os.path.isfile(path):
            raise tornado.web.HTTPError(404)
        with open(path, "rb") as image:
            data = image.read()
        self.set_header("Content-Type", content_type)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Content-Security-Policy", "default-src 'none'")
        self.set_header("Cache-Control", "public, max-age=86400")  # a file name is never reused
        self.finish(data)


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/realm/emoji", RealmEmojiListHandler),
    (r"/realm/emoji/([^/]+)", RealmEmojiHandler),
]
# Served outside /api/v1, where Zulip serves them.
IMAGE_ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/user_avatars/(\d{1,18})/emoji/images/([^/]+)", RealmEmojiImageHandler),
]
