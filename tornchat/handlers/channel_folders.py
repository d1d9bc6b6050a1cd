"""Channel folders: POST /channel_folders/create (also POST /channel_folders), GET /channel_folders."""

from __future__ import annotations

from typing import Annotated

import msgspec
import tornado.web

from storage.channels import channel_folders
from storage.channels.channel_folders import MAX_FOLDER_DESCRIPTION_LENGTH, MAX_FOLDER_NAME_LENGTH
from tornchat.base import BaseHandler
from tornchat.params import Params


class CreateChannelFolder(msgspec.Struct):
    name: Annotated[str, msgspec.Meta(max_length=MAX_FOLDER_NAME_LENGTH)]
    description: Annotated[str, msgspec.Meta(max_length=MAX_FOLDER_DESCRIPTION_LENGTH)] = ""


class GetChannelFolders(msgspec.Struct):
    include_archived: bool = False


CREATE_CHANNEL_FOLDER = Params(CreateChannelFolder)
GET_CHANNEL_FOLDERS = Params(GetChannelFolders)


class CreateChannelFolderHandler(BaseHandler):
    params = {"post": CREATE_CHANNEL_FOLDER}

    def post(self) -> None:
        # Administrators only, checked before the parameters as Zulip's decorator does.
        channel_folders.check_can_create_folders(self.user)
        p = self.parse()
        folder_id = self.server.db.write(channel_folders.create_channel_folder, self.user, p.name, p.description)
        self.respond({"channel_folder_id": folder_id})


class ChannelFoldersHandler(CreateChannelFolderHandler):
    params = {**CreateChannelFolderHandler.params, "get": GET_CHANNEL_FOLDERS}

    def get(self) -> None:
        p = self.parse()
        self.respond({"channel_folders": self.server.db.read(channel_folders.list_channel_folders, p.include_archived)})


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/channel_folders", ChannelFoldersHandler),
    (r"/channel_folders/create", CreateChannelFolderHandler),
]
