"""Applying linkifiers: the compiled set of the current version, links in content and topic_links.

Patterns run on RE2 (google-re2), whose matching time is linear in the text: no pattern, however
hostile, backtracks catastrophically. On top of that a pattern only ever sees the first
MAX_SCAN_LENGTH characters of a message or topic, and storage/org/linkifiers.py refuses at save time a
pattern that is slow on its example or on adversarial input.

Matching follows Zulip: a match must start at the beginning of the text, after whitespace or after
one of `'"(,:<`, and must not be followed by a letter or digit. Every linkifier scans the whole
text; overlapping matches go to the first-listed linkifier, then the leftmost.

Caches are process-wide and keyed on the database's linkifier_state (token, version). Every write to
linkifiers bumps the version in its own transaction (the triggers of migration 0014), so a change makes
every cached entry unreachable. A set compiled while a linkifier write is uncommitted (the change
journal says so: storage/cache/journal.py) gets a key of its own that nothing else shares, so neither
a rollback nor a later write can leave a cached set stale.
"""

from __future__ import annotations

import bisect
import itertools
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any, NamedTuple, TypeVar

import re2
import uri_template
from linkify_it import LinkifyIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from storage.cache.directory import directory
from storage.db.tx import Tx

# Characters of one message (all its text together) or one topic that patterns run on.
MAX_SCAN_LENGTH = 10_000
# Topics whose links are kept: a realistic organization has tens of thousands of topic names (the
# benchmark's 68,708), and a page of 1,000 messages spans hundreds. An entry is about 250 bytes.
TOPIC_LINKS_CACHE_SIZE = 65536
COMPILED_SETS_CACHE_SIZE = 8

BEFORE_GROUP = "linkifier_before_match"
OUTER_GROUP = "linkifier_actual_match"
AFTER_GROUP = "linkifier_after_match"
_NEXT_LINE = "\u0085"  # RE2's \s is ASCII only; NEL and \pZ make it Unicode whitespace
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # errors still raise; RE2 would also print them to stderr
# Zulip's split of a topic into candidate URLs.
_TOPIC_URL_SPLITTER = re2.compile(r"""[ !;\),'"]""")
_url_finder = LinkifyIt()

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# Counts topic_links computations (cache misses); tests read it to prove the cache is used.
stats = {"topic_link_scans": 0}


def compile_pattern(pattern: str) -> Any:
    """Return the RE2 regex finding `pattern` at a word boundary; raise re2.error if it is invalid."""
    wrapped = (
        rf"""(?P<{BEFORE_GROUP}>^|\s|{_NEXT_LINE}|\pZ|['"\(,:<])(?P<{OUTER_GROUP}>{pattern})"""
        rf"""(?P<{AFTER_GROUP}>$|[^\pL\pN])"""
    )
    return re2.compile(wrapped, options=_OPTIONS)


class Linkifier(NamedTuple):
    regex: Any  # a compiled RE2 pattern (compile_pattern)
    template: uri_template.URITemplate


class LinkifierSet(NamedTuple):
    """The realm's linkifiers in order, compiled, and the (token, version) they belong to."""

    key: tuple[str, int]
    linkifiers: list[Linkifier]


class LinkMatch(NamedTuple):
    start: int
    end: int
    text: str
    url: str


_compiled_sets: OrderedDict[tuple[str, int], LinkifierSet] = OrderedDict()
_uncommitted = itertools.count()
_topic_links: OrderedDict[tuple[str, int, str], list[dict[str, str]]] = OrderedDict()
_NO_LINKS: list[dict[str, str]] = []  # shared by every topic without links (handed out only to be encoded)


def _remember(cache: OrderedDict[K, V], key: K, value: V, size: int) -> V:
    cache[key] = value
    if len(cache) > size:
        cache.popitem(last=False)
    return value


def current(tx: Tx) -> LinkifierSet:
    """Return the compiled linkifiers of the database's current version (compiled once per version)."""
    known = directory(tx)
    key = known.linkifier_state()
    if known.journal.writing("linkifiers"):  # uncommitted rows: a key no other set has, kept nowhere
        return LinkifierSet((f"{key[0]}:uncommitted:{next(_uncommitted)}", key[1]), _compile(tx))
    found = _compiled_sets.get(key)
    if found is not None:
        return found
    return _remember(_compiled_sets, key, LinkifierSet(key, _compile(tx)), COMPILED_SETS_CACHE_SIZE)


