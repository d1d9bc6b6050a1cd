"""The command-line contract: init, create-user and serve (with its first-start bootstrap)."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
import time

import pytest
import zulip

from tests.support.cli_helpers import read_zuliprc, run, serving
from tests.support.helpers import free_port


def test_init_writes_zuliprc(initialised):
    api = read_zuliprc(os.path.join(initialised, "zuliprc"))
    assert api["email"] == "boss@example.com"
    assert api["site"] == "http://chat.example.com"
    assert len(api["key"]) == 32
    assert os.stat(os.path.join(initialised, "zuliprc")).st_mode & 0o077 == 0


def test_init_twice_fails_with_one_line(initialised):
    result = run("init", "--data-dir", initialised, "--owner-email", "x@example.com", "--owner-password", "pw-12345")
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0
    assert "already holds" in result.stderr


def test_init_requires_its_flags(tmp_path):
    result = run("init", "--data-dir", str(tmp_path))
    assert result.returncode != 0
    assert "--owner-email" in result.stderr


def test_create_user_prints_api_key_last(initialised):
    result = run(
        "create-user",
        "--data-dir",
        initialised,
        "--email",
        "al@example.com",
        "--full-name",
        "Al",
        "--password",
        "pw-12345",
        "--role",
        "admin",
        "--can-create-users",
    )
    assert result.returncode == 0, result.stderr
    key = result.stdout.strip().splitlines()[-1]
    assert len(key) == 32 and key.isalnum()


def test_create_user_errors_are_one_line(initialised, tmp_path):
    args = ["--email", "dup@example.com", "--full-name", "Dup", "--password", "pw-12345"]
    assert run("create-user", "--data-dir", initialised, *args).returncode == 0
    duplicate = run("create-user", "--data-dir", initialised, *args)
    assert duplicate.returncode != 0
    assert duplicate.stderr.strip() == "tornchat: Email is already in use."
    missing = run("create-user", "--data-dir", str(tmp_path / "empty"), *args)
    assert missing.returncode != 0
    assert "run `tornchat init` first" in missing.stderr
    bad_role = run("create-user", "--data-dir", initialised, *args, "--role", "king")
    assert bad_role.returncode != 0


def test_serve_bootstraps_an_empty_directory(tmp_path):
    data_dir = str(tmp_path / "fresh")
    port = free_port()
    zuliprc = os.path.join(data_dir, "zuliprc")
    with serving("--data-dir", data_dir, "--port", str(port)) as lines:
        assert any(os.path.abspath(zuliprc) in line for line in lines)
        assert read_zuliprc(zuliprc)["site"] == f"http://127.0.0.1:{port}"
        profile = zulip.Client(config_file=zuliprc).get_profile()
        assert profile["result"] == "success"
        assert profile["is_owner"] is True
    # A second start reuses the organization and its credentials.
    with serving("--data-dir", data_dir, "--port", str(port)) as lines:
        assert not any(line.startswith("Created") for line in lines)
        assert zulip.Client(config_file=zuliprc).get_profile()["result"] == "success"


def test_serve_on_a_busy_port_fails_with_one_line(initialised):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        started = time.monotonic()
        result = run("serve", "--data-dir", initialised, "--port", str(port))
    assert time.monotonic() - started < 60
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1].startswith("tornchat: cannot listen")


def test_environment_settings(tmp_path):
    data_dir = str(tmp_path / "env")
    result = run(
        "init",
        "--owner-email",
        "e@example.com",
        "--owner-password",
        "pw-12345",
        "--data-dir",
        data_dir,
        env={"TORNCHAT_REALM_NAME": "Env Org", "TORNCHAT_EMAIL_HOST": "hidden.example"},
    )
    assert result.returncode == 0, result.stderr
    port = free_port()
    with serving("--data-dir", data_dir, "--port", str(port)):
        client = zulip.Client(config_file=os.path.join(data_dir, "zuliprc"), site=f"http://127.0.0.1:{port}")
        assert client.get_server_settings()["realm_name"] == "Env Org"
        own = client.get_profile()
        assert own["email"] == "e@example.com"


def test_invalid_port_setting_is_one_line(tmp_path):
    result = run("serve", "--data-dir", str(tmp_path / "x"), env={"TORNCHAT_PORT": "not-a-port"})
    assert result.returncode != 0
    assert result.stderr.strip().startswith("tornchat: invalid setting")


def test_the_server_garbage_collector_freezes_the_start_and_still_collects_cycles():
    """tune_garbage_collector (run by `serve` once started), in a process of its own."""
    script = """
import gc, weakref
from tornchat.tuning import GC_YOUNG_THRESHOLD, tune_garbage_collector
tune_garbage_collector()
assert gc.get_threshold()[0] == GC_YOUNG_THRESHOLD and gc.get_freeze_count() > 0
class Node:
    pass
first = Node()
first.me = first
alive = weakref.ref(first)
del first
for _ in range(2 * GC_YOUNG_THRESHOLD):  # cyclic garbage only: reference counting frees none of it
    node = Node()
    node.me = node
del node
print("collected" if alive() is None else "kept")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "collected"


MALLOC_PROBE = """
import ctypes, sys
class MallInfo2(ctypes.Structure):
    names = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
    _fields_ = [(name, ctypes.c_size_t) for name in names.split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "tuned":
    from tornchat.tuning import tune_malloc
    assert tune_malloc()
mapped = libc.mallinfo2().hblkhd
block = bytearray(4 << 20)  # a body of a few thousand messages
print("mapped" if libc.mallinfo2().hblkhd - mapped >= 4 << 20 else "heap")
"""


@pytest.mark.skipif(sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_tuned_malloc_serves_large_buffers_from_the_heap():
    """tune_malloc (run by `serve`): a 4 MB buffer comes from the heap, where glibc alone maps it from the kernel."""
    found = {}
    for mode in ("default", "tuned"):
        done = subprocess.run([sys.executable, "-c", MALLOC_PROBE, mode], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        found[mode] = done.stdout.strip()
    assert found == {"default": "mapped", "tuned": "heap"}


def test_tune_malloc_leaves_other_c_libraries_alone(monkeypatch):
    """Without glibc (musl, macOS) there is no mallopt to call: nothing is loaded, the answer is False."""
    from tornchat import tuning

    def no_library(*args):
        raise AssertionError("no C library may be loaded")

    monkeypatch.setattr(tuning.ctypes, "CDLL", no_library)
    monkeypatch.setattr(tuning.platform, "libc_ver", lambda: ("musl", "1.2"))
    assert tuning.tune_malloc() is False
    monkeypatch.setattr(tuning.platform, "libc_ver", lambda: ("glibc", "2.36"))
    monkeypatch.setattr(tuning.sys, "platform", "darwin")
    assert tuning.tune_malloc() is False
