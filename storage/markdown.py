"""Markdown to HTML, rendered once when content is stored.

CommonMark through markdown-it-py with raw HTML disabled (user input never reaches the page as
markup). Used for descriptions and profile fields; messages use storage/message_render.py, which adds
Zulip's dialect (mentions, channel links, autolinks).
"""

from __future__ import annotations

from markdown_it import MarkdownIt

_renderer = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("strikethrough")


def render(text: str) -> str:
    """Return the HTML rendering of Markdown text, without a trailing newline."""
    return _renderer.render(text).rstrip("\n")
