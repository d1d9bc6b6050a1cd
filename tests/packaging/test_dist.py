"""The self-hosting artifacts of `make dist`, driven as an administrator would from a bare directory.

The one-file executable (PyInstaller) and the zipapp (pex) are copied to a temporary directory outside
the checkout and run with an environment holding only PATH (that directory: no virtualenv, no python),
HOME and TMPDIR: init, serve, create-user, a message sent and fetched through the `zulip` package,
SIGTERM, a restart, the message fetched again. While serving, the compiled dependencies must be mapped
from the artifact's own extraction under that directory, and nothing from the checkout or this virtualenv.

The artifacts: $TORNCHAT_DIST_EXECUTABLE and $TORNCHAT_DIST_ZIPAPP (`.ci/run` sets both after one
`make dist`), or TORNCHAT_BUILD_DIST=1 builds them here; otherwise these tests skip, and fail in CI
(TORNCHAT_REQUIRE_CLIENTS=1). The zipapp runs under /usr/bin/python3 when it is 3.11+, this test's
interpreter otherwise, and each interpreter in $TORNCHAT_DIST_PYTHONS (os.pathsep-separated).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import zulip
from PIL import Image

from tests.support.client_helpers import clients_required
from tests.support.helpers import free_port
from tests.support.image_helpers import image_bytes
from tests.support.paths import REPO
from tornchat import FEATURE_LEVEL, __version__

pytestmark = pytest.mark.dist

OWNER = "owner@example.com"
ALICE = "alice@example.com"
PASSWORD = "pw-dist-12345"
# A linkifier (google-re2, uri-template), an emoji (storage/text/emoji_names.json), a bare link (linkify-it-py).
CONTENT = "Fixed #42 :tada: see https://example.com/notes"
RENDERED = (
    'href="https://tracker.example.com/42"',
    'class="emoji emoji-1f389"',
    'href="https://example.com/notes"',
)
# The compiled modules every server process loads: msgspec, google-re2, PyNaCl (libsodium), cffi, Pillow;
# and Pillow's WebP codec, loaded once it has made a thumbnail.
COMPILED = ("msgspec/_core", "re2/_re2", "nacl/_sodium", "_cffi_backend", "PIL/_imaging")
THUMBNAILING = ("PIL/_webp",)
START_TIMEOUT = 90.0


@functools.cache
def _built() -> Path:
    """Run `make dist`'s script once for this session; return dist/."""
    subprocess.run(["bash", os.path.join(REPO, "packaging", "build.sh")], check=True, timeout=900)
    return Path(REPO) / "dist"


def _artifact(variable: str, name: str) -> Path:
    path = os.environ.get(variable)
    if not path and os.environ.get("TORNCHAT_BUILD_DIST") == "1":
        path = str(_built() / name)
    if not path:
        reason = f"no {name}: set {variable} (after `make dist`) or TORNCHAT_BUILD_DIST=1 to build it"
        if clients_required():
            pytest.fail(f"{reason} (TORNCHAT_REQUIRE_CLIENTS=1: .ci/run builds it)")
        pytest.skip(reason)
    assert os.path.isfile(path), f"{variable}={path} is not a file"
    return Path(path)


def _pythons() -> list[str]:
    """Interpreters (3.11+) to run the zipapp with."""
    wanted = [path for path in os.environ.get("TORNCHAT_DIST_PYTHONS", "").split(os.pathsep) if path]
    system = "/usr/bin/python3"
    check = [system, "-c", "import sys; sys.exit(sys.version_info < (3, 11))"]
    if os.access(system, os.X_OK) and subprocess.run(check, timeout=30).returncode == 0:
        wanted.insert(0, system)
    return list(dict.fromkeys(wanted)) or [sys.executable]


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    """A directory outside the checkout, with bin/ (the only PATH entry), home/ and tmp/."""
    assert not str(tmp_path.resolve()).startswith(REPO + os.sep)
    for name in ("bin", "home", "tmp"):
        (tmp_path / name).mkdir()
    return tmp_path


def _env(bare: Path) -> dict[str, str]:
    return {"PATH": str(bare / "bin"), "HOME": str(bare / "home"), "TMPDIR": str(bare / "tmp")}


