"""GET /messages on a generated organization: 1M messages, 1,000 users.

Builds the database once (kept in --data) with plain SQL in the shapes the send path writes, then
times three fetches through the storage function and over HTTP: newest 1000 of a user's history,
1000 of one channel+topic, and 500/500 around a middle anchor.

Two data shapes (--shape): `old`, the first one (100 channels of 5 topics, each user in 3
channels, short contents, no reactions, edits or direct messages; default --data
/tmp/tornchat-bench2), and `real` (the default, build_real below; users in 20 of 600 channels,
topics of Zipf-distributed sizes, 10% direct messages, reactions on 5%, edits, ~150 characters).
Usage: python bench/get_messages.py [--shape real|old] [--messages N] [--repeat N] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time

import msgspec

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from storage.channels.channel_creation import ChannelOptions, create_channel
from storage.db.database import Database  # noqa: E402
from storage.fetch.message_fetch import GetMessages, get_messages  # noqa: E402
from storage.model import flags, recipients
from storage.org import realm as realm_storage  # noqa: E402
from storage.org import users  # noqa: E402
from tornchat.settings import Settings  # noqa: E402

USERS, CHANNELS, TOPICS_PER_CHANNEL, CHANNELS_PER_USER = 1000, 100, 5, 3


def build_old(path: str, message_count: int) -> None:
    db = Database(path, clock=lambda: 1_700_000_000.0)
    rng = random.Random(7)

    def setup(tx):
        realm_storage.create_realm(tx, "Bench", "http://127.0.0.1:9991", "bench.example")
        people = [users.create_user(tx, f"person{n}@bench.example", f"Person {n}", None) for n in range(USERS)]
        owner = people[0]
        channels = [create_channel(tx, owner, f"channel {c}", ChannelOptions(), True) for c in range(CHANNELS)]
        for person in people:
            for channel in rng.sample(channels, CHANNELS_PER_USER):
                tx.execute(
                    "INSERT INTO subscriptions (user_id, channel_id, color) VALUES (?, ?, '#76ce90')",
                    (person.id, channel.id),
                )
        for channel in channels:
            recipients.get_or_create_recipient(tx, recipients.CHANNEL, channel.id)

    db.write(setup)
    channel_rows = db.read(lambda tx: tx.all("SELECT type_id AS channel_id, id AS recipient_id FROM recipients"))
    members = {
        row["channel_id"]: db.read(
            lambda tx, c=row["channel_id"]: tx.column("SELECT user_id FROM subscriptions WHERE channel_id = ?", (c,))
        )
        for row in channel_rows
    }
    batch = 20_000
    for start in range(0, message_count, batch):

        def insert(tx, start=start):
            messages, rows = [], []
            for n in range(start, min(start + batch, message_count)):
                channel = channel_rows[n % CHANNELS]
                senders = members[channel["channel_id"]]
                sender = senders[n % len(senders)]
                topic = f"topic {rng.randrange(TOPICS_PER_CHANNEL)}"
                text = f"message {n} about {topic}"
                messages.append(
                    (
                        n + 1,
                        sender,
                        channel["recipient_id"],
                        channel["channel_id"],
                        topic,
                        topic.casefold(),
                        text,
                        f"<p>{text}</p>",
                        1_700_000_000 + n,
                    )
                )
                rows.extend((user_id, n + 1, 1 if n % 10 else 0) for user_id in senders)
            tx.executemany(
                "INSERT INTO messages (id, sender_id, recipient_id, channel_id, topic, topic_key, content,"
                " rendered_content, date_sent, client) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'bench')",
                messages,
            )
            tx.executemany("INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)", rows)

        db.write(insert)
        print(f"\r  {min(start + batch, message_count):,} messages", end="", flush=True)
    print()
    db.conn.execute("ANALYZE")
    db.close()


# -- the realistic shape (issue 12) ------------------------------------------------------------

REAL_USERS, REAL_CHANNELS, REAL_CHANNELS_PER_USER, TOPICS_PER_CHANNEL_MAX = 1000, 600, 20, 300
DM_SHARE, REACTION_SHARE, EDIT_SHARE, MOVE_SHARE = 0.10, 0.05, 0.03, 0.005
EMOJI = [("+1", "1f44d"), ("heart", "2764"), ("tada", "1f389"), ("smile", "1f604"), ("octopus", "1f419")]
CLIENTS = ["website", "website", "ZulipMobile", "ZulipElectron", "ZulipTerminal"]
START = 1_700_000_000


def zipf_cumulative(n: int, s: float = 1.1) -> list[float]:
    """Cumulative weights of ranks 1..n under Zipf's law (for random.choices)."""
    total, result = 0.0, []
    for rank in range(1, n + 1):
        total += 1 / rank**s
        result.append(total)
    return result


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    """Made-up words from syllables: deterministic, FTS-friendly, no HTML to escape."""
    syllables = ["ka", "lo", "mi", "ne", "su", "ra", "to", "vi", "de", "po", "chu", "gan", "rel", "tis", "bor", "fen"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))))
    return sorted(words, key=lambda w: (len(w), w))


