"""Real-time events: from the publish call to the long-polls of GET /events.

Bottom up (each module imports only those before it):
  bus       the publish call every action's events go through after their commit, and its listeners
  body      an event as queues hold it: its JSON encoded once, its size (what a queue is charged)
  gc_hold   holding the cyclic garbage collector off while a wave of long-polls is answered
  queue     one client's queue: its events, its options, its limits, acknowledgements
  forms     what one queue receives of an event: its form (content, avatars, topics, flags), its narrow
  saved     the saved-queues file (event_queues.json), written at shutdown and read at the next start
  registry  every queue of the process (EventQueues): creation, expiry, delivery of each published event

The HTTP side (POST /register, GET and DELETE /events) is in tornchat/handlers/events.py.
"""
