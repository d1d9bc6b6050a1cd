"""Linkifiers: GET/PATCH /realm/linkifiers, POST /realm/filters, PATCH/DELETE /realm/filters/{id}; validation."""

from __future__ import annotations

import pytest

from storage.org.linkifiers import LINKIFIER_COLUMNS
from tests.support.helpers import assert_error, assert_success

TICKET = {"pattern": "#(?P<id>[0-9]+)", "url_template": "https://trac.example.com/ticket/{id}"}
NOT_ADMIN = ("Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL")
NOT_FOUND = "Linkifier not found."


def create(client, pattern="#(?P<id>[0-9]+)", url_template="https://trac.example.com/ticket/{id}", **extra):
    body = assert_success(client.post("/realm/filters", {"pattern": pattern, "url_template": url_template, **extra}))
    assert set(body) == {"result", "msg", "id"}, body
    return body["id"]


def listed(client):
    return assert_success(client.get("/realm/linkifiers"))["linkifiers"]


def linkifier_events(live, count):
    return [(event, ids) for event, ids in live.events()[count:] if event["type"] == "realm_linkifiers"]


def expected(linkifier_id, pattern, url_template, example_input=None, reverse_template=None, alternatives=()):
    return {
        "id": linkifier_id,
        "pattern": pattern,
        "url_template": url_template,
        "example_input": example_input,
        "reverse_template": reverse_template,
        "alternative_url_templates": list(alternatives),
    }


def test_create_list_and_event_to_every_active_user(live):
    member = live.make_user("member")
    guest = live.make_user("guest")
    count = len(live.events())
    linkifier_id = create(live.owner, "  #(?P<id>[0-9]+) ", " https://trac.example.com/ticket/{id}\n")
    full = [expected(linkifier_id, "#(?P<id>[0-9]+)", "https://trac.example.com/ticket/{id}")]
    # Any user may read the list; stripped as Zulip stores them.
    assert listed(live.owner) == listed(member) == listed(guest) == full
    assert linkifier_events(live, count) == [
        ({"type": "realm_linkifiers", "realm_linkifiers": full}, sorted([live.owner.id, member.id, guest.id]))
    ]


def test_optional_fields_round_trip_and_reset(live):
    linkifier_id = create(
        live.owner,
        "(?P<org>[a-z]+)/(?P<repo>[a-z]+)#(?P<id>[0-9]+)",
        "https://github.com/{org}/{repo}/issues/{id}",
        example_input="zulip/zulip#123",
        reverse_template="{org}/{repo}#{id}",
        alternative_url_templates=["https://github.com/{org}/{repo}/pull/{id}"],
    )
    [linkifier] = listed(live.owner)
    assert linkifier["example_input"] == "zulip/zulip#123"
    assert linkifier["reverse_template"] == "{org}/{repo}#{id}"
    assert linkifier["alternative_url_templates"] == ["https://github.com/{org}/{repo}/pull/{id}"]
    # PATCH without the optional fields keeps them; "" resets to null.
    params = {"pattern": "(?P<org>[a-z]+)/(?P<repo>[a-z]+)#(?P<id>[0-9]+)"}
    params["url_template"] = "https://github.com/{org}/{repo}/issues/{id}"
    assert_success(live.owner.patch(f"/realm/filters/{linkifier_id}", params))
    assert listed(live.owner)[0] == linkifier
    assert_success(live.owner.patch(f"/realm/filters/{linkifier_id}", {**params, "reverse_template": ""}))
    assert listed(live.owner)[0]["reverse_template"] is None
    assert_success(
        live.owner.patch(
            f"/realm/filters/{linkifier_id}", {**params, "example_input": " ", "alternative_url_templates": []}
        )
    )
    assert listed(live.owner)[0] == expected(linkifier_id, params["pattern"], params["url_template"])


def test_reverse_template_literal_braces(live):
    create(
        live.owner,
        "T{(?P<id>[0-9]+)}",
        "https://example.com/{id}",
        example_input="T{42}",
        reverse_template="T{{{id}}}",
    )
    assert listed(live.owner)[0]["reverse_template"] == "T{{{id}}}"


