"""Messages: POST /messages, GET /messages."""

from __future__ import annotations

from typing import Any

import msgspec

from storage.db.tx import Tx
from storage.fetch.message_fetch import GetMessages, get_messages
from storage.messages.messages import SendRequest, send_message
from storage.model.user import User
from storage.org import users
from tornchat.base import BaseHandler, basic_credentials, success_body
from tornchat.direct_get import DirectRequest, Serve
from tornchat.params import Params, decode_json_or_text
from tornchat.server import Server


class SendMessage(msgspec.Struct, kw_only=True):
    type: str
    to: str | None = None
    content: str
    topic: str | None = None
    read_by_sender: bool | None = None
    # The sender's event queue gets `local_message_id` = local_id with the message event (local echo).
    queue_id: str | None = None
    local_id: str | None = None
    widget_content: str | None = None  # JSON text, checked by storage/messages/widgets.py


SEND_MESSAGE = Params(SendMessage, aliases={"subject": "topic"})
# Decoded straight into storage's Struct: the parameters are the storage call's.
GET_MESSAGES = Params(GetMessages)


def decode_to(raw: str | None) -> Any:
    """`to` is JSON (an id, a name, a list) or, for convenience, a plain channel name or emails."""
    return None if raw is None else decode_json_or_text("to", raw)


class MessagesHandler(BaseHandler):
    params = {"post": SEND_MESSAGE, "get": GET_MESSAGES}

    async def post(self) -> None:
        p = self.parse()
        request = SendRequest(
            type=p.type, to=decode_to(p.to), content=p.content, topic=p.topic,
            read_by_sender=p.read_by_sender, client=self.client_name(), queue_id=p.queue_id, local_id=p.local_id,
            widget_content=p.widget_content,
        )  # fmt: skip
        # Group commit: sends arriving together share a transaction; answered once it committed.
        message_id = await self.server.writes.write(send_message, self.user, request)
        self.respond({"id": message_id})

    def get(self) -> None:
        """HEAD, and a GET with a form body; a GET without one is answered by direct_get_messages."""
        p = self.parse()
        self.respond(self.server.db.read(get_messages, self.user, p, cache_bytes(self.server)))


def cache_bytes(server: Server) -> int | None:
    """The encoded-message cache's bound for get_messages (None: off, and `messages` comes as objects)."""
    return server.settings.message_cache_mib << 20 or None


def direct_get_messages(server: Server) -> Serve:
    """GET /messages served by tornchat/direct_get.py: authentication and the page in one read transaction.

    The order of answers is the handler's: credentials, then parameters, then the page.
    """

    def serve(request: DirectRequest) -> bytes:
        email, api_key = basic_credentials(request.headers.get("Authorization"))
        arguments = request.query_arguments

        def argument(name: str) -> str | None:
            values = arguments.get(name)
            return values[-1].decode("utf-8", errors="replace") if values else None

        authenticated: list[User] = []

        def read(tx: Tx) -> tuple[dict[str, Any], list[str]]:
            user = users.authenticate(tx, email, api_key, server.realm)
            authenticated.append(user)
            p, ignored = GET_MESSAGES.parse(argument, list(arguments))
            return get_messages(tx, user, p, cache_bytes(server)), ignored

        try:
            data, ignored = server.db.read(read)
        finally:  # an authenticated request counts as activity, whatever it is answered (as in prepare())
            if authenticated:
                server.note_active(authenticated[0].id)
        return success_body(data, ignored)

    return serve


ROUTES = [(r"/messages", MessagesHandler)]
