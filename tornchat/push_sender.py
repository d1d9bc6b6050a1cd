"""The sender: delivers the push outbox to Zulip's push bouncer, on the IOLoop.

Rows are committed before any attempt (storage/push/push_outbox.py), so the sender only ever reads
what is due, sends it with Tornado's AsyncHTTPClient (timeouts set, a bounded number at once, so a
slow or hanging bouncer never blocks the loop or other requests), and records the outcome, by the
rules of tornchat/push_bouncer.py: 200 deletes the row; a 4xx answer the administrator must fix
(credentials, the realm unknown to the bouncer: then the realm is uploaded again) is retried, any
other 4xx is a permanent refusal (the row is deleted and its kind's outcome handler told why); a
5xx answer, a timeout or no connection pushes the next attempt back with exponential backoff. A
row still undelivered after a day is dropped as REQUEST_EXPIRED. One IOLoop timer is armed for the
next due row; `enqueue` wakes the sender after its commit. Tests drive it without sleeping through
`send_due()`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.parse
from collections.abc import Callable
from typing import Any

import tornado.httpclient

from storage.db.database import Database
from storage.db.tx import Tx
from storage.model.realm import get_realm
from storage.push import push_outbox
from storage.push.push_outbox import OutboxRow
from tornchat import push_bouncer

log = logging.getLogger("tornchat.push")

# outcome(tx, row, error_code): the bouncer accepted the row (error_code None) or refused it for good.
OutcomeHandler = Callable[[Tx, OutboxRow, str | None], None]
# forget(tx, token_ids): the bouncer no longer knows these tokens (a notify answer's delete_token_ids).
ForgetHandler = Callable[[Tx, list[str]], None]
CallLater = Callable[[float, Callable[[], None]], Any]

CONCURRENCY = 8
CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT = 20.0
# The timer re-checks at least this often, so a clock moved by hand is noticed too.
MAX_TIMER_SECONDS = 60.0
MIN_TIMER_SECONDS = 0.01
SENT = "sent"
RETRY = "retry"
# The bouncer endpoint of each outbox kind, and how its body is sent.
ENDPOINTS = {"register": "push/e2ee/register", "notify": "push/e2ee/notify"}
FORM_KINDS = frozenset({"register"})


class BouncerConfig:
    """Where the bouncer is and how this server signs in to it."""

    def __init__(self, url: str, org_id: str, org_key: str) -> None:
        self.url, self.org_id, self.org_key = url, org_id, org_key


class PushSender:
    """Sends due push_outbox rows to the bouncer's E2EE register and notify endpoints."""

    def __init__(
        self,
        db: Database,
        clock: Callable[[], float],
        bouncer: BouncerConfig,
        call_later: CallLater,
        cancel_timer: Callable[[Any], None],
        handlers: dict[str, OutcomeHandler] | None = None,
        concurrency: int = CONCURRENCY,
        forget_tokens: ForgetHandler | None = None,
    ) -> None:
        self.db = db
        self.clock = clock
        self.bouncer = bouncer
        self.forget_tokens = forget_tokens
        self.call_later = call_later
        self.cancel_timer = cancel_timer
        self.handlers = dict(handlers or {})
        self.concurrency = concurrency
        self.inflight: dict[int, asyncio.Future[None]] = {}
        self.stopped = True
        self._timer: Any = None
        self._wake_pending = False
        self._http: tornado.httpclient.AsyncHTTPClient | None = None

    def start(self) -> None:
        """Start on the running loop: send what waited in the table, then follow enqueues."""
        self.stopped = False
        self._http = tornado.httpclient.AsyncHTTPClient(force_instance=True, max_clients=self.concurrency)
        push_outbox.register_waker(self.db.conn, self.wake)
        self.wake()

    def stop(self) -> None:
        """Stop sending; requests in flight are abandoned and their rows stay for the next start."""
        self.stopped = True
        push_outbox.register_waker(self.db.conn, None)
        self._cancel()
        for future in self.inflight.values():
            future.cancel()
        if self._http is not None:
            self._http.close()
            self._http = None

    def wake(self) -> None:
        """Look for due rows on the next loop iteration (called after commits that enqueued)."""
        if self.stopped or self._wake_pending:
            return
        self._wake_pending = True
        self.call_later(0, self._on_wake)

    async def send_due(self) -> None:
        """Send everything due now and wait until nothing is in flight (what tests call)."""
        while not self.stopped:
            self._spawn_due()
            if not self.inflight:
                return
            await asyncio.gather(*list(self.inflight.values()), return_exceptions=True)

    # -- internals ------------------------------------------------------------------------------

    def _on_wake(self) -> None:
        self._wake_pending = False
        self._timer = None
        if not self.stopped:
            self._spawn_due()

    def _spawn_due(self) -> None:
        capacity = self.concurrency - len(self.inflight)
        if capacity > 0:
            rows = self.db.read(push_outbox.list_due, self.clock(), capacity, list(self.inflight))
            for row in rows:
                self.inflight[row.id] = asyncio.ensure_future(self._send(row))
        self._arm()

    def _arm(self) -> None:
        """Arm the one timer for the next row not in flight (a finishing send re-checks anyway)."""
        self._cancel()
        if self.stopped or len(self.inflight) >= self.concurrency:
            return
        next_at = self.db.read(push_outbox.next_due_at, list(self.inflight))
        if next_at is None:
            return
        delay = min(max(next_at - self.clock(), MIN_TIMER_SECONDS), MAX_TIMER_SECONDS)
        self._timer = self.call_later(delay, self._on_wake)

    def _cancel(self) -> None:
        if self._timer is not None:
            self.cancel_timer(self._timer)
            self._timer = None

    async def _send(self, row: OutboxRow) -> None:
        try:
            outcome = await self._attempt(row)
            if not self.stopped:
                self.db.write(self._record, row, outcome)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("push outbox row %d: unexpected failure; it stays for a later attempt", row.id)
            if not self.stopped:
                self.db.write(lambda tx: push_outbox.retry_later(tx, row.id))
        finally:
            self.inflight.pop(row.id, None)
            if not self.stopped:
                self._spawn_due()

    async def _attempt(self, row: OutboxRow) -> str:
        """Return SENT, RETRY, or the error code of a permanent refusal."""
        if push_outbox.is_expired(row, self.clock()):
            log.warning("push outbox row %d (%s) expired undelivered after %d attempts", row.id, row.kind, row.attempts)
            return "REQUEST_EXPIRED"
        endpoint = ENDPOINTS[row.kind]
        if row.kind in FORM_KINDS:
            content_type, body = "application/x-www-form-urlencoded", urllib.parse.urlencode(row.body)
        else:
            content_type, body = "application/json", json.dumps(row.body)
        response = await self._fetch("POST", endpoint, content_type, body)
        if response is None:
            log.info("push bouncer unreachable for outbox row %d", row.id)
            return RETRY
        if response.code == 200:
            if row.kind == "notify":
                self._forget(response.body)
            return SENT
        verdict, code, msg = push_bouncer.classify(response.code, response.body)
        if verdict == "refused":
            log.info("push bouncer refused outbox row %d (%s): HTTP %d %s", row.id, row.kind, response.code, code)
            return code
        if code == push_bouncer.MISSING_REMOTE_REALM:
            await self._upload_realm()
        if response.code >= 500:
            log.info("push bouncer unavailable for outbox row %d: HTTP %d", row.id, response.code)
        else:
            log.error("push bouncer refused outbox row %d (%s) until its administrator acts: %s %s",
                      row.id, row.kind, code, msg)  # fmt: skip
        return RETRY

    async def _fetch(
        self, method: str, endpoint: str, content_type: str | None = None, body: str | None = None
    ) -> tornado.httpclient.HTTPResponse | None:
        """Send one authenticated request to the bouncer; None when no answer came."""
        assert self._http is not None
        headers = {
            "Authorization": push_bouncer.basic_auth(self.bouncer.org_id, self.bouncer.org_key),
            "User-Agent": push_bouncer.USER_AGENT,
        }
        if content_type is not None:
            headers["Content-Type"] = content_type
        request = tornado.httpclient.HTTPRequest(
            push_bouncer.endpoint_url(self.bouncer.url, endpoint),
            method=method,
            headers=headers,
            body=body,
            connect_timeout=CONNECT_TIMEOUT,
            request_timeout=REQUEST_TIMEOUT,
        )
        try:
            return await self._http.fetch(request, raise_error=False)
        except (OSError, tornado.httpclient.HTTPClientError) as error:
            # No connection, a timeout, a reset: the bouncer may come back.
            log.info("push bouncer unreachable: %s", error)
            return None

    async def _upload_realm(self) -> None:
        """Tell the bouncer of the realm again (it answered MISSING_REMOTE_REALM)."""
        realm = self.db.read(get_realm)
        form = urllib.parse.urlencode(push_bouncer.analytics_form(realm))
        response = await self._fetch("POST", "server/analytics", "application/x-www-form-urlencoded", form)
        if response is None or response.code != 200:
            answer = "no answer" if response is None else f"HTTP {response.code}"
            log.error("push bouncer: uploading the realm failed: %s", answer)
        else:
            log.info("push bouncer: the realm %s was uploaded again", realm.uuid)

    def _forget(self, body: bytes | None) -> None:
        """Clear the tokens a notify answer says the bouncer no longer knows."""
        try:
            token_ids = json.loads(body or b"").get("delete_token_ids") or []
        except (ValueError, AttributeError):
            return
        if token_ids and self.forget_tokens is not None and not self.stopped:
            self.db.write(self.forget_tokens, [t for t in token_ids if isinstance(t, str)])

    def _record(self, tx: Tx, row: OutboxRow, outcome: str) -> None:
        if outcome == RETRY:
            push_outbox.retry_later(tx, row.id)
            return
        if not push_outbox.delete_row(tx, row.id):
            # Deleted while in flight: its device was removed, or a notification was withdrawn (read
            # or deleted meanwhile) though the service has just accepted it: "withdrawn" takes it back.
            withdrawn = self.handlers.get("withdrawn")
            if withdrawn is not None and row.kind == "notify" and outcome == SENT:
                withdrawn(tx, row, None)
            return
        handler = self.handlers.get(row.kind)
        if handler is not None:
            handler(tx, row, None if outcome == SENT else outcome)
