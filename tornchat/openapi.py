"""The API's OpenAPI 3.1 document, generated from the route table and the request Structs.

Each route's handler says what each method decodes (`BaseHandler.params`); msgspec turns those
Structs into JSON Schema. `python -m tornchat.openapi --write` refreshes docs/openapi.json, which
tests/tornchat/test_openapi.py compares with a fresh document; GET /api/v1/openapi.json serves it
(tornchat/handlers/openapi.py, handed `served_document` by make_app).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

import msgspec
import tornado.web

from tornchat import FEATURE_LEVEL, ZULIP_VERSION
from tornchat.base import HTTP_METHODS, ID, BaseHandler
from tornchat.params import Params
from tornchat.routes import ROUTES

Route = tuple[str, type[tornado.web.RequestHandler]]
REF = "#/components/schemas/{name}"
DOC_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "openapi.json")
# The largest id the ID path pattern admits (18 digits: always within SQLite's 64-bit integers).
MAX_PATH_ID = 10**18 - 1

DESCRIPTION = """\
tornchat speaks the Zulip REST API. Parameters are form-encoded: in the query string for GET, in an
application/x-www-form-urlencoded body otherwise. A parameter whose type is a string is sent as is;
every other value (integer, boolean, list, object, null) is sent as JSON text, e.g. `anchor=newest`
but `num_before=10`, `narrow=[{"operator":"channel","operand":"general"}]`. In this document those
parameters carry `contentType: application/json` in the body's `encoding`, or `content:
application/json` as query parameters. Parameters an endpoint does not take are not errors: the
answer names them in `ignored_parameters_unsupported`. Authentication is HTTP Basic with the email
and API key that POST /fetch_api_key returns. Every answer is JSON: `result` is "success" or "error",
`msg` says why, and errors carry a `code`."""

ENVELOPES: dict[str, Any] = {
    "Success": {
        "type": "object",
        "required": ["result", "msg"],
        "properties": {
            "result": {"const": "success"},
            "msg": {"type": "string"},
            "ignored_parameters_unsupported": {"type": "array", "items": {"type": "string"}},
        },
    },
    # An unsupported method on a known path, as Zulip answers it: no `code`, the methods there are.
    "MethodNotAllowed": {
        "type": "object",
        "required": ["result", "msg", "allowed_methods"],
        "properties": {
            "result": {"const": "error"},
            "msg": {"const": "Method Not Allowed"},
            "allowed_methods": {"type": "array", "items": {"type": "string"}},
        },
    },
    "Error": {
        "type": "object",
        "required": ["result", "msg", "code"],
        "properties": {
            "result": {"const": "error"},
            "msg": {"type": "string"},
            "code": {"type": "string"},
        },
    },
}
ENVELOPE_RESPONSES: dict[str, Any] = {
    "200": {
        "description": "Success",
        "content": {"application/json": {"schema": {"$ref": REF.format(name="Success")}}},
    },
    "405": {
        "description": "The method is not one this path takes (a path argument can select another route)",
        "content": {"application/json": {"schema": {"$ref": REF.format(name="MethodNotAllowed")}}},
    },
    "default": {
        "description": "Error",
        "content": {"application/json": {"schema": {"$ref": REF.format(name="Error")}}},
    },
}


def documented_methods(handler: type[tornado.web.RequestHandler]) -> list[str]:
    """The HTTP methods a handler implements (HEAD and OPTIONS, which every handler answers, aside)."""
    base = tornado.web.RequestHandler
    return [m for m in HTTP_METHODS if getattr(handler, m) is not getattr(base, m)]


def generate(routes: list[Route]) -> dict[str, Any]:
    """Return the OpenAPI document of these routes (paths relative to /api/v1)."""
    used = [p for _, handler in routes for p in _declared(handler).values()]
    structs = sorted({p.struct for p in used}, key=lambda s: s.__name__)
    _, components = msgspec.json.schema_components(structs, ref_template=REF)
    paths: dict[str, dict[str, Any]] = {}
    operation_ids: set[str] = set()
    for route, handler in routes:
        template, path_parameters = _template(route, handler)
        item = paths.setdefault(template, {})
        for method in documented_methods(handler):
            operation = _operation(handler, method, path_parameters, components)
            if operation["operationId"] in operation_ids:
                raise ValueError(f"two operations named {operation['operationId']}")
            operation_ids.add(operation["operationId"])
            item[method] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "tornchat", "version": f"{ZULIP_VERSION} (feature level {FEATURE_LEVEL})"},
        "description": DESCRIPTION,
        "servers": [{"url": "/api/v1"}],
        "security": [{"basicAuth": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"basicAuth": {"type": "http", "scheme": "basic"}},
            "schemas": {**ENVELOPES, **_referenced(components, paths)},
        },
    }


def _declared(handler: type[tornado.web.RequestHandler]) -> dict[str, Params[Any]]:
    return dict(handler.params) if issubclass(handler, BaseHandler) else {}


def _operation(
    handler: type[tornado.web.RequestHandler], method: str, path_parameters: list[dict[str, Any]], components: Any
) -> dict[str, Any]:
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", handler.__name__.removesuffix("Handler")).lower()
    operation: dict[str, Any] = {"operationId": f"{method}_{name}", "tags": [handler.__module__.rsplit(".", 1)[-1]]}
    if issubclass(handler, BaseHandler) and not handler.requires_auth:
        operation["security"] = []
    parameters = list(path_parameters)
    params = _declared(handler).get(method)
    if params is not None:
        properties = components[params.struct.__name__]["properties"]
        fields = list(_fields(params, properties))
        if method == "get":
            parameters += [_query_parameter(*field) for field in fields]
        else:
            operation["requestBody"] = _form_body(fields)
    if parameters:
        operation["parameters"] = parameters
    operation["responses"] = getattr(handler, "openapi_responses", ENVELOPE_RESPONSES)
    return operation


def _fields(params: Params[Any], properties: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], bool, bool]]:
    """(name, schema, required, verbatim) of each parameter, then of each alias (deprecated)."""
    schemas = {f.name: _without_null(properties[f.name]) if f.verbatim else properties[f.name] for f in params.fields}
    verbatim = {field.name: field.verbatim for field in params.fields}
    for field in params.fields:
        yield field.name, schemas[field.name], field.required, field.verbatim
    for alias, canonical in params.aliases.items():
        schema = {**schemas[canonical], "deprecated": True, "description": f"Same as `{canonical}` (not both)."}
        yield alias, schema, False, verbatim[canonical]


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A text parameter's schema: its None stands for "not sent", which no text can say."""
    members = [m for m in schema.get("anyOf", ()) if m != {"type": "null"}]
    rest = {k: v for k, v in schema.items() if k != "anyOf" and not (k == "default" and v is None)}
    if not members:
        return rest
    return {**members[0], **rest} if len(members) == 1 else {"anyOf": members, **rest}


def _query_parameter(name: str, schema: dict[str, Any], required: bool, verbatim: bool) -> dict[str, Any]:
    parameter: dict[str, Any] = {"name": name, "in": "query", "required": required}
    if verbatim:
        parameter["schema"] = schema
    else:
        parameter["content"] = {"application/json": {"schema": schema}}
    return parameter


def _form_body(fields: list[tuple[str, dict[str, Any], bool, bool]]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {name: s for name, s, _, _ in fields}}
    required = [name for name, _, is_required, _ in fields if is_required]
    if required:
        schema["required"] = required
    media: dict[str, Any] = {"schema": schema}
    encoding = {name: {"contentType": "application/json"} for name, _, _, verbatim in fields if not verbatim}
    if encoding:
        media["encoding"] = encoding
    return {"required": bool(required), "content": {"application/x-www-form-urlencoded": media}}


def _template(route: str, handler: type[tornado.web.RequestHandler]) -> tuple[str, list[dict[str, Any]]]:
    """Turn a route's regex into a path template, naming its groups after the methods' arguments."""
    pieces = _split_groups(route)
    groups = [piece for is_group, piece in pieces if is_group]
    names: list[str] | None = None
    for method in documented_methods(handler):
        arguments = list(inspect.signature(getattr(handler, method)).parameters)[1:]
        if names is not None and arguments != names:
            raise ValueError(f"{handler.__name__}: methods name the path arguments differently")
        names = arguments
    if names is None or len(names) != len(groups):
        raise ValueError(f"{handler.__name__}: {len(groups)} path groups in {route!r}")
    template, parameters, index = "", [], 0
    for is_group, piece in pieces:
        if not is_group:
            template += re.sub(r"\\(.)", r"\1", piece)
            continue
        name = names[index]
        index += 1
        template += "{" + name + "}"
        if piece == ID:
            schema: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": MAX_PATH_ID}
        else:
            schema = {"type": "string", "pattern": f"^(?:{piece[1:-1]})$"}
        parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
    return template, parameters


def _split_groups(route: str) -> list[tuple[bool, str]]:
    """Split a route regex into literal text and its top-level capturing groups."""
    pieces: list[tuple[bool, str]] = []
    depth, start, i = 0, 0, 0
    while i < len(route):
        char = route[i]
        if char == "\\":
            i += 2
            continue
        if char == "(":
            if depth == 0:
                pieces.append((False, route[start:i]))
                start = i
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                pieces.append((True, route[start : i + 1]))
                start = i + 1
        i += 1
    pieces.append((False, route[start:]))
    return [(is_group, piece) for is_group, piece in pieces if piece]


def _referenced(components: dict[str, Any], paths: dict[str, Any]) -> dict[str, Any]:
    """The components some operation refers to, directly or through another component."""
    prefix = REF.format(name="")
    wanted: set[str] = set()
    pending = [paths]
    while pending:
        for ref in re.findall(r'"\$ref": "([^"]+)"', json.dumps(pending.pop())):
            name = ref.removeprefix(prefix)
            if name in components and name not in wanted:
                wanted.add(name)
                pending.append(components[name])
    return {name: components[name] for name in sorted(wanted)}


def render(document: dict[str, Any]) -> str:
    """The document as docs/openapi.json holds it."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


@functools.cache
def served_document() -> bytes:
    """The document of tornchat's own routes, built on first use."""
    return render(generate(ROUTES)).encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tornchat.openapi", description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"write the document to {DOC_PATH}")
    args = parser.parse_args(argv)
    text = served_document().decode()
    if args.write:
        with open(DOC_PATH, "w", encoding="utf-8") as file:
            file.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
