"""POST /register: the initial state of every kind a client asks for, built in one read."""
