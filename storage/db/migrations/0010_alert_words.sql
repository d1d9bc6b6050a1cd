-- 0010: alert words, the words and phrases a user wants to be alerted to (has_alert_word flag).

-- word keeps the spelling the user typed (GET /users/me/alert_words lists it); word_key is its
-- lower() form: a user has one alert word per key, and matching is case-insensitive on it.
-- Listed in insertion order (id), as Zulip lists them.
CREATE TABLE alert_words (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (id),
    word TEXT NOT NULL,
    word_key TEXT NOT NULL
);
-- Sending: the alert words of a message's receivers (WHERE user_id IN ...); uniqueness per user.
CREATE UNIQUE INDEX alert_words_by_user ON alert_words (user_id, word_key);
