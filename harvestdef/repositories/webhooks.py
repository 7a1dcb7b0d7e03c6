"""Webhooks and their deliveries: the definitions an admin keeps (audited, with editions) and the delivery
log the leading scheduler works through.

A webhook's secret signs its deliveries, so it is stored as given; the audit trail records only whether it
changed, never the secret. Deactivating or deleting a webhook ends its pending deliveries as failed, saying
why, in the same transaction: nothing is sent to an address its admin has turned off, and the log still
shows what was not sent. A deleted webhook's deliveries stay in the log with the address they had.

Sending (scheduler/webhooks.py) takes a due delivery with a compare-and-set on its attempts that counts the
attempt and moves its next try past the request's timeout (a lease): a scheduler that dies while it sends
leaves the delivery to be tried again once the lease has run out, never lost. Its outcome is settled with
the same compare-and-set, so an attempt whose lease ran out cannot overwrite a later one's. Receivers may
thus see a delivery twice; its id (the X-HarvestSuite-Delivery header) tells them. An attempt the
scheduler's shutdown interrupted is released: pending again, due at once, the attempt not counted.

A webhook's address is checked against the destination policy (harvestdef/destinations.py) when it is
saved: an address, or a name that resolves to one, that the policy refuses is a FieldError on ``url``
naming it and why. A name that does not resolve (yet) is kept; every attempt checks the address it
connects to anyway (scheduler/webhookattempt.py), so a name that turns internal later is refused then.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Connection, delete, func, insert, select, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.destinations import PUBLIC_ONLY, DestinationPolicy, DestinationRefused
from harvestdef.errors import FieldError, IllegalTransitionError, NotFoundError, ValidationError
from harvestdef.model.webhooks import (
    DELIVERED,
    FAILED,
    PENDING,
    TRANSITIONS,
    Webhook,
    WebhookDelivery,
    WebhookEvent,
    check_events,
    check_secret,
    check_url,
)
from harvestdef.repositories.base import SYSTEM_ACTOR, fetch_row, record_audit, stale_edition, translate_errors
from harvestdef.validation import check_name, check_text

_w, _d = s.webhooks, s.webhook_deliveries
MAX_ERROR_LENGTH = 2000
SECRET_KEPT, SECRET_CHANGED = "(not shown)", "(changed; not shown)"


def to_webhook(row: Any) -> Webhook:
    values = row._mapping if hasattr(row, "_mapping") else row
    return Webhook(webhook_id=values["webhook_id"], name=values["name"], url=values["url"],
                   events=tuple(WebhookEvent(name) for name in values["events"].split(",") if name),
                   secret=values["secret"], isactive=values["isactive"], created=values["created"],
                   edition=values["edition"])


def _to_delivery(row: Any) -> WebhookDelivery:
    return WebhookDelivery(delivery_id=row.delivery_id, webhook_id=row.webhook_id, webhook_name=row.webhook_name,
                       event=WebhookEvent(row.event), url=row.url, document=json.loads(row.document),
                       created=row.created, state=row.state, attempts=row.attempts,
                       next_attempt_at=row.next_attempt_at, last_attempt_at=row.last_attempt_at,
                       last_status=row.last_status, last_error=row.last_error)


def check_destination(url: str, destinations: DestinationPolicy, field: str = "url") -> str:
    """``url`` (checked by check_url already) if ``destinations`` allows its host: an IP address as it is, a
    name by every address it resolves to now. A refusal is a FieldError naming the URL and the reason."""
    try:
        destinations.resolve(urlsplit(url).hostname or "")
    except DestinationRefused as exc:
        raise FieldError(field, f"{url[:200]} is refused: {exc.reason}") from None
    except OSError:
        pass  # not resolvable now: each attempt resolves and checks it again
    return url


def _audited(row: dict[str, Any] | None, secret_changed: bool = False) -> dict[str, Any] | None:
    """A webhook row as the audit trail keeps it: the secret replaced by whether it changed."""
    if row is None:
        return None
    return {**row, "secret": SECRET_CHANGED if secret_changed else SECRET_KEPT}


class WebhookRepository:
    """The webhooks (admins' definitions) and their delivery log."""

    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR, clock: Callable[[], datetime] = utcnow,
                 destinations: DestinationPolicy = PUBLIC_ONLY) -> None:
        """``destinations`` decides which addresses a webhook saved through this repository may have
        (settings.network.policy())."""
        self.conn = conn
        self.actor = actor
        self.clock = clock
        self.destinations = destinations

    # ------------------------------------------------------------------ definitions
    def list(self) -> list[Webhook]:
        return [to_webhook(row) for row in self.conn.execute(select(_w).order_by(_w.c.name))]

    def get(self, webhook_id: int) -> Webhook:
        row = self.conn.execute(select(_w).where(_w.c.webhook_id == webhook_id)).first()
        if row is None:
            raise NotFoundError("webhook", webhook_id)
        return to_webhook(row)

    def create(self, name: str, url: str, events: list[str] | tuple[str, ...], secret: str,
               active: bool = True) -> Webhook:
        """A new webhook; FieldError naming the input that is refused, ConflictError for a name in use."""
        values = {"name": check_name(name, "webhook", _w.c.name, in_path=False),
                  "url": check_destination(check_url(url), self.destinations),
                  "events": ",".join(check_events(events)), "secret": check_secret(check_text(secret, "secret")),
                  "isactive": active, "created": self.clock(), "edition": 1}
        with translate_errors("webhook", values["name"]):
            webhook_id = self.conn.execute(insert(_w).values(values)).inserted_primary_key[0]
        after = fetch_row(self.conn, _w, "webhook_id", webhook_id)
        record_audit(self.conn, self.actor, "webhooks", webhook_id, "insert", None, _audited(after, True))
        return self.get(webhook_id)

    def update(self, webhook_id: int, expected_edition: int, *, name: str | None = None, url: str | None = None,
               events: list[str] | tuple[str, ...] | None = None, secret: str | None = None,
               active: bool | None = None) -> Webhook:
        """Change what is given (None: unchanged); StaleEditionError if the webhook moved on. A webhook made
        inactive has its pending deliveries failed."""
        current = self.get(webhook_id)
        values: dict[str, Any] = {}
        if name is not None:
            values["name"] = check_name(name, "webhook", _w.c.name, in_path=False)
        if url is not None:
            values["url"] = check_destination(check_url(url), self.destinations)
        if events is not None:
            values["events"] = ",".join(check_events(events))
        if secret is not None:
            values["secret"] = check_secret(check_text(secret, "secret"))
        if active is not None:
            values["isactive"] = active
        before = fetch_row(self.conn, _w, "webhook_id", webhook_id)
        if current.edition != expected_edition:
            raise stale_edition(self.conn, self.actor, _w.name, webhook_id, "webhook", expected_edition, before)
        with translate_errors("webhook", values.get("name", current.name)):
            changed = self.conn.execute(update(_w).where(_w.c.webhook_id == webhook_id,
                                                         _w.c.edition == expected_edition)
                                        .values(**values, edition=expected_edition + 1)).rowcount
        if changed != 1:
            raise stale_edition(self.conn, self.actor, _w.name, webhook_id, "webhook", expected_edition, None)
        after = fetch_row(self.conn, _w, "webhook_id", webhook_id)
        secret_changed = secret is not None and secret != current.secret
        record_audit(self.conn, self.actor, "webhooks", webhook_id, "update", _audited(before),
                     _audited(after, secret_changed))
        if active is False and current.isactive:
            self._end_pending(webhook_id, f"not sent: the webhook was deactivated by {self.actor}")
        return self.get(webhook_id)

    def delete(self, webhook_id: int) -> Webhook:
        """Remove a webhook; its pending deliveries are failed, its delivery log stays."""
        current = self.get(webhook_id)
        before = fetch_row(self.conn, _w, "webhook_id", webhook_id)
        self.conn.execute(delete(_w).where(_w.c.webhook_id == webhook_id))
        record_audit(self.conn, self.actor, "webhooks", webhook_id, "delete", _audited(before), None)
        self._end_pending(webhook_id, f"not sent: the webhook was deleted by {self.actor}")
        return current

    def _end_pending(self, webhook_id: int, reason: str) -> None:
        assert FAILED in TRANSITIONS[PENDING]
        self.conn.execute(update(_d).where(_d.c.webhook_id == webhook_id, _d.c.state == PENDING)
                          .values(state=FAILED, next_attempt_at=None, last_error=reason[:MAX_ERROR_LENGTH]))

    # ------------------------------------------------------------------ the delivery log
    def _deliveries(self) -> Any:
        return (select(_d, _w.c.name.label("webhook_name"))
                .select_from(_d.outerjoin(_w, _w.c.webhook_id == _d.c.webhook_id)))

    def deliveries(self, size: int, before_id: int | None = None, webhook_id: int | None = None,
                   state: str | None = None) -> list[WebhookDelivery]:
        """Up to ``size`` deliveries, newest first, older than ``before_id`` if given (a keyset page)."""
        query = self._deliveries()
        if before_id is not None:
            query = query.where(_d.c.delivery_id < before_id)
        if webhook_id is not None:
            query = query.where(_d.c.webhook_id == webhook_id)
        if state is not None:
            query = query.where(_d.c.state == state)
        return [_to_delivery(row) for row in self.conn.execute(query.order_by(_d.c.delivery_id.desc()).limit(size))]

    def delivery(self, delivery_id: int) -> WebhookDelivery:
        row = self.conn.execute(self._deliveries().where(_d.c.delivery_id == delivery_id)).first()
        if row is None:
            raise NotFoundError("webhook delivery", delivery_id)
        return _to_delivery(row)

    def delivery_counts(self) -> dict[str, int]:
        """Deliveries per state (every state named, 0 where none)."""
        counts = dict.fromkeys((PENDING, DELIVERED, FAILED), 0)
        counts.update({state: count for state, count in self.conn.execute(
            select(_d.c.state, func.count()).group_by(_d.c.state))})
        return counts

    def send_again(self, delivery_id: int) -> WebhookDelivery:
        """A failed delivery of a webhook that still exists and is active goes pending again, due now, its
        attempts counted afresh; its last error stays until the next attempt.

        :raise NotFoundError: no such delivery.
        :raise IllegalTransitionError: the delivery is not failed (pending or delivered already).
        :raise ValidationError: its webhook is deleted or inactive.
        """
        current = self.delivery(delivery_id)
        if current.state != FAILED:  # pending -> pending is a retry of the sender's, not this
            raise IllegalTransitionError(f"webhook delivery {delivery_id} (only a failed one can be sent again)",
                                         current.state, PENDING)
        webhook = self.conn.execute(select(_w).where(_w.c.webhook_id == current.webhook_id)).first()
        if webhook is None or not webhook.isactive:
            raise ValidationError(f"webhook delivery {delivery_id} cannot be sent again: its webhook is "
                                  f"{'deleted' if webhook is None else 'inactive'}")
        self.conn.execute(update(_d).where(_d.c.delivery_id == delivery_id, _d.c.state == FAILED)
                          .values(state=PENDING, attempts=0, next_attempt_at=self.clock(), url=webhook.url))
        return self.delivery(delivery_id)

    # ------------------------------------------------------------------ sending (the leading scheduler)
    def due(self, now: datetime, size: int, webhook_id: int | None = None,
            excluding: frozenset[int] | set[int] = frozenset()) -> list[tuple[WebhookDelivery, Webhook]]:
        """Pending deliveries of active webhooks whose next try has come, the longest waiting first; only
        webhook ``webhook_id``'s if given, and none of the delivery ids ``excluding``."""
        only = [] if webhook_id is None else [_d.c.webhook_id == webhook_id]
        if excluding:
            only.append(_d.c.delivery_id.not_in(sorted(excluding)))
        rows = self.conn.execute(
            select(_d, _w.c.name.label("webhook_name"), _w.c.url.label("webhook_url"), _w.c.events, _w.c.secret,
                   _w.c.isactive, _w.c.created.label("webhook_created"), _w.c.edition)
            .select_from(_d.join(_w, _w.c.webhook_id == _d.c.webhook_id))
            .where(_d.c.state == PENDING, _d.c.next_attempt_at <= now, _w.c.isactive.is_(True), *only)
            .order_by(_d.c.next_attempt_at, _d.c.delivery_id).limit(size))
        return [(_to_delivery(row), to_webhook({
            "webhook_id": row.webhook_id, "name": row.webhook_name, "url": row.webhook_url, "events": row.events,
            "secret": row.secret, "isactive": row.isactive, "created": row.webhook_created,
            "edition": row.edition})) for row in rows]

    def due_webhooks(self, now: datetime) -> list[int]:
        """The active webhooks with a delivery due at ``now``, the one whose delivery waited longest first:
        every one of them, however many deliveries another has waiting."""
        waited = func.min(_d.c.next_attempt_at)
        return list(self.conn.scalars(
            select(_d.c.webhook_id).select_from(_d.join(_w, _w.c.webhook_id == _d.c.webhook_id))
            .where(_d.c.state == PENDING, _d.c.next_attempt_at <= now, _w.c.isactive.is_(True))
            .group_by(_d.c.webhook_id).order_by(waited, _d.c.webhook_id)))

    def take(self, delivery: WebhookDelivery, url: str, now: datetime, lease: timedelta) -> bool:
        """Count an attempt of ``delivery`` to ``url`` and hold it for ``lease``; False if another sender
        took or settled it meanwhile."""
        return self.conn.execute(
            update(_d).where(_d.c.delivery_id == delivery.delivery_id, _d.c.state == PENDING,
                             _d.c.attempts == delivery.attempts)
            .values(attempts=delivery.attempts + 1, last_attempt_at=now, next_attempt_at=now + lease,
                    url=url)).rowcount == 1

    def release(self, delivery_id: int, attempt: int, reason: str, now: datetime) -> bool:
        """Give back attempt number ``attempt`` of a delivery that was interrupted before it had an outcome
        (the scheduler stopped): pending, due ``now``, the attempt not counted, ``reason`` in its log. False
        if the attempt was overtaken meanwhile."""
        return self.conn.execute(
            update(_d).where(_d.c.delivery_id == delivery_id, _d.c.state == PENDING, _d.c.attempts == attempt)
            .values(attempts=attempt - 1, next_attempt_at=now, last_error=reason[:MAX_ERROR_LENGTH])).rowcount == 1

    def settle(self, delivery_id: int, attempt: int, status: int | None, error: str | None,
               next_attempt_at: datetime | None) -> str | None:
        """Record how attempt number ``attempt`` went: delivered when ``error`` is None; else pending until
        ``next_attempt_at``, or failed when that is None. Returns the new state, or None if the attempt was
        overtaken (its lease ran out and another attempt was counted)."""
        if error is None:
            state = DELIVERED
        else:
            state = PENDING if next_attempt_at is not None else FAILED
        assert state in TRANSITIONS[PENDING]
        changed = self.conn.execute(
            update(_d).where(_d.c.delivery_id == delivery_id, _d.c.state == PENDING, _d.c.attempts == attempt)
            .values(state=state, last_status=status,
                    last_error=None if error is None else error[:MAX_ERROR_LENGTH],
                    next_attempt_at=next_attempt_at if state == PENDING else None)).rowcount
        return state if changed == 1 else None


__all__ = ["WebhookRepository", "to_webhook"]
