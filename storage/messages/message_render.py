"""Chat message content to HTML in Zulip's Markdown dialect, rendered once when a message is sent.

CommonMark through markdown-it-py with raw HTML escaped, changed where Zulip users expect it:
a newline is a line break, `~~x~~` is <del>, only `*` makes emphasis (`_` stays text, as in
snake_case), no reference links or setext headings, tables, bare URLs and emails become links
(linkify-it-py), code blocks in Zulip's `codehilite` markup, ```quote and ```spoiler blocks, user
and group mentions, channel and topic links, emoji (storage/text/message_emoji.py). Zulip's HTML is the
contract: clients style its class names, so the markup below copies it.

Mentions and channel links are inline rules, so code spans and code blocks never hold one.
Realm linkifiers (storage/text/linkify.py) run on the plain text left after links and autolinks. Not
rendered (left as typed): emoticons (translate_emoticons is off by default), LaTeX, <time:...>,
syntax highlighting. Uploaded images get Zulip's inline previews (storage/messages/message_previews.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cached_property
from typing import Any, NamedTuple
from urllib.parse import quote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml, unescapeAll
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline, emphasis
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from storage.channels.channels import has_metadata_access
from storage.db.tx import Tx
from storage.messages import image_attachments, message_previews
from storage.model.channel import get_channel_by_id
from storage.model.message import Rendered
from storage.model.user import User
from storage.org.realm_emoji import active_realm_emoji_urls
from storage.text import linkify, markdown, message_emoji

STREAM_WILDCARDS = frozenset({"all", "everyone", "channel", "stream"})
# Zulip's list: the web's own schemes plus the HTML spec's safelisted ones. Anything else
# (javascript:, data:, vbscript:, file:, unknown schemes) is not a link and stays text.
ALLOWED_SCHEMES = frozenset(
    "http https ftp bitcoin geo im irc ircs magnet mailto matrix mms news nntp openpgp4fpr"
    " sip sms smsto ssh tel urn webcal wtai xmpp".split()
)
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")
# Data-code-language is Pygments' name for the language, as Zulip shows it; unknown languages
# keep the name typed (Zulip does the same, so that "playgrounds" can hook on custom names).
_LANGUAGES = """
Python: python py python3 py3 | Python 2.x: py2 | JavaScript: javascript js | TypeScript: typescript ts
Bash: bash sh shell zsh | Bash Session: console shell-session | C: c | C++: c++ cpp | C#: c# csharp cs
Go: go golang | Rust: rust rs | Ruby: ruby rb | Kotlin: kotlin kt | Haskell: haskell hs | Java: java
PHP: php | SQL: sql | JSON: json | YAML: yaml yml | TOML: toml | INI: ini | HTML: html | CSS: css | XML: xml
Markdown: markdown md | TeX: tex latex | Diff: diff patch | Text only: text plain txt | Perl: perl pl
Docker: docker dockerfile | Makefile: make makefile | PowerShell: powershell ps1 | Swift: swift
Scala: scala | Lua: lua | Elixir: elixir | Erlang: erlang | OCaml: ocaml | Julia: julia | Dart: dart
"""
LANGUAGE_NAMES = {
    alias: name.strip()
    for entry in _LANGUAGES.replace("\n", " | ").split("|")
    if entry.strip()
    for name, aliases in [entry.split(":")]
    for alias in aliases.split()
}
# File extensions that are also country TLDs: "views.py" and "README.md" are not links (Zulip's list).
NOT_TLDS = frozenset({"md", "py"})
MAX_NESTED_BLOCKS = 8  # ```quote in ```quote...: deeper ones are shown as code, not recursed into

_MENTION_RE = re.compile(r"@(_?)(?:\*\*([^*]+)\*\*|\*([^*]+)\*)")
_CHANNEL_RE = re.compile(r"#\*\*([^*]+)\*\*")
_USER_ID_RE = re.compile(r"(.+)?\|(\d{1,18})")  # @**Name|12** and @**|12**; 18 digits fit SQLite
_SCHEME_RE = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):")
_BEFORE_MENTION = "'\"({[/<"  # with whitespace and the start of text: Zulip's lookbehind


class _Span(NamedTuple):
    """A resolved mention or channel link: its element, text, and what it records."""

    tag: str
    attrs: dict[str, str]
    text: str
    mention: tuple[str, int] | None  # ("user", id), ("group", id), ("stream", 0), ("topic", 0)


def _silent(name: str, silent: bool) -> tuple[str, str]:
    """Return the class suffix and text of a mention: silent ones drop the @."""
    return (" silent", name) if silent else ("", "@" + name)


def hash_encode(text: str) -> str:
    """Encode a narrow URL component as Zulip does: percent-encoding with "." for "%"."""
    return quote(text, safe="").replace(".", "%2E").replace("%", ".")


class _Context:
    """One rendering: the transaction it reads names from and what the content turned out to hold."""

    def __init__(self, tx: Tx, sender: User | None) -> None:
        self.tx = tx
        self.sender = sender
        self.user_ids: set[int] = set()
        self.group_ids: set[int] = set()
        self.wildcards: set[str] = set()
        self.has_link = self.has_image = self.has_attachment = False
        self.nesting = 0
        self.quotes = 0  # inside how many ```quote blocks the renderer is (no previews there)
        self.previewed: set[str] = set()  # uploads already previewed: each once per message
        self._cache: dict[tuple[str, str], _Span | None] = {}

    @cached_property
    def realm_emoji(self) -> dict[str, str]:
        return active_realm_emoji_urls(self.tx)

    @cached_property
    def realm_prefix(self) -> str | None:
        url = self.tx.value("SELECT url FROM realm")
        return url.rstrip("/") + "/" if url else None

    def image_preview(self, path_id: str) -> message_previews.ImagePreview | None:
        return image_attachments.get_image_preview(self.tx, self.sender, path_id)

    def resolve(self, kind: str, text: str, silent: bool) -> _Span | None:
        # Inline rules also run in "silent" validation passes: one query per distinct name.
        key = (kind + ("_" if silent else ""), text)
        if key not in self._cache:
            if kind == "channel":
                self._cache[key] = self._channel(text)
            else:
                self._cache[key] = self._user(text, silent) if kind == "user" else self._group(text, silent)
        return self._cache[key]

    def _user(self, name: str, silent: bool) -> _Span | None:
        if name in STREAM_WILDCARDS:
            suffix, text = _silent(name, silent)
            attrs = {"class": "user-mention channel-wildcard-mention" + suffix, "data-user-id": "*"}
            return _Span("span", attrs, text, None if silent else ("stream", 0))
        if name == "topic":
            suffix, text = _silent(name, silent)
            return _Span("span", {"class": "topic-mention" + suffix}, text, None if silent else ("topic", 0))
        row = self._find_user(name)
        if row is None:
            return None
        # A deactivated user (reachable by id only) is shown but never notified, as in Zulip.
        silent = silent or not row["is_active"]
        suffix, text = _silent(row["full_name"], silent)
        attrs = {"class": "user-mention" + suffix, "data-user-id": str(row["id"])}
        return _Span("span", attrs, text, None if silent else ("user", row["id"]))

    def _find_user(self, name: str) -> Any:
        by_id = _USER_ID_RE.fullmatch(name)
        if by_id:
            row = self.tx.one("SELECT id, full_name, is_active FROM users WHERE id = ?", (int(by_id[2]),))
            # @**Name|id** must name that user: one user's name with another's id is no mention.
            if row is None or (by_id[1] and by_id[1].lower() != row["full_name"].lower()):
                return None
            return row
        # Names are not unique: an ambiguous name is no mention (the composer adds |id).
        rows = self.tx.all(
            "SELECT id, full_name, is_active FROM users WHERE full_name = ? COLLATE NOCASE AND is_active LIMIT 2",
            (name,),
        )
        return rows[0] if len(rows) == 1 else None

    def _group(self, name: str, silent: bool) -> _Span | None:
        # name has NOCASE collation: this is a case-insensitive lookup served by its unique index.
        row = self.tx.one(
            "SELECT id, name FROM user_groups WHERE name = ? AND name IS NOT NULL AND NOT deactivated", (name,)
        )
        if row is None:
            return None
        suffix, text = _silent(row["name"], silent)
        attrs = {"class": "user-group-mention" + suffix, "data-user-group-id": str(row["id"])}
        return _Span("span", attrs, text, None if silent else ("group", row["id"]))

    def _channel(self, inner: str) -> _Span | None:
        # #**channel>topic** when the part before ">" is a channel, else #**channel** (Zulip's order).
        name, _, topic = inner.partition(">")
        if topic:
            row = self._find_channel(name)
            if row is not None:
                slug = f"{row['id']}-{hash_encode(row['name'].replace(' ', '-'))}"
                attrs = {"class": "stream-topic", "data-stream-id": str(row["id"])}
                attrs["href"] = f"/#narrow/channel/{slug}/topic/{hash_encode(topic)}"
                return _Span("a", attrs, f"#{row['name']} > {topic}", None)
        row = self._find_channel(inner)
        if row is None:
            return None
        slug = f"{row['id']}-{hash_encode(row['name'].replace(' ', '-'))}"
        attrs = {"class": "stream", "data-stream-id": str(row["id"]), "href": f"/#narrow/channel/{slug}"}
        return _Span("a", attrs, f"#{row['name']}", None)

    def _find_channel(self, name: str) -> Any:
        row = self.tx.one("SELECT id, name FROM channels WHERE name = ? AND NOT is_archived", (name,))
        if row is not None and self.sender is not None:
            # A link must not reveal a private channel the sender cannot see.
            channel = get_channel_by_id(self.tx, row["id"])
            if channel is None or not has_metadata_access(self.tx, self.sender, channel):
                return None
        return row

    def record_link(self, href: str) -> str:
        """Note what a link points to; return its href, relative when it points into this server."""
        prefix = self.realm_prefix
        if prefix and href.startswith((prefix + "#", prefix + "user_uploads/")):
            href = href[len(prefix) :]  # Zulip's rule: local links open in the app, not a new tab
        self.has_link = True
        if href.startswith(("/user_uploads/", "user_uploads/")):
            self.has_attachment = True
        try:
            path = urlsplit(href).path
        except ValueError:
            path = href
        if path.lower().endswith(IMAGE_EXTENSIONS):
            self.has_image = True
        return href


# -- markdown-it rules -----------------------------------------------------------------------


def _mention_rule(state: StateInline, silent: bool) -> bool:
    """@**user**, @_**user**, @*group*, @_*group*, #**channel**, #**channel>topic**."""
    src, pos = state.src, state.pos
    if src[pos] not in "@#" or (pos > 0 and not (src[pos - 1].isspace() or src[pos - 1] in _BEFORE_MENTION)):
        return False
    context: _Context = state.env["zulip"]
    span: _Span | None = None
    if src[pos] == "@":
        match = _MENTION_RE.match(src, pos, state.posMax)
        if match:
            quiet = match[1] == "_"
            span = context.resolve("user", match[2], quiet) if match[2] else context.resolve("group", match[3], quiet)
    else:
        match = _CHANNEL_RE.match(src, pos, state.posMax)
        # A channel link inside a link's text would nest <a> elements.
        if match and state.linkLevel == 0:
            span = context.resolve("channel", match[1], False)
    if match is None or span is None:
        return False  # an unknown name stays Markdown: @**Nobody** is "@" and bold "Nobody"
    if not silent:
        token = state.push("zulip_mention", span.tag, 0)
        for name, value in span.attrs.items():
            token.attrSet(name, value)
        token.content = span.text
        token.meta = {"mention": span.mention}
    state.pos = match.end()
    return True


