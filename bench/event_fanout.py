"""Event fan-out: N parked long-polls on one channel, one message sent, time until each poll is answered.

The server runs in a child process (`--serve`), the client here, so the client's parsing does
not share the server's CPU accounting (both share the machine). The client is plain asyncio
over raw sockets: one keep-alive connection per poll, each answer read to its last byte.

The floor, measured in the same run, alternately with tornchat (A B A B ...): a minimal Tornado
server (`--floor`) that parks the same N polls and, on one POST, answers every one of them with
one pre-encoded constant body as long as tornchat's answer. It is what Tornado and the loopback
cost to wake N requests and write N responses; everything above it is tornchat's work (the
send itself, publishing, encoding, per-request costs).

Also measures the memory of idle event queues (`--idle-queues`, in the server process).
Usage: python bench/event_fanout.py [--polls 1000] [--rounds 3] [--formats 1] [--port 9510] [--gc-stats]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

# Queue formats cycled through the polls with --formats K: (apply_markdown, client_gravatar).
FORMATS = [(False, True), (True, True), (True, False), (False, False)]


# -- the servers (child processes) --------------------------------------------------------------


def serve_tornchat(port: int, polls: int, idle_queues: int) -> None:
    """Bootstrap a fresh tornchat with `polls` users in one channel; answer the parent's commands on stdin."""
    import tornado.netutil

    from storage.channels.channel_creation import ChannelOptions, create_channel
    from storage.membership import subscriptions
    from storage.org import users
    from tornchat.app import make_http_server
    from tornchat.bootstrap import bootstrap
    from tornchat.server import Server
    from tornchat.settings import Settings

    directory = tempfile.mkdtemp(prefix="h4-fanout-", dir=_tmp())
    # Logging as `tornchat serve` sets it up (an access line per request), into a file here.
    log_file = open(os.path.join(directory, "server.log"), "a")  # noqa: SIM115 - open for the process's life
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=log_file)
    settings = Settings(data_dir=os.path.join(directory, "data"), site=f"http://127.0.0.1:{port}")
    owner = bootstrap(settings, "owner@example.com", "bench password")

    async def main() -> None:
        server = Server(settings)
        http = make_http_server(server)
        http.add_sockets(tornado.netutil.bind_sockets(port, "127.0.0.1"))

        def setup(tx: Any) -> list[users.User]:
            people = [users.create_user(tx, f"fan{n}@example.com", f"Fan {n}", None) for n in range(polls)]
            channel = create_channel(tx, owner, "fanout", ChannelOptions(), True)
            subscriptions.subscribe(tx, [channel], [owner.id] + [p.id for p in people])
            return people

        people = server.db.write(setup)
        import gc

        from tornchat.tuning import tune_garbage_collector

        tune_garbage_collector()  # as `tornchat serve` does once started
        gc.callbacks.append(_gc_timer)  # the time spent in garbage collection (command "gc")
        credentials = [[p.delivery_email, p.api_key] for p in [owner, *people]]
        print(json.dumps({"credentials": credentials}), flush=True)
        await _commands(lambda command: _tornchat_command(server, command, idle_queues))
        http.stop()
        server.close()

    asyncio.run(main())
    log_file.close()
    shutil.rmtree(directory, ignore_errors=True)  # a fresh database each run: nothing to keep


GC_TIME = [0.0, 0, 0.0]  # seconds in collections, collections, start of the current one
GC_STATS = "--gc-stats" in sys.argv


GC_LOG: list[str] = []


def _gc_timer(phase: str, info: dict) -> None:
    if phase == "start":
        GC_TIME[2] = time.perf_counter()
    else:
        spent = time.perf_counter() - GC_TIME[2]
        GC_TIME[0] += spent
        GC_TIME[1] += 1
        GC_LOG.append(f"gen{info['generation']} {spent * 1000:.1f}ms")


