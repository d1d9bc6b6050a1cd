-- 0018: uploaded avatars, and the server's Gravatar switch.
--
-- An uploaded avatar is two PNG files in the data directory (uploads/avatars/{avatar_file}.png, 100x100,
-- and {avatar_file}-medium.png, 500x500), named by the server with random hex: the URL, served without
-- credentials as Zulip serves /user_avatars/, cannot be guessed from a user id. NULL: nothing uploaded
-- (avatar_source 'G'), and the avatar is the generated default (or Gravatar, when the server allows it).
ALTER TABLE users ADD COLUMN avatar_file TEXT;

-- Zulip's ENABLE_GRAVATAR, off here by default: a server setting (tornchat/settings.py: enable_gravatar)
-- written at every start, kept on the realm row so that every layer reading the realm sees it.
ALTER TABLE realm ADD COLUMN enable_gravatar INTEGER NOT NULL DEFAULT 0;

-- The realm's uploaded icon, logo and night logo (POST /realm/icon, /realm/logo): like avatars, random
-- names under uploads/realm/ (NULL: the server's default), and a version each change bumps (the URLs'
-- ?version=, as Zulip's).
ALTER TABLE realm ADD COLUMN icon_file TEXT;
ALTER TABLE realm ADD COLUMN icon_version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE realm ADD COLUMN logo_file TEXT;
ALTER TABLE realm ADD COLUMN logo_version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE realm ADD COLUMN night_logo_file TEXT;
ALTER TABLE realm ADD COLUMN night_logo_version INTEGER NOT NULL DEFAULT 1;
