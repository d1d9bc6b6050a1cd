"""File uploads: POST /user_uploads, serving GET /user_uploads/..., temporary URLs, limits and settings."""

from __future__ import annotations

import io
import os
import socket
import tarfile

import pytest
import requests

from storage.db import backup
from tests.support.channel_helpers import make_channel
from tests.support.helpers import LiveServer, assert_error, assert_success, data_dir_for
from tests.support.send_helpers import send_direct_ok, send_ok
from tornchat import cli
from tornchat.settings import load_settings

NOT_FOUND = "File not found."
CSP = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; object-src 'self'; frame-ancestors 'self'"  # noqa: E501


def upload(client, name="notes.txt", data=b"hello", content_type="text/plain", field="file"):
    part = (name, data) if content_type is None else (name, data, content_type)
    return client.session.post(client.base_url + "/api/v1/user_uploads", files={field: part})


def upload_ok(client, *args, **kwargs):
    return assert_success(upload(client, *args, **kwargs))


def fetch(client, url, method="GET"):
    """GET a site URL (/user_uploads/...) with the client's credentials, as zulip-terminal downloads."""
    return client.session.request(method, client.base_url + url)


@pytest.fixture
def custom(tmp_path):
    """Start a live server with extra settings; stopped at the end of the test."""
    started = []

    def start(**settings):
        started.append(LiveServer(data_dir_for(tmp_path), **settings))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def files_under(live, folder):
    root = os.path.join(live.settings.data_dir, folder)
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, names in os.walk(root) for f in names)


# -- uploading ------------------------------------------------------------------------------------


def test_upload_stores_the_file_and_answers_its_url(live):
    count = len(live.events())
    body = upload_ok(live.owner, "report.txt", b"quarterly numbers")
    url = body["url"]
    assert set(body) == {"result", "msg", "uri", "url", "filename"}
    assert body["uri"] == url and body["filename"] == "report.txt"
    realm, random_part, name = url.removeprefix("/user_uploads/").split("/")
    assert (realm, name, len(random_part)) == ("1", "report.txt", 24)
    path_id = url.removeprefix("/user_uploads/")
    with open(os.path.join(live.settings.data_dir, "uploads", path_id), "rb") as stored:
        assert stored.read() == b"quarterly numbers"
    assert files_under(live, "uploads-incoming") == []
    events = [(e, ids) for e, ids in live.events()[count:] if e["type"] == "attachment"]
    expected = {"id": 1, "name": "report.txt", "path_id": path_id, "size": 17,
                "create_time": int(live.clock.now) * 1000, "messages": []}  # fmt: skip
    assert events == [
        ({"type": "attachment", "op": "add", "attachment": expected, "upload_space_used": 17}, [live.owner.id])
    ]
    response = fetch(live.owner, url)
    assert response.status_code == 200 and response.content == b"quarterly numbers"


def test_every_upload_gets_its_own_path(live):
    first = upload_ok(live.owner, "same.txt", b"one")["url"]
    second = upload_ok(live.owner, "same.txt", b"two")["url"]
    assert first != second
    assert fetch(live.owner, first).content == b"one" and fetch(live.owner, second).content == b"two"


def test_the_zulip_client_uploads(live, zulip_client, tmp_path):
    path = tmp_path / "photo.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    with open(path, "rb") as fp:
        result = zulip_client.upload_file(fp)
    assert result["result"] == "success", result
    assert result["filename"] == "photo.png" and result["uri"].endswith("/photo.png")
    response = fetch(live.owner, result["uri"])
    assert response.content == b"\x89PNG\r\n\x1a\nnot really"
    assert response.headers["Content-Type"] == "image/png"


def test_no_file(live):
    assert_error(live.owner.post("/user_uploads"), "You must specify a file to upload")
    assert_error(live.owner.post("/user_uploads", {"file": "not a file"}), "You must specify a file to upload")


