"""File uploads: POST /user_uploads, GET /attachments, DELETE /attachments/{id}, and serving files.

API routes (under /api/v1): upload a file; ask for a temporary URL of one
(GET /user_uploads/{realm_id}/{path}, Zulip's get-file-temporary-url); list and delete one's uploads.
Site routes (no /api/v1, where upload URLs point): GET /user_uploads/{realm_id}/{path} with the API's
HTTP Basic credentials (as zulip-terminal downloads), .../download/... to force a download,
/user_uploads/temporary/{token}/{filename} without credentials for a minute after it was handed out,
and an image's thumbnails at /user_uploads/thumbnail/{realm_id}/{path}/{format} to whoever may read it.
An uploaded image's header is read off the event loop before its row is stored, and its thumbnails
are made off the loop once it is (tornchat/thumbnailer.py).
"""

from __future__ import annotations

import os
from typing import Any

import tornado.iostream
import tornado.web

from storage.db import upload_files
from storage.media.thumbnail_formats import thumbnail_path_id
from storage.messages import attachments, image_attachments
from storage.model.errors import ApiError
from tornchat.base import ID, BaseHandler

CHUNK_BYTES = 64 * 1024
UPLOAD_PATH = "/user_uploads"
_PATH = r"/user_uploads/(\d{1,18})/(.+)"


async def store_upload(handler: BaseHandler, upload: tornado.httputil.HTTPFile) -> dict[str, str]:
    """Check, stage and record one uploaded file; nothing is left behind if any step fails.

    An image gets its header read (off the event loop) before the row is stored, and its thumbnails
    started once it is.
    """
    server = handler.server
    settings = server.settings
    attachments.check_file_size(len(upload.body), settings.max_file_upload_size_mib)
    # Before writing anything; create_attachment checks again in the transaction that counts.
    server.db.read(attachments.check_quota, handler.user, len(upload.body), settings.upload_quota_mib)
    name = upload_files.display_name(upload.filename)
    staged = upload_files.stage(settings.data_dir, upload.body)
    path_id = upload_files.new_path_id(attachments.REALM_ID, name)
    content_type = upload_files.content_type_for(upload.content_type, name)
    try:
        image = await server.thumbnailer.probe(staged, content_type)
        new = attachments.NewUpload(staged, path_id, name, content_type, len(upload.body), image)
        result = server.db.write(attachments.create_attachment, handler.user, new, settings.data_dir,
                                 settings.upload_quota_mib)  # fmt: skip
    except BaseException:
        upload_files.discard(staged)
        upload_files.remove(settings.data_dir, path_id)  # moved into place, then the commit failed
        raise
    if image is not None:
        server.thumbnailer.schedule(server.db.read(attachments.get_upload, path_id)["id"])
    return result


class UploadHandler(BaseHandler):
    async def post(self) -> None:
        self.parse()
        files = [upload for parts in self.request.files.values() for upload in parts]
        if not files:
            raise ApiError("You must specify a file to upload")
        if len(files) > 1:
            raise ApiError("You may only upload one file at a time")
        self.respond(await store_upload(self, files[0]))


class UploadUrlHandler(BaseHandler):
    """GET /api/v1/user_uploads/{realm_id}/{path}: a URL serving the file without credentials for 60 s."""

    def get(self, realm_id: str, path: str) -> None:
        self.parse()
        row = self.server.db.read(attachments.access_upload, self.user, f"{realm_id}/{path}")
        token = upload_files.temporary_token(row["path_id"], self.server.clock())
        self.respond({"url": f"/user_uploads/temporary/{token}/{row['path_id'].rsplit('/', 1)[-1]}"})


class AttachmentsHandler(BaseHandler):
    def get(self) -> None:
        self.parse()
        self.respond(self.server.db.read(attachments.list_attachments, self.user))


class AttachmentHandler(BaseHandler):
    def delete(self, attachment_id: str) -> None:
        self.parse()
        data_dir = self.server.settings.data_dir
        self.server.db.write(attachments.delete_attachment, self.user, int(attachment_id), data_dir)
        self.respond()


# -- serving files -------------------------------------------------------------------------------


