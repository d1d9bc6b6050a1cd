"""The database file and what sits beside it: the connection, transactions, migrations, the schema,
the WAL checkpointer, backups and the uploads folder. Imports nothing else of storage.
"""
