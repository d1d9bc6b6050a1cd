"""Text: Markdown, emoji, linkifiers applied to text and topics, search highlights."""
