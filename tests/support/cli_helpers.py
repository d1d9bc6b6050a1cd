"""The `tornchat` command run as a process, as an administrator runs it: its output, its zuliprc, a
server started with `serve` until it prints "Serving" (the command-line tests in tests/tornchat/)."""

from __future__ import annotations

import configparser
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

TORNCHAT = [sys.executable, "-m", "tornchat"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        TORNCHAT + list(args), capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})}
    )


def read_zuliprc(path: str) -> configparser.SectionProxy:
    config = configparser.ConfigParser()
    config.read(path)
    return config["api"]


@contextlib.contextmanager
def serving(*args: str, env: dict[str, str] | None = None) -> Iterator[list[str]]:
    """Run `tornchat serve ARGS` until it prints "Serving"; yield its output; stop it with SIGTERM.

    The server sees no TORNCHAT_* variable of the test run's own, only those in `env`.
    """
    environ = {key: value for key, value in os.environ.items() if not key.startswith("TORNCHAT_")}
    with subprocess.Popen(
        TORNCHAT + ["serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**environ, **(env or {})},
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line.startswith("Serving"):
                break
        else:
            raise AssertionError(f"server did not start: {lines} {process.stderr.read()}")
        try:
            yield lines
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(20) == 0
