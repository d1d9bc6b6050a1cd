"""Routes of this resource are added to ROUTES as its handlers are written."""

from __future__ import annotations

import tornado.web

ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = []
