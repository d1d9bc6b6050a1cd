"""DATA_DIR/tornchat.toml: every setting, below flags and variables; a bad file stops the command."""

from __future__ import annotations

import logging
import os
import re

import pytest
import zulip

from tests.support.cli_helpers import read_zuliprc, serving
from tests.support.helpers import free_port
from tests.support.paths import REPO
from tornchat import cli
from tornchat.settings import CONFIG_FILE, FILE_KEYS, Settings, load_settings

ORG_ID = "4a3c5c1e-4a2b-4f4e-9d1b-2f1f7b2c9a10"
ORG_KEY = "k" * 64
README = os.path.join(REPO, "README.md")


def write_config(data_dir, text: str | bytes) -> str:
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(data_dir, CONFIG_FILE)
    with open(path, "wb") as handle:
        handle.write(text.encode() if isinstance(text, str) else text)
    return path


def load(data_dir, flags: dict[str, object] | None = None, environ: dict[str, str] | None = None) -> Settings:
    return load_settings({"data_dir": str(data_dir), **(flags or {})}, environ or {})


@pytest.mark.parametrize(
    ("name", "in_file", "variable", "flag", "expected"),
    [
        ("port", "port = 8000", "8001", 8002, (8000, 8001, 8002)),
        ("realm_name", 'realm_name = "File Org"', "Env Org", "Flag Org", ("File Org", "Env Org", "Flag Org")),
        ("max_body_size", "max_body_size = 1000", "2000", 3000, (1000, 2000, 3000)),
        (
            "trusted_proxy",
            'trusted_proxy = ["10.0.0.0/8", "::1"]',
            "10.1.1.1, 10.1.1.2",
            ["10.2.2.2"],
            (["10.0.0.0/8", "::1"], ["10.1.1.1", "10.1.1.2"], ["10.2.2.2"]),
        ),
        (
            "site",
            'site = "https://file.example"',
            "https://env.example",
            "https://flag.example",
            ("https://file.example", "https://env.example", "https://flag.example"),
        ),
        ("upload_quota_mib", "upload_quota_mib = 7", "8", 9, (7, 8, 9)),
    ],
)
def test_flag_over_variable_over_file_over_default(tmp_path, name, in_file, variable, flag, expected):
    default = getattr(load(tmp_path), name)
    write_config(tmp_path, in_file)
    environ = {f"TORNCHAT_{name.upper()}": variable}
    from_file, from_variable, from_flag = expected
    assert default != from_file
    assert getattr(load(tmp_path), name) == from_file
    assert getattr(load(tmp_path, environ=environ), name) == from_variable
    assert getattr(load(tmp_path, {name: flag}, environ), name) == from_flag


def test_settings_without_a_flag_come_from_variable_over_file(tmp_path):
    write_config(tmp_path, "web_public_channels = false\nheader_timeout = 5\nowner_email = 'boss@example.com'\n")
    settings = load(tmp_path)
    assert (settings.web_public_channels, settings.header_timeout, settings.owner_email) == (
        False,
        5.0,
        "boss@example.com",
    )
    environ = {"TORNCHAT_WEB_PUBLIC_CHANNELS": "true", "TORNCHAT_OWNER_EMAIL": "chief@example.com"}
    settings = load(tmp_path, environ=environ)
    assert (settings.web_public_channels, settings.owner_email) == (True, "chief@example.com")