def sentence(rng: random.Random, words: list[str], cumulative: list[float], length: int = 150) -> str:
    text: list[str] = []
    size = -1
    while size < length:
        word = rng.choices(words, cum_weights=cumulative)[0]
        text.append(word)
        size += len(word) + 1
    return " ".join(text).capitalize() + "."


def build_real(path: str, message_count: int) -> None:
    """The realistic shape; prints the shape's figures (user_messages per message...) as it goes."""
    db = Database(path, clock=lambda: float(START))
    db.conn.execute("PRAGMA cache_size = -1000000")
    db.conn.execute("PRAGMA synchronous = OFF")
    rng = random.Random(12)

    def setup(tx):
        realm_storage.create_realm(tx, "Bench", "http://127.0.0.1:9991", "bench.example")
        people = [users.create_user(tx, f"person{n}@bench.example", f"Person {n}", None) for n in range(REAL_USERS)]
        # A third show dummy emails (user{id}@bench.example) and computed avatar URLs.
        tx.execute("UPDATE users SET email_address_visibility = 3 WHERE id % 3 = 0")
        owner = people[0]
        channels = [create_channel(tx, owner, f"channel {c}", ChannelOptions(), True) for c in range(REAL_CHANNELS)]
        popularity = zipf_cumulative(REAL_CHANNELS, 0.8)
        for person in people:
            chosen: set[int] = set()
            while len(chosen) < REAL_CHANNELS_PER_USER:
                chosen.add(rng.choices(range(REAL_CHANNELS), cum_weights=popularity)[0])
            tx.executemany(
                "INSERT INTO subscriptions (user_id, channel_id, color) VALUES (?, ?, '#76ce90')",
                [(person.id, channels[c].id) for c in sorted(chosen)],
            )
        for channel in channels:
            recipients.get_or_create_recipient(tx, recipients.CHANNEL, channel.id)
        conversations = []
        for n in range(3000):  # 2,500 pairs, 500 groups of three
            members = rng.sample(people, 2 if n < 2500 else 3)
            ids = [m.id for m in members]
            conversations.append((recipients.get_or_create_direct_message_group(tx, ids), sorted(ids)))
        return conversations

    conversations = db.write(setup)
    channel_rows = db.read(
        lambda tx: tx.all("SELECT type_id AS channel_id, id AS recipient_id FROM recipients WHERE type = 2")
    )
    members = {
        row["channel_id"]: db.read(
            lambda tx, c=row["channel_id"]: tx.column("SELECT user_id FROM subscriptions WHERE channel_id = ?", (c,))
        )
        for row in channel_rows
    }
    # Traffic per channel: Zipf over a shuffled order, independent of the channels' sizes.
    # Shuffled until a message reaches ~30 users on average (the first shape's 30M rows per 1M messages).
    traffic_order = list(channel_rows)
    traffic = zipf_cumulative(len(traffic_order), 1.0)
    shares = [b - a for a, b in zip([0.0, *traffic], traffic, strict=False)]
    expected = 0.0
    while abs(expected - 33) > 1:
        rng.shuffle(traffic_order)
        expected = sum(s * len(members[c["channel_id"]]) for s, c in zip(shares, traffic_order, strict=True))
        expected /= traffic[-1]
    topic_weights = zipf_cumulative(TOPICS_PER_CHANNEL_MAX, 1.1)
    words = vocabulary(rng)
    word_weights = zipf_cumulative(len(words), 1.0)
    user_ids = sorted({u for m in members.values() for u in m})
    # Each user has read everything older than their horizon: the newest 0-2% of messages are unread.
    horizon = {u: message_count - rng.randint(0, message_count // 50) for u in user_ids}
    rows_total = 0
    batch = 20_000
    for start in range(0, message_count, batch):

        def insert(tx, start=start):
            messages, rows, reactions = [], [], []
            for n in range(start, min(start + batch, message_count)):
                message_id, sent = n + 1, START + n * 30
                if rng.random() < DM_SHARE:
                    recipient_id, audience = rng.choice(conversations)
                    channel_id, topic, private = None, "", flags.IS_PRIVATE
                else:
                    channel = rng.choices(traffic_order, cum_weights=traffic)[0]
                    recipient_id, channel_id = channel["recipient_id"], channel["channel_id"]
                    audience, private = members[channel_id], 0
                    rank = rng.choices(range(TOPICS_PER_CHANNEL_MAX), cum_weights=topic_weights)[0]
                    # Channels whose id ends in 7 use the empty topic ("general chat") as their biggest.
                    topic = (
                        ""
                        if rank == 0 and channel_id % 10 == 7
                        else f"{words[(channel_id * 7 + rank) % 400 + 50]} {rank}"
                    )
                sender = rng.choice(audience)
                content = sentence(rng, words, word_weights)
                edited = moved = None
                history = []
                if rng.random() < EDIT_SHARE:
                    previous = sentence(rng, words, word_weights, 60)
                    edited = sent + 120
                    history.append({"user_id": sender, "timestamp": edited, "prev_content": previous,
                                    "prev_rendered_content": f"<p>{previous}</p>"})  # fmt: skip
                if channel_id is not None and rng.random() < MOVE_SHARE:
                    moved = sent + 600
                    history.insert(0, {"user_id": sender, "timestamp": moved, "prev_topic": "old " + topic,
                                       "topic": topic})  # fmt: skip
                messages.append((
                    message_id, sender, recipient_id, channel_id, topic, topic.casefold(), content,
                    f"<p>{content}</p>", sent, CLIENTS[n % len(CLIENTS)], edited, moved,
                    json.dumps(history) if history else None,
                ))  # fmt: skip
                for user_id in audience:
                    read = user_id == sender or message_id <= horizon[user_id]
                    rows.append((user_id, message_id, private | (flags.READ if read else 0)))
                if rng.random() < REACTION_SHARE:
                    for reactor in rng.sample(audience, min(len(audience), rng.randint(1, 3))):
                        name, code = rng.choice(EMOJI)
                        reactions.append((message_id, reactor, name, code, "unicode_emoji"))
            tx.executemany(
                "INSERT INTO messages (id, sender_id, recipient_id, channel_id, topic, topic_key, content,"
                " rendered_content, date_sent, client, last_edit_timestamp, last_moved_timestamp, edit_history)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                messages,
            )
            rows.sort()
            tx.executemany("INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)", rows)
            tx.executemany(
                "INSERT OR IGNORE INTO reactions (message_id, user_id, emoji_name, emoji_code, reaction_type)"
                " VALUES (?, ?, ?, ?, ?)",
                reactions,
            )
            return len(rows)

        rows_total += db.write(insert)
        done = min(start + batch, message_count)
        print(f"\r  {done:,} messages, {rows_total:,} user_messages ({rows_total / done:.1f} each)", end="", flush=True)
    print()
    db.conn.execute("ANALYZE")
    db.close()


def default_data_dir(shape: str, message_count: int) -> str:
    if shape == "old" and message_count == 1_000_000:
        return "/tmp/tornchat-bench2"  # where the first runs kept it
    return f"/tmp/tornchat-bench-{shape}-{message_count}"


def prepare_data(shape: str, message_count: int, data_dir: str | None = None) -> Settings:
    """Return the settings of a data directory holding the generated database, building it if missing."""
    settings = Settings(data_dir=data_dir or default_data_dir(shape, message_count))
    if not os.path.exists(settings.database_path):
        os.makedirs(settings.data_dir, exist_ok=True)
        print(f"building {settings.database_path} ({shape} shape, {message_count:,} messages) ...")
        started = time.perf_counter()
        (build_real if shape == "real" else build_old)(settings.database_path, message_count)
        print(f"  built in {time.perf_counter() - started:.0f} s")
    return settings


def time_calls(fn, repeat: int) -> tuple[float, float]:
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        timings.append(time.perf_counter() - started)
    timings.sort()
    return statistics.median(timings) * 1000, timings[-1] * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", choices=["real", "old"], default="real")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--data", help="data directory (default: one per shape and size under /tmp)")
    args = parser.parse_args()
    settings = prepare_data(args.shape, args.messages, args.data)
    db = Database(settings.database_path)
    count = db.read(lambda tx: tx.value("SELECT count(*) FROM messages"))
    rows = db.read(lambda tx: tx.value("SELECT count(*) FROM user_messages"))
    viewer = db.read(users.get_user_by_id, 2)
    channel_id, topic = db.read(
        lambda tx: tuple(
            tx.one(
                "SELECT m.channel_id, m.topic FROM subscriptions AS s JOIN messages AS m ON m.channel_id = s.channel_id"
                " WHERE s.user_id = ? ORDER BY m.id DESC LIMIT 1",
                (viewer.id,),
            )
        )
    )
    middle = db.read(
        lambda tx: tx.value(
            "SELECT message_id FROM user_messages WHERE user_id = ? ORDER BY message_id LIMIT 1 OFFSET"
            " (SELECT count(*) / 2 FROM user_messages WHERE user_id = ?)",
            (viewer.id, viewer.id),
        )
    )
    cases = {
        "newest 1000": GetMessages(anchor="newest", num_before=1000, num_after=0),
        "channel+topic newest 1000": GetMessages(
            anchor="newest",
            num_before=1000,
            num_after=0,
            narrow=[{"operator": "channel", "operand": channel_id}, {"operator": "topic", "operand": topic}],
        ),
        "anchor mid 500/500": GetMessages(anchor=str(middle), num_before=500, num_after=500),
    }
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()},"
        f" SQLite {__import__('sqlite3').sqlite_version}"
    )
    print(
        f"data ({args.shape} shape): {count:,} messages, {rows:,} user_messages rows,"
        f" {db.read(lambda tx: tx.value('SELECT count(*) FROM users'))} users,"
        f" {db.read(lambda tx: tx.value('SELECT count(*) FROM channels'))} channels"
    )
    print(f"storage call (get_messages incl. message objects), median / max of {args.repeat}:")
    for name, request in cases.items():
        result = db.read(get_messages, viewer, request)
        median, worst = time_calls(lambda r=request: db.read(get_messages, viewer, r), args.repeat)
        print(f"  {name:<28} {median:8.1f} ms  {worst:8.1f} ms   ({len(result['messages'])} messages)")
    db.close()
    time_http(settings, viewer, cases, args.repeat)


