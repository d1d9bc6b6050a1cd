"""Saved snippets: GET and POST /saved_snippets, PATCH and DELETE /saved_snippets/{saved_snippet_id}."""

from __future__ import annotations

import msgspec
import tornado.web

from storage.messages import saved_snippets
from tornchat.base import ID, BaseHandler
from tornchat.params import Params


class CreateSavedSnippet(msgspec.Struct):
    title: str
    content: str


class EditSavedSnippet(msgspec.Struct):
    title: str | None = None
    content: str | None = None


CREATE_SAVED_SNIPPET = Params(CreateSavedSnippet)
EDIT_SAVED_SNIPPET = Params(EditSavedSnippet)

# GET and DELETE read no parameters and, like Zulip's views outside its typed-parameter
# framework, report none as ignored.


class SavedSnippetsHandler(BaseHandler):
    params = {"post": CREATE_SAVED_SNIPPET}

    def get(self) -> None:
        self.respond({"saved_snippets": self.server.db.read(saved_snippets.list_saved_snippets, self.user)})

    def post(self) -> None:
        p = self.parse()
        snippet_id = self.server.db.write(saved_snippets.create_saved_snippet, self.user, p.title, p.content)
        self.respond({"saved_snippet_id": snippet_id})


class SavedSnippetHandler(BaseHandler):
    params = {"patch": EDIT_SAVED_SNIPPET}

    def patch(self, snippet_id: str) -> None:
        p = self.parse()
        self.server.db.write(saved_snippets.edit_saved_snippet, self.user, int(snippet_id), p.title, p.content)
        self.respond()

    def delete(self, snippet_id: str) -> None:
        self.server.db.write(saved_snippets.delete_saved_snippet, self.user, int(snippet_id))
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/saved_snippets", SavedSnippetsHandler),
    ("/saved_snippets/" + ID, SavedSnippetHandler),
]
