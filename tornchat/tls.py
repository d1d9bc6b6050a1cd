"""Serving HTTPS directly: the SSL context built from --tls-cert and --tls-key, checked at start."""

from __future__ import annotations

import ssl


class _EncryptedKey(Exception):
    """Raised by the password callback: a key with a passphrase cannot be read unattended."""


def _no_passphrase() -> str:
    raise _EncryptedKey


def make_ssl_context(cert: str, key: str) -> ssl.SSLContext:
    """Return a server context (TLS 1.2 or newer) holding the chain in `cert` and its key in `key`.

    Raise ValueError with a one-line reason when a file is unreadable, is not PEM, the key is
    protected by a passphrase or does not belong to the certificate.
    """
    for label, path in (("certificate", cert), ("key", key)):
        try:
            with open(path, "rb"):
                pass
        except OSError as error:
            raise ValueError(f"cannot read TLS {label} {path}: {error.strerror}") from None
    try:
        ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cert)
    except (ssl.SSLError, ValueError):
        raise ValueError(f"TLS certificate {cert} holds no PEM certificate") from None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key, password=_no_passphrase)
    except _EncryptedKey:
        raise ValueError(f"TLS key {key} is protected by a passphrase: give a key without one") from None
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            raise ValueError(f"TLS key {key} does not match the certificate {cert}") from None
        raise ValueError(f"TLS key {key} holds no PEM private key") from None
    return context