def _compile(tx: Tx) -> list[Linkifier]:
    compiled = []
    for pattern, template in tx.all("SELECT pattern, url_template FROM linkifiers ORDER BY sort_order, id"):
        try:
            compiled.append(Linkifier(compile_pattern(pattern), uri_template.URITemplate(template)))
        except (re2.error, ValueError):
            continue  # validated when saved; a linkifier that fails here matches nothing
    return compiled


def scan(
    regex: Any, text: str, limit: int = MAX_SCAN_LENGTH, deadline: float | None = None
) -> Iterator[tuple[int, int, dict[str, str]]]:
    """Yield (start, end, named groups) of a compiled pattern's matches in the first `limit` characters,
    stopping early once time.perf_counter() passes `deadline` (the save-time check of a pattern)."""
    cut = min(len(text), limit)
    pos = 0
    steps = 0
    while pos < cut:
        steps += 1
        if deadline is not None and steps % 256 == 0 and time.perf_counter() > deadline:
            return
        m = regex.search(text, pos, cut)
        if m is None:
            return
        after = m.group(AFTER_GROUP)
        # The character after a match may start the next one: step back over it (Zulip's rule).
        pos = max(pos + 1, m.end() - len(after))
        if cut < len(text) and m.end() == cut and not after:
            return  # "end of text" at the cut is not the end of the text: no match there
        start, end = m.span(2)  # OUTER_GROUP (RE2 spans take group numbers only)
        if start < end:
            yield start, end, {name: value for name, value in m.groupdict().items() if value is not None}


def find_links(linkifiers: LinkifierSet, text: str, limit: int = MAX_SCAN_LENGTH) -> list[LinkMatch]:
    """Return the links in text by position: first-listed linkifier, then leftmost, wins an overlap."""
    return _without_overlaps(_every_match(linkifiers, text, limit), text)


def _every_match(linkifiers: LinkifierSet, text: str, limit: int) -> list[tuple[int, int, int, str]]:
    """(precedence, start, end, url) of every linkifier's matches, overlapping ones included."""
    found = []
    for precedence, linkifier in enumerate(linkifiers.linkifiers):
        for start, end, groups in scan(linkifier.regex, text, limit):
            found.append((precedence, start, end, linkifier.template.expand(**groups)))
    return found


def _without_overlaps(found: list[tuple[int, int, int, str]], text: str) -> list[LinkMatch]:
    found.sort(key=lambda item: (item[0], item[1]))
    starts: list[int] = []
    chosen: list[LinkMatch] = []  # kept sorted by start, never overlapping
    for _, start, end, url in found:
        index = bisect.bisect_left(starts, start)
        if index < len(starts) and starts[index] < end:
            continue
        if index > 0 and chosen[index - 1].end > start:
            continue
        starts.insert(index, start)
        chosen.insert(index, LinkMatch(start, end, text[start:end], url))
    return chosen


def topic_links(linkifiers: LinkifierSet, topic: str) -> list[dict[str, str]]:
    """Return a topic's `topic_links` ({text, url} by position), cached per (topic, linkifier version)."""
    return [dict(link) for link in shared_topic_links(linkifiers, topic)]  # copies: callers may change them


class TopicLinks(dict[str, list[dict[str, str]]]):
    """topic -> shared_topic_links for one linkifier set, computed on first lookup (a page's lookups are dict hits)."""

    def __init__(self, linkifiers: LinkifierSet) -> None:
        super().__init__()
        self.linkifiers = linkifiers

    def __missing__(self, topic: str) -> list[dict[str, str]]:
        if len(self) >= TOPIC_LINKS_CACHE_SIZE:
            self.clear()
        found = self[topic] = shared_topic_links(self.linkifiers, topic)
        return found


_topic_links_of_set: dict[tuple[str, int], TopicLinks] = {}


def topic_links_of(linkifiers: LinkifierSet) -> TopicLinks:
    """The TopicLinks of this linkifier set (the latest set's only: older ones are dropped)."""
    found = _topic_links_of_set.get(linkifiers.key)
    if found is None:
        _topic_links_of_set.clear()
        found = _topic_links_of_set[linkifiers.key] = TopicLinks(linkifiers)
    return found