def _star_emphasis(state: StateInline, silent: bool) -> bool:
    """Emphasis with `*` only: Zulip leaves `_x_` and `__x__` as typed."""
    if state.src[state.pos] == "_":
        return False
    return emphasis.tokenize(state, silent)


def _inspect(state: StateCore) -> None:
    """Record mentions and links, make links local, <s> into Zulip's <del>, empty link text the URL."""
    context: _Context = state.env["zulip"]
    for block in state.tokens:
        children = block.children or []
        for token in children:
            if token.type in ("s_open", "s_close"):
                token.tag = "del"
            elif token.type == "zulip_mention" and token.meta["mention"]:
                kind, item_id = token.meta["mention"]
                if kind == "user":
                    context.user_ids.add(item_id)
                elif kind == "group":
                    context.group_ids.add(item_id)
                else:
                    context.wildcards.add(kind)
            elif token.type in ("link_open", "image"):
                attr = "href" if token.type == "link_open" else "src"
                token.attrs[attr] = context.record_link(str(token.attrs[attr]))
                context.has_image = context.has_image or token.type == "image"
        for index in range(len(children) - 1, -1, -1):
            if children[index].type == "link_open":
                _fill_empty_link(children, index)


def _previews(state: StateCore) -> None:
    """Zulip's inline previews of uploaded images, after the paragraphs linking them."""
    context: _Context = state.env["zulip"]
    if message_previews.add_previews(state, context.image_preview, context.previewed, context.quotes > 0):
        context.has_image = True


