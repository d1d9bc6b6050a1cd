"""Drafts: GET and POST /drafts, PATCH and DELETE /drafts/{draft_id}."""

from __future__ import annotations

import msgspec
import tornado.web

from storage.messages import drafts
from storage.messages.drafts import DraftData, strip_content
from tornchat.base import ID, BaseHandler
from tornchat.params import Params


class CreateDrafts(msgspec.Struct):
    # Optional per the spec (Zulip itself requires it): no drafts creates none.
    drafts: list[DraftData] = msgspec.field(default_factory=list)


class EditDraft(msgspec.Struct):
    draft: DraftData


CREATE_DRAFTS = Params(CreateDrafts)
EDIT_DRAFT = Params(EditDraft)

# Every draft endpoint checks the user's synchronization setting before its parameters, as
# Zulip's decorator does. GET and DELETE read no parameters and, like Zulip's views outside its
# typed-parameter framework, report none as ignored.


class DraftsHandler(BaseHandler):
    params = {"post": CREATE_DRAFTS}

    def get(self) -> None:
        drafts.check_synchronization(self.user)
        found = self.server.db.read(drafts.list_drafts, self.user)
        self.respond({"count": len(found), "drafts": found})

    def post(self) -> None:
        drafts.check_synchronization(self.user)
        p = self.parse()
        given = [strip_content(draft, f"drafts[{i}]") for i, draft in enumerate(p.drafts)]
        self.respond({"ids": self.server.db.write(drafts.create_drafts, self.user, given)})


class DraftHandler(BaseHandler):
    params = {"patch": EDIT_DRAFT}

    def patch(self, draft_id: str) -> None:
        drafts.check_synchronization(self.user)
        p = self.parse()
        self.server.db.write(drafts.edit_draft, self.user, int(draft_id), strip_content(p.draft, "draft"))
        self.respond()

    def delete(self, draft_id: str) -> None:
        drafts.check_synchronization(self.user)
        self.server.db.write(drafts.delete_draft, self.user, int(draft_id))
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/drafts", DraftsHandler),
    ("/drafts/" + ID, DraftHandler),
]
