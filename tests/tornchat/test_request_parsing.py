"""Request parsing over raw HTTP: form bodies of every kind on every method, the query string, raw values.

Bodies are built by hand here, as each client builds them: zulip-js posts `multipart/form-data`
(an empty one for a call without parameters), the zulip package and zulip-terminal urlencode,
curl users put parameters in the query string of PATCH and DELETE.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
import requests

from tests.support.helpers import assert_error, assert_success

BOUNDARY = "----tornchatBoundary7MA4YWxkTrZu0gW"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
FORM = "application/x-www-form-urlencoded"


def multipart(fields: dict[str, str]) -> bytes:
    """A multipart/form-data body of text fields, as browsers and Node's form-data write it."""
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        for name, value in fields.items()
    ]
    return ("".join(parts) + f"--{BOUNDARY}--\r\n").encode()


def urlencoded(fields: dict[str, str]) -> bytes:
    return "&".join(f"{quote(k)}={quote(v)}" for k, v in fields.items()).encode()


@pytest.fixture
def raw(live):
    """A requests session authenticated as the owner that sends bodies exactly as given."""
    session = requests.Session()
    session.auth = (live.owner.email, live.owner.api_key)

    def send(method, path, body=b"", content_type=None, query=None):
        headers = {"Content-Type": content_type} if content_type is not None else {}
        return session.request(method, live.base_url + "/api/v1" + path, data=body, headers=headers, params=query)

    yield send
    session.close()


def send_message(live, content="hello"):
    body = {"type": "stream", "to": "general", "topic": "parsing", "content": content}
    return assert_success(live.owner.post("/messages", body))["id"]


def content_of(live, message_id):
    params = {"anchor": message_id, "num_before": 0, "num_after": 0, "apply_markdown": False}
    return assert_success(live.owner.get("/messages", params))["messages"][0]["content"]


def reaction_names(live, message_id):
    params = {"anchor": message_id, "num_before": 0, "num_after": 0}
    return [r["emoji_name"] for r in assert_success(live.owner.get("/messages", params))["messages"][0]["reactions"]]


# -- empty and malformed bodies ---------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [MULTIPART, "multipart/form-data", FORM, f"{FORM}; charset=UTF-8", "application/json", None],
    ids=["multipart", "multipart-no-boundary", "urlencoded", "urlencoded-charset", "json", "none"],
)
def test_a_post_without_parameters_registers(raw, content_type):
    # zulip-js's queues.register({}) sends `multipart/form-data; boundary=...` and no body at all.
    body = assert_success(raw("POST", "/register", b"", content_type))
    assert body["queue_id"] and "ignored_parameters_unsupported" not in body


def test_a_multipart_body_with_no_parts_is_no_parameters(raw):
    assert_success(raw("POST", "/register", f"--{BOUNDARY}--\r\n".encode(), MULTIPART))


def test_a_multipart_body_without_its_final_boundary_is_refused(raw, live):
    truncated = multipart({"content": "x"})[: -len(f"--{BOUNDARY}--\r\n")]
    response = raw("POST", "/register", truncated, MULTIPART)
    assert_error(response, "Malformed request body: Invalid multipart/form-data: no final boundary found")


def test_a_multipart_body_without_a_boundary_parameter_is_refused(raw):
    response = raw("POST", "/register", multipart({"a": "b"}), "multipart/form-data")
    assert_error(response, "Malformed request body: Invalid multipart/form-data: multipart boundary not found")


def test_a_refused_body_writes_nothing(raw, live, general):
    fields = {"type": "stream", "to": "general", "topic": "t", "content": "never"}
    response = raw("POST", "/messages", multipart(fields)[:-10], MULTIPART)
    assert response.status_code == 400
    params = {"anchor": "newest", "num_before": 5, "num_after": 0}
    assert assert_success(live.owner.get("/messages", params))["messages"] == []


# -- every kind of body, every method -----------------------------------------------------------


@pytest.mark.parametrize("encode,content_type", [(multipart, MULTIPART), (urlencoded, FORM)], ids=["multipart", "form"])
def test_post_reads_its_body(raw, live, general, encode, content_type):
    fields = {"type": "stream", "to": "general", "topic": "t", "content": "caf\u00e9 \u2615"}
    message_id = assert_success(raw("POST", "/messages", encode(fields), content_type))["id"]
    assert content_of(live, message_id) == "caf\u00e9 \u2615"


def test_the_media_type_is_case_insensitive(raw, live, general):
    fields = {"type": "stream", "to": "general", "topic": "t", "content": "upper"}
    message_id = assert_success(
        raw("POST", "/messages", multipart(fields), MULTIPART.replace("multipart/form-data", "Multipart/Form-Data"))
    )["id"]
    assert content_of(live, message_id) == "upper"


def test_unused_multipart_parameters_are_reported_as_ignored(raw, general):
    fields = {"type": "stream", "to": "general", "topic": "t", "content": "x", "colour": "red"}
    assert assert_success(raw("POST", "/messages", multipart(fields), MULTIPART))["ignored_parameters_unsupported"] == [
        "colour"
    ]


def send_in(raw, where, method, path, fields):
    """Send fields as a multipart body, a urlencoded body or the query string."""
    if where == "multipart":
        return raw(method, path, multipart(fields), MULTIPART)
    if where == "urlencoded":
        return raw(method, path, urlencoded(fields), FORM)
    return raw(method, path, query=fields)


