"""Sending webhook deliveries: the leading scheduler's, every sendIntervalMs, beside the tick.

Theory of operation. An event is a pending delivery row per webhook that wants it, written in the
transaction of what it announces (harvestdef/repositories/webhookevents.py). A sending takes the due ones
(pending, next try come, webhook active), each with a compare-and-set that counts the attempt and holds it
for a lease longer than the request may take (WebhookRepository.take), then POSTs them side by side, outside
any transaction, and settles each: delivered on a 2xx answer; otherwise pending again after
``retry_delay`` (retryDelayMs, doubling, at most retryMaxDelayMs), or failed once maxAttempts are spent,
with the last status and error kept for the delivery log. A scheduler that dies in between leaves the
delivery held until its lease runs out; the next leader sends it then. A receiver may therefore see a
delivery twice, never none; the delivery id tells.

What is sent (README.md, "Notifications", for receivers):

* the body: the event's JSON document with ``delivery_id`` and ``sent_at`` (ISO 8601 UTC) added, UTF-8;
* ``X-HarvestSuite-Signature: sha256=<hex>``: HMAC-SHA256 of the body's bytes with the webhook's shared
  secret (its UTF-8 bytes) as key;
* ``X-HarvestSuite-Timestamp``: the sending time in Unix seconds, the body's ``sent_at`` (signed with it);
* ``X-HarvestSuite-Delivery``: the delivery's id; ``X-HarvestSuite-Event``: the event's name.

One POST per attempt, no redirect followed (a 3xx is a failed attempt naming where it pointed: the
webhook's address should be changed to it), each request limited by ``timeout`` seconds per connect and
per read. Only the first few hundred bytes of an answer are read, for the log.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import ssl
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import Engine

from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.model.webhooks import FAILED, Delivery, Webhook, retry_delay
from harvestdef.repositories.base import database_errors
from harvestdef.repositories.webhooks import WebhookRepository
from harvestdef.settings import Settings

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-HarvestSuite-Signature"
TIMESTAMP_HEADER = "X-HarvestSuite-Timestamp"
DELIVERY_HEADER = "X-HarvestSuite-Delivery"
EVENT_HEADER = "X-HarvestSuite-Event"
USER_AGENT = "HarvestSuite-Webhooks/1"
ANSWER_EXCERPT = 300  # bytes of an answer kept for the delivery log
LEASE_MARGIN = timedelta(seconds=30)  # beyond the request's own timeouts, before another sender may try


def sign(secret: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the HMAC-SHA256 of ``body`` keyed with ``secret``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def signed_request(delivery: Delivery, webhook: Webhook, sent_at: datetime) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one attempt of ``delivery``."""
    document = {"event": delivery.event.value, "delivery_id": delivery.delivery_id,
                "sent_at": sent_at.isoformat().replace("+00:00", "Z"),
                **{key: value for key, value in delivery.document.items() if key != "event"}}
    body = json.dumps(document, ensure_ascii=False).encode("utf-8")
    return body, {"Content-Type": "application/json; charset=utf-8", "User-Agent": USER_AGENT,
                  EVENT_HEADER: delivery.event.value, DELIVERY_HEADER: str(delivery.delivery_id),
                  TIMESTAMP_HEADER: str(int(sent_at.timestamp())), SIGNATURE_HEADER: sign(webhook.secret, body)}


@dataclass(frozen=True)
class Outcome:
    """How one POST went: ``error`` is None for a 2xx answer."""

    status: int | None
    error: str | None


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Outcome:
    """POST ``body`` to ``url`` once; every failure (refused, timed out, TLS, an answer other than 2xx) is an
    Outcome naming it, never an exception."""
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    connection: http.client.HTTPConnection
    if parts.scheme.lower() == "https":
        connection = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=timeout,
                                                 context=ssl.create_default_context())
    else:
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    try:
        connection.request("POST", target, body=body, headers=headers)
        response = connection.getresponse()
        excerpt = response.read(ANSWER_EXCERPT).decode("utf-8", errors="replace")
    except TimeoutError:
        return Outcome(None, f"no answer within {timeout:g} s (harvestsuite.webhooks.timeout)")
    except ConnectionRefusedError:
        return Outcome(None, f"connection refused by {parts.hostname}:{parts.port or _default_port(parts.scheme)}")
    except ssl.SSLError as exc:
        return Outcome(None, f"TLS failed: {exc.reason or exc}")
    except (OSError, http.client.HTTPException) as exc:
        return Outcome(None, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    finally:
        connection.close()
    if 200 <= response.status < 300:
        return Outcome(response.status, None)
    said = " ".join(excerpt.split())[:200]
    error = f"HTTP {response.status} {response.reason}".rstrip()
    if 300 <= response.status < 400:
        error += (f": redirected to {response.getheader('Location') or 'nowhere'}; deliveries are not redirected, "
                  "change the webhook's address")
    elif said:
        error += f": {said}"
    return Outcome(response.status, error)


def _default_port(scheme: str) -> int:
    return 443 if scheme.lower() == "https" else 80


class WebhookSender:
    """Sends the due webhook deliveries; one sending at a time (``send_due``), its requests side by side."""

    def __init__(self, engine: Engine, timeout: float = 10, first_retry: float = 30, longest_retry: float = 3600,
                 max_attempts: int = 8, per_sending: int = 100, workers: int = 4) -> None:
        self.engine = engine
        self.timeout = timeout
        self.first_retry = first_retry
        self.longest_retry = longest_retry
        self.max_attempts = max_attempts
        self.per_sending = per_sending
        self.workers = workers

    @classmethod
    def from_settings(cls, settings: Settings, engine: Engine) -> WebhookSender:
        n = settings.notifications
        return cls(engine, timeout=n.webhookTimeout, first_retry=n.webhookRetryDelayMs / 1000,
                   longest_retry=n.webhookRetryMaxDelayMs / 1000, max_attempts=n.webhookMaxAttempts)

    def send_due(self, now: datetime | None = None) -> int:
        """Attempt every delivery due at ``now`` (up to per_sending of them); returns the attempts made.

        :raise DatabaseError: the harvest database failed (what was attempted is settled already).
        """
        now = now or utcnow()
        lease = timedelta(seconds=2 * self.timeout) + LEASE_MARGIN
        with database_errors("taking the due webhook deliveries"):
            with self.engine.connect() as conn:
                due = WebhookRepository(conn).due(now, self.per_sending)
            taken: list[tuple[Delivery, Webhook]] = []
            for delivery, webhook in due:
                with write_transaction(self.engine) as conn:
                    if WebhookRepository(conn).take(delivery, webhook.url, now, lease):
                        taken.append((delivery, webhook))
        if not taken:
            return 0
        with ThreadPoolExecutor(max_workers=min(self.workers, len(taken)),
                                thread_name_prefix="webhook") as pool:
            list(pool.map(lambda pair: self._attempt(*pair), taken))
        return len(taken)

    def _attempt(self, delivery: Delivery, webhook: Webhook) -> None:
        attempt = delivery.attempts + 1
        sent_at = utcnow()
        body, headers = signed_request(delivery, webhook, sent_at)
        outcome = post(webhook.url, body, headers, self.timeout)
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


__all__ = ["DELIVERY_HEADER", "EVENT_HEADER", "SIGNATURE_HEADER", "TIMESTAMP_HEADER", "WebhookSender", "post",
           "sign", "signed_request"]