def test_update_and_event(live):
    linkifier_id = create(live.owner)
    count = len(live.events())
    params = {"pattern": "#(?P<id>[0-9]{2,})", "url_template": "https://trac.example.com/issues/{id}"}
    assert_success(live.owner.patch(f"/realm/filters/{linkifier_id}", params))
    full = [expected(linkifier_id, params["pattern"], params["url_template"])]
    assert listed(live.owner) == full
    assert linkifier_events(live, count) == [({"type": "realm_linkifiers", "realm_linkifiers": full}, [live.owner.id])]
    # Saving a linkifier with its own pattern is no duplicate.
    assert_success(live.owner.patch(f"/realm/filters/{linkifier_id}", params))


def test_delete_and_event(live):
    first = create(live.owner, "a(?P<id>[0-9]+)")
    second = create(live.owner, "b(?P<id>[0-9]+)")
    count = len(live.events())
    assert_success(live.owner.delete(f"/realm/filters/{first}"))
    assert [linkifier["id"] for linkifier in listed(live.owner)] == [second]
    [(event, ids)] = linkifier_events(live, count)
    assert [linkifier["id"] for linkifier in event["realm_linkifiers"]] == [second]
    assert_error(live.owner.delete(f"/realm/filters/{first}"), NOT_FOUND)
    assert_error(live.owner.patch(f"/realm/filters/{first}", TICKET), NOT_FOUND)
    # Ids are never reused.
    assert create(live.owner, "c(?P<id>[0-9]+)") > second


def test_reorder(live):
    ids = [create(live.owner, f"{n}#(?P<id>[0-9]+)") for n in range(3)]
    assert [linkifier["id"] for linkifier in listed(live.owner)] == ids
    count = len(live.events())
    new_order = [ids[2], ids[0], ids[1]]
    assert_success(live.owner.patch("/realm/linkifiers", {"ordered_linkifier_ids": new_order}))
    assert [linkifier["id"] for linkifier in listed(live.owner)] == new_order
    [(event, _)] = linkifier_events(live, count)
    assert [linkifier["id"] for linkifier in event["realm_linkifiers"]] == new_order
    # A new linkifier goes last; deleting one keeps the others' order.
    newest = create(live.owner, "new#(?P<id>[0-9]+)")
    assert_success(live.owner.delete(f"/realm/filters/{ids[0]}"))
    assert [linkifier["id"] for linkifier in listed(live.owner)] == [ids[2], ids[1], newest]


def test_reorder_errors(live):
    # With no linkifiers the empty list is the whole list: success and no event.
    count = len(live.events())
    assert_success(live.owner.patch("/realm/linkifiers", {"ordered_linkifier_ids": []}))
    assert linkifier_events(live, count) == []
    ids = [create(live.owner, f"{n}#(?P<id>[0-9]+)") for n in range(2)]
    duplicated = "The ordered list must not contain duplicated linkifiers"
    incomplete = "The ordered list must enumerate all existing linkifiers exactly once"
    reorder = live.owner.patch
    assert_error(reorder("/realm/linkifiers", {"ordered_linkifier_ids": [*ids, ids[0]]}), duplicated)
    assert_error(reorder("/realm/linkifiers", {"ordered_linkifier_ids": ids[:1]}), incomplete)
    assert_error(reorder("/realm/linkifiers", {"ordered_linkifier_ids": [*ids, 999]}), incomplete)
    assert_error(
        reorder("/realm/linkifiers", {}), "Missing 'ordered_linkifier_ids' argument", "REQUEST_VARIABLE_MISSING"
    )
    assert_error(
        reorder("/realm/linkifiers", {"ordered_linkifier_ids": "[1, "}), "ordered_linkifier_ids is not valid JSON"
    )
    assert [linkifier["id"] for linkifier in listed(live.owner)] == ids


@pytest.mark.parametrize("role", ["moderator", "member", "guest"])
def test_changes_need_an_administrator(live, role):
    linkifier_id = create(live.owner)
    client = live.make_user(role)
    admin = live.make_user("admin")
    # Checked before the parameters, as Zulip's decorator does.
    assert_error(client.post("/realm/filters", {}), *NOT_ADMIN)
    assert_error(client.post("/realm/filters", TICKET), *NOT_ADMIN)
    assert_error(client.patch(f"/realm/filters/{linkifier_id}", TICKET), *NOT_ADMIN)
    assert_error(client.patch(f"/realm/filters/{linkifier_id + 1}", TICKET), *NOT_ADMIN)
    assert_error(client.delete(f"/realm/filters/{linkifier_id}"), *NOT_ADMIN)
    assert_error(client.patch("/realm/linkifiers", {"ordered_linkifier_ids": [linkifier_id]}), *NOT_ADMIN)
    assert len(listed(client)) == 1
    # An administrator (not only the owner) may change them.
    assert_success(admin.delete(f"/realm/filters/{linkifier_id}"))


