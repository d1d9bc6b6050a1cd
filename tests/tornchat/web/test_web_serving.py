"""The web client's files: GET / (index.html), /static/<hash>/<path>, their caching and security headers."""

from __future__ import annotations

import http.client
import json
import re

import requests

from storage.text import emoji
from tests.support.helpers import assert_error
from tornchat.handlers.web import CONTENT_SECURITY_POLICY
from tornchat.web import STATIC_DIR, WebAssets, content_type

IMMUTABLE = "public, max-age=31536000, immutable"


def get(live, path: str, **kwargs) -> requests.Response:  # type: ignore[no-untyped-def]
    return requests.get(live.base_url + path, allow_redirects=False, **kwargs)


def current_hash(live) -> str:  # type: ignore[no-untyped-def]
    match = re.search(r'src="/static/([0-9a-f]{16})/app\.js"', get(live, "/").text)
    assert match, "index.html names no hashed app.js"
    return match[1]


def assert_web_headers(response: requests.Response) -> None:
    assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"


def test_index_is_served_at_the_root_with_hashed_asset_paths(live):
    response = get(live, "/")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.headers["Cache-Control"] == "no-cache"
    assert_web_headers(response)
    digest = WebAssets().hash
    assert f'src="/static/{digest}/app.js"' in response.text
    assert f'href="/static/{digest}/style.css"' in response.text
    # Nothing is left pointing at an unhashed asset, and nothing is inline (the CSP would refuse it).
    assert not re.search(r"""["']/static/(?![0-9a-f]{16}/)""", response.text)
    assert "<style" not in response.text and "style=" not in response.text
    assert not re.search(r"<script(?![^>]*\bsrc=)", response.text)


def test_index_revalidates_with_its_etag(live):
    first = get(live, "/")
    again = get(live, "/", headers={"If-None-Match": first.headers["Etag"]})
    assert again.status_code == 304 and again.content == b""


def test_head_has_the_headers_and_no_body(live):
    digest = current_hash(live)
    pages = [("/", "text/html; charset=utf-8"), (f"/static/{digest}/app.js", "text/javascript; charset=utf-8")]
    for path, kind in pages:
        connection = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
        connection.request("HEAD", path)
        response = connection.getresponse()
        assert response.status == 200
        assert response.getheader("Content-Type") == kind
        assert int(response.getheader("Content-Length")) == len(get(live, path).content)
        assert response.read() == b""
        connection.close()


def test_hashed_assets_are_cached_for_a_year_with_their_types(live):
    digest = current_hash(live)
    script = get(live, f"/static/{digest}/app.js")
    assert script.status_code == 200
    assert script.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert script.headers["Cache-Control"] == IMMUTABLE
    assert_web_headers(script)
    with open(f"{STATIC_DIR}/app.js", "rb") as handle:
        assert script.content == handle.read()
    style = get(live, f"/static/{digest}/style.css")
    assert style.headers["Content-Type"] == "text/css; charset=utf-8"
    assert style.headers["Cache-Control"] == IMMUTABLE


def test_every_module_is_javascript(live):
    digest = current_hash(live)
    for path in WebAssets().assets:
        if path.endswith(".js"):
            response = get(live, f"/static/{digest}/{path}")
            assert response.status_code == 200, path
            assert response.headers["Content-Type"] == "text/javascript; charset=utf-8", path


def test_emoji_names_are_every_zulip_name(live):
    response = get(live, f"/static/{current_hash(live)}/emoji-names.json")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    names = response.json()
    assert names == emoji.NAME_TO_CODE
    assert names["thumbs_up"] == "1f44d" and names["+1"] == "1f44d"


def test_unknown_file_is_a_json_404(live):
    digest = current_hash(live)
    for path in (f"/static/{digest}/nope.js", f"/static/{digest}/", "/static/app.js", "/static/", "/static//app.js"):
        response = get(live, path)
        assert_error(response, "Not Found", status=404)
        assert_web_headers(response)


def test_an_older_hash_is_redirected_to_the_current_one_uncached(live):
    digest = current_hash(live)
    stale = "0" * 16 if digest != "0" * 16 else "1" * 16
    response = get(live, f"/static/{stale}/app.js")
    assert response.status_code == 302
    assert response.headers["Location"] == f"/static/{digest}/app.js"
    assert response.headers["Cache-Control"] == "no-cache"
    # An older hash of a file this release does not have, or something that is no hash: 404.
    assert_error(get(live, f"/static/{stale}/gone.js"), "Not Found", status=404)
    assert_error(get(live, "/static/not-a-hash/app.js"), "Not Found", status=404)


def test_no_path_reaches_outside_the_static_files(live):
    digest = current_hash(live)
    for path in (
        f"/static/{digest}/../../app.py",
        f"/static/{digest}/%2e%2e/%2e%2e/app.py",
        f"/static/{digest}/..%2f..%2fapp.py",
        f"/static/{digest}/%2fetc%2fpasswd",
        f"/static/{digest}//etc/passwd",
        f"/static/{digest}/./app.js",
    ):
        connection = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
        connection.request("GET", path)  # sent as written: requests would normalise the dots
        response = connection.getresponse()
        assert response.status == 404, path
        assert json.loads(response.read())["msg"] == "Not Found"
        connection.close()


def test_other_methods_are_not_allowed(live):
    response = requests.post(live.base_url + "/", data={"a": "b"})
    assert response.status_code == 405
    assert response.json() == {"result": "error", "msg": "Method Not Allowed", "allowed_methods": ["GET", "HEAD"]}
    assert_web_headers(response)


def test_unknown_api_paths_stay_json_404s(live):
    for path in ("/api/v1/", "/api/v1/nope", "/api/", "/api/v2/users", "/nope"):
        response = get(live, path)
        assert_error(response, "Not Found", status=404)
        assert response.headers["Content-Type"] == "application/json"


def test_content_types_of_files_the_client_may_ship():
    assert content_type("a.js") == "text/javascript; charset=utf-8"
    assert content_type("b/c.CSS") == "text/css; charset=utf-8"
    assert content_type("icon.svg") == "image/svg+xml"
    assert content_type("logo.png") == "image/png"
    assert content_type("LICENSE") == "application/octet-stream"


def test_the_hash_covers_every_file_and_the_index_names_it(tmp_path):
    (tmp_path / "index.html").write_text("<link href=\"/static/style.css\"><script src='/static/app.js'></script>")
    (tmp_path / "app.js").write_text("1")
    (tmp_path / "style.css").write_text("a{}")
    (tmp_path / ".hidden").write_text("secret")
    first = WebAssets(str(tmp_path))
    assert set(first.assets) == {"app.js", "style.css", "emoji-names.json"}
    assert (
        first.index
        == (
            f"<link href=\"/static/{first.hash}/style.css\"><script src='/static/{first.hash}/app.js'></script>"
        ).encode()
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "more.js").write_text("2")
    second = WebAssets(str(tmp_path))
    assert second.hash != first.hash and second.get("sub/more.js") is not None
    (tmp_path / "app.js").write_text("3")
    assert WebAssets(str(tmp_path)).hash not in (first.hash, second.hash)


def test_without_an_index_the_root_is_a_404(tmp_path):
    assert WebAssets(str(tmp_path)).index is None
