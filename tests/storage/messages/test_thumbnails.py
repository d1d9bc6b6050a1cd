"""Uploaded images over HTTP: their thumbnails at /user_uploads/thumbnail/..., who may fetch them, the
inline previews in message HTML, the rendering-only update once thumbnails are made or fail, and
server_thumbnail_formats in POST /register."""

from __future__ import annotations

import json
import os

import requests

from storage.db import upload_files
from storage.media import thumbnail
from storage.messages import attachments
from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import register
from tests.support.helpers import assert_error, assert_success, wait_for
from tests.support.image_helpers import bomb_png_bytes, decoded, gif_bytes, jpeg_bytes, png_bytes, truncated_jpeg_bytes
from tests.support.send_helpers import send_direct_ok, send_ok, stored, stored_flags

NOT_FOUND = "File not found."
STILL = "840x560.webp"
ANIMATED = "840x560-anim.webp"
PLACEHOLDER = "/static/images/loading/loader-black.svg"


def upload_ok(client, name, data, content_type):
    response = client.session.post(client.base_url + "/api/v1/user_uploads", files={"file": (name, data, content_type)})
    return assert_success(response)["url"]


def fetch(client, url):
    return client.session.get(client.base_url + url)


def thumbnail_url(url, name=STILL):
    return url.replace("/user_uploads/", "/user_uploads/thumbnail/", 1) + "/" + name


def image_row(live, url):
    path_id = url.removeprefix("/user_uploads/")
    sql = "SELECT i.* FROM image_attachments AS i JOIN attachments AS a ON a.id = i.attachment_id WHERE a.path_id = ?"
    row = live.read(lambda tx: tx.one(sql, (path_id,)))
    return None if row is None else dict(row)


def stored_without_thumbnails(live, client, name, data, content_type):
    """An upload stored as POST /user_uploads stores it, but with no thumbnail job started: its URL and id."""
    data_dir = live.settings.data_dir
    staged = upload_files.stage(data_dir, data)
    path_id = upload_files.new_path_id(attachments.REALM_ID, name)
    new = attachments.NewUpload(
        staged, path_id, name, content_type, len(data), thumbnail.probe_image(staged, content_type)
    )
    assert new.image is not None
    live.write(attachments.create_attachment, live.user(client.id), new, data_dir, 1024)
    return f"/user_uploads/{path_id}", live.read(attachments.get_upload, path_id)["id"]


def rendering_updates(live, since):
    return [(e, ids) for e, ids in live.events()[since:] if e["type"] == "update_message" and e["rendering_only"]]


# -- thumbnails -------------------------------------------------------------------------------------


def test_png_upload_gets_a_webp_thumbnail(live):
    url = upload_ok(live.owner, "wide.png", png_bytes(2000, 1000), "image/png")
    response = fetch(live.owner, thumbnail_url(url))
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "image/webp"
    head = live.owner.session.head(live.owner.base_url + thumbnail_url(url))
    assert (head.status_code, head.headers["Content-Length"], head.content) == (200, str(len(response.content)), b"")
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Content-Disposition"].startswith('inline; filename="840x560.webp"')
    image = decoded(response.content)
    assert (image.format, image.size) == ("WEBP", (840, 420))
    row = image_row(live, url)
    assert (row["original_width"], row["original_height"], row["frames"], row["content_type"]) == (
        2000, 1000, 1, "image/png",
    )  # fmt: skip
    assert fetch(live.owner, url).content == png_bytes(2000, 1000)  # the original is untouched


def test_jpeg_upload_gets_a_thumbnail_and_its_rotated_dimensions(live):
    url = upload_ok(live.owner, "turned.jpg", jpeg_bytes(1500, 500, orientation=8), "image/jpeg")
    image = decoded(fetch(live.owner, thumbnail_url(url)).content)
    assert image.size == (187, 560)  # 500x1500 as shown, shrunk into 840x560
    assert (image_row(live, url)["original_width"], image_row(live, url)["original_height"]) == (500, 1500)


