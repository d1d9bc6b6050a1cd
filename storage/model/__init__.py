"""The plain types every layer reads: users, channels, the realm, roles, message flags, recipients,
what a message is sent to, and the one error type. Imports only storage.db.
"""
