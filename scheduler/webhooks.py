"""Sending webhook deliveries: the leading scheduler's, every sendIntervalMs, beside the tick.

Theory of operation. An event is a pending delivery row per webhook that wants it, written in the
transaction of what it announces (harvestdef/repositories/webhookevents.py). Each webhook is sent to in a
lane of its own: a thread that takes that webhook's due deliveries one after another, each with a
compare-and-set that counts the attempt and holds it for a lease longer than the attempt may take
(WebhookRepository.take), POSTs it outside any transaction (scheduler/webhookattempt.py: one wall-clock
deadline for the whole attempt, to an address the destination policy allows), and settles it: delivered on
a 2xx answer; otherwise pending again after ``retry_delay`` (retryDelayMs, doubling, at most
retryMaxDelayMs), or failed once maxAttempts are spent, with the last status and error kept for the
delivery log. Lanes run side by side and nothing waits for all of them: a slow receiver delays only its own
deliveries, each of them by at most the deadline, and the running scheduler's sending (``start_due``) only
starts lanes for webhooks that have none, so it returns at once.

``close()`` (the scheduler's shutdown) aborts the attempts in flight and gives their lanes
shutdownGraceMs to release them (pending, due at once, the attempt not counted); it never waits for a
receiver. A scheduler that dies in between leaves a delivery held until its lease runs out; the next leader
sends it then. A receiver may therefore see a delivery twice, never none; the delivery id tells.

What is sent (README.md, "Notifications", for receivers):

* the body: the event's JSON document with ``delivery_id`` and ``sent_at`` (ISO 8601 UTC) added, UTF-8;
* ``X-HarvestSuite-Signature: sha256=<hex>``: HMAC-SHA256 of the body's bytes with the webhook's shared
  secret (its UTF-8 bytes) as key;
* ``X-HarvestSuite-Timestamp``: the sending time in Unix seconds, the body's ``sent_at`` (signed with it);
* ``X-HarvestSuite-Delivery``: the delivery's id; ``X-HarvestSuite-Event``: the event's name.

One POST per attempt, no redirect followed (a 3xx is a failed attempt naming where it pointed: the
webhook's address should be changed to it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from sqlalchemy import Engine

from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.destinations import PUBLIC_ONLY, DestinationPolicy
from harvestdef.model.webhooks import FAILED, Webhook, WebhookDelivery, retry_delay
from harvestdef.repositories.base import database_errors
from harvestdef.repositories.webhooks import WebhookRepository
from harvestdef.settings import Settings
from scheduler.webhookattempt import Attempt, AttemptLimits

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-HarvestSuite-Signature"
TIMESTAMP_HEADER = "X-HarvestSuite-Timestamp"
DELIVERY_HEADER = "X-HarvestSuite-Delivery"
EVENT_HEADER = "X-HarvestSuite-Event"
USER_AGENT = "HarvestSuite-Webhooks/1"
LEASE_MARGIN = timedelta(seconds=30)  # beyond the attempt's deadline, before another sender may try


def sign(secret: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the HMAC-SHA256 of ``body`` keyed with ``secret``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def signed_request(delivery: WebhookDelivery, webhook: Webhook, sent_at: datetime) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one attempt of ``delivery``."""
    document = {"event": delivery.event.value, "delivery_id": delivery.delivery_id,
                "sent_at": sent_at.isoformat().replace("+00:00", "Z"),
                **{key: value for key, value in delivery.document.items() if key != "event"}}
    body = json.dumps(document, ensure_ascii=False).encode("utf-8")
    return body, {"Content-Type": "application/json; charset=utf-8", "User-Agent": USER_AGENT,
                  EVENT_HEADER: delivery.event.value, DELIVERY_HEADER: str(delivery.delivery_id),
                  TIMESTAMP_HEADER: str(int(sent_at.timestamp())), SIGNATURE_HEADER: sign(webhook.secret, body)}


