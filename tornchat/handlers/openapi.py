"""The API's own description: GET /api/v1/openapi.json."""

from __future__ import annotations

from typing import Any

from tornchat.base import BaseHandler


class OpenApiHandler(BaseHandler):
    """GET /api/v1/openapi.json: this document, to anyone (it describes the API, no data).

    The document (tornchat.openapi) is generated from the route table, which names this handler:
    make_app hands it over as the application setting `openapi_document`, a function returning its bytes.
    """

    requires_auth = False
    openapi_responses: dict[str, Any] = {
        "200": {
            "description": "This document",
            "content": {"application/json": {"schema": {"type": "object", "required": ["openapi", "paths"]}}},
        },
    }

    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(self.settings["openapi_document"]())
