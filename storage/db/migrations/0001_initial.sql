-- 0001: realm, users, user groups, custom profile fields.
-- There is exactly one realm per database (one server, one organization); tables therefore carry
-- no realm_id column. Group-valued realm settings point at user_groups rows.

CREATE TABLE realm (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    email_host TEXT NOT NULL,            -- host of dummy API emails: user{id}@{email_host}
    date_created INTEGER NOT NULL,
    default_email_address_visibility INTEGER NOT NULL DEFAULT 1,
    enable_spectator_access INTEGER NOT NULL DEFAULT 0,
    topics_policy TEXT NOT NULL DEFAULT 'allow_empty_topic',
    message_retention_days INTEGER,     -- NULL: keep forever
    waiting_period_threshold INTEGER NOT NULL DEFAULT 0,
    can_access_all_users_group INTEGER REFERENCES user_groups (id),
    can_add_subscribers_group INTEGER REFERENCES user_groups (id),
    can_create_groups INTEGER REFERENCES user_groups (id),
    can_create_private_channel_group INTEGER REFERENCES user_groups (id),
    can_create_public_channel_group INTEGER REFERENCES user_groups (id),
    can_create_web_public_channel_group INTEGER REFERENCES user_groups (id),
    can_delete_any_message_group INTEGER REFERENCES user_groups (id),
    can_delete_own_message_group INTEGER REFERENCES user_groups (id),
    can_manage_all_groups INTEGER REFERENCES user_groups (id),
    can_set_delete_message_policy_group INTEGER REFERENCES user_groups (id),
    can_set_topics_policy_group INTEGER REFERENCES user_groups (id)
);

CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    delivery_email TEXT NOT NULL COLLATE NOCASE UNIQUE,  -- also serves the login/auth lookup by email
    full_name TEXT NOT NULL,
    password_hash TEXT,                  -- scrypt$n$r$p$salt_hex$hash_hex; NULL: no usable password
    api_key TEXT NOT NULL UNIQUE,
    role INTEGER NOT NULL CHECK (role IN (100, 200, 300, 400, 600)),
    is_active INTEGER NOT NULL DEFAULT 1,
    is_bot INTEGER NOT NULL DEFAULT 0,
    bot_type INTEGER,
    bot_owner_id INTEGER REFERENCES users (id),
    timezone TEXT NOT NULL DEFAULT '',
    date_joined INTEGER NOT NULL,
    avatar_source TEXT NOT NULL DEFAULT 'G',  -- 'G': gravatar, 'U': uploaded
    avatar_version INTEGER NOT NULL DEFAULT 1,
    email_address_visibility INTEGER NOT NULL DEFAULT 1,
    is_imported_stub INTEGER NOT NULL DEFAULT 0,
    can_create_users INTEGER NOT NULL DEFAULT 0,
    can_change_user_emails INTEGER NOT NULL DEFAULT 0,
    enable_drafts_synchronization INTEGER NOT NULL DEFAULT 1,
    last_active INTEGER                  -- unix seconds of the last authenticated request
);

-- Named groups (name set), system groups and anonymous setting-only groups (name NULL) share
-- one id sequence, as group-setting values refer to any of them by id.
CREATE TABLE user_groups (
    id INTEGER PRIMARY KEY,
    name TEXT UNIQUE COLLATE NOCASE,
    description TEXT NOT NULL DEFAULT '',
    is_system_group INTEGER NOT NULL DEFAULT 0,
    creator_id INTEGER REFERENCES users (id),
    date_created INTEGER,
    deactivated INTEGER NOT NULL DEFAULT 0,
    can_add_members_group INTEGER REFERENCES user_groups (id) DEFERRABLE INITIALLY DEFERRED,
    can_join_group INTEGER REFERENCES user_groups (id) DEFERRABLE INITIALLY DEFERRED,
    can_leave_group INTEGER REFERENCES user_groups (id) DEFERRABLE INITIALLY DEFERRED,
    can_manage_group INTEGER REFERENCES user_groups (id) DEFERRABLE INITIALLY DEFERRED,
    can_mention_group INTEGER REFERENCES user_groups (id) DEFERRABLE INITIALLY DEFERRED,
    can_remove_members_group INTEGER REFERENCES user_groups (id) DEFERRABLE INITIALLY DEFERRED
);

-- Direct members. The primary key serves "members of group G"; the second index serves
-- "groups user U is directly in", the first step of every permission check.
CREATE TABLE user_group_members (
    group_id INTEGER NOT NULL REFERENCES user_groups (id),
    user_id INTEGER NOT NULL REFERENCES users (id),
    PRIMARY KEY (group_id, user_id)
) WITHOUT ROWID;
CREATE INDEX user_group_members_by_user ON user_group_members (user_id, group_id);

-- Direct subgroups. The primary key serves the recursive walk down from a setting's group.
CREATE TABLE user_group_subgroups (
    supergroup_id INTEGER NOT NULL REFERENCES user_groups (id),
    subgroup_id INTEGER NOT NULL REFERENCES user_groups (id),
    PRIMARY KEY (supergroup_id, subgroup_id)
) WITHOUT ROWID;
CREATE INDEX user_group_subgroups_by_subgroup ON user_group_subgroups (subgroup_id, supergroup_id);

CREATE TABLE custom_profile_fields (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    hint TEXT NOT NULL DEFAULT '',
    field_type INTEGER NOT NULL,
    field_data TEXT NOT NULL DEFAULT '',  -- JSON: select options, or '' when the type has none
    "order" INTEGER NOT NULL,
    display_in_profile_summary INTEGER NOT NULL DEFAULT 0,
    required INTEGER NOT NULL DEFAULT 0,
    editable_by_user INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE custom_profile_field_values (
    user_id INTEGER NOT NULL REFERENCES users (id),
    field_id INTEGER NOT NULL REFERENCES custom_profile_fields (id),
    value TEXT NOT NULL,                 -- users fields: JSON list of user ids
    rendered_value TEXT,                 -- HTML for Markdown-capable fields
    PRIMARY KEY (user_id, field_id)
) WITHOUT ROWID;
