"""Mobile push notifications: devices, registration, the outbox and the notifications themselves."""
