"""Message reports: POST /messages/{message_id}/report."""

from __future__ import annotations

from typing import Annotated

import msgspec
import tornado.web

from storage.messages import message_reports
from tornchat.base import ID, BaseHandler
from tornchat.params import Params


class ReportMessage(msgspec.Struct, kw_only=True):
    report_type: str
    description: Annotated[str, msgspec.Meta(max_length=message_reports.MAX_DESCRIPTION_LENGTH)] = ""


REPORT_MESSAGE = Params(ReportMessage)


class ReportMessageHandler(BaseHandler):
    params = {"post": REPORT_MESSAGE}

    def post(self, message_id: str) -> None:
        p = self.parse()
        self.server.db.write(message_reports.report_message, self.user, int(message_id), p.report_type, p.description)
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    ("/messages/" + ID + "/report", ReportMessageHandler),
]
