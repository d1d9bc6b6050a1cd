"""Delivery of scheduled messages, driven by the IOLoop.

This package does not import `tornchat`: `tornchat/server.py` hands the Scheduler a database, a
clock and a `call_later` (the IOLoop's), and tells it to re-arm when scheduled messages change.
"""

from scheduler.delivery import Scheduler, deliver_due

__all__ = ["Scheduler", "deliver_due"]
