"""Reading messages: who may read one, narrows, the range query, message objects and encoded pages."""
