"""Delivery of scheduled messages, driven by the IOLoop (arrives with the scheduled-messages issue).

This package must not import `tornchat`: `tornchat/app.py` hands it a clock and a callback.
"""