def test_animated_gif_gets_an_animated_and_a_still_thumbnail(live):
    url = upload_ok(live.owner, "dance.gif", gif_bytes(400, 200, frames=3), "image/gif")
    animated = decoded(fetch(live.owner, thumbnail_url(url, ANIMATED)).content)
    assert (animated.format, animated.n_frames, animated.size) == ("WEBP", 3, (400, 200))
    still = decoded(fetch(live.owner, thumbnail_url(url, STILL)).content)
    assert getattr(still, "n_frames", 1) == 1 and still.size == (400, 200)
    assert image_row(live, url)["frames"] == 3


def test_other_format_names_get_the_closest_thumbnail_or_none(live):
    url = upload_ok(live.owner, "pic.png", png_bytes(100, 80), "image/png")
    still = fetch(live.owner, thumbnail_url(url)).content
    assert fetch(live.owner, thumbnail_url(url, ANIMATED)).content == still  # no animation of a still image
    assert fetch(live.owner, thumbnail_url(url, "300x200.webp")).content == still  # not a format made: the closest
    for name in ("840x560.gif", "large", "840x560.webp.exe"):
        response = fetch(live.owner, thumbnail_url(url, name))
        if name == "840x560.gif":
            assert response.content == still  # another type: still the closest made
        else:
            assert_error(response, NOT_FOUND, status=404)


def test_files_that_are_no_images_have_no_thumbnails(live):
    url = upload_ok(live.owner, "notes.txt", b"hello", "text/plain")
    assert_error(fetch(live.owner, thumbnail_url(url)), NOT_FOUND, status=404)
    labelled = upload_ok(live.owner, "fake.png", b"not a png at all", "image/png")
    assert image_row(live, labelled) is None
    assert_error(fetch(live.owner, thumbnail_url(labelled)), NOT_FOUND, status=404)
    assert fetch(live.owner, labelled).content == b"not a png at all"
    assert_error(fetch(live.owner, "/user_uploads/thumbnail/1/nosuch/file.png/840x560.webp"), NOT_FOUND, status=404)


def test_thumbnails_follow_the_access_rules_of_the_upload(live):
    member, outsider = live.make_user(), live.make_user()
    make_channel(live, "inner", [live.owner.id, member.id], invite_only=True)
    url = upload_ok(live.owner, "plan.png", png_bytes(60, 40), "image/png")
    assert_error(fetch(member, thumbnail_url(url)), NOT_FOUND, status=404)  # not shared yet
    send_ok(live.owner, "inner", f"[plan]({url})")
    assert decoded(fetch(member, thumbnail_url(url)).content).size == (60, 40)
    assert_error(fetch(outsider, thumbnail_url(url)), NOT_FOUND, status=404)
    assert_error(fetch(outsider, thumbnail_url(url, "nonsense")), NOT_FOUND, status=404)  # same answer: no hint
    anonymous = requests.get(live.base_url + thumbnail_url(url))
    assert_error(anonymous, "Not logged in: API authentication or user session required", "UNAUTHORIZED", 401)


def test_deleting_the_upload_deletes_its_thumbnails(live):
    url = upload_ok(live.owner, "dance.gif", gif_bytes(40, 20, frames=2), "image/gif")
    assert fetch(live.owner, thumbnail_url(url, ANIMATED)).status_code == 200
    folder = os.path.join(live.settings.data_dir, "uploads", "thumbnail", *url.split("/")[2:])
    assert sorted(os.listdir(folder)) == [ANIMATED, STILL]
    attachment_id = live.read(attachments.get_upload, url.removeprefix("/user_uploads/"))["id"]
    assert_success(live.owner.delete(f"/attachments/{attachment_id}"))
    assert not os.path.exists(os.path.join(live.settings.data_dir, "uploads", "thumbnail"))
    assert image_row(live, url) is None
    assert_error(fetch(live.owner, thumbnail_url(url)), NOT_FOUND, status=404)