def test_a_file_that_sets_everything(tmp_path):
    text = f"""
host = "0.0.0.0"
port = 8443
realm_name = "Everything Org"
email_host = "mail.example"
site = "https://chat.example.com/"
web_public_channels = false
enable_gravatar = true
push_bouncer_url = "https://push.example"
zulip_org_id = "{ORG_ID}"
max_body_size = 4096
header_timeout = 7.5
body_timeout = 30
trusted_proxy = ["127.0.0.1", "10.0.0.0/8"]
max_queue_bytes = 5000
max_file_upload_size_mib = 3
upload_quota_mib = 50
message_cache_mib = 64
tls_cert = "tls/cert.pem"
tls_key = "/etc/tornchat/key.pem"
owner_email = "boss@example.com"
"""
    write_config(tmp_path, text)
    assert sorted(re.findall(r"^(\w+) =", text, re.M)) == sorted(FILE_KEYS), "every setting but data_dir"
    assert load(tmp_path, environ={"TORNCHAT_ZULIP_ORG_KEY": ORG_KEY}) == Settings(
        data_dir=str(tmp_path),
        host="0.0.0.0",
        port=8443,
        realm_name="Everything Org",
        email_host="mail.example",
        site="https://chat.example.com/",
        web_public_channels=False,
        enable_gravatar=True,
        push_bouncer_url="https://push.example",
        zulip_org_id=ORG_ID,
        zulip_org_key=ORG_KEY,  # from the variable: never in the file
        max_body_size=4096,
        header_timeout=7.5,
        body_timeout=30.0,
        trusted_proxy=["127.0.0.1", "10.0.0.0/8"],
        max_queue_bytes=5000,
        max_file_upload_size_mib=3,
        upload_quota_mib=50,
        message_cache_mib=64,
        tls_cert=os.path.join(str(tmp_path), "tls/cert.pem"),  # relative to the file's directory
        tls_key="/etc/tornchat/key.pem",
        owner_email="boss@example.com",
    )


def test_no_file_means_defaults(tmp_path):
    assert load(tmp_path) == Settings(data_dir=str(tmp_path))
    assert load(tmp_path / "missing") == Settings(data_dir=str(tmp_path / "missing"))


def test_the_data_directory_of_the_variable_holds_the_file(tmp_path):
    write_config(tmp_path, "port = 8123")
    settings = load_settings({}, {"TORNCHAT_DATA_DIR": str(tmp_path)})
    assert (settings.data_dir, settings.port) == (str(tmp_path), 8123)
    assert load_settings({"data_dir": str(tmp_path / "other")}, {"TORNCHAT_DATA_DIR": str(tmp_path)}).port == 9991


def test_pairs_may_come_from_different_places(tmp_path):
    write_config(tmp_path, f'push_bouncer_url = "http://push.example"\nzulip_org_id = "{ORG_ID}"\ntls_key = "key.pem"')
    settings = load(tmp_path, {"tls_cert": "/certs/cert.pem"}, {"TORNCHAT_ZULIP_ORG_KEY": ORG_KEY})
    assert settings.push_configured
    assert (settings.tls_cert, settings.tls_key) == ("/certs/cert.pem", os.path.join(str(tmp_path), "key.pem"))


