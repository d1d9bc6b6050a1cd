"""The floor for GET /messages (issue 12): the least a Tornado server must do to answer it.

A separate server sharing no code with tornchat: it reads tornchat's database file (its schema as
the migrations leave it) and answers GET /api/v1/messages with JSON byte-identical to tornchat's
for the requests the benchmark sends (bench/floor_check.py verifies that). Users, channels,
conversations, subscriptions, muting and API keys are loaded into memory at start; each request
runs one joined SQL query returning tuples (first_unread: one more for the anchor), builds msgspec
Structs, and caches no response. The database is only read: start it after the data is written.

What it serves: anchor (newest, oldest, first_unread, an id), num_before, num_after,
include_anchor, use_first_unread_anchor, apply_markdown, client_gravatar, allow_empty_topic_name,
and narrows of `channel`/`stream` (id or name), `topic` and `search` terms. Anything else gets a
400 "unsupported by the floor". It assumes no linkifiers (checked at start) and no URL in topics
(topic_links is always []), as in the generated data.

Usage: python bench/floor_server.py --data DIR [--port 9992]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import os
import re
import sqlite3
from typing import Any

import msgspec
import tornado.httpserver
import tornado.ioloop
import tornado.web
from msgspec import UNSET, UnsetType

NEWEST = 10000000000000000
EVERYONE = 1
GUEST = 600
EMPTY_TOPIC = "general chat"
READ, HISTORICAL_BITS = 1, ["read", "historical"]
FLAG_BITS = [
    ("read", 1), ("starred", 2), ("collapsed", 4), ("mentioned", 8), ("stream_wildcard_mentioned", 16),
    ("topic_wildcard_mentioned", 32), ("group_mentioned", 64), ("has_alert_word", 128), ("historical", 256),
    ("force_expand", 1024), ("force_collapse", 2048),
]  # fmt: skip


class ReactionUser(msgspec.Struct):
    user_id: int
    email: str
    full_name: str


class Reaction(msgspec.Struct):
    emoji_name: str
    emoji_code: str
    reaction_type: str
    user_id: int
    user: ReactionUser


class Participant(msgspec.Struct):
    id: int
    email: str
    full_name: str
    is_mirror_dummy: bool = False


class Message(msgspec.Struct, kw_only=True):
    id: int
    sender_id: int
    content: str
    content_type: str
    recipient_id: int
    timestamp: int
    client: str
    subject: str
    topic_links: list[Any]
    is_me_message: bool
    reactions: list[Reaction]
    submessages: list[Any]
    sender_full_name: str
    sender_email: str
    sender_realm_str: str
    display_recipient: str | list[Participant]
    type: str
    avatar_url: str | None
    stream_id: int | UnsetType = UNSET
    last_edit_timestamp: int | UnsetType = UNSET
    last_moved_timestamp: int | UnsetType = UNSET
    edit_history: list[Any] | UnsetType = UNSET
    flags: list[str]
    match_content: str | UnsetType = UNSET
    match_subject: str | UnsetType = UNSET


class Page(msgspec.Struct):
    result: str
    msg: str
    anchor: int
    found_anchor: bool
    found_oldest: bool
    found_newest: bool
    history_limited: bool
    messages: list[Message]


class Person(msgspec.Struct):
    id: int
    full_name: str
    email: str  # as the API shows it
    avatar: str
    gravatar_null: bool  # avatar_url is null with client_gravatar
    api_key: str
    is_active: bool
    is_guest: bool


class Channel(msgspec.Struct):
    id: int
    name: str
    recipient_id: int | None
    history_public: bool
    invite_only: bool
    web_public: bool


class Viewer(msgspec.Struct):
    subscribed: set[int]
    hidden: set[int]  # channels the viewer may have rows of but may not read now
    muted_channels: set[int]
    muted_topics: set[tuple[int, str]]
    unmuted_topics: set[tuple[int, str]]  # unmuted or followed in a muted channel


class Unsupported(Exception):
    pass


# -- what is held in memory --------------------------------------------------------------------


class State:
    """Everything but messages, loaded once."""

    def __init__(self, path: str, cache_mb: int) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute(f"PRAGMA cache_size = -{cache_mb * 1024}")
        self.db.execute(f"PRAGMA mmap_size = {os.path.getsize(path) + (1 << 30)}")
        q = self.db.execute
        if q("SELECT count(*) FROM linkifiers").fetchone()[0]:
            raise SystemExit("the floor computes no topic_links: this database has linkifiers")
        self.email_host, self.allow_edit_history, gravatar_on = q(
            "SELECT email_host, allow_edit_history, enable_gravatar FROM realm"
        ).fetchone()
        self.people: dict[int, Person] = {}
        self.by_email: dict[str, Person] = {}
        for row in q(
            "SELECT id, delivery_email, full_name, api_key, role, is_active, is_bot, avatar_version,"
            " avatar_source, email_address_visibility, avatar_file FROM users"
        ):
            uid, delivery, name, key, role, active, bot, version, source, visibility, file = row
            shown = delivery if bot or visibility == EVERYONE else f"user{uid}@{self.email_host}"
            # An uploaded avatar, else Gravatar when the server turns it on, else the drawn default.
            gravatar = bool(gravatar_on) and source != "U"
            if source == "U":
                avatar = f"/user_avatars/1/{file}.png?v={version}"
            elif gravatar:
                digest = hashlib.md5(delivery.lower().encode(), usedforsecurity=False).hexdigest()
                avatar = f"https://secure.gravatar.com/avatar/{digest}?v={version}"
            else:
                avatar = f"/user_avatars/default/{uid}.png?v={version}"
            person = Person(
                uid, name, shown, avatar, visibility == EVERYONE and gravatar, key, bool(active), role == GUEST,
            )  # fmt: skip
            self.people[uid] = person
            self.by_email[delivery.lower()] = self.by_email[f"user{uid}@{self.email_host}".lower()] = person
        self.channels: dict[int, Channel] = {}
        for cid, name, recipient, public_history, invite_only, web_public in q(
            "SELECT c.id, c.name, r.id, c.history_public_to_subscribers, c.invite_only, c.is_web_public"
            " FROM channels AS c LEFT JOIN recipients AS r ON r.type = 2 AND r.type_id = c.id"
        ):
            self.channels[cid] = Channel(
                cid, name, recipient, bool(public_history), bool(invite_only), bool(web_public)
            )
        self.by_name = {c.name.casefold(): c for c in self.channels.values()}
        self.participants: dict[int, list[Participant]] = {}
        for recipient, uid in q(
            "SELECT r.id, g.user_id FROM recipients AS r JOIN direct_message_group_members AS g"
            " ON g.group_id = r.type_id WHERE r.type = 3 ORDER BY r.id, g.user_id"
        ):
            p = self.people[uid]
            self.participants.setdefault(recipient, []).append(Participant(uid, p.email, p.full_name))
        self.viewers = {uid: self._viewer(uid) for uid in self.people}
        self.flag_lists: dict[int, list[str]] = {}

    def _viewer(self, uid: int) -> Viewer:
        q = self.db.execute
        subscribed, muted = set(), set()
        for cid, is_muted in q("SELECT channel_id, is_muted FROM subscriptions WHERE user_id = ? AND active", (uid,)):
            subscribed.add(cid)
            if is_muted:
                muted.add(cid)
        groups = {
            g
            for (g,) in q(
                "WITH RECURSIVE h(id) AS (SELECT group_id FROM user_group_members WHERE user_id = ? UNION"
                " SELECT s.supergroup_id FROM user_group_subgroups AS s JOIN h ON s.subgroup_id = h.id)"
                " SELECT id FROM h",
                (uid,),
            )
        }
        guest = self.people[uid].is_guest
        hidden = set()
        for cid, add_group, subscribe_group in q(
            "SELECT id, can_add_subscribers_group, can_subscribe_group FROM channels"
            " WHERE NOT is_web_public AND (invite_only OR ?)",
            (guest,),
        ):
            invited = self.channels[cid].invite_only and (add_group in groups or subscribe_group in groups)
            if cid not in subscribed and not invited:
                hidden.add(cid)
        topics = q("SELECT channel_id, topic_key, visibility_policy FROM user_topics WHERE user_id = ?", (uid,))
        muted_topics, unmuted = set(), set()
        for cid, key, policy in topics:
            (muted_topics if policy == 1 else unmuted if policy in (2, 3) else set()).add((cid, key))
        return Viewer(subscribed, hidden, muted, muted_topics, unmuted)

    def flag_names(self, bits: int) -> list[str]:
        names = self.flag_lists.get(bits)
        if names is None:
            names = [name for name, bit in FLAG_BITS if bits & bit]
            if bits & 48:
                names.append("wildcard_mentioned")
            self.flag_lists[bits] = names
        return names

    def can_read_history(self, uid: int, channel: Channel) -> bool:
        """History public to subscribers and content access (which is: not hidden from the viewer)."""
        return channel.history_public and channel.id not in self.viewers[uid].hidden


# -- a request --------------------------------------------------------------------------------

COLUMNS = (
    "m.id, {flags}, m.sender_id, m.recipient_id, m.channel_id, m.topic, {content}, m.date_sent, m.client,"
    " m.is_me_message, m.last_edit_timestamp, m.last_moved_timestamp, m.edit_history,"
    " (SELECT group_concat(r.user_id || ' ' || r.reaction_type || ' ' || r.emoji_code || ' ' || r.emoji_name,"
    " char(10)) FROM reactions AS r INDEXED BY reactions_by_message WHERE r.message_id = m.id)"
)
SEARCH_WORD = re.compile(r'"([^"]+)"|(\S+)')
TAG_OR_TEXT = re.compile(r"(<[^>]*>)|([^<]+)")


class Plan:
    """Which index drives the page (from, where, ordering column) for one viewer and narrow."""

    def __init__(self, state: State, uid: int, narrow: list[Any]) -> None:
        self.uid, self.empty, self.words = uid, False, []
        channel, topic, search = None, None, None
        for term in narrow:
            operator, operand = (term[0], term[1]) if isinstance(term, list) else (term["operator"], term["operand"])
            if isinstance(term, dict) and term.get("negated"):
                raise Unsupported("negated terms")
            if operator in ("channel", "stream"):
                channel = state_channel(state, operand)
            elif operator == "topic":
                topic = "" if operand == EMPTY_TOPIC else operand
            elif operator == "search":
                search = operand
            else:
                raise Unsupported(f"the {operator} operator")
        viewer = state.viewers[uid]
        self.channel, self.topic_key = channel, None if topic is None else topic.casefold()
        self.history = channel is not None and state.can_read_history(uid, channel)
        where, params = [], []
        if channel is not None:
            if channel.recipient_id is None or (not self.history and channel.id in viewer.hidden):
                self.empty = True
            where.append("m.recipient_id = ?")
            params.append(channel.recipient_id)
        if self.topic_key is not None:
            where.append("m.topic_key = ?" if channel else "m.channel_id IS NOT NULL AND m.topic_key = ?")
            params.append(self.topic_key)
        if not self.history and viewer.hidden and channel is None:
            hidden = ", ".join(str(c) for c in sorted(viewer.hidden))
            where.append(f"(m.channel_id IS NULL OR m.channel_id NOT IN ({hidden}))")
        if search is not None:
            found = [(phrase or word).strip('"') for phrase, word in SEARCH_WORD.findall(search)]
            self.words = [w for w in found if w.strip()]
            if not self.words:
                self.empty = True
            match = " ".join('"' + w.replace('"', '""') + '"' for w in self.words)
        if channel is not None:  # driven by messages_by_recipient / messages_by_topic
            join = "LEFT JOIN" if self.history else "CROSS JOIN"
            self.source = f"messages AS m {join} user_messages AS um ON um.user_id = ? AND um.message_id = m.id"
            self.column, self.params = "m.id", [uid, *params]
            if search is not None:
                where.append("m.id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?)")
                self.params.append(match)
        elif search is not None:  # driven by the full-text index, newest first
            self.source = (
                "messages_fts CROSS JOIN user_messages AS um ON um.user_id = ? AND um.message_id = messages_fts.rowid"
                " CROSS JOIN messages AS m ON m.id = messages_fts.rowid"
            )
            where.insert(0, "messages_fts MATCH ?")
            self.column, self.params = "messages_fts.rowid", [uid, match, *params]
        else:  # driven by the user's rows (the user_messages primary key)
            self.source = "user_messages AS um CROSS JOIN messages AS m ON m.id = um.message_id"
            where.insert(0, "um.user_id = ?")
            self.column, self.params = "um.message_id", [uid, *params]
        self.where = " AND ".join(where) or "1"

    def side(self, columns: str, side: int, comparison: str, descending: bool) -> str:
        order = "DESC" if descending else "ASC"
        return (
            f"SELECT * FROM (SELECT {side}, {columns} FROM {self.source} WHERE {self.where}"
            f" AND {self.column} {comparison} ? ORDER BY {self.column} {order} LIMIT ?)"
        )


def state_channel(state: State, operand: Any) -> Channel:
    found = state.by_name.get(operand.casefold()) if isinstance(operand, str) else state.channels.get(operand)
    if found is None and isinstance(operand, str) and operand.isdigit():
        found = state.channels.get(int(operand))
    if found is None:
        raise Unsupported(f"unknown channel {operand}")
    return found


def first_unread(state: State, plan: Plan) -> int:
    """The oldest unread message of the narrow the viewer has not muted (NEWEST if none)."""
    if plan.words:
        raise Unsupported("first_unread with search")
    sql = (
        "SELECT um.message_id, m.channel_id, m.topic_key FROM user_messages AS um INDEXED BY user_messages_unread"
        " CROSS JOIN messages AS m ON m.id = um.message_id WHERE um.user_id = ? AND (um.flags & 1) = 0"
    )
    params: list[Any] = [plan.uid]
    if plan.channel is not None:
        sql += " AND m.recipient_id = ?"
        params.append(plan.channel.recipient_id)
    if plan.topic_key is not None:
        sql += " AND m.channel_id IS NOT NULL AND m.topic_key = ?"
        params.append(plan.topic_key)
    viewer = state.viewers[plan.uid]
    for message_id, cid, key in state.db.execute(sql + " ORDER BY um.message_id", params):
        if cid is None:
            return message_id
        if plan.channel is None and cid in viewer.hidden:
            continue
        if (cid, key) in viewer.muted_topics:
            continue
        if plan.channel is None and cid in viewer.muted_channels and (cid, key) not in viewer.unmuted_topics:
            continue
        return message_id
    return NEWEST


def search_pattern(words: list[str]) -> re.Pattern[str]:
    """A word starting with any search term (the stemmed search finds "sending" for "send")."""
    alternatives = "|".join(re.escape(html.escape(w, quote=False)) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"\b(?:{alternatives})\w*", re.IGNORECASE)


def highlight(text: str, pattern: re.Pattern[str]) -> str:
    return pattern.sub(lambda m: f'<span class="highlight">{m.group(0)}</span>', text)


def highlight_html(rendered: str, pattern: re.Pattern[str]) -> str:
    """Highlight in the text of HTML, never inside its tags."""
    return "".join(tag or highlight(text, pattern) for tag, text in TAG_OR_TEXT.findall(rendered))


class Options(msgspec.Struct, kw_only=True):
    anchor: str | None = None
    num_before: int = 0
    num_after: int = 0
    include_anchor: bool = True
    use_first_unread_anchor: bool = False
    apply_markdown: bool = True
    client_gravatar: bool = True
    allow_empty_topic_name: bool = False
    narrow: list[Any] = msgspec.field(default_factory=list)


def fetch(state: State, uid: int, options: Options) -> Page:
    """The page: one query for both sides of the anchor, then message Structs from its tuples."""
    plan = Plan(state, uid, options.narrow)
    if options.use_first_unread_anchor or options.anchor == "first_unread":
        anchor = NEWEST if plan.empty else first_unread(state, plan)
    elif options.anchor in ("newest", "oldest"):
        anchor = NEWEST if options.anchor == "newest" else 0
    else:
        anchor = min(max(int(options.anchor or ""), 0), NEWEST)
    include, before_limit = options.include_anchor, options.num_before + options.include_anchor
    after_limit = 0 if anchor >= NEWEST else options.num_after
    columns = COLUMNS.format(
        flags="um.flags" if plan.history else "um.flags", content="m.rendered_content" if options.apply_markdown
        else "m.content",
    )  # fmt: skip
    parts, params = [], []
    if before_limit and not plan.empty:
        parts.append(plan.side(columns, 0, "<=" if include else "<", True))
        params += [*plan.params, anchor, before_limit]
    if after_limit and not plan.empty:
        parts.append(plan.side(columns, 1, ">", False))
        params += [*plan.params, anchor, after_limit]
    rows = state.db.execute(" UNION ALL ".join(parts), params).fetchall() if parts else []
    before = [r for r in rows if r[0] == 0 and r[1] != anchor][: options.num_before]
    at_anchor = [r for r in rows if r[0] == 0 and r[1] == anchor]
    after = [r for r in rows if r[0] == 1]
    before.reverse()
    messages = build_messages(state, options, plan, before + at_anchor + after)
    return Page(
        "success", "", anchor, bool(at_anchor), anchor == 0 or len(before) < options.num_before,
        anchor >= NEWEST or len(after) < options.num_after, False, messages,
    )  # fmt: skip


def build_messages(state: State, options: Options, plan: Plan, rows: list[tuple[Any, ...]]) -> list[Message]:
    people, channels, participants, flag_names = state.people, state.channels, state.participants, state.flag_names
    html_content = options.apply_markdown
    content_type = "text/html" if html_content else "text/x-markdown"
    gravatar, allow_empty = options.client_gravatar, options.allow_empty_topic_name
    pattern = search_pattern(plan.words) if plan.words else None
    result = []
    for _, mid, bits, sender_id, recipient_id, cid, topic, content, sent, client, me, edited, moved, history, r in rows:
        sender = people[sender_id]
        subject = (topic if topic or allow_empty else EMPTY_TOPIC) if cid is not None else ""
        message = Message(
            id=mid, sender_id=sender_id, content=content, content_type=content_type, recipient_id=recipient_id,
            timestamp=sent, client=client, subject=subject, topic_links=[], is_me_message=bool(me),
            reactions=reactions(people, r) if r is not None else [], submessages=[],
            sender_full_name=sender.full_name, sender_email=sender.email, sender_realm_str="",
            display_recipient=channels[cid].name if cid is not None else participants.get(recipient_id, []),
            type="stream" if cid is not None else "private",
            avatar_url=None if gravatar and sender.gravatar_null else sender.avatar,
            flags=HISTORICAL_BITS if bits is None else flag_names(bits),
        )  # fmt: skip
        if cid is not None:
            message.stream_id = cid
        if edited is not None:
            message.last_edit_timestamp = edited
        if moved is not None:
            message.last_moved_timestamp = moved
        if history is not None and state.allow_edit_history:
            message.edit_history = edit_history(history, allow_empty)
        if pattern is not None:
            message.match_content = highlight_html(content, pattern)
            message.match_subject = highlight(html.escape(subject, quote=False), pattern)
        result.append(message)
    return result


def reactions(people: dict[int, Person], packed: str) -> list[Reaction]:
    found = []
    for line in packed.split("\n"):
        uid, kind, code, name = line.split(" ", 3)
        person = people[int(uid)]
        found.append(Reaction(name, code, kind, person.id, ReactionUser(person.id, person.email, person.full_name)))
    return found


def edit_history(stored: str, allow_empty: bool) -> list[Any]:
    entries = msgspec.json.decode(stored)
    if not allow_empty:
        for entry in entries:
            for key in ("prev_topic", "topic"):
                if entry.get(key) == "":
                    entry[key] = EMPTY_TOPIC
    return entries


# -- HTTP -------------------------------------------------------------------------------------

encode = msgspec.json.Encoder().encode
BOOLS = {"true": True, "false": False}


class MessagesHandler(tornado.web.RequestHandler):
    def initialize(self, state: State) -> None:
        self.state = state

    def compute_etag(self) -> None:
        return None

    def get(self) -> None:
        person = self.authenticate()
        if person is None:
            self.set_status(401)
            self.set_header("WWW-Authenticate", 'Basic realm="zulip"')
            return self.answer({"result": "error", "msg": "Invalid API key", "code": "UNAUTHORIZED"})
        try:
            options = msgspec.convert(self.arguments(), Options, strict=False)
            page = fetch(self.state, person.id, options)
        except (Unsupported, msgspec.ValidationError, msgspec.DecodeError, ValueError, KeyError, TypeError) as error:
            self.set_status(400)
            return self.answer({"result": "error", "msg": f"unsupported by the floor: {error}", "code": "BAD_REQUEST"})
        self.answer(page)

    def answer(self, body: Any) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(encode(body) + b"\n")

    def arguments(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name, values in self.request.query_arguments.items():
            value = values[-1].decode()
            if name == "narrow":
                found[name] = msgspec.json.decode(value)
            else:
                found[name] = BOOLS.get(value, value)
        return found

    def authenticate(self) -> Person | None:
        scheme, _, encoded = self.request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            email, _, key = base64.b64decode(encoded).decode().partition(":")
        except ValueError:
            return None
        person = self.state.by_email.get(email.strip().lower())
        if person is None or not person.is_active or person.api_key != key:
            return None
        return person


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="tornchat data directory (its tornchat.sqlite3 is read)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9992)
    parser.add_argument("--cache-mb", type=int, default=512, help="SQLite page cache (the file is also mmapped)")
    args = parser.parse_args()
    state = State(os.path.join(args.data, "tornchat.sqlite3"), args.cache_mb)
    app = tornado.web.Application([(r"/api/v1/messages", MessagesHandler, {"state": state})])
    server = tornado.httpserver.HTTPServer(app)
    server.listen(args.port, args.host)
    print(f"floor serving {len(state.people)} users at http://{args.host}:{args.port}", flush=True)
    tornado.ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
