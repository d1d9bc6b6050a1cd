"""Serving HTTPS directly: --tls-cert/--tls-key, a self-signed certificate made with openssl at test time."""

from __future__ import annotations

import logging
import os
import ssl
import subprocess
import urllib.error
import urllib.request

import pytest
import urllib3
import zulip

from tests.support.cli_helpers import read_zuliprc, serving
from tests.support.helpers import free_port
from tornchat import cli
from tornchat.settings import CONFIG_FILE, load_settings
from tornchat.tls import make_ssl_context


def make_certificate(directory, name: str, *extra: str) -> tuple[str, str]:
    """A self-signed P-256 certificate for 127.0.0.1 and its key (PEM files): (cert, key)."""
    cert, key = os.path.join(directory, f"{name}.crt"), os.path.join(directory, f"{name}.key")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-days", "2"]
        + ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert]
        + list(extra or ["-nodes"]),
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def pair(tmp_path):
    return make_certificate(tmp_path, "server")


@pytest.fixture
def no_ca_bundle_variables(monkeypatch):
    """requests prefers these variables to the zulip client's own cert_bundle (and to insecure=True)."""
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)


def test_serve_speaks_https_and_writes_an_https_zuliprc(tmp_path, pair, no_ca_bundle_variables):
    cert, key = pair
    data_dir, port = str(tmp_path / "data"), free_port()
    with serving("--data-dir", data_dir, "--port", str(port), "--tls-cert", cert, "--tls-key", key) as lines:
        site = f"https://127.0.0.1:{port}"
        assert lines[-1] == f"Serving Tornchat at {site}\n"
        zuliprc = os.path.join(data_dir, "zuliprc")
        assert read_zuliprc(zuliprc)["site"] == site
        # The zulip client, trusting the certificate as its CA bundle, then not verifying it.
        own = zulip.Client(config_file=zuliprc, cert_bundle=cert).get_profile()
        assert (own["result"], own["is_owner"]) == ("success", True)
        with pytest.warns(urllib3.exceptions.InsecureRequestWarning):
            assert zulip.Client(config_file=zuliprc, insecure=True).get_profile()["result"] == "success"
        # The server's certificate is the one given: unknown to the default CAs, valid for this one.
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            urllib.request.urlopen(f"{site}/api/v1/server_settings", timeout=10)
        trusting = ssl.create_default_context(cafile=cert)
        with urllib.request.urlopen(f"{site}/api/v1/server_settings", timeout=10, context=trusting) as response:
            assert response.status == 200
        # Plain HTTP gets no answer on the TLS port.
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/server_settings", timeout=10)


def test_tls_from_the_file_with_paths_relative_to_the_data_directory(tmp_path, no_ca_bundle_variables):
    data_dir, port = tmp_path / "data", free_port()
    data_dir.mkdir()
    cert, _ = make_certificate(data_dir, "site")
    (data_dir / CONFIG_FILE).write_text(f'port = {port}\ntls_cert = "site.crt"\ntls_key = "site.key"\n')
    with serving("--data-dir", str(data_dir)) as lines:
        assert lines[-1] == f"Serving Tornchat at https://127.0.0.1:{port}\n"
        client = zulip.Client(config_file=str(data_dir / "zuliprc"), cert_bundle=cert)
        assert client.get_profile()["result"] == "success"


def test_tls_from_the_environment_and_the_default_site(tmp_path, pair):
    cert, key = pair
    environ = {"TORNCHAT_TLS_CERT": cert, "TORNCHAT_TLS_KEY": key, "TORNCHAT_PORT": "8443"}
    settings = load_settings({"data_dir": str(tmp_path)}, environ)
    assert (settings.tls_cert, settings.tls_key, settings.site_url) == (cert, key, "https://127.0.0.1:8443")
    given = load_settings({"data_dir": str(tmp_path), "site": "https://chat.example.com"}, environ)
    assert given.site_url == "https://chat.example.com"
    assert load_settings({"data_dir": str(tmp_path)}, {}).site_url == "http://127.0.0.1:9991"


def test_the_context_allows_tls_1_2_and_newer_only(pair):
    context = make_ssl_context(*pair)
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert context.protocol == ssl.PROTOCOL_TLS_SERVER


def serve_error(tmp_path, capsys, monkeypatch, *args: str, environ: dict[str, str] | None = None) -> str:
    """Run `serve` in process where it must refuse to start: its stderr line, after checking nothing exists."""
    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: None)  # keep the test run's logging as it is
    for name, value in (environ or {}).items():
        monkeypatch.setenv(name, value)
    data_dir = tmp_path / "data"
    assert cli.main(["serve", "--data-dir", str(data_dir), *args]) == 1
    assert not data_dir.exists(), "refused before creating anything"
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    return err


def test_a_certificate_needs_its_key(tmp_path, capsys, monkeypatch, pair):
    cert, key = pair
    err = serve_error(tmp_path, capsys, monkeypatch, "--tls-cert", cert)
    assert err == "tornchat: --tls-cert and --tls-key must be given together\n"
    err = serve_error(tmp_path, capsys, monkeypatch, environ={"TORNCHAT_TLS_KEY": key})
    assert err == "tornchat: TORNCHAT_TLS_CERT and TORNCHAT_TLS_KEY must be given together\n"


def test_unreadable_files_are_refused(tmp_path, capsys, monkeypatch, pair):
    cert, key = pair
    missing = str(tmp_path / "missing.crt")
    err = serve_error(tmp_path, capsys, monkeypatch, "--tls-cert", missing, "--tls-key", key)
    assert err == f"tornchat: cannot read TLS certificate {missing}: No such file or directory\n"
    err = serve_error(tmp_path, capsys, monkeypatch, "--tls-cert", cert, "--tls-key", str(tmp_path))
    assert err == f"tornchat: cannot read TLS key {tmp_path}: Is a directory\n"


def test_files_that_are_not_pem_are_refused(tmp_path, capsys, monkeypatch, pair):
    cert, key = pair
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    err = serve_error(tmp_path, capsys, monkeypatch, "--tls-cert", str(junk), "--tls-key", key)
    assert err == f"tornchat: TLS certificate {junk} holds no PEM certificate\n"
    err = serve_error(tmp_path, capsys, monkeypatch, "--tls-cert", key, "--tls-key", key)
    assert err == f"tornchat: TLS certificate {key} holds no PEM certificate\n"
    err = serve_error(tmp_path, capsys, monkeypatch, "--tls-cert", cert, "--tls-key", cert)
    assert err == f"tornchat: TLS key {cert} holds no PEM private key\n"


def test_a_key_of_another_certificate_is_refused(tmp_path, capsys, monkeypatch, pair):
    cert, _ = pair
    _, other_key = make_certificate(tmp_path, "other")
    err = serve_error(tmp_path, capsys, monkeypatch, "--tls-cert", cert, "--tls-key", other_key)
    assert err == f"tornchat: TLS key {other_key} does not match the certificate {cert}\n"


def test_a_key_with_a_passphrase_is_refused_without_asking(tmp_path, capsys, monkeypatch):
    cert, key = make_certificate(tmp_path, "locked", "-passout", "pass:secret-words")
    with open(key) as handle:
        assert "ENCRYPTED" in handle.read()
    err = serve_error(tmp_path, capsys, monkeypatch, "--tls-cert", cert, "--tls-key", key)
    assert err == f"tornchat: TLS key {key} is protected by a passphrase: give a key without one\n"