BAD_FILES = [
    ("prot = 1", "unknown setting 'prot' in {path} (did you mean 'port'?)"),
    ('colour = "red"', "unknown setting 'colour' in {path}"),
    ("[server]\nport = 1", "unknown setting 'server' in {path}"),
    (
        'data_dir = "/srv/chat"',
        "data_dir cannot be set in {path}: the file is inside the data directory: use --data-dir or TORNCHAT_DATA_DIR",
    ),
    (
        'owner_password = "hunter2"',
        "owner_password cannot be set in {path}: a password does not belong in a configuration file:"
        " use TORNCHAT_OWNER_PASSWORD or let the first start generate one",
    ),
    ('port = "9991"', "invalid setting port in {path}: expected an integer, got '9991'"),
    ("port = 1.5", "invalid setting port in {path}: expected an integer, got 1.5"),
    ("port = true", "invalid setting port in {path}: expected an integer, got True"),
    ("port = 0", "invalid setting port in {path}: 0 is not a port number (1 to 65535)"),
    ("port = 70000", "invalid setting port in {path}: 70000 is not a port number (1 to 65535)"),
    ("realm_name = 5", "invalid setting realm_name in {path}: expected a string, got 5"),
    ('web_public_channels = "no"', "invalid setting web_public_channels in {path}: expected true or false, got 'no'"),
    ('header_timeout = "5"', "invalid setting header_timeout in {path}: expected a number, got '5'"),
    ("header_timeout = 0", "invalid setting header_timeout in {path}: 0.0 must be a positive number of seconds"),
    ("body_timeout = nan", "invalid setting body_timeout in {path}: nan must be a positive number of seconds"),
    ("body_timeout = inf", "invalid setting body_timeout in {path}: inf must be a positive number of seconds"),
    ("max_body_size = 0", "invalid setting max_body_size in {path}: 0 must be positive"),
    ("max_queue_bytes = -1", "invalid setting max_queue_bytes in {path}: -1 must be positive"),
    ("upload_quota_mib = -1", "invalid setting upload_quota_mib in {path}: -1 must not be negative"),
    ("max_file_upload_size_mib = -2", "invalid setting max_file_upload_size_mib in {path}: -2 must not be negative"),
    (
        'site = "chat.example.com"',
        "invalid setting site in {path}: 'chat.example.com' is not a URL starting with http:// or https://",
    ),
    (
        'trusted_proxy = "10.0.0.1"',
        "invalid setting trusted_proxy in {path}: expected an array of strings, got '10.0.0.1'",
    ),
    ("trusted_proxy = [1]", "invalid setting trusted_proxy in {path}: expected an array of strings, got [1]"),
    (
        'trusted_proxy = ["10.0.0.1", "proxy.example.com"]',
        "invalid trusted proxy 'proxy.example.com' (trusted_proxy in {path}): expected an IP address or network",
    ),
    (
        'push_bouncer_url = "http://push.example"',
        "push_bouncer_url in {path} needs zulip_org_id and zulip_org_key too: run `tornchat register-push-bouncer`,"
        " which stores all three in the data directory",
    ),
    (
        'zulip_org_key = "secret"',
        "zulip_org_key cannot be set in {path}: a secret does not belong in a configuration file:"
        " `tornchat register-push-bouncer` keeps it in DATA_DIR/push-bouncer.json, or use TORNCHAT_ZULIP_ORG_KEY",
    ),
    (
        f'push_bouncer_url = "push.example"\nzulip_org_id = "{ORG_ID}"',
        "invalid push bouncer URL 'push.example' (push_bouncer_url in {path}): it must start with http:// or https://",
        {"TORNCHAT_ZULIP_ORG_KEY": ORG_KEY},
    ),
    ('tls_key = "key.pem"', "tls_cert and tls_key must be given together ({path})"),
    ('tls_cert = ""\ntls_key = "key.pem"', "invalid setting tls_cert in {path}: '' must not be empty"),
    ("port = ?", "cannot read {path}: not valid TOML: Invalid value (at line 1, column 8)"),
    ("port = 1\nport = 2", "cannot read {path}: not valid TOML: Cannot overwrite a value (at end of document)"),
    (
        b'realm_name = "\xff"',
        "cannot read {path}: not valid TOML: 'utf-8' codec can't decode byte 0xff in position 14: invalid start byte",
    ),
]


@pytest.mark.parametrize("case", BAD_FILES)
def test_a_bad_file_is_refused_with_one_line_naming_the_key_and_the_file(tmp_path, case):
    text, message, *environ = case  # some cases also set variables
    path = write_config(tmp_path, text)
    with pytest.raises(ValueError) as error:
        load(tmp_path, environ=environ[0] if environ else None)
    assert str(error.value) == message.format(path=path)


def test_a_flag_does_not_hide_a_bad_file(tmp_path):
    path = write_config(tmp_path, 'port = "high"')
    with pytest.raises(ValueError, match=re.escape(f"invalid setting port in {path}")):
        load(tmp_path, {"port": 9000})


def test_an_unreadable_file_is_refused(tmp_path):
    path = tmp_path / CONFIG_FILE
    path.mkdir()
    with pytest.raises(ValueError) as error:
        load(tmp_path)
    assert str(error.value) == f"cannot read {path}: Is a directory"


