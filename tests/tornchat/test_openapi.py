"""The OpenAPI document: generated from the route table, checked in, served, and true to the code."""

from __future__ import annotations

import json

import msgspec
import pytest
import tornado.web

from tests.support.helpers import assert_error, assert_success
from tornchat.base import BaseHandler
from tornchat.openapi import DOC_PATH, documented_methods, generate, render
from tornchat.params import Params
from tornchat.routes import ROUTES

FORM = "application/x-www-form-urlencoded"
DOCUMENT = generate(ROUTES)


def operation(path: str, method: str) -> dict:
    return DOCUMENT["paths"][path][method]


def query_parameter(path: str, name: str) -> dict:
    return next(p for p in operation(path, "get")["parameters"] if p["name"] == name)


def test_checked_in_document_is_the_generated_one() -> None:
    with open(DOC_PATH, encoding="utf-8") as file:
        checked_in = file.read()
    assert checked_in == render(DOCUMENT), "docs/openapi.json is stale: run `python -m tornchat.openapi --write`"


def test_every_route_and_method_is_an_operation() -> None:
    operations = {(op["operationId"]) for item in DOCUMENT["paths"].values() for op in item.values()}
    expected = sum(len(documented_methods(handler)) for _, handler in ROUTES)
    assert len(operations) == expected
    assert expected > 60
    assert set(DOCUMENT["paths"]["/drafts/{draft_id}"]) == {"patch", "delete"}
    assert set(DOCUMENT["paths"]["/messages"]) == {"get", "post"}


def test_path_ids_and_other_groups() -> None:
    (draft_id,) = operation("/drafts/{draft_id}", "patch")["parameters"]
    assert draft_id == {
        "name": "draft_id",
        "in": "path",
        "required": True,
        "schema": {"type": "integer", "minimum": 0, "maximum": 10**18 - 1},
    }
    (email,) = operation("/users/{email}", "get")["parameters"][:1]
    assert email["in"] == "path" and email["schema"] == {"type": "string", "pattern": "^(?:[^/]*[^/0-9][^/]*)$"}
    assert "/openapi.json" in DOCUMENT["paths"]


def test_query_parameters_say_which_values_are_json() -> None:
    anchor = query_parameter("/messages", "anchor")
    assert anchor["schema"] == {"type": "string"} and "content" not in anchor
    num_before = query_parameter("/messages", "num_before")
    assert "schema" not in num_before
    assert num_before["content"]["application/json"]["schema"]["anyOf"][0] == {"type": "integer", "minimum": 0}


def test_form_bodies_say_which_values_are_json() -> None:
    media = operation("/messages", "post")["requestBody"]["content"][FORM]
    assert media["schema"]["required"] == ["type", "content"]
    assert set(media["encoding"]) == {"read_by_sender"}
    assert media["encoding"]["read_by_sender"] == {"contentType": "application/json"}
    subject = media["schema"]["properties"]["subject"]
    assert subject["deprecated"] is True and subject["type"] == "string"
    drafts = operation("/drafts", "post")["requestBody"]
    assert drafts["required"] is False
    items = drafts["content"][FORM]["schema"]["properties"]["drafts"]["items"]
    assert items == {"$ref": "#/components/schemas/DraftData"}
    assert "DraftData" in DOCUMENT["components"]["schemas"]


def test_authentication_and_envelopes() -> None:
    assert DOCUMENT["security"] == [{"basicAuth": []}]
    assert operation("/fetch_api_key", "post")["security"] == []
    assert operation("/server_settings", "get")["security"] == []
    assert "security" not in operation("/messages", "get")
    error = DOCUMENT["components"]["schemas"]["Error"]
    assert error["required"] == ["result", "msg", "code"]
    responses = operation("/drafts", "get")["responses"]
    assert responses["default"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


def test_served_without_credentials(live) -> None:  # type: ignore[no-untyped-def]
    response = live.anonymous().get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == json.loads(render(DOCUMENT))


def test_documented_json_parameter_is_decoded_as_json(live) -> None:  # type: ignore[no-untyped-def]
    # The document's split (text vs JSON) is the one the server applies.
    response = live.owner.get("/messages", {"anchor": "newest", "num_before": "{", "num_after": "0"})
    assert_error(response, "num_before is not valid JSON", "BAD_REQUEST", 400)
    response = live.owner.get("/messages", {"anchor": "newest", "num_before": "1", "num_after": "0"})
    assert_success(response)


def test_head_decodes_the_get_parameters(live) -> None:  # type: ignore[no-untyped-def]
    response = live.owner.request("HEAD", "/messages", {"anchor": "newest", "num_before": "x", "num_after": "0"})
    assert response.status_code == 400
    response = live.owner.request("HEAD", "/messages", {"anchor": "newest", "num_before": "1", "num_after": "0"})
    assert response.status_code == 200


class Thing(msgspec.Struct):
    name: str
    count: int = 0


THING = Params(Thing)


class MismatchedHandler(BaseHandler):
    params = {"patch": THING}

    def get(self, thing_id: str) -> None:
        self.respond()

    def patch(self, other_id: str) -> None:
        self.respond()


class ThingHandler(BaseHandler):
    params = {"patch": THING}

    def patch(self, thing_id: str, part: str) -> None:
        self.respond()


def test_generated_from_the_declarations() -> None:
    document = generate([(r"/things/(\d{1,18})/(a|b)\.txt", ThingHandler)])
    (path,) = document["paths"]
    assert path == "/things/{thing_id}/{part}.txt"
    patch = document["paths"][path]["patch"]
    assert [p["name"] for p in patch["parameters"]] == ["thing_id", "part"]
    assert patch["parameters"][1]["schema"] == {"type": "string", "pattern": "^(?:a|b)$"}
    media = patch["requestBody"]["content"][FORM]
    assert media["schema"]["required"] == ["name"]
    assert media["encoding"] == {"count": {"contentType": "application/json"}}
    assert patch["operationId"] == "patch_thing"


def test_methods_must_name_path_arguments_alike() -> None:
    with pytest.raises(ValueError, match="name the path arguments differently"):
        generate([(r"/things/(\d{1,18})", MismatchedHandler)])
    with pytest.raises(ValueError, match="path groups"):
        generate([(r"/things", ThingHandler)])


def test_operation_ids_are_unique() -> None:
    with pytest.raises(ValueError, match="two operations named patch_thing"):
        generate([(r"/things/(\d{1,18})/(a|b)", ThingHandler), (r"/other/(\d{1,18})/(c)", ThingHandler)])


def test_plain_tornado_handlers_have_no_parameters() -> None:
    class Plain(tornado.web.RequestHandler):
        def get(self) -> None:
            self.finish()

    document = generate([(r"/plain", Plain)])
    assert "parameters" not in document["paths"]["/plain"]["get"]
