"""Scheduled messages: POST/GET /scheduled_messages, PATCH/DELETE /scheduled_messages/{id}."""

from __future__ import annotations

from typing import Any

import msgspec

from storage.messages import scheduled_messages as storage
from storage.model.errors import ApiError
from tornchat.base import ID, BaseHandler
from tornchat.params import Params


class CreateScheduledMessage(msgspec.Struct, kw_only=True):
    type: str
    to: Any  # JSON int or list of ints: checked by check_to
    content: str
    topic: str | None = None
    scheduled_delivery_timestamp: int
    read_by_sender: bool | None = None


class EditScheduledMessage(msgspec.Struct, kw_only=True):
    type: str | None = None
    to: Any = None
    content: str | None = None
    topic: str | None = None
    scheduled_delivery_timestamp: int | None = None


CREATE = Params(CreateScheduledMessage, aliases={"subject": "topic"})
EDIT = Params(EditScheduledMessage, aliases={"subject": "topic"})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_to(to: Any, optional: bool = False) -> None:
    """`to` is `int | list[int]`; anything else fails as Zulip's union check reports it (its int branch)."""
    if to is None and optional:
        return
    if not (_is_int(to) or (isinstance(to, list) and all(_is_int(item) for item in to))):
        raise ApiError('to["int"] is not an integer')


class ScheduledMessagesHandler(BaseHandler):
    params = {"post": CREATE}

    def get(self) -> None:
        self.parse()
        self.respond({"scheduled_messages": self.server.db.read(storage.list_scheduled_messages, self.user)})

    def post(self) -> None:
        p = self.parse()
        check_to(p.to)
        draft = storage.Draft(**msgspec.structs.asdict(p))
        scheduled_id = self.server.db.write(storage.create_scheduled_message, self.user, draft, self.client_name())
        self.respond({"scheduled_message_id": scheduled_id})


class ScheduledMessageHandler(BaseHandler):
    params = {"patch": EDIT}

    def patch(self, scheduled_id: str) -> None:
        p = self.parse()
        check_to(p.to, optional=True)
        edit = storage.Edit(**msgspec.structs.asdict(p))
        self.server.db.write(storage.edit_scheduled_message, self.user, int(scheduled_id), edit)
        self.respond()

    def delete(self, scheduled_id: str) -> None:
        self.parse()
        self.server.db.write(storage.delete_scheduled_message, self.user, int(scheduled_id))
        self.respond()


ROUTES = [
    (r"/scheduled_messages", ScheduledMessagesHandler),
    (r"/scheduled_messages/" + ID, ScheduledMessageHandler),
]
