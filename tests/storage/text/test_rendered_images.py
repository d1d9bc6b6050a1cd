"""Images in rendered descriptions and profile fields are links, never <img> (issue 10, point 8).

An <img> with a remote src would make every reader's client fetch a third-party URL; messages
already render ![alt](url) as a link, and descriptions and profile fields share that rule.
"""

from __future__ import annotations

from storage.org.profile_fields import LONG_TEXT, SHORT_TEXT
from storage.text import rerender
from tests.support.channel_helpers import make_channel
from tests.support.helpers import NextServer, assert_success

IMAGE = "![x](https://evil.example/a.png)"
LINK = '<a href="https://evil.example/a.png">x</a>'


def channel(client, channel_id):
    return assert_success(client.get(f"/streams/{channel_id}"))["stream"]


def test_channel_description_on_create(live):
    channel_id = make_channel(live, "pictures", description=f"See {IMAGE}")
    assert channel(live.owner, channel_id)["rendered_description"] == f"<p>See {LINK}</p>"


def test_channel_description_on_update_and_its_event(live):
    channel_id = make_channel(live, "pictures")
    start = len(live.events())
    assert_success(live.owner.patch(f"/streams/{channel_id}", {"description": IMAGE}))
    assert channel(live.owner, channel_id)["rendered_description"] == f"<p>{LINK}</p>"
    [event] = [e for e, _ in live.events()[start:] if e["type"] == "stream" and e.get("property") == "description"]
    assert event["rendered_description"] == f"<p>{LINK}</p>"


def test_image_without_alt_text_shows_its_address(live):
    channel_id = make_channel(live, "pictures", description="![](https://evil.example/a.png)")
    rendered = channel(live.owner, channel_id)["rendered_description"]
    assert rendered == '<p><a href="https://evil.example/a.png">https://evil.example/a.png</a></p>'


def test_channel_folder_description(live):
    body = assert_success(live.owner.post("/channel_folders/create", {"name": "Art", "description": IMAGE}))
    [folder] = [
        f
        for f in assert_success(live.owner.get("/channel_folders"))["channel_folders"]
        if f["id"] == body["channel_folder_id"]
    ]
    assert folder["rendered_description"] == f"<p>{LINK}</p>"


def profile_value(live, user_id, field_id):
    user = assert_success(live.owner.get(f"/users/{user_id}", {"include_custom_profile_fields": True}))["user"]
    return user["profile_data"][str(field_id)]


def test_profile_fields(live):
    member = live.make_user()
    field_ids = {}
    for name, field_type in (("Biography", LONG_TEXT), ("Motto", SHORT_TEXT)):
        response = live.owner.post("/realm/profile_fields", {"name": name, "field_type": field_type})
        field_ids[field_type] = assert_success(response)["id"]
    entries = [{"id": field_ids[LONG_TEXT], "value": f"Me: {IMAGE}"}, {"id": field_ids[SHORT_TEXT], "value": IMAGE}]
    start = len(live.events())
    assert_success(live.owner.patch(f"/users/{member.id}", {"profile_data": entries}))
    assert profile_value(live, member.id, field_ids[LONG_TEXT]) == {
        "value": f"Me: {IMAGE}",
        "rendered_value": f"<p>Me: {LINK}</p>",
    }
    assert profile_value(live, member.id, field_ids[SHORT_TEXT])["rendered_value"] == f"<p>{LINK}</p>"
    rendered_in_events = [
        event["person"]["custom_profile_field"]["rendered_value"]
        for event, _ in live.events()[start:]
        if event["type"] == "realm_user" and "custom_profile_field" in event["person"]
    ]
    assert rendered_in_events and all("<img" not in html and LINK in html for html in rendered_in_events)


def test_messages_still_render_images_as_links(live):
    make_channel(live, "pictures")
    body = {"type": "stream", "to": "pictures", "topic": "t", "content": IMAGE}
    message_id = assert_success(live.owner.post("/messages", body))["id"]
    message = assert_success(live.owner.get(f"/messages/{message_id}"))["message"]
    assert message["content"] == f"<p>{LINK}</p>"


def test_html_saved_before_the_fix_is_rendered_again_at_start(live):
    channel_id = make_channel(live, "pictures", description=f"Old {IMAGE}")
    old = '<p>Old <img src="https://evil.example/a.png" alt="x"></p>'
    live.write(lambda tx: tx.execute("UPDATE channels SET rendered_description = ? WHERE id = ?", (old, channel_id)))
    assert channel(live.owner, channel_id)["rendered_description"] == old
    live.call(live.server.shutdown)
    restarted = NextServer(live)
    try:
        assert channel(restarted.owner, channel_id)["rendered_description"] == f"<p>Old {LINK}</p>"
        assert restarted.write(rerender.rerender_images) == 0  # nothing left to change
    finally:
        restarted.stop()
