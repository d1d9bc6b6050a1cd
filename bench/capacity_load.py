"""The load side of bench/capacity.py: simulated users on a raw keep-alive HTTP/1.1 client.

Runs in its own process(es), forked by capacity.py once the server is up: registers each user's
event queue, reports "registered" on its pipe, waits for the common start time, then runs every
user's long-poll and timed actions, and sends back its Samples (msgpack) after the window.
"""

from __future__ import annotations

import asyncio
import base64
import random
import re
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import msgspec

TOPICS = 10
KINDS = ("send", "fetch", "presence", "delivery")
STAMP = re.compile(r"capacity-t=(\d+\.\d+)")
FILLER = "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore"
# What a current web client declares (fewer legacy event forms to build).
CAPABILITIES = (
    '{"notification_settings_null": true, "bulk_message_deletion": true, "user_avatar_url_field_optional": true,'
    ' "stream_typing_notifications": true, "user_settings_object": true, "linkifier_url_template": true,'
    ' "empty_topic_name": true, "simplified_presence_events": true}'
)


@dataclass
class Person:
    id: int
    email: str
    api_key: str
    channels: list[str]


@dataclass
class Plan:
    """One step: the load's shape and timing, shared by every client process."""

    port: int
    speed: float
    warmup: float
    window: float
    grace: float
    start: float = 0.0  # time.monotonic() at which the users start (CLOCK_MONOTONIC is system-wide)

    @property
    def minute(self) -> float:
        return 60.0 / self.speed

    def measured(self, due: float) -> bool:
        return self.start + self.warmup <= due < self.start + self.warmup + self.window


# --------------------------------------------------------------------------- HTTP client


class Connection:
    """One keep-alive HTTP/1.1 connection, one request at a time."""

    def __init__(self, port: int, person: Person) -> None:
        self.port = port
        token = base64.b64encode(f"{person.email}:{person.api_key}".encode()).decode()
        self.head = f"Host: 127.0.0.1:{port}\r\nAuthorization: Basic {token}\r\n"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.lock = asyncio.Lock()

    async def request(self, method: str, path: str, params: dict[str, Any]) -> tuple[int, bytes]:
        query = urllib.parse.urlencode(params)
        if method == "GET":
            target, body = f"/api/v1{path}?{query}", b""
        else:
            target, body = f"/api/v1{path}", query.encode()
        head = f"{method} {target} HTTP/1.1\r\n{self.head}"
        if body:
            head += f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n"
        async with self.lock:
            try:
                return await self._exchange((head + "\r\n").encode() + body)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                self.close()
                raise

    async def _exchange(self, data: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, limit=2**24)
        assert self.reader is not None
        self.writer.write(data)
        status = int((await self.reader.readline()).split(b" ", 2)[1])
        length, chunked, close = 0, False, False
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"connection":
                close = b"close" in value.lower()
        if chunked:
            parts = []
            while size := int((await self.reader.readline()).split(b";")[0], 16):
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            await self.reader.readline()
            body = b"".join(parts)
        else:
            body = await self.reader.readexactly(length)
        if close:
            self.close()
        return status, body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


# --------------------------------------------------------------------------- simulated users


