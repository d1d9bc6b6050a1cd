"""The organization: the realm, users, groups, settings, presence, alert words, linkifiers,
realm emoji and custom profile fields.
"""