def test_two_files(live):
    files = [("a", ("a.txt", b"a")), ("b", ("b.txt", b"b"))]
    response = live.owner.session.post(live.base_url + "/api/v1/user_uploads", files=files)
    assert_error(response, "You may only upload one file at a time")
    assert files_under(live, "uploads") == []


def test_anonymous_upload_is_refused(live):
    response = requests.post(live.base_url + "/api/v1/user_uploads", files={"file": ("a.txt", b"a")})
    assert_error(response, "Not logged in: API authentication or user session required", "UNAUTHORIZED", 401)


@pytest.mark.parametrize(
    ("given", "shown", "stored"),
    [
        ("../../etc/passwd", "passwd", "passwd"),
        ("..", "..", "uploaded-file"),
        ("C:\\Users\\me\\plan.doc", "plan.doc", "plan.doc"),
        ("naïve résumé (final).txt", "naïve résumé (final).txt", "naïve-résumé-final.txt"),
        ("a<script>b.html", "a<script>b.html", "ascriptb.html"),
        ("%2e%2e%2fsecret.txt", "secret.txt", "secret.txt"),
    ],
)
def test_names_are_never_paths(live, given, shown, stored):
    body = upload_ok(live.owner, given, b"x")
    assert body["filename"] == shown
    assert body["url"].rsplit("/", 1)[-1] == stored
    assert [path.split(os.sep)[-1] for path in files_under(live, "uploads")] == [stored]
    assert fetch(live.owner, body["url"]).content == b"x"


def test_a_long_name_is_bounded_and_keeps_its_extension(live):
    body = upload_ok(live.owner, "é" * 400 + ".txt", b"x")
    stored = body["url"].rsplit("/", 1)[-1]
    assert stored.endswith(".txt") and len(stored.encode()) <= 255
    assert body["filename"] == "é" * 125 + ".txt"
    assert fetch(live.owner, body["url"]).content == b"x"


def test_a_control_character_in_the_name_is_dropped(live):
    body = upload_ok(live.owner, "a\tb.txt", b"x")
    assert body["filename"] == "ab.txt"


# -- limits --------------------------------------------------------------------------------------


def test_a_file_over_the_size_limit(custom):
    live = custom(max_file_upload_size_mib=1)
    response = upload(live.owner, "big.bin", b"x" * (1024 * 1024 + 1))
    assert_error(response, "Uploaded file is larger than the allowed limit of 1 MiB")
    assert files_under(live, "uploads") == [] and files_under(live, "uploads-incoming") == []
    assert upload_ok(live.owner, "fits.bin", b"x" * (1024 * 1024))["filename"] == "fits.bin"


def test_the_quota_counts_each_users_files(custom):
    live = custom(upload_quota_mib=1)
    half = b"x" * (600 * 1024)
    upload_ok(live.owner, "one.bin", half)
    count = len(live.events())
    body = assert_error(
        upload(live.owner, "two.bin", half), "Upload would exceed your upload quota.", "REALM_UPLOAD_QUOTA"
    )
    assert set(body) == {"result", "msg", "code"}
    assert len(files_under(live, "uploads")) == 1 and files_under(live, "uploads-incoming") == []
    assert live.read(lambda tx: tx.value("SELECT COUNT(*) FROM attachments")) == 1
    assert [e for e, _ in live.events()[count:] if e["type"] == "attachment"] == []
    upload_ok(live.make_user(), "two.bin", half)  # another user's quota


def test_uploads_may_exceed_the_body_limit_of_other_requests(custom):
    live = custom(max_body_size=4096, max_file_upload_size_mib=1)
    assert live.settings.upload_body_limit == 1024 * 1024 + 64 * 1024
    upload_ok(live.owner, "big.bin", b"x" * (1024 * 1024))
    response = live.owner.post("/messages", {"type": "direct", "to": "[1]", "content": "x" * 5000})
    assert_error(response, "Request body is too large (limit: 4096 bytes)", status=413)


