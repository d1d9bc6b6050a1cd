"""Start-up time of each way to run tornchat: from exec to the first answered GET /api/v1/server_settings.

Ways: `python -m tornchat serve` from this virtualenv, the one-file executable and the pex zipapp of
`make dist` (under /usr/bin/python3, or --python). Each runs RUNS times on a data directory that
`init` prepared (a restart, the usual start), and is stopped with SIGTERM between runs. The zipapp's
first start, which unpacks its wheels into an empty PEX_ROOT, is measured apart (PEX_ROOT emptied
before each start). With --build, `make dist` runs first (its build times are printed); sizes are
those of the files in dist/.
Usage: python bench/startup.py [--build] [--runs 5] [--python /usr/bin/python3]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tornchat import __version__  # noqa: E402

TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answered(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/server_settings", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def start_once(command: list[str], data_dir: str, env: dict[str, str]) -> float:
    """Seconds from exec to the first 200 of GET /api/v1/server_settings; the server is stopped after."""
    port = free_port()
    started = time.perf_counter()
    process = subprocess.Popen(
        [*command, "serve", "--data-dir", data_dir, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not answered(port):
            if process.poll() is not None or time.perf_counter() - started > TIMEOUT:
                raise SystemExit(f"{command} did not start (exit {process.returncode})")
            time.sleep(0.005)
        return time.perf_counter() - started
    finally:
        process.send_signal(signal.SIGTERM)
        if process.wait(30) != 0:
            raise SystemExit(f"{command}: SIGTERM exit {process.returncode}")


def measure(name: str, command: list[str], runs: int, env: dict[str, str], emptied: str | None = None) -> float:
    """Median start-up of `runs` restarts; `emptied` (a cache directory) is removed before each."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = os.path.join(tmp, "data")
        init = [*command, "init", "--data-dir", data_dir, "--owner-email", "o@example.com", "--owner-password", "pw"]
        subprocess.run(init, env=env, check=True, capture_output=True, timeout=TIMEOUT)
        times = []
        for _ in range(runs):
            if emptied:
                shutil.rmtree(emptied, ignore_errors=True)
            times.append(start_once(command, data_dir, env))
    median = statistics.median(times)
    print(f"{name}: median {median * 1000:.0f} ms of {runs} ({', '.join(f'{t * 1000:.0f}' for t in times)} ms)")
    return median


def build() -> None:
    started = time.perf_counter()
    result = subprocess.run(["make", "dist"], cwd=REPO, capture_output=True, text=True, check=True)
    for line in result.stdout.splitlines():
        if re.match(r"built dist/", line):
            print(line)
    print(f"make dist: {time.perf_counter() - started:.0f} s in all")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="store_true", help="run `make dist` first")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", default="/usr/bin/python3", help="interpreter for the zipapp (3.11+)")
    args = parser.parse_args()
    if args.build:
        build()
    executable = os.path.join(REPO, "dist", f"tornchat-{__version__}-linux-{platform.machine()}")
    zipapp = os.path.join(REPO, "dist", f"tornchat-{__version__}.pyz")
    print(f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, tornchat {__version__}")
    for path in (executable, zipapp):
        print(f"{os.path.basename(path)}: {os.path.getsize(path) / 2**20:.1f} MiB")
    with tempfile.TemporaryDirectory() as home:
        # No virtualenv, no checkout on the artifacts' PATH; HOME and TMPDIR of their own.
        bare = {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home}
        measure(
            "python -m tornchat serve (virtualenv)", [sys.executable, "-m", "tornchat"], args.runs, dict(os.environ)
        )
        measure("one-file executable", [executable], args.runs, bare)
        measure("zipapp", [args.python, zipapp], args.runs, bare)
        pex_root = os.path.join(home, ".cache", "pex")
        measure("zipapp, first start (empty PEX_ROOT)", [args.python, zipapp], args.runs, bare, pex_root)


if __name__ == "__main__":
    main()
