"""The plain-text excerpt of a message that a mobile notification shows.

Zulip's get_mobile_push_content and truncate_content, rebuilt on the standard library: the
rendered HTML's text, with quotes prefixed by "> ", a spoiler reduced to its header and "(…)",
ordered lists numbered, images by their alt text; then cut to 200 characters plus "…".
"""

from __future__ import annotations

from html.parser import HTMLParser

CONTENT_LIMIT = 200
ELLIPSIS = "…"  # one character where "..." would take three of the notification's room
# Elements that never have an end tag: never pushed on the parser's stack.
VOID_ELEMENTS = frozenset("area base br col embed hr img input link meta source track wbr".split())


class Element:
    """One HTML element: its tag, attributes, and children (text or elements) in order."""

    __slots__ = ("tag", "attrs", "children")

    def __init__(self, tag: str, attrs: dict[str, str]) -> None:
        self.tag = tag
        self.attrs = attrs
        self.children: list[Element | str] = []

    @property
    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("div", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID_ELEMENTS:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        # Close up to the matching open element; a stray end tag closes nothing.
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_html(html: str) -> Element:
    """Return the element tree of an HTML fragment, under a root <div>."""
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def _quote(text: str) -> str:
    return "".join(f"> {line}\n" for line in text.splitlines() if line)


def _spoiler(element: Element) -> str:
    header = next((c for c in element.children if isinstance(c, Element) and "spoiler-header" in c.classes), None)
    text = "" if header is None else _text(header).strip()
    return f"{text} (…)\n" if text else "(…)\n"


def _ordered_list(element: Element, depth: int) -> str:
    start = element.attrs.get("start", "")
    counter = int(start) if start.isdigit() else 1
    indent = "\n" + "  " * depth if depth else ""
    items = []
    for child in element.children:
        if isinstance(child, Element) and child.tag == "li":
            items.append(f"{indent}{counter}. {_text(child, depth + 1).strip()}")
            counter += 1
    return "\n".join(items)


def _text(element: Element, list_depth: int = 0) -> str:
    """The text of an element and its descendants, in Zulip's notification form."""
    if element.tag == "img":
        return element.attrs.get("alt", "")
    if element.tag == "ol":
        return _ordered_list(element, list_depth)
    if "spoiler-block" in element.classes:
        return _spoiler(element)
    children = element.children
    if element.tag == "blockquote":
        # Text before the quote's first element is only the line break ahead of its first paragraph.
        first = next((i for i, child in enumerate(children) if isinstance(child, Element)), len(children))
        children = children[first:]
    inner = "".join(child if isinstance(child, str) else _text(child, list_depth) for child in children)
    return _quote(inner) if element.tag == "blockquote" else inner


def notification_text(rendered_html: str) -> tuple[str, bool]:
    """Return the plain-text excerpt of rendered message HTML and whether it was truncated."""
    text = _text(parse_html(rendered_html)).strip()
    if len(text) <= CONTENT_LIMIT:
        return text, False
    return text[:CONTENT_LIMIT] + ELLIPSIS, True