def test_a_body_over_the_upload_limit_is_refused_from_its_head(custom):
    live = custom(max_file_upload_size_mib=1)
    limit = live.settings.upload_body_limit
    with socket.create_connection(("127.0.0.1", live.port), timeout=10) as conn:
        conn.sendall(
            f"POST /api/v1/user_uploads HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
            f"Content-Length: {limit + 1}\r\n\r\n".encode()
        )
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert f"Request body is too large (limit: {limit} bytes)".encode() in answer


def test_limits_are_announced(custom):
    live = custom(max_file_upload_size_mib=7)
    assert (
        assert_success(live.owner.post("/register", {"fetch_event_types": '["realm"]'}))["max_file_upload_size_mib"]
        == 7
    )
    assert assert_success(live.anonymous().get("/server_settings"))["max_file_upload_size_mib"] == 7


def test_upload_settings_from_flags_and_environment():
    environ = {"TORNCHAT_MAX_FILE_UPLOAD_SIZE_MIB": "10", "TORNCHAT_UPLOAD_QUOTA_MIB": "50"}
    settings = load_settings({}, environ)
    assert (settings.max_file_upload_size_mib, settings.upload_quota_mib) == (10, 50)
    assert load_settings({"upload_quota_mib": 5}, environ).upload_quota_mib == 5
    defaults = load_settings({}, {})
    assert (defaults.max_file_upload_size_mib, defaults.upload_quota_mib) == (25, 1024)
    assert defaults.upload_body_limit == 25 * 1024 * 1024 + 64 * 1024 > defaults.max_body_size
    with pytest.raises(ValueError, match="must not be negative"):
        load_settings({}, {"TORNCHAT_UPLOAD_QUOTA_MIB": "-1"})


def test_upload_flags_of_serve(monkeypatch):
    monkeypatch.delenv("TORNCHAT_MAX_FILE_UPLOAD_SIZE_MIB", raising=False)
    monkeypatch.delenv("TORNCHAT_UPLOAD_QUOTA_MIB", raising=False)
    args = cli.build_parser().parse_args(["serve", "--max-file-upload-size-mib", "5", "--upload-quota-mib", "50"])
    settings = cli._settings(args)
    assert (settings.max_file_upload_size_mib, settings.upload_quota_mib) == (5, 50)
    with pytest.raises(cli.CommandError, match="must not be negative"):
        cli._settings(cli.build_parser().parse_args(["serve", "--upload-quota-mib", "-5"]))


# -- content types and headers --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "given", "stored"),
    [
        ("a.png", "image/png", "image/png"),
        ("a.png", "IMAGE/PNG; charset=x", "image/png"),
        ("a.png", None, "image/png"),
        ("a.pdf", "not a type", "application/pdf"),
        ("a.zip", "", "application/zip"),
        ("a.unknownext", None, "application/octet-stream"),
        ("page.png", "text/html", "text/html"),
    ],
)
def test_content_type_is_the_parts_if_well_formed_else_guessed(live, name, given, stored):
    upload_ok(live.owner, name, b"x", given)
    assert live.read(lambda tx: tx.value("SELECT content_type FROM attachments")) == stored


@pytest.mark.parametrize(
    ("name", "content_type", "served", "disposition"),
    [
        ("cat.png", "image/png", "image/png", "inline"),
        ("talk.pdf", "application/pdf", "application/pdf", "inline"),
        ("notes.txt", "text/plain", "text/plain", "inline"),
        ("page.html", "text/html", "application/octet-stream", "attachment"),
        ("logo.svg", "image/svg+xml", "application/octet-stream", "attachment"),
        ("tool.js", "application/javascript", "application/octet-stream", "attachment"),
        ("data.zip", "application/zip", "application/octet-stream", "attachment"),
    ],
)
def test_served_headers(live, name, content_type, served, disposition):
    url = upload_ok(live.owner, name, b"<script>alert(1)</script>", content_type)["url"]
    response = fetch(live.owner, url)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == served
    assert response.headers["Content-Disposition"] == f"{disposition}; filename=\"{name}\"; filename*=UTF-8''{name}"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Content-Security-Policy"] == CSP
    assert response.headers["Cache-Control"] == "private, immutable"
    assert response.headers["Content-Length"] == "25"