class FileHandler(BaseHandler):
    """Sends a stored file in chunks, with headers that keep a browser from running anything in it."""

    async def send_file(self, row: Any, download: bool = False) -> None:
        await self.send_stored(row["path_id"], row["content_type"], download)

    async def send_stored(self, path_id: str, content_type: str, download: bool = False) -> None:
        """Send the file stored under uploads/{path_id} as `content_type` (octet-stream unless inline)."""
        try:
            stream = open(upload_files.local_path(self.server.settings.data_dir, path_id), "rb")  # noqa: SIM115
        except FileNotFoundError:
            raise attachments.file_not_found() from None
        with stream:
            content_type, inline = upload_files.served_type(content_type)
            self.set_header("Content-Type", content_type)
            self.set_header("Content-Length", str(os.fstat(stream.fileno()).st_size))
            disposition = upload_files.content_disposition(path_id, inline and not download)
            self.set_header("Content-Disposition", disposition)
            self.set_header("X-Content-Type-Options", "nosniff")
            self.set_header("Content-Security-Policy", upload_files.CONTENT_SECURITY_POLICY)
            self.set_header("Cache-Control", "private, immutable")
            if self.request.method != "HEAD":
                try:
                    while chunk := stream.read(CHUNK_BYTES):
                        self.write(chunk)
                        await self.flush()
                except tornado.iostream.StreamClosedError:
                    return  # the client went away
        self.finish()


class ServeUploadHandler(FileHandler):
    """GET /user_uploads/{realm_id}/{path} (and .../download/...) with HTTP Basic credentials."""

    download = False

    async def get(self, realm_id: str, path: str) -> None:
        self.parse()
        row = self.server.db.read(attachments.access_upload, self.user, f"{realm_id}/{path}")
        await self.send_file(row, self.download)

    async def head(self, realm_id: str, path: str) -> None:  # type: ignore[override]
        await self.get(realm_id, path)


class DownloadUploadHandler(ServeUploadHandler):
    download = True


class ThumbnailHandler(FileHandler):
    """GET /user_uploads/thumbnail/{realm_id}/{path}/{format}: an image's thumbnail, to who may read the image.

    A format the image should have but does not yet is made first (waiting for its job, off the loop).
    """

    async def get(self, realm_id: str, path: str, name: str) -> None:
        self.parse()
        path_id = f"{realm_id}/{path}"
        target = self.server.db.read(image_attachments.access_thumbnail, self.user, path_id, name)
        if target.thumbnail is None:
            await self.server.thumbnailer.ensure(target.attachment_id)
            target = self.server.db.read(image_attachments.access_thumbnail, self.user, path_id, name)
            if target.thumbnail is None:  # it failed to decode
                raise attachments.file_not_found()
        await self.send_stored(thumbnail_path_id(path_id, target.thumbnail.name), target.thumbnail.content_type)

    async def head(self, realm_id: str, path: str, name: str) -> None:  # type: ignore[override]
        await self.get(realm_id, path, name)


class TemporaryUploadHandler(FileHandler):
    """GET /user_uploads/temporary/{token}/{filename}: no credentials; the signed token is the permission."""

    requires_auth = False

    async def get(self, token: str, filename: str) -> None:
        self.parse()
        path_id = upload_files.path_id_of_token(token, self.server.clock())
        if path_id is None:
            raise ApiError("Invalid token")
        if path_id.rsplit("/", 1)[-1] != filename:
            raise ApiError("Invalid filename")
        row = self.server.db.read(attachments.get_upload, path_id)
        if row is None:  # deleted since the URL was handed out
            raise attachments.file_not_found()
        await self.send_file(row)

    async def head(self, token: str, filename: str) -> None:  # type: ignore[override]
        await self.get(token, filename)


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (UPLOAD_PATH, UploadHandler),
    (_PATH, UploadUrlHandler),
    (r"/attachments", AttachmentsHandler),
    ("/attachments/" + ID, AttachmentHandler),
]
# Served at the site's root, where the URLs in messages point.
SITE_ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/user_uploads/temporary/([^/]+)/([^/]+)", TemporaryUploadHandler),
    (r"/user_uploads/thumbnail/(\d{1,18})/(.+)/([^/]+)", ThumbnailHandler),
    (r"/user_uploads/download/(\d{1,18})/(.+)", DownloadUploadHandler),
    (_PATH, ServeUploadHandler),
]
