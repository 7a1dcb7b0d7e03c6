"""API routes: webhooks and their delivery log (``/api/v1/webhooks``), for admins only.

An admin defines a webhook (name, URL, the events it wants, a shared secret, active or not); the scheduler
records a delivery for every event it wants and sends it, signed with the secret (scheduler/webhooks.py,
README.md "Notifications"). The secret is given when the webhook is made or changed and never shown again:
answers carry ``secret_hint`` (its length and last characters). Changes name the ``edition`` they were based
on (409 if the webhook has moved on) and are audited by WebhookRepository. The delivery log lists each
delivery, newest first: its event, the URL of its last attempt, its attempts, its last status and error,
and its next try; a failed one may be sent again.

An address the destination policy refuses (harvestsuite.network.allowDestinations; harvestdef/destinations.py)
is a 400 on ``url`` naming it and why, when the webhook is saved; each delivery checks again the address it
connects to.

Addresses can carry a receiver's token in their path (chat services' webhooks do), so reading webhooks and
their log is for admins too.
"""

from __future__ import annotations

from typing import Any

from harvestdef.model.webhooks import DELIVERY_STATES, Webhook, WebhookDelivery, WebhookEvent
from harvestdef.repositories.webhooks import WebhookRepository
from webui.api.core import PAGED, blueprint, body, decode_cursor, edition, encode_cursor, field, jsonable, limit
from webui.api.errors import ApiError
from webui.api.parameters import QueryParameter, query, takes
from webui.auth import ADMIN, require
from webui.context import actor, database, settings

WEBHOOK = QueryParameter("webhook", "integer", "only the deliveries of this webhook (its id)")
STATE = QueryParameter("state", "string", "only the deliveries in this state", enum=DELIVERY_STATES)


def webhook_json(webhook: Webhook) -> dict[str, Any]:
    return {"id": webhook.webhook_id, "name": webhook.name, "url": webhook.url,
            "events": [event.value for event in webhook.events], "active": webhook.isactive,
            "secret_hint": webhook.secret_hint, "created": jsonable(webhook.created), "edition": webhook.edition}


def delivery_json(delivery: WebhookDelivery) -> dict[str, Any]:
    return {"id": delivery.delivery_id, "webhook_id": delivery.webhook_id, "webhook": delivery.webhook_name,
            "event": delivery.event.value, "url": delivery.url, "state": delivery.state,
            "attempts": delivery.attempts, "created": jsonable(delivery.created),
            "last_attempt": jsonable(delivery.last_attempt_at), "last_status": delivery.last_status,
            "last_error": delivery.last_error, "next_attempt": jsonable(delivery.next_attempt_at),
            "summary": delivery.document.get("summary"), "document": delivery.document}


def events_field(data: dict[str, Any]) -> list[str] | None:
    """``events``: a list of event names (None when absent); 400 naming the item that is not text."""
    events = field(data, "events", list, required=False)
    if events is None:
        return None
    for index, item in enumerate(events):
        if not isinstance(item, str):
            raise ApiError("invalid", f"events[{index}] must be an event's name (one of "
                                      f"{', '.join(event.value for event in WebhookEvent)}), not "
                                      f"{type(item).__name__}", "events")
    return events


def create(data: dict[str, Any]) -> Webhook:
    """A new webhook from an API body or the webhooks page's form (the same checks)."""
    events = events_field(data)
    with database().begin() as conn:
        return WebhookRepository(conn, actor(), destinations=settings().network.policy()).create(
            field(data, "name", str), field(data, "url", str), events if events is not None else [],
            field(data, "secret", str), field(data, "active", bool, required=False, default=True))


def change(webhook_id: int, data: dict[str, Any]) -> Webhook:
    """Change what ``data`` gives of webhook ``webhook_id`` (its ``edition`` required)."""
    expected = edition(data)
    with database().begin() as conn:
        return WebhookRepository(conn, actor(), destinations=settings().network.policy()).update(
            webhook_id, expected, name=field(data, "name", str, required=False),
            url=field(data, "url", str, required=False), events=events_field(data),
            secret=field(data, "secret", str, required=False), active=field(data, "active", bool, required=False))


@blueprint.get("/webhooks")
@require(ADMIN)
def list_webhooks() -> Any:
    """Every webhook, by name: its URL, events, whether active, and a hint of its secret."""
    with database().connect() as conn:
        webhooks = WebhookRepository(conn).list()
    return {"items": [webhook_json(webhook) for webhook in webhooks],
            "events": {event.value: event.label for event in WebhookEvent}}


@blueprint.post("/webhooks")
@require(ADMIN)
def create_webhook() -> Any:
    """Define a webhook: ``name``, ``url`` (http or https), ``events`` (at least one), ``secret`` (16 to 200
    characters; it signs the deliveries and is never shown again), ``active`` (default true)."""
    return webhook_json(create(body())), 201


@blueprint.get("/webhooks/<int:webhook_id>")
@require(ADMIN)
def get_webhook(webhook_id: int) -> Any:
    """One webhook."""
    with database().connect() as conn:
        return webhook_json(WebhookRepository(conn).get(webhook_id))


@blueprint.patch("/webhooks/<int:webhook_id>")
@require(ADMIN)
def update_webhook(webhook_id: int) -> Any:
    """Change a webhook's ``name``, ``url``, ``events``, ``secret`` or ``active``; 409 if ``edition`` is stale.

    A webhook made inactive gets no new deliveries, and its pending ones end as failed, saying so."""
    return webhook_json(change(webhook_id, body()))


@blueprint.delete("/webhooks/<int:webhook_id>")
@require(ADMIN)
def delete_webhook(webhook_id: int) -> Any:
    """Remove a webhook; its pending deliveries end as failed, and its delivery log stays."""
    with database().begin() as conn:
        return webhook_json(WebhookRepository(conn, actor()).delete(webhook_id))


def find_deliveries(size: int, before_id: int | None, webhook_id: int | None,
                    state: str | None) -> list[WebhookDelivery]:
    with database().connect() as conn:
        return WebhookRepository(conn).deliveries(size, before_id, webhook_id, state)


@blueprint.get("/webhooks/deliveries")
@takes(WEBHOOK, STATE, *PAGED)
@require(ADMIN)
def list_deliveries() -> Any:
    """The delivery log, newest first: event, webhook, URL, state, attempts, last status and error, next try."""
    size = limit()
    cursor = decode_cursor(query("after"))
    if cursor is not None and (len(cursor) != 1 or not isinstance(cursor[0], int)):
        raise ApiError("invalid", "after is not a cursor this API gave out", "after")
    webhook = query("webhook")
    rows = find_deliveries(size + 1, cursor[0] if cursor else None,
                           int(webhook) if webhook and webhook.strip() else None, query("state"))
    following = encode_cursor([rows[size - 1].delivery_id]) if len(rows) > size else None
    return {"items": [delivery_json(delivery) for delivery in rows[:size]], "next": following}


@blueprint.get("/webhooks/deliveries/<int:delivery_id>")
@require(ADMIN)
def get_delivery(delivery_id: int) -> Any:
    """One delivery, with the event's JSON as recorded."""
    with database().connect() as conn:
        return delivery_json(WebhookRepository(conn).delivery(delivery_id))


@blueprint.post("/webhooks/deliveries/<int:delivery_id>/send-again")
@require(ADMIN)
def send_delivery_again(delivery_id: int) -> Any:
    """Send a failed delivery again (its webhook must exist and be active): pending, due now, its attempts
    counted afresh; 409 if it is not failed."""
    with database().begin() as conn:
        return delivery_json(WebhookRepository(conn, actor()).send_again(delivery_id))