def test_download_url_forces_an_attachment(live):
    url = upload_ok(live.owner, "cat.png", b"png", "image/png")["url"]
    response = fetch(live.owner, url.replace("/user_uploads/", "/user_uploads/download/", 1))
    assert response.content == b"png"
    assert response.headers["Content-Disposition"].startswith("attachment; ")


def test_head_sends_headers_only(live):
    url = upload_ok(live.owner, "notes.txt", b"hello")["url"]
    response = fetch(live.owner, url, "HEAD")
    assert response.status_code == 200 and response.content == b""
    assert response.headers["Content-Length"] == "5"


def test_a_large_file_is_streamed_whole(custom):
    live = custom(max_file_upload_size_mib=3)
    data = os.urandom(3 * 1024 * 1024)
    url = upload_ok(live.owner, "big.bin", data)["url"]
    with fetch_stream(live.owner, url) as response:
        chunks = list(response.iter_content(1024 * 1024))
    assert b"".join(chunks) == data


def fetch_stream(client, url):
    return client.session.get(client.base_url + url, stream=True)


# -- who may read a file --------------------------------------------------------------------------


def test_only_the_uploader_reads_an_unshared_file(live):
    url = upload_ok(live.owner, "secret.txt", b"s")["url"]
    other = live.make_user()
    assert_error(fetch(other, url), NOT_FOUND, status=404)
    assert_error(fetch(live.owner, "/user_uploads/1/nosuchfile/secret.txt"), NOT_FOUND, status=404)
    assert_error(fetch(live.owner, url.replace("/user_uploads/1/", "/user_uploads/2/")), NOT_FOUND, status=404)
    anonymous = requests.get(live.base_url + url)
    assert_error(anonymous, "Not logged in: API authentication or user session required", "UNAUTHORIZED", 401)


def test_a_public_channel_message_shares_the_file_with_its_readers(live):
    reader, guest = live.make_user(), live.make_user(role="guest")
    make_channel(live, "lobby", [live.owner.id])
    url = upload_ok(live.owner, "plan.txt", b"p")["url"]
    send_ok(live.owner, "lobby", f"See [plan]({url})")
    assert fetch(reader, url).content == b"p"  # not subscribed, but may read the channel's history
    assert_error(fetch(guest, url), NOT_FOUND, status=404)  # guests read only channels they are in


def test_a_private_channel_message_shares_the_file_with_its_members_only(live):
    member, outsider = live.make_user(), live.make_user()
    make_channel(live, "inner", [live.owner.id, member.id], invite_only=True)
    url = upload_ok(live.owner, "plan.txt", b"p")["url"]
    send_ok(live.owner, "inner", f"[plan]({url})")
    assert fetch(member, url).content == b"p"
    assert_error(fetch(outsider, url), NOT_FOUND, status=404)


def test_a_direct_message_shares_the_file_with_its_participants(live):
    friend, stranger = live.make_user(), live.make_user()
    url = upload_ok(live.owner, "plan.txt", b"p")["url"]
    # An absolute link to this server counts too.
    send_direct_ok(live.owner, [friend.id], f"[plan]({live.settings.site_url}{url})")
    assert fetch(friend, url).content == b"p"
    assert_error(fetch(stranger, url), NOT_FOUND, status=404)


def test_linking_a_file_one_cannot_read_shares_nothing(live):
    url = upload_ok(live.owner, "secret.txt", b"s")["url"]
    guesser, friend = live.make_user(), live.make_user()
    send_direct_ok(guesser, [friend.id], f"[got it]({url})")
    assert_error(fetch(friend, url), NOT_FOUND, status=404)
    assert_error(fetch(guesser, url), NOT_FOUND, status=404)


