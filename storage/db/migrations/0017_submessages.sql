-- 0017: submessages, the data of message widgets (polls and to-do lists), as Zulip keeps them.
--
-- A widget message's first submessage (msg_type "widget") is written with the message: its content
-- is JSON naming the widget and its initial data. Later ones (votes, new options, tasks) come from
-- POST /submessage. Message objects list a message's submessages oldest first (id order); deleting
-- the message deletes them (storage/messages/message_delete.py).
CREATE TABLE submessages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,           -- clients order a widget's events by it
    message_id INTEGER NOT NULL REFERENCES messages (id),
    sender_id INTEGER NOT NULL REFERENCES users (id),
    msg_type TEXT NOT NULL,
    content TEXT NOT NULL                           -- a JSON text, stored as the client sent it
);
-- A message object's submessages (message_objects.SUBMESSAGES_SQL: WHERE message_id = ? ORDER BY id),
-- and deleting a message's.
CREATE INDEX submessages_by_message ON submessages (message_id, id);
