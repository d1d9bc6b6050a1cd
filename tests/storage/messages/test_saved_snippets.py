"""Saved snippets: GET/POST /saved_snippets, PATCH/DELETE /saved_snippets/{id}."""

from __future__ import annotations

import pytest

from tests.support.helpers import assert_error, assert_success

NOT_FOUND = "Saved snippet does not exist."


def create(client, title="Greeting", content="Hello **there**", **extra):
    return assert_success(client.post("/saved_snippets", {"title": title, "content": content, **extra}))[
        "saved_snippet_id"
    ]


def listed(client):
    return assert_success(client.get("/saved_snippets"))["saved_snippets"]


def events_after(live, count):
    return [(event, ids) for event, ids in live.events()[count:] if event["type"] == "saved_snippets"]


def test_create_and_list(live):
    count = len(live.events())
    snippet_id = create(live.owner, "  Greeting \n", "\n  Hello **there**  ")
    expected = {
        "id": snippet_id,
        "title": "Greeting",
        "content": "Hello **there**",
        "date_created": int(live.clock.now),
    }
    assert listed(live.owner) == [expected]
    assert events_after(live, count) == [
        ({"type": "saved_snippets", "op": "add", "saved_snippet": expected}, [live.owner.id])
    ]
    live.clock.advance(10)
    second = create(live.owner, "Second", "Two")
    assert [s["id"] for s in listed(live.owner)] == [snippet_id, second]
    assert listed(live.owner)[1]["date_created"] == int(live.clock.now)


def test_snippets_are_per_user(live):
    alice = live.make_user()
    create(live.owner, "Owner's")
    create(alice, "Alice's")
    assert [s["title"] for s in listed(live.owner)] == ["Owner's"]
    assert [s["title"] for s in listed(alice)] == ["Alice's"]


def test_limits(live):
    create(live.owner, "t" * 60, "c" * 10_000)
    create(live.owner, "  " + "t" * 60 + "  ", "  " + "c" * 10_000 + "  ")  # measured after stripping
    assert [(len(s["title"]), len(s["content"])) for s in listed(live.owner)] == [(60, 10_000), (60, 10_000)]


@pytest.mark.parametrize(
    ("params", "msg", "code"),
    [
        ({"content": "x"}, "Missing 'title' argument", "REQUEST_VARIABLE_MISSING"),
        ({"title": "x"}, "Missing 'content' argument", "REQUEST_VARIABLE_MISSING"),
        ({"title": "", "content": "x"}, "title cannot be blank", "BAD_REQUEST"),
        ({"title": " \n ", "content": "x"}, "title cannot be blank", "BAD_REQUEST"),
        ({"title": "x", "content": "\t "}, "content cannot be blank", "BAD_REQUEST"),
        ({"title": "t" * 61, "content": "x"}, "title is too long (limit: 60 characters)", "BAD_REQUEST"),
        ({"title": "x", "content": "c" * 10_001}, "content is too long (limit: 10000 characters)", "BAD_REQUEST"),
    ],
)
def test_create_errors(live, params, msg, code):
    count = len(live.events())
    assert_error(live.owner.post("/saved_snippets", params), msg, code)
    assert listed(live.owner) == []
    assert events_after(live, count) == []


def test_edit(live):
    snippet_id = create(live.owner, "Old title", "Old content")
    created = listed(live.owner)[0]["date_created"]
    count = len(live.events())
    assert_success(live.owner.patch(f"/saved_snippets/{snippet_id}", {"title": "  New title "}))
    expected = {"id": snippet_id, "title": "New title", "content": "Old content", "date_created": created}
    assert listed(live.owner) == [expected]
    assert_success(live.owner.patch(f"/saved_snippets/{snippet_id}", {"content": " New content "}))
    expected2 = {**expected, "content": "New content"}
    assert_success(live.owner.patch(f"/saved_snippets/{snippet_id}", {"title": "Both", "content": "Changed"}))
    expected3 = {**expected, "title": "Both", "content": "Changed"}
    assert listed(live.owner) == [expected3]
    assert events_after(live, count) == [
        ({"type": "saved_snippets", "op": "update", "saved_snippet": snippet}, [live.owner.id])
        for snippet in (expected, expected2, expected3)
    ]