def _tornchat_command(server: Any, command: str, idle_queues: int) -> str:
    if command == "gc":
        collections = ", ".join(GC_LOG[-5:])
        GC_LOG.clear()
        return f"{GC_TIME[0] * 1000:.1f} ms in {GC_TIME[1]} collections (last: {collections})"
    if command == "parked":
        return str(sum(q.parked for q in server.queues.queues.values()))
    if command == "cpu":
        return str(time.process_time())
    if command == "memory":
        return str(_idle_queue_memory(server, idle_queues))
    if command.startswith("profile"):  # profile (start) / profile PATH (stop and write)
        import cProfile

        _, _, path = command.partition(" ")
        if not path:
            server.bench_profile = cProfile.Profile()
            server.bench_profile.enable()
        else:
            server.bench_profile.disable()
            server.bench_profile.dump_stats(path)
        return "ok"
    raise ValueError(command)


def _idle_queue_memory(server: Any, count: int) -> float:
    import tracemalloc

    user_id = next(iter(server.queues.by_user))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(count):
        server.queues.create(user_id, event_types={"message"})
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return used / count


def serve_floor(port: int) -> None:
    """The floor: parked GETs answered together with one constant body when a POST names it."""
    import tornado.netutil
    import tornado.web
    from tornado.httpserver import HTTPServer

    waiters: list[asyncio.Future[bytes]] = []

    class Poll(tornado.web.RequestHandler):
        def compute_etag(self) -> None:
            return None

        async def get(self) -> None:
            future = asyncio.get_running_loop().create_future()
            waiters.append(future)
            self.set_header("Content-Type", "application/json")
            self.finish(await future)

    class Send(tornado.web.RequestHandler):
        def post(self) -> None:
            body = self.request.body
            parked, waiters[:] = list(waiters), []
            for future in parked:
                future.set_result(body)
            self.finish(b'{"result":"success","msg":""}\n')

    async def main() -> None:
        app = tornado.web.Application([(r"/events", Poll), (r"/messages", Send)], log_function=lambda handler: None)
        http = HTTPServer(app)
        http.add_sockets(tornado.netutil.bind_sockets(port, "127.0.0.1"))
        print(json.dumps({"credentials": []}), flush=True)
        await _commands(lambda c: str(time.process_time() if c == "cpu" else sum(not w.done() for w in waiters)))
        http.stop()

    asyncio.run(main())


async def _commands(answer: Any) -> None:
    """Answer one line per command line from stdin until it closes."""
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line or line.strip() == "quit":
            return
        print(answer(line.strip()), flush=True)


def _tmp() -> str:
    path = "/tmp/h4"
    os.makedirs(path, exist_ok=True)
    return path


# -- the client (this process) ------------------------------------------------------------------


