"""Zulip's default external account types: the services an administrator picks from for a custom
profile field of the external-account kind, each with the label users see and the URL its values link to.

POST /register sends them as realm_default_external_accounts (Zulip's get_default_external_accounts);
the Zulip mobile app requires the key. url_pattern "%(username)s" means users enter a full URL, and an
empty url_pattern means the value is plain text.
"""

from __future__ import annotations

from typing import Any

# subtype: (text shown to administrators, name shown on profiles, URL pattern), as Zulip lists them.
DEFAULT_EXTERNAL_ACCOUNTS: dict[str, tuple[str, str, str]] = {
    "behance": ("Behance", "Behance username", "https://www.behance.net/%(username)s"),
    "bitbucket": ("Bitbucket", "Bitbucket username", "https://bitbucket.org/%(username)s"),
    "bluesky": ("Bluesky", "Bluesky handle", "https://bsky.app/profile/%(username)s"),
    "codeberg": ("Codeberg", "Codeberg username", "https://codeberg.org/%(username)s"),
    "discord": ("Discord", "Discord tag", ""),
    "dribbble": ("Dribbble", "Dribbble username", "https://dribbble.com/%(username)s"),
    "facebook": ("Facebook", "Facebook username", "https://www.facebook.com/%(username)s"),
    "github": ("GitHub", "GitHub username", "https://github.com/%(username)s"),
    "gitlab": ("GitLab", "GitLab username", "https://gitlab.com/%(username)s"),
    "instagram": ("Instagram", "Instagram username", "https://www.instagram.com/%(username)s"),
    "linkedin": ("LinkedIn", "LinkedIn profile name", "https://www.linkedin.com/in/%(username)s"),
    "mastodon": ("Mastodon", "Mastodon profile", "%(username)s"),
    "medium": ("Medium", "Medium username", "https://%(username)s.medium.com"),
    "pinterest": ("Pinterest", "Pinterest username", "https://www.pinterest.com/%(username)s"),
    "reddit": ("Reddit", "Reddit username", "https://www.reddit.com/user/%(username)s"),
    "snapchat": ("Snapchat", "Snapchat username", "https://www.snapchat.com/@%(username)s"),
    "threads": ("Threads", "Threads username", "https://www.threads.com/@%(username)s"),
    "tiktok": ("TikTok", "TikTok username", "https://www.tiktok.com/@%(username)s"),
    "twitch": ("Twitch", "Twitch username", "https://www.twitch.tv/%(username)s"),
    "x": ("X", "X username", "https://x.com/%(username)s"),
    "youtube": ("YouTube", "YouTube handle", "https://www.youtube.com/%(username)s"),
}
# Only Mastodon asks for more than a user name, so only it carries a hint.
HINTS = {"mastodon": "The full URL to your profile"}


def default_external_accounts() -> dict[str, dict[str, Any]]:
    """Return realm_default_external_accounts: each subtype's name, text, hint and url_pattern."""
    return {
        subtype: {"name": name, "text": text, "hint": HINTS.get(subtype, ""), "url_pattern": url_pattern}
        for subtype, (text, name, url_pattern) in DEFAULT_EXTERNAL_ACCOUNTS.items()
    }
