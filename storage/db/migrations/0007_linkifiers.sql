-- 0007: linkifiers (Zulip's realm filters): patterns in message content and topics that become links.

-- AUTOINCREMENT: a linkifier id names one linkifier forever (clients reorder and edit by id).
-- pattern is unique per realm (one realm per database), compared after stripping, as typed.
-- sort_order: linkifiers apply in (sort_order, id) order; the first-listed wins an overlap.
CREATE TABLE linkifiers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pattern TEXT NOT NULL UNIQUE,
    url_template TEXT NOT NULL,                            -- RFC 6570, one variable per named group
    example_input TEXT,
    reverse_template TEXT,
    alternative_url_templates TEXT NOT NULL DEFAULT '[]',  -- JSON list of RFC 6570 templates
    sort_order INTEGER NOT NULL DEFAULT 0
);
-- GET /realm/linkifiers, POST /register and rendering: every linkifier by (sort_order, id).
CREATE INDEX linkifiers_by_order ON linkifiers (sort_order, id);

-- One row. version is bumped in the transaction of every linkifier change, so process caches
-- keyed on (token, version) (compiled patterns, topic links) go stale together with the list;
-- token tells databases apart when one process serves several (tests do).
CREATE TABLE linkifier_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    token TEXT NOT NULL,
    version INTEGER NOT NULL
);
INSERT INTO linkifier_state (id, token, version) VALUES (1, lower(hex(randomblob(8))), 0);