def test_missing_parameters(live):
    missing = "REQUEST_VARIABLE_MISSING"
    assert_error(live.owner.post("/realm/filters", {"url_template": "x"}), "Missing 'pattern' argument", missing)
    assert_error(live.owner.post("/realm/filters", {"pattern": "x"}), "Missing 'url_template' argument", missing)
    linkifier_id = create(live.owner)
    assert_error(
        live.owner.patch(f"/realm/filters/{linkifier_id}", {"pattern": "x"}), "Missing 'url_template' argument", missing
    )
    body = {**TICKET, "alternative_url_templates": "https://x"}
    assert_error(live.owner.post("/realm/filters", body), "alternative_url_templates is not valid JSON")
    body = {**TICKET, "alternative_url_templates": [1]}
    assert_error(live.owner.post("/realm/filters", body), "alternative_url_templates[0] is not a string")


def test_unauthenticated(live):
    response = live.anonymous().get("/realm/linkifiers")
    assert response.status_code == 401


URL = "https://trac.example.com/ticket/{id}"
ID = "#(?P<id>[0-9]+)"
GROUP_NOT_IN_PATTERN = "Group 'hello' in URL template is not present in linkifier pattern."


@pytest.mark.parametrize(
    ("params", "msg", "field"),
    [
        ({"pattern": "  ", "url_template": URL}, "This field cannot be blank.", "pattern"),
        ({"pattern": ID, "url_template": " "}, "This field cannot be blank.", "url_template"),
        ({"pattern": "(foo", "url_template": URL}, "Bad regular expression: missing ): (foo", "__all__"),
        (
            {"pattern": r"ZUL-(?P<id>\d????)", "url_template": URL},
            "Bad regular expression: bad repetition operator: ????",
            "__all__",
        ),
        # Python features RE2 lacks (lookarounds, backreferences) cannot run: refused as RE2 does.
        (
            {"pattern": r"#(?P<id>\d+)(?=x)", "url_template": URL},
            "Bad regular expression: invalid perl operator: (?=",
            "__all__",
        ),
        (
            {"pattern": r"(?P<id>x)(?P=id)", "url_template": URL},
            "Bad regular expression: invalid perl operator: (?P",
            "__all__",
        ),
        # RE2 syntax that is no Python regular expression is refused too (the spec's promise).
        (
            {"pattern": r"#(?P<id>\pL+)", "url_template": URL},
            r"Bad regular expression: bad escape \p at position 8",
            "__all__",
        ),
        ({"pattern": ID, "url_template": "https://example.com/{id"}, "Invalid URL template.", "url_template"),
        ({"pattern": ID, "url_template": "https://example.com/{bar++}"}, "Invalid URL template.", "url_template"),
        (
            {"pattern": ID, "url_template": "$fgfg"},
            "Group 'id' in linkifier pattern is not present in URL template.",
            "__all__",
        ),
        ({"pattern": ID, "url_template": "https://example.com/{hello}"}, GROUP_NOT_IN_PATTERN, "__all__"),
        (
            {"pattern": r"ZUL-(?P<id>\d+)-(?P<hello>\d+)", "url_template": "https://example.com/{hello}"},
            "Group 'id' in linkifier pattern is not present in URL template.",
            "__all__",
        ),
        (
            {**TICKET, "alternative_url_templates": ["https://example.com/{id"]},
            "Invalid URL template.",
            "alternative_url_templates",
        ),
        ({**TICKET, "alternative_url_templates": [" "]}, "Invalid URL template.", "alternative_url_templates"),
        ({**TICKET, "example_input": "no number"}, "Example input does not match the linkifier pattern.", "__all__"),
        (
            {**TICKET, "example_input": "#12", "reverse_template": "#{id}0"},
            "Example text does not match auto-conversion field.",
            "__all__",
        ),
        (
            {**TICKET, "example_input": "#12", "reverse_template": "#{id"},
            "Invalid auto-conversion field: missing '}' character.",
            "__all__",
        ),
        (
            {**TICKET, "example_input": "#12", "reverse_template": "#{}"},
            "Invalid auto-conversion field: empty field name.",
            "__all__",
        ),
        (
            {**TICKET, "example_input": "#12", "reverse_template": "#{nope}"},
            "Group 'nope' in auto-conversion field is not present in linkifier pattern.",
            "__all__",
        ),
        (
            {**TICKET, "reverse_template": "#{id}"},
            "Example text is required when auto-conversion field is set.",
            "__all__",
        ),
    ],
)
def test_validation_errors(live, params, msg, field):
    body = assert_error(live.owner.post("/realm/filters", params), msg)
    assert msg in body["errors"][field], body
    assert listed(live.owner) == []
    linkifier_id = create(live.owner, "existing(?P<id>[0-9]+)")
    body = assert_error(live.owner.patch(f"/realm/filters/{linkifier_id}", params), msg)
    assert msg in body["errors"][field], body
    assert [linkifier["pattern"] for linkifier in listed(live.owner)] == ["existing(?P<id>[0-9]+)"]


