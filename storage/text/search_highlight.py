"""Search terms: the words and "quoted phrases" of a search operand, their FTS5 query, and their
highlights in a message's HTML and topic (`match_content`, `match_subject`)."""

from __future__ import annotations

import functools
import html
import re

_PHRASE = re.compile(r'"([^"]+)"|(\S+)')
_TAG_OR_TEXT = re.compile(r"(<[^>]*>)|([^<]+)")


def search_terms(operand: str) -> list[str]:
    """Split a search operand into words and "quoted phrases" (stray quotes dropped)."""
    found = [(phrase or word).strip('"') for phrase, word in _PHRASE.findall(operand)]
    return [term for term in found if term.strip()]


def fts_query(terms: list[str]) -> str:
    """An FTS5 query matching every term (each quoted, so user text is never FTS syntax).

    A quoted phrase is an FTS5 phrase: its words adjacent and in order. The porter tokenizer stems
    query and text alike, so "sending" finds "send".
    """
    return " ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _pattern(terms: list[str]) -> re.Pattern[str]:
    return _compiled(tuple(terms))


@functools.lru_cache(maxsize=256)  # a search page highlights its 100 messages with the same terms
def _compiled(terms: tuple[str, ...]) -> re.Pattern[str]:
    # A term matches a word that starts with it, as the stemming search finds "sending" for "send".
    alternatives = "|".join(re.escape(html.escape(t, quote=False)) for t in sorted(terms, key=len, reverse=True))
    return re.compile(rf"\b(?:{alternatives})\w*", re.IGNORECASE)


def _wrap(match: re.Match[str]) -> str:
    return f'<span class="highlight">{match.group(0)}</span>'


def _mark(text: str, pattern: re.Pattern[str]) -> str:
    # A function, not a template: re.sub compiles a template in Python on every call.
    return pattern.sub(_wrap, text)


def highlight_content(rendered: str, terms: list[str]) -> str:
    """Wrap matches in the text (never inside tags) of rendered HTML in highlight spans."""
    pattern = _pattern(terms)
    return "".join(tag or _mark(text, pattern) for tag, text in _TAG_OR_TEXT.findall(rendered))


def highlight_topic(topic: str, terms: list[str]) -> str:
    """Return the topic as HTML with matches highlighted."""
    return _mark(html.escape(topic, quote=False), _pattern(terms))
