"""POST /register: what one call costs in the server, section by section, on realistic data.

The data is bench/get_messages.py's realistic shape (1,000 users each in 20 of 600 channels,
3,000 direct-message conversations, Zipf topics, 0-2% of each user's messages unread) with
--messages messages (default 100,000), built once under /tmp/h4/. The server's work is timed
in this process, as RegisterHandler does it: the state read in one transaction, the queue
created, the answer encoded. The floor, measured in the same run, is the encoding alone of the
same answer (msgspec): what any server must spend to send that state.
Sections: each event type's state fetched alone, less the realm limits every call includes.
Usage: python bench/register_cost.py [--messages 100000] [--repeat 20] [--users 5] [--profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import msgspec  # noqa: E402

from bench.get_messages import prepare_data  # noqa: E402
from storage.org import users  # noqa: E402
from storage.register.register import fetch_initial_state  # noqa: E402
from tornchat.server import Server  # noqa: E402

_encode = msgspec.json.Encoder().encode

# The event types whose state a full registration (no fetch_event_types) returns, by section.
SECTIONS = [
    "realm", "realm_user", "realm_bot", "recent_private_conversations", "starred_messages", "user_settings",
    "realm_user_settings_defaults", "custom_profile_fields", "default_streams", "stream", "message",
    "update_message_flags", "subscription", "realm_user_groups", "realm_linkifiers", "scheduled_messages", "drafts",
    "saved_snippets", "device", "presence", "realm_emoji", "user_topic", "muted_topics", "alert_words",
]  # fmt: skip


def options(server: Server, include_subscribers: str) -> dict[str, Any]:
    """What RegisterHandler passes for a web-like client (client_gravatar, all capabilities)."""
    return {
        "server_generation": server.generation, "client_gravatar": True, "include_subscribers": include_subscribers,
        "empty_topic_name": True, "linkifier_url_template": True, "user_settings_object": True, "push_enabled": False,
        "slim_presence": True, "presence_last_update_id": None, "presence_history_limit_days": None,
        "max_file_upload_size_mib": server.settings.max_file_upload_size_mib,
    }  # fmt: skip


def register(server: Server, user: users.User, wanted: set[str] | None, opts: dict[str, Any]) -> bytes:
    """One registration's server work: state, queue, encoded answer (the queue is removed again)."""
    state = server.db.read(fetch_initial_state, user, server.realm, wanted, opts)
    queue = server.queues.create(user.id)
    state.update(queue_id=queue.id, last_event_id=-1)
    server.queues.remove(queue.id)
    return _encode({"result": "success", "msg": "", **state})


def timed(fn: Any, repeat: int) -> float:
    """Median ms of `repeat` calls."""
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--users", type=int, default=5, help="users measured (ids spread over the realm)")
    parser.add_argument("--include-subscribers", default="false", choices=["false", "true", "partial"])
    parser.add_argument("--profile", help="write a cProfile of the full registrations to this file")
    args = parser.parse_args()
    data_dir = f"/tmp/h4/register-real-{args.messages}"
    settings = prepare_data("real", args.messages, data_dir)
    server = Server(settings)
    opts = options(server, args.include_subscribers)
    everyone = server.db.read(lambda tx: tx.column("SELECT id FROM users WHERE is_active ORDER BY id"))
    step = max(1, len(everyone) // args.users)
    people = [server.db.read(users.get_user_by_id, user_id) for user_id in everyone[::step][: args.users]]
    for person in people:  # warm the page cache and any in-memory directory
        register(server, person, None, opts)
    profile = cProfile.Profile() if args.profile else None
    full, encode, sizes = [], [], []
    for person in people:
        if profile:
            profile.enable()
        full.append(timed(lambda p=person: register(server, p, None, opts), args.repeat))
        if profile:
            profile.disable()
        answer = msgspec.json.decode(register(server, person, None, opts))
        sizes.append(len(_encode(answer)))
        encode.append(timed(lambda a=answer: _encode(a), args.repeat))
    base = statistics.median(timed(lambda p=p: register(server, p, set(), opts), args.repeat) for p in people)
    sections = {}
    for kind in SECTIONS:
        cost = statistics.median(timed(lambda p=p, k=kind: register(server, p, {k}, opts), args.repeat) for p in people)
        sections[kind] = cost - base
    if profile:
        profile.dump_stats(args.profile)
    server.close()
    report(args, statistics.median(full), statistics.median(encode), statistics.median(sizes), base, sections)


def report(args: Any, full: float, encode: float, size: int, base: float, sections: dict[str, float]) -> None:
    load = os.getloadavg()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}")
    print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"realistic shape, {args.messages:,} messages; {args.users} users x {args.repeat} calls each (medians)")
    print(f"include_subscribers={args.include_subscribers}; answer {size:,} bytes")
    print(f"POST /register (all state): {full:.2f} ms; floor (encoding the answer): {encode:.2f} ms;")
    print(f"  ratio {full / encode:.1f}x; realm limits alone (every call): {base:.2f} ms")
    print("by section (ms, fetched alone, less the realm limits):")
    for kind, cost in sorted(sections.items(), key=lambda item: -item[1]):
        print(f"  {kind:30} {cost:6.2f}")
    print(f"  {'sum':30} {sum(sections.values()):6.2f}")


if __name__ == "__main__":
    main()
