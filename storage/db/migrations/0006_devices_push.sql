-- 0006: client devices, end-to-end-encrypted push registrations, legacy push tokens, and the
-- outbox of requests to the push service.

-- A logged-in client device (POST /register_client_device). Its push state, when the client
-- registers for end-to-end-encrypted notifications (POST /mobile_push/register):
--   push_key: the one-byte cryptosystem tag (0x31: secret-box) followed by the 32-byte key;
--   push_token_id: the token registered at the push service (first 8 bytes of SHA-256 of the
--     FCM/APNs token, standard Base64), with its kind;
--   pending_push_token_id: a token whose registration was sent but not yet confirmed;
--   push_registration_error_code: why the last registration failed (NULL while pending or done).
-- AUTOINCREMENT: a device id names one device forever, never reused after a removal.
CREATE TABLE devices (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (id),
    date_created INTEGER NOT NULL,                  -- Unix seconds
    push_key BLOB,
    push_key_id INTEGER CHECK (push_key_id BETWEEN 0 AND 4294967295),
    push_token_kind TEXT CHECK (push_token_kind IN ('fcm', 'apns')),
    push_token_id TEXT,
    pending_push_token_kind TEXT CHECK (pending_push_token_kind IN ('fcm', 'apns')),
    pending_push_token_id TEXT,
    push_token_last_updated_timestamp INTEGER,      -- Unix seconds of the last token registration
    push_registration_error_code TEXT
);
-- POST /register's devices state and ownership checks: user_id = ?.
CREATE INDEX devices_by_user ON devices (user_id, id);

-- Legacy (unencrypted) push registrations of older mobile apps: the raw FCM/APNs token.
-- An end-to-end-encrypted registration of the same token replaces them.
CREATE TABLE legacy_push_tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (id),
    kind TEXT NOT NULL CHECK (kind IN ('fcm', 'apns')),
    token TEXT NOT NULL,
    ios_app_id TEXT,
    date_created INTEGER NOT NULL,
    UNIQUE (user_id, kind, token)
);

-- Requests waiting to reach the push service, kept until it accepts them, so a restart or an
-- unreachable service loses none. kind 'register' forwards a device's token registration;
-- kind 'notify' carries one encrypted notification (user_id, message_id say which, so a read or
-- deleted message can withdraw it while it waits). body is the JSON sent.
CREATE TABLE push_outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    device_id INTEGER NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('register', 'notify')),
    user_id INTEGER,
    message_id INTEGER,
    body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,                  -- Unix seconds: not sent before this
    created INTEGER NOT NULL
);
-- The sender: next_attempt_at <= now ORDER BY next_attempt_at.
CREATE INDEX push_outbox_due ON push_outbox (next_attempt_at);
-- Withdrawing a waiting notification: user_id = ? AND message_id = ?.
CREATE INDEX push_outbox_by_message ON push_outbox (message_id, user_id) WHERE message_id IS NOT NULL;