def test_edit_with_nothing_changes_nothing(live):
    snippet_id = create(live.owner)
    count = len(live.events())
    assert_success(live.owner.patch(f"/saved_snippets/{snippet_id}"))
    # Zulip answers before looking the snippet up: no change is asked, none is made.
    assert_success(live.owner.patch("/saved_snippets/99999"))
    assert events_after(live, count) == []


@pytest.mark.parametrize(
    ("params", "msg"),
    [
        ({"title": ""}, "title cannot be blank"),
        ({"content": "  "}, "content cannot be blank"),
        ({"title": "ok", "content": ""}, "content cannot be blank"),
        ({"title": "t" * 61}, "title is too long (limit: 60 characters)"),
        ({"content": "c" * 10_001}, "content is too long (limit: 10000 characters)"),
    ],
)
def test_edit_errors(live, params, msg):
    snippet_id = create(live.owner, "Keep", "Kept")
    assert_error(live.owner.patch(f"/saved_snippets/{snippet_id}", params), msg)
    assert [(s["title"], s["content"]) for s in listed(live.owner)] == [("Keep", "Kept")]


def test_delete(live):
    first, second = create(live.owner, "One"), create(live.owner, "Two")
    count = len(live.events())
    assert assert_success(live.owner.delete(f"/saved_snippets/{first}")) == {"result": "success", "msg": ""}
    assert [s["id"] for s in listed(live.owner)] == [second]
    assert events_after(live, count) == [
        ({"type": "saved_snippets", "op": "remove", "saved_snippet_id": first}, [live.owner.id])
    ]
    assert_error(live.owner.delete(f"/saved_snippets/{first}"), NOT_FOUND, status=404)


def test_missing_and_other_users_snippets_answer_alike(live):
    alice = live.make_user()
    theirs = create(alice, "Alice's", "Private")
    count = len(live.events())
    for snippet_id in (theirs, 99999):
        response = live.owner.patch(f"/saved_snippets/{snippet_id}", {"title": "Mine now"})
        assert_error(response, NOT_FOUND, status=404)
        assert_error(live.owner.delete(f"/saved_snippets/{snippet_id}"), NOT_FOUND, status=404)
    assert [(s["title"], s["content"]) for s in listed(alice)] == [("Alice's", "Private")]
    assert events_after(live, count) == []


def test_ignored_parameters(live):
    body = assert_success(live.owner.post("/saved_snippets", {"title": "T", "content": "C", "zeta": 1, "alpha": 2}))
    assert body["ignored_parameters_unsupported"] == ["alpha", "zeta"]
    snippet_id = body["saved_snippet_id"]
    body = assert_success(live.owner.patch(f"/saved_snippets/{snippet_id}", {"title": "U", "extra": 1}))
    assert body["ignored_parameters_unsupported"] == ["extra"]
    # GET and DELETE are outside Zulip's typed-parameter framework: nothing is reported.
    assert "ignored_parameters_unsupported" not in assert_success(live.owner.get("/saved_snippets", {"x": 1}))
    body = assert_success(live.owner.delete(f"/saved_snippets/{snippet_id}", {"x": 1}))
    assert "ignored_parameters_unsupported" not in body


def test_non_numeric_id_is_not_found(live):
    response = live.owner.patch("/saved_snippets/abc", {"title": "x"})
    assert response.status_code == 404
    assert response.json()["msg"] == "Not Found"


def test_zulip_client(zulip_client):
    result = zulip_client.call_endpoint(url="saved_snippets", method="POST", request={"title": "T", "content": "C"})
    assert result["result"] == "success"
    snippet_id = result["saved_snippet_id"]
    result = zulip_client.call_endpoint(url="saved_snippets", method="GET")
    assert [s["id"] for s in result["saved_snippets"]] == [snippet_id]
    result = zulip_client.call_endpoint(url=f"saved_snippets/{snippet_id}", method="DELETE")
    assert result["result"] == "success"


def test_list_query_uses_index(live):
    query = "EXPLAIN QUERY PLAN SELECT id, title FROM saved_snippets WHERE user_id = ? ORDER BY id"
    plan = live.read(lambda tx: " ".join(row["detail"] for row in tx.all(query, (1,))))
    assert "INDEX saved_snippets_by_user" in plan
    assert "TEMP B-TREE" not in plan
