"""A newcomer's second account and the first start's owner password (`create-user --zuliprc`, `serve`)."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import requests
import zulip

from tests.support.cli_helpers import TORNCHAT, read_zuliprc, run, serving
from tests.support.helpers import free_port

USER = ["--email", "al@example.com", "--full-name", "Al", "--password", "pw-12345"]


def test_create_user_writes_a_zuliprc_readable_by_its_owner_only(initialised, tmp_path):
    path = str(tmp_path / "al.zuliprc")
    result = run("create-user", "--data-dir", initialised, *USER, "--zuliprc", path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    key = lines[-1]
    assert lines[-2] == f"API credentials written to {path}"
    api = read_zuliprc(path)
    assert dict(api) == {"email": "al@example.com", "key": key, "site": "http://chat.example.com"}
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_the_written_zuliprc_works_against_the_server(initialised, tmp_path):
    path = str(tmp_path / "al.zuliprc")
    assert run("create-user", "--data-dir", initialised, *USER, "--zuliprc", path).returncode == 0
    port = free_port()
    with serving("--data-dir", initialised, "--port", str(port)):
        profile = zulip.Client(config_file=path, site=f"http://127.0.0.1:{port}").get_profile()
    assert (profile["result"], profile["full_name"], profile["is_admin"]) == ("success", "Al", False)


def test_an_existing_zuliprc_is_replaced_and_made_private(initialised, tmp_path):
    path = tmp_path / "old.zuliprc"
    path.write_text("[api]\nemail = someone@else\n")
    os.chmod(path, 0o644)
    assert run("create-user", "--data-dir", initialised, *USER, "--zuliprc", str(path)).returncode == 0
    assert read_zuliprc(str(path))["email"] == "al@example.com"
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_a_zuliprc_path_that_is_a_directory_is_refused_before_creating(initialised, tmp_path):
    result = run("create-user", "--data-dir", initialised, *USER, "--zuliprc", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.strip() == f"tornchat: --zuliprc {tmp_path} is a directory"
    again = run("create-user", "--data-dir", initialised, *USER)
    assert again.returncode == 0, again.stderr  # the user was not created by the refused call


def test_an_unwritable_zuliprc_path_is_one_line(initialised, tmp_path):
    path = str(tmp_path / "missing-dir" / "al.zuliprc")
    result = run("create-user", "--data-dir", initialised, *USER, "--zuliprc", path)
    assert result.returncode == 1
    assert result.stderr.strip() == f"tornchat: user created, but cannot write {path}: No such file or directory"


def test_first_serve_without_a_terminal_prints_the_password_and_writes_it_to_a_private_file(tmp_path):
    data_dir = str(tmp_path / "fresh")
    port = free_port()
    with serving("--data-dir", data_dir, "--port", str(port)) as lines:
        pass
    path = os.path.join(data_dir, "owner-password")
    password = Path(path).read_text().strip()
    assert len(password) >= 16
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert any(line.startswith("Created organization") for line in lines)
    assert f"The owner's password (printed on this first start only): {password}\n" in lines
    email = read_zuliprc(os.path.join(data_dir, "zuliprc"))["email"]
    assert f"Open http://127.0.0.1:{port}/ in a browser and sign in as {email} with that password.\n" in lines


def test_a_leftover_password_file_is_made_private_again(tmp_path):
    data_dir = tmp_path / "fresh"
    data_dir.mkdir()
    path = data_dir / "owner-password"
    path.write_text("old\n")
    path.chmod(0o644)
    with serving("--data-dir", str(data_dir), "--port", str(free_port())):
        pass
    assert path.read_text().strip() != "old"
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_the_log_names_the_password_file_and_never_the_password(tmp_path):
    """The log (stderr) names the file; the password itself is on stdout only."""
    data_dir = str(tmp_path / "fresh")
    process = subprocess.Popen(
        TORNCHAT + ["serve", "--data-dir", data_dir, "--port", str(free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("Serving"):
            break
    process.terminate()
    out, err = process.communicate(timeout=20)
    password = Path(os.path.join(data_dir, "owner-password")).read_text().strip()
    assert f"The owner's password is in {os.path.join(os.path.abspath(data_dir), 'owner-password')}" in err
    assert password not in err


def test_first_serve_on_a_terminal_prints_the_password_and_writes_no_file(tmp_path):
    data_dir = str(tmp_path / "fresh")
    controller, terminal = pty.openpty()
    port = free_port()
    process = subprocess.Popen(
        TORNCHAT + ["serve", "--data-dir", data_dir, "--port", str(port)],
        stdout=terminal,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(terminal)
    shown = b""
    while b"Serving" not in shown:
        chunk = os.read(controller, 4096)
        assert chunk, shown
        shown += chunk
    password = shown.decode().split("printed on this first start only): ", 1)[1].split()[0]
    api = read_zuliprc(os.path.join(data_dir, "zuliprc"))
    assert f"Open http://127.0.0.1:{port}/ in a browser and sign in as {api['email']}" in shown.decode()
    login = requests.post(
        f"http://127.0.0.1:{port}/api/v1/fetch_api_key", data={"username": api["email"], "password": password}
    )
    process.terminate()
    _, err = process.communicate(timeout=20)
    os.close(controller)
    assert login.json()["api_key"] == api["key"]
    assert password not in err
    assert not os.path.exists(os.path.join(data_dir, "owner-password"))


def test_a_password_from_the_environment_is_neither_printed_nor_written(tmp_path):
    data_dir = str(tmp_path / "fresh")
    env = {**os.environ, "TORNCHAT_OWNER_PASSWORD": "environment-pw-1"}
    process = subprocess.Popen(
        TORNCHAT + ["serve", "--data-dir", data_dir, "--port", str(free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("Serving"):
            break
    process.terminate()
    out, err = process.communicate(timeout=20)
    assert "The owner's password is the one TORNCHAT_OWNER_PASSWORD gave.\n" in lines
    assert any(line.startswith("Open http://127.0.0.1:") and " in a browser and sign in as " in line for line in lines)
    assert "environment-pw-1" not in "".join(lines) + out + err
    assert not os.path.exists(os.path.join(data_dir, "owner-password"))


def test_the_cli_help_names_the_option():
    result = subprocess.run(TORNCHAT + ["create-user", "--help"], capture_output=True, text=True, timeout=30)
    assert "--zuliprc PATH" in result.stdout
