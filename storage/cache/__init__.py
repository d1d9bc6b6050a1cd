"""What is kept in memory between requests, and how it is dropped: the change journal's readers.
Imports storage.db and storage.model.
"""
