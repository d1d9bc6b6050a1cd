-- 0009: presence (POST /users/me/presence), in Zulip's modern model: per user, when a client last
-- reported them connected and when last actively using it. Typing notifications store nothing.

-- One row per user who ever reported presence. Times are Unix seconds.
--   last_connected_time: the last report of any status (a client is open);
--   last_active_time: the last "active" report (NULL: never active; shown as date_joined, as Zulip);
--   last_update_id: the presence_sequence value of the row's last change, so that a polling client
--     asks only for rows changed since the last id it saw (Zulip's last_update_id protocol).
CREATE TABLE user_presences (
    user_id INTEGER PRIMARY KEY REFERENCES users (id),
    last_connected_time INTEGER NOT NULL,
    last_active_time INTEGER,
    last_update_id INTEGER NOT NULL
);
-- POST /users/me/presence with last_update_id, POST /register with presence_last_update_id:
-- WHERE last_update_id > ?.
CREATE INDEX user_presences_by_update ON user_presences (last_update_id);

-- The realm's presence change counter (one row): every write of a user_presences row takes the next
-- value. Never decreases, so a client's last_update_id never misses a later change.
CREATE TABLE presence_sequence (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_update_id INTEGER NOT NULL
);
INSERT INTO presence_sequence (id, last_update_id) VALUES (1, 0);