def test_a_reader_may_share_the_file_further(live):
    friend, third = live.make_user(), live.make_user()
    url = upload_ok(live.owner, "plan.txt", b"p")["url"]
    send_direct_ok(live.owner, [friend.id], f"[plan]({url})")
    send_direct_ok(friend, [third.id], f"fwd [plan]({url})")
    assert fetch(third, url).content == b"p"


# -- temporary URLs (get-file-temporary-url) ------------------------------------------------------


def temporary_url(client, url):
    return assert_success(client.get(url))["url"]


def test_a_temporary_url_serves_without_credentials_for_a_minute(live):
    url = upload_ok(live.owner, "cat.png", b"png", "image/png")["url"]
    temporary = temporary_url(live.owner, url)
    assert temporary.startswith("/user_uploads/temporary/") and temporary.endswith("/cat.png")
    response = requests.get(live.base_url + temporary)
    assert response.content == b"png" and response.headers["Content-Type"] == "image/png"
    live.clock.advance(60)
    assert requests.get(live.base_url + temporary).content == b"png"
    live.clock.advance(1)
    assert_error(requests.get(live.base_url + temporary), "Invalid token")


def test_head_of_a_temporary_url_sends_headers_only(live):
    temporary = temporary_url(live.owner, upload_ok(live.owner, "cat.png", b"png", "image/png")["url"])
    response = requests.head(live.base_url + temporary)
    assert response.status_code == 200 and response.content == b""
    assert response.headers["Content-Type"] == "image/png" and response.headers["Content-Length"] == "3"


def test_temporary_url_errors(live):
    url = upload_ok(live.owner, "cat.png", b"png")["url"]
    temporary = temporary_url(live.owner, url)
    prefix, token, _ = temporary.rsplit("/", 2)
    assert_error(requests.get(f"{live.base_url}{prefix}/{token}/dog.png"), "Invalid filename")
    forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    assert_error(requests.get(f"{live.base_url}{prefix}/{forged}/cat.png"), "Invalid token")
    assert_error(requests.get(f"{live.base_url}{prefix}/not-a-token/cat.png"), "Invalid token")
    assert_error(requests.get(f"{live.base_url}{prefix}/%C3%A9.x/cat.png"), "Invalid token")
    assert_error(live.make_user().get(url), NOT_FOUND, status=404)
    assert_error(live.owner.get("/user_uploads/1/nothing/here.png"), NOT_FOUND, status=404)


def test_a_temporary_url_of_a_deleted_file(live):
    body = upload_ok(live.owner, "cat.png", b"png")
    temporary = temporary_url(live.owner, body["url"])
    attachment_id = assert_success(live.owner.get("/attachments"))["attachments"][0]["id"]
    assert_success(live.owner.delete(f"/attachments/{attachment_id}"))
    assert_error(requests.get(live.base_url + temporary), NOT_FOUND, status=404)


def test_a_file_missing_from_disk_is_not_found(live):
    url = upload_ok(live.owner, "gone.txt", b"g")["url"]
    os.unlink(os.path.join(live.settings.data_dir, "uploads", url.removeprefix("/user_uploads/")))
    assert_error(fetch(live.owner, url), NOT_FOUND, status=404)


def test_uploads_are_in_backups_and_incoming_files_are_not(live, tmp_path):
    url = upload_ok(live.owner, "keep.txt", b"k")["url"]
    incoming = os.path.join(live.settings.data_dir, "uploads-incoming")
    with open(os.path.join(incoming, "upload-half"), "wb") as half:
        half.write(b"half")
    archive = str(tmp_path / "backup.tar.gz")
    backup.create_backup(live.settings.data_dir, archive, live.clock.now)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "uploads/" + url.removeprefix("/user_uploads/") in names
    assert not any("half" in name for name in names)


def test_upload_body_of_the_zulip_clients_field_name(live):
    # The zulip package names the part after the file's path; any field name is accepted.
    body = upload_ok(live.owner, "x.txt", b"x", field="/tmp/some/dir/x.txt")
    assert body["filename"] == "x.txt"
    assert io.BytesIO(fetch(live.owner, body["url"]).content).read() == b"x"
