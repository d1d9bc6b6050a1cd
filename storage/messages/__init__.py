"""Writing messages: send, render, edit, move, delete, reactions, flags, scheduled messages, drafts,
saved snippets, typing notifications, attachments and the notification bot.
"""