def _run(command: list[str], bare: Path, *args: str) -> str:
    result = subprocess.run(
        [*command, *args], cwd=bare, env=_env(bare), capture_output=True, text=True, timeout=START_TIMEOUT
    )
    assert result.returncode == 0, f"{args[0]} failed: {result.stdout}{result.stderr}"
    return result.stdout


def _answered(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/api/v1/server_settings", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def _serving(command: list[str], bare: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """`serve` until GET /api/v1/server_settings answers; then SIGTERM, which must exit 0."""
    log_path = bare / f"serve-{time.monotonic_ns()}.log"
    with open(log_path, "wb") as log:
        args = [*command, "serve", "--data-dir", "data", "--port", str(port)]
        process = subprocess.Popen(args, cwd=bare, env=_env(bare), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _answered(f"http://127.0.0.1:{port}"):
            assert process.poll() is None, f"serve exited {process.returncode}: {log_path.read_text()}"
            assert time.monotonic() < deadline, f"serve never answered: {log_path.read_text()}"
            time.sleep(0.1)
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert code == 0, f"SIGTERM: exit {code}: {log_path.read_text()}"


def _tree(pid: int) -> list[int]:
    """pid and its descendants (PyInstaller's bootloader runs the server as its child)."""
    found = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        for child in children:
            found.extend(_tree(int(child)))
    return found


def _mapped_files(pid: int) -> set[str]:
    """Files the processes map (shared libraries) or hold open, and their working directories."""
    files = set()
    for process in _tree(pid):
        for line in Path(f"/proc/{process}/maps").read_text().splitlines():
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith("/"):
                files.add(fields[5])
        for fd in Path(f"/proc/{process}/fd").iterdir():
            with contextlib.suppress(FileNotFoundError):  # closed meanwhile
                files.add(os.readlink(fd))
        files.add(os.readlink(f"/proc/{process}/cwd") + os.sep)
    return files


def _assert_self_contained(pid: int, bare: Path, modules: tuple[str, ...] = COMPILED) -> None:
    files = _mapped_files(pid)
    outside = [path for path in files if path.startswith((REPO + os.sep, sys.prefix + os.sep))]
    assert not outside, f"the server loaded files of the checkout or this virtualenv: {outside}"
    for module in modules:
        where = [path for path in files if module in path]
        assert where, f"{module} is not loaded: {sorted(files)}"
        assert all(path.startswith(str(bare.resolve()) + os.sep) for path in where), where


def _fetch(client: zulip.Client, message_id: int) -> dict:
    result = client.get_messages({"anchor": message_id, "num_before": 0, "num_after": 0, "narrow": []})
    assert result["result"] == "success", result
    [message] = result["messages"]
    return message


def _assert_thumbnails(client: zulip.Client, bare: Path, site: str) -> str:
    """An animated GIF uploaded through the client gets Pillow's animated WebP thumbnail; its URL."""
    frames = [Image.new("RGB", (60, 40), (i * 80, 0, 255 - i * 80)) for i in range(3)]
    frames[0].save(bare / "dance.gif", save_all=True, append_images=frames[1:], duration=90, loop=0)
    with open(bare / "dance.gif", "rb") as file:
        uploaded = client.upload_file(file)
    assert uploaded["result"] == "success", uploaded
    url = uploaded["url"].replace("/user_uploads/", "/user_uploads/thumbnail/", 1) + "/840x560-anim.webp"
    response = requests.get(site + url, auth=(client.email, client.api_key), timeout=30)
    assert response.status_code == 200 and response.headers["Content-Type"] == "image/webp", response.text
    with Image.open(io.BytesIO(response.content)) as thumbnail:
        assert (thumbnail.format, thumbnail.n_frames, thumbnail.size) == ("WEBP", 3, (60, 40))
    return url


def _assert_web_client(site: str) -> None:
    """The web client is inside the artifact: / names the hashed app.js, served as the checkout's file."""
    with urllib.request.urlopen(site + "/", timeout=10) as response:
        index = response.read().decode()
    match = re.search(r'src="(/static/[0-9a-f]{16}/)app\.js"', index)
    assert match, index
    for name in ("app.js", "style.css", "admin.js"):
        with urllib.request.urlopen(site + match[1] + name, timeout=10) as response:
            assert response.read() == (Path(REPO) / "tornchat" / "web" / "static" / name).read_bytes(), name


def _png_size(site: str, url: str) -> tuple[int, int]:
    """The width and height of the PNG at a URL the server handed out (read from its IHDR chunk)."""
    with urllib.request.urlopen(site + url, timeout=10) as response:
        data = response.read()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR", data[:32]
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _assert_avatars(alice: zulip.Client, site: str, bare: Path) -> str:
    """Pillow inside the artifact: a JPEG avatar decoded and resized, a default avatar drawn; the avatar's URL."""
    jpeg = bare / "me.jpg"
    jpeg.write_bytes(image_bytes(Image.new("RGB", (320, 200), (30, 120, 200)), "JPEG"))
    with open(jpeg, "rb") as handle:
        result = alice.call_endpoint("users/me/avatar", method="POST", files=[handle])
    assert result["result"] == "success", result
    assert _png_size(site, result["avatar_url"]) == (100, 100)
    assert _png_size(site, result["avatar_url"].replace(".png?", "-medium.png?")) == (500, 500)
    assert _png_size(site, "/user_avatars/default/1.png") == (100, 100)
    return result["avatar_url"]


def _drive(command: list[str], bare: Path) -> None:
    """The administrator's path: init, serve, create-user, a message, SIGTERM, restart, fetch again."""
    version = _run(command, bare, "--version")
    assert version.strip() == f"tornchat {__version__} (feature level {FEATURE_LEVEL})"
    port = free_port()
    site = f"http://127.0.0.1:{port}"
    _run(command, bare, "init", "--data-dir", "data", "--owner-email", OWNER, "--owner-password", PASSWORD)
    with _serving(command, bare, port) as server:
        _assert_self_contained(server.pid, bare)
        user = ["--email", ALICE, "--full-name", "Alice", "--password", PASSWORD, "--zuliprc", "alice.zuliprc"]
        key = _run(command, bare, "create-user", "--data-dir", "data", *user).splitlines()[-1]
        owner = zulip.Client(config_file=str(bare / "data" / "zuliprc"), site=site)
        alice = zulip.Client(config_file=str(bare / "alice.zuliprc"), site=site)
        assert alice.api_key == key
        linkifier = {"pattern": r"#(?P<id>[0-9]+)", "url_template": "https://tracker.example.com/{id}"}
        added = owner.call_endpoint("realm/filters", method="POST", request=linkifier)
        assert added["result"] == "success", added
        thumbnail_url = _assert_thumbnails(alice, bare, site)
        _assert_self_contained(server.pid, bare, THUMBNAILING)
        gif = thumbnail_url.removeprefix("/user_uploads/thumbnail/").removesuffix("/840x560-anim.webp")
        sent = alice.send_message(
            {"type": "private", "to": [OWNER], "content": f"{CONTENT} [dance.gif](/user_uploads/{gif})"}
        )
        assert sent["result"] == "success", sent
        message = _fetch(owner, sent["id"])
        assert message["sender_email"] == ALICE
        assert all(part in message["content"] for part in (*RENDERED, thumbnail_url)), message["content"]
        _assert_web_client(site)
        avatar = _assert_avatars(alice, site, bare)
        message = _fetch(owner, sent["id"])  # the sender's new avatar, after the restart too
        assert message["avatar_url"] == avatar
    with _serving(command, bare, port):
        assert _fetch(owner, sent["id"]) == message


def test_version_names_the_feature_level():
    result = subprocess.run([sys.executable, "-m", "tornchat", "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"tornchat {__version__} (feature level {FEATURE_LEVEL})\n"
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__) and FEATURE_LEVEL > 0


def test_single_executable(bare):
    executable = _artifact("TORNCHAT_DIST_EXECUTABLE", f"tornchat-{__version__}-linux-{platform.machine()}")
    copy = bare / "bin" / executable.name
    shutil.copy2(executable, copy)
    _drive([str(copy)], bare)


@pytest.mark.parametrize("python", _pythons())
def test_zipapp(bare, python):
    zipapp = _artifact("TORNCHAT_DIST_ZIPAPP", f"tornchat-{__version__}.pyz")
    copy = bare / "bin" / zipapp.name
    shutil.copy2(zipapp, copy)
    _drive([python, str(copy)], bare)