@dataclass
class Samples:
    """Latencies (ms) of the measured window per kind, failures per kind, and the client's loop lag."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {kind: [] for kind in KINDS})
    failures: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    unanswered: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    register: list[float] = field(default_factory=list)
    lag: list[float] = field(default_factory=list)
    events: int = 0


class User:
    def __init__(self, person: Person, plan: Plan, samples: Samples, rng: random.Random) -> None:
        self.person, self.plan, self.samples, self.rng = person, plan, samples, rng
        self.poll = Connection(plan.port, person)
        self.actions = Connection(plan.port, person)
        self.queue_id = ""
        self.last_event_id = -1
        self.presence_id = -1
        self.narrows = 0

    async def register(self) -> None:
        started = time.monotonic()
        params = {"apply_markdown": "true", "client_gravatar": "true", "slim_presence": "true",
                  "client_capabilities": CAPABILITIES, "fetch_event_types": '["presence", "message"]'}  # fmt: skip
        status, body = await self.actions.request("POST", "/register", params)
        if status != 200:
            raise RuntimeError(f"register failed: {status} {body[:200]!r}")
        state = msgspec.json.decode(body)
        self.queue_id, self.last_event_id = state["queue_id"], state["last_event_id"]
        self.presence_id = state.get("presence_last_update_id", -1)
        self.samples.register.append((time.monotonic() - started) * 1000)

    async def timed(self, kind: str, due: float, method: str, path: str, params: dict[str, Any]) -> bytes:
        measured = self.plan.measured(due)
        self.samples.unanswered[kind] += measured
        try:
            status, body = await self.actions.request(method, path, params)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            status, body = 0, b""
        self.samples.unanswered[kind] -= measured
        if measured:
            if status == 200:
                self.samples.latencies[kind].append((time.monotonic() - due) * 1000)
            else:
                self.samples.failures[kind] += 1
        return body if status == 200 else b""

    async def every(self, period: tuple[float, float], action: Any) -> None:
        """Run action(due) at a random phase, then every uniform(period) minutes."""
        due = self.plan.start + self.rng.uniform(0, period[1]) * self.plan.minute
        while True:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            asyncio.ensure_future(action(due))
            due += self.rng.uniform(*period) * self.plan.minute

    async def send(self, due: float) -> None:
        content = f"capacity-t={due:.6f} {FILLER}"[:150]
        params = {"type": "stream", "to": self.rng.choice(self.person.channels),
                  "topic": f"topic {self.rng.randrange(TOPICS)}", "content": content}  # fmt: skip
        await self.timed("send", due, "POST", "/messages", params)

    async def presence(self, due: float) -> None:
        params = {"status": "active", "slim_presence": "true", "last_update_id": str(self.presence_id)}
        body = await self.timed("presence", due, "POST", "/users/me/presence", params)
        if body:
            self.presence_id = msgspec.json.decode(body).get("presence_last_update_id", self.presence_id)

    async def fetch(self, due: float) -> None:
        channel = self.rng.choice(self.person.channels)
        self.narrows += 1
        narrow: list[dict[str, str]] = []
        if self.narrows % 3 >= 1:
            narrow.append({"operator": "channel", "operand": channel})
        if self.narrows % 3 == 2:
            narrow.append({"operator": "topic", "operand": f"topic {self.rng.randrange(TOPICS)}"})
        params = {"anchor": "newest", "num_before": "100", "num_after": "0", "client_gravatar": "true",
                  "apply_markdown": "true", "narrow": msgspec.json.encode(narrow).decode()}  # fmt: skip
        await self.timed("fetch", due, "GET", "/messages", params)

    async def long_poll(self) -> None:
        while True:
            params = {"queue_id": self.queue_id, "last_event_id": str(self.last_event_id)}
            try:
                status, body = await self.poll.request("GET", "/events", params)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                status, body = 0, b""
            now = time.monotonic()
            if status != 200:
                self.samples.failures["delivery"] += 1 if self.plan.measured(now) else 0
                await asyncio.sleep(1)
                continue
            for event in msgspec.json.decode(body)["events"]:
                self.samples.events += 1
                self.last_event_id = max(self.last_event_id, event["id"])
                if event["type"] == "message" and (stamp := STAMP.search(event["message"]["content"])):
                    due = float(stamp.group(1))
                    if self.plan.measured(due):
                        self.samples.latencies["delivery"].append((now - due) * 1000)

    def tasks(self) -> list[asyncio.Future[None]]:
        return [
            asyncio.ensure_future(self.long_poll()),
            asyncio.ensure_future(self.every((1.0, 1.0), self.send)),
            asyncio.ensure_future(self.every((1.0, 1.0), self.presence)),
            asyncio.ensure_future(self.every((1.0, 3.0), self.fetch)),
        ]


async def probe_lag(plan: Plan, samples: Samples) -> None:
    """How late this process's event loop wakes a 10 ms timer: high values mean the client is saturated."""
    while True:
        before = time.monotonic()
        await asyncio.sleep(0.01)
        if plan.measured(before):
            samples.lag.append((time.monotonic() - before - 0.01) * 1000)


async def drive(people: list[Person], plan: Plan, pipe: Any, seed: int) -> Samples:
    samples = Samples()
    rng = random.Random(seed)
    simulated = [User(person, plan, samples, random.Random(rng.random())) for person in people]
    gate = asyncio.Semaphore(8)

    async def register(user: User) -> None:
        async with gate:
            await user.register()

    await asyncio.gather(*(register(user) for user in simulated))
    pipe.send_bytes(b"registered")
    plan.start = pipe.recv()
    await asyncio.sleep(max(0.0, plan.start - time.monotonic()))
    tasks = [task for user in simulated for task in user.tasks()]
    tasks.append(asyncio.ensure_future(probe_lag(plan, samples)))
    await asyncio.sleep(plan.start + plan.warmup + plan.window - time.monotonic())
    # The load goes on while the answers to what was due inside the window arrive.
    await asyncio.sleep(plan.grace)
    for task in tasks:
        task.cancel()
    # A request due inside the window and still unanswered after the grace period counts as failed.
    for kind, count in samples.unanswered.items():
        samples.failures[kind] += count
    for user in simulated:
        user.poll.close()
        user.actions.close()
    return samples


def client_process(people: list[Person], plan: Plan, pipe: Any, seed: int) -> None:
    samples = asyncio.run(drive(people, plan, pipe, seed))
    pipe.send_bytes(msgspec.msgpack.encode(samples))