def test_variables_and_flags_name_themselves_in_errors(tmp_path):
    with pytest.raises(ValueError) as error:
        load(tmp_path, environ={"TORNCHAT_PORT": "0"})
    assert str(error.value) == "invalid setting TORNCHAT_PORT: 0 is not a port number (1 to 65535)"
    with pytest.raises(ValueError) as error:
        load(tmp_path, {"site": "ftp://chat.example"})
    assert (
        str(error.value)
        == "invalid setting --site: 'ftp://chat.example' is not a URL starting with http:// or https://"
    )
    with pytest.raises(ValueError) as error:
        load(tmp_path, environ={"TORNCHAT_WEB_PUBLIC_CHANNELS": "maybe"})
    assert str(error.value) == "invalid setting TORNCHAT_WEB_PUBLIC_CHANNELS: expected true or false, got 'maybe'"
    with pytest.raises(ValueError) as error:
        load(tmp_path, environ={"TORNCHAT_TLS_KEY": "key.pem"})
    assert str(error.value) == "TORNCHAT_TLS_CERT and TORNCHAT_TLS_KEY must be given together"


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "--data-dir", "{dir}"],
        ["init", "--data-dir", "{dir}", "--owner-email", "boss@example.com", "--owner-password", "pw-12345"],
        [
            "create-user",
            "--data-dir",
            "{dir}",
            "--email",
            "a@example.com",
            "--full-name",
            "A",
            "--password",
            "pw-12345",
        ],
        ["backup", "--data-dir", "{dir}", "{dir}/../backup.tar.gz"],
    ],
)
def test_commands_stop_on_a_bad_file(tmp_path, capsys, monkeypatch, command):
    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: None)  # keep the test run's logging as it is
    data_dir = tmp_path / "data"
    path = write_config(data_dir, "max_body_size = 0")
    assert cli.main([part.format(dir=data_dir) for part in command]) == 1
    err = capsys.readouterr().err
    assert err == f"tornchat: invalid setting max_body_size in {path}: 0 must be positive\n"
    assert os.listdir(data_dir) == [CONFIG_FILE], "refused before creating anything"
    assert not (tmp_path / "backup.tar.gz").exists()


def test_serve_takes_its_settings_from_the_file(tmp_path):
    data_dir = str(tmp_path / "data")
    port = free_port()
    write_config(
        data_dir,
        f'port = {port}\nrealm_name = "File Org"\nemail_host = "file.example"\nowner_email = "boss@example.com"\n',
    )
    with serving("--data-dir", data_dir) as lines:
        assert lines[-1] == f"Serving File Org at http://127.0.0.1:{port}\n"
        zuliprc = os.path.join(data_dir, "zuliprc")
        assert read_zuliprc(zuliprc)["site"] == f"http://127.0.0.1:{port}"
        client = zulip.Client(config_file=zuliprc)
        assert client.get_server_settings()["realm_name"] == "File Org"
        own = client.get_profile()
        assert own["email"] == "boss@example.com"


def test_readme_lists_every_setting():
    with open(README) as handle:
        readme = handle.read()
    table = readme[readme.index("| flag | variable | file key | default |") :].split("\n\n")[0]
    rows = {re.sub(r"^`(\w+)`.*", r"\1", row.split("|")[3].strip()) for row in table.splitlines()[2:]}
    assert set(FILE_KEYS) <= rows
    for name in FILE_KEYS:
        variable = f"TORNCHAT_{name.upper()}"
        assert f"`{variable}`" in table


def test_a_bad_organization_id_or_key_is_refused_naming_where_it_came_from(tmp_path):
    path = write_config(tmp_path, 'push_bouncer_url = "https://push.example"\nzulip_org_id = "not-a-uuid"')
    with pytest.raises(ValueError) as error:
        load(tmp_path, environ={"TORNCHAT_ZULIP_ORG_KEY": ORG_KEY})
    assert re.fullmatch(
        re.escape(f"invalid zulip_org_id 'not-a-uuid' (zulip_org_id in {path}): expected a UUID such as ")
        + "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
        str(error.value),
    ), str(error.value)
    write_config(tmp_path, f'push_bouncer_url = "https://push.example"\nzulip_org_id = "{ORG_ID}"')
    with pytest.raises(ValueError) as error:
        load(tmp_path, environ={"TORNCHAT_ZULIP_ORG_KEY": "short"})
    assert str(error.value).startswith("invalid zulip_org_key (")
    assert "TORNCHAT_ZULIP_ORG_KEY" in str(error.value) and str(error.value).endswith(": expected 64 characters")
    assert "short" not in str(error.value)  # a secret is never echoed
