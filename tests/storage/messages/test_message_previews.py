"""Zulip's inline-preview markup (storage/messages/message_previews.py): the element, its placeholder,
and rewriting one upload's placeholders while leaving the others."""

from __future__ import annotations

import msgspec

from storage.messages.message_previews import ImagePreview, path_id_of, preview_html, rewrite_previews

PNG = ImagePreview("1/ab/pic.png", 300, 200, 1, "image/png", thumbnailed=False)
GIF = ImagePreview("1/cd/dance.gif", 40, 20, 5, "image/gif", thumbnailed=False)


def test_placeholder_and_thumbnail_markup() -> None:
    assert preview_html("/user_uploads/1/ab/pic.png", "pic.png", PNG) == (
        '<div class="message_inline_image"><a href="/user_uploads/1/ab/pic.png" title="pic.png">'
        '<img class="image-loading-placeholder" data-original-content-type="image/png"'
        ' data-original-dimensions="300x200" src="/static/images/loading/loader-black.svg"></a></div>\n'
    )
    done = ImagePreview("1/cd/dance.gif", 40, 20, 5, "image/gif", thumbnailed=True)
    assert preview_html("/user_uploads/1/cd/dance.gif", None, done) == (
        '<div class="message_inline_image"><a href="/user_uploads/1/cd/dance.gif"><img data-animated="true"'
        ' data-original-content-type="image/gif" data-original-dimensions="40x20"'
        ' src="/user_uploads/thumbnail/1/cd/dance.gif/840x560-anim.webp"></a></div>\n'
    )
    odd = ImagePreview("1/ef/a&b.png", 1, 1, 1, 'image/png"', thumbnailed=True)
    assert 'href="/user_uploads/1/ef/a&amp;b.png" title="&lt;b&gt;"' in preview_html(
        "/user_uploads/1/ef/a&b.png", "<b>", odd
    )
    assert 'content-type="image/png&quot;"' in preview_html("/user_uploads/1/ef/a&b.png", None, odd)


def test_only_the_named_uploads_placeholders_are_rewritten() -> None:
    html = (
        "<p>two</p>\n"
        + preview_html("/user_uploads/1/ab/pic.png", "pic.png", PNG)
        + preview_html("/user_uploads/1/cd/dance.gif", "dance.gif", GIF).rstrip("\n")
    )
    done = msgspec.structs.replace(PNG, thumbnailed=True)
    rewritten = rewrite_previews(html, "1/ab/pic.png", done)
    assert rewritten == html.replace(
        'class="image-loading-placeholder" data-original-content-type="image/png" data-original-dimensions="300x200"'
        ' src="/static/images/loading/loader-black.svg"',
        'data-original-content-type="image/png" data-original-dimensions="300x200"'
        ' src="/user_uploads/thumbnail/1/ab/pic.png/840x560.webp"',
    )
    assert rewrite_previews(rewritten, "1/ab/pic.png", done) is None  # nothing left to rewrite
    dropped = rewrite_previews(rewritten, "1/cd/dance.gif", None)
    assert dropped == "<p>two</p>\n" + preview_html("/user_uploads/1/ab/pic.png", "pic.png", done).rstrip("\n")
    assert rewrite_previews("<p>no previews</p>", "1/ab/pic.png", None) is None


def test_percent_encoded_links_name_their_upload() -> None:
    assert path_id_of("/user_uploads/1/ab/caf%C3%A9.png") == "1/ab/café.png"
    html = preview_html("/user_uploads/1/ab/caf%C3%A9.png", None, PNG)
    assert rewrite_previews(html, "1/ab/café.png", None) == ""
    for href in ("/user_uploads/thumbnail/1/ab/x.png/840x560.webp", "/user_uploads/temporary/t/x.png", "/x.png"):
        assert path_id_of(href) is None
