"""Check that the floor (bench/floor_server.py) answers GET /messages byte for byte as tornchat does.

Starts `tornchat serve` and the floor on the same data directory, sends both every request of the
benchmark (bench/get_messages_vs_floor.py's 1,000 per case) and compares the response bodies;
prints the first difference of each case that has one. Exit status 1 if any differs.
Usage: python bench/floor_check.py [--shape real|old] [--messages N] [--data DIR] [--limit N]
                                   [--message-cache-mib N]   (0: tornchat without its message cache)
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from get_messages import prepare_data  # noqa: E402
from get_messages_vs_floor import fetch, make_requests, start_server, stop_server  # noqa: E402


def first_difference(a: bytes, b: bytes) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return (
        f"at byte {at} of {len(a)} / {len(b)}:\n      tornchat ...{a[max(0, at - 120) : at + 120]!r}\n"
        f"      floor    ...{b[max(0, at - 120) : at + 120]!r}"
    )


def check(
    data: str,
    requests: dict[str, list[tuple[str, str]]],
    port: int,
    work: str,
    limit: int = 0,
    cache_mib: int | None = None,
) -> bool:
    """Fetch every request from both servers (one after the other) and compare; True if all are equal.

    cache_mib: tornchat's --message-cache-mib (None: its default).
    """
    bodies: dict[str, list[tuple[int, bytes]]] = {}
    for offset, kind in enumerate(("tornchat", "floor")):
        process = start_server(kind, data, port + offset, os.path.join(work, f"{kind}.log"), cache_mib)
        try:
            for name, rows in requests.items():
                chosen = rows[:limit] if limit else rows
                bodies.setdefault(name, []).extend(fetch(port + offset, path, auth) for path, auth in chosen)
        finally:
            stop_server(process)
    same = True
    for name, rows in requests.items():
        count = len(rows[:limit] if limit else rows)
        ours, floor = bodies[name][:count], bodies[name][count:]
        differing = [i for i in range(count) if ours[i] != floor[i]]
        statuses = sorted({status for status, _ in ours + floor})
        size = sum(len(body) for _, body in ours) / count
        print(f"  check {name:<30} {count - len(differing)}/{count} identical (HTTP {statuses}, {size:,.0f} bytes avg)")
        if differing:
            same = False
            i = differing[0]
            print(f"    first: {rows[i][0]}\n    {first_difference(ours[i][1], floor[i][1])}")
    features = [b'"type":"private"', b'"emoji_code"', b'"edit_history"', b'"last_moved_timestamp"',
                b'"subject":"general chat"', b'"avatar_url":null', b'"avatar_url":"https',
                b'"avatar_url":"/user_avatars/', b'"historical"', b'"match_content"']  # fmt: skip
    tornchat = [
        body for name, rows in requests.items() for _, body in bodies[name][: len(rows[:limit] if limit else rows)]
    ]
    found = {f: sum(f in body for body in tornchat) for f in features}
    print(f"  of {len(tornchat)} responses, how many show: " + ", ".join(f"{f.decode()} {n}" for f, n in found.items()))
    return same


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", choices=["real", "old"], default="real")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--data")
    parser.add_argument("--limit", type=int, default=0, help="requests per case (default: all 1,000)")
    parser.add_argument("--port", type=int, default=9931)
    parser.add_argument("--work", default="/tmp/tornchat-vs-floor")
    parser.add_argument("--message-cache-mib", type=int, help="tornchat's encoded-message cache (0: off)")
    args = parser.parse_args()
    settings = prepare_data(args.shape, args.messages, args.data)
    os.makedirs(args.work, exist_ok=True)
    requests = make_requests(settings.database_path)
    ok = check(settings.data_dir, requests, args.port, args.work, args.limit, args.message_cache_mib)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
