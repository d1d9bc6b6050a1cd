"""The file-system side of uploads: names, paths, content types, atomic writes, temporary tokens.

Files live at DATA_DIR/uploads/{path_id} (the folder `tornchat backup` archives). A path_id is
chosen here, `{realm_id}/{random}/{sanitized name}`: the random part (144 bits) makes the URL
unguessable, and the client's file name only ever contributes its sanitized last component, so no
name can reach outside the folder. A new file is written to DATA_DIR/uploads-incoming first,
flushed to disk, then renamed into place: a reader never sees half a file.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import mimetypes
import os
import re
import secrets
import tempfile
import unicodedata
import urllib.parse

UPLOADS = "uploads"
INCOMING = "uploads-incoming"  # outside uploads/: a backup never archives a half-written file
MIB = 1024 * 1024
# Most Linux file systems allow 255 bytes per path component; the name is the last one.
MAX_FILE_NAME_BYTES = 255
FALLBACK_NAME = "uploaded-file"
OCTET_STREAM = "application/octet-stream"
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}")

# Types a browser may show in the page (Zulip's INLINE_MIME_TYPES without image/svg+xml, which can
# carry scripts). Every other type is served as application/octet-stream, as an attachment.
INLINE_TYPES = frozenset(
    {
        "application/pdf",
        "audio/aac", "audio/flac", "audio/mp4", "audio/mpeg", "audio/wav", "audio/webm",
        "image/apng", "image/avif", "image/gif", "image/jpeg", "image/png", "image/webp",
        "text/plain",
        "video/mp4", "video/webm",
    }
)  # fmt: skip
# Nothing in a served file may run scripts, load other resources or be framed by another site.
CONTENT_SECURITY_POLICY = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; object-src 'self'; frame-ancestors 'self'"  # noqa: E501

TEMPORARY_URL_SECONDS = 60
# Temporary URLs are signed with a key of this process: they outlive neither their minute nor a restart.
_TOKEN_KEY = secrets.token_bytes(32)


def uploads_root(data_dir: str) -> str:
    return os.path.join(data_dir, UPLOADS)


# -- names and types ---------------------------------------------------------------------------


def display_name(given: str) -> str:
    """The name a client gave, as kept and shown: its last path component, no NUL or control characters."""
    name = urllib.parse.unquote(given).replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch) != "Cc").strip()
    return truncate_file_name(name) or FALLBACK_NAME  # never a path, but bounded as one


def truncate_file_name(name: str, limit: int = MAX_FILE_NAME_BYTES) -> str:
    """Return the name cut to `limit` UTF-8 bytes, keeping its extension when that leaves room."""
    if len(name.encode()) <= limit:
        return name
    stem, extension = os.path.splitext(name)
    if len(extension.encode()) >= limit:
        stem, extension = name, ""
    return stem.encode()[: limit - len(extension.encode())].decode(errors="ignore") + extension


def sanitize_name(name: str) -> str:
    """Return a name safe as one path component and in a URL (Zulip's sanitize_name).

    Letters, digits, "_", "." and "-" are kept (Unicode letters too, after NFKC normalization); runs
    of spaces and dashes become one "-"; "", "." and ".." become "uploaded-file". Never contains "/".
    """
    value = unicodedata.normalize("NFKC", name)
    value = re.sub(r"[^\w\s.-]", "", value).strip()
    value = re.sub(r"[-\s]+", "-", value)
    value = truncate_file_name(value)
    return FALLBACK_NAME if value in ("", ".", "..") else value


def new_path_id(realm_id: int, name: str) -> str:
    """A fresh path_id for a file of this (client-given) name."""
    return f"{realm_id}/{secrets.token_urlsafe(18)}/{sanitize_name(name)}"


def content_type_for(given: str | None, name: str) -> str:
    """The part's media type if well formed, else a guess from the name's extension, else octet-stream."""
    bare = (given or "").split(";", 1)[0].strip().lower()
    if _MEDIA_TYPE.fullmatch(bare) and bare != "application/unknown":  # Tornado's "no type given"
        return bare
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed or OCTET_STREAM


def served_type(content_type: str) -> tuple[str, bool]:
    """(Content-Type to send, whether inline): only INLINE_TYPES keep their type and show in the page."""
    if content_type in INLINE_TYPES:
        return content_type, True
    return OCTET_STREAM, False


def content_disposition(path_id: str, inline: bool) -> str:
    """The Content-Disposition for a file: its sanitized name, as ASCII and RFC 8187 UTF-8."""
    name = path_id.rsplit("/", 1)[-1]
    ascii_name = name.encode("ascii", "replace").decode().replace("?", "_")
    quoted = urllib.parse.quote(name, safe="")
    return f"{'inline' if inline else 'attachment'}; filename=\"{ascii_name}\"; filename*=UTF-8''{quoted}"


# -- files ------------------------------------------------------------------------------------


def local_path(data_dir: str, path_id: str) -> str:
    """Where the file of a path_id lives; ValueError for a path_id leading outside uploads/."""
    parts = path_id.split("/")
    if any(part in ("", ".", "..") or "\x00" in part or "\\" in part for part in parts):
        raise ValueError(f"invalid path_id {path_id!r}")
    return os.path.join(uploads_root(data_dir), *parts)


def stage(data_dir: str, data: bytes) -> str:
    """Write the bytes to a new file under uploads-incoming/, on disk before returning; return its path."""
    incoming = os.path.join(data_dir, INCOMING)
    os.makedirs(incoming, mode=0o700, exist_ok=True)
    fd, path = tempfile.mkstemp(dir=incoming, prefix="upload-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        discard(path)
        raise
    return path


def install(data_dir: str, staged: str, path_id: str) -> None:
    """Move a staged file to its place (an atomic rename) and make the rename durable."""
    target = local_path(data_dir, path_id)
    folder = os.path.dirname(target)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.replace(staged, target)
    _fsync_directory(folder)


def remove(data_dir: str, path_id: str) -> None:
    """Delete a file and the folders its path_id created, if now empty; a missing file is no error."""
    target = local_path(data_dir, path_id)
    discard(target)
    root, folder = uploads_root(data_dir), os.path.dirname(target)
    while folder != root and folder.startswith(root + os.sep):
        try:
            os.rmdir(folder)
        except OSError:  # not empty (another file), or already gone
            break
        folder = os.path.dirname(folder)


def discard(path: str) -> None:
    """Delete a file if it exists."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _fsync_directory(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- temporary URLs (GET /user_uploads/temporary/{token}/{filename}) ----------------------------


def _signature(payload: bytes) -> str:
    digest = hmac.new(_TOKEN_KEY, payload, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def temporary_token(path_id: str, now: float) -> str:
    """A token naming the file and an expiry TEMPORARY_URL_SECONDS from now, signed with this process's key."""
    payload = f"{int(now) + TEMPORARY_URL_SECONDS}:{path_id}".encode()
    return base64.urlsafe_b64encode(payload).decode().rstrip("=") + "." + _signature(payload)


def path_id_of_token(token: str, now: float) -> str | None:
    """The path_id a token names, or None when it is malformed, forged or expired."""
    encoded, _, signature = token.partition(".")
    try:
        payload = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        expiry, _, path_id = payload.decode().partition(":")
        fresh = int(expiry) >= now
    except ValueError:  # bad Base64, not UTF-8, no number
        return None
    if not hmac.compare_digest(signature, _signature(payload)) or not fresh:
        return None
    return path_id