def time_http(settings: Settings, viewer: users.User, cases: dict[str, GetMessages], repeat: int) -> None:
    """The same fetches over HTTP (keep-alive, one client) against a server in a thread."""
    import asyncio
    import base64
    import threading
    import urllib.request

    import tornado.httpserver
    import tornado.netutil

    from tornchat.app import make_app
    from tornchat.server import Server

    ready, holder = threading.Event(), {}

    async def serve() -> None:
        server = Server(settings)
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        http = tornado.httpserver.HTTPServer(make_app(server))
        http.add_sockets(sockets)
        holder["port"], holder["stop"] = sockets[0].getsockname()[1], asyncio.Event()
        ready.set()
        await holder["stop"].wait()
        http.stop()
        server.close()

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    ready.wait(30)
    # The dummy address names the viewer by id whatever its real email looks like.
    token = base64.b64encode(f"user{viewer.id}@bench.example:{viewer.api_key}".encode()).decode()
    print(f"over HTTP (GET /api/v1/messages, JSON decoded by the client), median / max of {repeat}:")
    for name, request in cases.items():
        params = {
            k: v
            for k, v in msgspec.structs.asdict(request).items()
            if v is not None and k in ("anchor", "num_before", "num_after", "narrow")
        }
        query = "&".join(
            f"{k}={urllib.parse.quote(v if isinstance(v, str) else msgspec.json.encode(v).decode())}"
            for k, v in params.items()
        )
        url = f"http://127.0.0.1:{holder['port']}/api/v1/messages?{query}"

        def fetch(url: str = url) -> None:
            req = urllib.request.Request(url, headers={"Authorization": f"Basic {token}"})
            with urllib.request.urlopen(req) as response:
                msgspec.json.decode(response.read())

        median, worst = time_calls(fetch, repeat)
        print(f"  {name:<28} {median:8.1f} ms  {worst:8.1f} ms")


if __name__ == "__main__":
    main()
