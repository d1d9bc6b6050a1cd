"""Paths in the checkout, for tests that run its scripts or read its files from any test folder."""

from __future__ import annotations

import os

# The checkout: tests/support/paths.py is two folders below it.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