class Child:
    """A server child process and its command pipe."""

    def __init__(self, mode: str, args: argparse.Namespace) -> None:
        command = [sys.executable, __file__, mode, "--port", str(args.port), "--polls", str(args.polls)]
        command += ["--idle-queues", str(args.idle_queues)]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.info = json.loads(self.process.stdout.readline())  # type: ignore[union-attr]

    def ask(self, command: str) -> str:
        self.process.stdin.write(command + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        return self.process.stdout.readline().strip()  # type: ignore[union-attr]

    def stop(self) -> None:
        self.process.stdin.close()  # type: ignore[union-attr]
        self.process.wait(30)


def auth_header(email: str, api_key: str) -> str:
    return "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode()


class Connection:
    """One keep-alive HTTP/1.1 connection with the least parsing that reads a whole answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> None:
        self.reader, self.writer, self.port = reader, writer, port

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer, port)

    def send(self, method: str, target: str, authorization: str = "", body: bytes = b"") -> None:
        head = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
        if authorization:
            head += f"Authorization: {authorization}\r\n"
        if body:
            head += f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + body)

    async def answer(self) -> bytes:
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = head.split(b" ", 2)[1]
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        body = await self.reader.readexactly(length)
        if status != b"200":
            raise RuntimeError(f"HTTP {status.decode()}: {body[:300]!r}")
        return body

    async def request(self, method: str, target: str, authorization: str = "", body: bytes = b"") -> bytes:
        self.send(method, target, authorization, body)
        return await self.answer()


async def register_all(port: int, credentials: list[list[str]], formats: int) -> list[dict[str, Any]]:
    """Register one queue per user (each on its own connection, kept for its polls)."""
    polls = []
    for index, (email, api_key) in enumerate(credentials):
        markdown, gravatar = FORMATS[index % formats]
        form = {"event_types": '["message"]', "apply_markdown": json.dumps(markdown)}
        form["client_gravatar"] = json.dumps(gravatar)
        connection = await Connection.open(port)
        authorization = auth_header(email, api_key)
        body = urllib.parse.urlencode(form).encode()
        state = json.loads(await connection.request("POST", "/api/v1/register", authorization, body))
        polls.append({"connection": connection, "auth": authorization, "queue_id": state["queue_id"], "last": -1})
    return polls


async def wait_parked(child: Child, count: int) -> None:
    deadline = time.monotonic() + 60
    while int(child.ask("parked")) < count:
        if time.monotonic() > deadline:
            raise RuntimeError("polls did not park")
        await asyncio.sleep(0.02)


async def tornchat_round(
    child: Child, polls: list[dict[str, Any]], sender: Connection, sender_auth: str, profile: str | None = None
) -> Any:
    """Park every poll, send one message, return (latencies in ms, one answer); profile from send to last answer."""
    arrived: list[float] = []
    answers: list[bytes] = []

    async def poll(item: dict[str, Any]) -> None:
        query = urllib.parse.urlencode({"queue_id": item["queue_id"], "last_event_id": item["last"]})
        answer = await item["connection"].request("GET", f"/api/v1/events?{query}", item["auth"])
        arrived.append(time.perf_counter())
        answers.append(answer)
        item["last"] += 1

    tasks = [asyncio.ensure_future(poll(item)) for item in polls]
    await wait_parked(child, len(polls))
    spy = None
    if profile and profile.endswith(".spy"):  # sampled by py-spy (raw collapsed stacks), less distorting
        spy = subprocess.Popen(
            ["py-spy", "record", "-p", str(child.process.pid), "-r", "2000", "-f", "raw", "-o", profile]
        )
        await asyncio.sleep(1.0)  # attached
    elif profile:
        child.ask("profile")
    body = urllib.parse.urlencode({"type": "stream", "to": "fanout", "topic": "t", "content": "hello " * 20})
    gc_before = child.ask("gc") if GC_STATS else ""
    cpu, client_cpu = float(child.ask("cpu")), time.process_time()
    sent = time.perf_counter()
    await sender.request("POST", "/api/v1/messages", sender_auth, body.encode())
    acknowledged = time.perf_counter()
    await asyncio.gather(*tasks)
    cpu = float(child.ask("cpu")) - cpu
    if gc_before:
        print(f"garbage collection: {gc_before} before the round, {child.ask('gc')} after", file=sys.stderr)
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(30)
    elif profile:
        child.ask(f"profile {profile}")
    for answer in answers:
        if b'"type":"message"' not in answer:
            raise RuntimeError(f"not a message event: {answer[:300]!r}")
    client_cpu = time.process_time() - client_cpu
    measured = {**summary(sorted((t - sent) * 1000 for t in arrived)), "cpu": cpu * 1000, "client": client_cpu * 1000}
    return {**measured, "send": (acknowledged - sent) * 1000}, answers[0]


async def floor_round(child: Child, connections: list[Connection], sender: Connection, body: bytes) -> Any:
    arrived: list[float] = []

    async def poll(connection: Connection) -> None:
        answer = await connection.request("GET", "/events")
        arrived.append(time.perf_counter())
        assert len(answer) == len(body)

    tasks = [asyncio.ensure_future(poll(c)) for c in connections]
    await wait_parked(child, len(connections))
    cpu, client_cpu = float(child.ask("cpu")), time.process_time()
    sent = time.perf_counter()
    await sender.request("POST", "/messages", body=body)
    acknowledged = time.perf_counter()
    await asyncio.gather(*tasks)
    client_cpu = time.process_time() - client_cpu
    cpu = float(child.ask("cpu")) - cpu
    return {
        **summary(sorted((t - sent) * 1000 for t in arrived)),
        "cpu": cpu * 1000,
        "send": (acknowledged - sent) * 1000,
        "client": client_cpu * 1000,
    }


def summary(latencies: list[float]) -> dict[str, float]:
    p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
    return {"first": latencies[0], "p50": statistics.median(latencies), "p99": p99, "last": latencies[-1]}


async def run(args: argparse.Namespace) -> None:
    results: dict[str, list[dict[str, float]]] = {"tornchat": [], "floor": []}
    tornchat = Child("--serve", args)
    credentials = tornchat.info["credentials"]
    started = time.perf_counter()
    polls = await register_all(args.port, credentials[1:], args.formats)
    register_ms = (time.perf_counter() - started) * 1000 / len(polls)
    sender = await Connection.open(args.port)
    sender_auth = auth_header(*credentials[0])
    answer = b""
    await tornchat_round(tornchat, polls, sender, sender_auth)  # warm-up, not counted
    for n in range(args.rounds):
        profile = args.profile if n == 0 else None
        measured, answer = await tornchat_round(tornchat, polls, sender, sender_auth, profile)
        results["tornchat"].append(measured)
        # The floor in its own process on the port tornchat leaves idle meanwhile (tornchat's polls stay open).
        floor_args = argparse.Namespace(**{**vars(args), "port": args.port + 1})
        floor = Child("--floor", floor_args)
        connections = [await Connection.open(args.port + 1) for _ in polls]
        floor_sender = await Connection.open(args.port + 1)
        await floor_round(floor, connections, floor_sender, answer)  # warm-up, as tornchat had one
        results["floor"].append(await floor_round(floor, connections, floor_sender, answer))
        for connection in [*connections, floor_sender]:
            connection.writer.close()
        floor.stop()
    memory = float(tornchat.ask("memory")) if args.idle_queues else 0.0
    for item in [*polls]:
        item["connection"].writer.close()
    sender.writer.close()
    tornchat.stop()
    report(args, results, register_ms, memory, len(answer))


def report(args: argparse.Namespace, results: dict[str, Any], register_ms: float, memory: float, size: int) -> None:
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print(f"{args.polls} parked long-polls on one channel, {args.formats} queue format(s), answer {size} bytes;")
    print("one message sent; ms from the send until the sender's answer (send), the first and each poll's answer")
    print("is read (client in its own process); the server's and the client's CPU time meanwhile (ms);")
    print("ratio = tornchat / floor")
    columns = ("send", "first", "p50", "p99", "last", "cpu", "client")
    heads = "  ".join(f"{c:>6}" for c in columns)
    print(f"{'round':>5}  tornchat: {heads}   floor: {heads}")
    for n, (ours, floor) in enumerate(zip(results["tornchat"], results["floor"], strict=True), 1):
        print(
            f"{n:>5}  {'':9} {'  '.join(f'{ours[c]:6.1f}' for c in columns)}   {'':6} "
            f"{'  '.join(f'{floor[c]:6.1f}' for c in columns)}"
        )
    for column in ("last", "cpu"):
        ours = statistics.median(r[column] for r in results["tornchat"])
        floor = statistics.median(r[column] for r in results["floor"])
        print(f"median {column}: tornchat {ours:.1f} ms, floor {floor:.1f} ms, ratio {ours / floor:.2f}x")
    print(f"POST /register (event_types=[message]): {register_ms:.1f} ms per call, sequential")
    if memory:
        print(f"idle queue memory: {memory:,.0f} bytes per queue ({args.idle_queues:,} queues, tracemalloc)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", action="store_true", help="(internal) run the tornchat child")
    parser.add_argument("--floor", action="store_true", help="(internal) run the floor child")
    parser.add_argument("--polls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--formats", type=int, default=1, choices=range(1, len(FORMATS) + 1))
    parser.add_argument("--idle-queues", type=int, default=10_000)
    parser.add_argument("--port", type=int, default=9510)
    parser.add_argument(
        "--profile",
        help="profile tornchat from the send to the last answer of the first round into this file: "
        "cProfile, or py-spy's raw collapsed stacks if it ends in .spy",
    )
    parser.add_argument("--gc-stats", action="store_true", help="print the server's garbage collection per round")
    args = parser.parse_args()
    if args.serve:
        serve_tornchat(args.port, args.polls, args.idle_queues)
    elif args.floor:
        serve_floor(args.port)
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
