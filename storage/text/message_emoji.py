"""Emoji in rendered messages: `:name:` and Unicode emoji become Zulip's emoji markup.

Zulip's markup, which clients style and read (zerver/lib/markdown: make_emoji, make_realm_emoji):
- a Unicode emoji, by name or typed: `<span aria-label="big smile" class="emoji emoji-1f604"
  role="img" title="big smile">:big_smile:</span>` (a typed emoji shows its canonical name);
- a custom emoji: `<img alt=":name:" class="emoji" src="/user_avatars/1/emoji/images/..." title="name">`,
  and `:zulip:` likewise with Zulip's own image URL.
An active custom emoji wins over a Unicode emoji of the same name, as for reactions. Unknown names
stay text. Only plain text is looked at: code spans and blocks, link targets, autolinked URLs and
linkifier output never hold an emoji; the text of a written [text](url) link does, as in Zulip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from storage.text import emoji


def _span(code: str, name: str, level: int) -> Token:
    title = name.replace("_", " ")
    attrs = {"aria-label": title, "class": f"emoji emoji-{code}", "role": "img", "title": title}
    return Token("zulip_emoji", "span", 0, attrs=attrs, content=f":{name}:", level=level)


def _image(url: str, name: str, level: int) -> Token:
    attrs = {"alt": f":{name}:", "class": "emoji", "src": url, "title": name.replace("_", " ")}
    return Token("zulip_emoji", "img", 0, attrs=attrs, level=level)


def _named(name: str, realm_emoji: dict[str, str], level: int) -> Token | None:
    """The token of `:name:`, or None when no emoji has that name."""
    if name in realm_emoji:
        return _image(realm_emoji[name], name, level)
    if name == emoji.EXTRA_EMOJI_NAME:
        return _image(emoji.EXTRA_EMOJI_URL, name, level)
    code = emoji.NAME_TO_CODE.get(name)
    return None if code is None else _span(code, name, level)


def _matches(text: str, realm_emoji: dict[str, str], level: int) -> list[tuple[int, int, Token]]:
    """(start, end, token) of each emoji in text, in order; `:name:` first, typed emoji around them."""
    found: list[tuple[int, int, Token]] = []
    for match in emoji.EMOJI_SYNTAX.finditer(text):
        token = _named(match.group()[1:-1], realm_emoji, level)
        if token is not None:
            found.append((match.start(), match.end(), token))
    # The two never overlap: `:name:` holds only word characters, "-" and "+", and every typed emoji
    # has a character that is none of those.
    for start, end, code in emoji.find_unicode_emoji(text):
        found.append((start, end, _span(code, emoji.CODE_TO_NAME[code], level)))
    return sorted(found, key=lambda item: item[0])


def _split(token: Token, realm_emoji: dict[str, str]) -> list[Token]:
    """The text token as text and emoji tokens."""
    text, pieces, pos = token.content, [], 0
    for start, end, emoji_token in _matches(text, realm_emoji, token.level):
        if start > pos:
            pieces.append(Token("text", "", 0, content=text[pos:start], level=token.level))
        pieces.append(emoji_token)
        pos = end
    if pos == 0:
        return [token]
    if pos < len(text):
        pieces.append(Token("text", "", 0, content=text[pos:], level=token.level))
    return pieces


# Links whose text the author did not write as text: bare URLs (linkify), <URL> autolinks and realm
# linkifiers. Their text keeps every ":"; the text of a [text](url) link gets emoji, as in Zulip.
MACHINE_LINKS = frozenset({"linkify", "autolink", "linkifier"})


def emoji_rule(realm_emoji: Callable[[EnvType], dict[str, str]]) -> Callable[[StateCore], None]:
    """Return the core rule (run after links and linkifiers) that marks emoji in plain text.

    realm_emoji(env) gives the active custom emoji (name -> image URL); it is asked only when the
    content holds `:name:` syntax, as Zulip reads them only then.
    """

    def rule(state: StateCore) -> None:
        names = realm_emoji(state.env) if emoji.EMOJI_SYNTAX.search(state.src) else {}
        for block in state.tokens:
            if block.type != "inline" or not block.children:
                continue
            result: list[Token] = []
            machine_links: list[bool] = []  # per open link: its text is a URL or a linkifier's output
            for token in block.children:
                if token.type == "link_open":
                    machine_links.append(token.markup in MACHINE_LINKS)
                elif token.type == "link_close" and machine_links:
                    machine_links.pop()
                plain = token.type == "text" and not any(machine_links)
                result.extend(_split(token, names) if plain else [token])
            block.children = result

    return rule


def render_emoji(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """Zulip's emoji element, attributes in Zulip's (sorted) order."""
    token = tokens[idx]
    attrs = "".join(f' {name}="{escapeHtml(str(value))}"' for name, value in sorted(token.attrs.items()))
    if token.tag == "img":
        return f"<img{attrs}>"
    return f"<span{attrs}>{escapeHtml(token.content)}</span>"