def test_every_error_is_reported(live):
    body = assert_error(
        live.owner.post("/realm/filters", {"pattern": " ", "url_template": "{x"}), "This field cannot be blank."
    )
    assert body["errors"] == {"pattern": ["This field cannot be blank."], "url_template": ["Invalid URL template."]}
    body = assert_error(
        live.owner.post("/realm/filters", {"pattern": "", "url_template": URL}), "This field cannot be blank."
    )
    assert body["errors"] == {
        "pattern": ["This field cannot be blank."],
        "__all__": ["Group 'id' in URL template is not present in linkifier pattern."],
    }


def test_duplicate_pattern(live):
    duplicate = "Realm filter with this Realm and Pattern already exists."
    first = create(live.owner)
    body = assert_error(live.owner.post("/realm/filters", {**TICKET, "pattern": f" {ID} "}), duplicate)
    assert body["errors"] == {"__all__": [duplicate]}
    second = create(live.owner, "other(?P<id>[0-9]+)")
    assert_error(live.owner.patch(f"/realm/filters/{second}", TICKET), duplicate)
    assert [linkifier["id"] for linkifier in listed(live.owner)] == [first, second]


def test_zulip_client(live, zulip_client):
    result = zulip_client.add_realm_filter("#(?P<id>[0-9]+)", "https://github.com/zulip/zulip/issues/{id}")
    assert result["result"] == "success", result
    linkifiers = zulip_client.get_realm_linkifiers()["linkifiers"]
    assert [(linkifier["id"], linkifier["pattern"]) for linkifier in linkifiers] == [(result["id"], "#(?P<id>[0-9]+)")]
    assert zulip_client.remove_realm_filter(result["id"])["result"] == "success"
    assert zulip_client.get_realm_linkifiers()["linkifiers"] == []


def test_query_plans(live):
    # The list in order and the duplicate check are index searches, never a scan or a sort.
    def plan(sql, params=()):
        return " | ".join(row["detail"] for row in live.read(lambda tx: tx.all("EXPLAIN QUERY PLAN " + sql, params)))

    listing = plan(f"SELECT {LINKIFIER_COLUMNS} FROM linkifiers ORDER BY sort_order, id")
    assert "linkifiers_by_order" in listing and "TEMP B-TREE" not in listing, listing
    duplicate = plan("SELECT 1 FROM linkifiers WHERE pattern = ? AND id IS NOT ?", ("x", 1))
    assert "SEARCH linkifiers USING COVERING INDEX sqlite_autoindex_linkifiers_1" in duplicate, duplicate


def test_legacy_get_realm_filters_is_gone_as_in_zulip(live):
    # Zulip removed GET /realm/filters at feature level 54 (GET /realm/linkifiers replaced it); its
    # zproject/urls.py routes only POST there, so the GET answers 405, and changes nothing.
    response = live.owner.get("/realm/filters")
    assert response.status_code == 405
    assert response.json() == {"result": "error", "msg": "Method Not Allowed", "allowed_methods": ["POST"]}
