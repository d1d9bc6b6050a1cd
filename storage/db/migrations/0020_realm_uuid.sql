-- 0020: the realm's UUID and its owner secret, which a Zulip push bouncer knows the organization by
-- (Zulip's Realm.uuid and uuid_owner_secret). Existing realms get random ones here; new realms get
-- theirs from storage/org/realm.py create_realm. The UUID is a version 4 UUID in canonical form.
ALTER TABLE realm ADD COLUMN uuid TEXT;
ALTER TABLE realm ADD COLUMN uuid_owner_secret TEXT;
UPDATE realm SET
    uuid = lower(
        hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-'
        || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-'
        || hex(randomblob(6))
    ),
    uuid_owner_secret = 'zuliprealm_' || lower(hex(randomblob(24)))
WHERE uuid IS NULL;
