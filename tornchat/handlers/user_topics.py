"""Topic visibility: POST /user_topics and the legacy PATCH /users/me/subscriptions/muted_topics."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
import tornado.web

from storage.channels import user_topics
from storage.model.realm import MAX_TOPIC_LENGTH
from tornchat.base import BaseHandler
from tornchat.params import Params

Topic = Annotated[str, msgspec.Meta(max_length=MAX_TOPIC_LENGTH)]


class UpdateUserTopic(msgspec.Struct):
    stream_id: int
    topic: Topic
    visibility_policy: Literal[0, 1, 2, 3]


class UpdateMutedTopic(msgspec.Struct):
    topic: Topic
    op: str  # "add" or "remove", checked in storage: "Invalid op"
    stream_id: int | None = None
    stream: str | None = None


UPDATE_USER_TOPIC = Params(UpdateUserTopic)
UPDATE_MUTED_TOPIC = Params(UpdateMutedTopic)


class UserTopicsHandler(BaseHandler):
    params = {"post": UPDATE_USER_TOPIC}

    def post(self) -> None:
        p = self.parse()
        self.server.db.write(user_topics.update_user_topic, self.user, p.stream_id, p.topic, p.visibility_policy)
        self.respond()


class MutedTopicsHandler(BaseHandler):
    params = {"patch": UPDATE_MUTED_TOPIC}

    def patch(self) -> None:
        p = self.parse()
        self.server.db.write(user_topics.update_muted_topic, self.user, p.stream_id, p.stream, p.topic, p.op)
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/user_topics", UserTopicsHandler),
    (r"/users/me/subscriptions/muted_topics", MutedTopicsHandler),
]
