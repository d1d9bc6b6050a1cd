"""Attachments: GET /attachments, DELETE /attachments/{id}, and messages claiming the files they link."""

from __future__ import annotations

import os

from tests.storage.messages.test_uploads import fetch, upload_ok
from tests.support.channel_helpers import make_channel
from tests.support.helpers import assert_error, assert_success
from tests.support.send_helpers import send_direct_ok, send_ok

INVALID = "Invalid attachment"


def listed(client):
    body = assert_success(client.get("/attachments"))
    assert set(body) == {"result", "msg", "attachments", "upload_space_used"}
    return body


def attachment_events(live, count):
    return [(event, ids) for event, ids in live.events()[count:] if event["type"] == "attachment"]


def test_no_attachments(live):
    assert listed(live.owner) == {"result": "success", "msg": "", "attachments": [], "upload_space_used": 0}


def test_list_shows_each_upload_and_the_messages_linking_it(live):
    make_channel(live, "lobby", [live.owner.id])
    url = upload_ok(live.owner, "a.txt", b"12345")["url"]
    live.clock.advance(30)
    upload_ok(live.owner, "b.txt", b"123")
    live.clock.advance(30)
    first = send_ok(live.owner, "lobby", f"[a]({url})")
    live.clock.advance(30)
    second = send_direct_ok(live.owner, [live.owner.id], f"again [a]({url}) and [a]({url})")
    body = listed(live.owner)
    start = int(live.clock.now) - 90
    assert body["upload_space_used"] == 8
    assert body["attachments"] == [
        {
            "id": 1, "name": "a.txt", "path_id": url.removeprefix("/user_uploads/"), "size": 5,
            "create_time": start * 1000,
            "messages": [
                {"id": first, "date_sent": (start + 60) * 1000}, {"id": second, "date_sent": (start + 90) * 1000}
            ],
        },
        {"id": 2, "name": "b.txt", "path_id": body["attachments"][1]["path_id"], "size": 3,
         "create_time": (start + 30) * 1000, "messages": []},
    ]  # fmt: skip
    assert listed(live.make_user())["attachments"] == []


def test_sending_a_link_tells_the_owner(live):
    url = upload_ok(live.owner, "a.txt", b"1")["url"]
    count = len(live.events())
    message_id = send_direct_ok(live.owner, [live.owner.id], f"[a]({url})")
    [(event, ids)] = attachment_events(live, count)
    assert ids == [live.owner.id]
    assert (event["op"], event["upload_space_used"]) == ("update", 1)
    assert event["attachment"]["messages"] == [{"id": message_id, "date_sent": int(live.clock.now) * 1000}]


def test_a_message_without_upload_links_claims_nothing(live):
    upload_ok(live.owner, "a.txt", b"1")
    count = len(live.events())
    send_direct_ok(live.owner, [live.owner.id], "[elsewhere](https://example.com/user_uploads/1/x/a.txt)")
    assert attachment_events(live, count) == []
    assert listed(live.owner)["attachments"][0]["messages"] == []


def test_a_reshare_tells_the_owner_not_the_sharer(live):
    friend, third = live.make_user(), live.make_user()
    url = upload_ok(live.owner, "a.txt", b"1")["url"]
    send_direct_ok(live.owner, [friend.id], f"[a]({url})")
    count = len(live.events())
    send_direct_ok(friend, [third.id], f"[a]({url})")
    [(event, ids)] = attachment_events(live, count)
    assert ids == [live.owner.id] and len(event["attachment"]["messages"]) == 2
    assert listed(friend)["attachments"] == []


def test_editing_a_link_away_detaches_the_upload(live):
    url = upload_ok(live.owner, "a.txt", b"1")["url"]
    message_id = send_direct_ok(live.owner, [live.owner.id], f"[a]({url})")
    count = len(live.events())
    body = assert_success(live.owner.patch(f"/messages/{message_id}", {"content": "no file now"}))
    attachment = listed(live.owner)["attachments"][0]
    assert attachment["messages"] == []
    assert body["detached_uploads"] == [attachment]
    [(event, ids)] = attachment_events(live, count)
    assert (event["op"], event["attachment"], ids) == ("update", attachment, [live.owner.id])
    body = assert_success(live.owner.patch(f"/messages/{message_id}", {"content": f"back: [a]({url})"}))
    assert body["detached_uploads"] == []
    assert [m["id"] for m in listed(live.owner)["attachments"][0]["messages"]] == [message_id]