def _fill_empty_link(children: list[Token], index: int) -> None:
    """Give [](url) and [  ](url) their URL as text, as Zulip does."""
    after = children[index + 1]
    if after.type == "text" and not after.content.strip() and children[index + 2].type == "link_close":
        after.content = str(children[index].attrs["href"])
    elif after.type == "link_close":
        text = Token("text", "", 0, content=str(children[index].attrs["href"]), level=after.level + 1)
        children.insert(index + 1, text)


def _code_html(code: str, language: str) -> str:
    """Zulip's code block: codehilite markup, trailing spaces and outer blank lines dropped."""
    code = "\n".join(line.rstrip() for line in code.split("\n")).strip("\n") + "\n"
    code = escapeHtml(code).replace("'", "&#39;")
    name = LANGUAGE_NAMES.get(language.lower(), language)
    attrs = f' data-code-language="{escapeHtml(name)}"' if language else ""
    return f'<div class="codehilite"{attrs}><pre><span></span><code>{code}</code></pre></div>\n'


def _render_fence(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    info = unescapeAll(token.info).strip().split(maxsplit=1) or [""]
    language = info[0].lstrip("{.")  # Zulip accepts ```.py and ```{.py
    context: _Context = env["zulip"]
    if language.lower() not in ("quote", "spoiler") or context.nesting >= MAX_NESTED_BLOCKS:
        return _code_html(token.content, language)
    context.nesting += 1
    is_quote = language.lower() == "quote"
    context.quotes += is_quote
    try:
        inner = _markdown.render(token.content, env)
        if language.lower() == "quote":
            return f"<blockquote>\n{inner}</blockquote>\n"
        header = _markdown.render(info[1] if len(info) > 1 else "", env)
        return (
            f'<div class="spoiler-block"><div class="spoiler-header">\n{header}</div>'
            f'<div class="spoiler-content" aria-hidden="true">\n{inner}</div></div>\n'
        )
    finally:
        context.nesting -= 1
        context.quotes -= is_quote


def _render_code_block(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return _code_html(tokens[idx].content, "")


def _render_mention(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    return f"<{token.tag}{self.renderAttrs(token)}>{escapeHtml(token.content)}</{token.tag}>"


class _MessageMarkdown(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        # An allowlist of schemes (no scheme: a relative link). Leading spaces and control
        # characters are skipped because browsers skip them before reading the scheme.
        match = _SCHEME_RE.match(url.lstrip("".join(map(chr, range(33)))))
        return match is None or match[1].lower() in ALLOWED_SCHEMES


def _build() -> MarkdownIt:
    options = {"html": False, "linkify": True, "breaks": True, "xhtmlOut": False, "typographer": False}
    md = _MessageMarkdown("commonmark", options)
    md.enable(["strikethrough", "table", "linkify"]).disable(["reference", "lheading"])
    assert md.linkify is not None
    # linkify-it accepts every two-letter country TLD for links without a scheme: all but NOT_TLDS.
    two_letter = [alt[0] + last for alt in md.linkify.tlds_2ch_src_re.split("|") for last in alt[1:].strip("[]")]
    md.linkify.tlds([*md.linkify.tlds_default, *(tld for tld in two_letter if tld not in NOT_TLDS)])
    md.inline.ruler.at("emphasis", _star_emphasis)
    md.inline.ruler.before("emphasis", "zulip_mention", _mention_rule)
    md.core.ruler.push("zulip_inspect", _inspect)
    md.core.ruler.push("zulip_previews", _previews)
    md.core.ruler.before("zulip_inspect", "zulip_linkifiers", linkify.linkify_rule)
    md.core.ruler.before("zulip_inspect", "zulip_emoji", message_emoji.emoji_rule(lambda env: env["zulip"].realm_emoji))
    md.add_render_rule("fence", _render_fence)
    md.add_render_rule("code_block", _render_code_block)
    md.add_render_rule("image", markdown.render_image_as_link)
    md.add_render_rule("zulip_mention", _render_mention)
    md.add_render_rule("zulip_emoji", message_emoji.render_emoji)
    return md


_markdown = _build()


def render_message(tx: Tx, content: str, sender: User | None = None) -> Rendered:
    """Return the HTML of message content (no trailing newline) and what it mentions and links to.

    With a sender, channel links are made only to channels the sender may see.
    """
    context = _Context(tx, sender)
    scanner = linkify.Scanner(linkify.current(tx), _markdown.validateLink)
    html = _markdown.render(content, {"zulip": context, "linkifiers": scanner}).rstrip("\n")
    return Rendered(
        html=html,
        mentioned_user_ids=context.user_ids,
        mentioned_group_ids=context.group_ids,
        stream_wildcard="stream" in context.wildcards,
        topic_wildcard="topic" in context.wildcards,
        has_link=context.has_link,
        has_image=context.has_image,
        has_attachment=context.has_attachment,
        # Zulip's /me: the HTML keeps "/me"; clients replace it with the sender's name.
        is_me_message=content.startswith("/me "),
    )
