"""Markdown to HTML, rendered once when content is stored.

CommonMark through markdown-it-py with raw HTML disabled (user input never reaches the page as
markup). Used for descriptions and profile fields; messages use storage/messages/message_render.py, which adds
Zulip's dialect (mentions, channel links, autolinks).
"""

from __future__ import annotations

from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict


def render_image_as_link(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """The render rule for ![alt](url) in every renderer: a link to the image, never an <img>.

    Rendered HTML must not make every reader's client fetch a third-party URL (Zulip shows previews
    through its own thumbnailer instead): messages, descriptions and profile fields alike.
    """
    token = tokens[idx]
    src = str(token.attrs["src"])
    text = self.renderInlineAsText(token.children, options, env) or src
    return f'<a href="{escapeHtml(src)}">{escapeHtml(text)}</a>'


_renderer = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("strikethrough")
_renderer.add_render_rule("image", render_image_as_link)


def render(text: str) -> str:
    """Return the HTML rendering of Markdown text, without a trailing newline."""
    return _renderer.render(text).rstrip("\n")