@pytest.mark.parametrize("where", ["multipart", "urlencoded", "query"])
def test_patch_reads_body_or_query_string(raw, live, general, where):
    message_id = send_message(live)
    fields = {"content": f"edited by {where}"}
    assert_success(send_in(raw, where, "PATCH", f"/messages/{message_id}", fields))
    assert content_of(live, message_id) == f"edited by {where}"


@pytest.mark.parametrize("where", ["multipart", "urlencoded", "query"])
def test_delete_reads_body_or_query_string(raw, live, general, where):
    message_id = send_message(live)
    assert_success(live.owner.post(f"/messages/{message_id}/reactions", {"emoji_name": "smile"}))
    fields = {"emoji_name": "smile"}
    assert_success(send_in(raw, where, "DELETE", f"/messages/{message_id}/reactions", fields))
    assert reaction_names(live, message_id) == []


def test_delete_with_a_json_list_in_the_query_string(raw, live, general):
    response = raw("DELETE", "/users/me/subscriptions", query={"subscriptions": json.dumps(["general"])})
    assert assert_success(response)["removed"] == ["general"]


def test_a_delete_missing_its_parameter_names_it(raw, live, general):
    message_id = send_message(live)
    response = raw("DELETE", f"/messages/{message_id}/reactions", b"", MULTIPART)
    assert_error(response, "At least one of the following arguments must be present: emoji_name, emoji_code")


def test_post_reads_the_query_string_too(raw, live, general):
    fields = {"type": "stream", "to": "general", "topic": "t", "content": "from the query"}
    message_id = assert_success(raw("POST", "/messages", query=fields))["id"]
    assert content_of(live, message_id) == "from the query"


def test_the_body_wins_over_the_query_string(raw, live, general):
    message_id = send_message(live)
    response = raw("PATCH", f"/messages/{message_id}", urlencoded({"content": "body"}), FORM, {"content": "query"})
    assert_success(response)
    assert content_of(live, message_id) == "body"


def test_a_json_body_carries_no_parameters(raw, general):
    body = json.dumps({"type": "stream", "to": "general", "topic": "t", "content": "x"}).encode()
    assert_error(
        raw("POST", "/messages", body, "application/json"), "Missing 'type' argument", "REQUEST_VARIABLE_MISSING"
    )


# -- character sets -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "charset,encoded,text",
    [
        ("UTF-8", "caf%C3%A9", "caf\u00e9"),
        ("utf-8", "caf%C3%A9", "caf\u00e9"),
        ("ISO-8859-1", "caf%E9", "caf\u00e9"),
        ('"windows-1252"', "%80uro", "\u20acuro"),
        ("no-such-charset", "caf%C3%A9", "caf\u00e9"),
    ],
)
def test_a_body_is_read_in_its_charset(raw, live, general, charset, encoded, text):
    body = f"type=stream&to=general&topic=t&content={encoded}".encode()
    message_id = assert_success(raw("POST", "/messages", body, f"{FORM}; charset={charset}"))["id"]
    assert content_of(live, message_id) == text


# -- values sent raw ----------------------------------------------------------------------------


def test_integers_and_booleans_sent_raw(raw, live, general):
    send_message(live, "one")
    query = {"anchor": "newest", "num_before": "5", "num_after": "0", "apply_markdown": "false"}
    messages = assert_success(raw("GET", "/messages", query=query))["messages"]
    assert [m["content"] for m in messages] == ["one"]


@pytest.mark.parametrize(
    "value,msg",
    [
        ('"5"', "num_before is not an integer"),
        ("five", "num_before is not valid JSON"),
        ("5.5", "num_before is not an integer"),
    ],
)
def test_an_integer_parameter_refuses_other_values(raw, value, msg):
    assert_error(raw("GET", "/messages", query={"anchor": "newest", "num_before": value, "num_after": "0"}), msg)


@pytest.mark.parametrize(
    "value,msg", [("True", "apply_markdown is not valid JSON"), ('"true"', "apply_markdown is not a boolean")]
)
def test_a_boolean_parameter_refuses_other_values(raw, value, msg):
    query = {"anchor": "newest", "num_before": "1", "num_after": "0", "apply_markdown": value}
    assert_error(raw("GET", "/messages", query=query), msg)


@pytest.mark.parametrize("to", ["general", "1", '["general"]', "[1]"], ids=["name", "id", "name-list", "id-list"])
def test_a_channel_named_in_to_as_text_or_json(raw, live, general, to):
    assert general == 1
    fields = {"type": "stream", "to": to, "topic": "t", "content": f"to {to}"}
    message_id = assert_success(raw("POST", "/messages", urlencoded(fields), FORM))["id"]
    assert content_of(live, message_id) == f"to {to}"


def test_direct_recipients_as_text_or_json(raw, live):
    other = live.make_user()
    forms = [other.email, f"{other.email},{live.owner.email}", json.dumps([other.email]), json.dumps([other.id])]
    for to in forms:
        fields = {"type": "direct", "to": to, "content": "psst"}
        assert_success(raw("POST", "/messages", multipart(fields), MULTIPART))


def test_direct_recipients_as_a_bare_number_are_refused(raw, live):
    other = live.make_user()
    fields = {"type": "direct", "to": str(other.id), "content": "psst"}
    assert_error(raw("POST", "/messages", urlencoded(fields), FORM), "Invalid data type for recipients")
