-- 0014: every write to linkifiers bumps linkifier_state.version in the same transaction, whatever
-- code path makes it. The compiled linkifier sets and topic links (storage/text/linkify.py) are kept
-- per process under (token, version): a write that did not bump the version would leave them stale
-- for every connection. Compiled sets read while a linkifier write is uncommitted are not kept
-- (storage/cache/journal.py), so the bump may come anywhere in the transaction.
CREATE TRIGGER linkifiers_version_insert AFTER INSERT ON linkifiers
BEGIN UPDATE linkifier_state SET version = version + 1; END;
CREATE TRIGGER linkifiers_version_update AFTER UPDATE ON linkifiers
BEGIN UPDATE linkifier_state SET version = version + 1; END;
CREATE TRIGGER linkifiers_version_delete AFTER DELETE ON linkifiers
BEGIN UPDATE linkifier_state SET version = version + 1; END;
