"""Channel creation: POST /channels/create."""

from __future__ import annotations

from typing import Annotated

import msgspec

from storage.channels.channel_creation import ChannelOptions
from storage.channels.channels import CHANNEL_SETTINGS
from storage.membership.channel_actions import create_channel_with_subscribers
from storage.model.errors import ApiError
from storage.org.groups import GroupSettingValue
from tornchat.base import BaseHandler
from tornchat.params import Json, Params


class ChannelSettingsParams(msgspec.Struct, kw_only=True):
    """The channel options shared by every endpoint that can create a channel."""

    description: str = ""
    invite_only: bool = False
    is_web_public: bool = False
    is_default_stream: bool = False
    history_public_to_subscribers: bool | None = None
    message_retention_days: str | int = "realm_default"
    folder_id: int | None = None
    topics_policy: Annotated[str, Json] = "inherit"
    # The realm has no announcement channel yet, so `announce` changes nothing (as in Zulip then).
    announce: bool = False
    can_add_subscribers_group: GroupSettingValue | None = None
    can_administer_channel_group: GroupSettingValue | None = None
    can_create_topic_group: GroupSettingValue | None = None
    can_delete_any_message_group: GroupSettingValue | None = None
    can_delete_own_message_group: GroupSettingValue | None = None
    can_move_messages_out_of_channel_group: GroupSettingValue | None = None
    can_move_messages_within_channel_group: GroupSettingValue | None = None
    can_remove_subscribers_group: GroupSettingValue | None = None
    can_resolve_topics_group: GroupSettingValue | None = None
    can_send_message_group: GroupSettingValue | None = None
    can_subscribe_group: GroupSettingValue | None = None

    def channel_options(self) -> ChannelOptions:
        return ChannelOptions(
            description=self.description,
            invite_only=self.invite_only,
            is_web_public=self.is_web_public,
            is_default_stream=self.is_default_stream,
            history_public_to_subscribers=self.history_public_to_subscribers,
            message_retention_days=self.message_retention_days,
            folder_id=self.folder_id,
            topics_policy=self.topics_policy,
            settings={name: getattr(self, name) for name in CHANNEL_SETTINGS},
        )


class CreateChannel(ChannelSettingsParams, kw_only=True):
    name: str
    subscribers: list[int]


CREATE_CHANNEL = Params(CreateChannel)


class CreateChannelHandler(BaseHandler):
    params = {"post": CREATE_CHANNEL}

    def post(self) -> None:
        p = self.parse()
        if not p.name.strip():
            raise ApiError("name cannot be blank")
        channel_id = self.server.db.write(
            create_channel_with_subscribers,
            self.user,
            p.name,
            p.channel_options(),
            p.subscribers,
            self.server.settings.web_public_channels,
        )
        self.respond({"id": channel_id})
