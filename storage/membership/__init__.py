"""Subscriptions: who is in which channel, their per-channel settings, and new accounts or channels
together with their first subscriptions (these send notification-bot messages).
"""