class WebhookSender:
    """Sends the due webhook deliveries, each webhook in a lane of its own (module docstring)."""

    def __init__(self, engine: Engine, timeout: float = 10, first_retry: float = 30, longest_retry: float = 3600,
                 max_attempts: int = 8, per_sending: int = 100, destinations: DestinationPolicy = PUBLIC_ONLY,
                 header_limit: int = 16_384, excerpt_limit: int = 200, shutdown_grace: float = 2.0) -> None:
        self.engine = engine
        self.timeout = timeout
        self.first_retry = first_retry
        self.longest_retry = longest_retry
        self.max_attempts = max_attempts
        self.per_sending = per_sending  # deliveries one lane attempts before it ends (the next sending goes on)
        self.destinations = destinations
        self.limits = AttemptLimits(timeout, header_limit, excerpt_limit)
        self.shutdown_grace = shutdown_grace
        self._lock = threading.Lock()
        self._lanes: dict[int, threading.Thread] = {}  # webhook id -> its running lane
        self._in_flight: set[Attempt] = set()
        self._closing = threading.Event()

    @classmethod
    def from_settings(cls, settings: Settings, engine: Engine) -> WebhookSender:
        n = settings.notifications
        return cls(engine, timeout=n.webhookTimeout, first_retry=n.webhookRetryDelayMs / 1000,
                   longest_retry=n.webhookRetryMaxDelayMs / 1000, max_attempts=n.webhookMaxAttempts,
                   destinations=settings.network.policy(), header_limit=n.webhookAnswerHeaderLimit,
                   excerpt_limit=n.webhookAnswerExcerpt, shutdown_grace=n.webhookShutdownGraceMs / 1000)

    @property
    def lease(self) -> timedelta:
        """How long a taken delivery is held: past the attempt's deadline, before another sender may try."""
        return timedelta(seconds=self.timeout) + LEASE_MARGIN

    def _due_webhooks(self, now: datetime) -> list[int]:
        """The webhooks with deliveries due at ``now``, the one waiting longest first."""
        with database_errors("taking the due webhook deliveries"), self.engine.connect() as conn:
            return WebhookRepository(conn).due_webhooks(now)

    def start_due(self) -> int:
        """Start a lane for every webhook with due deliveries that has none running; returns how many were
        started. Never waits for a receiver.

        :raise DatabaseError: the harvest database failed.
        """
        if self._closing.is_set():
            return 0
        started = 0
        for webhook_id in self._due_webhooks(utcnow()):
            with self._lock:
                if self._closing.is_set() or webhook_id in self._lanes:
                    continue
                lane = threading.Thread(target=self._lane_safely, args=(webhook_id, None),
                                        name=f"webhook-{webhook_id}", daemon=True)
                self._lanes[webhook_id] = lane
            lane.start()
            started += 1
        return started

    def send_due(self, now: datetime | None = None) -> int:
        """One sending, waited for: every delivery due at ``now`` attempted once (up to per_sending per
        webhook), the webhooks' lanes side by side; returns the attempts made. Each attempt ends by its
        deadline, so this waits at most that long per delivery of the slowest webhook.

        :raise DatabaseError: the harvest database failed (what was attempted is settled already).
        """
        now = now or utcnow()
        webhooks = self._due_webhooks(now)
        if not webhooks:
            return 0
        with ThreadPoolExecutor(max_workers=len(webhooks), thread_name_prefix="webhook") as lanes:
            done = [lanes.submit(self._lane, webhook_id, now) for webhook_id in webhooks]
            return sum(lane.result() for lane in done)

    def reopen(self) -> None:
        """Send again after a close(): a scheduler that stepped down and leads once more."""
        self._closing.clear()

    def close(self) -> None:
        """Stop sending: no lane starts any more, the attempts in flight are aborted, and their lanes get
        shutdown_grace seconds to release them. Never waits for a receiver."""
        self._closing.set()
        with self._lock:
            attempts, lanes = list(self._in_flight), list(self._lanes.values())
        for attempt in attempts:
            attempt.abort()
        until = time.monotonic() + self.shutdown_grace
        for lane in lanes:
            lane.join(timeout=max(until - time.monotonic(), 0))
            if lane.is_alive():
                log.warning("webhook %s did not end its attempt within %g s (harvestsuite.webhooks.shutdownGraceMs); "
                            "its delivery is tried again once its lease has run out", lane.name, self.shutdown_grace)

    def _lane_safely(self, webhook_id: int, now: datetime | None) -> None:
        try:
            self._lane(webhook_id, now)
        except Exception:  # noqa: BLE001 - the deliveries wait in their table; the next sending starts a lane
            log.exception("sending to webhook %d failed", webhook_id)
        finally:
            with self._lock:
                self._lanes.pop(webhook_id, None)

    def _lane(self, webhook_id: int, now: datetime | None) -> int:
        """Attempt webhook ``webhook_id``'s due deliveries one after another, each once, until none is due
        (at ``now``, or at each moment when None) or per_sending were attempted; returns the attempts."""
        tried: set[int] = set()
        attempts = 0
        while len(tried) < self.per_sending and not self._closing.is_set():
            moment = now or utcnow()
            with database_errors("taking a due webhook delivery"):
                with self.engine.connect() as conn:
                    due = WebhookRepository(conn).due(moment, 1, webhook_id, tried)
                if not due:
                    break
                ((delivery, webhook),) = due
                tried.add(delivery.delivery_id)
                with write_transaction(self.engine) as conn:
                    if not WebhookRepository(conn).take(delivery, webhook.url, moment, self.lease):
                        continue  # another sender took or settled it meanwhile
            self._attempt(delivery, webhook)
            attempts += 1
        return attempts

    def _attempt(self, delivery: WebhookDelivery, webhook: Webhook) -> None:
        attempt = delivery.attempts + 1
        sent_at = utcnow()
        body, headers = signed_request(delivery, webhook, sent_at)
        post = Attempt(webhook.url, body, headers, self.limits, self.destinations)
        with self._lock:
            self._in_flight.add(post)
        if self._closing.is_set():
            post.abort()
        try:
            outcome = post.run()
        finally:
            with self._lock:
                self._in_flight.discard(post)
        if outcome.interrupted:
            self._release(delivery, attempt, outcome.error or "interrupted")
            return
        next_attempt_at = None
        if outcome.error is not None and attempt < self.max_attempts:
            next_attempt_at = utcnow() + timedelta(seconds=retry_delay(attempt, self.first_retry,
                                                                       self.longest_retry))
        try:
            with database_errors("recording a webhook delivery's attempt"), write_transaction(self.engine) as conn:
                state = WebhookRepository(conn).settle(delivery.delivery_id, attempt, outcome.status, outcome.error,
                                                       next_attempt_at)
        except Exception:  # noqa: BLE001 - its lease runs out and it is tried again: at least once, never lost
            log.exception("the outcome of webhook delivery %d (attempt %d) could not be recorded",
                          delivery.delivery_id, attempt)
            return
        if outcome.error is None:
            log.info("webhook delivery %d (%s) to %s: delivered, attempt %d", delivery.delivery_id,
                     delivery.event.value, webhook.name, attempt)
        elif state == FAILED:
            log.error("webhook delivery %d (%s) to %s failed after %d attempts: %s", delivery.delivery_id,
                      delivery.event.value, webhook.name, attempt, outcome.error)
        else:
            log.warning("webhook delivery %d (%s) to %s, attempt %d of %d: %s; next at %s", delivery.delivery_id,
                        delivery.event.value, webhook.name, attempt, self.max_attempts, outcome.error,
                        next_attempt_at)

    def _release(self, delivery: WebhookDelivery, attempt: int, reason: str) -> None:
        """An attempt the shutdown interrupted: pending again at once, not counted (the next leader sends it)."""
        try:
            with database_errors("releasing an interrupted webhook delivery"), \
                    write_transaction(self.engine) as conn:
                WebhookRepository(conn).release(delivery.delivery_id, attempt, reason, utcnow())
        except Exception:  # noqa: BLE001 - its lease runs out instead
            log.exception("webhook delivery %d could not be released; it is tried again once its lease has run out",
                          delivery.delivery_id)
            return
        log.info("webhook delivery %d (%s): attempt %d interrupted by the shutdown, pending again",
                 delivery.delivery_id, delivery.event.value, attempt)


__all__ = ["DELIVERY_HEADER", "EVENT_HEADER", "SIGNATURE_HEADER", "TIMESTAMP_HEADER", "WebhookSender", "sign",
           "signed_request"]
