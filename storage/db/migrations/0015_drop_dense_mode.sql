-- 0015: Zulip removed the dense_mode display setting at feature level 364 (web_font_size_px and
-- web_line_height_percent replace it). Rows users stored for it would never be read again.
DELETE FROM user_settings WHERE name = 'dense_mode';
