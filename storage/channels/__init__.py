"""Channels, who may see them, their topics and folders, and each user's topic settings."""
