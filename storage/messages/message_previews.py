"""Inline previews of uploaded images in message HTML, in Zulip's markup (api_docs/message-formatting.md, Images).

A link to an upload that has an image_attachments row gets, after its paragraph:

    <div class="message_inline_image"><a href="/user_uploads/{path}" title="{link text}"><img
    data-original-content-type="image/png" data-original-dimensions="1920x1080"
    src="/user_uploads/thumbnail/{path}/840x560.webp"></a></div>

(on one line, no whitespace between the elements: the mobile app parses exactly that shape). Until
the thumbnails are made the img is Zulip's loading placeholder (class image-loading-placeholder);
once they are, or once they failed, `rewrite_previews` turns it into the thumbnail or drops the
preview, and the message's viewers get a rendering-only update_message (storage/messages/image_attachments.py).
Zulip's rules: no previews inside quotes, none at all in a message with more than 24 links, each
upload previewed once; a paragraph holding nothing but the bare link is replaced by its preview.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from collections.abc import Callable

import msgspec
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from storage.media.thumbnail_formats import THUMBNAIL_FOLDER, default_format

UPLOADS_PREFIX = "/user_uploads/"
INLINE_PREVIEW_LIMIT_PER_MESSAGE = 24
# Zulip's spinner; clients recognize the class and show their own loading indicator.
PLACEHOLDER_SRC = "/static/images/loading/loader-black.svg"
_PLACEHOLDER_PREVIEW = re.compile(
    r'<div class="message_inline_image"><a href="/user_uploads/([^"]+)"(?: title="[^"]*")?>'
    r'(<img class="image-loading-placeholder"[^>]*>)</a></div>\n?'
)


class ImagePreview(msgspec.Struct, frozen=True):
    """What a preview of one uploaded image shows: its original size and type, and whether it has thumbnails."""

    path_id: str
    width: int
    height: int
    frames: int
    content_type: str
    thumbnailed: bool


# path_id -> the preview of that upload, or None when it gets none (not an image, or not the sender's to share).
PreviewLookup = Callable[[str], ImagePreview | None]


def image_tag(href_path: str, image: ImagePreview) -> str:
    """The <img> of a preview (href_path: the link's path after /user_uploads/, HTML-escaped): the
    default thumbnail, or the placeholder while there is none."""
    common = (
        f'data-original-content-type="{escapeHtml(image.content_type)}"'
        f' data-original-dimensions="{image.width}x{image.height}"'
    )
    if not image.thumbnailed:
        return f'<img class="image-loading-placeholder" {common} src="{PLACEHOLDER_SRC}">'
    animated = 'data-animated="true" ' if image.frames > 1 else ""
    src = f"{UPLOADS_PREFIX}{THUMBNAIL_FOLDER}/{href_path}/{default_format(image.frames).name}"
    return f'<img {animated}{common} src="{src}">'


def preview_html(href: str, title: str | None, image: ImagePreview) -> str:
    """The whole preview element of an upload linked as `href` (already relative: /user_uploads/...)."""
    title_attr = f' title="{escapeHtml(title)}"' if title else ""
    tag = image_tag(escapeHtml(href.removeprefix(UPLOADS_PREFIX)), image)
    return f'<div class="message_inline_image"><a href="{escapeHtml(href)}"{title_attr}>{tag}</a></div>\n'


def path_id_of(href: str) -> str | None:
    """The path_id an href names if it points at an upload of this server (not a thumbnail or temporary URL)."""
    if not href.startswith(UPLOADS_PREFIX):
        return None
    path_id = urllib.parse.unquote(href[len(UPLOADS_PREFIX) :].split("?", 1)[0].split("#", 1)[0])
    if path_id.startswith((THUMBNAIL_FOLDER + "/", "temporary/", "download/")):
        return None
    return path_id


def _link_text(children: list[Token], start: int) -> str:
    text = []
    for token in children[start + 1 :]:
        if token.type == "link_close":
            break
        text.append(token.content)
    return "".join(text)


def _paragraph_previews(children: list[Token], lookup: PreviewLookup, seen: set[str]) -> tuple[list[str], bool]:
    """The preview elements of a paragraph's upload links, and whether the paragraph is one bare link."""
    previews: list[str] = []
    links = [index for index, token in enumerate(children) if token.type == "link_open"]
    bare = False
    for index in links:
        href = str(children[index].attrs["href"])
        path_id = path_id_of(href)
        if path_id is None or path_id in seen:
            continue
        image = lookup(path_id)
        if image is None:
            continue
        seen.add(path_id)
        text = _link_text(children, index)
        previews.append(preview_html(href, None if text in ("", href) else text, image))
        bare = len(children) == 3 and len(links) == 1 and text == href
    return previews, bare


def add_previews(state: StateCore, lookup: PreviewLookup, seen: set[str], quoted: bool) -> bool:
    """Insert the previews of a rendering's upload links after their paragraphs; return whether any was added."""
    if quoted:
        return False  # Zulip previews nothing inside a quote
    tokens = state.tokens
    depth = 0
    hrefs: set[str] = set()
    for token in tokens:
        depth += {"blockquote_open": 1, "blockquote_close": -1}.get(token.type, 0)
        if token.type == "inline" and depth == 0:
            hrefs.update(str(c.attrs["href"]) for c in token.children or [] if c.type == "link_open")
    if not hrefs or len(hrefs) > INLINE_PREVIEW_LIMIT_PER_MESSAGE:
        return False
    result: list[Token] = []
    added = False
    depth = 0
    index = 0
    while index < len(tokens):
        token = tokens[index]
        depth += {"blockquote_open": 1, "blockquote_close": -1}.get(token.type, 0)
        is_paragraph = token.type == "paragraph_open" and index + 2 < len(tokens) and tokens[index + 1].type == "inline"
        if not is_paragraph or depth > 0:
            result.append(token)
            index += 1
            continue
        previews, bare = _paragraph_previews(tokens[index + 1].children or [], lookup, seen)
        if not (bare and not token.hidden):
            result.extend(tokens[index : index + 3])
        for element in previews:
            block = Token("html_block", "", 0, content=element, block=True, level=token.level)
            result.append(block)
        added = added or bool(previews)
        index += 3
    state.tokens = result
    return added


def rewrite_previews(rendered: str, path_id: str, image: ImagePreview | None) -> str | None:
    """The HTML with the placeholders of this upload replaced by its thumbnail (or, with None, its
    previews dropped); None when the HTML holds no placeholder of it."""
    changed = False

    def replace(match: re.Match[str]) -> str:
        nonlocal changed
        if urllib.parse.unquote(html.unescape(match[1])) != path_id:
            return match[0]
        changed = True
        if image is None:
            return ""
        return match[0].replace(match[2], image_tag(match[1], image))

    result = _PLACEHOLDER_PREVIEW.sub(replace, rendered)
    return result.rstrip("\n") if changed else None