def test_images_left_without_thumbnails_are_made_at_start(live):
    url, _ = stored_without_thumbnails(live, live.owner, "left.png", png_bytes(30, 20), "image/png")
    assert image_row(live, url)["thumbnails"] == "[]"
    live.call(live.server.thumbnailer.schedule_waiting)  # what Server.start does
    wait_for(lambda: image_row(live, url)["thumbnails"] != "[]", "the waiting image's thumbnails")
    [made] = json.loads(image_row(live, url)["thumbnails"])
    assert made == {"name": STILL, "animated": False, "content_type": "image/webp", "width": 30, "height": 20,
                    "byte_size": made["byte_size"]}  # fmt: skip
    thumbnail_file = os.path.join(live.settings.data_dir, "uploads", "thumbnail", *url.split("/")[2:], STILL)
    assert os.path.getsize(thumbnail_file) == made["byte_size"]


# -- hostile files ----------------------------------------------------------------------------------


def test_a_decompression_bomb_is_stored_as_a_plain_file(live):
    make_channel(live, "general", [live.owner.id])
    data = bomb_png_bytes()
    url = upload_ok(live.owner, "bomb.png", data, "image/png")
    assert image_row(live, url) is None
    assert fetch(live.owner, url).content == data  # served as the file it is
    assert_error(fetch(live.owner, thumbnail_url(url)), NOT_FOUND, status=404)
    message_id = send_ok(live.owner, "general", f"[bomb.png]({url})")
    assert "message_inline_image" not in stored(live, message_id)["rendered_content"]
    assert assert_success(live.owner.get("/users/me"))["user_id"] == live.owner.id  # the server goes on


def test_a_corrupt_image_loses_its_placeholder_once_thumbnailing_fails(live):
    make_channel(live, "general", [live.owner.id])
    url, attachment_id = stored_without_thumbnails(live, live.owner, "cut.jpg", truncated_jpeg_bytes(), "image/jpeg")
    message_id = send_ok(live.owner, "general", f"broken: [cut.jpg]({url})")
    assert 'class="image-loading-placeholder"' in stored(live, message_id)["rendered_content"]
    count = len(live.events())
    assert_error(fetch(live.owner, thumbnail_url(url)), NOT_FOUND, status=404)  # made on demand: it fails
    expected = f'<p>broken: <a href="{url}">cut.jpg</a></p>'
    assert stored(live, message_id)["rendered_content"] == expected
    [(event, user_ids)] = rendering_updates(live, count)
    assert event["rendered_content"] == expected and user_ids == [live.owner.id]
    assert image_row(live, url) is None
    assert fetch(live.owner, url).content == truncated_jpeg_bytes()  # the upload itself is still served


# -- message HTML -----------------------------------------------------------------------------------


def test_a_message_linking_an_uploaded_image_shows_zulips_preview(live):
    make_channel(live, "general", [live.owner.id])
    url = upload_ok(live.owner, "wide.png", png_bytes(2000, 1000), "image/png")
    fetch(live.owner, thumbnail_url(url))  # waits for the thumbnails
    message_id = send_ok(live.owner, "general", f"Look at [wide.png]({url})!")
    assert stored(live, message_id)["rendered_content"] == (
        f'<p>Look at <a href="{url}">wide.png</a>!</p>\n'
        f'<div class="message_inline_image"><a href="{url}" title="wide.png">'
        f'<img data-original-content-type="image/png" data-original-dimensions="2000x1000" src="{thumbnail_url(url)}">'
        "</a></div>"
    )
    assert stored(live, message_id)["has_image"] == 1
    fetched = assert_success(live.owner.get(f"/messages/{message_id}"))["message"]["content"]
    assert fetched == stored(live, message_id)["rendered_content"]


def test_an_animated_image_preview_points_at_the_animated_thumbnail(live):
    make_channel(live, "general", [live.owner.id])
    url = upload_ok(live.owner, "dance.gif", gif_bytes(40, 20, frames=2), "image/gif")
    fetch(live.owner, thumbnail_url(url, ANIMATED))
    message_id = send_ok(live.owner, "general", f"[dance.gif]({url})")
    assert stored(live, message_id)["rendered_content"] == (
        f'<p><a href="{url}">dance.gif</a></p>\n'
        f'<div class="message_inline_image"><a href="{url}" title="dance.gif"><img data-animated="true"'
        ' data-original-content-type="image/gif" data-original-dimensions="40x20"'
        f' src="{thumbnail_url(url, ANIMATED)}">'
        "</a></div>"
    )


