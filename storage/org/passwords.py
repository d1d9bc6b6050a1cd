"""Password hashing (scrypt, per-user salt) and API key generation."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string

# scrypt cost: n=2**14, r=8, p=1 takes ~40 ms and 16 MiB, paid only at login and account creation.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
# Longest new password (characters): Zulip's registration and password forms allow 100.
MAX_PASSWORD_LENGTH = 100
# Longest password a login may send. scrypt's cost barely depends on the length, but hashing 10 MB
# took 160 ms of the event loop; 1,024 bounds it and still admits any password set before the
# limit above existed (Django once capped passwords at 4,096 for the same reason).
MAX_LOGIN_PASSWORD_LENGTH = 1024
# Checked when the username names no account, so that a failed login costs the same whether or
# not the user exists (no password hashes to these zero bytes).
DUMMY_HASH = f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${'00' * 16}${'00' * 32}"
API_KEY_ALPHABET = string.ascii_letters + string.digits
API_KEY_LENGTH = 32


def hash_password(password: str) -> str:
    """Return the stored form `scrypt$n$r$p$salt$hash` of a password, with a fresh salt."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


def check_password(password: str, stored: str | None) -> bool:
    """Return whether the password matches the stored hash (False when there is none)."""
    if not stored:
        return False
    try:
        scheme, n, r, p, salt_hex, digest_hex = stored.split("$")
        if scheme != "scrypt":
            return False
        digest = hashlib.scrypt(password.encode(), salt=bytes.fromhex(salt_hex), n=int(n), r=int(r), p=int(p), dklen=32)
    except ValueError:
        return False
    return hmac.compare_digest(digest.hex(), digest_hex)


def generate_api_key() -> str:
    """Return a new random 32-character alphanumeric API key."""
    return "".join(secrets.choice(API_KEY_ALPHABET) for _ in range(API_KEY_LENGTH))


def is_well_formed_api_key(key: str) -> bool:
    return len(key) == API_KEY_LENGTH and key.isascii() and key.isalnum()
