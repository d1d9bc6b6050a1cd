"""Channels by id: GET /streams, GET, PATCH and DELETE /streams/{id}, members, GET /get_stream_id."""

from __future__ import annotations

from typing import Annotated

import msgspec
import tornado.web

from storage.channels import channel_admin
from storage.channels.channel_admin import ChannelFilter, ChannelUpdate, GroupSettingChange
from storage.channels.channels import CHANNEL_SETTINGS
from storage.model.realm import MAX_STREAM_DESCRIPTION_LENGTH
from tornchat.base import ID, BaseHandler
from tornchat.params import Params


class GetStreams(ChannelFilter, kw_only=True):
    pass


class GetStreamId(msgspec.Struct):
    stream: str


class UpdateStream(msgspec.Struct, kw_only=True):
    new_name: str | None = None
    description: Annotated[str, msgspec.Meta(max_length=MAX_STREAM_DESCRIPTION_LENGTH)] | None = None
    is_private: bool | None = None
    is_web_public: bool | None = None
    history_public_to_subscribers: bool | None = None
    is_default_stream: bool | None = None
    message_retention_days: str | int | None = None
    folder_id: int | None | msgspec.UnsetType = msgspec.UNSET  # null takes the channel out of its folder
    topics_policy: str | None = None  # a plain string here, JSON in channel creation (as in Zulip)
    can_add_subscribers_group: GroupSettingChange | None = None
    can_administer_channel_group: GroupSettingChange | None = None
    can_create_topic_group: GroupSettingChange | None = None
    can_delete_any_message_group: GroupSettingChange | None = None
    can_delete_own_message_group: GroupSettingChange | None = None
    can_move_messages_out_of_channel_group: GroupSettingChange | None = None
    can_move_messages_within_channel_group: GroupSettingChange | None = None
    can_remove_subscribers_group: GroupSettingChange | None = None
    can_resolve_topics_group: GroupSettingChange | None = None
    can_send_message_group: GroupSettingChange | None = None
    can_subscribe_group: GroupSettingChange | None = None

    def channel_update(self) -> ChannelUpdate:
        fields = msgspec.structs.asdict(self)
        settings = {name: fields.pop(name) for name in CHANNEL_SETTINGS}
        if self.topics_policy is not None:
            fields["topics_policy"] = channel_admin.check_topics_policy_value(self.topics_policy)
        return ChannelUpdate(**fields, settings={k: v for k, v in settings.items() if v is not None})


GET_STREAMS = Params(GetStreams, aliases={"include_all_active": "include_all"})
GET_STREAM_ID = Params(GetStreamId)
UPDATE_STREAM = Params(UpdateStream)


class StreamsHandler(BaseHandler):
    params = {"get": GET_STREAMS}

    def get(self) -> None:
        p = self.parse()
        self.respond({"streams": self.server.db.read(channel_admin.list_channels, self.user, p)})


class StreamHandler(BaseHandler):
    params = {"patch": UPDATE_STREAM}

    def get(self, channel_id: str) -> None:
        self.parse()
        self.respond({"stream": self.server.db.read(channel_admin.get_channel_object, self.user, int(channel_id))})

    def patch(self, channel_id: str) -> None:
        update = self.parse().channel_update()
        web_public_enabled = self.server.settings.web_public_channels
        self.server.db.write(channel_admin.update_channel, self.user, int(channel_id), update, web_public_enabled)
        self.respond()

    def delete(self, channel_id: str) -> None:
        self.parse()
        self.server.db.write(channel_admin.archive_channel, self.user, int(channel_id))
        self.respond()


class StreamMembersHandler(BaseHandler):
    def get(self, channel_id: str) -> None:
        self.parse()
        subscribers = self.server.db.read(channel_admin.list_channel_subscribers, self.user, int(channel_id))
        self.respond({"subscribers": subscribers})


class StreamIdHandler(BaseHandler):
    params = {"get": GET_STREAM_ID}

    def get(self) -> None:
        p = self.parse()
        self.respond({"stream_id": self.server.db.read(channel_admin.get_channel_id, self.user, p.stream)})


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/streams", StreamsHandler),
    ("/streams/" + ID, StreamHandler),
    ("/streams/" + ID + "/members", StreamMembersHandler),
    (r"/get_stream_id", StreamIdHandler),
]
