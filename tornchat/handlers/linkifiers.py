"""Linkifiers: GET and PATCH /realm/linkifiers, POST /realm/filters, PATCH and DELETE /realm/filters/{id}."""

from __future__ import annotations

import msgspec
import tornado.web

from storage.org import linkifiers
from tornchat.base import ID, BaseHandler
from tornchat.params import Params


class SaveLinkifier(msgspec.Struct):
    pattern: str
    url_template: str
    # Absent: null on creation, unchanged on update; "" resets to null.
    example_input: str | None = None
    reverse_template: str | None = None
    alternative_url_templates: list[str] | None = None


class ReorderLinkifiers(msgspec.Struct):
    ordered_linkifier_ids: list[int]


SAVE_LINKIFIER = Params(SaveLinkifier)
REORDER_LINKIFIERS = Params(ReorderLinkifiers)

# Changes are for administrators, checked before the parameters as Zulip's decorator does. GET
# and DELETE read no parameters and, like Zulip's views outside its typed-parameter framework,
# report none as ignored.


def _fields(p: SaveLinkifier) -> linkifiers.LinkifierFields:
    return linkifiers.LinkifierFields(
        p.pattern, p.url_template, p.example_input, p.reverse_template, p.alternative_url_templates
    )


class LinkifiersHandler(BaseHandler):
    params = {"patch": REORDER_LINKIFIERS}

    def get(self) -> None:
        self.respond({"linkifiers": self.server.db.read(linkifiers.list_linkifiers)})

    def patch(self) -> None:
        linkifiers.check_admin(self.user)
        p = self.parse()
        self.server.db.write(linkifiers.reorder_linkifiers, self.user, p.ordered_linkifier_ids)
        self.respond()


class FiltersHandler(BaseHandler):
    params = {"post": SAVE_LINKIFIER}

    def post(self) -> None:
        linkifiers.check_admin(self.user)
        p = self.parse()
        linkifier_id = self.server.db.write(linkifiers.create_linkifier, self.user, _fields(p))
        self.respond({"id": linkifier_id})


class FilterHandler(BaseHandler):
    params = {"patch": SAVE_LINKIFIER}

    def patch(self, linkifier_id: str) -> None:
        linkifiers.check_admin(self.user)
        p = self.parse()
        self.server.db.write(linkifiers.update_linkifier, self.user, int(linkifier_id), _fields(p))
        self.respond()

    def delete(self, linkifier_id: str) -> None:
        linkifiers.check_admin(self.user)
        self.server.db.write(linkifiers.delete_linkifier, self.user, int(linkifier_id))
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/realm/linkifiers", LinkifiersHandler),
    (r"/realm/filters", FiltersHandler),
    ("/realm/filters/" + ID, FilterHandler),
]