def shared_topic_links(linkifiers: LinkifierSet, topic: str) -> list[dict[str, str]]:
    """topic_links, but the cached list itself: for callers that only encode it, never change it."""
    if not topic:
        return _NO_LINKS
    key = (*linkifiers.key, topic)
    cached = _topic_links.get(key)
    if cached is None:
        found = _compute_topic_links(linkifiers, topic)
        cached = _remember(_topic_links, key, found or _NO_LINKS, TOPIC_LINKS_CACHE_SIZE)
    else:
        _topic_links.move_to_end(key)
    return cached


def _compute_topic_links(linkifiers: LinkifierSet, topic: str) -> list[dict[str, str]]:
    stats["topic_link_scans"] += 1
    found = _every_match(linkifiers, topic, MAX_SCAN_LENGTH)
    # Bare URLs are links too, after every linkifier (Zulip's topic_links).
    raw = len(linkifiers.linkifiers)
    pos = 0
    while pos < len(topic):
        split = _TOPIC_URL_SPLITTER.search(topic, pos)
        end = split.start() if split is not None else len(topic)
        url = _url_at_start(topic[pos:end])
        if url is not None:
            found.append((raw, pos, pos + len(url[0]), url[1]))
        pos = end + 1
    return [{"text": link.text, "url": link.url} for link in _without_overlaps(found, topic)]


def _url_at_start(segment: str) -> tuple[str, str] | None:
    """Return (text, url) of a web link at the start of a topic segment; without a scheme, https."""
    matches = _url_finder.match(segment) if segment else None
    if not matches or matches[0].index != 0 or matches[0].schema == "mailto:":
        return None
    text = matches[0].raw
    return text, text if matches[0].schema else "https://" + text


class Scanner:
    """One rendering's linkifiers, what it may still scan, and the rendering's link check."""

    def __init__(self, linkifiers: LinkifierSet, is_safe: Callable[[str], bool]) -> None:
        self.linkifiers = linkifiers
        self.budget = MAX_SCAN_LENGTH
        self.is_safe = is_safe

    def href(self, url: str) -> str | None:
        """Return the link target of an expanded URL, or None when it is not a safe link."""
        url = url.strip()
        if not url or not self.is_safe(url):
            return None
        if url.startswith(("/", "#")) or ":" in url.split("/", 1)[0]:
            return url
        return "http://" + url  # no scheme: a web address, as Zulip reads it


def linkify_rule(state: StateCore) -> None:
    """Core rule, after links and autolinks: turn linkifier matches in plain text into links.

    Only text tokens outside links are scanned, so code spans, code blocks, Markdown links,
    autolinked URLs, mentions and channel links (tokens of their own) never hold a linkifier link.
    """
    scanner: Scanner | None = state.env.get("linkifiers")
    if scanner is None or not scanner.linkifiers.linkifiers:
        return
    for block in state.tokens:
        if block.type == "inline" and block.children:
            block.children = _linkify_children(scanner, block.children)


def _linkify_children(scanner: Scanner, children: list[Token]) -> list[Token]:
    result: list[Token] = []
    depth = 0
    for token in children:
        depth += (token.type == "link_open") - (token.type == "link_close")
        if token.type != "text" or depth > 0 or scanner.budget <= 0:
            result.append(token)
            continue
        text = token.content
        links = find_links(scanner.linkifiers, text, scanner.budget)
        scanner.budget -= len(text)
        pos = 0
        for link in links:
            href = scanner.href(link.url)
            if href is None:
                continue
            if link.start > pos:
                result.append(Token("text", "", 0, content=text[pos : link.start], level=token.level))
            result.append(Token("link_open", "a", 1, attrs={"href": href}, level=token.level, markup="linkifier"))
            result.append(Token("text", "", 0, content=link.text, level=token.level + 1))
            result.append(Token("link_close", "a", -1, level=token.level))
            pos = link.end
        if pos == 0:
            result.append(token)
        elif pos < len(text):
            result.append(Token("text", "", 0, content=text[pos:], level=token.level))
    return result
