"""A channel's topics: GET /users/me/{stream_id}/topics."""

from __future__ import annotations

import msgspec
import tornado.web

from storage.channels import channel_topics
from tornchat.base import ID, BaseHandler
from tornchat.params import Params


class ListChannelTopics(msgspec.Struct):
    allow_empty_topic_name: bool = False


LIST_CHANNEL_TOPICS = Params(ListChannelTopics)


class ChannelTopicsHandler(BaseHandler):
    params = {"get": LIST_CHANNEL_TOPICS}

    def get(self, stream_id: str) -> None:
        p = self.parse()
        topics = self.server.db.read(
            channel_topics.list_channel_topics, self.user, int(stream_id), p.allow_empty_topic_name
        )
        self.respond({"topics": topics})


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    ("/users/me/" + ID + "/topics", ChannelTopicsHandler),
]