def test_a_placeholder_until_the_thumbnails_are_made_then_a_rendering_only_update(live):
    alice, bob = live.make_user(full_name="Alice"), live.make_user(full_name="Bob")
    url, attachment_id = stored_without_thumbnails(live, live.owner, "pic.png", png_bytes(300, 200), "image/png")
    message_id = send_direct_ok(live.owner, [alice.id, bob.id], f"[pic.png]({url})")
    preview = (
        f'<div class="message_inline_image"><a href="{url}" title="pic.png"><img %s'
        f'data-original-content-type="image/png" data-original-dimensions="300x200" src="%s"></a></div>'
    )
    link = f'<p><a href="{url}">pic.png</a></p>\n'
    assert stored(live, message_id)["rendered_content"] == link + preview % (
        'class="image-loading-placeholder" ',
        PLACEHOLDER,
    )
    count = len(live.events())
    assert decoded(fetch(alice, thumbnail_url(url)).content).size == (300, 200)  # made on demand
    rendered = link + preview % ("", thumbnail_url(url))
    assert stored(live, message_id)["rendered_content"] == rendered
    updates = rendering_updates(live, count)
    assert sorted(user_id for _, ids in updates for user_id in ids) == sorted([live.owner.id, alice.id, bob.id])
    flags = stored_flags(live, message_id)
    for event, ids in updates:
        assert event == {
            "type": "update_message", "user_id": None, "edit_timestamp": event["edit_timestamp"],
            "message_id": message_id, "message_ids": [message_id], "rendering_only": True,
            "content": f"[pic.png]({url})", "rendered_content": rendered, "flags": event["flags"],
        }  # fmt: skip
        assert all(flags[user_id] == event["flags"] for user_id in ids)  # each viewer with their own flags
    assert stored(live, message_id)["last_edit_timestamp"] is None  # no edit as far as history goes
    fetch(alice, thumbnail_url(url))
    assert rendering_updates(live, count) == updates  # made once: nothing more to update


def test_previews_only_of_images_the_sender_may_share_and_never_in_quotes(live):
    make_channel(live, "general", [live.owner.id])
    other = live.make_user()
    url = upload_ok(other, "theirs.png", png_bytes(10, 10), "image/png")
    fetch(other, thumbnail_url(url))
    message_id = send_ok(live.owner, "general", f"[theirs.png]({url})")
    assert "message_inline_image" not in stored(live, message_id)["rendered_content"]  # a guessed URL shows nothing
    mine = upload_ok(live.owner, "mine.png", png_bytes(10, 10), "image/png")
    fetch(live.owner, thumbnail_url(mine))
    quoted = send_ok(live.owner, "general", f"> [mine.png]({mine})\n\n```quote\n[mine.png]({mine})\n```")
    assert "message_inline_image" not in stored(live, quoted)["rendered_content"]
    twice = send_ok(live.owner, "general", f"[a]({mine}) [b]({mine})\n\n[c]({mine})")
    assert stored(live, twice)["rendered_content"].count("message_inline_image") == 1  # each upload once
    many = " ".join(f"https://example.com/{n}" for n in range(24))
    crowded = send_ok(live.owner, "general", f"[mine.png]({mine}) {many}")
    assert "message_inline_image" not in stored(live, crowded)["rendered_content"]  # over 24 links: no previews


# -- POST /register ---------------------------------------------------------------------------------


def test_register_lists_the_thumbnail_formats_made(live):
    state = register(live.owner, fetch_event_types='["realm"]')
    assert state["server_thumbnail_formats"] == [
        {"name": "840x560-anim.webp", "max_width": 840, "max_height": 560, "format": "webp", "animated": True},
        {"name": "840x560.webp", "max_width": 840, "max_height": 560, "format": "webp", "animated": False},
    ]