def test_an_upload_still_linked_elsewhere_is_not_detached(live):
    url = upload_ok(live.owner, "a.txt", b"1")["url"]
    first = send_direct_ok(live.owner, [live.owner.id], f"[a]({url})")
    second = send_direct_ok(live.owner, [live.owner.id], f"[a]({url})")
    body = assert_success(live.owner.patch(f"/messages/{first}", {"content": "gone"}))
    assert body["detached_uploads"] == []
    assert [m["id"] for m in listed(live.owner)["attachments"][0]["messages"]] == [second]


def test_editing_in_a_link_claims_it(live):
    url = upload_ok(live.owner, "a.txt", b"1")["url"]
    message_id = send_direct_ok(live.owner, [live.owner.id], "soon")
    assert_success(live.owner.patch(f"/messages/{message_id}", {"content": f"[a]({url})"}))
    assert [m["id"] for m in listed(live.owner)["attachments"][0]["messages"]] == [message_id]


def test_a_topic_only_edit_keeps_links(live):
    make_channel(live, "lobby", [live.owner.id])
    url = upload_ok(live.owner, "a.txt", b"1")["url"]
    message_id = send_ok(live.owner, "lobby", f"[a]({url})")
    body = assert_success(live.owner.patch(f"/messages/{message_id}", {"topic": "renamed"}))
    assert body["detached_uploads"] == []
    assert [m["id"] for m in listed(live.owner)["attachments"][0]["messages"]] == [message_id]


def test_deleting_a_message_unlinks_its_uploads(live):
    friend = live.make_user()
    url = upload_ok(live.owner, "a.txt", b"1")["url"]
    message_id = send_direct_ok(live.owner, [friend.id], f"[a]({url})")
    assert fetch(friend, url).status_code == 200
    assert_success(live.owner.delete(f"/messages/{message_id}"))
    assert listed(live.owner)["attachments"][0]["messages"] == []
    assert_error(fetch(friend, url), "File not found.", status=404)
    assert fetch(live.owner, url).content == b"1"


def test_delete_an_attachment(live):
    friend = live.make_user()
    url = upload_ok(live.owner, "a.txt", b"123")["url"]
    upload_ok(live.owner, "b.txt", b"45")
    send_direct_ok(live.owner, [friend.id], f"[a]({url})")
    attachment_id = listed(live.owner)["attachments"][0]["id"]
    count = len(live.events())
    assert_success(live.owner.delete(f"/attachments/{attachment_id}"))
    assert attachment_events(live, count) == [
        ({"type": "attachment", "op": "remove", "attachment": {"id": attachment_id}, "upload_space_used": 2},
         [live.owner.id])
    ]  # fmt: skip
    assert [a["name"] for a in listed(live.owner)["attachments"]] == ["b.txt"]
    path = os.path.join(live.settings.data_dir, "uploads", url.removeprefix("/user_uploads/"))
    assert not os.path.exists(path) and not os.path.exists(os.path.dirname(path))
    assert_error(fetch(live.owner, url), "File not found.", status=404)
    assert_error(fetch(friend, url), "File not found.", status=404)
    assert_error(live.owner.delete(f"/attachments/{attachment_id}"), INVALID)


def test_only_the_uploader_deletes(live):
    upload_ok(live.owner, "a.txt", b"1")
    attachment_id = listed(live.owner)["attachments"][0]["id"]
    count = len(live.events())
    assert_error(live.make_user().delete(f"/attachments/{attachment_id}"), INVALID)
    assert_error(live.make_user(role="admin").delete(f"/attachments/{attachment_id}"), INVALID)
    assert_error(live.owner.delete("/attachments/999"), INVALID)
    assert attachment_events(live, count) == []
    assert len(listed(live.owner)["attachments"]) == 1


def test_ids_are_never_reused(live):
    upload_ok(live.owner, "a.txt", b"1")
    assert_success(live.owner.delete("/attachments/1"))
    upload_ok(live.owner, "b.txt", b"1")
    assert [a["id"] for a in listed(live.owner)["attachments"]] == [2]


def test_the_zulip_client(live, zulip_client, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"notes")
    with open(path, "rb") as fp:
        uri = zulip_client.upload_file(fp)["uri"]
    sent = zulip_client.send_message({"type": "private", "to": [live.owner.id], "content": f"[notes]({uri})"})
    assert sent["result"] == "success", sent
    result = zulip_client.get_attachments()
    assert result["result"] == "success" and result["upload_space_used"] == 5
    [attachment] = result["attachments"]
    assert (attachment["name"], [m["id"] for m in attachment["messages"]]) == ("notes.txt", [sent["id"]])
    removed = zulip_client.call_endpoint(f"attachments/{attachment['id']}", method="DELETE")
    assert removed["result"] == "success", removed
    assert zulip_client.get_attachments()["attachments"] == []
